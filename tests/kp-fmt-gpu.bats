#!/usr/bin/env bats
# kp-fmt: a GPU's records in tables, CSV, the summary and Kepler's GPU
# families (kp-fmt(1); kp-attribute(1), GPU zones).

load test_helper

# A stream of three intervals with two GPUs, an NVML one with its uuid and
# a kernel one named by its PCI address, and the package zone, through
# kp-attribute and kp-aggregate as a pipeline gives it to kp-fmt.
setup() {
	AGG=$BATS_TEST_TMPDIR/agg
	awk 'BEGIN {
		print "{\"type\":\"header\",\"seq\":0,\"version\":\"1.2\",\"producer\":\"rapl-read\",\"node_name\":\"gpu-1\"}"
		for (k = 1; k <= 3; k++) {
			printf "{\"type\":\"energy\",\"seq\":%d,\"zone\":\"package\",\"energy_uj\":20000000,\"watts\":20,\"source\":\"powercap\",\"estimated\":false,\"sockets\":1}\n", k
			printf "{\"type\":\"energy\",\"seq\":%d,\"zone\":\"gpu\",\"device\":\"0\",\"uuid\":\"GPU-5f3c\",\"name\":\"NVIDIA A100-SXM4-40GB\",\"energy_uj\":300000000,\"watts\":300,\"source\":\"nvml\",\"estimated\":false,\"sockets\":1}\n", k
			printf "{\"type\":\"energy\",\"seq\":%d,\"zone\":\"gpu\",\"device\":\"0000:03:00.0\",\"energy_uj\":40000000,\"watts\":40,\"source\":\"hwmon\",\"estimated\":false,\"sockets\":1}\n", k
			printf "{\"type\":\"cpu\",\"seq\":%d,\"cpu_us\":500000,\"total_cpu_us\":1000000,\"usage_ratio\":0.5,\"gpu_us\":{\"0\":600000,\"0000:03:00.0\":500000}}\n", k
			printf "{\"type\":\"proc\",\"seq\":%d,\"pid\":100,\"starttime\":5,\"comm\":\"train\",\"cpu_us\":400000,\"state\":\"running\",\"container_id\":\"c1\",\"pod_id\":\"p1\",\"pod_name\":\"trainer\",\"pod_namespace\":\"ml\",\"gpu_us\":{\"0\":400000}}\n", k
			printf "{\"type\":\"proc\",\"seq\":%d,\"pid\":200,\"starttime\":6,\"comm\":\"serve\",\"cpu_us\":0,\"state\":\"running\",\"vm_id\":\"qemu-1-guest\",\"gpu_us\":{\"0\":200000,\"0000:03:00.0\":500000}}\n", k
			printf "{\"type\":\"interval\",\"seq\":%d,\"ts\":\"2026-11-22T13:48:3%d.000000Z\",\"dt_us\":1000000}\n", k, k
		}
	}' | kp-attribute --proc "$FIXTURES/proc-basic" | kp-aggregate > "$AGG"
}

@test "table: each device's node line and rows, as gpu/<device>" {
	run -0 --separate-stderr kp-fmt -f table < "$AGG"
	assert_line --regexp '^gpu/0 +300 W  \(active 180 W, idle 120 W\)  usage 60.0%  source nvml$'
	assert_line --regexp '^gpu/0000:03:00.0  40.0 W  \(active 20.0 W, idle 20.0 W\)  usage 50.0%  source hwmon$'
	assert_line --regexp '^100  train  gpu/0 +120 W +120 J +- +c1$'
	assert_line --regexp '^200  serve  gpu/0000:03:00.0 +20.0 W +20.0 J +- +-$'
	assert_line --regexp '^qemu-1-guest  gpu/0000:03:00.0 +20.0 W +20.0 J +- +1$'
}

@test "csv: a GPU's rows name their device; -o adds its uuid" {
	run -0 --separate-stderr kp-fmt -f csv -t node < "$AGG"
	assert_line -n 0 --partial ",source,estimated,model,device"
	assert_line "3,2026-11-22T13:48:33.000000Z,1000000,node,gpu,,,,,,,,,,300000000,180000000,120000000,300,900000000,,,,,nvml,false,,0"
	assert_line "3,2026-11-22T13:48:33.000000Z,1000000,node,gpu,,,,,,,,,,40000000,20000000,20000000,40,120000000,,,,,hwmon,false,,0000:03:00.0"
	run -0 --separate-stderr kp-fmt -f csv -H -t process -o pid,zone,device,uuid,energy_uj < "$AGG"
	assert_output - <<'EOF'
100,package,,,8000000
100,gpu,0,GPU-5f3c,120000000
200,gpu,0,GPU-5f3c,60000000
200,gpu,0000:03:00.0,,20000000
100,package,,,8000000
100,gpu,0,GPU-5f3c,120000000
200,gpu,0,GPU-5f3c,60000000
200,gpu,0000:03:00.0,,20000000
100,package,,,8000000
100,gpu,0,GPU-5f3c,120000000
200,gpu,0,GPU-5f3c,60000000
200,gpu,0000:03:00.0,,20000000
EOF
}

