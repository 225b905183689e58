/*
 * libFuzzer harness for the exit-record parser of
 * lib/proc/exit_taskstats.c: any bytes as a datagram from the kernel's
 * TASKSTATS family, folded twice into one listener, as two datagrams read
 * one after the other (so that a thread held from the first may end its
 * process in the second).  Seeds are datagrams the kernel sent: a
 * single-threaded exit, a thread's, a leader's that ended last with its
 * process's aggregate, a leader ended first and its threads after it, an
 * acknowledgement.  Besides not crashing or reading past the datagram, each
 * fact must keep the promises of struct kp_exit: a pid, a parent that is a
 * pid or 0, a comm that ends within its array, at least one thread, a start
 * not after the receipt and its earliest not after its latest; and no more
 * facts and held processes than the datagram holds thread records.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proc/proc.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

#define FAMILY 31	/* TASKSTATS' id on the machine the seeds came from */
#define BOOT_NS (3600LL * 1000000000)	/* an hour after boot */
/*
 * The smallest message that holds a thread record: netlink and generic
 * headers (16 + 4), the aggregate's header (4), the pid (8), and the
 * record's header (4) and the 384 bytes of version 12 read of it.
 */
#define RECORD_MSG_MIN 420

static void
check_fact(const struct kp_exit *e, void *arg)
{
	size_t *facts = arg;

	CHECK(e->pid > 0 && e->ppid >= 0);
	CHECK(memchr(e->comm, '\0', sizeof(e->comm)) != NULL);
	CHECK(e->threads >= 1);
	CHECK(e->start_min_ticks <= e->start_ticks);
	CHECK(e->start_ticks <= (uint64_t)BOOT_NS / 1000000000 *
	    kp_ticks_per_s());
	(*facts)++;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kp_taskstats *ts = kp_taskstats_parser(FAMILY);
	struct kp_taskstats_counts c;
	size_t facts = 0;

	kp_taskstats_parse(ts, data, size, BOOT_NS, check_fact, &facts);
	kp_taskstats_parse(ts, data, size, BOOT_NS, check_fact, &facts);
	CHECK(kp_taskstats_counts(ts, &c) == 0);
	CHECK(c.dropped == 0 && c.forgotten == 0);
	CHECK((facts + c.pending) * RECORD_MSG_MIN <= 2 * size);
	kp_taskstats_close(ts);
	return 0;
}
