/*
 * The queue of the kernel's exit facts that a sampler has received and not
 * yet used (proc-cputime(1), "Exit accounting").  The listener's socket is
 * drained all the time, beside the sampler's clock or its input, so that
 * its buffer never fills between two scans; a scan takes the facts
 * received before it began, and those received while it ran wait for the
 * next, since their processes may have ended after the scan read them.
 */
#include <err.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proc.h"

struct held {
	struct kp_exit e;
	int used;		/* taken by the last kp_exits_each */
};

struct kp_exits {
	struct kp_taskstats *ts;	/* NULL once reading it failed */
	struct held *h;
	size_t n, cap;
	size_t nbefore;		/* h[0..nbefore): before the cut, by pid */
	uint64_t dropped_seen;	/* the listener's drops at the last look */
};

struct kp_exits *
kp_exits_new(struct kp_taskstats *ts)
{
	struct kp_exits *x = kp_calloc(1, sizeof(*x));
	struct kp_taskstats_counts c;

	x->ts = ts;
	if (ts != NULL && kp_taskstats_counts(ts, &c) == 0)
		x->dropped_seen = c.dropped;
	return x;
}

int
kp_exits_fd(const struct kp_exits *x)
{
	return x != NULL && x->ts != NULL ? kp_taskstats_fd(x->ts) : -1;
}

static void
hold(const struct kp_exit *e, void *arg)
{
	struct kp_exits *x = arg;

	if (x->n == x->cap) {
		x->cap = x->cap * 2 + 256;
		x->h = kp_reallocarray(x->h, x->cap, sizeof(*x->h));
	}
	x->h[x->n].e = *e;
	x->h[x->n++].used = 0;
}

/*
 * A fact from elsewhere than the listener (tests/facts-replay feeds a
 * sampler facts from its input, with no listener: kp_exits_new(NULL)).
 */
void
kp_exits_add(struct kp_exits *x, const struct kp_exit *e)
{
	hold(e, x);
}

/*
 * Every fact queued, now.  A socket that cannot be read any more is said
 * once and closed: the reaping parents and the cgroup counters go on.
 */
void
kp_exits_drain(struct kp_exits *x)
{
	if (x == NULL || x->ts == NULL ||
	    kp_taskstats_drain(x->ts, hold, x) == 0)
		return;
	warnx("taskstats: reading exit records: %s: exits from the reaping "
	    "parents and the cgroup counters only from now on",
	    strerror(errno));
	kp_taskstats_close(x->ts);
	x->ts = NULL;
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
		if (x->h[i].used)
			continue;
		before += i < x->nbefore;
		x->h[n++] = x->h[i];
	}
	x->n = n;
	x->nbefore = before;
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

int
kp_exits_listening(const struct kp_exits *x)
{
	return x != NULL && x->ts != NULL;
}

void
kp_exits_free(struct kp_exits *x)
{
	if (x == NULL)
		return;
	kp_taskstats_close(x->ts);
	free(x->h);
	free(x);
}
