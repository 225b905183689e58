/*
 * -f powercap --dir DIR: each VM's share of the host's energy, handed to
 * its guest as a powercap tree that the guest mounts and reads as if it
 * were its own RAPL (kp-fmt(1), Powercap trees).  kp-fmt keeps no state:
 * it reads a VM's counters back from DIR when the VM comes into the stream
 * and adds the VM's energy to them each interval, so that a counter goes
 * back only by its wrap, as a kernel's does, whatever runs of kp-fmt wrote
 * it before.  Each counter that moves is a file created and renamed over
 * the old, the floor of its cost (bench-powercap-tree): nothing else is
 * written that is there already, and no path is walked again.
 */
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fmt.h"

/*
 * Where a package counter of a Xeon wraps (its max_energy_range_uj), so
 * that a guest's reader meets the wrap it meets on a host.
 */
#define RANGE_UJ INT64_C(262143328850)
/* The one temporary of each directory: kp-fmt is its only writer. */
#define TEMP_NAME ".kp-fmt.tmp"
#define RAPL_DIR "devices/virtual/powercap/intel-rapl/"
#define CLASS_DIR "class/powercap"
/* Descriptors left to kp-fmt's own use beside those of the trees. */
#define FD_RESERVE 16
/* How often the trees of VMs gone are looked for, in seconds. */
#define SWEEP_EVERY_S 60

/* A zone of kp-records(5) and the powercap zone that gives it to a guest. */
static const struct pc_zone {
	const char *zone;	/* in the host's records */
	const char *key;	/* the zone's entry in class/powercap */
	const char *dir;	/* its directory, below the VM's */
	const char *link;	/* the entry's target */
	const char *name;	/* its name file, which the guest reads */
} pc_zones[] = {
	{ "package", "intel-rapl:0", RAPL_DIR "intel-rapl:0",
	    "../../" RAPL_DIR "intel-rapl:0", "package-0\n" },
	{ "dram", "intel-rapl:0:0", RAPL_DIR "intel-rapl:0/intel-rapl:0:0",
	    "../../" RAPL_DIR "intel-rapl:0/intel-rapl:0:0", "dram\n" },
	{ "platform", "intel-rapl:1", RAPL_DIR "intel-rapl:1",
	    "../../" RAPL_DIR "intel-rapl:1", "platform\n" },
};
#define NZONES NELEM(pc_zones)

/*
 * One VM: its energy of the interval, by pc_zones, and its tree as last
 * written, read back from DIR when the VM comes into the stream, so that
 * an interval reads nothing back; its directories, kept open while the
 * process has descriptors to spare, so that an interval walks no path
 * (bench-powercap-tree).
 */
struct pc_vm {
	int64_t energy_uj[NZONES];	/* this interval's */
	int64_t counter_uj[NZONES];	/* as written, where known */
	unsigned known;			/* the zones of counter_uj, bit z */
	unsigned written;		/* those whose energy_uj says so */
	int vm_fd;			/* DIR/<vm_id>; -1: not open */
	int zone_fd[NZONES];		/* each zone's directory; -1: not */
	char host[512];			/* kp-host as written, or "" */
	time_t host_at;			/* when */
	unsigned seen;			/* the last interval it was in */
};

struct powercap {
	const char *dir;
	int dir_fd;
	int keep_below;		/* the descriptors kept: those below it */
	char node[256];		/* the header's node_name, or --node-name */
	struct kp_map *vms;	/* vm_id -> struct pc_vm: last interval's */
	unsigned tick;		/* intervals ended */
	int failed;		/* a tree could not be written: exit 1 */
	time_t now;		/* of the interval's end */
	time_t swept;		/* when gone VMs were last looked for */
};

/*
 * A path into buf; "" if it does not fit, which the call that takes it
 * then reports as a file that is not there.
 */
static void __attribute__((format(printf, 3, 4)))
pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (kp_vpathf(buf, len, fmt, ap) < 0)
		buf[0] = '\0';
	va_end(ap);
}

/* Whether a vm_id can name a directory of DIR: no '/', no leading '.'. */
static int
vm_dir_ok(const char *id)
{
	return *id != '\0' && *id != '.' && strlen(id) < 200 &&
	    strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789-_.:") == strlen(id);
}

static int
zone_index(const char *zone)
{
	size_t z;

	for (z = 0; z < NZONES; z++)
		if (strcmp(pc_zones[z].zone, zone) == 0)
			return (int)z;
	return -1;
}

/* A VM come into the stream: nothing known of its tree, nothing open. */
static struct pc_vm *
vm_new(void)
{
	struct pc_vm *vm = kp_calloc(1, sizeof(*vm));
	size_t z;

	vm->vm_fd = -1;
	for (z = 0; z < NZONES; z++)
		vm->zone_fd[z] = -1;
	return vm;
}

