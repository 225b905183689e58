/*
 * The cgroup each process ran in, known from the moment it runs: the
 * kernel's process events (the proc connector, CN_IDX_PROC), read as they
 * arrive (proc-cputime(1), "Exit accounting").  Per exec, one read of
 * /proc/PID/cgroup; a child inherits its parent's at fork; a pid's entry
 * ends with its exit event and is kept, ended, until its exit fact (which
 * taskstats sends before the event but is read up to a pause later) has
 * taken it, for at most two scans.
 *
 * An exiting task reads `/' in a cgroup v1 hierarchy (the v2 line keeps its
 * path, with ` (deleted)' once the cgroup is removed): a read whose v1
 * line is `/' is kept only if the task is not exiting (PF_EXITING in its
 * stat, set before the v1 link goes); otherwise it is unknown, never root.
 *
 * The kernel numbers the events of each CPU in turn (the connector
 * message's seq): a gap is an event lost, by this socket's full buffer
 * (read past on ENOBUFS) or anywhere on the way.
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
#include <unistd.h>

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>

#include "proc.h"

#define PROOF_MS 3000		/* for the ack and the proof child's exec */
#define PF_EXITING 0x4		/* include/linux/sched.h */
#define DELETED " (deleted)"

struct entry {
	char *cgroup;		/* the cgroup file's text; NULL: unknown */
	unsigned ended;		/* 0: alive; else the cut it ended after + 1 */
	pid_t ppid;		/* ended: its parent then, who reaps it; 0 */
};

struct kp_events {
	int fd;
	int procfd;		/* the live /proc, for the exec's reads; or -1 */
	struct kp_map *pids;	/* struct entry by pid */
	uint32_t *seq;		/* per CPU: the next seq awaited */
	unsigned char *seen;	/* per CPU: seq is set */
	size_t ncpus;
	unsigned cuts;
	uint64_t lost;		/* gaps in the per-CPU numbering */
	uint32_t cookie;	/* our request's ack; its answer's, less 1 */
	int acked, ack_err;
	pid_t proof_pid;	/* whose exec proves the subscription */
	int proven;
	kp_exit_cgroup_fn *on_exit;	/* told each exit's cgroup, or NULL */
	void *on_exit_arg;
};

static void
entry_free(void *p)
{
	struct entry *e = p;

	free(e->cgroup);
	free(e);
}

static struct entry *
entry_put(struct kp_events *ev, pid_t pid, char *cgroup)
{
	char key[16];
	struct entry *e;

	snprintf(key, sizeof(key), "%d", (int)pid);
	if ((e = kp_map_get(ev->pids, key)) == NULL) {
		e = kp_calloc(1, sizeof(*e));
		kp_map_put(ev->pids, key, e);
	}
	free(e->cgroup);
	e->cgroup = cgroup;
	e->ended = 0;
	e->ppid = 0;
	return e;
}

static struct entry *
entry_get(const struct kp_events *ev, pid_t pid)
{
	char key[16];

	snprintf(key, sizeof(key), "%d", (int)pid);
	return kp_map_get(ev->pids, key);
}

/* The text without v2's ` (deleted)': the path the cgroup had. */
static void
strip_deleted(char *text)
{
	size_t n = strlen(DELETED);
	char *p, *end;

	for (p = text; *p != '\0'; p = *end != '\0' ? end + 1 : end) {
		end = p + strcspn(p, "\n");
		if ((size_t)(end - p) >= n && memcmp(end - n, DELETED, n) == 0) {
			memmove(end - n, end, strlen(end) + 1);
			end -= n;
		}
	}
}

/*
 * Whether every v1 line (hierarchy id:controllers:path) reads `/'.  An
 * exiting task leaves all its v1 cgroups at once, so one line elsewhere
 * says its paths are still its own; and on a hybrid host some v1
 * hierarchies (net_cls, rdma, misc) hold every task at `/', so that a test
 * of any line would read the stat of nearly every exec as well.
 */
static int
v1_at_root(const char *text)
{
	const char *p, *end, *path;
	int at_root = 0;

	for (p = text; *p != '\0'; p = *end != '\0' ? end + 1 : end) {
		end = p + strcspn(p, "\n");
		if (strncmp(p, "0::", 3) == 0 || (path = memchr(p, ':',
		    (size_t)(end - p))) == NULL || (path = memchr(path + 1,
		    ':', (size_t)(end - path - 1))) == NULL)
			continue;
		if (end - path != 2 || path[1] != '/')
			return 0;
		at_root = 1;
	}
	return at_root;
}

