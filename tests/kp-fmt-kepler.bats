#!/usr/bin/env bats
# kp-fmt -f prometheus as Kepler writes it: the node's name on every series,
# kepler_build_info and kepler_node_cpu_info, Kepler's label values and
# names, the CPU seconds of processes and containers, and the node zone in
# families of its own.  tests/prometheus.bats runs Kepler's dashboards on it.

load test_helper

setup() {
	STREAMS=$FIXTURES/streams
	HOST=$STREAMS/kepler-host.ndjson
	TWO=$STREAMS/two-intervals.ndjson
	export -f last_samples expositions
}

# The samples of kp-fmt -f prometheus on file $1, the exposition of its
# last interval, less kepler_build_info, whose revision changes with each
# commit.
last_samples() {
	kp-fmt -f prometheus "${@:2}" <"$1" | grep -v '^#' |
	    grep -v '^kepler_build_info'
}

@test "prometheus: the node's name from the header on every series, and in every exposition" {
	local out=$BATS_TEST_TMPDIR/out
	expositions "$HOST" >"$out"
	assert_equal "$(grep -v '^#' "$out" | grep -c .)" \
	    "$(grep -c 'node_name="node-a"}' "$out")"
	assert_equal "$(grep -c '^kepler_build_info{.*,node_name="node-a"} 1$' "$out")" 4
	# A header that names no node, and --node-name for it.
	run -0 kp-fmt -f prometheus <"$TWO"
	refute_line --partial "node_name"
	run -0 kp-fmt -f prometheus --node-name n9 <"$TWO"
	assert_equal "$(grep -v '^#' <<<"$output" | grep -c .)" \
	    "$(grep -c 'node_name="n9"}' <<<"$output")"
	# The stream's own name comes first.
	run -0 kp-fmt -f prometheus --node-name n9 <"$HOST"
	refute_line --partial 'node_name="n9"'
	run -2 --separate-stderr kp-fmt --node-name ''
	assert_equal "$stderr" "kp-fmt: --node-name wants a name"
}

@test "prometheus: a later header starts a new node: one without a name leaves it unknown" {
	{ sed -n '1,/"type":"interval"/p' "$HOST"
	  echo '{"type":"header","seq":0,"version":"1.1","producer":"rapl-read","node_name":"node-b"}'
	  grep '"seq":2,' "$HOST" | sed 's/"seq":2,/"seq":1,/'
	  echo '{"type":"header","seq":0,"version":"1.1","producer":"rapl-read"}'
	  grep '"seq":3,' "$HOST" | sed 's/"seq":3,/"seq":1,/'
	} >"$BATS_TEST_TMPDIR/in"
	run -0 bash -c 'expositions "$1" | grep "^kepler_node_cpu_watts{zone=\"package\""' _ "$BATS_TEST_TMPDIR/in"
	assert_output - <<'EOF'
kepler_node_cpu_watts{zone="package",path="",node_name="node-a"} 61.00000205
kepler_node_cpu_watts{zone="package",path="",node_name="node-b"} 64.0000041
kepler_node_cpu_watts{zone="package",path=""} 67.00000615
EOF
	# kepler_node_cpu_info goes with the header that gave it.
	run -0 bash -c 'expositions "$1" | grep -c "^kepler_node_cpu_info"' _ "$BATS_TEST_TMPDIR/in"
	assert_output 4
}

@test "prometheus: kepler_node_cpu_info, a sample per processor of the header" {
	run -0 bash -c 'last_samples "$1" | grep "^kepler_node_cpu_info"' _ "$HOST"
	assert_output - <<'EOF'
kepler_node_cpu_info{processor="0",vendor_id="GenuineIntel",model_name="Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",physical_id="0",core_id="0",node_name="node-a"} 1
kepler_node_cpu_info{processor="1",vendor_id="GenuineIntel",model_name="Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",physical_id="0",core_id="1",node_name="node-a"} 1
kepler_node_cpu_info{processor="2",vendor_id="GenuineIntel",model_name="Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",physical_id="1",core_id="0",node_name="node-a"} 1
kepler_node_cpu_info{processor="3",vendor_id="GenuineIntel",model_name="Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",physical_id="1",core_id="1",node_name="node-a"} 1
EOF
}

