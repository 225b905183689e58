/*
 * lib/proc: the engine that samples /proc and the cgroups, for the stages
 * that scan them (proc-cputime, kp-attribute sampling on its own,
 * rapl-read's node identity, estimate and command cgroup).  This is its
 * one header; lib/proc/sampler.h holds the sampler's insides, shared by
 * sampler.c and exit_account.c alone.  It stands on lib/kp.h, the record
 * protocol, and nothing there calls back into it.
 */
#ifndef KP_PROC_H
#define KP_PROC_H

#include "kp.h"

/* cpuinfo.c: the node's identity (lib/kp.h's struct kp_node) from /proc. */
size_t kp_cpuinfo_parse(FILE *f, struct kp_cpu **cpus);
size_t kp_cpus_sockets(const struct kp_cpu *cpus, size_t n);
void kp_cpus_free(struct kp_cpu *cpus, size_t n);
void kp_node_identify(struct kp_node *node, const char *name,
    const char *procdir);
void kp_node_free(struct kp_node *node);

/* procfs.c: /proc's files, read and parsed. */
struct kp_cpu_times {
	uint64_t total_ticks;	/* user..steal; guest is inside user */
	uint64_t active_ticks;	/* total - idle - iowait */
	/* Inside active and no process's: interrupts, and a hypervisor's. */
	uint64_t irq_ticks, softirq_ticks, steal_ticks;
	int has_kernel;		/* 0: a stored sample without the three */
};
struct kp_pid_stat {
	pid_t pid;
	pid_t ppid;
	unsigned long flags;	/* PF_*: PF_KTHREAD marks a kernel thread */
	char comm[64];		/* after the first '(' up to the last ')' */
	uint64_t cpu_ticks;	/* utime + stime */
	uint64_t child_ticks;	/* cutime + cstime: the children waited for */
	uint64_t starttime;	/* clock ticks after boot, as in proc(5) */
};
int kp_read_cpu_times(const char *procdir, struct kp_cpu_times *ct);
int kp_read_uptime_ticks(const char *procdir, uint64_t *ticks);
/* The same from a file's text: 0, or -1 if it is not that file's. */
int kp_parse_cpu_times(const char *buf, struct kp_cpu_times *ct);
int kp_parse_uptime_ticks(const char *buf, uint64_t *ticks);
int kp_parse_u64(const char *p, uint64_t max, uint64_t *v);	/* 0 or -2 */
/* 0; -1 for a line cut short; -2 for a bad pid, number, or counter. */
int kp_parse_pid_stat(const char *buf, struct kp_pid_stat *ps);
int kp_read_pid_stat(int procfd, const char *pid, struct kp_pid_stat *ps);
int kp_open_pid_stat(int procfd, const char *pid);	/* -1: gone */
int kp_pread_pid_stat(int fd, struct kp_pid_stat *ps);	/* -1: ESRCH, ... */
int kp_read_proc(int procfd, const char *path, char *buf, size_t len);
char *kp_read_exe(int procfd, pid_t pid);	/* NULL: none readable */
int64_t kp_ticks_to_us(uint64_t ticks);
void kp_cpu_times_delta_us(const struct kp_cpu_times *prev,
    const struct kp_cpu_times *cur, int64_t *cpu_us, int64_t *total_cpu_us);
int64_t kp_ticks_rounding_us(size_t n);	/* n figures' rounding */
uint64_t kp_ticks_per_s(void);		/* clock ticks (USER_HZ) */

/*
 * identity.c: who a process belongs to, from its cgroup path and, for a
 * hypervisor, its command line (proc-cputime(1), "Identity fields").
 */
