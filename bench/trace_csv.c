/*
 * trace_csv.c - the CSV reader for trace node and task lists.
 *
 * A small RFC 4180 subset: comma-separated fields, optionally in double
 * quotes ("" inside quotes is one quote), LF or CRLF line ends, a header
 * line first, blank lines skipped, a UTF-8 byte order mark tolerated.
 * A quoted field may not span lines. Every row must have as many fields
 * as the header. Numbers are plain non-negative decimal integers.
 *
 * The reader is strict because its input comes from users: it stops at
 * the first problem and says which file, line and column, and what was
 * wrong. The caps in trace_csv.h bound everything it allocates.
 */
#include "trace_csv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CSV_MAX_FIELDS 64
#define MAX_CPU_MILLI  100000000ull /* 100,000 cores on one node or task */
#define MAX_MEMORY_MIB (1ull << 30) /* 1 PiB */

struct field {
	const char *s;
	size_t len;
};

struct csv {
	const char *p, *end;
	const char *fname;
	size_t line; /* the current row's line number, from 1 */
	size_t next_line;
	size_t nf;
	struct field f[CSV_MAX_FIELDS];
	char *scratch; /* unquoted copies of quoted fields */
};

static bool is_blank(const char *s, const char *e)
{
	for (; s < e; s++) {
		if (*s != ' ' && *s != '\t' && *s != '\r')
			return false;
	}
	return true;
}

