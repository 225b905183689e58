/*
 * CPU time between two scans of /proc: the node's from /proc/stat, each
 * process's from /proc/PID/stat, keyed by (pid, starttime) so that a reused
 * pid is a new process.
 */
#include <sys/resource.h>
#include <sys/vfs.h>

#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampler.h"
struct kp_sampler *
kp_sampler_new(const char *procdir, int emit_all)
{
	struct kp_sampler *s;

	s = kp_calloc(1, sizeof(*s));
	s->procdir = kp_strdup(procdir);
	s->emit_all = emit_all;
	s->procfs = -1;
	kp_identity_classify(&s->unknown, 0);
	return s;
}

/* Where GPU time comes from (kp_gpu_open), or NULL; the sampler's to free. */
void
kp_sampler_set_gpu(struct kp_sampler *s, struct kp_gpu *g)
{
	kp_gpu_free(s->gpu);
	s->gpu = g;
}

/* Where the names of containers, pods and VMs come from; NULL: nowhere. */
void
kp_sampler_set_names(struct kp_sampler *s, struct kp_names *names)
{
	s->names = names;
}

/* Counters that went backwards (a CPU taken offline) count as no time. */
static uint64_t
delta(uint64_t now, uint64_t before)
{
	return now > before ? now - before : 0;
}

#define PF_KTHREAD 0x00200000	/* include/linux/sched.h */

/*
 * The kernel's own flag, not pid 2 or its children: in a pid namespace
 * pid 2 is an ordinary process of the container.
 */
static int
kernel_thread(const struct kp_pid_stat *ps)
{
	return (ps->flags & PF_KTHREAD) != 0;
}

/*
 * Read at first sight, and again when the process's comm changes
 * (renamed): its executable changes only by an execve, which keeps its
 * pid and starttime and renames it, and a process is moved to another
 * cgroup mostly just before it execs, as rapl-read -- CMD and systemd do
 * (proc-cputime(1), "Identity").  The command line matters only to
 * hypervisors, so it is read only for those that kp_identity_wants_cmdline
 * names.  Names that are not there yet are asked for again at each scan
 * (names.c looks again only once their sources change).
 */
static void
read_identity(struct kp_sampler *s, int procfd, struct proc *p)
{
	char path[64], buf[8192];
	int n;

	snprintf(path, sizeof(path), "%ld/cgroup", (long)p->stat.pid);
	if (kp_read_proc(procfd, path, buf, sizeof(buf)) < 0)
		buf[0] = '\0';
	kp_identity_from_cgroup_file(buf, &p->id);
	free(p->exe);
	p->exe = kp_read_exe(procfd, p->stat.pid);
	if (s->cg != NULL)
		p->cg = kp_cgcpu_node(s->cg, buf);
	if (kp_identity_wants_cmdline(p->stat.comm, &p->id)) {
		snprintf(path, sizeof(path), "%ld/cmdline", (long)p->stat.pid);
		if ((n = kp_read_proc(procfd, path, buf, sizeof(buf))) > 0)
			kp_identity_from_cmdline(buf, (size_t)n, &p->id);
	}
	p->names_pending = kp_names_fill(s->names, &p->id);
	kp_identity_classify(&p->id, kernel_thread(&p->stat));
	p->have_identity = 1;
}

/*
 * A stat that is no kernel's (a bad pid, a sign, a counter beyond reason)
 * is left out rather than turned into a wrong time; told once, so that a
 * tree of them does not flood standard error every interval.
 */
static void
warn_malformed(struct kp_sampler *s, const char *name)
{
	if (s->warned_malformed)
		return;
	warnx("%s/%s/stat: malformed, process skipped", s->procdir, name);
	s->warned_malformed = 1;
}

/* The process of the previous scan with this pid whose stat is kept open. */
static struct proc *
kept_open(const struct kp_sampler *s, const char *name)
{
	size_t i;
	long pid = strtol(name, NULL, 10);

	for (i = proctable_first_with_pid(s, (pid_t)pid);
	    i < s->nlist && s->list[i]->stat.pid == pid; i++)
		if (s->list[i]->fd >= 0)
			return s->list[i];
	return NULL;
}

