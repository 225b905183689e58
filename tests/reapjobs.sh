#!/bin/sh
# A runtime that reaps its jobs itself, for tests/events.bats: for each
# line read, a cgroup directory made for one job, a child of this process
# moves itself there and execs tests/cpuburn MS, as runc's init does; it
# is waited for, and "reaped" written.  Builtins alone besides the jobs, so
# that the jobs are the only children this process reaps.
# usage: reapjobs.sh ms   ($CPUBURN is tests/cpuburn)
ms=$1
while read -r dir; do
	sh -c 'echo $$ > "$1/cgroup.procs" && exec "$2" "$3"' sh "$dir" \
	    "$CPUBURN" "$ms"
	echo reaped
done
