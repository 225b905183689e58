/*
 * -f table: one block of text per interval, for people: the interval, a
 * line per zone, then tables of the workloads sorted by power.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

#define TABLE_COLS 9

struct table {
	size_t ncols;
	const char *align;	/* 'l' or 'r' per column */
	char **cells;		/* row-major, the header row first */
	size_t ncells, cap;
};

/* The state of -f table: whether a block was written, for the blank line. */
struct table_state {
	int written;
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

static void
table_init(struct table *t, const char *align, const char *const *head)
{
	t->ncols = strlen(align);
	t->align = align;
	t->cap = t->ncols * 8;
	t->cells = kp_reallocarray(NULL, t->cap, sizeof(*t->cells));
	for (t->ncells = 0; t->ncells < t->ncols; t->ncells++)
		t->cells[t->ncells] = kp_strdup(head[t->ncells]);
}

/* Adds a cell, a copy of text made fit for a terminal. */
static void
table_cell(struct table *t, const char *text, size_t max)
{
	if (t->ncells == t->cap) {
		t->cap = t->cap * 2;
		t->cells = kp_reallocarray(t->cells, t->cap,
		    sizeof(*t->cells));
	}
	t->cells[t->ncells++] = term_text(text, max);
}

static void
table_widths(const struct table *t, size_t *width)
{
	size_t i, w;

	for (i = 0; i < t->ncells; i++) {
		w = text_width(t->cells[i]);
		if (w > width[i % t->ncols])
			width[i % t->ncols] = w;
	}
}

/*
 * Narrows the widest text columns, one place at a time, until the table
 * fits max places (0: any), as top needs on a terminal: numbers keep
 * their width, and a text column keeps at least its title's.
 */
static void
table_fit(const struct table *t, size_t *width, size_t max)
{
	size_t col, total, widest;

	for (;;) {
		total = 2 * (t->ncols - 1);
		widest = t->ncols;
		for (col = 0; col < t->ncols; col++) {
			total += width[col];
			if (t->align[col] == 'l' &&
			    width[col] > text_width(t->cells[col]) &&
			    (widest == t->ncols || width[col] > width[widest]))
				widest = col;
		}
		if (max == 0 || total <= max || widest == t->ncols)
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
 * Writes the table, if it has a row beside the header, in max places
 * where it can (0: any), and frees it.
 */
static void
table_print(struct kp_buf *out, struct table *t, size_t max)
{
	size_t width[TABLE_COLS] = { 0 };
	size_t i, col, w;

	table_widths(t, width);
	table_fit(t, width, max);
	for (i = 0; t->ncells > t->ncols && i < t->ncells; i++) {
		col = i % t->ncols;
		w = text_width(t->cells[i]);
		w = w < width[col] ? width[col] - w : 0;
		if (t->align[col] == 'r')
			pad(out, w);
		put_cell(out, t->cells[i], width[col]);
		if (col == t->ncols - 1)
			kp_buf_add(out, "\n", 1);
		else
			pad(out, t->align[col] == 'l' ? w + 2 : 2);
	}
	for (i = 0; i < t->ncells; i++)
		free(t->cells[i]);
	free(t->cells);
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

/* The fields that tell records of equal power apart, in this order. */
static int
by_identity(const struct kp_record *ra, const struct kp_record *rb)
{
	static const char *const keys[] = {
		"pid", "starttime", "container_id", "pod_id", "vm_id", "unit",
		"level", "by", "zone", "socket"
	};
	const struct kp_field *va, *vb;
	size_t i;
	int c;

	for (i = 0; i < NELEM(keys); i++) {
		va = kp_rec_get(ra, keys[i]);
		vb = kp_rec_get(rb, keys[i]);
		if (va == NULL || vb == NULL || va->kind != vb->kind)
			continue;
		if (va->kind == KP_V_INT && va->i != vb->i)
			return va->i < vb->i ? -1 : 1;
		if (va->kind == KP_V_STR && (c = strcmp(va->str, vb->str)) != 0)
			return c;
	}
	return 0;
}

static int
by_watts_desc(const void *a, const void *b)
{
	const struct kp_record *ra = *(const struct kp_record *const *)a;
	const struct kp_record *rb = *(const struct kp_record *const *)b;
	double wa = num(ra, "watts"), wb = num(rb, "watts");
	int c;

	if (wa != wb)
		return wa < wb ? 1 : -1;
	if ((c = by_identity(ra, rb)) != 0)
		return c;
	/* Group records differ in a field of any name: the lines decide. */
	if ((c = memcmp(ra->line, rb->line, ra->len < rb->len ? ra->len :
	    rb->len)) != 0)
		return c;
	return ra->len < rb->len ? -1 : ra->len > rb->len;
}

/*
 * The records of type, sorted by watts, highest first, at most -n of them;
 * free the result.
 */
static const struct kp_record **
select_sorted(const struct fmt *ctx, const struct block *b, const char *type,
    size_t *n)
{
	const struct kp_record **sel;
	size_t i;

	sel = kp_reallocarray(NULL, b->n + 1, sizeof(*sel));
	for (*n = i = 0; i < b->n; i++)
		if (rec_is(b->recs[i], type) &&
		    !rec_is_unattributed_exited(b->recs[i]))
			sel[(*n)++] = b->recs[i];
	qsort(sel, *n, sizeof(*sel), by_watts_desc);
	if (ctx->top_rows > 0 && *n > ctx->top_rows)
		*n = ctx->top_rows;
	return sel;
}

static void
interval_line(const struct fmt *ctx, struct kp_buf *out,
    const struct block *b, const struct kp_record *interval)
{
	int64_t dt_us;

	if (interval == NULL) {
		kp_buf_printf(out, "interval %lld  (incomplete)\n",
		    (long long)b->recs[0]->seq);
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

/* The zone of a record, with its socket after a slash when it has one. */
static const char *
zone_text(char *buf, size_t len, const struct kp_record *rec)
{
	const char *zone = str_or_dash(rec, "zone");
	int64_t socket;

	if (!kp_rec_int(rec, "socket", &socket))
		return zone;
	snprintf(buf, len, "%s/%lld", zone, (long long)socket);
	return buf;
}

static size_t
zone_width(const struct block *b)
{
	char buf[64];
	size_t i, w = 0;

	for (i = 0; i < b->n; i++)
		if (kp_rec_str(b->recs[i], "zone") != NULL &&
		    text_width(zone_text(buf, sizeof(buf), b->recs[i])) > w)
			w = text_width(zone_text(buf, sizeof(buf), b->recs[i]));
	return w;
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
zone_lines(const struct fmt *ctx, struct kp_buf *out, const struct block *b)
{
	char w[32];
	const struct kp_record *rec;
	const char *zone;
	size_t i, width;

	width = zone_width(b);
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
processes(const struct fmt *ctx, struct kp_buf *out, const struct block *b)
{
	static const char *const head[] = {
		"PID", "COMM", "ZONE", "WATTS", "ENERGY", "CPU", "CONTAINER"
	};
	static const char *const head_co2[] = {
		"PID", "COMM", "ZONE", "WATTS", "ENERGY", "CO2", "CPU",
		"CONTAINER"
	};
	const struct kp_record **sel;
	struct table t;
	size_t i, n;

	sel = select_sorted(ctx, b, "process", &n);
	if (ctx->has_carbon)
		table_init(&t, "rllrrrrl", head_co2);
	else
		table_init(&t, "rllrrrl", head);
	for (i = 0; i < n; i++)
		process_row(ctx, &t, sel[i]);
	table_print(out, &t, ctx->table_width);
	free(sel);
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

/*
 * The exited rows whose power the table shows as zero, below 0.005 mW,
 * its last digit: many such rows would bury the few that count, so they
 * are summed per zone into one "other ended" row.
 */
#define EXITED_SHOWN_MIN_W 5e-6
struct ended_fold {
	const char *zone;
	int64_t count, energy_uj, cpu_us;
	double watts;
};

/* Adds rec to its zone's fold in folds, which has room for one more. */
static void
ended_fold_add(struct ended_fold *folds, size_t *nfolds,
    const struct kp_record *rec)
{
	const char *zone = str_or_dash(rec, "zone");
	struct ended_fold *f;
	int64_t v;

	for (f = folds; f < folds + *nfolds && strcmp(f->zone, zone) != 0; f++)
		;
	if (f == folds + *nfolds) {
		memset(f, 0, sizeof(*f));
		f->zone = zone;
		(*nfolds)++;
	}
	f->count += kp_rec_int(rec, "count", &v) ? v : 0;
	f->energy_uj += kp_rec_int(rec, "energy_uj", &v) ? v : 0;
	f->cpu_us += kp_rec_int(rec, "cpu_us", &v) ? v : 0;
	f->watts += num(rec, "watts");
}

/* The cells of a zone's "other ended" row. */
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
 * they have no pid.
 */
static void
exited(const struct fmt *ctx, struct kp_buf *out, const struct block *b)
{
	static const char *const head[] = {
		"EXITED", "PPID", "COMM", "ZONE", "WATTS", "ENERGY", "CPU",
		"CONTAINER"
	};
	static const char *const head_co2[] = {
		"EXITED", "PPID", "COMM", "ZONE", "WATTS", "ENERGY", "CO2",
		"CPU", "CONTAINER"
	};
	const struct kp_record **sel;
	struct ended_fold *folds;
	struct table t;
	size_t i, n, nfolds = 0;

	sel = select_sorted(ctx, b, "exited", &n);
	if (n > 0)
		put_str(out, "\nended processes, by parent and command\n");
	if (ctx->has_carbon)
		table_init(&t, "rrllrrrrl", head_co2);
	else
		table_init(&t, "rrllrrrl", head);
	folds = kp_reallocarray(NULL, n + 1, sizeof(*folds));
	for (i = 0; i < n; i++)
		if (num(sel[i], "watts") >= EXITED_SHOWN_MIN_W)
			exited_row(ctx, &t, sel[i]);
		else
			ended_fold_add(folds, &nfolds, sel[i]);
	for (i = 0; i < nfolds; i++)
		ended_fold_row(ctx, &t, &folds[i]);
	table_print(out, &t, ctx->table_width);
	free(folds);
	free(sel);
}

static void
unattributed(const struct fmt *ctx, struct kp_buf *out,
    const struct block *b)
{
	char w[32], e[32], c[32];
	const struct kp_record *rec;
	size_t i, width;

	width = zone_width(b);
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

/* The cells of one group row; name, where not NULL, in place of its id. */
static void
group_row(const struct fmt *ctx, struct table *t, const struct kp_record *rec,
    const char *id_key, size_t id_max, const char *name)
{
	char w[32], e[32], c[32], g[32], procs[32], z[64], id[32];

	table_cell(t, name != NULL ? name :
	    group_name(id, sizeof(id), rec, id_key), id_max);
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
 * The table of the group records in sel, titled title, or with id_key
 * NULL by the field their "by" names; name, where not NULL, names every
 * row.
 */
static void
groups_table(const struct fmt *ctx, struct kp_buf *out,
    const struct kp_record **sel, size_t n, const char *id_key,
    const char *title, size_t id_max, const char *name)
{
	const char *head[] = {
		title, "ZONE", "WATTS", "ENERGY", "CPU", "PROCS"
	};
	const char *head_co2[] = {
		title, "ZONE", "WATTS", "ENERGY", "CO2", "CPU", "PROCS"
	};
	struct table t;
	char by[32];
	size_t i;

	if (n > 0)
		kp_buf_add(out, "\n", 1);
	if (id_key == NULL && n > 0)
		head[0] = head_co2[0] = by_title(by, sizeof(by), sel[0]);
	if (ctx->has_carbon)
		table_init(&t, "llrrrrr", head_co2);
	else
		table_init(&t, "llrrrr", head);
	for (i = 0; i < n; i++)
		group_row(ctx, &t, sel[i], id_key, id_max, name);
	table_print(out, &t, ctx->table_width);
}

/*
 * Containers, pods, vms, units, groups by a field (id_key NULL, titled
 * by the field's name): type names the records, id_key their id.
 */
static void
groups(const struct fmt *ctx, struct kp_buf *out, const struct block *b,
    const char *type, const char *id_key, const char *title, size_t id_max)
{
	const struct kp_record **sel;
	size_t n;

	sel = select_sorted(ctx, b, type, &n);
	groups_table(ctx, out, sel, n, id_key, title, id_max, NULL);
	free(sel);
}

/* Whether the block has a group of level, a record type or a "by" field. */
static int
level_has_groups(const struct block *b, const char *level)
{
	static const char *const types[] = {
		"container", "pod", "vm", "unit", NULL
	};
	const char *by;
	size_t i;

	if (str_in_list(types, level))
		return block_has_type(b, level);
	for (i = 0; i < b->n; i++)
		if (rec_is(b->recs[i], "group") &&
		    (by = kp_rec_str(b->recs[i], "by")) != NULL &&
		    strcmp(by, level) == 0)
			return 1;
	return 0;
}

/*
 * The host records of the levels that have groups: a level without any
 * says only again what the node line says.  With none at all, those of
 * the first level, as one row per zone of what is in no group.
 */
static void
host_levels(const struct fmt *ctx, struct kp_buf *out, const struct block *b)
{
	const struct kp_record **sel;
	const char *first = NULL;
	size_t i, n, kept = 0;

	sel = select_sorted(ctx, b, "host", &n);
	for (i = 0; i < n; i++)
		if (level_has_groups(b, str_or_dash(sel[i], "level")))
			sel[kept++] = sel[i];
	if (kept > 0 || n == 0) {
		groups_table(ctx, out, sel, kept, "level", "HOST LEVEL",
		    SIZE_MAX, NULL);
		free(sel);
		return;
	}
	for (i = 0; i < b->n && first == NULL; i++)
		if (rec_is(b->recs[i], "host"))
			first = str_or_dash(b->recs[i], "level");
	for (i = 0; i < n; i++)
		if (strcmp(str_or_dash(sel[i], "level"), first) == 0)
			sel[kept++] = sel[i];
	groups_table(ctx, out, sel, kept, "level", "HOST", SIZE_MAX,
	    "not in any container, pod or VM");
	free(sel);
}

/* One interval as a block of text. */
void
table_write(struct fmt *ctx, struct kp_buf *out, const struct block *b,
    const struct kp_record *interval)
{
	interval_line(ctx, out, b, interval);
	zone_lines(ctx, out, b);
	cpu_line(out, b);
	command_lines(out, b);
	if (block_has_type(b, "process") || block_has_type(b, "unattributed"))
		kp_buf_add(out, "\n", 1);
	processes(ctx, out, b);
	unattributed(ctx, out, b);
	exited(ctx, out, b);
	groups(ctx, out, b, "container", "container_id", "CONTAINER", 12);
	groups(ctx, out, b, "pod", "pod_id", "POD", SIZE_MAX);
	groups(ctx, out, b, "vm", "vm_id", "VM", SIZE_MAX);
	groups(ctx, out, b, "unit", "unit", "UNIT", SIZE_MAX);
	groups(ctx, out, b, "group", NULL, "GROUP", SIZE_MAX);
	host_levels(ctx, out, b);
}

static void *
table_begin(struct fmt *ctx)
{
	(void)ctx;
	return kp_calloc(1, sizeof(struct table_state));
}

/* Blocks apart by an empty line. */
static void
table_block(struct fmt *ctx, void *st, const struct block *b,
    const struct kp_record *interval)
{
	struct table_state *ts = st;

	if (interval == NULL && b->n == 0)
		return;
	if (ts->written)
		kp_buf_add(&ctx->out, "\n", 1);
	ts->written = 1;
	table_write(ctx, &ctx->out, b, interval);
}

static void
table_end(struct fmt *ctx, void *st, const struct block *rest)
{
	table_block(ctx, st, rest, NULL);
	free(st);
}

const struct format fmt_table = {
	"table", table_begin, table_block, NULL, table_end, NULL
};