/* A vm record's energy, kept by its vm_id and zone until the interval ends. */
static void
pc_take(struct fmt *ctx, struct powercap *pc, const struct kp_record *rec)
{
	const char *id = kp_rec_str(rec, "vm_id"), *zone;
	struct pc_vm *vm;
	int64_t uj;
	int z;

	if (!rec_is(rec, "vm") || id == NULL ||
	    (zone = kp_rec_str(rec, "zone")) == NULL ||
	    (z = zone_index(zone)) < 0 || !kp_rec_int(rec, "energy_uj", &uj))
		return;
	if (!vm_dir_ok(id)) {
		kp_warn_line(ctx->input_name, rec->lineno, "vm_id '%s' cannot "
		    "name a directory: no powercap tree for it", id);
		ctx->data_errors++;
		return;
	}
	if ((vm = kp_map_get(pc->vms, id)) == NULL) {
		vm = vm_new();
		kp_map_put(pc->vms, id, vm);
	}
	if (vm->seen != pc->tick) {
		memset(vm->energy_uj, 0, sizeof(vm->energy_uj));
		vm->seen = pc->tick;
	}
	vm->energy_uj[z] += uj;
}

/*
 * File name of directory where ("" for either: the directory, the VM's)
 * of VM id's tree not kept: reported, and the run's status is 1.
 */
static void
pc_fail(struct powercap *pc, const char *id, const char *where,
    const char *name)
{
	warn("%s/%s%s%s%s%s", pc->dir, id, *where ? "/" : "", where,
	    *name ? "/" : "", name);
	pc->failed = 1;
}

/* mkdir -p of path below directory at, then opened; -1 with errno. */
static int
open_dirs(int at, const char *path)
{
	char buf[PATH_MAX], *p;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = buf; (p = strchr(p, '/')) != NULL; *p++ = '/') {
		*p = '\0';
		if (mkdirat(at, buf, 0755) < 0 && errno != EEXIST)
			return -1;
	}
	if (mkdirat(at, buf, 0755) < 0 && errno != EEXIST)
		return -1;
	return openat(at, buf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
}

/* name in directory fd replaced by text, whole; -1, reported. */
static int
file_put(struct powercap *pc, const char *id, const char *where, int fd,
    const char *name, const char *text)
{
	if (kp_replaced_writeat(fd, name, TEMP_NAME, text, strlen(text),
	    0444) == 0)
		return 0;
	pc_fail(pc, id, where, name);
	return -1;
}

/* The same, unless it holds text already: a file that never changes. */
static int
file_ensure(struct powercap *pc, const char *id, const char *where, int fd,
    const char *name, const char *text)
{
	char buf[64];

	if (kp_read_file(fd, name, buf, sizeof(buf)) >= 0 &&
	    strcmp(buf, text) == 0)
		return 0;
	return file_put(pc, id, where, fd, name, text);
}

/* name in directory fd made a link to target, unless it is one; -1. */
static int
link_ensure(int fd, const char *name, const char *target)
{
	char buf[PATH_MAX];
	ssize_t n = readlinkat(fd, name, buf, sizeof(buf) - 1);
	int saved;

	if (n >= 0 && (buf[n] = '\0', strcmp(buf, target) == 0))
		return 0;
	unlinkat(fd, TEMP_NAME, 0);
	if (symlinkat(target, fd, TEMP_NAME) < 0)
		return -1;
	if (renameat(fd, TEMP_NAME, fd, name) < 0) {
		saved = errno;
		unlinkat(fd, TEMP_NAME, 0);
		errno = saved;
		return -1;
	}
	return 0;
}

/*
 * Zone z's counter as the tree has it: 0 where there is none yet, and
 * where it is not a counter below the range, which is reported.
 */
static void
counter_back(struct powercap *pc, const char *id, struct pc_vm *vm,
    size_t z)
{
	char buf[32], *end;
	long long v;

	vm->known |= 1U << z;
	vm->counter_uj[z] = 0;
	if (kp_read_file(vm->zone_fd[z], "energy_uj", buf, sizeof(buf)) <= 0)
		return;
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno != 0 || end == buf || (*end != '\n' && *end != '\0') ||
	    v < 0 || v >= RANGE_UJ) {
		warnx("%s/%s/%s/energy_uj: not a counter below %lld: counted "
		    "from 0", pc->dir, id, pc_zones[z].dir,
		    (long long)RANGE_UJ);
		return;
	}
	vm->counter_uj[z] = v;
	vm->written |= 1U << z;
}

