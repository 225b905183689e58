/*
 * The CPU time of what ended between two scans, accounted for
 * (proc-cputime(1), "Exit accounting"): from the reaping parents' cutime
 * and cstime, the kernel's exit facts, and the cgroups' CPU counters,
 * folded into last slices and exited records.
 *
 * A parent's cutime + cstime grows by the whole CPU time of each child it
 * waits for, the child's own waited children included.  Less the totals
 * that its tracked children that ended had shown (utime + stime + cutime
 * + cstime at their last sight), what is left is the last slices of those
 * children and the CPU time of children never seen: its residue.  The
 * cgroup counters then bound that detail per cgroup, and give each cgroup
 * what nothing else explains.
 */
#include <stdlib.h>
#include <string.h>

#include "sampler.h"

/* The process with this pid that the previous scan saw, or NULL. */
static struct proc *
seen_before(const struct kp_sampler *s, pid_t pid)
{
	size_t i;

	for (i = proctable_first_with_pid(s, pid);
	    i < s->nlist && s->list[i]->stat.pid == pid; i++)
		if (s->list[i]->first_gen != s->gen)
			return s->list[i];
	return NULL;
}

/*
 * The nearest ancestor alive now, through parents that ended too: the one
 * whose cutime shows p's end, unless p was orphaned or reaped at once.
 * Bounded, since pids read at different times may form a loop.
 */
static struct proc *
reaper_of(const struct kp_sampler *s, struct proc *p)
{
	int hops;

	for (hops = 0; hops < 64; hops++) {
		if (p->stat.ppid <= 0 || p->stat.ppid == p->stat.pid ||
		    (p = seen_before(s, p->stat.ppid)) == NULL)
			return NULL;
		if (proctable_alive(s, p))
			return p;
	}
	return NULL;
}

/* An ended process's last-seen total falls to its reaper to subtract. */
static void
subtract_ended(const struct kp_sampler *s, struct proc *e)
{
	struct proc *a;

	if ((a = reaper_of(s, e)) == NULL)
		return;
	a->sub_us += kp_ticks_to_us(e->stat.cpu_ticks + e->stat.child_ticks);
	if (e->stat.ppid == a->stat.pid) {
		a->ndirect++;
		a->direct = e;
	}
	if (a->nsub++ == 0) {
		a->first_sub = e;
		return;
	}
	a->mixed_comm |= strcmp(a->first_sub->stat.comm, e->stat.comm) != 0;
	a->mixed_cg |= a->first_sub->cg != e->cg;
}

static int
involved(const struct proc *p)
{
	return p->growth_ticks > 0 || p->sub_us > 0;
}

static int
by_depth(const void *a, const void *b)
{
	const struct proc *p = *(struct proc *const *)a;
	const struct proc *q = *(struct proc *const *)b;

	if (p->depth != q->depth)
		return q->depth - p->depth;
	return proctable_by_pid(a, b);
}

/*
 * The processes alive now that reaped or should have, deepest first, so
 * that what one could not have reaped is passed up before its ancestors
 * are settled.  In s->reap, which grows with the list and is kept.
 */
static struct proc **
reapers(struct kp_sampler *s, size_t *n)
{
	struct proc **r, *p, *q;
	size_t i;

	if (s->nlist > s->reapcap) {
		s->reapcap = s->listcap;
		s->reap = kp_reallocarray(s->reap, s->reapcap, sizeof(*r));
	}
	r = s->reap;
	*n = 0;
	for (i = 0; i < s->nlist; i++) {
		if (!proctable_alive(s, p = s->list[i]) || !involved(p))
			continue;
		for (p->depth = 0, q = p; p->depth < 64 &&
		    (q = reaper_of(s, q)) != NULL; p->depth++)
			;
		r[(*n)++] = p;
	}
	if (*n > 1)
		qsort(r, *n, sizeof(*r), by_depth);
	return r;
}

/*
 * More ended below a than its cutime grew by, beyond the clock ticks lost
 * to rounding: some were not reaped by it (orphaned, or reaped at once as
 * when SIGCHLD is ignored), or not yet.  What exit facts gave is held for
 * the next pass: a child that ended before this sample may be reaped only
 * after it read a's line.  The rest goes up to the next ancestor that
 * reaped something, so that no subtree counts twice.
 */
