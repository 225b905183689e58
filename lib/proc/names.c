/*
 * The names of workloads, from the node's own files, so that no API server
 * is asked: the kubelet's log links and pod log directories, docker's
 * config.v2.json, podman's containers.json, libvirt's domain XML.  Each
 * name is read once per id and kept; an id whose names are not there yet
 * is looked up again only once one of the files they come from has
 * changed, which is seen at most once a scan.  All paths are below a root
 * (a mount of the host's / in a container), except those given by hand.
 */
#include <ctype.h>
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc.h"

#define NAMES_MAX 4096		/* ids kept; beyond, the unasked go */
#define JSON_MAX (64 << 20)	/* bytes of a containers.json */
#define XML_MAX (4 << 20)	/* bytes of a domain's XML */

/* A file or directory whose change may bring names. */
struct source {
	char *path;		/* NULL: none */
	struct stat st;		/* as last seen; all 0 while it is not there */
	unsigned tick;		/* the scan it was last looked at */
	int told;		/* a refused access was reported */
};

/* The names of one id, as found, or as an index holds them. */
struct found {
	char container_name[128];
	char pod_name[256];
	char pod_namespace[64];
	char vm_name[128];
	char vm_uuid[40];	/* a libvirt machine's */
	unsigned changes;	/* the sources' changes when looked up */
	unsigned used;		/* the scan that last asked for it */
	int complete;		/* every name it can have is there */
};

/* Names read from one source and kept by id until the source changes. */
struct index {
	struct source src;
	struct kp_map *map;	/* id -> struct found */
	void (*build)(struct index *ix);
};

struct kp_names {
	char *root;		/* without a final '/' */
	unsigned tick;		/* scans begun */
	unsigned changes;	/* changes seen in any source */
	struct kp_map *cache;	/* "c:", "p:", "v:" + id -> struct found */
	struct index containers_log, pods_log, libvirt_run, libvirt_etc;
	struct index lxc_run, lxc_etc;	/* libvirt's LXC driver's domains */
	struct index *podman;
	size_t npodman;
	struct kp_map *users;		/* uids whose stores are listed */
	struct source *docker;		/* containers/ of each data root */
	size_t ndocker;
};

static struct found *
found_dup(const struct found *f)
{
	struct found *d = kp_malloc(sizeof(*d));

	memcpy(d, f, sizeof(*d));
	return d;
}

static void
source_init(struct source *src, const char *path)
{
	memset(src, 0, sizeof(*src));
	src->path = path != NULL ? kp_strdup(path) : NULL;
}

/* A refused access is said once per source: names are missing for it. */
static void
refused(struct source *src, const char *path)
{
	if ((errno != EACCES && errno != EPERM) || src->told)
		return;
	warn("%s: names from it are left out", path);
	src->told = 1;
}

