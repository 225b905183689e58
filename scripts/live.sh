#!/bin/sh
# shellcheck disable=SC2154 # $tmp and $here are the sourcing script's
# live.sh: sourced by the scripts/bench-* that measure stages on the live
# /proc: processes to measure against (scripts/proc-spawn.c), each stage's
# CPU time, and the intervals a running pipeline has ended.  The sourcing
# script sets $tmp, a scratch directory, and $here, the scripts directory,
# and calls stop_spawner as it exits.

spawner=

# Builds scripts/$1.c into $tmp/$1.
build_helper() {
	cc -O2 -o "$tmp/$1" "$here/$1.c"
}

# Closing fd 9 tells proc-spawn to end its children; they also die with it.
stop_spawner() {
	exec 9>&-
	if [ -n "$spawner" ]; then
		wait "$spawner" 2>/dev/null || true
	fi
	spawner=
}

# Starts proc-spawn "$@" (built by build_helper) and waits until its
# children are all there; what it says at the end goes to $tmp/spawned.
start_spawner() {
	rm -f "$tmp/hold" "$tmp/ready"
	mkfifo "$tmp/hold"
	"$tmp/proc-spawn" "$@" < "$tmp/hold" > "$tmp/ready" 2> "$tmp/spawned" &
	spawner=$!
	exec 9> "$tmp/hold"
	until grep -q ready "$tmp/ready" 2>/dev/null; do
		kill -0 "$spawner" 2>/dev/null || { echo "bench: proc-spawn failed" >&2; exit 1; }
		sleep 0.1
	done
}

count_procs() {
	set -- /proc/[0-9]*
	echo $#
}

# The CPU time process $1 has used so far, in nanoseconds: the scheduler's
# exact count (/proc/PID/schedstat) where the kernel keeps one, else utime
# plus stime, in clock ticks.
cpu_ns() {
	if [ -r "/proc/$1/schedstat" ]; then
		cut -d ' ' -f 1 "/proc/$1/schedstat"
	else
		awk -v hz="$(getconf CLK_TCK)" '{
			sub(/.*\) /, "")
			printf "%.0f\n", ($12 + $13) * 1e9 / hz
		}' "/proc/$1/stat"
	fi
}

# The sum of cpu_ns over the processes "$@".
sum_cpu_ns() {
	total=0
	for p in "$@"; do
		total=$((total + $(cpu_ns "$p")))
	done
	echo "$total"
}

# The seq of the last interval record in NDJSON file $1, once it is at
# least $2; fails if process $3, the file's writer, ends first.  Only the
# file's tail is read: a stage flushes at the end of each interval, so the
# record is there until the next interval's output passes a buffer.
await_interval() {
	while :; do
		seq=$(tail -c 4096 "$1" 2>/dev/null |
		    sed -n 's/^{"type":"interval","seq":\([0-9]*\),.*/\1/p' | tail -n 1)
		if [ -n "$seq" ] && [ "$seq" -ge "$2" ]; then
			echo "$seq"
			return 0
		fi
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.05
	done
}