static int64_t
hold_or_pass(struct kp_sampler *s, struct proc *a)
{
	int64_t slack_us = kp_ticks_to_us(2 * ((uint64_t)a->nsub + 1));
	int64_t growth_us = kp_ticks_to_us(a->growth_ticks);
	int64_t over_us = a->sub_us - growth_us;
	struct proc *q = a;

	if (over_us <= slack_us)
		return over_us < 0 ? -over_us : 0;
	a->carry_us = over_us < a->facts_us ? over_us : a->facts_us;
	over_us -= a->carry_us;
	while (over_us > 0 && (q = reaper_of(s, q)) != NULL)
		if (involved(q)) {
			q->sub_us += over_us;
			break;
		}
	return 0;
}

static void
append_detail(struct detail **v, size_t *n, size_t *cap,
    const struct detail *d)
{
	if (*n == *cap) {
		*cap = *cap * 2 + 64;
		*v = kp_reallocarray(*v, *cap, sizeof(**v));
	}
	(*v)[(*n)++] = *d;
}

static void
add_detail(struct kp_sampler *s, const struct detail *d)
{
	append_detail(&s->details, &s->ndetails, &s->detailcap, d);
}

/*
 * a's residue: the last slices of its one tracked child that ended and of
 * that child's tracked descendants that ended with it, given to the
 * child's terminated record; or else CPU time of children never seen (or
 * of several seen, whose slices cannot be told apart), under a's pid and,
 * for their command name and cgroup, those of the ended ones where they
 * agree, else a's own: a process never seen ran in its parent's cgroup
 * unless known otherwise.
 */
static void
residue_detail(struct kp_sampler *s, struct proc *a, int64_t cpu_us)
{
	struct detail d = { NULL, a->stat.pid, "", &a->id, a->cg, cpu_us, 0,
	    "parent", 0, 0 };
	struct proc *e = a->first_sub;

	if (a->ndirect == 1)
		d.proc = a->direct;
	snprintf(d.comm, sizeof(d.comm), "%s", a->nsub > 0 && !a->mixed_comm ?
	    e->stat.comm : a->stat.comm);
	if (a->nsub > 0 && !a->mixed_cg) {
		d.id = &e->id;
		d.cg = e->cg;
	}
	if (a->nexec > 0 && !a->mixed_exec && a->exec_cg != NULL &&
	    (a->nsub == 0 || (!a->mixed_cg && e->cg == a->exec_cg))) {
		d.cg = a->exec_cg;
		d.id = sampler_group_identity(s, d.cg);
	}
	add_detail(s, &d);
}

/* The reaping pass begins: what each reaper's ended children had shown. */
static void
reap_begin(struct kp_sampler *s)
{
	struct proc *p;
	size_t i;

	for (i = 0; i < s->nlist; i++) {
		p = s->list[i];
		p->sub_us = p->carry_us;
		p->facts_us = p->carry_us = 0;
		p->nsub = p->ndirect = p->nexec = 0;
		p->mixed_comm = p->mixed_cg = p->mixed_exec = 0;
		p->exec_uncounted = 0;
	}
	if (!(s->exits & KP_EXITS_PARENT))
		return;
	for (i = 0; i < s->nlist; i++)
		if (!proctable_alive(s, s->list[i]))
			subtract_ended(s, s->list[i]);
}

/*
 * Whether a's residue is its ended children's alone, each seen ending in
 * a cgroup of its own whose counter moved by a known amount, as a job's
 * read at its exit does: those counters hold what the residue would tell
 * again, and more exactly (proc-cputime(1), "Exit accounting").
 */
static int
counted_below(const struct proc *a)
{
	return a->nsub == 0 && a->nexec > 0 && a->mixed_exec &&
	    !a->exec_uncounted;
}

/* Once the exit facts are subtracted too: each reaper's residue. */
static void
reap(struct kp_sampler *s)
{
	struct proc **r;
	int64_t cpu_us;
	size_t i, n;

	r = reapers(s, &n);
	for (i = 0; i < n; i++)
		if ((cpu_us = hold_or_pass(s, r[i])) > 0 &&
		    !counted_below(r[i]))
			residue_detail(s, r[i], cpu_us);
}

/*
 * The kernel's exit facts (taskstats), those received before this scan
 * began: a tracked process that ended gets its last slice from its fact;
 * one still alive now (a zombie, or one that ended after the scan read
 * it) keeps its fact for the scan that finds it gone; a process never seen
 * is detail under its parent.  What facts give is subtracted from their
 * reaper's residue, so that no subtree counts twice.  Facts are short of
 * the truth by the exit's teardown and up to a tick: the residue and the
 * cgroup counters keep the rest.
 */
