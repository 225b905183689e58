/*
 * -f prometheus and --textfile: at each interval, a complete exposition in
 * the Prometheus text format 0.0.4, with the metric families and labels of
 * Kepler.  A counter series keeps what it showed, so that it never goes
 * backwards; a workload's series without a sample for a while is
 * forgotten.  The node's name, from the stream's header, labels every
 * series; the node zone, every zone counted once, has families of its own,
 * so that a sum over a kepler_* family's zones counts nothing twice.
 */
#include <err.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prom.h"
#include "build.h"

/*
 * kepler_build_info's arch, as Go's GOARCH names it, and its goversion,
 * the C compiler and its version: both as the compiler knows them.
 */
#define STR_(x) #x
#define STR(x) STR_(x)
#if defined(__x86_64__)
#define BUILD_ARCH "amd64"
#elif defined(__aarch64__)
#define BUILD_ARCH "arm64"
#elif defined(__i386__)
#define BUILD_ARCH "386"
#elif defined(__arm__)
#define BUILD_ARCH "arm"
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define BUILD_ARCH "ppc64le"
#elif defined(__powerpc64__)
#define BUILD_ARCH "ppc64"
#elif defined(__s390x__)
#define BUILD_ARCH "s390x"
#elif defined(__riscv) && __riscv_xlen == 64
#define BUILD_ARCH "riscv64"
#else
#define BUILD_ARCH "unknown"
#endif
#if defined(__clang__)
#define BUILD_COMPILER "clang " STR(__clang_major__) "." \
    STR(__clang_minor__) "." STR(__clang_patchlevel__)
#elif defined(__GNUC__)
#define BUILD_COMPILER "gcc " STR(__GNUC__) "." STR(__GNUC_MINOR__) "." \
    STR(__GNUC_PATCHLEVEL__)
#else
#define BUILD_COMPILER "unknown"
#endif

/* kepler_build_info: what kp-fmt is, as Kepler says what it is. */
static void
build_info(struct prom *p)
{
	struct kp_buf *out = &p->text;
	size_t n = 0;

	kp_buf_printf(out, "# HELP kepler_build_info The build of kp-fmt: its "
	    "version, git branch and revision, CPU architecture, and in "
	    "goversion its C compiler; always 1\n"
	    "# TYPE kepler_build_info gauge\nkepler_build_info{");
	label_pair(out, &n, "arch", BUILD_ARCH, NULL);
	label_pair(out, &n, "branch", BUILD_BRANCH, NULL);
	label_pair(out, &n, "revision", BUILD_REVISION, NULL);
	label_pair(out, &n, "version", VERSION, NULL);
	label_pair(out, &n, "goversion", BUILD_COMPILER, NULL);
	if (node_name(p) != NULL)
		label_pair(out, &n, "node_name", node_name(p), NULL);
	kp_buf_add(out, "} 1\n", 4);
}

/*
 * The zone whose energy rec says the source of: rec is a node record, or
 * an energy record standing for a node record missing; NULL if it is
 * neither, names no source, or is of the node zone, a sum of zones that
 * say theirs, which has no zone label (kp-fmt(1)).
 */
static const char *
source_zone(const struct block *b, const struct kp_record *rec)
{
	const char *zone = kp_rec_str(rec, "zone");

	if (zone == NULL || kp_rec_str(rec, "source") == NULL ||
	    strcmp(zone, "node") == 0)
		return NULL;
	if (rec_is(rec, "node") ||
	    (rec_is(rec, "energy") && !block_has_node(b, zone)))
		return zone;
	return NULL;
}

/*
 * kp_energy_source_info: per zone, its source, whether it is estimated,
 * and the model of an estimate, so that the flag is on the dashboard too,
 * while Kepler's families keep Kepler's labels.  One sample a zone: each
 * socket's record of a zone says the same; but one a GPU, whose devices
 * may each have a source of their own, with its gpu label.
 */
