/*
 * rapl-read: the energy of each RAPL zone per interval, from the kernel's
 * powercap counters, from ACPI power meters, or an estimate from /proc/stat
 * where there are neither.
 */
#include <err.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rapl.h"

/* Long options without a short form; a source's own are OPT_SOURCE_OWN. */
enum {
	OPT_LIST = 256,
	OPT_NODE_NAME,
	OPT_PER_SOCKET,
	OPT_PROC,
	OPT_SOURCE,
	OPT_STATE,
	OPT_SYSFS
};

/* rapl-read(1), SYNOPSIS and the options, the model source's included. */
static const struct kp_option_help option_help[] = {
	{ "-i, --interval duration", "end an interval every duration (1s)" },
	{ "-n, --count count", "stop after count intervals" },
	{ "-o, --output file", "write the records to file" },
	{ "-q, --quiet", "do not say why --source auto fell back" },
	{ "-v, --verbose", "say why on every --state run, not once" },
	{ "-z, --zones zone,...", "only these zones; node: the total" },
	{ "--bmc url", "the BMC: https://host[:port], for ipmi a host" },
	{ "--bmc-ca file", "trust the BMC's certificate from this CA" },
	{ "--bmc-chassis id", "read this Chassis (the first)" },
	{ "--bmc-connect-timeout duration", "to connect to the BMC (5s)" },
	{ "--bmc-credentials file", "the BMC's user and password (0600)" },
	{ "--bmc-period duration", "at most one request this often (1s)" },
	{ "--bmc-timeout duration", "for a whole request (10s)" },
	{ "--idle-watts watts", "the model's power at idle" },
	{ "--insecure", "do not check the BMC's certificate" },
	{ "--list", "print the counters found and exit" },
	{ "--max-watts watts", "the model's power at full load" },
	{ "--model-table file", "the model's table from file" },
	{ "--node-name name", "the node's name in the header" },
	{ "--per-socket", "a record per socket" },
	{ "--proc dir", "read dir instead of /proc" },
	{ "--source auto|source,...", "where the energy comes from" },
	{ "--state file", "one interval since the run kept in file" },
	{ "--sysfs dir", "read dir instead of /sys" },
	{ NULL, NULL }
};
static const struct kp_usage usage = {
	"rapl-read [-hqv] [-i duration] [-n count] [-o file] [-z zone,...]\n"
	"                 [--bmc url] [--bmc-ca file] [--bmc-chassis id]\n"
	"                 [--bmc-connect-timeout duration] [--bmc-credentials file]\n"
	"                 [--bmc-period duration] [--bmc-timeout duration]\n"
	"                 [--idle-watts watts] [--insecure] [--list] "
	"[--max-watts watts]\n"
	"                 [--model-table file] [--node-name name] "
	"[--per-socket]\n"
	"                 [--proc dir] [--source auto|source,...] "
	"[--state file]\n"
	"                 [--sysfs dir] [-- command [arg ...]]", option_help
};

/* -z package,dram: the zones to report, node being the node's total. */
static void
parse_zones(struct meter *m, char *list)
{
	const char *zone;

	while ((zone = strsep(&list, ",")) != NULL) {
		if (*zone == '\0' || strlen(zone) > NAME_MAX)
			errx(KP_EXIT_USAGE, "zones must be a list of names "
			    "separated by commas: '%s'", zone);
		if (strcmp(zone, "meter") == 0)	/* kp-records 1.1's name */
			zone = "platform";
		m->zones = kp_reallocarray(m->zones, m->nzones + 1,
		    sizeof(*m->zones));
		m->zones[m->nzones++] = zone;
	}
}

static void
list_status(const struct member *mb, char *status, size_t len)
{
	char how[256];

	if (mb->bad[0] != '\0')
		snprintf(status, len, "unreadable: %s: %s",
		    strrchr(mb->bad, '/') + 1, strerror(mb->errnum));
	else if (mb->dup_of[0] != '\0')
		snprintf(status, len, "duplicate of %s", mb->dup_of);
	else if (mb->src->estimates && mb->src->describe != NULL) {
		mb->src->describe(how, sizeof(how));
		snprintf(status, len, "estimate: %s", how);
	} else
		snprintf(status, len, "readable");
}

