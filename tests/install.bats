#!/usr/bin/env bats
# make install, make uninstall and make deb: what they copy where, and the
# .deb installed with dpkg running the README's crontab line.

load test_helper
load cron_helper

setup() {
	VERSION=$(sed -n 's/^VERSION = //p' "$KP_ROOT/config.mk")
	DEST=$BATS_TEST_TMPDIR/dest
}

# The files under directory $1, with their modes, one a line, sorted.
files_under() {
	(cd "$1" && find . -type f -printf '%P %m\n' | LC_ALL=C sort)
}

@test "make install copies the programs, their pages, kp-plot, the units and the udev rule; make uninstall removes them" {
	run -0 make -s -C "$KP_ROOT" install DESTDIR="$DEST"
	run -0 files_under "$DEST"
	assert_output - <<'EOF2'
usr/local/bin/kp-aggregate 755
usr/local/bin/kp-attribute 755
usr/local/bin/kp-fmt 755
usr/local/bin/kp-plot 755
usr/local/bin/proc-cputime 755
usr/local/bin/rapl-read 755
usr/local/lib/systemd/system/kp-energy-log.service 644
usr/local/lib/systemd/system/kp-energy-log.timer 644
usr/local/lib/udev/rules.d/70-powercap.rules 644
usr/local/share/man/man1/kp-aggregate.1 644
usr/local/share/man/man1/kp-attribute.1 644
usr/local/share/man/man1/kp-fmt.1 644
usr/local/share/man/man1/kp-plot.1 644
usr/local/share/man/man1/proc-cputime.1 644
usr/local/share/man/man1/rapl-read.1 644
usr/local/share/man/man5/kp-records.5 644
EOF2
	cmp "$KP_ROOT/cmd/kp-fmt" "$DEST/usr/local/bin/kp-fmt"
	cmp "$KP_ROOT/scripts/70-powercap.rules" \
	    "$DEST/usr/local/lib/udev/rules.d/70-powercap.rules"
	# The service runs the programs where PREFIX put them.
	cmp "$KP_ROOT/scripts/kp-energy-log.service" \
	    "$DEST/usr/local/lib/systemd/system/kp-energy-log.service"
	run -0 make -s -C "$KP_ROOT" uninstall DESTDIR="$DEST"
	run -0 files_under "$DEST"
	assert_output ""
}

@test "make install PREFIX=/usr: the service names /usr/bin's programs; the units go where UNITDIR says" {
	run -0 make -s -C "$KP_ROOT" install DESTDIR="$DEST" PREFIX=/usr \
	    UNITDIR=/lib/systemd/system UDEVDIR=/lib/udev/rules.d
	run -0 grep -h '^ExecStart' "$DEST/lib/systemd/system/kp-energy-log.service"
	assert_equal "${#lines[@]}" 2
	refute_output --partial /usr/local
	assert_output --partial "/usr/bin/kp-fmt -f csv </dev/null"
	assert_output --partial "/usr/bin/rapl-read --state "
	[ -x "$DEST/usr/bin/rapl-read" ] && [ -f "$DEST/usr/share/man/man5/kp-records.5" ]
	[ -f "$DEST/lib/udev/rules.d/70-powercap.rules" ]
	run -0 make -s -C "$KP_ROOT" uninstall DESTDIR="$DEST" PREFIX=/usr \
	    UNITDIR=/lib/systemd/system UDEVDIR=/lib/udev/rules.d
	run -0 files_under "$DEST"
	assert_output ""
}

# make deb, once for the tests below: kp_VERSION_ARCH.deb in the top
# directory, the name it printed.
make_deb() {
	DEB=$KP_ROOT/kp_${VERSION}_$(dpkg --print-architecture).deb
	rm -f "$DEB"
	run -0 make -s -C "$KP_ROOT" deb
	assert_output "$(basename "$DEB")"
	[ -f "$DEB" ] || fail "no $DEB"
}