static int
forget_before(const struct kp_exit *e, int before, void *arg)
{
	(void)e;
	(void)arg;
	return before;
}

/* The process tracked with e's pid and start, or NULL. */
static struct proc *
tracked(const struct kp_sampler *s, const struct kp_exit *e)
{
	size_t i;

	for (i = proctable_first_with_pid(s, e->pid);
	    i < s->nlist && s->list[i]->stat.pid == e->pid; i++)
		if (kp_exit_same_start(e, s->list[i]->stat.starttime))
			return s->list[i];
	return NULL;
}

/* The tracked process with this pid alive now, else one that ended. */
static struct proc *
tracked_pid(const struct kp_sampler *s, pid_t pid)
{
	struct proc *p = NULL;
	size_t i;

	for (i = proctable_first_with_pid(s, pid);
	    i < s->nlist && s->list[i]->stat.pid == pid; i++)
		if (proctable_alive(s, p = s->list[i]))
			return p;
	return p;
}

/*
 * Who reaped e's process: through parents that ended, tracked or known
 * only by their own facts, the nearest ancestor alive, or NULL.  *named:
 * its nearest tracked ancestor, whose pid and cgroup it is folded under.
 */
static struct proc *
fact_reaper(const struct kp_sampler *s, const struct kp_exit *e,
    struct proc **named)
{
	struct proc *p;
	int hops;

	*named = NULL;
	for (hops = 0; hops < 64; hops++) {
		if (e->ppid <= 0 || e->ppid == e->pid)
			return NULL;
		if ((p = tracked_pid(s, e->ppid)) != NULL) {
			*named = p;
			return proctable_alive(s, p) ? p : reaper_of(s, p);
		}
		if ((e = kp_exits_find(s->facts, e->ppid)) == NULL)
			return NULL;
	}
	return NULL;
}

static int64_t
fact_us(const struct kp_exit *e)
{
	return (int64_t)(e->cpu_ns / 1000);
}

/* A fact's CPU time, for its reaper to take out of its cutime's growth. */
static void
facts_to(struct proc *a, int64_t cpu_us)
{
	a->sub_us += cpu_us;
	a->facts_us += cpu_us;
}

/*
 * A tracked process whose fact names it otherwise than its last sight
 * did: it exec'd since, as rapl-read's command does after a scan saw it
 * between its fork and its exec.  Its end is named from the fact, and
 * placed in the cgroup it exec'd in where the process events tell
 * (proc-cputime(1), "Exit accounting").
 */
static void
exec_since_seen(struct kp_sampler *s, struct proc *p, const struct kp_exit *e)
{
	struct kp_cgnode *own;

	if (strcmp(p->stat.comm, e->comm) == 0)
		return;
	sampler_exec_name(p, e->comm);
	if (e->cgroup != NULL && s->cg != NULL &&
	    (own = kp_cgcpu_node(s->cg, e->cgroup)) != NULL && own != p->cg) {
		p->cg = own;
		p->id = *sampler_group_identity(s, own);
	}
}

/* A tracked process that ended: its fact less what its records showed. */
static void
fact_slice(struct kp_sampler *s, struct proc *p, const struct kp_exit *e)
{
	int64_t seen_us = kp_ticks_to_us(p->stat.cpu_ticks);
	struct detail d = { p, p->stat.ppid, "", &p->id, p->cg, 0, 0,
	    "taskstats", 0, 0 };
	struct proc *a;

	exec_since_seen(s, p, e);
	p->fact_taken = 1;
	d.id = &p->id;
	d.cg = p->cg;
	d.cpu_us = fact_us(e) > seen_us ? fact_us(e) - seen_us : 0;
	add_detail(s, &d);
	if ((a = reaper_of(s, p)) != NULL)
		facts_to(a, d.cpu_us);
}

/*
 * rapl-read's command, ended without an exit fact: its last slice is the
 * CPU time its command record gives it at its end (wait4's, its waited
 * children's included) less what its records showed, taken out of its
 * reaper's residue as a fact's is, so that it does not hang on rapl-read,
 * its reaper, still running at this sample (rapl-read(1), "Measuring a
 * command").
 */
