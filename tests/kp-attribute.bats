#!/usr/bin/env bats
# kp-attribute: exact, conserved attribution of each zone's energy.

load test_helper
load proc_helper

setup() {
	IN=$BATS_TEST_TMPDIR/in
	: > "$IN"
}

header() {
	echo '{"type":"header","seq":0,"version":"1.0","producer":"test"}' >> "$IN"
}
# energy SEQ ZONE UJ
energy() {
	printf '{"type":"energy","seq":%s,"zone":"%s","energy_uj":%s,"watts":0,"source":"powercap","estimated":false,"sockets":1}\n' "$1" "$2" "$3" >> "$IN"
}
# cpu SEQ ACTIVE_US TOTAL_US
cpu() {
	printf '{"type":"cpu","seq":%s,"cpu_us":%s,"total_cpu_us":%s,"usage_ratio":0}\n' "$1" "$2" "$3" >> "$IN"
}
# proc SEQ PID CPU_US [STATE]
proc() {
	printf '{"type":"proc","seq":%s,"pid":%s,"starttime":1,"comm":"p%s","cpu_us":%s,"state":"%s","container_id":"c%s"}\n' "$1" "$2" "$2" "$3" "${4:-running}" "$2" >> "$IN"
}
# exited SEQ PPID CPU_US [COUNT [COMM]]: processes born and ended in SEQ
exited() {
	printf '{"type":"exited","seq":%s,"count":%s,"cpu_us":%s,"ppid":%s,"comm":"%s","cgroup":"/system.slice/x.service","kind":"service","unit":"x.service"}\n' "$1" "${4:-3}" "$3" "$2" "${5:-sh}" >> "$IN"
}
# interval SEQ DT_US
interval() {
	printf '{"type":"interval","seq":%s,"ts":"2026-11-22T00:00:0%s.000000Z","dt_us":%s}\n' "$1" "$1" "${2:-1000000}" >> "$IN"
}

# now_interval SEQ: an interval that ends now
now_interval() {
	printf '{"type":"interval","seq":%s,"ts":"%s","dt_us":1000000}\n' "$1" "$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)" >> "$IN"
}

attribute() {
	run --separate-stderr kp-attribute --proc "$FIXTURES/proc-basic" "$@" < "$IN"
}

# field TYPE FIELD [ZONE]: the values of FIELD in records of TYPE, one a line.
field() {
	printf '%s\n' "$output" |
	    jq -r --arg t "$1" --arg z "${3:-package}" \
	    "select(.type == \$t and .zone == \$z) | .$2"
}

@test "usage matches the manual's synopsis" {
	assert_equal "$(usage_synopsis kp-attribute)" \
	    "$(man_synopsis kp-attribute.1)"
}

@test "-h and --help print the usage and the options on stdout, exit 0; --version" {
	assert_help kp-attribute
	run -0 kp-attribute -h
	assert_line -n 0 "usage: kp-attribute [-ah] [--cgroup-root dir] [--denominator node|processes] [--exited sources]"
	assert_line '      --split ratio|baseline          how the active energy is found'
}

@test "unknown options and operands are usage errors that say what was wrong" {
	run -2 --separate-stderr kp-attribute --bogus
	assert_equal "${stderr_lines[0]}" "kp-attribute: unrecognized option '--bogus'"
	run -2 --separate-stderr kp-attribute file
	assert_equal "${stderr_lines[0]}" "kp-attribute: unexpected argument 'file'"
	[[ ${stderr_lines[1]} == "usage: kp-attribute [-ah] "* ]]
}

@test "ratio 0.4 on 100 J gives 40 J active and 60 J idle" {
	header; energy 1 package 100000000; cpu 1 400000 1000000; interval 1
	attribute
	assert_success
	assert_equal "$(field node active_uj)" 40000000
	assert_equal "$(field node idle_uj)" 60000000
	assert_equal "$(field node usage_ratio)" 0.4
}

@test "50 W at ratio 0.5 gives 25 W active; 30 % of active CPU gets 7.5 W" {
	header; energy 1 package 50000000; cpu 1 500000 1000000
	proc 1 42 150000; interval 1 1000000
	attribute
	assert_equal "$(field node active_watts)" 25
	assert_equal "$(field process watts)" 7.5
	assert_equal "$(field process energy_uj)" 7500000
	assert_equal "$(field unattributed energy_uj)" 17500000
	assert_equal "$(field unattributed cpu_us)" 350000
}

@test "readings 100, 150, 200 J at ratio 0.6 give active totals 60, 90, 120 J" {
	header
	for k in 1 2 3; do
		energy $k package $(( k == 1 ? 100000000 : 50000000 ))
		cpu $k 600000 1000000; interval $k
	done
	attribute
	assert_equal "$(field node active_total_uj | tr '\n' ' ')" "60000000 90000000 120000000 "
	assert_equal "$(field node idle_total_uj | tr '\n' ' ')" "40000000 60000000 80000000 "
	assert_equal "$(field node total_uj | tr '\n' ' ')" "100000000 150000000 200000000 "
}

@test "rounding remainders go to the largest, then the lowest pid, exactly" {
	header; energy 1 package 10; cpu 1 3 3
	proc 1 7 1; proc 1 5 1; proc 1 9 1; interval 1
	attribute
	assert_equal "$(field process energy_uj | tr '\n' ' ')" "3 4 3 "
	assert_equal "$(field process pid | tr '\n' ' ')" "7 5 9 "
	assert_equal "$(field unattributed energy_uj)" 0
}

@test "when the processes' CPU exceeds the node's, shares scale down and none is negative" {
	header; energy 1 package 1000; cpu 1 100 100
	proc 1 1 150; proc 1 2 50; interval 1
	attribute
	assert_equal "$(field process energy_uj | tr '\n' ' ')" "750 250 "
	assert_equal "$(field unattributed energy_uj)" 0
}

@test "process + unattributed + idle = measured, for every interval and zone" {
	header
	awk 'BEGIN { srand(7); for (k = 1; k <= 60; k++) {
		for (z = 0; z < 2; z++)
			printf "{\"type\":\"energy\",\"seq\":%d,\"zone\":\"%s\",\"energy_uj\":%d}\n", k, z ? "dram" : "package", int(rand() * 1e9)
		total = 1 + int(rand() * 4e6); active = int(rand() * total)
		printf "{\"type\":\"cpu\",\"seq\":%d,\"cpu_us\":%d,\"total_cpu_us\":%d,\"usage_ratio\":0.5}\n", k, active, total
		n = int(rand() * 40)
		for (p = 1; p <= n; p++)
			printf "{\"type\":\"proc\",\"seq\":%d,\"pid\":%d,\"starttime\":3,\"comm\":\"x\",\"cpu_us\":%d,\"state\":\"running\"}\n", k, p, int(rand() * active / 10)
		printf "{\"type\":\"interval\",\"seq\":%d,\"ts\":\"2026-11-22T00:00:00.000000Z\",\"dt_us\":1000000}\n", k
	} }' >> "$IN"
	attribute
	assert_success
	out=$output
	run jq -s -r '
	    group_by([.seq, .zone])[] | select(.[0].zone != null) |
	    (map(select(.type == "node"))[0]) as $n |
	    (map(select(.type == "process" or .type == "unattributed") | .energy_uj) | add) as $shares |
	    select($shares + $n.idle_uj != $n.energy_uj or $n.active_uj + $n.idle_uj != $n.energy_uj or $shares != $n.active_uj) |
	    "broken at \(.[0].seq) \(.[0].zone)"' <<< "$out"
	assert_output ""
	assert_equal "$(jq -s '[.[] | select(.type == "node")] | length' <<< "$out")" 120
}

@test "without CPU records it samples /proc itself (here across --state runs)" {
	P=$(fixture_copy proc-basic)
	S=$BATS_TEST_TMPDIR/ka.state
	header
	run kp-attribute --proc "$P" --state "$S" < "$IN"
	assert_success
	printf 'cpu  6300 0 2100 80550 1050 0 0 0 0 0\n' > "$P/stat"
	sed -i 's/ 3000 1000 / 3100 1000 /' "$P/100/stat"
	: > "$IN"; energy 1 package 1000000; now_interval 1
	run --separate-stderr kp-attribute --proc "$P" --state "$S" < "$IN"
	assert_success
	assert_equal "$(field node active_uj)" 400000
	assert_equal "$(field process pid)" 100
	assert_equal "$(field process energy_uj)" 100000
	assert_equal "$(field unattributed energy_uj)" 300000
}

# short_and_long OPTS...: one rapl-read --state run over $SY and $P, read by
# kp-attribute sampling /proc itself with OPTS, and by proc-cputime with OPTS
# then kp-attribute; each keeps its own state, both read the same energy.
short_and_long() {
	local d=$BATS_TEST_TMPDIR
	rapl-read --sysfs "$SY" --proc "$P" --state "$d/rr.state" > "$d/rr.out"
	kp-attribute "$@" --proc "$P" --state "$d/short.state" \
	    < "$d/rr.out" > "$d/short.out"
	proc-cputime "$@" --proc "$P" --state "$d/long.state" < "$d/rr.out" |
	    kp-attribute --proc "$P" --state "$d/long.state2" > "$d/long.out"
}

