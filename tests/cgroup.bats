#!/usr/bin/env bats
# Identity from cgroup paths and hypervisors' command lines, and names from
# the node's own files: one fixture process per shape
# (tests/fixtures/proc-identity) and one node's files
# (tests/fixtures/node-root), each identity field asserted.

load test_helper
load proc_helper

I1='{"type":"interval","seq":1,"ts":"2026-11-22T00:00:01.000000Z","dt_us":1}'
I2='{"type":"interval","seq":2,"ts":"2026-11-22T00:00:02.000000Z","dt_us":1}'

setup_file() {
	P="$FIXTURES/proc-identity"
	printf '%s\n' "$I1" |
	    proc-cputime -a --proc "$P" --root "$FIXTURES/node-root" \
	    > "$BATS_FILE_TMPDIR/out"
}

teardown() {
	if [ -n "${SLEEPERS:-}" ]; then
		# shellcheck disable=SC2086 # two pids
		kill $SLEEPERS 2>/dev/null || true
	fi
	nobody_dir_remove
}

# The identity fields of process $1 in file $2 (the setup's run), in the
# order written, without cgroup.
ident() {
	jq -c --argjson p "$1" 'select(.type == "proc" and .pid == $p) |
	    del(.type, .seq, .pid, .ppid, .starttime, .comm, .exe, .cpu_us, .state, .cgroup)' \
	    "${2:-$BATS_FILE_TMPDIR/out}"
}

cgroup_of() {
	jq -r --argjson p "$1" 'select(.type == "proc" and .pid == $p) | .cgroup' \
	    "$BATS_FILE_TMPDIR/out"
}

# One interval of proc-cputime -a on the fixture processes, with the
# options given, into $BATS_TEST_TMPDIR/out.
one_interval() {
	printf '%s\n' "$I1" | proc-cputime -a --proc "$FIXTURES/proc-identity" \
	    "$@" > "$BATS_TEST_TMPDIR/out"
}

A=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
B=bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
WEB='"vm_id":"5f1b2c3d-0000-4000-8000-00000000abcd","vm_name":"web-vm","hypervisor":"qemu"'

@test "docker with the systemd driver: docker-<id>.scope, named by its config.v2.json" {
	assert_equal "$(ident 1001)" "{\"kind\":\"container\",\"container_id\":\"$A\",\"runtime\":\"docker\",\"container_name\":\"web\"}"
}

@test "docker with cgroupfs on a hybrid host, whose v2 line is containerd's service: the v1 cpu line" {
	assert_equal "$(cgroup_of 1002)" "/docker/$B"
	assert_equal "$(ident 1002)" "{\"kind\":\"container\",\"container_id\":\"$B\",\"runtime\":\"docker\",\"container_name\":\"proxy\"}"
}

@test "docker on pure cgroup v1 with the systemd driver" {
	assert_equal "$(ident 1017)" '{"kind":"container","container_id":"4444444444444444444444444444444444444444444444444444444444444444","runtime":"docker","container_name":"hostnet"}'
}