static void
record_slices(struct kp_sampler *s)
{
	struct detail d = { NULL, 0, "", NULL, NULL, 0, 0, "parent", 0, 0 };
	struct proc *p, *a;
	int64_t seen_us;
	size_t i;

	for (i = 0; i < s->nlist; i++) {
		p = s->list[i];
		if (!p->has_exit_us || p->fact_taken || proctable_alive(s, p))
			continue;
		seen_us = kp_ticks_to_us(p->stat.cpu_ticks +
		    p->stat.child_ticks);
		d.proc = p;
		d.ppid = p->stat.ppid;
		d.id = &p->id;
		d.cg = p->cg;
		d.cpu_us = p->exit_us > seen_us ? p->exit_us - seen_us : 0;
		add_detail(s, &d);
		if ((a = reaper_of(s, p)) != NULL)
			facts_to(a, d.cpu_us);
	}
}

/*
 * The identity of cgroup n's records that no process of theirs names: a
 * live process's of n where there is one (a VM's uuid from its command
 * line holds), else n's path's with names filled (proc-cputime(1),
 * "Identity fields").
 */
const struct kp_identity *
sampler_group_identity(struct kp_sampler *s, struct kp_cgnode *n)
{
	if (n->live_gen == s->gen && n->live_id != NULL)
		return n->live_id;
	if (!n->named)
		n->named = kp_names_fill(s->names, &n->id) == 0;
	return &n->id;
}

/*
 * Each cgroup with a process alive now knows one of them; not a kernel
 * thread, whose identity is none of its cgroup's.
 */
static void
find_live(struct kp_sampler *s)
{
	struct proc *p;
	size_t i;

	for (i = 0; i < s->nlist; i++) {
		p = s->list[i];
		if (p->cg != NULL && proctable_alive(s, p) &&
		    strcmp(p->id.kind, "kernel") != 0) {
			p->cg->live_id = &p->id;
			p->cg->live_gen = s->gen;
		}
	}
}

/*
 * A process never seen: one exit under its parent, in the cgroup the
 * process events say it ran in, else its parent's.
 */
static void
fact_unseen(struct kp_sampler *s, const struct kp_exit *e)
{
	struct detail d = { NULL, e->ppid, "", &s->unknown, NULL, fact_us(e),
	    1, "taskstats", 0, 0 };
	struct proc *named, *a = fact_reaper(s, e, &named);
	struct kp_cgnode *own = NULL;

	snprintf(d.comm, sizeof(d.comm), "%s", e->comm);
	if (named != NULL) {
		d.ppid = named->stat.pid;
		d.id = &named->id;
		d.cg = named->cg;
	}
	if (e->cgroup != NULL && s->cg != NULL &&
	    (own = kp_cgcpu_node(s->cg, e->cgroup)) != NULL &&
	    own != d.cg) {
		d.cg = own;
		d.id = sampler_group_identity(s, own);
	}
	if (a != NULL)
		facts_to(a, d.cpu_us);
	add_detail(s, &d);
}

static int
take_fact(const struct kp_exit *e, int before, void *arg)
{
	struct kp_sampler *s = arg;
	struct proc *p = tracked(s, e);

	if (p != NULL && proctable_alive(s, p))
		return 0;
	if (p != NULL)
		fact_slice(s, p, e);
	else if (before)
		fact_unseen(s, e);
	return p != NULL || before;
}

/*
 * A child that ended unseen, as the process events tell: its reaper, a
 * process alive now, learns the cgroup it ran in, so that its residue goes
 * there where all such children agree (proc-cputime(1), "Exit
 * accounting"): events are heard where taskstats is refused, without
 * privilege since Linux 6.6.  A process seen has its own cgroup already.
 */
static void
ended_unseen(pid_t pid, pid_t ppid, const char *cgroup, void *arg)
{
	struct kp_sampler *s = arg;
	struct kp_cgnode *n = NULL;
	struct proc *a;
	size_t i = proctable_first_with_pid(s, pid);

	if ((i < s->nlist && s->list[i]->stat.pid == pid) || ppid <= 0 ||
	    (a = tracked_pid(s, ppid)) == NULL || !proctable_alive(s, a))
		return;
	if (cgroup != NULL)
		n = kp_cgcpu_node(s->cg, cgroup);
	if (a->nexec++ == 0)
		a->exec_cg = n;
	else
		a->mixed_exec |= a->exec_cg != n;
	a->exec_uncounted |= n == NULL || !n->have_delta;
}

/* Whether p's proc record charges its cgroup: alive, with ticks. */
static int
ticked(const struct kp_sampler *s, const struct proc *p)
{
	return proctable_alive(s, p) && p->cg != NULL && p->delta_ticks > 0;
}

/*
 * What each process's records and each detail give its cgroup; then each
 * proc record's share of what the counter leaves them.
 */
