/*
 * rapl-read: the counters it reads, found once at the start: the kernel's
 * RAPL zones under powercap, ACPI power meters under hwmon, or the model
 * where there are neither.
 */
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rapl.h"

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

int
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
int
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
int
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

int
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

void
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
int
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
void
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
