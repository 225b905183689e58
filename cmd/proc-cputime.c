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
	OPT_CGROUP_ROOT = 256,
	OPT_EXITED,
	OPT_HEAD,
	OPT_KEEP_OPEN,
	OPT_NODE_NAME,
	OPT_PODS_LOG,
	OPT_PODMAN_ROOT,
	OPT_PROC,
	OPT_ROOT,
	OPT_STATE,
	OPT_TASKSTATS_BUFFER
};

/* Where names come from: the options in the order given, then the root. */
struct name_opts {
	const char *root;
	const char *pods_log;		/* NULL: below the root */
	const char **podman;		/* --podman-root, in order */
	size_t npodman;
};

/* The command line, read once by main and passed down. */
struct options {
	const char *procdir;
	const char *cgroup_root;	/* NULL: by --proc */
	const char *node_name;		/* --node-name; NULL: found */
	const char *statepath;		/* --state; NULL: none */
	int emit_all;			/* -a */
	int head;			/* --head */
	int exits;			/* KP_EXITS_*: --exited, less what */
					/* cannot be had */
	long long keep_open;
	long long taskstats_buffer;	/* bytes */
	struct kp_clock_opts clock;	/* -i, -n */
	struct name_opts names;
};

/* proc-cputime(1), SYNOPSIS and the options. */
static const struct kp_option_help option_help[] = {
	{ "-a, --all", "a record for every process, idle or not" },
	{ "-i, --interval duration", "sample on its own clock, every duration" },
	{ "-n, --count count", "stop after count intervals" },
	{ "--cgroup-root dir", "the cgroup file systems' mount point" },
	{ "--exited sources", "none, or parent,cgroup,taskstats" },
	{ "--head", "the head of a pipeline: no input" },
	{ "--keep-open count", "stat files kept open" },
	{ "--node-name name", "the node's name in the header" },
	{ "--pods-log dir", "the kubelet's pod log directory" },
	{ "--podman-root dir", "also a podman storage root" },
	{ "--proc dir", "read dir instead of /proc" },
	{ "--root dir", "the node's files that names come from" },
	{ "--state file", "one sample against the one kept in file" },
	{ "--taskstats-buffer bytes", "receive buffer for exit records" },
	{ NULL, NULL }
};
static const struct kp_usage usage = {
	"proc-cputime [-ah] [-i duration] [-n count] "
	"[--cgroup-root dir] [--exited sources]\n"
	"                    [--head] [--keep-open count] [--node-name name] "
	"[--pods-log dir]\n"
	"                    [--podman-root dir] [--proc dir] [--root dir] "
	"[--state file]\n"
	"                    [--taskstats-buffer bytes]", option_help
};

/* --exited: "none", or a comma-separated list of parent, cgroup, taskstats. */
static int
parse_exits(const char *arg)
{
	const char *p;
	size_t n;
	int sources = 0;

	if (strcmp(arg, "none") == 0)
		return 0;
	for (p = arg; ; p += n + 1) {
		n = strcspn(p, ",");
		if (n == 6 && strncmp(p, "parent", n) == 0)
			sources |= KP_EXITS_PARENT;
		else if (n == 6 && strncmp(p, "cgroup", n) == 0)
			sources |= KP_EXITS_CGROUP;
		else if (n == 9 && strncmp(p, "taskstats", n) == 0)
			sources |= KP_EXITS_TASKSTATS;
		else
			errx(KP_EXIT_USAGE, "exited sources must be none or a "
			    "list of parent, cgroup and taskstats: '%s'", arg);
		if (p[n] == '\0')
			return sources;
	}
}

/*
 * The cgroup counters of --cgroup-root; without it, this host's, unless
 * --proc names another tree: they would be this host's, not the tree's.
 */
static void
set_exits(struct kp_sampler *s, const struct options *o)
{
	if (kp_sampler_set_exits(s, o->exits, o->cgroup_root) < 0 &&
	    o->cgroup_root != NULL)
		warnx("%s: no cgroup CPU counters (cpu.stat, cpuacct.usage)",
		    o->cgroup_root);
}

