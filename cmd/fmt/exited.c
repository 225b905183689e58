/*
 * The exited records' series: summed per comm, group and zone, without a
 * pid, and carried on at 0 W while their group is quiet.
 */
#include <err.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"

/*
 * The exited records of one comm, group and zone in a block: their labels
 * and sums; or, has 0, a series carried on from an earlier interval.
 */
struct exited_sum {
	const struct kp_buf *labels;
	const struct kp_record *last;	/* for a message */
	int64_t uj;
	double watts;
	int has;			/* it has exited records */
};

/* The row of zs[0..*n) with labels l, added when there is none. */
static struct exited_sum *
exited_row(struct exited_sum *zs, size_t *n, const struct kp_buf *l)
{
	size_t j;

	for (j = 0; j < *n && (zs[j].labels->len != l->len ||
	    memcmp(zs[j].labels->s, l->s, l->len) != 0); j++)
		;
	if (j == *n)
		zs[(*n)++].labels = l;
	return &zs[j];
}

/*
 * The exited records of a block summed per label set (exited_labels); n
 * set to the rows, with room for carried more.  The node zone's records
 * alone, or all the others.
 */
static struct exited_sum *
exited_sums(struct prom *p, const struct family *f, const struct block *b,
    int node_zone, size_t carried, size_t *n)
{
	struct exited_sum *zs = kp_calloc(b->n + carried + 1, sizeof(*zs));
	struct exited_sum *z;
	const struct kp_record *rec;
	size_t i;
	int64_t uj;
	int over = 0;

	for (*n = i = 0; i < b->n; i++) {
		rec = b->recs[i];
		if (!rec_is(rec, "exited") || kp_rec_get(rec, "zone") == NULL ||
		    in_node_zone(&p->labels, b, i) != node_zone ||
		    !kp_rec_int(rec, "energy_uj", &uj))
			continue;
		z = exited_row(zs, n, labels_of(p, f, b, i, node_zone));
		z->uj = add_saturated(z->uj, uj, &over);
		z->watts += kp_rec_number(rec, "watts");
		z->last = rec;
		z->has = 1;
	}
	return zs;
}

/*
 * The sample of one row in an exited family, named name.  A carried row
 * adds nothing and leaves its series' age alone, so that it is forgotten
 * EXITED_FORGET_INTERVALS after its last exited record.
 */
static void
exited_sample(struct fmt *ctx, struct prom *p, const struct family *f,
    const char *name, const struct exited_sum *z)
{
	struct series *s = NULL;
	int over = 0, fresh;

	p->key.len = 0;
	kp_buf_add(&p->key, name, strlen(name));
	kp_buf_add(&p->key, z->labels->s, z->labels->len);
	kp_buf_add(&p->key, "", 1);
	if (f->kind != GAUGE && (s = z->has ? series_get(p, f, &fresh) :
	    kp_map_get(p->series, p->key.s)) == NULL)
		return;
	kp_buf_add(&p->text, p->key.s, p->key.len - 1);
	kp_buf_add(&p->text, " ", 1);
	if (f->kind == GAUGE) {
		put_double(&p->text, z->watts);
		kp_buf_add(&p->text, "\n", 1);
		return;
	}
	if (z->has) {
		s->sum_uj = add_saturated(s->sum_uj, z->uj, &over);
		if (over)
			report_saturated(ctx, s, p->key.s, z->last);
	}
	if (f->kind == COUNTER_J)
		put_joules(&p->text, s->sum_uj);
	else
		put_double(&p->text, co2_grams(ctx, s->sum_uj));
	kp_buf_add(&p->text, "\n", 1);
}

/* The label texts of one exited family's series, gathered from the map. */
struct carried {
	unsigned long gen;		/* the block's */
	const char *name;		/* the family's */
	size_t name_len;
	struct kp_buf *labels;
	size_t n, cap;
};

static void
carried_collect(const char *key, void *val, void *arg)
{
	const struct series *s = val;
	struct carried *c = arg;

	/* One that forget_stale is about to forget is gone already. */
	if (strncmp(key, c->name, c->name_len) != 0 ||
	    key[c->name_len] != '{' ||
	    c->gen - s->seen_gen >= s->forget_after)
		return;
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 16;
		c->labels = kp_reallocarray(c->labels, c->cap,
		    sizeof(*c->labels));
	}
	memset(&c->labels[c->n], 0, sizeof(c->labels[c->n]));
	kp_buf_add(&c->labels[c->n], key + c->name_len,
	    strlen(key + c->name_len));
	c->n++;
}

static int
buf_cmp(const void *a, const void *b)
{
	const struct kp_buf *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int d = memcmp(x->s, y->s, n);

	return d != 0 ? d : (x->len > y->len) - (x->len < y->len);
}

/*
 * The exited families, or the node zone's: a series per comm, group and
 * zone, from its first exited record on, with 0 added and 0 W in an
 * interval without one, in the order of their labels.
 */
void
exited_write(struct fmt *ctx, struct prom *p, const struct block *b,
    int node_zone)
{
	const char *names[NELEM(exited_families)];
	struct carried c = { 0 };
	struct exited_sum *zs;
	size_t i, j, n;

	for (i = 0; i < NELEM(exited_families); i++)
		names[i] = node_zone ? p->exited_node_zone_name[i] :
		    exited_families[i].name;
	c.gen = p->gen;
	c.name = names[0];
	c.name_len = strlen(names[0]);
	kp_map_each(p->series, carried_collect, &c);
	if (c.n > 0)	/* qsort of a null array is undefined */
		qsort(c.labels, c.n, sizeof(*c.labels), buf_cmp);
	zs = exited_sums(p, &exited_families[0], b, node_zone, c.n, &n);
	for (j = 0; j < c.n; j++)
		exited_row(zs, &n, &c.labels[j]);
	for (i = 0; i < NELEM(exited_families) && n > 0; i++) {
		if (exited_families[i].kind == COUNTER_CO2 && !ctx->has_carbon)
			continue;
		family_head(&p->text, &exited_families[i], names[i],
		    node_zone);
		for (j = 0; j < n; j++)
			exited_sample(ctx, p, &exited_families[i], names[i],
			    &zs[j]);
	}
	for (j = 0; j < c.n; j++)
		free(c.labels[j].s);
	free(c.labels);
	free(zs);
}
