/*
 * --summary: one record per workload (type, zone and identity) over the
 * whole run, its energy and CPU time summed and its power the mean over
 * the run; its other fields are those of its last record.  At the end the
 * summary is written as records, read back with the reader, and given to
 * the chosen format as one block, as any interval is.
 */
#include <err.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

/*
 * The fields that are summed, as integers: their names end in _uj or _us,
 * so the reader has checked that they are non-negative integers.
 */
static const char *const sum_fields[] = {
	"energy_uj", "active_uj", "idle_uj", "idle_kept_uj", "cpu_us",
	"total_cpu_us", NULL
};

/* One field of a workload's record. */
struct sum_field {
	char *key;
	size_t keylen;
	int summed;		/* one of sum_fields */
	int kind;		/* KP_V_* */
	int64_t i;		/* KP_V_INT */
	struct kp_buf raw;	/* the value as last read */
};

/* One workload: its fields in the order first read. */
struct workload {
	char *type;		/* the same in each of its records */
	struct sum_field *f;
	size_t nf, cap;
};

struct summary {
	const struct format *inner;	/* the chosen format, or NULL */
	void *inner_st;
	struct workload **w;		/* in order of first appearance */
	size_t n, cap;
	struct kp_map *index;		/* key -> one of w, borrowed */
	struct kp_buf key;
	int64_t first_seq, last_seq, dt_us;
	size_t intervals;		/* interval records read */
	struct kp_buf ts;		/* of the last interval, as JSON */
};

/*
 * a + b, held at INT64_MAX: only input that no meter wrote sums past it,
 * which is reported, line and field, and exits 3.
 */
static int64_t
add_held(struct fmt *ctx, int64_t a, int64_t b, const char *what,
    long lineno)
{
	int64_t sum;

	if (!__builtin_add_overflow(a, b, &sum))
		return sum;
	ctx->data_errors++;
	warnx("%s:%ld: --summary: the sum of %s passes %" PRId64 ", held "
	    "there", ctx->input_name, lineno, what, INT64_MAX);
	return INT64_MAX;
}

/* A part of a summary key: the value, if a string or an integer, and 0x1f. */
static void
key_part(struct kp_buf *key, const struct kp_field *v)
{
	if (v != NULL && v->kind == KP_V_STR)
		kp_buf_add(key, v->str, v->len);
	else if (v != NULL && v->kind == KP_V_INT)
		kp_buf_i64(key, v->i);
	kp_buf_add(key, "\x1f", 1);
}

/* What tells one workload from another, NUL-terminated in key. */
static void
workload_key(struct kp_buf *key, const struct kp_record *rec)
{
	static const char *const fields[] = {
		"type", "zone", "socket", "pid", "starttime", "container_id",
		"pod_id", "vm_id", "unit", "level", "by", NULL,
	};
	size_t i;

	key->len = 0;
	for (i = 0; fields[i] != NULL; i++)
		key_part(key, kp_rec_get(rec, fields[i]));
	/* Last, for a group record, the value of its "by" field. */
	if (kp_rec_str(rec, "by") != NULL)
		key_part(key, by_field(rec));
	kp_buf_add(key, "", 1);
}

static void
field_set(struct sum_field *sf, const struct kp_field *f)
{
	sf->kind = f->kind;
	sf->i = f->i;
	sf->raw.len = 0;
	kp_buf_add(&sf->raw, f->raw, f->rawlen);
}

static void
field_append(struct workload *w, const struct kp_field *f)
{
	struct sum_field *sf;

	if (w->nf == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 16;
		w->f = kp_reallocarray(w->f, w->cap, sizeof(*w->f));
	}
	sf = &w->f[w->nf++];
	memset(sf, 0, sizeof(*sf));
	sf->key = kp_strndup(f->key, f->keylen);
	sf->keylen = f->keylen;
	sf->summed = str_in_list(sum_fields, sf->key);
	field_set(sf, f);
}

/* The field of w named as f is, looked for first where hint is. */
static struct sum_field *
field_find(struct workload *w, const struct kp_field *f, size_t hint)
{
	size_t i;

	if (hint < w->nf && w->f[hint].keylen == f->keylen &&
	    memcmp(w->f[hint].key, f->key, f->keylen) == 0)
		return &w->f[hint];
	for (i = 0; i < w->nf; i++)
		if (w->f[i].keylen == f->keylen &&
		    memcmp(w->f[i].key, f->key, f->keylen) == 0)
			return &w->f[i];
	return NULL;
}

