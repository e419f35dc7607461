/*
 * spec.c - slice specs: parsing key/values, checking, canonical printing.
 *
 * Every parser here is strict: the whole text must read, or the caller
 * gets GS_ERR_PARSE/GS_ERR_RANGE and one line naming the value and what
 * was expected. A setter writes the spec only after its value parsed, so a
 * failed gs_spec_set leaves the spec as it was. Pure: no I/O, no locale
 * (ctype calls only see ASCII decisions that do not depend on it).
 */
#include "gs/spec.h"

#include "gs/catalog.h"
#include "gs/slice_limits.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const mode_names[GS_MODE__COUNT] = {
    [GS_MODE_AUTO] = "auto",
    [GS_MODE_TIMESLICE] = "timeslice",
    [GS_MODE_MPS] = "mps",
    [GS_MODE_MIG] = "mig",
    [GS_MODE_MIG_TIMESLICE] = "mig+timeslice",
    [GS_MODE_MIG_MPS] = "mig+mps",
};

static const char *const prio_names[GS_PRIORITY__COUNT] = {
    [GS_PRIORITY_LOW] = "low",
    [GS_PRIORITY_NORMAL] = "normal",
    [GS_PRIORITY_HIGH] = "high",
};

static const char *const iso_names[GS_ISOLATION__COUNT] = {
    [GS_ISOLATION_NONE] = "none",
    [GS_ISOLATION_MEMORY] = "memory",
    [GS_ISOLATION_HARD] = "hard",
    [GS_ISOLATION_EXCLUSIVE] = "exclusive",
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_alnum(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static char lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/*
 * Reads a run of decimal digits into *out, saturating just above
 * UINT64_MAX so callers can say "too large" without overflowing. Returns
 * the number of digits read.
 */
static size_t read_digits(const char *s, unsigned __int128 *out)
{
	const unsigned __int128 sat = (unsigned __int128)UINT64_MAX + 1;
	unsigned __int128 v = 0;
	size_t n = 0;

	for (; is_digit(s[n]); n++) {
		v = v * 10 + (unsigned)(s[n] - '0');
		if (v > sat)
			v = sat;
	}
	*out = v;
	return n;
}

/* As read_digits, clamped to cap + 1 (cap < UINT64_MAX). */
static size_t read_small(const char *s, uint64_t cap, uint64_t *out)
{
	unsigned __int128 v;
	size_t n = read_digits(s, &v);

	*out = v > cap ? cap + 1 : (uint64_t)v;
	return n;
}

/* ---- memory */

struct mem_unit {
	const char *suffix;
	unsigned shift;
};

/* Binary units only; longest spellings first is not needed (exact match). */
static const struct mem_unit mem_units[] = {
    {"", 0},    {"b", 0},    {"k", 10},  {"ki", 10},  {"kb", 10}, {"kib", 10},
    {"m", 20},  {"mi", 20},  {"mb", 20}, {"mib", 20}, {"g", 30},  {"gi", 30},
    {"gb", 30}, {"gib", 30}, {"t", 40},  {"ti", 40},  {"tb", 40}, {"tib", 40},
};

static gs_err mem_not_understood(struct gs_errbuf *eb, const char *text)
{
	return gs_fail(eb, GS_ERR_PARSE,
	               "memory '%s' not understood (expected e.g. 512MiB, 8GiB, 8G, 1.5GiB or a number of bytes)",
	               text);
}

gs_err gs_parse_memory(const char *text, uint64_t *bytes, struct gs_errbuf *eb)
{
	unsigned __int128 whole, frac = 0;
	uint64_t scale = 1;
	const char *p = text;
	size_t n, nfrac = 0;
	char suffix[4];
	unsigned shift = 0;
	bool found = false;
	unsigned __int128 total;

	if (text == NULL || *text == '\0')
		return gs_fail(eb, GS_ERR_PARSE, "memory is empty");
	n = read_digits(p, &whole);
	if (n == 0)
		return mem_not_understood(eb, text);
	if (whole > UINT64_MAX)
		return gs_fail(eb, GS_ERR_RANGE, "memory '%s' is too large",
		               text);
	p += n;
	if (*p == '.') {
		p++;
		nfrac = read_digits(p, &frac);
		if (nfrac == 0)
			return mem_not_understood(eb, text);
		if (nfrac > 9)
			return gs_fail(eb, GS_ERR_PARSE,
			               "memory '%s' has more than 9 decimals",
			               text);
		for (size_t i = 0; i < nfrac; i++)
			scale *= 10;
		p += nfrac;
	}
	if (strlen(p) >= sizeof(suffix))
		return mem_not_understood(eb, text);
	for (n = 0; p[n]; n++)
		suffix[n] = lower(p[n]);
	suffix[n] = '\0';
	for (size_t i = 0; i < sizeof(mem_units) / sizeof(mem_units[0]); i++) {
		if (strcmp(suffix, mem_units[i].suffix) == 0) {
			shift = mem_units[i].shift;
			found = true;
			break;
		}
	}
	if (!found)
		return mem_not_understood(eb, text);
	total = whole << shift;
	if (nfrac > 0) {
		unsigned __int128 f = frac << shift;

		if (f % scale != 0)
			return gs_fail(eb, GS_ERR_PARSE,
			               "memory '%s' is not a whole number of bytes",
			               text);
		total += f / scale;
	}
	/* int64 range: the daemon stores bytes in SQLite and JSON integers. */
	if (total > INT64_MAX)
		return gs_fail(eb, GS_ERR_RANGE, "memory '%s' is too large",
		               text);
	if (total == 0)
		return gs_fail(eb, GS_ERR_RANGE,
		               "memory must be greater than 0, got '%s'", text);
	*bytes = (uint64_t)total;
	return GS_OK;
}

int gs_format_memory(uint64_t bytes, char *buf, size_t size)
{
	static const char *const units[] = {"TiB", "GiB", "MiB", "KiB"};
	static const unsigned shifts[] = {40, 30, 20, 10};

	for (size_t i = 0; i < 4 && bytes != 0; i++) {
		uint64_t unit = (uint64_t)1 << shifts[i];

		if (bytes % unit == 0)
			return snprintf(buf, size, "%llu%s",
			                (unsigned long long)(bytes / unit),
			                units[i]);
	}
	return snprintf(buf, size, "%llu", (unsigned long long)bytes);
}

/* ---- compute, weight */

gs_err gs_parse_compute(const char *text, int *pct, struct gs_errbuf *eb)
{
	uint64_t v;
	size_t n;

	if (text == NULL || *text == '\0')
		return gs_fail(eb, GS_ERR_PARSE, "compute is empty");
	n = read_small(text, 1000000, &v);
	if (n == 0 ||
	    !(text[n] == '\0' || (text[n] == '%' && text[n + 1] == '\0')))
		return gs_fail(eb, GS_ERR_PARSE,
		               "compute '%s' not understood (expected a whole percentage such as 25 or 25%%)",
		               text);
	if (v < 1 || v > 100) {
		if (v > 1000000)
			return gs_fail(eb, GS_ERR_RANGE,
			               "compute must be 1..100, got %s", text);
		return gs_fail(eb, GS_ERR_RANGE,
		               "compute must be 1..100, got %llu",
		               (unsigned long long)v);
	}
	*pct = (int)v;
	return GS_OK;
}

static gs_err parse_weight(const char *text, int *weight, struct gs_errbuf *eb)
{
	uint64_t v;
	size_t n = read_small(text, 1000000, &v);

	if (n == 0 || text[n] != '\0')
		return gs_fail(eb, GS_ERR_PARSE,
		               "weight '%s' not understood (expected a whole number 1..%d)",
		               text, GS_SPEC_WEIGHT_MAX);
	if (v < 1 || v > GS_SPEC_WEIGHT_MAX) {
		if (v > 1000000)
			return gs_fail(eb, GS_ERR_RANGE,
			               "weight must be 1..%d, got %s",
			               GS_SPEC_WEIGHT_MAX, text);
		return gs_fail(eb, GS_ERR_RANGE,
		               "weight must be 1..%d, got %llu",
		               GS_SPEC_WEIGHT_MAX, (unsigned long long)v);
	}
	*weight = (int)v;
	return GS_OK;
}

/* ---- enums */

static int find_name(const char *const *names, int count, const char *text)
{
	for (int i = 0; i < count; i++)
		if (text != NULL && strcasecmp(names[i], text) == 0)
			return i;
	return -1;
}

const char *gs_mode_name(enum gs_slice_mode mode)
{
	if ((unsigned)mode >= GS_MODE__COUNT)
		return "?";
	return mode_names[mode];
}

gs_err gs_parse_mode(const char *text, enum gs_slice_mode *mode,
                     struct gs_errbuf *eb)
{
	int i = find_name(mode_names, GS_MODE__COUNT, text);

	if (i < 0)
		return gs_fail(eb, GS_ERR_PARSE,
		               "unknown mode '%s' (expected auto|timeslice|mps|mig|mig+timeslice|mig+mps)",
		               text ? text : "");
	*mode = (enum gs_slice_mode)i;
	return GS_OK;
}

const char *gs_priority_name(enum gs_priority prio)
{
	if ((unsigned)prio >= GS_PRIORITY__COUNT)
		return "?";
	return prio_names[prio];
}

gs_err gs_parse_priority(const char *text, enum gs_priority *prio,
                         struct gs_errbuf *eb)
{
	int i = find_name(prio_names, GS_PRIORITY__COUNT, text);

	if (i < 0)
		return gs_fail(eb, GS_ERR_PARSE,
		               "unknown priority '%s' (expected high|normal|low)",
		               text ? text : "");
	*prio = (enum gs_priority)i;
	return GS_OK;
}

const char *gs_isolation_name(enum gs_isolation iso)
{
	if ((unsigned)iso >= GS_ISOLATION__COUNT)
		return "?";
	return iso_names[iso];
}

const char *gs_swap_mode_name(enum gs_swap_mode swap)
{
	if ((unsigned)swap >= GS_SWAP__COUNT)
		return "?";
	return swap == GS_SWAP_NEVER ? "never" : "allow";
}

gs_err gs_parse_isolation(const char *text, enum gs_isolation *iso,
                          struct gs_errbuf *eb)
{
	int i = find_name(iso_names, GS_ISOLATION__COUNT, text);

	if (i < 0)
		return gs_fail(eb, GS_ERR_PARSE,
		               "unknown isolation '%s' (expected none|memory|hard|exclusive)",
		               text ? text : "");
	*iso = (enum gs_isolation)i;
	return GS_OK;
}

bool gs_mode_is_mig(enum gs_slice_mode mode)
{
	return mode == GS_MODE_MIG || mode == GS_MODE_MIG_TIMESLICE ||
	       mode == GS_MODE_MIG_MPS;
}

int gs_gpu_index_of(const char *sel, int n,
                    const char *(*uuid_of)(const void *ctx, int i, int k),
                    const void *ctx)
{
	const char *u;
	char *end;
	long v;

	if (sel == NULL || sel[0] == '\0')
		return -1;
	v = strtol(sel, &end, 10);
	if (*end == '\0' && end != sel)
		return v >= 0 && v < n ? (int)v : -1;
	for (int i = 0; i < n; i++) {
		u = uuid_of(ctx, i, -1);
		if (u != NULL && strcmp(u, sel) == 0)
			return i;
		for (int k = 0; (u = uuid_of(ctx, i, k)) != NULL; k++)
			if (strcmp(u, sel) == 0)
				return i;
	}
	return -1;
}

/* ---- names, profiles, GPU selectors */

static gs_err parse_name(const char *text, char *out, struct gs_errbuf *eb)
{
	size_t n = strlen(text);

	if (n == 0 || n >= GS_SPEC_NAME_MAX)
		return gs_fail(eb, GS_ERR_RANGE,
		               "name must be 1..%d characters, got %zu",
		               GS_SPEC_NAME_MAX - 1, n);
	if (!is_alnum(text[0]))
		return gs_fail(eb, GS_ERR_PARSE,
		               "name '%s' must start with a letter or digit",
		               text);
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(text[i]) && text[i] != '.' && text[i] != '_' &&
		    text[i] != '-')
			return gs_fail(eb, GS_ERR_PARSE,
			               "name '%s' may hold only letters, digits, '.', '_' and '-'",
			               text);
	memcpy(out, text, n + 1);
	return GS_OK;
}

/*
 * MIG profile grammar (mig-parted's): [<C>c.]<G>g.<GB>gb[(+|-)attr[,attr]]
 * with lowercase alphanumeric attributes that may hold inner dots. Stored
 * lowercased; whether the GPU has such a profile is the planner's check.
 */
static gs_err parse_profile(const char *text, char *out, struct gs_errbuf *eb)
{
	char buf[GS_SPEC_PROFILE_MAX];
	size_t n = strlen(text), i = 0, d;
	uint64_t v;

	if (n == 0 || n >= sizeof(buf))
		goto bad;
	for (size_t k = 0; k <= n; k++)
		buf[k] = lower(text[k]);
	d = read_small(buf, 1000, &v);
	if (d == 0 || v == 0)
		goto bad;
	i = d;
	if (buf[i] == 'c') {
		if (buf[i + 1] != '.')
			goto bad;
		i += 2;
		d = read_small(buf + i, 1000, &v);
		if (d == 0 || v == 0)
			goto bad;
		i += d;
	}
	if (buf[i] != 'g' || buf[i + 1] != '.')
		goto bad;
	i += 2;
	d = read_small(buf + i, 100000, &v);
	if (d == 0 || v == 0)
		goto bad;
	i += d;
	if (buf[i] != 'g' || buf[i + 1] != 'b')
		goto bad;
	i += 2;
	if (buf[i] == '+' || buf[i] == '-') {
		bool start = true;

		i++;
		for (; buf[i]; i++) {
			char c = buf[i];

			if (start) {
				if (!(c >= 'a' && c <= 'z'))
					goto bad;
				start = false;
			} else if (c == ',') {
				if (buf[i - 1] == '.')
					goto bad;
				start = true;
			} else if (!(is_alnum(c) || c == '.')) {
				goto bad;
			}
		}
		if (start || buf[i - 1] == '.')
			goto bad;
	}
	if (buf[i] != '\0')
		goto bad;
	memcpy(out, buf, n + 1);
	return GS_OK;
bad:
	return gs_fail(eb, GS_ERR_PARSE,
	               "mig-profile '%s' not understood (expected e.g. 1g.10gb, 3g.40gb, 1g.10gb+me)",
	               text);
}

int gs_format_gpu_selector(const struct gs_gpu_selector *sel, char *buf,
                           size_t size)
{
	switch (sel->kind) {
	case GS_GPU_INDEX:
		return snprintf(buf, size, "%d", sel->index);
	case GS_GPU_UUID:
		return snprintf(buf, size, "%s", sel->uuid);
	case GS_GPU_MODEL:
		return snprintf(buf, size, "%s", sel->model);
	case GS_GPU_ANY:
		break;
	}
	return snprintf(buf, size, "any");
}

gs_err gs_parse_gpu_selector(const char *text, struct gs_gpu_selector *sel,
                             struct gs_errbuf *eb)
{
	struct gs_gpu_selector s = {.kind = GS_GPU_ANY};
	size_t n = text ? strlen(text) : 0;
	uint64_t v;

	if (n == 0)
		return gs_fail(eb, GS_ERR_PARSE, "gpu is empty");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)text[i] <= ' ' || text[i] == ',' ||
		    text[i] == '=' || (unsigned char)text[i] >= 0x7f)
			return gs_fail(eb, GS_ERR_PARSE,
			               "gpu '%s' may not hold spaces, ',' or '=' (write a model as e.g. H100-80GB)",
			               text);
	if (strcasecmp(text, "any") == 0) {
		*sel = s;
		return GS_OK;
	}
	if (read_small(text, 100000, &v) == n) {
		if (v > 1023)
			return gs_fail(eb, GS_ERR_RANGE,
			               "gpu index must be 0..1023, got %s",
			               text);
		s.kind = GS_GPU_INDEX;
		s.index = (int)v;
	} else if (strncmp(text, "GPU-", 4) == 0 ||
	           strncmp(text, "MIG-", 4) == 0) {
		if (n >= sizeof(s.uuid))
			return gs_fail(eb, GS_ERR_RANGE,
			               "gpu UUID is longer than %zu characters",
			               sizeof(s.uuid) - 1);
		s.kind = GS_GPU_UUID;
		memcpy(s.uuid, text, n + 1);
	} else {
		const struct gs_gpu_model *m = gs_catalog_find(text);
		const char *name = m ? m->name : text;

		if (strlen(name) >= sizeof(s.model))
			return gs_fail(
			    eb, GS_ERR_RANGE,
			    "gpu model is longer than %zu characters",
			    sizeof(s.model) - 1);
		s.kind = GS_GPU_MODEL;
		memcpy(s.model, name, strlen(name) + 1);
	}
	*sel = s;
	return GS_OK;
}

