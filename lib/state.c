/*
 * --state FILE: what one run leaves for the next.  The file is JSON
 * {"kind":..., "version":1, "boot_id":..., "data":...}; it is locked
 * against concurrent runs (FILE.lock, waited for KP_LOCK_WAIT seconds at
 * most), and it is trusted only if it was written by the same command
 * during the same boot.  It is replaced in two steps (proc-cputime(1),
 * "Guarantees"): prepared, the new state written and synced in a temporary
 * file .FILE.XXXXXX of the same directory, before the stage writes the
 * records that the new state accounts for; committed, renamed into place
 * and the directory synced, after them.  A crash between the two repeats
 * that interval in the next run, which readers report as a replay
 * (kp-records(5)); a failure to prepare, as on a full disk, writes nothing
 * and advances nothing.  Temporaries a crash left are removed by the next
 * run that holds the lock.
 */
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kp.h"

#define STATE_VERSION 1
#define LOCK_WAIT_S 10		/* unless KP_LOCK_WAIT says otherwise */

/*
 * The stages' paths go through the same few objects (the data, its levels)
 * many times: each such object is read once, its members' offsets kept,
 * the last where a name is given twice, as in a tree.  An object of more
 * members than fit here is read again each time.
 */
#define KNOWN_MAX 64

struct known {
	off_t in, at;		/* the object's offset, the member's */
	char *name;
};

struct kp_state {
	char *path;
	char *dir;		/* path's directory */
	char *tmp;		/* prepared, not yet committed; or NULL */
	int64_t committed_us;	/* CLOCK_MONOTONIC of the last commit; -1 */
	int lockfd;
	char boot_id[64];
	char kind[32];
	int fd;			/* the file loaded, checked whole; or -1 */
	off_t data_off;		/* its data's offset in it */
	struct known known[KNOWN_MAX];
	size_t nknown;
	json_t *data;		/* kp_state_data's tree, made when asked */
	int rebooted;		/* data is from an earlier boot */
	int uncommitted;	/* an interval ended since the last commit */
};

/*
 * The boot id's line, cut at its newline: 0 if it is one, as the kernel
 * writes it (hex digits and '-'), -1 if not.  The state file stores it as
 * a JSON string, which any other bytes might not be.
 */
int
kp_parse_boot_id(char *buf)
{
	size_t n;

	buf[strcspn(buf, "\n")] = '\0';
	n = strspn(buf, "0123456789abcdef-");
	return n > 0 && buf[n] == '\0' ? 0 : -1;
}

