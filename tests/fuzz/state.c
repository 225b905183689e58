/*
 * libFuzzer harness for the state loaders: any bytes as JSON (as a state
 * file's data is read), given to kp_sampler_load and to kp_zones_load.
 * Besides not crashing, what a loader takes must be what a run could
 * have saved: nothing negative, and saving what was loaded, then loading
 * and saving that again, gives the same data.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proc/proc.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)
#include "written.h"

/* No integer anywhere in a saved value is negative. */
static void
check_no_negative(json_t *v)
{
	const char *key;
	json_t *m;
	size_t i;

	if (json_is_integer(v))
		CHECK(json_integer_value(v) >= 0);
	else if (json_is_object(v))
		json_object_foreach(v, key, m)
			check_no_negative(m);
	else if (json_is_array(v))
		json_array_foreach(v, i, m)
			check_no_negative(m);
}

static json_t *
sampler_round(json_t *in, int *skipped)
{
	struct kp_sampler *s = kp_sampler_new("/nonexistent", 0);
	json_t *saved = NULL;

	if ((*skipped = kp_sampler_load(s, in)) >= 0) {
		CHECK(kp_sampler_has_baseline(s));
		saved = kp_sampler_save(s);
		CHECK(saved != NULL);
	} else
		CHECK(!kp_sampler_has_baseline(s));
	kp_sampler_free(s);
	return saved;
}

static void
fuzz_sampler(json_t *in)
{
	json_t *saved, *again;
	int skipped;

	if ((saved = sampler_round(in, &skipped)) == NULL)
		return;
	CHECK((size_t)skipped <= json_array_size(json_object_get(in,
	    "procs")));
	check_no_negative(saved);
	again = sampler_round(saved, &skipped);
	CHECK(again != NULL && skipped == 0);
	CHECK(json_equal(saved, again));
	json_decref(again);
	json_decref(saved);
}

/* kp_zones_write as a kp_state_writer */
struct zones_arg {
	const struct kp_zones *zs;
	const int64_t *v;
};

static void
zones_write(struct kp_jw *w, void *arg)
{
	struct zones_arg *za = arg;

	kp_zones_write(w, za->zs, za->v);
}

static json_t *
zones_round(json_t *in, int socket_keys)
{
	struct kp_zones zs;
	int64_t v[KP_ZONES_MAX] = { 0 };
	struct zones_arg zw;
	json_t *saved;
	char *text;
	size_t z;

	memset(&zs, 0, sizeof(zs));
	zs.socket_keys = socket_keys;
	kp_zones_load(&zs, in, v);
	CHECK(zs.n <= KP_ZONES_MAX);
	for (z = 0; z < zs.n; z++) {
		CHECK(v[z] >= 0);
		CHECK(kp_zone_index(&zs, zs.name[z], strlen(zs.name[z])) ==
		    (int)z);
	}
	zw.zs = &zs;
	zw.v = v;
	text = written(zones_write, &zw);
	CHECK((saved = json_loads(text, 0, NULL)) != NULL);
	free(text);
	return saved;
}

static void
fuzz_zones(json_t *in, int socket_keys)
{
	json_t *saved, *again;

	saved = zones_round(in, socket_keys);
	check_no_negative(saved);
	again = zones_round(saved, socket_keys);
	CHECK(json_equal(saved, again));
	json_decref(again);
	json_decref(saved);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t jerr;
	json_t *in;

	/* As lib/state.c reads a state file: no flags. */
	if ((in = json_loadb((const char *)data, size, 0, &jerr)) == NULL)
		return 0;
	fuzz_sampler(in);
	fuzz_zones(in, 0);
	fuzz_zones(in, 1);
	json_decref(in);
	return 0;
}
