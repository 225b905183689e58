/*
 * CPU time between two scans of /proc: the node's from /proc/stat, each
 * process's from /proc/PID/stat, keyed by (pid, starttime) so that a reused
 * pid is a new process.
 */
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kp.h"

struct proc {
	struct kp_pid_stat stat;	/* as of the latest scan */
	struct proc *next_free;		/* in the pool's free list */
	uint64_t delta_ticks;		/* CPU time since the previous scan */
	unsigned gen;			/* the scan that last saw it */
	int have_identity;
	struct kp_identity id;
};

struct kp_sampler {
	char *procdir;
	char *pods_log;			/* the kubelet's /var/log/pods, or NULL */
	int emit_all;
	int scans;			/* scans taken, a loaded one included */
	int warned_malformed;		/* a malformed stat was reported */
	unsigned gen;
	struct kp_cpu_times prev_cpu, cpu;
	uint64_t prev_uptime_ticks, uptime_ticks;
	struct proc **table;		/* by (pid, starttime), open addressing */
	size_t cap, count;		/* cap: a power of two, or 0 */
	struct proc **list;		/* the same, sorted by pid */
	size_t nlist, listcap;
	struct proc **chunks;		/* the pool the processes come from */
	size_t nchunks;
	struct proc *free_procs;
	struct kp_buf buf;		/* the record being written */
};

struct kp_sampler *
kp_sampler_new(const char *procdir, int emit_all)
{
	struct kp_sampler *s;

	s = kp_calloc(1, sizeof(*s));
	s->procdir = kp_strdup(procdir);
	s->emit_all = emit_all;
	return s;
}

/* Where the kubelet keeps pod logs, for pod and container names. */
void
kp_sampler_set_pods_log(struct kp_sampler *s, const char *dir)
{
	free(s->pods_log);
	s->pods_log = NULL;
	if (dir != NULL)
		s->pods_log = kp_strdup(dir);
}

/*
 * The processes: a pool that hands out struct proc in chunks and takes them
 * back, so that scanning allocates nothing once the pool is as big as the
 * most processes seen at once, and a hash table keyed by (pid, starttime)
 * with linear probing and backward-shift deletion, so that no tombstones
 * pile up as processes come and go.
 */
#define POOL_CHUNK 512

static struct proc *
pool_get(struct kp_sampler *s)
{
	struct proc *chunk;
	size_t i;

	if (s->free_procs == NULL) {
		chunk = kp_calloc(POOL_CHUNK, sizeof(*chunk));
		s->chunks = kp_reallocarray(s->chunks, s->nchunks + 1,
		    sizeof(*s->chunks));
		s->chunks[s->nchunks++] = chunk;
		for (i = 0; i < POOL_CHUNK; i++) {
			chunk[i].next_free = s->free_procs;
			s->free_procs = &chunk[i];
		}
	}
	chunk = s->free_procs;
	s->free_procs = chunk->next_free;
	memset(chunk, 0, sizeof(*chunk));
	return chunk;
}

static void
pool_put(struct kp_sampler *s, struct proc *p)
{
	p->next_free = s->free_procs;
	s->free_procs = p;
}

static size_t
slot_of(const struct kp_sampler *s, pid_t pid, uint64_t starttime)
{
	uint64_t h = ((uint64_t)pid * 0x9e3779b97f4a7c15ULL) ^
	    (starttime * 0xc2b2ae3d27d4eb4fULL);

	return (size_t)(h ^ (h >> 29)) & (s->cap - 1);
}

static struct proc *
proc_find(const struct kp_sampler *s, pid_t pid, uint64_t starttime)
{
	struct proc *p;
	size_t i;

	if (s->cap == 0)
		return NULL;
	for (i = slot_of(s, pid, starttime); (p = s->table[i]) != NULL;
	    i = (i + 1) & (s->cap - 1))
		if (p->stat.pid == pid && p->stat.starttime == starttime)
			return p;
	return NULL;
}

static void
table_insert(struct kp_sampler *s, struct proc *p)
{
	size_t i;

	for (i = slot_of(s, p->stat.pid, p->stat.starttime); s->table[i];
	    i = (i + 1) & (s->cap - 1))
		;
	s->table[i] = p;
}

/* Keeps the table at most half full. */
static void
table_grow(struct kp_sampler *s)
{
	struct proc **old = s->table;
	size_t i, oldcap = s->cap;

	s->cap = oldcap ? oldcap * 2 : 1024;
	s->table = kp_calloc(s->cap, sizeof(*s->table));
	for (i = 0; i < oldcap; i++)
		if (old[i] != NULL)
			table_insert(s, old[i]);
	free(old);
}

static void
table_remove(struct kp_sampler *s, struct proc *p)
{
	size_t i, j, home, mask = s->cap - 1;

	for (i = slot_of(s, p->stat.pid, p->stat.starttime); s->table[i] != p;
	    i = (i + 1) & mask)
		;
	s->table[i] = NULL;
	/* Move back each later entry of the run that may no longer be found. */
	for (j = (i + 1) & mask; s->table[j] != NULL; j = (j + 1) & mask) {
		home = slot_of(s, s->table[j]->stat.pid,
		    s->table[j]->stat.starttime);
		if (((j - home) & mask) >= ((j - i) & mask)) {
			s->table[i] = s->table[j];
			s->table[j] = NULL;
			i = j;
		}
	}
	s->count--;
	pool_put(s, p);
}

