/*
 * kp-aggregate: the totals that --state keeps across runs: each level's
 * groups and host, and the live members.
 */
#include <err.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"

/*
 * The state's data, written as text entry by entry (kp-aggregate(1),
 * --state): a tree of it was many times the file.  Groups and members in
 * the order of their keys, so that the same totals give the same bytes.
 */
struct save_ctx {
	const struct agg *a;
	struct kp_jw *w;
};

static void
save_group(const char *key, void *val, void *arg)
{
	struct save_ctx *c = arg;
	struct group *g = val;

	/*
	 * A group without a live member, left by a stream that ended inside
	 * an interval, would come back with nothing to end it.
	 */
	if (g->live <= 0 && !g->resting)
		return;
	kp_jw_open(c->w, '{');
	kp_jw_key(c->w, "id");
	kp_jw_string(c->w, key);
	if (g->pod) {
		kp_jw_key(c->w, "pod");
		kp_jw_string(c->w, g->pod);
	}
	if (g->resting) {
		kp_jw_key(c->w, "rest_us");
		kp_jw_int(c->w, g->rest_us);
	}
	kp_jw_key(c->w, "totals");
	kp_zones_write(c->w, &c->a->zones, g->total_uj);
	kp_jw_close(c->w, '}');
}

static void
save_member(const char *key, void *val, void *arg)
{
	struct save_ctx *c = arg;
	struct member *m = val;
	const struct level *lv[LEVELS_MAX];
	size_t l, n = 0, i, j;

	/* the levels' names in strcmp(3)'s order, few: an insertion sort */
	for (l = 0; l < c->a->nlevels; l++)
		if (m->g[l] != NULL) {
			for (i = n++; i > 0 && strcmp(lv[i - 1]->field,
			    c->a->levels[l].field) > 0; i--)
				lv[i] = lv[i - 1];
			lv[i] = &c->a->levels[l];
		}
	kp_jw_key(c->w, key);
	kp_jw_open(c->w, '{');
	for (j = 0; j < n; j++) {
		l = (size_t)(lv[j] - c->a->levels);
		kp_jw_key(c->w, lv[j]->field);
		kp_jw_string(c->w, m->g[l]->id);
	}
	kp_jw_close(c->w, '}');
}

/* The run's state, a kp_state_writer of struct agg. */
void
state_write(struct kp_jw *w, void *arg)
{
	struct agg *a = arg;
	struct save_ctx c = { a, w };
	const struct level *lv;
	size_t l;

	kp_jw_open(w, '{');
	kp_jw_key(w, "levels");
	kp_jw_open(w, '{');
	for (l = 0; l < a->nlevels; l++) {
		lv = &a->levels[l];
		kp_jw_key(w, lv->field);
		kp_jw_open(w, '{');
		kp_jw_key(w, "groups");
		kp_jw_open(w, '[');
		kp_map_each_sorted(lv->groups, save_group, &c);
		kp_jw_close(w, ']');
		kp_jw_key(w, "host");
		kp_zones_write(w, &a->zones, lv->host_total_uj);
		kp_jw_close(w, '}');
	}
	kp_jw_close(w, '}');
	kp_jw_key(w, "members");
	kp_jw_open(w, '{');
	kp_map_each_sorted(a->members, save_member, &c);
	kp_jw_close(w, '}');
	kp_jw_close(w, '}');
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

/* A VM's group at rest, as stored: how long since it ended. */
static void
rest_load(struct group *g, json_t *rest)
{
	json_int_t us = json_integer_value(rest);

	if (!json_is_integer(rest) || us < 0 || us > KP_VM_KEEP_US)
		return;
	g->resting = 1;
	g->rest_us = us;
}

/* A stored group, its totals and pod. */
static void
load_group(struct agg *a, struct level *lv, json_t *v, const char *path)
{
	const char *id, *pod;
	struct group *g;

	if ((id = kp_json_str(v, "id")) == NULL)
		return;
	pod = kp_json_str(v, "pod");
	if (!value_ok(id) || (pod != NULL && !value_ok(pod))) {
		warnx("%s: a group whose id is not a JSON value in the "
		    "state file, left out", path);
		return;
	}
	g = group_get(lv, id, strlen(id));
	kp_zones_load(&a->zones, json_object_get(v, "totals"), g->total_uj);
	rest_load(g, json_object_get(v, "rest_us"));
	/* A group stored twice keeps its first pod. */
	if (pod != NULL && g->pod == NULL)
		g->pod = kp_strdup(pod);
}

/*
 * A level's stored groups.  Each is released from the tree once taken,
 * and so are the members below: the tree, many times the file, and what
 * it becomes never stand whole side by side (kp-aggregate(1), --state).
 */
static void
load_groups(struct agg *a, struct level *lv, json_t *gs, const char *path)
{
	size_t i;

	for (i = 0; i < json_array_size(gs); i++) {
		load_group(a, lv, json_array_get(gs, i), path);
		json_array_set_new(gs, i, json_null());
	}
}

/*
 * A group's live members are counted from the members, not stored, so
 * that the count always matches them; a level this run does not have is
 * left out.
 */
static void
load_members(struct agg *a, json_t *mem)
{
	struct member *m;
	const char *key, *id;
	json_t *ids;
	void *next;
	size_t l;

	json_object_foreach_safe(mem, next, key, ids) {
		m = kp_calloc(1, sizeof(*m));
		for (l = 0; l < a->nlevels; l++) {
			id = kp_json_str(ids, a->levels[l].field);
			if (id != NULL && (m->g[l] = kp_map_get(
			    a->levels[l].groups, id)) != NULL) {
				m->g[l]->live++;
				m->g[l]->resting = 0;
			}
		}
		kp_map_put(a->members, key, m);
		json_object_del(mem, key);	/* as load_groups does */
	}
}

/*
 * The host totals go on across a reboot, like the node's; the processes of
 * an earlier boot are gone, so are its groups and members: their
 * pid:starttime keys come again in this boot.
 */
void
load_state(struct agg *a, struct kp_state *st, const char *path)
{
	int rebooted = kp_state_data(st) == NULL;
	json_t *data = kp_state_data_any_boot(st), *lvs, *lv, *mem;
	size_t l;

	if (data == NULL)
		return;
	lvs = json_object_get(data, "levels");
	mem = json_object_get(data, "members");
	if (!json_is_object(lvs) || !json_is_object(mem)) {
		warnx("%s: unusable totals in the state file, starting from "
		    "zero", path);
		return;
	}
	for (l = 0; l < a->nlevels; l++) {
		if ((lv = json_object_get(lvs, a->levels[l].field)) == NULL)
			continue;
		kp_zones_load(&a->zones, json_object_get(lv, "host"),
		    a->levels[l].host_total_uj);
		if (!rebooted)
			load_groups(a, &a->levels[l],
			    json_object_get(lv, "groups"), path);
	}
	if (!rebooted)
		load_members(a, mem);
}
