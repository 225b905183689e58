#!/usr/bin/env bats
# A GPU's energy through all five stages: rapl-read's gpu records, the
# GPU time proc-cputime reads, kp-attribute's split, kp-aggregate and
# kp-fmt's Kepler families, each device joined by its key from one end to
# the other (kp-attribute(1), GPU zones; rapl-read(1), SOURCES;
# proc-cputime(1), GPU time).  Two one-shot --state runs, 10 s apart by a
# stored monotonic clock (tests/mono-clock.c), so every figure is exact.
# shellcheck disable=SC2154 # bats's run sets stderr and stderr_lines

load test_helper
load proc_helper

A100=GPU-5f3c0c55-8d1e-4c1b-9a3e-0d1f2a3b4c5d

setup() {
	P=$(fixture_copy proc-gpu)
	D=$BATS_TEST_TMPDIR
	CLOCK=$D/mono-clock.so
	cc -shared -fPIC -o "$CLOCK" "$KP_ROOT/tests/mono-clock.c" -ldl
	export NODE_NAME=gpu-1
}

teardown() {
	nobody_dir_remove
}

# pipeline MONO_S RAPL_OPTION...: the five stages with --state, rapl-read
# sampling at MONO_S seconds of CLOCK_MONOTONIC, kp-fmt's records in
# $D/out and its exposition in $D/prom; every stage succeeds, and says
# nothing but $PC_SAYS.  proc-cputime runs as $PC_AS, with its state in
# $PC_STATE.
pipeline() {
	run -0 --separate-stderr stages "$@"
	assert_equal "$stderr" "${PC_SAYS:-}"
}

stages() {
	local mono_us=$(($1 * 1000000))
	shift
	set -o pipefail
	LD_PRELOAD=$CLOCK KP_MONO_US=$mono_us rapl-read --proc "$P" \
	    --state "$D/rr.state" "$@" |
	    ${PC_AS:-} proc-cputime --proc "$P" ${PC_SYSFS:+--sysfs "$PC_SYSFS"} \
	    --state "${PC_STATE:-$D/pc.state}" |
	    kp-attribute --proc "$P" --state "$D/ka.state" |
	    kp-aggregate --state "$D/ag.state" | tee "$D/out" |
	    kp-fmt -f prometheus > "$D/prom"
}

# gpu TYPE FILTER [DEVICE]: jq FILTER of the last run's records of TYPE in
# zone gpu, on DEVICE (default 0), one a line.
gpu() {
	jq -r --arg t "$1" --arg d "${3:-0}" \
	    "select(.type == \$t and .zone == \"gpu\" and .device == \$d) | $2" \
	    "$D/out"
}

# The device's processes, idle and unattributed against its energy: "OK"
# where they add up to it exactly, else the two figures.
conserved() {
	jq -rs --arg d "${1:-0}" 'map(select(.zone == "gpu" and .device == $d))
	    | (map(select(.type == "node"))[0]) as $n
	    | ((map(select(.type == "process" or .type == "unattributed")
	    | .energy_uj) | add) + $n.idle_uj) as $sum
	    | if $sum == $n.energy_uj then "OK" else "\($sum) \($n.energy_uj)" end' \
	    "$D/out"
}

# split DEVICE: the device's energy and idle part, each process's energy
# and the unattributed, on one line: "ENERGY IDLE PID:UJ,... UNATTRIBUTED".
split() {
	jq -rs --arg d "$1" 'map(select(.zone == "gpu" and .device == $d))
	    | (map(select(.type == "node"))[0]) as $n
	    | (map(select(.type == "process") | "\(.pid):\(.energy_uj)")
	    | join(",")) as $procs
	    | "\($n.energy_uj) \($n.idle_uj) \($procs) \(map(select(.type ==
	    "unattributed"))[0].energy_uj)"' "$D/out"
}