/* ---- the spec */

void gs_spec_init(struct gs_slice_spec *spec)
{
	memset(spec, 0, sizeof(*spec));
	spec->priority = GS_PRIORITY_NORMAL;
	spec->weight = 1;
	spec->mode = GS_MODE_AUTO;
	spec->isolation = GS_ISOLATION_NONE;
	spec->gpu.kind = GS_GPU_ANY;
}

static gs_err parse_mig_start(const char *value, struct gs_slice_spec *s,
                              struct gs_errbuf *eb)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(value, &end, 10);
	if (value[0] < '0' || value[0] > '9' || *end != '\0' || errno != 0)
		return gs_fail(eb, GS_ERR_PARSE,
		               "mig-start '%s' is not a whole number", value);
	if (v < 0 || v > GS_SPEC_MIG_START_MAX)
		return gs_fail(eb, GS_ERR_RANGE, "mig-start must be 0..%d, got %ld",
		               GS_SPEC_MIG_START_MAX, v);
	s->has_mig_start = true;
	s->mig_start = (int)v;
	return GS_OK;
}

gs_err gs_spec_set(struct gs_slice_spec *spec, const char *key,
                   const char *value, struct gs_errbuf *eb)
{
	struct gs_slice_spec s = *spec;
	gs_err err;

	if (key == NULL || value == NULL)
		return gs_fail(eb, GS_ERR_INVALID, "missing key or value");
	if (strcmp(key, "name") == 0)
		err = parse_name(value, s.name, eb);
	else if (strcmp(key, "memory") == 0)
		err = gs_parse_memory(value, &s.memory_bytes, eb);
	else if (strcmp(key, "compute") == 0)
		err = gs_parse_compute(value, &s.compute_pct, eb);
	else if (strcmp(key, "priority") == 0)
		err = gs_parse_priority(value, &s.priority, eb);
	else if (strcmp(key, "weight") == 0)
		err = parse_weight(value, &s.weight, eb);
	else if (strcmp(key, "mode") == 0)
		err = gs_parse_mode(value, &s.mode, eb);
	else if (strcmp(key, "mig-profile") == 0 ||
	         strcmp(key, "mig_profile") == 0)
		err = parse_profile(value, s.mig_profile, eb);
	else if (strcmp(key, "mig-start") == 0 ||
	         strcmp(key, "mig_start") == 0)
		err = parse_mig_start(value, &s, eb);
	else if (strcmp(key, "compute-mode") == 0 ||
	         strcmp(key, "compute_mode") == 0) {
		if (strcasecmp(value, "strict") == 0)
			s.compute_mode = GS_COMPUTE_STRICT;
		else if (strcasecmp(value, "share") == 0)
			s.compute_mode = GS_COMPUTE_SHARE;
		else
			return gs_fail(eb, GS_ERR_PARSE,
			               "unknown compute-mode '%s' (expected strict|share)",
			               value);
		err = GS_OK;
	} else if (strcmp(key, "swap") == 0) {
		if (strcasecmp(value, "allow") == 0)
			s.swap = GS_SWAP_ALLOW;
		else if (strcasecmp(value, "never") == 0)
			s.swap = GS_SWAP_NEVER;
		else
			return gs_fail(eb, GS_ERR_PARSE,
			               "unknown swap '%s' (expected allow|never)",
			               value);
		err = GS_OK;
	} else if (strcmp(key, "isolation") == 0)
		err = gs_parse_isolation(value, &s.isolation, eb);
	else if (strcmp(key, "gpu") == 0)
		err = gs_parse_gpu_selector(value, &s.gpu, eb);
	else
		return gs_fail(
		    eb, GS_ERR_INVALID,
		    "unknown key '%s' (expected name|memory|compute|priority|weight|mode|mig-profile|mig-start|compute-mode|isolation|gpu|swap)",
		    key);
	if (err != GS_OK)
		return err;
	*spec = s;
	return GS_OK;
}

