/*
 * rapl-read: the table of sources, which of them run (--source, and the
 * order --source auto tries), the zones they give, and what the sources
 * that read sysfs files share.
 */
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rapl.h"

extern const struct source powercap_source, hwmon_source, model_source;
extern const struct source redfish_source, ipmi_source, nvml_source;

/* Every source, in the order --source auto tries those it may choose. */
const struct source *const sources[] = {
	&powercap_source,
	&hwmon_source,
	&model_source,
	&redfish_source,
	&ipmi_source,
	&nvml_source,
	NULL
};

static const struct source *
find_source(const char *name)
{
	size_t i;

	for (i = 0; sources[i] != NULL; i++)
		if (strcmp(sources[i]->name, name) == 0)
			return sources[i];
	return NULL;
}

static void
bad_sources(const char *what)
{
	char names[256];
	size_t i, n = 0;

	names[0] = '\0';
	for (i = 0; sources[i] != NULL && n < sizeof(names); i++)
		n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s",
		    i > 0 ? ", " : "", sources[i]->name);
	errx(KP_EXIT_USAGE, "source must be auto or a list of %s separated "
	    "by commas: '%s'", names, what);
}

/* --source powercap,hwmon: the sources to run; auto (none here) alone. */
void
parse_sources(struct meter *m, char *list)
{
	const struct source *src;
	char *name, *whole = kp_strdup(list), *p = list;
	size_t i;

	m->nrunning = 0;
	if (strcmp(list, "auto") == 0) {
		free(whole);
		return;
	}
	while ((name = strsep(&p, ",")) != NULL) {
		if ((src = find_source(name)) == NULL ||
		    m->nrunning == sizeof(m->running) / sizeof(m->running[0]))
			bad_sources(whole);
		for (i = 0; i < m->nrunning; i++)
			if (m->running[i] == src)
				errx(KP_EXIT_USAGE, "source '%s' named twice: "
				    "'%s'", name, whole);
		m->running[m->nrunning++] = src;
	}
	free(whole);
}

/* The sources running, as the state file names them: "powercap,hwmon". */
void
source_names(const struct meter *m, char *buf, size_t len)
{
	size_t i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < m->nrunning && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s",
		    i > 0 ? "," : "", m->running[i]->name);
}

void
xpath(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int cut;

	va_start(ap, fmt);
	cut = kp_vpathf(buf, len, fmt, ap);
	va_end(ap);
	if (cut < 0)
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
int
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
		"package", "core", "uncore", "dram", "psys", "platform"
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
	if ((d = strverscmp(x->device, y->device)) != 0)
		return d;
	return strverscmp(x->key, y->key);
}

/*
 * A sysfs counter or meter, read again through the file kept open: a
 * sysfs attribute is produced anew on each read at offset 0, at once.
 * A file outside /sys, as a VM host's tree, whose writer replaces it
 * whole, is opened anew (reopen): the one kept open would stay stale.
 * An attribute of a zone that was removed reads as an error or as
 * nothing; the file is then closed, to be opened anew when the zone
 * comes back.  -1 with errno.
 */
