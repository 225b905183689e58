/*
 * One id for every process of a VM's machine scope.  QEMU's command line
 * gives its own process the domain's uuid (-uuid), but its helpers in the
 * same scope, swtpm and virtiofsd, have none of their own: without this
 * pass a guest whose domain XML cannot be read would be two VMs, QEMU
 * under its uuid and the helpers under the scope's name.  The scope is the
 * unit, so each scan gives the helpers the id that a process of their
 * scope found (proc-cputime(1), "Identity fields").
 */
#include <string.h>

#include "sampler.h"

/* The scope's part of p's cgroup path, the key; NULL if in none. */
static char *
scope_key(const struct proc *p, char *key, size_t size)
{
	size_t n = p->id.vm_scope_len;

	if (n == 0 || n >= size || n > strlen(p->id.cgroup))
		return NULL;
	memcpy(key, p->id.cgroup, n);
	key[n] = '\0';
	return key;
}

/* Whether a process of a machine scope still goes by the scope's name. */
static int
any_helper(const struct kp_sampler *s)
{
	size_t i;

	for (i = 0; i < s->nlist; i++)
		if (s->list[i]->id.vm_from_scope && s->list[i]->id.vm_scope_len)
			return 1;
	return 0;
}

/* Every scope with a process that knows its uuid, to that process's id. */
static struct kp_map *
scopes_known(struct kp_sampler *s)
{
	struct kp_map *known = kp_map_new();
	char key[sizeof(s->list[0]->id.cgroup)];
	struct proc *p;
	size_t i;

	for (i = 0; i < s->nlist; i++) {
		p = s->list[i];
		if (!p->id.vm_from_scope && p->id.vm_id[0] &&
		    scope_key(p, key, sizeof(key)) != NULL &&
		    kp_map_get(known, key) == NULL)
			kp_map_put(known, key, &p->id);
	}
	return known;
}

/*
 * A VM's fields from another identity of the same machine: a process of
 * its scope that knows the uuid, or the process's own row in a state file.
 */
void
sampler_take_vm(struct kp_identity *id, const struct kp_identity *from)
{
	memcpy(id->vm_id, from->vm_id, sizeof(id->vm_id));
	memcpy(id->vm_name, from->vm_name, sizeof(id->vm_name));
	memcpy(id->hypervisor, from->hypervisor, sizeof(id->hypervisor));
	id->vm_from_scope = 0;
}

/*
 * After a scan: each process of a machine scope that still has the
 * scope's name for an id takes the uuid another of its scope has.
 */
void
sampler_vm_scopes(struct kp_sampler *s)
{
	char key[sizeof(s->list[0]->id.cgroup)];
	const struct kp_identity *from;
	struct kp_map *known;
	struct proc *p;
	size_t i;

	if (!any_helper(s))
		return;
	known = scopes_known(s);
	for (i = 0; i < s->nlist; i++) {
		p = s->list[i];
		if (p->id.vm_from_scope && scope_key(p, key, sizeof(key)) &&
		    (from = kp_map_get(known, key)) != NULL)
			sampler_take_vm(&p->id, from);
	}
	kp_map_free(known, NULL);
}
