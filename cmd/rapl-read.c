/*
 * rapl-read: the energy of each RAPL zone per interval, from the kernel's
 * powercap counters, or an estimate from /proc/stat where there are none.
 */
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kp.h"

enum source { SOURCE_AUTO, SOURCE_POWERCAP, SOURCE_MODEL };

/* Long options without a short form. */
enum {
	OPT_IDLE_WATTS = 256,
	OPT_MAX_WATTS,
	OPT_PROC,
	OPT_SOURCE,
	OPT_STATE,
	OPT_SYSFS
};

/* One RAPL counter: one zone of one socket, such as package-1. */
struct member {
	char key[NAME_MAX + 1];		/* its entry: "intel-rapl:1" */
	char zone[NAME_MAX + 1];	/* its name less the socket: "package" */
	char path[PATH_MAX];		/* its energy_uj */
	int fd;
	const char *bad;		/* the file that failed at the start */
	int errnum;			/* and why */
	int warned;
	uint64_t max_uj;		/* where the counter wraps */
	uint64_t prev_uj, cur_uj;
	int has_prev, has_cur;
};

struct meter {
	enum source source;
	const char *sysfs;
	const char *procdir;
	char classdir[PATH_MAX];
	int dir_errnum;
	struct member *members;		/* sorted by zone */
	size_t nmembers;
	double idle_watts, max_watts;
	struct kp_cpu_times prev_ct, cur_ct;
	int has_prev_ct;
};

static void
usage(void)
{
	fprintf(stderr, "usage: rapl-read [-h] [-i duration] [-n count] "
	    "[--idle-watts watts]\n"
	    "                 [--max-watts watts] [--proc dir] "
	    "[--source auto|powercap|model]\n"
	    "                 [--state file] [--sysfs dir]\n");
	exit(KP_EXIT_USAGE);
}

static void
xpath(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len)
		errx(KP_EXIT_FAILURE, "path too long: '%s'", buf);
}

static enum source
parse_source(const char *s)
{
	if (strcmp(s, "auto") == 0)
		return SOURCE_AUTO;
	if (strcmp(s, "powercap") == 0)
		return SOURCE_POWERCAP;
	if (strcmp(s, "model") == 0)
		return SOURCE_MODEL;
	errx(KP_EXIT_USAGE, "source must be auto, powercap or model: '%s'", s);
}

static const char *
source_name(const struct meter *m)
{
	return m->source == SOURCE_MODEL ? "model" : "powercap";
}

/* A counter as the kernel prints it: digits and a newline; -1 with errno. */
static int
parse_uj(const char *s, uint64_t *uj)
{
	char *end;

	errno = 0;
	if (*s >= '0' && *s <= '9') {
		*uj = strtoull(s, &end, 10);
		if (errno == 0 && (*end == '\0' || strcmp(end, "\n") == 0))
			return 0;
	}
	errno = EINVAL;
	return -1;
}

/* Zones are listed package first, then as the kernel documents them. */
static int
zone_rank(const char *zone)
{
	static const char *const known[] = {
		"package", "core", "uncore", "dram", "psys"
	};
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(zone, known[i]) == 0)
			return (int)i;
	return (int)i;
}

static int
member_cmp(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	int d;

	if ((d = zone_rank(x->zone) - zone_rank(y->zone)) != 0)
		return d;
	if ((d = strcmp(x->zone, y->zone)) != 0)
		return d;
	return strverscmp(x->key, y->key);
}

/* "package-1\n" becomes "package": sockets are summed under one name. */
static void
zone_name(char *name)
{
	char *dash;

	name[strcspn(name, "\n")] = '\0';
	if ((dash = strrchr(name, '-')) != NULL && dash[1] != '\0' &&
	    strspn(dash + 1, "0123456789") == strlen(dash + 1))
		*dash = '\0';
}

/*
 * The counter, read again through the file kept open: a sysfs attribute
 * is produced anew on each read at offset 0.  -1 with errno.
 */
