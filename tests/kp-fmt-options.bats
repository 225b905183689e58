#!/usr/bin/env bats
# kp-fmt's options beside -f: rows, columns, types, units, carbon,
# --summary, --textfile, and the live view of -f top.

load test_helper

setup() {
	STREAMS=$FIXTURES/streams
	TWO=$STREAMS/two-intervals.ndjson
}

@test "-n keeps the rows of highest power in each table" {
	run -0 kp-fmt -f table -n 2 <"$TWO"
	run -0 bash -c 'kp-fmt -f table -n 2 <"$1" | sed "/^interval 2 /,\$d"' _ "$TWO"
	assert_output - <<'EOF2'
interval 1  2026-11-22T13:48:36.123456Z  (1.000 s)
package  35.0 W  (active 14.0 W, idle 21.0 W)  usage 40.0%  source powercap
dram     4.50 W  (active 1.80 W, idle 2.70 W)  usage 40.0%  source powercap

 PID  COMM  ZONE      WATTS  ENERGY     CPU  CONTAINER
  42  burn  package  8.75 W  8.75 J  2.00 s  3f4e5d6c7b8a
4242  gzip  package  2.62 W  2.62 J  600 ms  3f4e5d6c7b8a
unattributed  package  219 mW  219 mJ  cpu 50.0 ms
unattributed  dram     28.1 mW  28.1 mJ  cpu 50.0 ms

CONTAINER     ZONE      WATTS  ENERGY     CPU  PROCS
3f4e5d6c7b8a  package  11.4 W  11.4 J  2.60 s      2
a1b2c3d4e5f6  package  1.75 W  1.75 J  400 ms      1

POD                                   ZONE      WATTS  ENERGY     CPU  PROCS
1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d  package  11.4 W  11.4 J  2.60 s      2
1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d  dram     1.46 W  1.46 J  2.60 s      2

VM             ZONE       WATTS   ENERGY     CPU  PROCS
qemu-1-ubuntu  package   656 mW   656 mJ  150 ms      1
qemu-1-ubuntu  dram     84.4 mW  84.4 mJ  150 ms      1
EOF2
	run -2 --separate-stderr kp-fmt -n 0 </dev/null
	assert_equal "$stderr" "kp-fmt: -n rows must be an integer from 1 to 1000000: '0'"
}

@test "-u shows energy in Wh or kWh, and rejects other units" {
	run -0 kp-fmt -f table -u Wh <"$TWO"
	# 8.75 J is 2.43 mWh; 11.375 J is 3.16 mWh.
	assert_line "  42  burn             package   8.75 W  2.43 mWh  2.00 s  3f4e5d6c7b8a"
	assert_line "3f4e5d6c7b8a  package  11.4 W  3.16 mWh  2.60 s      2"
	run -0 kp-fmt -f table --energy-unit=kWh <"$TWO"
	assert_line "  42  burn             package   8.75 W  2.43e-06 kWh  2.00 s  3f4e5d6c7b8a"
	run -2 --separate-stderr kp-fmt -u cal </dev/null
	assert_equal "$stderr" "kp-fmt: unknown energy unit 'cal' (J, Wh, kWh)"
}

@test "-o chooses and orders the CSV columns, -H drops the header" {
	run -0 kp-fmt -f csv -o type,pid,comm,energy_uj -t process <"$TWO"
	assert_line -n 0 "type,pid,comm,energy_uj"
	assert_line -n 1 "process,42,burn,8750000"
	assert_equal "${#lines[@]}" 17
	run -0 kp-fmt -f csv -H --columns=seq,zone,processes,source -t node,container <"$TWO"
	assert_line -n 0 "1,package,,powercap"
	# A container record has no source: its zone's node record says it.
	assert_line -n 2 "1,package,2,powercap"
	assert_equal "${#lines[@]}" 12
}

@test "--list-columns lists what -o takes; an unknown column lists them too" {
	run -0 kp-fmt --list-columns
	assert_line -n 0 "seq"
	assert_line "co2_g"
	assert_line "usage_ratio"
	local all
	all=$(kp-fmt --list-columns | paste -sd, | sed 's/,/, /g')
	run -2 --separate-stderr kp-fmt -f csv -o seq,joules </dev/null
	assert_equal "$stderr" "kp-fmt: unknown column 'joules' ($all)"
	# Every listed column is accepted.
	run -0 kp-fmt -f csv -o "$(kp-fmt --list-columns | paste -sd,)" <"$TWO"
	# kp-fmt(1) names each of them.
	local page col
	page=$(mandoc -Tascii "$KP_ROOT/man/kp-fmt.1" | col -b)
	for col in $(kp-fmt --list-columns); do
		grep -qw -- "$col" <<< "$page" || fail "kp-fmt(1) names no column $col"
	done
}

