/*
 * libFuzzer harness for a stream stage's handling of an interval:
 * kp-aggregate, whose code (cmd/kp-aggregate.c, included whole, its main
 * renamed) takes any input read by the one reader.  Besides not crashing,
 * each interval must be conserved when it ends: at every level and zone,
 * the groups' energy and the host's sum to the energy of the process and
 * exited records taken, exactly; and a cut interval leaves no sum behind.
 */
#define main kp_aggregate_main
#include "../../cmd/kp-aggregate.c"
#undef main

#define CHECK(c) do { if (!(c)) abort(); } while (0)

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
	for (l = 0; l < nlevels; l++)
		for (z = 0; z < (int)zones.n; z++) {
			sum = levels[l].host_energy_uj[z];
			for (i = 0; i < nitems; i++)
				if (items[i].level == l &&
				    __builtin_add_overflow(sum,
				    items[i].g->energy_uj[z], &sum))
					return;
			CHECK(sum == taken_uj[z]);
		}
}

static void
take(const struct kp_record *rec)
{
	const char *zone;
	int64_t uj;
	int z;

	if (consumed(rec)) {
		if ((strcmp(rec->type, "exited") == 0 ? add_exited(rec) :
		    add_process(rec)) != NULL)
			return;
		zone = kp_rec_str(rec, "zone");
		z = kp_zone_index(&zones, zone, strlen(zone));
		kp_rec_int(rec, "energy_uj", &uj);
		unchecked |= __builtin_add_overflow(taken_uj[z], uj,
		    &taken_uj[z]);
	} else if (strcmp(rec->type, "node") == 0 ||
	    strcmp(rec->type, "unattributed") == 0)
		see_zone(rec);
}

static void
interval_done(void)
{
	memset(taken_uj, 0, sizeof(taken_uj));
	unchecked = 0;
}

/* Everything one input left, so that the next starts as a new run. */
static void
reset(void)
{
	size_t l;

	drop_interval();
	kp_map_free(members, free);
	members = kp_map_new();
	for (l = 0; l < nlevels; l++) {
		kp_map_free(levels[l].groups, level_free);
		levels[l].groups = kp_map_new();
		memset(levels[l].host_total_uj, 0,
		    sizeof(levels[l].host_total_uj));
	}
	memset(&zones, 0, sizeof(zones));
	interval_done();
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
		parse_levels("container,pod,vm,unit");
		add_level("group", "comm", 1);
		members = kp_map_new();
		ready = 1;
	}
	r = kp_reader_open_mem((const char *)data, size, "fuzz");
	while ((n = kp_reader_read(r, &rec)) != 0) {
		if (n < 0 && kp_reader_fatal(r))
			break;
		if (n < 0)
			continue;
		if (rec.cut_seq >= 0) {
			drop_interval();
			interval_done();
		}
		if (strcmp(rec.type, "interval") == 0) {
			check_conserved();
			kp_rec_int(&rec, "dt_us", &dt_us);
			end_interval(rec.seq, dt_us);
			interval_done();
		} else
			take(&rec);
	}
	kp_reader_close(r);
	reset();
	return 0;
}
