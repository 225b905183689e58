/*
 * rapl-read: a sample of every counter, the energy of each zone over the
 * interval (wraps and impossible steps handled), and the records.
 */
#include <err.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rapl.h"

/*
 * A failure is said once for each counter; its zone is left out
 * meanwhile.  A source that has no figure and says why itself reads 1.
 */
static void
sample_member(struct member *mb, int64_t deadline_us)
{
	int rv;

	mb->has_cur = 0;
	if (!mb->wanted || mb->zone[0] == '\0' ||
	    (mb->reading == READ_ENERGY_UJ && mb->max_uj == 0))
		return;		/* no name or no range: never usable */
	if ((rv = mb->src->read(mb, deadline_us)) != 0) {
		if (rv < 0 && !mb->warned)
			warn("cannot read '%s'", mb->where);
		mb->warned |= rv < 0;
		return;
	}
	if (mb->reading == READ_ENERGY_UJ && mb->cur > mb->max_uj) {
		if (!mb->warned)
			warnx("'%s': %llu is above max_energy_range_uj, %llu",
			    mb->where, (unsigned long long)mb->cur,
			    (unsigned long long)mb->max_uj);
		mb->warned = 1;
		return;
	}
	mb->has_cur = 1;
}

/*
 * Every counter read at at_us on the clock, each source's within
 * deadline_us (0: none).
 */
void
sample(struct meter *m, int64_t at_us, int64_t deadline_us)
{
	size_t i;

	for (i = 0; i < m->nmembers; i++) {
		m->members[i].at_us = at_us;
		sample_member(&m->members[i], deadline_us);
	}
}

/* The current sample becomes the baseline of the next interval. */
static void
advance(struct meter *m)
{
	size_t i;

	for (i = 0; i < m->nmembers; i++) {
		m->members[i].prev = m->members[i].cur;
		m->members[i].has_prev = m->members[i].has_cur;
	}
}

/* How far a counter went over the interval, through one wrap at most. */
static uint64_t
step_uj(const struct member *mb)
{
	if (mb->cur >= mb->prev)
		return mb->cur - mb->prev;
	return mb->max_uj - mb->prev + mb->cur;
}

/*
 * Leaves out of the interval each counter whose step no zone could make
 * in dt_us (see MAX_STEP_WATTS): its value now is the next interval's
 * baseline.  Said once for each counter.
 */
void
drop_impossible_steps(struct meter *m, int64_t dt_us)
{
	struct member *mb;
	uint64_t most_uj;
	size_t i;

	/*
	 * A guest's counters move once per host interval: a guest interval
	 * sees the host intervals that ended in it, over at most dt_us and
	 * one host interval (kp-host's, rapl-read(1)).
	 */
	most_uj = dt_us > 0 ? (uint64_t)MAX_STEP_WATTS *
	    (uint64_t)(dt_us + m->host_interval_us) : 0;
	for (i = 0; i < m->nmembers; i++) {
		mb = &m->members[i];
		if (mb->reading != READ_ENERGY_UJ || !mb->has_prev ||
		    !mb->has_cur ||
		    step_uj(mb) <= most_uj)
			continue;
		if (!mb->warned_step)
			warnx("counter '%s' went from %llu to %llu uJ in "
			    "%lld us, more than %d W could: left out of the "
			    "interval, counted again from its new value",
			    mb->key, (unsigned long long)mb->prev,
			    (unsigned long long)mb->cur, (long long)dt_us,
			    MAX_STEP_WATTS);
		mb->warned_step = 1;
		mb->has_prev = 0;
	}
}

/*
 * A counter's energy over the interval: its step; for a power read at
 * each end, the mean of the two times dt_us; for a mean power over the
 * interval, that times dt_us.
 */
static uint64_t
delta_uj(const struct member *mb, int64_t dt_us)
{
	if (mb->reading == READ_POWER_UW)
		return (uint64_t)llround(((double)mb->prev + (double)mb->cur) /
		    2 * (double)dt_us / 1e6);
	if (mb->reading == READ_MEAN_POWER_UW)
		return (uint64_t)llround((double)mb->cur * (double)dt_us / 1e6);
	return step_uj(mb);
}

