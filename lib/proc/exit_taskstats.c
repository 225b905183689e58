/*
 * The kernel's exit records, read from its taskstats netlink socket
 * (proc-cputime(1), "Exit accounting"): the CPU time of every process
 * that ends, even one born and dead between two scans of /proc.  A
 * listener registers on the generic-netlink TASKSTATS family for the exits
 * on every possible CPU; the kernel then sends, as each thread
 * ends, that thread's record, and with the last thread of a process that
 * ever had more than one, the sum over all its threads (the thread-group
 * aggregate, which has no pid, ppid or comm of its own).  A single-threaded
 * process gets no aggregate.  The records are folded here into one exit
 * fact per process, so that each process's CPU is counted once.
 *
 * What the kernel's records give, and why we take what we take:
 * - cpu_run_virtual_total is the scheduler's nanosecond sum of run time;
 *   ac_utime and ac_stime are sampled at clock ticks, wrong by most of a
 *   tick for a short process.  The sum is as the scheduler last brought it
 *   up to date (at a tick, a switch, a wakeup, a read of the task's CPU
 *   clock), which the exit does not do: a process that computes to its
 *   end lacks what it ran since then, up to a tick (1/CONFIG_HZ, and more
 *   on a CPU whose tick idled).  Measured on Linux 6.18 at HZ 250 against
 *   wait4 (tests/taskstats-probe -p): a child woken alone on an idle CPU
 *   that computes 0.2 or 1 ms and exits is credited 0, one of 3 ms 0 to
 *   0.95, one of 10 ms 0.6 to 0.8; ten at once on two CPUs, 0.16, 0.11 to
 *   0.23, 0.44 to 0.50 and 0.85 of it.  Children that read their CPU clock
 *   as they compute (as the did), thirty at once: 0.64 to 0.77,
 *   0.92, 0.97, 0.985 and 0.99 for 0.2, 1, 3, 10 and 20 ms.  The record is
 *   also filled before the exit's teardown (tens of us).  wait4, the
 *   reaping parent's cutime and cstime and the cgroup's counter hold all
 *   of it: an exit record is the detail, never more than the truth.
 * - ac_btime is in whole seconds.  ac_tgetime is how long the process
 *   (its leader) had lived when the record was filled, in us, on the
 *   monotonic clock: CLOCK_BOOTTIME at receipt less it is when the
 *   process started, in the clock of /proc/PID/stat's starttime.
 * - ac_tgid and the AGROUP flag (the process's last thread) are of
 *   version 12; an older kernel is refused, since its thread records
 *   cannot be told apart from processes.
 * - A full receive buffer drops a record, counted in the socket's drops
 *   (SO_MEMINFO), and makes one later read fail with ENOBUFS, however many
 *   were lost: the drops are the count, ENOBUFS is only read past.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/acct.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/taskstats.h>

#include "proc.h"

#define DATAGRAM_MAX 8192	/* one exit: two records of about 600 bytes */
#define REQUEST_MAX 1024	/* one request to the kernel, its attribute in */
#define CPUS_MAX 512		/* /sys/devices/system/cpu/possible */
#define PROOF_MS 3000		/* for the proof child's record */
#define PROOF_CPU_NS 100000	/* the proof child's CPU time */
#define REPLY_MS 3000		/* for the kernel's answer to a request */
#define TGID_VERSION 12		/* ac_tgid, ac_tgetime and AGROUP */
#define CPUS_PATH "/sys/devices/system/cpu/possible"

/* The part of a thread's record we read: version 12's fields, no more. */
#define THREAD_LEN (offsetof(struct taskstats, ac_tgetime) + sizeof(__u64))
/* The part of the thread-group aggregate we read: its CPU time. */
#define GROUP_LEN (offsetof(struct taskstats, cpu_run_virtual_total) + \
    sizeof(__u64))

/* A process some of whose threads have ended, and it not yet. */
struct group {
	char comm[TS_COMM_LEN];	/* its leader's, once the leader ended */
	int have_leader;
	uint64_t cpu_ns;	/* of its ended threads */
	uint32_t threads;	/* records folded */
	int64_t heard;		/* ts->heard when it last had a record */
};

