/*
 * libFuzzer harness for kp-aggregate's own state loader (load_state in
 * cmd/aggregate/state.c; main.c included whole, its main renamed, and the
 * other parts linked, tests/fuzz/aggstate.sources): any JSON as the
 * data of a state file of this boot.  Besides not crashing, what it loads
 * must hold no negative total, every member must be counted in the groups
 * it names, and saving what was loaded, then loading and saving that
 * again, must give the same state.
 */
#include <limits.h>

#define main kp_aggregate_main
#include "../../cmd/aggregate/main.c"
#undef main

#define CHECK(c) do { if (!(c)) abort(); } while (0)
#include "written.h"

static char dir[PATH_MAX], fixture[PATH_MAX], path[PATH_MAX];
static char boot_id[64];
static struct agg a;

static void
check_group(const char *key, void *val, void *arg)
{
	struct group *g = val;
	size_t z;

	(void)key;
	(void)arg;
	CHECK(g->live >= 0);
	for (z = 0; z < KP_ZONES_MAX; z++)
		CHECK(g->total_uj[z] >= 0);
}

/* The state file made of data, loaded; then what a save would write. */
static char *
load_and_save(const char *data, size_t len)
{
	struct kp_state *st;
	char *text;
	FILE *f;
	size_t l, z;

	CHECK((f = fopen(path, "w")) != NULL);
	fprintf(f, "{\"kind\":\"kp-aggregate\",\"version\":1,\"boot_id\":\"%s\","
	    "\"data\":%.*s}\n", boot_id, (int)len, data);
	fclose(f);
	st = kp_state_open(path, fixture, "kp-aggregate");
	load_state(&a, st, path);
	kp_state_close(st);
	for (l = 0; l < a.nlevels; l++) {
		kp_map_each(a.levels[l].groups, check_group, NULL);
		for (z = 0; z < KP_ZONES_MAX; z++)
			CHECK(a.levels[l].host_total_uj[z] >= 0);
	}
	text = written(state_write, &a);
	agg_reset(&a);	/* so that the next load starts as a new run */
	return text;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	char *once, *twice;
	FILE *f;

	if (!ready) {
		snprintf(fixture, sizeof(fixture), "%.*s/../fixtures/proc-basic",
		    (int)(strrchr(__FILE__, '/') - __FILE__), __FILE__);
		snprintf(path, sizeof(path), "%s/sys/kernel/random/boot_id",
		    fixture);
		CHECK((f = fopen(path, "r")) != NULL);
		CHECK(fscanf(f, "%63s", boot_id) == 1);
		fclose(f);
		/* In memory where it can be: a state file is written each run. */
		CHECK(mkdtemp(strcpy(dir, access("/dev/shm", W_OK) == 0 ?
		    "/dev/shm/kp-fuzz-state.XXXXXX" :
		    "/tmp/kp-fuzz-state.XXXXXX")) != NULL);
		snprintf(path, sizeof(path), "%s/ag.state", dir);
		parse_levels(&a, "container,pod,vm,unit");
		add_level(&a, "group", "comm", 1);
		agg_init(&a);
		ready = 1;
	}
	/* Only JSON the state file can hold: one line, no NUL. */
	if (size > 0 && data[size - 1] == '\n')
		size--;
	if (memchr(data, '\0', size) != NULL || memchr(data, '\n', size))
		return 0;
	once = load_and_save((const char *)data, size);
	twice = load_and_save(once, strlen(once));
	CHECK(strcmp(once, twice) == 0);
	free(once);
	free(twice);
	return 0;
}
