/*
 * --state FILE: what one run leaves for the next.  The file is JSON
 * {"kind":..., "version":1, "boot_id":..., "data":...}; it is locked against
 * concurrent runs (FILE.lock) and replaced atomically (a temporary file in the
 * same directory, then rename), and it is trusted only if it was written by
 * the same command during the same boot.
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kp.h"

#define STATE_VERSION 1

struct kp_state {
	char *path;
	int lockfd;
	char boot_id[64];
	char kind[32];
	json_t *data;
	int rebooted;		/* data is from an earlier boot */
};

static void
load(struct kp_state *st)
{
	json_error_t jerr;
	json_t *root;
	const char *kind, *boot_id;
	json_int_t version;
	int fd;

	if ((fd = open(st->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		if (errno == ELOOP)
			warnx("%s: a symbolic link, not followed; starting a "
			    "new baseline in a file in its place", st->path);
		else if (errno != ENOENT)
			warn("%s: not used", st->path);
		return;
	}
	root = json_loadfd(fd, 0, &jerr);
	close(fd);
	if (root == NULL ||
	    json_unpack(root, "{s:s,s:I,s:s,s:o}", "kind", &kind,
	    "version", &version, "boot_id", &boot_id, "data", &st->data) < 0) {
		warnx("%s: corrupt state file, starting a new baseline",
		    st->path);
		st->data = NULL;
	} else if (strcmp(kind, st->kind) != 0 || version != STATE_VERSION) {
		warnx("%s: state file of '%s' version %lld, not %s version %d; "
		    "starting a new baseline", st->path, kind,
		    (long long)version, st->kind, STATE_VERSION);
		st->data = NULL;
	} else {
		if (strcmp(boot_id, st->boot_id) != 0) {
			warnx("%s: written before a reboot, starting a new "
			    "baseline", st->path);
			st->rebooted = 1;
		}
		json_incref(st->data);
	}
	json_decref(root);
}

struct kp_state *
kp_state_open(const char *path, const char *procdir, const char *kind)
{
	struct kp_state *st;
	char lockpath[PATH_MAX];

	st = kp_calloc(1, sizeof(*st));
	st->path = kp_strdup(path);
	snprintf(st->kind, sizeof(st->kind), "%s", kind);
	if (kp_read_boot_id(procdir, st->boot_id, sizeof(st->boot_id)) < 0)
		st->boot_id[0] = '\0';	/* no boot id: trust only the kind */
	snprintf(lockpath, sizeof(lockpath), "%s.lock", path);
	st->lockfd = open(lockpath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
	    0644);
	if (st->lockfd < 0)
		err(KP_EXIT_FAILURE, "%s", lockpath);
	if (flock(st->lockfd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK)
			err(KP_EXIT_FAILURE, "%s", lockpath);
		warnx("%s: another run holds the lock, waiting", path);
		if (flock(st->lockfd, LOCK_EX) < 0)
			err(KP_EXIT_FAILURE, "%s", lockpath);
	}
	load(st);
	return st;
}

/* The previous run's data, if it ran during this boot; borrowed. */
json_t *
kp_state_data(struct kp_state *st)
{
	return st->rebooted ? NULL : st->data;
}

/* The same, also from before a reboot: for totals, not for baselines. */
json_t *
kp_state_data_any_boot(struct kp_state *st)
{
	return st->data;
}

/* Replaces the file's data with data, atomically. */
void
kp_state_commit_new(struct kp_state *st, json_t *data)
{
	char tmp[PATH_MAX], dir[PATH_MAX];
	json_t *root;
	int fd;

	snprintf(dir, sizeof(dir), "%s", st->path);
	snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dirname(dir),
	    basename(st->path));
	root = json_pack("{s:s,s:i,s:s,s:o}", "kind", st->kind,
	    "version", STATE_VERSION, "boot_id", st->boot_id, "data", data);
	if (root == NULL)
		errx(KP_EXIT_FAILURE, "%s: cannot build the state", st->path);
	if ((fd = mkstemp(tmp)) < 0)
		err(KP_EXIT_FAILURE, "%s", tmp);
	if (json_dumpfd(root, fd, JSON_COMPACT) < 0 || write(fd, "\n", 1) != 1 ||
	    fsync(fd) < 0 || close(fd) < 0) {
		unlink(tmp);
		err(KP_EXIT_FAILURE, "%s", tmp);
	}
	json_decref(root);
	if (rename(tmp, st->path) < 0) {
		unlink(tmp);
		err(KP_EXIT_FAILURE, "%s", st->path);
	}
}

void
kp_state_close(struct kp_state *st)
{
	if (st == NULL)
		return;
	json_decref(st->data);
	close(st->lockfd);
	free(st->path);
	free(st);
}

/*
 * D5: a stage in the middle of a pipeline, given an empty input with
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

/* The integer member key of obj, in *val; 0 if there is none. */
int
kp_json_int(json_t *obj, const char *key, int64_t *val)
{
	json_t *v = json_object_get(obj, key);

	if (!json_is_integer(v))
		return 0;
	*val = json_integer_value(v);
	return 1;
}

/* The string member key of obj, borrowed, or NULL. */
const char *
kp_json_str(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}