static void
charge_cgroups(struct kp_sampler *s)
{
	size_t i;

	for (i = 0; i < s->nlist; i++)
		if (ticked(s, s->list[i]))
			kp_cgcpu_charge(s->list[i]->cg, s->list[i]->record_us,
			    0);
	for (i = 0; i < s->ndetails; i++)
		if (s->details[i].proc != NULL)
			kp_cgcpu_charge(s->details[i].cg,
			    s->details[i].cpu_us, 0);
		else if (s->details[i].held)
			kp_cgcpu_charge_held(s->details[i].cg,
			    s->details[i].cpu_us);
		else
			kp_cgcpu_charge(s->details[i].cg, 0,
			    s->details[i].cpu_us);
	kp_cgcpu_settle(s->cg);
	for (i = 0; i < s->nlist; i++)
		if (ticked(s, s->list[i]))
			s->list[i]->record_us = kp_cgcpu_take_procs(
			    s->list[i]->cg, s->list[i]->record_us);
}

static int
by_fold(const void *a, const void *b)
{
	const struct detail *d = a, *e = b;
	int c;

	if (d->ppid != e->ppid)
		return d->ppid < e->ppid ? -1 : 1;
	if ((c = strcmp(d->comm, e->comm)) != 0)
		return c;
	if ((c = strcmp(d->id->cgroup, e->id->cgroup)) != 0)
		return c;
	return strcmp(d->source, e->source);
}

/*
 * A part of d that its counter cut, to be written elsewhere: as a detail
 * of no process, under d's parent and command name, counting no exit.
 */
static struct detail
cut_of(const struct detail *d, int64_t cut_us)
{
	struct detail c = *d;

	if (d->proc != NULL)
		snprintf(c.comm, sizeof(c.comm), "%s", d->proc->stat.comm);
	c.proc = NULL;
	c.cpu_us = cut_us;
	c.count = 0;
	return c;
}

/*
 * What a busy cgroup's counter cut of a detail is offered once more, the
 * next interval (proc-cputime(1), "Exit accounting"): folded as the
 * detail was, but in its cgroup's identity, as the cgroup's residue is,
 * since that is all a state file keeps of it across runs.
 */
static void
hold_cut(struct kp_sampler *s, const struct detail *d, int64_t cut_us)
{
	struct detail h = cut_of(d, cut_us);

	h.id = &d->cg->id;
	h.held = 1;
	append_detail(&s->held, &s->nheld, &s->heldcap, &h);
}

/*
 * What d's counter cut is taken first from the same interval's leftovers
 * of its cgroup's ancestors, nearest first, each part an exited record
 * under that ancestor (proc-cputime(1), "Exit accounting"): a process
 * filed under a cgroup below the one it ran in shows there.  Only what
 * none holds is held for the next interval, and is excess.
 */
static void
pass_cut(struct kp_sampler *s, const struct detail *d, int64_t cut_us)
{
	struct detail up = cut_of(d, 0);
	struct kp_cgnode *a = d->cg;

	up.above = 1;
	while (cut_us > 0 && (a = kp_cgcpu_above(a)) != NULL) {
		if ((up.cpu_us = kp_cgcpu_take_cut(a, cut_us)) == 0)
			continue;
		cut_us -= up.cpu_us;
		up.cg = a;
		up.id = sampler_group_identity(s, a);
		add_detail(s, &up);
	}
	if (cut_us > 0) {
		kp_cgcpu_add_excess(d->cg, cut_us);
		hold_cut(s, d, cut_us);
	}
}

/* What the counter leaves d; what it cuts of a new detail goes on. */
static int64_t
counter_share(struct kp_sampler *s, const struct detail *d)
{
	int64_t got_us;

	if (d->above)
		return d->cpu_us;
	if (d->proc != NULL)	/* a last slice, given as records are */
		return kp_cgcpu_take_procs(d->cg, d->cpu_us);
	if (d->held)
		return kp_cgcpu_take_held(d->cg, d->cpu_us);
	got_us = kp_cgcpu_take(d->cg, d->cpu_us);
	if (got_us < d->cpu_us && d->cg != NULL)
		pass_cut(s, d, d->cpu_us - got_us);
	return got_us;
}

/*
 * Each detail as much as its cgroup's counter leaves it, and the parts
 * its ancestors take, appended as it goes; a last slice to its process's
 * terminated record; the rest folded by parent, command name, cgroup and
 * source, in that order.
 */
