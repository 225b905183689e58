/*
 * kp-attribute: each zone's energy split into active and idle, the active
 * part shared by CPU time, in integer microjoules that add up exactly, and
 * the node, process, exited and unattributed records that say so.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attribute.h"

/* a * b / c in integers, without overflow; *rem gets what the floor left. */
static int64_t
muldiv(int64_t a, int64_t b, int64_t c, uint64_t *rem)
{
	unsigned __int128 n = (unsigned __int128)a * (unsigned __int128)b;

	if (rem)
		*rem = (uint64_t)(n % (unsigned __int128)c);
	return (int64_t)(n / (unsigned __int128)c);
}

/*
 * The idle part of a zone's energy: the rest after the active part by the
 * CPU usage ratio, or the baseline power over the interval, at most all.
 */
static int64_t
idle_part(const struct attr *a, const struct interval *iv, int zone,
    int64_t energy_uj, int64_t dt_us)
{
	double w = a->opt.baseline_default, idle;
	size_t i;

	if (a->opt.split_mode == SPLIT_BASELINE) {
		for (i = 0; i < a->opt.nbaseline; i++)
			if (strcmp(a->opt.baseline_zone[i],
			    a->zones.name[zone]) == 0)
				w = a->opt.baseline_watts[i];
		if (w < 0 || dt_us <= 0)
			return 0;
		idle = floor(w * (double)dt_us);
		return idle >= (double)energy_uj ? energy_uj : (int64_t)idle;
	}
	if (iv->has_total) {
		if (iv->total_cpu_us <= 0)
			return energy_uj;
		return energy_uj - muldiv(energy_uj, iv->cpu_us > iv->total_cpu_us ?
		    iv->total_cpu_us : iv->cpu_us, iv->total_cpu_us, NULL);
	}
	if (!(iv->ratio > 0))
		return energy_uj;
	return iv->ratio >= 1 ? 0 :
	    energy_uj - (int64_t)floor((double)energy_uj * iv->ratio);
}

static double
usage_ratio(const struct interval *iv)
{
	if (!iv->has_total)
		return iv->ratio;
	return kp_usage_ratio(iv->cpu_us, iv->total_cpu_us);
}

static int
by_remainder(const void *a, const void *b)
{
	const struct share *p = *(struct share *const *)a;
	const struct share *q = *(struct share *const *)b;

	if (p->rem != q->rem)
		return p->rem > q->rem ? -1 : 1;
	if (p->rank != q->rank)
		return p->rank < q->rank ? -1 : 1;
	if (p->pid != q->pid)
		return p->pid < q->pid ? -1 : 1;
	return (p->starttime > q->starttime) - (p->starttime < q->starttime);
}

/*
 * Splits uj over a->shares[0..n) by cpu_us into active_uj (or idle_uj);
 * a->shares[n-1] is the unattributed rest, which takes everything when no
 * share has a weight.  The floors leave fewer microjoules than a->shares: one
 * each goes to the largest remainders (largest remainder method), so the
 * a->shares add up to uj exactly.
 */
static void
split(int64_t uj, struct share *shares, size_t n, int idle,
    struct share **order)
{
	int64_t denom_us = 0, left_uj = uj, part;
	size_t i;

