#!/usr/bin/env bats
# --state under faults (rapl-read(1), "Guarantees"): a full disk, an I/O error and a
# kill -9 at each step of a state write, injected without root by
# tests/state-fault.c (LD_PRELOAD), and a real full tmpfs as root.  Nothing
# measured is counted twice; what a crash leaves is cleaned up.

load test_helper
load rapl_helper

setup() {
	rapl_tree sysfs-1socket
	SHIM=$BATS_TEST_TMPDIR/state-fault.so
	cc -shared -fPIC -o "$SHIM" "$KP_ROOT/tests/state-fault.c" -ldl
	LOG=$BATS_TEST_TMPDIR/log
}

# One cron run of rapl-read: its records appended to $LOG; its status in
# $status.  With KP_FAULT=NAME set in the environment, under the shim.
cron_run() {
	local st=0
	if [ -n "${FAULT:-}" ]; then
		# Under make check SANITIZE=1, ASan wants to be loaded first,
		# and a run that fails on purpose exits with what it held.
		env ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 \
		    LD_PRELOAD="$SHIM" \
		    KP_FAULT="$FAULT" rapl-read --sysfs "$SY" \
		    --proc "$P" --state "$S" >> "$LOG" 2>"$BATS_TEST_TMPDIR/err" || st=$?
	else
		rapl-read --sysfs "$SY" --proc "$P" --state "$S" >> "$LOG" \
		    2>"$BATS_TEST_TMPDIR/err" || st=$?
	fi
	status=$st
}

# The package energy the log holds, summed.
package_uj() {
	jq -s '[.[] | select(.type == "energy" and .zone == "package") |
	    .energy_uj] | add // 0' "$LOG"
}

# Moves the package counter on by $1 uJ, and the stored sample back 10 s.
step() {
	local f=$SY/class/powercap/intel-rapl:0/energy_uj
	echo $(($(cat "$f") + $1)) > "$f"
	age_state 10
}

@test "a full disk: no record written, nothing advanced; the next run counts it once" {
	cron_run
	step 1000000
	FAULT=enospc cron_run
	assert_equal "$status" 1
	assert_regex "$(cat "$BATS_TEST_TMPDIR/err")" \
	    "^rapl-read: $BATS_TEST_TMPDIR/\\.rr\\.state\\.[A-Za-z0-9]{6}: No space left on device\$"
	run -0 jq -s -c 'map(select(.type == "interval")) | length' "$LOG"
	assert_output 0
	# Nothing at all, not even a header: a stage after it with --state
	# takes the empty input as a failure, not as a first run.
	assert_equal "$(grep -c '"type":"header"' "$LOG")" 1
	step 1000000
	cron_run
	assert_equal "$status" 0
	# The counter moved 2 J: the log says 2 J, not 3.
	assert_equal "$(package_uj)" 2000000
	run -0 kp-fmt -f json --summary < "$LOG"
}

@test "an I/O error syncing the state: exit 1, no record; counted once after" {
	cron_run
	step 1000000
	FAULT=eio cron_run
	assert_equal "$status" 1
	assert_regex "$(cat "$BATS_TEST_TMPDIR/err")" \
	    "^rapl-read: $BATS_TEST_TMPDIR/\\.rr\\.state\\.[A-Za-z0-9]{6}: Input/output error\$"
	assert_equal "$(jq -s 'map(select(.type == "interval")) | length' "$LOG")" 0
	step 1000000
	cron_run
	assert_equal "$(package_uj)" 2000000
}

@test "kill -9 while the state is synced: no record, and the temporary is removed" {
	cron_run
	step 1000000
	FAULT=kill-at-fsync cron_run
	assert_equal "$status" 137
	run -0 find "$BATS_TEST_TMPDIR" -maxdepth 1 -name '.rr.state.*'
	assert_equal "${#lines[@]}" 1
	step 1000000
	cron_run
	assert_equal "$status" 0
	run -0 find "$BATS_TEST_TMPDIR" -maxdepth 1 -name '.rr.state.*'
	assert_output ""
	assert_equal "$(package_uj)" 2000000
}

