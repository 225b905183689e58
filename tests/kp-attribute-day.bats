#!/usr/bin/env bats
# A day of generated intervals with churn and exited records through
# kp-attribute and kp-aggregate: every identity holds at every interval and
# zone, and the final totals are the sums of the measured deltas, to the
# microjoule.

load test_helper

# An awk program that checks a kp-attribute | kp-aggregate stream interval
# by interval (streaming: jq -s would hold a day in memory), and prints the
# node totals, the number of intervals and of errors.
checker() {
	cat <<'AWK'
function num(key,   m) {
	if (!match($0, "\"" key "\":-?[0-9]+"))
		return "none"
	return substr($0, RSTART + length(key) + 3, RLENGTH - length(key) - 3) + 0
}
function str(key) {
	if (!match($0, "\"" key "\":\"[^\"]*\""))
		return ""
	return substr($0, RSTART + length(key) + 4, RLENGTH - length(key) - 5)
}
function bad(what) {
	if (errors++ < 10)
		print "seq " seq ": " what > "/dev/stderr"
}
{
	match($0, /"type":"[a-z_]+"/)
	type = substr($0, RSTART + 8, RLENGTH - 9)
	seq = num("seq")
}
type == "node" {
	z = str("zone"); e = num("energy_uj"); zones[z] = 1
	E[z] = e; K[z] = num("idle_kept_uj"); KA[z] += K[z]
	if (num("active_uj") + num("idle_uj") != e) bad("active + idle != energy in " z)
	if (num("total_uj") != NT[z] + e) bad("node total_uj in " z)
	NT[z] += e
	next
}
type == "process" {
	z = str("zone"); e = num("energy_uj"); k = num("pid") ":" num("starttime") ":" z
	P[z] += e; PA[z] += e
	if (e < 0) bad("negative energy of " k)
	t = num("total_uj")
	if (k in PT || str("state") != "terminated") {
		if (t != PT[k] + e) bad("process total_uj of " k)
	}
	PT[k] = t
	if (str("state") == "terminated") delete PT[k]
	next
}
type == "exited" {
	z = str("zone"); e = num("energy_uj"); X[z] += e; XA[z] += e
	if (num("total_uj") != "none" || num("pid") != "none")
		bad("an exited record with a total or a pid in " z)
	exited++
	next
}
type == "unattributed" {
	z = str("zone"); e = num("energy_uj"); U[z] += e
	if (num("total_uj") != UT[z] + e) bad("unattributed total_uj in " z)
	UT[z] += e
	next
}
type == "host" {
	z = str("zone"); l = str("level"); levels[l] = 1
	G[l, z] += num("energy_uj")
	next
}
type == "container" || type == "pod" || type == "vm" || type == "unit" || type == "group" {
	z = str("zone"); l = type == "group" ? str("by") : type
	G[l, z] += num("energy_uj")
	next
}
type == "interval" {
	for (z in E) {
		if (P[z] + X[z] + U[z] + K[z] != E[z])
			bad("process + exited + unattributed + idle kept != energy in " z)
		for (l in levels)
			if (G[l, z] + U[z] != E[z] - K[z])
				bad("groups + host + unattributed != node - idle kept at level " l " in " z)
	}
	for (z in E) { delete E[z]; delete P[z]; delete X[z]; delete U[z]; delete K[z] }
	for (l in levels) for (z in zones) delete G[l, z]
	intervals++
}
END {
	for (z in NT) {
		if (PA[z] + XA[z] + UT[z] + KA[z] != NT[z])
			bad("final: processes + exited + unattributed + idle kept != node total in " z)
		printf "total %s %.0f\n", z, NT[z]
	}
	print "intervals " intervals
	print "exited " (exited > 0 ? "some" : "none")
	print "errors " errors + 0
}
AWK
}

# The sums of the energy records' deltas per zone, as "total ZONE UJ".
input_totals() {
	awk -F'"zone":"' '/"type":"energy"/ {
		split($2, a, "\"")
		match($0, /"energy_uj":[0-9]+/)
		s[a[1]] += substr($0, RSTART + 12, RLENGTH - 12)
	} END { for (z in s) printf "total %s %.0f\n", z, s[z] }' "$1" | sort
}

# day SEED INTERVALS [kp-attribute options]: generate, with exited records,
# run, check.
day() {
	local seed=$1 n=$2
	shift 2
	"$KP_ROOT/scripts/kp-gen" --seed "$seed" --intervals "$n" --processes 6 \
	    --churn 20 --exited 2 > "$BATS_TEST_TMPDIR/gen"
	checker > "$BATS_TEST_TMPDIR/check.awk"
	run bash -c 'set -o pipefail; kp-attribute "${@:2}" < "$1/gen" |
	    kp-aggregate --by comm | awk -f "$1/check.awk"' _ "$BATS_TEST_TMPDIR" "$@"
	assert_success
	assert_line "errors 0"
	assert_line "intervals $n"
	assert_line "exited some"
	assert_equal "$(grep '^total' <<< "$output" | sort)" \
	    "$(input_totals "$BATS_TEST_TMPDIR/gen")"
}

@test "86,400 intervals with wraps, churn and exited records: identities hold at every interval and zone" {
	day 9 86400
}

@test "the same with proportional idle, a baseline split and Kepler's denominator" {
	day 10 5000 --idle proportional
	day 11 5000 --split baseline --baseline-watts package=30 --baseline-watts dram=4
	day 12 5000 --denominator processes --idle proportional
}

# An awk program that adds one microjoule to the first record of type T.
one_more_uj() {
	cat <<'AWK'
$0 ~ "^\\{\"type\":\"" t "\"" && !done {
	match($0, /"energy_uj":[0-9]+/)
	$0 = substr($0, 1, RSTART + 11) (substr($0, RSTART + 12, RLENGTH - 12) + 1) substr($0, RSTART + RLENGTH)
	done = 1
}
1
AWK
}

@test "the checker finds one microjoule too many, in a process or an exited record" {
	"$KP_ROOT/scripts/kp-gen" --seed 1 --intervals 3 --processes 6 \
	    --exited 2 > "$BATS_TEST_TMPDIR/gen"
	checker > "$BATS_TEST_TMPDIR/check.awk"
	one_more_uj > "$BATS_TEST_TMPDIR/more.awk"
	run -0 --separate-stderr bash -c 'kp-attribute < "$1/gen" |
	    kp-aggregate --by comm | awk -f "$1/check.awk"' _ "$BATS_TEST_TMPDIR"
	assert_line "errors 0"
	for t in process exited; do
		run --separate-stderr bash -c 'kp-attribute < "$1/gen" |
		    awk -v t="$2" -f "$1/more.awk" | kp-aggregate --by comm |
		    awk -f "$1/check.awk"' _ "$BATS_TEST_TMPDIR" "$t"
		refute_line "errors 0"
		grep -qx "seq 1: process + exited + unattributed + idle kept != energy in package" <<< "$stderr"
		grep -qx "seq 1: groups + host + unattributed != node - idle kept at level comm in package" <<< "$stderr"
		grep -qx "seq 3: final: processes + exited + unattributed + idle kept != node total in package" <<< "$stderr"
	done
	# The one microjoule is there: a line of each type was changed.
	for t in process exited; do
		assert_equal "$(kp-attribute < "$BATS_TEST_TMPDIR/gen" |
		    awk -v t="$t" -f "$BATS_TEST_TMPDIR/more.awk" |
		    diff - <(kp-attribute < "$BATS_TEST_TMPDIR/gen") | grep -c '^<')" 1
	done
}