static int
exiting(const struct kp_events *ev, const char *pid)
{
	struct kp_pid_stat ps;

	return kp_read_pid_stat(ev->procfd, pid, &ps) < 0 ||
	    (ps.flags & PF_EXITING) != 0;
}

/* The cgroup file's text as the process reads it now; NULL: unknown. */
static char *
read_cgroup(const struct kp_events *ev, pid_t pid)
{
	char path[32], key[16], buf[4096];
	int n;

	snprintf(key, sizeof(key), "%d", (int)pid);
	snprintf(path, sizeof(path), "%s/cgroup", key);
	if ((n = kp_read_proc(ev->procfd, path, buf, sizeof(buf))) <= 0)
		return NULL;
	if (v1_at_root(buf) && exiting(ev, key))
		return NULL;
	strip_deleted(buf);
	return kp_strdup(buf);
}

/* Per-CPU numbering: a gap is events lost. */
static void
count_seq(struct kp_events *ev, uint32_t cpu, uint32_t seq)
{
	size_t n;

	if (cpu >= ev->ncpus) {
		n = cpu + 64;
		ev->seq = kp_reallocarray(ev->seq, n, sizeof(*ev->seq));
		ev->seen = kp_reallocarray(ev->seen, n, 1);
		memset(ev->seen + ev->ncpus, 0, n - ev->ncpus);
		ev->ncpus = n;
	}
	if (ev->seen[cpu] && seq != ev->seq[cpu])
		ev->lost += (uint32_t)(seq - ev->seq[cpu]);
	ev->seen[cpu] = 1;
	ev->seq[cpu] = seq + 1;
}

static void
on_fork(struct kp_events *ev, const struct proc_event *pe)
{
	struct entry *parent;

	if (pe->event_data.fork.child_pid != pe->event_data.fork.child_tgid)
		return;		/* a thread */
	parent = entry_get(ev, pe->event_data.fork.parent_tgid);
	entry_put(ev, pe->event_data.fork.child_tgid,
	    parent != NULL && parent->cgroup != NULL && !parent->ended ?
	    kp_strdup(parent->cgroup) : NULL);
}

static void
on_exec(struct kp_events *ev, const struct proc_event *pe)
{
	pid_t pid = pe->event_data.exec.process_tgid;

	entry_put(ev, pid, read_cgroup(ev, pid));
	if (pid == ev->proof_pid)
		ev->proven = 1;
}

static void
on_exit_event(struct kp_events *ev, const struct proc_event *pe)
{
	struct entry *e;

	if (pe->event_data.exit.process_pid != pe->event_data.exit.process_tgid)
		return;
	if ((e = entry_get(ev, pe->event_data.exit.process_tgid)) != NULL) {
		e->ended = ev->cuts + 1;
		/* 0 from a kernel whose event is too short to carry it. */
		e->ppid = pe->event_data.exit.parent_tgid;
		if (e->cgroup != NULL && ev->on_exit != NULL)
			ev->on_exit(e->cgroup, ev->on_exit_arg);
	}
}

/*
 * One message's payload of len bytes: a cn_msg and its event, copied out,
 * since the event is misaligned after the cn_msg's 20 bytes.  A kernel's
 * event may be shorter than this build's (its union has grown); the
 * members read are at its start.
 */
static void
take_event(struct kp_events *ev, const char *payload, size_t len)
{
	struct proc_event event, *pe = &event;
	struct cn_msg cn;
	size_t n;

	if (len < sizeof(cn))
		return;
	memcpy(&cn, payload, sizeof(cn));
	n = cn.len < sizeof(event) ? cn.len : sizeof(event);
	if (cn.id.idx != CN_IDX_PROC || len - sizeof(cn) < cn.len ||
	    n < offsetof(struct proc_event, event_data) + 16)
		return;
	memset(&event, 0, sizeof(event));
	memcpy(&event, payload + sizeof(cn), n);
	count_seq(ev, pe->cpu, cn.seq);
	if (pe->what == PROC_EVENT_NONE && cn.ack == ev->cookie + 1) {
		ev->acked = 1;
		ev->ack_err = (int)pe->event_data.ack.err;
	} else if (pe->what == PROC_EVENT_FORK)
		on_fork(ev, pe);
	else if (pe->what == PROC_EVENT_EXEC)
		on_exec(ev, pe);
	else if (pe->what == PROC_EVENT_EXIT)
		on_exit_event(ev, pe);
}