@test "rapl-read | kp-attribute gives the records of rapl-read | proc-cputime | kp-attribute, names included" {
	P=$(fixture_copy proc-identity)
	SY=$(fixture_copy sysfs-1socket)
	short_and_long -a --root "$FIXTURES/node-root"
	printf 'cpu  6300 0 2100 80550 1050 0 0 0 0 0\n' > "$P/stat"
	for pid in 1001 1002 1017; do
		sed -i 's/ 10 5 0 0 / 40 15 0 0 /' "$P/$pid/stat"
	done
	for f in $(find "$SY/devices" -name energy_uj); do
		echo $(($(cat "$f") + 5000000)) > "$f"
	done
	short_and_long -a --root "$FIXTURES/node-root"
	run -0 diff <(grep -v '"type":"header"' "$BATS_TEST_TMPDIR/short.out") \
	    <(grep -v '"type":"header"' "$BATS_TEST_TMPDIR/long.out")
	# Not empty, and named from --root's files: dense, as -a asks, so
	# the idle processes of the tree have records too.
	run -0 jq -r 'select(.type == "process" and .zone == "package" and
	    .cpu_us > 0) | "\(.pid) \(.container_name)"' "$BATS_TEST_TMPDIR/short.out"
	assert_output "$(printf '1001 web\n1002 proxy\n1017 hostnet')"
	run -0 jq -s '[.[] | select(.type == "process" and .zone == "package")] | length' \
	    "$BATS_TEST_TMPDIR/short.out"
	[ "$output" -gt 30 ]
	run -0 jq -r 'select(.type == "node" and .zone == "package") | .dense' \
	    "$BATS_TEST_TMPDIR/short.out"
	assert_output true
}

# sockets PID: the sockets process PID holds open.
sockets() {
	find "/proc/$1/fd" -lname 'socket:*' | wc -l
}

# feed_until FD OUT SEQ LINE...: writes the lines to FD, then waits for
# interval SEQ to come out in OUT.
feed_until() {
	local fd=$1 out=$2 seq=$3
	shift 3
	printf '%s\n' "$@" >&"$fd"
	until grep -q "\"type\":\"interval\",\"seq\":$seq," "$out"; do
		sleep 0.01
	done
}

@test "the exit listeners open at the first interval without a cpu record, never with --state" {
	needs_root
	local out=$BATS_TEST_TMPDIR/out in pid
	local h='{"type":"header","seq":0,"version":"1.2","producer":"test"}'
	local c1='{"type":"cpu","seq":1,"cpu_us":0,"total_cpu_us":100,"usage_ratio":0}'
	local i1='{"type":"interval","seq":1,"dt_us":1000000}'
	local i2='{"type":"interval","seq":2,"dt_us":1000000}'
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	kp-attribute < "$BATS_TEST_TMPDIR/fifo" > "$out" &
	pid=$!
	exec {in}> "$BATS_TEST_TMPDIR/fifo"
	feed_until "$in" "$out" 1 "$h" "$c1" "$i1"
	assert_equal "$(sockets "$pid")" 0
	feed_until "$in" "$out" 2 "$i2"
	# taskstats, and the process events where the kernel has them.
	[ "$(sockets "$pid")" -ge 1 ]
	exec {in}>&-
	wait "$pid"
	: > "$out"
	kp-attribute --state "$BATS_TEST_TMPDIR/ka.state" \
	    < "$BATS_TEST_TMPDIR/fifo" > "$out" &
	pid=$!
	exec {in}> "$BATS_TEST_TMPDIR/fifo"
	feed_until "$in" "$out" 1 "$h" "$i1"
	assert_equal "$(sockets "$pid")" 0
	exec {in}>&-
	wait "$pid"
}

@test "kp-attribute takes proc-cputime's sampling options, and not its clock's" {
	P=$(fixture_copy proc-basic)
	header
	for opt in -a --all "--cgroup-root $BATS_TEST_TMPDIR" "--exited none" \
	    "--keep-open 0" "--pods-log $BATS_TEST_TMPDIR" \
	    "--podman-root $BATS_TEST_TMPDIR" "--root /" \
	    "--taskstats-buffer 65536"; do
		# shellcheck disable=SC2086 # an option and its argument
		run -0 kp-attribute $opt --proc "$P" < "$IN"
	done
	for opt in "-i 1s" "-n 1" --head; do
		# shellcheck disable=SC2086
		run -2 --separate-stderr kp-attribute $opt --proc "$P" < "$IN"
	done
	run -2 --separate-stderr kp-attribute --exited nothing < "$IN"
	assert_equal "$stderr" "kp-attribute: exited sources must be none or a list of parent, cgroup and taskstats: 'nothing'"
}

@test "sampling /proc itself, it accounts exits: a reaping parent's exited record gets its share" {
	P=$(fixture_copy proc-basic)
	S=$BATS_TEST_TMPDIR/ka.state
	header
	run kp-attribute --proc "$P" --state "$S" < "$IN"
	assert_success
	# systemd waited for children never seen: 12 ticks of 400 active.
	advance_node
	set_child_ticks 1 8 4
	: > "$IN"; energy 1 package 1000000; now_interval 1
	run --separate-stderr kp-attribute --proc "$P" --state "$S" < "$IN"
	assert_success
	HZ=$(getconf CLK_TCK)
	assert_equal "$(printf '%s\n' "$output" | jq -c 'select(.type == "exited") |
	    [.zone, .count, .cpu_us, .ppid, .comm, .source, .cgroup, .energy_uj]')" \
	    "[\"package\",0,$(ticks_us 12),1,\"systemd\",\"parent\",\"/init.scope\",12000]"
	assert_equal "$(field unattributed energy_uj)" 388000
}

@test "--state carries cumulative totals across runs" {
	S=$BATS_TEST_TMPDIR/ka.state
	header; energy 1 package 100; cpu 1 1 2; proc 1 4 1; interval 1
	attribute --state "$S"
	assert_equal "$(field node total_uj)" 100
	: > "$IN"; energy 2 package 60; cpu 2 1 2; proc 2 4 1; interval 2
	attribute --state "$S"
	assert_equal "$(field node total_uj)" 160
	assert_equal "$(field node active_total_uj)" 80
	assert_equal "$(field process total_uj)" 80
	assert_equal "$(field unattributed total_uj)" 0
}

@test "--state: the totals of a 1.1 run's meter zone go on in platform (kp-records(5), Versioning)" {
	S=$BATS_TEST_TMPDIR/ka.state
	header; energy 1 meter 100; cpu 1 1 2; proc 1 4 1; interval 1
	attribute --state "$S"
	assert_equal "$(field node total_uj platform)" 100
	assert_equal "$(field node total_uj meter)" ""
	# As a 1.1 kp-attribute saved them: under "meter".
	sed -i 's/"platform"/"meter"/g' "$S"
	run -0 grep -c '"meter"' "$S"
	: > "$IN"; energy 2 platform 60; cpu 2 1 2; proc 2 4 1; interval 2
	attribute --state "$S"
	assert_equal "$(field node total_uj platform)" 160
	assert_equal "$(field process total_uj platform)" 80
}

@test "a terminated process gets its share once, then its totals are forgotten" {
	header
	energy 1 package 100; cpu 1 1 1; proc 1 4 1; interval 1
	energy 2 package 100; cpu 2 1 1; proc 2 4 0 terminated; interval 2
	energy 3 package 100; cpu 3 1 1; proc 3 4 1; interval 3
	attribute
	assert_equal "$(field process state | tr '\n' ' ')" "running terminated running "
	assert_equal "$(field process total_uj | tr '\n' ' ')" "100 100 100 "
}

@test "records it does not consume pass through unchanged and in order" {
	header
	echo '{"type":"mystery","seq":1,  "x": [1, 2]}' >> "$IN"
	energy 1 package 10; cpu 1 1 1
	echo '{"type":"other","seq":1}' >> "$IN"
	interval 1
	attribute
	assert_line -n 0 '{"type":"header","seq":0,"version":"1.0","producer":"test"}'
	assert_line -n 1 '{"type":"mystery","seq":1,  "x": [1, 2]}'
	assert_line -n 2 '{"type":"other","seq":1}'
	assert_line -n 3 --partial '{"type":"node","seq":1,'
	assert_line -n 5 --partial '{"type":"interval","seq":1,'
}

@test "an interval without energy passes its CPU records on as they came" {
	header; cpu 1 1 2; proc 1 4 1; interval 1
	attribute
	assert_success
	assert_output "$(cat "$IN")"
}

@test "a stream cut inside an interval passes its records on and exits 3" {
	header; energy 1 package 10; cpu 1 1 1
	attribute
	assert_failure 3
	assert_equal "$stderr" "kp-attribute: <stdin>:3: the stream ends inside interval 1"
	assert_equal "${#lines[@]}" 3
}

@test "a malformed record is reported with its line and skipped; exit 3" {
	header
	echo '{"type":"energy","seq":1,"energy_uj":5}' >> "$IN"
	energy 1 package 10; cpu 1 1 1
	echo '{"type":"proc","seq":1,"pid":"x","cpu_us":1}' >> "$IN"
	interval 1
	attribute
	assert_failure 3
	assert_equal "${stderr_lines[0]}" 'kp-attribute: <stdin>:2: energy record without a string "zone"'
	# A pid that is not one is the reader's decision (kp-records(5)).
	assert_equal "${stderr_lines[1]}" 'kp-attribute: <stdin>:5: "pid" is not an integer from 1 to 2147483647'
	assert_equal "$(field node energy_uj)" 10
}

