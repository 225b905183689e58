#!/usr/bin/env bats
# rapl-read --source redfish: the place of power chosen, TLS checked, the
# session closed, failures, and energy integrated to exact uJ
# (rapl-read(1), The BMC sources).
# shellcheck disable=SC2154 # bats's run sets stderr and stderr_lines

bats_require_minimum_version 1.5.0

load test_helper
load redfish_helper
load bmc_helper

setup_file() {
	CERTS=$BATS_FILE_TMPDIR
	export CERTS
	make_certs "$CERTS"
}

setup() {
	start_bmc
	S=$BATS_TEST_TMPDIR/rr.state
}

teardown() {
	stop_bmc
}

energy() {
	jq -r "select(.type == \"energy\") | .$1" <<< "$output" | tail -n 1
}

@test "EnvironmentMetrics first: 374 W, its path in the record" {
	run --separate-stderr -0 rf -n 1 -i 100ms
	assert_equal "$(energy zone)" platform
	assert_equal "$(energy watts)" 374
	assert_equal "$(energy path)" /redfish/v1/Chassis/1U/EnvironmentMetrics
	assert_equal "$(energy source)" redfish
}

@test "without EnvironmentMetrics, Power's PowerConsumedWatts: 344 W" {
	jq 'del(.EnvironmentMetrics)' "$TREE/Chassis/1U/index.json" > "$BMC/c"
	mv "$BMC/c" "$TREE/Chassis/1U/index.json"
	run --separate-stderr -0 rf -n 1 -i 100ms
	assert_equal "$(energy watts)" 344
	assert_equal "$(energy path)" /redfish/v1/Chassis/1U/Power
}

@test "without both, the supplies' InputPowerWatts: 937.4 W" {
	jq 'del(.EnvironmentMetrics, .Power)' "$TREE/Chassis/1U/index.json" \
	    > "$BMC/c"
	mv "$BMC/c" "$TREE/Chassis/1U/index.json"
	run --separate-stderr -0 rf -n 1 -i 100ms
	assert_equal "$(energy 'watts * 10 | round / 10')" 937.4
	assert_equal "$(energy path)" /redfish/v1/Chassis/1U/PowerSubsystem
}

@test "a place whose Status is not Enabled is skipped; none at all is taken" {
	f=$TREE/Chassis/1U/EnvironmentMetrics/index.json
	jq '.Status = {"State": "StandbyOffline"}' "$f" > "$BMC/c" && mv "$BMC/c" "$f"
	run --separate-stderr -0 rf -n 1 -i 100ms
	assert_equal "$(energy watts)" 344
	jq 'del(.Status)' "$f" > "$BMC/c" && mv "$BMC/c" "$f"
	run --separate-stderr -0 rf -n 1 -i 100ms
	assert_equal "$(energy watts)" 374
}

@test "a ramp integrates to its exact energy, and intervals conserve it" {
	echo 100.001 > "$BMC/watts"
	run --separate-stderr -0 rf --state "$S"
	edit_state '.data.mono_us -= 10000000'
	echo 300.002 > "$BMC/watts"
	run --separate-stderr -0 rf --state "$S"
	dt1=$(jq -r 'select(.type == "interval") | .dt_us' <<< "$output")
	e1=$(energy energy_uj)
	# the line from 100.001 W to 300.002 W: their mean times dt, in nJ
	assert_equal "$e1" $(( (100001 + 300002) * dt1 / 2 / 1000 ))
	edit_state '.data.mono_us -= 10000000'
	run --separate-stderr -0 rf --state "$S"
	dt2=$(jq -r 'select(.type == "interval") | .dt_us' <<< "$output")
	e2=$(energy energy_uj)
	total_nj=$(( (100001 + 300002) * dt1 / 2 + 300002 * dt2 ))
	assert_equal $(( e1 + e2 )) $(( total_nj / 1000 ))
}

@test "a constant power gives P x dt_us exactly" {
	echo 250.5 > "$BMC/watts"
	run --separate-stderr -0 rf --state "$S"
	edit_state '.data.mono_us -= 3000000'
	run --separate-stderr -0 rf --state "$S"
	dt=$(jq -r 'select(.type == "interval") | .dt_us' <<< "$output")
	assert_equal "$(energy energy_uj)" $(( 250500 * dt / 1000 ))
	assert_equal "$(energy age_ms)" 0
}

@test "the session is logged out at exit, by a signal too" {
	run --separate-stderr -0 rf -n 2 -i 100ms
	run -0 awk '$1 == "open" { o[$2] = 1 } $1 == "closed" { delete o[$2] }
	    END { n = 0; for (s in o) n++; print n }' "$BMC/sessions"
	assert_equal "$output" 0
	run -0 grep -c '^open' "$BMC/sessions"
	assert_equal "$output" 1
	setsid env --default-signal=INT rapl-read --source redfish \
	    --bmc "$URL" --bmc-credentials "$CRED" --bmc-ca "$CERTS/ca.pem" \
	    -i 100ms > "$BMC/out" &
	pid=$!
	until grep -q '"interval"' "$BMC/out"; do sleep 0.05; done
	kill -INT "$pid"
	rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 130
	run -0 grep -c '^closed' "$BMC/sessions"
	assert_equal "$output" 2
}

