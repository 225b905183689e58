#!/usr/bin/env bats
# kp-attribute: a GPU's energy split by GPU time, each device apart
# (kp-attribute(1), GPU zones).

load test_helper

# header: a new stream in $IN, of kp-records 1.2, which has GPU records
header() {
	IN=$BATS_TEST_TMPDIR/in
	echo '{"type":"header","seq":0,"version":"1.2","producer":"test"}' > "$IN"
}
# package SEQ UJ: the CPU package's energy beside a GPU's
package() {
	printf '{"type":"energy","seq":%s,"zone":"package","energy_uj":%s,"source":"powercap","estimated":false}\n' "$1" "$2" >> "$IN"
}
# gpu SEQ DEVICE UJ [UUID]: a device's energy, as rapl-read's nvml source
# writes it (rapl-read(1), SOURCES)
gpu() {
	printf '{"type":"energy","seq":%s,"zone":"gpu","device":"%s",%s"name":"NVIDIA A100-SXM4-40GB","energy_uj":%s,"watts":0,"source":"nvml","estimated":false,"sockets":1}\n' \
	    "$1" "$2" "${4:+\"uuid\":\"$4\",}" "$3" >> "$IN"
}
# cpu SEQ ACTIVE_US TOTAL_US [GPU_US_OBJECT]
cpu() {
	printf '{"type":"cpu","seq":%s,"cpu_us":%s,"total_cpu_us":%s,"usage_ratio":0%s}\n' \
	    "$1" "$2" "$3" "${4:+,\"gpu_us\":$4}" >> "$IN"
}
# proc SEQ PID CPU_US [GPU_US_OBJECT [STATE]]
proc() {
	printf '{"type":"proc","seq":%s,"pid":%s,"starttime":1,"comm":"p%s","cpu_us":%s,"state":"%s","container_id":"c%s"%s}\n' \
	    "$1" "$2" "$2" "$3" "${5:-running}" "$2" "${4:+,\"gpu_us\":$4}" >> "$IN"
}
# interval SEQ [DT_US]
interval() {
	printf '{"type":"interval","seq":%s,"ts":"2026-11-22T00:00:0%s.000000Z","dt_us":%s}\n' "$1" "$1" "${2:-1000000}" >> "$IN"
}

attribute() {
	run --separate-stderr kp-attribute --proc "$FIXTURES/proc-basic" "$@" < "$IN"
}

# gpu_field TYPE FIELD DEVICE: FIELD of the records of TYPE on DEVICE.
gpu_field() {
	printf '%s\n' "$output" | jq -r --arg t "$1" --arg d "$3" \
	    "select(.type == \$t and .zone == \"gpu\" and .device == \$d) | .$2"
}

@test "two processes at 40 % and 20 % of the interval: 40 % idle, the rest 2:1" {
	header
	package 1 1000000
	gpu 1 0 300000000 GPU-5f3c
	cpu 1 400000 1000000 '{"0":600000}'
	proc 1 100 400000 '{"0":400000}'
	proc 1 200 0 '{"0":200000}'
	interval 1
	attribute
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(gpu_field node idle_uj 0)" 120000000
	assert_equal "$(gpu_field node active_uj 0)" 180000000
	assert_equal "$(gpu_field node usage_ratio 0)" 0.6
	assert_equal "$(gpu_field process energy_uj 0 | tr '\n' ' ')" \
	    "120000000 60000000 "
	# GPU time is an object by device in every record (kp-records(5)).
	assert_equal "$(gpu_field process 'gpu_us["0"]' 0 | tr '\n' ' ')" \
	    "400000 200000 "
	assert_equal "$(gpu_field unattributed energy_uj 0)" 0
	# Every record of the device names it and its uuid.
	assert_equal "$(printf '%s\n' "$output" |
	    jq -r 'select(.zone == "gpu") | "\(.type) \(.device) \(.uuid)"' |
	    sort -u | tr '\n' ' ')" \
	    "node 0 GPU-5f3c process 0 GPU-5f3c unattributed 0 GPU-5f3c "
}

