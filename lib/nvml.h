/*
 * kp's one home for NVIDIA's management library, libnvidia-ml.so.1,
 * opened at run time with dlopen(3): nothing NVIDIA is needed to build
 * kp, and no kp binary links it.  Used by rapl-read's source nvml (a
 * device's energy) and by proc-cputime (each process's GPU time); see
 * rapl-read(1), SOURCES.
 *
 * Devices are named by their NVML index, as nvidia-smi numbers them.
 * Every function but kp_nvml_open returns 0 on success, or minus the
 * NVML return code (KP_NVML_NOT_SUPPORTED, KP_NVML_GPU_IS_LOST, ...),
 * which kp_nvml_strerror says in words; so "< 0" is a failure.
 *
 *	struct kp_nvml *kp_nvml_open(char *why, size_t whylen);
 *		the library opened and initialised; NULL where it cannot
 *		be used, why saying so ("libnvidia-ml.so.1: cannot open
 *		shared object file: ...", "nvmlInit_v2: Driver Not Loaded").
 *	void kp_nvml_close(struct kp_nvml *);	nvmlShutdown, dlclose
 *	int kp_nvml_count(struct kp_nvml *);	the devices, or < 0
 *	int kp_nvml_identify(nv, index, uuid, uuidlen, name, namelen);
 *	int kp_nvml_energy_mj(nv, index, uint64_t *mj);
 *		the energy counter: mJ since the driver loaded.
 *	int kp_nvml_power_mw(nv, index, uint64_t *mw);	the power now
 *	int kp_nvml_mig(nv, index);
 *		1 where a compute process runs in a MIG instance, else 0.
 *	int kp_nvml_gpu_time(nv, index, window_us, fn, arg, &covered_us);
 *		each process's GPU time on the device since the last call:
 *		see below.
 */
#ifndef KP_NVML_H
#define KP_NVML_H

#include <stddef.h>
#include <stdint.h>

/* The NVML return codes kp tells apart, negated (nvml.h's nvmlReturn_t). */
#define KP_NVML_NOT_SUPPORTED	(-3)
#define KP_NVML_NO_PERMISSION	(-4)
#define KP_NVML_NOT_FOUND	(-6)
#define KP_NVML_GPU_IS_LOST	(-15)
/* Not NVML's: a MIG device, whose processes' utilisation NVML does not give. */
#define KP_NVML_MIG		(-1000)

/* NVML's own sizes for a uuid and a name, their NUL included. */
#define KP_NVML_UUID_LEN	96
#define KP_NVML_NAME_LEN	96

struct kp_nvml;

struct kp_nvml *kp_nvml_open(char *why, size_t whylen);
void kp_nvml_close(struct kp_nvml *nv);
const char *kp_nvml_strerror(const struct kp_nvml *nv, int rv);
int kp_nvml_count(struct kp_nvml *nv);
int kp_nvml_identify(struct kp_nvml *nv, int index, char *uuid,
    size_t uuidlen, char *name, size_t namelen);
int kp_nvml_energy_mj(struct kp_nvml *nv, int index, uint64_t *mj);
int kp_nvml_power_mw(struct kp_nvml *nv, int index, uint64_t *mw);
int kp_nvml_mig(struct kp_nvml *nv, int index);

/*
 * The GPU time of each process on device index since the last call, from
 * nvmlDeviceGetProcessUtilization's samples newer than the last timestamp
 * seen on that device, so that no sample counts twice.  A sample's SM % is
 * the process's share of the device from the timestamp before it (of any
 * process) to its own: gpu_us += sm % x that period.  The first call has
 * no timestamp before: its window is the window_us before the newest
 * sample.  A first period longer than the one after it is a gap the
 * driver's sample buffer no longer holds (an interval longer than the
 * buffer): it counts as long as the one after.  fn is called once per
 * process with samples; *covered_us is the time the counted periods span.
 * No new samples (NOT_FOUND) is 0, nothing called, *covered_us 0.
 * KP_NVML_MIG on a MIG device.
 */
int kp_nvml_gpu_time(struct kp_nvml *nv, int index, int64_t window_us,
    void (*fn)(void *arg, int pid, int64_t gpu_us), void *arg,
    int64_t *covered_us);

/* The last timestamp seen on device index, and set, for --state. */
uint64_t kp_nvml_last_seen(const struct kp_nvml *nv, int index);
void kp_nvml_set_last_seen(struct kp_nvml *nv, int index, uint64_t ts_us);

#endif
