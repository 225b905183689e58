#!/usr/bin/env bats
# proc-cputime: node usage and per-process CPU deltas from a fixture /proc.

load test_helper
load proc_helper

setup() {
	P=$(fixture_copy proc-basic)
	S=$BATS_TEST_TMPDIR/pc.state
	HZ=$(getconf CLK_TCK)
}

teardown() {
	if [ -n "${child:-}" ]; then
		kill -KILL "$child" 2>/dev/null || true
		wait "$child" 2>/dev/null || true
	fi
}

run_state() {
	run --separate-stderr proc-cputime --proc "$P" --state "$S" "$@" </dev/null
}

@test "usage matches the manual's synopsis" {
	assert_equal "$(usage_synopsis proc-cputime)" \
	    "$(man_synopsis proc-cputime.1)"
}

@test "-h and --help print the usage and the options on stdout, exit 0; --version" {
	assert_help proc-cputime
	run -0 proc-cputime -h
	assert_equal "$(sed '/^$/,$d' <<< "$output")" \
	    "usage: proc-cputime [-ah] [-i duration] [-n count] [--cgroup-root dir] [--exited sources]
                    [--head] [--keep-open count] [--no-gpu] [--node-name name]
                    [--pods-log dir] [--podman-root dir] [--proc dir] [--root dir]
                    [--state file] [--sysfs dir] [--taskstats-buffer bytes]"
}

@test "bad options are usage errors naming the value" {
	run -2 --separate-stderr proc-cputime -x
	run -2 --separate-stderr proc-cputime -n 0
	assert_equal "$stderr" \
	    "proc-cputime: count must be an integer from 1 to 9223372036854775807: '0'"
	run -2 --separate-stderr proc-cputime -i 5x
	assert_equal "$stderr" \
	    "proc-cputime: interval must be a positive duration up to 1 day, in seconds or with a unit (us, ms, s, m, h): '5x'"
	run -2 --separate-stderr proc-cputime -i 25h
	assert_equal "$stderr" \
	    "proc-cputime: interval must be a positive duration up to 1 day, in seconds or with a unit (us, ms, s, m, h): '25h'"
	# -i is parsed before --state refuses it (proc-cputime(1), -i).
	run -2 --separate-stderr proc-cputime -i 2 --state "$S"
	assert_equal "$stderr" \
	    "proc-cputime: --state cannot be used with -i or -n"
	run -2 --separate-stderr proc-cputime -i 1h --state "$S"
	assert_equal "$stderr" \
	    "proc-cputime: --state cannot be used with -i or -n"
	run -2 --separate-stderr proc-cputime -n 1 --state "$S"
	assert_equal "$stderr" \
	    "proc-cputime: --state cannot be used with -i or -n"
	run -2 --separate-stderr proc-cputime extra
	assert_equal "${stderr_lines[0]}" "proc-cputime: unexpected argument 'extra'"
	run -2 --separate-stderr proc-cputime --exited parent,taskstat
	assert_equal "$stderr" \
	    "proc-cputime: exited sources must be none or a list of parent, cgroup and taskstats: 'parent,taskstat'"
	run -2 --separate-stderr proc-cputime --taskstats-buffer 0
	assert_equal "$stderr" \
	    "proc-cputime: taskstats-buffer must be an integer from 1 to 1073741824: '0'"
}

@test "the first --state run stores a baseline and emits no interval" {
	run_state
	assert_success
	assert_output '{"type":"header","seq":0,"version":"1.2","producer":"proc-cputime","node_name":"worker-1"}'
	[ -s "$S" ]
}

@test "a second --state run emits one interval of exact deltas" {
	run_state
	advance_node
	set_ticks 100 3090 1030
	set_ticks 200 600 100
	run_state
	assert_success
	assert_equal "${#lines[@]}" 5
	assert_line -n 1 "{\"type\":\"cpu\",\"seq\":1,\"cpu_us\":$((400 * 1000000 / HZ)),\"total_cpu_us\":$((1000 * 1000000 / HZ)),\"usage_ratio\":0.4,\"irq_us\":0,\"softirq_us\":0,\"steal_us\":0}"
	assert_line -n 2 "{\"type\":\"proc\",\"seq\":1,\"pid\":100,\"ppid\":1,\"starttime\":5000,\"comm\":\"a b) (c\",\"cpu_us\":$((120 * 1000000 / HZ)),\"state\":\"running\",\"kind\":\"container\",\"cgroup\":\"/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope\",\"container_id\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\",\"runtime\":\"docker\"}"
	assert_line -n 3 "{\"type\":\"proc\",\"seq\":1,\"pid\":200,\"ppid\":1,\"starttime\":6000,\"comm\":\"python3\",\"cpu_us\":$((100 * 1000000 / HZ)),\"state\":\"running\",\"kind\":\"container\",\"cgroup\":\"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice/cri-containerd-fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210.scope\",\"container_id\":\"fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210\",\"runtime\":\"containerd\",\"pod_id\":\"0a1b2c3d-4e5f-6789-abcd-ef0123456789\",\"pod_qos\":\"burstable\"}"
	assert_line -n 4 --regexp '^\{"type":"interval","seq":1,"ts":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z","dt_us":[0-9]+\}$'
}

@test "seq goes on across --state runs" {
	run_state
	run_state
	run_state
	assert_line -n 1 --partial '"type":"cpu","seq":2,'
	assert_line --regexp '"type":"interval","seq":2,'
}

@test "a process started after the previous sample is charged all its CPU time, one started in its tick too" {
	run_state
	advance_node
	add_proc 400 late 40 10 100050 /user.slice
	# The previous sample's uptime was 1000.00 s: tick 100000 at 100 Hz.
	add_proc 401 sametick 30 0 $((1000 * HZ)) /user.slice
	run_state
	assert_line --partial "\"pid\":400,\"ppid\":1,\"starttime\":100050,\"comm\":\"late\",\"cpu_us\":$((50 * 1000000 / HZ)),"
	assert_line --partial "\"pid\":401,\"ppid\":1,\"starttime\":$((1000 * HZ)),\"comm\":\"sametick\",\"cpu_us\":$((30 * 1000000 / HZ)),"
}

