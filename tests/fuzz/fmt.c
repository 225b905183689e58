/*
 * libFuzzer harness for kp-fmt's handling of a stream: cmd/fmt/main.c,
 * included whole, its main renamed, with the block store and the formats
 * (tests/fuzz/fmt.sources).  Any input, read by the one reader, is written
 * twice into memory, and checked against what was read:
 *
 *	as CSV of the energy_uj, cpu_us and total_uj columns: every record
 *	of the types CSV writes is a row, in the order read, its cells the
 *	values read, none negative;
 *	as a JSON --summary of two rows a bucket, so that workloads fold
 *	into "(other)" rows: its records read back by the rules (no energy
 *	or time negative), and per bucket (type, zone, socket, level, by),
 *	the rows and the other row sum every summed field of the records of
 *	the whole intervals read, exactly; the powers it works out are not
 *	negative, a usage ratio is at most 1.
 *
 * Inputs whose reader stops (another major version) are skipped: kp-fmt
 * exits 3 on them by design, which libFuzzer would take for a crash.  So
 * are conservation checks where a sum passed INT64_MAX, which kp-fmt
 * reports (exit 3) and holds there.
 */
#include <limits.h>
#include <math.h>

#define main kp_fmt_main
#include "../../cmd/fmt/main.c"
#undef main

#define CHECK(c) do { if (!(c)) abort(); } while (0)

static const char *const csv_cols[] = { "energy_uj", "cpu_us", "total_uj" };
#define NCOLS (sizeof(csv_cols) / sizeof(csv_cols[0]))

/*
 * The types that -f csv writes without -t, as kp-fmt(1) lists them; an
 * exited record without a zone, not yet given energy, is not written.
 */
static const char *const csv_types[] = {
	"energy", "node", "process", "exited", "unattributed", "container",
	"pod", "vm", "unit", "group", "host", NULL
};

/* The summed fields of kp-fmt --summary, as summary.c lists them. */
static const char *const summed[] = {
	"energy_uj", "active_uj", "idle_uj", "idle_kept_uj", "cpu_us",
	"total_cpu_us",
};
#define NSUMMED (sizeof(summed) / sizeof(summed[0]))

/* One bucket's sums: of what was read, and of what the summary wrote. */
struct bucket {
	__int128 read[NSUMMED], written[NSUMMED], pending[NSUMMED];
};

static void
bucket_free(void *p)
{
	free(p);
}

/* A part of a bucket's key, by the rule of summary.c's key_part. */
static void
key_part(struct kp_buf *key, const struct kp_field *v)
{
	if (v != NULL && v->kind == KP_V_STR)
		kp_buf_add(key, v->str, v->len);
	else if (v != NULL && v->kind == KP_V_INT)
		kp_buf_i64(key, v->i);
	kp_buf_add(key, "\x1f", 1);
}

static struct bucket *
bucket_of_rec(struct kp_map *m, const struct kp_record *rec)
{
	static const char *const fields[] = {
		"type", "zone", "socket", "level", "by",
	};
	struct kp_buf key = { NULL, 0, 0 };
	struct bucket *b;
	size_t i;

	for (i = 0; i < NELEM(fields); i++)
		key_part(&key, kp_rec_get(rec, fields[i]));
	kp_buf_add(&key, "", 1);
	if ((b = kp_map_get(m, key.s)) == NULL) {
		b = kp_calloc(1, sizeof(*b));
		kp_map_put(m, key.s, b);
	}
	free(key.s);
	return b;
}

/* What was read: the CSV rows to expect, and each bucket's sums. */
struct expect {
	struct kp_buf csv;	/* the rows, as kp-fmt writes them */
	struct kp_map *buckets;
	struct bucket **pending;	/* those the open interval added to */
	size_t npending, cap;
	size_t intervals;
};

static void
csv_row(struct kp_buf *b, const struct kp_record *rec)
{
	const struct kp_field *f;
	size_t i;

	if (!str_in_list(csv_types, rec->type) ||
	    rec_is_unattributed_exited(rec))
		return;
	for (i = 0; i < NCOLS; i++) {
		if (i > 0)
			kp_buf_add(b, ",", 1);
		if ((f = kp_rec_get(rec, csv_cols[i])) != NULL) {
			CHECK(f->kind == KP_V_INT && f->i >= 0);
			kp_buf_i64(b, f->i);
		}
	}
	kp_buf_add(b, "\n", 1);
}

static void
add_pending(struct expect *e, const struct kp_record *rec)
{
	struct bucket *b = bucket_of_rec(e->buckets, rec);
	int64_t v;
	size_t i;

	for (i = 0; i < NSUMMED; i++)
		if (kp_rec_int(rec, summed[i], &v))
			b->pending[i] += v;
	if (e->npending == e->cap) {
		e->cap = e->cap ? e->cap * 2 : 16;
		e->pending = kp_reallocarray(e->pending, e->cap,
		    sizeof(*e->pending));
	}
	e->pending[e->npending++] = b;
}

/* The open interval ends: summed if whole, else forgotten. */
static void
end_pending(struct expect *e, int whole)
{
	struct bucket *b;
	size_t i, j;

	for (j = 0; j < e->npending; j++) {
		b = e->pending[j];
		for (i = 0; i < NSUMMED; i++) {
			if (whole)
				b->read[i] += b->pending[i];
			b->pending[i] = 0;
		}
	}
	e->npending = 0;
	e->intervals += whole;
}

/*
 * The input as kp-fmt's loop takes it, without it: 0 if the reader
 * stops, which kp-fmt does not survive.
 */
