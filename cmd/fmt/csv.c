/*
 * -f csv: RFC 4180, one header row for the whole stream and a row per
 * record, the record's fields in the columns of the same names.
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

/*
 * Every CSV column: the first DEFAULT_COLUMNS are the default, in this
 * order, which only grows at its end; co2_g is added to them by
 * --carbon-intensity.  source, estimated and model are in it so that a
 * row of an estimate says so, device so that a GPU's row says which
 * (kp-fmt(1), csv).
 */
static const char *const all_columns[] = {
	"seq", "ts", "dt_us", "type", "zone", "pid", "starttime", "comm",
	"state", "container_id", "pod_id", "vm_id", "unit", "cpu_us",
	"energy_uj", "active_uj", "idle_uj", "watts", "total_uj", "socket",
	"level", "by", "group", "source", "estimated", "model", "device",
	"co2_g", "cgroup", "processes", "total_cpu_us", "usage_ratio",
	"active_watts", "idle_watts", "active_total_uj", "idle_total_uj",
	"idle_kept_uj", "sockets", "threads", "scaled_down", "excess_cpu_us",
	"ppid", "count", "container_name", "pod_name", "pod_namespace",
	"vm_name", "runtime", "exe", "kind", "uuid",
};
#define DEFAULT_COLUMNS 27

static const char *const default_types[] = {
	"energy", "node", "process", "exited", "unattributed", "container",
	"pod", "vm", "unit", "group", "host", NULL
};

/*
 * What a column holds: the record's field of its name, the interval
 * record's, the emissions of its energy, the value its "by" names, or
 * the record's field, else its zone's.
 */
enum { COL_FIELD, COL_INTERVAL, COL_CO2, COL_GROUP, COL_ZONE };

/*
 * The rows of the records taken as read wait in rows for their interval
 * record, as CSV text less the cells of the interval's columns and those
 * that their zone's records fill, whose places are in gaps: what the
 * output needs, not the records.
 */
struct csv_gap {
	size_t at;		/* in rows */
	uint16_t col;
	int16_t zone;		/* COL_ZONE: in zones; else -1 */
};
struct csv {
	int header_done;
	int kind[MAX_COLUMNS];
	struct kp_buf rows;
	struct csv_gap *gaps;
	size_t ngaps, gapcap;
	char *zones[KP_ZONES_MAX];	/* the zones' names, held once */
	size_t nzones;
};

void
csv_list_columns(void)
{
	size_t i;

	for (i = 0; i < NELEM(all_columns); i++)
		printf("%s\n", all_columns[i]);
	exit(kp_out_finish(KP_EXIT_OK));
}

static void
unknown_column(const char *name)
{
	size_t i;

	fprintf(stderr, "kp-fmt: unknown column '%s' (", name);
	for (i = 0; i < NELEM(all_columns); i++)
		fprintf(stderr, "%s%s", i ? ", " : "", all_columns[i]);
	fprintf(stderr, ")\n");
	exit(KP_EXIT_USAGE);
}

static const char *
column_lookup(const char *name)
{
	size_t i;

	for (i = 0; i < NELEM(all_columns); i++)
		if (strcmp(all_columns[i], name) == 0)
			return all_columns[i];
	unknown_column(name);
	return NULL;
}

/* -o: a comma-separated list of known columns. */
void
csv_columns(struct fmt *ctx, const char *list)
{
	char *copy, *name, *save;
	size_t n = 0;

	copy = kp_strdup(list);
	for (name = strtok_r(copy, ",", &save); name != NULL;
	    name = strtok_r(NULL, ",", &save)) {
		if (n == MAX_COLUMNS)
			errx(KP_EXIT_USAGE, "more than %d columns",
			    MAX_COLUMNS);
		ctx->columns[n++] = column_lookup(name);
	}
	free(copy);
	if (n == 0)
		errx(KP_EXIT_USAGE, "no columns in '%s'", list);
	ctx->columns[n] = NULL;
}

void
csv_default_columns(struct fmt *ctx)
{
	size_t i;

	for (i = 0; i < DEFAULT_COLUMNS; i++)
		ctx->columns[i] = all_columns[i];
	if (ctx->has_carbon)
		ctx->columns[i++] = "co2_g";
	ctx->columns[i] = NULL;
}