/* One datagram of len bytes: its netlink messages, each an event. */
void
kp_events_parse(struct kp_events *ev, const void *buf, size_t len)
{
	const char *p = buf, *end = p + len;
	struct nlmsghdr h;
	size_t step;

	while ((size_t)(end - p) >= NLMSG_HDRLEN) {
		memcpy(&h, p, sizeof(h));
		if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > (size_t)(end - p))
			return;
		take_event(ev, p + NLMSG_HDRLEN, h.nlmsg_len - NLMSG_HDRLEN);
		step = NLMSG_ALIGN(h.nlmsg_len);
		p += step < (size_t)(end - p) ? step : (size_t)(end - p);
	}
}

#define BATCH 64		/* datagrams taken by one system call */
#define DATAGRAM 256		/* one event's: 76 bytes on Linux 6 */

/*
 * Every event queued, without blocking: 0, or -1 (errno).  Each event is a
 * datagram of its own, so they are taken many at a time (recvmmsg).
 */
int
kp_events_drain(struct kp_events *ev)
{
	static char buf[BATCH][DATAGRAM]
	    __attribute__((aligned(NLMSG_ALIGNTO)));
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	int i, n;

	if (ev == NULL)
		return 0;
	memset(msgs, 0, sizeof(msgs));
	for (i = 0; i < BATCH; i++) {
		iov[i].iov_base = buf[i];
		iov[i].iov_len = DATAGRAM;
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	for (;;) {
		if ((n = recvmmsg(ev->fd, msgs, BATCH, MSG_DONTWAIT, NULL)) > 0)
			for (i = 0; i < n; i++)
				kp_events_parse(ev, buf[i], msgs[i].msg_len);
		else if (n < 0 && errno == ENOBUFS)
			continue;	/* the gaps count what it lost */
		else if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		else
			return -1;
		if (n < BATCH)
			return 0;
	}
}

static int
subscribe(struct kp_events *ev)
{
	enum proc_cn_mcast_op op = PROC_CN_MCAST_LISTEN;	/* every event: */
	struct nlmsghdr h = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct cn_msg) +
	    sizeof(op)), .nlmsg_type = NLMSG_DONE };	/* a gap is a loss */
	struct cn_msg cn = { .id = { CN_IDX_PROC, CN_VAL_PROC },
	    .len = sizeof(op) };
	char req[NLMSG_LENGTH(sizeof(struct cn_msg) + sizeof(op))];

	cn.ack = ev->cookie = (uint32_t)getpid();	/* comes back + 1 */
	memcpy(req, &h, sizeof(h));
	memcpy(req + NLMSG_HDRLEN, &cn, sizeof(cn));
	memcpy(req + NLMSG_HDRLEN + sizeof(cn), &op, sizeof(op));
	return send(ev->fd, req, sizeof(req), 0) < 0 ? -1 : 0;
}

/* Waits until the ack and the proof child's exec are heard, or PROOF_MS. */
static void
await_proof(struct kp_events *ev)
{
	struct pollfd pfd = { .fd = ev->fd, .events = POLLIN };
	int64_t end_us = kp_mono_us() + PROOF_MS * 1000, left_us;

	while (!(ev->acked && ev->proven) &&
	    (left_us = end_us - kp_mono_us()) > 0) {
		if (poll(&pfd, 1, (int)((left_us + 999) / 1000)) < 0 &&
		    errno != EINTR)
			return;
		if (kp_events_drain(ev) < 0)
			return;
	}
}