@test "csv: -o takes every identity and name field, as proc-cputime finds them" {
	# kp-fmt(1), csv: the names of a container, a pod, a VM and a unit.
	local k=$FIXTURES/streams/kepler-host.ndjson
	run -0 kp-fmt -f csv -t process -o pid,ppid,kind,runtime,container_name,pod_name,pod_namespace,vm_id,vm_name,unit,exe <"$k"
	assert_line -n 0 "pid,ppid,kind,runtime,container_name,pod_name,pod_namespace,vm_id,vm_name,unit,exe"
	assert_line "2101,2050,container,containerd,nginx,web-7d9f8c6b5-x2x7q,shop,,,,/usr/sbin/nginx"
	assert_line "4101,1,vm,,,,,5f1c3c5e-2d1b-4b7e-9a43-6b8e0f3a2c11,vm-alpha,,/usr/bin/qemu-system-x86_64"
	assert_line "812,1,service,,,,,,,ssh.service,/usr/sbin/sshd"
	# Of a group record too: a container's name and runtime.
	run -0 kp-fmt -f csv -t container -o container_id,container_name,runtime <"$k"
	assert_line "7314bba544dc8816f97a77d78cc61b6638f14df2476cb5af70055344810de2f5,nginx,containerd"
}

@test "-t chooses the record types of json" {
	run -0 kp-fmt -f json -t node,interval <"$TWO"
	assert_equal "${#lines[@]}" 6
	assert_equal "$(printf '%s\n' "${lines[@]}" | jq -r .type | sort -u | paste -sd,)" "interval,node"
	# Each line is the input's own.
	assert_equal "${lines[0]}" "$(grep -m 1 '"type":"node"' "$TWO")"
	run -0 kp-fmt -f json --types=pod <"$TWO"
	assert_equal "${#lines[@]}" 4
}

@test "-t takes only the type names of kp-records(5), and lists them otherwise" {
	local list="header, interval, energy, cpu, proc, exited, command, node, process, unattributed, container, pod, vm, unit, group, host"
	local t
	for t in processes Process containers pods; do
		run -2 --separate-stderr kp-fmt -f json -t "node,$t" <"$TWO"
		assert_output ""
	done
	run -2 --separate-stderr kp-fmt -f json -t processes <"$TWO"
	assert_equal "$stderr" "kp-fmt: unknown record type 'processes' ($list)"
	run -2 --separate-stderr kp-fmt -t node,pods </dev/null
	assert_equal "$stderr" "kp-fmt: unknown record type 'pods' ($list)"
	# Every name of the list is taken.
	run -0 kp-fmt -f json -t "${list//, /,}" <"$TWO"
	assert_equal "${#lines[@]}" "$(grep -c . "$TWO")"
}

@test "csv writes proc and cpu records only when -t names them, never headers" {
	run -0 kp-fmt -f csv -o seq,type,pid,cpu_us <"$TWO"
	refute_line --regexp ',(proc|cpu|header),'
	run -0 kp-fmt -f csv -t header,proc,cpu -o seq,type,pid,cpu_us <"$TWO"
	assert_line -n 0 "seq,type,pid,cpu_us"
	assert_line -n 1 "1,cpu,,3200000"
	assert_line -n 2 "1,proc,42,2000000"
	refute_line --partial ",header,"
	assert_equal "${#lines[@]}" 11
}

@test "-o co2_g without --carbon-intensity is empty, not zero" {
	run -0 kp-fmt -f csv -t node -o seq,zone,co2_g <"$TWO"
	assert_line -n 1 "1,package,"
	refute_line --regexp ',0$'
	run -0 kp-fmt -f csv -t node -o seq,zone,co2_g --carbon-intensity 1000 <"$TWO"
	assert_line -n 1 "1,package,0.00972222"
}

@test "--carbon-intensity adds grams of CO2e in every format" {
	# 8750000 uJ = 8.75 J = 8.75 / 3.6e6 kWh; at 400 g/kWh, 0.000972 g.
	run -0 kp-fmt -f csv --carbon-intensity 400 -t process <"$TWO"
	assert_line -n 0 --partial ",total_uj,socket,level,by,group,source,estimated,model,device,co2_g"
	assert_line -n 1 --partial ",8.75,12500000,,,,,powercap,false,,,0.000972222"
	run -0 kp-fmt -f json --carbon-intensity 400 -t process <"$TWO"
	assert_equal "$(jq -s '.[0].co2_g' <<<"$output")" 0.000972222
	assert_equal "$(jq -s '.[0].energy_uj' <<<"$output")" 8750000
	run -0 kp-fmt -f table --carbon-intensity 400 <"$TWO"
	assert_line "  42  burn             package   8.75 W   8.75 J   972 µg  2.00 s  3f4e5d6c7b8a"
	assert_line "package  35.0 W  (active 14.0 W, idle 21.0 W)  usage 40.0%  source powercap  co2 3.89 mg"
	run -0 kp-fmt -f prometheus --carbon-intensity 1000 <"$TWO"
	assert_line "# TYPE kp_node_cpu_co2_grams_total counter"
	# 5076.000123 J at 1000 g/kWh.
	assert_line 'kp_node_cpu_co2_grams_total{zone="package"} 1.4100000341666667'
	assert_line --partial 'kp_container_cpu_co2_grams_total{container_id="a1b2'
	run -0 kp-fmt -f prometheus <"$TWO"
	refute_line --partial "co2"
	run -2 --separate-stderr kp-fmt --carbon-intensity -1 </dev/null
	assert_equal "$stderr" "kp-fmt: --carbon-intensity must be a number from 0 to 1e+06: '-1'"
}

