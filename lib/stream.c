/*
 * Reading a kp record stream: one JSON object per line.  A line that is not
 * a record is reported with its place ("prog: <stdin>:12: ...") and skipped;
 * the caller sees only well-formed records.
 */
#include <ctype.h>
#include <err.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kp.h"

struct kp_oldrd {
	FILE *fp;
	const char *name;
	long lineno;
	int errors;
	char *line;
	size_t cap;
	json_t *obj;		/* the current record, released on the next read */
	int pending;		/* line holds a line not yet parsed */
	ssize_t pending_len;
	char type[64];		/* a peeked record's type */
};

struct kp_oldrd *
kp_oldrd_open(FILE *fp, const char *name)
{
	struct kp_oldrd *r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		err(KP_EXIT_FAILURE, "calloc");
	r->fp = fp;
	r->name = name;
	return r;
}

void
kp_oldrd_reject(struct kp_oldrd *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kp_vwarn_at(r->name, r->lineno, fmt, ap);
	va_end(ap);
	r->errors++;
}

/* prog: name:lineno: message, the form of every complaint about input. */
void
kp_vwarn_at(const char *name, long lineno, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: %s:%ld: ", program_invocation_short_name, name,
	    lineno);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

/*
 * A header of another major version means we cannot read what follows:
 * the stream of name is refused at its line lineno.
 */
void
kp_check_version(const char *name, long lineno, const char *version)
{
	char *end;
	long major;

	major = version ? strtol(version, &end, 10) : -1;
	if (version == NULL || end == version || (*end != '.' && *end != '\0'))
		errx(KP_EXIT_DATAERR, "%s:%ld: header without a valid "
		    "\"version\"", name, lineno);
	if (major != KP_PROTO_MAJOR)
		errx(KP_EXIT_DATAERR, "%s:%ld: unsupported kp-records version "
		    "%s (this build reads %d.x)", name, lineno, version,
		    KP_PROTO_MAJOR);
}

/* Returns 1 with the next record in rec, 0 at end of input. */
int
kp_oldrd_next(struct kp_oldrd *r, struct kp_oldrec *rec)
{
	json_error_t jerr;
	ssize_t n;
	json_t *type;

	for (;;) {
		json_decref(r->obj);
		r->obj = NULL;
		if (r->pending) {
			r->pending = 0;
			n = r->pending_len;
			r->lineno++;
		} else if ((n = getline(&r->line, &r->cap, r->fp)) < 0) {
			if (ferror(r->fp))
				err(KP_EXIT_FAILURE, "%s", r->name);
			return 0;
		} else {
			r->lineno++;
			if (n > 0 && r->line[n - 1] == '\n')
				r->line[--n] = '\0';
		}
		if (n == 0 || strspn(r->line, " \t\r") == (size_t)n)
			continue;
		r->obj = json_loadb(r->line, n, JSON_REJECT_DUPLICATES, &jerr);
		if (r->obj == NULL) {
			kp_oldrd_reject(r, "not JSON: %s", jerr.text);
			continue;
		}
		if (!json_is_object(r->obj)) {
			kp_oldrd_reject(r, "not a JSON object");
			continue;
		}
		type = json_object_get(r->obj, "type");
		if (!json_is_string(type)) {
			kp_oldrd_reject(r, "record without a string \"type\"");
			continue;
		}
		if (!kp_json_int(r->obj, "seq", &rec->seq) || rec->seq < 0) {
			kp_oldrd_reject(r, "record without a non-negative "
			    "integer \"seq\"");
			continue;
		}
		rec->obj = r->obj;
		rec->type = json_string_value(type);
		rec->line = r->line;
		rec->len = (size_t)n;
		if (strcmp(rec->type, "header") == 0)
			kp_check_version(r->name, r->lineno,
			    kp_json_str(r->obj, "version"));
		return 1;
	}
}

int
kp_oldrd_errors(const struct kp_oldrd *r)
{
	return r->errors;
}

long
kp_oldrd_lineno(const struct kp_oldrd *r)
{
	return r->lineno;
}

void
kp_oldrd_close(struct kp_oldrd *r)
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

/*
 * The fast path.  Every kp stage writes a record as {"type":"T","seq":N,...;
 * a line that starts so has its type and seq read from those bytes alone,
 * and a stage that does not consume the type passes it on without parsing
 * it.  Any other line, and every header, goes through kp_oldrd_next's
 * full parse.
 */
static int
peek(const char *s, size_t n, char *type, size_t typecap, int64_t *seq)
{
	static const char head[] = "{\"type\":\"";
	const char *p = s + sizeof(head) - 1, *end = s + n, *q;
	int64_t v = 0;

	if (n < sizeof(head) + 10 || memcmp(s, head, sizeof(head) - 1) != 0)
		return 0;
	if ((q = memchr(p, '"', (size_t)(end - p))) == NULL ||
	    (size_t)(q - p) >= typecap || memchr(p, '\\', (size_t)(q - p)))
		return 0;
	memcpy(type, p, (size_t)(q - p));
	type[q - p] = '\0';
	p = q + 1;
	if (end - p < 8 || memcmp(p, ",\"seq\":", 7) != 0)
		return 0;
	p += 7;
	if (p == end || *p < '0' || *p > '9' || (*p == '0' && p + 1 < end &&
	    p[1] >= '0' && p[1] <= '9'))
		return 0;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		if (v > (INT64_MAX - 9) / 10)
			return 0;
		v = v * 10 + (*p - '0');
	}
	if (p == end || (*p != ',' && *p != '}'))
		return 0;
	*seq = v;
	return strcmp(type, "header") != 0;
}

