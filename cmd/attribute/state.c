/*
 * kp-attribute: the totals that --state keeps across runs, checked when
 * loaded.
 */
#include <err.h>
#include <stdlib.h>
#include <string.h>

#include "attribute.h"

/* What is being saved: of the run, into w. */
struct save_ctx {
	const struct attr *a;
	struct kp_jw *w;
};

/*
 * Totals from a state file are checked before they are used: a process's
 * or the unattributed total is a part of its zone's node total, so that
 * a check of the node total when energy is added (energy_fits) keeps
 * every total from overflowing.
 */
static int
totals_within(const struct attr *a, const int64_t *total_uj)
{
	size_t z;

	for (z = 0; z < a->zones.n; z++)
		if (total_uj[z] < 0 || total_uj[z] > a->node_total[z].total_uj)
			return 0;
	return 1;
}

static void
load_node(struct attr *a, json_t *node, const char *path)
{
	struct node_totals *t;
	const char *zone;
	json_t *v;
	int z;

	json_object_foreach(node, zone, v) {
		if ((z = kp_zone_index(&a->zones, zone, strlen(zone))) < 0)
			continue;
		t = &a->node_total[z];
		kp_json_int(v, "total_uj", &t->total_uj);
		kp_json_int(v, "active_total_uj", &t->active_total_uj);
		kp_json_int(v, "idle_total_uj", &t->idle_total_uj);
		if (t->total_uj < 0 || t->active_total_uj < 0 ||
		    t->idle_total_uj < 0 || t->active_total_uj > t->total_uj ||
		    t->idle_total_uj > t->total_uj) {
			warnx("%s: unusable totals of zone '%s' in the state "
			    "file, starting from zero", path, zone);
			memset(t, 0, sizeof(*t));
		}
	}
}

/* What a stored entry is loaded into, and whose file it was. */
struct load_ctx {
	struct attr *a;
	const char *path;
};

/* A process's totals, one entry of the state's procs. */
static void
load_proc(const char *key, json_t *v, void *arg)
{
	struct load_ctx *c = arg;
	int64_t pid, starttime, total_uj[KP_ZONES_MAX];
	struct workload *w;

	if (!kp_proc_key_parse(key, &pid, &starttime))
		return;
	memset(total_uj, 0, sizeof(total_uj));
	kp_zones_load(&c->a->zones, v, total_uj);
	if (!totals_within(c->a, total_uj)) {
		warnx("%s: unusable totals of process '%s' in the state file, "
		    "left out", c->path, key);
		return;
	}
	w = workload(c->a, pid, starttime, 1);
	memcpy(w->total_uj, total_uj, w->nzones * sizeof(*total_uj));
}

/* Whether stored identity text is what hold_proc copies: ,"pid":7,... */
int
id_ok(const char *id)
{
	return id[0] == ',' && kp_members_count(id) > 0;
}

/* A terminated process, one entry of the state's list. */
static void
load_ended(const char *key, json_t *v, void *arg)
{
	struct load_ctx *c = arg;
	struct attr *a = c->a;
	int64_t total_uj[KP_ZONES_MAX];
	struct ended *e;

	(void)key;
	if (!json_is_string(json_object_get(v, "id")) ||
	    (a->opt.max_terminated > 0 &&
	    a->nended == (size_t)a->opt.max_terminated))
		return;
	if (!id_ok(kp_json_str(v, "id"))) {
		warnx("%s: a terminated process whose identity is not JSON "
		    "members in the state file, left out", c->path);
		return;
	}
	memset(total_uj, 0, sizeof(total_uj));
	kp_zones_load(&a->zones, json_object_get(v, "totals"), total_uj);
	if (!totals_within(a, total_uj)) {
		warnx("%s: unusable totals of a terminated process in the "
		    "state file, left out", c->path);
		return;
	}
	a->ended = kp_reallocarray(a->ended, a->nended + 1, sizeof(*a->ended));
	e = &a->ended[a->nended++];
	memcpy(e->total_uj, total_uj, sizeof(total_uj));
	e->id = kp_strdup(kp_json_str(v, "id"));
	e->id_len = strlen(e->id);
}

/*
 * The stored node and unattributed totals, small, and whether the
 * collections are the objects they should be.
 */
