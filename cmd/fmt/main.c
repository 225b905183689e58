/*
 * kp-fmt: a kp record stream as a table, a live view, CSV, NDJSON or
 * Prometheus text.  The records of interval k wait in a block for k's
 * interval record, and the whole interval is written at once.
 */
#include <err.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt.h"

/* Where each interval goes: the chosen format, the textfile. */
struct sink {
	const struct format *f;
	void *st;
};
#define SINKS_MAX 2

struct sinks {
	struct sink s[SINKS_MAX];
	size_t n;
};

static const struct format *const formats[] = {
	&fmt_table, &fmt_top, &fmt_csv, &fmt_json, &fmt_prometheus,
	&fmt_powercap,
};
#define FORMAT_NAMES "table, top, csv, json, prometheus, powercap"

/* kp-fmt(1), SYNOPSIS and the options. */
static const struct kp_option_help option_help[] = {
	{ "-f, --format format", FORMAT_NAMES },
	{ "-H, --no-header", "no header line" },
	{ "-n, --rows rows", "rows of the live view" },
	{ "-o, --columns columns", "CSV's columns" },
	{ "-t, --types types", "only records of these types" },
	{ "-u, --energy-unit unit", "the unit of energy" },
	{ "--carbon-intensity g_per_kwh", "the grid's CO2 per kWh" },
	{ "--dir dir", "-f powercap's trees, one per VM" },
	{ "--hide-idle", "no rows of 0 W" },
	{ "--list-columns", "print CSV's columns and exit" },
	{ "--max-terminated n", "ended processes shown per interval" },
	{ "--min-terminated-energy joules", "ended processes shown above" },
	{ "--node-name name", "the node's name in Prometheus labels" },
	{ "--summary", "a summary of the run at the end" },
	{ "--summary-rows rows", "rows of each summary table" },
	{ "--textfile path", "Prometheus text kept in path" },
	{ NULL, NULL }
};
static const struct kp_usage usage = {
	"kp-fmt [-Hh] [-f format] [-n rows] [-o columns] [-t types] "
	"[-u unit]\n"
	"              [--carbon-intensity g_per_kwh] [--dir dir] "
	"[--hide-idle]\n"
	"              [--list-columns] "
	"[--max-terminated n] "
	"[--min-terminated-energy joules]\n"
	"              [--node-name name] [--summary] "
	"[--summary-rows rows] [--textfile path]", option_help
};

static const struct format *
format_lookup(const char *name)
{
	size_t i;

	for (i = 0; i < NELEM(formats); i++)
		if (strcmp(formats[i]->name, name) == 0)
			return formats[i];
	errx(KP_EXIT_USAGE, "unknown format '%s' (" FORMAT_NAMES ")", name);
}

/* The record types of kp-records(5), as it spells them. */
static const char *const record_types[] = {
	"header", "interval", "energy", "cpu", "proc", "exited", "command",
	"node", "process", "unattributed", "container", "pod", "vm", "unit",
	"group", "host", NULL
};

/*
 * -t: a comma-separated list of record types, each as kp-records(5)
 * spells it: a misspelt one would select nothing, silently.
 */
static char **
parse_types(const char *list)
{
	char **v = NULL, *copy, *name, *save;
	size_t n = 0;

	copy = kp_strdup(list);
	for (name = strtok_r(copy, ",", &save); name != NULL;
	    name = strtok_r(NULL, ",", &save)) {
		if (!str_in_list(record_types, name))
			kp_usage_unknown("record type", name, record_types);
		v = kp_reallocarray(v, n + 2, sizeof(*v));
		v[n++] = kp_strdup(name);
	}
	free(copy);
	if (n == 0)
		errx(KP_EXIT_USAGE, "no record types in '%s'", list);
	v[n] = NULL;
	return v;
}

static void
free_types(char **types)
{
	char **t;

	for (t = types; t != NULL && *t != NULL; t++)
		free(*t);
	free(types);
}