static int
same_stat(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	    a->st_size == b->st_size &&
	    a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	    a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Whether src changed since it was last looked at; once a scan. */
static int
source_changed(struct kp_names *n, struct source *src)
{
	struct stat st;

	if (src->path == NULL || src->tick == n->tick)
		return 0;
	src->tick = n->tick;
	if (stat(src->path, &st) < 0) {
		refused(src, src->path);
		memset(&st, 0, sizeof(st));
	}
	if (same_stat(&st, &src->st))
		return 0;
	src->st = st;
	n->changes++;
	return 1;
}

static void
index_init(struct index *ix, const char *path, void (*build)(struct index *))
{
	source_init(&ix->src, path);
	ix->map = kp_map_new();
	ix->build = build;
}

/* The index, read again if its source changed. */
static struct kp_map *
index_fresh(struct kp_names *n, struct index *ix)
{
	if (source_changed(n, &ix->src)) {
		kp_map_free(ix->map, free);
		ix->map = kp_map_new();
		if (ix->src.st.st_ino != 0)
			ix->build(ix);
	}
	return ix->map;
}

static void
index_free(struct index *ix)
{
	free(ix->src.path);
	kp_map_free(ix->map, free);
}

/* s[0..len) into a field of size size, if it fits whole: 1 if it did. */
static int
put(char *field, size_t size, const char *s, size_t len)
{
	if (len == 0 || len >= size)
		return 0;
	memcpy(field, s, len);
	field[len] = '\0';
	return 1;
}

#define PUT(field, s, len) put(field, sizeof(field), s, len)

static int
all_hex(const char *s, size_t n)
{
	return n > 0 && strspn(s, "0123456789abcdefABCDEF") >= n;
}

/*
 * The kubelet's /var/log/containers links,
 * <pod>_<namespace>_<container>-<id>.log, by container id.  Pod names,
 * namespaces and container names hold no '_' (they are DNS names).
 */
static void
log_link(struct index *ix, const char *name)
{
	size_t len = strlen(name);
	const char *u1, *u2, *dash;
	struct found f = { 0 };
	char id[65];

	if (len < 5 + 65 + 4 || strcmp(name + len - 4, ".log") != 0)
		return;
	dash = name + len - 4 - 65;
	if (*dash != '-' || !all_hex(dash + 1, 64) ||
	    (u1 = strchr(name, '_')) == NULL ||
	    (u2 = strchr(u1 + 1, '_')) == NULL || u2 >= dash ||
	    memchr(u2 + 1, '_', (size_t)(dash - u2 - 1)) != NULL)
		return;
	if (!PUT(f.pod_name, name, (size_t)(u1 - name)) ||
	    !PUT(f.pod_namespace, u1 + 1, (size_t)(u2 - u1 - 1)) ||
	    !PUT(f.container_name, u2 + 1, (size_t)(dash - u2 - 1)))
		return;
	memcpy(id, dash + 1, 64);
	id[64] = '\0';
	kp_map_put(ix->map, id, found_dup(&f));
}

/*
 * A pod uid as the kubelet writes it: a UUID, or 32 hex digits for a
 * static pod (a hash of its manifest).
 */
static int
pod_uid(const char *s, size_t n)
{
	return kp_uuid_ok(s, n) || (n == 32 && all_hex(s, n));
}

/* /var/log/pods/<namespace>_<pod>_<uid>, by uid. */
static void
pod_dir(struct index *ix, const char *name)
{
	const char *u1, *u2;
	struct found f = { 0 };

	if ((u1 = strchr(name, '_')) == NULL ||
	    (u2 = strchr(u1 + 1, '_')) == NULL || strchr(u2 + 1, '_') ||
	    !pod_uid(u2 + 1, strlen(u2 + 1)) ||
	    !PUT(f.pod_namespace, name, (size_t)(u1 - name)) ||
	    !PUT(f.pod_name, u1 + 1, (size_t)(u2 - u1 - 1)))
		return;
	kp_map_put(ix->map, u2 + 1, found_dup(&f));
}

/* Each entry of the index's directory through fn. */
static void
each_entry(struct index *ix, void (*fn)(struct index *, const char *))
{
	struct dirent *de;
	DIR *d;

	if ((d = opendir(ix->src.path)) == NULL) {
		refused(&ix->src, ix->src.path);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			fn(ix, de->d_name);
	closedir(d);
}

static void
build_containers_log(struct index *ix)
{
	each_entry(ix, log_link);
}

static void
build_pods_log(struct index *ix)
{
	each_entry(ix, pod_dir);
}

/*
 * A JSON file, at most max bytes, through jansson; NULL if it is not there,
 * not a regular file, too big or not JSON.
 */
static json_t *
load_json(struct source *src, const char *path, off_t max)
{
	struct stat st;
	json_error_t jerr;
	json_t *root = NULL;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0) {
		refused(src, path);
		return NULL;
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= max)
		root = kp_json_loadfd(fd, &jerr);
	close(fd);
	return root;
}

/*
 * A containers/storage containers.json: [{"id":..,"names":[..],..},..],
 * the first name of each container by its id.
 */
static void
build_podman(struct index *ix)
{
	json_t *list, *c;
	const char *id, *name;
	struct found f;
	size_t i;

	if ((list = load_json(&ix->src, ix->src.path, JSON_MAX)) == NULL)
		return;
	json_array_foreach(list, i, c) {
		memset(&f, 0, sizeof(f));
		id = json_string_value(json_object_get(c, "id"));
		name = json_string_value(json_array_get(json_object_get(c,
		    "names"), 0));
		if (id != NULL && name != NULL &&
		    PUT(f.container_name, name, strlen(name)))
			kp_map_put(ix->map, id, found_dup(&f));
	}
	json_decref(list);
}

/* A storage root's containers.json, for each storage driver's layout. */
void
kp_names_add_podman_root(struct kp_names *n, const char *dir)
{
	static const char *const drivers[] = { "overlay", "vfs", "btrfs",
	    "zfs" };
	char *path;
	size_t i;

	for (i = 0; i < sizeof(drivers) / sizeof(drivers[0]); i++) {
		n->podman = kp_reallocarray(n->podman, n->npodman + 1,
		    sizeof(*n->podman));
		path = kp_asprintf("%s/%s-containers/containers.json", dir,
		    drivers[i]);
		index_init(&n->podman[n->npodman++], path, build_podman);
		free(path);
	}
}

/*
 * A minimal reader of libvirt's domain XML, for two elements only: the
 * <name> and <uuid> children of <domain>, the document's root in
 * /etc/libvirt/qemu and a child of <domstatus> in /run/libvirt/qemu.
 * Comments, processing instructions and CDATA sections are skipped; a
 * DOCTYPE makes the file unusable, so that no entity is ever defined and
 * nothing outside the file is read; so does markup inside those two
 * elements.  Their text may hold the five predefined entities and ASCII
 * character references.
 */
struct xml {
	const char *p, *end;
	char name[128], uuid[40];
};

static int
starts(const char *p, const char *end, const char *s)
{
	size_t n = strlen(s);

	return (size_t)(end - p) >= n && memcmp(p, s, n) == 0;
}

/* Just past the next s, or NULL. */
static const char *
past(const char *p, const char *end, const char *s)
{
	const char *q = memmem(p, (size_t)(end - p), s, strlen(s));

	return q != NULL ? q + strlen(s) : NULL;
}

/* One character of an entity at p ('&'), into *c; past it, or NULL. */
static const char *
xml_entity(const char *p, const char *end, char *c)
{
	static const struct { const char *name; char c; } ents[] = {
		{ "&lt;", '<' }, { "&gt;", '>' }, { "&amp;", '&' },
		{ "&quot;", '"' }, { "&apos;", '\'' },
	};
	const char *semi;
	char *e;
	long v;
	size_t i;

	for (i = 0; i < sizeof(ents) / sizeof(ents[0]); i++)
		if (starts(p, end, ents[i].name)) {
			*c = ents[i].c;
			return p + strlen(ents[i].name);
		}
	if (!starts(p, end, "&#") || (semi = memchr(p, ';',
	    (size_t)(end - p))) == NULL || semi - p > 8)
		return NULL;
	errno = 0;
	v = p[2] == 'x' ? strtol(p + 3, &e, 16) : strtol(p + 2, &e, 10);
	if (e != semi || errno != 0 || v <= 0 || v > 127)
		return NULL;
	*c = (char)v;
	return semi + 1;
}

/* An element's text, up to its end tag, into out; 0 if it is more. */
static int
xml_text(const char *p, const char *end, char *out, size_t size)
{
	size_t o = 0;
	char c;

	while (p < end && *p != '<') {
		if (*p == '&') {
			if ((p = xml_entity(p, end, &c)) == NULL)
				return 0;
		} else
			c = *p++;
		if (o + 1 >= size)
			return 0;
		out[o++] = c;
	}
	out[o] = '\0';
	return o > 0 && starts(p, end, "</");
}

/* The '>' that ends the tag at p, quoted attribute values skipped. */
static const char *
tag_end(const char *p, const char *end)
{
	const char *q;

	for (; p < end; p++) {
		if (*p == '>')
			return p;
		if (*p == '"' || *p == '\'') {
			if ((q = memchr(p + 1, *p, (size_t)(end - p - 1))) ==
			    NULL)
				return NULL;
			p = q;
		}
	}
	return NULL;
}

static int
is_tag(const char *tag, const char *end, const char *name)
{
	size_t n = strlen(name);

	return starts(tag, end, name) && tag + n < end &&
	    strchr(" \t\r\n/>", tag[n]) != NULL;
}

/* A start tag at depth; its text if it is <name> or <uuid> of <domain>. */
static int
xml_start(struct xml *x, const char *tag, const char *gt, int depth,
    int *domain)
{
	if (*domain < 0 && is_tag(tag, x->end, "domain"))
		*domain = depth;
	else if (*domain >= 0 && depth == *domain + 1 && gt[-1] != '/') {
		if (is_tag(tag, x->end, "name") && !x->name[0])
			return xml_text(gt + 1, x->end, x->name,
			    sizeof(x->name));
		if (is_tag(tag, x->end, "uuid") && !x->uuid[0])
			return xml_text(gt + 1, x->end, x->uuid,
			    sizeof(x->uuid)) &&
			    kp_uuid_ok(x->uuid, strlen(x->uuid));
	}
	return 1;
}

/* 1 if the document holds a domain's name and uuid. */
static int
xml_domain(struct xml *x)
{
	const char *p = x->p, *gt;
	int depth = 0, domain = -1;

	x->name[0] = x->uuid[0] = '\0';
	while ((p = memchr(p, '<', (size_t)(x->end - p))) != NULL) {
		if (starts(p, x->end, "<!--"))
			p = past(p, x->end, "-->");
		else if (starts(p, x->end, "<?"))
			p = past(p, x->end, "?>");
		else if (starts(p, x->end, "<![CDATA["))
			p = past(p, x->end, "]]>");
		else if (starts(p, x->end, "<!"))
			return 0;
		else if ((gt = tag_end(p, x->end)) == NULL)
			return 0;
		else if (p[1] == '/') {
			if (--depth < 0 || depth == domain)
				break;
			p = gt + 1;
		} else {
			if (!xml_start(x, p + 1, gt, depth, &domain))
				return 0;
			depth += gt[-1] != '/';
			p = gt + 1;
		}
		if (p == NULL)
			return 0;
	}
	return x->name[0] && x->uuid[0];
}

/* A whole regular file of at most max bytes, in a new buffer; or NULL. */
static char *
slurp(struct source *src, const char *path, size_t max, size_t *len)
{
	struct stat st;
	char *buf;
	int n;

	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size > max)
		return NULL;
	buf = kp_malloc((size_t)st.st_size + 1);
	if ((n = kp_read_file(AT_FDCWD, path, buf,
	    (size_t)st.st_size + 1)) < 0) {
		refused(src, path);
		free(buf);
		return NULL;
	}
	*len = (size_t)n;
	return buf;
}

