/*
 * Numbers as kp-fmt writes them: for people, in about three significant
 * digits of a unit that fits; for programs, exact joules and the shortest
 * decimal that reads back as the same double.
 */
#include <err.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

const struct unit watts_units[] = {
	{ 1, "W" }, { 1e-3, "mW" }, { 0, NULL }
};
const struct unit seconds_units[] = {
	{ 1, "s" }, { 1e-3, "ms" }, { 0, NULL }
};
const struct unit grams_units[] = {
	{ 1e3, "kg" }, { 1, "g" }, { 1e-3, "mg" }, { 1e-6, "\xc2\xb5g" },
	{ 0, NULL }
};
static const struct unit joules_units[] = {
	{ 1e3, "kJ" }, { 1, "J" }, { 1e-3, "mJ" }, { 0, NULL }
};
static const struct unit wh_units[] = {
	{ 1e3, "kWh" }, { 1, "Wh" }, { 1e-3, "mWh" }, { 0, NULL }
};
static const struct unit kwh_units[] = {
	{ 1, "kWh" }, { 0, NULL }
};

static const struct energy_unit energy_units[] = {
	{ "J", 1, joules_units },
	{ "Wh", 3600, wh_units },
	{ "kWh", 3.6e6, kwh_units },
};

const struct energy_unit *
energy_unit_lookup(const char *name)
{
	size_t i;

	for (i = 0; i < NELEM(energy_units); i++)
		if (strcmp(energy_units[i].name, name) == 0)
			return &energy_units[i];
	errx(KP_EXIT_USAGE, "unknown energy unit '%s' (J, Wh, kWh)", name);
}

/*
 * About three significant digits, in the largest unit that keeps v >= 1;
 * in the one unit there is, if there is only one.
 */
const char *
fmt_human(char *buf, size_t len, double v, const struct unit *units)
{
	const struct unit *u;
	double x;
	int prec;

	if (v == 0) {
		for (u = units; u->scale != 1; u++)
			;
		snprintf(buf, len, "0 %s", u->name);
		return buf;
	}
	if (units[1].name == NULL) {
		snprintf(buf, len, "%.3g %s", v / units->scale, units->name);
		return buf;
	}
	/* 0.9995 rather than 1: what would print as "1000 mW" is "1.00 W". */
	for (u = units; u[1].name != NULL && fabs(v) / u->scale < 0.9995; u++)
		;
	x = v / u->scale;
	prec = fabs(x) >= 99.95 ? 0 : fabs(x) >= 9.995 ? 1 : 2;
	snprintf(buf, len, "%.*f %s", prec, x, u->name);
	return buf;
}

/* Microjoules as joules, exactly: no rounding through a double. */
void
put_joules(struct kp_buf *b, int64_t uj)
{
	uint64_t mag = uj < 0 ? 0 - (uint64_t)uj : (uint64_t)uj;
	uint64_t frac = mag % 1000000;
	char buf[32], *p = buf + sizeof(buf);
	int i;

	for (i = 0; i < 6; i++, frac /= 10)
		*--p = (char)('0' + frac % 10);
	*--p = '.';
	mag /= 1000000;
	do
		*--p = (char)('0' + mag % 10);
	while ((mag /= 10) > 0);
	if (uj < 0)
		*--p = '-';
	kp_buf_add(b, p, (size_t)(buf + sizeof(buf) - p));
}

/* The shortest "%g" that reads back as the same double. */
void
put_double(struct kp_buf *b, double v)
{
	char buf[32];
	int prec;

	for (prec = 15; prec < 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (prec == 17)
		snprintf(buf, sizeof(buf), "%.17g", v);
	kp_buf_add(b, buf, strlen(buf));
}

/*
 * A plain decimal of at most 15 significant digits as "%.15g" writes its
 * value, less the zeros that %g drops, without printf and strtod; 0 when
 * the text is not of that kind.
 */
static int
put_plain_decimal(struct kp_buf *b, const char *p, size_t len)
{
	const char *end = p + len, *ip, *fp, *fend;
	size_t ilen, lead;

	if (memchr(p, 'e', len) != NULL || memchr(p, 'E', len) != NULL)
		return 0;
	if (*p == '-')
		p++;
	for (ip = p; p < end && *p != '.'; p++)
		;
	ilen = (size_t)(p - ip);
	fp = p < end ? p + 1 : end;
	for (fend = end; fend > fp && fend[-1] == '0'; fend--)
		;
	if (ilen == 1 && *ip == '0') {
		/* 0.000ddd: %g keeps it plain down to 1e-4. */
		for (lead = 0; fp + lead < fend && fp[lead] == '0'; lead++)
			;
		if (lead > 3 || (size_t)(fend - fp) - lead > 15)
			return 0;
	} else if (ilen + (size_t)(fend - fp) > 15)
		return 0;
	kp_buf_add(b, end - len, (size_t)(ip - (end - len)) + ilen);
	if (fend > fp) {
		kp_buf_add(b, ".", 1);
		kp_buf_add(b, fp, (size_t)(fend - fp));
	}
	return 1;
}

/* A JSON number as put_double writes its value. */
void
put_number(struct kp_buf *b, const struct kp_field *f)
{
	if (f->kind == KP_V_INT && f->i > -1000000000000000 &&
	    f->i < 1000000000000000)
		kp_buf_i64(b, f->i);
	else if (f->kind != KP_V_REAL || !put_plain_decimal(b, f->raw,
	    f->rawlen))
		put_double(b, kp_field_number(f));
}

/* Grams of CO2e for an energy, at the --carbon-intensity. */
double
co2_grams(const struct fmt *ctx, int64_t uj)
{
	return uj / 3.6e12 * ctx->carbon_g_per_kwh;
}
