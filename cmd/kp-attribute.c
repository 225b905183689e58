/*
 * kp-attribute: splits each zone's energy into active and idle, and gives
 * each process, and each exited record of processes born and ended inside
 * the interval, a share of the active energy in proportion to its CPU
 * time.  Integer microjoules, conserved exactly: sum(process) +
 * sum(exited) + unattributed + idle kept at node level = measured, every
 * interval and zone.
 *
 * Records are read by lib/record.c, the one reader of every stage, and
 * written by hand (lib/write.c), not through jansson values: a stage sees
 * every process of every interval.
 */
#include <err.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kp.h"


/* One energy record of the interval. */
struct energy {
	int zone;
	int64_t energy_uj;
	size_t src_off, src_len;	/* its ,"source":..,"estimated":.., */
					/* and "path" where it has one */
};

/* One proc record of the interval. */
struct proc {
	int64_t pid, starttime, cpu_us;
	int terminated;
	size_t id_off, id_len;		/* its identity members, as JSON text */
	size_t line_off, line_len;	/* its line in lines; 0, 0 if sampled */
	struct workload *w;		/* its totals */
};

/*
 * One exited record of the interval (D3): processes that no proc record
 * showed.  It has a share of the interval's energy and nothing more: no
 * totals, no liveness, nothing held after its interval.
 */
struct exited {
	int64_t cpu_us;
	size_t id_off, id_len;		/* its other members, as JSON text */
	size_t line_off, line_len;	/* its line in lines */
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
	int64_t procs_us;	/* sum of the procs' and exited records' */
				/* cpu_us, checked to fit */
	double ratio;
	struct kp_buf text;	/* identity texts */
	struct kp_buf lines;	/* consumed lines, to pass on if unused */
	int64_t seq;		/* theirs; -1 before the first */
};

/* Who a share is for, in the order a tie in rounding favours them. */
enum share_rank { RANK_PROCESS, RANK_EXITED, RANK_UNATTRIBUTED };

/* One share of a zone's energy, and what rounding left of it. */
struct share {
	int64_t cpu_us;		/* the weight */
	int64_t active_uj, idle_uj;
	uint64_t rem;		/* the fraction's numerator, for rounding */
	enum share_rank rank;
	int64_t pid, starttime;	/* exited: 0 and its place in the interval */
};

/* A process's cumulative totals, per zone. */
struct workload {
	int64_t total_uj[KP_ZONES_MAX];
	int64_t last_seq;	/* of its last record */
};

/* A process that ended in an interval without energy, to report later. */
struct ended {
	char *id;		/* identity members, as JSON text */
	size_t id_len;
	struct workload w;
};

enum split_mode { SPLIT_RATIO, SPLIT_BASELINE };
enum idle_mode { IDLE_NONE, IDLE_PROPORTIONAL };
enum denom_mode { DENOM_NODE, DENOM_PROCESSES };

static void usage(void);

static const char *procdir = "/proc";
static enum split_mode split_mode = SPLIT_RATIO;
static enum idle_mode idle_mode = IDLE_NONE;
static enum denom_mode denom_mode = DENOM_NODE;
static double baseline_watts[KP_ZONES_MAX], baseline_default = -1;
static char *baseline_zone[KP_ZONES_MAX];
static size_t nbaseline;
static long long max_terminated = 500;
static int64_t min_terminated_uj = 0;

static struct kp_zones zones = { .socket_keys = 1 };
static struct {
	int64_t total_uj, active_total_uj, idle_total_uj;
} node_total[KP_ZONES_MAX];
static int64_t unattributed_total[KP_ZONES_MAX];
static struct kp_map *workloads;	/* "pid:starttime" -> workload */
static struct ended *ended;
static size_t nended;
static struct kp_buf out;
static struct share *shares, **order;	/* scratch: one per process and */
					/* exited record, + 2 */
static size_t nshares;

static void
usage(void)
{
	fprintf(stderr, "usage: kp-attribute [-h] [--denominator node|processes] "
	    "[--idle none|proportional] [--max-terminated n] "
	    "[--min-terminated-energy joules] [--proc dir] "
	    "[--split ratio|baseline] [--baseline-watts [zone=]watts] "
	    "[--state file]\n");
	exit(KP_EXIT_USAGE);
}

static void *
xrealloc(void *p, size_t n, size_t size)
{
	if ((p = reallocarray(p, n, size)) == NULL)
		err(KP_EXIT_FAILURE, "realloc");
	return p;
}

/* a * b / c in integers, without overflow; *rem gets what the floor left. */
static int64_t
muldiv(int64_t a, int64_t b, int64_t c, uint64_t *rem)
{
	unsigned __int128 n = (unsigned __int128)a * (unsigned __int128)b;

	if (rem)
		*rem = (uint64_t)(n % (unsigned __int128)c);
	return (int64_t)(n / (unsigned __int128)c);
}

static struct workload *
workload(int64_t pid, int64_t starttime, int create)
{
	char key[KP_PROC_KEY_MAX];
	struct workload *w;

	kp_proc_key(key, sizeof(key), pid, starttime);
	if ((w = kp_map_get(workloads, key)) == NULL && create) {
		if ((w = calloc(1, sizeof(*w))) == NULL)
			err(KP_EXIT_FAILURE, "calloc");
		kp_map_put(workloads, key, w);
	}
	return w;
}

static void
forget(int64_t pid, int64_t starttime)
{
	char key[KP_PROC_KEY_MAX];

	kp_proc_key(key, sizeof(key), pid, starttime);
	free(kp_map_remove(workloads, key));
}

/* Over all zones; at most INT64_MAX, as each zone's total may be near it. */
static int64_t
sum_total(const struct workload *w)
{
	int64_t sum = 0;
	size_t z;

	for (z = 0; z < zones.n; z++)
		if (__builtin_add_overflow(sum, w->total_uj[z], &sum))
			return INT64_MAX;
	return sum;
}

