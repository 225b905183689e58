#!/usr/bin/env bats
# kp-fmt: a record stream as a table, CSV, NDJSON or Prometheus text.

load test_helper

setup() {
	STREAMS=$FIXTURES/streams
	TWO=$STREAMS/two-intervals.ndjson
	USAGE='usage: kp-fmt [-Hh] [-f format] [-n rows] [-o columns] [-t types] [-u unit]
              [--carbon-intensity g_per_kwh] [--dir dir] [--hide-idle]
              [--list-columns] [--max-terminated n] [--min-terminated-energy joules]
              [--node-name name] [--summary] [--summary-rows rows] [--textfile path]'
}

# The last four lines of $stderr: the usage message after getopt's.
usage_tail() {
	printf '%s\n' "${stderr_lines[@]: -4}"
}

# The number of the line holding the first interval record of file $1.
first_interval_line() {
	grep -n '"type":"interval"' "$1" | head -n 1 | cut -d: -f1
}

# A stream of $1 intervals, one energy record each.
long_stream() {
	awk -v n="$1" 'BEGIN {
		print "{\"type\":\"header\",\"seq\":0,\"version\":\"1.0\",\"producer\":\"rapl-read\"}"
		for (i = 1; i <= n; i++) {
			printf "{\"type\":\"energy\",\"seq\":%d,\"zone\":\"package\",\"energy_uj\":12000000,\"watts\":12.0,\"source\":\"model\",\"estimated\":true,\"sockets\":1}\n", i
			printf "{\"type\":\"interval\",\"seq\":%d,\"ts\":\"2026-11-22T13:48:36.123456Z\",\"dt_us\":1000000}\n", i
		}
	}'
}

@test "usage matches the manual's synopsis" {
	# col(1) writes tabs where mandoc indents the wrapped synopsis.
	assert_equal "$(usage_synopsis kp-fmt)" \
	    "$(man_synopsis kp-fmt.1 | tr -s ' \t' '  ')"
}

@test "-h and --help print the usage and the options on stdout, exit 0; --version" {
	assert_help kp-fmt
	run -0 kp-fmt -h
	assert_equal "$(sed '/^$/,$d' <<< "$output")" "$USAGE"
	assert_line '  -t, --types types                   only records of these types'
}

@test "an unknown format exits 2 and lists the formats" {
	run -2 --separate-stderr kp-fmt -f xml <"$TWO"
	assert_equal "$stderr" "kp-fmt: unknown format 'xml' (table, top, csv, json, prometheus, powercap)"
	assert_output ""
	run -2 --separate-stderr kp-fmt --format=x <"$TWO"
	assert_equal "$stderr" "kp-fmt: unknown format 'x' (table, top, csv, json, prometheus, powercap)"
}

@test "unknown options and operands are usage errors" {
	run -2 --separate-stderr kp-fmt -x </dev/null
	assert_equal "$(usage_tail)" "$USAGE"
	run -2 --separate-stderr kp-fmt --bogus </dev/null
	assert_equal "$(usage_tail)" "$USAGE"
	run -2 --separate-stderr kp-fmt -f </dev/null
	run -2 --separate-stderr kp-fmt -f csv extra </dev/null
	assert_equal "$stderr" "kp-fmt: unexpected argument 'extra'
$USAGE"
}

@test "the long option takes its value as the next argument too" {
	run -0 --separate-stderr kp-fmt --format csv </dev/null
	assert_output "seq,ts,dt_us,type,zone,pid,starttime,comm,state,container_id,pod_id,vm_id,unit,cpu_us,energy_uj,active_uj,idle_uj,watts,total_uj,socket,level,by,group,source,estimated,model,device"
}

@test "json passes every record through byte for byte" {
	kp-fmt -f json <"$TWO" >"$BATS_TEST_TMPDIR/out"
	cmp "$TWO" "$BATS_TEST_TMPDIR/out"
}

@test "json drops blank lines and nothing else" {
	run -0 --separate-stderr bash -c 'printf "%s\n" \
	    "{\"type\":\"header\",\"seq\":0,\"version\":\"1.0\",\"producer\":\"rapl-read\"}" \
	    "" "  " \
	    "{\"type\":\"future\",\"seq\":1,  \"x\" : [1, 2]}" \
	    "{\"type\":\"interval\",\"seq\":1,\"ts\":\"2026-11-22T13:48:36.123456Z\",\"dt_us\":1000000}" |
	    kp-fmt -f json'
	assert_output - <<'EOF'
{"type":"header","seq":0,"version":"1.0","producer":"rapl-read"}
{"type":"future","seq":1,  "x" : [1, 2]}
{"type":"interval","seq":1,"ts":"2026-11-22T13:48:36.123456Z","dt_us":1000000}
EOF
	assert_equal "$stderr" ""
}

