#!/usr/bin/env bats
# rapl-read when things go wrong: counters failing, vanishing and denied;
# --state files rebooted, foreign, locked, linked; counters that may wrap
# unseen.
# shellcheck disable=SC2154 # bats's run sets stderr and stderr_lines

load test_helper
load rapl_helper

setup() {
	rapl_tree sysfs-2socket
}

@test "a zone that disappears and comes back starts from a new baseline" {
	local d=$SY/devices/virtual/powercap/intel-rapl/intel-rapl:0/intel-rapl:0:0
	local f=$SY/class/powercap/intel-rapl:0:0/energy_uj
	local out=$BATS_TEST_TMPDIR/out pid st=0
	rapl-read --sysfs "$SY" -n 40 -i 50ms > "$out" 2> "$BATS_TEST_TMPDIR/err" &
	pid=$!
	# The attribute of a removed zone reads as nothing, then the zone is
	# gone; it comes back with its counter reset.
	stop_after 5 "$pid" "$out"; : > "$d/energy_uj"; kill -CONT "$pid"
	stop_after 9 "$pid" "$out"; mv "$d" "$BATS_TEST_TMPDIR/gone"
	kill -CONT "$pid"
	stop_after 15 "$pid" "$out"
	mv "$BATS_TEST_TMPDIR/gone" "$d"
	# Written in place, never truncated: a read in between a truncation
	# and a write would see the counter vanish again.
	echo 5 1<> "$d/energy_uj"
	kill -CONT "$pid"
	stop_after 21 "$pid" "$out"; echo 1005 1<> "$d/energy_uj"
	kill -CONT "$pid"
	wait "$pid" || st=$?
	assert_equal "$st" 0
	assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" \
	    "rapl-read: cannot read '$f': No such device"
	# Never the wrap that a counter reset would look like: 5 is below
	# the previous value, but the gap is not an interval.
	run jq -s '[(map(select(.zone == "core")) | length < 40),
	    all(.[] | select(.zone == "core"); .energy_uj <= 1000),
	    any(.[]; .zone == "core" and .energy_uj == 1000),
	    (map(select(.zone == "package")) | length == 40)] | all' "$out"
	assert_output true
}

@test "an unreadable energy_uj as non-root: exit 5, the file and the fix" {
	nobody_tree "$FIXTURES/sysfs-2socket"
	run -5 --separate-stderr as_nobody rapl-read --source powercap \
	    --sysfs "$NOBODY_DIR/sys" -n 1 -i 10ms
	assert_output ""
	assert_equal "$stderr" \
	    "rapl-read: cannot read '$NOBODY_DIR/sys/class/powercap/intel-rapl:0/energy_uj': Permission denied; run as root or let group 'power' read the counters with kp's udev rule scripts/70-powercap.rules (see rapl-read(1))"
	run -5 --separate-stderr as_nobody rapl-read --sysfs "$NOBODY_DIR/sys" \
	    --list
	assert_line "package	0	$NOBODY_DIR/sys/class/powercap/intel-rapl:0/energy_uj	262143328850	-	unreadable: energy_uj: Permission denied"
}

@test "the udev rule the message names is shipped and grants group read" {
	local rule=$KP_ROOT/scripts/70-powercap.rules
	run grep -c '^ACTION=="add", SUBSYSTEM=="powercap", KERNEL=="intel-rapl:\*|intel-rapl-mmio:\*", RUN+="/bin/chgrp power /sys%p/energy_uj", RUN+="/bin/chmod g+r /sys%p/energy_uj"$' "$rule"
	assert_output 1
	run grep -v '^#' "$rule"
	assert_equal "${#lines[@]}" 1
}

@test "--state: a reboot since the stored sample starts a new baseline" {
	run_state
	run_state
	assert_line --partial '"type":"interval","seq":1,'
	echo 11111111-2222-3333-4444-555555555555 \
	    > "$P/sys/kernel/random/boot_id"
	set_uj intel-rapl:0 1	# reset by the reboot: not a wrap
	run_state
	assert_success
	assert_output '{"type":"header","seq":0,"version":"1.2","producer":"rapl-read","node_name":"worker-2"}'
	assert_equal "$stderr" \
	    "rapl-read: $S: written before a reboot, starting a new baseline"
	set_uj intel-rapl:0 101
	run_state
	assert_line --partial '"type":"interval","seq":1,'
	assert_line --partial '"zone":"package","energy_uj":100,'
}

@test "--state: another stage's state file is refused, and left as it is" {
	# Each stage needs its own (proc-cputime(1), Guarantees): replacing
	# proc-cputime's state would start it afresh at its next run.
	local theirs='{"kind":"proc-cputime","version":1,"boot_id":"x","data":{}}'
	echo "$theirs" > "$S"
	run_state
	assert_failure 2
	assert_equal "$stderr" \
	    "rapl-read: $S: the state file of proc-cputime, not of rapl-read: each stage needs a --state file of its own"
	assert_output ""
	assert_equal "$(cat "$S")" "$theirs"
}

