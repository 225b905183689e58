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

# reap_job NAME: a job of 300 ms in a fresh cgroup $POD_DIR/NAME, made
# just before and removed just after, started and reaped by the runtime
# of reaping_runtime; its counter's growth goes to $BATS_TEST_TMPDIR/jobs.
reap_job() {
	mkdir "$POD_DIR/$1"
	echo "$POD_DIR/$1" >&8
	REAPED=$((REAPED + 1))
	until [ "$(grep -c reaped "$BATS_TEST_TMPDIR/runtime.out")" -ge "$REAPED" ]; do
		sleep 0.01
	done
	echo "$1 $(cgroup_usage_us "$POD_DIR/$1")" >> "$BATS_TEST_TMPDIR/jobs"
	rmdir "$POD_DIR/$1"
}

# reaping_runtime [COMMAND...]: proc-cputime as an ordinary user (run by
# COMMAND, as_nobody by default), a filter, over a runtime
# (tests/reapjobs.sh) in POD/runtime that reaps its jobs itself; job1
# alone in interval 3, job2 and job3 in interval 4.  Sets $POD.
reaping_runtime() {
	local runtime
	POD_DIR=$(new_cgroup pod)
	runtime=$(new_cgroup pod/runtime)
	POD=/${POD_DIR##*/}
	REAPED=0
	mkfifo "$BATS_TEST_TMPDIR/runtime.in"
	CPUBURN=$KP_ROOT/tests/cpuburn sh -c 'echo $$ > "$1/cgroup.procs" &&
	    exec sh "$2" 300' sh "$runtime" "$KP_ROOT/tests/reapjobs.sh" \
	    < "$BATS_TEST_TMPDIR/runtime.in" > "$BATS_TEST_TMPDIR/runtime.out" 3>&- &
	RUNTIME=$!
	exec 8> "$BATS_TEST_TMPDIR/runtime.in"
	await_in "$runtime/cgroup.procs" .
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	"${@:-as_nobody}" proc-cputime < "$BATS_TEST_TMPDIR/fifo" \
	    > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/err" 3>&- &
	exec 7> "$BATS_TEST_TMPDIR/fifo"
	printf '%s\n' '{"type":"header","seq":0,"version":"1.0","producer":"test"}' >&7
	send_interval 1
	await_line '"type":"interval","seq":1,'
	send_interval 2
	await_line '"type":"interval","seq":2,'
	reap_job job1
	send_interval 3
	await_line '"type":"interval","seq":3,'
	reap_job job2
	reap_job job3
	send_interval 4
	await_line '"type":"interval","seq":4,'
	exec 7>&- 8>&-
	wait
}

# in_cgroups SEQ JQ-TEST: the CPU time of interval SEQ's records whose
# cgroup passes JQ-TEST.
in_cgroups() {
	jq -s --argjson s "$1" "[.[] | select(.seq == \$s and (.type == \"proc\" or
	    .type == \"exited\") and (.cgroup // \"\" | $2)) | .cpu_us] | add // 0" \
	    "$BATS_TEST_TMPDIR/out"
}

job_us() {
	sed -n "s/^$1 //p" "$BATS_TEST_TMPDIR/jobs"
}

# near US WANT: US is 95 to 105 % of WANT, give or take the 2 clock ticks
# by which a figure from a parent's cutime and cstime rounds.
near() {
	local slack_us
	slack_us=$(ticks_us 2)
	echo "$1 of $2 (give or take $slack_us us), wanted 95 to 105 %"
	[ $((($1 + slack_us) * 100)) -ge $((95 * $2)) ] &&
	    [ $((($1 - slack_us) * 100)) -le $((105 * $2)) ]
}

@test "live, unprivileged: a reaping parent's residue goes to its one ended child's exec-time cgroup; of two that disagree, each job's counter read at its exit gives it its own time and the residue is not told again, else the pod's counter holds it" {
	needs_root
	reaping_runtime
	cat "$BATS_TEST_TMPDIR/err" >&2
	HZ=$(getconf CLK_TCK)
	if events_unprivileged; then
		near "$(in_cgroups 3 ". == \"$POD/job1\"")" "$(job_us job1)"
	else
		# Without the events, the counters alone: the pod holds it.
		near "$(in_cgroups 3 "startswith(\"$POD\")")" "$(job_us job1)"
	fi
	# Two jobs in cgroups of their own: a job's cgroup, made since the
	# last scan, is read at its exit, and where that read came before the
	# rmdir, the job has its own time there and the runtime's residue
	# says it no more; else the residue is the runtime's, which its
	# cgroup's counter cuts and the pod's leftover takes (proc-cputime(1),
	# Exit accounting).  Never another job's time, nor twice.
	for job in job2 job3; do
		got=$(in_cgroups 4 ". == \"$POD/$job\"")
		echo "$job: $got us in its own cgroup"
		[ "$got" -eq 0 ] || near "$got" "$(job_us "$job")"
	done
	near "$(in_cgroups 4 "startswith(\"$POD\")")" \
	    $(($(job_us job2) + $(job_us job3)))
	run jq -s --arg p "$POD" '[.[] | select(.cgroup // "" | startswith($p)) |
	    .excess_cpu_us // 0] | max' "$BATS_TEST_TMPDIR/out"
	echo "excess $output us"
	# Where the events could not name a job's cgroup in time for its
	# reaper's residue (a loaded machine), the residue is filed under the
	# runtime while the job's own counter holds it too: the counters cut
	# it and report the difference (proc-cputime(1), Exit accounting).
	# That is one job's time at most, never the two's.
	local most=$(($(job_us job2) > $(job_us job3) ? $(job_us job2) : $(job_us job3)))
	[ "$output" -le $((most + $(ticks_us 2))) ]
}