# stat_hold PID...: each process's stat a fifo, in the order the scan
# lists them (ls -f reads the directory as readdir does); the pass over
# the stat files opens each and, as no kernel writes a fifo, skips it.
stat_hold() {
	local pid
	for pid in "$@"; do
		mkdir "$P/$pid"
		mkfifo "$P/$pid/stat"
	done
	held=$(ls -f "$P" | grep -xF "$(printf '%s\n' "$@")" | tr '\n' ' ')
}

# run_state, bounded: a fifo left without its writer would hold it.
held_run() {
	run --separate-stderr timeout 60 proc-cputime --proc "$P" --state "$S" \
	    </dev/null
}

# The node's line after 100 ticks more, all active.
node_runs_on() {
	printf 'cpu  6350 0 2150 80550 1050 0 0 0 0 0\n' > "$P/stat.new"
	mv "$P/stat.new" "$P/stat"
}

@test "the cpu record ends where the processes' records do: /proc/stat is read once their stat files are (proc-cputime(1), Records)" {
	run_state
	advance_node
	# The pass is held between two stat files while the node runs on:
	# opening a fifo waits for its writer.
	stat_hold 398 399
	# shellcheck disable=SC2086 # two pids, in the scan's order
	P=$P timeout 60 bash -c "$(declare -f node_runs_on)"'
	    exec 3> "$P/$1/stat"; node_runs_on; exec 4> "$P/$2/stat"' \
	    _ $held &
	child=$!
	held_run
	wait "$child"
	child=
	assert_success
	assert_line -n 1 --partial "\"cpu_us\":$((500 * 1000000 / HZ)),\"total_cpu_us\":$((1100 * 1000000 / HZ)),"
}

@test "a new process's identity is read after the node's line: a slow cgroup file does not stretch the cpu record past the stat files (proc-cputime(1), Records)" {
	run_state
	advance_node
	# A process first seen, whose cgroup file the scan reads; a fifo, so
	# that the node runs on while its identity is read.
	add_proc 400 late 40 10 100050 /user.slice
	rm "$P/400/cgroup"
	mkfifo "$P/400/cgroup"
	P=$P timeout 60 bash -c "$(declare -f node_runs_on)"'
	    exec 3> "$P/400/cgroup"; node_runs_on
	    printf "0::/user.slice\n" >&3' &
	child=$!
	held_run
	wait "$child"
	child=
	assert_success
	assert_line -n 1 --partial "\"cpu_us\":$((400 * 1000000 / HZ)),\"total_cpu_us\":$((1000 * 1000000 / HZ)),"
	assert_line --partial "\"pid\":400,\"ppid\":1,\"starttime\":100050,\"comm\":\"late\",\"cpu_us\":$((50 * 1000000 / HZ)),\"state\":\"running\",\"kind\":\"host\",\"cgroup\":\"/user.slice\"}"
	# The 100 ticks are the next interval's, whose run reads the file
	# again (a --state run reads each process's identity anew).
	rm "$P/400/cgroup"
	printf '0::/user.slice\n' > "$P/400/cgroup"
	run_state
	assert_line -n 1 --partial "\"cpu_us\":$((100 * 1000000 / HZ)),\"total_cpu_us\":$((100 * 1000000 / HZ)),"
}

@test "a process first seen but started before the previous sample is only a baseline" {
	run_state
	advance_node
	add_proc 500 old 900 99 50000 /user.slice
	run_state
	refute_line --partial '"pid":500,'
	add_proc 500 old 905 99 50000 /user.slice
	run_state
	assert_line --partial "\"pid\":500,\"ppid\":1,\"starttime\":50000,\"comm\":\"old\",\"cpu_us\":$((5 * 1000000 / HZ)),"
}

@test "a reused pid is a new process and the old one is reported terminated once" {
	run_state
	advance_node
	add_proc 200 newcomer 5 5 100020 /user.slice
	run_state
	assert_line --partial '"pid":200,"ppid":1,"starttime":6000,"comm":"python3","cpu_us":0,"state":"terminated",'
	assert_line --partial "\"pid\":200,\"ppid\":1,\"starttime\":100020,\"comm\":\"newcomer\",\"cpu_us\":$((10 * 1000000 / HZ)),\"state\":\"running\""
	run_state
	refute_line --partial '"starttime":6000'
}

@test "a vanished process is reported terminated in the interval it disappears" {
	run_state
	advance_node
	rm -r "$P/300"
	run_state
	assert_line --partial '"pid":300,"ppid":1,"starttime":7000,"comm":"sshd","cpu_us":0,"state":"terminated","kind":"service","cgroup":"/system.slice/ssh.service","unit":"ssh.service"}'
}

@test "-a emits every process, with or without CPU time" {
	run_state
	advance_node
	run_state -a
	assert_equal "$(printf '%s\n' "${lines[@]}" | grep -c '"type":"proc"')" 5
	# And its cpu record says so: the stream is dense (kp-records(5)).
	assert_line -n 1 --regexp '^\{"type":"cpu",.*,"dense":true\}$'
	run_state
	refute_line --partial '"dense"'
}

@test "a comm that is not UTF-8 becomes valid JSON" {
	add_proc 600 "$(printf 'x\377y')" 1 1 90000 /
	run_state
	advance_node
	add_proc 600 "$(printf 'x\377y')" 3 1 90000 /
	run_state
	assert_equal "$(printf '%s\n' "${lines[@]}" |
	    jq -r 'select(.pid == 600) | .comm')" "$(printf 'x\357\277\275y')"
}

