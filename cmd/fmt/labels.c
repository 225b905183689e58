/*
 * The labels of a record's series: its fields by a family's label set,
 * and Kepler's values that no field holds as it is (type, runtime,
 * hypervisor, path), made from the record.
 */
#include <stdlib.h>
#include <string.h>

#include "prom.h"

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
 * as Kepler writes what it does not know.  gpu and gpu_uuid are a GPU's
 * device and uuid (kp-records(5)), Kepler's names for them.
 */
static const char *
label_mapped(const char *name, const struct kp_record *rec)
{
	const char *v;

	if (strcmp(name, "type") == 0)
		return process_type(rec);
	if (strcmp(name, "runtime") == 0)
		return container_runtime(rec);
	if (strcmp(name, "path") == 0)
		return (v = kp_rec_str(rec, "path")) != NULL ? v : "";
	if (strcmp(name, "gpu") == 0)
		return (v = kp_rec_str(rec, "device")) != NULL ? v : "";
	if (strcmp(name, "gpu_uuid") == 0)
		return (v = kp_rec_str(rec, "uuid")) != NULL ? v : "";
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
void
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
const char *
node_name(const struct prom *p)
{
	return p->node_name != NULL ? p->node_name : p->default_node_name;
}

/*
 * {name="value",...} of a record, node_name last, or nothing for a series
 * without labels, less the labels in leave_out, a NULL-ended list.
 */
static void
labels_less(const struct prom *p, struct kp_buf *b, const struct family *f,
    const struct kp_record *rec, const char *const *leave_out)
{
	const char *name;
	size_t i, n = 0;

	b->len = 0;
	kp_buf_add(b, "{", 1);
	for (i = 0; f->labels[i] != NULL; i++) {
		name = f->labels[i];
		if (*name == '?' && kp_rec_get(rec, ++name) == NULL)
			continue;
		if (str_in_list(leave_out, name))
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

/* A record's labels; the node zone's families have no zone label. */
void
labels_make(const struct prom *p, struct kp_buf *b, const struct family *f,
    const struct kp_record *rec, int node_zone)
{
	static const char *const zone[] = { "zone", NULL };

	labels_less(p, b, f, rec, node_zone ? zone : zone + 1);
}

/*
 * What names a workload in family f across its records and zones: its
 * labels less zone, and less state, which its last record changes to
 * terminated.
 */
void
labels_workload(const struct prom *p, struct kp_buf *b,
    const struct family *f, const struct kp_record *rec)
{
	static const char *const zone_state[] = { "zone", "state", NULL };

	labels_less(p, b, f, rec, zone_state);
}

/* Ready for the records of a block of n. */
void
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
const struct kp_buf *
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

/* Whether rec's zone is the node zone, which has no zone label. */
int
rec_in_node_zone(const struct kp_record *rec)
{
	const char *zone = kp_rec_str(rec, "zone");

	return zone != NULL && strcmp(zone, "node") == 0;
}

/* Whether record i of b is of the node zone, looked up once a block. */
int
in_node_zone(struct labels *l, const struct block *b, size_t i)
{
	if (l->in_node_zone[i] < 0)
		l->in_node_zone[i] = rec_in_node_zone(b->recs[i]);
	return l->in_node_zone[i];
}

void
labels_free(struct labels *l)
{
	size_t i;

	for (i = 0; i < l->cap; i++)
		free(l->text[i].s);
	free(l->text);
	free(l->made);
	free(l->in_node_zone);
}