static void trim(const char **s, size_t *len)
{
	while (*len > 0 && (**s == ' ' || **s == '\t')) {
		(*s)++;
		(*len)--;
	}
	while (*len > 0 && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t'))
		(*len)--;
}

/*
 * Reads the next non-blank line into c->f. Returns GS_OK with c->nf > 0,
 * GS_OK with c->nf == 0 at the end of input, or a parse error.
 */
static gs_err csv_next(struct csv *c, struct gs_errbuf *eb)
{
	const char *ls, *le;
	char *out;

	c->nf = 0;
	for (;;) {
		if (c->p >= c->end)
			return GS_OK;
		ls = c->p;
		le = memchr(ls, '\n', (size_t)(c->end - ls));
		if (le == NULL)
			le = c->end;
		c->line = c->next_line++;
		c->p = le < c->end ? le + 1 : le;
		if ((size_t)(le - ls) > GS_TRACE_CSV_MAX_LINE)
			return gs_fail(eb, GS_ERR_PARSE,
			               "%s:%zu: line longer than %d bytes",
			               c->fname, c->line,
			               GS_TRACE_CSV_MAX_LINE);
		if (le > ls && le[-1] == '\r')
			le--;
		if (!is_blank(ls, le))
			break;
	}
	out = c->scratch;
	for (const char *q = ls;;) {
		struct field *fd;

		if (c->nf == CSV_MAX_FIELDS)
			return gs_fail(eb, GS_ERR_PARSE,
			               "%s:%zu: more than %d fields", c->fname,
			               c->line, CSV_MAX_FIELDS);
		fd = &c->f[c->nf++];
		while (q < le && (*q == ' ' || *q == '\t'))
			q++;
		if (q < le && *q == '"') {
			fd->s = out;
			for (q++;; q++) {
				if (q >= le)
					return gs_fail(
					    eb, GS_ERR_PARSE,
					    "%s:%zu: field %zu: unterminated quote",
					    c->fname, c->line, c->nf);
				if (*q == '"') {
					if (q + 1 < le && q[1] == '"') {
						*out++ = '"';
						q++;
						continue;
					}
					q++;
					break;
				}
				if (*q == '\0')
					return gs_fail(
					    eb, GS_ERR_PARSE,
					    "%s:%zu: field %zu: NUL byte",
					    c->fname, c->line, c->nf);
				*out++ = *q;
			}
			fd->len = (size_t)(out - fd->s);
			while (q < le && (*q == ' ' || *q == '\t'))
				q++;
			if (q < le && *q != ',')
				return gs_fail(
				    eb, GS_ERR_PARSE,
				    "%s:%zu: field %zu: characters after the closing quote",
				    c->fname, c->line, c->nf);
		} else {
			const char *fs = q;
			while (q < le && *q != ',') {
				if (*q == '"')
					return gs_fail(
					    eb, GS_ERR_PARSE,
					    "%s:%zu: field %zu: quote inside an unquoted field",
					    c->fname, c->line, c->nf);
				if (*q == '\0')
					return gs_fail(
					    eb, GS_ERR_PARSE,
					    "%s:%zu: field %zu: NUL byte",
					    c->fname, c->line, c->nf);
				q++;
			}
			fd->s = fs;
			fd->len = (size_t)(q - fs);
			trim(&fd->s, &fd->len);
		}
		if (q >= le)
			break;
		q++; /* the comma */
	}
	return GS_OK;
}

static gs_err csv_open(struct csv *c, const char *buf, size_t len,
                       const char *fname, struct gs_errbuf *eb)
{
	memset(c, 0, sizeof(*c));
	c->p = buf;
	c->end = buf + len;
	c->fname = fname;
	c->next_line = 1;
	if (len > GS_TRACE_CSV_MAX_BYTES)
		return gs_fail(eb, GS_ERR_RANGE, "%s: larger than %u bytes",
		               fname, GS_TRACE_CSV_MAX_BYTES);
	if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
		c->p += 3;
	c->scratch = malloc(GS_TRACE_CSV_MAX_LINE + 1);
	if (c->scratch == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "%s: out of memory", fname);
	return GS_OK;
}

static void csv_close(struct csv *c)
{
	free(c->scratch);
	c->scratch = NULL;
}

struct column {
	const char *name;
	bool required;
	int index; /* -1: absent */
};

/* Reads the header and finds each column. */
static gs_err csv_header(struct csv *c, struct column *cols, size_t ncols,
                         struct gs_errbuf *eb)
{
	gs_err err = csv_next(c, eb);

	if (err != GS_OK)
		return err;
	if (c->nf == 0)
		return gs_fail(eb, GS_ERR_PARSE,
		               "%s: empty file (no header line)", c->fname);
	for (size_t k = 0; k < ncols; k++) {
		cols[k].index = -1;
		for (size_t i = 0; i < c->nf; i++) {
			if (strlen(cols[k].name) != c->f[i].len ||
			    memcmp(cols[k].name, c->f[i].s, c->f[i].len) != 0)
				continue;
			if (cols[k].index >= 0)
				return gs_fail(
				    eb, GS_ERR_PARSE,
				    "%s:%zu: column %s appears twice", c->fname,
				    c->line, cols[k].name);
			cols[k].index = (int)i;
		}
		if (cols[k].required && cols[k].index < 0)
			return gs_fail(
			    eb, GS_ERR_PARSE,
			    "%s:%zu: no column named %s in the header",
			    c->fname, c->line, cols[k].name);
	}
	return GS_OK;
}

/* The next data row with exactly `nf` fields; c->nf == 0 at the end. */
static gs_err csv_row(struct csv *c, size_t nf, size_t rows,
                      struct gs_errbuf *eb)
{
	gs_err err = csv_next(c, eb);

	if (err != GS_OK || c->nf == 0)
		return err;
	if (c->nf != nf)
		return gs_fail(eb, GS_ERR_PARSE,
		               "%s:%zu: %zu fields, the header has %zu",
		               c->fname, c->line, c->nf, nf);
	if (rows >= GS_TRACE_CSV_MAX_ROWS)
		return gs_fail(eb, GS_ERR_RANGE, "%s:%zu: more than %u rows",
		               c->fname, c->line, GS_TRACE_CSV_MAX_ROWS);
	return GS_OK;
}

static gs_err parse_uint(const struct csv *c, const struct field *fd,
                         const char *col, uint64_t max, uint64_t *out,
                         struct gs_errbuf *eb)
{
	uint64_t v = 0;
	int show = fd->len > 24 ? 24 : (int)fd->len;

	if (fd->len == 0)
		return gs_fail(eb, GS_ERR_PARSE, "%s:%zu: %s is empty",
		               c->fname, c->line, col);
	if (fd->s[0] == '-')
		return gs_fail(eb, GS_ERR_RANGE,
		               "%s:%zu: %s '%.*s' is negative", c->fname,
		               c->line, col, show, fd->s);
	for (size_t i = 0; i < fd->len; i++) {
		char ch = fd->s[i];
		if (ch < '0' || ch > '9')
			return gs_fail(
			    eb, GS_ERR_PARSE,
			    "%s:%zu: %s '%.*s' is not a whole number", c->fname,
			    c->line, col, show, fd->s);
		if (v > (max - (uint64_t)(ch - '0')) / 10)
			return gs_fail(
			    eb, GS_ERR_RANGE,
			    "%s:%zu: %s '%.*s' is absurd (the limit is %llu)",
			    c->fname, c->line, col, show, fd->s,
			    (unsigned long long)max);
		v = v * 10 + (uint64_t)(ch - '0');
	}
	*out = v;
	return GS_OK;
}

gs_err gs_trace_csv_read_file(const char *path, char **buf, size_t *len,
                              struct gs_errbuf *eb)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 16, n = 0;
	char *b;
	int e;

	*buf = NULL;
	*len = 0;
	if (f == NULL) {
		e = errno;
		return gs_fail(eb, e == ENOENT ? GS_ERR_NOT_FOUND : GS_ERR_IO,
		               "%s: %s", path, strerror(e));
	}
	b = malloc(cap + 1);
	if (b == NULL) {
		fclose(f);
		return gs_fail(eb, GS_ERR_NOMEM, "%s: out of memory", path);
	}
	for (;;) {
		size_t got = fread(b + n, 1, cap - n, f);
		n += got;
		if (got == 0) {
			if (ferror(f)) {
				e = errno;
				free(b);
				fclose(f);
				return gs_fail(eb, GS_ERR_IO,
				               "%s: read failed: %s", path,
				               strerror(e));
			}
			break;
		}
		if (n == cap) {
			char *nb;
			if (cap >= GS_TRACE_CSV_MAX_BYTES) {
				free(b);
				fclose(f);
				return gs_fail(eb, GS_ERR_RANGE,
				               "%s: larger than %u bytes", path,
				               GS_TRACE_CSV_MAX_BYTES);
			}
			cap *= 2;
			nb = realloc(b, cap + 1);
			if (nb == NULL) {
				free(b);
				fclose(f);
				return gs_fail(eb, GS_ERR_NOMEM,
				               "%s: out of memory", path);
			}
			b = nb;
		}
	}
	fclose(f);
	b[n] = '\0';
	*buf = b;
	*len = n;
	return GS_OK;
}

