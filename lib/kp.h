/*
 * kp: the one header of the record protocol that every stage speaks (see
 * kp-records(5)); the stages that scan /proc add lib/proc/proc.h.
 */
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
	KP_EXIT_NOPERM = 5	/* a counter is unreadable, a BMC refuses us */
};

/* Major and minor version of the record protocol written by this build. */
#define KP_PROTO_MAJOR 1
#define KP_PROTO_MINOR 2

/* parse.c: command-line numbers, checked and reported with errx(USAGE). */
long long kp_parse_int(const char *s, long long min, long long max,
    const char *what);
double kp_parse_double(const char *s, double min, double max,
    const char *what);
int64_t kp_parse_duration_us(const char *s, const char *what);
int64_t kp_parse_joules_uj(const char *s, const char *what);

/*
 * usage.c: -h and --help print the usage and one line per option on
 * standard output, exit 0; --version prints "prog VERSION"; a misuse says
 * what was wrong (fmt NULL: getopt has said it) and exits 2.
 */
#define KP_OPT_VERSION 0x7fff	/* getopt_long's val for --version */
struct kp_option_help {
	const char *flags;	/* "-i, --interval duration"; NULL: the end */
	const char *what;
};
struct kp_usage {
	const char *synopsis;	/* as SYNOPSIS, the name first; \n wraps */
	const struct kp_option_help *options;
};
void kp_usage_help(const struct kp_usage *u) __attribute__((noreturn));
void kp_usage_error(const struct kp_usage *u, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));
void kp_usage_no_operand(const struct kp_usage *u, int argc, char *argv[]);
void kp_usage_version(void) __attribute__((noreturn));
void kp_usage_option(const struct kp_usage *u, int ch)
    __attribute__((noreturn));
/* A name not in names (NULL-terminated): "unknown what 'name' (a, b)". */
void kp_usage_unknown(const char *what, const char *name,
    const char *const *names) __attribute__((noreturn));

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
int64_t kp_file_time_ns(void);		/* as a file's ctime, nanoseconds */
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
};
void kp_clock_start(struct kp_clock *c, int64_t interval_us);
int64_t kp_clock_deadline_us(const struct kp_clock *c);
void kp_clock_end(struct kp_clock *c);
int kp_clock_next(struct kp_clock *c, int64_t count);	/* 0: all ended */
void kp_clock_poll(struct kp_clock *c, int fd, int (*ready)(void *arg),
    void *arg);
int kp_clock_resume(struct kp_clock *c, int64_t seq, int64_t stored_us,
    const char *path);
int kp_clock_stored_ok(int64_t seq, int64_t stored_us);
void kp_clock_wait_input(int fd, void *clock);	/* a kp_reader wait */
struct kp_clock_opts {		/* a producer's -i and -n */
	int64_t interval_us;	/* -i */
	long long count;	/* -n; 0: until a signal */
	int given;		/* either was */
};
#define KP_CLOCK_OPTS_INIT { 1000000, 0, 0 }
void kp_clock_option(struct kp_clock_opts *o, int ch, const char *arg);
void kp_clock_opts_check(const struct kp_clock_opts *o,
    const char *statepath);

/* signal.c: SIGINT, SIGTERM and SIGHUP: the first ends the stream, the second
 * the stage. */
extern volatile sig_atomic_t kp_stop_signal;	/* the first one; 0: none */
void kp_signals_set(sigset_t *set);
void kp_signals_catch(void (*before_death)(void));	/* a filter's */
void kp_signals_producer(void);
const sigset_t *kp_signals_sleep_mask(void);	/* NULL: not a producer */
void kp_signals_at_once(void);	/* the first signal ends the stage too */

/*
 * spool.c: texts added one after another and read back in that order: the
 * last mebibyte in memory, the rest in an unlinked file of $TMPDIR.  A
 * failed write there is exit 1.
 */
struct kp_spool {
	int fd;			/* -1 until the memory is full */
	size_t flushed;		/* bytes in the file */
	char *tail;		/* the bytes after them */
	size_t ntail;
	char *win;		/* some of the file's, read back */
	size_t winoff, nwin, capwin;
};
#define KP_SPOOL_INIT { -1, 0, NULL, 0, NULL, 0, 0, 0 }
size_t kp_spool_add(struct kp_spool *sp, const char *s, size_t len);
const char *kp_spool_get(struct kp_spool *sp, size_t off, size_t len);
void kp_spool_lines(struct kp_spool *sp,	/* lines added whole; no '\n' */
    void (*out)(const char *line, size_t len, void *arg), void *arg);
