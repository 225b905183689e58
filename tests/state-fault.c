/*
 * state-fault.so: faults in the writing of --state temporaries, without
 * root, for tests/state-faults.bats.  LD_PRELOAD it and set KP_FAULT:
 *
 *	enospc		write(2) to a temporary .NAME.XXXXXX fails with ENOSPC
 *	eio		fsync(2) of one fails with EIO
 *	kill-at-fsync	the process is killed (SIGKILL) as it syncs one
 *	kill-at-rename	the process is killed as it renames one into place
 *
 * A temporary is a file whose name starts with '.' and has ".state." in
 * it, as lib/state.c names them, or ".kp-fmt.", as kp-fmt --textfile
 * names its own (kp-fmt(1)); other files are left alone.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
fault(const char *name)
{
	const char *want = getenv("KP_FAULT");

	return want != NULL && strcmp(want, name) == 0;
}

static int
is_temporary(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return base[0] == '.' && (strstr(base, ".state.") != NULL ||
	    strstr(base, ".kp-fmt.") != NULL);
}

static int
fd_is_temporary(int fd)
{
	char link[64], path[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if ((n = readlink(link, path, sizeof(path) - 1)) < 0)
		return 0;
	path[n] = '\0';
	return is_temporary(path);
}

ssize_t
write(int fd, const void *buf, size_t n)
{
	static ssize_t (*real)(int, const void *, size_t);

	if (real == NULL)
		real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT,
		    "write");
	if (fault("enospc") && fd_is_temporary(fd)) {
		errno = ENOSPC;
		return -1;
	}
	return real(fd, buf, n);
}

int
fsync(int fd)
{
	static int (*real)(int);

	if (real == NULL)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	if (fd_is_temporary(fd) && fault("eio")) {
		errno = EIO;
		return -1;
	}
	if (fd_is_temporary(fd) && fault("kill-at-fsync"))
		raise(SIGKILL);
	return real(fd);
}

int
rename(const char *from, const char *to)
{
	static int (*real)(const char *, const char *);

	if (real == NULL)
		real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT,
		    "rename");
	if (is_temporary(from) && fault("kill-at-rename"))
		raise(SIGKILL);
	return real(from, to);
}
