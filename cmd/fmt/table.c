/*
 * -f table: one block of text per interval, for people: the interval, a
 * line per zone, then tables of the workloads sorted by power.  As its
 * records are read, an interval keeps the few of its lines whole and the
 * rows of its tables as rows.c keeps them (kp-fmt(1), Memory).
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

#define TABLE_COLS 9

/* The cells of one row, as they are made. */
struct table {
	char **cells;
	size_t ncells, cap;
};

/*
 * The exited records whose power the table shows as zero, below 0.005 mW,
 * its last digit: many such rows would bury the few that count, so they
 * are summed per zone into one "other ended" row (kp-fmt(1), -f table).
 */
#define EXITED_SHOWN_MIN_W 5e-6
struct ended_fold {
	char *zone;
	int64_t count, energy_uj, cpu_us;
	double watts;
};

/*
 * An interval as the table keeps it: the records of its lines whole,
 * the rows of its tables, the width of the zones of all its records;
 * the folds of its ended rows, which levels have groups, the level of
 * its first host record, for the tables of those.
 */
struct kept {
	struct block lines;
	struct rows rows;
	struct table cells;
	size_t zone_width;
	int64_t first_seq;	/* -1: no record yet */
	struct ended_fold *folds;
	size_t nfolds, folds_cap;
	struct table group_bys;	/* the "by" of each group record, once */
	char *first_level;	/* the first host record's row's; NULL: none */
};

/*
 * How print_table writes rows: their columns' alignment and titles, in
 * max places where it can (0: any); name, where not NULL, in place of
 * each row's first cell; extra, where not NULL, rows after them, ncols
 * cells each.
 */
struct layout {
	const char *align;
	const char *const *head;
	size_t max;
	const char *name;
	const struct table *extra;
};

/* The state of -f table: the open interval, and whether one was written. */
struct table_state {
	struct kept k;
	int written;
};

/* The records whose lines come before the tables: a few an interval. */
static const char *const line_types[] = {
	"node", "energy", "cpu", "command", "unattributed", NULL
};

/* The workload tables, in the order written, and their rows' records. */
enum { PROCESSES, EXITED, FIRST_GROUPS, BY_GROUPS = FIRST_GROUPS + 4,
	HOSTS };
static const struct row_kind {
	const char *type;
	const char *id_key;	/* the id of a group; NULL: by's field */
	const char *title;
	size_t id_max;
} row_kinds[NROW_KINDS] = {
	{ "process", NULL, NULL, 0 },
	{ "exited", NULL, NULL, 0 },
	{ "container", "container_id", "CONTAINER", 12 },
	{ "pod", "pod_id", "POD", SIZE_MAX },
	{ "vm", "vm_id", "VM", SIZE_MAX },
	{ "unit", "unit", "UNIT", SIZE_MAX },
	{ "group", NULL, "GROUP", SIZE_MAX },
	{ "host", "level", "HOST LEVEL", SIZE_MAX },
};

/* Terminal columns of UTF-8 text, counting each code point as one. */
static size_t
text_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

/*
 * A copy of s for a terminal: at most max code points, control characters
 * as '?' so that a hostile comm cannot break the layout.
 */
static char *
term_text(const char *s, size_t max)
{
	char *p, *t;
	size_t w = 0;

	t = kp_strdup(s);
	for (p = t; *p; p++) {
		if (((unsigned char)*p & 0xc0) != 0x80 && w++ == max)
			break;
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	}
	*p = '\0';
	return t;
}

static void
pad(struct kp_buf *out, size_t n)
{
	static const char spaces[] = "                                ";

	for (; n > sizeof(spaces) - 1; n -= sizeof(spaces) - 1)
		kp_buf_add(out, spaces, sizeof(spaces) - 1);
	kp_buf_add(out, spaces, n);
}

static void
put_str(struct kp_buf *out, const char *s)
{
	kp_buf_add(out, s, strlen(s));
}

/* s fit for a terminal. */
static void
put_term(struct kp_buf *out, const char *s)
{
	char *t = term_text(s, SIZE_MAX);

	put_str(out, t);
	free(t);
}

/* Adds a cell, a copy of text made fit for a terminal. */
static void
table_cell(struct table *t, const char *text, size_t max)
{
	if (t->ncells == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->cells = kp_reallocarray(t->cells, t->cap,
		    sizeof(*t->cells));
	}
	t->cells[t->ncells++] = term_text(text, max);
}

static void
cells_clear(struct table *t)
{
	size_t i;

	for (i = 0; i < t->ncells; i++)
		free(t->cells[i]);
	t->ncells = 0;
}

/* Widens each of the ncols columns to its cell in c. */
static void
widen(size_t *width, const char *const *c, size_t ncols)
{
	size_t i, w;

	for (i = 0; i < ncols; i++)
		if ((w = text_width(c[i])) > width[i])
			width[i] = w;
}

