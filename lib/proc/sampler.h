/*
 * The sampler's insides, behind lib/proc/proc.h for everyone else:
 * sampler.c scans /proc and writes, saves and loads what it found;
 * exit_account.c accounts for what ended between two scans (the reaping
 * parents, the kernel's exit facts, the cgroup counters); proctable.c
 * holds the processes both follow.  This header is theirs alone.
 */
#ifndef SAMPLER_H
#define SAMPLER_H

#include <limits.h>

#include "proc.h"

struct proc {
	struct kp_pid_stat stat;	/* as of the latest scan */
	struct proc *next_free;		/* in the pool's free list */
	uint64_t delta_ticks;		/* CPU time since the previous scan */
	int64_t record_us;		/* alive: its record's, cut to its */
					/* cgroup's counter */
	uint64_t growth_ticks;		/* its children's, reaped since then */
	unsigned gen;			/* the scan that last saw it */
	unsigned first_gen;		/* the scan that first saw it */
	int have_identity;
	int fd;				/* its stat kept open, or -1 */
	int names_pending;		/* some names may come later */
	struct kp_identity id;
	char *exe;			/* its executable's path, or NULL */
	struct kp_cgnode *cg;		/* its cgroup's counter, or NULL */
	int64_t slice_us;		/* ended: its last slice, where known */
	int has_exit_us;		/* exit_us: its CPU time at its end, */
	int64_t exit_us;		/* its waited children's included, */
					/* from rapl-read's command record */
	int fact_taken;			/* its exit fact gave its last slice */
	/* The reaping pass of one scan (see reap). */
	int64_t sub_us;			/* what its ended children had shown, */
					/* and exit facts gave (exact to 1 us) */
	int64_t facts_us;		/* of sub_us, what facts gave */
	int64_t carry_us;		/* facts ahead of its cutime: the next */
					/* reaping pass's to subtract */
	unsigned nsub, ndirect;		/* how many; of them its own */
	struct proc *first_sub;		/* the first of them */
	struct proc *direct;		/* its own child among them, the last */
	int mixed_comm, mixed_cg;	/* whether the others differ from it */
	unsigned nexec;			/* its children ended unseen, known */
	struct kp_cgnode *exec_cg;	/* from the process events; the */
	int mixed_exec;			/* first's cgroup at its exec; others' */
	int exec_uncounted;		/* one of theirs has no counter read */
	int depth;			/* alive: its alive ancestors */
};

/*
 * Detail: CPU time of a tracked process's last slice, or of processes
 * that ended unseen, folded by parent and command name (proc-cputime(1),
 * "Exit accounting").
 */
struct detail {
	struct proc *proc;		/* the tracked process, or NULL */
	pid_t ppid;
	char comm[64];
	const struct kp_identity *id;
	struct kp_cgnode *cg;		/* the cgroup they ran in, or NULL */
	int64_t cpu_us, count;
	const char *source;		/* "parent", "taskstats" */
	int held;			/* cut the interval before, offered */
					/* again in its cgroup's identity */
	int above;			/* cut below, given by the leftover */
					/* of cg, an ancestor */
};

struct kp_sampler {
	char *procdir;
	struct kp_names *names;		/* borrowed; NULL: no names */
	char why[PATH_MAX + 128];	/* what the last failed scan could not read */
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
	size_t keep_open, nopen;	/* stat files to keep open; kept */
	int procfs;			/* procdir is a procfs: 1; no: 0; -1 */
	int exits;			/* KP_EXITS_*: the sources of detail */
	struct kp_cgcpu *cg;		/* cgroup counters, or NULL */
	struct detail *details;		/* the interval's, folded */
	size_t ndetails, detailcap;
	struct detail *held;		/* what the counters cut of them */
	size_t nheld, heldcap;
	struct proc **reap;		/* the reaping pass's, as long as list */
	size_t reapcap;
	struct proc **seen;		/* the latest scan's, in its order */
	size_t nseen, seencap;
	struct kp_exits *facts;		/* exit facts, borrowed; or NULL */
	int64_t exits_dropped;		/* the interval's, lost by the kernel */
	int64_t events_lost;		/* the interval's process events lost */
	int64_t scan_ns;		/* when the latest scan began, as */
					/* file times go */
	struct kp_identity unknown;	/* of a process whose kin are unseen */
	struct kp_gpu *gpu;		/* GPU time, or NULL: none read */
};

/* proctable.c: the processes followed; sampler.c and exit_account.c call it. */
struct proc *proctable_find(const struct kp_sampler *s, pid_t pid,
    uint64_t starttime);
struct proc *proctable_add(struct kp_sampler *s, const struct kp_pid_stat *ps);
void proctable_close_stat(struct kp_sampler *s, struct proc *p);
void proctable_list(struct kp_sampler *s);	/* s->list, by pid */
void proctable_drop_ended(struct kp_sampler *s);
size_t proctable_first_with_pid(const struct kp_sampler *s, pid_t pid);
int proctable_by_pid(const void *a, const void *b);
int proctable_alive(const struct kp_sampler *s, const struct proc *p);
void proctable_clear(struct kp_sampler *s);
void proctable_free(struct kp_sampler *s);

/* exit_account.c: called by sampler.c once a scan has ended an interval. */
void sampler_account_exits(struct kp_sampler *s);
void sampler_vm_scopes(struct kp_sampler *s);	/* vm_scope.c */
void sampler_take_vm(struct kp_identity *id,
    const struct kp_identity *from);			/* vm_scope.c */
const struct kp_identity *sampler_group_identity(struct kp_sampler *s,
    struct kp_cgnode *n);
json_t *sampler_save_held(const struct kp_sampler *s);	/* new */
void sampler_load_held(struct kp_sampler *s, json_t *rows);
void sampler_exec_name(struct proc *p, const char *comm);	/* command.c */

#endif
