/*
 * libFuzzer harness for rapl-read's powercap readers: what a sysfs zone's
 * name file and energy_uj or max_energy_range_uj file may hold.  The
 * readers are static in cmd/rapl/powercap.c, which is included here whole
 * with main.c, its main renamed (the other parts are linked,
 * tests/fuzz/powercap.sources), so that the harness runs the code
 * rapl-read runs.  Besides
 * not crashing: a name taken is a zone name by the record format's rule
 * with a socket that is none or a small number; a counter taken is the
 * digits it was written as, and a value with anything else is refused.
 */
#define main rapl_read_main
#include "../../cmd/rapl/main.c"
#include "../../cmd/rapl/powercap.c"
#undef main

#define CHECK(c) do { if (!(c)) abort(); } while (0)

static void
check_name(const uint8_t *data, size_t size)
{
	char name[64];
	int socket;

	if (size >= sizeof(name))
		return;
	memcpy(name, data, size);
	name[size] = '\0';
	if (!split_name(name, size, &socket))
		return;
	CHECK(kp_zone_name_ok(name, strlen(name)));
	CHECK(socket == NO_SOCKET || (socket >= 0 && socket <= 999999));
}

/* A counter: digits alone, or with one newline, that fit 64 bits. */
static void
check_counter(const uint8_t *data, size_t size)
{
	char buf[32], back[32];
	uint64_t uj;
	size_t digits;

	if (size >= sizeof(buf))
		return;
	memcpy(buf, data, size);
	buf[size] = '\0';
	if (parse_uj(buf, &uj) < 0)
		return;
	digits = strspn(buf, "0123456789");
	CHECK(digits > 0 && (buf[digits] == '\0' ||
	    strcmp(buf + digits, "\n") == 0));
	snprintf(back, sizeof(back), "%llu", (unsigned long long)uj);
	/* Leading zeros aside, the value read is the digits written. */
	CHECK(strncmp(back, buf + strspn(buf, "0") - (uj == 0 &&
	    strspn(buf, "0") > 0), strlen(back)) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_name(data, size);
	check_counter(data, size);
	return 0;
}
