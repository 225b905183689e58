/*
 * The kernel's DRM clients (Documentation/gpu/drm-usage-stats.rst): each
 * descriptor of a process that is open on a node of /dev/dri has, in
 * /proc/PID/fdinfo/FD, its device (drm-pdev), its client (drm-client-id)
 * and each engine's busy time, in ns (drm-engine-<name>, amdgpu, i915 and
 * most drivers) or else in GPU cycles of a total (drm-cycles-<name> of
 * drm-total-cycles-<name>, xe).  proc-cputime(1), "GPU time".
 */
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu.h"

/* A DRM node under class/drm: a card or a render node, not a connector. */
static int
drm_node(const char *name)
{
	return drm_numbered(name, "card") || drm_numbered(name, "renderD");
}

/*
 * A device key as fdinfo or a link gives it: a PCI address,
 * "0000:03:00.0", or a platform device's name, "fd00000.gpu" (msm,
 * panfrost).  Anything else is no key, since it is written into JSON as
 * it is.
 */
static int
key_ok(const char *key)
{
	size_t n = strlen(key);

	return n > 0 && n < GPU_KEY_MAX && strspn(key,
	    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    ":._-") == n;
}

/*
 * A GPU found through node, under class/drm dir: its residency read
 * where the node is its card (a render node is the same GPU's).
 */
static void
found_dev(struct kp_gpu *g, size_t dev, const char *dir, const char *node)
{
	char *card;

	g->devs[dev].drm = 1;
	if (!drm_numbered(node, "card"))
		return;
	card = kp_asprintf("%s/%s", dir, node);
	drm_idle_read(card, &g->devs[dev].idle);
	free(card);
}

/* Each DRM node of sysfs/class/drm, or only whether there is one (g NULL). */
static int
each_node(const char *sysfs, struct kp_gpu *g)
{
	char *dir = kp_asprintf("%s/class/drm", sysfs), link[PATH_MAX];
	char path[PATH_MAX], *slash;
	struct dirent *de;
	DIR *d;
	ssize_t n;
	int found = 0;

	if ((d = opendir(dir)) == NULL) {
		free(dir);
		return 0;
	}
	while ((de = readdir(d)) != NULL && (g != NULL || !found)) {
		if (!drm_node(de->d_name))
			continue;
		found = 1;
		snprintf(path, sizeof(path), "%s/%s/device", dir, de->d_name);
		if (g == NULL || (n = readlink(path, link,
		    sizeof(link) - 1)) <= 0)
			continue;
		link[n] = '\0';
		slash = strrchr(link, '/');
		if (key_ok(slash != NULL ? slash + 1 : link))
			found_dev(g, gpu_dev(g, slash != NULL ? slash + 1 :
			    link), dir, de->d_name);
	}
	closedir(d);
	free(dir);
	return found;
}

int
drm_present(const char *sysfs)
{
	return each_node(sysfs, NULL);
}

/*
 * The GPUs of the DRM nodes there now: one that went away has no figure.
 * Their residency is this scan's, or none.
 */
void
drm_devices(struct kp_gpu *g)
{
	size_t i;

	for (i = 0; i < g->ndevs; i++)
		g->devs[i].idle = (struct gpu_idle){ 0, 0 };
	each_node(g->sysfs, g);
}

/*
 * A process whose descriptors could not be read (no ptrace access):
 * counted once per scan, which reads pid after pid, with the first
 * reason.  One that ended meanwhile (ENOENT, ESRCH) is none.
 */
static void
denied(struct kp_gpu *g, pid_t pid)
{
	if (errno != EACCES && errno != EPERM)
		return;
	if (g->denied_pids > 0 && g->denied_pid == pid)
		return;
	if (g->denied_pids == 0)
		g->denied_errno = errno;
	g->denied_pids++;
	g->denied_pid = pid;
}

/* Said once: how many processes could not be read, why, what follows. */
void
drm_said_denied(struct kp_gpu *g)
{
	if (g->denied_pids == 0 || g->warned_denied)
		return;
	warnx("%s: %d process%s whose descriptors this user may not read "
	    "(%s; another user's need ptrace access): their GPU time is "
	    "unattributed, and each DRM GPU's busy time the GPU's own "
	    "(proc-cputime(1), GPU time)", g->procdir, g->denied_pids,
	    g->denied_pids == 1 ? "" : "es", strerror(g->denied_errno));
	g->warned_denied = 1;
}

/* The client (pdev, id), read this scan: found, or added. */
static struct drm_client *
client(struct kp_gpu *g, const char *pdev, uint64_t id)
{
	struct drm_client *c;
	size_t i;

	for (i = 0; i < g->nclients; i++)
		if (g->clients[i].id == id &&
		    strcmp(g->clients[i].pdev, pdev) == 0)
			return &g->clients[i];
	if (g->nclients == g->clientcap) {
		g->clientcap = g->clientcap ? 2 * g->clientcap : 8;
		g->clients = kp_reallocarray(g->clients, g->clientcap,
		    sizeof(*g->clients));
	}
	c = &g->clients[g->nclients++];
	memset(c, 0, sizeof(*c));
	snprintf(c->pdev, sizeof(c->pdev), "%s", pdev);
	c->id = id;
	return c;
}

