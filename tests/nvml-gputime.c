/*
 * A test driver of lib/nvml.c's kp_nvml_gpu_time, as proc-cputime calls
 * it: nvml-gputime DEVICE WINDOW_US READS reads device DEVICE's GPU time
 * per process READS times, printing for each read its number, the time
 * covered, and a line per process, "pid gpu_us"; an error as the library
 * says it, exit 1.
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>

#include "kp.h"
#include "nvml.h"

static void
print_process(void *arg, int pid, int64_t gpu_us)
{
	(void)arg;
	printf("%d %lld\n", pid, (long long)gpu_us);
}

int
main(int argc, char *argv[])
{
	struct kp_nvml *nv;
	char why[512];
	int64_t covered_us;
	long long device, window_us, reads, i;
	int rv;

	if (argc != 4)
		errx(KP_EXIT_USAGE, "usage: nvml-gputime device window_us "
		    "reads");
	device = kp_parse_int(argv[1], 0, 63, "device");
	window_us = kp_parse_int(argv[2], 1, INT64_MAX, "window");
	reads = kp_parse_int(argv[3], 1, 1000, "reads");
	if ((nv = kp_nvml_open(why, sizeof(why))) == NULL)
		errx(KP_EXIT_NOSOURCE, "%s", why);
	for (i = 1; i <= reads; i++) {
		rv = kp_nvml_gpu_time(nv, (int)device, window_us,
		    print_process, NULL, &covered_us);
		if (rv != 0) {
			warnx("read %lld: %s", i, kp_nvml_strerror(nv, rv));
			kp_nvml_close(nv);
			return KP_EXIT_FAILURE;
		}
		printf("read %lld covered %lld\n", i, (long long)covered_us);
	}
	kp_nvml_close(nv);
	return KP_EXIT_OK;
}