struct kp_identity {
	char kind[16];		/* kernel, vm, container, pod, service, ... */
	char cgroup[512];
	char container_id[72];
	char runtime[16];	/* docker, containerd, cri-o, podman, garden */
	char container_name[128];
	char pod_id[40];
	char pod_name[256];
	char pod_namespace[64];
	char pod_qos[16];	/* guaranteed, burstable, besteffort */
	char vm_id[128];
	char vm_name[128];
	char hypervisor[16];	/* qemu, xen, virtualbox, vmware */
	char unit[128];
	char user_slice[32];
	char session[16];
	int vm_from_scope;	/* vm_id is a machine scope's name, no uuid */
	size_t vm_scope_len;	/* cgroup's bytes up to its machine scope */
	size_t vm_machine_len;	/* that machine's name's, as the scope has it */
};
void kp_identity_from_cgroup_file(const char *text, struct kp_identity *id);
void kp_identity_from_path(const char *path, struct kp_identity *id);
int kp_identity_wants_cmdline(const char *comm, const struct kp_identity *id);
void kp_identity_from_cmdline(const char *args, size_t len,
    struct kp_identity *id);
void kp_identity_classify(struct kp_identity *id, int kernel_thread);
void kp_identity_to_buf(const struct kp_identity *id, struct kp_buf *b);
void kp_identity_copy(struct kp_buf *b, const struct kp_record *rec);
int kp_uuid_ok(const char *s, size_t n);	/* 8-4-4-4-12 hex digits */

/*
 * names.c: names of workloads from the node's own files (the kubelet's
 * logs, docker's and podman's stores, libvirt's domains), read once per id.
 */
struct kp_names;
struct kp_names *kp_names_new(const char *root);
void kp_names_set_pods_log(struct kp_names *n, const char *dir);
void kp_names_add_podman_root(struct kp_names *n, const char *dir);
void kp_names_tick(struct kp_names *n);		/* a new scan of /proc */
int kp_names_fill(struct kp_names *n, struct kp_identity *id);
void kp_names_free(struct kp_names *n);

/*
 * cgroup_counters.c: cgroup CPU counters, which win over the detail
 * (proc-cputime(1), "Exit accounting"), in the one
 * hierarchy of a host that accounts CPU time.  A node is a cgroup; its
 * figures are those of the latest read, and of the interval it ended.
 */
struct kp_cgnode {
	char *path;			/* in the hierarchy; "/" is its root */
	struct kp_cgnode *parent;	/* NULL for the root */
	struct kp_identity id;		/* from the path */
	const struct kp_identity *live_id;	/* of a process alive in it */
	unsigned live_gen;		/* the scan that found it; names */
	int named;			/* have been looked for in id */
	int depth;
	unsigned gen;			/* the read that last wanted it */
	unsigned read_gen;		/* the read kp_cgcpu_read_known */
					/* took its counter for */
	int counted;			/* it has a counter of tasks alone */
	int have_last, have_delta;	/* read now; and at the read before */
	int64_t last_us, delta_us;	/* the counter, and its growth */
	int has_final;			/* final_us: its counter as it was */
	int64_t final_us;		/* when it was last known, to read */
					/* where it is gone (kp_cgcpu_final) */
	int64_t carry_us;		/* cut of its proc records, owed */
	int64_t procs_us, detail_us;	/* charged: records, and detail */
	int64_t procs_given_us;		/* what its proc records get */
	int64_t procs_taken_us;		/* of procs_us, handed out */
	int64_t excl_us;		/* its growth less its counted children's */
	int64_t kept_us, taken_us;	/* the detail it leaves, handed out */
	int64_t held_us;		/* detail cut an interval before */
	int64_t given_us, held_taken_us;	/* of it, what the growth */
					/* leaves unused; handed out */
	int64_t below_us;		/* detail its descendants cut, offered */
	int64_t below_given_us, below_taken_us;	/* of it, what its growth */
					/* leaves unused; handed out */
	int64_t residue_us;		/* what nothing else explains */
	int64_t excess_us;		/* detail cut, and records owed */
};
struct kp_cgcpu;
struct kp_cgcpu *kp_cgcpu_open(const char *root);	/* NULL: no counters */
void kp_cgcpu_free(struct kp_cgcpu *c);
struct kp_cgnode *kp_cgcpu_node(struct kp_cgcpu *c, const char *text);
struct kp_cgnode *kp_cgcpu_node_at(struct kp_cgcpu *c, const char *path);
void kp_cgcpu_want(struct kp_cgcpu *c, struct kp_cgnode *n);
void kp_cgcpu_read_known(struct kp_cgcpu *c);
void kp_cgcpu_read_ended(struct kp_cgcpu *c, const char *text,
    int64_t since_ns);