static int
expect_read(struct expect *e, const uint8_t *data, size_t size)
{
	struct kp_reader *r = kp_reader_open_mem((const char *)data, size,
	    "fuzz");
	struct kp_record rec;
	int n, ok = 1;

	while ((n = kp_reader_read(r, &rec)) != 0 && ok) {
		if (n < 0) {
			ok = !kp_reader_fatal(r);
			continue;
		}
		if (rec.cut_seq >= 0)
			end_pending(e, 0);
		if (rec_is(&rec, "interval"))
			end_pending(e, 1);
		else if (!rec_is(&rec, "header")) {
			csv_row(&e->csv, &rec);
			add_pending(e, &rec);
		}
	}
	kp_reader_close(r);
	return ok;
}

/* The stream through kp-fmt's loop, its output in *buf. */
static void
format(struct fmt *ctx, const uint8_t *data, size_t size, char **buf,
    size_t *len)
{
	FILE *real = stdout;
	struct kp_reader *r;

	CHECK((stdout = open_memstream(buf, len)) != NULL);
	ctx->input_name = "fuzz";
	ctx->summary_first_seq = -1;
	ctx->data_errors = 0;
	r = ctx->reader = kp_reader_open_mem((const char *)data, size, "fuzz");
	format_stream(ctx, r);
	kp_reader_close(r);
	fclose(stdout);
	stdout = real;
}

static void
check_csv(const struct expect *e, const uint8_t *data, size_t size)
{
	static struct fmt ctx;
	char *buf = NULL, head[64];
	size_t len = 0, i, n = 0;

	if (ctx.format == NULL) {
		ctx.format = &fmt_csv;
		ctx.eunit = energy_unit_lookup("J");
		for (i = 0; i < NCOLS; i++)
			n += (size_t)snprintf(head + n, sizeof(head) - n,
			    "%s%s", i ? "," : "", csv_cols[i]);
		csv_columns(&ctx, head);
	}
	format(&ctx, data, size, &buf, &len);
	/* The header row, then a row per record kept, as read. */
	CHECK(len > 0 && memchr(buf, '\n', len) != NULL);
	n = (size_t)((char *)memchr(buf, '\n', len) - buf) + 1;
	CHECK(len - n == e->csv.len && (e->csv.len == 0 ||
	    memcmp(buf + n, e->csv.s, e->csv.len) == 0));
	free(buf);
	free(ctx.out.s);
	ctx.out.s = NULL;
	ctx.out.len = ctx.out.cap = 0;
}

/*
 * A power the summary works out, from the energy the row sums, and a
 * usage ratio: numbers, not negative, the ratio at most 1.  (Where a row
 * has no such energy, its power is the last record's, as read.)
 */
static void
check_derived(const struct kp_record *rec)
{
	static const char *const watts[][2] = {
		{ "energy_uj", "watts" }, { "active_uj", "active_watts" },
		{ "idle_uj", "idle_watts" },
	};
	int64_t v;
	double x;
	size_t i;

	for (i = 0; i < NELEM(watts); i++) {
		if (!kp_rec_int(rec, watts[i][0], &v))
			continue;
		x = kp_rec_number(rec, watts[i][1]);
		CHECK(!isnan(x) && x >= 0);
	}
	if ((rec_is(rec, "node") && kp_rec_int(rec, "energy_uj", &v) &&
	    kp_rec_int(rec, "active_uj", &v)) || (rec_is(rec, "cpu") &&
	    kp_rec_int(rec, "cpu_us", &v) &&
	    kp_rec_int(rec, "total_cpu_us", &v))) {
		x = kp_rec_number(rec, "usage_ratio");
		CHECK(!isnan(x) && x >= 0 && x <= 1);
	}
}

static void
tally_written(struct kp_map *buckets, const struct kp_record *rec)
{
	struct bucket *b = bucket_of_rec(buckets, rec);
	int64_t v;
	size_t i;

	check_derived(rec);
	for (i = 0; i < NSUMMED; i++)
		if (kp_rec_int(rec, summed[i], &v))
			b->written[i] += v;
}

static void
check_bucket(const char *key, void *val, void *arg)
{
	struct bucket *b = val;
	size_t i;

	(void)key;
	(void)arg;
	for (i = 0; i < NSUMMED; i++)
		CHECK(b->read[i] == b->written[i]);
}

static void
check_summary(struct expect *e, const uint8_t *data, size_t size)
{
	static struct fmt ctx;
	struct kp_reader *r;
	struct kp_record rec;
	char *buf = NULL;
	size_t len = 0;
	int n, intervals = 0;

	if (ctx.format == NULL) {
		ctx.format = &fmt_json;
		ctx.eunit = energy_unit_lookup("J");
		ctx.summary = 1;
		ctx.summary_rows = 2;
		csv_default_columns(&ctx);
	}
	format(&ctx, data, size, &buf, &len);
	r = kp_reader_open_mem(buf, len, "summary");
	while ((n = kp_reader_read(r, &rec)) != 0) {
		CHECK(n > 0);
		/* The header passed on is no summed record, whatever it holds. */
		if (rec_is(&rec, "interval"))
			intervals++;
		else if (!rec_is(&rec, "header"))
			tally_written(e->buckets, &rec);
	}
	kp_reader_close(r);
	CHECK(intervals == (e->intervals > 0));
	if (ctx.data_errors == 0)
		kp_map_each(e->buckets, check_bucket, NULL);
	free(buf);
	free(ctx.out.s);
	ctx.out.s = NULL;
	ctx.out.len = ctx.out.cap = 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct expect e;

	memset(&e, 0, sizeof(e));
	e.buckets = kp_map_new();
	if (expect_read(&e, data, size)) {
		check_csv(&e, data, size);
		check_summary(&e, data, size);
	}
	kp_map_free(e.buckets, bucket_free);
	free(e.pending);
	free(e.csv.s);
	return 0;
}