/*
 * The name libvirt gives a domain's machine (virDomainMachineNameAppendValid,
 * uncut): a host name's characters only, a run of '.' and '-' as its first,
 * none leading or trailing.  Its scope, machine-qemu-<N>-<this>, is all that
 * a process's cgroup tells of a domain whose name has others.
 */
static void
machine_form(const char *name, char *out, size_t size)
{
	size_t o = 0;
	int skip = 1;

	for (; *name && o + 1 < size; name++) {
		if (*name == '.' || *name == '-') {
			if (!skip)
				out[o++] = *name;
			skip = 1;
		} else if (isalnum((unsigned char)*name)) {
			out[o++] = *name;
			skip = 0;
		}
	}
	while (o > 0 && (out[o - 1] == '.' || out[o - 1] == '-'))
		o--;
	out[o] = '\0';
}

/*
 * One domain's XML file: its name and uuid, each a key to the other, and
 * its machine's name, where it differs, to both.
 */
static void
libvirt_file(struct index *ix, const char *file)
{
	struct xml x;
	struct found f = { 0 };
	char *path, *buf, *key, machine[sizeof(f.vm_name)];
	size_t len = strlen(file), i;

	if (len <= 4 || strcmp(file + len - 4, ".xml") != 0)
		return;
	path = kp_asprintf("%s/%s", ix->src.path, file);
	buf = slurp(&ix->src, path, XML_MAX, &len);
	free(path);
	if (buf == NULL)
		return;
	x.p = buf;
	x.end = buf + len;
	if (xml_domain(&x) && PUT(f.vm_name, x.name, strlen(x.name)) &&
	    PUT(f.vm_uuid, x.uuid, strlen(x.uuid))) {
		for (i = 0; f.vm_uuid[i]; i++)
			f.vm_uuid[i] = (char)tolower((unsigned char)f.vm_uuid[i]);
		key = kp_asprintf("n:%s", f.vm_name);
		kp_map_put(ix->map, key, found_dup(&f));
		free(key);
		key = kp_asprintf("u:%s", f.vm_uuid);
		kp_map_put(ix->map, key, found_dup(&f));
		free(key);
		machine_form(f.vm_name, machine, sizeof(machine));
		if (*machine && strcmp(machine, f.vm_name) != 0) {
			key = kp_asprintf("m:%s", machine);
			kp_map_put(ix->map, key, found_dup(&f));
			free(key);
		}
	}
	free(buf);
}

