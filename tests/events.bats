#!/usr/bin/env bats
# The kernel's process events (proc-cputime(1), "Exit accounting"): each
# process's cgroup known from its exec, so that a process that lives
# between two samples in a cgroup removed before the next is credited to
# that cgroup.  Live workloads defined in CPU time (tests/cpuburn) and
# measured by wait4(2) (tests/wait4).

load test_helper
load proc_helper

teardown() {
	exec 7>&- 8>&- 2>/dev/null || true
	[ -z "${RUNTIME:-}" ] || kill -KILL "$RUNTIME" 2>/dev/null || true
	wait 2>/dev/null || true
	remove_cgroups
}

# sample: rapl-read, one run on the fixture powercap tree $SY with its
# state, into the pipeline; the package counter moves by 2 J each time.
sample() {
	local f=$SY/devices/virtual/powercap/intel-rapl/intel-rapl:0/energy_uj
	echo $(($(cat "$f") + 2000000)) > "$f"
	rapl-read --sysfs "$SY" --proc "$P" --state "$BATS_TEST_TMPDIR/rr.state" >&7
}

# short_jobs HIERARCHY [CGROUP-ROOT]: rapl-read runs on a fixture powercap
# tree | proc-cputime [--cgroup-root CGROUP-ROOT] | kp-attribute.  A
# runtime process in POD/runtime (tests/shortjobs.sh), seen by the first
# sample, starts four jobs of 150 ms of CPU time, each in a fresh cgroup
# POD/jobN removed right after; all between two samples.  Sets $POD, the
# pod's path in the hierarchy; the jobs' wait4 times are in
# $BATS_TEST_TMPDIR/jobs.
short_jobs() {
	local pod runtime
	pod=$(new_cgroup pod "$1")
	runtime=$(new_cgroup pod/runtime "$1")
	POD=/${pod##*/}
	SY=$(fixture_copy sysfs-1socket)
	P=$(fixture_copy proc-model)
	mkfifo "$BATS_TEST_TMPDIR/fifo" "$BATS_TEST_TMPDIR/go"
	proc-cputime ${2:+--cgroup-root "$2"} < "$BATS_TEST_TMPDIR/fifo" \
	    2> "$BATS_TEST_TMPDIR/err" | kp-attribute > "$BATS_TEST_TMPDIR/out" 3>&- &
	exec 7> "$BATS_TEST_TMPDIR/fifo"
	# The runtime is moved into its cgroup before it execs, as the jobs are.
	CPUBURN=$KP_ROOT/tests/cpuburn WAIT4=$KP_ROOT/tests/wait4 \
	    sh -c 'echo $$ > "$1/cgroup.procs" && exec sh "$2" "$3" 4 150 "$4"' \
	    sh "$runtime" "$KP_ROOT/tests/shortjobs.sh" "$pod" \
	    "$BATS_TEST_TMPDIR/jobs" < "$BATS_TEST_TMPDIR/go" 3>&- &
	RUNTIME=$!
	exec 8> "$BATS_TEST_TMPDIR/go"
	await_in "$runtime/cgroup.procs" .
	sample
	sample
	await_line '"type":"interval","seq":1,'
	echo go >&8
	wait "$RUNTIME"
	sample
	await_line '"type":"interval","seq":2,'
	exec 7>&- 8>&-
	wait
	cat "$BATS_TEST_TMPDIR/err" >&2
}

# job_sum FIELD: FIELD summed over $job's records of the package zone.
job_sum() {
	jq -s --arg c "$POD/$job" --arg f "$1" '[.[] | select(.cgroup == $c and
	    .zone == "package") | .[$f]] | add // 0' "$BATS_TEST_TMPDIR/out"
}

# jobs_land: each job's CPU time is in its own cgroup's records, 95 to
# 105 % of wait4's, with energy, and not again in the pod's residue; no
# excess in the pod's cgroups passes 2 ticks or a tenth of the jobs' CPU
# time (the rest of the host, other tests' cgroups included, is not this
# test's).
jobs_land() {
	local job us got energy total=0 excess left
	while read -r job us; do
		got=$(job_sum cpu_us)
		within 95 105 "$got" "$us"
		energy=$(job_sum energy_uj)
		echo "$job: $energy uJ"
		[ "$energy" -gt 0 ]
		total=$((total + us))
	done < "$BATS_TEST_TMPDIR/jobs"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/jobs")" -eq 4 ]
	HZ=$(getconf CLK_TCK)
	# What the jobs used is taken out of the pod's leftover: no residue
	# of the pod's own counts it again.
	left=$(jq -s --arg p "$POD" '[.[] | select(.cgroup == $p and
	    .zone == "package" and .source == "cgroup") | .cpu_us] | add // 0' \
	    "$BATS_TEST_TMPDIR/out")
	echo "pod's residue $left us of the jobs' $total us"
	[ "$left" -le "$(ticks_us 2)" ] || [ $((left * 10)) -le "$total" ]
	excess=$(jq -s --arg p "$POD" '[.[] | select(.cgroup // "" | startswith($p)) |
	    .excess_cpu_us // 0] | max' "$BATS_TEST_TMPDIR/out")
	echo "excess $excess us of the jobs' $total us"
	[ "$excess" -le "$(ticks_us 2)" ] || [ $((excess * 10)) -le "$total" ]
}

