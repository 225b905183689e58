/*
 * -f powercap --dir DIR: each VM's share of the host's energy, handed to
 * its guest as a powercap tree that the guest mounts and reads as if it
 * were its own RAPL (kp-fmt(1), Powercap trees).  kp-fmt keeps no state:
 * each interval it reads each counter back from DIR and adds the VM's
 * energy to it, so that a counter goes back only by its wrap, as a
 * kernel's does, whatever runs of kp-fmt wrote it before.
 */
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fmt.h"

/*
 * Where a package counter of a Xeon wraps (its max_energy_range_uj), so
 * that a guest's reader meets the wrap it meets on a host.
 */
#define RANGE_UJ INT64_C(262143328850)
#define TEMP_TAG "kp-fmt."
#define RAPL_DIR "devices/virtual/powercap/intel-rapl"

/* A zone of kp-records(5) and the powercap zone that gives it to a guest. */
static const struct pc_zone {
	const char *zone;	/* in the host's records */
	const char *key;	/* the zone's entry in class/powercap */
	const char *under;	/* its directory below RAPL_DIR */
	const char *name;	/* its name file, which the guest reads */
} pc_zones[] = {
	{ "package", "intel-rapl:0", "intel-rapl:0", "package-0" },
	{ "dram", "intel-rapl:0:0", "intel-rapl:0/intel-rapl:0:0", "dram" },
	{ "platform", "intel-rapl:1", "intel-rapl:1", "platform" },
};
#define NZONES NELEM(pc_zones)

/*
 * One VM: its energy of the interval, by pc_zones, and its tree as last
 * written, read back from DIR when the VM comes into the stream, so that
 * an interval reads nothing back (bench-powercap-tree).
 */
struct pc_vm {
	int64_t energy_uj[NZONES];	/* this interval's */
	int64_t counter_uj[NZONES];	/* as written, where known */
	unsigned known;			/* the zones of counter_uj, bit z */
	char host[512];			/* kp-host as written, or "" */
	time_t host_at;			/* when */
	unsigned seen;			/* the last interval it was in */
};

struct powercap {
	const char *dir;
	char node[256];		/* the header's node_name, or --node-name */
	struct kp_map *vms;	/* vm_id -> struct pc_vm: last interval's */
	unsigned tick;		/* intervals ended */
	int failed;		/* a tree could not be written: exit 1 */
	time_t now;		/* of the interval's end */
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
		vm = kp_calloc(1, sizeof(*vm));
		kp_map_put(pc->vms, id, vm);
	}
	if (vm->seen != pc->tick) {
		memset(vm->energy_uj, 0, sizeof(vm->energy_uj));
		vm->seen = pc->tick;
	}
	vm->energy_uj[z] += uj;
}

