/*
 * Where -f prometheus and --textfile write an exposition: the textfile,
 * replaced through a temporary file beside it, and standard output's
 * file, which keeps the last one until the input ends; and the spill
 * file that holds the samples of an interval too large to hold in memory
 * (kp-fmt(1), Memory).
 */
#include <err.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prom.h"

/* Text is written once this much is held. */
#define OUT_HELD_BYTES (64 << 10)

/*
 * The temporaries' tag: a name that only kp-fmt's textfile gives, so that
 * the leftovers of a run killed between writing one and renaming it are
 * told from anything else in node_exporter's directory.
 */
#define TEXTFILE_TAG "kp-fmt."
/* A temporary last changed that long ago is no write in progress. */
#define TEXTFILE_STALE_S 60

/* A new temporary file beside the textfile, for the next exposition. */
static int
textfile_temp(const char *path, char **tmp)
{
	int fd;

	*tmp = kp_replaced_temp(path, TEXTFILE_TAG);
	if ((fd = mkstemp(*tmp)) < 0)
		err(KP_EXIT_FAILURE, "textfile '%s': cannot create a file "
		    "in its directory", path);
	return fd;
}

/*
 * At start: the path is what a state file may be (kp-fmt(1),
 * --textfile), the leftovers of earlier runs go, and a directory we
 * cannot write fails now, not later.
 */
void
textfile_check(const char *path)
{
	char *tmp;
	int fd;

	if ((fd = kp_replaced_open(path, "replacing it with the exposition")) >=
	    0)
		close(fd);
	kp_replaced_clean(path, TEXTFILE_TAG, TEXTFILE_STALE_S);
	fd = textfile_temp(path, &tmp);
	close(fd);
	unlink(tmp);
	free(tmp);
}

/*
 * A file of kp-fmt's own, removed at once so that nothing is left when it
 * ends, in $TMPDIR or /tmp.
 */
int
spill_open(void)
{
	const char *dir = getenv("TMPDIR");
	char *path;
	int fd;

	if (dir == NULL || *dir == '\0')
		dir = "/tmp";
	path = kp_asprintf("%s/kp-fmt.XXXXXX", dir);
	if ((fd = mkstemp(path)) < 0)
		err(KP_EXIT_FAILURE, "cannot create a file in '%s'", dir);
	unlink(path);
	free(path);
	return fd;
}

void
spill_write(int fd, const char *s, size_t len, off_t off)
{
	ssize_t n;

	for (; len > 0; s += n, len -= (size_t)n, off += n)
		if ((n = pwrite(fd, s, len, off)) < 0)
			err(KP_EXIT_FAILURE, "kp-fmt's spill file");
}

void
spill_read(int fd, char *buf, size_t len, off_t off)
{
	ssize_t n;

	for (; len > 0; buf += n, len -= (size_t)n, off += n)
		if ((n = pread(fd, buf, len, off)) <= 0)
			errx(KP_EXIT_FAILURE, "kp-fmt's spill file: %s",
			    n < 0 ? strerror(errno) : "cut short");
}

/* A write that failed: the textfile's temporary goes. */
static void
out_fail(struct prom_out *out)
{
	warn("textfile '%s'", out->name);
	unlink(out->name);
	exit(KP_EXIT_FAILURE);
}

static void
write_all(int fd, const char *s, size_t len, struct prom_out *out)
{
	ssize_t n;

	for (; len > 0; s += n, len -= (size_t)n)
		if ((n = write(fd, s, len)) < 0) {
			if (out != NULL)
				out_fail(out);
			err(KP_EXIT_FAILURE, "kp-fmt's file of the exposition");
		}
}

/*
 * Standard output's exposition, kept until the input ends: in memory up
 * to LAST_HELD_BYTES, as most are, in a file beyond, as a large
 * interval's is, which would cost memory of its size.
 */
#define LAST_HELD_BYTES (1 << 20)
static void
last_add(struct prom *p, const char *s, size_t len)
{
	if (!p->last_in_file && p->last.len + len <= LAST_HELD_BYTES) {
		kp_buf_add(&p->last, s, len);
		return;
	}
	if (!p->last_in_file) {
		if (p->last_fd < 0)
			p->last_fd = spill_open();
		if (ftruncate(p->last_fd, 0) < 0 ||
		    lseek(p->last_fd, 0, SEEK_SET) < 0)
			err(KP_EXIT_FAILURE, "kp-fmt's file of the exposition");
		write_all(p->last_fd, p->last.s, p->last.len, NULL);
		p->last.len = 0;
		p->last_in_file = 1;
	}
	write_all(p->last_fd, s, len, NULL);
}

void
prom_out_write(struct prom_out *out, const char *s, size_t len)
{
	if (out->fd >= 0)
		write_all(out->fd, s, len, out);
	if (out->last != NULL)
		last_add(out->last, s, len);
}

void
prom_out_flush(struct prom *p, struct prom_out *out)
{
	prom_out_write(out, p->text.s, p->text.len);
	p->text.len = 0;
}

/* What p->text holds, once it is worth a write. */
void
prom_out_text(struct prom *p, struct prom_out *out)
{
	if (p->text.len >= OUT_HELD_BYTES)
		prom_out_flush(p, out);
}

/*
 * The outputs of an exposition: the textfile's temporary, for a whole
 * interval, and standard output's, emptied.
 */
void
prom_out_open(struct prom *p, struct prom_out *out, int whole)
{
	out->fd = -1;
	out->name = NULL;
	out->last = p->to_stdout ? p : NULL;
	if (p->textfile != NULL && whole)
		out->fd = textfile_temp(p->textfile, &out->name);
	p->last.len = 0;
	p->last_in_file = 0;
	p->has_last = p->to_stdout;
	p->text.len = 0;
}

/* The textfile's temporary, complete, replaces it. */
void
prom_out_close(struct prom *p, struct prom_out *out)
{
	if (out->fd < 0)
		return;
	if (fchmod(out->fd, 0644) < 0)
		out_fail(out);
	if (close(out->fd) < 0 || rename(out->name, p->textfile) < 0)
		out_fail(out);
	free(out->name);
}

/* Standard output gets the last exposition when the input has ended. */
void
prom_out_last(struct fmt *ctx, struct prom *p)
{
	char buf[OUT_HELD_BYTES];
	ssize_t n;

	if (!p->has_last)
		return;
	kp_out_bytes(ctx->out.s, ctx->out.len);
	ctx->out.len = 0;
	if (!p->last_in_file) {
		kp_out_bytes(p->last.s, p->last.len);
		return;
	}
	if (lseek(p->last_fd, 0, SEEK_SET) < 0)
		err(KP_EXIT_FAILURE, "kp-fmt's file of the exposition");
	while ((n = read(p->last_fd, buf, sizeof(buf))) > 0)
		kp_out_bytes(buf, (size_t)n);
	if (n < 0)
		err(KP_EXIT_FAILURE, "kp-fmt's file of the exposition");
}
