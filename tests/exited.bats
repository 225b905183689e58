#!/usr/bin/env bats
# Exit accounting (proc-cputime(1), "Exit accounting"): cgroup CPU
# counters, the truth for groups; reaping parents, the detail; exited
# records.  Fixture
# trees first, then live workloads defined in CPU time (tests/cpuburn) and
# measured by wait4(2) (tests/wait4).

load test_helper
load proc_helper

SSH=/system.slice/ssh.service

setup() {
	P=$(fixture_copy proc-basic)
	C=$(fixture_copy cgroup-v2)
	H=$C			# where the hierarchy that counts CPU is mounted
	S=$BATS_TEST_TMPDIR/pc.state
	HZ=$(getconf CLK_TCK)
}

run_state() {
	run --separate-stderr proc-cputime --proc "$P" --cgroup-root "$C" \
	    --state "$S" "$@" </dev/null
}

# add_usage PATH US: the cgroup's counter and its ancestors' grow by US
# microseconds, as the kernel's hierarchical counters do.
add_usage() {
	local dir=$H${1%/}
	while :; do
		if [ -f "$dir/cpu.stat" ]; then
			awk -v d="$2" '$1 == "usage_usec" { $2 += d } { print }' \
			    "$dir/cpu.stat" > "$dir/cpu.stat.new"
			mv "$dir/cpu.stat.new" "$dir/cpu.stat"
		else
			echo $(($(cat "$dir/cpuacct.usage") + $2 * 1000)) > "$dir/cpuacct.usage"
		fi
		[ "$dir" != "$H" ] || break
		dir=${dir%/*}
	done
}

# The records of type exited, one line each, with the fields asked.
exited() {
	printf '%s\n' "${lines[@]}" | jq -c 'select(.type == "exited")'
}

@test "v2: what a cgroup's counter shows beyond its processes' records is an exited record of that cgroup" {
	run_state
	advance_node
	set_ticks 300 25 20
	add_usage "$SSH" 80000
	run_state
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(exited)" "{\"type\":\"exited\",\"seq\":1,\"count\":0,\"cpu_us\":$((80000 - $(ticks_us 5))),\"source\":\"cgroup\",\"kind\":\"service\",\"cgroup\":\"$SSH\",\"unit\":\"ssh.service\"}"
	# Its processes and it add up to the counter.
	assert_equal "$(printf '%s\n' "${lines[@]}" | jq -s --arg c "$SSH" \
	    '[.[] | select(.cgroup == $c) | .cpu_us] | add')" 80000
}

# v1_cgroup PID PATH: the process's cgroup file on a v1 host whose cpu and
# cpuacct controllers share a hierarchy, as systemd mounts them.
v1_cgroup() {
	printf '%s\n' "12:pids:$2" "11:memory:$2" "4:cpu,cpuacct:$2" \
	    "1:name=systemd:$2" > "$P/$1/cgroup"
}

@test "v1: cpuacct.usage, in nanoseconds, of the cpu,cpuacct hierarchy" {
	C=$(fixture_copy cgroup-v1)
	H=$C/cpu,cpuacct
	for pid in 1 2 100 200; do v1_cgroup "$pid" /; done
	v1_cgroup 300 "$SSH"
	run_state
	advance_node
	set_ticks 300 25 20
	add_usage "$SSH" 80000
	run_state
	assert_success
	assert_equal "$(exited)" "{\"type\":\"exited\",\"seq\":1,\"count\":0,\"cpu_us\":$((80000 - $(ticks_us 5))),\"source\":\"cgroup\",\"kind\":\"service\",\"cgroup\":\"$SSH\",\"unit\":\"ssh.service\"}"
}

# node_cpu_us FIXTURE HIERARCHY US: the cpu record's cpu_us of a run on
# the cgroup FIXTURE, whose HIERARCHY's root counter grew by US over an
# interval in which /proc/stat's active ticks grew by 460 (irq 10, softirq
# 20, steal 30 of them) of 1060.
node_cpu_us() {
	rm -rf "$BATS_TEST_TMPDIR/$1" "$S"
	C=$(fixture_copy "$1")
	H=$C$2
	for pid in 1 2 100 200 300; do
		if [ -n "$2" ]; then v1_cgroup "$pid" /; else echo 0::/ > "$P/$pid/cgroup"; fi
	done
	cp "$FIXTURES/proc-basic/stat" "$FIXTURES/proc-basic/uptime" "$P/"
	run_state
	printf 'cpu  6300 0 2100 80550 1050 10 20 30 0 0\n' > "$P/stat"
	echo "1010.00 1810.00" > "$P/uptime"
	add_usage / "$3"
	run_state
	assert_success
	jq -r 'select(.type == "cpu") | .cpu_us' <<< "$output"
}

@test "v1: the node's active time is the cpuacct root's growth with /proc/stat's irq, softirq and steal where /proc/stat's ticks count less, at most the interval's (proc-cputime(1), Records)" {
	# 5 s of tasks, 0.6 s of irq, softirq and steal: more than the 4.6 s
	# of ticks, as a CPU idle between two ticks counts none of a short
	# process that ran between them
	run -0 node_cpu_us cgroup-v1 /cpu,cpuacct 5000000
	assert_output 5600000
	# less than the ticks: the ticks
	run -0 node_cpu_us cgroup-v1 /cpu,cpuacct 1000000
	assert_output "$(ticks_us 460)"
	# never more than the node's whole time
	run -0 node_cpu_us cgroup-v1 /cpu,cpuacct 20000000
	assert_output "$(ticks_us 1060)"
	# a v2 kernel root's cpu.stat is made of /proc/stat's ticks: not taken
	run -0 node_cpu_us cgroup-v2 "" 5000000
	assert_output "$(ticks_us 460)"
}

@test "hybrid: the v1 cpuacct hierarchy counts, not the v2 tree whose line is 0::/" {
	C=$(fixture_copy cgroup-hybrid)
	H=$C/cpuacct
	for pid in 1 2 100 200 300; do
		printf '%s\n' "9:name=systemd:/" "4:memory:/" "3:cpuacct:/" \
		    "2:cpu:/" "0::/" > "$P/$pid/cgroup"
	done
	sed -i 's|:/$|:/kp|; s|^0::/kp$|0::/|' "$P/300/cgroup"
	run_state
	advance_node
	set_ticks 300 25 20
	add_usage /kp 80000
	# The v2 tree's root, which the hybrid host's systemd keeps, moves too.
	sed -i 's/^usage_usec .*/usage_usec 999000000/' "$C/unified/cpu.stat"
	run_state
	assert_success
	assert_equal "$(exited)" "{\"type\":\"exited\",\"seq\":1,\"count\":0,\"cpu_us\":$((80000 - $(ticks_us 5))),\"source\":\"cgroup\",\"kind\":\"host\",\"cgroup\":\"/kp\"}"
}

@test "a cgroup counted apart is not counted again in its parent; one without a process is its parent's" {
	mkdir "$C/system.slice/cron.service"
	cp "$C/system.slice/ssh.service/cpu.stat" "$C/system.slice/cron.service/"
	run_state
	advance_node
	set_ticks 300 25 20
	add_usage "$SSH" "$(ticks_us 5)"
	add_usage /system.slice/cron.service 30000
	run_state
	assert_equal "$(exited)" '{"type":"exited","seq":1,"count":0,"cpu_us":30000,"source":"cgroup","kind":"host","cgroup":"/system.slice"}'
}

@test "the counter wins: proc records ahead of it are cut to it, the cut reported and theirs again once the counter grows past their ticks (proc-cputime(1), Exit accounting)" {
	run_state
	advance_node
	set_ticks 300 25 20
	add_usage "$SSH" 20000
	run_state
	sshd() {
		printf '%s\n' "${lines[@]}" | jq -c 'select(.pid == 300) | [.seq, .cpu_us]'
	}
	cut=$(($(ticks_us 5) - 20000))
	assert_equal "$(sshd)" '[1,20000]'
	assert_equal "$(exited)" "{\"type\":\"exited\",\"seq\":1,\"count\":0,\"cpu_us\":0,\"source\":\"cgroup\",\"kind\":\"service\",\"cgroup\":\"$SSH\",\"unit\":\"ssh.service\",\"excess_cpu_us\":$cut}"
	# an interval with no tick of sshd keeps the debt: the growth is
	# the residue's
	advance_node 2
	add_usage "$SSH" 40000
	run_state
	assert_equal "$(sshd)" ''
	assert_equal "$(exited | jq -c '[.seq, .cpu_us, .excess_cpu_us]')" "[2,40000,$cut]"
	# two ticks, and growth past them: sshd's records get what was cut
	advance_node 3
	set_ticks 300 26 21
	add_usage "$SSH" 100000
	run_state
	assert_equal "$(sshd)" "[3,$(($(ticks_us 2) + cut))]"
	assert_equal "$(exited | jq -c '[.seq, .cpu_us, .excess_cpu_us]')" "[3,$((100000 - $(ticks_us 2) - cut)),null]"
}

@test "the counters are read with the node's line, before a new process's identity: a slow cgroup file does not let them run on (proc-cputime(1), Records)" {
	run_state
	advance_node
	set_ticks 300 25 20
	add_usage "$SSH" "$(ticks_us 5)"
	# A process first seen, whose cgroup file is a fifo: ssh.service's
	# counter grows while the scan reads who that process is.
	add_proc 400 late 40 10 100050 /user.slice
	rm "$P/400/cgroup"
	mkfifo "$P/400/cgroup"
	P=$P H=$H SSH=$SSH timeout 60 bash -c "$(declare -f add_usage)"'
	    exec 3> "$P/400/cgroup"; add_usage "$SSH" 80000
	    printf "0::/user.slice\n" >&3' _ &
	HOLDER=$!
	run --separate-stderr timeout 60 proc-cputime --proc "$P" \
	    --cgroup-root "$C" --state "$S" </dev/null
	wait "$HOLDER"
	HOLDER=
	assert_success
	assert_line --partial '"pid":400,'
	assert_equal "$(exited)" ""
	# The growth is the next interval's residue, whose run reads the
	# file again (a --state run reads each process's identity anew).
	rm "$P/400/cgroup"
	printf '0::/user.slice\n' > "$P/400/cgroup"
	advance_node 2
	run_state
	assert_equal "$(exited)" "{\"type\":\"exited\",\"seq\":2,\"count\":0,\"cpu_us\":80000,\"source\":\"cgroup\",\"kind\":\"service\",\"cgroup\":\"$SSH\",\"unit\":\"ssh.service\"}"
}

@test "the kernel's v2 root is the node's, not a cgroup's; a cgroup namespace's root is counted" {
	run_state
	advance_node
	set_ticks 2 0 3
	add_usage / 50000
	run_state
	assert_equal "$(exited)" ""
	touch "$C/cgroup.type"		# the root as a container sees it
	rm "$S"
	run_state
	advance_node 2
	set_ticks 2 0 5
	add_usage / 50000
	run_state
	assert_equal "$(exited)" "{\"type\":\"exited\",\"seq\":1,\"count\":0,\"cpu_us\":$((50000 - $(ticks_us 2))),\"source\":\"cgroup\",\"kind\":\"host\",\"cgroup\":\"/\"}"
}

@test "a cgroup first seen has no baseline: its processes count in its parent until it has one" {
	mkdir "$C/system.slice/new.service"
	printf 'usage_usec 0\n' > "$C/system.slice/new.service/cpu.stat"
	run_state
	advance_node
	add_proc 400 new 7 3 100050 /system.slice/new.service
	add_usage /system.slice/new.service "$(ticks_us 10)"
	run_state
	assert_equal "$(exited)" ""
	advance_node 2
	set_ticks 400 9 3
	add_usage /system.slice/new.service $(($(ticks_us 2) + 40000))
	run_state
	assert_equal "$(exited | jq -c '[.cgroup, .cpu_us]')" '["/system.slice/new.service",40000]'
}

@test "a counter file that is not one counts as no counter" {
	printf 'usage_usec -5\n' > "$C$SSH/cpu.stat"
	run_state
	advance_node
	set_ticks 300 25 20
	add_usage /system.slice "$(ticks_us 5)"
	run_state
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(exited)" ""
	assert_line --partial '"pid":300,'
}

@test "the counters of another host are not read for a --proc tree; a root without counters is said" {
	run --separate-stderr proc-cputime --proc "$P" --state "$S" </dev/null
	advance_node
	add_usage "$SSH" 80000
	run --separate-stderr proc-cputime --proc "$P" --state "$S" </dev/null
	assert_equal "$(exited)" ""
	run --separate-stderr proc-cputime --proc "$P" --cgroup-root "$P" -n 1 -i 1ms
	assert_success
	assert_equal "$stderr" "proc-cputime: $P: no cgroup CPU counters (cpu.stat, cpuacct.usage)"
}

@test "a reaping parent: its one tracked child that ended gets its last slice in its terminated record" {
	run_state
	advance_node
	rm -r "$P/300"
	# systemd waited for sshd: its cutime + cstime grow by all sshd used,
	# the 40 ticks seen and 7 more.
	set_child_ticks 1 30 17
	add_usage "$SSH" "$(ticks_us 7)"
	run_state
	assert_line --partial "\"pid\":300,\"ppid\":1,\"starttime\":7000,\"comm\":\"sshd\",\"cpu_us\":$(ticks_us 7),\"state\":\"terminated\","
	assert_equal "$(exited)" ""
	# Without the mechanism, the last slice is lost, as before.
	rm "$S"
	run_state --exited none
	set_child_ticks 1 60 34
	mkdir "$P/300"
	add_proc 300 sshd 20 20 7000 "$SSH"
	run_state --exited none
	rm -r "$P/300"
	run_state --exited none
	assert_line --partial '"pid":300,"ppid":1,"starttime":7000,"comm":"sshd","cpu_us":0,"state":"terminated",'
}

@test "a reaping parent: children never seen are an exited record under it, with its name and cgroup" {
	run_state
	advance_node
	set_child_ticks 1 8 4
	add_usage /init.scope "$(ticks_us 12)"
	run_state
	assert_equal "$(exited)" "{\"type\":\"exited\",\"seq\":1,\"count\":0,\"cpu_us\":$(ticks_us 12),\"ppid\":1,\"comm\":\"systemd\",\"source\":\"parent\",\"kind\":\"host\",\"cgroup\":\"/init.scope\"}"
}

@test "a reaping parent: several tracked children ended, their slices and unseen ones fold under their name" {
	add_proc 401 make 10 0 100001 "$SSH" 300
	add_proc 402 make 20 0 100002 "$SSH" 300
	run_state
	advance_node
	rm -r "$P/401" "$P/402"
	set_child_ticks 300 $((10 + 20 + 9)) 2
	add_usage "$SSH" "$(ticks_us 11)"
	run_state
	assert_line --partial '"pid":401,"ppid":300,"starttime":100001,"comm":"make","cpu_us":0,"state":"terminated",'
	assert_equal "$(exited | jq -c '[.ppid, .comm, .cgroup, .count, .cpu_us]')" \
	    "[300,\"make\",\"$SSH\",0,$(ticks_us 11)]"
}

@test "a reaping parent: a child and its child ended together, both reaped through it" {
	add_proc 401 sh 10 0 100001 "$SSH" 300
	add_proc 402 cc 20 0 100002 "$SSH" 401
	run_state
	advance_node
	rm -r "$P/401" "$P/402"
	set_child_ticks 300 $((10 + 20 + 6)) 0
	add_usage "$SSH" "$(ticks_us 6)"
	run_state
	# The slices of the subtree cannot be told apart: all to its top.
	assert_line --partial "\"pid\":401,\"ppid\":300,\"starttime\":100001,\"comm\":\"sh\",\"cpu_us\":$(ticks_us 6),\"state\":\"terminated\","
	assert_line --partial '"pid":402,"ppid":401,"starttime":100002,"comm":"cc","cpu_us":0,"state":"terminated",'
	assert_equal "$(exited)" ""
}

@test "an orphan's reaper is not its dead parent's parent: no subtree counts twice" {
	add_proc 401 sh 10 0 100001 "$SSH" 300
	add_proc 402 daemon 20 0 100002 "$SSH" 401
	run_state
	advance_node
	# sh ended first; its orphan ran on and init reaped it: sshd's cutime
	# holds sh alone, systemd's the daemon.
	rm -r "$P/401" "$P/402"
	set_child_ticks 300 11 0
	set_child_ticks 1 $((20 + 5)) 0
	run_state --exited parent
	# Seen before: 30 ticks; used in all: 36.  sshd cannot have reaped 30
	# with 11: what it could not hold is subtracted from init's growth.
	assert_equal "$(printf '%s\n' "${lines[@]}" | jq -s '[.[] | select(.type == "proc" or .type == "exited") | .cpu_us] | add')" \
	    "$(ticks_us 6)"
}

@test "the detail never takes more than its cgroup's counter: cut, and the difference reported" {
	run_state
	advance_node
	set_child_ticks 1 40 10
	add_usage /init.scope 100000
	run_state
	assert_equal "$(exited | jq -c '[.source, .cpu_us, .excess_cpu_us]')" \
	    "$(printf '["parent",%d,null]\n["cgroup",0,%d]' 100000 $(($(ticks_us 50) - 100000)))"
}

@test "an interval's records pass no cgroup's counter, not even by clock ticks' rounding: they would pass the node's cpu record" {
	run_state
	advance_node
	# systemd reaps a child of 10 ticks; its cgroup's counter grew by a
	# tick less, as rounding may leave it.
	set_child_ticks 1 10 0
	add_usage /init.scope $(($(ticks_us 10) - $(ticks_us 1)))
	run_state
	assert_success
	# The cgroup's records of the interval add up to its counter, and the
	# tick cut is offered to the next interval (proc-cputime(1), "Exit
	# accounting").
	assert_equal "$(printf '%s\n' "${lines[@]}" | jq -s '[.[] |
	    select(.cgroup == "/init.scope") | .cpu_us] | add')" "$(ticks_us 9)"
	assert_equal "$(exited | jq -c 'select(.source == "cgroup") | .excess_cpu_us')" "$(ticks_us 1)"
}

