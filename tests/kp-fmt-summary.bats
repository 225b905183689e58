#!/usr/bin/env bats
# kp-fmt --summary holds what is alive, not the run: workloads that ended
# beyond --summary-rows per bucket fold into an "other" row; every row is
# exact and the rows and the other row sum to the bucket's total.

load test_helper

# An attributed stream with churn: processes end with terminated records.
churn_stream() {
	"$KP_ROOT/scripts/kp-gen" --seed 3 --intervals 40 --processes 20 \
	    --churn "$1" | kp-attribute > "$BATS_TEST_TMPDIR/in"
}

# Each process row of the summary, against its energy summed by jq over
# the whole stream: "pid starttime zone summary-energy stream-energy".
rows_against_stream() {
	jq -r 'select(.type == "process" and .pid != null) |
	    "\(.pid) \(.starttime) \(.zone) \(.energy_uj)"' "$1" |
	while read -r pid start zone uj; do
		echo "$pid $start $zone $uj $(jq -s "[.[] | select(.type == \"process\"
		    and .pid == $pid and .starttime == $start and
		    .zone == \"$zone\") | .energy_uj] | add" "$BATS_TEST_TMPDIR/in")"
	done
}

# The sum of energy_uj of the records of type $1 in zone $2 of file $3.
zone_sum() {
	jq -s "[.[] | select(.type == \"$1\" and .zone == \"$2\") |
	    .energy_uj] | add" "$3"
}

