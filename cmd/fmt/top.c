/*
 * -f top: the table of each interval redrawn in place on the alternate
 * screen, cut to the terminal's size.  While it waits for input, a
 * SIGWINCH interrupts poll(2) and the last frame is drawn again at the new
 * size.  The tables are narrowed to the terminal's width, their names cut
 * with an ellipsis.  q quits at once: the terminal's keys are read as they
 * come, beside the stream.  As every filter does, it reads on to the end
 * of its input after a SIGINT, SIGTERM or SIGHUP, and the terminal is
 * given back at the end, or at once on a second signal, which ends
 * kp-fmt.  When stdout is not a terminal, and for the summary, whose one
 * block would vanish with the alternate screen, it writes what -f table
 * writes.
 */
#include <err.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "fmt.h"

#define TERM_ENTER "\033[?1049h\033[?25l"
#define TERM_LEAVE "\033[?25h\033[?1049l"

struct top {
	struct fmt *ctx;
	int live;		/* drawing on a terminal */
	void *table;		/* -f table's state, when not live */
	struct kp_buf frame;	/* the last interval's table, a C string */
	struct kp_buf screen;	/* the frame as drawn */
	unsigned short rows, cols;
	int keys_gone;		/* their terminal hung up: not polled */
};

/* Touched by the signal handlers. */
static volatile sig_atomic_t term_active;
static volatile sig_atomic_t term_resized = 1;
static int keys_fd = -1;	/* the terminal's keys; -1: none read */
static struct termios keys_saved;	/* its modes before */

/* The terminal's modes as they were; what a handler may call. */
static void
keys_give_back(void)
{
	if (keys_fd >= 0)
		tcsetattr(keys_fd, TCSANOW, &keys_saved);
}

/*
 * The keys of the controlling terminal, each as it is typed and not
 * echoed; Ctrl-C stays a signal.  Not when the stream itself comes from
 * the terminal, whose lines are then the records.
 */
