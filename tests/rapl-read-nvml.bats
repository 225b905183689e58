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

@test "nvml: --list shows each device, how it is measured, its uuid and its name" {
	two_gpus
	run -0 --separate-stderr rapl-read --source nvml --list
	assert_equal "$stderr" ""
	assert_equal "$output" "$(printf '%s\t' zone socket path \
	    max_energy_range_uj enabled; printf 'status
gpu\t-\tnvml:0 energy %s NVIDIA A100-SXM4-40GB\t-\t-\treadable
gpu\t-\tnvml:1 power %s Tesla T4\t-\t-\treadable' "$A100" "$T4")"
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

# gpu_records [DEVICE]: the gpu records of $output as "seq device
# energy_uj", one a line; the energy of DEVICE (default 1, the T4 measured by
# its power), as "Nx dt", N its watts times its interval's dt_us.  Name no
# device ("") where every GPU has a counter: a counter's step is no multiple
# of dt_us, however often it may happen to divide by it.
gpu_records() {
	jq -rs --arg power "${1-1}" '(map(select(.type == "interval") | {(.seq | tostring): .dt_us})
	    | add) as $dt | .[] | select(.type == "energy" and .zone == "gpu") |
	    "\(.seq) \(.device) " + (if .energy_uj % $dt[.seq | tostring] == 0
	    and .device == $power then "\(.energy_uj / $dt[.seq | tostring])x dt"
	    else "\(.energy_uj)" end)' <<< "$output"
}

@test "nvml: the energy counter's mJ steps are the records' exact uJ, each device its own record" {
	two_gpus "1000 1500 2500 2500"
	run -0 --separate-stderr rapl-read --source nvml -n 3 -i 10ms
	assert_equal "$stderr" ""
	# The T4's 70 W, integrated over each interval, is 70 uJ a us.
	run -0 gpu_records
	assert_output "1 0 500000
1 1 70x dt
2 0 1000000
2 1 70x dt
3 0 0
3 1 70x dt"
	run -0 jq -c 'select(.zone == "gpu") | del(.energy_uj, .watts, .seq)' \
	    <<< "$(rapl-read --source nvml -n 1 -i 10ms)"
	assert_output '{"type":"energy","zone":"gpu","source":"nvml","estimated":false,"device":"0","uuid":"'"$A100"'","name":"NVIDIA A100-SXM4-40GB","sockets":1}
{"type":"energy","zone":"gpu","source":"nvml","estimated":false,"device":"1","uuid":"'"$T4"'","name":"Tesla T4","sockets":1}'
}

@test "nvml: a counter that goes back is the driver reloaded, counted from 0, each reload said" {
	trace "device $A100 NVIDIA A100-SXM4-40GB" "energy 0 5000 6000 200 700 300"
	run -0 --separate-stderr rapl-read --source nvml -n 4 -i 10ms
	run -0 gpu_records
	assert_output "1 0 1000000
2 0 200000
3 0 500000
4 0 300000"
	assert_equal "$stderr" "rapl-read: GPU 0: energy counter went back from 6000 to 200 mJ: the driver was reloaded; counting from 0 at the reload
rapl-read: GPU 0: energy counter went back from 700 to 300 mJ: the driver was reloaded; counting from 0 at the reload"
}

@test "nvml: --state carries the counter and the power across runs; a power is integrated exactly over the stored time" {
	two_gpus 1000 60000
	run_state --source nvml
	assert_success
	assert_equal "$stderr" ""
	refute_output --partial '"type":"energy"'
	# 2.5 s later by the stored clock, the counter at 3500 mJ and the
	# T4 at 80 W: 2.5 J, and the mean of 60 and 80 W over the time.
	age_state 2.5
	two_gpus 3500 80000
	run_state --source nvml
	assert_success
	assert_equal "$stderr" ""
	run -0 gpu_records
	assert_output "1 0 2500000
1 1 70x dt"
	run -0 jq '.data.members["nvml:0"].uj, .data.members["nvml:1"].uj' "$S"
	assert_output "3500000
80000000"
}

@test "nvml: a library without _v3 of the running processes still measures, through _v2" {
	export LD_LIBRARY_PATH=$KP_ROOT/tests/nvml/no-v3
	two_gpus "1000 1500"
	run -0 --separate-stderr rapl-read --source nvml -n 1 -i 10ms
	assert_equal "$stderr" ""
	run -0 gpu_records
	assert_output "1 0 500000
1 1 70x dt"
	run -1 grep -c '_v3$' "$KP_NVML_CALLS"
	run -0 grep -c '_v2$' "$KP_NVML_CALLS"
}

