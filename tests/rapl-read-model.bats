#!/usr/bin/env bats
# rapl-read --source model: the row cpuinfo chooses, the fitted table and
# its curve, --model-table, and bad input (rapl-read(1), The model).
# shellcheck disable=SC2154 # bats's run sets stderr and stderr_lines

load test_helper
load rapl_helper

# The SPEC results scripts/fit-model reads by default (its -d): the data
# the table is fitted from, kept beside the repository, not a citation.
SPECPOWER_CSV=$KP_ROOT/../shared/specpower/specpower.csv

setup() {
	rapl_tree sysfs-2socket
	CPUINFO=$FIXTURES/cpuinfo
}

# model_run [OPTION...]: two one-shot runs of the model, the stat of $P
# moved between them by the ticks of $STAT_DELTA (user nice system idle
# iowait irq softirq steal); the output is the second run's.
model_run() {
	local base='cpu  100000 0 50000 800000 10000 0 0 0 0 0'
	printf '%s\n' "$base" > "$P/stat"
	rm -f "$S"
	run_state --source model "$@"
	assert_success
	awk -v d="$STAT_DELTA" 'BEGIN { split(d, x, " ") }
	    { printf "cpu "; for (i = 2; i <= 11; i++) printf " %d", $i + x[i - 1]
	      printf "\n" }' <<< "$base" > "$P/stat"
	run_state --source model "$@"
	assert_success
}

# A field of the energy record of the last run.
energy_field() {
	jq -r "select(.type == \"energy\") | .$1" <<< "$output"
}

@test "the compiled-in table is what scripts/fit-model writes" {
	run -0 "$KP_ROOT/scripts/fit-model" -c
	assert_equal "$output" "$(cat "$KP_ROOT/cmd/rapl/modeltable.c")"
	run -0 grep -c 'SPECpower_ssj2008 results (SPEC, www.spec.org)' \
	    "$KP_ROOT/cmd/rapl/modeltable.c"
}

@test "cpuinfo's family, model and stepping choose the row, with threads and sockets" {
	local f want
	while read -r f want; do
		cp "$CPUINFO/$f" "$P/cpuinfo"
		STAT_DELTA='500 0 0 500'
		model_run
		assert_equal "$f: $(energy_field model) $(energy_field threads) $(energy_field sockets) $(energy_field estimated)" \
		    "$f: $want true"
	done <<-EOF
	intel-skylake intel-skylake 4 2
	intel-cascadelake-vm intel-cascadelake 2 1
	intel-xeon intel-icelake 4 2
	intel-sapphirerapids intel-sapphirerapids 4 2
	amd-zen2-vm amd-zen2 2 1
	amd-epyc amd-zen3 2 1
	amd-zen4-vm amd-zen4 4 1
	arm64-neoverse-n1 arm-neoverse-n1 2 1
	qemu amd-fallback 2 2
	EOF
}

# assert_rows FIELD: for each "VALUE ROW" line of standard input, the
# Skylake cpuinfo with FIELD (as cpuinfo spells it, tabs as \t) set to
# VALUE chooses ROW.
assert_rows() {
	local value want
	while read -r value want; do
		sed "s/^$1: .*/$1: $value/" "$CPUINFO/intel-skylake" > "$P/cpuinfo"
		STAT_DELTA='0 0 0 1000'
		model_run
		assert_equal "$value $(energy_field model)" "$value $want"
	done
}

@test "6/85 is Skylake, Cascade Lake or Cooper Lake by its stepping; an unknown one is intel-fallback" {
	assert_rows 'stepping\t' <<-EOF
	4 intel-skylake
	7 intel-cascadelake
	11 intel-cooperlake
	8 intel-fallback
	EOF
}

@test "a client die has its own row: Xeon E3 is model 42, Xeon E5 45" {
	assert_rows 'model\t\t' <<-EOF
	42 intel-sandybridge-client
	45 intel-sandybridge
	58 intel-ivybridge-client
	62 intel-ivybridge
	60 intel-haswell-client
	63 intel-haswell
	30 intel-nehalem-client
	26 intel-nehalem
	46 intel-nehalem-ex
	EOF
}

@test "the fit puts a server on its die's row by its CPU's name" {
	local csv=$SPECPOWER_CSV e3 e5
	# SPEC's Sandy Bridge servers: Xeon E3-1200 (client die), the rest E5
	# (rapl-read(1), The fit).
	e3=$(grep -c ',Intel Xeon E3-12[0-9][0-9][^,]*,intel,Sandy Bridge,' "$csv")
	e5=$(($(grep -c ',intel,Sandy Bridge,' "$csv") - e3))
	[ "$e3" -gt 1 ] && [ "$e5" -gt 1 ]
	run -0 "$KP_ROOT/scripts/fit-model"
	assert_line --regexp "^row intel-sandybridge-client $e3 "
	assert_line --regexp "^row intel-sandybridge $e5 "
}