/* Appends one element to a growing array; *cap doubles. */
static gs_err grow(void **arr, size_t elem, size_t n, size_t *cap,
                   const char *fname, struct gs_errbuf *eb)
{
	void *na;

	if (n < *cap)
		return GS_OK;
	*cap = *cap ? *cap * 2 : 1024;
	na = realloc(*arr, elem * *cap);
	if (na == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "%s: out of memory", fname);
	*arr = na;
	return GS_OK;
}

enum { N_SN, N_CPU, N_MEM, N_GPU, N_MODEL, N__COUNT };

gs_err gs_trace_csv_parse_nodes(const char *buf, size_t len, const char *fname,
                                struct gs_trace_models *models,
                                struct gs_trace_node **out, size_t *n,
                                struct gs_errbuf *eb)
{
	struct column cols[N__COUNT] = {
	    [N_SN] = {"sn", false, -1},
	    [N_CPU] = {"cpu_milli", true, -1},
	    [N_MEM] = {"memory_mib", true, -1},
	    [N_GPU] = {"gpu", true, -1},
	    [N_MODEL] = {"model", true, -1},
	};
	struct gs_trace_node *nodes = NULL;
	size_t count = 0, cap = 0, nf;
	struct csv c;
	gs_err err;

	*out = NULL;
	*n = 0;
	err = csv_open(&c, buf, len, fname, eb);
	if (err != GS_OK)
		goto out;
	err = csv_header(&c, cols, N__COUNT, eb);
	if (err != GS_OK)
		goto out;
	nf = c.nf;
	for (;;) {
		struct gs_trace_node nd = {0};
		uint64_t v;

		err = csv_row(&c, nf, count, eb);
		if (err != GS_OK)
			goto out;
		if (c.nf == 0)
			break;
		err = parse_uint(&c, &c.f[cols[N_CPU].index], "cpu_milli",
		                 MAX_CPU_MILLI, &v, eb);
		if (err != GS_OK)
			goto out;
		nd.cpu_milli = (uint32_t)v;
		err = parse_uint(&c, &c.f[cols[N_MEM].index], "memory_mib",
		                 MAX_MEMORY_MIB, &v, eb);
		if (err != GS_OK)
			goto out;
		nd.memory_mib = v;
		err = parse_uint(&c, &c.f[cols[N_GPU].index], "gpu",
		                 GS_TRACE_MAX_DEVS, &v, eb);
		if (err != GS_OK)
			goto out;
		nd.gpus = (uint8_t)v;
		if (nd.gpus > 0) {
			const struct field *m = &c.f[cols[N_MODEL].index];
			int id;
			if (m->len == 0) {
				err = gs_fail(
				    eb, GS_ERR_PARSE,
				    "%s:%zu: a node with %u GPUs needs a model",
				    fname, c.line, nd.gpus);
				goto out;
			}
			if (m->len >= GS_TRACE_MODEL_NAME_MAX ||
			    memchr(m->s, '|', m->len)) {
				err = gs_fail(
				    eb, GS_ERR_PARSE,
				    "%s:%zu: model name '%.*s' is not valid",
				    fname, c.line,
				    m->len > 40 ? 40 : (int)m->len, m->s);
				goto out;
			}
			id = gs_trace_models_intern(models, m->s, m->len);
			if (id < 0) {
				err =
				    gs_fail(eb, GS_ERR_RANGE,
				            "%s:%zu: more than %d GPU models",
				            fname, c.line, GS_TRACE_MAX_MODELS);
				goto out;
			}
			nd.model = (uint8_t)id;
		}
		err = grow((void **)&nodes, sizeof(*nodes), count, &cap, fname,
		           eb);
		if (err != GS_OK)
			goto out;
		nodes[count++] = nd;
	}
	if (count == 0) {
		err = gs_fail(eb, GS_ERR_PARSE, "%s: no nodes after the header",
		              fname);
		goto out;
	}
	*out = nodes;
	*n = count;
	nodes = NULL;
out:
	free(nodes);
	csv_close(&c);
	return err;
}

