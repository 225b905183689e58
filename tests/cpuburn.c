/*
 * cpuburn: uses ms milliseconds of CPU time, counted on the process's own
 * CPU clock, so that a workload is the same on a fast or a slow machine.
 * usage: cpuburn ms
 */
#include <err.h>
#include <stdlib.h>
#include <time.h>

static long long
cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) < 0)
		err(1, "clock_gettime");
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int
main(int argc, char *argv[])
{
	char *end;
	long long ms, until;

	if (argc != 2 || (ms = strtoll(argv[1], &end, 10)) < 0 || *end != '\0')
		errx(2, "usage: cpuburn ms");
	until = cpu_ns() + ms * 1000000;
	while (cpu_ns() < until)
		;
	return 0;
}