/* The first ncols cells of row in c. */
static void
row_split(const struct row *row, const char **c, size_t ncols)
{
	const char *p = row_cells(row);
	size_t i;

	for (i = 0; i < ncols; i++, p += strlen(p) + 1)
		c[i] = p;
}

/* The first ncols cells of row, the first name where that is not NULL. */
static void
layout_split(const struct layout *l, const struct row *row, const char **c,
    size_t ncols)
{
	row_split(row, c, ncols);
	if (l->name != NULL)
		c[0] = l->name;
}

/*
 * Narrows the widest text columns, one place at a time, until the table
 * fits max places (0: any), as top needs on a terminal: numbers keep
 * their width, and a text column keeps at least its title's.
 */
static void
table_fit(const struct layout *l, size_t *width, size_t ncols)
{
	size_t col, total, widest;

	for (;;) {
		total = 2 * (ncols - 1);
		widest = ncols;
		for (col = 0; col < ncols; col++) {
			total += width[col];
			if (l->align[col] == 'l' &&
			    width[col] > text_width(l->head[col]) &&
			    (widest == ncols || width[col] > width[widest]))
				widest = col;
		}
		if (l->max == 0 || total <= l->max || widest == ncols)
			return;
		width[widest]--;
	}
}

/* A cell cut to width places, its last an ellipsis, where it is wider. */
static void
put_cell(struct kp_buf *out, const char *cell, size_t width)
{
	char *cut;

	if (text_width(cell) <= width || width == 0) {
		put_str(out, cell);
		return;
	}
	cut = term_text(cell, width - 1);
	put_str(out, cut);
	put_str(out, "\xe2\x80\xa6");	/* U+2026, an ellipsis */
	free(cut);
}

/*
 * One line of a table: its cells, each padded to its column's width or
 * cut to it.
 */
static void
print_cells(struct kp_buf *out, const char *align, const size_t *width,
    const char *const *c)
{
	size_t col, ncols = strlen(align), w;

	for (col = 0; col < ncols; col++) {
		w = text_width(c[col]);
		w = w < width[col] ? width[col] - w : 0;
		if (align[col] == 'r')
			pad(out, w);
		put_cell(out, c[col], width[col]);
		if (col == ncols - 1)
			kp_buf_add(out, "\n", 1);
		else
			pad(out, align[col] == 'l' ? w + 2 : 2);
	}
}

/* The width of each column of the rows of s and of l's extra rows. */
static void
layout_widths(const struct layout *l, const struct rowset *s, size_t *width,
    size_t ncols)
{
	const char *c[TABLE_COLS];
	size_t i;

	widen(width, l->head, ncols);
	for (i = 0; i < s->n; i++) {
		layout_split(l, s->v[i], c, ncols);
		widen(width, c, ncols);
	}
	for (i = 0; l->extra != NULL && i < l->extra->ncells; i += ncols)
		widen(width, (const char *const *)l->extra->cells + i, ncols);
	table_fit(l, width, ncols);
}

/* The table of the rows of s, then l's extra ones, if it has any. */
static void
print_table(struct kp_buf *out, const struct layout *l,
    const struct rowset *s)
{
	size_t width[TABLE_COLS] = { 0 }, ncols = strlen(l->align), i;
	const char *c[TABLE_COLS];

	if (s->n == 0 && (l->extra == NULL || l->extra->ncells == 0))
		return;
	layout_widths(l, s, width, ncols);
	print_cells(out, l->align, width, l->head);
	for (i = 0; i < s->n; i++) {
		layout_split(l, s->v[i], c, ncols);
		print_cells(out, l->align, width, c);
	}
	for (i = 0; l->extra != NULL && i < l->extra->ncells; i += ncols)
		print_cells(out, l->align, width,
		    (const char *const *)l->extra->cells + i);
}

/* A JSON number as a double; 0 when absent, as for sorting. */
static double
num(const struct kp_record *rec, const char *key)
{
	const struct kp_field *f = kp_rec_get(rec, key);

	return f != NULL ? kp_field_number(f) : 0;
}

static const char *
cell_watts(char *buf, size_t len, const struct kp_record *rec,
    const char *key)
{
	const struct kp_field *f = kp_rec_get(rec, key);

	if (f == NULL || (f->kind != KP_V_INT && f->kind != KP_V_REAL))
		return "-";
	return fmt_human(buf, len, kp_field_number(f), watts_units);
}

/* Energy in the unit of -u. */
static const char *
energy_text(const struct fmt *ctx, char *buf, size_t len, int64_t uj)
{
	return fmt_human(buf, len, uj / 1e6 / ctx->eunit->joules,
	    ctx->eunit->units);
}

