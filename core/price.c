/*
 * price.c - chargeback price table (see price.h for the matching rules).
 *
 * Patterns know two wildcards, '*' (any run) and '?' (one character), and
 * compare ASCII case-insensitively; the matcher is a small backtracking
 * loop that remembers only the last '*', which is enough for these
 * patterns and runs in O(pattern x text). A rule's specificity is the
 * number of its literal characters, computed when it is looked up (the
 * table holds at most GS_PRICE_MAX_RULES rules; a lookup reads them all).
 */
#include "gs/price.h"

#include "gs/catalog.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static char lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static bool glob_match(const char *pat, const char *s)
{
	const char *star = NULL, *resume = NULL;

	while (*s) {
		if (*pat == '*') {
			star = pat++;
			resume = s;
		} else if (*pat == '?' || (*pat && lower(*pat) == lower(*s))) {
			pat++;
			s++;
		} else if (star) {
			pat = star + 1;
			s = ++resume;
		} else {
			return false;
		}
	}
	while (*pat == '*')
		pat++;
	return *pat == '\0';
}

static int literal_chars(const char *pat)
{
	int n = 0;

	for (; *pat; pat++)
		if (*pat != '*' && *pat != '?')
			n++;
	return n;
}

static bool has_wildcard(const char *pat)
{
	return strpbrk(pat, "*?") != NULL;
}

void gs_price_table_init(struct gs_price_table *t)
{
	memset(t, 0, sizeof(*t));
}

gs_err gs_price_table_add(struct gs_price_table *t, const char *model,
                          const char *mode, double per_gpu_second,
                          double per_gib_second, struct gs_errbuf *eb)
{
	struct gs_price_rule r;
	bool any_mode = false;

	if (model == NULL || model[0] == '\0')
		model = "*";
	if (mode == NULL || mode[0] == '\0')
		mode = "*";
	if (t->n >= GS_PRICE_MAX_RULES)
		return gs_fail(eb, GS_ERR_RANGE,
		               "the price table is full (%d rules)",
		               GS_PRICE_MAX_RULES);
	if (!isfinite(per_gpu_second) || per_gpu_second < 0 ||
	    !isfinite(per_gib_second) || per_gib_second < 0)
		return gs_fail(eb, GS_ERR_RANGE,
		               "prices must be numbers >= 0 (rule %s %s)",
		               model, mode);
	if (strlen(model) >= GS_PRICE_PATTERN_MAX ||
	    strlen(mode) >= GS_PRICE_PATTERN_MAX)
		return gs_fail(eb, GS_ERR_INVALID,
		               "a price pattern is longer than %d characters",
		               GS_PRICE_PATTERN_MAX - 1);
	for (int m = 0; m < GS_MODE__COUNT; m++)
		if (glob_match(mode, gs_mode_name((enum gs_slice_mode)m)))
			any_mode = true;
	if (!any_mode)
		return gs_fail(eb, GS_ERR_INVALID,
		               "price mode '%s' matches no mode (auto, timeslice, mps, mig, mig+timeslice, mig+mps)",
		               mode);
	memset(&r, 0, sizeof(r));
	if (!has_wildcard(model) && gs_catalog_find(model) != NULL)
		model = gs_catalog_find(model)->name;
	memcpy(r.model, model, strlen(model) + 1);
	memcpy(r.mode, mode, strlen(mode) + 1);
	r.per_gpu_second = per_gpu_second;
	r.per_gib_second = per_gib_second;
	t->rule[t->n++] = r;
	return GS_OK;
}

/* Reads one whitespace-separated field; returns its length (0 at end). */
static size_t field(const char **p, const char *end, const char **start)
{
	const char *s = *p;

	while (s < end && (*s == ' ' || *s == '\t' || *s == '\r'))
		s++;
	*start = s;
	while (s < end && *s != ' ' && *s != '\t' && *s != '\r')
		s++;
	*p = s;
	return (size_t)(s - *start);
}

static gs_err parse_price(const char *f, size_t len, int line, double *out,
                          struct gs_errbuf *eb)
{
	char buf[64], *endp;
	double v, per = 1;

	if (len >= sizeof(buf))
		return gs_fail(eb, GS_ERR_PARSE, "line %d: price is too long",
		               line);
	memcpy(buf, f, len);
	buf[len] = '\0';
	if (len > 2 && buf[len - 2] == '/') {
		switch (lower(buf[len - 1])) {
		case 's':
			per = 1;
			break;
		case 'm':
			per = 60;
			break;
		case 'h':
			per = 3600;
			break;
		default:
			return gs_fail(eb, GS_ERR_PARSE,
			               "line %d: price '%s' must end in /s, /m or /h",
			               line, buf);
		}
		buf[len - 2] = '\0';
	}
	v = strtod(buf, &endp);
	if (endp == buf || *endp != '\0' || !isfinite(v) || v < 0)
		return gs_fail(eb, GS_ERR_RANGE,
		               "line %d: price '%.*s' must be a number >= 0",
		               line, (int)len, f);
	*out = v / per;
	return GS_OK;
}

