/*
 * Record output.  Everything a stage writes to stdout goes through here, so
 * that a closed downstream pipe is one quiet stop and any other write error
 * is one failure with a message.
 */
#include <err.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kp.h"

/* Called right after the failing call, while errno still says why. */
static void
write_failed(void)
{
	if (errno == EPIPE)
		exit(KP_EXIT_OK);
	err(KP_EXIT_FAILURE, "write error on stdout");
}

/*
 * Into a pipe or a file, output goes in 64 KiB writes, not stdio's 4 KiB
 * (st_blksize of a pipe): a dense interval of a thousand processes is
 * 400 kB, and each write is a wakeup and a read(2) for the next stage.
 * Every stage flushes at the end of each interval, so nothing waits
 * longer than it did; a terminal keeps its line buffering.
 */
void
kp_out_init(void)
{
	static char buf[1 << 16];

	signal(SIGPIPE, SIG_IGN);
	if (!isatty(STDOUT_FILENO))
		setvbuf(stdout, buf, _IOFBF, sizeof(buf));
}

/*
 * Output held back, not written, until kp_out_release: a stage with
 * --state prepares the state that counts an interval's records before
 * they go out (proc-cputime(1), "Guarantees").  An interval of a million
 * records is hundreds of megabytes of output: it waits in a spool, its
 * last mebibyte in memory, and a spool that cannot be written ends the
 * stage before any of the interval's records went out.
 */
static struct kp_spool held = KP_SPOOL_INIT;
static int holding;

void
kp_out_hold(void)
{
	holding = 1;
}

static void
out_held(const char *s, size_t len)
{
	kp_out_bytes(s, len);
}

void
kp_out_release(void)
{
	holding = 0;
	kp_spool_each(&held, out_held);
	kp_spool_clear(&held);
	kp_out_flush();
}

void
kp_out_raw(const char *line, size_t len)
{
	if (holding) {
		kp_spool_add(&held, line, len);
		kp_spool_add(&held, "\n", 1);
		return;
	}
	if (fwrite_unlocked(line, 1, len, stdout) != len ||
	    putchar_unlocked('\n') == EOF)
		write_failed();
}

/* Text as it is, no newline added: a block of lines built in a kp_buf. */
void
kp_out_bytes(const char *s, size_t len)
{
	if (holding)
		kp_spool_add(&held, s, len);
	else if (len > 0 && fwrite_unlocked(s, 1, len, stdout) != len)
		write_failed();
}

void
kp_out_flush(void)
{
	if (!holding && fflush(stdout) == EOF)
		write_failed();
}

/*
 * The last thing main does: returns status, a failure if stdout was lost,
 * or success if the reader downstream went away (a quiet stop).
 */
int
kp_out_finish(int status)
{
	if (fflush(stdout) == EOF || ferror(stdout)) {
		if (errno == EPIPE)
			return KP_EXIT_OK;
		warn("write error on stdout");
		return KP_EXIT_FAILURE;
	}
	return status;
}

static void buf_key(struct kp_buf *b, const char *key);

/* ,"cpu_info":[{"processor":0,...},...], what is unknown left out. */
static void
buf_cpu_info(struct kp_buf *b, const struct kp_cpu *cpus, size_t n)
{
	size_t i;

	buf_key(b, "cpu_info");
	for (i = 0; i < n; i++) {
		kp_buf_add(b, i == 0 ? "[" : ",", 1);
		kp_buf_add(b, "{\"processor\":", 13);
		kp_buf_i64(b, cpus[i].processor);
		if (cpus[i].vendor_id != NULL)
			kp_buf_text(b, "vendor_id", cpus[i].vendor_id);
		if (cpus[i].model_name != NULL)
			kp_buf_text(b, "model_name", cpus[i].model_name);
		if (cpus[i].physical_id >= 0)
			kp_buf_int(b, "physical_id", cpus[i].physical_id);
		if (cpus[i].core_id >= 0)
			kp_buf_int(b, "core_id", cpus[i].core_id);
		kp_buf_add(b, "}", 1);
	}
	kp_buf_add(b, "]", 1);
}

/* The header that starts a stream, with the node's identity if known. */
void
kp_out_header(const char *producer, const struct kp_node *node,
    const char *command)
{
	struct kp_buf b = { NULL, 0, 0 };
	char version[32];

	snprintf(version, sizeof(version), "%d.%d", KP_PROTO_MAJOR,
	    KP_PROTO_MINOR);
	kp_buf_rec(&b, "header", 0);
	kp_buf_text(&b, "version", version);
	kp_buf_text(&b, "producer", producer);
	if (command != NULL)
		kp_buf_text(&b, "command", command);
	if (node != NULL && node->name != NULL)
		kp_buf_text(&b, "node_name", node->name);
	if (node != NULL && node->ncpus > 0)
		buf_cpu_info(&b, node->cpus, node->ncpus);
	kp_out_buf(&b);
	free(b.s);
}

/* Its buffer is kept: a sampler at 1 kHz writes one an interval. */
void
kp_out_interval(int64_t seq, int64_t wall_us, int64_t dt_us)
{
	static struct kp_buf b;
	char ts[64];

	kp_format_ts(ts, sizeof(ts), wall_us);
	kp_buf_rec(&b, "interval", seq);
	kp_buf_text(&b, "ts", ts);
	kp_buf_int(&b, "dt_us", dt_us);
	kp_out_buf(&b);
	kp_out_flush();
}