static const char *
cell_energy(const struct fmt *ctx, char *buf, size_t len,
    const struct kp_record *rec, const char *key)
{
	int64_t uj;

	if (!kp_rec_int(rec, key, &uj))
		return "-";
	return energy_text(ctx, buf, len, uj);
}

static const char *
cell_co2(const struct fmt *ctx, char *buf, size_t len,
    const struct kp_record *rec, const char *key)
{
	int64_t uj;

	if (!kp_rec_int(rec, key, &uj))
		return "-";
	return fmt_human(buf, len, co2_grams(ctx, uj), grams_units);
}

static const char *
cell_cpu(char *buf, size_t len, const struct kp_record *rec, const char *key)
{
	int64_t us;

	if (!kp_rec_int(rec, key, &us))
		return "-";
	return fmt_human(buf, len, us / 1e6, seconds_units);
}

static const char *
str_or_dash(const struct kp_record *rec, const char *key)
{
	const char *s = kp_rec_str(rec, key);

	return s != NULL ? s : "-";
}

/* An integer member as text in buf, or "-" where the record has none. */
static const char *
int_or_dash(char *buf, size_t len, const struct kp_record *rec,
    const char *key)
{
	int64_t v;

	if (kp_rec_int(rec, key, &v))
		snprintf(buf, len, "%lld", (long long)v);
	else
		snprintf(buf, len, "-");
	return buf;
}

static void
interval_line(const struct fmt *ctx, struct kp_buf *out,
    const struct kept *k, const struct kp_record *interval)
{
	int64_t dt_us;

	if (interval == NULL) {
		kp_buf_printf(out, "interval %lld  (incomplete)\n",
		    (long long)k->first_seq);
		return;
	}
	if (ctx->summary_first_seq >= 0)
		kp_buf_printf(out, "summary of intervals %lld-%lld",
		    (long long)ctx->summary_first_seq,
		    (long long)interval->seq);
	else
		kp_buf_printf(out, "interval %lld", (long long)interval->seq);
	kp_buf_add(out, "  ", 2);
	put_term(out, str_or_dash(interval, "ts"));
	if (kp_rec_int(interval, "dt_us", &dt_us))
		kp_buf_printf(out, "  (%.3f s)", dt_us / 1e6);
	kp_buf_add(out, "\n", 1);
}

/*
 * The zone of a record, with its socket, or a GPU's device, after a slash
 * when it has one, as kp-attribute keeps it (kp_zone_key).
 */
static const char *
zone_text(char *buf, size_t len, const struct kp_record *rec)
{
	if (!kp_zone_key(rec, 1, buf, len))
		return str_or_dash(rec, "zone");
	return buf;
}

static void
put_zone(struct kp_buf *out, const struct kp_record *rec, size_t width)
{
	char buf[64], *z;

	z = term_text(zone_text(buf, sizeof(buf), rec), SIZE_MAX);
	put_str(out, z);
	pad(out, width - text_width(z));
	free(z);
}

/* Where a zone's energy comes from, and by which model an estimate. */
static void
put_source(struct kp_buf *out, const struct kp_record *rec)
{
	const struct kp_field *estimated = kp_rec_get(rec, "estimated");
	const char *source, *model;

	if ((source = kp_rec_str(rec, "source")) == NULL)
		return;
	kp_buf_add(out, "  source ", 9);
	put_term(out, source);
	if (estimated == NULL || estimated->kind != KP_V_TRUE)
		return;
	put_str(out, ", estimated");
	if ((model = kp_rec_str(rec, "model")) != NULL) {
		put_str(out, " by ");
		put_term(out, model);
	}
}

/* With --carbon-intensity: the emissions of an energy field. */
static void
put_co2(const struct fmt *ctx, struct kp_buf *out,
    const struct kp_record *rec, const char *key)
{
	char c[32];

	if (ctx->has_carbon)
		kp_buf_printf(out, "  co2 %s",
		    cell_co2(ctx, c, sizeof(c), rec, key));
}

/*
 * The idle power that stays at node level, when kp-attribute shared some
 * of it out to the processes (--idle proportional).
 */
static void
put_idle_kept(struct kp_buf *out, const struct kp_record *rec)
{
	char kw[32];
	int64_t idle, kept;
	double watts;

	if (!kp_rec_int(rec, "idle_uj", &idle) ||
	    !kp_rec_int(rec, "idle_kept_uj", &kept) || kept == idle)
		return;
	watts = idle > 0 ? num(rec, "idle_watts") * ((double)kept / idle) : 0;
	kp_buf_printf(out, ", node keeps %s",
	    fmt_human(kw, sizeof(kw), watts, watts_units));
}

