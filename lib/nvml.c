/*
 * libnvidia-ml.so.1, opened at run time (see nvml.h).  Only the symbols
 * below are looked up; the prototypes and struct layouts are NVML's
 * nvml.h's (API version 13, x86_64), the symbols those its #defines
 * name: nvmlInit_v2, not nvmlInit.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kp.h"
#include "nvml.h"

#define NVML_SUCCESS			0
#define NVML_ERROR_INSUFFICIENT_SIZE	7
/* gpuInstanceId of a process on a whole GPU, not in a MIG instance. */
#define NVML_NO_INSTANCE		0xFFFFFFFFu

typedef struct nvmlDevice_st *nvml_device;

/* nvmlProcessUtilizationSample_t: 32 bytes, 4 of padding after pid. */
struct nvml_sample {
	unsigned int pid;
	unsigned long long ts_us;
	unsigned int sm_util, mem_util, enc_util, dec_util;
};

/* nvmlProcessInfo_t (v2 and v3 alike): 24 bytes. */
struct nvml_process {
	unsigned int pid;
	unsigned long long used_gpu_memory;
	unsigned int gpu_instance_id, compute_instance_id;
};

struct kp_nvml {
	void *dl;
	int (*init)(void);
	int (*shutdown)(void);
	const char *(*error_string)(int);
	int (*count)(unsigned int *);
	int (*handle)(unsigned int, nvml_device *);
	int (*uuid)(nvml_device, char *, unsigned int);
	int (*name)(nvml_device, char *, unsigned int);
	int (*energy)(nvml_device, unsigned long long *);
	int (*power)(nvml_device, unsigned int *);
	int (*utilization)(nvml_device, struct nvml_sample *, unsigned int *,
	    unsigned long long);
	int (*processes)(nvml_device, unsigned int *, struct nvml_process *);
	uint64_t *last_seen_us;		/* per device index */
	size_t ndevices_seen;
};

/* The symbols, each for its member; _v3 is tried before _v2. */
static const struct {
	const char *name;
	size_t offset;
} symbols[] = {
	{ "nvmlInit_v2", offsetof(struct kp_nvml, init) },
	{ "nvmlShutdown", offsetof(struct kp_nvml, shutdown) },
	{ "nvmlErrorString", offsetof(struct kp_nvml, error_string) },
	{ "nvmlDeviceGetCount_v2", offsetof(struct kp_nvml, count) },
	{ "nvmlDeviceGetHandleByIndex_v2", offsetof(struct kp_nvml, handle) },
	{ "nvmlDeviceGetUUID", offsetof(struct kp_nvml, uuid) },
	{ "nvmlDeviceGetName", offsetof(struct kp_nvml, name) },
	{ "nvmlDeviceGetTotalEnergyConsumption",
	    offsetof(struct kp_nvml, energy) },
	{ "nvmlDeviceGetPowerUsage", offsetof(struct kp_nvml, power) },
	{ "nvmlDeviceGetProcessUtilization",
	    offsetof(struct kp_nvml, utilization) },
	{ "nvmlDeviceGetComputeRunningProcesses_v3",
	    offsetof(struct kp_nvml, processes) },
	{ "nvmlDeviceGetComputeRunningProcesses_v2",
	    offsetof(struct kp_nvml, processes) }
};

/*
 * Each symbol into its member, a function pointer: POSIX guarantees a
 * dlsym result converts to one, which memcpy does without C's complaint.
 * The name of the first missing, or NULL.
 */
static const char *
find_symbols(struct kp_nvml *nv)
{
	size_t i, n = sizeof(symbols) / sizeof(symbols[0]);
	void *sym;

	for (i = 0; i < n; i++) {
		if (symbols[i].offset == offsetof(struct kp_nvml, processes) &&
		    nv->processes != NULL)
			continue;	/* _v3 found: _v2 not needed */
		if ((sym = dlsym(nv->dl, symbols[i].name)) != NULL)
			memcpy((char *)nv + symbols[i].offset, &sym,
			    sizeof(sym));
		else if (strstr(symbols[i].name, "_v3") == NULL)
			return symbols[i].name;
	}
	return NULL;
}

struct kp_nvml *
kp_nvml_open(char *why, size_t whylen)
{
	struct kp_nvml *nv = kp_calloc(1, sizeof(*nv));
	const char *missing;
	int rv;

	if ((nv->dl = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) ==
	    NULL) {
		snprintf(why, whylen, "%s", dlerror());
		free(nv);
		return NULL;
	}
	if ((missing = find_symbols(nv)) != NULL) {
		snprintf(why, whylen, "libnvidia-ml.so.1 has no %s: a driver "
		    "older than kp supports", missing);
		dlclose(nv->dl);
		free(nv);
		return NULL;
	}
	if ((rv = nv->init()) != NVML_SUCCESS) {
		snprintf(why, whylen, "nvmlInit_v2: %s", nv->error_string(rv));
		dlclose(nv->dl);
		free(nv);
		return NULL;
	}
	return nv;
}

