/*
 * kp-aggregate: a process or exited record summed into its group at each
 * level, or into the level's host; the members that join and leave.
 */
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"

static void
list_group(struct agg *a, size_t l, struct group *g)
{
	if (g->listed)
		return;
	if (a->nitems == a->capitems) {
		a->capitems = a->capitems * 2 + 64;
		a->items = kp_reallocarray(a->items, a->capitems,
		    sizeof(*a->items));
	}
	a->items[a->nitems].level = l;
	a->items[a->nitems++].g = g;
	g->listed = 1;
}

/*
 * Whether sum + v is an amount of one interval that a group record may
 * carry, at most KP_AMOUNT_MAX, which the next stage reads (kp-records(5)),
 * and total + sum + v fits an int64_t.
 */
static int
adds_fit(int64_t total, int64_t sum, int64_t v)
{
	int64_t r;

	return !__builtin_add_overflow(sum, v, &r) && r <= KP_AMOUNT_MAX &&
	    !__builtin_add_overflow(total, r, &r);
}

/*
 * Whether a record's cpu_us and energy_uj fit every sum and total they go
 * to, at every level, checked before any is changed: a record that would
 * overflow one is rejected whole, so that every level stays exact.
 */
static int
sums_fit(struct agg *a, const struct kp_record *rec, struct member *m, int z,
    int64_t cpu_us, int64_t energy_uj)
{
	const struct kp_field *id;
	struct level *lv;
	struct group *g;
	const int64_t *cpu, *energy, *total;
	size_t l;

	for (l = 0; l < a->nlevels; l++) {
		lv = &a->levels[l];
		if (m != NULL)
			g = m->g[l];
		else if ((id = kp_rec_get(rec, lv->field)) == NULL)
			g = NULL;
		else if ((g = group_find(lv, id->raw, id->rawlen)) == NULL)
			continue;	/* a new group: its sums are this record */
		cpu = g != NULL ? g->cpu_us : lv->host_cpu_us;
		energy = g != NULL ? g->energy_uj : lv->host_energy_uj;
		total = g != NULL ? g->total_uj : lv->host_total_uj;
		if (!adds_fit(0, cpu[z], cpu_us) ||
		    !adds_fit(total[z], energy[z], energy_uj))
			return 0;
	}
	return 1;
}

/* The group of level l that a member joins, named id, and its pod. */
static struct group *
group_join(struct agg *a, size_t l, const struct kp_record *rec,
    const struct kp_field *id)
{
	const struct kp_field *pod;
	struct group *g = group_get(&a->levels[l], id->raw, id->rawlen);

	g->live++;
	g->ended = g->resting = 0;
	if (g->pod == NULL && strcmp(a->levels[l].field, "container_id") == 0 &&
	    (pod = kp_rec_get(rec, "pod_id")) != NULL && pod->kind == KP_V_STR)
		g->pod = kp_strndup(pod->raw, pod->rawlen);
	return g;
}

/* A new member: the group it joins at each level. */
static struct member *
member_new(struct agg *a, const struct kp_record *rec, const char *key)
{
	const struct kp_field *id;
	struct member *m = kp_calloc(1, sizeof(*m));
	size_t l;

	for (l = 0; l < a->nlevels; l++)
		if ((id = kp_rec_get(rec, a->levels[l].field)) != NULL)
			m->g[l] = group_join(a, l, rec, id);
	kp_map_put(a->members, key, m);
	return m;
}

/*
 * A member whose record names other groups than it joined, as a process
 * that rapl-read -- CMD or systemd moved and that exec'd does: from this
 * record on it counts in the groups the record names; its earlier sums
 * stay where they were (kp-aggregate(1), "Members").
 */
static void
member_move(struct agg *a, struct member *m, const struct kp_record *rec)
{
	const struct kp_field *id;
	struct group *g;
	size_t l;

	for (l = 0; l < a->nlevels; l++) {
		id = kp_rec_get(rec, a->levels[l].field);
		g = id != NULL ? group_find(&a->levels[l], id->raw,
		    id->rawlen) : NULL;
		if (g == m->g[l] && (g != NULL || id == NULL))
			continue;
		if (m->g[l] != NULL && --m->g[l]->live <= 0) {
			m->g[l]->ended = 1;
			list_group(a, l, m->g[l]);
		}
		m->g[l] = id != NULL ? group_join(a, l, rec, id) : NULL;
	}
}

