/*
 * No interval's records pass the node's CPU time where it need not
 * (proc-cputime(1), "Exit accounting"): the cpu record counts every task,
 * and records beyond it dilute every workload's share of the energy, as
 * kp-attribute(1) shares it over the larger of the two.  Records pass it
 * by what ran outside the interval: an exit fact or a cgroup's counter
 * read after the node's line holds time it does not, and a tracked
 * process's end gives at once the part of a tick its stat files had not
 * shown in the intervals before.  A process's stat files cannot be cut;
 * the interval's new detail and cgroup residues can, each in proportion
 * to its size, and what is cut is written in the next interval, whatever
 * that one's node time, so that nothing is lost and each cgroup's records
 * still add up to its counter over a run.
 */
#include "sampler.h"

struct fit {
	struct kp_sampler *s;
	int64_t records_us;	/* the interval's, every record's */
	int64_t movable_us;	/* of them, what may move */
	int64_t cut_us;		/* what moves */
	int64_t taken_us;	/* of movable_us, the parts visited */
};

/* New detail of a counted cgroup: moved late ones are not moved again. */
static int
movable(const struct detail *d)
{
	return !d->late && d->cg != NULL && d->cpu_us > 0;
}

static void
sum_residue(struct kp_cgnode *n, void *arg)
{
	struct fit *f = arg;

	if (n->have_delta && n->residue_us > 0) {
		f->records_us += n->residue_us;
		f->movable_us += n->residue_us;
	}
}

static void
sum_records(struct fit *f)
{
	struct kp_sampler *s = f->s;
	size_t i;

	for (i = 0; i < s->nlist; i++)
		if (proctable_alive(s, s->list[i]))
			f->records_us += kp_ticks_to_us(s->list[i]->delta_ticks);
	for (i = 0; i < s->ndetails; i++) {
		f->records_us += s->details[i].cpu_us;
		if (movable(&s->details[i]))
			f->movable_us += s->details[i].cpu_us;
	}
	kp_cgcpu_each(s->cg, sum_residue, f);
}

/* us of the movable time: its part of the cut, held for the next interval. */
static int64_t
move(struct fit *f, const struct detail *d, int64_t us)
{
	struct detail late;
	int64_t cut_us = kp_cgcpu_part_us(&f->taken_us, f->cut_us,
	    f->movable_us, us);

	if (cut_us > 0) {
		late = sampler_cut_of(d, cut_us);
		late.held = late.above = 0;
		late.late = 1;
		sampler_append_detail(&f->s->held, &f->s->nheld,
		    &f->s->heldcap, &late);
	}
	return cut_us;
}

static void
move_residue(struct kp_cgnode *n, void *arg)
{
	struct detail d = { NULL, 0, "", &n->id, n, 0, 0, "cgroup", 0, 0, 0 };

	if (n->have_delta && n->residue_us > 0)
		n->residue_us -= move(arg, &d, n->residue_us);
}

/*
 * The interval's records pass the node's time: the new detail and
 * residues give up that much, at most all they have, to the next interval.
 */
void
sampler_fit_node(struct kp_sampler *s)
{
	struct fit f = { s, 0, 0, 0, 0 };
	struct detail *d;
	size_t i;

	sum_records(&f);
	f.cut_us = f.records_us - sampler_node_cpu_us(s);
	if (f.cut_us <= 0 || f.movable_us == 0)
		return;
	if (f.cut_us > f.movable_us)
		f.cut_us = f.movable_us;
	for (i = 0; i < s->ndetails; i++) {
		d = &s->details[i];
		if (movable(d))
			d->cpu_us -= move(&f, d, d->cpu_us);
	}
	kp_cgcpu_each(s->cg, move_residue, &f);
}