/*
 * As kp_oldrd_next, but rec->obj is NULL when the record was only peeked
 * at; kp_oldrd_parse gives its JSON value when a stage needs it.  rec->type
 * is then valid until the next read.
 */
int
kp_oldrd_next_lazy(struct kp_oldrd *r, struct kp_oldrec *rec)
{
	ssize_t n;

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
	if (peek(r->line, (size_t)n, r->type, sizeof(r->type), &rec->seq)) {
		rec->obj = NULL;
		rec->type = r->type;
		rec->line = r->line;
		rec->len = (size_t)n;
		return 1;
	}
	/* Not the usual form: the full parse, from this same line. */
	r->lineno--;
	r->pending = 1;
	r->pending_len = n;
	return kp_oldrd_next(r, rec);
}

/* The JSON value of rec, parsed now if it was only peeked at; or NULL. */
json_t *
kp_oldrd_parse(struct kp_oldrd *r, struct kp_oldrec *rec)
{
	json_error_t jerr;

	if (rec->obj != NULL)
		return rec->obj;
	r->obj = json_loadb(rec->line, rec->len, JSON_REJECT_DUPLICATES, &jerr);
	if (r->obj == NULL) {
		kp_oldrd_reject(r, "not JSON: %s", jerr.text);
		return NULL;
	}
	return rec->obj = r->obj;
}

/*
 * A flat scan of one record: the members of the top-level object as spans
 * of the line, without building JSON values.  Strings are checked for
 * valid escapes, valid UTF-8 and no control characters, numbers for JSON's
 * grammar, literals for their letters, and nested values are skipped over
 * (and checked likewise).
 * Returns 0, or -1 if the line is not such an object.
 */
static const char *
skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

/*
 * The length of the UTF-8 sequence at p, 0 if it is not valid; the line
 * may end without a NUL, so its last bytes are read from a padded copy.
 */
static size_t
utf8_len(const char *p, const char *end)
{
	unsigned char tail[5] = { 0 };

	if (end - p >= 4)
		return kp_utf8_len((const unsigned char *)p);
	memcpy(tail, p, (size_t)(end - p));
	return kp_utf8_len(tail);
}

static const char *
skip_string(const char *p, const char *end)
{
	size_t n;

	for (p++; p < end; p++) {
		if (*p == '"')
			return p + 1;
		if ((unsigned char)*p < 0x20)
			return NULL;
		if ((unsigned char)*p >= 0x80) {
			if ((n = utf8_len(p, end)) == 0)
				return NULL;	/* JSON text is UTF-8 */
			p += n - 1;
			continue;
		}
		if (*p == '\\') {
			if (++p == end)
				return NULL;
			if (*p == 'u') {
				if (end - p < 5 || !isxdigit((unsigned char)p[1]) ||
				    !isxdigit((unsigned char)p[2]) ||
				    !isxdigit((unsigned char)p[3]) ||
				    !isxdigit((unsigned char)p[4]))
					return NULL;
				p += 4;
			} else if (strchr("\"\\/bfnrt", *p) == NULL || *p == '\0')
				return NULL;
		}
	}
	return NULL;
}

static const char *
skip_digits(const char *p, const char *end)
{
	const char *q = p;

	while (p < end && *p >= '0' && *p <= '9')
		p++;
	return p > q ? p : NULL;
}

