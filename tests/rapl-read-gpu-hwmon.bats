#!/usr/bin/env bats
# rapl-read's hwmon source and the kernel's GPU meters: i915 and xe energy
# counters, amdgpu's power, each a zone gpu record keyed by the device's
# PCI address, read where --source names hwmon (rapl-read(1), SOURCES).
# shellcheck disable=SC2154 # bats's run sets stderr and stderr_lines

load test_helper
load rapl_helper

setup() {
	rapl_tree sysfs-gpu-hwmon
	I915=$SY/devices/pci0000:00/0000:00:02.0/hwmon/hwmon3
	AMD=$SY/devices/pci0000:00/0000:00:01.1/0000:03:00.0/hwmon/hwmon4
	XE=$SY/devices/pci0000:00/0000:00:01.2/0000:04:00.0/hwmon/hwmon5
}

# The energy_uj of the last run's gpu record of device $1.
gpu_uj() {
	jq -s "map(select(.type == \"energy\" and .zone == \"gpu\" and
	    .device == \"$1\"))[0].energy_uj" <<< "$output"
}

# The last run's interval length.
dt_us() {
	jq -s 'map(select(.type == "interval"))[0].dt_us' <<< "$output"
}

@test "hwmon named: one gpu record per device, keyed by its PCI address, beside the platform meter" {
	run --separate-stderr rapl-read --sysfs "$SY" --proc "$P" \
	    --source hwmon -n 1 -i 10ms
	assert_success
	assert_equal "$stderr" ""
	run jq -sc 'map(select(.type == "energy") | [.zone, .device, .source,
	    .sockets])' <<< "$output"
	assert_output '[["platform",null,"hwmon",1],["gpu","0000:00:02.0","hwmon",1],["gpu","0000:03:00.0","hwmon",1],["gpu","0000:04:00.0","hwmon",1]]'
}

@test "hwmon: i915 and xe energy counters give their steps, amdgpu its power integrated" {
	run_state --source hwmon -z gpu
	assert_success
	assert_equal "$stderr" ""
	age_state 10
	echo 1236567890 > "$I915/energy1_input"		# + 2 J
	echo 503000000 > "$XE/energy1_input"		# + 3 J on the card
	echo 409000000 > "$XE/energy2_input"		# the package: not read
	echo 50000000 > "$AMD/power1_average"		# 30 W, then 50 W
	run_state --source hwmon -z gpu
	assert_success
	assert_equal "$stderr" ""
	refute_line --partial '"zone":"platform"'
	assert_equal "$(gpu_uj 0000:00:02.0)" 2000000
	assert_equal "$(gpu_uj 0000:04:00.0)" 3000000
	# The mean of the powers read at the two ends, times the interval.
	assert_equal "$(gpu_uj 0000:03:00.0)" "$((40 * $(dt_us)))"
}

@test "hwmon: amdgpu without an average reads power1_input" {
	rm "$AMD/power1_average"
	echo 20000000 > "$AMD/power1_input"
	run_state --source hwmon -z gpu
	age_state 10
	run_state --source hwmon -z gpu
	assert_success
	assert_equal "$(gpu_uj 0000:03:00.0)" "$((20 * $(dt_us)))"
}

@test "auto: the GPU meters are not read, the platform meter is" {
	run --separate-stderr rapl-read --sysfs "$SY" --proc "$P" -n 1 -i 10ms
	assert_success
	assert_line --partial '"zone":"platform"'
	refute_line --partial '"zone":"gpu"'
}

@test "hwmon: a GPU counter that goes back is a driver reload, counted again from its new value" {
	run_state --source hwmon -z gpu
	age_state 10
	echo 1000 > "$I915/energy1_input"
	run_state --source hwmon -z gpu
	assert_success
	assert_equal "$stderr" "rapl-read: counter 'hwmon3' went from 1234567890 to 1000 uJ in $(dt_us) us, more than 2000 W could: left out of the interval, counted again from its new value"
	assert_equal "$(gpu_uj 0000:00:02.0)" null
	assert_equal "$(gpu_uj 0000:03:00.0)" "$((30 * $(dt_us)))"
	age_state 10
	echo 501000 > "$I915/energy1_input"
	run_state --source hwmon -z gpu
	assert_equal "$(gpu_uj 0000:00:02.0)" 500000
}

@test "hwmon: a GPU whose driver is no GPU meter's, or whose meter is unreadable" {
	rm "$SY/devices/pci0000:00/0000:00:02.0/driver"
	ln -s ../../../bus/pci/drivers/nouveau \
	    "$SY/devices/pci0000:00/0000:00:02.0/driver"
	rm "$XE/energy1_input"
	run --separate-stderr rapl-read --sysfs "$SY" --proc "$P" \
	    --source hwmon -z gpu -n 1 -i 10ms
	assert_success
	assert_equal "$stderr" "rapl-read: cannot read '$SY/class/hwmon/hwmon5/energy1_input': No such file or directory"
	run jq -sc 'map(select(.type == "energy") | .device)' <<< "$output"
	assert_output '["0000:03:00.0"]'
}

@test "hwmon and nvml together: each GPU is a zone of its own, so both give gpu records, one a device" {
	# The stub libnvidia-ml of tests/nvml-stub.c, with one GPU.
	export KP_NVML_TRACE=$BATS_TEST_TMPDIR/nvml.trace
	export LD_LIBRARY_PATH=$KP_ROOT/tests/nvml/full
	echo 'device GPU-5f3c0c55-8d1e-4c1b-9a3e-0d1f2a3b4c5d NVIDIA A100-SXM4-40GB' > "$KP_NVML_TRACE"
	echo 'energy 0 1000 1500' >> "$KP_NVML_TRACE"
	run --separate-stderr rapl-read --sysfs "$SY" --proc "$P" \
	    --source hwmon,nvml -z gpu -n 1 -i 10ms
	assert_success
	assert_equal "$stderr" ""
	run jq -sc 'map(select(.type == "energy") | [.device, .source]) | sort' <<< "$output"
	assert_output '[["0","nvml"],["0000:00:02.0","hwmon"],["0000:03:00.0","hwmon"],["0000:04:00.0","hwmon"]]'
}
