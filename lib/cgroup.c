/*
 * Who a process belongs to, read from its cgroup path alone: container
 * runtimes, Kubernetes and libvirt all encode their ids in the path, so no
 * API server is needed.  QEMU's command line and the kubelet's log
 * directory add names where the path holds only ids.
 */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

#define COPY(field, src, n) copy(field, sizeof(field), src, n)

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

static int
equals(const char *s, size_t n, const char *word)
{
	return n == strlen(word) && strncmp(s, word, n) == 0;
}

/* The runtime that names its scopes, cgroups or v1 parts "<prefix>-<id>". */
static const char *
runtime_of(const char *s, size_t n)
{
	static const struct { const char *prefix, *runtime; } runtimes[] = {
		{ "docker", "docker" },
		{ "cri-containerd", "containerd" },
		{ "containerd", "containerd" },
		{ "crio", "cri-o" },
		{ "libpod", "podman" },
	};
	size_t i, plen;

	for (i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]); i++) {
		plen = strlen(runtimes[i].prefix);
		if (n >= plen && strncmp(s, runtimes[i].prefix, plen) == 0 &&
		    (n == plen || s[plen] == '-'))
			return runtimes[i].runtime;
	}
	return NULL;
}

static void
set_container(struct kp_identity *id, const char *hex, const char *runtime)
{
	COPY(id->container_id, hex, CONTAINER_ID_LEN);
	if (runtime != NULL)
		COPY(id->runtime, runtime, strlen(runtime));
	else
		id->runtime[0] = '\0';
}

/*
 * docker-ID.scope, cri-containerd-ID.scope, crio-ID.scope, libpod-ID.scope
 * (systemd), or a bare ID whose parent names the runtime: /docker/ID,
 * /libpod_parent/libpod-ID (cgroupfs).  Below kubepods with cgroupfs the
 * bare ID does not tell which runtime made it.
 */
static void
container_id(const char *comp, size_t n, const char *parent, size_t plen,
    struct kp_identity *id)
{
	const char *hex;

	/* The runtime's monitor process sits beside, not inside, the container. */
	if (has_prefix(comp, n, "crio-conmon-") ||
	    has_prefix(comp, n, "libpod-conmon-"))
		return;
	if ((hex = hex_run(comp, n)) == NULL)
		return;
	if (hex > comp)
		set_container(id, hex, runtime_of(comp, n));
	else
		set_container(id, hex, equals(parent, plen, "docker") ?
		    "docker" : NULL);
}

/*
 * A pod uid: a UUID, 32 hex digits in groups of 8-4-4-4-12 joined by '-'
 * (or '_' in systemd), so that it fits pod_id whole.
 */
static int
is_uid(const char *s, size_t n)
{
	size_t i;

	if (n != 36)
		return 0;
	for (i = 0; i < n; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-' && s[i] != '_')
				return 0;
		} else if (!isxdigit((unsigned char)s[i]))
			return 0;
	}
	return 1;
}

static void
set_qos(struct kp_identity *id, const char *qos, size_t n)
{
	if (n == 0)
		COPY(id->pod_qos, "guaranteed", strlen("guaranteed"));
	else if (equals(qos, n, "burstable") || equals(qos, n, "besteffort"))
		COPY(id->pod_qos, qos, n);
}

/*
 * kubepods-burstable-pod<uid>.slice (with _ for -), whose QoS class is
 * between "kubepods-" and "-pod" (none: guaranteed), or cgroupfs
 * /kubepods/<qos>/pod<uid> and /kubepods/pod<uid>: only below kubepods,
 * so podman's scopes are not taken for pods.
 */
