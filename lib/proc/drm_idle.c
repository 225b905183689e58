/*
 * A DRM GPU's busy time from the GPU itself, for the intervals in which
 * some process's descriptors could not be read (no ptrace access): the
 * clients read then are not all the GPU's, and the time of those unread
 * must be unattributed downstream, not idle.  proc-cputime(1), GPU time.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

/*
 * Whether a sysfs name is prefix and a number: "card0", "renderD128",
 * "tile0", "gt1".  drm.c's nodes are named so too.
 */
int
drm_numbered(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);
	const char *digits = name + n;

	return strncmp(name, prefix, n) == 0 && *digits != '\0' &&
	    strspn(digits, "0123456789") == strlen(digits);
}

/* The whole of a small sysfs file as a count of ms, "123456\n"; or -1. */
static int64_t
file_ms(const char *path)
{
	char text[32], *end;
	unsigned long long v;

	if (kp_read_file(AT_FDCWD, path, text, sizeof(text)) <= 0 ||
	    text[0] < '0' || text[0] > '9')
		return -1;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno != 0 || strcmp(end, "\n") != 0 || v > KP_AMOUNT_MAX / 1000)
		return -1;
	return (int64_t)v;
}

/*
 * The files named file under each numbered directory of dir, one level
 * of levels each ({"tile", "gt"}: tile0/gt0, tile0/gt1, tile1/gt0, ...),
 * their ms added into idle; -1 where one is not a count.
 */
static int
add_levels(const char *dir, const char *const *levels, const char *file,
    struct gpu_idle *idle)
{
	struct dirent *de;
	char *path;
	int64_t ms;
	DIR *d;
	int rc = 0;

	if (*levels == NULL) {
		path = kp_asprintf("%s/%s", dir, file);
		ms = file_ms(path);
		free(path);
		if (ms < 0)
			return -1;
		idle->ms += ms;
		idle->gts++;
		return 0;
	}
	if ((d = opendir(dir)) == NULL)
		return 0;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (!drm_numbered(de->d_name, *levels))
			continue;
		path = kp_asprintf("%s/%s", dir, de->d_name);
		rc = add_levels(path, levels + 1, file, idle);
		free(path);
	}
	closedir(d);
	return rc;
}

/*
 * The idle residency of the GPU of card, a class/drm/cardN directory:
 * i915's gt/gtN/rc6_residency_ms, or xe's
 * device/tileN/gtN/gtidle/idle_residency_ms (the kernel's
 * Documentation/ABI/testing/sysfs-driver-intel-i915, and xe's
 * xe_gt_idle.c), summed over the GTs.  amdgpu keeps none (only the
 * instantaneous gpu_busy_percent): gts 0, as for a file that is no count.
 */
void
drm_idle_read(const char *card, struct gpu_idle *idle)
{
	static const char *const i915[] = { "gt", NULL };
	static const char *const xe[] = { "tile", "gt", NULL };
	char *dir;
	int rc;

	*idle = (struct gpu_idle){ 0, 0 };
	dir = kp_asprintf("%s/gt", card);
	rc = add_levels(dir, i915, "rc6_residency_ms", idle);
	free(dir);
	if (rc == 0 && idle->gts == 0) {
		dir = kp_asprintf("%s/device", card);
		rc = add_levels(dir, xe, "gtidle/idle_residency_ms", idle);
		free(dir);
	}
	if (rc < 0)
		*idle = (struct gpu_idle){ 0, 0 };
}

/*
 * The GPU's busy time over dt_us by its own residency: each GT's time
 * out of its idle state, summed over the GTs, at most the interval.  It
 * is an upper bound of the time any engine ran: a GT wakes before its
 * work and idles a little after it.  Without residency, at either end,
 * or with one that went back (the driver reloaded, or i915's 32-bit
 * count of ms wrapped, after 49 days of idle) it is the whole interval.
 */
static int64_t
residency_busy_us(const struct gpu_dev *d, int64_t dt_us)
{
	int64_t idle_us, busy_us;

	if (d->idle.gts == 0 || d->idle.gts != d->idle_before.gts ||
	    d->idle.ms < d->idle_before.ms)
		return dt_us;
	idle_us = (d->idle.ms - d->idle_before.ms) * 1000;
	if (dt_us > KP_AMOUNT_MAX / d->idle.gts)
		return dt_us;
	busy_us = dt_us * d->idle.gts - idle_us;
	return busy_us < 0 ? 0 : busy_us > dt_us ? dt_us : busy_us;
}

/*
 * Where a process's descriptors could not be read at this scan, each DRM
 * GPU's busy time is its own residency's, never below its readable
 * clients' sum (kept as it was: capped later, as any sum); NVIDIA's GPUs
 * give every process's samples, readable or not.  This scan's residency
 * is then the next interval's baseline.
 */
void
drm_idle_account(struct kp_gpu *g, int64_t dt_us)
{
	struct gpu_dev *d;
	int64_t busy_us;
	size_t i;

	for (i = 0; i < g->ndevs; i++) {
		d = &g->devs[i];
		if (!d->drm || d->gen != g->gen)
			continue;
		if (g->denied_pids > 0 && g->scans > 0 && dt_us > 0 &&
		    (busy_us = residency_busy_us(d, dt_us)) > d->busy_us)
			d->busy_us = busy_us;
		d->idle_before = d->idle;
	}
}

/* {"<device>":[ms, gts],...}: each DRM GPU's residency, the next baseline. */
json_t *
drm_idle_save(const struct kp_gpu *g)
{
	json_t *o = json_object();
	size_t i;

	for (i = 0; i < g->ndevs; i++)
		if (g->devs[i].drm && g->devs[i].gen == g->gen &&
		    g->devs[i].idle.gts > 0)
			json_object_set_new(o, g->devs[i].key, json_pack("[I,i]",
			    (json_int_t)g->devs[i].idle.ms,
			    g->devs[i].idle.gts));
	return o;
}

/* A saved residency as the baseline; one that is not is left out. */
void
drm_idle_load(struct kp_gpu *g, json_t *saved)
{
	const char *key;
	json_int_t ms;
	json_t *v;
	size_t i;
	int gts;

	json_object_foreach(saved, key, v) {
		if (json_unpack(v, "[I,i]", &ms, &gts) < 0 || ms < 0 ||
		    ms > KP_AMOUNT_MAX / 1000 || gts <= 0 ||
		    strlen(key) >= GPU_KEY_MAX)
			continue;
		i = gpu_dev(g, key);
		g->devs[i].idle_before = (struct gpu_idle){ ms, gts };
	}
}
