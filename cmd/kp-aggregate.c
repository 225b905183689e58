/*
 * kp-aggregate: sums each interval's process and exited records into
 * groups: container, pod, vm and unit records, and group records by any
 * field.  Every group is the exact sum of its members and of the exited
 * records that name it, and what belongs to no group of a level is that
 * level's host record, so that at every level
 * sum(groups) + host + unattributed = node active, exactly.
 */
#include <err.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kp.h"

#define LEVELS_MAX 16

/* A group: its id as JSON text, its totals and this interval's sums. */
struct group {
	char *id;		/* the member field's value, as JSON text */
	char *pod;		/* a container's pod_id, as JSON text, or NULL */
	char *names;		/* its names as JSON members, or NULL */
	int64_t total_uj[KP_ZONES_MAX];
	int64_t processes[KP_ZONES_MAX], cpu_us[KP_ZONES_MAX], energy_uj[KP_ZONES_MAX];
	uint64_t touched;	/* zones with members this interval */
	long live;		/* member processes not yet terminated */
	int listed;		/* in this interval's list */
	int ended;
};

/* A level of grouping: the record type it writes and the field it groups by. */
struct level {
	const char *type;
	char *field;
	int by;			/* --by: the record says "by":field */
	struct kp_map *groups;	/* id text -> group */
	int64_t host_total_uj[KP_ZONES_MAX];
	int64_t host_processes[KP_ZONES_MAX], host_cpu_us[KP_ZONES_MAX],
	    host_energy_uj[KP_ZONES_MAX];
};

/* A live process: the group it is in at each level, or NULL. */
struct member {
	struct group *g[LEVELS_MAX];
	int64_t last_seq;	/* of its last record */
};

/* A group to write at the end of the interval. */
struct item {
	size_t level;
	struct group *g;
};

static void usage(void);

static struct level levels[LEVELS_MAX];
static size_t nlevels;
static struct kp_zones zones;
static uint64_t zones_seen;		/* this interval, bit z for zone z */
static int dense;			/* this interval: its node records say */
static struct kp_map *members;		/* "pid:starttime" -> member */
static struct item *items;
static size_t nitems, capitems;
static int drop_processes;
static struct kp_buf out;

static void
usage(void)
{
	fprintf(stderr, "usage: kp-aggregate [-h] [--by field] "
	    "[--drop-processes] [--level level[,level ...]] [--state file]\n");
	exit(KP_EXIT_USAGE);
}

static void
add_level(const char *type, const char *field, int by)
{
	size_t i;

	for (i = 0; i < nlevels; i++)
		if (strcmp(levels[i].field, field) == 0)
			return;
	if (nlevels == LEVELS_MAX)
		errx(KP_EXIT_USAGE, "at most %d levels", LEVELS_MAX);
	levels[nlevels].type = type;
	levels[nlevels].field = kp_strdup(field);
	levels[nlevels].by = by;
	levels[nlevels].groups = kp_map_new();
	nlevels++;
}

static const struct { const char *type, *field; } known[] = {
	{ "container", "container_id" }, { "pod", "pod_id" },
	{ "vm", "vm_id" }, { "unit", "unit" },
};
#define NKNOWN (sizeof(known) / sizeof(known[0]))

static void
parse_levels(const char *arg)
{
	char *list, *name, *save;
	size_t i;

	list = kp_strdup(arg);
	for (name = strtok_r(list, ",", &save); name;
	    name = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < NKNOWN; i++)
			if (strcmp(name, known[i].type) == 0)
				break;
		if (i == NKNOWN)
			errx(KP_EXIT_USAGE, "--level must be container, pod, "
			    "vm or unit: '%s'", name);
		add_level(known[i].type, known[i].field, 0);
	}
	free(list);
}

/*
 * A --by field: a name of a group record's own members would be written
 * twice in it, and a level's field is that level's.
 */
