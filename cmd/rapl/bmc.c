/*
 * rapl-read: what the BMC sources (redfish, ipmi) share: the readings
 * of the machine's power at its supply, taken beside the clock by a
 * thread, and their energy, integrated to exact uJ (rapl-read(1), The BMC
 * sources).
 */
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "rapl.h"

/*
 * Failed requests in a row after which a running source gives up; until
 * then the last good power is carried, the records marked with
 * failed_requests.
 */
#define MAX_FAILURES	10

static const struct bmc_fetcher *fetcher;
static int64_t period_us = 1000000;	/* --bmc-period */

/* The options both sources share: the BMC, who we are, how long to wait. */
const char *bmc_target;			/* --bmc */
char bmc_user[600], bmc_password[600];	/* from --bmc-credentials */
long bmc_timeout_ms = 10000;		/* --bmc-timeout */

/* The integration, the main thread's alone. */
static int64_t reading_mw, reading_us;	/* the newest reading, and when */
static int has_reading, has_cursor;
static int64_t cursor_us;		/* integrated up to here */
static uint64_t energy_uj;		/* since the first sample */
static double rest_nj;			/* below 1 uJ, carried */
static int64_t age_us;			/* of the newest at the last sample */
static int failures;			/* in a row, said in the record */
static int64_t pending_mw;		/* taken as the source opened */
static int has_pending;

/* What the thread and the main thread share, under lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t kick = PTHREAD_COND_INITIALIZER;
static pthread_t thread;
static int started, asked, busy, quitting;
static int fresh, fresh_status;		/* an answer not yet taken */
static int64_t fresh_mw, fresh_us;
static char fresh_why[512];
static int64_t last_kick_deadline_us = -1;

void
bmc_set_fetcher(const struct bmc_fetcher *f)
{
	fetcher = f;
}

/* The reading the source took as it opened: the first sample's. */
void
bmc_first_reading(int64_t mw)
{
	pending_mw = mw;
	has_pending = 1;
}

/*
 * The credentials file: a regular file of mode 0600 or stricter, the
 * caller's own; the user on its first line, the password on its second.
 */
static void
read_credentials(const char *path)
{
	struct stat sb;
	char buf[sizeof(bmc_user) + sizeof(bmc_password)], *nl;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		err(KP_EXIT_USAGE, "cannot open '%s'", path);
	if (fstat(fd, &sb) < 0)
		err(KP_EXIT_FAILURE, "cannot stat '%s'", path);
	if (!S_ISREG(sb.st_mode) || (sb.st_mode & 077) != 0 ||
	    sb.st_uid != geteuid())
		errx(KP_EXIT_USAGE, "'%s' must be a file of mode 0600 or "
		    "stricter owned by its user: it holds a password", path);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	if ((nl = strchr(buf, '\n')) == NULL || nl == buf ||
	    (size_t)(nl - buf) >= sizeof(bmc_user) ||
	    strlen(nl + 1) >= sizeof(bmc_password))
		errx(KP_EXIT_USAGE, "'%s': the user on its first line, the "
		    "password on its second", path);
	nl[1 + strcspn(nl + 1, "\r\n")] = '\0';
	memset(bmc_user, 0, sizeof(bmc_user));
	memcpy(bmc_user, buf, (size_t)(nl - buf));
	memcpy(bmc_password, nl + 1, strlen(nl + 1) + 1);
	explicit_bzero(buf, sizeof(buf));
}

/* One of the shared options handled: 1; 0 if it is the source's own. */
int
bmc_option(const char *name, const char *arg)
{
	if (strcmp(name, "bmc") == 0)
		bmc_target = arg;
	else if (strcmp(name, "bmc-credentials") == 0)
		read_credentials(arg);
	else if (strcmp(name, "bmc-period") == 0)
		period_us = kp_parse_duration_us(arg, "BMC period");
	else if (strcmp(name, "bmc-timeout") == 0)
		bmc_timeout_ms = (long)(kp_parse_duration_us(arg, "timeout") /
		    1000);
	else
		return 0;
	return 1;
}

void
bmc_forget(void)
{
	explicit_bzero(bmc_password, sizeof(bmc_password));
}

