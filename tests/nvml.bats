#!/usr/bin/env bats
# lib/nvml.c, kp's one home for libnvidia-ml, against the tests' stub
# (tests/nvml-stub.c): each process's GPU time, read as proc-cputime reads
# it, through the driver tests/nvml-gputime.
# shellcheck disable=SC2154 # bats's run sets stderr and stderr_lines

load test_helper

setup() {
	export KP_NVML_TRACE=$BATS_TEST_TMPDIR/nvml.trace
	export LD_LIBRARY_PATH=$KP_ROOT/tests/nvml/full
	export KP_NVML_CALLS=$BATS_TEST_TMPDIR/nvml.calls
	GT=$KP_ROOT/tests/nvml-gputime
}

# samples FROM TO ROUND: the driver's samples every 200 ms from step FROM
# to TO of 10 s on, seen from read ROUND: process 100 at 40 % SM, 200 at
# 20 %, as two processes sharing a GPU.
samples() {
	local k
	for ((k = $1; k <= $2; k++)); do
		echo "sample 0 100 $((10000000 + k * 200000)) 40 $3"
		echo "sample 0 200 $((10000000 + k * 200000)) 20 $3"
	done
}

@test "nvml: GPU time per process, each sample counted once, by the last timestamp seen" {
	{
		echo "device GPU-5f3c0c55-8d1e-4c1b-9a3e-0d1f2a3b4c5d NVIDIA A100-SXM4-40GB"
		# Two seconds in the buffer at the first read; a second later,
		# one more; then none.
		samples 0 10 1
		samples 11 15 2
	} > "$KP_NVML_TRACE"
	run -0 --separate-stderr "$GT" 0 1000000 3
	assert_equal "$stderr" ""
	# The first read counts the 1 s window before the newest sample:
	# 40 % and 20 % of it.  The second only what came after the first.
	assert_output "100 400000
200 200000
read 1 device 0 covered 1000000
100 400000
200 200000
read 2 device 0 covered 1000000
read 3 device 0 covered 0"
}

@test "nvml: each device keeps its own last timestamp" {
	{
		echo "device GPU-5f3c0c55-8d1e-4c1b-9a3e-0d1f2a3b4c5d NVIDIA A100-SXM4-40GB"
		echo "device GPU-0b8e4f2a-3c6d-4e7f-8a9b-1c2d3e4f5a6b NVIDIA A100-SXM4-40GB"
		samples 0 10 1
		# GPU 1's clock of samples is later: 50 s, one process at full.
		echo "sample 1 300 50000000 100"
		echo "sample 1 300 50200000 100"
		echo "sample 1 300 50400000 100"
		echo "sample 1 300 50600000 50 2"
	} > "$KP_NVML_TRACE"
	run -0 --separate-stderr "$GT" 01 1000000 2
	assert_equal "$stderr" ""
	# GPU 1's first sample is 600 ms into its window, its second 200 ms
	# later: the 400 ms before are a gap, not counted.
	assert_output "100 400000
200 200000
read 1 device 0 covered 1000000
300 600000
read 1 device 1 covered 600000
read 2 device 0 covered 0
300 100000
read 2 device 1 covered 200000"
}

@test "nvml: a gap the driver's buffer no longer holds is not counted" {
	{
		echo "device GPU-5f3c0c55-8d1e-4c1b-9a3e-0d1f2a3b4c5d NVIDIA A100-SXM4-40GB"
		samples 0 5 1
		# Read 2 comes 9 s later: the buffer holds its last 400 ms.
		echo "sample 0 100 20000000 50 2"
		echo "sample 0 100 20200000 50 2"
	} > "$KP_NVML_TRACE"
	run -0 --separate-stderr "$GT" 0 1000000 2
	assert_output "100 400000
200 200000
read 1 device 0 covered 1000000
100 200000
read 2 device 0 covered 400000"
}

@test "nvml: a MIG device is said out of scope, told by its processes through _v3, else _v2" {
	local lib
	for lib in full no-v3; do
		printf '%s\n' "device MIG-0 NVIDIA A100-SXM4-40GB" \
		    "utilization 0 NOT_SUPPORTED" "process 0 4242 1" \
		    > "$KP_NVML_TRACE"
		rm -f "$KP_NVML_CALLS"
		LD_LIBRARY_PATH=$KP_ROOT/tests/nvml/$lib \
		    run -1 --separate-stderr "$GT" 0 1000000 1
		assert_equal "$stderr" "nvml-gputime: read 1: MIG is enabled: per-process utilisation is out of scope"
		# The stub without _v3 answers through _v2 only.
		run -0 grep -o 'ComputeRunningProcesses_v.$' "$KP_NVML_CALLS"
		if [ "$lib" = full ]; then
			refute_line --partial _v2
		else
			refute_line --partial _v3
		fi
		assert_line -n 0 --regexp '_v[23]$'
	done
	# Not MIG: the device's own NOT_SUPPORTED, in NVML's words.
	printf '%s\n' "device GPU-0 Quadro K600" "utilization 0 NOT_SUPPORTED" \
	    "process 0 4242 -" > "$KP_NVML_TRACE"
	run -1 --separate-stderr "$GT" 0 1000000 1
	assert_equal "$stderr" "nvml-gputime: read 1: Not Supported"
}

@test "nvml: a library without a symbol kp needs is unusable, and says which" {
	echo "device GPU-0 Tesla T4" > "$KP_NVML_TRACE"
	LD_LIBRARY_PATH=$KP_ROOT/tests/nvml/no-processes \
	    run -4 --separate-stderr "$GT" 0 1000000 1
	assert_equal "$stderr" "nvml-gputime: libnvidia-ml.so.1 has no nvmlDeviceGetComputeRunningProcesses_v2: a driver older than kp supports"
	# A driver that is not loaded: nvmlInit_v2's error, in its words.
	printf '%s\n' "init DRIVER_NOT_LOADED" > "$KP_NVML_TRACE"
	run -4 --separate-stderr "$GT" 0 1000000 1
	assert_equal "$stderr" "nvml-gputime: nvmlInit_v2: Driver Not Loaded"
}
