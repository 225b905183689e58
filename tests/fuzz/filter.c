/*
 * libFuzzer harness for proc-cputime as a filter (pass_stream in
 * cmd/proc-cputime.c, included whole, its main renamed): any input, read
 * by the one reader, over the proc-basic fixture.  Besides not crashing,
 * what it writes must be every record the reader took, line for line, as
 * it came and in order, with this stage's own records of an interval (one
 * cpu record, and proc and exited records) just before its interval
 * record and nowhere else; and what it writes reads back by the same
 * rules, no cpu_us negative.  Inputs whose reader stops (a header of
 * another major version) are skipped: the stage exits 3 on them by
 * design, which libFuzzer would take for a crash.
 */
#include <limits.h>

#define main proc_cputime_main
#include "../../cmd/proc-cputime.c"
#undef main

#define CHECK(c) do { if (!(c)) abort(); } while (0)

/* The lines the reader took, in order: what must come out. */
struct taken {
	struct kp_buf text;	/* the lines, each ending in '\n' */
	size_t n;
	int fatal;
};

static void
take_input(struct taken *t, const uint8_t *data, size_t size)
{
	struct kp_reader *r = kp_reader_open_mem((const char *)data, size,
	    "fuzz");
	struct kp_record rec;
	int n;

	while ((n = kp_reader_read(r, &rec)) != 0 && !t->fatal) {
		if (n < 0) {
			t->fatal = kp_reader_fatal(r);
			continue;
		}
		kp_buf_add(&t->text, rec.line, rec.len);
		kp_buf_add(&t->text, "\n", 1);
		t->n++;
	}
	kp_reader_close(r);
}

/* A record this stage writes of its own for interval seq. */
static int
own(const struct kp_record *rec, int64_t seq)
{
	int64_t cpu_us;

	if (rec->seq != seq || (strcmp(rec->type, "cpu") != 0 &&
	    strcmp(rec->type, "proc") != 0 &&
	    strcmp(rec->type, "exited") != 0))
		return 0;
	CHECK(!kp_rec_int(rec, "cpu_us", &cpu_us) || cpu_us >= 0);
	return 1;
}

/*
 * The next line of the expected text: its length, and whether it is an
 * interval record, of which seq.
 */
static int
next_taken(const char *p, const char *end, size_t *len, int *is_interval,
    int64_t *seq)
{
	struct kp_reader *r;
	struct kp_record rec;

	if (p >= end)
		return 0;
	*len = (size_t)((const char *)memchr(p, '\n', (size_t)(end - p)) - p);
	r = kp_reader_open_mem(p, *len, "taken");
	CHECK(kp_reader_read(r, &rec) > 0);
	*is_interval = strcmp(rec.type, "interval") == 0;
	*seq = rec.seq;
	kp_reader_close(r);
	return 1;
}

/*
 * The output against what was taken: each taken line in turn, and before
 * each interval record, this stage's own records of that interval, one
 * cpu record among them.
 */
static void
check_output(const struct taken *t, const char *out, size_t outlen)
{
	struct kp_reader *r = kp_reader_open_mem(out, outlen, "output");
	const char *p = t->text.len ? t->text.s : "", *end = p + t->text.len;
	struct kp_record got;
	size_t len;
	int cpus, is_interval;
	int64_t seq;

	for (; next_taken(p, end, &len, &is_interval, &seq); p += len + 1) {
		cpus = 0;
		for (;;) {
			CHECK(kp_reader_read(r, &got) > 0);
			if (got.len == len && memcmp(got.line, p, len) == 0)
				break;
			CHECK(is_interval && own(&got, seq));
			cpus += strcmp(got.type, "cpu") == 0;
		}
		CHECK(!is_interval || cpus == 1);
	}
	CHECK(kp_reader_read(r, &got) == 0);
	CHECK(kp_reader_errors(r) == 0);
	kp_reader_close(r);
}

static struct kp_sampler *
setup(void)
{
	static char fixture[PATH_MAX];
	struct options o = {
		.sample = { .exits = KP_EXITS_PARENT | KP_EXITS_CGROUP }
	};
	struct kp_sampler *s;

	snprintf(fixture, sizeof(fixture), "%.*s/../fixtures/proc-basic",
	    (int)(strrchr(__FILE__, '/') - __FILE__), __FILE__);
	o.sample.procdir = fixture;
	kp_out_init();
	s = kp_sampler_new(o.sample.procdir, 0);
	kp_sample_exits(s, &o.sample);
	scan(s);
	return s;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct kp_sampler *s;
	struct taken t;
	struct filter f = { NULL, 0, 0 };
	struct kp_reader *r;
	FILE *real = stdout;
	char *out = NULL;
	size_t outlen = 0;

	memset(&t, 0, sizeof(t));
	take_input(&t, data, size);
	if (!t.fatal) {
		if (s == NULL)
			s = setup();
		CHECK((stdout = open_memstream(&out, &outlen)) != NULL);
		r = kp_reader_open_mem((const char *)data, size, "fuzz");
		pass_stream(s, &f, r);
		kp_reader_close(r);
		fclose(stdout);
		stdout = real;
		check_output(&t, out, outlen);
		free(out);
	}
	free(t.text.s);
	return 0;
}