/* A number and its unit as fdinfo writes it, "123 ns", "45"; -1 if not. */
static int
value(const char *s, const char *unit, uint64_t *v)
{
	char *end;

	s += strspn(s, " \t");
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	end += strspn(end, " \t");
	return strcmp(end, unit) == 0 ? 0 : -1;
}

/* The engine called name (len bytes) of e[*n], found or added; or NULL. */
static struct drm_engine *
engine(struct drm_engine *e, size_t *n, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (strlen(e[i].name) == len &&
		    memcmp(e[i].name, name, len) == 0)
			return &e[i];
	if (*n == DRM_ENGINES_MAX || len == 0 || len >= sizeof(e->name))
		return NULL;
	memset(&e[*n], 0, sizeof(e[*n]));
	memcpy(e[*n].name, name, len);
	return &e[(*n)++];
}

/*
 * One line "key:\tvalue" of an fdinfo into the client's engines: ns,
 * cycles or total cycles.  drm-engine-capacity-<name> is how many engines
 * of the kind there are, not a time.
 */
static void
engine_line(struct drm_engine *e, size_t *n, const char *key,
    const char *val)
{
	enum { NS, CYCLES, TOTAL } kind;
	struct drm_engine *en;
	const char *name;
	uint64_t v;

	if (strncmp(key, "drm-engine-capacity-", 20) == 0)
		return;
	if (strncmp(key, "drm-engine-", 11) == 0)
		kind = NS, name = key + 11;
	else if (strncmp(key, "drm-cycles-", 11) == 0)
		kind = CYCLES, name = key + 11;
	else if (strncmp(key, "drm-total-cycles-", 17) == 0)
		kind = TOTAL, name = key + 17;
	else
		return;
	if (value(val, kind == NS ? "ns" : "", &v) < 0 ||
	    (en = engine(e, n, name, strlen(name))) == NULL)
		return;
	if (kind == NS) {
		en->ns = v;
		en->has_ns = 1;
	} else if (kind == CYCLES)
		en->cycles = v;
	else
		en->total = v;
}

/* The fdinfo in text (changed) as a client's: 0, or -1 if it is none. */
static int
parse_fdinfo(char *text, char *pdev, uint64_t *id, struct drm_engine *e,
    size_t *n)
{
	char *line, *colon;
	int has_id = 0;

	*n = 0;
	pdev[0] = '\0';
	while ((line = strsep(&text, "\n")) != NULL) {
		if ((colon = strchr(line, ':')) == NULL)
			continue;
		*colon = '\0';
		if (strcmp(line, "drm-pdev") == 0)
			snprintf(pdev, GPU_KEY_MAX, "%s", colon + 1 +
			    strspn(colon + 1, " \t"));
		else if (strcmp(line, "drm-client-id") == 0)
			has_id = value(colon + 1, "", id) == 0;
		else
			engine_line(e, n, line, colon + 1);
	}
	return has_id && key_ok(pdev) ? 0 : -1;
}

/*
 * Descriptor fd of pid, open on a DRM node: its client's engines as of
 * now.  A client that two descriptors or processes share (dup, fork, a
 * descriptor passed) counts once, for the lowest pid holding it.
 */
static void
read_client(struct kp_gpu *g, int procfd, pid_t pid, const char *fd)
{
	struct drm_engine e[DRM_ENGINES_MAX];
	char path[64], text[8192], pdev[GPU_KEY_MAX];
	struct drm_client *c;
	uint64_t id;
	size_t n;

	snprintf(path, sizeof(path), "%ld/fdinfo/%s", (long)pid, fd);
	if (kp_read_proc(procfd, path, text, sizeof(text)) < 0) {
		denied(g, pid);
		return;
	}
	if (parse_fdinfo(text, pdev, &id, e, &n) < 0)
		return;
	c = client(g, pdev, id);
	if (c->gen == g->gen && c->pid <= pid)
		return;		/* read already, through its first holder */
	c->pid = pid;
	c->gen = g->gen;
	memcpy(c->now, e, n * sizeof(*e));
	c->nnow = n;
}

