#!/usr/bin/env bats
# kp-fmt reads records with lib's reader (kp-records(5)): it takes what the
# reader takes, rejects what it rejects with its message and line, and
# writes numbers and strings as before.

load test_helper

INTERVAL='{"type":"interval","seq":1,"dt_us":1000000}'

# A record line with field x set to the JSON text $1, and its interval.
rec_with() {
	printf '{"type":"process","seq":1,"zone":"package","pid":1,"comm":"c","energy_uj":0,"x":%s,"watts":%s}\n' "$1" "${2:-1.5}"
	printf '%s\n' "$INTERVAL"
}

@test "reals are written as the shortest %.15g to %.17g that reads back" {
	local vals=(35.0 4.5 0.084375 40.99840106715518 0.1 0.30000000000000004
	    123456789012345.0 1234567890123456.7 0.0001 0.00001 1e-5 2.5E3 5e-1
	    -0.0 0.0 100 1e300 0.000123456789012345 99999999999999.99 3.14159)
	local v want got
	# watts is a number of at least 0 (kp-records(5)): -0.5 is none.
	run -3 --separate-stderr kp-fmt -f csv -H -o watts < <(rec_with 0 -0.5)
	assert_equal "$stderr" 'kp-fmt: <stdin>:1: "watts" is not a number of at least 0'
	for v in "${vals[@]}"; do
		want=$(python3 -c '
import sys
v = float(sys.argv[1])
for p in (15, 16):
    s = "%.*g" % (p, v)
    if float(s) == v:
        break
else:
    s = "%.17g" % v
print(s)' "$v")
		got=$(rec_with 0 "$v" | kp-fmt -f csv -H -o watts)
		assert_equal "$got" "$want"
		# The same in a Prometheus gauge.
		got=$(rec_with 0 "$v" | kp-fmt -f prometheus | sed -n 's/^kepler_process_cpu_watts{.*} //p')
		assert_equal "$got" "$want"
	done
}

@test "strings: escapes, UTF-8 and surrogate pairs are decoded" {
	run -0 kp-fmt -f csv -H -o comm <<'EOF2'
{"type":"process","seq":1,"zone":"package","pid":1,"energy_uj":0,"comm":"a\"b\\c\/d\te\u00e9\u20ac\ud83d\ude00é"}
{"type":"interval","seq":1,"dt_us":1000000}
EOF2
	assert_output "$(printf '"a""b\\c/d\te\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xc3\xa9"')"
}

@test "valid JSON in any layout is read, nested values included" {
	run -0 --separate-stderr kp-fmt -f csv -H -o seq,type,pid,comm <<'EOF2'
  {  "type" : "process" , "seq" : 1 , "zone" : "package" , "pid" : 7 , "energy_uj" : 0 , "comm" : "x" , "a" : [1, {"b": [true, null, -0.5e-3]}], "o": {} }  
{ "dt_us" : 1000000 , "seq" : 1 , "type" : "interval" }
{"type":"process","seq":2,"zone":"package","pid":8,"energy_uj":0,"comm":"y","n":null,"t":true,"f":false,"e":[]}
{"type":"interval","seq":2,"dt_us":1000000}
{"seq":3,"type":"process","zone":"package","pid":9,"energy_uj":0,"comm":"z","big":99999999999999999999}
{"type":"interval","seq":3,"dt_us":1000000}
EOF2
	assert_output - <<'EOF2'
1,process,7,x
2,process,8,y
3,process,9,z
EOF2
	assert_equal "$stderr" ""
}

# A record whose field "x" is $1 arrays, one inside the other: a command
# record, which no stage reads a member of but the table's.
nested_record() {
	python3 -c 'import sys
n = int(sys.argv[1])
print("{\"type\":\"command\",\"seq\":1,\"x\":" + "[" * n + "]" * n + "}")' "$1"
}

@test "values nested as deep as the reader takes are read; deeper, its message" {
	local n line
	# 63 arrays in the record's object: the reader's limit of 64 levels.
	for n in 10 63; do
		line=$(nested_record "$n")
		run -0 --separate-stderr kp-fmt -f json -t command < <(printf '%s\n' "$line" "$INTERVAL")
		assert_equal "$output" "$line"
		assert_equal "$stderr" ""
	done
	run -3 --separate-stderr kp-fmt -f json -t command < <(nested_record 64; echo "$INTERVAL")
	assert_output ""
	assert_equal "$stderr" "kp-fmt: <stdin>:1: nested deeper than 64 levels"
}

@test "a record of many keys and an interval of many zones are read whole" {
	local big=$BATS_TEST_TMPDIR/big f
	# Past a few keys a record's keys are sorted to find duplicates, and
	# the zones with node records are found once per interval; how long
	# that takes is not a test's business, what it finds is.  4096
	# members: the reader's limit.
	python3 -c 'print("{\"type\":\"command\",\"seq\":1," + ",".join("\"k%d\":%d" % (i, i) for i in range(4094)) + "}")' >"$big"
	kp-fmt -f json -t command < <(cat "$big"; echo "$INTERVAL") >"$big.out"
	cmp "$big" "$big.out"
	sed 's/"k4093":/"k17":/' "$big" >"$big.dup"
	run -3 --separate-stderr kp-fmt -f json -t command < <(cat "$big.dup"; echo "$INTERVAL")
	assert_output ""
	assert_equal "$stderr" "kp-fmt: <stdin>:1: an object holds a key twice"
	sed 's/}$/,"k4094":1}/' "$big" >"$big.more"
	run -3 --separate-stderr kp-fmt -f json -t command < <(cat "$big.more"; echo "$INTERVAL")
	assert_output ""
	assert_equal "$stderr" "kp-fmt: <stdin>:1: more than 4096 members"
	python3 -c 'for i in range(5000): print("{\"type\":\"energy\",\"seq\":1,\"zone\":\"z%d\",\"energy_uj\":1000,\"watts\":1.0}" % i)
print("{\"type\":\"node\",\"seq\":1,\"zone\":\"z7\",\"energy_uj\":1000,\"watts\":1.0}")
print("{\"type\":\"interval\",\"seq\":1,\"dt_us\":1000000}")' >"$big"
	for f in prometheus table; do
		kp-fmt -f "$f" <"$big" >"$big.$f"
	done
	# The zone with a node record is shown once, from the node record.
	assert_equal "$(grep -c '^z7 ' "$big.table")" 1
	assert_equal "$(grep -c '^z' "$big.table")" 5000
	assert_equal "$(grep -c '^kepler_node_cpu_joules_total' "$big.prometheus")" 5000
}

@test "what the reader rejects is rejected, with its message and line" {
	# Each line, then the reader's message for it.
	local bad=(
	    '{"type":"process","seq":1,}'
	    "not JSON: a member must start with a string key"
	    '{"type":"process","seq":1'
	    "not JSON: the line ends inside the object"
	    '{"type":"process","seq":01}'
	    "not JSON: ',' or the end of an object or array is expected"
	    '{"type":"process","seq":1,"x":1.}'
	    "not JSON: a digit must follow '.'"
	    '{"type":"process","seq":1,"x":"\q"}'
	    "a string holds a bad escape"
	    '{"type":"process","seq":1,"x":"\ud800"}'
	    'a string holds a bad \u escape'
	    '{"type":"process","seq":1,"x":"a\u0000b"}'
	    'a string holds \u0000'
	    '{"type":"process","seq":1,"energy_uj":99999999999999999999}'
	    '"energy_uj" is not a non-negative integer'
	    '{"type":"process","seq":1,"x":1e999}'
	    "a number is out of range"
	    '{"type":"process","seq":1,"x":[1,]}'
	    "not JSON: a value is expected"
	    '{"type":"process","seq":1,"x":tru}'
	    "not JSON: a value is expected"
	    '{"type":"process","seq":1} x'
	    "not JSON: text after the object"
	    '{"type":"process","seq":1,"seq":2}'
	    "an object holds a key twice"
	    $'{"type":"process","seq":1,"x":"\xff"}'
	    "a string is not valid UTF-8"
	    $'{"type":"process","seq":1,"x":"a\tb"}'
	    "a string holds a control character"
	    '[1, 2]'
	    "not kp records: not a JSON object, and no record before it (kp-records(5))"
	    '{"seq":1}'
	    'record without a string "type"'
	    '{"type":"node","seq":-1}'
	    'record without a non-negative integer "seq"'
	    '{"type":"node","seq":1.0}'
	    'record without a non-negative integer "seq"'
	)
	local pair
	for ((pair = 0; pair < ${#bad[@]}; pair += 2)); do
		run -3 --separate-stderr kp-fmt -f csv -H < <(printf '%s\n' "${bad[pair]}" "$INTERVAL")
		assert_output ""
		assert_equal "$stderr" "kp-fmt: <stdin>:1: ${bad[pair + 1]}"
	done
}

@test "an empty object as the first line is rejected in every format" {
	# Its empty member list once reached memcpy as a NULL pointer, which
	# the sanitizer build (make check SANITIZE=1) reports as undefined.
	local f
	for f in table csv json prometheus top; do
		run -3 --separate-stderr kp-fmt -f "$f" < <(printf '{}\n')
		assert_equal "$stderr" 'kp-fmt: <stdin>:1: record without a string "type"'
	done
	run -3 --separate-stderr kp-fmt --summary < <(printf '{}\n')
	assert_equal "$stderr" 'kp-fmt: <stdin>:1: record without a string "type"'
}

@test "json passes a valid line through unchanged, however it is written" {
	local line='{ "type":"node" ,"seq":1,"zone" :"package","energy_uj": 0,"x":"\u00e9\/", "y": 1.50 }'
	run -0 kp-fmt -f json -t node < <(printf '%s\n' "$line" "$INTERVAL")
	assert_output "$line"
}

@test "the benchmark runs and reports ratios to jq" {
	run -0 --separate-stderr "$KP_ROOT/scripts/bench-fmt" 2000
	assert_line -n 0 --regexp '^bench-fmt: 2000 records of [0-9]+ intervals of kp-gen, median of 5 runs$'
	assert_line -n 1 --regexp '^jq -c \. \(baseline\) +[0-9.]+ ms +[0-9]+ records/s +1\.00x jq$'
	assert_line -n 2 --regexp '^kp-fmt -f csv +[0-9.]+ ms +[0-9]+ records/s +[0-9.]+x jq$'
	assert_line -n 3 --regexp '^kp-fmt -f prometheus +[0-9.]+ ms +[0-9]+ records/s +[0-9.]+x jq$'
	assert_line -n 4 --regexp '^kp-fmt --summary +[0-9.]+ ms +[0-9]+ records/s +[0-9.]+x jq$'
	# The stream it measures is valid: kp-fmt says nothing about it.
	assert_equal "$stderr" ""
}
