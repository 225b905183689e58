#!/usr/bin/env bats
# A VM guest's energy from its host: kp-fmt -f powercap's tree read by the
# guest's rapl-read (rapl-read(1), Energy from the host; kp-fmt(1),
# Powercap trees), to the microjoule.

load test_helper

U=8e4b3a3c-1c2d-4e5f-8a9b-0c1d2e3f4a5b

setup() {
	D=$BATS_TEST_TMPDIR
	TREE=$D/vms
	mkdir "$TREE"
	GP=$(fixture_copy proc-basic)
}

# host_write UJ [DT_US]: the host's kp-fmt adds UJ to the VM's package
# counter, as after one host interval of DT_US.
host_write() {
	printf '%s\n' \
	    '{"type":"header","seq":0,"version":"1.2","producer":"test","node_name":"node-a"}' \
	    '{"type":"node","seq":1,"zone":"package","energy_uj":1,"source":"powercap","estimated":false}' \
	    "{\"type\":\"vm\",\"seq\":1,\"zone\":\"package\",\"vm_id\":\"$U\",\"processes\":1,\"cpu_us\":1,\"energy_uj\":$1,\"watts\":1,\"total_uj\":$1,\"state\":\"running\"}" \
	    "{\"type\":\"interval\",\"seq\":1,\"dt_us\":${2:-1000000}}" |
	    kp-fmt -f powercap --dir "$TREE"
}
export -f host_write
export U TREE

@test "the guest reads the tree unchanged: source host, the host's node, not an estimate" {
	host_write 400
	run -0 --separate-stderr rapl-read --sysfs "$TREE/$U" --proc "$GP" --source powercap -n 1 -i 10ms
	run -0 jq -c 'select(.type == "energy") | [.zone, .source, .host, .estimated]' <<< "$output"
	assert_output '["package","host","node-a",false]'
}

@test "a counter the host replaces while the guest measures is read anew: the energy is the host's to the uJ" {
	host_write 400
	# rapl-read -- CMD: a baseline, the host's write, the last sample.
	run -0 --separate-stderr rapl-read --sysfs "$TREE/$U" --proc "$GP" --source powercap -- \
	    bash -c 'host_write 123456789'
	run -0 jq -s 'map(select(.type == "energy") | .energy_uj) | add' <<< "$output"
	assert_output 123456789
}

@test "a guest at -i 100ms while the host writes every second keeps each host step, 3 s in all" {
	host_write 1
	# 500 J in one host second is more than 2000 W could count in a guest
	# interval of 100 ms, not in 100 ms and the host's interval.
	run -0 --separate-stderr rapl-read --sysfs "$TREE/$U" --proc "$GP" --source powercap -i 100ms -- \
	    bash -c 'for i in 1 2 3; do sleep 1; host_write 500000000; done'
	run -0 jq -s 'map(select(.type == "energy") | .energy_uj) | add' <<< "$output"
	assert_output 1500000000
	assert_equal "$stderr" ""
}

@test "without kp-host the step limit is the guest's own interval: a step no 2000 W make is dropped and said" {
	host_write 1
	rm "$TREE/$U/kp-host"
	# 5000 J at once: more than 2000 W count in the last interval of a
	# command that only writes, yet less than in it and a host second.
	run -0 --separate-stderr rapl-read --sysfs "$TREE/$U" --proc "$GP" --source powercap -- \
	    bash -c 'host_write 5000000000; rm "$TREE/$U/kp-host"'
	echo "$output" > "$D/out"
	assert_equal "$(jq -s 'map(select(.type == "energy") | .energy_uj) | add' "$D/out")" null
	assert_equal "${stderr%% in *}" "rapl-read: counter 'intel-rapl:0' went from 1 to 5000000001 uJ"
}

@test "a guest whose mount is missing falls back to the model and says which directory had no zones" {
	cp "$FIXTURES/cpuinfo/qemu" "$GP/cpuinfo"
	run -0 --separate-stderr rapl-read --sysfs "$D/not-mounted" --proc "$GP" -n 1 -i 10ms
	assert_equal "$stderr" "rapl-read: no RAPL zones under '$D/not-mounted/class/powercap': estimating energy (--source model)"
	assert_equal "$(jq -r 'select(.type == "energy") | .source' <<< "$output")" model
}
