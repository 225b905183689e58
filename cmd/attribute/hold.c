/*
 * kp-attribute: the records of an interval, checked and held until its
 * interval record comes; those it cannot use pass on as they came.
 */
#include <err.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attribute.h"

#define NO_PID "without a positive integer pid"
#define LONG_ZONE "whose zone/socket passes 31 bytes: left out " \
    "(see kp-attribute(1))"
#define OVERFLOW "with a value that takes a sum past 2^60 or a total past " \
    "2^63-1"
#define TOO_MANY_ZONES "of a zone beyond the first 64: left out " \
    "(see kp-attribute(1))"

/*
 * The index of an energy record's zone key: its zone, with its socket or,
 * for a GPU, its device (kp_zone_key).  The reader has checked the names.
 */
static int
energy_zone(struct attr *a, const struct kp_record *rec)
{
	char key[sizeof(a->zones.name[0])];

	if (!kp_zone_key(rec, 1, key, sizeof(key)))
		return -1;
	return kp_zone_index(&a->zones, key, strlen(key));
}

/* The interval's proc and exited records, and what they summed, let go. */
void
drop_records(struct interval *iv)
{
	iv->nprocs = iv->nexited = 0;
	iv->procs_us = iv->gpu_procs_us = 0;
	iv->nrounded = 0;
	iv->worst_excess_us = 0;
	iv->worst_off = iv->worst_len = 0;
}

void
interval_clear(struct interval *iv)
{
	drop_records(iv);
	iv->nenergy = 0;
	iv->seq = -1;
	iv->has_cpu = iv->has_total = iv->dense = 0;
	iv->gpu_off = iv->gpu_len = 0;
	iv->text.len = 0;
	kp_spool_clear(&iv->ids);
	kp_spool_clear(&iv->lines);
}

/* Appends member key of rec to the identity text, if rec has it. */
static void
copy_member(struct kp_buf *b, const struct kp_record *rec, const char *key)
{
	const struct kp_field *f;

	if ((f = kp_rec_get(rec, key)) != NULL)
		kp_buf_raw(b, key, f->raw, f->rawlen);
}

/*
 * Whether v more microjoules of zone z would still fit every total that
 * they go to: the node's and the unattributed total, with what this
 * interval already holds, which the node record carries and so may not
 * pass KP_AMOUNT_MAX (kp-records(5)).  A process's total is a part of the
 * node's.
 */
static int
energy_fits(const struct attr *a, const struct interval *iv, int z, int64_t v)
{
	int64_t held_uj = v, total_uj;
	size_t i;

	for (i = 0; i < iv->nenergy; i++)
		if (iv->energy[i].zone == z &&
		    __builtin_add_overflow(held_uj, iv->energy[i].energy_uj,
		    &held_uj))
			return 0;
	return held_uj <= KP_AMOUNT_MAX &&
	    !__builtin_add_overflow(a->node_total[z].total_uj, held_uj,
	    &total_uj) && !__builtin_add_overflow(a->unattributed_total[z],
	    held_uj, &total_uj);
}

/*
 * cpu_us more to the interval's sum of CPU times, the shares' denominator,
 * which must be exact; 0 if it would pass KP_AMOUNT_MAX, more than an
 * interval of any node holds, and the sum stays as it was.
 */
static int
cpu_adds(struct interval *iv, int64_t cpu_us)
{
	int64_t sum_us;

	if (__builtin_add_overflow(iv->procs_us, cpu_us, &sum_us) ||
	    sum_us > KP_AMOUNT_MAX)
		return 0;
	iv->procs_us = sum_us;
	iv->nrounded += cpu_us > 0;
	return 1;
}

/*
 * What the node record says of where its energy comes from, as the
 * energy record says it (kp-attribute(1)): its source, whether it is
 * estimated, for an estimate the model and what it was given, and for a
 * guest's energy the VM host that measured it.
 */
static void
copy_source(struct kp_buf *b, const struct kp_record *rec)
{
	static const char *const keys[] = {
		"source", "estimated", "host", "model", "threads", "sockets",
		"path", NULL
	};
	const char *const *k;

	for (k = keys; *k; k++)
		copy_member(b, rec, *k);
}

/*
 * The value of a record's member key, as written, in the interval's text
 * at *off, *len bytes; 0 bytes without it.  The reader has checked it: a
 * gpu_us is an object of integers by device name, a uuid and a name
 * strings.
 */
static void
keep_value(struct interval *iv, const struct kp_record *rec, const char *key,
    size_t *off, size_t *len)
{
	const struct kp_field *f = kp_rec_get(rec, key);

	*off = iv->text.len;
	*len = 0;
	if (f == NULL)
		return;
	kp_buf_add(&iv->text, f->raw, f->rawlen);
	*len = f->rawlen;
}

/*
 * The reader has checked what each record held here must have
 * (kp-records(5)): an energy record's zone and energy_uj, a cpu record's
 * cpu_us and usage_ratio, a proc record's cpu_us.
 */
