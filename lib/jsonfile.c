/*
 * A JSON file read whole from an open descriptor.  jansson's json_loadfd
 * reads it one byte per read(2): a state file of a megabyte cost a
 * million system calls.  Here it is read in blocks and handed to
 * jansson's callback loader, which decides as json_loadfd would.
 */
#include <errno.h>
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
