/*
 * kp-attribute: splits each zone's energy into active and idle, and gives
 * each process, and each exited record of processes born and ended inside
 * the interval, a share of the active energy in proportion to its CPU
 * time.  Integer microjoules, conserved exactly: sum(process) +
 * sum(exited) + unattributed + idle kept at node level = measured, every
 * interval and zone.
 *
 * Records are read by lib/record.c, the one reader of every stage, and
 * written by hand (lib/write.c), not through jansson values: a stage sees
 * every process of every interval.
 */
#include <err.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attribute.h"

/* Long options without a short form. */
enum {
	OPT_BASELINE_WATTS = 256,
	OPT_DENOMINATOR,
	OPT_IDLE,
	OPT_MAX_TERMINATED,
	OPT_MIN_TERMINATED_ENERGY,
	OPT_SPLIT,
	OPT_STATE
};

/* The options' defaults (kp-attribute(1)). */
static const struct options default_options = {
	.sample = KP_SAMPLE_OPTS_INIT,
	.split_mode = SPLIT_RATIO, .idle_mode = IDLE_NONE,
	.denom_mode = DENOM_NODE, .baseline_default = -1,
	.max_terminated = 500, .min_terminated_uj = 0,
};

/* kp-attribute(1), SYNOPSIS and the options. */
static const struct kp_option_help option_help[] = {
	{ "--baseline-watts [zone=]watts", "each zone's baseline power" },
	{ "--denominator node|processes", "whose CPU time shares out energy" },
	{ "--idle none|proportional", "how the idle energy is given out" },
	{ "--max-terminated n", "ended processes kept per interval" },
	{ "--min-terminated-energy joules", "ended processes kept above" },
	{ "--split ratio|baseline", "how the active energy is found" },
	{ "--state file", "carry intervals over runs, kept in file" },
	KP_SAMPLE_HELP,
	{ NULL, NULL }
};
static const struct kp_usage usage = {
	"kp-attribute [-ah] [--cgroup-root dir] [--denominator node|processes] "
	"[--exited sources]\n"
	"                    [--idle none|proportional] [--keep-open count] "
	"[--max-terminated n]\n"
	"                    [--min-terminated-energy joules] [--no-gpu] "
	"[--pods-log dir] [--podman-root dir]\n"
	"                    [--proc dir] [--root dir] [--split ratio|baseline] "
	"[--baseline-watts [zone=]watts]\n"
	"                    [--state file] [--sysfs dir] "
	"[--taskstats-buffer bytes]",
	option_help
};

/*
 * The listeners of the sample this stage takes itself, as proc-cputime's:
 * opened when the first interval without a cpu record ends, and never in a
 * --state run, whose sample hears nothing between runs (kp-attribute(1),
 * Sampling /proc).
 */
struct listen {
	struct kp_exits *x;	/* or NULL */
	struct kp_clock clk;	/* serves x while the input is awaited */
	int tried;
};

static void
listen_once(struct attr *a, struct listen *l, struct kp_reader *r,
    struct kp_sampler *s)
{
	if (l->tried)
		return;
	l->tried = 1;
	l->x = kp_sample_listen(s, &a->opt.sample);
	kp_sample_wait(r, &l->clk, l->x);
}

/*
 * The stream, interval by interval.  With --state, the state that counts
 * an interval is prepared before any of its records goes out, those passed
 * on as they came included, and committed after them, at most once a
 * second (kp-attribute(1), --state).
 */
static void
run(struct attr *a, struct kp_reader *r, struct kp_sampler *s,
    struct kp_state *st)
{
	struct listen l = { NULL, { 0 }, st != NULL };
	struct interval iv;
	struct kp_record rec;
	struct state_arg sa = { a, s };

	memset(&iv, 0, sizeof(iv));
	iv.seq = -1;
	/* Never NULL, so that offsets into it are always defined. */
	iv.text.cap = 256;
	iv.text.s = kp_malloc(iv.text.cap);
	iv.ids.fd = iv.lines.fd = -1;
	kp_state_hold(st);
	while (kp_reader_next(r, &rec) > 0) {
		if (rec.cut_seq >= 0)
			pass_cut(&iv);
		if (strcmp(rec.type, "interval") == 0) {
			if (!iv.has_cpu)
				listen_once(a, &l, r, s);
			end_interval(a, r, &iv, &rec, s);
			kp_state_interval_end_by(st, kp_state_due(st) ?
			    state_write : NULL, &sa);
		} else if (consumed(&rec))
			hold(a, r, &rec, &iv);
		else {
			/* names the command when it samples /proc itself */
			if (strcmp(rec.type, "command") == 0)
				kp_sampler_command(s, &rec);
			kp_out_raw(rec.line, rec.len);
		}
	}
	/* The stream ended inside an interval, which the reader reported. */
	pass_lines(&iv.lines);
	free(iv.energy);
	free(iv.procs);
	free(iv.exited);
	free(iv.text.s);
	kp_spool_free(&iv.ids);
	kp_spool_free(&iv.lines);
	kp_sampler_set_facts(s, NULL);
	kp_exits_free(l.x);
}

