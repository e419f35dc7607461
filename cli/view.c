/*
 * view.c - how the daemon commands show what gpusliced answers: byte
 * counts short enough for a table, JSON as `--json` prints it (cli.h).
 * Kept in the CLI: the client library (gs/client.h) only reads answers.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>

void gs_cli_fmt_bytes(unsigned long long bytes, char *buf, size_t len)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0 || v >= 100 || v == (double)(long long)v)
		snprintf(buf, len, "%.0f%s", v, unit[u]);
	else
		snprintf(buf, len, "%.1f%s", v, unit[u]);
}

void gs_cli_print_json(const json_t *j)
{
	char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	if (s) {
		fputs(s, stdout);
		fputc('\n', stdout);
		free(s);
	}
}