@test "as a filter it samples at each upstream interval and passes records through" {
	cat > "$BATS_TEST_TMPDIR/in" <<-'IN'
	{"type":"header","seq":0,"version":"1.0","producer":"rapl-read"}
	{"type":"energy","seq":1,"zone":"package","energy_uj":5}
	{"type":"interval","seq":1,"ts":"2026-11-22T00:00:01.000000Z","dt_us":1000000}
	{"type":"mystery","seq":2, "kept":  "as is"}
	{"type":"interval","seq":2,"ts":"2026-11-22T00:00:02.000000Z","dt_us":1000000}
	IN
	run --separate-stderr proc-cputime --proc "$P" < "$BATS_TEST_TMPDIR/in"
	assert_success
	assert_output - <<-'OUT'
	{"type":"header","seq":0,"version":"1.0","producer":"rapl-read"}
	{"type":"energy","seq":1,"zone":"package","energy_uj":5}
	{"type":"cpu","seq":1,"cpu_us":0,"total_cpu_us":0,"usage_ratio":0.0,"irq_us":0,"softirq_us":0,"steal_us":0}
	{"type":"interval","seq":1,"ts":"2026-11-22T00:00:01.000000Z","dt_us":1000000}
	{"type":"mystery","seq":2, "kept":  "as is"}
	{"type":"cpu","seq":2,"cpu_us":0,"total_cpu_us":0,"usage_ratio":0.0,"irq_us":0,"softirq_us":0,"steal_us":0}
	{"type":"interval","seq":2,"ts":"2026-11-22T00:00:02.000000Z","dt_us":1000000}
	OUT
}

@test "as a filter with --state it goes on from the previous run" {
	printf '%s\n' '{"type":"header","seq":0,"version":"1.0","producer":"rapl-read"}' > "$BATS_TEST_TMPDIR/first"
	printf '%s\n' '{"type":"interval","seq":7,"ts":"2026-11-22T00:00:01.000000Z","dt_us":1000000}' > "$BATS_TEST_TMPDIR/second"
	run proc-cputime --proc "$P" --state "$S" < "$BATS_TEST_TMPDIR/first"
	assert_success
	assert_output '{"type":"header","seq":0,"version":"1.0","producer":"rapl-read"}'
	advance_node
	set_ticks 100 3090 1030
	run proc-cputime --proc "$P" --state "$S" < "$BATS_TEST_TMPDIR/second"
	assert_line -n 0 --partial '{"type":"cpu","seq":7,"cpu_us":'
	assert_line -n 1 --partial '"pid":100,'
	assert_line -n 2 --partial '{"type":"interval","seq":7,'
}

@test "a bad input line is reported with its line number, skipped, and exit 3" {
	printf '%s\n' '{"type":"header","seq":0,"version":"1.0","producer":"x"}' \
	    'not json' '{"seq":1}' '{"type":"energy","seq":-1}' \
	    '{"type":"interval","seq":1,"ts":"2026-11-22T00:00:01.000000Z","dt_us":1}' \
	    > "$BATS_TEST_TMPDIR/in"
	run -3 --separate-stderr proc-cputime --proc "$P" < "$BATS_TEST_TMPDIR/in"
	assert_equal "${stderr_lines[0]}" "proc-cputime: <stdin>:2: not a JSON object"
	assert_equal "${stderr_lines[1]}" 'proc-cputime: <stdin>:3: record without a string "type"'
	assert_equal "${stderr_lines[2]}" 'proc-cputime: <stdin>:4: record without a non-negative integer "seq"'
	assert_line -n 2 --partial '{"type":"interval","seq":1,'
}

@test "as a filter it passes CRLF lines on without the CR, and checks every line" {
	printf '%s\r\n' '{"type":"header","seq":0,"version":"1.1","producer":"x"}' \
	    '{"type":"mystery","seq":1,"x":"a\u0000b"}' \
	    '{"type":"mystery","seq":1,"kept":1}' \
	    '{"type":"interval","seq":1,"dt_us":1000000}' \
	    '{"type":"mystery","seq":1,"late":1}' > "$BATS_TEST_TMPDIR/in"
	run -3 --separate-stderr proc-cputime --proc "$P" < "$BATS_TEST_TMPDIR/in"
	assert_output - <<-'OUT'
	{"type":"header","seq":0,"version":"1.1","producer":"x"}
	{"type":"mystery","seq":1,"kept":1}
	{"type":"cpu","seq":1,"cpu_us":0,"total_cpu_us":0,"usage_ratio":0.0,"irq_us":0,"softirq_us":0,"steal_us":0}
	{"type":"interval","seq":1,"dt_us":1000000}
	OUT
	assert_equal "${#stderr_lines[@]}" 2
	assert_equal "${stderr_lines[0]}" 'proc-cputime: <stdin>:2: a string holds \u0000'
	assert_equal "${stderr_lines[1]}" 'proc-cputime: <stdin>:5: mystery record of interval 1, which has ended: a replay or a disorder'
}

@test "an unknown major version is rejected with exit 3" {
	printf '%s\n' '{"type":"header","seq":0,"version":"2.0","producer":"x"}' > "$BATS_TEST_TMPDIR/in"
	run -3 --separate-stderr proc-cputime --proc "$P" < "$BATS_TEST_TMPDIR/in"
	assert_equal "$stderr" "proc-cputime: <stdin>:1: unsupported kp-records version 2.0 (this build reads 1.x)"
}

@test "an unreadable /proc is a system failure, exit 1" {
	run -1 --separate-stderr proc-cputime --proc "$BATS_TEST_TMPDIR/none" -n 1 -i 10ms
	assert_equal "$stderr" "proc-cputime: $BATS_TEST_TMPDIR/none/uptime: No such file or directory"
	# The node's stat, read once the processes' are, names itself too.
	rm "$P/stat"
	run -1 --separate-stderr proc-cputime --proc "$P" -n 1 -i 10ms
	assert_equal "$stderr" "proc-cputime: $P/stat: No such file or directory"
}

