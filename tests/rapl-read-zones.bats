#!/usr/bin/env bats
# rapl-read on every zone layout the kernel produces (fixture trees made by
# tests/fixtures/sysfs-make): which counters are found, how they are summed
# into zones and sockets, the node's total, -z and --list.
# shellcheck disable=SC2154 # bats's run sets stderr and stderr_lines

load test_helper
load rapl_helper

# Adds $2 microjoules to the counter of entry $1, which wraps as the
# kernel's does at its max_energy_range_uj.
bump() {
	local d=$SY/class/powercap/$1
	echo $((($(cat "$d/energy_uj") + $2) % $(cat "$d/max_energy_range_uj"))) \
	    > "$d/energy_uj"
}

one() {
	run --separate-stderr rapl-read --sysfs "$SY" --proc "$P" -n 1 -i 10ms \
	    "$@"
}

# The energy records of the last run, one "zone[/socket] sockets" a line.
zones() {
	jq -r 'select(.type == "energy") |
	    "\(.zone)\(if has("socket") then "/\(.socket)" else "" end) \(.sockets)"' \
	    <<< "$output"
}

# The energy_uj of each energy record of the last run, as "zone[/socket]=uj".
energies() {
	jq -r 'select(.type == "energy") |
	    "\(.zone)\(if has("socket") then "/\(.socket)" else "" end)=\(.energy_uj)"' \
	    <<< "$output" | paste -sd' '
}

@test "Intel, one socket: package and dram" {
	rapl_tree sysfs-1socket
	one
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(zones)" "$(printf '%s\n' 'package 1' 'dram 1')"
	one --per-socket
	assert_equal "$(zones)" "$(printf '%s\n' 'package/0 1' 'dram/0 1')"
}

@test "Intel, two sockets: dram, repeated without an index, is summed" {
	rapl_tree sysfs-2socket
	one
	assert_equal "$(zones)" "$(printf '%s\n' 'package 2' 'core 1' 'dram 2')"
	one --per-socket
	assert_equal "$(zones)" "$(printf '%s\n' 'package/0 1' 'package/1 1' \
	    'core/0 1' 'dram/0 1' 'dram/1 1')"
	run_state --per-socket
	bump intel-rapl:0 3000000
	bump intel-rapl:1 4000000
	bump intel-rapl:0:1 500000	# dram of socket 0
	bump intel-rapl:1:0 700000	# dram of socket 1
	age_state 100
	run_state --per-socket
	assert_equal "$(energies)" \
	    "package/0=3000000 package/1=4000000 core/0=0 dram/0=500000 dram/1=700000"
}

@test "hexadecimal zone ids: intel-rapl:0:a is a subzone of socket 0" {
	rapl_tree sysfs-hexid
	one --per-socket
	assert_success
	assert_equal "$(zones)" "$(printf '%s\n' 'package/0 1' 'core/0 1' \
	    'dram/0 1')"
	run rapl-read --sysfs "$SY" --list
	assert_line --partial "dram	0	$SY/class/powercap/intel-rapl:0:a/energy_uj	"
}

@test "multi-die: package-0-die-1 is package of socket 0, dies summed" {
	rapl_tree sysfs-multidie
	one
	assert_equal "$(zones)" "$(printf '%s\n' 'package 4' 'dram 4')"
	run_state --per-socket
	bump intel-rapl:0 1000000	# package-0-die-0
	bump intel-rapl:1 2000000	# package-0-die-1
	bump intel-rapl:2 4000000	# package-1-die-0
	bump intel-rapl:3 8000000	# package-1-die-1
	bump intel-rapl:3:0 16	# dram of package-1-die-1
	age_state 100
	run_state --per-socket
	assert_equal "$(zones)" "$(printf '%s\n' 'package/0 2' 'package/1 2' \
	    'dram/0 2' 'dram/1 2')"
	assert_equal "$(energies)" \
	    "package/0=3000000 package/1=12000000 dram/0=0 dram/1=16"
}

@test "intel-rapl-mmio:0 repeating package-0 is counted once" {
	rapl_tree sysfs-mmio
	run_state -z package,node
	bump intel-rapl:0 5000000
	bump intel-rapl-mmio:0 5000000
	bump intel-rapl:1 9000000	# psys
	age_state 100
	run_state -z package,node
	assert_success
	assert_equal "$(zones)" "$(printf '%s\n' 'package 1' 'node 1')"
	assert_equal "$(energies)" "package=5000000 node=9000000"
	run -0 rapl-read --sysfs "$SY" --list
	assert_line "package	0	$SY/class/powercap/intel-rapl-mmio:0/energy_uj	262143328850	1	duplicate of intel-rapl:0"
}

