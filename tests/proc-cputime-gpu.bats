#!/usr/bin/env bats
# proc-cputime's GPU time (proc-cputime(1), GPU time): DRM clients from
# /proc/PID/fdinfo as amdgpu, i915 and xe write them, two samples of a
# fixture tree apart, each process's and each GPU's time exact.
# shellcheck disable=SC2154 # bats's run sets stderr and stderr_lines

load test_helper
load proc_helper

# The fixture: pid 400 (blender) holds amdgpu client 8 on 0000:03:00.0
# twice (fd 5, and fd 6 its dup) and shares it with its fork 401; pid 500
# (glxgears) holds i915 client 2 on 0000:00:02.0; pid 600 (ollama) xe
# client 14 on 0000:04:00.0.
setup() {
	P=$(fixture_copy proc-gpu)
	SY=$(fixture_copy sysfs-drm)
	S=$BATS_TEST_TMPDIR/pc.state
}

teardown() {
	nobody_dir_remove
}

run_state() {
	run --separate-stderr proc-cputime --proc "$P" --sysfs "$SY" \
	    --state "$S" "$@" </dev/null
}

# The second sample: 10 s later by /proc/uptime (advance_node); amdgpu's
# client 8 ran 0.6 s of gfx and 0.2 s of compute, i915's client 2 0.4 s
# of render and 0.05 s of video, xe's client 14 48,000,000 of the
# 192,000,000 GPU cycles that passed on rcs: 2.5 s of the 10.
second_sample() {
	advance_node
	for fd in 400/5 400/6 401/5; do
		amdgpu_client "${fd%/*}" "${fd#*/}" 1600000000 700000000
	done
	set_fdinfo 500 4 drm-engine-render "2400000000 ns"
	set_fdinfo 500 4 drm-engine-video "350000000 ns"
	set_fdinfo 600 7 drm-cycles-rcs 76257900
	for e in rcs bcs vcs vecs ccs; do
		set_fdinfo 600 7 "drm-total-cycles-$e" 7847183225
	done
}

# The gpu_us of the last run's proc record of pid $1, or of the cpu record.
proc_gpu() {
	jq -sc "map(select(.type == \"proc\" and .pid == $1))[0].gpu_us" \
	    <<< "$output"
}
node_gpu() {
	jq -sc 'map(select(.type == "cpu"))[0].gpu_us' <<< "$output"
}

@test "amdgpu, i915 and xe clients: each process's and each GPU's time over the interval, exact" {
	run_state
	assert_success
	assert_equal "$stderr" ""
	second_sample
	run_state
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(proc_gpu 400)" '{"0000:03:00.0":800000}'
	assert_equal "$(proc_gpu 500)" '{"0000:00:02.0":450000}'
	assert_equal "$(proc_gpu 600)" '{"0000:04:00.0":2500000}'
	assert_equal "$(node_gpu)" \
	    '{"0000:00:02.0":450000,"0000:03:00.0":800000,"0000:04:00.0":2500000}'
	# i915's drm-engine-capacity-video: 2 is a count of engines, no time.
}

@test "a client shared by dup and fork counts once, for the lowest pid holding it" {
	run_state
	second_sample
	run_state
	assert_equal "$(proc_gpu 400)" '{"0000:03:00.0":800000}'
	assert_equal "$(proc_gpu 401)" null
	# 401 gets the client where 400, which opened it, has closed it.
	rm "$P/400/fd/5" "$P/400/fd/6"
	advance_node
	echo "1020.00 1820.00" > "$P/uptime"
	amdgpu_client 401 5 1700000000 700000000
	run_state
	assert_equal "$(proc_gpu 400)" null
	assert_equal "$(proc_gpu 401)" '{"0000:03:00.0":100000}'
}

@test "a process that used a GPU but no CPU is written, with cpu_us 0" {
	run_state
	second_sample
	run_state
	run jq -c 'select(.pid == 500) | [.cpu_us, .state, .gpu_us]' <<< "$output"
	assert_output '[0,"running",{"0000:00:02.0":450000}]'
	# A process whose CPU and GPU time did not move has no record.
	run_state
	refute_line --partial '"pid":500,'
}

