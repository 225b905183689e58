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

/*
 * What the reader decided on a line, as text: its number, and the record
 * taken, as its seq, the interval it cut and its bytes, or why not.
 */
static char *
decision(struct kp_reader *r, const struct kp_record *rec, int n)
{
	if (n > 0)
		return kp_asprintf("%ld: %lld, cut %lld: %.*s",
		    kp_reader_lineno(r), (long long)rec->seq,
		    (long long)rec->cut_seq, (int)rec->len, rec->line);
	return kp_asprintf("%ld: %s", kp_reader_lineno(r),
	    n < 0 ? kp_reader_why(r) : "the end");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kp_reader *whole, *piped;
	struct kp_record rec;
	struct feed f = { -1, data, size, 0, size };
	char *a, *b;
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
		a = decision(whole, &rec, n);
		b = decision(piped, &rec, kp_reader_read(piped, &rec));
		CHECK(strcmp(a, b) == 0);
		free(a);
		free(b);
	} while (n != 0 && !(n < 0 && kp_reader_fatal(whole)));
	kp_reader_close(whole);
	kp_reader_close(piped);
	if (f.fd >= 0)
		close(f.fd);
	close(p[0]);
	return 0;
}