# The third sample: 1000 ticks more, 300 of them active.
advance_node_again() {
	printf 'cpu  6500 0 2200 81250 1050 0 0 0 0 0\n' > "$P/stat"
	echo "1020.00 1820.00" > "$P/uptime"
}

# The exited records of the last run as [seq, source, ppid, cpu_us,
# excess_cpu_us].
exited_cut() {
	exited | jq -c '[.seq, .source, .ppid, .cpu_us, .excess_cpu_us]'
}

# Interval 1 of the test above: systemd reaps 500 ms while its cgroup's
# counter shows 100 ms, so that the detail is cut to 100 ms; no ancestor's
# leftover takes the rest, since init.scope's parent is the root, whose
# leftover never does.
cut_in_init_scope() {
	run_state
	advance_node
	set_child_ticks 1 40 10
	add_usage /init.scope 100000
	run_state
	assert_equal "$(exited_cut)" "$(printf '[1,"parent",1,%d,null]\n[1,"cgroup",null,0,%d]' \
	    100000 $(($(ticks_us 50) - 100000)))"
}

@test "a busy cgroup's cut detail is given, as the detail it was, by its counter's unused growth the next interval, and only then" {
	cut_in_init_scope
	# The counter then shows what it had not yet: the detail it cut is
	# given by it, under systemd as before, not as the cgroup's residue.
	advance_node_again
	add_usage /init.scope 400000
	run_state
	assert_success
	assert_equal "$(exited_cut)" '[2,"parent",1,400000,null]'
	assert_equal "$(exited | jq -r .cgroup)" /init.scope
}