@test "Basic authentication when the session POST is refused" {
	echo 1 > "$BMC/nosession"
	run --separate-stderr -0 rf -n 1 -i 100ms
	assert_equal "$(energy watts)" 374
	[ ! -e "$BMC/sessions" ]
}

@test "Basic authentication where the service root names no SessionService: no session asked" {
	echo 1 > "$BMC/rootless"
	run --separate-stderr -0 rf -n 1 -i 100ms
	assert_equal "$(energy watts)" 374
	run -1 grep -c '^POST' "$BMC/log"
	[ ! -e "$BMC/sessions" ]
}

@test "the password is in no argument, message or record" {
	rf -i 100ms -n 8 > "$BMC/out" 2> "$BMC/err" &
	pid=$!
	until grep -q '"interval"' "$BMC/out"; do sleep 0.05; done
	ps -eo args > "$BMC/ps"
	grep -q 'rapl-read --source redfish' "$BMC/ps"
	wait "$pid"
	run -1 grep -q s3cr3t "$BMC/ps" "$BMC/out" "$BMC/err"
	grep -q '"energy"' "$BMC/out"
	# the test itself: the password is in the file the search reads
	run -0 grep -q s3cr3t "$BMC/ps" "$BMC/out" "$BMC/err" "$CRED"
}

@test "the certificate is checked: an unknown CA or name is exit 5" {
	run --separate-stderr -5 rapl-read --source redfish --bmc "$URL" \
	    --bmc-credentials "$CRED" -n 1
	[[ "$stderr" == *"rapl-read: /redfish/v1/: "* ]]
	run --separate-stderr -5 rapl-read --source redfish --bmc "$URL" \
	    --bmc-credentials "$CRED" --bmc-ca "$CERTS/other-ca.pem" -n 1
	run --separate-stderr -5 rapl-read --source redfish \
	    --bmc "https://localhost:${URL##*:}" --bmc-credentials "$CRED" \
	    --bmc-ca "$CERTS/ca.pem" -n 1
}

@test "--insecure is said once on stderr, and then reads" {
	run --separate-stderr -0 rapl-read --source redfish --bmc "$URL" \
	    --bmc-credentials "$CRED" --insecure -n 2 -i 100ms
	assert_equal "${#stderr_lines[@]}" 1
	[[ "$stderr" == "rapl-read: --insecure: "* ]]
	assert_equal "$(energy watts)" 374
}

@test "401 and 403 at start are exit 5; 404, 5xx and a timeout exit 4" {
	printf 'admin\nwrong\n' > "$BMC/wrong"
	chmod 600 "$BMC/wrong"
	run --separate-stderr -5 rf -n 1 --bmc-credentials "$BMC/wrong"
	echo 403 > "$BMC/status"
	run --separate-stderr -5 rf -n 1
	assert_equal "$stderr" "rapl-read: /redfish/v1/Chassis: HTTP status 403"
	echo 404 > "$BMC/status"
	run --separate-stderr -4 rf -n 1
	echo 503 > "$BMC/status"
	run --separate-stderr -4 rf -n 1
	assert_equal "$stderr" "rapl-read: /redfish/v1/Chassis: HTTP status 503"
	rm "$BMC/status"
	echo 2 > "$BMC/slow"
	run --separate-stderr -4 rf -n 1 --bmc-timeout 300ms
	[[ "$stderr" == *"imeout"* ]]
}

@test "a BMC that stops answering never holds an interval's end: the records go on, their reading older" {
	# Each request now waits 20 s for its answer, past --bmc-timeout 5s:
	# were requests made on the clock, ten intervals would take 50 s or
	# more, past the watchdog's 40; beside it they take one second, and
	# the exit aborts what is out (rapl-read(1), The BMC sources).
	fails_later 'echo 20 > "$BMC/slow"' timeout 40 \
	    rapl-read --source redfish --bmc "$URL" --bmc-credentials "$CRED" \
	    --bmc-ca "$CERTS/ca.pem" -n 10 -i 100ms --bmc-period 100ms \
	    --bmc-timeout 5s
	assert_equal "$rc" 0
	run -0 jq -s '[.[] | select(.type == "interval")] | length' \
	    "$BATS_TEST_TMPDIR/out"
	assert_output 10
	# The last interval's reading is the last before the BMC stalled.
	run -0 jq -s '[.[] | select(.type == "energy") | .age_ms] | last' \
	    "$BATS_TEST_TMPDIR/out"
	[ "$output" -ge 500 ]
}