/*
 * Process name's stat: read afresh from its descriptor kept open since an
 * earlier scan, one system call, else opened now.  *fd: the descriptor,
 * for sample_pid to keep or close.  Returns as kp_read_pid_stat.
 */
static int
read_stat(struct kp_sampler *s, int procfd, const char *name,
    struct kp_pid_stat *ps, int *fd)
{
	struct proc *p;
	int rc;

	if ((p = kept_open(s, name)) != NULL) {
		if (kp_pread_pid_stat(p->fd, ps) == 0 &&
		    ps->starttime == p->stat.starttime) {
			*fd = p->fd;
			return 0;
		}
		/* gone (ESRCH), its pid maybe reused */
		proctable_close_stat(s, p);
	}
	if ((*fd = kp_open_pid_stat(procfd, name)) < 0)
		return -1;
	if ((rc = kp_pread_pid_stat(*fd, ps)) != 0) {
		close(*fd);
		*fd = -1;
	}
	return rc;
}

/*
 * Keeps p's stat open, up to the cap, on a real procfs only: a file of a
 * fixture tree replaced by another (mv) would still read as it was.
 */
static void
keep_stat(struct kp_sampler *s, struct proc *p, int fd)
{
	if (fd < 0 || fd == p->fd)
		return;
	if (p->fd < 0 && s->procfs == 1 && s->nopen < s->keep_open) {
		p->fd = fd;
		s->nopen++;
	} else
		close(fd);
}

/* p, seen by this scan's pass over the stat files, for its identity pass. */
static void
seen_add(struct kp_sampler *s, struct proc *p)
{
	if (s->nseen == s->seencap) {
		s->seencap = s->seencap * 2 + 256;
		s->seen = kp_reallocarray(s->seen, s->seencap,
		    sizeof(*s->seen));
	}
	s->seen[s->nseen++] = p;
}

/*
 * A process first seen now is charged all its CPU time only if it started
 * after the previous scan; otherwise that time was spent before we looked,
 * and this sight is only its baseline.  Both times are in whole clock
 * ticks: one that started in the tick of the previous scan and that scan
 * did not see started after it, or was missed by it; either way its time
 * is counted nowhere else.  Its stat alone: who it is comes later.
 */
static void
sample_pid(struct kp_sampler *s, int procfd, const char *name)
{
	struct kp_pid_stat ps;
	struct proc *p;
	int born, fd;

	switch (read_stat(s, procfd, name, &ps, &fd)) {
	case 0:
		break;
	case -2:
		warn_malformed(s, name);
		return;
	default:
		return;		/* gone between listing and reading */
	}
	if ((p = proctable_find(s, ps.pid, ps.starttime)) != NULL) {
		p->delta_ticks = delta(ps.cpu_ticks, p->stat.cpu_ticks);
		p->growth_ticks = delta(ps.child_ticks, p->stat.child_ticks);
		if (strcmp(ps.comm, p->stat.comm) != 0)
			p->have_identity = 0;	/* it has exec'd */
		p->stat = ps;
	} else {
		p = proctable_add(s, &ps);
		p->first_gen = s->gen;
		born = s->scans > 0 && ps.starttime >= s->prev_uptime_ticks;
		p->delta_ticks = born ? ps.cpu_ticks : 0;
		p->growth_ticks = born ? ps.child_ticks : 0;
	}
	p->record_us = kp_ticks_to_us(p->delta_ticks);
	keep_stat(s, p, fd);
	p->gen = s->gen;
	seen_add(s, p);
}

/*
 * The pass over every process's stat, nothing else between two reads, so
 * that the CPU times of one scan are read as close together as the kernel
 * lets them be (proc-cputime(1), "Records").
 */
static void
sample_pids(struct kp_sampler *s, DIR *dir)
{
	struct dirent *de;

	s->nseen = 0;
	while ((de = readdir(dir)) != NULL)
		if (de->d_name[0] >= '1' && de->d_name[0] <= '9')
			sample_pid(s, dirfd(dir), de->d_name);
}