@test "cri-containerd in a burstable pod slice, named from the kubelet's log links" {
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

@test "podman rootful: libpod-<id>.scope, named by the system storage's containers.json" {
	assert_equal "$(ident 1007)" '{"kind":"container","container_id":"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff","runtime":"podman","container_name":"redis"}'
}

@test "docker rootless: named by the data root in the home /etc/passwd gives the slice's uid" {
	assert_equal "$(ident 1046)" '{"kind":"container","container_id":"5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f","runtime":"docker","container_name":"notes","unit":"user@1000.service","user_slice":"user-1000.slice"}'
}

@test "podman rootless: named by the storage in the home /etc/passwd gives the slice's uid" {
	assert_equal "$(ident 1008)" '{"kind":"container","container_id":"1111111111111111111111111111111111111111111111111111111111111111","runtime":"podman","container_name":"httpd","unit":"user@1000.service","user_slice":"user-1000.slice"}'
}

@test "libpod-conmon is not the container" {
	assert_equal "$(ident 1009)" '{"kind":"host"}'
}

@test "cgroupfs kubepods on a hybrid host, whose v2 line is containerd's service: pod and container" {
	assert_equal "$(cgroup_of 1010)" /kubepods/burstable/pod0a1b2c3d-4e5f-6789-abcd-ef0123456789/2222222222222222222222222222222222222222222222222222222222222222
	assert_equal "$(ident 1010)" '{"kind":"container","container_id":"2222222222222222222222222222222222222222222222222222222222222222","pod_id":"0a1b2c3d-4e5f-6789-abcd-ef0123456789","pod_name":"cart-7d9f","pod_namespace":"shop","pod_qos":"burstable"}'
}

@test "cgroupfs kubepods without a QoS level is guaranteed; no log link, no container name" {
	assert_equal "$(ident 1011)" '{"kind":"container","container_id":"3333333333333333333333333333333333333333333333333333333333333333","pod_id":"11111111-2222-3333-4444-555555555555","pod_name":"coredns-5d78c9869d-abcde","pod_namespace":"kube-system","pod_qos":"guaranteed"}'
}

@test "a KinD node: kubelet-kubepods-burstable-pod<uid>.slice/cri-containerd-<id>.scope" {
	assert_equal "$(ident 1018)" '{"kind":"container","container_id":"2b180104511194aab36fd295d3e217439f3ddb5bc88277f37b4952abee85c40e","runtime":"containerd","container_name":"kindnet-cni","pod_id":"3cae2e45-052c-4b11-80d3-4d7b2d2d3464","pod_name":"kindnet-x7z2k","pod_namespace":"kube-system","pod_qos":"burstable"}'
}

@test "dockershim's bare id below kubepods: names from the container's Kubernetes labels" {
	assert_equal "$(ident 1029)" '{"kind":"container","container_id":"3e74d3fd9db4c9dd921ae05c2502fb984d0cde1b36e581b13f79c639da4518a1","container_name":"nginx","pod_id":"3d274242-8ee0-11e9-a8a6-1e68d864ef1a","pod_name":"web-0","pod_namespace":"default","pod_qos":"besteffort"}'
}

@test "ECS on Fargate: a container id <32 hex>-<digits>" {
	assert_equal "$(ident 1024)" '{"kind":"container","container_id":"55091c13b8cf4801b527f4601742204d-2863927640"}'
}

@test "Cloud Foundry's Garden: /garden/<id>" {
	assert_equal "$(ident 1025)" '{"kind":"container","container_id":"6f265890-5165-7fab-6b52-18d1","runtime":"garden","unit":"garden.service"}'
}

@test "containerd with cgroupfs: /containerd/<id> names the runtime" {
	assert_equal "$(ident 1026)" '{"kind":"container","container_id":"7777777777777777777777777777777777777777777777777777777777777777","runtime":"containerd"}'
}

@test "libvirt QEMU: the machine scope's domain, its uuid from /run/libvirt/qemu" {
	assert_equal "$(ident 1012)" "{\"kind\":\"vm\",$WEB}"
}

@test "swtpm in the same machine scope is the same VM, under the same id" {
	assert_equal "$(ident 1027)" "{\"kind\":\"vm\",$WEB}"
}

@test "virtiofsd in the guest's emulator cgroup, where libvirt puts its helpers, is the same VM" {
	assert_equal "$(cgroup_of 1040)" '/machine.slice/machine-qemu\x2d3\x2dweb\x2dvm.scope/libvirt/emulator'
	assert_equal "$(ident 1040)" "{\"kind\":\"vm\",$WEB}"
	# QEMU, swtpm and virtiofsd: one VM, and none of them a VM of its own.
	run -0 bash -c 'jq -r "select(.type == \"proc\" and .kind == \"vm\" and (.cgroup | startswith(\"/machine.slice/machine-qemu\\\\x2d3\\\\x2dweb\")) ) | .vm_id" "$1" | sort | uniq -c' _ "$BATS_FILE_TMPDIR/out"
	assert_output "      3 5f1b2c3d-0000-4000-8000-00000000abcd"
}

@test "libvirt machine scope, unescaped; the uuid of a defined domain from /etc/libvirt/qemu" {
	assert_equal "$(cgroup_of 1013)" '/machine.slice/machine-qemu\x2d4\x2ddb.scope'
	assert_equal "$(ident 1013)" '{"kind":"vm","vm_id":"9d0e6f1c-2b3a-4c5d-8e7f-a0b1c2d3e4f5","vm_name":"db","hypervisor":"qemu"}'
}

@test "without libvirt's files, every process of a machine scope has its QEMU's -uuid, helpers too" {
	one_interval --root "$BATS_TEST_TMPDIR"
	assert_equal "$(ident 1012 "$BATS_TEST_TMPDIR/out")" "{\"kind\":\"vm\",$WEB}"
	assert_equal "$(ident 1027 "$BATS_TEST_TMPDIR/out")" "{\"kind\":\"vm\",$WEB}"
	assert_equal "$(ident 1040 "$BATS_TEST_TMPDIR/out")" "{\"kind\":\"vm\",$WEB}"
}

# A machine scope $3 holding swtpm as pid $1 and QEMU as pid $2 (libvirt
# starts swtpm first, so it has the lower pid), QEMU's arguments after.
vm_scope() {
	local p=$BATS_TEST_TMPDIR/proc swtpm=$1 qemu=$2 scope=$3
	shift 3
	mkdir -p "$p/$swtpm" "$p/$qemu"
	cp "$FIXTURES/proc-identity/stat" "$FIXTURES/proc-identity/uptime" "$p/"
	stat_line "$swtpm" swtpm > "$p/$swtpm/stat"
	stat_line "$qemu" qemu-system-x86 > "$p/$qemu/stat"
	echo "0::/machine.slice/$scope" > "$p/$swtpm/cgroup"
	echo "0::/machine.slice/$scope/libvirt/emulator" > "$p/$qemu/cgroup"
	printf '%s\0' /usr/bin/swtpm socket --tpm2 > "$p/$swtpm/cmdline"
	printf '%s\0' /usr/bin/qemu-system-x86_64 "$@" > "$p/$qemu/cmdline"
}

# [pid, vm_id, vm_name] of each process of one interval over $BATS_TEST_TMPDIR/proc.
vm_ids() {
	printf '%s\n' "$I1" | proc-cputime -a --proc "$BATS_TEST_TMPDIR/proc" \
	    --root "$BATS_TEST_TMPDIR/none" |
	    jq -c 'select(.type == "proc") | [.pid, .vm_id, .vm_name]'
}

@test "a helper scanned before its QEMU (a lower pid) takes QEMU's -uuid: the scope is one VM" {
	vm_scope 3001 3002 'machine-qemu\x2d7\x2dweb\x2d01.scope' \
	    -name guest=web-01,debug-threads=on -uuid 8e4b3a3c-1c2d-4e5f-8a9b-0c1d2e3f4a5b
	run -0 vm_ids
	assert_output - <<-'EOF'
		[3001,"8e4b3a3c-1c2d-4e5f-8a9b-0c1d2e3f4a5b","web-01"]
		[3002,"8e4b3a3c-1c2d-4e5f-8a9b-0c1d2e3f4a5b","web-01"]
	EOF
}

@test "a restarted guest (new pids, new domain number, same -uuid) keeps its vm_id" {
	vm_scope 3001 3002 'machine-qemu\x2d7\x2dweb\x2d01.scope' \
	    -name guest=web-01 -uuid 8e4b3a3c-1c2d-4e5f-8a9b-0c1d2e3f4a5b
	vm_ids > "$BATS_TEST_TMPDIR/ids"
	rm -rf "$BATS_TEST_TMPDIR/proc"
	vm_scope 4001 4002 'machine-qemu\x2d8\x2dweb\x2d01.scope' \
	    -name guest=web-01 -uuid 8e4b3a3c-1c2d-4e5f-8a9b-0c1d2e3f4a5b
	vm_ids >> "$BATS_TEST_TMPDIR/ids"
	run -0 jq -r '"\(.[0]) \(.[1])"' "$BATS_TEST_TMPDIR/ids"
	assert_output - <<-'EOF'
		3001 8e4b3a3c-1c2d-4e5f-8a9b-0c1d2e3f4a5b
		3002 8e4b3a3c-1c2d-4e5f-8a9b-0c1d2e3f4a5b
		4001 8e4b3a3c-1c2d-4e5f-8a9b-0c1d2e3f4a5b
		4002 8e4b3a3c-1c2d-4e5f-8a9b-0c1d2e3f4a5b
	EOF
}

@test "without -uuid or libvirt's files, a scope's id is its name without the domain number, the same after a restart" {
	vm_scope 3001 3002 'machine-qemu\x2d7\x2dweb\x2d01.scope' -name guest=web-01
	run -0 vm_ids
	assert_output - <<-'EOF'
		[3001,"web-01","web-01"]
		[3002,"web-01","web-01"]
	EOF
	rm -rf "$BATS_TEST_TMPDIR/proc"
	vm_scope 4001 4002 'machine-qemu\x2d8\x2dweb\x2d01.scope' -name guest=web-01
	run -0 vm_ids
	assert_output - <<-'EOF'
		[4001,"web-01","web-01"]
		[4002,"web-01","web-01"]
	EOF
}

@test "QEMU started by hand in a login session: -uuid and -name" {
	assert_equal "$(ident 1014)" '{"kind":"vm","vm_id":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee","vm_name":"testvm","hypervisor":"qemu","user_slice":"user-1000.slice","session":"7"}'
}

@test "QEMU without -uuid: -name guest=NAME,... is its id and name" {
	assert_equal "$(ident 1019)" '{"kind":"vm","vm_id":"scratch","vm_name":"scratch","hypervisor":"qemu","user_slice":"user-1000.slice","session":"9"}'
}

@test "QEMU without -uuid: -name NAME is its id and name" {
	assert_equal "$(ident 1020)" '{"kind":"vm","vm_id":"armbox","vm_name":"armbox","hypervisor":"qemu","user_slice":"user-1000.slice","session":"9"}'
}

@test "QEMU with -uuid alone: its name from the domain libvirt defines with that uuid" {
	assert_equal "$(ident 1028)" '{"kind":"vm","vm_id":"c7a5fdbd-cdaf-9455-926a-d65c16db1809","vm_name":"build&test","hypervisor":"qemu","user_slice":"user-1000.slice","session":"9"}'
}

@test "Xen's device model: -xen-domid N -name NAME" {
	assert_equal "$(ident 1021)" '{"kind":"vm","vm_id":"5","vm_name":"debian-guest","hypervisor":"xen","unit":"xendomains.service"}'
}

@test "VirtualBox: VBoxHeadless --startvm <uuid> --comment NAME" {
	assert_equal "$(ident 1022)" '{"kind":"vm","vm_id":"8a4c5e12-34ab-4f6f-9d51-0166868835fb","vm_name":"ubuntu-server","hypervisor":"virtualbox","user_slice":"user-1000.slice","session":"9"}'
}

@test "VMware: vmware-vmx ... NAME.vmx" {
	assert_equal "$(ident 1023)" '{"kind":"vm","vm_id":"UbuntuVM","vm_name":"UbuntuVM","hypervisor":"vmware","user_slice":"user-1000.slice","session":"9"}'
}

@test "libvirt's LXC driver: machine-lxc\x2d<N>\x2d<name>.scope is a container, runtime libvirt-lxc, not a VM" {
	assert_equal "$(ident 1041)" '{"kind":"container","container_id":"lxc-50642-k8s-cp","runtime":"libvirt-lxc","container_name":"k8s-cp","unit":"crio.service"}'
	assert_equal "$(ident 1042)" '{"kind":"container","container_id":"lxc-50642-k8s-cp","runtime":"libvirt-lxc","container_name":"k8s-cp"}'
}

@test "libvirt's LXC driver: the domain XML's uuid is the container_id, the same at every start" {
	mkdir -p "$BATS_TEST_TMPDIR/root/run/libvirt/lxc"
	cat > "$BATS_TEST_TMPDIR/root/run/libvirt/lxc/k8s-cp.xml" <<-'EOF'
		<domstatus state='running' reason='booted' pid='50641'>
		  <domain type='lxc' id='50642'>
		    <name>k8s-cp</name>
		    <uuid>3b0f9e2a-5d4c-4b7a-9e1f-2c3d4e5f6a7b</uuid>
		  </domain>
		</domstatus>
	EOF
	one_interval --root "$BATS_TEST_TMPDIR/root"
	assert_equal "$(ident 1042 "$BATS_TEST_TMPDIR/out")" '{"kind":"container","container_id":"3b0f9e2a-5d4c-4b7a-9e1f-2c3d4e5f6a7b","runtime":"libvirt-lxc","container_name":"k8s-cp"}'
	assert_equal "$(ident 1041 "$BATS_TEST_TMPDIR/out" | jq -r .container_id)" 3b0f9e2a-5d4c-4b7a-9e1f-2c3d4e5f6a7b
}

@test "systemd-nspawn: machine-<name>.scope and systemd-nspawn@<name>.service are containers, runtime systemd-nspawn" {
	assert_equal "$(ident 1043)" '{"kind":"container","container_id":"debian-tree","runtime":"systemd-nspawn","container_name":"debian-tree"}'
	assert_equal "$(ident 1044)" '{"kind":"container","container_id":"debian-tree","runtime":"systemd-nspawn","container_name":"debian-tree"}'
	assert_equal "$(ident 1045)" '{"kind":"container","container_id":"jammy","runtime":"systemd-nspawn","container_name":"jammy","unit":"console-getty.service"}'
	# None of them is a VM.
	run -0 jq -r 'select(.type == "proc" and .pid > 1040 and .pid < 1046 and has("vm_id")) | .pid' "$BATS_FILE_TMPDIR/out"
	assert_output ""
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

@test "--pods-log '' turns the kubelet's names off; ids stay" {
	one_interval --root "$FIXTURES/node-root" --pods-log ""
	run -0 jq -c 'select(.pid == 1003) | [.pod_id, .pod_name, .container_name]' "$BATS_TEST_TMPDIR/out"
	assert_output '["0a1b2c3d-4e5f-6789-abcd-ef0123456789",null,null]'
}

@test "--pods-log DIR reads the kubelet's names from DIR and DIR/../containers, whatever the root" {
	one_interval --root /nonexistent --pods-log "$FIXTURES/node-root/var/log/pods"
	run -0 jq -c 'select(.pid == 1003) | [.pod_name, .pod_namespace, .container_name]' "$BATS_TEST_TMPDIR/out"
	assert_output '["cart-7d9f","shop","app"]'
	run -0 jq -c 'select(.pid == 1001) | .container_name' "$BATS_TEST_TMPDIR/out"
	assert_output null
}

@test "--podman-root adds a storage root, as given" {
	local st=$BATS_TEST_TMPDIR/storage
	mkdir -p "$st"
	cp -R "$FIXTURES/node-root/var/lib/containers/storage/overlay-containers" "$st/"
	one_interval --root /nonexistent --podman-root "$st"
	run -0 jq -r 'select(.pid == 1007) | .container_name' "$BATS_TEST_TMPDIR/out"
	assert_output redis
}

@test "a name is read once per id; one not there yet is looked for again once its source changes" {
	local p=$BATS_TEST_TMPDIR/proc r=$BATS_TEST_TMPDIR/root out=$BATS_TEST_TMPDIR/o in
	cp -R "$FIXTURES/proc-identity" "$p"
	cp -R "$FIXTURES/node-root" "$r"
	# Sources last changed long ago, so that the changes below are seen
	# however soon they come (file times are as coarse as the kernel's tick).
	touch -h -d @1000000000 "$r/var/lib/docker/containers" "$r/var/log/containers"
	mkfifo "$BATS_TEST_TMPDIR/in"
	proc-cputime -a --proc "$p" --root "$r" < "$BATS_TEST_TMPDIR/in" > "$out" &
	exec {in}> "$BATS_TEST_TMPDIR/in"
	printf '%s\n' "$I1" >&"$in"
	until grep -q '"type":"interval","seq":1' "$out"; do sleep 0.01; done
	# docker renames the container, and a new process joins it; the
	# kubelet links the pod's worker container.
	sed -i 's|"Name":"/web"|"Name":"/renamed"|' "$r/var/lib/docker/containers/$A/config.v2.json"
	mkdir "$r/var/lib/docker/containers/$(printf '9%.0s' {1..64})"
	cp -R "$p/1001" "$p/1030"
	sed -i 's/^1001 /1030 /; s/ 1101 0 0$/ 1130 0 0/' "$p/1030/stat"
	ln -s ../pods/shop_cart-7d9f_0a1b2c3d-4e5f-6789-abcd-ef0123456789/worker/0.log \
	    "$r/var/log/containers/cart-7d9f_shop_worker-$(printf '2%.0s' {1..64}).log"
	printf '%s\n' "$I2" >&"$in"
	exec {in}>&-
	wait
	run -0 jq -c 'select(.type == "proc" and .seq == 2 and (.pid == 1001 or .pid == 1030 or .pid == 1010)) | [.pid, .container_name]' "$out"
	assert_output - <<-'EOF'
		[1001,"web"]
		[1010,"worker"]
		[1030,"web"]
	EOF
}

@test "a name source that cannot be read is named once on standard error; its names are left out" {
	nobody_dir proc-cputime
	cp -R "$FIXTURES/proc-identity" "$NOBODY_DIR/proc"
	cp -R "$FIXTURES/node-root" "$NOBODY_DIR/root"
	chmod -R a+rX "$NOBODY_DIR"
	chmod 700 "$NOBODY_DIR/root/var/lib/docker/containers/$A"
	run -0 --separate-stderr bash -c 'printf "%s\n" "$1" | setpriv --reuid=65534 --regid=65534 --clear-groups proc-cputime -a --proc "$2/proc" --root "$2/root" | jq -c "select(.pid == 1001 or .pid == 1002 or .pid == 1017) | [.pid, .container_name]"' _ "$I1" "$NOBODY_DIR"
	assert_output - <<-'EOF'
		[1001,null]
		[1002,"proxy"]
		[1017,"hostnet"]
	EOF
	assert_equal "$stderr" "proc-cputime: $NOBODY_DIR/root/var/lib/docker/containers/$A/config.v2.json: names from it are left out: Permission denied"
}

# A root whose only name source is libvirt's /etc directory holding $1.
xml_root() {
	mkdir -p "$BATS_TEST_TMPDIR/root/etc/libvirt/qemu"
	cat > "$BATS_TEST_TMPDIR/root/etc/libvirt/qemu/db.xml"
	one_interval --root "$BATS_TEST_TMPDIR/root"
}

@test "domain XML: only <domain>'s own <name> and <uuid> are taken, comments and nested names skipped" {
	xml_root <<-'EOF'
		<?xml version="1.0"?>
		<!-- <domain><name>not-this</name></domain> -->
		<domain type='kvm' xmlns:app="http://example.com/app">
		  <metadata><app:info><name>decoy</name><uuid>00000000-0000-4000-8000-000000000000</uuid></app:info></metadata>
		  <description title='a "quoted" > sign'>the <![CDATA[<name>]]> element</description>
		  <name>db</name>
		  <uuid>9D0E6F1C-2B3A-4C5D-8E7F-A0B1C2D3E4F5</uuid>
		</domain>
	EOF
	run -0 jq -c 'select(.pid == 1013) | [.vm_id, .vm_name]' "$BATS_TEST_TMPDIR/out"
	assert_output '["9d0e6f1c-2b3a-4c5d-8e7f-a0b1c2d3e4f5","db"]'
}

@test "domain XML: a DOCTYPE (and so any entity it could define) makes the file unused" {
	xml_root <<-'EOF'
		<!DOCTYPE domain [ <!ENTITY x SYSTEM "file:///etc/shadow"> ]>
		<domain type='kvm'>
		  <name>db</name>
		  <uuid>9d0e6f1c-2b3a-4c5d-8e7f-a0b1c2d3e4f5</uuid>
		</domain>
	EOF
	run -0 jq -c 'select(.pid == 1013) | [.vm_id, .vm_name]' "$BATS_TEST_TMPDIR/out"
	assert_output '["db","db"]'
}

@test "domain XML: markup inside <name>, or a uuid that is none, leaves the domain out" {
	xml_root <<-'EOF'
		<domain type='kvm'>
		  <name>d<b/>b</name>
		  <uuid>9d0e6f1c-2b3a-4c5d-8e7f-a0b1c2d3e4f5</uuid>
		</domain>
	EOF
	run -0 jq -r 'select(.pid == 1013) | .vm_id' "$BATS_TEST_TMPDIR/out"
	assert_output db
	xml_root <<-'EOF'
		<domain type='kvm'><name>db</name><uuid>9d0e6f1c</uuid></domain>
	EOF
	run -0 jq -r 'select(.pid == 1013) | .vm_id' "$BATS_TEST_TMPDIR/out"
	assert_output db
}

@test "domain XML: a domain whose name a machine's may not hold is found by its machine's name, cut or not" {
	local p=$BATS_TEST_TMPDIR/proc r=$BATS_TEST_TMPDIR/root long cut
	long=vagrant_project_with_a_long_name_$(printf '%040d' 7)
	# libvirt's machine name: host name characters only, 64 bytes at most.
	cut=$(printf 'qemu-3-%s' "$long" | tr -d _ | cut -c 1-64)
	mkdir -p "$p/3001" "$p/3002" "$r/run/libvirt/qemu"
	cp "$FIXTURES/proc-identity/stat" "$FIXTURES/proc-identity/uptime" "$p/"
	stat_line 3001 qemu-system-x86 > "$p/3001/stat"
	stat_line 3002 swtpm > "$p/3002/stat"
	# vagrant-libvirt's <project>_<machine>, and a name libvirt cuts.
	echo '0::/machine.slice/machine-qemu\x2d2\x2dkpdefault.scope' > "$p/3001/cgroup"
	echo "0::/machine.slice/machine-${cut//-/\\x2d}.scope" > "$p/3002/cgroup"
	: > "$p/3001/cmdline"; : > "$p/3002/cmdline"
	printf '<domain type="kvm"><name>%s</name><uuid>%s</uuid></domain>\n' \
	    kp_default 1b4e28ba-2fa1-11d2-883f-0016d3cca427 > "$r/run/libvirt/qemu/kp_default.xml"
	printf '<domain type="kvm"><name>%s</name><uuid>%s</uuid></domain>\n' \
	    "$long" 6fa459ea-ee8a-3ca4-894e-db77e160355e > "$r/run/libvirt/qemu/$long.xml"
	run -0 bash -c 'printf "%s\n" "$1" | proc-cputime -a --proc "$2" --root "$3" |
	    jq -c "select(.type == \"proc\") | [.pid, .vm_id, .vm_name]"' _ "$I1" "$p" "$r"
	assert_output - <<-EOF
		[3001,"1b4e28ba-2fa1-11d2-883f-0016d3cca427","kp_default"]
		[3002,"6fa459ea-ee8a-3ca4-894e-db77e160355e","$long"]
	EOF
	# A cut name that begins two domains' names is neither's.
	sed "s/$long/${long}x/; s/6fa459ea/7fa459ea/" "$r/run/libvirt/qemu/$long.xml" > "$r/run/libvirt/qemu/other.xml"
	run -0 bash -c 'printf "%s\n" "$1" | proc-cputime -a --proc "$2" --root "$3" |
	    jq -c "select(.pid == 3002) | [.vm_id, .vm_name]"' _ "$I1" "$p" "$r"
	assert_output "[\"${cut#qemu-3-}\",\"${cut#qemu-3-}\"]"
}

@test "proc-cputime names a missing or malformed uptime file and what is wrong with it" {
	local p
	p=$(fixture_copy proc-basic)
	rm "$p/uptime"
	run -1 --separate-stderr proc-cputime --head -n 1 -i 1ms --proc "$p"
	assert_equal "$stderr" "proc-cputime: $p/uptime: No such file or directory"
	echo 'up a while' > "$p/uptime"
	run -1 --separate-stderr proc-cputime --head -n 1 -i 1ms --proc "$p"
	assert_equal "$stderr" "proc-cputime: $p/uptime: not an uptime as the kernel writes it"
	# The node's stat is read after the uptime, once the processes' are.
	echo '1000.00 1800.00' > "$p/uptime"
	echo 'intr 12345' > "$p/stat"
	run -1 --separate-stderr proc-cputime --head -n 1 -i 1ms --proc "$p"
	assert_equal "$stderr" "proc-cputime: $p/stat: no cpu line as the kernel writes it"
}

@test "exe: each process's PID/exe link as the kernel gives it; none for a kernel thread or where it is missing" {
	run -0 jq -c 'select(.type == "proc" and (.pid == 2 or .pid == 1003 or
	    .pid == 1012 or .pid == 1015)) | [.pid, .exe]' "$BATS_FILE_TMPDIR/out"
	assert_output - <<-'EOF'
		[2,null]
		[1003,null]
		[1012,"/usr/bin/qemu-system-x86_64"]
		[1015,"/usr/sbin/nginx"]
	EOF
}