/*
 * The idle part of a zone's energy: the rest after the active part by the
 * CPU usage ratio, or the baseline power over the interval, at most all.
 */
static int64_t
idle_part(const struct interval *iv, int zone, int64_t energy_uj,
    int64_t dt_us)
{
	double w = baseline_default, idle;
	size_t i;

	if (split_mode == SPLIT_BASELINE) {
		for (i = 0; i < nbaseline; i++)
			if (strcmp(baseline_zone[i], zones.name[zone]) == 0)
				w = baseline_watts[i];
		if (w < 0 || dt_us <= 0)
			return 0;
		idle = floor(w * (double)dt_us);
		return idle >= (double)energy_uj ? energy_uj : (int64_t)idle;
	}
	if (iv->has_total) {
		if (iv->total_cpu_us <= 0)
			return energy_uj;
		return energy_uj - muldiv(energy_uj, iv->cpu_us > iv->total_cpu_us ?
		    iv->total_cpu_us : iv->cpu_us, iv->total_cpu_us, NULL);
	}
	if (!(iv->ratio > 0))
		return energy_uj;
	return iv->ratio >= 1 ? 0 :
	    energy_uj - (int64_t)floor((double)energy_uj * iv->ratio);
}

static double
usage_ratio(const struct interval *iv)
{
	if (!iv->has_total)
		return iv->ratio;
	return kp_usage_ratio(iv->cpu_us, iv->total_cpu_us);
}

static int
by_remainder(const void *a, const void *b)
{
	const struct share *p = *(struct share *const *)a;
	const struct share *q = *(struct share *const *)b;

	if (p->rem != q->rem)
		return p->rem > q->rem ? -1 : 1;
	if (p->rank != q->rank)
		return p->rank < q->rank ? -1 : 1;
	if (p->pid != q->pid)
		return p->pid < q->pid ? -1 : 1;
	return (p->starttime > q->starttime) - (p->starttime < q->starttime);
}

/*
 * Splits uj over shares[0..n) by cpu_us into active_uj (or idle_uj);
 * shares[n-1] is the unattributed rest, which takes everything when no
 * share has a weight.  The floors leave fewer microjoules than shares: one
 * each goes to the largest remainders (largest remainder method), so the
 * shares add up to uj exactly.
 */
static void
split(int64_t uj, struct share *shares, size_t n, int idle,
    struct share **order)
{
	int64_t denom_us = 0, left_uj = uj, part;
	size_t i;

	for (i = 0; i < n; i++)
		denom_us += shares[i].cpu_us;
	for (i = 0; i < n; i++) {
		if (denom_us == 0)
			part = i + 1 < n ? 0 : uj;
		else
			part = muldiv(uj, shares[i].cpu_us, denom_us,
			    &shares[i].rem);
		*(idle ? &shares[i].idle_uj : &shares[i].active_uj) = part;
		left_uj -= part;
		order[i] = &shares[i];
	}
	if (left_uj == 0)
		return;
	qsort(order, n, sizeof(*order), by_remainder);
	for (i = 0; i < n && left_uj > 0; i++, left_uj--)
		(*(idle ? &order[i]->idle_uj : &order[i]->active_uj))++;
}

/*
 * Writes a record's zone, and its socket if it has one.  rapl-read
 * --per-socket gives each socket's counter its own energy record; its zone
 * is kept here as "zone/socket", so that each socket is split, totalled
 * and saved apart, and it is written back as the two members.
 */
static void
put_zone(int z)
{
	const char *name = zones.name[z], *slash = strchr(name, '/');
	size_t len = slash ? (size_t)(slash - name) : strlen(name);

	kp_buf_add(&out, ",\"zone\":\"", 9);
	kp_buf_add(&out, name, len);
	kp_buf_add(&out, "\"", 1);
	if (slash)
		kp_buf_raw(&out, "socket", slash + 1, strlen(slash + 1));
}

/*
 * The index of an energy record's zone, and socket if it has one.  The
 * reader has checked the zone's name, which has no '/', and the socket.
 */
static int
energy_zone(const struct kp_record *rec)
{
	char key[sizeof(zones.name[0])];
	const char *zone;
	int64_t socket;

	if ((zone = kp_rec_str(rec, "zone")) == NULL)
		return -1;
	if (!kp_rec_int(rec, "socket", &socket))
		return kp_zone_index(&zones, zone, strlen(zone));
	if (snprintf(key, sizeof(key), "%s/%lld", zone, (long long)socket) >=
	    (int)sizeof(key))
		return -1;
	return kp_zone_index(&zones, key, strlen(key));
}

static void
emit_node(const struct interval *iv, const struct energy *e, int64_t seq,
    int64_t active_uj, int64_t idle_kept_uj, int64_t dt_us)
{
	int64_t idle_uj = e->energy_uj - active_uj;
	int z = e->zone;

	node_total[z].total_uj += e->energy_uj;
	node_total[z].active_total_uj += active_uj;
	node_total[z].idle_total_uj += idle_uj;
	kp_buf_rec(&out, "node", seq);
	put_zone(z);
	kp_buf_int(&out, "energy_uj", e->energy_uj);
	kp_buf_int(&out, "active_uj", active_uj);
	kp_buf_int(&out, "idle_uj", idle_uj);
	kp_buf_int(&out, "idle_kept_uj", idle_kept_uj);
	kp_buf_real(&out, "watts", kp_watts(e->energy_uj, dt_us));
	kp_buf_real(&out, "active_watts", kp_watts(active_uj, dt_us));
	kp_buf_real(&out, "idle_watts", kp_watts(idle_uj, dt_us));
	kp_buf_real(&out, "usage_ratio", usage_ratio(iv));
	if (iv->dense)
		kp_buf_bool(&out, "dense", 1);
	kp_buf_add(&out, iv->text.s + e->src_off, e->src_len);
	kp_buf_int(&out, "total_uj", node_total[z].total_uj);
	kp_buf_int(&out, "active_total_uj", node_total[z].active_total_uj);
	kp_buf_int(&out, "idle_total_uj", node_total[z].idle_total_uj);
	kp_out_buf(&out);
}