@test "a process with GPU time and no CPU time has GPU energy and no CPU zone's" {
	header
	package 1 1000000
	gpu 1 0 300000000
	cpu 1 400000 1000000 '{"0":600000}'
	proc 1 100 400000
	proc 1 200 0 '{"0":600000}'
	interval 1
	attribute
	assert_success
	assert_equal "$(printf '%s\n' "$output" |
	    jq -r 'select(.type == "process") | "\(.zone) \(.pid) \(.energy_uj)"' |
	    tr '\n' ' ')" "package 100 400000 gpu 200 180000000 "
}

@test "each device is split and totalled apart, by its own busy time" {
	header
	gpu 1 0 1000000 GPU-a
	gpu 1 0000:03:00.0 2000000
	cpu 1 0 1000000 '{"0":500000,"0000:03:00.0":250000}'
	proc 1 100 0 '{"0":500000,"0000:03:00.0":100000}'
	interval 1
	gpu 2 0 1000000 GPU-a
	gpu 2 0000:03:00.0 2000000
	cpu 2 0 1000000 '{"0":1000000,"0000:03:00.0":0}'
	proc 2 100 0 '{"0":1000000}'
	interval 2
	attribute
	assert_success
	assert_equal "$(gpu_field node active_uj 0 | tr '\n' ' ')" "500000 1000000 "
	assert_equal "$(gpu_field node active_uj 0000:03:00.0 | tr '\n' ' ')" \
	    "500000 0 "
	assert_equal "$(gpu_field process total_uj 0 | tr '\n' ' ')" \
	    "500000 1500000 "
	# 100 of the device's 250 ms were process 100's; the rest no process's.
	assert_equal "$(gpu_field process energy_uj 0000:03:00.0)" 200000
	assert_equal "$(gpu_field unattributed total_uj 0000:03:00.0 | tail -1)" \
	    300000
	assert_equal "$(gpu_field node uuid 0000:03:00.0 | sort -u)" null
	# A process without GPU time on a device has no record of it.
	assert_equal "$(gpu_field process pid 0000:03:00.0 | wc -l)" 1
}

@test "busy time past the interval is capped; processes past the node are scaled, said" {
	header
	gpu 1 0 1000003
	cpu 1 0 1000000 '{"0":1500000}'
	proc 1 100 0 '{"0":900000}'
	proc 1 200 0 '{"0":900000}'
	interval 1
	attribute
	assert_success
	assert_equal "$(gpu_field node idle_uj 0)" 0
	assert_equal "$(gpu_field process energy_uj 0 | tr '\n' ' ')" \
	    "500002 500001 "
	assert_equal "$(gpu_field unattributed excess_gpu_us 0)" 300000
	assert_equal "$(gpu_field unattributed scaled_down 0)" true
}

# awkward_stream N: N intervals of two devices with prime energies and odd
# GPU times, the node's sometimes short of the processes', sometimes past
# the interval, sometimes missing; the same stream each run (srand(29)).
awkward_stream() {
	awk -v n="$1" 'BEGIN {
		srand(29)
		print "{\"type\":\"header\",\"seq\":0,\"version\":\"1.2\",\"producer\":\"test\"}"
		for (k = 1; k <= n; k++) {
			dt = 999983 + int(rand() * 37)
			split("7919 104729 1299709", e, " ")
			printf "{\"type\":\"energy\",\"seq\":%d,\"zone\":\"gpu\",\"device\":\"0\",\"energy_uj\":%d}\n", k, e[1 + k % 3] * 97 + k
			printf "{\"type\":\"energy\",\"seq\":%d,\"zone\":\"gpu\",\"device\":\"0000:03:00.0\",\"energy_uj\":%d}\n", k, 333331 + k * 7
			a = int(rand() * dt / 3); b = int(rand() * dt / 3)
			c = int(rand() * dt / 7)
			node = a + b + int(rand() * 2 * dt) - dt / 2
			if (node < 0) node = 0
			if (k % 11 == 0)
				printf "{\"type\":\"cpu\",\"seq\":%d,\"cpu_us\":1,\"usage_ratio\":0.5,\"gpu_us\":{\"0\":%d}}\n", k, node
			else
				printf "{\"type\":\"cpu\",\"seq\":%d,\"cpu_us\":1,\"usage_ratio\":0.5,\"gpu_us\":{\"0\":%d,\"0000:03:00.0\":%d}}\n", k, node, c * 3
			printf "{\"type\":\"proc\",\"seq\":%d,\"pid\":7,\"starttime\":1,\"comm\":\"a\",\"cpu_us\":1,\"gpu_us\":{\"0\":%d,\"0000:03:00.0\":%d}}\n", k, a, c
			printf "{\"type\":\"proc\",\"seq\":%d,\"pid\":8,\"starttime\":1,\"comm\":\"b\",\"cpu_us\":0,\"gpu_us\":{\"0\":%d}}\n", k, b
			printf "{\"type\":\"proc\",\"seq\":%d,\"pid\":9,\"starttime\":1,\"comm\":\"c\",\"cpu_us\":0,\"gpu_us\":{\"0000:03:00.0\":%d}}\n", k, c
			printf "{\"type\":\"interval\",\"seq\":%d,\"dt_us\":%d}\n", k, dt
		}
	}'
}

