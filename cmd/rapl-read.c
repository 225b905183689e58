/*
 * rapl-read: the energy of each RAPL zone per interval, from the kernel's
 * powercap counters, from ACPI power meters, or an estimate from /proc/stat
 * where there are neither.
 */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kp.h"

enum source { SOURCE_AUTO, SOURCE_POWERCAP, SOURCE_HWMON, SOURCE_MODEL };

/* Long options without a short form. */
enum {
	OPT_IDLE_WATTS = 256,
	OPT_LIST,
	OPT_MAX_WATTS,
	OPT_NODE_NAME,
	OPT_PER_SOCKET,
	OPT_PROC,
	OPT_SOURCE,
	OPT_STATE,
	OPT_SYSFS
};

#define NO_SOCKET	(-1)	/* psys, a power meter: the whole node */
#define ANY_SOCKET	(-2)

/*
 * The most a RAPL counter plausibly counts: a 500 W server package.  A
 * counter may wrap twice, unseen, in an interval longer than its range
 * at this power.
 */
#define MAX_ZONE_WATTS	500

/*
 * A step no counter can make: more energy than MAX_STEP_WATTS over the
 * interval, forwards or through a wrap, is a counter that was reset or
 * replaced, or a value read wrong, not energy.
 */
#define MAX_STEP_WATTS	(4 * MAX_ZONE_WATTS)

/* One counter: one zone of one socket or die, such as package-1, or a meter. */
struct member {
	char key[NAME_MAX + 1];		/* its entry: "intel-rapl:1", "hwmon2" */
	char zone[NAME_MAX + 1];	/* its name less the socket: "package" */
	int socket;			/* or NO_SOCKET */
	int enabled;			/* its power limit's; -1: not said */
	char dup_of[NAME_MAX + 1];	/* the entry it repeats, if any */
	int wanted;			/* read and reported */
	char path[PATH_MAX];		/* its energy_uj, or power1_* in uW */
	int fd;
	char bad[PATH_MAX];		/* the file that failed at the start */
	int errnum;			/* and why */
	int warned;			/* a failed read said */
	int warned_step;		/* an impossible step said */
	uint64_t max_uj;		/* where the counter wraps; 0: a meter */
	uint64_t prev, cur;		/* uJ, or uW for a meter */
	int has_prev, has_cur;
};

struct meter {
	enum source source;
	const char *sysfs;
	const char *procdir;
	const char *node_name;		/* --node-name; NULL: found */
	char classdir[PATH_MAX];
	int dir_errnum;
	struct member *members;		/* sorted by zone, then socket */
	size_t nmembers;
	char **zones;			/* -z; NULL: every zone but node */
	size_t nzones;
	int per_socket;
	double idle_watts, max_watts;
	struct kp_cpu_times prev_ct, cur_ct;
	int has_prev_ct;
};

static void
usage(void)
{
	fprintf(stderr, "usage: rapl-read [-h] [-i duration] [-n count] "
	    "[-z zone,...] [--idle-watts watts]\n"
	    "                 [--list] [--max-watts watts] "
	    "[--node-name name] [--per-socket]\n"
	    "                 [--proc dir] [--source auto|powercap|hwmon|model] "
	    "[--state file]\n"
	    "                 [--sysfs dir] [-- command [arg ...]]\n");
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
	if (strcmp(s, "hwmon") == 0)
		return SOURCE_HWMON;
	if (strcmp(s, "model") == 0)
		return SOURCE_MODEL;
	errx(KP_EXIT_USAGE, "source must be auto, powercap, hwmon or model: "
	    "'%s'", s);
}

static const char *
source_name(enum source source)
{
	static const char *const names[] = {
		"auto", "powercap", "hwmon", "model"
	};

	return names[source];
}

/* -z package,dram: the zones to report, node being the node's total. */
static void
parse_zones(struct meter *m, char *list)
{
	char *zone;

	while ((zone = strsep(&list, ",")) != NULL) {
		if (*zone == '\0' || strlen(zone) > NAME_MAX)
			errx(KP_EXIT_USAGE, "zones must be a list of names "
			    "separated by commas: '%s'", zone);
		m->zones = kp_reallocarray(m->zones, m->nzones + 1,
		    sizeof(*m->zones));
		m->zones[m->nzones++] = zone;
	}
}

static int
selected(const struct meter *m, const char *zone)
{
	size_t i;

	if (m->zones == NULL)
		return strcmp(zone, "node") != 0;
	for (i = 0; i < m->nzones; i++)
		if (strcmp(m->zones[i], zone) == 0)
			return 1;
	return 0;
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
		"package", "core", "uncore", "dram", "psys", "meter"
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
	if (x->socket != y->socket)
		return x->socket < y->socket ? -1 : 1;
	return strverscmp(x->key, y->key);
}

/* Digits only, as in a socket or die number; -1 otherwise. */
static int
number(const char *s)
{
	if (*s == '\0' || strspn(s, "0123456789") != strlen(s) ||
	    strlen(s) > 6)
		return -1;
	return atoi(s);
}

