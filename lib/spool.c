/*
 * Texts spooled: what a stage must keep until an interval ends (kp-attribute's
 * lines and identities, an output held until its state is prepared,
 * --summary's open interval) waits here, not in memory: the last
 * SPOOL_CHUNK bytes in memory, the rest in an unlinked file of $TMPDIR,
 * read back in the order they were added (kp-attribute(1), Memory).  A
 * failed write, as on a full disk, ends the stage with status 1 before any
 * record of the interval goes out: nothing is lost silently.
 */
#include <err.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kp.h"

#define SPOOL_CHUNK (1 << 20)	/* bytes written, or read back, at once */

static void
spool_open(struct kp_spool *sp)
{
	const char *dir = getenv("TMPDIR");
	char *path;

	if (dir == NULL || *dir == '\0')
		dir = "/tmp";
	path = kp_asprintf("%s/%s.XXXXXX", dir,
	    program_invocation_short_name);
	if ((sp->fd = mkstemp(path)) < 0)
		err(KP_EXIT_FAILURE, "spooling an interval to %s", dir);
	if (unlink(path) < 0)
		err(KP_EXIT_FAILURE, "%s", path);
	free(path);
}

static void
spool_write(struct kp_spool *sp, const char *s, size_t len)
{
	ssize_t n;

	if (sp->fd < 0)
		spool_open(sp);
	while (len > 0) {
		if ((n = pwrite(sp->fd, s, len, (off_t)sp->flushed)) < 0) {
			if (errno == EINTR)
				continue;
			err(KP_EXIT_FAILURE, "spooling an interval to $TMPDIR");
		}
		s += n;
		len -= (size_t)n;
		sp->flushed += (size_t)n;
	}
}

/* The bytes in memory go to the file, so that len more fit there. */
static void
spool_flush(struct kp_spool *sp)
{
	spool_write(sp, sp->tail, sp->ntail);
	sp->ntail = 0;
}

/*
 * Adds len bytes, whole to the memory or whole to the file, so that one
 * text is read back at once; returns where they are.
 */
size_t
kp_spool_add(struct kp_spool *sp, const char *s, size_t len)
{
	size_t off = sp->flushed + sp->ntail;

	if (sp->ntail + len > SPOOL_CHUNK && sp->ntail > 0)
		spool_flush(sp);
	if (len > SPOOL_CHUNK) {
		spool_write(sp, s, len);
		return off;
	}
	if (sp->tail == NULL)
		sp->tail = kp_malloc(SPOOL_CHUNK);
	memcpy(sp->tail + sp->ntail, s, len);
	sp->ntail += len;
	return off;
}

/* The file's bytes from off on, at least len of them, into the window. */
static void
spool_fill(struct kp_spool *sp, size_t off, size_t len)
{
	size_t want = len > SPOOL_CHUNK ? len : SPOOL_CHUNK, got = 0;
	ssize_t n;

	if (want > sp->flushed - off)
		want = sp->flushed - off;
	if (want > sp->capwin) {
		sp->win = kp_reallocarray(sp->win, want, 1);
		sp->capwin = want;
	}
	while (got < want) {
		n = pread(sp->fd, sp->win + got, want - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			err(KP_EXIT_FAILURE, "reading an interval back from "
			    "$TMPDIR");
		got += (size_t)n;
	}
	sp->winoff = off;
	sp->nwin = got;
}

/*
 * The len bytes added at off, valid until the next call.  Read in the
 * order they were added, each byte of the file is read once.
 */
const char *
kp_spool_get(struct kp_spool *sp, size_t off, size_t len)
{
	if (off >= sp->flushed)
		return sp->tail + (off - sp->flushed);
	if (off < sp->winoff || off + len > sp->winoff + sp->nwin)
		spool_fill(sp, off, len);
	return sp->win + (off - sp->winoff);
}

/*
 * Each line added, in order, to out: texts added as lines, each ending
 * in a newline, which is left out.
 */
void
kp_spool_lines(struct kp_spool *sp,
    void (*out)(const char *line, size_t len, void *arg), void *arg)
{
	size_t off = 0, want, have;
	const char *p, *nl;

	while (off < sp->flushed + sp->ntail) {
		for (want = 1;; want = have * 2) {
			p = kp_spool_get(sp, off, want);
			have = off >= sp->flushed ? sp->flushed + sp->ntail - off :
			    sp->winoff + sp->nwin - off;
			if ((nl = memchr(p, '\n', have)) != NULL)
				break;
		}
		out(p, (size_t)(nl - p), arg);
		off += (size_t)(nl - p) + 1;
	}
}

/*
 * Every byte added, in order, to out, in pieces of at most SPOOL_CHUNK:
 * an output held is written so, never whole in memory.
 */
void
kp_spool_each(struct kp_spool *sp, void (*out)(const char *s, size_t len))
{
	size_t off, len;

	for (off = 0; off < sp->flushed; off += len) {
		len = sp->flushed - off < SPOOL_CHUNK ? sp->flushed - off :
		    SPOOL_CHUNK;
		out(kp_spool_get(sp, off, len), len);
	}
	if (sp->ntail > 0)
		out(sp->tail, sp->ntail);
}

/* Empty again: the file's blocks are given back. */
void
kp_spool_clear(struct kp_spool *sp)
{
	if (sp->fd >= 0 && sp->flushed > 0 && ftruncate(sp->fd, 0) < 0)
		err(KP_EXIT_FAILURE, "spooling an interval to $TMPDIR");
	sp->flushed = sp->ntail = 0;
	sp->winoff = sp->nwin = 0;
}

void
kp_spool_free(struct kp_spool *sp)
{
	if (sp->fd >= 0)
		close(sp->fd);
	free(sp->tail);
	free(sp->win);
	memset(sp, 0, sizeof(*sp));
	sp->fd = -1;
}
