/*
 * kp-fmt: a kp record stream as a table, CSV, Prometheus text or NDJSON.
 * Each interval is written as soon as its interval record is read.
 */
#include <err.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kp.h"

/* The records of one interval, each holding a reference of ours. */
struct block {
	json_t **recs;
	size_t n, cap;
};

struct format {
	const char *name;
	/*
	 * Writes one interval; interval is NULL for records left at the end.
	 * NULL for json, which passes each line through as it comes.
	 */
	void (*print)(const struct block *b, json_t *interval);
	void (*end)(void);
};

struct unit {
	double scale;		/* of the base unit */
	const char *name;
};

#define TABLE_COLS 8

struct table {
	size_t ncols;
	const char *align;	/* 'l' or 'r' per column */
	char **cells;		/* row-major, the header row first */
	size_t ncells, cap;
};

/* Prometheus metric family: one sample per record of rectype. */
struct family {
	const char *name;
	const char *rectype;
	const char *field;
	int counter;		/* field is a cumulative integer of microjoules */
	const char *help;
	const char *labels[8];	/* NULL-terminated; none: one sample only */
};

static void usage(void);
static const struct format *format_lookup(const char *name);
static void pass_through(struct kp_reader *r);
static void format_blocks(struct kp_reader *r, const struct format *fmt);
static void table_print_block(const struct block *b, json_t *interval);
static void csv_print_block(const struct block *b, json_t *interval);
static void csv_end(void);
static void prom_print_block(const struct block *b, json_t *interval);

static const struct format formats[] = {
	{ "table", table_print_block, NULL },
	{ "csv", csv_print_block, csv_end },
	{ "json", NULL, NULL },
	{ "prometheus", prom_print_block, NULL },
};

static const struct unit watts_units[] = {
	{ 1, "W" }, { 1e-3, "mW" }, { 0, NULL }
};
static const struct unit joules_units[] = {
	{ 1e3, "kJ" }, { 1, "J" }, { 1e-3, "mJ" }, { 0, NULL }
};
static const struct unit seconds_units[] = {
	{ 1, "s" }, { 1e-3, "ms" }, { 0, NULL }
};

static const char *const csv_columns[] = {
	"seq", "ts", "dt_us", "type", "zone", "pid", "starttime", "comm",
	"state", "container_id", "pod_id", "vm_id", "unit", "cpu_us",
	"energy_uj", "active_uj", "idle_uj", "watts", "total_uj",
};
static const char *const csv_types[] = {
	"energy", "node", "process", "unattributed", "container", "pod", "vm",
};
static int csv_header_done;

