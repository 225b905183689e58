/* Command-line numbers: parsed whole, range-checked, rejected with errx. */
#include <err.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kp.h"

long long
kp_parse_int(const char *s, long long min, long long max, const char *what)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end != '\0' || errno == ERANGE || v < min || v > max)
		errx(KP_EXIT_USAGE, "%s must be an integer from %lld to %lld: '%s'",
		    what, min, max, s);
	return v;
}

double
kp_parse_double(const char *s, double min, double max, const char *what)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v) ||
	    v < min || v > max)
		errx(KP_EXIT_USAGE, "%s must be a number from %g to %g: '%s'",
		    what, min, max, s);
	return v;
}

/*
 * An energy in joules, as --min-terminated-energy takes it: up to 10^12 J,
 * in microjoules to the nearest.
 */
int64_t
kp_parse_joules_uj(const char *s, const char *what)
{
	return (int64_t)llround(kp_parse_double(s, 0, 1e12, what) * 1e6);
}

/* A positive duration with a unit: 500ms, 2s, 1.5s, 1m.  At most one day. */
int64_t
kp_parse_duration_us(const char *s, const char *what)
{
	static const struct { const char *unit; double us; } units[] = {
		{ "us", 1 }, { "ms", 1e3 }, { "s", 1e6 }, { "m", 60e6 },
	};
	char *end;
	double v;
	size_t i;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno == ERANGE || !isfinite(v) || v <= 0)
		goto bad;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit) == 0) {
			v *= units[i].us;
			if (v < 1 || v > 86400e6)
				goto bad;
			return (int64_t)llround(v);
		}
	}
bad:
	errx(KP_EXIT_USAGE, "%s must be a positive duration up to 1 day "
	    "with a unit (us, ms, s, m): '%s'", what, s);
}
