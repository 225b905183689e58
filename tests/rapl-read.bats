#!/usr/bin/env bats
# rapl-read: zones, sums over sockets and wrap-around on fixture sysfs trees;
# the model where there is no RAPL; how it fails.
# shellcheck disable=SC2154 # bats's run sets stderr and stderr_lines

load test_helper
load rapl_helper

setup() {
	rapl_tree sysfs-2socket
}

# A field of the energy record of a zone, from the last run's output.
zone_field() {
	jq -r "select(.type == \"energy\" and .zone == \"$1\") | .$2" \
	    <<< "$output"
}

# The records of the last run's output, one "type seq zone" a line.
shape() {
	jq -r '"\(.type) \(.seq)" + (if .zone then " \(.zone)" else "" end)' \
	    <<< "$output"
}

# proc-model names the node worker-2 and has no cpuinfo.
HEADER='{"type":"header","seq":0,"version":"1.2","producer":"rapl-read","node_name":"worker-2"}'

@test "usage matches the manual's synopsis" {
	# The synopsis wraps, and col(1) turns the indentation into tabs.
	assert_equal "$(usage_synopsis rapl-read)" \
	    "$(man_synopsis rapl-read.1 | tr '\t' ' ' | tr -s ' ')"
}

@test "-h and --help print the usage and the options on stdout, exit 0; --version" {
	assert_help rapl-read
	run -0 rapl-read -h
	assert_line -n 0 \
	    "usage: rapl-read [-hqv] [-i duration] [-n count] [-o file] [-z zone,...]"
	assert_line '  -i, --interval duration             end an interval every duration (1s)'
}

@test "an unknown option or an operand is a usage error" {
	run -2 rapl-read -x
	assert_line -n 0 "rapl-read: invalid option -- 'x'"
	assert_line -n 1 --partial "usage: rapl-read [-hqv]"
	run -2 --separate-stderr rapl-read --frobnicate
	run -2 --separate-stderr rapl-read extra
	assert_output ""
	assert_equal "${stderr_lines[0]}" \
	    "rapl-read: unexpected argument 'extra' (a command follows --)"
	assert_equal "${stderr_lines[1]}" \
	    "usage: rapl-read [-hqv] [-i duration] [-n count] [-o file] [-z zone,...]"
}

@test "a bad interval is a usage error naming the value" {
	local v
	for v in 0 0s x -1s 2d 25h 86401 1.5x 5\ s; do
		run -2 --separate-stderr rapl-read -i "$v"
		assert_equal "$stderr" \
		    "rapl-read: interval must be a positive duration up to 1 day, in seconds or with a unit (us, ms, s, m, h): '$v'"
	done
	run -2 --separate-stderr rapl-read --interval 0
}

@test "-i takes a bare number as seconds, and h as a unit, up to a day" {
	# rapl-read(1), -i: -i is parsed before --state refuses it, so the
	# refusal says the duration itself was taken.
	local v
	for v in 1 0.5 86400 1h 24h 1.5h 1440m; do
		run -2 --separate-stderr rapl-read -i "$v" --state "$S"
		assert_equal "$stderr" "rapl-read: --state cannot be used with -i or -n"
	done
	# The deadline of a bare 0.05 is 50 ms after the baseline, never
	# sooner: 50 µs or 0.05 µs would be.
	run -0 --separate-stderr rapl-read --sysfs "$SY" -n 1 -i 0.05
	run jq -s 'map(select(.type == "interval"))[0].dt_us >= 50000' \
	    <<< "$output"
	assert_output true
}

@test "a bad count is a usage error naming the value" {
	local v
	for v in 0 -3 x 1.5; do
		run -2 --separate-stderr rapl-read -n "$v"
		assert_equal "$stderr" \
		    "rapl-read: count must be an integer from 1 to 9223372036854775807: '$v'"
	done
}