@test "json is the default when stdout is not a terminal" {
	kp-fmt <"$TWO" >"$BATS_TEST_TMPDIR/out"
	cmp "$TWO" "$BATS_TEST_TMPDIR/out"
}

@test "table is the default when stdout is a terminal" {
	run -0 script -qec "kp-fmt <'$TWO'" /dev/null </dev/null
	assert_line --partial "interval 1  2026-11-22T13:48:36.123456Z  (1.000 s)"
}

@test "csv: one header row, one row per record, ts and dt_us from the interval" {
	run -0 --separate-stderr kp-fmt -f csv <"$TWO"
	assert_output - <<'EOF'
seq,ts,dt_us,type,zone,pid,starttime,comm,state,container_id,pod_id,vm_id,unit,cpu_us,energy_uj,active_uj,idle_uj,watts,total_uj,socket,level,by,group,source,estimated,model,device
1,2026-11-22T13:48:36.123456Z,1000000,energy,package,,,,,,,,,,35000000,,,35,,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,energy,dram,,,,,,,,,,4500000,,,4.5,,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,node,package,,,,,,,,,,35000000,14000000,21000000,35,5035000000,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,node,dram,,,,,,,,,,4500000,1800000,2700000,4.5,604500000,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,process,package,42,1234567,burn,running,3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899,1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d,,,2000000,8750000,,,8.75,12500000,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,process,package,4242,1234890,gzip,running,3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899,1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d,,,600000,2625000,,,2.625,2625000,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,process,package,777,980001,nginx,running,a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90,,,,400000,1750000,,,1.75,11750000,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,process,package,1500,55500,qemu-system-x86,running,,,qemu-1-ubuntu,,150000,656250,,,0.65625,656250,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,process,dram,42,1234567,burn,running,3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899,1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d,,,2000000,1125000,,,1.125,1593750,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,process,dram,4242,1234890,gzip,running,3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899,1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d,,,600000,337500,,,0.3375,337500,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,process,dram,777,980001,nginx,running,a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90,,,,400000,225000,,,0.225,1525000,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,process,dram,1500,55500,qemu-system-x86,running,,,qemu-1-ubuntu,,150000,84375,,,0.084375,84375,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,unattributed,package,,,,,,,,,50000,218750,,,0.21875,1218750,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,unattributed,dram,,,,,,,,,50000,28125,,,0.028125,178125,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,container,package,,,,,3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899,1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d,,,2600000,11375000,,,11.375,11375000,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,container,package,,,,,a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90,,,,400000,1750000,,,1.75,1750000,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,container,dram,,,,,3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899,1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d,,,2600000,1462500,,,1.4625,1462500,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,container,dram,,,,,a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90,,,,400000,225000,,,0.225,225000,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,pod,package,,,,,,1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d,,,2600000,11375000,,,11.375,11375000,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,pod,dram,,,,,,1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d,,,2600000,1462500,,,1.4625,1462500,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,vm,package,,,,,,,qemu-1-ubuntu,,150000,656250,,,0.65625,656250,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,vm,dram,,,,,,,qemu-1-ubuntu,,150000,84375,,,0.084375,84375,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,energy,package,,,,,,,,,,41000123,,,40.99840106715518,,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,energy,dram,,,,,,,,,,4600456,,,4.600262788962864,,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,node,package,,,,,,,,,,41000123,20499200,20500923,40.99840106715518,5076000123,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,node,dram,,,,,,,,,,4600456,2300131,2300325,4.600262788962864,609100456,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,process,package,42,1234567,burn,running,3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899,1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d,,,3100000,15886880,,,15.88621277906328,28386880,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,process,package,4242,1234890,gzip,terminated,3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899,1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d,,,0,0,,,0,2625000,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,process,package,777,980001,nginx,running,a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90,,,,500000,2562400,,,2.5622923837198837,14312400,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,process,package,1500,55500,qemu-system-x86,running,,,qemu-1-ubuntu,,250000,1281200,,,1.2811461918599418,1937450,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,process,dram,42,1234567,burn,running,3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899,1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d,,,3100000,1782602,,,1.7825271338603779,3376352,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,process,dram,4242,1234890,gzip,terminated,3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899,1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d,,,0,0,,,0,337500,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,process,dram,777,980001,nginx,running,a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90,,,,500000,287516,,,0.2875039248351569,1812516,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,process,dram,1500,55500,qemu-system-x86,running,,,qemu-1-ubuntu,,250000,143758,,,0.14375196241757845,228133,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,unattributed,package,,,,,,,,,150000,768720,,,0.7686877151159651,1987470,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,unattributed,dram,,,,,,,,,150000,86255,,,0.08625137744214743,264380,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,container,package,,,,,3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899,1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d,,,3100000,15886880,,,15.88621277906328,27261880,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,container,package,,,,,a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90,,,,500000,2562400,,,2.5622923837198837,4312400,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,container,dram,,,,,3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899,1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d,,,3100000,1782602,,,1.7825271338603779,3245102,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,container,dram,,,,,a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90,,,,500000,287516,,,0.2875039248351569,512516,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,pod,package,,,,,,1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d,,,3100000,15886880,,,15.88621277906328,27261880,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,pod,dram,,,,,,1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d,,,3100000,1782602,,,1.7825271338603779,3245102,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,vm,package,,,,,,,qemu-1-ubuntu,,250000,1281200,,,1.2811461918599418,1937450,,,,,powercap,false,,
2,2026-11-22T13:48:37.123498Z,1000042,vm,dram,,,,,,,qemu-1-ubuntu,,250000,143758,,,0.14375196241757845,228133,,,,,powercap,false,,
EOF
	assert_equal "$stderr" ""
}

