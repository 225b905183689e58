# shellcheck shell=bash
# What the proc-cputime tests share: a fixture /proc tree in $P to change
# between runs with a state file in $S, and its clock tick rate in $HZ.

# Sets a fixture process's utime and stime (clock ticks), keeping the rest.
set_ticks() {
	set_stat_fields "$1" 12 "$2" 13 "$3"
}

# Sets a fixture process's cutime and cstime: its children waited for.
set_child_ticks() {
	set_stat_fields "$1" 14 "$2" 15 "$3"
}

# set_stat_fields PID N V [N V]: field N after the comm (state is 1) is V.
set_stat_fields() {
	local pid=$1
	shift
	awk -v set="$*" '{
		i = 0; while ((j = index(substr($0, i + 1), ") ")) > 0) i += j
		head = substr($0, 1, i + 1)
		n = split(substr($0, i + 2), f, " "); k = split(set, s, " ")
		for (m = 1; m < k; m += 2) f[s[m]] = s[m + 1]
		line = f[1]; for (m = 2; m <= n; m++) line = line " " f[m]
		print head line }' "$P/$pid/stat" > "$P/$pid/stat.new"
	mv "$P/$pid/stat.new" "$P/$pid/stat"
}

# Adds a process: pid comm utime stime starttime cgroup-path [ppid]
add_proc() {
	mkdir -p "$P/$1"
	printf '%s (%s) S %s %s %s 0 -1 0 0 0 0 0 %s %s 0 0 20 0 1 0 %s 0 0\n' \
	    "$1" "$2" "${7:-1}" "$1" "$1" "$3" "$4" "$5" > "$P/$1/stat"
	printf '0::%s\n' "$6" > "$P/$1/cgroup"
}

# advance_node [N]: the sample after N (1) intervals from the fixture's:
# 1000 ticks pass in each, 400 of them active (ratio 0.4).
advance_node() {
	local n=${1:-1}
	printf 'cpu  %d 0 %d %d %d 0 0 0 0 0\n' $((6000 + 300 * n)) \
	    $((2000 + 100 * n)) $((80000 + 550 * n)) $((1000 + 50 * n)) > "$P/stat"
	echo "$((1000 + 10 * n)).00 $((1800 + 10 * n)).00" > "$P/uptime"
}

# set_fdinfo PID FD KEY VALUE: sets a line of /proc/PID/fdinfo/FD.
set_fdinfo() {
	sed -i "s/^$3:\t.*/$3:\t$4/" "$P/$1/fdinfo/$2"
}

# amdgpu_client PID FD GFX_NS COMPUTE_NS: an amdgpu client's engines, as
# each descriptor that holds it shows them.
amdgpu_client() {
	set_fdinfo "$1" "$2" drm-engine-gfx "$3 ns"
	set_fdinfo "$1" "$2" drm-engine-compute "$4 ns"
}

# A process of proc-gpu's born in the interval, pid 402 (vkcube), that
# opened amdgpu's client 9 on its descriptor 3.
new_amdgpu_process() {
	add_proc 402 vkcube 10 0 100500 /user.slice 1
	mkdir -p "$P/402/fd" "$P/402/fdinfo"
	ln -s /dev/dri/renderD128 "$P/402/fd/3"
	sed 's/^drm-client-id:\t8/drm-client-id:\t9/' "$P/400/fdinfo/5" \
	    > "$P/402/fdinfo/3"
}

# The GPUs' own idle residency (proc-cputime(1), GPU time), as sysfs-drm
# lays it out: i915's card0/gt/gt0/rc6_residency_ms, xe's
# card2/device/tile0/gt{0,1}/gtidle/idle_residency_ms; amdgpu keeps none.
# shellcheck disable=SC2034 # the tests use them
I915_RC6=devices/pci0000:00/0000:00:02.0/drm/card0/gt/gt0/rc6_residency_ms
# shellcheck disable=SC2034
XE_GT=devices/pci0000:00/0000:00:01.2/0000:04:00.0/tile0

# idle_ms SYSFS FILE MS: the residency FILE of SYSFS grown by MS.
idle_ms() {
	echo $(($(cat "$1/$2") + $3)) > "$1/$2"
}

# unreadable_said PROG N: what PROG says once of N processes of $P whose
# descriptors it may not read (proc-cputime(1), GPU time).
unreadable_said() {
	local s=es
	[ "$2" -ne 1 ] || s=
	echo "$1: $P: $2 process$s whose descriptors this user may not read (Permission denied; another user's need ptrace access): their GPU time is unattributed, and each DRM GPU's busy time the GPU's own (proc-cputime(1), GPU time)"
}

