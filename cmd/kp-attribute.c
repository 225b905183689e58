/*
 * kp-attribute: splits each zone's energy into active and idle by the
 * node's CPU usage, and gives each process a share of the active energy in
 * proportion to its CPU time.  Integer microjoules, conserved exactly:
 * sum(process) + unattributed + idle = measured, every interval and zone.
 */
#include <err.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kp.h"

/* What one interval brings before its interval record arrives. */
struct interval {
	json_t *energy;		/* energy records */
	json_t *cpu;		/* the cpu record, or NULL */
	json_t *procs;		/* proc records */
	json_t *lines;		/* raw cpu and proc lines, to pass on unused */
};

/* One share of a zone's active energy, and what rounding left of it. */
struct share {
	int64_t cpu_us;
	int64_t energy_uj;
	uint64_t rem;		/* the fraction's numerator, for rounding */
	int64_t pid, starttime;	/* unattributed: pid -1, rounds last */
};

/* Cumulative totals, per zone, carried across runs by --state. */
struct totals {
	json_t *node;		/* zone -> {total_uj, active_total_uj, ...} */
	json_t *unattributed;	/* zone -> total_uj */
	json_t *procs;		/* "pid:starttime" -> {zone -> total_uj} */
};

static void usage(void);

static const char *procdir = "/proc";

static void
usage(void)
{
	fprintf(stderr, "usage: kp-attribute [-h] [--proc dir] "
	    "[--state file]\n");
	exit(KP_EXIT_USAGE);
}

/* Adds uj to obj[key] and returns the new total. */
static int64_t
add_total(json_t *obj, const char *key, int64_t uj)
{
	int64_t total = 0;

	kp_json_int(obj, key, &total);
	total += uj;
	json_object_set_new(obj, key, json_integer(total));
	return total;
}

/* obj[key], created as an empty object if absent; borrowed. */
static json_t *
child(json_t *obj, const char *key)
{
	json_t *c = json_object_get(obj, key);

	if (!json_is_object(c)) {
		c = json_object();
		json_object_set_new(obj, key, c);
	}
	return c;
}

static double
watts(int64_t energy_uj, int64_t dt_us)
{
	return dt_us > 0 ? (double)energy_uj / (double)dt_us : 0;
}

/* a * b / c in integers, without overflow; *rem gets what the floor left. */
static int64_t
muldiv(int64_t a, int64_t b, int64_t c, uint64_t *rem)
{
	unsigned __int128 n = (unsigned __int128)a * (unsigned __int128)b;

	if (rem)
		*rem = (uint64_t)(n % (unsigned __int128)c);
	return (int64_t)(n / (unsigned __int128)c);
}

/* The node's usage ratio: from the integer CPU times when it has them. */
static double
usage_ratio(json_t *cpu)
{
	int64_t cpu_us, total_cpu_us;

	if (!kp_json_int(cpu, "cpu_us", &cpu_us) ||
	    !kp_json_int(cpu, "total_cpu_us", &total_cpu_us))
		return json_number_value(json_object_get(cpu, "usage_ratio"));
	if (total_cpu_us <= 0)
		return 0;
	if (cpu_us >= total_cpu_us)
		return 1;
	return (double)cpu_us / (double)total_cpu_us;
}

/*
 * The active part of energy_uj, rounded down: by the integer CPU times when
 * the cpu record has them (exact), else by its usage_ratio.
 */
static int64_t
active_part(int64_t energy_uj, json_t *cpu)
{
	int64_t cpu_us, total_cpu_us;
	double ratio;

	if (kp_json_int(cpu, "cpu_us", &cpu_us) &&
	    kp_json_int(cpu, "total_cpu_us", &total_cpu_us)) {
		if (total_cpu_us <= 0)
			return 0;
		if (cpu_us > total_cpu_us)
			cpu_us = total_cpu_us;
		return muldiv(energy_uj, cpu_us, total_cpu_us, NULL);
	}
	ratio = usage_ratio(cpu);
	if (!(ratio > 0))
		return 0;
	return ratio >= 1 ? energy_uj : (int64_t)floor(energy_uj * ratio);
}

static int
by_remainder(const void *a, const void *b)
{
	const struct share *p = *(struct share *const *)a;
	const struct share *q = *(struct share *const *)b;

	if (p->rem != q->rem)
		return p->rem > q->rem ? -1 : 1;
	if ((p->pid < 0) != (q->pid < 0))
		return p->pid < 0 ? 1 : -1;
	if (p->pid != q->pid)
		return p->pid < q->pid ? -1 : 1;
	return (p->starttime > q->starttime) - (p->starttime < q->starttime);
}

/*
 * Splits active_uj over shares[0..n) by cpu_us; shares[n-1] is the
 * unattributed rest, which takes everything when no CPU time was seen.  The
 * floors leave fewer microjoules than shares: one each goes to the largest
 * remainders, so the shares add up to active_uj exactly.
 */