@test "intel-rapl-mmio:0 is read when the package-0 counter it repeats is not" {
	rapl_tree sysfs-mmio
	rm "$SY/class/powercap/intel-rapl:0/energy_uj"
	run_state -z package
	assert_equal "$stderr" ""
	bump intel-rapl-mmio:0 5000000
	age_state 100
	run_state -z package
	assert_success
	assert_equal "$(energies)" "package=5000000"
	run -0 rapl-read --sysfs "$SY" --list
	assert_line "package	0	$SY/class/powercap/intel-rapl-mmio:0/energy_uj	262143328850	1	readable"
	assert_line "package	0	$SY/class/powercap/intel-rapl:0/energy_uj	262143328850	1	unreadable: energy_uj: No such file or directory"
}

@test "an MMIO counter that repeats nothing is read" {
	rapl_tree sysfs-mmio
	rm "$SY/class/powercap/intel-rapl:0"
	one -z package
	assert_equal "$(zones)" "package 1"
	run -0 rapl-read --sysfs "$SY" --list
	assert_line "package	0	$SY/class/powercap/intel-rapl-mmio:0/energy_uj	262143328850	1	readable"
}

@test "psys: the node's total is psys alone, which contains the rest" {
	rapl_tree sysfs-client
	run_state -z node
	bump intel-rapl:0 10000000
	bump intel-rapl:0:0 6000000
	bump intel-rapl:0:1 1000000
	bump intel-rapl:0:2 2000000
	bump intel-rapl:1 15000000
	age_state 100
	run_state -z node
	assert_equal "$(energies)" "node=15000000"
	assert_equal "$(zones)" "node 1"
}

@test "without psys the node's total is package + dram, never core" {
	rapl_tree sysfs-2socket
	run_state -z package,core,dram,node
	bump intel-rapl:0 3000000
	bump intel-rapl:1 4000000
	bump intel-rapl:0:0 2500000	# core: inside package-0
	bump intel-rapl:0:1 500000
	bump intel-rapl:1:0 700000
	age_state 100
	run_state -z package,core,dram,node
	assert_equal "$(energies)" \
	    "package=7000000 core=2500000 dram=1200000 node=8200000"
	assert_equal "$(zone_sockets node)" 4
}

zone_sockets() {
	jq -r "select(.type == \"energy\" and .zone == \"$1\") | .sockets" \
	    <<< "$output"
}

@test "AMD: package and core, no dram; the node's total is the packages" {
	rapl_tree sysfs-amd
	one -z package,core,node --per-socket
	assert_equal "$(zones)" "$(printf '%s\n' 'package/0 1' 'package/1 1' \
	    'core/0 1' 'core/1 1' 'node 2')"
	# A zone no source gives is an error naming it, not left out.
	one -z package,dram
	assert_failure 4
	assert_equal "$stderr" \
	    "rapl-read: no source here gives zone 'dram'; the zones here are: package, core, node"
	run_state -z node
	bump intel-rapl:0 1000
	bump intel-rapl:0:0 900
	bump intel-rapl:1 2000
	run_state -z node
	assert_equal "$(energies)" "node=3000"
}

@test "AMD: a counter wraps at its own, smaller range" {
	rapl_tree sysfs-amd
	run_state -z package
	echo 65712999000 > "$SY/class/powercap/intel-rapl:0/energy_uj"
	run_state -z package
	echo 387 > "$SY/class/powercap/intel-rapl:0/energy_uj"
	bump intel-rapl:1 10
	run_state -z package
	assert_equal "$(energies)" "package=1010"
}

@test "a zone whose power limit is disabled is still measured" {
	rapl_tree sysfs-disabled
	one
	assert_equal "$(zones)" "$(printf '%s\n' 'package 1' 'dram 1')"
	run -0 rapl-read --sysfs "$SY" --list
	assert_line "dram	0	$SY/class/powercap/intel-rapl:0:0/energy_uj	262143328850	0	readable"
}

@test "-z reads and reports only the zones named" {
	rapl_tree sysfs-2socket
	one -z dram
	assert_equal "$(zones)" "dram 2"
	one --zones core,dram
	assert_equal "$(zones)" "$(printf '%s\n' 'core 1' 'dram 2')"
	# A counter of a zone not asked for is not read: neither one that
	# reads as garbage (the tests run as root, whom chmod would not stop)
	# nor one that is gone.
	echo garbage > "$SY/class/powercap/intel-rapl:0:0/energy_uj"
	rm "$SY/class/powercap/intel-rapl:1/energy_uj"
	one -z dram
	assert_success
	assert_equal "$stderr" ""
}

