/*
 * view.c - how the daemon commands show what gpusliced answers: byte
 * counts short enough for a table, JSON as `--json` prints it (cli.h).
 * Kept in the CLI: the client library (gs/client.h) only reads answers.
 * Also the one rule for showing compute: never more than a GPU can give
 * (gs_cli_fit_compute), whatever window the daemon's figures came from.
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

double gs_cli_fit_compute(double *pct, size_t n)
{
	double sum = 0;

	for (size_t i = 0; i < n; i++) {
		if (!(pct[i] > 0)) /* negative or NaN: nothing measured */
			pct[i] = 0;
		if (pct[i] > 100)
			pct[i] = 100;
		sum += pct[i];
	}
	if (sum > 100) {
		for (size_t i = 0; i < n; i++)
			pct[i] = pct[i] * 100 / sum;
		sum = 100;
	}
	return sum;
}