@test "prometheus: rapl-read alone has a CO2 counter beside its joules counter" {
	run -0 kp-fmt -f prometheus --carbon-intensity 400 <"$STREAMS/energy-only.ndjson"
	# 2.460123 J + 2.594880 J at 400 g/kWh.
	assert_line 'kepler_node_cpu_joules_total{zone="package",path=""} 5.055003'
	assert_line 'kp_node_cpu_co2_grams_total{zone="package"} 0.0005616670000000001'
}

@test "--summary: one block over the run, energy summed, mean power" {
	run -0 kp-fmt -f csv --summary -o seq,dt_us,type,zone,pid,state,energy_uj,watts -t process,node <"$TWO"
	assert_output - <<'EOF2'
seq,dt_us,type,zone,pid,state,energy_uj,watts
2,2000042,node,package,,,76000123,37.999263515466176
2,2000042,node,dram,,,9100456,4.550132447218608
2,2000042,process,package,42,running,24636880,12.318181318192318
2,2000042,process,package,4242,terminated,2625000,1.3124724380788004
2,2000042,process,package,777,running,4312400,2.1561547207508642
2,2000042,process,package,1500,running,1937450,0.9687046572021988
2,2000042,process,dram,42,running,2907602,1.4537704708201127
2,2000042,process,dram,4242,terminated,337500,0.16874645632441718
2,2000042,process,dram,777,running,512516,0.25625261869500743
2,2000042,process,dram,1500,running,228133,0.11406410465380228
EOF2
	# The sums are those of the intervals.
	assert_equal "$(jq_sum process energy_uj "$TWO")" \
	    "$(kp-fmt -f json --summary -t process <"$TWO" | jq -s 'map(.energy_uj) | add')"
	run -0 kp-fmt -f table --summary <"$TWO"
	assert_line -n 0 "summary of intervals 1-2  2026-11-22T13:48:37.123498Z  (2.000 s)"
	assert_line "  42  burn             package  12.3 W  24.6 J  5.10 s  3f4e5d6c7b8a"
	run -0 kp-fmt -f json --summary -t node,interval <"$TWO"
	assert_equal "$(jq -sc '.[] | select(.type == "node" and .zone == "package") | [.energy_uj, .active_uj, .idle_uj]' <<<"$output")" "[76000123,34499200,41500923]"
	assert_equal "$(jq -sc '.[-1]' <<<"$output")" '{"type":"interval","seq":2,"ts":"2026-11-22T13:48:37.123498Z","dt_us":2000042}'
}

@test "--summary leaves out records after the last interval record, and says so" {
	local in=$BATS_TEST_TMPDIR/in
	# Interval 2's records again as seq 3, without an interval record.
	{ cat "$TWO"; grep '"seq":2,' "$TWO" | grep -v '"interval"' | sed 's/"seq":2,/"seq":3,/'; } >"$in"
	# The reader reports the stream's end inside an interval: exit 3.
	run -3 --separate-stderr kp-fmt -f table --summary <"$in"
	assert_line -n 0 "summary of intervals 1-2  2026-11-22T13:48:37.123498Z  (2.000 s)"
	assert_line -n 1 --partial "package  38.0 W  (active 17.2 W, idle 20.8 W)"
	assert_equal "$stderr" "kp-fmt: <stdin>:84: the stream ends inside interval 3
kp-fmt: <stdin>: 27 records after the last interval record, an incomplete interval, left out of the summary"
	# No interval record at all: no summary, in any format.
	for f in table json prometheus; do
		run -3 --separate-stderr kp-fmt -f "$f" --summary < <(head -n 3 "$TWO")
		assert_output ""
		assert_equal "$stderr" "kp-fmt: <stdin>:3: the stream ends inside interval 1
kp-fmt: <stdin>: 2 records after the last interval record, an incomplete interval, left out of the summary"
	done
}

# Intervals 1, 2, 2 again and 3 of 1 s, with 1, 2, 2 and 6 J, and $1
# (a header, say) before the replay.
replay_stream() {
	local n=0 seq uj
	for seq in 1 2 2 3; do
		uj=$((seq == 3 ? 6000000 : seq * 1000000))
		n=$((n + 1))
		[ "$n" -ne 3 ] || [ -z "$1" ] || echo "$1"
		echo '{"type":"energy","seq":'$seq',"zone":"package","energy_uj":'$uj',"watts":1.0,"source":"powercap","estimated":false}'
		echo '{"type":"interval","seq":'$seq',"ts":"2026-11-22T13:48:3'$n'.000000Z","dt_us":1000000}'
	done
}

@test "--summary counts a replayed interval once: the reader rejects the replay" {
	local in=$BATS_TEST_TMPDIR/in line
	replay_stream "" >"$in"
	# 9 J over 3 s; with the replay summed it was 11 J over 4 s.
	run -3 --separate-stderr kp-fmt -f table --summary <"$in"
	assert_output - <<'EOF2'
summary of intervals 1-3  2026-11-22T13:48:34.000000Z  (3.000 s)
package  3.00 W  source powercap
EOF2
	assert_equal "$stderr" "kp-fmt: <stdin>:5: energy record of interval 2, which has ended: a replay or a disorder
kp-fmt: <stdin>:6: interval 2 ends after interval 2: a replay or a disorder"
	run -3 --separate-stderr kp-fmt -f json --summary <"$in"
	assert_output - <<'EOF2'
{"type":"energy","seq":3,"zone":"package","energy_uj":9000000,"watts":3.0,"source":"powercap","estimated":false}
{"type":"interval","seq":3,"ts":"2026-11-22T13:48:34.000000Z","dt_us":3000000}
EOF2
	# As a cron log repeats it after a crash: in a new run, after a header.
	line='{"type":"header","seq":0,"version":"1.1","producer":"rapl-read"}'
	replay_stream "$line" >"$in"
	run -3 --separate-stderr kp-fmt -f table --summary <"$in"
	assert_line -n 0 "summary of intervals 1-3  2026-11-22T13:48:34.000000Z  (3.000 s)"
	assert_line -n 1 "package  3.00 W  source powercap"
	assert_equal "$stderr" "kp-fmt: <stdin>:6: energy record of interval 2, which has ended: a replay or a disorder
kp-fmt: <stdin>:7: interval 2 ends after interval 2: a replay or a disorder"
}

