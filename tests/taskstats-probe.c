/*
 * taskstats-probe: the test driver of lib/proc/exit_taskstats.c
 * (tests/taskstats.bats).
 * It opens the listener, runs a workload defined in CPU time, and prints
 * what the kernel's exit records said beside what wait4 and /proc said:
 *
 *	probe PID
 *	child PID STARTTIME RUSAGE_NS		(starttime from /proc/PID/stat,
 *						 utime + stime from wait4)
 *	exit PID PPID START_MIN START CPU_NS THREADS MATCH COMM
 *						(one per process ended;
 *						 MATCH: kp_exit_same_start
 *						 for a child, - for another)
 *	counts DROPPED UNREADABLE FORGOTTEN PENDING RCVBUF_BYTES
 *	netlink ROW				(the socket's row of
 *						 /proc/net/netlink, as read)
 *
 * Each child is named kp-burn, burns -c microseconds of CPU (a loop on its
 * CPU clock), starts -t threads named kp-worker that burn as much each,
 * and waits, alive, until the probe has read its starttime.  With -p it
 * waits first, then computes to its end without a system call, as long
 * as the probe measured that many microseconds of computing to take, and
 * exits: the scheduler has not counted its last run.  With -L the leader ends
 * first (pthread_exit), its threads after it.  -b shrinks the receive
 * buffer after the listener is open, to make it drop.  The exits are read
 * as they come and once more when every child is reaped: by then the
 * kernel has sent them all.  With -l they wait in the socket until every
 * child is reaped and the probe has spent 30 ms of CPU time (so at least
 * as long): a small buffer must drop, and a start taken from the receipt
 * alone is late by at least two ticks.
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/proc.h"

#define CHILDREN_MAX 1000
#define THREADS_MAX 64
#define NETLINK_TRIES 100
#define LAZY_US 30000		/* -l: three ticks of CPU time, so of time */

struct child {
	pid_t pid;
	uint64_t starttime;
	int64_t rusage_ns;
};

static int64_t burn_us = 3000;
static double steps_per_us;	/* -p: the computation's speed; 0: clock */
static int nthreads;
static int leader_first;
static int lazy;		/* -l: no read until every child is reaped */
static int go_fd;		/* the read end: EOF says "exit now" */
static atomic_int workers_left;

static void
usage(void)
{
	fprintf(stderr, "usage: taskstats-probe [-Llp] [-b bytes] [-c cpu_us] "
	    "[-n children] [-t threads]\n");
	exit(KP_EXIT_USAGE);
}

static int64_t
cpu_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static volatile uint64_t sink;

static void
compute(uint64_t steps)
{
	uint64_t x = 1;

	while (steps-- > 0)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

/* -p: how many steps of compute take a microsecond of CPU here. */
static void
measure_steps(void)
{
	int64_t start_ns = cpu_ns(CLOCK_PROCESS_CPUTIME_ID), ns;
	uint64_t steps = 0;

	do {
		compute(10000);
		steps += 10000;
	} while ((ns = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - start_ns) < 50000000);
	steps_per_us = (double)steps * 1000 / (double)ns;
}

static void
spend(clockid_t clock, int64_t us)
{
	int64_t end_ns = cpu_ns(clock) + us * 1000;

	while (cpu_ns(clock) < end_ns)
		;
}

/*
 * CPU time spent, not time passed: the workload is the same anywhere.  A
 * loop on the CPU clock, as the issue measured, or (-p) a computation
 * that makes no system call, as most programs' ends are.
 */
static void
burn(clockid_t clock)
{
	if (steps_per_us > 0)
		compute((uint64_t)(steps_per_us * (double)burn_us));
	else
		spend(clock, burn_us);
}

static void
wait_go(void)
{
	char c;

	while (read(go_fd, &c, 1) < 0 && errno == EINTR)
		;
}

/*
 * The last thread out ends the process with _exit, as every child does:
 * exit() would run the probe's atexit handlers (a sanitizer's among them)
 * in a child.
 */
static void *
worker(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "kp-worker");
	burn(CLOCK_THREAD_CPUTIME_ID);
	wait_go();
	if (atomic_fetch_sub(&workers_left, 1) == 1 && leader_first)
		_exit(0);
	return NULL;
}

