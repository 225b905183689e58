#!/usr/bin/env bats
# Identity from cgroup paths, QEMU command lines and the kubelet's pod logs:
# one fixture process per shape (tests/fixtures/proc-identity), each
# identity field asserted.

load test_helper

setup_file() {
	P="$FIXTURES/proc-identity"
	printf '%s\n' '{"type":"interval","seq":1,"ts":"2026-11-22T00:00:01.000000Z","dt_us":1}' |
	    proc-cputime -a --proc "$P" --pods-log "$P/var/log/pods" \
	    > "$BATS_FILE_TMPDIR/out"
}

# The identity fields of process $1, in the order written, without cgroup.
ident() {
	jq -c --argjson p "$1" 'select(.type == "proc" and .pid == $p) |
	    del(.type, .seq, .pid, .ppid, .starttime, .comm, .cpu_us, .state, .cgroup)' \
	    "$BATS_FILE_TMPDIR/out"
}

cgroup_of() {
	jq -r --argjson p "$1" 'select(.type == "proc" and .pid == $p) | .cgroup' \
	    "$BATS_FILE_TMPDIR/out"
}

A=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa

@test "docker with the systemd driver: docker-<id>.scope" {
	assert_equal "$(ident 1001)" "{\"kind\":\"container\",\"container_id\":\"$A\",\"runtime\":\"docker\"}"
}

@test "docker with cgroupfs on a hybrid host: /docker/<id> from the v1 cpu line" {
	assert_equal "$(cgroup_of 1002)" "/docker/bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	assert_equal "$(ident 1002)" '{"kind":"container","container_id":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb","runtime":"docker"}'
}

@test "docker on pure cgroup v1 with the systemd driver" {
	assert_equal "$(ident 1017)" '{"kind":"container","container_id":"4444444444444444444444444444444444444444444444444444444444444444","runtime":"docker"}'
}

@test "cri-containerd in a burstable pod slice, named from the pod logs" {
	assert_equal "$(ident 1003)" '{"kind":"container","container_id":"cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc","runtime":"containerd","container_name":"app","pod_id":"0a1b2c3d-4e5f-6789-abcd-ef0123456789","pod_name":"cart-7d9f","pod_namespace":"shop","pod_qos":"burstable"}'
}

@test "cri-containerd in the v1 form <slice>:cri-containerd:<id>" {
	assert_equal "$(cgroup_of 1004)" "/kubepods-besteffort-pod99999999_8888_7777_6666_555555555555.slice:cri-containerd:dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
	assert_equal "$(ident 1004)" '{"kind":"container","container_id":"dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd","runtime":"containerd","pod_id":"99999999-8888-7777-6666-555555555555","pod_qos":"besteffort"}'
}

@test "cri-o in a guaranteed pod slice: crio-<id>.scope" {
	assert_equal "$(ident 1005)" '{"kind":"container","container_id":"eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee","runtime":"cri-o","container_name":"coredns","pod_id":"11111111-2222-3333-4444-555555555555","pod_name":"coredns-5d78c9869d-abcde","pod_namespace":"kube-system","pod_qos":"guaranteed"}'
}

@test "crio-conmon is in the pod but not in the container" {
	assert_equal "$(ident 1006)" '{"kind":"pod","pod_id":"11111111-2222-3333-4444-555555555555","pod_name":"coredns-5d78c9869d-abcde","pod_namespace":"kube-system","pod_qos":"guaranteed"}'
}

@test "podman rootful: libpod-<id>.scope" {
	assert_equal "$(ident 1007)" '{"kind":"container","container_id":"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff","runtime":"podman"}'
}

@test "podman rootless: libpod-<id>.scope below the user's manager" {
	assert_equal "$(ident 1008)" '{"kind":"container","container_id":"1111111111111111111111111111111111111111111111111111111111111111","runtime":"podman","unit":"user@1000.service","user_slice":"user-1000.slice"}'
}

@test "libpod-conmon is not the container" {
	assert_equal "$(ident 1009)" '{"kind":"host"}'
}

@test "cgroupfs kubepods: /kubepods/<qos>/pod<uid>/<id>, runtime unknown" {
	assert_equal "$(ident 1010)" '{"kind":"container","container_id":"2222222222222222222222222222222222222222222222222222222222222222","pod_id":"0a1b2c3d-4e5f-6789-abcd-ef0123456789","pod_name":"cart-7d9f","pod_namespace":"shop","pod_qos":"burstable"}'
}

@test "cgroupfs kubepods without a QoS level is guaranteed; no log link, no container name" {
	assert_equal "$(ident 1011)" '{"kind":"container","container_id":"3333333333333333333333333333333333333333333333333333333333333333","pod_id":"11111111-2222-3333-4444-555555555555","pod_name":"coredns-5d78c9869d-abcde","pod_namespace":"kube-system","pod_qos":"guaranteed"}'
}

@test "libvirt QEMU: the uuid and guest name from its command line" {
	assert_equal "$(ident 1012)" '{"kind":"vm","vm_id":"5f1b2c3d-0000-4000-8000-00000000abcd","vm_name":"web-vm"}'
}

@test "libvirt machine scope, unescaped, for a helper without -uuid" {
	assert_equal "$(cgroup_of 1013)" '/machine.slice/machine-qemu\x2d4\x2ddb.scope'
	assert_equal "$(ident 1013)" '{"kind":"vm","vm_id":"qemu-4-db","vm_name":"db"}'
}

@test "QEMU started by hand in a login session: -uuid and -name" {
	assert_equal "$(ident 1014)" '{"kind":"vm","vm_id":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee","vm_name":"testvm","user_slice":"user-1000.slice","session":"7"}'
}

@test "a systemd service" {
	assert_equal "$(ident 1015)" '{"kind":"service","unit":"nginx.service"}'
}

@test "a user session" {
	assert_equal "$(ident 1016)" '{"kind":"session","user_slice":"user-1000.slice","session":"3"}'
}

@test "kthreadd and a kworker, flagged PF_KTHREAD, are kernel threads" {
	assert_equal "$(ident 2)" '{"kind":"kernel"}'
	assert_equal "$(ident 15)" '{"kind":"kernel"}'
}

@test "everything else is a host process" {
	assert_equal "$(ident 1)" '{"kind":"host"}'
	assert_equal "$(cgroup_of 1)" /init.scope
}

@test "without the pod logs, pods have ids but no names" {
	run -0 bash -c 'printf "%s\n" "{\"type\":\"interval\",\"seq\":1,\"ts\":\"2026-11-22T00:00:01.000000Z\",\"dt_us\":1}" |
	    proc-cputime -a --proc "$1" --pods-log "" | jq -c "select(.pid == 1003) | [.pod_id, .pod_name, .container_name]"' _ "$FIXTURES/proc-identity"
	assert_output '["0a1b2c3d-4e5f-6789-abcd-ef0123456789",null,null]'
}