@test "kill -9 between the records and the rename: the repeat is reported and counted once" {
	cron_run
	step 1000000
	cron_run
	step 1000000
	FAULT=kill-at-rename cron_run
	assert_equal "$status" 137
	assert_equal "$(package_uj)" 2000000
	step 1000000
	cron_run
	# The next run repeats interval 2 over the longer span: a reader of
	# the log reports the replay and keeps the first copy (kp-records(5),
	# "Rules every reader applies").  The third joule, in the window
	# between the records and the rename, is the one loss rapl-read(1),
	# "Guarantees", allows.
	run -3 --separate-stderr kp-fmt -f json --summary < "$LOG"
	assert_equal "$(jq -s '[.[] | select(.type == "energy" and .zone == "package") | .energy_uj] | add' <<< "$output")" 2000000
	assert_equal "${stderr_lines[0]}" \
	    "kp-fmt: <stdin>:$(grep -n '"type":"energy","seq":2,"zone":"package"' "$LOG" | sed -n '2s/:.*//p'): energy record of interval 2, which has ended: a replay or a disorder"
	run -0 find "$BATS_TEST_TMPDIR" -maxdepth 1 -name '.rr.state.*'
	assert_output ""
}

# filter_under STAGE ARGS...: STAGE with --state on $IN under the shim's
# fault $FAULT; its status, standard output and error as run sets them.
filter_under() {
	run --separate-stderr env ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 \
	    LD_PRELOAD="$SHIM" KP_FAULT="$FAULT" "$@" \
	    --state "$BATS_TEST_TMPDIR/filter.state" < "$IN"
}

# A stage's input: the stream of the stages before it, two intervals.
pipeline_input() {
	local pb
	pb=$(fixture_copy proc-basic)
	IN=$BATS_TEST_TMPDIR/in
	rapl-read --sysfs "$SY" --proc "$P" -n 2 -i 1ms > "$IN.rr"
	proc-cputime --proc "$pb" < "$IN.rr" > "$IN.pc"
	kp-attribute --proc "$pb" < "$IN.pc" > "$IN.ka"
	PB=$pb
}

# What a filter passes on as it came (the header, upstream records) is of
# the interval too: none of it goes out before the state is prepared.
assert_nothing_out() {
	assert_equal "$status" 1
	assert_output ""
	assert_regex "$stderr" \
	    "^$1: $BATS_TEST_TMPDIR/\\.filter\\.state\\.[A-Za-z0-9]{6}: No space left on device\$"
	[ ! -e "$BATS_TEST_TMPDIR/filter.state" ]
}

@test "proc-cputime as a filter on a full disk: no record at all, passed-through ones included" {
	pipeline_input
	IN=$IN.rr FAULT=enospc filter_under proc-cputime --proc "$PB"
	assert_nothing_out proc-cputime
}

@test "kp-attribute on a full disk: no record at all, passed-through ones included" {
	pipeline_input
	IN=$IN.pc FAULT=enospc filter_under kp-attribute --proc "$PB"
	assert_nothing_out kp-attribute
}

@test "kp-aggregate on a full disk: no record at all, passed-through ones included" {
	pipeline_input
	IN=$IN.ka FAULT=enospc filter_under kp-aggregate
	assert_nothing_out kp-aggregate
}

@test "proc-cputime --head on a full disk: not even its header" {
	pipeline_input
	IN=/dev/null FAULT=enospc filter_under proc-cputime --head --proc "$PB"
	assert_nothing_out proc-cputime
}

