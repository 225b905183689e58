/*
 * kp-attribute: each zone's energy split into active and idle, the active
 * part shared by CPU time, in integer microjoules that add up exactly, and
 * the node, process, exited and unattributed records that say so.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attribute.h"

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
	if (iv->has_total)
		return energy_uj - kp_active_uj(energy_uj, iv->cpu_us,
		    iv->total_cpu_us);
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

/*
 * Writes a record's zone, and its socket or device if it has one.
 * rapl-read --per-socket gives each socket's counter its own energy
 * record, and each GPU has its own; the zone is kept here as "zone/socket"
 * or "gpu/device" (kp_zone_key), so that each is split, totalled and saved
 * apart, and it is written back as the members.  A GPU's uuid follows.
 */
static void
put_zone(struct attr *a, const struct interval *iv, const struct energy *e)
{
	kp_buf_zone(&a->out, a->zones.name[e->zone]);
	if (e->uuid_len > 0)
		kp_buf_raw(&a->out, "uuid", iv->text.s + e->uuid_off,
		    e->uuid_len);
}

static void
emit_node(struct attr *a, const struct interval *iv, const struct energy *e,
    int64_t seq, int64_t active_uj, int64_t idle_kept_uj, int64_t dt_us,
    double ratio)
{
	int64_t idle_uj = e->energy_uj - active_uj;
	int z = e->zone;

	a->node_total[z].total_uj += e->energy_uj;
	a->node_total[z].active_total_uj += active_uj;
	a->node_total[z].idle_total_uj += idle_uj;
	kp_buf_rec(&a->out, "node", seq);
	put_zone(a, iv, e);
	/* The GPU's model once, in its node record, as in its energy record:
	 * the records drawn from it are named by device and uuid alone. */
	if (e->name_len > 0)
		kp_buf_raw(&a->out, "name", iv->text.s + e->name_off,
		    e->name_len);
	kp_buf_int(&a->out, "energy_uj", e->energy_uj);
	kp_buf_int(&a->out, "active_uj", active_uj);
	kp_buf_int(&a->out, "idle_uj", idle_uj);
	kp_buf_int(&a->out, "idle_kept_uj", idle_kept_uj);
	kp_buf_real(&a->out, "watts", kp_watts(e->energy_uj, dt_us));
	kp_buf_real(&a->out, "active_watts", kp_watts(active_uj, dt_us));
	kp_buf_real(&a->out, "idle_watts", kp_watts(idle_uj, dt_us));
	kp_buf_real(&a->out, "usage_ratio", ratio);
	if (iv->dense)
		kp_buf_bool(&a->out, "dense", 1);
	kp_buf_add(&a->out, iv->text.s + e->src_off, e->src_len);
	kp_buf_int(&a->out, "total_uj", a->node_total[z].total_uj);
	kp_buf_int(&a->out, "active_total_uj",
	    a->node_total[z].active_total_uj);
	kp_buf_int(&a->out, "idle_total_uj", a->node_total[z].idle_total_uj);
	kp_out_buf(&a->out);
}

/*
 * The energy members of a share: its weight, CPU or a GPU's time,
 * energy_uj, and its parts when shared.
 */
static void
share_members(struct attr *a, const struct energy *e, const struct kp_share *sh,
    int64_t dt_us)
{
	int64_t energy_uj = sh->active_uj + sh->idle_uj;

	kp_buf_zone_us(&a->out, a->zones.name[e->zone], sh->cpu_us);
	kp_buf_int(&a->out, "energy_uj", energy_uj);
	if (a->opt.idle_mode == IDLE_PROPORTIONAL) {
		kp_buf_int(&a->out, "active_uj", sh->active_uj);
		kp_buf_int(&a->out, "idle_uj", sh->idle_uj);
	}
	kp_buf_real(&a->out, "watts", kp_watts(energy_uj, dt_us));
}

static void
emit_process(struct attr *a, const struct interval *iv,
    const struct energy *e, int64_t seq, const char *id, size_t id_len,
    const struct kp_share *sh, int64_t dt_us, int64_t total_uj)
{
	kp_buf_rec(&a->out, "process", seq);
	put_zone(a, iv, e);
	kp_buf_add(&a->out, id, id_len);
	share_members(a, e, sh, dt_us);
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
	int scaled = excess_us > (a->gpu_zone ? 0 :
	    kp_ticks_rounding_us(iv->nrounded));

	kp_buf_bool(&a->out, "scaled_down", scaled);
	if (excess_us > 0)
		kp_buf_int(&a->out, a->gpu_zone ? "excess_gpu_us" :
		    "excess_cpu_us", excess_us);
	if (a->gpu_zone)
		return;
	if (scaled && iv->worst_len > 0)
		kp_buf_raw(&a->out, "scaled_by", iv->text.s + iv->worst_off,
		    iv->worst_len);
}

