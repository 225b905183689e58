/*
 * libFuzzer harness for the reader of a JSON file a value at a time
 * (kp_js_* in lib/jsonfile.c, which loads state files entry by entry),
 * against jansson reading the same bytes whole.  Any bytes after the
 * first two are the file; those two choose how many bytes a read asks
 * for and how long a piece is parsed whole, a few each, so that values
 * cross reads and containers are checked by parts.  For a file that
 * begins with an object or an array, kp_js_check and kp_js_end must
 * decide as json_loadb does, but for a NUL byte: jansson passes over one
 * between tokens, which no writer of a state file puts there, and the
 * reader refuses such a file (kp-attribute(1), Memory): where there is
 * one, only what the reader takes must be JSON.  For a file that is
 * valid, its entries read one
 * at a time with kp_js_each and kp_js_value, set in order into a new
 * object or array (a key given twice keeps its last value, as jansson's
 * tree does), must equal jansson's tree.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kp.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

/* kp_js_each's callback: the entry's value, parsed alone, into arg. */
static int
take(struct kp_js *s, const char *key, void *arg)
{
	json_t *v = kp_js_value(s);

	if (v == NULL)
		return -1;
	if (key != NULL)
		return json_object_set_new(arg, key, v);
	return json_array_append_new(arg, v);
}

/* A reader of fd from its start, its reads and pieces as the seed says. */
static void
open_scan(struct kp_js *s, int fd, const uint8_t *seed)
{
	kp_js_init(s, fd, 0);
	s->block = 1 + seed[0] % 16;
	s->piece = 1 + seed[1] % 64;
}

/* The first byte of data that is not white space, or 0. */
static int
first_token(const uint8_t *data, size_t size)
{
	size_t i;

	for (i = 0; i < size; i++)
		if (strchr(" \t\n\r", data[i]) == NULL || data[i] == '\0')
			return data[i];
	return 0;
}

/* The entries read one at a time, as a tree. */
static json_t *
rebuilt(int fd, const uint8_t *seed, const json_t *whole)
{
	struct kp_js s;
	json_t *tree = json_is_object(whole) ? json_object() : json_array();

	open_scan(&s, fd, seed);
	CHECK(kp_js_each(&s, take, tree) == 0 && kp_js_end(&s) == 0);
	kp_js_free(&s);
	return tree;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t jerr;
	struct kp_js s;
	json_t *whole, *tree;
	int fd, ok, c;

	if (size < 2)
		return 0;
	if ((fd = memfd_create("jsonscan", 0)) < 0)
		abort();
	CHECK(write(fd, data + 2, size - 2) == (ssize_t)(size - 2));
	whole = json_loadb((const char *)data + 2, size - 2, 0, &jerr);
	open_scan(&s, fd, data);
	ok = kp_js_check(&s) == 0 && kp_js_end(&s) == 0;
	kp_js_free(&s);
	c = first_token(data + 2, size - 2);
	if (memchr(data + 2, '\0', size - 2) != NULL)
		CHECK(!ok || whole != NULL);
	else if (c == '{' || c == '[')
		CHECK(ok == (whole != NULL));
	if (ok && whole != NULL) {
		tree = rebuilt(fd, data, whole);
		CHECK(json_equal(tree, whole));
		json_decref(tree);
	}
	json_decref(whole);
	close(fd);
	return 0;
}