static void
source_info(struct prom *p, const struct block *b)
{
	const struct kp_field *est;
	struct kp_map *seen = kp_map_new();
	struct kp_buf *out = &p->text;
	const char *zone, *device;
	char key[KP_ZONE_NAME_MAX + 1];
	size_t i, n, samples = 0;

	for (i = 0; i < b->n; i++) {
		if ((zone = source_zone(b, b->recs[i])) == NULL ||
		    !kp_zone_key(b->recs[i], 0, key, sizeof(key)) ||
		    kp_map_get(seen, key) != NULL)
			continue;
		kp_map_put(seen, key, seen);
		if (samples++ == 0)
			kp_buf_printf(out, "# HELP kp_energy_source_info Where "
			    "the energy of each zone comes from: its source, "
			    "whether it is estimated, and by which model; "
			    "always 1\n# TYPE kp_energy_source_info gauge\n");
		est = kp_rec_get(b->recs[i], "estimated");
		n = 0;
		kp_buf_add(out, "kp_energy_source_info{", 22);
		label_pair(out, &n, "zone", zone, NULL);
		label_pair(out, &n, "source", NULL, b->recs[i]);
		label_pair(out, &n, "estimated", est == NULL ? "" :
		    est->kind == KP_V_TRUE ? "true" : "false", NULL);
		label_pair(out, &n, "model", NULL, b->recs[i]);
		if ((device = kp_rec_str(b->recs[i], "device")) != NULL &&
		    strcmp(zone, "gpu") == 0)
			label_pair(out, &n, "gpu", device, NULL);
		if (node_name(p) != NULL)
			label_pair(out, &n, "node_name", node_name(p), NULL);
		kp_buf_add(out, "} 1\n", 4);
	}
	kp_map_free(seen, NULL);
}

/*
 * A workload that ended in the block: its energy, whether it had a series
 * before, and whether it is shown.
 */
struct ended {
	int64_t uj;
	int had;
	int shown;
};

/* Those that had a series first, then by energy, the most first. */
static int
by_energy_desc(const void *a, const void *b)
{
	const struct ended *x = *(struct ended *const *)a;
	const struct ended *y = *(struct ended *const *)b;

	if (x->had != y->had)
		return y->had - x->had;
	return (x->uj < y->uj) - (x->uj > y->uj);
}

/* The family of joules of a workload record type. */
static const struct family *
joules_family(const char *type)
{
	size_t i;

	for (i = 0; i < NELEM(families); i++)
		if (families[i].kind == COUNTER_J &&
		    strcmp(families[i].rectype, type) == 0)
			return &families[i];
	return NULL;
}

/*
 * A workload's key: its type, its labels but zone and state, and its
 * starttime, which tells a pid used again from the one that ended.
 */
static void
workload_key(struct prom *p, struct kp_buf *key, const struct kp_record *rec)
{
	int64_t starttime;

	labels_workload(p, key, joules_family(rec->type), rec);
	if (kp_rec_int(rec, "starttime", &starttime))
		kp_buf_printf(key, " %lld", (long long)starttime);
	kp_buf_add(key, rec->type, strlen(rec->type) + 1);
}

/*
 * A sparse stream's bound holds while an interval is read: beyond
 * KP_LIVE_MAX, those seen least recently are let go at once, those of
 * this interval never; the next try waits for half as many again, so that
 * an interval of more costs no sort each.
 */
static void
had_bound(struct prom *p, int64_t seq)
{
	size_t n = kp_map_count(p->had.map);

	if (p->dense || n <= KP_LIVE_MAX || n < p->had_next)
		return;
	kp_live_sweep(&p->had, 0, seq);
	p->had_next = kp_map_count(p->had.map) + KP_LIVE_MAX / 2;
}

/*
 * A live workload with a sample in this interval had a series: its
 * final total is shown whatever its size (kp-fmt(1),
 * --min-terminated-energy).  seq is its last record's.
 */
static void
had_note(struct prom *p, const char *key, int64_t seq)
{
	char hashed[24];
	int64_t *last_seq;

	hashed_key(key, hashed);
	if ((last_seq = kp_map_get(p->had.map, hashed)) != NULL) {
		*last_seq = seq;
		return;
	}
	last_seq = kp_malloc(sizeof(*last_seq));
	*last_seq = seq;
	kp_map_put(p->had.map, hashed, last_seq);
	had_bound(p, seq);
}

/* Whether the workload of key had a series. */
static int
had_series(struct prom *p, const char *key)
{
	char hashed[24];

	hashed_key(key, hashed);
	return kp_map_get(p->had.map, hashed) != NULL;
}

/*
 * The workload of terminated record rec in ended, keyed as workload_key
 * leaves it in key; its energy added, over every zone but node, which
 * counts each once more.
 */
