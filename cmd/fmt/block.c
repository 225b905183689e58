/*
 * The block store: the records of one interval, kept until its interval
 * record arrives.  Each record is copied whole, its line, its fields and
 * their strings, into one piece of an arena of chunks, which is emptied
 * when the interval has been written and freed at the end.  The chunks
 * start small and double up to a megabyte: --summary keeps a block for
 * one header, and a short stream should not cost a megabyte a block.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

struct chunk {
	struct chunk *next;
	size_t cap, used;
	max_align_t data[];
};

#define CHUNK_FIRST_BYTES (4 << 10)
#define CHUNK_BYTES (1 << 20)

/* A chunk for n bytes at least, twice the size of the one before. */
static struct chunk *
chunk_new(size_t n, const struct chunk *before)
{
	struct chunk *c;
	size_t cap = before == NULL ? CHUNK_FIRST_BYTES :
	    before->cap < CHUNK_BYTES ? before->cap * 2 : CHUNK_BYTES;

	if (cap < n)
		cap = n;
	c = kp_malloc(sizeof(*c) + cap);
	c->next = NULL;
	c->cap = cap;
	c->used = 0;
	return c;
}

/* n bytes, aligned for any type; the chunks once made are used again. */
static void *
arena_alloc(struct block *b, size_t n)
{
	struct chunk *c;
	void *p;

	n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) *
	    sizeof(max_align_t);
	for (c = b->cur; c != NULL && c->used + n > c->cap; c = c->next)
		b->cur = c->next != NULL ? c->next : c;
	if (c == NULL) {
		c = chunk_new(n, b->cur);
		if (b->cur != NULL) {
			c->next = b->cur->next;
			b->cur->next = c;
		} else
			b->head = c;
		b->cur = c;
	}
	p = (char *)c->data + c->used;
	c->used += n;
	return p;
}

/* Whether f's raw text lies in rec's line, as the reader leaves it. */
static int
raw_in_line(const struct kp_record *rec, const struct kp_field *f)
{
	uintptr_t raw = (uintptr_t)f->raw, start = (uintptr_t)rec->line;

	return raw >= start && raw + f->rawlen <= start + rec->len;
}

/* The bytes a copy of rec takes beside its kp_record and fields. */
static size_t
rec_text_bytes(const struct kp_record *rec)
{
	const struct kp_field *f;
	size_t i, n = rec->len + 1;

	for (i = 0; i < rec->nf; i++) {
		f = &rec->f[i];
		n += f->keylen + 1;
		if (f->kind == KP_V_STR)
			n += f->len + 1;
		if (!raw_in_line(rec, f))
			n += f->rawlen + 1;
	}
	return n;
}

/* Copies n bytes to *p, NUL-terminated, and moves *p past them. */
static const char *
put_text(char **p, const char *s, size_t n)
{
	char *start = *p;

	memcpy(start, s, n);
	start[n] = '\0';
	*p += n + 1;
	return start;
}

/* A field's raw text lies in its line: the copy's lies in the copy's. */
static void
field_copy(struct kp_field *to, const struct kp_field *from,
    const struct kp_record *rec, const char *line, char **text)
{
	*to = *from;
	to->key = put_text(text, from->key, from->keylen);
	if (from->kind == KP_V_STR)
		to->str = put_text(text, from->str, from->len);
	if (raw_in_line(rec, from))
		to->raw = line + (from->raw - rec->line);
	else
		to->raw = put_text(text, from->raw, from->rawlen);
}

/* A copy of rec in the arena: one piece for it, its fields and text. */
static const struct kp_record *
rec_copy(struct block *b, const struct kp_record *rec)
{
	struct kp_record *copy;
	struct kp_field *f;
	char *text;
	size_t i, head;

	head = sizeof(*copy) + rec->nf * sizeof(*f);
	copy = arena_alloc(b, head + rec_text_bytes(rec));
	f = (struct kp_field *)(copy + 1);
	text = (char *)copy + head;
	*copy = *rec;
	copy->line = put_text(&text, rec->line, rec->len);
	for (i = 0; i < rec->nf; i++)
		field_copy(&f[i], &rec->f[i], rec, copy->line, &text);
	copy->f = f;
	copy->type = kp_rec_str(copy, "type");
	return copy;
}

/* Notes the zone of a node record, which an energy record then defers to. */
static void
note_node_zone(struct block *b, const struct kp_record *rec)
{
	const char *zone;

	if (!rec_is(rec, "node") || (zone = kp_rec_str(rec, "zone")) == NULL)
		return;
	if (b->node_zones == NULL)
		b->node_zones = kp_map_new();
	kp_map_put(b->node_zones, zone, b);
}

void
block_add(struct block *b, const struct kp_record *rec)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 64;
		b->recs = kp_reallocarray(b->recs, b->cap, sizeof(*b->recs));
	}
	b->recs[b->n] = rec_copy(b, rec);
	note_node_zone(b, b->recs[b->n]);
	b->n++;
}

/* Forgets the records; keeps the memory for the next interval. */
void
block_clear(struct block *b)
{
	struct chunk *c;

	for (c = b->head; c != NULL; c = c->next)
		c->used = 0;
	b->cur = b->head;
	b->n = 0;
	kp_map_free(b->node_zones, NULL);
	b->node_zones = NULL;
}

void
block_free(struct block *b)
{
	struct chunk *c, *next;

	block_clear(b);
	for (c = b->head; c != NULL; c = next) {
		next = c->next;
		free(c);
	}
	free(b->recs);
	memset(b, 0, sizeof(*b));
}

int
block_has_type(const struct block *b, const char *type)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		if (rec_is(b->recs[i], type))
			return 1;
	return 0;
}

/*
 * Whether zone has a node record in the block: asked for each energy
 * record, a scan of the block each time made an interval of many energy
 * records cost n squared.
 */
int
block_has_node(const struct block *b, const char *zone)
{
	return b->node_zones != NULL && kp_map_get(b->node_zones, zone) != NULL;
}

int
rec_is(const struct kp_record *rec, const char *type)
{
	return strcmp(rec->type, type) == 0;
}

/*
 * An exited record without a zone, as proc-cputime writes it: it has no
 * energy yet, and is shown where proc records are, not beside processes.
 */
int
rec_is_unattributed_exited(const struct kp_record *rec)
{
	return rec_is(rec, "exited") && kp_rec_get(rec, "zone") == NULL;
}

/*
 * Whether rec says its interval is dense: every live workload has a
 * record in it (kp-records(5), Record type cpu).
 */
int
rec_says_dense(const struct kp_record *rec)
{
	const struct kp_field *f = kp_rec_get(rec, "dense");

	return (rec_is(rec, "cpu") || rec_is(rec, "node")) && f != NULL &&
	    f->kind == KP_V_TRUE;
}

/* The field that a group record's "by" names, or NULL. */
const struct kp_field *
by_field(const struct kp_record *rec)
{
	const char *by = kp_rec_str(rec, "by");

	return by != NULL ? kp_rec_get(rec, by) : NULL;
}

int
str_in_list(const char *const *list, const char *s)
{
	for (; *list != NULL; list++)
		if (strcmp(*list, s) == 0)
			return 1;
	return 0;
}

/* Whether the user asked for records of this type (-t). */
int
type_wanted(const struct fmt *ctx, const char *type)
{
	return ctx->types == NULL ||
	    str_in_list((const char *const *)ctx->types, type);
}
