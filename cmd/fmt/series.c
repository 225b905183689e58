/*
 * Counter series, which never go back and are forgotten when their
 * workload has been gone a while, and the samples a family writes.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"

/*
 * a + b, or, when that does not fit an int64_t, the limit it passed, with
 * *over set: a sum of microjoules that large (292 years at 1 kW) only
 * comes from input no meter wrote, and a counter must not wrap backwards.
 */
int64_t
add_saturated(int64_t a, int64_t b, int *over)
{
	int64_t sum;

	if (!__builtin_add_overflow(a, b, &sum))
		return sum;
	*over = 1;
	return b > 0 ? INT64_MAX : INT64_MIN;
}

/* Says, once per series, that its counter is held at its limit. */
void
report_saturated(struct fmt *ctx, struct series *s, const char *series_key,
    const struct kp_record *rec)
{
	struct kp_buf j = { NULL, 0, 0 };

	if (s->saturated)
		return;
	s->saturated = 1;
	ctx->data_errors++;
	put_joules(&j, INT64_MAX);
	kp_warn_line(ctx->input_name, rec->lineno, "%s passes %.*s J, held "
	    "there", series_key, (int)j.len, j.s);
	free(j.s);
}

/* The keys of the series to forget, gathered before any is removed. */
struct stale {
	unsigned long gen;
	char **keys;
	size_t n, cap;
};

static void
stale_collect(const char *key, void *val, void *arg)
{
	const struct series *s = val;
	struct stale *st = arg;

	if (s->forget_after == 0 || st->gen - s->seen_gen < s->forget_after)
		return;
	if (st->n == st->cap) {
		st->cap = st->cap ? st->cap * 2 : 64;
		st->keys = kp_reallocarray(st->keys, st->cap,
		    sizeof(*st->keys));
	}
	st->keys[st->n++] = kp_strdup(key);
}

/* Forgets the workload series that have had no sample for a while. */
void
forget_stale(struct prom *p)
{
	struct stale st = { p->gen, NULL, 0, 0 };
	size_t i;

	kp_map_each(p->series, stale_collect, &st);
	for (i = 0; i < st.n; i++) {
		free(kp_map_remove(p->series, st.keys[i]));
		free(st.keys[i]);
	}
	free(st.keys);
}

/* The series of p->key; *fresh: not sampled yet in this block. */
struct series *
series_get(struct prom *p, const struct family *f, int *fresh)
{
	struct series *s;

	if ((s = kp_map_get(p->series, p->key.s)) == NULL) {
		s = kp_calloc(1, sizeof(*s));
		if (strcmp(f->rectype, "exited") == 0)
			s->forget_after = EXITED_FORGET_INTERVALS;
		else if (str_in_list(workload_types, f->rectype))
			s->forget_after = FORGET_INTERVALS;
		kp_map_put(p->series, p->key.s, s);
		s->seen_gen = p->gen - 1;
	}
	*fresh = s->seen_gen != p->gen;
	s->seen_gen = p->gen;
	return s;
}

/*
 * The cumulative microjoules (or microseconds) of counter series s: the
 * record's own total, with anything the total lost in a reset (a restarted
 * stage) kept, or kp-fmt's own sum of the interval's part when the record
 * has no total.  Returns 0 when the record has neither.
 */
static int
counter_uj(struct fmt *ctx, struct prom *p, struct series *s,
    const struct family *f, const struct kp_record *rec, int64_t *uj)
{
	int64_t v;
	int over = 0;

	if (f->field != NULL && kp_rec_int(rec, f->field, &v)) {
		/* After a terminated record, a total is a new workload's. */
		if (s->seen && (v < s->last_in || s->ended))
			s->offset = add_saturated(s->offset, s->last_in,
			    &over);
		s->ended = kp_rec_terminated(rec);
		s->last_in = v;
		s->seen = 1;
		*uj = add_saturated(s->offset, v, &over);
	} else if (kp_rec_int(rec, f->delta, &v)) {
		s->sum_uj = add_saturated(s->sum_uj, v, &over);
		*uj = s->sum_uj;
	} else
		return 0;
	if (over)
		report_saturated(ctx, s, p->key.s, rec);
	/* A series whose records stop carrying their total keeps its value. */
	if (*uj < s->shown_uj)
		*uj = s->shown_uj;
	s->shown_uj = *uj;
	return 1;
}

/* Writes the sample value of rec in family f; 0 when it has none. */
static int
sample_value(struct fmt *ctx, struct prom *p, struct kp_buf *out,
    const struct family *f, const char *name, const struct kp_record *rec,
    const struct kp_buf *labels)
{
	const struct kp_field *v;
	struct series *s;
	int64_t uj;
	int fresh;

	if (f->kind == GAUGE) {
		v = kp_rec_get(rec, f->field);
		if (v == NULL || (v->kind != KP_V_INT && v->kind != KP_V_REAL))
			return 0;
		put_number(out, v);
		return 1;
	}
	p->key.len = 0;
	kp_buf_add(&p->key, name, strlen(name));
	kp_buf_add(&p->key, labels->s, labels->len);
	kp_buf_add(&p->key, "", 1);
	s = series_get(p, f, &fresh);
	/* A zone's record after the first repeats the CPU time. */
	if (f->kind == COUNTER_S && !fresh)
		return 0;
	if (!counter_uj(ctx, p, s, f, rec, &uj))
		return 0;
	if (f->kind == COUNTER_CO2)
		put_double(out, co2_grams(ctx, uj));
	else
		put_joules(out, uj);
	return 1;
}