static void
settle_details(struct kp_sampler *s)
{
	struct detail d, *last;
	size_t i, n = 0;

	for (i = 0; i < s->ndetails; i++) {
		d = s->details[i];
		if (s->cg != NULL)
			d.cpu_us = counter_share(s, &d);
		if (d.proc != NULL)
			d.proc->slice_us += d.cpu_us;
		else if (d.cpu_us > 0 || d.count > 0)
			s->details[n++] = d;
	}
	if (n > 1)
		qsort(s->details, n, sizeof(*s->details), by_fold);
	s->ndetails = 0;
	for (i = 0; i < n; i++) {
		last = s->ndetails > 0 ? &s->details[s->ndetails - 1] : NULL;
		if (last != NULL && by_fold(last, &s->details[i]) == 0) {
			last->cpu_us += s->details[i].cpu_us;
			last->count += s->details[i].count;
		} else
			s->details[s->ndetails++] = s->details[i];
	}
}

/* The cgroups to read: those of the processes seen now or just ended. */
static void
read_cgroups(struct kp_sampler *s)
{
	size_t i;

	for (i = 0; i < s->nlist; i++)
		if (s->list[i]->cg != NULL)
			kp_cgcpu_want(s->cg, s->list[i]->cg);
	for (i = 0; i < s->nheld; i++)
		kp_cgcpu_want(s->cg, s->held[i].cg);
	kp_cgcpu_read(s->cg);
}

/* The detail held from the interval before joins this one's, once. */
static void
offer_held(struct kp_sampler *s)
{
	size_t i;

	for (i = 0; i < s->nheld; i++)
		add_detail(s, &s->held[i]);
	s->nheld = 0;
}

/* The interval's detail and residues, once a scan has ended one. */
void
sampler_account_exits(struct kp_sampler *s)
{
	s->ndetails = 0;
	if (s->cg != NULL) {
		read_cgroups(s);
		find_live(s);
	}
	if (s->scans < 2) {
		kp_exits_each(s->facts, forget_before, NULL);
		s->nheld = 0;
		return;
	}
	reap_begin(s);
	kp_exits_each(s->facts, take_fact, s);
	if (s->cg != NULL)
		kp_exits_each_ended(s->facts, ended_unseen, s);
	if (s->exits & KP_EXITS_PARENT) {
		record_slices(s);
		reap(s);
	}
	offer_held(s);
	if (s->cg != NULL)
		charge_cgroups(s);
	settle_details(s);
}

/*
 * The held detail, for the state file:
 * [[cgroup, ppid, comm, source, cpu_us], ...].
 */
json_t *
sampler_save_held(const struct kp_sampler *s)
{
	const struct detail *h;
	json_t *rows = json_array();
	size_t i;

	for (i = 0; i < s->nheld; i++) {
		h = &s->held[i];
		json_array_append_new(rows, json_pack("[o,I,o,s,I]",
		    kp_json_text(h->cg->path), (json_int_t)h->ppid,
		    kp_json_text(h->comm), h->source, (json_int_t)h->cpu_us));
	}
	return rows;
}

/* A saved row as sampler_save_held writes it; 0, or -1 if it is not one. */
static int
load_held_row(struct kp_sampler *s, json_t *row, struct detail *h)
{
	const char *path, *comm, *source;
	json_int_t ppid, cpu_us;

	if (json_unpack(row, "[sIssI]", &path, &ppid, &comm, &source,
	    &cpu_us) < 0 || ppid < 0 || ppid > INT_MAX || cpu_us <= 0 ||
	    strlen(comm) >= sizeof(h->comm) ||
	    (h->cg = kp_cgcpu_node_at(s->cg, path)) == NULL || !h->cg->counted)
		return -1;
	if (strcmp(source, "parent") == 0)
		h->source = "parent";
	else if (strcmp(source, "taskstats") == 0)
		h->source = "taskstats";
	else
		return -1;
	h->ppid = (pid_t)ppid;
	snprintf(h->comm, sizeof(h->comm), "%s", comm);
	h->id = &h->cg->id;
	h->cpu_us = cpu_us;
	h->held = 1;
	return 0;
}

/* The held detail of a saved scan; bad rows are skipped. */
void
sampler_load_held(struct kp_sampler *s, json_t *rows)
{
	struct detail h;
	json_t *row;
	size_t i;

	s->nheld = 0;
	json_array_foreach(rows, i, row) {
		memset(&h, 0, sizeof(h));
		if (load_held_row(s, row, &h) == 0)
			append_detail(&s->held, &s->nheld, &s->heldcap, &h);
	}
}