@test "prometheus: kp-fmt sums the energy itself when records have no totals" {
	run -0 kp-fmt -f prometheus <"$STREAMS/no-totals.ndjson"
	assert_line 'kepler_node_cpu_joules_total{zone="psys",path=""} 90.000000'
	assert_line 'kepler_node_cpu_active_joules_total{zone="psys",path=""} 30.000000'
	assert_line 'kepler_process_cpu_joules_total{pid="7",comm="job",exe="",type="regular",zone="psys",state="running",container_id="",pod_id="",vm_id=""} 18.750000'
	assert_line 'kp_node_platform_joules_total{source="powercap"} 90.000000'
	assert_line 'kp_node_platform_watts{source="powercap"} 40'
	# psys is not the wall: Kepler's platform gauge leaves it out.
	refute_output --partial kepler_platform_watts
}

@test "prometheus --summary counts the run once, with or without --textfile" {
	local tf=$BATS_TEST_TMPDIR/kp.prom
	run -0 kp-fmt -f prometheus --summary --textfile "$tf" <"$STREAMS/no-totals.ndjson"
	# 50 J + 40 J: the textfile's intervals do not add to the summary.
	assert_line 'kepler_node_cpu_joules_total{zone="psys",path=""} 90.000000'
	assert_line 'kepler_process_cpu_joules_total{pid="7",comm="job",exe="",type="regular",zone="psys",state="running",container_id="",pod_id="",vm_id=""} 18.750000'
	# The textfile's counters are the live ones, as without --summary.
	run -0 grep '^kepler_node_cpu_joules_total' "$tf"
	assert_output 'kepler_node_cpu_joules_total{zone="psys",path=""} 90.000000'
}

@test "prometheus: a counter whose input total is reset never goes backwards" {
	run -0 bash -c 'expositions "$1" | grep "^kepler_container_cpu_joules_total" | cut -d" " -f2' _ "$STREAMS/total-reset.ndjson"
	assert_output - <<'EOF2'
9.000000
11.000000
12.000000
EOF2
}

# Four intervals of one container whose input total_uj is $1 ... $4.
totals_stream() {
	local seq=0 total
	for total in "$@"; do
		seq=$((seq + 1))
		echo '{"type":"container","seq":'$seq',"zone":"package","container_id":"c","processes":1,"cpu_us":1,"energy_uj":1,"total_uj":'$total'}'
		echo '{"type":"interval","seq":'$seq',"dt_us":1000000}'
	done
}

@test "prometheus: an input total that falls to zero never takes a counter back" {
	local in=$BATS_TEST_TMPDIR/in
	totals_stream 0 3000000 0 4000000 >"$in"
	run -0 bash -c 'expositions "$1" | grep "^kepler_container_cpu_joules_total" | cut -d" " -f2' _ "$in"
	assert_output - <<'EOF2'
0.000000
3.000000
3.000000
7.000000
EOF2
	# A negative total is no record at all: the reader rejects its line.
	totals_stream -5 3000000 -7 4000000 >"$in"
	run -3 --separate-stderr kp-fmt -f prometheus <"$in"
	assert_equal "$stderr" 'kp-fmt: <stdin>:1: "total_uj" is not a non-negative integer
kp-fmt: <stdin>:5: "total_uj" is not a non-negative integer'
	# The last interval's exposition: 3 J kept, 4 J added to none lost.
	assert_equal "$(grep '^kepler_container_cpu_joules_total' <<<"$output" | cut -d' ' -f2)" "4.000000"
}

