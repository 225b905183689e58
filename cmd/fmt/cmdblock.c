/*
 * --summary's command block: rapl-read -- CMD's command over the run, its
 * tree's energy the exact sum of the records of its own cgroup, or, where
 * it had none, of its tree's records (cmdtree.c), beside the machine's
 * over the same intervals (kp-fmt(1), "The command's energy").
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

#define CMD_ZONES 64

struct zone_sum {
	char *name;
	int64_t machine_uj;	/* its node records', else its energy records' */
	int64_t energy_uj;	/* the energy records', before kp-attribute */
	int estimated;
	int attributed;	/* a process or exited record had energy_uj */
};

/* The sums of the records of one kp-command-PID cgroup, by zone. */
struct tree {
	char *cgroup;
	int64_t energy_uj[CMD_ZONES];
	int64_t cpu_us[CMD_ZONES];
};

struct cmd_energy {
	struct zone_sum zone[CMD_ZONES];
	size_t nzones;
	struct tree *trees;	/* one per command cgroup seen, mostly one */
	size_t ntrees;
	struct cmd_tree *parents;	/* every process and exited record's */
	struct tree by_parents;	/* the command's tree among them */
	int headers;		/* headers read */
	int runs_command;	/* the last one named rapl-read's command */
	int have_command;	/* the command record has come */
	int64_t pid, status, cpu_us;	/* its, wait4's tree CPU time */
	int64_t ppid, starttime;	/* rapl-read's pid; its start, in ticks */
	char *comm, *cgroup;	/* its; cgroup NULL where it had none */
};

struct cmd_energy *
cmd_energy_new(void)
{
	struct cmd_energy *c = kp_calloc(1, sizeof(struct cmd_energy));

	c->parents = cmd_tree_new();
	return c;
}

/* The index of zone name, added if new; -1 past CMD_ZONES. */
static int
zone_of(struct cmd_energy *c, const char *name)
{
	size_t i;

	if (name == NULL)
		return -1;
	for (i = 0; i < c->nzones; i++)
		if (strcmp(c->zone[i].name, name) == 0)
			return (int)i;
	if (c->nzones == CMD_ZONES)
		return -1;
	c->zone[c->nzones].name = kp_strdup(name);
	return (int)c->nzones++;
}

/* Whether a cgroup path is one rapl-read -- CMD makes: .../kp-command-PID. */
static int
command_cgroup(const char *cgroup)
{
	const char *last = cgroup != NULL ? strrchr(cgroup, '/') : NULL;

	return last != NULL && strncmp(last + 1, "kp-command-", 11) == 0;
}

static struct tree *
tree_of(struct cmd_energy *c, const char *cgroup)
{
	size_t i;

	for (i = 0; i < c->ntrees; i++)
		if (strcmp(c->trees[i].cgroup, cgroup) == 0)
			return &c->trees[i];
	c->trees = kp_reallocarray(c->trees, c->ntrees + 1, sizeof(*c->trees));
	memset(&c->trees[c->ntrees], 0, sizeof(*c->trees));
	c->trees[c->ntrees].cgroup = kp_strdup(cgroup);
	return &c->trees[c->ntrees++];
}

/* A process or exited record of a command's cgroup: its tree's. */
static void
add_tree(struct cmd_energy *c, const struct kp_record *rec, int z)
{
	struct tree *t = tree_of(c, kp_rec_str(rec, "cgroup"));
	int64_t v;
	int over = 0;	/* held: the summary's own rows report such sums */

	if (kp_rec_int(rec, "energy_uj", &v))
		t->energy_uj[z] = add_saturated(t->energy_uj[z], v, &over);
	if (kp_rec_int(rec, "cpu_us", &v))
		t->cpu_us[z] = add_saturated(t->cpu_us[z], v, &over);
}

static char *
str_dup_or_null(const char *s)
{
	return s != NULL ? kp_strdup(s) : NULL;
}

/* The command record: what the block repeats of it. */
static void
take_command(struct cmd_energy *c, const struct kp_record *rec)
{
	c->have_command = 1;
	c->pid = c->status = c->cpu_us = c->ppid = c->starttime = -1;
	kp_rec_int(rec, "pid", &c->pid);
	kp_rec_int(rec, "ppid", &c->ppid);
	kp_rec_int(rec, "starttime", &c->starttime);
	kp_rec_int(rec, "status", &c->status);
	kp_rec_int(rec, "cpu_us", &c->cpu_us);
	free(c->comm);
	free(c->cgroup);
	c->comm = str_dup_or_null(kp_rec_str(rec, "comm"));
	c->cgroup = str_dup_or_null(kp_rec_str(rec, "cgroup"));
}

/*
 * A header: whether its run measures a command.  Only such a run's
 * process and exited records are kept for the tree by parents; a stream
 * without a header, such as grep's output, may be one, and keeps them.
 */
void
cmd_energy_header(struct cmd_energy *c, const struct kp_record *rec)
{
	c->headers++;
	c->runs_command = kp_rec_str(rec, "command") != NULL;
}

