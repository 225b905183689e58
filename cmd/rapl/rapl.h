/*
 * rapl-read's parts, behind this one header as OpenBSD sort's are:
 *
 *	main.c		the options, --list, and the mode
 *	source.c	the table of sources: which run, their zones, and
 *			what the sources that read sysfs share
 *	powercap.c	source powercap: the kernel's RAPL zones
 *	hwmon.c		source hwmon: ACPI power meters, GPU meters
 *	redfish.c	source redfish: a BMC's power, over HTTPS
 *	ipmi.c		source ipmi: a BMC's DCMI power, through ipmitool
 *	nvml.c		source nvml: NVIDIA GPUs, through libnvidia-ml
 *	bmc.c		what the BMC sources share: readings beside the
 *			clock, integrated to energy
 *	model.c		source model: an estimate from /proc/stat
 *	estimate.c	its watts: a row of the table fitted to SPECpower
 *	modeltable.c	that table, made by scripts/fit-model
 *	sample.c	a sample, the interval's energy, and the records
 *	command.c	-- CMD: the command's tree, measured
 *	state.c		--state: the sample kept across runs
 *
 * A source is one file and one line of the table in source.c.
 */
#ifndef RAPL_H
#define RAPL_H

#include <getopt.h>
#include <limits.h>

#include "proc/proc.h"

#define NO_SOCKET	(-1)	/* psys, a power meter: the whole node */
#define ANY_SOCKET	(-2)

/*
 * The most a RAPL counter plausibly counts: a 500 W server package.  A
 * counter may wrap twice, unseen, in an interval longer than its range
 * at this power.
 */
#define MAX_ZONE_WATTS	500

/*
 * A step no counter can make: more energy than MAX_STEP_WATTS over the
 * interval, forwards or through a wrap, is a counter that was reset or
 * replaced, or a value read wrong, not energy.
 */
#define MAX_STEP_WATTS	(4 * MAX_ZONE_WATTS)

/* The long option of every source's own options (see struct source). */
#define OPT_SOURCE_OWN	512

/* What one read of a member gives, in its cur. */
enum reading {
	READ_ENERGY_UJ,		/* a counter of uJ that wraps at max_uj */
	READ_POWER_UW,		/* the power at the read, in uW */
	READ_MEAN_POWER_UW,	/* the mean power since the last read, uW */
	READ_INTEGRAL_UJ	/* uJ a source integrated itself: no wrap */
};

struct meter;
struct member;

/*
 * A source of energy figures: one file, one entry of the table in
 * source.c.  open adds its members (one per zone and socket) to the
 * meter and returns 0, or an exit status with the reason in why; read
 * returns 0 with the member's cur set, -1 with errno, or 1 where there
 * is no figure this time and the source has said why; close runs at
 * every exit.  option is called once more, with NULL, after the last
 * option, to check its options together.  What is NULL is not needed.
 */
struct source {
	const char *name;
	const char *what;		/* "RAPL zones", for messages */
	const char *denied_hint;	/* what to do when a read is denied */
	int estimates;			/* an estimate, not a measure */
	int in_auto;			/* --source auto may choose it */
	int apart;			/* a record per member: a GPU's */
	const struct option *options;	/* its own, val OPT_SOURCE_OWN */
	void (*option)(const char *name, const char *arg);
	int (*open)(struct meter *m, char *why, size_t len);
	int (*read)(struct member *mb, int64_t deadline_us);
	void (*fields)(struct kp_buf *b, const struct member *one,
	    size_t counters);		/* sockets, path and its own */
	void (*describe)(char *buf, size_t len);	/* for --list */
	void (*close)(void);
	void (*save)(json_t *data);	/* --state: its own sample */
	int (*load)(json_t *data);	/* 0, or -1 if unusable */
};

/* One counter: one zone of one socket or die, such as package-1, or a meter. */
struct member {
	const struct source *src;
	char key[NAME_MAX + 1];		/* its entry: "intel-rapl:1", "hwmon2" */
	char zone[NAME_MAX + 1];	/* its name less the socket: "package" */
	int socket;			/* or NO_SOCKET */
	char device[64];		/* zone gpu: its device key, "0000:03:00.0" */
	int enabled;			/* its power limit's; -1: not said */
	char dup_of[NAME_MAX + 1];	/* the entry it repeats, if any */
	int wanted;			/* read and reported */
	enum reading reading;
	char where[PATH_MAX];		/* what is read: a file, for messages */
	int fd;				/* where, kept open; -1: none */
	int reopen;			/* opened anew for each read */
	const char *host;		/* the VM host measuring, or NULL */
	char bad[PATH_MAX];		/* what failed at the start */
	int errnum;			/* and why */
	int warned;			/* a failed read said */
	int warned_step;		/* an impossible step said */
	uint64_t max_uj;		/* READ_ENERGY_UJ: where it wraps */
	uint64_t prev, cur;		/* as reading says */
	int64_t at_us;			/* CLOCK_MONOTONIC of this sample */
	int has_prev, has_cur;
};

