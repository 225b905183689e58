/*
 * Arithmetic on energy and CPU time that every stage does alike, so that a
 * watt or a usage ratio is one figure whichever stage prints it.
 */
#include "kp.h"

/* The mean power of an interval: microjoules per microsecond are watts. */
double
kp_watts(int64_t energy_uj, int64_t dt_us)
{
	return dt_us > 0 ? (double)energy_uj / (double)dt_us : 0;
}

/*
 * The share of whole that part is, in [0, 1]: the one rule for a usage
 * ratio, whose parts may come from counters sampled at different times.
 */
double
kp_usage_ratio(int64_t part, int64_t whole)
{
	if (whole <= 0 || part <= 0)
		return 0;
	if (part >= whole)
		return 1;
	return (double)part / (double)whole;
}