@test "a write error is a failure" {
	header; energy 1 package 10; cpu 1 1 1; interval 1
	run -1 --separate-stderr bash -c 'kp-attribute < "$1" > /dev/full' _ "$IN"
	assert_equal "$stderr" "kp-attribute: write error on stdout: No space left on device"
}

@test "the node's usage ratio is the CPU's, not the rounded energy's" {
	header; energy 1 package 10; cpu 1 45 100; interval 1
	attribute
	assert_equal "$(field node usage_ratio)" 0.45
	assert_equal "$(field node active_uj)" 4
}

@test "a running process without CPU time gets no process record" {
	header; energy 1 package 10; cpu 1 1 1; proc 1 4 0; proc 1 5 1; interval 1
	attribute
	assert_equal "$(field process pid)" 5
}

@test "cumulative totals survive a reboot; the /proc baseline does not" {
	P=$(fixture_copy proc-basic)
	S=$BATS_TEST_TMPDIR/ka.state
	header; energy 1 package 100; cpu 1 1 2; interval 1
	run kp-attribute --proc "$P" --state "$S" < "$IN"
	echo 00000000-0000-0000-0000-000000000000 > "$P/sys/kernel/random/boot_id"
	: > "$IN"; energy 2 package 60; cpu 2 1 2; interval 2
	run --separate-stderr kp-attribute --proc "$P" --state "$S" < "$IN"
	assert_success
	assert_equal "$stderr" "kp-attribute: $S: written before a reboot, starting a new baseline"
	assert_equal "$(field node total_uj)" 160
}

@test "--split baseline: idle is the static power, active the rest, never negative" {
	header; energy 1 package 50000000; cpu 1 500000 1000000
	proc 1 42 150000; interval 1 1000000
	energy 2 package 10000000; cpu 2 500000 1000000; interval 2 1000000
	attribute --split baseline --baseline-watts 20
	assert_success
	assert_equal "$(field node idle_uj | tr '\n' ' ')" "20000000 10000000 "
	assert_equal "$(field node active_uj | tr '\n' ' ')" "30000000 0 "
	# 30 % of the node's active CPU time: 30 % of 30 J
	assert_equal "$(field process energy_uj)" 9000000
	assert_equal "$(field unattributed energy_uj | tr '\n' ' ')" "21000000 0 "
}

@test "--baseline-watts per zone; a zone without one has no idle part" {
	header; energy 1 package 50000000; energy 1 dram 5000000
	cpu 1 500000 1000000; interval 1 2000000
	attribute --split baseline --baseline-watts package=10
	assert_equal "$(field node idle_uj package)" 20000000
	assert_equal "$(field node idle_uj dram)" 0
	attribute --split baseline --baseline-watts 1 --baseline-watts package=10
	assert_equal "$(field node idle_uj dram)" 2000000
}

@test "--split baseline needs --baseline-watts, and the reverse" {
	run -2 --separate-stderr kp-attribute --split baseline
	assert_equal "$stderr" "kp-attribute: --split baseline and --baseline-watts go together"
	run -2 --separate-stderr kp-attribute --baseline-watts 3
	run -2 --separate-stderr kp-attribute --split other --baseline-watts 3
	assert_equal "$stderr" "kp-attribute: --split must be 'ratio' or 'baseline': 'other'"
	run -2 --separate-stderr kp-attribute --idle all
	run -2 --separate-stderr kp-attribute --denominator cpu
	run -2 --separate-stderr kp-attribute --max-terminated -1
	run -2 --separate-stderr kp-attribute --min-terminated-energy x
}

@test "--idle proportional shares idle like active and keeps none at node level" {
	header; energy 1 package 100000000; cpu 1 400000 1000000
	proc 1 42 100000; proc 1 43 300000; interval 1
	attribute --idle proportional
	assert_equal "$(field node idle_uj)" 60000000
	assert_equal "$(field node idle_kept_uj)" 0
	assert_equal "$(field process energy_uj | tr '\n' ' ')" "25000000 75000000 "
	assert_equal "$(field process idle_uj | tr '\n' ' ')" "15000000 45000000 "
	assert_equal "$(field process active_uj | tr '\n' ' ')" "10000000 30000000 "
	assert_equal "$(field unattributed energy_uj)" 0
}

@test "--idle none keeps idle at node level: idle_kept_uj is idle_uj" {
	header; energy 1 package 100000000; cpu 1 400000 1000000
	proc 1 42 100000; interval 1
	attribute
	assert_equal "$(field node idle_kept_uj)" 60000000
	assert_equal "$(field process active_uj)" null
}

@test "--denominator processes gives all active energy to the processes, as Kepler" {
	header; energy 1 package 50000000; cpu 1 500000 1000000
	proc 1 42 150000; proc 1 43 50000; interval 1
	attribute --denominator processes
	assert_equal "$(field process energy_uj | tr '\n' ' ')" "18750000 6250000 "
	assert_equal "$(field unattributed energy_uj)" 0
	assert_equal "$(field unattributed cpu_us)" 300000
	attribute
	assert_equal "$(field process energy_uj | tr '\n' ' ')" "7500000 2500000 "
	assert_equal "$(field unattributed energy_uj)" 15000000
}

@test "scaling down is said in the unattributed record" {
	# 100 ms past the node's, beyond the 20 ms that clock ticks round
	# two records by (kp-attribute(1), Arithmetic).
	header; energy 1 package 1000; cpu 1 100000 100000
	proc 1 1 150000; proc 1 2 50000; interval 1
	energy 2 package 1000; cpu 2 100000 100000; proc 2 1 50000; interval 2
	attribute
	assert_equal "$(jq -s -c 'map(select(.type == "unattributed") |
	    [.scaled_down, .excess_cpu_us])' <<< "$output")" \
	    '[[true,100000],[false,null]]'
	# Scaled by 100 / 200: 750 and 250 of interval 1's 1000 microjoules.
	assert_equal "$(field process energy_uj | tr '\n' ' ')" "750 250 500 "
}

@test "records past the node's CPU by clock-tick rounding alone are not scaled down" {
	# Two or three records with CPU may round 2 ticks x sqrt(n), at least
	# 2 ticks: 20 ms at 100 ticks a second; five, 2 x 2 ticks = 40 ms.
	# The record without CPU rounds nothing.
	header; energy 1 package 1000; cpu 1 100000 100000
	proc 1 1 70000; proc 1 2 50000; proc 1 3 0; interval 1
	energy 2 package 1000; cpu 2 100000 100000
	proc 2 1 70000; proc 2 2 50000; proc 2 3 1; interval 2
	energy 3 package 1000; cpu 3 100000 100000
	proc 3 1 50000; proc 3 2 20000; proc 3 3 20000; proc 3 4 20000
	exited 3 1 20000; interval 3
	energy 4 package 1000; cpu 4 100000 100000
	proc 4 1 80000; proc 4 2 20000; proc 4 3 20000; proc 4 4 20000
	exited 4 1 5000; interval 4
	attribute
	assert_success
	# [scaled_down, excess_cpu_us, energy_uj] of each unattributed record:
	# not scaled, the records still share all the active energy and
	# nothing more, and the identity holds.
	assert_equal "$(jq -s -c 'map(select(.type == "unattributed") |
	    [.scaled_down, .excess_cpu_us, .energy_uj])' <<< "$output")" \
	    '[[false,20000,0],[true,20001,0],[false,30000,0],[true,45000,0]]'
	assert_equal "$(jq -s '[.[] | select(.seq == 1 and .type == "process") | .energy_uj] | add' <<< "$output")" 1000
}

@test "scaled_by names the cgroup that passed its counter the most that interval" {
	header; energy 1 package 1000; cpu 1 100000 100000
	proc 1 1 100000
	printf '%s\n' \
	    '{"type":"exited","seq":1,"count":0,"cpu_us":30000,"source":"cgroup","kind":"service","cgroup":"/system.slice/a.service","unit":"a.service","excess_cpu_us":7000}' \
	    '{"type":"exited","seq":1,"count":0,"cpu_us":20000,"source":"cgroup","kind":"service","cgroup":"/system.slice/b.service","unit":"b.service","excess_cpu_us":9000}' \
	    '{"type":"exited","seq":1,"count":0,"cpu_us":10000,"source":"cgroup","kind":"service","cgroup":"/system.slice/c.service","unit":"c.service"}' >> "$IN"
	interval 1
	# Within rounding, nothing is named.
	energy 2 package 1000; cpu 2 100000 100000
	proc 2 1 90000
	printf '%s\n' '{"type":"exited","seq":2,"count":0,"cpu_us":20000,"source":"cgroup","kind":"service","cgroup":"/system.slice/b.service","unit":"b.service","excess_cpu_us":9000}' >> "$IN"
	interval 2
	attribute
	assert_success
	assert_equal "$(field unattributed scaled_down | tr '\n' ' ')" "true false "
	assert_equal "$(field unattributed scaled_by | tr '\n' ' ')" "/system.slice/b.service null "
	assert_equal "$(field unattributed excess_cpu_us | tr '\n' ' ')" "60000 10000 "
}