/* Adds a record of the same workload: sums summed, others replaced. */
static void
workload_merge(struct fmt *ctx, struct workload *w,
    const struct kp_record *rec)
{
	const struct kp_field *f;
	struct sum_field *sf;
	size_t i;

	for (i = 0; i < rec->nf; i++) {
		f = &rec->f[i];
		if ((sf = field_find(w, f, i)) == NULL)
			field_append(w, f);
		else if (sf->summed)
			sf->i = add_held(ctx, sf->i, f->i, sf->key,
			    rec->lineno);
		else
			field_set(sf, f);
	}
}

static struct workload *
workload_new(struct summary *s, const char *type)
{
	struct workload *w = kp_calloc(1, sizeof(*w));

	w->type = kp_strdup(type);
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->w = kp_reallocarray(s->w, s->cap, sizeof(*s->w));
	}
	s->w[s->n++] = w;
	kp_map_put(s->index, s->key.s, w);
	return w;
}

static void
workload_free(struct workload *w)
{
	size_t i;

	for (i = 0; i < w->nf; i++) {
		free(w->f[i].key);
		free(w->f[i].raw.s);
	}
	free(w->f);
	free(w->type);
	free(w);
}

static void
add_record(struct fmt *ctx, struct summary *s, const struct kp_record *rec)
{
	struct workload *w;

	if (s->first_seq < 0 || rec->seq < s->first_seq)
		s->first_seq = rec->seq;
	workload_key(&s->key, rec);
	if ((w = kp_map_get(s->index, s->key.s)) == NULL)
		w = workload_new(s, rec->type);
	workload_merge(ctx, w, rec);
}

/* Adds one whole interval: its records and its length. */
static void
add_interval(struct fmt *ctx, struct summary *s, const struct block *b,
    const struct kp_record *interval)
{
	const struct kp_field *ts;
	int64_t dt_us;
	size_t i;

	for (i = 0; i < b->n; i++)
		add_record(ctx, s, b->recs[i]);
	s->intervals++;
	s->last_seq = interval->seq;
	if (s->first_seq < 0 || interval->seq < s->first_seq)
		s->first_seq = interval->seq;
	if (kp_rec_int(interval, "dt_us", &dt_us))
		s->dt_us = add_held(ctx, s->dt_us, dt_us, "dt_us",
		    interval->lineno);
	if ((ts = kp_rec_get(interval, "ts")) != NULL) {
		s->ts.len = 0;
		kp_buf_add(&s->ts, ts->raw, ts->rawlen);
	}
}

/* A power or a ratio: the shortest decimal that reads back, as a real. */
static void
put_real(struct kp_buf *b, double v)
{
	size_t mark = b->len;

	put_double(b, v);
	if (memchr(b->s + mark, '.', b->len - mark) == NULL &&
	    memchr(b->s + mark, 'e', b->len - mark) == NULL)
		kp_buf_add(b, ".0", 2);
}

static const struct sum_field *
workload_get(const struct workload *w, const char *key)
{
	size_t i;

	for (i = 0; i < w->nf; i++)
		if (strcmp(w->f[i].key, key) == 0)
			return &w->f[i];
	return NULL;
}

/* Whether w has the integer field key, in *v. */
static int
workload_int(const struct workload *w, const char *key, int64_t *v)
{
	const struct sum_field *sf = workload_get(w, key);

	if (sf == NULL || sf->kind != KP_V_INT)
		return 0;
	*v = sf->i;
	return 1;
}

/* The fields the summary works out: the mean powers and the usage. */
struct derived {
	const char *key;
	double v;
	int have, done;
};

static void
derive(const struct summary *s, const struct workload *w,
    struct derived *d)
{
	static const char *const watts[][2] = {
		{ "energy_uj", "watts" }, { "active_uj", "active_watts" },
		{ "idle_uj", "idle_watts" },
	};
	int64_t e, a, t;
	size_t i;

	for (i = 0; i < NELEM(watts); i++) {
		d[i].key = watts[i][1];
		d[i].have = s->dt_us > 0 && workload_int(w, watts[i][0], &e);
		d[i].v = d[i].have ? kp_watts(e, s->dt_us) : 0;
	}
	d[i].key = "usage_ratio";
	if (strcmp(w->type, "node") == 0 &&
	    workload_int(w, "energy_uj", &e) &&
	    workload_int(w, "active_uj", &a))
		d[i].have = 1, d[i].v = kp_usage_ratio(a, e);
	else if (strcmp(w->type, "cpu") == 0 &&
	    workload_int(w, "cpu_us", &a) &&
	    workload_int(w, "total_cpu_us", &t))
		d[i].have = 1, d[i].v = kp_usage_ratio(a, t);
	d[++i].key = NULL;
}

/* "key": after the opening brace, or after a comma. */
static void
put_member(struct kp_buf *b, const char *key, int first)
{
	if (!first)
		kp_buf_add(b, ",", 1);
	kp_buf_string(b, key);
	kp_buf_add(b, ":", 1);
}

