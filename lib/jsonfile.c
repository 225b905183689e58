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