@test "a counter or sum past its limit is held there, reported, exit 3" {
	local max=9223372036854775807 big=1152921504606846976 in=$BATS_TEST_TMPDIR/in
	# energy_uj is at most 2^60 (kp-records(5)): the 8th passes 2^63-1.
	for seq in $(seq 9); do
		echo '{"type":"energy","seq":'$seq',"zone":"package","energy_uj":'$big'}'
		echo '{"type":"interval","seq":'$seq',"dt_us":1000000}'
	done >"$in"
	run -3 --separate-stderr kp-fmt -f prometheus <"$in"
	assert_equal "$(grep -c '^kepler_node_cpu_joules_total{zone="package",path=""} 9223372036854.775807$' <<<"$output")" 1
	assert_equal "$stderr" 'kp-fmt: <stdin>:15: kepler_node_cpu_joules_total{zone="package",path=""} passes 9223372036854.775807 J, held there'
	# A summary's sum of energy_uj is held at 2^60, so that every stage
	# reads the record it writes.
	head -n 4 "$in" >"$in.2"
	mv "$in.2" "$in"
	run -3 --separate-stderr kp-fmt -f json --summary -t energy <"$in"
	assert_output --partial "\"energy_uj\":$big,"
	assert_equal "$stderr" "kp-fmt: <stdin>:3: --summary: the sum of energy_uj passes $big, held there"
	sed 's/"dt_us":1000000/"dt_us":'$max'/' "$in" >"$in.dt"
	run -3 --separate-stderr kp-fmt -f json --summary -t interval <"$in.dt"
	assert_output '{"type":"interval","seq":2,"dt_us":'$max'}'
	assert_equal "$stderr" "kp-fmt: <stdin>:4: --summary: the sum of dt_us passes $max, held there"
	# A total reset from the limit: the counter stays there, never backwards.
	{
		echo '{"type":"node","seq":1,"zone":"package","energy_uj":1,"total_uj":'$max'}'
		echo '{"type":"interval","seq":1,"dt_us":1000000}'
		echo '{"type":"node","seq":2,"zone":"package","energy_uj":5,"total_uj":5}'
		echo '{"type":"interval","seq":2,"dt_us":1000000}'
	} >"$in"
	run -3 --separate-stderr bash -c 'expositions "$1" >"$1.out"; s=$?; grep "^kepler_node_cpu_joules_total" "$1.out" | cut -d" " -f2; exit $s' _ "$in"
	assert_output - <<'EOF2'
9223372036854.775807
9223372036854.775807
EOF2
	assert_equal "$stderr" 'kp-fmt: <stdin>:3: kepler_node_cpu_joules_total{zone="package",path=""} passes 9223372036854.775807 J, held there'
}

# Peak resident kilobytes of kp-fmt $2 over $1 intervals of process churn.
churn_peak_kb() {
	local n=$1
	shift
	"$KP_ROOT/scripts/kp-gen" --seed 3 --intervals "$n" --processes 50 --churn 1000 |
	    kp-attribute | /usr/bin/time -o "$BATS_TEST_TMPDIR/kb" -f %M kp-fmt "$@" >/dev/null
	cat "$BATS_TEST_TMPDIR/kb"
}

@test "prometheus and --textfile forget ended processes: memory stays flat over churn" {
	[ "${KP_SANITIZE:-}" != 1 ] || skip "sanitizer build: ASan's memory is not kp-fmt's"
	local short long
	short=$(churn_peak_kb 200 -f prometheus)
	long=$(churn_peak_kb 2000 -f prometheus --textfile "$BATS_TEST_TMPDIR/kp.prom")
	# Ten times the intervals, and every process replaced in each: a
	# series kept per process ever seen grew eightfold (11 MB to 88 MB).
	((long < short * 2)) || fail "peak ${short} kB after 200 intervals, ${long} kB after 2000"
	# A process's counter is still there while it runs.
	run -0 grep -c '^kepler_process_cpu_joules_total' "$BATS_TEST_TMPDIR/kp.prom"
	((output > 10))
}

# Eight intervals, with 1 J for the node and 1 J for pid 7 in those listed
# in $1 only; kp-fmt keeps both counters itself.
forget_stream() {
	local seq
	for seq in 1 2 3 4 5 6 7 8; do
		case " $1 " in *" $seq "*)
			echo '{"type":"process","seq":'$seq',"zone":"package","pid":7,"starttime":1,"comm":"p","cpu_us":1,"energy_uj":1000000}'
			echo '{"type":"node","seq":'$seq',"zone":"package","energy_uj":1000000}' ;;
		esac
		echo '{"type":"interval","seq":'$seq',"dt_us":1000000}'
	done >"$BATS_TEST_TMPDIR/forget"
}

# The last sample of family $1 that kp-fmt -f prometheus writes after
# an interval, in the last interval listed (an interval without records
# has none).
forget_sample() {
	expositions "$BATS_TEST_TMPDIR/forget" | grep "^$1" |
	    tail -n 1 | cut -d' ' -f2
}

@test "prometheus: a process series is forgotten after 5 intervals without a sample, node never" {
	# Missing from 4 intervals (2 to 5): kept, and counted on.
	forget_stream "1 6"
	assert_equal "$(forget_sample kepler_process_cpu_joules_total)" 2.000000
	assert_equal "$(forget_sample kepler_node_cpu_joules_total)" 2.000000
	# Missing from 5 (2 to 6): the process's forgotten, counted again
	# from zero; the node's kept.
	forget_stream "1 7"
	assert_equal "$(forget_sample kepler_process_cpu_joules_total)" 1.000000
	assert_equal "$(forget_sample kepler_node_cpu_joules_total)" 2.000000
}

@test "prometheus: the platform families only from the psys zone" {
	run -0 kp-fmt -f prometheus <"$TWO"
	refute_line --partial "kp_node_platform"
}

