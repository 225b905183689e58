/*
 * --summary: one record per workload (type, zone and identity) over the
 * whole run, its energy and CPU time summed and its power the mean over
 * the run; its other fields are those of its last record.  At the end the
 * summary is written as records, read back with the reader, and given to
 * the chosen format as one block, as any interval is.
 *
 * Memory follows what is alive, not the run's length: a workload that has
 * ended (terminated, or absent from a dense interval, kp-records(5)) can
 * never come back, so beyond the --summary-rows of most energy in its
 * bucket (type, zone, socket, level) it is folded into that bucket's
 * "other" row.  Rows stay exact and rows + other = the total.  At the end
 * every bucket is cut to its rows the same way.  Workloads that never end
 * (a sparse stream cut by grep) are held up to KP_LIVE_MAX; beyond, the least
 * recently seen are folded too, which is said once, as a workload folded
 * so that comes back starts a new row.
 */
#include <err.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

/*
 * The fields that are summed, as integers: their names end in _uj or _us,
 * so the reader has checked that they are non-negative integers.
 */
static const char *const sum_fields[] = {
	"energy_uj", "active_uj", "idle_uj", "idle_kept_uj", "cpu_us",
	"total_cpu_us", NULL
};

/*
 * The names of a workload's fields in the order first read, and which are
 * summed: one copy for all the workloads of a type whose records have the
 * same members, as nearly all do (kp-fmt(1), Memory).
 */
struct shape {
	size_t n;
	const char **key;	/* name_of's */
	uint32_t *keylen;
	uint8_t *summed;	/* one of sum_fields, or an exited count */
};

/*
 * One workload: its fields' values packed in one buffer in its shape's
 * order, a sum as its 8 bytes, any other value as its kind, its length
 * and its JSON text as last read.  A field each of a few dozen bytes cost
 * three times the interval's size; packed, a workload costs less than its
 * line.
 */
struct workload {
	const char *type;	/* the same in each of its records */
	const char *bucket;	/* what its other row would be */
	const struct shape *shape;
	unsigned char *vals;
	uint32_t vlen;
	uint8_t foldable;	/* one of many: a process or a group */
	uint8_t ended;		/* it will never have a record again */
	uint8_t fold_now;	/* chosen by fold_marked's caller */
	int64_t last_seq;	/* of its last record */
	int64_t folded;		/* an other row: how many it holds */
};

/* A field of a workload, unpacked: valid while the workload is unchanged. */
struct fval {
	const char *key;
	uint32_t keylen;
	uint8_t summed, kind;	/* KP_V_*; a sum is KP_V_INT */
	int64_t i;		/* a sum */
	const char *raw;	/* any other value */
	size_t rawlen;
	struct text *shared;	/* the copy raw is in, if shared */
};

/*
 * Values of this many bytes or more, cgroup paths and container ids, are
 * shared (texts.c): each process has them in each zone.
 */
#define SHARED_MIN_BYTES 32


struct summary {
	struct fmt *ctx;		/* for what it reports */
	const struct format *inner;	/* the chosen format, or NULL */
	void *inner_st;
	struct workload **w;		/* in order of first appearance */
	size_t n, cap;
	struct kp_map *index;		/* hashed_key of key -> a w, borrowed */
	struct kp_map *others;		/* bucket -> other row, borrowed */
	struct kp_map *names;		/* every name, type and bucket, once */
	struct kp_map *shapes;		/* type and names -> struct shape */
	struct texts *texts;		/* the long values, shared */
	struct workload **other;	/* the other rows, in order made */
	size_t nother, othercap;
	size_t rows;			/* --summary-rows */
	size_t nended, nlive;		/* foldable workloads held */
	int64_t seq;			/* of the interval being added */
	int dense, warned;
	size_t live_next;		/* fold_live's next try */
	struct kp_buf key;
	struct kp_buf packed;		/* a workload's values being made */
	const char **newkeys;		/* the names a record adds */
	size_t newcap;
	int64_t first_seq, last_seq, dt_us;
	size_t intervals;		/* interval records read */
	struct kp_buf ts;		/* of the last interval, as JSON */
	struct block header;		/* the last header, for the summary */
	struct kp_spool pending;	/* the open interval's lines */
	size_t npending;
	struct kp_buf line;		/* one of them being spooled */
	struct kp_map *procs_seen;	/* seen_key -> int64_t * */
	struct cmd_energy *cmd;		/* rapl-read -- CMD's command block */
	char gpu_sum[KP_DEVICE_NAME_MAX + 32];	/* sum_gpu_us's, until packed */
};

/*
 * a + b of member what, held at the most kp-records(5) lets it be
 * (kp_field_max), so that the summary is a stream every stage reads: only
 * input that no meter wrote sums past it, which is reported, line and
 * field, and exits 3.
 */
static int64_t
add_held(struct fmt *ctx, int64_t a, int64_t b, const char *what,
    long lineno)
{
	int64_t sum, max = kp_field_max(what);

	if (!__builtin_add_overflow(a, b, &sum) && sum <= max)
		return sum;
	ctx->data_errors++;
	kp_warn_line(ctx->input_name, lineno, "--summary: the sum of %s "
	    "passes %" PRId64 ", held there", what, max);
	return max;
}

/* A part of a summary key: the value, if a string or an integer, and 0x1f. */
static void
key_part(struct kp_buf *key, const struct kp_field *v)
{
	if (v != NULL && v->kind == KP_V_STR)
		kp_buf_add(key, v->str, v->len);
	else if (v != NULL && v->kind == KP_V_INT)
		kp_buf_i64(key, v->i);
	kp_buf_add(key, "\x1f", 1);
}

