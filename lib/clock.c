/* Clocks: intervals are measured on CLOCK_MONOTONIC, stamped with UTC. */
#include <errno.h>
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

/* Sleep to an absolute deadline, so that sampling does not drift. */
void
kp_sleep_until_us(int64_t mono_us)
{
	struct timespec ts;

	ts.tv_sec = mono_us / 1000000;
	ts.tv_nsec = (mono_us % 1000000) * 1000;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}