/* The kernel's boot id, so that state from before a reboot is not trusted. */
static int
read_boot_id(const char *procdir, char *buf, size_t len)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/sys/kernel/random/boot_id", procdir);
	if (kp_read_file(AT_FDCWD, path, buf, len) < 0)
		return -1;
	if (kp_parse_boot_id(buf) < 0) {
		buf[0] = '\0';
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/*
 * The path is checked on what was opened, not before: a FIFO would hang a
 * read, and a directory or a device is no file that a run replaces.
 */
static void
regular_or_exit(int fd, const char *path)
{
	struct stat sb;

	if (fstat(fd, &sb) < 0)
		err(KP_EXIT_FAILURE, "%s", path);
	if (!S_ISREG(sb.st_mode))
		errx(KP_EXIT_FAILURE, "%s: not a regular file", path);
}

/* KP_LOCK_WAIT, in whole seconds from 0 to 3600; else LOCK_WAIT_S. */
static long
lock_wait_s(void)
{
	const char *v = getenv("KP_LOCK_WAIT");
	char *end;
	long s;

	if (v == NULL || *v == '\0')
		return LOCK_WAIT_S;
	s = strtol(v, &end, 10);
	if (*end != '\0' || s < 0 || s > 3600)
		errx(KP_EXIT_USAGE, "KP_LOCK_WAIT must be whole seconds from 0 "
		    "to 3600: '%s'", v);
	return s;
}

/*
 * Each stage keeps a state of its own (proc-cputime(1), "Guarantees"): one
 * file read and replaced by two would lose both.
 */
static void
other_stage(const struct kp_state *st, const char *other)
{
	errx(KP_EXIT_USAGE, "%s: the state file of %s, not of %s: each stage "
	    "needs a --state file of its own", st->path, other, st->kind);
}

/*
 * The lock file names the stage that holds it, so that a stage given
 * another's state file (the same --state to every stage of a pipeline)
 * says so at once instead of waiting for a lock that is never let go.
 */
static void
lock_name_owner(const struct kp_state *st, const char *lockpath)
{
	size_t n = strlen(st->kind);

	if (ftruncate(st->lockfd, 0) < 0 ||
	    pwrite(st->lockfd, st->kind, n, 0) != (ssize_t)n)
		warn("%s", lockpath);
}

/* The lock is held by another stage than this one: exit 2, saying so. */
static void
lock_check_owner(const struct kp_state *st)
{
	char owner[sizeof(st->kind)];
	ssize_t n;

	if ((n = pread(st->lockfd, owner, sizeof(owner) - 1, 0)) <= 0)
		return;
	owner[n] = '\0';
	if (strcmp(owner, st->kind) != 0)
		other_stage(st, owner);
}

/* The lock, waited for a bounded time: a stalled run never holds the next. */
static void
lock(struct kp_state *st, const char *lockpath)
{
	struct timespec step = { 0, 50 * 1000 * 1000 };
	int64_t deadline_us = kp_mono_us() + lock_wait_s() * 1000000;

	if (flock(st->lockfd, LOCK_EX | LOCK_NB) == 0) {
		lock_name_owner(st, lockpath);
		return;
	}
	if (errno != EWOULDBLOCK)
		err(KP_EXIT_FAILURE, "%s", lockpath);
	lock_check_owner(st);
	warnx("%s: another run holds the lock, waiting", st->path);
	while (flock(st->lockfd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK)
			err(KP_EXIT_FAILURE, "%s", lockpath);
		if (kp_mono_us() >= deadline_us)
			errx(KP_EXIT_FAILURE, "%s: the lock is still held after "
			    "%ld s (KP_LOCK_WAIT), giving up", st->path,
			    lock_wait_s());
		lock_check_owner(st);
		nanosleep(&step, NULL);
	}
	lock_name_owner(st, lockpath);
}

/*
 * Files that a run replaces whole, a state file or kp-fmt's textfile: the
 * same rules for both.  The file as it stands, opened to read: a symbolic
 * link in its place is not followed but said, with what the run does
 * instead, and replaced by the file; a FIFO, a device or a directory is
 * exit 1.  -1: nothing to read, errno ENOENT, ELOOP (said) or another.
 */
int
kp_replaced_open(const char *path, const char *instead)
{
	int fd, saved;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) < 0) {
		if ((saved = errno) == ELOOP)
			warnx("%s: a symbolic link, not followed; %s", path,
			    instead);
		errno = saved;
		return -1;
	}
	regular_or_exit(fd, path);
	return fd;
}

/* path's directory, and its file name, in new strings. */
static char *
dir_of(const char *path)
{
	char copy[PATH_MAX];

	snprintf(copy, sizeof(copy), "%s", path);
	return kp_strdup(dirname(copy));
}

static char *
base_of(const char *path)
{
	char copy[PATH_MAX];

	snprintf(copy, sizeof(copy), "%s", path);
	return kp_strdup(basename(copy));
}

/*
 * The name of a temporary that path is replaced from, for mkstemp(3):
 * DIR/.BASE.TAGXXXXXX, hidden, and not *.prom, which node_exporter reads.
 * tag tells whose temporaries they are.
 */
char *
kp_replaced_temp(const char *path, const char *tag)
{
	char *dir = dir_of(path), *base = base_of(path), *tmp;

	tmp = kp_asprintf("%s/.%s.%sXXXXXX", dir, base, tag);
	free(dir);
	free(base);
	return tmp;
}