/* What tells one workload from another, NUL-terminated in key. */
static void
workload_key(struct kp_buf *key, const struct kp_record *rec)
{
	static const char *const fields[] = {
		"type", "zone", "socket", "device", "pid", "starttime",
		"container_id", "pod_id", "vm_id", "unit", "level", "by", NULL,
	};
	size_t i;

	key->len = 0;
	for (i = 0; fields[i] != NULL; i++)
		key_part(key, kp_rec_get(rec, fields[i]));
	/* Last, for a group record, the value of its "by" field. */
	if (kp_rec_str(rec, "by") != NULL)
		key_part(key, by_field(rec));
	/* Exited processes, folded per command by their stage already. */
	if (rec_is(rec, "exited"))
		key_part(key, kp_rec_get(rec, "comm"));
	kp_buf_add(key, "", 1);
}

/* The bucket of a workload: the key of the other row it may fold into. */
static char *
bucket_of(const struct kp_record *rec)
{
	static const char *const fields[] = {
		"type", "zone", "socket", "device", "level", "by", NULL,
	};
	struct kp_buf b = { NULL, 0, 0 };
	size_t i;

	for (i = 0; fields[i] != NULL; i++)
		key_part(&b, kp_rec_get(rec, fields[i]));
	kp_buf_add(&b, "", 1);
	return b.s;
}

/*
 * A field's name, one copy for every workload's: a dozen names repeat in
 * each of thousands of workloads (kp-fmt(1), Memory).
 */
static const char *
name_of(struct summary *s, const char *key)
{
	char *name = kp_map_get(s->names, key);

	if (name == NULL) {
		name = kp_strdup(key);
		kp_map_put(s->names, name, name);
	}
	return name;
}

/*
 * Whether a field is summed: one of sum_fields, or the count of an exited
 * record, which the reader has checked is a non-negative integer there.
 */
static int
is_summed(const char *type, const char *key)
{
	return str_in_list(sum_fields, key) ||
	    (strcmp(type, "exited") == 0 && strcmp(key, "count") == 0);
}

static const struct shape no_fields = { 0, NULL, NULL, NULL };

static void
shape_free(void *p)
{
	struct shape *sh = p;

	free(sh->key);
	free(sh->keylen);
	free(sh->summed);
	free(sh);
}

/* from's names, then the n of add, for a workload of type: made once. */
static const struct shape *
shape_with(struct summary *s, const char *type, const struct shape *from,
    const char *const *add, size_t n)
{
	struct kp_buf id = { NULL, 0, 0 };
	struct shape *sh;
	size_t i;

	kp_buf_add(&id, type, strlen(type));
	for (i = 0; i < from->n + n; i++) {
		kp_buf_add(&id, "\x1f", 1);
		kp_buf_string(&id, i < from->n ? from->key[i] :
		    add[i - from->n]);
	}
	kp_buf_add(&id, "", 1);
	if ((sh = kp_map_get(s->shapes, id.s)) == NULL) {
		sh = kp_calloc(1, sizeof(*sh));
		sh->n = from->n + n;
		sh->key = kp_reallocarray(NULL, sh->n, sizeof(*sh->key));
		sh->keylen = kp_reallocarray(NULL, sh->n, sizeof(*sh->keylen));
		sh->summed = kp_reallocarray(NULL, sh->n, 1);
		for (i = 0; i < sh->n; i++) {
			sh->key[i] = name_of(s, i < from->n ? from->key[i] :
			    add[i - from->n]);
			sh->keylen[i] = strlen(sh->key[i]);
			sh->summed[i] = is_summed(type, sh->key[i]);
		}
		kp_map_put(s->shapes, id.s, sh);
	}
	free(id.s);
	return sh;
}

/* A sum, packed: its 8 bytes. */
static void
pack_sum(struct kp_buf *b, int64_t v)
{
	kp_buf_add(b, (const char *)&v, sizeof(v));
}

/* Any other value, packed: its kind, its length in 7-bit groups, its text. */
static void
pack_raw(struct kp_buf *b, int kind, const char *raw, size_t len)
{
	unsigned char c = (unsigned char)kind;
	size_t n = len;

	kp_buf_add(b, (const char *)&c, 1);
	do {
		c = (n & 0x7f) | (n > 0x7f ? 0x80 : 0);
		kp_buf_add(b, (const char *)&c, 1);
		n >>= 7;
	} while (n > 0);
	kp_buf_add(b, raw, len);
}

/*
 * A value packed in s->packed: a long one as its kind with the high bit set
 * and its shared copy, held once more; it is let go when the values it is
 * in are replaced (workload_store) or freed.
 */
static void
pack_fval(struct summary *s, const struct fval *v)
{
	struct text *x = v->shared;
	unsigned char kind = v->kind | 0x80;

	if (v->summed)
		pack_sum(&s->packed, v->i);
	else if (x == NULL && v->rawlen < SHARED_MIN_BYTES)
		pack_raw(&s->packed, v->kind, v->raw, v->rawlen);
	else {
		if (x == NULL)
			x = text_get(s->texts, v->raw, v->rawlen);
		else
			text_hold(x);
		kp_buf_add(&s->packed, (const char *)&kind, 1);
		kp_buf_add(&s->packed, (const char *)&x, sizeof(x));
	}
}

/* Field j of w, whose packed value starts at p; returns where it ends. */
static const unsigned char *
unpack(const struct workload *w, size_t j, const unsigned char *p,
    struct fval *v)
{
	unsigned shift = 0;