@test "a cut detail takes no more than the next interval's unused growth, and is offered once" {
	cut_in_init_scope
	advance_node_again
	add_usage /init.scope 100000
	run_state
	assert_equal "$(exited_cut)" '[2,"parent",1,100000,null]'
	# What is still cut was reported as excess when it was cut; the
	# interval after, the growth is the cgroup's own again.
	printf 'cpu  6700 0 2300 81950 1050 0 0 0 0 0\n' > "$P/stat"
	echo "1030.00 1830.00" > "$P/uptime"
	add_usage /init.scope 50000
	run_state
	assert_equal "$(exited_cut)" '[3,"cgroup",null,50000,null]'
}

# A cut detail as [seq, source, ppid, comm, cgroup, cpu_us, excess_cpu_us],
# and a cgroup's record as [seq, source, cgroup, cpu_us, excess_cpu_us].
exited_where() {
	exited | jq -c '[.seq, .source] + if .source == "cgroup" then
	    [.cgroup, .cpu_us, .excess_cpu_us] else
	    [.ppid, .comm, .cgroup, .cpu_us, .excess_cpu_us] end'
}

@test "detail its cgroup's counter cannot hold is taken from the same interval's leftover of its parent cgroup, under the same ppid and comm" {
	run_state
	advance_node
	# sshd reaps 500 ms; ssh.service's counter shows 100 ms of it, and
	# system.slice's own growth the other 400 ms: a job that ran in a
	# cgroup below system.slice, removed before the sample, whose time
	# the kernel keeps in system.slice's counter.
	set_child_ticks 300 40 10
	add_usage "$SSH" 100000
	add_usage /system.slice 400000
	run_state
	assert_success
	assert_equal "$(exited_where)" "$(cat <<-OUT
	[1,"parent",300,"sshd","/system.slice",400000,null]
	[1,"parent",300,"sshd","$SSH",100000,null]
	OUT
	)"
	# Nothing passes a counter, and nothing is left to hold.
	assert_equal "$(printf '%s\n' "${lines[@]}" | jq -s '[.[] | select(.type == "exited") | .cpu_us] | add')" \
	    500000
	assert_equal "$(jq -c '.data.sampler.held_detail' "$S")" null
}

POD=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice
CTR=$POD/cri-containerd-fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210.scope

@test "a cut detail takes from its ancestors' leftovers nearest first; what none holds is held and reported as excess" {
	run_state
	advance_node
	# python3 reaps 500 ms in its container, whose counter shows 100 ms;
	# the pod's own growth is 100 ms, the burstable slice's 200 ms.
	set_child_ticks 200 40 10
	add_usage "$CTR" 100000
	add_usage "$POD" 100000
	add_usage /kubepods.slice/kubepods-burstable.slice 200000
	run_state
	assert_success
	left=$((500000 - 100000 - 100000 - 200000))
	assert_equal "$(exited_where)" "$(cat <<-OUT
	[1,"parent",200,"python3","/kubepods.slice/kubepods-burstable.slice",200000,null]
	[1,"parent",200,"python3","$POD",100000,null]
	[1,"parent",200,"python3","$CTR",100000,null]
	[1,"cgroup","$CTR",0,$left]
	OUT
	)"
	# Each part in the identity of the cgroup it is under.
	assert_equal "$(exited | jq -r 'select(.cgroup == "'"$POD"'") | [.kind, .pod_id] | join(" ")')" \
	    "pod 0a1b2c3d-4e5f-6789-abcd-ef0123456789"
	# What none held is offered to the container's growth the next
	# interval, as the one-interval carry does.
	advance_node_again
	add_usage "$CTR" 400000
	run_state
	assert_equal "$(exited_where)" "[2,\"parent\",200,\"python3\",\"$CTR\",$((left)),null]
[2,\"cgroup\",\"$CTR\",$((400000 - left)),null]"
}

@test "the root's leftover, counted on cgroup v1, never takes a cut detail: it is every host process's outside a cgroup of its own" {
	C=$(fixture_copy cgroup-v1)
	H=$C/cpu,cpuacct
	for pid in 1 2 100 200; do v1_cgroup "$pid" /; done
	v1_cgroup 300 /system.slice
	run_state
	advance_node
	set_child_ticks 300 40 10
	add_usage /system.slice 100000
	add_usage / 400000
	run_state
	assert_success
	assert_equal "$(exited_where | grep -v '"cgroup","/",')" "$(cat <<-OUT
	[1,"parent",300,"sshd","/system.slice",100000,null]
	[1,"cgroup","/system.slice",0,400000]
	OUT
	)"
	assert_equal "$(exited_where | grep '"cgroup","/",')" '[1,"cgroup","/",400000,null]'
}

@test "a child seen in a cgroup removed before the next sample: its last slice is taken out of the ancestor's leftover, not counted twice" {
	mkdir "$C/system.slice/job1"
	echo 'usage_usec 100000' > "$C/system.slice/job1/cpu.stat"
	add_proc 310 job 10 0 7100 /system.slice/job1 300
	run_state
	advance_node
	# The job burns 300 ms more, ends, is reaped by sshd, and its cgroup
	# is removed: the kernel keeps its time in system.slice's counter.
	rm -r "$P/310" "$C/system.slice/job1"
	set_child_ticks 300 40 0
	add_usage /system.slice 300000
	run_state
	assert_success
	assert_equal "$(printf '%s\n' "${lines[@]}" | jq -c 'select(.pid == 310) | [.state, .cpu_us, .cgroup]')" \
	    '["terminated",300000,"/system.slice/job1"]'
	# system.slice's leftover held the slice: no residue of its own.
	assert_equal "$(exited_where)" ""
}