@test "csv quotes commas, quotes and newlines as RFC 4180 says" {
	run -0 kp-fmt -f csv <"$STREAMS/odd-names.ndjson"
	assert_output - <<'EOF'
seq,ts,dt_us,type,zone,pid,starttime,comm,state,container_id,pod_id,vm_id,unit,cpu_us,energy_uj,active_uj,idle_uj,watts,total_uj,socket,level,by,group,source,estimated,model,device
1,2026-11-22T13:48:36.123456Z,1000000,process,package,42,1234567,"a ""q"" \b",running,,,,,500000,2500000,,,2.5,2500000,,,,,,,,
1,2026-11-22T13:48:36.123456Z,1000000,process,package,43,1234570,"x,y
z",running,,,,,100000,500000,,,0.5,500000,,,,,,,,
EOF
}

@test "csv writes the header even for a stream without intervals" {
	run -0 kp-fmt -f csv </dev/null
	assert_output "seq,ts,dt_us,type,zone,pid,starttime,comm,state,container_id,pod_id,vm_id,unit,cpu_us,energy_uj,active_uj,idle_uj,watts,total_uj,socket,level,by,group,source,estimated,model,device"
	run -0 kp-fmt -f csv <<<'{"type":"header","seq":0,"version":"1.0","producer":"rapl-read"}'
	assert_output "seq,ts,dt_us,type,zone,pid,starttime,comm,state,container_id,pod_id,vm_id,unit,cpu_us,energy_uj,active_uj,idle_uj,watts,total_uj,socket,level,by,group,source,estimated,model,device"
}

@test "csv writes records left without an interval record at the end" {
	# The reader reports a stream that ends inside an interval: exit 3.
	run -3 --separate-stderr bash -c 'head -n 3 "$1" | kp-fmt -f csv' _ "$TWO"
	assert_line -n 1 "1,,,energy,package,,,,,,,,,,35000000,,,35,,,,,,powercap,false,,"
	assert_line -n 2 "1,,,energy,dram,,,,,,,,,,4500000,,,4.5,,,,,,powercap,false,,"
	assert_equal "$stderr" "kp-fmt: <stdin>:3: the stream ends inside interval 1"
}

@test "prometheus: Kepler's families, exact joules, gauges from watts" {
	run -0 --separate-stderr expositions "$TWO" --min-terminated-energy 0
	assert_line 'kepler_process_cpu_joules_total{pid="42",comm="burn",exe="",type="container",zone="package",state="running",container_id="3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899",pod_id="1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d",vm_id=""} 12.500000'
	assert_line 'kepler_process_cpu_watts{pid="1500",comm="qemu-system-x86",exe="",type="vm",zone="dram",state="running",container_id="",pod_id="",vm_id="qemu-1-ubuntu"} 0.084375'
	assert_line 'kepler_process_cpu_watts{pid="4242",comm="gzip",exe="",type="container",zone="package",state="terminated",container_id="3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899",pod_id="1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d",vm_id=""} 0'
	assert_line 'kepler_node_cpu_joules_total{zone="package",path=""} 5076.000123'
	assert_line 'kepler_node_cpu_active_joules_total{zone="dram",path=""} 204.100131'
	assert_line 'kepler_node_cpu_idle_joules_total{zone="dram",path=""} 405.000325'
	assert_line 'kepler_node_cpu_watts{zone="package",path=""} 40.99840106715518'
	assert_line 'kepler_node_cpu_active_watts{zone="package",path=""} 14'
	assert_line 'kepler_node_cpu_idle_watts{zone="dram",path=""} 2.7'
	assert_line 'kepler_node_cpu_usage_ratio 0.49997900088196295'
	assert_line 'kepler_container_cpu_joules_total{container_id="a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90",container_name="",runtime="unknown",pod_id="",zone="dram"} 0.512516'
	assert_line 'kepler_container_cpu_watts{container_id="3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899",container_name="",runtime="kubernetes",pod_id="1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d",zone="package"} 11.375'
	assert_line 'kepler_pod_cpu_joules_total{pod_id="1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d",pod_name="",pod_namespace="",zone="package"} 27.261880'
	assert_line 'kepler_pod_cpu_watts{pod_id="1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d",pod_name="",pod_namespace="",zone="dram"} 1.4625'
	assert_line 'kepler_vm_cpu_joules_total{vm_id="qemu-1-ubuntu",vm_name="",hypervisor="unknown",zone="package"} 1.937450'
	assert_line 'kepler_vm_cpu_watts{vm_id="qemu-1-ubuntu",vm_name="",hypervisor="unknown",zone="package"} 0.65625'
	assert_line 'kp_unattributed_cpu_joules_total{zone="dram"} 0.264380'
	assert_line 'kp_unattributed_cpu_watts{zone="package"} 0.21875'
	assert_equal "$stderr" ""
}

