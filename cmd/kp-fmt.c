/*
 * kp-fmt: a kp record stream as a table, a live view, CSV, NDJSON or
 * Prometheus text.  Each interval is written as soon as its interval record
 * is read.
 */
#include <ctype.h>
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kp.h"

struct rec;

/* The records of one interval, in the arena they were read into. */
struct block {
	const struct rec **recs;
	size_t n, cap;
};

struct format {
	const char *name;
	/*
	 * Writes one interval; interval is NULL for records left at the end.
	 * NULL for json, which passes each line through as it comes.
	 */
	void (*print)(const struct block *b, const struct rec *interval);
	void (*end)(void);
};

struct unit {
	double scale;		/* of the base unit */
	const char *name;
};

/* -u: the unit energy is shown in by the human formats. */
struct energy_unit {
	const char *name;
	double joules;		/* in one base unit of units */
	const struct unit *units;
};

#define TABLE_COLS 8

struct table {
	size_t ncols;
	const char *align;	/* 'l' or 'r' per column */
	char **cells;		/* row-major, the header row first */
	size_t ncells, cap;
};

enum { GAUGE, COUNTER_J, COUNTER_CO2 };

/* Prometheus metric family: one sample per record of rectype. */
struct family {
	const char *name;
	const char *rectype;
	const char *rectype2;	/* a second record type, or NULL */
	const char *zone;	/* only records of this zone; NULL: all */
	const char *field;
	/*
	 * For a counter: the interval's part of field, summed by kp-fmt
	 * itself when the record has no cumulative field.
	 */
	const char *delta;
	int kind;
	const char *help;
	/*
	 * NULL-terminated; none: one sample.  A name that starts with '?' is
	 * left out of a record that lacks the field; "group" is the value of
	 * the field that a group record's "by" names.
	 */
	const char *const *labels;
};

/* One counter series: what it showed, so that it never goes backwards. */
struct series {
	int64_t last_in;	/* the cumulative field as last read */
	int64_t offset;		/* added after the input's total was reset */
	int64_t sum_uj;		/* kp-fmt's own total, from the deltas */
	int64_t shown_uj;	/* the counter's last sample */
	int seen;
	int saturated;		/* reported as held at INT64_MAX */
	int forgettable;	/* of a workload that ends, not of a zone */
	unsigned long seen_gen;	/* the block it last had a sample in */
};

/*
 * A workload's series without a sample for this many intervals is
 * forgotten, so that memory does not grow with every process that ever
 * ran; Kepler drops the series of ended processes too.
 */
#define PROM_FORGET_INTERVALS 5

/* A growing string. */
struct sbuf {
	char *s;
	size_t len, cap;
};

static void usage(void);
static const struct format *format_lookup(const char *name);
static void table_print_block(const struct block *b, const struct rec *interval);
static void top_print_block(const struct block *b, const struct rec *interval);
static void top_end(void);
static void csv_print_block(const struct block *b, const struct rec *interval);
static void csv_end(void);
static void json_print_block(const struct block *b, const struct rec *interval);
static void json_line(const struct rec *rec);
static void prom_print_block(const struct block *b, const struct rec *interval);

static const struct format formats[] = {
	{ "table", table_print_block, NULL },
	{ "top", top_print_block, top_end },
	{ "csv", csv_print_block, csv_end },
	{ "json", NULL, NULL },
	{ "prometheus", prom_print_block, NULL },
};
#define FORMAT_NAMES "table, top, csv, json, prometheus"

/* With --textfile and no -f: nothing on standard output. */
static void no_print(const struct block *b, const struct rec *interval);
static const struct format no_format = { "none", no_print, NULL };

static const struct unit watts_units[] = {
	{ 1, "W" }, { 1e-3, "mW" }, { 0, NULL }
};
static const struct unit joules_units[] = {
	{ 1e3, "kJ" }, { 1, "J" }, { 1e-3, "mJ" }, { 0, NULL }
};
static const struct unit wh_units[] = {
	{ 1e3, "kWh" }, { 1, "Wh" }, { 1e-3, "mWh" }, { 0, NULL }
};
static const struct unit kwh_units[] = {
	{ 1, "kWh" }, { 0, NULL }
};
static const struct unit seconds_units[] = {
	{ 1, "s" }, { 1e-3, "ms" }, { 0, NULL }
};
static const struct unit grams_units[] = {
	{ 1e3, "kg" }, { 1, "g" }, { 1e-3, "mg" }, { 1e-6, "\xc2\xb5g" },
	{ 0, NULL }
};

static const struct energy_unit energy_units[] = {
	{ "J", 1, joules_units },
	{ "Wh", 3600, wh_units },
	{ "kWh", 3.6e6, kwh_units },
};

/*
 * Every CSV column: the first DEFAULT_COLUMNS are the default, in this
 * order, which never changes; co2_g is added to them by --carbon-intensity.
 */
static const char *const csv_all_columns[] = {
	"seq", "ts", "dt_us", "type", "zone", "pid", "starttime", "comm",
	"state", "container_id", "pod_id", "vm_id", "unit", "cpu_us",
	"energy_uj", "active_uj", "idle_uj", "watts", "total_uj", "socket",
	"level", "by", "group",
	"co2_g", "cgroup", "processes", "total_cpu_us", "usage_ratio",
	"active_watts", "idle_watts", "active_total_uj", "idle_total_uj",
	"idle_kept_uj", "source", "estimated", "sockets", "scaled_down",
	"excess_cpu_us",
};
#define DEFAULT_COLUMNS 23
#define MAX_COLUMNS 64

static const char *const csv_default_types[] = {
	"energy", "node", "process", "unattributed", "container", "pod", "vm",
	"unit", "group", "host", NULL
};

/* Label sets, shared by the families that have them. */
static const char *const no_labels[] = { NULL };
static const char *const zone_labels[] = { "zone", "?socket", NULL };
static const char *const source_labels[] = { "source", "?socket", NULL };
static const char *const process_labels[] = {
	"pid", "comm", "zone", "state", "container_id", "pod_id", "vm_id",
	"?socket", NULL
};
static const char *const container_labels[] = {
	"container_id", "pod_id", "zone", "?state", NULL
};
static const char *const pod_labels[] = { "pod_id", "zone", "?state", NULL };
static const char *const vm_labels[] = { "vm_id", "zone", "?state", NULL };
static const char *const unit_labels[] = { "unit", "zone", "?state", NULL };
static const char *const group_labels[] = {
	"by", "group", "zone", "?state", NULL
};
static const char *const host_labels[] = { "level", "zone", NULL };

