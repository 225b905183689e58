#!/usr/bin/env bats
# Every stage releases what it allocates: valgrind finds no leak and no
# invalid access.  Under SANITIZE=1, LeakSanitizer and ASan do this instead.

load test_helper
load proc_helper

setup() {
	[ "${KP_SANITIZE:-}" != 1 ] || skip "sanitizer build: ASan checks memory"
	P=$(fixture_copy proc-basic)
	IN=$BATS_TEST_TMPDIR/in
	{
		echo '{"type":"header","seq":0,"version":"1.0","producer":"test"}'
		echo '{"type":"energy","seq":1,"zone":"package","energy_uj":1000,"source":"powercap","estimated":false}'
		echo 'bad line'
		echo '{"type":"cpu","seq":1,"cpu_us":5,"total_cpu_us":10,"usage_ratio":0.5}'
		echo '{"type":"proc","seq":1,"pid":7,"starttime":1,"comm":"a","cpu_us":2,"state":"terminated","container_id":"c","pod_id":"p"}'
		echo '{"type":"interval","seq":1,"ts":"2026-11-22T00:00:00.000000Z","dt_us":1000}'
		echo '{"type":"energy","seq":2,"zone":"package","energy_uj":1000}'
	} > "$IN"
}

vg() {
	valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
	    --error-exitcode=99 "$@"
}

# After "run vg ...": valgrind found nothing, and the program did run.
clean() {
	case $status in
	99) fail "valgrind: $output" ;;
	126|127) fail "did not run: $output" ;;
	esac
}

@test "proc-cputime: no leaks in each mode" {
	run vg proc-cputime --proc "$P" -n 2 -i 10ms
	clean
	run vg proc-cputime --proc "$P" --state "$BATS_TEST_TMPDIR/s" </dev/null
	run vg proc-cputime --proc "$P" --state "$BATS_TEST_TMPDIR/s" </dev/null
	clean
	run vg proc-cputime --proc "$P" < "$IN"
	clean
}

@test "proc-cputime: no leaks with GPU time, from DRM clients and NVML (the tests' stub)" {
	local G SY S=$BATS_TEST_TMPDIR/s
	G=$(fixture_copy proc-gpu)
	SY=$(fixture_copy sysfs-drm)
	export LD_LIBRARY_PATH=$KP_ROOT/tests/nvml/full
	export KP_NVML_TRACE=$BATS_TEST_TMPDIR/trace
	printf '%s\n' "device GPU-0 NVIDIA A100-SXM4-40GB" "sample 0 400 100 40" \
	    > "$KP_NVML_TRACE"
	run vg proc-cputime --proc "$G" --sysfs "$SY" --state "$S" </dev/null
	clean
	echo "sample 0 400 200 40" >> "$KP_NVML_TRACE"
	echo "1010.00 1810.00" > "$G/uptime"
	sed -i 's/^drm-engine-gfx:\t1000000000/drm-engine-gfx:\t1100000000/' \
	    "$G/400/fdinfo/5"
	run vg proc-cputime --proc "$G" --sysfs "$SY" --state "$S" </dev/null
	clean
	assert_output --partial '"gpu_us":{"0":'
	assert_output --partial '"0000:03:00.0":100000'
	run vg proc-cputime --proc "$G" --sysfs "$SY" -n 2 -i 10ms
	clean
}

@test "proc-cputime: no leaks with exit accounting, from fixture counters and live" {
	C=$(fixture_copy cgroup-v2)
	S=$BATS_TEST_TMPDIR/s
	run vg proc-cputime --proc "$P" --cgroup-root "$C" --state "$S" </dev/null
	clean
	rm -r "$P/300"
	printf 'usage_usec 999000\n' > "$C/system.slice/ssh.service/cpu.stat"
	awk '{ $16 = 90; print }' "$P/1/stat" > "$P/1/stat.new"
	mv "$P/1/stat.new" "$P/1/stat"
	advance_node	# room for what the counters show
	run vg proc-cputime --proc "$P" --cgroup-root "$C" --state "$S" </dev/null
	clean
	assert_output --partial '"type":"exited"'
	run vg proc-cputime -n 2 -i 100ms
	clean
	assert_output --partial '"exits_dropped":'
	# Live as a filter, the exit records drained beside its input, and
	# refused, the listener let go.
	run vg proc-cputime < "$IN"
	clean
	run vg --trace-children=yes unshare -n proc-cputime -n 1 -i 10ms
	clean
}

@test "proc-cputime: no leaks with every name source, their indexes and cache" {
	run vg proc-cputime -a --proc "$FIXTURES/proc-identity" \
	    --root "$FIXTURES/node-root" --podman-root "$BATS_TEST_TMPDIR" -n 2 -i 10ms
	clean
	# A group record's names, taken and replaced.
	proc-cputime -a --proc "$FIXTURES/proc-identity" --root "$FIXTURES/node-root" < "$IN" |
	    kp-attribute > "$BATS_TEST_TMPDIR/named" || true
	run vg kp-aggregate --level container,pod,vm < "$BATS_TEST_TMPDIR/named"
	clean
}

