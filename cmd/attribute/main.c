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
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attribute.h"

struct options opt = {
	.procdir = "/proc", .split_mode = SPLIT_RATIO, .idle_mode = IDLE_NONE,
	.denom_mode = DENOM_NODE, .baseline_default = -1,
	.max_terminated = 500, .min_terminated_uj = 0,
};

struct kp_zones zones = { .socket_keys = 1 };
struct node_totals node_total[KP_ZONES_MAX];
int64_t unattributed_total[KP_ZONES_MAX];
struct kp_map *workloads;
struct ended *ended;
size_t nended;

static void usage(void);

static void
usage(void)
{
	fprintf(stderr, "usage: kp-attribute [-h] [--denominator node|processes] "
	    "[--idle none|proportional] [--max-terminated n] "
	    "[--min-terminated-energy joules] [--proc dir] "
	    "[--split ratio|baseline] [--baseline-watts [zone=]watts] "
	    "[--state file]\n");
	exit(KP_EXIT_USAGE);
}

/*
 * The stream, interval by interval.  With --state, the state that counts
 * an interval is prepared before any of its records goes out, those passed
 * on as they came included, and committed after them, at most once a
 * second (D5).
 */
static void
run(struct kp_reader *r, struct kp_sampler *s, struct kp_state *st)
{
	struct interval iv;
	struct kp_record rec;

	memset(&iv, 0, sizeof(iv));
	iv.seq = -1;
	/* Never NULL, so that offsets into them are always defined. */
	iv.text.cap = iv.lines.cap = 256;
	iv.text.s = kp_malloc(iv.text.cap);
	iv.lines.s = kp_malloc(iv.lines.cap);
	kp_state_hold(st);
	while (kp_reader_next(r, &rec) > 0) {
		if (rec.cut_seq >= 0)
			pass_cut(&iv);
		if (strcmp(rec.type, "interval") == 0) {
			end_interval(r, &iv, &rec, s);
			kp_state_interval_end(st, kp_state_due(st) ?
			    state_data(s) : NULL);
		} else if (consumed(&rec))
			hold(r, &rec, &iv);
		else
			kp_out_raw(rec.line, rec.len);
	}
	/* The stream ended inside an interval, which the reader reported. */
	pass_lines(&iv.lines);
	free(iv.energy);
	free(iv.procs);
	free(iv.exited);
	free(iv.text.s);
	free(iv.lines.s);
}

static void
parse_baseline(const char *arg)
{
	const char *eq = strchr(arg, '=');

	if (eq == NULL) {
		opt.baseline_default = kp_parse_double(arg, 0, 1e6,
		    "--baseline-watts");
		return;
	}
	if (opt.nbaseline == KP_ZONES_MAX)
		errx(KP_EXIT_USAGE, "too many --baseline-watts zones");
	opt.baseline_zone[opt.nbaseline] = kp_strndup(arg,
	    (size_t)(eq - arg));
	opt.baseline_watts[opt.nbaseline++] = kp_parse_double(eq + 1, 0, 1e6,
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

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "baseline-watts", required_argument, NULL, 'B' },
		{ "denominator", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ "idle", required_argument, NULL, 'I' },
		{ "max-terminated", required_argument, NULL, 'M' },
		{ "min-terminated-energy", required_argument, NULL, 'E' },
		{ "proc", required_argument, NULL, 'P' },
		{ "split", required_argument, NULL, 'L' },
		{ "state", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 }
	};
	const char *statepath = NULL;
	struct kp_state *st = NULL;
	struct kp_sampler *s;
	struct kp_reader *r;
	int ch, status;
	size_t i;

	kp_out_init();
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'B':
			parse_baseline(optarg);
			break;
		case 'D':
			opt.denom_mode = choice(optarg, "node", "processes",
			    "--denominator") ? DENOM_PROCESSES : DENOM_NODE;
			break;
		case 'E':
			opt.min_terminated_uj = (int64_t)llround(kp_parse_double(
			    optarg, 0, 1e12, "--min-terminated-energy") * 1e6);
			break;
		case 'I':
			opt.idle_mode = choice(optarg, "none", "proportional",
			    "--idle") ? IDLE_PROPORTIONAL : IDLE_NONE;
			break;
		case 'L':
			opt.split_mode = choice(optarg, "ratio", "baseline",
			    "--split") ? SPLIT_BASELINE : SPLIT_RATIO;
			break;
		case 'M':
			opt.max_terminated = kp_parse_int(optarg, 0, 1000000,
			    "--max-terminated");
			break;
		case 'P':
			opt.procdir = optarg;
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
	if ((opt.split_mode == SPLIT_BASELINE) !=
	    (opt.baseline_default >= 0 || opt.nbaseline > 0))
		errx(KP_EXIT_USAGE, "--split baseline and --baseline-watts "
		    "go together");

	workloads = kp_map_new();
	s = kp_sampler_new(opt.procdir, 0);
	/* Its exited records are attributed as upstream ones would be. */
	(void)kp_sampler_set_exits(s, KP_EXITS_PARENT | KP_EXITS_CGROUP, NULL);
	if (statepath) {
		st = kp_state_open(statepath, opt.procdir, "kp-attribute");
		load_state(st, statepath, s);
	}
	/* The baseline for sampling /proc here, should upstream bring no CPU. */
	if (!kp_sampler_has_baseline(s))
		(void)kp_sampler_scan(s);
	kp_signals_catch(NULL);
	r = kp_reader_open(STDIN_FILENO, "<stdin>");
	run(r, s, st);
	status = kp_reader_errors(r) ? KP_EXIT_DATAERR : KP_EXIT_OK;
	kp_state_need_input(st, kp_reader_lineno(r));
	kp_state_end(st, kp_state_pending(st) ? state_data(s) : NULL);
	kp_reader_close(r);
	kp_state_close(st);
	kp_sampler_free(s);
	kp_map_free(workloads, free);
	for (i = 0; i < nended; i++)
		free(ended[i].id);
	free(ended);
	for (i = 0; i < opt.nbaseline; i++)
		free(opt.baseline_zone[i]);
	split_free();
	return kp_out_finish(status);
}