/*
 * Who the processes of the pass are, once their CPU figures, the node's
 * and the counters' are all read: the cgroup file, executable and names
 * of each process new or renamed, and its GPU time, in the pass's order.
 */
static void
identify_pids(struct kp_sampler *s, int procfd)
{
	struct proc *p;
	size_t i;

	kp_names_tick(s->names);
	if (s->gpu != NULL)
		kp_gpu_begin(s->gpu);
	for (i = 0; i < s->nseen; i++) {
		p = s->seen[i];
		if (s->gpu != NULL && !kernel_thread(&p->stat))
			kp_gpu_scan_pid(s->gpu, procfd, p->stat.pid);
		if (!p->have_identity)
			read_identity(s, procfd, p);
		else if (p->names_pending)
			p->names_pending = kp_names_fill(s->names, &p->id);
	}
	if (s->gpu != NULL)
		kp_gpu_end(s->gpu, kp_ticks_to_us(delta(s->uptime_ticks,
		    s->prev_uptime_ticks)));
}

#define PROC_SUPER_MAGIC 0x9fa0	/* linux/magic.h */

static int
is_procfs(int fd)
{
	struct statfs sf;

	return fstatfs(fd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC;
}

/*
 * A scan that could not read file (NULL: the directory itself): why, for
 * kp_sampler_error, naming the file; -1.  EINVAL is a file that is there
 * but holds something else, told as bad.
 */
static int
failed(struct kp_sampler *s, const char *file, const char *bad)
{
	int saved = errno;

	snprintf(s->why, sizeof(s->why), "%s%s%s: %s", s->procdir,
	    file ? "/" : "", file ? file : "",
	    saved == EINVAL && bad ? bad : strerror(saved));
	errno = saved;
	return -1;
}

/* What the last scan that failed could not read, and why. */
const char *
kp_sampler_error(const struct kp_sampler *s)
{
	return s->why;
}

/*
 * The node's CPU time, read right after the processes' stat files, just
 * before the cgroup counters: an interval's records, which the counters'
 * residues fill up to them, then end where the cpu record ends.  Read
 * before the pass, or after the identities of new processes, the node's
 * figure would end apart from the processes', and records that pass it
 * dilute every workload's share of the energy (proc-cputime(1),
 * "Records").
 */
static int
read_node_cpu(struct kp_sampler *s)
{
	struct kp_cpu_times now;

	if (kp_read_cpu_times(s->procdir, &now) < 0)
		return failed(s, "stat", "no cpu line as the kernel writes it");
	s->prev_cpu = s->cpu;
	s->cpu = now;
	return 0;
}

/*
 * The stat files, the node's line and the counters of the cgroups known,
 * one after another; then the exit facts and process events that came
 * meanwhile, and who the new processes are, whose cgroups' counters are
 * read last (sampler_account_exits).
 */
static int
scan(struct kp_sampler *s, DIR *dir)
{
	sample_pids(s, dir);
	if (read_node_cpu(s) < 0)
		return -1;
	if (s->cg != NULL)
		kp_cgcpu_read_known(s->cg);
	kp_exits_drain(s->facts);
	identify_pids(s, dirfd(dir));
	return 0;
}

int
kp_sampler_scan(struct kp_sampler *s)
{
	DIR *dir;
	int rc;

	proctable_drop_ended(s);
	kp_exits_drain(s->facts);
	kp_exits_cut(s->facts);
	s->scan_ns = kp_file_time_ns();
	s->exits_dropped = (int64_t)kp_exits_dropped(s->facts);
	s->events_lost = (int64_t)kp_exits_events_lost(s->facts);
	s->prev_uptime_ticks = s->uptime_ticks;
	if (kp_read_uptime_ticks(s->procdir, &s->uptime_ticks) < 0)
		return failed(s, "uptime", "not an uptime as the kernel writes "
		    "it");
	if ((dir = opendir(s->procdir)) == NULL)
		return failed(s, NULL, NULL);
	if (s->procfs < 0)
		s->procfs = is_procfs(dirfd(dir));
	s->gen++;
	rc = scan(s, dir);
	closedir(dir);
	if (rc < 0)
		return -1;
	s->scans++;
	proctable_list(s);
	sampler_vm_scopes(s);
	sampler_account_exits(s);
	return 0;
}

/*
 * The sources of detail and residues (KP_EXITS_*), and where the cgroup
 * counters are mounted: "" for nowhere; NULL for this host's
 * /sys/fs/cgroup when the sampler reads /proc, else nowhere, since a
 * --proc tree's processes are not this host's.  -1 if the cgroup source
 * was asked for and root holds no counters.  Call before the first scan
 * or load.
 */
int
kp_sampler_set_exits(struct kp_sampler *s, int sources, const char *root)
{
	s->exits = sources;
	kp_cgcpu_free(s->cg);
	s->cg = NULL;
	if (root == NULL)
		root = strcmp(s->procdir, "/proc") == 0 ? "/sys/fs/cgroup" : "";
	if (!(sources & KP_EXITS_CGROUP) || *root == '\0')
		return 0;
	return (s->cg = kp_cgcpu_open(root)) != NULL ? 0 : -1;
}

/*
 * A process ended, as the process events tell: the counter of its cgroup,
 * if no scan has read it and it was made since the latest began, before
 * it may be removed (proc-cputime(1), "Exit accounting").
 */
static void
exit_cgroup(const char *cgroup, void *arg)
{
	struct kp_sampler *s = arg;

	if (s->scans > 0)
		kp_cgcpu_read_ended(s->cg, cgroup, s->scan_ns);
}

/*
 * Where the kernel's exit facts come from (KP_EXITS_TASKSTATS), or NULL:
 * a listener the caller drains between scans, as the scan does itself;
 * with its process events, if any, set on it already.
 */
void
kp_sampler_set_facts(struct kp_sampler *s, struct kp_exits *x)
{
	s->facts = x;
	kp_exits_on_exit(x, exit_cgroup, s);
}

/*
 * Keeps up to max stat files open between scans, re-read with one pread
 * each instead of open, read and close: at most as many as the limit on
 * open files allows, raised as far as it may be, less 64 for the rest.
 * Each pins some 4 to 6 kB of kernel memory.  Returns the cap set.
 */
size_t
kp_sampler_set_keep_open(struct kp_sampler *s, size_t max)
{
	struct rlimit rl;

	if (max > 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < max + 64) {
			rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ||
			    rl.rlim_max > max + 64 ? max + 64 : rl.rlim_max;
			(void)setrlimit(RLIMIT_NOFILE, &rl);
			(void)getrlimit(RLIMIT_NOFILE, &rl);
		}
		if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < max + 64)
			max = rl.rlim_cur > 64 ? rl.rlim_cur - 64 : 0;
	}
	return s->keep_open = max;
}

