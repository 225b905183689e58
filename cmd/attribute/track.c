/*
 * kp-attribute: each process's totals, the processes that ended, and the
 * end of an interval.
 */
#include <err.h>
#include <stdlib.h>
#include <string.h>

#include "attribute.h"

struct workload *
workload(int64_t pid, int64_t starttime, int create)
{
	char key[KP_PROC_KEY_MAX];
	struct workload *w;

	kp_proc_key(key, sizeof(key), pid, starttime);
	if ((w = kp_map_get(workloads, key)) == NULL && create) {
		w = kp_calloc(1, sizeof(*w));
		kp_map_put(workloads, key, w);
	}
	return w;
}

static void
forget(int64_t pid, int64_t starttime)
{
	char key[KP_PROC_KEY_MAX];

	kp_proc_key(key, sizeof(key), pid, starttime);
	free(kp_map_remove(workloads, key));
}

/* Over all zones; at most INT64_MAX, as each zone's total may be near it. */
static int64_t
sum_total(const struct workload *w)
{
	int64_t sum = 0;
	size_t z;

	for (z = 0; z < zones.n; z++)
		if (__builtin_add_overflow(sum, w->total_uj[z], &sum))
			return INT64_MAX;
	return sum;
}

/* Terminated processes are reported unless their energy is below the bar. */
int
reportable(const struct workload *w)
{
	return w == NULL || sum_total(w) >= opt.min_terminated_uj;
}

/*
 * A terminated process waits to be reported in the next interval with
 * energy.  When the tracker is full, the one with the least energy goes
 * unreported: the smallest held one makes room, unless it is the new one.
 */
static void
track_ended(const struct proc *p, const struct workload *w, const char *text)
{
	size_t j, min = 0;
	struct ended *e;

	if ((size_t)opt.max_terminated == nended) {
		for (j = 1; j < nended; j++)
			if (sum_total(&ended[j].w) < sum_total(&ended[min].w))
				min = j;
		if (sum_total(w) <= sum_total(&ended[min].w))
			return;
		free(ended[min].id);
		ended[min] = ended[--nended];
	}
	ended = kp_reallocarray(ended, nended + 1, sizeof(*ended));
	e = &ended[nended++];
	e->w = *w;
	e->id_len = p->id_len;
	e->id = kp_strndup(text + p->id_off, p->id_len);
}

/* Processes that ended in this interval have had their last share. */
static void
retire(struct interval *iv, int attributed)
{
	struct workload *w;
	struct proc *p;
	size_t i;

	if (attributed) {
		for (i = 0; i < nended; i++)
			free(ended[i].id);
		nended = 0;
	}
	for (i = 0; i < iv->nprocs; i++) {
		p = &iv->procs[i];
		if (!p->terminated)
			continue;
		w = workload(p->pid, p->starttime, 0);
		if (!attributed && w != NULL && reportable(w) &&
		    opt.max_terminated > 0)
			track_ended(p, w, iv->text.s);
		forget(p->pid, p->starttime);
	}
}

static int
seen_before(void *val, void *arg)
{
	return ((struct workload *)val)->last_seq < *(const int64_t *)arg;
}

static void
last_seq_of(const char *key, void *val, void *arg)
{
	int64_t **p = arg;

	(void)key;
	*(*p)++ = ((struct workload *)val)->last_seq;
}

/*
 * D2: after a dense interval, the processes it had no record of have
 * ended; a sparse stream that never says so holds at most KP_LIVE_MAX.
 */
static void
let_go(int dense, int64_t seq)
{
	static int told;
	size_t n = kp_map_count(workloads);
	int64_t *seqs, *p, cut = seq;

	if (!dense && n <= KP_LIVE_MAX)
		return;
	if (!dense) {
		p = seqs = kp_reallocarray(NULL, n, sizeof(*seqs));
		kp_map_each(workloads, last_seq_of, &p);
		cut = kp_live_cut(seqs, n, KP_LIVE_MAX / 2);
		free(seqs);
		if (!told++)
			warnx("%zu processes without an end, more than %d: "
			    "those seen least recently are forgotten, and "
			    "their totals start again if they come back", n,
			    KP_LIVE_MAX);
	}
	kp_map_sweep(workloads, seen_before, &cut, free);
}

/*
 * Interval seq ends: without upstream CPU records, sample /proc now, so
 * that rapl-read | kp-attribute works; without energy there is nothing to
 * attribute, and the CPU records pass on as they came.
 */
void
end_interval(struct kp_reader *r, struct interval *iv,
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
		iv->nprocs = iv->nexited = 0;
		iv->procs_us = 0;
		hold_sampled(iv, s, rec->seq);
	}
	if (iv->nenergy == 0)
		pass_lines(&iv->lines);
	shares_reserve(iv->nprocs + iv->nexited + 2);
	if (iv->nenergy > 0)
		for (i = 0; i < iv->nprocs; i++) {
			iv->procs[i].w = workload(iv->procs[i].pid,
			    iv->procs[i].starttime, 1);
			iv->procs[i].w->last_seq = rec->seq;
		}
	for (i = 0; i < iv->nenergy; i++)
		attribute_zone(iv, &iv->energy[i], rec->seq, dt_us);
	retire(iv, iv->nenergy > 0);
	if (iv->nenergy > 0)
		let_go(iv->dense, rec->seq);
	kp_out_raw(rec->line, rec->len);
	kp_out_flush();
	interval_clear(iv);
}