/* Each descriptor of pid that is open on a node of /dev/dri: its client. */
void
drm_scan_pid(struct kp_gpu *g, int procfd, pid_t pid)
{
	char path[64], target[64];
	struct dirent *de;
	ssize_t n;
	DIR *d;
	int fd;

	snprintf(path, sizeof(path), "%ld/fd", (long)pid);
	if ((fd = openat(procfd, path, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) < 0 || (d = fdopendir(fd)) == NULL) {
		denied(g, pid);
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		/* A process that execs a setuid file is checked again. */
		if ((n = readlinkat(fd, de->d_name, target,
		    sizeof(target) - 1)) < 0)
			denied(g, pid);
		if (n <= 9 || strncmp(target, "/dev/dri/", 9) != 0)
			continue;
		read_client(g, procfd, pid, de->d_name);
	}
	closedir(d);
}

/*
 * An engine's time over the interval, in ns: its own, or its cycles'
 * share of the interval.  A counter that went back is not the one it was.
 */
static uint64_t
engine_ns(const struct drm_engine *now, const struct drm_engine *before,
    int64_t dt_us)
{
	uint64_t busy, total;

	if (now->has_ns)	/* before NULL: opened in the interval */
		return before == NULL ? now->ns : before->has_ns &&
		    now->ns >= before->ns ? now->ns - before->ns : 0;
	if (before == NULL || now->total == 0 || dt_us <= 0 ||
	    now->cycles < before->cycles || now->total <= before->total)
		return 0;
	busy = now->cycles - before->cycles;
	total = now->total - before->total;
	if (busy > total)
		return 0;
	return (uint64_t)((unsigned __int128)busy * (uint64_t)dt_us * 1000 /
	    total);
}

/*
 * The client's time over the interval, its engines' summed, in us: the
 * sum rounded down once, not each engine's.
 */
static int64_t
client_us(const struct drm_client *c, int64_t dt_us)
{
	const struct drm_engine *before;
	unsigned __int128 ns = 0;
	size_t i, j;

	for (i = 0; i < c->nnow; i++) {
		before = NULL;
		for (j = 0; c->has_before && j < c->nbefore; j++)
			if (strcmp(c->before[j].name, c->now[i].name) == 0)
				before = &c->before[j];
		if (c->has_before && before == NULL)
			continue;	/* an engine it did not show before */
		ns += engine_ns(&c->now[i], before, dt_us);
	}
	return ns / 1000 > KP_AMOUNT_MAX ? KP_AMOUNT_MAX : (int64_t)(ns / 1000);
}

/*
 * The interval's time of each client read this scan, to its process and
 * GPU; a client first read now was opened in the interval, where there
 * was a scan before.  Clients not read are closed: let go.
 */
void
drm_account(struct kp_gpu *g, int64_t dt_us)
{
	struct drm_client *c;
	size_t i, kept = 0;

	for (i = 0; i < g->nclients; i++) {
		c = &g->clients[i];
		if (c->gen != g->gen)
			continue;
		if (g->scans > 0)
			gpu_add_use(g, c->pid, gpu_dev(g, c->pdev),
			    client_us(c, dt_us));
		memcpy(c->before, c->now, c->nnow * sizeof(*c->now));
		c->nbefore = c->nnow;
		c->has_before = 1;
		g->clients[kept++] = *c;
	}
	g->nclients = kept;
}

/*
 * One client: [pdev, id, [[engine, ns, cycles, total], ...]], ns -1
 * where the engine has none.
 */
static json_t *
save_client(const struct drm_client *c)
{
	const struct drm_engine *e;
	json_t *engines = json_array();
	size_t i;

	for (i = 0; i < c->nnow; i++) {
		e = &c->now[i];
		json_array_append_new(engines, json_pack("[s,I,I,I]", e->name,
		    e->has_ns ? (json_int_t)e->ns : -1, (json_int_t)e->cycles,
		    (json_int_t)e->total));
	}
	return json_pack("[s,I,o]", c->pdev, (json_int_t)c->id, engines);
}

/* The clients read at the latest scan, as the next run's baseline. */
json_t *
drm_save(const struct kp_gpu *g)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < g->nclients; i++)
		if (g->clients[i].gen == g->gen)
			json_array_append_new(a, save_client(&g->clients[i]));
	return a;
}

/* A saved engine, [name, ns or -1, cycles, total], into e[*n]; -1 if bad. */
static int
load_engine(json_t *v, struct drm_engine *e, size_t *n)
{
	json_int_t ns, cycles, total;
	struct drm_engine *en;
	const char *name;

	if (json_unpack(v, "[s,I,I,I]", &name, &ns, &cycles, &total) < 0 ||
	    ns < -1 || cycles < 0 || total < 0 ||
	    (en = engine(e, n, name, strlen(name))) == NULL)
		return -1;
	en->has_ns = ns >= 0;
	en->ns = ns >= 0 ? (uint64_t)ns : 0;
	en->cycles = (uint64_t)cycles;
	en->total = (uint64_t)total;
	return 0;
}

/* A saved client as read before; one that is not is left out. */
static void
load_client(struct kp_gpu *g, json_t *row)
{
	struct drm_engine e[DRM_ENGINES_MAX];
	const char *pdev;
	json_int_t id;
	json_t *engines, *v;
	struct drm_client *c;
	size_t i, n = 0;

	if (json_unpack(row, "[s,I,o]", &pdev, &id, &engines) < 0 ||
	    !key_ok(pdev) || id < 0 || !json_is_array(engines))
		return;
	json_array_foreach(engines, i, v)
		if (load_engine(v, e, &n) < 0)
			return;
	c = client(g, pdev, (uint64_t)id);
	memcpy(c->before, e, n * sizeof(*e));
	c->nbefore = n;
	c->has_before = 1;
}

void
drm_load(struct kp_gpu *g, json_t *saved)
{
	json_t *row;
	size_t i;

	json_array_foreach(saved, i, row)
		load_client(g, row);
}