@test "a process born mid-interval, one dying, and pid reuse are three workloads" {
	header
	energy 1 package 1000; cpu 1 30 100; proc 1 4 10; interval 1
	# pid 4 ends; pid 5 is born with 5 us; the dying slice is the node's
	energy 2 package 1000; cpu 2 30 100; proc 2 4 0 terminated; proc 2 5 5; interval 2
	# pid 4 again, another process: a new starttime
	energy 3 package 1000; cpu 3 30 100
	printf '{"type":"proc","seq":3,"pid":4,"starttime":99,"comm":"new","cpu_us":10,"state":"running"}\n' >> "$IN"
	interval 3
	attribute
	assert_success
	assert_equal "$(printf '%s\n' "$output" | jq -r 'select(.type == "process") | "\(.seq):\(.pid):\(.starttime):\(.state):\(.energy_uj):\(.total_uj)"' | tr '\n' ' ')" \
	    "1:4:1:running:100:100 2:4:1:terminated:0:100 2:5:1:running:50:50 3:4:99:running:100:100 "
	assert_equal "$(field unattributed energy_uj | tr '\n' ' ')" "200 250 200 "
}

@test "an empty interval, zero energy and zero CPU still conserve" {
	header
	energy 1 package 1000; cpu 1 30 100; interval 1
	energy 2 package 0; cpu 2 30 100; proc 2 4 10; interval 2
	energy 3 package 1000; cpu 3 0 100; proc 3 4 0; interval 3
	energy 4 package 1000; cpu 4 0 0; interval 4
	attribute
	assert_success
	assert_equal "$(field node active_uj | tr '\n' ' ')" "300 0 0 0 "
	assert_equal "$(field node idle_uj | tr '\n' ' ')" "700 0 1000 1000 "
	assert_equal "$(field unattributed energy_uj | tr '\n' ' ')" "300 0 0 0 "
	assert_equal "$(field process energy_uj | tr '\n' ' ')" "0 "
}

@test "a process ending in an interval without energy is reported in the next one" {
	header
	energy 1 package 1000; cpu 1 10 10; proc 1 4 10; interval 1
	cpu 2 10 10; proc 2 4 0 terminated; interval 2
	energy 3 package 1000; cpu 3 10 10; proc 3 5 10; interval 3
	energy 4 package 1000; cpu 4 10 10; proc 4 5 10; interval 4
	attribute
	assert_equal "$(printf '%s\n' "$output" | jq -r 'select(.type == "process") | "\(.seq):\(.pid):\(.state):\(.energy_uj):\(.total_uj)"' | tr '\n' ' ')" \
	    "1:4:running:1000:1000 3:5:running:1000:1000 3:4:terminated:0:1000 4:5:running:1000:2000 "
}

@test "--max-terminated and --min-terminated-energy bound what is reported" {
	header
	energy 1 package 1000; cpu 1 10 10; proc 1 4 1; proc 1 5 3; proc 1 6 6; interval 1
	cpu 2 10 10; proc 2 4 0 terminated; proc 2 5 0 terminated; proc 2 6 0 terminated; interval 2
	energy 3 package 1000; cpu 3 10 10; interval 3
	attribute --max-terminated 2
	assert_equal "$(printf '%s\n' "$output" | jq -r 'select(.type == "process" and .seq == 3) | .pid' | sort | tr '\n' ' ')" "5 6 "
	attribute --min-terminated-energy 0.0005
	assert_equal "$(printf '%s\n' "$output" | jq -r 'select(.type == "process" and .seq == 3) | .pid' | tr '\n' ' ')" "6 "
	attribute --max-terminated 0
	assert_equal "$(printf '%s\n' "$output" | jq -r 'select(.type == "process" and .seq == 3) | .pid')" ""
	assert_equal "$(field node total_uj | tail -n 1)" 2000
}

# The run after the state of the test below: pid 4, terminated with the
# awkward identity, comes back with its total; the node's goes on past 2^60.
awkward_next_run() {
	: > "$IN"; header; energy 3 package 1; cpu 3 10 10
	printf '{"type":"proc","seq":3,"pid":5,"starttime":1,"comm":"r","cpu_us":10,"state":"running"}\n' >> "$IN"
	interval 3
	attribute --state "$S"
	assert_success
	assert_equal "$stderr" ""
	assert_line --partial '"total_uj":1152921504606846002,"active_total_uj":1152921504606846002,"idle_total_uj":0}'
	assert_line '{"type":"process","seq":3,"zone":"package","pid":4,"starttime":1,"comm":"q\"b\\s\u0001é😀\t","state":"terminated","container_id":"c\u00e9\"x","cpu_us":0,"energy_uj":0,"watts":0.0,"total_uj":1152921504606846001}'
}

@test "--state: what is written is what is read back: integers past 2^53, escaped and UTF-8 names, byte for byte (kp-attribute(1), Memory)" {
	S=$BATS_TEST_TMPDIR/ka.state
	# a total a double would round (2^60 + 1); an identity with quotes,
	# a backslash, a control character, a tab and UTF-8 of 2 and 4 bytes
	p='"starttime":1,"comm":"q\"b\\s\u0001é😀\t"'
	c='"container_id":"c\u00e9\"x"'
	header; energy 1 package 1152921504606846001; cpu 1 10 10
	printf '{"type":"proc","seq":1,"pid":4,%s,"cpu_us":10,"state":"running",%s}\n' "$p" "$c" >> "$IN"
	printf '{"type":"proc","seq":1,"pid":5,"starttime":1,"comm":"r","cpu_us":0,"state":"running"}\n' >> "$IN"
	interval 1; cpu 2 10 10
	printf '{"type":"proc","seq":2,"pid":4,%s,"cpu_us":0,"state":"terminated",%s}\n' "$p" "$c" >> "$IN"
	interval 2
	attribute --state "$S"
	assert_success
	awkward_next_run
	# loaded and written again unchanged, the same bytes
	cp "$S" "$BATS_TEST_TMPDIR/before"
	: > "$IN"; header; energy 4 package 0; cpu 4 10 10
	printf '{"type":"proc","seq":4,"pid":5,"starttime":1,"comm":"r","cpu_us":10,"state":"running"}\n' >> "$IN"
	interval 4
	attribute --state "$S"
	assert_success
	cmp "$BATS_TEST_TMPDIR/before" "$S"
}

@test "--state: a state file written by the previous version (663a549) goes on: totals past 2^53, escaped and UTF-8 names (kp-attribute(1), --state)" {
	# the first run of the test above, saved by that version's kp-attribute
	S=$BATS_TEST_TMPDIR/ka.state
	cp "$FIXTURES/state/kp-attribute-663a549.state" "$S"
	awkward_next_run
	assert_line '{"type":"process","seq":3,"zone":"package","pid":5,"starttime":1,"comm":"r","state":"running","cpu_us":10,"energy_uj":1,"watts":1e-6,"total_uj":1}'
}

# pad SEQ N: N idle processes, pids from 10 on, that fill a state file.
pad() {
	seq 10 $((9 + $2)) | awk -v seq="$1" '{ printf "{\"type\":\"proc\",\"seq\":%d,\"pid\":%d,\"starttime\":1,\"comm\":\"p\",\"cpu_us\":0,\"state\":\"running\"}\n", seq, $1 }' >> "$IN"
}

@test "--state of 8,000 processes, read entry by entry: brackets and quotes in names, escaped keys, white space, integers past 2^53 read back as written (kp-attribute(1), Memory)" {
	S=$BATS_TEST_TMPDIR/ka.state
	local other=$BATS_TEST_TMPDIR/other.state
	# brackets, a comma and a colon inside strings; quotes, a backslash,
	# a control character and UTF-8 of 2 and 4 bytes; 2^60 + 1
	p='"starttime":1,"comm":"q}]\"{[,:\\s\u0001é😀\t"'
	c='"container_id":"c]}\u00e9\"x"'
	header; energy 1 package 1152921504606846001; cpu 1 10 10
	printf '{"type":"proc","seq":1,"pid":4,%s,"cpu_us":10,"state":"running",%s}\n' "$p" "$c" >> "$IN"
	pad 1 8000; interval 1; cpu 2 10 10
	printf '{"type":"proc","seq":2,"pid":4,%s,"cpu_us":0,"state":"terminated",%s}\n' "$p" "$c" >> "$IN"
	interval 2
	attribute --state "$S"
	assert_success
	[ "$(grep -o '"[0-9]*:1":' "$S" | wc -l)" -eq 8000 ]
	# the same state as another writer could put it: white space
	# between entries (not jq's, which rounds 2^60 + 1), and the first
	# digit of each process key escaped
	sed -e 's/},"/},\n\t "/g; s/^{/{\r\n /' \
	    -e 's/"\([0-9]\)\([0-9]*:1":\)/"\\u003\1\2/g' "$S" > "$other"
	[ "$(grep -o '"\\u003[0-9][0-9]*:1":' "$other" | wc -l)" -eq 8000 ]
	[ "$(wc -l < "$other")" -gt 8000 ]
	: > "$IN"; header; energy 3 package 1; cpu 3 10 10
	printf '{"type":"proc","seq":3,"pid":10,"starttime":1,"comm":"p","cpu_us":10,"state":"running"}\n' >> "$IN"
	interval 3
	attribute --state "$S"
	assert_success
	assert_equal "$stderr" ""
	assert_line '{"type":"process","seq":3,"zone":"package","pid":4,"starttime":1,"comm":"q}]\"{[,:\\s\u0001é😀\t","state":"terminated","container_id":"c]}\u00e9\"x","cpu_us":0,"energy_uj":0,"watts":0.0,"total_uj":1152921504606846001}'
	assert_line '{"type":"process","seq":3,"zone":"package","pid":10,"starttime":1,"comm":"p","state":"running","cpu_us":10,"energy_uj":1,"watts":1e-6,"total_uj":1}'
	local from_s=$output
	attribute --state "$other"
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$output" "$from_s"
	cmp "$S" "$other"
	# loaded and written again unchanged, the same bytes
	cp "$S" "$BATS_TEST_TMPDIR/before"
	: > "$IN"; header; energy 4 package 0; cpu 4 10 10; interval 4
	attribute --state "$S"
	assert_success
	cmp "$BATS_TEST_TMPDIR/before" "$S"
}