int kp_cgcpu_root_delta(const struct kp_cgcpu *c, int64_t *delta_us);
void kp_cgcpu_read(struct kp_cgcpu *c);
void kp_cgcpu_charge(struct kp_cgnode *n, int64_t procs_us, int64_t detail_us);
void kp_cgcpu_settle(struct kp_cgcpu *c);
int64_t kp_cgcpu_take(struct kp_cgnode *n, int64_t detail_us);
/* The same for detail cut the interval before, offered once more. */
void kp_cgcpu_charge_held(struct kp_cgnode *n, int64_t held_us);
int64_t kp_cgcpu_take_held(struct kp_cgnode *n, int64_t held_us);
int64_t kp_cgcpu_take_procs(struct kp_cgnode *n, int64_t ticks_us);
/* Detail a counter cut: its ancestors' leftovers, nearest first; excess. */
struct kp_cgnode *kp_cgcpu_above(struct kp_cgnode *n);
int64_t kp_cgcpu_take_cut(struct kp_cgnode *a, int64_t cut_us);
void kp_cgcpu_add_excess(struct kp_cgnode *n, int64_t cut_us);
void kp_cgcpu_each(struct kp_cgcpu *c,
    void (*fn)(struct kp_cgnode *n, void *arg), void *arg);
struct kp_cgnode *kp_cgcpu_make(struct kp_cgcpu *c, const char *text,
    const char *name);
int kp_cgcpu_move(const struct kp_cgcpu *c, const struct kp_cgnode *n,
    pid_t pid);
int kp_cgcpu_usage(const struct kp_cgcpu *c, const struct kp_cgnode *n,
    int64_t *usage_us);
int kp_cgcpu_remove(const struct kp_cgcpu *c, const struct kp_cgnode *n);
void kp_cgcpu_final(struct kp_cgnode *n, int64_t usage_us);
json_t *kp_cgcpu_save(const struct kp_cgcpu *c);
void kp_cgcpu_load(struct kp_cgcpu *c, json_t *rows);
/* The counter files' text: 0, or -1 if it is not that file's. */
int kp_parse_cpu_stat_usage(const char *buf, int64_t *usage_us);
int kp_parse_cpuacct_usage(const char *buf, int64_t *usage_us);

/*
 * gpu.c, from drm.c's and gpu_nvml.c's readings: each process's GPU time
 * on each GPU between two scans, and each GPU's busy time
 * (proc-cputime(1), "GPU time"), for the sampler.
 */
struct kp_gpu;
struct kp_gpu *kp_gpu_open(const char *sysfs, const char *procdir);
void kp_gpu_begin(struct kp_gpu *g);
void kp_gpu_scan_pid(struct kp_gpu *g, int procfd, pid_t pid);
void kp_gpu_end(struct kp_gpu *g, int64_t dt_us);
int kp_gpu_proc(const struct kp_gpu *g, pid_t pid, struct kp_buf *b);
void kp_gpu_node(const struct kp_gpu *g, struct kp_buf *b);
json_t *kp_gpu_save(const struct kp_gpu *g);	/* new */
void kp_gpu_load(struct kp_gpu *g, json_t *saved);
void kp_gpu_free(struct kp_gpu *g);

/*
 * sampler.c: node and per-process CPU time between two scans of /proc;
 * exit_account.c gives it what ended between them.
 */
