/*
 * gresconf.c - shards per GPU from gres.conf text (see gresconf.h).
 *
 * Host lists and File= expressions share one reader: items separated by
 * commas outside brackets, each "prefix[ranges]suffix" with at most one
 * bracket group, ranges "a" or "a-b" separated by commas. A bound written
 * with leading zeros ("01") fixes the width of the number it matches, as
 * in Slurm's host lists.
 */
#include "gresconf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LINE_MAX_LEN 4096
#define RANGE_MAX    1000000L

/* One item of a list: [p, end). Returns the end of the item. */
static const char *item_end(const char *p)
{
	int depth = 0;

	for (; *p; p++) {
		if (*p == '[')
			depth++;
		else if (*p == ']')
			depth--;
		else if (*p == ',' && depth == 0)
			break;
	}
	return p;
}

/* Reads a number of at most 7 digits from [p, end). OUT: *v, *width. */
static const char *read_num(const char *p, const char *end, long *v, int *width)
{
	const char *s = p;

	*v = 0;
	while (p < end && isdigit((unsigned char)*p) && p - s < 7) {
		*v = *v * 10 + (*p - '0');
		p++;
	}
	*width = (int)(p - s);
	return *width > 0 ? p : NULL;
}

static int digits(long v)
{
	int d = 1;

	while (v >= 10) {
		v /= 10;
		d++;
	}
	return d;
}

/*
 * Walks the ranges in [p, end) (the inside of a bracket). With `num`
 * >= 0, returns 1 when it is in a range, written `num_width` digits
 * wide as the range's padding wants, else 0; with `num` < 0 returns how
 * many numbers the ranges hold. -1 when malformed.
 */
static long walk_ranges(const char *p, const char *end, long num, int num_width)
{
	long count = 0;

	while (p < end) {
		long a, b;
		int wa, wb;

		p = read_num(p, end, &a, &wa);
		if (p == NULL)
			return -1;
		b = a;
		if (p < end && *p == '-') {
			p = read_num(p + 1, end, &b, &wb);
			if (p == NULL || b < a)
				return -1;
		}
		if (p < end && *p != ',')
			return -1;
		if (p < end)
			p++;
		if (num < 0) {
			count += b - a + 1;
			if (count > RANGE_MAX)
				return -1;
			continue;
		}
		if (num < a || num > b)
			continue;
		/* "01-16" pads to two digits; "1-16" does not pad. */
		if (wa > digits(a)
		        ? num_width == (digits(num) > wa ? digits(num) : wa)
		        : num_width == digits(num))
			return 1;
	}
	return num < 0 ? count : 0;
}

/* Splits item [p, end) at its bracket. OUT: the pieces. -1: malformed,
 * 0: no bracket, 1: bracket. */
static int split_item(const char *p, const char *end, const char **lb,
                      const char **rb)
{
	const char *q;

	*lb = *rb = NULL;
	for (q = p; q < end; q++) {
		if (*q == '[') {
			if (*lb != NULL)
				return -1;
			*lb = q;
		} else if (*q == ']') {
			if (*lb == NULL || *rb != NULL)
				return -1;
			*rb = q;
		}
	}
	if (*lb == NULL)
		return 0;
	if (*rb == NULL || *rb == *lb + 1)
		return -1;
	return 1;
}

bool gs_gresconf_hostlist_has(const char *list, const char *name)
{
	const char *p = list;
	size_t nlen = strlen(name);

	while (*p) {
		const char *end = item_end(p), *lb, *rb;
		int k = split_item(p, end, &lb, &rb);

		if (k < 0)
			return false;
		if (k == 0) {
			if ((size_t)(end - p) == nlen &&
			    strncmp(p, name, nlen) == 0)
				return true;
		} else {
			size_t plen = (size_t)(lb - p),
			       slen = (size_t)(end - rb - 1);

			if (nlen > plen + slen && strncmp(name, p, plen) == 0 &&
			    strncmp(name + nlen - slen, rb + 1, slen) == 0) {
				const char *d = name + plen,
				           *dend = name + nlen - slen;
				long v;
				int w;

				if (read_num(d, dend, &v, &w) == dend &&
				    walk_ranges(lb + 1, rb, v, w) == 1)
					return true;
			}
		}
		p = *end ? end + 1 : end;
	}
	return false;
}

