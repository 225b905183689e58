#!/usr/bin/env bats
# rapl-read's source nvml: NVIDIA GPUs through libnvidia-ml.so.1, here the
# tests' stub (tests/nvml-stub.c, whose top documents the trace), found
# through LD_LIBRARY_PATH as the real one is (rapl-read(1), SOURCES).
# shellcheck disable=SC2154 # bats's run sets stderr and stderr_lines

load test_helper
load rapl_helper

A100=GPU-5f3c0c55-8d1e-4c1b-9a3e-0d1f2a3b4c5d
T4=GPU-0b8e4f2a-3c6d-4e7f-8a9b-1c2d3e4f5a6b

setup() {
	rapl_tree sysfs-1socket
	export KP_NVML_TRACE=$BATS_TEST_TMPDIR/nvml.trace
	export LD_LIBRARY_PATH=$KP_ROOT/tests/nvml/full
	export KP_NVML_CALLS=$BATS_TEST_TMPDIR/nvml.calls
}

# trace LINE...: the stub's trace, one directive an argument.
trace() {
	printf '%s\n' "$@" > "$KP_NVML_TRACE"
}

# Two GPUs, as nvidia-smi -L would list them: an A100 with its energy
# counter, a T4 whose driver gives only its power.
two_gpus() {
	trace "device $A100 NVIDIA A100-SXM4-40GB" \
	    "device $T4 Tesla T4" \
	    "energy 0 ${1:-1000}" \
	    "energy 1 NOT_SUPPORTED" "power 1 ${2:-70000}"
}

@test "nvml: the binaries link no NVIDIA library; the library is opened at run time" {
	local bin
	for bin in rapl-read proc-cputime kp-attribute kp-aggregate kp-fmt; do
		run -0 readelf -d "$KP_ROOT/cmd/$bin"
		refute_output --partial nvidia
		run -0 env LD_LIBRARY_PATH= ldd "$KP_ROOT/cmd/$bin"
		refute_output --partial nvidia
	done
	run -0 readelf -d "$KP_ROOT/tests/nvml/full/libnvidia-ml.so.1"
	assert_output --partial 'Library soname: [libnvidia-ml.so.1]'
}

@test "nvml: --list shows each device, with how it is measured" {
	two_gpus
	run -0 --separate-stderr rapl-read --source nvml --list
	assert_equal "$stderr" ""
	assert_equal "$output" "$(printf '%s\t' zone socket path \
	    max_energy_range_uj enabled; printf 'status
gpu\t-\tnvml:0 energy %s\t-\t-\treadable
gpu\t-\tnvml:1 power %s\t-\t-\treadable' "$A100" "$T4")"
	# Only the symbols the issue names, versioned as nvml.h's #defines.
	run -0 sort -u "$KP_NVML_CALLS"
	assert_output "nvmlDeviceGetComputeRunningProcesses_v3
nvmlDeviceGetCount_v2
nvmlDeviceGetHandleByIndex_v2
nvmlDeviceGetName
nvmlDeviceGetPowerUsage
nvmlDeviceGetTotalEnergyConsumption
nvmlDeviceGetUUID
nvmlInit_v2
nvmlShutdown"
}

@test "nvml: no library: --list and --source nvml say why, exit 4" {
	two_gpus
	mkdir "$BATS_TEST_TMPDIR/empty"
	export LD_LIBRARY_PATH=$BATS_TEST_TMPDIR/empty
	run -4 --separate-stderr rapl-read --source nvml --list
	assert_equal "$stderr" "rapl-read: libnvidia-ml.so.1: cannot open shared object file: No such file or directory"
	run -4 --separate-stderr rapl-read --source nvml -n 1 -i 10ms
	assert_equal "$stderr" "rapl-read: libnvidia-ml.so.1: cannot open shared object file: No such file or directory"
	assert_output ""
	# auto never tries nvml: no word of it.
	run --separate-stderr rapl-read --sysfs "$SY" --list
	refute_output --partial gpu
	refute_line --partial nvidia
}