@test "nvml: a GPU lost mid-run: its records stop, said once; the other's go on" {
	trace "device $A100 NVIDIA A100-SXM4-40GB" "device $T4 Tesla T4" \
	    "energy 0 1000 1500 GPU_IS_LOST" "energy 1 100 200 300 400"
	run -0 --separate-stderr rapl-read --source nvml -n 3 -i 10ms
	assert_equal "$stderr" "rapl-read: GPU 0: GPU is lost: its records stop, the other GPUs' go on"
	run -0 gpu_records ""
	assert_output "1 0 500000
1 1 100000
2 1 100000
3 1 100000"
}

@test "nvml: a GPU with neither figure is left out, saying why; none left is exit 4" {
	trace "device $A100 NVIDIA A100-SXM4-40GB" "device $T4 Tesla T4" \
	    "energy 0 1000" "energy 1 NOT_SUPPORTED" "power 1 NOT_SUPPORTED"
	run -0 --separate-stderr rapl-read --source nvml -n 1 -i 10ms
	assert_equal "$stderr" "rapl-read: GPU 1: Not Supported: left out"
	run -0 gpu_records
	assert_output "1 0 0"
	trace "device $T4 Tesla T4" "handle 0 NO_PERMISSION"
	run -4 --separate-stderr rapl-read --source nvml -n 1 -i 10ms
	assert_equal "$stderr" "rapl-read: GPU 0: Insufficient Permissions: left out
rapl-read: no NVIDIA GPU that gives its energy or power (1 found)"
	assert_output ""
}

@test "nvml: a MIG device is measured whole, MIG said out of scope" {
	trace "device $A100 NVIDIA A100-SXM4-40GB" "energy 0 1000 1500" \
	    "process 0 4242 1"
	run -0 --separate-stderr rapl-read --source nvml -n 1 -i 10ms
	assert_equal "$stderr" "rapl-read: GPU 0: MIG is enabled, which kp leaves out of scope: its energy is the whole GPU's"
	run -0 gpu_records
	assert_output "1 0 500000"
}

@test "nvml: beside powercap, zone gpu is never added to node; kp-attribute takes its records" {
	two_gpus "1000 1500 2500"
	run -0 --separate-stderr rapl-read --sysfs "$SY" --source powercap,nvml \
	    -z package,dram,node,gpu -n 2 -i 10ms
	assert_equal "$stderr" ""
	local stream=$output
	run -0 jq -s 'group_by(.seq)[1:][] |
	    (map(select(.zone == "package" or .zone == "dram") | .energy_uj) | add)
	    == (map(select(.zone == "node"))[0].energy_uj)' <<< "$stream"
	assert_output "true
true"
	output=$stream
	run -0 gpu_records
	assert_line "2 0 1000000"
	# Each GPU's energy is shared out whole, nothing of it in another zone.
	two_gpus "1000 1500 2500"
	local e=$BATS_TEST_TMPDIR/energy proc=$FIXTURES/proc-basic
	run -0 --separate-stderr bash -c 'set -o pipefail
	    rapl-read --sysfs "$1" --source powercap,nvml -n 2 -i 10ms |
	    tee "$2" | proc-cputime --proc "$3" | kp-attribute --proc "$3"' \
	    - "$SY" "$e" "$proc"
	assert_equal "$stderr" ""
	run -0 jq -s '[.[] | select(.type == "node" and .zone == "gpu") |
	    .energy_uj] == [.[] | select(.type == "energy" and .zone == "gpu") |
	    .energy_uj]' <<< "$output"$'\n'"$(cat "$e")"
	assert_output true
}

@test "nvml: NVML is shut down and everything released at exit, a failed start's too" {
	[ "${KP_SANITIZE:-}" != 1 ] || skip "sanitizer build: valgrind cannot run it"
	local vg=(valgrind -q --leak-check=full
	    --errors-for-leak-kinds=definite,indirect --error-exitcode=99)
	two_gpus "1000 1500"
	run -0 --separate-stderr "${vg[@]}" rapl-read --source nvml -n 1 -i 10ms
	assert_equal "$stderr" ""
	run -0 tail -n 1 "$KP_NVML_CALLS"
	assert_output nvmlShutdown
	rm "$KP_NVML_CALLS"
	trace "device $T4 Tesla T4" "handle 0 NO_PERMISSION"
	run -4 --separate-stderr "${vg[@]}" rapl-read --source nvml --list
	run -0 tail -n 1 "$KP_NVML_CALLS"
	assert_output nvmlShutdown
}