@test "the terminated tracker is kept across runs by --state" {
	S=$BATS_TEST_TMPDIR/ka.state
	header; energy 1 package 1000; cpu 1 10 10; proc 1 4 10; interval 1
	cpu 2 10 10; proc 2 4 0 terminated; interval 2
	attribute --state "$S"
	: > "$IN"; energy 3 package 1000; cpu 3 10 10; interval 3
	attribute --state "$S"
	assert_equal "$(printf '%s\n' "$output" | jq -r 'select(.type == "process") | "\(.pid):\(.state):\(.total_uj)"')" "4:terminated:1000"
	: > "$IN"; energy 4 package 1000; cpu 4 10 10; interval 4
	attribute --state "$S"
	assert_equal "$(field process pid)" ""
}

@test "sampling /proc itself refuses an interval that ended long ago" {
	header; energy 1 package 1000; interval 1
	attribute
	assert_failure 3
	assert_regex "$stderr" "^kp-attribute: <stdin>:3: interval 1 ended [0-9]+ s ago, but without cpu records this stage samples /proc now: a recorded stream must carry its own cpu and proc records \(see proc-cputime\(1\)\)$"
}

@test "a state chain of three runs gives the totals of one run" {
	scripts_gen() { "$KP_ROOT/scripts/kp-gen" "$@"; }
	scripts_gen --seed 3 --intervals 30 --processes 20 --churn 100 > "$IN"
	run kp-attribute --proc "$FIXTURES/proc-basic" < "$IN"
	assert_success
	one=$(printf '%s\n' "$output" | grep -v '"type":"interval"')
	S=$BATS_TEST_TMPDIR/ka.state
	chain=
	for part in '1,10' '11,20' '21,30'; do
		jq -c --argjson r "[$part]" 'select(.seq == 0 or (.seq >= $r[0] and .seq <= $r[1]))' "$IN" > "$BATS_TEST_TMPDIR/part"
		run kp-attribute --proc "$FIXTURES/proc-basic" --state "$S" < "$BATS_TEST_TMPDIR/part"
		assert_success
		chain+=$(printf '%s\n' "$output" | grep -v '"type":"interval"' | grep -v '"type":"header"')$'\n'
	done
	assert_equal "$(printf '%s\n' "$one" | grep -v '"type":"header"')" "${chain%$'\n'}"
}

@test "records it does not consume are checked too, and pass through as they came" {
	header
	# Broken after its type and seq: rejected, as every stage rejects it.
	echo '{"type":"mystery","seq":1,"x":[1,}' >> "$IN"
	echo '{ "type": "spaced", "seq": 1 }' >> "$IN"
	energy 1 package 10; cpu 1 1 1; interval 1
	attribute
	assert_failure 3
	assert_equal "$stderr" "kp-attribute: <stdin>:2: not JSON: a value is expected"
	assert_line -n 1 '{ "type": "spaced", "seq": 1 }'
	# A consumed record is parsed in full.
	echo '{"type":"proc","seq":2,"pid":3,"cpu_us":1,"x":[1,}' >> "$IN"
	energy 2 package 10; cpu 2 1 1; interval 2
	attribute
	assert_failure 3
	assert_equal "$stderr" "kp-attribute: <stdin>:2: not JSON: a value is expected
kp-attribute: <stdin>:7: not JSON: a value is expected"
}

@test "per-socket energy records are split and totalled per socket, and keep their socket" {
	header
	for k in 1 2; do
		printf '{"type":"energy","seq":%s,"zone":"package","socket":%s,"energy_uj":%s,"watts":0,"source":"powercap","estimated":false}\n' \
		    $k 0 30000000 $k 1 10000000 >> "$IN"
		cpu $k 500000 1000000; proc $k 42 250000; interval $k
	done
	attribute
	assert_success
	sock() {
		printf '%s\n' "$output" | jq -r --arg t "$1" --argjson s "$2" \
		    "select(.type == \$t and .socket == \$s) | .$3" | tr '\n' ' '
	}
	assert_equal "$(sock node 0 total_uj)" "30000000 60000000 "
	assert_equal "$(sock node 1 total_uj)" "10000000 20000000 "
	assert_equal "$(sock process 0 energy_uj)" "7500000 7500000 "
	assert_equal "$(sock process 1 total_uj)" "2500000 5000000 "
	assert_equal "$(sock unattributed 1 energy_uj)" "2500000 2500000 "
	# every record of the zone names its socket
	assert_equal "$(printf '%s\n' "$output" | jq -s 'map(select(.zone == "package" and .socket == null)) | length')" 0
}

@test "per-socket totals are kept apart across --state runs" {
	local state=$BATS_TEST_TMPDIR/state k
	for k in 1 2 3; do
		: > "$IN"
		header
		printf '{"type":"energy","seq":%s,"zone":"package","socket":%s,"energy_uj":%s,"watts":0,"source":"powercap","estimated":false}\n' \
		    $k 0 3000000 $k 1 1000000 >> "$IN"
		cpu $k 500000 1000000; proc $k 42 250000; interval $k
		run --separate-stderr kp-attribute --proc "$FIXTURES/proc-basic" --state "$state" < "$IN"
		assert_success
	done
	assert_equal "$(printf '%s\n' "$output" | jq -r 'select(.type == "node") | "\(.socket):\(.total_uj)"' | tr '\n' ' ')" "0:9000000 1:3000000 "
}

@test "--baseline-watts names one socket as zone/socket; a bare baseline is each socket's" {
	header
	printf '{"type":"energy","seq":1,"zone":"package","socket":%s,"energy_uj":30000000}\n' 1 0 >> "$IN"
	cpu 1 500000 1000000; interval 1
	attribute --split baseline --baseline-watts package/1=5 --baseline-watts 2
	assert_success
	assert_equal "$(printf '%s\n' "$output" | jq -r 'select(.type == "node") | "\(.socket):\(.idle_uj)"' | tr '\n' ' ')" "1:5000000 0:2000000 "
}

@test "CPU times whose sum passes 2^60 are rejected; the rest still conserves" {
	header; energy 1 package 100; cpu 1 100 100
	proc 1 7 1152921504606846976; proc 1 8 1; interval 1
	for denominator in node processes; do
		attribute --denominator "$denominator"
		assert_failure 3
		assert_equal "$stderr" "kp-attribute: <stdin>:5: proc record with a value that takes a sum past 2^60 or a total past 2^63-1"
		assert_equal "$(field process pid)" 7
		assert_equal "$(printf '%s\n' "$output" | jq -s '[.[] | select(.type == "process" or .type == "unattributed") | .energy_uj] | add')" 100
	done
}

@test "energy that would take its zone's interval past 2^60 is rejected" {
	header; energy 1 package 1152921504606846976; energy 1 package 1; cpu 1 1 1
	proc 1 7 1; interval 1
	attribute
	assert_failure 3
	assert_equal "$stderr" "kp-attribute: <stdin>:3: energy record with a value that takes a sum past 2^60 or a total past 2^63-1"
	# jq reads integers as doubles: these are compared as text.
	assert_equal "$(grep -o '^{"type":"node".*"energy_uj":[0-9]*' <<< "$output" | sed 's/.*"energy_uj"://')" \
	    1152921504606846976
}

@test "energy that would overflow a cumulative total is rejected" {
	local k
	header
	# 2^60 a record at most (kp-records(5)): the 8th passes 2^63-1.
	for k in $(seq 8); do
		energy "$k" package 1152921504606846976; cpu "$k" 1 1; proc "$k" 7 1
		printf '{"type":"interval","seq":%s,"dt_us":1000000}\n' "$k" >> "$IN"
	done
	attribute
	assert_failure 3
	assert_equal "$stderr" "kp-attribute: <stdin>:30: energy record with a value that takes a sum past 2^60 or a total past 2^63-1"
	# jq reads integers as doubles: these are compared as text.
	assert_equal "$(grep -o '^{"type":"\(node\|process\)".*"total_uj":[0-9]*' <<< "$output" | tail -n 2 | sed 's/.*"total_uj"://' | tr '\n' ' ')" \
	    "8070450532247928832 8070450532247928832 "
}

@test "totals in a state file beyond their zone's node total are left out" {
	S=$BATS_TEST_TMPDIR/ka.state
	header; energy 1 package 100; cpu 1 1 1; proc 1 4 1; interval 1
	attribute --state "$S"
	sed 's/"4:1":{"package":100}/"4:1":{"package":101}/' "$S" > "$S.new"
	mv "$S.new" "$S"
	: > "$IN"; energy 2 package 100; cpu 2 1 1; proc 2 4 1; interval 2
	attribute --state "$S"
	assert_success
	assert_equal "$stderr" "kp-attribute: $S: unusable totals of process '4:1' in the state file, left out"
	assert_equal "$(field process total_uj)" 100
}

