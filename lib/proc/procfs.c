/* Parsing /proc: the node's CPU times, uptime, and one process's stat. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

static int
read_proc_file(const char *procdir, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", procdir, name);
	return kp_read_file(AT_FDCWD, path, buf, len);
}

static uint64_t
clk_tck(void)
{
	static long hz;

	if (hz == 0 && (hz = sysconf(_SC_CLK_TCK)) <= 0)
		hz = 100;
	return (uint64_t)hz;
}

uint64_t
kp_ticks_per_s(void)
{
	return clk_tck();
}

/* Saturates at INT64_MAX rather than wrap to a negative time. */
int64_t
kp_ticks_to_us(uint64_t ticks)
{
	uint64_t sec = ticks / clk_tck();

	if (sec > (uint64_t)(INT64_MAX - 1000000) / 1000000)
		return INT64_MAX;
	return (int64_t)(sec * 1000000 + ticks % clk_tck() * 1000000 /
	    clk_tck());
}

/*
 * The node's CPU time between two samples of /proc/stat, as a cpu record
 * gives it (kp-records(5)): its busy time, at most its total, and its
 * total; a counter that went back gives none.
 */
void
kp_cpu_times_delta_us(const struct kp_cpu_times *prev,
    const struct kp_cpu_times *cur, int64_t *cpu_us, int64_t *total_cpu_us)
{
	*total_cpu_us = kp_ticks_to_us(cur->total_ticks > prev->total_ticks ?
	    cur->total_ticks - prev->total_ticks : 0);
	*cpu_us = kp_ticks_to_us(cur->active_ticks > prev->active_ticks ?
	    cur->active_ticks - prev->active_ticks : 0);
	if (*cpu_us > *total_cpu_us)
		*cpu_us = *total_cpu_us;
}

/*
 * How far n figures of CPU time may pass a total they are part of through
 * rounding alone (proc-cputime(1), Exit accounting): each is a difference
 * of counts of clock ticks, off by less than two ticks, and their errors
 * add up like independent ones: 2 sqrt(n) ticks, 2 at least.
 */
int64_t
kp_ticks_rounding_us(size_t n)
{
	size_t r = 1;

	while ((r + 1) * (r + 1) <= n)
		r++;
	return 2 * (int64_t)r * kp_ticks_to_us(1);
}

/*
 * The most a process's utime or stime may be: a quarter of what fits in
 * int64_t as microseconds, some 73,000 years, so that their sum, its
 * microseconds and the saved state stay exact.  More is a corrupt file.
 */
static uint64_t
stat_ticks_max(void)
{
	return (uint64_t)INT64_MAX / 4 / 1000000 * clk_tck();
}

/* Each counter of the node's "cpu" line, so that their sum cannot wrap. */
#define CPU_TICKS_MAX ((uint64_t)INT64_MAX / 8)

/*
 * One unsigned decimal field that ends at a space or the line's end: no
 * sign, no junk, at most max.  0, or -2 if it is not such a number.  The
 * one parser of numbers the kernel writes in /proc and in cgroup files.
 */
int
kp_parse_u64(const char *p, uint64_t max, uint64_t *v)
{
	char *end;

	if (!isdigit((unsigned char)*p))
		return -2;
	errno = 0;
	*v = strtoull(p, &end, 10);
	if (errno == ERANGE || *v > max ||
	    (*end != ' ' && *end != '\n' && *end != '\0'))
		return -2;
	return 0;
}

/*
 * The aggregate "cpu" line: user nice system idle iowait irq softirq steal
 * guest guest_nice.  Guest time is already counted in user and nice, so only
 * the first eight fields make the total.
 */
int
kp_parse_cpu_times(const char *buf, struct kp_cpu_times *ct)
{
	const char *p;
	uint64_t f[8];
	int i;

	if (strncmp(buf, "cpu ", 4) != 0)
		return -1;
	p = buf + 4;
	ct->total_ticks = 0;
	for (i = 0; i < 8; i++) {
		while (*p == ' ')
			p++;
		if (kp_parse_u64(p, CPU_TICKS_MAX, &f[i]) < 0)
			return -1;
		ct->total_ticks += f[i];
		p += strcspn(p, " \n");
	}
	ct->active_ticks = ct->total_ticks - f[3] - f[4];
	ct->irq_ticks = f[5];
	ct->softirq_ticks = f[6];
	ct->steal_ticks = f[7];
	ct->has_kernel = 1;
	return 0;
}