static void
keys_open(void)
{
	struct termios raw;

	if (isatty(STDIN_FILENO) ||
	    (keys_fd = open("/dev/tty", O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
		return;
	if (tcgetattr(keys_fd, &keys_saved) < 0) {
		close(keys_fd);
		keys_fd = -1;
		return;
	}
	raw = keys_saved;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 1;
	raw.c_cc[VTIME] = 0;
	tcsetattr(keys_fd, TCSANOW, &raw);
}

static void
term_leave(void)
{
	keys_give_back();
	if (term_active) {
		term_active = 0;
		fflush(stdout);
		if (write(STDOUT_FILENO, TERM_LEAVE,
		    sizeof(TERM_LEAVE) - 1) < 0)
			return;
	}
}

/* Before a second signal ends kp-fmt: only what a handler may call. */
static void
term_give_back(void)
{
	keys_give_back();
	if (term_active &&
	    write(STDOUT_FILENO, TERM_LEAVE, sizeof(TERM_LEAVE) - 1) >= 0)
		term_active = 0;
}

static void
on_winch(int sig)
{
	(void)sig;
	term_resized = 1;
}

static void
term_enter(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_winch;
	sigaction(SIGWINCH, &sa, NULL);
	kp_signals_catch(term_give_back);
	atexit(term_leave);
	kp_out_bytes(TERM_ENTER, sizeof(TERM_ENTER) - 1);
	term_active = 1;
}

static void
term_size(struct top *t)
{
	struct winsize ws;

	term_resized = 0;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 &&
	    ws.ws_col > 0) {
		t->rows = ws.ws_row;
		t->cols = ws.ws_col;
	}
}

/* A line of text cut to cols code points; returns where it ends. */
static const char *
draw_line(struct kp_buf *s, const char *p, size_t cols)
{
	const char *start = p, *cut = NULL;
	size_t w = 0;

	for (; *p != '\0' && *p != '\n'; p++)
		if (((unsigned char)*p & 0xc0) != 0x80 && w++ == cols)
			cut = p;
	kp_buf_add(s, start, (size_t)((cut != NULL ? cut : p) - start));
	return p;
}

/*
 * Writes a status line and the frame to stdout, each line cut to the
 * screen, as many lines as it has.
 */
static void
term_draw(struct top *t)
{
	char status[64];
	const char *p;
	size_t row;

	if (term_resized)
		term_size(t);
	t->screen.len = 0;
	snprintf(status, sizeof(status), "kp-fmt top  %ux%u  q quits",
	    t->cols, t->rows);
	kp_buf_add(&t->screen, "\033[H\033[7m", 7);
	draw_line(&t->screen, status, t->cols);
	kp_buf_add(&t->screen, "\033[0m\033[K", 7);
	for (row = 1, p = t->frame.s; *p != '\0' && row < t->rows; row++) {
		kp_buf_add(&t->screen, "\n", 1);
		p = draw_line(&t->screen, p, t->cols);
		/* Clear what the last frame left on the line. */
		kp_buf_add(&t->screen, "\033[K", 3);
		if (*p == '\n')
			p++;
	}
	kp_buf_add(&t->screen, "\033[J", 3);
	kp_out_bytes(t->screen.s, t->screen.len);
	kp_out_flush();
}

/*
 * q typed: the terminal given back, and kp-fmt ends at once with the
 * status of what it has read so far.
 */
static void
keys_read(struct top *t)
{
	char key[64];
	ssize_t n;

	while ((n = read(keys_fd, key, sizeof(key))) > 0)
		if (memchr(key, 'q', (size_t)n) != NULL) {
			term_leave();
			exit(kp_out_finish(kp_reader_errors(t->ctx->reader) >
			    0 || t->ctx->data_errors > 0 ? KP_EXIT_DATAERR :
			    KP_EXIT_OK));
		}
	/* A terminal hung up would be readable for ever: no more keys. */
	if (n == 0 || (errno != EAGAIN && errno != EINTR))
		t->keys_gone = 1;
}

/* The reader's wait: keys read, and a redraw after a resize, until input. */
static void
top_wait(int fd, void *arg)
{
	struct top *waiting = arg;
	struct pollfd pfd[2] = { { fd, POLLIN, 0 }, { keys_fd, POLLIN, 0 } };

	for (;;) {
		pfd[1].revents = 0;
		if (poll(pfd, keys_fd >= 0 && !waiting->keys_gone ? 2 : 1,
		    -1) < 0) {
			if (errno != EINTR)
				err(KP_EXIT_FAILURE, "poll");
		} else if (pfd[1].revents != 0)
			keys_read(waiting);
		if (term_resized && waiting->frame.len > 0)
			term_draw(waiting);
		if (pfd[0].revents != 0)
			return;
	}
}

/* Whether top draws on a terminal, and so waits for input with top_wait. */
int
top_live(const struct fmt *ctx)
{
	return ctx->format == &fmt_top && !ctx->summary &&
	    isatty(STDOUT_FILENO);
}

static void *
top_begin(struct fmt *ctx)
{
	struct top *t = kp_calloc(1, sizeof(*t));

	t->ctx = ctx;
	t->live = top_live(ctx);
	t->table = fmt_table.begin(ctx);
	t->rows = 24;
	t->cols = 80;
	if (t->live) {
		keys_open();
		kp_reader_set_wait(ctx->reader, top_wait, t);
	}
	return t;
}

static void
top_block(struct fmt *ctx, void *st, const struct block *b,
    const struct kp_record *interval)
{
	struct top *t = st;

	if (!t->live) {
		fmt_table.block(ctx, t->table, b, interval);
		return;
	}
	if (interval == NULL) {
		table_frame(ctx, NULL, t->table, b, NULL);
		return;
	}
	if (!term_active)
		term_enter();
	if (term_resized)
		term_size(t);
	t->frame.len = 0;
	ctx->table_width = t->cols;
	table_frame(ctx, &t->frame, t->table, b, interval);
	kp_buf_add(&t->frame, "", 1);
	t->frame.len--;
	term_draw(t);
}

static void
top_end(struct fmt *ctx, void *st, const struct block *rest)
{
	struct top *t = st;

	if (!t->live)
		fmt_table.end(ctx, t->table, rest);
	else {
		table_frame(ctx, NULL, t->table, rest, NULL);
		fmt_table.end(ctx, t->table, &(struct block){ 0 });
	}
	term_leave();
	if (t->live)
		kp_reader_set_wait(ctx->reader, NULL, NULL);
	free(t->frame.s);
	free(t->screen.s);
	free(t);
}

/*
 * Each record to table's state as read, live or not, so that top holds
 * rows, not the interval's records (kp-fmt(1), Memory).
 */
static void
top_record(struct fmt *ctx, void *st, const struct kp_record *rec)
{
	struct top *t = st;

	fmt_table.record(ctx, t->table, rec);
}

const struct format fmt_top = {
	"top", top_begin, top_block, NULL, top_end, top_record
};
