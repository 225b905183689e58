/*
 * rapl-read's source powercap: the kernel's RAPL zones, zones and
 * subzones alike, as counters of microjoules that wrap.
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "rapl.h"

extern const struct source powercap_source;

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
	if (read_file_uj(mb, 0) < 0)
		member_failed(mb, dir, "energy_uj");
}

/*
 * A zone whose name breaks the rule is said once and left out: its name
 * could not be written as it is into a record, a label or a file name.
 * One whose name cannot be read is kept, to be listed and said as
 * unreadable.
 */
static void
add_zone(struct meter *m, const char *classdir, int classfd,
    const char *key)
{
	struct member *mb;
	char dir[PATH_MAX], file[PATH_MAX], name[256];
	int n, errnum, socket = NO_SOCKET;

	if (strncmp(key, "intel-rapl:", 11) != 0 &&
	    strncmp(key, "intel-rapl-mmio:", 16) != 0)
		return;
	xpath(dir, sizeof(dir), "%s/%s", classdir, key);
	xpath(file, sizeof(file), "%s/name", key);
	n = kp_read_file(classfd, file, name, sizeof(name));
	errnum = errno;
	if (n >= 0 && !split_name(name, (size_t)n, &socket)) {
		warnx("'%s/name': not a zone's name of 1 to %d ASCII letters, "
		    "digits, '-', '_' or '.': zone left out", dir,
		    KP_ZONE_NAME_MAX);
		return;
	}
	mb = new_member(m, &powercap_source, key);
	mb->reading = READ_ENERGY_UJ;
	xpath(mb->where, sizeof(mb->where), "%s/energy_uj", dir);
	if (n < 0) {
		errno = errnum;
		member_failed(mb, dir, "name");
		return;
	}
	mb->socket = socket;
	xpath(mb->zone, sizeof(mb->zone), "%s", name);
	mb->reopen = strcmp(m->sysfs, "/sys") != 0;
	mb->host = m->host[0] ? m->host : NULL;
	open_zone(mb, classfd, key, dir);
}

static struct member *
find_member(struct meter *m, const char *key)
{
	size_t i;

	for (i = 0; i < m->nmembers; i++)
		if (m->members[i].src == &powercap_source &&
		    strcmp(m->members[i].key, key) == 0)
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

/* A subzone (intel-rapl:0:1, inside its package's directory) is of its socket. */
static void
settle_sockets(struct meter *m)
{
	struct member *mb, *up;
	char parent[NAME_MAX + 1];
	size_t i;

	for (i = 0; i < m->nmembers; i++) {
		mb = &m->members[i];
		if (mb->src != &powercap_source)
			continue;
		snprintf(parent, sizeof(parent), "%s", mb->key);
		*strrchr(parent, ':') = '\0';
		if (strchr(parent, ':') != NULL &&
		    (up = find_member(m, parent)) != NULL &&
		    mb->socket == NO_SOCKET)
			mb->socket = up->socket;
	}
}

/*
 * A package counter exposed through MMIO as well as through the MSR
 * interface is counted once, through the MSR unless only the MMIO one
 * can be read.
 */
static void
settle_repeats(struct meter *m)
{
	struct member *mb, *up;
	size_t i, j;

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

static void
settle_zones(struct meter *m)
{
	settle_sockets(m);
	settle_repeats(m);
}

/*
 * SYSFS/kp-host, where a VM host's kp-fmt wrote the tree (kp-fmt(1),
 * Powercap trees): "node NAME", "vm_id ID" and "interval_us US" lines.
 * The counters are then the host's measurement of this guest, and move
 * once per host interval, whatever this one's.
 */
static void
read_kp_host(struct meter *m)
{
	char path[PATH_MAX], buf[1024], *line, *save, *v;
	uint64_t us;

	xpath(path, sizeof(path), "%s/kp-host", m->sysfs);
	if (kp_read_file(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if ((v = strchr(line, ' ')) == NULL)
			continue;
		*v++ = '\0';
		if (strcmp(line, "node") == 0)
			xpath(m->host, sizeof(m->host), "%s", v);
		else if (strcmp(line, "interval_us") == 0 &&
		    parse_uj(v, &us) == 0 && us > 0 && us <= KP_VM_KEEP_US)
			m->host_interval_us = (int64_t)us;
	}
}

static int
powercap_open(struct meter *m, char *why, size_t len)
{
	read_kp_host(m);
	return open_class(m, &powercap_source, "powercap", add_zone,
	    settle_zones, why, len);
}

const struct source powercap_source = {
	.name = "powercap",
	.what = "RAPL zones",
	.in_auto = 1,
	.open = powercap_open,
	.read = read_file_uj,
	.fields = put_counter_fields,
	.denied_hint = "run as root or let group 'power' read the counters "
	    "with kp's udev rule scripts/70-powercap.rules (see rapl-read(1))"
};
