/*
 * The node's identity, which a producer writes in its header so that a
 * stream formatted on another host keeps it (kp-records(5)): the node's
 * name, and its processors as /proc/cpuinfo names them; and what they are
 * (family, model, stepping; arm64's implementer and part), for the model
 * of rapl-read(1), which chooses its row by them.
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

/*
 * A number as cpuinfo writes it, decimal ("cpu family : 6") or 0x hex
 * (arm64's "CPU part : 0xd0c"), of at most INT_MAX; -1 if s is not one.
 */
static int64_t
code_value(const char *s)
{
	int64_t v = 0;
	int digit;

	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return count_value(s);
	if (*(s += 2) == '\0')
		return -1;
	for (; *s; s++) {
		if (!isxdigit((unsigned char)*s) || v > (INT_MAX - 15) / 16)
			return -1;
		digit = isdigit((unsigned char)*s) ? *s - '0' :
		    tolower((unsigned char)*s) - 'a' + 10;
		v = v * 16 + digit;
	}
	return v;
}

/* Whether the word is one of the blank-separated words of list. */
static int
has_word(const char *list, const char *word)
{
	size_t len = strlen(word);
	const char *p;

	for (p = list; (p = strstr(p, word)) != NULL; p += len)
		if ((p == list || isspace((unsigned char)p[-1])) &&
		    (p[len] == '\0' || isspace((unsigned char)p[len])))
			return 1;
	return 0;
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
	c->family = c->model = c->stepping = -1;
	c->implementer = c->part = -1;
	return c;
}

/*
 * The lines that tell what a processor is, for rapl-read's model
 * (rapl-read(1), The model); "model name" never does, as VMs mask it.
 */
static void
signature_line(struct kp_cpu *c, const char *key, const char *value)
{
	if (strcmp(key, "cpu family") == 0)
		c->family = code_value(value);
	else if (strcmp(key, "model") == 0)
		c->model = code_value(value);
	else if (strcmp(key, "stepping") == 0)
		c->stepping = code_value(value);
	else if (strcmp(key, "flags") == 0)
		c->hypervisor = has_word(value, "hypervisor");
	else if (strcmp(key, "CPU implementer") == 0)
		c->implementer = code_value(value);
	else if (strcmp(key, "CPU part") == 0)
		c->part = code_value(value);
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
	signature_line(c, key, value);
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

/* The distinct physical ids of cpus; 1 where none is said (arm64, VMs). */
size_t
kp_cpus_sockets(const struct kp_cpu *cpus, size_t n)
{
	size_t i, j, sockets = 0;

	for (i = 0; i < n; i++) {
		if (cpus[i].physical_id < 0)
			continue;
		for (j = 0; j < i; j++)
			if (cpus[j].physical_id == cpus[i].physical_id)
				break;
		sockets += j == i;
	}
	return sockets > 0 ? sockets : (n > 0);
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
