/*
 * The floor for replacing one counter file whole, for
 * scripts/bench-powercap-tree: in directory dir, count times a new file
 * created under one temporary name, a counter written into it, closed and
 * renamed over the last, and nothing else: what kp-fmt -f powercap pays
 * at least for each counter of a tree that moves (kp-fmt(1), Powercap
 * trees).  It prints the CPU time of one replacement, the mean, in
 * nanoseconds; then that of the cheapest way round it, which kp-fmt does
 * not take: two files kept open, the one not in place written over and
 * swapped with the other (renameat2's RENAME_EXCHANGE), so that no file is
 * created, but a reader that opened a counter an interval before (or a
 * virtiofs or 9p cache that kept it) may read it while it is written.
 * usage: replace-floor dir [count]
 */
#define _GNU_SOURCE	/* renameat2 */
#include <err.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* The CPU time since t0, in nanoseconds, a mean over count. */
static long long
per_ns(clock_t t0, long count)
{
	return (long long)((double)(clock() - t0) * 1e9 / CLOCKS_PER_SEC /
	    (double)count);
}

/* count files created and renamed over energy_uj: ns each. */
static long long
replaced(int dir, long count)
{
	clock_t t0 = clock();
	char text[32];
	long i;
	int fd, len;

	for (i = 0; i < count; i++) {
		len = snprintf(text, sizeof(text), "%ld\n", i * 12345);
		fd = openat(dir, ".tmp", O_WRONLY | O_CREAT | O_EXCL |
		    O_CLOEXEC, 0444);
		if (fd < 0 || write(fd, text, (size_t)len) != len ||
		    close(fd) < 0 || renameat(dir, ".tmp", dir, "energy_uj") < 0)
			err(1, "replace");
	}
	return per_ns(t0, count);
}

/* count writes in place of two files exchanged: ns each. */
static long long
exchanged(int dir, long count)
{
	clock_t t0;
	char text[32];
	long i;
	int fd[2], len;

	fd[0] = openat(dir, "swapped", O_WRONLY | O_CREAT | O_TRUNC, 0444);
	fd[1] = openat(dir, ".swap", O_WRONLY | O_CREAT | O_TRUNC, 0444);
	if (fd[0] < 0 || fd[1] < 0)
		err(1, "exchange");
	t0 = clock();
	for (i = 0; i < count; i++) {
		len = snprintf(text, sizeof(text), "%ld\n", i * 12345);
		if (pwrite(fd[(i + 1) % 2], text, (size_t)len, 0) != len ||
		    renameat2(dir, ".swap", dir, "swapped",
		    RENAME_EXCHANGE) < 0)
			err(1, "exchange");
	}
	return per_ns(t0, count);
}

int
main(int argc, char *argv[])
{
	long count = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
	int dir;

	if (argc < 2 || count <= 0)
		errx(2, "usage: replace-floor dir [count]");
	if ((dir = open(argv[1], O_RDONLY | O_DIRECTORY)) < 0)
		err(1, "%s", argv[1]);
	printf("%lld\n", replaced(dir, count));
	printf("%lld\n", exchanged(dir, count));
	return 0;
}
