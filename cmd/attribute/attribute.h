/*
 * kp-attribute's parts, behind this one header as OpenBSD sort's are:
 *
 *	main.c	the options and the stream, interval by interval
 *	hold.c	an interval's records, held until its interval record
 *	split.c	a zone's energy split into shares, and the records written
 *	track.c	the run, the processes' totals, their ends, and each
 *		interval's end
 *	state.c	the totals kept by --state across runs
 *
 * The run is one struct attr, which main.c makes and passes to each part;
 * nothing else outlives a call.
 */
#ifndef ATTRIBUTE_H
#define ATTRIBUTE_H

#include "proc/proc.h"

/* One energy record of the interval. */
struct energy {
	int zone;
	int64_t energy_uj;
	size_t src_off, src_len;	/* its ,"source":..,"estimated":.., */
					/* and model, threads, sockets and */
					/* path where it has them */
	size_t uuid_off, uuid_len;	/* a GPU's "uuid" and "name", as */
	size_t name_off, name_len;	/* written in the interval's */
					/* text; 0 bytes without */
};

/* One proc record of the interval. */
struct proc {
	int64_t pid, starttime, cpu_us;
	size_t id_off, line_off;	/* its identity members, as JSON text, */
	uint32_t id_len, line_len;	/* in ids, and its line in lines */
	size_t gpu_off, gpu_len;	/* its gpu_us object, as written, */
					/* in the interval's text; 0, 0 */
	int terminated;
	struct workload *w;		/* its totals */
};

/*
 * One exited record of the interval (kp-records(5), Record type exited):
 * processes that no proc record showed.  It has a share of the interval's
 * energy and nothing more: no totals, no liveness, nothing held after its
 * interval.
 */
struct exited {
	int64_t cpu_us;
	size_t id_off, line_off;	/* its other members, as JSON text, */
	uint32_t id_len, line_len;	/* in ids, and its line in lines */
};

/* What one interval brings before its interval record arrives. */
struct interval {
	struct energy *energy;
	size_t nenergy, capenergy;
	struct proc *procs;
	size_t nprocs, capprocs;
	struct exited *exited;
	size_t nexited, capexited;
	int has_cpu, has_total;
	int dense;		/* its cpu record says every process has one */
	int64_t cpu_us, total_cpu_us;
	size_t gpu_off, gpu_len;	/* the cpu record's gpu_us, as the */
					/* procs'; 0, 0: none */
	int64_t procs_us;	/* sum of the procs' and exited records' */
				/* cpu_us, checked to fit */
	int64_t gpu_procs_us;	/* and of the procs' gpu_us, every device */
	size_t nrounded;	/* of those records, the ones with CPU */
	int64_t worst_excess_us;	/* the largest excess_cpu_us of an */
	size_t worst_off, worst_len;	/* exited record, and its cgroup */
					/* in text, as JSON; 0, 0: none */
	double ratio;
	struct kp_buf text;	/* the energy records' sources, scaled_by */
	struct kp_spool ids;	/* the proc and exited records' identities */
	struct kp_spool lines;	/* consumed lines, to pass on if unused */
	int64_t seq;		/* theirs; -1 before the first */
};

/*
 * A process's cumulative totals, per zone: room for the zones the run had
 * when it last had energy, not for every zone a run may have, as a host
 * has processes by the hundred thousand.
 */
struct workload {
	int64_t last_seq;	/* of its last record */
	size_t nzones;		/* total_uj's; a zone beyond has 0 */
	int64_t total_uj[];
};

/* A process that ended in an interval without energy, to report later. */
struct ended {
	char *id;		/* identity members, as JSON text */
	size_t id_len;
	int64_t total_uj[KP_ZONES_MAX];
};

enum split_mode { SPLIT_RATIO, SPLIT_BASELINE };
enum idle_mode { IDLE_NONE, IDLE_PROPORTIONAL };
enum denom_mode { DENOM_NODE, DENOM_PROCESSES };

/* The options: set by main.c before the stream is read, read only after. */
struct options {
	struct kp_sample_opts sample;	/* as proc-cputime's */
	enum split_mode split_mode;
	enum idle_mode idle_mode;
	enum denom_mode denom_mode;
	double baseline_watts[KP_ZONES_MAX], baseline_default;
	char *baseline_zone[KP_ZONES_MAX];
	size_t nbaseline;
	long long max_terminated;
	int64_t min_terminated_uj;
};

struct node_totals {
	int64_t total_uj, active_total_uj, idle_total_uj;
};

/*
 * The run, passed to every part: the options, and the totals kept across
 * intervals, and by --state across runs: the zones, each zone's node and
 * unattributed totals, each process's, and the processes that ended in an
 * interval without energy, still to report.
 */
struct attr {
	struct options opt;
	const char *input_name;		/* the stream's, in messages */
	struct kp_zones zones;
	struct node_totals node_total[KP_ZONES_MAX];
	int64_t unattributed_total[KP_ZONES_MAX];
	struct kp_map *workloads;	/* "pid:starttime" -> workload */
	struct kp_live live;		/* lets go of workloads */
	struct ended *ended;
	size_t nended;
	/*
	 * split.c's scratch, kept from one interval to the next so that a
	 * zone is split without an allocation: the records' text, and one
	 * share per process and exited record, + 2.
	 */
	struct kp_buf out;
	struct kp_share *shares, **order;
	size_t nshares;
	int gpu_zone;		/* the zone split now is a GPU's */
	int told_no_gpu_us;	/* a GPU's energy was all idle for want */
				/* of the node's GPU time: said once */
};

/* hold.c */
void check_live(struct kp_reader *r, const struct kp_record *rec, int64_t dt_us);
int consumed(const struct kp_record *rec);
void drop_records(struct interval *iv);
void hold(struct attr *a, struct kp_reader *r, const struct kp_record *rec,
    struct interval *iv);
void hold_sampled(struct attr *a, struct interval *iv, struct kp_sampler *s,
    int64_t seq);
void interval_clear(struct interval *iv);
void pass_cut(struct interval *iv);
void pass_lines(struct kp_spool *lines);
void pass_unsampled(struct kp_reader *r, struct interval *iv, int64_t seq);

/* split.c */
void attribute_zone(struct attr *a, struct interval *iv,
    const struct energy *e, int64_t seq, int64_t dt_us);
void attribute_gpu(struct attr *a, struct interval *iv,
    const struct energy *e, int64_t seq, int64_t dt_us);
int reportable(const struct attr *a, const struct workload *w);
void shares_reserve(struct attr *a, size_t n);
int64_t sum_uj(const int64_t *total_uj, size_t n);

/* track.c */
void attr_free(struct attr *a);
void attr_init(struct attr *a);
void attr_reset(struct attr *a);
void end_interval(struct attr *a, struct kp_reader *r, struct interval *iv,
    const struct kp_record *rec, struct kp_sampler *s);
struct workload *workload(struct attr *a, int64_t pid, int64_t starttime,
    int create);
void workload_totals(const struct workload *w, int64_t *total_uj);

/* state.c */
int id_ok(const char *id);
void load_state(struct attr *a, struct kp_state *st, const char *path,
    struct kp_sampler *s);
struct state_arg {		/* what state_write saves */
	const struct attr *a;
	struct kp_sampler *s;
};
void state_write(struct kp_jw *w, void *arg);

#endif
