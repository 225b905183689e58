/*
 * Who a process belongs to, read from its cgroup path alone: container
 * runtimes, Kubernetes and libvirt all encode their ids in the path, so no
 * API server is needed.  A hypervisor's command line adds the virtual
 * machines that no path names; names.c adds the names the node's own
 * files give.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "proc.h"

static void
copy(char *dst, size_t len, const char *src, size_t n)
{
	if (n >= len)
		n = len - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

#define COPY(field, src, n) copy(field, sizeof(field), src, n)

static int
has_prefix(const char *s, size_t n, const char *prefix)
{
	size_t plen = strlen(prefix);

	return n >= plen && strncmp(s, prefix, plen) == 0;
}

static int
has_suffix(const char *s, size_t n, const char *suffix)
{
	size_t slen = strlen(suffix);

	return n >= slen && strncmp(s + n - slen, suffix, slen) == 0;
}

static int
equals(const char *s, size_t n, const char *word)
{
	return n == strlen(word) && strncmp(s, word, n) == 0;
}

static int
all_of(const char *s, size_t n, int (*is)(int))
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!is((unsigned char)s[i]))
			return 0;
	return n > 0;
}

/*
 * A container id as a runtime writes it: 64 hex digits (docker,
 * containerd, cri-o, podman), or ECS on Fargate's <32 hex digits>-<digits>.
 */
static int
is_container_id(const char *s, size_t n)
{
	if (n == 64)
		return all_of(s, n, isxdigit);
	return n > 33 && n <= 32 + 1 + 20 && s[32] == '-' &&
	    all_of(s, 32, isxdigit) && all_of(s + 33, n - 33, isdigit);
}

/* Hex digits in groups of the given lengths joined by '-' (or '_'). */
static int
is_grouped_hex(const char *s, size_t n, const size_t *groups, size_t ngroups)
{
	size_t g;

	for (g = 0; g < ngroups; g++) {
		if (n < groups[g] || !all_of(s, groups[g], isxdigit))
			return 0;
		s += groups[g];
		n -= groups[g];
		if (g + 1 < ngroups) {
			if (n == 0 || (*s != '-' && *s != '_'))
				return 0;
			s++;
			n--;
		}
	}
	return n == 0;
}

/* Cloud Foundry's Garden names a container 8-4-4-4-4 hex digits. */
static int
is_garden_id(const char *s, size_t n)
{
	static const size_t groups[] = { 8, 4, 4, 4, 4 };

	return memchr(s, '_', n) == NULL && is_grouped_hex(s, n, groups, 5);
}

/*
 * The prefixes with which runtimes name a container's cgroup,
 * "<prefix><id>" or, with the systemd driver, "<prefix><id>.scope".
 * libpod-payload- is podman's --cgroups=split (quadlet), before libpod-.
 */
static const struct { const char *prefix, *runtime; } runtimes[] = {
	{ "docker-", "docker" },
	{ "cri-containerd-", "containerd" },
	{ "containerd-", "containerd" },
	{ "nerdctl-", "containerd" },
	{ "crio-", "cri-o" },
	{ "libpod-payload-", "podman" },
	{ "libpod-", "podman" },
};
#define NRUNTIMES (sizeof(runtimes) / sizeof(runtimes[0]))

/* The runtime a prefix names without its '-', as in <slice>:crio:<id>. */
static const char *
runtime_named(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < NRUNTIMES; i++)
		if (n + 1 == strlen(runtimes[i].prefix) &&
		    strncmp(s, runtimes[i].prefix, n) == 0)
			return runtimes[i].runtime;
	return NULL;
}

/* The runtime whose cgroupfs parent holds bare ids: /docker/<id>. */
static const char *
parent_runtime(const char *parent, size_t plen)
{
	if (equals(parent, plen, "docker"))
		return "docker";
	if (equals(parent, plen, "containerd"))
		return "containerd";
	return NULL;
}

static void
set_container(struct kp_identity *id, const char *cid, size_t n,
    const char *runtime)
{
	COPY(id->container_id, cid, n);
	if (runtime != NULL)
		COPY(id->runtime, runtime, strlen(runtime));
	else
		id->runtime[0] = '\0';
}

