/*
 * rapl-read -- CMD's command record, read by the stages that scan /proc:
 * the command's name and cgroup for the process that a scan saw only
 * before it exec'd, or never saw (rapl-read(1), "Measuring a command").
 * The record comes before the interval record of the interval the command
 * ended in, so the scan that ends that interval accounts for it named and
 * placed right.
 */
#include <stdlib.h>
#include <string.h>

#include "sampler.h"

/* The record's process: its pid, parent, start, name and cgroup. */
static int
command_stat(const struct kp_record *rec, struct kp_pid_stat *ps,
    const char **cgroup)
{
	int64_t pid, ppid, starttime;
	const char *comm = kp_rec_str(rec, "comm");

	if (!kp_rec_int(rec, "pid", &pid) || !kp_rec_int(rec, "ppid", &ppid) ||
	    !kp_rec_int(rec, "starttime", &starttime) || comm == NULL ||
	    pid <= 0 || starttime <= 0)
		return -1;	/* kp-records 1.1's, or one /proc did not tell */
	memset(ps, 0, sizeof(*ps));
	ps->pid = (pid_t)pid;
	ps->ppid = (pid_t)ppid;
	ps->starttime = (uint64_t)starttime;
	snprintf(ps->comm, sizeof(ps->comm), "%s", comm);
	*cgroup = kp_rec_str(rec, "cgroup");
	return 0;
}

/*
 * p is named comm after its last sight: it exec'd since, and its exe, read
 * before, is not its own.
 */
void
sampler_exec_name(struct proc *p, const char *comm)
{
	if (strcmp(p->stat.comm, comm) == 0)
		return;
	free(p->exe);
	p->exe = NULL;
	snprintf(p->stat.comm, sizeof(p->stat.comm), "%s", comm);
}

/*
 * p is the command: its name, and its cgroup where rapl-read made one,
 * with that cgroup's counter at the command's exit, for a read that finds
 * it removed.
 */
static void
name_command(struct kp_sampler *s, struct proc *p,
    const struct kp_pid_stat *ps, const char *cgroup, int64_t final_us)
{
	sampler_exec_name(p, ps->comm);
	if (cgroup == NULL)
		return;
	kp_identity_from_path(cgroup, &p->id);
	if (s->cg != NULL)
		p->cg = kp_cgcpu_node_at(s->cg, cgroup);
	if (p->cg != NULL && final_us >= 0)
		kp_cgcpu_final(p->cg, final_us);
	p->names_pending = kp_names_fill(s->names, &p->id);
	kp_identity_classify(&p->id, 0);
	p->have_identity = 1;
}

/*
 * A command no scan saw, placed where its parent, rapl-read, is until its
 * record names a cgroup of its own.
 */
static struct proc *
unseen_command(struct kp_sampler *s, const struct kp_pid_stat *ps)
{
	struct proc *p = proctable_add(s, ps), *parent;
	size_t i = proctable_first_with_pid(s, ps->ppid);

	p->gen = p->first_gen = s->gen;
	parent = i < s->nlist && s->list[i]->stat.pid == ps->ppid ?
	    s->list[i] : NULL;
	if (parent != NULL) {
		p->id = parent->id;
		p->cg = parent->cg;
	} else
		p->id = s->unknown;
	p->have_identity = 1;
	return p;
}

/*
 * The command of a command record read since the latest scan.  One that
 * scan saw is renamed and placed; one no scan saw was born after the
 * latest and ended before the next, so it is followed from no CPU time,
 * as if that scan had seen it at its start: its reaper's cutime holds it
 * all, and the next scan gives it its last slice.
 */
void
kp_sampler_command(struct kp_sampler *s, const struct kp_record *rec)
{
	struct kp_pid_stat ps;
	struct proc *p;
	const char *cgroup;
	int64_t final_us;
	int seen;

	if (s->scans == 0 || command_stat(rec, &ps, &cgroup) < 0)
		return;
	if (!kp_rec_int(rec, "cgroup_cpu_us", &final_us))
		final_us = -1;
	if (!(seen = (p = proctable_find(s, ps.pid, ps.starttime)) != NULL))
		p = unseen_command(s, &ps);
	name_command(s, p, &ps, cgroup, final_us);
	/*
	 * Its CPU time at its end, for its last slice, unless the latest scan
	 * found it ended already, or it was born before that scan, which
	 * then may have had its end in its reaper's cutime.
	 */
	if (kp_rec_int(rec, "command_cpu_us", &p->exit_us) &&
	    proctable_alive(s, p) &&
	    (seen || ps.starttime >= s->uptime_ticks))
		p->has_exit_us = 1;
}