/* The energy members of a share: energy_uj, and its parts when shared. */
static void
share_members(const struct share *sh, int64_t dt_us)
{
	int64_t energy_uj = sh->active_uj + sh->idle_uj;

	kp_buf_int(&out, "cpu_us", sh->cpu_us);
	kp_buf_int(&out, "energy_uj", energy_uj);
	if (idle_mode == IDLE_PROPORTIONAL) {
		kp_buf_int(&out, "active_uj", sh->active_uj);
		kp_buf_int(&out, "idle_uj", sh->idle_uj);
	}
	kp_buf_real(&out, "watts", kp_watts(energy_uj, dt_us));
}

static void
emit_process(int64_t seq, int z, const char *id, size_t id_len,
    const struct share *sh, int64_t dt_us, int64_t total_uj)
{
	kp_buf_rec(&out, "process", seq);
	put_zone(z);
	kp_buf_add(&out, id, id_len);
	share_members(sh, dt_us);
	kp_buf_int(&out, "total_uj", total_uj);
	kp_out_buf(&out);
}

static void
emit_unattributed(int64_t seq, int z, const struct share *sh,
    int64_t excess_us, int64_t dt_us)
{
	unattributed_total[z] += sh->active_uj + sh->idle_uj;
	kp_buf_rec(&out, "unattributed", seq);
	put_zone(z);
	share_members(sh, dt_us);
	kp_buf_int(&out, "total_uj", unattributed_total[z]);
	kp_buf_bool(&out, "scaled_down", excess_us > 0);
	if (excess_us > 0)
		kp_buf_int(&out, "excess_cpu_us", excess_us);
	kp_out_buf(&out);
}

/* Terminated processes are reported unless their energy is below the bar. */
static int
reportable(const struct workload *w)
{
	return w == NULL || sum_total(w) >= min_terminated_uj;
}

/*
 * The exited records of the interval in zone z, in the order they came,
 * each with its share: its own members, and the energy of the zone.
 */
static void
emit_exited(const struct interval *iv, int z, int64_t seq,
    const struct share *sh, int64_t dt_us)
{
	const struct exited *x;
	size_t i;

	for (i = 0; i < iv->nexited; i++) {
		x = &iv->exited[i];
		kp_buf_rec(&out, "exited", seq);
		put_zone(z);
		kp_buf_add(&out, iv->text.s + x->id_off, x->id_len);
		share_members(&sh[i], dt_us);
		kp_out_buf(&out);
	}
}

static void
share_set(struct share *sh, int64_t cpu_us, enum share_rank rank,
    int64_t pid, int64_t starttime)
{
	memset(sh, 0, sizeof(*sh));
	sh->cpu_us = cpu_us;
	sh->rank = rank;
	sh->pid = pid;
	sh->starttime = starttime;
}

/*
 * The shares of a zone: one per process, then one per exited record, then
 * the unattributed one, whose index is returned; its weight is set by the
 * caller.
 */
static size_t
fill_shares(const struct interval *iv)
{
	size_t i, k;

	for (i = 0; i < iv->nprocs; i++)
		share_set(&shares[i], iv->procs[i].cpu_us, RANK_PROCESS,
		    iv->procs[i].pid, iv->procs[i].starttime);
	for (k = 0; k < iv->nexited; k++, i++)
		share_set(&shares[i], iv->exited[k].cpu_us, RANK_EXITED, 0,
		    (int64_t)k);
	share_set(&shares[i], 0, RANK_UNATTRIBUTED, -1, 0);
	return i;
}

/* One zone of one interval: node, processes, exited, unattributed. */
static void
attribute_zone(struct interval *iv, const struct energy *e, int64_t seq,
    int64_t dt_us)
{
	size_t i, n = iv->nprocs, u;
	int64_t idle_uj, active_uj, procs_us = iv->procs_us, excess_us = 0;
	int64_t total_uj;
	struct workload *w;
	struct proc *p;
	size_t k;

	idle_uj = idle_part(iv, e->zone, e->energy_uj, dt_us);
	active_uj = e->energy_uj - idle_uj;
	u = fill_shares(iv);
	if (denom_mode == DENOM_NODE) {
		if (iv->cpu_us >= procs_us)
			shares[u].cpu_us = iv->cpu_us - procs_us;
		else
			excess_us = procs_us - iv->cpu_us;
	}
	split(active_uj, shares, u + 1, 0, order);
	if (idle_mode == IDLE_PROPORTIONAL)
		split(idle_uj, shares, u + 1, 1, order);
	if (denom_mode == DENOM_PROCESSES && iv->cpu_us > procs_us)
		shares[u].cpu_us = iv->cpu_us - procs_us;	/* as told */

	emit_node(iv, e, seq, active_uj,
	    idle_mode == IDLE_PROPORTIONAL ? 0 : idle_uj, dt_us);
	for (i = 0; i < n; i++) {
		p = &iv->procs[i];
		w = p->w;
		total_uj = w->total_uj[e->zone] += shares[i].active_uj +
		    shares[i].idle_uj;
		if (shares[i].cpu_us > 0 || iv->dense ||
		    (p->terminated && reportable(w)))
			emit_process(seq, e->zone, iv->text.s + p->id_off,
			    p->id_len, &shares[i], dt_us, total_uj);
	}
	memset(&shares[u + 1], 0, sizeof(shares[u + 1]));
	for (k = 0; k < nended; k++)
		emit_process(seq, e->zone, ended[k].id, ended[k].id_len,
		    &shares[u + 1], dt_us, ended[k].w.total_uj[e->zone]);
	emit_exited(iv, e->zone, seq, &shares[n], dt_us);
	emit_unattributed(seq, e->zone, &shares[u], excess_us, dt_us);
}