@test "engines in parallel: a GPU's time past the interval is the interval, its processes scaled alike" {
	run_state
	advance_node
	# 8 s of gfx and 8 s of compute on client 8, and 4 s on client 9 of
	# a new process: 20 s of engine time in 10 s, brought down by half.
	for fd in 400/5 400/6 401/5; do
		amdgpu_client "${fd%/*}" "${fd#*/}" 9000000000 8500000000
	done
	new_amdgpu_process
	amdgpu_client 402 3 4000000000 0
	run_state
	assert_success
	assert_equal "$(proc_gpu 400)" '{"0000:03:00.0":8000000}'
	assert_equal "$(proc_gpu 402)" '{"0000:03:00.0":2000000}'
	run jq -c 'select(.type == "cpu") | .gpu_us["0000:03:00.0"]' <<< "$output"
	assert_output 10000000
}

@test "a client opened in the interval counts all its engine time" {
	run_state
	advance_node
	new_amdgpu_process
	amdgpu_client 402 3 100000000 25000000
	run_state
	assert_equal "$(proc_gpu 402)" '{"0000:03:00.0":125000}'
	assert_equal "$(node_gpu)" \
	    '{"0000:00:02.0":0,"0000:03:00.0":125000,"0000:04:00.0":0}'
}

@test "a GPU that goes away has no figure from then on" {
	run_state
	second_sample
	rm "$SY/class/drm/card2" "$SY/class/drm/renderD130"
	rm "$P/600/fd/7" "$P/600/fdinfo/7"
	run_state
	assert_success
	assert_equal "$(node_gpu)" '{"0000:00:02.0":450000,"0000:03:00.0":800000}'
	assert_equal "$(proc_gpu 600)" null
}

@test "an fdinfo that is no DRM client's, or names no PCI address, is skipped" {
	run_state
	second_sample
	set_fdinfo 500 4 drm-pdev '..\/..\/x"'
	printf 'pos:\t0\nflags:\t02\n' > "$P/600/fdinfo/7"
	run_state
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(proc_gpu 500)" null
	assert_equal "$(proc_gpu 600)" null
	assert_equal "$(proc_gpu 400)" '{"0000:03:00.0":800000}'
}

# Two samples with options "$@", the second after second_sample.
two_samples() {
	run -0 proc-cputime "$@" --state "$S" </dev/null
	second_sample
	run -0 --separate-stderr proc-cputime "$@" --state "$S" </dev/null
}

@test "--no-gpu: no gpu_us, and no record for a process whose GPU time alone moved" {
	two_samples --proc "$P" --sysfs "$SY" --no-gpu
	refute_output --partial gpu_us
	refute_line --partial '"pid":500,'
	assert_line --partial '"type":"cpu"'
}

@test "no DRM node under --sysfs, or --proc without --sysfs: no GPU is looked for" {
	two_samples --proc "$P"
	refute_output --partial gpu_us
	rm "$SY"/class/drm/card* "$SY"/class/drm/renderD*
	rm "$S"
	two_samples --proc "$P" --sysfs "$SY"
	refute_output --partial gpu_us
}

# The second sample's residency: in its 10 s, i915's GT idled 9 s (busy
# 1 s); xe's gt0 7.5 s and its gt1 9.5 s (busy 2.5 s + 0.5 s).
second_idle() {
	idle_ms "$1" "$I915_RC6" 9000
	idle_ms "$1" "$XE_GT/gt0/gtidle/idle_residency_ms" 7500
	idle_ms "$1" "$XE_GT/gt1/gtidle/idle_residency_ms" 9500
}

# nobody_tree: the fixtures copied where user nobody may read them,
# with the state there too; run_nobody runs proc-cputime as nobody.
nobody_tree() {
	nobody_dir proc-cputime-gpu
	cp -R "$P" "$NOBODY_DIR/proc"
	cp -R "$SY" "$NOBODY_DIR/sys"
	mkdir -m 777 "$NOBODY_DIR/st"
	chmod -R a+rX "$NOBODY_DIR"
	P=$NOBODY_DIR/proc
	SY=$NOBODY_DIR/sys
	S=$NOBODY_DIR/st/pc.state
}

run_nobody() {
	run --separate-stderr as_nobody proc-cputime --proc "$P" \
	    --sysfs "$SY" --state "$S" </dev/null
}

