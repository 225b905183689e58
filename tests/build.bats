#!/usr/bin/env bats
# The build: warnings are errors under gcc and clang; install and uninstall
# put exactly the programs and pages in place and take them away again.

load test_helper

# A copy of the sources, built apart from the tree under test.
copy_tree() {
	mkdir "$BATS_TEST_TMPDIR/src"
	cp -R "$KP_ROOT"/Makefile "$KP_ROOT"/config.mk "$KP_ROOT"/cmd \
	    "$KP_ROOT"/lib "$KP_ROOT"/man "$BATS_TEST_TMPDIR/src"
	# What make install copies from scripts/ besides the programs.
	mkdir "$BATS_TEST_TMPDIR/src/scripts"
	cp "$KP_ROOT"/scripts/kp-plot "$KP_ROOT"/scripts/kp-energy-log.* \
	    "$KP_ROOT"/scripts/70-powercap.rules "$BATS_TEST_TMPDIR/src/scripts"
	make -C "$BATS_TEST_TMPDIR/src" clean >/dev/null
}

@test "gcc builds all five with -Wall -Wextra -Werror" {
	copy_tree
	run make -C "$BATS_TEST_TMPDIR/src" CC=gcc
	assert_success
	refute_output --partial warning
}

@test "clang builds all five with -Wall -Wextra -Werror" {
	command -v clang >/dev/null || fail "clang is not installed"
	copy_tree
	run make -C "$BATS_TEST_TMPDIR/src" CC=clang
	assert_success
	refute_output --partial warning
}

@test "make SANITIZE=1 builds with clang, whose UBSan checks pointer overflow" {
	copy_tree
	run -0 make -n -C "$BATS_TEST_TMPDIR/src" SANITIZE=1 lib/record.o
	assert_line --regexp '^clang .*-fsanitize=address,undefined '
	run -0 make -n -C "$BATS_TEST_TMPDIR/src" SANITIZE= lib/record.o
	assert_line --regexp '^cc '
}

@test "make install and make uninstall with PREFIX and DESTDIR" {
	copy_tree
	D=$BATS_TEST_TMPDIR/dest
	make -C "$BATS_TEST_TMPDIR/src" >/dev/null
	run make -C "$BATS_TEST_TMPDIR/src" install PREFIX=/opt/kp DESTDIR="$D"
	assert_success
	run bash -c 'cd "$1" && find . -type f | sort' _ "$D"
	assert_output - <<-'OUT'
	./opt/kp/bin/kp-aggregate
	./opt/kp/bin/kp-attribute
	./opt/kp/bin/kp-fmt
	./opt/kp/bin/kp-plot
	./opt/kp/bin/proc-cputime
	./opt/kp/bin/rapl-read
	./opt/kp/lib/systemd/system/kp-energy-log.service
	./opt/kp/lib/systemd/system/kp-energy-log.timer
	./opt/kp/lib/udev/rules.d/70-powercap.rules
	./opt/kp/share/man/man1/kp-aggregate.1
	./opt/kp/share/man/man1/kp-attribute.1
	./opt/kp/share/man/man1/kp-fmt.1
	./opt/kp/share/man/man1/kp-plot.1
	./opt/kp/share/man/man1/proc-cputime.1
	./opt/kp/share/man/man1/rapl-read.1
	./opt/kp/share/man/man5/kp-records.5
	OUT
	"$D/opt/kp/bin/kp-fmt" -f json < /dev/null
	# The service runs the programs where PREFIX put them.
	grep -q "^ExecStart=.* /opt/kp/bin/rapl-read --state " \
	    "$D/opt/kp/lib/systemd/system/kp-energy-log.service"
	run make -C "$BATS_TEST_TMPDIR/src" uninstall PREFIX=/opt/kp DESTDIR="$D"
	assert_success
	assert_equal "$(find "$D" -type f | wc -l)" 0
}

@test "make clean leaves only the sources" {
	copy_tree
	make -C "$BATS_TEST_TMPDIR/src" >/dev/null
	touch "$BATS_TEST_TMPDIR/src/kp_0.1_amd64.deb"	# as make deb names it
	make -C "$BATS_TEST_TMPDIR/src" clean >/dev/null
	run find "$BATS_TEST_TMPDIR/src" -path "$BATS_TEST_TMPDIR/src/scripts" \
	    -prune -o \( -name '*.o' -o -name '*.a' -o -name '*.deb' -o \
	    -type f -perm -u+x \) -print
	assert_output ""
}