struct kp_sampler;
struct kp_sampler *kp_sampler_new(const char *procdir, int emit_all);
#define KP_EXITS_PARENT 1	/* reaping parents' residues: the detail */
#define KP_EXITS_CGROUP 2	/* cgroup counters: the truth for groups */
#define KP_EXITS_TASKSTATS 4	/* the kernel's exit records: the detail */
int kp_sampler_set_exits(struct kp_sampler *s, int sources, const char *root);
struct kp_exits;
void kp_sampler_set_facts(struct kp_sampler *s, struct kp_exits *x);
size_t kp_sampler_set_keep_open(struct kp_sampler *s, size_t max);
void kp_sampler_set_names(struct kp_sampler *s, struct kp_names *names);
void kp_sampler_set_gpu(struct kp_sampler *s, struct kp_gpu *g);
const char *kp_sampler_error(const struct kp_sampler *s);
int kp_sampler_scan(struct kp_sampler *s);
int kp_sampler_has_baseline(const struct kp_sampler *s);
void kp_sampler_emit(struct kp_sampler *s, int64_t seq,
    void (*emit)(const char *type, const char *line, size_t len, void *arg),
    void *arg);
void kp_sampler_write(struct kp_sampler *s, int64_t seq);
json_t *kp_sampler_save(const struct kp_sampler *s);
/* The number of bad process rows skipped, or -1: no baseline at all. */
int kp_sampler_load(struct kp_sampler *s, json_t *saved);
void kp_sampler_free(struct kp_sampler *s);
/* command.c: rapl-read -- CMD's command record, read before the next scan. */
void kp_sampler_command(struct kp_sampler *s, const struct kp_record *rec);

/*
 * options.c: the sampling options of proc-cputime and kp-attribute, one
 * parser for both (proc-cputime(1)), and the sampler and the listeners
 * made from them.  A stage puts KP_SAMPLE_LONGOPTS in its getopt_long
 * table, "a" in its short options and KP_SAMPLE_HELP in its help, and
 * gives each option to kp_sample_option.
 */
struct kp_sample_opts {
	const char *procdir;		/* --proc */
	const char *cgroup_root;	/* --cgroup-root; NULL: by procdir */
	int emit_all;			/* -a */
	int exits;			/* KP_EXITS_*: --exited */
	long long keep_open;		/* --keep-open */
	long long taskstats_buffer;	/* --taskstats-buffer, bytes */
	const char *root;		/* --root: where names come from */
	const char *pods_log;		/* --pods-log; NULL: below the root */
	const char **podman;		/* --podman-root, in order */
	size_t npodman;
	struct kp_names *names;		/* made by kp_sample_new */
	const char *sysfs;		/* --sysfs; NULL: by procdir */
	int no_gpu;			/* --no-gpu */
};
#define KP_SAMPLE_OPTS_INIT { "/proc", NULL, 0, KP_EXITS_PARENT | \
    KP_EXITS_CGROUP | KP_EXITS_TASKSTATS, 2048, KP_TASKSTATS_RCVBUF, "/", \
    NULL, NULL, 0, NULL, NULL, 0 }
enum {
	KP_OPT_CGROUP_ROOT = 0x7f00, KP_OPT_EXITED, KP_OPT_KEEP_OPEN,
	KP_OPT_PODS_LOG, KP_OPT_PODMAN_ROOT, KP_OPT_PROC, KP_OPT_ROOT,
	KP_OPT_TASKSTATS_BUFFER, KP_OPT_NO_GPU, KP_OPT_SYSFS
};
#define KP_SAMPLE_LONGOPTS \
	{ "all", no_argument, NULL, 'a' }, \
	{ "cgroup-root", required_argument, NULL, KP_OPT_CGROUP_ROOT }, \
	{ "exited", required_argument, NULL, KP_OPT_EXITED }, \
	{ "keep-open", required_argument, NULL, KP_OPT_KEEP_OPEN }, \
	{ "no-gpu", no_argument, NULL, KP_OPT_NO_GPU }, \
	{ "pods-log", required_argument, NULL, KP_OPT_PODS_LOG }, \
	{ "podman-root", required_argument, NULL, KP_OPT_PODMAN_ROOT }, \
	{ "proc", required_argument, NULL, KP_OPT_PROC }, \
	{ "root", required_argument, NULL, KP_OPT_ROOT }, \
	{ "sysfs", required_argument, NULL, KP_OPT_SYSFS }, \
	{ "taskstats-buffer", required_argument, NULL, \
	    KP_OPT_TASKSTATS_BUFFER }
