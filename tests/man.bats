#!/usr/bin/env bats
# The manual pages: they lint clean, and every example they print runs.

load test_helper

run_examples() {
	local page=$1 line
	[ -f "$KP_ROOT/man/$page" ] || fail "no manual page $page"
	cd "$BATS_TEST_TMPDIR" || return 1
	while IFS= read -r line; do
		run timeout 60 bash -o pipefail -c "$line" </dev/null
		if [ "$status" -ne 0 ]; then
			echo "$page: example failed with status $status: $line" >&2
			echo "$output" >&2
			return 1
		fi
	done < <(man_examples "$page")
}

@test "every manual page lints clean" {
	run mandoc -Tlint -Wwarning "$KP_ROOT"/man/*
	assert_output ""
}

@test "every page documents the exit-code table" {
	local page
	for page in "$KP_ROOT"/man/*; do
		mandoc -Tascii "$page" | col -b | grep -q '^EXIT STATUS' ||
		    fail "$page has no EXIT STATUS"
	done
}

@test "the scripts and test helpers pass shellcheck" {
	run shellcheck "$KP_ROOT"/tests/*.bash "$KP_ROOT"/.ci/run
	assert_success
}

@test "each page has examples" {
	local page
	for page in kp-records.5 rapl-read.1 proc-cputime.1 kp-attribute.1 kp-aggregate.1 kp-fmt.1 kp-plot.1; do
		[ -n "$(man_examples "$page")" ] || fail "$page has no \$ examples"
	done
}

@test "kp-records(5) examples run" { run_examples kp-records.5; }
@test "rapl-read(1) examples run" { run_examples rapl-read.1; }
@test "proc-cputime(1) examples run" { run_examples proc-cputime.1; }
@test "kp-attribute(1) examples run" { run_examples kp-attribute.1; }
@test "kp-aggregate(1) examples run" { run_examples kp-aggregate.1; }
@test "kp-fmt(1) examples run" { run_examples kp-fmt.1; }
@test "kp-plot(1) examples run" { PATH=$KP_ROOT/scripts:$PATH run_examples kp-plot.1; }
