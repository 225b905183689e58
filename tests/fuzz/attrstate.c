/*
 * libFuzzer harness for kp-attribute's own state loader (load_state in
 * cmd/attribute/state.c; main.c included whole, its main renamed, and the
 * other parts linked, tests/fuzz/attrstate.sources): any JSON as the
 * data of a state file, written during this boot or before a reboot.
 * Besides not crashing, what it loads must be totals a run could have
 * kept: none negative, the active and idle parts and every process's,
 * terminated process's and the unattributed total within their zone's
 * node total, a terminated process's identity JSON members; a state not
 * taken at all is said; and saving what was loaded, then loading and
 * saving that again, must give the same state.  Inputs that are not one
 * JSON value are skipped: written as the data, their text could end the
 * data early and add members to the file around it.
 */
#include <limits.h>

#define main kp_attribute_main
#include "../../cmd/attribute/main.c"
#undef main

#define CHECK(c) do { if (!(c)) abort(); } while (0)
#include "written.h"

static char dir[PATH_MAX], fixture[PATH_MAX], path[PATH_MAX];
static char boot_id[64];
static struct attr a;

/* Each zone's total bounds a part of it. */
static void
check_within(const int64_t *total_uj)
{
	size_t z;

	for (z = 0; z < a.zones.n; z++)
		CHECK(total_uj[z] >= 0 &&
		    total_uj[z] <= a.node_total[z].total_uj);
}

static void
check_workload(const char *key, void *val, void *arg)
{
	int64_t total_uj[KP_ZONES_MAX];

	(void)key;
	(void)arg;
	CHECK(((struct workload *)val)->nzones <= a.zones.n);
	workload_totals(val, total_uj);
	check_within(total_uj);
}

static void
check_loaded(void)
{
	const struct node_totals *t;
	size_t z, i;

	CHECK(a.zones.n <= KP_ZONES_MAX);
	for (z = 0; z < a.zones.n; z++) {
		t = &a.node_total[z];
		CHECK(t->total_uj >= 0);
		CHECK(t->active_total_uj >= 0 &&
		    t->active_total_uj <= t->total_uj);
		CHECK(t->idle_total_uj >= 0 && t->idle_total_uj <= t->total_uj);
	}
	check_within(a.unattributed_total);
	kp_map_each(a.workloads, check_workload, NULL);
	CHECK(a.opt.max_terminated == 0 ||
	    a.nended <= (size_t)a.opt.max_terminated);
	for (i = 0; i < a.nended; i++) {
		CHECK(id_ok(a.ended[i].id) && strlen(a.ended[i].id) ==
		    a.ended[i].id_len);
		check_within(a.ended[i].total_uj);
	}
}

/* Whether data is a state kp-attribute takes at all; -1: not JSON. */
static int
takes(const char *data, size_t len)
{
	json_t *root = json_loadb(data, len, 0, NULL), *node, *unattr, *procs;
	int ok;

	if (root == NULL)
		return -1;
	ok = json_unpack(root, "{s:o,s:o,s:o}", "node", &node,
	    "unattributed", &unattr, "procs", &procs) == 0 &&
	    json_is_object(node) && json_is_object(unattr) &&
	    json_is_object(procs);
	json_decref(root);
	return ok;
}

/*
 * The state file made of data, written during boot, loaded; then what a
 * save would write.
 */
static char *
load_and_save(const char *data, size_t len, const char *boot)
{
	struct kp_sampler *s = kp_sampler_new(fixture, 0);
	struct kp_state *st;
	FILE *f, *real = stderr;
	char *said = NULL, *text;
	size_t saidlen = 0;
	struct state_arg sa;

	CHECK((f = fopen(path, "w")) != NULL);
	fprintf(f, "{\"kind\":\"kp-attribute\",\"version\":1,\"boot_id\":\"%s\","
	    "\"data\":%.*s}\n", boot, (int)len, data);
	fclose(f);
	CHECK((stderr = open_memstream(&said, &saidlen)) != NULL);
	st = kp_state_open(path, fixture, "kp-attribute");
	load_state(&a, st, path, s);
	kp_state_close(st);
	fclose(stderr);
	stderr = real;
	CHECK(takes(data, len) == 1 || saidlen > 0);
	free(said);
	check_loaded();
	sa.a = &a;
	sa.s = s;
	text = written(state_write, &sa);
	kp_sampler_free(s);
	attr_reset(&a);	/* so that the next load starts as a new run */
	return text;
}

static void
round_trip(const char *data, size_t size, const char *boot)
{
	char *once, *twice;

	once = load_and_save(data, size, boot);
	twice = load_and_save(once, strlen(once), boot);
	CHECK(strcmp(once, twice) == 0);
	free(once);
	free(twice);
}

static void
setup(void)
{
	FILE *f;

	snprintf(fixture, sizeof(fixture), "%.*s/../fixtures/proc-basic",
	    (int)(strrchr(__FILE__, '/') - __FILE__), __FILE__);
	snprintf(path, sizeof(path), "%s/sys/kernel/random/boot_id", fixture);
	CHECK((f = fopen(path, "r")) != NULL);
	CHECK(fscanf(f, "%63s", boot_id) == 1);
	fclose(f);
	CHECK(mkdtemp(strcpy(dir, "/tmp/kp-fuzz-attrstate.XXXXXX")) != NULL);
	snprintf(path, sizeof(path), "%s/ka.state", dir);
	a.opt = default_options;
	attr_init(&a);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;

	if (!ready) {
		setup();
		ready = 1;
	}
	/* Only JSON the state file can hold: one line, no NUL. */
	if (size > 0 && data[size - 1] == '\n')
		size--;
	if (memchr(data, '\0', size) != NULL || memchr(data, '\n', size))
		return 0;
	/* Nor text that ends the data early and adds members to the file. */
	if (takes((const char *)data, size) < 0)
		return 0;
	/* By its length, an input is of this boot or of an earlier one. */
	round_trip((const char *)data, size, size % 2 ? boot_id :
	    "an-earlier-boot");
	return 0;
}
