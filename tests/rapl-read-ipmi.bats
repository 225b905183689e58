#!/usr/bin/env bats
# rapl-read --source ipmi: fake ipmitool and ipmi-dcmi print what the real
# ones printed (tests/fixtures/ipmi/README); the layouts of both tools, the
# states that are no reading, each error, the password's file, and the
# energy integrated as redfish's (rapl-read(1), The BMC sources).
# shellcheck disable=SC2154 # bats's run sets stderr and stderr_lines

bats_require_minimum_version 1.5.0

load test_helper
load bmc_helper

# A PATH of the fakes named in $@ and the few tools they use, without the
# host's own ipmitool.
setup() {
	FAKEBIN=$BATS_TEST_TMPDIR/bin
	mkdir -p "$FAKEBIN"
	for t in cat sed stat sleep; do
		ln -s "$(command -v "$t")" "$FAKEBIN/$t"
	done
	export FAKE_IPMI_LOG=$BATS_TEST_TMPDIR/log
	S=$BATS_TEST_TMPDIR/rr.state
}

# fakes NAME...: NAME runs tests/fake-ipmi.
fakes() {
	for t in "$@"; do
		ln -s "$KP_ROOT/tests/fake-ipmi" "$FAKEBIN/$t"
	done
}

# ipmi FIXTURE [OPTION...]: rapl-read --source ipmi, the fakes printing
# tests/fixtures/ipmi/FIXTURE.out and .err.
ipmi() {
	FAKE_IPMI=$FIXTURES/ipmi/$1 PATH=$FAKEBIN:$KP_ROOT/cmd \
	    "$KP_ROOT/cmd/rapl-read" --source ipmi "${@:2}"
}

energy() {
	jq -r "select(.type == \"energy\") | .$1" <<< "$output" | tail -n 1
}

@test "ipmitool's layouts: 1.8.18, 1.8.19's timestamp and period on one line, four digits" {
	fakes ipmitool
	run --separate-stderr -0 ipmi ipmitool-1.8.18 -n 1 -i 100ms
	assert_equal "$(energy watts)" 215
	assert_equal "$(energy zone)" platform
	assert_equal "$(energy source)" ipmi
	assert_equal "$(energy path)" "ipmitool dcmi power reading"
	run --separate-stderr -0 ipmi ipmitool-1.8.19 -n 1 -i 100ms
	assert_equal "$(energy watts)" 312
	run --separate-stderr -0 ipmi ipmitool-2578w -n 1 -i 100ms
	assert_equal "$(energy watts)" 2578
	run -0 grep -cx reading "$FAKE_IPMI_LOG"
}

@test "FreeIPMI's ipmi-dcmi where ipmitool is not installed; ipmitool first" {
	fakes ipmi-dcmi
	run --separate-stderr -0 ipmi ipmi-dcmi-226w -n 1 -i 100ms
	assert_equal "$(energy watts)" 226
	assert_equal "$(energy path)" "ipmi-dcmi --get-system-power-statistics"
	run --separate-stderr -0 ipmi ipmi-dcmi-164w -n 1 -i 100ms
	assert_equal "$(energy watts)" 164
	fakes ipmitool
	run --separate-stderr -0 ipmi ipmitool-1.8.18 -n 1 -i 100ms
	assert_equal "$(energy watts)" 215
}

@test "deactivated and Not Available are no reading, whatever watts they print" {
	fakes ipmitool
	for f in ipmitool-deactivated-0w ipmitool-deactivated-360w; do
		run --separate-stderr -4 ipmi "$f" -n 1
		assert_equal "$stderr" "rapl-read: the BMC's power reading is deactivated: no reading"
	done
	rm "$FAKEBIN/ipmitool"
	fakes ipmi-dcmi
	run --separate-stderr -4 ipmi ipmi-dcmi-not-available -n 1
	assert_equal "$stderr" "rapl-read: the BMC's power reading is Not Available: no reading"
}

@test "each error the tools print has its message and exit status" {
	fakes ipmitool
	while IFS='|' read -r fixture code message; do
		FAKE_IPMI_EXIT=1 run --separate-stderr "-$code" ipmi "$fixture" -n 1
		assert_equal "$stderr" "rapl-read: $message"
	done <<'EOF2'
ipmitool-no-device|4|no local BMC device (/dev/ipmi0): load the ipmi_si and ipmi_devintf modules, or name a BMC with --bmc
ipmitool-lan-session|5|no session with the BMC: check --bmc and the user and password of --bmc-credentials
ipmitool-no-interface|4|this ipmitool lacks the interface asked for
ipmitool-invalid-command|4|the BMC refused the DCMI power reading: Invalid command (c1)
ipmitool-no-answer|4|the BMC did not answer the DCMI power reading
ipmitool-not-dcmi|4|the BMC does not speak DCMI
ipmi-dcmi-bad-completion|4|the BMC refused the DCMI power reading: bad completion code
EOF2
	FAKE_IPMI_EXIT=3 run --separate-stderr -4 ipmi no-such-fixture -n 1
	assert_equal "$stderr" "rapl-read: $FAKEBIN/ipmitool exited 3 without a power reading"
}

