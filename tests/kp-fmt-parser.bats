#!/usr/bin/env bats
# kp-fmt reads records with a parser of its own: it must take what jansson
# takes, reject what it rejects, and write numbers as before.

load test_helper

# A record line with field x set to the JSON text $1.
rec_with() {
	printf '{"type":"process","seq":1,"zone":"package","pid":1,"comm":"c","x":%s,"watts":%s}\n' "$1" "${2:-1.5}"
}

@test "reals are written as the shortest %.15g to %.17g that reads back" {
	local vals=(35.0 4.5 0.084375 40.99840106715518 0.1 0.30000000000000004
	    123456789012345.0 1234567890123456.7 0.0001 0.00001 1e-5 2.5E3 -0.5
	    -0.0 0.0 100 1e300 0.000123456789012345 99999999999999.99 3.14159)
	local v want got
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
{"type":"process","seq":1,"comm":"a\"b\\c\/d\te\u00e9\u20ac\ud83d\ude00é"}
EOF2
	assert_output "$(printf '"a""b\\c/d\te\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xc3\xa9"')"
}

@test "valid JSON in any layout is read, nested values included" {
	run -0 --separate-stderr kp-fmt -f csv -H -o seq,type,pid,comm <<'EOF2'
  {  "type" : "process" , "seq" : 1 , "pid" : 7 , "comm" : "x" , "a" : [1, {"b": [true, null, -0.5e-3]}], "o": {} }  
{"type":"process","seq":2,"pid":8,"comm":"y","n":null,"t":true,"f":false,"e":[]}
{"seq":3,"type":"process","pid":9,"comm":"z"}
EOF2
	assert_output - <<'EOF2'
1,process,7,x
2,process,8,y
3,process,9,z
EOF2
	assert_equal "$stderr" ""
}

# A record whose field "x" is $1 arrays, one inside the other.
nested_record() {
	python3 -c 'import sys
n = int(sys.argv[1])
print("{\"type\":\"future\",\"seq\":1,\"x\":" + "[" * n + "]" * n + "}")' "$1"
}

@test "values nested as deep as jansson takes are read; deeper, its message" {
	local n line
	# 2047 arrays in the record's object: jansson's limit of 2048 levels.
	for n in 70 2047; do
		line=$(nested_record "$n")
		run -0 --separate-stderr kp-fmt -f json <<<"$line"
		assert_equal "$output" "$line"
		assert_equal "$stderr" ""
	done
	run -3 --separate-stderr kp-fmt -f json < <(nested_record 2048)
	assert_output ""
	assert_equal "$stderr" "kp-fmt: <stdin>:1: not JSON: maximum parsing depth reached near '['"
}

@test "a record of many keys and an interval of many zones are read whole" {
	local big=$BATS_TEST_TMPDIR/big f
	# Past 32 keys a record's keys are sorted to find duplicates, and the
	# zones with node records are found once per interval; how long that
	# takes is not a test's business, what it finds is.
	python3 -c 'print("{\"type\":\"future\",\"seq\":1," + ",".join("\"k%d\":%d" % (i, i) for i in range(5000)) + "}")' >"$big"
	kp-fmt -f json <"$big" >"$big.out"
	cmp "$big" "$big.out"
	sed 's/"k4999":/"k17":/' "$big" >"$big.dup"
	run -3 --separate-stderr kp-fmt -f json <"$big.dup"
	assert_output ""
	assert_regex "$stderr" "^kp-fmt: <stdin>:1: .*duplicate object key"
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

@test "what jansson rejects is rejected, with its message and line" {
	local bad=(
	    '{"type":"process","seq":1,}'
	    '{"type":"process","seq":1'
	    '{"type":"process","seq":01}'
	    '{"type":"process","seq":1,"x":1.}'
	    '{"type":"process","seq":1,"x":"\q"}'
	    '{"type":"process","seq":1,"x":"\ud800"}'
	    '{"type":"process","seq":1,"x":"a\u0000b"}'
	    '{"type":"process","seq":1,"x":99999999999999999999}'
	    '{"type":"process","seq":1,"x":1e999}'
	    '{"type":"process","seq":1,"x":[1,]}'
	    '{"type":"process","seq":1,"x":tru}'
	    '{"type":"process","seq":1} x'
	    '{"type":"process","seq":1,"seq":2}'
	    "$(printf '{"type":"process","seq":1,"x":"\xff"}')"
	    "$(printf '{"type":"process","seq":1,"x":"a\tb"}')"
	)
	local line
	for line in "${bad[@]}"; do
		run -3 --separate-stderr kp-fmt -f csv -H <<<"$line"
		assert_output ""
		[[ $stderr == "kp-fmt: <stdin>:1: not JSON: "* ]] ||
		    fail "for $line: $stderr"
	done
	run -3 --separate-stderr kp-fmt -f csv -H <<<'[1, 2]'
	assert_equal "$stderr" "kp-fmt: <stdin>:1: not a JSON object"
	run -3 --separate-stderr kp-fmt -f csv -H <<<'{"seq":1}'
	assert_equal "$stderr" 'kp-fmt: <stdin>:1: record without a string "type"'
	run -3 --separate-stderr kp-fmt -f csv -H <<<'{"type":"node","seq":-1}'
	assert_equal "$stderr" 'kp-fmt: <stdin>:1: record without a non-negative integer "seq"'
	run -3 --separate-stderr kp-fmt -f csv -H <<<'{"type":"node","seq":1.0}'
	assert_equal "$stderr" 'kp-fmt: <stdin>:1: record without a non-negative integer "seq"'
}

@test "json passes a valid line through unchanged, however it is written" {
	local line='{ "type":"node" ,"seq":1,"x":"\u00e9\/", "y": 1.50 }'
	run -0 kp-fmt -f json <<<"$line"
	assert_output "$line"
}

@test "the benchmark runs and reports ratios to jq" {
	run -0 "$KP_ROOT/scripts/bench-fmt" 2000
	assert_line -n 0 --regexp '^bench-fmt: 2000 records of [0-9]+ intervals of kp-gen$'
	assert_line -n 1 --regexp '^jq -c \. \(baseline\) +[0-9.]+ ms +[0-9]+ records/s +1\.00x jq$'
	assert_line -n 2 --regexp '^kp-fmt -f csv +[0-9.]+ ms +[0-9]+ records/s +[0-9.]+x jq$'
	assert_line -n 3 --regexp '^kp-fmt -f prometheus +[0-9.]+ ms +[0-9]+ records/s +[0-9.]+x jq$'
}