@test "--textfile replaces the file atomically after each interval" {
	local tf=$BATS_TEST_TMPDIR/tf/kp.prom
	mkdir "$BATS_TEST_TMPDIR/tf"
	run -0 --separate-stderr kp-fmt --textfile "$tf" <"$TWO"
	# Nothing on stdout without -f, nothing left beside the file.
	assert_output ""
	assert_equal "$(ls "$BATS_TEST_TMPDIR/tf")" "kp.prom"
	assert_equal "$(stat -c %a "$tf")" 644
	# The file holds the last interval, which stdout shows the same.
	kp-fmt -f prometheus <"$TWO" | awk 'BEGIN { RS = ""; ORS = "\n" } { last = $0 } END { print last }' >"$BATS_TEST_TMPDIR/want"
	cmp "$BATS_TEST_TMPDIR/want" "$tf"
	# With -f as well, stdout gets the format and the counters move once.
	run -0 kp-fmt -f prometheus --textfile "$tf" <"$STREAMS/no-totals.ndjson"
	assert_line 'kepler_node_cpu_joules_total{zone="psys",path=""} 90.000000'
	run -0 grep '^kepler_node_cpu_joules_total' "$tf"
	assert_output 'kepler_node_cpu_joules_total{zone="psys",path=""} 90.000000'
}

@test "--textfile is written while the stream goes on" {
	local tf=$BATS_TEST_TMPDIR/kp.prom n i
	n=$(grep -n '"type":"interval"' "$TWO" | head -n 1 | cut -d: -f1)
	{ head -n "$n" "$TWO"; sleep 3; tail -n "+$((n + 1))" "$TWO"; } |
	    kp-fmt -f csv --textfile "$tf" >/dev/null 3>&- &
	for i in $(seq 30); do
		[ -s "$tf" ] && break
		sleep 0.1
	done
	run -0 grep '^kepler_node_cpu_joules_total{zone="package",path=""}' "$tf"
	assert_output 'kepler_node_cpu_joules_total{zone="package",path=""} 5035.000000'
	wait
	run -0 grep '^kepler_node_cpu_joules_total{zone="package",path=""}' "$tf"
	assert_output 'kepler_node_cpu_joules_total{zone="package",path=""} 5076.000123'
}

@test "--textfile in a directory that cannot be written fails at the start" {
	run -1 --separate-stderr kp-fmt --textfile "$BATS_TEST_TMPDIR/none/kp.prom" </dev/null
	assert_equal "$stderr" "kp-fmt: textfile '$BATS_TEST_TMPDIR/none/kp.prom': cannot create a file in its directory: No such file or directory"
	mkdir -m 755 "$BATS_TEST_TMPDIR/ro"
	chmod 755 "$BATS_TEST_TMPDIR"
	# Before any input: the stream is never read.
	run -1 --separate-stderr as_nobody kp-fmt --textfile "$BATS_TEST_TMPDIR/ro/kp.prom" < <(sleep 30)
	assert_equal "$stderr" "kp-fmt: textfile '$BATS_TEST_TMPDIR/ro/kp.prom': cannot create a file in its directory: Permission denied"
}

# kp-fmt(1), --textfile: its path is checked as a state file's is.
@test "--textfile refuses a FIFO or a device in its place, as --state does, and leaves it" {
	local node
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	mknod "$BATS_TEST_TMPDIR/dev" c 1 3
	for node in fifo dev; do
		run -1 --separate-stderr kp-fmt --textfile "$BATS_TEST_TMPDIR/$node" <"$TWO"
		assert_equal "$stderr" "kp-fmt: $BATS_TEST_TMPDIR/$node: not a regular file"
		run -1 --separate-stderr kp-aggregate --state "$BATS_TEST_TMPDIR/$node" </dev/null
		assert_equal "$stderr" "kp-aggregate: $BATS_TEST_TMPDIR/$node: not a regular file"
	done
	assert_equal "$(stat -c %F "$BATS_TEST_TMPDIR/fifo")" "fifo"
	assert_equal "$(stat -c '%F %t,%T' "$BATS_TEST_TMPDIR/dev")" "character special file 1,3"
}

@test "--textfile does not follow a symbolic link in its place: it says so and replaces the link" {
	local tf=$BATS_TEST_TMPDIR/kp.prom
	ln -s "$BATS_TEST_TMPDIR/target" "$tf"
	run -0 --separate-stderr kp-fmt --textfile "$tf" <"$TWO"
	assert_equal "$stderr" "kp-fmt: $tf: a symbolic link, not followed; replacing it with the exposition"
	[ ! -e "$BATS_TEST_TMPDIR/target" ]
	[ -f "$tf" ] && [ ! -L "$tf" ]
	run -0 grep -c '^kepler_node_cpu_joules_total' "$tf"
}

@test "--textfile removes the temporaries of runs killed before their rename, and only those" {
	local dir=$BATS_TEST_TMPDIR/tf shim=$BATS_TEST_TMPDIR/state-fault.so left
	mkdir "$dir"
	cc -shared -fPIC -o "$shim" "$KP_ROOT/tests/state-fault.c" -ldl
	# kill -9 as the first exposition is renamed into place.
	run -137 env ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 \
	    LD_PRELOAD="$shim" KP_FAULT=kill-at-rename kp-fmt --textfile "$dir/kp.prom" <"$TWO"
	left=$(cd "$dir" && ls -A)
	assert_regex "$left" '^\.kp\.prom\.kp-fmt\.[A-Za-z0-9]{6}$'
	grep -q '^kepler_node_cpu_joules_total' "$dir/$left"
	# That run ended two minutes ago; another is writing one now; beside
	# them, a state file's temporary and other files of the directory.
	touch -d '-2 minutes' "$dir/$left"
	: > "$dir/.kp.prom.kp-fmt.Wr1t3n"
	touch -d '-2 minutes' "$dir/.kp.prom.abcdef" "$dir/kp.prom.kp-fmt.abcdef" "$dir/other.prom"
	run -0 --separate-stderr kp-fmt --textfile "$dir/kp.prom" <"$TWO"
	run -0 bash -c 'cd "$1" && ls -A' _ "$dir"
	assert_output - <<'EOF2'
.kp.prom.abcdef
.kp.prom.kp-fmt.Wr1t3n
kp.prom
kp.prom.kp-fmt.abcdef
other.prom
EOF2
}

