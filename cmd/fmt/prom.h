/*
 * -f prometheus and --textfile in parts, behind this header:
 *
 *	prom.c		the exposition of an interval, taken as read, the
 *			node's cpu_info and build_info
 *	promout.c	the textfile, standard output's file, the spill file
 *	families.c	Kepler's metric families and their label sets
 *	labels.c	a record's labels, Kepler's values among them
 *	series.c	counter series, which never go back, and their samples
 *	exited.c	the exited records' series, summed per comm and group
 */
#ifndef PROM_H
#define PROM_H

#include <sys/types.h>

#include "fmt.h"

/*
 * A COUNTER_S family counts seconds of CPU time, the same in each zone's
 * record of a workload: it has no zone label, and takes one record per
 * series and interval.
 */
enum { GAUGE, COUNTER_J, COUNTER_CO2, COUNTER_S };

/* Prometheus metric family: one sample per record of rectype. */
struct family {
	const char *name;
	const char *rectype;
	const char *rectype2;	/* a second record type, or NULL */
	const char *const *zones;	/* only records of these; NULL: all */
	const char *field;
	/*
	 * For a counter: the interval's part of field, summed by kp-fmt
	 * itself when the record has no cumulative field.
	 */
	const char *delta;
	int kind;
	/*
	 * NULL-terminated; none: one sample.  A name that starts with '?' is
	 * left out of a record that lacks the field; "group" is the value of
	 * the field that a group record's "by" names.
	 */
	const char *const *labels;
	const char *help;
};

/* families.c: as many as it lists, which it checks. */
#define NFAMILIES 55
#define NEXITED_FAMILIES 3
extern const struct family families[NFAMILIES];
extern const struct family exited_families[NEXITED_FAMILIES];
extern const char *const workload_types[];

/*
 * A workload's series without a sample for this many intervals is
 * forgotten, so that memory does not grow with every process that ever
 * ran; Kepler drops the series of ended processes too.
 */
#define FORGET_INTERVALS 5

/*
 * An exited series goes on, at 0 W, in intervals without exited records
 * of its comm and group, and is forgotten after this many: processes that
 * a cron job or a build starts again and again keep one counter, and
 * those of a group gone leave.
 */
#define EXITED_FORGET_INTERVALS 60

/* One counter series: what it showed, so that it never goes backwards. */
struct series {
	int64_t last_in;	/* the cumulative field as last read */
	int64_t offset;		/* added after the input's total fell */
	int64_t sum_uj;		/* kp-fmt's own total, from the deltas */
	int64_t shown_uj;	/* the counter's last sample */
	int seen;
	int saturated;		/* reported as held at INT64_MAX */
	int ended;		/* its last record said terminated */
	unsigned forget_after;	/* intervals without a sample; 0: never */
	unsigned long seen_gen;	/* the block it last had a sample in */
};

/*
 * A family's samples of the open interval, as text: held up to a size,
 * the rest in parts of the spill file (kp-fmt(1), Memory).
 */
struct spill_part {
	off_t off;
	size_t len;
};
struct slot {
	struct kp_buf text;
	struct spill_part *parts;
	size_t nparts, partcap;
	size_t samples;
	int zone_set;		/* zone and socket: the first sample's */
	char *zone;		/* NULL: none */
	int64_t socket;		/* -1: none */
};

/* One record's label texts, per label set and node zone, made once. */
struct rec_labels {
	const char *const *set[4];
	int node_zone[4];
	struct kp_buf text[4];
	size_t n;
};

/* Where an exposition goes: the textfile's temporary, stdout's. */
struct prom;
struct prom_out {
	int fd;			/* the textfile's temporary; -1: none */
	char *name;		/* its name */
	struct prom *last;	/* standard output's; NULL: none */
};

/*
 * The label text of each record of a block for one label set, made once
 * for the families that share the set.
 */