@test "live, unprivileged, without the process events (another network namespace): said once; the pod's counter holds its jobs' CPU time" {
	needs_root
	reaping_runtime unshare -n setpriv --reuid=65534 --regid=65534 --clear-groups
	run cat "$BATS_TEST_TMPDIR/err"
	assert_output "proc-cputime: taskstats: registering for exit records needs CAP_NET_ADMIN: exit accounting from the reaping parents and the cgroup counters only"
	HZ=$(getconf CLK_TCK)
	assert_equal "$(in_cgroups 3 "startswith(\"$POD/job\")")" 0
	near "$(in_cgroups 3 "startswith(\"$POD\")")" "$(job_us job1)"
	near "$(in_cgroups 4 "startswith(\"$POD\")")" \
	    $(($(job_us job2) + $(job_us job3)))
}

# replay LINES: tests/events-replay over the fixture tree $P.
replay() {
	test_driver events-replay
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

# counters_replay LINES: events-replay over $P with the v1 cpuacct
# hierarchy $G, where /pod holds 1 s and /pod/job, made by the test, 250 ms;
# pid 101 runs in /pod/job.  $made: when /pod/job was made, in seconds.
counters_replay() {
	test_driver events-replay
	run "$KP_ROOT/tests/events-replay" "$P" "$G" <<< "$1"
}

counters_setup() {
	P=$BATS_TEST_TMPDIR/proc
	G=$BATS_TEST_TMPDIR/cgroup
	add_proc 101 job 0 0 2 /
	printf '4:cpu,cpuacct:/pod/job\n0::/\n' > "$P/101/cgroup"
	mkdir -p "$G/cpuacct/pod/job"
	echo 5000000000 > "$G/cpuacct/cpuacct.usage"
	echo 1000000000 > "$G/cpuacct/pod/cpuacct.usage"
	echo 250000000 > "$G/cpuacct/pod/job/cpuacct.usage"
	made=$(stat -c %Z "$G/cpuacct/pod/job")
}

@test "a cgroup made since the latest scan, which no scan read, is read at each exit of its processes: the next read takes the last reading once it is gone (proc-cputime(1), Exit accounting)" {
	counters_setup
	add_proc 102 job 0 0 2 /
	cp "$P/101/cgroup" "$P/102/cgroup"
	counters_replay "since $(((made - 1) * 1000000000))
exec 0 1 101
exec 0 2 102
exit 0 3 101
usage $G/cpuacct/pod/job 400000000
exit 0 4 102
usage $G/cpuacct/pod/job 999000000
rm $G/cpuacct/pod/job
read /pod/job"
	# from 0, as no scan read it: the job's whole 400 ms
	assert_output '/pod/job 400000'
}

@test "a cgroup made before the latest scan is not read at an exit: its counter holds earlier intervals' time; nor one a scan has read" {
	counters_setup
	counters_replay "since $(((made + 1) * 1000000000))
exec 0 1 101
exit 0 2 101
rm $G/cpuacct/pod/job
read /pod/job"
	assert_output '/pod/job -'
	counters_setup
	counters_replay "since $(((made - 1) * 1000000000))
read /pod/job
usage $G/cpuacct/pod/job 400000000
exec 0 1 101
exit 0 2 101
rm $G/cpuacct/pod/job
read /pod/job"
	assert_output '/pod/job -
/pod/job -'
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

# The number a cpu record of $BATS_TEST_TMPDIR/out gives: seq $1, field $2.
cpu_field() {
	jq -s --argjson s "$1" --arg f "$2" '.[] |
	    select(.type == "cpu" and .seq == $s) | .[$f]' "$BATS_TEST_TMPDIR/out"
}

@test "live: 1,000 processes started while the reader is stopped lose no process event: its buffer holds some 20,000 (proc-cputime(1), The kernel's process events)" {
	needs_root
	start_filter --exited cgroup,taskstats
	send_interval 1
	await_line '"type":"interval","seq":1,'
	# Three events each (fork, exec, exit): the kernel's default buffer
	# holds some 270.
	kill -STOP "$FILTER"
	for _ in $(seq 1000); do /bin/true; done
	kill -CONT "$FILTER"
	send_interval 2
	await_line '"type":"interval","seq":2,'
	exec 7>&-
	wait "$FILTER"
	assert_equal "$(cpu_field 2 events_lost)" 0
}
