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

/* Long options without a short form. */
enum {
	OPT_IDLE_WATTS = 256,
	OPT_LIST,
	OPT_MAX_WATTS,
	OPT_NODE_NAME,
	OPT_PER_SOCKET,
	OPT_PROC,
	OPT_SOURCE,
	OPT_STATE,
	OPT_SYSFS
};

static void usage(void);

static void
usage(void)
{
	fprintf(stderr, "usage: rapl-read [-h] [-i duration] [-n count] "
	    "[-z zone,...] [--idle-watts watts]\n"
	    "                 [--list] [--max-watts watts] "
	    "[--node-name name] [--per-socket]\n"
	    "                 [--proc dir] [--source auto|powercap|hwmon|model] "
	    "[--state file]\n"
	    "                 [--sysfs dir] [-- command [arg ...]]\n");
	exit(KP_EXIT_USAGE);
}

static enum source
parse_source(const char *s)
{
	if (strcmp(s, "auto") == 0)
		return SOURCE_AUTO;
	if (strcmp(s, "powercap") == 0)
		return SOURCE_POWERCAP;
	if (strcmp(s, "hwmon") == 0)
		return SOURCE_HWMON;
	if (strcmp(s, "model") == 0)
		return SOURCE_MODEL;
	errx(KP_EXIT_USAGE, "source must be auto, powercap, hwmon or model: "
	    "'%s'", s);
}

const char *
source_name(enum source source)
{
	static const char *const names[] = {
		"auto", "powercap", "hwmon", "model"
	};

	return names[source];
}

/* -z package,dram: the zones to report, node being the node's total. */
static void
parse_zones(struct meter *m, char *list)
{
	char *zone;

	while ((zone = strsep(&list, ",")) != NULL) {
		if (*zone == '\0' || strlen(zone) > NAME_MAX)
			errx(KP_EXIT_USAGE, "zones must be a list of names "
			    "separated by commas: '%s'", zone);
		m->zones = kp_reallocarray(m->zones, m->nzones + 1,
		    sizeof(*m->zones));
		m->zones[m->nzones++] = zone;
	}
}

static void
list_one(const struct member *mb)
{
	char socket[16], range[32], enabled[8], status[PATH_MAX + 64];

	snprintf(socket, sizeof(socket), "%d", mb->socket);
	snprintf(range, sizeof(range), "%llu", (unsigned long long)mb->max_uj);
	snprintf(enabled, sizeof(enabled), "%d", mb->enabled);
	if (mb->bad[0] != '\0')
		snprintf(status, sizeof(status), "unreadable: %s: %s",
		    strrchr(mb->bad, '/') + 1, strerror(mb->errnum));
	else if (mb->dup_of[0] != '\0')
		snprintf(status, sizeof(status), "duplicate of %s",
		    mb->dup_of);
	else
		snprintf(status, sizeof(status), "readable");
	printf("%s\t%s\t%s\t%s\t%s\t%s\n",
	    mb->zone[0] != '\0' ? mb->zone : "?",
	    mb->socket >= 0 ? socket : "-", mb->bad[0] != '\0' &&
	    mb->zone[0] == '\0' ? mb->bad : mb->path,
	    mb->max_uj > 0 ? range : "-", mb->enabled >= 0 ? enabled : "-",
	    status);
}

/*
 * --list: every counter of the sources asked for, one a line.  0 if every
 * counter listed can be read, 5 if one is denied, 4 if there is none.
 */
