/*
 * -f prometheus and --textfile: at each interval, a complete exposition in
 * the Prometheus text format 0.0.4, with the metric families and labels of
 * Kepler.  A counter series keeps what it showed, so that it never goes
 * backwards; a workload's series without a sample for a while is
 * forgotten.  The node's name, from the stream's header, labels every
 * series; the node zone, every zone counted once, has families of its own,
 * so that a sum over a kepler_* family's zones counts nothing twice.
 */
#include <err.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fmt.h"
#include "build.h"

/*
 * kepler_build_info's arch, as Go's GOARCH names it, and its goversion,
 * the C compiler and its version: both as the compiler knows them.
 */
#define STR_(x) #x
#define STR(x) STR_(x)
#if defined(__x86_64__)
#define BUILD_ARCH "amd64"
#elif defined(__aarch64__)
#define BUILD_ARCH "arm64"
#elif defined(__i386__)
#define BUILD_ARCH "386"
#elif defined(__arm__)
#define BUILD_ARCH "arm"
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define BUILD_ARCH "ppc64le"
#elif defined(__powerpc64__)
#define BUILD_ARCH "ppc64"
#elif defined(__s390x__)
#define BUILD_ARCH "s390x"
#elif defined(__riscv) && __riscv_xlen == 64
#define BUILD_ARCH "riscv64"
#else
#define BUILD_ARCH "unknown"
#endif
#if defined(__clang__)
#define BUILD_COMPILER "clang " STR(__clang_major__) "." \
    STR(__clang_minor__) "." STR(__clang_patchlevel__)
#elif defined(__GNUC__)
#define BUILD_COMPILER "gcc " STR(__GNUC__) "." STR(__GNUC_MINOR__) "." \
    STR(__GNUC_PATCHLEVEL__)
#else
#define BUILD_COMPILER "unknown"
#endif

/*
 * A COUNTER_S family counts seconds of CPU time, the same in each zone's
 * record of a workload: it has no zone label, and takes one record per
 * series and interval.
 */
enum { GAUGE, COUNTER_J, COUNTER_CO2, COUNTER_S };

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

/*
 * Label sets, shared by the families that have them; every series also has
 * node_name where the stream names its node.  A name that starts with '='
 * is one of Kepler's labels that no record field holds as it is, made
 * from the record (label_mapped).
 */
static const char *const no_labels[] = { NULL };
static const char *const zone_labels[] = { "zone", "?socket", NULL };
static const char *const node_labels[] = {
	"zone", "=path", "?socket", NULL
};
static const char *const source_labels[] = { "source", "?socket", NULL };
static const char *const process_labels[] = {
	"pid", "comm", "exe", "=type", "zone", "state", "container_id",
	"pod_id", "vm_id", "?socket", NULL
};
static const char *const process_cpu_labels[] = {
	"pid", "comm", "exe", "=type", "container_id", "pod_id", "vm_id", NULL
};
static const char *const container_labels[] = {
	"container_id", "container_name", "=runtime", "pod_id", "zone",
	"?state", NULL
};
static const char *const container_cpu_labels[] = {
	"container_id", "container_name", "=runtime", "pod_id", NULL
};
static const char *const pod_labels[] = {
	"pod_id", "pod_name", "pod_namespace", "zone", "?state", NULL
};
static const char *const vm_labels[] = {
	"vm_id", "vm_name", "=hypervisor", "zone", "?state", NULL
};
static const char *const unit_labels[] = { "unit", "zone", "?state", NULL };
static const char *const group_labels[] = {
	"by", "group", "zone", "?state", NULL
};
static const char *const host_labels[] = { "level", "zone", NULL };
/*
 * Exited records fold by parent and comm; their series fold further, by
 * comm and the group they ran in, without pid or ppid: a build's many
 * short processes make a few series per container, pod, VM or unit.
 */
static const char *const exited_labels[] = {
	"comm", "=type", "container_id", "pod_id", "vm_id", "unit", "zone",
	"?socket", NULL
};