static const struct family families[] = {
	{ "kepler_node_cpu_joules_total", "node", "total_uj", 1,
	    "Energy used by the CPU zone of the node, in joules", { "zone" } },
	{ "kepler_node_cpu_active_joules_total", "node", "active_total_uj", 1,
	    "Energy used by the CPU zone of the node while active, in joules",
	    { "zone" } },
	{ "kepler_node_cpu_idle_joules_total", "node", "idle_total_uj", 1,
	    "Energy used by the CPU zone of the node while idle, in joules",
	    { "zone" } },
	{ "kepler_node_cpu_watts", "node", "watts", 0,
	    "Power of the CPU zone of the node, in watts", { "zone" } },
	{ "kepler_node_cpu_active_watts", "node", "active_watts", 0,
	    "Power of the CPU zone of the node while active, in watts",
	    { "zone" } },
	{ "kepler_node_cpu_idle_watts", "node", "idle_watts", 0,
	    "Power of the CPU zone of the node while idle, in watts",
	    { "zone" } },
	{ "kepler_node_cpu_usage_ratio", "node", "usage_ratio", 0,
	    "Active CPU time of the node over all CPU time", { NULL } },
	{ "kepler_process_cpu_joules_total", "process", "total_uj", 1,
	    "Energy attributed to the process, in joules",
	    { "pid", "comm", "zone", "state", "container_id", "pod_id",
	    "vm_id" } },
	{ "kepler_process_cpu_watts", "process", "watts", 0,
	    "Power attributed to the process, in watts",
	    { "pid", "comm", "zone", "state", "container_id", "pod_id",
	    "vm_id" } },
	{ "kepler_container_cpu_joules_total", "container", "total_uj", 1,
	    "Energy attributed to the container, in joules",
	    { "container_id", "pod_id", "zone" } },
	{ "kepler_container_cpu_watts", "container", "watts", 0,
	    "Power attributed to the container, in watts",
	    { "container_id", "pod_id", "zone" } },
	{ "kepler_pod_cpu_joules_total", "pod", "total_uj", 1,
	    "Energy attributed to the pod, in joules", { "pod_id", "zone" } },
	{ "kepler_pod_cpu_watts", "pod", "watts", 0,
	    "Power attributed to the pod, in watts", { "pod_id", "zone" } },
	{ "kepler_vm_cpu_joules_total", "vm", "total_uj", 1,
	    "Energy attributed to the virtual machine, in joules",
	    { "vm_id", "zone" } },
	{ "kepler_vm_cpu_watts", "vm", "watts", 0,
	    "Power attributed to the virtual machine, in watts",
	    { "vm_id", "zone" } },
	{ "kp_unattributed_cpu_joules_total", "unattributed", "total_uj", 1,
	    "Active energy no process accounts for, in joules", { "zone" } },
	{ "kp_unattributed_cpu_watts", "unattributed", "watts", 0,
	    "Active power no process accounts for, in watts", { "zone" } },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static void
usage(void)
{
	fprintf(stderr, "usage: kp-fmt [-h] [-f format]\n");
	exit(KP_EXIT_USAGE);
}

static void *
xreallocarray(void *p, size_t n, size_t size)
{
	if ((p = reallocarray(p, n, size)) == NULL)
		err(KP_EXIT_FAILURE, "reallocarray");
	return p;
}

static char *
xstrdup(const char *s)
{
	char *p;

	if ((p = strdup(s)) == NULL)
		err(KP_EXIT_FAILURE, "strdup");
	return p;
}

static const struct format *
format_lookup(const char *name)
{
	size_t i;

	for (i = 0; i < NELEM(formats); i++)
		if (strcmp(formats[i].name, name) == 0)
			return &formats[i];
	errx(KP_EXIT_USAGE, "unknown format '%s' (table, csv, json, "
	    "prometheus)", name);
}

static int
is_type(json_t *rec, const char *type)
{
	const char *t = kp_json_str(rec, "type");

	return t != NULL && strcmp(t, type) == 0;
}

/* A JSON number as a double; 0 when absent, as for sorting. */
static double
num(json_t *rec, const char *key)
{
	return json_number_value(json_object_get(rec, key));
}

/* The shortest "%g" that reads back as the same double. */
static const char *
fmt_double(char *buf, size_t len, double v)
{
	int prec;

	for (prec = 15; prec < 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return buf;
	}
	snprintf(buf, len, "%.17g", v);
	return buf;
}

/* Microjoules as joules, exactly: no rounding through a double. */
static const char *
fmt_joules(char *buf, size_t len, json_int_t uj)
{
	unsigned long long mag;

	mag = uj < 0 ? -(unsigned long long)uj : (unsigned long long)uj;
	snprintf(buf, len, "%s%llu.%06llu", uj < 0 ? "-" : "",
	    mag / 1000000, mag % 1000000);
	return buf;
}

/* About three significant digits, in the largest unit that keeps v >= 1. */
static const char *
fmt_human(char *buf, size_t len, double v, const struct unit *units)
{
	const struct unit *u;
	double x;
	int prec;

	if (v == 0) {
		for (u = units; u->scale != 1; u++)
			;
		snprintf(buf, len, "0 %s", u->name);
		return buf;
	}
	/* 0.9995 rather than 1: what would print as "1000 mW" is "1.00 W". */
	for (u = units; u[1].name != NULL && fabs(v) / u->scale < 0.9995; u++)
		;
	x = v / u->scale;
	prec = fabs(x) >= 99.95 ? 0 : fabs(x) >= 9.995 ? 1 : 2;
	snprintf(buf, len, "%.*f %s", prec, x, u->name);
	return buf;
}

static const char *
rec_watts(char *buf, size_t len, json_t *rec, const char *key)
{
	if (!json_is_number(json_object_get(rec, key)))
		return "-";
	return fmt_human(buf, len, num(rec, key), watts_units);
}

static const char *
rec_energy(char *buf, size_t len, json_t *rec, const char *key)
{
	int64_t uj;

	if (!kp_json_int(rec, key, &uj))
		return "-";
	return fmt_human(buf, len, uj / 1e6, joules_units);
}

static const char *
rec_cpu(char *buf, size_t len, json_t *rec, const char *key)
{
	int64_t us;

	if (!kp_json_int(rec, key, &us))
		return "-";
	return fmt_human(buf, len, us / 1e6, seconds_units);
}

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

	t = xstrdup(s);
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
table_init(struct table *t, const char *align, const char *const *head)
{
	t->ncols = strlen(align);
	t->align = align;
	t->cap = t->ncols * 8;
	t->cells = xreallocarray(NULL, t->cap, sizeof(*t->cells));
	for (t->ncells = 0; t->ncells < t->ncols; t->ncells++)
		t->cells[t->ncells] = xstrdup(head[t->ncells]);
}

/* Adds a cell, a copy of text made fit for a terminal. */
static void
table_cell(struct table *t, const char *text, size_t max)
{
	if (t->ncells == t->cap) {
		t->cap = t->cap * 2;
		t->cells = xreallocarray(t->cells, t->cap, sizeof(*t->cells));
	}
	t->cells[t->ncells++] = term_text(text, max);
}

/* Prints the table, if it has a row beside the header, and frees it. */
static void
table_print(struct table *t)
{
	size_t width[TABLE_COLS] = { 0 };
	size_t i, col, pad, w;

	for (i = 0; i < t->ncells; i++) {
		w = text_width(t->cells[i]);
		if (w > width[i % t->ncols])
			width[i % t->ncols] = w;
	}
	for (i = 0; t->ncells > t->ncols && i < t->ncells; i++) {
		col = i % t->ncols;
		pad = width[col] - text_width(t->cells[i]);
		if (t->align[col] == 'r')
			printf("%*s", (int)pad, "");
		fputs(t->cells[i], stdout);
		if (col == t->ncols - 1)
			putchar('\n');
		else
			printf("%*s", (int)(t->align[col] == 'l' ? pad + 2 : 2),
			    "");
	}
	for (i = 0; i < t->ncells; i++)
		free(t->cells[i]);
	free(t->cells);
}

static int
by_watts_desc(const void *a, const void *b)
{
	json_t *ra = *(json_t *const *)a, *rb = *(json_t *const *)b;
	double wa = num(ra, "watts"), wb = num(rb, "watts");
	static const char *const keys[] = {
		"pid", "starttime", "container_id", "pod_id", "vm_id", "zone"
	};
	json_t *va, *vb;
	size_t i;
	int c;

	if (wa != wb)
		return wa < wb ? 1 : -1;
	for (i = 0; i < NELEM(keys); i++) {
		va = json_object_get(ra, keys[i]);
		vb = json_object_get(rb, keys[i]);
		if (json_is_integer(va) && json_is_integer(vb) &&
		    json_integer_value(va) != json_integer_value(vb))
			return json_integer_value(va) <
			    json_integer_value(vb) ? -1 : 1;
		if (json_is_string(va) && json_is_string(vb) &&
		    (c = strcmp(json_string_value(va),
		    json_string_value(vb))) != 0)
			return c;
	}
	return 0;
}

/* The records of type, sorted by watts, highest first; free the result. */
static json_t **
select_sorted(const struct block *b, const char *type, size_t *n)
{
	json_t **sel;
	size_t i;

	sel = xreallocarray(NULL, b->n + 1, sizeof(*sel));
	for (*n = i = 0; i < b->n; i++)
		if (is_type(b->recs[i], type))
			sel[(*n)++] = b->recs[i];
	qsort(sel, *n, sizeof(*sel), by_watts_desc);
	return sel;
}

static const char *
str_or_dash(json_t *rec, const char *key)
{
	const char *s = kp_json_str(rec, key);

	return s != NULL ? s : "-";
}

static void
table_interval_line(const struct block *b, json_t *interval)
{
	int64_t seq, dt_us;
	char *ts;

	if (interval == NULL) {
		if (!kp_json_int(b->recs[0], "seq", &seq))
			seq = 0;
		printf("interval %lld  (incomplete)\n", (long long)seq);
		return;
	}
	if (!kp_json_int(interval, "seq", &seq))
		seq = 0;
	ts = term_text(str_or_dash(interval, "ts"), SIZE_MAX);
	if (kp_json_int(interval, "dt_us", &dt_us))
		printf("interval %lld  %s  (%.3f s)\n", (long long)seq, ts,
		    dt_us / 1e6);
	else
		printf("interval %lld  %s\n", (long long)seq, ts);
	free(ts);
}

static int
zone_width(const struct block *b)
{
	const char *zone;
	size_t i, w = 0;

	for (i = 0; i < b->n; i++)
		if ((zone = kp_json_str(b->recs[i], "zone")) != NULL &&
		    text_width(zone) > w)
			w = text_width(zone);
	return (int)w;
}

static void
print_zone(const char *zone, int width)
{
	char *z;

	z = term_text(zone, SIZE_MAX);
	printf("%s%*s", z, width - (int)text_width(z), "");
	free(z);
}

static void
print_source(json_t *rec)
{
	const char *source;
	char *s;

	if ((source = kp_json_str(rec, "source")) == NULL)
		return;
	s = term_text(source, SIZE_MAX);
	printf("  source %s%s", s, json_is_true(json_object_get(rec,
	    "estimated")) ? ", estimated" : "");
	free(s);
}

static int
has_type(const struct block *b, const char *type)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		if (is_type(b->recs[i], type))
			return 1;
	return 0;
}