static const struct family families[] = {
	{ "kepler_node_cpu_joules_total", "node", "energy", NULL, "total_uj",
	    "energy_uj", COUNTER_J,
	    "Energy used by the CPU zone of the node, in joules", zone_labels },
	{ "kepler_node_cpu_active_joules_total", "node", NULL, NULL,
	    "active_total_uj", "active_uj", COUNTER_J,
	    "Energy used by the CPU zone of the node while active, in joules",
	    zone_labels },
	{ "kepler_node_cpu_idle_joules_total", "node", NULL, NULL, "idle_total_uj",
	    "idle_uj", COUNTER_J,
	    "Energy used by the CPU zone of the node while idle, in joules",
	    zone_labels },
	{ "kepler_node_cpu_watts", "node", "energy", NULL, "watts", NULL, GAUGE,
	    "Power of the CPU zone of the node, in watts", zone_labels },
	{ "kepler_node_cpu_active_watts", "node", NULL, NULL, "active_watts", NULL,
	    GAUGE, "Power of the CPU zone of the node while active, in watts",
	    zone_labels },
	{ "kepler_node_cpu_idle_watts", "node", NULL, NULL, "idle_watts", NULL,
	    GAUGE, "Power of the CPU zone of the node while idle, in watts",
	    zone_labels },
	{ "kp_node_cpu_idle_kept_joules_total", "node", NULL, NULL, NULL,
	    "idle_kept_uj", COUNTER_J, "Idle energy of the CPU zone of the "
	    "node that is not shared out to the processes, in joules",
	    zone_labels },
	{ "kepler_node_cpu_usage_ratio", "node", NULL, NULL, "usage_ratio", NULL,
	    GAUGE, "Active CPU time of the node over all CPU time", no_labels },
	{ "kp_node_platform_joules_total", "node", "energy", "psys", "total_uj",
	    "energy_uj", COUNTER_J,
	    "Energy used by the whole platform (the psys zone), in joules",
	    source_labels },
	{ "kp_node_platform_watts", "node", "energy", "psys", "watts", NULL, GAUGE,
	    "Power of the whole platform (the psys zone), in watts",
	    source_labels },
	{ "kepler_process_cpu_joules_total", "process", NULL, NULL, "total_uj",
	    "energy_uj", COUNTER_J,
	    "Energy attributed to the process, in joules", process_labels },
	{ "kepler_process_cpu_watts", "process", NULL, NULL, "watts", NULL, GAUGE,
	    "Power attributed to the process, in watts", process_labels },
	{ "kepler_container_cpu_joules_total", "container", NULL, NULL, "total_uj",
	    "energy_uj", COUNTER_J,
	    "Energy attributed to the container, in joules",
	    container_labels },
	{ "kepler_container_cpu_watts", "container", NULL, NULL, "watts", NULL,
	    GAUGE, "Power attributed to the container, in watts",
	    container_labels },
	{ "kepler_pod_cpu_joules_total", "pod", NULL, NULL, "total_uj", "energy_uj",
	    COUNTER_J, "Energy attributed to the pod, in joules",
	    pod_labels },
	{ "kepler_pod_cpu_watts", "pod", NULL, NULL, "watts", NULL, GAUGE,
	    "Power attributed to the pod, in watts", pod_labels },
	{ "kepler_vm_cpu_joules_total", "vm", NULL, NULL, "total_uj", "energy_uj",
	    COUNTER_J, "Energy attributed to the virtual machine, in joules",
	    vm_labels },
	{ "kepler_vm_cpu_watts", "vm", NULL, NULL, "watts", NULL, GAUGE,
	    "Power attributed to the virtual machine, in watts",
	    vm_labels },
	{ "kp_unit_cpu_joules_total", "unit", NULL, NULL, "total_uj",
	    "energy_uj", COUNTER_J,
	    "Energy attributed to the systemd unit, in joules", unit_labels },
	{ "kp_unit_cpu_watts", "unit", NULL, NULL, "watts", NULL, GAUGE,
	    "Power attributed to the systemd unit, in watts", unit_labels },
	{ "kp_group_cpu_joules_total", "group", NULL, NULL, "total_uj",
	    "energy_uj", COUNTER_J, "Energy attributed to the processes "
	    "grouped by one field, in joules", group_labels },
	{ "kp_group_cpu_watts", "group", NULL, NULL, "watts", NULL, GAUGE,
	    "Power attributed to the processes grouped by one field, in watts",
	    group_labels },
	{ "kp_host_cpu_joules_total", "host", NULL, NULL, "total_uj",
	    "energy_uj", COUNTER_J, "Energy attributed to the processes in "
	    "no group of the level, in joules", host_labels },
	{ "kp_host_cpu_watts", "host", NULL, NULL, "watts", NULL, GAUGE,
	    "Power attributed to the processes in no group of the level, "
	    "in watts", host_labels },
	{ "kp_unattributed_cpu_joules_total", "unattributed", NULL, NULL, "total_uj",
	    "energy_uj", COUNTER_J,
	    "Active energy no process accounts for, in joules", zone_labels },
	{ "kp_unattributed_cpu_watts", "unattributed", NULL, NULL, "watts", NULL,
	    GAUGE, "Active power no process accounts for, in watts",
	    zone_labels },
	/* Only with --carbon-intensity. */
	{ "kp_node_cpu_co2_grams_total", "node", "energy", NULL, "total_uj",
	    "energy_uj",
	    COUNTER_CO2, "Emissions of the CPU zone of the node, in grams "
	    "of CO2 equivalent", zone_labels },
	{ "kp_process_cpu_co2_grams_total", "process", NULL, NULL, "total_uj",
	    "energy_uj", COUNTER_CO2, "Emissions attributed to the process, "
	    "in grams of CO2 equivalent", process_labels },
	{ "kp_container_cpu_co2_grams_total", "container", NULL, NULL, "total_uj",
	    "energy_uj", COUNTER_CO2, "Emissions attributed to the container, "
	    "in grams of CO2 equivalent", container_labels },
	{ "kp_pod_cpu_co2_grams_total", "pod", NULL, NULL, "total_uj", "energy_uj",
	    COUNTER_CO2, "Emissions attributed to the pod, in grams of CO2 "
	    "equivalent", pod_labels },
	{ "kp_vm_cpu_co2_grams_total", "vm", NULL, NULL, "total_uj", "energy_uj",
	    COUNTER_CO2, "Emissions attributed to the virtual machine, in "
	    "grams of CO2 equivalent", vm_labels },
	{ "kp_unit_cpu_co2_grams_total", "unit", NULL, NULL, "total_uj",
	    "energy_uj", COUNTER_CO2, "Emissions attributed to the systemd "
	    "unit, in grams of CO2 equivalent", unit_labels },
	{ "kp_group_cpu_co2_grams_total", "group", NULL, NULL, "total_uj",
	    "energy_uj", COUNTER_CO2, "Emissions attributed to the processes "
	    "grouped by one field, in grams of CO2 equivalent", group_labels },
	{ "kp_host_cpu_co2_grams_total", "host", NULL, NULL, "total_uj",
	    "energy_uj", COUNTER_CO2, "Emissions attributed to the processes "
	    "in no group of the level, in grams of CO2 equivalent",
	    host_labels },
	{ "kp_unattributed_cpu_co2_grams_total", "unattributed", NULL,
	    NULL, "total_uj", "energy_uj", COUNTER_CO2, "Emissions of the active "
	    "energy no process accounts for, in grams of CO2 equivalent",
	    zone_labels },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static void *xreallocarray(void *p, size_t n, size_t size);
static const char *fmt_int(char *buf, size_t len, int64_t v);
static const char *fmt_joules(char *buf, size_t len, int64_t uj);

/* The command line. */
static size_t top_rows;			/* -n; 0: all */
static int no_header;			/* -H */
static const char *csv_columns[MAX_COLUMNS + 1];	/* NULL-terminated */
static char **types;			/* -t, NULL-terminated; NULL: all */
static const struct energy_unit *eunit = &energy_units[0];
static int has_carbon;			/* --carbon-intensity given */
static double carbon_g_per_kwh;
static int summary;			/* --summary */
static const char *textfile;		/* --textfile */

static FILE *out;			/* where the formats write */
static int csv_header_done;
static struct kp_map *prom_series;	/* "name{labels}" -> struct series */
static unsigned long block_gen;		/* intervals read */
static int64_t summary_first_seq = -1;	/* printing the summary when >= 0 */
static const char *input_name = "<stdin>";
static int data_errors;			/* besides the reader's: exit 3 */

/*
 * Records.  kp-fmt reads its stream with a parser of its own for the flat
 * JSON objects of kp-records(5), several times faster than building jansson
 * objects: a record's fields and strings live in the arena of the interval
 * they belong to, freed all at once when the interval has been written.
 * A line the parser does not take goes to jansson, which says what is wrong
 * with it, or, if it is valid after all, writes it in a form the parser takes.
 */
enum { V_NULL, V_FALSE, V_TRUE, V_INT, V_REAL, V_STR, V_OTHER };

struct field {
	const char *key;
	size_t klen;
	int kind;
	const char *str;	/* V_STR: unescaped, NUL-terminated */
	const char *raw;	/* V_REAL: as written, not NUL-terminated */
	size_t rawlen;
	int64_t i;		/* V_INT */
};

struct rec {
	const char *type;	/* a field's str */
	int64_t seq;
	const char *line;	/* the line as read, without '\n' */
	size_t len;
	long lineno;		/* in the input; 0: made by kp-fmt */
	const struct field *f;
	size_t nf;
};

struct chunk {
	struct chunk *next;
	size_t cap, used;
	max_align_t data[];
};

struct arena {
	struct chunk *head, *cur;
};

struct reader {
	int fd;
	const char *name;
	long lineno;
	int errors;
	char *buf;		/* what was read, from start to end */
	size_t cap, start, end;
	int eof;
	void (*wait)(int fd);	/* called before each read, if not NULL */
	struct field *tmp;	/* the fields of the line being parsed */
	size_t ntmp, captmp;
};

#define CHUNK_BYTES (1 << 20)

static void *
arena_alloc(struct arena *a, size_t n)
{
	struct chunk *c;
	size_t cap;
	void *p;

	n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) *
	    sizeof(max_align_t);
	for (c = a->cur; c != NULL && c->used + n > c->cap; c = c->next)
		a->cur = c->next != NULL ? c->next : c;
	if (c == NULL) {
		cap = n > CHUNK_BYTES ? n : CHUNK_BYTES;
		if ((c = malloc(sizeof(*c) + cap)) == NULL)
			err(KP_EXIT_FAILURE, "malloc");
		c->next = NULL;
		c->cap = cap;
		c->used = 0;
		if (a->cur != NULL) {
			c->next = a->cur->next;
			a->cur->next = c;
		} else
			a->head = c;
		a->cur = c;
	}
	p = (char *)c->data + c->used;
	c->used += n;
	return p;
}

