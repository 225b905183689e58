#!/bin/sh
# The churn workload of tests/exited.bats: 120 children of 3 ms of CPU time each,
# then three of 700 ms, one after the other.  $CPUBURN is tests/cpuburn.
i=0
while [ "$i" -lt 120 ]; do
	"$CPUBURN" 3
	i=$((i + 1))
done
"$CPUBURN" 700
"$CPUBURN" 700
"$CPUBURN" 700
