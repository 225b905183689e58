#!/usr/bin/env bats
# kp-fmt -f powercap --dir DIR: each VM's energy as a powercap tree its
# guest reads like RAPL (kp-fmt(1), Powercap trees).

load test_helper

U=8e4b3a3c-1c2d-4e5f-8a9b-0c1d2e3f4a5b
RAPL=devices/virtual/powercap/intel-rapl

setup() {
	IN=$BATS_TEST_TMPDIR/in
	DIR=$BATS_TEST_TMPDIR/vms
	mkdir "$DIR"
	echo '{"type":"header","seq":0,"version":"1.2","producer":"test","node_name":"node-a"}' > "$IN"
}

# node SEQ ZONE UJ: the host measures ZONE.
node() {
	printf '{"type":"node","seq":%s,"zone":"%s","energy_uj":%s,"source":"powercap","estimated":false}\n' \
	    "$1" "$2" "$3" >> "$IN"
}
# vm SEQ ZONE UJ [VM_ID]
vm() {
	printf '{"type":"vm","seq":%s,"zone":"%s","vm_id":"%s","vm_name":"web-01","processes":2,"cpu_us":10,"energy_uj":%s,"watts":1,"total_uj":%s,"state":"running"}\n' \
	    "$1" "$2" "${4:-$U}" "$3" "$3" >> "$IN"
}
interval() {
	printf '{"type":"interval","seq":%s,"dt_us":%s}\n' "$1" "${2:-1000000}" >> "$IN"
}
counter() {
	cat "$DIR/${2:-$U}/class/powercap/$1/energy_uj"
}

@test "the kernel's layout: package-0 and its dram subzone, linked from class/powercap; kp-host" {
	node 1 package 1000; node 1 dram 100
	vm 1 package 400; vm 1 dram 40
	interval 1
	run -0 kp-fmt -f powercap --dir "$DIR" < "$IN"
	assert_output ""
	assert_equal "$(readlink "$DIR/$U/class/powercap/intel-rapl:0")" "../../$RAPL/intel-rapl:0"
	assert_equal "$(readlink "$DIR/$U/class/powercap/intel-rapl:0:0")" "../../$RAPL/intel-rapl:0/intel-rapl:0:0"
	assert_equal "$(cat "$DIR/$U/$RAPL/intel-rapl:0/name")" package-0
	assert_equal "$(cat "$DIR/$U/$RAPL/intel-rapl:0/intel-rapl:0:0/name")" dram
	assert_equal "$(cat "$DIR/$U/class/powercap/intel-rapl:0/max_energy_range_uj")" 262143328850
	assert_equal "$(cat "$DIR/$U/class/powercap/intel-rapl:0/enabled")" 0
	assert_equal "$(counter intel-rapl:0) $(counter intel-rapl:0:0)" "400 40"
	run -0 cat "$DIR/$U/kp-host"
	assert_output - <<-EOF
		node node-a
		vm_id $U
		interval_us 1000000
	EOF
	# Nothing else: no zone the host does not measure, no temporaries.
	assert_equal "$(find "$DIR/$U" -name '.*' | wc -l)" 0
	[ ! -e "$DIR/$U/class/powercap/intel-rapl:1" ]
}

@test "no state: each run reads the counters back and adds; a VM without records in a zone the host measures stays" {
	node 1 package 1000; node 1 dram 100
	vm 1 package 400; vm 1 dram 40
	interval 1
	run -0 kp-fmt -f powercap --dir "$DIR" < "$IN"
	sed -i 's/"seq":1/"seq":2/' "$IN"
	sed -i '/"zone":"dram","vm_id"/d' "$IN"
	run -0 kp-fmt -f powercap --dir "$DIR" < "$IN"
	assert_equal "$(counter intel-rapl:0) $(counter intel-rapl:0:0)" "800 40"
}

@test "one run of several intervals adds each, a VM left out of one included" {
	node 1 package 1000; vm 1 package 400; interval 1
	node 2 package 1000; vm 2 package 100; interval 2
	node 3 package 1000; interval 3
	node 4 package 1000; vm 4 package 10; interval 4
	run -0 kp-fmt -f powercap --dir "$DIR" < "$IN"
	assert_equal "$(counter intel-rapl:0)" 510
	run -0 kp-fmt -f powercap --dir "$DIR" < "$IN"
	assert_equal "$(counter intel-rapl:0)" 1020
}

@test "a counter wraps at max_energy_range_uj as RAPL's does" {
	node 1 package 1000
	vm 1 package 400
	interval 1
	run -0 kp-fmt -f powercap --dir "$DIR" < "$IN"
	echo 262143328700 > "$DIR/$U/$RAPL/intel-rapl:0/energy_uj"
	run -0 kp-fmt -f powercap --dir "$DIR" < "$IN"
	assert_equal "$(counter intel-rapl:0)" 250
}

