/*
 * For the state harnesses: what a kp_state_writer writes, as the string a
 * state file's data would hold, its newline cut.  The harness defines
 * CHECK first.
 */
#include <stdio.h>
#include <unistd.h>

static char *
written(kp_state_writer *write, void *arg)
{
	struct kp_jw w;
	FILE *f = tmpfile();
	char *text;
	off_t n;

	CHECK(f != NULL);
	kp_jw_init(&w, fileno(f));
	write(&w, arg);
	CHECK(kp_jw_finish(&w) == 0);
	CHECK((n = lseek(fileno(f), 0, SEEK_END)) > 0);
	CHECK((text = malloc((size_t)n)) != NULL);
	CHECK(pread(fileno(f), text, (size_t)n, 0) == n);
	text[n - 1] = '\0';
	fclose(f);
	return text;
}
