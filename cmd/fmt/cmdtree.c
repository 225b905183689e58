/*
 * --summary's command block without a cgroup of its own: the command's
 * tree told by the parent chains of the stream's process records
 * (kp-fmt(1), "The command's energy").  The command record, which names
 * the tree's root, comes last; until then each process and exited record
 * is kept as a fixed tuple in a spool, its last mebibyte in memory, the
 * rest on disk.  At the end the spool is read once per generation of the
 * tree, and memory holds the tree's processes only, with those that took
 * one of their pids after or before them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

/* One process or exited record, as the tree needs it: 56 bytes. */
struct tuple {
	int64_t pid, starttime, ppid, seq;	/* exited: pid -1, starttime -1 */
	int64_t energy_uj, cpu_us;
	int32_t zone;
	int32_t exited;
};

/* A process that had a pid of the tree's: starttime -1 where none came. */
struct member {
	int64_t starttime, first_seq;
	int in_tree;
};

/* The processes that had one pid, in the order they came. */
struct pid_members {
	struct member *m;
	size_t n;
};

struct cmd_tree {
	struct kp_spool tuples;
	size_t ntuples;
	struct kp_map *pids;	/* "pid" -> struct pid_members */
	int64_t reaper_pid;	/* rapl-read's: the orphans' parent */
};

struct cmd_tree *
cmd_tree_new(void)
{
	struct cmd_tree *t = kp_calloc(1, sizeof(*t));
	struct kp_spool empty = KP_SPOOL_INIT;

	t->tuples = empty;
	t->pids = kp_map_new();
	t->reaper_pid = -1;
	return t;
}

/*
 * Keeps a process or exited record for the end, when the tree is known.
 * An exited record without ppid, such as a cgroup's reconciliation, has
 * no parent in the tree and is not kept.
 */
void
cmd_tree_keep(struct cmd_tree *t, const struct kp_record *rec, int zone)
{
	struct tuple u;

	memset(&u, 0, sizeof(u));
	u.pid = u.starttime = u.ppid = -1;
	u.exited = rec_is(rec, "exited");
	if (!kp_rec_int(rec, "ppid", &u.ppid))
		return;
	if (!u.exited) {
		kp_rec_int(rec, "pid", &u.pid);
		kp_rec_int(rec, "starttime", &u.starttime);
	}
	u.seq = rec->seq;
	kp_rec_int(rec, "energy_uj", &u.energy_uj);
	kp_rec_int(rec, "cpu_us", &u.cpu_us);
	u.zone = zone;
	kp_spool_add(&t->tuples, (const char *)&u, sizeof(u));
	t->ntuples++;
}

static struct pid_members *
members_of(struct cmd_tree *t, int64_t pid)
{
	char key[32];

	snprintf(key, sizeof(key), "%lld", (long long)pid);
	return kp_map_get(t->pids, key);
}

static struct member *
member_add(struct cmd_tree *t, int64_t pid, int64_t starttime, int64_t seq)
{
	struct pid_members *pm = members_of(t, pid);
	char key[32];

	if (pm == NULL) {
		pm = kp_calloc(1, sizeof(*pm));
		snprintf(key, sizeof(key), "%lld", (long long)pid);
		kp_map_put(t->pids, key, pm);
	}
	pm->m = kp_reallocarray(pm->m, pm->n + 1, sizeof(*pm->m));
	pm->m[pm->n].starttime = starttime;
	pm->m[pm->n].first_seq = seq;
	pm->m[pm->n].in_tree = 0;
	return &pm->m[pm->n++];
}

/* The process (pid, starttime) among those of its pid, or NULL. */
static struct member *
member_find(struct pid_members *pm, int64_t starttime)
{
	size_t i;

	for (i = 0; pm != NULL && i < pm->n; i++)
		if (pm->m[i].starttime == starttime)
			return &pm->m[i];
	return NULL;
}

/*
 * Of the processes that had a parent's pid, the one that had it when a
 * child came: the last started not after the child's starttime (the
 * others took the pid after it, or ended before).
 */
static const struct member *
parent_by_start(const struct pid_members *pm, int64_t starttime)
{
	const struct member *best = NULL;
	size_t i;

	for (i = 0; pm != NULL && i < pm->n; i++)
		if ((starttime < 0 || pm->m[i].starttime <= starttime) &&
		    (best == NULL || pm->m[i].starttime > best->starttime))
			best = &pm->m[i];
	return best;
}

