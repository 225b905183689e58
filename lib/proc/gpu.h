/*
 * GPU time, behind the sampler (proc-cputime(1), "GPU time"): gpu.c
 * takes each interval's time by process and GPU from the two sources
 * below, and writes it; gpu_table.c holds the GPUs and those times, which
 * the sources fill: drm.c reads the kernel's DRM clients from
 * /proc/PID/fdinfo, drm_idle.c their GPUs' own idle residency, for when
 * some clients cannot be read, gpu_nvml.c NVIDIA's per-process samples
 * through lib/nvml.  This header is theirs and sampler.c's alone.
 */
#ifndef GPU_H
#define GPU_H

#include "proc.h"

#define GPU_KEY_MAX		64	/* "0000:03:00.0", "0" */
#define DRM_ENGINES_MAX		16	/* a client's engines, as fdinfo lists them */

/*
 * A DRM GPU's own idle time: its GTs' idle residency (i915's RC6, xe's
 * C6), in ms since the driver loaded, summed over its GTs.
 */
struct gpu_idle {
	int64_t ms;
	int gts;			/* how many GTs ms sums; 0: none read */
};

struct gpu_dev {
	char key[GPU_KEY_MAX];
	int64_t busy_us;		/* the interval's, capped at it */
	int64_t covered_us;		/* of it, what samples covered; -1: all */
	unsigned gen;			/* the scan that last found it */
	int drm;			/* a DRM node's, not NVML's */
	struct gpu_idle idle, idle_before;	/* at this scan, the one before */
};

/* The GPU time of one process on one GPU over the interval. */
struct gpu_use {
	pid_t pid;
	size_t dev;			/* in devs */
	int64_t us;
};

/*
 * An engine of a DRM client: its busy ns (drm-engine-), or, where it has
 * none, its busy cycles of a total (drm-cycles- of drm-total-cycles-, xe).
 * Cycles without a total (msm, panfrost) are not a share of anything.
 */
struct drm_engine {
	char name[32];
	uint64_t ns, cycles, total;
	int has_ns;
};

/* A DRM client, open on some descriptor of some processes. */
struct drm_client {
	char pdev[GPU_KEY_MAX];
	uint64_t id;
	pid_t pid;			/* the lowest pid holding it, this scan */
	unsigned gen;			/* the scan that last read it */
	int has_before;			/* read at the scan before, too */
	struct drm_engine now[DRM_ENGINES_MAX], before[DRM_ENGINES_MAX];
	size_t nnow, nbefore;
};

struct kp_gpu {
	char *sysfs;			/* where class/drm is; NULL: no DRM */
	char *procdir;			/* for messages */
	struct gpu_dev *devs;
	size_t ndevs;
	struct gpu_use *uses;		/* the interval's, by pid once ended */
	size_t nuses, usecap;
	struct drm_client *clients;
	size_t nclients, clientcap;
	unsigned gen;			/* scans begun */
	int64_t dt_us;			/* the interval the last scan ended */
	int scans;			/* scans ended */
	int denied_pids;		/* processes unreadable this scan */
	pid_t denied_pid;		/* the last counted */
	int denied_errno;		/* why the first was */
	int warned_denied;		/* unreadable processes said */
	struct kp_nvml *nv;		/* NVML, or NULL */
	int nvml_count;			/* its devices */
	int *nvml_warned;		/* a device's failure said */
};

/* gpu_table.c */
size_t gpu_dev(struct kp_gpu *g, const char *key);
void gpu_add_use(struct kp_gpu *g, pid_t pid, size_t dev, int64_t us);

/* drm.c */
int drm_present(const char *sysfs);
void drm_devices(struct kp_gpu *g);
void drm_scan_pid(struct kp_gpu *g, int procfd, pid_t pid);
void drm_account(struct kp_gpu *g, int64_t dt_us);
void drm_said_denied(struct kp_gpu *g);
json_t *drm_save(const struct kp_gpu *g);
void drm_load(struct kp_gpu *g, json_t *saved);

/* drm_idle.c */
int drm_numbered(const char *name, const char *prefix);
void drm_idle_read(const char *card, struct gpu_idle *idle);
void drm_idle_account(struct kp_gpu *g, int64_t dt_us);
json_t *drm_idle_save(const struct kp_gpu *g);
void drm_idle_load(struct kp_gpu *g, json_t *saved);

/* gpu_nvml.c */
int nvml_open(struct kp_gpu *g);
void nvml_account(struct kp_gpu *g, int64_t dt_us);
json_t *nvml_save(const struct kp_gpu *g);
void nvml_load(struct kp_gpu *g, json_t *saved);
void nvml_close(struct kp_gpu *g);

#endif
