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

/* What a stored entry is loaded into, and whose file it was. */
struct load_ctx {
	struct agg *a;
	struct level *lv;
	const char *path;
};

/* A stored group, one element of a level's groups: its totals and pod. */
static void
load_group(const char *key, json_t *v, void *arg)
{
	struct load_ctx *c = arg;
	const char *id, *pod;
	struct group *g;

	(void)key;
	if ((id = kp_json_str(v, "id")) == NULL)
		return;
	pod = kp_json_str(v, "pod");
	if (!value_ok(id) || (pod != NULL && !value_ok(pod))) {
		warnx("%s: a group whose id is not a JSON value in the "
		    "state file, left out", c->path);
		return;
	}
	g = group_get(c->lv, id, strlen(id));
	kp_zones_load(&c->a->zones, json_object_get(v, "totals"),
	    g->total_uj);
	rest_load(g, json_object_get(v, "rest_us"));
	/* A group stored twice keeps its first pod. */
	if (pod != NULL && g->pod == NULL)
		g->pod = kp_strdup(pod);
}

/* A member stored twice counts the last time, as in a tree of the file. */
static void
member_forget(struct agg *a, const char *key)
{
	struct member *m = kp_map_remove(a->members, key);
	size_t l;

	if (m == NULL)
		return;
	for (l = 0; l < a->nlevels; l++)
		if (m->g[l] != NULL)
			m->g[l]->live--;
	free(m);
}

/*
 * A live member, one entry of the members: a group's live members are
 * counted from them, not stored, so that the count always matches them;
 * a level this run does not have is left out.
 */
static void
load_member(const char *key, json_t *ids, void *arg)
{
	struct agg *a = arg;
	struct member *m;
	const char *id;
	size_t l;

	member_forget(a, key);
	m = kp_calloc(1, sizeof(*m));
	for (l = 0; l < a->nlevels; l++) {
		id = kp_json_str(ids, a->levels[l].field);
		if (id != NULL && (m->g[l] = kp_map_get(a->levels[l].groups,
		    id)) != NULL) {
			m->g[l]->live++;
			m->g[l]->resting = 0;
		}
	}
	kp_map_put(a->members, key, m);
}

/* A level's host totals, and its groups unless rebooted. */
static void
load_level(struct load_ctx *c, struct kp_state *st, int rebooted)
{
	const char *field = c->lv->field;
	json_t *host;

	if (kp_state_opens(st, KP_STATE_PATH("levels", field)) == 0)
		return;
	host = kp_state_get(st, KP_STATE_PATH("levels", field, "host"));
	kp_zones_load(&c->a->zones, host, c->lv->host_total_uj);
	json_decref(host);
	if (!rebooted && kp_state_opens(st, KP_STATE_PATH("levels", field,
	    "groups")) == '[')
		kp_state_each(st, KP_STATE_PATH("levels", field, "groups"),
		    load_group, c);
}

/*
 * The host totals go on across a reboot, like the node's; the processes of
 * an earlier boot are gone, so are its groups and members: their
 * pid:starttime keys come again in this boot.  Groups and members come
 * entry by entry, never a tree of them (kp-aggregate(1), --state).
 */
void
load_state(struct agg *a, struct kp_state *st, const char *path)
{
	struct load_ctx c = { a, NULL, path };
	int rebooted = !kp_state_has(st, 0);
	size_t l;

	if (!kp_state_has(st, 1))
		return;
	if (kp_state_opens(st, KP_STATE_PATH("levels")) != '{' ||
	    kp_state_opens(st, KP_STATE_PATH("members")) != '{') {
		warnx("%s: unusable totals in the state file, starting from "
		    "zero", path);
		return;
	}
	for (l = 0; l < a->nlevels; l++) {
		c.lv = &a->levels[l];
		load_level(&c, st, rebooted);
	}
	if (!rebooted)
		kp_state_each(st, KP_STATE_PATH("members"), load_member, a);
}