@test "a consumed record that is not JSON, or not UTF-8, is rejected, not written" {
	local bad=(- "not JSON: a value is expected"
	    01 "not JSON: ',' or the end of an object or array is expected"
	    1. "not JSON: a digit must follow '.'"
	    '"\xff"' "a string is not valid UTF-8"
	    '"\xe2\x82"' "a string is not valid UTF-8")
	local b
	for ((b = 0; b < ${#bad[@]}; b += 2)); do
		: > "$IN"; energy 1 package 100; cpu 1 100 100
		printf '{"type":"proc","seq":1,"pid":7,"cpu_us":50,"comm":%b}\n' "${bad[b]}" >> "$IN"
		proc 1 8 50; interval 1
		attribute
		assert_failure 3
		assert_equal "$stderr" "kp-attribute: <stdin>:3: ${bad[b + 1]}"
		assert_equal "$(field process pid)" 8
	done
	: > "$IN"; energy 1 package 100; cpu 1 100 100
	echo '{"type":"proc","seq":1,"pid":7,"cpu_us":50,"x":[-0.5e+3,1E9,0],"comm":"\u00e9é"}' >> "$IN"
	interval 1
	attribute
	assert_success
	assert_equal "$(field process comm)" "éé"
}

@test "proc records in an interval without a cpu record pass on, reported" {
	header; energy 1 package 100
	echo '{"type":"proc","seq":1,"pid":4242,"cpu_us":50}' >> "$IN"
	now_interval 1
	attribute
	assert_failure 3
	assert_equal "$stderr" "kp-attribute: <stdin>:4: interval 1 has 1 proc record(s) but no cpu record: they pass on unattributed (see kp-records(5))"
	# Passed on as it came, and before the interval's node record.
	assert_line -n 1 '{"type":"proc","seq":1,"pid":4242,"cpu_us":50}'
	assert_line -n 2 --partial '{"type":"node","seq":1,'
	assert_equal "$(field node energy_uj)" 100
}

@test "--max-terminated leaves out the terminated process with the least energy" {
	header
	energy 1 package 100; cpu 1 100 100; proc 1 7 90; proc 1 9 10; interval 1
	cpu 2 100 100; proc 2 7 0 terminated; interval 2
	cpu 3 100 100; proc 3 9 0 terminated; interval 3
	energy 4 package 100; cpu 4 100 100; interval 4
	attribute --max-terminated 1
	assert_success
	assert_equal "$(printf '%s\n' "$output" | jq -r 'select(.type == "process" and .seq == 4) | "\(.pid) \(.total_uj)"')" "7 90"
	: > "$IN"; header
	energy 1 package 100; cpu 1 100 100; proc 1 9 10; proc 1 7 90; interval 1
	cpu 2 100 100; proc 2 9 0 terminated; interval 2
	cpu 3 100 100; proc 3 7 0 terminated; interval 3
	energy 4 package 100; cpu 4 100 100; interval 4
	attribute --max-terminated 1
	assert_equal "$(printf '%s\n' "$output" | jq -r 'select(.type == "process" and .seq == 4) | "\(.pid) \(.total_uj)"')" "7 90"
}

@test "after a reboot a process's totals start from zero, the node's go on" {
	P=$(fixture_copy proc-basic)
	S=$BATS_TEST_TMPDIR/ka.state
	header; energy 1 package 100; cpu 1 1 1; proc 1 4 1; interval 1
	run kp-attribute --proc "$P" --state "$S" < "$IN"
	echo 00000000-0000-0000-0000-000000000000 > "$P/sys/kernel/random/boot_id"
	: > "$IN"; energy 2 package 60; cpu 2 1 1; proc 2 4 1; interval 2
	run --separate-stderr kp-attribute --proc "$P" --state "$S" < "$IN"
	assert_success
	assert_equal "$(field process total_uj)" 60
	assert_equal "$(field node total_uj)" 160
}

@test "after a reboot a terminated process still waiting is reported, and it is said" {
	P=$(fixture_copy proc-basic)
	S=$BATS_TEST_TMPDIR/ka.state
	# pid 4 ends in interval 2, which has no energy: it waits.
	header; energy 1 package 100; cpu 1 1 1; proc 1 4 1; interval 1
	cpu 2 1 1; proc 2 4 0 terminated; interval 2
	run kp-attribute --proc "$P" --state "$S" < "$IN"
	refute_line --regexp '"type":"process".*"state":"terminated"'
	echo 00000000-0000-0000-0000-000000000000 > "$P/sys/kernel/random/boot_id"
	: > "$IN"; energy 3 package 60; cpu 3 1 1; interval 3
	run --separate-stderr kp-attribute --proc "$P" --state "$S" < "$IN"
	assert_success
	assert_equal "$stderr" "kp-attribute: $S: written before a reboot, starting a new baseline"
	assert_equal "$(field process state)" terminated
	assert_equal "$(field process pid)" 4
	assert_equal "$(field process total_uj)" 100
}

@test "a terminated process whose stored identity is not JSON members is left out" {
	S=$BATS_TEST_TMPDIR/ka.state
	header; energy 1 package 100; cpu 1 1 1; proc 1 4 1; interval 1
	attribute --state "$S"
	edit_state '.data.terminated = [{"id": "GARBAGE", "totals": {}}, {"id": ",\"pid\":5", "totals": {}}]'
	: > "$IN"; energy 2 package 100; cpu 2 1 1; interval 2
	attribute --state "$S"
	assert_success
	assert_equal "$stderr" "kp-attribute: $S: a terminated process whose identity is not JSON members in the state file, left out"
	refute_output --partial GARBAGE
	printf '%s\n' "$output" | jq -e . > /dev/null
	assert_equal "$(field process pid)" 5
}

@test "64 zones are split apart; an energy record of a 65th is reported" {
	header
	for z in $(seq 0 64); do energy 1 "z$z" 100; done
	cpu 1 1 1; proc 1 4 1; interval 1
	attribute
	assert_failure 3
	assert_equal "$stderr" "kp-attribute: <stdin>:66: energy record of a zone beyond the first 64: left out (see kp-attribute(1))"
	assert_equal "$(printf '%s\n' "$output" | jq -s '[.[] | select(.type == "process")] | length')" 64
	assert_equal "$(field process energy_uj z63)" 100
}

@test "a zone whose name with its socket passes 31 bytes is reported and left out" {
	local z=abcdefghijklmnopqrstuvwxyz01234
	header
	printf '{"type":"energy","seq":1,"zone":"%s","socket":0,"energy_uj":100}\n' "$z" >> "$IN"
	printf '{"type":"energy","seq":1,"zone":"%s","energy_uj":100}\n' "$z" >> "$IN"
	cpu 1 1 1; interval 1
	attribute
	assert_failure 3
	assert_equal "$stderr" "kp-attribute: <stdin>:2: energy record whose zone/socket passes 31 bytes: left out (see kp-attribute(1))"
	assert_equal "$(field node energy_uj "$z")" 100
}

@test "a record whose seq is not its interval's is reported and skipped" {
	header; energy 1 package 100; cpu 1 1 1; interval 1
	energy 1 package 100; cpu 2 1 1; proc 3 4 1; interval 2
	attribute
	assert_failure 3
	# The reader's rules (kp-records(5)): interval 3 cuts interval 2
	# short, whose records pass on unattributed; interval 2's record
	# comes too late, and the stream ends inside interval 3.
	assert_equal "$stderr" "kp-attribute: <stdin>:5: energy record of interval 1, which has ended: a replay or a disorder
kp-attribute: <stdin>:7: interval 2 has no interval record
kp-attribute: <stdin>:8: interval record of interval 2 among records of interval 3
kp-attribute: <stdin>:8: the stream ends inside interval 3"
	assert_equal "$(field node seq)" 1
	assert_line -n 4 '{"type":"cpu","seq":2,"cpu_us":1,"total_cpu_us":1,"usage_ratio":0}'
	: > "$IN"; header; energy 3 package 100; cpu 3 1 1; interval 2
	attribute
	assert_failure 3
	assert_equal "$stderr" "kp-attribute: <stdin>:4: interval record of interval 2 among records of interval 3
kp-attribute: <stdin>:4: the stream ends inside interval 3"
	assert_equal "$(field node seq)" ""
	assert_line -n 1 '{"type":"energy","seq":3,"zone":"package","energy_uj":100,"watts":0,"source":"powercap","estimated":false,"sockets":1}'
}

@test "a dense stream: every live process written, 0 uJ when idle; an absent one forgotten" {
	local S=$BATS_TEST_TMPDIR/ka.state
	"$KP_ROOT/scripts/kp-gen" --seed 7 --intervals 40 --processes 10 \
	    --churn 100 --dense 1 | grep -v '"state":"terminated"' > "$IN"
	run -0 --separate-stderr kp-attribute --proc "$FIXTURES/proc-basic" \
	    --state "$S" < "$IN"
	# 10 live processes, each with a record in each zone each interval.
	assert_equal "$(jq -s -c '[.[] | select(.type == "process")] |
	    group_by(.seq) | map(length) | unique' <<< "$output")" '[20]'
	assert_line --regexp '^\{"type":"node",.*"dense":true,'
	# Those that ended without a word are not held: 10 in the state.
	assert_equal "$(jq '.data.procs | length' "$S")" 10
	# A sparse stream holds them all, as it cannot know.
	"$KP_ROOT/scripts/kp-gen" --seed 7 --intervals 40 --processes 10 \
	    --churn 100 | grep -v '"state":"terminated"' > "$IN"
	rm -f "$S"
	run -0 --separate-stderr kp-attribute --proc "$FIXTURES/proc-basic" \
	    --state "$S" < "$IN"
	[ "$(jq '.data.procs | length' "$S")" -gt 20 ]
}

@test "a sparse stream that never says a process ended holds at most 20000, inside an interval too" {
	awk 'BEGIN {
		for (k = 1; k <= 2; k++) {
			printf "{\"type\":\"energy\",\"seq\":%d,\"zone\":\"package\",\"energy_uj\":24000}\n", k
			printf "{\"type\":\"cpu\",\"seq\":%d,\"cpu_us\":12000,\"total_cpu_us\":12000,\"usage_ratio\":1}\n", k
			for (i = 0; i < 12000; i++)
				printf "{\"type\":\"proc\",\"seq\":%d,\"pid\":%d,\"starttime\":%d,\"cpu_us\":1}\n", k, i + 2, k
			printf "{\"type\":\"interval\",\"seq\":%d,\"dt_us\":1000000}\n", k
		}
	}' > "$IN"
	local S=$BATS_TEST_TMPDIR/ka.state
	run -0 --separate-stderr kp-attribute --proc "$FIXTURES/proc-basic" \
	    --state "$S" < "$IN"
	# Interval 2's 8001st new process would be the 20001st: interval 1's
	# 12000 go first, said at interval 2's interval record, line 24006.
	assert_equal "$stderr" "kp-attribute: <stdin>:24006: 20000 processes without an end, 20000 at most: 12000 let go, those seen least recently are forgotten, and their totals start again if they come back"
	assert_equal "$(jq '.data.procs | length' "$S")" 12000
	# Every microjoule is still given: 2 each.
	assert_equal "$(jq -s '[.[] | select(.type == "process") | .energy_uj] | add' <<< "$output")" 48000
}

@test "--state with an empty input is an error that advances nothing" {
	local S=$BATS_TEST_TMPDIR/ka.state
	header; energy 1 package 100; cpu 1 1 1; proc 1 4 1; interval 1
	attribute --state "$S"
	cp "$S" "$BATS_TEST_TMPDIR/before"
	run -1 --separate-stderr kp-attribute --proc "$FIXTURES/proc-basic" \
	    --state "$S" < /dev/null
	assert_equal "$stderr" "kp-attribute: <stdin>: empty input: the stage before failed; $S is not advanced"
	cmp "$S" "$BATS_TEST_TMPDIR/before"
}

# Exited records (kp-attribute(1), "Exited records"): processes born and
# ended inside an interval.

# xfield FIELD [ZONE]: FIELD of the exited records, on one line.
xfield() {
	field exited "$1" "${2:-package}" | tr '\n' ' '
}

@test "exited records get energy as processes do and are written on per zone" {
	header; energy 1 package 100; energy 1 dram 10
	cpu 1 30 60; proc 1 7 10; exited 1 7 10 120 cc1; interval 1
	attribute
	assert_success
	# As the worked example, with pid 9 an exited record: 17, 17, 16.
	assert_equal "$(field process energy_uj)" 17
	assert_equal "$(xfield energy_uj)" "17 "
	assert_equal "$(field unattributed energy_uj)" 16
	assert_equal "$(field unattributed cpu_us)" 10
	assert_equal "$(xfield energy_uj dram)" "2 "
	# All its members kept, zone and share added; no total, no pid.
	assert_line '{"type":"exited","seq":1,"zone":"package","count":120,"ppid":7,"comm":"cc1","cgroup":"/system.slice/x.service","kind":"service","unit":"x.service","cpu_us":10,"energy_uj":17,"watts":1.7e-5}'
	# Written after the processes, before the unattributed record.
	assert_equal "$(jq -r '"\(.type) \(.zone)"' <<< "$output" | sed -n 2,6p | tr '\n' ',')" \
	    "node package,process package,exited package,unattributed package,node dram,"
}

@test "exited CPU time is in the denominator: process + exited + unattributed + idle = energy" {
	header; energy 1 package 1000; cpu 1 100 100
	proc 1 1 40; exited 1 1 20; exited 1 1 0 1 true; interval 1
	energy 2 package 1000; cpu 2 100 100
	proc 2 1 100; exited 2 1 50; interval 2
	attribute
	assert_success
	assert_equal "$(field process energy_uj | tr '\n' ' ')" "400 667 "
	# One exited record with no CPU time still gets its record, with 0.
	assert_equal "$(xfield energy_uj)" "200 0 333 "
	assert_equal "$(field unattributed energy_uj | tr '\n' ' ')" "400 0 "
	# Processes and exited records over the node's CPU by less than
	# clock ticks round: reported, not scaled down.
	assert_equal "$(field unattributed scaled_down | tr '\n' ' ')" "false false "
	assert_equal "$(field unattributed excess_cpu_us | tr '\n' ' ')" "null 50 "
}

@test "rounding: a tie goes to processes, then exited records in order, then unattributed" {
	header; energy 1 package 10; cpu 1 4 4
	proc 1 9 1; exited 1 2 1; exited 1 3 1; interval 1
	attribute
	# 10 / 4 = 2.5 each: the two microjoules left go to pid 9 and the
	# first exited record, even though its parent's pid is lower.
	assert_equal "$(field process energy_uj)" 3
	assert_equal "$(xfield energy_uj)" "3 2 "
	assert_equal "$(field unattributed energy_uj)" 2
}

@test "exited records under every split: proportional idle, a baseline, Kepler's denominator" {
	header; energy 1 package 100000000; cpu 1 400000 1000000
	proc 1 42 100000; exited 1 42 300000; interval 1
	attribute --idle proportional
	assert_equal "$(xfield energy_uj)" "75000000 "
	assert_equal "$(xfield idle_uj)" "45000000 "
	assert_equal "$(xfield active_uj)" "30000000 "
	assert_equal "$(field node idle_kept_uj)" 0
	attribute --denominator processes
	assert_equal "$(xfield energy_uj)" "30000000 "
	assert_equal "$(field process energy_uj)" 10000000
	assert_equal "$(field unattributed energy_uj)" 0
	attribute --split baseline --baseline-watts 80
	# 80 J idle, 20 J active over the node's 400 ms: 300 ms is 15 J.
	assert_equal "$(xfield energy_uj)" "15000000 "
	assert_equal "$(xfield active_uj)" "null "
}

@test "per-socket energy: an exited record per socket, each naming it" {
	header
	printf '{"type":"energy","seq":1,"zone":"package","socket":%s,"energy_uj":%s}\n' 0 3000 1 1000 >> "$IN"
	cpu 1 100 100; proc 1 5 50; exited 1 5 50; interval 1
	attribute
	assert_success
	assert_equal "$(jq -r 'select(.type == "exited") | "\(.socket):\(.energy_uj)"' <<< "$output" | tr '\n' ' ')" "0:1500 1:500 "
}

@test "exited records are no processes: no totals, no tracker, nothing in the state" {
	local S=$BATS_TEST_TMPDIR/ka.state
	header
	# Dense: pid 4 is the only live process; the exited records, whose
	# parent it is, hold nothing past their interval.
	printf '{"type":"cpu","seq":%s,"cpu_us":100,"total_cpu_us":100,"usage_ratio":1,"dense":true}\n' 1 >> "$IN"
	energy 1 package 100; proc 1 4 50; exited 1 4 50; interval 1
	# Ended in an interval without energy: passed on as they came, and
	# not reported later, as a terminated process would be.
	cpu 2 100 100; exited 2 4 100 7 late; interval 2
	energy 3 package 100; cpu 3 100 100; proc 3 4 100; interval 3
	attribute --state "$S"
	assert_success
	assert_equal "$(jq -r 'select(.type == "exited") | "\(.seq) \(.comm) \(.energy_uj)"' <<< "$output" | tr '\n' ',')" \
	    "1 sh 50,2 late null,"
	assert_line '{"type":"exited","seq":2,"count":7,"cpu_us":100,"ppid":4,"comm":"late","cgroup":"/system.slice/x.service","kind":"service","unit":"x.service"}'
	refute_output --partial '"type":"exited","seq":3'
	assert_equal "$(jq -c '.data.procs | keys' "$S")" '["4:1"]'
	assert_equal "$(jq -c '.data.terminated' "$S")" '[]'
	assert_equal "$(field process total_uj | tr '\n' ' ')" "50 150 "
}

@test "an exited record with a zone is kp-attribute's own: it passes on as it came" {
	header; energy 1 package 100; cpu 1 100 100
	echo '{"type":"exited","seq":1,"zone":"package","count":3,"cpu_us":50,"ppid":4,"comm":"sh","energy_uj":50,"watts":5e-5}' >> "$IN"
	interval 1
	attribute
	assert_success
	assert_line -n 1 '{"type":"exited","seq":1,"zone":"package","count":3,"cpu_us":50,"ppid":4,"comm":"sh","energy_uj":50,"watts":5e-5}'
	assert_equal "$(field unattributed energy_uj)" 100
}

@test "exited records in an interval without a cpu record pass on, reported" {
	header; energy 1 package 100
	echo '{"type":"exited","seq":1,"count":3,"cpu_us":50,"ppid":4,"comm":"sh"}' >> "$IN"
	now_interval 1
	attribute
	assert_failure 3
	assert_equal "$stderr" "kp-attribute: <stdin>:4: interval 1 has 1 exited record(s) but no cpu record: they pass on unattributed (see kp-records(5))"
	assert_line -n 1 '{"type":"exited","seq":1,"count":3,"cpu_us":50,"ppid":4,"comm":"sh"}'
	refute_line --regexp '"type":"exited".*"zone"'
}

@test "exited CPU times whose sum with the processes' passes 2^60 are rejected" {
	header; energy 1 package 100; cpu 1 100 100
	proc 1 7 1152921504606846969; exited 1 7 8; exited 1 7 7; interval 1
	attribute
	assert_failure 3
	assert_equal "$stderr" "kp-attribute: <stdin>:5: exited record with a value that takes a sum past 2^60 or a total past 2^63-1"
	assert_equal "$(xfield cpu_us)" "7 "
	assert_equal "$(printf '%s\n' "$output" | jq -s '[.[] | select(.type == "process" or .type == "exited" or .type == "unattributed") | .energy_uj] | add')" 100
}

@test "with exited records, process + exited + unattributed + idle kept = measured in every mode" {
	header
	awk 'BEGIN { srand(11); for (k = 1; k <= 60; k++) {
		for (z = 0; z < 2; z++)
			printf "{\"type\":\"energy\",\"seq\":%d,\"zone\":\"%s\",\"energy_uj\":%d}\n", k, z ? "dram" : "package", int(rand() * 1e9)
		total = 1 + int(rand() * 4e6); active = int(rand() * total)
		printf "{\"type\":\"cpu\",\"seq\":%d,\"cpu_us\":%d,\"total_cpu_us\":%d,\"usage_ratio\":0.5}\n", k, active, total
		n = int(rand() * 20)
		for (p = 1; p <= n; p++)
			printf "{\"type\":\"proc\",\"seq\":%d,\"pid\":%d,\"starttime\":3,\"comm\":\"x\",\"cpu_us\":%d,\"state\":\"running\"}\n", k, p, int(rand() * active / 10)
		n = int(rand() * 20)
		for (p = 1; p <= n; p++)
			printf "{\"type\":\"exited\",\"seq\":%d,\"count\":%d,\"cpu_us\":%d,\"ppid\":%d,\"comm\":\"y\"}\n", k, 1 + p, int(rand() * active / 8), p
		printf "{\"type\":\"interval\",\"seq\":%d,\"ts\":\"2026-11-22T00:00:00.000000Z\",\"dt_us\":1000000}\n", k
	} }' >> "$IN"
	for opts in "" "--idle proportional" "--denominator processes" \
	    "--split baseline --baseline-watts 300"; do
		# shellcheck disable=SC2086
		attribute $opts
		assert_success
		run jq -s -r '
		    group_by([.seq, .zone])[] | select(.[0].zone != null) |
		    (map(select(.type == "node"))[0]) as $n |
		    (map(select(.type == "process" or .type == "exited" or .type == "unattributed") | .energy_uj) | add) as $shares |
		    select($shares + $n.idle_kept_uj != $n.energy_uj) |
		    "broken at \(.[0].seq) \(.[0].zone)"' <<< "$output"
		assert_output ""
	done
	attribute
	[ "$(jq -s '[.[] | select(.type == "exited" and .energy_uj > 0)] | length' <<< "$output")" -gt 500 ]
}