@test "prometheus: an arm64 node's processors, what cpuinfo does not say empty" {
	local p
	p=$(fixture_copy proc-basic)
	cp "$FIXTURES/cpuinfo/arm64-neoverse-n1" "$p/cpuinfo"
	run -0 bash -c 'proc-cputime --proc "$1" -n 1 -i 1ms | kp-fmt -f prometheus | grep "^kepler_node_cpu_info"' _ "$p"
	assert_output - <<'EOF'
kepler_node_cpu_info{processor="0",vendor_id="0x41",model_name="0xd0c",physical_id="",core_id="",node_name="worker-1"} 1
kepler_node_cpu_info{processor="1",vendor_id="0x41",model_name="0xd0c",physical_id="",core_id="",node_name="worker-1"} 1
EOF
}

@test "prometheus: a cpu_info element without a processor number, or with one already written, has no sample" {
	run -0 bash -c 'kp-fmt -f prometheus | grep "^kepler_node_cpu_info"' <<'EOF'
{"type":"header","seq":0,"version":"1.1","producer":"x","cpu_info":[{"processor":3,"vendor_id":"v\"1"},{"vendor_id":"v2"},{"processor":3},7,{"processor":"4"}]}
{"type":"interval","seq":1,"dt_us":1000000}
EOF
	assert_output 'kepler_node_cpu_info{processor="3",vendor_id="v\"1",model_name="",physical_id="",core_id=""} 1'
}

@test "prometheus: kepler_build_info says kp-fmt's version, git branch and revision, arch and compiler" {
	local revision branch arch
	revision=$(sed -n 's/^#define BUILD_REVISION "\(.*\)"$/\1/p' "$KP_ROOT/cmd/fmt/build.h")
	branch=$(sed -n 's/^#define BUILD_BRANCH "\(.*\)"$/\1/p' "$KP_ROOT/cmd/fmt/build.h")
	case $(uname -m) in
	x86_64) arch=amd64 ;;
	aarch64) arch=arm64 ;;
	*) arch=$(uname -m) ;;
	esac
	run -0 kp-fmt -f prometheus <"$TWO"
	assert_line "# TYPE kepler_build_info gauge"
	assert_line --regexp "^kepler_build_info\{arch=\"$arch\",branch=\"$branch\",revision=\"$revision\",version=\"$(sed -n 's/^VERSION = //p' "$KP_ROOT/config.mk")\",goversion=\"(gcc|clang) [0-9]+\.[0-9]+\.[0-9]+\"\} 1$"
	# Built in this git checkout: its branch and a commit.
	if git -C "$KP_ROOT" rev-parse HEAD >/dev/null 2>&1; then
		[[ $revision =~ ^[0-9a-f]{40}$ ]] || fail "revision '$revision'"
		git -C "$KP_ROOT" cat-file -e "$revision^{commit}"
	fi
}