@test "the model name and the hypervisor flag never change the figure" {
	local watts
	STAT_DELTA='300 0 100 600'
	watts=$(table_watts amd-zen4 4 1 0.4)
	cp "$CPUINFO/amd-zen4-vm" "$P/cpuinfo"
	model_run
	assert_energy_watts "$watts"
	sed 's/^model name\t: .*/model name\t: AMD EPYC 9654 96-Core Processor/;
	    s/ hypervisor / /' "$CPUINFO/amd-zen4-vm" > "$P/cpuinfo"
	run grep -c hypervisor "$P/cpuinfo"
	assert_output 0
	model_run
	assert_energy_watts "$watts"
	assert_equal "$(energy_field model)" amd-zen4
}

@test "a stat sweep gives the table's curve, from idle to full load" {
	local delta ratio
	cp "$CPUINFO/intel-skylake" "$P/cpuinfo"
	# Each line: the usage ratio, and the ticks that make it.
	while read -r ratio delta; do
		STAT_DELTA=$delta
		model_run
		assert_energy_watts "$(table_watts intel-skylake 4 2 "$ratio")"
	done <<-EOF
	0 0 0 0 1000
	0.05 50 0 0 950
	0.1 100 0 0 900
	0.37 270 0 100 630
	0.5 400 0 100 400 100
	1 900 0 100 0 0
	EOF
}

@test "--idle-watts and --max-watts: the server's own, the fitted curve between" {
	cp "$CPUINFO/amd-epyc" "$P/cpuinfo"
	STAT_DELTA='250 0 0 750'
	model_run --idle-watts 100 --max-watts 300
	assert_energy_watts "$(table_watts amd-zen3 2 1 0.25 100 300)"
	# The straight line would give 150 W here: the curve does not.
	[ "$(table_watts amd-zen3 2 1 0.25 100 300)" != 150.000000 ]
	# One of them given: the other is the row's.
	model_run --max-watts 300
	assert_energy_watts "$(table_watts amd-zen3 2 1 0.25 \
	    "$(table_watts amd-zen3 2 1 0)" 300)"
}

@test "steal is not busy: the time another guest ran counts as idle" {
	cp "$CPUINFO/amd-zen2-vm" "$P/cpuinfo"
	# 200 ticks ours, 300 stolen, 500 idle: a usage ratio of 0.2.
	STAT_DELTA='200 0 0 500 0 0 0 300'
	model_run
	assert_energy_watts "$(table_watts amd-zen2 2 1 0.2)"
}

@test "--model-table reads a table the script wrote, a result left out" {
	local id
	id=$(awk -F, 'NR == 2 { print $1 }' \
	    "$SPECPOWER_CSV")
	"$KP_ROOT/scripts/fit-model" -x "$id" -o "$BATS_TEST_TMPDIR/t"
	run -1 diff -q "$BATS_TEST_TMPDIR/t" <("$KP_ROOT/scripts/fit-model")
	sed -i 's/^row intel-core .*/row intel-core 1 1 10 2 20 0 0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1/' \
	    "$BATS_TEST_TMPDIR/t"
	sed 's/^model\t\t: .*/model\t\t: 15/' "$CPUINFO/intel-skylake" \
	    > "$P/cpuinfo"
	STAT_DELTA='300 0 0 700'
	model_run --model-table "$BATS_TEST_TMPDIR/t"
	# 4 threads and 2 sockets: 4 + 20 W idle, 8 + 40 W full, 0.3 of it.
	assert_energy_watts 31.2
	assert_equal "$(energy_field model)" intel-core
	run -1 "$KP_ROOT/scripts/fit-model" -x nosuch
}

# bad_table SED LINE WHAT: the script's table edited by sed script SED is
# refused with status 3, naming line LINE ("end": past the last) and WHAT.
bad_table() {
	local t=$BATS_TEST_TMPDIR/t line=$2
	"$KP_ROOT/scripts/fit-model" | sed "$1" > "$t"
	[ "$line" != end ] || line=$(($(wc -l < "$t") + 1))
	run -3 --separate-stderr rapl-read --source model --proc "$P" \
	    --model-table "$t" -n 1 -i 1ms
	assert_equal "$stderr" "rapl-read: $t:$line: $3"
}

@test "a garbled --model-table is bad data named by file and line" {
	local sig
	cp "$CPUINFO/amd-epyc" "$P/cpuinfo"
	bad_table '7s/ [0-9.]*$/ x/' 7 \
	    "a level of the curve is not a number from 0 to 2"
	bad_table '7s/^\(row [^ ]* [0-9]*\) [0-9.]*/\1 1e300/' 7 \
	    "a part is not a number of watts up to 100000"
	sig=$("$KP_ROOT/scripts/fit-model" | grep -n '^sig amd-zen3 ' | cut -d: -f1)
	bad_table 's/^sig amd-zen3 amd 25 0-15 \*$/sig amd-zen3 amd 25 0-99999999999 */' \
	    "$sig" "a family, model or stepping is not a number or a range"
	bad_table '/^row fallback /d' end "no row 'fallback'"
	run -1 --separate-stderr rapl-read --source model --proc "$P" \
	    --model-table "$BATS_TEST_TMPDIR/none" -n 1 -i 1ms
	assert_equal "$stderr" \
	    "rapl-read: cannot read '$BATS_TEST_TMPDIR/none': No such file or directory"
}