/*
 * A group's names, from a member's record that has any: the member that
 * joined last gives them, and one whose names came late gives them to a
 * group that has none yet.
 */
static void
take_names(const struct level *lv, struct group *g,
    const struct kp_record *rec, int joined)
{
	const char *const *k = level_names(lv);
	const struct kp_field *f;
	struct kp_buf b = { NULL, 0, 0 };

	if (k == NULL || (!joined && g->names != NULL))
		return;
	for (; *k; k++)
		if ((f = kp_rec_get(rec, *k)) != NULL && f->kind == KP_V_STR)
			kp_buf_raw(&b, *k, f->raw, f->rawlen);
	if (b.len > 0) {
		free(g->names);
		g->names = kp_strndup(b.s, b.len);
	}
	free(b.s);
}

static void
member_names(struct agg *a, struct member *m, const struct kp_record *rec,
    int joined)
{
	size_t l;

	for (l = 0; l < a->nlevels; l++)
		if (m->g[l] != NULL)
			take_names(&a->levels[l], m->g[l], rec, joined);
}

/*
 * The sums of a record of zone z to group g of level l, or to the level's
 * host when g is NULL; processes is 1 for a process record, 0 for an
 * exited one.
 */
static void
add_level_sums(struct agg *a, size_t l, struct group *g, int z,
    int processes, int64_t cpu_us, int64_t energy_uj)
{
	struct level *lv = &a->levels[l];

	if (g == NULL) {
		lv->host_processes[z] += processes;
		lv->host_cpu_us[z] += cpu_us;
		lv->host_energy_uj[z] += energy_uj;
		return;
	}
	g->processes[z] += processes;
	g->cpu_us[z] += cpu_us;
	g->energy_uj[z] += energy_uj;
	g->touched |= UINT64_C(1) << z;
	list_group(a, l, g);
}

/* The sums of a process record of zone z, to m's groups or the hosts. */
static void
add_sums(struct agg *a, struct member *m, int z, int64_t cpu_us,
    int64_t energy_uj)
{
	size_t l;

	for (l = 0; l < a->nlevels; l++)
		add_level_sums(a, l, m->g[l], z, 1, cpu_us, energy_uj);
}

/*
 * A member gone: its groups lose it, and one left without any ends, to be
 * written once more.  The caller frees it.
 */
void
member_leave(void *member, void *agg)
{
	struct member *m = member;
	struct agg *a = agg;
	struct group *g;
	size_t l;

	for (l = 0; l < a->nlevels; l++)
		if ((g = m->g[l]) != NULL && --g->live <= 0) {
			g->ended = 1;
			list_group(a, l, g);
		}
}

static void
member_end(struct agg *a, const char *key)
{
	struct member *m = kp_map_remove(a->members, key);

	member_leave(m, a);
	free(m);
}

/* Why a record cannot be added, after its type. */
#define TOO_MANY_ZONES "record of a zone beyond the first 64: " \
    "left out (see kp-aggregate(1))"
#define OVERFLOWS "record whose energy_uj or cpu_us takes a sum past 2^60 " \
    "or a total past 2^63-1"

/*
 * A GPU's uuid, kept per zone as the records of its zone bring it, so that
 * the group records of the zone carry it (kp-aggregate(1), Records).
 */
static void
keep_uuid(struct agg *a, const struct kp_record *rec, int z)
{
	const struct kp_field *f = kp_rec_get(rec, "uuid");
	char *old = a->uuid[z];

	if (f == NULL || (old != NULL && strlen(old) == f->rawlen &&
	    memcmp(old, f->raw, f->rawlen) == 0))
		return;
	free(old);
	a->uuid[z] = kp_strndup(f->raw, f->rawlen);
}

/*
 * A record's zone, as an index in *z, its energy, and its weight: its CPU
 * time, or in a GPU's zone its GPU time; NULL, or why it has no index.
 * Each GPU is a zone of its own, gpu/<device> (kp_zone_key).  The reader
 * has checked that a process record, and an exited record with a zone,
 * has a zone name and an integer energy_uj.
 */