@test "it samples on its own clock with -n and -i" {
	run --separate-stderr proc-cputime -n 2 -i 50ms
	assert_success
	assert_line -n 0 --partial '"type":"header"'
	assert_equal "$(printf '%s\n' "${lines[@]}" | grep -c '"type":"interval"')" 2
	assert_equal "$(printf '%s\n' "${lines[@]}" | grep -c '"type":"cpu"')" 2
}

@test "a write error is a failure, a closed pipe a quiet stop" {
	run -1 --separate-stderr bash -c 'proc-cputime -n 1 -i 10ms --proc "$1" > /dev/full' _ "$P"
	assert_equal "$stderr" "proc-cputime: write error on stdout: No space left on device"
	run -0 --separate-stderr bash -c 'set -o pipefail; proc-cputime -i 1ms --proc "$1" | head -1' _ "$P"
	assert_equal "$stderr" ""
}

@test "identities: docker, cri-containerd pods, cgroupfs pods, libvirt, podman" {
	run_state
	advance_node
	add_proc 701 a 1 0 100001 /docker/1111111111111111111111111111111111111111111111111111111111111111
	add_proc 702 b 1 0 100001 /kubepods/besteffort/pod0a1b2c3d-4e5f-6789-abcd-ef0123456789/2222222222222222222222222222222222222222222222222222222222222222
	add_proc 703 c 1 0 100001 '/machine.slice/machine-qemu\x2d1\x2dguest.scope/libvirt/vcpu0'
	add_proc 704 d 1 0 100001 /user.slice/user-1000.slice/user@1000.service/user.slice/libpod-3333333333333333333333333333333333333333333333333333333333333333.scope
	add_proc 705 e 1 0 100001 /machine.slice/libpod-conmon-4444444444444444444444444444444444444444444444444444444444444444.scope
	add_proc 706 f 1 0 100001 /system.slice/podman-pause-1a2b.scope
	run_state
	ids() {
		printf '%s\n' "${lines[@]}" | jq -r --argjson p "$1" \
		    'select(.pid == $p) | [.container_id, .pod_id, .vm_id, .unit] | map(. // "-") | join(" ")'
	}
	assert_equal "$(ids 701)" "1111111111111111111111111111111111111111111111111111111111111111 - - -"
	assert_equal "$(ids 702)" "2222222222222222222222222222222222222222222222222222222222222222 0a1b2c3d-4e5f-6789-abcd-ef0123456789 - -"
	# A libvirt scope without -uuid or domain XML: its name without the
	# domain number, which changes at every start (proc-cputime(1)).
	assert_equal "$(ids 703)" "- - guest -"
	assert_equal "$(ids 704)" "3333333333333333333333333333333333333333333333333333333333333333 - - user@1000.service"
	assert_equal "$(ids 705)" "- - - -"
	assert_equal "$(ids 706)" "- - - -"
}

@test "guest time is inside user time and is not added twice" {
	run_state
	# 1000 ticks pass, 400 active; guest and guest_nice grow by 300 and 50
	# but are already in user and nice.
	printf 'cpu  6300 0 2100 80550 1050 0 0 0 300 50\n' > "$P/stat"
	run_state
	assert_line -n 1 "{\"type\":\"cpu\",\"seq\":1,\"cpu_us\":$((400 * 1000000 / HZ)),\"total_cpu_us\":$((1000 * 1000000 / HZ)),\"usage_ratio\":0.4,\"irq_us\":0,\"softirq_us\":0,\"steal_us\":0}"
}

@test "the cpu record says how much of the active time was interrupts and steal" {
	run_state
	# 1000 ticks pass, 400 active: 250 user, 50 system, 20 irq, 50 softirq
	# and 30 steal.
	printf 'cpu  6250 0 2050 80550 1050 20 50 30 0 0\n' > "$P/stat"
	run_state
	assert_line -n 1 "{\"type\":\"cpu\",\"seq\":1,\"cpu_us\":$(ticks_us 400),\"total_cpu_us\":$(ticks_us 1000),\"usage_ratio\":0.4,\"irq_us\":$(ticks_us 20),\"softirq_us\":$(ticks_us 50),\"steal_us\":$(ticks_us 30)}"
	# A state file of an earlier version, without them: the next interval
	# goes without them, the one after has them again.
	edit_state 'del(.data.sampler.kernel_ticks)'
	printf 'cpu  6550 0 2150 81100 1100 20 50 30 0 0\n' > "$P/stat"
	run_state
	assert_line -n 1 "{\"type\":\"cpu\",\"seq\":2,\"cpu_us\":$(ticks_us 400),\"total_cpu_us\":$(ticks_us 1000),\"usage_ratio\":0.4}"
	run_state
	assert_line -n 1 --partial ',"usage_ratio":0.0,"irq_us":0,"softirq_us":0,"steal_us":0}'
}

@test "clock ticks become microseconds by sysconf(_SC_CLK_TCK)" {
	# A host whose clock ticks 250 times a second, not the usual 100.
	cat > "$BATS_TEST_TMPDIR/hz.c" <<-'C'
	#define _GNU_SOURCE
	#include <dlfcn.h>
	#include <unistd.h>
	long sysconf(int name)
	{
		long (*real)(int) = (long (*)(int))dlsym(RTLD_NEXT, "sysconf");
		return name == _SC_CLK_TCK ? 250 : real(name);
	}
	C
	cc -shared -fPIC -o "$BATS_TEST_TMPDIR/hz.so" "$BATS_TEST_TMPDIR/hz.c" -ldl
	export LD_PRELOAD="$BATS_TEST_TMPDIR/hz.so" ASAN_OPTIONS=verify_asan_link_order=0
	run_state
	advance_node
	set_ticks 100 3000 1001
	run_state
	assert_line -n 1 '{"type":"cpu","seq":1,"cpu_us":1600000,"total_cpu_us":4000000,"usage_ratio":0.4,"irq_us":0,"softirq_us":0,"steal_us":0}'
	assert_line --partial '"pid":100,"ppid":1,"starttime":5000,"comm":"a b) (c","cpu_us":4000,'
}