/* A child that execs at once: its exec proves the events are heard. */
static int
prove(struct kp_events *ev, char *why, size_t len)
{
	if ((ev->proof_pid = fork()) < 0) {
		snprintf(why, len, "fork: %s", strerror(errno));
		return -1;
	}
	if (ev->proof_pid == 0) {
		execl("/bin/sh", "sh", "-c", ":", (char *)NULL);
		_exit(127);
	}
	await_proof(ev);
	while (waitpid(ev->proof_pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (!ev->acked)
		snprintf(why, len, "no acknowledgement of the subscription");
	else if (ev->ack_err != 0)
		snprintf(why, len, "subscription refused: %s",
		    strerror(ev->ack_err));
	else if (!ev->proven)
		snprintf(why, len, "no event of a child's exec (another PID "
		    "or user namespace?)");
	return ev->acked && ev->ack_err == 0 && ev->proven ? 0 : -1;
}

static struct kp_events *
events_new(const char *procdir)
{
	struct kp_events *ev = kp_calloc(1, sizeof(*ev));

	ev->fd = -1;
	ev->procfd = open(procdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ev->pids = kp_map_new();
	return ev;
}

/* A parser alone, on datagrams given (tests), reading procdir's files. */
struct kp_events *
kp_events_parser(const char *procdir)
{
	return events_new(procdir);
}

/*
 * Subscribes and proves it: the listener, or NULL with the reason in why.
 * procdir: the live /proc of the kernel's PID namespace.
 */
struct kp_events *
kp_events_open(const char *procdir, char *why, size_t whylen)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK,
	    .nl_groups = CN_IDX_PROC };
	struct kp_events *ev = events_new(procdir);

	ev->fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC,
	    NETLINK_CONNECTOR);
	/*
	 * Each event is a message of its own, some 800 bytes of buffer: the
	 * default buffer, some 270 of them, overflows in a second that the
	 * reader is not scheduled on a host starting containers.
	 */
	if (ev->fd >= 0)
		kp_set_rcvbuf(ev->fd, KP_EVENTS_RCVBUF);
	if (ev->fd < 0 || bind(ev->fd, (struct sockaddr *)&sa,
	    sizeof(sa)) < 0 || subscribe(ev) < 0) {
		snprintf(why, whylen, "%s", strerror(errno));
		kp_events_close(ev);
		return NULL;
	}
	if (prove(ev, why, whylen) < 0) {
		kp_events_close(ev);
		return NULL;
	}
	return ev;
}

int
kp_events_fd(const struct kp_events *ev)
{
	return ev != NULL ? ev->fd : -1;
}

/* The cgroup file's text pid had at its exec or fork; NULL: unknown. */
const char *
kp_events_cgroup(const struct kp_events *ev, pid_t pid)
{
	const struct entry *e = ev != NULL ? entry_get(ev, pid) : NULL;

	return e != NULL ? e->cgroup : NULL;
}

static int
long_ended(void *val, void *arg)
{
	const struct entry *e = val;
	const unsigned *cuts = arg;

	return e->ended != 0 && e->ended < *cuts;
}

/* A scan begins: entries ended two scans ago are let go. */
void
kp_events_cut(struct kp_events *ev)
{
	if (ev == NULL)
		return;
	ev->cuts++;
	kp_map_sweep(ev->pids, long_ended, &ev->cuts, entry_free);
}

struct ended_arg {
	unsigned cut;
	kp_ended_fn *fn;
	void *arg;
};

static void
visit_ended(const char *key, void *val, void *arg)
{
	const struct entry *e = val;
	const struct ended_arg *a = arg;

	if (e->ended == a->cut)
		a->fn((pid_t)strtol(key, NULL, 10), e->ppid, e->cgroup, a->arg);
}

/*
 * Each process that ended between the last two cuts, to fn: its pid, its
 * parent at its end (0: unknown) and its cgroup file's text at its exec
 * (NULL: unknown).
 */
void
kp_events_each_ended(struct kp_events *ev, kp_ended_fn *fn, void *arg)
{
	struct ended_arg a = { 0, fn, arg };

	if (ev == NULL)
		return;
	a.cut = ev->cuts;
	kp_map_each(ev->pids, visit_ended, &a);
}

/*
 * fn is told, at each process's exit event, the cgroup it ran in: a job's
 * cgroup may be removed once its last process is reaped, before any scan.
 */
void
kp_events_on_exit(struct kp_events *ev, kp_exit_cgroup_fn *fn, void *arg)
{
	if (ev == NULL)
		return;
	ev->on_exit = fn;
	ev->on_exit_arg = arg;
}

uint64_t
kp_events_lost(const struct kp_events *ev)
{
	return ev != NULL ? ev->lost : 0;
}

void
kp_events_close(struct kp_events *ev)
{
	if (ev == NULL)
		return;
	if (ev->fd >= 0)
		close(ev->fd);
	if (ev->procfd >= 0)
		close(ev->procfd);
	kp_map_free(ev->pids, entry_free);
	free(ev->seq);
	free(ev->seen);
	free(ev);
}