@test "malformed JSON and a body over the 1 MiB cap: exit 4" {
	echo '{"PowerWatts": ' > "$BMC/body"
	run --separate-stderr -4 rf -n 1
	[[ "$stderr" == "rapl-read: /redfish/v1/Chassis: not JSON: "* ]]
	rm "$BMC/body"
	echo 1 > "$BMC/huge"
	run --separate-stderr -4 rf -n 1
	assert_equal "$stderr" "rapl-read: /redfish/v1/Chassis: the answer is longer than 1048576 bytes"
}

@test "later failures carry the last power, marked, then exit 4" {
	fails_later 'echo 500 > "$BMC/status"' rf -i 50ms --bmc-period 50ms
	assert_equal "$rc" 4
	grep -q 'HTTP status 500; carrying the last power' "$BATS_TEST_TMPDIR/err"
	grep -q 'redfish: 10 requests in a row failed; the last: .*HTTP status 500' "$BATS_TEST_TMPDIR/err"
	assert_equal "$carried_watts" 374
}

@test "the credentials file must be 0600 and the URL https" {
	chmod 640 "$CRED"
	run --separate-stderr -2 rf -n 1
	[[ "$stderr" == *"must be a file of mode 0600 or stricter"* ]]
	chmod 600 "$CRED"
	run --separate-stderr -2 rapl-read --source redfish \
	    --bmc "http://127.0.0.1:1" --bmc-credentials "$CRED" -n 1
	[[ "$stderr" == *"must be an https:// URL"* ]]
}

@test "a credentials file of another user, though 0600, is refused" {
	[ "$(id -u)" -eq 0 ] || fail "giving a file to another user needs root, as the suite runs"
	chown 65534 "$CRED"
	run --separate-stderr -2 rf -n 1
	[[ "$stderr" == *"must be a file of mode 0600 or stricter owned by its user"* ]]
}

@test "at most one request per interval and per --bmc-period" {
	run --separate-stderr -0 rf -n 10 -i 100ms --bmc-period 100ms
	n=$(reads_of /redfish/v1/Chassis/1U/EnvironmentMetrics)
	# two at start (the choice, the baseline), then one at most in each
	# interval and in the one after the last (its request aborted at exit)
	[ "$n" -ge 3 ] && [ "$n" -le 13 ]
	: > "$BMC/log"
	run --separate-stderr -0 rf -n 10 -i 100ms --bmc-period 1s
	n=$(reads_of /redfish/v1/Chassis/1U/EnvironmentMetrics)
	[ "$n" -ge 3 ] && [ "$n" -le 4 ]
}

@test "the platform zone is split like any other, and kp-fmt writes Kepler's platform gauge" {
	run -0 bash -c 'set -o pipefail; rapl-read --source redfish \
	    --bmc "$0" --bmc-credentials "$1" --bmc-ca "$2" -n 2 -i 200ms |
	    proc-cputime | kp-attribute > "$3"' "$URL" "$CRED" \
	    "$CERTS/ca.pem" "$BMC/attributed"
	run -0 jq -c 'select(.type == "node") | [.zone, .source, .watts]' \
	    "$BMC/attributed"
	assert_line -n 0 '["platform","redfish",374]'
	run -0 kp-fmt -f prometheus < "$BMC/attributed"
	assert_line --regexp '^kepler_platform_watts\{source="redfish",node_name="[^"]*"\} 374$'
	assert_line --partial 'kepler_node_cpu_joules_total{zone="platform",path="/redfish/v1/Chassis/1U/EnvironmentMetrics",'
}

@test "--bmc-chassis names the Chassis read; one that is not there is exit 4" {
	run --separate-stderr -0 rf -n 1 -i 100ms --bmc-chassis 1U
	assert_equal "$(energy watts)" 374
	run --separate-stderr -4 rf -n 1 --bmc-chassis 2U
	assert_equal "$stderr" "rapl-read: /redfish/v1/Chassis/2U: HTTP status 404"
}

@test "one connection kept alive for every request of the run; no redirect followed" {
	run --separate-stderr -0 rf -n 5 -i 100ms --bmc-period 100ms
	# every request until the logout on one; the request that was out at
	# exit is aborted, so the logout may need another
	run -0 awk '{ line[NR] = $0 } /^GET / { last = NR }
	    END { for (i = 1; i <= last; i++) n += line[i] == "CONNECT"; print n }' \
	    "$BMC/log"
	assert_equal "$output" 1
	run -0 grep -c '^GET /redfish/v1/Chassis/1U/EnvironmentMetrics$' "$BMC/log"
	[ "$output" -ge 5 ]
	echo "$URL/redfish/v1/Chassis" > "$BMC/redirect"
	run --separate-stderr -4 rf -n 1
	assert_equal "$stderr" "rapl-read: /redfish/v1/Chassis: HTTP status 301"
}