@test "a vanished process is reported once, and not again" {
	run_state
	advance_node
	rm -r "$P/300"
	run_state
	assert_equal "$(printf '%s\n' "${lines[@]}" | grep -c '"pid":300,')" 1
	run_state -a
	refute_line --partial '"pid":300,'
}

@test "a pid that vanishes between listing and reading is skipped silently" {
	run_state
	advance_node
	mkdir "$P/777"		# listed, but its stat cannot be read
	mkdir "$P/778"
	printf '778 (half' > "$P/778/stat"	# or was cut short
	run_state -a
	assert_success
	assert_equal "$stderr" ""
	refute_line --partial '"pid":777,'
	refute_line --partial '"pid":778,'
	assert_equal "$(printf '%s\n' "${lines[@]}" | grep -c '"type":"proc"')" 5
}

@test "by default only processes with CPU time or that ended are written" {
	run_state
	advance_node
	set_ticks 200 501 100
	rm -r "$P/300"
	run_state
	assert_equal "$(printf '%s\n' "${lines[@]}" | jq -r 'select(.type == "proc") | "\(.pid) \(.state)"' | tr '\n' ,)" \
	    "200 running,300 terminated,"
}

@test "a cgroup path that is not UTF-8 becomes valid JSON" {
	add_proc 610 x 1 1 90000 "$(printf '/system.slice/bad\377name.service')"
	run_state
	advance_node
	add_proc 610 x 3 1 90000 "$(printf '/system.slice/bad\377name.service')"
	run_state
	assert_equal "$(printf '%s\n' "${lines[@]}" | jq -r 'select(.pid == 610) | .unit')" \
	    "$(printf 'bad\357\277\275name.service')"
}

@test "the cgroup and command line of a process are read once while its comm stays, and again for a reused pid" {
	add_proc 900 qemu-system-x86 5 5 90000 /system.slice/a.service
	printf -- '-uuid\0first-uuid\0' > "$P/900/cmdline"
	start_filter -a --proc "$P"
	send_interval 1
	await_line '"type":"interval","seq":1'
	printf '0::/system.slice/b.service\n' > "$P/900/cgroup"
	printf -- '-uuid\0second-uuid\0' > "$P/900/cmdline"
	send_interval 2
	await_line '"type":"interval","seq":2'
	add_proc 900 qemu-system-x86 5 5 95000 /system.slice/c.service
	printf -- '-uuid\0third-uuid\0' > "$P/900/cmdline"
	send_interval 3
	exec 7>&-
	wait "$FILTER"
	run jq -r 'select(.pid == 900) | "\(.seq) \(.starttime) \(.state) \(.unit) \(.vm_id)"' "$BATS_TEST_TMPDIR/out"
	assert_output - <<-'OUT'
	1 90000 running a.service first-uuid
	2 90000 running a.service first-uuid
	3 90000 terminated a.service first-uuid
	3 95000 running c.service third-uuid
	OUT
}

@test "a process whose comm changes has exec'd: its cgroup, exe and command line are read again (proc-cputime(1), Identity fields)" {
	# rapl-read -- CMD's command, seen between its fork and its exec,
	# then moved to its own cgroup and run as sh.
	add_proc 900 rapl-read 1 0 90000 /user.slice/rr.scope
	ln -s /usr/bin/rapl-read "$P/900/exe"
	start_filter -a --proc "$P"
	send_interval 1
	await_line '"type":"interval","seq":1'
	add_proc 900 sh 5 5 90000 /kp-command-900
	ln -sfn /usr/bin/dash "$P/900/exe"
	send_interval 2
	await_line '"type":"interval","seq":2'
	printf '0::/elsewhere\n' > "$P/900/cgroup"
	send_interval 3
	exec 7>&-
	wait "$FILTER"
	run -0 jq -r 'select(.pid == 900) | "\(.seq) \(.comm) \(.cgroup) \(.exe)"' "$BATS_TEST_TMPDIR/out"
	assert_output - <<-'OUT'
	1 rapl-read /user.slice/rr.scope /usr/bin/rapl-read
	2 sh /kp-command-900 /usr/bin/dash
	3 sh /kp-command-900 /usr/bin/dash
	OUT
}

# The command record rapl-read -- CMD writes when CMD has ended, before
# that interval's interval record: command SEQ PID STARTTIME.
send_command() {
	printf '{"type":"command","seq":%d,"pid":%d,"ppid":800,"starttime":%d,"comm":"sh","cpu_us":300000,"cgroup":"/kp-command-%d","status":0}\n' \
	    "$1" "$2" "$3" "$2" >&7
}

@test "rapl-read's command record names and places its command, last seen before its exec, at its end (rapl-read(1), Measuring a command)" {
	add_proc 800 rapl-read 1 1 50000 /user.slice/rr.scope
	add_proc 901 rapl-read 0 0 99990 /user.slice/rr.scope 800
	ln -s /usr/bin/rapl-read "$P/901/exe"
	start_filter --proc "$P"
	send_interval 1
	await_line '"type":"interval","seq":1'
	# It exec'd sh, burnt 30 ticks, and rapl-read reaped it.
	rm -r "$P/901"
	set_child_ticks 800 20 10
	advance_node
	send_command 2 901 99990
	send_interval 2
	exec 7>&-
	wait "$FILTER"
	# The exe read before its exec was that of rapl-read: left out.
	run -0 jq -c 'select(.type == "proc") | [.seq, .pid, .comm, .cgroup, .cpu_us, .state, .exe]' "$BATS_TEST_TMPDIR/out"
	assert_output "[2,901,\"sh\",\"/kp-command-901\",$(ticks_us 30),\"terminated\",null]"
}