# conserved: in $output, each interval's and the run's GPU energy is its
# processes', idle and unattributed, exactly, per device.
conserved() {
	printf '%s\n' "$output" | jq -rs '
	    [.[] | select(.zone == "gpu")] | group_by([.seq, .device])[] |
	    (map(select(.type == "node"))[0]) as $n |
	    ([.[] | select(.type == "process" or .type == "unattributed") |
	      .energy_uj] | add) as $shared |
	    ([.[] | select(.type == "process" or .type == "unattributed") |
	      .total_uj] | add) as $totals |
	    if $shared + $n.idle_uj != $n.energy_uj then
	        "interval \($n.seq) device \($n.device): \($shared) + \($n.idle_uj) != \($n.energy_uj)"
	    else empty end'
}

@test "Σ processes + idle + unattributed = energy, each interval and device, over 300 awkward intervals" {
	IN=$BATS_TEST_TMPDIR/in
	awkward_stream 300 > "$IN"
	attribute
	assert_success
	OUT=$BATS_TEST_TMPDIR/out
	printf '%s\n' "$output" > "$OUT"
	[ "$(jq -s '[.[] | select(.zone == "gpu")] | length' "$OUT")" -gt 1500 ]
	run -0 conserved
	assert_output ""
	# The totals too: the node's against the processes' and unattributed.
	run -0 jq -rs '
	    [.[] | select(.zone == "gpu")] | group_by(.device)[] |
	    (map(select(.type == "node")) | last) as $n |
	    ([.[] | select(.type == "process")] | group_by(.pid) |
	     map(last.total_uj) | add) as $p |
	    (map(select(.type == "unattributed")) | last.total_uj) as $u |
	    "\($n.device) \($p + $u + $n.idle_total_uj - $n.total_uj)"' "$OUT"
	assert_output $'0 0\n0000:03:00.0 0'
}

@test "--idle proportional shares a GPU's idle energy by GPU time too, conserved" {
	IN=$BATS_TEST_TMPDIR/in
	awkward_stream 40 > "$IN"
	attribute --idle proportional
	assert_success
	assert_equal "$(printf '%s\n' "$output" | jq -s '[.[] |
	    select(.zone == "gpu" and .type == "node") | .idle_kept_uj] |
	    unique')" "[
  0
]"
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/out"
	run -0 jq -rs '
	    [.[] | select(.zone == "gpu")] | group_by([.seq, .device])[] |
	    (map(select(.type == "node"))[0]) as $n |
	    ([.[] | select(.type != "node") | .energy_uj] | add) as $s |
	    select($s != $n.energy_uj) | $n.seq' "$BATS_TEST_TMPDIR/out"
	assert_output ""
}