/*
 * Whether dir is a live /proc of this process's PID namespace, as the
 * DaemonSet's /host/proc is with hostPID: its self is this process.  A
 * fixture tree has none.
 */
static int
live_proc(const char *dir)
{
	char *path = kp_asprintf("%s/self", dir), link[32];
	ssize_t n = readlink(path, link, sizeof(link) - 1);

	free(path);
	if (n <= 0)
		return 0;
	link[n] = '\0';
	return strtol(link, NULL, 10) == (long)getpid();
}

/*
 * The process events, where exit records are asked: they file each one
 * under the cgroup its process ran in.  Refused beside the exit records,
 * said once; where those were refused too, their message says it.
 */
static int
hear_events(struct kp_exits *x, const char *procdir, int quiet)
{
	struct kp_events *ev;
	char why[256];

	if ((ev = kp_events_open(procdir, why, sizeof(why))) == NULL) {
		if (!quiet)
			warnx("process events: %s: exit records under their "
			    "parents' cgroups", why);
		return 0;
	}
	kp_exits_set_events(x, ev);
	return 1;
}

/*
 * The kernel's exit records, where proc-cputime keeps running on a live
 * /proc: opened, proven, and drained from then on.  Refused, the reaping
 * parents and the cgroup counters stand in, with the process events
 * where they are heard without the exit records' privilege (Linux 6.6 and
 * later): they give a parent's residue its ended children's cgroup.  Said
 * once.
 */
static struct kp_exits *
listen_exits(struct options *o)
{
	struct kp_taskstats *ts;
	struct kp_exits *x;
	char why[256];

	if (!(o->exits & KP_EXITS_TASKSTATS))
		return NULL;
	o->exits &= ~KP_EXITS_TASKSTATS;
	if (!live_proc(o->procdir))
		return NULL;
	ts = kp_taskstats_open((size_t)o->taskstats_buffer, why, sizeof(why));
	x = kp_exits_new(ts);
	if (ts != NULL) {
		o->exits |= KP_EXITS_TASKSTATS;
		hear_events(x, o->procdir, 0);
		return x;
	}
	o->exits |= KP_EXITS_PARENT | KP_EXITS_CGROUP;
	if (hear_events(x, o->procdir, 1))
		warnx("taskstats: %s: exit accounting from the reaping parents, "
		    "the process events and the cgroup counters only", why);
	else
		warnx("taskstats: %s: exit accounting from the reaping parents "
		    "and the cgroup counters only", why);
	return x;
}

/* The listeners are readable: their facts, held for the next scan. */
static int
facts_ready(void *arg)
{
	kp_exits_ready(arg);
	return kp_exits_fd(arg);
}

/* The header that starts the stream, with the node's identity. */
static void
out_header(const struct options *o)
{
	struct kp_node node;

	kp_node_identify(&node, o->node_name, o->procdir);
	kp_out_header("proc-cputime", &node);
	kp_node_free(&node);
}

static void
scan(struct kp_sampler *s)
{
	if (kp_sampler_scan(s) < 0)
		errx(KP_EXIT_FAILURE, "%s", kp_sampler_error(s));
}

