/*
 * -f json: the stream itself, each record its line as read, less the
 * types -t leaves out; with --carbon-intensity a record with energy_uj
 * gets a last field, co2_g.
 */
#include <stdlib.h>

#include "fmt.h"

/* One record line: as it came, with co2_g if asked for. */
static void
json_line(struct fmt *ctx, const struct kp_record *rec)
{
	int64_t uj;
	size_t len;

	if (!ctx->has_carbon || !kp_rec_int(rec, "energy_uj", &uj)) {
		kp_buf_add(&ctx->out, rec->line, rec->len);
		kp_buf_add(&ctx->out, "\n", 1);
		return;
	}
	/* Before the closing brace, which ends the line but for blanks. */
	for (len = rec->len; len > 0 && rec->line[len - 1] != '}'; len--)
		;
	kp_buf_add(&ctx->out, rec->line, len - 1);
	kp_buf_printf(&ctx->out, ",\"co2_g\":%.6g}\n", co2_grams(ctx, uj));
}

static void *
json_begin(struct fmt *ctx)
{
	(void)ctx;
	return NULL;
}

static void
json_block(struct fmt *ctx, void *st, const struct block *b,
    const struct kp_record *interval)
{
	size_t i;

	(void)st;
	for (i = 0; i < b->n; i++)
		json_line(ctx, b->recs[i]);
	if (interval != NULL && type_wanted(ctx, "interval"))
		json_line(ctx, interval);
}

static void
json_header(struct fmt *ctx, void *st, const struct kp_record *rec)
{
	(void)st;
	if (type_wanted(ctx, "header"))
		json_line(ctx, rec);
}

static void
json_end(struct fmt *ctx, void *st, const struct block *rest)
{
	json_block(ctx, st, rest, NULL);
}

/* A record needs nothing after it: it is written as read. */
static void
json_record(struct fmt *ctx, void *st, const struct kp_record *rec)
{
	(void)st;
	json_line(ctx, rec);
}

const struct format fmt_json = {
	"json", json_begin, json_block, json_header, json_end, json_record
};