/* mkdir -p of path, below DIR, which is there. */
static int
make_dirs(char *path)
{
	char *p;

	for (p = path + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	return mkdir(path, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

static int
put_file(struct powercap *pc, const char *path, const char *text)
{
	if (kp_replaced_write(path, TEMP_TAG, text, strlen(text), 0444) == 0)
		return 0;
	warn("%s", path);
	pc->failed = 1;
	return -1;
}

/*
 * A zone's fixed files and its class/powercap link, the first time: the
 * kernel's layout, so that a guest's reader takes it unchanged.
 */
static int
zone_setup(struct powercap *pc, const char *vmdir, const struct pc_zone *z)
{
	char path[PATH_MAX], link[PATH_MAX], text[128];

	pathf(path, sizeof(path), "%s/%s/%s", vmdir, RAPL_DIR, z->under);
	if (access(path, F_OK) == 0)
		return 0;
	pathf(link, sizeof(link), "%s/class/powercap", vmdir);
	if (make_dirs(path) < 0 || make_dirs(link) < 0) {
		warn("%s", path);
		pc->failed = 1;
		return -1;
	}
	pathf(link, sizeof(link), "%s/class/powercap/%s", vmdir, z->key);
	pathf(text, sizeof(text), "../../%s/%s", RAPL_DIR, z->under);
	if (symlink(text, link) < 0 && errno != EEXIST) {
		warn("%s", link);
		pc->failed = 1;
		return -1;
	}
	snprintf(text, sizeof(text), "%s\n", z->name);
	pathf(link, sizeof(link), "%s/name", path);
	if (put_file(pc, link, text) < 0)
		return -1;
	snprintf(text, sizeof(text), "%lld\n", (long long)RANGE_UJ);
	pathf(link, sizeof(link), "%s/max_energy_range_uj", path);
	if (put_file(pc, link, text) < 0)
		return -1;
	pathf(link, sizeof(link), "%s/enabled", path);
	return put_file(pc, link, "0\n");
}

/* The counter as DIR has it; 0 where there is none yet. */
static int64_t
counter_read(const char *path)
{
	char buf[32], *end;
	long long v;

	if (kp_read_file(AT_FDCWD, path, buf, sizeof(buf)) <= 0)
		return 0;
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno != 0 || end == buf || (*end != '\n' && *end != '\0') ||
	    v < 0 || v >= RANGE_UJ) {
		warnx("%s: not a counter below %lld: counted from 0", path,
		    (long long)RANGE_UJ);
		return 0;
	}
	return v;
}

/*
 * Zone z's counter moved on by the VM's energy, through its wrap: read
 * back, and the tree made, the first time in the run.
 */
static void
zone_add(struct powercap *pc, const char *vmdir, struct pc_vm *vm, size_t z)
{
	const struct pc_zone *pz = &pc_zones[z];
	char path[PATH_MAX], text[32];

	pathf(path, sizeof(path), "%s/%s/%s/energy_uj", vmdir, RAPL_DIR,
	    pz->under);
	if (!(vm->known & 1U << z)) {
		if (zone_setup(pc, vmdir, pz) < 0)
			return;
		vm->counter_uj[z] = counter_read(path);
		vm->known |= 1U << z;
	}
	vm->counter_uj[z] = (vm->counter_uj[z] + vm->energy_uj[z] % RANGE_UJ) %
	    RANGE_UJ;
	snprintf(text, sizeof(text), "%lld\n", (long long)vm->counter_uj[z]);
	put_file(pc, path, text);
}

/*
 * kp-host, written again only when it would say something else or was
 * written a tenth of the keep ago: a file created the fewer each interval
 * (bench-powercap-tree), while its time of change still tells, to a tenth,
 * how long ago the VM was last in the stream.
 */
static void
kp_host_put(struct powercap *pc, const char *vmdir, struct pc_vm *vm,
    const char *text)
{
	char path[PATH_MAX];

	if (strcmp(vm->host, text) == 0 &&
	    (int64_t)(pc->now - vm->host_at) < KP_VM_KEEP_US / 10000000)
		return;
	pathf(path, sizeof(path), "%s/kp-host", vmdir);
	if (access(vmdir, F_OK) == 0 && put_file(pc, path, text) == 0) {
		snprintf(vm->host, sizeof(vm->host), "%s", text);
		vm->host_at = pc->now;
	}
}

struct pc_write {
	struct powercap *pc;
	const struct block *b;
	int64_t dt_us;
};

/*
 * A VM's tree after the interval: each zone the host measures (its node
 * record says so), then kp-host, which says whose measurement it is.
 */
static void
vm_write(const char *id, void *val, void *arg)
{
	struct pc_write *w = arg;
	struct pc_vm *vm = val;
	char vmdir[PATH_MAX], text[512];
	size_t z;

	if (vm->seen != w->pc->tick)
		return;
	pathf(vmdir, sizeof(vmdir), "%s/%s", w->pc->dir, id);
	for (z = 0; z < NZONES; z++)
		if (vm->energy_uj[z] > 0 || block_has_node(w->b,
		    pc_zones[z].zone))
			zone_add(w->pc, vmdir, vm, z);
	snprintf(text, sizeof(text), "node %s\nvm_id %s\ninterval_us %lld\n",
	    w->pc->node[0] ? w->pc->node : "-", id, (long long)w->dt_us);
	kp_host_put(w->pc, vmdir, vm, text);
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
 * their kp-host's time of change: kp-fmt keeps nothing of its own.
 */
static void
sweep_gone(struct powercap *pc)
{
	char path[PATH_MAX];
	const struct pc_vm *vm;
	struct dirent *de;
	struct stat sb;
	DIR *d;

	if ((d = opendir(pc->dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (!vm_dir_ok(de->d_name) || ((vm = kp_map_get(pc->vms,
		    de->d_name)) != NULL && vm->seen == pc->tick))
			continue;
		pathf(path, sizeof(path), "%s/%s/kp-host", pc->dir,
		    de->d_name);
		if (lstat(path, &sb) < 0 || (int64_t)(pc->now - sb.st_mtime) <=
		    KP_VM_KEEP_US / 1000000)
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
	kp_map_sweep(pc->vms, not_seen, &pc->tick, free);
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
	struct stat sb;

	if (stat(ctx->dir, &sb) < 0 || !S_ISDIR(sb.st_mode))
		err(KP_EXIT_FAILURE, "--dir '%s'", ctx->dir);
	pc = kp_calloc(1, sizeof(*pc));
	pc->dir = ctx->dir;
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
	kp_map_free(pc->vms, free);
	free(pc);
}

const struct format fmt_powercap = {
	"powercap", pc_begin, pc_block, pc_header, pc_end, NULL
};
