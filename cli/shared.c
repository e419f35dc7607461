/*
 * shared.c - what every subcommand shares: the one-line error report
 * (`gpuslice <cmd>: <message>` on stderr, cli.h) and the API socket the
 * global --socket option names. main.c only dispatches; the commands call
 * down to here, never back into main.c.
 */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>

const char *gs_cli_socket;

void gs_cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "gpuslice %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int gs_cli_fail(const char *cmd, gs_err err, const struct gs_errbuf *eb)
{
	gs_cli_error(cmd, "%s", gs_errbuf_msg(eb, err));
	return gs_err_exit_code(err);
}
