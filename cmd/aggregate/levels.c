/*
 * kp-aggregate: the levels of grouping that the options ask for, and the
 * groups of each.
 */
#include <err.h>
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