static int
load_totals(struct attr *a, struct kp_state *st, const char *path)
{
	json_t *node, *unattr;

	if (kp_state_opens(st, KP_STATE_PATH("node")) != '{' ||
	    kp_state_opens(st, KP_STATE_PATH("unattributed")) != '{' ||
	    kp_state_opens(st, KP_STATE_PATH("procs")) != '{') {
		warnx("%s: unusable totals in the state file, starting from "
		    "zero", path);
		return -1;
	}
	node = kp_state_get(st, KP_STATE_PATH("node"));
	load_node(a, node, path);
	json_decref(node);
	unattr = kp_state_get(st, KP_STATE_PATH("unattributed"));
	kp_zones_load(&a->zones, unattr, a->unattributed_total);
	json_decref(unattr);
	if (!totals_within(a, a->unattributed_total)) {
		warnx("%s: unusable unattributed totals in the state file, "
		    "starting from zero", path);
		memset(a->unattributed_total, 0, sizeof(a->unattributed_total));
	}
	return 0;
}

/*
 * Totals and the /proc baseline from the previous run, if it left them:
 * its processes entry by entry, never a tree of them (kp-attribute(1),
 * Memory).
 */
void
load_state(struct attr *a, struct kp_state *st, const char *path,
    struct kp_sampler *s)
{
	struct load_ctx c = { a, path };
	json_t *saved;

	if (!kp_state_has(st, 1) || load_totals(a, st, path) < 0)
		return;
	if (kp_state_opens(st, KP_STATE_PATH("terminated")) == '[')
		kp_state_each(st, KP_STATE_PATH("terminated"), load_ended, &c);
	/*
	 * The node's totals go on across a reboot, but the processes of an
	 * earlier boot are gone, and their pid:starttime keys come again in
	 * this one; a /proc sample of an earlier boot means nothing either.
	 */
	if (!kp_state_has(st, 0))
		return;
	kp_state_each(st, KP_STATE_PATH("procs"), load_proc, &c);
	if ((saved = kp_state_get(st, KP_STATE_PATH("sampler"))) != NULL &&
	    kp_sampler_load(s, saved) < 0)
		warnx("%s: unusable /proc sample in the state file, "
		    "starting a new baseline", path);
	json_decref(saved);
}

/*
 * The state's data, written as text entry by entry (kp-attribute(1),
 * Memory): a tree of it was some 500 bytes a process, many times the
 * file.  Processes in the order of their keys, so that the same totals
 * give the same bytes.
 */
static void
save_workload(const char *key, void *val, void *arg)
{
	struct save_ctx *c = arg;
	int64_t total_uj[KP_ZONES_MAX];

	workload_totals(val, total_uj);
	kp_jw_key(c->w, key);
	kp_zones_write(c->w, &c->a->zones, total_uj);
}

static void
save_node(struct kp_jw *w, const struct attr *a)
{
	const struct node_totals *t;
	json_t *node = json_object();
	size_t z;

	for (z = 0; z < a->zones.n; z++) {
		t = &a->node_total[z];
		json_object_set_new(node, a->zones.name[z],
		    json_pack("{s:I,s:I,s:I}", "total_uj",
		    (json_int_t)t->total_uj, "active_total_uj",
		    (json_int_t)t->active_total_uj, "idle_total_uj",
		    (json_int_t)t->idle_total_uj));
	}
	kp_jw_json(w, node);	/* a few zones: small */
	json_decref(node);
}

static void
save_ended(struct kp_jw *w, const struct attr *a)
{
	size_t i;

	kp_jw_open(w, '[');
	for (i = 0; i < a->nended; i++) {
		kp_jw_open(w, '{');
		kp_jw_key(w, "id");
		kp_jw_string(w, a->ended[i].id);
		kp_jw_key(w, "totals");
		kp_zones_write(w, &a->zones, a->ended[i].total_uj);
		kp_jw_close(w, '}');
	}
	kp_jw_close(w, ']');
}

/* state_arg's run, as a kp_state_writer. */
void
state_write(struct kp_jw *w, void *arg)
{
	struct state_arg *sa = arg;
	struct save_ctx c = { sa->a, w };
	json_t *saved;

	kp_jw_open(w, '{');
	kp_jw_key(w, "node");
	save_node(w, sa->a);
	kp_jw_key(w, "procs");
	kp_jw_open(w, '{');
	kp_map_each_sorted(sa->a->workloads, save_workload, &c);
	kp_jw_close(w, '}');
	if (kp_sampler_has_baseline(sa->s)) {
		kp_jw_key(w, "sampler");
		saved = kp_sampler_save(sa->s);
		kp_jw_json(w, saved);
		json_decref(saved);
	}
	kp_jw_key(w, "terminated");
	save_ended(w, sa->a);
	kp_jw_key(w, "unattributed");
	kp_zones_write(w, &sa->a->zones, sa->a->unattributed_total);
	kp_jw_close(w, '}');
}