/*
 * An exited record has no starttime: its parent is, of the processes
 * that had its ppid, the one whose first record came last, no later than
 * its interval; else the first of them, whose first record came later,
 * as an idle parent's does in a sparse stream.
 */
static const struct member *
parent_by_seq(const struct pid_members *pm, int64_t seq)
{
	const struct member *best = NULL, *first = NULL;
	size_t i;

	for (i = 0; pm != NULL && i < pm->n; i++) {
		if (first == NULL || pm->m[i].first_seq < first->first_seq)
			first = &pm->m[i];
		if (pm->m[i].first_seq <= seq &&
		    (best == NULL || pm->m[i].first_seq > best->first_seq))
			best = &pm->m[i];
	}
	return best != NULL ? best : first;
}

/* Whether a tuple's parent is of the tree; rapl-read's own excluded. */
static int
parent_in_tree(struct cmd_tree *t, const struct tuple *u)
{
	struct pid_members *pm;
	const struct member *parent;

	if (u->pid == t->reaper_pid)
		return 0;
	if (u->ppid == t->reaper_pid)
		return 1;
	pm = members_of(t, u->ppid);
	parent = u->exited ? parent_by_seq(pm, u->seq) :
	    parent_by_start(pm, u->starttime);
	return parent != NULL && parent->in_tree;
}

/* The i-th tuple, copied into u: the spool's bytes may not be aligned. */
static const struct tuple *
tuple_at(struct cmd_tree *t, size_t i, struct tuple *u)
{
	memcpy(u, kp_spool_get(&t->tuples, i * sizeof(*u), sizeof(*u)),
	    sizeof(*u));
	return u;
}

/*
 * One reading of the tuples: a process record whose pid is one the
 * tree has had is noted, so that a pid taken again is told apart, and
 * one whose parent is of the tree joins it.  1 if anything changed.
 */
static int
tree_pass(struct cmd_tree *t)
{
	struct tuple buf;
	const struct tuple *u;
	struct pid_members *pm;
	struct member *m;
	size_t i;
	int changed = 0;

	for (i = 0; i < t->ntuples; i++) {
		u = tuple_at(t, i, &buf);
		if (u->exited || u->pid == t->reaper_pid)
			continue;
		pm = members_of(t, u->pid);
		if ((m = member_find(pm, u->starttime)) != NULL) {
			if (u->seq < m->first_seq)
				m->first_seq = u->seq;
		} else if (pm != NULL || parent_in_tree(t, u)) {
			m = member_add(t, u->pid, u->starttime, u->seq);
			changed = 1;
		}
		if (m != NULL && !m->in_tree && parent_in_tree(t, u))
			changed = m->in_tree = 1;
	}
	return changed;
}

/* Whether a tuple is one of the tree's, once the tree is whole. */
static int
tuple_in_tree(struct cmd_tree *t, const struct tuple *u)
{
	const struct member *m;

	if (u->pid == t->reaper_pid)
		return 0;
	if (u->exited)
		return parent_in_tree(t, u);
	m = member_find(members_of(t, u->pid), u->starttime);
	return m != NULL && m->in_tree;
}

/*
 * The tree of the command (pid, starttime) that reaper_pid ran, and the
 * sums of its tuples by zone into energy_uj and cpu_us, nzones long.
 */
void
cmd_tree_sum(struct cmd_tree *t, int64_t pid, int64_t starttime,
    int64_t reaper_pid, int64_t *energy_uj, int64_t *cpu_us, size_t nzones)
{
	struct tuple buf;
	const struct tuple *u;
	size_t i;
	int over = 0;	/* held: the summary's own rows report such sums */

	t->reaper_pid = reaper_pid;
	if (pid > 0 && pid != reaper_pid && starttime >= 0)
		member_add(t, pid, starttime, 0)->in_tree = 1;	/* any ppid */
	while (tree_pass(t))
		continue;
	for (i = 0; i < t->ntuples; i++) {
		u = tuple_at(t, i, &buf);
		if ((size_t)u->zone >= nzones || !tuple_in_tree(t, u))
			continue;
		energy_uj[u->zone] = add_saturated(energy_uj[u->zone],
		    u->energy_uj, &over);
		cpu_us[u->zone] = add_saturated(cpu_us[u->zone], u->cpu_us,
		    &over);
	}
}

static void
members_free(void *v)
{
	struct pid_members *pm = v;

	free(pm->m);
	free(pm);
}

void
cmd_tree_free(struct cmd_tree *t)
{
	if (t == NULL)
		return;
	kp_spool_free(&t->tuples);
	kp_map_free(t->pids, members_free);
	free(t);
}