static void
build_libvirt(struct index *ix)
{
	each_entry(ix, libvirt_file);
}

/* A docker data root: its containers/<id>/config.v2.json. */
static void
add_docker_root(struct kp_names *n, const char *dir)
{
	char *path = kp_asprintf("%s/containers", dir);

	n->docker = kp_reallocarray(n->docker, n->ndocker + 1,
	    sizeof(*n->docker));
	source_init(&n->docker[n->ndocker++], path);
	free(path);
}

/* A path below the root. */
static char *
under_root(const struct kp_names *n, const char *path)
{
	return kp_asprintf("%s%s", n->root, path);
}

/* A directory of libvirt's domain XML files below the root. */
static void
libvirt_index(struct kp_names *n, struct index *ix, const char *dir)
{
	char *p = under_root(n, dir);

	index_init(ix, p, build_libvirt);
	free(p);
}

struct kp_names *
kp_names_new(const char *root)
{
	struct kp_names *n = kp_calloc(1, sizeof(*n));
	size_t len = strlen(root);
	char *p;

	while (len > 0 && root[len - 1] == '/')
		len--;
	n->root = kp_strndup(root, len);
	n->tick = 1;
	n->cache = kp_map_new();
	n->users = kp_map_new();
	kp_names_set_pods_log(n, NULL);
	libvirt_index(n, &n->libvirt_run, "/run/libvirt/qemu");
	libvirt_index(n, &n->libvirt_etc, "/etc/libvirt/qemu");
	libvirt_index(n, &n->lxc_run, "/run/libvirt/lxc");
	libvirt_index(n, &n->lxc_etc, "/etc/libvirt/lxc");
	p = under_root(n, "/var/lib/docker");
	add_docker_root(n, p);
	free(p);
	p = under_root(n, "/var/lib/containers/storage");
	kp_names_add_podman_root(n, p);
	free(p);
	return n;
}