@test "prometheus: Kepler's type of each process, runtime of each container, hypervisor of each VM" {
	run -0 bash -c 'last_samples "$1" | grep "^kepler_process_cpu_watts.*zone=\"package\"" |
	    sed -E "s/.*comm=\"([^\"]*)\".*type=\"([^\"]*)\".*/\1 \2/" | sort -u' _ "$HOST"
	assert_output - <<'EOF'
coredns container
nginx container
php-fpm container
postgres container
qemu-system-x86 vm
redis-server container
sshd regular
systemd regular
EOF
	run -0 bash -c 'last_samples "$1" | grep "^kepler_container_cpu_watts.*zone=\"package\"" |
	    sed -E "s/.*container_name=\"([^\"]*)\",runtime=\"([^\"]*)\".*/\1 \2/" | sort' _ "$HOST"
	assert_output - <<'EOF'
coredns containerd
nginx containerd
php-fpm containerd
postgres containerd
redis docker
EOF
	# kp's cri-o is Kepler's crio; a container of a pod with no runtime
	# is kubernetes's, any other unknown.
	run -0 bash -c 'kp-fmt -f prometheus | grep "^kepler_container_cpu_watts" | sed -E "s/.*runtime=\"([^\"]*)\".*/\1/"' <<'EOF'
{"type":"container","seq":1,"zone":"package","container_id":"c1","runtime":"cri-o","processes":1,"cpu_us":1,"energy_uj":1,"watts":1.0,"total_uj":1,"state":"running"}
{"type":"container","seq":1,"zone":"package","container_id":"c2","pod_id":"p2","processes":1,"cpu_us":1,"energy_uj":1,"watts":1.0,"total_uj":1,"state":"running"}
{"type":"container","seq":1,"zone":"package","container_id":"c3","processes":1,"cpu_us":1,"energy_uj":1,"watts":1.0,"total_uj":1,"state":"running"}
{"type":"container","seq":1,"zone":"package","container_id":"c4","runtime":"podman","processes":1,"cpu_us":1,"energy_uj":1,"watts":1.0,"total_uj":1,"state":"running"}
{"type":"interval","seq":1,"dt_us":1000000}
EOF
	assert_output - <<'EOF'
crio
kubernetes
unknown
podman
EOF
	run -0 bash -c 'last_samples "$1" | grep -c "^kepler_vm_cpu_joules_total{.*,hypervisor=\"kvm\","' _ "$HOST"
	assert_output 4
	# kp's qemu is Kepler's kvm; the others as kp names them.
	run -0 bash -c 'kp-fmt -f prometheus | grep "^kepler_vm_cpu_watts" | sed -E "s/.*hypervisor=\"([^\"]*)\".*/\1/"' <<'EOF'
{"type":"vm","seq":1,"zone":"package","vm_id":"v1","hypervisor":"qemu","processes":1,"cpu_us":1,"energy_uj":1,"watts":1.0,"total_uj":1,"state":"running"}
{"type":"vm","seq":1,"zone":"package","vm_id":"v2","hypervisor":"xen","processes":1,"cpu_us":1,"energy_uj":1,"watts":1.0,"total_uj":1,"state":"running"}
{"type":"vm","seq":1,"zone":"package","vm_id":"v3","hypervisor":"virtualbox","processes":1,"cpu_us":1,"energy_uj":1,"watts":1.0,"total_uj":1,"state":"running"}
{"type":"vm","seq":1,"zone":"package","vm_id":"v4","hypervisor":"vmware","processes":1,"cpu_us":1,"energy_uj":1,"watts":1.0,"total_uj":1,"state":"running"}
{"type":"vm","seq":1,"zone":"package","vm_id":"v5","processes":1,"cpu_us":1,"energy_uj":1,"watts":1.0,"total_uj":1,"state":"running"}
{"type":"interval","seq":1,"dt_us":1000000}
EOF
	assert_output - <<'EOF'
kvm
xen
virtualbox
vmware
unknown
EOF
	run -0 bash -c 'last_samples "$1" | grep "^kepler_node_cpu_watts"' _ "$HOST"
	assert_line 'kepler_node_cpu_watts{zone="package",path="",node_name="node-a"} 70.0000082'
}

@test "prometheus: the names of pods, containers and VMs, and each process's exe, as labels" {
	run -0 bash -c 'last_samples "$1" | grep "^kepler_pod_cpu_joules_total.*zone=\"package\"" |
	    sed -E "s/.*pod_name=\"([^\"]*)\",pod_namespace=\"([^\"]*)\".*/\2\/\1/" | sort' _ "$HOST"
	assert_output - <<'EOF'
kube-system/coredns-5d78c9869d-4xk2p
shop/db-0
shop/web-7d9f8c6b5-x2x7q
EOF
	run -0 bash -c 'last_samples "$1" | grep "^kepler_vm_cpu_watts.*zone=\"dram\"" |
	    sed -E "s/.*vm_name=\"([^\"]*)\".*/\1/"' _ "$HOST"
	assert_output - <<'EOF'
vm-alpha
vm-beta
EOF
	run -0 bash -c 'last_samples "$1" | grep -c "^kepler_container_cpu_joules_total{container_id=\"[0-9a-f]*\",container_name=\"nginx\","' _ "$HOST"
	assert_output 2
	run -0 bash -c 'last_samples "$1" | grep "^kepler_process_cpu_watts{pid=\"2230\",.*zone=\"dram\""' _ "$HOST"
	assert_output --partial 'comm="postgres",exe="/usr/lib/postgresql/16/bin/postgres",type="container",'
}

@test "prometheus: the CPU seconds of processes and containers, once per interval whatever the zones" {
	local want
	# nginx's CPU time over the four intervals, from its package records.
	want=$(jq -s 'map(select(.type == "process" and .pid == 2101 and .zone == "package") | .cpu_us) | add' "$HOST")
	run -0 bash -c 'last_samples "$1" | grep "^kepler_process_cpu_seconds_total{pid=\"2101\","' _ "$HOST"
	assert_output --regexp " $(awk -v u="$want" 'BEGIN { printf "%.6f", u / 1e6 }')\$"
	refute_output --partial "zone="
	want=$(jq -s 'map(select(.type == "container" and .container_name == "redis" and .zone == "dram") | .cpu_us) | add' "$HOST")
	run -0 bash -c 'last_samples "$1" | grep "^kepler_container_cpu_seconds_total{.*container_name=\"redis\""' _ "$HOST"
	assert_output --regexp "runtime=\"docker\",pod_id=\"\",node_name=\"node-a\"\} $(awk -v u="$want" 'BEGIN { printf "%.6f", u / 1e6 }')\$"
	run -0 bash -c 'last_samples "$1" | grep -c "^kepler_process_cpu_seconds_total"' _ "$HOST"
	assert_output 9
	run -0 bash -c 'expositions "$1" | grep -c "^# TYPE kepler_container_cpu_seconds_total counter$"' _ "$HOST"
	assert_output 4
}