static void
interval_clear(struct interval *iv)
{
	iv->nenergy = iv->nprocs = iv->nexited = 0;
	iv->procs_us = 0;
	iv->seq = -1;
	iv->has_cpu = iv->has_total = iv->dense = 0;
	iv->text.len = iv->lines.len = 0;
}

/* Appends member key of rec to the identity text, if rec has it. */
static void
copy_member(struct kp_buf *b, const struct kp_record *rec, const char *key)
{
	const struct kp_field *f;

	if ((f = kp_rec_get(rec, key)) != NULL)
		kp_buf_raw(b, key, f->raw, f->rawlen);
}

#define NO_PID "without a positive integer pid"
#define LONG_ZONE "whose zone/socket passes 31 bytes: left out " \
    "(see kp-attribute(1))"
#define OVERFLOW "with a value whose sum overflows a 64-bit total"
#define TOO_MANY_ZONES "of a zone beyond the first 64: left out " \
    "(see kp-attribute(1))"

/*
 * Whether v more microjoules of zone z would still fit every total that
 * they go to: the node's and the unattributed total, with what this
 * interval already holds.  A process's total is a part of the node's.
 */
static int
energy_fits(const struct interval *iv, int z, int64_t v)
{
	int64_t held_uj = v, total_uj;
	size_t i;

	for (i = 0; i < iv->nenergy; i++)
		if (iv->energy[i].zone == z &&
		    __builtin_add_overflow(held_uj, iv->energy[i].energy_uj,
		    &held_uj))
			return 0;
	return !__builtin_add_overflow(node_total[z].total_uj, held_uj,
	    &total_uj) && !__builtin_add_overflow(unattributed_total[z],
	    held_uj, &total_uj);
}

/*
 * The reader has checked what each record held here must have
 * (kp-records(5)): an energy record's zone and energy_uj, a cpu record's
 * cpu_us and usage_ratio, a proc record's cpu_us.
 */
static const char *
hold_energy(struct interval *iv, const struct kp_record *rec)
{
	struct energy *e;
	int64_t v = 0;
	int z;

	kp_rec_int(rec, "energy_uj", &v);
	if ((z = energy_zone(rec)) == -1)
		return LONG_ZONE;
	if (z < 0)
		return TOO_MANY_ZONES;
	if (!energy_fits(iv, z, v))
		return OVERFLOW;
	if (iv->nenergy == iv->capenergy) {
		iv->capenergy = iv->capenergy * 2 + 4;
		iv->energy = xrealloc(iv->energy, iv->capenergy,
		    sizeof(*iv->energy));
	}
	e = &iv->energy[iv->nenergy++];
	e->zone = z;
	e->energy_uj = v;
	e->src_off = iv->text.len;
	copy_member(&iv->text, rec, "source");
	copy_member(&iv->text, rec, "estimated");
	copy_member(&iv->text, rec, "path");
	e->src_len = iv->text.len - e->src_off;
	return NULL;
}

static const char *
hold_cpu(struct interval *iv, const struct kp_record *rec)
{
	double ratio = kp_rec_number(rec, "usage_ratio");
	const struct kp_field *f;
	int64_t v = 0, t;

	kp_rec_int(rec, "cpu_us", &v);
	iv->has_cpu = 1;
	iv->dense = (f = kp_rec_get(rec, "dense")) != NULL &&
	    f->kind == KP_V_TRUE;
	iv->cpu_us = v;
	iv->ratio = ratio;
	iv->has_total = kp_rec_int(rec, "total_cpu_us", &t);
	iv->total_cpu_us = t;
	return NULL;
}

/*
 * The members of a proc record that a process record carries on: the
 * process's own, then every identity member (kp_identity_copy), names
 * included.
 */
static void
copy_identity(struct kp_buf *b, const struct kp_record *rec)
{
	static const char *const own[] = {
		"pid", "ppid", "starttime", "comm", "exe", "state", NULL
	};
	const char *const *k;

	for (k = own; *k; k++)
		copy_member(b, rec, *k);
	kp_identity_copy(b, rec);
}

static const char *
hold_proc(struct interval *iv, const struct kp_record *rec)
{
	struct proc *p;
	int64_t pid = 0, cpu_us = 0, sum_us, starttime = 0;

	/* A process is known by pid and starttime: one without a pid is none. */
	if (!kp_rec_int(rec, "pid", &pid) || pid <= 0)
		return NO_PID;
	kp_rec_int(rec, "cpu_us", &cpu_us);
	/* The shares' denominator is this sum: it must be exact. */
	if (__builtin_add_overflow(iv->procs_us, cpu_us, &sum_us))
		return OVERFLOW;
	iv->procs_us = sum_us;
	kp_rec_int(rec, "starttime", &starttime);
	if (iv->nprocs == iv->capprocs) {
		iv->capprocs = iv->capprocs * 2 + 64;
		iv->procs = xrealloc(iv->procs, iv->capprocs,
		    sizeof(*iv->procs));
	}
	p = &iv->procs[iv->nprocs++];
	p->pid = pid;
	p->starttime = starttime;
	p->cpu_us = cpu_us;
	p->line_off = p->line_len = 0;
	p->terminated = kp_rec_terminated(rec);
	p->id_off = iv->text.len;
	copy_identity(&iv->text, rec);
	p->id_len = iv->text.len - p->id_off;
	return NULL;
}

/* A member that this stage writes itself in an exited record it writes. */
static int
written_here(const char *key)
{
	static const char *const keys[] = {
		"type", "seq", "zone", "socket", "cpu_us", "energy_uj",
		"active_uj", "idle_uj", "watts", "total_uj", NULL
	};
	const char *const *k;

	for (k = keys; *k; k++)
		if (strcmp(key, *k) == 0)
			return 1;
	return 0;
}

/* Appends ,"key":value, the value as written, to b. */
static void
copy_field(struct kp_buf *b, const struct kp_field *f)
{
	kp_buf_add(b, ",", 1);
	kp_buf_string(b, f->key);
	kp_buf_add(b, ":", 1);
	kp_buf_add(b, f->raw, f->rawlen);
}