@test "the platform zone, where the host has one, is intel-rapl:1 named platform" {
	node 1 package 1000; node 1 platform 3000
	vm 1 package 400; vm 1 platform 900
	interval 1
	run -0 kp-fmt -f powercap --dir "$DIR" < "$IN"
	assert_equal "$(cat "$DIR/$U/class/powercap/intel-rapl:1/name") $(counter intel-rapl:1)" "platform 900"
	[ ! -e "$DIR/$U/class/powercap/intel-rapl:0:0" ]
}

@test "a VM gone from the stream keeps its tree for a day after its kp-host last changed, then it goes" {
	node 1 package 1000
	vm 1 package 400
	vm 1 package 100 gone-vm
	interval 1
	run -0 kp-fmt -f powercap --dir "$DIR" < "$IN"
	sed -i '/gone-vm/d; s/"seq":1/"seq":2/' "$IN"
	touch -d '23 hours ago' "$DIR/gone-vm/kp-host"
	run -0 kp-fmt -f powercap --dir "$DIR" < "$IN"
	assert_equal "$(counter intel-rapl:0 gone-vm)" 100
	touch -d '25 hours ago' "$DIR/gone-vm/kp-host"
	run -0 kp-fmt -f powercap --dir "$DIR" < "$IN"
	[ ! -e "$DIR/gone-vm" ]
	assert_equal "$(counter intel-rapl:0)" 1200
}

@test "a vm_id that cannot name a directory is reported with its line, exit 3; the others are written" {
	node 1 package 1000
	vm 1 package 400 ../../etc
	vm 1 package 400
	interval 1
	run -3 --separate-stderr kp-fmt -f powercap --dir "$DIR" < "$IN"
	assert_equal "$stderr" "kp-fmt: <stdin>:3: vm_id '../../etc' cannot name a directory: no powercap tree for it"
	assert_equal "$(ls "$DIR")" "$U"
}

@test "an interval cut short gives its energy to no tree" {
	node 1 package 1000
	vm 1 package 400
	interval 1
	node 2 package 1000
	vm 2 package 400
	node 3 package 1000
	vm 3 package 400
	interval 3
	run -3 kp-fmt -f powercap --dir "$DIR" < "$IN"
	assert_equal "$(counter intel-rapl:0)" 800
}

@test "-f powercap wants --dir, an existing directory" {
	run -2 --separate-stderr kp-fmt -f powercap < "$IN"
	assert_equal "$stderr" "kp-fmt: -f powercap wants --dir"
	run -1 --separate-stderr kp-fmt -f powercap --dir "$DIR/none" < "$IN"
	assert_equal "$stderr" "kp-fmt: --dir '$DIR/none': No such file or directory"
	run -2 --separate-stderr kp-fmt -f json --dir "$DIR" < "$IN"
	assert_equal "$stderr" "kp-fmt: --dir is for -f powercap"
	run -2 --separate-stderr kp-fmt -f powercap --dir "$DIR" --summary < "$IN"
	assert_equal "$stderr" "kp-fmt: --summary is not for -f powercap"
}

@test "a guest reading a counter while kp-fmt replaces it, 500 times, never finds it missing, empty or cut" {
	# kp-fmt(1), Powercap trees: each file is replaced whole.  The reader
	# sends each interval itself and reads straight after, as kp-fmt
	# writes; only what it read is asserted, never how fast.
	node 1 package 1000; vm 1 package 1000003; interval 1
	run -0 kp-fmt -f powercap --dir "$DIR" < "$IN"
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	kp-fmt -f powercap --dir "$DIR" < "$BATS_TEST_TMPDIR/fifo" &
	local writer=$! f="$DIR/$U/class/powercap/intel-rapl:0/energy_uj"
	local i j v last=0 bad=()
	exec 7> "$BATS_TEST_TMPDIR/fifo"
	for ((i = 2; i <= 501; i++)); do
		printf '{"type":"node","seq":%d,"zone":"package","energy_uj":1000,"source":"powercap","estimated":false}\n{"type":"vm","seq":%d,"zone":"package","vm_id":"%s","vm_name":"web-01","processes":2,"cpu_us":10,"energy_uj":1000003,"watts":1,"total_uj":1,"state":"running"}\n{"type":"interval","seq":%d,"dt_us":1000000}\n' \
		    "$i" "$i" "$U" "$i" >&7
		for ((j = 0; j < 4; j++)); do
			if ! IFS= read -r v 2>/dev/null < "$f" ||
			    ! [[ $v =~ ^[0-9]+$ ]] || ((v < last)); then
				bad+=("$i:'$v'")
			else
				last=$v
			fi
		done
	done
	exec 7>&-
	wait "$writer"
	assert_equal "${bad[*]}" ""
	assert_equal "$(counter intel-rapl:0)" $((501 * 1000003))
}

