/* A string-keyed hash map: open addressing, linear probing, tombstones. */
#include <stdlib.h>
#include <string.h>

#include "kp.h"

struct slot {
	char *key;		/* NULL: empty; TOMB: removed */
	void *val;
};

struct kp_map {
	struct slot *slots;
	size_t cap;		/* a power of two */
	size_t used;		/* live entries plus tombstones */
	size_t count;		/* live entries */
};

static char tomb;
#define TOMB (&tomb)

static uint64_t
hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;	/* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

struct kp_map *
kp_map_new(void)
{
	struct kp_map *m;

	m = kp_calloc(1, sizeof(*m));
	m->cap = 64;
	m->slots = kp_calloc(m->cap, sizeof(*m->slots));
	return m;
}

static struct slot *
find(const struct kp_map *m, const char *key)
{
	size_t i, mask = m->cap - 1;
	struct slot *s;

	for (i = hash(key) & mask;; i = (i + 1) & mask) {
		s = &m->slots[i];
		if (s->key == NULL)
			return NULL;
		if (s->key != TOMB && strcmp(s->key, key) == 0)
			return s;
	}
}

static void
grow(struct kp_map *m)
{
	struct slot *old = m->slots;
	size_t i, oldcap = m->cap, mask;

	if (m->count * 2 >= m->cap)
		m->cap *= 2;
	mask = m->cap - 1;
	m->slots = kp_calloc(m->cap, sizeof(*m->slots));
	m->used = m->count;
	for (i = 0; i < oldcap; i++) {
		size_t j;

		if (old[i].key == NULL || old[i].key == TOMB)
			continue;
		for (j = hash(old[i].key) & mask; m->slots[j].key; j = (j + 1) & mask)
			;
		m->slots[j] = old[i];
	}
	free(old);
}

void *
kp_map_get(struct kp_map *m, const char *key)
{
	struct slot *s = find(m, key);

	return s ? s->val : NULL;
}

/* Adds or replaces; the map copies key and owns val. */
void
kp_map_put(struct kp_map *m, const char *key, void *val)
{
	struct slot *s;
	size_t i, mask;

	if ((s = find(m, key)) != NULL) {
		s->val = val;
		return;
	}
	if ((m->used + 1) * 4 >= m->cap * 3)
		grow(m);
	mask = m->cap - 1;
	for (i = hash(key) & mask; m->slots[i].key && m->slots[i].key != TOMB;
	    i = (i + 1) & mask)
		;
	if (m->slots[i].key == NULL)
		m->used++;
	m->slots[i].key = kp_strdup(key);
	m->slots[i].val = val;
	m->count++;
}

/* Removes key and returns its value, now the caller's, or NULL. */
void *
kp_map_remove(struct kp_map *m, const char *key)
{
	struct slot *s;
	void *val;

	if ((s = find(m, key)) == NULL)
		return NULL;
	val = s->val;
	free(s->key);
	s->key = TOMB;
	s->val = NULL;
	m->count--;
	return val;
}

void
kp_map_each(struct kp_map *m, void (*fn)(const char *, void *, void *),
    void *arg)
{
	size_t i;

	for (i = 0; i < m->cap; i++)
		if (m->slots[i].key && m->slots[i].key != TOMB)
			fn(m->slots[i].key, m->slots[i].val, arg);
}

static int
slot_cmp(const void *a, const void *b)
{
	return strcmp((*(const struct slot *const *)a)->key,
	    (*(const struct slot *const *)b)->key);
}

/*
 * As kp_map_each, in the order of the keys: for what must not depend on
 * the order the entries came in, as a state file, the same for the same
 * data.  (Linear probing's order does: a key put after another that it
 * collides with lies after it.)
 */
void
kp_map_each_sorted(struct kp_map *m,
    void (*fn)(const char *key, void *val, void *arg), void *arg)
{
	struct slot **live = kp_reallocarray(NULL, m->count + 1, sizeof(*live));
	size_t i, n = 0;

	for (i = 0; i < m->cap; i++)
		if (m->slots[i].key != NULL && m->slots[i].key != TOMB)
			live[n++] = &m->slots[i];
	qsort(live, n, sizeof(*live), slot_cmp);
	for (i = 0; i < n; i++)
		fn(live[i]->key, live[i]->val, arg);
	free(live);
}

size_t
kp_map_count(const struct kp_map *m)
{
	return m->count;
}

/*
 * Removes the entries that gone says are gone, freeing each key and, with
 * free_val, each value; a tombstone keeps the others where they are.
 */
void
kp_map_sweep(struct kp_map *m, int (*gone)(void *val, void *arg), void *arg,
    void (*free_val)(void *))
{
	size_t i;

	for (i = 0; i < m->cap; i++) {
		if (m->slots[i].key == NULL || m->slots[i].key == TOMB ||
		    !gone(m->slots[i].val, arg))
			continue;
		free(m->slots[i].key);
		if (free_val)
			free_val(m->slots[i].val);
		m->slots[i].key = TOMB;
		m->slots[i].val = NULL;
		m->count--;
	}
}

void
kp_map_free(struct kp_map *m, void (*free_val)(void *))
{
	size_t i;

	if (m == NULL)
		return;
	for (i = 0; i < m->cap; i++) {
		if (m->slots[i].key == NULL || m->slots[i].key == TOMB)
			continue;
		free(m->slots[i].key);
		if (free_val)
			free_val(m->slots[i].val);
	}
	free(m->slots);
	free(m);
}
