/*
 * libFuzzer harness for rapl-read's own state loader (load_state and
 * load_members in cmd/rapl/state.c, the model's load in
 * cmd/rapl/model.c; cmd/rapl/main.c
 * included whole, its main renamed, and the other parts linked,
 * tests/fuzz/raplstate.sources): any JSON as the data of a state file of
 * this boot, for the counters of the sysfs-2socket fixture and for the
 * model.  Besides not crashing, what it takes must be what a run could have saved: a seq that
 * the next interval continues, a time in the past of the clock, counters
 * within their range; what it refuses is said; and saving what was
 * loaded, then loading and saving that again, must give the same state.
 */
#include <limits.h>

#define main rapl_read_main
#include "../../cmd/rapl/main.c"
#undef main

#define CHECK(c) do { if (!(c)) abort(); } while (0)

static char dir[PATH_MAX], procdir[PATH_MAX], sysfs[PATH_MAX], path[PATH_MAX];
static char boot_id[64];
static struct meter powercap, model;

/* The sample a run took, as the stored one: what a save then writes. */
static void
sample_as_stored(struct meter *m)
{
	size_t i;

	for (i = 0; i < m->nmembers; i++) {
		m->members[i].cur = m->members[i].prev;
		m->members[i].has_cur = m->members[i].has_prev;
	}
}

/* Everything loaded, let go, so that the next load starts as a new run. */
static void
reset(struct meter *m)
{
	size_t i;

	for (i = 0; i < m->nrunning; i++)
		if (m->running[i]->close != NULL)
			m->running[i]->close();
	for (i = 0; i < m->nmembers; i++)
		m->members[i].has_prev = m->members[i].has_cur = 0;
}

/* A counter taken is one of its zone and within its range. */
static int
check_members(const struct meter *m)
{
	const struct member *mb;
	size_t i;
	int taken = 0;

	for (i = 0; i < m->nmembers; i++) {
		mb = &m->members[i];
		if (!mb->has_prev)
			continue;
		CHECK(mb->max_uj == 0 || mb->prev <= mb->max_uj);
		taken++;
	}
	return taken;
}

/*
 * What a run that takes the state does next: the interval it ends
 * continues the stored seq and lasts a positive time.
 */
static void
check_resume(json_int_t seq, json_int_t stored_us)
{
	struct kp_clock clk;

	CHECK(seq >= 0 && seq < INT64_MAX && stored_us >= 0);
	kp_clock_start(&clk, 0);
	if (kp_clock_resume(&clk, seq, stored_us, path))
		CHECK(clk.seq == seq + 1 && clk.dt_us > 0);
}

/* The members of data that name a counter of m, taken or not. */
static size_t
stored_members(const struct meter *m, const char *data, size_t len)
{
	json_t *root = json_loadb(data, len, 0, NULL), *members;
	size_t i, n = 0;

	members = json_object_get(root, "members");
	for (i = 0; i < m->nmembers && json_is_object(members); i++)
		n += json_object_get(members, m->members[i].key) != NULL;
	json_decref(root);
	return n;
}

/*
 * The state file made of data, loaded for m; then what a save would
 * write, or NULL if the state was not taken.  A part refused is said.
 */
static char *
load_and_save(struct meter *m, const char *data, size_t len)
{
	json_int_t seq = 0, stored_us = 0;
	struct kp_state *st;
	FILE *f, *real = stderr;
	char *said = NULL, *text = NULL;
	size_t saidlen = 0;
	json_t *saved;
	int usable;

	CHECK((f = fopen(path, "w")) != NULL);
	fprintf(f, "{\"kind\":\"rapl-read\",\"version\":1,\"boot_id\":\"%s\","
	    "\"data\":%.*s}\n", boot_id, (int)len, data);
	fclose(f);
	CHECK((stderr = open_memstream(&said, &saidlen)) != NULL);
	st = kp_state_open(path, procdir, "rapl-read");
	usable = load_state(m, st, path, &seq, &stored_us);
	kp_state_close(st);
	fclose(stderr);
	stderr = real;
	if (!usable || (m != &model &&
	    (size_t)check_members(m) < stored_members(m, data, len)))
		CHECK(saidlen > 0);
	if (usable) {
		check_resume(seq, stored_us);
		sample_as_stored(m);
		saved = state_data(m, seq, stored_us);
		text = json_dumps(saved, JSON_COMPACT | JSON_SORT_KEYS);
		json_decref(saved);
	}
	free(said);
	reset(m);
	return text;
}

static void
round_trip(struct meter *m, const char *data, size_t size)
{
	char *once, *twice;

	if ((once = load_and_save(m, data, size)) == NULL)
		return;
	twice = load_and_save(m, once, strlen(once));
	CHECK(twice != NULL && strcmp(once, twice) == 0);
	free(once);
	free(twice);
}

static void
setup(void)
{
	char here[PATH_MAX], names[16];
	FILE *f;

	snprintf(here, sizeof(here), "%.*s/../fixtures",
	    (int)(strrchr(__FILE__, '/') - __FILE__), __FILE__);
	snprintf(procdir, sizeof(procdir), "%s/proc-model", here);
	snprintf(path, sizeof(path), "%s/sys/kernel/random/boot_id", procdir);
	CHECK((f = fopen(path, "r")) != NULL);
	CHECK(fscanf(f, "%63s", boot_id) == 1);
	fclose(f);
	CHECK(mkdtemp(strcpy(dir, "/tmp/kp-fuzz-raplstate.XXXXXX")) != NULL);
	snprintf(path, sizeof(path), "%s/rr.state", dir);
	snprintf(sysfs, sizeof(sysfs), "%s/sysfs-2socket", here);
	powercap.sysfs = sysfs;
	powercap.procdir = model.procdir = procdir;
	parse_sources(&powercap, strcpy(names, "powercap"));
	open_sources(&powercap);
	CHECK(powercap.nmembers > 0);
	parse_sources(&model, strcpy(names, "model"));
	open_sources(&model);
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
	round_trip(&powercap, (const char *)data, size);
	round_trip(&model, (const char *)data, size);
	return 0;
}