@test "prometheus: one exposition of the two intervals, HELP and TYPE once per family" {
	local out=$BATS_TEST_TMPDIR/out
	kp-fmt -f prometheus <"$TWO" >"$out"
	# 21 families, kepler_build_info, the CPU seconds of processes and
	# containers, and kp_energy_source_info among them.
	assert_equal "$(grep -c '^# HELP ' "$out")" 21
	assert_equal "$(grep -c '^# TYPE ' "$out")" 21
	assert_equal "$(grep '^# TYPE ' "$out" | sort | uniq -c | awk '$1 != 1' | wc -l)" 0
	assert_equal "$(grep -c '^# TYPE kepler_node_cpu_joules_total counter$' "$out")" 1
	assert_equal "$(grep -c '^# TYPE kepler_process_cpu_watts gauge$' "$out")" 1
	assert_equal "$(grep -c '^$' "$out")" 0
	# The second interval's counters.
	assert_equal "$(grep '^kepler_node_cpu_joules_total{zone="package"' "$out")" \
	    'kepler_node_cpu_joules_total{zone="package",path=""} 5076.000123'
	# One usage ratio sample, though there are two zones.
	assert_equal "$(grep -c '^kepler_node_cpu_usage_ratio ' "$out")" 1
	# Every sample is a name with labels and a value: no timestamps.
	assert_equal "$(grep -v '^#' "$out" | grep -v '^$' |
	    grep -cvE '^[a-z_]+(\{([^" ]|"([^"\\]|\\.)*")*\})? [0-9.e+-]+$')" 0
}

@test "prometheus: only families with samples in the interval" {
	# rapl-read's own records: the node's energy and power alone, the
	# counter kp-fmt's sum of the intervals' energy, and where it comes
	# from (a 1.0 model's estimate, which named no model).
	run -0 expositions "$STREAMS/energy-only.ndjson"
	assert_equal "$(grep -c '^# TYPE ' <<<"$output")" 8
	assert_line 'kp_energy_source_info{zone="package",source="model",estimated="true",model=""} 1'
	assert_equal "$(grep -c '^# TYPE kepler_build_info gauge$' <<<"$output")" 2
	assert_equal "$(grep '^kepler_node_cpu_joules_total' <<<"$output" | paste -sd' ')" \
	    'kepler_node_cpu_joules_total{zone="package",path=""} 2.460123 kepler_node_cpu_joules_total{zone="package",path=""} 5.055003'
	assert_line 'kepler_node_cpu_watts{zone="package",path=""} 12.975048752437623'
	refute_line --partial "active"
	run -0 kp-fmt -f prometheus <"$STREAMS/odd-names.ndjson"
	refute_line --partial "kepler_node_"
	refute_line --partial "kepler_container_"
}

@test "prometheus escapes backslash, quote and newline in label values" {
	run -0 bash -c 'kp-fmt -f prometheus <"$1" | sed "/kepler_build_info/d; /_seconds_total/d"' _ "$STREAMS/odd-names.ndjson"
	assert_output - <<'EOF'
# HELP kepler_process_cpu_joules_total Energy attributed to the process, in joules
# TYPE kepler_process_cpu_joules_total counter
kepler_process_cpu_joules_total{pid="42",comm="a \"q\" \\b",exe="",type="regular",zone="package",state="running",container_id="",pod_id="",vm_id=""} 2.500000
kepler_process_cpu_joules_total{pid="43",comm="x,y\nz",exe="",type="regular",zone="package",state="running",container_id="",pod_id="",vm_id=""} 0.500000
# HELP kepler_process_cpu_watts Power attributed to the process, in watts
# TYPE kepler_process_cpu_watts gauge
kepler_process_cpu_watts{pid="42",comm="a \"q\" \\b",exe="",type="regular",zone="package",state="running",container_id="",pod_id="",vm_id=""} 2.5
kepler_process_cpu_watts{pid="43",comm="x,y\nz",exe="",type="regular",zone="package",state="running",container_id="",pod_id="",vm_id=""} 0.5
EOF
}