static void
emit_unattributed(struct attr *a, const struct interval *iv,
    const struct energy *e, const struct kp_share *sh, int64_t excess_us,
    int64_t seq, int64_t dt_us)
{
	int z = e->zone;

	a->unattributed_total[z] += sh->active_uj + sh->idle_uj;
	kp_buf_rec(&a->out, "unattributed", seq);
	put_zone(a, iv, e);
	share_members(a, e, sh, dt_us);
	kp_buf_int(&a->out, "total_uj", a->unattributed_total[z]);
	put_excess(a, iv, excess_us);
	kp_out_buf(&a->out);
}

/*
 * The exited records of the interval in zone z, in the a->order they came,
 * each with its share: its own members, and the energy of the zone.
 */
static void
emit_exited(struct attr *a, struct interval *iv, const struct energy *e,
    int64_t seq, const struct kp_share *sh, int64_t dt_us)
{
	const struct exited *x;
	size_t i;

	for (i = 0; i < iv->nexited; i++) {
		x = &iv->exited[i];
		kp_buf_rec(&a->out, "exited", seq);
		put_zone(a, iv, e);
		kp_buf_add(&a->out, kp_spool_get(&iv->ids, x->id_off, x->id_len),
		    x->id_len);
		share_members(a, e, &sh[i], dt_us);
		kp_out_buf(&a->out);
	}
}

