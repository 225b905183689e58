#!/usr/bin/env bats
# scripts/ for deployment: the systemd units, the README's crontab line, the
# DaemonSet and kp-plot, each validated and, where it can be, run.

load test_helper
load cron_helper

setup() {
	SCRIPTS=$KP_ROOT/scripts
	TWO=$FIXTURES/streams/two-intervals.ndjson
}

# Command $1 with the deployment's paths moved into the test's directory
# and the programs taken from the tests' PATH, not the one it sets.
localise() {
	sed "s|^PATH=[^;]*; ||; s|/var/lib/kp|$BATS_TEST_TMPDIR/lib|g; s|/var/log/kp|$BATS_TEST_TMPDIR/log|g; s|/usr/local/bin/||g" <<<"$1"
}

# Checks an energy log made by three runs: one header, then intervals 1, 2.
check_log() {
	run -0 cut -d, -f1 "$1"
	assert_equal "$(grep -c '^seq$' <<<"$output")" 1
	assert_line -n 0 "seq"
	assert_equal "$(sort -u <<<"$output" | paste -sd,)" "1,2,seq"
	# Every row is a record of one of the two intervals, with energy.
	run -0 awk -F, 'NR > 1 && ($15 == "" || $4 == "") { print }' "$1"
	assert_output ""
	assert_equal "$(grep -c ",node,$(host_zone)," "$1")" 2
}

@test "the systemd service and timer pass systemd-analyze verify" {
	command -v systemd-analyze >/dev/null ||
	    fail "systemd-analyze is not installed (see the README's apt-get list)"
	run -0 systemd-analyze verify --man=no \
	    "$SCRIPTS/kp-energy-log.service" "$SCRIPTS/kp-energy-log.timer"
	assert_output ""
	# And the keys that matter.
	run -0 grep -Fx -e '[Service]' -e 'Type=oneshot' -e 'StateDirectory=kp' \
	    -e 'LogsDirectory=kp' "$SCRIPTS/kp-energy-log.service"
	assert_equal "${#lines[@]}" 4
	run -0 grep -Fx -e '[Timer]' -e 'OnUnitActiveSec=5min' \
	    -e 'WantedBy=timers.target' "$SCRIPTS/kp-energy-log.timer"
	assert_equal "${#lines[@]}" 3
	# A unit systemd would reject is seen as one.
	sed 's/^OnUnitActiveSec/OnUnitActiveSek/' \
	    "$SCRIPTS/kp-energy-log.timer" >"$BATS_TEST_TMPDIR/kp-energy-log.timer"
	run systemd-analyze verify --man=no "$BATS_TEST_TMPDIR/kp-energy-log.timer"
	assert_output --partial "Unknown key 'OnUnitActiveSek'"
}

@test "the guest's powercap tree: libvirt's virtiofs <filesystem> validates against domain.rng, the guest's mount unit verifies" {
	# rapl-read(1), Energy from the host.
	command -v virt-xml-validate >/dev/null ||
	    fail "virt-xml-validate is not installed (libvirt-clients, in the README's apt-get list)"
	run -0 virt-xml-validate "$SCRIPTS/vm-powercap.xml" domain
	run -0 xmllint --noout --xpath 'string(//filesystem[driver/@type="virtiofs"]/target/@dir)' "$SCRIPTS/vm-powercap.xml"
	assert_output kp-host
	# A filesystem libvirt would reject is seen as one.
	sed 's/virtiofs/virtiofz/' "$SCRIPTS/vm-powercap.xml" > "$BATS_TEST_TMPDIR/bad.xml"
	run -3 virt-xml-validate "$BATS_TEST_TMPDIR/bad.xml" domain
	# The guest's side: the tag mounted where the unit's name says.
	run -0 systemd-analyze verify --man=no "$SCRIPTS/run-kphost.mount"
	assert_output ""
	run -0 grep -Fx -e 'What=kp-host' -e 'Where=/run/kphost' -e 'Type=virtiofs' -e 'Options=ro,nofail' "$SCRIPTS/run-kphost.mount"
	assert_equal "${#lines[@]}" 4
	run -0 grep -Fx '#   kp-host /run/kphost virtiofs ro,nofail 0 0' "$SCRIPTS/run-kphost.mount"
	cp "$SCRIPTS/run-kphost.mount" "$BATS_TEST_TMPDIR/kp-host.mount"
	run -1 systemd-analyze verify --man=no "$BATS_TEST_TMPDIR/kp-host.mount"
	assert_output --partial "Where= setting doesn't match unit name"
}

