/*
 * The one reader of a record stream, kp-records(5) version 1.x: every stage
 * that reads a stream reads it here, so that every stage takes the same
 * decision on the same line.  A line is read into a buffer, copied once,
 * and scanned in that copy: its strings are unescaped in place, and each
 * member becomes a typed span of the line.  kp_reader_read decides and
 * says why; kp_reader_next also reports, for the stages.
 */
#include <err.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kp.h"

#define STR(x) STR_(x)
#define STR_(x) #x

struct span {
	const char *s;
	size_t n;
};

/*
 * What the records taken say of the ordering (kp-records(5), "Rules every
 * reader applies").
 */
struct order {
	int64_t last_ended;	/* the last interval ended, or -1 */
	int64_t domain_ended;	/* the same since the last header, or -1 */
	int64_t open_seq;	/* the interval whose records are open, or -1 */
	int after_header;	/* the next record may go back to seq 1 */
	int taken;		/* a record has been taken */
};

struct kp_reader {
	int fd;			/* -1: a buffer given whole */
	const char *name;
	long lineno;
	int errors;
	int fatal;
	const char *why;	/* the rule the last line broke */
	char whybuf[160];
	void (*wait)(int fd, void *arg);
	void *wait_arg;
	char *buf;		/* input, from start to end */
	size_t cap, start, end;
	int eof, overlong;
	char *work;		/* the line being scanned, unescaped in place */
	size_t workcap;
	const char *line;	/* the line as read, for raw spans */
	struct kp_field *f;	/* the record's members */
	size_t nf, fcap;
	struct span *keys;	/* keys of the nested objects being scanned */
	size_t nkeys, keyscap;
	struct order order;	/* as the records taken left it */
	struct order before;	/* as it was before the last one taken */
	int can_untake;		/* that one is the record just read */
	int end_told;		/* the stream's end inside an interval */
};

static const char *scan_value(struct kp_reader *r, char **pp, int depth,
    struct kp_field *f);

/*
 * A stage typed alone waits on the terminal for records nobody will type:
 * it says what it wants, and lets the first Ctrl-C end it, since no
 * producer is there to end the stream.
 */
static void
terminal_input(int fd)
{
	if (fd < 0 || !isatty(fd))
		return;
	fprintf(stderr, "%s: reading kp records from the terminal; pipe "
	    "rapl-read's output in, or see %s(1)\n",
	    program_invocation_short_name, program_invocation_short_name);
	kp_signals_at_once();
}

struct kp_reader *
kp_reader_open(int fd, const char *name)
{
	struct kp_reader *r = kp_calloc(1, sizeof(*r));

	terminal_input(fd);
	r->fd = fd;
	r->name = name;
	r->order.last_ended = r->order.domain_ended = r->order.open_seq = -1;
	return r;
}

/* A whole input in memory, for a harness: read as a file would be. */
struct kp_reader *
kp_reader_open_mem(const char *buf, size_t len, const char *name)
{
	struct kp_reader *r = kp_reader_open(-1, name);

	r->cap = len + 1;
	r->buf = kp_malloc(r->cap);
	memcpy(r->buf, buf, len);
	r->end = len;
	r->eof = 1;
	return r;
}

/* Called before each read(2): kp-fmt's live view polls its terminal. */
void
kp_reader_set_wait(struct kp_reader *r, void (*wait)(int fd, void *arg),
    void *arg)
{
	r->wait = wait;
	r->wait_arg = arg;
}

void
kp_reader_close(struct kp_reader *r)
{
	free(r->buf);
	free(r->work);
	free(r->f);
	free(r->keys);
	free(r);
}

/*
 * Reading lines.  A line is NUL-terminated in place; one longer than
 * KP_LINE_MAX is skipped to its newline and reported.
 */
static void
fill(struct kp_reader *r)
{
	ssize_t n;

	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	if (r->end + 1 >= r->cap) {
		r->cap = r->cap ? r->cap * 2 : 1 << 16;
		r->buf = kp_reallocarray(r->buf, r->cap, 1);
	}
	if (r->wait != NULL)
		r->wait(r->fd, r->wait_arg);
	while ((n = read(r->fd, r->buf + r->end, r->cap - r->end - 1)) < 0)
		if (errno != EINTR)
			err(KP_EXIT_FAILURE, "%s", r->name);
	if (n == 0)
		r->eof = 1;
	r->end += (size_t)n;
}

