/*
 * Liveness (kp-records(5), "Record type cpu", dense).  In a dense stream a
 * workload without a record has ended; a sparse stream, as one cut by
 * grep, may never say so, and a stage that holds what it has seen would
 * grow with the run.  It holds at most KP_LIVE_MAX; beyond, it lets go of
 * those seen least recently, down to half, and says so.
 */
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
