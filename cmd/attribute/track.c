/*
 * kp-attribute: each process's totals, the processes that ended, and the
 * end of an interval.
 */
#include <err.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "attribute.h"

/*
 * A run with nothing seen yet, its options set: sparse, the workloads
 * that never end are held up to a bound (kp-attribute(1), End of stream).
 */
void
attr_init(struct attr *a)
{
	memset(&a->zones, 0, sizeof(a->zones));
	a->zones.socket_keys = 1;
	memset(a->node_total, 0, sizeof(a->node_total));
	memset(a->unattributed_total, 0, sizeof(a->unattributed_total));
	a->workloads = kp_map_new();
	memset(&a->live, 0, sizeof(a->live));
	a->live.map = a->workloads;
	a->live.seq_off = offsetof(struct workload, last_seq);
	a->live.free_val = free;
	a->live.fate = "those seen least recently are forgotten, and their "
	    "totals start again if they come back";
	a->ended = NULL;
	a->nended = 0;
	memset(&a->out, 0, sizeof(a->out));
	a->shares = NULL;
	a->order = NULL;
	a->nshares = 0;
}

void
attr_free(struct attr *a)
{
	size_t i;

	kp_map_free(a->workloads, free);
	for (i = 0; i < a->nended; i++)
		free(a->ended[i].id);
	free(a->ended);
	free(a->out.s);
	free(a->shares);
	free(a->order);
}

/* Everything a run left, forgotten, its options kept: a new run. */
void
attr_reset(struct attr *a)
{
	attr_free(a);
	attr_init(a);
}

/*
 * Process pid, starttime's totals; create: made if it has none, with room
 * for every zone the run has now.
 */
struct workload *
workload(struct attr *a, int64_t pid, int64_t starttime, int create)
{
	char key[KP_PROC_KEY_MAX];
	struct workload *w;
	size_t n = a->zones.n;

	kp_proc_key(key, sizeof(key), pid, starttime);
	w = kp_map_get(a->workloads, key);
	if (!create || (w != NULL && w->nzones >= n))
		return w;
	if (w == NULL) {
		w = kp_malloc(sizeof(*w));
		w->last_seq = 0;
		w->nzones = 0;
	}
	w = kp_reallocarray(w, 1, sizeof(*w) + n * sizeof(w->total_uj[0]));
	memset(&w->total_uj[w->nzones], 0, (n - w->nzones) *
	    sizeof(w->total_uj[0]));
	w->nzones = n;
	kp_map_put(a->workloads, key, w);
	return w;
}

/* w's totals into total_uj, KP_ZONES_MAX of them. */
void
workload_totals(const struct workload *w, int64_t *total_uj)
{
	memset(total_uj, 0, KP_ZONES_MAX * sizeof(*total_uj));
	memcpy(total_uj, w->total_uj, w->nzones * sizeof(*total_uj));
}

static void
forget(struct attr *a, int64_t pid, int64_t starttime)
{
	char key[KP_PROC_KEY_MAX];

	kp_proc_key(key, sizeof(key), pid, starttime);
	free(kp_map_remove(a->workloads, key));
}

/*
 * A terminated process waits to be reported in the next interval with
 * energy.  When the tracker is full, the one with the least energy goes
 * unreported: the smallest held one makes room, unless it is the new one.
 */
static void
track_ended(struct attr *a, const struct proc *p, const struct workload *w,
    struct kp_spool *ids)
{
	struct ended *ended = a->ended;
	size_t j, min = 0;
	struct ended *e;

	if ((size_t)a->opt.max_terminated == a->nended) {
		for (j = 1; j < a->nended; j++)
			if (sum_uj(ended[j].total_uj, KP_ZONES_MAX) <
			    sum_uj(ended[min].total_uj, KP_ZONES_MAX))
				min = j;
		if (sum_uj(w->total_uj, w->nzones) <=
		    sum_uj(ended[min].total_uj, KP_ZONES_MAX))
			return;
		free(ended[min].id);
		ended[min] = ended[--a->nended];
	}
	ended = a->ended = kp_reallocarray(ended, a->nended + 1,
	    sizeof(*ended));
	e = &ended[a->nended++];
	workload_totals(w, e->total_uj);
	e->id_len = p->id_len;
	e->id = kp_strndup(kp_spool_get(ids, p->id_off, p->id_len), p->id_len);
}

/* Processes that ended in this interval have had their last share. */
static void
retire(struct attr *a, struct interval *iv, int attributed)
{
	struct workload *w;
	struct proc *p;
	size_t i;

	if (attributed) {
		for (i = 0; i < a->nended; i++)
			free(a->ended[i].id);
		a->nended = 0;
	}
	for (i = 0; i < iv->nprocs; i++) {
		p = &iv->procs[i];
		if (!p->terminated)
			continue;
		w = workload(a, p->pid, p->starttime, 0);
		if (!attributed && w != NULL && reportable(a, w) &&
		    a->opt.max_terminated > 0)
			track_ended(a, p, w, &iv->ids);
		forget(a, p->pid, p->starttime);
	}
}

/*
 * The totals of the interval's processes: those held are seen first, so
 * that making room for the others, where a sparse stream holds its most
 * (kp-attribute(1), End of stream), lets none of them go.
 */
static void
hold_workloads(struct attr *a, struct interval *iv,
    const struct kp_record *rec)
{
	struct proc *p;
	size_t i;

	for (i = 0; i < iv->nprocs; i++) {
		p = &iv->procs[i];
		if ((p->w = workload(a, p->pid, p->starttime, 0)) != NULL)
			p->w->last_seq = rec->seq;
	}
	for (i = 0; i < iv->nprocs; i++) {
		p = &iv->procs[i];
		if (p->w == NULL && workload(a, p->pid, p->starttime, 0) == NULL)
			kp_live_admit(&a->live, iv->dense, rec->seq,
			    a->input_name, rec->lineno);
		p->w = workload(a, p->pid, p->starttime, 1);
		p->w->last_seq = rec->seq;
	}
}

/*
 * Interval seq ends: without upstream CPU records, sample /proc now, so
 * that rapl-read | kp-attribute works; without energy there is nothing to
 * attribute, and the CPU records pass on as they came.
 */
void
end_interval(struct attr *a, struct kp_reader *r, struct interval *iv,
    const struct kp_record *rec, struct kp_sampler *s)
{
	int64_t dt_us = 0;
	size_t i;

	kp_rec_int(rec, "dt_us", &dt_us);
	if (!iv->has_cpu) {
		if (iv->nenergy > 0 && iv->nprocs + iv->nexited > 0)
			pass_unsampled(r, iv, rec->seq);
		if (iv->nenergy > 0)
			check_live(r, rec, dt_us);
		if (kp_sampler_scan(s) < 0)
			errx(KP_EXIT_FAILURE, "%s", kp_sampler_error(s));
		drop_records(iv);
		hold_sampled(a, iv, s, rec->seq);
	}
	if (iv->nenergy == 0)
		pass_lines(&iv->lines);
	shares_reserve(a, iv->nprocs + iv->nexited + 2);
	if (iv->nenergy > 0)
		hold_workloads(a, iv, rec);
	for (i = 0; i < iv->nenergy; i++)
		attribute_zone(a, iv, &iv->energy[i], rec->seq, dt_us);
	retire(a, iv, iv->nenergy > 0);
	if (iv->nenergy > 0)
		kp_live_sweep(&a->live, iv->dense, rec->seq);
	kp_out_raw(rec->line, rec->len);
	kp_out_flush();
	interval_clear(iv);
}
