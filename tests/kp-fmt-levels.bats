#!/usr/bin/env bats
# kp-fmt on the records of the whole pipeline: unit, group and host records
# from kp-aggregate, idle kept at node level, terminated groups, exited
# records, and the socket of rapl-read --per-socket, in every format.
bats_require_minimum_version 1.5.0

load test_helper

setup() {
	GEN=$KP_ROOT/scripts/kp-gen
	# Three intervals of a churning fleet: containers, pods, VMs, units.
	"$GEN" --intervals 3 --processes 40 --containers 12 --pods 2 \
	    --churn 500 >"$BATS_TEST_TMPDIR/gen.ndjson"
	LEVELS=$BATS_TEST_TMPDIR/levels.ndjson
	BY=$BATS_TEST_TMPDIR/by.ndjson
	kp-attribute <"$BATS_TEST_TMPDIR/gen.ndjson" |
	    kp-aggregate --level container,pod,vm,unit >"$LEVELS"
	kp-attribute <"$BATS_TEST_TMPDIR/gen.ndjson" |
	    kp-aggregate --by comm >"$BY"
}

# Splits kp-fmt -f prometheus output $1 into one file per interval,
# $1.N.prom.
split_expositions() {
	awk -v d="$1" 'BEGIN { n = 1 } /^$/ { n++; next }
	    { print > (d "." n ".prom") }' "$1"
}

# Fails when an exposition file $1 has a series (name and labels) twice:
# promtool does not see it, node_exporter refuses the whole file.
no_duplicate_series() {
	local dup
	dup=$(grep -v '^#' "$1" | sed 's/ [^ ]*$//' | sort | uniq -d)
	[ -z "$dup" ] || { echo "duplicate series in $1: $dup" >&2; return 1; }
}

# Every exposition of stream $1: promtool accepts it, no duplicate series,
# a HELP and a TYPE for each family with samples.
check_expositions() {
	local f out=$BATS_TEST_TMPDIR/check.$RANDOM
	expositions "$@" >"$out"
	split_expositions "$out"
	for f in "$out".*.prom; do
		run -0 promtool check metrics <"$f"
		assert_output ""
		no_duplicate_series "$f"
		assert_equal "$(grep -v '^#' "$f" | sed 's/[{ ].*//' | sort -u)" \
		    "$(sed -n 's/^# TYPE \([^ ]*\) .*/\1/p' "$f" | sort)"
		assert_equal "$(sed -n 's/^# HELP \([^ ]*\) .*/\1/p' "$f" | sort)" \
		    "$(sed -n 's/^# TYPE \([^ ]*\) .*/\1/p' "$f" | sort)"
	done
}

@test "prometheus: unit, group and host families; promtool passes on each interval" {
	check_expositions "$LEVELS"
	check_expositions "$BY"
	check_expositions "$LEVELS" --carbon-intensity 300
	run -0 kp-fmt -f prometheus <"$LEVELS"
	assert_line "# TYPE kp_unit_cpu_joules_total counter"
	assert_line "# TYPE kp_unit_cpu_watts gauge"
	assert_line "# TYPE kp_host_cpu_joules_total counter"
	run -0 kp-fmt -f prometheus --min-terminated-energy 0 <"$BY"
	assert_line "# TYPE kp_group_cpu_joules_total counter"
	assert_line "# TYPE kp_group_cpu_watts gauge"
}

