/*
 * rapl-read's source hwmon: ACPI power meters, the machine at its
 * supply, as zone platform; and, where the source is named, the GPU
 * meters of the kernel's GPU drivers, as zone gpu with the device's PCI
 * address (rapl-read(1), SOURCES).  Powers in microwatts, energy
 * counters in microjoules.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "rapl.h"

extern const struct source hwmon_source;

/*
 * Where a GPU driver's counter is taken to wrap: i915 and xe widen the
 * hardware's to 64 bits, which no GPU fills (2^53 uJ is 285 years at
 * 1 kW), and --state keeps the range as a JSON number that every JSON
 * tool reads exactly, so no more than 2^53.
 */
#define GPU_COUNTER_MAX_UJ	(UINT64_C(1) << 53)

/* Each power file's average if it keeps one, else its reading. */
static const char *const power_files[] = { "power1_average", "power1_input" };

/*
 * The first of files under dir that reads as a figure, in mb->where;
 * else mb is failed on the last one tried, or on the first that is there
 * but cannot be read.
 */
static void
read_first(struct member *mb, const char *dir, const char *const files[],
    size_t nfiles)
{
	size_t i;

	for (i = 0; i < nfiles; i++) {
		xpath(mb->where, sizeof(mb->where), "%s/%s", dir, files[i]);
		if (read_file_uj(mb, 0) == 0)
			return;
		if (errno != ENOENT)	/* there, but unreadable */
			break;
	}
	member_failed(mb, dir, strrchr(mb->where, '/') + 1);
}

/*
 * The last part of where the link dir/link points: the driver of a
 * device (device/driver) or the device's PCI address (device); "" if
 * it is no link.
 */
static void
link_name(const char *dir, const char *link, char *name, size_t len)
{
	char path[PATH_MAX], target[PATH_MAX];
	const char *slash;
	ssize_t n;

	xpath(path, sizeof(path), "%s/%s", dir, link);
	name[0] = '\0';
	if ((n = readlink(path, target, sizeof(target) - 1)) <= 0)
		return;
	target[n] = '\0';
	slash = strrchr(target, '/');
	slash = slash != NULL ? slash + 1 : target;
	if (strlen(slash) < len)
		memcpy(name, slash, strlen(slash) + 1);
}

/*
 * A GPU driver's meter: i915 and xe keep an energy counter (a step back
 * is a driver reload, dropped as an impossible step), amdgpu a power as
 * an ACPI meter does.  0 if the driver is none of these.
 */
static int
add_gpu(struct meter *m, const char *dir, const char *key,
    const char *driver)
{
	static const char *const energy_files[] = { "energy1_input" };
	struct member *mb;
	int counter;

	counter = strcmp(driver, "i915") == 0 || strcmp(driver, "xe") == 0;
	if (!counter && strcmp(driver, "amdgpu") != 0)
		return 0;
	mb = new_member(m, &hwmon_source, key);
	xpath(mb->zone, sizeof(mb->zone), "gpu");
	link_name(dir, "device", mb->device, sizeof(mb->device));
	if (counter) {
		mb->reading = READ_ENERGY_UJ;
		mb->max_uj = GPU_COUNTER_MAX_UJ;
		read_first(mb, dir, energy_files, 1);
	} else {
		mb->reading = READ_POWER_UW;
		read_first(mb, dir, power_files,
		    sizeof(power_files) / sizeof(power_files[0]));
	}
	return 1;
}

/* Whether --source names hwmon: GPU meters are read only then. */
static int
named(const struct meter *m)
{
	size_t i;

	for (i = 0; i < m->nrunning; i++)
		if (m->running[i] == &hwmon_source)
			return 1;
	return 0;
}

/* An ACPI power meter, or a GPU's meter where the source is named. */
static void
add_meter(struct meter *m, const char *classdir, int classfd,
    const char *key)
{
	struct member *mb;
	char dir[PATH_MAX], file[PATH_MAX], buf[64];

	xpath(dir, sizeof(dir), "%s/%s", classdir, key);
	if (named(m)) {
		link_name(dir, "device/driver", buf, sizeof(buf));
		if (add_gpu(m, dir, key, buf))
			return;
	}
	xpath(file, sizeof(file), "%s/name", key);
	if (kp_read_file(classfd, file, buf, sizeof(buf)) < 0 ||
	    strcmp(buf, "power_meter\n") != 0)
		return;
	mb = new_member(m, &hwmon_source, key);
	mb->reading = READ_POWER_UW;
	xpath(mb->zone, sizeof(mb->zone), "platform");
	read_first(mb, dir, power_files,
	    sizeof(power_files) / sizeof(power_files[0]));
}

static int
hwmon_open(struct meter *m, char *why, size_t len)
{
	return open_class(m, &hwmon_source, "hwmon", add_meter, NULL, why,
	    len);
}

const struct source hwmon_source = {
	.name = "hwmon",
	.what = "ACPI power meters",
	.in_auto = 1,
	.open = hwmon_open,
	.read = read_file_uj,
	.fields = put_counter_fields,
	.denied_hint = "run as root or grant read access to the file "
	    "(see rapl-read(1))"
};