static int
list(struct meter *m, enum source want)
{
	enum source sources[] = { SOURCE_POWERCAP, SOURCE_HWMON };
	const struct member *mb;
	char why[2 * PATH_MAX];
	int status = KP_EXIT_NOSOURCE, found = 0;
	size_t i, s;

	printf("zone\tsocket\tpath\tmax_energy_range_uj\tenabled\tstatus\n");
	for (s = 0; s < 2; s++) {
		if (want != SOURCE_AUTO && want != sources[s])
			continue;
		(void)try_source(m, sources[s], why, sizeof(why));
		if (m->dir_errnum != 0)
			warnx("%s", why);
		for (i = 0; i < m->nmembers; i++) {
			mb = &m->members[i];
			list_one(mb);
			found = 1;
			if (mb->dup_of[0] != '\0' || mb->bad[0] == '\0')
				continue;
			if (denied(mb->errnum))
				status = KP_EXIT_NOPERM;
			else if (status != KP_EXIT_NOPERM)
				status = KP_EXIT_FAILURE;
		}
		close_members(m);
	}
	if (found && status == KP_EXIT_NOSOURCE)
		status = KP_EXIT_OK;
	return kp_out_finish(status);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "count", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ "idle-watts", required_argument, NULL, OPT_IDLE_WATTS },
		{ "interval", required_argument, NULL, 'i' },
		{ "list", no_argument, NULL, OPT_LIST },
		{ "max-watts", required_argument, NULL, OPT_MAX_WATTS },
		{ "node-name", required_argument, NULL, OPT_NODE_NAME },
		{ "per-socket", no_argument, NULL, OPT_PER_SOCKET },
		{ "proc", required_argument, NULL, OPT_PROC },
		{ "source", required_argument, NULL, OPT_SOURCE },
		{ "state", required_argument, NULL, OPT_STATE },
		{ "sysfs", required_argument, NULL, OPT_SYSFS },
		{ "zones", required_argument, NULL, 'z' },
		{ NULL, 0, NULL, 0 }
	};
	struct meter m = {
		.sysfs = "/sys", .procdir = "/proc",
		.idle_watts = 10, .max_watts = 50
	};
	enum source want = SOURCE_AUTO;
	const char *statepath = NULL;
	struct kp_state *st;
	int64_t interval_us = 1000000;
	long long count = 0;
	int clock = 0, listing = 0, status = KP_EXIT_OK, ch;

	kp_out_init();
	while ((ch = getopt_long(argc, argv, "+hi:n:z:", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'i':
			interval_us = kp_parse_duration_us(optarg, "interval");
			clock = 1;
			break;
		case 'n':
			count = kp_parse_int(optarg, 1, INT64_MAX, "count");
			clock = 1;
			break;
		case 'z':
			parse_zones(&m, optarg);
			break;
		case OPT_IDLE_WATTS:
			m.idle_watts = kp_parse_double(optarg, 0, 100000,
			    "idle watts");
			break;
		case OPT_LIST:
			listing = 1;
			break;
		case OPT_MAX_WATTS:
			m.max_watts = kp_parse_double(optarg, 0, 100000,
			    "max watts");
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
			want = parse_source(optarg);
			break;
		case OPT_STATE:
			statepath = optarg;
			break;
		case OPT_SYSFS:
			m.sysfs = optarg;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc > 0 && strcmp(argv[-1], "--") != 0)
		usage();
	if (clock && statepath != NULL)
		errx(KP_EXIT_USAGE, "--state cannot be used with -i or -n");
	if (argc > 0 && (statepath != NULL || count != 0))
		errx(KP_EXIT_USAGE, "a command cannot be used with --state "
		    "or -n");
	if (m.idle_watts > m.max_watts)
		errx(KP_EXIT_USAGE, "idle watts must not exceed max watts: "
		    "%g > %g", m.idle_watts, m.max_watts);
	if (listing) {
		free(m.zones);
		m.zones = NULL;
		return list(&m, want);
	}

	open_source(&m, want);
	if (statepath != NULL) {
		st = kp_state_open(statepath, m.procdir, "rapl-read");
		run_once(&m, st, statepath);
		kp_state_close(st);
	} else if (argc > 0)
		status = run_command(&m, interval_us, argv);
	else
		status = run_clock(&m, interval_us, count);
	close_members(&m);
	free(m.zones);
	return kp_out_finish(status);
}