@test "prometheus: each unit, group and host sample is its record's total in joules" {
	local want got
	# The last interval's records, as the samples of the last exposition.
	want=$(jq -r 'select(.seq == 3 and .type == "unit") |
	    "kp_unit_cpu_joules_total{unit=\"\(.unit)\",zone=\"\(.zone)\",state=\"\(.state)\"} \(.total_uj)"' "$LEVELS" | sort)
	got=$(kp-fmt -f prometheus --min-terminated-energy 0 <"$LEVELS" |
	    grep '^kp_unit_cpu_joules_total' |
	    awk '{ printf "%s %d\n", $1, $2 * 1e6 + 0.5 }' | sort)
	[ -n "$want" ]
	assert_equal "$got" "$want"
	want=$(jq -r 'select(.seq == 3 and .type == "host") |
	    "kp_host_cpu_joules_total{level=\"\(.level)\",zone=\"\(.zone)\"} \(.total_uj)"' "$LEVELS" | sort)
	got=$(kp-fmt -f prometheus --min-terminated-energy 0 <"$LEVELS" |
	    grep '^kp_host_cpu_joules_total' |
	    awk '{ printf "%s %d\n", $1, $2 * 1e6 + 0.5 }' | sort)
	[ -n "$want" ]
	assert_equal "$got" "$want"
	# A group's label is the value of the field it is grouped by.
	want=$(jq -r 'select(.seq == 3 and .type == "group") |
	    "kp_group_cpu_joules_total{by=\"comm\",group=\"\(.comm)\",zone=\"\(.zone)\",state=\"\(.state)\"} \(.total_uj)"' "$BY" | sort)
	got=$(kp-fmt -f prometheus --min-terminated-energy 0 <"$BY" |
	    grep '^kp_group_cpu_joules_total' |
	    awk '{ printf "%s %d\n", $1, $2 * 1e6 + 0.5 }' | sort)
	[ -n "$want" ]
	assert_equal "$got" "$want"
}

@test "prometheus: a terminated container is one last sample with state terminated" {
	local n
	n=$(jq -r 'select(.type == "container" and .state == "terminated") | .zone' "$LEVELS" | wc -l)
	[ "$n" -gt 0 ]
	run -0 expositions "$LEVELS" --min-terminated-energy 0
	assert_equal "$(grep -c '^kepler_container_cpu_joules_total{.*state="terminated"}' <<<"$output")" "$n"
}

@test "prometheus: idle kept at node level, all of it or none with --idle proportional" {
	local idle
	idle=$(jq -s 'map(select(.type == "node" and .zone == "package") | .idle_uj) | add' "$LEVELS")
	run -0 kp-fmt -f prometheus <"$LEVELS"
	assert_equal "$(grep '^kp_node_cpu_idle_kept_joules_total{zone="package"}' <<<"$output" | tail -n 1)" \
	    "kp_node_cpu_idle_kept_joules_total{zone=\"package\"} $(awk -v u="$idle" 'BEGIN { printf "%.6f", u / 1e6 }')"
	run -0 bash -c 'kp-attribute --idle proportional <"$1" | kp-fmt -f prometheus' _ "$BATS_TEST_TMPDIR/gen.ndjson"
	assert_equal "$(grep '^kp_node_cpu_idle_kept_joules_total{zone="package"}' <<<"$output" | tail -n 1)" \
	    'kp_node_cpu_idle_kept_joules_total{zone="package"} 0.000000'
}

@test "rapl-read --per-socket: a socket label, no duplicate series, promtool passes" {
	rapl-read --sysfs "$FIXTURES/sysfs-2socket" --proc "$FIXTURES/proc-model" \
	    --per-socket -n 2 -i 50ms >"$BATS_TEST_TMPDIR/ps.ndjson"
	check_expositions "$BATS_TEST_TMPDIR/ps.ndjson"
	run -0 kp-fmt -f prometheus <"$BATS_TEST_TMPDIR/ps.ndjson"
	assert_line "kepler_node_cpu_joules_total{zone=\"package\",path=\"$FIXTURES/sysfs-2socket/class/powercap/intel-rapl:0\",socket=\"0\",node_name=\"worker-2\"} 0.000000"
	assert_line "kepler_node_cpu_joules_total{zone=\"package\",path=\"$FIXTURES/sysfs-2socket/class/powercap/intel-rapl:1\",socket=\"1\",node_name=\"worker-2\"} 0.000000"
	# Each socket's counter is the sum of its own energy.
	cat >"$BATS_TEST_TMPDIR/sock.ndjson" <<'EOF'
{"type":"energy","seq":1,"zone":"package","socket":0,"energy_uj":3000000,"watts":3.0,"source":"powercap","estimated":false,"sockets":1}
{"type":"energy","seq":1,"zone":"package","socket":1,"energy_uj":5000000,"watts":5.0,"source":"powercap","estimated":false,"sockets":1}
{"type":"interval","seq":1,"ts":"2026-11-23T11:23:44.114995Z","dt_us":1000000}
{"type":"energy","seq":2,"zone":"package","socket":0,"energy_uj":1000000,"watts":1.0,"source":"powercap","estimated":false,"sockets":1}
{"type":"energy","seq":2,"zone":"package","socket":1,"energy_uj":2000000,"watts":2.0,"source":"powercap","estimated":false,"sockets":1}
{"type":"interval","seq":2,"ts":"2026-11-23T11:23:45.114995Z","dt_us":1000000}
EOF
	run -0 kp-fmt -f prometheus <"$BATS_TEST_TMPDIR/sock.ndjson"
	assert_equal "$(grep '^kepler_node_cpu_joules_total' <<<"$output" | tail -n 2)" \
	    'kepler_node_cpu_joules_total{zone="package",path="",socket="0"} 4.000000
kepler_node_cpu_joules_total{zone="package",path="",socket="1"} 7.000000'
	# The check does catch a series written twice: the socket removed.
	sed 's/"socket":[01],//' "$BATS_TEST_TMPDIR/sock.ndjson" |
	    kp-fmt -f prometheus | awk '/^$/ { exit } 1' >"$BATS_TEST_TMPDIR/dup.prom"
	run no_duplicate_series "$BATS_TEST_TMPDIR/dup.prom"
	assert_failure
}


@test "rapl-read --per-socket through kp-attribute and kp-aggregate: no duplicate series" {
	cat >"$BATS_TEST_TMPDIR/in.ndjson" <<'EOF2'
{"type":"energy","seq":1,"zone":"package","socket":0,"energy_uj":3000000,"watts":3.0,"source":"powercap","estimated":false,"sockets":1}
{"type":"energy","seq":1,"zone":"package","socket":1,"energy_uj":5000000,"watts":5.0,"source":"powercap","estimated":false,"sockets":1}
{"type":"cpu","seq":1,"cpu_us":500000,"total_cpu_us":1000000,"usage_ratio":0.5}
{"type":"proc","seq":1,"pid":42,"starttime":1,"comm":"p","cpu_us":250000,"state":"running","container_id":"c1"}
{"type":"interval","seq":1,"ts":"2026-11-23T11:23:44.114995Z","dt_us":1000000}
EOF2
	kp-attribute <"$BATS_TEST_TMPDIR/in.ndjson" | kp-aggregate \
	    >"$BATS_TEST_TMPDIR/agg.ndjson"
	check_expositions "$BATS_TEST_TMPDIR/agg.ndjson"
	run -0 kp-fmt -f prometheus <"$BATS_TEST_TMPDIR/agg.ndjson"
	assert_line 'kepler_node_cpu_joules_total{zone="package",path="",socket="1"} 5.000000'
	assert_line --regexp '^kepler_process_cpu_joules_total\{.*zone="package".*socket="1".*\} 1\.250000$'
	assert_line --regexp '^kepler_container_cpu_joules_total\{.*container_id="c1".*zone="package".*\} 2\.000000$'
}
@test "table: units, groups by a field, host records, sockets and idle kept" {
	run -0 kp-fmt -f table <"$LEVELS"
	assert_line --regexp '^UNIT +ZONE +WATTS +ENERGY +CPU +PROCS$'
	assert_line --regexp '^HOST LEVEL +ZONE +WATTS +ENERGY +CPU +PROCS$'
	assert_line --regexp '^container +package +[0-9.]+ m?W'
	assert_line --regexp '^svc[0-9]+\.service +package '
	refute_line --partial "node keeps"
	run -0 kp-fmt -f table <"$BY"
	assert_line --regexp '^COMM +ZONE +WATTS +ENERGY +CPU +PROCS$'
	assert_line --regexp '^worker[0-9] +package '
	run -0 bash -c 'kp-attribute --idle proportional <"$1" | kp-fmt -f table' _ "$BATS_TEST_TMPDIR/gen.ndjson"
	assert_line --regexp '^package .*idle [0-9.]+ W, node keeps 0 W\)'
	rapl-read --sysfs "$FIXTURES/sysfs-2socket" --per-socket -n 1 -i 50ms |
	    kp-fmt -f table >"$BATS_TEST_TMPDIR/t"
	run -0 cat "$BATS_TEST_TMPDIR/t"
	assert_line --regexp '^package/0 +0 W  source powercap$'
	assert_line --regexp '^package/1 +0 W  source powercap$'
}

@test "csv: unit, group and host records by default, with level, by, group and socket" {
	run -0 kp-fmt -f csv <"$BY"
	assert_line -n 0 --partial ",total_uj,socket,level,by,group"
	# A group row: by names the field, group holds its value.
	# (The header row has a group column inside it now: rows only.)
	assert_equal "$(sed 1d <<<"$output" | grep -c ',group,')" \
	    "$(jq -c 'select(.type == "group")' "$BY" | wc -l)"
	run -0 kp-fmt -f csv -o type,by,group,comm,energy_uj -t group <"$BY"
	assert_equal "$(sed 1d <<<"$output" | awk -F, '$2 != "comm" || $3 != $4' | wc -l)" 0
	run -0 kp-fmt -f csv -o type,zone,level,energy_uj -t host <"$LEVELS"
	assert_equal "$(sed 1d <<<"$output" | sort)" \
	    "$(jq -r 'select(.type == "host") | "host,\(.zone),\(.level),\(.energy_uj)"' "$LEVELS" | sort)"
	run -0 kp-fmt -f csv -o type,unit,state,energy_uj -t unit <"$LEVELS"
	assert_line --regexp '^unit,svc[0-9]+\.service,running,[0-9]+$'
	run -0 kp-fmt -f csv -o zone,socket,energy_uj <"$FIXTURES/streams/energy-only.ndjson"
	assert_line -n 1 "package,,2460123"
	run -0 bash -c 'kp-attribute --idle proportional <"$1" | kp-fmt -f csv -o type,idle_uj,idle_kept_uj -t node' _ "$BATS_TEST_TMPDIR/gen.ndjson"
	assert_equal "$(sed 1d <<<"$output" | awk -F, '$3 != 0' | wc -l)" 0
	run -0 kp-fmt -f csv -o type,scaled_down,excess_cpu_us -t unattributed <"$LEVELS"
	assert_line -n 1 --regexp '^unattributed,(true|false),'
}

@test "--summary keeps groups, units, host levels and sockets apart" {
	local want got
	want=$(jq -rs 'map(select(.type == "group")) | group_by(.comm + "/" + .zone) |
	    map("\(.[0].comm) \(.[0].zone) \(map(.energy_uj) | add)") | .[]' "$BY" | sort)
	got=$(kp-fmt -f json --summary -t group <"$BY" |
	    jq -r 'select(.type == "group") | "\(.comm) \(.zone) \(.energy_uj)"' | sort)
	[ -n "$want" ]
	assert_equal "$got" "$want"
	want=$(jq -rs 'map(select(.type == "host")) | group_by(.level + "/" + .zone) |
	    map("\(.[0].level) \(.[0].zone) \(map(.energy_uj) | add)") | .[]' "$LEVELS" | sort)
	got=$(kp-fmt -f json --summary -t host <"$LEVELS" |
	    jq -r 'select(.type == "host") | "\(.level) \(.zone) \(.energy_uj)"' | sort)
	assert_equal "$got" "$want"
	printf '%s\n' \
	    '{"type":"energy","seq":1,"zone":"package","socket":0,"energy_uj":3,"watts":3.0}' \
	    '{"type":"energy","seq":1,"zone":"package","socket":1,"energy_uj":5,"watts":5.0}' \
	    '{"type":"interval","seq":1,"dt_us":1000000}' \
	    '{"type":"energy","seq":2,"zone":"package","socket":0,"energy_uj":1,"watts":1.0}' \
	    '{"type":"energy","seq":2,"zone":"package","socket":1,"energy_uj":2,"watts":2.0}' \
	    '{"type":"interval","seq":2,"dt_us":1000000}' >"$BATS_TEST_TMPDIR/s.ndjson"
	run -0 bash -c 'kp-fmt -f json --summary -t energy <"$1" | jq -c "[.socket, .energy_uj]"' _ "$BATS_TEST_TMPDIR/s.ndjson"
	assert_output - <<'EOF'
[0,4]
[1,7]
EOF
}

# Exited records (kp-records(5)): streams/exited.ndjson is kp-attribute | kp-aggregate
# of two intervals of a build in a docker container (make, its cc1 and as
# children) and a cron job's date, which only exited records show.

# Per interval of kp-fmt -f prometheus output $1, for zone package: the
# node's joules less those of processes, exited records, unattributed and
# idle kept, within a microjoule.
node_less_shares() {
	awk 'BEGIN { n = 0 } /^$/ { n++ } /zone="package"/ {
		if ($1 ~ /^kepler_node_cpu_joules_total/) d[n] += $2
		if ($1 ~ /^(kepler_process|kp_exited|kp_unattributed)_cpu_joules_total/ ||
		    $1 ~ /^kp_node_cpu_idle_kept_joules_total/) d[n] -= $2
	} END {
		# Joules have six decimals: a sum of many is off by float error.
		for (i = 0; i < n; i++)
			printf "%.6f\n", (d[i] < 5e-7 && d[i] > -5e-7) ? 0 : d[i]
	}' "$1"
}

@test "exited: json passes them; table shows them in a table of their own" {
	local ex=$FIXTURES/streams/exited.ndjson
	run -0 kp-fmt -f json <"$ex"
	assert_output "$(cat "$ex")"
	run -0 kp-fmt -f table <"$ex"
	assert_line --regexp '^EXITED +PPID +COMM +ZONE +WATTS +ENERGY +CPU +CONTAINER$'
	assert_line '   120  4300  cc1   package   4.50 W   4.50 J   1.20 s  0f1e2d3c4b5a'
	assert_line '     1   880  date  dram     3.75 mW  3.75 mJ  10.0 ms  -'
	# Not among the processes: those have a pid.
	refute_line --regexp '^ *[0-9]+  (cc1|as|date) '
	run -0 kp-fmt -f table -n 1 --carbon-intensity 400 <"$ex"
	assert_line --regexp '^EXITED +PPID +COMM +ZONE +WATTS +ENERGY +CO2 +CPU +CONTAINER$'
	assert_equal "$(grep -c '  cc1  ' <<<"$output")" 2
	refute_line --partial '  as  '
}

# The exited fixture with three cron jobs of 1 uW each, below the 0.005 mW
# that a table shows (kp-fmt(1), table).
tiny_exited() {
	awk '{ print }
	    /"type":"exited","seq":1,"zone":"package","count":1,/ {
		for (i = 1; i <= 3; i++)
			printf "{\"type\":\"exited\",\"seq\":1,\"zone\":\"package\",\"count\":2,\"ppid\":%d,\"comm\":\"sh%d\",\"kind\":\"service\",\"cgroup\":\"/system.slice/cron.service\",\"unit\":\"cron.service\",\"cpu_us\":%d,\"energy_uj\":1,\"watts\":0.000001}\n", 880 + i, i, 10 * i
	    }' "$FIXTURES/streams/exited.ndjson"
}

@test "exited: rows the table shows as 0 W fold into one other ended row per zone, under a line that says what they are" {
	local ex=$BATS_TEST_TMPDIR/exited.ndjson
	tiny_exited > "$ex"
	run -0 kp-fmt -f table < "$ex"
	assert_line "ended processes, by parent and command"
	assert_line "     1   880  date           package  37.5 mW  37.5 mJ  10.0 ms  -"
	assert_line "     6     -  (other ended)  package  0.00 mW  0.00 mJ  0.06 ms  -"
	refute_line --partial "  sh1  "
	# One such row per zone, and none where nothing is folded.
	assert_equal "$(grep -c '(other ended)' <<< "$output")" 1
	# Named by the line above its table, not mistaken for a process.
	run -0 bash -c 'kp-fmt -f table < "$1" | grep -B1 "^EXITED"' _ "$ex"
	assert_line -n 0 "ended processes, by parent and command"
}

@test "table: HOST LEVEL shows only the levels that have groups, or one row of what is in none" {
	local ex=$FIXTURES/streams/exited.ndjson
	# Containers and a unit, but no pod and no VM.
	run -0 kp-fmt -f table < "$ex"
	assert_line --regexp '^unit +package +7\.12 W '
	assert_line --regexp '^container +package +37\.5 mW '
	refute_line --regexp '^(pod|vm) '
	# No group at all: one row per zone, saying so, not one per level.
	run -0 bash -c 'grep -v "\"type\":\"\(container\|unit\)\"" "$1" | kp-fmt -f table' _ "$ex"
	assert_line --regexp '^HOST +ZONE +WATTS +ENERGY +CPU +PROCS$'
	assert_line --regexp '^not in any container, pod or VM +package +37\.5 mW '
	assert_equal "$(grep -c '^not in any container' <<< "$output")" 4
	refute_line --regexp '^(container|pod|vm|unit) '
}

@test "exited: with -n, the other ended row sums every record shown as 0 W, beside the rows of highest power" {
	# kp-fmt(1), -n and Memory: the fold is kept beside the -n rows, not
	# one of them, and sums the records that -n would have dropped too.
	local ex=$BATS_TEST_TMPDIR/exited.ndjson
	tiny_exited > "$ex"
	run -0 kp-fmt -f table -n 1 < "$ex"
	assert_line "   120  4300  cc1            package   4.50 W   4.50 J   1.20 s  0f1e2d3c4b5a"
	assert_line "     6     -  (other ended)  package  0.00 mW  0.00 mJ  0.06 ms  -"
	refute_line --partial "  as  "
	refute_line --partial "  date  "
}

@test "table: -n counts the HOST LEVEL rows of the levels that have groups, not of those left out" {
	# Pod and vm host rows have the most power, but no pod or VM groups.
	run -0 kp-fmt -f table -n 2 < "$FIXTURES/streams/exited.ndjson"
	assert_line --regexp '^HOST LEVEL +ZONE '
	assert_line --regexp '^unit +package +7\.12 W '
	assert_line --regexp '^unit +dram +712 mW '
	refute_line --regexp '^(container|pod|vm) '
}

@test "exited: csv has a row for each, with ppid and count on asking; the zones add up" {
	local ex=$FIXTURES/streams/exited.ndjson
	run -0 kp-fmt -f csv <"$ex"
	assert_equal "$(grep -c ',exited,' <<<"$output")" 10
	assert_line --regexp '^1,2026-11-22T13:48:36\.123456Z,1000000,exited,package,,,cc1,,0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0,,,,1200000,4500000,,,4\.5,,,'
	run -0 kp-fmt -f csv -o type,zone,ppid,count,comm,energy_uj -t exited <"$ex"
	assert_line -n 1 'exited,package,4300,120,cc1,4500000'
	# Per interval and zone: process + exited + unattributed + idle kept
	# is the node's energy, in the rows of the CSV.
	kp-fmt -f csv -o seq,type,zone,energy_uj,idle_kept_uj <"$ex" >"$BATS_TEST_TMPDIR/c"
	run -0 awk -F, 'NR > 1 && $2 == "node" { d[$1 "/" $3] += $4 - $5 }
	    NR > 1 && $2 != "node" && $2 != "energy" && $2 != "container" &&
	    $2 != "pod" && $2 != "vm" && $2 != "unit" && $2 != "host" { d[$1 "/" $3] -= $4 }
	    END { for (k in d) print k, d[k] }' "$BATS_TEST_TMPDIR/c"
	assert_equal "$(sort <<<"$output")" "1/dram 0
1/package 0
2/dram 0
2/package 0"
	# Left out, the exited rows break it: the check can fail.
	grep -v ',exited,' "$BATS_TEST_TMPDIR/c" >"$BATS_TEST_TMPDIR/c2"
	run -0 awk -F, 'NR > 1 && $2 == "node" { d += $4 - $5 }
	    NR > 1 && ($2 == "process" || $2 == "unattributed") { d -= $4 }
	    END { print d }' "$BATS_TEST_TMPDIR/c2"
	refute_output 0
}

@test "exited: --summary sums each command's count, CPU and energy once" {
	local ex=$FIXTURES/streams/exited.ndjson
	run -0 kp-fmt -f json --summary -t exited <"$ex"
	assert_equal "$(jq -r '"\(.zone) \(.comm) \(.count) \(.cpu_us) \(.energy_uj)"' <<<"$output" | sort)" \
	    "$(jq -rs 'map(select(.type == "exited")) | group_by([.zone, .comm]) |
	    map("\(.[0].zone) \(.[0].comm) \(map(.count) | add) \(map(.cpu_us) | add) \(map(.energy_uj) | add)") | .[]' "$ex" | sort)"
	assert_line --partial '"comm":"cc1","kind":"container"'
	assert_equal "$(jq -s 'map(select(.zone == "package") | .count) | add' <<<"$output")" 302
	# Over the run: process + exited + unattributed + idle kept = node.
	run -0 kp-fmt -f json --summary <"$ex"
	assert_equal "$(jq -s 'map(select(.zone == "package")) |
	    (map(select(.type == "node") | .energy_uj - .idle_kept_uj) | add) -
	    (map(select(.type == "process" or .type == "exited" or .type == "unattributed") | .energy_uj) | add)' <<<"$output")" 0
	run -0 kp-fmt -f table --summary <"$ex"
	assert_line '   180  4300  cc1   package   3.38 W   6.75 J   2.10 s  0f1e2d3c4b5a'
}

@test "exited: no process series; a series per comm, group and zone keeps the node's sum whole" {
	local ex=$FIXTURES/streams/exited.ndjson
	check_expositions "$ex"
	check_expositions "$ex" --carbon-intensity 300
	expositions "$ex" --min-terminated-energy 0 >"$BATS_TEST_TMPDIR/p"
	run -0 cat "$BATS_TEST_TMPDIR/p"
	# No process series for them, and no pid or ppid on theirs.
	refute_output --regexp 'kepler_process[a-z_]*\{[^}]*comm="cc1"'
	refute_output --regexp '^kp_exited[^ ]*pid='
	# A series per comm and group (and zone), the second interval's
	# carried on at 0 W where it had no exited record.
	assert_line 'kp_exited_cpu_joules_total{comm="cc1",type="container",container_id="0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",pod_id="",vm_id="",unit="",zone="package"} 6.750000'
	assert_line 'kp_exited_cpu_joules_total{comm="as",type="container",container_id="0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",pod_id="",vm_id="",unit="",zone="package"} 1.125000'
	assert_line 'kp_exited_cpu_watts{comm="as",type="container",container_id="0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",pod_id="",vm_id="",unit="",zone="dram"} 0'
	assert_line 'kp_exited_cpu_watts{comm="date",type="regular",container_id="",pod_id="",vm_id="",unit="cron.service",zone="dram"} 0.00375'
	assert_line '# TYPE kp_exited_cpu_joules_total counter'
	# A unit only exited records name ends each interval: its terminated
	# series counts each one's energy, 37.5 mJ and then 50 mJ.
	assert_line 'kp_unit_cpu_joules_total{unit="cron.service",zone="package",state="terminated"} 0.087500'
	# In each exposition: process + exited + unattributed + idle kept = node.
	run -0 node_less_shares "$BATS_TEST_TMPDIR/p"
	assert_output "0.000000
0.000000"
	# Without the exited series, it is not: the check can fail.
	grep -v '^kp_exited' "$BATS_TEST_TMPDIR/p" >"$BATS_TEST_TMPDIR/p2"
	run -0 node_less_shares "$BATS_TEST_TMPDIR/p2"
	refute_line -n 0 "0.000000"
}

@test "exited: a series goes on, 0 W, in intervals without exited records, and is forgotten after 60" {
	cat >"$BATS_TEST_TMPDIR/in.ndjson" <<'EOF'
{"type":"energy","seq":1,"zone":"package","energy_uj":4000000,"watts":4.0}
{"type":"cpu","seq":1,"cpu_us":1000000,"total_cpu_us":1000000,"usage_ratio":1}
{"type":"exited","seq":1,"count":2,"cpu_us":500000,"ppid":1,"comm":"sh"}
{"type":"interval","seq":1,"dt_us":1000000}
{"type":"energy","seq":2,"zone":"package","energy_uj":4000000,"watts":4.0}
{"type":"cpu","seq":2,"cpu_us":1000000,"total_cpu_us":1000000,"usage_ratio":1}
{"type":"interval","seq":2,"dt_us":1000000}
EOF
	run -0 bash -c 'kp-attribute <"$1" >"$1.attr" && expositions "$1.attr" | grep "^kp_exited"' _ "$BATS_TEST_TMPDIR/in.ndjson"
	assert_output - <<'EOF'
kp_exited_cpu_joules_total{comm="sh",type="regular",container_id="",pod_id="",vm_id="",unit="",zone="package"} 2.000000
kp_exited_cpu_watts{comm="sh",type="regular",container_id="",pod_id="",vm_id="",unit="",zone="package"} 2
kp_exited_cpu_joules_total{comm="sh",type="regular",container_id="",pod_id="",vm_id="",unit="",zone="package"} 2.000000
kp_exited_cpu_watts{comm="sh",type="regular",container_id="",pod_id="",vm_id="",unit="",zone="package"} 0
EOF
	# 60 intervals after its last exited record, the series is gone.
	for seq in $(seq 3 62); do
		printf '{"type":"energy","seq":%d,"zone":"package","energy_uj":4000000,"watts":4.0}\n{"type":"cpu","seq":%d,"cpu_us":1000000,"total_cpu_us":1000000,"usage_ratio":1}\n{"type":"interval","seq":%d,"dt_us":1000000}\n' "$seq" "$seq" "$seq"
	done >>"$BATS_TEST_TMPDIR/in.ndjson"
	run -0 bash -c 'kp-attribute <"$1" >"$1.attr" && expositions "$1.attr" | grep -c "^kp_exited_cpu_joules_total"' _ "$BATS_TEST_TMPDIR/in.ndjson"
	assert_output 60
	# A stream that never had one has no such series.
	run -0 kp-fmt -f prometheus <"$LEVELS"
	refute_output --partial kp_exited
}

@test "exited: kp-gen pipelines with exited records, per socket too: promtool, no duplicate series" {
	"$GEN" --intervals 3 --processes 40 --containers 12 --pods 2 \
	    --churn 500 --exited 8 | kp-attribute | kp-aggregate --by comm \
	    >"$BATS_TEST_TMPDIR/ex.ndjson"
	grep -q '"type":"exited","seq":3,"zone"' "$BATS_TEST_TMPDIR/ex.ndjson"
	check_expositions "$BATS_TEST_TMPDIR/ex.ndjson"
	"$GEN" --intervals 3 --processes 10 --exited 3 |
	    jq -c 'if .type == "energy" then (.socket = 0), (.socket = 1) else . end' |
	    kp-attribute | kp-aggregate >"$BATS_TEST_TMPDIR/sock.ndjson"
	check_expositions "$BATS_TEST_TMPDIR/sock.ndjson"
	run -0 kp-fmt -f prometheus <"$BATS_TEST_TMPDIR/sock.ndjson"
	assert_line --regexp '^kp_exited_cpu_joules_total\{comm="[^"]+",.*,zone="package",socket="1"\} [0-9.]+$'
}

@test "exited records without a zone, not attributed yet, are shown as proc records are" {
	printf '%s\n' '{"type":"cpu","seq":1,"cpu_us":300000,"total_cpu_us":600000,"usage_ratio":0.5}' \
	    '{"type":"exited","seq":1,"count":120,"cpu_us":100000,"ppid":7,"comm":"cc1","cgroup":"/","kind":"host"}' \
	    '{"type":"interval","seq":1,"dt_us":1000000}' >"$BATS_TEST_TMPDIR/pre.ndjson"
	run -0 kp-fmt -f table <"$BATS_TEST_TMPDIR/pre.ndjson"
	refute_output --partial cc1
	run -0 kp-fmt -f csv <"$BATS_TEST_TMPDIR/pre.ndjson"
	refute_output --partial cc1
	run -0 kp-fmt -f csv -t exited -o type,comm,count <"$BATS_TEST_TMPDIR/pre.ndjson"
	assert_line -n 1 'exited,cc1,120'
	run -0 kp-fmt -f json <"$BATS_TEST_TMPDIR/pre.ndjson"
	assert_line --partial '"comm":"cc1"'
	run -0 kp-fmt -f prometheus <"$BATS_TEST_TMPDIR/pre.ndjson"
	refute_output --partial exited
}

# proc-cputime's exited records of both sources, a cgroup's without ppid
# or comm, and rapl-read -- CMD's command record, through kp-attribute and
# kp-aggregate.
sources_stream() {
	printf '%s\n' '{"type":"header","seq":0,"version":"1.1","producer":"test"}'
	for k in 1 2; do
		printf '%s\n' "{\"type\":\"energy\",\"seq\":$k,\"zone\":\"package\",\"energy_uj\":1000000,\"watts\":1,\"source\":\"powercap\",\"estimated\":false,\"sockets\":1}" \
		    "{\"type\":\"cpu\",\"seq\":$k,\"cpu_us\":400000,\"total_cpu_us\":1000000,\"usage_ratio\":0.4}" \
		    "{\"type\":\"proc\",\"seq\":$k,\"pid\":100,\"ppid\":1,\"starttime\":1,\"comm\":\"p\",\"cpu_us\":100000,\"state\":\"running\",\"cgroup\":\"/system.slice/a.service\",\"kind\":\"service\",\"unit\":\"a.service\"}" \
		    "{\"type\":\"exited\",\"seq\":$k,\"count\":0,\"cpu_us\":30000,\"ppid\":100,\"comm\":\"make\",\"source\":\"parent\",\"kind\":\"service\",\"cgroup\":\"/system.slice/a.service\",\"unit\":\"a.service\"}" \
		    "{\"type\":\"exited\",\"seq\":$k,\"count\":0,\"cpu_us\":50000,\"source\":\"cgroup\",\"kind\":\"service\",\"cgroup\":\"/system.slice/a.service\",\"unit\":\"a.service\",\"excess_cpu_us\":20000}"
		[ "$k" = 1 ] || echo '{"type":"command","seq":2,"pid":4242,"comm":"make","cpu_us":1830000,"status":0}'
		echo "{\"type\":\"interval\",\"seq\":$k,\"ts\":\"2026-11-22T00:00:0$k.000000Z\",\"dt_us\":1000000}"
	done | kp-attribute | kp-aggregate --level unit
}

@test "exited: a cgroup's record without ppid or comm, and a command record, in every format" {
	sources_stream >"$BATS_TEST_TMPDIR/s.ndjson"
	run -0 kp-fmt -f json <"$BATS_TEST_TMPDIR/s.ndjson"
	assert_line --partial '"source":"cgroup","kind":"service","cgroup":"/system.slice/a.service","unit":"a.service","excess_cpu_us":20000,"cpu_us":50000,"energy_uj":50000'
	assert_line '{"type":"command","seq":2,"pid":4242,"comm":"make","cpu_us":1830000,"status":0}'
	# The unit holds its process and both exited records.
	assert_equal "$(jq -c 'select(.type == "unit") | .energy_uj' <<<"$output")" "180000
180000"
	run -0 kp-fmt -f table <"$BATS_TEST_TMPDIR/s.ndjson"
	assert_line '     0     -  -     package  50.0 mW  50.0 mJ  50.0 ms  -'
	assert_line '     0   100  make  package  30.0 mW  30.0 mJ  30.0 ms  -'
	assert_line 'command  make  pid 4242  status 0  tree cpu 1.83 s'
	assert_equal "$(grep -c '^command' <<<"$output")" 1
	run -0 kp-fmt -f csv -t exited -o seq,ppid,comm,count,energy_uj <"$BATS_TEST_TMPDIR/s.ndjson"
	assert_line -n 1 '1,100,make,0,30000'
	assert_line -n 2 '1,,,0,50000'
	check_expositions "$BATS_TEST_TMPDIR/s.ndjson"
	run -0 expositions "$BATS_TEST_TMPDIR/s.ndjson"
	# A series per comm and group: the cgroup's, without a comm, is comm "".
	assert_line 'kp_exited_cpu_joules_total{comm="make",type="regular",container_id="",pod_id="",vm_id="",unit="a.service",zone="package"} 0.030000'
	assert_line 'kp_exited_cpu_joules_total{comm="",type="regular",container_id="",pod_id="",vm_id="",unit="a.service",zone="package"} 0.050000'
	# The summary: each exited row once, its sums over both intervals,
	# and the command's line.
	run -0 kp-fmt -f table --summary <"$BATS_TEST_TMPDIR/s.ndjson"
	assert_line '     0     -  -     package  50.0 mW   100 mJ   100 ms  -'
	assert_line '     0   100  make  package  30.0 mW  60.0 mJ  60.0 ms  -'
	assert_line 'command  make  pid 4242  status 0  tree cpu 1.83 s'
	run -0 kp-fmt -f json --summary <"$BATS_TEST_TMPDIR/s.ndjson"
	assert_equal "$(jq -c 'select(.type == "exited") | [.comm, .cpu_us]' <<<"$output")" '["make",60000]
[null,100000]'
}
