#!/usr/bin/env bats
# kp-aggregate: container, pod and vm records as exact sums of processes.

load test_helper

setup() {
	IN=$BATS_TEST_TMPDIR/in
	echo '{"type":"header","seq":0,"version":"1.0","producer":"test"}' > "$IN"
}

# process SEQ ZONE PID UJ [extra JSON members]
process() {
	printf '{"type":"process","seq":%s,"zone":"%s","pid":%s,"starttime":1,"comm":"p","cpu_us":10,"energy_uj":%s%s}\n' \
	    "$1" "$2" "$3" "$4" "${5:+,$5}" >> "$IN"
}
interval() {
	printf '{"type":"interval","seq":%s,"ts":"2026-11-22T00:00:00.000000Z","dt_us":%s}\n' "$1" "${2:-1000000}" >> "$IN"
}

@test "usage matches the manual's synopsis" {
	assert_equal "$(usage_synopsis kp-aggregate)" \
	    "$(man_synopsis kp-aggregate.1)"
}

@test "-h, unknown options and operands are usage errors" {
	run -2 --separate-stderr kp-aggregate -h
	assert_equal "$stderr" "usage: kp-aggregate [-h]"
	run -2 --separate-stderr kp-aggregate -z
	run -2 --separate-stderr kp-aggregate file
}

@test "containers, pods and vms are the exact sums of their processes" {
	process 1 package 1 7 '"container_id":"a","pod_id":"p1"'
	process 1 package 2 5 '"container_id":"a","pod_id":"p1"'
	process 1 package 3 11 '"container_id":"b","pod_id":"p1"'
	process 1 dram 3 4 '"container_id":"b","pod_id":"p1"'
	process 1 package 4 13 '"vm_id":"qemu-1-guest"'
	process 1 package 5 17
	interval 1 2000000
	run --separate-stderr kp-aggregate < "$IN"
	assert_success
	assert_output - <<-'OUT'
	{"type":"header","seq":0,"version":"1.0","producer":"test"}
	{"type":"process","seq":1,"zone":"package","pid":1,"starttime":1,"comm":"p","cpu_us":10,"energy_uj":7,"container_id":"a","pod_id":"p1"}
	{"type":"process","seq":1,"zone":"package","pid":2,"starttime":1,"comm":"p","cpu_us":10,"energy_uj":5,"container_id":"a","pod_id":"p1"}
	{"type":"process","seq":1,"zone":"package","pid":3,"starttime":1,"comm":"p","cpu_us":10,"energy_uj":11,"container_id":"b","pod_id":"p1"}
	{"type":"process","seq":1,"zone":"dram","pid":3,"starttime":1,"comm":"p","cpu_us":10,"energy_uj":4,"container_id":"b","pod_id":"p1"}
	{"type":"process","seq":1,"zone":"package","pid":4,"starttime":1,"comm":"p","cpu_us":10,"energy_uj":13,"vm_id":"qemu-1-guest"}
	{"type":"process","seq":1,"zone":"package","pid":5,"starttime":1,"comm":"p","cpu_us":10,"energy_uj":17}
	{"type":"container","seq":1,"zone":"dram","container_id":"b","pod_id":"p1","processes":1,"cpu_us":10,"energy_uj":4,"watts":2e-6,"total_uj":4}
	{"type":"container","seq":1,"zone":"package","container_id":"a","pod_id":"p1","processes":2,"cpu_us":20,"energy_uj":12,"watts":6e-6,"total_uj":12}
	{"type":"container","seq":1,"zone":"package","container_id":"b","pod_id":"p1","processes":1,"cpu_us":10,"energy_uj":11,"watts":5.5e-6,"total_uj":11}
	{"type":"pod","seq":1,"zone":"dram","pod_id":"p1","processes":1,"cpu_us":10,"energy_uj":4,"watts":2e-6,"total_uj":4}
	{"type":"pod","seq":1,"zone":"package","pod_id":"p1","processes":3,"cpu_us":30,"energy_uj":23,"watts":1.15e-5,"total_uj":23}
	{"type":"vm","seq":1,"zone":"package","vm_id":"qemu-1-guest","processes":1,"cpu_us":10,"energy_uj":13,"watts":6.5e-6,"total_uj":13}
	{"type":"interval","seq":1,"ts":"2026-11-22T00:00:00.000000Z","dt_us":2000000}
	OUT
}

@test "group totals accumulate over the intervals of a run" {
	process 1 package 1 7 '"container_id":"a"'
	interval 1
	interval 2
	process 3 package 2 5 '"container_id":"a"'
	interval 3
	run kp-aggregate < "$IN"
	assert_equal "$(jq -r 'select(.type == "container") | "\(.seq) \(.energy_uj) \(.total_uj)"' <<< "$output" | tr '\n' ' ')" "1 7 7 3 5 12 "
}

@test "a malformed process record is reported with its line, skipped; exit 3" {
	echo '{"type":"process","seq":1,"pid":1}' >> "$IN"
	process 1 package 1 7 '"container_id":"a"'
	interval 1
	run --separate-stderr kp-aggregate < "$IN"
	assert_failure 3
	assert_equal "$stderr" "kp-aggregate: <stdin>:2: process record without a zone and an integer energy_uj"
	assert_equal "$(jq -r 'select(.type == "container") | .energy_uj' <<< "$output")" 7
}

@test "a write error is a failure" {
	interval 1
	run -1 --separate-stderr bash -c 'kp-aggregate < "$1" > /dev/full' _ "$IN"
	assert_equal "$stderr" "kp-aggregate: write error on stdout: No space left on device"
}

@test "a stream cut inside an interval is reported; exit 3" {
	process 1 package 1 7 '"container_id":"a"'
	run --separate-stderr kp-aggregate < "$IN"
	assert_failure 3
	assert_equal "$stderr" "kp-aggregate: <stdin>:2: the stream ends inside an interval: its 1 process record(s) are not aggregated"
	assert_equal "${#lines[@]}" 2
}