@test "exited records of an interval cut short, or without energy, pass on as they came" {
	header; energy 1 package 100; cpu 1 100 100; exited 1 4 50
	energy 2 package 100; cpu 2 100 100; exited 2 4 60; interval 2
	cpu 3 100 100; exited 3 4 70; interval 3
	energy 4 package 100; cpu 4 100 100; exited 4 4 80
	attribute
	assert_failure 3
	assert_equal "$stderr" "kp-attribute: <stdin>:5: interval 1 has no interval record
kp-attribute: <stdin>:14: the stream ends inside interval 4"
	# 1 cut short, 3 without energy, 4 without an end: as they came.
	for us in 50 70 80; do
		assert_line "$(grep "\"cpu_us\":$us," "$IN")"
	done
	assert_equal "$(xfield cpu_us)" "60 "
}

@test "an estimate's node record says so: source, estimated, and the model with what it was given (kp-attribute(1), OUTPUT)" {
	run -0 --separate-stderr kp-attribute <"$FIXTURES/streams/model.ndjson"
	assert_equal "$(printf '%s\n' "$output" | jq -r 'select(.type == "node" and .zone == "platform") | [.source, .estimated, .model, .threads, .sockets] | @csv')" \
	    "$(printf '"model",true,"amd-zen4",2,1\n"model",true,"amd-zen4",2,1')"
	# The platform zone is split like any zone, and conserves.
	assert_equal "$(field process energy_uj platform | paste -sd+)" 1326598+442200+810000+270000
	assert_equal "$(printf '%s\n' "$output" | jq -s '[.[] | select(.type == "process" or .type == "unattributed") | .energy_uj] | add')" \
	    "$(printf '%s\n' "$output" | jq -s '[.[] | select(.type == "node") | .active_uj] | add')"
	# kp-aggregate passes the node record on as it came.
	run -0 bash -c 'kp-attribute <"$1" | kp-aggregate | grep "\"type\":\"node\"" | jq -r .model' _ "$FIXTURES/streams/model.ndjson"
	assert_output "$(printf 'amd-zen4\namd-zen4')"
}

