#!/usr/bin/env bats
# kp-aggregate: container, pod and vm records as exact sums of processes.

load test_helper

setup() {
	IN=$BATS_TEST_TMPDIR/in
	echo '{"type":"header","seq":0,"version":"1.0","producer":"test"}' > "$IN"
}

# process SEQ ZONE PID UJ [extra JSON members]
process() {
	printf '{"type":"process","seq":%s,"zone":"%s","pid":%s,"starttime":1,"comm":"p","cpu_us":10,"energy_uj":%s%s}\n' \
	    "$1" "$2" "$3" "$4" "${5:+,$5}" >> "$IN"
}
interval() {
	printf '{"type":"interval","seq":%s,"ts":"2026-11-22T00:00:00.000000Z","dt_us":%s}\n' "$1" "${2:-1000000}" >> "$IN"
}

@test "usage matches the manual's synopsis" {
	assert_equal "$(usage_synopsis kp-aggregate)" \
	    "$(man_synopsis kp-aggregate.1)"
}

@test "-h and --help print the usage and the options on stdout, exit 0; --version" {
	assert_help kp-aggregate
	run -0 kp-aggregate -h
	assert_line -n 0 "usage: kp-aggregate [-h] [--by field] [--drop-processes] [--level level[,level ...]] [--state file]"
	assert_line '      --level level,...  container, pod, vm, unit (all four)'
}

@test "unknown options and operands are usage errors that say what was wrong" {
	run -2 --separate-stderr kp-aggregate -z
	assert_equal "${stderr_lines[0]}" "kp-aggregate: invalid option -- 'z'"
	run -2 --separate-stderr kp-aggregate file
	assert_equal "$stderr" "kp-aggregate: unexpected argument 'file'
usage: kp-aggregate [-h] [--by field] [--drop-processes] [--level level[,level ...]] [--state file]"
	assert_output ""
}

@test "containers, pods and vms are the exact sums of their processes" {
	process 1 package 1 7 '"container_id":"a","pod_id":"p1"'
	process 1 package 2 5 '"container_id":"a","pod_id":"p1"'
	process 1 package 3 11 '"container_id":"b","pod_id":"p1"'
	process 1 dram 3 4 '"container_id":"b","pod_id":"p1"'
	process 1 package 4 13 '"vm_id":"qemu-1-guest"'
	process 1 package 5 17
	interval 1 2000000
	run --separate-stderr kp-aggregate --level container,pod,vm < "$IN"
	assert_success
	assert_output - <<-'OUT'
	{"type":"header","seq":0,"version":"1.0","producer":"test"}
	{"type":"process","seq":1,"zone":"package","pid":1,"starttime":1,"comm":"p","cpu_us":10,"energy_uj":7,"container_id":"a","pod_id":"p1"}
	{"type":"process","seq":1,"zone":"package","pid":2,"starttime":1,"comm":"p","cpu_us":10,"energy_uj":5,"container_id":"a","pod_id":"p1"}
	{"type":"process","seq":1,"zone":"package","pid":3,"starttime":1,"comm":"p","cpu_us":10,"energy_uj":11,"container_id":"b","pod_id":"p1"}
	{"type":"process","seq":1,"zone":"dram","pid":3,"starttime":1,"comm":"p","cpu_us":10,"energy_uj":4,"container_id":"b","pod_id":"p1"}
	{"type":"process","seq":1,"zone":"package","pid":4,"starttime":1,"comm":"p","cpu_us":10,"energy_uj":13,"vm_id":"qemu-1-guest"}
	{"type":"process","seq":1,"zone":"package","pid":5,"starttime":1,"comm":"p","cpu_us":10,"energy_uj":17}
	{"type":"container","seq":1,"zone":"dram","container_id":"b","pod_id":"p1","processes":1,"cpu_us":10,"energy_uj":4,"watts":2e-6,"total_uj":4,"state":"running"}
	{"type":"container","seq":1,"zone":"package","container_id":"a","pod_id":"p1","processes":2,"cpu_us":20,"energy_uj":12,"watts":6e-6,"total_uj":12,"state":"running"}
	{"type":"container","seq":1,"zone":"package","container_id":"b","pod_id":"p1","processes":1,"cpu_us":10,"energy_uj":11,"watts":5.5e-6,"total_uj":11,"state":"running"}
	{"type":"host","seq":1,"zone":"dram","level":"container","processes":0,"cpu_us":0,"energy_uj":0,"watts":0.0,"total_uj":0}
	{"type":"host","seq":1,"zone":"package","level":"container","processes":2,"cpu_us":20,"energy_uj":30,"watts":1.5e-5,"total_uj":30}
	{"type":"pod","seq":1,"zone":"dram","pod_id":"p1","processes":1,"cpu_us":10,"energy_uj":4,"watts":2e-6,"total_uj":4,"state":"running"}
	{"type":"pod","seq":1,"zone":"package","pod_id":"p1","processes":3,"cpu_us":30,"energy_uj":23,"watts":1.15e-5,"total_uj":23,"state":"running"}
	{"type":"host","seq":1,"zone":"dram","level":"pod","processes":0,"cpu_us":0,"energy_uj":0,"watts":0.0,"total_uj":0}
	{"type":"host","seq":1,"zone":"package","level":"pod","processes":2,"cpu_us":20,"energy_uj":30,"watts":1.5e-5,"total_uj":30}
	{"type":"vm","seq":1,"zone":"package","vm_id":"qemu-1-guest","processes":1,"cpu_us":10,"energy_uj":13,"watts":6.5e-6,"total_uj":13,"state":"running"}
	{"type":"host","seq":1,"zone":"dram","level":"vm","processes":1,"cpu_us":10,"energy_uj":4,"watts":2e-6,"total_uj":4}
	{"type":"host","seq":1,"zone":"package","level":"vm","processes":4,"cpu_us":40,"energy_uj":40,"watts":2e-5,"total_uj":40}
	{"type":"interval","seq":1,"ts":"2026-11-22T00:00:00.000000Z","dt_us":2000000}
	OUT
}

@test "group totals accumulate over the intervals of a run" {
	process 1 package 1 7 '"container_id":"a"'
	interval 1
	interval 2
	process 3 package 2 5 '"container_id":"a"'
	interval 3
	run kp-aggregate < "$IN"
	assert_equal "$(jq -r 'select(.type == "container") | "\(.seq) \(.energy_uj) \(.total_uj)"' <<< "$output" | tr '\n' ' ')" "1 7 7 3 5 12 "
}

@test "a malformed process record is reported with its line, skipped; exit 3" {
	echo '{"type":"process","seq":1,"pid":1}' >> "$IN"
	process 1 package 1 7 '"container_id":"a"'
	interval 1
	run --separate-stderr kp-aggregate < "$IN"
	assert_failure 3
	assert_equal "$stderr" 'kp-aggregate: <stdin>:2: process record without a string "zone"'
	assert_equal "$(jq -r 'select(.type == "container") | .energy_uj' <<< "$output")" 7
}

@test "a write error is a failure" {
	interval 1
	run -1 --separate-stderr bash -c 'kp-aggregate < "$1" > /dev/full' _ "$IN"
	assert_equal "$stderr" "kp-aggregate: write error on stdout: No space left on device"
}

