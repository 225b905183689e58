/*
 * libFuzzer harness for the record reader (lib/record.c): any bytes as a
 * stream.  Besides not crashing, each record the reader takes must keep
 * the promises of kp-records(5): a type name, a seq of at least 0, _uj and
 * _us members that are non-negative integers, a line within the input
 * with no newline, and intervals that end in increasing seq inside each
 * ordering domain.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kp.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

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
		if (f->keylen >= 3 && (strcmp(f->key + f->keylen - 3, "_uj") ==
		    0 || strcmp(f->key + f->keylen - 3, "_us") == 0))
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

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kp_reader *r;
	struct kp_record rec;
	int64_t last_ended = -1;
	int n;

	r = kp_reader_open_mem((const char *)data, size, "<fuzz>");
	while ((n = kp_reader_read(r, &rec)) != 0) {
		if (n < 0) {
			CHECK(kp_reader_why(r) != NULL);
			if (kp_reader_fatal(r))
				break;
			continue;
		}
		check_record(&rec, data, size, &last_ended);
	}
	kp_reader_close(r);
	return 0;
}