static void
node_line(struct kp_buf *out, const struct kp_record *rec, size_t width)
{
	char w[32], aw[32], iw[32];

	put_zone(out, rec, width);
	kp_buf_printf(out, "  %s  (active %s, idle %s",
	    cell_watts(w, sizeof(w), rec, "watts"),
	    cell_watts(aw, sizeof(aw), rec, "active_watts"),
	    cell_watts(iw, sizeof(iw), rec, "idle_watts"));
	put_idle_kept(out, rec);
	kp_buf_printf(out, ")  usage %.1f%%", num(rec, "usage_ratio") * 100);
}

/* A node record per zone, or, in a stream without them, the energy record. */
static void
zone_lines(const struct fmt *ctx, struct kp_buf *out, const struct block *b,
    size_t width)
{
	char w[32];
	const struct kp_record *rec;
	const char *zone;
	size_t i;

	for (i = 0; i < b->n; i++) {
		rec = b->recs[i];
		if ((zone = kp_rec_str(rec, "zone")) == NULL)
			continue;
		if (rec_is(rec, "node"))
			node_line(out, rec, width);
		else if (rec_is(rec, "energy") && !block_has_node(b, zone)) {
			put_zone(out, rec, width);
			kp_buf_printf(out, "  %s",
			    cell_watts(w, sizeof(w), rec, "watts"));
		} else
			continue;
		put_source(out, rec);
		put_co2(ctx, out, rec, "energy_uj");
		kp_buf_add(out, "\n", 1);
	}
}

/* Node CPU usage, for a stream that has a cpu record but no node record. */
static void
cpu_line(struct kp_buf *out, const struct block *b)
{
	char cpu[32], total[32];
	size_t i;

	if (block_has_type(b, "node"))
		return;
	for (i = 0; i < b->n; i++) {
		if (!rec_is(b->recs[i], "cpu"))
			continue;
		kp_buf_printf(out, "cpu  usage %.1f%%  (%s of %s)\n",
		    num(b->recs[i], "usage_ratio") * 100,
		    cell_cpu(cpu, sizeof(cpu), b->recs[i], "cpu_us"),
		    cell_cpu(total, sizeof(total), b->recs[i],
		    "total_cpu_us"));
		return;
	}
}

/*
 * --summary's line under it, per zone: its tree's energy, exact to the
 * uJ, beside the machine's over the same time (kp-fmt(1), "The command's
 * energy"); in a stream of no process records, the machine's alone.
 */
static void
command_energy_line(struct kp_buf *out, const struct kp_record *rec)
{
	char w[32], dt[32], cpu[32];
	int64_t uj = 0, dt_us = 0;

	kp_rec_int(rec, "dt_us", &dt_us);
	kp_buf_printf(out, "  %s  ", str_or_dash(rec, "zone"));
	if (kp_rec_int(rec, "energy_uj", &uj)) {
		put_joules(out, uj);
		kp_buf_printf(out, " J  mean %s  cpu %s  of the machine's ",
		    fmt_human(w, sizeof(w), num(rec, "watts"), watts_units),
		    cell_cpu(cpu, sizeof(cpu), rec, "credited_cpu_us"));
	} else
		kp_buf_printf(out, "its tree's share unknown (no attributed "
		    "records)  the machine's ");
	kp_rec_int(rec, "machine_uj", &uj);
	put_joules(out, uj);
	kp_buf_printf(out, " J over %s%s\n", fmt_human(dt, sizeof(dt),
	    dt_us / 1e6, seconds_units), kp_rec_get(rec, "estimated") != NULL &&
	    kp_rec_get(rec, "estimated")->kind == KP_V_TRUE ? ", estimated" :
	    "");
}

/*
 * The command rapl-read ran, in the interval it exited: its tree's CPU
 * time over the whole run, orphans included (kp-records(5)).
 */
static void
command_lines(struct kp_buf *out, const struct block *b)
{
	char cpu[32], pid[32], status[32];
	const struct kp_record *rec;
	size_t i;

	for (i = 0; i < b->n; i++) {
		if (!rec_is(rec = b->recs[i], "command"))
			continue;
		put_str(out, "command  ");
		put_term(out, str_or_dash(rec, "comm"));
		kp_buf_printf(out, "  pid %s  status %s  tree cpu %s\n",
		    int_or_dash(pid, sizeof(pid), rec, "pid"),
		    int_or_dash(status, sizeof(status), rec, "status"),
		    cell_cpu(cpu, sizeof(cpu), rec, "cpu_us"));
		if (kp_rec_get(rec, "machine_uj") != NULL)
			command_energy_line(out, rec);
	}
}