static void
parse_baseline(struct options *o, const char *arg)
{
	const char *eq = strchr(arg, '=');

	if (eq == NULL) {
		o->baseline_default = kp_parse_double(arg, 0, 1e6,
		    "--baseline-watts");
		return;
	}
	if (o->nbaseline == KP_ZONES_MAX)
		errx(KP_EXIT_USAGE, "too many --baseline-watts zones");
	o->baseline_zone[o->nbaseline] = kp_strndup(arg, (size_t)(eq - arg));
	o->baseline_watts[o->nbaseline++] = kp_parse_double(eq + 1, 0, 1e6,
	    "--baseline-watts");
}

static int
choice(const char *arg, const char *a, const char *b, const char *what)
{
	if (strcmp(arg, a) == 0)
		return 0;
	if (strcmp(arg, b) == 0)
		return 1;
	errx(KP_EXIT_USAGE, "%s must be '%s' or '%s': '%s'", what, a, b, arg);
}

/* The options, checked together; *statepath: --state's, or NULL. */
static void
parse_options(struct options *o, const char **statepath, int argc,
    char *argv[])
{
	static const struct option longopts[] = {
		{ "baseline-watts", required_argument, NULL,
		    OPT_BASELINE_WATTS },
		{ "denominator", required_argument, NULL, OPT_DENOMINATOR },
		{ "help", no_argument, NULL, 'h' },
		{ "idle", required_argument, NULL, OPT_IDLE },
		{ "max-terminated", required_argument, NULL,
		    OPT_MAX_TERMINATED },
		{ "min-terminated-energy", required_argument, NULL,
		    OPT_MIN_TERMINATED_ENERGY },
		{ "split", required_argument, NULL, OPT_SPLIT },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "version", no_argument, NULL, KP_OPT_VERSION },
		KP_SAMPLE_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "ah", longopts, NULL)) != -1) {
		if (kp_sample_option(&o->sample, ch, optarg))
			continue;
		switch (ch) {
		case OPT_BASELINE_WATTS:
			parse_baseline(o, optarg);
			break;
		case OPT_DENOMINATOR:
			o->denom_mode = choice(optarg, "node", "processes",
			    "--denominator") ? DENOM_PROCESSES : DENOM_NODE;
			break;
		case OPT_IDLE:
			o->idle_mode = choice(optarg, "none", "proportional",
			    "--idle") ? IDLE_PROPORTIONAL : IDLE_NONE;
			break;
		case OPT_MAX_TERMINATED:
			o->max_terminated = kp_parse_int(optarg, 0, 1000000,
			    "--max-terminated");
			break;
		case OPT_MIN_TERMINATED_ENERGY:
			o->min_terminated_uj = kp_parse_joules_uj(optarg,
			    "--min-terminated-energy");
			break;
		case OPT_SPLIT:
			o->split_mode = choice(optarg, "ratio", "baseline",
			    "--split") ? SPLIT_BASELINE : SPLIT_RATIO;
			break;
		case OPT_STATE:
			*statepath = optarg;
			break;
		default:
			kp_usage_option(&usage, ch);
		}
	}
	kp_usage_no_operand(&usage, argc, argv);
	if ((o->split_mode == SPLIT_BASELINE) !=
	    (o->baseline_default >= 0 || o->nbaseline > 0))
		errx(KP_EXIT_USAGE, "--split baseline and --baseline-watts "
		    "go together");
}

int
main(int argc, char *argv[])
{
	struct attr a = { .opt = default_options, .input_name = "<stdin>" };
	const char *statepath = NULL;
	struct kp_state *st = NULL;
	struct kp_sampler *s;
	struct kp_reader *r;
	struct state_arg sa;
	int status;
	size_t i;

	kp_out_init();
	parse_options(&a.opt, &statepath, argc, argv);
	attr_init(&a);
	s = kp_sample_new(&a.opt.sample);
	/* Its exited records are attributed as upstream ones would be. */
	kp_sample_exits(s, &a.opt.sample);
	if (statepath) {
		st = kp_state_open(statepath, a.opt.sample.procdir,
		    "kp-attribute");
		load_state(&a, st, statepath, s);
		kp_state_loaded(st);
	}
	/* The baseline for sampling /proc here, should upstream bring no CPU. */
	if (!kp_sampler_has_baseline(s))
		(void)kp_sampler_scan(s);
	kp_signals_catch(NULL);
	r = kp_reader_open(STDIN_FILENO, a.input_name);
	run(&a, r, s, st);
	status = kp_reader_errors(r) ? KP_EXIT_DATAERR : KP_EXIT_OK;
	kp_state_need_input(st, kp_reader_lineno(r));
	sa.a = &a;
	sa.s = s;
	kp_state_end_by(st, kp_state_pending(st) ? state_write : NULL, &sa);
	kp_reader_close(r);
	kp_state_close(st);
	kp_sampler_free(s);
	kp_sample_free(&a.opt.sample);
	attr_free(&a);
	for (i = 0; i < a.opt.nbaseline; i++)
		free(a.opt.baseline_zone[i]);
	return kp_out_finish(status);
}
