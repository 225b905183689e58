/*
 * -f prometheus and --textfile: at each interval, a complete exposition in
 * the Prometheus text format 0.0.4, with the metric families and labels of
 * Kepler.  A counter series keeps what it showed, so that it never goes
 * backwards; a workload's series without a sample for a while is
 * forgotten.
 */
#include <err.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fmt.h"

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
	/*
	 * NULL-terminated; none: one sample.  A name that starts with '?' is
	 * left out of a record that lacks the field; "group" is the value of
	 * the field that a group record's "by" names.
	 */
	const char *const *labels;
	const char *help;
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
	{ "kepler_node_cpu_joules_total", "node", "energy", NULL,
	    "total_uj", "energy_uj", COUNTER_J, zone_labels,
	    "Energy used by the CPU zone of the node, in joules" },
	{ "kepler_node_cpu_active_joules_total", "node", NULL, NULL,
	    "active_total_uj", "active_uj", COUNTER_J, zone_labels,
	    "Energy used by the CPU zone of the node while active, in "
	    "joules" },
	{ "kepler_node_cpu_idle_joules_total", "node", NULL, NULL,
	    "idle_total_uj", "idle_uj", COUNTER_J, zone_labels,
	    "Energy used by the CPU zone of the node while idle, in joules" },
	{ "kepler_node_cpu_watts", "node", "energy", NULL,
	    "watts", NULL, GAUGE, zone_labels,
	    "Power of the CPU zone of the node, in watts" },
	{ "kepler_node_cpu_active_watts", "node", NULL, NULL,
	    "active_watts", NULL, GAUGE, zone_labels,
	    "Power of the CPU zone of the node while active, in watts" },
	{ "kepler_node_cpu_idle_watts", "node", NULL, NULL,
	    "idle_watts", NULL, GAUGE, zone_labels,
	    "Power of the CPU zone of the node while idle, in watts" },
	{ "kp_node_cpu_idle_kept_joules_total", "node", NULL, NULL,
	    NULL, "idle_kept_uj", COUNTER_J, zone_labels,
	    "Idle energy of the CPU zone of the node that is not shared out "
	    "to the processes, in joules" },
	{ "kepler_node_cpu_usage_ratio", "node", NULL, NULL,
	    "usage_ratio", NULL, GAUGE, no_labels,
	    "Active CPU time of the node over all CPU time" },
	{ "kp_node_platform_joules_total", "node", "energy", "psys",
	    "total_uj", "energy_uj", COUNTER_J, source_labels,
	    "Energy used by the whole platform (the psys zone), in joules" },
	{ "kp_node_platform_watts", "node", "energy", "psys",
	    "watts", NULL, GAUGE, source_labels,
	    "Power of the whole platform (the psys zone), in watts" },
	{ "kepler_process_cpu_joules_total", "process", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_J, process_labels,
	    "Energy attributed to the process, in joules" },
	{ "kepler_process_cpu_watts", "process", NULL, NULL,
	    "watts", NULL, GAUGE, process_labels,
	    "Power attributed to the process, in watts" },
	{ "kepler_container_cpu_joules_total", "container", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_J, container_labels,
	    "Energy attributed to the container, in joules" },
	{ "kepler_container_cpu_watts", "container", NULL, NULL,
	    "watts", NULL, GAUGE, container_labels,
	    "Power attributed to the container, in watts" },
	{ "kepler_pod_cpu_joules_total", "pod", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_J, pod_labels,
	    "Energy attributed to the pod, in joules" },
	{ "kepler_pod_cpu_watts", "pod", NULL, NULL,
	    "watts", NULL, GAUGE, pod_labels,
	    "Power attributed to the pod, in watts" },
	{ "kepler_vm_cpu_joules_total", "vm", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_J, vm_labels,
	    "Energy attributed to the virtual machine, in joules" },
	{ "kepler_vm_cpu_watts", "vm", NULL, NULL,
	    "watts", NULL, GAUGE, vm_labels,
	    "Power attributed to the virtual machine, in watts" },
	{ "kp_unit_cpu_joules_total", "unit", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_J, unit_labels,
	    "Energy attributed to the systemd unit, in joules" },
	{ "kp_unit_cpu_watts", "unit", NULL, NULL,
	    "watts", NULL, GAUGE, unit_labels,
	    "Power attributed to the systemd unit, in watts" },
	{ "kp_group_cpu_joules_total", "group", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_J, group_labels,
	    "Energy attributed to the processes grouped by one field, in "
	    "joules" },
	{ "kp_group_cpu_watts", "group", NULL, NULL,
	    "watts", NULL, GAUGE, group_labels,
	    "Power attributed to the processes grouped by one field, in "
	    "watts" },
	{ "kp_host_cpu_joules_total", "host", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_J, host_labels,
	    "Energy attributed to the processes in no group of the level, "
	    "in joules" },
	{ "kp_host_cpu_watts", "host", NULL, NULL,
	    "watts", NULL, GAUGE, host_labels,
	    "Power attributed to the processes in no group of the level, in "
	    "watts" },
	{ "kp_unattributed_cpu_joules_total", "unattributed", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_J, zone_labels,
	    "Active energy no process accounts for, in joules" },
	{ "kp_unattributed_cpu_watts", "unattributed", NULL, NULL,
	    "watts", NULL, GAUGE, zone_labels,
	    "Active power no process accounts for, in watts" },
	/* Only with --carbon-intensity. */
	{ "kp_node_cpu_co2_grams_total", "node", "energy", NULL,
	    "total_uj", "energy_uj", COUNTER_CO2, zone_labels,
	    "Emissions of the CPU zone of the node, in grams of CO2 "
	    "equivalent" },
	{ "kp_process_cpu_co2_grams_total", "process", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_CO2, process_labels,
	    "Emissions attributed to the process, in grams of CO2 "
	    "equivalent" },
	{ "kp_container_cpu_co2_grams_total", "container", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_CO2, container_labels,
	    "Emissions attributed to the container, in grams of CO2 "
	    "equivalent" },
	{ "kp_pod_cpu_co2_grams_total", "pod", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_CO2, pod_labels,
	    "Emissions attributed to the pod, in grams of CO2 equivalent" },
	{ "kp_vm_cpu_co2_grams_total", "vm", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_CO2, vm_labels,
	    "Emissions attributed to the virtual machine, in grams of CO2 "
	    "equivalent" },
	{ "kp_unit_cpu_co2_grams_total", "unit", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_CO2, unit_labels,
	    "Emissions attributed to the systemd unit, in grams of CO2 "
	    "equivalent" },
	{ "kp_group_cpu_co2_grams_total", "group", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_CO2, group_labels,
	    "Emissions attributed to the processes grouped by one field, in "
	    "grams of CO2 equivalent" },
	{ "kp_host_cpu_co2_grams_total", "host", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_CO2, host_labels,
	    "Emissions attributed to the processes in no group of the "
	    "level, in grams of CO2 equivalent" },
	{ "kp_unattributed_cpu_co2_grams_total", "unattributed", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_CO2, zone_labels,
	    "Emissions of the active energy no process accounts for, in "
	    "grams of CO2 equivalent" },
};