void
kp_nvml_close(struct kp_nvml *nv)
{
	if (nv == NULL)
		return;
	nv->shutdown();
	dlclose(nv->dl);
	free(nv->last_seen_us);
	free(nv);
}

const char *
kp_nvml_strerror(const struct kp_nvml *nv, int rv)
{
	if (rv == KP_NVML_MIG)
		return "MIG is enabled: per-process utilisation is out of "
		    "scope";
	return nv->error_string(-rv);
}

int
kp_nvml_count(struct kp_nvml *nv)
{
	unsigned int n;
	int rv;

	if ((rv = nv->count(&n)) != NVML_SUCCESS)
		return -rv;
	return (int)n;
}

static int
device(struct kp_nvml *nv, int index, nvml_device *dev)
{
	return -nv->handle((unsigned int)index, dev);
}

int
kp_nvml_identify(struct kp_nvml *nv, int index, char *uuid, size_t uuidlen,
    char *name, size_t namelen)
{
	nvml_device dev;
	int rv;

	if ((rv = device(nv, index, &dev)) != 0 ||
	    (rv = -nv->uuid(dev, uuid, (unsigned int)uuidlen)) != 0 ||
	    (rv = -nv->name(dev, name, (unsigned int)namelen)) != 0)
		return rv;
	return 0;
}

/* The energy counter (mJ) or the power (mW) of device index, in *v. */
static int
read_device(struct kp_nvml *nv, int index, int energy, uint64_t *v)
{
	unsigned long long counter_mj = 0;
	unsigned int power_mw = 0;
	nvml_device dev;
	int rv;

	if ((rv = device(nv, index, &dev)) != 0)
		return rv;
	rv = energy ? -nv->energy(dev, &counter_mj) :
	    -nv->power(dev, &power_mw);
	*v = energy ? counter_mj : power_mw;
	return rv;
}

int
kp_nvml_energy_mj(struct kp_nvml *nv, int index, uint64_t *mj)
{
	return read_device(nv, index, 1, mj);
}

int
kp_nvml_power_mw(struct kp_nvml *nv, int index, uint64_t *mw)
{
	return read_device(nv, index, 0, mw);
}

/*
 * A MIG device is told by its compute processes: each runs in a GPU
 * instance, where a whole device's gpuInstanceId is 0xFFFFFFFF.
 */
int
kp_nvml_mig(struct kp_nvml *nv, int index)
{
	struct nvml_process *procs = NULL;
	unsigned int i, n = 0;
	nvml_device dev;
	int rv, tries, mig = 0;

	if ((rv = device(nv, index, &dev)) != 0)
		return rv;
	for (tries = 0; tries < 4; tries++) {
		rv = nv->processes(dev, &n, procs);
		if (rv != NVML_ERROR_INSUFFICIENT_SIZE)
			break;
		procs = kp_reallocarray(procs, n + 4, sizeof(*procs));
		n += 4;		/* room for those started meanwhile */
	}
	for (i = 0; rv == NVML_SUCCESS && procs != NULL && i < n; i++)
		mig |= procs[i].gpu_instance_id != NVML_NO_INSTANCE;
	free(procs);
	return rv == NVML_SUCCESS ? mig : -rv;
}

static uint64_t *
last_seen_slot(struct kp_nvml *nv, int index)
{
	size_t need = (size_t)index + 1;

	if (need > nv->ndevices_seen) {
		nv->last_seen_us = kp_reallocarray(nv->last_seen_us, need,
		    sizeof(*nv->last_seen_us));
		memset(nv->last_seen_us + nv->ndevices_seen, 0,
		    (need - nv->ndevices_seen) * sizeof(*nv->last_seen_us));
		nv->ndevices_seen = need;
	}
	return &nv->last_seen_us[index];
}

uint64_t
kp_nvml_last_seen(const struct kp_nvml *nv, int index)
{
	if (index < 0 || (size_t)index >= nv->ndevices_seen)
		return 0;
	return nv->last_seen_us[index];
}

void
kp_nvml_set_last_seen(struct kp_nvml *nv, int index, uint64_t ts_us)
{
	*last_seen_slot(nv, index) = ts_us;
}

/*
 * The samples newer than last_us, asked for as nvml.h says: first their
 * number, then into a buffer that size (more if more came meanwhile).
 */
static int
fetch_samples(struct kp_nvml *nv, nvml_device dev, uint64_t last_us,
    struct nvml_sample **samples, unsigned int *n)
{
	int rv, tries;