@test "neither tool installed, and a tool that does not answer in time: exit 4" {
	run --separate-stderr -4 ipmi ipmitool-1.8.18 -n 1
	assert_equal "$stderr" "rapl-read: neither ipmitool nor ipmi-dcmi is installed"
	fakes ipmitool
	FAKE_IPMI_SLEEP=5 run --separate-stderr -4 ipmi ipmitool-1.8.18 -n 1 \
	    --bmc-timeout 300ms
	assert_equal "$stderr" "rapl-read: $FAKEBIN/ipmitool gave no answer in 300 ms"
}

@test "--bmc: the password reaches ipmitool in a 0600 file, never in its arguments" {
	fakes ipmitool
	printf 'admin\ns3cr3t-Pa55\n' > "$BATS_TEST_TMPDIR/cred"
	chmod 600 "$BATS_TEST_TMPDIR/cred"
	TMPDIR=$BATS_TEST_TMPDIR/t
	mkdir "$TMPDIR"
	TMPDIR=$TMPDIR run --separate-stderr -0 ipmi ipmitool-1.8.18 -n 1 \
	    --bmc bmc.example --bmc-credentials "$BATS_TEST_TMPDIR/cred"
	assert_equal "$(head -n 7 "$FAKE_IPMI_LOG" | tr '\n' ' ')" \
	    "-I lanplus -H bmc.example -U admin -f "
	[[ "$(sed -n 8p "$FAKE_IPMI_LOG")" == "$TMPDIR"/kp-ipmi-* ]]
	run -0 grep -cx 'mode 600' "$FAKE_IPMI_LOG"
	run -0 grep -cx 'file s3cr3t-Pa55' "$FAKE_IPMI_LOG"
	run -1 grep -x 's3cr3t-Pa55' "$FAKE_IPMI_LOG"
	run -0 find "$TMPDIR" -type f
	assert_equal "$output" ""
}

@test "--bmc: ipmi-dcmi gets the password as a line of its --config-file" {
	fakes ipmi-dcmi
	printf 'admin\ns3cr3t-Pa55\n' > "$BATS_TEST_TMPDIR/cred"
	chmod 600 "$BATS_TEST_TMPDIR/cred"
	run --separate-stderr -0 ipmi ipmi-dcmi-226w -n 1 \
	    --bmc bmc.example --bmc-credentials "$BATS_TEST_TMPDIR/cred"
	run -0 grep -cx -- '--config-file' "$FAKE_IPMI_LOG"
	run -0 grep -cx 'file password s3cr3t-Pa55' "$FAKE_IPMI_LOG"
	run -0 grep -cx 'mode 600' "$FAKE_IPMI_LOG"
	run -0 grep -cx 'LAN_2_0' "$FAKE_IPMI_LOG"
}

@test "integrated as redfish's: a step from 215 W to 312 W over stored times, exact" {
	fakes ipmitool
	run --separate-stderr -0 ipmi ipmitool-1.8.18 --state "$S"
	edit_state '.data.mono_us -= 4000000'
	run --separate-stderr -0 ipmi ipmitool-1.8.19 --state "$S"
	dt=$(jq -r 'select(.type == "interval") | .dt_us' <<< "$output")
	# the line from 215 W to 312 W: their mean times dt
	assert_equal "$(energy energy_uj)" $(( (215000 + 312000) * dt / 2000 ))
}

@test "later failures carry the last power, marked, then exit 4" {
	fakes ipmitool
	echo "$FIXTURES/ipmi/ipmitool-1.8.18" > "$BATS_TEST_TMPDIR/now"
	# the break renames a whole file over the old: a fake started while
	# '>' had emptied it would print nothing, a failure of another kind
	FAKE_IPMI_NOW=$BATS_TEST_TMPDIR/now fails_later \
	    'echo "$FIXTURES/ipmi/ipmitool-no-answer" > "$BATS_TEST_TMPDIR/now.new"
	     mv "$BATS_TEST_TMPDIR/now.new" "$BATS_TEST_TMPDIR/now"' \
	    ipmi x -i 50ms --bmc-period 50ms
	assert_equal "$rc" 4
	grep -q 'ipmi: the BMC did not answer the DCMI power reading; carrying' "$BATS_TEST_TMPDIR/err"
	grep -q 'ipmi: 10 requests in a row failed' "$BATS_TEST_TMPDIR/err"
	assert_equal "$carried_watts" 215
}