# Microseconds in N clock ticks.
ticks_us() {
	echo $(($1 * 1000000 / HZ))
}

# Starts proc-cputime as a filter reading a fifo, which fd 7 writes (bats
# keeps fd 3 for itself); with AS, a command such as as_nobody before it.
start_filter() {
	rm -f "$BATS_TEST_TMPDIR/fifo"
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	${AS:-} proc-cputime "$@" < "$BATS_TEST_TMPDIR/fifo" > "$BATS_TEST_TMPDIR/out" 3>&- &
	# shellcheck disable=SC2034 # the tests wait for it
	FILTER=$!
	exec 7> "$BATS_TEST_TMPDIR/fifo"
	printf '%s\n' '{"type":"header","seq":0,"version":"1.0","producer":"test"}' >&7
}

send_interval() {
	printf '{"type":"interval","seq":%d,"ts":"2026-11-22T00:00:01.000000Z","dt_us":1}\n' "$1" >&7
}

# await_in FILE PATTERN: waits (at most a minute, for a loaded machine)
# until FILE has a line matching PATTERN.
await_in() {
	local _
	for _ in $(seq 600); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# Waits until the filter has written a line matching $1.
await_line() {
	await_in "$BATS_TEST_TMPDIR/out" "$1"
}

# The hierarchy that accounts CPU time, where lib/proc/cgroup_counters.c
# looks for it.
new_cgroup_dir() {
	local r=/sys/fs/cgroup
	if [ -e "$r/cgroup.controllers" ]; then
		echo "$r"
	elif [ -e "$r/cpuacct/cpuacct.usage" ]; then
		echo "$r/cpuacct"
	elif [ -e "$r/cpu,cpuacct/cpuacct.usage" ]; then
		echo "$r/cpu,cpuacct"
	else
		echo "$r/unified"
	fi
}

# new_cgroup NAME [HIERARCHY]: a new cgroup, its directory, in HIERARCHY or
# else the one that counts CPU time on this host.  NAME may be below one
# made before.  Needs root.
new_cgroup() {
	local h=${2:-$(new_cgroup_dir)}
	mkdir "$h/kp-test-$$-$1" || return 1
	# Called as $(new_cgroup ...): teardown reads the list from a file.
	echo "$h/kp-test-$$-$1" >> "$BATS_TEST_TMPDIR/cgroups"
	echo "$h/kp-test-$$-$1"
}

# For teardown: the cgroups new_cgroup made, the last made first.
remove_cgroups() {
	local d
	[ -f "$BATS_TEST_TMPDIR/cgroups" ] || return 0
	tac "$BATS_TEST_TMPDIR/cgroups" | while read -r d; do
		rmdir "$d" 2>/dev/null || { sleep 0.5; rmdir "$d" || true; }
	done
}

# test_driver NAME: fails unless tests/NAME is built, and linked since
# lib/libkp.a last changed: make alone rebuilds the library, not the
# drivers, and a driver linked before runs the code as it was then.
test_driver() {
	[ -x "$KP_ROOT/tests/$1" ] ||
	    fail "tests/$1 is not built (make check builds it)"
	[ ! "$KP_ROOT/lib/libkp.a" -nt "$KP_ROOT/tests/$1" ] ||
	    fail "tests/$1 is older than lib/libkp.a (make check relinks it)"
}

needs_root() {
	[ "$(id -u)" -eq 0 ] || skip "making a cgroup needs root"
}

# within LOW HIGH PART WHOLE: PART / WHOLE is in [LOW, HIGH] percent.
within() {
	echo "$3 of $4: $(($3 * 1000 / $4)) per mille, wanted $1 to $2 %"
	[ $(($3 * 100)) -ge $(($1 * $4)) ] && [ $(($3 * 100)) -le $(($2 * $4)) ]
}

# The counter of cgroup directory $1, in microseconds.
cgroup_usage_us() {
	if [ -e "$1/cpu.stat" ]; then
		sed -n 's/^usage_usec //p' "$1/cpu.stat"
	else
		echo $(($(cat "$1/cpuacct.usage") / 1000))
	fi
}

# Whether this kernel lets a process without privilege hear the process
# events: Linux 6.6 and later (proc-cputime(1), "Exit accounting").
events_unprivileged() {
	local major minor
	IFS=. read -r major minor _ <<< "$(uname -r)"
	[ "$major" -gt 6 ] || { [ "$major" -eq 6 ] && [ "${minor%%[!0-9]*}" -ge 6 ]; }
}