@test "totals of each device go on across --state runs" {
	S=$BATS_TEST_TMPDIR/ka.state
	header
	gpu 1 0 1000001 GPU-a
	cpu 1 0 1000000 '{"0":700000}'
	proc 1 100 0 '{"0":300000}'
	interval 1
	attribute --state "$S"
	assert_success
	run -0 jq -c '(.data.node["gpu/0"] | [.total_uj, .active_total_uj,
	    .idle_total_uj]), .data.unattributed["gpu/0"]' "$S"
	assert_output $'[1000001,700000,300001]\n400000'
	header
	gpu 2 0 1000001 GPU-a
	cpu 2 0 1000000 '{"0":500000}'
	proc 2 100 0 '{"0":500000}'
	interval 2
	attribute --state "$S"
	assert_success
	assert_equal "$(gpu_field node total_uj 0)" 2000002
	assert_equal "$(gpu_field process total_uj 0)" 800000
	assert_equal "$(gpu_field unattributed total_uj 0)" 400000
	assert_equal "$(gpu_field node idle_total_uj 0)" 800002
}

@test "without the node's GPU time a device's energy is all idle, said once" {
	header
	gpu 1 0 1000000
	cpu 1 0 1000000
	proc 1 100 0 '{"0":300000}'
	interval 1
	gpu 2 0 1000000
	cpu 2 0 1000000 '{"0000:03:00.0":5}'
	proc 2 100 0 '{"0":300000}'
	interval 2
	attribute
	assert_success
	assert_equal "$(gpu_field node idle_uj 0 | tr '\n' ' ')" "1000000 1000000 "
	assert_equal "$(gpu_field process energy_uj 0 | tr '\n' ' ')" "0 0 "
	assert_equal "$stderr" "kp-attribute: <stdin>: interval 1: no cpu record gives the GPU time of device '0': its energy is all idle (see kp-attribute(1), GPU zones)"
}

@test "a terminated process with GPU energy has its last GPU record, an idle one none" {
	header
	gpu 1 0 1000000
	cpu 1 0 1000000 '{"0":500000}'
	proc 1 100 0 '{"0":500000}'
	proc 1 200 10
	interval 1
	gpu 2 0 1000000
	cpu 2 0 1000000 '{"0":0}'
	proc 2 100 0 '' terminated
	proc 2 200 0 '' terminated
	interval 2
	attribute
	assert_success
	run -0 bash -c 'printf "%s\n" "$1" | jq -rc "select(.seq == 2 and .zone == \"gpu\" and .type == \"process\") | [.pid, .state, .energy_uj, .total_uj]"' _ "$output"
	assert_output '[100,"terminated",0,500000]'
}

@test "malformed GPU members are refused with the line, exit 3" {
	header
	gpu 1 0 1000000
	cpu 1 0 1000000 '{"0":500000}'
	proc 1 100 0 '[500000]'
	proc 1 101 0 '{"0":-5}'
	printf '{"type":"energy","seq":1,"zone":"gpu","device":7,"energy_uj":5}\n' >> "$IN"
	interval 1
	attribute
	assert_failure 3
	assert_equal "$stderr" "kp-attribute: <stdin>:4: \"gpu_us\" is not an object of non-negative integers by device name
kp-attribute: <stdin>:5: \"gpu_us\" is not an object of non-negative integers by device name
kp-attribute: <stdin>:6: \"device\" is not a device name: 1 to 27 letters, digits, '-', '_', '.' or ':'"
	assert_equal "$(gpu_field unattributed energy_uj 0)" 500000
}

@test "a dense stream: a process with a total on a GPU has its record, at 0 µJ when idle; one never on it has none" {
	header
	gpu 1 0 1000000
	printf '{"type":"cpu","seq":1,"cpu_us":20,"usage_ratio":0,"dense":true,"gpu_us":{"0":500000}}\n' >> "$IN"
	proc 1 100 10 '{"0":500000}'
	proc 1 200 10
	interval 1
	gpu 2 0 1000000
	printf '{"type":"cpu","seq":2,"cpu_us":20,"usage_ratio":0,"dense":true,"gpu_us":{"0":0}}\n' >> "$IN"
	proc 2 100 10
	proc 2 200 10
	interval 2
	attribute
	assert_success
	run -0 bash -c 'printf "%s\n" "$1" | jq -rc "select(.zone == \"gpu\" and .type == \"process\") | [.seq, .pid, .energy_uj, .total_uj]"' _ "$output"
	assert_output $'[1,100,500000,500000]\n[2,100,0,500000]'
}
