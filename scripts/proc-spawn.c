/*
 * Processes for scripts/bench-proc to measure against.  Holds N children
 * that sleep, and with -c also starts short-lived ones without pause (churn),
 * until its stdin closes; then it ends them all.  Each child dies with it,
 * however it ends (PR_SET_PDEATHSIG).
 * usage: proc-spawn [-c] count
 */
#include <err.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	if (getppid() == 1)
		_exit(0);
	if (linger_us > 0) {
		usleep((useconds_t)linger_us);
		_exit(0);
	}
	for (;;)
		pause();
}

int
main(int argc, char *argv[])
{
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	pid_t *kids;
	long n, i, started = 0;
	int churn = 0, inflight = 0;
	char c;

	if (argc > 1 && strcmp(argv[1], "-c") == 0) {
		churn = 1;
		argc--;
		argv++;
	}
	if (argc != 2 || (n = strtol(argv[1], NULL, 10)) < 0)
		errx(2, "usage: proc-spawn [-c] count");
	if ((kids = calloc((size_t)n + 1, sizeof(*kids))) == NULL)
		err(1, "calloc");
	for (i = 0; i < n; i++)
		kids[i] = child(0);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		if (poll(&pfd, 1, churn ? 0 : -1) > 0 &&
		    read(STDIN_FILENO, &c, 1) <= 0)
			break;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			inflight--;
		if (churn && inflight < 8) {
			child(1000 + (int)(started % 4) * 1000);
			inflight++;
			started++;
		} else if (churn)
			usleep(200);
	}
	for (i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	fprintf(stderr, "proc-spawn: %ld short-lived processes started\n",
	    started);
	free(kids);
	return 0;
}
