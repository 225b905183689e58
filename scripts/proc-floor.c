/*
 * The floor for one scan of /proc, for scripts/bench-proc and
 * scripts/bench-live: open, read and close every /proc/PID/stat once, and
 * nothing else.  With an interval, the scans are that many microseconds
 * apart, as a sampler's are.  It prints the bytes read, then the CPU time
 * of one scan after the first (which meets cold caches), in nanoseconds,
 * the mean over the others: the figure a live pipeline is measured against.
 * usage: proc-floor [scans [interval_us]]
 */
#include <ctype.h>
#include <dirent.h>
#include <err.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long long
cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) < 0)
		err(1, "clock_gettime");
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void
pause_us(long us)
{
	struct timespec ts = { us / 1000000, us % 1000000 * 1000 };

	while (nanosleep(&ts, &ts) < 0)
		;
}

static long
scan(void)
{
	char path[300], buf[1024];
	struct dirent *de;
	long bytes = 0;
	ssize_t n;
	DIR *d;
	int fd;

	if ((d = opendir("/proc")) == NULL)
		err(1, "/proc");
	while ((de = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "%s/stat", de->d_name);
		if ((fd = openat(dirfd(d), path, O_RDONLY)) < 0)
			continue;
		if ((n = read(fd, buf, sizeof(buf))) > 0)
			bytes += n;
		close(fd);
	}
	closedir(d);
	return bytes;
}

int
main(int argc, char *argv[])
{
	long scans = 1, interval_us = 0, i, bytes = 0;
	long long first_ns = 0;

	if ((argc > 1 && ((scans = strtol(argv[1], NULL, 10)) < 1)) ||
	    (argc > 2 && ((interval_us = strtol(argv[2], NULL, 10)) < 0)) ||
	    argc > 3)
		errx(2, "usage: proc-floor [scans [interval_us]]");
	for (i = 0; i < scans; i++) {
		if (i > 0 && interval_us > 0)
			pause_us(interval_us);
		bytes += scan();
		if (i == 0)
			first_ns = cpu_ns();
	}
	printf("%ld\n", bytes);
	if (scans > 1)
		printf("%lld\n", (cpu_ns() - first_ns) / (scans - 1));
	return 0;
}