@test "exe is read once per process, at first sight, again when its comm changes (an exec), and again for a reused pid" {
	P=$(fixture_copy proc-basic)
	add_proc 900 app 5 5 90000 /system.slice/a.service
	ln -s /usr/bin/first "$P/900/exe"
	start_filter -a --proc "$P"
	send_interval 1
	await_line '"type":"interval","seq":1'
	ln -sfn /usr/bin/second "$P/900/exe"
	send_interval 2
	await_line '"type":"interval","seq":2'
	add_proc 900 app 5 5 95000 /system.slice/a.service
	send_interval 3
	exec 7>&-
	wait "$FILTER"
	run -0 jq -r 'select(.pid == 900) | "\(.seq) \(.state) \(.exe)"' "$BATS_TEST_TMPDIR/out"
	assert_output - <<-'EOF'
		1 running /usr/bin/first
		2 running /usr/bin/first
		3 terminated /usr/bin/first
		3 running /usr/bin/second
	EOF
}

@test "live: another user's exe, unreadable without CAP_SYS_PTRACE, is left out without a warning" {
	local sleep_exe root_pid own_pid
	sleep_exe=$(readlink -f "$(command -v sleep)")
	sleep 1000 3>&- &
	root_pid=$!
	setpriv --reuid=65534 --regid=65534 --clear-groups sleep 1000 3>&- &
	own_pid=$!
	SLEEPERS="$root_pid $own_pid"
	# Each has become sleep (exec) before it is looked at.
	local pid _
	for pid in $SLEEPERS; do
		for _ in $(seq 600); do
			[ "$(readlink "/proc/$pid/exe")" = "$sleep_exe" ] && break
			sleep 0.1
		done
	done
	# An empty --root that nobody may enter: were a container running on
	# this host, its names would be looked for there, and a root below
	# the test's own directory, root's alone, would be refused.
	local none
	none=$(mktemp -d /tmp/kp-none.XXXXXX)
	chmod 755 "$none"
	run -0 --separate-stderr as_nobody proc-cputime --head -a -n 1 -i 10ms \
	    --root "$none" --exited parent
	rmdir "$none"
	assert_equal "$stderr" ""
	exe_of() {
		jq -sc --argjson p "$1" '[.[] | select(.type == "proc" and
		    .pid == $p)] | map(.exe)' <<< "$output"
	}
	assert_equal "$(exe_of "$root_pid")" '[null]'
	assert_equal "$(exe_of "$own_pid")" "[\"$sleep_exe\"]"
	# As root it is read.
	run -0 --separate-stderr proc-cputime --head -a -n 1 -i 10ms \
	    --root "$BATS_TEST_TMPDIR/none" --exited parent
	assert_equal "$(exe_of "$root_pid")" "[\"$sleep_exe\"]"
}