static const char *
hold_energy(struct attr *a, struct interval *iv, const struct kp_record *rec)
{
	struct energy *e;
	int64_t v = 0;
	int z;

	kp_rec_int(rec, "energy_uj", &v);
	if ((z = energy_zone(a, rec)) == -1)
		return LONG_ZONE;
	if (z < 0)
		return TOO_MANY_ZONES;
	if (!energy_fits(a, iv, z, v))
		return OVERFLOW;
	if (iv->nenergy == iv->capenergy) {
		iv->capenergy = iv->capenergy * 2 + 4;
		iv->energy = kp_reallocarray(iv->energy, iv->capenergy,
		    sizeof(*iv->energy));
	}
	e = &iv->energy[iv->nenergy++];
	e->zone = z;
	e->energy_uj = v;
	e->src_off = iv->text.len;
	copy_source(&iv->text, rec);
	e->src_len = iv->text.len - e->src_off;
	keep_value(iv, rec, "uuid", &e->uuid_off, &e->uuid_len);
	keep_value(iv, rec, "name", &e->name_off, &e->name_len);
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
	keep_value(iv, rec, "gpu_us", &iv->gpu_off, &iv->gpu_len);
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

/*
 * A proc record's GPU time joins the sum that each GPU's shares are
 * taken by, which must be exact as the CPU time's; 0 if it would pass
 * KP_AMOUNT_MAX, and the sum stays as it was.  Over every device, which
 * holds each device's sum.
 */
static int
gpu_adds(struct interval *iv, const struct kp_record *rec)
{
	const struct kp_field *f = kp_rec_get(rec, "gpu_us");
	int64_t sum_us = iv->gpu_procs_us;
	struct kp_member m;
	size_t pos = 0;

	if (f == NULL)
		return 1;
	while (kp_object_next(f->raw, f->rawlen, &pos, &m) > 0)
		if (__builtin_add_overflow(sum_us, m.num.i, &sum_us) ||
		    sum_us > KP_AMOUNT_MAX)
			return 0;
	iv->gpu_procs_us = sum_us;
	return 1;
}

static const char *
hold_proc(struct attr *a, struct interval *iv, const struct kp_record *rec)
{
	struct proc *p;
	int64_t pid = 0, cpu_us = 0, starttime = 0;

	/* A process is known by pid and starttime: one without a pid is none. */
	if (!kp_rec_int(rec, "pid", &pid) || pid <= 0)
		return NO_PID;
	kp_rec_int(rec, "cpu_us", &cpu_us);
	if (!gpu_adds(iv, rec) || !cpu_adds(iv, cpu_us))
		return OVERFLOW;
	kp_rec_int(rec, "starttime", &starttime);
	if (iv->nprocs == iv->capprocs) {
		iv->capprocs = iv->capprocs * 2 + 64;
		iv->procs = kp_reallocarray(iv->procs, iv->capprocs,
		    sizeof(*iv->procs));
	}
	p = &iv->procs[iv->nprocs++];
	p->pid = pid;
	p->starttime = starttime;
	p->cpu_us = cpu_us;
	p->line_off = p->line_len = 0;
	p->terminated = kp_rec_terminated(rec);
	keep_value(iv, rec, "gpu_us", &p->gpu_off, &p->gpu_len);
	a->out.len = 0;
	copy_identity(&a->out, rec);
	p->id_off = kp_spool_add(&iv->ids, a->out.s, a->out.len);
	p->id_len = (uint32_t)a->out.len;
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
 * The cgroup whose exited record says it passed its counter by the most
 * this interval: the one a scaled down interval names (kp-attribute(1)).
 */
static void
note_excess(struct interval *iv, const struct kp_record *rec)
{
	const struct kp_field *f;
	int64_t excess_us;

	if (!kp_rec_int(rec, "excess_cpu_us", &excess_us) ||
	    excess_us <= iv->worst_excess_us ||
	    (f = kp_rec_get(rec, "cgroup")) == NULL || f->kind != KP_V_STR)
		return;
	iv->worst_excess_us = excess_us;
	iv->worst_off = iv->text.len;
	kp_buf_add(&iv->text, f->raw, f->rawlen);
	iv->worst_len = f->rawlen;
}

/*
 * An exited record: its CPU time joins the shares' denominator as a
 * process's does, and all its members but those written here with its
 * share are kept to be written on.  The reader has checked that it has
 * count, cpu_us, ppid and comm (kp-records(5)).
 */
static const char *
hold_exited(struct attr *a, struct interval *iv, const struct kp_record *rec)
{
	struct exited *x;
	int64_t cpu_us = 0;
	size_t i;

	kp_rec_int(rec, "cpu_us", &cpu_us);
	if (!cpu_adds(iv, cpu_us))
		return OVERFLOW;
	if (iv->nexited == iv->capexited) {
		iv->capexited = iv->capexited * 2 + 16;
		iv->exited = kp_reallocarray(iv->exited, iv->capexited,
		    sizeof(*iv->exited));
	}
	x = &iv->exited[iv->nexited++];
	x->cpu_us = cpu_us;
	x->line_off = x->line_len = 0;
	a->out.len = 0;
	for (i = 0; i < rec->nf; i++)
		if (!written_here(rec->f[i].key))
			copy_field(&a->out, &rec->f[i]);
	x->id_off = kp_spool_add(&iv->ids, a->out.s, a->out.len);
	x->id_len = (uint32_t)a->out.len;
	note_excess(iv, rec);
	return NULL;
}

/* A record this stage consumes; why not, if it cannot. */
static const char *
hold_record(struct attr *a, struct interval *iv, const struct kp_record *rec)
{
	if (strcmp(rec->type, "energy") == 0)
		return hold_energy(a, iv, rec);
	if (strcmp(rec->type, "cpu") == 0)
		return hold_cpu(iv, rec);
	if (strcmp(rec->type, "exited") == 0)
		return hold_exited(a, iv, rec);
	return hold_proc(a, iv, rec);
}

/*
 * An exited record with a zone has been given its energy, as this stage
 * writes it: like a process record, it passes on as it came.
 */
int
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
void
hold(struct attr *a, struct kp_reader *r, const struct kp_record *rec,
    struct interval *iv)
{
	const char *why;
	size_t off;

	if ((why = hold_record(a, iv, rec)) != NULL) {
		kp_reader_refuse(r, "%s record %s", rec->type, why);
		return;
	}
	a->out.len = 0;
	kp_buf_add(&a->out, rec->line, rec->len);
	kp_buf_add(&a->out, "\n", 1);
	off = kp_spool_add(&iv->lines, a->out.s, a->out.len);
	if (strcmp(rec->type, "proc") == 0) {
		iv->procs[iv->nprocs - 1].line_off = off;
		iv->procs[iv->nprocs - 1].line_len = (uint32_t)rec->len;
	} else if (strcmp(rec->type, "exited") == 0) {
		iv->exited[iv->nexited - 1].line_off = off;
		iv->exited[iv->nexited - 1].line_len = (uint32_t)rec->len;
	}
	iv->seq = rec->seq;
}

/* A sample's records on their way to be held, a chunk at a time. */
struct sampled {
	struct attr *a;
	struct interval *iv;
	struct kp_buf lines;
};

/* The chunk of the sample's lines so far, read and held as records. */
static void
hold_chunk(struct sampled *sm)
{
	const char *procdir = sm->a->opt.sample.procdir, *why;
	struct kp_reader *sr;
	struct kp_record rec;

	sr = kp_reader_open_mem(sm->lines.s, sm->lines.len, procdir);
	while (kp_reader_read(sr, &rec) > 0)
		if ((why = hold_record(sm->a, sm->iv, &rec)) != NULL)
			errx(KP_EXIT_FAILURE, "%s: a sampled %s record %s",
			    procdir, rec.type, why);
	if (kp_reader_errors(sr) > 0 || kp_reader_why(sr) != NULL)
		errx(KP_EXIT_FAILURE, "%s: a sampled record: %s", procdir,
		    kp_reader_why(sr));
	kp_reader_close(sr);
	sm->lines.len = 0;
}

/*
 * A line of the sampler's records, held a chunk at a time so that a
 * sample is never in memory whole.
 */
static void
keep_sampled(const char *type, const char *line, size_t len, void *arg)
{
	struct sampled *sm = arg;

	(void)type;
	kp_buf_add(&sm->lines, line, len);
	kp_buf_add(&sm->lines, "\n", 1);
	if (sm->lines.len >= 1 << 20)
		hold_chunk(sm);
}

/* This stage's own sample of /proc, held as upstream records would be. */
void
hold_sampled(struct attr *a, struct interval *iv, struct kp_sampler *s,
    int64_t seq)
{
	struct sampled sm = { a, iv, { NULL, 0, 0 } };

	kp_sampler_emit(s, seq, keep_sampled, &sm);
	hold_chunk(&sm);
	free(sm.lines.s);
}

static void
out_line(const char *line, size_t len, void *arg)
{
	(void)arg;
	kp_out_raw(line, len);
}

void
pass_lines(struct kp_spool *lines)
{
	kp_spool_lines(lines, out_line, NULL);
}

/*
 * An interval cut short, which the reader has reported: its records have
 * no length to give them energy by, and pass on as they came.
 */
void
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
void
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
void
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
		kp_out_raw(kp_spool_get(&iv->lines, p->line_off, p->line_len),
		    p->line_len);
	}
	for (i = 0; i < iv->nexited; i++)
		kp_out_raw(kp_spool_get(&iv->lines, iv->exited[i].line_off,
		    iv->exited[i].line_len), iv->exited[i].line_len);
	drop_records(iv);
}
