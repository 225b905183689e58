/* kp: the one header of the shared library.  See kp-records(5). */
#ifndef KP_H
#define KP_H

#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>

/*
 * jansson ownership: a function that returns a json_t * gives the caller
 * one reference, which the caller releases exactly once with json_decref;
 * a function that takes a json_t * borrows it unless its name ends in
 * _new, in which case it takes (steals) the reference.
 */

/* Exit status, shared by every command and listed in every manual page. */
enum {
	KP_EXIT_OK = 0,		/* success */
	KP_EXIT_FAILURE = 1,	/* a system failure: I/O, memory, /proc */
	KP_EXIT_USAGE = 2,	/* bad command line */
	KP_EXIT_DATAERR = 3,	/* input lines were rejected (and skipped) */
	KP_EXIT_NOSOURCE = 4,	/* no usable energy source */
	KP_EXIT_NOPERM = 5	/* an energy counter exists but is unreadable */
};

/* Major and minor version of the record protocol written by this build. */
#define KP_PROTO_MAJOR 1
#define KP_PROTO_MINOR 1

/* parse.c: command-line numbers, checked and reported with errx(USAGE). */
long long kp_parse_int(const char *s, long long min, long long max,
    const char *what);
double kp_parse_double(const char *s, double min, double max,
    const char *what);
int64_t kp_parse_duration_us(const char *s, const char *what);

/* alloc.c: the one allocation family; out of memory is exit 1. */
void *kp_malloc(size_t n);
void *kp_calloc(size_t n, size_t size);
void *kp_reallocarray(void *p, size_t n, size_t size);
char *kp_strdup(const char *s);
char *kp_strndup(const char *s, size_t n);	/* s needs no NUL */
char *kp_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* clock.c */
int64_t kp_mono_us(void);		/* CLOCK_MONOTONIC in microseconds */
int64_t kp_wall_us(void);		/* CLOCK_REALTIME in microseconds */
int64_t kp_boot_ns(void);		/* CLOCK_BOOTTIME in nanoseconds */
void kp_format_ts(char *buf, size_t len, int64_t wall_us);
struct kp_clock {		/* a producer's intervals */
	int64_t interval_us;	/* between deadlines; 0: a one-shot run */
	int64_t start_us;	/* CLOCK_MONOTONIC: the baseline sample */
	int64_t seq;		/* the last interval ended; 0: none yet */
	int64_t end_us;		/* CLOCK_MONOTONIC: when it ended */
	int64_t wall_us;	/* CLOCK_REALTIME then, for its ts */
	int64_t dt_us;		/* its length */
	int poll_fd;		/* polled while it sleeps; -1: none */
	int (*ready)(void *arg);	/* poll_fd is readable: the fd next */
	void *ready_arg;
	int64_t poll_pause_us;	/* after ready, poll_fd is left alone */
	int64_t poll_quiet_us;	/* CLOCK_MONOTONIC: until then */
};
void kp_clock_start(struct kp_clock *c, int64_t interval_us);
int64_t kp_clock_deadline_us(const struct kp_clock *c);
void kp_clock_end(struct kp_clock *c);
int kp_clock_next(struct kp_clock *c, int64_t count);	/* 0: all ended */
void kp_clock_poll(struct kp_clock *c, int fd, int (*ready)(void *arg),
    void *arg, int64_t pause_us);
int kp_clock_resume(struct kp_clock *c, int64_t seq, int64_t stored_us,
    const char *path);
int kp_clock_stored_ok(int64_t seq, int64_t stored_us);

/* signal.c: SIGINT, SIGTERM and SIGHUP: the first ends the stream, the second
 * the stage. */
extern volatile sig_atomic_t kp_stop_signal;	/* the first one; 0: none */
void kp_signals_set(sigset_t *set);
void kp_signals_catch(void (*before_death)(void));	/* a filter's */
void kp_signals_producer(void);
const sigset_t *kp_signals_sleep_mask(void);	/* NULL: not a producer */

