/*
 * libFuzzer harness for a stream stage's handling of intervals:
 * kp-attribute, whose code (cmd/attribute/main.c, included whole, its main
 * renamed, and its other parts, tests/fuzz/attribute.sources) takes any
 * input read by the one reader and writes into memory.
 * Besides not crashing, what it writes must read back as records by the
 * same rules, and every interval and zone it attributes must be conserved:
 * the node's energy is exactly the processes', the exited records', the
 * unattributed record's and the idle kept at node level.  Where no cpu
 * record comes, it samples the proc-basic fixture, not this machine.  Inputs that hold a key "ts" or
 * a \u escape, or a header of another major version, are skipped: a ts
 * long past with no cpu record, and such a header, end the stage by design
 * (exit 3), which libFuzzer would take for a crash.  So are inputs that
 * hold the record types it writes, which it passes on as they came (an
 * exited record with a zone among them).
 */
#include <limits.h>

#define main kp_attribute_main
#include "../../cmd/attribute/main.c"
#undef main

#define CHECK(c) do { if (!(c)) abort(); } while (0)
#define NSEEN 4096

static struct attr a;

/* Per (seq, zone) of the output: node energy and what was shared of it. */
struct seen {
	int64_t seq;
	char zone[48];
	int64_t node_uj, shared_uj;
	int has_node;
};

static struct seen *
seen_get(struct seen *t, size_t *n, int64_t seq, const char *zone)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (t[i].seq == seq && strcmp(t[i].zone, zone) == 0)
			return &t[i];
	if (*n == NSEEN)
		return NULL;
	memset(&t[*n], 0, sizeof(t[*n]));
	t[*n].seq = seq;
	snprintf(t[*n].zone, sizeof(t[*n].zone), "%s", zone);
	return &t[(*n)++];
}

static int
rec_is_type(const struct kp_record *rec, const char *type)
{
	return strcmp(rec->type, type) == 0;
}

/* One output record into the table; each must read back. */
static void
tally(struct seen *t, size_t *n, const struct kp_record *rec)
{
	int64_t uj = 0, kept = 0;
	char key[48];
	struct seen *s;

	/* Each socket's and each GPU's zone apart, as kp-attribute keeps them. */
	if (!kp_zone_key(rec, 1, key, sizeof(key)) ||
	    (!rec_is_type(rec, "node") && !rec_is_type(rec, "process") &&
	    !rec_is_type(rec, "exited") && !rec_is_type(rec, "unattributed")))
		return;
	if ((s = seen_get(t, n, rec->seq, key)) == NULL)
		return;
	CHECK(kp_rec_int(rec, "energy_uj", &uj));
	if (rec_is_type(rec, "node")) {
		/* Two energy records of one zone are each attributed. */
		s->has_node = 1;
		s->node_uj += uj;
		kp_rec_int(rec, "idle_kept_uj", &kept);
		s->shared_uj += kept;
	} else
		s->shared_uj += uj;
}

static void
check_output(const char *buf, size_t len)
{
	static struct seen t[NSEEN];
	struct kp_reader *r = kp_reader_open_mem(buf, len, "output");
	struct kp_record rec;
	size_t n = 0, i;
	int got;

	while ((got = kp_reader_read(r, &rec)) != 0) {
		CHECK(got > 0);
		tally(t, &n, &rec);
	}
	kp_reader_close(r);
	for (i = 0; i < n; i++)
		CHECK(!t[i].has_node || t[i].shared_uj == t[i].node_uj);
}

/* A record kp-attribute passes on as it came, though it is of its own. */
static int
passed_on(const struct kp_record *rec)
{
	return rec_is_type(rec, "node") || rec_is_type(rec, "process") ||
	    rec_is_type(rec, "unattributed") || (rec_is_type(rec, "exited") &&
	    kp_rec_get(rec, "zone") != NULL);
}

/*
 * Whether one line, read alone, is such a record: alone, since a stage's
 * own refusal of an earlier line (kp_reader_refuse) can let in a line
 * that a bare reader of the whole input would reject.
 */
static int
line_passed_on(const char *line, size_t len)
{
	struct kp_reader *r = kp_reader_open_mem(line, len, "line");
	struct kp_record rec;
	int n = 0;

	if (kp_reader_read(r, &rec) > 0)
		n = passed_on(&rec);
	kp_reader_close(r);
	return n;
}

/*
 * Whether a line that is not a JSON object may end the stage: it does
 * where no record was taken before it, and the stage refuses a record it
 * reads (a proc record without a pid, a sum past 2^60), which is then as
 * if never read.  Only a header or an interval record, which the reader
 * alone judges, is sure to stay taken.
 */
static int
may_end(const struct kp_reader *r, int n, const struct kp_record *rec,
    int *anchored)
{
	if (n > 0)
		*anchored |= rec_is_type(rec, "header") ||
		    rec_is_type(rec, "interval");
	return n < 0 && (kp_reader_fatal(r) || (!*anchored &&
	    strncmp(kp_reader_why(r), "not a JSON object", 17) == 0));
}

/* An input to skip (see above). */
static int
skipped(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size, *nl;
	struct kp_reader *r;
	struct kp_record rec;
	int n, fatal = 0, anchored = 0;

	if (memmem(data, size, "\"ts\"", 4) != NULL ||
	    memmem(data, size, "\\u", 2) != NULL)
		return 1;
	r = kp_reader_open_mem((const char *)data, size, "fuzz");
	while ((n = kp_reader_read(r, &rec)) != 0 && !fatal)
		fatal = may_end(r, n, &rec, &anchored);
	kp_reader_close(r);
	for (; !fatal && p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		fatal = line_passed_on(p, (size_t)(nl - p));
	}
	return fatal;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct kp_sampler *s;
	static char fixture[PATH_MAX];
	struct kp_reader *r;
	FILE *real = stdout;
	char *buf = NULL;
	size_t len = 0;

	if (skipped(data, size))
		return 0;
	if (s == NULL) {
		snprintf(fixture, sizeof(fixture), "%.*s/../fixtures/proc-basic",
		    (int)(strrchr(__FILE__, '/') - __FILE__), __FILE__);
		a.opt = default_options;
		a.opt.sample.procdir = fixture;
		a.input_name = "fuzz";
		kp_out_init();
		attr_init(&a);
		s = kp_sampler_new(a.opt.sample.procdir, 0);
		CHECK(kp_sampler_scan(s) == 0);
	}
	if ((stdout = open_memstream(&buf, &len)) == NULL)
		abort();
	r = kp_reader_open_mem((const char *)data, size, "fuzz");
	run(&a, r, s, NULL);
	kp_reader_close(r);
	fclose(stdout);
	stdout = real;
	check_output(buf, len);
	free(buf);
	attr_reset(&a);	/* so that the next input starts as a new run */
	return 0;
}
