/*
 * Reading a kp record stream: one JSON object per line.  A line that is not
 * a record is reported with its place ("prog: <stdin>:12: ...") and skipped;
 * the caller sees only well-formed records.
 */
#include <err.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kp.h"

struct kp_reader {
	FILE *fp;
	const char *name;
	long lineno;
	int errors;
	char *line;
	size_t cap;
	json_t *obj;		/* the current record, released on the next read */
};

struct kp_reader *
kp_reader_open(FILE *fp, const char *name)
{
	struct kp_reader *r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		err(KP_EXIT_FAILURE, "calloc");
	r->fp = fp;
	r->name = name;
	return r;
}

void
kp_reader_reject(struct kp_reader *r, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s:%ld: ", program_invocation_short_name, r->name, r->lineno);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	r->errors++;
}

/* A header of another major version means we cannot read what follows. */
static void
check_header(struct kp_reader *r, json_t *obj)
{
	const char *version;
	char *end;
	long major;

	version = kp_json_str(obj, "version");
	major = version ? strtol(version, &end, 10) : -1;
	if (version == NULL || end == version || (*end != '.' && *end != '\0'))
		errx(KP_EXIT_DATAERR, "%s:%ld: header without a valid "
		    "\"version\"", r->name, r->lineno);
	if (major != KP_PROTO_MAJOR)
		errx(KP_EXIT_DATAERR, "%s:%ld: unsupported kp-records version "
		    "%s (this build reads %d.x)", r->name, r->lineno, version,
		    KP_PROTO_MAJOR);
}

/* Returns 1 with the next record in rec, 0 at end of input. */
int
kp_reader_next(struct kp_reader *r, struct kp_record *rec)
{
	json_error_t jerr;
	ssize_t n;
	json_t *type;

	for (;;) {
		json_decref(r->obj);
		r->obj = NULL;
		if ((n = getline(&r->line, &r->cap, r->fp)) < 0) {
			if (ferror(r->fp))
				err(KP_EXIT_FAILURE, "%s", r->name);
			return 0;
		}
		r->lineno++;
		if (n > 0 && r->line[n - 1] == '\n')
			r->line[--n] = '\0';
		if (n == 0 || strspn(r->line, " \t\r") == (size_t)n)
			continue;
		r->obj = json_loadb(r->line, n, JSON_REJECT_DUPLICATES, &jerr);
		if (r->obj == NULL) {
			kp_reader_reject(r, "not JSON: %s", jerr.text);
			continue;
		}
		if (!json_is_object(r->obj)) {
			kp_reader_reject(r, "not a JSON object");
			continue;
		}
		type = json_object_get(r->obj, "type");
		if (!json_is_string(type)) {
			kp_reader_reject(r, "record without a string \"type\"");
			continue;
		}
		if (!kp_json_int(r->obj, "seq", &rec->seq) || rec->seq < 0) {
			kp_reader_reject(r, "record without a non-negative "
			    "integer \"seq\"");
			continue;
		}
		rec->obj = r->obj;
		rec->type = json_string_value(type);
		rec->line = r->line;
		rec->len = (size_t)n;
		if (strcmp(rec->type, "header") == 0)
			check_header(r, r->obj);
		return 1;
	}
}

int
kp_reader_errors(const struct kp_reader *r)
{
	return r->errors;
}

long
kp_reader_lineno(const struct kp_reader *r)
{
	return r->lineno;
}

void
kp_reader_close(struct kp_reader *r)
{
	json_decref(r->obj);
	free(r->line);
	free(r);
}

/* Returns 1 and sets *val when obj has an integer member key. */
int
kp_json_int(json_t *obj, const char *key, int64_t *val)
{
	json_t *v;

	v = json_object_get(obj, key);
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