# counted_cgroup PATH: the cgroup and its missing ancestors in $C, each with
# a counter at 0.
counted_cgroup() {
	local path=$1 dir=$C
	while [ -n "$path" ]; do
		path=${path#/}
		dir=$dir/${path%%/*}
		[ "$path" != "${path#*/}" ] && path=/${path#*/} || path=
		[ -d "$dir" ] && continue
		mkdir "$dir"
		echo 'usage_usec 0' > "$dir/cpu.stat"
	done
}

# The identity fields of cgroup $1's own record in the last run.
cgroup_identity() {
	exited | jq -c --arg c "$1" 'select(.cgroup == $c and .source == "cgroup") |
	    del(.type, .seq, .count, .cpu_us, .source, .cgroup)'
}

@test "a cgroup's exited record carries the identity of a live process of it: a VM's uuid from its QEMU's command line holds" {
	# A guest started by hand in a login session, as QEMU is without
	# libvirt: its QEMU alone in the session's scope.
	local session=/user.slice/user-1000.slice/session-7.scope
	local vm='"vm_id":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee","vm_name":"testvm","hypervisor":"qemu"'
	counted_cgroup "$session"
	add_proc 900 qemu-system-x86 5 5 90000 "$session"
	printf -- '-name\0testvm\0-uuid\0aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee\0' > "$P/900/cmdline"
	run_state
	advance_node
	add_usage "$session" 80000
	run_state
	assert_success
	assert_equal "$(cgroup_identity "$session")" "{\"kind\":\"vm\",$vm,\"user_slice\":\"user-1000.slice\",\"session\":\"7\"}"
	# Once QEMU has ended, the path's: a session's.
	advance_node_again
	rm -r "$P/900"
	add_usage "$session" 80000
	run_state
	assert_equal "$(cgroup_identity "$session")" '{"kind":"session","user_slice":"user-1000.slice","session":"7"}'
}

@test "a cgroup's exited record with no live process of it: its path's identity, with names from the node's files" {
	local a=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
	local ctr=/system.slice/docker-$a.scope
	counted_cgroup "$ctr"
	add_proc 900 nginx 5 5 90000 "$ctr"
	run_state --root "$FIXTURES/node-root"
	advance_node
	# Its last process ends; the counter shows more than it was seen to use.
	rm -r "$P/900"
	add_usage "$ctr" 80000
	run_state --root "$FIXTURES/node-root"
	assert_success
	assert_equal "$(cgroup_identity "$ctr")" "{\"kind\":\"container\",\"container_id\":\"$a\",\"runtime\":\"docker\",\"container_name\":\"web\"}"
}

@test "a child that ended before a sample, reaped just after the sample read its parent, counts once: by its exit fact, not again by the parent's cutime" {
	test_driver facts-replay
	T=$(fixture_copy proc-basic)
	mkdir "$T/700"
	echo '0::/user.slice' > "$T/700/cgroup"
	make_stat() {	# the parent, make, with cutime $1 clock ticks
		printf '700 (make) S 1 700 700 0 -1 0 0 0 0 0 5 5 %s 0 20 0 1 0 50000 0 0\n' \
		    "$1" > "$T/700/stat"
	}
	make_stat 0
	mkfifo "$BATS_TEST_TMPDIR/in"
	"$KP_ROOT/tests/facts-replay" "$T" < "$BATS_TEST_TMPDIR/in" \
	    > "$BATS_TEST_TMPDIR/out" 3>&- &
	FILTER=$!
	exec 7> "$BATS_TEST_TMPDIR/in"
	echo 'interval 1' >&7
	await_line '"type":"interval","seq":1,'
	# cc, 200 ms, ended before sample 2 began; the sample read make's line
	# before make reaped it, and found cc's gone.
	echo "fact 701 700 cc 200000 $((1000 * HZ))" >&7
	echo 'interval 2' >&7
	await_line '"type":"interval","seq":2,'
	make_stat $((200000 * HZ / 1000000))
	echo 'interval 3' >&7
	await_line '"type":"interval","seq":3,'
	exec 7>&-
	wait "$FILTER"
	run jq -s -c '[.[] | select(.type == "exited" and .ppid == 700) | [.seq, .source, .comm, .cpu_us]]' "$BATS_TEST_TMPDIR/out"
	assert_output '[[2,"taskstats","cc",200000]]'
}

# start_replay: tests/facts-replay over $P and the counters in $C, fd 7
# its input, $BATS_TEST_TMPDIR/out its output, once it has written its
# first interval.
start_replay() {
	test_driver facts-replay
	mkfifo "$BATS_TEST_TMPDIR/in"
	"$KP_ROOT/tests/facts-replay" "$P" "$C" < "$BATS_TEST_TMPDIR/in" \
	    > "$BATS_TEST_TMPDIR/out" 3>&- &
	FILTER=$!
	exec 7> "$BATS_TEST_TMPDIR/in"
	echo 'interval 1' >&7
	await_line '"type":"interval","seq":1,'
}

@test "a process seen between its fork and its exec, whose exit fact names it otherwise, ends under the name and cgroup it exec'd with (proc-cputime(1), Exit accounting)" {
	local cg=/system.slice/kp-command-701
	counted_cgroup "$cg"
	# rapl-read -- sh, as a scan saw its child: forked, not yet moved
	# into its cgroup nor exec'd.
	add_proc 700 rapl-read 5 5 50000 "$SSH"
	add_proc 701 rapl-read 0 0 50010 "$SSH" 700
	start_replay
	# It is moved, execs sh, burns 200 ms and ends before the next sample.
	advance_node
	rm -r "${P:?}/701"
	add_usage "$cg" 200000
	echo "fact 701 700 sh 200000 50010 $cg" >&7
	echo 'interval 2' >&7
	exec 7>&-
	wait "$FILTER"
	run jq -c 'select(.type == "proc" and .pid == 701) | [.seq, .comm, .cgroup, .cpu_us, .state, has("exe")]' "$BATS_TEST_TMPDIR/out"
	assert_output '[2,"sh","/system.slice/kp-command-701",200000,"terminated",false]'
}

@test "the cgroup of rapl-read's command, removed before the sample that ends its interval, is read from the command record: its counter's excess stays its own (rapl-read(1), Measuring a command)" {
	local cg=/user.slice/rr.scope/kp-command-901
	counted_cgroup "$cg"
	add_proc 800 rapl-read 1 1 50000 /user.slice/rr.scope
	add_proc 901 sh 0 0 99990 "$cg" 800
	start_filter --proc "$P" --cgroup-root "$C"
	send_interval 1
	await_line '"type":"interval","seq":1'
	# sh burns 30 ticks and ends, rapl-read reaps it; a process of its
	# tree that no sample saw and nobody reaped burnt 40 ms more.  Then
	# rapl-read writes its record and removes the cgroup, before the
	# sample.
	rm -r "${P:?}/901"
	set_child_ticks 800 20 10
	add_usage "$cg" $(($(ticks_us 30) + 40000))
	local final_us
	final_us=$(awk '$1 == "usage_usec" { print $2 }' "$C$cg/cpu.stat")
	rm -r "${C:?}$cg"
	advance_node
	printf '{"type":"command","seq":2,"pid":901,"ppid":800,"starttime":99990,"comm":"sh","cpu_us":%d,"cgroup":"%s","cgroup_cpu_us":%d,"status":0}\n' \
	    "$(ticks_us 30)" "$cg" "$final_us" >&7
	send_interval 2
	exec 7>&-
	wait "$FILTER"
	run -0 jq -c 'select((.type == "proc" and .pid == 901) or .type == "exited") | [.seq, .type, .cgroup, .cpu_us, .source]' "$BATS_TEST_TMPDIR/out"
	assert_output - <<-OUT
	[2,"proc","$cg",$(ticks_us 30),null]
	[2,"exited","$cg",40000,"cgroup"]
	OUT
}

@test "without exit records, rapl-read's command that ended takes its last slice from its command record, rapl-read gone before the sample (rapl-read(1), Measuring a command)" {
	# A shell (700) runs rapl-read (800), which runs sh (901): no cgroup
	# of its own, as an ordinary user's.
	add_proc 700 bash 1 1 40000 /user.slice
	add_proc 800 rapl-read 1 1 50000 /user.slice 700
	add_proc 901 sh 10 0 99990 /user.slice 800
	start_filter --proc "$P" --exited parent
	send_interval 1
	await_line '"type":"interval","seq":1'
	# sh burns 30 ticks more and ends; rapl-read reaps it, writes its
	# record and ends; the shell reaps rapl-read: all before the sample.
	rm -r "${P:?}/901" "${P:?}/800"
	set_child_ticks 700 $((2 + 40)) 0
	advance_node
	printf '{"type":"command","seq":2,"pid":901,"ppid":800,"starttime":99990,"comm":"sh","cpu_us":%d,"command_cpu_us":%d,"status":0}\n' \
	    "$(ticks_us 40)" "$(ticks_us 40)" >&7
	send_interval 2
	exec 7>&-
	wait "$FILTER"
	run -0 jq -c 'select(.seq == 2 and (.type == "proc" or .type == "exited")) | [.type, .pid, .ppid, .comm, .cpu_us, .state]' "$BATS_TEST_TMPDIR/out"
	assert_output - <<-OUT
	["proc",800,700,"rapl-read",0,"terminated"]
	["proc",901,800,"sh",$(ticks_us 30),"terminated"]
	OUT
}

# unseen_in CGROUP: tests/facts-replay over $P and the counters in $C: sshd
# (300) reaps a process never seen, 200 ms, whose exec the process events
# put in CGROUP, a cgroup counted, whose counter shows it.  The exited
# record's identity fields, without cgroup.
unseen_in() {
	counted_cgroup "$1"
	start_replay
	advance_node
	add_usage "$1" 200000
	echo "fact 800 300 job 200000 $((1000 * HZ)) $1" >&7
	echo 'interval 2' >&7
	exec 7>&-
	wait "$FILTER"
	jq -c --arg c "$1" 'select(.type == "exited" and .source == "taskstats") |
	    [.cgroup == $c, .cpu_us, .ppid, .comm] + [del(.type, .seq, .count,
	    .cpu_us, .ppid, .comm, .source, .cgroup)]' "$BATS_TEST_TMPDIR/out"
}

@test "an exited record of a process never seen carries the identity of a live process of the cgroup it ran in: a VM's uuid holds" {
	local session=/user.slice/user-1000.slice/session-7.scope
	add_proc 900 qemu-system-x86 5 5 90000 "$session"
	printf -- '-name\0testvm\0-uuid\0aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee\0' > "$P/900/cmdline"
	run unseen_in "$session"
	assert_output '[true,200000,300,"job",{"kind":"vm","vm_id":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee","vm_name":"testvm","hypervisor":"qemu","user_slice":"user-1000.slice","session":"7"}]'
}

@test "an exited record of a process never seen, in a cgroup with no live process: its path's identity" {
	local a=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
	run unseen_in "/system.slice/docker-$a.scope"
	assert_output "[true,200000,300,\"job\",{\"kind\":\"container\",\"container_id\":\"$a\",\"runtime\":\"docker\"}]"
}

@test "--exited picks the sources: none, parent, cgroup" {
	run_state
	advance_node
	set_child_ticks 1 8 4
	add_usage /init.scope "$(ticks_us 12)"
	set_ticks 300 25 20
	add_usage "$SSH" 80000
	cp "$S" "$S.0"
	run_state --exited none
	assert_equal "$(exited)" ""
	cp "$S.0" "$S"
	run_state --exited parent
	assert_equal "$(exited | jq -r .source)" "parent"
	cp "$S.0" "$S"
	run_state --exited cgroup
	assert_equal "$(exited | jq -r '[.source, .cgroup] | join(" ")' | tr '\n' ,)" \
	    "cgroup $SSH,cgroup /init.scope,"
	cp "$S.0" "$S"
	run_state --exited cgroup,parent
	assert_equal "$(exited | jq -r '[.source, .cgroup] | join(" ")' | tr '\n' ,)" \
	    "parent /init.scope,cgroup $SSH,"
}

# The live tests: a workload run by tests/wait4, whose standard input is
# fd 8 and whose output is $W.
teardown() {
	local pid
	exec 7>&- 8>&- 2>/dev/null || true
	for pid in ${FILTER:-} ${WAIT4:-} ${HOLDER:-}; do
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	[ -z "${MOUNTED:-}" ] || umount "$MOUNTED" || true
	remove_cgroups
}

# start_workload WAIT4-OPTIONS... COMMAND...: its pid in $ROOT (without -g).
# Under SANITIZE=1 the workload's drivers do not check for leaks: each
# check is a process of LeakSanitizer's own, which the kernel's exit
# records rightly count, and the workload's processes would be twice as
# many.
start_workload() {
	[ -x "$KP_ROOT/tests/wait4" ] && [ -x "$KP_ROOT/tests/cpuburn" ] ||
	    fail "tests/wait4 and tests/cpuburn are not built (make check builds them)"
	W=$BATS_TEST_TMPDIR/w.out
	rm -f "$BATS_TEST_TMPDIR/w.in"
	mkfifo "$BATS_TEST_TMPDIR/w.in"
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	    CPUBURN=$KP_ROOT/tests/cpuburn "$KP_ROOT/tests/wait4" "$@" \
	    < "$BATS_TEST_TMPDIR/w.in" > "$W" 3>&- &
	WAIT4=$!
	exec 8> "$BATS_TEST_TMPDIR/w.in"
}

# The workload's CPU time by wait4(2), once it has ended.
wait4_cpu_us() {
	await_in "$W" '^cpu_us ' && sed -n 's/^cpu_us //p' "$W"
}

# The CPU time credited in the stream $2 to the process tree under pid
# $1: its processes' proc records and the exited records under them.
tree_cpu_us() {
	jq -s --argjson root "$1" '
	    ([.[] | select(.type == "proc") | {key: (.pid | tostring),
	        value: .ppid}] | from_entries) as $up
	    | def under($p): $p == $root or ($p > 1 and
	        $up[$p | tostring] != null and $up[$p | tostring] != $p and
	        under($up[$p | tostring]));
	    ([.[] | select(.type == "proc" and under(.pid)) | .cpu_us] | add // 0)
	    + ([.[] | select(.type == "exited" and .ppid != null and under(.ppid))
	        | .cpu_us] | add // 0)' "$2"
}

# The CPU time credited in stream $2 to cgroup path $1: its processes'
# records and its exited records.
cgroup_cpu_us() {
	jq -s --arg c "$1" '[.[] | select((.type == "proc" or
	    .type == "exited") and .cgroup == $c) | .cpu_us] | add // 0' "$2"
}