/*
 * The one record writer: kp_buf_rec opens {"type":..,"seq":.., the kp_buf_
 * calls append members, and kp_out_buf closes the object and writes it.
 * Numbers and strings look as jansson writes them with JSON_COMPACT and
 * JSON_REAL_PRECISION(10), as records always have.
 */
static void
buf_reserve(struct kp_buf *b, size_t n)
{
	if (b->len + n <= b->cap)
		return;
	b->cap = (b->len + n) * 2 + 256;
	b->s = kp_reallocarray(b->s, b->cap, 1);
}

void
kp_buf_add(struct kp_buf *b, const char *s, size_t n)
{
	if (n == 0)
		return;		/* s may be an empty buffer's NULL */
	buf_reserve(b, n);
	memcpy(b->s + b->len, s, n);
	b->len += n;
}

/* An integer alone, without a key: a cell of a table or a label. */
void
kp_buf_i64(struct kp_buf *b, int64_t v)
{
	char tmp[24], *p = tmp + sizeof(tmp);
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	do
		*--p = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		*--p = '-';
	kp_buf_add(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

static void
buf_key(struct kp_buf *b, const char *key)
{
	size_t n = strlen(key);

	buf_reserve(b, n + 4);
	b->s[b->len++] = ',';
	b->s[b->len++] = '"';
	memcpy(b->s + b->len, key, n);
	b->len += n;
	b->s[b->len++] = '"';
	b->s[b->len++] = ':';
}

void
kp_buf_rec(struct kp_buf *b, const char *type, int64_t seq)
{
	b->len = 0;
	kp_buf_add(b, "{\"type\":\"", 9);
	kp_buf_add(b, type, strlen(type));
	kp_buf_add(b, "\",\"seq\":", 8);
	kp_buf_i64(b, seq);
}

void
kp_buf_int(struct kp_buf *b, const char *key, int64_t v)
{
	buf_key(b, key);
	kp_buf_i64(b, v);
}

/* ,"key": and val, already JSON text */
void
kp_buf_raw(struct kp_buf *b, const char *key, const char *val, size_t len)
{
	buf_key(b, key);
	kp_buf_add(b, val, len);
}

void
kp_buf_real(struct kp_buf *b, const char *key, double v)
{
	char tmp[64], *e, *d;
	int n;

	buf_key(b, key);
	if (!isfinite(v))
		v = 0;
	n = snprintf(tmp, sizeof(tmp), "%.10g", v);
	if (strpbrk(tmp, ".e") == NULL) {
		memcpy(tmp + n, ".0", 3);
		n += 2;
	}
	if ((e = strchr(tmp, 'e')) != NULL) {
		/* 1e+05 -> 1e5, 2e-06 -> 2e-6, as jansson does */
		d = ++e;
		if (*e == '+')
			e++;
		else if (*e == '-')
			d = ++e;
		while (*e == '0' && e[1] != '\0')
			e++;
		memmove(d, e, strlen(e) + 1);
		n = (int)strlen(tmp);
	}
	kp_buf_add(b, tmp, (size_t)n);
}

/*
 * ,"key":"bytes": any bytes made valid UTF-8 as kp_json_text makes them,
 * and escaped as jansson escapes them.
 */
void
kp_buf_text(struct kp_buf *b, const char *key, const char *bytes)
{
	buf_key(b, key);
	kp_buf_string(b, bytes);
}

/* "bytes" alone, as kp_buf_text writes a value: a key, or an array's item. */
void
kp_buf_string(struct kp_buf *b, const char *bytes)
{
	static const char hex[] = "0123456789ABCDEF";
	static const char short_esc[] = "\b\f\n\r\t", short_name[] = "bfnrt";
	const unsigned char *s = (const unsigned char *)bytes;
	const char *e;
	char *p;

	buf_reserve(b, strlen(bytes) * 6 + 2);
	p = b->s + b->len;
	*p++ = '"';
	while (*s) {
		if (*s == '"' || *s == '\\') {
			*p++ = '\\';
			*p++ = (char)*s++;
		} else if (*s < 0x20) {
			*p++ = '\\';
			if ((e = memchr(short_esc, *s, 5)) != NULL)
				*p++ = short_name[e - short_esc];
			else {
				memcpy(p, "u00", 3);
				p[3] = hex[*s >> 4];
				p[4] = hex[*s & 0xf];
				p += 5;
			}
			s++;
		} else if (*s < 0x80)
			*p++ = (char)*s++;	/* most names are ASCII */
		else
			p = kp_utf8_put(p, &s);
	}
	*p++ = '"';
	b->len = (size_t)(p - b->s);
}

void
kp_buf_bool(struct kp_buf *b, const char *key, int v)
{
	buf_key(b, key);
	kp_buf_add(b, v ? "true" : "false", v ? 4 : 5);
}

/* Any text, as printf writes it: the lines of a table. */
void
kp_buf_printf(struct kp_buf *b, const char *fmt, ...)
{
	va_list ap;
	size_t room;
	int n;

	buf_reserve(b, 64);
	room = b->cap - b->len;
	va_start(ap, fmt);
	n = vsnprintf(b->s + b->len, room, fmt, ap);
	va_end(ap);
	if (n < 0)
		err(KP_EXIT_FAILURE, "vsnprintf");
	if ((size_t)n >= room) {
		buf_reserve(b, (size_t)n + 1);
		va_start(ap, fmt);
		vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

void
kp_out_buf(struct kp_buf *b)
{
	kp_buf_add(b, "}", 1);
	kp_out_raw(b->s, b->len);
	b->len = 0;
}