struct labels {
	const char *const *set;
	int node_zone;			/* the node zone's: no zone label */
	struct kp_buf *text;		/* one per record */
	char *made;			/* text[i] is made */
	signed char *in_node_zone;	/* record i's zone is node; -1: unknown */
	size_t cap;
};

/* The state of one exposition: stdout's, the textfile's, or both. */
struct prom {
	int to_stdout;
	const char *textfile;		/* NULL: none */
	struct kp_map *series;		/* "name{labels}" -> series */
	unsigned long gen;		/* blocks rendered */
	struct labels labels;
	struct kp_buf text;		/* the exposition of the block */
	struct kp_buf key;		/* a series' name and labels */
	char *node_name;		/* the header's; NULL: none */
	const char *default_node_name;	/* --node-name; NULL: none */
	struct kp_buf cpu_info;		/* kepler_node_cpu_info's samples */
	struct kp_live had;		/* workloads that had a series */
	size_t had_next;		/* had_bound's next try */
	char hashed[24];		/* series_key's */
	/* The open interval, as its records are taken. */
	int open;			/* a record was taken */
	int dense;			/* a record said it is dense */
	int any_node_zone;		/* a record was of the node zone */
	struct slot slots[2][NFAMILIES];	/* [node zone][family] */
	struct rec_labels rec_labels;
	struct block lines;		/* node and energy records */
	struct block exited;		/* exited records */
	struct block ended;		/* terminated workloads' records */
	int spill_fd;			/* -1: none yet */
	off_t spill_end;
	/* Standard output's exposition: the last, written at the end. */
	struct kp_buf last;		/* held */
	int last_fd;			/* beyond, in this file; -1: none */
	int last_in_file;
	int has_last;
	char *node_zone_name[NFAMILIES];	/* NULL: not zoned */
	char *exited_node_zone_name[NEXITED_FAMILIES];
};

/* promout.c: the spill file and the exposition's outputs */
int spill_open(void);
void spill_write(int fd, const char *s, size_t len, off_t off);
void spill_read(int fd, char *buf, size_t len, off_t off);
void prom_out_open(struct prom *p, struct prom_out *out, int whole);
void prom_out_write(struct prom_out *out, const char *s, size_t len);
void prom_out_text(struct prom *p, struct prom_out *out);
void prom_out_flush(struct prom *p, struct prom_out *out);
void prom_out_close(struct prom *p, struct prom_out *out);
void prom_out_last(struct fmt *ctx, struct prom *p);

/* labels.c */
void label_pair(struct kp_buf *b, size_t *n, const char *name,
    const char *value, const struct kp_record *rec);
const char *node_name(const struct prom *p);
void labels_make(const struct prom *p, struct kp_buf *b,
    const struct family *f, const struct kp_record *rec, int node_zone);
void labels_workload(const struct prom *p, struct kp_buf *b,
    const struct family *f, const struct kp_record *rec);
void labels_prepare(struct labels *l, size_t n);
const struct kp_buf *labels_of(struct prom *p, const struct family *f,
    const struct block *b, size_t i, int node_zone);
int in_node_zone(struct labels *l, const struct block *b, size_t i);
int rec_in_node_zone(const struct kp_record *rec);
void labels_free(struct labels *l);

/* series.c */
void report_saturated(struct fmt *ctx, struct series *s,
    const char *series_key, const struct kp_record *rec);
void forget_stale(struct prom *p);
const char *series_key(struct prom *p, const struct family *f);
struct series *series_get(struct prom *p, const struct family *f, int *fresh);
void family_head(struct kp_buf *out, const struct family *f, const char *name,
    int node_zone);
void families_take(struct fmt *ctx, struct prom *p,
    const struct kp_record *rec);
void slot_write(struct prom *p, size_t fi, int node_zone,
    struct prom_out *out);
void slot_clear(struct slot *sl);
char *node_zone_name(const struct family *f);

/* exited.c */
void exited_write(struct fmt *ctx, struct prom *p, const struct block *b,
    int node_zone);

#endif