	v->key = w->shape->key[j];
	v->keylen = w->shape->keylen[j];
	v->summed = w->shape->summed[j];
	v->shared = NULL;
	if (v->summed) {
		memcpy(&v->i, p, sizeof(v->i));
		v->kind = KP_V_INT;
		return p + sizeof(v->i);
	}
	if (*p & 0x80) {
		v->kind = *p++ & 0x7f;
		memcpy(&v->shared, p, sizeof(v->shared));
		v->raw = text_str(v->shared, &v->rawlen);
		return p + sizeof(v->shared);
	}
	v->kind = *p++;
	v->rawlen = 0;
	do
		v->rawlen |= (size_t)(*p & 0x7f) << shift, shift += 7;
	while (*p++ & 0x80);
	v->raw = (const char *)p;
	return p + v->rawlen;
}

/* w's field key in *v, and where its packed value starts in *at. */
static int
workload_find(const struct workload *w, const char *key, struct fval *v,
    size_t *at)
{
	const unsigned char *p = w->vals, *next;
	size_t j;

	for (j = 0; j < w->shape->n; j++, p = next) {
		next = unpack(w, j, p, v);
		if (strcmp(v->key, key) == 0) {
			if (at != NULL)
				*at = (size_t)(p - w->vals);
			return 1;
		}
	}
	return 0;
}

static int
workload_get(const struct workload *w, const char *key, struct fval *v)
{
	return workload_find(w, key, v, NULL);
}

/* Lets go of the shared values of w. */
static void
workload_drop(struct summary *s, struct workload *w)
{
	const unsigned char *p = w->vals;
	struct fval v;
	size_t j;

	for (j = 0; j < w->shape->n; j++) {
		p = unpack(w, j, p, &v);
		if (v.shared != NULL)
			text_drop(s->texts, v.shared);
	}
}

/* w's values, the ones packed in s->packed, and its shape, sh. */
static void
workload_store(struct summary *s, struct workload *w, const struct shape *sh)
{
	workload_drop(s, w);
	if (s->packed.len != w->vlen) {
		w->vals = kp_reallocarray(w->vals, s->packed.len, 1);
		w->vlen = s->packed.len;
	}
	memcpy(w->vals, s->packed.s, s->packed.len);
	w->shape = sh;
}

/* Sets field v of w, or adds it after the others (an other row's). */
static void
workload_set(struct summary *s, struct workload *w, const struct fval *v)
{
	const unsigned char *p = w->vals;
	const struct shape *sh = w->shape;
	struct fval old;
	size_t j;
	int found = 0;

	s->packed.len = 0;
	for (j = 0; j < w->shape->n; j++) {
		p = unpack(w, j, p, &old);
		found |= strcmp(old.key, v->key) == 0;
		pack_fval(s, strcmp(old.key, v->key) == 0 ? v : &old);
	}
	if (!found) {
		sh = shape_with(s, w->type, w->shape, &v->key, 1);
		pack_fval(s, v);
	}
	workload_store(s, w, sh);
}

/* The field of rec named key, looked for first where hint is. */
static const struct kp_field *
rec_field(const struct kp_record *rec, const struct fval *v, size_t hint,
    size_t *at)
{
	size_t i;

	for (i = 0; i < rec->nf; i++) {
		*at = hint < rec->nf ? (hint + i) % rec->nf : i;
		if (rec->f[*at].keylen == v->keylen &&
		    memcmp(rec->f[*at].key, v->key, v->keylen) == 0)
			return &rec->f[*at];
	}
	return NULL;
}

/*
 * Whether a sum that was estimated would be said measured by f: a sum
 * with an estimate in it is estimated (kp-fmt(1), --summary).
 */
static int
keeps_estimated(const struct fval *v, const struct kp_field *f)
{
	return v->kind == KP_V_TRUE && f->kind != KP_V_TRUE &&
	    strcmp(v->key, "estimated") == 0;
}

/*
 * A GPU zone's gpu_us, {"<device>": us} of its one device, which is in the
 * workload's key, summed as cpu_us is into s->gpu_sum, which v then
 * holds until it is packed; 0 if f is no such field.
 */
static int
sum_gpu_us(struct summary *s, struct fval *v, const struct kp_field *f,
    long lineno)
{
	struct kp_member a, b;
	size_t at = 0, bt = 0;

	if (strcmp(v->key, "gpu_us") != 0 || v->kind != KP_V_OBJECT ||
	    f->kind != KP_V_OBJECT ||
	    kp_object_next(v->raw, v->rawlen, &at, &a) != 1 ||
	    kp_object_next(f->raw, f->rawlen, &bt, &b) != 1 ||
	    a.keylen != b.keylen || memcmp(a.key, b.key, a.keylen) != 0)
		return 0;
	snprintf(s->gpu_sum, sizeof(s->gpu_sum), "{\"%.*s\":%" PRId64 "}",
	    (int)a.keylen, a.key, add_held(s->ctx, a.num.i, b.num.i, "gpu_us",
	    lineno));
	v->raw = s->gpu_sum;
	v->rawlen = strlen(s->gpu_sum);
	v->shared = NULL;
	return 1;
}

/* Field v of w merged with f of a record of it: summed, or replaced. */
static void
merge_one(struct summary *s, struct fval *v, const struct kp_field *f,
    long lineno)
{
	if (f == NULL || keeps_estimated(v, f))
		return;
	if (v->summed)
		v->i = add_held(s->ctx, v->i, f->i, v->key, lineno);
	else if (sum_gpu_us(s, v, f, lineno))
		return;
	else if (v->shared == NULL || v->rawlen != f->rawlen ||
	    memcmp(v->raw, f->raw, f->rawlen) != 0) {
		v->kind = f->kind;
		v->raw = f->raw;
		v->rawlen = f->rawlen;
		v->shared = NULL;
	}
}

