/*
 * The floor for one scan of /proc, for scripts/bench-proc: open, read and
 * close every /proc/PID/stat once, and nothing else.
 * usage: proc-floor [scans]
 */
#include <ctype.h>
#include <dirent.h>
#include <err.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int
main(int argc, char *argv[])
{
	char path[300], buf[1024];
	struct dirent *de;
	long scans = 1, i, bytes = 0;
	ssize_t n;
	DIR *d;
	int fd;

	if (argc > 1 && ((scans = strtol(argv[1], NULL, 10)) < 1))
		errx(2, "usage: proc-floor [scans]");
	for (i = 0; i < scans; i++) {
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
	}
	printf("%ld\n", bytes);
	return 0;
}