@test "table: the interval, a line per zone, tables sorted by power" {
	local out=$BATS_TEST_TMPDIR/out
	kp-fmt -f table <"$TWO" >"$out"
	run -0 sed '/^interval 2 /,$d' "$out"
	assert_output - <<'EOF'
interval 1  2026-11-22T13:48:36.123456Z  (1.000 s)
package  35.0 W  (active 14.0 W, idle 21.0 W)  usage 40.0%  source powercap
dram     4.50 W  (active 1.80 W, idle 2.70 W)  usage 40.0%  source powercap

 PID  COMM             ZONE       WATTS   ENERGY     CPU  CONTAINER
  42  burn             package   8.75 W   8.75 J  2.00 s  3f4e5d6c7b8a
4242  gzip             package   2.62 W   2.62 J  600 ms  3f4e5d6c7b8a
 777  nginx            package   1.75 W   1.75 J  400 ms  a1b2c3d4e5f6
  42  burn             dram      1.12 W   1.12 J  2.00 s  3f4e5d6c7b8a
1500  qemu-system-x86  package   656 mW   656 mJ  150 ms  -
4242  gzip             dram      338 mW   338 mJ  600 ms  3f4e5d6c7b8a
 777  nginx            dram      225 mW   225 mJ  400 ms  a1b2c3d4e5f6
1500  qemu-system-x86  dram     84.4 mW  84.4 mJ  150 ms  -
unattributed  package  219 mW  219 mJ  cpu 50.0 ms
unattributed  dram     28.1 mW  28.1 mJ  cpu 50.0 ms

CONTAINER     ZONE      WATTS  ENERGY     CPU  PROCS
3f4e5d6c7b8a  package  11.4 W  11.4 J  2.60 s      2
a1b2c3d4e5f6  package  1.75 W  1.75 J  400 ms      1
3f4e5d6c7b8a  dram     1.46 W  1.46 J  2.60 s      2
a1b2c3d4e5f6  dram     225 mW  225 mJ  400 ms      1

POD                                   ZONE      WATTS  ENERGY     CPU  PROCS
1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d  package  11.4 W  11.4 J  2.60 s      2
1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d  dram     1.46 W  1.46 J  2.60 s      2

VM             ZONE       WATTS   ENERGY     CPU  PROCS
qemu-1-ubuntu  package   656 mW   656 mJ  150 ms      1
qemu-1-ubuntu  dram     84.4 mW  84.4 mJ  150 ms      1
EOF
}

@test "table: key lines of the second interval" {
	run -0 kp-fmt -f table <"$TWO"
	assert_line "interval 2  2026-11-22T13:48:37.123498Z  (1.000 s)"
	assert_line "package  41.0 W  (active 20.5 W, idle 20.5 W)  usage 50.0%  source powercap"
	assert_line "  42  burn             package  15.9 W  15.9 J  3.10 s  3f4e5d6c7b8a"
	assert_line "4242  gzip             package     0 W     0 J     0 s  3f4e5d6c7b8a"
	assert_line "unattributed  package  769 mW  769 mJ  cpu 150 ms"
	# The top process comes right after the header row.
	run -0 bash -c 'kp-fmt -f table <"$1" | grep -A 1 "^ PID" | sed -n 2p' _ "$TWO"
	assert_output "  42  burn             package   8.75 W   8.75 J  2.00 s  3f4e5d6c7b8a"
}

@test "table shows a stream of energy records alone" {
	run -0 kp-fmt -f table <"$STREAMS/energy-only.ndjson"
	assert_output - <<'EOF'
interval 1  2026-11-22T13:48:36.323468Z  (0.200 s)
package  12.3 W  source model, estimated

interval 2  2026-11-22T13:48:36.523458Z  (0.200 s)
package  13.0 W  source model, estimated
EOF
}

@test "table shows control characters in names as '?'" {
	run -0 kp-fmt -f table <"$STREAMS/odd-names.ndjson"
	assert_line ' 42  a "q" \b  package  2.50 W  2.50 J  500 ms  -'
	assert_line ' 43  x,y?z     package  500 mW  500 mJ  100 ms  -'
}