/* A field of a record as a value of a workload of type. */
static const struct fval *
field_of(struct fval *v, const char *type, const struct kp_field *f)
{
	v->summed = is_summed(type, f->key);
	v->kind = f->kind;
	v->i = f->i;
	v->raw = f->raw;
	v->rawlen = f->rawlen;
	v->shared = NULL;
	return v;
}

/* The names of rec's fields that w has not, in s->newkeys; how many. */
static size_t
new_keys(struct summary *s, const struct kp_record *rec, const uint8_t *had)
{
	size_t i, n = 0;

	if (s->newcap < rec->nf + 1) {
		s->newcap = rec->nf + 1;
		s->newkeys = kp_reallocarray(s->newkeys, s->newcap,
		    sizeof(*s->newkeys));
	}
	for (i = 0; i < rec->nf; i++)
		if (!had[i])
			s->newkeys[n++] = rec->f[i].key;
	return n;
}

/*
 * Adds a record of the same workload: sums summed, others replaced, the
 * fields it adds after w's, packed again in one pass.
 */
static void
workload_merge(struct summary *s, struct workload *w,
    const struct kp_record *rec)
{
	const unsigned char *p = w->vals;
	const struct shape *sh = w->shape;
	uint8_t *had = kp_calloc(rec->nf + 1, 1);
	struct fval v = { 0 };
	size_t i, j, at, nnew;

	s->packed.len = 0;
	for (j = 0; j < w->shape->n; j++) {
		p = unpack(w, j, p, &v);
		if (rec_field(rec, &v, j, &at) != NULL) {
			had[at] = 1;
			merge_one(s, &v, &rec->f[at], rec->lineno);
		}
		pack_fval(s, &v);
	}
	if ((nnew = new_keys(s, rec, had)) > 0) {
		sh = shape_with(s, w->type, w->shape, s->newkeys, nnew);
		for (i = 0; i < rec->nf; i++)
			if (!had[i])
				pack_fval(s, field_of(&v, w->type,
				    &rec->f[i]));
	}
	free(had);
	workload_store(s, w, sh);
}

/* Processes and groups come and go, many in a long run; nodes do not. */
static int
foldable(const struct kp_record *rec)
{
	static const char *const types[] = {
		"proc", "process", "exited", "container", "pod", "vm", "unit",
		"group", NULL
	};

	return str_in_list(types, rec->type);
}

/* A workload of rec, in the index as key (hashed_key's). */
static struct workload *
workload_new(struct summary *s, const struct kp_record *rec, const char *key)
{
	struct workload *w = kp_calloc(1, sizeof(*w));
	char *bucket = bucket_of(rec);

	w->type = name_of(s, rec->type);
	w->shape = &no_fields;
	w->bucket = name_of(s, bucket);
	free(bucket);
	w->foldable = foldable(rec);
	s->nlive += w->foldable;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->w = kp_reallocarray(s->w, s->cap, sizeof(*s->w));
	}
	s->w[s->n++] = w;
	kp_map_put(s->index, key, w);
	return w;
}

static void
workload_free(struct summary *s, struct workload *w)
{
	workload_drop(s, w);
	free(w->vals);
	free(w);
}

/* A workload that will have no more records: folding it loses nothing. */
static void
workload_end(struct summary *s, struct workload *w)
{
	if (w->ended || !w->foldable)
		return;
	w->ended = 1;
	s->nlive--;
	s->nended++;
}

/*
 * A group's PROCS over the run counts the processes it had in any interval,
 * each once (kp-fmt(1), --summary), not those of the last: the key of what
 * is counted is the group's type, zone, socket or device and id (a host
 * record's: its level), each as the record writes it.
 */
static const char *const seen_levels[][2] = {
	{ "container", "container_id" }, { "pod", "pod_id" },
	{ "vm", "vm_id" }, { "unit", "unit" },
};

static void
seen_key(struct kp_buf *key, const char *type, const struct kp_field *zone,
    const struct kp_field *socket, const char *id, size_t idlen)
{
	key->len = 0;
	kp_buf_add(key, type, strlen(type));
	kp_buf_add(key, "\x1f", 1);
	if (zone != NULL)
		kp_buf_add(key, zone->raw, zone->rawlen);
	kp_buf_add(key, "\x1f", 1);
	if (socket != NULL)
		kp_buf_add(key, socket->raw, socket->rawlen);
	kp_buf_add(key, "\x1f", 1);
	kp_buf_add(key, id, idlen);
	kp_buf_add(key, "", 1);
}

static void
seen_add(struct summary *s, const struct kp_buf *key)
{
	int64_t *n = kp_map_get(s->procs_seen, key->s);

	if (n == NULL) {
		n = kp_calloc(1, sizeof(*n));
		kp_map_put(s->procs_seen, key->s, n);
	}
	(*n)++;
}

/* A process seen for the first time: one more in each of its groups. */
static void
procs_seen_add(struct summary *s, const struct kp_record *rec)
{
	const struct kp_field *zone = kp_rec_get(rec, "zone");
	const struct kp_field *socket = kp_rec_get(rec, "socket");
	const struct kp_field *id;
	struct kp_buf key = { NULL, 0, 0 };
	char level[32];
	size_t i;

	if (socket == NULL)	/* a GPU's records: their device */
		socket = kp_rec_get(rec, "device");

	for (i = 0; i < NELEM(seen_levels); i++) {
		id = kp_rec_get(rec, seen_levels[i][1]);
		if (id != NULL && id->kind == KP_V_STR)
			seen_key(&key, seen_levels[i][0], zone, socket, id->raw,
			    id->rawlen);
		else {
			snprintf(level, sizeof(level), "\"%s\"",
			    seen_levels[i][0]);
			seen_key(&key, "host", zone, socket, level,
			    strlen(level));
		}
		seen_add(s, &key);
	}
	free(key.s);
}
static void fold_live(struct summary *s);