@test "top falls back to table when stdout is not a terminal" {
	diff <(kp-fmt -f top <"$TWO") <(kp-fmt -f table <"$TWO")
}

@test "top draws each interval on the alternate screen and gives it back" {
	local out=$BATS_TEST_TMPDIR/out
	script -qec "stty rows 12 cols 60; kp-fmt -f top <'$TWO'" /dev/null </dev/null >"$out"
	# Enter the alternate screen and hide the cursor once; leave at the end.
	assert_equal "$(grep -c $'\e\[?1049h' "$out")" 1
	assert_equal "$(tail -c 20 "$out" | grep -c $'\e\[?25h\e\[?1049l')" 1
	# Each interval starts at home; its lines are cut to the width.
	assert_equal "$(grep -o $'\e\[H' "$out" | wc -l)" 2
	run -0 bash -c 'sed "s/\x1b\[H/\n/g; s/\x1b\[[0-9;?]*[A-Za-z]//g; s/\r//" "$1"' _ "$out"
	assert_line "interval 2  2026-11-22T13:48:37.123498Z  (1.000 s)"
	# Its tables narrowed to fit, names cut with an ellipsis (kp-fmt(1), top).
	assert_line " PID  COMM      ZONE       WATTS   ENERGY     CPU  CONTAINER"
	assert_line "1500  qemu-sy…  package   656 mW   656 mJ  150 ms  -"
	assert_line "kp-fmt top  60x12  q quits"
	# Characters, not bytes: an ellipsis is three bytes of UTF-8.
	run -0 env LC_ALL=C.UTF-8 bash -c 'sed "s/\x1b\[[0-9;?]*[A-Za-z]/\n/g; s/\r//" "$1" |
	    while IFS= read -r l; do [ "${#l}" -le 60 ] || echo "$l"; done' _ "$out"
	assert_output ""
}

@test "top: q quits at once, though the stream goes on, and gives the terminal back" {
	# The stream stays open after its two intervals, as a running
	# producer's does: only q can end kp-fmt here.
	run -0 python3 "$KP_ROOT/tests/pty.py" --size 24x80 --stdin "$TWO" \
	    --wait "interval 2" --keys q -- kp-fmt -f top
	assert_line "status 0"
	# The alternate screen left and the cursor shown again.
	assert_output --partial $'\e[?25h\e[?1049l'
	run -0 bash -c 'sed "s/\x1b\[H/\n/g; s/\x1b\[[0-9;?]*[A-Za-z]//g; s/\r//" <<< "$1"' _ "$output"
	assert_line "kp-fmt top  80x24  q quits"
}

@test "top: at 80 columns a long name is cut with an ellipsis and CONTAINER stays on the screen" {
	# A kworker's name as /proc shows it, with its workqueue.
	local kw=$BATS_TEST_TMPDIR/kworker.ndjson
	sed 's|"comm":"qemu-system-x86"|"comm":"kworker/u16:3-events_unbound"|' "$TWO" > "$kw"
	run -0 python3 "$KP_ROOT/tests/pty.py" --size 40x80 --stdin "$kw" \
	    --wait "interval 2" --keys q -- kp-fmt -f top
	run -0 bash -c 'sed "s/\x1b\[H/\n/g; s/\x1b\[[0-9;?]*[A-Za-z]//g; s/\r//" <<< "$1"' _ "$output"
	assert_line " PID  COMM                         ZONE      WATTS  ENERGY     CPU  CONTAINER"
	assert_line "1500  kworker/u16:3-events_unbou…  package  1.28 W  1.28 J  250 ms  -"
	# -f table, for a pipe, keeps the whole name.
	run -0 kp-fmt -f table < "$kw"
	assert_line --partial "1500  kworker/u16:3-events_unbound  package"
}

@test "top --summary writes the summary as table, on the normal screen" {
	local out=$BATS_TEST_TMPDIR/out
	script -qec "stty rows 40 cols 100; kp-fmt -f top --summary <'$TWO'" /dev/null </dev/null >"$out"
	assert_equal "$(grep -c $'\e\[?1049h' "$out")" 0
	run -0 bash -c 'tr -d "\r" <"$1"' _ "$out"
	assert_line -n 0 "summary of intervals 1-2  2026-11-22T13:48:37.123498Z  (2.000 s)"
	assert_line "  42  burn             package  12.3 W  24.6 J  5.10 s  3f4e5d6c7b8a"
}

