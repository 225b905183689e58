#!/usr/bin/env bats
# Signals as DECISIONS.md D7 settles them: a pipeline started in its own
# process group (setsid) gets SIGINT as a terminal sends it, once its
# producer has written N intervals.  The first signal ends the stream at
# its producer; every filter reads on to the end and finishes normally.

load test_helper

# A producer of the record format, as D7 wants one: an interval of 1 J
# every 50 ms; on SIGINT it ends its interval, writes it and exits 130.
# It counts its intervals in $1.
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
	trap 'interval "$1"; exit 130' INT
	echo '{"type":"header","seq":0,"version":"1.1","producer":"test"}'
	while :; do interval "$1"; sleep 0.05 & wait $!; done
	EOF
	chmod +x "$BATS_TEST_TMPDIR/producer"
}

# start_group CMD...: runs bash -c CMD in a session and process group of
# its own, with SIGINT as a terminal's foreground job has it (a background
# job of this script would ignore it); the group's id goes to
# $BATS_TEST_TMPDIR/group, the statuses of its pipeline to .../status.
start_group() {
	setsid env --default-signal=INT bash -c 'echo $$ > "$0/group"; '"$1"'; echo "${PIPESTATUS[*]}" > "$0/status"' "$BATS_TEST_TMPDIR" &
}

# signal_group_after N FILE SIG: once FILE counts N, SIG to the group.
signal_group_after() {
	local tries=0
	until [ -s "$2" ] && [ "$(cat "$2")" -ge "$1" ]; do
		sleep 0.05
		[ $((tries += 1)) -lt 600 ] || { fail "no interval $1 in 30 s"; return 1; }
	done
	kill "-$3" -- "-$(cat "$BATS_TEST_TMPDIR/group")"
}

teardown() {
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
