#!/usr/bin/env bats
# Signals as each page's SIGNALS section states them: a pipeline started in its own
# process group (setsid) gets SIGINT as a terminal sends it, once its
# producer has written N intervals.  The first signal ends the stream at
# its producer; every filter reads on to the end and finishes normally.

load test_helper

# A producer of the record format, as rapl-read(1), SIGNALS, says one
# behaves: an interval of 1 J
# every 50 ms; on SIGINT it ends its interval, writes it and exits 130.
# It counts its intervals in $1.  The trap only notes the signal: one run
# in the middle of writing an interval would leave that interval without
# its interval record, as no real producer does.
fake_producer() {
	cat > "$BATS_TEST_TMPDIR/producer" <<-'EOF'
	#!/bin/bash
	seq=0
	interval() {
		seq=$((seq + 1))
		printf '{"type":"energy","seq":%d,"zone":"package","energy_uj":1000000}\n' "$seq"
		printf '{"type":"interval","seq":%d,"dt_us":50000}\n' "$seq"
		echo "$seq" > "$1"
	}
	trap 'stop=1' INT
	echo '{"type":"header","seq":0,"version":"1.1","producer":"test"}'
	while :; do
		interval "$1"
		[ -z "${stop:-}" ] || exit 130
		sleep 0.05 & wait $!
	done
	EOF
	chmod +x "$BATS_TEST_TMPDIR/producer"
}

# start_group CMD...: runs bash -c CMD in a session and process group of
# its own, with SIGINT as a terminal's foreground job has it (a background
# job of this script would ignore it); the group's id goes to
# $BATS_TEST_TMPDIR/group, the statuses of its pipeline to .../status,
# its standard error to .../stderr, shown when the test fails.
start_group() {
	setsid env --default-signal=INT bash -c 'exec 2> "$0/stderr"; echo $$ > "$0/group"; '"$1"'; echo "${PIPESTATUS[*]}" > "$0/status"' "$BATS_TEST_TMPDIR" &
}

# group_catches: waits until every filter of the group catches SIGINT (bit
# 2 of SigCgt), as it will once started: a slow start must not take the
# signal for one not handled.  rapl-read is not looked at: it blocks the
# signal before it writes its header, which each test waits for, and while
# rapl-read -- CMD waits in sigtimedwait the kernel shows the signal neither
# blocked nor caught.  A pid that is no longer a kp program (a child of
# rapl-read -- caught between its fork and its exec) or that ended is not
# waited for: the test's own checks say what went wrong with it.
group_catches() {
	local pid tries=0 group
	group=$(cat "$BATS_TEST_TMPDIR/group")
	for pid in $(pgrep -g "$group" -x 'proc-cputime|kp-attribute|kp-aggregate|kp-fmt'); do
		until ! is_kp_program "$pid" || [ $(( ($(awk '/^SigCgt:/ { printf "0x%s|", $2 }' \
		    "/proc/$pid/status" 2>/dev/null)0) >> 1 & 1)) -eq 1 ]; do
			sleep 0.01
			[ $((tries += 1)) -lt 3000 ] || {
				fail "$pid catches no SIGINT: $(cat "/proc/$pid/status" 2>&1)"
				return 1
			}
		done
	done
}

# is_kp_program PID: whether PID is still a kp program that has not ended.
is_kp_program() {
	local comm state
	comm=$(cat "/proc/$1/comm" 2>/dev/null) || return 1
	state=$(awk '/^State:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ] || return 1
	[[ $comm =~ ^(proc-cputime|kp-attribute|kp-aggregate|kp-fmt)$ ]]
}

# signal_group_after N FILE SIG: once FILE counts N, SIG to the group.
signal_group_after() {
	local tries=0
	until [ -s "$2" ] && [ "$(cat "$2")" -ge "$1" ]; do
		sleep 0.05
		[ $((tries += 1)) -lt 600 ] || { fail "no interval $1 in 30 s"; return 1; }
	done
	group_catches
	kill "-$3" -- "-$(cat "$BATS_TEST_TMPDIR/group")"
}

teardown() {
	[ -n "${BATS_TEST_COMPLETED:-}" ] || [ ! -s "$BATS_TEST_TMPDIR/stderr" ] ||
	    sed 's/^/# stderr: /' "$BATS_TEST_TMPDIR/stderr"
	[ ! -s "$BATS_TEST_TMPDIR/group" ] ||
	    kill -KILL -- "-$(cat "$BATS_TEST_TMPDIR/group")" 2>/dev/null || true
}

wait_status() {
	local tries=0
	until [ -s "$BATS_TEST_TMPDIR/status" ]; do
		sleep 0.05
		[ $((tries += 1)) -lt 600 ] || { fail "the pipeline did not end in 30 s"; return 1; }
	done
	cat "$BATS_TEST_TMPDIR/status"
}

@test "kp-fmt --summary after SIGINT counts every interval the producer wrote" {
	local n=$BATS_TEST_TMPDIR/n
	fake_producer
	start_group '"$0/producer" "$0/n" | kp-fmt -f json --summary > "$0/out"'
	signal_group_after 3 "$n" INT
	run -0 wait_status
	assert_output "130 0"
	# Every interval, the one the signal ended included, and only those.
	run -0 jq -s -c '[(.[] | select(.type == "energy") | .energy_uj),
	    (.[] | select(.type == "interval") | .dt_us)]' "$BATS_TEST_TMPDIR/out"
	assert_output "[$(cat "$n")000000,$(($(cat "$n") * 50000))]"
	[ "$(cat "$n")" -ge 4 ]
}