/* The next line, or NULL at the end of the input. */
static char *
next_line(struct kp_reader *r, size_t *len)
{
	char *line, *nl;

	for (;;) {
		/* No buffer before the first read: NULL + 0 is undefined. */
		line = r->buf != NULL ? r->buf + r->start : NULL;
		nl = r->end > r->start ? memchr(line, '\n', r->end - r->start) :
		    NULL;
		if (nl == NULL && r->end - r->start > KP_LINE_MAX) {
			r->overlong = 1;	/* drop what is read so far */
			r->start = r->end;
			continue;
		}
		if (nl != NULL || (r->eof && r->end > r->start)) {
			if (nl == NULL)
				nl = r->buf + r->end;
			*nl = '\0';
			*len = (size_t)(nl - line);
			r->start = nl - r->buf + (nl < r->buf + r->end);
			/* Read whole at once, as a big read of a file can. */
			if (*len > KP_LINE_MAX)
				r->overlong = 1;
			return line;
		}
		if (r->eof)
			return r->overlong ? (*len = 0, r->buf + r->start) : NULL;
		fill(r);
	}
}

/* Scanning JSON text (RFC 8259) in the work copy of a line. */
static char *
skip_ws(char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static int
hex4(const char *p, uint32_t *v)
{
	int i;

	*v = 0;
	for (i = 0; i < 4; i++, p++) {
		*v <<= 4;
		if (*p >= '0' && *p <= '9')
			*v |= (uint32_t)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			*v |= (uint32_t)(*p - 'a' + 10);
		else if (*p >= 'A' && *p <= 'F')
			*v |= (uint32_t)(*p - 'A' + 10);
		else
			return 0;
	}
	return 1;
}

static char *
put_code(char *o, uint32_t c)
{
	if (c < 0x80)
		*o++ = (char)c;
	else if (c < 0x800) {
		*o++ = (char)(0xc0 | c >> 6);
		*o++ = (char)(0x80 | (c & 0x3f));
	} else if (c < 0x10000) {
		*o++ = (char)(0xe0 | c >> 12);
		*o++ = (char)(0x80 | (c >> 6 & 0x3f));
		*o++ = (char)(0x80 | (c & 0x3f));
	} else {
		*o++ = (char)(0xf0 | c >> 18);
		*o++ = (char)(0x80 | (c >> 12 & 0x3f));
		*o++ = (char)(0x80 | (c >> 6 & 0x3f));
		*o++ = (char)(0x80 | (c & 0x3f));
	}
	return o;
}

/*
 * A \u escape at p (its backslash), with its low surrogate if it needs
 * one, as a code point in *c; the number of bytes it takes, or 0 (why set)
 * for a bad one.  \u0000 is refused: no C string could hold it.
 */
static size_t
unicode_escape(const char *p, uint32_t *c, const char **why)
{
	uint32_t lo;

	*why = "a string holds a bad \\u escape";
	if (!hex4(p + 2, c))
		return 0;
	if (*c == 0) {
		*why = "a string holds \\u0000";
		return 0;
	}
	if (*c >= 0xdc00 && *c <= 0xdfff)
		return 0;
	if (*c < 0xd800 || *c > 0xdbff)
		return 6;
	if (p[6] != '\\' || p[7] != 'u' || !hex4(p + 8, &lo) ||
	    lo < 0xdc00 || lo > 0xdfff)
		return 0;
	*c = 0x10000 + ((*c - 0xd800) << 10) + (lo - 0xdc00);
	return 12;
}

/* The escape at p (its backslash) written at o; 0 if it is not one. */
static size_t
unescape(const char *p, char **o, const char **why)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *e;
	uint32_t c;
	size_t n;

	if (p[1] == 'u') {
		if ((n = unicode_escape(p, &c, why)) > 0)
			*o = put_code(*o, c);
		return n;
	}
	*why = "a string holds a bad escape";
	if (p[1] == '\0' || (e = strchr(from, p[1])) == NULL)
		return 0;
	*(*o)++ = to[e - from];
	return 2;
}

