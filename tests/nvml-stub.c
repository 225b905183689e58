/*
 * A stand-in for NVIDIA's libnvidia-ml.so.1, for the tests: it replays
 * the trace file that KP_NVML_TRACE names, read at nvmlInit_v2.  make
 * builds it as tests/nvml/<variant>/libnvidia-ml.so.1, its soname set, for
 * the tests to put first in LD_LIBRARY_PATH:
 *
 *	full		every symbol kp uses
 *	no-v3		-DNO_V3: no _v3 of
 *			nvmlDeviceGetComputeRunningProcesses, as the
 *			libraries before NVML 11.6
 *	no-processes	-DNO_PROCESSES: no ..._v2 or ..._v3 either
 *
 * Prototypes, struct layouts and return codes are nvml.h's (API 13).
 *
 * The trace: one directive a line, words separated by blanks; a line
 * that starts with '#' is a comment.  ERROR is NOT_SUPPORTED,
 * NO_PERMISSION, NOT_FOUND, DRIVER_NOT_LOADED, GPU_IS_LOST, UNKNOWN or
 * a number.
 *
 *	init ERROR		nvmlInit_v2 answers ERROR
 *	count ERROR		nvmlDeviceGetCount_v2 answers ERROR
 *	device UUID NAME...	the next device, index 0 first; NAME is the
 *				rest of the line
 *	handle INDEX ERROR	nvmlDeviceGetHandleByIndex_v2 answers ERROR
 *	energy INDEX V...	the answers of
 *				nvmlDeviceGetTotalEnergyConsumption, one per
 *				call: mJ, or an ERROR; the last repeats
 *	power INDEX V...	nvmlDeviceGetPowerUsage's, mW or an ERROR
 *	sample INDEX PID TS SM [ROUND]
 *				a sample in the device's buffer: process PID
 *				at TS (us) used SM % of the SMs; a call gets
 *				those whose TS is above its lastSeenTimeStamp,
 *				NOT_FOUND where none is.  With ROUND, only
 *				from the ROUND-th read on, a read being a call
 *				with a NULL buffer (which asks the count, as
 *				nvml.h says to) and those after it: the
 *				samples a driver took meanwhile
 *	utilization INDEX ERROR
 *				nvmlDeviceGetProcessUtilization answers ERROR
 *	process INDEX PID GI	a compute process; GI its gpuInstanceId,
 *				"-" for none (0xFFFFFFFF: no MIG)
 *
 * A device whose energy or power answered GPU_IS_LOST is lost: every
 * call on it answers GPU_IS_LOST from then on, as a GPU off the bus.
 * Where KP_NVML_CALLS names a file, each call appends its function's
 * name to it, one a line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVML_SUCCESS			0
#define NVML_ERROR_UNINITIALIZED	1
#define NVML_ERROR_INVALID_ARGUMENT	2
#define NVML_ERROR_NOT_SUPPORTED	3
#define NVML_ERROR_NO_PERMISSION	4
#define NVML_ERROR_NOT_FOUND		6
#define NVML_ERROR_INSUFFICIENT_SIZE	7
#define NVML_ERROR_DRIVER_NOT_LOADED	9
#define NVML_ERROR_GPU_IS_LOST		15
#define NVML_ERROR_UNKNOWN		999

typedef int nvmlReturn_t;

typedef struct {
	unsigned int pid;
	unsigned long long timeStamp;
	unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

#define MAX_DEVICES	8
#define MAX_ANSWERS	64
#define MAX_SAMPLES	256

struct answers {
	long long v[MAX_ANSWERS];	/* >= 0 a value, < 0 minus an error */
	int n, next;
};

typedef struct nvmlDevice_st {
	char uuid[96], name[96];
	int handle_error, utilization_error, lost;
	struct answers energy, power;
	nvmlProcessUtilizationSample_t samples[MAX_SAMPLES];
	int nsamples, round;
	int sample_round[MAX_SAMPLES];
	nvmlProcessInfo_t procs[MAX_SAMPLES];
	int nprocs;
} *nvmlDevice_t;

static struct nvmlDevice_st devices[MAX_DEVICES];
static int ndevices, init_error, count_error, initialised;

static void
called(const char *fn)
{
	const char *path = getenv("KP_NVML_CALLS");
	FILE *f;

	if (path != NULL && (f = fopen(path, "a")) != NULL) {
		fprintf(f, "%s\n", fn);
		fclose(f);
	}
}

static int
error_code(const char *s)
{
	static const struct { const char *name; int code; } names[] = {
		{ "NOT_SUPPORTED", NVML_ERROR_NOT_SUPPORTED },
		{ "NO_PERMISSION", NVML_ERROR_NO_PERMISSION },
		{ "NOT_FOUND", NVML_ERROR_NOT_FOUND },
		{ "DRIVER_NOT_LOADED", NVML_ERROR_DRIVER_NOT_LOADED },
		{ "GPU_IS_LOST", NVML_ERROR_GPU_IS_LOST },
		{ "UNKNOWN", NVML_ERROR_UNKNOWN }
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i].name) == 0)
			return names[i].code;
	return atoi(s);
}

