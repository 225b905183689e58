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

# The usage message of a command, one line, without "usage: ".
usage_synopsis() {
	"$1" -h 2>&1 | sed 's/^usage: //' | tr -s ' \n\t' '   ' |
	    sed 's/^ //; s/ $//'
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