static bool is_sep(char c)
{
	return c == ',' || c == ' ' || c == '\t' || c == '\n';
}

gs_err gs_spec_parse_kvlist(struct gs_slice_spec *spec, const char *text,
                            struct gs_errbuf *eb)
{
	const char *p = text;

	if (text == NULL)
		return gs_fail(eb, GS_ERR_INVALID, "no key=value list");
	while (*p) {
		char tok[256];
		size_t n = 0;
		char *eq;
		gs_err err;

		while (is_sep(*p))
			p++;
		if (*p == '\0')
			break;
		while (p[n] && !is_sep(p[n]))
			n++;
		if (n >= sizeof(tok))
			return gs_fail(eb, GS_ERR_RANGE,
			               "key=value pair longer than %zu characters",
			               sizeof(tok) - 1);
		memcpy(tok, p, n);
		tok[n] = '\0';
		p += n;
		eq = strchr(tok, '=');
		if (eq == NULL || eq == tok)
			return gs_fail(eb, GS_ERR_PARSE,
			               "expected key=value, got '%s'", tok);
		*eq = '\0';
		err = gs_spec_set(spec, tok, eq + 1, eb);
		if (err != GS_OK)
			return err;
	}
	return GS_OK;
}

gs_err gs_spec_validate(const struct gs_slice_spec *spec, struct gs_errbuf *eb)
{
	enum gs_slice_mode m = spec->mode;

	if ((unsigned)m >= GS_MODE__COUNT ||
	    (unsigned)spec->priority >= GS_PRIORITY__COUNT ||
	    (unsigned)spec->isolation >= GS_ISOLATION__COUNT)
		return gs_fail(eb, GS_ERR_INVALID,
		               "spec holds an unknown enum");
	if (spec->compute_pct < 0 || spec->compute_pct > 100)
		return gs_fail(eb, GS_ERR_RANGE,
		               "compute must be 1..100, got %d",
		               spec->compute_pct);
	if (spec->weight < 1 || spec->weight > GS_SPEC_WEIGHT_MAX)
		return gs_fail(eb, GS_ERR_RANGE, "weight must be 1..%d, got %d",
		               GS_SPEC_WEIGHT_MAX, spec->weight);
	if (spec->mig_profile[0] && !(m == GS_MODE_AUTO || gs_mode_is_mig(m)))
		return gs_fail(eb, GS_ERR_INVALID,
		               "mig-profile needs mode mig, mig+timeslice, mig+mps or auto, got mode %s",
		               gs_mode_name(m));
	if ((unsigned)spec->compute_mode >= GS_COMPUTE__COUNT)
		return gs_fail(eb, GS_ERR_INVALID,
		               "compute-mode must be strict or share");
	if ((unsigned)spec->swap >= GS_SWAP__COUNT)
		return gs_fail(eb, GS_ERR_INVALID, "swap must be allow or never");
	if (spec->has_mig_start &&
	    (spec->mig_start < 0 || spec->mig_start > GS_SPEC_MIG_START_MAX))
		return gs_fail(eb, GS_ERR_RANGE, "mig-start must be 0..%d, got %d",
		               GS_SPEC_MIG_START_MAX, spec->mig_start);
	if (spec->has_mig_start && (!spec->mig_profile[0] || !gs_mode_is_mig(m)))
		return gs_fail(eb, GS_ERR_INVALID,
		               "mig-start needs mig-profile and mode mig, mig+timeslice or mig+mps (got mode %s%s)",
		               gs_mode_name(m),
		               spec->mig_profile[0] ? "" : ", no mig-profile");
	if (spec->isolation == GS_ISOLATION_HARD &&
	    !(m == GS_MODE_AUTO || m == GS_MODE_MIG))
		return gs_fail(eb, GS_ERR_INVALID,
		               "isolation hard needs a MIG instance of its own (mode mig or auto), got mode %s",
		               gs_mode_name(m));
	if (spec->isolation == GS_ISOLATION_EXCLUSIVE &&
	    !(m == GS_MODE_AUTO || m == GS_MODE_TIMESLICE))
		return gs_fail(eb, GS_ERR_INVALID,
		               "isolation exclusive takes a whole GPU (mode auto or timeslice), got mode %s",
		               gs_mode_name(m));
	if (spec->isolation == GS_ISOLATION_EXCLUSIVE && spec->mig_profile[0])
		return gs_fail(eb, GS_ERR_INVALID,
		               "isolation exclusive takes a whole GPU; drop mig-profile %s",
		               spec->mig_profile);
	return GS_OK;
}