@test "a missing cpuinfo, or one of no processor or too many, is an error, never a guess" {
	run -1 --separate-stderr rapl-read --source model --proc "$P" \
	    -n 1 -i 1ms
	assert_equal "$stderr" \
	    "rapl-read: cannot read '$P/cpuinfo': No such file or directory"
	: > "$P/cpuinfo"
	run -3 --separate-stderr rapl-read --source model --proc "$P" \
	    -n 1 -i 1ms
	assert_equal "$stderr" \
	    "rapl-read: '$P/cpuinfo' lists 0 processors: the model needs 1 to 8192"
	awk 'BEGIN { for (i = 0; i <= 8192; i++)
	    printf "processor\t: %d\nvendor_id\t: GenuineIntel\n\n", i }' \
	    > "$P/cpuinfo"
	run -3 --separate-stderr rapl-read --source model --proc "$P" \
	    -n 1 -i 1ms
	assert_equal "$stderr" \
	    "rapl-read: '$P/cpuinfo' lists 8193 processors: the model needs 1 to 8192"
	run -4 rapl-read --source model --proc "$P" --idle-watts 1 \
	    --max-watts 2 --list
	refute_output --partial 'estimate:'
}

@test "an unknown family or garbled lines get the vendor's fallback, else the fallback over all" {
	local want
	sed 's/^cpu family\t: .*/cpu family\t: 99/' "$CPUINFO/intel-skylake" \
	    > "$P/cpuinfo"
	STAT_DELTA='0 0 0 1000'
	model_run
	assert_equal "$(energy_field model) $(energy_field threads)" \
	    "intel-fallback 4"
	printf 'processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: x\nmodel\t\t: 0x\n\nprocessor\t: 1\n' \
	    > "$P/cpuinfo"
	model_run
	assert_equal "$(energy_field model) $(energy_field threads)" \
	    "amd-fallback 2"
	printf 'processor\t: 0\nvendor_id\t: CentaurHauls\ncpu family\t: 6\n' \
	    > "$P/cpuinfo"
	model_run
	assert_equal "$(energy_field model) $(energy_field sockets)" \
	    "fallback 1"
	want=$(table_watts fallback 1 1 0)
	assert_energy_watts "$want"
}

@test "a stat that goes back (the VM moved) gives no interval, then estimates again" {
	cp "$CPUINFO/amd-epyc" "$P/cpuinfo"
	printf 'cpu  100000 0 50000 800000 10000 0 0 0 0 0\n' > "$P/stat"
	run_state --source model
	printf 'cpu  1000 0 500 8000 100 0 0 0 0 0\n' > "$P/stat"
	run_state --source model
	assert_success
	run jq -s 'map(select(.type == "energy")) | length' <<< "$output"
	assert_output 0
	printf 'cpu  1500 0 500 8500 100 0 0 0 0 0\n' > "$P/stat"
	run_state --source model
	assert_energy_watts "$(table_watts amd-zen3 2 1 0.5)"
}

@test "--list names the row, the CPU it was chosen for, and the machine's size" {
	cp "$CPUINFO/amd-zen4-vm" "$P/cpuinfo"
	run -0 rapl-read --source model --proc "$P" --list
	assert_line --regexp "^platform	-	$P/stat	-	-	estimate: row amd-zen4 for AuthenticAMD family 25 model 17 stepping 1, a VM, 4 threads, 1 sockets: [0-9.]+ W idle to [0-9.]+ W at full load\$"
}

@test "bench-model at a tiny size: rapl-read's leave-one-out against SPEC and CCF" {
	run -0 "$KP_ROOT/scripts/bench-model" -n 200
	assert_line -n 0 "rapl-read's model, leave-one-out over 5 SPECpower_ssj2008 results (SPEC, www.spec.org):"
	assert_line -n 2 --regexp '^row +points +model +idle\+full +CCF$'
	assert_line --regexp '^the model over all points: median [0-9]+\.[0-9]{2} %, p90 [0-9]+\.[0-9]{2} % \(goal <= 10 %, <= 30 %\)$'
	# Given each server's own idle and full watts, only the curve
	# between them errs: a few percent, where a wrong curve or usage
	# ratio would be tens.
	run awk '$1 == "all" { print ($2 > 0 && $5 < 5 && $3 < 50) }' \
	    <<< "$output"
	assert_output 1
}
