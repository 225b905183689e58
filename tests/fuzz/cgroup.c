/*
 * libFuzzer harness for lib/proc/identity.c: any bytes as
 * /proc/PID/cgroup, as a cgroup path, and as a NUL-separated command line
 * (QEMU's), each followed by kp_identity_classify and kp_identity_to_buf.
 * Besides not crashing, nor reading past the command line's bytes, an
 * identity must keep the promises of kp-records(5): ids only of their
 * alphabets, kind, runtime, pod_qos and hypervisor only from their lists,
 * and members that the record reader takes back as the very strings they
 * came from.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proc/proc.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

static const struct { const char *key; size_t off, size; } fields[] = {
#define F(name) { #name, offsetof(struct kp_identity, name), \
	sizeof(((struct kp_identity *)0)->name) }
	F(kind), F(cgroup), F(container_id), F(runtime), F(container_name),
	F(pod_id), F(pod_name), F(pod_namespace), F(pod_qos), F(vm_id),
	F(vm_name), F(hypervisor), F(unit), F(user_slice), F(session)
#undef F
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static int
one_of(const char *s, const char *const *list)
{
	for (; *list != NULL; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

static const char *hex = "0123456789abcdefABCDEF";

/* Hex digits in groups of the lengths given (0 ends), joined by '-'. */
static int
grouped(const char *s, const size_t *groups)
{
	for (; *groups; groups++) {
		if (strspn(s, hex) != *groups)
			return 0;
		s += *groups;
		if (groups[1] != 0 && *s++ != '-')
			return 0;
	}
	return *s == '\0';
}

/*
 * A container id: 64 hex digits, <32 hex>-<digits> (Fargate) or, from
 * Garden, 8-4-4-4-4, or the name of a machine that systemd-machined
 * registered; a pod uid: a UUID, 8-4-4-4-12, or 32 hex digits.
 */
static void
check_ids(const struct kp_identity *id)
{
	static const size_t garden[] = { 8, 4, 4, 4, 4, 0 };
	static const size_t uuid[] = { 8, 4, 4, 4, 12, 0 };
	static const size_t static_pod[] = { 32, 0 };
	const char *c = id->container_id;
	size_t n = strlen(c);

	CHECK(n == 0 || (n == 64 && strspn(c, hex) == 64) ||
	    (n > 33 && strspn(c, hex) == 32 && c[32] == '-' &&
	    strspn(c + 33, "0123456789") == n - 33) ||
	    (grouped(c, garden) && strcmp(id->runtime, "garden") == 0) ||
	    strcmp(id->runtime, "libvirt-lxc") == 0 ||
	    strcmp(id->runtime, "systemd-nspawn") == 0);
	CHECK(id->pod_id[0] == '\0' || grouped(id->pod_id, uuid) ||
	    grouped(id->pod_id, static_pod));
}

static void
check_alphabets(const struct kp_identity *id)
{
	static const char *const kinds[] = { "kernel", "vm", "container",
	    "pod", "service", "session", "host", NULL };
	static const char *const runtimes[] = { "", "docker", "containerd",
	    "cri-o", "podman", "garden", "libvirt-lxc", "systemd-nspawn",
	    NULL };
	static const char *const qos[] = { "", "guaranteed", "burstable",
	    "besteffort", NULL };
	static const char *const hypervisors[] = { "", "qemu", "xen",
	    "virtualbox", "vmware", NULL };

	CHECK(one_of(id->kind, kinds));
	CHECK(one_of(id->runtime, runtimes));
	CHECK(one_of(id->pod_qos, qos));
	CHECK(one_of(id->hypervisor, hypervisors));
	check_ids(id);
	CHECK(id->runtime[0] == '\0' || id->container_id[0] != '\0');
	CHECK(id->pod_qos[0] == '\0' || id->pod_id[0] != '\0');
}

/* Each member as the reader takes it back: the field, made valid UTF-8. */
static void
check_member(const struct kp_identity *id, const struct kp_field *f)
{
	const char *val = NULL;
	json_t *want;
	size_t i;

	for (i = 0; i < NFIELDS; i++)
		if (strcmp(f->key, fields[i].key) == 0)
			val = (const char *)id + fields[i].off;
	CHECK(val != NULL && *val != '\0' && f->kind == KP_V_STR);
	want = kp_json_text(val);
	CHECK(strcmp(f->str, json_string_value(want)) == 0);
	json_decref(want);
}

/*
 * kp_identity_to_buf's members make a record line with the rest: of a type
 * that needs no members of its own (a proc record needs its cpu_us), so
 * that the record holds only them.
 */
static void
check_to_buf(const struct kp_identity *id)
{
	struct kp_buf b = { 0 };
	struct kp_reader *r;
	struct kp_record rec;
	size_t i, set = 0;

	for (i = 0; i < NFIELDS; i++)
		set += *((const char *)id + fields[i].off) != '\0';
	kp_buf_rec(&b, "identity", 1);
	kp_identity_to_buf(id, &b);
	kp_buf_add(&b, "}", 1);
	r = kp_reader_open_mem(b.s, b.len, "<fuzz>");
	CHECK(kp_reader_read(r, &rec) == 1);
	CHECK(rec.nf == set + 2);
	for (i = 2; i < rec.nf; i++)
		check_member(id, &rec.f[i]);
	CHECK(kp_reader_read(r, &rec) == 0);
	kp_reader_close(r);
	free(b.s);
}

static void
check_identity(struct kp_identity *id, int kernel_thread)
{
	size_t i;

	for (i = 0; i < NFIELDS; i++)
		CHECK(memchr((const char *)id + fields[i].off, '\0',
		    fields[i].size) != NULL);
	kp_identity_classify(id, kernel_thread);
	check_alphabets(id);
	check_to_buf(id);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kp_identity id;
	char *text, *args;
	int kernel_thread = size > 0 && (data[0] & 1);

	text = malloc(size + 1);
	if (size > 0)
		memcpy(text, data, size);
	text[size] = '\0';
	kp_identity_from_cgroup_file(text, &id);
	check_identity(&id, kernel_thread);
	kp_identity_from_path(text, &id);
	check_identity(&id, kernel_thread);
	/* Exactly the bytes, so that a read past them is caught. */
	args = malloc(size > 0 ? size : 1);
	if (size > 0)
		memcpy(args, data, size);
	kp_identity_from_cmdline(args, size, &id);
	check_identity(&id, kernel_thread);
	memset(&id, 0, sizeof(id));
	kp_identity_from_cmdline(args, size, &id);
	check_identity(&id, kernel_thread);
	free(args);
	free(text);
	return 0;
}