void kp_spool_each(struct kp_spool *sp,
    void (*out)(const char *s, size_t len));
void kp_spool_clear(struct kp_spool *sp);
void kp_spool_free(struct kp_spool *sp);

/* write.c: all record output goes through here. */
void kp_out_init(void);
void kp_out_raw(const char *line, size_t len);	/* len excludes '\n' */
void kp_out_bytes(const char *s, size_t len);	/* as they are */
void kp_out_flush(void);
void kp_out_hold(void);		/* until kp_out_release: written then */
void kp_out_release(void);
int kp_out_finish(int status);			/* checks stdout; exit code */
struct kp_node;
void kp_out_header(const char *producer, const struct kp_node *node,
    const char *command);	/* command: NULL but for rapl-read -- CMD */
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
void kp_buf_bool(struct kp_buf *b, const char *key, int v);
void kp_buf_text(struct kp_buf *b, const char *key, const char *bytes);
void kp_buf_raw(struct kp_buf *b, const char *key, const char *val,
    size_t len);
void kp_out_buf(struct kp_buf *b);		/* closes, writes, empties */

/* energy.c */
double kp_watts(int64_t energy_uj, int64_t dt_us);	/* 0 if dt_us <= 0 */
double kp_usage_ratio(int64_t part, int64_t whole);	/* in [0, 1] */
int64_t kp_muldiv(int64_t a, int64_t b, int64_t c, uint64_t *rem);
int64_t kp_active_uj(int64_t energy_uj, int64_t cpu_us, int64_t total_cpu_us);
/* Who a share is for, in the order a tie in rounding favours them. */
enum kp_share_rank { KP_RANK_PROCESS, KP_RANK_EXITED, KP_RANK_UNATTRIBUTED };
/* One share of a zone's energy, and what rounding left of it. */
struct kp_share {
	int64_t cpu_us;		/* the weight */
	int64_t active_uj, idle_uj;
	uint64_t rem;		/* the fraction's numerator, for rounding */
	enum kp_share_rank rank;
	int64_t pid, starttime;	/* exited: 0 and its place in the interval */
};
void kp_split_uj(int64_t uj, struct kp_share *shares, size_t n, int idle,
    struct kp_share **order);

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
/* prog: name:lineno: what, for a complaint made after the read; 0: no line. */
void kp_warn_line(const char *name, long lineno, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int kp_reader_errors(const struct kp_reader *r);
long kp_reader_lineno(const struct kp_reader *r);
void kp_reader_close(struct kp_reader *r);
/* Members of a record read; NULL, 0 or NAN when absent or of another kind. */
const struct kp_field *kp_rec_get(const struct kp_record *rec,
    const char *key);
int kp_rec_int(const struct kp_record *rec, const char *key, int64_t *v);
const char *kp_rec_str(const struct kp_record *rec, const char *key);
int kp_rec_terminated(const struct kp_record *rec);	/* "state" says so */
double kp_rec_number(const struct kp_record *rec, const char *key);
int kp_members_count(const char *text);	/* ,"k":v...; -1: not that */
/* fields.c: kp-records(5)'s types; NULL, or what the member should be. */
const char *kp_field_wrong(const struct kp_field *f);
double kp_field_number(const struct kp_field *f);	/* NAN: no number */
int64_t kp_field_max(const char *key);	/* the most an integer may be */
int kp_integer_value(const char *p, const char *end, int64_t *v);
/* A member of an object of numbers by device, as gpu_us (kp-records(5)). */
struct kp_member {
	const char *key;	/* as written, without its quotes */
	size_t keylen;
	struct kp_field num;	/* kind KP_V_INT or KP_V_REAL, raw */
};
int kp_object_next(const char *raw, size_t rawlen, size_t *pos,
    struct kp_member *m);
int64_t kp_device_us(const char *raw, size_t rawlen, const char *device);


/* zones.c */
#define KP_ZONE_NAME_MAX 31
int kp_zone_name_ok(const char *name, size_t len);
/* A GPU's device name: short enough that "gpu/<device>" is a zone key. */
#define KP_DEVICE_NAME_MAX 27
int kp_device_name_ok(const char *name, size_t len);
/* zonekey.c: a record's zone key, zone, zone/socket (sockets), gpu/device */
int kp_zone_is_gpu(const char *key);
int kp_zone_key(const struct kp_record *rec, int sockets, char *buf,
    size_t len);
void kp_buf_zone(struct kp_buf *b, const char *key);
/* cpu_us, or a GPU's {"<device>": gpu_us}, of a record of zone key */
void kp_buf_zone_us(struct kp_buf *b, const char *key, int64_t us);
int64_t kp_rec_zone_us(const struct kp_record *rec, const char *key);
/* 1.1's "meter" as 1.2's "platform"; NULL: a name 1.2 keeps. */
const char *kp_zone_1_2(const char *name, size_t *len, const char **json);
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
struct kp_jw;
void kp_zones_write(struct kp_jw *w, const struct kp_zones *zs,
    const int64_t *v);
void kp_zones_load(struct kp_zones *zs, json_t *obj, int64_t *v);

/*
 * The node's identity, which a producer's header carries (kp-records(5),
 * "Record type header"); lib/proc/cpuinfo.c reads it from /proc.
 */
struct kp_cpu {			/* one processor of /proc/cpuinfo */
	int64_t processor;
	char *vendor_id;	/* NULL: unknown */
	char *model_name;	/* NULL: unknown */
	int64_t physical_id;	/* -1: unknown */
	int64_t core_id;	/* -1: unknown */
	/* What it is, -1 where unknown: x86's, or arm64's codes. */
	int64_t family, model, stepping;
	int64_t implementer, part;
	int hypervisor;		/* "hypervisor" among its flags */
};
struct kp_node {
	char *name;		/* NULL: unknown */
	struct kp_cpu *cpus;
	size_t ncpus;
};

/* readfile.c: a small file whole, NUL-terminated; its length, or -1 (errno). */
int kp_read_file(int dirfd, const char *path, char *buf, size_t len);
int kp_vpathf(char *buf, size_t len, const char *fmt, va_list ap);

/* jsonfile.c: JSON files in blocks, not a byte or a token per system call. */
json_t *kp_json_loadfd(int fd, json_error_t *jerr);	/* new; NULL: not JSON */
/* A JSON line written to fd value by value, never whole in memory. */
struct kp_jw {
	struct kp_buf b;
	int fd, failed, saved_errno, after_key, depth;
	unsigned more;		/* bit d: depth d has a value already */
};
void kp_jw_init(struct kp_jw *w, int fd);
void kp_jw_open(struct kp_jw *w, char brace);	/* '{' or '[' */
void kp_jw_close(struct kp_jw *w, char brace);	/* '}' or ']' */
void kp_jw_key(struct kp_jw *w, const char *key);
void kp_jw_int(struct kp_jw *w, int64_t v);
void kp_jw_string(struct kp_jw *w, const char *bytes);
void kp_jw_json(struct kp_jw *w, const json_t *v);	/* borrowed */
int kp_jw_finish(struct kp_jw *w);		/* -1: errno */
/* A JSON file read a value at a time, from an offset, never whole. */
struct kp_js {
	int fd, failed;
	char *buf;
	size_t pos, len, cap, mark;	/* bytes from mark on are kept */
	off_t off;			/* buf[0]'s in the file */
	long depth;			/* objects and arrays s is inside */
	long piece_depth;		/* the last value's, as jansson counts */
	size_t block, piece;		/* a read's size, a piece's most: the */
};					/* fuzz harness makes them small */
/* An entry of an object (key) or array (key NULL), s at its value. */
typedef int kp_js_entry(struct kp_js *s, const char *key, void *arg);
void kp_js_init(struct kp_js *s, int fd, off_t off);
void kp_js_free(struct kp_js *s);
off_t kp_js_tell(struct kp_js *s);		/* the next value's offset */
json_t *kp_js_value(struct kp_js *s);		/* new; NULL: not JSON */
int kp_js_skip(struct kp_js *s);		/* -1: ends early */
int kp_js_each(struct kp_js *s, kp_js_entry *fn, void *arg);	/* -1 */
int kp_js_check(struct kp_js *s);		/* -1: not JSON */
int kp_js_end(struct kp_js *s);			/* -1: more than space */
int kp_json_int(json_t *obj, const char *key, int64_t *val);	/* 0: none */
const char *kp_json_str(json_t *obj, const char *key);	/* borrowed */

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
 * liveness.c: a stream that never says a workload ended holds at most
 * KP_LIVE_MAX of them; beyond, those seen least recently are let go.
 */
#define KP_LIVE_MAX 20000

/*
 * How long a VM gone from the stream keeps its totals (kp-aggregate(1))
 * and its powercap tree (kp-fmt(1)): a guest restarted, shut down for the
 * night or moved back, comes again under the same uuid and goes on.
 */
#define KP_VM_KEEP_US (INT64_C(86400) * 1000000)
int64_t kp_live_cut(int64_t *last_seq, size_t n, size_t keep);
/*
 * A stage's workloads: map's values each hold the seq of their last
 * record at seq_off; one let go is given to leave (if not NULL), then to
 * free_val; fate says what befalls them.  The rest is the sweep's own.
 */
struct kp_live {
	struct kp_map *map;
	size_t seq_off;
	void (*leave)(void *val, void *arg);
	void *leave_arg;
	void (*free_val)(void *val);
	const char *fate;
	int told;		/* the warning was given */
	int64_t cut, *seqs;
	size_t nseqs;
	int64_t full_seq;	/* the interval that alone fills the bound */
};
void kp_live_sweep(struct kp_live *l, int dense, int64_t seq);
void kp_live_admit(struct kp_live *l, int dense, int64_t seq,
    const char *name, long lineno);

/* state.c: --state FILE, locked, replaced atomically. */
int kp_replaced_open(const char *path, const char *instead);	/* -1: none */
char *kp_replaced_temp(const char *path, const char *tag);
void kp_replaced_clean(const char *path, const char *tag, int64_t min_age_s);
int kp_replaced_writeat(int dirfd, const char *name, const char *tmp,
    const char *text, size_t len, mode_t mode);	/* -1 with errno */
struct kp_state;
struct kp_state *kp_state_open(const char *path, const char *procdir,
    const char *kind);
int kp_state_has(const struct kp_state *st, int any_boot);
/* A path into the stored data: member names, from the data's own. */
#define KP_STATE_PATH(...) ((const char *const []){ __VA_ARGS__, NULL })
int kp_state_opens(struct kp_state *st, const char *const *path); /* '{' */
json_t *kp_state_get(struct kp_state *st, const char *const *path); /* new */
/* An entry of the stored data: an object's member (key) or an element. */
typedef void kp_state_entry(const char *key, json_t *val, void *arg);
int kp_state_each(struct kp_state *st, const char *const *path,
    kp_state_entry *fn, void *arg);		/* -1: no object, no array */
json_t *kp_state_data(struct kp_state *st);	/* borrowed; NULL if none */
json_t *kp_state_data_any_boot(struct kp_state *st);
void kp_state_loaded(struct kp_state *st);	/* the file let go */
/* Writes a state's data, a JSON value, for kp_state_*_by. */
typedef void kp_state_writer(struct kp_jw *w, void *arg);
void kp_state_prepare_new(struct kp_state *st, json_t *data);
void kp_state_commit(struct kp_state *st);
/* A filter's: its output held for the state of each interval. */
void kp_state_hold(const struct kp_state *st);
int kp_state_due(const struct kp_state *st);
void kp_state_interval_end(struct kp_state *st, json_t *data);
void kp_state_interval_end_by(struct kp_state *st, kp_state_writer *write,
    void *arg);
int kp_state_pending(const struct kp_state *st);
void kp_state_end(struct kp_state *st, json_t *data);
void kp_state_end_by(struct kp_state *st, kp_state_writer *write, void *arg);
void kp_state_close(struct kp_state *st);
void kp_state_need_input(const struct kp_state *st, long lines_read);
int kp_parse_boot_id(char *buf);	/* cuts buf at its newline; 0 or -1 */

#endif