#define KP_SAMPLE_HELP \
	{ "-a, --all", "a record for every process, idle or not" }, \
	{ "--cgroup-root dir", "the cgroup file systems' mount point" }, \
	{ "--exited sources", "none, or parent,cgroup,taskstats" }, \
	{ "--keep-open count", "stat files kept open" }, \
	{ "--no-gpu", "no GPU time" }, \
	{ "--pods-log dir", "the kubelet's pod log directory" }, \
	{ "--podman-root dir", "also a podman storage root" }, \
	{ "--proc dir", "read dir instead of /proc" }, \
	{ "--root dir", "the node's files that names come from" }, \
	{ "--sysfs dir", "read dir's class/drm instead of /sys's" }, \
	{ "--taskstats-buffer bytes", "receive buffer for exit records" }
int kp_sample_option(struct kp_sample_opts *o, int ch, const char *arg);
struct kp_sampler *kp_sample_new(struct kp_sample_opts *o);
void kp_sample_exits(struct kp_sampler *s, const struct kp_sample_opts *o);
struct kp_exits *kp_sample_listen(struct kp_sampler *s,
    struct kp_sample_opts *o);
void kp_sample_poll(struct kp_clock *c, struct kp_exits *x);
void kp_sample_wait(struct kp_reader *r, struct kp_clock *c,
    struct kp_exits *x);
void kp_sample_free(struct kp_sample_opts *o);

/*
 * exit_taskstats.c: the kernel's exit records (taskstats), one fact per
 * process that ends, its threads folded, for the processes that live
 * between two scans of /proc (proc-cputime(1), "Exit accounting").  Needs
 * CAP_NET_ADMIN in the host's user, PID and network namespaces and a
 * kernel with CONFIG_TASKSTATS, CONFIG_TASK_DELAY_ACCT and records of
 * version 12 or later.
 */
struct kp_exit {
	pid_t pid;		/* the process (its thread group id) */
	pid_t ppid;		/* its parent at the end: the one that reaps */
	char comm[32];		/* its leader's, NUL-terminated */
	uint64_t cpu_ns;	/* all its threads', its whole life, once, */
				/* as the scheduler last counted it: short */
				/* of wait4's by its teardown, and up to a */
				/* tick if it computed to its end */
	uint64_t start_ticks;	/* its start at the latest, in /proc's */
	uint64_t start_min_ticks;	/* ticks; at the earliest */
	uint32_t threads;	/* thread records folded into it */
	const char *cgroup;	/* its cgroup file's text at its exec, from */
				/* the process events; NULL: unknown */
};
typedef void kp_exit_fn(const struct kp_exit *e, void *arg);
struct kp_taskstats_counts {
	uint64_t dropped;	/* records the socket dropped, buffer full */
	uint64_t unreadable;	/* messages that held no record we read */
	uint64_t forgotten;	/* processes let go at KP_LIVE_MAX held */
	uint64_t pending;	/* processes held: threads ended, not all */
	uint64_t rcvbuf_bytes;	/* the receive buffer the kernel gave */
};
#define KP_TASKSTATS_RCVBUF (8 << 20)	/* asked for by default */
struct kp_taskstats;
/*
 * Registers and proves it (a child's exit received, within 3 s): the
 * listener, or NULL with the reason in why.  rcvbuf_bytes 0: the default.
 * Exits before it returns are not reported.
 */
struct kp_taskstats *kp_taskstats_open(size_t rcvbuf_bytes, char *why,
    size_t whylen);
int kp_taskstats_fd(const struct kp_taskstats *ts);	/* to poll */
void kp_set_rcvbuf(int fd, size_t bytes);	/* any netlink listener's */
/* Every record queued, without blocking, a fact per process ended to fn;
 * 0, or -1 (errno) if reading failed. */
