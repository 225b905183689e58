# shellcheck shell=bash
# What the rapl-read tests share: a fixture sysfs tree to change, runs with
# a state file, and a tree whose counters only root may read.

# rapl_tree TREE: copies fixture tree TREE to $SY, proc-model to $P.
rapl_tree() {
	SY=$(fixture_copy "$1")
	P=$(fixture_copy proc-model)
	S=$BATS_TEST_TMPDIR/rr.state
}

# The tree of nobody_tree lies outside BATS_TEST_TMPDIR, which nobody
# cannot enter; it is removed here.
teardown() {
	nobody_dir_remove
}

run_state() {
	run --separate-stderr rapl-read --sysfs "$SY" --proc "$P" \
	    --state "$S" "$@"
}

# age_state SECONDS: moves the stored sample of $S that far into the past,
# as if this run came that much later: counters bumped by a test between
# two runs a few milliseconds apart would otherwise be refused as steps
# no zone could make.
age_state() {
	edit_state ".data.mono_us -= $1 * 1000000"
}

# set_uj ENTRY UJ: sets the counter of a zone entry, such as intel-rapl:1.
set_uj() {
	echo "$2" > "$SY/class/powercap/$1/energy_uj"
}

# add_zone TREE ENTRY NAME: adds zone ENTRY named NAME to TREE as the
# kernel lays it out: a directory under devices and a relative symbolic
# link in class/powercap.
add_zone() {
	local d=$1/devices/virtual/powercap/intel-rapl/$2
	mkdir -p "$d"
	echo "$3" > "$d/name"
	echo 1000 > "$d/energy_uj"
	echo 262143328850 > "$d/max_energy_range_uj"
	ln -s "../../devices/virtual/powercap/intel-rapl/$2" \
	    "$1/class/powercap/$2"
}

# nobody_tree DIR: a copy of sysfs tree DIR at $NOBODY_DIR/sys that
# everyone may enter, with its counters and meters readable by root only.
nobody_tree() {
	nobody_dir rapl-read
	cp -R "$1" "$NOBODY_DIR/sys"
	chmod -R a+rX "$NOBODY_DIR/sys"
	find "$NOBODY_DIR/sys/devices" \( -name energy_uj -o -name 'power1_*' \) \
	    -exec chmod 0400 {} +
}

# stop_after N PID OUT: stops process PID once its output file OUT holds N
# interval records, so that a change made then falls between the same
# intervals however fast the machine is; kill -CONT PID lets it go on.
stop_after() {
	until [ "$(grep -c '"type":"interval"' "$3")" -ge "$1" ]; do
		sleep 0.01
	done
	kill -STOP "$2"
}

# with_cpuinfo [FIXTURE]: gives $P a cpuinfo (amd-epyc's: amd-zen3, 2
# threads, 1 socket), as the model needs one (rapl-read(1), The model).
with_cpuinfo() {
	cp "$FIXTURES/cpuinfo/${1:-amd-epyc}" "$P/cpuinfo"
}

# The watts the table's row gives at a usage ratio, computed here from the
# script's table text: idle and full from the parts, the curve between.
table_watts() {	# ROW THREADS SOCKETS RATIO [IDLE FULL]
	"$KP_ROOT/scripts/fit-model" | awk -v row="$1" -v t="$2" -v s="$3" \
	    -v u="$4" -v idle="${5:-}" -v full="${6:-}" '
	    $1 == "row" && $2 == row {
		i0 = $4 * t + $5 * s; i1 = $6 * t + $7 * s
		if (idle != "") { i0 = idle; i1 = full }
		at = u * 10; k = int(at); if (k > 9) k = 9
		shape = $(8 + k) + ($(9 + k) - $(8 + k)) * (at - k)
		printf "%.6f\n", i0 + (i1 - i0) * shape
	    }'
}

# The energy of the last run is watts over its interval, to the microjoule
# the mean power's rounding to a microwatt allows.
# shellcheck disable=SC2154 # bats's run sets output
assert_energy_watts() {
	local near
	near=$(jq -s --argjson w "$1" '
	    (map(select(.type == "interval"))[0].dt_us) as $dt |
	    map(select(.type == "energy"))[0].energy_uj as $uj |
	    ($uj - $w * $dt) | fabs <= 1 + $dt / 1e6' <<< "$output")
	assert_equal "$1 W: $near" "$1 W: true"
}
