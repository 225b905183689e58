/*
 * Processes for scripts/bench-proc and bench-exits to measure against.
 * Holds N children that sleep, and with -c also starts short-lived ones
 * without pause (churn), or with -r rate that many a second, each ending at
 * once, on a clock (CLOCK_MONOTONIC deadlines, so that a late start is made
 * up), until its stdin closes; then it ends them all.  Each child dies with
 * it, however it ends (PR_SET_PDEATHSIG).
 * usage: proc-spawn [-c | -r rate] count
 */
#define _GNU_SOURCE	/* ppoll */
#include <err.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t
child(int linger_us)
{
	pid_t pid;

	if ((pid = fork()) < 0)
		err(1, "fork");
	if (pid > 0)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1 || linger_us < 0)
		_exit(0);
	if (linger_us > 0) {
		usleep((useconds_t)linger_us);
		_exit(0);
	}
	for (;;)
		pause();
}

static long long
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Children that end at once, rate_hz a second, until stdin closes. */
static long
spawn_at_rate(long rate_hz, struct pollfd *pfd)
{
	long long next_ns = now_ns(), step_ns = 1000000000LL / rate_hz, wait_ns;
	struct timespec ts;
	long started = 0;
	char c;

	for (;;) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		wait_ns = next_ns - now_ns();
		ts.tv_sec = wait_ns > 0 ? wait_ns / 1000000000 : 0;
		ts.tv_nsec = wait_ns > 0 ? wait_ns % 1000000000 : 0;
		if (ppoll(pfd, 1, &ts, NULL) > 0 &&
		    read(STDIN_FILENO, &c, 1) <= 0)
			return started;
		if (now_ns() < next_ns)
			continue;
		child(-1);
		started++;
		next_ns += step_ns;
	}
}

/* With churn, eight children of 1 to 4 ms at a time; until stdin closes. */
static long
spawn_churn(int churn, struct pollfd *pfd)
{
	long started = 0;
	int inflight = 0;
	char c;

	for (;;) {
		if (poll(pfd, 1, churn ? 0 : -1) > 0 &&
		    read(STDIN_FILENO, &c, 1) <= 0)
			return started;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			inflight--;
		if (churn && inflight < 8) {
			child(1000 + (int)(started % 4) * 1000);
			inflight++;
			started++;
		} else if (churn)
			usleep(200);
	}
}

int
main(int argc, char *argv[])
{
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	pid_t *kids;
	long n, i, started, rate_hz = 0;
	int churn = 0;

	if (argc > 1 && strcmp(argv[1], "-c") == 0) {
		churn = 1;
		argc--;
		argv++;
	} else if (argc > 2 && strcmp(argv[1], "-r") == 0) {
		if ((rate_hz = strtol(argv[2], NULL, 10)) < 1)
			errx(2, "usage: proc-spawn [-c | -r rate] count");
		argc -= 2;
		argv += 2;
	}
	if (argc != 2 || (n = strtol(argv[1], NULL, 10)) < 0)
		errx(2, "usage: proc-spawn [-c | -r rate] count");
	if ((kids = calloc((size_t)n + 1, sizeof(*kids))) == NULL)
		err(1, "calloc");
	for (i = 0; i < n; i++)
		kids[i] = child(0);
	printf("ready\n");
	fflush(stdout);
	started = rate_hz > 0 ? spawn_at_rate(rate_hz, &pfd) :
	    spawn_churn(churn, &pfd);
	for (i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	fprintf(stderr, "proc-spawn: %ld short-lived processes started\n",
	    started);
	free(kids);
	return 0;
}
