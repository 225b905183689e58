/*
 * The type of every member that kp-records(5) names, one table for every
 * record type and every stage: the reader checks each member of a record
 * against it, so that a stage that only passes a record on takes the
 * decision that the stage that uses the member takes.  A member the table
 * does not know is free, but for a name ending in _uj or _us, which is
 * always an integer of at least 0.  type and seq, which every record has,
 * and a header's version, which stops a stage, are the reader's own.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kp.h"

enum rule {
	INTEGER,	/* any integer */
	COUNT,		/* an integer of at least 0 */
	AT_LEAST_1,	/* an integer of at least 1, as sockets */
	PID,		/* what pid_t holds: 1 to 2^31-1 */
	PPID,		/* 0 to 2^31-1: 0 for a parent outside the namespace */
	AMOUNT,		/* energy_uj, cpu_us: 0 to KP_AMOUNT_MAX */
	STRING,
	ARRAY,
	BOOLEAN,
	WATTS,		/* a number of at least 0 */
	RATIO,		/* a number from 0 to 1 */
	STATE,		/* "running" or "terminated" */
	ZONE,		/* a zone name (kp_zone_name_ok) */
	TIME,		/* an RFC 3339 time */
	DEVICE,		/* a GPU's name on the node (kp_device_name_ok) */
	DEVICE_US,	/* an object of AMOUNTs by DEVICE, as gpu_us */
	DEVICE_RATIOS	/* an object of RATIOs by DEVICE, as gpu_coverage */
};

/*
 * By name, as strcmp(3) sorts them: the reader looks up every member of
 * every record, and a name is found among the few of its first letter,
 * their lengths compared first.
 */
#define K(key, rule) { key, sizeof(key) - 1, rule }
static const struct known {
	const char *key;
	size_t len;
	enum rule rule;
} known[] = {
	K("active_watts", WATTS),
	K("by", STRING),
	K("cgroup", STRING),
	K("comm", STRING),
	K("container_id", STRING),
	K("container_name", STRING),
	K("count", COUNT),
	K("cpu_info", ARRAY),
	K("cpu_us", AMOUNT),
	K("dense", BOOLEAN),
	K("device", DEVICE),
	K("energy_uj", AMOUNT),
	K("estimated", BOOLEAN),
	K("exe", STRING),
	K("exits_dropped", COUNT),
	K("gpu_coverage", DEVICE_RATIOS),
	K("gpu_us", DEVICE_US),
	K("host", STRING),
	K("hypervisor", STRING),
	K("idle_watts", WATTS),
	K("kind", STRING),
	K("level", STRING),
	K("model", STRING),
	K("name", STRING),
	K("node_name", STRING),
	K("path", STRING),
	K("pid", PID),
	K("pod_id", STRING),
	K("pod_name", STRING),
	K("pod_namespace", STRING),
	K("pod_qos", STRING),
	K("ppid", PPID),
	K("processes", COUNT),
	K("producer", STRING),
	K("runtime", STRING),
	K("scaled_by", STRING),
	K("scaled_down", BOOLEAN),
	K("session", STRING),
	K("socket", COUNT),
	K("sockets", AT_LEAST_1),
	K("source", STRING),
	K("starttime", COUNT),
	K("state", STATE),
	K("status", INTEGER),
	K("threads", AT_LEAST_1),
	K("ts", TIME),
	K("unit", STRING),
	K("usage_ratio", RATIO),
	K("user_slice", STRING),
	K("uuid", STRING),
	K("vm_id", STRING),
	K("vm_name", STRING),
	K("watts", WATTS),
	K("zone", ZONE),
};

/* What each rule asks, after "KEY" is not. */
static const char *const wants[] = {
	[INTEGER] = "an integer",
	[COUNT] = "a non-negative integer",
	[AT_LEAST_1] = "an integer of at least 1",
	[PID] = "an integer from 1 to 2147483647",
	[PPID] = "an integer from 0 to 2147483647",
	[AMOUNT] = "a non-negative integer",
	[STRING] = "a string",
	[ARRAY] = "an array",
	[BOOLEAN] = "true or false",
	[WATTS] = "a number of at least 0",
	[RATIO] = "a number from 0 to 1",
	[STATE] = "\"running\" or \"terminated\"",
	[ZONE] = "a zone name: 1 to 31 letters, digits, '-', '_' or '.'",
	[TIME] = "an RFC 3339 time",
	[DEVICE] = ("a device name: 1 to 27 letters, digits, '-', '_', "
	    "'.' or ':'"),
	[DEVICE_US] = "an object of non-negative integers by device name",
	[DEVICE_RATIOS] = "an object of numbers from 0 to 1 by device name",
};