@test "live: short jobs in fresh v1 cpuacct cgroups, removed right after, are each credited to their own cgroup" {
	needs_root
	[ -e /sys/fs/cgroup/cpuacct/cpuacct.usage ] || fail "no v1 cpuacct hierarchy at /sys/fs/cgroup/cpuacct"
	short_jobs /sys/fs/cgroup/cpuacct
	jobs_land
}

@test "live: short jobs in fresh cgroups of the v2 tree at /sys/fs/cgroup/unified, removed right after, are each credited to their own cgroup" {
	needs_root
	[ -e /sys/fs/cgroup/unified/cgroup.procs ] || fail "no v2 tree at /sys/fs/cgroup/unified"
	short_jobs /sys/fs/cgroup/unified /sys/fs/cgroup/unified
	jobs_land
}

# replay LINES: tests/events-replay over the fixture tree $P.
replay() {
	[ -x "$KP_ROOT/tests/events-replay" ] ||
	    fail "tests/events-replay is not built (make check builds it)"
	run "$KP_ROOT/tests/events-replay" "$P" <<< "$1"
}

@test "an exec reads the process's cgroup; a child forked has its parent's until it execs; threads are not processes" {
	P=$BATS_TEST_TMPDIR/proc
	add_proc 100 runc 0 0 1 /pod/runtime
	add_proc 101 job 0 0 2 /pod/job1 100
	replay 'exec 0 1 100
fork 0 2 100 101
cgroup 101
fork 0 3 100 100 102
cgroup 102
exec 1 1 101
cgroup 101
cgroup 100'
	assert_output '101: 0::/pod/runtime
102: unknown
101: 0::/pod/job1
100: 0::/pod/runtime'
}

@test "an ended pid keeps its cgroup for its exit record until two scans have begun" {
	P=$BATS_TEST_TMPDIR/proc
	add_proc 101 job 0 0 2 /pod/job1
	replay 'exec 0 1 101
exit 0 2 101
cut
cgroup 101
cut
cgroup 101'
	assert_output '101: 0::/pod/job1
101: unknown'
}

@test "v1 reads / for an exiting task: unknown, never the root; a task not exiting may be in the root; v2's (deleted) is taken off" {
	P=$BATS_TEST_TMPDIR/proc
	add_proc 101 job 0 0 2 /pod/job1
	printf '3:cpu,cpuacct:/\n0::/pod/job1 (deleted)\n' > "$P/101/cgroup"
	set_stat_fields 101 7 4		# PF_EXITING
	add_proc 102 sshd 0 0 2 /
	printf '3:cpu,cpuacct:/\n0::/system.slice/ssh.service\n' > "$P/102/cgroup"
	add_proc 103 job 0 0 2 /
	printf '3:cpu,cpuacct:/pod/job3\n0::/pod/job3 (deleted)\n' > "$P/103/cgroup"
	# Exiting, but its v1 cgroups not yet left: they go all at once, so
	# a line elsewhere than / says the paths are still its own.
	add_proc 104 job 0 0 2 /
	printf '5:net_cls:/\n3:cpu,cpuacct:/pod/job4\n0::/pod/job4\n' > "$P/104/cgroup"
	set_stat_fields 104 7 4		# PF_EXITING
	replay 'exec 0 1 101
exec 0 2 102
exec 0 3 103
exec 0 4 104
cgroup 101
cgroup 102
cgroup 103
cgroup 104'
	assert_output '101: unknown
102: 3:cpu,cpuacct:/
0::/system.slice/ssh.service
103: 3:cpu,cpuacct:/pod/job3
0::/pod/job3
104: 5:net_cls:/
3:cpu,cpuacct:/pod/job4
0::/pod/job4'
}

@test "events lost: the gaps in each CPU's numbering, wherever they come" {
	P=$BATS_TEST_TMPDIR/proc
	mkdir -p "$P"
	replay 'exit 0 10 5
exit 1 500 6
exit 0 11 7
lost
exit 0 15 8
exit 1 501 9
exit 1 510 9
lost'
	assert_output 'lost 0
lost 11'
}