@test "prometheus: the node zone leaves every kepler_* family for kp_*_total_* families" {
	local out=$BATS_TEST_TMPDIR/out node_uj
	last_samples "$HOST" >"$out"
	run -1 grep 'zone="node"' "$out"
	node_uj=$(jq -s 'map(select(.type == "node" and .zone == "node")) | last | .total_uj' "$HOST")
	run -0 grep '^kp_node_total_joules_total' "$out"
	assert_output "kp_node_total_joules_total{path=\"\",node_name=\"node-a\"} $(awk -v u="$node_uj" 'BEGIN { printf "%.6f", u / 1e6 }')"
	# It is the sum of the other zones: counted once, not twice.
	assert_equal "$(grep '^kepler_node_cpu_joules_total' "$out" | awk '{ s += $2 } END { printf "%.6f", s }')" \
	    "$(awk -v u="$node_uj" 'BEGIN { printf "%.6f", u / 1e6 }')"
	# A family for each kepler_* and kp_* family with a zone label.
	run -0 bash -c 'kp-fmt -f prometheus <"$1" | awk "/^\$/ { exit } 1" | sed -n "s/^# TYPE \(kp_[a-z_]*_total_[a-z_]*\) .*/\1/p"' _ "$HOST"
	assert_output - <<'EOF'
kp_node_total_joules_total
kp_node_total_active_joules_total
kp_node_total_idle_joules_total
kp_node_total_watts
kp_node_total_active_watts
kp_node_total_idle_watts
kp_node_total_idle_kept_joules_total
kp_process_total_joules_total
kp_process_total_watts
kp_container_total_joules_total
kp_container_total_watts
kp_pod_total_joules_total
kp_pod_total_watts
kp_vm_total_joules_total
kp_vm_total_watts
kp_host_total_joules_total
kp_host_total_watts
kp_unattributed_total_joules_total
kp_unattributed_total_watts
EOF
	run -0 bash -c 'last_samples "$1" | grep "^kp_pod_total_watts" | sed -E "s/.*pod_name=\"([^\"]*)\".*/\1/" | sort' _ "$HOST"
	assert_output - <<'EOF'
coredns-5d78c9869d-4xk2p
db-0
web-7d9f8c6b5-x2x7q
EOF
	# Exited records' node zone too.
	run -0 bash -c '"$1/scripts/kp-gen" --intervals 2 --processes 5 --zones package,node --exited 2 |
	    kp-attribute | kp-fmt -f prometheus | grep "^kp_exited"' _ "$KP_ROOT"
	refute_line --partial 'zone="node"'
	assert_line --regexp '^kp_exited_cpu_joules_total\{comm="[^"]+",.*,zone="package"\} '
	assert_line --regexp '^kp_exited_total_joules_total\{comm="[^"]+",type="[a-z]+",container_id="[^"]*",pod_id="[^"]*",vm_id="[^"]*",unit="[^"]*"\} [0-9.]+$'
	# rapl-read's own records, and the CO2 counters, likewise.
	# (The model writes platform, never node: a RAPL fixture's do.)
	run -0 bash -c 'rapl-read --sysfs "$2" --proc "$1" -z package,node -n 1 -i 1ms |
	    kp-fmt -f prometheus --carbon-intensity 400 | grep "^# TYPE"' _ "$FIXTURES/proc-model" "$FIXTURES/sysfs-1socket"
	assert_line "# TYPE kp_node_total_joules_total counter"
	assert_line "# TYPE kp_node_total_co2_grams_total counter"
	refute_line --regexp 'zone="node"'
}

@test "prometheus: promtool passes every exposition of the fixture host" {
	local f
	expositions "$HOST" | awk -v d="$BATS_TEST_TMPDIR/e" 'BEGIN { n = 1 }
	    /^$/ { n++; next } { print > (d "." n ".prom") }'
	for f in "$BATS_TEST_TMPDIR"/e.*.prom; do
		run -0 promtool check metrics <"$f"
		assert_output ""
	done
	[ -f "$BATS_TEST_TMPDIR/e.4.prom" ]
}