# tests/identity.cases, other projects' cases, each made a fixture process
# (pid 2000 + its number) below $BATS_TEST_TMPDIR/proc; their expectations
# as "PID FIELD VALUE" in want, kp's where it differs in kp, and each
# case's number, name and why it differs (if it does) in cases.
make_cases() {
	local d=$BATS_TEST_TMPDIR p=$BATS_TEST_TMPDIR/proc line kw rest n=0 pid=0
	mkdir -p "$p"
	cp "$FIXTURES/proc-identity/stat" "$FIXTURES/proc-identity/uptime" "$p/"
	: > "$d/want"; : > "$d/kp"; : > "$d/cases"
	while IFS= read -r line; do
		kw=${line%% *}
		rest=${line#* }
		case $kw in
		case)
			n=$((n + 1)); pid=$((2000 + n))
			mkdir "$p/$pid"; : > "$p/$pid/cgroup"; : > "$p/$pid/cmdline"
			stat_line "$pid" sh > "$p/$pid/stat"
			printf '%s\t%s\t\n' "$pid" "$rest" >> "$d/cases" ;;
		comm) stat_line "$pid" "$rest" > "$p/$pid/stat" ;;
		cgroup) printf '%s\n' "$rest" >> "$p/$pid/cgroup" ;;
		arg) printf '%s\0' "$rest" >> "$p/$pid/cmdline" ;;
		want) printf '%s %s\n' "$pid" "$rest" >> "$d/want" ;;
		kp) printf '%s %s\n' "$pid" "$rest" >> "$d/kp" ;;
		why) sed -i "\$s|\$|$(printf '%s' "$rest" | sed 's/[|&\\]/\\&/g')|" "$d/cases" ;;
		esac
	done < "$KP_ROOT/tests/identity.cases"
}