@test "-i or -n with --state is a usage error" {
	run -2 --separate-stderr rapl-read -n 1 --state "$S"
	assert_equal "$stderr" "rapl-read: --state cannot be used with -i or -n"
	run -2 --separate-stderr rapl-read --state "$S" -i 1s
	[ ! -e "$S" ]
}

@test "a bad source or power is a usage error naming the value" {
	run -2 --separate-stderr rapl-read --source rapl
	assert_equal "$stderr" \
	    "rapl-read: source must be auto or a list of powercap, hwmon, model, redfish, ipmi, nvml separated by commas: 'rapl'"
	run -2 --separate-stderr rapl-read --source powercap,,hwmon
	assert_equal "$stderr" \
	    "rapl-read: source must be auto or a list of powercap, hwmon, model, redfish, ipmi, nvml separated by commas: 'powercap,,hwmon'"
	run -2 --separate-stderr rapl-read --source hwmon,hwmon
	assert_equal "$stderr" \
	    "rapl-read: source 'hwmon' named twice: 'hwmon,hwmon'"
	run -2 --separate-stderr rapl-read --idle-watts ten
	assert_equal "$stderr" \
	    "rapl-read: idle watts must be a number from 0 to 100000: 'ten'"
	run -2 --separate-stderr rapl-read --max-watts -5
	assert_equal "$stderr" \
	    "rapl-read: max watts must be a number from 0 to 100000: '-5'"
	run -2 --separate-stderr rapl-read --idle-watts 60 --max-watts 40
	assert_equal "$stderr" \
	    "rapl-read: idle watts must not exceed max watts: 60 > 40"
	# Checked once every option is read, whichever source runs.
	run -2 --separate-stderr rapl-read --sysfs "$FIXTURES/sysfs-1socket" \
	    --max-watts 40 --idle-watts 60 -n 1 -i 1ms
	assert_equal "$stderr" \
	    "rapl-read: idle watts must not exceed max watts: 60 > 40"
	with_cpuinfo
	run -0 rapl-read --source model --proc "$P" --idle-watts 60 \
	    --max-watts 100 -n 1 -i 1ms
}

@test "the first --state run stores a baseline and emits only the header" {
	run_state
	assert_success
	assert_output "$HEADER"
	assert_equal "$stderr" ""
	[ -s "$S" ]
}

@test "two sockets: sums and wrap-around across --state runs" {
	run_state
	age_state 100
	set_uj intel-rapl:0 100030000000	# +30 J
	set_uj intel-rapl:1 1000000		# wraps: 328850 to the top, then 1 J
	set_uj intel-rapl:0:0 50005000000	# core +5 J
	set_uj intel-rapl:0:1 20002000000	# dram +2 J
	set_uj intel-rapl:1:0 21001500000	# dram +1.5 J
	run_state
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(shape)" "$(cat <<-'EOF'
	header 0
	energy 1 package
	energy 1 core
	energy 1 dram
	interval 1
	EOF
	)"
	assert_equal "$(zone_field package energy_uj)" 31328850
	assert_equal "$(zone_field package sockets)" 2
	assert_equal "$(zone_field core energy_uj)" 5000000
	assert_equal "$(zone_field core sockets)" 1
	assert_equal "$(zone_field dram energy_uj)" 3500000
	assert_equal "$(zone_field dram sockets)" 2
	assert_equal "$(zone_field package source)" powercap
	assert_equal "$(zone_field package estimated)" false

	age_state 100
	set_uj intel-rapl:1 3000000
	run_state
	assert_line --regexp '^\{"type":"interval","seq":2,"ts":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z","dt_us":[0-9]+\}$'
	assert_equal "$(zone_field package energy_uj)" 2000000
	assert_equal "$(zone_field package seq)" 2
}

@test "watts is the energy over the interval's dt_us" {
	run_state
	age_state 100
	set_uj intel-rapl:0 100030000000
	run_state
	run jq -s 'map(select(.type == "interval"))[0].dt_us as $dt |
	    map(select(.type == "energy" and .zone == "package"))[0] |
	    (.watts - .energy_uj / $dt) | fabs < 1e-6' <<< "$output"
	assert_output true
}

