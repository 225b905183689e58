/*
 * kp-aggregate: sums each interval's process records into container, pod
 * and vm records.  Every group is the exact sum of its members; process
 * records pass on unchanged.
 */
#include <err.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "kp.h"

/* A level of grouping: the record type it writes and the field it groups by. */
static const struct level {
	const char *type;
	const char *id_key;
} levels[] = {
	{ "container", "container_id" },
	{ "pod", "pod_id" },
	{ "vm", "vm_id" },
};
#define NLEVELS (sizeof(levels) / sizeof(levels[0]))

static void usage(void);

static void
usage(void)
{
	fprintf(stderr, "usage: kp-aggregate [-h]\n");
	exit(KP_EXIT_USAGE);
}

static int64_t
add_int(json_t *obj, const char *key, int64_t n)
{
	int64_t v = 0;

	kp_json_int(obj, key, &v);
	json_object_set_new(obj, key, json_integer(v + n));
	return v + n;
}

/* Adds one process record to its group of one level, keyed "zone\tid". */
static void
add_member(json_t *groups, const struct level *lv, json_t *proc)
{
	const char *zone, *id, *pod_id;
	int64_t cpu_us = 0, energy_uj = 0;
	json_t *g;
	char *key;

	zone = kp_json_str(proc, "zone");
	if ((id = kp_json_str(proc, lv->id_key)) == NULL || zone == NULL)
		return;
	if (asprintf(&key, "%s\t%s", zone, id) < 0)
		err(KP_EXIT_FAILURE, "asprintf");
	if ((g = json_object_get(groups, key)) == NULL) {
		g = json_pack("{s:s,s:s}", "zone", zone, lv->id_key, id);
		pod_id = kp_json_str(proc, "pod_id");
		if (strcmp(lv->id_key, "container_id") == 0 && pod_id)
			json_object_set_new(g, "pod_id", json_string(pod_id));
		json_object_set_new(groups, key, g);
	}
	free(key);
	kp_json_int(proc, "cpu_us", &cpu_us);
	kp_json_int(proc, "energy_uj", &energy_uj);
	add_int(g, "processes", 1);
	add_int(g, "cpu_us", cpu_us);
	add_int(g, "energy_uj", energy_uj);
}

static int
by_key(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The groups of one level in key order, each with watts and its total. */
static void
emit_level(const struct level *lv, json_t *groups, int64_t seq,
    int64_t dt_us, json_t *totals)
{
	const char **keys;
	const char *key;
	size_t i, n = json_object_size(groups);
	int64_t energy_uj;
	json_t *g, *rec;

	if ((keys = calloc(n + 1, sizeof(*keys))) == NULL)
		err(KP_EXIT_FAILURE, "calloc");
	i = 0;
	json_object_foreach(groups, key, g)
		keys[i++] = key;
	qsort(keys, n, sizeof(*keys), by_key);
	for (i = 0; i < n; i++) {
		g = json_object_get(groups, keys[i]);
		energy_uj = 0;
		kp_json_int(g, "energy_uj", &energy_uj);
		rec = kp_rec_new(lv->type, seq);
		json_object_update(rec, g);
		json_object_set_new(rec, "watts", json_real(dt_us > 0 ?
		    (double)energy_uj / (double)dt_us : 0));
		json_object_set_new(rec, "total_uj", json_integer(
		    add_int(totals, keys[i], energy_uj)));
		kp_out_json_new(rec);
	}
	free(keys);
}

static void
end_interval(json_t *procs, struct kp_record *rec, json_t **totals)
{
	int64_t dt_us = 0;
	size_t i, l;
	json_t *groups, *proc;

	kp_json_int(rec->obj, "dt_us", &dt_us);
	for (l = 0; l < NLEVELS; l++) {
		groups = json_object();
		json_array_foreach(procs, i, proc)
			add_member(groups, &levels[l], proc);
		emit_level(&levels[l], groups, rec->seq, dt_us, totals[l]);
		json_decref(groups);
	}
	json_array_clear(procs);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct kp_reader *r;
	struct kp_record rec;
	json_t *procs, *totals[NLEVELS];
	int64_t v;
	size_t l;
	int ch, status;

	kp_out_init();
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
		usage();
	argc -= optind;
	argv += optind;
	if (argc != 0)
		usage();

	procs = json_array();
	for (l = 0; l < NLEVELS; l++)
		totals[l] = json_object();
	r = kp_reader_open(stdin, "<stdin>");
	while (kp_reader_next(r, &rec)) {
		if (strcmp(rec.type, "interval") == 0) {
			end_interval(procs, &rec, totals);
			kp_out_raw(rec.line, rec.len);
			kp_out_flush();
			continue;
		}
		if (strcmp(rec.type, "process") == 0) {
			if (kp_json_str(rec.obj, "zone") == NULL ||
			    !kp_json_int(rec.obj, "energy_uj", &v) || v < 0) {
				kp_reader_reject(r, "process record without "
				    "a zone and an integer energy_uj");
				continue;
			}
			json_array_append(procs, rec.obj);
		}
		kp_out_raw(rec.line, rec.len);
	}
	status = kp_reader_errors(r) ? KP_EXIT_DATAERR : KP_EXIT_OK;
	if (json_array_size(procs) > 0) {
		warnx("<stdin>:%ld: the stream ends inside an interval: its "
		    "%zu process record(s) are not aggregated",
		    kp_reader_lineno(r), json_array_size(procs));
		status = KP_EXIT_DATAERR;
	}
	kp_reader_close(r);
	json_decref(procs);
	for (l = 0; l < NLEVELS; l++)
		json_decref(totals[l]);
	return kp_out_finish(status);
}
