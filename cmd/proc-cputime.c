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

#include "kp.h"

static void usage(void);

static const char *procdir = "/proc";
static const char *pods_log = "/var/log/pods";
static int emit_all;

static void
usage(void)
{
	fprintf(stderr, "usage: proc-cputime [-ah] [-i duration] [-n count] "
	    "[--pods-log dir] [--proc dir] [--state file]\n");
	exit(KP_EXIT_USAGE);
}

static void
scan(struct kp_sampler *s)
{
	if (kp_sampler_scan(s) < 0)
		err(KP_EXIT_FAILURE, "%s", procdir);
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

/*
 * Samples as each upstream interval ends, its CPU records just before its
 * interval record; every record read is passed through as it came.  *seq
 * and *mono_us: the last interval; *nlines: the input lines read.
 */
static int
run_filter(struct kp_sampler *s, json_int_t *seq, json_int_t *mono_us,
    long *nlines)
{
	struct kp_reader *r;
	struct kp_record rec;
	int status, ends;

	kp_signals_catch(NULL);
	r = kp_reader_open(STDIN_FILENO, "<stdin>");
	while (kp_reader_next(r, &rec)) {
		if ((ends = strcmp(rec.type, "interval") == 0)) {
			sample_and_emit(s, rec.seq);
			*seq = rec.seq;
			*mono_us = kp_mono_us();
		}
		kp_out_raw(rec.line, rec.len);
		if (ends)
			kp_out_flush();
	}
	status = kp_reader_errors(r) ? KP_EXIT_DATAERR : KP_EXIT_OK;
	*nlines = kp_reader_lineno(r);
	kp_reader_close(r);
	return status;
}

/* Its own clock, until count or a signal (D7): then 128 + the signal. */
static int
run_clock(struct kp_sampler *s, int64_t interval_us, long long count)
{
	struct kp_clock clk;

	kp_signals_producer();
	kp_out_header("proc-cputime");
	kp_clock_start(&clk, interval_us);
	scan(s);
	while (kp_clock_next(&clk, count)) {
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
	    "sampler", &saved) < 0 ||
	    (skipped = kp_sampler_load(s, saved)) < 0) {
		warnx("%s: unusable sample in the state file, starting a new "
		    "baseline", path);
		*seq = 0;
	} else if (skipped > 0)
		warnx("%s: unusable process rows in the state file skipped: %d",
		    path, skipped);
}

static void
save_state(struct kp_sampler *s, struct kp_state *st, json_int_t seq,
    int64_t mono_us)
{
	kp_state_commit_new(st, json_pack("{s:I,s:I,s:o}", "seq", seq,
	    "mono_us", (json_int_t)mono_us, "sampler", kp_sampler_save(s)));
}

/*
 * One sample against the stored one, if there is one (stored): at most one
 * interval.  *mono_us becomes this sample's time.
 */
static void
sample_once(struct kp_sampler *s, const char *path, int stored,
    json_int_t *seq, json_int_t *mono_us)
{
	struct kp_clock clk;

	kp_out_header("proc-cputime");
	kp_clock_start(&clk, 0);
	if (stored && kp_clock_resume(&clk, *seq, *mono_us, path)) {
		sample_and_emit(s, clk.seq);
		kp_out_interval(clk.seq, clk.wall_us, clk.dt_us);
		*seq = clk.seq;
	} else
		scan(s);
	*mono_us = clk.end_us;
}

static void
run_once(struct kp_sampler *s, struct kp_state *st, const char *path)
{
	json_int_t seq = 0, mono_us = 0;

	load_state(s, st, path, &seq, &mono_us);
	sample_once(s, path, kp_sampler_has_baseline(s), &seq, &mono_us);
	save_state(s, st, seq, mono_us);
}

/*
 * Filter mode.  cron gives a job a pipe on stdin that ends at once, and a
 * kp producer writes its header before anything else: with --state, an
 * input without a single line is a one-shot run, not a stream to join.
 */
static int
filter_mode(struct kp_sampler *s, struct kp_state *st, const char *path)
{
	json_int_t seq = 0, mono_us = 0;
	long nlines;
	int stored = 0, status;

	if (st) {
		load_state(s, st, path, &seq, &mono_us);
		stored = kp_sampler_has_baseline(s);
	}
	if (!stored) {
		scan(s);
		mono_us = kp_mono_us();
	}
	status = run_filter(s, &seq, &mono_us, &nlines);
	if (st && nlines == 0 && stored)
		sample_once(s, path, stored, &seq, &mono_us);
	else if (st && nlines == 0)	/* the scan above is the baseline */
		kp_out_header("proc-cputime");
	if (st)
		save_state(s, st, seq, mono_us);
	return status;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "count", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ "interval", required_argument, NULL, 'i' },
		{ "pods-log", required_argument, NULL, 'L' },
		{ "proc", required_argument, NULL, 'P' },
		{ "state", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 }
	};
	const char *statepath = NULL;
	int64_t interval_us = 1000000;
	long long count = 0;
	int clock = 0, ch, status = KP_EXIT_OK;
	struct kp_sampler *s;
	struct kp_state *st = NULL;

	kp_out_init();
	while ((ch = getopt_long(argc, argv, "ahi:n:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'a':
			emit_all = 1;
			break;
		case 'i':
			interval_us = kp_parse_duration_us(optarg, "interval");
			clock = 1;
			break;
		case 'n':
			count = kp_parse_int(optarg, 1, INT64_MAX, "count");
			clock = 1;
			break;
		case 'L':
			pods_log = optarg;
			break;
		case 'P':
			procdir = optarg;
			break;
		case 'S':
			statepath = optarg;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 0)
		usage();
	if (clock && statepath != NULL)
		errx(KP_EXIT_USAGE, "--state cannot be used with -i or -n");

	s = kp_sampler_new(procdir, emit_all);
	kp_sampler_set_pods_log(s, pods_log);
	if (statepath)
		st = kp_state_open(statepath, procdir, "proc-cputime");
	if (!clock && stdin_is_stream())
		status = filter_mode(s, st, statepath);
	else if (st)
		run_once(s, st, statepath);
	else
		status = run_clock(s, interval_us, count);
	kp_state_close(st);
	kp_sampler_free(s);
	return kp_out_finish(status);
}