static void
list_one(const struct member *mb)
{
	char socket[16], range[32], enabled[8], status[PATH_MAX + 320];

	snprintf(socket, sizeof(socket), "%d", mb->socket);
	snprintf(range, sizeof(range), "%llu", (unsigned long long)mb->max_uj);
	snprintf(enabled, sizeof(enabled), "%d", mb->enabled);
	list_status(mb, status, sizeof(status));
	printf("%s\t%s\t%s\t%s\t%s\t%s\n",
	    mb->zone[0] != '\0' ? mb->zone : "?",
	    mb->socket >= 0 ? socket : "-", mb->bad[0] != '\0' &&
	    mb->zone[0] == '\0' ? mb->bad : mb->where,
	    mb->max_uj > 0 ? range : "-", mb->enabled >= 0 ? enabled : "-",
	    status);
}

/*
 * The counters of one source, listed; the exit status they make of
 * status (see list), and why it cannot be used in *why_not (NULL if it
 * can, or if that was said here, as a directory that cannot be read
 * is), for the caller to free.  1 if one of them can be read.
 */
static int
list_source(struct meter *m, const struct source *src, int *status,
    char **why_not)
{
	const struct member *mb;
	char why[2 * PATH_MAX];
	size_t i;
	int rv, readable = 0, listed = 0;

	m->running[m->nrunning++] = src;
	rv = src->open(m, why, sizeof(why));
	*why_not = rv != 0 ? kp_strdup(why) : NULL;
	for (i = 0; i < m->nmembers; i++) {
		mb = &m->members[i];
		if (mb->src != src)
			continue;
		listed = 1;
		list_one(mb);
		if (mb->dup_of[0] == '\0' && mb->bad[0] == '\0')
			readable = 1;
		else if (mb->dup_of[0] == '\0' && denied(mb->errnum))
			*status = KP_EXIT_NOPERM;
		else if (mb->dup_of[0] == '\0' && *status != KP_EXIT_NOPERM)
			*status = KP_EXIT_FAILURE;
	}
	if (rv != 0 && rv != KP_EXIT_NOSOURCE && !listed) {
		warnx("%s", why);
		free(*why_not);
		*why_not = NULL;
	}
	return readable;
}

/*
 * --list: every counter of the sources asked for (every source auto may
 * choose), one a line; an estimating source's row only where it was
 * named, or where no counter measures, with why on standard error.  0
 * if every counter listed can be read, 5 if one is denied, 1 if one
 * cannot be read otherwise, 4 if no counter measures.
 */
static int
list(struct meter *m)
{
	const struct source *named[sizeof(m->running) /
	    sizeof(m->running[0])];
	const struct source *const *srcs = sources;
	char *why[sizeof(named) / sizeof(named[0])] = { NULL };
	size_t i, n = m->nrunning;
	int status = KP_EXIT_OK, measures = 0, estimates = 0;

	memcpy(named, m->running, sizeof(named));
	if (n > 0)
		srcs = named;
	else
		for (n = 0; sources[n] != NULL; n++)
			continue;
	m->nrunning = 0;
	printf("zone\tsocket\tpath\tmax_energy_range_uj\tenabled\tstatus\n");
	for (i = 0; i < n; i++)
		if (!srcs[i]->estimates && (srcs == named || srcs[i]->in_auto))
			measures |= list_source(m, srcs[i], &status, &why[i]);
	for (i = 0; i < n; i++) {
		if (why[i] != NULL && !measures)
			warnx("%s", why[i]);
		free(why[i]);
	}
	for (i = 0; i < n && (srcs == named || !measures); i++)
		if (srcs[i]->estimates && (srcs == named || srcs[i]->in_auto)) {
			estimates |= list_source(m, srcs[i], &status, &why[i]);
			free(why[i]);
		}
	if (!measures && !(srcs == named && estimates) &&
	    status == KP_EXIT_OK)
		status = KP_EXIT_NOSOURCE;
	close_sources(m);
	return kp_out_finish(status);
}

/*
 * The long options: rapl-read's own, then each source's; *owner[i] is
 * the source of option i, NULL for rapl-read's.
 */