/* Whether name is one of kp_replaced_temp's for base and tag. */
static int
is_temporary(const char *name, const char *base, const char *tag)
{
	size_t n = strlen(base), t = strlen(tag);

	if (name[0] != '.' || strncmp(name + 1, base, n) != 0 ||
	    name[n + 1] != '.' || strncmp(name + n + 2, tag, t) != 0)
		return 0;
	name += n + 2 + t;
	return strlen(name) == 6 && strspn(name, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == 6;
}

/*
 * The temporaries of path and tag that a run killed between writing and
 * renaming one left, last changed more than min_age_s ago: 0 for any,
 * where a lock keeps other runs out.
 */
void
kp_replaced_clean(const char *path, const char *tag, int64_t min_age_s)
{
	char *dir = dir_of(path), *base = base_of(path);
	struct dirent *de;
	struct stat sb;
	time_t now = time(NULL);
	DIR *d;

	if ((d = opendir(dir)) != NULL) {
		while ((de = readdir(d)) != NULL)
			if (is_temporary(de->d_name, base, tag) &&
			    fstatat(dirfd(d), de->d_name, &sb,
			    AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode) &&
			    now - sb.st_mtime >= min_age_s &&
			    unlinkat(dirfd(d), de->d_name, 0) < 0 &&
			    errno != ENOENT)
				warn("%s/%s", dir, de->d_name);
		closedir(d);
	}
	free(dir);
	free(base);
}

/* The members of the file's object that load decides by. */
struct top {
	json_t *kind, *version, *boot_id;
	off_t data_off;		/* -1: none */
};

/*
 * A member of the file's object, checked: kind, version and boot_id
 * taken, data's offset noted.  A member given twice counts the last
 * time, as in a jansson tree.
 */
static int
top_member(struct kp_js *s, const char *key, void *arg)
{
	struct top *t = arg;
	json_t **small = NULL;

	if (key == NULL)
		return -1;
	if (strcmp(key, "kind") == 0)
		small = &t->kind;
	else if (strcmp(key, "version") == 0)
		small = &t->version;
	else if (strcmp(key, "boot_id") == 0)
		small = &t->boot_id;
	if (small == NULL) {
		if (strcmp(key, "data") == 0)
			t->data_off = kp_js_tell(s);
		return kp_js_check(s);
	}
	json_decref(*small);
	return (*small = kp_js_value(s)) == NULL ? -1 : 0;
}

/*
 * The whole file checked, as jansson would load it, but a piece at a
 * time: a file broken anywhere, in its last entry too, is refused whole
 * before the stage takes any of it.  0, or -1.
 */
static int
read_top(int fd, struct top *t)
{
	struct kp_js s;
	int r;

	kp_js_init(&s, fd, 0);
	r = kp_js_each(&s, top_member, t) < 0 || kp_js_end(&s) < 0 ||
	    !json_is_string(t->kind) || !json_is_integer(t->version) ||
	    !json_is_string(t->boot_id) || t->data_off < 0 ? -1 : 0;
	kp_js_free(&s);
	return r;
}

static void
load(struct kp_state *st)
{
	struct top t = { NULL, NULL, NULL, -1 };
	const char *kind;
	json_int_t version;
	int fd;

	if ((fd = kp_replaced_open(st->path, "starting a new baseline in a "
	    "file in its place")) < 0) {
		if (errno != ENOENT && errno != ELOOP)
			warn("%s: not used", st->path);
		return;
	}
	if (read_top(fd, &t) < 0) {
		warnx("%s: corrupt state file, starting a new baseline",
		    st->path);
	} else if (strcmp(kind = json_string_value(t.kind), st->kind) != 0) {
		other_stage(st, kind);
	} else if ((version = json_integer_value(t.version)) !=
	    STATE_VERSION) {
		warnx("%s: state file of '%s' version %lld, not %s version %d; "
		    "starting a new baseline", st->path, kind,
		    (long long)version, st->kind, STATE_VERSION);
	} else {
		if (strcmp(json_string_value(t.boot_id), st->boot_id) != 0) {
			warnx("%s: written before a reboot, starting a new "
			    "baseline", st->path);
			st->rebooted = 1;
		}
		st->fd = fd;
		st->data_off = t.data_off;
		fd = -1;
	}
	if (fd >= 0)
		close(fd);
	json_decref(t.kind);
	json_decref(t.version);
	json_decref(t.boot_id);
}

struct kp_state *
kp_state_open(const char *path, const char *procdir, const char *kind)
{
	struct kp_state *st;
	char lockpath[PATH_MAX];

	st = kp_calloc(1, sizeof(*st));
	st->committed_us = -1;
	st->fd = -1;
	st->path = kp_strdup(path);
	st->dir = dir_of(path);
	snprintf(st->kind, sizeof(st->kind), "%s", kind);
	if (read_boot_id(procdir, st->boot_id, sizeof(st->boot_id)) < 0)
		st->boot_id[0] = '\0';	/* no boot id: trust only the kind */
	snprintf(lockpath, sizeof(lockpath), "%s.lock", path);
	st->lockfd = open(lockpath, O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC, 0644);
	if (st->lockfd < 0)
		err(KP_EXIT_FAILURE, "%s", lockpath);
	regular_or_exit(st->lockfd, lockpath);
	lock(st, lockpath);
	kp_replaced_clean(st->path, "", 0);
	load(st);
	return st;
}

/*
 * The data loaded is read where a path leads in it (member names,
 * NULL-ended; none: the data itself), from the file a value at a time: a
 * stage's large collections come entry by entry (kp_state_each), its
 * small parts as trees (kp_state_get), never the whole as one tree.
 */

/* Exit 1: the file, checked whole when opened, reads otherwise now. */
static void
changed(const struct kp_state *st)
{
	errx(KP_EXIT_FAILURE, "%s: the state file changed while it was read",
	    st->path);
}

/* Whether there is data: of this boot, or also of an earlier one. */
int
kp_state_has(const struct kp_state *st, int any_boot)
{
	return st != NULL && st->fd >= 0 && (any_boot || !st->rebooted);
}

struct find {
	struct kp_state *st;
	const char *name;
	off_t in, at;		/* at: -1 until name is found */
	int overflow;
};

static void
forget_known(struct kp_state *st, size_t from)
{
	while (st->nknown > from)
		free(st->known[--st->nknown].name);
}

/* A member of the object being read: its offset noted, its value skipped. */
static int
note_member(struct kp_js *s, const char *key, void *arg)
{
	struct find *f = arg;
	struct kp_state *st = f->st;
	off_t at = kp_js_tell(s);

	if (key == NULL)
		return -1;	/* an array: no members */
	if (strcmp(key, f->name) == 0)
		f->at = at;
	if (st->nknown < KNOWN_MAX) {
		st->known[st->nknown].in = f->in;
		st->known[st->nknown].at = at;
		st->known[st->nknown++].name = kp_strdup(key);
	} else {
		f->overflow = 1;
	}
	return kp_js_skip(s);
}

/* The offset of member name of the object at in, or -1: none. */
static off_t
member_at(struct kp_state *st, off_t in, const char *name)
{
	struct find f = { st, name, in, -1, 0 };
	size_t i, first = st->nknown;
	int known = 0;
	struct kp_js s;

	for (i = 0; i < st->nknown; i++)
		if (st->known[i].in == in) {
			known = 1;
			if (strcmp(st->known[i].name, name) == 0)
				f.at = st->known[i].at;
		}
	if (known)
		return f.at;
	kp_js_init(&s, st->fd, in);
	if (kp_js_each(&s, note_member, &f) < 0 || f.overflow)
		forget_known(st, first);
	kp_js_free(&s);
	return f.at;
}

/* The offset of path's value, or -1: none. */
static off_t
path_at(struct kp_state *st, const char *const *path)
{
	off_t at = st->fd >= 0 ? st->data_off : -1;

	for (; *path != NULL && at >= 0; path++)
		at = member_at(st, at, *path);
	return at;
}

/* The first byte of the value at: '{' an object, '[' an array; 0: none. */
static int
opens_at(struct kp_state *st, off_t at)
{
	char c = 0;

	if (at >= 0 && pread(st->fd, &c, 1, at) != 1)
		changed(st);
	return c;
}

/* The same of path's value. */
int
kp_state_opens(struct kp_state *st, const char *const *path)
{
	return opens_at(st, path_at(st, path));
}

/* path's value as a tree (new), or NULL where there is none. */
json_t *
kp_state_get(struct kp_state *st, const char *const *path)
{
	off_t at = path_at(st, path);
	struct kp_js s;
	json_t *v;

	if (at < 0)
		return NULL;
	kp_js_init(&s, st->fd, at);
	if ((v = kp_js_value(&s)) == NULL)
		changed(st);
	kp_js_free(&s);
	return v;
}

struct each {
	struct kp_state *st;
	kp_state_entry *fn;
	void *arg;
};

static int
each_entry(struct kp_js *s, const char *key, void *arg)
{
	struct each *e = arg;
	json_t *v;

	if ((v = kp_js_value(s)) == NULL)
		changed(e->st);
	e->fn(key, v, e->arg);
	json_decref(v);
	return 0;
}

/*
 * fn given each member (key) or element (key NULL) of path's object or
 * array, alone and borrowed: the stage's tables and one entry, no more,
 * in memory (kp-attribute(1), Memory).  -1 where there is none.
 */
int
kp_state_each(struct kp_state *st, const char *const *path,
    kp_state_entry *fn, void *arg)
{
	struct each e = { st, fn, arg };
	struct kp_js s;
	off_t at = path_at(st, path);
	int c = opens_at(st, at);

	if (c != '{' && c != '[')
		return -1;
	kp_js_init(&s, st->fd, at);
	if (kp_js_each(&s, each_entry, &e) < 0)
		changed(st);
	kp_js_free(&s);
	return 0;
}

/*
 * The previous run's data as one tree, if it ran during this boot;
 * borrowed: for the stages whose state is small.
 */
json_t *
kp_state_data(struct kp_state *st)
{
	return st->rebooted ? NULL : kp_state_data_any_boot(st);
}

/* The same, also from before a reboot: for totals, not for baselines. */
json_t *
kp_state_data_any_boot(struct kp_state *st)
{
	static const char *const whole[] = { NULL };

	if (st->data == NULL && st->fd >= 0)
		st->data = kp_state_get(st, whole);
	return st->data;
}

/*
 * The stage has taken from the data what it needs: the file is let go,
 * and a tree of it, many times the file, so that it never sits beside an
 * interval's memory (kp-attribute(1), Memory).  Nothing is left to read.
 */
void
kp_state_loaded(struct kp_state *st)
{
	if (st == NULL)
		return;
	json_decref(st->data);
	st->data = NULL;
	forget_known(st, 0);
	if (st->fd >= 0)
		close(st->fd);
	st->fd = -1;
}

/* Exit 1 for what went wrong with path, tmp removed first. */
static void
fail_removing(const char *tmp, const char *path)
{
	int saved = errno;

	unlink(tmp);
	errno = saved;
	err(KP_EXIT_FAILURE, "%s", path);
}

/* The file's directory synced, so that a rename in it lasts. */
static void
sync_dir(const struct kp_state *st)
{
	int fd;

	if ((fd = open(st->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    fsync(fd) < 0)
		err(KP_EXIT_FAILURE, "%s", st->dir);
	close(fd);
}

/*
 * The state file's object, its data written by write: entry by entry, as
 * text, never a tree of it nor its whole text in memory (kp-attribute(1),
 * Memory); its members in the order of their names, as before.
 */
static int
write_state(const struct kp_state *st, int fd, kp_state_writer *write,
    void *arg)
{
	struct kp_jw w;

	kp_jw_init(&w, fd);
	kp_jw_open(&w, '{');
	kp_jw_key(&w, "boot_id");
	kp_jw_string(&w, st->boot_id);
	kp_jw_key(&w, "data");
	write(&w, arg);
	kp_jw_key(&w, "kind");
	kp_jw_string(&w, st->kind);
	kp_jw_key(&w, "version");
	kp_jw_int(&w, STATE_VERSION);
	kp_jw_close(&w, '}');
	return kp_jw_finish(&w);
}

/*
 * Prepares the state whose data write writes: written and synced in a
 * temporary file, to be committed once the records it counts are
 * written.  A failure, as ENOSPC, exits 1 with nothing advanced.
 */
static void
prepare_by(struct kp_state *st, kp_state_writer *write, void *arg)
{
	int fd;

	if (st->tmp != NULL)		/* prepared before, never committed */
		unlink(st->tmp);
	free(st->tmp);
	st->tmp = kp_replaced_temp(st->path, "");
	if ((fd = mkstemp(st->tmp)) < 0)
		err(KP_EXIT_FAILURE, "%s", st->tmp);
	if (write_state(st, fd, write, arg) < 0 || fsync(fd) < 0 ||
	    close(fd) < 0)
		fail_removing(st->tmp, st->tmp);
}

/* data, a tree, as a kp_state_writer: for the stages whose state is small. */
static void
write_tree(struct kp_jw *w, void *data)
{
	kp_jw_json(w, data);
}

/* The same, its data a tree (a reference taken). */
void
kp_state_prepare_new(struct kp_state *st, json_t *data)
{
	prepare_by(st, write_tree, data);
	json_decref(data);
}

/* The prepared state into place, after the records it counts. */
void
kp_state_commit(struct kp_state *st)
{
	if (st->tmp == NULL)
		return;
	if (rename(st->tmp, st->path) < 0)
		fail_removing(st->tmp, st->path);
	free(st->tmp);
	st->tmp = NULL;
	sync_dir(st);
	st->committed_us = kp_mono_us();
}

/*
 * A filter with --state (kp-attribute(1), --state): every record of an
 * interval, those it passes on as they came included, is held until the
 * state that counts the interval is prepared, so that when preparing it
 * fails, as on a full disk, none of them goes out.  Held from before the
 * stream is read (kp_state_hold) to each interval's end
 * (kp_state_interval_end), and from there to the next, and to the
 * stream's end (kp_state_end).
 */
void
kp_state_hold(const struct kp_state *st)
{
	if (st != NULL)
		kp_out_hold();
}

/*
 * Whether the interval that ended is committed with its records: the
 * first, then at most once a second, as a long-running stage may run.
 */
int
kp_state_due(const struct kp_state *st)
{
	return st != NULL && (st->committed_us < 0 ||
	    kp_mono_us() - st->committed_us >= 1000000);
}

/* The state, if write is given, prepared; then what is held; then renamed. */
static void
release_with(struct kp_state *st, kp_state_writer *write, void *arg)
{
	if (write != NULL)
		prepare_by(st, write, arg);
	kp_out_release();
	kp_state_commit(st);
	st->uncommitted = write == NULL;
}

/*
 * An interval ends, its records held: write, when the state is due, writes
 * the data that counts them, prepared before they go out and committed
 * after; NULL, they go out and the state waits.  The next interval is held.
 */
void
kp_state_interval_end_by(struct kp_state *st, kp_state_writer *write,
    void *arg)
{
	if (st == NULL)
		return;
	release_with(st, write, arg);
	kp_out_hold();
}

/* The same, the data a tree (a reference taken), or NULL. */
void
kp_state_interval_end(struct kp_state *st, json_t *data)
{
	kp_state_interval_end_by(st, data != NULL ? write_tree : NULL, data);
	json_decref(data);
}

/*
 * Whether the stream's end has a state to commit: an interval that ended
 * since the last commit, or none in this run, which saves what it loaded.
 */
int
kp_state_pending(const struct kp_state *st)
{
	return st != NULL && (st->uncommitted || st->committed_us < 0);
}

/* The stream ends: its state (kp_state_pending), if any, then what is held. */
void
kp_state_end_by(struct kp_state *st, kp_state_writer *write, void *arg)
{
	if (st != NULL)
		release_with(st, write, arg);
}

void
kp_state_end(struct kp_state *st, json_t *data)
{
	kp_state_end_by(st, data != NULL ? write_tree : NULL, data);
	json_decref(data);
}

void
kp_state_close(struct kp_state *st)
{
	if (st == NULL)
		return;
	if (st->tmp != NULL)		/* never committed */
		unlink(st->tmp);
	kp_state_loaded(st);
	close(st->lockfd);
	free(st->path);
	free(st->dir);
	free(st->tmp);
	free(st);
}

/*
 * A stage in the middle of a pipeline (kp-attribute(1), kp-aggregate(1),
 * DESCRIPTION), given an empty input with
 * --state, saves nothing: the stage before it failed, and advancing this
 * one's state alone would make the next run's windows differ.
 */
void
kp_state_need_input(const struct kp_state *st, long lines_read)
{
	if (st != NULL && lines_read == 0)
		errx(KP_EXIT_FAILURE, "<stdin>: empty input: the stage before "
		    "failed; %s is not advanced", st->path);
}

/*
 * name in directory dirfd replaced by len bytes of text, atomically:
 * written to tmp beside it with mode, then renamed over it, so that a
 * reader sees the old file or the new one whole, never a part and never
 * none (kp-fmt(1), Powercap trees, read by a guest while the host
 * writes).  tmp is one fixed name per directory, for a writer that is
 * alone in it: one left by a writer killed before its rename is replaced.
 * Nothing is synced.  -1 with errno, tmp removed.
 */
int
kp_replaced_writeat(int dirfd, const char *name, const char *tmp,
    const char *text, size_t len, mode_t mode)
{
	ssize_t n = 0;
	int fd, saved;

	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0 && errno == EEXIST && unlinkat(dirfd, tmp, 0) == 0)
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		    mode);
	if (fd < 0)
		return -1;
	for (; len > 0; text += n, len -= (size_t)n)
		if ((n = write(fd, text, len)) < 0)
			break;
	saved = errno;
	if (close(fd) < 0 && n >= 0) {
		n = -1;
		saved = errno;
	}
	if (n >= 0 && renameat(dirfd, tmp, dirfd, name) < 0) {
		n = -1;
		saved = errno;
	}
	if (n < 0) {
		unlinkat(dirfd, tmp, 0);
		errno = saved;
		return -1;
	}
	return 0;
}