@test "make deb writes kp_VERSION_ARCH.deb: Debian's paths, the libraries it needs, and lintian finds no error" {
	make_deb
	run -0 bash -c 'dpkg-deb -c "$1" | awk "{ print \$1, \$6 }" | grep -v "^d"' _ "$DEB"
	assert_output - <<'EOF2'
-rw-r--r-- ./lib/systemd/system/kp-energy-log.service
-rw-r--r-- ./lib/systemd/system/kp-energy-log.timer
-rw-r--r-- ./lib/udev/rules.d/70-powercap.rules
-rwxr-xr-x ./usr/bin/kp-aggregate
-rwxr-xr-x ./usr/bin/kp-attribute
-rwxr-xr-x ./usr/bin/kp-fmt
-rwxr-xr-x ./usr/bin/kp-plot
-rwxr-xr-x ./usr/bin/proc-cputime
-rwxr-xr-x ./usr/bin/rapl-read
-rw-r--r-- ./usr/share/doc/kp/changelog.gz
-rw-r--r-- ./usr/share/doc/kp/copyright
-rw-r--r-- ./usr/share/man/man1/kp-aggregate.1.gz
-rw-r--r-- ./usr/share/man/man1/kp-attribute.1.gz
-rw-r--r-- ./usr/share/man/man1/kp-fmt.1.gz
-rw-r--r-- ./usr/share/man/man1/kp-plot.1.gz
-rw-r--r-- ./usr/share/man/man1/proc-cputime.1.gz
-rw-r--r-- ./usr/share/man/man1/rapl-read.1.gz
-rw-r--r-- ./usr/share/man/man5/kp-records.5.gz
EOF2
	run -0 bash -c 'dpkg-deb -c "$1" | awk "{ print \$2 }" | sort -u' _ "$DEB"
	assert_output "root/root"
	assert_equal "$(dpkg-deb -f "$DEB" Package Version)" \
	    "$(printf 'Package: kp\nVersion: %s' "$VERSION")"
	# Every library the programs link with, by its package.
	run -0 dpkg-deb -f "$DEB" Depends
	assert_output --regexp '(^|, )libc6( |,|$)'
	assert_output --regexp '(^|, )libjansson4( |,|$)'
	! objdump -p "$KP_ROOT"/cmd/* 2>/dev/null | grep -q 'NEEDED.*libcurl' ||
	    assert_output --regexp '(^|, )libcurl4( |,|$)'
	# The service names the programs where the package puts them.
	run -0 bash -c 'dpkg-deb --fsys-tarfile "$1" |
	    tar -xOf - ./lib/systemd/system/kp-energy-log.service' _ "$DEB"
	assert_output --partial 'ExecStart=/bin/bash -c '"'"'set -o pipefail; /usr/bin/rapl-read --state '
	if command -v lintian >/dev/null; then
		run lintian "$DEB"
		refute_line --regexp '^E: '
	fi
	rm -f "$DEB"
}

@test "installed from the .deb with dpkg, the crontab line works; dpkg -r leaves none of its files" {
	# The suite runs as root: without root this fails, never skips.
	[ "$(id -u)" -eq 0 ] || fail "dpkg -i and unshare -m need root, as the suite runs"
	local cmd
	make_deb
	cmd=$(cron_commands | head -n 1)
	check_cron_line "$cmd"
	mkdir "$BATS_TEST_TMPDIR/run"
	# /usr and /var copied on write, so the host keeps its own; an empty
	# /usr/local, so that a make install there is not what runs.
	run -0 unshare -m bash -c 'set -e
	    for d in /usr /var; do
		mkdir -p "$2/$d/up" "$2/$d/work"
		mount -t overlay overlay \
		    -o "lowerdir=$d,upperdir=$2/$d/up,workdir=$2/$d/work" "$d"
	    done
	    mount -t tmpfs tmpfs /usr/local
	    rm -rf /var/lib/kp /var/log/kp
	    dpkg --no-triggers -i "$1" >/dev/null
	    "$3/tests/cron-run.sh" "$2/run" "$4"
	    dpkg -r kp >/dev/null
	    dpkg-deb -c "$1" | awk "{ print \$6 }" | sed "s|^\.||" |
		while read -r f; do [ -d "$f" ] || [ ! -e "$f" ] || echo "$f"; done
	    ' _ "$DEB" "$BATS_TEST_TMPDIR" "$KP_ROOT" "$cmd"
	assert_output ""
	check_cron_run "$BATS_TEST_TMPDIR/run"
	rm -f "$DEB"
}