/* write.c: all record output goes through here. */
void kp_out_init(void);
void kp_out_raw(const char *line, size_t len);	/* len excludes '\n' */
void kp_out_bytes(const char *s, size_t len);	/* as they are */
void kp_out_flush(void);
void kp_out_hold(void);		/* until kp_out_release: written then */
void kp_out_release(void);
int kp_out_finish(int status);			/* checks stdout; exit code */
json_t *kp_rec_new(const char *type, int64_t seq);
struct kp_node;
void kp_out_header(const char *producer, const struct kp_node *node);
void kp_out_interval(int64_t seq, int64_t wall_us, int64_t dt_us);
struct kp_buf {			/* one record being built by hand */
	char *s;
	size_t len, cap;
};
void kp_buf_rec(struct kp_buf *b, const char *type, int64_t seq);
void kp_buf_add(struct kp_buf *b, const char *s, size_t n);
void kp_buf_int(struct kp_buf *b, const char *key, int64_t v);
void kp_buf_i64(struct kp_buf *b, int64_t v);		/* no key */
void kp_buf_string(struct kp_buf *b, const char *bytes);	/* no key */
void kp_buf_printf(struct kp_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void kp_buf_real(struct kp_buf *b, const char *key, double v);
double kp_watts(int64_t energy_uj, int64_t dt_us);	/* 0 if dt_us <= 0 */
double kp_usage_ratio(int64_t part, int64_t whole);	/* in [0, 1] */
void kp_buf_bool(struct kp_buf *b, const char *key, int v);
void kp_buf_text(struct kp_buf *b, const char *key, const char *bytes);
void kp_buf_raw(struct kp_buf *b, const char *key, const char *val,
    size_t len);
void kp_out_buf(struct kp_buf *b);		/* closes, writes, empties */

/* utf8.c */
size_t kp_utf8_len(const unsigned char *s);	/* 0: not valid UTF-8 */
char *kp_utf8_put(char *p, const unsigned char **s);	/* or U+FFFD */
json_t *kp_json_text(const char *bytes);	/* any bytes, as valid UTF-8 */

/*
 * record.c: the one reader of a record stream, kp-records(5) version 1.x.
 * Every stage that reads a stream reads it here, so that every stage takes
 * the same decision on the same line.  A record is valid until the next
 * read: its line, its fields and their strings live in the reader.
 */
#define KP_LINE_MAX (16 << 20)		/* bytes in one line */
#define KP_MEMBERS_MAX 4096		/* members of one object */
#define KP_DEPTH_MAX 64			/* nesting, the record's object included */
#define KP_SEQ_AHEAD_MAX 1000000	/* past the last interval ended */
/* energy_uj and cpu_us of a record: 8 of them sum within INT64_MAX */
#define KP_AMOUNT_MAX ((int64_t)1 << 60)
enum { KP_V_NULL, KP_V_FALSE, KP_V_TRUE, KP_V_INT, KP_V_REAL, KP_V_STR,
    KP_V_OBJECT, KP_V_ARRAY };
struct kp_field {
	const char *key;	/* unescaped, NUL-terminated */
	size_t keylen;
	int kind;		/* KP_V_* */
	const char *raw;	/* the value as written in the line */
	size_t rawlen;		/* (a string's quotes included) */
	const char *str;	/* KP_V_STR: unescaped, NUL-terminated */
	size_t len;		/* KP_V_STR: bytes of str */
	int64_t i;		/* KP_V_INT */
};
struct kp_record {
	const char *type;	/* the "type" string */
	int64_t seq;
	const char *line;	/* as read, less '\n' and a trailing '\r' */
	size_t len;
	long lineno;
	const struct kp_field *f;	/* the members, in the line's order */
	size_t nf;
	int64_t cut_seq;	/* >= 0: interval cut_seq ended without its */
				/* interval record before this one (reported) */
};
struct kp_reader;
struct kp_reader *kp_reader_open(int fd, const char *name);
struct kp_reader *kp_reader_open_mem(const char *buf, size_t len,
    const char *name);
void kp_reader_set_wait(struct kp_reader *r,
    void (*wait)(int fd, void *arg), void *arg);
/*
 * 1: the next record is in rec; 0: the input has ended; -1: a line broke a
 * rule, which kp_reader_why names (kp_reader_fatal: no more can be read,
 * as for another major version).  A read error is exit 1.
 */
int kp_reader_read(struct kp_reader *r, struct kp_record *rec);
const char *kp_reader_why(const struct kp_reader *r);
int kp_reader_fatal(const struct kp_reader *r);
/* As kp_reader_read, reporting and counting each bad line; fatal: exit 3. */
int kp_reader_next(struct kp_reader *r, struct kp_record *rec);
/* A stage's own complaint about the current line: reported and counted. */
void kp_reader_reject(struct kp_reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/*
 * The same, for a record just read that the stage leaves out by a rule of
 * its own: it is untaken, so that the ordering is as if the line had not
 * been read, as it is in the stages after (kp-records(5)).
 */
void kp_reader_refuse(struct kp_reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int kp_reader_errors(const struct kp_reader *r);
long kp_reader_lineno(const struct kp_reader *r);
int64_t kp_reader_open_seq(const struct kp_reader *r);	/* -1: none open */
void kp_reader_close(struct kp_reader *r);
/* Members of a record read; NULL, 0 or NAN when absent or of another kind. */
const struct kp_field *kp_rec_get(const struct kp_record *rec,
    const char *key);
int kp_rec_int(const struct kp_record *rec, const char *key, int64_t *v);
const char *kp_rec_str(const struct kp_record *rec, const char *key);
int kp_rec_terminated(const struct kp_record *rec);	/* "state" says so */
double kp_rec_number(const struct kp_record *rec, const char *key);
double kp_field_number(const struct kp_field *f);
int kp_members_count(const char *text);	/* ,"k":v...; -1: not that */
/* fields.c: kp-records(5)'s types; NULL, or what the member should be. */
const char *kp_field_wrong(const struct kp_field *f);
int64_t kp_field_max(const char *key);	/* the most an integer may be */


/* zones.c */
#define KP_ZONE_NAME_MAX 31
int kp_zone_name_ok(const char *name, size_t len);
/*
 * The zones a stage has seen, in order of first sight; kp_zone_index gives
 * -1 for a name of more than 31 bytes, -2 for one more than KP_ZONES_MAX.
 */
#define KP_ZONES_MAX 64
struct kp_zones {
	char name[KP_ZONES_MAX][32];
	size_t n;
	int socket_keys;	/* names may be kp-attribute's zone/socket */
};
int kp_zone_index(struct kp_zones *zs, const char *name, size_t len);
/* Per-zone integers as a saved object {"zone": n, ...}, zeros left out. */
json_t *kp_zones_save(const struct kp_zones *zs, const int64_t *v);
void kp_zones_load(struct kp_zones *zs, json_t *obj, int64_t *v);

/* cpuinfo.c: the node's identity, for a producer's header. */
struct kp_cpu {			/* one processor of /proc/cpuinfo */
	int64_t processor;
	char *vendor_id;	/* NULL: unknown */
	char *model_name;	/* NULL: unknown */
	int64_t physical_id;	/* -1: unknown */
	int64_t core_id;	/* -1: unknown */
};
struct kp_node {
	char *name;		/* NULL: unknown */
	struct kp_cpu *cpus;
	size_t ncpus;
};
size_t kp_cpuinfo_parse(FILE *f, struct kp_cpu **cpus);
void kp_cpus_free(struct kp_cpu *cpus, size_t n);
void kp_node_identify(struct kp_node *node, const char *name,
    const char *procdir);
void kp_node_free(struct kp_node *node);

/* procfs.c: parsing /proc. */
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
int kp_parse_boot_id(char *buf);	/* cuts buf at its newline */
int kp_parse_u64(const char *p, uint64_t max, uint64_t *v);	/* 0 or -2 */
/* 0; -1 for a line cut short; -2 for a bad pid, number, or counter. */
int kp_parse_pid_stat(const char *buf, struct kp_pid_stat *ps);
int kp_read_pid_stat(int procfd, const char *pid, struct kp_pid_stat *ps);
int kp_open_pid_stat(int procfd, const char *pid);	/* -1: gone */
int kp_pread_pid_stat(int fd, struct kp_pid_stat *ps);	/* -1: ESRCH, ... */
int kp_read_proc(int procfd, const char *path, char *buf, size_t len);
char *kp_read_exe(int procfd, pid_t pid);	/* NULL: none readable */
int64_t kp_ticks_to_us(uint64_t ticks);
uint64_t kp_ticks_per_s(void);		/* clock ticks (USER_HZ) */
int kp_read_file(int dirfd, const char *path, char *buf, size_t len);
int kp_read_boot_id(const char *procdir, char *buf, size_t len);

/* jsonfile.c: JSON files in blocks, not a byte or a token per system call. */
json_t *kp_json_loadfd(int fd, json_error_t *jerr);	/* new; NULL: not JSON */
int kp_json_dumpfd(const json_t *root, int fd);	/* a line; -1: errno */

/* cgroup.c: who a process belongs to, from its cgroup path. */
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
	int vm_from_scope;	/* vm_id is a libvirt machine scope's name */
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
 * cgcpu.c: cgroup CPU counters, the truth for groups (D3), in the one
 * hierarchy of a host that accounts CPU time.  A node is a cgroup; its
 * figures are those of the latest read, and of the interval it ended.
 */
struct kp_cgnode {
	char *path;			/* in the hierarchy; "/" is its root */
	struct kp_cgnode *parent;	/* NULL for the root */
	struct kp_identity id;		/* from the path */
	int depth;
	unsigned gen;			/* the read that last wanted it */
	int counted;			/* it has a counter of tasks alone */
	int have_last, have_delta;	/* read now; and at the read before */
	int64_t last_us, delta_us;	/* the counter, and its growth */
	int64_t carry_us;		/* its records ahead of its counter */
	int64_t procs_us, detail_us;	/* charged: records, and detail */
	unsigned nrounded;		/* how many figures were charged */
	int64_t excl_us;		/* its growth less its counted children's */
	int64_t kept_us, taken_us;	/* the detail it leaves, handed out */
	int64_t residue_us;		/* what nothing else explains */
	int64_t excess_us;		/* detail cut, and records ahead */
};
struct kp_cgcpu;
struct kp_cgcpu *kp_cgcpu_open(const char *root);	/* NULL: no counters */
void kp_cgcpu_free(struct kp_cgcpu *c);
struct kp_cgnode *kp_cgcpu_node(struct kp_cgcpu *c, const char *text);
struct kp_cgnode *kp_cgcpu_node_at(struct kp_cgcpu *c, const char *path);
void kp_cgcpu_want(struct kp_cgcpu *c, struct kp_cgnode *n);
void kp_cgcpu_read(struct kp_cgcpu *c);
void kp_cgcpu_charge(struct kp_cgnode *n, int64_t procs_us, int64_t detail_us);
void kp_cgcpu_settle(struct kp_cgcpu *c);
int64_t kp_cgcpu_take(struct kp_cgnode *n, int64_t detail_us);
void kp_cgcpu_each(struct kp_cgcpu *c,
    void (*fn)(const struct kp_cgnode *n, void *arg), void *arg);
struct kp_cgnode *kp_cgcpu_make(struct kp_cgcpu *c, const char *text,
    const char *name);
int kp_cgcpu_move(const struct kp_cgcpu *c, const struct kp_cgnode *n,
    pid_t pid);
int kp_cgcpu_usage(const struct kp_cgcpu *c, const struct kp_cgnode *n,
    int64_t *usage_us);
int kp_cgcpu_remove(const struct kp_cgcpu *c, const struct kp_cgnode *n);
json_t *kp_cgcpu_save(const struct kp_cgcpu *c);
void kp_cgcpu_load(struct kp_cgcpu *c, json_t *rows);
/* The counter files' text: 0, or -1 if it is not that file's. */
int kp_parse_cpu_stat_usage(const char *buf, int64_t *usage_us);
int kp_parse_cpuacct_usage(const char *buf, int64_t *usage_us);

/* process.c: a process's key in a stage's tables, "pid:starttime". */
#define KP_PROC_KEY_MAX 48
void kp_proc_key(char *buf, size_t len, int64_t pid, int64_t starttime);
int kp_proc_key_parse(const char *key, int64_t *pid, int64_t *starttime);

/* map.c: a string-keyed hash map of owned void * values. */
struct kp_map;
struct kp_map *kp_map_new(void);
void *kp_map_get(struct kp_map *m, const char *key);
void kp_map_put(struct kp_map *m, const char *key, void *val);
void *kp_map_remove(struct kp_map *m, const char *key);
/* Visit every entry; the callback may not change the map. */
void kp_map_each(struct kp_map *m,
    void (*fn)(const char *key, void *val, void *arg), void *arg);
void kp_map_each_sorted(struct kp_map *m,	/* by key, as strcmp(3) */
    void (*fn)(const char *key, void *val, void *arg), void *arg);
void kp_map_free(struct kp_map *m, void (*free_val)(void *));
size_t kp_map_count(const struct kp_map *m);
void kp_map_sweep(struct kp_map *m, int (*gone)(void *val, void *arg),
    void *arg, void (*free_val)(void *));

/*
 * liveness.c (D2): a stream that never says a workload ended holds at most
 * KP_LIVE_MAX of them; beyond, those seen least recently are let go.
 */
#define KP_LIVE_MAX 20000
int64_t kp_live_cut(int64_t *last_seq, size_t n, size_t keep);

/* sampler.c: node and per-process CPU time between two scans of /proc. */
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

/*
 * taskstats.c: the kernel's exit records (taskstats), one fact per process
 * that ends, its threads folded, for the processes that live between two
 * scans of /proc (DECISIONS.md D3).  Needs CAP_NET_ADMIN in the host's
 * user, PID and network namespaces and a kernel with CONFIG_TASKSTATS,
 * CONFIG_TASK_DELAY_ACCT and records of version 12 or later.
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
 * exits.c: the exit facts a sampler has received and not yet used, from
 * a listener drained all the time; a scan cuts them into those received
 * before it began and those after.
 */
struct kp_exits *kp_exits_new(struct kp_taskstats *ts);	/* takes ts */
int kp_exits_fd(const struct kp_exits *x);	/* to poll; -1: none */
void kp_exits_drain(struct kp_exits *x);
void kp_exits_add(struct kp_exits *x, const struct kp_exit *e);
void kp_exits_cut(struct kp_exits *x);
/* 1: the fact is used and let go; 0: kept.  before: it came before the cut */
typedef int kp_exits_fn(const struct kp_exit *e, int before, void *arg);
void kp_exits_each(struct kp_exits *x, kp_exits_fn *fn, void *arg);
const struct kp_exit *kp_exits_find(const struct kp_exits *x, pid_t pid);
uint64_t kp_exits_dropped(struct kp_exits *x);	/* since the last call */
int kp_exits_listening(const struct kp_exits *x);
void kp_exits_free(struct kp_exits *x);

/* state.c: --state FILE, locked, replaced atomically. */
int kp_replaced_open(const char *path, const char *instead);	/* -1: none */
char *kp_replaced_temp(const char *path, const char *tag);
void kp_replaced_clean(const char *path, const char *tag, int64_t min_age_s);
struct kp_state;
struct kp_state *kp_state_open(const char *path, const char *procdir,
    const char *kind);
json_t *kp_state_data(struct kp_state *st);	/* borrowed; NULL if none */
json_t *kp_state_data_any_boot(struct kp_state *st);
void kp_state_prepare_new(struct kp_state *st, json_t *data);
void kp_state_commit(struct kp_state *st);
/* A filter's: its output held for the state of each interval (D5). */
void kp_state_hold(const struct kp_state *st);
int kp_state_due(const struct kp_state *st);
void kp_state_interval_end(struct kp_state *st, json_t *data);
int kp_state_pending(const struct kp_state *st);
void kp_state_end(struct kp_state *st, json_t *data);
void kp_state_close(struct kp_state *st);
void kp_state_need_input(const struct kp_state *st, long lines_read);
int kp_json_int(json_t *obj, const char *key, int64_t *val);	/* 0: none */
const char *kp_json_str(json_t *obj, const char *key);	/* borrowed */

#endif