/* A value of w as the summary has it. */
static void
put_value(const struct summary *s, struct kp_buf *b,
    const struct sum_field *sf, struct derived *d)
{
	for (; d->key != NULL; d++)
		if (d->have && strcmp(d->key, sf->key) == 0) {
			put_real(b, d->v);
			d->done = 1;
			return;
		}
	if (strcmp(sf->key, "seq") == 0)
		kp_buf_i64(b, s->last_seq);
	else if (sf->summed)
		kp_buf_i64(b, sf->i);
	else
		kp_buf_add(b, sf->raw.s, sf->raw.len);
}

/* The record of a workload over the run, a line in b. */
static void
workload_line(const struct summary *s, struct kp_buf *b,
    const struct workload *w)
{
	struct derived d[5];
	size_t i;

	memset(d, 0, sizeof(d));
	derive(s, w, d);
	kp_buf_add(b, "{", 1);
	for (i = 0; i < w->nf; i++) {
		put_member(b, w->f[i].key, i == 0);
		put_value(s, b, &w->f[i], d);
	}
	for (i = 0; d[i].key != NULL; i++)
		if (d[i].have && !d[i].done) {
			put_member(b, d[i].key, 0);
			put_real(b, d[i].v);
		}
	kp_buf_add(b, "}\n", 2);
}

/* The interval record of the run, after the workloads' lines in b. */
static void
interval_line(const struct summary *s, struct kp_buf *b)
{
	struct kp_buf line = { NULL, 0, 0 };

	kp_buf_rec(&line, "interval", s->last_seq);
	if (s->ts.len > 0)
		kp_buf_raw(&line, "ts", s->ts.s, s->ts.len);
	kp_buf_int(&line, "dt_us", s->dt_us);
	kp_buf_add(&line, "}\n", 2);
	kp_buf_add(b, line.s, line.len);
	free(line.s);
}

/* The summary as one block to the chosen format, through the reader. */
static void
summary_write(struct fmt *ctx, struct summary *s)
{
	struct kp_buf text = { NULL, 0, 0 };
	struct block b = { 0 };
	struct kp_record rec;
	struct kp_reader *r;
	size_t i;
	int got;

	for (i = 0; i < s->n; i++)
		workload_line(s, &text, s->w[i]);
	interval_line(s, &text);
	r = kp_reader_open_mem(text.s, text.len, "--summary");
	while ((got = kp_reader_next(r, &rec)) > 0 &&
	    !rec_is(&rec, "interval"))
		block_add(&b, &rec);
	if (got <= 0 || kp_reader_errors(r) > 0)
		errx(KP_EXIT_FAILURE, "--summary: cannot read the summary");
	ctx->summary_first_seq = s->first_seq < 0 ? 0 : s->first_seq;
	s->inner->block(ctx, s->inner_st, &b, &rec);
	kp_reader_close(r);
	block_free(&b);
	free(text.s);
}

static void *
summary_begin(struct fmt *ctx)
{
	struct summary *s = kp_calloc(1, sizeof(*s));

	s->inner = ctx->format;
	if (s->inner != NULL)
		s->inner_st = s->inner->begin(ctx);
	s->index = kp_map_new();
	s->first_seq = -1;
	return s;
}

/* An interval cut short was reported by the reader: it is not summed. */
static void
summary_block(struct fmt *ctx, void *st, const struct block *b,
    const struct kp_record *interval)
{
	if (interval != NULL)
		add_interval(ctx, st, b, interval);
}

/*
 * Records after the last interval record belong to an interval whose
 * length is unknown: their energy over the other intervals' length would
 * be a power never seen, so the summary covers whole intervals only, and
 * says so rather than drop them without a word.
 */
static void
summary_end(struct fmt *ctx, void *st, const struct block *rest)
{
	struct block none = { 0 };
	struct summary *s = st;
	size_t i;

	if (rest->n > 0)
		warnx("%s: %zu record%s after the last interval record, an "
		    "incomplete interval, left out of the summary",
		    ctx->input_name, rest->n, rest->n == 1 ? "" : "s");
	if (s->inner != NULL && s->intervals > 0)
		summary_write(ctx, s);
	if (s->inner != NULL)
		s->inner->end(ctx, s->inner_st, &none);
	for (i = 0; i < s->n; i++)
		workload_free(s->w[i]);
	free(s->w);
	kp_map_free(s->index, NULL);
	free(s->key.s);
	free(s->ts.s);
	free(s);
}

const struct format fmt_summary = {
	"summary", summary_begin, summary_block, NULL, summary_end
};