/*
 * <prefix><id>.scope (systemd) or <prefix><id> (cgroupfs) with a runtime's
 * prefix, or a bare <id> or <id>.scope (docker below a v1 named hierarchy),
 * whose parent may name the runtime: /docker/<id>, /containerd/<id>,
 * /garden/<garden id>.  Nothing else is a container:
 * not crio-conmon-<id> (the runtime's monitor, beside the container), nor
 * a mount unit named after one.  Below kubepods with cgroupfs a bare id
 * does not tell which runtime made it.
 */
static void
container_id(const char *comp, size_t n, const char *parent, size_t plen,
    struct kp_identity *id)
{
	size_t i, l, core = has_suffix(comp, n, ".scope") ? n - 6 : n;

	for (i = 0; i < NRUNTIMES; i++) {
		l = strlen(runtimes[i].prefix);
		if (core > l && strncmp(comp, runtimes[i].prefix, l) == 0) {
			if (is_container_id(comp + l, core - l))
				set_container(id, comp + l, core - l,
				    runtimes[i].runtime);
			return;
		}
	}
	if (is_container_id(comp, core))
		set_container(id, comp, core, parent_runtime(parent, plen));
	else if (core == n && equals(parent, plen, "garden") &&
	    is_garden_id(comp, n))
		set_container(id, comp, n, "garden");
}

/* A UUID as libvirt, QEMU and the kubelet write it: 8-4-4-4-12 hex digits. */
int
kp_uuid_ok(const char *s, size_t n)
{
	static const size_t groups[] = { 8, 4, 4, 4, 12 };

	return memchr(s, '_', n) == NULL && is_grouped_hex(s, n, groups, 5);
}

/*
 * A pod uid: a UUID, with '_' for '-' in systemd's slice names, or a
 * static pod's 32 hex digits (a hash of its manifest).
 */
static int
is_uid(const char *s, size_t n)
{
	static const size_t groups[] = { 8, 4, 4, 4, 12 };

	return is_grouped_hex(s, n, groups, 5) ||
	    (n == 32 && all_of(s, n, isxdigit));
}

static void
set_qos(struct kp_identity *id, const char *qos, size_t n)
{
	if (n == 0)
		COPY(id->pod_qos, "guaranteed", strlen("guaranteed"));
	else if (equals(qos, n, "burstable") || equals(qos, n, "besteffort"))
		COPY(id->pod_qos, qos, n);
}

/*
 * Where "kubepods" begins a systemd slice name or one of its parts:
 * kubepods-..., or kubelet-kubepods-... where the kubelet's cgroup root
 * is /kubelet (KinD).
 */
static const char *
kubepods_in(const char *comp, size_t n)
{
	const char *p = comp, *end = comp + n;

	while ((p = memmem(p, (size_t)(end - p), "kubepods", 8)) != NULL) {
		if (p == comp || p[-1] == '-')
			return p;
		p++;
	}
	return NULL;
}

/*
 * [kubelet-]kubepods-burstable-pod<uid>.slice (with _ for -), whose QoS
 * class is between "kubepods-" and "-pod" (none: guaranteed), or cgroupfs
 * /kubepods/<qos>/pod<uid> and /kubepods/pod<uid>: only below kubepods,
 * so podman's scopes are not taken for pods.
 */