@test "-n 2: two intervals, each after its energy records" {
	run --separate-stderr rapl-read --sysfs "$SY" --proc "$P" -n 2 -i 10ms
	assert_success
	assert_line -n 0 "$HEADER"
	assert_equal "$(shape)" "$(cat <<-'EOF'
	header 0
	energy 1 package
	energy 1 core
	energy 1 dram
	interval 1
	energy 2 package
	energy 2 core
	energy 2 dram
	interval 2
	EOF
	)"
	run jq -s 'map(select(.type == "interval") | .dt_us > 0) | all' \
	    <<< "$output"
	assert_output true
}

@test "the intervals keep to their deadlines" {
	run --separate-stderr rapl-read --sysfs "$SY" -n 5 -i 100ms
	assert_success
	# Each interval ends at start + k * 100 ms, not 100 ms after the
	# previous one ended: a late wakeup shortens the next interval, so
	# the sum stays near 500 ms however the scheduler jitters.  The bound
	# is loose because this machine is shared.
	run jq -s 'map(select(.type == "interval") | .dt_us) |
	    (map(. > 0) | all) and (add >= 500000 and add < 650000)' \
	    <<< "$output"
	assert_output true
}

@test "zones come in the documented order, then alphabetically" {
	local client
	client=$(fixture_copy sysfs-client)
	add_zone "$client" intel-rapl:2 zeta
	add_zone "$client" intel-rapl:3 alpha
	run --separate-stderr rapl-read --sysfs "$client" -n 1 -i 10ms
	assert_success
	assert_equal "$(shape)" "$(cat <<-'EOF'
	header 0
	energy 1 package
	energy 1 core
	energy 1 uncore
	energy 1 dram
	energy 1 psys
	energy 1 alpha
	energy 1 zeta
	interval 1
	EOF
	)"
}

@test "--source powercap without zones exits 4" {
	run -4 --separate-stderr rapl-read --source powercap \
	    --sysfs "$BATS_TEST_TMPDIR/empty" -n 1 -i 10ms
	assert_output ""
	assert_equal "$stderr" \
	    "rapl-read: no RAPL zones under '$BATS_TEST_TMPDIR/empty/class/powercap'"
}

@test "--source auto without zones estimates, saying so once" {
	mkdir -p "$BATS_TEST_TMPDIR/empty"
	with_cpuinfo
	run --separate-stderr rapl-read --sysfs "$BATS_TEST_TMPDIR/empty" \
	    --proc "$P" -n 2 -i 10ms
	assert_success
	assert_equal "$stderr" \
	    "rapl-read: no RAPL zones under '$BATS_TEST_TMPDIR/empty/class/powercap': estimating energy (--source model)"
	assert_equal "$(shape)" "$(printf '%s\n' 'header 0' \
	    'energy 1 platform' 'interval 1' 'energy 2 platform' 'interval 2')"
	run jq -s -c 'map(select(.type == "energy") |
	    [.source, .estimated, .sockets]) | unique' <<< "$output"
	assert_output '[["model",true,1]]'
}