static void
pod_id(const char *comp, size_t n, const char *parent, size_t plen,
    int in_kubepods, struct kp_identity *id)
{
	const char *p, *qos;
	size_t len, qlen, i;

	if (has_prefix(comp, n, "kubepods") && has_suffix(comp, n, ".slice")) {
		for (p = comp + n; p > comp && strncmp(p, "-pod", 4) != 0; p--)
			;
		if (p == comp)
			return;
		qos = comp + strlen("kubepods");
		qlen = (size_t)(p - qos);
		if (qlen > 0) {
			qos++;
			qlen--;
		}
		p += 4;
		len = (size_t)(comp + n - strlen(".slice") - p);
	} else if (in_kubepods && has_prefix(comp, n, "pod")) {
		p = comp + 3;
		len = n - 3;
		qos = parent;
		qlen = equals(parent, plen, "kubepods") ? 0 : plen;
	} else
		return;
	if (!is_uid(p, len))
		return;
	COPY(id->pod_id, p, len);
	for (i = 0; id->pod_id[i]; i++)
		if (id->pod_id[i] == '_')
			id->pod_id[i] = '-';
	set_qos(id, qos, qlen);
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/*
 * machine-qemu\x2d1\x2dguest.scope: a libvirt machine, named in systemd's
 * escaping (\xHH for a byte).  The name is "<driver>-<N>-<vm name>".
 */
static void
vm_id(const char *comp, size_t n, struct kp_identity *id)
{
	const char *p, *end;
	char *name;
	size_t o = 0;
	int hi, lo;

	if (!has_prefix(comp, n, "machine-") || !has_suffix(comp, n, ".scope"))
		return;
	end = comp + n - strlen(".scope");
	for (p = comp + strlen("machine-"); p < end && o + 1 < sizeof(id->vm_id);) {
		if (end - p >= 4 && p[0] == '\\' && p[1] == 'x' &&
		    (hi = hexval((unsigned char)p[2])) >= 0 &&
		    (lo = hexval((unsigned char)p[3])) >= 0) {
			id->vm_id[o++] = (char)(hi * 16 + lo);
			p += 4;
		} else
			id->vm_id[o++] = *p++;
	}
	id->vm_id[o] = '\0';
	id->vm_name[0] = '\0';
	if ((name = strchr(id->vm_id, '-')) == NULL ||
	    !isdigit((unsigned char)name[1]))
		return;
	for (name++; isdigit((unsigned char)*name); name++)
		;
	if (*name == '-' && name[1] != '\0')
		COPY(id->vm_name, name + 1, strlen(name + 1));
}

/* user-1000.slice and session-3.scope, from systemd-logind. */
static void
user_session(const char *comp, size_t n, struct kp_identity *id)
{
	if (has_prefix(comp, n, "user-") && has_suffix(comp, n, ".slice"))
		COPY(id->user_slice, comp, n);
	else if (has_prefix(comp, n, "session-") &&
	    has_suffix(comp, n, ".scope"))
		COPY(id->session, comp + strlen("session-"),
		    n - strlen("session-") - strlen(".scope"));
}

/*
 * A v1 systemd-driver component, "<slice>:<runtime>:<id>", as in
 * kubepods-burstable-pod<uid>.slice:cri-containerd:<id>.
 */
static int
colon_form(const char *comp, size_t n, struct kp_identity *id)
{
	const char *c1, *c2, *hex;

	if ((c1 = memchr(comp, ':', n)) == NULL ||
	    (c2 = memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - comp))) == NULL)
		return 0;
	pod_id(comp, (size_t)(c1 - comp), "", 0, 0, id);
	if ((hex = hex_run(c2 + 1, n - (size_t)(c2 + 1 - comp))) != NULL)
		set_container(id, hex, runtime_of(c1 + 1,
		    (size_t)(c2 - c1 - 1)));
	return 1;
}

void
kp_identity_from_path(const char *path, struct kp_identity *id)
{
	const char *comp, *parent = "";
	size_t n, plen = 0;
	int in_kubepods = strstr(path, "kubepods") != NULL;

	memset(id, 0, sizeof(*id));
	COPY(id->cgroup, path, strlen(path));
	for (comp = path; *comp; parent = comp, plen = n, comp += n) {
		comp += strspn(comp, "/");
		n = strcspn(comp, "/");
		if (n == 0)
			break;
		if (colon_form(comp, n, id))
			continue;
		container_id(comp, n, parent, plen, id);
		pod_id(comp, n, parent, plen, in_kubepods, id);
		vm_id(comp, n, id);
		user_session(comp, n, id);
		if (has_suffix(comp, n, ".service"))
			COPY(id->unit, comp, n);
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
			COPY(best, path, plen);
		}
	}
	kp_identity_from_path(best, id);
}

