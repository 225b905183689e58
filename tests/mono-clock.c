/*
 * mono-clock.so: a stored CLOCK_MONOTONIC, for tests whose figures
 * depend on an interval's length.  LD_PRELOAD it and set KP_MONO_US: every
 * reading of CLOCK_MONOTONIC is that many microseconds, so that two
 * one-shot --state runs are exactly as far apart as the test says
 * (rapl-read(1), --state), however fast the machine is.  Other clocks, and
 * a run without KP_MONO_US, are the kernel's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

int
clock_gettime(clockid_t id, struct timespec *ts)
{
	static int (*real)(clockid_t, struct timespec *);
	const char *stored = getenv("KP_MONO_US");
	long long us;

	if (id == CLOCK_MONOTONIC && stored != NULL) {
		us = strtoll(stored, NULL, 10);
		ts->tv_sec = us / 1000000;
		ts->tv_nsec = us % 1000000 * 1000;
		return 0;
	}
	if (real == NULL)
		real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT,
		    "clock_gettime");
	return real(id, ts);
}