static void
split(int64_t active_uj, struct share *shares, size_t n)
{
	struct share **order;
	int64_t denom_us = 0, left_uj = active_uj;
	size_t i;

	for (i = 0; i < n; i++)
		denom_us += shares[i].cpu_us;
	if (denom_us == 0) {
		for (i = 0; i < n; i++)
			shares[i].energy_uj = i + 1 < n ? 0 : active_uj;
		return;
	}
	if ((order = calloc(n, sizeof(*order))) == NULL)
		err(KP_EXIT_FAILURE, "calloc");
	for (i = 0; i < n; i++) {
		shares[i].energy_uj = muldiv(active_uj, shares[i].cpu_us,
		    denom_us, &shares[i].rem);
		left_uj -= shares[i].energy_uj;
		order[i] = &shares[i];
	}
	qsort(order, n, sizeof(*order), by_remainder);
	for (i = 0; left_uj > 0; i++, left_uj--)
		order[i]->energy_uj++;
	free(order);
}

static void
copy_fields(json_t *dst, json_t *src, const char *const *keys)
{
	json_t *v;

	for (; *keys; keys++)
		if ((v = json_object_get(src, *keys)) != NULL)
			json_object_set(dst, *keys, v);
}

static void
emit_node(int64_t seq, json_t *energy, json_t *cpu, int64_t active_uj,
    int64_t dt_us, struct totals *t)
{
	static const char *const from_energy[] = {
		"zone", "energy_uj", NULL
	};
	static const char *const source[] = { "source", "estimated", NULL };
	int64_t energy_uj = 0, idle_uj;
	json_t *rec, *tot;

	kp_json_int(energy, "energy_uj", &energy_uj);
	idle_uj = energy_uj - active_uj;
	tot = child(t->node, kp_json_str(energy, "zone"));
	rec = kp_rec_new("node", seq);
	copy_fields(rec, energy, from_energy);
	json_object_set_new(rec, "active_uj", json_integer(active_uj));
	json_object_set_new(rec, "idle_uj", json_integer(idle_uj));
	json_object_set_new(rec, "watts", json_real(watts(energy_uj, dt_us)));
	json_object_set_new(rec, "active_watts",
	    json_real(watts(active_uj, dt_us)));
	json_object_set_new(rec, "idle_watts", json_real(watts(idle_uj, dt_us)));
	json_object_set_new(rec, "usage_ratio", json_real(usage_ratio(cpu)));
	copy_fields(rec, energy, source);
	json_object_set_new(rec, "total_uj",
	    json_integer(add_total(tot, "total_uj", energy_uj)));
	json_object_set_new(rec, "active_total_uj",
	    json_integer(add_total(tot, "active_total_uj", active_uj)));
	json_object_set_new(rec, "idle_total_uj",
	    json_integer(add_total(tot, "idle_total_uj", idle_uj)));
	kp_out_json_new(rec);
}

static void
proc_key(char *key, size_t len, json_t *proc)
{
	int64_t pid = 0, starttime = 0;

	kp_json_int(proc, "pid", &pid);
	kp_json_int(proc, "starttime", &starttime);
	snprintf(key, len, "%lld:%lld", (long long)pid, (long long)starttime);
}

static void
emit_process(int64_t seq, const char *zone, json_t *proc,
    const struct share *sh, int64_t dt_us, struct totals *t)
{
	static const char *const identity[] = {
		"pid", "starttime", "comm", "state", "cgroup", "container_id",
		"pod_id", "vm_id", "unit", NULL
	};
	char key[64];
	json_t *rec;

	proc_key(key, sizeof(key), proc);
	rec = kp_rec_new("process", seq);
	json_object_set_new(rec, "zone", json_string(zone));
	copy_fields(rec, proc, identity);
	json_object_set_new(rec, "cpu_us", json_integer(sh->cpu_us));
	json_object_set_new(rec, "energy_uj", json_integer(sh->energy_uj));
	json_object_set_new(rec, "watts", json_real(watts(sh->energy_uj, dt_us)));
	json_object_set_new(rec, "total_uj", json_integer(
	    add_total(child(t->procs, key), zone, sh->energy_uj)));
	kp_out_json_new(rec);
}

static void
emit_unattributed(int64_t seq, const char *zone, const struct share *sh,
    int64_t dt_us, struct totals *t)
{
	json_t *rec;

	rec = kp_rec_new("unattributed", seq);
	json_object_set_new(rec, "zone", json_string(zone));
	json_object_set_new(rec, "cpu_us", json_integer(sh->cpu_us));
	json_object_set_new(rec, "energy_uj", json_integer(sh->energy_uj));
	json_object_set_new(rec, "watts", json_real(watts(sh->energy_uj, dt_us)));
	json_object_set_new(rec, "total_uj", json_integer(
	    add_total(t->unattributed, zone, sh->energy_uj)));
	kp_out_json_new(rec);
}