@test "a stream cut inside an interval is reported; exit 3" {
	process 1 package 1 7 '"container_id":"a"'
	run --separate-stderr kp-aggregate < "$IN"
	assert_failure 3
	assert_equal "$stderr" "kp-aggregate: <stdin>:2: the stream ends inside interval 1"
	assert_equal "${#lines[@]}" 2
}

@test "unit and --by levels; several at once; --drop-processes" {
	process 1 package 1 7 '"unit":"a.service","tag":"x"'
	process 1 package 2 5 '"unit":"a.service"'
	process 1 package 3 11 '"tag":"x"'
	interval 1
	run --separate-stderr kp-aggregate --drop-processes --level unit --by tag < "$IN"
	assert_success
	refute_output --partial '"type":"process"'
	assert_equal "$(jq -r 'select(.type == "unit") | "\(.unit) \(.energy_uj)"' <<< "$output")" "a.service 12"
	assert_equal "$(jq -r 'select(.type == "group") | "\(.by) \(.tag) \(.energy_uj)"' <<< "$output")" "tag x 18"
	assert_equal "$(jq -r 'select(.type == "host") | "\(.level) \(.energy_uj)"' <<< "$output" | tr '\n' ' ')" "unit 11 tag 5 "
}

@test "bad levels and fields are usage errors" {
	run -2 --separate-stderr kp-aggregate --level rack
	assert_equal "$stderr" "kp-aggregate: --level must be container, pod, vm or unit: 'rack'"
	run -2 --separate-stderr kp-aggregate --by 'a"b'
	assert_equal "$stderr" "kp-aggregate: --by wants a field name of letters, digits and '_': 'a\"b'"
}

@test "a group ends when its last process does: reported once as terminated" {
	process 1 package 1 7 '"container_id":"a","state":"running"'
	process 1 package 2 5 '"container_id":"a","state":"running"'
	interval 1
	process 2 package 1 0 '"container_id":"a","state":"terminated"'
	interval 2
	process 3 package 2 0 '"container_id":"a","state":"terminated"'
	interval 3
	interval 4
	process 5 package 3 4 '"container_id":"a","state":"running"'
	interval 5
	run kp-aggregate --level container < "$IN"
	assert_equal "$(jq -r 'select(.type == "container") | "\(.seq) \(.state) \(.processes) \(.total_uj)"' <<< "$output" | tr '\n' ' ')" \
	    "1 running 2 12 2 running 1 12 3 terminated 1 12 5 running 1 4 "
}

@test "--state carries group totals and live members across runs" {
	S=$BATS_TEST_TMPDIR/ag.state
	process 1 package 1 7 '"container_id":"a","state":"running"'
	interval 1
	run kp-aggregate --level container --state "$S" < "$IN"
	assert_success
	: > "$IN"
	process 2 package 1 5 '"container_id":"a","state":"running"'
	interval 2
	run kp-aggregate --level container --state "$S" < "$IN"
	assert_equal "$(jq -r 'select(.type == "container") | .total_uj' <<< "$output")" 12
	: > "$IN"
	process 3 package 1 0 '"container_id":"a","state":"terminated"'
	interval 3
	run kp-aggregate --level container --state "$S" < "$IN"
	assert_equal "$(jq -r 'select(.type == "container") | "\(.state) \(.total_uj)"' <<< "$output")" "terminated 12"
	assert_equal "$(jq -r 'select(.type == "host") | .total_uj' <<< "$output")" 0
}

@test "a restarted guest (new pids, same vm_id) keeps its vm total across --state runs, for a day after its processes end" {
	# kp-aggregate(1), Records: a vm group whose processes all ended rests.
	S=$BATS_TEST_TMPDIR/ag.state U='"vm_id":"8e4b3a3c-1c2d-4e5f-8a9b-0c1d2e3f4a5b"'
	process 1 package 10 7 "$U,\"state\":\"running\""
	interval 1
	process 2 package 10 2 "$U,\"state\":\"terminated\""
	interval 2
	run -0 kp-aggregate --level vm --state "$S" < "$IN"
	assert_equal "$(jq -r 'select(.type == "vm") | "\(.seq) \(.state) \(.total_uj)"' <<< "$output" | tr '\n' ' ')" \
	    "1 running 7 2 terminated 9 "
	: > "$IN"
	interval 3 3600000000
	process 4 package 20 5 "$U,\"state\":\"running\""
	interval 4
	run -0 kp-aggregate --level vm --state "$S" < "$IN"
	assert_equal "$(jq -r 'select(.type == "vm") | "\(.seq) \(.state) \(.total_uj)"' <<< "$output")" "4 running 14"
	# Past KP_VM_KEEP_US (a day) at rest, it is forgotten: a new start.
	: > "$IN"
	process 5 package 20 0 "$U,\"state\":\"terminated\""
	interval 5
	interval 6 86400000001
	process 7 package 30 4 "$U,\"state\":\"running\""
	interval 7
	run -0 kp-aggregate --level vm --state "$S" < "$IN"
	assert_equal "$(jq -r 'select(.type == "vm") | "\(.seq) \(.state) \(.total_uj)"' <<< "$output" | tr '\n' ' ')" \
	    "5 terminated 14 7 running 4 "
}

@test "--state of many kilobytes is read whole: every group's total goes on" {
	# lib/jsonfile.c hands jansson the file in blocks of a kilobyte:
	# a state of many blocks must come back whole, not as a new baseline.
	S=$BATS_TEST_TMPDIR/ag.state
	for pid in $(seq 1 400); do
		process 1 package "$pid" 3 "\"container_id\":\"c$pid\",\"state\":\"running\""
	done
	interval 1
	run kp-aggregate --level container --state "$S" < "$IN"
	assert_success
	[ "$(stat -c %s "$S")" -gt 16384 ]
	sed -i 's/"seq":1/"seq":2/' "$IN"
	run --separate-stderr kp-aggregate --level container --state "$S" < "$IN"
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(jq -r 'select(.type == "container") | .total_uj' <<< "$output" | sort -u)" 6
	assert_equal "$(jq -r 'select(.type == "container")' <<< "$output" | grep -c '"total_uj": 6')" 400
}

@test "--state: the same totals and members give the same bytes, whatever order the records came in" {
	# kp-aggregate(1): keys sorted, groups in the order of their ids.
	for pid in $(seq 1 400); do
		process 1 package "$pid" 3 "\"container_id\":\"c$pid\",\"state\":\"running\""
	done
	interval 1
	run kp-aggregate --level container --state "$BATS_TEST_TMPDIR/a.state" < "$IN"
	assert_success
	{ head -n 1 "$IN"; sed -n '2,401p' "$IN" | tac; tail -n 1 "$IN"; } > "$IN.rev"
	run kp-aggregate --level container --state "$BATS_TEST_TMPDIR/b.state" < "$IN.rev"
	assert_success
	cmp "$BATS_TEST_TMPDIR/a.state" "$BATS_TEST_TMPDIR/b.state"
}