/* A copy of the n bytes at s, NUL-terminated. */
static char *
arena_strdup(struct arena *a, const char *s, size_t n)
{
	char *p;

	p = arena_alloc(a, n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

/* Forgets everything allocated; keeps the memory for the next interval. */
static void
arena_reset(struct arena *a)
{
	struct chunk *c;

	for (c = a->head; c != NULL; c = c->next)
		c->used = 0;
	a->cur = a->head;
}

static void
arena_free(struct arena *a)
{
	struct chunk *c, *next;

	for (c = a->head; c != NULL; c = next) {
		next = c->next;
		free(c);
	}
	a->head = a->cur = NULL;
}

/* Where the arena stands, to give back what a dropped record took. */
struct mark {
	struct chunk *c;
	size_t used;
};

static struct mark
arena_mark(struct arena *a)
{
	struct mark m = { a->cur, a->cur != NULL ? a->cur->used : 0 };

	return m;
}

static void
arena_release(struct arena *a, struct mark m)
{
	struct chunk *c;

	if (m.c == NULL) {
		arena_reset(a);
		return;
	}
	/* The chunks after the current one are always empty but these. */
	for (c = m.c->next; c != NULL; c = c->next)
		c->used = 0;
	m.c->used = m.used;
	a->cur = m.c;
}

static char *
skip_ws(char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static int
hex4(const char *p, uint32_t *v)
{
	int i;

	*v = 0;
	for (i = 0; i < 4; i++, p++) {
		*v <<= 4;
		if (*p >= '0' && *p <= '9')
			*v |= (uint32_t)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			*v |= (uint32_t)(*p - 'a' + 10);
		else if (*p >= 'A' && *p <= 'F')
			*v |= (uint32_t)(*p - 'A' + 10);
		else
			return 0;
	}
	return 1;
}

static char *
put_utf8(char *o, uint32_t c)
{
	if (c < 0x80)
		*o++ = (char)c;
	else if (c < 0x800) {
		*o++ = (char)(0xc0 | c >> 6);
		*o++ = (char)(0x80 | (c & 0x3f));
	} else if (c < 0x10000) {
		*o++ = (char)(0xe0 | c >> 12);
		*o++ = (char)(0x80 | (c >> 6 & 0x3f));
		*o++ = (char)(0x80 | (c & 0x3f));
	} else {
		*o++ = (char)(0xf0 | c >> 18);
		*o++ = (char)(0x80 | (c >> 12 & 0x3f));
		*o++ = (char)(0x80 | (c >> 6 & 0x3f));
		*o++ = (char)(0x80 | (c & 0x3f));
	}
	return o;
}

/*
 * The string at p (its opening quote), unescaped in place when str is not
 * NULL, into a NUL-terminated *str of length *len; returns the character
 * after it, or NULL if it is not valid.  A \u0000 is not taken: the C
 * string would end there.
 */
static char *
parse_string(char *p, const char **str, size_t *len)
{
	char *o, *start;
	uint32_t c, lo;
	size_t n;

	start = o = ++p;
	for (;;) {
		/* The common case: plain ASCII, nothing to rewrite. */
		if (o == p)
			while ((unsigned char)*p >= 0x20 && *p != '"' &&
			    *p != '\\' && (unsigned char)*p < 0x80)
				o = ++p;
		if (*p == '"')
			break;
		if ((unsigned char)*p < 0x20)
			return NULL;
		if ((unsigned char)*p >= 0x80) {
			if ((n = kp_utf8_len((const unsigned char *)p)) == 0)
				return NULL;
			if (str != NULL)
				memmove(o, p, n);
			o += n;
			p += n;
			continue;
		}
		if (*p != '\\') {
			if (str != NULL)
				*o = *p;
			o++;
			p++;
			continue;
		}
		switch (p[1]) {
		case '"': case '\\': case '/':
			c = (unsigned char)p[1];
			break;
		case 'b': c = '\b'; break;
		case 'f': c = '\f'; break;
		case 'n': c = '\n'; break;
		case 'r': c = '\r'; break;
		case 't': c = '\t'; break;
		case 'u':
			if (!hex4(p + 2, &c) || c == 0)
				return NULL;
			if (c >= 0xdc00 && c <= 0xdfff)
				return NULL;
			if (c >= 0xd800 && c <= 0xdbff) {
				if (p[6] != '\\' || p[7] != 'u' ||
				    !hex4(p + 8, &lo) || lo < 0xdc00 ||
				    lo > 0xdfff)
					return NULL;
				c = 0x10000 + ((c - 0xd800) << 10) +
				    (lo - 0xdc00);
				p += 6;
			}
			p += 4;
			break;
		default:
			return NULL;
		}
		p += 2;
		if (str != NULL)
			o = put_utf8(o, c);
		else
			o = p;	/* only the length is wrong, and unused */
	}
	if (str != NULL) {
		*o = '\0';
		*str = start;
		*len = (size_t)(o - start);
	}
	return p + 1;
}

/*
 * A number as JSON writes it; sets f->kind, and f->i or f->raw.  The value
 * of a real is read only when it is used (field_double), but for a check
 * that it fits a double, where it may not.
 */
static char *
parse_number(char *p, struct field *f)
{
	char *q = p;
	uint64_t mag = 0;
	int neg = 0, digits = 0, real = 0;

	if (*q == '-')
		neg = 1, q++;
	if (*q == '0')
		q++, digits = 1;
	else
		for (; *q >= '0' && *q <= '9'; q++, digits++) {
			if (mag > (UINT64_MAX - 9) / 10)
				return NULL;	/* jansson says "too big" */
			mag = mag * 10 + (uint64_t)(*q - '0');
		}
	if (digits == 0)
		return NULL;
	if (*q == '.') {
		real = 1;
		if (!(*++q >= '0' && *q <= '9'))
			return NULL;
		while (*q >= '0' && *q <= '9')
			q++;
	}
	if (*q == 'e' || *q == 'E') {
		real = 1;
		if (*++q == '+' || *q == '-')
			q++;
		if (!(*q >= '0' && *q <= '9'))
			return NULL;
		while (*q >= '0' && *q <= '9')
			q++;
	}
	if (real) {
		f->kind = V_REAL;
		f->raw = p;
		f->rawlen = (size_t)(q - p);
		if ((memchr(p, 'e', f->rawlen) != NULL ||
		    memchr(p, 'E', f->rawlen) != NULL || f->rawlen > 300) &&
		    isinf(strtod(p, NULL)))
			return NULL;
		return q;
	}
	if (mag > (uint64_t)INT64_MAX + neg)
		return NULL;
	f->kind = V_INT;
	f->i = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	return q;
}

/*
 * jansson's limit on nesting, the record's object included, so that what
 * it takes is taken here too.
 */
#define JSON_MAX_DEPTH 2048

/* Any value, checked and skipped: for arrays and objects inside records. */
static char *
skip_value(char *p, int depth)
{
	struct field f;

	p = skip_ws(p);
	/* depth 0 is a value of the record, inside its object. */
	if (depth + 1 >= JSON_MAX_DEPTH)
		return NULL;
	if (*p == '"')
		return parse_string(p, NULL, NULL);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';

		p = skip_ws(p + 1);
		if (*p == close)
			return p + 1;
		for (;;) {
			if (close == '}') {
				if (*p != '"' ||
				    (p = parse_string(p, NULL, NULL)) == NULL)
					return NULL;
				p = skip_ws(p);
				if (*p++ != ':')
					return NULL;
			}
			if ((p = skip_value(p, depth + 1)) == NULL)
				return NULL;
			p = skip_ws(p);
			if (*p == close)
				return p + 1;
			if (*p++ != ',')
				return NULL;
			p = skip_ws(p);
		}
	}
	if (strncmp(p, "true", 4) == 0 || strncmp(p, "null", 4) == 0)
		return p + 4;
	if (strncmp(p, "false", 5) == 0)
		return p + 5;
	return parse_number(p, &f);
}

static int
key_cmp(const void *a, const void *b)
{
	const struct field *fa = *(const struct field *const *)a;
	const struct field *fb = *(const struct field *const *)b;
	int c;

	if ((c = memcmp(fa->key, fb->key, fa->klen < fb->klen ? fa->klen :
	    fb->klen)) != 0)
		return c;
	return fa->klen < fb->klen ? -1 : fa->klen > fb->klen;
}

/*
 * Duplicate keys are an error, as for the other stages.  A record has a
 * dozen keys or so, compared pairwise; a line of thousands is sorted, so
 * that it costs n log n, not n squared.
 */
static int
has_duplicate_key(const struct field *f, size_t n)
{
	const struct field **sorted;
	size_t i, j;
	int dup = 0;

	if (n <= 32) {
		for (i = 1; i < n; i++)
			for (j = 0; j < i; j++)
				if (f[i].klen == f[j].klen &&
				    memcmp(f[i].key, f[j].key, f[i].klen) == 0)
					return 1;
		return 0;
	}
	sorted = xreallocarray(NULL, n, sizeof(*sorted));
	for (i = 0; i < n; i++)
		sorted[i] = &f[i];
	qsort(sorted, n, sizeof(*sorted), key_cmp);
	for (i = 1; i < n && !dup; i++)
		dup = key_cmp(&sorted[i - 1], &sorted[i]) == 0;
	free(sorted);
	return dup;
}

static void
reader_tmp_grow(struct reader *r)
{
	if (r->ntmp == r->captmp) {
		r->captmp = r->captmp ? r->captmp * 2 : 32;
		r->tmp = xreallocarray(r->tmp, r->captmp, sizeof(*r->tmp));
	}
}

/*
 * Parses the object in line into rec, with its fields in the arena.
 * Returns 0 if the parser does not take the line.
 */
static int
parse_flat(struct reader *r, char *line, struct arena *a, struct rec *rec)
{
	size_t slen;
	char *p;
	struct field *f;

	r->ntmp = 0;
	p = skip_ws(line);
	if (*p++ != '{')
		return 0;
	p = skip_ws(p);
	while (*p != '}') {
		reader_tmp_grow(r);
		f = &r->tmp[r->ntmp++];
		if (*p != '"' ||
		    (p = parse_string(p, &f->key, &f->klen)) == NULL)
			return 0;
		p = skip_ws(p);
		if (*p++ != ':')
			return 0;
		p = skip_ws(p);
		f->str = NULL;
		if (*p == '"') {
			f->kind = V_STR;
			p = parse_string(p, &f->str, &slen);
		} else if (*p == '{' || *p == '[') {
			f->kind = V_OTHER;
			p = skip_value(p, 0);
		} else if (strncmp(p, "true", 4) == 0) {
			f->kind = V_TRUE;
			p += 4;
		} else if (strncmp(p, "false", 5) == 0) {
			f->kind = V_FALSE;
			p += 5;
		} else if (strncmp(p, "null", 4) == 0) {
			f->kind = V_NULL;
			p += 4;
		} else
			p = parse_number(p, f);
		if (p == NULL)
			return 0;
		p = skip_ws(p);
		if (*p == '}')
			break;
		if (*p++ != ',')
			return 0;
		p = skip_ws(p);
		if (*p == '}')
			return 0;
	}
	if (*skip_ws(p + 1) != '\0')
		return 0;
	if (has_duplicate_key(r->tmp, r->ntmp))
		return 0;
	rec->nf = r->ntmp;
	rec->f = f = arena_alloc(a, r->ntmp * sizeof(*f) + 1);
	memcpy(f, r->tmp, r->ntmp * sizeof(*f));
	return 1;
}

static void
reader_reject(struct reader *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kp_vwarn_at(r->name, r->lineno, fmt, ap);
	va_end(ap);
	r->errors++;
}

/*
 * A line parse_flat did not take: jansson says why, or, when the line is a
 * valid object after all, writes it in the form parse_flat takes.
 */
static int
parse_slow(struct reader *r, const char *line, size_t len, struct arena *a,
    struct rec *rec)
{
	json_error_t jerr;
	json_t *obj;
	char *s;
	int ok;

	if ((obj = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr)) ==
	    NULL) {
		reader_reject(r, "not JSON: %s", jerr.text);
		return 0;
	}
	if (!json_is_object(obj)) {
		json_decref(obj);
		reader_reject(r, "not a JSON object");
		return 0;
	}
	s = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(obj);
	if (s == NULL)
		errx(KP_EXIT_FAILURE, "cannot serialise a record");
	ok = parse_flat(r, arena_strdup(a, s, strlen(s)), a, rec);
	if (!ok && strstr(s, "\\u0000") != NULL)
		reader_reject(r, "a string holds \\u0000");
	else if (!ok)
		reader_reject(r, "nested deeper than %d levels",
		    JSON_MAX_DEPTH);
	free(s);
	return ok;
}

/* A number's value; 0 for other values. */
static double
field_double(const struct field *f)
{
	if (f->kind == V_INT)
		return (double)f->i;
	if (f->kind == V_REAL)
		return strtod(f->raw, NULL);
	return 0;
}

static const struct field *
fget(const struct rec *rec, const char *key)
{
	size_t i, klen = strlen(key);

	for (i = 0; i < rec->nf; i++)
		if (rec->f[i].klen == klen && rec->f[i].key[0] == key[0] &&
		    memcmp(rec->f[i].key, key, klen) == 0)
			return &rec->f[i];
	return NULL;
}

/* The string field key of rec, or NULL. */
static const char *
fstr(const struct rec *rec, const char *key)
{
	const struct field *f = fget(rec, key);

	return f != NULL && f->kind == V_STR ? f->str : NULL;
}

/* Returns 1 and sets *v when rec has an integer field key. */
static int
fint(const struct rec *rec, const char *key, int64_t *v)
{
	const struct field *f = fget(rec, key);

	if (f == NULL || f->kind != V_INT)
		return 0;
	*v = f->i;
	return 1;
}

static int
fis_number(const struct rec *rec, const char *key)
{
	const struct field *f = fget(rec, key);

	return f != NULL && (f->kind == V_INT || f->kind == V_REAL);
}

static int
fis_true(const struct rec *rec, const char *key)
{
	const struct field *f = fget(rec, key);

	return f != NULL && f->kind == V_TRUE;
}

/*
 * The next line, without its newline, NUL-terminated in the reader's
 * buffer until the next call; NULL at the end of the input.
 */
static char *
read_line(struct reader *r, size_t *len)
{
	char *line, *nl;
	ssize_t n;

	for (;;) {
		/* No pointer arithmetic on the NULL buffer of no input yet. */
		line = r->buf != NULL ? r->buf + r->start : NULL;
		nl = r->end > r->start ? memchr(line, '\n', r->end - r->start) :
		    NULL;
		if (nl != NULL || (r->eof && r->end > r->start)) {
			if (nl == NULL)
				nl = r->buf + r->end;
			*nl = '\0';
			*len = (size_t)(nl - line);
			r->start = nl == r->buf + r->end ? r->end :
			    (size_t)(nl - r->buf) + 1;
			return line;
		}
		if (r->eof)
			return NULL;
		if (r->start > 0) {
			memmove(r->buf, line, r->end - r->start);
			r->end -= r->start;
			r->start = 0;
		}
		/* Room for a NUL after the last line, too. */
		if (r->end + 1 >= r->cap) {
			r->cap = r->cap ? r->cap * 2 : 1 << 16;
			r->buf = xreallocarray(r->buf, r->cap, 1);
		}
		if (r->wait != NULL)
			r->wait(r->fd);
		if ((n = read(r->fd, r->buf + r->end, r->cap - r->end - 1)) < 0) {
			if (errno == EINTR)
				continue;
			err(KP_EXIT_FAILURE, "%s", r->name);
		}
		if (n == 0)
			r->eof = 1;
		r->end += (size_t)n;
	}
}

/*
 * The next record, its line and fields in the arena a: 1, or 0 at end of
 * input.  A line that is not a record is reported and skipped.
 */
static int
reader_next(struct reader *r, struct arena *a, struct rec *rec)
{
	struct mark m;
	char *raw, *line;
	size_t n;
	int ok;

	for (;;) {
		if ((raw = read_line(r, &n)) == NULL)
			return 0;
		r->lineno++;
		if (n == 0 || strspn(raw, " \t\r") == n)
			continue;
		m = arena_mark(a);
		/* One copy as read, one that parse_flat unescapes in place. */
		line = arena_strdup(a, raw, n);
		ok = memchr(line, '\0', (size_t)n) == NULL &&
		    parse_flat(r, arena_strdup(a, line, (size_t)n), a, rec);
		if (!ok && !parse_slow(r, line, (size_t)n, a, rec)) {
			arena_release(a, m);
			continue;
		}
		rec->line = line;
		rec->len = (size_t)n;
		rec->lineno = r->lineno;
		if ((rec->type = fstr(rec, "type")) == NULL) {
			reader_reject(r, "record without a string \"type\"");
			arena_release(a, m);
			continue;
		}
		if (!fint(rec, "seq", &rec->seq) || rec->seq < 0) {
			reader_reject(r, "record without a non-negative "
			    "integer \"seq\"");
			arena_release(a, m);
			continue;
		}
		if (strcmp(rec->type, "header") == 0)
			kp_check_version(r->name, r->lineno,
			    fstr(rec, "version"));
		return 1;
	}
}

static void
usage(void)
{
	fprintf(stderr, "usage: kp-fmt [-Hh] [-f format] [-n rows] "
	    "[-o columns] [-t types] [-u unit]\n"
	    "              [--carbon-intensity g_per_kwh] [--list-columns] "
	    "[--summary]\n"
	    "              [--textfile path]\n");
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

static void
sb_reset(struct sbuf *sb)
{
	sb->len = 0;
	if (sb->s != NULL)
		sb->s[0] = '\0';
}

static void
sb_add(struct sbuf *sb, const char *s, size_t n)
{
	if (sb->len + n + 1 > sb->cap) {
		sb->cap = (sb->len + n + 1) * 2;
		sb->s = xreallocarray(sb->s, sb->cap, 1);
	}
	memcpy(sb->s + sb->len, s, n);
	sb->len += n;
	sb->s[sb->len] = '\0';
}

static void
sb_puts(struct sbuf *sb, const char *s)
{
	sb_add(sb, s, strlen(s));
}

static const struct format *
format_lookup(const char *name)
{
	size_t i;

	for (i = 0; i < NELEM(formats); i++)
		if (strcmp(formats[i].name, name) == 0)
			return &formats[i];
	errx(KP_EXIT_USAGE, "unknown format '%s' (" FORMAT_NAMES ")", name);
}

static const struct energy_unit *
energy_unit_lookup(const char *name)
{
	size_t i;

	for (i = 0; i < NELEM(energy_units); i++)
		if (strcmp(energy_units[i].name, name) == 0)
			return &energy_units[i];
	errx(KP_EXIT_USAGE, "unknown energy unit '%s' (J, Wh, kWh)", name);
}

static void
list_columns(void)
{
	size_t i;

	for (i = 0; i < NELEM(csv_all_columns); i++)
		printf("%s\n", csv_all_columns[i]);
	exit(kp_out_finish(KP_EXIT_OK));
}

/* -o: a comma-separated list of known columns. */
static void
parse_columns(const char *list)
{
	char *copy, *name, *save;
	size_t i, n = 0;

	copy = xstrdup(list);
	for (name = strtok_r(copy, ",", &save); name != NULL;
	    name = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < NELEM(csv_all_columns); i++)
			if (strcmp(csv_all_columns[i], name) == 0)
				break;
		if (i == NELEM(csv_all_columns)) {
			fprintf(stderr, "kp-fmt: unknown column '%s' (", name);
			for (i = 0; i < NELEM(csv_all_columns); i++)
				fprintf(stderr, "%s%s", i ? ", " : "",
				    csv_all_columns[i]);
			fprintf(stderr, ")\n");
			exit(KP_EXIT_USAGE);
		}
		if (n == MAX_COLUMNS)
			errx(KP_EXIT_USAGE, "more than %d columns", MAX_COLUMNS);
		csv_columns[n++] = csv_all_columns[i];
	}
	free(copy);
	if (n == 0)
		errx(KP_EXIT_USAGE, "no columns in '%s'", list);
	csv_columns[n] = NULL;
}

static void
default_columns(void)
{
	size_t i;

	for (i = 0; i < DEFAULT_COLUMNS; i++)
		csv_columns[i] = csv_all_columns[i];
	if (has_carbon)
		csv_columns[i++] = "co2_g";
	csv_columns[i] = NULL;
}

/* -t: a comma-separated list of record types, any names. */
static char **
parse_types(const char *list)
{
	char **v = NULL, *copy, *name, *save;
	size_t n = 0;

	copy = xstrdup(list);
	for (name = strtok_r(copy, ",", &save); name != NULL;
	    name = strtok_r(NULL, ",", &save)) {
		v = xreallocarray(v, n + 2, sizeof(*v));
		v[n++] = xstrdup(name);
	}
	free(copy);
	if (n == 0)
		errx(KP_EXIT_USAGE, "no record types in '%s'", list);
	v[n] = NULL;
	return v;
}

static void
free_types(void)
{
	char **t;

	for (t = types; t != NULL && *t != NULL; t++)
		free(*t);
	free(types);
}

static int
in_list(const char *const *list, const char *name)
{
	for (; *list != NULL; list++)
		if (strcmp(*list, name) == 0)
			return 1;
	return 0;
}

/* Whether the user asked for records of this type (-t). */
static int
type_wanted(const char *type)
{
	return types == NULL || in_list((const char *const *)types, type);
}

static int
is_type(const struct rec *rec, const char *type)
{
	return strcmp(rec->type, type) == 0;
}

/* A JSON number as a double; 0 when absent, as for sorting. */
static double
num(const struct rec *rec, const char *key)
{
	const struct field *f = fget(rec, key);

	return f != NULL ? field_double(f) : 0;
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

/*
 * A JSON number as fmt_double writes its value.  A plain decimal of at
 * most 15 significant digits is what "%.15g" writes of it, less the zeros
 * that %g drops, so it is rewritten without printf and strtod.
 */
static const char *
fmt_number(char *buf, size_t len, const struct field *f)
{
	const char *p, *end, *ip, *fp, *fend;
	size_t ilen, sig, lead;
	char *o;

	if (f->kind == V_INT && f->i > -1000000000000000 &&
	    f->i < 1000000000000000)
		return fmt_int(buf, len, f->i);
	if (f->kind != V_REAL || f->rawlen + 2 > len ||
	    memchr(f->raw, 'e', f->rawlen) != NULL ||
	    memchr(f->raw, 'E', f->rawlen) != NULL)
		return fmt_double(buf, len, field_double(f));
	p = f->raw;
	end = p + f->rawlen;
	o = buf;
	if (*p == '-')
		*o++ = *p++;
	for (ip = p; p < end && *p != '.'; p++)
		;
	ilen = (size_t)(p - ip);
	fp = p < end ? p + 1 : end;
	for (fend = end; fend > fp && fend[-1] == '0'; fend--)
		;
	if (ilen == 1 && *ip == '0') {
		/* 0.000ddd: %g keeps it plain down to 1e-4. */
		for (lead = 0; fp + lead < fend && fp[lead] == '0'; lead++)
			;
		sig = (size_t)(fend - fp) - lead;
		if (lead > 3 || sig > 15)
			return fmt_double(buf, len, field_double(f));
	} else if (ilen + (size_t)(fend - fp) > 15)
		return fmt_double(buf, len, field_double(f));
	memcpy(o, ip, ilen);
	o += ilen;
	if (fend > fp) {
		*o++ = '.';
		memcpy(o, fp, (size_t)(fend - fp));
		o += fend - fp;
	}
	*o = '\0';
	return buf;
}

/* An integer in decimal, without printf's cost. */
static const char *
fmt_int(char *buf, size_t len, int64_t v)
{
	uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	char *p = buf + len;

	*--p = '\0';
	do
		*--p = (char)('0' + mag % 10);
	while ((mag /= 10) > 0);
	if (v < 0)
		*--p = '-';
	return p;
}

/* Microjoules as joules, exactly: no rounding through a double. */
static const char *
fmt_joules(char *buf, size_t len, int64_t uj)
{
	uint64_t mag = uj < 0 ? 0 - (uint64_t)uj : (uint64_t)uj;
	uint64_t frac = mag % 1000000;
	char *p = buf + len;
	int i;

	*--p = '\0';
	for (i = 0; i < 6; i++, frac /= 10)
		*--p = (char)('0' + frac % 10);
	*--p = '.';
	mag /= 1000000;
	do
		*--p = (char)('0' + mag % 10);
	while ((mag /= 10) > 0);
	if (uj < 0)
		*--p = '-';
	return p;
}

/* Grams of CO2e for an energy, at the --carbon-intensity. */
static double
co2_grams(int64_t uj)
{
	return uj / 3.6e12 * carbon_g_per_kwh;
}

/*
 * About three significant digits, in the largest unit that keeps v >= 1;
 * in the one unit there is, if there is only one.
 */
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
	if (units[1].name == NULL) {
		snprintf(buf, len, "%.3g %s", v / units->scale, units->name);
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
rec_watts(char *buf, size_t len, const struct rec *rec, const char *key)
{
	if (!fis_number(rec, key))
		return "-";
	return fmt_human(buf, len, num(rec, key), watts_units);
}

/* Energy in the unit of -u. */
static const char *
rec_energy(char *buf, size_t len, const struct rec *rec, const char *key)
{
	int64_t uj;

	if (!fint(rec, key, &uj))
		return "-";
	return fmt_human(buf, len, uj / 1e6 / eunit->joules, eunit->units);
}

static const char *
rec_co2(char *buf, size_t len, const struct rec *rec, const char *key)
{
	int64_t uj;

	if (!fint(rec, key, &uj))
		return "-";
	return fmt_human(buf, len, co2_grams(uj), grams_units);
}

static const char *
rec_cpu(char *buf, size_t len, const struct rec *rec, const char *key)
{
	int64_t us;

	if (!fint(rec, key, &us))
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
			fprintf(out, "%*s", (int)pad, "");
		fputs(t->cells[i], out);
		if (col == t->ncols - 1)
			putc('\n', out);
		else
			fprintf(out, "%*s",
			    (int)(t->align[col] == 'l' ? pad + 2 : 2), "");
	}
	for (i = 0; i < t->ncells; i++)
		free(t->cells[i]);
	free(t->cells);
}

static int
by_watts_desc(const void *a, const void *b)
{
	const struct rec *ra = *(const struct rec *const *)a;
	const struct rec *rb = *(const struct rec *const *)b;
	double wa = num(ra, "watts"), wb = num(rb, "watts");
	static const char *const keys[] = {
		"pid", "starttime", "container_id", "pod_id", "vm_id", "unit",
		"level", "by", "zone", "socket"
	};
	const struct field *va, *vb;
	size_t i;
	int c;

	if (wa != wb)
		return wa < wb ? 1 : -1;
	for (i = 0; i < NELEM(keys); i++) {
		va = fget(ra, keys[i]);
		vb = fget(rb, keys[i]);
		if (va == NULL || vb == NULL || va->kind != vb->kind)
			continue;
		if (va->kind == V_INT && va->i != vb->i)
			return va->i < vb->i ? -1 : 1;
		if (va->kind == V_STR && (c = strcmp(va->str, vb->str)) != 0)
			return c;
	}
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
static const struct rec **
select_sorted(const struct block *b, const char *type, size_t *n)
{
	const struct rec **sel;
	size_t i;

	sel = xreallocarray(NULL, b->n + 1, sizeof(*sel));
	for (*n = i = 0; i < b->n; i++)
		if (is_type(b->recs[i], type))
			sel[(*n)++] = b->recs[i];
	qsort(sel, *n, sizeof(*sel), by_watts_desc);
	if (top_rows > 0 && *n > top_rows)
		*n = top_rows;
	return sel;
}

static const char *
str_or_dash(const struct rec *rec, const char *key)
{
	const char *s = fstr(rec, key);

	return s != NULL ? s : "-";
}

/* An integer member as text in buf, or "-" where the record has none. */
static const char *
int_or_dash(char *buf, size_t len, const struct rec *rec, const char *key)
{
	int64_t v;

	if (fint(rec, key, &v))
		snprintf(buf, len, "%lld", (long long)v);
	else
		snprintf(buf, len, "-");
	return buf;
}

static void
table_interval_line(const struct block *b, const struct rec *interval)
{
	int64_t seq, dt_us;
	char *ts;

	if (interval == NULL) {
		if (!fint(b->recs[0], "seq", &seq))
			seq = 0;
		fprintf(out, "interval %lld  (incomplete)\n", (long long)seq);
		return;
	}
	if (!fint(interval, "seq", &seq))
		seq = 0;
	if (summary_first_seq >= 0)
		fprintf(out, "summary of intervals %lld-%lld",
		    (long long)summary_first_seq, (long long)seq);
	else
		fprintf(out, "interval %lld", (long long)seq);
	ts = term_text(str_or_dash(interval, "ts"), SIZE_MAX);
	if (fint(interval, "dt_us", &dt_us))
		fprintf(out, "  %s  (%.3f s)\n", ts, dt_us / 1e6);
	else
		fprintf(out, "  %s\n", ts);
	free(ts);
}

/* The zone of a record, with its socket after a slash when it has one. */
static const char *
zone_text(char *buf, size_t len, const struct rec *rec)
{
	const char *zone = str_or_dash(rec, "zone");
	int64_t socket;

	if (!fint(rec, "socket", &socket))
		return zone;
	snprintf(buf, len, "%s/%lld", zone, (long long)socket);
	return buf;
}

static int
zone_width(const struct block *b)
{
	char buf[64];
	size_t i, w = 0;

	for (i = 0; i < b->n; i++)
		if (fstr(b->recs[i], "zone") != NULL &&
		    text_width(zone_text(buf, sizeof(buf), b->recs[i])) > w)
			w = text_width(zone_text(buf, sizeof(buf), b->recs[i]));
	return (int)w;
}

static void
print_zone(const struct rec *rec, int width)
{
	char buf[64], *z;

	z = term_text(zone_text(buf, sizeof(buf), rec), SIZE_MAX);
	fprintf(out, "%s%*s", z, width - (int)text_width(z), "");
	free(z);
}

static void
print_source(const struct rec *rec)
{
	const char *source;
	char *s;

	if ((source = fstr(rec, "source")) == NULL)
		return;
	s = term_text(source, SIZE_MAX);
	fprintf(out, "  source %s%s", s, fis_true(rec, "estimated") ? ", estimated" : "");
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

/*
 * The zones that have a node record in a block, found once per block:
 * asked for each energy record, a scan of the block each time made an
 * interval of many energy records cost n squared.
 */
static struct {
	const struct block *b;
	unsigned long gen;
	struct kp_map *zones;		/* zone -> the block, as a marker */
} node_zones;

static int
has_node(const struct block *b, const char *zone)
{
	const char *z;
	size_t i;

	if (node_zones.zones == NULL || node_zones.b != b ||
	    node_zones.gen != block_gen) {
		kp_map_free(node_zones.zones, NULL);
		node_zones.zones = kp_map_new();
		node_zones.b = b;
		node_zones.gen = block_gen;
		for (i = 0; i < b->n; i++)
			if (is_type(b->recs[i], "node") &&
			    (z = fstr(b->recs[i], "zone")) != NULL)
				kp_map_put(node_zones.zones, z, (void *)b);
	}
	return kp_map_get(node_zones.zones, zone) != NULL;
}

/* With --carbon-intensity: the emissions of an energy field. */
static void
print_co2(const struct rec *rec, const char *key)
{
	char c[32];

	if (has_carbon)
		fprintf(out, "  co2 %s", rec_co2(c, sizeof(c), rec, key));
}

/*
 * The idle power that stays at node level, when kp-attribute shared some
 * of it out to the processes (--idle proportional).
 */
static void
print_idle_kept(const struct rec *rec)
{
	char kw[32];
	int64_t idle, kept;
	double watts;

	if (!fint(rec, "idle_uj", &idle) || !fint(rec, "idle_kept_uj", &kept) ||
	    kept == idle)
		return;
	watts = idle > 0 ? num(rec, "idle_watts") * ((double)kept / idle) : 0;
	fprintf(out, ", node keeps %s",
	    fmt_human(kw, sizeof(kw), watts, watts_units));
}

/* A node record per zone, or, in a stream without them, the energy record. */
static void
table_zone_lines(const struct block *b)
{
	char w[32], aw[32], iw[32];
	const char *zone;
	const struct rec *rec;
	int width;
	size_t i;

	width = zone_width(b);
	for (i = 0; i < b->n; i++) {
		rec = b->recs[i];
		if ((zone = fstr(rec, "zone")) == NULL)
			continue;
		if (is_type(rec, "node")) {
			print_zone(rec, width);
			fprintf(out, "  %s  (active %s, idle %s",
			    rec_watts(w, sizeof(w), rec, "watts"),
			    rec_watts(aw, sizeof(aw), rec, "active_watts"),
			    rec_watts(iw, sizeof(iw), rec, "idle_watts"));
			print_idle_kept(rec);
			fprintf(out, ")  usage %.1f%%",
			    num(rec, "usage_ratio") * 100);
		} else if (is_type(rec, "energy") && !has_node(b, zone)) {
			print_zone(rec, width);
			fprintf(out, "  %s",
			    rec_watts(w, sizeof(w), rec, "watts"));
		} else
			continue;
		print_source(rec);
		print_co2(rec, "energy_uj");
		putc('\n', out);
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
		fprintf(out, "cpu  usage %.1f%%  (%s of %s)\n",
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
	static const char *const head_co2[] = {
		"PID", "COMM", "ZONE", "WATTS", "ENERGY", "CO2", "CPU",
		"CONTAINER"
	};
	char pid[32], w[32], e[32], c[32], g[32], z[64];
	struct table t;
	const struct rec **sel, *rec;
	size_t i, n;

	sel = select_sorted(b, "process", &n);
	if (has_carbon)
		table_init(&t, "rllrrrrl", head_co2);
	else
		table_init(&t, "rllrrrl", head);
	for (i = 0; i < n; i++) {
		rec = sel[i];
		table_cell(&t, int_or_dash(pid, sizeof(pid), rec, "pid"),
		    SIZE_MAX);
		table_cell(&t, str_or_dash(rec, "comm"), SIZE_MAX);
		table_cell(&t, zone_text(z, sizeof(z), rec), SIZE_MAX);
		table_cell(&t, rec_watts(w, sizeof(w), rec, "watts"), SIZE_MAX);
		table_cell(&t, rec_energy(e, sizeof(e), rec, "energy_uj"),
		    SIZE_MAX);
		if (has_carbon)
			table_cell(&t, rec_co2(g, sizeof(g), rec, "energy_uj"),
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
	const struct rec *rec;
	int width;
	size_t i;

	width = zone_width(b);
	for (i = 0; i < b->n; i++) {
		rec = b->recs[i];
		if (!is_type(rec, "unattributed"))
			continue;
		fprintf(out, "unattributed  ");
		print_zone(rec, width);
		fprintf(out, "  %s  %s  cpu %s",
		    rec_watts(w, sizeof(w), rec, "watts"),
		    rec_energy(e, sizeof(e), rec, "energy_uj"),
		    rec_cpu(c, sizeof(c), rec, "cpu_us"));
		print_co2(rec, "energy_uj");
		putc('\n', out);
	}
}

/* The field that a group record's "by" names, or NULL. */
static const struct field *
by_field(const struct rec *rec)
{
	const char *by = fstr(rec, "by");

	return by != NULL ? fget(rec, by) : NULL;
}

/*
 * The name of a group record: its id_key field, or with id_key NULL the
 * field its "by" names.
 */
static const char *
group_name(char *buf, size_t len, const struct rec *rec, const char *id_key)
{
	const struct field *v;

	v = id_key != NULL ? fget(rec, id_key) : by_field(rec);
	if (v != NULL && v->kind == V_INT)
		return fmt_int(buf, len, v->i);
	return v != NULL && v->kind == V_STR ? v->str : "-";
}

/*
 * Containers, pods, vms, units, groups by a field (id_key NULL, titled
 * by the field's name) or the host records of each level: type names the
 * records, id_key their id.
 */
static void
table_groups(const struct block *b, const char *type, const char *id_key,
    const char *title, size_t id_max)
{
	const char *head[] = {
		title, "ZONE", "WATTS", "ENERGY", "CPU", "PROCS"
	};
	const char *head_co2[] = {
		title, "ZONE", "WATTS", "ENERGY", "CO2", "CPU", "PROCS"
	};
	char w[32], e[32], c[32], g[32], procs[32], z[64], id[32], by[32];
	struct table t;
	const struct rec **sel, *rec;
	size_t i, n;

	sel = select_sorted(b, type, &n);
	if (n > 0)
		putc('\n', out);
	if (id_key == NULL && n > 0) {
		/* As the field is named, in capitals. */
		snprintf(by, sizeof(by), "%s", str_or_dash(sel[0], "by"));
		for (i = 0; by[i] != '\0'; i++)
			by[i] = (char)toupper((unsigned char)by[i]);
		head[0] = head_co2[0] = by;
	}
	if (has_carbon)
		table_init(&t, "llrrrrr", head_co2);
	else
		table_init(&t, "llrrrr", head);
	for (i = 0; i < n; i++) {
		rec = sel[i];
		int_or_dash(procs, sizeof(procs), rec, "processes");
		table_cell(&t, group_name(id, sizeof(id), rec, id_key), id_max);
		table_cell(&t, zone_text(z, sizeof(z), rec), SIZE_MAX);
		table_cell(&t, rec_watts(w, sizeof(w), rec, "watts"), SIZE_MAX);
		table_cell(&t, rec_energy(e, sizeof(e), rec, "energy_uj"),
		    SIZE_MAX);
		if (has_carbon)
			table_cell(&t, rec_co2(g, sizeof(g), rec, "energy_uj"),
			    SIZE_MAX);
		table_cell(&t, rec_cpu(c, sizeof(c), rec, "cpu_us"), SIZE_MAX);
		table_cell(&t, procs, SIZE_MAX);
	}
	table_print(&t);
	free(sel);
}

/* One interval as a block of text to out. */
static void
table_block(const struct block *b, const struct rec *interval)
{
	table_interval_line(b, interval);
	table_zone_lines(b);
	table_cpu_line(b);
	if (has_type(b, "process") || has_type(b, "unattributed"))
		putc('\n', out);
	table_processes(b);
	table_unattributed(b);
	table_groups(b, "container", "container_id", "CONTAINER", 12);
	table_groups(b, "pod", "pod_id", "POD", SIZE_MAX);
	table_groups(b, "vm", "vm_id", "VM", SIZE_MAX);
	table_groups(b, "unit", "unit", "UNIT", SIZE_MAX);
	table_groups(b, "group", NULL, "GROUP", SIZE_MAX);
	table_groups(b, "host", "level", "HOST LEVEL", SIZE_MAX);
}

static void
table_print_block(const struct block *b, const struct rec *interval)
{
	static int first = 1;

	if (interval == NULL && b->n == 0)
		return;
	if (!first)
		putc('\n', out);
	first = 0;
	table_block(b, interval);
}

/*
 * -f top: the table of each interval redrawn in place on the alternate
 * screen, cut to the terminal's size.  While it waits for input, a
 * SIGWINCH interrupts poll(2) and the last frame is drawn again at the new
 * size.  The terminal is given back on exit and on SIGINT, SIGTERM and
 * SIGHUP.
 */
#define TERM_ENTER "\033[?1049h\033[?25l"
#define TERM_LEAVE "\033[?25h\033[?1049l"

static volatile sig_atomic_t term_active;
static volatile sig_atomic_t term_resized = 1;
static unsigned short term_rows = 24, term_cols = 80;
static char *term_frame;		/* the last interval's table */

static void
term_leave(void)
{
	if (term_active) {
		term_active = 0;
		fflush(stdout);
		if (write(STDOUT_FILENO, TERM_LEAVE, sizeof(TERM_LEAVE) - 1) < 0)
			return;
	}
}

static void
on_fatal_signal(int sig)
{
	if (term_active &&
	    write(STDOUT_FILENO, TERM_LEAVE, sizeof(TERM_LEAVE) - 1) >= 0)
		term_active = 0;
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
on_winch(int sig)
{
	(void)sig;
	term_resized = 1;
}

static void
term_enter(void)
{
	static const int fatal[] = { SIGHUP, SIGINT, SIGTERM };
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_winch;
	sigaction(SIGWINCH, &sa, NULL);
	sa.sa_handler = on_fatal_signal;
	for (i = 0; i < NELEM(fatal); i++)
		sigaction(fatal[i], &sa, NULL);
	atexit(term_leave);
	fputs(TERM_ENTER, stdout);
	term_active = 1;
}

static void
term_size(void)
{
	struct winsize ws;

	term_resized = 0;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 &&
	    ws.ws_col > 0) {
		term_rows = ws.ws_row;
		term_cols = ws.ws_col;
	}
}

/*
 * Writes a status line and text to stdout, each line cut to the screen,
 * as many lines as it has.
 */
static void
term_draw(const char *text)
{
	char status[64];
	const char *p;
	size_t row, rows, cols, w;

	if (term_resized)
		term_size();
	rows = term_rows;
	cols = term_cols;
	snprintf(status, sizeof(status), "kp-fmt top  %ux%u  Ctrl-C quits",
	    term_cols, term_rows);
	fputs("\033[H\033[7m", stdout);
	for (p = status, w = 0; *p != '\0' && w < cols; p++, w++)
		putchar(*p);
	fputs("\033[0m\033[K", stdout);
	for (row = 1, p = text; *p != '\0' && row < rows; row++) {
		putchar('\n');
		for (w = 0; *p != '\0' && *p != '\n'; p++) {
			if (((unsigned char)*p & 0xc0) != 0x80 && w++ >= cols)
				continue;
			putchar(*p);
		}
		/* Clear what the last frame left on the line. */
		fputs("\033[K", stdout);
		if (*p == '\n')
			p++;
	}
	fputs("\033[J", stdout);
	kp_out_flush();
}

/* The reader's wait: redraw after a resize until there is input. */
static void
top_wait(int fd)
{
	struct pollfd pfd = { fd, POLLIN, 0 };

	while (poll(&pfd, 1, -1) < 0) {
		if (errno != EINTR)
			err(KP_EXIT_FAILURE, "poll");
		if (term_resized && term_frame != NULL)
			term_draw(term_frame);
	}
}

static void
top_print_block(const struct block *b, const struct rec *interval)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem;

	/*
	 * The summary is the last thing written: on the alternate screen it
	 * would vanish as soon as the terminal is given back.
	 */
	if (!isatty(STDOUT_FILENO) || summary_first_seq >= 0) {
		term_leave();
		table_print_block(b, interval);
		return;
	}
	if (interval == NULL)
		return;
	if (!term_active)
		term_enter();
	if ((mem = open_memstream(&text, &len)) == NULL)
		err(KP_EXIT_FAILURE, "open_memstream");
	out = mem;
	table_block(b, interval);
	out = stdout;
	if (fclose(mem) == EOF)
		err(KP_EXIT_FAILURE, "open_memstream");
	free(term_frame);
	term_frame = text;
	term_draw(term_frame);
}

static void
top_end(void)
{
	term_leave();
	free(term_frame);
	term_frame = NULL;
}

/* RFC 4180: quoted when it holds a comma, quote, CR or LF. */
static void
csv_text(const char *s)
{
	if (strpbrk(s, ",\"\r\n") == NULL) {
		fputs(s, out);
		return;
	}
	putc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			putc('"', out);
		putc(*s, out);
	}
	putc('"', out);
}

/* One cell; absent fields, nulls, objects and arrays are empty. */
static void
csv_value(const struct field *v)
{
	char buf[32];

	if (v == NULL)
		return;
	switch (v->kind) {
	case V_STR:
		csv_text(v->str);
		break;
	case V_INT:
		fputs_unlocked(fmt_int(buf, sizeof(buf), v->i), out);
		break;
	case V_REAL:
		fputs_unlocked(fmt_number(buf, sizeof(buf), v), out);
		break;
	case V_TRUE:
	case V_FALSE:
		fputs_unlocked(v->kind == V_TRUE ? "true" : "false", out);
		break;
	}
}

static void
csv_header(void)
{
	size_t i;

	if (csv_header_done || no_header)
		return;
	csv_header_done = 1;
	for (i = 0; csv_columns[i] != NULL; i++)
		fprintf(out, "%s%s", i ? "," : "", csv_columns[i]);
	putc('\n', out);
}

static void
csv_print_block(const struct block *b, const struct rec *interval)
{
	const char *col, *type;
	const struct rec *from;
	int64_t uj;
	size_t i, j;

	csv_header();
	for (i = 0; i < b->n; i++) {
		type = fstr(b->recs[i], "type");
		if (types == NULL && !in_list(csv_default_types, type))
			continue;
		for (j = 0; (col = csv_columns[j]) != NULL; j++) {
			from = strcmp(col, "ts") == 0 ||
			    strcmp(col, "dt_us") == 0 ? interval : b->recs[i];
			if (j > 0)
				putc(',', out);
			if (strcmp(col, "co2_g") == 0) {
				/* Unknown, not zero, without an intensity. */
				if (has_carbon &&
				    fint(b->recs[i], "energy_uj", &uj))
					fprintf(out, "%.6g", co2_grams(uj));
			} else if (strcmp(col, "group") == 0)
				csv_value(by_field(b->recs[i]));
			else
				csv_value(from != NULL ? fget(from, col) : NULL);
		}
		putc('\n', out);
	}
}

static void
csv_end(void)
{
	csv_header();
}

/* The records of a block as NDJSON, with co2_g if asked for. */
static void
json_print_block(const struct block *b, const struct rec *interval)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		json_line(b->recs[i]);
	if (interval != NULL && type_wanted("interval"))
		json_line(interval);
}

/* Text format 0.0.4: backslash, double quote and newline are escaped. */
static void
prom_label_text(struct sbuf *sb, const char *s)
{
	const char *run;

	for (run = s; *s; s++) {
		if (*s != '\\' && *s != '"' && *s != '\n')
			continue;
		sb_add(sb, run, (size_t)(s - run));
		sb_puts(sb, *s == '\\' ? "\\\\" : *s == '"' ? "\\\"" : "\\n");
		run = s + 1;
	}
	sb_add(sb, run, (size_t)(s - run));
}

/* Kepler writes a label whose value is unknown as the empty string. */
static void
prom_labels(struct sbuf *sb, const struct family *f, const struct rec *rec)
{
	const struct field *v;
	char buf[32];
	size_t i;

	const char *name;
	size_t n = 0;

	sb_reset(sb);
	if (f->labels[0] == NULL)
		return;
	sb_puts(sb, "{");
	for (i = 0; f->labels[i] != NULL; i++) {
		name = f->labels[i];
		if (*name == '?' && fget(rec, ++name) == NULL)
			continue;
		if (n++ > 0)
			sb_puts(sb, ",");
		sb_puts(sb, name);
		sb_puts(sb, "=\"");
		if (strcmp(name, "group") == 0 && fstr(rec, "by") != NULL)
			v = by_field(rec);
		else
			v = fget(rec, name);
		if (v != NULL && v->kind == V_STR)
			prom_label_text(sb, v->str);
		else if (v != NULL && v->kind == V_INT)
			sb_puts(sb, fmt_int(buf, sizeof(buf), v->i));
		else if (v != NULL && v->kind == V_REAL)
			sb_puts(sb, fmt_number(buf, sizeof(buf), v));
		sb_puts(sb, "\"");
	}
	sb_puts(sb, "}");
}

/*
 * a + b, or, when that does not fit an int64_t, the limit it passed, with
 * *over set: a sum of microjoules that large (292 years at 1 kW) only
 * comes from input no meter wrote, and a counter must not wrap backwards.
 */
static int64_t
add_saturated(int64_t a, int64_t b, int *over)
{
	int64_t sum;

	if (!__builtin_add_overflow(a, b, &sum))
		return sum;
	*over = 1;
	return b > 0 ? INT64_MAX : INT64_MIN;
}

/* Says, once per series, that its counter is held at its limit. */
static void
report_saturated(struct series *s, const char *series_key,
    const struct rec *rec)
{
	char buf[32];

	if (s->saturated)
		return;
	s->saturated = 1;
	data_errors++;
	if (rec->lineno > 0)
		warnx("%s:%ld: %s passes %s J, held there", input_name,
		    rec->lineno, series_key, fmt_joules(buf, sizeof(buf),
		    INT64_MAX));
	else
		warnx("%s: %s passes %s J, held there", input_name,
		    series_key, fmt_joules(buf, sizeof(buf), INT64_MAX));
}

/* The record types of workloads, which end; zones and levels stay. */
static const char *const workload_types[] = {
	"process", "container", "pod", "vm", "unit", "group", NULL
};

/* The keys of the series to forget, gathered before any is removed. */
struct stale {
	char **keys;
	size_t n, cap;
};

static void
stale_collect(const char *key, void *val, void *arg)
{
	const struct series *s = val;
	struct stale *st = arg;

	if (!s->forgettable || block_gen - s->seen_gen < PROM_FORGET_INTERVALS)
		return;
	if (st->n == st->cap) {
		st->cap = st->cap ? st->cap * 2 : 64;
		st->keys = xreallocarray(st->keys, st->cap, sizeof(*st->keys));
	}
	st->keys[st->n++] = xstrdup(key);
}

/* Forgets the workload series that have had no sample for a while. */
static void
prom_forget(void)
{
	struct stale st = { NULL, 0, 0 };
	size_t i;

	kp_map_each(prom_series, stale_collect, &st);
	for (i = 0; i < st.n; i++) {
		free(kp_map_remove(prom_series, st.keys[i]));
		free(st.keys[i]);
	}
	free(st.keys);
}

/*
 * The cumulative microjoules of a counter series: the record's own total,
 * with anything the total lost in a reset (a restarted stage) kept, or
 * kp-fmt's own sum of the interval's energy when the record has no total.
 * Returns 0 when the record has neither.
 */
static int
prom_counter(const struct family *f, const char *series_key, const struct rec *rec,
    int64_t *uj)
{
	struct series *s;
	int64_t v;
	int over = 0;

	if ((s = kp_map_get(prom_series, series_key)) == NULL) {
		if ((s = calloc(1, sizeof(*s))) == NULL)
			err(KP_EXIT_FAILURE, "calloc");
		s->forgettable = in_list(workload_types, f->rectype);
		kp_map_put(prom_series, series_key, s);
	}
	s->seen_gen = block_gen;
	if (f->field != NULL && fint(rec, f->field, &v)) {
		if (s->seen && v < s->last_in)
			s->offset = add_saturated(s->offset, s->last_in,
			    &over);
		s->last_in = v;
		s->seen = 1;
		*uj = add_saturated(s->offset, v, &over);
	} else if (fint(rec, f->delta, &v)) {
		if (v > 0)
			s->sum_uj = add_saturated(s->sum_uj, v, &over);
		*uj = s->sum_uj;
	} else
		return 0;
	if (over)
		report_saturated(s, series_key, rec);
	/* A negative total, which no stage writes, must not take it back. */
	if (*uj < s->shown_uj)
		*uj = s->shown_uj;
	s->shown_uj = *uj;
	return 1;
}

/* The sample value of rec in family f, or NULL when it has none. */
static const char *
prom_value(char *buf, size_t len, const struct family *f, const struct rec *rec,
    struct sbuf *key, const struct sbuf *labels)
{
	int64_t uj;

	const struct field *v;

	if (f->kind == GAUGE) {
		v = fget(rec, f->field);
		return v != NULL && (v->kind == V_INT || v->kind == V_REAL) ?
		    fmt_number(buf, len, v) : NULL;
	}
	sb_reset(key);
	sb_puts(key, f->name);
	sb_add(key, labels->s, labels->len);
	if (!prom_counter(f, key->s, rec, &uj))
		return NULL;
	if (f->kind == COUNTER_J)
		return fmt_joules(buf, len, uj);
	return fmt_double(buf, len, co2_grams(uj));
}

/*
 * The label text of each record of the block for one label set, made
 * once for the families that share the set.
 */
static struct {
	const char *const *set;
	struct sbuf *s;			/* one per record */
	char *ok;			/* s[i] is made */
	size_t cap;
} labcache;

static void
labcache_prepare(size_t n)
{
	if (n > labcache.cap) {
		labcache.s = xreallocarray(labcache.s, n, sizeof(*labcache.s));
		memset(labcache.s + labcache.cap, 0,
		    (n - labcache.cap) * sizeof(*labcache.s));
		labcache.ok = xreallocarray(labcache.ok, n, 1);
		labcache.cap = n;
	}
	labcache.set = NULL;
}

static void
labcache_free(void)
{
	size_t i;

	for (i = 0; i < labcache.cap; i++)
		free(labcache.s[i].s);
	free(labcache.s);
	free(labcache.ok);
}

static void
prom_family(FILE *fp, const struct family *f, const struct block *b,
    struct sbuf *key)
{
	const char *value, *zone;
	struct sbuf *labels;
	char buf[64];
	size_t i, samples = 0;

	if (labcache.set != f->labels) {
		labcache.set = f->labels;
		if (b->n > 0)
			memset(labcache.ok, 0, b->n);
	}
	for (i = 0; i < b->n; i++) {
		if (!is_type(b->recs[i], f->rectype) && (f->rectype2 == NULL ||
		    !is_type(b->recs[i], f->rectype2)))
			continue;
		if (f->zone != NULL && ((zone = fstr(b->recs[i],
		    "zone")) == NULL || strcmp(zone, f->zone) != 0))
			continue;
		/* An energy record only stands for a node record missing. */
		if (is_type(b->recs[i], "energy") && ((zone = fstr(b->recs[i],
		    "zone")) == NULL || has_node(b, zone)))
			continue;
		labels = &labcache.s[i];
		if (!labcache.ok[i]) {
			prom_labels(labels, f, b->recs[i]);
			labcache.ok[i] = 1;
		}
		if ((value = prom_value(buf, sizeof(buf), f, b->recs[i], key,
		    labels)) == NULL)
			continue;
		if (samples++ == 0) {
			fprintf(fp, "# HELP %s %s\n", f->name, f->help);
			fprintf(fp, "# TYPE %s %s\n", f->name,
			    f->kind == GAUGE ? "gauge" : "counter");
		}
		fputs_unlocked(f->name, fp);
		if (labels->s != NULL)
			fputs_unlocked(labels->s, fp);
		putc_unlocked(' ', fp);
		fputs_unlocked(value, fp);
		putc_unlocked('\n', fp);
		/* Without labels a second sample would repeat the series. */
		if (f->labels[0] == NULL)
			break;
	}
}

/*
 * The exposition of a block, rendered once per block however many places
 * it goes to, since rendering moves the counters on.
 */
static struct {
	const struct block *b;
	unsigned long gen;
	char *text;
	size_t len;
} prom_cache;

static const char *
prom_text(const struct block *b, size_t *len)
{
	struct sbuf key = { NULL, 0, 0 };
	FILE *mem;
	size_t i;

	if (prom_cache.text != NULL && prom_cache.b == b &&
	    prom_cache.gen == block_gen) {
		*len = prom_cache.len;
		return prom_cache.text;
	}
	free(prom_cache.text);
	prom_cache.text = NULL;
	if ((mem = open_memstream(&prom_cache.text, &prom_cache.len)) == NULL)
		err(KP_EXIT_FAILURE, "open_memstream");
	labcache_prepare(b->n);
	for (i = 0; i < NELEM(families); i++)
		if (families[i].kind != COUNTER_CO2 || has_carbon)
			prom_family(mem, &families[i], b, &key);
	if (fclose(mem) == EOF)
		err(KP_EXIT_FAILURE, "open_memstream");
	free(key.s);
	prom_forget();
	prom_cache.b = b;
	prom_cache.gen = block_gen;
	*len = prom_cache.len;
	return prom_cache.text;
}

static void
prom_print_block(const struct block *b, const struct rec *interval)
{
	const char *text;
	size_t len;

	if (interval == NULL && b->n == 0)
		return;
	text = prom_text(b, &len);
	fwrite(text, 1, len, out);
	putc('\n', out);
}

/* A new temporary file beside --textfile, for the next exposition. */
static int
textfile_temp(char **tmp)
{
	size_t n;
	int fd;

	n = strlen(textfile) + sizeof(".XXXXXX");
	if ((*tmp = malloc(n)) == NULL)
		err(KP_EXIT_FAILURE, "malloc");
	/* No .prom suffix: node_exporter reads only *.prom files. */
	snprintf(*tmp, n, "%s.XXXXXX", textfile);
	if ((fd = mkstemp(*tmp)) < 0)
		err(KP_EXIT_FAILURE, "textfile '%s': cannot create a file "
		    "in its directory", textfile);
	return fd;
}

/* At start, so that a directory we cannot write fails now, not later. */
static void
textfile_check(void)
{
	char *tmp;
	int fd;

	fd = textfile_temp(&tmp);
	close(fd);
	unlink(tmp);
	free(tmp);
}

/* Replaces --textfile with the exposition of b, atomically. */
static void
textfile_write(const struct block *b)
{
	const char *text;
	char *tmp;
	size_t len, done;
	ssize_t n;
	int fd;

	text = prom_text(b, &len);
	fd = textfile_temp(&tmp);
	for (done = 0; done < len; done += (size_t)n)
		if ((n = write(fd, text + done, len - done)) < 0)
			goto fail;
	if (fchmod(fd, 0644) < 0 || close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	if (rename(tmp, textfile) < 0) {
		fd = -1;
		goto fail;
	}
	free(tmp);
	return;
fail:
	warn("textfile '%s'", tmp);
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	exit(KP_EXIT_FAILURE);
}

static void
block_add_new(struct block *b, const struct rec *rec)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 64;
		b->recs = xreallocarray(b->recs, b->cap, sizeof(*b->recs));
	}
	b->recs[b->n++] = rec;
}

static void
block_clear(struct block *b, struct arena *a)
{
	b->n = 0;
	arena_reset(a);
	block_gen++;
}

/* A record of the arena a made from a jansson object. */
static const struct rec *
rec_from_json(struct reader *r, struct arena *a, json_t *obj)
{
	struct rec *rec;
	char *s, *line;
	size_t n;

	if ((s = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER)) == NULL)
		errx(KP_EXIT_FAILURE, "cannot serialise a record");
	n = strlen(s);
	line = arena_strdup(a, s, n);
	free(s);
	rec = arena_alloc(a, sizeof(*rec));
	if (!parse_flat(r, arena_strdup(a, line, n), a, rec))
		errx(KP_EXIT_FAILURE, "cannot read back a record");
	rec->line = line;
	rec->len = n;
	rec->lineno = 0;
	rec->type = fstr(rec, "type");
	if (!fint(rec, "seq", &rec->seq))
		rec->seq = 0;
	return rec;
}

/*
 * --summary: one record per workload (type, zone and identity) over the
 * whole run, its energy and CPU time summed and its power the mean over
 * the run; other fields are those of its last record.
 */
static struct {
	json_t **aggs;			/* in order of first appearance */
	size_t n, cap;
	struct kp_map *index;		/* key -> one of aggs, borrowed */
	int64_t first_seq, last_seq, dt_us;
	size_t intervals;		/* interval records read */
	char *ts;			/* of the last interval */
} sum = { NULL, 0, 0, NULL, -1, 0, 0, 0, NULL };

static const char *const sum_fields[] = {
	"energy_uj", "active_uj", "idle_uj", "idle_kept_uj", "cpu_us",
	"total_cpu_us",
};

/* A part of a summary key: the value, if a string or an integer, and 0x1f. */
static void
summary_key_part(struct sbuf *key, const struct field *v)
{
	char buf[32];

	if (v != NULL && v->kind == V_STR)
		sb_puts(key, v->str);
	else if (v != NULL && v->kind == V_INT)
		sb_puts(key, fmt_int(buf, sizeof(buf), v->i));
	sb_puts(key, "\x1f");
}

static void
summary_key(struct sbuf *key, const struct rec *rec)
{
	static const char *const fields[] = {
		"type", "zone", "socket", "pid", "starttime", "container_id",
		"pod_id", "vm_id", "unit", "level", "by", NULL,
	};
	size_t i;

	sb_reset(key);
	for (i = 0; fields[i] != NULL; i++)
		summary_key_part(key, fget(rec, fields[i]));
	/* Last, for a group record, the value of its "by" field. */
	if (fstr(rec, "by") != NULL)
		summary_key_part(key, by_field(rec));
}

/*
 * Adds obj, a record of the same workload read at line lineno, to agg;
 * takes obj.
 */
static void
summary_merge_new(json_t *agg, json_t *obj, long lineno)
{
	int64_t a, b, total[NELEM(sum_fields)];
	int have[NELEM(sum_fields)], over;
	size_t i;

	for (i = 0; i < NELEM(sum_fields); i++) {
		have[i] = kp_json_int(agg, sum_fields[i], &a) &&
		    kp_json_int(obj, sum_fields[i], &b);
		over = 0;
		if (have[i])
			total[i] = add_saturated(a, b, &over);
		if (over) {
			data_errors++;
			warnx("%s:%ld: --summary: the sum of %s passes %" PRId64
			    ", held there", input_name, lineno, sum_fields[i],
			    INT64_MAX);
		}
	}
	json_object_update(agg, obj);
	json_decref(obj);
	for (i = 0; i < NELEM(sum_fields); i++)
		if (have[i])
			json_object_set_new(agg, sum_fields[i],
			    json_integer(total[i]));
}

/* Adds one whole interval: its records and its length. */
static void
summary_add(const struct block *b, const struct rec *interval)
{
	struct sbuf key = { NULL, 0, 0 };
	json_error_t jerr;
	json_t *agg, *obj;
	const char *ts;
	int64_t v;
	size_t i;
	int over;

	if (sum.index == NULL)
		sum.index = kp_map_new();
	for (i = 0; i < b->n; i++) {
		if (sum.first_seq < 0 || b->recs[i]->seq < sum.first_seq)
			sum.first_seq = b->recs[i]->seq;
		obj = json_loadb(b->recs[i]->line, b->recs[i]->len, 0, &jerr);
		if (obj == NULL)
			errx(KP_EXIT_FAILURE, "cannot read a record again: %s",
			    jerr.text);
		summary_key(&key, b->recs[i]);
		if ((agg = kp_map_get(sum.index, key.s)) != NULL) {
			summary_merge_new(agg, obj, b->recs[i]->lineno);
			continue;
		}
		if (sum.n == sum.cap) {
			sum.cap = sum.cap ? sum.cap * 2 : 64;
			sum.aggs = xreallocarray(sum.aggs, sum.cap,
			    sizeof(*sum.aggs));
		}
		sum.aggs[sum.n++] = obj;
		kp_map_put(sum.index, key.s, obj);
	}
	free(key.s);
	sum.intervals++;
	sum.last_seq = interval->seq;
	if (sum.first_seq < 0 || interval->seq < sum.first_seq)
		sum.first_seq = interval->seq;
	over = 0;
	if (fint(interval, "dt_us", &v))
		sum.dt_us = add_saturated(sum.dt_us, v, &over);
	if (over) {
		data_errors++;
		warnx("%s:%ld: --summary: the sum of dt_us passes %" PRId64
		    ", held there", input_name, interval->lineno, INT64_MAX);
	}
	if ((ts = fstr(interval, "ts")) != NULL) {
		free(sum.ts);
		sum.ts = xstrdup(ts);
	}
}

/*
 * Records after the last interval record belong to an interval whose
 * length is unknown: their energy over the other intervals' length would
 * be a power never seen, so the summary covers whole intervals only, and
 * says so rather than drop them without a word.
 */
static void
summary_leave_out(const struct reader *r, const struct block *b)
{
	if (b->n == 0)
		return;
	warnx("%s: %zu record%s after the last interval record, an "
	    "incomplete interval, left out of the summary", r->name, b->n,
	    b->n == 1 ? "" : "s");
}

/* Power as the mean over the run, a ratio from the sums. */
static void
summary_finish(json_t *agg)
{
	static const char *const watts[][2] = {
		{ "energy_uj", "watts" }, { "active_uj", "active_watts" },
		{ "idle_uj", "idle_watts" },
	};
	const char *type = kp_json_str(agg, "type");
	int64_t e, a, t;
	size_t i;

	json_object_set_new(agg, "seq", json_integer(sum.last_seq));
	for (i = 0; i < NELEM(watts); i++)
		if (sum.dt_us > 0 && kp_json_int(agg, watts[i][0], &e))
			json_object_set_new(agg, watts[i][1],
			    json_real((double)e / sum.dt_us));
	if (type != NULL && strcmp(type, "node") == 0 &&
	    kp_json_int(agg, "energy_uj", &e) &&
	    kp_json_int(agg, "active_uj", &a))
		json_object_set_new(agg, "usage_ratio",
		    json_real(e > 0 ? (double)a / e : 0));
	if (type != NULL && strcmp(type, "cpu") == 0 &&
	    kp_json_int(agg, "cpu_us", &a) &&
	    kp_json_int(agg, "total_cpu_us", &t))
		json_object_set_new(agg, "usage_ratio",
		    json_real(t > 0 ? (double)a / t : 0));
}

static void
summary_print(struct reader *r, const struct format *fmt)
{
	struct kp_map *live_series;
	struct arena a = { NULL, NULL };
	struct block b = { NULL, 0, 0 };
	const struct rec *interval;
	json_t *obj;
	size_t i;

	for (i = 0; i < sum.n; i++) {
		summary_finish(sum.aggs[i]);
		block_add_new(&b, rec_from_json(r, &a, sum.aggs[i]));
		json_decref(sum.aggs[i]);
	}
	obj = kp_rec_new("interval", sum.last_seq);
	if (sum.ts != NULL)
		json_object_set_new(obj, "ts", json_string(sum.ts));
	json_object_set_new(obj, "dt_us", json_integer(sum.dt_us));
	interval = rec_from_json(r, &a, obj);
	json_decref(obj);
	summary_first_seq = sum.first_seq < 0 ? 0 : sum.first_seq;
	/*
	 * The summary's counters start from nothing: --textfile has moved
	 * the live series on by each interval, which the summary's records
	 * already sum.
	 */
	live_series = prom_series;
	prom_series = kp_map_new();
	block_gen++;
	/* Without an interval record there is nothing to summarise. */
	if (sum.intervals > 0 && fmt->print == NULL)
		json_print_block(&b, interval);
	else if (sum.intervals > 0)
		fmt->print(&b, interval);
	kp_map_free(prom_series, free);
	prom_series = live_series;
	free(sum.aggs);
	free(sum.ts);
	if (sum.index != NULL)
		kp_map_free(sum.index, NULL);
	free(b.recs);
	arena_free(&a);
}

static void
no_print(const struct block *b, const struct rec *interval)
{
	(void)b;
	(void)interval;
}

/* One record line for -f json: as it came, with co2_g if asked for. */
static void
json_line(const struct rec *rec)
{
	char buf[64];
	size_t len;
	int64_t uj;

	if (!has_carbon || !fint(rec, "energy_uj", &uj)) {
		kp_out_raw(rec->line, rec->len);
		return;
	}
	/* Before the closing brace, which ends the line but for blanks. */
	for (len = rec->len; len > 0 && rec->line[len - 1] != '}'; len--)
		;
	if (len == 0) {
		kp_out_raw(rec->line, rec->len);
		return;
	}
	snprintf(buf, sizeof(buf), ",\"co2_g\":%.6g}", co2_grams(uj));
	if (fwrite(rec->line, 1, len - 1, stdout) != len - 1)
		kp_out_raw("", 0);	/* reports the error as a write does */
	kp_out_raw(buf, strlen(buf));
}

/*
 * Records of interval k wait for k's interval record, then print at once;
 * -f json writes each record as it comes.
 */
static void
format_blocks(struct reader *r, const struct format *fmt)
{
	struct arena a = { NULL, NULL };
	struct block b = { NULL, 0, 0 };
	struct rec rec, *kept;
	struct mark m;
	int direct_json, collect, is_interval;

	direct_json = strcmp(fmt->name, "json") == 0 && !summary;
	collect = !direct_json || textfile != NULL || summary;
	for (;;) {
		m = arena_mark(&a);
		if (!reader_next(r, &a, &rec))
			break;
		is_interval = strcmp(rec.type, "interval") == 0;
		if (!is_interval && !type_wanted(rec.type)) {
			arena_release(&a, m);
			continue;
		}
		if (direct_json && type_wanted(rec.type))
			json_line(&rec);
		if (is_interval) {
			if (summary)
				summary_add(&b, &rec);
			else if (fmt->print != NULL)
				fmt->print(&b, &rec);
			if (textfile != NULL)
				textfile_write(&b);
			kp_out_flush();
			block_clear(&b, &a);
		} else if (collect && strcmp(rec.type, "header") != 0) {
			kept = arena_alloc(&a, sizeof(*kept));
			*kept = rec;
			block_add_new(&b, kept);
		} else
			arena_release(&a, m);
	}
	if (summary) {
		summary_leave_out(r, &b);
		summary_print(r, fmt);
	} else if (fmt->print != NULL)
		fmt->print(&b, NULL);
	if (fmt->end != NULL)
		fmt->end();
	free(b.recs);
	arena_free(&a);
}

int
main(int argc, char *argv[])
{
	enum { OPT_CARBON = 256, OPT_LIST_COLUMNS, OPT_SUMMARY, OPT_TEXTFILE };
	static const struct option longopts[] = {
		{ "carbon-intensity", required_argument, NULL, OPT_CARBON },
		{ "columns", required_argument, NULL, 'o' },
		{ "energy-unit", required_argument, NULL, 'u' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "list-columns", no_argument, NULL, OPT_LIST_COLUMNS },
		{ "no-header", no_argument, NULL, 'H' },
		{ "rows", required_argument, NULL, 'n' },
		{ "summary", no_argument, NULL, OPT_SUMMARY },
		{ "textfile", required_argument, NULL, OPT_TEXTFILE },
		{ "types", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 }
	};
	const struct format *fmt = NULL;
	struct reader r = { STDIN_FILENO, "<stdin>", 0, 0, NULL, 0, 0, 0, 0,
	    NULL, NULL, 0, 0 };
	const char *columns = NULL;
	int ch, status;

	kp_out_init();
	out = stdout;
	while ((ch = getopt_long(argc, argv, "Hf:hn:o:t:u:", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'H':
			no_header = 1;
			break;
		case 'f':
			fmt = format_lookup(optarg);
			break;
		case 'n':
			top_rows = (size_t)kp_parse_int(optarg, 1, 1000000,
			    "-n rows");
			break;
		case 'o':
			columns = optarg;
			break;
		case 't':
			free_types();
			types = parse_types(optarg);
			break;
		case 'u':
			eunit = energy_unit_lookup(optarg);
			break;
		case OPT_CARBON:
			carbon_g_per_kwh = kp_parse_double(optarg, 0, 1e6,
			    "--carbon-intensity");
			has_carbon = 1;
			break;
		case OPT_LIST_COLUMNS:
			list_columns();
			break;
		case OPT_SUMMARY:
			summary = 1;
			break;
		case OPT_TEXTFILE:
			textfile = optarg;
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
	if (columns != NULL)
		parse_columns(columns);
	else
		default_columns();
	if (fmt == NULL)
		fmt = textfile != NULL ? &no_format :
		    format_lookup(isatty(STDOUT_FILENO) ? "table" : "json");
	if (textfile != NULL)
		textfile_check();

	if (fmt->print == top_print_block && isatty(STDOUT_FILENO))
		r.wait = top_wait;
	prom_series = kp_map_new();
	format_blocks(&r, fmt);
	status = r.errors || data_errors ? KP_EXIT_DATAERR : KP_EXIT_OK;
	free(r.buf);
	free(r.tmp);
	kp_map_free(prom_series, free);
	kp_map_free(node_zones.zones, NULL);
	free(prom_cache.text);
	labcache_free();
	free_types();
	return kp_out_finish(status);
}
