/*
 * Cgroup CPU counters, the truth for groups (proc-cputime(1), "Exit
 * accounting").  Each scan reads the counter of every cgroup that holds a
 * process being followed, and of its ancestors, in the one hierarchy that
 * accounts CPU time.  What a cgroup's counter grew by, less its children's
 * and less what its processes' records and their detail (a reaping
 * parent's, exit records) give it, is its residue: CPU time of processes
 * that ended unseen.  The detail never takes more than the counter leaves
 * it; what it could not take goes to its ancestors' leftovers of the same
 * interval, nearest first, and what they cannot hold is offered once more,
 * the next interval, to what the growth then leaves unused, since the stat
 * files and the counters are read moments apart and a busy cgroup's counter
 * may show a child's end a scan late.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

struct kp_cgcpu {
	char *dir;		/* where the hierarchy is mounted */
	int v2;			/* cpu.stat usage_usec; else cpuacct.usage */
	int root_counted;	/* the root's counter holds tasks alone */
	struct kp_map *nodes;	/* struct kp_cgnode by path */
	unsigned gen;		/* reads taken */
	struct kp_cgnode **list;	/* read at the latest, deepest first */
	size_t nlist, listcap;
};

static int
exists(const char *dir, const char *file)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    (int)sizeof(path))
		return 0;
	return access(path, F_OK) == 0;
}

/*
 * Pure cgroup v2 at root; else a v1 cpuacct hierarchy (with cpu or alone,
 * as on hybrid hosts, where it is the controller that accounts CPU time);
 * else the v2 tree of a hybrid host, root/unified.  NULL for no counters.
 */
struct kp_cgcpu *
kp_cgcpu_open(const char *root)
{
	static const struct { const char *sub, *probe; int v2; } layouts[] = {
		{ "", "cgroup.controllers", 1 },
		{ "/cpuacct", "cpuacct.usage", 0 },
		{ "/cpu,cpuacct", "cpuacct.usage", 0 },
		{ "/unified", "cgroup.controllers", 1 },
	};
	struct kp_cgcpu *c;
	char *dir;
	size_t i;

	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		dir = kp_asprintf("%s%s", root, layouts[i].sub);
		if (exists(dir, layouts[i].probe))
			break;
		free(dir);
	}
	if (i == sizeof(layouts) / sizeof(layouts[0]))
		return NULL;
	c = kp_calloc(1, sizeof(*c));
	c->dir = dir;
	c->v2 = layouts[i].v2;
	/*
	 * The kernel's own v2 root has no cgroup.type, and its cpu.stat is
	 * the node's, interrupts and steal included; a cgroup namespace's
	 * root is a cgroup like any other.  A v1 root counts tasks alone.
	 */
	c->root_counted = !c->v2 || exists(dir, "cgroup.type");
	c->nodes = kp_map_new();
	return c;
}

static void
node_free(void *p)
{
	struct kp_cgnode *n = p;

	free(n->path);
	free(n);
}

void
kp_cgcpu_free(struct kp_cgcpu *c)
{
	if (c == NULL)
		return;
	kp_map_free(c->nodes, node_free);
	free(c->list);
	free(c->dir);
	free(c);
}

/* A path as the kernel writes it, absolute, with no ".." to climb out. */
static int
path_ok(const char *path)
{
	const char *p;

	if (path[0] != '/')
		return 0;
	for (p = path; (p = strstr(p, "/..")) != NULL; p += 3)
		if (p[3] == '/' || p[3] == '\0')
			return 0;
	return 1;
}

/* The path's node, made with its ancestors if new; NULL for a bad path. */
struct kp_cgnode *
kp_cgcpu_node_at(struct kp_cgcpu *c, const char *path)
{
	struct kp_cgnode *n;
	char *key, *up;
	size_t len = strlen(path);

	while (len > 1 && path[len - 1] == '/')
		len--;
	key = kp_strndup(path, len);
	n = path_ok(key) ? kp_map_get(c->nodes, key) : NULL;
	if (n != NULL || !path_ok(key)) {
		free(key);
		return n;
	}
	n = kp_calloc(1, sizeof(*n));
	n->path = key;
	n->counted = len > 1 || c->root_counted;
	if (len > 1) {
		up = kp_strndup(key, (size_t)(strrchr(key, '/') - key));
		n->parent = kp_cgcpu_node_at(c, *up ? up : "/");
		n->depth = n->parent->depth + 1;
		free(up);
	}
	kp_identity_from_path(n->path, &n->id);
	kp_identity_classify(&n->id, 0);
	kp_map_put(c->nodes, n->path, n);
	return n;
}