/*
 * Zone z's directory as the kernel lays it out, each part that is missing
 * or says something else made again, and its counter read back: once a VM
 * comes into the stream.  0, or -1 reported.
 */
static int
zone_setup(struct powercap *pc, const char *id, struct pc_vm *vm, size_t z)
{
	const struct pc_zone *pz = &pc_zones[z];
	char range[32];
	int fd, cls, linked;

	if ((fd = open_dirs(vm->vm_fd, pz->dir)) < 0) {
		pc_fail(pc, id, pz->dir, "");
		return -1;
	}
	if (!(linked = (cls = open_dirs(vm->vm_fd, CLASS_DIR)) >= 0 &&
	    link_ensure(cls, pz->key, pz->link) == 0))
		pc_fail(pc, id, CLASS_DIR, cls < 0 ? "" : pz->key);
	if (cls >= 0)
		close(cls);
	snprintf(range, sizeof(range), "%lld\n", (long long)RANGE_UJ);
	if (!linked ||
	    file_ensure(pc, id, pz->dir, fd, "name", pz->name) < 0 ||
	    file_ensure(pc, id, pz->dir, fd, "max_energy_range_uj", range) < 0 ||
	    file_ensure(pc, id, pz->dir, fd, "enabled", "0\n") < 0) {
		close(fd);
		return -1;
	}
	vm->zone_fd[z] = fd;
	counter_back(pc, id, vm, z);
	return 0;
}