static const struct family families[] = {
	{ "kepler_node_cpu_joules_total", "node", "energy", NULL,
	    "total_uj", "energy_uj", COUNTER_J, node_labels,
	    "Energy used by the CPU zone of the node, in joules" },
	{ "kepler_node_cpu_active_joules_total", "node", NULL, NULL,
	    "active_total_uj", "active_uj", COUNTER_J, node_labels,
	    "Energy used by the CPU zone of the node while active, in "
	    "joules" },
	{ "kepler_node_cpu_idle_joules_total", "node", NULL, NULL,
	    "idle_total_uj", "idle_uj", COUNTER_J, node_labels,
	    "Energy used by the CPU zone of the node while idle, in joules" },
	{ "kepler_node_cpu_watts", "node", "energy", NULL,
	    "watts", NULL, GAUGE, node_labels,
	    "Power of the CPU zone of the node, in watts" },
	{ "kepler_node_cpu_active_watts", "node", NULL, NULL,
	    "active_watts", NULL, GAUGE, node_labels,
	    "Power of the CPU zone of the node while active, in watts" },
	{ "kepler_node_cpu_idle_watts", "node", NULL, NULL,
	    "idle_watts", NULL, GAUGE, node_labels,
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
	{ "kepler_process_cpu_seconds_total", "process", NULL, NULL,
	    NULL, "cpu_us", COUNTER_S, process_cpu_labels,
	    "CPU time of the process, user and system, in seconds, since "
	    "kp-fmt first saw it" },
	{ "kepler_container_cpu_joules_total", "container", NULL, NULL,
	    "total_uj", "energy_uj", COUNTER_J, container_labels,
	    "Energy attributed to the container, in joules" },
	{ "kepler_container_cpu_watts", "container", NULL, NULL,
	    "watts", NULL, GAUGE, container_labels,
	    "Power attributed to the container, in watts" },
	{ "kepler_container_cpu_seconds_total", "container", NULL, NULL,
	    NULL, "cpu_us", COUNTER_S, container_cpu_labels,
	    "CPU time of the container's processes, user and system, in "
	    "seconds, since kp-fmt first saw it" },
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
 * energy is summed per comm, group and zone (exited_labels), so that
 * process, exited, unattributed and idle kept series still add up to the
 * node's.
 */
static const struct family exited_families[] = {
	{ "kp_exited_cpu_joules_total", "exited", NULL, NULL,
	    NULL, "energy_uj", COUNTER_J, exited_labels,
	    "Energy attributed to processes born and ended inside an "
	    "interval, in joules" },
	{ "kp_exited_cpu_watts", "exited", NULL, NULL,
	    "watts", NULL, GAUGE, exited_labels,
	    "Power attributed to processes born and ended inside an "
	    "interval, in watts" },
	{ "kp_exited_cpu_co2_grams_total", "exited", NULL, NULL,
	    NULL, "energy_uj", COUNTER_CO2, exited_labels,
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

/*
 * An exited series goes on, at 0 W, in intervals without exited records
 * of its comm and group, and is forgotten after this many: processes that
 * a cron job or a build starts again and again keep one counter, and
 * those of a group gone leave.
 */
#define EXITED_FORGET_INTERVALS 60

/* One counter series: what it showed, so that it never goes backwards. */
struct series {
	int64_t last_in;	/* the cumulative field as last read */
	int64_t offset;		/* added after the input's total fell */
	int64_t sum_uj;		/* kp-fmt's own total, from the deltas */
	int64_t shown_uj;	/* the counter's last sample */
	int seen;
	int saturated;		/* reported as held at INT64_MAX */
	int ended;		/* its last record said terminated */
	unsigned forget_after;	/* intervals without a sample; 0: never */
	unsigned long seen_gen;	/* the block it last had a sample in */
};

/*
 * The label text of each record of a block for one label set, made once
 * for the families that share the set.
 */
struct labels {
	const char *const *set;
	int node_zone;			/* the node zone's: no zone label */
	struct kp_buf *text;		/* one per record */
	char *made;			/* text[i] is made */
	signed char *in_node_zone;	/* record i's zone is node; -1: unknown */
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
	char *node_name;		/* the header's; NULL: none */
	const char *default_node_name;	/* --node-name; NULL: none */
	struct kp_buf cpu_info;		/* kepler_node_cpu_info's samples */
	char *hidden;			/* record i has no sample */
	size_t hidden_cap;
	char *node_zone_name[NELEM(families)];	/* NULL: not zoned */
	char *exited_node_zone_name[NELEM(exited_families)];
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

/* Kepler's process type: vm, container (in a container), or regular. */
static const char *
process_type(const struct kp_record *rec)
{
	if (kp_rec_get(rec, "vm_id") != NULL)
		return "vm";
	return kp_rec_get(rec, "container_id") != NULL ? "container" :
	    "regular";
}

/*
 * Kepler's runtime of a container: kp's cri-o is crio; a container of a
 * pod whose runtime is not known is kubernetes's, any other unknown.
 */
static const char *
container_runtime(const struct kp_record *rec)
{
	static const char *const names[][2] = {
		{ "docker", "docker" }, { "containerd", "containerd" },
		{ "cri-o", "crio" }, { "podman", "podman" }
	};
	const char *runtime = kp_rec_str(rec, "runtime");
	size_t i;

	for (i = 0; runtime != NULL && i < NELEM(names); i++)
		if (strcmp(runtime, names[i][0]) == 0)
			return names[i][1];
	return kp_rec_get(rec, "pod_id") != NULL ? "kubernetes" : "unknown";
}

/* Kepler's hypervisor of a VM: kvm for kp's qemu, as Kepler names QEMU's. */
static const char *
vm_hypervisor(const struct kp_record *rec)
{
	const char *hypervisor = kp_rec_str(rec, "hypervisor");

	if (hypervisor == NULL)
		return "unknown";
	return strcmp(hypervisor, "qemu") == 0 ? "kvm" : hypervisor;
}

/*
 * The value of one of Kepler's labels that no record field holds as it
 * is.  path is the sysfs directory of the zone's counter, which an energy
 * record (and the node record drawn from it) names only where its energy
 * comes from one counter; empty for a sum of several sockets' counters,
 * as Kepler writes what it does not know.
 */
static const char *
label_mapped(const char *name, const struct kp_record *rec)
{
	const char *path;

	if (strcmp(name, "type") == 0)
		return process_type(rec);
	if (strcmp(name, "runtime") == 0)
		return container_runtime(rec);
	if (strcmp(name, "path") == 0)
		return (path = kp_rec_str(rec, "path")) != NULL ? path : "";
	return strcmp(name, "hypervisor") == 0 ? vm_hypervisor(rec) : "";
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

/* ,name="value" or name="value" as the first label. */
static void
label_pair(struct kp_buf *b, size_t *n, const char *name, const char *value,
    const struct kp_record *rec)
{
	if ((*n)++ > 0)
		kp_buf_add(b, ",", 1);
	kp_buf_add(b, name, strlen(name));
	kp_buf_add(b, "=\"", 2);
	if (value != NULL)
		label_text(b, value);
	else
		label_value(b, name, rec);
	kp_buf_add(b, "\"", 1);
}

/* The node's name for the labels: the stream's, else --node-name's. */
static const char *
node_name(const struct prom *p)
{
	return p->node_name != NULL ? p->node_name : p->default_node_name;
}

/*
 * {name="value",...} of a record, node_name last, or nothing for a series
 * without labels; the node zone's families have no zone label.
 */
static void
labels_make(const struct prom *p, struct kp_buf *b, const struct family *f,
    const struct kp_record *rec, int node_zone)
{
	const char *name;
	size_t i, n = 0;

	b->len = 0;
	kp_buf_add(b, "{", 1);
	for (i = 0; f->labels[i] != NULL; i++) {
		name = f->labels[i];
		if (*name == '?' && kp_rec_get(rec, ++name) == NULL)
			continue;
		if (node_zone && strcmp(name, "zone") == 0)
			continue;
		if (*name == '=')
			label_pair(b, &n, name + 1, label_mapped(name + 1, rec),
			    rec);
		else
			label_pair(b, &n, name, NULL, rec);
	}
	if (node_name(p) != NULL)
		label_pair(b, &n, "node_name", node_name(p), rec);
	if (n == 0)
		b->len = 0;
	else
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
		l->in_node_zone = kp_reallocarray(l->in_node_zone, n, 1);
		l->cap = n;
	}
	if (n > 0)
		memset(l->in_node_zone, -1, n);
	l->set = NULL;
}

/* The labels of record i of b in family f, or in its node zone family. */
static const struct kp_buf *
labels_of(struct prom *p, const struct family *f, const struct block *b,
    size_t i, int node_zone)
{
	struct labels *l = &p->labels;

	if (l->set != f->labels || l->node_zone != node_zone) {
		l->set = f->labels;
		l->node_zone = node_zone;
		memset(l->made, 0, b->n);
	}
	if (!l->made[i]) {
		labels_make(p, &l->text[i], f, b->recs[i], node_zone);
		l->made[i] = 1;
	}
	return &l->text[i];
}

/* Whether record i of b is of the node zone, looked up once a block. */
static int
in_node_zone(struct labels *l, const struct block *b, size_t i)
{
	const char *zone;

	if (l->in_node_zone[i] < 0) {
		zone = kp_rec_str(b->recs[i], "zone");
		l->in_node_zone[i] = zone != NULL && strcmp(zone, "node") == 0;
	}
	return l->in_node_zone[i];
}

static void
labels_free(struct labels *l)
{
	size_t i;

	for (i = 0; i < l->cap; i++)
		free(l->text[i].s);
	free(l->text);
	free(l->made);
	free(l->in_node_zone);
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

	if (s->forget_after == 0 || st->gen - s->seen_gen < s->forget_after)
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

/* The series of p->key; *fresh: not sampled yet in this block. */
static struct series *
series_get(struct prom *p, const struct family *f, int *fresh)
{
	struct series *s;

	if ((s = kp_map_get(p->series, p->key.s)) == NULL) {
		s = kp_calloc(1, sizeof(*s));
		if (strcmp(f->rectype, "exited") == 0)
			s->forget_after = EXITED_FORGET_INTERVALS;
		else if (str_in_list(workload_types, f->rectype))
			s->forget_after = FORGET_INTERVALS;
		kp_map_put(p->series, p->key.s, s);
		s->seen_gen = p->gen - 1;
	}
	*fresh = s->seen_gen != p->gen;
	s->seen_gen = p->gen;
	return s;
}

/*
 * The cumulative microjoules (or microseconds) of counter series s: the
 * record's own total, with anything the total lost in a reset (a restarted
 * stage) kept, or kp-fmt's own sum of the interval's part when the record
 * has no total.  Returns 0 when the record has neither.
 */
static int
counter_uj(struct fmt *ctx, struct prom *p, struct series *s,
    const struct family *f, const struct kp_record *rec, int64_t *uj)
{
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
    const struct family *f, const char *name, const struct kp_record *rec,
    const struct kp_buf *labels)
{
	const struct kp_field *v;
	struct series *s;
	int64_t uj;
	int fresh;

	if (f->kind == GAUGE) {
		v = kp_rec_get(rec, f->field);
		if (v == NULL || (v->kind != KP_V_INT && v->kind != KP_V_REAL))
			return 0;
		put_number(out, v);
		return 1;
	}
	p->key.len = 0;
	kp_buf_add(&p->key, name, strlen(name));
	kp_buf_add(&p->key, labels->s, labels->len);
	kp_buf_add(&p->key, "", 1);
	s = series_get(p, f, &fresh);
	/* A zone's record after the first repeats the CPU time. */
	if (f->kind == COUNTER_S && !fresh)
		return 0;
	if (!counter_uj(ctx, p, s, f, rec, &uj))
		return 0;
	if (f->kind == COUNTER_CO2)
		put_double(out, co2_grams(ctx, uj));
	else
		put_joules(out, uj);
	return 1;
}

/* Whether family f has a zone label, and so a node zone family. */
static int
family_zoned(const struct family *f)
{
	return str_in_list(f->labels, "zone");
}

/*
 * Whether record i of b has a sample in family f, or in its node zone
 * family; zoned: f has a zone label.
 */
static int
family_has(struct prom *p, const struct family *f, int zoned,
    const struct block *b, size_t i, int node_zone)
{
	const struct kp_record *rec = b->recs[i];
	const char *zone;

	if (p->hidden[i] || (!rec_is(rec, f->rectype) &&
	    (f->rectype2 == NULL || !rec_is(rec, f->rectype2))))
		return 0;
	if (zoned && in_node_zone(&p->labels, b, i) != node_zone)
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
family_head(struct kp_buf *out, const struct family *f, const char *name,
    int node_zone)
{
	kp_buf_printf(out, "# HELP %s %s%s\n", name, f->help, node_zone ?
	    ", in the node zone: every zone counted once" : "");
	kp_buf_printf(out, "# TYPE %s %s\n", name,
	    f->kind == GAUGE ? "gauge" : "counter");
}

/* One sample: name{labels} value; its HELP and TYPE before the first. */
static void
family_sample(struct fmt *ctx, struct prom *p, const struct family *f,
    const char *name, int node_zone, const struct kp_record *rec,
    const struct kp_buf *labels, size_t *samples)
{
	struct kp_buf *out = &p->text;
	size_t mark = out->len;

	if (*samples == 0)
		family_head(out, f, name, node_zone);
	kp_buf_add(out, name, strlen(name));
	kp_buf_add(out, labels->s, labels->len);
	kp_buf_add(out, " ", 1);
	if (!sample_value(ctx, p, out, f, name, rec, labels)) {
		out->len = mark;
		return;
	}
	kp_buf_add(out, "\n", 1);
	(*samples)++;
}

/* Whether records a and b are of one zone and socket. */
static int
same_zone(const struct kp_record *a, const struct kp_record *b)
{
	const char *za = kp_rec_str(a, "zone"), *zb = kp_rec_str(b, "zone");
	int64_t sa = -1, sb = -1;

	kp_rec_int(a, "socket", &sa);
	kp_rec_int(b, "socket", &sb);
	return sa == sb && (za == NULL ? zb == NULL :
	    zb != NULL && strcmp(za, zb) == 0);
}

/*
 * Family number fi, or its node zone family, of block b.  A COUNTER_S
 * family takes the records of the first zone it finds: the others repeat
 * their CPU time.
 */
static void
family_write(struct fmt *ctx, struct prom *p, size_t fi,
    const struct block *b, int node_zone)
{
	const struct family *f = &families[fi];
	const char *name = node_zone ? p->node_zone_name[fi] : f->name;
	const struct kp_record *first = NULL;
	int zoned = family_zoned(f);
	size_t i, samples = 0;

	for (i = 0; i < b->n; i++) {
		if (!family_has(p, f, zoned, b, i, node_zone))
			continue;
		if (first == NULL)
			first = b->recs[i];
		else if (f->kind == COUNTER_S && !same_zone(first, b->recs[i]))
			continue;
		family_sample(ctx, p, f, name, node_zone, b->recs[i],
		    labels_of(p, f, b, i, node_zone), &samples);
		/* Without labels a second sample would repeat the series. */
		if (f->labels[0] == NULL && samples > 0)
			break;
	}
}

/*
 * The name of family f's node zone family: kp_ for kepler_, and total for
 * cpu, as in kp_process_total_joules_total; NULL for a family without a
 * zone label.
 */
static char *
node_zone_name(const struct family *f)
{
	const char *name = f->name, *cpu;

	if (!family_zoned(f) || (cpu = strstr(name, "_cpu_")) == NULL)
		return NULL;
	if (strncmp(name, "kepler_", 7) == 0)
		name += 7;
	else if (strncmp(name, "kp_", 3) == 0)
		name += 3;
	return kp_asprintf("kp_%.*s_total_%s", (int)(cpu - name), name,
	    cpu + 5);
}

/* Whether a record of b is of the node zone. */
static int
block_in_node_zone(struct prom *p, const struct block *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		if (in_node_zone(&p->labels, b, i))
			return 1;
	return 0;
}

/* kepler_build_info: what kp-fmt is, as Kepler says what it is. */
static void
build_info(struct prom *p)
{
	struct kp_buf *out = &p->text;
	size_t n = 0;

	kp_buf_printf(out, "# HELP kepler_build_info The build of kp-fmt: its "
	    "version, git branch and revision, CPU architecture, and in "
	    "goversion its C compiler; always 1\n"
	    "# TYPE kepler_build_info gauge\nkepler_build_info{");
	label_pair(out, &n, "arch", BUILD_ARCH, NULL);
	label_pair(out, &n, "branch", BUILD_BRANCH, NULL);
	label_pair(out, &n, "revision", BUILD_REVISION, NULL);
	label_pair(out, &n, "version", VERSION, NULL);
	label_pair(out, &n, "goversion", BUILD_COMPILER, NULL);
	if (node_name(p) != NULL)
		label_pair(out, &n, "node_name", node_name(p), NULL);
	kp_buf_add(out, "} 1\n", 4);
}

/*
 * The exited records of one comm, group and zone in a block: their labels
 * and sums; or, has 0, a series carried on from an earlier interval.
 */
struct exited_sum {
	const struct kp_buf *labels;
	const struct kp_record *last;	/* for a message */
	int64_t uj;
	double watts;
	int has;			/* it has exited records */
};

/* The row of zs[0..*n) with labels l, added when there is none. */
static struct exited_sum *
exited_row(struct exited_sum *zs, size_t *n, const struct kp_buf *l)
{
	size_t j;

	for (j = 0; j < *n && (zs[j].labels->len != l->len ||
	    memcmp(zs[j].labels->s, l->s, l->len) != 0); j++)
		;
	if (j == *n)
		zs[(*n)++].labels = l;
	return &zs[j];
}

/*
 * The exited records of a block summed per label set (exited_labels); n
 * set to the rows, with room for carried more.  The node zone's records
 * alone, or all the others.
 */
static struct exited_sum *
exited_sums(struct prom *p, const struct family *f, const struct block *b,
    int node_zone, size_t carried, size_t *n)
{
	struct exited_sum *zs = kp_calloc(b->n + carried + 1, sizeof(*zs));
	struct exited_sum *z;
	const struct kp_record *rec;
	size_t i;
	int64_t uj;
	int over = 0;

	for (*n = i = 0; i < b->n; i++) {
		rec = b->recs[i];
		if (!rec_is(rec, "exited") || kp_rec_get(rec, "zone") == NULL ||
		    in_node_zone(&p->labels, b, i) != node_zone ||
		    !kp_rec_int(rec, "energy_uj", &uj))
			continue;
		z = exited_row(zs, n, labels_of(p, f, b, i, node_zone));
		z->uj = add_saturated(z->uj, uj, &over);
		z->watts += kp_rec_number(rec, "watts");
		z->last = rec;
		z->has = 1;
	}
	return zs;
}

/*
 * The sample of one row in an exited family, named name.  A carried row
 * adds nothing and leaves its series' age alone, so that it is forgotten
 * EXITED_FORGET_INTERVALS after its last exited record.
 */
static void
exited_sample(struct fmt *ctx, struct prom *p, const struct family *f,
    const char *name, const struct exited_sum *z)
{
	struct series *s = NULL;
	int over = 0, fresh;

	p->key.len = 0;
	kp_buf_add(&p->key, name, strlen(name));
	kp_buf_add(&p->key, z->labels->s, z->labels->len);
	kp_buf_add(&p->key, "", 1);
	if (f->kind != GAUGE && (s = z->has ? series_get(p, f, &fresh) :
	    kp_map_get(p->series, p->key.s)) == NULL)
		return;
	kp_buf_add(&p->text, p->key.s, p->key.len - 1);
	kp_buf_add(&p->text, " ", 1);
	if (f->kind == GAUGE) {
		put_double(&p->text, z->watts);
		kp_buf_add(&p->text, "\n", 1);
		return;
	}
	if (z->has) {
		s->sum_uj = add_saturated(s->sum_uj, z->uj, &over);
		if (over)
			report_saturated(ctx, s, p->key.s, z->last);
	}
	if (f->kind == COUNTER_J)
		put_joules(&p->text, s->sum_uj);
	else
		put_double(&p->text, co2_grams(ctx, s->sum_uj));
	kp_buf_add(&p->text, "\n", 1);
}

/* The label texts of one exited family's series, gathered from the map. */
struct carried {
	unsigned long gen;		/* the block's */
	const char *name;		/* the family's */
	size_t name_len;
	struct kp_buf *labels;
	size_t n, cap;
};

static void
carried_collect(const char *key, void *val, void *arg)
{
	const struct series *s = val;
	struct carried *c = arg;

	/* One that forget_stale is about to forget is gone already. */
	if (strncmp(key, c->name, c->name_len) != 0 ||
	    key[c->name_len] != '{' ||
	    c->gen - s->seen_gen >= s->forget_after)
		return;
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 16;
		c->labels = kp_reallocarray(c->labels, c->cap,
		    sizeof(*c->labels));
	}
	memset(&c->labels[c->n], 0, sizeof(c->labels[c->n]));
	kp_buf_add(&c->labels[c->n], key + c->name_len,
	    strlen(key + c->name_len));
	c->n++;
}

static int
buf_cmp(const void *a, const void *b)
{
	const struct kp_buf *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int d = memcmp(x->s, y->s, n);

	return d != 0 ? d : (x->len > y->len) - (x->len < y->len);
}

/*
 * The exited families, or the node zone's: a series per comm, group and
 * zone, from its first exited record on, with 0 added and 0 W in an
 * interval without one, in the order of their labels.
 */
static void
exited_write(struct fmt *ctx, struct prom *p, const struct block *b,
    int node_zone)
{
	const char *names[NELEM(exited_families)];
	struct carried c = { 0 };
	struct exited_sum *zs;
	size_t i, j, n;

	for (i = 0; i < NELEM(exited_families); i++)
		names[i] = node_zone ? p->exited_node_zone_name[i] :
		    exited_families[i].name;
	c.gen = p->gen;
	c.name = names[0];
	c.name_len = strlen(names[0]);
	kp_map_each(p->series, carried_collect, &c);
	if (c.n > 0)	/* qsort of a null array is undefined */
		qsort(c.labels, c.n, sizeof(*c.labels), buf_cmp);
	zs = exited_sums(p, &exited_families[0], b, node_zone, c.n, &n);
	for (j = 0; j < c.n; j++)
		exited_row(zs, &n, &c.labels[j]);
	for (i = 0; i < NELEM(exited_families) && n > 0; i++) {
		if (exited_families[i].kind == COUNTER_CO2 && !ctx->has_carbon)
			continue;
		family_head(&p->text, &exited_families[i], names[i],
		    node_zone);
		for (j = 0; j < n; j++)
			exited_sample(ctx, p, &exited_families[i], names[i],
			    &zs[j]);
	}
	for (j = 0; j < c.n; j++)
		free(c.labels[j].s);
	free(c.labels);
	free(zs);
}

/* A workload that ended in the block: its energy, whether it is shown. */
struct ended {
	int64_t uj;
	int shown;
};

static int
by_energy_desc(const void *a, const void *b)
{
	const struct ended *x = *(struct ended *const *)a;
	const struct ended *y = *(struct ended *const *)b;

	return (x->uj < y->uj) - (x->uj > y->uj);
}

/* The family of joules of a workload record type. */
static const struct family *
joules_family(const char *type)
{
	size_t i;

	for (i = 0; i < NELEM(families); i++)
		if (families[i].kind == COUNTER_J &&
		    strcmp(families[i].rectype, type) == 0)
			return &families[i];
	return NULL;
}

/*
 * The workload of terminated record rec in ended, keyed by its type and its
 * labels but zone; its energy added, over every zone but node, which
 * counts each once more.
 */
static struct ended *
ended_add(struct prom *p, struct kp_map *ended, struct kp_buf *key,
    const struct kp_record *rec)
{
	struct ended *e;
	const char *zone = kp_rec_str(rec, "zone");
	int64_t uj = 0;
	int over = 0;

	labels_make(p, key, joules_family(rec->type), rec, 1);
	kp_buf_add(key, rec->type, strlen(rec->type) + 1);
	if ((e = kp_map_get(ended, key->s)) == NULL) {
		e = kp_calloc(1, sizeof(*e));
		kp_map_put(ended, key->s, e);
	}
	if (!kp_rec_int(rec, "total_uj", &uj))
		kp_rec_int(rec, "energy_uj", &uj);
	if (zone == NULL || strcmp(zone, "node") != 0)
		e->uj = add_saturated(e->uj, uj, &over);
	return e;
}

static void
ended_list(const char *key, void *val, void *arg)
{
	struct ended ***at = arg;

	(void)key;
	*(*at)++ = val;
}

/*
 * Kepler's bound on terminated workloads: those below
 * --min-terminated-energy are shown no more, and of the rest the
 * --max-terminated with the most energy.
 */
static void
ended_choose(struct fmt *ctx, struct kp_map *ended)
{
	struct ended **v, **at;
	size_t i, n = kp_map_count(ended);

	at = v = kp_calloc(n + 1, sizeof(*v));
	kp_map_each(ended, ended_list, &at);
	qsort(v, n, sizeof(*v), by_energy_desc);
	for (i = 0; i < n; i++)
		v[i]->shown = v[i]->uj >= ctx->min_terminated_uj &&
		    i < (size_t)ctx->max_terminated;
	free(v);
}

/*
 * Which records of b have no sample: terminated workloads past the bound,
 * and with --hide-idle, processes without CPU time.
 */
static void
hide_records(struct fmt *ctx, struct prom *p, const struct block *b)
{
	struct kp_map *ended = kp_map_new();
	struct ended **of = kp_calloc(b->n + 1, sizeof(*of));
	struct kp_buf key = { 0 };
	const struct kp_record *rec;
	int64_t cpu_us;
	size_t i;

	if (b->n > p->hidden_cap) {
		p->hidden = kp_reallocarray(p->hidden, b->n, 1);
		p->hidden_cap = b->n;
	}
	for (i = 0; i < b->n; i++) {
		rec = b->recs[i];
		p->hidden[i] = ctx->hide_idle && rec_is(rec, "process") &&
		    !kp_rec_terminated(rec) &&
		    kp_rec_int(rec, "cpu_us", &cpu_us) && cpu_us == 0;
		if (kp_rec_terminated(rec) &&
		    str_in_list(workload_types, rec->type))
			of[i] = ended_add(p, ended, &key, rec);
	}
	ended_choose(ctx, ended);
	for (i = 0; i < b->n; i++)
		if (of[i] != NULL)
			p->hidden[i] = !of[i]->shown;
	free(of);
	free(key.s);
	kp_map_free(ended, free);
}

/* The exposition of a block in p->text; it moves the counters on. */
static void
render(struct fmt *ctx, struct prom *p, const struct block *b)
{
	size_t i;

	p->gen++;
	p->text.len = 0;
	labels_prepare(&p->labels, b->n);
	hide_records(ctx, p, b);
	build_info(p);
	kp_buf_add(&p->text, p->cpu_info.s, p->cpu_info.len);
	for (i = 0; i < NELEM(families); i++)
		if (families[i].kind != COUNTER_CO2 || ctx->has_carbon)
			family_write(ctx, p, i, b, 0);
	exited_write(ctx, p, b, 0);
	if (!block_in_node_zone(p, b)) {
		forget_stale(p);
		return;
	}
	for (i = 0; i < NELEM(families); i++)
		if (p->node_zone_name[i] != NULL &&
		    (families[i].kind != COUNTER_CO2 || ctx->has_carbon))
			family_write(ctx, p, i, b, 1);
	exited_write(ctx, p, b, 1);
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
prom_new(const struct fmt *ctx, const char *textfile, int to_stdout)
{
	struct prom *p = kp_calloc(1, sizeof(*p));
	size_t i;

	p->to_stdout = to_stdout;
	p->textfile = textfile;
	p->series = kp_map_new();
	p->default_node_name = ctx->node_name;
	for (i = 0; i < NELEM(families); i++)
		p->node_zone_name[i] = node_zone_name(&families[i]);
	for (i = 0; i < NELEM(exited_families); i++)
		p->exited_node_zone_name[i] =
		    node_zone_name(&exited_families[i]);
	return p;
}

static void *
prom_begin(struct fmt *ctx)
{
	return prom_new(ctx, prom_writes_textfile(ctx) ? ctx->textfile : NULL,
	    1);
}

static void *
textfile_begin(struct fmt *ctx)
{
	return prom_new(ctx, ctx->textfile, 0);
}

/* Whether processor number v has a sample already: it is in seen. */
static int
processor_seen(json_t *seen, json_int_t v)
{
	size_t i;

	for (i = 0; i < json_array_size(seen); i++)
		if (json_integer_value(json_array_get(seen, i)) == v)
			return 1;
	return 0;
}

/*
 * One processor of the header's cpu_info as a kepler_node_cpu_info
 * sample, what is unknown empty; none for an element without a processor
 * number or with one already written, which would repeat a series.
 */
static void
cpu_info_sample(struct prom *p, json_t *cpu, json_t *seen)
{
	static const char *const keys[] = {
		"processor", "vendor_id", "model_name", "physical_id", "core_id"
	};
	struct kp_buf *out = &p->cpu_info;
	json_t *v = json_object_get(cpu, "processor");
	char num[32];
	size_t i, n = 0;

	if (!json_is_integer(v) || processor_seen(seen, json_integer_value(v)))
		return;
	json_array_append(seen, v);
	kp_buf_add(out, "kepler_node_cpu_info{", 21);
	for (i = 0; i < NELEM(keys); i++) {
		v = json_object_get(cpu, keys[i]);
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
		    json_integer_value(v));
		label_pair(out, &n, keys[i], json_is_integer(v) ? num :
		    json_is_string(v) ? json_string_value(v) : "", NULL);
	}
	if (node_name(p) != NULL)
		label_pair(out, &n, "node_name", node_name(p), NULL);
	kp_buf_add(out, "} 1\n", 4);
}

/* The samples of kepler_node_cpu_info, from a header's cpu_info. */
static void
cpu_info_make(struct prom *p, const struct kp_field *f)
{
	json_t *cpus, *seen = json_array();
	size_t i;

	kp_buf_printf(&p->cpu_info, "# HELP kepler_node_cpu_info The "
	    "node's processors, as its header names them; always 1\n"
	    "# TYPE kepler_node_cpu_info gauge\n");
	cpus = json_loadb(f->raw, f->rawlen, 0, NULL);
	for (i = 0; i < json_array_size(cpus); i++)
		cpu_info_sample(p, json_array_get(cpus, i), seen);
	if (json_array_size(seen) == 0)
		p->cpu_info.len = 0;
	json_decref(cpus);
	json_decref(seen);
}

/*
 * A header starts a stream: its node_name and cpu_info label what comes
 * after it, and a header without them leaves them unknown.
 */
static void
prom_header(struct fmt *ctx, void *st, const struct kp_record *rec)
{
	struct prom *p = st;
	const struct kp_field *f = kp_rec_get(rec, "cpu_info");
	const char *name = kp_rec_str(rec, "node_name");

	(void)ctx;
	free(p->node_name);
	p->node_name = name != NULL ? kp_strdup(name) : NULL;
	p->cpu_info.len = 0;
	if (f != NULL && f->kind == KP_V_ARRAY)
		cpu_info_make(p, f);
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
	size_t i;

	prom_block(ctx, st, rest, NULL);
	kp_map_free(p->series, free);
	labels_free(&p->labels);
	free(p->text.s);
	free(p->key.s);
	free(p->node_name);
	free(p->cpu_info.s);
	free(p->hidden);
	for (i = 0; i < NELEM(families); i++)
		free(p->node_zone_name[i]);
	for (i = 0; i < NELEM(exited_families); i++)
		free(p->exited_node_zone_name[i]);
	free(p);
}

const struct format fmt_prometheus = {
	"prometheus", prom_begin, prom_block, prom_header, prom_end
};

const struct format fmt_textfile = {
	"textfile", textfile_begin, prom_block, prom_header, prom_end
};