/*
 * The kubelet's pod log directory, and its links in dir/../containers;
 * NULL: the root's /var/log/pods, "": none.
 */
void
kp_names_set_pods_log(struct kp_names *n, const char *dir)
{
	char *pods, *containers;

	if (n->pods_log.map != NULL) {
		index_free(&n->pods_log);
		index_free(&n->containers_log);
	}
	if (dir == NULL) {
		pods = under_root(n, "/var/log/pods");
		containers = under_root(n, "/var/log/containers");
	} else if (*dir != '\0') {
		pods = kp_strdup(dir);
		containers = kp_asprintf("%s/../containers", dir);
	} else
		pods = containers = NULL;
	index_init(&n->pods_log, pods, build_pods_log);
	index_init(&n->containers_log, containers, build_containers_log);
	free(pods);
	free(containers);
}

/*
 * A rootless user's stores, below the home that the root's /etc/passwd
 * gives uid, looked up once per uid: podman's
 * ~/.local/share/containers/storage and the rootless docker daemon's data
 * root, ~/.local/share/docker.
 */
static void
add_user(struct kp_names *n, const char *uid)
{
	char *path, *line = NULL, *f[7], *p;
	size_t cap = 0, i;
	FILE *fp;

	if (kp_map_get(n->users, uid) != NULL)
		return;
	kp_map_put(n->users, uid, kp_strdup(uid));
	path = under_root(n, "/etc/passwd");
	fp = fopen(path, "re");
	free(path);
	while (fp != NULL && getline(&line, &cap, fp) > 0) {
		line[strcspn(line, "\n")] = '\0';
		for (i = 0, p = line; i < 7 && p != NULL; i++)
			f[i] = strsep(&p, ":");
		if (i == 7 && strcmp(f[2], uid) == 0 && f[5][0] == '/') {
			path = kp_asprintf("%s%s/.local/share/containers/storage",
			    n->root, f[5]);
			kp_names_add_podman_root(n, path);
			free(path);
			path = kp_asprintf("%s%s/.local/share/docker", n->root,
			    f[5]);
			add_docker_root(n, path);
			free(path);
			break;
		}
	}
	free(line);
	if (fp != NULL)
		fclose(fp);
}