static void
add_record(struct summary *s, const struct kp_record *rec)
{
	struct workload *w;
	char hashed[24];

	if (s->first_seq < 0 || rec->seq < s->first_seq)
		s->first_seq = rec->seq;
	if (cmd_energy_add(s->cmd, rec))
		return;		/* the command block stands for it */
	workload_key(&s->key, rec);
	hashed_key(s->key.s, hashed);
	if ((w = kp_map_get(s->index, hashed)) == NULL) {
		if (rec_is(rec, "process"))
			procs_seen_add(s, rec);
		w = workload_new(s, rec, hashed);
		workload_merge(s, w, rec);
	} else
		workload_merge(s, w, rec);
	w->last_seq = rec->seq;
	if (kp_rec_terminated(rec))
		workload_end(s, w);
	if (rec_says_dense(rec))
		s->dense = 1;
	/* A sparse stream's bound holds while an interval is summed. */
	if (!s->dense)
		fold_live(s);
}

/* Whether w has the integer field key, in *v. */
static int
workload_int(const struct workload *w, const char *key, int64_t *v)
{
	struct fval f;

	if (!workload_get(w, key, &f) || !f.summed)
		return 0;
	*v = f.i;
	return 1;
}

/* What a workload is ranked by: its energy, else its CPU time. */
static int64_t
rank_of(const struct workload *w)
{
	int64_t v;

	if (workload_int(w, "energy_uj", &v) || workload_int(w, "cpu_us", &v))
		return v;
	return 0;
}

/* By bucket, then most energy first; ties by first appearance. */
static int
by_bucket_rank(const void *a, const void *b)
{
	const struct workload *x = *(struct workload *const *)a;
	const struct workload *y = *(struct workload *const *)b;
	int64_t rx = rank_of(x), ry = rank_of(y);
	int c = strcmp(x->bucket, y->bucket);

	if (c != 0)
		return c;
	return (rx < ry) - (rx > ry);
}

/*
 * The same for an other row, which sums workloads, not lines: each part
 * was within its most, and their sum passing it is reported too, so that
 * rows + other = the total holds or kp-fmt says it does not (exit 3).
 */
static int64_t
add_folded(struct summary *s, int64_t a, int64_t b, const char *what)
{
	int64_t sum, max = kp_field_max(what);

	if (!__builtin_add_overflow(a, b, &sum) && sum <= max)
		return sum;
	s->ctx->data_errors++;
	kp_warn_line(s->ctx->input_name, 0, "--summary: the sum of %s in an "
	    "other row passes %" PRId64 ", held there", what, max);
	return max;
}

/* Sets o's field key to the JSON text raw. */
static void
field_put(struct summary *s, struct workload *o, const char *key,
    const char *raw)
{
	struct fval v = { 0 };

	v.key = name_of(s, key);
	v.keylen = strlen(key);
	v.kind = KP_V_STR;
	v.raw = raw;
	v.rawlen = strlen(raw);
	workload_set(s, o, &v);
}

/*
 * The field that names the workloads of an other row's type, which the
 * row sets to "(other)": a group's id, the field a group is by, or comm.
 */
static void
field_put_name(struct summary *s, struct workload *o,
    const struct workload *w)
{
	static const char *const id[][2] = {
		{ "container", "container_id" }, { "pod", "pod_id" },
		{ "vm", "vm_id" }, { "unit", "unit" },
	};
	struct fval by;
	char *key;
	size_t i;

	for (i = 0; i < NELEM(id); i++)
		if (strcmp(w->type, id[i][0]) == 0) {
			field_put(s, o, id[i][1], "\"(other)\"");
			return;
		}
	/* Of many parents, an exited other row names none: no ppid. */
	if (!workload_get(w, "by", &by) || by.kind != KP_V_STR) {
		field_put(s, o, "comm", "\"(other)\"");
		return;
	}
	key = kp_strndup(by.raw + 1, by.rawlen - 2);
	field_put(s, o, key, "\"(other)\"");
	free(key);
}

/*
 * The other row of w's bucket: the fields that place it, and "(other)" in
 * the field that names its workloads, as a table shows them.
 */
static struct workload *
other_row(struct summary *s, const struct workload *w)
{
	static const char *const place[] = {
		"type", "seq", "zone", "socket", "device", "level", "by", NULL
	};
	const unsigned char *p = w->vals;
	struct workload *o;
	struct fval v;
	size_t j;

	if ((o = kp_map_get(s->others, w->bucket)) != NULL)
		return o;
	o = kp_calloc(1, sizeof(*o));
	o->type = w->type;
	o->bucket = w->bucket;
	o->shape = &no_fields;
	for (j = 0; j < w->shape->n; j++) {
		p = unpack(w, j, p, &v);
		if (str_in_list(place, v.key))
			workload_set(s, o, &v);
	}
	field_put_name(s, o, w);
	kp_map_put(s->others, o->bucket, o);
	if (s->nother == s->othercap) {
		s->othercap = s->othercap ? s->othercap * 2 : 16;
		s->other = kp_reallocarray(s->other, s->othercap,
		    sizeof(*s->other));
	}
	s->other[s->nother++] = o;
	return o;
}