/* The options; the format is left NULL when -f is not given. */
static void
parse_options(struct fmt *ctx, int argc, char *argv[])
{
	enum { OPT_CARBON = 256, OPT_DIR, OPT_HIDE_IDLE, OPT_LIST_COLUMNS,
	    OPT_MAX_TERMINATED, OPT_MIN_TERMINATED, OPT_NODE_NAME, OPT_SUMMARY,
	    OPT_SUMMARY_ROWS, OPT_TEXTFILE };
	static const struct option longopts[] = {
		{ "carbon-intensity", required_argument, NULL, OPT_CARBON },
		{ "columns", required_argument, NULL, 'o' },
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "energy-unit", required_argument, NULL, 'u' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "hide-idle", no_argument, NULL, OPT_HIDE_IDLE },
		{ "list-columns", no_argument, NULL, OPT_LIST_COLUMNS },
		{ "max-terminated", required_argument, NULL,
		    OPT_MAX_TERMINATED },
		{ "min-terminated-energy", required_argument, NULL,
		    OPT_MIN_TERMINATED },
		{ "node-name", required_argument, NULL, OPT_NODE_NAME },
		{ "no-header", no_argument, NULL, 'H' },
		{ "rows", required_argument, NULL, 'n' },
		{ "summary", no_argument, NULL, OPT_SUMMARY },
		{ "summary-rows", required_argument, NULL, OPT_SUMMARY_ROWS },
		{ "textfile", required_argument, NULL, OPT_TEXTFILE },
		{ "types", required_argument, NULL, 't' },
		{ "version", no_argument, NULL, KP_OPT_VERSION },
		{ NULL, 0, NULL, 0 }
	};
	const char *columns = NULL;
	int ch;

	while ((ch = getopt_long(argc, argv, "Hf:hn:o:t:u:", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'H':
			ctx->no_header = 1;
			break;
		case 'f':
			ctx->format = format_lookup(optarg);
			break;
		case 'n':
			ctx->top_rows = (size_t)kp_parse_int(optarg, 1, 1000000,
			    "-n rows");
			break;
		case 'o':
			columns = optarg;
			break;
		case 't':
			free_types(ctx->types);
			ctx->types = parse_types(optarg);
			break;
		case 'u':
			ctx->eunit = energy_unit_lookup(optarg);
			break;
		case OPT_CARBON:
			ctx->carbon_g_per_kwh = kp_parse_double(optarg, 0, 1e6,
			    "--carbon-intensity");
			ctx->has_carbon = 1;
			break;
		case OPT_DIR:
			ctx->dir = optarg;
			break;
		case OPT_HIDE_IDLE:
			ctx->hide_idle = 1;
			break;
		case OPT_MAX_TERMINATED:
			ctx->max_terminated = kp_parse_int(optarg, 0, 1000000,
			    "--max-terminated");
			break;
		case OPT_MIN_TERMINATED:
			ctx->min_terminated_uj = kp_parse_joules_uj(optarg,
			    "--min-terminated-energy");
			break;
		case OPT_LIST_COLUMNS:
			csv_list_columns();
			break;
		case OPT_NODE_NAME:
			if (*optarg == '\0')
				errx(KP_EXIT_USAGE, "--node-name wants a name");
			ctx->node_name = optarg;
			break;
		case OPT_SUMMARY:
			ctx->summary = 1;
			break;
		case OPT_SUMMARY_ROWS:
			ctx->summary_rows = (size_t)kp_parse_int(optarg, 1,
			    1000000, "--summary-rows");
			break;
		case OPT_TEXTFILE:
			ctx->textfile = optarg;
			break;
		default:
			kp_usage_option(&usage, ch);
		}
	}
	kp_usage_no_operand(&usage, argc, argv);
	if (ctx->dir != NULL && ctx->format != &fmt_powercap)
		errx(KP_EXIT_USAGE, "--dir is for -f powercap");
	if (ctx->dir == NULL && ctx->format == &fmt_powercap)
		errx(KP_EXIT_USAGE, "-f powercap wants --dir");
	/* A summary's totals are no interval: no counter could take them. */
	if (ctx->summary && ctx->format == &fmt_powercap)
		errx(KP_EXIT_USAGE, "--summary is not for -f powercap");
	if (columns != NULL)
		csv_columns(ctx, columns);
	else
		csv_default_columns(ctx);
}

/*
 * The format: -f's, or table on a terminal and json elsewhere; with
 * --textfile and no -f, nothing on standard output.
 */
static void
default_format(struct fmt *ctx)
{
	if (ctx->format == NULL && ctx->textfile == NULL)
		ctx->format = format_lookup(isatty(STDOUT_FILENO) ? "table" :
		    "json");
}

static void
sink_add(struct fmt *ctx, struct sinks *k, const struct format *f)
{
	k->s[k->n].f = f;
	k->s[k->n].st = f->begin(ctx);
	k->n++;
}

/* The summary wraps the chosen format; the textfile is a sink of its own. */
static void
sinks_open(struct fmt *ctx, struct sinks *k)
{
	if (ctx->summary)
		sink_add(ctx, k, &fmt_summary);
	else if (ctx->format != NULL)
		sink_add(ctx, k, ctx->format);
	if (ctx->textfile != NULL && !prom_writes_textfile(ctx))
		sink_add(ctx, k, &fmt_textfile);
}