enum { P_NAME, P_CPU, P_MEM, P_NUM, P_MILLI, P_SPEC, P__COUNT };

static gs_err parse_spec(const struct csv *c, const struct field *fd,
                         const struct gs_trace_models *models, uint32_t *spec,
                         struct gs_errbuf *eb)
{
	const char *s = fd->s, *e = fd->s + fd->len;

	*spec = 0;
	if (fd->len == 0)
		return GS_OK;
	while (s <= e) {
		const char *bar = memchr(s, '|', (size_t)(e - s));
		const char *ne = bar ? bar : e;
		const char *ns = s;
		size_t nl = (size_t)(ne - ns);
		int id;

		trim(&ns, &nl);
		if (nl == 0)
			return gs_fail(
			    eb, GS_ERR_PARSE,
			    "%s:%zu: gpu_spec '%.*s' has an empty model name",
			    c->fname, c->line, fd->len > 40 ? 40 : (int)fd->len,
			    fd->s);
		id = gs_trace_models_find(models, ns, nl);
		if (id < 0)
			return gs_fail(
			    eb, GS_ERR_UNKNOWN_MODEL,
			    "%s:%zu: gpu_spec names GPU model '%.*s', which no node has",
			    c->fname, c->line, nl > 40 ? 40 : (int)nl, ns);
		*spec |= 1u << id;
		if (bar == NULL)
			break;
		s = bar + 1;
	}
	return GS_OK;
}

