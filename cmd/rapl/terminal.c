/*
 * rapl-read -- CMD at a terminal: where the records and the command's
 * output go, and the block that ends the run (rapl-read(1), "Measuring a
 * command").
 */
#include <err.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rapl.h"

/*
 * A sample of the CPU time, beside the energy's: the tree's so far
 * (command.c), and the node's from procdir/stat.  The first is the
 * baseline; each later one gives the interval it ends.
 */
void
tally_cpu(struct tally *t, const char *procdir, int64_t tree_cpu_us)
{
	struct kp_cpu_times now;

	if (t == NULL)
		return;
	if (kp_read_cpu_times(procdir, &now) < 0) {
		if (!t->no_share)
			warn("%s/stat: the command's share cannot be given",
			    procdir);
		t->no_share = 1;
		return;
	}
	kp_cpu_times_delta_us(&t->node_last, &now, &t->node_cpu_us,
	    &t->node_total_us);
	t->tree_us = tree_cpu_us - t->tree_last_us;
	t->tree_last_us = tree_cpu_us;
	t->node_last = now;
}

/*
 * The tree's share of one zone's energy over the interval, by
 * kp-attribute's rule (kp-attribute(1)): the active part by the node's
 * usage ratio, shared by CPU time between the tree and the rest of the
 * node, rounded as kp-attribute rounds a process and the unattributed.
 */
static int64_t
tree_share_uj(const struct tally *t, int64_t energy_uj)
{
	struct kp_share sh[2] = { { 0 } }, *order[2];

	sh[0].cpu_us = t->tree_us;
	sh[0].rank = KP_RANK_PROCESS;
	sh[1].cpu_us = t->node_cpu_us > t->tree_us ?
	    t->node_cpu_us - t->tree_us : 0;
	sh[1].rank = KP_RANK_UNATTRIBUTED;
	kp_split_uj(kp_active_uj(energy_uj, t->node_cpu_us, t->node_total_us),
	    sh, 2, 0, order);
	return sh[0].active_uj;
}

void
tally_add(struct tally *t, const char *zone, int64_t energy_uj,
    int estimated)
{
	size_t i;

	if (t == NULL)
		return;
	for (i = 0; i < t->n && strcmp(t->z[i].zone, zone) != 0; i++)
		;
	if (i == TALLY_ZONES)
		return;		/* more zones than a block shows */
	if (i == t->n)
		t->z[t->n++].zone = kp_strdup(zone);
	t->z[i].energy_uj += energy_uj;
	if (!t->no_share)
		t->z[i].tree_uj += tree_share_uj(t, energy_uj);
	t->z[i].estimated |= estimated;
}

/*
 * The block on standard error at the end: the command, its run, and per
 * zone its tree's energy beside the machine's (rapl-read(1), "Measuring
 * a command").
 */
void
tally_block(struct tally *t, const char *argv0, int status)
{
	double s = t->dt_us / 1e6;
	size_t i;

	fprintf(stderr, "rapl-read: %s: status %d  elapsed %.3f s  tree cpu "
	    "%.3f s\n", argv0, status, s, t->cpu_us / 1e6);
	for (i = 0; i < t->n; i++) {
		fprintf(stderr, "  %s  ", t->z[i].zone);
		if (!t->no_share)
			fprintf(stderr, "%lld.%06lld J  mean %.2f W  of ",
			    (long long)(t->z[i].tree_uj / 1000000),
			    (long long)(t->z[i].tree_uj % 1000000),
			    kp_watts(t->z[i].tree_uj, t->dt_us));
		fprintf(stderr, "the machine's %lld.%06lld J  mean %.2f W%s\n",
		    (long long)(t->z[i].energy_uj / 1000000),
		    (long long)(t->z[i].energy_uj % 1000000),
		    kp_watts(t->z[i].energy_uj, t->dt_us),
		    t->z[i].estimated ? ", estimated" : "");
		free(t->z[i].zone);
	}
	free(t);
}

/*
 * Where records and the command's output go (rapl-read(1), "Measuring a
 * command"): records to path with -o, the command's stdout then
 * rapl-read's own; at a terminal without -o, the command's stdout there
 * and the records nowhere, since they would mix; else, in a pipeline,
 * records to stdout and the command's stdout to stderr.  The block comes
 * when the command ends wherever stdout was a terminal.
 */
void
setup_output(struct meter *m, const char *path, int command)
{
	int fd = -1, terminal = isatty(STDOUT_FILENO);

	m->command_stdout = -1;
	if (path != NULL && (fd = open(path, O_WRONLY | O_CREAT | O_TRUNC |
	    O_CLOEXEC, 0666)) < 0)
		err(KP_EXIT_FAILURE, "%s", path);
	if (command && terminal)
		m->tally = kp_calloc(1, sizeof(*m->tally));
	if (fd < 0 && command && terminal &&
	    (fd = open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0)
		err(KP_EXIT_FAILURE, "/dev/null");
	if (fd < 0)
		return;
	if (command && (m->command_stdout = fcntl(STDOUT_FILENO,
	    F_DUPFD_CLOEXEC, 3)) < 0)
		err(KP_EXIT_FAILURE, "dup");
	if (dup2(fd, STDOUT_FILENO) < 0)
		err(KP_EXIT_FAILURE, "dup2");
	close(fd);
}
