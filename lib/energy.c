/*
 * Arithmetic on energy and CPU time that every stage does alike, so that a
 * watt or a usage ratio is one figure whichever stage prints it.
 */
#include <stdlib.h>

#include "kp.h"

/* The mean power of an interval: microjoules per microsecond are watts. */
double
kp_watts(int64_t energy_uj, int64_t dt_us)
{
	return dt_us > 0 ? (double)energy_uj / (double)dt_us : 0;
}

/*
 * The share of whole that part is, in [0, 1]: the one rule for a usage
 * ratio, whose parts may come from counters sampled at different times.
 */
double
kp_usage_ratio(int64_t part, int64_t whole)
{
	if (whole <= 0 || part <= 0)
		return 0;
	if (part >= whole)
		return 1;
	return (double)part / (double)whole;
}

/* a * b / c in integers, without overflow; *rem gets what the floor left. */
int64_t
kp_muldiv(int64_t a, int64_t b, int64_t c, uint64_t *rem)
{
	unsigned __int128 n = (unsigned __int128)a * (unsigned __int128)b;

	if (rem)
		*rem = (uint64_t)(n % (unsigned __int128)c);
	return (int64_t)(n / (unsigned __int128)c);
}

/*
 * The active part of a zone's energy by the node's CPU time: energy_uj
 * times the usage ratio cpu_us / total_cpu_us, at most all of it, in
 * integers; none when the interval had no CPU time.
 */
int64_t
kp_active_uj(int64_t energy_uj, int64_t cpu_us, int64_t total_cpu_us)
{
	if (total_cpu_us <= 0)
		return 0;
	return kp_muldiv(energy_uj, cpu_us > total_cpu_us ? total_cpu_us :
	    cpu_us, total_cpu_us, NULL);
}

static int
by_remainder(const void *a, const void *b)
{
	const struct kp_share *p = *(struct kp_share *const *)a;
	const struct kp_share *q = *(struct kp_share *const *)b;

	if (p->rem != q->rem)
		return p->rem > q->rem ? -1 : 1;
	if (p->rank != q->rank)
		return p->rank < q->rank ? -1 : 1;
	if (p->pid != q->pid)
		return p->pid < q->pid ? -1 : 1;
	return (p->starttime > q->starttime) - (p->starttime < q->starttime);
}

/*
 * Splits uj over shares[0..n) by cpu_us into active_uj (or idle_uj);
 * shares[n-1] is the unattributed rest, which takes everything when no
 * share has a weight.  The floors leave fewer microjoules than shares: one
 * each goes to the largest remainders (largest remainder method), so the
 * shares add up to uj exactly.  order: room for n pointers.
 */
void
kp_split_uj(int64_t uj, struct kp_share *shares, size_t n, int idle,
    struct kp_share **order)
{
	int64_t denom_us = 0, left_uj = uj, part;
	size_t i;

	for (i = 0; i < n; i++)
		denom_us += shares[i].cpu_us;
	for (i = 0; i < n; i++) {
		if (denom_us == 0)
			part = i + 1 < n ? 0 : uj;
		else
			part = kp_muldiv(uj, shares[i].cpu_us, denom_us,
			    &shares[i].rem);
		*(idle ? &shares[i].idle_uj : &shares[i].active_uj) = part;
		left_uj -= part;
		order[i] = &shares[i];
	}
	if (left_uj == 0)
		return;
	qsort(order, n, sizeof(*order), by_remainder);
	for (i = 0; i < n && left_uj > 0; i++, left_uj--)
		(*(idle ? &order[i]->idle_uj : &order[i]->active_uj))++;
}