@test "--summary: each device's energy and GPU time over the run" {
	run -0 --separate-stderr kp-fmt --summary -f json < "$AGG"
	assert_equal "$(jq -rc 'select(.zone == "gpu") | [.type, .device, .pid // .container_id // .pod_id // .vm_id // .level, .energy_uj, .gpu_us]' <<< "$output" | sort)" \
	    "$(cat <<'EOF'
["container","0","c1",360000000,{"0":1200000}]
["host","0","container",180000000,{"0":600000}]
["host","0","pod",180000000,{"0":600000}]
["host","0","unit",540000000,{"0":1800000}]
["host","0","vm",360000000,{"0":1200000}]
["host","0000:03:00.0","container",60000000,{"0000:03:00.0":1500000}]
["host","0000:03:00.0","pod",60000000,{"0000:03:00.0":1500000}]
["host","0000:03:00.0","unit",60000000,{"0000:03:00.0":1500000}]
["host","0000:03:00.0","vm",0,{"0000:03:00.0":0}]
["node","0",null,900000000,null]
["node","0000:03:00.0",null,120000000,null]
["pod","0","p1",360000000,{"0":1200000}]
["process","0",100,360000000,{"0":1200000}]
["process","0",200,180000000,{"0":600000}]
["process","0000:03:00.0",200,60000000,{"0000:03:00.0":1500000}]
["unattributed","0",null,0,{"0":0}]
["unattributed","0000:03:00.0",null,0,{"0000:03:00.0":0}]
["vm","0","qemu-1-guest",180000000,{"0":600000}]
["vm","0000:03:00.0","qemu-1-guest",60000000,{"0000:03:00.0":1500000}]
EOF
)"
	run -0 --separate-stderr kp-fmt --summary -f table < "$AGG"
	assert_line --regexp '^gpu/0 +300 W  \(active 180 W, idle 120 W\)  usage 60.0%  source nvml$'
	assert_line --regexp '^200  serve  gpu/0000:03:00.0 +20.0 W +60.0 J +- +-$'
}

@test "prometheus: Kepler's GPU families, a series per device, labelled gpu and gpu_uuid" {
	run -0 --separate-stderr kp-fmt -f prometheus < "$AGG"
	assert_line 'kepler_node_gpu_joules_total{gpu="0",gpu_uuid="GPU-5f3c",source="nvml",node_name="gpu-1"} 900.000000'
	assert_line 'kepler_node_gpu_joules_total{gpu="0000:03:00.0",gpu_uuid="",source="hwmon",node_name="gpu-1"} 120.000000'
	assert_line 'kepler_node_gpu_idle_watts{gpu="0",gpu_uuid="GPU-5f3c",source="nvml",node_name="gpu-1"} 120'
	assert_line 'kepler_process_gpu_joules_total{pid="100",comm="train",exe="",type="container",state="running",container_id="c1",pod_id="p1",vm_id="",gpu="0",gpu_uuid="GPU-5f3c",node_name="gpu-1"} 360.000000'
	assert_line 'kepler_container_gpu_watts{container_id="c1",container_name="",runtime="kubernetes",pod_id="p1",state="running",gpu="0",gpu_uuid="GPU-5f3c",node_name="gpu-1"} 120'
	assert_line 'kepler_pod_gpu_joules_total{pod_id="p1",pod_name="trainer",pod_namespace="ml",state="running",gpu="0",gpu_uuid="GPU-5f3c",node_name="gpu-1"} 360.000000'
	assert_line 'kp_vm_gpu_joules_total{vm_id="qemu-1-guest",vm_name="",hypervisor="unknown",state="running",gpu="0000:03:00.0",gpu_uuid="",node_name="gpu-1"} 60.000000'
	# No GPU record is in a CPU family: its CPU zones are the package's.
	refute_output --regexp '_cpu_[a-z_]*\{[^}]*zone="gpu"'
	# Each device says its own source.
	assert_line 'kp_energy_source_info{zone="gpu",source="nvml",estimated="false",model="",gpu="0",node_name="gpu-1"} 1'
	assert_line 'kp_energy_source_info{zone="gpu",source="hwmon",estimated="false",model="",gpu="0000:03:00.0",node_name="gpu-1"} 1'
	assert_line 'kepler_node_cpu_joules_total{zone="package",path="",node_name="gpu-1"} 60.000000'
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/all.prom"
	run -0 promtool check metrics < "$BATS_TEST_TMPDIR/all.prom"
}

@test "prometheus: each device's process, unattributed and idle joules add up to its node's" {
	run -0 --separate-stderr kp-fmt -f prometheus < "$AGG"
	run -0 awk '
	    /^kepler_process_gpu_joules_total|^kp_unattributed_gpu_joules_total|^kp_node_gpu_idle_joules_total/ {
		match($0, /gpu="[^"]*"/); parts[substr($0, RSTART, RLENGTH)] += $NF }
	    /^kepler_node_gpu_joules_total/ {
		match($0, /gpu="[^"]*"/); node[substr($0, RSTART, RLENGTH)] = $NF }
	    END { for (d in node) printf "%s %.6f %.6f\n", d, node[d], parts[d] }' <<< "$output"
	assert_equal "$(sort <<< "$output")" 'gpu="0" 900.000000 900.000000
gpu="0000:03:00.0" 120.000000 120.000000'
}