static struct ended *
ended_add(struct prom *p, struct kp_map *ended, struct kp_buf *key,
    const struct kp_record *rec)
{
	struct ended *e;
	const char *zone = kp_rec_str(rec, "zone");
	int64_t uj = 0;
	int over = 0;

	workload_key(p, key, rec);
	if ((e = kp_map_get(ended, key->s)) == NULL) {
		e = kp_calloc(1, sizeof(*e));
		e->had = had_series(p, key->s);
		kp_map_put(ended, key->s, e);
	}
	if (!kp_rec_int(rec, "total_uj", &uj))
		kp_rec_int(rec, "energy_uj", &uj);
	if (zone == NULL || strcmp(zone, "node") != 0)
		e->uj = add_saturated(e->uj, uj, &over);
	return e;
}

static void
ended_list(const char *key, void *val, void *arg)
{
	struct ended ***at = arg;

	(void)key;
	*(*at)++ = val;
}

/*
 * Kepler's bound on terminated workloads that never had a series: those
 * below --min-terminated-energy are shown no more, and of the rest the
 * --max-terminated with the most energy.  One that had a series gets its
 * final total, so that its counter does not stop short of it.
 */
static void
ended_choose(struct fmt *ctx, struct kp_map *ended)
{
	struct ended **v, **at;
	size_t i, n = kp_map_count(ended), had = 0;

	at = v = kp_calloc(n + 1, sizeof(*v));
	kp_map_each(ended, ended_list, &at);
	qsort(v, n, sizeof(*v), by_energy_desc);
	for (i = 0; i < n && v[i]->had; i++)
		v[i]->shown = 1;
	for (had = i; i < n; i++)
		v[i]->shown = v[i]->uj >= ctx->min_terminated_uj &&
		    i - had < (size_t)ctx->max_terminated;
	free(v);
}

/* An ended workload has no series to remember any more. */
static void
had_forget(const char *key, void *val, void *arg)
{
	struct prom *p = arg;
	char hashed[24];

	(void)val;
	hashed_key(key, hashed);
	free(kp_map_remove(p->had.map, hashed));
}

/*
 * The interval's terminated workloads: one that had a series gets its
 * final total; the others are bound as Kepler bounds them.
 */
static void
ended_take(struct fmt *ctx, struct prom *p)
{
	struct kp_map *ended = kp_map_new();
	struct ended **of = kp_calloc(p->ended.n + 1, sizeof(*of));
	struct kp_buf key = { 0 };
	size_t i;

	for (i = 0; i < p->ended.n; i++)
		of[i] = ended_add(p, ended, &key, p->ended.recs[i]);
	ended_choose(ctx, ended);
	for (i = 0; i < p->ended.n; i++)
		if (of[i]->shown)
			families_take(ctx, p, p->ended.recs[i]);
	kp_map_each(ended, had_forget, p);
	free(of);
	free(key.s);
	kp_map_free(ended, free);
}

/* The interval's first record, or its interval record: it opens. */
static void
interval_open(struct prom *p)
{
	if (!p->open) {
		p->open = 1;
		p->gen++;
	}
}

/*
 * A record of the open interval, as read.  Its samples go to their
 * families' slots at once; what the interval's end decides waits for it:
 * terminated workloads (the bounds), node and energy records (an energy
 * record stands for a node record missing) and exited records (summed per
 * series).  With --hide-idle, a process without CPU time has none.
 */
static void
prom_take(struct fmt *ctx, struct prom *p, const struct kp_record *rec)
{
	int64_t cpu_us;

	interval_open(p);
	p->dense |= rec_says_dense(rec);
	p->any_node_zone |= rec_in_node_zone(rec);
	if (rec_is(rec, "node") || rec_is(rec, "energy"))
		block_add(&p->lines, rec);
	else if (rec_is(rec, "exited"))
		block_add(&p->exited, rec);
	else if (!str_in_list(workload_types, rec->type))
		families_take(ctx, p, rec);
	else if (kp_rec_terminated(rec))
		block_add(&p->ended, rec);
	else if (!ctx->hide_idle || !rec_is(rec, "process") ||
	    !kp_rec_int(rec, "cpu_us", &cpu_us) || cpu_us != 0) {
		workload_key(p, &p->key, rec);
		had_note(p, p->key.s, rec->seq);
		families_take(ctx, p, rec);
	}
}