int
kp_read_cpu_times(const char *procdir, struct kp_cpu_times *ct)
{
	char buf[4096];

	if (read_proc_file(procdir, "stat", buf, sizeof(buf)) < 0)
		return -1;
	if (kp_parse_cpu_times(buf, ct) < 0) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/*
 * The first field of uptime, "12345.67", as clock ticks: digits first (no
 * sign, no space), and few enough seconds that the ticks fit in int64_t,
 * as the saved state and a process's starttime hold them.
 */
int
kp_parse_uptime_ticks(const char *buf, uint64_t *ticks)
{
	char *end;
	uint64_t sec, cs = 0;

	if (!isdigit((unsigned char)*buf))
		return -1;
	errno = 0;
	sec = strtoull(buf, &end, 10);
	if (errno == ERANGE || sec > (uint64_t)INT64_MAX / clk_tck() - 1)
		return -1;
	if (*end == '.' && isdigit((unsigned char)end[1])) {
		cs = (uint64_t)(end[1] - '0') * 10;
		if (isdigit((unsigned char)end[2]))
			cs += (uint64_t)(end[2] - '0');
	}
	*ticks = sec * clk_tck() + cs * clk_tck() / 100;
	return 0;
}

int
kp_read_uptime_ticks(const char *procdir, uint64_t *ticks)
{
	char buf[256];

	if (read_proc_file(procdir, "uptime", buf, sizeof(buf)) < 0)
		return -1;
	if (kp_parse_uptime_ticks(buf, ticks) < 0) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* The largest value of a field read after the comm, 0 for one not read. */
static uint64_t
stat_field_max(int field)
{
	switch (field) {
	case 1:			/* ppid */
		return INT_MAX;
	case 6:			/* flags, an unsigned int in the kernel */
		return UINT_MAX;
	case 11:		/* utime */
	case 12:		/* stime */
	case 13:		/* cutime */
	case 14:		/* cstime */
		return stat_ticks_max();
	case 19:		/* starttime */
		return INT64_MAX;
	}
	return 0;
}

/* The pid before " (": 1 to INT_MAX, digits only; -2 if it is not. */
static int
stat_pid(const char *buf, const char *open, pid_t *pid)
{
	uint64_t v;

	if (open == buf || open[-1] != ' ' ||
	    kp_parse_u64(buf, INT_MAX, &v) < 0 ||
	    buf + strspn(buf, "0123456789") != open - 1 || v == 0)
		return -2;
	*pid = (pid_t)v;
	return 0;
}

/*
 * PID (COMM) STATE PPID ... : comm may hold spaces and parentheses, so it
 * ends at the last ')'.  Fields counted after it: state is 0, ppid 1,
 * flags 6, utime 11, stime 12, cutime 13, cstime 14, starttime 19.
 */
int
kp_parse_pid_stat(const char *buf, struct kp_pid_stat *ps)
{
	const char *open, *close, *p;
	uint64_t v[20] = { 0 }, max;
	size_t n;
	int field;

	if ((open = strchr(buf, '(')) == NULL ||
	    (close = strrchr(buf, ')')) == NULL || close < open)
		return -1;
	if (stat_pid(buf, open, &ps->pid) < 0)
		return -2;
	n = (size_t)(close - open - 1);
	if (n >= sizeof(ps->comm))
		n = sizeof(ps->comm) - 1;
	memcpy(ps->comm, open + 1, n);
	ps->comm[n] = '\0';
	p = close + 1;
	for (field = 0; field <= 19; field++) {
		while (*p == ' ')
			p++;
		if (*p == '\0' || *p == '\n')
			return -1;
		if ((max = stat_field_max(field)) != 0 &&
		    kp_parse_u64(p, max, &v[field]) < 0)
			return -2;
		p += strcspn(p, " \n");	/* a newline ends the line */
	}
	ps->ppid = (pid_t)v[1];
	ps->flags = (unsigned long)v[6];
	ps->cpu_ticks = v[11] + v[12];
	ps->child_ticks = v[13] + v[14];
	ps->starttime = v[19];
	return 0;
}

/*
 * A file of PROC with one read, NUL-terminated: the kernel writes the whole
 * of a small /proc file at once.  -1 if it is gone or empty.
 */
int
kp_read_proc(int procfd, const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	if ((fd = openat(procfd, path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return (int)n;
}

/*
 * PROC/PID/exe, the path of the process's executable as the kernel gives
 * it, in a new string; NULL where there is none (a kernel thread, a
 * process gone) or it may not be read (another user's process without
 * CAP_SYS_PTRACE), which is no fault of the process's.
 */
char *
kp_read_exe(int procfd, pid_t pid)
{
	char path[32], target[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "%ld/exe", (long)pid);
	if ((n = readlinkat(procfd, path, target, sizeof(target))) <= 0 ||
	    (size_t)n >= sizeof(target))
		return NULL;
	return kp_strndup(target, (size_t)n);
}

/* PROC/PID/stat opened, to be read with kp_pread_pid_stat; -1 if gone. */
int
kp_open_pid_stat(int procfd, const char *pid)
{
	char path[32];

	if (snprintf(path, sizeof(path), "%s/stat", pid) >= (int)sizeof(path))
		return -1;
	return openat(procfd, path, O_RDONLY | O_CLOEXEC);
}

/*
 * An open PROC/PID/stat read afresh, from its start: the kernel writes it
 * anew at each read, and gives ESRCH once its process is gone, even if its
 * pid is in use again.  -1 for that or a line cut short, -2 for a
 * malformed one (see kp_parse_pid_stat).
 */
int
kp_pread_pid_stat(int fd, struct kp_pid_stat *ps)
{
	char buf[2048];
	ssize_t n;

	if ((n = pread(fd, buf, sizeof(buf) - 1, 0)) <= 0)
		return -1;
	buf[n] = '\0';
	return kp_parse_pid_stat(buf, ps);
}

/*
 * PROC/PID/stat; -1 for a pid gone by now or a line cut short, -2 for a
 * malformed one (see kp_parse_pid_stat).
 */
int
kp_read_pid_stat(int procfd, const char *pid, struct kp_pid_stat *ps)
{
	int fd, rc;

	if ((fd = kp_open_pid_stat(procfd, pid)) < 0)
		return -1;
	rc = kp_pread_pid_stat(fd, ps);
	close(fd);
	return rc;
}
