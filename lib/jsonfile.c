/*
 * JSON files through a descriptor, in blocks.  jansson's json_loadfd
 * reads one byte per read(2), a million calls for a state file of a
 * megabyte, and json_dumpfd writes one token per write(2), 14,798 calls
 * for one of 41 KB.  Here a file is read in blocks and handed to
 * jansson's callback loader, which decides as json_loadfd would, and
 * written from one string.  The members a loader reads back from such a
 * file are read here too, each kind checked, absent or not.
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
 * Text from json_dump_callback gathered in 64 KiB writes: a token per
 * write(2) was thousands of calls, and the whole text in memory first
 * was a state file's size again, the state of 650,000 processes.
 */
struct dump {
	int fd, failed;
	size_t n;
	char buf[1 << 16];
};

static int
dump_flush(struct dump *d)
{
	if (!d->failed && write_all(d->fd, d->buf, d->n) < 0)
		d->failed = 1;
	d->n = 0;
	return d->failed ? -1 : 0;
}

static int
dump_chunk(const char *s, size_t len, void *arg)
{
	struct dump *d = arg;
	size_t part;

	while (len > 0) {
		if (d->n == sizeof(d->buf) && dump_flush(d) < 0)
			return -1;
		part = len < sizeof(d->buf) - d->n ? len : sizeof(d->buf) - d->n;
		memcpy(d->buf + d->n, s, part);
		d->n += part;
		s += part;
		len -= part;
	}
	return 0;
}

/*
 * root to fd as one line of compact JSON, its keys sorted so that the
 * same data always gives the same bytes: 0, or -1 with errno.
 */
int
kp_json_dumpfd(const json_t *root, int fd)
{
	struct dump *d = kp_calloc(1, sizeof(*d));
	int ret;

	d->fd = fd;
	ret = json_dump_callback(root, dump_chunk, d,
	    JSON_COMPACT | JSON_SORT_KEYS) < 0 || d->failed ||
	    dump_chunk("\n", 1, d) < 0 || dump_flush(d) < 0 ? -1 : 0;
	if (ret < 0 && !d->failed)
		errno = ENOMEM;
	free(d);
	return ret;
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
