#!/usr/bin/env bats
# kp-fmt: wherever a figure can be read, it says when it is an estimate,
# and by which model (kp-fmt(1), DESCRIPTION): the table and top, CSV by
# default, JSON, Prometheus and --summary; and a 1.1 stream's meter zone
# is shown as platform (kp-records(5), Versioning).

load test_helper

setup() {
	STREAMS=$FIXTURES/streams
	# A 1.2 model stream as rapl-read, proc-cputime, kp-attribute and
	# kp-aggregate write it, and the same from a 1.1 ACPI meter.
	M=$BATS_TEST_TMPDIR/model.ndjson
	kp-attribute <"$STREAMS/model.ndjson" | kp-aggregate >"$M"
	METER=$BATS_TEST_TMPDIR/meter.ndjson
	kp-attribute <"$STREAMS/meter-1.1.ndjson" | kp-aggregate >"$METER"
}

@test "table: the zone's line names the source, says estimated and names the model" {
	run -0 --separate-stderr kp-fmt -f table <"$M"
	assert_line "platform  29.5 W  (active 8.83 W, idle 20.7 W)  usage 29.9%  source model, estimated by amd-zen4"
	assert_line "platform  27.0 W  (active 5.40 W, idle 21.6 W)  usage 20.0%  source model, estimated by amd-zen4"
	# rapl-read's stream alone: the energy record says it.
	run -0 --separate-stderr kp-fmt -f table <"$STREAMS/model.ndjson"
	assert_line "platform  29.5 W  source model, estimated by amd-zen4"
	# A meter measures: no "estimated".
	run -0 --separate-stderr kp-fmt -f table <"$METER"
	assert_line "platform  29.5 W  (active 8.83 W, idle 20.7 W)  usage 29.9%  source hwmon"
	refute_output --partial estimated
	refute_output --partial meter
}

@test "top: the live view says estimated and by which model" {
	local out=$BATS_TEST_TMPDIR/top
	script -qec "stty rows 40 cols 120; kp-fmt -f top <'$M'" /dev/null </dev/null >"$out"
	run -0 grep -c "platform  27.0 W  (active 5.40 W, idle 21.6 W)  usage 20.0%  source model, estimated by amd-zen4" "$out"
}

@test "csv: source, estimated and model are default columns, in every row of the zone" {
	run -0 --separate-stderr kp-fmt -f csv <"$M"
	assert_line -n 0 "seq,ts,dt_us,type,zone,pid,starttime,comm,state,container_id,pod_id,vm_id,unit,cpu_us,energy_uj,active_uj,idle_uj,watts,total_uj,socket,level,by,group,source,estimated,model,device"
	# Every row: node, process, unattributed, container, unit, host.
	assert_equal "$(sed 1d <<<"$output" | wc -l)" 20
	assert_equal "$(sed 1d <<<"$output" | grep -vc ',platform,.*,model,true,amd-zen4,$')" 0
	assert_line "1,2026-11-22T13:48:36.123456Z,200345,process,platform,812,4242,nginx,running,5b9d3f0e1c2a4b6d8e0f1a3c5e7092b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a4c6,,,,90000,1326598,,,6.621567796,1326598,,,,,model,true,amd-zen4,"
	# Without the node records in the output, the rows still say it.
	run -0 --separate-stderr kp-fmt -f csv -t container,host <"$M"
	assert_equal "$(sed 1d <<<"$output" | grep -vc ',model,true,amd-zen4,$')" 0
	# -o names them as any column.
	run -0 --separate-stderr kp-fmt -f csv -H -t process -o comm,watts,estimated,model <"$M"
	assert_line -n 0 "nginx,6.621567796,true,amd-zen4"
}

@test "csv: a meter's rows say it measures; a 1.1 meter is the platform zone" {
	run -0 --separate-stderr kp-fmt -f csv -t node,process <"$METER"
	assert_equal "$(sed 1d <<<"$output" | grep -vc ',platform,.*,hwmon,false,,$')" 0
	refute_output --partial meter
	# The 1.1 stream formatted as it came from rapl-read, records and all.
	run -0 --separate-stderr kp-fmt -f csv -o type,zone,source,estimated <"$STREAMS/meter-1.1.ndjson"
	assert_line -n 1 "energy,platform,hwmon,false"
}

@test "csv --summary: every row of the summary says estimated, and by which model" {
	run -0 --separate-stderr kp-fmt -f csv --summary -o type,zone,comm,energy_uj,source,estimated,model <"$M"
	assert_line "node,platform,,11306164,model,true,amd-zen4"
	assert_line "process,platform,nginx,2136598,model,true,amd-zen4"
	assert_equal "$(sed 1d <<<"$output" | grep -vc ',model,true,amd-zen4$')" 0
}

@test "json: the node record carries source, estimated and the model's fields as they came" {
	run -0 --separate-stderr kp-fmt -f json -t node <"$M"
	assert_equal "$(jq -c '[.zone, .source, .estimated, .model, .threads, .sockets]' <<<"$output" | sort -u)" \
	    '["platform","model",true,"amd-zen4",2,1]'
}

