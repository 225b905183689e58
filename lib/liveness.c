/*
 * Liveness (kp-records(5), "Record type cpu", dense).  In a dense stream a
 * workload without a record has ended; a sparse stream, as one cut by
 * grep, may never say so, and a stage that holds what it has seen would
 * grow with the run.  It holds at most KP_LIVE_MAX; beyond, it lets go of
 * those seen least recently, down to half, and says so.
 */
#include <err.h>
#include <stdlib.h>

#include "kp.h"

static int
by_seq(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/*
 * The seq below which to let go, so that about keep of the n workloads
 * whose last records' seqs are in last_seq stay (those of the cut's own
 * seq stay too).  Sorts last_seq.
 */
int64_t
kp_live_cut(int64_t *last_seq, size_t n, size_t keep)
{
	if (n <= keep)
		return INT64_MIN;
	qsort(last_seq, n, sizeof(*last_seq), by_seq);
	return last_seq[n - keep];
}

/* One not seen since the cut is let go: it leaves, then it is freed. */
static int
seen_before(void *val, void *arg)
{
	const struct kp_live *l = arg;

	if (*(const int64_t *)((const char *)val + l->seq_off) >= l->cut)
		return 0;
	if (l->leave != NULL)
		l->leave(val, l->leave_arg);
	return 1;
}

static void
last_seq_of(const char *key, void *val, void *arg)
{
	struct kp_live *l = arg;

	(void)key;
	l->seqs[l->nseqs++] = *(const int64_t *)((const char *)val +
	    l->seq_off);
}

/* The seq below which the n held are let go, so that about half stay. */
static int64_t
half_cut(struct kp_live *l, size_t n)
{
	int64_t cut;

	l->seqs = kp_reallocarray(NULL, n, sizeof(*l->seqs));
	l->nseqs = 0;
	kp_map_each(l->map, last_seq_of, l);
	cut = kp_live_cut(l->seqs, n, KP_LIVE_MAX / 2);
	free(l->seqs);
	l->seqs = NULL;
	return cut;
}

/*
 * Interval seq has ended.  Dense, every workload it had no record of has
 * ended; sparse, beyond KP_LIVE_MAX held, those seen least recently are
 * let go down to half, said once with the fate the caller gives them
 * (kp-records(5), Record type cpu: dense).
 */
void
kp_live_sweep(struct kp_live *l, int dense, int64_t seq)
{
	size_t n = kp_map_count(l->map);

	if (!dense && n <= KP_LIVE_MAX)
		return;
	l->cut = seq;
	if (!dense) {
		l->cut = half_cut(l, n);
		if (!l->told++)
			warnx("%zu processes without an end, more than %d: "
			    "%s", n, KP_LIVE_MAX, l->fate);
	}
	kp_map_sweep(l->map, seen_before, l, l->free_val);
}

/*
 * One more workload is to be held while interval seq is read, at line
 * lineno of name.  In a sparse stream that holds KP_LIVE_MAX, those last
 * seen before seq are let go first, down to half, so that the bound holds
 * inside an interval as well as at its end; how many is said at that line.
 * The interval's own stay, as its output needs them: when they alone fill
 * the bound, nothing is let go until the interval ends.
 */
void
kp_live_admit(struct kp_live *l, int dense, int64_t seq, const char *name,
    long lineno)
{
	size_t n = kp_map_count(l->map);

	if (dense || n < KP_LIVE_MAX || l->full_seq == seq)
		return;
	if ((l->cut = half_cut(l, n)) > seq)
		l->cut = seq;
	kp_map_sweep(l->map, seen_before, l, l->free_val);
	if (kp_map_count(l->map) == n && l->cut < seq) {
		/* Half would part those of one seq: all before seq go. */
		l->cut = seq;
		kp_map_sweep(l->map, seen_before, l, l->free_val);
	}
	if (kp_map_count(l->map) == n) {
		l->full_seq = seq;
		return;
	}
	l->told = 1;
	kp_warn_line(name, lineno, "%zu processes without an end, %d at "
	    "most: %zu let go, %s", n, KP_LIVE_MAX, n - kp_map_count(l->map),
	    l->fate);
}
