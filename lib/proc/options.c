/*
 * The sampling options that proc-cputime and kp-attribute take alike, under
 * the same names and with the same defaults (proc-cputime(1),
 * kp-attribute(1)), and the sampler and listeners made from them: a stage
 * that samples /proc samples it one way.
 */
#include <err.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

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

/* One of the sampling options, ch as KP_SAMPLE_LONGOPTS gives it; 0: not. */
int
kp_sample_option(struct kp_sample_opts *o, int ch, const char *arg)
{
	switch (ch) {
	case 'a':
		o->emit_all = 1;
		break;
	case KP_OPT_CGROUP_ROOT:
		o->cgroup_root = arg;
		break;
	case KP_OPT_EXITED:
		o->exits = parse_exits(arg);
		break;
	case KP_OPT_NO_GPU:
		o->no_gpu = 1;
		break;
	case KP_OPT_SYSFS:
		o->sysfs = arg;
		break;
	case KP_OPT_KEEP_OPEN:
		o->keep_open = kp_parse_int(arg, 0, 1000000, "keep-open");
		break;
	case KP_OPT_PODS_LOG:
		o->pods_log = arg;
		break;
	case KP_OPT_PODMAN_ROOT:
		o->podman = kp_reallocarray(o->podman, o->npodman + 1,
		    sizeof(*o->podman));
		o->podman[o->npodman++] = arg;
		break;
	case KP_OPT_PROC:
		o->procdir = arg;
		break;
	case KP_OPT_ROOT:
		o->root = arg;
		break;
	case KP_OPT_TASKSTATS_BUFFER:
		o->taskstats_buffer = kp_parse_int(arg, 1, 1 << 30,
		    "taskstats-buffer");
		break;
	default:
		return 0;
	}
	return 1;
}

/* Where names come from: the options in the order given, then the root. */
static struct kp_names *
names_new(const struct kp_sample_opts *o)
{
	struct kp_names *n = kp_names_new(o->root);
	size_t i;

	if (o->pods_log != NULL)
		kp_names_set_pods_log(n, o->pods_log);
	for (i = 0; i < o->npodman; i++)
		kp_names_add_podman_root(n, o->podman[i]);
	return n;
}

/*
 * Where the DRM devices are: --sysfs; without it this host's /sys, unless
 * --proc names another tree, whose processes' GPUs would not be this
 * host's.
 */
static const char *
gpu_sysfs(const struct kp_sample_opts *o)
{
	if (o->sysfs != NULL)
		return o->sysfs;
	return strcmp(o->procdir, "/proc") == 0 ? "/sys" : NULL;
}

/*
 * The sampler the options ask for, names, stat files kept open and GPU
 * time set;
 * exit accounting is set by kp_sample_exits once the listeners are known.
 */
struct kp_sampler *
kp_sample_new(struct kp_sample_opts *o)
{
	struct kp_sampler *s = kp_sampler_new(o->procdir, o->emit_all);

	o->names = names_new(o);
	kp_sampler_set_names(s, o->names);
	kp_sampler_set_keep_open(s, (size_t)o->keep_open);
	if (!o->no_gpu)
		kp_sampler_set_gpu(s, kp_gpu_open(gpu_sysfs(o), o->procdir));
	return s;
}

/*
 * The cgroup counters of --cgroup-root; without it, this host's, unless
 * --proc names another tree: they would be this host's, not the tree's.
 * Taskstats is a source only once kp_sample_listen has it.
 */
void
kp_sample_exits(struct kp_sampler *s, const struct kp_sample_opts *o)
{
	if (kp_sampler_set_exits(s, o->exits & ~KP_EXITS_TASKSTATS,
	    o->cgroup_root) < 0 && o->cgroup_root != NULL)
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
 * Taskstats refused: the reaping parents and the cgroup counters stand
 * in, with the process events where they are heard without the exit
 * records' privilege (Linux 6.6 and later): they give a parent's residue
 * its ended children's cgroup.  Said once.
 */
static void
listen_unprivileged(struct kp_sampler *s, struct kp_sample_opts *o,
    struct kp_exits *x, const char *why)
{
	if (hear_events(x, o->procdir, 1))
		warnx("taskstats: %s: exit accounting from the reaping parents, "
		    "the process events and the cgroup counters only", why);
	else
		warnx("taskstats: %s: exit accounting from the reaping parents "
		    "and the cgroup counters only", why);
	if ((o->exits & (KP_EXITS_PARENT | KP_EXITS_CGROUP)) !=
	    (KP_EXITS_PARENT | KP_EXITS_CGROUP)) {
		o->exits |= KP_EXITS_PARENT | KP_EXITS_CGROUP;
		kp_sample_exits(s, o);
	}
}

/*
 * The kernel's exit records, where the stage keeps running on a live
 * /proc: opened, proven, and given to s, drained from then on, with the
 * process events beside them.  NULL: none, as on a fixture tree or
 * without --exited taskstats.
 */
struct kp_exits *
kp_sample_listen(struct kp_sampler *s, struct kp_sample_opts *o)
{
	struct kp_taskstats *ts;
	struct kp_exits *x;
	char why[256];

	if (!(o->exits & KP_EXITS_TASKSTATS) || !live_proc(o->procdir))
		return NULL;
	ts = kp_taskstats_open((size_t)o->taskstats_buffer, why, sizeof(why));
	x = kp_exits_new(ts);
	if (ts != NULL)
		hear_events(x, o->procdir, 0);
	else
		listen_unprivileged(s, o, x, why);
	kp_sampler_set_facts(s, x);
	return x;
}

/* The listeners are readable: their facts, held for the next scan. */
static int
facts_ready(void *arg)
{
	kp_exits_ready(arg);
	return kp_exits_fd(arg);
}

/* Clock c drains the listeners x, if any, while it waits. */
void
kp_sample_poll(struct kp_clock *c, struct kp_exits *x)
{
	kp_clock_poll(c, kp_exits_fd(x), facts_ready, x);
}

/*
 * A filter waiting for its input drains the listeners x, as its own clock
 * would; c: the struct kp_clock that serves them, which outlives r.
 */
void
kp_sample_wait(struct kp_reader *r, struct kp_clock *c, struct kp_exits *x)
{
	kp_sample_poll(c, x);
	if (x != NULL)
		kp_reader_set_wait(r, kp_clock_wait_input, c);
}

/* What kp_sample_new made of o. */
void
kp_sample_free(struct kp_sample_opts *o)
{
	kp_names_free(o->names);
	free(o->podman);
	o->names = NULL;
	o->podman = NULL;
	o->npodman = 0;
}