static struct kp_names *
names_new(const struct name_opts *o)
{
	struct kp_names *n = kp_names_new(o->root);
	size_t i;

	if (o->pods_log != NULL)
		kp_names_set_pods_log(n, o->pods_log);
	for (i = 0; i < o->npodman; i++)
		kp_names_add_podman_root(n, o->podman[i]);
	return n;
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
 * interval record; every record read is passed through as it came.
 */
static void
pass_stream(struct kp_sampler *s, struct filter *f, struct kp_reader *r)
{
	struct kp_record rec;

	kp_state_hold(f->st);
	while (kp_reader_next(r, &rec)) {
		if (strcmp(rec.type, "interval") == 0)
			end_interval(s, f, &rec);
		else
			kp_out_raw(rec.line, rec.len);
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
	kp_clock_poll(&listening, kp_exits_fd(x), facts_ready, x);
	if (x != NULL)
		kp_reader_set_wait(r, kp_clock_wait_input, &listening);
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
	kp_clock_poll(&clk, kp_exits_fd(x), facts_ready, x);
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
		{ "all", no_argument, NULL, 'a' },
		{ "cgroup-root", required_argument, NULL, OPT_CGROUP_ROOT },
		{ "count", required_argument, NULL, 'n' },
		{ "exited", required_argument, NULL, OPT_EXITED },
		{ "head", no_argument, NULL, OPT_HEAD },
		{ "help", no_argument, NULL, 'h' },
		{ "interval", required_argument, NULL, 'i' },
		{ "keep-open", required_argument, NULL, OPT_KEEP_OPEN },
		{ "node-name", required_argument, NULL, OPT_NODE_NAME },
		{ "pods-log", required_argument, NULL, OPT_PODS_LOG },
		{ "podman-root", required_argument, NULL, OPT_PODMAN_ROOT },
		{ "proc", required_argument, NULL, OPT_PROC },
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "taskstats-buffer", required_argument, NULL,
		    OPT_TASKSTATS_BUFFER },
		{ "version", no_argument, NULL, KP_OPT_VERSION },
		{ NULL, 0, NULL, 0 }
	};
	struct name_opts *no = &o->names;
	int ch;

	while ((ch = getopt_long(argc, argv, "ahi:n:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'a':
			o->emit_all = 1;
			break;
		case 'i':
		case 'n':
			kp_clock_option(&o->clock, ch, optarg);
			break;
		case OPT_CGROUP_ROOT:
			o->cgroup_root = optarg;
			break;
		case OPT_EXITED:
			o->exits = parse_exits(optarg);
			break;
		case OPT_HEAD:
			o->head = 1;
			break;
		case OPT_KEEP_OPEN:
			o->keep_open = kp_parse_int(optarg, 0, 1000000,
			    "keep-open");
			break;
		case OPT_NODE_NAME:
			if (*optarg == '\0')
				errx(KP_EXIT_USAGE, "--node-name wants a name");
			o->node_name = optarg;
			break;
		case OPT_PODS_LOG:
			no->pods_log = optarg;
			break;
		case OPT_PODMAN_ROOT:
			no->podman = kp_reallocarray(no->podman,
			    no->npodman + 1, sizeof(*no->podman));
			no->podman[no->npodman++] = optarg;
			break;
		case OPT_PROC:
			o->procdir = optarg;
			break;
		case OPT_ROOT:
			no->root = optarg;
			break;
		case OPT_STATE:
			o->statepath = optarg;
			break;
		case OPT_TASKSTATS_BUFFER:
			o->taskstats_buffer = kp_parse_int(optarg, 1, 1 << 30,
			    "taskstats-buffer");
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
		.procdir = "/proc", .keep_open = 2048,
		.exits = KP_EXITS_PARENT | KP_EXITS_CGROUP | KP_EXITS_TASKSTATS,
		.taskstats_buffer = KP_TASKSTATS_RCVBUF,
		.clock = KP_CLOCK_OPTS_INIT, .names = { "/", NULL, NULL, 0 },
	};
	int filter, status = KP_EXIT_OK;
	struct kp_sampler *s;
	struct kp_state *st = NULL;
	struct kp_names *names;
	struct kp_exits *x = NULL;

	kp_out_init();
	parse_options(&o, argc, argv);
	s = kp_sampler_new(o.procdir, o.emit_all);
	names = names_new(&o.names);
	free(o.names.podman);
	kp_sampler_set_names(s, names);
	filter = !o.clock.given && !o.head && stdin_is_stream();
	if (o.statepath)
		st = kp_state_open(o.statepath, o.procdir, "proc-cputime");
	if (filter || st == NULL)	/* not in a one-shot run */
		x = listen_exits(&o);
	o.exits &= ~(x == NULL ? KP_EXITS_TASKSTATS : 0);
	set_exits(s, &o);
	kp_sampler_set_facts(s, x);
	kp_sampler_set_keep_open(s, (size_t)o.keep_open);
	if (filter)
		status = filter_mode(s, st, o.statepath, x);
	else if (st)
		run_once(s, st, &o);
	else
		status = run_clock(s, &o, x);
	kp_state_close(st);
	kp_sampler_free(s);
	kp_exits_free(x);
	kp_names_free(names);
	return kp_out_finish(status);
}