/* Where the cells of column name come from. */
static int
column_kind(const char *name)
{
	if (strcmp(name, "ts") == 0 || strcmp(name, "dt_us") == 0)
		return COL_INTERVAL;
	if (strcmp(name, "co2_g") == 0)
		return COL_CO2;
	if (strcmp(name, "group") == 0)
		return COL_GROUP;
	return str_in_list(zone_source_keys, name) ? COL_ZONE : COL_FIELD;
}

static void *
csv_begin(struct fmt *ctx)
{
	struct csv *c = kp_calloc(1, sizeof(*c));
	size_t i;

	for (i = 0; ctx->columns[i] != NULL; i++)
		c->kind[i] = column_kind(ctx->columns[i]);
	return c;
}

/* RFC 4180: quoted when it holds a comma, quote, CR or LF. */
static void
csv_text(struct kp_buf *out, const char *s, size_t len)
{
	const char *q;

	if (strpbrk(s, ",\"\r\n") == NULL) {
		kp_buf_add(out, s, len);
		return;
	}
	kp_buf_add(out, "\"", 1);
	while ((q = strchr(s, '"')) != NULL) {
		kp_buf_add(out, s, (size_t)(q - s) + 1);
		kp_buf_add(out, "\"", 1);
		s = q + 1;
	}
	kp_buf_add(out, s, strlen(s));
	kp_buf_add(out, "\"", 1);
}

/* One cell; absent fields, nulls, objects and arrays are empty. */
static void
csv_value(struct kp_buf *out, const struct kp_field *v)
{
	if (v == NULL)
		return;
	switch (v->kind) {
	case KP_V_STR:
		csv_text(out, v->str, v->len);
		break;
	case KP_V_INT:
		kp_buf_i64(out, v->i);
		break;
	case KP_V_REAL:
		put_number(out, v);
		break;
	case KP_V_TRUE:
		kp_buf_add(out, "true", 4);
		break;
	case KP_V_FALSE:
		kp_buf_add(out, "false", 5);
		break;
	}
}

static void
csv_header(struct fmt *ctx, struct csv *c)
{
	size_t i;

	if (c->header_done || ctx->no_header)
		return;
	c->header_done = 1;
	for (i = 0; ctx->columns[i] != NULL; i++)
		kp_buf_printf(&ctx->out, "%s%s", i ? "," : "", ctx->columns[i]);
	kp_buf_add(&ctx->out, "\n", 1);
}

/* What zone's records last said of key, as a cell in out. */
static void
zone_cell(struct fmt *ctx, struct kp_buf *out, const char *zone,
    const char *key)
{
	const char *text = zone_source_get(ctx, zone, key);

	if (text != NULL)
		csv_text(out, text, strlen(text));
}

/* The cell of column i for rec of an interval, in out. */
static void
csv_cell(struct fmt *ctx, const struct csv *c, size_t i, struct kp_buf *out,
    const struct kp_record *rec, const struct kp_record *interval)
{
	const struct kp_field *f;
	const char *zone;
	int64_t uj;

	switch (c->kind[i]) {
	case COL_INTERVAL:
		if (interval != NULL)
			csv_value(out, kp_rec_get(interval, ctx->columns[i]));
		break;
	case COL_CO2:
		/* Unknown, not zero, without an intensity. */
		if (ctx->has_carbon && kp_rec_int(rec, "energy_uj", &uj))
			kp_buf_printf(out, "%.6g", co2_grams(ctx, uj));
		break;
	case COL_GROUP:
		csv_value(out, by_field(rec));
		break;
	case COL_ZONE:
		/*
		 * A member of rec, or, where rec has none, as a process's or
		 * a group's record has no source, what its zone's records
		 * last said: every row of an estimate says so.
		 */
		if ((f = kp_rec_get(rec, ctx->columns[i])) != NULL ||
		    (zone = kp_rec_str(rec, "zone")) == NULL)
			csv_value(out, f);
		else
			zone_cell(ctx, out, zone, ctx->columns[i]);
		break;
	default:
		csv_value(out, kp_rec_get(rec, ctx->columns[i]));
	}
}

/* Whether rec has a row: of -t's types, else of the default ones. */
static int
csv_has_row(const struct fmt *ctx, const struct kp_record *rec)
{
	return ctx->types != NULL ||
	    (str_in_list(default_types, rec->type) &&
	    !rec_is_unattributed_exited(rec));
}

/*
 * A zone's place in zones, so that a row's gap takes 16 bytes; -1 beyond
 * the KP_ZONES_MAX zones that a run keeps apart, whose cells are then
 * written as the row is made.
 */