int gs_spec_format(const struct gs_slice_spec *spec, char *buf, size_t size)
{
	char mem[32], gpu[GS_SPEC_UUID_MAX], out[GS_SPEC_FORMAT_MAX];
	int n = 0;

#define PUT(...)                                                               \
	do {                                                                   \
		if (n < (int)sizeof(out))                                      \
			n += snprintf(out + n, sizeof(out) - (size_t)n,        \
			              __VA_ARGS__);                            \
	} while (0)
	if (spec->name[0])
		PUT("name=%s ", spec->name);
	if (spec->memory_bytes) {
		(void)gs_format_memory(spec->memory_bytes, mem, sizeof(mem));
		PUT("memory=%s ", mem);
	}
	if (spec->compute_pct)
		PUT("compute=%d ", spec->compute_pct);
	PUT("priority=%s weight=%d mode=%s ", gs_priority_name(spec->priority),
	    spec->weight, gs_mode_name(spec->mode));
	if (spec->mig_profile[0])
		PUT("mig-profile=%s ", spec->mig_profile);
	if (spec->has_mig_start)
		PUT("mig-start=%d ", spec->mig_start);
	if (spec->compute_mode == GS_COMPUTE_SHARE)
		PUT("compute-mode=share ");
	PUT("isolation=%s", gs_isolation_name(spec->isolation));
	if (spec->gpu.kind != GS_GPU_ANY) {
		(void)gs_format_gpu_selector(&spec->gpu, gpu, sizeof(gpu));
		PUT(" gpu=%s", gpu);
	}
	if (spec->swap == GS_SWAP_NEVER)
		PUT(" swap=never");
#undef PUT
	return snprintf(buf, size, "%s", out);
}