static struct proc *
proc_add(struct kp_sampler *s, const struct kp_pid_stat *ps)
{
	struct proc *p;

	if ((s->count + 1) * 2 > s->cap)
		table_grow(s);
	p = pool_get(s);
	p->stat = *ps;
	table_insert(s, p);
	s->count++;
	return p;
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
 * Read once per process: a process does not change cgroup often enough.
 * The command line matters only to QEMU, so it is read only for a process
 * called qemu* or one inside a libvirt machine.
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
	if (strncmp(p->stat.comm, "qemu", 4) == 0 || p->id.vm_id[0]) {
		snprintf(path, sizeof(path), "%ld/cmdline", (long)p->stat.pid);
		if ((n = kp_read_proc(procfd, path, buf, sizeof(buf))) > 0)
			kp_identity_from_cmdline(buf, (size_t)n, &p->id);
	}
	if (p->id.pod_id[0])
		kp_identity_from_pods_log(s->pods_log, &p->id);
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

/*
 * A process first seen now is charged all its CPU time only if it started
 * after the previous scan; otherwise that time was spent before we looked,
 * and this sight is only its baseline.
 */
static void
scan_pid(struct kp_sampler *s, int procfd, const char *name)
{
	struct kp_pid_stat ps;
	struct proc *p;

	switch (kp_read_pid_stat(procfd, name, &ps)) {
	case 0:
		break;
	case -2:
		warn_malformed(s, name);
		return;
	default:
		return;		/* gone between listing and reading */
	}
	if ((p = proc_find(s, ps.pid, ps.starttime)) != NULL) {
		p->delta_ticks = delta(ps.cpu_ticks, p->stat.cpu_ticks);
		p->stat = ps;
	} else {
		p = proc_add(s, &ps);
		p->delta_ticks = s->scans > 0 &&
		    ps.starttime > s->prev_uptime_ticks ? ps.cpu_ticks : 0;
	}
	p->gen = s->gen;
	if (!p->have_identity)
		read_identity(s, procfd, p);
}

static int
by_pid(const void *a, const void *b)
{
	const struct proc *p = *(struct proc *const *)a;
	const struct proc *q = *(struct proc *const *)b;

	if (p->stat.pid != q->stat.pid)
		return p->stat.pid < q->stat.pid ? -1 : 1;
	return (p->stat.starttime > q->stat.starttime) -
	    (p->stat.starttime < q->stat.starttime);
}

/* Every known process in pid order, so that output is deterministic. */
static void
build_list(struct kp_sampler *s)
{
	size_t i;

	if (s->count > s->listcap) {
		s->list = kp_reallocarray(s->list, s->cap, sizeof(*s->list));
		s->listcap = s->cap;
	}
	s->nlist = 0;
	for (i = 0; i < s->cap; i++)
		if (s->table[i] != NULL)
			s->list[s->nlist++] = s->table[i];
	if (s->nlist > 1)	/* an empty list may be NULL, which qsort rejects */
		qsort(s->list, s->nlist, sizeof(*s->list), by_pid);
}

/* Forget the processes that the latest scan did not see: they were reported. */
static void
drop_terminated(struct kp_sampler *s)
{
	size_t i;

	for (i = 0; i < s->nlist; i++)
		if (s->list[i]->gen != s->gen)
			table_remove(s, s->list[i]);
	s->nlist = 0;
}

int
kp_sampler_scan(struct kp_sampler *s)
{
	struct dirent *de;
	DIR *dir;

	drop_terminated(s);
	s->prev_cpu = s->cpu;
	s->prev_uptime_ticks = s->uptime_ticks;
	if (kp_read_cpu_times(s->procdir, &s->cpu) < 0 ||
	    kp_read_uptime_ticks(s->procdir, &s->uptime_ticks) < 0 ||
	    (dir = opendir(s->procdir)) == NULL)
		return -1;
	s->gen++;
	while ((de = readdir(dir)) != NULL)
		if (de->d_name[0] >= '1' && de->d_name[0] <= '9')
			scan_pid(s, dirfd(dir), de->d_name);
	closedir(dir);
	s->scans++;
	build_list(s);
	return 0;
}

int
kp_sampler_has_baseline(const struct kp_sampler *s)
{
	return s->scans > 0;
}

static void
cpu_record(const struct kp_sampler *s, int64_t seq, struct kp_buf *b)
{
	int64_t cpu_us, total_cpu_us;

	total_cpu_us = kp_ticks_to_us(delta(s->cpu.total_ticks,
	    s->prev_cpu.total_ticks));
	cpu_us = kp_ticks_to_us(delta(s->cpu.active_ticks,
	    s->prev_cpu.active_ticks));
	if (cpu_us > total_cpu_us)
		cpu_us = total_cpu_us;
	kp_buf_rec(b, "cpu", seq);
	kp_buf_int(b, "cpu_us", cpu_us);
	kp_buf_int(b, "total_cpu_us", total_cpu_us);
	kp_buf_real(b, "usage_ratio", kp_usage_ratio(cpu_us, total_cpu_us));
	if (s->emit_all)	/* every live process has a record */
		kp_buf_bool(b, "dense", 1);
}

static void
proc_record(const struct proc *p, int64_t seq, int terminated,
    struct kp_buf *b)
{
	kp_buf_rec(b, "proc", seq);
	kp_buf_int(b, "pid", p->stat.pid);
	kp_buf_int(b, "ppid", p->stat.ppid);
	kp_buf_int(b, "starttime", (int64_t)p->stat.starttime);
	kp_buf_text(b, "comm", p->stat.comm);
	kp_buf_int(b, "cpu_us", terminated ? 0 :
	    kp_ticks_to_us(p->delta_ticks));
	if (terminated)
		kp_buf_raw(b, "state", "\"terminated\"", 12);
	else
		kp_buf_raw(b, "state", "\"running\"", 9);
	kp_identity_to_buf(&p->id, b);
}

/*
 * The interval between the last two scans: one cpu record, then a proc
 * record for each process that used CPU time or ended (every process with
 * emit_all).  Each record is built in a buffer, written by kp_sampler_write
 * and handed as a line to kp_sampler_emit, so that both agree.
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
		if (ended || p->delta_ticks > 0 || s->emit_all) {
			proc_record(p, seq, ended, &s->buf);
			fn("proc", &s->buf, arg);
		}
	}
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

/* What the next run needs to go on from the latest scan. */
json_t *
kp_sampler_save(const struct kp_sampler *s)
{
	json_t *saved, *procs;
	size_t i;

	procs = json_array();
	for (i = 0; i < s->nlist; i++) {
		if (s->list[i]->gen != s->gen)
			continue;
		json_array_append_new(procs, json_pack("[I,I,I,o,o,I,I]",
		    (json_int_t)s->list[i]->stat.pid,
		    (json_int_t)s->list[i]->stat.starttime,
		    (json_int_t)s->list[i]->stat.cpu_ticks,
		    kp_json_text(s->list[i]->stat.comm),
		    kp_json_text(s->list[i]->id.cgroup),
		    (json_int_t)s->list[i]->stat.ppid,
		    (json_int_t)s->list[i]->stat.flags));
	}
	saved = json_pack("{s:I,s:I,s:I,s:o}",
	    "total_ticks", (json_int_t)s->cpu.total_ticks,
	    "active_ticks", (json_int_t)s->cpu.active_ticks,
	    "uptime_ticks", (json_int_t)s->uptime_ticks,
	    "procs", procs);
	return saved;
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

/* A saved [pid, starttime, cpu_ticks, comm, cgroup, ppid, flags]; -1 if bad. */
static int
load_proc(struct kp_sampler *s, json_t *row)
{
	json_int_t pid, start, ticks, ppid, flags;
	const char *comm, *cgroup;
	struct kp_pid_stat ps;
	struct proc *p;

	if (json_unpack(row, "[IIIss*]", &pid, &start, &ticks, &comm,
	    &cgroup) < 0 || row_optional(row, 5, INT_MAX, &ppid) < 0 ||
	    row_optional(row, 6, UINT_MAX, &flags) < 0 ||
	    pid <= 0 || pid > INT_MAX || start < 0 || ticks < 0 ||
	    proc_find(s, (pid_t)pid, (uint64_t)start) != NULL)
		return -1;
	memset(&ps, 0, sizeof(ps));
	ps.pid = (pid_t)pid;
	ps.starttime = (uint64_t)start;
	ps.cpu_ticks = (uint64_t)ticks;
	ps.ppid = (pid_t)ppid;
	ps.flags = (unsigned long)flags;
	snprintf(ps.comm, sizeof(ps.comm), "%s", comm);
	p = proc_add(s, &ps);
	p->gen = s->gen;
	/*
	 * The path alone, for a process that ends before the next scan;
	 * one still running is read whole again then.
	 */
	kp_identity_from_path(cgroup, &p->id);
	kp_identity_classify(&p->id, kernel_thread(&ps));
	return 0;
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
	s->uptime_ticks = (uint64_t)uptime;
	/* One bad row costs that process's interval, not everyone's. */
	json_array_foreach(procs, i, row)
		if (load_proc(s, row) < 0)
			skipped++;
	return skipped;
}

/* Back to no baseline at all. */
static void
reset(struct kp_sampler *s)
{
	size_t i;

	for (i = 0; i < s->cap; i++)
		if (s->table[i] != NULL) {
			pool_put(s, s->table[i]);
			s->table[i] = NULL;
		}
	s->count = 0;
	s->nlist = 0;
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
	build_list(s);
	return skipped;
}

void
kp_sampler_free(struct kp_sampler *s)
{
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->nchunks; i++)
		free(s->chunks[i]);
	free(s->chunks);
	free(s->table);
	free(s->list);
	free(s->buf.s);
	free(s->procdir);
	free(s->pods_log);
	free(s);
}