@test "the service appends one interval per run to a CSV log with one header" {
	local pre start i
	pre=$(localise "$(sed -n 's/^ExecStartPre=//p' "$SCRIPTS/kp-energy-log.service")")
	start=$(localise "$(sed -n 's/^ExecStart=//p' "$SCRIPTS/kp-energy-log.service")")
	mkdir "$BATS_TEST_TMPDIR/lib" "$BATS_TEST_TMPDIR/log"
	for i in 1 2 3; do
		eval "$pre"
		eval "$start" 2>/dev/null
		sleep 0.2
	done
	check_log "$BATS_TEST_TMPDIR/log/energy.csv"
}

@test "the README's crontab line appends one interval per run" {
	local line i
	line=$(cron_commands | head -n 1)
	[ -n "$line" ] || fail "no crontab line in the README"
	line=$(localise "$line")
	for i in 1 2 3; do
		sh -c "$line" 2>/dev/null
		sleep 0.2
	done
	check_log "$BATS_TEST_TMPDIR/log/energy.csv"
}

@test "each crontab line of the README and scripts/, pasted alone, works as root after make install" {
	local cmd n=0
	# The suite runs as root: without root this fails, never skips.
	[ "$(id -u)" -eq 0 ] || fail "make install and unshare -m need root, as the suite runs"
	while IFS= read -r cmd; do
		n=$((n + 1))
		check_cron_line "$cmd"
		mkdir "$BATS_TEST_TMPDIR/$n"
		# make install's /usr/local and the line's directories, empty.
		run -0 unshare -m bash -c 'set -e
		    for d in /usr/local /var/lib /var/log; do
			mount -t tmpfs tmpfs "$d"
		    done
		    make -s -C "$1" install >/dev/null
		    "$1/tests/cron-run.sh" "$2" "$3"' _ "$KP_ROOT" \
		    "$BATS_TEST_TMPDIR/$n" "$cmd"
		check_cron_run "$BATS_TEST_TMPDIR/$n"
	done < <(cron_commands)
	[ "$n" -gt 0 ] || fail "no crontab line in the README or scripts/"
}

# Runs the log command(s) $@ twice on a log whose header is an older
# kp-fmt's: the old log is kept aside whole, said once on standard error,
# the new one has today's header, and the second run appends to it.  Then
# once more on a log of yet another header: the first one kept aside is
# kept too, numbered (kp-fmt(1), csv).
check_fresh_log() {
	local log=$BATS_TEST_TMPDIR/log/energy.csv cmd
	local old='seq,ts,dt_us,type,zone,pid,starttime,comm,state,container_id,pod_id,vm_id,unit,cpu_us,energy_uj,active_uj,idle_uj,watts,total_uj,socket,level,by,group'
	local row='1,2026-11-22T13:48:36.123456Z,1000000,node,package,,,,,,,,,,35000000,14000000,21000000,35,35000000,,,,'
	local said="kp: $log: another header than kp-fmt -f csv writes: kept whole as $log.old (an older one as .old.~N~), a new log started"
	rm -rf "$BATS_TEST_TMPDIR/lib" "$BATS_TEST_TMPDIR/log"
	mkdir "$BATS_TEST_TMPDIR/lib" "$BATS_TEST_TMPDIR/log"
	printf '%s\n%s\n' "$old" "$row" >"$log"
	log_runs "$@"
	assert_equal "$(grep -v '^rapl-read: ' "$BATS_TEST_TMPDIR/err")" "$said"
	run -0 cat "$log.old"
	assert_line -n 0 "$old"
	assert_equal "${#lines[@]}" 2
	assert_equal "$(head -n 1 "$log")" "$(kp-fmt -f csv </dev/null)"
	assert_equal "$(head -n 1 "$log")" "$old,source,estimated,model,device"
	sleep 0.2
	log_runs "$@"
	assert_equal "$(grep -v '^rapl-read: ' "$BATS_TEST_TMPDIR/err")" ""
	assert_equal "$(wc -l <"$log.old")" 2
	assert_equal "$(grep -c '^seq,' "$log")" 1
	assert_equal "$(cut -d, -f1 "$log" | sed 1d | sort -u)" 1
	# Another upgrade: the log of today's header goes aside in its turn.
	sed -i '1s/$/,more/' "$log"
	cp "$log" "$BATS_TEST_TMPDIR/second"
	log_runs "$@"
	assert_equal "$(grep -v '^rapl-read: ' "$BATS_TEST_TMPDIR/err")" "$said"
	assert_equal "$(cat "$log.old.~1~")" "$(printf '%s\n%s' "$old" "$row")"
	assert_equal "$(cat "$log.old")" "$(cat "$BATS_TEST_TMPDIR/second")"
	assert_equal "$(grep -c '^seq,' "$log")" 1
}