int
read_file_uj(struct member *mb, int64_t deadline_us)
{
	char buf[32];
	ssize_t n;
	int saved;

	(void)deadline_us;
	if (mb->fd < 0 &&
	    (mb->fd = open(mb->where, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if ((n = pread(mb->fd, buf, sizeof(buf) - 1, 0)) <= 0) {
		saved = n == 0 ? ENODEV : errno;
		close(mb->fd);
		mb->fd = -1;
		errno = saved;
		return -1;
	}
	buf[n] = '\0';
	if (mb->reopen) {
		close(mb->fd);
		mb->fd = -1;
	}
	return parse_uj(buf, &mb->cur);
}

void
member_failed(struct member *mb, const char *dir, const char *file)
{
	mb->errnum = errno;
	xpath(mb->bad, sizeof(mb->bad), "%s/%s", dir, file);
}

struct member *
new_member(struct meter *m, const struct source *src, const char *key)
{
	struct member *mb;

	m->members = kp_reallocarray(m->members, m->nmembers + 1,
	    sizeof(*m->members));
	mb = &m->members[m->nmembers++];
	memset(mb, 0, sizeof(*mb));
	mb->src = src;
	mb->fd = -1;
	mb->socket = NO_SOCKET;
	mb->enabled = -1;
	mb->wanted = 1;
	xpath(mb->key, sizeof(mb->key), "%s", key);
	return mb;
}

/*
 * Calls add for each entry of SYSFS/class/<class>, named in classdir;
 * 0, or the errno of a class directory that cannot be read (a missing
 * one is only empty).
 */
static int
scan_class(struct meter *m, const char *class, char *classdir,
    void (*add)(struct meter *, const char *, int, const char *))
{
	struct dirent *de;
	DIR *dir;
	int errnum = 0;

	xpath(classdir, PATH_MAX, "%s/class/%s", m->sysfs, class);
	if ((dir = opendir(classdir)) == NULL)
		return errno == ENOENT || errno == ENOTDIR ? 0 : errno;
	while ((errno = 0, de = readdir(dir)) != NULL)
		if (de->d_name[0] != '.')
			add(m, classdir, dirfd(dir), de->d_name);
	if (errno != 0)
		errnum = errno;
	closedir(dir);
	return errnum;
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
 * package contains its core and uncore.  platform, the machine at its
 * supply, is never one: it overlaps them all.
 */
int
in_node(const struct meter *m, const char *zone)
{
	if (has_zone(m, "psys"))
		return strcmp(zone, "psys") == 0;
	return strcmp(zone, "package") == 0 || strcmp(zone, "dram") == 0;
}

/*
 * The counters sorted, and only those of the zones reported read: after
 * each source opens, as a source's psys changes what node holds.
 */
static void
settle_members(struct meter *m)
{
	struct member *mb;
	size_t i;

	if (m->nmembers > 0)
		qsort(m->members, m->nmembers, sizeof(*m->members),
		    member_cmp);
	for (i = 0; i < m->nmembers; i++) {
		mb = &m->members[i];
		if (mb->dup_of[0] != '\0')
			continue;
		mb->wanted = selected(m, mb->zone) ||
		    (selected(m, "node") && in_node(m, mb->zone));
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
 * Why a source that reads the entries of a sysfs class cannot be used,
 * in why, and the exit status that says so; 0 if it can.  A counter
 * that cannot be read for lack of permission stops it; other unreadable
 * counters only leave their zone out.  One that gives none of the zones
 * asked for is usable, and gives nothing.
 */
static int
class_problem(struct meter *m, const struct source *src,
    const char *classdir, int dir_errnum, char *why, size_t len)
{
	const struct member *first = NULL, *mb;
	size_t i, usable = 0, found = 0;

	settle_members(m);
	if (dir_errnum != 0) {
		snprintf(why, len, "cannot read '%s': %s", classdir,
		    strerror(dir_errnum));
		return KP_EXIT_FAILURE;
	}
	for (i = 0; i < m->nmembers; i++) {
		mb = &m->members[i];
		if (mb->src != src || mb->dup_of[0] != '\0')
			continue;
		found++;
		if (!mb->wanted)
			continue;
		if (mb->bad[0] == '\0')
			usable++;
		else if (denied(mb->errnum)) {
			first = mb;
			break;
		} else if (first == NULL)
			first = mb;
	}
	if (found == 0) {
		snprintf(why, len, "no %s under '%s'", src->what, classdir);
		return KP_EXIT_NOSOURCE;
	}
	if ((usable > 0 || first == NULL) && i == m->nmembers)
		return 0;
	snprintf(why, len, "cannot read '%s': %s", first->bad,
	    strerror(first->errnum));
	return denied(first->errnum) ? KP_EXIT_NOPERM : KP_EXIT_FAILURE;
}

/*
 * Opens a source whose counters are the entries of SYSFS/class/<class>:
 * add makes the counter of an entry, settle (or NULL) settles them
 * together; 0, or the exit status that says why it cannot be used.
 */
int
open_class(struct meter *m, const struct source *src, const char *class,
    void (*add)(struct meter *, const char *, int, const char *),
    void (*settle)(struct meter *), char *why, size_t len)
{
	char classdir[PATH_MAX];
	int errnum;

	errnum = scan_class(m, class, classdir, add);
	if (settle != NULL)
		settle(m);
	return class_problem(m, src, classdir, errnum, why, len);
}

/*
 * The fields of an energy record from counters: how many were summed,
 * and the sysfs directory of the one counter a record's energy comes
 * from, as Kepler labels a zone with its path; none for a sum of several.
 */
void
put_counter_fields(struct kp_buf *b, const struct member *one,
    size_t counters)
{
	char dir[sizeof(one->where)];
	const char *slash;
	size_t len;

	kp_buf_int(b, "sockets", (int64_t)counters);
	if (counters != 1 || (slash = strrchr(one->where, '/')) == NULL)
		return;
	len = (size_t)(slash - one->where);
	memcpy(dir, one->where, len);
	dir[len] = '\0';
	kp_buf_text(b, "path", dir);
}

static void
warn_bad_members(struct meter *m, const struct source *src)
{
	struct member *mb;
	size_t i;

	for (i = 0; i < m->nmembers; i++) {
		mb = &m->members[i];
		if (mb->src != src || !mb->wanted || mb->bad[0] == '\0')
			continue;
		warnx("cannot read '%s': %s", mb->bad, strerror(mb->errnum));
		mb->warned = 1;
	}
}

/* The members of src, and what it holds, let go. */
static void
drop_source(struct meter *m, const struct source *src)
{
	size_t i, kept = 0;

	for (i = 0; i < m->nmembers; i++) {
		if (m->members[i].src != src)
			m->members[kept++] = m->members[i];
		else if (m->members[i].fd >= 0)
			close(m->members[i].fd);
	}
	m->nmembers = kept;
	if (src->close != NULL)
		src->close();
}

/*
 * Opens one source, its counters sorted among the others' and those of
 * zones not asked for left unread; 0 if it can be used, else the exit
 * status that says why not, in why, and nothing of it is kept.
 */
static int
try_source(struct meter *m, const struct source *src, char *why, size_t len)
{
	int status;

	if ((status = src->open(m, why, len)) != 0) {
		drop_source(m, src);
		return status;
	}
	settle_members(m);
	warn_bad_members(m, src);
	return 0;
}

static int
gives_wanted(const struct meter *m, const struct source *src)
{
	size_t i;

	for (i = 0; i < m->nmembers; i++)
		if (m->members[i].src == src && m->members[i].wanted)
			return 1;
	return 0;
}

static void
unusable(const struct source *src, int status, const char *why)
{
	if (status == KP_EXIT_NOPERM && src->denied_hint != NULL)
		errx(status, "%s; %s", why, src->denied_hint);
	errx(status, "%s", why);
}

/* Whether sources[i] is the last that --source auto may choose. */
static int
last_auto(size_t i)
{
	for (i++; sources[i] != NULL; i++)
		if (sources[i]->in_auto)
			return 0;
	return 1;
}

/*
 * --source auto: the first source of the table's order that auto may
 * choose, can be used, and gives a zone asked for; the model last, as
 * the estimate where nothing measures, saying why it estimates.
 */
static void
open_auto(struct meter *m)
{
	char why[2 * PATH_MAX], first[2 * PATH_MAX] = "";
	const struct source *src;
	size_t i;
	int status;

	for (i = 0; (src = sources[i]) != NULL; i++) {
		if (!src->in_auto)
			continue;
		status = try_source(m, src, why, sizeof(why));
		if (status == 0 && !gives_wanted(m, src) && !last_auto(i)) {
			snprintf(why, sizeof(why), "none of the zones asked "
			    "for from source '%s'", src->name);
			drop_source(m, src);
			status = KP_EXIT_NOSOURCE;
		}
		if (status == 0) {
			m->running[m->nrunning++] = src;
			if (first[0] != '\0')
				snprintf(m->fallback, sizeof(m->fallback),
				    "%s: %s%s (--source %s)", first,
				    src->estimates ? "estimating energy" :
				    "using ", src->estimates ? "" : src->what,
				    src->name);
			return;
		}
		if (first[0] == '\0')
			snprintf(first, sizeof(first), "%s", why);
		if (last_auto(i))
			unusable(src, status, why);
	}
}

/*
 * Says why --source auto fell back, unless -q.  said is the note a state
 * file holds as said by an earlier run: the same note is not said again
 * but with -v, so that a cron job mails it once, not every run
 * (rapl-read(1), One-shot mode).
 */
void
say_fallback(const struct meter *m, const char *said)
{
	if (m->fallback[0] == '\0' || m->fallback_talk < 0)
		return;
	if (m->fallback_talk == 0 && said != NULL &&
	    strcmp(said, m->fallback) == 0)
		return;
	warnx("%s", m->fallback);
}

/*
 * Two sources giving one zone would count it twice: a usage error.  GPUs
 * are apart by their device, which two sources never share (an NVML
 * index, a PCI address).
 */
static void
check_overlap(const struct meter *m)
{
	const struct member *a, *b;
	size_t i, j;

	for (i = 0; i < m->nmembers; i++)
		for (j = i + 1; j < m->nmembers; j++) {
			a = &m->members[i];
			b = &m->members[j];
			if (a->src != b->src && a->zone[0] != '\0' &&
			    strcmp(a->zone, b->zone) == 0 &&
			    strcmp(a->device, b->device) == 0)
				errx(KP_EXIT_USAGE, "sources '%s' and '%s' "
				    "both give zone '%s': name one of them",
				    a->src->name, b->src->name, a->zone);
		}
}

static int
gives_zone(const struct meter *m, const char *zone)
{
	size_t i;

	if (strcmp(zone, "node") == 0) {
		for (i = 0; i < m->nmembers; i++)
			if (in_node(m, m->members[i].zone))
				return 1;
		return 0;
	}
	return has_zone(m, zone);
}

/* The zones the running sources give, for a message: "package, node". */
static void
zones_given(const struct meter *m, char *buf, size_t len)
{
	const struct member *mb;
	size_t i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < m->nmembers && n < len; i++) {
		mb = &m->members[i];
		if (mb->zone[0] == '\0' || mb->dup_of[0] != '\0' ||
		    (i > 0 && strcmp(mb[-1].zone, mb->zone) == 0))
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%s",
		    n > 0 ? ", " : "", mb->zone);
	}
	if (gives_zone(m, "node") && n < len)
		snprintf(buf + n, len - n, "%snode", n > 0 ? ", " : "");
}

/* Each zone asked for with -z is one a running source gives. */
static void
check_zones(const struct meter *m)
{
	char zones[1024];
	size_t i;

	for (i = 0; i < m->nzones; i++) {
		if (gives_zone(m, m->zones[i]))
			continue;
		zones_given(m, zones, sizeof(zones));
		say_fallback(m, NULL);	/* why these are the zones here */
		errx(KP_EXIT_NOSOURCE, "no source here gives zone '%s'; the "
		    "zones here are: %s", m->zones[i],
		    zones[0] != '\0' ? zones : "none");
	}
}

static struct meter *to_close;

static void
close_at_exit(void)
{
	if (to_close != NULL)
		close_sources(to_close);
}

/*
 * Opens the sources of --source, each of which must be usable, or
 * those --source auto chooses; they are closed at every exit, errx's
 * included.
 */
void
open_sources(struct meter *m)
{
	static int registered;
	char why[2 * PATH_MAX];
	size_t i;
	int status;

	to_close = m;
	if (!registered && atexit(close_at_exit) == 0)
		registered = 1;
	if (m->nrunning == 0)
		open_auto(m);
	else
		for (i = 0; i < m->nrunning; i++)
			if ((status = try_source(m, m->running[i], why,
			    sizeof(why))) != 0)
				unusable(m->running[i], status, why);
	check_overlap(m);
	check_zones(m);
}

void
close_sources(struct meter *m)
{
	size_t i;

	for (i = 0; i < m->nrunning; i++)
		drop_source(m, m->running[i]);
	free(m->members);
	m->members = NULL;
	m->nmembers = 0;
	m->nrunning = 0;
	to_close = NULL;
}