@test "--summary-rows: the rest fold into an other row; rows are exact" {
	churn_stream 200
	run -0 kp-fmt -f json --summary --summary-rows 3 < "$BATS_TEST_TMPDIR/in"
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/sum"
	# 3 rows and an other row per zone.
	run -0 jq -r 'select(.type == "process") | "\(.zone) \(.comm)"' \
	    "$BATS_TEST_TMPDIR/sum"
	assert_equal "$(grep -c '^package ' <<< "$output")" 4
	assert_equal "$(grep -c '^dram ' <<< "$output")" 4
	assert_line 'package (other)'
	assert_line 'dram (other)'
	# Every row is its process's exact sum over the stream.
	run -0 rows_against_stream "$BATS_TEST_TMPDIR/sum"
	assert_equal "${#lines[@]}" 6
	awk '$4 != $5 { print; bad = 1 } END { exit bad }' <<< "$output"
	# Rows and other together are the total, and other says how many.
	for z in package dram; do
		assert_equal "$(zone_sum process $z "$BATS_TEST_TMPDIR/sum")" \
		    "$(zone_sum process $z "$BATS_TEST_TMPDIR/in")"
	done
	n=$(jq -s '[.[] | select(.type == "process" and .zone == "package")] |
	    unique_by(.pid, .starttime) | length' "$BATS_TEST_TMPDIR/in")
	run -0 jq 'select(.comm == "(other)" and .zone == "package") | .folded' \
	    "$BATS_TEST_TMPDIR/sum"
	assert_output "$((n - 3))"
}

@test "--summary-rows: workloads that never end are cut at the end alike" {
	churn_stream 0
	run -0 kp-fmt -f json --summary --summary-rows 5 < "$BATS_TEST_TMPDIR/in"
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/sum"
	run -0 rows_against_stream "$BATS_TEST_TMPDIR/sum"
	assert_equal "${#lines[@]}" 10
	awk '$4 != $5 { print; bad = 1 } END { exit bad }' <<< "$output"
	assert_equal "$(zone_sum process package "$BATS_TEST_TMPDIR/sum")" \
	    "$(zone_sum process package "$BATS_TEST_TMPDIR/in")"
	# Node records are few: never folded.
	assert_equal "$(jq -c 'select(.type == "node") | .zone' \
	    "$BATS_TEST_TMPDIR/sum" | sort | tr '\n' ' ')" '"dram" "package" '
}

@test "--summary-rows: a group's other row is named in its id field" {
	churn_stream 200
	kp-aggregate < "$BATS_TEST_TMPDIR/in" > "$BATS_TEST_TMPDIR/groups"
	run -0 kp-fmt -f json --summary --summary-rows 1 \
	    < "$BATS_TEST_TMPDIR/groups"
	assert_line --regexp '^\{"type":"container","seq":40,"zone":"package","container_id":"\(other\)",.*"folded":[0-9]+\}$'
	assert_line --regexp '^\{"type":"pod","seq":40,"zone":"dram","pod_id":"\(other\)",.*"folded":[0-9]+\}$'
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/sum"
	for t in container pod vm unit; do
		for z in package dram; do
			assert_equal "$(zone_sum $t $z "$BATS_TEST_TMPDIR/sum")" \
			    "$(zone_sum $t $z "$BATS_TEST_TMPDIR/groups")"
		done
	done
	# kp-aggregate --by: the field a group is by names its other row.
	kp-aggregate --by comm < "$BATS_TEST_TMPDIR/in" > "$BATS_TEST_TMPDIR/groups"
	run -0 kp-fmt -f json --summary --summary-rows 1 \
	    < "$BATS_TEST_TMPDIR/groups"
	assert_line --regexp '^\{"type":"group",.*"comm":"\(other\)",.*"folded":[0-9]+\}$'
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/sum"
	assert_equal "$(zone_sum group package "$BATS_TEST_TMPDIR/sum")" \
	    "$(zone_sum group package "$BATS_TEST_TMPDIR/groups")"
}

# A stream of two intervals of 12000 processes each, none seen twice and
# none terminated; with $1, each interval's cpu record says dense.
two_crowds() {
	awk -v dense="$1" 'BEGIN {
		print "{\"type\":\"header\",\"seq\":0,\"version\":\"1.1\",\"producer\":\"test\"}"
		for (k = 1; k <= 2; k++) {
			printf "{\"type\":\"cpu\",\"seq\":%d,\"cpu_us\":1,\"total_cpu_us\":2,\"usage_ratio\":0.5%s}\n", k, dense
			for (i = 0; i < 12000; i++)
				printf "{\"type\":\"proc\",\"seq\":%d,\"pid\":%d,\"starttime\":%d,\"comm\":\"p\",\"cpu_us\":1,\"state\":\"running\"}\n", k, i + 2, k
			printf "{\"type\":\"interval\",\"seq\":%d,\"dt_us\":1000000}\n", k
		}
	}'
}

@test "--summary holds at most 20000 workloads that never end, and says so" {
	two_crowds "" > "$BATS_TEST_TMPDIR/in"
	run -0 --separate-stderr kp-fmt -f json --summary < "$BATS_TEST_TMPDIR/in"
	# Said when the 20001st comes, in interval 2.
	assert_equal "$stderr" "kp-fmt: --summary: 20001 workloads without an end, more than 20000, the least recently seen folded into other rows; one that comes back starts a new row"
	# The total is whole.
	assert_equal "$(jq -s '[.[] | select(.type == "proc") | .cpu_us] | add' <<< "$output")" 24000
	# In a dense stream, a process without a record has ended: none held.
	two_crowds ',"dense":true' > "$BATS_TEST_TMPDIR/in"
	run -0 --separate-stderr kp-fmt -f json --summary < "$BATS_TEST_TMPDIR/in"
	assert_equal "$stderr" ""
	assert_equal "$(jq -s '[.[] | select(.type == "proc") | .cpu_us] | add' <<< "$output")" 24000
	# Downstream of kp-attribute, its node records say so.
	sed 's/{"type":"cpu","seq":\([0-9]*\),/{"type":"node","seq":\1,"zone":"package","energy_uj":0,/' \
	    "$BATS_TEST_TMPDIR/in" > "$BATS_TEST_TMPDIR/node"
	run -0 --separate-stderr kp-fmt -f json --summary < "$BATS_TEST_TMPDIR/node"
	assert_equal "$stderr" ""
}