@test "rapl-read's command record gives a command no scan saw its reaper's CPU time, named and placed" {
	add_proc 800 rapl-read 1 1 50000 /user.slice/rr.scope
	start_filter --proc "$P"
	send_interval 1
	await_line '"type":"interval","seq":1'
	set_child_ticks 800 20 10
	advance_node
	send_command 2 902 100500
	send_interval 2
	exec 7>&-
	wait "$FILTER"
	run -0 jq -c 'select(.type == "proc" or .type == "exited") | [.type, .seq, .pid, .comm, .cgroup, .cpu_us, .state]' "$BATS_TEST_TMPDIR/out"
	assert_output "[\"proc\",2,902,\"sh\",\"/kp-command-902\",$(ticks_us 30),\"terminated\"]"
}

# Microseconds of CPU time pid $1 has used, from schedstat (nanoseconds)
# where the kernel has it, else from stat.
cpu_used_us() {
	if [ -r "/proc/$1/schedstat" ]; then
		echo $(($(cut -d' ' -f1 "/proc/$1/schedstat") / 1000))
	else
		awk -v hz="$HZ" '{ sub(/.*\) /, ""); print int(($12 + $13) * 1000000 / hz) }' "/proc/$1/stat"
	fi
}

@test "live: a child burning about a second of CPU is reported within 15 %" {
	sh -c 'kill -STOP $$; while :; do :; done' 3>&- &
	child=$!
	until grep -q '^[0-9]* ([^)]*) T' "/proc/$child/stat"; do sleep 0.05; done
	start_filter
	send_interval 1		# the stopped child is in the baseline
	await_line '"type":"interval","seq":1'
	before=$(cpu_used_us "$child")
	kill -CONT "$child"
	for _ in $(seq 600); do
		[ $(($(cpu_used_us "$child") - before)) -ge 1000000 ] && break
		sleep 0.05
	done
	kill -STOP "$child"
	used=$(($(cpu_used_us "$child") - before))
	send_interval 2
	exec 7>&-
	wait "$FILTER"
	reported=$(jq --argjson p "$child" 'select(.seq == 2 and .pid == $p) | .cpu_us' "$BATS_TEST_TMPDIR/out")
	echo "used $used us, reported $reported us"
	[ "$used" -ge 900000 ]
	[ "$reported" -ge $((used * 85 / 100)) ]
	[ "$reported" -le $((used * 115 / 100)) ]
}

@test "a comm with quotes, backslashes and control characters is escaped JSON" {
	add_proc 620 "$(printf 'q"b\\\\\t\001\177')" 1 1 90000 /
	run_state
	advance_node
	add_proc 620 "$(printf 'q"b\\\\\t\001\177')" 3 1 90000 /
	run_state
	assert_line --partial "$(printf '"pid":620,"ppid":1,"starttime":90000,"comm":"q\\"b\\\\\\\\\\t\\u0001\177",')"
	assert_equal "$(printf '%s\n' "${lines[@]}" | jq -r 'select(.pid == 620) | .comm' | od -An -c | tr -s ' ')" \
	    "$(printf 'q"b\\\\\t\001\177\n' | od -An -c | tr -s ' ')"
}

@test "thousands of processes, a third of them ending, are each followed exactly" {
	mkdir $(seq -f "$P/%.0f" 10000 11999)
	for pid in $(seq 10000 11999); do
		printf '%d (w) S 1 1 1 0 -1 0 0 0 0 0 %d 0 0 0 20 0 1 0 %d 0 0\n' \
		    "$pid" 1 $((pid * 3)) > "$P/$pid/stat"
	done
	start_filter --proc "$P"
	send_interval 1
	await_line '"type":"interval","seq":1'
	for pid in $(seq 10000 11999); do
		if [ $((pid % 3)) -eq 0 ]; then
			rm -r "${P:?}/$pid"
		else
			printf '%d (w) S 1 1 1 0 -1 0 0 0 0 0 %d 0 0 0 20 0 1 0 %d 0 0\n' \
			    "$pid" 2 $((pid * 3)) > "$P/$pid/stat"
		fi
	done
	send_interval 2
	await_line '"type":"interval","seq":2'
	for pid in $(seq 10000 11999); do
		[ $((pid % 3)) -eq 0 ] ||
		    printf '%d (w) S 1 1 1 0 -1 0 0 0 0 0 %d 0 0 0 20 0 1 0 %d 0 0\n' \
		    "$pid" 3 $((pid * 3)) > "$P/$pid/stat"
	done
	send_interval 3
	exec 7>&-
	wait "$FILTER"
	run jq -r 'select(.type == "proc") | "\(.seq) \(.state) \(.cpu_us)"' "$BATS_TEST_TMPDIR/out"
	assert_equal "$(printf '%s\n' "${lines[@]}" | sort | uniq -c | awk '{ $1 = $1; print }')" \
	    "$(printf '1334 2 running %d\n666 2 terminated 0\n1334 3 running %d' $((1000000 / HZ)) $((1000000 / HZ)))"
	assert_equal "$(jq -r 'select(.type == "proc" and .seq == 3) | .pid' "$BATS_TEST_TMPDIR/out" | sort -u | wc -l)" 1334
}

# Writes pid $1's stat with utime $2 and pid field $3 (default $1).
bad_stat() {
	mkdir -p "$P/$1"
	printf '%s (bad) S 1 1 1 0 -1 0 0 0 0 0 %s 0 0 0 20 0 1 0 100 0 0\n' \
	    "${3:-$1}" "$2" > "$P/$1/stat"
}

