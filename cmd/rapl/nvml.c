/*
 * rapl-read's source nvml: each NVIDIA GPU, zone gpu, through
 * libnvidia-ml (lib/nvml.c): its energy counter, else its power
 * integrated as an ACPI meter's is (sample.c).  Run only when named.
 */
#include <err.h>
#include <stdlib.h>
#include <string.h>

#include "nvml.h"
#include "rapl.h"

extern const struct source nvml_source;

/*
 * A device's identity, and the reading its open took: the first sample
 * uses it rather than ask the driver again a moment later.
 */
struct gpu {
	int index;
	char key[16];			/* its member's: "nvml:<index>" */
	char uuid[KP_NVML_UUID_LEN], name[KP_NVML_NAME_LEN];
	uint64_t first;
	int has_first;
};

static struct kp_nvml *nv;
static struct gpu *gpus;
static int ngpus;

static struct gpu *
gpu_of(const struct member *mb)
{
	int i;

	for (i = 0; i < ngpus; i++)
		if (strcmp(gpus[i].key, mb->key) == 0)
			return &gpus[i];
	errx(KP_EXIT_FAILURE, "no GPU of member '%s'", mb->key);
}

/*
 * The first reading tells which the device gives: its energy counter
 * (Volta and later), else its power.  0, or the NVML failure.
 */
static int
first_reading(struct gpu *g, enum reading *how)
{
	uint64_t v;
	int rv;

	*how = READ_INTEGRAL_UJ;
	rv = kp_nvml_energy_mj(nv, g->index, &v);
	if (rv == KP_NVML_NOT_SUPPORTED) {
		*how = READ_POWER_UW;
		rv = kp_nvml_power_mw(nv, g->index, &v);
	}
	if (rv == 0) {
		g->first = v * 1000;	/* mJ to uJ, mW to uW */
		g->has_first = 1;
	}
	return rv;
}

/*
 * Device index as a member of zone gpu; a device that gives neither
 * figure is left out, said once.  MIG is out of scope: its instances are
 * not told apart, the whole device is measured.
 */
static void
add_gpu(struct meter *m, struct gpu *g)
{
	struct member *mb;
	enum reading how;
	int rv;

	if ((rv = kp_nvml_identify(nv, g->index, g->uuid, sizeof(g->uuid),
	    g->name, sizeof(g->name))) != 0 ||
	    (rv = first_reading(g, &how)) != 0) {
		warnx("GPU %d: %s: left out", g->index, kp_nvml_strerror(nv,
		    rv));
		return;
	}
	if (kp_nvml_mig(nv, g->index) == 1)
		warnx("GPU %d: MIG is enabled, which kp leaves out of scope: "
		    "its energy is the whole GPU's", g->index);
	mb = new_member(m, &nvml_source, g->key);
	mb->reading = how;	/* a counter that never wraps, or a power */
	xpath(mb->zone, sizeof(mb->zone), "gpu");
	/* What --list shows of it: which device, how, and which card. */
	xpath(mb->where, sizeof(mb->where), "nvml:%d %s %s %s", g->index,
	    how == READ_INTEGRAL_UJ ? "energy" : "power", g->uuid, g->name);
}

static int
nvml_open(struct meter *m, char *why, size_t len)
{
	int i, n;

	if ((nv = kp_nvml_open(why, len)) == NULL)
		return KP_EXIT_NOSOURCE;
	if ((n = kp_nvml_count(nv)) < 0) {
		snprintf(why, len, "nvmlDeviceGetCount_v2: %s",
		    kp_nvml_strerror(nv, n));
		return KP_EXIT_NOSOURCE;
	}
	gpus = kp_calloc((size_t)n + 1, sizeof(*gpus));
	ngpus = n;
	for (i = 0; i < n; i++) {
		gpus[i].index = i;
		snprintf(gpus[i].key, sizeof(gpus[i].key), "nvml:%d", i);
		add_gpu(m, &gpus[i]);
	}
	for (i = 0; i < (int)m->nmembers; i++)
		if (m->members[i].src == &nvml_source)
			return 0;
	snprintf(why, len, "no NVIDIA GPU that gives its energy or power "
	    "(%d found)", n);
	return KP_EXIT_NOSOURCE;
}

/*
 * The counter going back is the driver reloaded, which starts it at 0:
 * the interval counts from 0 to the new value (rapl-read(1), nvml).
 */
static void
check_reload(struct member *mb, uint64_t uj)
{
	if (mb->reading != READ_INTEGRAL_UJ || !mb->has_prev || uj >= mb->prev)
		return;
	warnx("GPU %s: energy counter went back from %llu to %llu mJ: the "
	    "driver was reloaded; counting from 0 at the reload",
	    mb->key + strlen("nvml:"), (unsigned long long)(mb->prev / 1000),
	    (unsigned long long)(uj / 1000));
	mb->prev = 0;
}

static int
nvml_read(struct member *mb, int64_t deadline_us)
{
	struct gpu *g = gpu_of(mb);
	uint64_t v;
	int rv;

	(void)deadline_us;
	if (g->has_first) {
		g->has_first = 0;
		mb->cur = g->first;
		return 0;
	}
	rv = mb->reading == READ_INTEGRAL_UJ ?
	    kp_nvml_energy_mj(nv, g->index, &v) :
	    kp_nvml_power_mw(nv, g->index, &v);
	if (rv != 0) {
		if (!mb->warned)
			warnx("GPU %d: %s%s", g->index, kp_nvml_strerror(nv,
			    rv), rv == KP_NVML_GPU_IS_LOST ? ": its records "
			    "stop, the other GPUs' go on" : "");
		mb->warned = 1;
		return 1;
	}
	check_reload(mb, v * 1000);
	mb->cur = v * 1000;
	return 0;
}

static void
nvml_fields(struct kp_buf *b, const struct member *one, size_t counters)
{
	const struct gpu *g = gpu_of(one);

	kp_buf_text(b, "device", one->key + strlen("nvml:"));
	if (g->uuid[0] != '\0')
		kp_buf_text(b, "uuid", g->uuid);
	if (g->name[0] != '\0')
		kp_buf_text(b, "name", g->name);
	kp_buf_int(b, "sockets", (int64_t)counters);
}

static void
nvml_close(void)
{
	kp_nvml_close(nv);
	nv = NULL;
	free(gpus);
	gpus = NULL;
	ngpus = 0;
}

const struct source nvml_source = {
	.name = "nvml",
	.what = "NVIDIA GPUs",
	.apart = 1,
	.open = nvml_open,
	.read = nvml_read,
	.fields = nvml_fields,
	.close = nvml_close
};