static void
pod_id(const char *comp, size_t n, const char *parent, size_t plen,
    int in_kubepods, struct kp_identity *id)
{
	const char *p, *qos, *kube;
	size_t len, qlen, i;

	if (has_suffix(comp, n, ".slice") &&
	    (kube = kubepods_in(comp, n)) != NULL) {
		for (p = comp + n; p > kube && strncmp(p, "-pod", 4) != 0; p--)
			;
		if (p == kube)
			return;
		qos = kube + strlen("kubepods");
		qlen = (size_t)(p - qos);
		if (qlen > 0) {
			qos++;
			qlen--;
		}
		p += 4;
		len = (size_t)(comp + n - strlen(".slice") - p);
	} else if (in_kubepods && has_prefix(comp, n, "pod")) {
		p = comp + 3;
		len = n - 3;
		qos = parent;
		qlen = equals(parent, plen, "kubepods") ? 0 : plen;
	} else
		return;
	if (!is_uid(p, len))
		return;
	COPY(id->pod_id, p, len);
	for (i = 0; id->pod_id[i]; i++)
		if (id->pod_id[i] == '_')
			id->pod_id[i] = '-';
	set_qos(id, qos, qlen);
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* systemd's escaping (\xHH for a byte) undone: src[0..n) into out. */
static void
unescape(const char *src, size_t n, char *out, size_t size)
{
	const char *p = src, *end = src + n;
	size_t o = 0;
	int hi, lo;

	while (p < end && o + 1 < size) {
		if (end - p >= 4 && p[0] == '\\' && p[1] == 'x' &&
		    (hi = hexval((unsigned char)p[2])) >= 0 &&
		    (lo = hexval((unsigned char)p[3])) >= 0) {
			out[o++] = (char)(hi * 16 + lo);
			p += 4;
		} else
			out[o++] = *p++;
	}
	out[o] = '\0';
}

/*
 * libvirt's machine name, "<driver>-<N>-<name>", or "<driver>-<name>" as
 * libvirt named them before the domain id was in it: the name after the
 * driver (and number) if the driver is driver, else NULL.
 */
static const char *
libvirt_machine(const char *machine, const char *driver)
{
	size_t n = strlen(driver);
	const char *p = machine + n + 1, *q;

	if (strncmp(machine, driver, n) != 0 || machine[n] != '-' || !*p)
		return NULL;
	for (q = p; isdigit((unsigned char)*q); q++)
		;
	return q > p && *q == '-' && q[1] != '\0' ? q + 1 : p;
}

/*
 * A container that systemd-machined registered: the machine's name is its
 * id and name (none, escaped to nothing as \x00, is none).
 */
static void
machine_container(struct kp_identity *id, const char *machine,
    const char *name, const char *runtime)
{
	if (*machine == '\0')
		return;
	set_container(id, machine, strlen(machine), runtime);
	COPY(id->container_name, name, strlen(name));
}

/* "<driver>-<N>-<name>", libvirt's form for any driver: name, or NULL. */
static const char *
numbered_machine(const char *machine)
{
	const char *p = strchr(machine, '-'), *q;

	if (p == NULL || p == machine)
		return NULL;
	for (q = p + 1; isdigit((unsigned char)*q); q++)
		;
	return q > p + 1 && *q == '-' && q[1] != '\0' ? q + 1 : NULL;
}

/*
 * machine-<name>.scope, systemd-machined's scope of a machine, whose name
 * is in systemd's escaping: a VM's id is the name without its driver and
 * domain number, until a uuid replaces it (kp_identity_from_cmdline,
 * names.c, vm_scope.c).  qemu-1-guest (libvirt's QEMU driver, or
 * qemu-guest as libvirt named it before the domain id was in it) is a VM,
 * and so is any other <driver>-<N>-<name>; lxc-1-box (libvirt's LXC
 * driver) is a container, as is any other machine, which systemd-nspawn
 * registers.  systemd-nspawn@<name>.service is nspawn's machine run as a
 * service.  A hypervisor's command line in a container still makes its
 * process a VM (kp_identity_from_cmdline), as systemd-vmspawn's QEMU.
 */
static void
machine_scope(const char *comp, size_t n, struct kp_identity *id)
{
	char machine[sizeof(id->vm_id)];
	const char *name;
	int qemu = 0;

	if (has_prefix(comp, n, "systemd-nspawn@") &&
	    has_suffix(comp, n, ".service") && n > 15 + 8) {
		unescape(comp + 15, n - 15 - 8, machine, sizeof(machine));
		machine_container(id, machine, machine, "systemd-nspawn");
		return;
	}
	if (!has_prefix(comp, n, "machine-") || !has_suffix(comp, n, ".scope"))
		return;
	unescape(comp + 8, n - 8 - 6, machine, sizeof(machine));
	if ((name = libvirt_machine(machine, "lxc")) != NULL) {
		machine_container(id, machine, name, "libvirt-lxc");
		return;
	}
	if ((name = libvirt_machine(machine, "qemu")) != NULL)
		qemu = 1;
	else if ((name = numbered_machine(machine)) == NULL) {
		machine_container(id, machine, machine, "systemd-nspawn");
		return;
	}
	/* Not the number: libvirt gives the domain a new one at each start. */
	COPY(id->vm_id, name, strlen(name));
	COPY(id->vm_name, name, strlen(name));
	COPY(id->hypervisor, qemu ? "qemu" : "", qemu ? 4 : 0);
	id->vm_from_scope = 1;
	id->vm_machine_len = strlen(machine);
}

/* user-1000.slice and session-3.scope, from systemd-logind. */
static void
user_session(const char *comp, size_t n, struct kp_identity *id)
{
	if (has_prefix(comp, n, "user-") && has_suffix(comp, n, ".slice"))
		COPY(id->user_slice, comp, n);
	else if (has_prefix(comp, n, "session-") &&
	    has_suffix(comp, n, ".scope"))
		COPY(id->session, comp + strlen("session-"),
		    n - strlen("session-") - strlen(".scope"));
}

/*
 * A v1 systemd-driver component, "<slice>:<runtime>:<id>", as in
 * kubepods-burstable-pod<uid>.slice:cri-containerd:<id>, or any other
 * "<name>:<id>", whose id is after its colon and which names no runtime.
 */
static int
colon_form(const char *comp, size_t n, struct kp_identity *id)
{
	const char *c1, *c2, *cid;
	size_t len;

	if ((c1 = memchr(comp, ':', n)) == NULL)
		return 0;
	c2 = memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - comp));
	pod_id(comp, (size_t)(c1 - comp), "", 0, 0, id);
	cid = (c2 != NULL ? c2 : c1) + 1;
	len = n - (size_t)(cid - comp);
	if (is_container_id(cid, len))
		set_container(id, cid, len, c2 == NULL ? NULL :
		    runtime_named(c1 + 1, (size_t)(c2 - c1 - 1)));
	return 1;
}

