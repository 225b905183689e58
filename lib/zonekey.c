/*
 * A record's zone key: its zone, with a socket or a GPU's device, as the
 * stages that keep them apart key their tables (kp_zones), and the
 * members written back from a key.
 */
#include <stdio.h>
#include <string.h>

#include "kp.h"

/* Whether a zone key is of zone gpu: "gpu", or "gpu/<device>". */
int
kp_zone_is_gpu(const char *key)
{
	return strncmp(key, "gpu", 3) == 0 && (key[3] == '\0' || key[3] == '/');
}

/*
 * A record's key in a table of zones: its zone, and for zone gpu its
 * device, as "gpu/<device>", so that each GPU is split, summed and saved
 * apart (kp-attribute(1), kp-aggregate(1)); with sockets, a record of
 * another zone that has a socket is "zone/socket".  The reader has
 * checked both names.  0: no zone, or too long for buf.
 */
int
kp_zone_key(const struct kp_record *rec, int sockets, char *buf, size_t len)
{
	const char *zone = kp_rec_str(rec, "zone"), *device;
	int64_t socket;
	int n;

	if (zone == NULL)
		return 0;
	if (strcmp(zone, "gpu") == 0 &&
	    (device = kp_rec_str(rec, "device")) != NULL)
		n = snprintf(buf, len, "gpu/%s", device);
	else if (sockets && strcmp(zone, "gpu") != 0 &&
	    kp_rec_int(rec, "socket", &socket))
		n = snprintf(buf, len, "%s/%lld", zone, (long long)socket);
	else
		n = snprintf(buf, len, "%s", zone);
	return n >= 0 && (size_t)n < len;
}

/*
 * A zone key written back as the members it came from: its zone, and its
 * device or socket.
 */
void
kp_buf_zone(struct kp_buf *b, const char *key)
{
	const char *slash = strchr(key, '/');
	size_t len = slash ? (size_t)(slash - key) : strlen(key);

	kp_buf_add(b, ",\"zone\":\"", 9);
	kp_buf_add(b, key, len);
	kp_buf_add(b, "\"", 1);
	if (slash == NULL)
		return;
	if (kp_zone_is_gpu(key)) {
		kp_buf_add(b, ",\"device\":\"", 11);
		kp_buf_add(b, slash + 1, strlen(slash + 1));
		kp_buf_add(b, "\"", 1);
	} else
		kp_buf_raw(b, "socket", slash + 1, strlen(slash + 1));
}

/*
 * The time that shares a zone's energy, in a record drawn from it: CPU
 * time, ,"cpu_us":n, or in a GPU's zone the time on the device, as the
 * object of GPU times by device that a proc record carries,
 * ,"gpu_us":{"<device>":n}, so that gpu_us has one type in every record
 * (kp-records(5)).
 */
void
kp_buf_zone_us(struct kp_buf *b, const char *key, int64_t us)
{
	if (!kp_zone_is_gpu(key) || key[3] != '/') {
		kp_buf_int(b, "cpu_us", us);
		return;
	}
	kp_buf_add(b, ",\"gpu_us\":{\"", 12);
	kp_buf_add(b, key + 4, strlen(key + 4));
	kp_buf_add(b, "\":", 2);
	kp_buf_i64(b, us);
	kp_buf_add(b, "}", 1);
}

/* What kp_buf_zone_us wrote, read back from a record of zone key; or 0. */
int64_t
kp_rec_zone_us(const struct kp_record *rec, const char *key)
{
	const struct kp_field *f;
	int64_t us = 0;

	if (!kp_zone_is_gpu(key) || key[3] != '/') {
		kp_rec_int(rec, "cpu_us", &us);
		return us;
	}
	if ((f = kp_rec_get(rec, "gpu_us")) == NULL ||
	    (us = kp_device_us(f->raw, f->rawlen, key + 4)) < 0)
		return 0;
	return us;
}