struct kp_taskstats {
	int fd;			/* -1: a parser without a socket */
	uint16_t family;	/* TASKSTATS' generic-netlink id */
	uint32_t seq;		/* of the last request sent */
	char cpus[CPUS_MAX];	/* the CPU list registered */
	struct kp_map *groups;	/* "tgid" -> struct group */
	int64_t heard;		/* thread records folded */
	uint32_t drops_seen;	/* SK_MEMINFO_DROPS at the last look */
	uint64_t dropped;	/* the same, not wrapping at 2^32 */
	uint64_t unreadable, forgotten;
	int64_t empty_ns;	/* CLOCK_BOOTTIME before a read found none */
	int old_version;	/* a record's version below TGID_VERSION */
};

/* The kernel's answer to a request: got, and then its error (0: none). */
struct reply {
	int got;
	int error;
};

/* One attribute of a netlink message: its type, its payload. */
struct attr {
	uint16_t type;
	const char *data;
	size_t len;
};

static void
put_why(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
put_why(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

/*
 * Takes the attribute at *p, before end, and steps past it: 1; 0 at the
 * end; -1 for one that claims more than there is.  Headers are copied, as
 * a datagram's attributes need not be aligned.
 */
static int
attr_take(const char **p, const char *end, struct attr *a)
{
	size_t left = (size_t)(end - *p), step;
	struct nlattr h;

	if (left == 0)
		return 0;
	if (left < NLA_HDRLEN)
		return -1;
	memcpy(&h, *p, sizeof(h));
	if (h.nla_len < NLA_HDRLEN || h.nla_len > left)
		return -1;
	a->type = h.nla_type & NLA_TYPE_MASK;
	a->data = *p + NLA_HDRLEN;
	a->len = h.nla_len - NLA_HDRLEN;
	step = NLA_ALIGN(h.nla_len);
	*p += step < left ? step : left;
	return 1;
}

static int
attr_u32(const struct attr *a, uint32_t *v)
{
	if (a->len != sizeof(*v))
		return -1;
	memcpy(v, a->data, sizeof(*v));
	return 0;
}

/*
 * A record nested in an AGGR_PID or AGGR_TGID attribute: its id and its
 * struct taskstats, of which at least need bytes, the rest zero (a newer
 * kernel's struct is longer, an older one's shorter).  0, or -1.
 */
static int
take_record(const struct attr *aggr, uint16_t id_type, size_t need,
    uint32_t *id, struct taskstats *t)
{
	const char *p = aggr->data, *end = aggr->data + aggr->len;
	int have_id = 0, have_stats = 0, rc;
	struct attr a;

	memset(t, 0, sizeof(*t));
	while ((rc = attr_take(&p, end, &a)) > 0) {
		if (a.type == id_type) {
			if (attr_u32(&a, id) < 0)
				return -1;
			have_id = 1;
		} else if (a.type == TASKSTATS_TYPE_STATS && a.len >= need) {
			memcpy(t, a.data, a.len < sizeof(*t) ? a.len : sizeof(*t));
			have_stats = 1;
		}
	}
	return rc == 0 && have_id && have_stats ? 0 : -1;
}

/* Groups heard of before cut are let go, and counted. */
struct sweep {
	int64_t cut;
	uint64_t *forgotten;
};

static int
unheard(void *val, void *arg)
{
	struct sweep *sw = arg;

	if (((struct group *)val)->heard >= sw->cut)
		return 0;
	(*sw->forgotten)++;
	return 1;
}

static void
collect_heard(const char *key, void *val, void *arg)
{
	int64_t **next = arg;

	(void)key;
	*(*next)++ = ((struct group *)val)->heard;
}

/*
 * A process whose last thread's record was lost would be held for ever:
 * beyond KP_LIVE_MAX held, those heard of least recently are let go, down
 * to half (as liveness.c does for workloads).
 */
static void
cap_groups(struct kp_taskstats *ts)
{
	size_t n = kp_map_count(ts->groups);
	int64_t *heard, *next;
	struct sweep sw;

	if (n <= KP_LIVE_MAX)
		return;
	heard = next = kp_reallocarray(NULL, n, sizeof(*heard));
	kp_map_each(ts->groups, collect_heard, &next);
	sw.cut = kp_live_cut(heard, n, KP_LIVE_MAX / 2);
	sw.forgotten = &ts->forgotten;
	kp_map_sweep(ts->groups, unheard, &sw, free);
	free(heard);
}

/* A thread that ended before its process: held until the process ends. */
static void
hold_thread(struct kp_taskstats *ts, const char *key, const struct taskstats *t)
{
	struct group *g;

	if ((g = kp_map_get(ts->groups, key)) == NULL) {
		g = kp_calloc(1, sizeof(*g));
		kp_map_put(ts->groups, key, g);
		cap_groups(ts);
	}
	if (t->ac_pid == t->ac_tgid) {
		memcpy(g->comm, t->ac_comm, sizeof(g->comm));
		g->have_leader = 1;
	}
	g->cpu_ns += t->cpu_run_virtual_total;
	g->threads++;
	g->heard = ts->heard;
}

/* CLOCK_BOOTTIME nanoseconds as /proc's clock ticks, rounded down. */
static uint64_t
ns_to_ticks(int64_t ns)
{
	uint64_t hz = kp_ticks_per_s();

	if (ns <= 0)
		return 0;
	return (uint64_t)ns / 1000000000 * hz +
	    (uint64_t)ns % 1000000000 * hz / 1000000000;
}

/*
 * The process of t, its last thread, has ended: its fact.  Its CPU is the
 * kernel's aggregate when there is one (complete even if a thread's own
 * record was lost), else the sum of its threads' records; its comm is its
 * leader's; its parent is the last thread's, the one that reaps it.  Its
 * start is its age in the record before the record's receipt at boot_ns,
 * and after the socket was last seen empty, less that age.
 */
static void
end_process(struct kp_taskstats *ts, const char *key, const struct taskstats *t,
    const struct taskstats *aggregate, int64_t boot_ns, struct kp_exit *e)
{
	struct group *g = kp_map_remove(ts->groups, key);
	int64_t age_ns = (int64_t)t->ac_tgetime * 1000;
	int64_t empty_ns = ts->empty_ns < boot_ns ? ts->empty_ns : boot_ns;

	memset(e, 0, sizeof(*e));
	e->pid = (pid_t)t->ac_tgid;
	e->ppid = (pid_t)t->ac_ppid;
	memcpy(e->comm, g && g->have_leader && t->ac_pid != t->ac_tgid ?
	    g->comm : t->ac_comm, sizeof(e->comm) - 1);
	e->cpu_ns = t->cpu_run_virtual_total + (g ? g->cpu_ns : 0);
	if (aggregate != NULL)
		e->cpu_ns = aggregate->cpu_run_virtual_total;
	e->start_ticks = ns_to_ticks(boot_ns - age_ns);
	e->start_min_ticks = ns_to_ticks(empty_ns - age_ns);
	e->threads = 1 + (g ? g->threads : 0);
	free(g);
}

/*
 * Checks a thread's record against the bounds that keep the fact exact:
 * ids in pid_t, a start not before boot.  A kernel too old to say which
 * process a thread is of is remembered, for open to say so.
 */
static int
thread_ok(struct kp_taskstats *ts, const struct taskstats *t, uint32_t pid,
    int64_t boot_ns)
{
	if (t->version < TGID_VERSION) {
		ts->old_version = t->version;
		return 0;
	}
	return pid == t->ac_pid && t->ac_pid > 0 && t->ac_tgid > 0 &&
	    t->ac_pid <= INT32_MAX && t->ac_tgid <= INT32_MAX &&
	    t->ac_ppid <= INT32_MAX && boot_ns >= 0 &&
	    t->ac_tgetime <= (uint64_t)boot_ns / 1000;
}

/* The attributes of one TASKSTATS_CMD_NEW message: 0, or -1 unreadable. */
static int
take_exit(struct kp_taskstats *ts, const char *p, const char *end,
    int64_t boot_ns, kp_exit_fn *fn, void *arg)
{
	struct taskstats thread, group;
	uint32_t pid = 0, tgid = 0;
	int have_thread = 0, have_group = 0, rc;
	char key[16];
	struct attr a;
	struct kp_exit e;

	while ((rc = attr_take(&p, end, &a)) > 0) {
		if (a.type == TASKSTATS_TYPE_AGGR_PID && !have_thread) {
			if (take_record(&a, TASKSTATS_TYPE_PID, THREAD_LEN,
			    &pid, &thread) < 0)
				return -1;
			have_thread = 1;
		} else if (a.type == TASKSTATS_TYPE_AGGR_TGID && !have_group) {
			if (take_record(&a, TASKSTATS_TYPE_TGID, GROUP_LEN,
			    &tgid, &group) < 0)
				return -1;
			have_group = 1;
		} else if (a.type != TASKSTATS_TYPE_NULL)
			return -1;
	}
	if (rc < 0 || !have_thread || !thread_ok(ts, &thread, pid, boot_ns) ||
	    (have_group && (tgid != thread.ac_tgid ||
	    !(thread.ac_flag & AGROUP))))
		return -1;
	ts->heard++;
	snprintf(key, sizeof(key), "%u", thread.ac_tgid);
	if (!(thread.ac_flag & AGROUP)) {
		hold_thread(ts, key, &thread);
		return 0;
	}
	end_process(ts, key, &thread, have_group ? &group : NULL, boot_ns, &e);
	if (fn != NULL)
		fn(&e, arg);
	return 0;
}

/* The acknowledgement of our last request, or an error of another. */
static void
take_ack(const struct kp_taskstats *ts, const struct nlmsghdr *h,
    const char *payload, size_t len, struct reply *reply)
{
	struct nlmsgerr ack;

	if (len < sizeof(ack) || h->nlmsg_seq != ts->seq)
		return;
	memcpy(&ack, payload, sizeof(ack));
	reply->got = 1;
	reply->error = ack.error <= 0 ? -ack.error : EPROTO;
}

/*
 * One netlink message: an exit record folded and its fact passed to fn,
 * an acknowledgement of our request put in *reply (when reply is not
 * NULL: an error the kernel sends unasked is let be), or counted as
 * unreadable.
 */
static void
take_message(struct kp_taskstats *ts, const struct nlmsghdr *h,
    const char *body, const char *end, int64_t boot_ns, kp_exit_fn *fn,
    void *arg, struct reply *reply)
{
	struct genlmsghdr genl;

	if (h->nlmsg_type == NLMSG_ERROR) {
		if (reply != NULL)
			take_ack(ts, h, body, (size_t)(end - body), reply);
		return;
	}
	if (h->nlmsg_type == NLMSG_NOOP || h->nlmsg_type == NLMSG_DONE)
		return;
	if (h->nlmsg_type != ts->family ||
	    (size_t)(end - body) < GENL_HDRLEN) {
		ts->unreadable++;
		return;
	}
	memcpy(&genl, body, sizeof(genl));
	if (genl.cmd != TASKSTATS_CMD_NEW ||
	    take_exit(ts, body + GENL_HDRLEN, end, boot_ns, fn, arg) < 0)
		ts->unreadable++;
}

/* Each netlink message of one datagram; a message cut short ends it. */
static void
take_datagram(struct kp_taskstats *ts, const char *buf, size_t len,
    int64_t boot_ns, kp_exit_fn *fn, void *arg, struct reply *reply)
{
	const char *p = buf;
	struct nlmsghdr h;
	size_t left, step;

	while ((left = (size_t)(buf + len - p)) >= NLMSG_HDRLEN) {
		memcpy(&h, p, sizeof(h));
		if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > left)
			break;
		take_message(ts, &h, p + NLMSG_HDRLEN, p + h.nlmsg_len, boot_ns,
		    fn, arg, reply);
		step = NLMSG_ALIGN(h.nlmsg_len);
		p += step < left ? step : left;
	}
	if (p != buf + len)
		ts->unreadable++;
}

static struct kp_taskstats *
listener_new(int fd, uint16_t family)
{
	struct kp_taskstats *ts = kp_calloc(1, sizeof(*ts));

	ts->fd = fd;
	ts->family = family;
	ts->groups = kp_map_new();
	return ts;
}

struct kp_taskstats *
kp_taskstats_parser(uint16_t family)
{
	return listener_new(-1, family);
}

void
kp_taskstats_parse(struct kp_taskstats *ts, const void *buf, size_t len,
    int64_t boot_ns, kp_exit_fn *fn, void *arg)
{
	take_datagram(ts, buf, len, boot_ns, fn, arg, NULL);
}

/*
 * Reads every datagram queued, without blocking: 0 once none is left, or
 * -1 (errno) if a read failed.  Each datagram's receipt is its clock.
 */
static int
receive(struct kp_taskstats *ts, kp_exit_fn *fn, void *arg,
    struct reply *reply)
{
	char buf[DATAGRAM_MAX];
	int64_t before_ns;
	ssize_t n;

	for (;;) {
		before_ns = kp_boot_ns();
		n = recv(ts->fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0 && (errno == EINTR || errno == ENOBUFS))
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			ts->empty_ns = before_ns;
			return 0;
		}
		if (n < 0)
			return -1;
		if ((size_t)n > sizeof(buf))
			ts->unreadable++;
		else
			take_datagram(ts, buf, (size_t)n, kp_boot_ns(), fn, arg,
			    reply);
	}
}

