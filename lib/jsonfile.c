/*
 * JSON files through a descriptor, in blocks.  jansson's json_loadfd
 * reads one byte per read(2), a million calls for a state file of a
 * megabyte, and json_dumpfd writes one token per write(2), 14,798 calls
 * for one of 41 KB.  Here a file is read in blocks and handed to
 * jansson's callback loader, which decides as json_loadfd would, and
 * written value by value (kp_jw_*).  The members a loader reads back
 * from such a file are read here too, each kind checked, absent or not.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kp.h"

struct blocks {
	int fd;
};

static size_t
next_block(void *buf, size_t len, void *arg)
{
	struct blocks *b = arg;
	ssize_t n;

	while ((n = read(b->fd, buf, len)) < 0 && errno == EINTR)
		;
	return n < 0 ? (size_t)-1 : (size_t)n;
}

/* The JSON text of fd to its end, or NULL as json_loadfd gives it. */
json_t *
kp_json_loadfd(int fd, json_error_t *jerr)
{
	struct blocks b = { fd };

	return json_load_callback(next_block, &b, 0, jerr);
}

static int
write_all(int fd, const char *s, size_t len)
{
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, s, len)) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		s += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * A JSON file written as text, value by value, gathered in 64 KiB writes:
 * a token per write(2) was thousands of calls, and a jansson tree of a
 * state, or its whole text, made first was many times the file, the state
 * of 650,000 processes (kp-attribute(1), Memory).  Numbers and strings
 * are the record writer's (kp_buf_i64, kp_buf_string), which loaders read
 * back as jansson wrote them.
 */
#define JW_BLOCK (1 << 16)

static void
jw_flush(struct kp_jw *w)
{
	if (!w->failed && write_all(w->fd, w->b.s, w->b.len) < 0) {
		w->failed = 1;
		w->saved_errno = errno;
	}
	w->b.len = 0;
}

/* The comma before a value or a key, unless it is the first or a key's. */
static void
jw_sep(struct kp_jw *w)
{
	if (w->after_key)
		w->after_key = 0;
	else if (w->more & (1u << w->depth))
		kp_buf_add(&w->b, ",", 1);
	w->more |= 1u << w->depth;
	if (w->b.len >= JW_BLOCK)
		jw_flush(w);
}

void
kp_jw_init(struct kp_jw *w, int fd)
{
	memset(w, 0, sizeof(*w));
	w->fd = fd;
}

/* '{' or '[' opens an object or an array, '}' or ']' closes it. */
void
kp_jw_open(struct kp_jw *w, char brace)
{
	jw_sep(w);
	kp_buf_add(&w->b, &brace, 1);
	w->depth++;
	w->more &= ~(1u << w->depth);
}

void
kp_jw_close(struct kp_jw *w, char brace)
{
	kp_buf_add(&w->b, &brace, 1);
	w->depth--;
}

void
kp_jw_key(struct kp_jw *w, const char *key)
{
	jw_sep(w);
	kp_buf_string(&w->b, key);
	kp_buf_add(&w->b, ":", 1);
	w->after_key = 1;
}

void
kp_jw_int(struct kp_jw *w, int64_t v)
{
	jw_sep(w);
	kp_buf_i64(&w->b, v);
}

void
kp_jw_string(struct kp_jw *w, const char *bytes)
{
	jw_sep(w);
	kp_buf_string(&w->b, bytes);
}

static int
jw_chunk(const char *s, size_t len, void *arg)
{
	struct kp_jw *w = arg;

	kp_buf_add(&w->b, s, len);
	if (w->b.len >= JW_BLOCK)
		jw_flush(w);
	return 0;
}

/* A value kept as a jansson tree, as small parts are: its keys sorted. */
void
kp_jw_json(struct kp_jw *w, const json_t *v)
{
	jw_sep(w);
	if (json_dump_callback(v, jw_chunk, w, JSON_COMPACT | JSON_SORT_KEYS |
	    JSON_ENCODE_ANY) < 0 && !w->failed) {
		w->failed = 1;
		w->saved_errno = ENOMEM;
	}
}

/* The line ended and written: 0, or -1 with errno; the buffer freed. */
int
kp_jw_finish(struct kp_jw *w)
{
	kp_buf_add(&w->b, "\n", 1);
	jw_flush(w);
	free(w->b.s);
	w->b.s = NULL;
	if (w->failed)
		errno = w->saved_errno;
	return w->failed ? -1 : 0;
}