@test "table marks records left without an interval record" {
	run -3 --separate-stderr bash -c 'head -n 3 "$1" | kp-fmt -f table' _ "$TWO"
	assert_output - <<'EOF'
interval 1  (incomplete)
package  35.0 W  source powercap
dram     4.50 W  source powercap
EOF
	assert_equal "$stderr" "kp-fmt: <stdin>:3: the stream ends inside interval 1"
}

@test "a bad line is reported with its number, skipped, and exits 3" {
	local f
	for f in table csv json prometheus; do
		run -3 --separate-stderr kp-fmt -f "$f" <"$STREAMS/bad-line.ndjson"
		assert_equal "$stderr" "kp-fmt: <stdin>:5: a string is not closed"
	done
	run -3 --separate-stderr kp-fmt -f csv <"$STREAMS/bad-line.ndjson"
	assert_output - <<'EOF'
seq,ts,dt_us,type,zone,pid,starttime,comm,state,container_id,pod_id,vm_id,unit,cpu_us,energy_uj,active_uj,idle_uj,watts,total_uj,socket,level,by,group,source,estimated,model,device
1,2026-11-22T13:48:36.123456Z,1000000,node,package,,,,,,,,,,20000000,10000000,10000000,20,20000000,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,process,package,42,1234567,burn,running,,,,,1000000,6000000,,,6,6000000,,,,,powercap,false,,
1,2026-11-22T13:48:36.123456Z,1000000,unattributed,package,,,,,,,,,250000,1500000,,,1.5,1500000,,,,,powercap,false,,
2,2026-11-22T13:48:37.123456Z,1000000,node,package,,,,,,,,,,18000000,9000000,9000000,18,38000000,,,,,powercap,false,,
2,2026-11-22T13:48:37.123456Z,1000000,process,package,42,1234567,burn,running,,,,,1000000,9000000,,,9,15000000,,,,,powercap,false,,
2,2026-11-22T13:48:37.123456Z,1000000,unattributed,package,,,,,,,,,0,0,,,0,1500000,,,,,powercap,false,,
EOF
	run -3 --separate-stderr kp-fmt -f json <"$STREAMS/bad-line.ndjson"
	assert_output "$(sed '/^$/d; 5d' "$STREAMS/bad-line.ndjson")"
}

@test "a header of major version 2 stops with exit 3" {
	run -3 --separate-stderr bash -c 'printf "%s\n" \
	    "{\"type\":\"header\",\"seq\":0,\"version\":\"2.0\",\"producer\":\"rapl-read\"}" \
	    "{\"type\":\"interval\",\"seq\":1,\"ts\":\"2026-11-22T13:48:36.123456Z\",\"dt_us\":1000000}" |
	    kp-fmt -f csv'
	assert_equal "$stderr" "kp-fmt: <stdin>:1: unsupported kp-records version 2.0 (this build reads 1.x)"
}

@test "each interval is written as soon as its interval record arrives" {
	local out=$BATS_TEST_TMPDIR/out n pid i
	n=$(first_interval_line "$TWO")
	{ head -n "$n" "$TWO"; sleep 4; tail -n "+$((n + 1))" "$TWO"; } |
	    kp-fmt -f csv >"$out" 3>&- &
	pid=$!
	for i in $(seq 30); do
		[ "$(grep -c '^1,' "$out")" -eq 22 ] && break
		sleep 0.1
	done
	# Seen while the writer still sleeps: interval 2 is not there yet.
	assert_equal "$(grep -c '^1,' "$out")" 22
	assert_equal "$(grep -c '^2,' "$out")" 0
	wait "$pid"
	assert_equal "$(grep -c '^2,' "$out")" 22
}

@test "a write error on stdout exits 1" {
	local f
	for f in table csv json prometheus; do
		run -1 --separate-stderr bash -c 'kp-fmt -f "$1" <"$2" >/dev/full' _ "$f" "$TWO"
		assert_equal "$stderr" "kp-fmt: write error on stdout: No space left on device"
	done
}

@test "a closed downstream pipe is a quiet stop with status 0" {
	local big=$BATS_TEST_TMPDIR/big f
	long_stream 50000 >"$big"
	for f in json csv table prometheus; do
		run -0 --separate-stderr bash -c \
		    'set -o pipefail; kp-fmt -f "$1" <"$2" | head -n 1' _ "$f" "$big"
		assert_equal "$stderr" ""
	done
	run -0 bash -c 'set -o pipefail; kp-fmt -f json <"$1" | head -n 1' _ "$big"
	assert_output '{"type":"header","seq":0,"version":"1.0","producer":"rapl-read"}'
}