# second_interval CONTAINER POD: process 4's second interval, its
# container and pod as records write them, with --state $S: both totals go
# on from the 2^60 + 1 of the first.
second_interval() {
	head -n 1 "$IN" > "$IN.2"; mv "$IN.2" "$IN"
	process 2 package 4 1 "\"container_id\":\"$1\",\"pod_id\":\"$2\",\"state\":\"running\""
	interval 2
	run -0 --separate-stderr kp-aggregate --level container,pod --state "$S" < "$IN"
	assert_equal "$stderr" ""
	assert_line "{\"type\":\"container\",\"seq\":2,\"zone\":\"package\",\"container_id\":\"$1\",\"pod_id\":\"$2\",\"processes\":1,\"cpu_us\":10,\"energy_uj\":1,\"watts\":1e-6,\"total_uj\":1152921504606846002,\"state\":\"running\"}"
	assert_line "{\"type\":\"pod\",\"seq\":2,\"zone\":\"package\",\"pod_id\":\"$2\",\"processes\":1,\"cpu_us\":10,\"energy_uj\":1,\"watts\":1e-6,\"total_uj\":1152921504606846002,\"state\":\"running\"}"
}

@test "--state: what is written is what is read back: integers past 2^53, escaped and UTF-8 ids, byte for byte (kp-aggregate(1), --state)" {
	S=$BATS_TEST_TMPDIR/ag.state
	# a total a double would round (2^60 + 1), ids with quotes, a
	# backslash, a control character, a tab and UTF-8 of 2 and 4 bytes
	ids='"container_id":"c\"q\\b\u0001é😀\t","pod_id":"p\u00e9\\","state":"running"'
	process 1 package 4 1152921504606846001 "$ids"
	interval 1
	run -0 kp-aggregate --level container,pod --state "$S" < "$IN"
	second_interval 'c\"q\\b\u0001é😀\t' 'p\u00e9\\'
	# loaded and written again unchanged, the same bytes
	cp "$S" "$BATS_TEST_TMPDIR/before"
	sed -i 's/"seq":2/"seq":3/; s/"energy_uj":1,/"energy_uj":0,/' "$IN"
	run -0 kp-aggregate --level container,pod --state "$S" < "$IN"
	assert_line --partial '"total_uj":1152921504606846002,"state":"running"}'
	cmp "$BATS_TEST_TMPDIR/before" "$S"
}

@test "--state of 4,000 groups, read entry by entry: brackets and quotes in ids, escaped keys, white space, integers past 2^53 read back as written (kp-aggregate(1), --state)" {
	S=$BATS_TEST_TMPDIR/ag.state
	local other=$BATS_TEST_TMPDIR/other.state from_s
	# brackets, a comma and a colon inside strings; quotes, a backslash,
	# a control character and UTF-8 of 2 and 4 bytes; 2^60 + 1
	ids='"container_id":"c}]\"{[,:\\\u0001é😀\t","pod_id":"p]\u00e9\\}","state":"running"'
	process 1 package 4 1152921504606846001 "$ids"
	seq 10 4009 | awk '{ printf "{\"type\":\"process\",\"seq\":1,\"zone\":\"package\",\"pid\":%d,\"starttime\":1,\"comm\":\"p\",\"cpu_us\":10,\"energy_uj\":3,\"container_id\":\"c%d\",\"state\":\"running\"}\n", $1, $1 }' >> "$IN"
	interval 1
	run -0 kp-aggregate --level container,pod --state "$S" < "$IN"
	[ "$(grep -o '"[0-9]*:1":' "$S" | wc -l)" -eq 4001 ]
	# the same state as another writer could put it: white space
	# between entries (not jq's, which rounds 2^60 + 1), and the first
	# digit of each member's key escaped
	sed -e 's/},"/},\n\t "/g; s/},{/}, {/g; s/^{/{\r\n /' \
	    -e 's/"\([0-9]\)\([0-9]*:1":\)/"\\u003\1\2/g' "$S" > "$other"
	[ "$(grep -o '"\\u003[0-9][0-9]*:1":' "$other" | wc -l)" -eq 4001 ]
	[ "$(grep -o '}, {' "$other" | wc -l)" -ge 4000 ]
	second_interval 'c}]\"{[,:\\\u0001é😀\t' 'p]\u00e9\\}'
	from_s=$output
	run -0 --separate-stderr kp-aggregate --level container,pod --state "$other" < "$IN"
	assert_equal "$stderr" ""
	assert_equal "$output" "$from_s"
	cmp "$S" "$other"
	# loaded and written again unchanged, the same bytes
	cp "$S" "$BATS_TEST_TMPDIR/before"
	sed -i 's/"seq":2/"seq":3/; s/"energy_uj":1,/"energy_uj":0,/' "$IN"
	run -0 kp-aggregate --level container,pod --state "$S" < "$IN"
	cmp "$BATS_TEST_TMPDIR/before" "$S"
}

@test "--state: a state file written by the previous version (663a549) goes on: totals past 2^53, escaped and UTF-8 ids (kp-aggregate(1), --state)" {
	S=$BATS_TEST_TMPDIR/ag.state
	# the last interval of the test above, saved by that version's
	# kp-aggregate --level container,pod; its boot id made this boot's
	sed "s/BOOT_ID/$(cat /proc/sys/kernel/random/boot_id)/" \
	    "$FIXTURES/state/kp-aggregate-663a549.state" > "$S"
	second_interval 'c\"q\\b\u0001é😀\t' 'p\u00e9\\'
}

