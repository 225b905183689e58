# Loaded by every tests/*.bats: the freshly built binaries come first in
# PATH, and each test works inside its own BATS_TEST_TMPDIR.
# shellcheck shell=bash

bats_require_minimum_version 1.5.0

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

KP_ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
FIXTURES="$KP_ROOT/tests/fixtures"
PATH="$KP_ROOT/cmd:$PATH"
export KP_ROOT FIXTURES PATH
# A producer's header names the node from NODE_NAME before the host name:
# the tests set it where they mean to.
unset NODE_NAME

# A copy of a fixture tree that the test may change between runs.
fixture_copy() {
	cp -R "$FIXTURES/$1" "$BATS_TEST_TMPDIR/$1"
	printf '%s\n' "$BATS_TEST_TMPDIR/$1"
}

# The SYNOPSIS of a manual page, as mandoc renders it, one line.
man_synopsis() {
	mandoc -Tascii "$KP_ROOT/man/$1" | col -bx |
	    awk '/^SYNOPSIS/ { on = 1; next } /^[A-Z]/ { on = 0 } on' |
	    tr -s ' \n\t' '   ' | sed 's/^ //; s/ $//'
}

# The usage of a command's -h, up to the blank line before the options,
# one line, without "usage: ".
usage_synopsis() {
	"$1" -h | sed '/^$/,$d; s/^usage: //' | tr -s ' \n\t' '   ' |
	    sed 's/^ //; s/ $//'
}

# assert_help PROG: -h and --help print the usage and one line per option
# on standard output and exit 0, and a misuse's usage is the same
# (kp-records(5), EXIT STATUS); --version prints "PROG VERSION".
# shellcheck disable=SC2154 # bats' run sets output, stderr and stderr_lines
assert_help() {
	local version
	version=$(sed -n 's/^VERSION = //p' "$KP_ROOT/config.mk")
	run -0 --separate-stderr "$1" -h
	assert_equal "$stderr" ""
	assert_line -n 0 --regexp "^usage: $1 "
	assert_line --regexp '^  -h, --help +print this help and exit$'
	assert_line --regexp '^      --version +print the version and exit$'
	local help=$output opt
	for opt in $(man_synopsis "$1".1 | grep -o -- '--[a-z-]*[a-z]'); do
		assert_line --regexp "^  (-., |    )$opt( |\$)"
	done
	run -0 --separate-stderr "$1" --help
	assert_equal "$output" "$help"
	run -2 --separate-stderr "$1" --no-such-option
	assert_equal "${stderr_lines[0]}" "$1: unrecognized option '--no-such-option'"
	assert_equal "$(printf '%s\n' "${stderr_lines[@]:1}")" \
	    "$(sed '/^$/,$d' <<< "$help")"
	assert_output ""
	run -0 --separate-stderr "$1" --version
	assert_equal "$output" "$1 $version"
	assert_equal "$stderr" ""
}

# The "$ " lines of a manual page's EXAMPLES section.
man_examples() {
	mandoc -Tascii "$KP_ROOT/man/$1" | col -b |
	    awk '/^EXAMPLES/ { on = 1; next } /^[A-Z]/ { on = 0 } on' |
	    sed -n 's/^[[:space:]]*\$ //p'
}

# Runs a command as an unprivileged user, to test permission errors.
as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}

# edit_state FILTER: rewrites the state file $S through jq FILTER, as a
# run between two runs might find it: changed, aged or corrupt.
edit_state() {
	jq -c "$1" "$S" > "$S.new"
	mv "$S.new" "$S"
}

# Sums field $2 over the records of type $1 in file $3.
jq_sum() {
	jq -s "[.[] | select(.type == \"$1\") | .$2] | add // 0" "$3"
}

# The zone this host's energy comes in: package where rapl-read can read
# every RAPL counter, platform where it estimates or reads a power meter
# (rapl-read(1), SOURCES and --list), so that a live test holds on both.
host_zone() {
	if rapl-read --list >/dev/null 2>&1; then
		echo package
	else
		echo platform
	fi
}

# expositions FILE [OPTION...]: kp-fmt -f prometheus's exposition after
# each interval of FILE, each followed by an empty line, as a scrape after
# each would find it: to standard output kp-fmt writes one, the last, when
# its input ends (kp-fmt(1), prometheus).  Records after the last interval
# record are the input's last, incomplete interval.  The status is the
# last run's.
expositions() {
	local i n rc=0
	n=$(grep -c '"type":"interval"' "$1")
	grep -q '"type":"interval"' <(tail -n 1 "$1") || n=$((n + 1))
	for ((i = 1; i <= n; i++)); do
		awk -v k="$i" '{ print } /"type":"interval"/ && ++c == k { exit }' \
		    "$1" | kp-fmt -f prometheus "${@:2}"
		rc=$?
		echo
	done
	return "$rc"
}
export -f expositions

# state_spool_same STAGE: STAGE < $IN with --state, its interval's output
# past a MiB spooled in a TMPDIR of the test's, gives the bytes it gives
# without, and leaves nothing there (kp-attribute(1), Memory).
state_spool_same() {
	mkdir "$BATS_TEST_TMPDIR/tmp"
	"$1" < "$IN" > "$BATS_TEST_TMPDIR/plain"
	[ "$(wc -c < "$BATS_TEST_TMPDIR/plain")" -gt $((1 << 20)) ]
	TMPDIR=$BATS_TEST_TMPDIR/tmp run -0 --separate-stderr \
	    "$1" --state "$BATS_TEST_TMPDIR/st" < "$IN"
	assert_equal "$output" "$(cat "$BATS_TEST_TMPDIR/plain")"
	assert_equal "$(ls -A "$BATS_TEST_TMPDIR/tmp")" ""
}

# state_spool_missing STAGE: STAGE --state < $IN with a TMPDIR that does
# not exist stops with status 1 before any record of its interval.
state_spool_missing() {
	TMPDIR=$BATS_TEST_TMPDIR/missing run -1 --separate-stderr \
	    "$1" --state "$BATS_TEST_TMPDIR/st" < "$IN"
	assert_equal "$stderr" "$1: spooling an interval to $BATS_TEST_TMPDIR/missing: No such file or directory"
	assert_equal "$output" ""
}

# nobody_dir NAME: sets NOBODY_DIR to a new directory under /tmp that user
# nobody may enter, as BATS_TEST_TMPDIR is not; nobody_dir_remove, from a
# teardown, removes it.
nobody_dir() {
	NOBODY_DIR=$(mktemp -d "/tmp/$1.XXXXXX")
	chmod 755 "$NOBODY_DIR"
}

nobody_dir_remove() {
	if [ -n "${NOBODY_DIR:-}" ]; then
		rm -rf "$NOBODY_DIR"
	fi
}