int
kp_sampler_has_baseline(const struct kp_sampler *s)
{
	return s->scans > 0;
}

/*
 * The node's active CPU time that no process's counters hold: the
 * unattributed record's share that no exit accounting can reduce.
 */
static void
kernel_cpu(const struct kp_cpu_times *prev, const struct kp_cpu_times *cur,
    struct kp_buf *b)
{
	kp_buf_int(b, "irq_us", kp_ticks_to_us(delta(cur->irq_ticks,
	    prev->irq_ticks)));
	kp_buf_int(b, "softirq_us", kp_ticks_to_us(delta(cur->softirq_ticks,
	    prev->softirq_ticks)));
	kp_buf_int(b, "steal_us", kp_ticks_to_us(delta(cur->steal_ticks,
	    prev->steal_ticks)));
}

/*
 * The node's active time: /proc/stat's, or, where it is more, the growth
 * of the cpuacct root's counter (every task's time, in the scheduler's
 * nanoseconds) with the interrupts and steal of /proc/stat, which no
 * task's time holds; at most the interval's.  /proc/stat counts tasks'
 * time a clock tick at a time, and a CPU idle between two ticks counts
 * none of a short process that ran between them, which the records'
 * exit records and counters count (proc-cputime(1), Records).
 */
static int64_t
node_active_us(const struct kp_sampler *s, int64_t stat_us, int64_t total_us)
{
	const struct kp_cpu_times *p = &s->prev_cpu, *c = &s->cpu;
	int64_t tasks_us, us;

	if (!p->has_kernel || !c->has_kernel ||
	    kp_cgcpu_root_delta(s->cg, &tasks_us) < 0)
		return stat_us;
	us = tasks_us + kp_ticks_to_us(delta(c->irq_ticks, p->irq_ticks) +
	    delta(c->softirq_ticks, p->softirq_ticks) +
	    delta(c->steal_ticks, p->steal_ticks));
	return us <= stat_us ? stat_us : us < total_us ? us : total_us;
}