/*
 * An exited record: its CPU time joins the shares' denominator as a
 * process's does, and all its members but those written here with its
 * share are kept to be written on.  The reader has checked that it has
 * count, cpu_us, ppid and comm (kp-records(5)).
 */
static const char *
hold_exited(struct interval *iv, const struct kp_record *rec)
{
	struct exited *x;
	int64_t cpu_us = 0, sum_us;
	size_t i;

	kp_rec_int(rec, "cpu_us", &cpu_us);
	if (__builtin_add_overflow(iv->procs_us, cpu_us, &sum_us))
		return OVERFLOW;
	iv->procs_us = sum_us;
	if (iv->nexited == iv->capexited) {
		iv->capexited = iv->capexited * 2 + 16;
		iv->exited = xrealloc(iv->exited, iv->capexited,
		    sizeof(*iv->exited));
	}
	x = &iv->exited[iv->nexited++];
	x->cpu_us = cpu_us;
	x->line_off = x->line_len = 0;
	x->id_off = iv->text.len;
	for (i = 0; i < rec->nf; i++)
		if (!written_here(rec->f[i].key))
			copy_field(&iv->text, &rec->f[i]);
	x->id_len = iv->text.len - x->id_off;
	return NULL;
}

/* A record this stage consumes; why not, if it cannot. */
static const char *
hold_record(struct interval *iv, const struct kp_record *rec)
{
	if (strcmp(rec->type, "energy") == 0)
		return hold_energy(iv, rec);
	if (strcmp(rec->type, "cpu") == 0)
		return hold_cpu(iv, rec);
	if (strcmp(rec->type, "exited") == 0)
		return hold_exited(iv, rec);
	return hold_proc(iv, rec);
}

/*
 * An exited record with a zone has been given its energy, as this stage
 * writes it: like a process record, it passes on as it came.
 */
static int
consumed(const struct kp_record *rec)
{
	const char *type = rec->type;

	if (strcmp(type, "exited") == 0)
		return kp_rec_get(rec, "zone") == NULL;
	return strcmp(type, "energy") == 0 || strcmp(type, "cpu") == 0 ||
	    strcmp(type, "proc") == 0;
}

/*
 * A record of the open interval, which the reader has checked is of its
 * seq (kp-records(5)): held, and its line kept to pass on if unused.  One
 * refused here is untaken, so that its seq moves the reader's ordering no
 * more than it moves that of the stages after, which never see it.
 */
static void
hold(struct kp_reader *r, const struct kp_record *rec, struct interval *iv)
{
	const char *why;

	if ((why = hold_record(iv, rec)) != NULL) {
		kp_reader_refuse(r, "%s record %s", rec->type, why);
		return;
	}
	if (strcmp(rec->type, "proc") == 0) {
		iv->procs[iv->nprocs - 1].line_off = iv->lines.len;
		iv->procs[iv->nprocs - 1].line_len = rec->len;
	} else if (strcmp(rec->type, "exited") == 0) {
		iv->exited[iv->nexited - 1].line_off = iv->lines.len;
		iv->exited[iv->nexited - 1].line_len = rec->len;
	}
	kp_buf_add(&iv->lines, rec->line, rec->len);
	kp_buf_add(&iv->lines, "\n", 1);
	iv->seq = rec->seq;
}

/* The lines of the sampler's records, to be read as records. */
static void
keep_sampled(const char *type, const char *line, size_t len, void *arg)
{
	(void)type;
	kp_buf_add(arg, line, len);
	kp_buf_add(arg, "\n", 1);
}

/* This stage's own sample of /proc, held as upstream records would be. */
static void
hold_sampled(struct interval *iv, struct kp_sampler *s, int64_t seq)
{
	struct kp_buf lines = { NULL, 0, 0 };
	struct kp_reader *sr;
	struct kp_record rec;
	const char *why;

	kp_sampler_emit(s, seq, keep_sampled, &lines);
	sr = kp_reader_open_mem(lines.s, lines.len, procdir);
	while (kp_reader_read(sr, &rec) > 0)
		if ((why = hold_record(iv, &rec)) != NULL)
			errx(KP_EXIT_FAILURE, "%s: a sampled %s record %s",
			    procdir, rec.type, why);
	if (kp_reader_errors(sr) > 0 || kp_reader_why(sr) != NULL)
		errx(KP_EXIT_FAILURE, "%s: a sampled record: %s", procdir,
		    kp_reader_why(sr));
	kp_reader_close(sr);
	free(lines.s);
}

static void
pass_lines(struct kp_buf *lines)
{
	const char *p = lines->s, *end = lines->s + lines->len, *nl;

	for (; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		kp_out_raw(p, (size_t)(nl - p));
	}
}

/*
 * An interval cut short, which the reader has reported: its records have
 * no length to give them energy by, and pass on as they came.
 */
static void
pass_cut(struct interval *iv)
{
	pass_lines(&iv->lines);
	interval_clear(iv);
}

/* Seconds since the RFC 3339 time ts (UTC, "Z"); 0 if it is not one. */
static double
age_s(const char *ts)
{
	struct tm tm;
	const char *rest;

	memset(&tm, 0, sizeof(tm));
	if (ts == NULL || (rest = strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm)) ==
	    NULL)
		return 0;
	return (double)kp_wall_us() / 1e6 - (double)timegm(&tm);
}

/*
 * Sampling /proc here measures now: an interval that ended long before
 * (a recording replayed) cannot be given CPU times from now.
 */
static void
check_live(struct kp_reader *r, const struct kp_record *rec, int64_t dt_us)
{
	double age, allowed = (double)dt_us / 1e6 + 10;

	if ((age = age_s(kp_rec_str(rec, "ts"))) <= allowed)
		return;
	kp_reader_reject(r, "interval %lld ended %.0f s ago, but without cpu "
	    "records this stage samples /proc now: a recorded stream must "
	    "carry its own cpu and proc records (see proc-cputime(1))",
	    (long long)rec->seq, age);
	exit(KP_EXIT_DATAERR);
}