/* Writes what the sinks made of an interval, at once. */
static void
flush_out(struct fmt *ctx)
{
	kp_out_bytes(ctx->out.s, ctx->out.len);
	ctx->out.len = 0;
	kp_out_flush();
}

/* An interval to every sink; interval NULL: one cut short. */
static void
sinks_block(struct fmt *ctx, struct sinks *k, struct block *b,
    const struct kp_record *interval)
{
	size_t i;

	for (i = 0; i < k->n; i++)
		k->s[i].f->block(ctx, k->s[i].st, b, interval);
	flush_out(ctx);
	block_clear(b);
}

static void
sinks_header(struct fmt *ctx, struct sinks *k, const struct kp_record *rec)
{
	size_t i;

	for (i = 0; i < k->n; i++)
		if (k->s[i].f->header != NULL)
			k->s[i].f->header(ctx, k->s[i].st, rec);
}

static void
sinks_end(struct fmt *ctx, struct sinks *k, struct block *rest)
{
	size_t i;

	for (i = 0; i < k->n; i++)
		k->s[i].f->end(ctx, k->s[i].st, rest);
	flush_out(ctx);
}

/* Whether every sink takes records as read, so that none needs a block. */
static int
sinks_take_records(const struct sinks *k)
{
	size_t i;

	for (i = 0; i < k->n; i++)
		if (k->s[i].f->record == NULL)
			return 0;
	return 1;
}

/*
 * A record to every sink as read.  What they made of it goes out once it
 * passes OUT_HELD_BYTES, not at the interval's end: held, the text of a
 * large interval would cost as much as its records (kp-fmt(1), Memory).
 */
#define OUT_HELD_BYTES (64 << 10)
static void
sinks_record(struct fmt *ctx, struct sinks *k, const struct kp_record *rec)
{
	size_t i;

	for (i = 0; i < k->n; i++)
		k->s[i].f->record(ctx, k->s[i].st, rec);
	if (ctx->out.len >= OUT_HELD_BYTES)
		flush_out(ctx);
}

/*
 * Records wait in the block for their interval record, unless every sink
 * takes them as read; an interval that ended without one, which the
 * reader has reported, is written as incomplete.
 */
static void
format_stream(struct fmt *ctx, struct kp_reader *r)
{
	struct sinks k = { 0 };
	struct block b = { 0 };
	struct kp_record rec;
	int as_read, held = 0;	/* records of the open interval */

	sinks_open(ctx, &k);
	as_read = sinks_take_records(&k);
	while (kp_reader_next(r, &rec) > 0) {
		if (rec.cut_seq >= 0 && held > 0) {
			sinks_block(ctx, &k, &b, NULL);
			held = 0;
		}
		zone_source_note(ctx, &rec);
		if (rec_is(&rec, "interval")) {
			sinks_block(ctx, &k, &b, &rec);
			held = 0;
		} else if (rec_is(&rec, "header"))
			sinks_header(ctx, &k, &rec);	/* -t: the sink's */
		else if (type_wanted(ctx, rec.type)) {
			if (as_read)
				sinks_record(ctx, &k, &rec);
			else
				block_add(&b, &rec);
			held++;
		}
	}
	sinks_end(ctx, &k, &b);
	block_free(&b);
	zone_sources_free(ctx);
}

int
main(int argc, char *argv[])
{
	struct fmt ctx = { 0 };
	struct kp_reader *r;
	int status;

	kp_out_init();
	ctx.eunit = energy_unit_lookup("J");
	ctx.input_name = "<stdin>";
	ctx.summary_first_seq = -1;
	ctx.summary_rows = 1000;
	/* Kepler's bounds on terminated workloads, for the Prometheus path. */
	ctx.max_terminated = 500;
	ctx.min_terminated_uj = 10000000;
	parse_options(&ctx, argc, argv);
	default_format(&ctx);
	if (ctx.textfile != NULL)
		textfile_check(ctx.textfile);

	kp_signals_catch(NULL);
	r = ctx.reader = kp_reader_open(STDIN_FILENO, ctx.input_name);
	format_stream(&ctx, r);
	status = kp_reader_errors(r) > 0 || ctx.data_errors > 0 ?
	    KP_EXIT_DATAERR : KP_EXIT_OK;
	kp_reader_close(r);
	free_types(ctx.types);
	free(ctx.out.s);
	return kp_out_finish(status);
}