static void
cpu_record(const struct kp_sampler *s, int64_t seq, struct kp_buf *b)
{
	int64_t cpu_us, total_cpu_us;

	kp_cpu_times_delta_us(&s->prev_cpu, &s->cpu, &cpu_us, &total_cpu_us);
	cpu_us = node_active_us(s, cpu_us, total_cpu_us);
	kp_buf_rec(b, "cpu", seq);
	kp_buf_int(b, "cpu_us", cpu_us);
	kp_buf_int(b, "total_cpu_us", total_cpu_us);
	kp_buf_real(b, "usage_ratio", kp_usage_ratio(cpu_us, total_cpu_us));
	if (s->cpu.has_kernel && s->prev_cpu.has_kernel)
		kernel_cpu(&s->prev_cpu, &s->cpu, b);
	if (s->emit_all)	/* every live process has a record */
		kp_buf_bool(b, "dense", 1);
	if (kp_exits_listening(s->facts))
		kp_buf_int(b, "exits_dropped", s->exits_dropped);
	if (kp_exits_hearing(s->facts))
		kp_buf_int(b, "events_lost", s->events_lost);
	kp_gpu_node(s->gpu, b);
}

static void
proc_record(const struct kp_sampler *s, const struct proc *p, int64_t seq,
    int terminated, struct kp_buf *b)
{
	kp_buf_rec(b, "proc", seq);
	kp_buf_int(b, "pid", p->stat.pid);
	kp_buf_int(b, "ppid", p->stat.ppid);
	kp_buf_int(b, "starttime", (int64_t)p->stat.starttime);
	kp_buf_text(b, "comm", p->stat.comm);
	if (p->exe != NULL)
		kp_buf_text(b, "exe", p->exe);
	kp_buf_int(b, "cpu_us", terminated ? p->slice_us : p->record_us);
	if (!terminated)	/* an ended pid's samples are the node's only */
		kp_gpu_proc(s->gpu, p->stat.pid, b);
	if (terminated)
		kp_buf_raw(b, "state", "\"terminated\"", 12);
	else
		kp_buf_raw(b, "state", "\"running\"", 9);
	kp_identity_to_buf(&p->id, b);
}

/* Processes that ended unseen, folded by parent and command name. */
static void
exited_record(const struct detail *d, int64_t seq, struct kp_buf *b)
{
	kp_buf_rec(b, "exited", seq);
	kp_buf_int(b, "count", d->count);
	kp_buf_int(b, "cpu_us", d->cpu_us);
	kp_buf_int(b, "ppid", d->ppid);
	kp_buf_text(b, "comm", d->comm);
	kp_buf_text(b, "source", d->source);
	kp_identity_to_buf(d->id, b);
}

/*
 * A cgroup's residue, what its counter shows that nothing else explains,
 * and its excess, what the detail and records gave it beyond its counter.
 */
static void
cgroup_record(struct kp_sampler *s, struct kp_cgnode *n, int64_t seq,
    struct kp_buf *b)
{
	kp_buf_rec(b, "exited", seq);
	kp_buf_int(b, "count", 0);
	kp_buf_int(b, "cpu_us", n->residue_us);
	kp_buf_raw(b, "source", "\"cgroup\"", 8);
	kp_identity_to_buf(sampler_group_identity(s, n), b);
	if (n->excess_us > 0)
		kp_buf_int(b, "excess_cpu_us", n->excess_us);
}

