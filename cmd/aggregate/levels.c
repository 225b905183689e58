/*
 * kp-aggregate: the levels of grouping that the options ask for, the
 * groups of each, and the run that holds them.
 */
#include <err.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"

void
add_level(struct agg *a, const char *type, const char *field, int by)
{
	struct level *lv;
	size_t i;

	for (i = 0; i < a->nlevels; i++)
		if (strcmp(a->levels[i].field, field) == 0)
			return;
	if (a->nlevels == LEVELS_MAX)
		errx(KP_EXIT_USAGE, "at most %d levels", LEVELS_MAX);
	lv = &a->levels[a->nlevels++];
	lv->type = type;
	lv->field = kp_strdup(field);
	lv->by = by;
}

static const struct { const char *type, *field; } known[] = {
	{ "container", "container_id" }, { "pod", "pod_id" },
	{ "vm", "vm_id" }, { "unit", "unit" },
};
#define NKNOWN (sizeof(known) / sizeof(known[0]))

void
parse_levels(struct agg *a, const char *arg)
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
		add_level(a, known[i].type, known[i].field, 0);
	}
	free(list);
}

/*
 * A --by field: a name of a group record's own members would be written
 * twice in it, and a level's field is that level's.
 */
void
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

/* The names a group record of level lv carries (kp-records(5)). */
const char *const *
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

/* The group of level lv with id text id, or NULL if there is none yet. */
struct group *
group_find(struct level *lv, const char *id, size_t len)
{
	struct group *g;
	char *key;

	key = kp_strndup(id, len);
	g = kp_map_get(lv->groups, key);
	free(key);
	return g;
}

struct group *
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
group_free(void *p)
{
	struct group *g = p;

	free(g->pod);
	free(g->names);
	free(g);	/* g->id is freed by the caller */
}

/* A group of a level's map, which holds its id as the key. */
void
level_free(void *p)
{
	struct group *g = p;

	free(g->id);
	group_free(g);
}

/*
 * A run with nothing seen yet, its levels set: sparse, the members that
 * never end are held up to a bound (kp-aggregate(1), Records).
 */
void
agg_init(struct agg *a)
{
	struct level *lv;
	size_t l;

	for (l = 0; l < a->nlevels; l++) {
		lv = &a->levels[l];
		lv->groups = kp_map_new();
		memset(lv->host_total_uj, 0, sizeof(lv->host_total_uj));
		memset(lv->host_processes, 0, sizeof(lv->host_processes));
		memset(lv->host_cpu_us, 0, sizeof(lv->host_cpu_us));
		memset(lv->host_energy_uj, 0, sizeof(lv->host_energy_uj));
	}
	memset(&a->zones, 0, sizeof(a->zones));
	a->zones_seen = 0;
	a->dense = 0;
	a->members = kp_map_new();
	memset(&a->live, 0, sizeof(a->live));
	a->live.map = a->members;
	a->live.seq_off = offsetof(struct member, last_seq);
	a->live.leave = member_leave;
	a->live.leave_arg = a;
	a->live.free_val = free;
	a->live.fate = "those seen least recently leave their groups";
	a->items = NULL;
	a->nitems = a->capitems = 0;
	memset(&a->out, 0, sizeof(a->out));
}

/* What agg_init made; the levels' fields stay, as the options gave them. */
static void
agg_clear(struct agg *a)
{
	size_t l;

	kp_map_free(a->members, free);
	for (l = 0; l < a->nlevels; l++)
		kp_map_free(a->levels[l].groups, level_free);
	free(a->items);
	free(a->out.s);
}

void
agg_free(struct agg *a)
{
	size_t l;

	agg_clear(a);
	for (l = 0; l < a->nlevels; l++)
		free(a->levels[l].field);
}

/* Everything a run left, forgotten, its levels kept: a new run. */
void
agg_reset(struct agg *a)
{
	agg_clear(a);
	agg_init(a);
}
