/*
 * The rows of table's workload tables, kept as the records are read: each
 * row its cells as text and what sorts it, one allocation, so that an
 * interval of a million records costs its rows, not its records; with -n,
 * only the rows that can still be shown (kp-fmt(1), Memory).
 */
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

/*
 * The fields that tell rows of equal power apart, in this order; then
 * the value a group record's "by" names, as written, then the order read.
 */
static const char *const ident_keys[] = {
	"pid", "starttime", "container_id", "pod_id", "vm_id", "unit",
	"level", "by", "zone", "socket", "device"
};
#define IDENT_BY_VALUE NELEM(ident_keys)
#define IDENT_RAW 0	/* the kind of the by value: its raw text */

/* A value of the identity: its key's index, its kind, then its bytes. */
static void
ident_put(struct kp_buf *b, size_t key, int kind, const void *v, size_t len)
{
	char head[2] = { (char)key, (char)kind };

	kp_buf_add(b, head, 2);
	kp_buf_add(b, v, len);
}

/* rec's identity as bytes that ident_cmp compares. */
static void
ident_make(struct kp_buf *b, const struct kp_record *rec)
{
	const struct kp_field *f;
	size_t i;

	b->len = 0;
	for (i = 0; i < NELEM(ident_keys); i++) {
		if ((f = kp_rec_get(rec, ident_keys[i])) == NULL)
			continue;
		if (f->kind == KP_V_INT)
			ident_put(b, i, f->kind, &f->i, sizeof(f->i));
		else if (f->kind == KP_V_STR)
			ident_put(b, i, f->kind, f->str, f->len + 1);
	}
	if ((f = by_field(rec)) != NULL) {
		ident_put(b, IDENT_BY_VALUE, IDENT_RAW, f->raw, f->rawlen);
		kp_buf_add(b, "", 1);
	}
}

/* The bytes of the value at p, whose kind is p[1]. */
static size_t
ident_value_len(const unsigned char *p)
{
	return p[1] == KP_V_INT ? sizeof(int64_t) :
	    strlen((const char *)p + 2) + 1;
}

/* Two values of one key and kind. */
static int
value_cmp(const unsigned char *p, const unsigned char *q)
{
	int64_t x, y;

	if (p[1] != KP_V_INT)
		return strcmp((const char *)p + 2, (const char *)q + 2);
	memcpy(&x, p + 2, sizeof(x));
	memcpy(&y, q + 2, sizeof(y));
	return (x > y) - (x < y);
}

/*
 * Key by key, as table's rows were always ordered: a key that one row
 * lacks, or has of another kind, does not decide.
 */
static int
ident_cmp(const struct row *a, const struct row *b)
{
	const unsigned char *p = (const unsigned char *)a->data;
	const unsigned char *q = (const unsigned char *)b->data;
	const unsigned char *pe = p + a->ident_len, *qe = q + b->ident_len;
	unsigned char kp, kq;
	int c;

	while (p < pe && q < qe) {
		if (p[0] == q[0] && p[1] == q[1] && (c = value_cmp(p, q)) != 0)
			return c;
		kp = p[0];
		kq = q[0];
		if (kp <= kq)
			p += 2 + ident_value_len(p);
		if (kq <= kp)
			q += 2 + ident_value_len(q);
	}
	return 0;
}

/* Highest power first, then the identity, then the order read. */
static int
row_cmp(const struct row *a, const struct row *b)
{
	int c;

	if (a->watts != b->watts)
		return a->watts < b->watts ? 1 : -1;
	if ((c = ident_cmp(a, b)) != 0)
		return c;
	return (a->order > b->order) - (a->order < b->order);
}

static int
row_qcmp(const void *a, const void *b)
{
	return row_cmp(*(struct row *const *)a, *(struct row *const *)b);
}

/* A row of cells[0..ncells-1], made fit for a terminal by the caller. */
static struct row *
row_new(struct rows *r, const struct kp_record *rec, char *const *cells,
    size_t ncells)
{
	const struct kp_field *w = kp_rec_get(rec, "watts");
	struct row *row;
	size_t i, len, text = 0;
	char *p;

	ident_make(&r->ident, rec);
	for (i = 0; i < ncells; i++)
		text += strlen(cells[i]) + 1;
	row = kp_malloc(sizeof(*row) + r->ident.len + text);
	row->watts = w != NULL ? kp_field_number(w) : 0;
	row->order = r->read++;
	row->ident_len = (uint32_t)r->ident.len;
	row->ncells = (uint32_t)ncells;
	memcpy(row->data, r->ident.s, r->ident.len);
	p = row->data + r->ident.len;
	for (i = 0; i < ncells; i++) {
		len = strlen(cells[i]) + 1;
		memcpy(p, cells[i], len);
		p += len;
	}
	return row;
}

/* The heap of -n: the row that sorts last on top. */
static void
heap_down(struct row **v, size_t n, size_t i)
{
	struct row *t;
	size_t c;

	for (; (c = 2 * i + 1) < n; i = c) {
		if (c + 1 < n && row_cmp(v[c + 1], v[c]) > 0)
			c++;
		if (row_cmp(v[c], v[i]) <= 0)
			break;
		t = v[i], v[i] = v[c], v[c] = t;
	}
}

static void
heap_up(struct row **v, size_t i)
{
	struct row *t;

	for (; i > 0 && row_cmp(v[i], v[(i - 1) / 2]) > 0; i = (i - 1) / 2)
		t = v[i], v[i] = v[(i - 1) / 2], v[(i - 1) / 2] = t;
}

/*
 * Adds rec's row to table kind; with r->keep[kind], a row that sorts after
 * keep others is dropped, and one that sorts before drops the last.
 */
void
rows_add(struct rows *r, size_t kind, const struct kp_record *rec,
    char *const *cells, size_t ncells)
{
	struct rowset *s = &r->kind[kind];
	struct row *row = row_new(r, rec, cells, ncells);
	size_t keep = r->keep[kind];

	if (keep > 0 && s->n == keep) {
		if (row_cmp(row, s->v[0]) >= 0) {
			free(row);
			return;
		}
		free(s->v[0]);
		s->v[0] = row;
		heap_down(s->v, s->n, 0);
		return;
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->v = kp_reallocarray(s->v, s->cap, sizeof(*s->v));
	}
	s->v[s->n++] = row;
	if (keep > 0)
		heap_up(s->v, s->n - 1);
}

/* Each table's rows in the order shown. */
void
rows_sort(struct rows *r)
{
	size_t k;

	for (k = 0; k < NROW_KINDS; k++)
		if (r->kind[k].n > 0)	/* qsort of a null array is undefined */
			qsort(r->kind[k].v, r->kind[k].n,
			    sizeof(*r->kind[k].v), row_qcmp);
}

/* The cells of row, one after the other: the first, then each next. */
const char *
row_cells(const struct row *row)
{
	return row->data + row->ident_len;
}

void
rows_clear(struct rows *r)
{
	size_t k, i;

	for (k = 0; k < NROW_KINDS; k++) {
		for (i = 0; i < r->kind[k].n; i++)
			free(r->kind[k].v[i]);
		r->kind[k].n = 0;
	}
	r->read = 0;
}

void
rows_free(struct rows *r)
{
	size_t k;

	rows_clear(r);
	for (k = 0; k < NROW_KINDS; k++)
		free(r->kind[k].v);
	free(r->ident.s);
	memset(r, 0, sizeof(*r));
}
