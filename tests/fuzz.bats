#!/usr/bin/env bats
# The libFuzzer harnesses of tests/fuzz build and run: a short smoke, so
# that they never rot.  Each must replay its seeds to its coverage floor
# (tests/fuzz/NAME.floor), so a harness that returns early fails here.

load test_helper

@test "make fuzz: every harness runs its seeds to its floor without a crash" {
	run -0 make -s -C "$KP_ROOT" fuzz FUZZ_SECONDS=2
	assert_line --regexp '^record: [0-9]+ executions, [0-9]+/s, coverage [0-9]+ \(floor [0-9]+\), 0 crashes$'
	assert_line --regexp '^recordfd: [0-9]+ executions, [0-9]+/s, coverage [0-9]+ \(floor [0-9]+\), 0 crashes$'
	assert_line --regexp '^procfs: [0-9]+ executions, [0-9]+/s, coverage [0-9]+ \(floor [0-9]+\), 0 crashes$'
	assert_line --regexp '^aggstate: [0-9]+ executions, [0-9]+/s, coverage [0-9]+ \(floor [0-9]+\), 0 crashes$'
	assert_line --regexp '^attribute: [0-9]+ executions, [0-9]+/s, coverage [0-9]+ \(floor [0-9]+\), 0 crashes$'
	assert_line --regexp '^aggregate: [0-9]+ executions, [0-9]+/s, coverage [0-9]+ \(floor [0-9]+\), 0 crashes$'
	assert_line --regexp '^powercap: [0-9]+ executions, [0-9]+/s, coverage [0-9]+ \(floor [0-9]+\), 0 crashes$'
	assert_line --regexp '^cgroup: [0-9]+ executions, [0-9]+/s, coverage [0-9]+ \(floor [0-9]+\), 0 crashes$'
	assert_line --regexp '^state: [0-9]+ executions, [0-9]+/s, coverage [0-9]+ \(floor [0-9]+\), 0 crashes$'
	assert_line --regexp '^taskstats: [0-9]+ executions, [0-9]+/s, coverage [0-9]+ \(floor [0-9]+\), 0 crashes$'
	assert_line --regexp '^raplstate: [0-9]+ executions, [0-9]+/s, coverage [0-9]+ \(floor [0-9]+\), 0 crashes$'
	assert_line --regexp '^attrstate: [0-9]+ executions, [0-9]+/s, coverage [0-9]+ \(floor [0-9]+\), 0 crashes$'
	assert_line --regexp '^fmt: [0-9]+ executions, [0-9]+/s, coverage [0-9]+ \(floor [0-9]+\), 0 crashes$'
	assert_line --regexp '^filter: [0-9]+ executions, [0-9]+/s, coverage [0-9]+ \(floor [0-9]+\), 0 crashes$'
}

# Inputs the harnesses found, through the commands that read them.

@test "a boot_id that is not one counts as none: --state still saves" {
	P=$(fixture_copy proc-basic)
	S=$BATS_TEST_TMPDIR/pc.state
	printf '\377\376-not-a-boot-id\n' > "$P/sys/kernel/random/boot_id"
	run -0 --separate-stderr proc-cputime --proc "$P" --state "$S" </dev/null
	run -0 jq -r .boot_id "$S"
	assert_output ""
	run -0 --separate-stderr proc-cputime --proc "$P" --state "$S" </dev/null
	assert_line -n 2 --partial '"type":"interval","seq":1,'
}

@test "an uptime with a sign or more ticks than int64_t holds is no uptime" {
	P=$(fixture_copy proc-basic)
	for up in '-5.00 3.00' '100000000000000000.00 3.00'; do
		echo "$up" > "$P/uptime"
		run -1 --separate-stderr proc-cputime --proc "$P" -n 1
		assert_equal "$stderr" "proc-cputime: $P/uptime: not an uptime as the kernel writes it"
	done
}

@test "a pod slice whose id is no uid names no pod, however long" {
	P=$(fixture_copy proc-basic)
	uid=0a1b2c3d_4e5f_6789_abcd_ef0123456789
	for id in "${uid}_____" "${uid%_*}" "$(printf '%0200d' 0)"; do
		echo "0::/kubepods.slice/kubepods-pod$id.slice" > "$P/300/cgroup"
		run -0 --separate-stderr proc-cputime -a -i 1ms -n 1 --proc "$P"
		assert_line -n 6 --partial '"pid":300,'
		assert_line -n 6 --partial '"kind":"host",'
		refute_line -n 6 --partial '"pod_id"'
	done
	echo "0::/kubepods.slice/kubepods-pod$uid.slice" > "$P/300/cgroup"
	run -0 --separate-stderr proc-cputime -a -i 1ms -n 1 --proc "$P"
	assert_line -n 6 --partial '"pod_id":"0a1b2c3d-4e5f-6789-abcd-ef0123456789"'
}

@test "a negative energy total in a state file is left out, not summed on" {
	S=$BATS_TEST_TMPDIR/ag.state
	IN=$BATS_TEST_TMPDIR/in
	rec() {
		printf '%s\n' '{"type":"header","seq":0,"version":"1.0","producer":"test"}' \
		    "{\"type\":\"process\",\"seq\":$1,\"zone\":\"package\",\"pid\":1,\"starttime\":1,\"comm\":\"p\",\"cpu_us\":10,\"energy_uj\":$2,\"container_id\":\"a\",\"state\":\"running\"}" \
		    "{\"type\":\"interval\",\"seq\":$1,\"ts\":\"2026-11-22T00:00:00.000000Z\",\"dt_us\":1000000}" > "$IN"
	}
	rec 1 7
	run -0 kp-aggregate --level container --state "$S" < "$IN"
	jq -c '.data.levels.container_id.groups[0].totals.package = -100' "$S" > "$S.new"
	mv "$S.new" "$S"
	rec 2 5
	run -0 --separate-stderr kp-aggregate --level container --state "$S" < "$IN"
	assert_equal "$(jq -r 'select(.type == "container") | .total_uj' <<< "$output")" 5
}

@test "a stored seq that no next interval can follow, or a time before the clock began, is no sample" {
	SY=$(fixture_copy sysfs-1socket)
	P=$(fixture_copy proc-basic)
	S=$BATS_TEST_TMPDIR/st
	# jq would round these integers: sed writes them as a run never does.
	for edit in 's/"seq":[0-9]*/"seq":9223372036854775807/' \
	    's/"mono_us":[0-9]*/"mono_us":-5/'; do
		for cmd in "rapl-read --sysfs $SY" "proc-cputime --head"; do
			rm -f "$S"
			$cmd --proc "$P" --state "$S" > /dev/null
			sed -i "$edit" "$S"
			run -0 --separate-stderr $cmd --proc "$P" --state "$S"
			assert_equal "$stderr" "${cmd%% *}: $S: unusable sample in the state file, starting a new baseline"
			assert_output --partial '"type":"header"'
			refute_output --partial '"type":"interval"'
			run -0 jq .data.seq "$S"
			assert_output 0
		done
	done
}

@test "kp-fmt --summary: an other row whose sum passes energy_uj's most, 2^60, is reported, exit 3" {
	run -3 --separate-stderr kp-fmt -f json --summary --summary-rows 2 \
	    < "$KP_ROOT/tests/fuzz/fmt/regress-other-row-overflow"
	assert_equal "$stderr" "kp-fmt: <stdin>: --summary: the sum of energy_uj in an other row passes 1152921504606846976, held there"
	assert_line --partial '"comm":"(other)","cpu_us":2,"energy_uj":1152921504606846976,'
}