/*
 * The string at *pp (its opening quote), unescaped in place into a
 * NUL-terminated *str of *len bytes; *pp moves past it.  NULL, or why not.
 */
static const char *
scan_string(char **pp, const char **str, size_t *len)
{
	char *p = *pp + 1, *o = p, *start = p;
	const char *why = "a string is not closed";
	size_t n;

	for (;;) {
		while ((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x80 &&
		    *p != '"' && *p != '\\')
			*o++ = *p++;
		if (*p == '"')
			break;
		if (*p == '\\') {
			if ((n = unescape(p, &o, &why)) == 0)
				return why;
			p += n;
		} else if ((unsigned char)*p >= 0x80) {
			if ((n = kp_utf8_len((const unsigned char *)p)) == 0)
				return "a string is not valid UTF-8";
			memmove(o, p, n);
			o += n, p += n;
		} else
			return *p == '\0' ? why :
			    "a string holds a control character";
	}
	*o = '\0';
	*str = start;
	*len = (size_t)(o - start);
	*pp = p + 1;
	return NULL;
}

static char *
skip_digits(char *p)
{
	while (*p >= '0' && *p <= '9')
		p++;
	return p;
}

/* An integer's value, if it fits int64_t; else it stays a real. */
/* A number as JSON writes it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static const char *
scan_number(char **pp, struct kp_field *f)
{
	char *p = *pp, *q = p + (*p == '-'), *int_end;

	if (*q == '0')
		q++;
	else if (*q >= '1' && *q <= '9')
		q = skip_digits(q);
	else
		return "not JSON: a value is expected";
	int_end = q;
	if (*q == '.' && (q = skip_digits(q + 1)) == int_end + 1)
		return "not JSON: a digit must follow '.'";
	if (*q == 'e' || *q == 'E') {
		char *e = q + 1 + (q[1] == '+' || q[1] == '-');

		if ((q = skip_digits(e)) == e)
			return "not JSON: an exponent needs digits";
	}
	f->kind = KP_V_REAL;
	if (q == int_end && kp_integer_value(p, q, &f->i))
		f->kind = KP_V_INT;
	else if ((q != int_end || int_end - p > 300) && isinf(strtod(p, NULL)))
		return "a number is out of range";
	*pp = q;
	return NULL;
}

static const char *
scan_literal(char **pp, struct kp_field *f)
{
	static const struct {
		const char *text;
		size_t len;
		int kind;
	} lit[] = {
		{ "true", 4, KP_V_TRUE },
		{ "false", 5, KP_V_FALSE },
		{ "null", 4, KP_V_NULL },
	};
	size_t i;

	for (i = 0; i < sizeof(lit) / sizeof(lit[0]); i++)
		if (strncmp(*pp, lit[i].text, lit[i].len) == 0) {
			f->kind = lit[i].kind;
			*pp += lit[i].len;
			return NULL;
		}
	return scan_number(pp, f);
}

static int
span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	int c = memcmp(x->s, y->s, x->n < y->n ? x->n : y->n);

	return c != 0 ? c : (x->n > y->n) - (x->n < y->n);
}

/*
 * Whether n keys hold one twice.  A record has a dozen or so, compared
 * pairwise; more are sorted, so that thousands cost n log n.
 */
static int
has_duplicate(struct span *k, size_t n)
{
	size_t i, j;

	if (n > 16) {
		qsort(k, n, sizeof(*k), span_cmp);
		for (i = 1; i < n; i++)
			if (span_cmp(&k[i - 1], &k[i]) == 0)
				return 1;
		return 0;
	}
	for (i = 1; i < n; i++)
		for (j = 0; j < i; j++)
			if (k[i].n == k[j].n && memcmp(k[i].s, k[j].s, k[i].n) == 0)
				return 1;
	return 0;
}

static void
push_key(struct kp_reader *r, const char *s, size_t n)
{
	if (r->nkeys == r->keyscap) {
		r->keyscap = r->keyscap ? r->keyscap * 2 : 64;
		r->keys = kp_reallocarray(r->keys, r->keyscap,
		    sizeof(*r->keys));
	}
	r->keys[r->nkeys].s = s;
	r->keys[r->nkeys++].n = n;
}

/* One member's "key": at *pp, its key pushed for the duplicate check. */
static const char *
scan_key(char **pp, const char **key, size_t *len)
{
	const char *why;

	if (**pp != '"')
		return "not JSON: a member must start with a string key";
	if ((why = scan_string(pp, key, len)) != NULL)
		return why;
	*pp = skip_ws(*pp);
	if (*(*pp)++ != ':')
		return "not JSON: ':' must follow a key";
	*pp = skip_ws(*pp);
	return NULL;
}

/* What is wrong where a ',' or the end of an object or array must be. */
static const char *
separator_error(const char *p)
{
	return *p == '\0' ? "not JSON: the line ends inside the object" :
	    "not JSON: ',' or the end of an object or array is expected";
}

/* An object or array inside a record, checked as the record is. */
static const char *
scan_nested(struct kp_reader *r, char **pp, int depth)
{
	char close = **pp == '{' ? '}' : ']', *p = skip_ws(*pp + 1);
	size_t base = r->nkeys, n = 0, klen;
	struct kp_field f;
	const char *why, *key;

	if (depth > KP_DEPTH_MAX)
		return "nested deeper than " STR(KP_DEPTH_MAX) " levels";
	while (*p != close || n > 0) {
		if (n > 0 && *p++ != ',')
			return separator_error(p - 1);
		p = skip_ws(p);
		if (close == '}') {
			if ((why = scan_key(&p, &key, &klen)) != NULL)
				return why;
			push_key(r, key, klen);
		}
		if ((why = scan_value(r, &p, depth, &f)) != NULL)
			return why;
		p = skip_ws(p);
		if (*p == close)
			break;
		n++;
	}
	if (r->nkeys - base > 1 && has_duplicate(r->keys + base,
	    r->nkeys - base))
		return "an object holds a key twice";
	r->nkeys = base;
	*pp = p + 1;
	return NULL;
}

/* A value at *pp into f: its kind, and its string or integer. */
static const char *
scan_value(struct kp_reader *r, char **pp, int depth, struct kp_field *f)
{
	char *start = *pp;
	const char *why;

	f->str = NULL;
	if (**pp == '"') {
		f->kind = KP_V_STR;
		why = scan_string(pp, &f->str, &f->len);
	} else if (**pp == '{' || **pp == '[') {
		f->kind = **pp == '{' ? KP_V_OBJECT : KP_V_ARRAY;
		why = scan_nested(r, pp, depth + 1);
	} else
		why = scan_literal(pp, f);
	f->raw = r->line + (start - r->work);
	f->rawlen = (size_t)(*pp - start);
	return why;
}

static struct kp_field *
new_field(struct kp_reader *r)
{
	if (r->nf == r->fcap) {
		r->fcap = r->fcap ? r->fcap * 2 : 32;
		r->f = kp_reallocarray(r->f, r->fcap, sizeof(*r->f));
	}
	return &r->f[r->nf++];
}

static const char not_object[] = "not a JSON object";
/*
 * Every kp stream begins with a record, a JSON object: a line that is not
 * one before any record is taken is text of another kind (ls -l piped in),
 * which would bring a complaint per line; it is told once, and nothing
 * more is read.  Taken, not read: a line rejected, or a record refused, is
 * as if it had not been read, as it is for the stage after.
 */
static const char not_records[] = "not kp records: not a JSON object, and "
    "no record before it (kp-records(5))";

/* The top-level members of the object at *pp into r->f. */
static const char *
scan_members(struct kp_reader *r, char *p, const char *end)
{
	struct kp_field *f;
	const char *why;

	if (*(p = skip_ws(p)) != '{')
		return not_object;
	p = skip_ws(p + 1);
	while (*p != '}') {
		if (r->nf > 0 && *p++ != ',')
			return separator_error(p - 1);
		if (r->nf == KP_MEMBERS_MAX)
			return "more than " STR(KP_MEMBERS_MAX) " members";
		p = skip_ws(p);
		f = new_field(r);
		if ((why = scan_key(&p, &f->key, &f->keylen)) != NULL ||
		    (why = scan_value(r, &p, 1, f)) != NULL)
			return why;
		p = skip_ws(p);
	}
	if (skip_ws(p + 1) != end)
		return *skip_ws(p + 1) == '\0' && skip_ws(p + 1) < end ?
		    "a line holds a NUL byte" : "not JSON: text after the object";
	return NULL;
}

static int
duplicate_member(struct kp_reader *r)
{
	size_t i;

	r->nkeys = 0;
	for (i = 0; i < r->nf; i++)
		push_key(r, r->f[i].key, r->f[i].keylen);
	return has_duplicate(r->keys, r->nkeys);
}

/* Members of a record. */
static const struct kp_field *
find(const struct kp_field *f, size_t nf, const char *key)
{
	size_t i, n = strlen(key);

	for (i = 0; i < nf; i++)
		if (f[i].keylen == n && f[i].key[0] == key[0] &&
		    memcmp(f[i].key, key, n) == 0)
			return &f[i];
	return NULL;
}

const struct kp_field *
kp_rec_get(const struct kp_record *rec, const char *key)
{
	return find(rec->f, rec->nf, key);
}

int
kp_rec_int(const struct kp_record *rec, const char *key, int64_t *v)
{
	const struct kp_field *f = kp_rec_get(rec, key);

	if (f == NULL || f->kind != KP_V_INT)
		return 0;
	*v = f->i;
	return 1;
}

const char *
kp_rec_str(const struct kp_record *rec, const char *key)
{
	const struct kp_field *f = kp_rec_get(rec, key);

	return f != NULL && f->kind == KP_V_STR ? f->str : NULL;
}

/* Whether a record says that its process or group has ended. */
int
kp_rec_terminated(const struct kp_record *rec)
{
	const char *state = kp_rec_str(rec, "state");

	return state != NULL && strcmp(state, "terminated") == 0;
}

double
kp_rec_number(const struct kp_record *rec, const char *key)
{
	return kp_field_number(kp_rec_get(rec, key));
}

/*
 * The rules of kp-records(5) beyond JSON, for every record: each member
 * of the type that lib/fields.c gives its name, in every record type.
 */
static const char *
check_members(struct kp_reader *r)
{
	const struct kp_field *f;
	const char *want;
	size_t i, n;

	for (i = 0; i < r->nf; i++) {
		f = &r->f[i];
		if ((want = kp_field_wrong(f)) == NULL)
			continue;
		for (n = 0; n < f->keylen && n < 60; n++)
			if ((unsigned char)f->key[n] < 0x20 || f->key[n] == 0x7f)
				break;
		snprintf(r->whybuf, sizeof(r->whybuf), "\"%.*s\" is not %s",
		    (int)n, f->key, want);
		return r->whybuf;
	}
	return NULL;
}

/*
 * A zone that kp-records(5) 1.2 renames is read by its 1.2 name, value and
 * text as written alike, so that every stage that reads it, and one that
 * copies its text, takes it for the zone it is now.  A record passed on
 * keeps its line.
 */
static void
zone_1_2(struct kp_reader *r)
{
	const struct kp_field *zone = find(r->f, r->nf, "zone");
	struct kp_field *f;
	const char *name, *json;
	size_t len;

	if (zone == NULL)
		return;
	f = &r->f[zone - r->f];
	len = f->len;
	if ((name = kp_zone_1_2(f->str, &len, &json)) == NULL)
		return;
	f->str = name;
	f->len = len;
	f->raw = json;
	f->rawlen = strlen(json);
}

/*
 * The members that a record of each type must have (kp-records(5)): what
 * a stage reads of it to take its decision.  They are checked here, before
 * the record moves the ordering, so that every stage takes the same
 * decision on the line, and a stage after, which never sees a line
 * rejected, is left with the same ordering.  A member, where present, is
 * already of its type (lib/fields.c): what is checked here is that it is
 * there, as an exited record of a cgroup's counter leaves out ppid and
 * comm, which it cannot know, but never its count.
 */
#define IF_ZONED 0x1		/* only in a record that has a zone */
#define POSITIVE 0x2		/* and not 0, as an interval's length */
#define NEEDS_MAX 3
#define ENERGY { "zone", "a string", 0 }, { "energy_uj", "an integer", 0 }
struct need {
	const char *key;	/* NULL: the type's list ends */
	const char *what;	/* its type, for the message */
	int flags;		/* IF_ZONED, POSITIVE */
};
static const struct {
	const char *type;
	struct need need[NEEDS_MAX];
} needs[] = {
	{ "interval", { { "dt_us", "a positive integer", POSITIVE } } },
	{ "energy", { ENERGY } },
	{ "cpu", { { "cpu_us", "an integer", 0 },
	    { "usage_ratio", "a number from 0 to 1", 0 } } },
	/*
	 * A proc or process record without a pid, as kp-fmt --summary's
	 * other row, which folds many processes, is no process that a stage
	 * can hold: one that holds processes refuses it on its own.
	 */
	{ "proc", { { "cpu_us", "an integer", 0 } } },
	/* With a zone, as kp-attribute writes it, it has its energy. */
	{ "exited", { { "count", "a non-negative integer", 0 },
	    { "cpu_us", "an integer", 0 },
	    { "energy_uj", "an integer", IF_ZONED } } },
	{ "node", { ENERGY } },
	{ "process", { ENERGY } },
	{ "unattributed", { ENERGY } },
	{ "container", { ENERGY } },
	{ "pod", { ENERGY } },
	{ "vm", { ENERGY } },
	{ "unit", { ENERGY } },
	{ "group", { ENERGY } },
	{ "host", { ENERGY } },
};

/* Present; its type, where present, check_members has checked. */
static int
has_need(const struct kp_record *rec, const struct need *n)
{
	const struct kp_field *f = kp_rec_get(rec, n->key);

	return f != NULL && (!(n->flags & POSITIVE) || f->i > 0);
}

static const char *
why_need(struct kp_reader *r, const struct kp_record *rec,
    const struct need *n)
{
	snprintf(r->whybuf, sizeof(r->whybuf), "%s record %swithout %s \"%s\"",
	    rec->type, n->flags & IF_ZONED ? "with a \"zone\" but " : "",
	    n->what, n->key);
	return r->whybuf;
}

static const char *
check_needs(struct kp_reader *r, const struct kp_record *rec)
{
	const struct need *n;
	size_t i;

	for (i = 0; i < sizeof(needs) / sizeof(needs[0]); i++)
		if (strcmp(needs[i].type, rec->type) == 0)
			break;
	if (i == sizeof(needs) / sizeof(needs[0]))
		return NULL;
	for (n = needs[i].need; n < needs[i].need + NEEDS_MAX &&
	    n->key != NULL; n++)
		if ((!(n->flags & IF_ZONED) || kp_rec_get(rec, "zone") != NULL) &&
		    !has_need(rec, n))
			return why_need(r, rec, n);
	return NULL;
}

/* A header of another major version: nothing after it can be read. */
static const char *
check_header(struct kp_reader *r, const struct kp_record *rec)
{
	const char *v = kp_rec_str(rec, "version"), *p;

	if (rec->seq != 0)
		return "a header has seq 0";
	r->fatal = 1;
	if (v == NULL || (p = skip_digits((char *)v)) == v || *p != '.' ||
	    *skip_digits((char *)p + 1) != '\0' || p[1] == '\0')
		return "header without a valid \"version\"";
	if (strtol(v, NULL, 10) != KP_PROTO_MAJOR || p - v > 9) {
		snprintf(r->whybuf, sizeof(r->whybuf), "unsupported "
		    "kp-records version %.20s (this build reads %d.x)", v,
		    KP_PROTO_MAJOR);
		return r->whybuf;
	}
	r->fatal = 0;
	return NULL;
}

/*
 * Ordering and replays (kp-records(5), "Rules every reader applies"): the
 * records of an interval come before its interval record, intervals end
 * in increasing seq, and seq goes back only right after a header, and
 * only to 1.  Nor does it leap more than KP_SEQ_AHEAD_MAX past the last
 * interval ended since the header: one corrupt seq would end the open
 * interval and make every later record a disorder.  A line is checked
 * here; only a record taken moves the ordering.
 */
static const char *
check_order(struct kp_reader *r, const struct kp_record *rec)
{
	const struct order *o = &r->order;
	long long seq = rec->seq, open = o->open_seq;
	long long ended = o->after_header && seq == 1 ? 0 : o->last_ended;

	if (o->domain_ended >= 0 && seq - o->domain_ended > KP_SEQ_AHEAD_MAX)
		snprintf(r->whybuf, sizeof(r->whybuf), "seq %lld is more than "
		    "%d past interval %lld, the last ended: a corrupt seq", seq,
		    KP_SEQ_AHEAD_MAX, (long long)o->domain_ended);
	else if (seq <= ended && strcmp(rec->type, "interval") == 0)
		snprintf(r->whybuf, sizeof(r->whybuf), "interval %lld ends "
		    "after interval %lld: a replay or a disorder", seq, ended);
	else if (seq <= ended)
		snprintf(r->whybuf, sizeof(r->whybuf), "%.40s record of "
		    "interval %lld, which has ended: a replay or a disorder",
		    rec->type, seq);
	else if (open >= 0 && seq < open)
		snprintf(r->whybuf, sizeof(r->whybuf), "%.40s record of "
		    "interval %lld among records of interval %lld", rec->type,
		    seq, open);
	else
		return NULL;
	return r->whybuf;
}

/*
 * A record taken: it opens or ends its interval, and the first after a
 * header, of seq 1, is a fresh baseline.  One of a later interval than the
 * open one cuts that one off: the caller hears of it in cut_seq.  The
 * ordering before it is kept for a stage that refuses it.
 */
static void
take(struct kp_reader *r, struct kp_record *rec)
{
	struct order *o = &r->order;

	r->before = *o;
	r->can_untake = 1;
	o->taken = 1;
	rec->cut_seq = -1;
	if (o->after_header && rec->seq == 1)
		o->last_ended = 0;
	o->after_header = 0;
	if (strcmp(rec->type, "header") == 0) {
		rec->cut_seq = o->open_seq;
		o->open_seq = o->domain_ended = -1;
		o->after_header = 1;
		return;
	}
	if (o->open_seq >= 0 && rec->seq > o->open_seq)
		rec->cut_seq = o->open_seq;
	if (strcmp(rec->type, "interval") == 0) {
		o->last_ended = o->domain_ended = rec->seq;
		o->open_seq = -1;
	} else
		o->open_seq = rec->seq;
}

static int
is_type_name(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_");

	return n > 0 && n <= 32 && s[n] == '\0';
}

/* The rules of a line, in order; NULL when it is a record, in rec. */
static const char *
scan(struct kp_reader *r, const char *line, size_t len,
    struct kp_record *rec)
{
	const char *why;

	if (len + 1 > r->workcap) {
		r->workcap = len + 1 > 4096 ? len + 1 : 4096;
		free(r->work);
		r->work = kp_malloc(r->workcap);
	}
	memcpy(r->work, line, len + 1);
	r->line = line;
	r->nf = 0;
	r->nkeys = 0;
	if ((why = scan_members(r, r->work, r->work + len)) != NULL)
		return why;
	if (duplicate_member(r))
		return "an object holds a key twice";
	rec->f = r->f;
	rec->nf = r->nf;
	if ((rec->type = kp_rec_str(rec, "type")) == NULL)
		return "record without a string \"type\"";
	if (!is_type_name(rec->type))
		return "\"type\" is not a type name: 1 to 32 letters, digits, "
		    "'-' or '_'";
	if (!kp_rec_int(rec, "seq", &rec->seq) || rec->seq < 0)
		return "record without a non-negative integer \"seq\"";
	if ((why = check_members(r)) != NULL)
		return why;
	zone_1_2(r);
	if (strcmp(rec->type, "header") == 0)
		return check_header(r, rec);
	if ((why = check_needs(r, rec)) != NULL)
		return why;
	return check_order(r, rec);
}

static int
blank(const char *line, size_t len)
{
	return strspn(line, " \t\r") == len;
}

int
kp_reader_read(struct kp_reader *r, struct kp_record *rec)
{
	char *line;
	size_t len;

	r->can_untake = 0;
	do {
		if ((line = next_line(r, &len)) == NULL)
			return 0;
		r->lineno++;
		if (r->overlong) {
			r->overlong = 0;
			r->why = "a line longer than 16 MiB";
			return -1;
		}
	} while (blank(line, len));
	/* CRLF, and any more CRs before it: whitespace a stage drops. */
	while (line[len - 1] == '\r')
		line[--len] = '\0';
	rec->line = line;
	rec->len = len;
	rec->lineno = r->lineno;
	r->why = scan(r, line, len, rec);
	if (r->why == not_object && !r->order.taken) {
		r->fatal = 1;
		r->why = not_records;
	}
	if (r->why != NULL)
		return -1;
	take(r, rec);
	return 1;
}

const char *
kp_reader_why(const struct kp_reader *r)
{
	return r->why;
}

int
kp_reader_fatal(const struct kp_reader *r)
{
	return r->fatal;
}

/* prog: name:lineno: message, the form of every complaint about input. */
static void
warn_at(const char *name, long lineno, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: %s:%ld: ", program_invocation_short_name, name,
	    lineno);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

/*
 * The same for a complaint about input that a stage makes after reading,
 * such as a sum past 2^63-1 found at the end: lineno 0 names no line.
 */
void
kp_warn_line(const char *name, long lineno, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (lineno > 0)
		warn_at(name, lineno, fmt, ap);
	else {
		fprintf(stderr, "%s: %s: ", program_invocation_short_name,
		    name);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
}

void
kp_reader_reject(struct kp_reader *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	warn_at(r->name, r->lineno, fmt, ap);
	va_end(ap);
	r->errors++;
}

/*
 * A stage's own rule broken by the record just read, such as a sum past
 * 2^63-1: reported and counted as kp_reader_reject does, and the record
 * untaken, so that the ordering is as if the line had not been read, as
 * it is in the stages after, which never see it.  An interval that it cut
 * short was reported as it was read, and what the stage did of that
 * stands; the interval is open again, as it is after.
 */
void
kp_reader_refuse(struct kp_reader *r, const char *fmt, ...)
{
	va_list ap;

	if (r->can_untake)
		r->order = r->before;
	r->can_untake = 0;
	va_start(ap, fmt);
	warn_at(r->name, r->lineno, fmt, ap);
	va_end(ap);
	r->errors++;
}

/* The stages' loop: each bad line reported, counted and skipped. */
int
kp_reader_next(struct kp_reader *r, struct kp_record *rec)
{
	int n;

	while ((n = kp_reader_read(r, rec)) < 0) {
		kp_reader_reject(r, "%s", r->why);
		if (r->fatal)
			exit(KP_EXIT_DATAERR);
	}
	if (n > 0 && rec->cut_seq >= 0)
		kp_reader_reject(r, "interval %lld has no interval record",
		    (long long)rec->cut_seq);
	if (n == 0 && r->order.open_seq >= 0 && !r->end_told) {
		kp_reader_reject(r, "the stream ends inside interval %lld",
		    (long long)r->order.open_seq);
		r->end_told = 1;
	}
	return n;
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

/*
 * How many JSON members text holds, each written ,"key":value as a stage
 * writes them into a record, by the rules of a record; -1 if it is not
 * that.  For state files, which keep such parts of records.
 */
int
kp_members_count(const char *text)
{
	char *line = kp_asprintf("{\"type\":\"members\",\"seq\":1%s}", text);
	struct kp_reader *r = kp_reader_open_mem(line, strlen(line), "state");
	struct kp_record rec;
	int n = kp_reader_read(r, &rec) == 1 ? (int)rec.nf - 2 : -1;

	kp_reader_close(r);
	free(line);
	return n;
}