/* Adds w's sums to its bucket's other row, and forgets w. */
static void
fold(struct summary *s, struct workload *w)
{
	struct workload *o = other_row(s, w);
	const unsigned char *p = w->vals;
	struct fval v, sum;
	int64_t total;
	size_t j, at;

	for (j = 0; j < w->shape->n; j++) {
		p = unpack(w, j, p, &v);
		if (!v.summed)
			continue;
		if (!workload_find(o, v.key, &sum, &at))
			workload_set(s, o, &v);
		else {
			total = add_folded(s, sum.i, v.i, sum.key);
			memcpy(o->vals + at, &total, sizeof(total));
		}
	}
	o->folded++;
	if (w->ended)
		s->nended--;
	else
		s->nlive -= w->foldable;
	workload_free(s, w);
}

static int
is_fold_now(void *w, void *arg)
{
	(void)arg;
	return ((struct workload *)w)->fold_now;
}

/*
 * Folds the workloads marked fold_now, and drops them from the list and,
 * in one pass, from the index, which alone holds their keys.
 */
static void
fold_marked(struct summary *s)
{
	size_t i, n = 0;

	kp_map_sweep(s->index, is_fold_now, NULL, NULL);
	for (i = 0; i < s->n; i++)
		if (s->w[i]->fold_now)
			fold(s, s->w[i]);
		else
			s->w[n++] = s->w[i];
	s->n = n;
}

/*
 * Folds, in each bucket, what comes after the first keep of the foldable
 * workloads that pick selects (NULL: all), by rank.
 */
static void
fold_beyond(struct summary *s, size_t keep,
    int (*pick)(const struct workload *))
{
	struct workload **sel = kp_reallocarray(NULL, s->n + 1, sizeof(*sel));
	size_t i, n = 0, in_bucket = 0;

	for (i = 0; i < s->n; i++)
		if (s->w[i]->foldable && (pick == NULL || pick(s->w[i])))
			sel[n++] = s->w[i];
	if (n > 1)
		qsort(sel, n, sizeof(*sel), by_bucket_rank);
	for (i = 0; i < n; i++) {
		in_bucket = i > 0 && strcmp(sel[i]->bucket,
		    sel[i - 1]->bucket) == 0 ? in_bucket + 1 : 0;
		sel[i]->fold_now = in_bucket >= keep;
	}
	free(sel);
	fold_marked(s);
}

/* The live workloads seen last longest ago, until keep are left. */
static void
fold_stale(struct summary *s, size_t keep)
{
	int64_t *seen = kp_reallocarray(NULL, s->nlive + 1, sizeof(*seen));
	int64_t cut;
	size_t i, n = 0;

	for (i = 0; i < s->n; i++)
		if (s->w[i]->foldable && !s->w[i]->ended)
			seen[n++] = s->w[i]->last_seq;
	cut = kp_live_cut(seen, n, keep);
	for (i = 0; i < s->n; i++)
		s->w[i]->fold_now = s->w[i]->foldable && !s->w[i]->ended &&
		    s->w[i]->last_seq < cut;
	free(seen);
	fold_marked(s);
}

static int
is_ended(const struct workload *w)
{
	return w->ended;
}

/* In a dense interval, a process or group without a record has ended. */
static void
end_absent(struct summary *s, int64_t seq)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->w[i]->last_seq < seq &&
		    strcmp(s->w[i]->type, "exited") != 0)
			workload_end(s, s->w[i]);
}

/*
 * Bounds the live workloads held, with a word.  Those of the open
 * interval are never folded: beyond the bound, the next try waits for
 * half as many again, so that an interval of more costs no sort each.
 */
static void
fold_live(struct summary *s)
{
	size_t before = s->nlive;

	if (s->nlive <= KP_LIVE_MAX || s->nlive < s->live_next)
		return;
	fold_stale(s, KP_LIVE_MAX / 2);
	s->live_next = s->nlive + KP_LIVE_MAX / 2;
	if (!s->warned++)
		warnx("--summary: %zu workloads without an end, more than "
		    "%d, the least recently seen folded into other rows; one "
		    "that comes back starts a new row", before, KP_LIVE_MAX);
}

/* Bounds what is held: ended workloads, then live ones. */
static void
fold_held(struct summary *s)
{
	if (s->nended > 2 * s->rows)
		fold_beyond(s, s->rows, is_ended);
	s->live_next = 0;
	fold_live(s);
}

/* Forgets the open interval's lines; keeps the memory for the next. */
static void
pending_drop(struct summary *s)
{
	kp_spool_clear(&s->pending);
	s->npending = 0;
}

/*
 * A record of the open interval, as read: kept as its line number and its
 * line, in a spool whose last mebibyte is in memory, since it is summed
 * only once its interval record has come, and an interval cut short is
 * not summed (kp-fmt(1), Memory).
 */
static void
summary_record(struct fmt *ctx, void *st, const struct kp_record *rec)
{
	struct summary *s = st;
	char lineno[24];

	(void)ctx;
	s->npending++;
	s->line.len = 0;
	kp_buf_add(&s->line, lineno, (size_t)snprintf(lineno, sizeof(lineno),
	    "%ld ", rec->lineno));
	kp_buf_add(&s->line, rec->line, rec->len);
	kp_buf_add(&s->line, "\n", 1);
	/* Whole, so that kp_spool_lines finds it in one place. */
	kp_spool_add(&s->pending, s->line.s, s->line.len);
}

/* One line of the open interval, after its number, read again and summed. */
static void
add_pending_line(const char *line, size_t len, void *arg)
{
	struct summary *s = arg;
	struct kp_reader *r;
	struct kp_record rec;
	const char *text = memchr(line, ' ', len) + 1;
	long lineno = strtol(line, NULL, 10);

	r = kp_reader_open_mem(text, len - (size_t)(text - line),
	    s->ctx->input_name);
	if (kp_reader_read(r, &rec) != 1)
		errx(KP_EXIT_FAILURE, "--summary: cannot read a record again");
	rec.lineno = lineno;
	add_record(s, &rec);
	kp_reader_close(r);
}

