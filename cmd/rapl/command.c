/*
 * rapl-read -- CMD: the command run and measured, its tree's CPU time
 * from wait4 and, where it may, from a cgroup of its own.
 */
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rapl.h"

/*
 * Whether a signal that came to rapl-read reached the command too: one a
 * terminal sends (Ctrl-C, a hangup) goes to the whole foreground process
 * group, and so, from a terminal or from kill -INT -GROUP, does SIGINT,
 * whose only use is that.  Passing those on would give the command two.
 */
static int
reached_command(const siginfo_t *si, pid_t pid)
{
	if (getpgid(pid) != getpgrp())
		return 0;
	return si->si_code == SI_KERNEL || si->si_signo == SIGINT;
}

/*
 * Where the command's tree is counted apart: a cgroup of its own, made
 * below rapl-read's in the hierarchy that accounts CPU time, where
 * rapl-read may make one and move the command into it (root, or a
 * delegated cgroup).  Its counter holds the whole tree, processes left
 * running at the end included, and proc-cputime sees the tree as one
 * cgroup each interval.  Without one, the tree is rapl-read's
 * descendants in --proc's directory and the children it reaped
 * (rapl-read(1), "Measuring a command").
 */
struct tree {
	struct kp_cgcpu *cg;
	struct kp_cgnode *node;	/* NULL where the command has none */
	pid_t pid;
	int procfd;		/* --proc's directory; -1: none */
	int64_t given_us;	/* the tree's CPU time counted so far */
};

static int64_t
rusage_cpu_us(const struct rusage *ru)
{
	return (ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * (int64_t)1000000 +
	    ru->ru_utime.tv_usec + ru->ru_stime.tv_usec;
}

/* The CPU time of every child reaped, and of their children waited for. */
static int64_t
children_cpu_us(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_CHILDREN, &ru) < 0)
		err(KP_EXIT_FAILURE, "getrusage");
	return rusage_cpu_us(&ru);
}

static int
by_pid(const void *a, const void *b)
{
	const struct kp_pid_stat *p = a, *q = b;

	return (p->pid > q->pid) - (p->pid < q->pid);
}

/* Whether p descends from pid, through at most 64 parents, all in ps. */
static int
descends(const struct kp_pid_stat *ps, size_t n, const struct kp_pid_stat *p,
    pid_t pid)
{
	struct kp_pid_stat key;
	int hops;

	for (hops = 0; hops < 64 && p != NULL; hops++) {
		if (p->ppid == pid)
			return 1;
		if (p->ppid <= 0 || p->ppid == p->pid)
			return 0;
		key.pid = p->ppid;
		p = bsearch(&key, ps, n, sizeof(*ps), by_pid);
	}
	return 0;
}

/*
 * The CPU time of rapl-read's descendants alive or not yet reaped, each
 * one's own and its waited-for children's (utime to cstime): the tree
 * but what rapl-read reaped.
 */
static int64_t
live_tree_us(int procfd)
{
	struct kp_pid_stat *ps = NULL;
	struct dirent *de;
	size_t i, n = 0, cap = 0;
	uint64_t ticks = 0;
	DIR *d;

	if (procfd < 0 || (d = fdopendir(dup(procfd))) == NULL)
		return 0;
	rewinddir(d);	/* the offset the dup shares with the last scan's */
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		if (n == cap)
			ps = kp_reallocarray(ps, cap = 2 * cap + 256,
			    sizeof(*ps));
		if (kp_read_pid_stat(procfd, de->d_name, &ps[n]) == 0)
			n++;
	}
	closedir(d);
	qsort(ps, n, sizeof(*ps), by_pid);
	for (i = 0; i < n; i++)
		if (descends(ps, n, &ps[i], getpid()))
			ticks += ps[i].cpu_ticks + ps[i].child_ticks;
	free(ps);
	return kp_ticks_to_us(ticks);
}

/*
 * The tree's CPU time up to now: its cgroup's counter, else what rapl-read
 * reaped and its descendants' stat; never less than before, as a stat in
 * clock ticks may pass the exact figures of the same processes reaped.
 */
static int64_t
tree_cpu_us(struct tree *t)
{
	int64_t now_us;

	if (t->node == NULL || kp_cgcpu_usage(t->cg, t->node, &now_us) < 0)
		now_us = children_cpu_us() + live_tree_us(t->procfd);
	if (now_us > t->given_us)
		t->given_us = now_us;
	return t->given_us;
}

/*
 * Reaps every child that has ended: the command, and the orphans of its
 * tree, which come to rapl-read as their subreaper; 1 if the command was
 * one of them, its status in *status and its CPU time, its waited-for
 * descendants' included, in *cpu_us.
 */