@test "no definite leaks in any format" {
	command -v valgrind >/dev/null || skip "no valgrind"
	# clang links ASan in statically, so ldd does not show it.
	[ "${KP_SANITIZE:-}" != 1 ] || skip "sanitizer build: ASan checks memory"
	local f
	for f in table csv json prometheus; do
		run -3 --separate-stderr valgrind -q --leak-check=full \
		    --errors-for-leak-kinds=definite --error-exitcode=99 \
		    kp-fmt -f "$f" <"$STREAMS/bad-line.ndjson"
		run -0 --separate-stderr valgrind -q --leak-check=full \
		    --errors-for-leak-kinds=definite --error-exitcode=99 \
		    kp-fmt -f "$f" <"$TWO"
		assert_equal "$stderr" ""
	done
}

@test "the manual page lints clean and has the sections" {
	run -0 mandoc -Tlint -Wwarning "$KP_ROOT/man/kp-fmt.1"
	assert_output ""
	run -0 bash -c 'mandoc -Tascii "$1" | col -b | grep "^[A-Z]"' _ "$KP_ROOT/man/kp-fmt.1"
	assert_line "NAME"
	assert_line "SYNOPSIS"
	assert_line "DESCRIPTION"
	assert_line "EXIT STATUS"
	assert_line "EXAMPLES"
	assert_line "SEE ALSO"
}

# Peak resident KiB of kp-fmt "$@" < $IN, its output to $OUT (GNU time(1)).
peak_kib() {
	/usr/bin/time -f %M -o "$BATS_TEST_TMPDIR/rss" kp-fmt "$@" \
	    < "$IN" > "$OUT"
	tail -n 1 "$BATS_TEST_TMPDIR/rss"
}

# One interval of 20,000 processes, some 16 MB, in $IN, and $OUT for
# kp-fmt's output: kept as records, kp-fmt's formats cost 5 to 9 times it.
one_interval() {
	[ "${KP_SANITIZE:-}" != 1 ] || skip "sanitizer build: ASan's shadow memory is not kp-fmt's"
	IN=$BATS_TEST_TMPDIR/in OUT=$BATS_TEST_TMPDIR/out
	"$KP_ROOT/scripts/kp-gen" --intervals 1 --processes 20000 --dense 1 |
	    kp-attribute | kp-aggregate > "$IN"
}

@test "json and csv keep no copy of an interval's records: the peak stays within its size + 32 MiB (kp-fmt(1), Memory)" {
	one_interval
	local goal_kib=$(($(wc -c < "$IN") / 1024 + 32 * 1024)) kib
	kib=$(peak_kib -f json)
	[ "$kib" -le "$goal_kib" ] || fail "json: $kib KiB, more than $goal_kib"
	cmp "$IN" "$OUT"
	kib=$(peak_kib -f csv -o type,dt_us,ts)
	[ "$kib" -le "$goal_kib" ] || fail "csv: $kib KiB, more than $goal_kib"
	# A row for each record but the header and the interval, with the
	# interval's cells, which came after them.
	assert_equal "$(wc -l < "$OUT")" "$(($(wc -l < "$IN") - 1))"
	run -0 grep -c -v ',1000000,2026-11-22T00:00:01.000000Z$' "$OUT"
	assert_output 1
	# The default columns: the rows held, some 60 % of the interval, go
	# out as their gaps are filled, never held twice.
	kib=$(peak_kib -f csv)
	((kib <= $(wc -c < "$IN") * 9 / 10 / 1024)) || fail "csv: $kib KiB, more than 90 % of the interval"
	assert_equal "$(wc -l < "$OUT")" "$(($(wc -l < "$IN") - 1))"
}

@test "table keeps rows, not records: the peak stays within the interval's size + 32 MiB, and -n keeps only the rows shown (kp-fmt(1), Memory)" {
	one_interval
	local size_kib=$(($(wc -c < "$IN") / 1024)) kib
	kib=$(peak_kib -f table)
	((kib <= size_kib + 32 * 1024)) || fail "table: $kib KiB, more than $size_kib + 32 MiB"
	# A row for every process record, in each zone.
	assert_equal "$(grep -cE '^ *[0-9]+  [a-z]' "$OUT")" "$(grep -c '"type":"process"' "$IN")"
	# -n 10: ten rows a table, a heap of them, whatever the interval.
	kib=$(peak_kib -f table -n 10)
	((kib <= size_kib / 4)) || fail "table -n 10: $kib KiB, more than a quarter of the interval's $size_kib"
	assert_equal "$(grep -cE '^ *[0-9]+  [a-z]' "$OUT")" 10
	# Those of highest power, as the whole table's first ten.
	assert_equal "$(grep -E '^ *[0-9]+  [a-z]' "$OUT" | tr -s ' ')" \
	    "$(kp-fmt -f table < "$IN" | grep -E '^ *[0-9]+  [a-z]' | head -n 10 | tr -s ' ')"
}