/* The integer member key of obj, in *val; 0 if there is none. */
int
kp_json_int(json_t *obj, const char *key, int64_t *val)
{
	json_t *v = json_object_get(obj, key);

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
 * A JSON file read piece by piece (kp_js_*): each value read alone, as
 * jansson reads it inside the whole file, so that a state of 650,000
 * processes is never a tree, some 14 times its file, beside the stage's
 * own tables (kp-attribute(1), Memory).  Values are found by their
 * brackets, strings and their escapes skipped; what a value holds is
 * jansson's to judge.  Bytes are read with pread(2) from an offset, and
 * kept from the value being read (the mark) on, else dropped.
 */
#define JS_BLOCK (1 << 16)
#define JS_PIECE (1 << 16)	/* a larger container is checked by parts */
#define JS_DEPTH 2048		/* jansson's JSON_PARSER_MAX_DEPTH */
#define JS_NONE ((size_t)-1)	/* no mark */

void
kp_js_init(struct kp_js *s, int fd, off_t off)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->off = off;
	s->mark = JS_NONE;
	s->block = JS_BLOCK;
	s->piece = JS_PIECE;
}

void
kp_js_free(struct kp_js *s)
{
	free(s->buf);
	s->buf = NULL;
}

/*
 * The bytes before the mark, or before pos where there is none, dropped:
 * read, and no value being read needs them.
 */
static void
js_drop(struct kp_js *s)
{
	size_t n = s->mark != JS_NONE ? s->mark : s->pos;

	if (n == 0)
		return;		/* buf may be NULL: no pointer arithmetic */
	memmove(s->buf, s->buf + n, s->len - n);
	s->len -= n;
	s->pos -= n;
	if (s->mark != JS_NONE)
		s->mark = 0;
	s->off += (off_t)n;
}

/* More bytes after len, with room made first: -1 at EOF or an error. */
static int
js_refill(struct kp_js *s)
{
	ssize_t n;

	js_drop(s);
	if (s->cap - s->len < s->block) {
		s->cap = s->len + 2 * s->block > 2 * s->cap ?
		    s->len + 2 * s->block : 2 * s->cap;
		s->buf = kp_reallocarray(s->buf, s->cap, 1);
	}
	while ((n = pread(s->fd, s->buf + s->len, s->block,
	    s->off + (off_t)s->len)) < 0 && errno == EINTR)
		;
	if (n <= 0) {
		s->failed |= n < 0;
		return -1;
	}
	s->len += (size_t)n;
	return 0;
}

static int
js_byte(struct kp_js *s)
{
	if (s->pos == s->len && js_refill(s) < 0)
		return -1;
	return (unsigned char)s->buf[s->pos++];
}

/* The next byte that is not JSON's white space, read; -1 at EOF. */
static int
js_token(struct kp_js *s)
{
	int c;

	while ((c = js_byte(s)) == ' ' || c == '\t' || c == '\n' || c == '\r')
		;
	return c;
}

/* Past a string's closing quote, its opening one read: -1 at EOF. */
static int
js_past_string(struct kp_js *s)
{
	int c;

	while ((c = js_byte(s)) != '"')
		if (c < 0 || (c == '\\' && js_byte(s) < 0))
			return -1;
	return 0;
}

/* Past a number or a literal: up to the byte that ends it, left unread. */
static void
js_past_scalar(struct kp_js *s)
{
	int c;

	while ((c = js_byte(s)) >= 0 && strchr(",:]} \t\n\r\"{[", c) == NULL)
		;
	if (c >= 0)
		s->pos--;
}

/* d, if deeper than the deepest value of the piece yet. */
static void
js_deepest(struct kp_js *s, long d)
{
	if (s->piece_depth < d)
		s->piece_depth = d;
}

/*
 * Past the value whose first byte c was read: 0; 1 if it is an object or
 * an array longer than limit bytes from the mark (0: no limit), not read
 * to its end; -1 if it is no value or the file ends inside it.  How deep
 * it nests, as jansson counts (a value inside n others at n + 1), goes
 * to s->piece_depth.
 */