/* The exposition of the interval, in Kepler's order of families. */
static void
exposition_write(struct fmt *ctx, struct prom *p, struct prom_out *out)
{
	size_t i;

	build_info(p);
	kp_buf_add(&p->text, p->cpu_info.s, p->cpu_info.len);
	source_info(p, &p->lines);
	for (i = 0; i < NELEM(families); i++)
		slot_write(p, i, 0, out);
	labels_prepare(&p->labels, p->exited.n);
	exited_write(ctx, p, &p->exited, 0);
	prom_out_text(p, out);
	if (p->any_node_zone) {
		for (i = 0; i < NELEM(families); i++)
			slot_write(p, i, 1, out);
		exited_write(ctx, p, &p->exited, 1);
	}
	prom_out_flush(p, out);
}

/* Forgets the open interval; keeps the memory for the next. */
static void
interval_clear(struct prom *p)
{
	size_t i;

	for (i = 0; i < NELEM(families); i++) {
		slot_clear(&p->slots[0][i]);
		slot_clear(&p->slots[1][i]);
	}
	block_clear(&p->lines);
	block_clear(&p->exited);
	block_clear(&p->ended);
	p->spill_end = 0;
	p->open = p->dense = p->any_node_zone = 0;
}

/*
 * With -f prometheus, the exposition on stdout also goes to the textfile,
 * rendered once, since rendering moves the counters on; but not for the
 * summary, whose counters start from nothing.
 */
int
prom_writes_textfile(const struct fmt *ctx)
{
	return ctx->textfile != NULL && ctx->format == &fmt_prometheus &&
	    !ctx->summary;
}

static struct prom *
prom_new(const struct fmt *ctx, const char *textfile, int to_stdout)
{
	struct prom *p = kp_calloc(1, sizeof(*p));
	size_t i;

	p->to_stdout = to_stdout;
	p->textfile = textfile;
	p->spill_fd = p->last_fd = -1;
	p->series = kp_map_new();
	p->had.map = kp_map_new();
	p->had.free_val = free;
	p->had.fate = "a terminated one of those let go is shown only above "
	    "--min-terminated-energy";
	p->default_node_name = ctx->node_name;
	for (i = 0; i < NELEM(families); i++)
		p->node_zone_name[i] = node_zone_name(&families[i]);
	for (i = 0; i < NELEM(exited_families); i++)
		p->exited_node_zone_name[i] =
		    node_zone_name(&exited_families[i]);
	return p;
}

static void *
prom_begin(struct fmt *ctx)
{
	return prom_new(ctx, prom_writes_textfile(ctx) ? ctx->textfile : NULL,
	    1);
}

static void *
textfile_begin(struct fmt *ctx)
{
	return prom_new(ctx, ctx->textfile, 0);
}

/* Whether processor number v has a sample already: it is in seen. */
static int
processor_seen(json_t *seen, json_int_t v)
{
	size_t i;

	for (i = 0; i < json_array_size(seen); i++)
		if (json_integer_value(json_array_get(seen, i)) == v)
			return 1;
	return 0;
}

/*
 * One processor of the header's cpu_info as a kepler_node_cpu_info
 * sample, what is unknown empty; none for an element without a processor
 * number or with one already written, which would repeat a series.
 */
static void
cpu_info_sample(struct prom *p, json_t *cpu, json_t *seen)
{
	static const char *const keys[] = {
		"processor", "vendor_id", "model_name", "physical_id", "core_id"
	};
	struct kp_buf *out = &p->cpu_info;
	json_t *v = json_object_get(cpu, "processor");
	char num[32];
	size_t i, n = 0;

	if (!json_is_integer(v) || processor_seen(seen, json_integer_value(v)))
		return;
	json_array_append(seen, v);
	kp_buf_add(out, "kepler_node_cpu_info{", 21);
	for (i = 0; i < NELEM(keys); i++) {
		v = json_object_get(cpu, keys[i]);
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
		    json_integer_value(v));
		label_pair(out, &n, keys[i], json_is_integer(v) ? num :
		    json_is_string(v) ? json_string_value(v) : "", NULL);
	}
	if (node_name(p) != NULL)
		label_pair(out, &n, "node_name", node_name(p), NULL);
	kp_buf_add(out, "} 1\n", 4);
}

/* The samples of kepler_node_cpu_info, from a header's cpu_info. */
static void
cpu_info_make(struct prom *p, const struct kp_field *f)
{
	json_t *cpus, *seen = json_array();
	size_t i;

	kp_buf_printf(&p->cpu_info, "# HELP kepler_node_cpu_info The "
	    "node's processors, as its header names them; always 1\n"
	    "# TYPE kepler_node_cpu_info gauge\n");
	cpus = json_loadb(f->raw, f->rawlen, 0, NULL);
	for (i = 0; i < json_array_size(cpus); i++)
		cpu_info_sample(p, json_array_get(cpus, i), seen);
	if (json_array_size(seen) == 0)
		p->cpu_info.len = 0;
	json_decref(cpus);
	json_decref(seen);
}