# "caller callee" for each pair of lib/ objects (as make built them) where
# the first needs a symbol the second defines.
lib_calls() {
	obj_calls "$KP_ROOT"/lib/*.o "$KP_ROOT"/lib/proc/*.o
}

# "caller callee" for each object of those given that calls another's
# function, paths from the top.
obj_calls() {
	local o
	for o in "$@"; do
		nm -g --defined-only "$o" |
		    awk -v o="${o#"$KP_ROOT"/}" 'NF == 3 { print o, "D", $3 }'
		nm -u "$o" | awk -v o="${o#"$KP_ROOT"/}" '{ print o, "U", $NF }'
	done | awk '$2 == "D" { def[$3] = $1 } $2 == "U" { n++; by[n] = $1; sym[n] = $3 }
	    END { for (i = 1; i <= n; i++)
		if (sym[i] in def && def[sym[i]] != by[i]) print by[i], def[sym[i]] }' |
	    sort -u
}

@test "lib/ in two layers: the protocol calls nothing of lib/proc/, and no two files call each other" {
	lib_calls > "$BATS_TEST_TMPDIR/calls"
	# The engine stands on the protocol: the calls are there to check.
	grep -q '^lib/proc/sampler.o lib/write.o$' "$BATS_TEST_TMPDIR/calls"
	run awk '$1 !~ /^lib\/proc\// && $2 ~ /^lib\/proc\//' "$BATS_TEST_TMPDIR/calls"
	assert_output ""
	run awk '{ e[$1 " " $2] = 1 } END { for (k in e) { split(k, p, " ")
	    if ((p[2] " " p[1]) in e) print k } }' "$BATS_TEST_TMPDIR/calls"
	assert_output ""
}

# The pairs of "caller callee" lines on stdin that call each other.
mutual() {
	awk '{ e[$1 " " $2] = 1 } END { for (k in e) { split(k, p, " ")
	    if ((p[2] " " p[1]) in e) print k } }'
}

@test "a program's parts call one way: no two files of kp-attribute, kp-aggregate or kp-fmt call each other" {
	local d
	for d in attribute aggregate fmt; do
		obj_calls "$KP_ROOT"/cmd/$d/*.o > "$BATS_TEST_TMPDIR/$d"
		run mutual < "$BATS_TEST_TMPDIR/$d"
		assert_output ""
	done
	# The calls are there to check: the end of an interval splits it.
	grep -q '^cmd/attribute/track.o cmd/attribute/split.o$' \
	    "$BATS_TEST_TMPDIR/attribute"
	grep -q '^cmd/aggregate/main.o cmd/aggregate/end.o$' \
	    "$BATS_TEST_TMPDIR/aggregate"
}

# Each object's variables in .data or .bss: the state a program could
# change outside a call.  Tables are const, in .rodata or .data.rel.ro;
# the sanitizer build (make SANITIZE=1, clang) adds variables of its own:
# AddressSanitizer a marker for each global, UndefinedBehaviorSanitizer an
# unnamed record of each check's source place.
writable() {
	local o
	for o in "$@"; do
		objdump -t "$o" | awk -v o="${o#"$KP_ROOT"/}" \
		    '$3 == "O" && $4 ~ /^\.(data|bss)$/ &&
		    $NF !~ /^(__odr_asan|__unnamed_[0-9]+$)/ { print o, $NF }'
	done
}

@test "proc-cputime, kp-attribute, kp-aggregate and kp-fmt keep no mutable file-scope state but signal flags" {
	writable "$KP_ROOT"/cmd/proc-cputime.o "$KP_ROOT"/cmd/attribute/*.o \
	    "$KP_ROOT"/cmd/aggregate/*.o "$KP_ROOT"/cmd/fmt/*.o | sort \
	    > "$BATS_TEST_TMPDIR/writable"
	# kp-fmt -f top's: the terminal to give back, its keys' modes to
	# restore, and a change of size (SIGWINCH), which its signal handlers
	# read or set (kp-fmt(1), -f top).
	run cat "$BATS_TEST_TMPDIR/writable"
	assert_output - <<-'EOF'
	cmd/fmt/top.o keys_fd
	cmd/fmt/top.o keys_saved
	cmd/fmt/top.o term_active
	cmd/fmt/top.o term_resized
	EOF
}

@test "the benchmark runs every stage and reports ratios to its baseline" {
	# tiny: 3 intervals of 20 processes; memory with 50 live; 2 runs
	run "$KP_ROOT/scripts/bench-stages" 3 20 50 2
	assert_success
	assert_line -n 0 --regexp '^bench: 3 intervals of 20 processes, [0-9]+ records into kp-attribute, [0-9]+ into kp-aggregate, median of 2 runs$'
	assert_line -n 1 --regexp '^  jq -c \. \(baseline\) +[0-9.]+ ms +[0-9]+ records/s +1\.00x jq$'
	assert_line -n 2 --regexp '^  kp-attribute +[0-9.]+ ms +[0-9]+ records/s +[0-9.]+x jq$'
	assert_line -n 3 --regexp '^  kp-attribute: [0-9.]+x the throughput of jq \(goal: 3x\) (ok|MISSED)$'
	assert_line --regexp '^  kp-aggregate +[0-9.]+ ms '
	assert_line --regexp '^  kp-aggregate: [0-9.]+x the throughput of jq \(goal: 3x\) (ok|MISSED)$'
	if [ -x /usr/bin/time ]; then
		assert_line --regexp '^  kp-attribute, 50 live processes +[0-9.]+ MiB'
		assert_line --regexp '^  kp-aggregate, 50 live processes +[0-9.]+ MiB'
	fi
}

# bench_line STAGE: bench-memory-interval's line of STAGE is in $output.
bench_line() {
	assert_line --regexp "^  $1 +input +[0-9.]+ MiB  peak +[0-9.]+ MiB  goal +[0-9.]+ MiB +[0-9.]+x  (ok|MISSED)  [0-9.]+ s\$"
}

@test "bench-memory-interval reports each stage's and kp-fmt mode's peak against one interval's size, and its time" {
	run -0 "$KP_ROOT/scripts/bench-memory-interval" 30
	assert_line -n 0 "bench-memory-interval: one interval of 30 processes"
	assert_equal "${#lines[@]}" 14
	for stage in kp-attribute kp-aggregate 'kp-attribute --state' \
	    'kp-attribute, loading' 'kp-aggregate --state' \
	    'kp-aggregate, loading' 'kp-fmt -f table' 'kp-fmt -f top' 'kp-fmt -f csv' \
	    'kp-fmt -f json' 'kp-fmt -f prometheus' 'kp-fmt --summary' 'kp-fmt --textfile'; do
		bench_line "$stage"
	done
	# --state: the stages and their --state rows alone, no kp-fmt
	run -0 "$KP_ROOT/scripts/bench-memory-interval" --state 30
	assert_equal "${#lines[@]}" 7
	for stage in kp-attribute kp-aggregate 'kp-attribute --state' \
	    'kp-attribute, loading' 'kp-aggregate --state' \
	    'kp-aggregate, loading'; do
		bench_line "$stage"
	done
}

@test "bench-gpu reports the scan with and without GPU time, and the cost a descriptor" {
	run -0 "$KP_ROOT/scripts/bench-gpu" 20 1
	assert_equal "${#lines[@]}" 3
	assert_line -n 0 --regexp '^processes in /proc, descriptors +[0-9]+, [0-9]+$'
	assert_line -n 1 --regexp '^--no-gpu: steady scan +-?[0-9.]+ ms$'
	assert_line -n 2 --regexp '^GPU time: steady scan +-?[0-9.]+ ms +-?[0-9.]+x, -?[0-9.]+ us more a descriptor$'
}

@test "bench-memory reports each stage's peak over a tenth and all of a run" {
	run -0 "$KP_ROOT/scripts/bench-memory" 20 5
	assert_line -n 0 "bench-memory: peak resident size, 2 intervals against 20, 5 processes alive"
	assert_equal "${#lines[@]}" 13
	local kind stage
	for kind in "sparse, terminated" "sparse, unsaid" "dense, terminated" "dense, unsaid"; do
		for stage in kp-attribute kp-aggregate "kp-fmt --summary"; do
			assert_line --regexp "^  $kind +$stage +[0-9.]+ MiB -> +[0-9.]+ MiB +[0-9.]+x  (ok \\(flat\\)|grows to its cap|MISSED)\$"
		done
	done
}
