#!/usr/bin/env bats
# scripts/bench-proc at a tiny size: it runs, cleans up, and reports every
# figure.  Timings are reported by `make bench`, never asserted here.

load test_helper

@test "bench-proc runs at a tiny size and leaves no process behind" {
	# Its scratch, proc-spawn included, under this test's own directory:
	# another run's spawner on the machine is not this one's.
	TMPDIR=$BATS_TEST_TMPDIR run -0 --separate-stderr \
	    "$KP_ROOT/scripts/bench-proc" 20 500 5
	assert_equal "$stderr" ""
	# At this size a timing is within the noise of a busy machine, and a
	# difference of two may come out below zero: the format is checked.
	assert_line --regexp '^floor: one scan +-?[0-9.]+ ms$'
	assert_line --regexp '^proc-cputime: steady scan +-?[0-9.]+ ms +-?[0-9.]+x floor \(goal <= 1\.5\)$'
	assert_line --regexp '^--keep-open 0: steady scan +-?[0-9.]+ ms +-?[0-9.]+x floor$'
	assert_line --regexp '^ps -e -o pid,time,comm +[0-9.]+ ms +-?[0-9.]+x a steady scan \(goal >= 3\.5\)'
	assert_line --regexp '^churn: 500 intervals in [0-9]+ s, [0-9]+ processes and [1-9][0-9]* short-lived ones$'
	assert_line --regexp '^VmRSS peak in the first tenth [1-9][0-9]* kB, in the last tenth [1-9][0-9]* kB'
	run pgrep -f "$BATS_TEST_TMPDIR/.*proc-spawn"
	assert_failure
}