static int
digits(const char *s, int n, int max)
{
	int i, v = 0;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + s[i] - '0';
	}
	return v <= max;
}

/* RFC 3339's date-time: 2026-11-22T13:48:36.123456Z, or +01:00 for Z. */
static int
is_rfc3339(const char *s)
{
	if (!digits(s, 4, 9999) || s[4] != '-' || !digits(s + 5, 2, 12) ||
	    s[7] != '-' || !digits(s + 8, 2, 31) || (s[10] != 'T' &&
	    s[10] != 't') || !digits(s + 11, 2, 23) || s[13] != ':' ||
	    !digits(s + 14, 2, 59) || s[16] != ':' || !digits(s + 17, 2, 60) ||
	    s[5] + s[6] == '0' * 2 || s[8] + s[9] == '0' * 2)
		return 0;
	s += 19;
	if (*s == '.' && *(s += 1 + strspn(s + 1, "0123456789")) == '\0' &&
	    s[-1] == '.')
		return 0;
	if (*s == 'Z' || *s == 'z')
		return s[1] == '\0';
	return (*s == '+' || *s == '-') && digits(s + 1, 2, 23) &&
	    s[3] == ':' && digits(s + 4, 2, 59) && s[6] == '\0';
}

static int
is_unit_key(const struct kp_field *f)
{
	const char *k = f->key + f->keylen - 3;

	return f->keylen >= 3 && k[0] == '_' && k[1] == 'u' &&
	    (k[2] == 'j' || k[2] == 's');
}

static int
in_range(const struct kp_field *f, int64_t min, int64_t max)
{
	return f->kind == KP_V_INT && f->i >= min && f->i <= max;
}

/* A number's value: the line goes on after it, so strtod stops there. */
double
kp_field_number(const struct kp_field *f)
{
	if (f == NULL)
		return NAN;
	if (f->kind == KP_V_INT)
		return (double)f->i;
	return f->kind == KP_V_REAL ? strtod(f->raw, NULL) : NAN;
}

static int by_device(const struct kp_field *f, enum rule rule);

static int
fits(const struct kp_field *f, enum rule rule)
{
	switch (rule) {
	case INTEGER:
		return f->kind == KP_V_INT;
	case COUNT:
	case AMOUNT:
		return in_range(f, 0, INT64_MAX);
	case AT_LEAST_1:
		return in_range(f, 1, INT64_MAX);
	case PID:
		return in_range(f, 1, INT32_MAX);
	case PPID:
		return in_range(f, 0, INT32_MAX);
	case STRING:
		return f->kind == KP_V_STR;
	case ARRAY:
		return f->kind == KP_V_ARRAY;
	case BOOLEAN:
		return f->kind == KP_V_TRUE || f->kind == KP_V_FALSE;
	case WATTS:	/* a number written without '-', or -0: no strtod */
		return (f->kind == KP_V_INT || f->kind == KP_V_REAL) &&
		    (f->raw[0] != '-' || kp_field_number(f) >= 0);
	case RATIO:
		return kp_field_number(f) >= 0 && kp_field_number(f) <= 1;
	case STATE:
		return f->kind == KP_V_STR && (strcmp(f->str, "running") == 0 ||
		    strcmp(f->str, "terminated") == 0);
	case ZONE:
		return f->kind == KP_V_STR && kp_zone_name_ok(f->str, f->len);
	case TIME:
		return f->kind == KP_V_STR && is_rfc3339(f->str);
	case DEVICE:
		return f->kind == KP_V_STR && kp_device_name_ok(f->str, f->len);
	case DEVICE_US:
	case DEVICE_RATIOS:
		return f->kind == KP_V_OBJECT && by_device(f, rule);
	}
	return 0;
}

/* The integer from p to end, digits after an optional '-'; 0: too large. */
int
kp_integer_value(const char *p, const char *end, int64_t *v)
{
	int neg = *p == '-';
	uint64_t mag = 0;

	for (p += neg; p < end; p++) {
		if (mag > (UINT64_MAX - 9) / 10)
			return 0;
		mag = mag * 10 + (uint64_t)(*p - '0');
	}
	if (mag > (uint64_t)INT64_MAX + (uint64_t)neg)
		return 0;
	*v = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	return 1;
}