struct each_arg {
	struct kp_sampler *s;
	void (*fn)(const char *type, struct kp_buf *b, void *arg);
	void *arg;
	struct kp_buf *b;
	int64_t seq;
};

static void
each_cgroup(struct kp_cgnode *n, void *arg)
{
	struct each_arg *ea = arg;

	if (!n->have_delta || (n->residue_us == 0 && n->excess_us == 0))
		return;
	cgroup_record(ea->s, n, ea->seq, ea->b);
	ea->fn("exited", ea->b, ea->arg);
}

static void
each_exited(struct kp_sampler *s, int64_t seq,
    void (*fn)(const char *type, struct kp_buf *b, void *arg), void *arg)
{
	struct each_arg ea = { s, fn, arg, &s->buf, seq };
	size_t i;

	for (i = 0; i < s->ndetails; i++) {
		exited_record(&s->details[i], seq, &s->buf);
		fn("exited", &s->buf, arg);
	}
	if (s->cg != NULL && (s->exits & KP_EXITS_CGROUP))
		kp_cgcpu_each(s->cg, each_cgroup, &ea);
}

/*
 * The interval between the last two scans: one cpu record, then a proc
 * record for each process that used CPU or GPU time or ended (every
 * process with emit_all), then the exited records.  Each record is built
 * in a buffer, written by kp_sampler_write and handed as a line to
 * kp_sampler_emit, so that both agree.
 */
static void
each_record(struct kp_sampler *s, int64_t seq,
    void (*fn)(const char *type, struct kp_buf *b, void *arg), void *arg)
{
	struct proc *p;
	size_t i;
	int ended;

	if (s->scans < 2)
		return;
	cpu_record(s, seq, &s->buf);
	fn("cpu", &s->buf, arg);
	for (i = 0; i < s->nlist; i++) {
		p = s->list[i];
		ended = p->gen != s->gen;
		if (ended || p->delta_ticks > 0 || s->emit_all ||
		    kp_gpu_proc(s->gpu, p->stat.pid, NULL)) {
			proc_record(s, p, seq, ended, &s->buf);
			fn("proc", &s->buf, arg);
		}
	}
	each_exited(s, seq, fn, arg);
}

static void
write_record(const char *type, struct kp_buf *b, void *arg)
{
	(void)type;
	(void)arg;
	kp_out_buf(b);
}

/* Writes the interval's records to stdout. */
void
kp_sampler_write(struct kp_sampler *s, int64_t seq)
{
	each_record(s, seq, write_record, NULL);
}

struct emit_arg {
	void (*emit)(const char *type, const char *line, size_t len,
	    void *arg);
	void *arg;
};

static void
emit_record(const char *type, struct kp_buf *b, void *arg)
{
	struct emit_arg *ea = arg;

	kp_buf_add(b, "}", 1);
	ea->emit(type, b->s, b->len, ea->arg);
	b->len = 0;
}

/* Gives emit each of the interval's records, as the line it would write. */
void
kp_sampler_emit(struct kp_sampler *s, int64_t seq,
    void (*emit)(const char *type, const char *line, size_t len, void *arg),
    void *arg)
{
	struct emit_arg ea = { emit, arg };

	each_record(s, seq, emit_record, &ea);
}

/*
 * One live process: [pid, starttime, cpu_ticks, comm, cgroup, ppid, flags,
 * child_ticks, counter path], the path "" where it has no counter, and for
 * a VM's process [vm_id, vm_name, hypervisor] after them: its cgroup path
 * alone gives a machine scope's name, not the -uuid its QEMU gave.
 */
static json_t *
save_proc(const struct proc *p)
{
	json_t *row = json_pack("[I,I,I,o,o,I,I,I,o]", (json_int_t)p->stat.pid,
	    (json_int_t)p->stat.starttime, (json_int_t)p->stat.cpu_ticks,
	    kp_json_text(p->stat.comm), kp_json_text(p->id.cgroup),
	    (json_int_t)p->stat.ppid, (json_int_t)p->stat.flags,
	    (json_int_t)p->stat.child_ticks,
	    kp_json_text(p->cg != NULL ? p->cg->path : ""));

	if (p->id.vm_id[0])
		json_array_append_new(row, json_pack("[o,o,o]",
		    kp_json_text(p->id.vm_id), kp_json_text(p->id.vm_name),
		    kp_json_text(p->id.hypervisor)));
	return row;
}