static struct option *
long_options(const struct source ***owner)
{
	static const struct option own[] = {
		{ "count", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ "interval", required_argument, NULL, 'i' },
		{ "list", no_argument, NULL, OPT_LIST },
		{ "node-name", required_argument, NULL, OPT_NODE_NAME },
		{ "output", required_argument, NULL, 'o' },
		{ "per-socket", no_argument, NULL, OPT_PER_SOCKET },
		{ "proc", required_argument, NULL, OPT_PROC },
		{ "quiet", no_argument, NULL, 'q' },
		{ "source", required_argument, NULL, OPT_SOURCE },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "sysfs", required_argument, NULL, OPT_SYSFS },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, KP_OPT_VERSION },
		{ "zones", required_argument, NULL, 'z' }
	};
	const struct option *o;
	struct option *opts;
	size_t i, n = sizeof(own) / sizeof(own[0]);

	opts = kp_reallocarray(NULL, n + 1, sizeof(*opts));
	*owner = kp_calloc(n + 1, sizeof(**owner));
	memcpy(opts, own, sizeof(own));
	for (i = 0; sources[i] != NULL; i++)
		for (o = sources[i]->options; o != NULL && o->name != NULL;
		    o++) {
			opts = kp_reallocarray(opts, n + 2, sizeof(*opts));
			*owner = kp_reallocarray(*owner, n + 2,
			    sizeof(**owner));
			opts[n] = *o;
			(*owner)[n++] = sources[i];
		}
	memset(&opts[n], 0, sizeof(*opts));
	return opts;
}

/* -i, -n, --state and a command: which go together. */
static void
check_mode(const struct kp_clock_opts *clock, const char *statepath,
    int command)
{
	kp_clock_opts_check(clock, statepath);
	if (command && (statepath != NULL || clock->count != 0))
		errx(KP_EXIT_USAGE, "a command cannot be used with --state "
		    "or -n");
}

int
main(int argc, char *argv[])
{
	const struct source **owner;
	struct option *longopts = long_options(&owner);
	struct meter m = { .sysfs = "/sys", .procdir = "/proc",
	    .command_stdout = -1 };
	const char *statepath = NULL, *outpath = NULL;
	struct kp_state *st;
	struct kp_clock_opts clock = KP_CLOCK_OPTS_INIT;
	int listing = 0, status = KP_EXIT_OK, ch, index;

	kp_out_init();
	while ((ch = getopt_long(argc, argv, "+hi:n:o:qvz:", longopts,
	    &index)) != -1) {
		switch (ch) {
		case 'i':
		case 'n':
			kp_clock_option(&clock, ch, optarg);
			break;
		case 'o':
			outpath = optarg;
			break;
		case 'q':
			m.fallback_talk = -1;
			break;
		case 'v':
			m.fallback_talk = 1;
			break;
		case 'z':
			parse_zones(&m, optarg);
			break;
		case OPT_LIST:
			listing = 1;
			break;
		case OPT_NODE_NAME:
			if (*optarg == '\0')
				errx(KP_EXIT_USAGE, "--node-name wants a name");
			m.node_name = optarg;
			break;
		case OPT_PER_SOCKET:
			m.per_socket = 1;
			break;
		case OPT_PROC:
			m.procdir = optarg;
			break;
		case OPT_SOURCE:
			parse_sources(&m, optarg);
			break;
		case OPT_STATE:
			statepath = optarg;
			break;
		case OPT_SYSFS:
			m.sysfs = optarg;
			break;
		case OPT_SOURCE_OWN:
			owner[index]->option(longopts[index].name, optarg);
			break;
		default:
			kp_usage_option(&usage, ch);
		}
	}
	free(owner);
	free(longopts);
	for (index = 0; sources[index] != NULL; index++)
		if (sources[index]->option != NULL)
			sources[index]->option(NULL, NULL);
	argc -= optind;
	argv += optind;
	if (argc > 0 && strcmp(argv[-1], "--") != 0)
		kp_usage_error(&usage, "unexpected argument '%s' (a command "
		    "follows --)", argv[0]);
	check_mode(&clock, statepath, argc > 0);
	if (listing) {
		free(m.zones);
		m.zones = NULL;
		return list(&m);
	}

	if (outpath != NULL || argc > 0)
		setup_output(&m, outpath, argc > 0);
	open_sources(&m);
	if (statepath != NULL) {
		st = kp_state_open(statepath, m.procdir, "rapl-read");
		run_once(&m, st, statepath);
		kp_state_close(st);
	} else {
		say_fallback(&m, NULL);
		status = argc > 0 ? run_command(&m, clock.interval_us, argv) :
		    run_clock(&m, clock.interval_us, clock.count);
	}
	close_sources(&m);
	free(m.zones);
	return kp_out_finish(status);
}