@test "top takes records as read, as table does: the peak stays under the interval's size (kp-fmt(1), Memory)" {
	one_interval
	local size_kib=$(($(wc -c < "$IN") / 1024)) kib
	kp-fmt -f table < "$IN" > "$OUT.table"
	# Its output no terminal, top writes what table writes, holding what
	# table holds, its rows' text: under the interval; its records were 5
	# times it.
	kib=$(peak_kib -f top)
	((kib <= size_kib)) || fail "top: $kib KiB, more than the interval's $size_kib"
	cmp "$OUT.table" "$OUT"
}

@test "prometheus and --textfile take records as read: the peak stays within the interval's size + 32 MiB, though the exposition is larger (kp-fmt(1), Memory)" {
	one_interval
	local goal_kib=$(($(wc -c < "$IN") / 1024 + 32 * 1024)) kib
	kib=$(peak_kib -f prometheus)
	((kib <= goal_kib)) || fail "prometheus: $kib KiB, more than $goal_kib"
	# The exposition, larger than the interval, is whole: a process
	# series in each zone.
	(($(wc -c < "$OUT") > $(wc -c < "$IN")))
	assert_equal "$(grep -c '^kepler_process_cpu_joules_total' "$OUT")" \
	    "$(grep -c '"type":"process".*"state":"running"' "$IN")"
	run -0 promtool check metrics < "$OUT"
	mv "$OUT" "$OUT.prom"
	kib=$(peak_kib --textfile "$BATS_TEST_TMPDIR/kp.prom")
	((kib <= goal_kib)) || fail "--textfile: $kib KiB, more than $goal_kib"
	cmp "$BATS_TEST_TMPDIR/kp.prom" "$OUT.prom"
}

@test "--summary spools the open interval and packs each workload's values, long ones shared: the peak stays within the interval's size + 32 MiB (kp-fmt(1), Memory)" {
	[ "${KP_SANITIZE:-}" != 1 ] || skip "sanitizer build: ASan's shadow memory is not kp-fmt's"
	IN=$BATS_TEST_TMPDIR/in OUT=$BATS_TEST_TMPDIR/out
	# 20,000 processes, some 16 MB, as 40,000 workloads: kept as records
	# with a copy of each name in each, they cost 12 times that; as lines
	# and a field of their own for each value, 3 times: 50 MiB.
	"$KP_ROOT/scripts/kp-gen" --intervals 1 --processes 20000 --dense 1 |
	    kp-attribute | kp-aggregate > "$IN"
	local bound_kib=$(($(wc -c < "$IN") / 1024 + 32 * 1024)) kib
	kib=$(peak_kib -f json --summary 2>/dev/null)
	[ "$kib" -le "$bound_kib" ] || fail "$kib KiB, more than $bound_kib"
	# The summary is of the whole interval: in each zone 1,000 rows and
	# the other processes folded.
	local n
	n=$(grep -c '"type":"process","seq":1,"zone":"package"' "$IN")
	run -0 grep -c '"type":"process"' "$OUT"
	assert_output 2002
	run -0 grep -c "\"type\":\"process\".*\"folded\":$((n - 1000))}\$" "$OUT"
	assert_output 2
}

@test "csv: a row's source cells are what its zone's records said by the interval's end, though its row is made as read (kp-fmt(1), Memory)" {
	cat > "$BATS_TEST_TMPDIR/in" <<'EOF2'
{"type":"header","seq":0,"version":"1.0","producer":"test"}
{"type":"process","seq":1,"zone":"package","pid":7,"starttime":1,"comm":"a","state":"running","cpu_us":5,"energy_uj":100}
{"type":"energy","seq":1,"zone":"package","energy_uj":1000,"source":"model","estimated":true,"model":"spec"}
{"type":"interval","seq":1,"ts":"2026-11-22T00:00:01.000000Z","dt_us":1000000}
{"type":"process","seq":2,"zone":"package","pid":7,"starttime":1,"comm":"a","state":"running","cpu_us":5,"energy_uj":100}
{"type":"energy","seq":2,"zone":"package","energy_uj":1000,"source":"powercap","estimated":false}
{"type":"interval","seq":2,"ts":"2026-11-22T00:00:02.000000Z","dt_us":1000000}
EOF2
	run -0 --separate-stderr kp-fmt -f csv -t process -o seq,source,estimated,model,dt_us < "$BATS_TEST_TMPDIR/in"
	assert_output - <<'EOF2'
seq,source,estimated,model,dt_us
1,model,true,spec,1000000
2,powercap,false,,1000000
EOF2
}
