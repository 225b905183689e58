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
 * socket's record of a zone says the same.
 */
static void
source_info(struct prom *p, const struct block *b)
{
	const struct kp_field *est;
	struct kp_map *seen = kp_map_new();
	struct kp_buf *out = &p->text;
	const char *zone;
	size_t i, n, samples = 0;

	for (i = 0; i < b->n; i++) {
		if ((zone = source_zone(b, b->recs[i])) == NULL ||
		    kp_map_get(seen, zone) != NULL)
			continue;
		kp_map_put(seen, zone, seen);
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

/* A workload's key: its type and its labels but zone and state. */
static void
workload_key(struct prom *p, struct kp_buf *key, const struct kp_record *rec)
{
	labels_workload(p, key, joules_family(rec->type), rec);
	kp_buf_add(key, rec->type, strlen(rec->type) + 1);
}

/*
 * A live workload with a sample in this interval had a series: its
 * final total is shown whatever its size (kp-fmt(1),
 * --min-terminated-energy).  seq is its last record's.
 */
static void
had_note(struct prom *p, const char *key, int64_t seq)
{
	int64_t *last_seq;

	if ((last_seq = kp_map_get(p->had.map, key)) == NULL) {
		last_seq = kp_malloc(sizeof(*last_seq));
		kp_map_put(p->had.map, key, last_seq);
	}
	*last_seq = seq;
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
		e->had = kp_map_get(p->had.map, key->s) != NULL;
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

	(void)val;
	free(kp_map_remove(p->had.map, key));
}

/*
 * Which records of b have no sample: terminated workloads past the bound,
 * and with --hide-idle, processes without CPU time.
 */
static void
hide_records(struct fmt *ctx, struct prom *p, const struct block *b)
{
	struct kp_map *ended = kp_map_new();
	struct ended **of = kp_calloc(b->n + 1, sizeof(*of));
	struct kp_buf key = { 0 };
	const struct kp_record *rec;
	int64_t cpu_us;
	size_t i;

	if (b->n > p->hidden_cap) {
		p->hidden = kp_reallocarray(p->hidden, b->n, 1);
		p->hidden_cap = b->n;
	}
	for (i = 0; i < b->n; i++) {
		rec = b->recs[i];
		p->hidden[i] = ctx->hide_idle && rec_is(rec, "process") &&
		    !kp_rec_terminated(rec) &&
		    kp_rec_int(rec, "cpu_us", &cpu_us) && cpu_us == 0;
		if (!str_in_list(workload_types, rec->type))
			continue;
		if (kp_rec_terminated(rec))
			of[i] = ended_add(p, ended, &key, rec);
		else if (!p->hidden[i]) {
			workload_key(p, &key, rec);
			had_note(p, key.s, rec->seq);
		}
	}
	ended_choose(ctx, ended);
	for (i = 0; i < b->n; i++)
		if (of[i] != NULL)
			p->hidden[i] = !of[i]->shown;
	kp_map_each(ended, had_forget, p);
	free(of);
	free(key.s);
	kp_map_free(ended, free);
}

/* The exposition of a block in p->text; it moves the counters on. */
static void
render(struct fmt *ctx, struct prom *p, const struct block *b)
{
	size_t i;

	p->gen++;
	p->text.len = 0;
	labels_prepare(&p->labels, b->n);
	hide_records(ctx, p, b);
	build_info(p);
	kp_buf_add(&p->text, p->cpu_info.s, p->cpu_info.len);
	source_info(p, b);
	for (i = 0; i < NELEM(families); i++)
		if (families[i].kind != COUNTER_CO2 || ctx->has_carbon)
			family_write(ctx, p, i, b, 0);
	exited_write(ctx, p, b, 0);
	if (!block_in_node_zone(p, b)) {
		forget_stale(p);
		return;
	}
	for (i = 0; i < NELEM(families); i++)
		if (p->node_zone_name[i] != NULL &&
		    (families[i].kind != COUNTER_CO2 || ctx->has_carbon))
			family_write(ctx, p, i, b, 1);
	exited_write(ctx, p, b, 1);
	forget_stale(p);
}

/*
 * The temporaries' tag: a name that only kp-fmt's textfile gives, so that
 * the leftovers of a run killed between writing one and renaming it are
 * told from anything else in node_exporter's directory.
 */
#define TEXTFILE_TAG "kp-fmt."
/* A temporary last changed that long ago is no write in progress. */
#define TEXTFILE_STALE_S 60

/* A new temporary file beside the textfile, for the next exposition. */
static int
textfile_temp(const char *path, char **tmp)
{
	int fd;

	*tmp = kp_replaced_temp(path, TEXTFILE_TAG);
	if ((fd = mkstemp(*tmp)) < 0)
		err(KP_EXIT_FAILURE, "textfile '%s': cannot create a file "
		    "in its directory", path);
	return fd;
}

/*
 * At start: the path is what a state file may be (kp-fmt(1),
 * --textfile), the leftovers of earlier runs go, and a directory we
 * cannot write fails now, not later.
 */
void
textfile_check(const char *path)
{
	char *tmp;
	int fd;

	if ((fd = kp_replaced_open(path, "replacing it with the exposition")) >=
	    0)
		close(fd);
	kp_replaced_clean(path, TEXTFILE_TAG, TEXTFILE_STALE_S);
	fd = textfile_temp(path, &tmp);
	close(fd);
	unlink(tmp);
	free(tmp);
}

static int
write_all(int fd, const char *s, size_t len)
{
	ssize_t n;

	for (; len > 0; s += n, len -= (size_t)n)
		if ((n = write(fd, s, len)) < 0)
			return -1;
	return 0;
}

/* Replaces the textfile with the exposition in p->text, atomically. */
static void
textfile_write(const struct prom *p)
{
	char *tmp;
	int fd;

	fd = textfile_temp(p->textfile, &tmp);
	if (write_all(fd, p->text.s, p->text.len) < 0 ||
	    fchmod(fd, 0644) < 0) {
		warn("textfile '%s'", tmp);
		close(fd);
		unlink(tmp);
		exit(KP_EXIT_FAILURE);
	}
	if (close(fd) < 0 || rename(tmp, p->textfile) < 0) {
		warn("textfile '%s'", tmp);
		unlink(tmp);
		exit(KP_EXIT_FAILURE);
	}
	free(tmp);
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
had_sweep(struct prom *p, const struct block *b, int64_t seq)
{
	size_t i;
	int dense = 0;

	for (i = 0; i < b->n && !dense; i++)
		dense = rec_says_dense(b->recs[i]);
	kp_live_sweep(&p->had, dense, seq);
}

/*
 * Each interval moves the counters on and replaces the textfile; standard
 * output gets one exposition, the last, when the input ends (kp-fmt(1),
 * prometheus): a Prometheus text is one snapshot, each family once.
 */
static void
prom_block(struct fmt *ctx, void *st, const struct block *b,
    const struct kp_record *interval)
{
	struct prom *p = st;

	if (interval == NULL && b->n == 0)
		return;
	render(ctx, p, b);
	if (interval != NULL)
		had_sweep(p, b, interval->seq);
	if (p->textfile != NULL && interval != NULL)
		textfile_write(p);
}

static void
prom_end(struct fmt *ctx, void *st, const struct block *rest)
{
	struct prom *p = st;
	size_t i;

	prom_block(ctx, st, rest, NULL);
	if (p->to_stdout)
		kp_buf_add(&ctx->out, p->text.s, p->text.len);
	kp_map_free(p->series, free);
	kp_map_free(p->had.map, free);
	labels_free(&p->labels);
	free(p->text.s);
	free(p->key.s);
	free(p->node_name);
	free(p->cpu_info.s);
	free(p->hidden);
	for (i = 0; i < NELEM(families); i++)
		free(p->node_zone_name[i]);
	for (i = 0; i < NELEM(exited_families); i++)
		free(p->exited_node_zone_name[i]);
	free(p);
}

const struct format fmt_prometheus = {
	"prometheus", prom_begin, prom_block, prom_header, prom_end, NULL
};

const struct format fmt_textfile = {
	"textfile", textfile_begin, prom_block, prom_header, prom_end, NULL
};
