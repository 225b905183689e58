/*
 * UTF-8: what JSON text must be, and how bytes from the kernel (comm,
 * cgroup paths), which may be anything, are made so.
 */
#include <stdlib.h>
#include <string.h>

#include "kp.h"

/* Length of the valid UTF-8 sequence at s, or 0 if it is not one. */
size_t
kp_utf8_len(const unsigned char *s)
{
	size_t n, i;
	uint32_t c;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, c = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return n;
}

/*
 * The character at *s copied to p, or U+FFFD for a byte that begins no
 * valid UTF-8 sequence; both are moved past it.  At most 4 bytes, and 3
 * for each byte read.
 */
char *
kp_utf8_put(char *p, const unsigned char **s)
{
	size_t n;

	if ((n = kp_utf8_len(*s)) == 0) {
		(*s)++;
		memcpy(p, "\xef\xbf\xbd", 3);
		return p + 3;
	}
	memcpy(p, *s, n);
	*s += n;
	return p + n;
}

/*
 * A JSON string from bytes that came from the kernel (comm, cgroup paths)
 * and may be any bytes: each invalid UTF-8 byte becomes U+FFFD.
 */
json_t *
kp_json_text(const char *bytes)
{
	const unsigned char *s = (const unsigned char *)bytes;
	char *buf, *p;
	json_t *str;

	buf = kp_malloc(strlen(bytes) * 3 + 1);
	for (p = buf; *s;)
		p = kp_utf8_put(p, &s);
	str = json_stringn(buf, (size_t)(p - buf));
	free(buf);
	return str;
}
