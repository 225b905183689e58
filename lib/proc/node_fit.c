/*
 * No interval's records pass the node's CPU time where it need not
 * (proc-cputime(1), "Exit accounting"): where the cpu record counts every
 * task from the cpuacct root's counter, records beyond it dilute every
 * workload's share of the energy, as kp-attribute(1) shares it over the
 * larger of the two.  They pass it by what the cgroups' counters, read
 * after the node's line, hold beyond it; the detail does not, as each
 * process it tells of ended before the line, and proc records are cut to
 * their counters already.  The residues of the counters read anew give up
 * the difference, each in proportion to its size, and what they give up
 * is written in the next interval, whatever that one's node time, so that
 * each cgroup's records still add up to its counter over a run: time that
 * ran after a run's last line is no interval's, as it would be anyway.
 * Where the node's time is /proc/stat's clock ticks, which a partly idle
 * CPU undercounts, nothing is moved.
 */
#include "sampler.h"

struct fit {
	struct kp_sampler *s;
	int64_t records_us;	/* the interval's, every record's */
	int64_t movable_us;	/* of them, what may move: the residues */
	int64_t cut_us;		/* what moves */
	int64_t taken_us;	/* of movable_us, the parts visited */
};

static void
sum_residue(struct kp_cgnode *n, void *arg)
{
	struct fit *f = arg;

	if (!n->have_delta || n->residue_us <= 0)
		return;
	f->records_us += n->residue_us;
	if (!n->final_read)	/* read anew, after the node's line */
		f->movable_us += n->residue_us;
}

static void
sum_records(struct fit *f)
{
	struct kp_sampler *s = f->s;
	size_t i;

	for (i = 0; i < s->nlist; i++)
		if (proctable_alive(s, s->list[i]))
			f->records_us += s->list[i]->record_us;
	for (i = 0; i < s->ndetails; i++)
		f->records_us += s->details[i].cpu_us;
	kp_cgcpu_each(s->cg, sum_residue, f);
}

/* A residue's part of the cut, in moved_us, for the next interval. */
static void
move_residue(struct kp_cgnode *n, void *arg)
{
	struct fit *f = arg;

	if (!n->have_delta || n->residue_us <= 0 || n->final_read)
		return;
	n->moved_us = kp_cgcpu_part_us(&f->taken_us, f->cut_us,
	    f->movable_us, n->residue_us);
	n->residue_us -= n->moved_us;
}

/*
 * The interval's records pass the node's time: the residues of counters
 * read anew give up that much, at most all they have, each part in its
 * cgroup's moved_us for the next interval.
 */
void
sampler_fit_node(struct kp_sampler *s)
{
	struct fit f = { s, 0, 0, 0, 0 };
	int64_t tasks_us;

	if (!sampler_node_counted(s, &tasks_us))
		return;		/* ticks: a partly idle CPU counts less */
	sum_records(&f);
	f.cut_us = f.records_us - sampler_node_cpu_us(s);
	if (f.cut_us <= 0 || f.movable_us == 0)
		return;
	if (f.cut_us > f.movable_us)
		f.cut_us = f.movable_us;
	kp_cgcpu_each(s->cg, move_residue, &f);
}