@test "-z with a zone no source gives exits 4 naming it; a bad list is a usage error" {
	rapl_tree sysfs-2socket
	run -4 --separate-stderr rapl-read --sysfs "$SY" --source powercap \
	    -z gpu -n 1 -i 10ms
	assert_output ""
	assert_equal "$stderr" \
	    "rapl-read: no source here gives zone 'gpu'; the zones here are: package, core, dram, node"
	# Not dropped beside a zone that is given.
	run -4 --separate-stderr rapl-read --sysfs "$SY" -z package,foo \
	    -n 1 -i 10ms
	assert_output ""
	assert_equal "$stderr" \
	    "rapl-read: no source here gives zone 'foo'; the zones here are: package, core, dram, node"
	run -2 --separate-stderr rapl-read -z package,,dram
	assert_equal "$stderr" \
	    "rapl-read: zones must be a list of names separated by commas: ''"
}

@test "--list: every counter, its path, range and whether it can be read" {
	rapl_tree sysfs-2socket
	rm "$SY/devices/virtual/powercap/intel-rapl/intel-rapl:1/name"
	run -1 --separate-stderr rapl-read --sysfs "$SY" --list
	local c=$SY/class/powercap
	# Without its package's name, dram of intel-rapl:1 has no socket.
	assert_equal "$output" "$(cat <<-EOF
	zone	socket	path	max_energy_range_uj	enabled	status
	package	0	$c/intel-rapl:0/energy_uj	262143328850	-	readable
	core	0	$c/intel-rapl:0:0/energy_uj	262143328850	-	readable
	dram	-	$c/intel-rapl:1:0/energy_uj	65712999613	-	readable
	dram	0	$c/intel-rapl:0:1/energy_uj	65712999613	-	readable
	?	-	$c/intel-rapl:1/name	-	-	unreadable: name: No such file or directory
	EOF
	)"
}

@test "--list where nothing measures: the model's row, exit 4; --source hwmon lists meters" {
	local p idle full
	P=$(fixture_copy proc-model) p=$P
	with_cpuinfo
	# The row's watts for 2 threads, 1 socket, as the fitted table has them.
	idle=$(printf '%.1f' "$(table_watts amd-zen3 2 1 0)")
	full=$(printf '%.1f' "$(table_watts amd-zen3 2 1 1)")
	run -4 --separate-stderr rapl-read --sysfs "$BATS_TEST_TMPDIR/none" \
	    --proc "$p" --list --idle-watts 1
	assert_equal "$output" "$(cat <<-EOF
	zone	socket	path	max_energy_range_uj	enabled	status
	platform	-	$p/stat	-	-	estimate: row amd-zen3 for AuthenticAMD family 25 model 1 stepping 1, 2 threads, 1 sockets: 1.0 W idle to $full W at full load
	EOF
	)"
	assert_equal "$stderr" "$(cat <<-EOF
	rapl-read: no RAPL zones under '$BATS_TEST_TMPDIR/none/class/powercap'
	rapl-read: no ACPI power meters under '$BATS_TEST_TMPDIR/none/class/hwmon'
	EOF
	)"
	run -0 --separate-stderr rapl-read --proc "$p" --list --source model
	assert_line -n 1 --regexp "^platform	-	$p/stat	-	-	estimate: row amd-zen3 for .*: ${idle/./\\.} W idle to ${full/./\\.} W at full load\$"
	run -1 --separate-stderr rapl-read --proc "$BATS_TEST_TMPDIR/none" \
	    --list --source model
	assert_line -n 1 "platform	-	$BATS_TEST_TMPDIR/none/stat	-	-	unreadable: stat: No such file or directory"
	rapl_tree sysfs-hwmon
	run -0 rapl-read --sysfs "$SY" --list --source hwmon
	assert_line -n 1 "platform	-	$SY/class/hwmon/hwmon1/power1_average	-	-	readable"
	assert_line -n 2 "platform	-	$SY/class/hwmon/hwmon2/power1_input	-	-	readable"
	# Where a counter measures, the model's row is not listed, nor why
	# there are no RAPL zones.
	run -0 --separate-stderr rapl-read --sysfs "$SY" --proc "$p" --list
	refute_line --partial "estimate"
	assert_equal "$stderr" ""
}

