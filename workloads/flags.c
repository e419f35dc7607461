/*
 * flags.c - the strict flag parser and quantity parsers of flags.h.
 *
 * Numbers are parsed by hand rather than with strtoull/strtod alone so that
 * what they tolerate (leading spaces, a sign on an unsigned value, hex,
 * "inf") cannot slip into a size or a count.
 */
#include "flags.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_u64_digits(const char *s, const char **end, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*end = p;
	*out = v;
	return 0;
}

int gs_flags_parse_size(const char *s, uint64_t *out)
{
	static const struct {
		const char *suffix;
		unsigned shift;
	} units[] = {
	    {"", 0},     {"B", 0},  {"K", 10},   {"KiB", 10}, {"M", 20},
	    {"MiB", 20}, {"G", 30}, {"GiB", 30}, {"T", 40},   {"TiB", 40},
	};
	const char *rest;
	uint64_t v;
	size_t i;

	if (!s || parse_u64_digits(s, &rest, &v) != 0)
		return -1;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		unsigned sh = units[i].shift;

		if (strcmp(rest, units[i].suffix) != 0)
			continue;
		if (sh && v > (UINT64_MAX >> sh))
			return -1;
		*out = v << sh;
		return 0;
	}
	return -1;
}

int gs_flags_parse_seconds(const char *s, double *out)
{
	double scale = 1.0, v;
	const char *p = s;
	char *end;
	size_t len;

	if (!s || !*s)
		return -1;
	/* Only digits and at most one '.', so strtod cannot see hex, a sign,
	 * an exponent or "inf". */
	len = strspn(p, "0123456789.");
	if (len == 0 || memchr(p, '.', len) != memrchr(p, '.', len))
		return -1;
	if (strcmp(p + len, "ms") == 0)
		scale = 1e-3;
	else if (strcmp(p + len, "s") != 0 && p[len] != '\0')
		return -1;
	if (!isdigit((unsigned char)p[0]) && !isdigit((unsigned char)p[1]))
		return -1;
	errno = 0;
	v = strtod(p, &end);
	if (errno != 0 || end != p + len || !isfinite(v))
		return -1;
	*out = v * scale;
	return 0;
}

int gs_flags_parse_int(const char *s, long long min, long long max,
                       long long *out)
{
	const char *rest;
	bool neg = false;
	uint64_t mag;
	long long v;

	if (!s)
		return -1;
	if (*s == '-') {
		neg = true;
		s++;
	}
	if (parse_u64_digits(s, &rest, &mag) != 0 || *rest != '\0')
		return -1;
	if (neg) {
		if (mag > (uint64_t)LLONG_MAX + 1)
			return -1;
		v = mag == (uint64_t)LLONG_MAX + 1 ? LLONG_MIN
		                                   : -(long long)mag;
	} else {
		if (mag > (uint64_t)LLONG_MAX)
			return -1;
		v = (long long)mag;
	}
	if (v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int set_value(struct gs_flag *f, const char *val, char *why,
                     size_t whylen)
{
	long long iv;
	uint64_t sz;
	double sec;
	size_t i;

	switch (f->type) {
	case GS_FLAG_BOOL:
		*(bool *)f->dst = true;
		return 0;
	case GS_FLAG_INT:
		if (gs_flags_parse_int(val, f->min, f->max, &iv) != 0) {
			snprintf(why, whylen,
			         "--%s needs an integer from %lld to %lld, got '%s'",
			         f->name, f->min, f->max, val);
			return -1;
		}
		*(long *)f->dst = (long)iv;
		return 0;
	case GS_FLAG_SIZE:
		if (gs_flags_parse_size(val, &sz) != 0 ||
		    sz < (uint64_t)f->min || sz > (uint64_t)f->max) {
			snprintf(why, whylen,
			         "--%s needs a size such as 512MiB or 8GiB (%lld to %lld bytes), got '%s'",
			         f->name, f->min, f->max, val);
			return -1;
		}
		*(uint64_t *)f->dst = sz;
		return 0;
	case GS_FLAG_SECONDS:
		if (gs_flags_parse_seconds(val, &sec) != 0) {
			snprintf(why, whylen,
			         "--%s needs seconds such as 5 or 0.5, got '%s'",
			         f->name, val);
			return -1;
		}
		*(double *)f->dst = sec;
		return 0;
	case GS_FLAG_CHOICE:
		for (i = 0; f->choices[i]; i++) {
			if (strcmp(val, f->choices[i]) == 0) {
				*(int *)f->dst = (int)i;
				return 0;
			}
		}
		snprintf(why, whylen, "--%s: unknown value '%s'", f->name, val);
		return -1;
	}
	snprintf(why, whylen, "--%s: bad flag table", f->name);
	return -1;
}

enum gs_flags_result gs_flags_parse(int argc, char **argv,
                                    struct gs_flag *flags, size_t nflags,
                                    char *why, size_t whylen)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0)
			return GS_FLAGS_HELP;
	}
	for (i = 1; i < argc; i++) {
		const char *arg = argv[i], *eq, *val = NULL;
		struct gs_flag *f = NULL;
		size_t namelen, k;

		if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
			snprintf(why, whylen, "unexpected argument '%s'", arg);
			return GS_FLAGS_USAGE;
		}
		arg += 2;
		eq = strchr(arg, '=');
		namelen = eq ? (size_t)(eq - arg) : strlen(arg);
		for (k = 0; k < nflags; k++) {
			if (strlen(flags[k].name) == namelen &&
			    strncmp(flags[k].name, arg, namelen) == 0) {
				f = &flags[k];
				break;
			}
		}
		if (!f) {
			snprintf(why, whylen, "unknown flag --%.*s",
			         (int)namelen, arg);
			return GS_FLAGS_USAGE;
		}
		if (f->type == GS_FLAG_BOOL) {
			if (eq) {
				snprintf(why, whylen, "--%s takes no value",
				         f->name);
				return GS_FLAGS_USAGE;
			}
		} else if (eq) {
			val = eq + 1;
		} else if (i + 1 < argc) {
			val = argv[++i];
		} else {
			snprintf(why, whylen, "--%s needs a value", f->name);
			return GS_FLAGS_USAGE;
		}
		if (set_value(f, val, why, whylen) != 0)
			return GS_FLAGS_USAGE;
		f->given = true;
	}
	return GS_FLAGS_OK;
}