/*
 * The zone in the n bytes of a name file, one line: "package-1-die-0\n"
 * becomes "package" of socket 1 (or NO_SOCKET), as the dies and sockets of
 * a zone are summed under one name.  0 if the zone breaks the rule for a
 * zone's name (kp-records(5)), which an empty name does too.
 */
static int
split_name(char *name, size_t n, int *socket)
{
	char *p;

	if (n > 0 && name[n - 1] == '\n')
		name[--n] = '\0';
	*socket = NO_SOCKET;
	if (strlen(name) != n)
		return 0;	/* a NUL inside */
	if ((p = strstr(name, "-die-")) != NULL && number(p + 5) >= 0)
		*p = '\0';
	if ((p = strrchr(name, '-')) != NULL && number(p + 1) >= 0) {
		*socket = number(p + 1);
		*p = '\0';
	}
	return kp_zone_name_ok(name, strlen(name));
}

/*
 * The counter, read again through the file kept open: a sysfs attribute
 * is produced anew on each read at offset 0.  An attribute of a zone that
 * was removed reads as an error or as nothing; the file is then closed, to
 * be opened anew when the zone comes back.  -1 with errno.
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
	if ((n = pread(mb->fd, buf, sizeof(buf) - 1, 0)) <= 0) {
		saved = n == 0 ? ENODEV : errno;
		close(mb->fd);
		mb->fd = -1;
		errno = saved;
		return -1;
	}
	buf[n] = '\0';
	return parse_uj(buf, &mb->cur);
}

static void
member_failed(struct member *mb, const char *dir, const char *file)
{
	mb->errnum = errno;
	xpath(mb->bad, sizeof(mb->bad), "%s/%s", dir, file);
}

static struct member *
new_member(struct meter *m, const char *key)
{
	struct member *mb;

	m->members = kp_reallocarray(m->members, m->nmembers + 1,
	    sizeof(*m->members));
	mb = &m->members[m->nmembers++];
	memset(mb, 0, sizeof(*mb));
	mb->fd = -1;
	mb->socket = NO_SOCKET;
	mb->enabled = -1;
	mb->wanted = 1;
	xpath(mb->key, sizeof(mb->key), "%s", key);
	return mb;
}

/* The files of zone entry key, in dir, beside its name. */
static void
open_zone(struct member *mb, int classfd, const char *key, const char *dir)
{
	char file[PATH_MAX], buf[256];
	uint64_t enabled;

	xpath(file, sizeof(file), "%s/enabled", key);
	if (kp_read_file(classfd, file, buf, sizeof(buf)) >= 0 &&
	    parse_uj(buf, &enabled) == 0)
		mb->enabled = enabled != 0;
	xpath(file, sizeof(file), "%s/max_energy_range_uj", key);
	if (kp_read_file(classfd, file, buf, sizeof(buf)) < 0 ||
	    parse_uj(buf, &mb->max_uj) < 0 || mb->max_uj == 0 ||
	    mb->max_uj > INT64_MAX) {
		if (errno == 0)
			errno = EINVAL;
		member_failed(mb, dir, "max_energy_range_uj");
		return;
	}
	if (read_counter(mb) < 0)
		member_failed(mb, dir, "energy_uj");
}

/*
 * A zone whose name breaks the rule is said once and left out: its name
 * could not be written as it is into a record, a label or a file name.
 * One whose name cannot be read is kept, to be listed and said as
 * unreadable.
 */
static void
add_zone(struct meter *m, int classfd, const char *key)
{
	struct member *mb;
	char dir[PATH_MAX], file[PATH_MAX], name[256];
	int n, errnum, socket = NO_SOCKET;

	xpath(dir, sizeof(dir), "%s/%s", m->classdir, key);
	xpath(file, sizeof(file), "%s/name", key);
	n = kp_read_file(classfd, file, name, sizeof(name));
	errnum = errno;
	if (n >= 0 && !split_name(name, (size_t)n, &socket)) {
		warnx("'%s/name': not a zone's name of 1 to %d ASCII letters, "
		    "digits, '-', '_' or '.': zone left out", dir,
		    KP_ZONE_NAME_MAX);
		return;
	}
	mb = new_member(m, key);
	xpath(mb->path, sizeof(mb->path), "%s/energy_uj", dir);
	if (n < 0) {
		errno = errnum;
		member_failed(mb, dir, "name");
		return;
	}
	mb->socket = socket;
	xpath(mb->zone, sizeof(mb->zone), "%s", name);
	open_zone(mb, classfd, key, dir);
}

static struct member *
find_member(struct meter *m, const char *key)
{
	size_t i;

	for (i = 0; i < m->nmembers; i++)
		if (strcmp(m->members[i].key, key) == 0)
			return &m->members[i];
	return NULL;
}