/* The cells of a process row after its pid, and of an exited row. */
static void
command_cells(const struct fmt *ctx, struct table *t,
    const struct kp_record *rec)
{
	char w[32], e[32], c[32], g[32], z[64];

	table_cell(t, str_or_dash(rec, "comm"), SIZE_MAX);
	table_cell(t, zone_text(z, sizeof(z), rec), SIZE_MAX);
	table_cell(t, cell_watts(w, sizeof(w), rec, "watts"), SIZE_MAX);
	table_cell(t, cell_energy(ctx, e, sizeof(e), rec, "energy_uj"),
	    SIZE_MAX);
	if (ctx->has_carbon)
		table_cell(t, cell_co2(ctx, g, sizeof(g), rec, "energy_uj"),
		    SIZE_MAX);
	table_cell(t, cell_cpu(c, sizeof(c), rec, "cpu_us"), SIZE_MAX);
	/* As docker ps shows it. */
	table_cell(t, str_or_dash(rec, "container_id"), 12);
}

/* The cells of one process row. */
static void
process_row(const struct fmt *ctx, struct table *t,
    const struct kp_record *rec)
{
	char pid[32];

	table_cell(t, int_or_dash(pid, sizeof(pid), rec, "pid"), SIZE_MAX);
	command_cells(ctx, t, rec);
}

static void
processes(const struct fmt *ctx, struct kp_buf *out, const struct kept *k)
{
	static const char *const head[] = {
		"PID", "COMM", "ZONE", "WATTS", "ENERGY", "CPU", "CONTAINER"
	};
	static const char *const head_co2[] = {
		"PID", "COMM", "ZONE", "WATTS", "ENERGY", "CO2", "CPU",
		"CONTAINER"
	};

	struct layout l = {
		"rllrrrl", head, ctx->table_width, NULL, NULL
	};

	if (ctx->has_carbon) {
		l.align = "rllrrrrl";
		l.head = head_co2;
	}
	print_table(out, &l, &k->rows.kind[PROCESSES]);
}

/* The cells of one exited row: how many ended, their parent, and comm. */
static void
exited_row(const struct fmt *ctx, struct table *t,
    const struct kp_record *rec)
{
	char count[32], ppid[32];

	table_cell(t, int_or_dash(count, sizeof(count), rec, "count"),
	    SIZE_MAX);
	table_cell(t, int_or_dash(ppid, sizeof(ppid), rec, "ppid"), SIZE_MAX);
	command_cells(ctx, t, rec);
}

/* Zone's fold in k, a new one where it has none. */
static struct ended_fold *
ended_fold_of(struct kept *k, const char *zone)
{
	struct ended_fold *f;
	size_t i;

	for (i = 0; i < k->nfolds; i++)
		if (strcmp(k->folds[i].zone, zone) == 0)
			return &k->folds[i];
	if (k->nfolds == k->folds_cap) {
		k->folds_cap = k->folds_cap ? k->folds_cap * 2 : 4;
		k->folds = kp_reallocarray(k->folds, k->folds_cap,
		    sizeof(*k->folds));
	}
	f = &k->folds[k->nfolds++];
	memset(f, 0, sizeof(*f));
	f->zone = kp_strdup(zone);
	return f;
}

/* Adds rec to its zone's fold in k. */
static void
ended_fold_add(struct kept *k, const struct kp_record *rec)
{
	struct ended_fold *f = ended_fold_of(k, str_or_dash(rec, "zone"));
	int64_t v;

	f->count += kp_rec_int(rec, "count", &v) ? v : 0;
	f->energy_uj += kp_rec_int(rec, "energy_uj", &v) ? v : 0;
	f->cpu_us += kp_rec_int(rec, "cpu_us", &v) ? v : 0;
	f->watts += num(rec, "watts");
}

/* The cells of a zone's "other ended" row, in t. */
static void
ended_fold_row(const struct fmt *ctx, struct table *t,
    const struct ended_fold *f)
{
	char count[32], w[32], e[32], c[32], g[32];

	snprintf(count, sizeof(count), "%lld", (long long)f->count);
	table_cell(t, count, SIZE_MAX);
	table_cell(t, "-", SIZE_MAX);
	table_cell(t, "(other ended)", SIZE_MAX);
	table_cell(t, f->zone, SIZE_MAX);
	table_cell(t, fmt_human(w, sizeof(w), f->watts, watts_units),
	    SIZE_MAX);
	table_cell(t, energy_text(ctx, e, sizeof(e), f->energy_uj), SIZE_MAX);
	if (ctx->has_carbon)
		table_cell(t, fmt_human(g, sizeof(g),
		    co2_grams(ctx, f->energy_uj), grams_units), SIZE_MAX);
	table_cell(t, fmt_human(c, sizeof(c), f->cpu_us / 1e6,
	    seconds_units), SIZE_MAX);
	table_cell(t, "-", SIZE_MAX);
}

/*
 * Exited records: processes born and ended inside the interval, folded by
 * parent and comm, in a table of their own under a line that says so:
 * they have no pid.  Their zones' folds come last.
 */
