/*
 * The model's watts (rapl-read(1), The model): a row of the table that
 * scripts/fit-model fits to published SPECpower_ssj2008 results (SPEC,
 * www.spec.org), chosen by what <proc>/cpuinfo says the CPU is, never by
 * its model name, which VMs mask; the threads and sockets it lists; and
 * the row's load curve.  The table is compiled in (modeltable.c) or read
 * from --model-table, in one format, by one parser.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rapl.h"

#define LEVELS		11	/* SPEC's active idle, 10 %, ..., 100 % */
#define MAX_PROCESSORS	8192	/* the kernel's largest NR_CPUS */
#define MAX_TABLE_LINES	100000
#define ROW_NAME_MAX	63
#define MAX_PART_WATTS	100000	/* as --idle-watts and --max-watts */

struct row {
	char name[ROW_NAME_MAX + 1];
	double idle_w_per_thread, idle_w_per_socket;
	double full_w_per_thread, full_w_per_socket;
	double shape[LEVELS];		/* 0 at idle to 1 at full load */
};

struct sig {				/* a signature, as cpu-signatures */
	char row[ROW_NAME_MAX + 1];
	char vendor[8];			/* intel, amd, arm */
	int64_t family;			/* arm: the implementer */
	int64_t model_lo, model_hi;	/* arm: the part */
	int64_t stepping_lo, stepping_hi;
};

struct table {
	struct row *rows;
	size_t nrows;
	struct sig *sigs;
	size_t nsigs;
};

struct estimate {
	struct row row;
	int64_t threads, sockets;
	double idle_watts, full_watts;
	char cpu[96];			/* what cpuinfo says, for --list */
};

/* A number of the table, finite and at least 0; -1 if it is not one. */
static double
table_number(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || errno != 0 || !isfinite(v) || v < 0)
		return -1;
	return v;
}

/* A decimal code of the table, at most INT_MAX, all of s; -1 if not. */
static int64_t
table_code(const char *s)
{
	uint64_t v;

	return kp_parse_u64(s, INT_MAX, &v) == 0 ? (int64_t)v : -1;
}

/* "N", "LO-HI" or "*" (any), decimal; -1 if s is none of them. */
static int
table_range(const char *s, int64_t *lo, int64_t *hi)
{
	char buf[32], *dash;

	if (strcmp(s, "*") == 0) {
		*lo = 0;
		*hi = INT64_MAX;
		return 0;
	}
	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	if ((dash = strchr(buf, '-')) != NULL)
		*dash++ = '\0';
	*lo = table_code(buf);
	*hi = dash != NULL ? table_code(dash) : *lo;
	return *lo < 0 || *hi < *lo ? -1 : 0;
}

/* "row NAME RESULTS IDLE_T IDLE_S FULL_T FULL_S SHAPE x 11" */
static const char *
row_line(struct table *t, char **f, size_t nf)
{
	struct row *r;
	double *part[4];
	size_t i;

	if (nf != 3 + 4 + LEVELS || strlen(f[1]) > ROW_NAME_MAX)
		return "a row is 'row NAME RESULTS', 4 parts and 11 levels";
	t->rows = kp_reallocarray(t->rows, t->nrows + 1, sizeof(*t->rows));
	r = &t->rows[t->nrows++];
	strcpy(r->name, f[1]);
	part[0] = &r->idle_w_per_thread;
	part[1] = &r->idle_w_per_socket;
	part[2] = &r->full_w_per_thread;
	part[3] = &r->full_w_per_socket;
	/* Bounds that keep 8192 threads' watts, in uW, a 64-bit count. */
	for (i = 0; i < 4; i++)
		if ((*part[i] = table_number(f[3 + i])) < 0 ||
		    *part[i] > MAX_PART_WATTS)
			return "a part is not a number of watts up to 100000";
	for (i = 0; i < LEVELS; i++)
		if ((r->shape[i] = table_number(f[7 + i])) < 0 ||
		    r->shape[i] > 2)
			return "a level of the curve is not a number from 0 to 2";
	return NULL;
}

/* "sig ROW VENDOR FAMILY MODELS STEPPINGS" */
static const char *
sig_line(struct table *t, char **f, size_t nf)
{
	struct sig *s;
	int64_t unused;

	if (nf != 6 || strlen(f[1]) > ROW_NAME_MAX ||
	    strlen(f[2]) >= sizeof(s->vendor))
		return "a signature is 'sig ROW VENDOR FAMILY MODELS STEPPINGS'";
	t->sigs = kp_reallocarray(t->sigs, t->nsigs + 1, sizeof(*t->sigs));
	s = &t->sigs[t->nsigs++];
	strcpy(s->row, f[1]);
	strcpy(s->vendor, f[2]);
	if (table_range(f[3], &s->family, &unused) < 0 ||
	    unused != s->family ||
	    table_range(f[4], &s->model_lo, &s->model_hi) < 0 ||
	    table_range(f[5], &s->stepping_lo, &s->stepping_hi) < 0)
		return "a family, model or stepping is not a number or a range";
	return NULL;
}