/* The one of two counters of the same zone and socket that is not read. */
static void
drop_repeat(struct member *repeat, const struct member *kept)
{
	xpath(repeat->dup_of, sizeof(repeat->dup_of), "%s", kept->key);
	repeat->wanted = 0;
}

/*
 * A subzone (intel-rapl:0:1, whose directory is inside its package's) is
 * of its package's socket; a package counter exposed through MMIO as well
 * as through the MSR interface is counted once, through the MSR unless
 * only the MMIO one can be read.
 */
static void
settle_zones(struct meter *m)
{
	struct member *mb, *up;
	char parent[NAME_MAX + 1];
	size_t i, j;

	for (i = 0; i < m->nmembers; i++) {
		mb = &m->members[i];
		snprintf(parent, sizeof(parent), "%s", mb->key);
		*strrchr(parent, ':') = '\0';
		if (strchr(parent, ':') != NULL &&
		    (up = find_member(m, parent)) != NULL &&
		    mb->socket == NO_SOCKET)
			mb->socket = up->socket;
	}
	for (i = 0; i < m->nmembers; i++) {
		mb = &m->members[i];
		if (strncmp(mb->key, "intel-rapl-mmio:", 16) != 0)
			continue;
		for (j = 0; j < m->nmembers; j++) {
			up = &m->members[j];
			if (strncmp(up->key, "intel-rapl:", 11) != 0 ||
			    up->zone[0] == '\0' ||
			    strcmp(up->zone, mb->zone) != 0 ||
			    up->socket != mb->socket)
				continue;
			if (up->bad[0] != '\0' && mb->bad[0] == '\0')
				drop_repeat(up, mb);
			else
				drop_repeat(mb, up);
			break;
		}
	}
}

/*
 * Calls add for each entry of SYSFS/class/<class>; an unreadable class
 * directory (not a missing one) is kept in dir_errnum for the caller.
 */
static void
scan_class(struct meter *m, const char *class,
    void (*add)(struct meter *, int, const char *))
{
	struct dirent *de;
	DIR *dir;

	xpath(m->classdir, sizeof(m->classdir), "%s/class/%s", m->sysfs,
	    class);
	if ((dir = opendir(m->classdir)) == NULL) {
		if (errno != ENOENT && errno != ENOTDIR)
			m->dir_errnum = errno;
		return;
	}
	while ((errno = 0, de = readdir(dir)) != NULL)
		if (de->d_name[0] != '.')
			add(m, dirfd(dir), de->d_name);
	if (errno != 0)
		m->dir_errnum = errno;
	closedir(dir);
}

static void
add_powercap_entry(struct meter *m, int classfd, const char *key)
{
	if (strncmp(key, "intel-rapl:", 11) == 0 ||
	    strncmp(key, "intel-rapl-mmio:", 16) == 0)
		add_zone(m, classfd, key);
}

/* Every intel-rapl zone, zones and subzones alike, listed side by side. */
static void
discover_powercap(struct meter *m)
{
	scan_class(m, "powercap", add_powercap_entry);
	settle_zones(m);
}

/* An ACPI power meter: its average power if it keeps one, else its reading. */
static void
add_meter(struct meter *m, int classfd, const char *key)
{
	static const char *const files[] = { "power1_average", "power1_input" };
	struct member *mb;
	char dir[PATH_MAX], file[PATH_MAX], buf[64];
	size_t i;

	xpath(file, sizeof(file), "%s/name", key);
	if (kp_read_file(classfd, file, buf, sizeof(buf)) < 0 ||
	    strcmp(buf, "power_meter\n") != 0)
		return;
	mb = new_member(m, key);
	xpath(mb->zone, sizeof(mb->zone), "meter");
	xpath(dir, sizeof(dir), "%s/%s", m->classdir, key);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		xpath(mb->path, sizeof(mb->path), "%s/%s", dir, files[i]);
		if (read_counter(mb) == 0)
			return;
		if (errno != ENOENT)	/* there, but unreadable */
			break;
	}
	member_failed(mb, dir, strrchr(mb->path, '/') + 1);
}

static void
discover_hwmon(struct meter *m)
{
	scan_class(m, "hwmon", add_meter);
}

static void
sort_members(struct meter *m)
{
	if (m->nmembers > 0)
		qsort(m->members, m->nmembers, sizeof(*m->members),
		    member_cmp);
}

static int
has_zone(const struct meter *m, const char *zone)
{
	size_t i;

	for (i = 0; i < m->nmembers; i++)
		if (m->members[i].dup_of[0] == '\0' &&
		    strcmp(m->members[i].zone, zone) == 0)
			return 1;
	return 0;
}

/*
 * The zones whose sum is the node's energy, counted once: psys, which
 * contains the others, where there is one; else package and dram, since a
 * package contains its core and uncore.
 */
static int
in_node(const struct meter *m, const char *zone)
{
	if (m->source == SOURCE_HWMON)
		return strcmp(zone, "meter") == 0;
	if (has_zone(m, "psys"))
		return strcmp(zone, "psys") == 0;
	return strcmp(zone, "package") == 0 || strcmp(zone, "dram") == 0;
}