static void
share_set(struct kp_share *sh, int64_t cpu_us, enum kp_share_rank rank,
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
		share_set(&a->shares[i], iv->procs[i].cpu_us, KP_RANK_PROCESS,
		    iv->procs[i].pid, iv->procs[i].starttime);
	for (k = 0; k < iv->nexited; k++, i++)
		share_set(&a->shares[i], iv->exited[k].cpu_us, KP_RANK_EXITED, 0,
		    (int64_t)k);
	share_set(&a->shares[i], 0, KP_RANK_UNATTRIBUTED, -1, 0);
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

/*
 * Whether a process's record is written in a zone: with a share of it, in
 * a dense stream, or terminated, to say so.  A GPU's zone has the records
 * of the processes that used it: with GPU time, or a total on it.
 */
static int
written(const struct attr *a, const struct interval *iv, const struct proc *p,
    const struct kp_share *sh, int64_t total_uj)
{
	if (sh->cpu_us > 0)
		return 1;
	if (a->gpu_zone && total_uj == 0)
		return 0;
	return iv->dense || (p->terminated && reportable(a, p->w));
}

/*
 * The records of a zone split into a->shares, u the unattributed one: the
 * node's, each process's, the ended processes', the exited records' and
 * the unattributed.
 */
static void
emit_zone(struct attr *a, struct interval *iv, const struct energy *e,
    int64_t seq, int64_t dt_us, size_t u, int64_t excess_us)
{
	int64_t total_uj;
	struct proc *p;
	size_t i, k;

	for (i = 0; i < iv->nprocs; i++) {
		p = &iv->procs[i];
		total_uj = p->w->total_uj[e->zone] += a->shares[i].active_uj +
		    a->shares[i].idle_uj;
		if (written(a, iv, p, &a->shares[i], total_uj))
			emit_process(a, iv, e, seq, kp_spool_get(&iv->ids,
			    p->id_off, p->id_len), p->id_len, &a->shares[i],
			    dt_us, total_uj);
	}
	memset(&a->shares[u + 1], 0, sizeof(a->shares[u + 1]));
	for (k = 0; k < a->nended; k++)
		if (!a->gpu_zone || a->ended[k].total_uj[e->zone] > 0)
			emit_process(a, iv, e, seq, a->ended[k].id,
			    a->ended[k].id_len, &a->shares[u + 1], dt_us,
			    a->ended[k].total_uj[e->zone]);
	if (!a->gpu_zone)
		emit_exited(a, iv, e, seq, &a->shares[iv->nprocs], dt_us);
	emit_unattributed(a, iv, e, &a->shares[u], excess_us, seq, dt_us);
}

/* One CPU zone of one interval: node, processes, exited, unattributed. */
void
attribute_zone(struct attr *a, struct interval *iv, const struct energy *e,
    int64_t seq, int64_t dt_us)
{
	int64_t idle_uj, active_uj, procs_us = iv->procs_us, excess_us = 0;
	size_t u;

	if ((a->gpu_zone = kp_zone_is_gpu(a->zones.name[e->zone])) != 0) {
		attribute_gpu(a, iv, e, seq, dt_us);
		return;
	}
	idle_uj = idle_part(a, iv, e->zone, e->energy_uj, dt_us);
	active_uj = e->energy_uj - idle_uj;
	u = fill_shares(a, iv);
	if (a->opt.denom_mode == DENOM_NODE) {
		if (iv->cpu_us >= procs_us)
			a->shares[u].cpu_us = iv->cpu_us - procs_us;
		else
			excess_us = procs_us - iv->cpu_us;
	}
	kp_split_uj(active_uj, a->shares, u + 1, 0, a->order);
	if (a->opt.idle_mode == IDLE_PROPORTIONAL)
		kp_split_uj(idle_uj, a->shares, u + 1, 1, a->order);
	if (a->opt.denom_mode == DENOM_PROCESSES && iv->cpu_us > procs_us)
		a->shares[u].cpu_us = iv->cpu_us - procs_us;	/* as told */

	emit_node(a, iv, e, seq, active_uj,
	    a->opt.idle_mode == IDLE_PROPORTIONAL ? 0 : idle_uj, dt_us,
	    usage_ratio(iv));
	emit_zone(a, iv, e, seq, dt_us, u, excess_us);
}

/* The GPU time on device of a gpu_us kept in the interval's text; or -1. */
static int64_t
gpu_us_of(const struct interval *iv, size_t off, size_t len,
    const char *device)
{
	return len == 0 ? -1 : kp_device_us(iv->text.s + off, len, device);
}

/*
 * The a->shares of a GPU: each process's weight is its GPU time on the
 * device, an exited record's none (it carries no GPU time); returns the
 * unattributed share's index, its weight left to the caller, and the
 * processes' sum in *procs_us.
 */
static size_t
fill_gpu_shares(struct attr *a, const struct interval *iv, const char *device,
    int64_t *procs_us)
{
	size_t i, u = fill_shares(a, iv);
	int64_t us;

	*procs_us = 0;
	for (i = 0; i < u; i++)
		a->shares[i].cpu_us = 0;
	for (i = 0; i < iv->nprocs; i++)
		if ((us = gpu_us_of(iv, iv->procs[i].gpu_off,
		    iv->procs[i].gpu_len, device)) > 0) {
			a->shares[i].cpu_us = us;
			*procs_us += us;	/* within 2^60: gpu_adds */
		}
	return u;
}

/*
 * A GPU's energy is all idle when the node's GPU time on it is unknown: a
 * cpu record without it, as from a proc-cputime that reads no GPU (said
 * once).
 */
static void
no_gpu_time(struct attr *a, const char *device, int64_t seq)
{
	if (a->told_no_gpu_us)
		return;
	a->told_no_gpu_us = 1;
	kp_warn_line(a->input_name, 0, "interval %lld: no cpu record gives "
	    "the GPU time of device '%s': its energy is all idle (see "
	    "kp-attribute(1), GPU zones)", (long long)seq, device);
}

/*
 * One GPU's zone of one interval (kp-attribute(1), GPU zones): its energy
 * is active in the share of the interval that the device was busy, the
 * node's gpu_us capped at the interval, rounded as a CPU zone's; the
 * active part is shared by the processes' GPU time on the device, what
 * none of them carries of the node's being unattributed.
 */
void
attribute_gpu(struct attr *a, struct interval *iv, const struct energy *e,
    int64_t seq, int64_t dt_us)
{
	const char *slash = strchr(a->zones.name[e->zone], '/');
	const char *device = slash != NULL ? slash + 1 : "";
	int64_t node_us, busy_us, active_uj, procs_us, excess_us = 0;
	size_t u;

	if ((node_us = gpu_us_of(iv, iv->gpu_off, iv->gpu_len, device)) < 0) {
		no_gpu_time(a, device, seq);
		node_us = 0;
	}
	busy_us = node_us < dt_us ? node_us : dt_us;
	active_uj = kp_active_uj(e->energy_uj, node_us, dt_us);
	u = fill_gpu_shares(a, iv, device, &procs_us);
	if (node_us >= procs_us)
		a->shares[u].cpu_us = node_us - procs_us;
	else
		excess_us = procs_us - node_us;
	kp_split_uj(active_uj, a->shares, u + 1, 0, a->order);
	if (a->opt.idle_mode == IDLE_PROPORTIONAL)
		kp_split_uj(e->energy_uj - active_uj, a->shares, u + 1, 1, a->order);
	emit_node(a, iv, e, seq, active_uj,
	    a->opt.idle_mode == IDLE_PROPORTIONAL ? 0 :
	    e->energy_uj - active_uj, dt_us, kp_usage_ratio(busy_us, dt_us));
	emit_zone(a, iv, e, seq, dt_us, u, excess_us);
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