static const struct row *
find_row(const struct table *t, const char *name)
{
	size_t i;

	for (i = 0; i < t->nrows; i++)
		if (strcmp(t->rows[i].name, name) == 0)
			return &t->rows[i];
	return NULL;
}

/* One line of the table; NULL, or what is wrong with it. */
static const char *
table_line(struct table *t, char *line)
{
	char *f[32], *save = NULL, *word;
	size_t nf = 0;

	line[strcspn(line, "\n")] = '\0';
	for (word = strtok_r(line, " \t", &save); word != NULL;
	    word = strtok_r(NULL, " \t", &save))
		if (nf < sizeof(f) / sizeof(f[0]))
			f[nf++] = word;
		else
			return "too many fields";
	if (nf == 0 || f[0][0] == '#')
		return NULL;
	if (strcmp(f[0], "row") == 0)
		return row_line(t, f, nf);
	if (strcmp(f[0], "sig") == 0)
		return sig_line(t, f, nf);
	return "a line is a row, a signature ('sig') or a comment";
}

static void
table_free(struct table *t)
{
	free(t->rows);
	free(t->sigs);
}

/* What a whole table lacks: its fallback, or a row a signature names. */
static const char *
table_whole(const struct table *t)
{
	size_t i;

	if (find_row(t, "fallback") == NULL)
		return "no row 'fallback'";
	for (i = 0; i < t->nsigs; i++)
		if (find_row(t, t->sigs[i].row) == NULL)
			return "a signature names a row that is not there";
	return NULL;
}

/*
 * The table from f, named name; 0, or KP_EXIT_DATAERR with the first
 * fault as "name:line: what" in why.
 */
static int
table_read(struct table *t, FILE *f, const char *name, char *why,
    size_t len)
{
	char *line = NULL;
	const char *what = NULL;
	size_t cap = 0;
	long lineno = 0;

	memset(t, 0, sizeof(*t));
	while (what == NULL && getline(&line, &cap, f) != -1)
		if (++lineno > MAX_TABLE_LINES)
			what = "more lines than a table has";
		else
			what = table_line(t, line);
	free(line);
	if (what == NULL && (what = table_whole(t)) != NULL)
		lineno++;
	if (what == NULL)
		return 0;
	snprintf(why, len, "%s:%ld: %s", name, lineno, what);
	table_free(t);
	return KP_EXIT_DATAERR;
}

/* The table compiled in, or path's; 0 or an exit status with why. */
static int
table_open(struct table *t, const char *path, char *why, size_t len)
{
	FILE *f;
	int rv;

	if (path == NULL)
		f = fmemopen((void *)model_table, strlen(model_table), "r");
	else
		f = fopen(path, "re");
	if (f == NULL) {
		snprintf(why, len, "cannot read '%s': %s",
		    path != NULL ? path : "model_table", strerror(errno));
		return KP_EXIT_FAILURE;
	}
	rv = table_read(t, f, path != NULL ? path : "model_table", why, len);
	fclose(f);
	return rv;
}

/* intel, amd or arm, as the table's signatures name them; NULL: other. */
static const char *
cpu_vendor(const struct kp_cpu *c)
{
	if (c->implementer >= 0)
		return "arm";
	if (c->vendor_id != NULL && strcmp(c->vendor_id, "GenuineIntel") == 0)
		return "intel";
	if (c->vendor_id != NULL && strcmp(c->vendor_id, "AuthenticAMD") == 0)
		return "amd";
	return NULL;
}

static int
sig_matches(const struct sig *s, const char *vendor, const struct kp_cpu *c)
{
	int arm = strcmp(vendor, "arm") == 0;
	int64_t family = arm ? c->implementer : c->family;
	int64_t model = arm ? c->part : c->model;

	if (strcmp(s->vendor, vendor) != 0 || family != s->family)
		return 0;
	if (s->model_hi != INT64_MAX &&
	    (model < s->model_lo || model > s->model_hi))
		return 0;
	return s->stepping_hi == INT64_MAX || (c->stepping >= s->stepping_lo &&
	    c->stepping <= s->stepping_hi);
}

/*
 * The row for processor c: its signature's; else its vendor's fallback
 * (intel-fallback, ...), fitted over all of that vendor's servers; else
 * the fallback over all servers.
 */
static const struct row *
choose_row(const struct table *t, const struct kp_cpu *c)
{
	const char *vendor = cpu_vendor(c);
	const struct row *r;
	char name[ROW_NAME_MAX + 1];
	size_t i;

	if (vendor == NULL)
		return find_row(t, "fallback");
	for (i = 0; i < t->nsigs; i++)
		if (sig_matches(&t->sigs[i], vendor, c))
			return find_row(t, t->sigs[i].row);
	snprintf(name, sizeof(name), "%s-fallback", vendor);
	return (r = find_row(t, name)) != NULL ? r : find_row(t, "fallback");
}