/*
 * Exited records (D3) fold processes born and ended inside an interval, by
 * parent and comm, and have no pid: they are no process series.  Their
 * energy is summed per zone, so that process, exited, unattributed and
 * idle kept series still add up to the node's.
 */
static const struct family exited_families[] = {
	{ "kp_exited_cpu_joules_total", "exited", NULL, NULL,
	    NULL, "energy_uj", COUNTER_J, zone_labels,
	    "Energy attributed to processes born and ended inside an "
	    "interval, in joules" },
	{ "kp_exited_cpu_watts", "exited", NULL, NULL,
	    "watts", NULL, GAUGE, zone_labels,
	    "Power attributed to processes born and ended inside an "
	    "interval, in watts" },
	{ "kp_exited_cpu_co2_grams_total", "exited", NULL, NULL,
	    NULL, "energy_uj", COUNTER_CO2, zone_labels,
	    "Emissions attributed to processes born and ended inside an "
	    "interval, in grams of CO2 equivalent" },
};

/* The record types of workloads, which end; zones and levels stay. */
static const char *const workload_types[] = {
	"process", "container", "pod", "vm", "unit", "group", NULL
};

/*
 * A workload's series without a sample for this many intervals is
 * forgotten, so that memory does not grow with every process that ever
 * ran; Kepler drops the series of ended processes too.
 */
#define FORGET_INTERVALS 5