@test "-t leaves the header's identity to prometheus; json writes a header only when -t names it" {
	run -0 kp-fmt -f prometheus -t pod <"$HOST"
	assert_line --partial 'kepler_pod_cpu_watts{pod_id="2c9e1f7a-6b3d-4e8f-a1b2-c3d4e5f60718",pod_name="db-0",pod_namespace="shop",zone="dram",state="running",node_name="node-a"}'
	run -0 bash -c 'kp-fmt -f json -t pod <"$1" | jq -r .type | sort -u' _ "$HOST"
	assert_output pod
	run -0 bash -c 'kp-fmt -f json -t header,pod <"$1" | jq -r .type | sort -u' _ "$HOST"
	assert_output "header
pod"
}

@test "prometheus --summary and --textfile keep the node's name" {
	local tf=$BATS_TEST_TMPDIR/kp.prom
	run -0 kp-fmt -f prometheus --summary <"$HOST"
	assert_line --regexp '^kepler_node_cpu_joules_total\{zone="package",path="",node_name="node-a"\} '
	assert_line --regexp '^kepler_node_cpu_info\{processor="0",.*node_name="node-a"\} 1$'
	kp-fmt --textfile "$tf" <"$HOST"
	run -0 grep -c 'node_name="node-a"' "$tf"
	assert_output "$(grep -v '^#' "$tf" | grep -c .)"
}

# Three processes that end in one interval, in zones package and dram:
# big 20 + 1 J, split 6 + 5 J (each zone below 10 J, their sum above), and
# small 4 + 4 J; and a container that ends with 0.5 J.
ended_stream() {
	local p z uj
	for p in "10 big 20000000 1000000" "11 split 6000000 5000000" \
	    "12 small 4000000 4000000"; do
		set -- $p
		for z in package dram; do
			[ "$z" = package ] && uj=$3 || uj=$4
			printf '{"type":"process","seq":1,"zone":"%s","pid":%d,"starttime":1,"comm":"%s","cpu_us":0,"energy_uj":0,"total_uj":%d,"watts":0,"state":"terminated"}\n' "$z" "$1" "$2" "$uj"
		done
	done
	printf '%s\n' '{"type":"container","seq":1,"zone":"package","container_id":"c1","energy_uj":0,"total_uj":500000,"watts":0,"state":"terminated"}' \
	    '{"type":"interval","seq":1,"dt_us":1000000}'
}

@test "prometheus: terminated workloads below 10 J, Kepler's threshold, have no series; the threshold is summed over zones" {
	ended_stream >"$BATS_TEST_TMPDIR/in"
	run -0 bash -c 'kp-fmt -f prometheus <"$1" | grep "^kepler_process_cpu_joules_total" | sed -E "s/.*comm=\"([a-z]+)\".*zone=\"([a-z]+)\".* /\1 \2 /"' _ "$BATS_TEST_TMPDIR/in"
	assert_output - <<'OUT'
big package 20.000000
big dram 1.000000
split package 6.000000
split dram 5.000000
OUT
	run -0 kp-fmt -f prometheus <"$BATS_TEST_TMPDIR/in"
	refute_line --partial 'container_id="c1"'
	# The node zone counts each zone once more: not in the sum.
	run -1 bash -c '{ printf "%s\n" "{\"type\":\"process\",\"seq\":1,\"zone\":\"node\",\"pid\":12,\"starttime\":1,\"comm\":\"small\",\"cpu_us\":0,\"energy_uj\":0,\"total_uj\":8000000,\"watts\":0,\"state\":\"terminated\"}"; cat "$1"; } | kp-fmt -f prometheus | grep -c "comm=\"small\""' _ "$BATS_TEST_TMPDIR/in"
	assert_output 0
	# 0 shows them all; 30 J none of them.
	run -0 bash -c 'kp-fmt -f prometheus --min-terminated-energy 0 <"$1" | grep -c "^kepler_process_cpu_joules_total"' _ "$BATS_TEST_TMPDIR/in"
	assert_output 6
	run -0 kp-fmt -f prometheus --min-terminated-energy 0.5 <"$BATS_TEST_TMPDIR/in"
	assert_line --regexp '^kepler_container_cpu_joules_total\{container_id="c1",.*state="terminated"\} 0.500000$'
	run -0 kp-fmt -f prometheus --min-terminated-energy 30 <"$BATS_TEST_TMPDIR/in"
	refute_line --regexp '^kepler_process_cpu'
	# The other formats show every terminated record.
	run -0 bash -c 'kp-fmt -f csv <"$1" | grep -c ",terminated,"' _ "$BATS_TEST_TMPDIR/in"
	assert_output 7
	run -2 --separate-stderr kp-fmt --min-terminated-energy -1
	assert_equal "${stderr_lines[0]}" "kp-fmt: --min-terminated-energy must be a number from 0 to 1e+12: '-1'"
}