@test "a state path that is a FIFO or a directory is refused at once" {
	mkfifo "$S"
	run -1 --separate-stderr timeout 10 rapl-read --sysfs "$SY" --proc "$P" --state "$S"
	assert_equal "$stderr" "rapl-read: $S: not a regular file"
	rm "$S"; mkdir "$S"
	run -1 --separate-stderr rapl-read --sysfs "$SY" --proc "$P" --state "$S"
	assert_equal "$stderr" "rapl-read: $S: not a regular file"
}

@test "the lock is waited for KP_LOCK_WAIT seconds, then exit 1" {
	local ready=$BATS_TEST_TMPDIR/ready
	flock "$S.lock" sh -c 'touch "$1"; sleep 30' _ "$ready" &
	local holder=$!
	until [ -e "$ready" ]; do sleep 0.05; done
	run -1 --separate-stderr env KP_LOCK_WAIT=1 rapl-read --sysfs "$SY" \
	    --proc "$P" --state "$S"
	assert_equal "$stderr" "rapl-read: $S: another run holds the lock, waiting
rapl-read: $S: the lock is still held after 1 s (KP_LOCK_WAIT), giving up"
	assert_output ""
	pkill -P "$holder" sleep || true
	wait "$holder" || true
	run -2 --separate-stderr env KP_LOCK_WAIT=x rapl-read --sysfs "$SY" \
	    --proc "$P" --state "$S"
	assert_equal "$stderr" "rapl-read: KP_LOCK_WAIT must be whole seconds from 0 to 3600: 'x'"
}

@test "a real full tmpfs: exit 1, no record, counted once after (root)" {
	[ "$(id -u)" -eq 0 ] || skip "mounting a tmpfs needs root"
	local mnt=$BATS_TEST_TMPDIR/mnt
	mkdir "$mnt"
	mount -t tmpfs -o size=64k tmpfs "$mnt"
	S=$mnt/rr.state
	cron_run
	step 1000000
	# Fill what is left of it, the lock and the state already there.
	head -c 1M /dev/zero > "$mnt/fill" 2>/dev/null || true
	cron_run
	local full_status=$status
	rm "$mnt/fill"
	step 1000000
	cron_run
	umount "$mnt"
	assert_equal "$full_status" 1
	assert_equal "$(package_uj)" 2000000
}

# two_intervals STAGE N: kp-gen's two dense intervals of N processes, as
# STAGE reads them (kp-aggregate: through kp-attribute), whole in $ALL,
# the first in $ONE, the second in $TWO, each after the header.
two_intervals() {
	ALL=$BATS_TEST_TMPDIR/all ONE=$BATS_TEST_TMPDIR/one TWO=$BATS_TEST_TMPDIR/two
	"$KP_ROOT/scripts/kp-gen" --seed 7 --intervals 2 --processes "$2" \
	    --dense 1 > "$ALL"
	if [ "$1" = kp-aggregate ]; then
		kp-attribute --proc "$PB" < "$ALL" > "$ALL.2"
		mv "$ALL.2" "$ALL"
	fi
	grep -v '"seq":2,' "$ALL" > "$ONE"
	grep -v '"seq":1,' "$ALL" > "$TWO"
}

# stage STAGE [ARGS...] < INPUT: run, stderr apart, /proc the fixture's.
stage() {
	local proc=()
	[ "$1" != kp-attribute ] || proc=(--proc "$PB")
	run --separate-stderr "$1" "${proc[@]}" "${@:2}"
}

# refused_whole STAGE ENTRIES SED: STAGE's state of ENTRIES processes,
# broken by SED, is refused whole: the run goes as if none were given.
refused_whole() {
	local s=$BATS_TEST_TMPDIR/s fresh=$BATS_TEST_TMPDIR/fresh got
	two_intervals "$1" "$2"
	rm -f "$s" "$fresh"
	stage "$1" --state "$s" < "$ONE"
	assert_success
	cp "$s" "$s.before"
	sed -i "$3" "$s"
	run -1 cmp -s "$s" "$s.before"
	stage "$1" --state "$s" < "$TWO"
	assert_success
	assert_equal "$stderr" "$1: $s: corrupt state file, starting a new baseline"
	got=$output
	stage "$1" --state "$fresh" < "$TWO"
	assert_success
	assert_equal "$got" "$output"
	cmp "$s" "$fresh"
}