@test "--state: the fallback is said once per state file, again when it changes; -v every run, -q never" {
	local say="rapl-read: no RAPL zones under '$BATS_TEST_TMPDIR/empty/class/powercap': estimating energy (--source model)"
	mkdir -p "$BATS_TEST_TMPDIR/empty"
	with_cpuinfo
	# rapl-read(1), Sources: a cron job mails the line once, not every run.
	SY=$BATS_TEST_TMPDIR/empty run_state
	assert_success
	assert_equal "$stderr" "$say"
	assert_equal "$(jq -r .data.fallback_said "$S")" "${say#rapl-read: }"
	SY=$BATS_TEST_TMPDIR/empty run_state
	assert_success
	assert_equal "$stderr" ""
	assert_line --partial '"type":"interval","seq":1,'
	SY=$BATS_TEST_TMPDIR/empty run_state -v
	assert_equal "$stderr" "$say"
	SY=$BATS_TEST_TMPDIR/empty run_state --verbose
	assert_equal "$stderr" "$say"
	# A new state file is told again; -q tells nothing and keeps it untold.
	rm "$S"
	SY=$BATS_TEST_TMPDIR/empty run_state -q
	assert_success
	assert_equal "$stderr" ""
	SY=$BATS_TEST_TMPDIR/empty run_state
	assert_equal "$stderr" "$say"
	# Another reason is news: said once more.
	mv "$BATS_TEST_TMPDIR/empty" "$BATS_TEST_TMPDIR/other"
	mkdir "$BATS_TEST_TMPDIR/other/class"
	SY=$BATS_TEST_TMPDIR/other run_state
	assert_equal "$stderr" "rapl-read: no RAPL zones under '$BATS_TEST_TMPDIR/other/class/powercap': estimating energy (--source model)"
	SY=$BATS_TEST_TMPDIR/other run_state
	assert_equal "$stderr" ""
	# Without --state, every run says it, but under -q.
	run --separate-stderr rapl-read --sysfs "$BATS_TEST_TMPDIR/other" \
	    --proc "$P" -n 1 -i 10ms
	assert_equal "$stderr" "rapl-read: no RAPL zones under '$BATS_TEST_TMPDIR/other/class/powercap': estimating energy (--source model)"
	run -0 --separate-stderr rapl-read --quiet --sysfs "$BATS_TEST_TMPDIR/other" \
	    --proc "$P" -n 1 -i 10ms
	assert_equal "$stderr" ""
	assert_line --partial '"zone":"platform",'
}

@test "the model: idle plus the busy share of the power range, on the row's curve" {
	with_cpuinfo
	run_state --source model
	# 1000 ticks pass, 500 of them active: a usage ratio of 0.5.
	printf 'cpu  1300 0 700 8400 600 0 0 0 0 0\n' > "$P/stat"
	run_state --source model
	assert_success
	assert_energy_watts "$(table_watts amd-zen3 2 1 0.5)"

	run_state --source model --idle-watts 20 --max-watts 100
	# Another 1000 ticks, 250 active: 20 W, and 80 W times the curve at 0.25.
	printf 'cpu  1500 0 750 9150 600 0 0 0 0 0\n' > "$P/stat"
	run_state --source model --idle-watts 20 --max-watts 100
	assert_energy_watts "$(table_watts amd-zen3 2 1 0.25 20 100)"
	assert_line --partial '"type":"interval","seq":3,'
}

@test "an unreadable /proc/stat is a system failure" {
	run -1 --separate-stderr rapl-read --source model \
	    --proc "$BATS_TEST_TMPDIR/noproc" -n 1 -i 10ms
	assert_equal "$stderr" \
	    "rapl-read: cannot read '$BATS_TEST_TMPDIR/noproc/stat': No such file or directory"
}

@test "a counter without read permission: exit 5 naming the file" {
	nobody_tree "$FIXTURES/sysfs-2socket"
	run -5 --separate-stderr as_nobody rapl-read --source powercap \
	    --sysfs "$NOBODY_DIR/sys"
	assert_output ""
	assert_equal "$stderr" \
	    "rapl-read: cannot read '$NOBODY_DIR/sys/class/powercap/intel-rapl:0/energy_uj': Permission denied; run as root or let group 'power' read the counters with kp's udev rule scripts/70-powercap.rules (see rapl-read(1))"

	run --separate-stderr as_nobody rapl-read --sysfs "$NOBODY_DIR/sys" \
	    -n 1 -i 10ms
	assert_success
	assert_equal "$stderr" \
	    "rapl-read: cannot read '$NOBODY_DIR/sys/class/powercap/intel-rapl:0/energy_uj': Permission denied: estimating energy (--source model)"
	assert_line --partial '"zone":"platform",'
	assert_line --regexp '"source":"model","estimated":true,"model":"[a-z0-9-]+","threads":[1-9][0-9]*,"sockets":[1-9][0-9]*}$'
}

