/*
 * The node's identity, which a producer writes in its header so that a
 * stream formatted on another host keeps it (kp-records(5)): the node's
 * name, and its processors as /proc/cpuinfo names them.
 */
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

/* A decimal count of at most INT_MAX, all of s; -1 if s is not one. */
static int64_t
count_value(const char *s)
{
	int64_t v = 0;

	if (*s == '\0')
		return -1;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s) || v > (INT_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

/* Cuts the blanks at both ends of s, in place. */
static char *
trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

/* Sets *field to a copy of value, unless it is empty or already set. */
static void
set_text(char **field, const char *value)
{
	if (*field == NULL && *value != '\0')
		*field = kp_strdup(value);
}

/* A new processor, its identity unknown until its lines say it. */
static struct kp_cpu *
cpu_add(struct kp_cpu **cpus, size_t *n, int64_t processor)
{
	struct kp_cpu *c;

	*cpus = kp_reallocarray(*cpus, *n + 1, sizeof(**cpus));
	c = &(*cpus)[(*n)++];
	memset(c, 0, sizeof(*c));
	c->processor = processor;
	c->physical_id = c->core_id = -1;
	return c;
}

/*
 * One "key : value" line of processor c.  arm64 writes neither vendor_id
 * nor "model name": its "CPU implementer" and "CPU part" codes stand for
 * them, as the file writes them ("0x41", "0xd0c"), so that processors of
 * different kinds stay apart; only what the x86 names leave unset.
 */
static void
cpu_line(struct kp_cpu *c, const char *key, const char *value)
{
	if (strcmp(key, "vendor_id") == 0)
		set_text(&c->vendor_id, value);
	else if (strcmp(key, "model name") == 0)
		set_text(&c->model_name, value);
	else if (strcmp(key, "physical id") == 0)
		c->physical_id = count_value(value);
	else if (strcmp(key, "core id") == 0)
		c->core_id = count_value(value);
	else if (strcmp(key, "CPU implementer") == 0)
		set_text(&c->vendor_id, value);
	else if (strcmp(key, "CPU part") == 0)
		set_text(&c->model_name, value);
}

/*
 * The processors of a /proc/cpuinfo, in *cpus (the caller frees it with
 * kp_cpus_free); their number.  A "processor : N" line starts each; a line
 * of another form, a processor line whose N is not a count, and the lines
 * that follow it up to the next processor line are left out.
 */
size_t
kp_cpuinfo_parse(FILE *f, struct kp_cpu **cpus)
{
	struct kp_cpu *cur = NULL;
	char *line = NULL, *colon, *key, *value;
	size_t cap = 0, n = 0;
	int64_t processor;

	*cpus = NULL;
	while (getline(&line, &cap, f) != -1) {
		if ((colon = strchr(line, ':')) == NULL)
			continue;
		*colon = '\0';
		key = trim(line);
		value = trim(colon + 1);
		if (strcmp(key, "processor") != 0) {
			if (cur != NULL)
				cpu_line(cur, key, value);
			continue;
		}
		processor = count_value(value);
		cur = processor < 0 ? NULL : cpu_add(cpus, &n, processor);
	}
	free(line);
	return n;
}

void
kp_cpus_free(struct kp_cpu *cpus, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(cpus[i].vendor_id);
		free(cpus[i].model_name);
	}
	free(cpus);
}

/* The host name: procdir's, where it can be read, else this system's. */
static char *
host_name(const char *procdir)
{
	char path[PATH_MAX], buf[256], *name;

	snprintf(path, sizeof(path), "%s/sys/kernel/hostname", procdir);
	if (kp_read_file(AT_FDCWD, path, buf, sizeof(buf)) > 0 &&
	    *(name = trim(buf)) != '\0')
		return kp_strdup(name);
	if (gethostname(buf, sizeof(buf)) == 0) {
		buf[sizeof(buf) - 1] = '\0';
		if (*(name = trim(buf)) != '\0')
			return kp_strdup(name);
	}
	return NULL;
}

/*
 * The node's name: name (--node-name), else NODE_NAME from the environment
 * (a DaemonSet's downward API), else the host name; and procdir/cpuinfo's
 * processors, none where it cannot be read.
 */
void
kp_node_identify(struct kp_node *node, const char *name, const char *procdir)
{
	const char *env = getenv("NODE_NAME");
	char path[PATH_MAX];
	FILE *f;

	if (name != NULL)
		node->name = kp_strdup(name);
	else if (env != NULL && *env != '\0')
		node->name = kp_strdup(env);
	else
		node->name = host_name(procdir);
	node->cpus = NULL;
	node->ncpus = 0;
	snprintf(path, sizeof(path), "%s/cpuinfo", procdir);
	if ((f = fopen(path, "re")) != NULL) {
		node->ncpus = kp_cpuinfo_parse(f, &node->cpus);
		fclose(f);
	}
}

void
kp_node_free(struct kp_node *node)
{
	free(node->name);
	kp_cpus_free(node->cpus, node->ncpus);
	node->name = NULL;
	node->cpus = NULL;
	node->ncpus = 0;
}