/*
 * The next member of a flat object of numbers, raw as written (rawlen
 * bytes, its closing brace the last), from *pos (0 at first): its key and
 * its number.  1: one more; 0: the end; -1: a member that is not
 * "key":number, a key with an escape included (no device name has one).
 * The reader has checked that it is JSON.
 */
int
kp_object_next(const char *raw, size_t rawlen, size_t *pos,
    struct kp_member *m)
{
	const char *p = raw + *pos, *end = raw + rawlen, *q;

	p += strspn(p, " \t\r\n{,");
	if (p >= end || *p == '}')
		return 0;
	if (*p++ != '"' || (q = memchr(p, '"', (size_t)(end - p))) == NULL ||
	    memchr(p, '\\', (size_t)(q - p)) != NULL)
		return -1;
	m->key = p;
	m->keylen = (size_t)(q - p);
	p = q + 1;
	p += strspn(p, " \t\r\n:");
	m->num.raw = p;
	m->num.kind = KP_V_REAL;
	if (*p != '-' && (*p < '0' || *p > '9'))
		return -1;
	m->num.rawlen = strspn(p, "-+.eE0123456789");
	if (m->num.rawlen == strspn(p, "-0123456789") &&
	    kp_integer_value(p, p + m->num.rawlen, &m->num.i))
		m->num.kind = KP_V_INT;
	*pos = (size_t)(p + m->num.rawlen - raw);
	return 1;
}

/*
 * The integer of device in an object of them, as written (a gpu_us that
 * the reader has checked); -1 if it has none.
 */
int64_t
kp_device_us(const char *raw, size_t rawlen, const char *device)
{
	size_t pos = 0, len = strlen(device);
	struct kp_member m;

	while (kp_object_next(raw, rawlen, &pos, &m) > 0)
		if (m.keylen == len && memcmp(m.key, device, len) == 0)
			return m.num.kind == KP_V_INT ? m.num.i : -1;
	return -1;
}

/* Whether object f holds numbers by device name, each fit for rule. */
static int
by_device(const struct kp_field *f, enum rule rule)
{
	struct kp_member m;
	size_t pos = 0;
	int more;

	while ((more = kp_object_next(f->raw, f->rawlen, &pos, &m)) > 0)
		if (!kp_device_name_ok(m.key, m.keylen) ||
		    !fits(&m.num, rule == DEVICE_US ? AMOUNT : RATIO) ||
		    (rule == DEVICE_US && m.num.i > KP_AMOUNT_MAX))
			return 0;
	return more == 0;
}

#define NKNOWN (sizeof(known) / sizeof(known[0]))

/* The member named key (len bytes) in the table, or NULL. */
static const struct known *
lookup(const char *key, size_t len)
{
	static size_t from[27];	/* the first entry of each letter, a..z, end */
	static int indexed;
	size_t i, c;

	if (!indexed) {
		for (c = 0, i = 0; c < 27; c++) {
			while (i < NKNOWN && (size_t)(known[i].key[0] - 'a') < c)
				i++;
			from[c] = i;
		}
		indexed = 1;
	}
	if (len == 0 || key[0] < 'a' || key[0] > 'z')
		return NULL;
	c = (size_t)(key[0] - 'a');
	for (i = from[c]; i < from[c + 1]; i++)
		if (known[i].len == len && memcmp(known[i].key, key, len) == 0)
			return &known[i];
	return NULL;
}

/*
 * What is wrong with a member, by kp-records(5): NULL if nothing, else
 * what it should be.  An amount past KP_AMOUNT_MAX is told apart: it is
 * an integer, but one whose sums a stage could not hold.
 */
const char *
kp_field_wrong(const struct kp_field *f)
{
	const struct known *k = lookup(f->key, f->keylen);
	enum rule rule = k != NULL ? k->rule : COUNT;

	if (k == NULL && !is_unit_key(f))
		return NULL;
	if (!fits(f, rule))
		return wants[rule];
	if (rule == AMOUNT && f->i > KP_AMOUNT_MAX)
		return "at most 2^60 (1152921504606846976)";
	return NULL;
}

/*
 * The most that the integer member key may be: where a stage sums it, as
 * kp-fmt --summary does, a sum is held there, so that a record it writes
 * is one that every stage reads.
 */
int64_t
kp_field_max(const char *key)
{
	const struct known *k = lookup(key, strlen(key));

	if (k == NULL)
		return INT64_MAX;
	if (k->rule == AMOUNT || k->rule == DEVICE_US)
		return KP_AMOUNT_MAX;
	return k->rule == PID || k->rule == PPID ? INT32_MAX : INT64_MAX;
}
