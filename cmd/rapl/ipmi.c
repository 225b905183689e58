/*
 * rapl-read's source ipmi: the machine's power at its supply from the
 * BMC's DCMI power reading, through ipmitool, or FreeIPMI's ipmi-dcmi where
 * that is what is installed, run as commands, as zone platform
 * (rapl-read(1), The BMC sources).
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rapl.h"

extern const struct source ipmi_source;
extern char **environ;

/* The most of a tool's output kept: its answer is a dozen lines. */
#define MAX_OUTPUT_BYTES	16384

static char tool[PATH_MAX];		/* the one found on PATH */
static int freeipmi;			/* tool is ipmi-dcmi */
static char secret_path[PATH_MAX];	/* the password's file; "": none */
static int exit_status;			/* at start, for a failed fetch */

/* The first of ipmitool and ipmi-dcmi on PATH; 0 if neither is. */
static int
find_tool(void)
{
	static const char *const names[] = { "ipmitool", "ipmi-dcmi" };
	const char *path = getenv("PATH");
	char *dirs, *dir, *p;
	size_t i;

	for (i = 0; i < 2; i++) {
		dirs = p = kp_strdup(path != NULL ? path : "/usr/bin:/bin");
		while ((dir = strsep(&p, ":")) != NULL) {
			snprintf(tool, sizeof(tool), "%s/%s",
			    *dir != '\0' ? dir : ".", names[i]);
			if (access(tool, X_OK) == 0) {
				free(dirs);
				freeipmi = i == 1;
				return 1;
			}
		}
		free(dirs);
	}
	return 0;
}

/*
 * The password in a file of mode 0600 for the tool: all of ipmitool's -f
 * file; a line of ipmi-dcmi's --config-file.
 */
static void
write_secret(void)
{
	const char *tmp = getenv("TMPDIR");
	int fd;

	xpath(secret_path, sizeof(secret_path), "%s/kp-ipmi-XXXXXX",
	    tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
	if ((fd = mkstemp(secret_path)) < 0)
		err(KP_EXIT_FAILURE, "cannot make a file in '%s'",
		    tmp != NULL ? tmp : "/tmp");
	if (fchmod(fd, 0600) < 0 || dprintf(fd, "%s%s\n", freeipmi ?
	    "password " : "", bmc_password) < 0 || close(fd) < 0) {
		unlink(secret_path);
		err(KP_EXIT_FAILURE, "cannot write '%s'", secret_path);
	}
}

/* The tool's arguments: the local BMC, or --bmc over the LAN. */
static void
tool_argv(const char *argv[16])
{
	size_t n = 0;

	argv[n++] = tool;
	if (bmc_target != NULL && !freeipmi) {
		argv[n++] = "-I", argv[n++] = "lanplus";
		argv[n++] = "-H", argv[n++] = bmc_target;
		argv[n++] = "-U", argv[n++] = bmc_user;
		argv[n++] = "-f", argv[n++] = secret_path;
	} else if (bmc_target != NULL) {
		argv[n++] = "-D", argv[n++] = "LAN_2_0";
		argv[n++] = "-h", argv[n++] = bmc_target;
		argv[n++] = "-u", argv[n++] = bmc_user;
		argv[n++] = "--config-file", argv[n++] = secret_path;
	}
	if (freeipmi)
		argv[n++] = "--get-system-power-statistics";
	else
		argv[n++] = "dcmi", argv[n++] = "power", argv[n++] = "reading";
	argv[n] = NULL;
}

/* The tool started, its output and errors on out[0] and errout[0]. */
static pid_t
spawn_tool(int out[2], int errout[2])
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	const char *argv[16];
	sigset_t none, all;
	pid_t pid;
	int rc;

	tool_argv(argv);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, errout[1], 2);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK |
	    POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
	rc = posix_spawn(&pid, tool, &fa, &attr, (char *const *)argv,
	    environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(out[1]);
	close(errout[1]);
	errno = rc;
	return rc == 0 ? pid : -1;
}

struct output {
	char text[2][MAX_OUTPUT_BYTES];	/* standard output, error */
	size_t len[2];
};