int
kp_taskstats_drain(struct kp_taskstats *ts, kp_exit_fn *fn, void *arg)
{
	return receive(ts, fn, arg, NULL);
}

/*
 * Waits until *done is set by what arrives, or until ms have passed: 0,
 * or -1 (errno; ETIMEDOUT when nothing came in time).
 */
static int
wait_for(struct kp_taskstats *ts, kp_exit_fn *fn, void *arg,
    struct reply *reply, const int *done, int ms)
{
	int64_t deadline_us = kp_mono_us() + (int64_t)ms * 1000, left_us;
	struct pollfd pfd = { .fd = ts->fd, .events = POLLIN };

	for (;;) {
		if (receive(ts, fn, arg, reply) < 0)
			return -1;
		if (*done)
			return 0;
		if ((left_us = deadline_us - kp_mono_us()) <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (poll(&pfd, 1, (int)((left_us + 999) / 1000)) < 0 &&
		    errno != EINTR)
			return -1;
	}
}

/* Sends the kernel a request of one attribute: 0, or -1 (errno). */
static int
send_request(struct kp_taskstats *ts, uint16_t family, uint8_t cmd,
    uint16_t flags, uint16_t attr_type, const void *data, size_t len)
{
	char buf[REQUEST_MAX] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct genlmsghdr *g = (struct genlmsghdr *)(buf + NLMSG_HDRLEN);
	struct nlattr *a = (struct nlattr *)(buf + NLMSG_HDRLEN + GENL_HDRLEN);
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };

	if (len > sizeof(buf) - NLMSG_HDRLEN - GENL_HDRLEN - NLA_HDRLEN) {
		errno = E2BIG;
		return -1;
	}
	memset(buf, 0, sizeof(buf));
	a->nla_type = attr_type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	memcpy((char *)a + NLA_HDRLEN, data, len);
	h->nlmsg_len = NLMSG_HDRLEN + GENL_HDRLEN + NLA_ALIGN(a->nla_len);
	h->nlmsg_type = family;
	h->nlmsg_flags = NLM_F_REQUEST | flags;
	h->nlmsg_seq = ++ts->seq;
	g->cmd = cmd;
	g->version = 1;
	return sendto(ts->fd, buf, h->nlmsg_len, 0, (struct sockaddr *)&kernel,
	    sizeof(kernel)) < 0 ? -1 : 0;
}

/*
 * A TASKSTATS command of one attribute: 0 once the kernel acknowledged
 * it, or -1 with errno its refusal.  Exit records that come before the
 * acknowledgement are folded, their facts not passed on.
 */
static int
command(struct kp_taskstats *ts, uint16_t attr_type, const char *text)
{
	struct reply reply = { 0, 0 };

	if (send_request(ts, ts->family, TASKSTATS_CMD_GET, NLM_F_ACK,
	    attr_type, text, strlen(text) + 1) < 0 ||
	    wait_for(ts, NULL, NULL, &reply, &reply.got, REPLY_MS) < 0)
		return -1;
	errno = reply.error;
	return reply.error == 0 ? 0 : -1;
}

