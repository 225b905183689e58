/*
 * rapl-read's parts, behind this one header as OpenBSD sort's are:
 *
 *	main.c		the options, --list, and the mode
 *	discover.c	the counters: RAPL zones, power meters, or the model
 *	sample.c	a sample, the interval's energy, and the records
 *	command.c	-- CMD: the command's tree, measured
 *	state.c		--state: the sample kept across runs
 */
#ifndef RAPL_H
#define RAPL_H

#include <limits.h>

#include "proc/proc.h"

enum source { SOURCE_AUTO, SOURCE_POWERCAP, SOURCE_HWMON, SOURCE_MODEL };

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

/* One counter: one zone of one socket or die, such as package-1, or a meter. */
struct member {
	char key[NAME_MAX + 1];		/* its entry: "intel-rapl:1", "hwmon2" */
	char zone[NAME_MAX + 1];	/* its name less the socket: "package" */
	int socket;			/* or NO_SOCKET */
	int enabled;			/* its power limit's; -1: not said */
	char dup_of[NAME_MAX + 1];	/* the entry it repeats, if any */
	int wanted;			/* read and reported */
	char path[PATH_MAX];		/* its energy_uj, or power1_* in uW */
	int fd;
	char bad[PATH_MAX];		/* the file that failed at the start */
	int errnum;			/* and why */
	int warned;			/* a failed read said */
	int warned_step;		/* an impossible step said */
	uint64_t max_uj;		/* where the counter wraps; 0: a meter */
	uint64_t prev, cur;		/* uJ, or uW for a meter */
	int has_prev, has_cur;
};

struct meter {
	enum source source;
	const char *sysfs;
	const char *procdir;
	const char *node_name;		/* --node-name; NULL: found */
	char classdir[PATH_MAX];
	int dir_errnum;
	struct member *members;		/* sorted by zone, then socket */
	size_t nmembers;
	char **zones;			/* -z; NULL: every zone but node */
	size_t nzones;
	int per_socket;
	double idle_watts, max_watts;
	struct kp_cpu_times prev_ct, cur_ct;
	int has_prev_ct;
};

/* main.c */
const char *source_name(enum source source);

/* discover.c */
int selected(const struct meter *m, const char *zone);
int read_counter(struct member *mb);
int in_node(const struct meter *m, const char *zone);
int denied(int errnum);
void close_members(struct meter *m);
int try_source(struct meter *m, enum source source, char *why, size_t len);
void open_source(struct meter *m, enum source want);

/* sample.c */
void sample(struct meter *m);
void drop_impossible_steps(struct meter *m, int64_t dt_us);
void emit(const struct meter *m, int64_t seq, int64_t dt_us);
void warn_wrap(const struct meter *m, const char *what, int64_t dt_us);
void end_interval(struct meter *m, const struct kp_clock *clk);
void out_header(const struct meter *m);
void start_clock(struct meter *m, struct kp_clock *clk, int64_t interval_us);
int run_clock(struct meter *m, int64_t interval_us, long long count);

/* command.c */
int run_command(struct meter *m, int64_t interval_us, char *argv[]);

/* state.c */
int load_state(struct meter *m, struct kp_state *st, const char *path,
    json_int_t *seq, json_int_t *mono_us);
json_t *state_data(const struct meter *m, json_int_t seq, int64_t mono_us);
void run_once(struct meter *m, struct kp_state *st, const char *path);

#endif