static int
read_counter(struct member *mb)
{
	char buf[32];
	ssize_t n;
	int saved;

	if (mb->fd < 0 &&
	    (mb->fd = open(mb->path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if ((n = pread(mb->fd, buf, sizeof(buf) - 1, 0)) < 0) {
		saved = errno;
		close(mb->fd);
		mb->fd = -1;
		errno = saved;
		return -1;
	}
	buf[n] = '\0';
	return parse_uj(buf, &mb->cur_uj);
}

static void
member_failed(struct member *mb, const char *file)
{
	mb->bad = file;
	mb->errnum = errno;
}

static void
add_member(struct meter *m, int classfd, const char *key)
{
	struct member *mb;
	char file[PATH_MAX], buf[256];

	m->members = reallocarray(m->members, m->nmembers + 1,
	    sizeof(*m->members));
	if (m->members == NULL)
		err(KP_EXIT_FAILURE, "malloc");
	mb = &m->members[m->nmembers++];
	memset(mb, 0, sizeof(*mb));
	mb->fd = -1;
	xpath(mb->key, sizeof(mb->key), "%s", key);
	xpath(mb->path, sizeof(mb->path), "%s/%s/energy_uj", m->classdir, key);
	xpath(file, sizeof(file), "%s/name", key);
	if (kp_read_file(classfd, file, buf, sizeof(buf)) < 0) {
		member_failed(mb, "name");
		return;
	}
	zone_name(buf);
	xpath(mb->zone, sizeof(mb->zone), "%s", buf);
	xpath(file, sizeof(file), "%s/max_energy_range_uj", key);
	if (kp_read_file(classfd, file, buf, sizeof(buf)) < 0 ||
	    parse_uj(buf, &mb->max_uj) < 0) {
		member_failed(mb, "max_energy_range_uj");
		return;
	}
	if (read_counter(mb) < 0)
		member_failed(mb, "energy_uj");
}

/* Every intel-rapl:* entry, zones and subzones alike, listed side by side. */
static void
discover(struct meter *m)
{
	struct dirent *de;
	DIR *dir;

	xpath(m->classdir, sizeof(m->classdir), "%s/class/powercap", m->sysfs);
	if ((dir = opendir(m->classdir)) == NULL) {
		if (errno != ENOENT && errno != ENOTDIR)
			m->dir_errnum = errno;
		return;
	}
	while ((errno = 0, de = readdir(dir)) != NULL)
		if (strncmp(de->d_name, "intel-rapl:", 11) == 0)
			add_member(m, dirfd(dir), de->d_name);
	if (errno != 0)
		m->dir_errnum = errno;
	closedir(dir);
	if (m->nmembers > 0)
		qsort(m->members, m->nmembers, sizeof(*m->members),
		    member_cmp);
}

static void
member_file(const struct meter *m, const struct member *mb, char *buf,
    size_t len)
{
	xpath(buf, len, "%s/%s/%s", m->classdir, mb->key, mb->bad);
}

/*
 * Why the powercap source cannot be used, in why, and the exit status
 * that says so; 0 if it can.  A counter that cannot be read for lack of
 * permission stops it; other unreadable counters only leave their zone out.
 */
static int
powercap_problem(const struct meter *m, char *why, size_t len)
{
	const struct member *first = NULL;
	char file[PATH_MAX];
	size_t i, usable = 0;

	if (m->dir_errnum != 0) {
		snprintf(why, len, "cannot read '%s': %s", m->classdir,
		    strerror(m->dir_errnum));
		return KP_EXIT_FAILURE;
	}
	if (m->nmembers == 0) {
		snprintf(why, len, "no RAPL zones under '%s'", m->classdir);
		return KP_EXIT_NOSOURCE;
	}
	for (i = 0; i < m->nmembers; i++) {
		if (m->members[i].bad == NULL)
			usable++;
		else if (m->members[i].errnum == EACCES ||
		    m->members[i].errnum == EPERM) {
			first = &m->members[i];
			break;
		} else if (first == NULL)
			first = &m->members[i];
	}
	if (usable > 0 && i == m->nmembers)
		return 0;
	member_file(m, first, file, sizeof(file));
	snprintf(why, len, "cannot read '%s': %s", file,
	    strerror(first->errnum));
	if (first->errnum == EACCES || first->errnum == EPERM)
		return KP_EXIT_NOPERM;
	return KP_EXIT_FAILURE;
}

static void
warn_bad_members(struct meter *m)
{
	struct member *mb;
	char file[PATH_MAX];
	size_t i;

	for (i = 0; i < m->nmembers; i++) {
		mb = &m->members[i];
		if (mb->bad == NULL)
			continue;
		member_file(m, mb, file, sizeof(file));
		warnx("cannot read '%s': %s", file, strerror(mb->errnum));
		mb->warned = 1;
	}
}

static void
close_members(struct meter *m)
{
	size_t i;

	for (i = 0; i < m->nmembers; i++)
		if (m->members[i].fd >= 0)
			close(m->members[i].fd);
	free(m->members);
	m->members = NULL;
	m->nmembers = 0;
}

/* Settles the source: --source auto falls back to the model, saying why. */
static void
open_source(struct meter *m, enum source want)
{
	char why[2 * PATH_MAX];
	int status;

	m->source = SOURCE_MODEL;
	if (want == SOURCE_MODEL)
		return;
	discover(m);
	if ((status = powercap_problem(m, why, sizeof(why))) == 0) {
		m->source = SOURCE_POWERCAP;
		warn_bad_members(m);
		return;
	}
	if (want == SOURCE_POWERCAP && status == KP_EXIT_NOPERM)
		errx(status, "%s; run as root or grant read access to the "
		    "file (a udev rule, see rapl-read(1))", why);
	if (want == SOURCE_POWERCAP)
		errx(status, "%s", why);
	warnx("%s: estimating energy from %s/stat (--source model)", why,
	    m->procdir);
	close_members(m);
}

static void
sample_member(struct member *mb)
{
	mb->has_cur = 0;
	if (mb->bad != NULL && strcmp(mb->bad, "energy_uj") != 0)
		return;
	if (read_counter(mb) == 0) {
		mb->has_cur = 1;
		return;
	}
	if (!mb->warned)
		warn("cannot read '%s'", mb->path);
	mb->warned = 1;
}

static void
sample(struct meter *m)
{
	size_t i;

	if (m->source == SOURCE_MODEL) {
		if (kp_read_cpu_times(m->procdir, &m->cur_ct) < 0)
			err(KP_EXIT_FAILURE, "%s/stat", m->procdir);
		return;
	}
	for (i = 0; i < m->nmembers; i++)
		sample_member(&m->members[i]);
}

/* The current sample becomes the baseline of the next interval. */
static void
advance(struct meter *m)
{
	size_t i;

	m->prev_ct = m->cur_ct;
	m->has_prev_ct = 1;
	for (i = 0; i < m->nmembers; i++) {
		m->members[i].prev_uj = m->members[i].cur_uj;
		m->members[i].has_prev = m->members[i].has_cur;
	}
}

/* How far a counter went, if it wrapped at most once. */
static uint64_t
delta_uj(const struct member *mb)
{
	if (mb->cur_uj >= mb->prev_uj)
		return mb->cur_uj - mb->prev_uj;
	return mb->max_uj - mb->prev_uj + mb->cur_uj;
}

static json_t *
energy_rec_new(int64_t seq, const char *zone, int64_t energy_uj,
    int64_t dt_us, const char *source, size_t sockets)
{
	json_t *rec;

	rec = kp_rec_new("energy", seq);
	json_object_set_new(rec, "zone", kp_json_text(zone));
	json_object_set_new(rec, "energy_uj", json_integer(energy_uj));
	json_object_set_new(rec, "watts",
	    json_real((double)energy_uj / (double)dt_us));
	json_object_set_new(rec, "source", json_string(source));
	json_object_set_new(rec, "estimated",
	    json_boolean(strcmp(source, "model") == 0));
	json_object_set_new(rec, "sockets", json_integer((json_int_t)sockets));
	return rec;
}

/*
 * A zone's record, summed over its n counters: a sum that missed a socket
 * would not be the zone's energy, so then there is no record.
 */
static void
emit_zone(const struct member *mb, size_t n, int64_t seq, int64_t dt_us)
{
	uint64_t energy_uj = 0;
	size_t i;

	if (mb->zone[0] == '\0')
		return;
	for (i = 0; i < n; i++) {
		if (!mb[i].has_prev || !mb[i].has_cur)
			return;
		energy_uj += delta_uj(&mb[i]);
	}
	kp_out_json_new(energy_rec_new(seq, mb->zone, (int64_t)energy_uj,
	    dt_us, "powercap", n));
}

static void
emit_powercap(const struct meter *m, int64_t seq, int64_t dt_us)
{
	const struct member *mb = m->members;
	size_t i, j;

	for (i = 0; i < m->nmembers; i = j) {
		for (j = i + 1; j < m->nmembers &&
		    strcmp(mb[j].zone, mb[i].zone) == 0; j++)
			;
		emit_zone(&mb[i], j - i, seq, dt_us);
	}
}

static double
usage_ratio(const struct kp_cpu_times *prev, const struct kp_cpu_times *cur)
{
	double ratio;

	if (cur->total_ticks <= prev->total_ticks ||
	    cur->active_ticks < prev->active_ticks)
		return 0;
	ratio = (double)(cur->active_ticks - prev->active_ticks) /
	    (double)(cur->total_ticks - prev->total_ticks);
	return ratio > 1 ? 1 : ratio;
}

/* Power rises in a straight line from idle to max with the CPU usage. */
static int64_t
model_energy_uj(const struct meter *m, int64_t dt_us, double ratio)
{
	return llround((double)dt_us *
	    (m->idle_watts + (m->max_watts - m->idle_watts) * ratio));
}

static void
emit(const struct meter *m, int64_t seq, int64_t dt_us)
{
	double ratio;

	if (m->source == SOURCE_POWERCAP) {
		emit_powercap(m, seq, dt_us);
		return;
	}
	if (!m->has_prev_ct)
		return;
	ratio = usage_ratio(&m->prev_ct, &m->cur_ct);
	kp_out_json_new(energy_rec_new(seq, "package",
	    model_energy_uj(m, dt_us, ratio), dt_us, "model", 1));
}

static void
run_clock(struct meter *m, int64_t interval_us, long long count)
{
	int64_t start_us, prev_us, now_us, wall_us, seq;

	kp_out_header("rapl-read");
	start_us = prev_us = kp_mono_us();
	sample(m);
	advance(m);
	for (seq = 1; count == 0 || seq <= count; seq++) {
		kp_sleep_until_us(start_us + seq * interval_us);
		now_us = kp_mono_us();
		wall_us = kp_wall_us();
		sample(m);
		emit(m, seq, now_us - prev_us);
		advance(m);
		kp_out_interval(seq, wall_us, now_us - prev_us);
		prev_us = now_us;
	}
}

static int
load_members(struct meter *m, json_t *data)
{
	struct member *mb;
	json_t *members, *v;
	size_t i;

	if (json_unpack(data, "{s:o}", "members", &members) < 0 ||
	    !json_is_object(members))
		return -1;
	for (i = 0; i < m->nmembers; i++) {
		mb = &m->members[i];
		v = json_object_get(members, mb->key);
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    (uint64_t)json_integer_value(v) > mb->max_uj)
			continue;	/* new: this run is its baseline */
		mb->prev_uj = (uint64_t)json_integer_value(v);
		mb->has_prev = 1;
	}
	return 0;
}

static int
load_ticks(struct meter *m, json_t *data)
{
	json_int_t total_ticks, active_ticks;

	if (json_unpack(data, "{s:I,s:I}", "total_ticks", &total_ticks,
	    "active_ticks", &active_ticks) < 0 || total_ticks < 0 ||
	    active_ticks < 0)
		return -1;
	m->prev_ct.total_ticks = (uint64_t)total_ticks;
	m->prev_ct.active_ticks = (uint64_t)active_ticks;
	m->has_prev_ct = 1;
	return 0;
}

/* The previous run's sample as the baseline; 0 if there is none to use. */
static int
load_state(struct meter *m, struct kp_state *st, const char *path,
    json_int_t *seq, json_int_t *mono_us)
{
	json_t *data;
	const char *source;
	int rv;

	if ((data = kp_state_data(st)) == NULL)
		return 0;
	if (json_unpack(data, "{s:I,s:I,s:s}", "seq", seq, "mono_us", mono_us,
	    "source", &source) < 0 || *seq < 0)
		goto bad;
	if (strcmp(source, source_name(m)) != 0) {
		warnx("%s: the stored sample is from source '%s', not '%s'; "
		    "starting a new baseline", path, source, source_name(m));
		return 0;
	}
	rv = m->source == SOURCE_MODEL ? load_ticks(m, data) :
	    load_members(m, data);
	if (rv == 0)
		return 1;
bad:
	warnx("%s: unusable sample in the state file, starting a new baseline",
	    path);
	*seq = 0;
	return 0;
}

static void
save_state(const struct meter *m, struct kp_state *st, json_int_t seq,
    int64_t mono_us)
{
	json_t *data, *members;
	size_t i;

	data = json_pack("{s:I,s:I,s:s}", "seq", seq, "mono_us",
	    (json_int_t)mono_us, "source", source_name(m));
	if (data == NULL)
		errx(KP_EXIT_FAILURE, "cannot build the state");
	if (m->source == SOURCE_MODEL) {
		json_object_set_new(data, "total_ticks",
		    json_integer((json_int_t)m->cur_ct.total_ticks));
		json_object_set_new(data, "active_ticks",
		    json_integer((json_int_t)m->cur_ct.active_ticks));
	} else {
		members = json_object();
		for (i = 0; i < m->nmembers; i++)
			if (m->members[i].has_cur)
				json_object_set_new(members, m->members[i].key,
				    json_integer(
				    (json_int_t)m->members[i].cur_uj));
		json_object_set_new(data, "members", members);
	}
	kp_state_commit_new(st, data);
}

/* One sample against the previous run's: at most one interval. */
static void
run_once(struct meter *m, struct kp_state *st, const char *path)
{
	json_int_t seq = 0, stored_us = 0;
	int64_t now_us, wall_us;
	int usable;

	kp_out_header("rapl-read");
	usable = load_state(m, st, path, &seq, &stored_us);
	now_us = kp_mono_us();
	wall_us = kp_wall_us();
	sample(m);
	if (usable && now_us <= stored_us) {
		warnx("%s: the stored sample is not in the past, starting a "
		    "new baseline", path);
		usable = 0;
	}
	if (usable) {
		seq++;
		emit(m, seq, now_us - stored_us);
		kp_out_interval(seq, wall_us, now_us - stored_us);
	}
	save_state(m, st, seq, now_us);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "count", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ "idle-watts", required_argument, NULL, OPT_IDLE_WATTS },
		{ "interval", required_argument, NULL, 'i' },
		{ "max-watts", required_argument, NULL, OPT_MAX_WATTS },
		{ "proc", required_argument, NULL, OPT_PROC },
		{ "source", required_argument, NULL, OPT_SOURCE },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "sysfs", required_argument, NULL, OPT_SYSFS },
		{ NULL, 0, NULL, 0 }
	};
	struct meter m = {
		.sysfs = "/sys", .procdir = "/proc",
		.idle_watts = 10, .max_watts = 50
	};
	enum source want = SOURCE_AUTO;
	const char *statepath = NULL;
	struct kp_state *st;
	int64_t interval_us = 1000000;
	long long count = 0;
	int clock = 0, ch;

	kp_out_init();
	while ((ch = getopt_long(argc, argv, "hi:n:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'i':
			interval_us = kp_parse_duration_us(optarg, "interval");
			clock = 1;
			break;
		case 'n':
			count = kp_parse_int(optarg, 1, INT64_MAX, "count");
			clock = 1;
			break;
		case OPT_IDLE_WATTS:
			m.idle_watts = kp_parse_double(optarg, 0, 100000,
			    "idle watts");
			break;
		case OPT_MAX_WATTS:
			m.max_watts = kp_parse_double(optarg, 0, 100000,
			    "max watts");
			break;
		case OPT_PROC:
			m.procdir = optarg;
			break;
		case OPT_SOURCE:
			want = parse_source(optarg);
			break;
		case OPT_STATE:
			statepath = optarg;
			break;
		case OPT_SYSFS:
			m.sysfs = optarg;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 0)
		usage();
	if (clock && statepath != NULL)
		errx(KP_EXIT_USAGE, "--state cannot be used with -i or -n");
	if (m.idle_watts > m.max_watts)
		errx(KP_EXIT_USAGE, "idle watts must not exceed max watts: "
		    "%g > %g", m.idle_watts, m.max_watts);

	open_source(&m, want);
	if (statepath != NULL) {
		st = kp_state_open(statepath, m.procdir, "rapl-read");
		run_once(&m, st, statepath);
		kp_state_close(st);
	} else
		run_clock(&m, interval_us, count);
	close_members(&m);
	return kp_out_finish(KP_EXIT_OK);
}
