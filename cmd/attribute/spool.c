/*
 * kp-attribute: an interval's texts, spooled.  The split needs every
 * process's CPU time before it writes a record, so an interval's records
 * wait for its interval record; their lines and identity texts wait here,
 * not in memory: the last SPOOL_CHUNK bytes in memory, the rest in an
 * unlinked file of $TMPDIR, read back in the order they were added
 * (kp-attribute(1), Memory).  A failed write, as on a full disk, ends the
 * stage with status 1: nothing is lost silently.
 */
#include <err.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attribute.h"

#define SPOOL_CHUNK (1 << 20)	/* bytes written, or read back, at once */

static void
spool_open(struct spool *sp)
{
	const char *dir = getenv("TMPDIR");
	char *path;

	if (dir == NULL || *dir == '\0')
		dir = "/tmp";
	path = kp_asprintf("%s/kp-attribute.XXXXXX", dir);
	if ((sp->fd = mkstemp(path)) < 0)
		err(KP_EXIT_FAILURE, "%s", path);
	if (unlink(path) < 0)
		err(KP_EXIT_FAILURE, "%s", path);
	free(path);
}

static void
spool_write(struct spool *sp, const char *s, size_t len)
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
spool_flush(struct spool *sp)
{
	spool_write(sp, sp->tail, sp->ntail);
	sp->ntail = 0;
}

/*
 * Adds len bytes, whole to the memory or whole to the file, so that one
 * text is read back at once; returns where they are.
 */
size_t
spool_add(struct spool *sp, const char *s, size_t len)
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
spool_fill(struct spool *sp, size_t off, size_t len)
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
spool_get(struct spool *sp, size_t off, size_t len)
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
spool_lines(struct spool *sp, void (*out)(const char *line, size_t len))
{
	size_t off = 0, want, have;
	const char *p, *nl;

	while (off < sp->flushed + sp->ntail) {
		for (want = 1;; want = have * 2) {
			p = spool_get(sp, off, want);
			have = off >= sp->flushed ? sp->flushed + sp->ntail - off :
			    sp->winoff + sp->nwin - off;
			if ((nl = memchr(p, '\n', have)) != NULL)
				break;
		}
		out(p, (size_t)(nl - p));
		off += (size_t)(nl - p) + 1;
	}
}

/* Empty again: the file's blocks are given back. */
void
spool_clear(struct spool *sp)
{
	if (sp->fd >= 0 && sp->flushed > 0 && ftruncate(sp->fd, 0) < 0)
		err(KP_EXIT_FAILURE, "spooling an interval to $TMPDIR");
	sp->flushed = sp->ntail = 0;
	sp->winoff = sp->nwin = 0;
}

void
spool_free(struct spool *sp)
{
	if (sp->fd >= 0)
		close(sp->fd);
	free(sp->tail);
	free(sp->win);
	memset(sp, 0, sizeof(*sp));
	sp->fd = -1;
}