@test "--summary: the table's node line says estimated by the model" {
	run -0 --separate-stderr kp-fmt -f table --summary <"$M"
	assert_line -n 0 "summary of intervals 1-2  2026-11-22T13:48:36.323456Z  (0.400 s)"
	assert_line -n 1 "platform  28.2 W  (active 7.12 W, idle 21.1 W)  usage 25.2%  source model, estimated by amd-zen4"
}

@test "--summary: a sum with an estimate in it is estimated, whatever came last" {
	# A 1.1 meter's run, then a run of the model in the same log.
	cat "$METER" "$M" >"$BATS_TEST_TMPDIR/both.ndjson"
	run -0 --separate-stderr kp-fmt -f json --summary -t node <"$BATS_TEST_TMPDIR/both.ndjson"
	assert_equal "$(jq -c '[.zone, .energy_uj, .estimated]' <<<"$output")" '["platform",22612328,true]'
	# And the other way round: the last record says measured.
	cat "$M" "$METER" >"$BATS_TEST_TMPDIR/both.ndjson"
	run -0 --separate-stderr kp-fmt -f json --summary -t node <"$BATS_TEST_TMPDIR/both.ndjson"
	assert_equal "$(jq -c '[.zone, .energy_uj, .estimated, .source]' <<<"$output")" '["platform",22612328,true,"hwmon"]'
	run -0 --separate-stderr kp-fmt -f table --summary <"$BATS_TEST_TMPDIR/both.ndjson"
	assert_line -n 1 --partial "source hwmon, estimated"
}

# The exposition after each interval of stream $1 in its own file,
# $BATS_TEST_TMPDIR/e.N.prom.
exposition_files() {
	expositions "$1" | awk -v d="$BATS_TEST_TMPDIR/e" \
	    'BEGIN { n = 1 } /^$/ { n++; next } { print > (d "." n ".prom") }'
}

@test "prometheus: a kp_energy_source_info sample per zone says the source, estimated and the model" {
	local f
	exposition_files "$M"
	for f in "$BATS_TEST_TMPDIR"/e.1.prom "$BATS_TEST_TMPDIR"/e.2.prom; do
		run -0 grep kp_energy_source_info "$f"
		assert_output - <<'EOF2'
# HELP kp_energy_source_info Where the energy of each zone comes from: its source, whether it is estimated, and by which model; always 1
# TYPE kp_energy_source_info gauge
kp_energy_source_info{zone="platform",source="model",estimated="true",model="amd-zen4",node_name="vm-1"} 1
EOF2
		run -0 promtool check metrics <"$f"
		assert_output ""
	done
	# A RAPL host's zones say they measure, each once, the node zone
	# (a sum of them, without a zone label) none.
	run -0 bash -c 'kp-fmt -f prometheus <"$1" | grep "^kp_energy_source_info" | sort -u' _ "$STREAMS/kepler-host.ndjson"
	assert_output - <<'EOF2'
kp_energy_source_info{zone="dram",source="powercap",estimated="false",model="",node_name="node-a"} 1
kp_energy_source_info{zone="package",source="powercap",estimated="false",model="",node_name="node-a"} 1
EOF2
	# --summary and --textfile write it too.
	run -0 kp-fmt -f prometheus --summary <"$M"
	assert_line 'kp_energy_source_info{zone="platform",source="model",estimated="true",model="amd-zen4",node_name="vm-1"} 1'
	run -0 kp-fmt --textfile "$BATS_TEST_TMPDIR/kp.prom" <"$M"
	run -0 grep -c 'estimated="true",model="amd-zen4"' "$BATS_TEST_TMPDIR/kp.prom"
}

@test "prometheus: platform is Kepler's node zone label platform, and kp_node_platform_* by source" {
	run -0 kp-fmt -f prometheus <"$M"
	# Kepler's families keep their labels: the zone is a label value.
	assert_line 'kepler_node_cpu_joules_total{zone="platform",path="",node_name="vm-1"} 11.306164'
	assert_line --partial 'kepler_process_cpu_joules_total{pid="812",comm="nginx",exe="",type="container",zone="platform",state="running",'
	assert_line 'kp_node_platform_joules_total{source="model",node_name="vm-1"} 11.306164'
	assert_line 'kp_node_platform_watts{source="model",node_name="vm-1"} 27'
	# Kepler's platform gauge: the wall only (kp-fmt(1), prometheus).
	assert_line 'kepler_platform_watts{source="model",node_name="vm-1"} 27'
	# A 1.1 ACPI meter is the same platform zone.
	run -0 kp-fmt -f prometheus <"$METER"
	assert_line 'kp_node_platform_joules_total{source="hwmon",node_name="vm-1"} 11.306164'
	assert_line 'kp_energy_source_info{zone="platform",source="hwmon",estimated="false",model="",node_name="vm-1"} 1'
	refute_output --partial meter
}