bool gs_spec_equal(const struct gs_slice_spec *a, const struct gs_slice_spec *b)
{
	if (strcmp(a->name, b->name) != 0 ||
	    a->memory_bytes != b->memory_bytes ||
	    a->compute_pct != b->compute_pct || a->priority != b->priority ||
	    a->weight != b->weight || a->mode != b->mode ||
	    strcmp(a->mig_profile, b->mig_profile) != 0 ||
	    a->has_mig_start != b->has_mig_start ||
	    (a->has_mig_start && a->mig_start != b->mig_start) ||
	    a->compute_mode != b->compute_mode ||
	    a->isolation != b->isolation || a->gpu.kind != b->gpu.kind ||
	    a->swap != b->swap)
		return false;
	switch (a->gpu.kind) {
	case GS_GPU_INDEX:
		return a->gpu.index == b->gpu.index;
	case GS_GPU_UUID:
		return strcmp(a->gpu.uuid, b->gpu.uuid) == 0;
	case GS_GPU_MODEL:
		return strcmp(a->gpu.model, b->gpu.model) == 0;
	case GS_GPU_ANY:
		break;
	}
	return true;
}

gs_err gs_spec_limits(const struct gs_slice_spec *spec,
                      struct gs_slice_limits *out, struct gs_errbuf *eb)
{
	struct gs_slice_limits l;

