/*
 * proc-cputime: the node's CPU usage and each process's CPU time per
 * interval, with who the process belongs to.  As a filter it samples when
 * each upstream interval ends; otherwise it keeps its own clock.
 */
#include <err.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/proc.h"

/* Long options without a short form. */
enum {
	OPT_HEAD = 256,
	OPT_NODE_NAME,
	OPT_STATE
};

/* The command line, read once by main and passed down. */
struct options {
	struct kp_sample_opts sample;	/* as kp-attribute's */
	const char *node_name;		/* --node-name; NULL: found */
	const char *statepath;		/* --state; NULL: none */
	int head;			/* --head */
	struct kp_clock_opts clock;	/* -i, -n */
};

/* proc-cputime(1), SYNOPSIS and the options. */
static const struct kp_option_help option_help[] = {
	{ "-i, --interval duration", "sample on its own clock, every duration" },
	{ "-n, --count count", "stop after count intervals" },
	{ "--head", "the head of a pipeline: no input" },
	{ "--node-name name", "the node's name in the header" },
	{ "--state file", "one sample against the one kept in file" },
	KP_SAMPLE_HELP,
	{ NULL, NULL }
};
static const struct kp_usage usage = {
	"proc-cputime [-ah] [-i duration] [-n count] "
	"[--cgroup-root dir] [--exited sources]\n"
	"                    [--head] [--keep-open count] [--no-gpu] "
	"[--node-name name]\n"
	"                    [--pods-log dir] [--podman-root dir] [--proc dir] "
	"[--root dir]\n"
	"                    [--state file] [--sysfs dir] "
	"[--taskstats-buffer bytes]", option_help
};

/* The header that starts the stream, with the node's identity. */
static void
out_header(const struct options *o)
{
	struct kp_node node;

	kp_node_identify(&node, o->node_name, o->sample.procdir);
	kp_out_header("proc-cputime", &node, NULL);
	kp_node_free(&node);
}

static void
scan(struct kp_sampler *s)
{
	if (kp_sampler_scan(s) < 0)
		errx(KP_EXIT_FAILURE, "%s", kp_sampler_error(s));
}

/* Ends interval seq: the CPU records of the scan just taken, then the frame. */
static void
sample_and_emit(struct kp_sampler *s, int64_t seq)
{
	scan(s);
	kp_sampler_write(s, seq);
}

/* A pipe or a file on stdin is a stream to join; a terminal or /dev/null is not. */
static int
stdin_is_stream(void)
{
	struct stat st;

	if (fstat(STDIN_FILENO, &st) < 0)
		return 0;
	return S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode) ||
	    S_ISSOCK(st.st_mode);
}

static json_t *
state_data(struct kp_sampler *s, json_int_t seq, int64_t mono_us)
{
	return json_pack("{s:I,s:I,s:o}", "seq", seq, "mono_us",
	    (json_int_t)mono_us, "sampler", kp_sampler_save(s));
}

/* A filter's run: where its state stands. */
struct filter {
	struct kp_state *st;	/* or NULL */
	json_int_t seq, mono_us;	/* the last interval, and its sample */
};

/*
 * Interval seq ends upstream: this stage's records of it, then its
 * interval record.  With --state, the state that counts it is prepared
 * before they go out, and before the records passed through in it, and
 * committed after, at most once a second (proc-cputime(1), Guarantees).
 */
static void
end_interval(struct kp_sampler *s, struct filter *f,
    const struct kp_record *rec)
{
	scan(s);
	f->seq = rec->seq;
	f->mono_us = kp_mono_us();
	kp_sampler_write(s, rec->seq);
	kp_out_raw(rec->line, rec->len);
	kp_state_interval_end(f->st, kp_state_due(f->st) ?
	    state_data(s, f->seq, f->mono_us) : NULL);
	kp_out_flush();
}

/*
 * Samples as each upstream interval ends, its CPU records just before its
 * interval record; every record read is passed through as it came.  A
 * command record names and places the command before that sample.
 */
static void
pass_stream(struct kp_sampler *s, struct filter *f, struct kp_reader *r)
{
	struct kp_record rec;

	kp_state_hold(f->st);
	while (kp_reader_next(r, &rec)) {
		if (strcmp(rec.type, "interval") == 0)
			end_interval(s, f, &rec);
		else {
			if (strcmp(rec.type, "command") == 0)
				kp_sampler_command(s, &rec);
			kp_out_raw(rec.line, rec.len);
		}
	}
}

/*
 * The filter on standard input; *nlines: the input lines read.  Waiting
 * for input, it drains the listener as its own clock would.
 */
static int
run_filter(struct kp_sampler *s, struct filter *f, long *nlines,
    struct kp_exits *x)
{
	struct kp_clock listening = { 0 };
	struct kp_reader *r;
	int status;

	kp_signals_catch(NULL);
	r = kp_reader_open(STDIN_FILENO, "<stdin>");
	kp_sample_wait(r, &listening, x);
	pass_stream(s, f, r);
	status = kp_reader_errors(r) ? KP_EXIT_DATAERR : KP_EXIT_OK;
	*nlines = kp_reader_lineno(r);
	kp_reader_close(r);
	return status;
}

/*
 * Its own clock, until count or a signal (proc-cputime(1), SIGNALS): then
 * 128 + the signal.
 */
static int
run_clock(struct kp_sampler *s, const struct options *o, struct kp_exits *x)
{
	struct kp_clock clk;

	kp_signals_producer();
	out_header(o);
	kp_clock_start(&clk, o->clock.interval_us);
	kp_sample_poll(&clk, x);
	scan(s);
	while (kp_clock_next(&clk, o->clock.count)) {
		sample_and_emit(s, clk.seq);
		kp_out_interval(clk.seq, clk.wall_us, clk.dt_us);
	}
	return kp_stop_signal ? 128 + kp_stop_signal : KP_EXIT_OK;
}