/* The family id in the controller's answer: 0, or -1 (errno). */
static int
take_family(const char *buf, size_t len, uint16_t *family)
{
	const char *p = buf + NLMSG_HDRLEN + GENL_HDRLEN;
	struct nlmsghdr h;
	struct nlmsgerr e;
	struct attr a;

	errno = EPROTO;
	if (len < NLMSG_HDRLEN)
		return -1;
	memcpy(&h, buf, sizeof(h));
	if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > len)
		return -1;
	if (h.nlmsg_type == NLMSG_ERROR && h.nlmsg_len >= NLMSG_HDRLEN +
	    sizeof(e)) {
		memcpy(&e, buf + NLMSG_HDRLEN, sizeof(e));
		errno = e.error < 0 ? -e.error : EPROTO;
		return -1;
	}
	if (h.nlmsg_type != GENL_ID_CTRL || h.nlmsg_len < NLMSG_HDRLEN +
	    GENL_HDRLEN)
		return -1;
	while (attr_take(&p, buf + h.nlmsg_len, &a) > 0)
		if (a.type == CTRL_ATTR_FAMILY_ID && a.len == sizeof(*family)) {
			memcpy(family, a.data, sizeof(*family));
			return 0;
		}
	return -1;
}

/* Asks the controller for TASKSTATS' id, before any exit can come. */
static int
find_family(struct kp_taskstats *ts)
{
	static const char name[] = TASKSTATS_GENL_NAME;
	struct pollfd pfd = { .fd = ts->fd, .events = POLLIN };
	char buf[DATAGRAM_MAX];
	ssize_t n;

	if (send_request(ts, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0,
	    CTRL_ATTR_FAMILY_NAME, name, sizeof(name)) < 0)
		return -1;
	while (poll(&pfd, 1, REPLY_MS) < 0)
		if (errno != EINTR)
			return -1;
	if ((n = recv(ts->fd, buf, sizeof(buf), MSG_DONTWAIT)) < 0)
		return -1;
	return take_family(buf, (size_t)n, &ts->family);
}

