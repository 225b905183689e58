/*
 * Energy zones: the one rule for a zone's name, and the table of the zones
 * a stage has seen, saved to and loaded from its state.
 */
#include <string.h>

#include "kp.h"

/*
 * Whether name is 1 to max bytes of ASCII letters, digits, '-', '_', '.'
 * and the characters of also: the rule of a zone's and a device's names.
 */
static int
name_ok(const char *name, size_t len, size_t max, const char *also)
{
	size_t i;

	if (len == 0 || len > max)
		return 0;
	for (i = 0; i < len; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') ||
		    (name[i] >= 'A' && name[i] <= 'Z') ||
		    (name[i] >= '0' && name[i] <= '9') ||
		    name[i] == '-' || name[i] == '_' || name[i] == '.' ||
		    (name[i] != '\0' && strchr(also, name[i]) != NULL)))
			return 0;
	return 1;
}

/*
 * The one rule for a zone's name, kp-records(5): 1 to 31 bytes of ASCII
 * letters, digits, '-', '_' and '.'.  Such a name goes between quotes, into
 * a Prometheus label, a CSV cell and a file name as it is.  rapl-read
 * applies it to what sysfs says, every reader to every record's "zone".
 */
int
kp_zone_name_ok(const char *name, size_t len)
{
	return name_ok(name, len, KP_ZONE_NAME_MAX, "");
}

/*
 * A GPU's device name, kp-records(5): a zone name's bytes and ':', as an
 * NVML index ("0") or a PCI address ("0000:03:00.0") writes it, at most 27
 * so that "gpu/<device>" is a zone key.
 */
int
kp_device_name_ok(const char *name, size_t len)
{
	return name_ok(name, len, KP_DEVICE_NAME_MAX, ":");
}

/*
 * kp-records(5) 1.2: the machine at the wall is the zone "platform",
 * whatever its source; 1.1 named an ACPI meter's "meter".  Every reader
 * reads a 1.1 name as 1.2's, in a record or a state file, so that a 1.1
 * log and a 1.2 run sum into one zone.  Returns the 1.2 name, with its
 * length in *len and as a JSON string in *json; NULL for a name that 1.2
 * keeps.
 */
const char *
kp_zone_1_2(const char *name, size_t *len, const char **json)
{
	if (*len != 5 || memcmp(name, "meter", 5) != 0)
		return NULL;
	*len = 8;
	*json = "\"platform\"";
	return "platform";
}

/*
 * A name of the table: a zone's name, gpu/device for each GPU, or, where
 * the table holds kp-attribute's keys (socket_keys), zone/socket with a
 * socket number.  A name from a state file is checked here as much as one
 * from a record.
 */
static int
zone_name_ok(const char *name, size_t len, int socket_keys)
{
	const char *slash = memchr(name, '/', len);
	size_t i;

	if (slash == NULL)
		return kp_zone_name_ok(name, len);
	if (slash == name + 3 && memcmp(name, "gpu", 3) == 0)
		return kp_device_name_ok(slash + 1, len - 4);
	if (!socket_keys || slash == name + len - 1)
		return 0;
	for (i = (size_t)(slash - name) + 1; i < len; i++)
		if (name[i] < '0' || name[i] > '9')
			return 0;
	return kp_zone_name_ok(name, (size_t)(slash - name));
}

/*
 * The index of a zone name, added if new; -1 if it is too long or not a
 * name, -2 if there are too many.  A 1.1 name is 1.2's zone, so that the
 * totals a 1.1 run saved go on in it.
 */
int
kp_zone_index(struct kp_zones *zs, const char *name, size_t len)
{
	const char *renamed, *json;
	size_t i;

	if ((renamed = kp_zone_1_2(name, &len, &json)) != NULL)
		name = renamed;

	for (i = 0; i < zs->n; i++)
		if (strlen(zs->name[i]) == len &&
		    memcmp(zs->name[i], name, len) == 0)
			return (int)i;
	if (len >= sizeof(zs->name[0]) ||
	    !zone_name_ok(name, len, zs->socket_keys))
		return -1;
	if (zs->n == KP_ZONES_MAX)
		return -2;
	memcpy(zs->name[zs->n], name, len);
	zs->name[zs->n][len] = '\0';
	return (int)zs->n++;
}

/*
 * {"zone": n, ...}, zeros left out, the names in strcmp(3)'s order: the
 * same totals give the same bytes, whatever order the zones came in.
 */
void
kp_zones_write(struct kp_jw *w, const struct kp_zones *zs, const int64_t *v)
{
	const char *last = "";
	int z, next;

	kp_jw_open(w, '{');
	for (;;) {
		/* the next name after last: at most 64 zones, no sort needed */
		for (next = -1, z = 0; z < (int)zs->n; z++)
			if (v[z] != 0 && strcmp(zs->name[z], last) > 0 &&
			    (next < 0 || strcmp(zs->name[z], zs->name[next]) < 0))
				next = z;
		if (next < 0)
			break;
		kp_jw_key(w, zs->name[next]);
		kp_jw_int(w, v[next]);
		last = zs->name[next];
	}
	kp_jw_close(w, '}');
}

/*
 * What kp_zones_write wrote: a zone not seen before is added.  A total is
 * energy, never negative: a value that is not one is left out, as one that
 * is no integer, rather than summed on from below zero.
 */
void
kp_zones_load(struct kp_zones *zs, json_t *obj, int64_t *v)
{
	const char *zone;
	json_t *n;
	int z;

	json_object_foreach(obj, zone, n)
		if (json_is_integer(n) && json_integer_value(n) >= 0 &&
		    (z = kp_zone_index(zs, zone, strlen(zone))) >= 0)
			v[z] = json_integer_value(n);
}