stat_line() {
	printf '%s (%s) S 1 %s %s 0 -1 4194560 0 0 0 0 10 5 0 0 20 0 1 0 %s 0 0\n' \
	    "$1" "$2" "$1" "$1" "$1"
}

@test "other projects' cases (tests/identity.cases): proc-cputime finds what each case says" {
	make_cases
	printf '%s\n' "$I1" | proc-cputime -a --proc "$BATS_TEST_TMPDIR/proc" \
	    --root "$BATS_TEST_TMPDIR/none" |
	    jq -r 'select(.type == "proc") | . as $r |
	    ["container_id", "runtime", "container_name", "pod_id", "vm_id",
	    "vm_name", "hypervisor"][] |
	    "\($r.pid) \(.) \($r[.] // "-")"' > "$BATS_TEST_TMPDIR/got"
	# Each expectation, kp's where the case has one, against what was got.
	run -0 awk 'FILENAME ~ /kp$/ { kp[$1 " " $2] = $3; next }
	    FILENAME ~ /got$/ { got[$1 " " $2] = $3; next }
	    { k = $1 " " $2; want = k in kp ? kp[k] : $3
	      if (got[k] != want) print k ": got " got[k] ", the case says " want }' \
	    "$BATS_TEST_TMPDIR/kp" "$BATS_TEST_TMPDIR/got" "$BATS_TEST_TMPDIR/want"
	assert_output ""
	# Every case is checked on something, and every difference has its why.
	[ "$(cut -d' ' -f1 "$BATS_TEST_TMPDIR/want" | sort -u | wc -l)" -eq \
	    "$(wc -l < "$BATS_TEST_TMPDIR/cases")" ]
	run -0 awk -F'\t' 'NR == FNR { differs[$1 + 0] = 1; next }
	    ($1 in differs) != ($3 != "") { print $2 }' \
	    "$BATS_TEST_TMPDIR/kp" "$BATS_TEST_TMPDIR/cases"
	assert_output ""
}