/* The listener registered for the exits on every CPU there can be. */
static int
register_cpus(struct kp_taskstats *ts, char *why, size_t len)
{
	if (kp_read_file(AT_FDCWD, CPUS_PATH, ts->cpus, sizeof(ts->cpus)) < 0) {
		put_why(why, len, "%s: %s", CPUS_PATH, strerror(errno));
		ts->cpus[0] = '\0';
		return -1;
	}
	ts->cpus[strcspn(ts->cpus, "\n")] = '\0';
	if (command(ts, TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, ts->cpus) == 0)
		return 0;
	if (errno == EPERM)
		put_why(why, len, "registering for exit records needs "
		    "CAP_NET_ADMIN");
	else if (errno == EINVAL)
		put_why(why, len, "the kernel refused the registration: "
		    "not the host's user and PID namespaces");
	else
		put_why(why, len, "registering for exit records: %s",
		    strerror(errno));
	return -1;
}

struct proof {
	pid_t child;
	int seen;
	uint64_t cpu_ns;
};

static void
proof_seen(const struct kp_exit *e, void *arg)
{
	struct proof *pr = arg;

	if (e->pid == pr->child) {
		pr->seen = 1;
		pr->cpu_ns = e->cpu_ns;
	}
}

/* Why the proof child's record did not come, or came without its CPU. */
static void
proof_failed(const struct kp_taskstats *ts, int rc, int error, char *why,
    size_t len)
{
	if (rc == 0)
		put_why(why, len, "exit records carry no CPU time: the kernel "
		    "has no delay accounting (CONFIG_TASK_DELAY_ACCT)");
	else if (error != ETIMEDOUT)
		put_why(why, len, "reading exit records: %s", strerror(error));
	else if (ts->old_version)
		put_why(why, len, "the kernel's exit records are of version "
		    "%d, without thread group ids (%d)", ts->old_version,
		    TGID_VERSION);
	else
		put_why(why, len, "no exit record came within %d s of a "
		    "child's exit: the kernel sends them only to the host's "
		    "network namespace", PROOF_MS / 1000);
}

/*
 * The proof child's work: a little CPU time, read on its own clock, which
 * brings the scheduler's account of it up to date, so that its record has
 * CPU time where the kernel has delay accounting (see kp_exit).
 */
static void
burn_briefly(void)
{
	struct timespec ts;

	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	while (ts.tv_sec == 0 && ts.tv_nsec < PROOF_CPU_NS);
	_exit(0);
}

/*
 * The registration proven: a child that exits at once, and its record,
 * with its CPU time, received.  Another network namespace accepts the
 * registration and then receives nothing (which namespace is the host's
 * cannot be told where PID 1's is not ours to read: the timeout says what
 * is most likely); a kernel without delay accounting sends records
 * without CPU time.
 */
static int
prove(struct kp_taskstats *ts, char *why, size_t len)
{
	struct proof pr = { 0, 0, 0 };
	int rc, error;

	if ((pr.child = fork()) < 0) {
		put_why(why, len, "fork: %s", strerror(errno));
		return -1;
	}
	if (pr.child == 0)
		burn_briefly();
	rc = wait_for(ts, proof_seen, &pr, NULL, &pr.seen, PROOF_MS);
	error = errno;
	while (waitpid(pr.child, NULL, 0) < 0 && errno == EINTR)
		;
	if (rc == 0 && pr.cpu_ns > 0)
		return 0;
	proof_failed(ts, rc, error, why, len);
	return -1;
}