/* s[0..*n) less the blanks around it: a line copied into a file keeps some. */
static const char *
trimmed(const char *s, size_t *n)
{
	while (*n > 0 && (*s == ' ' || *s == '\t')) {
		s++;
		(*n)--;
	}
	while (*n > 0 && (s[*n - 1] == ' ' || s[*n - 1] == '\t' ||
	    s[*n - 1] == '\r'))
		(*n)--;
	return s;
}

void
kp_identity_from_path(const char *path, struct kp_identity *id)
{
	const char *comp, *parent = "";
	size_t n, plen = 0;
	int in_kubepods = strstr(path, "kubepods") != NULL;

	memset(id, 0, sizeof(*id));
	COPY(id->cgroup, path, strlen(path));
	for (comp = path; *comp; parent = comp, plen = n, comp += n) {
		comp += strspn(comp, "/");
		n = strcspn(comp, "/");
		if (n == 0)
			break;
		if (colon_form(comp, n, id))
			continue;
		container_id(comp, n, parent, plen, id);
		pod_id(comp, n, parent, plen, in_kubepods, id);
		machine_scope(comp, n, id);
		if (id->vm_from_scope && id->vm_scope_len == 0)
			id->vm_scope_len = (size_t)(comp + n - path);
		user_session(comp, n, id);
		if (has_suffix(comp, n, ".service"))
			COPY(id->unit, comp, n);
	}
}

/* Whether the comma-separated list ctl[0..clen) names controller want. */
static int
has_controller(const char *ctl, size_t clen, const char *want)
{
	const char *c, *end = ctl + clen;
	size_t n;

	for (c = ctl; c < end; c += n + 1) {
		n = strcspn(c, ",:");
		if (n == strlen(want) && strncmp(c, want, n) == 0)
			return 1;
	}
	return 0;
}

/*
 * Lower is better: the v1 hierarchies that account CPU time (cpu, then
 * cpuacct), then the v2 line, then v1 name=systemd, then any other.
 */
static int
hierarchy_rank(const char *ctl, size_t clen)
{
	if (clen == 0)
		return 3;
	if (has_controller(ctl, clen, "cpu"))
		return 1;
	if (has_controller(ctl, clen, "cpuacct"))
		return 2;
	if (has_controller(ctl, clen, "name=systemd"))
		return 4;
	return 5;
}

/*
 * /proc/PID/cgroup: "0::/path" on cgroup v2, "N:controllers:/path" on v1.
 * On a hybrid host the v2 line holds whatever systemd made of the process
 * (a runtime's service, as 0::/system.slice/containerd.service), while the
 * v1 cpu hierarchy is where the runtime put it and its CPU time is
 * counted: that one wins, unless it is the root, which says nothing.
 */
