/*
 * Where each zone's energy comes from, as the stream last said it: the
 * source, estimated and model members of the zone's latest node or energy
 * record.  They are kept apart from the block, which -t filters, so that a
 * CSV row of a process, a group or the unattributed energy, which has no
 * such member, still says whether its figures are an estimate, and by
 * which model, when its zone's records are not written (kp-fmt(1), csv).
 */
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

const char *const zone_source_keys[] = { "source", "estimated", "model", NULL };
#define NKEYS (NELEM(zone_source_keys) - 1)

/* A zone's members, as text; NULL: its record had none. */
struct zone_source {
	char *text[NKEYS];
};

/* A string or a boolean as a CSV cell writes it; NULL for any other. */
static char *
field_text(const struct kp_field *f)
{
	if (f == NULL)
		return NULL;
	if (f->kind == KP_V_STR)
		return kp_strdup(f->str);
	if (f->kind == KP_V_TRUE || f->kind == KP_V_FALSE)
		return kp_strdup(f->kind == KP_V_TRUE ? "true" : "false");
	return NULL;
}

/* Every record read, whether -t writes it or not. */
void
zone_source_note(struct fmt *ctx, const struct kp_record *rec)
{
	struct zone_source *zs;
	const char *zone;
	size_t i;

	if ((!rec_is(rec, "node") && !rec_is(rec, "energy")) ||
	    (zone = kp_rec_str(rec, "zone")) == NULL)
		return;
	if (ctx->zone_sources == NULL)
		ctx->zone_sources = kp_map_new();
	if ((zs = kp_map_get(ctx->zone_sources, zone)) == NULL) {
		zs = kp_calloc(1, sizeof(*zs));
		kp_map_put(ctx->zone_sources, zone, zs);
	}
	for (i = 0; i < NKEYS; i++) {
		free(zs->text[i]);
		zs->text[i] = field_text(kp_rec_get(rec, zone_source_keys[i]));
	}
}

/* What zone's records last said of key, one of zone_source_keys; or NULL. */
const char *
zone_source_get(const struct fmt *ctx, const char *zone, const char *key)
{
	const struct zone_source *zs;
	size_t i;

	if (ctx->zone_sources == NULL ||
	    (zs = kp_map_get(ctx->zone_sources, zone)) == NULL)
		return NULL;
	for (i = 0; i < NKEYS; i++)
		if (strcmp(zone_source_keys[i], key) == 0)
			return zs->text[i];
	return NULL;
}

static void
zone_source_free(void *val)
{
	struct zone_source *zs = val;
	size_t i;

	for (i = 0; i < NKEYS; i++)
		free(zs->text[i]);
	free(zs);
}

void
zone_sources_free(struct fmt *ctx)
{
	kp_map_free(ctx->zone_sources, zone_source_free);
	ctx->zone_sources = NULL;
}