static int
has_node(const struct block *b, const char *zone)
{
	size_t i;
	const char *z;

	for (i = 0; i < b->n; i++)
		if (is_type(b->recs[i], "node") &&
		    (z = kp_json_str(b->recs[i], "zone")) != NULL &&
		    strcmp(z, zone) == 0)
			return 1;
	return 0;
}

/* A node record per zone, or, in a stream without them, the energy record. */
static void
table_zone_lines(const struct block *b)
{
	char w[32], aw[32], iw[32];
	const char *zone;
	json_t *rec;
	int width;
	size_t i;

	width = zone_width(b);
	for (i = 0; i < b->n; i++) {
		rec = b->recs[i];
		if ((zone = kp_json_str(rec, "zone")) == NULL)
			continue;
		if (is_type(rec, "node")) {
			print_zone(zone, width);
			printf("  %s  (active %s, idle %s)  usage %.1f%%",
			    rec_watts(w, sizeof(w), rec, "watts"),
			    rec_watts(aw, sizeof(aw), rec, "active_watts"),
			    rec_watts(iw, sizeof(iw), rec, "idle_watts"),
			    num(rec, "usage_ratio") * 100);
		} else if (is_type(rec, "energy") && !has_node(b, zone)) {
			print_zone(zone, width);
			printf("  %s", rec_watts(w, sizeof(w), rec, "watts"));
		} else
			continue;
		print_source(rec);
		putchar('\n');
	}
}

