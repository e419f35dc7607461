/*
 * settings.c - reading the node's swap settings (gs/swap.h): the
 * oversubscription ratio and durations, as the daemon's configuration
 * file gives them. Kept here, pure, so every odd value (NaN, a ratio
 * below 1, a negative duration) is refused with one clear line and
 * tested without a daemon.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gs/swap.h"

gs_err gs_swap_parse_ratio(const char *text, double *out, struct gs_errbuf *eb)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(text, &end);
	if (end == text || *end != '\0' || errno)
		return gs_fail(eb, GS_ERR_PARSE,
		               "swap.oversubscribe: '%s' is not a number",
		               text);
	/* written so that NaN fails too */
	if (!(x >= 1.0 && x <= GS_SWAP_RATIO_MAX))
		return gs_fail(
		    eb, GS_ERR_RANGE,
		    "swap.oversubscribe must be 1..%d (1 = off), got '%s'",
		    GS_SWAP_RATIO_MAX, text);
	*out = x;
	return GS_OK;
}

gs_err gs_swap_parse_seconds(const char *key, const char *text, int64_t *out,
                             struct gs_errbuf *eb)
{
	char *end;
	long long x;
	int64_t unit = 1;

	errno = 0;
	x = strtoll(text, &end, 10);
	if (end == text || errno)
		return gs_fail(eb, GS_ERR_PARSE,
		               "%s: '%s' is not a duration (e.g. 30s, 5m, 1h)",
		               key, text);
	if (strcmp(end, "h") == 0)
		unit = 3600;
	else if (strcmp(end, "m") == 0)
		unit = 60;
	else if (strcmp(end, "s") != 0 && *end != '\0')
		return gs_fail(eb, GS_ERR_PARSE,
		               "%s: '%s' is not a duration (e.g. 30s, 5m, 1h)",
		               key, text);
	if (x < 0 || x > GS_SWAP_SECONDS_MAX / unit)
		return gs_fail(eb, GS_ERR_RANGE,
		               "%s must be 0..%d seconds, got '%s'", key,
		               GS_SWAP_SECONDS_MAX, text);
	*out = (int64_t)x * unit;
	return GS_OK;
}