gs_err gs_trace_csv_parse_pods(const char *buf, size_t len, const char *fname,
                               const struct gs_trace_models *models,
                               struct gs_trace_pod **out, size_t *n,
                               struct gs_errbuf *eb)
{
	struct column cols[P__COUNT] = {
	    [P_NAME] = {"name", false, -1},
	    [P_CPU] = {"cpu_milli", true, -1},
	    [P_MEM] = {"memory_mib", true, -1},
	    [P_NUM] = {"num_gpu", true, -1},
	    [P_MILLI] = {"gpu_milli", true, -1},
	    [P_SPEC] = {"gpu_spec", false, -1},
	};
	struct gs_trace_pod *pods = NULL;
	size_t count = 0, cap = 0, nf;
	struct csv c;
	gs_err err;

	*out = NULL;
	*n = 0;
	err = csv_open(&c, buf, len, fname, eb);
	if (err != GS_OK)
		goto out;
	err = csv_header(&c, cols, P__COUNT, eb);
	if (err != GS_OK)
		goto out;
	nf = c.nf;
	for (;;) {
		struct gs_trace_pod pd = {0};
		uint64_t v;

		err = csv_row(&c, nf, count, eb);
		if (err != GS_OK)
			goto out;
		if (c.nf == 0)
			break;
		err = parse_uint(&c, &c.f[cols[P_CPU].index], "cpu_milli",
		                 MAX_CPU_MILLI, &v, eb);
		if (err != GS_OK)
			goto out;
		pd.cpu_milli = (uint32_t)v;
		err = parse_uint(&c, &c.f[cols[P_MEM].index], "memory_mib",
		                 MAX_MEMORY_MIB, &v, eb);
		if (err != GS_OK)
			goto out;
		pd.memory_mib = v;
		err = parse_uint(&c, &c.f[cols[P_NUM].index], "num_gpu",
		                 GS_TRACE_MAX_DEVS, &v, eb);
		if (err != GS_OK)
			goto out;
		pd.num_gpu = (uint8_t)v;
		err = parse_uint(&c, &c.f[cols[P_MILLI].index], "gpu_milli",
		                 GS_TRACE_MILLI, &v, eb);
		if (err != GS_OK)
			goto out;
		pd.gpu_milli = (uint16_t)v;
		if ((pd.num_gpu == 0) != (pd.gpu_milli == 0)) {
			err = gs_fail(
			    eb, GS_ERR_PARSE,
			    "%s:%zu: num_gpu %u with gpu_milli %u: both must be 0 or neither",
			    fname, c.line, pd.num_gpu, pd.gpu_milli);
			goto out;
		}
		if (pd.num_gpu > 1 && pd.gpu_milli != GS_TRACE_MILLI) {
			err = gs_fail(
			    eb, GS_ERR_PARSE,
			    "%s:%zu: a share of a GPU (gpu_milli %u) must ask for one GPU, not %u",
			    fname, c.line, pd.gpu_milli, pd.num_gpu);
			goto out;
		}
		if (cols[P_SPEC].index >= 0) {
			err = parse_spec(&c, &c.f[cols[P_SPEC].index], models,
			                 &pd.spec, eb);
			if (err != GS_OK)
				goto out;
		}
		err =
		    grow((void **)&pods, sizeof(*pods), count, &cap, fname, eb);
		if (err != GS_OK)
			goto out;
		pods[count++] = pd;
	}
	if (count == 0) {
		err = gs_fail(eb, GS_ERR_PARSE, "%s: no tasks after the header",
		              fname);
		goto out;
	}
	*out = pods;
	*n = count;
	pods = NULL;
out:
	free(pods);
	csv_close(&c);
	return err;
}
