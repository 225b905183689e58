/*
 * kp-fmt: a kp record stream as a table, a live view, CSV, NDJSON or
 * Prometheus text.  One file per job behind this header: main.c reads the
 * options and the stream, block.c keeps the records of one interval,
 * units.c writes numbers, and each format has a file of its own.  What
 * the parts share is one struct fmt, passed to each; a format's own state
 * is its own, made by its begin and given back to its other functions.
 */
#include "kp.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_COLUMNS 64

struct fmt;

/*
 * block.c: the records of one interval.  The reader's record is valid only
 * until the next read, so each is copied, line, fields and strings, into
 * an arena that is emptied, not freed, when the interval has been written.
 */
struct chunk;
struct block {
	const struct kp_record **recs;	/* in the order read */
	size_t n, cap;
	struct chunk *head, *cur;	/* the arena */
	struct kp_map *node_zones;	/* zones with a node record */
};
void block_add(struct block *b, const struct kp_record *rec);
void block_clear(struct block *b);
void block_free(struct block *b);
int block_has_type(const struct block *b, const char *type);
int block_has_node(const struct block *b, const char *zone);
int rec_is(const struct kp_record *rec, const char *type);
int rec_is_unattributed_exited(const struct kp_record *rec);
int rec_says_dense(const struct kp_record *rec);
const struct kp_field *by_field(const struct kp_record *rec);
int str_in_list(const char *const *list, const char *s);
int type_wanted(const struct fmt *ctx, const char *type);

/* series.c: a key of 128 bits for text, 23 characters and a NUL in out. */
void hashed_key(const char *text, char *out);

/* texts.c: --summary's long values, one copy each, held by count. */
struct text;
struct texts;
struct texts *texts_new(void);
struct text *text_get(struct texts *t, const char *s, size_t len);
const char *text_str(const struct text *x, size_t *len);
void text_hold(struct text *x);
void text_drop(struct texts *t, struct text *x);
void texts_free(struct texts *t);

/* cmdblock.c: --summary's block for rapl-read -- CMD's command. */
struct cmd_energy;
struct cmd_energy *cmd_energy_new(void);
void cmd_energy_header(struct cmd_energy *c, const struct kp_record *rec);
int cmd_energy_add(struct cmd_energy *c, const struct kp_record *rec);
void cmd_energy_lines(struct cmd_energy *c, struct kp_buf *b,
    int64_t seq, int64_t dt_us);
void cmd_energy_free(struct cmd_energy *c);

/* cmdtree.c: the command's tree by its records' parents, told at the end. */
struct cmd_tree;
struct cmd_tree *cmd_tree_new(void);
void cmd_tree_keep(struct cmd_tree *t, const struct kp_record *rec, int zone);
void cmd_tree_sum(struct cmd_tree *t, int64_t pid, int64_t starttime,
    int64_t reaper_pid, int64_t *energy_uj, int64_t *cpu_us, size_t nzones);
void cmd_tree_free(struct cmd_tree *t);

/* series.c: a + b held at the limit it passed, *over set then. */
int64_t add_saturated(int64_t a, int64_t b, int *over);

/* units.c: energy shown by the human formats in the unit of -u. */
struct unit {
	double scale;		/* of the base unit */
	const char *name;
};
struct energy_unit {
	const char *name;
	double joules;		/* in one base unit of units */
	const struct unit *units;
};
extern const struct unit watts_units[], seconds_units[], grams_units[];
const struct energy_unit *energy_unit_lookup(const char *name);
const char *fmt_human(char *buf, size_t len, double v,
    const struct unit *units);
void put_joules(struct kp_buf *b, int64_t uj);
void put_double(struct kp_buf *b, double v);
void put_number(struct kp_buf *b, const struct kp_field *f);
double co2_grams(const struct fmt *ctx, int64_t uj);

/*
 * A format.  begin makes its state from the options; block writes one
 * interval, interval NULL for records whose interval ended without its
 * interval record; header, where not NULL, a header record, which is no
 * interval's; end writes rest, the records left at the end of the input
 * without an interval record, and frees the state.  record, where not
 * NULL, takes each record as it is read, keeping only what its output
 * needs: when every format written has one, no block is kept and block
 * and end get an empty one, so that an interval of a million records
 * costs no copy of them (kp-fmt(1), Memory).
 */