/* Node CPU usage, for a stream that has a cpu record but no node record. */
static void
table_cpu_line(const struct block *b)
{
	char cpu[32], total[32];
	size_t i;

	if (has_type(b, "node"))
		return;
	for (i = 0; i < b->n; i++) {
		if (!is_type(b->recs[i], "cpu"))
			continue;
		printf("cpu  usage %.1f%%  (%s of %s)\n",
		    num(b->recs[i], "usage_ratio") * 100,
		    rec_cpu(cpu, sizeof(cpu), b->recs[i], "cpu_us"),
		    rec_cpu(total, sizeof(total), b->recs[i], "total_cpu_us"));
		return;
	}
}

static void
table_processes(const struct block *b)
{
	static const char *const head[] = {
		"PID", "COMM", "ZONE", "WATTS", "ENERGY", "CPU", "CONTAINER"
	};
	char pid[32], w[32], e[32], c[32];
	struct table t;
	json_t **sel, *rec;
	size_t i, n;
	int64_t v;

	sel = select_sorted(b, "process", &n);
	table_init(&t, "rllrrrl", head);
	for (i = 0; i < n; i++) {
		rec = sel[i];
		if (kp_json_int(rec, "pid", &v))
			snprintf(pid, sizeof(pid), "%lld", (long long)v);
		else
			snprintf(pid, sizeof(pid), "-");
		table_cell(&t, pid, SIZE_MAX);
		table_cell(&t, str_or_dash(rec, "comm"), SIZE_MAX);
		table_cell(&t, str_or_dash(rec, "zone"), SIZE_MAX);
		table_cell(&t, rec_watts(w, sizeof(w), rec, "watts"), SIZE_MAX);
		table_cell(&t, rec_energy(e, sizeof(e), rec, "energy_uj"),
		    SIZE_MAX);
		table_cell(&t, rec_cpu(c, sizeof(c), rec, "cpu_us"), SIZE_MAX);
		/* As docker ps shows it. */
		table_cell(&t, str_or_dash(rec, "container_id"), 12);
	}
	table_print(&t);
	free(sel);
}

