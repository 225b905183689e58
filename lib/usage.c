/*
 * -h, --help and --version, and the usage after a misuse, alike in every
 * command: help is asked for, so it goes to standard output and is a
 * success; a misuse says what was wrong, then the usage, on standard error.
 */
#include <err.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kp.h"

/* Every command's own two, after its table. */
static const struct kp_option_help common[] = {
	{ "-h, --help", "print this help and exit" },
	{ "--version", "print the version and exit" },
	{ NULL, NULL }
};

/* A long option without a short one lines up after the others' "-x, ". */
static int
indent(const struct kp_option_help *o)
{
	return o->flags[1] == '-' ? 4 : 0;
}

static int
flags_width(const struct kp_option_help *o, int width)
{
	int w;

	for (; o->flags != NULL; o++) {
		w = indent(o) + (int)strlen(o->flags);
		if (w > width)
			width = w;
	}
	return width;
}

static void
print_options(const struct kp_option_help *o, int width)
{
	for (; o->flags != NULL; o++)
		printf("  %*s%-*s  %s\n", indent(o), "", width - indent(o),
		    o->flags, o->what);
}

void
kp_usage_help(const struct kp_usage *u)
{
	int width = flags_width(common, flags_width(u->options, 0));

	printf("usage: %s\n\n", u->synopsis);
	print_options(u->options, width);
	print_options(common, width);
	exit(kp_out_finish(KP_EXIT_OK));
}

void
kp_usage_error(const struct kp_usage *u, const char *fmt, ...)
{
	va_list ap;

	if (fmt != NULL) {
		va_start(ap, fmt);
		vwarnx(fmt, ap);
		va_end(ap);
	}
	fprintf(stderr, "usage: %s\n", u->synopsis);
	exit(KP_EXIT_USAGE);
}

/*
 * What getopt gave that none of the command's own options took: -h,
 * --version, or a misuse (getopt has said what was wrong).
 */
void
kp_usage_option(const struct kp_usage *u, int ch)
{
	if (ch == 'h')
		kp_usage_help(u);
	if (ch == KP_OPT_VERSION)
		kp_usage_version();
	kp_usage_error(u, NULL);
}

/* After getopt: a command that takes no operand names the first one. */
void
kp_usage_no_operand(const struct kp_usage *u, int argc, char *argv[])
{
	if (optind < argc)
		kp_usage_error(u, "unexpected argument '%s'", argv[optind]);
}

void
kp_usage_unknown(const char *what, const char *name,
    const char *const *names)
{
	size_t i;

	fprintf(stderr, "%s: unknown %s '%s' (", program_invocation_short_name,
	    what, name);
	for (i = 0; names[i] != NULL; i++)
		fprintf(stderr, "%s%s", i > 0 ? ", " : "", names[i]);
	fprintf(stderr, ")\n");
	exit(KP_EXIT_USAGE);
}

void
kp_usage_version(void)
{
	printf("%s %s\n", program_invocation_short_name, VERSION);
	exit(kp_out_finish(KP_EXIT_OK));
}
