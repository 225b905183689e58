/*
 * GPU time by process and GPU over each interval between two scans, for
 * the proc and cpu records (proc-cputime(1), "GPU time"): the GPUs
 * found, the time each process used on each, and each GPU's busy time,
 * capped at the interval.
 */
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

/*
 * The GPU time of the processes of procdir: of the GPUs the kernel
 * drives, where sysfs (NULL: none) has a DRM node, and of NVIDIA's, where
 * libnvidia-ml.so.1 opens and has a GPU; NULL where there is neither.
 */
struct kp_gpu *
kp_gpu_open(const char *sysfs, const char *procdir)
{
	struct kp_gpu *g = kp_calloc(1, sizeof(*g));

	if (sysfs != NULL && drm_present(sysfs))
		g->sysfs = kp_strdup(sysfs);
	if (!nvml_open(g) && g->sysfs == NULL) {
		free(g);
		return NULL;
	}
	g->procdir = kp_strdup(procdir);
	return g;
}

void
kp_gpu_free(struct kp_gpu *g)
{
	if (g == NULL)
		return;
	if (g->nv != NULL)
		nvml_close(g);
	free(g->sysfs);
	free(g->procdir);
	free(g->devs);
	free(g->uses);
	free(g->clients);
	free(g);
}

/* A scan begins: the GPUs there now, and no time yet. */
void
kp_gpu_begin(struct kp_gpu *g)
{
	g->gen++;
	g->nuses = 0;
	g->denied_pids = 0;
	if (g->sysfs != NULL)
		drm_devices(g);
}

void
kp_gpu_scan_pid(struct kp_gpu *g, int procfd, pid_t pid)
{
	if (g->sysfs != NULL)
		drm_scan_pid(g, procfd, pid);
}

static int
use_cmp(const void *a, const void *b)
{
	const struct gpu_use *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->dev < y->dev ? -1 : x->dev > y->dev;
}

/* One entry per process and GPU, by pid: its clients' times summed. */
static void
merge_uses(struct kp_gpu *g)
{
	size_t i, n = 0;

	if (g->nuses > 0)
		qsort(g->uses, g->nuses, sizeof(*g->uses), use_cmp);
	for (i = 0; i < g->nuses; i++) {
		if (n > 0 && g->uses[n - 1].pid == g->uses[i].pid &&
		    g->uses[n - 1].dev == g->uses[i].dev)
			g->uses[n - 1].us += g->uses[i].us;
		else
			g->uses[n++] = g->uses[i];
	}
	g->nuses = n;
}

/*
 * Each GPU's busy time: its processes' times summed, which overlap where
 * engines run in parallel.
 */
static void
sum_busy(struct kp_gpu *g)
{
	size_t i;

	for (i = 0; i < g->ndevs; i++)
		g->devs[i].busy_us = 0;
	for (i = 0; i < g->nuses; i++)
		g->devs[g->uses[i].dev].busy_us += g->uses[i].us;
}

/*
 * A busy time above the interval (by /proc/uptime, which a fixture tree
 * sets) is brought down to it, and every process's time on that GPU by
 * the same ratio, rounded down, so that the processes' shares stay as
 * they were and never add up to more than the GPU's figure.
 */
static void
cap_busy(struct kp_gpu *g, int64_t dt_us)
{
	struct gpu_dev *d;
	size_t i;

	if (dt_us <= 0)		/* two scans in one tick of /proc/uptime */
		return;
	for (i = 0; i < g->nuses; i++) {
		d = &g->devs[g->uses[i].dev];
		if (d->busy_us > dt_us)
			g->uses[i].us = (int64_t)((__int128)g->uses[i].us *
			    dt_us / d->busy_us);
	}
	for (i = 0; i < g->ndevs; i++)
		if (g->devs[i].busy_us > dt_us)
			g->devs[i].busy_us = dt_us;
}

/* The scan has ended an interval of dt_us: each process's time, each GPU's. */
void
kp_gpu_end(struct kp_gpu *g, int64_t dt_us)
{
	drm_account(g, dt_us);
	if (g->nv != NULL)
		nvml_account(g, dt_us);
	merge_uses(g);
	sum_busy(g);
	if (g->sysfs != NULL) {
		drm_idle_account(g, dt_us);
		drm_said_denied(g);
	}
	cap_busy(g, dt_us);
	g->dt_us = dt_us;
	g->scans++;
}