/*
 * A socket's receive buffer of bytes (the kernel doubles it for its own
 * accounting): forced past rmem_max with CAP_NET_ADMIN, else asked for.
 */
void
kp_set_rcvbuf(int fd, size_t bytes)
{
	int n = bytes > INT32_MAX / 2 ? INT32_MAX / 2 : (int)bytes;

	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &n, sizeof(n)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &n, sizeof(n));
}

struct kp_taskstats *
kp_taskstats_open(size_t rcvbuf_bytes, char *why, size_t whylen)
{
	struct sockaddr_nl self = { .nl_family = AF_NETLINK };
	struct kp_taskstats *ts;
	int fd;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (fd < 0 || bind(fd, (struct sockaddr *)&self, sizeof(self)) < 0) {
		put_why(why, whylen, "netlink socket: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	ts = listener_new(fd, 0);
	kp_set_rcvbuf(fd, rcvbuf_bytes ? rcvbuf_bytes : KP_TASKSTATS_RCVBUF);
	if (find_family(ts) < 0) {
		if (errno == ENOENT)
			put_why(why, whylen, "the kernel has no TASKSTATS "
			    "family (CONFIG_TASKSTATS)");
		else
			put_why(why, whylen, "asking for the TASKSTATS "
			    "family: %s", strerror(errno));
	} else if (register_cpus(ts, why, whylen) == 0 &&
	    prove(ts, why, whylen) == 0)
		return ts;
	kp_taskstats_close(ts);
	return NULL;
}

int
kp_taskstats_fd(const struct kp_taskstats *ts)
{
	return ts->fd;
}

/*
 * The socket's drops are a 32-bit count: what it grew by since the last
 * look is added, so that the total does not wrap.
 */
int
kp_taskstats_counts(struct kp_taskstats *ts, struct kp_taskstats_counts *c)
{
	uint32_t mem[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mem);

	memset(c, 0, sizeof(*c));
	if (ts->fd >= 0) {
		memset(mem, 0, sizeof(mem));
		if (getsockopt(ts->fd, SOL_SOCKET, SO_MEMINFO, mem, &len) < 0)
			return -1;
		ts->dropped += (uint32_t)(mem[SK_MEMINFO_DROPS] -
		    ts->drops_seen);
		ts->drops_seen = mem[SK_MEMINFO_DROPS];
		c->rcvbuf_bytes = mem[SK_MEMINFO_RCVBUF];
	}
	c->dropped = ts->dropped;
	c->unreadable = ts->unreadable;
	c->forgotten = ts->forgotten;
	c->pending = kp_map_count(ts->groups);
	return 0;
}

/* Deregistered, so that a socket that later gets our port gets nothing. */
void
kp_taskstats_close(struct kp_taskstats *ts)
{
	if (ts == NULL)
		return;
	if (ts->fd >= 0) {
		if (ts->cpus[0] != '\0')
			(void)send_request(ts, ts->family, TASKSTATS_CMD_GET, 0,
			    TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK, ts->cpus,
			    strlen(ts->cpus) + 1);
		close(ts->fd);
	}
	kp_map_free(ts->groups, free);
	free(ts);
}

/*
 * When a process started, from its record: its age when the kernel filled
 * the record, taken from a time the record was filled by.  The record's
 * receipt is one (start_ticks): the true start is never after it, and
 * before it by the record's time in the socket, within a tick when the
 * socket is drained as records come (987 of 1,000 exact, 13 a tick after,
 * measured).  The last read that found the socket empty is a time the
 * record was filled after (start_min_ticks), less the moment between the
 * kernel's filling and queueing.  /proc/PID/stat's starttime of the same
 * process lies between the two, each widened by a tick: for the kernel
 * reads the start's two clocks one after the other, and may be preempted
 * between filling and queueing.  A process that lived through a suspend
 * started, for /proc, earlier than the record's monotonic age says, and
 * is not matched.  Pids are handed out in turn, so one is not reused
 * while a record waits in the socket.
 */
int
kp_exit_same_start(const struct kp_exit *e, uint64_t starttime)
{
	return e->start_min_ticks <= starttime + 1 &&
	    starttime <= e->start_ticks + 1;
}