/* One counter series: what it showed, so that it never goes backwards. */
struct series {
	int64_t last_in;	/* the cumulative field as last read */
	int64_t offset;		/* added after the input's total fell */
	int64_t sum_uj;		/* kp-fmt's own total, from the deltas */
	int64_t shown_uj;	/* the counter's last sample */
	int seen;
	int saturated;		/* reported as held at INT64_MAX */
	int ended;		/* its last record said terminated */
	int forgettable;	/* of a workload that ends, not of a zone */
	unsigned long seen_gen;	/* the block it last had a sample in */
};

/*
 * The label text of each record of a block for one label set, made once
 * for the families that share the set.
 */
struct labels {
	const char *const *set;
	struct kp_buf *text;		/* one per record */
	char *made;			/* text[i] is made */
	size_t cap;
};

/* The state of one exposition: stdout's, the textfile's, or both. */
struct prom {
	int to_stdout;
	const char *textfile;		/* NULL: none */
	struct kp_map *series;		/* "name{labels}" -> series */
	unsigned long gen;		/* blocks rendered */
	struct labels labels;
	struct kp_buf text;		/* the exposition of the block */
	struct kp_buf key;		/* a series' name and labels */
};

/* Text format 0.0.4: backslash, double quote and newline are escaped. */
static void
label_text(struct kp_buf *b, const char *s)
{
	const char *run;

	for (run = s; *s; s++) {
		if (*s != '\\' && *s != '"' && *s != '\n')
			continue;
		kp_buf_add(b, run, (size_t)(s - run));
		kp_buf_add(b, *s == '\\' ? "\\\\" : *s == '"' ? "\\\"" : "\\n",
		    2);
		run = s + 1;
	}
	kp_buf_add(b, run, (size_t)(s - run));
}

/* A label's value; Kepler writes one that is unknown as the empty string. */
static void
label_value(struct kp_buf *b, const char *name, const struct kp_record *rec)
{
	const struct kp_field *v;

	if (strcmp(name, "group") == 0 && kp_rec_str(rec, "by") != NULL)
		v = by_field(rec);
	else
		v = kp_rec_get(rec, name);
	if (v != NULL && v->kind == KP_V_STR)
		label_text(b, v->str);
	else if (v != NULL && v->kind == KP_V_INT)
		kp_buf_i64(b, v->i);
	else if (v != NULL && v->kind == KP_V_REAL)
		put_number(b, v);
}

/* {name="value",...} of a record, or nothing for a family without labels. */
static void
labels_make(struct kp_buf *b, const struct family *f,
    const struct kp_record *rec)
{
	const char *name;
	size_t i, n = 0;

	b->len = 0;
	if (f->labels[0] == NULL)
		return;
	kp_buf_add(b, "{", 1);
	for (i = 0; f->labels[i] != NULL; i++) {
		name = f->labels[i];
		if (*name == '?' && kp_rec_get(rec, ++name) == NULL)
			continue;
		if (n++ > 0)
			kp_buf_add(b, ",", 1);
		kp_buf_add(b, name, strlen(name));
		kp_buf_add(b, "=\"", 2);
		label_value(b, name, rec);
		kp_buf_add(b, "\"", 1);
	}
	kp_buf_add(b, "}", 1);
}

/* Ready for the records of a block of n. */
static void
labels_prepare(struct labels *l, size_t n)
{
	if (n > l->cap) {
		l->text = kp_reallocarray(l->text, n, sizeof(*l->text));
		memset(l->text + l->cap, 0, (n - l->cap) * sizeof(*l->text));
		l->made = kp_reallocarray(l->made, n, 1);
		l->cap = n;
	}
	l->set = NULL;
}

/* The labels of record i of b in family f. */
static const struct kp_buf *
labels_of(struct labels *l, const struct family *f, const struct block *b,
    size_t i)
{
	if (l->set != f->labels) {
		l->set = f->labels;
		memset(l->made, 0, b->n);
	}
	if (!l->made[i]) {
		labels_make(&l->text[i], f, b->recs[i]);
		l->made[i] = 1;
	}
	return &l->text[i];
}