/* Reads both pipes until they close or the deadline: 0, or -1 (time). */
static int
collect(int fds[2], struct output *o, int64_t deadline_us)
{
	struct pollfd pfd[2] = { { .fd = fds[0], .events = POLLIN },
	    { .fd = fds[1], .events = POLLIN } };
	ssize_t n;
	int i, open = 2;
	int64_t left_us;

	while (open > 0) {
		if ((left_us = deadline_us - kp_mono_us()) <= 0 ||
		    bmc_quitting())
			return -1;
		if (poll(pfd, 2, (int)(left_us / 1000 + 1)) < 0 &&
		    errno != EINTR)
			return -1;
		for (i = 0; i < 2; i++) {
			if (pfd[i].fd < 0 || pfd[i].revents == 0)
				continue;
			n = read(pfd[i].fd, o->text[i] + o->len[i],
			    MAX_OUTPUT_BYTES - 1 - o->len[i]);
			if (n > 0)
				o->len[i] += (size_t)n;
			else {
				pfd[i].fd = -1;
				open--;
			}
		}
	}
	return 0;
}

/* The tool run to its end or the timeout: its exit status, or -1. */
static int
run_tool(struct output *o, char *why, size_t len)
{
	int out[2], errout[2], fds[2], status = -1, timed_out;
	pid_t pid;

	memset(o, 0, sizeof(*o));
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errout, O_CLOEXEC) < 0)
		err(KP_EXIT_FAILURE, "pipe");
	if ((pid = spawn_tool(out, errout)) < 0) {
		snprintf(why, len, "cannot run '%s': %s", tool,
		    strerror(errno));
		close(out[0]);
		close(errout[0]);
		return -1;
	}
	fds[0] = out[0];
	fds[1] = errout[0];
	timed_out = collect(fds, o, kp_mono_us() + bmc_timeout_ms * 1000) < 0;
	if (timed_out)
		kill(pid, SIGKILL);
	close(out[0]);
	close(errout[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	o->text[0][o->len[0]] = o->text[1][o->len[1]] = '\0';
	if (timed_out) {
		snprintf(why, len, "%s gave no answer in %ld ms", tool,
		    bmc_timeout_ms);
		return -1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * Each error the tools print, and what it means (rapl-read(1), The BMC
 * sources): the first found in the tool's output names the failure.
 */
static const struct {
	const char *printed;
	const char *meaning;
	int status;			/* at start */
} known_errors[] = {
	{ "Could not open device", "no local BMC device (/dev/ipmi0): load "
	    "the ipmi_si and ipmi_devintf modules, or name a BMC with --bmc",
	    KP_EXIT_NOSOURCE },
	{ "Permission denied", "the BMC device may not be opened: run as "
	    "root", KP_EXIT_NOPERM },
	{ "Unable to establish", "no session with the BMC: check --bmc and "
	    "the user and password of --bmc-credentials", KP_EXIT_NOPERM },
	{ "Get Session Challenge command failed", "no session with the BMC: "
	    "check --bmc and the user of --bmc-credentials", KP_EXIT_NOPERM },
	{ "Error loading interface", "this ipmitool lacks the interface "
	    "asked for", KP_EXIT_NOSOURCE },
	{ "DCMI request failed because:", "the BMC refused the DCMI power "
	    "reading:", KP_EXIT_NOSOURCE },
	{ "Unable to get DCMI information", "the BMC did not answer the DCMI "
	    "power reading", KP_EXIT_NOSOURCE },
	{ "A valid DCMI command was not returned", "the BMC does not speak "
	    "DCMI", KP_EXIT_NOSOURCE },
	{ "ipmi_cmd_dcmi_get_power_reading:", "the BMC refused the DCMI "
	    "power reading:", KP_EXIT_NOSOURCE }
};

/* The rest of the line after s, trimmed, in buf. */
static void
rest_of_line(const char *s, char *buf, size_t len)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strcspn(s, "\n");
	snprintf(buf, len, "%.*s", (int)n, s);
}

/* Why the tool gave no reading, from what it printed. */
static void
explain(const struct output *o, int code, char *why, size_t len)
{
	char detail[256];
	const char *at;
	size_t i;
	int j;

	exit_status = KP_EXIT_NOSOURCE;
	for (i = 0; i < sizeof(known_errors) / sizeof(known_errors[0]); i++)
		for (j = 0; j < 2; j++) {
			if ((at = strstr(o->text[j], known_errors[i].printed))
			    == NULL)
				continue;
			detail[0] = '\0';
			if (known_errors[i].meaning[strlen(
			    known_errors[i].meaning) - 1] == ':')
				rest_of_line(at + strlen(
				    known_errors[i].printed), detail,
				    sizeof(detail));
			snprintf(why, len, "%s%s%s", known_errors[i].meaning,
			    detail[0] != '\0' ? " " : "", detail);
			exit_status = known_errors[i].status;
			return;
		}
	at = o->text[1] + strspn(o->text[1], " \t\n");
	rest_of_line(at, detail, sizeof(detail));
	snprintf(why, len, "%s exited %d without a power reading%s%s", tool,
	    code, detail[0] != '\0' ? ": " : "", detail);
}

/*
 * The watts after the label in the tool's output, as "<label> ... N
 * Watts"; -1 if there is none.
 */
static int64_t
watts_after(const char *text, const char *label)
{
	const char *at;
	char *end;
	long long w;

	if ((at = strstr(text, label)) == NULL)
		return -1;
	at += strlen(label);
	at += strspn(at, " \t:");
	errno = 0;
	w = strtoll(at, &end, 10);
	if (errno != 0 || end == at || strncasecmp(end, " Watts", 6) != 0)
		return -1;
	return bmc_watts_mw((double)w);
}

/*
 * The reading in either tool's layout: ipmitool's "deactivated" and
 * FreeIPMI's "Not Available" are no reading, whatever watts they print.
 */
static int
parse_reading(const struct output *o, int64_t *mw, char *why, size_t len)
{
	const char *text = o->text[0];
	const char *state = freeipmi ? "Power Measurement" :
	    "Power reading state is:";
	const char *good = freeipmi ? "Active" : "activated";
	const char *at;
	char word[64];

	*mw = watts_after(text, freeipmi ? "Current Power" :
	    "Instantaneous power reading:");
	if (*mw < 0 || (at = strstr(text, state)) == NULL)
		return -1;
	at += strlen(state);
	rest_of_line(at + strspn(at, " \t:"), word, sizeof(word));
	if (strcmp(word, good) == 0)
		return 0;
	snprintf(why, len, "the BMC's power reading is %s: no reading",
	    word);
	exit_status = KP_EXIT_NOSOURCE;
	return 1;
}

static int
ipmi_fetch(int64_t *mw, char *why, size_t len)
{
	struct output *o = kp_calloc(1, sizeof(*o));
	int code, rv;

	if ((code = run_tool(o, why, len)) < 0) {
		exit_status = KP_EXIT_NOSOURCE;
		free(o);
		return 1;
	}
	if ((rv = parse_reading(o, mw, why, len)) < 0)
		explain(o, code, why, len);
	free(o);
	return rv != 0;
}

static void ipmi_close(void);

static const struct bmc_fetcher ipmi_fetcher = { "ipmi", ipmi_fetch,
    ipmi_close };

static int
ipmi_open(struct meter *m, char *why, size_t len)
{
	struct member *mb;
	int64_t mw;

	if (!find_tool()) {
		snprintf(why, len, "neither ipmitool nor ipmi-dcmi is "
		    "installed");
		return KP_EXIT_NOSOURCE;
	}
	if (bmc_target != NULL && bmc_user[0] == '\0')
		errx(KP_EXIT_USAGE, "source ipmi with --bmc wants "
		    "--bmc-credentials");
	if (bmc_target != NULL)
		write_secret();
	if (ipmi_fetch(&mw, why, len) != 0)
		return exit_status;
	bmc_set_fetcher(&ipmi_fetcher);
	bmc_first_reading(mw);
	mb = new_member(m, &ipmi_source, "ipmi");
	mb->reading = READ_INTEGRAL_UJ;
	xpath(mb->zone, sizeof(mb->zone), "platform");
	xpath(mb->where, sizeof(mb->where), "%s", freeipmi ?
	    "ipmi-dcmi --get-system-power-statistics" :
	    "ipmitool dcmi power reading");
	return 0;
}

static void
ipmi_close(void)
{
	bmc_stop();
	if (secret_path[0] != '\0')
		unlink(secret_path);
	secret_path[0] = '\0';
	bmc_forget();
}

static void
ipmi_describe(char *buf, size_t len)
{
	snprintf(buf, len, "%s", tool[0] != '\0' ? tool : "ipmitool");
}

const struct source ipmi_source = {
	.name = "ipmi",
	.what = "a BMC's DCMI power reading",
	.open = ipmi_open,
	.read = bmc_read,
	.fields = bmc_fields,
	.describe = ipmi_describe,
	.close = ipmi_close,
	.save = bmc_save,
	.load = bmc_load
};
