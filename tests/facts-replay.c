/*
 * facts-replay: a sampler over a --proc tree, fed the kernel's exit facts
 * from its input instead of a listener, so that a test can set a race up
 * step by step that a live run hits only by chance.
 *
 *	facts-replay DIR [CGROUP-ROOT]
 *
 * takes a sample of DIR, with the cgroup counters under CGROUP-ROOT if
 * given, then reads lines:
 *
 *	fact PID PPID COMM CPU_US START_TICKS [CGROUP]
 *						a fact, held for the next
 *						sample, as if just heard;
 *						CGROUP: the v2 path the
 *						process events gave it
 *	interval SEQ				a sample, whose records
 *						(interval SEQ) go to stdout
 *
 * The tree may change between lines: the test edits it.  Exit status 1
 * on a failed sample or a line it cannot read.
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/proc.h"

static void
add_fact(struct kp_exits *x, const char *line)
{
	struct kp_exit e;
	long long pid, ppid, cpu_us, start;
	char path[200], cgroup[210];

	memset(&e, 0, sizeof(e));
	switch (sscanf(line, "fact %lld %lld %31s %lld %lld %199s", &pid,
	    &ppid, e.comm, &cpu_us, &start, path)) {
	case 6:
		snprintf(cgroup, sizeof(cgroup), "0::%s\n", path);
		e.cgroup = cgroup;
		break;
	case 5:
		break;
	default:
		errx(1, "not a fact: %s", line);
	}
	e.pid = (pid_t)pid;
	e.ppid = (pid_t)ppid;
	e.cpu_ns = (uint64_t)cpu_us * 1000;
	e.start_ticks = e.start_min_ticks = (uint64_t)start;
	e.threads = 1;
	kp_exits_add(x, &e);
}

static void
sample(struct kp_sampler *s, const char *line)
{
	long long seq;

	if (sscanf(line, "interval %lld", &seq) != 1)
		errx(1, "not an interval: %s", line);
	if (kp_sampler_scan(s) < 0)
		errx(1, "%s", kp_sampler_error(s));
	kp_sampler_write(s, seq);
	kp_out_interval(seq, 0, 1);
	kp_out_flush();
}

int
main(int argc, char *argv[])
{
	struct kp_sampler *s;
	struct kp_exits *x;
	char line[256];

	if (argc != 2 && argc != 3)
		errx(2, "usage: facts-replay dir [cgroup-root]");
	kp_out_init();
	s = kp_sampler_new(argv[1], 0);
	if (kp_sampler_set_exits(s, KP_EXITS_PARENT | KP_EXITS_TASKSTATS |
	    (argc == 3 ? KP_EXITS_CGROUP : 0), argc == 3 ? argv[2] : "") < 0)
		errx(1, "no exit sources");
	kp_sampler_set_facts(s, x = kp_exits_new(NULL));
	if (kp_sampler_scan(s) < 0)
		errx(1, "%s", kp_sampler_error(s));
	while (fgets(line, sizeof(line), stdin) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "fact ", 5) == 0)
			add_fact(x, line);
		else
			sample(s, line);
	}
	kp_sampler_free(s);
	kp_exits_free(x);
	return kp_out_finish(0);
}