/* Zone z's directory open: made the first time in the run; -1 reported. */
static int
zone_open(struct powercap *pc, const char *id, struct pc_vm *vm, size_t z)
{
	if (vm->zone_fd[z] >= 0)
		return 0;
	if (!(vm->known & 1U << z))
		return zone_setup(pc, id, vm, z);
	vm->zone_fd[z] = openat(vm->vm_fd, pc_zones[z].dir, O_RDONLY |
	    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (vm->zone_fd[z] < 0) {
		pc_fail(pc, id, pc_zones[z].dir, "");
		return -1;
	}
	return 0;
}

/*
 * Zone z's counter moved on by the VM's energy, through its wrap, and
 * replaced: not where it stays, as an idle VM's does.
 */
static void
zone_add(struct powercap *pc, const char *id, struct pc_vm *vm, size_t z)
{
	int64_t next_uj;
	char text[32];

	if (zone_open(pc, id, vm, z) < 0)
		return;
	next_uj = (vm->counter_uj[z] + vm->energy_uj[z] % RANGE_UJ) % RANGE_UJ;
	if (next_uj == vm->counter_uj[z] && (vm->written & 1U << z))
		return;
	snprintf(text, sizeof(text), "%lld\n", (long long)next_uj);
	if (file_put(pc, id, pc_zones[z].dir, vm->zone_fd[z], "energy_uj",
	    text) == 0) {
		vm->counter_uj[z] = next_uj;
		vm->written |= 1U << z;
	}
}

/*
 * kp-host, written when the VM comes into the stream, then again only
 * when it would say something else or was written a tenth of the keep
 * ago: its time of change tells, to a tenth, how long ago the VM was last
 * in the stream.
 */
static void
kp_host_put(struct powercap *pc, const char *id, struct pc_vm *vm,
    const char *text)
{
	if (strcmp(vm->host, text) == 0 &&
	    (int64_t)(pc->now - vm->host_at) < KP_VM_KEEP_US / 10000000)
		return;
	if (file_put(pc, id, "", vm->vm_fd, "kp-host", text) == 0) {
		snprintf(vm->host, sizeof(vm->host), "%s", text);
		vm->host_at = pc->now;
	}
}

/* The VM's directory open, made if missing; -1 reported. */
static int
vm_open(struct powercap *pc, const char *id, struct pc_vm *vm)
{
	if (vm->vm_fd >= 0)
		return 0;
	if ((mkdirat(pc->dir_fd, id, 0755) < 0 && errno != EEXIST) ||
	    (vm->vm_fd = openat(pc->dir_fd, id, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) < 0) {
		pc_fail(pc, id, "", "");
		return -1;
	}
	return 0;
}

/* The VM's descriptors from below on closed: all of them with 0. */
static void
vm_close(struct pc_vm *vm, int below)
{
	size_t z;

	for (z = 0; z < NZONES; z++)
		if (vm->zone_fd[z] >= below) {
			close(vm->zone_fd[z]);
			vm->zone_fd[z] = -1;
		}
	if (vm->vm_fd >= below) {
		close(vm->vm_fd);
		vm->vm_fd = -1;
	}
}

static void
vm_free(void *val)
{
	vm_close(val, 0);
	free(val);
}

struct pc_write {
	struct powercap *pc;
	const struct block *b;
	int64_t dt_us;
};

/*
 * A VM's tree after the interval: each zone the host measures (its node
 * record says so), then kp-host, which says whose measurement it is.  Its
 * descriptors stay open but those past what the process can spare.
 */
static void
vm_write(const char *id, void *val, void *arg)
{
	struct pc_write *w = arg;
	struct pc_vm *vm = val;
	char text[512];
	size_t z;

	if (vm->seen != w->pc->tick || vm_open(w->pc, id, vm) < 0)
		return;
	for (z = 0; z < NZONES; z++)
		if (vm->energy_uj[z] > 0 || block_has_node(w->b,
		    pc_zones[z].zone))
			zone_add(w->pc, id, vm, z);
	snprintf(text, sizeof(text), "node %s\nvm_id %s\ninterval_us %lld\n",
	    w->pc->node[0] ? w->pc->node : "-", id, (long long)w->dt_us);
	kp_host_put(w->pc, id, vm, text);
	vm_close(vm, w->pc->keep_below);
}

static int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/*
 * The trees of VMs gone from the stream longer than KP_VM_KEEP_US, by
 * their kp-host's time of change: kp-fmt keeps nothing of its own.  Once
 * a minute, since the keep is a day.
 */
static void
sweep_gone(struct powercap *pc)
{
	char path[PATH_MAX];
	const struct pc_vm *vm;
	struct dirent *de;
	struct stat sb;
	DIR *d;

	if (pc->swept != 0 && pc->now - pc->swept < SWEEP_EVERY_S)
		return;
	pc->swept = pc->now;
	if ((d = opendir(pc->dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (!vm_dir_ok(de->d_name) || ((vm = kp_map_get(pc->vms,
		    de->d_name)) != NULL && vm->seen == pc->tick))
			continue;
		pathf(path, sizeof(path), "%s/kp-host", de->d_name);
		if (fstatat(pc->dir_fd, path, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
		    (int64_t)(pc->now - sb.st_mtime) <= KP_VM_KEEP_US / 1000000)
			continue;
		pathf(path, sizeof(path), "%s/%s", pc->dir, de->d_name);
		if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0)
			warn("%s", path);
	}
	closedir(d);
}

static int
not_seen(void *val, void *tick)
{
	return ((struct pc_vm *)val)->seen != *(unsigned *)tick;
}

static void
pc_block(struct fmt *ctx, void *st, const struct block *b,
    const struct kp_record *interval)
{
	struct powercap *pc = st;
	struct pc_write w = { pc, b, 0 };
	size_t i;

	/* An interval cut short has no length: its energy is given to none. */
	pc->tick++;
	if (interval != NULL && kp_rec_int(interval, "dt_us", &w.dt_us)) {
		pc->now = time(NULL);
		for (i = 0; i < b->n; i++)
			pc_take(ctx, pc, b->recs[i]);
		kp_map_each_sorted(pc->vms, vm_write, &w);
		sweep_gone(pc);
	}
	/* One that comes back is read back again: it may have been swept. */
	kp_map_sweep(pc->vms, not_seen, &pc->tick, vm_free);
	if (pc->failed)
		exit(KP_EXIT_FAILURE);
}

static void
pc_header(struct fmt *ctx, void *st, const struct kp_record *rec)
{
	struct powercap *pc = st;
	const char *node = kp_rec_str(rec, "node_name");

	if (ctx->node_name == NULL && node != NULL)
		snprintf(pc->node, sizeof(pc->node), "%s", node);
}

static void *
pc_begin(struct fmt *ctx)
{
	struct powercap *pc;
	struct rlimit rl;
	int fd;

	if ((fd = open(ctx->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		err(KP_EXIT_FAILURE, "--dir '%s'", ctx->dir);
	/* A guest reads the trees whatever umask started kp-fmt. */
	umask(umask(0) & ~(mode_t)0555);
	pc = kp_calloc(1, sizeof(*pc));
	pc->dir = ctx->dir;
	pc->dir_fd = fd;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur > INT_MAX)
		rl.rlim_cur = INT_MAX;
	pc->keep_below = rl.rlim_cur > FD_RESERVE ?
	    (int)rl.rlim_cur - FD_RESERVE : 0;
	if (ctx->node_name != NULL)
		snprintf(pc->node, sizeof(pc->node), "%s", ctx->node_name);
	pc->vms = kp_map_new();
	return pc;
}

static void
pc_end(struct fmt *ctx, void *st, const struct block *rest)
{
	struct powercap *pc = st;

	(void)ctx;
	(void)rest;
	kp_map_free(pc->vms, vm_free);
	close(pc->dir_fd);
	free(pc);
}

const struct format fmt_powercap = {
	"powercap", pc_begin, pc_block, pc_header, pc_end, NULL
};