/* Whether a request may be aborted: the source is closing. */
int
bmc_quitting(void)
{
	int q;

	pthread_mutex_lock(&lock);
	q = quitting;
	pthread_mutex_unlock(&lock);
	return q;
}

static void *
poll_bmc(void *arg)
{
	char why[sizeof(fresh_why)];
	int64_t mw;
	int status;

	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		while (!asked && !quitting)
			pthread_cond_wait(&kick, &lock);
		if (quitting)
			break;
		asked = 0;
		busy = 1;
		pthread_mutex_unlock(&lock);
		status = fetcher->fetch(&mw, why, sizeof(why));
		pthread_mutex_lock(&lock);
		busy = 0;
		fresh = 1;
		fresh_status = status;
		fresh_mw = mw;
		fresh_us = kp_mono_us();
		memcpy(fresh_why, why, sizeof(why));
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

/*
 * An exit through errx runs the handlers of atexit(3) last registered
 * first: OpenSSL's frees its thread state and may be registered as late as
 * the first TLS connection, so the source's close, which ends the thread
 * and the session, is registered once the thread starts, to run before it.
 */
static void
close_before_libraries(void)
{
	static int registered;

	if (!registered && atexit(fetcher->close) == 0)
		registered = 1;
}

/*
 * One request, at most, each interval and each --bmc-period, on the
 * clock's schedule of deadlines rather than the times the intervals
 * really ended, which a late wakeup moves; none while one is out.
 */
static void
kick_request(int64_t deadline_us)
{
	if (!started) {
		if ((errno = pthread_create(&thread, NULL, poll_bmc, NULL)) != 0)
			err(KP_EXIT_FAILURE, "cannot start the BMC's thread");
		started = 1;
		close_before_libraries();
	}
	pthread_mutex_lock(&lock);
	if (!busy && !asked && (last_kick_deadline_us < 0 ||
	    deadline_us - last_kick_deadline_us >= period_us)) {
		asked = 1;
		last_kick_deadline_us = deadline_us;
		pthread_cond_signal(&kick);
	}
	pthread_mutex_unlock(&lock);
}

/* The thread ended, its request aborted; then the source may log out. */
void
bmc_stop(void)
{
	if (!started)
		return;
	pthread_mutex_lock(&lock);
	quitting = 1;
	pthread_cond_signal(&kick);
	pthread_mutex_unlock(&lock);
	pthread_join(thread, NULL);
	started = 0;
	quitting = 0;
}

/*
 * The energy of the line from (a_us, a_mw) to (b_us, b_mw) between
 * from_us and to_us, in nJ (mW x us): held at a_mw where b_us is not
 * after a_us.  For a constant power it is exactly P x dt.
 */
static double
line_nj(int64_t a_us, int64_t a_mw, int64_t b_us, int64_t b_mw,
    int64_t from_us, int64_t to_us)
{
	long double held, slope, x0, x1;

	held = (long double)a_mw * (long double)(to_us - from_us);
	if (b_us <= a_us || b_mw == a_mw)
		return (double)held;
	slope = (long double)(b_mw - a_mw) / (long double)(b_us - a_us);
	x0 = (long double)(from_us - a_us);
	x1 = (long double)(to_us - a_us);
	return (double)(held + slope * (x1 * x1 - x0 * x0) / 2);
}

static void
add_nj(double nj)
{
	double whole_uj;

	rest_nj += nj;
	whole_uj = floor(rest_nj / 1000);
	energy_uj += (uint64_t)whole_uj;
	rest_nj -= whole_uj * 1000;
}

/*
 * Integrates to at_us: from the cursor along the line from the newest
 * reading to a new one at new_us (or held, without one), then held at
 * the new one.
 */
static void
integrate(int has_new, int64_t new_mw, int64_t new_us, int64_t at_us)
{
	if (has_cursor && has_reading && has_new && new_us > cursor_us) {
		add_nj(line_nj(reading_us, reading_mw, new_us, new_mw,
		    cursor_us, new_us));
		cursor_us = new_us;
	}
	if (has_new) {
		reading_mw = new_mw;
		reading_us = new_us;
		has_reading = 1;
	}
	if (has_cursor && has_reading && at_us > cursor_us)
		add_nj((double)reading_mw * (double)(at_us - cursor_us));
	if (at_us > cursor_us || !has_cursor)
		cursor_us = at_us;
	has_cursor = 1;
}

/* The answer the thread left, if any: 1 with it in *mw and *us. */
static int
take_answer(int64_t *mw, int64_t *us)
{
	char why[sizeof(fresh_why)];
	int got = 0, status = 0;

	pthread_mutex_lock(&lock);
	if (fresh) {
		fresh = 0;
		got = 1;
		status = fresh_status;
		*mw = fresh_mw;
		*us = fresh_us;
		memcpy(why, fresh_why, sizeof(why));
	}
	pthread_mutex_unlock(&lock);
	if (!got || status == 0)
		return got && (failures = 0, 1);
	if (++failures >= MAX_FAILURES)
		errx(KP_EXIT_NOSOURCE, "%s: %d requests in a row failed; the "
		    "last: %s", fetcher->what, failures, why);
	if (failures == 1)
		warnx("%s: %s; carrying the last power meanwhile",
		    fetcher->what, why);
	return 0;
}

/*
 * The read of a BMC source's member: a reading taken without the clock
 * (the first, or a one-shot run's, deadline 0) counts as taken at this
 * sample; the thread's, when it answered.
 */
int
bmc_read(struct member *mb, int64_t deadline_us)
{
	char why[512];
	int64_t mw = 0, us = 0;
	int has_new = 1;

	if (has_pending) {
		mw = pending_mw;
		us = mb->at_us;
		has_pending = 0;
	} else if (deadline_us == 0) {
		if (fetcher->fetch(&mw, why, sizeof(why)) != 0)
			errx(KP_EXIT_NOSOURCE, "%s: %s", fetcher->what, why);
		us = mb->at_us;
	} else
		has_new = take_answer(&mw, &us);
	integrate(has_new, mw, us, mb->at_us);
	age_us = mb->at_us - reading_us;
	mb->cur = energy_uj;
	if (deadline_us != 0)
		kick_request(deadline_us);
	return 0;
}

/* A record's own fields: what was read, how old, and failures since. */
void
bmc_fields(struct kp_buf *b, const struct member *one, size_t counters)
{
	kp_buf_int(b, "sockets", (int64_t)counters);
	kp_buf_text(b, "path", one->where);
	kp_buf_int(b, "age_ms", age_us / 1000);
	if (failures > 0)
		kp_buf_int(b, "failed_requests", failures);
}

/*
 * --state: the newest reading, its time as an age before the stored
 * sample (whose time the clock keeps), and the integral's rest.
 */
void
bmc_save(json_t *data)
{
	if (!has_reading)
		return;
	json_object_set_new(data, "bmc_mw", json_integer(reading_mw));
	json_object_set_new(data, "bmc_age_us",
	    json_integer(cursor_us - reading_us));
	json_object_set_new(data, "bmc_energy_uj",
	    json_integer((json_int_t)energy_uj));
	json_object_set_new(data, "bmc_rest_nj", json_real(rest_nj));
}

int
bmc_load(json_t *data)
{
	json_int_t mw, age, uj, stored_us;
	double rest;

	if (json_unpack(data, "{s:I,s:I,s:I,s:I,s:F}", "mono_us", &stored_us,
	    "bmc_mw", &mw, "bmc_age_us", &age, "bmc_energy_uj", &uj,
	    "bmc_rest_nj", &rest) < 0 || mw < 0 || age < 0 || uj < 0 ||
	    rest < 0 || rest >= 1000)
		return -1;
	reading_mw = mw;
	cursor_us = stored_us;
	reading_us = stored_us - age;
	energy_uj = (uint64_t)uj;
	rest_nj = rest;
	has_reading = has_cursor = 1;
	return 0;
}

/* Watts as a BMC prints them, in mW; -1 if not a power. */
int64_t
bmc_watts_mw(double watts)
{
	if (!(watts >= 0 && watts < 1e7))
		return -1;
	return llround(watts * 1000);
}