static int
is_terminated(json_t *proc)
{
	const char *state = kp_json_str(proc, "state");

	return state != NULL && strcmp(state, "terminated") == 0;
}

/* One zone of one interval: node, processes, unattributed. */
static void
attribute_zone(struct interval *iv, json_t *energy, int64_t seq,
    int64_t dt_us, struct totals *t)
{
	const char *zone = kp_json_str(energy, "zone");
	size_t i, nproc = json_array_size(iv->procs);
	int64_t energy_uj = 0, active_uj, node_cpu_us = 0, procs_cpu_us = 0;
	struct share *shares;
	json_t *proc;

	kp_json_int(energy, "energy_uj", &energy_uj);
	active_uj = active_part(energy_uj, iv->cpu);
	if ((shares = calloc(nproc + 1, sizeof(*shares))) == NULL)
		err(KP_EXIT_FAILURE, "calloc");
	json_array_foreach(iv->procs, i, proc) {
		kp_json_int(proc, "cpu_us", &shares[i].cpu_us);
		kp_json_int(proc, "pid", &shares[i].pid);
		kp_json_int(proc, "starttime", &shares[i].starttime);
		procs_cpu_us += shares[i].cpu_us;
	}
	kp_json_int(iv->cpu, "cpu_us", &node_cpu_us);
	shares[nproc].pid = -1;
	shares[nproc].cpu_us = node_cpu_us > procs_cpu_us ?
	    node_cpu_us - procs_cpu_us : 0;
	split(active_uj, shares, nproc + 1);

	emit_node(seq, energy, iv->cpu, active_uj, dt_us, t);
	json_array_foreach(iv->procs, i, proc)
		if (shares[i].cpu_us > 0 || is_terminated(proc))
			emit_process(seq, zone, proc, &shares[i], dt_us, t);
	emit_unattributed(seq, zone, &shares[nproc], dt_us, t);
	free(shares);
}

static void
interval_clear(struct interval *iv)
{
	json_array_clear(iv->energy);
	json_array_clear(iv->procs);
	json_array_clear(iv->lines);
	json_decref(iv->cpu);
	iv->cpu = NULL;
}

/* The records this stage consumes; a malformed one is rejected. */
static int
hold(struct kp_reader *r, struct kp_record *rec, struct interval *iv)
{
	int64_t v;
	double ratio;

	if (strcmp(rec->type, "energy") == 0) {
		if (kp_json_str(rec->obj, "zone") == NULL ||
		    !kp_json_int(rec->obj, "energy_uj", &v) || v < 0)
			goto bad;
		json_array_append(iv->energy, rec->obj);
	} else if (strcmp(rec->type, "cpu") == 0) {
		ratio = json_number_value(json_object_get(rec->obj,
		    "usage_ratio"));
		if (!kp_json_int(rec->obj, "cpu_us", &v) || v < 0 ||
		    !(ratio >= 0 && ratio <= 1))
			goto bad;
		json_decref(iv->cpu);
		iv->cpu = json_incref(rec->obj);
	} else if (strcmp(rec->type, "proc") == 0) {
		if (!kp_json_int(rec->obj, "pid", &v) || v <= 0 ||
		    !kp_json_int(rec->obj, "cpu_us", &v) || v < 0)
			goto bad;
		json_array_append(iv->procs, rec->obj);
	} else
		return 0;
	json_array_append_new(iv->lines, json_stringn(rec->line, rec->len));
	return 1;
bad:
	kp_reader_reject(r, "%s record without its required fields "
	    "(see kp-records(5))", rec->type);
	return 1;
}

static void
hold_sampled(json_t *rec, void *arg)
{
	struct interval *iv = arg;

	if (strcmp(kp_json_str(rec, "type"), "cpu") == 0)
		iv->cpu = rec;
	else
		json_array_append_new(iv->procs, rec);
}

static void
pass_lines(json_t *lines)
{
	size_t i;
	json_t *line;

	json_array_foreach(lines, i, line)
		kp_out_raw(json_string_value(line), json_string_length(line));
}

/* A process that ended has had its last share: forget its totals. */
static void
forget_terminated(json_t *procs, struct totals *t)
{
	char key[64];
	size_t i;
	json_t *proc;

	json_array_foreach(procs, i, proc) {
		if (!is_terminated(proc))
			continue;
		proc_key(key, sizeof(key), proc);
		json_object_del(t->procs, key);
	}
}

/*
 * Interval seq ends: without upstream CPU records, sample /proc now, so
 * that rapl-read | kp-attribute works; without energy there is nothing to
 * attribute, and the CPU records pass on as they came.
 */