static int
reap_children(pid_t pid, int *status, int64_t *cpu_us)
{
	struct rusage ru;
	int st, ended = 0;
	pid_t r;

	while ((r = wait4(-1, &st, WNOHANG, &ru)) > 0)
		if (r == pid) {
			*status = st;
			*cpu_us = rusage_cpu_us(&ru);
			ended = 1;
		}
	if (r < 0 && errno != ECHILD && errno != EINTR)
		err(KP_EXIT_FAILURE, "waitpid");
	return ended;
}

/*
 * Reaps the orphans that have ended, one by one; 1 once the command has
 * ended, which is left a zombie, its final stat readable, until the
 * interval's CPU time is sampled (command_record reaps it).
 */
static int
reap_orphans(pid_t pid)
{
	siginfo_t si;

	for (;;) {
		si.si_pid = 0;
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
			if (errno != ECHILD && errno != EINTR)
				err(KP_EXIT_FAILURE, "waitid");
			return 0;
		}
		if (si.si_pid == 0)
			return 0;
		if (si.si_pid == pid)
			return 1;
		(void)waitpid(si.si_pid, NULL, 0);
	}
}

/*
 * Waits for the deadline or for the command's end, whichever is first,
 * passing on the signals that would end a shell's job and that did not
 * reach the command itself; 1 if it ended.
 */
static int
wait_command(struct tree *t, int64_t deadline_us, const sigset_t *set)
{
	struct timespec ts;
	siginfo_t si;
	int64_t left_us;

	for (;;) {
		if (reap_orphans(t->pid))
			return 1;
		if ((left_us = deadline_us - kp_mono_us()) <= 0)
			return 0;
		ts.tv_sec = left_us / 1000000;
		ts.tv_nsec = (left_us % 1000000) * 1000;
		if (sigtimedwait(set, &si, &ts) > 0 &&
		    si.si_signo != SIGCHLD && !reached_command(&si, t->pid))
			kill(t->pid, si.si_signo);
	}
}