@test "kp-attribute: no leaks, with and without --state" {
	run vg kp-attribute --proc "$P" < "$IN"
	clean
	run vg kp-attribute --proc "$P" --state "$BATS_TEST_TMPDIR/s" < "$IN"
	run vg kp-attribute --proc "$P" --state "$BATS_TEST_TMPDIR/s" < "$IN"
	clean
}

@test "kp-aggregate: no leaks" {
	kp-attribute --proc "$P" < "$IN" > "$BATS_TEST_TMPDIR/attributed" || true
	run vg kp-aggregate < "$BATS_TEST_TMPDIR/attributed"
	clean
}

@test "rapl-read: no leaks" {
	SY=$(fixture_copy sysfs-2socket)
	run vg rapl-read --sysfs "$SY" --proc "$P" -n 2 -i 10ms
	clean
	run vg rapl-read --sysfs "$SY" --proc "$P" --state "$BATS_TEST_TMPDIR/r"
	run vg rapl-read --sysfs "$SY" --proc "$P" --state "$BATS_TEST_TMPDIR/r"
	clean
	run vg rapl-read --sysfs "$BATS_TEST_TMPDIR/none" --proc "$P" -n 1 -i 10ms
	clean
}

@test "kp-fmt: no leaks in any format" {
	kp-attribute --proc "$P" < "$IN" 2>/dev/null | kp-aggregate > "$BATS_TEST_TMPDIR/attributed" || true
	for f in table csv json prometheus; do
		run vg kp-fmt -f "$f" < "$BATS_TEST_TMPDIR/attributed"
		clean
	done
	# --summary's lines of the open interval, summed or dropped.
	run vg kp-fmt -f json --summary < "$BATS_TEST_TMPDIR/attributed"
	clean
	run vg kp-fmt -f json --summary < "$IN"
	clean
}

@test "kp-attribute: no leaks in every split and with the terminated tracker" {
	"$KP_ROOT/scripts/kp-gen" --seed 2 --intervals 6 --processes 12 --churn 200 |
	    awk '/"type":"energy","seq":3,/ { next } 1' > "$BATS_TEST_TMPDIR/gen"
	run vg kp-attribute --idle proportional --denominator processes < "$BATS_TEST_TMPDIR/gen"
	clean
	run vg kp-attribute --split baseline --baseline-watts 10 --baseline-watts dram=1 --max-terminated 1 < "$BATS_TEST_TMPDIR/gen"
	clean
	run vg kp-attribute --state "$BATS_TEST_TMPDIR/t" < "$BATS_TEST_TMPDIR/gen"
	run vg kp-attribute --state "$BATS_TEST_TMPDIR/t" < "$BATS_TEST_TMPDIR/gen"
	clean
}

@test "kp-aggregate: no leaks with every level, --by, --state and ended groups" {
	"$KP_ROOT/scripts/kp-gen" --seed 2 --intervals 6 --processes 12 --churn 200 |
	    kp-attribute > "$BATS_TEST_TMPDIR/attributed"
	run vg kp-aggregate --by comm --by cgroup --drop-processes < "$BATS_TEST_TMPDIR/attributed"
	clean
	run vg kp-aggregate --state "$BATS_TEST_TMPDIR/a" < "$BATS_TEST_TMPDIR/attributed"
	run vg kp-aggregate --state "$BATS_TEST_TMPDIR/a" < "$BATS_TEST_TMPDIR/attributed"
	clean
}

@test "kp-attribute, kp-aggregate: no leaks loading a state of many pieces, whole or broken in its last part" {
	local gen=$BATS_TEST_TMPDIR/gen s=$BATS_TEST_TMPDIR/s st args
	"$KP_ROOT/scripts/kp-gen" --seed 2 --intervals 2 --processes 3000 \
	    --dense 1 > "$gen.kp-attribute"
	kp-attribute --proc "$P" < "$gen.kp-attribute" > "$gen.kp-aggregate"
	for st in kp-attribute kp-aggregate; do
		args=()
		[ "$st" = kp-aggregate ] || args=(--proc "$P")
		grep -v '"seq":2,' "$gen.$st" > "$gen.one"
		grep -v '"seq":1,' "$gen.$st" > "$gen.two"
		rm -f "$s"
		run -0 "$st" "${args[@]}" --state "$s" < "$gen.one"
		# past the 64 KiB the loader parses at once
		[ "$(stat -c %s "$s")" -gt 98304 ]
		cp "$s" "$s.one"
		run vg "$st" "${args[@]}" --state "$s" < "$gen.two"
		clean
		assert_success
		assert_output --partial '"seq":2,'
		sed 's/\("[0-9]*:[0-9]*":{\)/\1"x":1x,/2900' "$s.one" > "$s"
		run vg "$st" "${args[@]}" --state "$s" < "$gen.two"
		clean
		assert_success
		assert_line "$st: $s: corrupt state file, starting a new baseline"
	done
}