/* Whether the controllers ctl[0..n) of a /proc/PID/cgroup line are c's. */
static int
is_hierarchy(const struct kp_cgcpu *c, const char *ctl, size_t n)
{
	const char *p, *end = ctl + n;
	size_t len;

	if (c->v2)
		return n == 0;
	for (p = ctl; p < end; p += len + 1) {
		len = strcspn(p, ",:");
		if (len == strlen("cpuacct") && strncmp(p, "cpuacct", len) == 0)
			return 1;
	}
	return 0;
}

/*
 * A process's node, from its /proc/PID/cgroup text: the path of the line
 * of the hierarchy that accounts CPU time.  NULL if it has none.
 */
struct kp_cgnode *
kp_cgcpu_node(struct kp_cgcpu *c, const char *text)
{
	const char *line, *ctl, *path;
	char buf[512];
	size_t n, plen;

	for (line = text; *line; line += n + (line[n] == '\n')) {
		n = strcspn(line, "\n");
		if ((ctl = memchr(line, ':', n)) == NULL ||
		    (path = memchr(ctl + 1, ':', n - (size_t)(ctl + 1 - line)))
		    == NULL || !is_hierarchy(c, ctl + 1,
		    (size_t)(path - ctl - 1)))
			continue;
		path++;
		if ((plen = n - (size_t)(path - line)) >= sizeof(buf))
			return NULL;
		memcpy(buf, path, plen);
		buf[plen] = '\0';
		return kp_cgcpu_node_at(c, buf);
	}
	return NULL;
}

/* The node and its ancestors are read at the next kp_cgcpu_read. */
void
kp_cgcpu_want(struct kp_cgcpu *c, struct kp_cgnode *n)
{
	for (; n != NULL && n->gen != c->gen + 1; n = n->parent)
		n->gen = c->gen + 1;
}

/* cpu.stat's "usage_usec N" line, in microseconds; 0, or -1 if none. */
int
kp_parse_cpu_stat_usage(const char *buf, int64_t *usage_us)
{
	const char *line;
	uint64_t v;
	size_t n;

	for (line = buf; *line; line += n + (line[n] == '\n')) {
		n = strcspn(line, "\n");
		if (strncmp(line, "usage_usec ", 11) == 0) {
			if (kp_parse_u64(line + 11, INT64_MAX, &v) < 0)
				return -1;
			*usage_us = (int64_t)v;
			return 0;
		}
	}
	return -1;
}

/* cpuacct.usage, nanoseconds, as microseconds; 0, or -1 if it is not one. */
int
kp_parse_cpuacct_usage(const char *buf, int64_t *usage_us)
{
	uint64_t v;

	if (kp_parse_u64(buf, UINT64_MAX, &v) < 0)
		return -1;
	*usage_us = (int64_t)(v / 1000);
	return 0;
}