/* A number as JSON's grammar has it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static const char *
skip_number(const char *p, const char *end)
{
	if (p < end && *p == '-')
		p++;
	if (p < end && *p == '0')
		p++;
	else if ((p = skip_digits(p, end)) == NULL)
		return NULL;
	if (p < end && *p == '.' && (p = skip_digits(p + 1, end)) == NULL)
		return NULL;
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		p = skip_digits(p, end);
	}
	return p;
}

static const char *
skip_value(const char *p, const char *end, int depth)
{
	const char *q;

	if (p == end || depth > 32)
		return NULL;
	switch (*p) {
	case '"':
		return skip_string(p, end);
	case '{':
	case '[':
		q = p;
		p = skip_ws(p + 1, end);
		if (p < end && *p == (*q == '{' ? '}' : ']'))
			return p + 1;
		for (;;) {
			if (*q == '{') {
				if (p == end || *p != '"' ||
				    (p = skip_string(p, end)) == NULL)
					return NULL;
				p = skip_ws(p, end);
				if (p == end || *p++ != ':')
					return NULL;
				p = skip_ws(p, end);
			}
			if ((p = skip_value(p, end, depth + 1)) == NULL)
				return NULL;
			p = skip_ws(p, end);
			if (p == end)
				return NULL;
			if (*p == (*q == '{' ? '}' : ']'))
				return p + 1;
			if (*p++ != ',')
				return NULL;
			p = skip_ws(p, end);
		}
	case 't':
		return end - p >= 4 && memcmp(p, "true", 4) == 0 ? p + 4 : NULL;
	case 'f':
		return end - p >= 5 && memcmp(p, "false", 5) == 0 ? p + 5 : NULL;
	case 'n':
		return end - p >= 4 && memcmp(p, "null", 4) == 0 ? p + 4 : NULL;
	default:
		return skip_number(p, end);
	}
}

int
kp_flat_scan(const char *line, size_t len, struct kp_flat *f)
{
	const char *p = line, *end = line + len, *k;
	size_t i;

	f->n = 0;
	p = skip_ws(p, end);
	if (p == end || *p++ != '{')
		return -1;
	p = skip_ws(p, end);
	if (p < end && *p == '}')
		return skip_ws(p + 1, end) == end ? 0 : -1;
	for (;;) {
		if (p == end || *p != '"' || (k = skip_string(p, end)) == NULL)
			return -1;
		if (f->n == KP_FLAT_MAX)
			return -1;
		f->key[f->n] = p + 1;
		f->keylen[f->n] = (size_t)(k - p - 2);
		for (i = 0; i < f->n; i++)
			if (f->keylen[i] == f->keylen[f->n] &&
			    memcmp(f->key[i], p + 1, f->keylen[i]) == 0)
				return -1;	/* a duplicate key */
		p = skip_ws(k, end);
		if (p == end || *p++ != ':')
			return -1;
		p = skip_ws(p, end);
		f->val[f->n] = p;
		if ((p = skip_value(p, end, 0)) == NULL)
			return -1;
		f->vallen[f->n] = (size_t)(p - f->val[f->n]);
		f->n++;
		p = skip_ws(p, end);
		if (p == end)
			return -1;
		if (*p == '}')
			return skip_ws(p + 1, end) == end ? 0 : -1;
		if (*p++ != ',')
			return -1;
		p = skip_ws(p, end);
	}
}

/*
 * The number of members of {head text}, or -1 if it is not one object as
 * kp_flat_scan reads it: a check of JSON text stored to be written again,
 * such as members in a state file.
 */
int
kp_flat_text_members(const char *head, const char *text, size_t len)
{
	struct kp_flat f;
	char *buf;
	int n;

	if (asprintf(&buf, "{%s%.*s}", head, (int)len, text) < 0)
		err(KP_EXIT_FAILURE, "asprintf");
	n = strlen(buf) == strlen(head) + len + 2 &&
	    kp_flat_scan(buf, strlen(buf), &f) == 0 ? (int)f.n : -1;
	free(buf);
	return n;
}

/* The index of member key, or -1. */
int
kp_flat_find(const struct kp_flat *f, const char *key)
{
	size_t i, n = strlen(key);

	for (i = 0; i < f->n; i++)
		if (f->keylen[i] == n && memcmp(f->key[i], key, n) == 0)
			return (int)i;
	return -1;
}

/* Returns 1 and sets *val when member key is a JSON integer in range. */
int
kp_flat_int(const struct kp_flat *f, const char *key, int64_t *val)
{
	int i = kp_flat_find(f, key);
	const char *p, *end;
	int neg = 0;
	uint64_t v = 0;

	if (i < 0)
		return 0;
	p = f->val[i];
	end = p + f->vallen[i];
	if (p < end && *p == '-')
		neg = 1, p++;
	if (p == end || (*p == '0' && end - p > 1))
		return 0;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9' || v > (UINT64_C(1) << 63) / 10)
			return 0;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v > (uint64_t)INT64_MAX + (uint64_t)neg)
		return 0;
	*val = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 1;
}

/* Member key as a JSON number, integer or not; NAN if it is none. */
double
kp_flat_number(const struct kp_flat *f, const char *key)
{
	int i = kp_flat_find(f, key);
	char buf[64], *end;
	double d;

	if (i < 0 || f->vallen[i] == 0 || f->vallen[i] >= sizeof(buf) ||
	    strchr("-0123456789", f->val[i][0]) == NULL)
		return NAN;
	memcpy(buf, f->val[i], f->vallen[i]);
	buf[f->vallen[i]] = '\0';
	d = strtod(buf, &end);
	return *end == '\0' ? d : NAN;
}

/*
 * The raw JSON text of string member key, quotes included, in *len; NULL
 * if it is absent or not a string.
 */
const char *
kp_flat_str(const struct kp_flat *f, const char *key, size_t *len)
{
	int i = kp_flat_find(f, key);

	if (i < 0 || f->val[i][0] != '"')
		return NULL;
	*len = f->vallen[i];
	return f->val[i];
}

/* The dt_us of an interval record; 0 when it has none or it is not an integer. */
int64_t
kp_oldrec_dt_us(const struct kp_oldrec *rec)
{
	struct kp_flat f;
	int64_t dt_us = 0;

	if (kp_flat_scan(rec->line, rec->len, &f) == 0)
		kp_flat_int(&f, "dt_us", &dt_us);
	return dt_us;
}