# inode NAME...: each file's inode number, which a replacement changes.
inodes() {
	local f
	for f in "$@"; do
		stat -c %i "$DIR/$U/$f"
	done
}

@test "files that do not change are written only when missing or wrong; an idle VM's counter is not replaced" {
	local fixed=("$RAPL/intel-rapl:0/name" "$RAPL/intel-rapl:0/max_energy_range_uj"
	    "$RAPL/intel-rapl:0/enabled" class/powercap/intel-rapl:0)
	node 1 package 1000; vm 1 package 400; interval 1
	run -0 kp-fmt -f powercap --dir "$DIR" < "$IN"
	local before
	before=$(inodes "${fixed[@]}" "$RAPL/intel-rapl:0/energy_uj")
	# The next run: the VM is idle, its counter stays.
	sed -i 's/"seq":1,\("zone":"package","vm_id"[^}]*"energy_uj":\)400/"seq":1,\10/' "$IN"
	sed -i 's/"seq":1/"seq":2/' "$IN"
	run -0 kp-fmt -f powercap --dir "$DIR" < "$IN"
	assert_equal "$(inodes "${fixed[@]}" "$RAPL/intel-rapl:0/energy_uj")" "$before"
	assert_equal "$(counter intel-rapl:0)" 400
	# Missing or wrong, each is made again as the kernel has it.
	echo core > "$DIR/$U/$RAPL/intel-rapl:0/name"
	rm "$DIR/$U/$RAPL/intel-rapl:0/enabled"
	ln -sfn /etc "$DIR/$U/class/powercap/intel-rapl:0"
	run -0 kp-fmt -f powercap --dir "$DIR" < "$IN"
	assert_equal "$(readlink "$DIR/$U/class/powercap/intel-rapl:0")" "../../$RAPL/intel-rapl:0"
	assert_equal "$(cat "$DIR/$U/$RAPL/intel-rapl:0/name")" package-0
	assert_equal "$(cat "$DIR/$U/class/powercap/intel-rapl:0/enabled")" 0
	assert_equal "$(counter intel-rapl:0)" 400
	# A counter gone is written again, at 0, even for an idle VM.
	rm "$DIR/$U/$RAPL/intel-rapl:0/energy_uj"
	run -0 kp-fmt -f powercap --dir "$DIR" < "$IN"
	assert_equal "$(counter intel-rapl:0)" 0
}

@test "with few descriptors to spare, the trees are written all the same" {
	# Each VM's directories are kept open while descriptors are to spare
	# (kp-fmt(1), Powercap trees); past that, opened each interval.
	local i n=12
	node 1 package 1000; node 1 dram 100
	for ((i = 1; i <= n; i++)); do vm 1 package "$i" "vm-$i"; vm 1 dram 1 "vm-$i"; done
	interval 1
	node 2 package 1000; node 2 dram 100
	for ((i = 1; i <= n; i++)); do vm 2 package "$i" "vm-$i"; vm 2 dram 1 "vm-$i"; done
	interval 2
	run -0 --separate-stderr bash -c 'ulimit -n 24 && kp-fmt -f powercap --dir "$1" < "$2"' _ "$DIR" "$IN"
	assert_equal "$stderr" ""
	for ((i = 1; i <= n; i++)); do
		assert_equal "$(counter intel-rapl:0 "vm-$i") $(counter intel-rapl:0:0 "vm-$i")" "$((2 * i)) 2"
	done
}

@test "the trees are a guest's to read whatever the umask" {
	node 1 package 1000; vm 1 package 400; interval 1
	run -0 bash -c 'umask 077 && kp-fmt -f powercap --dir "$1" < "$2"' _ "$DIR" "$IN"
	assert_equal "$(stat -c %a "$DIR/$U" "$DIR/$U/$RAPL/intel-rapl:0" \
	    "$DIR/$U/$RAPL/intel-rapl:0/energy_uj" "$DIR/$U/kp-host" | tr '\n' ' ')" \
	    "755 755 444 444 "
}

@test "a tree that cannot be written is reported with its path, exit 1, and the other VMs' are written" {
	node 1 package 1000; vm 1 package 400; vm 1 package 50 other; interval 1
	mkdir "$DIR/$U"
	touch "$DIR/$U/devices"
	run -1 --separate-stderr kp-fmt -f powercap --dir "$DIR" < "$IN"
	assert_equal "$stderr" "kp-fmt: $DIR/$U/$RAPL/intel-rapl:0: Not a directory"
	# The VMs after it are written all the same.
	assert_equal "$(counter intel-rapl:0 other)" 50
	rm -r "$DIR/$U"
	touch "$DIR/$U"
	run -1 --separate-stderr kp-fmt -f powercap --dir "$DIR" < "$IN"
	assert_equal "$stderr" "kp-fmt: $DIR/$U: Not a directory"
}
