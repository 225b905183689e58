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
	t->z[i].estimated |= estimated;
}

/*
 * The block on standard error at the end: the command, its run, and the
 * machine's energy per zone.  Its tree's share is kp-attribute's to give
 * (rapl-read(1), "Measuring a command").
 */
void
tally_block(struct tally *t, const char *argv0, int status)
{
	double s = t->dt_us / 1e6;
	size_t i;

	fprintf(stderr, "rapl-read: %s: status %d  elapsed %.3f s  tree cpu "
	    "%.3f s\n", argv0, status, s, t->cpu_us / 1e6);
	for (i = 0; i < t->n; i++) {
		fprintf(stderr, "  %s  %lld.%06lld J  mean %.2f W  the "
		    "machine's%s\n", t->z[i].zone,
		    (long long)(t->z[i].energy_uj / 1000000),
		    (long long)(t->z[i].energy_uj % 1000000),
		    s > 0 ? t->z[i].energy_uj / 1e6 / s : 0.0,
		    t->z[i].estimated ? ", estimated" : "");
		free(t->z[i].zone);
	}
	fprintf(stderr, "  its tree's share: rapl-read -- %s | proc-cputime | "
	    "kp-attribute | kp-fmt --summary\n", argv0);
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