static int
js_past(struct kp_js *s, int c, size_t limit)
{
	long open = 0;

	s->piece_depth = 1;
	if (c < 0 || strchr(",:]}", c) != NULL)
		return -1;
	if (c == '"')
		return js_past_string(s);
	if (c != '{' && c != '[') {
		js_past_scalar(s);
		return 0;
	}
	do {
		if (c == '{' || c == '[') {
			js_deepest(s, ++open);
		} else if (c == '}' || c == ']') {
			if (--open == 0)
				return 0;
		} else if (c == '\0') {
			return -1;	/* jansson passes over it; no writer's */
		} else if (c == '"' || (c > ' ' && c != ',' && c != ':')) {
			js_deepest(s, open + 1);	/* a string, a scalar */
			if (c == '"' && js_past_string(s) < 0)
				return -1;
		}
		if (limit > 0 && s->pos - s->mark > limit)
			return 1;
	} while ((c = js_byte(s)) >= 0);
	return -1;
}

/* The file offset of the next value. */
off_t
kp_js_tell(struct kp_js *s)
{
	if (js_token(s) >= 0)
		s->pos--;
	return s->off + (off_t)s->pos;
}

/* The piece from the mark to pos, parsed; the mark let go. */
static json_t *
js_piece(struct kp_js *s)
{
	json_error_t jerr;
	json_t *v;

	v = json_loadb(s->buf + s->mark, s->pos - s->mark, JSON_DECODE_ANY,
	    &jerr);
	s->mark = JS_NONE;
	return v;
}

/* The next value, parsed alone (new), or NULL where it is not JSON. */
json_t *
kp_js_value(struct kp_js *s)
{
	int c = js_token(s);

	s->mark = s->pos - 1;
	if (js_past(s, c, 0) < 0) {
		s->mark = JS_NONE;
		return NULL;
	}
	return js_piece(s);
}

/* Past the next value, unparsed and unkept: 0, or -1 where it ends early. */
int
kp_js_skip(struct kp_js *s)
{
	return js_past(s, js_token(s), 0) < 0 ? -1 : 0;
}

/*
 * The members or elements of the object or array whose opening byte was
 * read: fn given each, key NULL in an array, s at its value, which fn
 * reads or skips.  0, or -1 where the syntax is broken or fn says -1.
 */
static int
js_entries_in(struct kp_js *s, int open, kp_js_entry *fn, void *arg)
{
	int close = open == '{' ? '}' : ']', c, r;
	json_t *key = NULL;

	if ((c = js_token(s)) == close)
		return 0;
	for (;;) {
		if (open == '{') {
			s->mark = s->pos - 1;
			if (c != '"' || js_past_string(s) < 0 ||
			    (key = js_piece(s)) == NULL || js_token(s) != ':') {
				s->mark = JS_NONE;
				json_decref(key);
				return -1;
			}
		} else if (c >= 0) {
			s->pos--;
		}
		r = fn(s, json_string_value(key), arg);
		json_decref(key);
		key = NULL;
		if (r < 0 || (c = js_token(s)) == close)
			return r < 0 ? -1 : 0;
		if (c != ',')
			return -1;
		c = js_token(s);
	}
}

/* The same, s->depth the number of objects and arrays s is inside. */
static int
js_entries(struct kp_js *s, int open, kp_js_entry *fn, void *arg)
{
	int r;

	s->depth++;
	r = js_entries_in(s, open, fn, arg);
	s->depth--;
	return r;
}

/* The same for the next value: -1 also if it is no object or array. */
int
kp_js_each(struct kp_js *s, kp_js_entry *fn, void *arg)
{
	int c = js_token(s);

	return c == '{' || c == '[' ? js_entries(s, c, fn, arg) : -1;
}

static int
js_check_entry(struct kp_js *s, const char *key, void *arg)
{
	(void)key;
	(void)arg;
	return kp_js_check(s);
}

/*
 * Whether the next value is JSON as jansson decides, in the file where it
 * stands: parsed alone where it is short, else its entries each checked
 * so, never more than a piece in memory; and no value nested deeper than
 * jansson reads, counted from the top of the file.  0, or -1.
 */
int
kp_js_check(struct kp_js *s)
{
	int c = js_token(s), r;
	json_t *v;

	s->mark = s->pos - 1;
	r = js_past(s, c, s->piece);
	if (r == 1 && s->depth < JS_DEPTH) {
		s->pos = s->mark + 1;
		s->mark = JS_NONE;
		return js_entries(s, c, js_check_entry, NULL);
	}
	if (r != 0 || s->depth + s->piece_depth > JS_DEPTH ||
	    (v = js_piece(s)) == NULL) {
		s->mark = JS_NONE;
		return -1;
	}
	json_decref(v);
	return 0;
}

/* Whether only white space is left, all of it read: 0, or -1. */
int
kp_js_end(struct kp_js *s)
{
	return js_token(s) < 0 && !s->failed ? 0 : -1;
}