static void
child_main(void)
{
	pthread_t t[THREADS_MAX];
	int i;

	prctl(PR_SET_NAME, "kp-burn");
	if (steps_per_us > 0) {
		wait_go();
		burn(CLOCK_PROCESS_CPUTIME_ID);
		_exit(0);
	}
	burn(nthreads ? CLOCK_THREAD_CPUTIME_ID : CLOCK_PROCESS_CPUTIME_ID);
	atomic_store(&workers_left, nthreads);
	for (i = 0; i < nthreads; i++)
		if ((errno = pthread_create(&t[i], NULL, worker, NULL)) != 0)
			err(KP_EXIT_FAILURE, "pthread_create");
	if (leader_first)
		pthread_exit(NULL);
	for (i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	wait_go();
	_exit(0);
}

/* The children, started and each seen alive in /proc. */
static void
start_children(struct child *c, int n)
{
	struct kp_pid_stat ps;
	int go[2], procfd, i;
	char pid[16];

	if (pipe(go) < 0 || (procfd = open("/proc", O_RDONLY)) < 0)
		err(KP_EXIT_FAILURE, "pipe");
	go_fd = go[0];
	for (i = 0; i < n; i++) {
		if ((c[i].pid = fork()) < 0)
			err(KP_EXIT_FAILURE, "fork");
		if (c[i].pid == 0) {
			close(go[1]);
			child_main();
		}
	}
	close(go[0]);
	for (i = 0; i < n; i++) {
		snprintf(pid, sizeof(pid), "%d", (int)c[i].pid);
		if (kp_read_pid_stat(procfd, pid, &ps) < 0)
			err(KP_EXIT_FAILURE, "/proc/%s/stat", pid);
		c[i].starttime = ps.starttime;
	}
	close(procfd);
	close(go[1]);
}

struct workload {
	struct child *c;
	int n;
	int reaped;
};

static void
print_exit(const struct kp_exit *e, void *arg)
{
	const struct workload *w = arg;
	const char *match = "-";
	int i;

	for (i = 0; i < w->n; i++)
		if (w->c[i].pid == e->pid)
			match = kp_exit_same_start(e, w->c[i].starttime) ?
			    "1" : "0";
	printf("exit %d %d %llu %llu %llu %u %s %s\n", (int)e->pid,
	    (int)e->ppid, (unsigned long long)e->start_min_ticks,
	    (unsigned long long)e->start_ticks, (unsigned long long)e->cpu_ns,
	    e->threads, match, e->comm);
}

/* Each child that has ended, reaped: its CPU time from wait4. */
static void
reap_ended(struct workload *w)
{
	struct rusage ru;
	int i, status;
	pid_t pid = 0;

	while (w->reaped < w->n &&
	    (pid = wait4(-1, &status, WNOHANG, &ru)) > 0) {
		for (i = 0; i < w->n && w->c[i].pid != pid; i++)
			;
		if (i == w->n)
			continue;
		w->c[i].rusage_ns = ((int64_t)(ru.ru_utime.tv_sec +
		    ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
		    ru.ru_stime.tv_usec) * 1000;
		printf("child %d %llu %lld\n", (int)pid,
		    (unsigned long long)w->c[i].starttime,
		    (long long)w->c[i].rusage_ns);
		w->reaped++;
	}
	if (pid < 0 && errno != ECHILD)
		err(KP_EXIT_FAILURE, "wait4");
}

/*
 * The exits read as they come, as a stage that polls the listener beside
 * its input would, until every child is reaped; the poll's timeout is
 * only when to look for the reaped again, no measure of anything.
 */
static void
run_workload(struct kp_taskstats *ts, struct workload *w)
{
	struct pollfd pfd = { .fd = kp_taskstats_fd(ts), .events = POLLIN };

	start_children(w->c, w->n);
	for (;;) {
		if (!lazy && kp_taskstats_drain(ts, print_exit, w) < 0)
			err(KP_EXIT_FAILURE, "taskstats");
		reap_ended(w);
		if (w->reaped == w->n)
			break;
		if (poll(&pfd, lazy ? 0 : 1, 10) < 0 && errno != EINTR)
			err(KP_EXIT_FAILURE, "poll");
	}
	if (lazy)
		spend(CLOCK_PROCESS_CPUTIME_ID, LAZY_US);
	if (kp_taskstats_drain(ts, print_exit, w) < 0)
		err(KP_EXIT_FAILURE, "taskstats");
}

/* The socket's row of /proc/net/netlink (its inode is the last column). */
static int
netlink_row(int fd, char *row, size_t len)
{
	char want[32], *end;
	struct stat st;
	FILE *f;
	size_t n;

	if (fstat(fd, &st) < 0 || (f = fopen("/proc/net/netlink", "r")) == NULL)
		err(KP_EXIT_FAILURE, "/proc/net/netlink");
	snprintf(want, sizeof(want), " %llu", (unsigned long long)st.st_ino);
	while (fgets(row, (int)len, f) != NULL) {
		row[strcspn(row, "\n")] = '\0';
		end = row + strlen(row);
		while (end > row && end[-1] == ' ')
			*--end = '\0';
		n = strlen(want);
		if ((size_t)(end - row) >= n && strcmp(end - n, want) == 0) {
			fclose(f);
			return 0;
		}
	}
	fclose(f);
	return -1;
}

/*
 * What the listener counted and the kernel's row, read when no drop came
 * between them (the row before and after agree), so that they can be
 * compared: exits go on arriving, and a full buffer goes on dropping.
 */
static void
print_counts(struct kp_taskstats *ts)
{
	char before[512], after[512];
	struct kp_taskstats_counts c;
	int i;

	for (i = 0; i < NETLINK_TRIES; i++) {
		if (kp_taskstats_drain(ts, NULL, NULL) < 0 ||
		    netlink_row(kp_taskstats_fd(ts), before, sizeof(before)) < 0 ||
		    kp_taskstats_counts(ts, &c) < 0 ||
		    netlink_row(kp_taskstats_fd(ts), after, sizeof(after)) < 0)
			err(KP_EXIT_FAILURE, "taskstats");
		if (strcmp(before, after) == 0)
			break;
	}
	printf("counts %llu %llu %llu %llu %llu\n",
	    (unsigned long long)c.dropped, (unsigned long long)c.unreadable,
	    (unsigned long long)c.forgotten, (unsigned long long)c.pending,
	    (unsigned long long)c.rcvbuf_bytes);
	printf("netlink %s\n", after);
}

int
main(int argc, char *argv[])
{
	struct kp_taskstats *ts;
	struct workload w;
	char why[256];
	int ch, rcvbuf = 0;

	w.n = 10;
	w.reaped = 0;
	while ((ch = getopt(argc, argv, "Lb:c:ln:pt:")) != -1) {
		switch (ch) {
		case 'L':
			leader_first = 1;
			break;
		case 'l':
			lazy = 1;
			break;
		case 'p':
			measure_steps();
			break;
		case 'b':
			rcvbuf = (int)kp_parse_int(optarg, 1, 1 << 30, "bytes");
			break;
		case 'c':
			burn_us = kp_parse_int(optarg, 0, 10000000, "cpu_us");
			break;
		case 'n':
			w.n = (int)kp_parse_int(optarg, 0, CHILDREN_MAX,
			    "children");
			break;
		case 't':
			nthreads = (int)kp_parse_int(optarg, 0, THREADS_MAX,
			    "threads");
			break;
		default:
			usage();
		}
	}
	if (optind != argc || (leader_first && nthreads == 0) ||
	    (steps_per_us > 0 && nthreads > 0))
		usage();
	if ((ts = kp_taskstats_open(0, why, sizeof(why))) == NULL)
		errx(KP_EXIT_FAILURE, "taskstats: %s", why);
	if (rcvbuf && setsockopt(kp_taskstats_fd(ts), SOL_SOCKET,
	    SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		err(KP_EXIT_FAILURE, "SO_RCVBUFFORCE");
	printf("probe %d\n", (int)getpid());
	fflush(stdout);
	w.c = kp_calloc((size_t)w.n + 1, sizeof(*w.c));
	run_workload(ts, &w);
	print_counts(ts);
	kp_taskstats_close(ts);
	free(w.c);
	return kp_out_finish(KP_EXIT_OK);
}
