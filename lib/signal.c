/*
 * Signals as every stage takes them (SIGINT, SIGTERM, SIGHUP): the first
 * lets the pipeline end with nothing measured lost, the second ends the
 * stage at once.  A producer ends its interval there and writes it; a
 * filter reads on to the end of its input, which its producer is ending,
 * and finishes as it would have, a summary included.  A signal ignored when
 * the stage started, as in a shell's background job, stays ignored.  A
 * filter that reads a terminal has no producer to end its input, so there
 * the first signal ends it (kp-fmt(1), SIGNALS).
 */
#include <signal.h>
#include <string.h>

#include "kp.h"

static const int ending[] = { SIGHUP, SIGINT, SIGTERM };

volatile sig_atomic_t kp_stop_signal;
static void (*before_death)(void);
static sigset_t open_mask;	/* a producer's mask while it sleeps */
static int producing;
static volatile sig_atomic_t at_once;	/* the first signal ends it */

static void
on_signal(int sig)
{
	if (kp_stop_signal == 0 && !at_once) {
		kp_stop_signal = sig;
		return;
	}
	if (before_death != NULL)
		before_death();
	signal(sig, SIG_DFL);
	raise(sig);		/* delivered as the handler returns */
}

/* The set of the signals that end a stage. */
void
kp_signals_set(sigset_t *set)
{
	size_t i;

	sigemptyset(set);
	for (i = 0; i < sizeof(ending) / sizeof(ending[0]); i++)
		sigaddset(set, ending[i]);
}

/*
 * Catches them; fn, if not NULL, runs before a second signal ends the
 * stage.  Reads and writes go on after the first (SA_RESTART).
 */
void
kp_signals_catch(void (*fn)(void))
{
	struct sigaction sa, old;
	size_t i;

	before_death = fn;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_signal;
	for (i = 0; i < sizeof(ending) / sizeof(ending[0]); i++)
		if (sigaction(ending[i], NULL, &old) == 0 &&
		    old.sa_handler != SIG_IGN)
			sigaction(ending[i], &sa, NULL);
}

/*
 * A producer's: caught, and blocked but while it sleeps to a deadline
 * (kp_clock_next), so that one that comes while it samples cuts the next
 * sleep short at once instead of being lost between a check and a sleep.
 */
void
kp_signals_producer(void)
{
	sigset_t set;

	kp_signals_catch(NULL);
	kp_signals_set(&set);
	sigprocmask(SIG_BLOCK, &set, &open_mask);
	producing = 1;
}

/* The mask a producer sleeps with, the ending signals let in; or NULL. */
const sigset_t *
kp_signals_sleep_mask(void)
{
	return producing ? &open_mask : NULL;
}

/* A filter reading a terminal: its first signal ends it as a second would. */
void
kp_signals_at_once(void)
{
	at_once = 1;
}