static void
exited(const struct fmt *ctx, struct kp_buf *out, struct kept *k)
{
	static const char *const head[] = {
		"EXITED", "PPID", "COMM", "ZONE", "WATTS", "ENERGY", "CPU",
		"CONTAINER"
	};
	static const char *const head_co2[] = {
		"EXITED", "PPID", "COMM", "ZONE", "WATTS", "ENERGY", "CO2",
		"CPU", "CONTAINER"
	};
	struct layout l = {
		"rrllrrrl", head, ctx->table_width, NULL, &k->cells
	};
	size_t i;

	if (k->rows.kind[EXITED].n > 0 || k->nfolds > 0)
		put_str(out, "\nended processes, by parent and command\n");
	if (ctx->has_carbon) {
		l.align = "rrllrrrrl";
		l.head = head_co2;
	}
	for (i = 0; i < k->nfolds; i++)
		ended_fold_row(ctx, &k->cells, &k->folds[i]);
	print_table(out, &l, &k->rows.kind[EXITED]);
	cells_clear(&k->cells);
}

static void
unattributed(const struct fmt *ctx, struct kp_buf *out,
    const struct block *b, size_t width)
{
	char w[32], e[32], c[32];
	const struct kp_record *rec;
	size_t i;

	for (i = 0; i < b->n; i++) {
		rec = b->recs[i];
		if (!rec_is(rec, "unattributed"))
			continue;
		put_str(out, "unattributed  ");
		put_zone(out, rec, width);
		kp_buf_printf(out, "  %s  %s  cpu %s",
		    cell_watts(w, sizeof(w), rec, "watts"),
		    cell_energy(ctx, e, sizeof(e), rec, "energy_uj"),
		    cell_cpu(c, sizeof(c), rec, "cpu_us"));
		put_co2(ctx, out, rec, "energy_uj");
		kp_buf_add(out, "\n", 1);
	}
}

/*
 * The name of a group record: its id_key field, or with id_key NULL the
 * field its "by" names.
 */
static const char *
group_name(char *buf, size_t len, const struct kp_record *rec,
    const char *id_key)
{
	const struct kp_field *v;

	v = id_key != NULL ? kp_rec_get(rec, id_key) : by_field(rec);
	if (v != NULL && v->kind == KP_V_INT) {
		snprintf(buf, len, "%lld", (long long)v->i);
		return buf;
	}
	return v != NULL && v->kind == KP_V_STR ? v->str : "-";
}

/* The cells of one group row. */
static void
group_row(const struct fmt *ctx, struct table *t, const struct kp_record *rec,
    const char *id_key, size_t id_max)
{
	char w[32], e[32], c[32], g[32], procs[32], z[64], id[32];

	table_cell(t, group_name(id, sizeof(id), rec, id_key), id_max);
	table_cell(t, zone_text(z, sizeof(z), rec), SIZE_MAX);
	table_cell(t, cell_watts(w, sizeof(w), rec, "watts"), SIZE_MAX);
	table_cell(t, cell_energy(ctx, e, sizeof(e), rec, "energy_uj"),
	    SIZE_MAX);
	if (ctx->has_carbon)
		table_cell(t, cell_co2(ctx, g, sizeof(g), rec, "energy_uj"),
		    SIZE_MAX);
	table_cell(t, cell_cpu(c, sizeof(c), rec, "cpu_us"), SIZE_MAX);
	table_cell(t, int_or_dash(procs, sizeof(procs), rec, "processes"),
	    SIZE_MAX);
}

/* The title of a table of groups by a field: the field's name in capitals. */
static const char *
by_title(char *buf, size_t len, const struct kp_record *rec)
{
	size_t i;

	snprintf(buf, len, "%s", str_or_dash(rec, "by"));
	for (i = 0; buf[i] != '\0'; i++)
		buf[i] = (char)toupper((unsigned char)buf[i]);
	return buf;
}

/*
 * The table of the group rows s, titled title, or with title NULL by the
 * field's name that its rows carry after their cells; name, where not
 * NULL, names every row.
 */
static void
groups_table(const struct fmt *ctx, struct kp_buf *out,
    const struct rowset *s, const char *title, const char *name)
{
	const char *head[] = {
		title, "ZONE", "WATTS", "ENERGY", "CPU", "PROCS"
	};
	const char *head_co2[] = {
		title, "ZONE", "WATTS", "ENERGY", "CO2", "CPU", "PROCS"
	};
	struct layout l = {
		"llrrrr", head, ctx->table_width, name, NULL
	};
	const char *c[TABLE_COLS + 1];
	size_t ncols = ctx->has_carbon ? 7 : 6;

	if (s->n == 0)
		return;
	kp_buf_add(out, "\n", 1);
	if (title == NULL) {
		row_split(s->v[0], c, ncols + 1);
		head[0] = head_co2[0] = c[ncols];
	}
	if (ctx->has_carbon) {
		l.align = "llrrrrr";
		l.head = head_co2;
	}
	print_table(out, &l, s);
}

