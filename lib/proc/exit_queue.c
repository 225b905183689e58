/*
 * The queue of the kernel's exit facts that a sampler has received and not
 * yet used (proc-cputime(1), "Exit accounting").  The listener's socket is
 * drained all the time, beside the sampler's clock or its input, so that
 * its buffer never fills between two scans; a scan takes the facts
 * received before it began, and those received while it ran wait for the
 * next, since their processes may have ended after the scan read them.
 *
 * The process events (exec_cgroups.c) are read as they arrive, since an
 * exec's cgroup is read from /proc while the process lives; the exit
 * records are read at most ten times a second, since each read drains all
 * the socket holds and a wakeup for each record cost more than reading it
 * (bench-exits; --taskstats-buffer holds thousands).  One descriptor
 * (epoll) stands for both and for the exit records' pause (a timer).
 */
#include <sys/epoll.h>
#include <sys/timerfd.h>

#include <err.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

#define FACTS_PAUSE_NS 100000000
enum { READY_FACTS = 1, READY_EVENTS, READY_PAUSE };

struct held {
	struct kp_exit e;
	char *cgroup;		/* e.cgroup, owned */
	int used;		/* taken by the last kp_exits_each */
};

struct kp_exits {
	struct kp_taskstats *ts;	/* NULL once reading it failed */
	struct kp_events *ev;		/* NULL: none, or reading it failed */
	int epfd, timerfd;		/* -1: none */
	struct held *h;
	size_t n, cap;
	size_t nbefore;		/* h[0..nbefore): before the cut, by pid */
	uint64_t dropped_seen;	/* the listener's drops at the last look */
	uint64_t lost_seen;	/* the events lost at the last look */
};

static void
watch(struct kp_exits *x, int op, int fd, uint32_t events, int what)
{
	struct epoll_event ee = { .events = events, .data.u32 = what };

	if (x->epfd < 0) {
		x->epfd = epoll_create1(EPOLL_CLOEXEC);
		x->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC |
		    TFD_NONBLOCK);
		if (x->epfd < 0 || x->timerfd < 0)
			err(KP_EXIT_FAILURE, "epoll");
		watch(x, EPOLL_CTL_ADD, x->timerfd, EPOLLIN, READY_PAUSE);
	}
	if (epoll_ctl(x->epfd, op, fd, &ee) < 0)
		err(KP_EXIT_FAILURE, "epoll_ctl");
}

struct kp_exits *
kp_exits_new(struct kp_taskstats *ts)
{
	struct kp_exits *x = kp_calloc(1, sizeof(*x));
	struct kp_taskstats_counts c;

	x->epfd = x->timerfd = -1;
	x->ts = ts;
	if (ts != NULL && kp_taskstats_counts(ts, &c) == 0)
		x->dropped_seen = c.dropped;
	if (ts != NULL)
		watch(x, EPOLL_CTL_ADD, kp_taskstats_fd(ts),
		    EPOLLIN | EPOLLONESHOT, READY_FACTS);
	return x;
}

void
kp_exits_set_events(struct kp_exits *x, struct kp_events *ev)
{
	x->ev = ev;
	watch(x, EPOLL_CTL_ADD, kp_events_fd(ev), EPOLLIN, READY_EVENTS);
}

/* fn is told each exit's cgroup by the process events, where x has them. */
void
kp_exits_on_exit(struct kp_exits *x, kp_exit_cgroup_fn *fn, void *arg)
{
	if (x != NULL)
		kp_events_on_exit(x->ev, fn, arg);
}

int
kp_exits_fd(const struct kp_exits *x)
{
	return x != NULL && (x->ts != NULL || x->ev != NULL) ? x->epfd : -1;
}

static void
hold(const struct kp_exit *e, void *arg)
{
	struct kp_exits *x = arg;
	const char *cgroup = kp_events_cgroup(x->ev, e->pid);

	if (x->n == x->cap) {
		x->cap = x->cap * 2 + 256;
		x->h = kp_reallocarray(x->h, x->cap, sizeof(*x->h));
	}
	x->h[x->n].e = *e;
	x->h[x->n].cgroup = cgroup != NULL ? kp_strdup(cgroup) : NULL;
	x->h[x->n].e.cgroup = x->h[x->n].cgroup;
	x->h[x->n++].used = 0;
}

/*
 * A fact from elsewhere than the listener (tests/facts-replay feeds a
 * sampler facts from its input, with no listener: kp_exits_new(NULL)),
 * with the cgroup it gives where the events know none.
 */
void
kp_exits_add(struct kp_exits *x, const struct kp_exit *e)
{
	struct held *h;

	hold(e, x);
	h = &x->h[x->n - 1];
	if (h->cgroup == NULL && e->cgroup != NULL)
		h->e.cgroup = h->cgroup = kp_strdup(e->cgroup);
}

/* Every event queued; a socket that cannot be read any more is said once. */
static void
drain_events(struct kp_exits *x)
{
	if (x->ev == NULL || kp_events_drain(x->ev) == 0)
		return;
	warnx("process events: %s: exit records under their parents' "
	    "cgroups from now on", strerror(errno));
	kp_events_close(x->ev);
	x->ev = NULL;
}

/*
 * Every fact queued, now, after the events that name their cgroups.  A
 * socket that cannot be read any more is said once and closed: the
 * reaping parents and the cgroup counters go on.
 */
