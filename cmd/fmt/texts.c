/*
 * Texts shared by count: --summary keeps one copy of a long value, such
 * as a cgroup path or a container id, for all the workloads that have it
 * (each process has one in every zone; a container's processes share
 * theirs), and gives the copy back when the last lets go, so that memory
 * follows what is alive (kp-fmt(1), Memory).  An open-addressing table of
 * pointers, linear probing; a removal moves back what follows it, so
 * that no tombstone is left.
 */
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

struct text {
	uint64_t hash;
	uint32_t refs, len;
	char s[];
};

struct texts {
	struct text **slot;
	size_t cap, n;		/* cap a power of two */
};

static uint64_t
text_hash(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ULL;	/* FNV-1a */

	while (len-- > 0)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

struct texts *
texts_new(void)
{
	struct texts *t = kp_calloc(1, sizeof(*t));

	t->cap = 64;
	t->slot = kp_calloc(t->cap, sizeof(*t->slot));
	return t;
}

/* The slot of the text s or, if none, the empty slot where it would go. */
static size_t
texts_find(const struct texts *t, const char *s, size_t len, uint64_t h)
{
	size_t i, mask = t->cap - 1;

	for (i = h & mask; t->slot[i] != NULL; i = (i + 1) & mask)
		if (t->slot[i]->hash == h && t->slot[i]->len == len &&
		    memcmp(t->slot[i]->s, s, len) == 0)
			break;
	return i;
}

static void
texts_grow(struct texts *t)
{
	struct text **old = t->slot;
	size_t i, j, oldcap = t->cap;

	t->cap *= 2;
	t->slot = kp_calloc(t->cap, sizeof(*t->slot));
	for (i = 0; i < oldcap; i++) {
		if (old[i] == NULL)
			continue;
		for (j = old[i]->hash & (t->cap - 1); t->slot[j] != NULL;
		    j = (j + 1) & (t->cap - 1))
			;
		t->slot[j] = old[i];
	}
	free(old);
}

/* The one copy of the len bytes at s, held once more by the caller. */
struct text *
text_get(struct texts *t, const char *s, size_t len)
{
	uint64_t h = text_hash(s, len);
	size_t i;

	if ((t->n + 1) * 4 >= t->cap * 3)
		texts_grow(t);
	i = texts_find(t, s, len, h);
	if (t->slot[i] == NULL) {
		t->slot[i] = kp_malloc(sizeof(*t->slot[i]) + len);
		t->slot[i]->hash = h;
		t->slot[i]->refs = 0;
		t->slot[i]->len = len;
		memcpy(t->slot[i]->s, s, len);
		t->n++;
	}
	t->slot[i]->refs++;
	return t->slot[i];
}

const char *
text_str(const struct text *x, size_t *len)
{
	*len = x->len;
	return x->s;
}

void
text_hold(struct text *x)
{
	x->refs++;
}

/* Whether the slot `at` may take the text of home `home` from `from`. */
static int
may_move(size_t home, size_t at, size_t from)
{
	return at <= from ? home <= at || home > from :
	    home <= at && home > from;
}

/* Let go once; the last one frees it and closes its gap in the table. */
void
text_drop(struct texts *t, struct text *x)
{
	size_t i, j, mask = t->cap - 1;

	if (--x->refs > 0)
		return;
	i = texts_find(t, x->s, x->len, x->hash);
	t->slot[i] = NULL;
	for (j = (i + 1) & mask; t->slot[j] != NULL; j = (j + 1) & mask)
		if (may_move(t->slot[j]->hash & mask, i, j)) {
			t->slot[i] = t->slot[j];
			t->slot[j] = NULL;
			i = j;
		}
	t->n--;
	free(x);
}

void
texts_free(struct texts *t)
{
	size_t i;

	for (i = 0; i < t->cap; i++)
		free(t->slot[i]);
	free(t->slot);
	free(t);
}