/* What the next run needs to go on from the latest scan. */
json_t *
kp_sampler_save(const struct kp_sampler *s)
{
	json_t *saved, *procs;
	size_t i;

	procs = json_array();
	for (i = 0; i < s->nlist; i++)
		if (s->list[i]->gen == s->gen)
			json_array_append_new(procs, save_proc(s->list[i]));
	saved = json_pack("{s:I,s:I,s:I,s:o}",
	    "total_ticks", (json_int_t)s->cpu.total_ticks,
	    "active_ticks", (json_int_t)s->cpu.active_ticks,
	    "uptime_ticks", (json_int_t)s->uptime_ticks,
	    "procs", procs);
	if (s->cpu.has_kernel)
		json_object_set_new(saved, "kernel_ticks", json_pack("[I,I,I]",
		    (json_int_t)s->cpu.irq_ticks,
		    (json_int_t)s->cpu.softirq_ticks,
		    (json_int_t)s->cpu.steal_ticks));
	if (s->cg != NULL)
		json_object_set_new(saved, "cgroups", kp_cgcpu_save(s->cg));
	if (s->nheld > 0)
		json_object_set_new(saved, "held_detail", sampler_save_held(s));
	if (s->gpu != NULL)
		json_object_set_new(saved, "gpu", kp_gpu_save(s->gpu));
	return saved;
}

/*
 * A saved VM's fields, as save_proc writes them: 1 into vm, 0 if the row
 * has none, -1 if they are something else.
 */
static int
saved_vm(json_t *row, struct kp_identity *vm)
{
	json_t *fields = json_array_get(row, 9);
	const char *vm_id, *vm_name, *hypervisor;

	if (fields == NULL)
		return 0;
	if (json_unpack(fields, "[sss]", &vm_id, &vm_name, &hypervisor) < 0 ||
	    *vm_id == '\0' || strlen(vm_id) >= sizeof(vm->vm_id) ||
	    strlen(vm_name) >= sizeof(vm->vm_name) ||
	    strlen(hypervisor) >= sizeof(vm->hypervisor))
		return -1;
	memset(vm, 0, sizeof(*vm));
	strcpy(vm->vm_id, vm_id);
	strcpy(vm->vm_name, vm_name);
	strcpy(vm->hypervisor, hypervisor);
	return 1;
}

/*
 * Row element i as an integer from 0 to max, or 0 if the row is shorter
 * (older builds saved fewer); -1 if it is something else.
 */
static int
row_optional(json_t *row, size_t i, json_int_t max, json_int_t *v)
{
	*v = 0;
	if (json_array_size(row) <= i)
		return 0;
	if (json_unpack(json_array_get(row, i), "I", v) < 0 || *v < 0 ||
	    *v > max)
		return -1;
	return 0;
}