void
kp_exits_drain(struct kp_exits *x)
{
	if (x == NULL)
		return;
	drain_events(x);
	if (x->ts == NULL || kp_taskstats_drain(x->ts, hold, x) == 0)
		return;
	warnx("taskstats: reading exit records: %s: exits from the reaping "
	    "parents and the cgroup counters only from now on",
	    strerror(errno));
	kp_taskstats_close(x->ts);
	x->ts = NULL;
}

/* The exit records drained, and left alone for the pause. */
static void
facts_ready(struct kp_exits *x)
{
	struct itimerspec pause = { .it_value.tv_nsec = FACTS_PAUSE_NS };

	kp_exits_drain(x);
	if (timerfd_settime(x->timerfd, 0, &pause, NULL) < 0)
		err(KP_EXIT_FAILURE, "timerfd_settime");
}

/* The pause is over: the exit records are watched again. */
static void
pause_over(struct kp_exits *x)
{
	uint64_t expirations;

	if (read(x->timerfd, &expirations, sizeof(expirations)) < 0)
		return;
	if (x->ts != NULL)
		watch(x, EPOLL_CTL_MOD, kp_taskstats_fd(x->ts),
		    EPOLLIN | EPOLLONESHOT, READY_FACTS);
}

/* kp_exits_fd is readable: what it holds, read without blocking. */
void
kp_exits_ready(struct kp_exits *x)
{
	struct epoll_event ee[3];
	int i, n;

	if (x == NULL || (n = epoll_wait(x->epfd, ee, 3, 0)) <= 0)
		return;
	for (i = 0; i < n; i++) {
		if (ee[i].data.u32 == READY_FACTS)
			facts_ready(x);
		else if (ee[i].data.u32 == READY_EVENTS)
			drain_events(x);
		else
			pause_over(x);
	}
}

static int
by_pid(const void *a, const void *b)
{
	const struct held *p = a, *q = b;

	return (p->e.pid > q->e.pid) - (p->e.pid < q->e.pid);
}

/* A scan begins: every fact held came before it. */
void
kp_exits_cut(struct kp_exits *x)
{
	if (x == NULL)
		return;
	if (x->n > 1)
		qsort(x->h, x->n, sizeof(*x->h), by_pid);
	x->nbefore = x->n;
	kp_events_cut(x->ev);
}

/*
 * Each fact held to fn, with whether it came before the cut; fn returns 1
 * for a fact it used, which is then let go, or 0 to keep it.  The facts
 * stay where they are while fn runs, for kp_exits_find.
 */
void
kp_exits_each(struct kp_exits *x, kp_exits_fn *fn, void *arg)
{
	size_t i, n = 0, before = 0;

	if (x == NULL)
		return;
	for (i = 0; i < x->n; i++)
		x->h[i].used = fn(&x->h[i].e, i < x->nbefore, arg);
	for (i = 0; i < x->n; i++) {
		if (x->h[i].used) {
			free(x->h[i].cgroup);
			continue;
		}
		before += i < x->nbefore;
		x->h[n++] = x->h[i];
	}
	x->n = n;
	x->nbefore = before;
}

/* The processes the events saw end before the cut, as kp_events says. */
void
kp_exits_each_ended(struct kp_exits *x, kp_ended_fn *fn, void *arg)
{
	if (x != NULL)
		kp_events_each_ended(x->ev, fn, arg);
}

/* A fact received before the cut of a process with this pid, or NULL. */
const struct kp_exit *
kp_exits_find(const struct kp_exits *x, pid_t pid)
{
	struct held key, *h;

	if (x == NULL || x->nbefore == 0)
		return NULL;
	key.e.pid = pid;
	h = bsearch(&key, x->h, x->nbefore, sizeof(*x->h), by_pid);
	return h != NULL ? &h->e : NULL;
}

/* The exit records the socket dropped since the last call, buffer full. */
uint64_t
kp_exits_dropped(struct kp_exits *x)
{
	struct kp_taskstats_counts c;
	uint64_t n;

	if (x == NULL || x->ts == NULL || kp_taskstats_counts(x->ts, &c) < 0)
		return 0;
	n = c.dropped - x->dropped_seen;
	x->dropped_seen = c.dropped;
	return n;
}

/* The process events lost since the last call. */
uint64_t
kp_exits_events_lost(struct kp_exits *x)
{
	uint64_t n;

	if (x == NULL || x->ev == NULL)
		return 0;
	n = kp_events_lost(x->ev) - x->lost_seen;
	x->lost_seen = kp_events_lost(x->ev);
	return n;
}

int
kp_exits_listening(const struct kp_exits *x)
{
	return x != NULL && x->ts != NULL;
}

int
kp_exits_hearing(const struct kp_exits *x)
{
	return x != NULL && x->ev != NULL;
}

void
kp_exits_free(struct kp_exits *x)
{
	size_t i;

	if (x == NULL)
		return;
	kp_taskstats_close(x->ts);
	kp_events_close(x->ev);
	for (i = 0; i < x->n; i++)
		free(x->h[i].cgroup);
	if (x->epfd >= 0)
		close(x->epfd);
	if (x->timerfd >= 0)
		close(x->timerfd);
	free(x->h);
	free(x);
}