# churn SOURCES: the churn workload (tests/churn.sh) under proc-cputime
# --exited SOURCES ("": the default) as a filter, sampled once before it
# starts, as each of its three long children is seen, and after it has
# been reaped.  Its short children are never seen.  Sets $ROOT, $WAIT4_US.
churn() {
	local seq=1 seen= pid
	start_workload sh "$KP_ROOT/tests/churn.sh"
	await_in "$W" '^pid '
	ROOT=$(sed -n 's/^pid //p' "$W")
	# In a cgroup of its own, as a container's processes are: the root
	# cgroup's counter moves with every process of the machine, and the
	# stat files and the counter, read moments apart, would cut the
	# detail by the noise of whatever else runs (proc-cputime(1)).
	CHURNS=$((${CHURNS:-0} + 1))
	echo "$ROOT" > "$(new_cgroup "churn$CHURNS")/cgroup.procs"
	start_filter ${1:+--exited "$1"}
	send_interval 1
	await_line '"type":"interval","seq":1,'
	echo go >&8
	until grep -q '^cpu_us ' "$W"; do
		pid=$(pgrep -P "$ROOT" -f 'cpuburn 700$' || true)
		if [ -n "$pid" ] && [ "${seen#*" $pid"}" = "$seen" ]; then
			seen="$seen $pid"
			seq=$((seq + 1))
			send_interval "$seq"
			await_line "\"type\":\"interval\",\"seq\":$seq,"
		fi
		sleep 0.02
	done
	WAIT4_US=$(wait4_cpu_us)
	send_interval $((seq + 1))
	await_line "\"type\":\"interval\",\"seq\":$((seq + 1)),"
	exec 7>&- 8>&-
	wait "$FILTER"
}

@test "live churn as root: its processes and exited records hold 97 to 102 % of wait4's CPU time; under 90 % without" {
	churn parent,cgroup
	within 97 102 "$(tree_cpu_us "$ROOT" "$BATS_TEST_TMPDIR/out")" "$WAIT4_US"
	churn none
	within 0 90 "$(tree_cpu_us "$ROOT" "$BATS_TEST_TMPDIR/out")" "$WAIT4_US"
}

@test "live churn measured by an ordinary user: 90 to 102 % of wait4's CPU time; under 90 % without" {
	AS=as_nobody
	churn parent,cgroup
	within 90 102 "$(tree_cpu_us "$ROOT" "$BATS_TEST_TMPDIR/out")" "$WAIT4_US"
	churn none
	within 0 90 "$(tree_cpu_us "$ROOT" "$BATS_TEST_TMPDIR/out")" "$WAIT4_US"
}

# Waits until cgroup directory $1 holds no process.
await_empty() {
	local i
	for i in $(seq 600); do
		[ -z "$(cat "$1/cgroup.procs")" ] && return 0
		sleep 0.1
	done
	return 1
}

# cgroup_churn SOURCES: tests/cgchurn.sh in cgroup $G, measured by an
# ordinary user's proc-cputime --exited SOURCES, sampled before it starts
# and once all it started has ended.  Sets $USED_US, the counter's growth.
cgroup_churn() {
	local before
	start_workload sh "$KP_ROOT/tests/cgchurn.sh"
	await_in "$W" '^pid '
	sed -n 's/^pid //p' "$W" > "$G/cgroup.procs"
	AS=as_nobody start_filter --exited "$1"
	send_interval 1
	await_line '"type":"interval","seq":1,'
	before=$(cgroup_usage_us "$G")
	echo go >&8
	wait4_cpu_us > /dev/null
	await_empty "$G"
	USED_US=$(($(cgroup_usage_us "$G") - before))
	send_interval 2
	await_line '"type":"interval","seq":2,'
	exec 7>&- 8>&-
	wait "$FILTER"
}

