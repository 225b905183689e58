/*
 * libFuzzer harness for the /proc parsers of lib/proc/procfs.c,
 * lib/proc/cpuinfo.c and lib/state.c: any bytes as PID/stat, as /proc/stat,
 * as uptime, as boot_id and as cpuinfo, and as the cgroup CPU counters of
 * lib/proc/cgroup_counters.c,
 * each parser on every input.  Besides not crashing, what a parser takes
 * must keep its promise:
 * no time that is negative or overflows as microseconds, a comm that is
 * what lies between the first '(' and the last ')', and nothing read past
 * the line's end.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/proc.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

/* The comm rule, and a time that stays exact in microseconds. */
static void
check_pid_stat(const char *buf, const struct kp_pid_stat *ps)
{
	const char *open = strchr(buf, '('), *close = strrchr(buf, ')');
	size_t n;

	CHECK(open != NULL && close != NULL && open < close);
	n = (size_t)(close - open - 1);
	if (n >= sizeof(ps->comm))
		n = sizeof(ps->comm) - 1;
	CHECK(strlen(ps->comm) == n && memcmp(ps->comm, open + 1, n) == 0);
	CHECK(ps->pid > 0 && ps->ppid >= 0);
	CHECK(ps->cpu_ticks <= (uint64_t)INT64_MAX / 2);
	CHECK(ps->child_ticks <= (uint64_t)INT64_MAX / 2);
	CHECK(kp_ticks_to_us(ps->child_ticks) >= 0 &&
	    kp_ticks_to_us(ps->child_ticks) < INT64_MAX);
	CHECK(kp_ticks_to_us(ps->cpu_ticks) >= 0 &&
	    kp_ticks_to_us(ps->cpu_ticks) < INT64_MAX);
	CHECK(ps->starttime <= (uint64_t)INT64_MAX);
}

/*
 * A stat taken must be taken the same from its first line alone (what
 * follows a newline is no part of it), and a stat cut right after its
 * comm is a line cut short.
 */
static void
fuzz_pid_stat(char *buf)
{
	struct kp_pid_stat ps, again;
	char *close, *nl, saved;
	int rc;

	memset(&ps, 0, sizeof(ps));
	rc = kp_parse_pid_stat(buf, &ps);
	CHECK(rc == 0 || rc == -1 || rc == -2);
	if (rc != 0)
		return;
	check_pid_stat(buf, &ps);
	close = strrchr(buf, ')');
	if ((nl = strchr(close, '\n')) != NULL) {
		saved = *nl;
		*nl = '\0';
		memset(&again, 0, sizeof(again));
		CHECK(kp_parse_pid_stat(buf, &again) == 0);
		CHECK(memcmp(&ps, &again, sizeof(ps)) == 0);
		*nl = saved;
	}
	saved = close[1];
	close[1] = '\0';
	CHECK(kp_parse_pid_stat(buf, &again) == -1);
	close[1] = saved;
}

static void
fuzz_cpu_times(const char *buf)
{
	struct kp_cpu_times ct;

	if (kp_parse_cpu_times(buf, &ct) < 0)
		return;
	CHECK(ct.total_ticks <= (uint64_t)INT64_MAX);
	CHECK(ct.active_ticks <= ct.total_ticks);
	CHECK(kp_ticks_to_us(ct.total_ticks) >= 0);
}

static void
fuzz_uptime(const char *buf)
{
	uint64_t ticks;

	if (kp_parse_uptime_ticks(buf, &ticks) < 0)
		return;
	CHECK(ticks <= (uint64_t)INT64_MAX);
	CHECK(kp_ticks_to_us(ticks) >= 0);
}

static void
fuzz_boot_id(char *buf)
{
	size_t n;

	if (kp_parse_boot_id(buf) < 0)
		return;
	n = strlen(buf);
	/* What the state file stores as a JSON string, and compares. */
	CHECK(n > 0 && strspn(buf, "0123456789abcdef-") == n);
}

/* A counter taken is a count of microseconds, never below zero. */
static void
fuzz_counters(const char *buf)
{
	int64_t usage_us;

	if (kp_parse_cpu_stat_usage(buf, &usage_us) == 0)
		CHECK(usage_us >= 0);
	if (kp_parse_cpuacct_usage(buf, &usage_us) == 0)
		CHECK(usage_us >= 0 && usage_us <= (int64_t)(UINT64_MAX / 1000));
}

/*
 * The processors of a cpuinfo: counts for numbers, -1 for an id unknown,
 * and texts that are NULL or not empty, whatever the bytes.
 */
static void
fuzz_cpuinfo(const uint8_t *data, size_t size)
{
	struct kp_cpu *cpus;
	FILE *f;
	size_t i, n;

	if (size == 0 || (f = fmemopen((void *)data, size, "r")) == NULL)
		return;
	n = kp_cpuinfo_parse(f, &cpus);
	fclose(f);
	for (i = 0; i < n; i++) {
		CHECK(cpus[i].processor >= 0 && cpus[i].processor <= INT_MAX);
		CHECK(cpus[i].physical_id >= -1 && cpus[i].core_id >= -1);
		CHECK(cpus[i].vendor_id == NULL || *cpus[i].vendor_id != '\0');
		CHECK(cpus[i].model_name == NULL ||
		    *cpus[i].model_name != '\0');
	}
	kp_cpus_free(cpus, n);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf;

	buf = malloc(size + 1);
	memcpy(buf, data, size);
	buf[size] = '\0';
	fuzz_pid_stat(buf);
	fuzz_cpu_times(buf);
	fuzz_uptime(buf);
	fuzz_boot_id(buf);
	fuzz_counters(buf);
	fuzz_cpuinfo(data, size);
	free(buf);
	return 0;
}