@test "a 1.1 stream's meter is split as platform, its source kept (kp-records(5), Versioning)" {
	run -0 --separate-stderr kp-attribute <"$FIXTURES/streams/meter-1.1.ndjson"
	assert_equal "$(printf '%s\n' "$output" | jq -r 'select(.type == "node" and .zone == "platform") | [.source, .estimated, .model] | @csv')" \
	    "$(printf '"hwmon",false,\n"hwmon",false,')"
	assert_equal "$(field node zone meter)" ""
	assert_equal "$(field process comm platform | paste -sd' ')" "nginx sshd nginx sshd"
}

@test "an interval past a MiB of lines waits in an unlinked file of TMPDIR, read back whole" {
	"$KP_ROOT/scripts/kp-gen" --seed 5 --intervals 1 --processes 8000 \
	    --dense 1 > "$IN"
	[ "$(wc -c < "$IN")" -gt $((2 << 20)) ]
	mkdir "$BATS_TEST_TMPDIR/tmp"
	TMPDIR=$BATS_TEST_TMPDIR/tmp run -0 --separate-stderr kp-attribute < "$IN"
	assert_equal "$(ls -A "$BATS_TEST_TMPDIR/tmp")" ""
	# Each process record carries its proc record's members, in order.
	run -0 diff <(jq -c 'select(.type == "proc") | [.pid, .comm, .cgroup, .cpu_us]' "$IN") \
	    <(jq -c 'select(.type == "process" and .zone == "dram") | [.pid, .comm, .cgroup, .cpu_us]' <<< "$output")
	# Without energy, every line passes on as it came.
	grep -v '"type":"energy"' "$IN" > "$BATS_TEST_TMPDIR/no-energy"
	TMPDIR=$BATS_TEST_TMPDIR/tmp run -0 --separate-stderr kp-attribute \
	    < "$BATS_TEST_TMPDIR/no-energy"
	assert_equal "$output" "$(cat "$BATS_TEST_TMPDIR/no-energy")"
}

@test "a full disk under an interval's spool is status 1, and the interval's records never go out" {
	"$KP_ROOT/scripts/kp-gen" --seed 5 --intervals 1 --processes 8000 \
	    --dense 1 > "$IN"
	# A file size limit fails the spool's write as a full disk would;
	# standard output, a pipe, has none.
	run --separate-stderr bash -o pipefail -c \
	    '(trap "" XFSZ; ulimit -f 512; exec kp-attribute < "$1") | cat' _ "$IN"
	assert_equal "$status" 1
	assert_equal "$stderr" "kp-attribute: spooling an interval to \$TMPDIR: File too large"
	refute_output --partial '"type":"node"'
}

# An interval of 2,500 processes: its lines and identities stay under the
# spool's mebibyte, its output of two zones passes it.
big_interval() {
	"$KP_ROOT/scripts/kp-gen" --seed 5 --intervals 1 --processes 2500 \
	    --dense 1 > "$IN"
	[ "$(wc -c < "$IN")" -lt $((1 << 20)) ]
}

@test "--state: an interval's output past a MiB waits in TMPDIR, and goes out as it would without --state" {
	big_interval
	state_spool_same kp-attribute
}

@test "--state: an output spool that cannot be made is status 1 before any record of the interval, the state not advanced (kp-attribute(1), Memory)" {
	big_interval
	state_spool_missing kp-attribute
	[ ! -e "$BATS_TEST_TMPDIR/st" ]
	# A state from a run that could spool stays as it was.
	kp-attribute --state "$BATS_TEST_TMPDIR/st" < "$IN" > /dev/null
	cp "$BATS_TEST_TMPDIR/st" "$BATS_TEST_TMPDIR/before"
	state_spool_missing kp-attribute
	cmp "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/st"
}