/*
 * The table of groups of row kind kind: containers, pods, vms, units,
 * or groups by a field (titled by the field's name).
 */
static void
groups(const struct fmt *ctx, struct kp_buf *out, const struct kept *k,
    size_t kind)
{
	groups_table(ctx, out, &k->rows.kind[kind],
	    row_kinds[kind].id_key != NULL ? row_kinds[kind].title : NULL,
	    NULL);
}

/* Whether k has a group of level: a container, ..., or a "by" field's. */
static int
level_has_groups(const struct kept *k, const char *level)
{
	size_t i;

	for (i = FIRST_GROUPS; i < BY_GROUPS; i++)
		if (strcmp(row_kinds[i].type, level) == 0)
			return k->rows.kind[i].n > 0;
	for (i = 0; i < k->group_bys.ncells; i++)
		if (strcmp(k->group_bys.cells[i], level) == 0)
			return 1;
	return 0;
}

/*
 * The host rows of the levels that have groups, in s, which has room for
 * all: a level without any says only again what the node line says.
 * With none at all, those of the first level read; then it returns 0.
 */
static int
host_rows(const struct kept *k, struct rowset *s)
{
	const struct rowset *all = &k->rows.kind[HOSTS];
	size_t i;

	for (i = 0; i < all->n; i++)
		if (level_has_groups(k, row_cells(all->v[i])))
			s->v[s->n++] = all->v[i];
	if (s->n > 0)
		return 1;
	for (i = 0; i < all->n; i++)
		if (strcmp(row_cells(all->v[i]), k->first_level) == 0)
			s->v[s->n++] = all->v[i];
	return 0;
}

/*
 * The host rows of the levels that have groups, or, with none, one row
 * per zone of what is in no group; -n counts the rows shown.
 */
static void
host_levels(const struct fmt *ctx, struct kp_buf *out, const struct kept *k)
{
	struct rowset s = { NULL, 0, 0 };
	int by_level;

	s.v = kp_reallocarray(NULL, k->rows.kind[HOSTS].n + 1, sizeof(*s.v));
	by_level = host_rows(k, &s);
	if (ctx->top_rows > 0 && s.n > ctx->top_rows)
		s.n = ctx->top_rows;
	if (by_level)
		groups_table(ctx, out, &s, row_kinds[HOSTS].title, NULL);
	else
		groups_table(ctx, out, &s, "HOST",
		    "not in any container, pod or VM");
	free(s.v);
}

/* The row kind of rec, or -1 for a record of no table. */
static int
row_kind_of(const struct kp_record *rec)
{
	int i;

	if (rec_is_unattributed_exited(rec))
		return -1;
	for (i = 0; i < NROW_KINDS; i++)
		if (rec_is(rec, row_kinds[i].type))
			return i;
	return -1;
}

/* The cells of rec's row in t, of row kind kind. */
static void
kind_row(const struct fmt *ctx, struct table *t, int kind,
    const struct kp_record *rec)
{
	char by[32];

	if (kind == PROCESSES)
		process_row(ctx, t, rec);
	else if (kind == EXITED)
		exited_row(ctx, t, rec);
	else
		group_row(ctx, t, rec, row_kinds[kind].id_key,
		    row_kinds[kind].id_max);
	if (kind >= FIRST_GROUPS && row_kinds[kind].id_key == NULL)
		table_cell(t, by_title(by, sizeof(by), rec), SIZE_MAX);
}

/*
 * With -n, each table keeps its rows that can still be shown; the host
 * rows, one a level and zone, all: -n counts those of the levels shown.
 */
static void
kept_init(const struct fmt *ctx, struct kept *k)
{
	size_t kind;

	memset(k, 0, sizeof(*k));
	for (kind = 0; kind < HOSTS; kind++)
		k->rows.keep[kind] = ctx->top_rows;
	k->first_seq = -1;
}

/*
 * Of a row just made in k->cells: a group's "by", once, and the first
 * host row's level, for host_levels.
 */
static void
kept_levels(struct kept *k, int kind, const struct kp_record *rec)
{
	const char *by = kp_rec_str(rec, "by");
	size_t i;

	if (kind == HOSTS && k->first_level == NULL)
		k->first_level = kp_strdup(k->cells.cells[0]);
	if (kind != BY_GROUPS || by == NULL)
		return;
	for (i = 0; i < k->group_bys.ncells; i++)
		if (strcmp(k->group_bys.cells[i], by) == 0)
			return;
	table_cell(&k->group_bys, by, SIZE_MAX);
}