@test "prometheus: --max-terminated keeps the terminated workloads with the most energy" {
	ended_stream >"$BATS_TEST_TMPDIR/in"
	run -0 bash -c 'kp-fmt -f prometheus --min-terminated-energy 0 --max-terminated 2 <"$1" |
	    grep "^kepler_[a-z]*_cpu_joules_total" | sed -E "s/.*(comm|container_id)=\"([a-z0-9]+)\".*zone=\"([a-z]+)\".*/\2 \3/"' _ "$BATS_TEST_TMPDIR/in"
	assert_output - <<'OUT'
big package
big dram
split package
split dram
OUT
	run -1 bash -c 'kp-fmt -f prometheus --max-terminated 0 <"$1" | grep -c "state=\"terminated\""' _ "$BATS_TEST_TMPDIR/in"
	assert_output 0
	run -2 --separate-stderr kp-fmt --max-terminated x
	assert_equal "${stderr_lines[0]}" "kp-fmt: --max-terminated must be an integer from 0 to 1000000: 'x'"
}

# Process 7's records, seq $1 to $2, each with total_uj $3 x seq; the
# last one terminated when $4 is "end"; an interval record per seq, with
# a dense node record when $5 is "dense".
job_stream() {
	local i state
	for ((i = $1; i <= $2; i++)); do
		[ "$5" = dense ] && printf '{"type":"node","seq":%d,"zone":"package","energy_uj":1,"watts":1,"dense":true}\n' "$i"
		state=running
		[ "$i" = "$2" ] && [ "$4" = end ] && state=terminated
		printf '{"type":"process","seq":%d,"zone":"package","pid":7,"starttime":1,"comm":"job","cpu_us":1000,"energy_uj":%d,"total_uj":%d,"watts":1,"state":"%s"}\n' \
		    "$i" "$3" "$(($3 * i))" "$state"
		printf '{"type":"interval","seq":%d,"dt_us":1000000}\n' "$i"
	done
}

@test "prometheus: a workload that had a series gets its final total when it ends, whatever its size" {
	# 1 J an interval: below --min-terminated-energy's 10 J when it ends.
	job_stream 1 3 1000000 end >"$BATS_TEST_TMPDIR/in"
	run -0 bash -c 'kp-fmt -f prometheus <"$1" | grep "^kepler_process_cpu_joules_total"' _ "$BATS_TEST_TMPDIR/in"
	assert_output 'kepler_process_cpu_joules_total{pid="7",comm="job",exe="",type="regular",zone="package",state="terminated",container_id="",pod_id="",vm_id=""} 3.000000'
	# --max-terminated 0 bounds only those that never had a series.
	run -0 bash -c 'kp-fmt -f prometheus --max-terminated 0 <"$1" | grep -c "state=\"terminated\""' _ "$BATS_TEST_TMPDIR/in"
	assert_output 2
	# Remembered for the run: its series forgotten in a sparse stream
	# after 5 intervals without a record, its end still shows.
	{ job_stream 1 1 1000000; job_stream 9 9 1000000 end; } >"$BATS_TEST_TMPDIR/in"
	run -0 bash -c 'kp-fmt -f prometheus <"$1" | grep "^kepler_process_cpu_joules_total"' _ "$BATS_TEST_TMPDIR/in"
	assert_output --partial 'state="terminated",container_id="",pod_id="",vm_id=""} 9.000000'
	# Ended in its first record: the threshold holds.
	job_stream 1 1 1000000 end >"$BATS_TEST_TMPDIR/in"
	run -1 bash -c 'kp-fmt -f prometheus <"$1" | grep -c "pid=\"7\""' _ "$BATS_TEST_TMPDIR/in"
	assert_output 0
	# Absent from a dense interval, it ended: a record with its labels
	# after that is another workload, which never had a series.
	{ job_stream 1 1 1000000 x dense
	  printf '{"type":"node","seq":2,"zone":"package","energy_uj":1,"watts":1,"dense":true}\n'
	  printf '{"type":"interval","seq":2,"dt_us":1000000}\n'
	  job_stream 3 3 1000000 end dense; } >"$BATS_TEST_TMPDIR/in"
	run -1 bash -c 'kp-fmt -f prometheus <"$1" | grep -c "pid=\"7\""' _ "$BATS_TEST_TMPDIR/in"
	assert_output 0
}