@test "at every level and zone: groups + host + unattributed = node energy - idle kept; a pod is the sum of its containers" {
	"$KP_ROOT/scripts/kp-gen" --seed 5 --intervals 40 --processes 60 --churn 50 > "$IN"
	run bash -c 'set -o pipefail; kp-attribute --idle proportional < "$1" | kp-aggregate --drop-processes --by comm' _ "$IN"
	assert_success
	run jq -s -r '
	    group_by([.seq, .zone])[] | select(.[0].zone != null) |
	    (map(select(.type == "node"))[0]) as $n |
	    (map(select(.type == "unattributed"))[0].energy_uj) as $u |
	    (["container", "pod", "vm", "unit", "comm"][]) as $l |
	    (map(select((.type == $l or (.type == "group" and .by == $l)) or (.type == "host" and .level == $l)) | .energy_uj) | add) as $sum |
	    select($sum + $u != $n.energy_uj - $n.idle_kept_uj) |
	    "broken at \(.[0].seq) \(.[0].zone) \($l)"' <<< "$output"
	assert_output ""
	run jq -s -r '
	    group_by([.seq, .zone])[] | select(.[0].zone != null) |
	    (map(select(.type == "container" and .pod_id != null)) | group_by(.pod_id) | map({key: .[0].pod_id, value: (map(.energy_uj) | add)}) | from_entries) as $c |
	    map(select(.type == "pod"))[] | select(.energy_uj != ($c[.pod_id] // 0)) | "pod \(.pod_id) at \(.seq)"' <<< "$output"
	assert_output ""
}

@test "a state chain of three runs gives the group totals of one run" {
	"$KP_ROOT/scripts/kp-gen" --seed 4 --intervals 30 --processes 30 --churn 150 |
	    kp-attribute > "$IN"
	run kp-aggregate --by comm --drop-processes < "$IN"
	assert_success
	one=$(printf '%s\n' "$output" | grep -v '"type":"header"')
	S=$BATS_TEST_TMPDIR/ag.state
	chain=
	for part in '1,10' '11,20' '21,30'; do
		jq -c --argjson r "[$part]" 'select(.seq >= $r[0] and .seq <= $r[1])' "$IN" > "$BATS_TEST_TMPDIR/part"
		run kp-aggregate --by comm --drop-processes --state "$S" < "$BATS_TEST_TMPDIR/part"
		assert_success
		chain+=$output$'\n'
	done
	assert_equal "$one" "${chain%$'\n'}"
	assert_output --partial '"state":"terminated"'
}

@test "a state file of other levels is used for the levels both have" {
	S=$BATS_TEST_TMPDIR/ag.state
	process 1 package 1 7 '"container_id":"a","unit":"u","state":"running"'
	interval 1
	run kp-aggregate --level unit,container --state "$S" < "$IN"
	: > "$IN"
	process 2 package 1 0 '"container_id":"a","unit":"u","state":"terminated"'
	interval 2
	run kp-aggregate --level container --state "$S" < "$IN"
	assert_success
	assert_equal "$(jq -r 'select(.type == "container") | "\(.state) \(.total_uj)"' <<< "$output")" "terminated 7"
}

@test "records it does not consume are checked too, and pass through as they came" {
	echo '{"type":"mystery","seq":1,"x":[1,}' >> "$IN"
	echo '{"type":"mystery","seq":1,"x" : [ 1 ]}' >> "$IN"
	echo '{"type":"process","seq":1,"zone":"package","pid":1,"energy_uj":1,"x":[1,}' >> "$IN"
	interval 1
	run --separate-stderr kp-aggregate < "$IN"
	assert_failure 3
	assert_line -n 1 '{"type":"mystery","seq":1,"x" : [ 1 ]}'
	assert_equal "$stderr" "kp-aggregate: <stdin>:2: not JSON: a value is expected
kp-aggregate: <stdin>:4: not JSON: a value is expected"
}

@test "a process record whose energy would take its group's sum in an interval past 2^60 is rejected whole" {
	# 2^60, the most a record carries (kp-records(5)): the group record
	# that holds it is read by the next stage.
	process 1 package 1 1152921504606846976 '"container_id":"a"'
	process 1 package 2 1 '"container_id":"a"'
	process 1 package 3 1 '"container_id":"b"'
	interval 1
	run --separate-stderr kp-aggregate --level container < "$IN"
	assert_failure 3
	assert_equal "$stderr" "kp-aggregate: <stdin>:3: process record whose energy_uj or cpu_us takes a sum past 2^60 or a total past 2^63-1"
	# jq reads integers as doubles: these are compared as text.
	assert_equal "$(sed -n 's/.*"container_id":\("[ab]"\),"processes":\([0-9]*\),"cpu_us":[0-9]*,"energy_uj":\([0-9]*\),.*"total_uj":\([0-9]*\).*/\1 \2 \3 \4/p' <<< "$output" | tr '\n' ' ')" \
	    '"a" 1 1152921504606846976 1152921504606846976 "b" 1 1 1 '
	run -0 kp-fmt -f json <<< "$output"
}

@test "a process record with a bad number or bytes that are not UTF-8 is rejected" {
	process 1 package 1 7 '"container_id":"a","x":1.'
	process 1 package 2 5 "$(printf '"container_id":"\xff"')"
	process 1 package 3 4 '"container_id":"b"'
	interval 1
	run --separate-stderr kp-aggregate --level container < "$IN"
	assert_failure 3
	assert_equal "$stderr" "kp-aggregate: <stdin>:2: not JSON: a digit must follow '.'
kp-aggregate: <stdin>:3: a string is not valid UTF-8"
	assert_equal "$(jq -r 'select(.type == "container") | .container_id' <<< "$output")" b
	refute_output --partial '"x":1.'
}

@test "after a reboot groups and members start anew; host totals go on" {
	S=$BATS_TEST_TMPDIR/ag.state
	process 1 package 1 7 '"container_id":"a","state":"running"'
	process 1 package 2 3 '"state":"running"'
	interval 1
	run kp-aggregate --level container --state "$S" < "$IN"
	assert_success
	edit_state '.boot_id = "earlier"'
	: > "$IN"
	process 2 package 1 5 '"container_id":"a","state":"running"'
	process 2 package 2 4 '"state":"running"'
	interval 2
	run --separate-stderr kp-aggregate --level container --state "$S" < "$IN"
	assert_success
	assert_equal "$stderr" "kp-aggregate: $S: written before a reboot, starting a new baseline"
	assert_equal "$(jq -r 'select(.type == "container" or .type == "host") | "\(.type) \(.total_uj)"' <<< "$output" | tr '\n' ' ')" "container 5 host 7 "
}

@test "a process whose terminated record never comes keeps its group running, across --state runs" {
	S=$BATS_TEST_TMPDIR/ag.state
	process 1 package 1 7 '"container_id":"a","state":"running"'
	interval 1
	run -0 kp-aggregate --level container --state "$S" < "$IN"
	# An interval in which pid 1 has no record, as kp-attribute leaves
	# out the terminated record of a process below --min-terminated-energy.
	: > "$IN"
	interval 2
	run -0 kp-aggregate --level container --state "$S" < "$IN"
	run -0 jq -c '[.data.members["1:1"].container_id, .data.levels.container_id.groups[0].totals.package]' "$S"
	assert_output '["\"a\"",7]'
	: > "$IN"
	process 3 package 1 5 '"container_id":"a","state":"running"'
	interval 3
	run -0 kp-aggregate --level container --state "$S" < "$IN"
	assert_equal "$(jq -r 'select(.type == "container") | "\(.total_uj) \(.state)"' <<< "$output")" "12 running"
}

@test "a stored group whose id is not one JSON value is left out" {
	S=$BATS_TEST_TMPDIR/ag.state
	process 1 package 1 7 '"container_id":"a","state":"running"'
	interval 1
	run kp-aggregate --level container --state "$S" < "$IN"
	edit_state '.data.levels.container_id.groups += [{"id": "X}", "totals": {"package": 1}}, {"id": "\"b\",\"x\":1", "totals": {}}, {"id": "\"c\"", "pod": "}", "totals": {}}]'
	: > "$IN"
	process 2 package 1 5 '"container_id":"a","state":"terminated"'
	interval 2
	run --separate-stderr kp-aggregate --level container --state "$S" < "$IN"
	assert_success
	assert_equal "$(grep -c 'a group whose id is not a JSON value in the state file, left out' <<< "$stderr")" 3
	printf '%s\n' "$output" | jq -e . > /dev/null
	assert_equal "$(jq -r 'select(.type == "container") | "\(.container_id) \(.total_uj)"' <<< "$output")" "a 12"
}

@test "--by a name of a group record's members or of a level's field is a usage error" {
	for field in type seq zone by processes cpu_us energy_uj watts total_uj state; do
		run -2 --separate-stderr kp-aggregate --by "$field"
		assert_equal "$stderr" "kp-aggregate: --by '$field': a member of every group record"
	done
	run -2 --separate-stderr kp-aggregate --level container --by pod_id
	assert_equal "$stderr" "kp-aggregate: --by 'pod_id': use --level pod"
	run -2 --separate-stderr kp-aggregate --by unit
	assert_equal "$stderr" "kp-aggregate: --by 'unit': use --level unit"
}

@test "a process record without a pid is rejected, not merged with another" {
	echo '{"type":"process","seq":1,"zone":"package","energy_uj":3,"container_id":"a"}' >> "$IN"
	echo '{"type":"process","seq":1,"zone":"package","pid":0,"energy_uj":4,"container_id":"a"}' >> "$IN"
	echo '{"type":"process","seq":1,"zone":"package","energy_uj":5,"container_id":"b"}' >> "$IN"
	interval 1
	run --separate-stderr kp-aggregate --level container < "$IN"
	assert_failure 3
	# pid 0 is no pid in any record (kp-records(5)): the reader's decision.
	assert_equal "$stderr" "kp-aggregate: <stdin>:2: process record without a positive integer pid
kp-aggregate: <stdin>:3: \"pid\" is not an integer from 1 to 2147483647
kp-aggregate: <stdin>:4: process record without a positive integer pid"
	assert_equal "$(jq -r 'select(.type == "container") | .container_id' <<< "$output")" ""
}

@test "a process record with a negative cpu_us is rejected" {
	process 1 package 1 3 '"container_id":"a"'
	echo '{"type":"process","seq":1,"zone":"package","pid":2,"starttime":1,"cpu_us":-10,"energy_uj":4,"container_id":"a"}' >> "$IN"
	interval 1
	run --separate-stderr kp-aggregate --level container < "$IN"
	assert_failure 3
	assert_equal "$stderr" "kp-aggregate: <stdin>:3: \"cpu_us\" is not a non-negative integer"
	assert_equal "$(jq -r 'select(.type == "container") | "\(.processes) \(.cpu_us) \(.energy_uj)"' <<< "$output")" "1 10 3"
}

@test "64 zones are summed apart; a process record of a 65th is reported" {
	for z in $(seq 0 64); do process 1 "z$z" 1 7 '"container_id":"a"'; done
	interval 1
	run --separate-stderr kp-aggregate --level container < "$IN"
	assert_failure 3
	assert_equal "$stderr" "kp-aggregate: <stdin>:66: process record of a zone beyond the first 64: left out (see kp-aggregate(1))"
	assert_equal "$(jq -s '[.[] | select(.type == "container" and .energy_uj == 7)] | length' <<< "$output")" 64
	assert_equal "$(jq -s '[.[] | select(.type == "host")] | length' <<< "$output")" 64
}

@test "a level with no members still writes its host record for each zone" {
	echo '{"type":"node","seq":1,"zone":"package","energy_uj":5}' >> "$IN"
	process 1 dram 1 3
	interval 1
	run --separate-stderr kp-aggregate --level vm < "$IN"
	assert_success
	assert_equal "$(jq -r 'select(.type == "vm" or .type == "host") | "\(.type) \(.zone) \(.processes) \(.energy_uj)"' <<< "$output" | tr '\n' ' ')" "host dram 1 3 host package 0 0 "
}

@test "a zone name in a state file that cannot be written as it is, is left out" {
	S=$BATS_TEST_TMPDIR/ag.state
	process 1 package 1 7 '"container_id":"a","state":"running"'
	interval 1
	run kp-aggregate --level container --state "$S" < "$IN"
	edit_state '.data.levels.container_id.groups[0].totals += {"pack\"age": 1, "dram/x": 2, "dram/0": 3}'
	: > "$IN"
	process 2 package 1 5 '"container_id":"a","state":"terminated"'
	interval 2
	run --separate-stderr kp-aggregate --level container --state "$S" < "$IN"
	assert_success
	printf '%s\n' "$output" | jq -e . > /dev/null
	assert_equal "$(jq -r 'select(.type == "container") | "\(.zone) \(.total_uj)"' <<< "$output" | tr '\n' ' ')" "package 12 "
}

@test "an interval cut short: its sums are dropped, who joined and left stays" {
	process 1 package 1 7 '"container_id":"a"'
	process 1 package 2 5 '"container_id":"b","state":"terminated"'
	# Interval 1 has no interval record: interval 2 cuts it short.
	process 2 package 1 3 '"container_id":"a"'
	interval 2
	run -3 --separate-stderr kp-aggregate --level container < "$IN"
	assert_equal "$stderr" "kp-aggregate: <stdin>:4: interval 1 has no interval record"
	# a: interval 2's 3 uJ alone, its member still one; b ended unseen.
	assert_equal "$(jq -c 'select(.type == "container") | [.container_id, .processes, .energy_uj, .total_uj, .state]' <<< "$output")" \
	    '["a",1,3,3,"running"]'
	assert_equal "$(jq -c 'select(.type == "host") | [.processes, .energy_uj]' <<< "$output")" '[0,0]'
	# Every record taken is passed on.
	assert_equal "$(grep -c '"type":"process"' <<< "$output")" 3
}

@test "a dense stream: a group whose processes have no record has ended" {
	node() {
		printf '{"type":"node","seq":%s,"zone":"package","energy_uj":100%s}\n' "$1" "$2" >> "$IN"
	}
	node 1 ',"dense":true'
	process 1 package 1 7 '"container_id":"a"'
	process 1 package 2 5 '"container_id":"b"'
	interval 1
	node 2 ',"dense":true'
	process 2 package 1 3 '"container_id":"a"'
	interval 2
	run -0 --separate-stderr kp-aggregate --level container < "$IN"
	# b had no process in dense interval 2: it ended there.
	assert_equal "$(jq -c 'select(.type == "container" and .seq == 2) | [.container_id, .state, .total_uj]' <<< "$output")" \
	    "$(printf '%s\n' '["a","running",10]' '["b","terminated",5]')"
	# In a sparse interval, absence says nothing: b runs on unseen.
	sed -i 's/,"dense":true//' "$IN"
	run -0 --separate-stderr kp-aggregate --level container < "$IN"
	assert_equal "$(jq -c 'select(.type == "container" and .seq == 2) | [.container_id, .state]' <<< "$output")" '["a","running"]'
}

@test "a sparse stream that never says a process ended holds at most 20000, inside an interval too" {
	awk 'BEGIN {
		for (k = 1; k <= 2; k++) {
			printf "{\"type\":\"node\",\"seq\":%d,\"zone\":\"package\",\"energy_uj\":1}\n", k
			for (i = 0; i < 12000; i++)
				printf "{\"type\":\"process\",\"seq\":%d,\"zone\":\"package\",\"pid\":%d,\"starttime\":%d,\"cpu_us\":1,\"energy_uj\":1,\"container_id\":\"c%d\"}\n", k, i + 2, k, i % 7
			printf "{\"type\":\"interval\",\"seq\":%d,\"dt_us\":1000000}\n", k
		}
	}' > "$IN"
	run -0 --separate-stderr kp-aggregate --level container --drop-processes < "$IN"
	# The 20001st is interval 2's 8001st process, after its node record
	# at line 12003: line 20004.  The 12000 of interval 1 leave before it
	# joins.
	assert_equal "$stderr" "kp-aggregate: <stdin>:20004: 20000 processes without an end, 20000 at most: 12000 let go, those seen least recently leave their groups"
	# Interval 1's members left; the groups go on with interval 2's.
	assert_equal "$(jq -s -c '[.[] | select(.type == "container" and .seq == 2 and .state == "running")] | length' <<< "$output")" 7
	assert_equal "$(jq -s '[.[] | select(.type == "container") | .energy_uj] | add' <<< "$output")" 24000
}

@test "--state with an empty input is an error that advances nothing" {
	local S=$BATS_TEST_TMPDIR/ag.state
	process 1 package 1 7 '"container_id":"a"'
	interval 1
	kp-aggregate --state "$S" < "$IN" > /dev/null
	cp "$S" "$BATS_TEST_TMPDIR/before"
	run -1 --separate-stderr kp-aggregate --state "$S" < /dev/null
	assert_equal "$stderr" "kp-aggregate: <stdin>: empty input: the stage before failed; $S is not advanced"
	cmp "$S" "$BATS_TEST_TMPDIR/before"
	# Without --state, an empty input is an empty output.
	run -0 --separate-stderr kp-aggregate < /dev/null
	assert_output ""
}

@test "a long-running --state run commits each interval, at most once a second" {
	local S=$BATS_TEST_TMPDIR/ag.state fifo=$BATS_TEST_TMPDIR/fifo
	local out=$BATS_TEST_TMPDIR/out pid
	process 1 package 1 7 '"container_id":"a"'
	interval 1
	mkfifo "$fifo"
	kp-aggregate --level container --state "$S" < "$fifo" > "$out" &
	pid=$!
	exec 9> "$fifo"
	cat "$IN" >&9
	# Interval 1 is out: its state is already in place, the run going on.
	until grep -q '"type":"interval"' "$out"; do sleep 0.05; done
	kill -0 "$pid"
	assert_equal "$(jq -c '.data.levels.container_id.groups' "$S")" \
	    '[{"id":"\"a\"","totals":{"package":7}}]'
	kill -KILL "$pid"
	exec 9>&-
	wait "$pid" || true
	# A next run goes on from it.
	: > "$IN"
	process 2 package 1 3 '"container_id":"a"'
	interval 2
	run -0 --separate-stderr kp-aggregate --level container --state "$S" < "$IN"
	assert_equal "$(jq -c 'select(.type == "container") | .total_uj' <<< "$output")" 10
}

@test "a group stored twice in the state file keeps its first pod; nothing leaks" {
	# Found by tests/fuzz/aggstate.c: the second pod replaced the first
	# without freeing it.
	local S=$BATS_TEST_TMPDIR/ag.state vg=()
	printf '{"kind":"kp-aggregate","version":1,"boot_id":"%s","data":{"levels":{"container_id":{"groups":[{"id":"\\"a\\"","totals":{"package":5},"pod":"\\"p1\\""},{"id":"\\"a\\"","totals":{"package":5},"pod":"\\"p2\\""}],"host":{}}},"members":{}}}\n' \
	    "$(cat /proc/sys/kernel/random/boot_id)" > "$S"
	process 1 package 1 7 '"container_id":"a"'
	interval 1
	[ "${KP_SANITIZE:-}" = 1 ] || vg=(valgrind -q --leak-check=full \
	    --errors-for-leak-kinds=definite --error-exitcode=99)
	run -0 --separate-stderr "${vg[@]}" kp-aggregate --level container \
	    --state "$S" < "$IN"
	assert_equal "$(jq -c 'select(.type == "container") | [.pod_id, .total_uj]' <<< "$output")" '["p1",12]'
}

@test "a member stored twice in the state file counts once, in the group it was stored in last, as a JSON object keeps it; nothing leaks" {
	local S=$BATS_TEST_TMPDIR/ag.state vg=()
	printf '{"kind":"kp-aggregate","version":1,"boot_id":"%s","data":{"levels":{"container_id":{"groups":[{"id":"\\"a\\"","totals":{"package":5}},{"id":"\\"b\\"","totals":{"package":6}}],"host":{}}},"members":{"1:1":{"container_id":"\\"a\\""},"1:1":{"container_id":"\\"b\\""}}}}\n' \
	    "$(cat /proc/sys/kernel/random/boot_id)" > "$S"
	# an interval without process 1: its groups stay as they were
	process 1 package 2 7
	interval 1
	[ "${KP_SANITIZE:-}" = 1 ] || vg=(valgrind -q --leak-check=full \
	    --errors-for-leak-kinds=definite --error-exitcode=99)
	run -0 --separate-stderr "${vg[@]}" kp-aggregate --level container \
	    --state "$S" < "$IN"
	assert_equal "$stderr" ""
	# a group without a live member is not stored: a is gone, b is kept
	assert_equal "$(jq -c '.data.levels.container_id.groups | map(.id)' "$S")" '["\"b\""]'
	assert_equal "$(jq -c '.data.members["1:1"]' "$S")" '{"container_id":"\"b\""}'
}

# Exited records (kp-aggregate(1), "Exited records"), as kp-attribute
# writes them.

# exited SEQ ZONE PPID UJ [extra JSON members]
exited() {
	printf '{"type":"exited","seq":%s,"zone":"%s","count":3,"ppid":%s,"comm":"sh","cpu_us":5,"energy_uj":%s%s}\n' \
	    "$1" "$2" "$3" "$4" "${5:+,$5}" >> "$IN"
}

@test "exited records are summed into their groups at every level, and into the host" {
	process 1 package 1 7 '"container_id":"a","pod_id":"p1","unit":"u.service"'
	exited 1 package 1 3 '"container_id":"a","pod_id":"p1","unit":"u.service"'
	exited 1 package 1 2 '"unit":"u.service"'
	exited 1 dram 1 4
	interval 1
	run -0 --separate-stderr kp-aggregate --by comm < "$IN"
	sums() {
		jq -r "select(.type == \"$1\") | \"\(.zone) \(.processes) \(.cpu_us) \(.energy_uj) \(.state)\"" <<< "$output" | tr '\n' ','
	}
	# processes counts process records; CPU time and energy count all.
	assert_equal "$(sums container)" "package 1 15 10 running,"
	assert_equal "$(sums pod)" "package 1 15 10 running,"
	assert_equal "$(sums unit)" "package 1 20 12 running,"
	assert_equal "$(jq -r 'select(.type == "host") | "\(.level) \(.zone) \(.processes) \(.energy_uj)"' <<< "$output" | tr '\n' ',')" \
	    "container dram 0 4,container package 0 2,pod dram 0 4,pod package 0 2,vm dram 0 4,vm package 1 12,unit dram 0 4,unit package 0 0,comm dram 0 0,comm package 0 0,"
	# --by comm: "sh" has no live process, only exited records.
	assert_equal "$(jq -r 'select(.type == "group") | "\(.zone) \(.comm) \(.processes) \(.energy_uj) \(.state)"' <<< "$output" | tr '\n' ',')" \
	    "dram sh 0 4 terminated,package p 1 7 running,package sh 0 5 terminated,"
	# Passed on as they came.
	assert_equal "$(grep -c '"type":"exited"' <<< "$output")" 3
}

@test "an exited record never ends a group; a group only exited records name ends with their interval" {
	local S=$BATS_TEST_TMPDIR/ag.state
	process 1 package 1 7 '"container_id":"a","state":"running"'
	exited 1 package 1 3 '"container_id":"a"'
	exited 1 package 1 2 '"container_id":"b"'
	interval 1
	exited 2 package 1 4 '"container_id":"a"'
	exited 2 package 1 6 '"container_id":"b"'
	interval 2
	run -0 --separate-stderr kp-aggregate --level container --state "$S" < "$IN"
	assert_equal "$(jq -r 'select(.type == "container") | "\(.seq) \(.container_id) \(.processes) \(.energy_uj) \(.total_uj) \(.state)"' <<< "$output" | tr '\n' ',')" \
	    "1 a 1 10 10 running,1 b 0 2 2 terminated,2 a 0 4 14 running,2 b 0 6 6 terminated,"
	# Only a, with its live member, is kept.
	assert_equal "$(jq -c '[.data.levels.container_id.groups[].id]' "$S")" '["\"a\""]'
	assert_equal "$(jq -c '.data.members | keys' "$S")" '["1:1"]'
	# a's member ends: a ends with it, exited records or not.
	: > "$IN"
	process 3 package 1 0 '"container_id":"a","state":"terminated"'
	exited 3 package 1 1 '"container_id":"a"'
	interval 3
	run -0 --separate-stderr kp-aggregate --level container --state "$S" < "$IN"
	assert_equal "$(jq -r 'select(.type == "container") | "\(.container_id) \(.energy_uj) \(.total_uj) \(.state)"' <<< "$output")" \
	    "a 1 15 terminated"
	assert_equal "$(jq -c '.data.levels.container_id.groups' "$S")" '[]'
}

@test "a dense stream: exited records keep no group alive" {
	printf '{"type":"node","seq":%s,"zone":"package","energy_uj":100,"dense":true}\n' 1 >> "$IN"
	process 1 package 1 7 '"container_id":"a"'
	interval 1
	printf '{"type":"node","seq":%s,"zone":"package","energy_uj":100,"dense":true}\n' 2 >> "$IN"
	exited 2 package 1 3 '"container_id":"a"'
	interval 2
	run -0 --separate-stderr kp-aggregate --level container < "$IN"
	# No process of a in dense interval 2: it ended, with the exited energy.
	assert_equal "$(jq -c 'select(.type == "container") | [.seq, .processes, .energy_uj, .total_uj, .state]' <<< "$output" | tr '\n' ' ')" \
	    '[1,1,7,7,"running"] [2,0,3,10,"terminated"] '
}

@test "exited records: --drop-processes drops them too; without a zone they pass on unsummed" {
	process 1 package 1 7 '"container_id":"a"'
	exited 1 package 1 3 '"container_id":"a"'
	echo '{"type":"exited","seq":1,"count":3,"ppid":1,"comm":"sh","cpu_us":5,"container_id":"a"}' >> "$IN"
	interval 1
	run -0 --separate-stderr kp-aggregate --level container --drop-processes < "$IN"
	assert_equal "$(jq -c 'select(.type == "container") | [.energy_uj, .cpu_us]' <<< "$output")" '[10,15]'
	# The one kp-attribute has not seen is not its to drop either.
	assert_equal "$(grep '"type":"exited"' <<< "$output")" \
	    '{"type":"exited","seq":1,"count":3,"ppid":1,"comm":"sh","cpu_us":5,"container_id":"a"}'
}

@test "an exited record without energy, or whose energy takes a sum past 2^60, is rejected whole" {
	process 1 package 1 1152921504606846969 '"container_id":"a"'
	echo '{"type":"exited","seq":1,"zone":"package","count":3,"ppid":1,"comm":"sh","cpu_us":5}' >> "$IN"
	exited 1 package 1 8 '"container_id":"a"'
	exited 1 package 1 8 '"container_id":"b"'
	interval 1
	run -3 --separate-stderr kp-aggregate --level container < "$IN"
	assert_equal "$stderr" 'kp-aggregate: <stdin>:3: exited record with a "zone" but without an integer "energy_uj"
kp-aggregate: <stdin>:4: exited record whose energy_uj or cpu_us takes a sum past 2^60 or a total past 2^63-1'
	# jq reads integers as doubles: these are compared as text.
	assert_equal "$(grep -o '"type":"container".*"energy_uj":[0-9]*' <<< "$output" | sed 's/.*"container_id":"\([a-z]\)".*"energy_uj":/\1 /' | tr '\n' ',')" \
	    "a 1152921504606846969,b 8,"
}

@test "an interval cut short keeps no group that only exited records named" {
	local S=$BATS_TEST_TMPDIR/ag.state
	process 1 package 1 7 '"container_id":"a"'
	exited 1 package 1 3 '"container_id":"b"'
	# Interval 1 has no interval record: interval 2 cuts it short.
	process 2 package 1 3 '"container_id":"a"'
	interval 2
	run -3 --separate-stderr kp-aggregate --level container --state "$S" < "$IN"
	refute_output --partial '"container_id":"b","processes"'
	# Nor does a stream that ends inside one: c is not stored.
	: > "$IN"
	process 3 package 1 3 '"container_id":"a"'
	exited 3 package 1 3 '"container_id":"c"'
	run -3 --separate-stderr kp-aggregate --level container --state "$S" < "$IN"
	assert_equal "$(jq -c '[.data.levels.container_id.groups[].id]' "$S")" '["\"a\""]'
}

@test "with exited records, groups + host + unattributed = node - idle kept at every level; three --state runs are one" {
	"$KP_ROOT/scripts/kp-gen" --seed 6 --intervals 40 --processes 40 --churn 50 --exited 6 |
	    kp-attribute > "$IN"
	run -0 --separate-stderr kp-aggregate --by comm < "$IN"
	grep -q '"type":"exited"' <<< "$output"
	run jq -s -r '
	    group_by([.seq, .zone])[] | select(.[0].zone != null) |
	    (map(select(.type == "node"))[0]) as $n |
	    (map(select(.type == "unattributed"))[0].energy_uj) as $u |
	    (map(select(.type == "process" or .type == "exited") | .energy_uj) | add) as $p |
	    (["container", "pod", "vm", "unit", "comm"][]) as $l |
	    (map(select((.type == $l or (.type == "group" and .by == $l)) or (.type == "host" and .level == $l)) | .energy_uj) | add) as $sum |
	    select($sum != $p or $sum + $u != $n.energy_uj - $n.idle_kept_uj) |
	    "broken at \(.[0].seq) \(.[0].zone) \($l)"' <<< "$output"
	assert_output ""
	run -0 kp-aggregate --by comm --drop-processes < "$IN"
	one=$(printf '%s\n' "$output" | grep -v '"type":"header"')
	S=$BATS_TEST_TMPDIR/ag.state
	chain=
	for part in '1,10' '11,20' '21,40'; do
		jq -c --argjson r "[$part]" 'select(.seq >= $r[0] and .seq <= $r[1])' "$IN" > "$BATS_TEST_TMPDIR/part"
		run -0 kp-aggregate --by comm --drop-processes --state "$S" < "$BATS_TEST_TMPDIR/part"
		chain+=$output$'\n'
	done
	assert_equal "$one" "${chain%$'\n'}"
}

@test "a process whose record names another cgroup moves there from that record on; its earlier sums stay (kp-aggregate(1), Members)" {
	# rapl-read -- CMD's command: seen once in rapl-read's cgroup, then
	# in the cgroup it was moved to before its exec.
	process 1 package 7 100 '"cgroup":"/rr"'
	process 1 package 8 1 '"cgroup":"/rr"'
	interval 1
	process 2 package 7 40 '"cgroup":"/kp-command-7"'
	process 2 package 8 1 '"cgroup":"/rr"'
	interval 2
	process 3 package 7 2 '"cgroup":"/kp-command-7","state":"terminated"'
	interval 3
	run -0 --separate-stderr kp-aggregate --by cgroup --drop-processes < "$IN"
	run -0 jq -c 'select(.type == "group") | [.seq, .cgroup, .processes, .energy_uj, .total_uj, .state]' <<< "$output"
	assert_output - <<-'OUT'
	[1,"/rr",2,101,101,"running"]
	[2,"/kp-command-7",1,40,40,"running"]
	[2,"/rr",1,1,102,"running"]
	[3,"/kp-command-7",1,2,42,"terminated"]
	OUT
}

# gpu_process SEQ DEVICE PID UJ GPU_US [extra JSON members]: a GPU zone's
# process record, as kp-attribute writes it (kp-attribute(1), GPU zones)
gpu_process() {
	printf '{"type":"process","seq":%s,"zone":"gpu","device":"%s","uuid":"GPU-%s","pid":%s,"starttime":1,"comm":"p","gpu_us":{"%s":%s},"energy_uj":%s%s}\n' \
	    "$1" "$2" "$2" "$3" "$2" "$5" "$4" "${6:+,$6}" >> "$IN"
}

@test "GPU energy rolls into containers, pods and vms per device, conserved" {
	gpu_process 1 0 1 7001 400 '"container_id":"a","pod_id":"p1"'
	gpu_process 1 0 2 5003 300 '"container_id":"b","pod_id":"p1"'
	gpu_process 1 0000:03:00.0 1 11 9 '"container_id":"a","pod_id":"p1"'
	gpu_process 1 0 3 13 1 '"vm_id":"qemu-1-guest"'
	process 1 package 1 17 '"container_id":"a","pod_id":"p1"'
	interval 1
	run --separate-stderr kp-aggregate --level container,pod,vm < "$IN"
	assert_success
	assert_equal "$stderr" ""
	run -0 bash -c 'printf "%s\n" "$1" | jq -rc "select(.type == \"container\" or .type == \"pod\" or .type == \"vm\") | [.type, .zone, .device, .uuid, .energy_uj, .gpu_us, .cpu_us]"' _ "$output"
	assert_output - <<'OUT'
["container","gpu","0","GPU-0",7001,{"0":400},null]
["container","gpu","0","GPU-0",5003,{"0":300},null]
["container","gpu","0000:03:00.0","GPU-0000:03:00.0",11,{"0000:03:00.0":9},null]
["container","package",null,null,17,null,10]
["pod","gpu","0","GPU-0",12004,{"0":700},null]
["pod","gpu","0000:03:00.0","GPU-0000:03:00.0",11,{"0000:03:00.0":9},null]
["pod","package",null,null,17,null,10]
["vm","gpu","0","GPU-0",13,{"0":1},null]
OUT
}

@test "each device's groups and host add up to its processes, at every level" {
	for k in 1 2 3; do
		gpu_process $k 0 1 $((7919 * k)) 500 '"container_id":"a","pod_id":"p1"'
		gpu_process $k 0 2 104729 250 '"pod_id":"p2"'
		gpu_process $k 1 2 $((k * 13)) 3
		gpu_process $k 1 3 1299709 1 '"container_id":"c","vm_id":"v"'
		interval $k
	done
	run --separate-stderr kp-aggregate < "$IN"
	assert_success
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/out"
	# Per interval, level and device: groups + host = processes.
	run -0 jq -rs '
	    [.[] | select(.zone == "gpu")] as $r |
	    [$r[] | select(.type == "host") | [.seq, .level, .device]] |
	    unique[] as [$s, $l, $d] |
	    ([$r[] | select(.type == "process" and .seq == $s and .device == $d) | .energy_uj] | add) as $p |
	    ([$r[] | select(.seq == $s and .device == $d and (.type == $l or (.type == "host" and .level == $l))) | .energy_uj] | add) as $g |
	    select($p != $g) | "\($s) \($l) \($d): \($g) != \($p)"' "$BATS_TEST_TMPDIR/out"
	assert_output ""
	run -0 jq -rs '[.[] | select(.type == "container" and .device == "0")] | last.total_uj' "$BATS_TEST_TMPDIR/out"
	assert_output $((7919 * 6))
}

@test "a GPU group's totals go on across --state runs, kept per device" {
	S=$BATS_TEST_TMPDIR/agg.state
	gpu_process 1 0 1 1000 5 '"container_id":"a"'
	gpu_process 1 1 1 30 5 '"container_id":"a"'
	interval 1
	run -0 kp-aggregate --level container --state "$S" < "$IN"
	echo '{"type":"header","seq":0,"version":"1.2","producer":"test"}' > "$IN"
	gpu_process 2 0 1 500 5 '"container_id":"a"'
	interval 2
	run -0 kp-aggregate --level container --state "$S" < "$IN"
	run -0 bash -c 'printf "%s\n" "$1" | jq -rc "select(.type == \"container\") | [.device, .total_uj]"' _ "$output"
	assert_output '["0",1500]'
	run -0 jq -c '[.. | objects | select(has("gpu/1")) | ."gpu/1"] | unique' "$S"
	assert_output '[30]'
}

# One interval of 2,500 processes out of kp-attribute: its output passes a
# mebibyte.
big_interval() {
	"$KP_ROOT/scripts/kp-gen" --seed 5 --intervals 1 --processes 2500 \
	    --dense 1 | kp-attribute > "$IN"
	[ "$(wc -c < "$IN")" -gt $((1 << 20)) ]
}

@test "--state: an interval's output past a MiB waits in TMPDIR, and goes out as it would without --state" {
	big_interval
	state_spool_same kp-aggregate
}

@test "--state: an output spool that cannot be written is status 1 before any record of the interval, the state not advanced (kp-aggregate(1), EXIT STATUS)" {
	big_interval
	kp-aggregate --state "$BATS_TEST_TMPDIR/st" < "$IN" > /dev/null
	cp "$BATS_TEST_TMPDIR/st" "$BATS_TEST_TMPDIR/before"
	state_spool_missing kp-aggregate
	cmp "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/st"
	# A full disk under the spool, as a file size limit makes it.
	run -1 --separate-stderr bash -o pipefail -c \
	    '(trap "" XFSZ; ulimit -f 512; exec kp-aggregate --state "$1" < "$2") | cat' \
	    _ "$BATS_TEST_TMPDIR/st" "$IN"
	assert_equal "$stderr" "kp-aggregate: spooling an interval to \$TMPDIR: File too large"
	assert_equal "$output" ""
	cmp "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/st"
}
