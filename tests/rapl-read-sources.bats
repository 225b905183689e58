#!/usr/bin/env bats
# rapl-read's other meters: ACPI power meters under hwmon, the auto order,
# and measuring one command.
# shellcheck disable=SC2154 # bats's run sets stderr and stderr_lines

load test_helper
load rapl_helper

setup() {
	rapl_tree sysfs-hwmon
	M1=$SY/class/hwmon/hwmon1/power1_average
}

# Whether the last run's record of zone $1 has energy_uj == $2 * dt_us.
watts_exactly() {
	jq -s "map(select(.type == \"interval\"))[0].dt_us as \$dt |
	    map(select(.type == \"energy\" and .zone == \"$1\"))[0] |
	    .energy_uj == $2 * \$dt and .source == \"hwmon\" and
	    .estimated == false" <<< "$output"
}

@test "hwmon: power meters integrated over the interval, in microwatts" {
	run_state --source hwmon
	assert_success
	assert_equal "$stderr" ""
	# 250 W average on one meter, 50 W read on the other.
	# -z meter, kp-records 1.1's name, is platform (rapl-read(1), ZONES).
	run_state --source hwmon -z meter
	assert_equal "$(watts_exactly platform 300)" true
	assert_line --partial '"zone":"platform","energy_uj":'
	assert_line --partial '"sockets":2}'
	# The first meter rises to 350 W: the interval's mean is 300 W.
	echo 350000000 > "$M1"
	run_state --source hwmon
	assert_equal "$(watts_exactly platform 350)" true
	run_state --source hwmon
	assert_equal "$(watts_exactly platform 400)" true
}

@test "hwmon: own-clock intervals" {
	run --separate-stderr rapl-read --sysfs "$SY" --source hwmon -n 2 -i 10ms
	assert_success
	run jq -s 'map(select(.type == "energy") | [.seq, .zone]) ' -c <<< "$output"
	assert_output '[[1,"platform"],[2,"platform"]]'
}

@test "auto: powercap first, then hwmon, then the model" {
	mkdir -p "$SY/class/powercap"
	cp -R "$FIXTURES/sysfs-1socket/." "$SY/"
	run --separate-stderr rapl-read --sysfs "$SY" -n 1 -i 10ms
	assert_equal "$stderr" ""
	assert_line --partial '"zone":"package","energy_uj":0,"watts":0.0,"source":"powercap"'

	rm -r "$SY/class/powercap"
	run --separate-stderr rapl-read --sysfs "$SY" -n 1 -i 10ms
	assert_equal "$stderr" \
	    "rapl-read: no RAPL zones under '$SY/class/powercap': using ACPI power meters (--source hwmon)"
	assert_line --partial '"zone":"platform",'

	rm -r "$SY/class/hwmon"
	with_cpuinfo
	run --separate-stderr rapl-read --sysfs "$SY" --proc "$P" -n 1 -i 10ms
	assert_equal "$stderr" \
	    "rapl-read: no RAPL zones under '$SY/class/powercap': estimating energy (--source model)"
	assert_equal "$(jq -c 'select(.type == "energy") | [.zone, .source, .estimated]' <<< "$output")" \
	    '["platform","model",true]'
}

@test "the model writes platform only: other zones, node too, exit 4" {
	with_cpuinfo
	run -4 --separate-stderr rapl-read --source model --proc "$P" -z dram \
	    -n 1 -i 10ms
	assert_output ""
	assert_equal "$stderr" "rapl-read: no source here gives zone 'dram'; the zones here are: platform"
	run -4 --separate-stderr rapl-read --source model --proc "$P" \
	    -z platform,node -n 1 -i 10ms
	assert_equal "$stderr" "rapl-read: no source here gives zone 'node'; the zones here are: platform"
	# auto passes over a source that gives none of the zones asked for.
	rm -r "$SY/class/hwmon"
	run -4 --separate-stderr rapl-read --sysfs "$SY" --proc "$P" -z core \
	    -n 1 -i 10ms
	assert_equal "${stderr_lines[1]}" "rapl-read: no source here gives zone 'core'; the zones here are: platform"
	run -0 rapl-read --source model --proc "$P" -z meter -n 1 -i 10ms
	assert_line --partial '"zone":"platform",'
}

# The energy records of the last run, one "zone source energy_uj" a line.
zone_sources() {
	jq -r 'select(.type == "energy") | "\(.zone) \(.source) \(.energy_uj)"' \
	    <<< "$output"
}

@test "two sources at once, each its own zones; platform never in node" {
	cp -R "$FIXTURES/sysfs-1socket/." "$SY/"
	run_state --source powercap,hwmon
	assert_success
	assert_equal "$stderr" ""
	bump_uj() {
		local f=$SY/class/powercap/$1/energy_uj
		echo $(($(cat "$f") + $2)) > "$f"
	}
	age_state 1
	bump_uj intel-rapl:0 4000000
	bump_uj intel-rapl:0:0 1000000
	run_state --source powercap,hwmon -z package,dram,platform,node
	assert_success
	# 1 s at 250 W and 50 W on the meters, over the aged second and
	# the few microseconds the run took.
	run jq -s 'map(select(.type == "interval"))[0].dt_us as $dt |
	    map(select(.type == "energy" and .zone == "platform"))[0] |
	    .energy_uj == 300 * $dt and .source == "hwmon"' <<< "$output"
	assert_output true
	run_state --source powercap,hwmon -z package,dram,platform,node
	assert_equal "$(zone_sources | grep -v platform)" "$(printf '%s\n' \
	    'package powercap 0' 'dram powercap 0' 'node powercap 0')"
	# The state file names both sources: one alone is another baseline.
	run_state --source hwmon
	assert_equal "$stderr" \
	    "rapl-read: $S: the stored sample is from source 'powercap,hwmon', not 'hwmon'; starting a new baseline"
}

@test "two sources giving one zone: a usage error naming both" {
	with_cpuinfo
	run -2 --separate-stderr rapl-read --sysfs "$SY" --proc "$P" \
	    --source hwmon,model -n 1 -i 10ms
	assert_output ""
	assert_equal "$stderr" \
	    "rapl-read: sources 'hwmon' and 'model' both give zone 'platform': name one of them"
	# Named, every source must be usable: powercap has no zones here.
	run -4 --separate-stderr rapl-read --sysfs "$SY" --proc "$P" \
	    --source hwmon,powercap -n 1 -i 10ms
	assert_equal "$stderr" \
	    "rapl-read: no RAPL zones under '$SY/class/powercap'"
	# The model beside RAPL counters: no zone in common.
	cp -R "$FIXTURES/sysfs-1socket/." "$SY/"
	run -0 --separate-stderr rapl-read --sysfs "$SY" --proc "$P" \
	    --source powercap,model -n 1 -i 10ms
	assert_equal "$(zone_sources | cut -d' ' -f1,2)" "$(printf '%s\n' \
	    'package powercap' 'dram powercap' 'platform model')"
}

@test "the model: a /proc/stat that goes backwards gives no estimate for the interval" {
	with_cpuinfo
	run_state --source model
	printf 'cpu  1300 0 700 8400 600 0 0 0 0 0\n' > "$P/stat"
	run_state --source model
	assert_energy_watts "$(table_watts amd-zen3 2 1 0.5)"
	# A virtual machine moved to another host: the counts restart lower.
	printf 'cpu  100 0 50 800 50 0 0 0 0 0\n' > "$P/stat"
	run_state --source model
	assert_success
	assert_equal "$stderr" \
	    "rapl-read: '$P/stat': the CPU time went back from 11000 to 1000 ticks: no estimate for the interval, counted again from here"
	assert_equal "$(zone_sources)" ""
	assert_line --partial '"type":"interval","seq":2,'
	# The next interval counts from the lower values: 100 of 200 busy.
	printf 'cpu  150 0 100 900 50 0 0 0 0 0\n' > "$P/stat"
	run_state --source model
	assert_equal "$stderr" ""
	assert_energy_watts "$(table_watts amd-zen3 2 1 0.5)"
}

@test "the model: /proc/stat gone mid-run is said once, its intervals left out" {
	local out=$BATS_TEST_TMPDIR/out pid
	with_cpuinfo
	rapl-read --source model --proc "$P" -n 30 -i 50ms > "$out" \
	    2> "$BATS_TEST_TMPDIR/err" &
	pid=$!
	stop_after 5 "$pid" "$out"; mv "$P/stat" "$P/stat.away"; kill -CONT "$pid"
	stop_after 15 "$pid" "$out"; mv "$P/stat.away" "$P/stat"; kill -CONT "$pid"
	wait "$pid"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" \
	    "rapl-read: cannot read '$P/stat': No such file or directory"
	run jq -s '[(map(select(.type == "energy")) | length < 29),
	    any(.[]; .type == "energy" and .seq == 30),
	    (map(select(.type == "interval")) | length == 30)] | all' "$out"
	assert_output true
}

@test "hwmon: none, or denied, is a clear error" {
	run -4 --separate-stderr rapl-read --source hwmon \
	    --sysfs "$FIXTURES/sysfs-1socket" -n 1 -i 10ms
	assert_equal "$stderr" \
	    "rapl-read: no ACPI power meters under '$FIXTURES/sysfs-1socket/class/hwmon'"
	nobody_tree "$SY"
	run -5 --separate-stderr as_nobody rapl-read --source hwmon \
	    --sysfs "$NOBODY_DIR/sys" -n 1 -i 10ms
	assert_equal "$stderr" \
	    "rapl-read: cannot read '$NOBODY_DIR/sys/class/hwmon/hwmon1/power1_average': Permission denied; run as root or grant read access to the file (see rapl-read(1))"
}

@test "-- CMD: measured until it exits, its output kept out of the stream" {
	run --separate-stderr rapl-read --sysfs "$SY" --source hwmon -i 1s -- \
	    sh -c 'echo to-stdout; echo to-stderr >&2; sleep 0.2; exit 3'
	assert_equal "$status" 3
	assert_equal "$stderr" "$(printf '%s\n' to-stdout to-stderr)"
	# Every line is a record; one short interval, ended by the exit, with
	# the command's record.
	local records=$output
	run jq -s -c 'map(.type)' <<< "$records"
	assert_output '["header","command","energy","interval"]'
	run jq -s 'map(select(.type == "interval"))[0].dt_us |
	    . >= 200000 and . < 900000' <<< "$records"
	assert_output true
}

# Runs rapl-read with its arguments at a terminal (script(1) gives it
# one), its output as the terminal shows it, less carriage returns.
at_terminal() {
	local line
	set -o pipefail
	printf -v line '%q ' rapl-read "$@"
	script -qec "$line" /dev/null | tr -d '\r'
}

@test "-- CMD at a terminal: its stdout stays there, records go only to -o's file, and a block at its end gives the run's joules, the records' sum (rapl-read(1), Measuring a command)" {
	local rec=$BATS_TEST_TMPDIR/records
	run -3 at_terminal -o "$rec" --sysfs "$SY" --source hwmon -i 100ms -- \
	    sh -c 'echo to-stdout; sleep 0.25; exit 3'
	local tty=$output
	assert_line -n 0 'to-stdout'
	refute_line --partial '{"type"'
	# The block: the elapsed time is the intervals', the joules the sum
	# of the zone's energy records, to the microjoule.
	run -0 jq -s -r '([.[] | select(.type == "interval") | .dt_us] | add) as $dt |
	    ([.[] | select(.type == "energy" and .zone == "platform") | .energy_uj] | add) as $uj |
	    ([.[] | select(.type == "command")][0].cpu_us) as $cpu |
	    "rapl-read: sh: status 3  elapsed \($dt / 1e6 * 1000 | round / 1000) s  tree cpu \($cpu / 1e6 * 1000 | round / 1000) s",
	    "  platform  \($uj / 1e6 | floor).\($uj % 1000000 + 1000000 | tostring | .[1:]) J"' "$rec"
	local expected=("${lines[@]}")
	run printf '%s\n' "$tty"
	# jq prints 0.25 where printf's %.3f gives 0.250: compare numbers.
	[[ "${lines[1]}" =~ ^rapl-read:\ sh:\ status\ 3\ \ elapsed\ ([0-9.]+)\ s\ \ tree\ cpu\ ([0-9.]+)\ s$ ]]
	[[ "${expected[0]}" =~ elapsed\ ([0-9.]+)\ s\ \ tree\ cpu\ ([0-9.]+) ]]
	local want_s=${BASH_REMATCH[1]} want_cpu=${BASH_REMATCH[2]}
	[[ "${lines[1]}" =~ elapsed\ ([0-9.]+)\ s\ \ tree\ cpu\ ([0-9.]+) ]]
	assert_equal "$(awk -v a="${BASH_REMATCH[1]}" -v b="$want_s" 'BEGIN { print (a == b) }')" 1
	assert_equal "$(awk -v a="${BASH_REMATCH[2]}" -v b="$want_cpu" 'BEGIN { print (a == b) }')" 1
	# Its tree's share comes first, the machine's after "of".
	assert_line -n 2 --regexp "^  platform  [0-9]+\.[0-9]{6} J  mean [0-9.]+ W  of the machine's ${expected[1]#  platform  }  mean [0-9.]+ W\$"
	[ "${#lines[@]}" -eq 3 ]
}

# The command of the next test, in a copy of the fixtures: at its end it
# writes its own stat (the kernel's start, 61 + 19 ticks) and that of a
# child still running (pid 4194000, started after the fixture's uptime,
# 15 + 5 ticks), the node's CPU time (150 busy ticks of 197) and both
# zones' counters, all read by the sample at its end, rapl-read's and
# proc-cputime's alike.
cat_fixture_command() {
	cat <<-'SH'
	proc=$1 rapl=$2
	start=$(awk '{ print $22 }' "/proc/$$/stat")
	mkdir "$proc/$$" "$proc/4194000"
	echo "$$ (sh) S $PPID $$ $$ 0 -1 4194560 0 0 0 0 61 19 0 0 20 0 1 0 $start 0 0" > "$proc/$$/stat"
	echo "4194000 (cpuburn) R $$ $$ $$ 0 -1 4194560 0 0 0 0 15 5 0 0 20 0 1 0 100500 0 0" > "$proc/4194000/stat"
	for pid in $$ 4194000; do
		echo '0::/user.slice/user-0.slice/session-1.scope' > "$proc/$pid/cgroup"
	done
	printf 'sh\0%s\0' "$0" > "$proc/$$/cmdline"
	printf 'cpuburn\0' > "$proc/4194000/cmdline"
	printf '%s\n' 'cpu  6110 0 2040 80047 1000 0 0 0 0 0' \
	    'cpu0 3060 0 1020 40020 500 0 0 0 0 0' \
	    'cpu1 3050 0 1020 40027 500 0 0 0 0 0' 'intr 0' 'btime 1763800000' \
	    > "$proc/stat"
	echo 10003000007 > "$rapl/intel-rapl:0/energy_uj"
	echo 1000411113 > "$rapl/intel-rapl:0/intel-rapl:0:0/energy_uj"
	SH
}

@test "-- CMD at a terminal: the block's joules are its tree's share by kp-attribute's rule, those of its process records over the same CPU time to within a microjoule per record but one (rapl-read(1), Measuring a command)" {
	local cmd=$BATS_TEST_TMPDIR/cmd.sh sys proc zones
	cat_fixture_command > "$cmd"
	# Alone, at a terminal: the block.  Its --sysfs has no cgroup tree, so
	# the tree is the command's stat, read from --proc.
	sys=$(fixture_copy sysfs-1socket)
	proc=$(fixture_copy proc-basic)
	zones=$sys/devices/virtual/powercap/intel-rapl
	run -0 at_terminal -o "$BATS_TEST_TMPDIR/records" --sysfs "$sys" \
	    --proc "$proc" --source powercap -i 5m -- sh "$cmd" "$proc" "$zones"
	local block=$output
	# In a pipeline, from the same fixtures afresh.
	rm -r "$sys" "$proc"
	sys=$(fixture_copy sysfs-1socket)
	proc=$(fixture_copy proc-basic)
	run -0 --separate-stderr bash -c 'set -o pipefail; rapl-read --sysfs "$1" --proc "$2" --source powercap -i 5m -- sh "$3" "$2" "$4" | proc-cputime --proc "$2" --exited none | kp-attribute' _ \
	    "$sys" "$proc" "$cmd" "$zones"
	local records=$output pid zone uj block_uj
	pid=$(jq 'select(.type == "command") | .pid' <<< "$records")
	for zone in package dram; do
		# The tree's two records: rounded each, they may part from the
		# tree's share, rounded once, by a microjoule.
		uj=$(jq -s --arg z "$zone" --argjson pid "$pid" '[.[] | select(.type == "process" and .zone == $z and (.pid == $pid or .ppid == $pid))] |
		    if length == 2 and (map(.cpu_us) | add) == 1000000
		    then map(.energy_uj) | add else "bad" end' <<< "$records")
		block_uj=$(awk -v z="$zone" '$1 == z { sub(/\./, "", $2); print $2 + 0 }' <<< "$block")
		echo "$zone: block $block_uj uJ, records $uj uJ"
		[ $((block_uj - uj)) -le 1 ] && [ $((uj - block_uj)) -le 1 ]
	done
	# package: 3000007 uJ, active 150/197 of it, the tree's 100/150 of
	# that; dram 411113 uJ.
	run printf '%s\n' "$block"
	assert_line --regexp "^  package  1\.522846 J  mean [0-9.]+ W  of the machine's 3\.000007 J "
	assert_line --regexp "^  dram  0\.208687 J  mean [0-9.]+ W  of the machine's 0\.411113 J "
}

@test "-- CMD at a terminal without -o: no record is written at all; in a pipeline with -o, the command's stdout is rapl-read's own" {
	run -0 at_terminal --sysfs "$SY" --source hwmon -i 100ms -- echo to-stdout
	assert_line -n 0 'to-stdout'
	refute_line --partial '{"type"'
	run -0 --separate-stderr bash -c 'rapl-read -o "$1" --sysfs "$2" --source hwmon -i 100ms -- echo to-stdout | cat' _ \
	    "$BATS_TEST_TMPDIR/records" "$SY"
	assert_output 'to-stdout'
	assert_equal "$stderr" ""
	run -0 jq -s -c 'map(.type)' "$BATS_TEST_TMPDIR/records"
	assert_output '["header","command","energy","interval"]'
}

@test "-- CMD: several intervals, then the last one at its exit" {
	run --separate-stderr rapl-read --sysfs "$SY" --source hwmon -i 100ms -- sleep 0.35
	assert_success
	# Whole intervals while it runs, as many as the machine's speed
	# gives, numbered from 1; then one cut short at its exit.
	run jq -s -c 'map(select(.type == "interval")) |
	    [(map(.seq) == [range(1; length + 1)]), length >= 2,
	     (.[-1].dt_us <= 100000)]' <<< "$output"
	assert_output '[true,true,true]'
}

@test "-- CMD: a signal's death is 128 + its number; a missing command 127" {
	run --separate-stderr rapl-read --sysfs "$SY" --source hwmon -i 1s -- \
	    sh -c 'kill -TERM $$'
	assert_equal "$status" 143
	assert_line --partial '"type":"interval","seq":1,'
	run -127 --separate-stderr rapl-read --sysfs "$SY" --source hwmon -- \
	    "$BATS_TEST_TMPDIR/no-such-command"
	assert_equal "$stderr" \
	    "rapl-read: $BATS_TEST_TMPDIR/no-such-command: No such file or directory"
	touch "$BATS_TEST_TMPDIR/not-executable"
	run -126 --separate-stderr rapl-read --sysfs "$SY" --source hwmon -- \
	    "$BATS_TEST_TMPDIR/not-executable"
}

@test "-- CMD: SIGTERM to rapl-read is passed on, and the end is sampled" {
	local out=$BATS_TEST_TMPDIR/out pid st=0
	rapl-read --sysfs "$SY" --source hwmon -i 10s -- sleep 30 > "$out" &
	pid=$!
	sleep 0.3
	kill -TERM "$pid"
	wait "$pid" || st=$?
	assert_equal "$st" 143
	run jq -s -c 'map(.type)' "$out"
	assert_output '["header","command","energy","interval"]'
	run jq -c 'select(.type == "command") | [.comm, .status]' "$out"
	assert_output '["sleep",143]'
}

# The counter files process $1 holds open, from /proc: each file's
# directory and name.
open_counters() {
	find "/proc/$1/fd" -type l -printf '%l\n' 2>/dev/null |
	    grep -E '/(energy_uj|power1_average)$' |
	    sed 's|.*/\([^/]*/[^/]*\)$|\1|' | LC_ALL=C sort
}

# valgrind_closed LOG: valgrind's report of the files its process held at
# exit, LOG, says it held none of the counters.
valgrind_closed() {
	run -0 grep -c 'FILE DESCRIPTORS: .* at exit' "$1"
	run -1 grep -E 'Open file descriptor [0-9]+: .*/(energy_uj|power1_average)$' "$1"
}

@test "each source lets go of its counters at every exit, a signal's too" {
	[ "${KP_SANITIZE:-}" != 1 ] || skip "sanitizer build: valgrind cannot run it"
	cp -R "$FIXTURES/sysfs-1socket/." "$SY/"
	local out=$BATS_TEST_TMPDIR/out log=$BATS_TEST_TMPDIR/fds sig pid st held
	local vg=(valgrind -q --track-fds=yes --log-file="$log")
	# The end of -n: rapl-read(1), SIGNALS.
	run -0 "${vg[@]}" rapl-read --sysfs "$SY" --source powercap,hwmon \
	    -n 2 -i 10ms
	valgrind_closed "$log"
	for sig in TERM INT; do
		rm -f "$out" "$log"
		st=0
		env --default-signal=INT "${vg[@]}" rapl-read --sysfs "$SY" \
		    --source powercap,hwmon -i 10s > "$out" &
		pid=$!
		until grep -q '"type":"header"' "$out" 2>/dev/null; do
			sleep 0.05
		done
		held=$(open_counters "$pid")
		kill -"$sig" "$pid"
		wait "$pid" || st=$?
		# Held while it ran: the meter.  Powercap counters outside /sys
		# are opened at each read and closed after it (rapl-read(1),
		# Energy from the host), so none is held between reads.
		assert_equal "$held" hwmon1/power1_average
		assert_equal "$sig $st" "$sig $((128 + $(kill -l "$sig")))"
		valgrind_closed "$log"
	done
}

@test "-- CMD with -n or --state is a usage error" {
	run -2 --separate-stderr rapl-read -n 1 -- true
	assert_equal "$stderr" \
	    "rapl-read: a command cannot be used with --state or -n"
	run -2 --separate-stderr rapl-read --state "$S" -- true
	[ ! -e "$S" ]
}

@test "scripts/bench-rapl runs (one second; no timing is asserted)" {
	run --separate-stderr "$KP_ROOT/scripts/bench-rapl" 1
	assert_success
	assert_line --regexp '^  intervals        [0-9]+ of 1000, [0-9]+ energy records$'
	assert_line --partial '  intervals/s      '
	assert_line --partial '% of one core'
	assert_line --partial '  drift            '
	assert_line --regexp '^  floor            [0-9.]+ % of one core for the bare 1 kHz wakeup; rapl-read above it: -?[0-9.]+ %$'
	refute_line --partial 'against base'
}

@test "scripts/bench-rapl against another build: interleaved runs, medians and their ratio" {
	run --separate-stderr env RAPL_READ_BASE="$KP_ROOT/cmd/rapl-read" \
	    "$KP_ROOT/scripts/bench-rapl" 1
	assert_success
	assert_line --regexp '^  against base     median [0-9.]+ s of CPU here, [0-9.]+ s for RAPL_READ_BASE, over 5 interleaved runs each: ratio [0-9.]+$'
}

@test "no leaks or invalid accesses on the new paths (valgrind)" {
	[ "${KP_SANITIZE:-}" != 1 ] || skip "sanitizer build: ASan checks memory"
	local vg=(valgrind -q --leak-check=full
	    --errors-for-leak-kinds=definite,indirect --error-exitcode=99)
	local mmio
	mmio=$(fixture_copy sysfs-mmio)
	run -0 --separate-stderr "${vg[@]}" rapl-read --sysfs "$mmio" --list
	run -0 --separate-stderr "${vg[@]}" rapl-read --sysfs "$mmio" \
	    -z package,psys,node --per-socket -n 2 -i 10ms
	run -0 --separate-stderr "${vg[@]}" rapl-read --sysfs "$SY" \
	    --source hwmon -n 1 -i 10ms
	run -0 --separate-stderr "${vg[@]}" rapl-read --sysfs "$SY" \
	    --source hwmon --state "$S"
	run -3 --separate-stderr "${vg[@]}" rapl-read --sysfs "$SY" \
	    --source hwmon -i 50ms -- sh -c 'exit 3'
	run -4 --separate-stderr "${vg[@]}" rapl-read --sysfs "$mmio" \
	    --source powercap -z gpu
	# The table's paths: two sources at once, with --state; a conflict;
	# --list where nothing measures; the model's stat going back, its
	# cpuinfo and a table that breaks the format.
	with_cpuinfo
	cp -R "$FIXTURES/sysfs-1socket/." "$SY/"
	run -0 --separate-stderr "${vg[@]}" rapl-read --sysfs "$SY" \
	    --source powercap,hwmon --state "$S"
	run -0 --separate-stderr "${vg[@]}" rapl-read --sysfs "$SY" \
	    --source powercap,hwmon --state "$S"
	run -2 --separate-stderr "${vg[@]}" rapl-read --sysfs "$SY" \
	    --proc "$P" --source hwmon,model -n 1 -i 10ms
	run -4 --separate-stderr "${vg[@]}" rapl-read \
	    --sysfs "$BATS_TEST_TMPDIR/none" --proc "$P" --list
	rm -f "$S"
	run -0 --separate-stderr "${vg[@]}" rapl-read --proc "$P" \
	    --source model --state "$S"
	printf 'cpu  10 0 5 80 5 0 0 0 0 0\n' > "$P/stat"
	run -0 --separate-stderr "${vg[@]}" rapl-read --proc "$P" \
	    --source model --state "$S"
	assert_equal "${#stderr_lines[@]}" 1
	printf 'row fallback 1\n' > "$BATS_TEST_TMPDIR/table"
	run -3 --separate-stderr "${vg[@]}" rapl-read --proc "$P" \
	    --source model --model-table "$BATS_TEST_TMPDIR/table" -n 1 -i 1ms
}