gs_err gs_price_table_parse(struct gs_price_table *t, const char *text,
                            struct gs_errbuf *eb)
{
	const char *p = text;
	int line = 0;

	while (*p) {
		const char *eol = strchr(p, '\n'), *end, *f[5];
		size_t len[5];
		char model[GS_PRICE_PATTERN_MAX], mode[GS_PRICE_PATTERN_MAX];
		double gpu, gib;
		int n = 0;
		gs_err err;

		line++;
		if (eol == NULL)
			eol = p + strlen(p);
		end = memchr(p, '#', (size_t)(eol - p));
		if (end == NULL)
			end = eol;
		while (n < 5 && (len[n] = field(&p, end, &f[n])) > 0)
			n++;
		p = *eol ? eol + 1 : eol;
		if (n == 0)
			continue;
		if (n != 4)
			return gs_fail(eb, GS_ERR_PARSE,
			               "line %d: expected 4 fields (model mode per-GPU-second per-GiB-second), got %s",
			               line, n < 4 ? "fewer" : "more");
		if (len[0] >= sizeof(model) || len[1] >= sizeof(mode))
			return gs_fail(eb, GS_ERR_INVALID,
			               "line %d: pattern longer than %d characters",
			               line, GS_PRICE_PATTERN_MAX - 1);
		memcpy(model, f[0], len[0]);
		model[len[0]] = '\0';
		memcpy(mode, f[1], len[1]);
		mode[len[1]] = '\0';
		err = parse_price(f[2], len[2], line, &gpu, eb);
		if (err == GS_OK)
			err = parse_price(f[3], len[3], line, &gib, eb);
		if (err != GS_OK)
			return err;
		if (t->n >= GS_PRICE_MAX_RULES)
			return gs_fail(eb, GS_ERR_RANGE,
			               "line %d: the price table is full (%d rules)",
			               line, GS_PRICE_MAX_RULES);
		if (gs_price_table_add(t, model, mode, gpu, gib, NULL) != GS_OK)
			return gs_fail(eb, GS_ERR_INVALID,
			               "line %d: price mode '%s' matches no mode (auto, timeslice, mps, mig, mig+timeslice, mig+mps)",
			               line, mode);
	}
	return GS_OK;
}

const struct gs_price_rule *gs_price_lookup(const struct gs_price_table *t,
                                            const char *model,
                                            enum gs_slice_mode mode)
{
	const struct gs_price_rule *best = NULL;
	const char *mode_name = gs_mode_name(mode);
	int best_model = -1, best_mode = -1;

	if (model == NULL)
		model = "";
	for (int i = 0; i < t->n; i++) {
		const struct gs_price_rule *r = &t->rule[i];
		int lm, ld;

		if (!glob_match(r->model, model) ||
		    !glob_match(r->mode, mode_name))
			continue;
		lm = literal_chars(r->model);
		ld = literal_chars(r->mode);
		if (lm > best_model || (lm == best_model && ld >= best_mode)) {
			best = r;
			best_model = lm;
			best_mode = ld;
		}
	}
	return best;
}

gs_err gs_price_cost(const struct gs_price_table *t,
                     const struct gs_usage_record *rec, double *cost,
                     const struct gs_price_rule **rule, struct gs_errbuf *eb)
{
	const struct gs_price_rule *r;

	*cost = 0;
	if (rule != NULL)
		*rule = NULL;
	if (!isfinite(rec->gpu_seconds) || rec->gpu_seconds < 0 ||
	    !isfinite(rec->gib_seconds) || rec->gib_seconds < 0)
		return gs_fail(eb, GS_ERR_RANGE,
		               "usage amounts must be numbers >= 0");
	r = gs_price_lookup(t, rec->model, rec->mode);
	if (r == NULL)
		return gs_fail(eb, GS_ERR_NOT_FOUND,
		               "no price for %s in mode %s (add a rule, or a '* *' default)",
		               rec->model ? rec->model : "(no model)",
		               gs_mode_name(rec->mode));
	*cost = rec->gpu_seconds * r->per_gpu_second +
	        rec->gib_seconds * r->per_gib_second;
	if (rule != NULL)
		*rule = r;
	return GS_OK;
}