@test "--state: one file given to two stages of a pipeline is refused at once, not after the lock's wait" {
	# kp-attribute holds the lock while its input is open; the lock file
	# names it.
	local in=$BATS_TEST_TMPDIR/in holder writer
	mkfifo "$in"
	kp-attribute --proc "$P" --state "$S" < "$in" > /dev/null 2>&1 &
	holder=$!
	exec {writer}> "$in"
	until grep -qx kp-attribute "$S.lock" 2>/dev/null; do sleep 0.05; done
	# A wait of an hour: only the lock file's name can end it early.
	run -2 --separate-stderr env KP_LOCK_WAIT=3600 timeout 60 \
	    rapl-read --sysfs "$SY" --proc "$P" --state "$S"
	assert_equal "$stderr" \
	    "rapl-read: $S: the state file of kp-attribute, not of rapl-read: each stage needs a --state file of its own"
	assert_output ""
	exec {writer}>&-
	wait "$holder" || true
}

@test "--state: a corrupt state file is replaced, never trusted" {
	printf '{"kind":"rapl-read","version":1,"boot_id":"%s","data":{"seq":"x"}}\n' \
	    "$(cat "$P/sys/kernel/random/boot_id")" > "$S"
	run_state
	assert_equal "$stderr" \
	    "rapl-read: $S: unusable sample in the state file, starting a new baseline"
	head -c 20 "$FIXTURES/proc-model/stat" > "$S"
	run_state
	assert_equal "$stderr" \
	    "rapl-read: $S: corrupt state file, starting a new baseline"
	run jq -e '.data.members["intel-rapl:0"] == {"zone": "package",
	    "socket": 0, "max_uj": 262143328850, "uj": 100000000000}' "$S"
	assert_success
}

@test "--state: a counter stored for another zone or range is not used" {
	local f=$SY/class/powercap/intel-rapl:0:0/energy_uj
	run_state
	# The tree changed between runs: intel-rapl:0:0 is now dram, as in
	# a one-socket tree, and intel-rapl:1 has another range.
	echo dram > "$SY/class/powercap/intel-rapl:0:0/name"
	echo 262143328851 > "$SY/class/powercap/intel-rapl:1/max_energy_range_uj"
	age_state 10
	run_state --per-socket
	assert_success
	assert_equal "$stderr" "$(printf '%s\n' \
	    "rapl-read: $S: counter 'intel-rapl:1' is not the one stored (its zone, socket or range differs); starting a new baseline for it" \
	    "rapl-read: $S: counter 'intel-rapl:0:0' is not the one stored (its zone, socket or range differs); starting a new baseline for it")"
	run jq -r 'select(.type == "energy") | "\(.zone)/\(.socket)"' <<< "$output"
	assert_output "$(printf '%s\n' package/0 dram/1)"
	# A state file of the earlier format, a bare value, is not used either.
	edit_state '.data.members["intel-rapl:0"] = 100000000000'
	run_state
	assert_equal "$stderr" "rapl-read: $S: counter 'intel-rapl:0' is not the one stored (its zone, socket or range differs); starting a new baseline for it"
	refute_line --partial '"zone":"package"'
}

@test "--state: a run waits for the lock held by another" {
	local ready=$BATS_TEST_TMPDIR/ready release=$BATS_TEST_TMPDIR/release
	# The holder lets go once the run has said that it waits.
	flock "$S.lock" sh -c 'touch "$1"; until [ -e "$2" ]; do sleep 0.05; done' \
	    _ "$ready" "$release" &
	until [ -e "$ready" ]; do sleep 0.05; done
	rapl-read --sysfs "$SY" --proc "$P" --state "$S" \
	    > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/err" &
	local run=$!
	until grep -q waiting "$BATS_TEST_TMPDIR/err"; do sleep 0.05; done
	[ ! -s "$S" ]		# still waiting
	touch "$release"
	wait "$run"
	wait
	assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" \
	    "rapl-read: $S: another run holds the lock, waiting"
	[ -s "$S" ]
}

@test "--state: replaced by rename, leaving no temporary file" {
	run_state
	local before
	before=$(stat -c %i "$S")
	run_state
	[ "$(stat -c %i "$S")" != "$before" ]
	run find "$BATS_TEST_TMPDIR" -maxdepth 1 -name '.rr.state*'
	assert_output ""
	run jq -r .kind "$S"
	assert_output rapl-read
}

@test "--state: symbolic links are not followed" {
	echo precious > "$BATS_TEST_TMPDIR/target"
	ln -s target "$S"
	run_state
	assert_success
	assert_equal "$stderr" \
	    "rapl-read: $S: a symbolic link, not followed; starting a new baseline in a file in its place"
	[ ! -L "$S" ] && [ -f "$S" ]
	assert_equal "$(cat "$BATS_TEST_TMPDIR/target")" precious
	rm "$S.lock"
	ln -s target "$S.lock"
	run -1 --separate-stderr rapl-read --sysfs "$SY" --state "$S"
	assert_equal "$stderr" \
	    "rapl-read: $S.lock: Too many levels of symbolic links"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/target")" precious
}