static void
table_unattributed(const struct block *b)
{
	char w[32], e[32], c[32];
	json_t *rec;
	int width;
	size_t i;

	width = zone_width(b);
	for (i = 0; i < b->n; i++) {
		rec = b->recs[i];
		if (!is_type(rec, "unattributed"))
			continue;
		printf("unattributed  ");
		print_zone(str_or_dash(rec, "zone"), width);
		printf("  %s  %s  cpu %s\n",
		    rec_watts(w, sizeof(w), rec, "watts"),
		    rec_energy(e, sizeof(e), rec, "energy_uj"),
		    rec_cpu(c, sizeof(c), rec, "cpu_us"));
	}
}

/* Containers, pods or vms: type names the records, id_key their id. */
static void
table_groups(const struct block *b, const char *type, const char *id_key,
    const char *title, size_t id_max)
{
	const char *head[] = {
		title, "ZONE", "WATTS", "ENERGY", "CPU", "PROCS"
	};
	char w[32], e[32], c[32], procs[32];
	struct table t;
	json_t **sel, *rec;
	size_t i, n;
	int64_t v;

	sel = select_sorted(b, type, &n);
	if (n > 0)
		putchar('\n');
	table_init(&t, "llrrrr", head);
	for (i = 0; i < n; i++) {
		rec = sel[i];
		if (kp_json_int(rec, "processes", &v))
			snprintf(procs, sizeof(procs), "%lld", (long long)v);
		else
			snprintf(procs, sizeof(procs), "-");
		table_cell(&t, str_or_dash(rec, id_key), id_max);
		table_cell(&t, str_or_dash(rec, "zone"), SIZE_MAX);
		table_cell(&t, rec_watts(w, sizeof(w), rec, "watts"), SIZE_MAX);
		table_cell(&t, rec_energy(e, sizeof(e), rec, "energy_uj"),
		    SIZE_MAX);
		table_cell(&t, rec_cpu(c, sizeof(c), rec, "cpu_us"), SIZE_MAX);
		table_cell(&t, procs, SIZE_MAX);
	}
	table_print(&t);
	free(sel);
}

static void
table_print_block(const struct block *b, json_t *interval)
{
	static int first = 1;

	if (interval == NULL && b->n == 0)
		return;
	if (!first)
		putchar('\n');
	first = 0;
	table_interval_line(b, interval);
	table_zone_lines(b);
	table_cpu_line(b);
	if (has_type(b, "process") || has_type(b, "unattributed"))
		putchar('\n');
	table_processes(b);
	table_unattributed(b);
	table_groups(b, "container", "container_id", "CONTAINER", 12);
	table_groups(b, "pod", "pod_id", "POD", SIZE_MAX);
	table_groups(b, "vm", "vm_id", "VM", SIZE_MAX);
}