	for (i = 0; i < n; i++)
		denom_us += shares[i].cpu_us;
	for (i = 0; i < n; i++) {
		if (denom_us == 0)
			part = i + 1 < n ? 0 : uj;
		else
			part = muldiv(uj, shares[i].cpu_us, denom_us,
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

/*
 * Writes a record's zone, and its socket if it has one.  rapl-read
 * --per-socket gives each socket's counter its own energy record; its zone
 * is kept here as "zone/socket", so that each socket is split, totalled
 * and saved apart, and it is written back as the two members.
 */
static void
put_zone(struct attr *a, int z)
{
	const char *name = a->zones.name[z], *slash = strchr(name, '/');
	size_t len = slash ? (size_t)(slash - name) : strlen(name);

	kp_buf_add(&a->out, ",\"zone\":\"", 9);
	kp_buf_add(&a->out, name, len);
	kp_buf_add(&a->out, "\"", 1);
	if (slash)
		kp_buf_raw(&a->out, "socket", slash + 1, strlen(slash + 1));
}

static void
emit_node(struct attr *a, const struct interval *iv, const struct energy *e,
    int64_t seq, int64_t active_uj, int64_t idle_kept_uj, int64_t dt_us)
{
	int64_t idle_uj = e->energy_uj - active_uj;
	int z = e->zone;

	a->node_total[z].total_uj += e->energy_uj;
	a->node_total[z].active_total_uj += active_uj;
	a->node_total[z].idle_total_uj += idle_uj;
	kp_buf_rec(&a->out, "node", seq);
	put_zone(a, z);
	kp_buf_int(&a->out, "energy_uj", e->energy_uj);
	kp_buf_int(&a->out, "active_uj", active_uj);
	kp_buf_int(&a->out, "idle_uj", idle_uj);
	kp_buf_int(&a->out, "idle_kept_uj", idle_kept_uj);
	kp_buf_real(&a->out, "watts", kp_watts(e->energy_uj, dt_us));
	kp_buf_real(&a->out, "active_watts", kp_watts(active_uj, dt_us));
	kp_buf_real(&a->out, "idle_watts", kp_watts(idle_uj, dt_us));
	kp_buf_real(&a->out, "usage_ratio", usage_ratio(iv));
	if (iv->dense)
		kp_buf_bool(&a->out, "dense", 1);
	kp_buf_add(&a->out, iv->text.s + e->src_off, e->src_len);
	kp_buf_int(&a->out, "total_uj", a->node_total[z].total_uj);
	kp_buf_int(&a->out, "active_total_uj",
	    a->node_total[z].active_total_uj);
	kp_buf_int(&a->out, "idle_total_uj", a->node_total[z].idle_total_uj);
	kp_out_buf(&a->out);
}

/* The energy members of a share: energy_uj, and its parts when shared. */
static void
share_members(struct attr *a, const struct share *sh, int64_t dt_us)
{
	int64_t energy_uj = sh->active_uj + sh->idle_uj;

	kp_buf_int(&a->out, "cpu_us", sh->cpu_us);
	kp_buf_int(&a->out, "energy_uj", energy_uj);
	if (a->opt.idle_mode == IDLE_PROPORTIONAL) {
		kp_buf_int(&a->out, "active_uj", sh->active_uj);
		kp_buf_int(&a->out, "idle_uj", sh->idle_uj);
	}
	kp_buf_real(&a->out, "watts", kp_watts(energy_uj, dt_us));
}

static void
emit_process(struct attr *a, int64_t seq, int z, const char *id,
    size_t id_len, const struct share *sh, int64_t dt_us, int64_t total_uj)
{
	kp_buf_rec(&a->out, "process", seq);
	put_zone(a, z);
	kp_buf_add(&a->out, id, id_len);
	share_members(a, sh, dt_us);
	kp_buf_int(&a->out, "total_uj", total_uj);
	kp_out_buf(&a->out);
}

/*
 * Records whose CPU time passes the node's by no more than the clock
 * ticks' rounding allow (proc-cputime(1), Exit accounting) are not scaled
 * down: that excess is rounding, said in excess_cpu_us alone.  Beyond, it
 * is, and scaled_by names the cgroup that passed its counter the most.
 */
static void
put_excess(struct attr *a, const struct interval *iv, int64_t excess_us)
{
	int scaled = excess_us > kp_ticks_rounding_us(iv->nrounded);

	kp_buf_bool(&a->out, "scaled_down", scaled);
	if (excess_us > 0)
		kp_buf_int(&a->out, "excess_cpu_us", excess_us);
	if (scaled && iv->worst_len > 0)
		kp_buf_raw(&a->out, "scaled_by", iv->text.s + iv->worst_off,
		    iv->worst_len);
}

static void
emit_unattributed(struct attr *a, const struct interval *iv, int z,
    const struct share *sh, int64_t excess_us, int64_t seq, int64_t dt_us)
{
	a->unattributed_total[z] += sh->active_uj + sh->idle_uj;
	kp_buf_rec(&a->out, "unattributed", seq);
	put_zone(a, z);
	share_members(a, sh, dt_us);
	kp_buf_int(&a->out, "total_uj", a->unattributed_total[z]);
	put_excess(a, iv, excess_us);
	kp_out_buf(&a->out);
}

/*
 * The exited records of the interval in zone z, in the a->order they came,
 * each with its share: its own members, and the energy of the zone.
 */
static void
emit_exited(struct attr *a, struct interval *iv, int z, int64_t seq,
    const struct share *sh, int64_t dt_us)
{
	const struct exited *x;
	size_t i;

	for (i = 0; i < iv->nexited; i++) {
		x = &iv->exited[i];
		kp_buf_rec(&a->out, "exited", seq);
		put_zone(a, z);
		kp_buf_add(&a->out, kp_spool_get(&iv->ids, x->id_off, x->id_len),
		    x->id_len);
		share_members(a, &sh[i], dt_us);
		kp_out_buf(&a->out);
	}
}

static void
share_set(struct share *sh, int64_t cpu_us, enum share_rank rank,
    int64_t pid, int64_t starttime)
{
	memset(sh, 0, sizeof(*sh));
	sh->cpu_us = cpu_us;
	sh->rank = rank;
	sh->pid = pid;
	sh->starttime = starttime;
}

/*
 * The a->shares of a zone: one per process, then one per exited record, then
 * the unattributed one, whose index is returned; its weight is set by the
 * caller.
 */
static size_t
fill_shares(struct attr *a, const struct interval *iv)
{
	size_t i, k;

	for (i = 0; i < iv->nprocs; i++)
		share_set(&a->shares[i], iv->procs[i].cpu_us, RANK_PROCESS,
		    iv->procs[i].pid, iv->procs[i].starttime);
	for (k = 0; k < iv->nexited; k++, i++)
		share_set(&a->shares[i], iv->exited[k].cpu_us, RANK_EXITED, 0,
		    (int64_t)k);
	share_set(&a->shares[i], 0, RANK_UNATTRIBUTED, -1, 0);
	return i;
}

/* Over n zones; at most INT64_MAX, as each zone's total may be near it. */
int64_t
sum_uj(const int64_t *total_uj, size_t n)
{
	int64_t sum = 0;
	size_t z;

	for (z = 0; z < n; z++)
		if (__builtin_add_overflow(sum, total_uj[z], &sum))
			return INT64_MAX;
	return sum;
}

/* Terminated processes are reported unless their energy is below the bar. */
int
reportable(const struct attr *a, const struct workload *w)
{
	return w == NULL || sum_uj(w->total_uj, w->nzones) >=
	    a->opt.min_terminated_uj;
}

/* One zone of one interval: node, processes, exited, unattributed. */
void
attribute_zone(struct attr *a, struct interval *iv, const struct energy *e,
    int64_t seq, int64_t dt_us)
{
	size_t i, n = iv->nprocs, u;
	int64_t idle_uj, active_uj, procs_us = iv->procs_us, excess_us = 0;
	int64_t total_uj;
	struct workload *w;
	struct proc *p;
	size_t k;

	idle_uj = idle_part(a, iv, e->zone, e->energy_uj, dt_us);
	active_uj = e->energy_uj - idle_uj;
	u = fill_shares(a, iv);
	if (a->opt.denom_mode == DENOM_NODE) {
		if (iv->cpu_us >= procs_us)
			a->shares[u].cpu_us = iv->cpu_us - procs_us;
		else
			excess_us = procs_us - iv->cpu_us;
	}
	split(active_uj, a->shares, u + 1, 0, a->order);
	if (a->opt.idle_mode == IDLE_PROPORTIONAL)
		split(idle_uj, a->shares, u + 1, 1, a->order);
	if (a->opt.denom_mode == DENOM_PROCESSES && iv->cpu_us > procs_us)
		a->shares[u].cpu_us = iv->cpu_us - procs_us;	/* as told */

	emit_node(a, iv, e, seq, active_uj,
	    a->opt.idle_mode == IDLE_PROPORTIONAL ? 0 : idle_uj, dt_us);
	for (i = 0; i < n; i++) {
		p = &iv->procs[i];
		w = p->w;
		total_uj = w->total_uj[e->zone] += a->shares[i].active_uj +
		    a->shares[i].idle_uj;
		if (a->shares[i].cpu_us > 0 || iv->dense ||
		    (p->terminated && reportable(a, w)))
			emit_process(a, seq, e->zone, kp_spool_get(&iv->ids,
			    p->id_off, p->id_len), p->id_len, &a->shares[i],
			    dt_us, total_uj);
	}
	memset(&a->shares[u + 1], 0, sizeof(a->shares[u + 1]));
	for (k = 0; k < a->nended; k++)
		emit_process(a, seq, e->zone, a->ended[k].id,
		    a->ended[k].id_len, &a->shares[u + 1], dt_us,
		    a->ended[k].total_uj[e->zone]);
	emit_exited(a, iv, e->zone, seq, &a->shares[n], dt_us);
	emit_unattributed(a, iv, e->zone, &a->shares[u], excess_us, seq, dt_us);
}

/* Room for n shares: one per process and exited record, and two more. */
void
shares_reserve(struct attr *a, size_t n)
{
	if (a->nshares >= n)
		return;
	a->nshares = n;
	a->shares = kp_reallocarray(a->shares, a->nshares, sizeof(*a->shares));
	a->order = kp_reallocarray(a->order, a->nshares, sizeof(*a->order));
}