@test "another user's descriptors without ptrace access: said once, each DRM GPU's busy time its own, their time in no record" {
	nobody_tree
	# Root's, mode 0500: nobody may not list 600's descriptors (xe's
	# client) nor read 500's fdinfo (i915's).
	chmod 0500 "$P/600/fd" "$P/500/fdinfo"
	run_nobody
	assert_success
	assert_equal "$stderr" "$(unreadable_said proc-cputime 2)"
	second_sample
	second_idle "$SY"
	run_nobody
	assert_success
	assert_equal "${#stderr_lines[@]}" 1
	assert_equal "$(proc_gpu 400)" '{"0000:03:00.0":800000}'
	assert_equal "$(proc_gpu 500)" null
	assert_equal "$(proc_gpu 600)" null
	# i915 and xe by residency; amdgpu keeps none: the whole interval.
	assert_equal "$(node_gpu)" \
	    '{"0000:00:02.0":1000000,"0000:03:00.0":10000000,"0000:04:00.0":3000000}'
}

@test "unreadable processes: a GPU's residency never below its readable clients, nor one whose GTs changed; one that ended is none" {
	nobody_tree
	chmod 0500 "$P/600/fd"
	run_nobody
	assert_success
	assert_equal "$stderr" "$(unreadable_said proc-cputime 1)"
	second_sample
	# i915's GT idled 9.8 s: 0.2 s busy, below its client's 0.45 s.
	idle_ms "$SY" "$I915_RC6" 9800
	# xe's media GT is gone: its residency is no figure, all 10 s busy.
	idle_ms "$SY" "$XE_GT/gt0/gtidle/idle_residency_ms" 7500
	rm -r "${SY:?}/$XE_GT/gt1"
	run_nobody
	assert_success
	assert_equal "$(proc_gpu 500)" '{"0000:00:02.0":450000}'
	assert_equal "$(node_gpu)" \
	    '{"0000:00:02.0":450000,"0000:03:00.0":10000000,"0000:04:00.0":10000000}'
	# 600 ends as it is read (its fd is gone, ENOENT): that is no
	# unreadable process; the GPUs' time is their clients' again.
	rm -r "${P:?}/600/fd" "${P:?}/600/fdinfo"
	echo "1020.00 1820.00" > "$P/uptime"
	idle_ms "$SY" "$I915_RC6" 9000
	run_nobody
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(node_gpu)" \
	    '{"0000:00:02.0":0,"0000:03:00.0":0,"0000:04:00.0":0}'
}

@test "a descriptor whose link this user may not read (as after a setuid exec) makes its process unreadable" {
	nobody_tree
	# Listed, but not searched: each readlink of 600's fds is denied.
	chmod 0744 "$P/600/fd"
	run_nobody
	assert_success
	assert_equal "$stderr" "$(unreadable_said proc-cputime 1)"
	second_sample
	second_idle "$SY"
	run_nobody
	assert_equal "$(node_gpu)" \
	    '{"0000:00:02.0":1000000,"0000:03:00.0":10000000,"0000:04:00.0":3000000}'
}

@test "kp-attribute's own sampling reads GPU time as proc-cputime does, and takes --no-gpu" {
	local in=$BATS_TEST_TMPDIR/in
	printf '%s\n' '{"type":"header","seq":0,"version":"1.2","producer":"test"}' > "$in"
	run -0 --separate-stderr kp-attribute --proc "$P" --sysfs "$SY" \
	    --state "$S" < "$in"
	second_sample
	printf '%s\n' '{"type":"energy","seq":1,"zone":"package","energy_uj":1000000,"watts":0.1,"source":"powercap","estimated":false,"sockets":1}' \
	    '{"type":"interval","seq":1,"dt_us":10000000}' >> "$in"
	run -0 --separate-stderr kp-attribute --proc "$P" --sysfs "$SY" \
	    --state "$S" < "$in"
	assert_equal "$stderr" ""
	assert_line --partial '"type":"node"'
	run -2 --separate-stderr kp-attribute --no-gpu=1
}

