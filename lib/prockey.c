/*
 * A process as every stage knows it: its pid and its starttime, since a
 * pid is reused and a starttime tells the two apart (kp-records(5)).
 */
#include <stdio.h>

#include "kp.h"

/* "pid:starttime" in buf, the key of a process in a stage's tables. */
void
kp_proc_key(char *buf, size_t len, int64_t pid, int64_t starttime)
{
	snprintf(buf, len, "%lld:%lld", (long long)pid, (long long)starttime);
}

/* The pid and starttime of a key that kp_proc_key wrote; 0 if it is not. */
int
kp_proc_key_parse(const char *key, int64_t *pid, int64_t *starttime)
{
	long long p, s;
	int n = 0;

	if (sscanf(key, "%lld:%lld%n", &p, &s, &n) != 2 || key[n] != '\0' ||
	    p <= 0 || s < 0)
		return 0;
	*pid = p;
	*starttime = s;
	return 1;
}