@test "--state: warns when a counter may have wrapped twice since the stored sample" {
	# A counter of a tenth of the fixture's range wraps in 13 s at 500 W,
	# so that moving the stored sample 60 s into the past needs no more
	# than a minute of the machine's uptime (its clock starts at boot).
	echo 6571299961 > "$SY/class/powercap/intel-rapl:0:1/max_energy_range_uj"
	echo 2000000000 > "$SY/class/powercap/intel-rapl:0:1/energy_uj"
	run_state
	age_state 60
	run_state
	assert_success
	assert_equal "$stderr" \
	    "rapl-read: $S: the time since the stored sample of 60 s is longer than the 13 s in which counter 'intel-rapl:0:1' wraps at 500 W: a second wrap would go unseen"
	assert_line --partial '"type":"interval","seq":1,'
	run_state
	assert_equal "$stderr" ""
}

@test "-i longer than a counter's wrap time at 500 W is warned about" {
	# -k: in the sanitizer build, LeakSanitizer's check at the exit that
	# SIGTERM starts once hung, its tracer and rapl-read each waiting for
	# the other (10 minutes at 99 % CPU, under load); only stderr counts.
	run --separate-stderr timeout -k 10 1 rapl-read --sysfs "$SY" -i 3m -z package
	assert_equal "$stderr" ""
	run --separate-stderr timeout -k 10 1 rapl-read --sysfs "$SY" -i 10m -z package
	assert_equal "$stderr" \
	    "rapl-read: the interval of 600 s is longer than the 524 s in which counter 'intel-rapl:0' wraps at 500 W: a second wrap would go unseen"
}

@test "--state: a counter that stepped back is not read as a wrap" {
	run_state -z core
	# 10 uJ back: as a wrap, 65 kJ in a few milliseconds.
	set_uj intel-rapl:0:0 $(($(cat "$SY/class/powercap/intel-rapl:0:0/energy_uj") - 10))
	run_state -z core
	assert_success
	refute_line --partial '"type":"energy"'
	assert_line --partial '"type":"interval","seq":1,'
	assert_regex "$stderr" "^rapl-read: counter 'intel-rapl:0:0' went from 50000000000 to 49999999990 uJ in [0-9]+ us, more than 2000 W could: left out of the interval, counted again from its new value$"
	# Counted again from 49999999990.
	set_uj intel-rapl:0:0 50000000000
	run_state -z core
	assert_line --partial '"zone":"core","energy_uj":10,'
}

# The counters below are written in place, never truncated, so that no
# read sees an empty file (a vanished zone).
@test "a counter that jumps further than any zone could is left out once" {
	local f=$SY/class/powercap/intel-rapl:0:0/energy_uj
	local out=$BATS_TEST_TMPDIR/out pid
	rapl-read --sysfs "$SY" -z core -n 8 -i 50ms > "$out" \
	    2> "$BATS_TEST_TMPDIR/err" &
	pid=$!
	stop_after 2 "$pid" "$out"; echo 60000000000 1<> "$f"; kill -CONT "$pid"
	stop_after 4 "$pid" "$out"; echo 60000100000 1<> "$f"; kill -CONT "$pid"
	wait "$pid"
	run -0 cat "$BATS_TEST_TMPDIR/err"
	assert_equal "${#lines[@]}" 1
	assert_regex "$output" "^rapl-read: counter 'intel-rapl:0:0' went from 50000000000 to 60000000000 uJ in [0-9]+ us, more than 2000 W could"
	# 11 kJ left out; the 100 mJ after it counted.
	run jq -s '[.[] | select(.type == "energy") | .energy_uj] |
	    (all(. < 1000000)) and (add == 100000)' "$out"
	assert_output true
}

@test "a counter above its max_energy_range_uj is left out, and said once" {
	local f=$SY/class/powercap/intel-rapl:0:0/energy_uj
	local out=$BATS_TEST_TMPDIR/out pid
	rapl-read --sysfs "$SY" -z core -n 8 -i 50ms > "$out" \
	    2> "$BATS_TEST_TMPDIR/err" &
	pid=$!
	stop_after 2 "$pid" "$out"; echo 262143328851 1<> "$f"; kill -CONT "$pid"
	stop_after 5 "$pid" "$out"; echo 000000001000 1<> "$f"; kill -CONT "$pid"
	wait "$pid"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" \
	    "rapl-read: '$f': 262143328851 is above max_energy_range_uj, 262143328850"
	run jq -s '[.[] | select(.type == "energy") | .energy_uj] | add' "$out"
	assert_output 0
}