static void
labels_free(struct labels *l)
{
	size_t i;

	for (i = 0; i < l->cap; i++)
		free(l->text[i].s);
	free(l->text);
	free(l->made);
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
report_saturated(struct fmt *ctx, struct series *s, const char *series_key,
    const struct kp_record *rec)
{
	struct kp_buf j = { NULL, 0, 0 };

	if (s->saturated)
		return;
	s->saturated = 1;
	ctx->data_errors++;
	put_joules(&j, INT64_MAX);
	if (rec->lineno > 0)
		warnx("%s:%ld: %s passes %.*s J, held there", ctx->input_name,
		    rec->lineno, series_key, (int)j.len, j.s);
	else
		warnx("%s: %s passes %.*s J, held there", ctx->input_name,
		    series_key, (int)j.len, j.s);
	free(j.s);
}

/* The keys of the series to forget, gathered before any is removed. */
struct stale {
	unsigned long gen;
	char **keys;
	size_t n, cap;
};

static void
stale_collect(const char *key, void *val, void *arg)
{
	const struct series *s = val;
	struct stale *st = arg;

	if (!s->forgettable || st->gen - s->seen_gen < FORGET_INTERVALS)
		return;
	if (st->n == st->cap) {
		st->cap = st->cap ? st->cap * 2 : 64;
		st->keys = kp_reallocarray(st->keys, st->cap,
		    sizeof(*st->keys));
	}
	st->keys[st->n++] = kp_strdup(key);
}

/* Forgets the workload series that have had no sample for a while. */
static void
forget_stale(struct prom *p)
{
	struct stale st = { p->gen, NULL, 0, 0 };
	size_t i;

	kp_map_each(p->series, stale_collect, &st);
	for (i = 0; i < st.n; i++) {
		free(kp_map_remove(p->series, st.keys[i]));
		free(st.keys[i]);
	}
	free(st.keys);
}

static struct series *
series_get(struct prom *p, const struct family *f, const char *series_key)
{
	struct series *s;

	if ((s = kp_map_get(p->series, series_key)) == NULL) {
		s = kp_calloc(1, sizeof(*s));
		s->forgettable = str_in_list(workload_types, f->rectype);
		kp_map_put(p->series, series_key, s);
	}
	s->seen_gen = p->gen;
	return s;
}

/*
 * The cumulative microjoules of a counter series: the record's own total,
 * with anything the total lost in a reset (a restarted stage) kept, or
 * kp-fmt's own sum of the interval's energy when the record has no total.
 * Returns 0 when the record has neither.
 */
static int
counter_uj(struct fmt *ctx, struct prom *p, const struct family *f,
    const struct kp_record *rec, int64_t *uj)
{
	struct series *s = series_get(p, f, p->key.s);
	int64_t v;
	int over = 0;

	if (f->field != NULL && kp_rec_int(rec, f->field, &v)) {
		/* After a terminated record, a total is a new workload's. */
		if (s->seen && (v < s->last_in || s->ended))
			s->offset = add_saturated(s->offset, s->last_in,
			    &over);
		s->ended = kp_rec_terminated(rec);
		s->last_in = v;
		s->seen = 1;
		*uj = add_saturated(s->offset, v, &over);
	} else if (kp_rec_int(rec, f->delta, &v)) {
		s->sum_uj = add_saturated(s->sum_uj, v, &over);
		*uj = s->sum_uj;
	} else
		return 0;
	if (over)
		report_saturated(ctx, s, p->key.s, rec);
	/* A series whose records stop carrying their total keeps its value. */
	if (*uj < s->shown_uj)
		*uj = s->shown_uj;
	s->shown_uj = *uj;
	return 1;
}

/* Writes the sample value of rec in family f; 0 when it has none. */
static int
sample_value(struct fmt *ctx, struct prom *p, struct kp_buf *out,
    const struct family *f, const struct kp_record *rec,
    const struct kp_buf *labels)
{
	const struct kp_field *v;
	int64_t uj;

	if (f->kind == GAUGE) {
		v = kp_rec_get(rec, f->field);
		if (v == NULL || (v->kind != KP_V_INT && v->kind != KP_V_REAL))
			return 0;
		put_number(out, v);
		return 1;
	}
	p->key.len = 0;
	kp_buf_add(&p->key, f->name, strlen(f->name));
	kp_buf_add(&p->key, labels->s, labels->len);
	kp_buf_add(&p->key, "", 1);
	if (!counter_uj(ctx, p, f, rec, &uj))
		return 0;
	if (f->kind == COUNTER_J)
		put_joules(out, uj);
	else
		put_double(out, co2_grams(ctx, uj));
	return 1;
}

/* Whether rec has a sample in family f. */
static int
family_has(const struct family *f, const struct block *b,
    const struct kp_record *rec)
{
	const char *zone;

	if (!rec_is(rec, f->rectype) && (f->rectype2 == NULL ||
	    !rec_is(rec, f->rectype2)))
		return 0;
	if (f->zone == NULL && !rec_is(rec, "energy"))
		return 1;
	zone = kp_rec_str(rec, "zone");
	if (f->zone != NULL && (zone == NULL || strcmp(zone, f->zone) != 0))
		return 0;
	/* An energy record only stands for a node record missing. */
	return !rec_is(rec, "energy") || (zone != NULL &&
	    !block_has_node(b, zone));
}

static void
family_head(struct kp_buf *out, const struct family *f)
{
	kp_buf_printf(out, "# HELP %s %s\n", f->name, f->help);
	kp_buf_printf(out, "# TYPE %s %s\n", f->name,
	    f->kind == GAUGE ? "gauge" : "counter");
}

/* One sample: name{labels} value; its HELP and TYPE before the first. */
static void
family_sample(struct fmt *ctx, struct prom *p, const struct family *f,
    const struct kp_record *rec, const struct kp_buf *labels,
    size_t *samples)
{
	struct kp_buf *out = &p->text;
	size_t mark = out->len;

	if (*samples == 0)
		family_head(out, f);
	kp_buf_add(out, f->name, strlen(f->name));
	kp_buf_add(out, labels->s, labels->len);
	kp_buf_add(out, " ", 1);
	if (!sample_value(ctx, p, out, f, rec, labels)) {
		out->len = mark;
		return;
	}
	kp_buf_add(out, "\n", 1);
	(*samples)++;
}

static void
family_write(struct fmt *ctx, struct prom *p, const struct family *f,
    const struct block *b)
{
	size_t i, samples = 0;

	for (i = 0; i < b->n; i++) {
		if (!family_has(f, b, b->recs[i]))
			continue;
		family_sample(ctx, p, f, b->recs[i],
		    labels_of(&p->labels, f, b, i), &samples);
		/* Without labels a second sample would repeat the series. */
		if (f->labels[0] == NULL && samples > 0)
			break;
	}
}

/* One zone's exited records in a block: their labels and sums. */
struct zone_sum {
	const struct kp_buf *labels;
	const struct kp_record *last;	/* for a message */
	int64_t uj;
	double watts;
	int has;			/* it has exited records */
};

/*
 * The exited records of a block summed per zone (and socket), with a row
 * for each zone of a node record too, so that a zone's series goes on in
 * intervals without exited records; n set to the rows.
 */
static struct zone_sum *
exited_sums(struct prom *p, const struct family *f, const struct block *b,
    size_t *n)
{
	struct zone_sum *zs = kp_calloc(b->n + 1, sizeof(*zs));
	const struct kp_buf *l;
	const struct kp_record *rec;
	size_t i, j;
	int64_t uj;
	int over = 0;

	for (*n = i = 0; i < b->n; i++) {
		rec = b->recs[i];
		if ((!rec_is(rec, "exited") && !rec_is(rec, "node")) ||
		    kp_rec_get(rec, "zone") == NULL)
			continue;
		l = labels_of(&p->labels, f, b, i);
		for (j = 0; j < *n && (zs[j].labels->len != l->len ||
		    memcmp(zs[j].labels->s, l->s, l->len) != 0); j++)
			;
		if (j == *n)
			zs[(*n)++].labels = l;
		if (!rec_is(rec, "exited") || !kp_rec_int(rec, "energy_uj", &uj))
			continue;
		zs[j].uj = add_saturated(zs[j].uj, uj, &over);
		zs[j].watts += kp_rec_number(rec, "watts");
		zs[j].last = rec;
		zs[j].has = 1;
	}
	return zs;
}

/* The sample of one zone's sum in an exited family. */
static void
exited_sample(struct fmt *ctx, struct prom *p, const struct family *f,
    const struct zone_sum *z)
{
	struct series *s;
	int over = 0;

	kp_buf_add(&p->text, f->name, strlen(f->name));
	kp_buf_add(&p->text, z->labels->s, z->labels->len);
	kp_buf_add(&p->text, " ", 1);
	if (f->kind == GAUGE) {
		put_double(&p->text, z->watts);
		kp_buf_add(&p->text, "\n", 1);
		return;
	}
	p->key.len = 0;
	kp_buf_add(&p->key, f->name, strlen(f->name));
	kp_buf_add(&p->key, z->labels->s, z->labels->len);
	kp_buf_add(&p->key, "", 1);
	s = series_get(p, f, p->key.s);
	s->sum_uj = add_saturated(s->sum_uj, z->uj, &over);
	if (over && z->last != NULL)
		report_saturated(ctx, s, p->key.s, z->last);
	if (f->kind == COUNTER_J)
		put_joules(&p->text, s->sum_uj);
	else
		put_double(&p->text, co2_grams(ctx, s->sum_uj));
	kp_buf_add(&p->text, "\n", 1);
}

/* Whether a zone has had exited records in this stream: its counter. */
static int
exited_seen(struct prom *p, const struct zone_sum *z)
{
	const char *name = exited_families[0].name;

	p->key.len = 0;
	kp_buf_add(&p->key, name, strlen(name));
	kp_buf_add(&p->key, z->labels->s, z->labels->len);
	kp_buf_add(&p->key, "", 1);
	return kp_map_get(p->series, p->key.s) != NULL;
}

/*
 * The exited families: one series per zone, from the zone's first exited
 * record on, with 0 added in an interval without one.
 */
static void
exited_write(struct fmt *ctx, struct prom *p, const struct block *b)
{
	const struct family *f;
	struct zone_sum *zs;
	size_t i, j, n;
	char *show;

	zs = exited_sums(p, &exited_families[0], b, &n);
	show = kp_calloc(n + 1, 1);
	for (j = 0; j < n; j++)
		show[j] = zs[j].has || exited_seen(p, &zs[j]);
	for (i = 0; i < NELEM(exited_families); i++) {
		f = &exited_families[i];
		if (f->kind == COUNTER_CO2 && !ctx->has_carbon)
			continue;
		for (j = 0; j < n && !show[j]; j++)
			;
		if (j < n)
			family_head(&p->text, f);
		for (j = 0; j < n; j++)
			if (show[j])
				exited_sample(ctx, p, f, &zs[j]);
	}
	free(show);
	free(zs);
}

/* The exposition of a block in p->text; it moves the counters on. */
static void
render(struct fmt *ctx, struct prom *p, const struct block *b)
{
	size_t i;

	p->gen++;
	p->text.len = 0;
	labels_prepare(&p->labels, b->n);
	for (i = 0; i < NELEM(families); i++)
		if (families[i].kind != COUNTER_CO2 || ctx->has_carbon)
			family_write(ctx, p, &families[i], b);
	exited_write(ctx, p, b);
	forget_stale(p);
}

/* A new temporary file beside the textfile, for the next exposition. */
static int
textfile_temp(const char *path, char **tmp)
{
	int fd;

	/* No .prom suffix: node_exporter reads only *.prom files. */
	*tmp = kp_asprintf("%s.XXXXXX", path);
	if ((fd = mkstemp(*tmp)) < 0)
		err(KP_EXIT_FAILURE, "textfile '%s': cannot create a file "
		    "in its directory", path);
	return fd;
}

/* At start, so that a directory we cannot write fails now, not later. */
void
textfile_check(const char *path)
{
	char *tmp;
	int fd;

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
prom_new(const char *textfile, int to_stdout)
{
	struct prom *p = kp_calloc(1, sizeof(*p));

	p->to_stdout = to_stdout;
	p->textfile = textfile;
	p->series = kp_map_new();
	return p;
}

static void *
prom_begin(struct fmt *ctx)
{
	return prom_new(prom_writes_textfile(ctx) ? ctx->textfile : NULL, 1);
}

static void *
textfile_begin(struct fmt *ctx)
{
	return prom_new(ctx->textfile, 0);
}

/* The textfile shows whole intervals only. */
static void
prom_block(struct fmt *ctx, void *st, const struct block *b,
    const struct kp_record *interval)
{
	struct prom *p = st;

	if (interval == NULL && b->n == 0)
		return;
	render(ctx, p, b);
	if (p->to_stdout) {
		kp_buf_add(&ctx->out, p->text.s, p->text.len);
		kp_buf_add(&ctx->out, "\n", 1);
	}
	if (p->textfile != NULL && interval != NULL)
		textfile_write(p);
}

static void
prom_end(struct fmt *ctx, void *st, const struct block *rest)
{
	struct prom *p = st;

	prom_block(ctx, st, rest, NULL);
	kp_map_free(p->series, free);
	labels_free(&p->labels);
	free(p->text.s);
	free(p->key.s);
	free(p);
}

const struct format fmt_prometheus = {
	"prometheus", prom_begin, prom_block, NULL, prom_end
};

const struct format fmt_textfile = {
	"textfile", textfile_begin, prom_block, NULL, prom_end
};