# nvml_trace FROM TO MJ [PID SM]: the stub's trace (tests/nvml-stub.c):
# an A100 whose energy counter reads MJ, and its sample buffer every 200 ms
# from step FROM to step TO: pid 400 at 40 % of the SMs, 500 at 20 %, and
# PID at SM %.
nvml_trace() {
	local k pid sm pid_sm
	echo "device $A100 NVIDIA A100-SXM4-40GB"
	echo "energy 0 $3"
	for ((k = $1; k <= $2; k++)); do
		for pid_sm in 400:40 500:20 ${4:+$4:$5}; do
			pid=${pid_sm%:*} sm=${pid_sm#*:}
			echo "sample 0 $pid $((k * 200000)) $sm"
		done
	done
}

nvml_setup() {
	export LD_LIBRARY_PATH=$KP_ROOT/tests/nvml/full
	export KP_NVML_TRACE=$D/nvml.trace
}

# The baseline run at 1000 s, then 10 s later the second: /proc's clock
# (advance_node) and rapl-read's alike.
two_runs() {
	"$1" first
	pipeline 1000 "${@:2}"
	"$1" second
	advance_node
	pipeline 1010 "${@:2}"
}

# The A100 used 300 J in the 10 s: its counter from 1000 J to 1300 J.
nvml_two() {
	if [ "$1" = first ]; then
		nvml_trace 41 50 1000000 > "$KP_NVML_TRACE"
	else
		nvml_trace 45 100 1300000 > "$KP_NVML_TRACE"
	fi
}

@test "nvml: processes at 40 % and 20 % SM: 40 % of the A100's energy idle, the rest 2:1, exact" {
	nvml_setup
	two_runs nvml_two --source nvml
	assert_equal "$(gpu node .energy_uj)" 300000000
	assert_equal "$(gpu node .idle_uj)" 120000000
	assert_equal "$(gpu node .usage_ratio)" 0.6
	assert_equal "$(gpu process '"\(.pid) \(.energy_uj)"' | tr '\n' ' ')" \
	    "400 120000000 500 60000000 "
	assert_equal "$(gpu unattributed .energy_uj)" 0
	assert_equal "$(conserved)" OK
	# Every record of the device names it, its uuid and its model.
	assert_equal "$(jq -r 'select(.zone == "gpu") | "\(.type) \(.uuid) \(.name)"' \
	    "$D/out" | sort -u | tr '\n' ';')" \
	    "host $A100 null;node $A100 NVIDIA A100-SXM4-40GB;process $A100 null;unattributed $A100 null;"
	run -0 grep -E '^(kepler_node_gpu_joules_total|kp_node_gpu_idle_joules_total|kepler_process_gpu_joules_total|kp_unattributed_gpu_joules_total)' "$D/prom"
	assert_line "kepler_node_gpu_joules_total{gpu=\"0\",gpu_uuid=\"$A100\",source=\"nvml\",node_name=\"gpu-1\"} 300.000000"
	assert_line --regexp "^kepler_process_gpu_joules_total\\{pid=\"400\",comm=\"blender\",.*,gpu=\"0\",gpu_uuid=\"$A100\",node_name=\"gpu-1\"\\} 120.000000\$"
	assert_line --regexp "^kepler_process_gpu_joules_total\\{pid=\"500\",comm=\"glxgears\",.*\\} 60.000000\$"
	run -0 promtool check metrics < "$D/prom"
}

# As nvml_two, with pid 600 at 10 % too, which ends after the baseline.
nvml_ended() {
	if [ "$1" = first ]; then
		nvml_trace 41 50 1000000 600 10 > "$KP_NVML_TRACE"
	else
		nvml_trace 45 100 1300000 600 10 > "$KP_NVML_TRACE"
		rm -r "$P/600"
	fi
}

@test "nvml: a process that ended in the interval, its samples without /proc entry: its share unattributed" {
	nvml_setup
	two_runs nvml_ended --source nvml
	# Busy 70 % of the 10 s: 90 J idle; of the 210 J active, 40:20:10.
	assert_equal "$(gpu node .idle_uj)" 90000000
	assert_equal "$(gpu process '"\(.pid) \(.energy_uj)"' | tr '\n' ' ')" \
	    "400 120000000 500 60000000 "
	assert_equal "$(gpu unattributed .energy_uj)" 30000000
	assert_equal "$(conserved)" OK
	run -0 grep '^kp_unattributed_gpu_joules_total' "$D/prom"
	assert_output "kp_unattributed_gpu_joules_total{gpu=\"0\",gpu_uuid=\"$A100\",node_name=\"gpu-1\"} 30.000000"
	run -0 promtool check metrics < "$D/prom"
}

# The kernel's GPUs: rapl-read's hwmon meters in one tree, proc-cputime's
# DRM clients in another, as /sys holds both.  Between the runs amdgpu
# (0000:03:00.0) draws 30 W, 300 J, while its client 8 (pid 400, shared
# with 401) runs 4 s and client 9 (pid 402) 2 s; i915 (0000:00:02.0)
# counts 5 J while its client 2 (pid 500) renders 2 s.
drm_setup() {
	HW=$(fixture_copy sysfs-gpu-hwmon)
	PC_SYSFS=$(fixture_copy sysfs-drm)
	new_amdgpu_process
	amdgpu_client 402 3 0 0
}

drm_two() {
	local i915=$HW/devices/pci0000:00/0000:00:02.0/hwmon/hwmon3 fd
	[ "$1" = second ] || return 0
	for fd in 400/5 400/6 401/5; do
		amdgpu_client "${fd%/*}" "${fd#*/}" 4000000000 1500000000
	done
	amdgpu_client 402 3 2000000000 0
	set_fdinfo 500 4 drm-engine-render "4000000000 ns"
	echo $(($(cat "$i915/energy1_input") + 5000000)) > "$i915/energy1_input"
}

# drm_runs SETUP TWO AMDGPU I915: SETUP, then the two runs, TWO changing
# the trees, of rapl-read's hwmon meters; AMDGPU and I915 are each GPU's
# split, and both add up.
drm_runs() {
	"$1"
	two_runs "$2" --sysfs "$HW" --source hwmon
	assert_equal "$(split 0000:03:00.0)" "$3"
	assert_equal "$(split 0000:00:02.0)" "$4"
	assert_equal "$(conserved 0000:03:00.0) $(conserved 0000:00:02.0)" \
	    "OK OK"
}

@test "hwmon and DRM: amdgpu's and i915's meters joined to their clients by PCI address, exact" {
	local amd=0000:03:00.0
	drm_runs drm_setup drm_two \
	    "300000000 120000000 400:120000000,402:60000000 0" \
	    "5000000 4000000 500:1000000 0"
	# xe's meter did not move, nor did its client: 0 J, no process's.
	assert_equal "$(gpu node .energy_uj 0000:04:00.0)" 0
	assert_equal "$(gpu process .pid 0000:04:00.0)" ""
	run -0 grep '^kepler_process_gpu_joules_total{pid="400"' "$D/prom"
	assert_output --regexp "gpu=\"$amd\",gpu_uuid=\"\",node_name=\"gpu-1\"\\} 120.000000\$"
	run -0 promtool check metrics < "$D/prom"
}

# As drm_setup, with proc-cputime run as user nobody over copies of its
# trees that nobody may read, but for 500's fdinfo (i915's client):
# root's, mode 0500.
drm_nobody_setup() {
	drm_setup
	nobody_dir gpu-pipeline
	cp -R "$P" "$NOBODY_DIR/proc"
	cp -R "$PC_SYSFS" "$NOBODY_DIR/sys"
	mkdir -m 777 "$NOBODY_DIR/st"
	chmod -R a+rX "$NOBODY_DIR"
	chmod 0500 "$NOBODY_DIR/proc/500/fdinfo"
	P=$NOBODY_DIR/proc PC_SYSFS=$NOBODY_DIR/sys
	PC_STATE=$NOBODY_DIR/st/pc.state PC_AS=as_nobody
	PC_SAYS=$(unreadable_said proc-cputime 1)
}

# As drm_two; i915's GT idles 7 s of the 10: busy 3 s, pid 500's 2 s in it.
drm_nobody_two() {
	drm_two "$1"
	[ "$1" = second ] || return 0
	idle_ms "$PC_SYSFS" "$I915_RC6" 7000
}

@test "hwmon and DRM, proc-cputime unprivileged: unreadable clients' time unattributed by the GPUs' residency, exact" {
	# i915: busy 3 s of 10 by its RC6 residency, its one client unread:
	# 1.5 J of its 5 J active and unattributed, 3.5 J idle.  amdgpu keeps
	# no residency: all 300 J active; its readable clients keep their 4 s
	# and 2 s of the 10, the rest is unattributed.
	drm_runs drm_nobody_setup drm_nobody_two \
	    "300000000 0 400:120000000,402:60000000 120000000" \
	    "5000000 3500000  1500000"
	run -0 grep '^kp_unattributed_gpu_joules_total{gpu="0000:00:02.0"' "$D/prom"
	assert_output --partial '} 1.500000'
}