@test "a state file broken in its 1000th entry, or by a NUL byte between entries, is refused whole: the run goes as if no state were given (kp-attribute(1), kp-aggregate(1), --state)" {
	PB=$FIXTURES/proc-basic
	for st in kp-attribute kp-aggregate; do
		# an integer too big inside the entry; its key's colon lost
		refused_whole "$st" 2000 's/\("[0-9]*:[0-9]*":{\)/\1"x":99999999999999999999,/1000'
		refused_whole "$st" 2000 's/\("[0-9]*:[0-9]*"\):{/\1{/1000'
		# a NUL byte, which jansson would pass over, in a state small
		# enough to be checked in one piece and then read by entries
		refused_whole "$st" 20 's/\("[0-9]*:[0-9]*":{\)/\x00\1/5'
		refused_whole "$st" 2000 's/\("[0-9]*:[0-9]*":{\)/\x00\1/1000'
	done
}

@test "a state of 20,000 processes, read entry by entry, goes on as one run would (kp-attribute(1), kp-aggregate(1), --state)" {
	local s=$BATS_TEST_TMPDIR/s one
	PB=$FIXTURES/proc-basic
	for st in kp-attribute kp-aggregate; do
		two_intervals "$st" 20000
		stage "$st" < "$ALL"
		assert_success
		one=$(grep '"seq":2,' <<< "$output")
		rm -f "$s"
		stage "$st" --state "$s" < "$ONE"
		assert_success
		[ "$(grep -o '"[0-9]*:[0-9]*":{' "$s" | wc -l)" -eq 20000 ]
		stage "$st" --state "$s" < "$TWO"
		assert_success
		assert_equal "$stderr" ""
		assert_equal "$(grep '"seq":2,' <<< "$output")" "$one"
	done
}

# nested_state FILE N ELEMENTS: kp-aggregate's state, its levels N arrays
# one inside the other, the innermost holding ELEMENTS 1s.
nested_state() {
	{
		printf '{"boot_id":"%s","data":{"levels":' "$(cat /proc/sys/kernel/random/boot_id)"
		head -c "$2" /dev/zero | tr '\0' '['
		printf '1'
		head -c $((2 * ($3 - 1))) /dev/zero | sed 's/\x0\x0/,1/g'
		head -c "$2" /dev/zero | tr '\0' ']'
		printf ',"members":{}},"kind":"kp-aggregate","version":1}\n'
	} > "$1"
}

@test "a state file nests as deep as jansson reads it, 2048 values from the top, and no deeper, however large; never a crash (kp-aggregate(1), --state)" {
	local s=$BATS_TEST_TMPDIR/s in=$BATS_TEST_TMPDIR/in elements
	echo '{"type":"header","seq":0,"version":"1.0","producer":"test"}' > "$in"
	# the file's object, data, then levels: the innermost 1 of 2045
	# arrays is the 2048th value down; small, or past 64 KiB in all
	for elements in 1 50000; do
		nested_state "$s" 2045 "$elements"
		run -0 --separate-stderr kp-aggregate --state "$s" < "$in"
		assert_equal "$stderr" "kp-aggregate: $s: unusable totals in the state file, starting from zero"
		nested_state "$s" 2046 "$elements"
		run -0 --separate-stderr kp-aggregate --state "$s" < "$in"
		assert_equal "$stderr" "kp-aggregate: $s: corrupt state file, starting a new baseline"
	done
	nested_state "$s" 1000000 1
	run -0 --separate-stderr kp-aggregate --state "$s" < "$in"
	assert_equal "$stderr" "kp-aggregate: $s: corrupt state file, starting a new baseline"
}
