#!/usr/bin/env bats
# The node's identity in a producer's header (kp-records(5)): node_name
# from --node-name, NODE_NAME or the host name, and cpu_info from the
# cpuinfo of the --proc tree, for rapl-read and proc-cputime alike.

load test_helper

setup() {
	P=$(fixture_copy proc-basic)
	CPUINFO=$FIXTURES/cpuinfo
}

# The header proc-cputime writes on its own clock, for the tree $P.
header() {
	proc-cputime --proc "$P" -n 1 -i 1ms "$@" | head -1
}

@test "node_name: --node-name, else NODE_NAME, else the tree's host name, else the system's" {
	run -0 jq -r .node_name < <(NODE_NAME=from-env header --node-name opt-1)
	assert_output opt-1
	run -0 jq -r .node_name < <(NODE_NAME=from-env header)
	assert_output from-env
	# An empty NODE_NAME is not a name.
	run -0 jq -r .node_name < <(NODE_NAME= header)
	assert_output worker-1
	rm "$P/sys/kernel/hostname"
	run -0 jq -r .node_name < <(header)
	assert_output "$(hostname)"
}

@test "--node-name wants a name" {
	run -2 --separate-stderr proc-cputime --proc "$P" -n 1 --node-name ''
	assert_equal "$stderr" "proc-cputime: --node-name wants a name"
	run -2 --separate-stderr rapl-read --source model --proc "$P" -n 1 --node-name ''
	assert_equal "$stderr" "rapl-read: --node-name wants a name"
}

@test "a node name is written as JSON text, whatever its bytes" {
	run -0 jq -r .node_name < <(header --node-name $'a "b"\\\tc')
	assert_output $'a "b"\\\tc'
}

@test "cpu_info of an Intel two-socket host: each processor with its socket and core" {
	cp "$CPUINFO/intel-xeon" "$P/cpuinfo"
	run -0 jq -c .cpu_info < <(header)
	assert_output '[{"processor":0,"vendor_id":"GenuineIntel","model_name":"Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz","physical_id":0,"core_id":0},{"processor":1,"vendor_id":"GenuineIntel","model_name":"Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz","physical_id":0,"core_id":1},{"processor":2,"vendor_id":"GenuineIntel","model_name":"Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz","physical_id":1,"core_id":0},{"processor":3,"vendor_id":"GenuineIntel","model_name":"Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz","physical_id":1,"core_id":1}]'
}

@test "cpu_info of an AMD host" {
	cp "$CPUINFO/amd-epyc" "$P/cpuinfo"
	run -0 jq -c .cpu_info < <(header)
	assert_output '[{"processor":0,"vendor_id":"AuthenticAMD","model_name":"AMD EPYC 7763 64-Core Processor","physical_id":0,"core_id":0},{"processor":1,"vendor_id":"AuthenticAMD","model_name":"AMD EPYC 7763 64-Core Processor","physical_id":0,"core_id":1}]'
}

@test "cpu_info on arm64: the implementer and part codes, no socket or core" {
	cp "$CPUINFO/arm64-neoverse-n1" "$P/cpuinfo"
	run -0 jq -c .cpu_info < <(header)
	assert_output '[{"processor":0,"vendor_id":"0x41","model_name":"0xd0c"},{"processor":1,"vendor_id":"0x41","model_name":"0xd0c"}]'
}

@test "cpu_info is left out where cpuinfo is missing or names no processor" {
	run -0 jq -c 'has("cpu_info")' < <(header)
	assert_output false
	# s390x writes "processor 0: version = ..." lines.
	printf '%s\n' 'vendor_id       : IBM/S390' '# processors    : 2' \
	    'processor 0: version = FF,  identification = 0133E8,  machine = 3906' \
	    > "$P/cpuinfo"
	run -0 jq -c 'has("cpu_info")' < <(header)
	assert_output false
}

@test "a processor line that is not a count starts no processor, and its lines go nowhere" {
	printf '%s\n' 'processor	: 0' 'vendor_id	: GenuineIntel' '' \
	    'processor	: x' 'vendor_id	: Other' 'core id	: 9' '' \
	    'processor	: 2' 'model name	: ' 'core id	: 12345678901' '' > "$P/cpuinfo"
	run -0 jq -c .cpu_info < <(header)
	assert_output '[{"processor":0,"vendor_id":"GenuineIntel"},{"processor":2}]'
}

@test "rapl-read's header carries the same identity, on its own clock and with --state" {
	cp "$CPUINFO/amd-epyc" "$P/cpuinfo"
	run -0 bash -c 'rapl-read --source model --proc "$1" -n 1 -i 1ms | head -1' _ "$P"
	assert_equal "$(jq -c '[.producer, .node_name, (.cpu_info | length)]' <<<"$output")" \
	    '["rapl-read","worker-1",2]'
	run -0 --separate-stderr rapl-read --source model --proc "$P" \
	    --state "$BATS_TEST_TMPDIR/rr.state" --node-name n2
	assert_equal "$(jq -c '[.producer, .node_name, (.cpu_info | length)]' <<<"$output")" \
	    '["rapl-read","n2",2]'
}

@test "every stage downstream passes the identity on unchanged" {
	cp "$CPUINFO/intel-xeon" "$P/cpuinfo"
	run -0 bash -c 'set -o pipefail; rapl-read --source model --proc "$1" -n 1 -i 1ms |
	    proc-cputime --proc "$1" | kp-attribute | kp-aggregate | head -1' _ "$P"
	assert_equal "$output" "$(rapl-read --source model --proc "$P" -n 1 -i 1ms | head -1)"
}