static void
end_interval(struct interval *iv, struct kp_record *rec,
    struct kp_sampler *s, struct totals *t)
{
	int64_t dt_us = 0;
	size_t i;
	json_t *energy;

	if (iv->cpu == NULL) {
		if (kp_sampler_scan(s) < 0)
			err(KP_EXIT_FAILURE, "%s", procdir);
		kp_sampler_emit(s, rec->seq, hold_sampled, iv);
	}
	kp_json_int(rec->obj, "dt_us", &dt_us);
	if (json_array_size(iv->energy) == 0)
		pass_lines(iv->lines);
	json_array_foreach(iv->energy, i, energy)
		attribute_zone(iv, energy, rec->seq, dt_us, t);
	forget_terminated(iv->procs, t);
	kp_out_raw(rec->line, rec->len);
	kp_out_flush();
	interval_clear(iv);
}

/* Totals and the /proc baseline from the previous run, if it left them. */
static void
load_state(struct kp_state *st, const char *path, struct totals *t,
    struct kp_sampler *s)
{
	json_t *data = kp_state_data_any_boot(st), *saved;

	if (data == NULL)
		return;
	if (json_unpack(data, "{s:o,s:o,s:o}", "node", &t->node,
	    "unattributed", &t->unattributed, "procs", &t->procs) < 0 ||
	    !json_is_object(t->node) || !json_is_object(t->unattributed) ||
	    !json_is_object(t->procs)) {
		warnx("%s: unusable totals in the state file, starting from "
		    "zero", path);
		t->node = t->unattributed = t->procs = NULL;
		return;
	}
	t->node = json_deep_copy(t->node);
	t->unattributed = json_deep_copy(t->unattributed);
	t->procs = json_deep_copy(t->procs);
	if (kp_state_data(st) == NULL)
		return;		/* a /proc sample of an earlier boot means nothing */
	if ((saved = json_object_get(data, "sampler")) != NULL &&
	    kp_sampler_load(s, saved) < 0)
		warnx("%s: unusable /proc sample in the state file, "
		    "starting a new baseline", path);
}

static void
save_state(struct kp_state *st, struct totals *t, struct kp_sampler *s)
{
	json_t *data;

	data = json_pack("{s:O,s:O,s:O}", "node", t->node,
	    "unattributed", t->unattributed, "procs", t->procs);
	if (kp_sampler_has_baseline(s))
		json_object_set_new(data, "sampler", kp_sampler_save(s));
	kp_state_commit_new(st, data);
}

static int
run(struct kp_reader *r, struct kp_sampler *s, struct totals *t)
{
	struct interval iv;
	struct kp_record rec;
	int status = KP_EXIT_OK;

	iv.energy = json_array();
	iv.procs = json_array();
	iv.lines = json_array();
	iv.cpu = NULL;
	while (kp_reader_next(r, &rec)) {
		if (strcmp(rec.type, "interval") == 0)
			end_interval(&iv, &rec, s, t);
		else if (!hold(r, &rec, &iv))
			kp_out_raw(rec.line, rec.len);
	}
	if (json_array_size(iv.lines) > 0) {
		warnx("<stdin>:%ld: the stream ends inside an interval: %zu "
		    "record(s) pass on unattributed", kp_reader_lineno(r),
		    json_array_size(iv.lines));
		pass_lines(iv.lines);
		status = KP_EXIT_DATAERR;
	}
	interval_clear(&iv);
	json_decref(iv.energy);
	json_decref(iv.procs);
	json_decref(iv.lines);
	return status;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "proc", required_argument, NULL, 'P' },
		{ "state", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 }
	};
	const char *statepath = NULL;
	struct totals t = { NULL, NULL, NULL };
	struct kp_state *st = NULL;
	struct kp_sampler *s;
	struct kp_reader *r;
	int ch, status;

	kp_out_init();
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'P':
			procdir = optarg;
			break;
		case 'S':
			statepath = optarg;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 0)
		usage();

	s = kp_sampler_new(procdir, 0);
	if (statepath) {
		st = kp_state_open(statepath, procdir, "kp-attribute");
		load_state(st, statepath, &t, s);
	}
	if (t.node == NULL) {
		t.node = json_object();
		t.unattributed = json_object();
		t.procs = json_object();
	}
	/* The baseline for sampling /proc here, should upstream bring no CPU. */
	if (!kp_sampler_has_baseline(s))
		(void)kp_sampler_scan(s);
	r = kp_reader_open(stdin, "<stdin>");
	status = run(r, s, &t);
	if (kp_reader_errors(r))
		status = KP_EXIT_DATAERR;
	if (st)
		save_state(st, &t, s);
	kp_reader_close(r);
	kp_state_close(st);
	kp_sampler_free(s);
	json_decref(t.node);
	json_decref(t.unattributed);
	json_decref(t.procs);
	return kp_out_finish(status);
}