static const char *
record_zone(struct agg *a, const struct kp_record *rec, int *z,
    int64_t *energy_uj, int64_t *cpu_us)
{
	char key[sizeof(a->zones.name[0])];

	*energy_uj = 0;
	kp_rec_int(rec, "energy_uj", energy_uj);
	if (!kp_zone_key(rec, 0, key, sizeof(key)) ||
	    (*z = kp_zone_index(&a->zones, key, strlen(key))) < 0)
		return TOO_MANY_ZONES;
	*cpu_us = kp_rec_zone_us(rec, key);
	keep_uuid(a, rec, *z);
	return NULL;
}

/*
 * One process record: its sums go to its group, or the host, at each level.
 * Returns NULL, or why the record cannot be added.  The reader has checked
 * that every _uj and _us member is a non-negative integer.
 */
static const char *
add_process(struct agg *a, const struct kp_record *rec)
{
	int64_t energy_uj, cpu_us, pid = 0, starttime = 0;
	const char *why;
	struct member *m;
	char key[KP_PROC_KEY_MAX];
	int z, joined;

	if ((why = record_zone(a, rec, &z, &energy_uj, &cpu_us)) != NULL)
		return why;
	/*
	 * A member is known by pid and starttime: without a pid, as in the
	 * other row of kp-fmt --summary, which folds many, it is none.
	 */
	if (!kp_rec_int(rec, "pid", &pid) || pid <= 0)
		return "record without a positive integer pid";
	kp_rec_int(rec, "starttime", &starttime);
	kp_proc_key(key, sizeof(key), pid, starttime);
	m = kp_map_get(a->members, key);
	if (!sums_fit(a, rec, m, z, cpu_us, energy_uj))
		return OVERFLOWS;
	a->zones_seen |= UINT64_C(1) << z;
	if ((joined = m == NULL)) {
		kp_live_admit(&a->live, a->dense, rec->seq, a->input_name,
		    rec->lineno);
		m = member_new(a, rec, key);
	} else
		member_move(a, m, rec);
	member_names(a, m, rec, joined);
	m->last_seq = rec->seq;
	add_sums(a, m, z, cpu_us, energy_uj);
	if (kp_rec_terminated(rec))
		member_end(a, key);
	return NULL;
}

/*
 * One exited record: its sums go to the group its identity names at each
 * level, or the host, as a process record's do.  It is no member: it
 * never ends a group, nor keeps one live; a group that only exited records
 * name ends with their interval (kp-aggregate(1), Exited records).
 */
static const char *
add_exited(struct agg *a, const struct kp_record *rec)
{
	int64_t energy_uj, cpu_us;
	const struct kp_field *id;
	const char *why;
	struct group *g;
	size_t l;
	int z;

	if ((why = record_zone(a, rec, &z, &energy_uj, &cpu_us)) != NULL)
		return why;
	if (!sums_fit(a, rec, NULL, z, cpu_us, energy_uj))
		return OVERFLOWS;
	a->zones_seen |= UINT64_C(1) << z;
	for (l = 0; l < a->nlevels; l++) {
		id = kp_rec_get(rec, a->levels[l].field);
		g = id != NULL ? group_get(&a->levels[l], id->raw,
		    id->rawlen) : NULL;
		add_level_sums(a, l, g, z, 0, cpu_us, energy_uj);
	}
	return NULL;
}

/*
 * A record this stage sums: a process record, or an exited record that
 * kp-attribute has given its energy, which has a zone; one without, as
 * proc-cputime writes it, passes on as it came, as a proc record does.
 */
int
consumed(const struct kp_record *rec)
{
	if (strcmp(rec->type, "exited") == 0)
		return kp_rec_get(rec, "zone") != NULL;
	return strcmp(rec->type, "process") == 0;
}

/* A record that consumed() takes: NULL, or why it cannot be added. */
const char *
add_record(struct agg *a, const struct kp_record *rec)
{
	return strcmp(rec->type, "exited") == 0 ? add_exited(a, rec) :
	    add_process(a, rec);
}

/* A node or unattributed record: its zone has a host record at every level. */
void
see_zone(struct agg *a, const struct kp_record *rec)
{
	char key[sizeof(a->zones.name[0])];
	const struct kp_field *f;
	int z;

	if (kp_zone_key(rec, 0, key, sizeof(key)) &&
	    (z = kp_zone_index(&a->zones, key, strlen(key))) >= 0) {
		a->zones_seen |= UINT64_C(1) << z;
		keep_uuid(a, rec, z);
	}
	if ((f = kp_rec_get(rec, "dense")) != NULL && f->kind == KP_V_TRUE)
		a->dense = 1;
}
