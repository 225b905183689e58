/*
 * kp-aggregate: the end of an interval, its group and host records, and
 * an interval cut short.
 */
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"

/* The order of the records: by level, then by group id. */
static int
by_item(const void *a, const void *b)
{
	const struct item *p = a, *q = b;

	if (p->level != q->level)
		return p->level < q->level ? -1 : 1;
	return strcmp(p->g->id, q->g->id);
}

/* The zones of an interval, by name. */
struct zone_order {
	int z[KP_ZONES_MAX];
	size_t n;
};

/* A record's start: its type, seq, zone, and a GPU's device and uuid. */
static void
rec_start(struct agg *a, const char *type, int64_t seq, int z)
{
	kp_buf_rec(&a->out, type, seq);
	kp_buf_zone(&a->out, a->zones.name[z]);
	if (a->uuid[z] != NULL)
		kp_buf_raw(&a->out, "uuid", a->uuid[z], strlen(a->uuid[z]));
}

/* ,"key":"s" for a plain s: a zone, a level, a checked field name */
static void
str_member(struct kp_buf *out, const char *key, const char *s)
{
	kp_buf_raw(out, key, "\"", 1);
	kp_buf_add(out, s, strlen(s));
	kp_buf_add(out, "\"", 1);
}

/* The sums; a GPU's zone sums GPU time where another sums CPU time. */
static void
rec_sums(struct agg *a, int z, int64_t processes, int64_t cpu_us,
    int64_t energy_uj, int64_t total_uj, int64_t dt_us)
{
	struct kp_buf *out = &a->out;

	kp_buf_int(out, "processes", processes);
	kp_buf_zone_us(out, a->zones.name[z], cpu_us);
	kp_buf_int(out, "energy_uj", energy_uj);
	kp_buf_real(out, "watts", kp_watts(energy_uj, dt_us));
	kp_buf_int(out, "total_uj", total_uj);
}

static void
emit_group(struct agg *a, const struct level *lv, struct group *g, int z,
    int64_t seq, int64_t dt_us)
{
	struct kp_buf *out = &a->out;

	g->total_uj[z] += g->energy_uj[z];
	rec_start(a, lv->type, seq, z);
	if (lv->by)
		str_member(out, "by", lv->field);
	kp_buf_raw(out, lv->field, g->id, strlen(g->id));
	if (g->pod)
		kp_buf_raw(out, "pod_id", g->pod, strlen(g->pod));
	if (g->names)
		kp_buf_add(out, g->names, strlen(g->names));
	rec_sums(a, z, g->processes[z], g->cpu_us[z], g->energy_uj[z],
	    g->total_uj[z], dt_us);
	kp_buf_add(out, g->ended ? ",\"state\":\"terminated\"" :
	    ",\"state\":\"running\"", g->ended ? 21 : 18);
	kp_out_buf(out);
}

/* The groups of level l listed this interval, in zone order. */
static void
emit_groups(struct agg *a, size_t l, size_t first,
    const struct zone_order *order, int64_t seq, int64_t dt_us)
{
	struct group *g;
	size_t j, zi;
	int z;

	for (zi = 0; zi < order->n; zi++) {
		z = order->z[zi];
		for (j = first; j < a->nitems && a->items[j].level == l; j++) {
			g = a->items[j].g;
			if ((g->touched & UINT64_C(1) << z) ||
			    (g->ended && g->total_uj[z] > 0))
				emit_group(a, &a->levels[l], g, z, seq, dt_us);
		}
	}
}

/* The host record of level lv in each zone the interval has. */
static void
emit_hosts(struct agg *a, struct level *lv, const struct zone_order *order,
    int64_t seq, int64_t dt_us)
{
	size_t zi;
	int z;

	for (zi = 0; zi < order->n; zi++) {
		z = order->z[zi];
		if (!(a->zones_seen & UINT64_C(1) << z))
			continue;
		lv->host_total_uj[z] += lv->host_energy_uj[z];
		rec_start(a, "host", seq, z);
		str_member(&a->out, "level", lv->by ? lv->field : lv->type);
		rec_sums(a, z, lv->host_processes[z], lv->host_cpu_us[z],
		    lv->host_energy_uj[z], lv->host_total_uj[z], dt_us);
		kp_out_buf(&a->out);
	}
}

/*
 * A VM's group outlives its processes: a guest restarted comes back under
 * the same vm_id, and its totals go on (kp-aggregate(1), Records).
 */