/* RFC 4180: quoted when it holds a comma, quote, CR or LF. */
static void
csv_text(const char *s)
{
	if (strpbrk(s, ",\"\r\n") == NULL) {
		fputs(s, stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

/* One cell; absent fields, nulls, objects and arrays are empty. */
static void
csv_value(json_t *v)
{
	char buf[32];

	if (json_is_string(v))
		csv_text(json_string_value(v));
	else if (json_is_integer(v))
		printf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		fputs(fmt_double(buf, sizeof(buf), json_real_value(v)), stdout);
	else if (json_is_boolean(v))
		fputs(json_is_true(v) ? "true" : "false", stdout);
}

static void
csv_header(void)
{
	size_t i;

	if (csv_header_done)
		return;
	csv_header_done = 1;
	for (i = 0; i < NELEM(csv_columns); i++)
		printf("%s%s", i ? "," : "", csv_columns[i]);
	putchar('\n');
}

static int
csv_wanted(json_t *rec)
{
	size_t i;

	for (i = 0; i < NELEM(csv_types); i++)
		if (is_type(rec, csv_types[i]))
			return 1;
	return 0;
}

static void
csv_print_block(const struct block *b, json_t *interval)
{
	const char *col;
	json_t *from;
	size_t i, j;

	csv_header();
	for (i = 0; i < b->n; i++) {
		if (!csv_wanted(b->recs[i]))
			continue;
		for (j = 0; j < NELEM(csv_columns); j++) {
			col = csv_columns[j];
			from = strcmp(col, "ts") == 0 ||
			    strcmp(col, "dt_us") == 0 ? interval : b->recs[i];
			if (j > 0)
				putchar(',');
			csv_value(json_object_get(from, col));
		}
		putchar('\n');
	}
}

static void
csv_end(void)
{
	csv_header();
}

/* Text format 0.0.4: backslash, double quote and newline are escaped. */
static void
prom_label_text(const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", stdout);
		else if (*s == '"')
			fputs("\\\"", stdout);
		else if (*s == '\n')
			fputs("\\n", stdout);
		else
			putchar(*s);
	}
}

/* Kepler writes a label whose value is unknown as the empty string. */
static void
prom_labels(const struct family *f, json_t *rec)
{
	char buf[32];
	json_t *v;
	size_t i;

	if (f->labels[0] == NULL)
		return;
	putchar('{');
	for (i = 0; f->labels[i] != NULL; i++) {
		printf("%s%s=\"", i ? "," : "", f->labels[i]);
		v = json_object_get(rec, f->labels[i]);
		if (json_is_string(v))
			prom_label_text(json_string_value(v));
		else if (json_is_integer(v))
			printf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
		else if (json_is_real(v))
			fputs(fmt_double(buf, sizeof(buf), json_real_value(v)),
			    stdout);
		putchar('"');
	}
	putchar('}');
}

/* The sample value of rec in family f, or NULL when it has none. */
static const char *
prom_value(char *buf, size_t len, const struct family *f, json_t *rec)
{
	json_t *v = json_object_get(rec, f->field);

	if (f->counter)
		return json_is_integer(v) ?
		    fmt_joules(buf, len, json_integer_value(v)) : NULL;
	return json_is_number(v) ?
	    fmt_double(buf, len, json_number_value(v)) : NULL;
}

static void
prom_family(const struct family *f, const struct block *b)
{
	const char *value;
	char buf[64];
	size_t i, samples = 0;

	for (i = 0; i < b->n; i++) {
		if (!is_type(b->recs[i], f->rectype) ||
		    (value = prom_value(buf, sizeof(buf), f, b->recs[i])) == NULL)
			continue;
		if (samples++ == 0) {
			printf("# HELP %s %s\n", f->name, f->help);
			printf("# TYPE %s %s\n", f->name,
			    f->counter ? "counter" : "gauge");
		}
		printf("%s", f->name);
		prom_labels(f, b->recs[i]);
		printf(" %s\n", value);
		/* Without labels a second sample would repeat the series. */
		if (f->labels[0] == NULL)
			break;
	}
}

static void
prom_print_block(const struct block *b, json_t *interval)
{
	size_t i;

	if (interval == NULL && b->n == 0)
		return;
	for (i = 0; i < NELEM(families); i++)
		prom_family(&families[i], b);
	putchar('\n');
}

static void
block_add(struct block *b, json_t *rec)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 64;
		b->recs = xreallocarray(b->recs, b->cap, sizeof(*b->recs));
	}
	b->recs[b->n++] = json_incref(rec);
}

static void
block_clear(struct block *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		json_decref(b->recs[i]);
	b->n = 0;
}

static void
pass_through(struct kp_reader *r)
{
	struct kp_record rec;

	while (kp_reader_next(r, &rec)) {
		kp_out_raw(rec.line, rec.len);
		if (strcmp(rec.type, "interval") == 0)
			kp_out_flush();
	}
}

/* Records of interval k wait for k's interval record, then print at once. */
static void
format_blocks(struct kp_reader *r, const struct format *fmt)
{
	struct block b = { NULL, 0, 0 };
	struct kp_record rec;

	while (kp_reader_next(r, &rec)) {
		if (strcmp(rec.type, "interval") == 0) {
			fmt->print(&b, rec.obj);
			kp_out_flush();
			block_clear(&b);
		} else if (strcmp(rec.type, "header") != 0)
			block_add(&b, rec.obj);
	}
	fmt->print(&b, NULL);
	if (fmt->end != NULL)
		fmt->end();
	block_clear(&b);
	free(b.recs);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const struct format *fmt;
	struct kp_reader *r;
	int ch, status;

	kp_out_init();
	fmt = format_lookup(isatty(STDOUT_FILENO) ? "table" : "json");
	while ((ch = getopt_long(argc, argv, "f:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			fmt = format_lookup(optarg);
			break;
		case 'h':
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 0)
		usage();

	r = kp_reader_open(stdin, "<stdin>");
	if (fmt->print == NULL)
		pass_through(r);
	else
		format_blocks(r, fmt);
	status = kp_reader_errors(r) ? KP_EXIT_DATAERR : KP_EXIT_OK;
	kp_reader_close(r);
	return kp_out_finish(status);
}
