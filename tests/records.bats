#!/usr/bin/env bats
# One set of rules for every stage: each case of tests/records.cases runs
# through every stage that reads a stream, and each stage must take the
# decision the case expects of it, with the same message.

load test_helper

STAGES="proc-cputime kp-attribute kp-aggregate kp-fmt"

# The lines that the cases name with @X: a header, and the energy, cpu,
# proc and interval records of interval N.
macro() {
	local n=${1#@?}
	case $1 in
	@H) echo '{"type":"header","seq":0,"version":"1.1","producer":"test"}' ;;
	@E*) echo '{"type":"energy","seq":'"$n"',"zone":"package","energy_uj":1000000,"watts":1.0,"source":"powercap","estimated":false,"sockets":1}' ;;
	@C*) echo '{"type":"cpu","seq":'"$n"',"cpu_us":1000000,"total_cpu_us":2000000,"usage_ratio":0.5}' ;;
	@P*) echo '{"type":"proc","seq":'"$n"',"pid":100,"starttime":5,"comm":"p","cpu_us":400000,"state":"running","cgroup":"/","kind":"host"}' ;;
	@I*) echo '{"type":"interval","seq":'"$n"',"dt_us":1000000}' ;;
	*) echo "records.bats: unknown macro $1" >&2; return 1 ;;
	esac
}

run_stage() {
	case $1 in
	proc-cputime) proc-cputime --proc "$FIXTURES/proc-basic" ;;
	kp-attribute) kp-attribute --proc "$FIXTURES/proc-basic" ;;
	kp-aggregate) kp-aggregate ;;
	kp-fmt) kp-fmt -f json ;;
	esac
}

# A case's line: a macro, with <CR> made a carriage return and <xHH> the
# byte HH.
case_line() {
	local text=$1 cr= byte
	case $text in *'<CR>') cr=$'\r' text=${text%<CR>} ;; esac
	while [[ $text =~ \<x([0-9a-f]{2})\> ]]; do
		printf -v byte "\\x${BASH_REMATCH[1]}"
		text=${text//"<x${BASH_REMATCH[1]}>"/$byte}
	done
	case $text in @*) text=$(macro "$text") || return 1 ;; esac
	printf '%s%s\n' "$text" "$cr"
}

# check_case STAGE: the case read so far ($name, $in, $pass, $want),
# run through STAGE; a mismatch is added to $failures.
check_case() {
	local stage=$1 expect=${want[$1]} out err status line text
	out=$BATS_TEST_TMPDIR/out err=$BATS_TEST_TMPDIR/err
	run_stage "$stage" < "$in" > "$out" 2> "$err" && status=0 || status=$?
	if [ "$expect" = ok ]; then
		if [ "$status" -ne 0 ] || grep -q '<stdin>:' "$err"; then
			failures+="$name: $stage: status $status, wanted 0: $(cat "$err")"$'\n'
		elif [ "$stage" != kp-fmt ]; then
			while IFS= read -r line; do
				grep -qxF -- "$line" "$out" ||
				    failures+="$name: $stage: did not pass on $line"$'\n'
			done < "$pass"
		fi
		check_texts "$stage"
		return 0
	fi
	line=${expect#3 } line=${line%% *} text=${expect#3 "$line" }
	if [ "$status" -ne 3 ] ||
	    ! grep -qxF -- "$stage: <stdin>:$line: $text" "$err"; then
		failures+="$name: $stage: status $status, wanted 3 and '$stage: <stdin>:$line: $text'; got: $(cat "$err")"$'\n'
	fi
}

# check_texts STAGE: the lines a stage that accepts the case must write
# ($holds) and must not ($lacks), kp-fmt's included.
check_texts() {
	local text
	while IFS= read -r text; do
		[ -z "$text" ] || grep -qF -- "$text" "$out" ||
		    failures+="$name: $stage: wrote no line holding $text"$'\n'
	done <<<"${holds[$1]}"
	while IFS= read -r text; do
		[ -z "$text" ] || ! grep -qF -- "$text" "$out" ||
		    failures+="$name: $stage: wrote a line holding $text"$'\n'
	done <<<"${lacks[$1]}"
}

# add_text ARRAY STAGES TEXT
add_text() {
	local -n texts=$1
	local s
	for s in ${2//,/ }; do
		[ "$s" != all ] || s=$STAGES
		for s in $s; do texts[$s]+="$3"$'\n'; done
	done
}

# set_want STAGES DECISION
set_want() {
	local s
	for s in ${1//,/ }; do
		if [ "$s" = all ]; then
			for s in $STAGES; do want[$s]=$2; done
		else
			want[$s]=$2
		fi
	done
}

# run_cases STAGE...: every case of the table through each STAGE.
run_cases() {
	local raw stage
	declare -A want holds lacks
	name= failures= cases=0 rejects=0
	in=$BATS_TEST_TMPDIR/in pass=$BATS_TEST_TMPDIR/pass
	while IFS= read -r raw || [ -n "$raw" ]; do
		case $raw in
		'case '*) name=${raw#case } ; : > "$in" ; : > "$pass"
			want=() holds=() lacks=() ;;
		'>> '*) case_line "${raw#>> }" >> "$in"
			case_line "${raw#>> }" | tr -d '\r' >> "$pass" ;;
		'>'*) raw=${raw#>} ; case_line "${raw# }" >> "$in" ;;
		'= '*) raw=${raw#= } ; set_want "${raw%% *}" "${raw#* }" ;;
		'=~ '*) raw=${raw#=~ } ; add_text holds "${raw%% *}" "${raw#* }" ;;
		'=! '*) raw=${raw#=! } ; add_text lacks "${raw%% *}" "${raw#* }" ;;
		'')
			[ -n "$name" ] || continue
			for stage in "$@"; do
				check_case "$stage"
				case ${want[$stage]} in 3*) rejects=$((rejects + 1)) ;; esac
			done
			cases=$((cases + 1)) name= ;;
		esac
	done < <(cat "$KP_ROOT/tests/records.cases"; echo)
}