@test "other projects' cases: 138 of 157 agree with kp; the rest differ for the reasons given" {
	make_cases
	run -0 awk -F'\t' '$3 != "" { n++; print "differs: " $2 " (" $3 ")" }
	    END { print NR - n " of " NR " agree" }' "$BATS_TEST_TMPDIR/cases"
	assert_line '138 of 157 agree'
}

# Names carried through the pipeline: kp-attribute and kp-aggregate.

HDR='{"type":"header","seq":0,"version":"1.1","producer":"test"}'

@test "kp-attribute carries every identity member of a proc record, names included, as it came" {
	local ident='"ppid":1,"starttime":5,"comm":"qemu-system-x86","exe":"/usr/bin/qemu-system-x86_64","state":"running","kind":"vm","cgroup":"/machine.slice/machine-qemu\\x2d3\\x2dweb\\x2dvm.scope","container_id":"c","runtime":"containerd","container_name":"app","pod_id":"p","pod_name":"cart-7d9f","pod_namespace":"shop","pod_qos":"burstable","vm_id":"5f1b2c3d-0000-4000-8000-00000000abcd","vm_name":"web \u00e9","hypervisor":"qemu","unit":"u.service","user_slice":"user-1000.slice","session":"7"'
	run -0 --separate-stderr kp-attribute <<-EOF
		$HDR
		{"type":"energy","seq":1,"zone":"package","energy_uj":1000000,"watts":1.0,"source":"powercap","estimated":false}
		{"type":"cpu","seq":1,"cpu_us":1000000,"total_cpu_us":2000000,"usage_ratio":0.5}
		{"type":"proc","seq":1,"pid":100,"cpu_us":400000,$ident}
		{"type":"interval","seq":1,"dt_us":1000000}
	EOF
	assert_line --partial "{\"type\":\"process\",\"seq\":1,\"zone\":\"package\",\"pid\":100,$ident,\"cpu_us\":400000,"
}