/* The uid of a user-<uid>.slice, into uid; 0 if there is none. */
static int
slice_uid(const struct kp_identity *id, char *uid, size_t size)
{
	const char *s = id->user_slice;
	size_t n = strlen(s);

	if (n <= 11 || strncmp(s, "user-", 5) != 0)
		return 0;
	return put(uid, size, s + 5, n - 5 - strlen(".slice")) &&
	    strspn(uid, "0123456789") == strlen(uid);
}

/* A docker config.v2.json: its "Name", and a pod's labels. */
static void
docker_config(json_t *cfg, struct found *f)
{
	static const struct { const char *label; size_t off, size; } labels[] = {
#define L(label, field) { label, offsetof(struct found, field), \
	sizeof(((struct found *)0)->field) }
		L("io.kubernetes.container.name", container_name),
		L("io.kubernetes.pod.name", pod_name),
		L("io.kubernetes.pod.namespace", pod_namespace),
#undef L
	};
	json_t *lab;
	const char *name, *v;
	size_t i;

	lab = json_object_get(json_object_get(cfg, "Config"), "Labels");
	for (i = 0; i < sizeof(labels) / sizeof(labels[0]); i++)
		if ((v = json_string_value(json_object_get(lab,
		    labels[i].label))) != NULL)
			put((char *)f + labels[i].off, labels[i].size, v,
			    strlen(v));
	if (!f->container_name[0] &&
	    (name = json_string_value(json_object_get(cfg, "Name"))) != NULL)
		PUT(f->container_name, name + (*name == '/'),
		    strlen(name + (*name == '/')));
}

/*
 * docker's names of a container, from the system's data root, then from
 * the rootless daemon's of the user whose slice the container is in.
 */
static void
docker_names(struct kp_names *n, const struct kp_identity *id,
    struct found *f)
{
	const char *cid = id->container_id;
	char *path, uid[16];
	json_t *cfg;
	size_t i;

	if (!all_hex(cid, 64) || cid[64] != '\0')
		return;
	if (slice_uid(id, uid, sizeof(uid)))
		add_user(n, uid);
	for (i = 0; i < n->ndocker; i++) {
		path = kp_asprintf("%s/%s/config.v2.json", n->docker[i].path,
		    cid);
		cfg = load_json(&n->docker[i], path, JSON_MAX);
		free(path);
		if (cfg != NULL) {
			docker_config(cfg, f);
			json_decref(cfg);
			return;
		}
	}
}

static const struct found *
index_get(struct kp_names *n, struct index *ix, const char *key)
{
	return kp_map_get(index_fresh(n, ix), key);
}

static void
podman_names(struct kp_names *n, const struct kp_identity *id,
    struct found *f)
{
	const struct found *hit;
	char uid[16];
	size_t i;

	if (slice_uid(id, uid, sizeof(uid)))
		add_user(n, uid);
	for (i = 0; i < n->npodman; i++)
		if ((hit = index_get(n, &n->podman[i], id->container_id)) !=
		    NULL) {
			PUT(f->container_name, hit->container_name,
			    strlen(hit->container_name));
			return;
		}
}

static void
copy_names(struct found *f, const struct found *from)
{
	if (from == NULL)
		return;
	if (!f->container_name[0])
		PUT(f->container_name, from->container_name,
		    strlen(from->container_name));
	if (!f->pod_name[0] && PUT(f->pod_name, from->pod_name,
	    strlen(from->pod_name)))
		PUT(f->pod_namespace, from->pod_namespace,
		    strlen(from->pod_namespace));
}

/*
 * A container's names: the kubelet's links for a pod's, then the store of
 * its runtime (docker's also for a bare id of unknown runtime).
 */
static void
container_names(struct kp_names *n, const struct kp_identity *id,
    struct found *f)
{
	const char *rt = id->runtime;

	copy_names(f, index_get(n, &n->containers_log, id->container_id));
	if (id->pod_id[0])
		copy_names(f, index_get(n, &n->pods_log, id->pod_id));
	if (!f->container_name[0] && (strcmp(rt, "docker") == 0 || !*rt))
		docker_names(n, id, f);
	if (!f->container_name[0] && strcmp(rt, "podman") == 0)
		podman_names(n, id, f);
	f->complete = f->container_name[0] &&
	    (!id->pod_id[0] || f->pod_name[0]);
}

static void
pod_names(struct kp_names *n, const struct kp_identity *id, struct found *f)
{
	copy_names(f, index_get(n, &n->pods_log, id->pod_id));
	f->complete = f->pod_name[0] != '\0';
}