/* A record's row in k, or, ended and shown as 0 W, its zone's fold. */
static void
kept_row(const struct fmt *ctx, struct kept *k, int kind,
    const struct kp_record *rec)
{
	if (kind == EXITED && num(rec, "watts") < EXITED_SHOWN_MIN_W) {
		ended_fold_add(k, rec);
		return;
	}
	kind_row(ctx, &k->cells, kind, rec);
	kept_levels(k, kind, rec);
	rows_add(&k->rows, (size_t)kind, rec, k->cells.cells,
	    k->cells.ncells);
	cells_clear(&k->cells);
}

/* A record read: its line whole, its row, or only its zone's width. */
static void
kept_add(const struct fmt *ctx, struct kept *k, const struct kp_record *rec)
{
	char buf[64];
	size_t w;
	int kind;

	if (k->first_seq < 0)
		k->first_seq = rec->seq;
	if (kp_rec_str(rec, "zone") != NULL &&
	    (w = text_width(zone_text(buf, sizeof(buf), rec))) > k->zone_width)
		k->zone_width = w;
	if (str_in_list(line_types, rec->type))
		block_add(&k->lines, rec);
	else if ((kind = row_kind_of(rec)) >= 0)
		kept_row(ctx, k, kind, rec);
}

static void
kept_add_block(const struct fmt *ctx, struct kept *k, const struct block *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		kept_add(ctx, k, b->recs[i]);
}

static void
kept_clear(struct kept *k)
{
	size_t i;

	block_clear(&k->lines);
	rows_clear(&k->rows);
	k->zone_width = 0;
	k->first_seq = -1;
	for (i = 0; i < k->nfolds; i++)
		free(k->folds[i].zone);
	k->nfolds = 0;
	cells_clear(&k->group_bys);
	free(k->first_level);
	k->first_level = NULL;
}

static void
kept_free(struct kept *k)
{
	kept_clear(k);
	block_free(&k->lines);
	rows_free(&k->rows);
	cells_clear(&k->cells);
	free(k->cells.cells);
	free(k->folds);
	free(k->group_bys.cells);
}

/* One interval as a block of text; it sorts the rows. */
static void
kept_write(struct fmt *ctx, struct kp_buf *out, struct kept *k,
    const struct kp_record *interval)
{
	size_t kind;

	rows_sort(&k->rows);
	interval_line(ctx, out, k, interval);
	zone_lines(ctx, out, &k->lines, k->zone_width);
	cpu_line(out, &k->lines);
	command_lines(out, &k->lines);
	if (k->rows.kind[PROCESSES].n > 0 ||
	    block_has_type(&k->lines, "unattributed"))
		kp_buf_add(out, "\n", 1);
	processes(ctx, out, k);
	unattributed(ctx, out, &k->lines, k->zone_width);
	exited(ctx, out, k);
	for (kind = FIRST_GROUPS; kind < HOSTS; kind++)
		groups(ctx, out, k, kind);
	host_levels(ctx, out, k);
}

/*
 * top's frame: the interval's rows, taken as read or from b, as text in
 * out, then forgotten; an interval cut short (interval NULL) draws none.
 */
void
table_frame(struct fmt *ctx, struct kp_buf *out, void *st,
    const struct block *b, const struct kp_record *interval)
{
	struct table_state *ts = st;

	kept_add_block(ctx, &ts->k, b);
	if (interval != NULL)
		kept_write(ctx, out, &ts->k, interval);
	kept_clear(&ts->k);
}

static void *
table_begin(struct fmt *ctx)
{
	struct table_state *ts = kp_calloc(1, sizeof(*ts));

	kept_init(ctx, &ts->k);
	return ts;
}

/*
 * Blocks apart by an empty line.  b holds the records when they were not
 * given to table_record as read (another sink keeps them, or --summary).
 */
static void
table_block(struct fmt *ctx, void *st, const struct block *b,
    const struct kp_record *interval)
{
	struct table_state *ts = st;

	kept_add_block(ctx, &ts->k, b);
	if (interval == NULL && ts->k.first_seq < 0)
		return;
	if (ts->written)
		kp_buf_add(&ctx->out, "\n", 1);
	ts->written = 1;
	kept_write(ctx, &ctx->out, &ts->k, interval);
	kept_clear(&ts->k);
}

static void
table_end(struct fmt *ctx, void *st, const struct block *rest)
{
	struct table_state *ts = st;

	table_block(ctx, st, rest, NULL);
	kept_free(&ts->k);
	free(ts);
}

static void
table_record(struct fmt *ctx, void *st, const struct kp_record *rec)
{
	struct table_state *ts = st;

	kept_add(ctx, &ts->k, rec);
}

const struct format fmt_table = {
	"table", table_begin, table_block, NULL, table_end, table_record
};
