/*
 * kp-aggregate: the totals that --state keeps across runs: each level's
 * groups and host, and the live members.
 */
#include <err.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"

/* What is being saved: of the run, into json. */
struct save_ctx {
	const struct agg *a;
	json_t *json;
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
	if (g->live <= 0 && !g->resting)
		return;
	o = json_pack("{s:s,s:o}", "id", key, "totals",
	    kp_zones_save(&c->a->zones, g->total_uj));
	if (g->resting)
		json_object_set_new(o, "rest_us", json_integer(g->rest_us));
	if (g->pod)
		json_object_set_new(o, "pod", json_string(g->pod));
	json_array_append_new(c->json, o);
}

static void
save_member(const char *key, void *val, void *arg)
{
	struct save_ctx *c = arg;
	struct member *m = val;
	json_t *ids = json_object();
	size_t l;

	for (l = 0; l < c->a->nlevels; l++)
		if (m->g[l] != NULL)
			json_object_set_new(ids, c->a->levels[l].field,
			    json_string(m->g[l]->id));
	json_object_set_new(c->json, key, ids);
}

json_t *
state_data(struct agg *a)
{
	struct save_ctx c = { a, NULL };
	json_t *lvs, *o;
	size_t l;

	lvs = json_object();
	for (l = 0; l < a->nlevels; l++) {
		c.json = json_array();
		kp_map_each_sorted(a->levels[l].groups, save_group, &c);
		o = json_pack("{s:o,s:o}", "groups", c.json, "host",
		    kp_zones_save(&a->zones, a->levels[l].host_total_uj));
		json_object_set_new(lvs, a->levels[l].field, o);
	}
	c.json = json_object();
	kp_map_each(a->members, save_member, &c);
	return json_pack("{s:o,s:o}", "levels", lvs, "members", c.json);
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

/* A level's stored groups, their totals and pods. */
static void
load_groups(struct agg *a, struct level *lv, json_t *gs, const char *path)
{
	const char *id, *pod;
	struct group *g;
	json_t *v;
	size_t i;

	json_array_foreach(gs, i, v) {
		if ((id = kp_json_str(v, "id")) == NULL)
			continue;
		pod = kp_json_str(v, "pod");
		if (!value_ok(id) || (pod != NULL && !value_ok(pod))) {
			warnx("%s: a group whose id is not a JSON value in the "
			    "state file, left out", path);
			continue;
		}
		g = group_get(lv, id, strlen(id));
		kp_zones_load(&a->zones, json_object_get(v, "totals"),
		    g->total_uj);
		rest_load(g, json_object_get(v, "rest_us"));
		/* A group stored twice keeps its first pod. */
		if (pod != NULL && g->pod == NULL)
			g->pod = kp_strdup(pod);
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
	size_t l;

	json_object_foreach(mem, key, ids) {
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