@test "kp-aggregate: a group record carries the names of its newest member that has them" {
	local c='"container_id":"c1","pod_id":"p1"'
	run -0 --separate-stderr bash -c 'kp-aggregate --drop-processes --level container,pod,vm | jq -c "select(.type == \"container\" or .type == \"pod\" or .type == \"vm\") | del(.zone, .processes, .cpu_us, .energy_uj, .watts, .total_uj, .state)"' <<-EOF
		$HDR
		{"type":"process","seq":1,"zone":"package","pid":10,"starttime":1,"comm":"a","cpu_us":1,"energy_uj":1,$c,"container_name":"app","pod_name":"cart-1","pod_namespace":"shop","runtime":"containerd"}
		{"type":"process","seq":1,"zone":"package","pid":20,"starttime":1,"comm":"q","cpu_us":1,"energy_uj":1,"vm_id":"v1","hypervisor":"qemu"}
		{"type":"interval","seq":1,"dt_us":1000000}
		{"type":"process","seq":2,"zone":"package","pid":10,"starttime":1,"comm":"a","cpu_us":1,"energy_uj":1,$c,"container_name":"app","pod_name":"cart-1","pod_namespace":"shop","runtime":"containerd"}
		{"type":"process","seq":2,"zone":"package","pid":11,"starttime":1,"comm":"b","cpu_us":1,"energy_uj":1,$c,"container_name":"app2","pod_name":"cart-2","pod_namespace":"shop","runtime":"containerd"}
		{"type":"process","seq":2,"zone":"package","pid":20,"starttime":1,"comm":"q","cpu_us":1,"energy_uj":1,"vm_id":"v1","vm_name":"web","hypervisor":"qemu"}
		{"type":"interval","seq":2,"dt_us":1000000}
		{"type":"process","seq":3,"zone":"package","pid":10,"starttime":1,"comm":"a","cpu_us":1,"energy_uj":1,$c,"container_name":"app","pod_name":"cart-1","pod_namespace":"shop","runtime":"containerd"}
		{"type":"process","seq":3,"zone":"package","pid":12,"starttime":1,"comm":"c","cpu_us":1,"energy_uj":1,$c}
		{"type":"interval","seq":3,"dt_us":1000000}
	EOF
	assert_output - <<-'EOF'
		{"type":"container","seq":1,"container_id":"c1","pod_id":"p1","runtime":"containerd","container_name":"app","pod_name":"cart-1","pod_namespace":"shop"}
		{"type":"pod","seq":1,"pod_id":"p1","pod_name":"cart-1","pod_namespace":"shop"}
		{"type":"vm","seq":1,"vm_id":"v1","hypervisor":"qemu"}
		{"type":"container","seq":2,"container_id":"c1","pod_id":"p1","runtime":"containerd","container_name":"app2","pod_name":"cart-2","pod_namespace":"shop"}
		{"type":"pod","seq":2,"pod_id":"p1","pod_name":"cart-2","pod_namespace":"shop"}
		{"type":"vm","seq":2,"vm_id":"v1","hypervisor":"qemu"}
		{"type":"container","seq":3,"container_id":"c1","pod_id":"p1","runtime":"containerd","container_name":"app2","pod_name":"cart-2","pod_namespace":"shop"}
		{"type":"pod","seq":3,"pod_id":"p1","pod_name":"cart-2","pod_namespace":"shop"}
	EOF
}

