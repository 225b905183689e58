/*
 * libFuzzer harness for the record reader (lib/record.c) on a file
 * descriptor, as every stage opens it on its standard input: the bytes
 * come through a pipe in pieces whose sizes the input picks, so that a
 * line is cut across reads and the buffer is moved and grown, and the
 * first read finds no buffer at all.  Each line must get the decision that
 * the same bytes read whole (kp_reader_open_mem) get.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kp.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

/* The writing end of the pipe, fed a piece before each read(2). */
struct feed {
	int fd;			/* -1: closed, the input has ended */
	const uint8_t *data;
	size_t size, off;
	unsigned seed;
};

/*
 * A piece of 1 to 4096 bytes, its size drawn from the input's size, once
 * the last is read: the pipe never fills, so no write waits.
 */
static void
feed_piece(int fd, void *arg)
{
	struct feed *f = arg;
	int pending;
	size_t n;

	if (f->fd < 0 || (ioctl(fd, FIONREAD, &pending) == 0 && pending > 0))
		return;
	f->seed = f->seed * 1103515245 + 12345;
	n = 1 + (f->seed >> 16) % 4096;
	if (n > f->size - f->off)
		n = f->size - f->off;
	CHECK(n == 0 || write(f->fd, f->data + f->off, n) == (ssize_t)n);
	f->off += n;
	if (f->off == f->size) {
		close(f->fd);
		f->fd = -1;
	}
}

struct decision {
	int n;			/* 1: taken, -1: rejected, 0: the end */
	int64_t seq, cut_seq;
	long lineno;
	char why[200];
	char *line;		/* a record's line */
	size_t len;
};

static void
decide(struct decision *d, struct kp_reader *r, const struct kp_record *rec,
    int n)
{
	d->n = n;
	d->seq = n > 0 ? rec->seq : -1;
	d->cut_seq = n > 0 ? rec->cut_seq : -1;
	d->lineno = kp_reader_lineno(r);
	snprintf(d->why, sizeof(d->why), "%s", n < 0 ? kp_reader_why(r) : "");
	d->len = n > 0 ? rec->len : 0;
	d->line = n > 0 ? memcpy(malloc(rec->len + 1), rec->line, rec->len) :
	    NULL;
}

static int
same(const struct decision *a, const struct decision *b)
{
	return a->n == b->n && a->seq == b->seq && a->cut_seq == b->cut_seq &&
	    a->lineno == b->lineno && strcmp(a->why, b->why) == 0 &&
	    a->len == b->len && (a->len == 0 ||
	    memcmp(a->line, b->line, a->len) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kp_reader *whole, *piped;
	struct kp_record rec;
	struct decision a, b;
	struct feed f = { -1, data, size, 0, size };
	int p[2], n;

	CHECK(pipe(p) == 0);
	f.fd = p[1];
	if (size == 0) {
		close(f.fd);
		f.fd = -1;
	}
	piped = kp_reader_open(p[0], "<fuzz>");
	kp_reader_set_wait(piped, feed_piece, &f);
	whole = kp_reader_open_mem((const char *)data, size, "<fuzz>");
	do {
		n = kp_reader_read(whole, &rec);
		decide(&a, whole, &rec, n);
		decide(&b, piped, &rec, kp_reader_read(piped, &rec));
		CHECK(same(&a, &b));
		free(a.line);
		free(b.line);
	} while (n != 0 && !(n < 0 && kp_reader_fatal(whole)));
	kp_reader_close(whole);
	kp_reader_close(piped);
	if (f.fd >= 0)
		close(f.fd);
	close(p[0]);
	return 0;
}
