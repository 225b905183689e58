/*
 * kp-aggregate's parts, behind this one header as kp-attribute's are:
 *
 *	main.c	the options, the run, and the stream, interval by interval
 *	levels.c	the levels of grouping and their groups
 *	take.c	a process or exited record summed into its groups
 *	end.c	an interval's end: the group and host records written
 *	state.c	the totals kept by --state across runs
 *
 * The run is one struct agg, which main.c makes and passes to each part;
 * nothing else outlives a call.
 */
#ifndef AGGREGATE_H
#define AGGREGATE_H

#include "kp.h"

#define LEVELS_MAX 16

/* A group: its id as JSON text, its totals and this interval's sums. */
struct group {
	char *id;		/* the member field's value, as JSON text */
	char *pod;		/* a container's pod_id, as JSON text, or NULL */
	char *names;		/* its names as JSON members, or NULL */
	int64_t total_uj[KP_ZONES_MAX];
	int64_t processes[KP_ZONES_MAX], cpu_us[KP_ZONES_MAX], energy_uj[KP_ZONES_MAX];
	uint64_t touched;	/* zones with members this interval */
	long live;		/* member processes not yet terminated */
	int listed;		/* in this interval's list */
	int ended;
	int resting;		/* a VM's, ended, kept for its return */
	int64_t rest_us;	/* since it ended, in the stream's time */
};

/* A level of grouping: the record type it writes and the field it groups by. */
struct level {
	const char *type;
	char *field;
	int by;			/* --by: the record says "by":field */
	struct kp_map *groups;	/* id text -> group */
	int64_t host_total_uj[KP_ZONES_MAX];
	int64_t host_processes[KP_ZONES_MAX], host_cpu_us[KP_ZONES_MAX],
	    host_energy_uj[KP_ZONES_MAX];
};

/* A live process: the group it is in at each level, or NULL. */
struct member {
	struct group *g[LEVELS_MAX];
	int64_t last_seq;	/* of its last record */
};

/* A group to write at the end of the interval. */
struct item {
	size_t level;
	struct group *g;
};

/* The options besides the levels. */
struct options {
	int drop_processes;	/* --drop-processes */
	const char *statepath;	/* --state; NULL: none */
};

/*
 * The run, passed to every part: the options, the levels they asked for,
 * with their groups and host totals, the live members, and what the open
 * interval has brought.
 */
struct agg {
	struct options opt;
	const char *input_name;	/* the stream's, in messages */
	struct level levels[LEVELS_MAX];
	size_t nlevels;
	struct kp_zones zones;
	char *uuid[KP_ZONES_MAX];	/* a GPU zone's uuid, as JSON text */
	uint64_t zones_seen;	/* this interval, bit z for zone z */
	int dense;		/* this interval: its node records say */
	struct kp_map *members;	/* "pid:starttime" -> member */
	struct kp_live live;	/* lets go of members */
	struct item *items;	/* the groups of the interval */
	size_t nitems, capitems;
	struct kp_buf out;	/* a record's text, kept to spare allocations */
};

/* main.c */
void agg_free(struct agg *a);
void agg_init(struct agg *a);
void agg_reset(struct agg *a);

/* levels.c */
void add_level(struct agg *a, const char *type, const char *field, int by);
void check_by(const char *field);
struct group *group_find(struct level *lv, const char *id, size_t len);
struct group *group_get(struct level *lv, const char *id, size_t len);
void level_free(void *group);
const char *const *level_names(const struct level *lv);
void parse_levels(struct agg *a, const char *arg);

/* take.c */
const char *add_record(struct agg *a, const struct kp_record *rec);
int consumed(const struct kp_record *rec);
void member_leave(void *member, void *agg);
void see_zone(struct agg *a, const struct kp_record *rec);

/* end.c */
void clear_sums(struct agg *a);
void drop_interval(struct agg *a);
void end_interval(struct agg *a, int64_t seq, int64_t dt_us);

/* state.c */
void load_state(struct agg *a, struct kp_state *st, const char *path);
void state_write(struct kp_jw *w, void *arg);	/* a struct agg */

#endif
