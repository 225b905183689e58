/*
 * rapl-read's source hwmon: ACPI power meters, the machine at its
 * supply, as zone platform; powers in microwatts.
 */
#include <errno.h>
#include <string.h>

#include "rapl.h"

extern const struct source hwmon_source;

/* An ACPI power meter: its average power if it keeps one, else its reading. */
static void
add_meter(struct meter *m, const char *classdir, int classfd,
    const char *key)
{
	static const char *const files[] = { "power1_average", "power1_input" };
	struct member *mb;
	char dir[PATH_MAX], file[PATH_MAX], buf[64];
	size_t i;

	xpath(file, sizeof(file), "%s/name", key);
	if (kp_read_file(classfd, file, buf, sizeof(buf)) < 0 ||
	    strcmp(buf, "power_meter\n") != 0)
		return;
	mb = new_member(m, &hwmon_source, key);
	mb->reading = READ_POWER_UW;
	xpath(mb->zone, sizeof(mb->zone), "platform");
	xpath(dir, sizeof(dir), "%s/%s", classdir, key);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		xpath(mb->where, sizeof(mb->where), "%s/%s", dir, files[i]);
		if (read_file_uj(mb, 0) == 0)
			return;
		if (errno != ENOENT)	/* there, but unreadable */
			break;
	}
	member_failed(mb, dir, strrchr(mb->where, '/') + 1);
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