	*samples = NULL;
	*n = 0;
	rv = nv->utilization(dev, NULL, n, last_us);
	for (tries = 0; tries < 4 && (rv == NVML_SUCCESS ||
	    rv == NVML_ERROR_INSUFFICIENT_SIZE); tries++) {
		*samples = kp_reallocarray(*samples, *n + 4,
		    sizeof(**samples));
		*n += 4;
		if ((rv = nv->utilization(dev, *samples, n, last_us)) ==
		    NVML_SUCCESS)
			return 0;
	}
	free(*samples);
	*samples = NULL;
	*n = 0;
	return -rv;
}

static int
by_time(const void *a, const void *b)
{
	const struct nvml_sample *x = a, *y = b;

	return x->ts_us < y->ts_us ? -1 : x->ts_us > y->ts_us;
}

/* A sample's process and its weight: SM % x the period it stands for. */
struct share {
	unsigned int pid;
	uint64_t weight;
};

static int
by_pid(const void *a, const void *b)
{
	const struct share *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static uint64_t
sm_percent(const struct nvml_sample *s)
{
	return s->sm_util > 100 ? 100 : s->sm_util;
}

/*
 * Each sample's share, its weight in us x % (see nvml.h); samples sorted
 * by time, none at or before start_us.  The span the periods cover.
 */
static uint64_t
weigh_samples(const struct nvml_sample *s, size_t n, uint64_t start_us,
    struct share *shares)
{
	uint64_t before = start_us, period = 0, covered = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (i == 0 || s[i].ts_us != s[i - 1].ts_us) {
			period = s[i].ts_us - before;
			before = s[i].ts_us;
			covered += period;
		}
		shares[i].pid = s[i].pid;
		shares[i].weight = sm_percent(&s[i]) * period;
	}
	return covered;
}

/*
 * A first period longer than the second is a gap the driver's sample
 * buffer no longer holds: it counts as long as the second.  The span
 * covered, less the gap.
 */
static uint64_t
cap_first_period(const struct nvml_sample *s, size_t n, uint64_t start_us,
    uint64_t covered, struct share *shares)
{
	uint64_t first, second;
	size_t i, next;

	for (next = 0; next < n && s[next].ts_us == s[0].ts_us; next++)
		continue;
	if (next == n)
		return covered;
	first = s[0].ts_us - start_us;
	second = s[next].ts_us - s[0].ts_us;
	if (first <= second)
		return covered;
	for (i = 0; i < next; i++)
		shares[i].weight = sm_percent(&s[i]) * second;
	return covered - (first - second);
}

/* Each process's shares summed, fn called once per process. */
static void
sum_by_pid(struct share *shares, size_t n,
    void (*fn)(void *, int, int64_t), void *arg)
{
	uint64_t sum = 0;
	size_t i;

	qsort(shares, n, sizeof(*shares), by_pid);
	for (i = 0; i < n; i++) {
		sum += shares[i].weight;
		if (i + 1 == n || shares[i + 1].pid != shares[i].pid) {
			fn(arg, (int)shares[i].pid, (int64_t)(sum / 100));
			sum = 0;
		}
	}
}

int
kp_nvml_gpu_time(struct kp_nvml *nv, int index, int64_t window_us,
    void (*fn)(void *arg, int pid, int64_t gpu_us), void *arg,
    int64_t *covered_us)
{
	struct nvml_sample *s;
	struct share *shares;
	uint64_t *last = last_seen_slot(nv, index), start_us;
	unsigned int n, skip = 0;
	nvml_device dev;
	int rv;

	*covered_us = 0;
	if ((rv = device(nv, index, &dev)) != 0)
		return rv;
	if ((rv = fetch_samples(nv, dev, *last, &s, &n)) != 0)
		return rv == KP_NVML_NOT_FOUND ? 0 :
		    rv == KP_NVML_NOT_SUPPORTED && kp_nvml_mig(nv, index) == 1 ?
		    KP_NVML_MIG : rv;
	qsort(s, n, sizeof(*s), by_time);
	start_us = *last;
	if (start_us == 0 && n > 0)	/* the first call: see nvml.h */
		start_us = s[n - 1].ts_us > (uint64_t)window_us ?
		    s[n - 1].ts_us - (uint64_t)window_us : 0;
	while (skip < n && s[skip].ts_us <= start_us)
		skip++;
	shares = kp_calloc(n - skip + 1, sizeof(*shares));
	*covered_us = (int64_t)cap_first_period(s + skip, n - skip, start_us,
	    weigh_samples(s + skip, n - skip, start_us, shares), shares);
	sum_by_pid(shares, n - skip, fn, arg);
	if (n > 0)
		*last = s[n - 1].ts_us;
	free(shares);
	free(s);
	return 0;
}
