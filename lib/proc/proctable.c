/*
 * The processes a sampler follows, for the scan (sampler.c) and for the
 * accounting of what ended (exit_account.c) alike: a pool that hands out
 * struct proc in chunks and takes them back, so that scanning allocates
 * nothing once the pool is as big as the most processes seen at once, and a
 * hash table keyed by (pid, starttime) with linear probing and
 * backward-shift deletion, so that no tombstones pile up as processes come
 * and go; and the list of them by pid.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampler.h"

#define POOL_CHUNK 512

static struct proc *
pool_get(struct kp_sampler *s)
{
	struct proc *chunk;
	size_t i;

	if (s->free_procs == NULL) {
		chunk = kp_calloc(POOL_CHUNK, sizeof(*chunk));
		s->chunks = kp_reallocarray(s->chunks, s->nchunks + 1,
		    sizeof(*s->chunks));
		s->chunks[s->nchunks++] = chunk;
		for (i = 0; i < POOL_CHUNK; i++) {
			chunk[i].next_free = s->free_procs;
			s->free_procs = &chunk[i];
		}
	}
	chunk = s->free_procs;
	s->free_procs = chunk->next_free;
	memset(chunk, 0, sizeof(*chunk));
	chunk->fd = -1;
	return chunk;
}

void
proctable_close_stat(struct kp_sampler *s, struct proc *p)
{
	if (p->fd < 0)
		return;
	close(p->fd);
	p->fd = -1;
	s->nopen--;
}

static void
pool_put(struct kp_sampler *s, struct proc *p)
{
	proctable_close_stat(s, p);
	free(p->exe);
	p->next_free = s->free_procs;
	s->free_procs = p;
}

static size_t
slot_of(const struct kp_sampler *s, pid_t pid, uint64_t starttime)
{
	uint64_t h = ((uint64_t)pid * 0x9e3779b97f4a7c15ULL) ^
	    (starttime * 0xc2b2ae3d27d4eb4fULL);

	return (size_t)(h ^ (h >> 29)) & (s->cap - 1);
}

struct proc *
proctable_find(const struct kp_sampler *s, pid_t pid, uint64_t starttime)
{
	struct proc *p;
	size_t i;

	if (s->cap == 0)
		return NULL;
	for (i = slot_of(s, pid, starttime); (p = s->table[i]) != NULL;
	    i = (i + 1) & (s->cap - 1))
		if (p->stat.pid == pid && p->stat.starttime == starttime)
			return p;
	return NULL;
}

static void
table_insert(struct kp_sampler *s, struct proc *p)
{
	size_t i;

	for (i = slot_of(s, p->stat.pid, p->stat.starttime); s->table[i];
	    i = (i + 1) & (s->cap - 1))
		;
	s->table[i] = p;
}

/* Keeps the table at most half full. */
static void
table_grow(struct kp_sampler *s)
{
	struct proc **old = s->table;
	size_t i, oldcap = s->cap;

	s->cap = oldcap ? oldcap * 2 : 1024;
	s->table = kp_calloc(s->cap, sizeof(*s->table));
	for (i = 0; i < oldcap; i++)
		if (old[i] != NULL)
			table_insert(s, old[i]);
	free(old);
}

static void
table_remove(struct kp_sampler *s, struct proc *p)
{
	size_t i, j, home, mask = s->cap - 1;

	for (i = slot_of(s, p->stat.pid, p->stat.starttime); s->table[i] != p;
	    i = (i + 1) & mask)
		;
	s->table[i] = NULL;
	/* Move back each later entry of the run that may no longer be found. */
	for (j = (i + 1) & mask; s->table[j] != NULL; j = (j + 1) & mask) {
		home = slot_of(s, s->table[j]->stat.pid,
		    s->table[j]->stat.starttime);
		if (((j - home) & mask) >= ((j - i) & mask)) {
			s->table[i] = s->table[j];
			s->table[j] = NULL;
			i = j;
		}
	}
	s->count--;
	pool_put(s, p);
}

struct proc *
proctable_add(struct kp_sampler *s, const struct kp_pid_stat *ps)
{
	struct proc *p;

	if ((s->count + 1) * 2 > s->cap)
		table_grow(s);
	p = pool_get(s);
	p->stat = *ps;
	table_insert(s, p);
	s->count++;
	return p;
}

/* The index in s->list of the first process with this pid, or nlist. */
size_t
proctable_first_with_pid(const struct kp_sampler *s, pid_t pid)
{
	size_t lo = 0, hi = s->nlist, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (s->list[mid]->stat.pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int
proctable_by_pid(const void *a, const void *b)
{
	const struct proc *p = *(struct proc *const *)a;
	const struct proc *q = *(struct proc *const *)b;

	if (p->stat.pid != q->stat.pid)
		return p->stat.pid < q->stat.pid ? -1 : 1;
	return (p->stat.starttime > q->stat.starttime) -
	    (p->stat.starttime < q->stat.starttime);
}

/* Every known process in pid order, so that output is deterministic. */
void
proctable_list(struct kp_sampler *s)
{
	size_t i;

	if (s->count > s->listcap) {
		s->list = kp_reallocarray(s->list, s->cap, sizeof(*s->list));
		s->listcap = s->cap;
	}
	s->nlist = 0;
	for (i = 0; i < s->cap; i++)
		if (s->table[i] != NULL)
			s->list[s->nlist++] = s->table[i];
	if (s->nlist > 1)	/* an empty list may be NULL, which qsort rejects */
		qsort(s->list, s->nlist, sizeof(*s->list), proctable_by_pid);
}

/*
 * Forget the processes that the latest scan did not see: they were
 * reported.  The others stay in the list, in pid order, for kept_open.
 */
void
proctable_drop_ended(struct kp_sampler *s)
{
	size_t i, n = 0;

	for (i = 0; i < s->nlist; i++)
		if (s->list[i]->gen != s->gen)
			table_remove(s, s->list[i]);
		else
			s->list[n++] = s->list[i];
	s->nlist = n;
}

/* Whether the latest scan saw p: alive, not ended since the one before. */
int
proctable_alive(const struct kp_sampler *s, const struct proc *p)
{
	return p->gen == s->gen;
}

/* Forgets every process: back to no baseline. */
void
proctable_clear(struct kp_sampler *s)
{
	size_t i;

	for (i = 0; i < s->cap; i++)
		if (s->table[i] != NULL) {
			pool_put(s, s->table[i]);
			s->table[i] = NULL;
		}
	s->count = 0;
	s->nlist = 0;
}

void
proctable_free(struct kp_sampler *s)
{
	size_t i;

	for (i = 0; i < s->cap; i++)
		if (s->table[i] != NULL) {
			proctable_close_stat(s, s->table[i]);
			free(s->table[i]->exe);
		}
	for (i = 0; i < s->nchunks; i++)
		free(s->chunks[i]);
	free(s->chunks);
	free(s->table);
	free(s->list);
}