static struct nvmlDevice_st *
trace_device(const char *index)
{
	int i = atoi(index);

	return i >= 0 && i < MAX_DEVICES ? &devices[i] : &devices[0];
}

static void
read_answers(struct answers *a, char *rest)
{
	char *w;

	while ((w = strtok(rest, " \t\n")) != NULL && a->n < MAX_ANSWERS) {
		rest = NULL;
		a->v[a->n++] = w[0] >= '0' && w[0] <= '9' ? atoll(w) :
		    -error_code(w);
	}
}

static void
read_sample(struct nvmlDevice_st *d, char *rest)
{
	nvmlProcessUtilizationSample_t *s = &d->samples[d->nsamples];
	unsigned long long ts;
	unsigned int pid, sm;
	int round = 1;

	if (d->nsamples < MAX_SAMPLES &&
	    sscanf(rest, "%u %llu %u %d", &pid, &ts, &sm, &round) >= 3) {
		memset(s, 0, sizeof(*s));
		s->pid = pid;
		s->timeStamp = ts;
		s->smUtil = sm;
		d->sample_round[d->nsamples++] = round;
	}
}

static void
read_process(struct nvmlDevice_st *d, char *rest)
{
	nvmlProcessInfo_t *p = &d->procs[d->nprocs];
	char gi[32];

	if (d->nprocs < MAX_SAMPLES &&
	    sscanf(rest, "%u %31s", &p->pid, gi) == 2) {
		p->usedGpuMemory = 1 << 20;
		p->gpuInstanceId = p->computeInstanceId =
		    strcmp(gi, "-") == 0 ? 0xFFFFFFFFu :
		    (unsigned int)atoi(gi);
		d->nprocs++;
	}
}

static void
read_device(char *rest)
{
	struct nvmlDevice_st *d;
	char *name;

	if (ndevices == MAX_DEVICES)
		return;
	d = &devices[ndevices++];
	rest[strcspn(rest, "\n")] = '\0';
	if ((name = strchr(rest, ' ')) != NULL)
		*name++ = '\0';
	snprintf(d->uuid, sizeof(d->uuid), "%s", rest);
	snprintf(d->name, sizeof(d->name), "%s", name != NULL ? name : "");
}

/* One directive of the trace; INDEX's word is the first of rest. */
static void
read_line(char *line)
{
	char word[32], index[32], *rest;
	int n;

	if (sscanf(line, "%31s %n", word, &n) != 1 || word[0] == '#')
		return;
	rest = line + n;
	if (strcmp(word, "device") == 0) {
		read_device(rest);
		return;
	}
	if (strcmp(word, "init") == 0 || strcmp(word, "count") == 0) {
		rest[strcspn(rest, " \t\n")] = '\0';
		*(word[0] == 'i' ? &init_error : &count_error) =
		    error_code(rest);
		return;
	}
	if (sscanf(rest, "%31s %n", index, &n) != 1)
		return;
	rest += n;
	if (strcmp(word, "handle") == 0 || strcmp(word, "utilization") == 0)
		rest[strcspn(rest, " \t\n")] = '\0';
	if (strcmp(word, "energy") == 0)
		read_answers(&trace_device(index)->energy, rest);
	else if (strcmp(word, "power") == 0)
		read_answers(&trace_device(index)->power, rest);
	else if (strcmp(word, "sample") == 0)
		read_sample(trace_device(index), rest);
	else if (strcmp(word, "process") == 0)
		read_process(trace_device(index), rest);
	else if (strcmp(word, "handle") == 0)
		trace_device(index)->handle_error = error_code(rest);
	else if (strcmp(word, "utilization") == 0)
		trace_device(index)->utilization_error = error_code(rest);
}

nvmlReturn_t
nvmlInit_v2(void)
{
	const char *path = getenv("KP_NVML_TRACE");
	char line[512];
	FILE *f;

	called(__func__);
	memset(devices, 0, sizeof(devices));
	ndevices = init_error = count_error = 0;
	if (path != NULL && (f = fopen(path, "r")) != NULL) {
		while (fgets(line, sizeof(line), f) != NULL)
			read_line(line);
		fclose(f);
	}
	initialised = init_error == 0;
	return init_error;
}

nvmlReturn_t
nvmlShutdown(void)
{
	called(__func__);
	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	initialised = 0;
	return NVML_SUCCESS;
}

const char *
nvmlErrorString(nvmlReturn_t result)
{
	switch (result) {
	case NVML_SUCCESS:
		return "Success";
	case NVML_ERROR_UNINITIALIZED:
		return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT:
		return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED:
		return "Not Supported";
	case NVML_ERROR_NO_PERMISSION:
		return "Insufficient Permissions";
	case NVML_ERROR_NOT_FOUND:
		return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE:
		return "Insufficient Size";
	case NVML_ERROR_DRIVER_NOT_LOADED:
		return "Driver Not Loaded";
	case NVML_ERROR_GPU_IS_LOST:
		return "GPU is lost";
	default:
		return "Unknown Error";
	}
}