void
kp_identity_from_cgroup_file(const char *text, struct kp_identity *id)
{
	char best[512] = "";
	int rank, best_rank = 99;
	const char *next, *line, *ctl, *path;
	size_t len, n, plen;

	for (next = text; *next; next += len + (next[len] == '\n')) {
		len = strcspn(next, "\n");
		n = len;
		line = trimmed(next, &n);
		if ((ctl = memchr(line, ':', n)) == NULL)
			continue;
		ctl++;
		if ((path = memchr(ctl, ':', n - (size_t)(ctl - line))) == NULL)
			continue;
		rank = hierarchy_rank(ctl, (size_t)(path - ctl));
		path++;
		plen = n - (size_t)(path - line);
		if (plen == 1 && *path == '/')
			rank += 10;	/* the root says nothing */
		if (rank < best_rank) {
			best_rank = rank;
			COPY(best, path, plen);
		}
	}
	kp_identity_from_path(best, id);
}

/* The command-line arguments that name a virtual machine. */
struct vm_args {
	const char *argv0, *uuid, *name, *domid, *startvm, *comment, *vmx;
	size_t argv0_len, uuid_len, name_len, domid_len, startvm_len,
	    comment_len, vmx_len;
	int xen;		/* -xen-domid: QEMU as Xen's device model */
};

/* Whether a is option opt with one or two dashes. */
static int
is_opt(const char *a, const char *opt)
{
	if (a[0] != '-')
		return 0;
	a += a[1] == '-' ? 2 : 1;
	return strcmp(a, opt) == 0;
}

/* An option's value, as "-opt value" or "-opt=value"; NULL if a is not it. */
static const char *
opt_value(const char *a, const char *next, const char *opt)
{
	size_t olen = strlen(opt);
	const char *p;

	if (next != NULL && is_opt(a, opt))
		return next;
	if (a[0] != '-')
		return NULL;
	p = a + (a[1] == '-' ? 2 : 1);
	return strncmp(p, opt, olen) == 0 && p[olen] == '=' ? p + olen + 1 :
	    NULL;
}

/* A value found, v, into *field and its length into *len. */
static void
take(const char **field, size_t *len, const char *v, const char *end)
{
	if (v == NULL)
		return;
	*field = v;
	*len = strnlen(v, (size_t)(end - v));
}

/* One argument a, with the one after it (NULL at the end), into va. */
static void
vm_arg(struct vm_args *va, const char *a, const char *next, const char *end)
{
	take(&va->uuid, &va->uuid_len, opt_value(a, next, "uuid"), end);
	take(&va->name, &va->name_len, opt_value(a, next, "name"), end);
	take(&va->domid, &va->domid_len, opt_value(a, next, "xen-domid"), end);
	va->xen |= is_opt(a, "xen-domid") || va->domid != NULL;
	take(&va->startvm, &va->startvm_len, opt_value(a, next, "startvm"),
	    end);
	take(&va->comment, &va->comment_len, opt_value(a, next, "comment"),
	    end);
	if (has_suffix(a, strlen(a), ".vmx"))
		take(&va->vmx, &va->vmx_len, a, end);
}

/*
 * The arguments, NUL-separated as in /proc/PID/cmdline.  The last one may
 * lack its NUL (a process may write its own cmdline), so it is only ever
 * read within len: as an option's value or a .vmx path.
 */
static void
vm_args(const char *args, size_t len, struct vm_args *va)
{
	const char *a, *next, *end = args + len;
	size_t n;

	memset(va, 0, sizeof(*va));
	va->argv0 = args;
	va->argv0_len = strnlen(args, len);
	for (a = args; a < end; a = next) {
		n = strnlen(a, (size_t)(end - a));
		next = a + n + 1 < end ? a + n + 1 : NULL;
		if (a + n < end)
			vm_arg(va, a, next, end);
		else if (has_suffix(a, n, ".vmx")) {
			va->vmx = a;
			va->vmx_len = n;
		}
		if (next == NULL)
			break;
	}
}