/* The first of pid's entries, or nuses. */
static size_t
first_use(const struct kp_gpu *g, pid_t pid)
{
	size_t lo = 0, hi = g->nuses, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (g->uses[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int
dev_cmp(const void *a, const void *b)
{
	const struct gpu_dev *const *x = a, *const *y = b;

	return strcmp((*x)->key, (*y)->key);
}

/*
 * {"<device>":us,...} of the GPUs where keep says so, by device key: the
 * order they were found in is the directory's, which varies.  With
 * of_us > 0, each is written as its ratio to of_us.  The members are
 * written as a record's are, each after a comma: the first becomes '{'.
 */
static void
put_object(const struct kp_gpu *g, struct kp_buf *b, const char *key,
    const int64_t *us, const int *keep, int64_t of_us)
{
	struct kp_buf o = { 0 };
	const struct gpu_dev **by_key;
	size_t i, k;

	by_key = kp_calloc(g->ndevs, sizeof(*by_key));
	for (i = 0; i < g->ndevs; i++)
		by_key[i] = &g->devs[i];
	qsort(by_key, g->ndevs, sizeof(*by_key), dev_cmp);
	for (k = 0; k < g->ndevs; k++) {
		i = (size_t)(by_key[k] - g->devs);
		if (!keep[i])
			continue;
		if (of_us > 0)
			kp_buf_real(&o, g->devs[i].key,
			    (double)us[i] / (double)of_us);
		else
			kp_buf_int(&o, g->devs[i].key, us[i]);
	}
	if (o.len > 0) {
		o.s[0] = '{';
		kp_buf_add(&o, "}", 1);
		kp_buf_raw(b, key, o.s, o.len);
	}
	free(o.s);
	free(by_key);
}

/*
 * A process's gpu_us, into b where b is not NULL: 1 if it used a GPU
 * over the interval, else 0 and nothing written.
 */
int
kp_gpu_proc(const struct kp_gpu *g, pid_t pid, struct kp_buf *b)
{
	int64_t *us;
	int *keep, any = 0;
	size_t i;

	if (g == NULL || (i = first_use(g, pid)) == g->nuses ||
	    g->uses[i].pid != pid)
		return 0;
	if (b == NULL)
		return 1;
	us = kp_calloc(g->ndevs, sizeof(*us));
	keep = kp_calloc(g->ndevs, sizeof(*keep));
	for (; i < g->nuses && g->uses[i].pid == pid; i++) {
		us[g->uses[i].dev] = g->uses[i].us;
		keep[g->uses[i].dev] = any = 1;
	}
	put_object(g, b, "gpu_us", us, keep, 0);
	free(us);
	free(keep);
	return any;
}

/*
 * The cpu record's gpu_us: every GPU found at this scan, idle ones at 0;
 * and gpu_coverage, the part of the interval their samples covered, for
 * those whose samples covered less than all of it.
 */
void
kp_gpu_node(const struct kp_gpu *g, struct kp_buf *b)
{
	int64_t *us;
	int *keep;
	size_t i;

	if (g == NULL || g->ndevs == 0)
		return;
	us = kp_calloc(g->ndevs, sizeof(*us));
	keep = kp_calloc(g->ndevs, sizeof(*keep));
	for (i = 0; i < g->ndevs; i++) {
		us[i] = g->devs[i].busy_us;
		keep[i] = g->devs[i].gen == g->gen;
	}
	put_object(g, b, "gpu_us", us, keep, 0);
	for (i = 0; i < g->ndevs; i++) {
		us[i] = g->devs[i].covered_us;
		keep[i] = keep[i] && us[i] >= 0;
	}
	put_object(g, b, "gpu_coverage", us, keep, g->dt_us);
	free(us);
	free(keep);
}

/*
 * What the next run needs: the DRM clients' counters and GPUs'
 * residencies, NVML's last samples.
 */
json_t *
kp_gpu_save(const struct kp_gpu *g)
{
	json_t *saved = json_object();

	json_object_set_new(saved, "drm_clients", drm_save(g));
	json_object_set_new(saved, "drm_idle_ms", drm_idle_save(g));
	if (g->nv != NULL)
		json_object_set_new(saved, "nvml_last_seen", nvml_save(g));
	return saved;
}

/*
 * A saved scan as the baseline: a DRM client it does not hold is new at
 * the next scan, an NVML device counts its samples from the next scan on.
 * A scan saved without GPU time (--no-gpu, or an earlier version) is
 * none: the next scan is GPU time's baseline, lest every client's time
 * since it opened count as new.
 */
void
kp_gpu_load(struct kp_gpu *g, json_t *saved)
{
	if (!json_is_object(saved))
		return;
	drm_load(g, json_object_get(saved, "drm_clients"));
	drm_idle_load(g, json_object_get(saved, "drm_idle_ms"));
	if (g->nv != NULL)
		nvml_load(g, json_object_get(saved, "nvml_last_seen"));
	g->scans = 1;
}
