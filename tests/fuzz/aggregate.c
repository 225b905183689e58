/*
 * libFuzzer harness for a stream stage's handling of an interval:
 * kp-aggregate, whose code (cmd/aggregate/main.c, included whole, its main
 * renamed, and its other parts, tests/fuzz/aggregate.sources) takes any
 * input read by the one reader.  Besides not crashing,
 * each interval must be conserved when it ends: at every level and zone,
 * the groups' energy and the host's sum to the energy of the process and
 * exited records taken, exactly; and a cut interval leaves no sum behind.
 */
#define main kp_aggregate_main
#include "../../cmd/aggregate/main.c"
#undef main

#define CHECK(c) do { if (!(c)) abort(); } while (0)

static struct agg a;

static int64_t taken_uj[KP_ZONES_MAX];	/* this interval's process and */
					/* exited energy */
static int unchecked;			/* a sum of groups would overflow */

/* Every level's groups and host hold what was taken, zone by zone. */
static void
check_conserved(void)
{
	int64_t sum;
	size_t l, i;
	int z;

	if (unchecked)
		return;
	for (l = 0; l < a.nlevels; l++)
		for (z = 0; z < (int)a.zones.n; z++) {
			sum = a.levels[l].host_energy_uj[z];
			for (i = 0; i < a.nitems; i++)
				if (a.items[i].level == l &&
				    __builtin_add_overflow(sum,
				    a.items[i].g->energy_uj[z], &sum))
					return;
			CHECK(sum == taken_uj[z]);
		}
}

static void
take(const struct kp_record *rec)
{
	char key[KP_ZONE_NAME_MAX + 1];
	int64_t uj;
	int z;

	if (consumed(rec)) {
		if (add_record(&a, rec) != NULL)
			return;
		/* A GPU's zone is gpu/<device>, as kp-aggregate keys it. */
		kp_zone_key(rec, 0, key, sizeof(key));
		z = kp_zone_index(&a.zones, key, strlen(key));
		kp_rec_int(rec, "energy_uj", &uj);
		unchecked |= __builtin_add_overflow(taken_uj[z], uj,
		    &taken_uj[z]);
	} else if (strcmp(rec->type, "node") == 0 ||
	    strcmp(rec->type, "unattributed") == 0)
		see_zone(&a, rec);
}

static void
interval_done(void)
{
	memset(taken_uj, 0, sizeof(taken_uj));
	unchecked = 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	struct kp_reader *r;
	struct kp_record rec;
	int64_t dt_us;
	int n;

	if (!ready) {
		if (freopen("/dev/null", "w", stdout) == NULL)
			abort();
		kp_out_init();
		parse_levels(&a, "container,pod,vm,unit");
		add_level(&a, "group", "comm", 1);
		agg_init(&a);
		ready = 1;
	}
	r = kp_reader_open_mem((const char *)data, size, "fuzz");
	while ((n = kp_reader_read(r, &rec)) != 0) {
		if (n < 0 && kp_reader_fatal(r))
			break;
		if (n < 0)
			continue;
		if (rec.cut_seq >= 0) {
			drop_interval(&a);
			interval_done();
		}
		if (strcmp(rec.type, "interval") == 0) {
			check_conserved();
			kp_rec_int(&rec, "dt_us", &dt_us);
			end_interval(&a, rec.seq, dt_us);
			interval_done();
		} else
			take(&rec);
	}
	kp_reader_close(r);
	agg_reset(&a);	/* so that the next input starts as a new run */
	interval_done();
	return 0;
}