struct meter {
	const char *sysfs;
	const char *procdir;
	const char *node_name;		/* --node-name; NULL: found */
	const struct source *running[8];	/* --source, in order */
	size_t nrunning;
	struct member *members;		/* sorted by zone, then socket */
	size_t nmembers;
	const char **zones;		/* -z; NULL: every zone but node */
	size_t nzones;
	int per_socket;
	int command_stdout;		/* -- CMD: its stdout, -1: stderr */
	char command[16];		/* -- CMD: its name; "" without */
	struct tally *tally;		/* -- CMD alone: the run's energy, */
					/* or NULL */
	char host[256];			/* kp-host's node: a guest's tree */
	int64_t host_interval_us;	/* kp-host's interval_us; or 0 */
	/*
	 * Why --source auto fell back, and to what: said on standard error
	 * (see say_fallback); "" when the first source was used.
	 */
	char fallback[4 * PATH_MAX];
	int fallback_talk;		/* -q: -1, -v: 1, else 0 */
};

/* source.c */
extern const struct source *const sources[];
void parse_sources(struct meter *m, char *list);
void source_names(const struct meter *m, char *buf, size_t len);
int selected(const struct meter *m, const char *zone);
int in_node(const struct meter *m, const char *zone);
int denied(int errnum);
void xpath(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int parse_uj(const char *s, uint64_t *uj);
int read_file_uj(struct member *mb, int64_t deadline_us);
struct member *new_member(struct meter *m, const struct source *src,
    const char *key);
void member_failed(struct member *mb, const char *dir, const char *file);
int open_class(struct meter *m, const struct source *src, const char *class,
    void (*add)(struct meter *, const char *, int, const char *),
    void (*settle)(struct meter *), char *why, size_t len);
void put_counter_fields(struct kp_buf *b, const struct member *one,
    size_t counters);
void open_sources(struct meter *m);
void close_sources(struct meter *m);

/* estimate.c, modeltable.c */
extern const char model_table[];
struct estimate;
struct estimate *estimate_open(const char *procdir, const char *table_path,
    int *status, char *why, size_t len);
int estimate_set_watts(struct estimate *e, double idle_watts,
    double full_watts, char *why, size_t len);
double estimate_watts(const struct estimate *e, double usage_ratio);
const char *estimate_row(const struct estimate *e);
int64_t estimate_threads(const struct estimate *e);
int64_t estimate_sockets(const struct estimate *e);
void estimate_describe(const struct estimate *e, char *buf, size_t len);
void estimate_free(struct estimate *e);

/*
 * bmc.c: a BMC source's fetch gives the power now in *mw and returns 0,
 * or 1 and why in why; it runs in a thread of its own once the clock runs.
 * close is the source's, run at exit before the libraries' own handlers.
 */
struct bmc_fetcher {
	const char *what;		/* "redfish", for messages */
	int (*fetch)(int64_t *mw, char *why, size_t len);
	void (*close)(void);
};
extern const char *bmc_target;
extern char bmc_user[600], bmc_password[600];
extern long bmc_timeout_ms;
int bmc_option(const char *name, const char *arg);
void bmc_forget(void);
void bmc_set_fetcher(const struct bmc_fetcher *f);
void bmc_first_reading(int64_t mw);
int bmc_quitting(void);
void bmc_stop(void);
int bmc_read(struct member *mb, int64_t deadline_us);
void bmc_fields(struct kp_buf *b, const struct member *one,
    size_t counters);
void bmc_save(json_t *data);
int bmc_load(json_t *data);
int64_t bmc_watts_mw(double watts);

/* sample.c */
void sample(struct meter *m, int64_t at_us, int64_t deadline_us);
void drop_impossible_steps(struct meter *m, int64_t dt_us);
void emit(const struct meter *m, int64_t seq, int64_t dt_us);
void warn_wrap(const struct meter *m, const char *what, int64_t dt_us);
void end_interval(struct meter *m, const struct kp_clock *clk);
void out_header(const struct meter *m);
void start_clock(struct meter *m, struct kp_clock *clk, int64_t interval_us);
int run_clock(struct meter *m, int64_t interval_us, long long count);

/* command.c */
int run_command(struct meter *m, int64_t interval_us, char *argv[]);

/* terminal.c */
void setup_output(struct meter *m, const char *path, int command);
#define TALLY_ZONES 16
struct tally {			/* the run's energy per zone, for the block */
	struct {
		char *zone;
		int64_t energy_uj;	/* the machine's */
		int64_t tree_uj;	/* the command's tree's share */
		int estimated;
	} z[TALLY_ZONES];
	size_t n;
	int64_t dt_us, cpu_us;	/* the run's; wait4's tree CPU time */
	/* The interval being ended: its CPU time, the tree's and the node's. */
	int64_t tree_us, node_cpu_us, node_total_us;
	int64_t tree_last_us;	/* the tree's CPU time at the last sample */
	struct kp_cpu_times node_last;	/* /proc/stat then */
	int no_share;		/* /proc/stat could not be read at a sample */
};
void tally_cpu(struct tally *t, const char *procdir, int64_t tree_cpu_us);
void tally_add(struct tally *t, const char *zone, int64_t energy_uj,
    int estimated);
void tally_block(struct tally *t, const char *argv0, int status);

/* state.c */
int load_state(struct meter *m, struct kp_state *st, const char *path,
    json_int_t *seq, json_int_t *mono_us);
json_t *state_data(const struct meter *m, json_int_t seq, int64_t mono_us);
void run_once(struct meter *m, struct kp_state *st, const char *path);
void say_fallback(const struct meter *m, const char *said);

#endif
