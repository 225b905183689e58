/*
 * Small files read whole: /proc's and sysfs's, a cgroup's counter, the
 * boot id of a state file.  A read of one such file is its one state.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <unistd.h>

#include "kp.h"

/* Reads a small file whole into buf, NUL-terminated; -1 with errno. */
int
kp_read_file(int dirfd, const char *path, char *buf, size_t len)
{
	ssize_t n;
	size_t got = 0;
	int fd, saved;

	if ((fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			saved = errno;
			close(fd);
			errno = saved;
			return -1;
		}
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	return (int)got;
}

/*
 * A path made by fmt into buf of len bytes; -1 with ENAMETOOLONG where it
 * does not fit, whose caller says what a cut path would have hidden.
 */
int
kp_vpathf(char *buf, size_t len, const char *fmt, va_list ap)
{
	int n = vsnprintf(buf, len, fmt, ap);

	if (n >= 0 && (size_t)n < len)
		return 0;
	errno = ENAMETOOLONG;
	return -1;
}