@test "prometheus: in a sparse stream the workloads that had a series are bounded while an interval is read" {
	# Interval 1: 10001 processes, pid 2 among them; interval 2: 10000
	# others, then pid 2 ends, with 2 J.
	awk 'BEGIN {
		f = "{\"type\":\"process\",\"seq\":%d,\"zone\":\"package\",\"pid\":%d,\"starttime\":1,\"comm\":\"p\",\"cpu_us\":1,\"energy_uj\":1000000,\"total_uj\":%d,\"watts\":1,\"state\":\"%s\"}\n"
		for (i = 2; i <= 10002; i++)
			printf f, 1, i, 1000000, "running"
		print "{\"type\":\"interval\",\"seq\":1,\"dt_us\":1000000}"
		for (i = 0; i < 10000; i++)
			printf f, 2, 20000 + i, 1000000, "running"
		printf f, 2, 2, 2000000, "terminated"
		print "{\"type\":\"interval\",\"seq\":2,\"dt_us\":1000000}"
	}' >"$BATS_TEST_TMPDIR/in"
	# Cut at the 20001st, in interval 2: interval 1's are let go then,
	# pid 2 among them, so its end, below 10 J, is not shown.
	run -0 --separate-stderr kp-fmt -f prometheus <"$BATS_TEST_TMPDIR/in"
	assert_equal "$stderr" "kp-fmt: 20001 processes without an end, more than 20000: a terminated one of those let go is shown only above --min-terminated-energy"
	refute_line --partial 'pid="2",'
	assert_equal "$(grep -c '^kepler_process_cpu_joules_total' <<<"$output")" 10000
	# Without the cut, its end is shown.
	grep -v '"pid":2[0-9]\{4\},' "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/few"
	run -0 --separate-stderr kp-fmt -f prometheus <"$BATS_TEST_TMPDIR/few"
	assert_line --regexp '^kepler_process_cpu_joules_total\{pid="2",.*state="terminated".*\} 2.000000$'
}

@test "prometheus: one exposition on standard output, when the input ends, each family's HELP and TYPE once; promtool passes it" {
	run -0 kp-fmt -f prometheus <"$HOST"
	assert_equal "$(grep -c '^# TYPE kepler_node_cpu_joules_total counter$' <<<"$output")" 1
	assert_equal "$(grep -c '^kepler_build_info{' <<<"$output")" 1
	refute_line ""
	# The last interval's, as a scrape at the end finds it.
	assert_equal "$output" "$(expositions "$HOST" | awk '/^$/ { n++; next } n == 3')"
	kp-fmt -f prometheus <"$HOST" >"$BATS_TEST_TMPDIR/all.prom"
	run -0 promtool check metrics <"$BATS_TEST_TMPDIR/all.prom"
	assert_output ""
}

