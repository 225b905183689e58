/*
 * rapl-read's source model: where nothing measures, an estimate of the
 * machine at its supply, zone platform, from the CPU usage in
 * <proc>/stat.
 */
#include <err.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "rapl.h"

extern const struct source model_source;

static double idle_watts = 10, max_watts = 50;
static const char *procdir;
static struct kp_cpu_times prev_ct;	/* the last sample of <proc>/stat */
static int has_prev_ct;

static void
model_option(const char *name, const char *arg)
{
	if (name == NULL) {
		if (idle_watts > max_watts)
			errx(KP_EXIT_USAGE, "idle watts must not exceed max "
			    "watts: %g > %g", idle_watts, max_watts);
	} else if (strcmp(name, "idle-watts") == 0)
		idle_watts = kp_parse_double(arg, 0, 100000, "idle watts");
	else
		max_watts = kp_parse_double(arg, 0, 100000, "max watts");
}

/* Power rises in a straight line from idle to max with the CPU usage. */
static double
model_watts(double usage_ratio)
{
	return idle_watts + (max_watts - idle_watts) * usage_ratio;
}

static int
model_open(struct meter *m, char *why, size_t len)
{
	struct member *mb;
	struct kp_cpu_times ct;

	procdir = m->procdir;
	mb = new_member(m, &model_source, "model");
	mb->reading = READ_MEAN_POWER_UW;
	xpath(mb->zone, sizeof(mb->zone), "platform");
	xpath(mb->where, sizeof(mb->where), "%s/stat", procdir);
	if (kp_read_cpu_times(procdir, &ct) < 0) {
		mb->errnum = errno;
		xpath(mb->bad, sizeof(mb->bad), "%s", mb->where);
		snprintf(why, len, "cannot read '%s': %s", mb->bad,
		    strerror(mb->errnum));
		return KP_EXIT_FAILURE;
	}
	return 0;
}

/*
 * The mean power since the last sample, from the CPU usage between the
 * two.  The first sample is only a baseline.  Counts that went back
 * (the machine moved to another host, or a stored sample of another
 * boot) give no estimate for the interval, said, and are the next
 * baseline.
 */
static int
model_read(struct member *mb, int64_t deadline_us)
{
	struct kp_cpu_times ct;
	int had = has_prev_ct;
	double ratio = 0;

	(void)deadline_us;
	if (kp_read_cpu_times(procdir, &ct) < 0)
		return -1;
	if (had && (ct.total_ticks < prev_ct.total_ticks ||
	    ct.active_ticks < prev_ct.active_ticks)) {
		warnx("'%s': the CPU time went back from %llu to %llu ticks: "
		    "no estimate for the interval, counted again from here",
		    mb->where, (unsigned long long)prev_ct.total_ticks,
		    (unsigned long long)ct.total_ticks);
		had = 0;
	} else if (had && ct.total_ticks > prev_ct.total_ticks)
		ratio = kp_usage_ratio(
		    (int64_t)(ct.active_ticks - prev_ct.active_ticks),
		    (int64_t)(ct.total_ticks - prev_ct.total_ticks));
	prev_ct = ct;
	has_prev_ct = 1;
	if (!had)
		return 1;
	mb->cur = (uint64_t)llround(model_watts(ratio) * 1e6);
	return 0;
}

static void
model_fields(struct kp_buf *b, const struct member *one, size_t counters)
{
	(void)one;
	kp_buf_int(b, "sockets", (int64_t)counters);
}

static void
model_describe(char *buf, size_t len)
{
	snprintf(buf, len, "a straight line from %g W idle to %g W busy",
	    idle_watts, max_watts);
}

static void
model_close(void)
{
	has_prev_ct = 0;
}

static void
model_save(json_t *data)
{
	if (!has_prev_ct)
		return;
	json_object_set_new(data, "total_ticks",
	    json_integer((json_int_t)prev_ct.total_ticks));
	json_object_set_new(data, "active_ticks",
	    json_integer((json_int_t)prev_ct.active_ticks));
}

static int
model_load(json_t *data)
{
	json_int_t total_ticks, active_ticks;

	if (json_unpack(data, "{s:I,s:I}", "total_ticks", &total_ticks,
	    "active_ticks", &active_ticks) < 0 || total_ticks < 0 ||
	    active_ticks < 0)
		return -1;
	memset(&prev_ct, 0, sizeof(prev_ct));
	prev_ct.total_ticks = (uint64_t)total_ticks;
	prev_ct.active_ticks = (uint64_t)active_ticks;
	has_prev_ct = 1;
	return 0;
}

static const struct option model_options[] = {
	{ "idle-watts", required_argument, NULL, OPT_SOURCE_OWN },
	{ "max-watts", required_argument, NULL, OPT_SOURCE_OWN },
	{ NULL, 0, NULL, 0 }
};

const struct source model_source = {
	.name = "model",
	.what = "an estimate from the CPU usage",
	.estimates = 1,
	.in_auto = 1,
	.options = model_options,
	.option = model_option,
	.open = model_open,
	.read = model_read,
	.fields = model_fields,
	.describe = model_describe,
	.close = model_close,
	.save = model_save,
	.load = model_load
};