/*
 * Proc or exited records without a cpu record: the node's CPU time is
 * unknown, so this stage samples /proc for the whole interval, and those
 * records, not attributed, pass on as they came, reported.
 */
static void
pass_unsampled(struct kp_reader *r, struct interval *iv, int64_t seq)
{
	struct proc *p;
	size_t i;

	if (iv->nprocs > 0)
		kp_reader_reject(r, "interval %lld has %zu proc record(s) but "
		    "no cpu record: they pass on unattributed (see "
		    "kp-records(5))", (long long)seq, iv->nprocs);
	if (iv->nexited > 0)
		kp_reader_reject(r, "interval %lld has %zu exited record(s) "
		    "but no cpu record: they pass on unattributed (see "
		    "kp-records(5))", (long long)seq, iv->nexited);
	for (i = 0; i < iv->nprocs; i++) {
		p = &iv->procs[i];
		kp_out_raw(iv->lines.s + p->line_off, p->line_len);
	}
	for (i = 0; i < iv->nexited; i++)
		kp_out_raw(iv->lines.s + iv->exited[i].line_off,
		    iv->exited[i].line_len);
	iv->nprocs = iv->nexited = 0;
	iv->procs_us = 0;
}

/*
 * A terminated process waits to be reported in the next interval with
 * energy.  When the tracker is full, the one with the least energy goes
 * unreported: the smallest held one makes room, unless it is the new one.
 */
static void
track_ended(const struct proc *p, const struct workload *w, const char *text)
{
	size_t j, min = 0;
	struct ended *e;

	if ((size_t)max_terminated == nended) {
		for (j = 1; j < nended; j++)
			if (sum_total(&ended[j].w) < sum_total(&ended[min].w))
				min = j;
		if (sum_total(w) <= sum_total(&ended[min].w))
			return;
		free(ended[min].id);
		ended[min] = ended[--nended];
	}
	ended = xrealloc(ended, nended + 1, sizeof(*ended));
	e = &ended[nended++];
	e->w = *w;
	e->id_len = p->id_len;
	if ((e->id = malloc(p->id_len + 1)) == NULL)
		err(KP_EXIT_FAILURE, "malloc");
	memcpy(e->id, text + p->id_off, p->id_len);
}

/* Processes that ended in this interval have had their last share. */
static void
retire(struct interval *iv, int attributed)
{
	struct workload *w;
	struct proc *p;
	size_t i;

	if (attributed) {
		for (i = 0; i < nended; i++)
			free(ended[i].id);
		nended = 0;
	}
	for (i = 0; i < iv->nprocs; i++) {
		p = &iv->procs[i];
		if (!p->terminated)
			continue;
		w = workload(p->pid, p->starttime, 0);
		if (!attributed && w != NULL && reportable(w) &&
		    max_terminated > 0)
			track_ended(p, w, iv->text.s);
		forget(p->pid, p->starttime);
	}
}

static int
seen_before(void *val, void *arg)
{
	return ((struct workload *)val)->last_seq < *(const int64_t *)arg;
}

static void
last_seq_of(const char *key, void *val, void *arg)
{
	int64_t **p = arg;

	(void)key;
	*(*p)++ = ((struct workload *)val)->last_seq;
}

/*
 * D2: after a dense interval, the processes it had no record of have
 * ended; a sparse stream that never says so holds at most KP_LIVE_MAX.
 */
static void
let_go(int dense, int64_t seq)
{
	static int told;
	size_t n = kp_map_count(workloads);
	int64_t *seqs, *p, cut = seq;

	if (!dense && n <= KP_LIVE_MAX)
		return;
	if (!dense) {
		p = seqs = kp_reallocarray(NULL, n, sizeof(*seqs));
		kp_map_each(workloads, last_seq_of, &p);
		cut = kp_live_cut(seqs, n, KP_LIVE_MAX / 2);
		free(seqs);
		if (!told++)
			warnx("%zu processes without an end, more than %d: "
			    "those seen least recently are forgotten, and "
			    "their totals start again if they come back", n,
			    KP_LIVE_MAX);
	}
	kp_map_sweep(workloads, seen_before, &cut, free);
}

/*
 * Interval seq ends: without upstream CPU records, sample /proc now, so
 * that rapl-read | kp-attribute works; without energy there is nothing to
 * attribute, and the CPU records pass on as they came.
 */
static void
end_interval(struct kp_reader *r, struct interval *iv,
    const struct kp_record *rec, struct kp_sampler *s)
{
	int64_t dt_us = 0;
	size_t i;

	kp_rec_int(rec, "dt_us", &dt_us);
	if (!iv->has_cpu) {
		if (iv->nenergy > 0 && iv->nprocs + iv->nexited > 0)
			pass_unsampled(r, iv, rec->seq);
		if (iv->nenergy > 0)
			check_live(r, rec, dt_us);
		if (kp_sampler_scan(s) < 0)
			errx(KP_EXIT_FAILURE, "%s", kp_sampler_error(s));
		iv->nprocs = iv->nexited = 0;
		iv->procs_us = 0;
		hold_sampled(iv, s, rec->seq);
	}
	if (iv->nenergy == 0)
		pass_lines(&iv->lines);
	if (nshares < iv->nprocs + iv->nexited + 2) {
		nshares = iv->nprocs + iv->nexited + 2;
		shares = xrealloc(shares, nshares, sizeof(*shares));
		order = xrealloc(order, nshares, sizeof(*order));
	}
	if (iv->nenergy > 0)
		for (i = 0; i < iv->nprocs; i++) {
			iv->procs[i].w = workload(iv->procs[i].pid,
			    iv->procs[i].starttime, 1);
			iv->procs[i].w->last_seq = rec->seq;
		}
	for (i = 0; i < iv->nenergy; i++)
		attribute_zone(iv, &iv->energy[i], rec->seq, dt_us);
	retire(iv, iv->nenergy > 0);
	if (iv->nenergy > 0)
		let_go(iv->dense, rec->seq);
	kp_out_raw(rec->line, rec->len);
	kp_out_flush();
	interval_clear(iv);
}