/* A saved row, as save_proc writes it (older builds fewer); -1 if bad. */
static int
load_proc(struct kp_sampler *s, json_t *row)
{
	json_int_t pid, start, ticks, ppid, flags, child;
	const char *comm, *cgroup, *counter;
	struct kp_identity vm;
	struct kp_pid_stat ps;
	struct proc *p;
	int has_vm;

	if (json_unpack(row, "[IIIss*]", &pid, &start, &ticks, &comm,
	    &cgroup) < 0 || row_optional(row, 5, INT_MAX, &ppid) < 0 ||
	    row_optional(row, 6, UINT_MAX, &flags) < 0 ||
	    row_optional(row, 7, INT64_MAX, &child) < 0 ||
	    (has_vm = saved_vm(row, &vm)) < 0 ||
	    pid <= 0 || pid > INT_MAX || start < 0 || ticks < 0 ||
	    proctable_find(s, (pid_t)pid, (uint64_t)start) != NULL)
		return -1;
	memset(&ps, 0, sizeof(ps));
	ps.pid = (pid_t)pid;
	ps.starttime = (uint64_t)start;
	ps.cpu_ticks = (uint64_t)ticks;
	ps.ppid = (pid_t)ppid;
	ps.flags = (unsigned long)flags;
	ps.child_ticks = (uint64_t)child;
	snprintf(ps.comm, sizeof(ps.comm), "%s", comm);
	p = proctable_add(s, &ps);
	p->gen = p->first_gen = s->gen;
	counter = json_string_value(json_array_get(row, 8));
	if (s->cg != NULL && counter != NULL && *counter != '\0')
		p->cg = kp_cgcpu_node_at(s->cg, counter);
	/*
	 * The path alone, for a process that ends before the next scan;
	 * one still running is read whole again then.
	 */
	kp_identity_from_path(cgroup, &p->id);
	if (has_vm)
		sampler_take_vm(&p->id, &vm);
	kp_identity_classify(&p->id, kernel_thread(&ps));
	return 0;
}

/*
 * A state file of an earlier version has no kernel_ticks: the next cpu
 * record then goes without irq_us, softirq_us and steal_us.
 */
static void
load_kernel_ticks(struct kp_cpu_times *ct, json_t *saved)
{
	json_int_t irq, softirq, steal;

	ct->has_kernel = saved != NULL && json_unpack(saved, "[I,I,I]", &irq,
	    &softirq, &steal) == 0 && irq >= 0 && softirq >= 0 && steal >= 0;
	if (!ct->has_kernel)
		return;
	ct->irq_ticks = (uint64_t)irq;
	ct->softirq_ticks = (uint64_t)softirq;
	ct->steal_ticks = (uint64_t)steal;
}

/* The node's counters, then each process; the number of bad rows skipped. */
static int
load(struct kp_sampler *s, json_t *saved)
{
	json_int_t total, active, uptime;
	json_t *procs, *row;
	size_t i;
	int skipped = 0;

	if (json_unpack(saved, "{s:I,s:I,s:I,s:o}", "total_ticks", &total,
	    "active_ticks", &active, "uptime_ticks", &uptime,
	    "procs", &procs) < 0 || !json_is_array(procs) ||
	    total < 0 || active < 0 || active > total || uptime < 0)
		return -1;
	s->cpu.total_ticks = (uint64_t)total;
	s->cpu.active_ticks = (uint64_t)active;
	load_kernel_ticks(&s->cpu, json_object_get(saved, "kernel_ticks"));
	s->uptime_ticks = (uint64_t)uptime;
	/* One bad row costs that process's interval, not everyone's. */
	json_array_foreach(procs, i, row)
		if (load_proc(s, row) < 0)
			skipped++;
	if (s->cg != NULL && json_is_array(json_object_get(saved, "cgroups")))
		kp_cgcpu_load(s->cg, json_object_get(saved, "cgroups"));
	if (s->cg != NULL)
		sampler_load_held(s, json_object_get(saved, "held_detail"));
	if (s->gpu != NULL)
		kp_gpu_load(s->gpu, json_object_get(saved, "gpu"));
	return skipped;
}

/* Back to no baseline at all. */
static void
reset(struct kp_sampler *s)
{
	proctable_clear(s);
	s->nheld = 0;
	s->scans = 0;
}

/*
 * Takes a saved scan as the baseline: the number of unusable process rows
 * left out, or -1, and no baseline, if it is not a scan at all.
 */
int
kp_sampler_load(struct kp_sampler *s, json_t *saved)
{
	int skipped;

	if ((skipped = load(s, saved)) < 0) {
		reset(s);
		return -1;
	}
	s->scans = 1;
	proctable_list(s);
	return skipped;
}

void
kp_sampler_free(struct kp_sampler *s)
{
	if (s == NULL)
		return;
	proctable_free(s);
	free(s->buf.s);
	free(s->details);
	free(s->held);
	free(s->reap);
	free(s->seen);
	kp_cgcpu_free(s->cg);
	kp_gpu_free(s->gpu);
	free(s->procdir);
	free(s);
}
