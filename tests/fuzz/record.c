/*
 * libFuzzer harness for the record reader (lib/record.c): any bytes as a
 * stream.  Besides not crashing, each record the reader takes must keep
 * the promises of kp-records(5): a type name, a seq of at least 0, _uj and
 * _us members that are non-negative integers, a line within the input
 * with no newline, and intervals that end in increasing seq inside each
 * ordering domain.  And a line rejected, or a record that a stage refuses
 * (kp_reader_refuse), is as if it had not been read, as it is for the
 * stage after, which never sees it: the input without such lines (the
 * records refused, and the rejected lines of odd number, so that the
 * others are compared too) reads to the same decision on every line left.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kp.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

/* gpu_us, kp-records(5) 1.2: an object of integers of at least 0. */
static void
check_gpu_us(const struct kp_field *f)
{
	struct kp_member m;
	size_t pos = 0;
	int more;

	CHECK(f->kind == KP_V_OBJECT);
	while ((more = kp_object_next(f->raw, f->rawlen, &pos, &m)) > 0)
		CHECK(m.num.kind == KP_V_INT && m.num.i >= 0 &&
		    kp_device_name_ok(m.key, m.keylen));
	CHECK(more == 0);
}

static void
check_members(const struct kp_record *rec)
{
	const struct kp_field *f;
	size_t i;

	for (i = 0; i < rec->nf; i++) {
		f = &rec->f[i];
		CHECK(strlen(f->key) == f->keylen);
		CHECK(f->raw >= rec->line && f->raw + f->rawlen <= rec->line +
		    rec->len);
		if (strcmp(f->key, "gpu_us") == 0)
			check_gpu_us(f);
		else if (f->keylen >= 3 && (strcmp(f->key + f->keylen - 3,
		    "_uj") == 0 || strcmp(f->key + f->keylen - 3, "_us") == 0))
			CHECK(f->kind == KP_V_INT && f->i >= 0);
		if (f->kind == KP_V_STR)
			CHECK(strlen(f->str) == f->len);
	}
}

static void
check_record(const struct kp_record *rec, const uint8_t *data, size_t size,
    int64_t *last_ended)
{
	int64_t dt_us;

	CHECK(rec->type != NULL && *rec->type != '\0' && rec->seq >= 0);
	CHECK(memchr(rec->line, '\n', rec->len) == NULL);
	CHECK(rec->len <= size && rec->len <= KP_LINE_MAX);
	CHECK(rec->len == 0 || memmem(data, size, rec->line, rec->len));
	check_members(rec);
	if (strcmp(rec->type, "header") == 0) {
		CHECK(rec->seq == 0);
		*last_ended = -2;	/* seq may go back, to 1 */
	} else if (strcmp(rec->type, "interval") == 0) {
		CHECK(kp_rec_int(rec, "dt_us", &dt_us) && dt_us > 0);
		CHECK(rec->seq > *last_ended || (*last_ended == -2));
		*last_ended = rec->seq;
	}
}

/* What the reader decided on one line. */
struct decision {
	int n;			/* 1: taken, -1: rejected, 0: no record */
	int dropped;		/* left out of the input read again */
	int64_t seq, cut_seq;
	char why[200];
};

static void
decide(struct decision *d, struct kp_reader *r, const struct kp_record *rec,
    int n)
{
	d->n = n;
	d->seq = n > 0 ? rec->seq : -1;
	d->cut_seq = n > 0 ? rec->cut_seq : -1;
	snprintf(d->why, sizeof(d->why), "%s", n < 0 ? kp_reader_why(r) : "");
}

/* A record a stage might refuse: one in three, by its line, no header. */
static int
to_refuse(const struct kp_record *rec)
{
	return strcmp(rec->type, "header") != 0 && rec->len > 0 &&
	    (unsigned char)rec->line[rec->len / 2] % 3 == 0;
}

/* The input less the lines dropped, and where each line kept came from. */
static char *
without_dropped(const uint8_t *data, size_t size, const struct decision *d,
    long nlines, long *from, size_t *len)
{
	char *out = malloc(size + 1);
	const uint8_t *p = data, *end = data + size, *nl;
	long line = 0, kept = 0;

	*len = 0;
	for (; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		if (++line > nlines || !d[line].dropped) {
			from[++kept] = line;
			memcpy(out + *len, p, (size_t)(nl - p) + (nl < end));
			*len += (size_t)(nl - p) + (nl < end);
		}
	}
	return out;
}

/* The same input without the lines dropped: each other line alike. */
static void
check_dropped(const uint8_t *data, size_t size, const struct decision *d,
    long nlines)
{
	long *from = calloc((size_t)nlines + 2, sizeof(*from));
	const struct decision *was;
	struct decision again;
	struct kp_reader *r;
	struct kp_record rec;
	size_t len;
	char *rest = without_dropped(data, size, d, nlines, from, &len);
	int n;

	r = kp_reader_open_mem(rest, len, "<fuzz>");
	while ((n = kp_reader_read(r, &rec)) != 0) {
		decide(&again, r, &rec, n);
		was = &d[from[kp_reader_lineno(r)]];
		CHECK(again.n == was->n && again.seq == was->seq &&
		    again.cut_seq == was->cut_seq &&
		    strcmp(again.why, was->why) == 0);
		if (n < 0 && kp_reader_fatal(r))
			break;
	}
	kp_reader_close(r);
	free(rest);
	free(from);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kp_reader *r;
	struct kp_record rec;
	struct decision *d;
	int64_t last_ended = -1;
	long nlines = 1;
	size_t i;
	int n;

	for (i = 0; i < size; i++)
		nlines += data[i] == '\n';
	d = calloc((size_t)nlines + 1, sizeof(*d));
	r = kp_reader_open_mem((const char *)data, size, "<fuzz>");
	while ((n = kp_reader_read(r, &rec)) != 0) {
		decide(&d[kp_reader_lineno(r)], r, &rec, n);
		if (n < 0) {
			CHECK(kp_reader_why(r) != NULL);
			if (kp_reader_fatal(r))
				break;
			d[kp_reader_lineno(r)].dropped = kp_reader_lineno(r) % 2;
			continue;
		}
		if (to_refuse(&rec)) {
			d[kp_reader_lineno(r)].dropped = 1;
			kp_reader_refuse(r, "refused");
			continue;
		}
		check_record(&rec, data, size, &last_ended);
	}
	kp_reader_close(r);
	check_dropped(data, size, d, nlines);
	free(d);
	return 0;
}