# A command for rapl-read --: counts the SIGINTs it gets in $1, and ends
# 0.5 s after the first, so that a second one sent after it would count.
counting_command() {
	cat > "$BATS_TEST_TMPDIR/command" <<-'EOF'
	#!/bin/bash
	n=0
	trap 'n=$((n + 1)); echo $n > "$1"' INT
	while [ "$n" -eq 0 ]; do sleep 0.05; done
	sleep 0.5 & wait $!
	exit 0
	EOF
	chmod +x "$BATS_TEST_TMPDIR/command"
}

@test "Ctrl-C on rapl-read -- CMD | kp-attribute | kp-fmt --summary: one SIGINT, a summary" {
	counting_command
	start_group 'rapl-read --sysfs "$FIXTURES/sysfs-1socket" --source powercap -i 100ms -- "$0/command" "$0/ints" | tee -i "$0/raw" | kp-attribute --proc "$FIXTURES/proc-basic" | kp-fmt -f json --summary > "$0/out"'
	# Once three intervals have gone by, as a terminal sends it.
	local tries=0 n
	until n=$(grep -c '"type":"interval"' "$BATS_TEST_TMPDIR/raw" 2>/dev/null) &&
	    [ "$n" -ge 3 ]; do
		sleep 0.05
		[ $((tries += 1)) -lt 600 ] || { fail "no interval 3 in 30 s"; return 1; }
	done
	group_catches
	kill -INT -- "-$(cat "$BATS_TEST_TMPDIR/group")"
	run -0 wait_status
	# The command's status; tee -i, kp-attribute and kp-fmt finish well.
	assert_output "0 0 0 0"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/ints")" 1
	# The summary covers every interval rapl-read wrote, the last too.
	run -0 jq -s -c '[.[] | select(.type == "interval")] | map(.dt_us) | add' \
	    "$BATS_TEST_TMPDIR/raw"
	local written_us=$output
	run -0 jq -c 'select(.type == "interval") | .dt_us' "$BATS_TEST_TMPDIR/out"
	assert_output "$written_us"
	run -0 jq -c 'select(.type == "node") | .zone' "$BATS_TEST_TMPDIR/out"
	assert_output $'"package"\n"dram"'
}

@test "rapl-read -i: SIGINT ends the interval at once, writes it, exits 130" {
	start_group 'rapl-read --sysfs "$FIXTURES/sysfs-1socket" --source powercap -i 10s | tee -i "$0/raw" | kp-fmt -f json --summary > "$0/out"'
	local tries=0
	until grep -q '"type":"header"' "$BATS_TEST_TMPDIR/raw" 2>/dev/null; do
		sleep 0.05
		[ $((tries += 1)) -lt 600 ] || { fail "no header in 30 s"; return 1; }
	done
	group_catches
	kill -INT -- "-$(cat "$BATS_TEST_TMPDIR/group")"
	run -0 wait_status
	assert_output "130 0 0"
	# Interval 1, cut short by the signal: well under its 10 s.
	run -0 jq -c 'select(.type == "interval") | [.seq, .dt_us < 10000000]' \
	    "$BATS_TEST_TMPDIR/raw"
	assert_output '[1,true]'
	run -0 jq -c 'select(.type == "interval") | .seq' "$BATS_TEST_TMPDIR/out"
	assert_output 1
}

@test "a second signal ends a filter at once" {
	local fifo=$BATS_TEST_TMPDIR/fifo pid st=0
	mkfifo "$fifo"
	sleep 30 > "$fifo" &
	echo $! > "$BATS_TEST_TMPDIR/writer"
	kp-attribute --proc "$FIXTURES/proc-basic" < "$fifo" > /dev/null &
	pid=$!
	# Once it is kp-attribute, not the shell that starts it, and catches
	# SIGTERM (bit 15 of SigCgt), not before.
	local tries=0
	until [ "$(cat "/proc/$pid/comm")" = kp-attribute ] &&
	    [ $((0x$(awk '/^SigCgt:/ { print $2 }' "/proc/$pid/status") >> 14 & 1)) -eq 1 ]; do
		sleep 0.01
		[ $((tries += 1)) -lt 3000 ] || { fail "kp-attribute catches no SIGTERM"; return 1; }
	done
	kill -TERM "$pid"
	sleep 0.2
	kill -0 "$pid"		# the first: it reads on, its input still open
	kill -TERM "$pid"
	wait "$pid" || st=$?
	assert_equal "$st" 143
	kill "$(cat "$BATS_TEST_TMPDIR/writer")"
}

@test "a filter typed alone at a terminal says what it reads, and the first Ctrl-C ends it" {
	# kp-fmt(1), SIGNALS: no producer ends the stream of a terminal.  The
	# message is written once the signals are caught, so ^C is typed then.
	local stage err=$BATS_TEST_TMPDIR/err
	for stage in kp-fmt kp-attribute kp-aggregate; do
		run -0 python3 "$KP_ROOT/tests/pty.py" --stderr "$err" \
		    --wait "reading kp records" --keys '\x03' -- "$stage"
		assert_line "signal 2"
		assert_equal "$(cat "$err")" "$stage: reading kp records from the terminal; pipe rapl-read's output in, or see $stage(1)"
	done
}

@test "a filter reading a pipe or a file says nothing of a terminal" {
	run -0 --separate-stderr kp-fmt < /dev/null
	assert_equal "$stderr" ""
	run -0 --separate-stderr bash -c 'true | kp-aggregate'
	assert_equal "$stderr" ""
}