/* Only the counters of the zones reported are read. */
static void
want_members(struct meter *m)
{
	struct member *mb;
	size_t i;

	for (i = 0; i < m->nmembers; i++) {
		mb = &m->members[i];
		if (mb->dup_of[0] != '\0')
			continue;
		mb->wanted = selected(m, mb->zone) ||
		    (selected(m, "node") && in_node(m, mb->zone));
	}
	for (i = 0; i < m->nmembers; i++) {
		mb = &m->members[i];
		if (!mb->wanted && mb->fd >= 0) {
			close(mb->fd);
			mb->fd = -1;
		}
	}
}

static int
denied(int errnum)
{
	return errnum == EACCES || errnum == EPERM;
}

/*
 * Why the source cannot be used, in why, and the exit status that says so;
 * 0 if it can.  A counter that cannot be read for lack of permission stops
 * it; other unreadable counters only leave their zone out.
 */
static int
source_problem(const struct meter *m, const char *what, char *why,
    size_t len)
{
	const struct member *first = NULL, *mb;
	size_t i, usable = 0, wanted = 0;

	if (m->dir_errnum != 0) {
		snprintf(why, len, "cannot read '%s': %s", m->classdir,
		    strerror(m->dir_errnum));
		return KP_EXIT_FAILURE;
	}
	for (i = 0; i < m->nmembers; i++) {
		mb = &m->members[i];
		if (!mb->wanted)
			continue;
		wanted++;
		if (mb->bad[0] == '\0')
			usable++;
		else if (denied(mb->errnum)) {
			first = mb;
			break;
		} else if (first == NULL)
			first = mb;
	}
	if (wanted == 0) {
		if (m->nmembers == 0)
			snprintf(why, len, "no %s under '%s'", what,
			    m->classdir);
		else
			snprintf(why, len, "none of the zones asked for under "
			    "'%s'", m->classdir);
		return KP_EXIT_NOSOURCE;
	}
	if (usable > 0 && i == m->nmembers)
		return 0;
	snprintf(why, len, "cannot read '%s': %s", first->bad,
	    strerror(first->errnum));
	if (denied(first->errnum))
		return KP_EXIT_NOPERM;
	return KP_EXIT_FAILURE;
}