static void
check_by(const char *field)
{
	static const char *const members[] = {
		"type", "seq", "zone", "by", "processes", "cpu_us",
		"energy_uj", "watts", "total_uj", "state", NULL
	};
	const char *const *m;
	size_t i;

	if (*field == '\0' || field[strspn(field, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")] != '\0')
		errx(KP_EXIT_USAGE, "--by wants a field name of letters, "
		    "digits and '_': '%s'", field);
	for (m = members; *m; m++)
		if (strcmp(field, *m) == 0)
			errx(KP_EXIT_USAGE, "--by '%s': a member of every group "
			    "record", field);
	for (i = 0; i < NKNOWN; i++)
		if (strcmp(field, known[i].field) == 0)
			errx(KP_EXIT_USAGE, "--by '%s': use --level %s", field,
			    known[i].type);
}

/* The group of level lv with id text id, or NULL if there is none yet. */
static struct group *
group_find(struct level *lv, const char *id, size_t len)
{
	struct group *g;
	char *key;

	key = kp_strndup(id, len);
	g = kp_map_get(lv->groups, key);
	free(key);
	return g;
}

static struct group *
group_get(struct level *lv, const char *id, size_t len)
{
	struct group *g;

	if ((g = group_find(lv, id, len)) != NULL)
		return g;
	g = kp_calloc(1, sizeof(*g));
	g->id = kp_strndup(id, len);
	kp_map_put(lv->groups, g->id, g);
	return g;
}

static void
list_group(size_t l, struct group *g)
{
	if (g->listed)
		return;
	if (nitems == capitems) {
		capitems = capitems * 2 + 64;
		if ((items = reallocarray(items, capitems, sizeof(*items))) ==
		    NULL)
			err(KP_EXIT_FAILURE, "realloc");
	}
	items[nitems].level = l;
	items[nitems++].g = g;
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
sums_fit(const struct kp_record *rec, struct member *m, int z, int64_t cpu_us,
    int64_t energy_uj)
{
	const struct kp_field *id;
	struct level *lv;
	struct group *g;
	const int64_t *cpu, *energy, *total;
	size_t l;

	for (l = 0; l < nlevels; l++) {
		lv = &levels[l];
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

/* A new member: the group it joins at each level, and that group's pod. */
static struct member *
member_new(const struct kp_record *rec, const char *key)
{
	const struct kp_field *id, *pod;
	struct member *m = kp_calloc(1, sizeof(*m));
	struct group *g;
	size_t l;

	for (l = 0; l < nlevels; l++) {
		if ((id = kp_rec_get(rec, levels[l].field)) == NULL)
			continue;
		m->g[l] = g = group_get(&levels[l], id->raw, id->rawlen);
		g->live++;
		g->ended = 0;
		if (g->pod == NULL && strcmp(levels[l].field,
		    "container_id") == 0 &&
		    (pod = kp_rec_get(rec, "pod_id")) != NULL &&
		    pod->kind == KP_V_STR)
			g->pod = kp_strndup(pod->raw, pod->rawlen);
	}
	kp_map_put(members, key, m);
	return m;
}

/* The names a group record of level lv carries (kp-records(5)). */
static const char *const *
level_names(const struct level *lv)
{
	static const char *const container[] = { "runtime", "container_name",
	    "pod_name", "pod_namespace", NULL };
	static const char *const pod[] = { "pod_name", "pod_namespace", NULL };
	static const char *const vm[] = { "vm_name", "hypervisor", NULL };

	if (lv->by)
		return NULL;
	if (strcmp(lv->field, "container_id") == 0)
		return container;
	if (strcmp(lv->field, "pod_id") == 0)
		return pod;
	if (strcmp(lv->field, "vm_id") == 0)
		return vm;
	return NULL;
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
member_names(struct member *m, const struct kp_record *rec, int joined)
{
	size_t l;

	for (l = 0; l < nlevels; l++)
		if (m->g[l] != NULL)
			take_names(&levels[l], m->g[l], rec, joined);
}

/*
 * The sums of a record of zone z to group g of level l, or to the level's
 * host when g is NULL; processes is 1 for a process record, 0 for an
 * exited one.
 */
static void
add_level_sums(size_t l, struct group *g, int z, int processes,
    int64_t cpu_us, int64_t energy_uj)
{
	if (g == NULL) {
		levels[l].host_processes[z] += processes;
		levels[l].host_cpu_us[z] += cpu_us;
		levels[l].host_energy_uj[z] += energy_uj;
		return;
	}
	g->processes[z] += processes;
	g->cpu_us[z] += cpu_us;
	g->energy_uj[z] += energy_uj;
	g->touched |= UINT64_C(1) << z;
	list_group(l, g);
}

/* The sums of a process record of zone z, to m's groups or the hosts. */
static void
add_sums(struct member *m, int z, int64_t cpu_us, int64_t energy_uj)
{
	size_t l;

	for (l = 0; l < nlevels; l++)
		add_level_sums(l, m->g[l], z, 1, cpu_us, energy_uj);
}

/* A member gone: its groups lose it, and one left without any ends. */
static void
member_free(void *p)
{
	struct member *m = p;
	struct group *g;
	size_t l;

	for (l = 0; l < nlevels; l++)
		if ((g = m->g[l]) != NULL && --g->live <= 0) {
			g->ended = 1;
			list_group(l, g);	/* written once more */
		}
	free(m);
}

static void
member_end(const char *key)
{
	member_free(kp_map_remove(members, key));
}

/* Why a record cannot be added, after its type. */
#define TOO_MANY_ZONES "record of a zone beyond the first 64: " \
    "left out (see kp-aggregate(1))"
#define OVERFLOWS "record whose energy_uj or cpu_us takes a sum past 2^60 " \
    "or a total past 2^63-1"

/*
 * A record's zone, as an index in *z, and its energy; NULL, or why it has
 * no index.  The reader has checked that a process record, and an exited
 * record with a zone, has a zone name and an integer energy_uj.
 */
static const char *
record_zone(const struct kp_record *rec, int *z, int64_t *energy_uj)
{
	const char *zone = kp_rec_str(rec, "zone");

	*energy_uj = 0;
	kp_rec_int(rec, "energy_uj", energy_uj);
	*z = kp_zone_index(&zones, zone, strlen(zone));
	return *z < 0 ? TOO_MANY_ZONES : NULL;
}

/*
 * One process record: its sums go to its group, or the host, at each level.
 * Returns NULL, or why the record cannot be added.  The reader has checked
 * that every _uj and _us member is a non-negative integer.
 */
static const char *
add_process(const struct kp_record *rec)
{
	int64_t energy_uj, cpu_us = 0, pid = 0, starttime = 0;
	const char *why;
	struct member *m;
	char key[KP_PROC_KEY_MAX];
	int z, joined;

	if ((why = record_zone(rec, &z, &energy_uj)) != NULL)
		return why;
	/*
	 * A member is known by pid and starttime: without a pid, as in the
	 * other row of kp-fmt --summary, which folds many, it is none.
	 */
	if (!kp_rec_int(rec, "pid", &pid) || pid <= 0)
		return "record without a positive integer pid";
	kp_rec_int(rec, "cpu_us", &cpu_us);
	kp_rec_int(rec, "starttime", &starttime);
	kp_proc_key(key, sizeof(key), pid, starttime);
	m = kp_map_get(members, key);
	if (!sums_fit(rec, m, z, cpu_us, energy_uj))
		return OVERFLOWS;
	zones_seen |= UINT64_C(1) << z;
	if ((joined = m == NULL))
		m = member_new(rec, key);
	member_names(m, rec, joined);
	m->last_seq = rec->seq;
	add_sums(m, z, cpu_us, energy_uj);
	if (kp_rec_terminated(rec))
		member_end(key);
	return NULL;
}

/*
 * One exited record (D3): its sums go to the group its identity names at
 * each level, or the host, as a process record's do.  It is no member: it
 * never ends a group, nor keeps one live; a group that only exited records
 * name ends with their interval (end_memberless).
 */
static const char *
add_exited(const struct kp_record *rec)
{
	int64_t energy_uj, cpu_us = 0;
	const struct kp_field *id;
	const char *why;
	struct group *g;
	size_t l;
	int z;

	if ((why = record_zone(rec, &z, &energy_uj)) != NULL)
		return why;
	kp_rec_int(rec, "cpu_us", &cpu_us);
	if (!sums_fit(rec, NULL, z, cpu_us, energy_uj))
		return OVERFLOWS;
	zones_seen |= UINT64_C(1) << z;
	for (l = 0; l < nlevels; l++) {
		id = kp_rec_get(rec, levels[l].field);
		g = id != NULL ? group_get(&levels[l], id->raw, id->rawlen) :
		    NULL;
		add_level_sums(l, g, z, 0, cpu_us, energy_uj);
	}
	return NULL;
}

/*
 * A record this stage sums: a process record, or an exited record that
 * kp-attribute has given its energy, which has a zone; one without, as
 * proc-cputime writes it, passes on as it came, as a proc record does.
 */
static int
consumed(const struct kp_record *rec)
{
	if (strcmp(rec->type, "exited") == 0)
		return kp_rec_get(rec, "zone") != NULL;
	return strcmp(rec->type, "process") == 0;
}

/*
 * A process or exited record: added, or refused, which leaves the reader's
 * ordering as it is in the stages after, which never see it; whether it is
 * to be passed on.
 */
static int
take_process(struct kp_reader *r, const struct kp_record *rec)
{
	const char *why;

	why = strcmp(rec->type, "exited") == 0 ? add_exited(rec) :
	    add_process(rec);
	if (why != NULL) {
		kp_reader_refuse(r, "%s %s", rec->type, why);
		return 0;
	}
	return !drop_processes;
}

/* A node or unattributed record: its zone has a host record at every level. */
static void
see_zone(const struct kp_record *rec)
{
	const char *zone;
	int z;
	const struct kp_field *f;

	if ((zone = kp_rec_str(rec, "zone")) != NULL &&
	    (z = kp_zone_index(&zones, zone, strlen(zone))) >= 0)
		zones_seen |= UINT64_C(1) << z;
	if ((f = kp_rec_get(rec, "dense")) != NULL && f->kind == KP_V_TRUE)
		dense = 1;
}

static int
by_item(const void *a, const void *b)
{
	const struct item *p = a, *q = b;

	if (p->level != q->level)
		return p->level < q->level ? -1 : 1;
	return strcmp(p->g->id, q->g->id);
}

static int
by_zone(const void *a, const void *b)
{
	return strcmp(zones.name[*(const int *)a], zones.name[*(const int *)b]);
}

static void
rec_start(const char *type, int64_t seq, int z)
{
	kp_buf_rec(&out, type, seq);
	kp_buf_add(&out, ",\"zone\":\"", 9);
	kp_buf_add(&out, zones.name[z], strlen(zones.name[z]));
	kp_buf_add(&out, "\"", 1);
}

/* ,"key":"s" for a plain s: a zone, a level, a checked field name */
static void
str_member(const char *key, const char *s)
{
	kp_buf_raw(&out, key, "\"", 1);
	kp_buf_add(&out, s, strlen(s));
	kp_buf_add(&out, "\"", 1);
}

static void
rec_sums(int64_t processes, int64_t cpu_us, int64_t energy_uj,
    int64_t total_uj, int64_t dt_us)
{
	kp_buf_int(&out, "processes", processes);
	kp_buf_int(&out, "cpu_us", cpu_us);
	kp_buf_int(&out, "energy_uj", energy_uj);
	kp_buf_real(&out, "watts", kp_watts(energy_uj, dt_us));
	kp_buf_int(&out, "total_uj", total_uj);
}

static void
emit_group(const struct level *lv, struct group *g, int z, int64_t seq,
    int64_t dt_us)
{
	g->total_uj[z] += g->energy_uj[z];
	rec_start(lv->type, seq, z);
	if (lv->by)
		str_member("by", lv->field);
	kp_buf_raw(&out, lv->field, g->id, strlen(g->id));
	if (g->pod)
		kp_buf_raw(&out, "pod_id", g->pod, strlen(g->pod));
	if (g->names)
		kp_buf_add(&out, g->names, strlen(g->names));
	rec_sums(g->processes[z], g->cpu_us[z], g->energy_uj[z],
	    g->total_uj[z], dt_us);
	kp_buf_add(&out, g->ended ? ",\"state\":\"terminated\"" :
	    ",\"state\":\"running\"", g->ended ? 21 : 18);
	kp_out_buf(&out);
}

static void
group_free(void *p)
{
	struct group *g = p;

	free(g->pod);
	free(g->names);
	free(g);	/* g->id is freed by the caller */
}

static void
level_free(void *p)
{
	struct group *g = p;

	free(g->id);
	group_free(g);
}

/* The groups of level l listed this interval, in zone order. */
static void
emit_groups(size_t l, size_t first, const int *order, size_t nz,
    int64_t seq, int64_t dt_us)
{
	struct group *g;
	size_t j, zi;
	int z;

	for (zi = 0; zi < nz; zi++) {
		z = order[zi];
		for (j = first; j < nitems && items[j].level == l; j++) {
			g = items[j].g;
			if ((g->touched & UINT64_C(1) << z) ||
			    (g->ended && g->total_uj[z] > 0))
				emit_group(&levels[l], g, z, seq, dt_us);
		}
	}
}

/* The host record of level lv in each zone the interval has. */
static void
emit_hosts(struct level *lv, const int *order, size_t nz, int64_t seq,
    int64_t dt_us)
{
	size_t zi;
	int z;

	for (zi = 0; zi < nz; zi++) {
		z = order[zi];
		if (!(zones_seen & UINT64_C(1) << z))
			continue;
		lv->host_total_uj[z] += lv->host_energy_uj[z];
		rec_start("host", seq, z);
		str_member("level", lv->by ? lv->field : lv->type);
		rec_sums(lv->host_processes[z], lv->host_cpu_us[z],
		    lv->host_energy_uj[z], lv->host_total_uj[z], dt_us);
		kp_out_buf(&out);
	}
}

/*
 * The interval's sums cleared, at its end or when it was cut short; ended
 * groups forgotten.  Returns the index of the first item after level l's.
 */
static size_t
clear_level(size_t l, size_t first)
{
	struct level *lv = &levels[l];
	struct group *g;
	size_t i;

	memset(lv->host_processes, 0, sizeof(lv->host_processes));
	memset(lv->host_cpu_us, 0, sizeof(lv->host_cpu_us));
	memset(lv->host_energy_uj, 0, sizeof(lv->host_energy_uj));
	for (i = first; i < nitems && items[i].level == l; i++) {
		g = items[i].g;
		memset(g->processes, 0, sizeof(g->processes));
		memset(g->cpu_us, 0, sizeof(g->cpu_us));
		memset(g->energy_uj, 0, sizeof(g->energy_uj));
		g->touched = 0;
		g->listed = 0;
		if (g->ended) {
			kp_map_remove(lv->groups, g->id);
			level_free(g);
		}
	}
	return i;
}

static void
sort_items(void)
{
	if (nitems > 1)
		qsort(items, nitems, sizeof(*items), by_item);
}

static int
seen_before(void *val, void *arg)
{
	return ((struct member *)val)->last_seq < *(const int64_t *)arg;
}

static void
last_seq_of(const char *key, void *val, void *arg)
{
	int64_t **p = arg;

	(void)key;
	*(*p)++ = ((struct member *)val)->last_seq;
}

/*
 * D2: after a dense interval, the members it had no record of have ended,
 * and so has a group left without members; a sparse stream that never
 * says so holds at most KP_LIVE_MAX members.
 */
static void
let_go(int64_t seq)
{
	static int told;
	size_t n = kp_map_count(members);
	int64_t *seqs, *p, cut = seq;

	if (!dense && n <= KP_LIVE_MAX)
		return;
	if (!dense) {
		p = seqs = kp_reallocarray(NULL, n, sizeof(*seqs));
		kp_map_each(members, last_seq_of, &p);
		cut = kp_live_cut(seqs, n, KP_LIVE_MAX / 2);
		free(seqs);
		if (!told++)
			warnx("%zu processes without an end, more than %d: "
			    "those seen least recently leave their groups", n,
			    KP_LIVE_MAX);
	}
	kp_map_sweep(members, seen_before, &cut, member_free);
}

/*
 * A group of the interval with no live member process when it ends, as one
 * that only exited records named, ends with it: exited records are no
 * members, and nothing else would ever end it.
 */
static void
end_memberless(void)
{
	size_t i;

	for (i = 0; i < nitems; i++)
		if (items[i].g->live <= 0)
			items[i].g->ended = 1;
}

/*
 * The interval ends: for each level, its groups in order of zone and id,
 * then its host record for each zone.  Ended groups are written once more,
 * in every zone they have a total in, as terminated, and forgotten.
 */
static void
end_interval(int64_t seq, int64_t dt_us)
{
	int order[KP_ZONES_MAX];
	size_t i, l, nz = 0;
	int z;

	let_go(seq);
	end_memberless();
	for (z = 0; z < (int)zones.n; z++)
		order[nz++] = z;
	qsort(order, nz, sizeof(order[0]), by_zone);
	sort_items();
	for (i = 0, l = 0; l < nlevels; l++) {
		emit_groups(l, i, order, nz, seq, dt_us);
		emit_hosts(&levels[l], order, nz, seq, dt_us);
		i = clear_level(l, i);
	}
	nitems = 0;
	zones_seen = 0;
	dense = 0;
}

/*
 * An interval cut short, which the reader has reported: its sums are
 * dropped, as no interval record gives them a length; who joined and who
 * left a group stays true.
 */
static void
drop_interval(void)
{
	size_t i, l;

	end_memberless();
	sort_items();
	for (i = 0, l = 0; l < nlevels; l++)
		i = clear_level(l, i);
	nitems = 0;
	zones_seen = 0;
	dense = 0;
}

/* --state: group totals, live members, host totals. */
struct save_ctx {
	size_t level;
	json_t *arr;
};

static void
save_group(const char *key, void *val, void *arg)
{
	struct save_ctx *c = arg;
	struct group *g = val;
	json_t *o;

	/*
	 * A group without a live member, left by a stream that ended inside
	 * an interval, would come back with nothing to end it.
	 */
	if (g->live <= 0)
		return;
	o = json_pack("{s:s,s:o}", "id", key, "totals",
	    kp_zones_save(&zones, g->total_uj));
	if (g->pod)
		json_object_set_new(o, "pod", json_string(g->pod));
	json_array_append_new(c->arr, o);
}

static void
save_member(const char *key, void *val, void *arg)
{
	struct member *m = val;
	json_t *ids = json_object();
	size_t l;

	for (l = 0; l < nlevels; l++)
		if (m->g[l] != NULL)
			json_object_set_new(ids, levels[l].field,
			    json_string(m->g[l]->id));
	json_object_set_new(arg, key, ids);
}

static json_t *
state_data(void)
{
	json_t *lvs, *o;
	struct save_ctx c;
	size_t l;

	lvs = json_object();
	for (l = 0; l < nlevels; l++) {
		c.level = l;
		c.arr = json_array();
		kp_map_each_sorted(levels[l].groups, save_group, &c);
		o = json_pack("{s:o,s:o}", "groups", c.arr, "host",
		    kp_zones_save(&zones, levels[l].host_total_uj));
		json_object_set_new(lvs, levels[l].field, o);
	}
	o = json_object();
	kp_map_each(members, save_member, o);
	return json_pack("{s:o,s:o}", "levels", lvs, "members", o);
}

/* Whether a stored id is one JSON value, as a group's id is written. */
static int
value_ok(const char *id)
{
	char *member = kp_asprintf(",\"id\":%s", id);
	int ok = kp_members_count(member) == 1;

	free(member);
	return ok;
}

/*
 * The host totals go on across a reboot, like the node's; the processes of
 * an earlier boot are gone, so are its groups and members: their pid:starttime
 * keys come again in this boot.
 */
static void
load_state(struct kp_state *st, const char *path)
{
	int rebooted = kp_state_data(st) == NULL;
	json_t *data = kp_state_data_any_boot(st), *lvs, *lv, *gs, *v, *ids,
	    *mem;
	const char *key, *id, *pod;
	struct member *m;
	struct group *g;
	size_t l, i;

	if (data == NULL)
		return;
	lvs = json_object_get(data, "levels");
	mem = json_object_get(data, "members");
	if (!json_is_object(lvs) || !json_is_object(mem)) {
		warnx("%s: unusable totals in the state file, starting from "
		    "zero", path);
		return;
	}
	for (l = 0; l < nlevels; l++) {
		if ((lv = json_object_get(lvs, levels[l].field)) == NULL)
			continue;
		kp_zones_load(&zones, json_object_get(lv, "host"),
		    levels[l].host_total_uj);
		gs = rebooted ? NULL : json_object_get(lv, "groups");
		json_array_foreach(gs, i, v) {
			if ((id = kp_json_str(v, "id")) == NULL)
				continue;
			pod = kp_json_str(v, "pod");
			if (!value_ok(id) || (pod != NULL && !value_ok(pod))) {
				warnx("%s: a group whose id is not a JSON value "
				    "in the state file, left out", path);
				continue;
			}
			g = group_get(&levels[l], id, strlen(id));
			kp_zones_load(&zones, json_object_get(v, "totals"),
			    g->total_uj);
			/* A group stored twice keeps its first pod. */
			if (pod != NULL && g->pod == NULL)
				g->pod = kp_strdup(pod);
		}
	}
	/*
	 * A group's live members are counted from the members, not stored,
	 * so that the count always matches them; a level this run does not
	 * have is left out.
	 */
	if (rebooted)
		return;
	json_object_foreach(mem, key, ids) {
		m = kp_calloc(1, sizeof(*m));
		for (l = 0; l < nlevels; l++) {
			id = kp_json_str(ids, levels[l].field);
			if (id != NULL && (m->g[l] = kp_map_get(levels[l].groups,
			    id)) != NULL)
				m->g[l]->live++;
		}
		kp_map_put(members, key, m);
	}
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "by", required_argument, NULL, 'b' },
		{ "drop-processes", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "level", required_argument, NULL, 'l' },
		{ "state", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 }
	};
	const char *statepath = NULL, *by[LEVELS_MAX];
	struct kp_state *st = NULL;
	struct kp_reader *r;
	struct kp_record rec;
	int64_t dt_us = 0;
	size_t l, i, nby = 0;
	int ch, status, level_given = 0;

	kp_out_init();
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'b':
			check_by(optarg);
			if (nby == LEVELS_MAX)
				errx(KP_EXIT_USAGE, "at most %d levels",
				    LEVELS_MAX);
			by[nby++] = optarg;
			break;
		case 'd':
			drop_processes = 1;
			break;
		case 'l':
			parse_levels(optarg);
			level_given = 1;
			break;
		case 'S':
			statepath = optarg;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 0)
		usage();
	if (!level_given)
		parse_levels("container,pod,vm,unit");
	for (i = 0; i < nby; i++)
		add_level("group", by[i], 1);

	members = kp_map_new();
	if (statepath) {
		st = kp_state_open(statepath, "/proc", "kp-aggregate");
		load_state(st, statepath);
	}
	kp_signals_catch(NULL);
	r = kp_reader_open(STDIN_FILENO, "<stdin>");
	/* Every record of an interval waits for its state (D5). */
	kp_state_hold(st);
	while (kp_reader_next(r, &rec) > 0) {
		if (rec.cut_seq >= 0)
			drop_interval();
		if (strcmp(rec.type, "interval") == 0) {
			kp_rec_int(&rec, "dt_us", &dt_us);
			end_interval(rec.seq, dt_us);
			kp_out_raw(rec.line, rec.len);
			kp_state_interval_end(st, kp_state_due(st) ?
			    state_data() : NULL);
			kp_out_flush();
			continue;
		}
		if (consumed(&rec)) {
			if (!take_process(r, &rec))
				continue;
		} else if (strcmp(rec.type, "node") == 0 ||
		    strcmp(rec.type, "unattributed") == 0)
			see_zone(&rec);
		kp_out_raw(rec.line, rec.len);
	}
	status = kp_reader_errors(r) ? KP_EXIT_DATAERR : KP_EXIT_OK;
	kp_state_need_input(st, kp_reader_lineno(r));
	kp_state_end(st, kp_state_pending(st) ? state_data() : NULL);
	kp_reader_close(r);
	kp_state_close(st);
	kp_map_free(members, free);
	for (l = 0; l < nlevels; l++) {
		kp_map_free(levels[l].groups, level_free);
		free(levels[l].field);
	}
	free(items);
	free(out.s);
	return kp_out_finish(status);
}