nvmlReturn_t
nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
	called(__func__);
	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	if (count_error != 0)
		return count_error;
	*deviceCount = (unsigned int)ndevices;
	return NVML_SUCCESS;
}

nvmlReturn_t
nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	called(__func__);
	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	if (index >= (unsigned int)ndevices || device == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (devices[index].lost)
		return NVML_ERROR_GPU_IS_LOST;
	if (devices[index].handle_error != 0)
		return devices[index].handle_error;
	*device = &devices[index];
	return NVML_SUCCESS;
}

static nvmlReturn_t
copy_string(nvmlDevice_t device, const char *s, char *buf,
    unsigned int length)
{
	if (device == NULL || buf == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (device->lost)
		return NVML_ERROR_GPU_IS_LOST;
	if (strlen(s) >= length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	strcpy(buf, s);
	return NVML_SUCCESS;
}

nvmlReturn_t
nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	called(__func__);
	return copy_string(device, device != NULL ? device->uuid : "", uuid,
	    length);
}

nvmlReturn_t
nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
	called(__func__);
	return copy_string(device, device != NULL ? device->name : "", name,
	    length);
}

/* The next of a device's answers; GPU_IS_LOST loses the device. */
static nvmlReturn_t
answer(nvmlDevice_t device, struct answers *a, unsigned long long *value)
{
	long long v;

	if (device == NULL || a == NULL || value == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (device->lost)
		return NVML_ERROR_GPU_IS_LOST;
	if (a->n == 0)
		return NVML_ERROR_NOT_SUPPORTED;
	v = a->v[a->next < a->n ? a->next++ : a->n - 1];
	if (v == -NVML_ERROR_GPU_IS_LOST)
		device->lost = 1;
	if (v < 0)
		return (nvmlReturn_t)-v;
	*value = (unsigned long long)v;
	return NVML_SUCCESS;
}

nvmlReturn_t
nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
    unsigned long long *energy)
{
	called(__func__);
	return answer(device, device != NULL ? &device->energy : NULL, energy);
}

nvmlReturn_t
nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
	unsigned long long mw = 0;
	nvmlReturn_t rv;

	called(__func__);
	rv = answer(device, device != NULL ? &device->power : NULL, &mw);
	if (rv == NVML_SUCCESS)
		*power = (unsigned int)mw;
	return rv;
}

/*
 * As nvml.h says: with utilization NULL, the count needed; else up to
 * *processSamplesCount samples newer than lastSeenTimeStamp, their number
 * in *processSamplesCount.
 */
nvmlReturn_t
nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
    nvmlProcessUtilizationSample_t *utilization,
    unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp)
{
	unsigned int n = 0;
	int i;

	called(__func__);
	if (device == NULL || processSamplesCount == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (device->lost)
		return NVML_ERROR_GPU_IS_LOST;
	if (device->utilization_error != 0)
		return device->utilization_error;
	if (utilization == NULL)
		device->round++;
	for (i = 0; i < device->nsamples; i++) {
		if (device->samples[i].timeStamp <= lastSeenTimeStamp ||
		    device->sample_round[i] > device->round)
			continue;
		if (utilization != NULL && n < *processSamplesCount)
			utilization[n] = device->samples[i];
		n++;
	}
	if (n == 0)
		return NVML_ERROR_NOT_FOUND;
	if (utilization == NULL || n > *processSamplesCount) {
		*processSamplesCount = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	*processSamplesCount = n;
	return NVML_SUCCESS;
}

#ifndef NO_PROCESSES
/* With *infoCount 0, INSUFFICIENT_SIZE and the count, or SUCCESS: none. */
static nvmlReturn_t
running(nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos)
{
	if (device == NULL || infoCount == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (device->lost)
		return NVML_ERROR_GPU_IS_LOST;
	if (*infoCount < (unsigned int)device->nprocs) {
		*infoCount = (unsigned int)device->nprocs;
		return device->nprocs == 0 ? NVML_SUCCESS :
		    NVML_ERROR_INSUFFICIENT_SIZE;
	}
	if (infos == NULL && device->nprocs > 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (device->nprocs > 0)
		memcpy(infos, device->procs,
		    (size_t)device->nprocs * sizeof(*infos));
	*infoCount = (unsigned int)device->nprocs;
	return NVML_SUCCESS;
}

nvmlReturn_t
nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
    unsigned int *infoCount, nvmlProcessInfo_t *infos)
{
	called(__func__);
	return running(device, infoCount, infos);
}

#ifndef NO_V3
nvmlReturn_t
nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
    unsigned int *infoCount, nvmlProcessInfo_t *infos)
{
	called(__func__);
	return running(device, infoCount, infos);
}
#endif
#endif