int gs_gresconf_file_count(const char *expr)
{
	const char *p = expr;
	long total = 0;

	if (*p == '\0')
		return -1;
	while (*p) {
		const char *end = item_end(p), *lb, *rb;
		int k = split_item(p, end, &lb, &rb);

		if (k < 0 || end == p)
			return -1;
		if (k == 0) {
			total++;
		} else {
			long n = walk_ranges(lb + 1, rb, -1, 0);

			if (n <= 0)
				return -1;
			total += n;
		}
		if (total > RANGE_MAX)
			return -1;
		p = *end ? end + 1 : end;
	}
	return (int)total;
}

/* A gres.conf count: digits with an optional K, M or G (x1024). */
static bool parse_count(const char *s, long *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || v < 0)
		return false;
	switch (*end) {
	case 'k':
	case 'K':
		v *= 1024;
		end++;
		break;
	case 'm':
	case 'M':
		v *= 1024L * 1024;
		end++;
		break;
	case 'g':
	case 'G':
		v *= 1024L * 1024 * 1024;
		end++;
		break;
	default:
		break;
	}
	if (*end != '\0' || v > RANGE_MAX * 1000)
		return false;
	*out = v;
	return true;
}

struct shard_line {
	const char *name, *count, *file, *node;
};

/* Splits `line` (modified) into its key=value words. */
static void read_words(char *line, struct shard_line *sl)
{
	char *save = NULL, *w;

	memset(sl, 0, sizeof(*sl));
	for (w = strtok_r(line, " \t\r", &save); w != NULL;
	     w = strtok_r(NULL, " \t\r", &save)) {
		char *eq = strchr(w, '=');

		if (eq == NULL)
			continue;
		*eq = '\0';
		if (strcasecmp(w, "Name") == 0)
			sl->name = eq + 1;
		else if (strcasecmp(w, "Count") == 0)
			sl->count = eq + 1;
		else if (strcasecmp(w, "File") == 0 ||
		         strcasecmp(w, "Files") == 0)
			sl->file = eq + 1;
		else if (strcasecmp(w, "MultipleFiles") == 0)
			sl->file = "one"; /* several files, one GPU */
		else if (strcasecmp(w, "NodeName") == 0)
			sl->node = eq + 1;
	}
}

gs_err gs_gresconf_shards_per_gpu(const char *text, const char *node,
                                  int *per_gpu, struct gs_errbuf *eb)
{
	const char *p = text;
	int lineno = 0, found = 0;

	*per_gpu = 0;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char line[LINE_MAX_LEN], *hash;
		struct shard_line sl;
		long count, per;
		int files;

		lineno++;
		if (len >= sizeof(line))
			return gs_fail(eb, GS_ERR_PARSE,
			               "gres.conf line %d is too long", lineno);
		memcpy(line, p, len);
		line[len] = '\0';
		p = nl ? nl + 1 : p + len;
		hash = strchr(line, '#');
		if (hash != NULL)
			*hash = '\0';
		read_words(line, &sl);
		if (sl.name == NULL || strcmp(sl.name, "shard") != 0)
			continue;
		if (sl.node != NULL &&
		    (node == NULL || !gs_gresconf_hostlist_has(sl.node, node)))
			continue;
		if (sl.count == NULL || !parse_count(sl.count, &count) ||
		    count < 1)
			return gs_fail(
			    eb, GS_ERR_PARSE,
			    "gres.conf line %d: a shard line needs Count=N",
			    lineno);
		if (sl.file == NULL)
			return gs_fail(eb, GS_ERR_UNSUPPORTED,
			               "gres.conf line %d: shards without File= are not tied to a GPU",
			               lineno);
		files = strcmp(sl.file, "one") == 0
		            ? 1
		            : gs_gresconf_file_count(sl.file);
		if (files < 1)
			return gs_fail(
			    eb, GS_ERR_PARSE,
			    "gres.conf line %d: File=%s not understood", lineno,
			    sl.file);
		if (count % files != 0)
			return gs_fail(eb, GS_ERR_UNSUPPORTED,
			               "gres.conf line %d: Count=%ld does not split evenly over %d GPUs",
			               lineno, count, files);
		per = count / files;
		if (found != 0 && per != found)
			return gs_fail(
			    eb, GS_ERR_UNSUPPORTED,
			    "gres.conf line %d: %ld shards per GPU where an earlier line has %d; set shards_per_gpu",
			    lineno, per, found);
		found = (int)per;
	}
	*per_gpu = found;
	return GS_OK;
}
