/*
 * wait4: runs a command and says how much CPU time it and every child it
 * waited for used, from wait4(2)'s rusage, the reference the exit
 * accounting tests measure proc-cputime against.
 *
 * usage: wait4 [-g] [-m file] command [arg ...]
 *
 * It prints "pid N" once the command's process exists, and "cpu_us N" when
 * it has ended and been waited for; then it stays until its standard
 * input ends, so that a sampler can see it after the reap.  The command
 * runs once a line has been read from standard input: with -g the process
 * is made only then, without it at once (the command waits to exec).
 * With -m the parent writes the child's pid into file first, as runc exec
 * moves a process into a container's cgroup.
 */
#include <sys/resource.h>
#include <sys/wait.h>

#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
usage(void)
{
	fprintf(stderr, "usage: wait4 [-g] [-m file] command [arg ...]\n");
	exit(2);
}

static void
await_line(void)
{
	int c;

	while ((c = getchar()) != EOF && c != '\n')
		;
}

static void
move(const char *file, pid_t pid)
{
	FILE *f;

	if ((f = fopen(file, "w")) == NULL)
		err(1, "%s", file);
	if (fprintf(f, "%ld\n", (long)pid) < 0 || fclose(f) == EOF)
		err(1, "%s", file);
}

/* The child waits on a pipe until its parent says go, then runs argv. */
static pid_t
start(char *argv[], int *go)
{
	int fds[2];
	char c;
	pid_t pid;

	if (pipe(fds) < 0)
		err(1, "pipe");
	if ((pid = fork()) < 0)
		err(1, "fork");
	if (pid == 0) {
		close(fds[1]);
		if (read(fds[0], &c, 1) < 0)
			err(126, "read");
		close(fds[0]);
		execvp(argv[0], argv);
		err(127, "%s", argv[0]);
	}
	close(fds[0]);
	*go = fds[1];
	return pid;
}

int
main(int argc, char *argv[])
{
	const char *file = NULL;
	struct rusage ru;
	int ch, go, later = 0, status;
	pid_t pid;

	while ((ch = getopt(argc, argv, "+gm:")) != -1) {
		switch (ch) {
		case 'g':
			later = 1;
			break;
		case 'm':
			file = optarg;
			break;
		default:
			usage();
		}
	}
	if ((argc -= optind) < 1)
		usage();
	argv += optind;
	if (later)
		await_line();
	pid = start(argv, &go);
	if (file != NULL)
		move(file, pid);
	printf("pid %ld\n", (long)pid);
	fflush(stdout);
	if (!later)
		await_line();
	close(go);
	if (wait4(pid, &status, 0, &ru) < 0)
		err(1, "wait4");
	printf("cpu_us %lld\n", (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) *
	    1000000LL + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
	fflush(stdout);
	await_line();
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
