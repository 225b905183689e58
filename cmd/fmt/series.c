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

/*
 * A key of 128 bits for text, in 23 characters and a NUL, for the maps
 * that would hold millions of names and labels otherwise: an interval of
 * a million processes has millions of series (kp-fmt(1), Memory).  The
 * first is '#', which starts no series name.
 */
void
hashed_key(const char *text, char *out)
{
	static const char digits[] =
	    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_";
	uint64_t h1 = 1469598103934665603ULL, h2 = 0x9e3779b97f4a7c15ULL;
	const unsigned char *c;
	size_t i;

	for (c = (const unsigned char *)text; *c; c++) {
		h1 = (h1 ^ *c) * 1099511628211ULL;	/* FNV-1a */
		h2 = (h2 ^ *c) * 0xbf58476d1ce4e5b9ULL;
		h2 ^= h2 >> 31;
	}
	out[0] = '#';
	for (i = 0; i < 11; i++, h1 >>= 6, h2 >>= 6) {
		out[1 + i] = digits[h1 & 63];
		out[12 + i] = digits[h2 & 63];
	}
	out[23] = '\0';
}

/*
 * The map's key of the series in p->key: hashed, but for exited series,
 * which keep their text for exited.c to carry them on.
 */
const char *
series_key(struct prom *p, const struct family *f)
{
	if (strcmp(f->rectype, "exited") == 0)
		return p->key.s;
	hashed_key(p->key.s, p->hashed);
	return p->hashed;
}

