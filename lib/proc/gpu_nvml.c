/*
 * NVIDIA GPUs' time by process, through lib/nvml (proc-cputime(1), "GPU
 * time"): each device's process utilisation samples since the last one
 * seen, as the GPU time of each pid, the pids no longer in /proc
 * included, for the GPU's busy time.  A device is named by its NVML index.
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu.h"
#include "nvml.h"

/* NVML where libnvidia-ml.so.1 opens and has a GPU: 1, else 0, quietly. */
int
nvml_open(struct kp_gpu *g)
{
	char why[512];

	if ((g->nv = kp_nvml_open(why, sizeof(why))) == NULL)
		return 0;
	if ((g->nvml_count = kp_nvml_count(g->nv)) <= 0) {
		nvml_close(g);
		return 0;
	}
	g->nvml_warned = kp_calloc((size_t)g->nvml_count,
	    sizeof(*g->nvml_warned));
	return 1;
}

void
nvml_close(struct kp_gpu *g)
{
	kp_nvml_close(g->nv);
	free(g->nvml_warned);
	g->nv = NULL;
	g->nvml_warned = NULL;
	g->nvml_count = 0;
}

struct nvml_arg {
	struct kp_gpu *g;
	size_t dev;
};

static void
add_pid(void *arg, int pid, int64_t gpu_us)
{
	struct nvml_arg *a = arg;

	gpu_add_use(a->g, (pid_t)pid, a->dev, gpu_us);
}

/*
 * A device that cannot be read (lost, MIG, not supported) has no figure
 * this interval; said once for each.
 */
static void
nvml_failed(struct kp_gpu *g, int index, int rv)
{
	if (g->nvml_warned[index])
		return;
	warnx("nvml: GPU %d: %s: no GPU time from it (proc-cputime(1), "
	    "GPU time)", index, kp_nvml_strerror(g->nv, rv));
	g->nvml_warned[index] = 1;
}

/*
 * Each device's samples since the last seen, as its processes' times over
 * the interval of dt_us, and how much of it they covered.  At the first
 * scan they only set the last seen: what came before is not the
 * interval's.
 */
void
nvml_account(struct kp_gpu *g, int64_t dt_us)
{
	struct nvml_arg a = { g, 0 };
	size_t before = g->nuses;
	char key[16];
	int64_t covered_us;
	int i, rv;

	for (i = 0; i < g->nvml_count; i++) {
		snprintf(key, sizeof(key), "%d", i);
		a.dev = gpu_dev(g, key);
		rv = kp_nvml_gpu_time(g->nv, i, dt_us > 0 ? dt_us : 1,
		    add_pid, &a, &covered_us);
		if (rv != 0) {
			g->devs[a.dev].gen = 0;		/* not found */
			nvml_failed(g, i, rv);
			continue;
		}
		g->devs[a.dev].covered_us = covered_us > 0 &&
		    covered_us < dt_us ? covered_us : -1;
	}
	if (g->scans == 0)
		g->nuses = before;
}

/* The last sample seen on each device, for the next run. */
json_t *
nvml_save(const struct kp_gpu *g)
{
	json_t *a = json_array();
	int i;

	for (i = 0; i < g->nvml_count; i++)
		json_array_append_new(a, json_integer((json_int_t)
		    kp_nvml_last_seen(g->nv, i)));
	return a;
}

/* The last samples seen by the run before: one not a time is unseen. */
void
nvml_load(struct kp_gpu *g, json_t *saved)
{
	json_int_t ts_us;
	size_t i;

	for (i = 0; i < json_array_size(saved) &&
	    i < (size_t)g->nvml_count; i++) {
		ts_us = json_integer_value(json_array_get(saved, i));
		if (ts_us > 0)
			kp_nvml_set_last_seen(g->nv, (int)i, (uint64_t)ts_us);
	}
}