@test "kp-attribute's own sampling, unprivileged: an unreadable client's GPU time unattributed, not idle" {
	nobody_tree
	chmod 0500 "$P/500/fdinfo"
	local in=$NOBODY_DIR/in gpu='{"type":"energy","seq":1,"zone":"gpu","device":"%s","energy_uj":%s,"watts":0,"source":"hwmon","estimated":false,"sockets":1}\n'
	printf '%s\n' '{"type":"header","seq":0,"version":"1.2","producer":"test"}' > "$in"
	attribute_nobody() {
		run --separate-stderr as_nobody kp-attribute --proc "$P" \
		    --sysfs "$SY" --state "$S" < "$in"
	}
	attribute_nobody
	assert_success
	assert_equal "$stderr" "$(unreadable_said kp-attribute 1)"
	second_sample
	second_idle "$SY"
	# In the 10 s, i915 used 5 J, amdgpu 300 J.
	printf "$gpu" 0000:00:02.0 5000000 0000:03:00.0 300000000 >> "$in"
	printf '%s\n' '{"type":"interval","seq":1,"dt_us":10000000}' >> "$in"
	attribute_nobody
	assert_success
	# i915: busy 1 s of 10 by its residency, no readable client: 0.5 J
	# active, all unattributed.  amdgpu, without residency: all 300 J
	# active, pid 400's 0.8 s of the 10 s its 24 J, the rest unattributed.
	run jq -rs 'map(select(.zone == "gpu")) | group_by(.device)[]
	    | (map(select(.type == "node"))[0]) as $n
	    | "\($n.device) \($n.idle_uj) \(map(select(.type == "process")
	    | "\(.pid):\(.energy_uj)") | join(",")) \(map(select(.type ==
	    "unattributed"))[0].energy_uj)"' <<< "$output"
	assert_output - <<-'EOF'
		0000:00:02.0 4500000  500000
		0000:03:00.0 0 400:24000000 276000000
	EOF
}

# NVIDIA GPUs, through the tests' stub of libnvidia-ml.so.1 replaying
# $KP_NVML_TRACE (tests/nvml-stub.c); no --sysfs, so no DRM GPU.
nvml_setup() {
	export LD_LIBRARY_PATH=$KP_ROOT/tests/nvml/full
	export KP_NVML_TRACE=$BATS_TEST_TMPDIR/nvml.trace
	export KP_NVML_CALLS=$BATS_TEST_TMPDIR/nvml.calls
}

# nvml_trace FROM TO: GPU 0's sample buffer: every 200 ms from step FROM
# to step TO, pid 400 at 40 % of the SMs, 500 at 20 %, 600 at 10 %.
nvml_trace() {
	local k
	echo "device GPU-5f3c0c55-8d1e-4c1b-9a3e-0d1f2a3b4c5d NVIDIA A100-SXM4-40GB"
	for ((k = $1; k <= $2; k++)); do
		echo "sample 0 400 $((k * 200000)) 40"
		echo "sample 0 500 $((k * 200000)) 20"
		echo "sample 0 600 $((k * 200000)) 10"
	done
}

nvml_run() {
	run --separate-stderr proc-cputime --proc "$P" --state "$S" "$@" \
	    </dev/null
}

@test "NVML: processes at 40 % and 20 % SM over 10 s, and one that ended, in its GPU's time only" {
	nvml_setup
	nvml_trace 41 50 > "$KP_NVML_TRACE"	# up to 10 s: the baseline's
	nvml_run
	assert_success
	assert_equal "$stderr" ""
	# 10 s later, 50 samples more; pid 600 ended meanwhile.
	nvml_trace 45 100 > "$KP_NVML_TRACE"
	advance_node
	rm -r "$P/600"
	nvml_run
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(proc_gpu 400)" '{"0":4000000}'
	assert_equal "$(proc_gpu 500)" '{"0":2000000}'
	assert_equal "$(jq -c 'select(.pid == 600) | [.state, .gpu_us]' \
	    <<< "$output")" '["terminated",null]'
	run jq -c 'select(.type == "cpu") | [.gpu_us, .gpu_coverage]' <<< "$output"
	assert_output '[{"0":7000000},null]'
}

@test "NVML: no new samples (NOT_FOUND) is an idle GPU, and no process record" {
	nvml_setup
	nvml_trace 41 50 > "$KP_NVML_TRACE"
	nvml_run
	advance_node
	nvml_run
	assert_success
	assert_equal "$(node_gpu)" '{"0":0}'
	refute_line --partial '"type":"proc"'
}