/* Its last path component, as with basename(1). */
static const char *
base_name(const char *path, size_t n, size_t *blen)
{
	const char *b = path + n;

	while (b > path && b[-1] != '/')
		b--;
	*blen = (size_t)(path + n - b);
	return b;
}

/*
 * QEMU's -name: "[guest=]name[,key=value...]", where ",," is a comma in
 * the name (libvirt doubles them).  The name, unescaped, into out; 0 if
 * there is none or it does not fit: a name is never cut short.
 */
static int
qemu_name(const char *v, size_t n, char *out, size_t outlen)
{
	const char *p = v, *end = v + n, *item;
	size_t o, ilen;
	int first;

	for (first = 1; p < end; first = 0, p++) {
		item = p;
		for (o = 0; p < end && (*p != ',' || (p + 1 < end &&
		    p[1] == ',')); p++) {
			p += *p == ',';
			if (o + 1 < outlen)
				out[o] = *p;
			o++;
		}
		ilen = (size_t)(p - item);
		if (o >= outlen)
			return 0;
		out[o] = '\0';
		if (has_prefix(item, ilen, "guest=")) {
			memmove(out, out + 6, o - 5);
			return o > 6;
		}
		if (first && memchr(item, '=', ilen) == NULL)
			return o > 0;
	}
	return 0;
}

static void
fill(char *dst, size_t len, const char *src, size_t n)
{
	if (*dst == '\0' && n > 0 && n < len)
		copy(dst, len, src, n);
}

#define FILL(field, src, n) fill(field, sizeof(field), src, n)

/*
 * VirtualBox's VBoxHeadless, VirtualBoxVM or VBoxSDL: --startvm <uuid or
 * name> is the machine, --comment its name.
 */
static void
virtualbox_vm(const struct vm_args *va, struct kp_identity *id)
{
	if (va->startvm != NULL)
		FILL(id->vm_id, va->startvm, va->startvm_len);
	else if (va->comment != NULL)
		FILL(id->vm_id, va->comment, va->comment_len);
	if (va->comment != NULL)
		FILL(id->vm_name, va->comment, va->comment_len);
	else if (va->startvm != NULL && !kp_uuid_ok(va->startvm,
	    va->startvm_len))
		FILL(id->vm_name, va->startvm, va->startvm_len);
	if (id->vm_id[0])
		FILL(id->hypervisor, "virtualbox", 10);
}

/* VMware's vmware-vmx ... /path/NAME.vmx: the machine is NAME. */
static void
vmware_vm(const struct vm_args *va, struct kp_identity *id)
{
	const char *b;
	size_t blen;

	if (va->vmx == NULL)
		return;
	b = base_name(va->vmx, va->vmx_len, &blen);
	FILL(id->vm_id, b, blen - 4);
	FILL(id->vm_name, b, blen - 4);
	if (id->vm_id[0])
		FILL(id->hypervisor, "vmware", 6);
}

/*
 * QEMU: -uuid is the machine, else the domain id of Xen's -xen-domid (QEMU
 * as Xen's device model), else its -name; -name names it.  In a machine
 * scope, -uuid wins over the scope's name, which another host's guest may
 * share and a rename changes, and -name over the machine's name, which
 * left characters out.
 */
static void
qemu_vm(const struct vm_args *va, struct kp_identity *id)
{
	char name[sizeof(id->vm_name)];
	int named = va->name != NULL &&
	    qemu_name(va->name, va->name_len, name, sizeof(name));

	if (id->vm_from_scope && va->uuid != NULL &&
	    kp_uuid_ok(va->uuid, va->uuid_len)) {
		COPY(id->vm_id, va->uuid, va->uuid_len);
		if (named)
			COPY(id->vm_name, name, strlen(name));
		id->vm_from_scope = 0;
	}
	if (va->uuid != NULL)
		FILL(id->vm_id, va->uuid, va->uuid_len);
	else if (va->domid != NULL && all_of(va->domid, va->domid_len,
	    isdigit))
		FILL(id->vm_id, va->domid, va->domid_len);
	else if (named)
		FILL(id->vm_id, name, strlen(name));
	if (named)
		FILL(id->vm_name, name, strlen(name));
	if (id->vm_id[0])
		FILL(id->hypervisor, va->xen ? "xen" : "qemu", va->xen ? 3 : 4);
}