static int
zone_index(struct csv *c, const char *zone)
{
	size_t i;

	for (i = 0; i < c->nzones; i++)
		if (strcmp(c->zones[i], zone) == 0)
			return i;
	if (c->nzones == KP_ZONES_MAX)
		return -1;
	c->zones[c->nzones] = kp_strdup(zone);
	return c->nzones++;
}

/* A gap at at for column col; zone >= 0: one that zone's records fill. */
static void
gap_add(struct csv *c, size_t at, size_t col, int zone)
{
	if (c->ngaps == c->gapcap) {
		c->gapcap = c->gapcap ? c->gapcap * 2 : 64;
		c->gaps = kp_reallocarray(c->gaps, c->gapcap,
		    sizeof(*c->gaps));
	}
	c->gaps[c->ngaps].at = at;
	c->gaps[c->ngaps].col = col;
	c->gaps[c->ngaps].zone = zone;
	c->ngaps++;
}

/*
 * rec's row in out; held, the cells that its interval record and its
 * zone's last records fill are left as gaps, since those come later.
 */
static void
csv_row(struct fmt *ctx, struct csv *c, struct kp_buf *out,
    const struct kp_record *rec, const struct kp_record *interval, int held)
{
	const char *zone = kp_rec_str(rec, "zone");
	int zi = held && zone != NULL ? zone_index(c, zone) : -1;
	size_t j;

	for (j = 0; ctx->columns[j] != NULL; j++) {
		if (j > 0)
			kp_buf_add(out, ",", 1);
		if (held && c->kind[j] == COL_INTERVAL)
			gap_add(c, out->len, j, -1);
		else if (zi >= 0 && c->kind[j] == COL_ZONE &&
		    kp_rec_get(rec, ctx->columns[j]) == NULL)
			gap_add(c, out->len, j, zi);
		else
			csv_cell(ctx, c, j, out, rec, interval);
	}
	kp_buf_add(out, "\n", 1);
}

/*
 * The text made so far goes out once it is worth a write: the held rows
 * of a large interval, copied to it whole, would cost their size twice.
 */
static void
out_pass(struct fmt *ctx)
{
	if (ctx->out.len < (64 << 10))
		return;
	kp_out_bytes(ctx->out.s, ctx->out.len);
	ctx->out.len = 0;
}

/*
 * The rows held, their gaps filled from interval (NULL: left empty) and
 * from what their zones' records last said.
 */
static void
csv_rows_held(struct fmt *ctx, struct csv *c,
    const struct kp_record *interval)
{
	size_t i, from = 0;

	if (c->rows.len == 0)
		return;
	for (i = 0; i < c->ngaps; i++) {
		out_pass(ctx);
		kp_buf_add(&ctx->out, c->rows.s + from, c->gaps[i].at - from);
		if (c->gaps[i].zone >= 0)
			zone_cell(ctx, &ctx->out, c->zones[c->gaps[i].zone],
			    ctx->columns[c->gaps[i].col]);
		else
			csv_cell(ctx, c, c->gaps[i].col, &ctx->out, NULL,
			    interval);
		from = c->gaps[i].at;
	}
	kp_buf_add(&ctx->out, c->rows.s + from, c->rows.len - from);
	c->rows.len = 0;
	c->ngaps = 0;
}

static void
csv_record(struct fmt *ctx, void *st, const struct kp_record *rec)
{
	if (csv_has_row(ctx, rec))
		csv_row(ctx, st, &((struct csv *)st)->rows, rec, NULL, 1);
}

static void
csv_block(struct fmt *ctx, void *st, const struct block *b,
    const struct kp_record *interval)
{
	struct csv *c = st;
	size_t i;

	csv_header(ctx, c);
	csv_rows_held(ctx, c, interval);
	for (i = 0; i < b->n; i++)
		if (csv_has_row(ctx, b->recs[i]))
			csv_row(ctx, c, &ctx->out, b->recs[i], interval, 0);
}

static void
csv_end(struct fmt *ctx, void *st, const struct block *rest)
{
	struct csv *c = st;
	size_t i;

	csv_block(ctx, c, rest, NULL);
	free(c->rows.s);
	free(c->gaps);
	for (i = 0; i < c->nzones; i++)
		free(c->zones[i]);
	free(c);
}

const struct format fmt_csv = {
	"csv", csv_begin, csv_block, NULL, csv_end, csv_record
};