/*
 * Totals from a state file are checked before they are used: a process's
 * or the unattributed total is a part of its zone's node total, so that
 * a check of the node total when energy is added (energy_fits) keeps
 * every total from overflowing.
 */
static int
totals_within(const int64_t *total_uj)
{
	size_t z;

	for (z = 0; z < zones.n; z++)
		if (total_uj[z] < 0 || total_uj[z] > node_total[z].total_uj)
			return 0;
	return 1;
}

static void
load_node(json_t *node, const char *path)
{
	const char *zone;
	json_t *v;
	int z;

	json_object_foreach(node, zone, v) {
		if ((z = kp_zone_index(&zones, zone, strlen(zone))) < 0)
			continue;
		kp_json_int(v, "total_uj", &node_total[z].total_uj);
		kp_json_int(v, "active_total_uj", &node_total[z].active_total_uj);
		kp_json_int(v, "idle_total_uj", &node_total[z].idle_total_uj);
		if (node_total[z].total_uj < 0 ||
		    node_total[z].active_total_uj < 0 ||
		    node_total[z].idle_total_uj < 0 ||
		    node_total[z].active_total_uj > node_total[z].total_uj ||
		    node_total[z].idle_total_uj > node_total[z].total_uj) {
			warnx("%s: unusable totals of zone '%s' in the state "
			    "file, starting from zero", path, zone);
			memset(&node_total[z], 0, sizeof(node_total[z]));
		}
	}
}

static void
load_procs(json_t *procs, const char *path)
{
	int64_t pid, starttime;
	struct workload w;
	const char *key;
	json_t *v;

	json_object_foreach(procs, key, v) {
		if (!kp_proc_key_parse(key, &pid, &starttime))
			continue;
		memset(&w, 0, sizeof(w));
		kp_zones_load(&zones, v, w.total_uj);
		if (!totals_within(w.total_uj)) {
			warnx("%s: unusable totals of process '%s' in the "
			    "state file, left out", path, key);
			continue;
		}
		*workload(pid, starttime, 1) = w;
	}
}

/* Whether stored identity text is what hold_proc copies: ,"pid":7,... */
static int
id_ok(const char *id)
{
	return id[0] == ',' && kp_members_count(id) > 0;
}

static void
load_ended(json_t *list, const char *path)
{
	struct ended *e;
	struct workload w;
	json_t *v;
	size_t i;

	json_array_foreach(list, i, v) {
		if (!json_is_string(json_object_get(v, "id")) ||
		    (max_terminated > 0 && nended == (size_t)max_terminated))
			continue;
		if (!id_ok(kp_json_str(v, "id"))) {
			warnx("%s: a terminated process whose identity is not "
			    "JSON members in the state file, left out", path);
			continue;
		}
		memset(&w, 0, sizeof(w));
		kp_zones_load(&zones, json_object_get(v, "totals"), w.total_uj);
		if (!totals_within(w.total_uj)) {
			warnx("%s: unusable totals of a terminated process in "
			    "the state file, left out", path);
			continue;
		}
		ended = xrealloc(ended, nended + 1, sizeof(*ended));
		e = &ended[nended++];
		e->w = w;
		if ((e->id = strdup(kp_json_str(v, "id"))) == NULL)
			err(KP_EXIT_FAILURE, "strdup");
		e->id_len = strlen(e->id);
	}
}

/* Totals and the /proc baseline from the previous run, if it left them. */
static void
load_state(struct kp_state *st, const char *path, struct kp_sampler *s)
{
	json_t *data = kp_state_data_any_boot(st), *node, *unattr, *procs,
	    *saved;

	if (data == NULL)
		return;
	if (json_unpack(data, "{s:o,s:o,s:o}", "node", &node,
	    "unattributed", &unattr, "procs", &procs) < 0 ||
	    !json_is_object(node) || !json_is_object(unattr) ||
	    !json_is_object(procs)) {
		warnx("%s: unusable totals in the state file, starting from "
		    "zero", path);
		return;
	}
	load_node(node, path);
	kp_zones_load(&zones, unattr, unattributed_total);
	if (!totals_within(unattributed_total)) {
		warnx("%s: unusable unattributed totals in the state file, "
		    "starting from zero", path);
		memset(unattributed_total, 0, sizeof(unattributed_total));
	}
	load_ended(json_object_get(data, "terminated"), path);
	/*
	 * The node's totals go on across a reboot, but the processes of an
	 * earlier boot are gone, and their pid:starttime keys come again in
	 * this one; a /proc sample of an earlier boot means nothing either.
	 */
	if (kp_state_data(st) == NULL)
		return;
	load_procs(procs, path);
	if ((saved = json_object_get(data, "sampler")) != NULL &&
	    kp_sampler_load(s, saved) < 0)
		warnx("%s: unusable /proc sample in the state file, "
		    "starting a new baseline", path);
}

static void
save_workload(const char *key, void *val, void *arg)
{
	json_object_set_new(arg, key,
	    kp_zones_save(&zones, ((struct workload *)val)->total_uj));
}

static json_t *
state_data(struct kp_sampler *s)
{
	json_t *data, *node, *procs, *list;
	size_t z, i;

	node = json_object();
	for (z = 0; z < zones.n; z++)
		json_object_set_new(node, zones.name[z], json_pack("{s:I,s:I,s:I}",
		    "total_uj", (json_int_t)node_total[z].total_uj,
		    "active_total_uj", (json_int_t)node_total[z].active_total_uj,
		    "idle_total_uj", (json_int_t)node_total[z].idle_total_uj));
	procs = json_object();
	kp_map_each(workloads, save_workload, procs);
	list = json_array();
	for (i = 0; i < nended; i++)
		json_array_append_new(list, json_pack("{s:s%,s:o}",
		    "id", ended[i].id, ended[i].id_len,
		    "totals", kp_zones_save(&zones, ended[i].w.total_uj)));
	data = json_pack("{s:o,s:o,s:o,s:o}", "node", node, "unattributed",
	    kp_zones_save(&zones, unattributed_total), "procs", procs,
	    "terminated", list);
	if (kp_sampler_has_baseline(s))
		json_object_set_new(data, "sampler", kp_sampler_save(s));
	return data;
}

