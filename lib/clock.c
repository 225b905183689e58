/*
 * Clocks: intervals are measured on CLOCK_MONOTONIC, stamped with UTC.  A
 * producer's intervals end at absolute deadlines, and a one-shot run's
 * interval begins at the sample an earlier run stored.
 */
#include <err.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <time.h>

#include "kp.h"

static int64_t
now_us(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t
kp_mono_us(void)
{
	return now_us(CLOCK_MONOTONIC);
}

int64_t
kp_wall_us(void)
{
	return now_us(CLOCK_REALTIME);
}

static int64_t
now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The clock of /proc/PID/stat's starttime. */
int64_t
kp_boot_ns(void)
{
	return now_ns(CLOCK_BOOTTIME);
}

/*
 * The clock a file's times are taken from: the wall clock as of the last
 * tick, so that a file made after this call never has an earlier ctime.
 */
int64_t
kp_file_time_ns(void)
{
	return now_ns(CLOCK_REALTIME_COARSE);
}

/* RFC 3339 UTC with microseconds: 2026-11-22T13:48:36.123456Z */
void
kp_format_ts(char *buf, size_t len, int64_t wall_us)
{
	time_t sec = (time_t)(wall_us / 1000000);
	struct tm tm;
	char day[32];

	gmtime_r(&sec, &tm);
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%06dZ", day, (int)(wall_us % 1000000));
}

/*
 * One wait, of at most left_us (-1: no limit), for fd (-1: none) and the
 * descriptor the clock polls.  1 if fd is readable, 0 if not (a signal,
 * the time), -1 on an error.
 */
static int
poll_once(struct kp_clock *c, int fd, int64_t left_us, const sigset_t *open)
{
	struct pollfd pfd[2] = { { .fd = fd, .events = POLLIN },
	    { .fd = c->poll_fd, .events = POLLIN } };
	struct timespec ts;
	int n;

	ts.tv_sec = left_us / 1000000;
	ts.tv_nsec = (left_us % 1000000) * 1000;
	if ((n = ppoll(pfd, 2, left_us < 0 ? NULL : &ts, open)) <= 0)
		return n < 0 && errno != EINTR ? -1 : 0;
	if (pfd[1].revents != 0)
		c->poll_fd = c->ready(c->ready_arg);
	return pfd[0].revents != 0;
}

/*
 * Sleeps to a deadline, or less when a signal asks the interval to end now
 * (kp_stop_signal): a producer's ending signals are let in only inside
 * ppoll, so that one that came while it sampled is not lost between a
 * check and a sleep.  One system call an interval, as before signals,
 * unless the clock polls a descriptor too, whose readiness is handled as
 * it comes.
 */
static void
sleep_until_us(struct kp_clock *c, int64_t mono_us)
{
	const sigset_t *open = kp_signals_sleep_mask();
	struct timespec ts;
	int64_t left_us;

	if (open == NULL && c->poll_fd < 0) {
		ts.tv_sec = mono_us / 1000000;
		ts.tv_nsec = (mono_us % 1000000) * 1000;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
		    NULL) == EINTR)
			;
		return;
	}
	while (!kp_stop_signal && (left_us = mono_us - kp_mono_us()) > 0)
		(void)poll_once(c, -1, left_us, open);
}

/*
 * A filter's wait for its input (kp_reader_set_wait), clock the struct
 * kp_clock whose descriptor is served meanwhile, as while a producer
 * sleeps.  On an error it returns: the read says what is wrong.
 */
void
kp_clock_wait_input(int fd, void *clock)
{
	while (poll_once(clock, fd, -1, NULL) == 0)
		;
}

/*
 * A producer's -i and -n (proc-cputime(1), rapl-read(1)): the clock is
 * asked for by either.  ch is the option's letter, 'i' or 'n'.
 */
void
kp_clock_option(struct kp_clock_opts *o, int ch, const char *arg)
{
	if (ch == 'i')
		o->interval_us = kp_parse_duration_us(arg, "interval");
	else
		o->count = kp_parse_int(arg, 1, INT64_MAX, "count");
	o->given = 1;
}

/* A run with --state is one sample against the stored one: no clock. */
void
kp_clock_opts_check(const struct kp_clock_opts *o, const char *statepath)
{
	if (o->given && statepath != NULL)
		errx(KP_EXIT_USAGE, "--state cannot be used with -i or -n");
}

/* Called when the baseline sample is taken: no interval has ended yet. */
void
kp_clock_start(struct kp_clock *c, int64_t interval_us)
{
	c->interval_us = interval_us;
	c->poll_fd = -1;
	c->seq = 0;
	c->dt_us = 0;
	c->start_us = c->end_us = kp_mono_us();
	c->wall_us = kp_wall_us();
}

/*
 * While it sleeps, the clock polls fd for input and calls ready when it
 * is readable; ready gives the descriptor to poll next (-1: none).  How
 * often a listener is worth reading is the listener's to pace (the exit
 * records' descriptor holds a timer for that: lib/proc/exit_queue.c).
 */
void
kp_clock_poll(struct kp_clock *c, int fd, int (*ready)(void *arg), void *arg)
{
	c->poll_fd = fd;
	c->ready = ready;
	c->ready_arg = arg;
}

/*
 * Interval seq + 1 ends at start + (seq + 1) x interval, not at the last
 * end + interval: a late wakeup shortens the next interval instead of
 * moving every later one, so the schedule does not drift.
 */
int64_t
kp_clock_deadline_us(const struct kp_clock *c)
{
	return c->start_us + (c->seq + 1) * c->interval_us;
}

/*
 * Ends the next interval now.  It lasts at least 1 us, as kp-records(5)
 * wants of dt_us, even if two readings fall in the same microsecond.
 */
void
kp_clock_end(struct kp_clock *c)
{
	int64_t now_us = kp_mono_us();

	c->wall_us = kp_wall_us();
	c->dt_us = now_us > c->end_us ? now_us - c->end_us : 1;
	c->end_us = now_us;
	c->seq++;
}

/*
 * The producer's loop: sleeps to the next deadline and ends the interval
 * there, or sooner on a signal; 0, at once, when count intervals have
 * ended (count 0: never) or after the interval a signal ended.
 */
int
kp_clock_next(struct kp_clock *c, int64_t count)
{
	if ((count > 0 && c->seq >= count) || kp_stop_signal)
		return 0;
	sleep_until_us(c, kp_clock_deadline_us(c));
	kp_clock_end(c);
	return 1;
}

/*
 * Whether a stored interval can be resumed: a seq that the next interval
 * continues without overflow, and the time of a CLOCK_MONOTONIC sample,
 * which is never negative.  Anything else was not written by a run.
 */
int
kp_clock_stored_ok(int64_t seq, int64_t stored_us)
{
	return seq >= 0 && seq < INT64_MAX && stored_us >= 0;
}

/*
 * A one-shot run, started now (kp_clock_start): its sample ends interval
 * seq + 1, begun by the sample an earlier run stored at stored_us.  0, with
 * a warning naming the state file path, if that sample is not in the past
 * (a state file edited or copied from elsewhere): then no interval ends and
 * this sample is a new baseline, never a negative dt_us.
 */
int
kp_clock_resume(struct kp_clock *c, int64_t seq, int64_t stored_us,
    const char *path)
{
	c->seq = seq;
	if (c->end_us <= stored_us) {
		warnx("%s: the stored sample is not in the past, starting a "
		    "new baseline", path);
		return 0;
	}
	c->seq = seq + 1;
	c->dt_us = c->end_us - stored_us;
	return 1;
}