/* The open interval's lines, read again one at a time and summed. */
static void
add_pending(struct summary *s)
{
	kp_spool_lines(&s->pending, add_pending_line, s);
	pending_drop(s);
}

/* Adds one whole interval: its records and its length. */
static void
add_interval(struct fmt *ctx, struct summary *s, const struct block *b,
    const struct kp_record *interval)
{
	const struct kp_field *ts;
	int64_t dt_us;
	size_t i;

	s->dense = 0;
	add_pending(s);
	for (i = 0; i < b->n; i++)
		add_record(s, b->recs[i]);
	s->intervals++;
	s->last_seq = interval->seq;
	if (s->first_seq < 0 || interval->seq < s->first_seq)
		s->first_seq = interval->seq;
	if (kp_rec_int(interval, "dt_us", &dt_us))
		s->dt_us = add_held(ctx, s->dt_us, dt_us, "dt_us",
		    interval->lineno);
	if ((ts = kp_rec_get(interval, "ts")) != NULL) {
		s->ts.len = 0;
		kp_buf_add(&s->ts, ts->raw, ts->rawlen);
	}
	if (s->dense)
		end_absent(s, interval->seq);
	fold_held(s);
}

/* A power or a ratio: the shortest decimal that reads back, as a real. */
static void
put_real(struct kp_buf *b, double v)
{
	size_t mark = b->len;

	put_double(b, v);
	if (memchr(b->s + mark, '.', b->len - mark) == NULL &&
	    memchr(b->s + mark, 'e', b->len - mark) == NULL)
		kp_buf_add(b, ".0", 2);
}

/* The fields the summary works out: the mean powers and the usage. */
struct derived {
	const char *key;
	double v;
	int have, done;
};

static void
derive(const struct summary *s, const struct workload *w,
    struct derived *d)
{
	static const char *const watts[][2] = {
		{ "energy_uj", "watts" }, { "active_uj", "active_watts" },
		{ "idle_uj", "idle_watts" },
	};
	int64_t e, a, t;
	size_t i;

	for (i = 0; i < NELEM(watts); i++) {
		d[i].key = watts[i][1];
		d[i].have = s->dt_us > 0 && workload_int(w, watts[i][0], &e);
		d[i].v = d[i].have ? kp_watts(e, s->dt_us) : 0;
	}
	d[i].key = "usage_ratio";
	if (strcmp(w->type, "node") == 0 &&
	    workload_int(w, "energy_uj", &e) &&
	    workload_int(w, "active_uj", &a))
		d[i].have = 1, d[i].v = kp_usage_ratio(a, e);
	else if (strcmp(w->type, "cpu") == 0 &&
	    workload_int(w, "cpu_us", &a) &&
	    workload_int(w, "total_cpu_us", &t))
		d[i].have = 1, d[i].v = kp_usage_ratio(a, t);
	d[++i].key = NULL;
}

/* "key": after the opening brace, or after a comma. */
static void
put_member(struct kp_buf *b, const char *key, int first)
{
	if (!first)
		kp_buf_add(b, ",", 1);
	kp_buf_string(b, key);
	kp_buf_add(b, ":", 1);
}

/* A value of w as the summary has it. */
static void
put_value(const struct summary *s, struct kp_buf *b, const struct fval *v,
    struct derived *d)
{
	for (; d->key != NULL; d++)
		if (d->have && strcmp(d->key, v->key) == 0) {
			put_real(b, d->v);
			d->done = 1;
			return;
		}
	if (strcmp(v->key, "seq") == 0)
		kp_buf_i64(b, s->last_seq);
	else if (v->summed)
		kp_buf_i64(b, v->i);
	else
		kp_buf_add(b, v->raw, v->rawlen);
}

/* w's field key as the reader's field, for seen_key; NULL if none. */
static const struct kp_field *
as_field(struct kp_field *f, const struct workload *w, const char *key)
{
	struct fval v;

	if (!workload_get(w, key, &v))
		return NULL;
	f->raw = v.raw;
	f->rawlen = v.rawlen;
	return f;
}

/* The processes a group had over the run, if the stream had processes. */
static const int64_t *
procs_seen(const struct summary *s, const struct workload *w)
{
	struct kp_field zone, place, id, *place_p = &place;
	const char *id_key = NULL;
	struct kp_buf key = { NULL, 0, 0 };
	const int64_t *n;
	size_t i;

	if (kp_map_count(s->procs_seen) == 0)
		return NULL;
	for (i = 0; i < NELEM(seen_levels); i++)
		if (strcmp(w->type, seen_levels[i][0]) == 0)
			id_key = seen_levels[i][1];
	if (strcmp(w->type, "host") == 0)
		id_key = "level";
	if (id_key == NULL || as_field(&id, w, id_key) == NULL)
		return NULL;
	if (as_field(&place, w, "socket") == NULL &&
	    as_field(&place, w, "device") == NULL)
		place_p = NULL;
	seen_key(&key, w->type, as_field(&zone, w, "zone"), place_p, id.raw,
	    id.rawlen);
	n = kp_map_get(s->procs_seen, key.s);
	free(key.s);
	return n;
}