/* The series of p->key; *fresh: not sampled yet in this interval. */
struct series *
series_get(struct prom *p, const struct family *f, int *fresh)
{
	const char *key = series_key(p, f);
	struct series *s;

	if ((s = kp_map_get(p->series, key)) == NULL) {
		s = kp_calloc(1, sizeof(*s));
		if (strcmp(f->rectype, "exited") == 0)
			s->forget_after = EXITED_FORGET_INTERVALS;
		else if (str_in_list(workload_types, f->rectype))
			s->forget_after = FORGET_INTERVALS;
		kp_map_put(p->series, key, s);
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
 * Whether rec has a sample in family f, or in its node zone family;
 * zoned: f has a zone label.  An energy record stands for a node record
 * missing, which only the interval's end knows: the caller gives energy
 * records then.
 */
static int
family_has(struct prom *p, const struct family *f, int zoned,
    const struct kp_record *rec, int node_zone)
{
	const char *zone;

	if (!rec_is(rec, f->rectype) &&
	    (f->rectype2 == NULL || !rec_is(rec, f->rectype2)))
		return 0;
	if (zoned && rec_in_node_zone(rec) != node_zone)
		return 0;
	zone = kp_rec_str(rec, "zone");
	/* The CPU families, of every zone but a GPU's (families.c). */
	if (f->zones == NULL && zone != NULL && strcmp(zone, "gpu") == 0)
		return 0;
	if (f->zones == NULL && !rec_is(rec, "energy"))
		return 1;
	if (f->zones != NULL && (zone == NULL || !str_in_list(f->zones, zone)))
		return 0;
	return !rec_is(rec, "energy") || (zone != NULL &&
	    !block_has_node(&p->lines, zone));
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

/*
 * A sample of a slot is held in memory up to SLOT_HELD_BYTES, then
 * written to the spill file, so that an exposition larger than its input
 * costs no memory of its size (kp-fmt(1), Memory).
 */
#define SLOT_HELD_BYTES (64 << 10)

/* The slot's text so far goes to the end of the spill file. */
static void
slot_spill(struct prom *p, struct slot *sl)
{
	if (p->spill_fd < 0)
		p->spill_fd = spill_open();
	spill_write(p->spill_fd, sl->text.s, sl->text.len, p->spill_end);
	if (sl->nparts == sl->partcap) {
		sl->partcap = sl->partcap ? sl->partcap * 2 : 8;
		sl->parts = kp_reallocarray(sl->parts, sl->partcap,
		    sizeof(*sl->parts));
	}
	sl->parts[sl->nparts].off = p->spill_end;
	sl->parts[sl->nparts++].len = sl->text.len;
	p->spill_end += (off_t)sl->text.len;
	sl->text.len = 0;
}

/* One sample of rec in slot sl: name{labels} value. */
static void
family_sample(struct fmt *ctx, struct prom *p, const struct family *f,
    const char *name, const struct kp_record *rec, const struct kp_buf *labels,
    struct slot *sl)
{
	struct kp_buf *out = &sl->text;
	size_t mark = out->len;

	kp_buf_add(out, name, strlen(name));
	kp_buf_add(out, labels->s, labels->len);
	kp_buf_add(out, " ", 1);
	if (!sample_value(ctx, p, out, f, name, rec, labels)) {
		out->len = mark;
		return;
	}
	kp_buf_add(out, "\n", 1);
	sl->samples++;
	if (out->len >= SLOT_HELD_BYTES)
		slot_spill(p, sl);
}

/*
 * Whether rec is of the zone and socket of the slot's first sample, which
 * the first sets: a COUNTER_S family takes the records of the first zone
 * it finds, the others repeating their CPU time.
 */
static int
slot_same_zone(struct slot *sl, const struct kp_record *rec)
{
	const char *zone = kp_rec_str(rec, "zone");
	int64_t socket = -1;

	kp_rec_int(rec, "socket", &socket);
	if (!sl->zone_set) {
		sl->zone_set = 1;
		sl->zone = zone != NULL ? kp_strdup(zone) : NULL;
		sl->socket = socket;
		return 1;
	}
	return sl->socket == socket && (zone == NULL ? sl->zone == NULL :
	    sl->zone != NULL && strcmp(zone, sl->zone) == 0);
}

/* rec's labels in family f, made once for the families sharing them. */
static const struct kp_buf *
rec_labels(struct prom *p, const struct family *f, const struct kp_record *rec,
    int node_zone)
{
	struct rec_labels *rl = &p->rec_labels;
	size_t i;

	for (i = 0; i < rl->n; i++)
		if (rl->set[i] == f->labels && rl->node_zone[i] == node_zone)
			return &rl->text[i];
	if (rl->n == NELEM(rl->text))
		rl->n = 0;
	rl->set[rl->n] = f->labels;
	rl->node_zone[rl->n] = node_zone;
	labels_make(p, &rl->text[rl->n], f, rec, node_zone);
	return &rl->text[rl->n++];
}

/*
 * rec's samples, in each family that has them and its node zone family,
 * to the families' slots, which the interval's end writes in order.
 */
void
families_take(struct fmt *ctx, struct prom *p, const struct kp_record *rec)
{
	const struct family *f;
	struct slot *sl;
	size_t fi;
	int nz = rec_in_node_zone(rec);

	p->rec_labels.n = 0;
	for (fi = 0; fi < NELEM(families); fi++) {
		f = &families[fi];
		if (f->kind == COUNTER_CO2 && !ctx->has_carbon)
			continue;
		if (nz && p->node_zone_name[fi] != NULL &&
		    family_has(p, f, 1, rec, 1))
			sl = &p->slots[1][fi];
		else if (family_has(p, f, family_zoned(f), rec, 0))
			sl = &p->slots[0][fi];
		else
			continue;
		if (f->kind == COUNTER_S && !slot_same_zone(sl, rec))
			continue;
		/* Without labels a second sample would repeat the series. */
		if (f->labels[0] == NULL && sl->samples > 0)
			continue;
		family_sample(ctx, p, f, sl == &p->slots[1][fi] ?
		    p->node_zone_name[fi] : f->name, rec,
		    rec_labels(p, f, rec, sl == &p->slots[1][fi]), sl);
	}
}

/*
 * Family fi's samples, or its node zone family's, after its HELP and
 * TYPE, to out through text; empties the slot.
 */
void
slot_write(struct prom *p, size_t fi, int node_zone, struct prom_out *out)
{
	struct slot *sl = &p->slots[node_zone][fi];
	char buf[SLOT_HELD_BYTES];
	size_t i, done, n;

	if (sl->samples == 0)
		return;
	family_head(&p->text, &families[fi], node_zone ?
	    p->node_zone_name[fi] : families[fi].name, node_zone);
	prom_out_flush(p, out);
	for (i = 0; i < sl->nparts; i++)
		for (done = 0; done < sl->parts[i].len; done += n) {
			n = sl->parts[i].len - done;
			if (n > sizeof(buf))
				n = sizeof(buf);
			spill_read(p->spill_fd, buf, n,
			    sl->parts[i].off + (off_t)done);
			prom_out_write(out, buf, n);
		}
	kp_buf_add(&p->text, sl->text.s, sl->text.len);
	prom_out_text(p, out);
	slot_clear(sl);
}

void
slot_clear(struct slot *sl)
{
	sl->text.len = 0;
	sl->nparts = 0;
	sl->samples = 0;
	sl->zone_set = 0;
	free(sl->zone);
	sl->zone = NULL;
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