/*
 * A header starts a stream: its node_name and cpu_info label what comes
 * after it, and a header without them leaves them unknown.
 */
static void
prom_header(struct fmt *ctx, void *st, const struct kp_record *rec)
{
	struct prom *p = st;
	const struct kp_field *f = kp_rec_get(rec, "cpu_info");
	const char *name = kp_rec_str(rec, "node_name");

	(void)ctx;
	free(p->node_name);
	p->node_name = name != NULL ? kp_strdup(name) : NULL;
	p->cpu_info.len = 0;
	if (f != NULL && f->kind == KP_V_ARRAY)
		cpu_info_make(p, f);
}

/*
 * The workloads that had a series and ended without a terminated record:
 * in a dense interval, those without one; in a sparse stream, beyond
 * KP_LIVE_MAX, those seen least recently.
 */
static void
had_sweep(struct prom *p, int64_t seq)
{
	kp_live_sweep(&p->had, p->dense, seq);
	p->had_next = 0;
}

/*
 * The interval ends: the exposition is written, to the textfile's
 * temporary, renamed into place, for a whole interval, and to stdout's
 * file, which keeps the last; interval NULL: one cut short.
 */
static void
interval_end(struct fmt *ctx, struct prom *p, const struct kp_record *interval)
{
	struct prom_out out;
	size_t i;

	ended_take(ctx, p);
	for (i = 0; i < p->lines.n; i++)
		families_take(ctx, p, p->lines.recs[i]);
	prom_out_open(p, &out, interval != NULL);
	exposition_write(ctx, p, &out);
	prom_out_close(p, &out);
	forget_stale(p);
	if (interval != NULL)
		had_sweep(p, interval->seq);
	interval_clear(p);
}

/*
 * Each interval moves the counters on and replaces the textfile; standard
 * output gets one exposition, the last, when the input ends (kp-fmt(1),
 * prometheus): a Prometheus text is one snapshot, each family once.  b
 * holds the records when they were not taken as read.
 */
static void
prom_block(struct fmt *ctx, void *st, const struct block *b,
    const struct kp_record *interval)
{
	struct prom *p = st;
	size_t i;

	for (i = 0; i < b->n; i++)
		prom_take(ctx, p, b->recs[i]);
	/* An interval without records has an exposition too. */
	if (interval != NULL)
		interval_open(p);
	if (p->open)
		interval_end(ctx, p, interval);
}

static void
prom_record(struct fmt *ctx, void *st, const struct kp_record *rec)
{
	prom_take(ctx, st, rec);
}

static void
prom_free(struct prom *p)
{
	size_t i;

	kp_map_free(p->series, free);
	kp_map_free(p->had.map, free);
	labels_free(&p->labels);
	for (i = 0; i < NELEM(p->rec_labels.text); i++)
		free(p->rec_labels.text[i].s);
	for (i = 0; i < NELEM(families); i++) {
		slot_clear(&p->slots[0][i]);
		slot_clear(&p->slots[1][i]);
		free(p->slots[0][i].text.s);
		free(p->slots[0][i].parts);
		free(p->slots[1][i].text.s);
		free(p->slots[1][i].parts);
		free(p->node_zone_name[i]);
	}
	for (i = 0; i < NELEM(exited_families); i++)
		free(p->exited_node_zone_name[i]);
	block_free(&p->lines);
	block_free(&p->exited);
	block_free(&p->ended);
	free(p->text.s);
	free(p->key.s);
	free(p->node_name);
	free(p->cpu_info.s);
	if (p->spill_fd >= 0)
		close(p->spill_fd);
	if (p->last_fd >= 0)
		close(p->last_fd);
	free(p->last.s);
	free(p);
}

static void
prom_end(struct fmt *ctx, void *st, const struct block *rest)
{
	struct prom *p = st;

	prom_block(ctx, st, rest, NULL);
	if (p->to_stdout)
		prom_out_last(ctx, p);
	prom_free(p);
}

const struct format fmt_prometheus = {
	"prometheus", prom_begin, prom_block, prom_header, prom_end,
	prom_record
};

const struct format fmt_textfile = {
	"textfile", textfile_begin, prom_block, prom_header, prom_end,
	prom_record
};