# log_runs CMD...: each log command once, its standard error kept.
log_runs() {
	local cmd
	: >"$BATS_TEST_TMPDIR/err"
	for cmd in "$@"; do eval "$cmd" 2>>"$BATS_TEST_TMPDIR/err"; done
}

# The log commands of the service (its ExecStartPre, then ExecStart) and
# of the README's crontab line, as check_fresh_log takes them.
service_cmds() {
	localise "$(sed -n 's/^ExecStartPre=//p' "$SCRIPTS/kp-energy-log.service")"
	localise "$(sed -n 's/^ExecStart=//p' "$SCRIPTS/kp-energy-log.service")"
}
cron_cmd() {
	printf 'sh -c %q\n' "$(localise "$(cron_commands | head -n 1)")"
}

@test "a log whose header is not kp-fmt's default is kept aside and started afresh, by the service and the crontab line" {
	local -a svc
	mapfile -t svc < <(service_cmds)
	check_fresh_log "${svc[@]}"
	check_fresh_log "$(cron_cmd)"
}

@test "a log of another header that cannot be moved aside is left whole, nothing appended, by the service and the crontab line" {
	local log=$BATS_TEST_TMPDIR/log/energy.csv cmd
	# mv fails, as on a directory it may not write.
	mkdir "$BATS_TEST_TMPDIR/bin" "$BATS_TEST_TMPDIR/lib" "$BATS_TEST_TMPDIR/log"
	printf '#!/bin/sh\necho "mv: cannot move: Permission denied" >&2\nexit 1\n' \
	    >"$BATS_TEST_TMPDIR/bin/mv"
	chmod +x "$BATS_TEST_TMPDIR/bin/mv"
	printf 'seq,ts,old\n1,2026-11-22T13:48:36.123456Z,x\n' >"$log"
	cp "$log" "$BATS_TEST_TMPDIR/before"
	while IFS= read -r cmd; do
		PATH=$BATS_TEST_TMPDIR/bin:$PATH run -1 --separate-stderr \
		    bash -c "$cmd"
		assert_equal "$stderr" "mv: cannot move: Permission denied"
		assert_equal "$(cat "$log")" "$(cat "$BATS_TEST_TMPDIR/before")"
		[ ! -e "$log.old" ]
	done < <(sed -n 1p <(service_cmds); cron_cmd)
	# The service's ExecStart, which systemd does not run after a failed
	# ExecStartPre, is not tried here.
}

