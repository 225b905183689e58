/*
 * events-replay: the process events parser over a --proc tree, fed the
 * kernel's events from its input as the connector's datagrams, so that a
 * test sets up what a live run meets only by chance (an exec read while
 * the process exits, a lost event).
 *
 *	events-replay DIR [CGROUPS]
 *
 * reads lines, each one event on CPU numbered SEQ there:
 *
 *	fork CPU SEQ PARENT CHILD [THREAD]	a fork (THREAD: a thread's id)
 *	exec CPU SEQ PID			an exec: PID's cgroup read
 *	exit CPU SEQ PID			an exit
 *	cut					a scan begins
 *	cgroup PID				prints PID's cgroup
 *	lost					prints the events lost so far
 *
 * and, with CGROUPS, where a cgroup hierarchy is mounted, whose counter of
 * a cgroup no scan has read is read at each exit of its processes:
 *
 *	since NS				the latest scan began at NS,
 *						 as file times go
 *	read PATH				a scan's read of the counters:
 *						 prints "PATH DELTA", or "PATH -"
 *	usage DIR NS				sets the v1 counter of the
 *						 cgroup directory DIR
 *	rm DIR					removes it
 *
 * The tree may change between lines: the test edits it.  Exit status 1
 * on a line it cannot read.
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>

#include "proc/proc.h"

static void
send_event(struct kp_events *ev, enum what what, unsigned cpu, unsigned seq,
    const long long *pid, int n)
{
	struct nlmsghdr h = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct cn_msg) +
	    sizeof(struct proc_event)), .nlmsg_type = NLMSG_DONE };
	struct cn_msg cn = { .id = { CN_IDX_PROC, CN_VAL_PROC }, .seq = seq,
	    .len = sizeof(struct proc_event) };
	struct proc_event e;
	char d[NLMSG_LENGTH(sizeof(struct cn_msg) + sizeof(struct proc_event))];

	memset(&e, 0, sizeof(e));
	e.what = what;
	e.cpu = cpu;
	if (what == PROC_EVENT_FORK) {
		e.event_data.fork.parent_pid = (pid_t)pid[0];
		e.event_data.fork.parent_tgid = (pid_t)pid[0];
		e.event_data.fork.child_tgid = (pid_t)pid[1];
		e.event_data.fork.child_pid = (pid_t)(n > 2 ? pid[2] : pid[1]);
	} else if (what == PROC_EVENT_EXEC) {
		e.event_data.exec.process_pid = (pid_t)pid[0];
		e.event_data.exec.process_tgid = (pid_t)pid[0];
	} else {
		e.event_data.exit.process_pid = (pid_t)pid[0];
		e.event_data.exit.process_tgid = (pid_t)pid[0];
	}
	memcpy(d, &h, sizeof(h));
	memcpy(d + NLMSG_HDRLEN, &cn, sizeof(cn));
	memcpy(d + NLMSG_HDRLEN + sizeof(cn), &e, sizeof(e));
	kp_events_parse(ev, d, sizeof(d));
}

static void
event(struct kp_events *ev, const char *line)
{
	char kind[8];
	unsigned cpu, seq;
	long long pid[3];
	int n;

	if ((n = sscanf(line, "%7s %u %u %lld %lld %lld", kind, &cpu, &seq,
	    &pid[0], &pid[1], &pid[2])) < 4)
		errx(1, "not an event: %s", line);
	if (strcmp(kind, "fork") == 0 && n >= 5)
		send_event(ev, PROC_EVENT_FORK, cpu, seq, pid, n - 3);
	else if (strcmp(kind, "exec") == 0)
		send_event(ev, PROC_EVENT_EXEC, cpu, seq, pid, 1);
	else if (strcmp(kind, "exit") == 0)
		send_event(ev, PROC_EVENT_EXIT, cpu, seq, pid, 1);
	else
		errx(1, "not an event: %s", line);
}

static struct kp_cgcpu *counters;
static long long since_ns;

static void
exit_cgroup(const char *cgroup, void *arg)
{
	(void)arg;
	kp_cgcpu_read_ended(counters, cgroup, since_ns);
}

static void
read_counters(const char *path)
{
	struct kp_cgnode *n = kp_cgcpu_node_at(counters, path);

	kp_cgcpu_want(counters, n);
	kp_cgcpu_read(counters);
	if (n->have_delta)
		printf("%s %lld\n", path, (long long)n->delta_us);
	else
		printf("%s -\n", path);
}

/* The lines on cgroups: 1, or 0 for a line of another kind. */
static int
cgroup_line(const char *line)
{
	char path[200], file[256];
	long long ns;
	FILE *f;

	if (sscanf(line, "since %lld", &since_ns) == 1)
		return 1;
	if (sscanf(line, "read %199s", path) == 1)
		read_counters(path);
	else if (sscanf(line, "usage %199s %lld", path, &ns) == 2) {
		snprintf(file, sizeof(file), "%s/cpuacct.usage", path);
		if ((f = fopen(file, "w")) == NULL ||
		    fprintf(f, "%lld\n", ns) < 0 || fclose(f) != 0)
			err(1, "%s", file);
	} else if (sscanf(line, "rm %199s", path) == 1) {
		snprintf(file, sizeof(file), "%s/cpuacct.usage", path);
		if (unlink(file) < 0 || rmdir(path) < 0)
			err(1, "%s", path);
	} else
		return 0;
	return 1;
}

int
main(int argc, char *argv[])
{
	struct kp_events *ev;
	char line[256];
	const char *cg;
	long long pid;

	if (argc != 2 && argc != 3)
		errx(1, "usage: events-replay dir [cgroups]");
	ev = kp_events_parser(argv[1]);
	if (argc == 3) {
		if ((counters = kp_cgcpu_open(argv[2])) == NULL)
			errx(1, "%s: no counters", argv[2]);
		kp_events_on_exit(ev, exit_cgroup, NULL);
	}
	while (fgets(line, sizeof(line), stdin) != NULL) {
		if (counters != NULL && cgroup_line(line))
			continue;
		if (strcmp(line, "cut\n") == 0)
			kp_events_cut(ev);
		else if (strcmp(line, "lost\n") == 0)
			printf("lost %llu\n",
			    (unsigned long long)kp_events_lost(ev));
		else if (sscanf(line, "cgroup %lld", &pid) == 1) {
			cg = kp_events_cgroup(ev, (pid_t)pid);
			printf("%lld: %s", pid, cg != NULL ? cg : "unknown\n");
		} else
			event(ev, line);
	}
	kp_events_close(ev);
	kp_cgcpu_free(counters);
	return 0;
}