@test "records.cases: every case has a decision for every stage" {
	run_cases
	[ "$cases" -ge 50 ]
	run -0 awk '/^case / { n++ } /^= all / { a++ } END { exit !(n == a) }' \
	    "$KP_ROOT/tests/records.cases"
}

@test "records.cases: the table rejects as many lines as a careful reader must" {
	# A table where every stage accepts everything must fail.
	run_cases proc-cputime
	[ "$rejects" -ge 40 ]
}

@test "proc-cputime takes each case's expected decision" {
	run_cases proc-cputime
	[ -z "$failures" ] || { printf '%s' "$failures"; false; }
	[ "$cases" -ge 50 ]
}

@test "kp-attribute takes each case's expected decision" {
	run_cases kp-attribute
	[ -z "$failures" ] || { printf '%s' "$failures"; false; }
	[ "$cases" -ge 50 ]
}

@test "kp-aggregate takes each case's expected decision" {
	run_cases kp-aggregate
	[ -z "$failures" ] || { printf '%s' "$failures"; false; }
	[ "$cases" -ge 50 ]
}

@test "kp-fmt takes each case's expected decision" {
	run_cases kp-fmt
	[ -z "$failures" ] || { printf '%s' "$failures"; false; }
	[ "$cases" -ge 50 ]
}

@test "text that is not kp records brings every stage one message and status 3, not one per line" {
	# kp-records(5), "Rules every reader applies": a first line that is
	# not a JSON object.  ls -l's lines, as the kernel's ls writes them.
	local stage
	printf '%s\n' 'total 12' \
	    'drwxr-xr-x  2 root root 4096 Nov 27 09:12 bin' \
	    'drwxr-xr-x  4 root root 4096 Nov 27 09:12 boot' \
	    'drwxr-xr-x 17 root root 3260 Nov 27 09:12 dev' \
	    > "$BATS_TEST_TMPDIR/in"
	for stage in $STAGES; do
		run -3 --separate-stderr run_stage "$stage" < "$BATS_TEST_TMPDIR/in"
		assert_equal "$stderr" "$stage: <stdin>:1: not kp records: not a JSON object, and no record before it (kp-records(5))"
		assert_output ""
	done
}

# A rejected line is neither passed on nor counted, in the ordering either:
# what a stage passes on, the stage after reads with the same ordering.

# pass_on_case STAGE NEXT...: the stream in $BATS_TEST_TMPDIR/in through
# STAGE, which must say $want (its lines joined by newlines) and exit 3;
# its output through each NEXT, which must say nothing and exit 0.
pass_on_case() {
	local stage=$1 next
	shift
	run -3 --separate-stderr run_stage "$stage" < "$BATS_TEST_TMPDIR/in"
	assert_equal "$stderr" "$want"
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/out"
	for next in "$@"; do
		run -0 --separate-stderr run_stage "$next" < "$BATS_TEST_TMPDIR/out"
		assert_equal "$stderr" ""
	done
}

@test "a line rejected right after a header leaves the fresh baseline to the next record" {
	local stage
	{ macro @H; macro @E1; macro @I1; macro @E2; macro @I2; macro @H
	  echo '{"type":"note","seq":2}'; macro @E1; macro @C1; macro @I1
	} > "$BATS_TEST_TMPDIR/in"
	for stage in $STAGES; do
		run -3 --separate-stderr run_stage "$stage" < "$BATS_TEST_TMPDIR/in"
		assert_equal "$stderr" "$stage: <stdin>:7: note record of interval 2, which has ended: a replay or a disorder"
	done
}

