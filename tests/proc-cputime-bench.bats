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

@test "bench-live runs at a tiny size, with its floor, and leaves no stage behind" {
	run -0 --separate-stderr "$KP_ROOT/scripts/bench-live" 20 2 1 100ms
	assert_equal "$stderr" ""
	assert_line --regexp '^live pipeline: [0-9]+ processes in /proc, 2 intervals of 100ms, median of 1 runs$'
	assert_line --regexp '^host: [0-9]+ processes started a second during the runs$'
	assert_line --regexp '^floor: one pass over /proc/PID/stat +[0-9.]+ ms$'
	assert_line --regexp '^sparse, --exited parent,cgroup: CPU per interval +[0-9.]+ ms +[0-9.]+x floor \(without taskstats\)$'
	assert_line --regexp '^pipeline, sparse: CPU per interval +[0-9.]+ ms +[0-9.]+x floor \(goal <= 1\.0\)$'
	assert_line --regexp '^pipeline, dense \(-a\): CPU per interval +[0-9.]+ ms +[0-9.]+x floor$'
	assert_line --regexp '^  sparse( [0-9.]+){5}$'
	assert_line --regexp '^  dense ( [0-9.]+){5}$'
	run pgrep -f "proc-spawn|$KP_ROOT/scripts/../cmd/"
	assert_failure
}

@test "bench-busy runs at a tiny size, as root, with its control and the kernel's share apart" {
	run -0 --separate-stderr "$KP_ROOT/scripts/bench-busy" 2 200ms
	assert_equal "$stderr" ""
	assert_line -n 0 'busy host: 2 intervals of 200ms, tests/churn.sh and a build loop, as root'
	assert_line -n 1 --regexp '^with exit accounting +unattributed +-?[0-9.]+ % of active energy: irq, softirq, steal +[0-9.]+ %, the rest +-?[0-9.]+ %; exited records +[0-9.]+ %; [0-9]+ of 2 intervals scaled down, by [0-9.]+ % of the active CPU time \(goal <= 10 %: (ok|MISSED)\)$'
	assert_line -n 2 --regexp '^--exited none \(control\) +unattributed +-?[0-9.]+ % of active energy: irq, softirq, steal +[0-9.]+ %, the rest +-?[0-9.]+ %; exited records +0\.0 %; [0-9]+ of 2 intervals scaled down, by [0-9.]+ % of the active CPU time$'
	run pgrep -f "$KP_ROOT/scripts/../(cmd|tests)/"
	assert_failure
}

@test "bench-busy run by an ordinary user says that its goal is for root, and gives no verdict" {
	run -0 --separate-stderr as_nobody "$KP_ROOT/scripts/bench-busy" 2 200ms
	assert_equal "$stderr" ""
	assert_line -n 0 'busy host: 2 intervals of 200ms, tests/churn.sh and a build loop, as uid 65534 (the goal is for root)'
	assert_line -n 1 --regexp '^with exit accounting +unattributed .* of the active CPU time$'
}

@test "bench-exits runs at a tiny size and says whether taskstats is wired" {
	run -0 --separate-stderr "$KP_ROOT/scripts/bench-exits" 200 2 1 200ms
	assert_equal "$stderr" ""
	assert_line -n 0 'exits: 1 quiet and 1 churn runs of 2 intervals of 200ms, proc-spawn -r 200, medians, as uid 0'
	assert_line --regexp '^exits made +[0-9]+ a second$'
	assert_line --regexp '^proc-cputime +CPU per interval +[0-9.]+ ms quiet, +[0-9.]+ ms with exits: +[-+][0-9.]+ ms \([-0-9.]+ ms per 1,000 exits\)$'
	assert_line --regexp '^spawner tree CPU +[0-9.]+ ms, credited +[0-9.]+ ms \([0-9.]+ %\): -?[0-9.]+ ms lost$'
	# Either taskstats is a source of proc-cputime's, and its drops are
	# reported, or it is said not to be.
	if proc-cputime --exited taskstats -n 1 -i 10ms > /dev/null 2>&1; then
		assert_line --regexp '^taskstats drops: '
		refute_line 'taskstats drops: taskstats not wired'
	else
		assert_line 'taskstats drops: taskstats not wired'
	fi
	run pgrep -f "proc-spawn"
	assert_failure
}