@test "a counter gone between --state runs: its zone is left out, with a warning" {
	run_state
	rm "$SY/devices/virtual/powercap/intel-rapl/intel-rapl:1/intel-rapl:1:0/energy_uj"
	age_state 100
	set_uj intel-rapl:0 100001000000
	run_state
	assert_success
	assert_equal "$stderr" \
	    "rapl-read: cannot read '$SY/class/powercap/intel-rapl:1:0/energy_uj': No such file or directory"
	assert_equal "$(shape)" "$(printf '%s\n' 'header 0' \
	    'energy 1 package' 'energy 1 core' 'interval 1')"
	assert_equal "$(zone_field package energy_uj)" 1000000
}

@test "a counter new since the previous run is only a baseline" {
	run_state
	add_zone "$SY" intel-rapl:2 psys
	run_state
	refute_line --partial '"zone":"psys"'
	assert_line --partial '"zone":"package"'
	echo 3000 > "$SY/class/powercap/intel-rapl:2/energy_uj"
	run_state
	assert_equal "$(zone_field psys energy_uj)" 2000
}

@test "a counter that fails mid-run is reported once and left out while it fails" {
	local f=$SY/class/powercap/intel-rapl:0:0/energy_uj
	local out=$BATS_TEST_TMPDIR/out pid
	rapl-read --sysfs "$SY" -n 40 -i 50ms > "$out" 2> "$BATS_TEST_TMPDIR/err" &
	pid=$!
	# In place, never truncated: an empty read is a vanished zone.
	stop_after 10 "$pid" "$out"; echo garbage 1<> "$f"; kill -CONT "$pid"
	stop_after 20 "$pid" "$out"; echo 50000000000 1<> "$f"; kill -CONT "$pid"
	wait "$pid"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" \
	    "rapl-read: cannot read '$f': Invalid argument"
	assert_equal "$(jq -s 'map(select(.zone == "package")) | length' "$out")" 40
	assert_equal "$(jq -s 'map(select(.zone == "dram")) | length' "$out")" 40
	run jq -s '[map(select(.zone == "core")) | length < 40,
	    any(.[]; .zone == "core" and .seq == 40)] | all' "$out"
	assert_output true
}

@test "a state from another source starts a new baseline and keeps seq" {
	with_cpuinfo
	run_state --source model
	run_state --source model
	assert_line --partial '"type":"interval","seq":1,'
	rm "$P/cpuinfo"		# the header as HEADER has it
	run_state
	assert_output "$HEADER"
	assert_equal "$stderr" \
	    "rapl-read: $S: the stored sample is from source 'model', not 'powercap'; starting a new baseline"
	run_state
	assert_line --partial '"type":"interval","seq":2,'
}

@test "a corrupt state file starts a new baseline" {
	echo 'not json' > "$S"
	run_state
	assert_success
	assert_output "$HEADER"
	assert_equal "$stderr" \
	    "rapl-read: $S: corrupt state file, starting a new baseline"
	run_state
	assert_line --partial '"type":"interval","seq":1,'
}

@test "a write error on stdout exits 1" {
	# shellcheck disable=SC2016 # expanded by the inner shell
	run -1 --separate-stderr bash -c \
	    'rapl-read -n 1 -i 10ms --sysfs "$1" > /dev/full' _ "$SY"
	assert_equal "$stderr" "rapl-read: write error on stdout: No space left on device"
}

@test "a closed pipe downstream is a quiet stop" {
	# shellcheck disable=SC2016 # expanded by the inner shell
	run --separate-stderr bash -c \
	    'set -o pipefail; rapl-read -i 10ms --sysfs "$1" --proc "$2" | head -1' _ "$SY" "$P"
	assert_success
	assert_output "$HEADER"
	assert_equal "$stderr" ""
}