@test "NVML: an interval longer than the driver's sample buffer says what it covered" {
	nvml_setup
	nvml_trace 41 50 > "$KP_NVML_TRACE"
	nvml_run
	# 10 s later, the buffer holds only its last 2 s.
	nvml_trace 91 100 > "$KP_NVML_TRACE"
	advance_node
	nvml_run
	assert_success
	assert_equal "$(proc_gpu 400)" '{"0":800000}'
	run jq -c 'select(.type == "cpu") | [.gpu_us, .gpu_coverage]' <<< "$output"
	assert_output '[{"0":1400000},{"0":0.2}]'
}

@test "NVML: a GPU that is lost has no figure from then on, said once" {
	nvml_setup
	nvml_trace 41 50 > "$KP_NVML_TRACE"
	nvml_run
	{ nvml_trace 45 100; echo "handle 0 GPU_IS_LOST"; } > "$KP_NVML_TRACE"
	advance_node
	nvml_run
	assert_success
	assert_equal "$stderr" "proc-cputime: nvml: GPU 0: GPU is lost: no GPU time from it (proc-cputime(1), GPU time)"
	refute_output --partial gpu_us
}

@test "NVML: a MIG GPU's processes are out of scope, said once" {
	nvml_setup
	{
		nvml_trace 41 50
		echo "utilization 0 NOT_SUPPORTED"
		echo "process 0 400 1"
	} > "$KP_NVML_TRACE"
	nvml_run
	assert_success
	assert_equal "$stderr" "proc-cputime: nvml: GPU 0: MIG is enabled: per-process utilisation is out of scope: no GPU time from it (proc-cputime(1), GPU time)"
}

@test "NVML: --no-gpu opens no library; a missing one is no GPU, quietly" {
	nvml_setup
	nvml_trace 41 50 > "$KP_NVML_TRACE"
	nvml_run --no-gpu
	assert_success
	[ ! -e "$KP_NVML_CALLS" ]
	advance_node
	LD_LIBRARY_PATH=$BATS_TEST_TMPDIR nvml_run
	assert_success
	assert_equal "$stderr" ""
	refute_output --partial gpu_us
	[ ! -e "$KP_NVML_CALLS" ]
}

@test "a state file without GPU time makes the run GPU time's baseline, not every client's time since it opened" {
	run -0 proc-cputime --proc "$P" --sysfs "$SY" --no-gpu --state "$S" \
	    </dev/null
	second_sample
	run_state
	assert_success
	assert_equal "$(proc_gpu 400)" null
	assert_equal "$(node_gpu)" \
	    '{"0000:00:02.0":0,"0000:03:00.0":0,"0000:04:00.0":0}'
	advance_node
	echo "1020.00 1820.00" > "$P/uptime"
	for fd in 400/5 400/6 401/5; do
		amdgpu_client "${fd%/*}" "${fd#*/}" 1700000000 700000000
	done
	run_state
	assert_equal "$(proc_gpu 400)" '{"0000:03:00.0":100000}'
}

@test "a platform GPU (panfrost): its name is the device, its ns count, cycles without a total do not" {
	mkdir -p "$SY/devices/platform/fde60000.gpu/drm/card3"
	ln -s ../../../fde60000.gpu "$SY/devices/platform/fde60000.gpu/drm/card3/device"
	ln -s ../../devices/platform/fde60000.gpu/drm/card3 "$SY/class/drm/card3"
	panfrost() {	# FRAGMENT_NS VERTEX_NS CYCLES
		printf 'pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t1092\ndrm-driver:\tpanfrost\ndrm-client-id:\t3\ndrm-pdev:\tfde60000.gpu\ndrm-engine-fragment:\t%s ns\ndrm-cycles-fragment:\t%s\ndrm-maxfreq-fragment:\t800000000 Hz\ndrm-curfreq-fragment:\t800000000 Hz\ndrm-engine-vertex-tiler:\t%s ns\ndrm-cycles-vertex-tiler:\t%s\ndrm-maxfreq-vertex-tiler:\t800000000 Hz\ndrm-curfreq-vertex-tiler:\t800000000 Hz\ndrm-total-resident:\t4 MiB\n' \
		    "$1" "$3" "$2" "$3" > "$P/500/fdinfo/9"
	}
	ln -s /dev/dri/card3 "$P/500/fd/9"
	panfrost 1000000000 500000000 7000000
	run_state
	second_sample
	panfrost 1300000000 600000000 999000000
	run_state
	assert_success
	assert_equal "$(proc_gpu 500)" '{"0000:00:02.0":450000,"fde60000.gpu":400000}'
}