@test "kp-aggregate: --by groups and units carry no names" {
	run -0 --separate-stderr bash -c 'kp-aggregate --drop-processes --level unit --by comm | jq -c "select(.type == \"unit\" or .type == \"group\") | keys"' <<-EOF
		$HDR
		{"type":"process","seq":1,"zone":"package","pid":10,"starttime":1,"comm":"a","cpu_us":1,"energy_uj":1,"unit":"a.service","container_id":"c1","container_name":"app","vm_name":"v"}
		{"type":"interval","seq":1,"dt_us":1000000}
	EOF
	assert_output - <<-'EOF'
		["cpu_us","energy_uj","processes","seq","state","total_uj","type","unit","watts","zone"]
		["by","comm","cpu_us","energy_uj","processes","seq","state","total_uj","type","watts","zone"]
	EOF
}

@test "names reach kp-aggregate's groups from the node's own files, through the whole pipeline" {
	run -0 --separate-stderr bash -c 'set -o pipefail; printf "%s\n" "$1" "$2" "$3" | proc-cputime -a --proc "$4" --root "$5" | kp-attribute | kp-aggregate --drop-processes --level container,pod,vm | jq -r "select(.type == \"container\" and .container_id == \"cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc\" or .type == \"vm\" and .vm_name == \"web-vm\") | [.type, .container_name // .vm_id, .pod_name // .hypervisor, .processes] | @tsv"' _ \
	    "$HDR" '{"type":"energy","seq":1,"zone":"package","energy_uj":1000000,"watts":1.0,"source":"powercap","estimated":false}' \
	    "$I1" "$FIXTURES/proc-identity" "$FIXTURES/node-root"
	assert_output - <<-'EOF'
		container	app	cart-7d9f	1
		vm	5f1b2c3d-0000-4000-8000-00000000abcd	qemu	3
	EOF
}