/* Whether family f has a zone label, and so a node zone family. */
static int
family_zoned(const struct family *f)
{
	return str_in_list(f->labels, "zone");
}

/*
 * Whether record i of b has a sample in family f, or in its node zone
 * family; zoned: f has a zone label.
 */
static int
family_has(struct prom *p, const struct family *f, int zoned,
    const struct block *b, size_t i, int node_zone)
{
	const struct kp_record *rec = b->recs[i];
	const char *zone;

	if (p->hidden[i] || (!rec_is(rec, f->rectype) &&
	    (f->rectype2 == NULL || !rec_is(rec, f->rectype2))))
		return 0;
	if (zoned && in_node_zone(&p->labels, b, i) != node_zone)
		return 0;
	if (f->zones == NULL && !rec_is(rec, "energy"))
		return 1;
	zone = kp_rec_str(rec, "zone");
	if (f->zones != NULL && (zone == NULL || !str_in_list(f->zones, zone)))
		return 0;
	/* An energy record only stands for a node record missing. */
	return !rec_is(rec, "energy") || (zone != NULL &&
	    !block_has_node(b, zone));
}

void
family_head(struct kp_buf *out, const struct family *f, const char *name,
    int node_zone)
{
	kp_buf_printf(out, "# HELP %s %s%s\n", name, f->help, node_zone ?
	    ", in the node zone: every zone counted once" : "");
	kp_buf_printf(out, "# TYPE %s %s\n", name,
	    f->kind == GAUGE ? "gauge" : "counter");
}

/* One sample: name{labels} value; its HELP and TYPE before the first. */
static void
family_sample(struct fmt *ctx, struct prom *p, const struct family *f,
    const char *name, int node_zone, const struct kp_record *rec,
    const struct kp_buf *labels, size_t *samples)
{
	struct kp_buf *out = &p->text;
	size_t mark = out->len;

	if (*samples == 0)
		family_head(out, f, name, node_zone);
	kp_buf_add(out, name, strlen(name));
	kp_buf_add(out, labels->s, labels->len);
	kp_buf_add(out, " ", 1);
	if (!sample_value(ctx, p, out, f, name, rec, labels)) {
		out->len = mark;
		return;
	}
	kp_buf_add(out, "\n", 1);
	(*samples)++;
}

/* Whether records a and b are of one zone and socket. */
static int
same_zone(const struct kp_record *a, const struct kp_record *b)
{
	const char *za = kp_rec_str(a, "zone"), *zb = kp_rec_str(b, "zone");
	int64_t sa = -1, sb = -1;

	kp_rec_int(a, "socket", &sa);
	kp_rec_int(b, "socket", &sb);
	return sa == sb && (za == NULL ? zb == NULL :
	    zb != NULL && strcmp(za, zb) == 0);
}

/*
 * Family number fi, or its node zone family, of block b.  A COUNTER_S
 * family takes the records of the first zone it finds: the others repeat
 * their CPU time.
 */
void
family_write(struct fmt *ctx, struct prom *p, size_t fi,
    const struct block *b, int node_zone)
{
	const struct family *f = &families[fi];
	const char *name = node_zone ? p->node_zone_name[fi] : f->name;
	const struct kp_record *first = NULL;
	int zoned = family_zoned(f);
	size_t i, samples = 0;

	for (i = 0; i < b->n; i++) {
		if (!family_has(p, f, zoned, b, i, node_zone))
			continue;
		if (first == NULL)
			first = b->recs[i];
		else if (f->kind == COUNTER_S && !same_zone(first, b->recs[i]))
			continue;
		family_sample(ctx, p, f, name, node_zone, b->recs[i],
		    labels_of(p, f, b, i, node_zone), &samples);
		/* Without labels a second sample would repeat the series. */
		if (f->labels[0] == NULL && samples > 0)
			break;
	}
}

/*
 * The name of family f's node zone family: kp_ for kepler_, and total for
 * cpu, as in kp_process_total_joules_total; NULL for a family without a
 * zone label.
 */
char *
node_zone_name(const struct family *f)
{
	const char *name = f->name, *cpu;

	if (!family_zoned(f) || (cpu = strstr(name, "_cpu_")) == NULL)
		return NULL;
	if (strncmp(name, "kepler_", 7) == 0)
		name += 7;
	else if (strncmp(name, "kp_", 3) == 0)
		name += 3;
	return kp_asprintf("kp_%.*s_total_%s", (int)(cpu - name), name,
	    cpu + 5);
}

/* Whether a record of b is of the node zone. */
int
block_in_node_zone(struct prom *p, const struct block *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		if (in_node_zone(&p->labels, b, i))
			return 1;
	return 0;
}