/* Whether the counter has a figure for the interval. */
static int
has_delta(const struct member *mb)
{
	return mb->has_cur &&
	    (mb->has_prev || mb->reading == READ_MEAN_POWER_UW);
}

/*
 * The energy of a zone's counters on one socket or all: -1 if one of them
 * has no delta, since a sum that missed one would not be the zone's energy.
 * *last: the last counter summed, the one when *n is 1.
 */
static int
zone_energy(const struct meter *m, const char *zone, int socket,
    int64_t dt_us, uint64_t *energy_uj, size_t *n, const struct member **last)
{
	const struct member *mb;
	size_t i;

	for (i = 0; i < m->nmembers; i++) {
		mb = &m->members[i];
		if (!mb->wanted || strcmp(mb->zone, zone) != 0 ||
		    (socket != ANY_SOCKET && mb->socket != socket))
			continue;
		if (!has_delta(mb))
			return -1;
		*energy_uj += delta_uj(mb, dt_us);
		(*n)++;
		*last = mb;
	}
	return 0;
}

/*
 * An energy record, built in one buffer kept between calls: at 1 kHz,
 * building and freeing a JSON object for each was some 15 % of
 * rapl-read's CPU time (perf stat).  one: the last of the counters
 * summed, whose source gives the record's fields.
 */
static void
out_energy(int64_t seq, const char *zone, int socket, int64_t energy_uj,
    int64_t dt_us, size_t counters, const struct member *one)
{
	static struct kp_buf b;

	kp_buf_rec(&b, "energy", seq);
	kp_buf_text(&b, "zone", zone);
	if (one->device[0] != '\0')
		kp_buf_text(&b, "device", one->device);
	if (socket >= 0)
		kp_buf_int(&b, "socket", socket);
	kp_buf_int(&b, "energy_uj", energy_uj);
	kp_buf_real(&b, "watts", kp_watts(energy_uj, dt_us));
	kp_buf_text(&b, "source", one->host ? "host" : one->src->name);
	kp_buf_bool(&b, "estimated", one->src->estimates);
	if (one->host)
		kp_buf_text(&b, "host", one->host);
	one->src->fields(&b, one, counters);
	kp_out_buf(&b);
}

static void
emit_zone(const struct meter *m, const char *zone, int socket, int64_t seq,
    int64_t dt_us)
{
	const struct member *last = NULL;
	uint64_t energy_uj = 0;
	size_t n = 0;

	if (zone_energy(m, zone, socket, dt_us, &energy_uj, &n, &last) == 0 &&
	    n > 0) {
		out_energy(seq, zone, socket, (int64_t)energy_uj, dt_us, n,
		    last);
		tally_add(m->tally, zone, (int64_t)energy_uj,
		    last->src->estimates);
	}
}

/* The node's energy, its zones each counted once (see in_node). */
static void
emit_node(const struct meter *m, int64_t seq, int64_t dt_us)
{
	const struct member *mb, *last = NULL;
	const char *done = NULL;
	uint64_t energy_uj = 0;
	size_t i, n = 0;

	for (i = 0; i < m->nmembers; i++) {
		mb = &m->members[i];
		if (!mb->wanted || !in_node(m, mb->zone) ||
		    (done != NULL && strcmp(done, mb->zone) == 0))
			continue;
		done = mb->zone;
		if (zone_energy(m, mb->zone, ANY_SOCKET, dt_us, &energy_uj,
		    &n, &last) < 0)
			return;
	}
	if (n > 0) {
		out_energy(seq, "node", NO_SOCKET, (int64_t)energy_uj, dt_us,
		    n, last);
		tally_add(m->tally, "node", (int64_t)energy_uj,
		    last->src->estimates);
	}
}

/*
 * A member that makes a record of its own: one device of zone gpu, as an
 * apart source's members are, or a GPU among another source's meters.
 */
