#!/bin/sh
# A container runtime's way with short jobs, for tests/events.bats: this
# process, in a cgroup of its own, starts each job in a fresh cgroup made
# just before (the job is moved in before it execs, as runc does) and
# removed as soon as the job has been waited for.
# usage: shortjobs.sh pod-dir count ms results
# Each job's CPU time by wait4(2) goes to results: "job<i> <us>".  The
# jobs start once a line has been read from standard input.
# $CPUBURN is tests/cpuburn, $WAIT4 tests/wait4.
pod=$1 count=$2 ms=$3 results=$4
read -r _
i=1
while [ "$i" -le "$count" ]; do
	mkdir "$pod/job$i"
	us=$("$WAIT4" -g -m "$pod/job$i/cgroup.procs" "$CPUBURN" "$ms" \
	    </dev/null | sed -n 's/^cpu_us //p')
	rmdir "$pod/job$i"
	echo "job$i $us" >> "$results"
	i=$((i + 1))
done