@test "live churn in a cgroup of its own: the group holds 99 to 102 % of its counter, unprivileged; under 90 % without" {
	needs_root
	G=$(new_cgroup churn)
	cgroup_churn parent,cgroup
	within 99 102 "$(cgroup_cpu_us "/${G##*/}" "$BATS_TEST_TMPDIR/out")" "$USED_US"
	cgroup_churn parent
	within 0 90 "$(cgroup_cpu_us "/${G##*/}" "$BATS_TEST_TMPDIR/out")" "$USED_US"
}

# moved_in SOURCES: a parent in cgroup $A makes a child that it moves into
# cgroup $B, as runc exec does, before the child runs 300 ms of CPU time;
# sampled before and after.  Sets $A_US, $B_US: the counters' growth.
moved_in() {
	local a b
	start_workload -g -m "$B/cgroup.procs" "$KP_ROOT/tests/cpuburn" 300
	echo "$WAIT4" > "$A/cgroup.procs"
	start_filter --exited "$1"
	send_interval 1
	await_line '"type":"interval","seq":1,'
	a=$(cgroup_usage_us "$A")
	b=$(cgroup_usage_us "$B")
	echo go >&8
	wait4_cpu_us > /dev/null
	A_US=$(($(cgroup_usage_us "$A") - a))
	B_US=$(($(cgroup_usage_us "$B") - b))
	send_interval 2
	await_line '"type":"interval","seq":2,'
	exec 7>&- 8>&-
	wait "$FILTER"
}

@test "live: a process moved into a cgroup by a parent outside it is charged to that cgroup, once" {
	needs_root
	A=$(new_cgroup parent)
	B=$(new_cgroup child)
	sleep 1000 3>&- &
	HOLDER=$!
	echo "$HOLDER" > "$B/cgroup.procs"	# the container's own process
	moved_in parent,cgroup
	within 99 102 "$(cgroup_cpu_us "/${B##*/}" "$BATS_TEST_TMPDIR/out")" "$B_US"
	# The parent's reaping shows the child too, but its cgroup's counter
	# does not: that detail is cut to it and reported as excess.
	HZ=$(getconf CLK_TCK)
	a_us=$(cgroup_cpu_us "/${A##*/}" "$BATS_TEST_TMPDIR/out")
	echo "A: $a_us credited, $A_US counted"
	[ "$a_us" -le $((A_US + $(ticks_us 2))) ]
	run jq -s --arg a "/${A##*/}" '[.[] | select(.type == "exited" and .cgroup == $a) | .excess_cpu_us // 0] | add' "$BATS_TEST_TMPDIR/out"
	within 90 101 "$output" "$B_US"
	# Without the counters, the parent's reaping charges it to the parent.
	moved_in parent
	within 0 10 "$(cgroup_cpu_us "/${B##*/}" "$BATS_TEST_TMPDIR/out")" "$B_US"
	within 90 102 "$(cgroup_cpu_us "/${A##*/}" "$BATS_TEST_TMPDIR/out")" "$B_US"
}

# last_slice SOURCES [CGROUP]: a child of 500 ms of CPU time, seen before
# it starts and as it runs, reaped at once by its parent; with CGROUP, in
# a cgroup of its own of that name.  Sets $ROOT, $WAIT4_US.
last_slice() {
	start_workload "$KP_ROOT/tests/cpuburn" 500
	await_in "$W" '^pid '
	ROOT=$(sed -n 's/^pid //p' "$W")
	[ -z "${2:-}" ] || echo "$ROOT" > "$(new_cgroup "$2")/cgroup.procs"
	start_filter --exited "$1"
	send_interval 1
	await_line '"type":"interval","seq":1,'
	echo go >&8
	until grep -q '(cpuburn)' "/proc/$ROOT/stat" 2>/dev/null ||
	    grep -q '^cpu_us ' "$W"; do
		sleep 0.01
	done
	send_interval 2
	await_line '"type":"interval","seq":2,'
	WAIT4_US=$(wait4_cpu_us)
	send_interval 3
	await_line '"type":"interval","seq":3,'
	exec 7>&- 8>&-
	wait "$FILTER"
}

@test "live last slice: a tracked child reaped at once; its records add up to wait4's time within two ticks" {
	HZ=$(getconf CLK_TCK)
	last_slice parent
	run jq -s --argjson p "$ROOT" '[.[] | select(.type == "proc" and .pid == $p) | .cpu_us] | add' "$BATS_TEST_TMPDIR/out"
	echo "reported $output, wait4 $WAIT4_US"
	# utime and stime are each rounded down to a clock tick
	[ $((output - WAIT4_US)) -lt "$(ticks_us 2)" ]
	[ $((WAIT4_US - output)) -lt "$(ticks_us 2)" ]
	assert_equal "$(jq -s --argjson p "$ROOT" '[.[] | select(.pid == $p and .state == "terminated")] | length' "$BATS_TEST_TMPDIR/out")" 1
	# Without the reaping parent, the terminated record has no slice.
	last_slice none
	run jq -s --argjson p "$ROOT" '[.[] | select(.pid == $p and .state == "terminated") | .cpu_us]' "$BATS_TEST_TMPDIR/out"
	assert_output '[
  0
]'
}

@test "rapl-read -- CMD: its command record holds the tree's CPU time, orphans included, within 3 % of wait4's" {
	# Ten children waited for and ten orphans, 40 ms of CPU time each;
	# the script ends once rapl-read, their subreaper, has reaped the
	# orphans.
	cat > "$BATS_TEST_TMPDIR/tree.sh" <<-'SH'
	for i in 1 2 3 4 5 6 7 8 9 10; do
		"$CPUBURN" 40
		("$CPUBURN" 40 & echo "$! $(cut -d' ' -f22 /proc/$!/stat)" >> "$0.pids")
	done
	# Each orphan's pid and starttime, until rapl-read has reaped it.
	while read -r p start; do
		while [ "$(cut -d' ' -f22 "/proc/$p/stat" 2>/dev/null)" = "$start" ]; do
			sleep 0.01
		done
	done < "$0.pids"
	SH
	start_workload sh -c 'exec rapl-read --source model -i 100ms -- sh "$1" > "$2"' \
	    _ "$BATS_TEST_TMPDIR/tree.sh" "$BATS_TEST_TMPDIR/rr"
	echo go >&8
	WAIT4_US=$(wait4_cpu_us)
	exec 8>&-
	run jq -s -c '[.[] | select(.type == "command")] | map([.comm, .status])' "$BATS_TEST_TMPDIR/rr"
	assert_output '[["sh",0]]'
	tree_us=$(jq -s '.[] | select(.type == "command") | .cpu_us' "$BATS_TEST_TMPDIR/rr")
	[ "$tree_us" -ge 800000 ]
	within 97 100 "$tree_us" "$WAIT4_US"
}

@test "rapl-read -- CMD as root: the tree in a cgroup of its own, whose counter holds what it left running" {
	needs_root
	# The command burns 100 ms, then leaves a process behind that has
	# burnt 400 ms more when the command ends, and goes on sleeping.  Its
	# fork and execs cost a few ms more, and more on a loaded machine: 400
	# ms keeps them a small part (100 ms gave 116 ms with others' tests
	# running beside it).
	cat > "$BATS_TEST_TMPDIR/left.sh" <<-'SH'
	"$CPUBURN" 100
	("$CPUBURN" 400; echo done > "$0.burnt"
	    exec sleep 1000 < /dev/null > /dev/null 2>&1 3>&-) &
	until [ -s "$0.burnt" ]; do sleep 0.01; done
	SH
	CPUBURN=$KP_ROOT/tests/cpuburn run -0 --separate-stderr \
	    rapl-read --source model -i 100ms -- sh "$BATS_TEST_TMPDIR/left.sh"
	rec=$(jq -c 'select(.type == "command")' <<< "$output")
	pid=$(jq .pid <<< "$rec")
	cg=$(jq -r .cgroup <<< "$rec")
	[[ "$cg" == */kp-command-$pid ]]
	dir=$(new_cgroup_dir)$cg
	echo "$dir" >> "$BATS_TEST_TMPDIR/cgroups"
	HOLDER=$(head -n 1 "$dir/cgroup.procs")
	grep -q '^sleep' "/proc/$HOLDER/comm"
	assert_equal "$stderr" "rapl-read: the command's cgroup $cg, left: Device or resource busy"
	left_us=$(($(jq .cgroup_cpu_us <<< "$rec") - $(jq .cpu_us <<< "$rec")))
	within 95 110 "$left_us" 400000
}

@test "rapl-read -- CMD: a tree that ends whole takes its cgroup along; as an ordinary user, none is made" {
	needs_root
	CPUBURN=$KP_ROOT/tests/cpuburn run -0 --separate-stderr \
	    rapl-read --source model -i 100ms -- sh -c '"$CPUBURN" 200'
	rec=$(jq -c 'select(.type == "command")' <<< "$output")
	cg=$(jq -r .cgroup <<< "$rec")
	[[ "$cg" == */kp-command-$(jq .pid <<< "$rec") ]]
	[ ! -e "$(new_cgroup_dir)$cg" ]
	assert_equal "$stderr" ""
	within 99 102 "$(jq .cgroup_cpu_us <<< "$rec")" "$(jq .cpu_us <<< "$rec")"
	# Without the right to make one, the command runs where rapl-read does.
	CPUBURN=$KP_ROOT/tests/cpuburn run -0 --separate-stderr as_nobody \
	    "$KP_ROOT/cmd/rapl-read" --source model -i 100ms -- sh -c '"$CPUBURN" 50'
	assert_equal "$stderr" ""
	run -0 jq -c 'select(.type == "command") | [has("cpu_us"), has("cgroup"), has("cgroup_cpu_us")]' <<< "$output"
	assert_output '[true,false,false]'
}

# The kernel's exit records (--exited taskstats): the detail where
# proc-cputime holds CAP_NET_ADMIN in the host's namespaces.  As root each
# of these must pass, never skip: CI runs as root, and a skip there would
# hide a listener that no longer works.

# The exited records of stream $1 from taskstats under pid $2, as
# [seq, comm, count].
taskstats_exited() {
	jq -s -c --argjson p "$2" '[.[] | select(.type == "exited" and
	    .source == "taskstats" and .ppid == $p) | [.seq, .comm, .count]]' "$1"
}

@test "live churn with taskstats: the 120 children born and dead inside an interval are one exited record of their parent and comm; none without" {
	churn taskstats
	out=$BATS_TEST_TMPDIR/out
	assert_equal "$(taskstats_exited "$out" "$ROOT")" '[[2,"cpuburn",120]]'
	assert_equal "$(jq -s '[.[] | select(.type == "cpu") | .exits_dropped] | add' "$out")" 0
	# Their exit records alone, and the long children's last slices from
	# theirs: short of wait4's by the exits' teardown only.
	within 90 102 "$(tree_cpu_us "$ROOT" "$out")" "$WAIT4_US"
	churn parent,cgroup
	assert_equal "$(taskstats_exited "$out" "$ROOT")" '[]'
}

# The exits of stream $1's taskstats records under pid $2, as [comm, count]
# summed by comm: a part of one that its cgroup's counter cut is given
# back an interval later in a record of count 0 (proc-cputime(1), "Exit
# accounting").
taskstats_exits() {
	taskstats_exited "$1" "$2" | jq -c 'group_by(.[1]) |
	    map([.[0][1], (map(.[2]) | add)])'
}

@test "live churn with every source: taskstats, the parent's residue and the counters never count a subtree twice" {
	churn parent,cgroup,taskstats
	out=$BATS_TEST_TMPDIR/out
	assert_equal "$(taskstats_exits "$out" "$ROOT")" '[["cpuburn",120]]'
	within 97 102 "$(tree_cpu_us "$ROOT" "$out")" "$WAIT4_US"
	# The default is the same three.
	churn ""
	assert_equal "$(taskstats_exits "$out" "$ROOT")" '[["cpuburn",120]]'
	default_us=$(tree_cpu_us "$ROOT" "$out")
	within 97 102 "$default_us" "$WAIT4_US"
}

@test "live last slice from taskstats: a tracked child's terminated record holds what its exit record adds to its records" {
	HZ=$(getconf CLK_TCK)
	last_slice taskstats
	out=$BATS_TEST_TMPDIR/out
	run jq -s --argjson p "$ROOT" '[.[] | select(.type == "proc" and .pid == $p) | .cpu_us] | add' "$out"
	echo "reported $output, wait4 $WAIT4_US"
	# The exit record is exact to the nanosecond, short of wait4's only by
	# the exit's teardown: within one clock tick, as the issue asks.
	[ $((output - WAIT4_US)) -lt "$(ticks_us 1)" ]
	[ $((WAIT4_US - output)) -lt "$(ticks_us 1)" ]
	slice=$(jq -s --argjson p "$ROOT" '.[] | select(.pid == $p and .state == "terminated") | .cpu_us' "$out")
	[ "$slice" -gt 0 ]
	# It is no exited record too: none under its parent, since other
	# cpuburns of the host may end meanwhile.
	assert_equal "$(taskstats_exited "$out" "$WAIT4")" '[]'
	last_slice none
	assert_equal "$(jq -s --argjson p "$ROOT" '.[] | select(.pid == $p and .state == "terminated") | .cpu_us' "$BATS_TEST_TMPDIR/out")" 0
}

@test "taskstats on a live /proc mounted elsewhere, as the DaemonSet's /host/proc; never on a fixture tree" {
	mkdir "$BATS_TEST_TMPDIR/hostproc"
	mount -t proc proc "$BATS_TEST_TMPDIR/hostproc"
	MOUNTED=$BATS_TEST_TMPDIR/hostproc
	run -0 --separate-stderr proc-cputime --proc "$MOUNTED" -n 1 -i 10ms
	assert_equal "$stderr" ""
	assert_line --partial '"exits_dropped":0'
	run -0 --separate-stderr proc-cputime --proc "$FIXTURES/proc-basic" -n 1 -i 10ms
	assert_equal "$stderr" ""
	refute_line --partial '"exits_dropped"'
}

FALLBACK="exit accounting from the reaping parents and the cgroup counters only"

# The fallback without CAP_NET_ADMIN: the process events stand in beside
# the reaping parents where the kernel lets anyone hear them.
unprivileged_fallback() {
	if events_unprivileged; then
		echo "exit accounting from the reaping parents, the process events and the cgroup counters only"
	else
		echo "$FALLBACK"
	fi
}

@test "taskstats refused without CAP_NET_ADMIN: the fallback, said once with its reason" {
	run -0 --separate-stderr as_nobody proc-cputime -n 3 -i 50ms
	assert_equal "$stderr" "proc-cputime: taskstats: registering for exit records needs CAP_NET_ADMIN: $(unprivileged_fallback)"
	assert_equal "$(printf '%s\n' "${lines[@]}" | jq -s '[.[] | select(.type == "cpu" and has("exits_dropped"))] | length')" 0
	# Not asked for, not said; as root, used, and its losses reported.
	run -0 --separate-stderr as_nobody proc-cputime --exited parent,cgroup -n 1 -i 50ms
	assert_equal "$stderr" ""
	run -0 --separate-stderr proc-cputime -n 3 -i 50ms
	assert_equal "$stderr" ""
	assert_equal "$(printf '%s\n' "${lines[@]}" | jq -s '[.[] | select(.type == "cpu" and has("exits_dropped"))] | length')" 3
}

@test "taskstats refused: asked alone, the reaping parent stands in and gives the last slice" {
	HZ=$(getconf CLK_TCK)
	# In a cgroup of its own: the fallback reads the cgroup counters too,
	# and a counter, read moments after the stat files, cuts the last
	# slice by the CPU time that ran in its cgroup between the two reads,
	# which the cgroup's exited record reports as excess_cpu_us
	# (proc-cputime(1), Exit accounting).  In the root cgroup that is any
	# process of the host, as the load has it; alone in its cgroup, the
	# child is the whole cut, and its slice and the cut add up to the
	# cutime that wait4(2) reads.
	AS=as_nobody last_slice taskstats slice
	run jq -s --argjson p "$ROOT" '[.[] | select(.type == "proc" and .pid == $p) | .cpu_us] | add' "$BATS_TEST_TMPDIR/out"
	local cut_us
	cut_us=$(jq -s --arg c "/kp-test-$$-slice" '[.[] | select(.type == "exited" and
	    .seq == 3 and .cgroup == $c) | .excess_cpu_us // 0] | add // 0' \
	    "$BATS_TEST_TMPDIR/out")
	echo "reported $output, cut $cut_us, wait4 $WAIT4_US"
	[ $((WAIT4_US - output - cut_us)) -lt "$(ticks_us 2)" ]
	[ $((output + cut_us - WAIT4_US)) -lt "$(ticks_us 2)" ]
}

@test "taskstats in another network namespace: the proof at start fails, the fallback said once" {
	run -0 --separate-stderr unshare -n proc-cputime -n 3 -i 50ms
	assert_equal "$stderr" "proc-cputime: taskstats: no exit record came within 3 s of a child's exit: the kernel sends them only to the host's network namespace: $FALLBACK"
	assert_line --partial '"type":"interval","seq":3,'
}

# The drops of the filter's taskstats socket, from /proc/net/netlink: of
# its netlink sockets, the generic one (protocol 16); the other hears the
# process events.
socket_drops() {
	local inodes
	inodes=$(readlink /proc/"$FILTER"/fd/* | sed -n 's/^socket:\[\([0-9]*\)\]$/\1/p')
	[ -n "$inodes" ] || return 1
	awk -v i=" ${inodes//$'\n'/ } " '$2 == 16 && index(i, " " $10 " ") { print $9 }' \
	    /proc/net/netlink
}

# burst_while_stopped BUFFER: 300 exits while the filter, listening with a
# buffer of BUFFER bytes, is stopped, inside interval 2.  Sets $BEFORE and
# $AFTER, the socket's drops as interval 2 began and ended.
burst_while_stopped() {
	start_filter --exited taskstats --taskstats-buffer "$1"
	send_interval 1
	await_line '"type":"interval","seq":1,'
	BEFORE=$(socket_drops)
	kill -STOP "$FILTER"
	for _ in $(seq 300); do /bin/true; done
	kill -CONT "$FILTER"
	send_interval 2
	await_line '"type":"interval","seq":2,'
	AFTER=$(socket_drops)
	exec 7>&-
	wait "$FILTER"
}

# The exit records lost in interval $1, as its cpu record says.
dropped_in() {
	jq -s --argjson s "$1" '.[] | select(.type == "cpu" and .seq == $s) |
	    .exits_dropped' "$BATS_TEST_TMPDIR/out"
}

@test "a tiny buffer: the exit records lost are reported per interval, equal to the socket's drops" {
	burst_while_stopped 32768
	echo "socket drops: $BEFORE, then $AFTER"
	[ "$AFTER" -gt "$BEFORE" ]
	assert_equal "$(dropped_in 2)" "$((AFTER - BEFORE))"
	# The default buffer holds the burst: nothing lost.
	burst_while_stopped 8388608
	assert_equal "$AFTER" 0
	assert_equal "$(dropped_in 2)" 0
}

@test "taskstats: a child reaped an interval after it ended, a zombie meanwhile, counts once: its records, not its exit record and its parent's cutime again" {
	needs_root
	# A parent that starts a child of 200 ms of CPU time and reaps it
	# only when told, with wait4's figure for it.
	cat > "$BATS_TEST_TMPDIR/late.py" <<-'PY'
	import os, sys
	print("pid", os.getpid(), flush=True)
	sys.stdin.readline()
	c = os.fork()
	if c == 0:
	    os.execv(sys.argv[1], [sys.argv[1], "200"])
	print("child", c, flush=True)
	sys.stdin.readline()
	_, _, ru = os.wait4(c, 0)
	print("cpu_us", round((ru.ru_utime + ru.ru_stime) * 1e6), flush=True)
	sys.stdin.readline()
	PY
	L=$BATS_TEST_TMPDIR/late
	mkfifo "$L.in"
	python3 "$L.py" "$KP_ROOT/tests/cpuburn" < "$L.in" > "$L.out" 3>&- &
	HOLDER=$!
	exec 8> "$L.in"
	await_in "$L.out" '^pid '
	start_filter --exited parent,taskstats
	send_interval 1
	await_line '"type":"interval","seq":1,'
	echo go >&8
	await_in "$L.out" '^child '
	child=$(sed -n 's/^child //p' "$L.out")
	# Ended, its exit record sent, and not reaped: a zombie.
	until [ "$(cut -d' ' -f3 "/proc/$child/stat")" = Z ]; do sleep 0.01; done
	send_interval 2
	await_line '"type":"interval","seq":2,'
	echo reap >&8
	await_in "$L.out" '^cpu_us '
	send_interval 3
	await_line '"type":"interval","seq":3,'
	exec 7>&- 8>&-
	wait "$FILTER"
	# Its proc records, and whatever folds under its parent.
	credited=$(jq -s --argjson p "$HOLDER" --argjson c "$child" '[.[] | select((.type == "proc" and .pid == $c) or (.type == "exited" and .ppid == $p)) | .cpu_us] | add // 0' "$BATS_TEST_TMPDIR/out")
	used=$(sed -n 's/^cpu_us //p' "$L.out")
	echo "credited $credited, wait4 $used"
	# utime and stime are each rounded to a clock tick
	[ $((credited - used)) -lt "$(ticks_us 2)" ]
	[ $((used - credited)) -lt "$(ticks_us 2)" ]
}

# credited_share OUT: for the stream OUT of rapl-read -- sh | proc-cputime
# | kp-attribute | kp-aggregate --by cgroup, the command record's cpu_us
# (wait4's), and the CPU time of one zone's process records of sh in
# kp-command-PID and of that cgroup's group records: "WAIT4 PROCS GROUP".
credited_share() {
	local cmd zone
	cmd=$(jq -c 'select(.type == "command")' <<< "$1")
	[ "$(jq -r '.cgroup | sub(".*/"; "")' <<< "$cmd")" = \
	    "kp-command-$(jq .pid <<< "$cmd")" ] || return 1
	# One zone's records: each zone's repeat the same cpu_us.
	zone=$(jq -r 'select(.type == "process") | .zone' <<< "$1" | head -n 1)
	jq -s -r --argjson cmd "$cmd" --arg z "$zone" '
	    [.[] | select(.zone == $z and .cgroup == $cmd.cgroup)] |
	    [$cmd.cpu_us,
	     ([.[] | select(.type == "process" and .pid == $cmd.pid and
	       .comm == "sh") | .cpu_us] | add // 0),
	     ([.[] | select(.type == "group") | .cpu_us] | add // 0)] |
	    map(tostring) | join(" ")' <<< "$1"
}

@test "rapl-read -- sh: sh in kp-command-PID is credited >= 90 % of the command record's cpu_us, in the process records and its cgroup's group, 20 runs of 20 (rapl-read(1), Measuring a command)" {
	needs_root
	# sh itself burns 50 ms of CPU time, as its own stat counts it, so
	# that a loaded machine takes longer but burns no less; the 10 % left
	# is more than the clock ticks a sample may round away.
	cat > "$BATS_TEST_TMPDIR/burn.sh" <<-'SH'
	used=0
	while [ "$used" -lt 5 ]; do
		i=0; while [ $i -lt 2000 ]; do i=$((i + 1)); done
		read -r stat < /proc/$$/stat
		set -- $stat
		used=$((${14} + ${15}))
	done
	SH
	local n wait4_us procs_us group_us
	for n in $(seq 20); do
		run -0 --separate-stderr bash -c 'set -o pipefail; rapl-read --source model -i 1s -- sh "$1" | proc-cputime | kp-attribute | kp-aggregate --by cgroup' _ "$BATS_TEST_TMPDIR/burn.sh"
		read -r wait4_us procs_us group_us <<< "$(credited_share "$output")"
		echo "run $n: wait4 $wait4_us us, sh's records $procs_us us, its group $group_us us"
		within 90 200 "$procs_us" "$wait4_us"
		within 90 200 "$group_us" "$wait4_us"
		# Never more than a clock tick or two over: the records' time is
		# in ticks where the counter's residue is exact (proc-cputime(1),
		# Exit accounting).
		[ "$procs_us" -le $((wait4_us + $(ticks_us 2))) ]
		[ "$group_us" -le $((wait4_us + $(ticks_us 2))) ]
	done
}

@test "rapl-read -- CMD | proc-cputime: the tree's records name its own cgroup, which kp-aggregate --by cgroup keeps apart" {
	needs_root
	run -0 --separate-stderr bash -c 'CPUBURN=$1 rapl-read --source model -i 100ms -- sh -c "\"\$CPUBURN\" 300" | proc-cputime | kp-attribute | kp-aggregate --by cgroup' _ "$KP_ROOT/tests/cpuburn"
	out=$output
	cg=$(jq -r 'select(.type == "command") | .cgroup' <<< "$out")
	[[ "$cg" == */kp-command-* ]]
	# The command's own cpuburn, its sh's child (or sh itself, exec'd):
	# not the other cpuburns of the host.
	sh_pid=$(jq 'select(.type == "command") | .pid' <<< "$out")
	run -0 jq -s --argjson sh "$sh_pid" '[.[] | select(.type == "process" and .comm == "cpuburn" and (.ppid == $sh or .pid == $sh)) | .cgroup] | unique' <<< "$out"
	assert_output "[
  \"$cg\"
]"
	run -0 jq -s --arg cg "$cg" '[.[] | select(.type == "group" and .cgroup == $cg) | .cpu_us] | add' <<< "$out"
	[ "$output" -ge 250000 ]
}