@test "a malformed stat is skipped with one warning, never a negative cpu_us" {
	run_state
	advance_node
	set_ticks 1 110 50
	set_ticks 100 184467440737095516 1000
	set_ticks 200 -5 100
	set_ticks 300 9223372036854775000 20
	bad_stat 400 5 zz
	bad_stat 401 12x
	bad_stat 402 5 0
	run_state
	assert_success
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" "^proc-cputime: $P/[0-9]+/stat: malformed, process skipped\$"
	refute_output --partial '"cpu_us":-'
	refute_line --partial '"pid":0,'
	refute_line --partial '"pid":40'
	refute_line --regexp '"pid":(100|200|300),.*"state":"running"'
	assert_line --partial "\"pid\":1,\"ppid\":0,\"starttime\":1,\"comm\":\"systemd\",\"cpu_us\":$((10 * 1000000 / HZ)),"
	# The next run's state file is whole: no process loses its interval.
	set_ticks 1 120 50
	run_state
	assert_equal "$(printf '%s\n' "$stderr" | grep -c unusable)" 0
	assert_line --partial "\"pid\":1,\"ppid\":0,\"starttime\":1,\"comm\":\"systemd\",\"cpu_us\":$((10 * 1000000 / HZ)),"
}

@test "a bad process row in the state file costs only that process's interval" {
	run_state
	edit_state '.data.sampler.procs[2][2] = -5'
	advance_node
	set_ticks 100 3090 1030
	set_ticks 200 600 100
	run_state
	assert_success
	assert_equal "$stderr" "proc-cputime: $S: unusable process rows in the state file skipped: 1"
	assert_line --partial "\"pid\":200,\"ppid\":1,\"starttime\":6000,\"comm\":\"python3\",\"cpu_us\":$((100 * 1000000 / HZ)),"
	refute_line --partial '"pid":100,'
	assert_line --regexp '^\{"type":"interval","seq":1,'
}

@test "a stored sample that is not in the past is a new baseline, not a negative dt_us" {
	run_state
	edit_state '.data.mono_us += 1e11'
	advance_node
	run_state
	assert_success
	assert_equal "$stderr" "proc-cputime: $S: the stored sample is not in the past, starting a new baseline"
	assert_output '{"type":"header","seq":0,"version":"1.2","producer":"proc-cputime","node_name":"worker-1"}'
	# The new baseline is usable: the next run has an interval from it.
	set_ticks 200 600 100
	run_state
	assert_equal "$stderr" ""
	assert_line --partial "\"pid\":200,\"ppid\":1,\"starttime\":6000,\"comm\":\"python3\",\"cpu_us\":$((100 * 1000000 / HZ)),"
	assert_line --regexp '^\{"type":"interval","seq":1,"ts":"[^"]*","dt_us":[0-9]+\}$'
}

@test "with --state, an empty input is an error that advances nothing; --head is a one-shot run" {
	# The head of a cron line: its stdin is a pipe that ends at once.
	run --separate-stderr bash -c ': | proc-cputime --head --proc "$1" --state "$2"' _ "$P" "$S"
	assert_success
	assert_output '{"type":"header","seq":0,"version":"1.2","producer":"proc-cputime","node_name":"worker-1"}'
	advance_node
	set_ticks 100 3090 1030
	run --separate-stderr bash -c ': | proc-cputime --head --proc "$1" --state "$2"' _ "$P" "$S"
	assert_success
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 4
	assert_line -n 0 '{"type":"header","seq":0,"version":"1.2","producer":"proc-cputime","node_name":"worker-1"}'
	assert_line -n 1 "{\"type\":\"cpu\",\"seq\":1,\"cpu_us\":$((400 * 1000000 / HZ)),\"total_cpu_us\":$((1000 * 1000000 / HZ)),\"usage_ratio\":0.4,\"irq_us\":0,\"softirq_us\":0,\"steal_us\":0}"
	assert_line -n 2 --partial "\"pid\":100,\"ppid\":1,\"starttime\":5000,\"comm\":\"a b) (c\",\"cpu_us\":$((120 * 1000000 / HZ)),"
	assert_line -n 3 --regexp '^\{"type":"interval","seq":1,"ts":"[^"]*","dt_us":[0-9]+\}$'
	# In the middle of a pipeline, an empty input is an upstream that
	# failed: exit 1, and the state as it was (proc-cputime(1), "Modes").
	cp "$S" "$BATS_TEST_TMPDIR/before"
	run -1 --separate-stderr bash -c ': | proc-cputime --proc "$1" --state "$2"' _ "$P" "$S"
	assert_equal "$stderr" "proc-cputime: <stdin>: empty input: the stage before failed; $S is not advanced"
	cmp "$S" "$BATS_TEST_TMPDIR/before"
	# An empty regular file is an empty input too.
	: > "$BATS_TEST_TMPDIR/empty"
	run -1 --separate-stderr proc-cputime --proc "$P" --state "$S" < "$BATS_TEST_TMPDIR/empty"
	cmp "$S" "$BATS_TEST_TMPDIR/before"
}

@test "without --state, an empty input gives an empty output" {
	run --separate-stderr bash -c ': | proc-cputime --proc "$1"' _ "$P"
	assert_success
	assert_output ""
	assert_equal "$stderr" ""
}