/*
 * QEMU's arguments, NUL-separated as in /proc/PID/cmdline: -uuid U gives
 * vm_id, and -name guest=N,... or -name N gives vm_name.  The last
 * argument may lack its NUL (a process may write its own cmdline), so no
 * value is read past len.
 */
void
kp_identity_from_cmdline(const char *args, size_t len,
    struct kp_identity *id)
{
	const char *a, *next, *end = args + len, *name, *comma;
	size_t n;

	for (a = args; a < end; a = next) {
		next = a + strnlen(a, (size_t)(end - a)) + 1;
		if (next >= end)
			break;
		n = strnlen(next, (size_t)(end - next));
		if (strcmp(a, "-uuid") == 0 || strcmp(a, "--uuid") == 0)
			COPY(id->vm_id, next, n);
		else if (strcmp(a, "-name") == 0 || strcmp(a, "--name") == 0) {
			name = next;
			if (n >= 6 && strncmp(name, "guest=", 6) == 0)
				name += 6;
			if ((comma = memchr(name, ',', (size_t)(next + n -
			    name))) == NULL)
				comma = next + n;
			COPY(id->vm_name, name, (size_t)(comma - name));
		}
	}
}

/*
 * dir/<namespace>_<name>_<uid>/<container>/, as the kubelet writes them
 * (a namespace and a pod name hold no '_'), and dir/../containers/, where
 * <name>_<namespace>_<container>-<id>.log ties a container id to its name.
 * Without that link there is no name: the pod's sandbox has a container id
 * of its own, so even a pod of one container does not tell.
 */
void
kp_identity_from_pods_log(const char *dir, struct kp_identity *id)
{
	char path[1024];
	struct dirent *de;
	struct stat st;
	DIR *d;
	const char *sep = NULL;
	size_t nlen, ulen = strlen(id->pod_id);

	if (dir == NULL || *dir == '\0' || ulen == 0 ||
	    (d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		nlen = strlen(de->d_name);
		if (nlen > ulen + 3 && de->d_name[nlen - ulen - 1] == '_' &&
		    strcmp(de->d_name + nlen - ulen, id->pod_id) == 0 &&
		    (sep = strchr(de->d_name, '_')) < de->d_name + nlen - ulen - 1)
			break;
	}
	if (de == NULL) {
		closedir(d);
		return;
	}
	COPY(id->pod_namespace, de->d_name, (size_t)(sep - de->d_name));
	COPY(id->pod_name, sep + 1, nlen - ulen - 2 - (size_t)(sep - de->d_name));
	snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
	closedir(d);
	if (id->container_id[0] == '\0' || (d = opendir(path)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/../containers/%s_%s_%s-%s.log",
		    dir, id->pod_name, id->pod_namespace, de->d_name,
		    id->container_id);
		if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			COPY(id->container_name, de->d_name,
			    strlen(de->d_name));
			break;
		}
	}
	closedir(d);
}

/* What the process is, from the most specific field found. */
void
kp_identity_classify(struct kp_identity *id, int kernel_thread)
{
	const char *kind = "host";

	if (kernel_thread)
		kind = "kernel";
	else if (id->vm_id[0])
		kind = "vm";
	else if (id->container_id[0])
		kind = "container";
	else if (id->pod_id[0])
		kind = "pod";
	else if (id->unit[0])
		kind = "service";
	else if (id->session[0] || id->user_slice[0])
		kind = "session";
	COPY(id->kind, kind, strlen(kind));
}

/* ,"kind":..,"cgroup":.. and each identity field found, in one order. */
void
kp_identity_to_buf(const struct kp_identity *id, struct kp_buf *b)
{
	static const struct { const char *key; size_t off; } fields[] = {
#define F(name) { #name, offsetof(struct kp_identity, name) }
		F(kind), F(cgroup), F(container_id), F(runtime),
		F(container_name), F(pod_id), F(pod_name), F(pod_namespace),
		F(pod_qos), F(vm_id), F(vm_name), F(unit), F(user_slice),
		F(session)
#undef F
	};
	size_t i;
	const char *val;

	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		val = (const char *)id + fields[i].off;
		if (*val)
			kp_buf_text(b, fields[i].key, val);
	}
}
