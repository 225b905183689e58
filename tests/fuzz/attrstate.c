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

static char dir[PATH_MAX], fixture[PATH_MAX], path[PATH_MAX];
static char boot_id[64];

/* Each zone's total bounds a part of it. */
static void
check_within(const int64_t *total_uj)
{
	size_t z;

	for (z = 0; z < zones.n; z++)
		CHECK(total_uj[z] >= 0 &&
		    total_uj[z] <= node_total[z].total_uj);
}

static void
check_workload(const char *key, void *val, void *arg)
{
	(void)key;
	(void)arg;
	check_within(((struct workload *)val)->total_uj);
}

static void
check_loaded(void)
{
	size_t z, i;

	CHECK(zones.n <= KP_ZONES_MAX);
	for (z = 0; z < zones.n; z++) {
		CHECK(node_total[z].total_uj >= 0);
		CHECK(node_total[z].active_total_uj >= 0 &&
		    node_total[z].active_total_uj <= node_total[z].total_uj);
		CHECK(node_total[z].idle_total_uj >= 0 &&
		    node_total[z].idle_total_uj <= node_total[z].total_uj);
	}
	check_within(unattributed_total);
	kp_map_each(workloads, check_workload, NULL);
	CHECK(opt.max_terminated == 0 ||
	    nended <= (size_t)opt.max_terminated);
	for (i = 0; i < nended; i++) {
		CHECK(id_ok(ended[i].id) && strlen(ended[i].id) ==
		    ended[i].id_len);
		check_within(ended[i].w.total_uj);
	}
}

/* Everything loaded: let go, so that the next load starts as a new run. */
static void
reset(void)
{
	size_t i;

	kp_map_free(workloads, free);
	workloads = kp_map_new();
	for (i = 0; i < nended; i++)
		free(ended[i].id);
	nended = 0;
	memset(node_total, 0, sizeof(node_total));
	memset(unattributed_total, 0, sizeof(unattributed_total));
	memset(&zones, 0, sizeof(zones));
	zones.socket_keys = 1;
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
	json_t *saved;

	CHECK((f = fopen(path, "w")) != NULL);
	fprintf(f, "{\"kind\":\"kp-attribute\",\"version\":1,\"boot_id\":\"%s\","
	    "\"data\":%.*s}\n", boot, (int)len, data);
	fclose(f);
	CHECK((stderr = open_memstream(&said, &saidlen)) != NULL);
	st = kp_state_open(path, fixture, "kp-attribute");
	load_state(st, path, s);
	kp_state_close(st);
	fclose(stderr);
	stderr = real;
	CHECK(takes(data, len) == 1 || saidlen > 0);
	free(said);
	check_loaded();
	saved = state_data(s);
	text = json_dumps(saved, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(saved);
	kp_sampler_free(s);
	reset();
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
	workloads = kp_map_new();
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