/*
 * One record of a whole interval.  1 if it is the command record, which
 * the block stands for; 0 for the others, summed as they are too.
 */
int
cmd_energy_add(struct cmd_energy *c, const struct kp_record *rec)
{
	const struct kp_field *f;
	int64_t uj;
	int z, over = 0;	/* held, as in add_tree */

	if (rec_is(rec, "command")) {
		take_command(c, rec);
		return 1;
	}
	if ((z = zone_of(c, kp_rec_str(rec, "zone"))) < 0)
		return 0;
	if (rec_is(rec, "process") || rec_is(rec, "exited")) {
		c->zone[z].attributed |= kp_rec_get(rec, "energy_uj") != NULL;
		if (command_cgroup(kp_rec_str(rec, "cgroup")))
			add_tree(c, rec, z);
		/* the tree by parents, should the command have no cgroup */
		if (c->headers == 0 || c->runs_command)
			cmd_tree_keep(c->parents, rec, z);
	} else if (rec_is(rec, "node") && kp_rec_int(rec, "energy_uj", &uj))
		c->zone[z].machine_uj = add_saturated(c->zone[z].machine_uj,
		    uj, &over);
	else if (rec_is(rec, "energy") && kp_rec_int(rec, "energy_uj", &uj))
		c->zone[z].energy_uj = add_saturated(c->zone[z].energy_uj, uj,
		    &over);
	else
		return 0;
	c->zone[z].estimated |= (f = kp_rec_get(rec, "estimated")) != NULL &&
	    f->kind == KP_V_TRUE;
	return 0;
}

/*
 * The tree of the command's cgroup, or NULL where it has none or no
 * records; without a cgroup, the tree its records' parents tell.
 */
static const struct tree *
command_tree(struct cmd_energy *c)
{
	size_t i;

	if (c->cgroup == NULL) {
		memset(&c->by_parents, 0, sizeof(c->by_parents));
		cmd_tree_sum(c->parents, c->pid, c->starttime, c->ppid,
		    c->by_parents.energy_uj, c->by_parents.cpu_us, c->nzones);
		return &c->by_parents;
	}
	for (i = 0; i < c->ntrees; i++)
		if (strcmp(c->trees[i].cgroup, c->cgroup) == 0)
			return &c->trees[i];
	return NULL;
}

/* One zone's command record of the block, a line in b (kp_buf_rec empties it). */
static void
zone_line(const struct cmd_energy *c, const struct tree *t, size_t z,
    struct kp_buf *b, int64_t seq, int64_t dt_us)
{
	const struct zone_sum *zs = &c->zone[z];

	kp_buf_rec(b, "command", seq);
	kp_buf_text(b, "zone", zs->name);
	if (c->pid > 0)
		kp_buf_int(b, "pid", c->pid);
	if (c->comm != NULL)
		kp_buf_text(b, "comm", c->comm);
	if (c->status >= 0)
		kp_buf_int(b, "status", c->status);
	if (c->cpu_us >= 0)
		kp_buf_int(b, "cpu_us", c->cpu_us);
	if (c->cgroup != NULL)
		kp_buf_text(b, "cgroup", c->cgroup);
	/* without a cgroup, a stream of no attributed record tells no share */
	if (t != NULL && (c->cgroup != NULL || zs->attributed)) {
		kp_buf_int(b, "energy_uj", t->energy_uj[z]);
		kp_buf_int(b, "credited_cpu_us", t->cpu_us[z]);
		if (dt_us > 0)
			kp_buf_real(b, "watts", t->energy_uj[z] / (double)dt_us);
	}
	kp_buf_int(b, "machine_uj", zs->machine_uj > 0 ? zs->machine_uj :
	    zs->energy_uj);
	kp_buf_int(b, "dt_us", dt_us);
	kp_buf_bool(b, "estimated", zs->estimated);
	kp_buf_add(b, "}\n", 2);
}

/*
 * The block, one command record per zone the machine's energy came in,
 * as lines in b: nothing if no command record came.  seq and dt_us are
 * the run's, of the intervals summed.
 */
void
cmd_energy_lines(struct cmd_energy *c, struct kp_buf *b, int64_t seq,
    int64_t dt_us)
{
	const struct tree *t;
	struct kp_buf line = { NULL, 0, 0 };
	size_t z;

	if (!c->have_command)
		return;
	t = command_tree(c);
	for (z = 0; z < c->nzones; z++)
		if (c->zone[z].machine_uj > 0 || c->zone[z].energy_uj > 0) {
			zone_line(c, t, z, &line, seq, dt_us);
			kp_buf_add(b, line.s, line.len);
		}
	free(line.s);
}

void
cmd_energy_free(struct cmd_energy *c)
{
	size_t i;

	if (c == NULL)
		return;
	for (i = 0; i < c->nzones; i++)
		free(c->zone[i].name);
	for (i = 0; i < c->ntrees; i++)
		free(c->trees[i].cgroup);
	free(c->trees);
	cmd_tree_free(c->parents);
	free(c->comm);
	free(c->cgroup);
	free(c);
}
