/*
 * kp-aggregate: sums each interval's process and exited records into
 * groups: container, pod, vm and unit records, and group records by any
 * field.  Every group is the exact sum of its members and of the exited
 * records that name it, and what belongs to no group of a level is that
 * level's host record, so that at every level
 * sum(groups) + host + unattributed = node active, exactly.
 */
#include <err.h>
#include <getopt.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aggregate.h"

/* Long options without a short form. */
enum {
	OPT_BY = 256,
	OPT_DROP_PROCESSES,
	OPT_LEVEL,
	OPT_STATE
};

/* kp-aggregate(1), SYNOPSIS and the options. */
static const struct kp_option_help option_help[] = {
	{ "--by field", "also group processes by this field" },
	{ "--drop-processes", "pass on the groups, not the processes" },
	{ "--level level,...", "container, pod, vm, unit (all four)" },
	{ "--state file", "sum over runs, kept in file" },
	{ NULL, NULL }
};
static const struct kp_usage usage = {
	"kp-aggregate [-h] [--by field] [--drop-processes] "
	"[--level level[,level ...]] [--state file]", option_help
};

/*
 * The options: the levels, --level's in the order given (all four without
 * it), then --by's.
 */
static void
parse_options(struct agg *a, int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "by", required_argument, NULL, OPT_BY },
		{ "drop-processes", no_argument, NULL, OPT_DROP_PROCESSES },
		{ "help", no_argument, NULL, 'h' },
		{ "level", required_argument, NULL, OPT_LEVEL },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "version", no_argument, NULL, KP_OPT_VERSION },
		{ NULL, 0, NULL, 0 }
	};
	const char *by[LEVELS_MAX];
	size_t i, nby = 0;
	int ch, level_given = 0;

	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case OPT_BY:
			check_by(optarg);
			if (nby == LEVELS_MAX)
				errx(KP_EXIT_USAGE, "at most %d levels",
				    LEVELS_MAX);
			by[nby++] = optarg;
			break;
		case OPT_DROP_PROCESSES:
			a->opt.drop_processes = 1;
			break;
		case OPT_LEVEL:
			parse_levels(a, optarg);
			level_given = 1;
			break;
		case OPT_STATE:
			a->opt.statepath = optarg;
			break;
		default:
			kp_usage_option(&usage, ch);
		}
	}
	kp_usage_no_operand(&usage, argc, argv);
	if (!level_given)
		parse_levels(a, "container,pod,vm,unit");
	for (i = 0; i < nby; i++)
		add_level(a, "group", by[i], 1);
}

/*
 * A run with nothing seen yet, its levels set: sparse, the members that
 * never end are held up to a bound (kp-aggregate(1), Records).
 */
void
agg_init(struct agg *a)
{
	struct level *lv;
	size_t l;

	for (l = 0; l < a->nlevels; l++) {
		lv = &a->levels[l];
		lv->groups = kp_map_new();
		memset(lv->host_total_uj, 0, sizeof(lv->host_total_uj));
	}
	memset(&a->zones, 0, sizeof(a->zones));
	memset(a->uuid, 0, sizeof(a->uuid));
	a->members = kp_map_new();
	memset(&a->live, 0, sizeof(a->live));
	a->live.map = a->members;
	a->live.seq_off = offsetof(struct member, last_seq);
	a->live.leave = member_leave;
	a->live.leave_arg = a;
	a->live.free_val = free;
	a->live.fate = "those seen least recently leave their groups";
	a->items = NULL;
	a->nitems = a->capitems = 0;
	memset(&a->out, 0, sizeof(a->out));
	clear_sums(a);
}

/* What agg_init made; the levels' fields stay, as the options gave them. */
static void
agg_clear(struct agg *a)
{
	size_t l, z;

	kp_map_free(a->members, free);
	for (l = 0; l < a->nlevels; l++)
		kp_map_free(a->levels[l].groups, level_free);
	free(a->items);
	free(a->out.s);
	for (z = 0; z < KP_ZONES_MAX; z++)
		free(a->uuid[z]);
}

void
agg_free(struct agg *a)
{
	size_t l;

	agg_clear(a);
	for (l = 0; l < a->nlevels; l++)
		free(a->levels[l].field);
}

/* Everything a run left, forgotten, its levels kept: a new run. */
void
agg_reset(struct agg *a)
{
	agg_clear(a);
	agg_init(a);
}

/*
 * A process or exited record: added, or refused, which leaves the reader's
 * ordering as it is in the stages after, which never see it; whether it is
 * to be passed on.
 */
static int
take_process(struct agg *a, struct kp_reader *r, const struct kp_record *rec)
{
	const char *why;

	if ((why = add_record(a, rec)) != NULL) {
		kp_reader_refuse(r, "%s %s", rec->type, why);
		return 0;
	}
	return !a->opt.drop_processes;
}

/* The stream, interval by interval. */
static void
run(struct agg *a, struct kp_reader *r, struct kp_state *st)
{
	struct kp_record rec;
	int64_t dt_us = 0;

	/* Every record of an interval waits for its state (--state). */
	kp_state_hold(st);
	while (kp_reader_next(r, &rec) > 0) {
		if (rec.cut_seq >= 0)
			drop_interval(a);
		if (strcmp(rec.type, "interval") == 0) {
			kp_rec_int(&rec, "dt_us", &dt_us);
			end_interval(a, rec.seq, dt_us);
			kp_out_raw(rec.line, rec.len);
			kp_state_interval_end_by(st, kp_state_due(st) ?
			    state_write : NULL, a);
			kp_out_flush();
			continue;
		}
		if (consumed(&rec)) {
			if (!take_process(a, r, &rec))
				continue;
		} else if (strcmp(rec.type, "node") == 0 ||
		    strcmp(rec.type, "unattributed") == 0)
			see_zone(a, &rec);
		kp_out_raw(rec.line, rec.len);
	}
}

int
main(int argc, char *argv[])
{
	struct agg a = { .nlevels = 0, .input_name = "<stdin>" };
	const char *statepath;
	struct kp_state *st = NULL;
	struct kp_reader *r;
	int status;

	kp_out_init();
	parse_options(&a, argc, argv);
	agg_init(&a);
	statepath = a.opt.statepath;
	if (statepath) {
		st = kp_state_open(statepath, "/proc", "kp-aggregate");
		load_state(&a, st, statepath);
		kp_state_loaded(st);
	}
	kp_signals_catch(NULL);
	r = kp_reader_open(STDIN_FILENO, a.input_name);
	run(&a, r, st);
	status = kp_reader_errors(r) ? KP_EXIT_DATAERR : KP_EXIT_OK;
	kp_state_need_input(st, kp_reader_lineno(r));
	kp_state_end_by(st, kp_state_pending(st) ? state_write : NULL, &a);
	kp_reader_close(r);
	kp_state_close(st);
	agg_free(&a);
	return kp_out_finish(status);
}