# A sparse stream: interval 1 has 10001 processes, pid 2 among them with
# 5000 us and 5 J; interval 2, 10000 others, then pid 2 again with as
# much; its state there is $1, running if not given.
crowd_then_one() {
	awk -v state="${1:-running}" 'BEGIN {
		f = "{\"type\":\"process\",\"seq\":%d,\"zone\":\"package\",\"pid\":%d,\"starttime\":1,\"comm\":\"p\",\"cpu_us\":%d,\"energy_uj\":%d,\"total_uj\":%d,\"watts\":1,\"state\":\"%s\"}\n"
		for (i = 2; i <= 10002; i++)
			printf f, 1, i, i == 2 ? 5000 : 1, i == 2 ? 5000000 : 1000,
			    i == 2 ? 5000000 : 1000, "running"
		print "{\"type\":\"interval\",\"seq\":1,\"dt_us\":1000000}"
		for (i = 0; i < 10000; i++)
			printf f, 2, 20000 + i, 1, 1000, 1000, "running"
		printf f, 2, 2, 5000, 5000000, 10000000, state
		print "{\"type\":\"interval\",\"seq\":2,\"dt_us\":1000000}"
	}'
}

@test "--summary's bound on workloads that never end holds while an interval is summed" {
	crowd_then_one > "$BATS_TEST_TMPDIR/in"
	run -0 --separate-stderr kp-fmt -f json --summary < "$BATS_TEST_TMPDIR/in"
	# Cut at the 20001st, in interval 2: interval 1's are folded then,
	# pid 2 among them, whose record after that starts a new row.
	assert_equal "$stderr" "kp-fmt: --summary: 20001 workloads without an end, more than 20000, the least recently seen folded into other rows; one that comes back starts a new row"
	assert_equal "$(jq -c 'select(.type == "process" and .pid == 2) | .cpu_us' <<< "$output")" 5000
	# The total is whole.
	assert_equal "$(jq -s '[.[] | select(.type == "process") | .cpu_us] | add' <<< "$output")" 30000
}

@test "--summary-rows takes 1 to 1000000" {
	run -2 --separate-stderr kp-fmt --summary --summary-rows 0 </dev/null
	assert_equal "$stderr" "kp-fmt: --summary-rows must be an integer from 1 to 1000000: '0'"
	run -2 --separate-stderr kp-fmt --summary --summary-rows x </dev/null
	assert_equal "$stderr" "kp-fmt: --summary-rows must be an integer from 1 to 1000000: 'x'"
}