static void
emit_apart(const struct meter *m, const struct member *mb, int64_t seq,
    int64_t dt_us)
{
	int64_t energy_uj;

	if (!mb->wanted || !has_delta(mb))
		return;
	energy_uj = (int64_t)delta_uj(mb, dt_us);
	out_energy(seq, mb->zone, NO_SOCKET, energy_uj, dt_us, 1, mb);
	tally_add(m->tally, mb->zone, energy_uj, mb->src->estimates);
}

void
emit(const struct meter *m, int64_t seq, int64_t dt_us)
{
	const struct member *mb = m->members;
	size_t i;

	for (i = 0; i < m->nmembers; i++) {
		if (mb[i].zone[0] == '\0' || !selected(m, mb[i].zone))
			continue;
		if (mb[i].src->apart || mb[i].device[0] != '\0')
			emit_apart(m, &mb[i], seq, dt_us);
		else if (m->per_socket) {
			if (i > 0 && strcmp(mb[i - 1].zone, mb[i].zone) == 0 &&
			    mb[i - 1].socket == mb[i].socket)
				continue;
			emit_zone(m, mb[i].zone, mb[i].socket, seq, dt_us);
		} else if (i == 0 || strcmp(mb[i - 1].zone, mb[i].zone) != 0)
			emit_zone(m, mb[i].zone, ANY_SOCKET, seq, dt_us);
	}
	if (selected(m, "node"))
		emit_node(m, seq, dt_us);
}

/* The counter that wraps soonest at MAX_ZONE_WATTS, and in how long. */
static const struct member *
soonest_wrap(const struct meter *m, int64_t *wrap_us)
{
	const struct member *soonest = NULL;
	size_t i;

	for (i = 0; i < m->nmembers; i++)
		if (m->members[i].wanted &&
		    m->members[i].reading == READ_ENERGY_UJ &&
		    (soonest == NULL ||
		    m->members[i].max_uj < soonest->max_uj))
			soonest = &m->members[i];
	if (soonest != NULL)
		*wrap_us = (int64_t)(soonest->max_uj / MAX_ZONE_WATTS);
	return soonest;
}

void
warn_wrap(const struct meter *m, const char *what, int64_t dt_us)
{
	const struct member *mb;
	int64_t wrap_us;

	if ((mb = soonest_wrap(m, &wrap_us)) != NULL && dt_us > wrap_us)
		warnx("%s of %.0f s is longer than the %.0f s in which "
		    "counter '%s' wraps at %d W: a second wrap would go unseen",
		    what, (double)dt_us / 1e6, (double)wrap_us / 1e6, mb->key,
		    MAX_ZONE_WATTS);
}

/* Interval clk has just ended: sample, its records, its interval record. */
void
end_interval(struct meter *m, const struct kp_clock *clk)
{
	sample(m, clk->end_us, kp_clock_deadline_us(clk));
	drop_impossible_steps(m, clk->dt_us);
	emit(m, clk->seq, clk->dt_us);
	advance(m);
	kp_out_interval(clk->seq, clk->wall_us, clk->dt_us);
}

/* The header that starts the stream, with the node's identity. */
void
out_header(const struct meter *m)
{
	struct kp_node node;

	kp_node_identify(&node, m->node_name, m->procdir);
	kp_out_header("rapl-read", &node,
	    m->command[0] != '\0' ? m->command : NULL);
	kp_node_free(&node);
}

/* The baseline sample, which ends no interval. */
void
start_clock(struct meter *m, struct kp_clock *clk, int64_t interval_us)
{
	warn_wrap(m, "the interval", interval_us);
	out_header(m);
	kp_out_flush();
	kp_clock_start(clk, interval_us);
	sample(m, clk->start_us, kp_clock_deadline_us(clk));
	advance(m);
}

/*
 * Intervals on the clock until count, or until a signal (rapl-read(1),
 * SIGNALS): then the interval ends at once, is written, and the status is
 * 128 + the signal.
 */
int
run_clock(struct meter *m, int64_t interval_us, long long count)
{
	struct kp_clock clk;

	kp_signals_producer();
	start_clock(m, &clk, interval_us);
	while (kp_clock_next(&clk, count))
		end_interval(m, &clk);
	return kp_stop_signal ? 128 + kp_stop_signal : KP_EXIT_OK;
}