@test "top follows the terminal size; a second SIGINT ends it, the terminal given back" {
	local out=$BATS_TEST_TMPDIR/out
	# kp-fmt in the foreground, as Ctrl-C finds it: a background job of
	# a script ignores SIGINT, and so does kp-fmt there.  Its input stays
	# open: the first SIGINT (at 1 s) leaves it reading for its producer
	# to end the stream (kp-fmt(1), SIGNALS), the second (at 2 s) ends it at once.
	timeout 10 script -qec "stty rows 40 cols 100; bash -c 'timeout --foreground --preserve-status -s INT 2 timeout --foreground --preserve-status -s INT 1 kp-fmt -f top < <(cat \"\$1\"; exec sleep 10 </dev/null 2>/dev/null); echo status=\$?' _ '$TWO'" /dev/null </dev/null >"$out"
	# The status line says the size it used.
	run -0 bash -c 'sed "s/\x1b\[H/\n/g; s/\x1b\[[0-9;?]*[A-Za-z]//g; s/\r//" "$1"' _ "$out"
	assert_line "kp-fmt top  100x40  q quits"
	# Killed by SIGINT (128 + 2), the terminal given back just before.
	assert_line --regexp 'status=130$'
	assert_equal "$(tail -c 40 "$out" | grep -c $'\e\[?25h\e\[?1049lstatus=130')" 1
}

@test "top after one SIGINT draws to the end of its input and ends well" {
	local out=$BATS_TEST_TMPDIR/out
	# The producer, signalled too, ends the stream 1 s later.
	timeout 10 script -qec "stty rows 40 cols 100; bash -c 'timeout --foreground --preserve-status -s INT 1 kp-fmt -f top < <(head -n 4 \"\$1\"; sleep 2; tail -n +5 \"\$1\"); echo status=\$?' _ '$TWO'" /dev/null </dev/null >"$out"
	run -0 bash -c 'sed "s/\x1b\[H/\n/g; s/\x1b\[[0-9;?]*[A-Za-z]//g; s/\r//" "$1"' _ "$out"
	assert_line --regexp '^interval 2 '
	assert_line --regexp 'status=0$'
	assert_equal "$(tail -c 40 "$out" | grep -c $'\e\[?25h\e\[?1049lstatus=0')" 1
}

@test "top redraws at once at the new size when the terminal is resized" {
	local out=$BATS_TEST_TMPDIR/out
	script -qec "stty rows 40 cols 100; { cat '$TWO'; sleep 20; } | kp-fmt -f top & sleep 1; stty rows 10 cols 50; kill -WINCH \$!; sleep 1; kill -TERM \$!; wait" /dev/null </dev/null >"$out" || true
	run -0 bash -c 'sed "s/\x1b\[H/\n/g; s/\x1b\[[0-9;?]*[A-Za-z]//g; s/\r//" "$1"' _ "$out"
	# Both intervals at the first size, then the second again at the new.
	assert_line "kp-fmt top  100x40  q quits"
	assert_line "kp-fmt top  50x10  q quits"
	sed -n '/50x10/,$p' <<<"$output" | grep -q '^interval 2 ' ||
	    fail "interval 2 is not drawn again after the resize"
	run -0 bash -c 'sed "s/\x1b\[H/\n/g; s/\x1b\[[0-9;?]*[A-Za-z]//g; s/\r//" "$1" | sed -n "/50x10/,\$p" | awk "length > 50"' _ "$out"
	assert_output ""
	assert_equal "$(tail -c 20 "$out" | grep -c $'\e\[?25h\e\[?1049l')" 1
}

@test "--summary after rapl-read -- command: the energy of that one command" {
	local s=$BATS_TEST_TMPDIR/cmd.ndjson
	rapl-read --source model -i 100ms -- sh -c 'sleep 0.35' >"$s"
	# Intervals until the command ends: the last one is cut short.
	[ "$(grep -c '"type":"interval"' "$s")" -ge 3 ]
	assert_equal "$(kp-fmt -f json --summary -t energy,interval <"$s" | jq -sc '[.[0].energy_uj, .[1].dt_us]')" \
	    "$(jq -sc '[(map(select(.type == "energy") | .energy_uj) | add), (map(select(.type == "interval") | .dt_us) | add)]' "$s")"
	run -0 kp-fmt -f table --summary <"$s"
	assert_line -n 0 --regexp '^summary of intervals 1-[0-9]+  .*  \(0\.[0-9]{3} s\)$'
	# The row the model chose for this host's processor, as its records say.
	local row
	row=$(jq -r 'select(.type == "energy") | .model' "$s" | sort -u)
	assert_line -n 1 --regexp "^platform  [0-9.]+ W  source model, estimated by $row\$"
}

@test "--textfile: each interval is a new file renamed over the last" {
	local tf=$BATS_TEST_TMPDIR/kp.prom n i ino
	n=$(grep -n '"type":"interval"' "$TWO" | head -n 1 | cut -d: -f1)
	{ head -n "$n" "$TWO"; sleep 2; tail -n "+$((n + 1))" "$TWO"; } |
	    kp-fmt --textfile "$tf" 3>&- &
	for i in $(seq 30); do
		[ -s "$tf" ] && break
		sleep 0.1
	done
	ino=$(stat -c %i "$tf")
	wait
	# A new inode: written beside and renamed, never rewritten in place.
	[ "$(stat -c %i "$tf")" != "$ino" ]
	assert_equal "$(ls "$BATS_TEST_TMPDIR" | grep -c '^kp\.prom')" 1
}