struct format {
	const char *name;
	void *(*begin)(struct fmt *ctx);
	void (*block)(struct fmt *ctx, void *st, const struct block *b,
	    const struct kp_record *interval);
	void (*header)(struct fmt *ctx, void *st, const struct kp_record *rec);
	void (*end)(struct fmt *ctx, void *st, const struct block *rest);
	void (*record)(struct fmt *ctx, void *st, const struct kp_record *rec);
};
extern const struct format fmt_table, fmt_top, fmt_csv, fmt_json,
    fmt_prometheus, fmt_textfile, fmt_summary, fmt_powercap;

/* The one struct the parts share: the command line and the run's state. */
struct fmt {
	const struct format *format;	/* -f; NULL: none (--textfile) */
	size_t top_rows;		/* -n; 0: all */
	int no_header;			/* -H */
	const char *columns[MAX_COLUMNS + 1];	/* -o, NULL-terminated */
	char **types;			/* -t, NULL-ended; NULL: all */
	const struct energy_unit *eunit;	/* -u */
	int has_carbon;			/* --carbon-intensity given */
	double carbon_g_per_kwh;
	int summary;			/* --summary */
	size_t summary_rows;		/* --summary-rows */
	const char *textfile;		/* --textfile */
	const char *dir;		/* --dir: -f powercap's trees */
	const char *node_name;		/* --node-name */
	long long max_terminated;	/* --max-terminated */
	int64_t min_terminated_uj;	/* --min-terminated-energy */
	int hide_idle;			/* --hide-idle */

	const char *input_name;
	struct kp_reader *reader;	/* top waits on it for input */
	size_t table_width;		/* top: the terminal's; 0: any */
	int64_t summary_first_seq;	/* >= 0: the block is the summary */
	int data_errors;		/* besides the reader's: exit 3 */
	struct kp_map *zone_sources;	/* zone -> its source (source.c) */
	struct kp_buf out;		/* stdout's text of the interval */
};

/*
 * rows.c: the rows of table's workload tables, each its cells as text
 * after the bytes that sort it; with keep[kind] (-n), that table holds no
 * more.
 */
enum { NROW_KINDS = 8 };
struct row {
	double watts;
	uint32_t order;		/* read: the last tie-break */
	uint32_t ident_len;	/* bytes of data before the cells */
	uint32_t ncells;
	char data[];		/* the identity, then each cell NUL-ended */
};
struct rowset {
	struct row **v;
	size_t n, cap;
};
struct rows {
	struct rowset kind[NROW_KINDS];
	size_t keep[NROW_KINDS];	/* rows kept per table; 0: all */
	uint32_t read;
	struct kp_buf ident;	/* scratch */
};
void rows_add(struct rows *r, size_t kind, const struct kp_record *rec,
    char *const *cells, size_t ncells);
void rows_sort(struct rows *r);
const char *row_cells(const struct row *row);
void rows_clear(struct rows *r);
void rows_free(struct rows *r);

/* table.c, for top: one interval's table as text in out; st is table's. */
void table_frame(struct fmt *ctx, struct kp_buf *out, void *st,
    const struct block *b, const struct kp_record *interval);

/* source.c: where each zone's energy comes from, as last read. */
extern const char *const zone_source_keys[];
void zone_source_note(struct fmt *ctx, const struct kp_record *rec);
const char *zone_source_get(const struct fmt *ctx, const char *zone,
    const char *key);
void zone_sources_free(struct fmt *ctx);

/* csv.c, for the options */
void csv_columns(struct fmt *ctx, const char *list);
void csv_default_columns(struct fmt *ctx);
void csv_list_columns(void);

/* prom.c, for main */
void textfile_check(const char *path);
int prom_writes_textfile(const struct fmt *ctx);

/* top.c, for the reader */
int top_live(const struct fmt *ctx);