static int
is_vm_level(const struct level *lv)
{
	return !lv->by && strcmp(lv->type, "vm") == 0;
}

/*
 * The interval's sums cleared, at its end or when it was cut short; ended
 * groups forgotten, a VM's put to rest.  Returns the index of the first item after level l's.
 */
static size_t
clear_level(struct agg *a, size_t l, size_t first)
{
	struct level *lv = &a->levels[l];
	struct group *g;
	size_t i;

	memset(lv->host_processes, 0, sizeof(lv->host_processes));
	memset(lv->host_cpu_us, 0, sizeof(lv->host_cpu_us));
	memset(lv->host_energy_uj, 0, sizeof(lv->host_energy_uj));
	for (i = first; i < a->nitems && a->items[i].level == l; i++) {
		g = a->items[i].g;
		memset(g->processes, 0, sizeof(g->processes));
		memset(g->cpu_us, 0, sizeof(g->cpu_us));
		memset(g->energy_uj, 0, sizeof(g->energy_uj));
		g->touched = 0;
		g->listed = 0;
		if (g->ended && is_vm_level(lv)) {
			g->ended = 0;
			g->resting = 1;
			g->rest_us = 0;
		} else if (g->ended) {
			kp_map_remove(lv->groups, g->id);
			level_free(g);
		}
	}
	return i;
}

static void
sort_items(struct agg *a)
{
	if (a->nitems > 1)
		qsort(a->items, a->nitems, sizeof(*a->items), by_item);
}

/*
 * A group of the interval with no live member process when it ends, as one
 * that only exited records named, ends with it: exited records are no
 * members, and nothing else would ever end it.
 */
static void
end_memberless(struct agg *a)
{
	size_t i;

	for (i = 0; i < a->nitems; i++)
		if (a->items[i].g->live <= 0)
			a->items[i].g->ended = 1;
}

/* Every level's sums cleared, and what the interval brought. */
void
clear_sums(struct agg *a)
{
	size_t i, l;

	for (i = 0, l = 0; l < a->nlevels; l++)
		i = clear_level(a, l, i);
	a->nitems = 0;
	a->zones_seen = 0;
	a->dense = 0;
}

static int
by_zone(const void *a, const void *b, void *zones)
{
	const struct kp_zones *zs = zones;

	return strcmp(zs->name[*(const int *)a], zs->name[*(const int *)b]);
}

/* The zones, by name. */
static void
sort_zones(const struct kp_zones *zones, struct zone_order *order)
{
	for (order->n = 0; order->n < zones->n; order->n++)
		order->z[order->n] = (int)order->n;
	qsort_r(order->z, order->n, sizeof(order->z[0]), by_zone,
	    (void *)zones);
}

/* A resting VM group, older by the interval; forgotten past the keep. */
static int
rested(void *val, void *dt_us)
{
	struct group *g = val;

	if (!g->resting)
		return 0;
	g->rest_us += *(int64_t *)dt_us;
	return g->rest_us > KP_VM_KEEP_US;
}

static void
rest_vms(struct agg *a, int64_t dt_us)
{
	size_t l;

	for (l = 0; l < a->nlevels; l++)
		if (is_vm_level(&a->levels[l]))
			kp_map_sweep(a->levels[l].groups, rested, &dt_us,
			    level_free);
}

/*
 * The interval ends: after the members it let go (kp-aggregate(1),
 * Records), for each level, its groups in order of zone and id, then its
 * host record for each zone.  Ended groups are written once more, in
 * every zone they have a total in, as terminated, and forgotten.
 */
void
end_interval(struct agg *a, int64_t seq, int64_t dt_us)
{
	struct zone_order order;
	size_t i, l;

	kp_live_sweep(&a->live, a->dense, seq);
	end_memberless(a);
	sort_zones(&a->zones, &order);
	sort_items(a);
	for (i = 0, l = 0; l < a->nlevels; l++) {
		emit_groups(a, l, i, &order, seq, dt_us);
		emit_hosts(a, &a->levels[l], &order, seq, dt_us);
		while (i < a->nitems && a->items[i].level == l)
			i++;
	}
	clear_sums(a);
	rest_vms(a, dt_us);
}

/*
 * An interval cut short, which the reader has reported: its sums are
 * dropped, as no interval record gives them a length; who joined and who
 * left a group stays true.
 */
void
drop_interval(struct agg *a)
{
	end_memberless(a);
	sort_items(a);
	clear_sums(a);
}
