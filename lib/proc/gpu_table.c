/*
 * The GPUs found and the interval's time by process and GPU, which
 * drm.c and gpu_nvml.c fill and gpu.c writes (proc-cputime(1), "GPU
 * time").
 */
#include <stdio.h>
#include <string.h>

#include "gpu.h"

/* The index of the GPU named key, found this scan; added if new. */
size_t
gpu_dev(struct kp_gpu *g, const char *key)
{
	size_t i;

	for (i = 0; i < g->ndevs; i++)
		if (strcmp(g->devs[i].key, key) == 0)
			break;
	if (i == g->ndevs) {
		g->devs = kp_reallocarray(g->devs, g->ndevs + 1,
		    sizeof(*g->devs));
		memset(&g->devs[i], 0, sizeof(g->devs[i]));
		snprintf(g->devs[i].key, sizeof(g->devs[i].key), "%s", key);
		g->devs[i].covered_us = -1;
		g->ndevs++;
	}
	g->devs[i].gen = g->gen;
	return i;
}

void
gpu_add_use(struct kp_gpu *g, pid_t pid, size_t dev, int64_t us)
{
	if (us <= 0)
		return;
	if (g->nuses == g->usecap) {
		g->usecap = g->usecap ? 2 * g->usecap : 16;
		g->uses = kp_reallocarray(g->uses, g->usecap,
		    sizeof(*g->uses));
	}
	g->uses[g->nuses++] = (struct gpu_use){ pid, dev, us };
}