int kp_taskstats_drain(struct kp_taskstats *ts, kp_exit_fn *fn, void *arg);
int kp_taskstats_counts(struct kp_taskstats *ts,
    struct kp_taskstats_counts *c);	/* since open; -1: errno */
void kp_taskstats_close(struct kp_taskstats *ts);
/* 1 if /proc's starttime is that of the process e says ended. */
int kp_exit_same_start(const struct kp_exit *e, uint64_t starttime);
/* The same without a socket, on one datagram read at boot_ns. */
struct kp_taskstats *kp_taskstats_parser(uint16_t family);
void kp_taskstats_parse(struct kp_taskstats *ts, const void *buf, size_t len,
    int64_t boot_ns, kp_exit_fn *fn, void *arg);

/*
 * exec_cgroups.c: the cgroup each process ran in, from the kernel's process
 * events (the proc connector) read as they arrive.  Needs CAP_NET_ADMIN
 * before Linux 6.6, and the host's PID, user and network namespaces.
 */
struct kp_events;
#define KP_EVENTS_RCVBUF (8 << 20)	/* the process events' buffer */
/* Subscribed and proven (the ack, a child's exec, within 3 s), or NULL
 * with the reason in why.  procdir: the live /proc the pids are read in. */
struct kp_events *kp_events_open(const char *procdir, char *why,
    size_t whylen);
struct kp_events *kp_events_parser(const char *procdir);	/* no socket */
void kp_events_parse(struct kp_events *ev, const void *buf, size_t len);
int kp_events_fd(const struct kp_events *ev);
int kp_events_drain(struct kp_events *ev);	/* 0, or -1 (errno) */
const char *kp_events_cgroup(const struct kp_events *ev, pid_t pid);
void kp_events_cut(struct kp_events *ev);	/* a scan begins */
typedef void kp_ended_fn(pid_t pid, pid_t ppid, const char *cgroup,
    void *arg);
/* Those ended between the last two cuts: pid, parent, cgroup at exec. */
void kp_events_each_ended(struct kp_events *ev, kp_ended_fn *fn, void *arg);
/* Called at each process's exit event with its cgroup at exec, if known. */
typedef void kp_exit_cgroup_fn(const char *cgroup, void *arg);
void kp_events_on_exit(struct kp_events *ev, kp_exit_cgroup_fn *fn, void *arg);
uint64_t kp_events_lost(const struct kp_events *ev);	/* since open */
void kp_events_close(struct kp_events *ev);

/*
 * exit_queue.c: the exit facts a sampler has received and not yet used, from
 * a listener drained all the time; a scan cuts them into those received
 * before it began and those after.
 */
struct kp_exits *kp_exits_new(struct kp_taskstats *ts);	/* takes ts */
void kp_exits_set_events(struct kp_exits *x, struct kp_events *ev); /* takes */
int kp_exits_fd(const struct kp_exits *x);	/* to poll; -1: none */
void kp_exits_ready(struct kp_exits *x);	/* kp_exits_fd is readable */
void kp_exits_drain(struct kp_exits *x);
void kp_exits_add(struct kp_exits *x, const struct kp_exit *e);
void kp_exits_cut(struct kp_exits *x);
/* 1: the fact is used and let go; 0: kept.  before: it came before the cut */
typedef int kp_exits_fn(const struct kp_exit *e, int before, void *arg);
void kp_exits_each(struct kp_exits *x, kp_exits_fn *fn, void *arg);
const struct kp_exit *kp_exits_find(const struct kp_exits *x, pid_t pid);
void kp_exits_each_ended(struct kp_exits *x, kp_ended_fn *fn, void *arg);
void kp_exits_on_exit(struct kp_exits *x, kp_exit_cgroup_fn *fn, void *arg);
uint64_t kp_exits_dropped(struct kp_exits *x);	/* since the last call */
uint64_t kp_exits_events_lost(struct kp_exits *x);	/* the same */
int kp_exits_hearing(const struct kp_exits *x);	/* process events */
int kp_exits_listening(const struct kp_exits *x);
void kp_exits_free(struct kp_exits *x);

#endif
