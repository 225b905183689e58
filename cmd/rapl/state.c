/*
 * rapl-read --state: the last sample kept across runs, one interval a run.
 */
#include <err.h>
#include <stdlib.h>
#include <string.h>

#include "rapl.h"

/*
 * Whether the stored counter v is mb's: the same zone, socket and range,
 * and a value it could hold.  A tree that changed between runs can give
 * an entry name to another zone.
 */
static int
same_member(const struct member *mb, json_t *v, uint64_t *uj)
{
	const char *zone;
	json_int_t socket, max_uj, value;

	if (json_unpack(v, "{s:s,s:I,s:I,s:I}", "zone", &zone, "socket",
	    &socket, "max_uj", &max_uj, "uj", &value) < 0)
		return 0;
	if (strcmp(zone, mb->zone) != 0 || socket != mb->socket ||
	    max_uj < 0 || (uint64_t)max_uj != mb->max_uj || value < 0 ||
	    (mb->max_uj > 0 && (uint64_t)value > mb->max_uj))
		return 0;
	*uj = (uint64_t)value;
	return 1;
}

/* The stored counters: none is a baseline for each (the model's only). */
static int
load_members(struct meter *m, json_t *data, const char *path)
{
	struct member *mb;
	json_t *members = NULL, *v;
	size_t i;

	if (json_unpack(data, "{s?o}", "members", &members) < 0 ||
	    (members != NULL && !json_is_object(members)))
		return -1;
	for (i = 0; i < m->nmembers && members != NULL; i++) {
		mb = &m->members[i];
		if ((v = json_object_get(members, mb->key)) == NULL)
			continue;	/* new: this run is its baseline */
		if (same_member(mb, v, &mb->prev))
			mb->has_prev = 1;
		else
			warnx("%s: counter '%s' is not the one stored (its "
			    "zone, socket or range differs); starting a new "
			    "baseline for it", path, mb->key);
	}
	return 0;
}

/* Each running source's own sample, where it keeps one. */
static int
load_sources(struct meter *m, json_t *data)
{
	size_t i;

	for (i = 0; i < m->nrunning; i++)
		if (m->running[i]->load != NULL &&
		    m->running[i]->load(data) < 0)
			return -1;
	return 0;
}

/* The previous run's sample as the baseline; 0 if there is none to use. */
int
load_state(struct meter *m, struct kp_state *st, const char *path,
    json_int_t *seq, json_int_t *mono_us)
{
	json_t *data;
	const char *source;
	char names[256];

	if ((data = kp_state_data(st)) == NULL)
		return 0;
	if (json_unpack(data, "{s:I,s:I,s:s}", "seq", seq, "mono_us", mono_us,
	    "source", &source) < 0 || !kp_clock_stored_ok(*seq, *mono_us))
		goto bad;
	source_names(m, names, sizeof(names));
	if (strcmp(source, names) != 0) {
		warnx("%s: the stored sample is from source '%s', not '%s'; "
		    "starting a new baseline", path, source, names);
		return 0;
	}
	if (load_sources(m, data) == 0 && load_members(m, data, path) == 0)
		return 1;
bad:
	warnx("%s: unusable sample in the state file, starting a new baseline",
	    path);
	*seq = 0;
	return 0;
}

/* A counter as stored: its value and what makes it the same counter. */
static json_t *
member_json(const struct member *mb)
{
	return json_pack("{s:s,s:I,s:I,s:I}", "zone", mb->zone, "socket",
	    (json_int_t)mb->socket, "max_uj", (json_int_t)mb->max_uj, "uj",
	    (json_int_t)mb->cur);
}

/*
 * What the next run needs: seq, the time, each counter's value, and
 * what each source keeps of its own.
 */
json_t *
state_data(const struct meter *m, json_int_t seq, int64_t mono_us)
{
	json_t *data, *members;
	char names[256];
	size_t i;

	source_names(m, names, sizeof(names));
	data = json_pack("{s:I,s:I,s:s}", "seq", seq, "mono_us",
	    (json_int_t)mono_us, "source", names);
	if (data == NULL)
		errx(KP_EXIT_FAILURE, "cannot build the state");
	for (i = 0; i < m->nrunning; i++)
		if (m->running[i]->save != NULL)
			m->running[i]->save(data);
	members = json_object();
	for (i = 0; i < m->nmembers; i++)
		if (m->members[i].has_cur &&
		    m->members[i].reading != READ_MEAN_POWER_UW)
			json_object_set_new(members, m->members[i].key,
			    member_json(&m->members[i]));
	json_object_set_new(data, "members", members);
	return data;
}

/* The fallback note an earlier run said (say_fallback); NULL if none. */
static const char *
fallback_said(struct kp_state *st)
{
	json_t *data = kp_state_data_any_boot(st);

	return json_string_value(json_object_get(data, "fallback_said"));
}

/*
 * Keeps in data the fallback note now said, or, under -q, the one said
 * before: a note that changes is said again.
 */
static void
keep_fallback_said(const struct meter *m, json_t *data, const char *said)
{
	const char *note = m->fallback_talk < 0 ? said : m->fallback;

	if (note != NULL && note[0] != '\0')
		json_object_set_new(data, "fallback_said", json_string(note));
}

/*
 * One sample against the previous run's: at most one interval.  The state
 * that counts it is prepared before its records and committed after
 * them (rapl-read(1), "Guarantees"): a full disk writes no record and
 * advances nothing.
 */
void
run_once(struct meter *m, struct kp_state *st, const char *path)
{
	json_int_t seq = 0, stored_us = 0;
	struct kp_clock clk;
	char what[PATH_MAX + 64];
	const char *said = fallback_said(st);
	json_t *data;
	int usable, ended;

	say_fallback(m, said);
	usable = load_state(m, st, path, &seq, &stored_us);
	kp_clock_start(&clk, 0);
	sample(m, clk.end_us, 0);
	if ((ended = usable && kp_clock_resume(&clk, seq, stored_us, path))) {
		snprintf(what, sizeof(what), "%s: the time since the stored "
		    "sample", path);
		warn_wrap(m, what, clk.dt_us);
		drop_impossible_steps(m, clk.dt_us);
		seq = clk.seq;
	}
	data = state_data(m, seq, clk.end_us);
	keep_fallback_said(m, data, said);
	kp_state_prepare_new(st, data);
	out_header(m);		/* a failed run writes nothing at all */
	if (ended) {
		emit(m, clk.seq, clk.dt_us);
		kp_out_interval(clk.seq, clk.wall_us, clk.dt_us);
	} else
		kp_out_flush();
	kp_state_commit(st);
}