@test "interval records written directly read as jq -c writes them" {
	rapl_tree sysfs-1socket
	rapl-read --sysfs "$SY" -i 1ms -n 3 | grep '"type":"interval"' \
	    > "$BATS_TEST_TMPDIR/intervals"
	run -0 jq -c . "$BATS_TEST_TMPDIR/intervals"
	assert_equal "${#lines[@]}" 3
	assert_output "$(cat "$BATS_TEST_TMPDIR/intervals")"
	assert_line -n 2 --regexp '^\{"type":"interval","seq":3,"ts":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{6}Z","dt_us":[0-9]+\}$'
}

@test "energy records are written alike whatever the zone's name" {
	rapl_tree sysfs-1socket
	# Every character a zone's name may hold; same counters, same text
	# expected.
	add_zone "$SY" intel-rapl:5 plain
	add_zone "$SY" intel-rapl:6 'Odd.zone_9-x'
	local delta
	for delta in 0 1 7 999 123456789 98765432101; do
		run_state -z plain,'Odd.zone_9-x'
		bump intel-rapl:5 "$delta"
		bump intel-rapl:6 "$delta"
		age_state 100
		run_state -z plain,'Odd.zone_9-x'
		assert_equal "${#lines[@]}" 4
		assert_equal "${lines[1]%%\"zone\"*}" "${lines[2]%%\"zone\"*}"
		# Odd.zone_9-x comes first, by name.
		local e1=${lines[1]#*\"energy_uj\"} e2=${lines[2]#*\"energy_uj\"}
		assert_equal "${e1%,\"path\"*}" "${e2%,\"path\"*}"
		assert_equal "${e1#*,\"path\"}" ":\"$SY/class/powercap/intel-rapl:6\"}"
		assert_equal "${e2#*,\"path\"}" ":\"$SY/class/powercap/intel-rapl:5\"}"
	done
}

# The message for a zone left out for its name, whose entry is $1.
misnamed() {
	printf "rapl-read: '%s/class/powercap/%s/name': not a zone's name of 1 to 31 ASCII letters, digits, '-', '_' or '.': zone left out\n" \
	    "$SY" "$1"
}

@test "a zone whose name breaks the rule is said once and left out, the others kept" {
	rapl_tree sysfs-1socket
	add_zone "$SY" intel-rapl:5 'weird"name'
	add_zone "$SY" intel-rapl:6 ''			# was dropped silently
	add_zone "$SY" intel-rapl-mmio:0 'package 0'
	add_zone "$SY" intel-rapl:7 "$(printf 'a%.0s' {1..32})"
	add_zone "$SY" intel-rapl:8 "$(printf 'b%.0s' {1..31})-1-die-0"
	add_zone "$SY" intel-rapl:9 'Odd.zone_9-x'
	printf 'pla\0in\n' > "$SY/class/powercap/intel-rapl:9/name"
	run --separate-stderr rapl-read --sysfs "$SY" -n 3 -i 10ms
	assert_success
	# In the order the directory lists them.
	assert_equal "$(sort <<< "$stderr")" "$(sort <<-EOF
	$(misnamed 'intel-rapl:5')
	$(misnamed 'intel-rapl:6')
	$(misnamed 'intel-rapl-mmio:0')
	$(misnamed 'intel-rapl:7')
	$(misnamed 'intel-rapl:9')
	EOF
	)"
	assert_equal "$(zones | sort | uniq -c | sed 's/^ *//')" "$(cat <<-EOF
	3 $(printf 'b%.0s' {1..31}) 1
	3 dram 1
	3 package 1
	EOF
	)"
}

@test "a zone left out for its name is said in --state and --list runs too" {
	rapl_tree sysfs-1socket
	add_zone "$SY" intel-rapl:5 'weird"name'
	run_state
	assert_success
	assert_equal "$stderr" "$(misnamed 'intel-rapl:5')"
	age_state 100
	run_state
	assert_success
	assert_equal "$stderr" "$(misnamed 'intel-rapl:5')"
	assert_equal "$(zones)" "$(printf '%s\n' 'package 1' 'dram 1')"
	run -0 --separate-stderr rapl-read --sysfs "$SY" --list
	assert_equal "$stderr" "$(misnamed 'intel-rapl:5')"
	refute_output --partial 'intel-rapl:5'
}

@test "a tree whose only zone is misnamed has no RAPL zones" {
	rapl_tree sysfs-1socket
	rm "$SY"/class/powercap/intel-rapl:*
	add_zone "$SY" intel-rapl:0 ''
	run -4 --separate-stderr rapl-read --sysfs "$SY" --source powercap -n 1
	assert_equal "$stderr" "$(printf '%s\n' "$(misnamed 'intel-rapl:0')" \
	    "rapl-read: no RAPL zones under '$SY/class/powercap'")"
}
