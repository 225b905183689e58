#!/bin/sh
# timing.sh: sourced by the scripts/bench-* that time commands, so that
# each is timed alike: runs interleaved, the median of each counts, since
# one best run against a threshold inside the noise proves nothing.
# The sourcing script sets $tmp, a scratch directory.

now_ns() {
	date +%s%N
}

# Appends the time of one run of "$@" < $2, in nanoseconds, to file $1.
time_run() {
	out=$1
	in=$2
	shift 2
	t0=$(now_ns)
	if ! "$@" < "$in" > /dev/null; then
		echo "bench: $* failed" >&2
		exit 1
	fi
	echo $(($(now_ns) - t0)) >> "$out"
}

# The median of the numbers in file $1, one a line.
median() {
	sort -n "$1" | awk '{ t[NR] = $1 } END {
		print NR % 2 ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
	}'
}