/* The previous run's last scan becomes this run's baseline. */
static void
load_state(struct kp_sampler *s, struct kp_state *st, const char *path,
    json_int_t *seq, json_int_t *mono_us)
{
	json_t *data = kp_state_data(st), *saved;
	int skipped;

	if (data == NULL)
		return;
	if (json_unpack(data, "{s:I,s:I,s:o}", "seq", seq, "mono_us", mono_us,
	    "sampler", &saved) < 0 || !kp_clock_stored_ok(*seq, *mono_us) ||
	    (skipped = kp_sampler_load(s, saved)) < 0) {
		warnx("%s: unusable sample in the state file, starting a new "
		    "baseline", path);
		*seq = 0;
	} else if (skipped > 0)
		warnx("%s: unusable process rows in the state file skipped: %d",
		    path, skipped);
}

/*
 * One sample against the stored one, if there is one (stored): at most one
 * interval.  The state that counts it is prepared before its records and
 * committed after them (proc-cputime(1), Guarantees): a full disk writes
 * no record and advances nothing.
 */
static void
sample_once(struct kp_sampler *s, struct kp_state *st,
    const struct options *o, json_int_t seq, json_int_t stored_us)
{
	const char *path = o->statepath;
	int stored = kp_sampler_has_baseline(s), ended;
	struct kp_clock clk;

	kp_clock_start(&clk, 0);
	scan(s);
	if ((ended = stored && kp_clock_resume(&clk, seq, stored_us, path)))
		seq = clk.seq;
	kp_state_prepare_new(st, state_data(s, seq, clk.end_us));
	out_header(o);	/* a failed run writes nothing */
	if (ended) {
		kp_sampler_write(s, clk.seq);
		kp_out_interval(clk.seq, clk.wall_us, clk.dt_us);
	} else
		kp_out_flush();
	kp_state_commit(st);
}

static void
run_once(struct kp_sampler *s, struct kp_state *st, const struct options *o)
{
	json_int_t seq = 0, mono_us = 0;

	load_state(s, st, o->statepath, &seq, &mono_us);
	sample_once(s, st, o, seq, mono_us);
}

/*
 * Filter mode with --state, as in the README's cron line: an empty input
 * means the stage before failed, and advances nothing (proc-cputime(1),
 * Guarantees); the head of a pipeline says --head instead.
 */
static int
filter_mode(struct kp_sampler *s, struct kp_state *st, const char *path,
    struct kp_exits *x)
{
	struct filter f = { st, 0, 0 };
	long nlines;
	int status;

	if (st != NULL)
		load_state(s, st, path, &f.seq, &f.mono_us);
	if (!kp_sampler_has_baseline(s)) {
		scan(s);
		f.mono_us = kp_mono_us();
	}
	status = run_filter(s, &f, &nlines, x);
	kp_state_need_input(st, nlines);
	kp_state_end(st, kp_state_pending(st) ?
	    state_data(s, f.seq, f.mono_us) : NULL);
	return status;
}

/* The options, checked together; the rest of the line is none. */
static void
parse_options(struct options *o, int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "count", required_argument, NULL, 'n' },
		{ "head", no_argument, NULL, OPT_HEAD },
		{ "help", no_argument, NULL, 'h' },
		{ "interval", required_argument, NULL, 'i' },
		{ "node-name", required_argument, NULL, OPT_NODE_NAME },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "version", no_argument, NULL, KP_OPT_VERSION },
		KP_SAMPLE_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "ahi:n:", longopts, NULL)) != -1) {
		if (kp_sample_option(&o->sample, ch, optarg))
			continue;
		switch (ch) {
		case 'i':
		case 'n':
			kp_clock_option(&o->clock, ch, optarg);
			break;
		case OPT_HEAD:
			o->head = 1;
			break;
		case OPT_NODE_NAME:
			if (*optarg == '\0')
				errx(KP_EXIT_USAGE, "--node-name wants a name");
			o->node_name = optarg;
			break;
		case OPT_STATE:
			o->statepath = optarg;
			break;
		default:
			kp_usage_option(&usage, ch);
		}
	}
	kp_usage_no_operand(&usage, argc, argv);
	kp_clock_opts_check(&o->clock, o->statepath);
}

int
main(int argc, char *argv[])
{
	struct options o = {
		.sample = KP_SAMPLE_OPTS_INIT, .clock = KP_CLOCK_OPTS_INIT,
	};
	int filter, status = KP_EXIT_OK;
	struct kp_sampler *s;
	struct kp_state *st = NULL;
	struct kp_exits *x = NULL;

	kp_out_init();
	parse_options(&o, argc, argv);
	s = kp_sample_new(&o.sample);
	kp_sample_exits(s, &o.sample);
	filter = !o.clock.given && !o.head && stdin_is_stream();
	if (o.statepath)
		st = kp_state_open(o.statepath, o.sample.procdir,
		    "proc-cputime");
	if (filter || st == NULL)	/* not in a one-shot run */
		x = kp_sample_listen(s, &o.sample);
	if (filter)
		status = filter_mode(s, st, o.statepath, x);
	else if (st)
		run_once(s, st, &o);
	else
		status = run_clock(s, &o, x);
	kp_state_close(st);
	kp_sampler_free(s);
	kp_exits_free(x);
	kp_sample_free(&o.sample);
	return kp_out_finish(status);
}
