/*
 * Who a process belongs to, read from its cgroup path alone: container
 * runtimes, Kubernetes and libvirt all encode their ids in the path, so no
 * API server is needed.
 */
#include <ctype.h>
#include <stddef.h>
#include <string.h>

#include "kp.h"

#define CONTAINER_ID_LEN 64

static void
copy(char *dst, size_t len, const char *src, size_t n)
{
	if (n >= len)
		n = len - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Where a run of exactly 64 hex digits starts in comp[0..n), or NULL. */
static const char *
hex_run(const char *comp, size_t n)
{
	size_t i, run = 0;

	for (i = 0; i <= n; i++) {
		if (i < n && isxdigit((unsigned char)comp[i])) {
			run++;
			continue;
		}
		if (run == CONTAINER_ID_LEN)
			return comp + i - run;
		run = 0;
	}
	return NULL;
}

static int
has_prefix(const char *s, size_t n, const char *prefix)
{
	size_t plen = strlen(prefix);

	return n >= plen && strncmp(s, prefix, plen) == 0;
}

static int
has_suffix(const char *s, size_t n, const char *suffix)
{
	size_t slen = strlen(suffix);

	return n >= slen && strncmp(s + n - slen, suffix, slen) == 0;
}

/* docker-ID.scope, /docker/ID, cri-containerd-ID.scope, crio-ID.scope... */
static void
container_id(const char *comp, size_t n, struct kp_identity *id)
{
	const char *hex;

	/* The runtime's monitor process sits beside, not inside, the container. */
	if (has_prefix(comp, n, "crio-conmon-") ||
	    has_prefix(comp, n, "libpod-conmon-"))
		return;
	if ((hex = hex_run(comp, n)) != NULL)
		copy(id->container_id, sizeof(id->container_id), hex,
		    CONTAINER_ID_LEN);
}

/* A pod uid: 32 hex digits, in groups joined by '-' (or '_' in systemd). */
static int
is_uid(const char *s, size_t n)
{
	size_t i, hex = 0;

	for (i = 0; i < n; i++) {
		if (isxdigit((unsigned char)s[i]))
			hex++;
		else if (s[i] != '-' && s[i] != '_')
			return 0;
	}
	return hex == 32;
}

/*
 * kubepods-burstable-pod<uid>.slice (with _ for -), or cgroupfs
 * /kubepods/<qos>/pod<uid>: only below kubepods, so podman's scopes are not
 * taken for pods.
 */
static void
pod_id(const char *comp, size_t n, int in_kubepods, struct kp_identity *id)
{
	const char *p;
	size_t len, i;

	if (has_prefix(comp, n, "kubepods") && has_suffix(comp, n, ".slice")) {
		for (p = comp + n; p > comp && strncmp(p, "-pod", 4) != 0; p--)
			;
		if (p == comp)
			return;
		p += 4;
		len = (size_t)(comp + n - strlen(".slice") - p);
	} else if (in_kubepods && has_prefix(comp, n, "pod")) {
		p = comp + 3;
		len = n - 3;
	} else
		return;
	if (!is_uid(p, len))
		return;
	copy(id->pod_id, sizeof(id->pod_id), p, len);
	for (i = 0; id->pod_id[i]; i++)
		if (id->pod_id[i] == '_')
			id->pod_id[i] = '-';
}

/* machine-qemu\x2d1\x2dguest.scope: systemd escapes '-' as \x2d. */
static void
vm_id(const char *comp, size_t n, struct kp_identity *id)
{
	const char *p, *end;
	size_t o = 0;

	if (!has_prefix(comp, n, "machine-") || !has_suffix(comp, n, ".scope"))
		return;
	end = comp + n - strlen(".scope");
	for (p = comp + strlen("machine-"); p < end && o + 1 < sizeof(id->vm_id);) {
		if (end - p >= 4 && strncmp(p, "\\x2d", 4) == 0) {
			id->vm_id[o++] = '-';
			p += 4;
		} else
			id->vm_id[o++] = *p++;
	}
	id->vm_id[o] = '\0';
}

void
kp_identity_from_path(const char *path, struct kp_identity *id)
{
	const char *comp;
	size_t n;

	memset(id, 0, sizeof(*id));
	copy(id->cgroup, sizeof(id->cgroup), path, strlen(path));
	for (comp = path; *comp; comp += n) {
		comp += strspn(comp, "/");
		n = strcspn(comp, "/");
		if (n == 0)
			break;
		container_id(comp, n, id);
		pod_id(comp, n, strstr(path, "kubepods") != NULL, id);
		vm_id(comp, n, id);
		if (has_suffix(comp, n, ".service"))
			copy(id->unit, sizeof(id->unit), comp, n);
	}
}

/* Whether the comma-separated list ctl[0..clen) names controller want. */
static int
has_controller(const char *ctl, size_t clen, const char *want)
{
	const char *c, *end = ctl + clen;
	size_t n;

	for (c = ctl; c < end; c += n + 1) {
		n = strcspn(c, ",:");
		if (n == strlen(want) && strncmp(c, want, n) == 0)
			return 1;
	}
	return 0;
}

/* Lower is better: the v2 line, then v1 cpu, cpuacct, name=systemd. */
static int
hierarchy_rank(const char *ctl, size_t clen)
{
	if (clen == 0)
		return 0;
	if (has_controller(ctl, clen, "cpu"))
		return 1;
	if (has_controller(ctl, clen, "cpuacct"))
		return 2;
	if (has_controller(ctl, clen, "name=systemd"))
		return 3;
	return 4;
}

/*
 * /proc/PID/cgroup: "0::/path" on cgroup v2, "N:controllers:/path" on v1.
 * On hybrid hosts the v2 line may be just "/", so a path below the root in
 * the best-ranked hierarchy wins.
 */
void
kp_identity_from_cgroup_file(const char *text, struct kp_identity *id)
{
	char best[512] = "";
	int rank, best_rank = 99;
	const char *line, *ctl, *path;
	size_t n, plen;

	for (line = text; *line; line += n + (line[n] == '\n')) {
		n = strcspn(line, "\n");
		if ((ctl = memchr(line, ':', n)) == NULL)
			continue;
		ctl++;
		if ((path = memchr(ctl, ':', n - (size_t)(ctl - line))) == NULL)
			continue;
		rank = hierarchy_rank(ctl, (size_t)(path - ctl));
		path++;
		plen = n - (size_t)(path - line);
		if (plen == 1 && *path == '/')
			rank += 10;	/* the root says nothing */
		if (rank < best_rank) {
			best_rank = rank;
			copy(best, sizeof(best), path, plen);
		}
	}
	kp_identity_from_path(best, id);
}

void
kp_identity_to_json(const struct kp_identity *id, json_t *rec)
{
	static const struct { const char *key; size_t off; } fields[] = {
		{ "cgroup", offsetof(struct kp_identity, cgroup) },
		{ "container_id", offsetof(struct kp_identity, container_id) },
		{ "pod_id", offsetof(struct kp_identity, pod_id) },
		{ "vm_id", offsetof(struct kp_identity, vm_id) },
		{ "unit", offsetof(struct kp_identity, unit) },
	};
	size_t i;
	const char *val;

	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		val = (const char *)id + fields[i].off;
		if (*val)
			json_object_set_new(rec, fields[i].key, kp_json_text(val));
	}
}