/* A domain by key, among the running domains (run), then the defined. */
static const struct found *
domain_in(struct kp_names *n, struct index *run, struct index *etc,
    const char *kind, const char *name)
{
	const struct found *hit;
	char *key = kp_asprintf("%s:%s", kind, name);

	if ((hit = index_get(n, run, key)) == NULL)
		hit = index_get(n, etc, key);
	free(key);
	return hit;
}

static const struct found *
domain_get(struct kp_names *n, const char *kind, const char *name)
{
	return domain_in(n, &n->libvirt_run, &n->libvirt_etc, kind, name);
}

/*
 * A libvirt LXC container's uuid, from its domain's name: its machine's
 * id, lxc-<N>-<name>, changes at each start, as a VM's does.
 */
static void
lxc_names(struct kp_names *n, const struct kp_identity *id, struct found *f)
{
	const struct found *hit;

	hit = domain_in(n, &n->lxc_run, &n->lxc_etc, "n", id->container_name);
	if (hit == NULL)
		hit = domain_in(n, &n->lxc_run, &n->lxc_etc, "m",
		    id->container_name);
	if (hit != NULL)
		PUT(f->vm_uuid, hit->vm_uuid, strlen(hit->vm_uuid));
	f->complete = hit != NULL;
}

/* The one domain whose machine's name begins with a name cut short. */
struct cut {
	const char *name;
	size_t len;
	const struct found *hit;
	int many;
};

static void
cut_one(const char *key, void *val, void *arg)
{
	struct cut *c = arg;
	const struct found *f = val;

	if ((key[0] != 'n' && key[0] != 'm') ||
	    strncmp(key + 2, c->name, c->len) != 0)
		return;
	if (c->hit != NULL && strcmp(c->hit->vm_uuid, f->vm_uuid) != 0)
		c->many = 1;
	c->hit = f;
}

static const struct found *
domain_cut(struct kp_names *n, const char *name)
{
	struct cut c = { name, strlen(name), NULL, 0 };

	kp_map_each(index_fresh(n, &n->libvirt_run), cut_one, &c);
	if (c.hit == NULL)
		kp_map_each(index_fresh(n, &n->libvirt_etc), cut_one, &c);
	return c.many ? NULL : c.hit;
}

/*
 * A libvirt machine scope's domain name gives its uuid, which QEMU has as
 * -uuid; a uuid alone gives the name.  The scope has the name as the
 * machine's, which leaves out what a host name may not hold and is cut at
 * 64 bytes, the "qemu-<N>-" before it included: where the name is not a
 * domain's, it is looked for as a machine's, and then, if the machine's
 * name may have been cut, as the beginning of exactly one domain's.
 */
static void
vm_names(struct kp_names *n, const struct kp_identity *id, struct found *f)
{
	const struct found *hit;
	char uuid[sizeof(id->vm_id)];
	size_t i;

	if (id->vm_from_scope) {
		if ((hit = domain_get(n, "n", id->vm_name)) == NULL &&
		    (hit = domain_get(n, "m", id->vm_name)) == NULL &&
		    id->vm_machine_len >= 63)
			hit = domain_cut(n, id->vm_name);
	} else {
		for (i = 0; id->vm_id[i]; i++)
			uuid[i] = (char)tolower((unsigned char)id->vm_id[i]);
		uuid[i] = '\0';
		hit = domain_get(n, "u", uuid);
	}
	if (hit != NULL) {
		PUT(f->vm_name, hit->vm_name, strlen(hit->vm_name));
		PUT(f->vm_uuid, hit->vm_uuid, strlen(hit->vm_uuid));
	}
	f->complete = hit != NULL;
}

/* Each source looked at, at most once a scan: a change counts. */
static void
look_at_sources(struct kp_names *n)
{
	size_t i;

	index_fresh(n, &n->containers_log);
	index_fresh(n, &n->pods_log);
	index_fresh(n, &n->libvirt_run);
	index_fresh(n, &n->libvirt_etc);
	index_fresh(n, &n->lxc_run);
	index_fresh(n, &n->lxc_etc);
	for (i = 0; i < n->npodman; i++)
		index_fresh(n, &n->podman[i]);
	for (i = 0; i < n->ndocker; i++)
		source_changed(n, &n->docker[i]);
}

/*
 * The names of an id, looked up now if they never were, or if they were
 * not all there and a source has changed since.
 */