	if (spec->compute_pct < 0 || spec->compute_pct > 100)
		return gs_fail(eb, GS_ERR_RANGE, "compute %d%% is not 1..100",
		               spec->compute_pct);
	if (spec->weight < 1 || spec->weight > GS_SPEC_WEIGHT_MAX)
		return gs_fail(eb, GS_ERR_RANGE, "weight %d is not 1..%d",
		               spec->weight, GS_SPEC_WEIGHT_MAX);
	if ((unsigned)spec->priority >= GS_PRIORITY__COUNT ||
	    (unsigned)spec->compute_mode >= GS_COMPUTE__COUNT)
		return gs_fail(eb, GS_ERR_RANGE, "priority or compute mode out of range");
	memset(&l, 0, sizeof(l));
	(void)snprintf(l.name, sizeof(l.name), "%s", spec->name);
	l.mem_limit = spec->memory_bytes;
	l.compute_pct = (uint32_t)spec->compute_pct;
	/* One list: enum gs_region_priority is enum gs_priority. */
	l.priority = (uint32_t)spec->priority;
	l.weight = (uint32_t)spec->weight;
	l.mode = spec->compute_mode == GS_COMPUTE_SHARE
	             ? GS_REGION_COMPUTE_SHARE
	             : GS_REGION_COMPUTE_STRICT;
	*out = l;
	return GS_OK;
}