/* The command's exit status, or 128 + the signal that ended it. */
static int
exit_status(int status)
{
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* The command's cgroup, in --sysfs's hierarchy, where it may have one. */
static void
tree_place(struct tree *t, const struct meter *m, pid_t pid)
{
	char text[4096], name[32], root[PATH_MAX];

	t->node = NULL;
	xpath(root, sizeof(root), "%s/fs/cgroup", m->sysfs);
	if ((t->cg = kp_cgcpu_open(root)) == NULL ||
	    kp_read_file(AT_FDCWD, "/proc/self/cgroup", text,
	    sizeof(text)) < 0)
		return;
	snprintf(name, sizeof(name), "kp-command-%ld", (long)pid);
	if ((t->node = kp_cgcpu_make(t->cg, text, name)) == NULL)
		return;
	if (kp_cgcpu_move(t->cg, t->node, pid) < 0) {
		(void)kp_cgcpu_remove(t->cg, t->node);
		t->node = NULL;
	}
}

/* The cgroup goes once the tree has; one that processes still hold stays. */
static void
tree_end(struct tree *t)
{
	if (t->node != NULL && kp_cgcpu_remove(t->cg, t->node) < 0)
		warn("the command's cgroup %s, left", t->node->path);
	kp_cgcpu_free(t->cg);
	if (t->procfd >= 0)
		close(t->procfd);
}

/* The command's name, as the kernel's comm: argv0's last part, 15 bytes. */
static void
command_name(const char *argv0, char name[16])
{
	const char *slash = strrchr(argv0, '/');

	snprintf(name, 16, "%s", slash != NULL ? slash + 1 : argv0);
}

/*
 * The command's tree has ended, in interval seq: its CPU time, from the
 * rusage of every child reaped (the command, its waited-for descendants,
 * and the orphans of its tree that ended), in a command record; the
 * command's own, its waited-for descendants' included, which gives the
 * next stage its last slice without rapl-read running then; and its
 * cgroup's counter where it has one, which that stage reads if rapl-read
 * has removed the cgroup by then.
 */
static int64_t
command_record(int64_t seq, uint64_t starttime, const char *argv0,
    int status, int64_t command_cpu_us, const struct tree *t)
{
	struct kp_buf b = { NULL, 0, 0 };
	char name[16];
	int64_t usage_us, cpu_us;

	command_name(argv0, name);
	kp_buf_rec(&b, "command", seq);
	kp_buf_int(&b, "pid", t->pid);
	kp_buf_int(&b, "ppid", getpid());
	if (starttime > 0)
		kp_buf_int(&b, "starttime", (int64_t)starttime);
	kp_buf_text(&b, "comm", name);
	cpu_us = children_cpu_us();
	kp_buf_int(&b, "cpu_us", cpu_us);
	kp_buf_int(&b, "command_cpu_us", command_cpu_us);
	if (t->node != NULL && kp_cgcpu_usage(t->cg, t->node, &usage_us) == 0) {
		kp_buf_text(&b, "cgroup", t->node->path);
		kp_buf_int(&b, "cgroup_cpu_us", usage_us);
	}
	kp_buf_int(&b, "status", exit_status(status));
	kp_out_buf(&b);
	free(b.s);
	return cpu_us;
}

/*
 * The command's start in clock ticks after boot, as its proc records
 * give it, so that its command record names that process and no other
 * with its pid; 0 where /proc cannot tell.
 */
static uint64_t
command_starttime(pid_t pid)
{
	struct kp_pid_stat ps;
	char name[16];
	int procfd;

	snprintf(name, sizeof(name), "%ld", (long)pid);
	if ((procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return 0;
	if (kp_read_pid_stat(procfd, name, &ps) != 0)
		ps.starttime = 0;
	close(procfd);
	return ps.starttime;
}

#define HEADER_WAIT_US 2000000

/*
 * Waits until the stage after rapl-read has read the header, up to 2 s:
 * proc-cputime and kp-attribute take their first sample before they read,
 * so a command that starts after that has all its CPU time counted, not
 * part of it taken for before the stream (rapl-read(1), "Measuring a
 * command").  A stage that reads nothing for 2 s measures as before.
 */
static void
wait_header_read(void)
{
	struct timespec ms = { 0, 1000000 };
	struct stat st;
	int64_t until_us = kp_mono_us() + HEADER_WAIT_US;
	int unread;

	if (fstat(STDOUT_FILENO, &st) < 0 || !S_ISFIFO(st.st_mode))
		return;
	while (ioctl(STDOUT_FILENO, FIONREAD, &unread) == 0 && unread > 0 &&
	    kp_mono_us() < until_us)
		nanosleep(&ms, NULL);
}

/*
 * The command, started: its standard output is rapl-read's own where the
 * records go elsewhere, else standard error (setup_output); it runs once
 * rapl-read has placed it (the pipe closes), so that none of its tree
 * starts outside its cgroup, and once the next stage has read the header.
 */
static pid_t
start_command(const struct meter *m, char *argv[], const sigset_t *old,
    struct tree *t, uint64_t *starttime)
{
	int go[2];
	char c;
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) < 0)
		err(KP_EXIT_FAILURE, "pipe");
	if ((pid = fork()) < 0)
		err(KP_EXIT_FAILURE, "fork");
	if (pid == 0) {
		close(go[1]);
		(void)read(go[0], &c, 1);
		sigprocmask(SIG_SETMASK, old, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(m->command_stdout >= 0 ? m->command_stdout :
		    STDERR_FILENO, STDOUT_FILENO) < 0)
			err(126, "dup2");
		execvp(argv[0], argv);
		warn("%s", argv[0]);
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(go[0]);
	t->pid = pid;
	tree_place(t, m, pid);
	*starttime = command_starttime(pid);
	wait_header_read();
	close(go[1]);
	return pid;
}

/*
 * -- CMD: samples while CMD runs and once more when it ends, so that a
 * short run is measured too.  rapl-read is the subreaper of CMD's tree, so
 * that its orphans' CPU time comes back to it.  CMD's exit status, or 128
 * + its signal.
 */
int
run_command(struct meter *m, int64_t interval_us, char *argv[])
{
	struct kp_clock clk;
	struct tree t = { .procfd = -1 };
	sigset_t set, old;
	uint64_t starttime;
	int64_t cpu_us = 0, command_us = 0;
	int status, ended = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &set, &old) < 0)
		err(KP_EXIT_FAILURE, "sigprocmask");
	command_name(argv[0], m->command);	/* the header names it */
	start_clock(m, &clk, interval_us);
	tally_cpu(m->tally, m->procdir, 0);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		err(KP_EXIT_FAILURE, "prctl");
	t.procfd = open(m->procdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	(void)start_command(m, argv, &old, &t, &starttime);
	while (!ended) {
		ended = wait_command(&t, kp_clock_deadline_us(&clk), &set);
		kp_clock_end(&clk);
		if (m->tally != NULL) {
			m->tally->dt_us += clk.dt_us;
			tally_cpu(m->tally, m->procdir, tree_cpu_us(&t));
		}
		if (ended) {
			(void)reap_children(t.pid, &status, &command_us);
			cpu_us = command_record(clk.seq, starttime, argv[0],
			    status, command_us, &t);
		}
		end_interval(m, &clk);
	}
	tree_end(&t);
	if (m->tally != NULL) {
		m->tally->cpu_us = cpu_us;
		tally_block(m->tally, argv[0], exit_status(status));
		m->tally = NULL;
	}
	return exit_status(status);
}