/* The record of a workload over the run, a line in b. */
static void
workload_line(const struct summary *s, struct kp_buf *b,
    const struct workload *w)
{
	const int64_t *procs = procs_seen(s, w);
	const unsigned char *p = w->vals;
	struct derived d[5];
	struct fval v;
	size_t i;

	memset(d, 0, sizeof(d));
	derive(s, w, d);
	kp_buf_add(b, "{", 1);
	for (i = 0; i < w->shape->n; i++) {
		p = unpack(w, i, p, &v);
		put_member(b, v.key, i == 0);
		if (procs != NULL && strcmp(v.key, "processes") == 0)
			kp_buf_i64(b, *procs);
		else
			put_value(s, b, &v, d);
	}
	for (i = 0; d[i].key != NULL; i++)
		if (d[i].have && !d[i].done) {
			put_member(b, d[i].key, 0);
			put_real(b, d[i].v);
		}
	if (w->folded > 0) {
		put_member(b, "folded", 0);
		kp_buf_i64(b, w->folded);
	}
	kp_buf_add(b, "}\n", 2);
}

/* The interval record of the run, after the workloads' lines in b. */
static void
interval_line(const struct summary *s, struct kp_buf *b)
{
	struct kp_buf line = { NULL, 0, 0 };

	kp_buf_rec(&line, "interval", s->last_seq);
	if (s->ts.len > 0)
		kp_buf_raw(&line, "ts", s->ts.s, s->ts.len);
	kp_buf_int(&line, "dt_us", s->dt_us);
	kp_buf_add(&line, "}\n", 2);
	kp_buf_add(b, line.s, line.len);
	free(line.s);
}

/* The summary as one block to the chosen format, through the reader. */
static void
summary_write(struct fmt *ctx, struct summary *s)
{
	struct kp_buf text = { NULL, 0, 0 };
	struct block b = { 0 };
	struct kp_record rec;
	struct kp_reader *r;
	size_t i;
	int got;

	for (i = 0; i < s->n; i++)
		workload_line(s, &text, s->w[i]);
	for (i = 0; i < s->nother; i++)
		workload_line(s, &text, s->other[i]);
	cmd_energy_lines(s->cmd, &text, s->last_seq, s->dt_us);
	interval_line(s, &text);
	r = kp_reader_open_mem(text.s, text.len, "--summary");
	while ((got = kp_reader_next(r, &rec)) > 0 &&
	    !rec_is(&rec, "interval"))
		block_add(&b, &rec);
	if (got <= 0 || kp_reader_errors(r) > 0)
		errx(KP_EXIT_FAILURE, "--summary: cannot read the summary");
	ctx->summary_first_seq = s->first_seq < 0 ? 0 : s->first_seq;
	if (s->header.n > 0 && s->inner->header != NULL)
		s->inner->header(ctx, s->inner_st, s->header.recs[0]);
	s->inner->block(ctx, s->inner_st, &b, &rec);
	kp_reader_close(r);
	block_free(&b);
	free(text.s);
}

static void *
summary_begin(struct fmt *ctx)
{
	struct summary *s = kp_calloc(1, sizeof(*s));

	s->ctx = ctx;
	s->inner = ctx->format;
	if (s->inner != NULL)
		s->inner_st = s->inner->begin(ctx);
	s->index = kp_map_new();
	s->others = kp_map_new();
	s->names = kp_map_new();
	s->procs_seen = kp_map_new();
	s->shapes = kp_map_new();
	s->texts = texts_new();
	s->rows = ctx->summary_rows;
	s->first_seq = -1;
	s->cmd = cmd_energy_new();
	s->pending.fd = -1;
	return s;
}

/* An interval cut short was reported by the reader: it is not summed. */
static void
summary_block(struct fmt *ctx, void *st, const struct block *b,
    const struct kp_record *interval)
{
	if (interval != NULL)
		add_interval(ctx, st, b, interval);
	else
		pending_drop(st);
}

/*
 * Records after the last interval record belong to an interval whose
 * length is unknown: their energy over the other intervals' length would
 * be a power never seen, so the summary covers whole intervals only, and
 * says so rather than drop them without a word.
 */
static void
summary_end(struct fmt *ctx, void *st, const struct block *rest)
{
	struct block none = { 0 };
	struct summary *s = st;
	size_t i, left = rest->n + s->npending;

	if (left > 0)
		kp_warn_line(ctx->input_name, 0, "%zu record%s after the last "
		    "interval record, an incomplete interval, left out of the "
		    "summary", left, left == 1 ? "" : "s");
	fold_beyond(s, s->rows, NULL);
	if (s->inner != NULL && s->intervals > 0)
		summary_write(ctx, s);
	if (s->inner != NULL)
		s->inner->end(ctx, s->inner_st, &none);
	for (i = 0; i < s->n; i++)
		workload_free(s, s->w[i]);
	for (i = 0; i < s->nother; i++)
		workload_free(s, s->other[i]);
	free(s->w);
	free(s->other);
	kp_map_free(s->index, NULL);
	kp_map_free(s->others, NULL);
	kp_map_free(s->names, free);
	kp_map_free(s->procs_seen, free);
	kp_map_free(s->shapes, shape_free);
	texts_free(s->texts);
	free(s->key.s);
	free(s->packed.s);
	free(s->line.s);
	free(s->newkeys);
	free(s->ts.s);
	kp_spool_free(&s->pending);
	block_free(&s->header);
	cmd_energy_free(s->cmd);
	free(s);
}

/*
 * The last header goes to the chosen format before the summary, since it
 * names the node the summary is of.
 */
static void
summary_header(struct fmt *ctx, void *st, const struct kp_record *rec)
{
	struct summary *s = st;

	(void)ctx;
	block_clear(&s->header);
	block_add(&s->header, rec);
	cmd_energy_header(s->cmd, rec);
}

const struct format fmt_summary = {
	"summary", summary_begin, summary_block, summary_header, summary_end,
	summary_record
};