@test "a record without its type's members moves no ordering: the stage after reads the same (fuzz: crash-attribute-after-header)" {
	local stage
	{ macro @H; macro @E1; macro @C1; macro @I1; macro @E2; macro @C2
	  macro @I2; macro @H
	  echo '{"type":"energy","seq":1,"zone":"package","watts":1.0}'
	  macro @I2; } > "$BATS_TEST_TMPDIR/in"
	for stage in proc-cputime kp-attribute kp-aggregate; do
		want="$stage: <stdin>:9: energy record without an integer \"energy_uj\""$'\n'"$stage: <stdin>:10: interval 2 ends after interval 2: a replay or a disorder"
		pass_on_case "$stage" kp-attribute kp-aggregate kp-fmt
	done
}

# 2^60, the most energy_uj one record holds (kp-records(5)): 8 of them
# sum past 2^63-1.
BIG=1152921504606846976

@test "a record that kp-attribute refuses, its sum past 2^63-1, moves no ordering" {
	local k
	{ macro @H
	  for k in $(seq 7); do
		macro "@E$k" | sed "s/\"energy_uj\":[0-9]*/\"energy_uj\":$BIG/"
		macro "@C$k"; macro "@I$k"
	  done
	  macro @H; macro @E1 | sed "s/\"energy_uj\":[0-9]*/\"energy_uj\":$BIG/"
	  macro @I7; } > "$BATS_TEST_TMPDIR/in"
	want="kp-attribute: <stdin>:24: energy record with a value that takes a sum past 2^60 or a total past 2^63-1"$'\n'"kp-attribute: <stdin>:25: interval 7 ends after interval 7: a replay or a disorder"
	pass_on_case kp-attribute kp-aggregate kp-fmt
}

@test "a record that kp-aggregate refuses, its sum past 2^63-1, moves no ordering" {
	local k p='{"type":"process","zone":"package","pid":1,"starttime":1,"comm":"p","cpu_us":1,"container_id":"a","energy_uj":'
	{ macro @H
	  for k in $(seq 7); do echo "${p}$BIG,\"seq\":$k}"; macro "@I$k"; done
	  macro @H; echo "${p}$BIG,\"seq\":1}"; macro @I7; } > "$BATS_TEST_TMPDIR/in"
	want="kp-aggregate: <stdin>:17: process record whose energy_uj or cpu_us takes a sum past 2^60 or a total past 2^63-1"$'\n'"kp-aggregate: <stdin>:18: interval 7 ends after interval 7: a replay or a disorder"
	pass_on_case kp-aggregate kp-fmt
}

# The limits, with lines too long for the table.
wide_record() {
	awk -v n="$1" 'BEGIN { printf "{\"type\":\"note\",\"seq\":1"
	    for (i = 3; i <= n; i++) printf ",\"k%d\":%d", i, i; print "}" }'
}

deep_record() {
	awk -v n="$1" 'BEGIN { printf "{\"type\":\"note\",\"seq\":1,\"d\":"
	    for (i = 2; i <= n; i++) printf "["; for (i = 2; i <= n; i++) printf "]"
	    print "}" }'
}

# limit_case LINE DECISION: LINE as line 2 of a stream, through every stage.
limit_case() {
	local stage status
	{ macro @H; printf '%s\n' "$1"; macro @I1; } > "$BATS_TEST_TMPDIR/in"
	for stage in $STAGES; do
		run_stage "$stage" < "$BATS_TEST_TMPDIR/in" > /dev/null \
		    2> "$BATS_TEST_TMPDIR/err" && status=0 || status=$?
		if [ "$2" = ok ]; then
			[ "$status" -eq 0 ] || { echo "$stage: $status"; cat "$BATS_TEST_TMPDIR/err"; return 1; }
		else
			[ "$status" -eq 3 ] && grep -qxF "$stage: <stdin>:2: $2" \
			    "$BATS_TEST_TMPDIR/err" ||
			    { echo "$stage: $status"; cat "$BATS_TEST_TMPDIR/err"; return 1; }
		fi
	done
}

@test "4096 members are read by every stage, 4097 are refused by every stage" {
	limit_case "$(wide_record 4096)" ok
	limit_case "$(wide_record 4097)" "more than 4096 members"
}

@test "64 levels of nesting are read by every stage, 65 are refused" {
	limit_case "$(deep_record 64)" ok
	limit_case "$(deep_record 65)" "nested deeper than 64 levels"
}

@test "a line of more than 16 MiB is refused by every stage, and the next is read" {
	local stage
	{ macro @H; printf '{"type":"note","seq":1,"x":"'
	  head -c 17000000 /dev/zero | tr '\0' a; printf '"}\n'
	  echo '{"type":"note","seq":1}'; macro @I1; } > "$BATS_TEST_TMPDIR/in"
	for stage in proc-cputime kp-attribute kp-aggregate; do
		run -3 --separate-stderr run_stage "$stage" < "$BATS_TEST_TMPDIR/in"
		assert_equal "$stderr" "$stage: <stdin>:2: a line longer than 16 MiB"
		assert_line '{"type":"note","seq":1}'
	done
	run -3 --separate-stderr kp-fmt -f json < "$BATS_TEST_TMPDIR/in"
	assert_equal "$stderr" "kp-fmt: <stdin>:2: a line longer than 16 MiB"
}