@test "kind kernel comes from PF_KTHREAD alone, not from pid 2 or its parent" {
	# A container's pid namespace: pid 2 and its child 3 are ordinary.
	printf '2 (sh) S 1 2 2 0 -1 4194560 0 0 0 0 0 10 0 0 20 0 1 0 1 0 0\n' > "$P/2/stat"
	add_proc 3 worker 1 1 2 /
	sed -i 's/^3 (worker) S 1 /3 (worker) S 2 /' "$P/3/stat"
	# A kernel thread outside kthreadd's children still carries the flag.
	add_proc 4 kworker 1 1 3 /
	sed -i 's/ 0 -1 0 0 / 0 -1 2129984 0 /' "$P/4/stat"
	printf '%s\n' '{"type":"interval","seq":1,"ts":"2026-11-22T00:00:01.000000Z","dt_us":1}' > "$BATS_TEST_TMPDIR/in"
	run --separate-stderr proc-cputime -a --proc "$P" < "$BATS_TEST_TMPDIR/in"
	assert_success
	assert_equal "$(printf '%s\n' "${lines[@]}" |
	    jq -r 'select(.type == "proc" and .pid <= 4) | "\(.pid) \(.kind)"' | tr '\n' ,)" \
	    "1 host,2 host,3 host,4 kernel,"
}

@test "a kernel thread that ends between --state runs keeps kind kernel" {
	add_proc 4 kworker 1 1 3 /
	sed -i 's/ 0 -1 0 0 / 0 -1 2129984 0 /' "$P/4/stat"
	run_state
	advance_node
	rm -r "$P/4"
	run_state
	assert_line --partial '"pid":4,"ppid":1,"starttime":3,"comm":"kworker","cpu_us":0,"state":"terminated","kind":"kernel",'
}

@test "a /proc without a process is an interval of node CPU alone" {
	# The empty process list once reached qsort as a NULL pointer, which
	# the sanitizer build (make check SANITIZE=1) reports as undefined.
	rm -rf "$P"/[0-9]*
	run -0 --separate-stderr proc-cputime --proc "$P" -a -n 1 -i 1ms
	assert_equal "${#lines[@]}" 3
	assert_line -n 1 --regexp '^\{"type":"cpu","seq":1,.*,"dense":true\}$'
	assert_line -n 2 --partial '{"type":"interval","seq":1,'
	assert_equal "$stderr" ""
}

@test "every proc record carries the parent's pid, 0 for init and kthreadd" {
	run_state -a
	advance_node
	rm -r "$P/300"
	run_state -a
	assert_equal "$(printf '%s\n' "${lines[@]}" |
	    jq -r 'select(.type == "proc") | "\(.pid):\(.ppid)"' | tr '\n' ,)" \
	    "1:0,2:0,100:1,200:1,300:1,"
}

# The /proc/PID/stat files that process $1 holds open.
stat_fds() {
	find "/proc/$1/fd" -mindepth 1 -printf '%l\n' 2>/dev/null |
	    grep '^/proc/[0-9]*/stat$' || true
}

@test "live: stat files are kept open up to --keep-open; a process gone is closed and ended" {
	sleep 1000 3>&- &
	child=$!
	start_filter
	send_interval 1
	await_line '"type":"interval","seq":1,'
	stat_fds "$FILTER" | grep -qx "/proc/$child/stat"
	kill -KILL "$child"
	wait "$child" || true
	send_interval 2
	await_line '"type":"interval","seq":2,'
	! stat_fds "$FILTER" | grep -qx "/proc/$child/stat"
	exec 7>&-
	wait "$FILTER"
	run jq -r --argjson p "$child" 'select(.pid == $p) | "\(.seq) \(.state)"' "$BATS_TEST_TMPDIR/out"
	assert_line '2 terminated'
	# At most the cap; none with 0, and none on a --proc tree, whose files
	# tests replace.
	for opts in "5 --keep-open 5" "0 --keep-open 0" "0 --proc $P"; do
		# shellcheck disable=SC2086
		start_filter ${opts#* }
		send_interval 1
		await_line '"type":"interval","seq":1,'
		assert_equal "$(stat_fds "$FILTER" | wc -l)" "${opts%% *}"
		exec 7>&-
		wait "$FILTER"
	done
}

@test "a VM's processes that end between --state runs keep the -uuid as vm_id, not the scope's name" {
	# proc-cputime(1), Identity fields: the state file keeps a VM's fields.
	local scope='/machine.slice/machine-qemu\x2d7\x2dweb\x2d01.scope'
	add_proc 3001 swtpm 1 0 100001 "$scope"
	add_proc 3002 qemu-system-x86 1 0 100001 "$scope/libvirt/emulator"
	printf '%s\0' /usr/bin/swtpm socket --tpm2 > "$P/3001/cmdline"
	printf '%s\0' /usr/bin/qemu-system-x86_64 -name guest=web-01 \
	    -uuid 8e4b3a3c-1c2d-4e5f-8a9b-0c1d2e3f4a5b > "$P/3002/cmdline"
	run_state -a
	advance_node
	# The guest shuts down: the state file's rows alone name its processes.
	rm -r "$P/3001" "$P/3002"
	run_state -a
	assert_success
	run -0 jq -r 'select(.type == "proc" and .pid > 3000) |
	    "\(.pid) \(.state) \(.kind) \(.vm_id) \(.vm_name) \(.hypervisor)"' <<< "$output"
	assert_output - <<-'EOF'
		3001 terminated vm 8e4b3a3c-1c2d-4e5f-8a9b-0c1d2e3f4a5b web-01 qemu
		3002 terminated vm 8e4b3a3c-1c2d-4e5f-8a9b-0c1d2e3f4a5b web-01 qemu
	EOF
}

@test "a VM's saved fields that are not three strings make the row unusable" {
	add_proc 3002 qemu-system-x86 1 0 100001 '/machine.slice/machine-qemu\x2d7\x2dweb\x2d01.scope/libvirt/emulator'
	printf '%s\0' /usr/bin/qemu-system-x86_64 -uuid 8e4b3a3c-1c2d-4e5f-8a9b-0c1d2e3f4a5b > "$P/3002/cmdline"
	run_state
	edit_state '(.data.sampler.procs[] | select(.[0] == 3002) | .[9]) = ["", "web-01", "qemu"]'
	advance_node
	run_state
	assert_success
	assert_equal "$stderr" "proc-cputime: $S: unusable process rows in the state file skipped: 1"
}
