/*
 * One allocation wrapper family: running out of memory is a system
 * failure, reported once here, so no caller checks for NULL.
 */
#include <err.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kp.h"

void *
kp_malloc(size_t n)
{
	void *p;

	if ((p = malloc(n > 0 ? n : 1)) == NULL)
		err(KP_EXIT_FAILURE, "malloc");
	return p;
}

void *
kp_calloc(size_t n, size_t size)
{
	void *p;

	if ((p = calloc(n > 0 ? n : 1, size > 0 ? size : 1)) == NULL)
		err(KP_EXIT_FAILURE, "calloc");
	return p;
}

/* realloc of n elements of size bytes, refusing a product that overflows. */
void *
kp_reallocarray(void *p, size_t n, size_t size)
{
	if ((p = reallocarray(p, n > 0 ? n : 1, size > 0 ? size : 1)) == NULL)
		err(KP_EXIT_FAILURE, "realloc");
	return p;
}

char *
kp_strdup(const char *s)
{
	return kp_strndup(s, strlen(s));
}

/* The n bytes at s, which need no NUL, NUL-terminated. */
char *
kp_strndup(const char *s, size_t n)
{
	char *p = kp_malloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *
kp_asprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		err(KP_EXIT_FAILURE, "asprintf");
	return s;
}