@test "--summary-rows: exited records fold into an other row without a ppid, its count summed" {
	"$KP_ROOT/scripts/kp-gen" --seed 4 --intervals 20 --processes 20 \
	    --churn 100 --exited 5 | kp-attribute > "$BATS_TEST_TMPDIR/in"
	run -0 kp-fmt -f json --summary --summary-rows 2 < "$BATS_TEST_TMPDIR/in"
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/sum"
	# 2 rows and an other row per zone, which reads back as a record.
	assert_equal "$(jq -c 'select(.type == "exited" and .zone == "package") | [.comm, .ppid]' \
	    "$BATS_TEST_TMPDIR/sum" | tail -n 1)" '["(other)",null]'
	assert_equal "$(jq -s '[.[] | select(.type == "exited" and .zone == "dram")] | length' \
	    "$BATS_TEST_TMPDIR/sum")" 3
	# Rows and other together are the stream's energy, count and CPU time.
	for f in energy_uj count cpu_us; do
		assert_equal "$(jq -s "[.[] | select(.type == \"exited\" and .zone == \"package\") | .$f] | add" "$BATS_TEST_TMPDIR/sum")" \
		    "$(jq -s "[.[] | select(.type == \"exited\" and .zone == \"package\") | .$f] | add" "$BATS_TEST_TMPDIR/in")"
	done
	run -0 kp-fmt -f table --summary --summary-rows 2 < "$BATS_TEST_TMPDIR/in"
	assert_line --regexp '^ +[0-9]+ +-  \(other\)  package '
}

@test "--summary keeps each workload's last value of a field, short or long, as it changes between the two (kp-fmt(1), Memory)" {
	local s=0 c
	{
		echo '{"type":"header","seq":0,"version":"1.0","producer":"test"}'
		for c in a a-much-longer-command-name-than-24 b; do
			s=$((s + 1))
			echo '{"type":"process","seq":'$s',"zone":"package","pid":7,"starttime":1,"comm":"'$c'","state":"running","cpu_us":5,"energy_uj":100}'
			echo '{"type":"process","seq":'$s',"zone":"package","pid":8,"starttime":1,"comm":"long-'$c'-long-long-long-long","state":"running","cpu_us":5,"energy_uj":100}'
			echo '{"type":"interval","seq":'$s',"ts":"2026-11-22T00:00:0'$s'.000000Z","dt_us":1000000}'
		done
	} > "$BATS_TEST_TMPDIR/in"
	run -0 --separate-stderr kp-fmt -f json --summary < "$BATS_TEST_TMPDIR/in"
	assert_line '{"type":"process","seq":3,"zone":"package","pid":7,"starttime":1,"comm":"b","state":"running","cpu_us":15,"energy_uj":300,"watts":0.0001}'
	assert_line '{"type":"process","seq":3,"zone":"package","pid":8,"starttime":1,"comm":"long-b-long-long-long-long","state":"running","cpu_us":15,"energy_uj":300,"watts":0.0001}'
}

@test "--summary: PROCS counts the processes each group had over the run, not in its last interval" {
	# Three containers whose processes come and go (kp-gen --churn).
	local in=$BATS_TEST_TMPDIR/agg.ndjson
	"$KP_ROOT/scripts/kp-gen" --seed 3 --intervals 10 --processes 20 \
	    --containers 3 --pods 2 --churn 300 | kp-attribute | kp-aggregate > "$in"
	# What each container and the container level's host had, by jq:
	# distinct pid and starttime per zone over the whole stream.
	jq -r 'select(.type == "process") |
	    "\(.zone) \(.container_id // "host") \(.pid):\(.starttime)"' "$in" |
	    sort -u | awk '{ print $1, $2 }' | uniq -c |
	    awk '{ print $2, $3, $1 }' > "$BATS_TEST_TMPDIR/want"
	kp-fmt --summary -f json < "$in" | jq -r '
	    select(.type == "container" or (.type == "host" and .level == "container")) |
	    "\(.zone) \(.container_id // "host") \(.processes)"' |
	    sort > "$BATS_TEST_TMPDIR/got"
	run -0 diff "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/got"
	# Churn made them more than any one interval's.
	run -0 jq -s '[.[] | select(.type == "container") | .processes] | max' "$in"
	[ "$(sort -k3 -n "$BATS_TEST_TMPDIR/got" | tail -1 | cut -d' ' -f3)" -gt "$output" ]
	# Without the process records, the last interval's.
	run -0 bash -c 'kp-fmt --summary -f json -t container < "$1" | jq -s "[.[] | .processes] | max"' _ "$in"
	assert_output "$(jq -s '[.[] | select(.type == "container" and .seq == 10) | .processes] | max' "$in")"
}

# An attributed rapl-read -- CMD stream: the command sh, pid 7, in its own
# cgroup /kp-command-7, ends in interval 2.
command_stream() {
	cat > "$BATS_TEST_TMPDIR/in" <<-'IN'
	{"type":"header","seq":0,"version":"1.2","producer":"rapl-read"}
	{"type":"node","seq":1,"zone":"package","energy_uj":10000001,"active_uj":10000001,"idle_uj":0,"estimated":true}
	{"type":"process","seq":1,"zone":"package","pid":7,"ppid":6,"starttime":100,"comm":"sh","state":"running","cgroup":"/kp-command-7","cpu_us":300000,"energy_uj":3000001}
	{"type":"process","seq":1,"zone":"package","pid":9,"ppid":1,"starttime":50,"comm":"bash","state":"running","cgroup":"/user.slice","cpu_us":700000,"energy_uj":7000000}
	{"type":"interval","seq":1,"ts":"2026-11-22T00:00:01.000000Z","dt_us":1000000}
	{"type":"command","seq":2,"pid":7,"ppid":6,"starttime":100,"comm":"sh","cpu_us":402000,"cgroup":"/kp-command-7","cgroup_cpu_us":402100,"status":0}
	{"type":"node","seq":2,"zone":"package","energy_uj":5000003,"active_uj":5000003,"idle_uj":0,"estimated":true}
	{"type":"process","seq":2,"zone":"package","pid":7,"ppid":6,"starttime":100,"comm":"sh","state":"terminated","cgroup":"/kp-command-7","cpu_us":100000,"energy_uj":1000002}
	{"type":"exited","seq":2,"zone":"package","count":0,"source":"cgroup","cgroup":"/kp-command-7","cpu_us":2000,"energy_uj":20003}
	{"type":"process","seq":2,"zone":"package","pid":9,"ppid":1,"starttime":50,"comm":"bash","state":"running","cgroup":"/user.slice","cpu_us":398000,"energy_uj":3979998}
	{"type":"interval","seq":2,"ts":"2026-11-22T00:00:01.500000Z","dt_us":500000}
	IN
}

# command_block FILTER: jq FILTER over the command records of the summary of
# $BATS_TEST_TMPDIR/in.
command_block() {
	kp-fmt -f json --summary < "$BATS_TEST_TMPDIR/in" |
	    jq -c "select(.type == \"command\") | $1"
}

@test "--summary: the command's block, its tree's joules the exact sum of its cgroup's records, beside the machine's (kp-fmt(1), The command's energy)" {
	command_stream
	run -0 --separate-stderr command_block '.'
	assert_output '{"type":"command","seq":2,"zone":"package","pid":7,"comm":"sh","status":0,"cpu_us":402000,"cgroup":"/kp-command-7","energy_uj":4020006,"credited_cpu_us":402000,"watts":2.680004,"machine_uj":15000004,"dt_us":1500000,"estimated":true}'
	# As a table: one short block.
	run -0 --separate-stderr kp-fmt -f table --summary < "$BATS_TEST_TMPDIR/in"
	assert_line -n 2 'command  sh  pid 7  status 0  tree cpu 402 ms'
	assert_line -n 3 '  package  4.020006 J  mean 2.68 W  cpu 402 ms  of the machine'"'"'s 15.000004 J over 1.50 s, estimated'
}

# tests/fixtures/command-tree.jsonl: rapl-read (pid 6) ran the command sh
# (pid 7) without a cgroup of its own, so its tree is told by its records'
# parents (kp-fmt(1), The command's energy).  make (11) has its first
# record after those of its children cc1 (12) and as (exited, interval 1);
# the daemon (13), an orphan, is re-parented to rapl-read, which has a
# record of its own, not the tree's; pid 15, one of the tree's in interval
# 1, is taken again in interval 2 by a process outside it, whose child and
# exited children are not the tree's either; nor is bash's (9) exited
# child, nor the cgroup's reconciliation, which has no ppid.
tree_stream() {
	cp "$FIXTURES/command-tree.jsonl" "$BATS_TEST_TMPDIR/in"
}

@test "--summary: a command without a cgroup of its own has its tree's joules, the exact sum of the records its parent chains reach (kp-fmt(1), The command's energy)" {
	tree_stream
	# sh 3000001 + 1000002, cc1 11, sed 7, make 200000, daemon 30000,
	# worker 4, as 400, cc 5000, true 600.
	run -0 --separate-stderr command_block '[.energy_uj, .credited_cpu_us, .machine_uj]'
	assert_output '[4236025,426300,15000004]'
	run -0 --separate-stderr bash -c 'kp-fmt -f table --summary < "$1" | sed -n 4p' _ "$BATS_TEST_TMPDIR/in"
	assert_output '  package  4.236025 J  mean 2.82 W  cpu 426 ms  of the machine'"'"'s 15.000004 J over 1.50 s, estimated'
}

@test "--summary: the tree's records spooled past a MiB give the same joules (kp-fmt(1), Memory)" {
	tree_stream
	# 20000 more intervals of bash alone: over a MiB of the tree's tuples.
	jq -c 'select(.type != "command")' "$BATS_TEST_TMPDIR/in" > "$BATS_TEST_TMPDIR/long"
	for ((seq = 3; seq <= 20002; seq++)); do
		printf '{"type":"process","seq":%d,"zone":"package","pid":9,"ppid":1,"starttime":50,"comm":"bash","state":"running","cgroup":"/user.slice","cpu_us":1,"energy_uj":1}\n{"type":"interval","seq":%d,"dt_us":1}\n' "$seq" "$seq"
	done >> "$BATS_TEST_TMPDIR/long"
	sed -i '$d' "$BATS_TEST_TMPDIR/long"
	printf '%s\n' "$(jq -c 'select(.type == "command") | .seq = 20002' "$BATS_TEST_TMPDIR/in")" '{"type":"interval","seq":20002,"dt_us":1}' >> "$BATS_TEST_TMPDIR/long"
	mkdir "$BATS_TEST_TMPDIR/tmp"
	TMPDIR=$BATS_TEST_TMPDIR/tmp run -0 --separate-stderr kp-fmt -f json --summary < "$BATS_TEST_TMPDIR/long"
	run -0 jq -c 'select(.type == "command") | [.energy_uj, .credited_cpu_us]' <<< "$output"
	assert_output '[4236025,426300]'
	assert_equal "$(ls -A "$BATS_TEST_TMPDIR/tmp")" ""
}

@test "--summary: only a run that measures a command keeps its records for the tree, as its header names the command (kp-fmt(1), Memory)" {
	# A day's log at 1 Hz keeps no tuple for a tree: over a MiB of them
	# would need TMPDIR, which is missing here.
	local seq
	for ((seq = 1; seq <= 20000; seq++)); do
		printf '{"type":"process","seq":%d,"zone":"package","pid":9,"ppid":1,"starttime":50,"comm":"bash","state":"running","cgroup":"/user.slice","cpu_us":1,"energy_uj":1}\n{"type":"interval","seq":%d,"dt_us":1}\n' "$seq" "$seq"
	done > "$BATS_TEST_TMPDIR/day"
	{ echo '{"type":"header","seq":0,"version":"1.2","producer":"rapl-read"}'
	  cat "$BATS_TEST_TMPDIR/day"; } > "$BATS_TEST_TMPDIR/log"
	TMPDIR=$BATS_TEST_TMPDIR/missing run -0 --separate-stderr \
	    kp-fmt -f json --summary < "$BATS_TEST_TMPDIR/log"
	run -0 jq -s 'map(select(.type == "process")) | .[0].energy_uj' <<< "$output"
	assert_output 20000
	# rapl-read -- CMD's header names the command: its records are kept.
	{ echo '{"type":"header","seq":0,"version":"1.2","producer":"rapl-read","command":"sh"}'
	  cat "$BATS_TEST_TMPDIR/day"; } > "$BATS_TEST_TMPDIR/log"
	TMPDIR=$BATS_TEST_TMPDIR/missing run -1 --separate-stderr \
	    kp-fmt -f json --summary < "$BATS_TEST_TMPDIR/log"
	assert_equal "$output" ""
	# The header rapl-read -- CMD writes names it, passed on by each stage.
	run -0 bash -c 'rapl-read --source model -i 10ms -- /bin/true 2>/dev/null |
	    proc-cputime | kp-attribute | head -1 | jq -r .command'
	assert_output true
	run -0 bash -c 'rapl-read --source model -i 10ms -n 1 | head -1 | jq -r ".command // \"none\""'
	assert_output none
}

@test "--summary: a stream of no process records tells no share of the command's, and says why" {
	command_stream
	grep -v '"process"\|"exited"' "$BATS_TEST_TMPDIR/in" > "$BATS_TEST_TMPDIR/bare"
	run -0 --separate-stderr kp-fmt -f table --summary < "$BATS_TEST_TMPDIR/bare"
	assert_line -n 3 '  package  its tree'"'"'s share unknown (no attributed records)  the machine'"'"'s 15.000004 J over 1.50 s, estimated'
}

# Three dense intervals of 3,000 processes, the second cut short: a header
# comes where its interval record was (kp-records(5), Rules every reader
# applies), in $BATS_TEST_TMPDIR/cut; the same stream without the second
# interval's records in $BATS_TEST_TMPDIR/without.
cut_stream() {
	local hdr='{"type":"header","seq":0,"version":"1.1","producer":"kp-gen"}'
	"$KP_ROOT/scripts/kp-gen" --seed 4 --intervals 3 --processes 3000 \
	    --dense 1 | kp-attribute | kp-aggregate > "$BATS_TEST_TMPDIR/in"
	jq -c --arg hdr "$hdr" 'if .type == "interval" and .seq == 2 then
	    ($hdr | fromjson) else . end' "$BATS_TEST_TMPDIR/in" \
	    > "$BATS_TEST_TMPDIR/cut"
	jq -c --arg hdr "$hdr" 'if .type == "interval" and .seq == 2 then
	    ($hdr | fromjson) elif .seq == 2 then empty else . end' \
	    "$BATS_TEST_TMPDIR/in" > "$BATS_TEST_TMPDIR/without"
	# The cut interval passes the spool's mebibyte of memory.
	(($(grep -c '"seq":2,' "$BATS_TEST_TMPDIR/cut") > 5000))
	(($(wc -c < "$BATS_TEST_TMPDIR/cut") > 3 << 20))
}

@test "--summary: an interval cut short, spooled past a MiB, is not summed (kp-fmt(1), Memory)" {
	cut_stream
	mkdir "$BATS_TEST_TMPDIR/tmp"
	TMPDIR=$BATS_TEST_TMPDIR/tmp run -3 --separate-stderr \
	    kp-fmt -f json --summary < "$BATS_TEST_TMPDIR/cut"
	assert_equal "$(printf '%s\n' "$stderr" | grep -c 'interval 2 has no interval record')" 1
	assert_equal "$(ls -A "$BATS_TEST_TMPDIR/tmp")" ""
	kp-fmt -f json --summary < "$BATS_TEST_TMPDIR/without" > "$BATS_TEST_TMPDIR/want"
	assert_equal "$output" "$(cat "$BATS_TEST_TMPDIR/want")"
	# Its sums were in the stream: counted, the node's joules would differ.
	[ "$(jq -s 'map(select(.type == "node" and .zone == "package"))[0].energy_uj' <<< "$output")" -lt \
	    "$(kp-fmt -f json --summary < "$BATS_TEST_TMPDIR/in" | jq -s 'map(select(.type == "node" and .zone == "package"))[0].energy_uj')" ]
}

@test "--summary: a spool that cannot be made is status 1 and writes no summary (kp-fmt(1), EXIT STATUS)" {
	cut_stream
	TMPDIR=$BATS_TEST_TMPDIR/missing run -1 --separate-stderr \
	    kp-fmt -f json --summary < "$BATS_TEST_TMPDIR/in"
	assert_equal "$stderr" "kp-fmt: spooling an interval to $BATS_TEST_TMPDIR/missing: No such file or directory"
	assert_equal "$output" ""
}

@test "--summary: a long value two workloads share stays the other's when one's changes (kp-fmt(1), Memory)" {
	local s cg=/kubepods.slice/kubepods-pod0123.slice/cri-containerd-0123456789abcdef.scope
	{
		echo '{"type":"header","seq":0,"version":"1.0","producer":"test"}'
		for s in 1 2; do
			[ "$s" = 1 ] || cg=$cg.moved
			echo '{"type":"process","seq":'$s',"zone":"package","pid":7,"starttime":1,"comm":"a","cgroup":"'$cg'","cpu_us":5,"energy_uj":100}'
			echo '{"type":"process","seq":'$s',"zone":"dram","pid":7,"starttime":1,"comm":"a","cgroup":"'${cg%.moved}'","cpu_us":5,"energy_uj":100}'
			echo '{"type":"interval","seq":'$s',"ts":"2026-11-22T00:00:0'$s'.000000Z","dt_us":1000000}'
		done
	} > "$BATS_TEST_TMPDIR/in"
	run -0 --separate-stderr kp-fmt -f json --summary < "$BATS_TEST_TMPDIR/in"
	assert_line '{"type":"process","seq":2,"zone":"package","pid":7,"starttime":1,"comm":"a","cgroup":"'"$cg"'","cpu_us":10,"energy_uj":200,"watts":0.0001}'
	assert_line '{"type":"process","seq":2,"zone":"dram","pid":7,"starttime":1,"comm":"a","cgroup":"'"${cg%.moved}"'","cpu_us":10,"energy_uj":200,"watts":0.0001}'
}

# The records of the tree of the command that rapl-read ran, in an
# attributed stream: every process whose parent chain reaches the command
# or rapl-read, rapl-read itself excluded, and the exited records of their
# children (kp-fmt(1), The command's energy).
tree_records_jq='
	(map(select(.type == "command"))[0]) as $c |
	map(select(.type == "process" or .type == "exited")) as $r |
	($r | map(select(.type == "process")) |
	    map({key: (.pid | tostring), value: .ppid}) | from_entries) as $up |
	def intree($p; $n): if $n > 64 or $p == null then false
	    elif $p == $c.pid or $p == $c.ppid then true
	    else intree($up[$p | tostring]; $n + 1) end;
	$r | map(select((.type == "process" and .pid != $c.ppid and
	    intree(.pid; 0)) or (.type == "exited" and intree(.ppid; 0))))'

@test "--summary: unprivileged, rapl-read -- CMD's block has its tree's joules, the sum of its tree's records (kp-fmt(1), The command's energy)" {
	local s=$BATS_TEST_TMPDIR/stream
	chmod 777 "$BATS_TEST_TMPDIR"
	# A child, and an orphan re-parented to rapl-read, its subreaper.
	run -0 --separate-stderr bash -c 'set -o pipefail; setpriv --reuid=65534 --regid=65534 --clear-groups rapl-read --source model -i 200ms -- sh -c '"'"'(sh -c "i=0; while [ \$i -lt 20000 ]; do i=\$((i+1)); done" &); sh -c "i=0; while [ \$i -lt 20000 ]; do i=\$((i+1)); done"; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'"'"' | proc-cputime | kp-attribute | tee "$1" | kp-fmt -f json --summary' _ "$s"
	# Unprivileged: no cgroup of its own.
	[ "$(jq -r 'select(.type == "command") | .cgroup // "none"' "$s")" = none ]
	local want
	want=$(jq -s "$tree_records_jq | map(.energy_uj) | add" "$s")
	((want > 0))
	run -0 jq -c 'select(.type == "command") | .energy_uj' <<< "$output"
	assert_output "$want"
}
