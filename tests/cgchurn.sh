#!/bin/sh
# The churn workload of tests/exited.bats in a cgroup of its own, where a reaping
# parent cannot see the short children: each of the 120 of 3 ms of CPU
# time is started by a subshell that ends at once, so that init, outside
# the cgroup, reaps it; the three of 700 ms are the script's own.
# $CPUBURN is tests/cpuburn.
i=0
while [ "$i" -lt 120 ]; do
	("$CPUBURN" 3 &)
	i=$((i + 1))
done
"$CPUBURN" 700
"$CPUBURN" 700
"$CPUBURN" 700