/*
 * The stream, interval by interval.  With --state, the state that counts
 * an interval is prepared before any of its records goes out, those passed
 * on as they came included, and committed after them, at most once a
 * second (D5).
 */
static void
run(struct kp_reader *r, struct kp_sampler *s, struct kp_state *st)
{
	struct interval iv;
	struct kp_record rec;

	memset(&iv, 0, sizeof(iv));
	iv.seq = -1;
	/* Never NULL, so that offsets into them are always defined. */
	iv.text.cap = iv.lines.cap = 256;
	iv.text.s = kp_malloc(iv.text.cap);
	iv.lines.s = kp_malloc(iv.lines.cap);
	kp_state_hold(st);
	while (kp_reader_next(r, &rec) > 0) {
		if (rec.cut_seq >= 0)
			pass_cut(&iv);
		if (strcmp(rec.type, "interval") == 0) {
			end_interval(r, &iv, &rec, s);
			kp_state_interval_end(st, kp_state_due(st) ?
			    state_data(s) : NULL);
		} else if (consumed(&rec))
			hold(r, &rec, &iv);
		else
			kp_out_raw(rec.line, rec.len);
	}
	/* The stream ended inside an interval, which the reader reported. */
	pass_lines(&iv.lines);
	free(iv.energy);
	free(iv.procs);
	free(iv.exited);
	free(iv.text.s);
	free(iv.lines.s);
}

static void
parse_baseline(const char *arg)
{
	const char *eq = strchr(arg, '=');

	if (eq == NULL) {
		baseline_default = kp_parse_double(arg, 0, 1e6,
		    "--baseline-watts");
		return;
	}
	if (nbaseline == KP_ZONES_MAX)
		errx(KP_EXIT_USAGE, "too many --baseline-watts zones");
	if ((baseline_zone[nbaseline] = strndup(arg, (size_t)(eq - arg))) ==
	    NULL)
		err(KP_EXIT_FAILURE, "strndup");
	baseline_watts[nbaseline++] = kp_parse_double(eq + 1, 0, 1e6,
	    "--baseline-watts");
}

static int
choice(const char *arg, const char *a, const char *b, const char *what)
{
	if (strcmp(arg, a) == 0)
		return 0;
	if (strcmp(arg, b) == 0)
		return 1;
	errx(KP_EXIT_USAGE, "%s must be '%s' or '%s': '%s'", what, a, b, arg);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "baseline-watts", required_argument, NULL, 'B' },
		{ "denominator", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ "idle", required_argument, NULL, 'I' },
		{ "max-terminated", required_argument, NULL, 'M' },
		{ "min-terminated-energy", required_argument, NULL, 'E' },
		{ "proc", required_argument, NULL, 'P' },
		{ "split", required_argument, NULL, 'L' },
		{ "state", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 }
	};
	const char *statepath = NULL;
	struct kp_state *st = NULL;
	struct kp_sampler *s;
	struct kp_reader *r;
	int ch, status;
	size_t i;

	kp_out_init();
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'B':
			parse_baseline(optarg);
			break;
		case 'D':
			denom_mode = choice(optarg, "node", "processes",
			    "--denominator") ? DENOM_PROCESSES : DENOM_NODE;
			break;
		case 'E':
			min_terminated_uj = (int64_t)llround(kp_parse_double(
			    optarg, 0, 1e12, "--min-terminated-energy") * 1e6);
			break;
		case 'I':
			idle_mode = choice(optarg, "none", "proportional",
			    "--idle") ? IDLE_PROPORTIONAL : IDLE_NONE;
			break;
		case 'L':
			split_mode = choice(optarg, "ratio", "baseline",
			    "--split") ? SPLIT_BASELINE : SPLIT_RATIO;
			break;
		case 'M':
			max_terminated = kp_parse_int(optarg, 0, 1000000,
			    "--max-terminated");
			break;
		case 'P':
			procdir = optarg;
			break;
		case 'S':
			statepath = optarg;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 0)
		usage();
	if ((split_mode == SPLIT_BASELINE) !=
	    (baseline_default >= 0 || nbaseline > 0))
		errx(KP_EXIT_USAGE, "--split baseline and --baseline-watts "
		    "go together");

	workloads = kp_map_new();
	s = kp_sampler_new(procdir, 0);
	/* Its exited records are attributed as upstream ones would be. */
	(void)kp_sampler_set_exits(s, KP_EXITS_PARENT | KP_EXITS_CGROUP, NULL);
	if (statepath) {
		st = kp_state_open(statepath, procdir, "kp-attribute");
		load_state(st, statepath, s);
	}
	/* The baseline for sampling /proc here, should upstream bring no CPU. */
	if (!kp_sampler_has_baseline(s))
		(void)kp_sampler_scan(s);
	kp_signals_catch(NULL);
	r = kp_reader_open(STDIN_FILENO, "<stdin>");
	run(r, s, st);
	status = kp_reader_errors(r) ? KP_EXIT_DATAERR : KP_EXIT_OK;
	kp_state_need_input(st, kp_reader_lineno(r));
	kp_state_end(st, kp_state_pending(st) ? state_data(s) : NULL);
	kp_reader_close(r);
	kp_state_close(st);
	kp_sampler_free(s);
	kp_map_free(workloads, free);
	for (i = 0; i < nended; i++)
		free(ended[i].id);
	free(ended);
	for (i = 0; i < nbaseline; i++)
		free(baseline_zone[i]);
	free(out.s);
	free(shares);
	free(order);
	return kp_out_finish(status);
}