@test "the DaemonSet is valid YAML with the pipeline and a node_exporter sidecar, as the README says" {
	local y=$SCRIPTS/kp-daemonset.yaml
	run -0 yamllint -s -d '{extends: default, rules: {line-length: {max: 100}}}' "$y"
	run -0 python3 - "$y" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
assert len(docs) == 1
ds = docs[0]
assert ds["apiVersion"] == "apps/v1" and ds["kind"] == "DaemonSet"
spec = ds["spec"]["template"]["spec"]
labels = ds["spec"]["template"]["metadata"]["labels"]
assert ds["spec"]["selector"]["matchLabels"].items() <= labels.items()
cs = {c["name"]: c for c in spec["containers"]}
assert set(cs) == {"kp", "node-exporter"}, cs.keys()
vols = {v["name"]: v for v in spec["volumes"]}
assert vols["proc"]["hostPath"]["path"] == "/proc"
assert vols["sys"]["hostPath"]["path"] == "/sys"
assert "emptyDir" in vols["textfile"]
mounts = {c: {m["name"]: m for m in cs[c]["volumeMounts"]} for c in cs}
# The host's /proc and /sys, read-only, only in the pipeline.
for v in ("proc", "sys"):
    assert mounts["kp"][v]["readOnly"] is True
    assert v not in mounts["node-exporter"]
# One textfile directory, written by kp-fmt and read by node_exporter.
d = mounts["kp"]["textfile"]["mountPath"]
assert mounts["node-exporter"]["textfile"]["mountPath"] == d
cmd = " ".join(cs["kp"]["command"])
assert "--textfile " + d + "/" in cmd, cmd
assert "--collector.textfile.directory=" + d in cs["node-exporter"]["args"]
for c in cs.values():
    assert c["image"]
# The node's name from the downward API, for the header and node_name.
env = {e["name"]: e for e in cs["kp"]["env"]}
assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
# Every directory a name comes from (proc-cputime(1), "Names"), read-only
# below the root that proc-cputime is given, in the pipeline only.
assert "proc-cputime -a --proc /host/proc --root /host " in cmd, cmd
# Exit accounting's cgroup counters, the host's below its /sys.
assert "--cgroup-root /host/sys/fs/cgroup |" in cmd, cmd
byhost = {vols[m["name"]]["hostPath"]["path"]: m for m in cs["kp"]["volumeMounts"]
          if "hostPath" in vols[m["name"]]}
for path in ("/var/log/pods", "/var/log/containers", "/var/lib/docker/containers",
             "/var/lib/containers/storage/overlay-containers", "/run/libvirt/qemu",
             "/etc/libvirt/qemu", "/etc/passwd", "/home"):
    assert byhost[path]["mountPath"] == "/host" + path, path
    assert byhost[path]["readOnly"] is True, path
    assert byhost[path]["name"] not in mounts["node-exporter"], path
# The host's pids and network namespace: taskstats works only in the latter.
assert spec["hostPID"] is True and spec["hostNetwork"] is True
assert spec["dnsPolicy"] == "ClusterFirstWithHostNet"
# The exporter's port, on the host's network, is not node_exporter's 9100.
port = cs["node-exporter"]["ports"][0]["containerPort"]
assert port == 9102, port
assert "--web.listen-address=:%d" % port in cs["node-exporter"]["args"]
anns = ds["spec"]["template"]["metadata"]["annotations"]
assert anns["prometheus.io/port"] == str(port)
assert "9100" not in " ".join(cs["node-exporter"]["args"])
# Each capability added, every other dropped, and only in the pipeline.
caps = cs["kp"]["securityContext"]["capabilities"]
assert caps["drop"] == ["ALL"]
assert caps["add"] == ["DAC_READ_SEARCH", "NET_ADMIN", "SYS_PTRACE"], caps
assert "capabilities" not in cs["node-exporter"]["securityContext"]
# Each with its reason in a comment just above it.
text = open(sys.argv[1]).read().splitlines()
reasons = {"DAC_READ_SEARCH": "podman", "NET_ADMIN": "taskstats",
           "SYS_PTRACE": "exe"}
for cap, word in reasons.items():
    i = [n for n, l in enumerate(text) if l.strip() == "- " + cap]
    assert len(i) == 1, cap
    above = []
    for l in reversed(text[:i[0]]):
        if not l.strip().startswith("#"):
            break
        above.append(l)
    assert any(word in l for l in above), (cap, above)
print(cmd.split(" -c ", 1)[1])
PY
	# The pipeline itself runs, here on this host's /proc and /sys.
	local cmd=${lines[-1]}
	cmd=${cmd//\/host\//\/}
	cmd=${cmd//\/var\/lib\/kp\/textfile/$BATS_TEST_TMPDIR}
	cmd=${cmd//-i 10s/-n 2 -i 200ms}
	NODE_NAME=node-7 sh -c "$cmd" 2>/dev/null
	run -0 grep -c "^kepler_node_cpu_joules_total{zone=\"$(host_zone)\",path=\"\",node_name=\"node-7\"} " "$BATS_TEST_TMPDIR/kp.prom"
	assert_output 1
}

@test "kp-plot draws a PNG of power per workload from a CSV log" {
	local csv=$BATS_TEST_TMPDIR/log.csv png
	kp-fmt -f csv <"$TWO" >"$csv"
	for t in process container pod vm; do
		png=$BATS_TEST_TMPDIR/$t.png
		run -0 --separate-stderr "$SCRIPTS/kp-plot" -t "$t" -o "$png" "$csv"
		assert_equal "$stderr" ""
		[ -s "$png" ] || fail "no $png"
		# The PNG signature: \x89 P N G \r \n \x1a \n.
		assert_equal "$(head -c 8 "$png" | od -An -tx1 | tr -d ' ')" 89504e470d0a1a0a
	done
	# A log of one interval (a cron log's second run): one time, drawn
	# without gnuplot's warning of an empty range.
	awk -F, 'NR == 1 || $1 == 1' "$csv" >"$BATS_TEST_TMPDIR/one.csv"
	run -0 --separate-stderr "$SCRIPTS/kp-plot" -o "$png" "$BATS_TEST_TMPDIR/one.csv"
	assert_equal "$stderr" ""
	assert_equal "$(head -c 8 "$png" | od -An -tx1 | tr -d ' ')" 89504e470d0a1a0a
	# Units, groups by a field and host levels, from the whole pipeline.
	"$SCRIPTS/kp-gen" --intervals 4 --processes 30 >"$BATS_TEST_TMPDIR/gen"
	kp-attribute <"$BATS_TEST_TMPDIR/gen" | kp-aggregate --level unit |
	    kp-fmt -f csv >"$csv"
	kp-attribute <"$BATS_TEST_TMPDIR/gen" | kp-aggregate --by comm |
	    kp-fmt -f csv -H | grep ',group,' >>"$csv"
	for t in unit group host; do
		png=$BATS_TEST_TMPDIR/$t.png
		run -0 --separate-stderr "$SCRIPTS/kp-plot" -t "$t" -o "$png" "$csv"
		assert_equal "$stderr" ""
		assert_equal "$(head -c 8 "$png" | od -An -tx1 | tr -d ' ')" 89504e470d0a1a0a
	done
	# From standard input, with a quoted comm, into the default kp.png.
	cd "$BATS_TEST_TMPDIR"
	kp-fmt -f csv <"$FIXTURES/streams/odd-names.ndjson" >odd.csv
	run -0 "$SCRIPTS/kp-plot" -n 1 <odd.csv
	assert_equal "$(head -c 4 kp.png | od -An -c | tr -d ' ')" '211PNG'
}

@test "kp-plot: a log without RAPL is drawn in its platform zone, the title saying estimated by the model" {
	local csv=$BATS_TEST_TMPDIR/log.csv stub=$BATS_TEST_TMPDIR/stub
	# gnuplot's script, kept by a gnuplot that only copies it.
	mkdir "$stub"
	printf '#!/bin/sh\ncp "$1" "%s/plot.gp"\n' "$BATS_TEST_TMPDIR" >"$stub/gnuplot"
	chmod +x "$stub/gnuplot"
	kp-attribute <"$FIXTURES/streams/model.ndjson" | kp-fmt -f csv >"$csv"
	PATH=$stub:$PATH run -0 --separate-stderr "$SCRIPTS/kp-plot" "$csv"
	run -0 grep '^set title' "$BATS_TEST_TMPDIR/plot.gp"
	assert_output 'set title "kp: process power, zone platform, estimated by amd-zen4"'
	run -0 grep -c 'title "nginx\[812\]"' "$BATS_TEST_TMPDIR/plot.gp"
	# A meter's log: platform, measured.
	kp-attribute <"$FIXTURES/streams/meter-1.1.ndjson" | kp-fmt -f csv >"$csv"
	PATH=$stub:$PATH run -0 --separate-stderr "$SCRIPTS/kp-plot" "$csv"
	run -0 grep '^set title' "$BATS_TEST_TMPDIR/plot.gp"
	assert_output 'set title "kp: process power, zone platform"'
	# A RAPL log: package first, as before.
	kp-fmt -f csv <"$TWO" >"$csv"
	PATH=$stub:$PATH run -0 --separate-stderr "$SCRIPTS/kp-plot" "$csv"
	run -0 grep '^set title' "$BATS_TEST_TMPDIR/plot.gp"
	assert_output 'set title "kp: process power, zone package"'
	run -3 --separate-stderr "$SCRIPTS/kp-plot" -t unit -o "$BATS_TEST_TMPDIR/x.png" "$csv"
	assert_equal "$stderr" "kp-plot: no unit records of zone package or platform in the log"
}

@test "kp-plot: errors; its usage is its manual's synopsis" {
	local csv=$BATS_TEST_TMPDIR/log.csv
	run -2 --separate-stderr "$SCRIPTS/kp-plot" -x
	assert_equal "${stderr_lines[-1]}" "usage: $(man_synopsis kp-plot.1)"
	kp-fmt -f csv <"$TWO" >"$csv"
	run -2 --separate-stderr "$SCRIPTS/kp-plot" -t disk "$csv"
	assert_equal "$stderr" "kp-plot: unknown type 'disk' (process, container, pod, vm, unit, group, host, unattributed)"
	run -3 --separate-stderr "$SCRIPTS/kp-plot" -z psys -o "$BATS_TEST_TMPDIR/x.png" "$csv"
	assert_equal "$stderr" "kp-plot: no process records of zone psys in the log"
	run -1 --separate-stderr "$SCRIPTS/kp-plot" "$BATS_TEST_TMPDIR/none.csv"
	assert_equal "$stderr" "kp-plot: cannot read '$BATS_TEST_TMPDIR/none.csv'"
	run -2 --separate-stderr "$SCRIPTS/kp-plot" -n x "$csv"
	assert_equal "$stderr" "kp-plot: -n must be a positive integer: 'x'"
	printf 'a,b\n1,2\n' >"$BATS_TEST_TMPDIR/other.csv"
	run -3 --separate-stderr "$SCRIPTS/kp-plot" "$BATS_TEST_TMPDIR/other.csv"
	assert_equal "$stderr" "kp-plot: the log has no ts column"
}

# Applies udev rule file $1 to the powercap devices of sysfs tree $2 as
# udevd would on their "add" event, with group $3 for the rule's "power":
# each line's keys are checked, matched against the device, and its RUN
# programs run with /sys%p made the device's directory in the tree.
# Prints the kernel name of each device the rule matched.
apply_udev_rule() {
	local line rest key op val dev kernel devpath match glob
	local -a runs argv globs
	while IFS= read -r line; do
		[[ -z $line || $line == \#* ]] && continue
		runs=() rest=$line
		while [[ -n $rest ]]; do
			[[ $rest =~ ^([A-Z]+)(==|!=|\+=|=)\"([^\"]*)\"(,\ |$)(.*)$ ]] ||
			    { echo "not a udev key: '$rest'" >&2; return 1; }
			key=${BASH_REMATCH[1]} op=${BASH_REMATCH[2]}
			val=${BASH_REMATCH[3]} rest=${BASH_REMATCH[5]}
			case $key$op in
			ACTION==|SUBSYSTEM==|KERNEL==) ;;
			RUN+=) runs+=("$val") ;;
			*) echo "unexpected key '$key$op'" >&2; return 1 ;;
			esac
		done
		while IFS= read -r dev; do
			dev=${dev%/energy_uj} kernel=${dev##*/}
			devpath=${dev#"$2"}
			match=1
			[[ $line == *'ACTION=="add"'* ]] || match=0
			[[ $line == *'SUBSYSTEM=="powercap"'* ]] || match=0
			[[ $line =~ KERNEL==\"([^\"]*)\" ]] || match=0
			IFS='|' read -ra globs <<<"${BASH_REMATCH[1]}"
			glob=0
			for val in "${globs[@]}"; do
				# shellcheck disable=SC2053
				[[ $kernel == $val ]] && glob=1
			done
			((match && glob)) || continue
			echo "$kernel"
			for val in "${runs[@]}"; do
				val=${val//\/sys%p/$2$devpath}
				read -ra argv <<<"$val"
				[[ ${argv[1]} == power ]] && argv[1]=$3
				"${argv[@]}" || return 1
			done
		done < <(find "$2/devices" -name energy_uj | sort)
	done <"$1"
}

@test "the udev rule is well formed and, applied, lets its group read energy_uj" {
	local rule=$SCRIPTS/70-powercap.rules dir group
	# The README says how to install it.
	grep -q 'scripts/70-powercap.rules' "$KP_ROOT/README"
	grep -q 'udevadm control --reload' "$KP_ROOT/README"
	dir=$(mktemp -d "${TMPDIR:-/tmp}/kp-udev.XXXXXX")
	chmod 755 "$dir"
	cp -R "$FIXTURES/sysfs-mmio" "$dir/sys"
	chmod -R a+rX "$dir/sys"
	find "$dir/sys/devices" -name energy_uj -exec chmod 0400 {} +
	if [ "$(id -u)" -eq 0 ]; then
		# Before: nobody cannot read the counters.
		run -5 as_nobody rapl-read --sysfs "$dir/sys" --source powercap -n 1 -i 10ms
	fi
	# As root the group is nobody's, which then reads; else one's own.
	group=$(id -gn)
	[ "$(id -u)" -ne 0 ] || group=$(id -gn nobody)
	run -0 apply_udev_rule "$rule" "$dir/sys" "$group"
	# The package, core and mmio zones; not the control type itself.
	assert_output - <<'EOF2'
intel-rapl-mmio:0
intel-rapl:0
intel-rapl:0:0
intel-rapl:1
EOF2
	run -0 bash -c 'find "$1/sys/devices" -name energy_uj -exec stat -c %A {} + | sort -u' _ "$dir"
	assert_output "-r--r-----"
	if [ "$(id -u)" -eq 0 ]; then
		# After: a member of the group (here nobody's own) can.
		run -0 as_nobody rapl-read --sysfs "$dir/sys" --source powercap -n 1 -i 10ms
		assert_line --partial '"type":"energy","seq":1,"zone":"package",'
		assert_line --partial '"source":"powercap"'
	fi
	rm -rf "$dir"
}

@test "kp-gen --dense 1: every live process each interval, and the cpu record says so" {
	"$SCRIPTS/kp-gen" --seed 2 --intervals 30 --processes 12 --churn 100 \
	    --dense 1 > "$BATS_TEST_TMPDIR/gen"
	# 12 running records an interval, a terminated one for each that ended.
	run -0 jq -s -c '[group_by(.seq)[] | map(select(.type == "proc" and
	    .state == "running")) | length] | unique' "$BATS_TEST_TMPDIR/gen"
	assert_output '[0,12]'	# 0: the header's seq 0
	run -0 jq -s -c '[.[] | select(.type == "cpu") | .dense] | unique' \
	    "$BATS_TEST_TMPDIR/gen"
	assert_output '[true]'
	# The same run without --dense is what it always was: sparse.
	"$SCRIPTS/kp-gen" --seed 2 --intervals 30 --processes 12 --churn 100 \
	    > "$BATS_TEST_TMPDIR/sparse"
	run -0 jq -s -c '[.[] | select(.type == "cpu") | has("dense")] | unique' \
	    "$BATS_TEST_TMPDIR/sparse"
	assert_output '[false]'
	[ "$(grep -c '"type":"proc"' "$BATS_TEST_TMPDIR/sparse")" -lt \
	    "$(grep -c '"type":"proc"' "$BATS_TEST_TMPDIR/gen")" ]
}

@test "kp-gen --exited N: N exited records an interval, within the node's CPU time but when skewed" {
	local gen=$BATS_TEST_TMPDIR/gen
	"$SCRIPTS/kp-gen" --seed 3 --intervals 600 --processes 20 --exited 4 > "$gen"
	# Every line reads by the rules, exited records included.
	run -0 --separate-stderr kp-fmt -f json < "$gen"
	# 4 an interval, but in the rare intervals without any record.
	run -0 jq -s -c '[group_by(.seq)[] | map(select(.type == "exited")) | length] | unique' "$gen"
	assert_output '[0,4]'
	# Processes and exited records within the node's CPU time, but in the
	# rare skewed intervals, which kp-attribute scales down.
	run -0 jq -s -r '[group_by(.seq)[] | select(.[0].seq > 0) |
	    (map(select(.type == "proc" or .type == "exited") | .cpu_us) | add // 0) as $w |
	    map(select(.type == "cpu"))[0].cpu_us as $n |
	    select($w > $n) | .[0].seq] | length' "$gen"
	[ "$output" -gt 0 ] && [ "$output" -lt 20 ]
	skewed=$output
	run -0 bash -c 'kp-attribute < "$1" | jq -s "[.[] | select(.type == \"unattributed\" and .zone == \"package\" and .scaled_down)] | length"' _ "$gen"
	assert_output "$skewed"
	# Seeded, and without it there are none.
	cmp "$gen" <("$SCRIPTS/kp-gen" --seed 3 --intervals 600 --processes 20 --exited 4)
	refute grep -q '"type":"exited"' <("$SCRIPTS/kp-gen" --seed 3 --intervals 600 --processes 20)
}

@test "the README's crontab line with a failing rapl-read: no stage's window moves" {
	local line stub=$BATS_TEST_TMPDIR/stub f
	line=$(cron_commands | head -n 1)
	line=$(localise "$line")
	mkdir "$stub"
	printf '#!/bin/sh\necho "rapl-read: no usable energy source" >&2\nexit 4\n' \
	    > "$stub/rapl-read"
	chmod +x "$stub/rapl-read"
	sh -c "$line" 2>/dev/null
	for f in rapl-read proc-cputime kp-attribute; do
		cp "$BATS_TEST_TMPDIR/lib/$f.state" "$BATS_TEST_TMPDIR/$f.before"
	done
	# rapl-read fails before its header: every later stage gets nothing.
	run --separate-stderr env PATH="$stub:$PATH" sh -c "$line"
	assert_equal "$stderr" "rapl-read: no usable energy source
proc-cputime: <stdin>: empty input: the stage before failed; $BATS_TEST_TMPDIR/lib/proc-cputime.state is not advanced
kp-attribute: <stdin>: empty input: the stage before failed; $BATS_TEST_TMPDIR/lib/kp-attribute.state is not advanced"
	for f in rapl-read proc-cputime kp-attribute; do
		cmp "$BATS_TEST_TMPDIR/lib/$f.state" "$BATS_TEST_TMPDIR/$f.before"
	done
	sleep 0.2
	sh -c "$line" 2>/dev/null
	sh -c "$line" 2>/dev/null
	check_log "$BATS_TEST_TMPDIR/log/energy.csv"
	# The energy window and the CPU window of each run are one: both
	# stages stored the same seq, from samples taken in the same runs.
	assert_equal "$(jq .data.seq "$BATS_TEST_TMPDIR/lib/rapl-read.state")" 2
	assert_equal "$(jq .data.seq "$BATS_TEST_TMPDIR/lib/proc-cputime.state")" 2
}