static void
warn_bad_members(struct meter *m)
{
	struct member *mb;
	size_t i;

	for (i = 0; i < m->nmembers; i++) {
		mb = &m->members[i];
		if (!mb->wanted || mb->bad[0] == '\0')
			continue;
		warnx("cannot read '%s': %s", mb->bad, strerror(mb->errnum));
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
	m->dir_errnum = 0;
}

/* Tries one source of counters; 0 if it can be used, else why not. */
static int
try_source(struct meter *m, enum source source, char *why, size_t len)
{
	int status;

	m->source = source;
	if (source == SOURCE_POWERCAP)
		discover_powercap(m);
	else
		discover_hwmon(m);
	sort_members(m);
	want_members(m);
	status = source_problem(m, source == SOURCE_POWERCAP ? "RAPL zones" :
	    "ACPI power meters", why, len);
	if (status == 0)
		warn_bad_members(m);
	return status;
}

static void
unusable(enum source source, int status, const char *why)
{
	if (status == KP_EXIT_NOPERM && source == SOURCE_HWMON)
		errx(status, "%s; run as root or grant read access to the "
		    "file (see rapl-read(1))", why);
	if (status == KP_EXIT_NOPERM)
		errx(status, "%s; run as root or let group 'power' read the "
		    "counters with kp's udev rule scripts/70-powercap.rules "
		    "(see rapl-read(1))", why);
	errx(status, "%s", why);
}

/* The model writes package and node only: -z without them gets nothing. */
static void
use_model(struct meter *m)
{
	m->source = SOURCE_MODEL;
	if (!selected(m, "package") && !selected(m, "node"))
		errx(KP_EXIT_NOSOURCE, "none of the zones asked for is "
		    "estimated: the model writes package and node");
}

/*
 * Settles the source: --source auto takes powercap, else hwmon, else the
 * model, saying why it estimates.
 */
static void
open_source(struct meter *m, enum source want)
{
	char why[2 * PATH_MAX], hwhy[2 * PATH_MAX];
	int status;

	if (want == SOURCE_MODEL) {
		use_model(m);
		return;
	}
	if (want == SOURCE_POWERCAP || want == SOURCE_AUTO) {
		if ((status = try_source(m, SOURCE_POWERCAP, why,
		    sizeof(why))) == 0)
			return;
		if (want == SOURCE_POWERCAP)
			unusable(SOURCE_POWERCAP, status, why);
		close_members(m);
	}
	if ((status = try_source(m, SOURCE_HWMON, hwhy, sizeof(hwhy))) == 0) {
		if (want == SOURCE_AUTO)
			warnx("%s: using ACPI power meters (--source hwmon)",
			    why);
		return;
	}
	if (want == SOURCE_HWMON)
		unusable(SOURCE_HWMON, status, hwhy);
	close_members(m);
	warnx("%s: estimating energy from %s/stat (--source model)", why,
	    m->procdir);
	use_model(m);
}

/* A failure is said once for each counter; its zone is left out meanwhile. */
static void
sample_member(struct member *mb, enum source source)
{
	mb->has_cur = 0;
	if (!mb->wanted || mb->zone[0] == '\0' ||
	    (mb->max_uj == 0 && source != SOURCE_HWMON))
		return;		/* no name or no range: never usable */
	if (read_counter(mb) < 0) {
		if (!mb->warned)
			warn("cannot read '%s'", mb->path);
		mb->warned = 1;
		return;
	}
	if (mb->max_uj > 0 && mb->cur > mb->max_uj) {
		if (!mb->warned)
			warnx("'%s': %llu is above max_energy_range_uj, %llu",
			    mb->path, (unsigned long long)mb->cur,
			    (unsigned long long)mb->max_uj);
		mb->warned = 1;
		return;
	}
	mb->has_cur = 1;
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
		sample_member(&m->members[i], m->source);
}

/* The current sample becomes the baseline of the next interval. */
static void
advance(struct meter *m)
{
	size_t i;

	m->prev_ct = m->cur_ct;
	m->has_prev_ct = 1;
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
static void
drop_impossible_steps(struct meter *m, int64_t dt_us)
{
	struct member *mb;
	uint64_t most_uj;
	size_t i;

	most_uj = dt_us > 0 ? (uint64_t)MAX_STEP_WATTS * (uint64_t)dt_us : 0;
	for (i = 0; i < m->nmembers; i++) {
		mb = &m->members[i];
		if (mb->max_uj == 0 || !mb->has_prev || !mb->has_cur ||
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
 * A counter's energy over the interval; for a meter, its mean power at
 * the two ends times dt_us.
 */
static uint64_t
delta_uj(const struct member *mb, int64_t dt_us)
{
	if (mb->max_uj == 0)
		return (uint64_t)llround(((double)mb->prev + (double)mb->cur) /
		    2 * (double)dt_us / 1e6);
	return step_uj(mb);
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
		if (!mb->has_prev || !mb->has_cur)
			return -1;
		*energy_uj += delta_uj(mb, dt_us);
		(*n)++;
		*last = mb;
	}
	return 0;
}

/*
 * The sysfs directory of the one counter a record's energy comes from, as
 * Kepler labels a zone with its path; none for a sum of several.
 */
static void
put_path(struct kp_buf *b, const struct member *one)
{
	char dir[PATH_MAX];
	const char *slash;

	if (one == NULL || (slash = strrchr(one->path, '/')) == NULL)
		return;
	xpath(dir, sizeof(dir), "%.*s", (int)(slash - one->path), one->path);
	kp_buf_text(b, "path", dir);
}

/*
 * An energy record, built in one buffer kept between calls: at 1 kHz,
 * building and freeing a JSON object for each was some 15 % of
 * rapl-read's CPU time (perf stat).  one: its one counter, or NULL.
 */
static void
out_energy(int64_t seq, const char *zone, int socket, int64_t energy_uj,
    int64_t dt_us, enum source source, size_t sockets,
    const struct member *one)
{
	static struct kp_buf b;

	kp_buf_rec(&b, "energy", seq);
	kp_buf_text(&b, "zone", zone);
	if (socket >= 0)
		kp_buf_int(&b, "socket", socket);
	kp_buf_int(&b, "energy_uj", energy_uj);
	kp_buf_real(&b, "watts", kp_watts(energy_uj, dt_us));
	kp_buf_text(&b, "source", source_name(source));
	kp_buf_bool(&b, "estimated", source == SOURCE_MODEL);
	kp_buf_int(&b, "sockets", (int64_t)sockets);
	put_path(&b, sockets == 1 ? one : NULL);
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
	    n > 0)
		out_energy(seq, zone, socket, (int64_t)energy_uj, dt_us,
		    m->source, n, last);
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
	if (n > 0)
		out_energy(seq, "node", NO_SOCKET, (int64_t)energy_uj, dt_us,
		    m->source, n, last);
}

static void
emit_counters(const struct meter *m, int64_t seq, int64_t dt_us)
{
	const struct member *mb = m->members;
	size_t i;

	for (i = 0; i < m->nmembers; i++) {
		if (mb[i].zone[0] == '\0' || !selected(m, mb[i].zone))
			continue;
		if (m->per_socket) {
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

static double
usage_ratio(const struct kp_cpu_times *prev, const struct kp_cpu_times *cur)
{
	if (cur->total_ticks <= prev->total_ticks ||
	    cur->active_ticks < prev->active_ticks)
		return 0;
	return kp_usage_ratio((int64_t)(cur->active_ticks - prev->active_ticks),
	    (int64_t)(cur->total_ticks - prev->total_ticks));
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
	int64_t energy_uj;

	if (m->source != SOURCE_MODEL) {
		emit_counters(m, seq, dt_us);
		return;
	}
	if (!m->has_prev_ct)
		return;
	energy_uj = model_energy_uj(m, dt_us,
	    usage_ratio(&m->prev_ct, &m->cur_ct));
	if (selected(m, "package"))
		out_energy(seq, "package", NO_SOCKET, energy_uj, dt_us,
		    SOURCE_MODEL, 1, NULL);
	if (selected(m, "node"))
		out_energy(seq, "node", NO_SOCKET, energy_uj, dt_us,
		    SOURCE_MODEL, 1, NULL);
}

/* The counter that wraps soonest at MAX_ZONE_WATTS, and in how long. */
static const struct member *
soonest_wrap(const struct meter *m, int64_t *wrap_us)
{
	const struct member *soonest = NULL;
	size_t i;

	for (i = 0; i < m->nmembers; i++)
		if (m->members[i].wanted && m->members[i].max_uj > 0 &&
		    (soonest == NULL ||
		    m->members[i].max_uj < soonest->max_uj))
			soonest = &m->members[i];
	if (soonest != NULL)
		*wrap_us = (int64_t)(soonest->max_uj / MAX_ZONE_WATTS);
	return soonest;
}

static void
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
static void
end_interval(struct meter *m, const struct kp_clock *clk)
{
	sample(m);
	drop_impossible_steps(m, clk->dt_us);
	emit(m, clk->seq, clk->dt_us);
	advance(m);
	kp_out_interval(clk->seq, clk->wall_us, clk->dt_us);
}

/* The header that starts the stream, with the node's identity. */
static void
out_header(const struct meter *m)
{
	struct kp_node node;

	kp_node_identify(&node, m->node_name, m->procdir);
	kp_out_header("rapl-read", &node);
	kp_node_free(&node);
}

/* The baseline sample, which ends no interval. */
static void
start_clock(struct meter *m, struct kp_clock *clk, int64_t interval_us)
{
	warn_wrap(m, "the interval", interval_us);
	out_header(m);
	kp_out_flush();
	kp_clock_start(clk, interval_us);
	sample(m);
	advance(m);
}

/*
 * Intervals on the clock until count, or until a signal (D7): then the
 * interval ends at once, is written, and the status is 128 + the signal.
 */
static int
run_clock(struct meter *m, int64_t interval_us, long long count)
{
	struct kp_clock clk;

	kp_signals_producer();
	start_clock(m, &clk, interval_us);
	while (kp_clock_next(&clk, count))
		end_interval(m, &clk);
	return kp_stop_signal ? 128 + kp_stop_signal : KP_EXIT_OK;
}

/*
 * Whether a signal that came to rapl-read reached the command too: one a
 * terminal sends (Ctrl-C, a hangup) goes to the whole foreground process
 * group, and so, from a terminal or from kill -INT -GROUP, does SIGINT,
 * whose only use is that.  Passing those on would give the command two.
 */
static int
reached_command(const siginfo_t *si, pid_t pid)
{
	if (getpgid(pid) != getpgrp())
		return 0;
	return si->si_code == SI_KERNEL || si->si_signo == SIGINT;
}

/*
 * Reaps every child that has ended: the command, and the orphans of its
 * tree, which come to rapl-read as their subreaper; 1 if the command was
 * one of them, its status in *status.
 */
static int
reap_children(pid_t pid, int *status)
{
	int st, ended = 0;
	pid_t r;

	while ((r = waitpid(-1, &st, WNOHANG)) > 0)
		if (r == pid) {
			*status = st;
			ended = 1;
		}
	if (r < 0 && errno != ECHILD && errno != EINTR)
		err(KP_EXIT_FAILURE, "waitpid");
	return ended;
}

/*
 * Waits for the deadline or for the command's end, whichever is first,
 * passing on the signals that would end a shell's job and that did not
 * reach the command itself; 1 if it ended.
 */
static int
wait_command(pid_t pid, int *status, int64_t deadline_us,
    const sigset_t *set)
{
	struct timespec ts;
	siginfo_t si;
	int64_t left_us;

	for (;;) {
		if (reap_children(pid, status))
			return 1;
		if ((left_us = deadline_us - kp_mono_us()) <= 0)
			return 0;
		ts.tv_sec = left_us / 1000000;
		ts.tv_nsec = (left_us % 1000000) * 1000;
		if (sigtimedwait(set, &si, &ts) > 0 &&
		    si.si_signo != SIGCHLD && !reached_command(&si, pid))
			kill(pid, si.si_signo);
	}
}

/* The command's exit status, or 128 + the signal that ended it. */
static int
exit_status(int status)
{
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/*
 * The command's tree has ended, in interval seq: its CPU time, from the
 * rusage of every child reaped (the command, its waited-for descendants,
 * and the orphans of its tree that ended), in a command record.
 */
static void
command_record(int64_t seq, pid_t pid, const char *argv0, int status)
{
	struct kp_buf b = { NULL, 0, 0 };
	struct rusage ru;
	const char *comm = strrchr(argv0, '/') ? strrchr(argv0, '/') + 1 :
	    argv0;
	char name[16];

	(void)reap_children(pid, &status);
	if (getrusage(RUSAGE_CHILDREN, &ru) < 0)
		err(KP_EXIT_FAILURE, "getrusage");
	snprintf(name, sizeof(name), "%s", comm);	/* as the kernel's comm */
	kp_buf_rec(&b, "command", seq);
	kp_buf_int(&b, "pid", pid);
	kp_buf_text(&b, "comm", name);
	kp_buf_int(&b, "cpu_us", (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) *
	    (int64_t)1000000 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
	kp_buf_int(&b, "status", exit_status(status));
	kp_out_buf(&b);
	free(b.s);
}

/*
 * -- CMD: samples while CMD runs and once more when it ends, so that a
 * short run is measured too; CMD's standard output goes to standard error,
 * out of the record stream.  rapl-read is the subreaper of CMD's tree, so
 * that its orphans' CPU time comes back to it.  CMD's exit status, or 128
 * + its signal.
 */
static int
run_command(struct meter *m, int64_t interval_us, char *argv[])
{
	struct kp_clock clk;
	sigset_t set, old;
	pid_t pid;
	int status, ended = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &set, &old) < 0)
		err(KP_EXIT_FAILURE, "sigprocmask");
	start_clock(m, &clk, interval_us);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		err(KP_EXIT_FAILURE, "prctl");
	if ((pid = fork()) < 0)
		err(KP_EXIT_FAILURE, "fork");
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
			err(126, "dup2");
		execvp(argv[0], argv);
		warn("%s", argv[0]);
		_exit(errno == ENOENT ? 127 : 126);
	}
	while (!ended) {
		ended = wait_command(pid, &status, kp_clock_deadline_us(&clk),
		    &set);
		kp_clock_end(&clk);
		if (ended)
			command_record(clk.seq, pid, argv[0], status);
		end_interval(m, &clk);
	}
	return exit_status(status);
}

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

static int
load_members(struct meter *m, json_t *data, const char *path)
{
	struct member *mb;
	json_t *members, *v;
	size_t i;

	if (json_unpack(data, "{s:o}", "members", &members) < 0 ||
	    !json_is_object(members))
		return -1;
	for (i = 0; i < m->nmembers; i++) {
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
	    "source", &source) < 0 || !kp_clock_stored_ok(*seq, *mono_us))
		goto bad;
	if (strcmp(source, source_name(m->source)) != 0) {
		warnx("%s: the stored sample is from source '%s', not '%s'; "
		    "starting a new baseline", path, source,
		    source_name(m->source));
		return 0;
	}
	rv = m->source == SOURCE_MODEL ? load_ticks(m, data) :
	    load_members(m, data, path);
	if (rv == 0)
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

/* What the next run needs: seq, the time, and each counter's value. */
static json_t *
state_data(const struct meter *m, json_int_t seq, int64_t mono_us)
{
	json_t *data, *members;
	size_t i;

	data = json_pack("{s:I,s:I,s:s}", "seq", seq, "mono_us",
	    (json_int_t)mono_us, "source", source_name(m->source));
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
				    member_json(&m->members[i]));
		json_object_set_new(data, "members", members);
	}
	return data;
}

/*
 * One sample against the previous run's: at most one interval.  The state
 * that counts it is prepared before its records and committed after them
 * (D5): a full disk writes no record and advances nothing.
 */
static void
run_once(struct meter *m, struct kp_state *st, const char *path)
{
	json_int_t seq = 0, stored_us = 0;
	struct kp_clock clk;
	char what[PATH_MAX + 64];
	int usable, ended;

	usable = load_state(m, st, path, &seq, &stored_us);
	kp_clock_start(&clk, 0);
	sample(m);
	if ((ended = usable && kp_clock_resume(&clk, seq, stored_us, path))) {
		snprintf(what, sizeof(what), "%s: the time since the stored "
		    "sample", path);
		warn_wrap(m, what, clk.dt_us);
		drop_impossible_steps(m, clk.dt_us);
		seq = clk.seq;
	}
	kp_state_prepare_new(st, state_data(m, seq, clk.end_us));
	out_header(m);		/* a failed run writes nothing at all */
	if (ended) {
		emit(m, clk.seq, clk.dt_us);
		kp_out_interval(clk.seq, clk.wall_us, clk.dt_us);
	} else
		kp_out_flush();
	kp_state_commit(st);
}

static void
list_one(const struct member *mb)
{
	char socket[16], range[32], enabled[8], status[PATH_MAX + 64];

	snprintf(socket, sizeof(socket), "%d", mb->socket);
	snprintf(range, sizeof(range), "%llu", (unsigned long long)mb->max_uj);
	snprintf(enabled, sizeof(enabled), "%d", mb->enabled);
	if (mb->bad[0] != '\0')
		snprintf(status, sizeof(status), "unreadable: %s: %s",
		    strrchr(mb->bad, '/') + 1, strerror(mb->errnum));
	else if (mb->dup_of[0] != '\0')
		snprintf(status, sizeof(status), "duplicate of %s",
		    mb->dup_of);
	else
		snprintf(status, sizeof(status), "readable");
	printf("%s\t%s\t%s\t%s\t%s\t%s\n",
	    mb->zone[0] != '\0' ? mb->zone : "?",
	    mb->socket >= 0 ? socket : "-", mb->bad[0] != '\0' &&
	    mb->zone[0] == '\0' ? mb->bad : mb->path,
	    mb->max_uj > 0 ? range : "-", mb->enabled >= 0 ? enabled : "-",
	    status);
}

/*
 * --list: every counter of the sources asked for, one a line.  0 if every
 * counter listed can be read, 5 if one is denied, 4 if there is none.
 */
static int
list(struct meter *m, enum source want)
{
	enum source sources[] = { SOURCE_POWERCAP, SOURCE_HWMON };
	const struct member *mb;
	char why[2 * PATH_MAX];
	int status = KP_EXIT_NOSOURCE, found = 0;
	size_t i, s;

	printf("zone\tsocket\tpath\tmax_energy_range_uj\tenabled\tstatus\n");
	for (s = 0; s < 2; s++) {
		if (want != SOURCE_AUTO && want != sources[s])
			continue;
		(void)try_source(m, sources[s], why, sizeof(why));
		if (m->dir_errnum != 0)
			warnx("%s", why);
		for (i = 0; i < m->nmembers; i++) {
			mb = &m->members[i];
			list_one(mb);
			found = 1;
			if (mb->dup_of[0] != '\0' || mb->bad[0] == '\0')
				continue;
			if (denied(mb->errnum))
				status = KP_EXIT_NOPERM;
			else if (status != KP_EXIT_NOPERM)
				status = KP_EXIT_FAILURE;
		}
		close_members(m);
	}
	if (found && status == KP_EXIT_NOSOURCE)
		status = KP_EXIT_OK;
	return kp_out_finish(status);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "count", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ "idle-watts", required_argument, NULL, OPT_IDLE_WATTS },
		{ "interval", required_argument, NULL, 'i' },
		{ "list", no_argument, NULL, OPT_LIST },
		{ "max-watts", required_argument, NULL, OPT_MAX_WATTS },
		{ "node-name", required_argument, NULL, OPT_NODE_NAME },
		{ "per-socket", no_argument, NULL, OPT_PER_SOCKET },
		{ "proc", required_argument, NULL, OPT_PROC },
		{ "source", required_argument, NULL, OPT_SOURCE },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "sysfs", required_argument, NULL, OPT_SYSFS },
		{ "zones", required_argument, NULL, 'z' },
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
	int clock = 0, listing = 0, status = KP_EXIT_OK, ch;

	kp_out_init();
	while ((ch = getopt_long(argc, argv, "+hi:n:z:", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'i':
			interval_us = kp_parse_duration_us(optarg, "interval");
			clock = 1;
			break;
		case 'n':
			count = kp_parse_int(optarg, 1, INT64_MAX, "count");
			clock = 1;
			break;
		case 'z':
			parse_zones(&m, optarg);
			break;
		case OPT_IDLE_WATTS:
			m.idle_watts = kp_parse_double(optarg, 0, 100000,
			    "idle watts");
			break;
		case OPT_LIST:
			listing = 1;
			break;
		case OPT_MAX_WATTS:
			m.max_watts = kp_parse_double(optarg, 0, 100000,
			    "max watts");
			break;
		case OPT_NODE_NAME:
			if (*optarg == '\0')
				errx(KP_EXIT_USAGE, "--node-name wants a name");
			m.node_name = optarg;
			break;
		case OPT_PER_SOCKET:
			m.per_socket = 1;
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
	if (argc > 0 && strcmp(argv[-1], "--") != 0)
		usage();
	if (clock && statepath != NULL)
		errx(KP_EXIT_USAGE, "--state cannot be used with -i or -n");
	if (argc > 0 && (statepath != NULL || count != 0))
		errx(KP_EXIT_USAGE, "a command cannot be used with --state "
		    "or -n");
	if (m.idle_watts > m.max_watts)
		errx(KP_EXIT_USAGE, "idle watts must not exceed max watts: "
		    "%g > %g", m.idle_watts, m.max_watts);
	if (listing) {
		free(m.zones);
		m.zones = NULL;
		return list(&m, want);
	}

	open_source(&m, want);
	if (statepath != NULL) {
		st = kp_state_open(statepath, m.procdir, "rapl-read");
		run_once(&m, st, statepath);
		kp_state_close(st);
	} else if (argc > 0)
		status = run_command(&m, interval_us, argv);
	else
		status = run_clock(&m, interval_us, count);
	close_members(&m);
	free(m.zones);
	return kp_out_finish(status);
}
