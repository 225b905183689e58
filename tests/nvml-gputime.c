/*
 * A test driver of lib/nvml.c's kp_nvml_gpu_time, as proc-cputime calls
 * it: nvml-gputime DEVICES WINDOW_US READS reads the GPU time per process
 * of each of DEVICES (NVML indices, 1 to 8 digits: "01" is 0 then 1)
 * READS times, printing for each device of each read "read N device D
 * covered US" and a line per process, "pid gpu_us"; an error as the
 * library says it, exit 1.
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kp.h"
#include "nvml.h"

static void
print_process(void *arg, int pid, int64_t gpu_us)
{
	(void)arg;
	printf("%d %lld\n", pid, (long long)gpu_us);
}

static void
read_device(struct kp_nvml *nv, long long read, int device,
    int64_t window_us)
{
	int64_t covered_us;
	int rv;

	rv = kp_nvml_gpu_time(nv, device, window_us, print_process, NULL,
	    &covered_us);
	if (rv != 0) {
		warnx("read %lld: %s", read, kp_nvml_strerror(nv, rv));
		kp_nvml_close(nv);
		exit(KP_EXIT_FAILURE);
	}
	printf("read %lld device %d covered %lld\n", read, device,
	    (long long)covered_us);
}

int
main(int argc, char *argv[])
{
	struct kp_nvml *nv;
	char why[512];
	long long window_us, reads, i;
	size_t d;

	if (argc != 4 || strlen(argv[1]) == 0 || strlen(argv[1]) > 8 ||
	    strspn(argv[1], "01234567") != strlen(argv[1]))
		errx(KP_EXIT_USAGE, "usage: nvml-gputime devices window_us "
		    "reads");
	window_us = kp_parse_int(argv[2], 1, INT64_MAX, "window");
	reads = kp_parse_int(argv[3], 1, 1000, "reads");
	if ((nv = kp_nvml_open(why, sizeof(why))) == NULL)
		errx(KP_EXIT_NOSOURCE, "%s", why);
	for (i = 1; i <= reads; i++)
		for (d = 0; argv[1][d] != '\0'; d++)
			read_device(nv, i, argv[1][d] - '0', window_us);
	kp_nvml_close(nv);
	return KP_EXIT_OK;
}