static const struct found *
lookup(struct kp_names *n, const char *kind, const char *idtext,
    const struct kp_identity *id,
    void (*find)(struct kp_names *, const struct kp_identity *, struct found *))
{
	struct found *f;
	char *key = kp_asprintf("%s:%s", kind, idtext);

	if ((f = kp_map_get(n->cache, key)) == NULL) {
		f = kp_calloc(1, sizeof(*f));
		kp_map_put(n->cache, key, f);
		f->changes = n->changes - 1;
	}
	free(key);
	f->used = n->tick;
	if (f->complete)
		return f;
	look_at_sources(n);
	if (f->changes != n->changes) {
		memset(f, 0, offsetof(struct found, changes));
		find(n, id, f);
		f->changes = n->changes;
	}
	return f;
}

static void
fill(char *field, size_t size, const char *name)
{
	if (!field[0])
		put(field, size, name, strlen(name));
}

#define FILL(field, name) fill(field, sizeof(field), name)

/* Whether a VM's names may come from libvirt. */
static int
vm_wants_names(const struct kp_identity *id)
{
	if (id->vm_from_scope)
		return id->vm_name[0] != '\0';
	return !id->vm_name[0] && kp_uuid_ok(id->vm_id, strlen(id->vm_id));
}

/*
 * Fills in the names of a process's container, pod and VM; a libvirt
 * machine's processes take its uuid for vm_id.  1 if some may come later.
 */
int
kp_names_fill(struct kp_names *n, struct kp_identity *id)
{
	const struct found *f;
	int pending = 0;

	if (n == NULL)
		return 0;
	/* A machine's container has its name from its scope already. */
	if ((id->container_id[0] && !id->container_name[0]) ||
	    (id->pod_id[0] && !id->pod_name[0])) {
		f = id->container_id[0] ?
		    lookup(n, "c", id->container_id, id, container_names) :
		    lookup(n, "p", id->pod_id, id, pod_names);
		FILL(id->container_name, f->container_name);
		if (!id->pod_name[0] && f->pod_name[0]) {
			FILL(id->pod_name, f->pod_name);
			FILL(id->pod_namespace, f->pod_namespace);
		}
		pending |= !f->complete;
	}
	if (strcmp(id->runtime, "libvirt-lxc") == 0 &&
	    !kp_uuid_ok(id->container_id, strlen(id->container_id))) {
		f = lookup(n, "l", id->container_id, id, lxc_names);
		if (f->vm_uuid[0])
			put(id->container_id, sizeof(id->container_id),
			    f->vm_uuid, strlen(f->vm_uuid));
		pending |= !f->complete;
	}
	if (vm_wants_names(id)) {
		f = lookup(n, "v", id->vm_id, id, vm_names);
		FILL(id->vm_name, f->vm_name);
		if (id->vm_from_scope && f->vm_uuid[0]) {
			/* The domain's own name, not its machine's. */
			put(id->vm_id, sizeof(id->vm_id), f->vm_uuid,
			    strlen(f->vm_uuid));
			put(id->vm_name, sizeof(id->vm_name), f->vm_name,
			    strlen(f->vm_name));
			id->vm_from_scope = 0;
		}
		pending |= !f->complete;
	}
	return pending;
}

static int
unused(void *val, void *arg)
{
	return ((struct found *)val)->used + 1 < *(unsigned *)arg;
}

/* A new scan: sources may be looked at again; the cache stays bounded. */
void
kp_names_tick(struct kp_names *n)
{
	if (n == NULL)
		return;
	n->tick++;
	if (kp_map_count(n->cache) > NAMES_MAX)
		kp_map_sweep(n->cache, unused, &n->tick, free);
}

void
kp_names_free(struct kp_names *n)
{
	size_t i;

	if (n == NULL)
		return;
	index_free(&n->containers_log);
	index_free(&n->pods_log);
	index_free(&n->libvirt_run);
	index_free(&n->libvirt_etc);
	index_free(&n->lxc_run);
	index_free(&n->lxc_etc);
	for (i = 0; i < n->npodman; i++)
		index_free(&n->podman[i]);
	free(n->podman);
	for (i = 0; i < n->ndocker; i++)
		free(n->docker[i].path);
	free(n->docker);
	kp_map_free(n->users, free);
	kp_map_free(n->cache, free);
	free(n->root);
	free(n);
}