static int
one_of(const char *s, size_t n, const char *const *list)
{
	for (; *list != NULL; list++)
		if (equals(s, n, *list))
			return 1;
	return 0;
}

static const char *const virtualbox_cmds[] = { "VBoxHeadless",
    "VirtualBoxVM", "VBoxSDL", NULL };

/*
 * A hypervisor's command line: it fills the VM fields that the cgroup path
 * left empty, so that every process of a libvirt machine scope keeps the
 * scope's id.
 */
void
kp_identity_from_cmdline(const char *args, size_t len,
    struct kp_identity *id)
{
	struct vm_args va;
	const char *b;
	size_t blen;

	if (len == 0)
		return;
	vm_args(args, len, &va);
	b = base_name(va.argv0, va.argv0_len, &blen);
	if (one_of(b, blen, virtualbox_cmds))
		virtualbox_vm(&va, id);
	else if (equals(b, blen, "vmware-vmx"))
		vmware_vm(&va, id);
	else
		qemu_vm(&va, id);
}

/*
 * Whether a process's command line is to be read: a hypervisor's (by its
 * command name, as /proc/PID/stat cuts it to 15 bytes), or any process in a
 * libvirt machine scope (QEMU's helpers, swtpm and virtiofsd, are in it).
 */
int
kp_identity_wants_cmdline(const char *comm, const struct kp_identity *id)
{
	static const char *const cmds[] = { "kvm", "vmware-vmx", NULL };
	size_t n = strlen(comm);

	return id->vm_from_scope || has_prefix(comm, n, "qemu") ||
	    one_of(comm, n, cmds) || one_of(comm, n, virtualbox_cmds);
}

/* What the process is, from the most specific field found. */
void
kp_identity_classify(struct kp_identity *id, int kernel_thread)
{
	const char *kind = "host";

	if (kernel_thread)
		kind = "kernel";
	else if (id->vm_id[0])
		kind = "vm";
	else if (id->container_id[0])
		kind = "container";
	else if (id->pod_id[0])
		kind = "pod";
	else if (id->unit[0])
		kind = "service";
	else if (id->session[0] || id->user_slice[0])
		kind = "session";
	COPY(id->kind, kind, strlen(kind));
}

/*
 * The identity members of a record, in the order they are written: every
 * stage that passes identities on copies these (kp-records(5)).
 */
static const struct { const char *key; size_t len, off; } fields[] = {
#define F(name) { #name, sizeof(#name) - 1, offsetof(struct kp_identity, name) }
	F(kind), F(cgroup), F(container_id), F(runtime), F(container_name),
	F(pod_id), F(pod_name), F(pod_namespace), F(pod_qos), F(vm_id),
	F(vm_name), F(hypervisor), F(unit), F(user_slice), F(session)
#undef F
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

/* ,"kind":..,"cgroup":.. and each identity field found, in one order. */
void
kp_identity_to_buf(const struct kp_identity *id, struct kp_buf *b)
{
	size_t i;
	const char *val;

	for (i = 0; i < NFIELDS; i++) {
		val = (const char *)id + fields[i].off;
		if (*val)
			kp_buf_text(b, fields[i].key, val);
	}
}

/* The index in fields of member name key, of keylen bytes; -1: none. */
static int
identity_index(const char *key, size_t keylen)
{
	size_t i;

	for (i = 0; i < NFIELDS; i++)
		if (fields[i].len == keylen && memcmp(fields[i].key, key,
		    keylen) == 0)
			return (int)i;
	return -1;
}

/*
 * Each identity member rec has, as it was written, in the same order.  One
 * pass over the members, not one lookup for each name: a dense stream
 * brings a record for every process every interval.
 */
void
kp_identity_copy(struct kp_buf *b, const struct kp_record *rec)
{
	const struct kp_field *found[NFIELDS] = { NULL };
	size_t i;
	int k;

	for (i = 0; i < rec->nf; i++)
		if ((k = identity_index(rec->f[i].key, rec->f[i].keylen)) >= 0 &&
		    found[k] == NULL)
			found[k] = &rec->f[i];
	for (i = 0; i < NFIELDS; i++)
		if (found[i] != NULL)
			kp_buf_raw(b, fields[i].key, found[i]->raw,
			    found[i]->rawlen);
}
