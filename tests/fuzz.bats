#!/usr/bin/env bats
# The libFuzzer harnesses of tests/fuzz build and run: a short smoke, so
# that they never rot.  Each must replay its seeds to its coverage floor
# (tests/fuzz/NAME.floor), so a harness that returns early fails here.

load test_helper

@test "make fuzz: every harness runs its seeds to its floor without a crash" {
	run -0 make -s -C "$KP_ROOT" fuzz FUZZ_SECONDS=2
	assert_line --regexp '^record: [0-9]+ executions, [0-9]+/s, coverage [0-9]+ \(floor [0-9]+\), 0 crashes$'
}