/* The counter of n, now, in microseconds: 0, or -1 where it has none. */
int
kp_cgcpu_usage(const struct kp_cgcpu *c, const struct kp_cgnode *n,
    int64_t *usage_us)
{
	char path[PATH_MAX], buf[1024];

	if (snprintf(path, sizeof(path), "%s%s/%s", c->dir,
	    strcmp(n->path, "/") == 0 ? "" : n->path,
	    c->v2 ? "cpu.stat" : "cpuacct.usage") >= (int)sizeof(path) ||
	    kp_read_file(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return -1;
	return c->v2 ? kp_parse_cpu_stat_usage(buf, usage_us) :
	    kp_parse_cpuacct_usage(buf, usage_us);
}

/*
 * A counter that went back belongs to a cgroup removed and made again
 * under the same path: all of it is new.
 */
static void
read_node(const struct kp_cgcpu *c, struct kp_cgnode *n)
{
	int64_t now_us;

	n->have_delta = 0;
	n->procs_us = n->detail_us = n->taken_us = 0;
	n->procs_given_us = n->procs_taken_us = 0;
	n->excl_us = n->kept_us = n->residue_us = n->excess_us = 0;
	n->held_us = n->given_us = n->held_taken_us = 0;
	n->below_us = n->below_given_us = n->below_taken_us = 0;
	if (!n->counted || kp_cgcpu_usage(c, n, &now_us) < 0) {
		if (!n->counted || !n->has_final) {
			n->have_last = 0;
			return;
		}
		now_us = n->final_us;	/* gone since: as it was last known */
	}
	n->has_final = 0;
	n->have_delta = n->have_last;
	n->delta_us = now_us >= n->last_us ? now_us - n->last_us : now_us;
	n->last_us = now_us;
	n->have_last = 1;
}

static int
unwanted(void *val, void *arg)
{
	return ((struct kp_cgnode *)val)->gen != *(unsigned *)arg;
}

static void
list_add(const char *key, void *val, void *arg)
{
	struct kp_cgcpu *c = arg;

	(void)key;
	c->list[c->nlist++] = val;
}

/* Deepest first, so that a cgroup is read before its parent. */
static int
by_depth(const void *a, const void *b)
{
	const struct kp_cgnode *m = *(struct kp_cgnode *const *)a;
	const struct kp_cgnode *n = *(struct kp_cgnode *const *)b;

	if (m->depth != n->depth)
		return n->depth - m->depth;
	return strcmp(m->path, n->path);
}

static void
read_one_known(const char *key, void *val, void *arg)
{
	struct kp_cgcpu *c = arg;
	struct kp_cgnode *n = val;

	(void)key;
	read_node(c, n);
	n->read_gen = c->gen + 1;
}

/*
 * Reads, ahead of the next kp_cgcpu_read, the counter of every cgroup
 * known now: those the last read kept, and any met since.  A scan reads
 * them right after the node's line, before it learns which cgroups its
 * new processes are in; the read then takes the counters of those alone,
 * and forgets the cgroups no longer wanted, as if it had read them all.
 */
void
kp_cgcpu_read_known(struct kp_cgcpu *c)
{
	kp_map_each(c->nodes, read_one_known, c);
}

/*
 * The growth of the hierarchy's root counter between its last two reads,
 * where it counts tasks alone (v1's cpuacct root: every task's CPU time
 * in the scheduler's nanoseconds): 0, or -1 where there is none, as at a
 * v2 kernel root, whose cpu.stat is /proc/stat's own clock ticks.
 */
int
kp_cgcpu_root_delta(const struct kp_cgcpu *c, int64_t *delta_us)
{
	const struct kp_cgnode *n;

	if (c == NULL || (n = kp_map_get(c->nodes, "/")) == NULL ||
	    !n->counted || !n->have_delta)
		return -1;
	*delta_us = n->delta_us;
	return 0;
}

/*
 * Reads the counters wanted since the last read that kp_cgcpu_read_known
 * has not read already, and forgets the others.
 */
void
kp_cgcpu_read(struct kp_cgcpu *c)
{
	size_t i;

	c->gen++;
	kp_map_sweep(c->nodes, unwanted, &c->gen, node_free);
	if (kp_map_count(c->nodes) > c->listcap) {
		c->listcap = kp_map_count(c->nodes) * 2;
		c->list = kp_reallocarray(c->list, c->listcap,
		    sizeof(*c->list));
	}
	c->nlist = 0;
	kp_map_each(c->nodes, list_add, c);
	if (c->nlist > 1)
		qsort(c->list, c->nlist, sizeof(*c->list), by_depth);
	for (i = 0; i < c->nlist; i++)
		if (c->list[i]->read_gen != c->gen)
			read_node(c, c->list[i]);
}

/* The nearest of n and its ancestors whose counter moved by a known amount. */
static struct kp_cgnode *
base(struct kp_cgnode *n)
{
	while (n != NULL && !n->have_delta)
		n = n->parent;
	return n;
}

/* A process's CPU time in the interval, from its records (procs) or detail. */
void
kp_cgcpu_charge(struct kp_cgnode *n, int64_t procs_us, int64_t detail_us)
{
	if ((n = base(n)) == NULL)
		return;
	n->procs_us += procs_us;
	n->detail_us += detail_us;
}

/* Detail cut the interval before, offered to n's counter once more. */
void
kp_cgcpu_charge_held(struct kp_cgnode *n, int64_t held_us)
{
	if ((n = base(n)) != NULL)
		n->held_us += held_us;
}

/*
 * The cgroup that n's cut detail is offered to: its nearest ancestor whose
 * counter moved by a known amount, but never the hierarchy's root, whose
 * leftover is the time of every process of the host outside a cgroup of
 * its own (and which cgroup v2 does not count at all): that would name it
 * by a guess.  NULL at the top.
 */
static struct kp_cgnode *
above(const struct kp_cgnode *n)
{
	struct kp_cgnode *a = base(n->parent);

	return a != NULL && a->parent != NULL ? a : NULL;
}

/*
 * One counted cgroup's own time.  What its processes' records give it,
 * the live ones' clock ticks and the last slices of those that ended,
 * comes first, with what they were cut before, as much as the counter's
 * growth holds; this interval's detail has what is left, the detail that
 * its descendants' counters cut this interval what is still left, the
 * detail cut the interval before what is left then, and the rest is its
 * residue.  The detail never takes more than the counter leaves it in
 * the interval, not even by clock ticks' rounding: what the records of an
 * interval give a cgroup beyond its counter, they give the node beyond
 * its cpu record, which dilutes every other workload's share of the
 * energy (proc-cputime(1), "Exit accounting").  What is cut is offered to
 * its ancestors, nearest first: a process filed under a cgroup below the
 * one it ran in, as a runtime's under its own while its job ran in a
 * cgroup removed since, shows its time in that cgroup's ancestor.  What
 * the processes' records pass the counter by, ticks rounding ahead of the
 * scheduler's nanoseconds, is cut from them and owed: it is theirs in the
 * next interval whose growth passes their ticks, as ticks that ran ahead
 * fall behind (proc-cputime(1), "Exit accounting").  An interval with no
 * process record of the cgroup keeps the debt.
 */
static void
settle_node(struct kp_cgnode *n)
{
	int64_t want_us, raw_us, room_us;
	struct kp_cgnode *up;

	want_us = n->procs_us + n->carry_us;
	room_us = n->excl_us > 0 ? n->excl_us : 0;
	if (n->procs_us > 0) {
		n->procs_given_us = want_us < room_us ? want_us : room_us;
		n->carry_us = want_us - n->procs_given_us;
	}
	raw_us = room_us - n->procs_given_us;
	n->kept_us = raw_us < n->detail_us ? raw_us : n->detail_us;
	room_us = raw_us - n->kept_us;
	n->below_given_us = n->below_us < room_us ? n->below_us : room_us;
	room_us -= n->below_given_us;
	n->given_us = n->held_us < room_us ? n->held_us : room_us;
	n->residue_us = room_us - n->given_us;
	/* The cut that no ancestor holds is added as the detail is taken. */
	n->excess_us = n->carry_us;
	if ((up = above(n)) != NULL)
		up->below_us += n->detail_us - n->kept_us + n->below_us -
		    n->below_given_us;
}

/*
 * Each counted cgroup's own time is its counter's growth less that of its
 * children counted apart, settled as settle_node says.
 */
void
kp_cgcpu_settle(struct kp_cgcpu *c)
{
	struct kp_cgnode *n, *b;
	size_t i;

	for (i = 0; i < c->nlist; i++) {
		n = c->list[i];
		if (n->have_delta) {
			n->excl_us += n->delta_us;
			if ((b = base(n->parent)) != NULL)
				b->excl_us -= n->delta_us;
		}
	}
	for (i = 0; i < c->nlist; i++)
		if (c->list[i]->have_delta)
			settle_node(c->list[i]);
}

/*
 * us of a whole of whole_us, taken_us of it handed out before: its part of
 * part_us, in proportion, so that the parts add up to exactly part_us.
 */
static int64_t
share_us(int64_t *taken_us, int64_t part_us, int64_t whole_us, int64_t us)
{
	__int128 before, after;

	before = (__int128)*taken_us * part_us / whole_us;
	*taken_us += us;
	after = (__int128)*taken_us * part_us / whole_us;
	return (int64_t)(after - before);
}

/*
 * The part of a detail of detail_us that the cgroup's counter leaves it:
 * each share is cut in proportion, and the shares of a cgroup add up to
 * exactly what it kept.  Uncounted: all of it.
 */
int64_t
kp_cgcpu_take(struct kp_cgnode *n, int64_t detail_us)
{
	if ((n = base(n)) == NULL || n->detail_us == 0)
		return detail_us;
	return share_us(&n->taken_us, n->kept_us, n->detail_us, detail_us);
}

/*
 * The part of the cgroup's proc records that a process's ticks_us gets:
 * what the counter leaves them, in proportion.  Uncounted: all of it.
 */
int64_t
kp_cgcpu_take_procs(struct kp_cgnode *n, int64_t ticks_us)
{
	if ((n = base(n)) == NULL || n->procs_us == 0)
		return ticks_us;
	return share_us(&n->procs_taken_us, n->procs_given_us, n->procs_us,
	    ticks_us);
}

/* The same for a detail cut the interval before: what it is given now. */
int64_t
kp_cgcpu_take_held(struct kp_cgnode *n, int64_t held_us)
{
	if ((n = base(n)) == NULL || n->held_us == 0)
		return held_us;
	return share_us(&n->held_taken_us, n->given_us, n->held_us, held_us);
}

/* The cgroup above n that is offered what n's counter cut, or NULL. */
struct kp_cgnode *
kp_cgcpu_above(struct kp_cgnode *n)
{
	return (n = base(n)) != NULL ? above(n) : NULL;
}

/*
 * Of cut_us that a cgroup below a cut of one detail, what a's leftover
 * gives it: each share in proportion, adding up to exactly what a gave.
 */
int64_t
kp_cgcpu_take_cut(struct kp_cgnode *a, int64_t cut_us)
{
	if (a->below_us == 0)
		return 0;
	return share_us(&a->below_taken_us, a->below_given_us, a->below_us,
	    cut_us);
}

/* Detail n's counter cut that no ancestor held: n's excess. */
void
kp_cgcpu_add_excess(struct kp_cgnode *n, int64_t cut_us)
{
	if ((n = base(n)) != NULL)
		n->excess_us += cut_us;
}

/* Visits the cgroups read at the latest scan, deepest first. */
void
kp_cgcpu_each(struct kp_cgcpu *c,
    void (*fn)(struct kp_cgnode *n, void *arg), void *arg)
{
	size_t i;

	for (i = 0; i < c->nlist; i++)
		fn(c->list[i], arg);
}

/* [[path, usage_us, carry_us], ...] of the counters read at the latest scan. */
json_t *
kp_cgcpu_save(const struct kp_cgcpu *c)
{
	json_t *rows = json_array();
	size_t i;

	for (i = 0; i < c->nlist; i++)
		if (c->list[i]->have_last)
			json_array_append_new(rows, json_pack("[o,I,I]",
			    kp_json_text(c->list[i]->path),
			    (json_int_t)c->list[i]->last_us,
			    (json_int_t)c->list[i]->carry_us));
	return rows;
}

/* The counters of a saved scan, as if just read; bad rows are skipped. */
void
kp_cgcpu_load(struct kp_cgcpu *c, json_t *rows)
{
	json_int_t usage_us, carry_us;
	struct kp_cgnode *n;
	const char *path;
	json_t *row;
	size_t i;

	json_array_foreach(rows, i, row) {
		if (json_unpack(row, "[sII]", &path, &usage_us, &carry_us) < 0 ||
		    usage_us < 0 || carry_us < 0 ||
		    (n = kp_cgcpu_node_at(c, path)) == NULL || !n->counted)
			continue;
		n->last_us = usage_us;
		n->carry_us = carry_us;
		n->have_last = 1;
	}
}

/* The cgroup's directory: the mount, then its path; "/" is the mount. */
static char *
node_dir(const struct kp_cgcpu *c, const struct kp_cgnode *n)
{
	return kp_asprintf("%s%s", c->dir, strcmp(n->path, "/") == 0 ? "" :
	    n->path);
}

/*
 * A new cgroup called name below the one that text, a /proc/PID/cgroup,
 * puts its process in: a command's tree, counted apart from the rest.
 * NULL, errno set, where it cannot be made (no such line, no right to).
 */
struct kp_cgnode *
kp_cgcpu_make(struct kp_cgcpu *c, const char *text, const char *name)
{
	struct kp_cgnode *up = kp_cgcpu_node(c, text), *n = NULL;
	char *path, *dir;

	if (up == NULL || strchr(name, '/') != NULL) {
		errno = ENOENT;
		return NULL;
	}
	path = kp_asprintf("%s/%s", strcmp(up->path, "/") == 0 ? "" :
	    up->path, name);
	dir = kp_asprintf("%s%s", c->dir, path);
	if (mkdir(dir, 0755) == 0)
		n = kp_cgcpu_node_at(c, path);
	free(dir);
	free(path);
	return n;
}

/* Moves process pid into n, as cgroups(7) says: 0, or -1 and errno. */
int
kp_cgcpu_move(const struct kp_cgcpu *c, const struct kp_cgnode *n, pid_t pid)
{
	char *dir = node_dir(c, n), *path = kp_asprintf("%s/cgroup.procs", dir);
	int fd, ok;

	free(dir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return -1;
	ok = dprintf(fd, "%ld\n", (long)pid) > 0;
	/* The kernel says a refused move at write or at close. */
	if (close(fd) < 0)
		ok = 0;
	return ok ? 0 : -1;
}

/*
 * n's counter as another reader last knew it: rapl-read's command record
 * holds its command's cgroup's at the command's exit, and rapl-read
 * removes that cgroup as it ends, which may come before the next read
 * (rapl-read(1), "Measuring a command").  The next read that finds n gone
 * takes it.  A cgroup that rapl-read made was empty then: one not read
 * before counts from 0.
 */
void
kp_cgcpu_final(struct kp_cgnode *n, int64_t usage_us)
{
	n->final_us = usage_us;
	n->has_final = 1;
	if (!n->have_last) {
		n->have_last = 1;
		n->last_us = 0;
	}
}

/* When n's directory was made, as file times go: its ctime; or -1. */
static int64_t
made_ns(const struct kp_cgcpu *c, const struct kp_cgnode *n)
{
	char *dir = node_dir(c, n);
	struct stat st;
	int r = stat(dir, &st);

	free(dir);
	if (r < 0)
		return -1;
	return (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
}

/*
 * A process of the cgroup of text ended, as the process events tell: a
 * cgroup no scan has read, as a job's or a short container's made since
 * the last, may be removed once its last process is reaped, before the
 * next scan.  Its counter is read now, and again at each exit in it, and
 * the next read that finds it gone takes the last reading (proc-cputime(1),
 * "Exit accounting").  It counts from 0 only if it was made after the scan
 * that began at since_ns (kp_file_time_ns, the clock of its ctime): an
 * older one holds time of earlier intervals, and is left alone.
 */
void
kp_cgcpu_read_ended(struct kp_cgcpu *c, const char *text, int64_t since_ns)
{
	struct kp_cgnode *n;
	int64_t usage_us;

	if (c == NULL || (n = kp_cgcpu_node(c, text)) == NULL ||
	    n->parent == NULL || (n->have_last && !n->has_final) ||
	    (!n->has_final && made_ns(c, n) < since_ns) ||
	    kp_cgcpu_usage(c, n, &usage_us) < 0)
		return;
	kp_cgcpu_final(n, usage_us);
	kp_cgcpu_want(c, n);
}

/* Removes n, made by kp_cgcpu_make: 0, or -1 and errno (EBUSY: in use). */
int
kp_cgcpu_remove(const struct kp_cgcpu *c, const struct kp_cgnode *n)
{
	char *dir = node_dir(c, n);
	int r = rmdir(dir);

	free(dir);
	return r;
}