/* What cpuinfo says the CPU is, as --list shows it. */
static void
describe_cpu(struct estimate *e, const struct kp_cpu *c)
{
	if (c->implementer >= 0)
		snprintf(e->cpu, sizeof(e->cpu), "implementer 0x%llx part "
		    "0x%llx", (long long)c->implementer, (long long)c->part);
	else
		snprintf(e->cpu, sizeof(e->cpu), "%s family %lld model %lld "
		    "stepping %lld", c->vendor_id != NULL ? c->vendor_id :
		    "no vendor_id", (long long)c->family, (long long)c->model,
		    (long long)c->stepping);
	if (c->hypervisor)
		strncat(e->cpu, ", a VM", sizeof(e->cpu) - strlen(e->cpu) - 1);
}

/*
 * The processors of procdir/cpuinfo in *cpus, their number in *n; 0, or
 * an exit status with why: a cpuinfo that cannot be read, or lists none
 * or more than any kernel runs, tells no machine to estimate.
 */
static int
read_cpuinfo(const char *procdir, struct kp_cpu **cpus, size_t *n,
    char *why, size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	xpath(path, sizeof(path), "%s/cpuinfo", procdir);
	if ((f = fopen(path, "re")) == NULL) {
		snprintf(why, len, "cannot read '%s': %s", path,
		    strerror(errno));
		return KP_EXIT_FAILURE;
	}
	*n = kp_cpuinfo_parse(f, cpus);
	fclose(f);
	if (*n >= 1 && *n <= MAX_PROCESSORS)
		return 0;
	snprintf(why, len, "'%s' lists %zu processors: the model needs 1 to "
	    "%d", path, *n, MAX_PROCESSORS);
	kp_cpus_free(*cpus, *n);
	return KP_EXIT_DATAERR;
}

/*
 * The estimate for the machine procdir/cpuinfo describes, from the table
 * at table_path (NULL: the one compiled in); NULL with an exit status in
 * *status and the reason in why.
 */
struct estimate *
estimate_open(const char *procdir, const char *table_path, int *status,
    char *why, size_t len)
{
	struct estimate *e;
	struct table t;
	struct kp_cpu *cpus;
	size_t n;

	if ((*status = table_open(&t, table_path, why, len)) != 0)
		return NULL;
	if ((*status = read_cpuinfo(procdir, &cpus, &n, why, len)) != 0) {
		table_free(&t);
		return NULL;
	}
	e = kp_calloc(1, sizeof(*e));
	e->row = *choose_row(&t, &cpus[0]);
	e->threads = (int64_t)n;
	e->sockets = (int64_t)kp_cpus_sockets(cpus, n);
	e->idle_watts = e->row.idle_w_per_thread * (double)e->threads +
	    e->row.idle_w_per_socket * (double)e->sockets;
	e->full_watts = e->row.full_w_per_thread * (double)e->threads +
	    e->row.full_w_per_socket * (double)e->sockets;
	describe_cpu(e, &cpus[0]);
	kp_cpus_free(cpus, n);
	table_free(&t);
	return e;
}

/*
 * --idle-watts, --max-watts (-1: not given): the machine's own, where they
 * are known; 0, or -1 with why where idle would exceed full load.
 */
int
estimate_set_watts(struct estimate *e, double idle_watts, double full_watts,
    char *why, size_t len)
{
	double idle = idle_watts >= 0 ? idle_watts : e->idle_watts;
	double full = full_watts >= 0 ? full_watts : e->full_watts;

	if (idle > full) {
		snprintf(why, len, "idle watts must not exceed max watts: "
		    "%g > %g (row %s's)", idle, full, e->row.name);
		return -1;
	}
	e->idle_watts = idle;
	e->full_watts = full;
	return 0;
}

/*
 * The watts at usage_ratio (0 to 1): idle, plus the range to full load
 * times the row's curve, straight between SPEC's levels.
 */
double
estimate_watts(const struct estimate *e, double usage_ratio)
{
	double at = fmin(fmax(usage_ratio, 0), 1) * (LEVELS - 1), shape;
	size_t i = (size_t)at;

	if (i >= LEVELS - 1)
		i = LEVELS - 2;
	shape = e->row.shape[i] + (e->row.shape[i + 1] - e->row.shape[i]) *
	    (at - (double)i);
	return e->idle_watts + (e->full_watts - e->idle_watts) * shape;
}

const char *
estimate_row(const struct estimate *e)
{
	return e->row.name;
}

int64_t
estimate_threads(const struct estimate *e)
{
	return e->threads;
}

int64_t
estimate_sockets(const struct estimate *e)
{
	return e->sockets;
}

/* "row amd-zen3 for AuthenticAMD family 25 model 1 stepping 1, 2 ..." */
void
estimate_describe(const struct estimate *e, char *buf, size_t len)
{
	snprintf(buf, len, "row %s for %s, %lld threads, %lld sockets: "
	    "%.1f W idle to %.1f W at full load", e->row.name, e->cpu,
	    (long long)e->threads, (long long)e->sockets, e->idle_watts,
	    e->full_watts);
}

void
estimate_free(struct estimate *e)
{
	free(e);
}