@test "prometheus: a dense stream gives every live process, container, pod and VM its series each interval, 0 W when idle" {
	# pid 1003, alone in its container, never runs: its process and
	# container are at 0 W.
	"$KP_ROOT/scripts/kp-gen" --seed 1 --intervals 3 --processes 4 \
	    --containers 2 --pods 1 --zones package --dense 1 --churn 0 |
	    jq -c 'if .type == "proc" and .pid == 1003 then .cpu_us = 0 else . end' |
	    kp-attribute | kp-aggregate >"$BATS_TEST_TMPDIR/dense"
	expositions "$BATS_TEST_TMPDIR/dense" >"$BATS_TEST_TMPDIR/p"
	run -0 grep -c '^kepler_process_cpu_watts{pid="1003",.*} 0$' "$BATS_TEST_TMPDIR/p"
	assert_output 3
	run -0 grep -c '^kepler_container_cpu_watts{container_id="22ac65ef[0-9a-f]*",.*} 0$' "$BATS_TEST_TMPDIR/p"
	assert_output 3
	# Every process, container, pod and VM in each of the 3 expositions.
	for family in process container pod vm; do
		run -0 bash -c 'awk "BEGIN { n = 0 } /^\$/ { n++ } /^kepler_$2_cpu_watts/ { c[n]++ } END { for (i = 0; i < 3; i++) print c[i] + 0 }" "$1" | sort -u | wc -l' _ "$BATS_TEST_TMPDIR/p" "$family"
		assert_output 1
	done
	run -0 bash -c 'awk "BEGIN { n = 0 } /^\$/ { n++ } /^kepler_process_cpu_watts/ { c[n]++ } END { print c[0] }" "$1"' _ "$BATS_TEST_TMPDIR/p"
	assert_output 4
	# --hide-idle leaves the idle process out, not its container.
	expositions "$BATS_TEST_TMPDIR/dense" --hide-idle >"$BATS_TEST_TMPDIR/h"
	run -1 grep -c 'pid="1003"' "$BATS_TEST_TMPDIR/h"
	run -0 grep -c '^kepler_container_cpu_watts{container_id="22ac65ef[0-9a-f]*",.*} 0$' "$BATS_TEST_TMPDIR/h"
	assert_output 3
	run -0 bash -c 'awk "BEGIN { n = 0 } /^\$/ { n++ } /^kepler_process_cpu_watts/ { c[n]++ } END { print c[0] }" "$1"' _ "$BATS_TEST_TMPDIR/h"
	assert_output 3
}

@test "prometheus: in a sparse stream an idle process has no series that interval, and its counter goes on when it runs again" {
	local i
	for i in 1 2 3; do
		printf '{"type":"process","seq":%d,"zone":"package","pid":7,"starttime":1,"comm":"job","cpu_us":%d,"energy_uj":%d,"total_uj":%d,"watts":1,"state":"running"}\n' \
		    "$i" 1000 1000000 "$((i * 1000000))" | { [ "$i" = 2 ] && cat >/dev/null || cat; }
		printf '{"type":"interval","seq":%d,"dt_us":1000000}\n' "$i"
	done >"$BATS_TEST_TMPDIR/sparse"
	run -0 bash -c 'expositions "$1" | awk "BEGIN { n = 0 } /^\$/ { n++ } /^kepler_process_cpu_joules_total/ { print n, \$2 }"' _ "$BATS_TEST_TMPDIR/sparse"
	assert_output - <<'OUT'
0 1.000000
2 3.000000
OUT
}

@test "prometheus from the real stages: path is the sysfs directory of a zone's one counter, exe the process's executable" {
	local sy=$FIXTURES/sysfs-2socket
	run -0 bash -c 'set -o pipefail
	    rapl-read --sysfs "$1" --node-name n1 -n 1 -i 10ms -z package,core "${@:4}" |
	    proc-cputime -a --proc "$2" --root "$3" | kp-attribute |
	    kp-fmt -f prometheus | grep -E "^kepler_node_cpu_joules_total|^kepler_process_cpu_watts\{pid=\"1015\""' \
	    _ "$sy" "$FIXTURES/proc-identity" "$FIXTURES/node-root"
	# Two sockets' package counters summed have no one path.
	assert_output - <<-EOF
		kepler_node_cpu_joules_total{zone="package",path="",node_name="n1"} 0.000000
		kepler_node_cpu_joules_total{zone="core",path="$sy/class/powercap/intel-rapl:0:0",node_name="n1"} 0.000000
		kepler_process_cpu_watts{pid="1015",comm="nginx",exe="/usr/sbin/nginx",type="regular",zone="package",state="running",container_id="",pod_id="",vm_id="",node_name="n1"} 0
		kepler_process_cpu_watts{pid="1015",comm="nginx",exe="/usr/sbin/nginx",type="regular",zone="core",state="running",container_id="",pod_id="",vm_id="",node_name="n1"} 0
	EOF
	# Each socket's counter has its own, with --per-socket.
	run -0 bash -c 'set -o pipefail
	    rapl-read --sysfs "$1" --node-name n1 -n 1 -i 10ms -z package --per-socket |
	    kp-attribute --proc "$2" | kp-fmt -f prometheus |
	    grep "^kepler_node_cpu_joules_total"' _ "$sy" "$FIXTURES/proc-identity"
	assert_output - <<-EOF
		kepler_node_cpu_joules_total{zone="package",path="$sy/class/powercap/intel-rapl:0",socket="0",node_name="n1"} 0.000000
		kepler_node_cpu_joules_total{zone="package",path="$sy/class/powercap/intel-rapl:1",socket="1",node_name="n1"} 0.000000
	EOF
}
