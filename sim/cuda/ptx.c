/*
 * ptx.c - reading PTX text for the sim driver's modules: each `.entry
 * name(...)` with its `.param` list, launch bounds, static shared and
 * local sizes and its cost model (costmodel.c), and each module-scope
 * `.global` / `.const` variable with its size and initial value. Pure
 * parsing into the structs of cuda_int.h; module.c places the globals.
 * The sim never compiles or runs the code.
 */
#include "cuda_int.h"
#include "halloc.h"

#include "costmodel.h"
#include "fatbin.h"
#include "gs/kernels.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- PTX ------------------------------------------------------------- */

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.';
}

static int type_size(const char *t, size_t n)
{
	/* .u64 .s32 .f32 .b8 .pred ... : the digits are the width in bits */
	if (n == 5 && strncmp(t, ".pred", 5) == 0)
		return 1;
	if (n < 3 || t[0] != '.' || strchr("usbf", t[1]) == NULL)
		return 0;
	int bits = atoi(t + 2);
	return bits >= 8 && bits % 8 == 0 ? bits / 8 : 0;
}

/*
 * Parses one parameter list "( .param .u64 a, .param .align 8 .b8 b[16] )"
 * starting after '('. Returns the position after ')' or NULL.
 */
static const char *parse_params(const char *p, struct gs__entry *e)
{
	uint32_t off = 0;

	e->n_params = 0;
	p = gs__ptx_skip_ws(p);
	if (*p == ')')
		goto done;
	for (;;) {
		int size = 0, align = 0;
		uint64_t count = 1;

		p = gs__ptx_skip_ws(p);
		if (strncmp(p, ".param", 6) != 0)
			return NULL;
		p += 6;
		for (;;) {
			const char *s;
			p = gs__ptx_skip_ws(p);
			if (*p != '.')
				break;
			s = p;
			while (ident_char(*p) && (p == s || *p != '.'))
				p++;
			if (strncmp(s, ".align", 6) == 0 && p - s == 6) {
				p = gs__ptx_skip_ws(p);
				align = atoi(p);
				while (isdigit((unsigned char)*p))
					p++;
			} else if (strncmp(s, ".ptr", 4) == 0 ||
			           strncmp(s, ".global", 7) == 0 ||
			           strncmp(s, ".const", 6) == 0 ||
			           strncmp(s, ".shared", 7) == 0 ||
			           strncmp(s, ".local", 6) == 0) {
				/* state-space qualifiers of .ptr */
			} else {
				int sz = type_size(s, (size_t)(p - s));
				if (sz != 0)
					size = sz;
			}
		}
		/* the parameter's name */
		while (ident_char(*p) && *p != '.')
			p++;
		while (ident_char(*p))
			p++;
		p = gs__ptx_skip_ws(p);
		if (*p == '[') {
			count = strtoull(p + 1, NULL, 10);
			p = strchr(p, ']');
			if (p == NULL)
				return NULL;
			p++;
		}
		if (size == 0 || count == 0 || e->n_params >= GS__MAX_PARAMS)
			return NULL;
		if (align == 0)
			align = size;
		off = (off + (uint32_t)align - 1) / (uint32_t)align *
		      (uint32_t)align;
		e->param_off[e->n_params] = off;
		e->param_size[e->n_params] = (uint32_t)(size * count);
		off += (uint32_t)(size * count);
		if (off > GS__MAX_PARAM_BYTES)
			return NULL;
		e->n_params++;
		p = gs__ptx_skip_ws(p);
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p == ')')
			break;
		return NULL;
	}
done:
	e->args_size = off;
	return p + 1;
}

/*
 * The most threads a block of this entry may have: the product of its
 * ".maxntid x, y, z" or ".reqntid x, y, z" (between the parameter list
 * and the body at p), else 1024.
 */
static uint32_t entry_max_threads(const char *p)
{
	uint64_t best = 1024;

	for (; *p != '\0' && *p != '{' && *p != ';'; p++) {
		uint64_t prod = 1;
		char *end;

		if (strncmp(p, ".maxntid", 8) != 0 && strncmp(p, ".reqntid", 8) != 0)
			continue;
		p += 8;
		for (int i = 0; i < 3; i++) {
			unsigned long v;

			p = gs__ptx_skip_ws(p);
			v = strtoul(p, &end, 10);
			if (end == p)
				break;
			prod *= v;
			p = gs__ptx_skip_ws(end);
			if (*p != ',')
				break;
			p++;
		}
		if (prod >= 1 && prod < best)
			best = prod;
		if (*p == '\0' || *p == '{' || *p == ';')
			break;
	}
	return (uint32_t)best;
}

static bool entry_static_sizes(const char *p, struct gs__entry *e);

void gs__entries_free(struct gs__entry *list, int n)
{
	for (int i = 0; i < n; i++) {
		gs__kcost_destroy(list[i].kcost);
		free(list[i].name);
	}
	free(list);
}

/*
 * Reads every .entry of a PTX text. OUT: *entries (malloc'ed, caller
 * frees), *n. CUDA_ERROR_INVALID_PTX when the text is not PTX or an entry
 * cannot be read.
 */
CUresult gs__ptx_parse(const char *text, struct gs__entry **entries,
                       int *n)
{
	const char *p = text;
	const char *ver = strstr(text, ".version");
	struct gs__entry *list = NULL;
	int count = 0, cap = 0, ptx_version = 0;

	if (ver == NULL)
		return CUDA_ERROR_INVALID_PTX;
	{
		/* CU_FUNC_ATTRIBUTE_PTX_VERSION is the virtual architecture
		 * the PTX was written for (.target sm_75: 75), as cudart's
		 * ptxVersion shows it; the ISA version only without one */
		const char *tgt = strstr(text, ".target");
		int maj = 0, min = 0, arch = 0;

		if (sscanf(ver + 8, " %d.%d", &maj, &min) == 2)
			ptx_version = maj * 10 + min;
		if (tgt != NULL && sscanf(tgt + 7, " sm_%d", &arch) == 1 &&
		    arch > 0)
			ptx_version = arch;
	}
	while ((p = strstr(p, ".entry")) != NULL) {
		struct gs__entry *e;
		const char *name;
		size_t len;

		if (p > text && ident_char(p[-1])) {
			p += 6;
			continue;
		}
		p = gs__ptx_skip_ws(p + 6);
		name = p;
		while (ident_char(*p))
			p++;
		len = (size_t)(p - name);
		if (len == 0)
			goto out_bad;
		if (count == cap) {
			int ncap = cap ? cap * 2 : 8;
			struct gs__entry *nl =
			    gs__realloc(list, sizeof(*nl) * (size_t)ncap);
			if (nl == NULL) {
				gs__entries_free(list, count);
				return CUDA_ERROR_OUT_OF_MEMORY;
			}
			list = nl;
			cap = ncap;
		}
		e = &list[count];
		memset(e, 0, sizeof(*e));
		e->name = gs__malloc(len + 1);
		if (e->name == NULL) {
			gs__entries_free(list, count);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		memcpy(e->name, name, len);
		e->name[len] = '\0';
		count++;
		e->ptx_version = ptx_version;
		p = gs__ptx_skip_ws(p);
		if (gs__kcost_create(p, &e->kcost) != CUDA_SUCCESS) {
			gs__entries_free(list, count);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		if (*p == '(') {
			p = parse_params(p + 1, e);
			if (p == NULL)
				goto out_bad;
		}
		e->max_threads = entry_max_threads(p);
		if (!entry_static_sizes(p, e)) {
			gs__entries_free(list, count);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	*entries = list;
	*n = count;
	return CUDA_SUCCESS;

out_bad:
	gs__entries_free(list, count);
	return CUDA_ERROR_INVALID_PTX;
}

/* ---- module globals ------------------------------------------------------ */

/* Most bytes one module global may have (a larger one is refused). */
#define GLOBAL_MAX GS__GLOBAL_MAX

/* Skips a balanced "{ ... }" starting at '{'. */
static const char *skip_block(const char *p)
{
	int depth = 0;

	for (; *p; p++) {
		if (*p == '{')
			depth++;
		else if (*p == '}' && --depth == 0)
			return p + 1;
	}
	return p;
}

/* Stores one initializer element `tok` at element `i` of g. */
static void init_store(struct gs__global *g, uint32_t esize, bool is_float,
                       uint64_t i, const char *tok, size_t len)
{
	char buf[64];
	uint64_t bits = 0;

	if ((i + 1) * esize > g->size || len == 0 || len >= sizeof(buf))
		return;
	memcpy(buf, tok, len);
	buf[len] = '\0';
	if ((buf[0] == '0' && (buf[1] == 'f' || buf[1] == 'F' ||
	                       buf[1] == 'd' || buf[1] == 'D')))
		bits = strtoull(buf + 2, NULL, 16);
	else if (is_float || strpbrk(buf, ".eE") != NULL) {
		double d = strtod(buf, NULL);
		if (esize == 4) {
			float f = (float)d;
			uint32_t u;
			memcpy(&u, &f, 4);
			bits = u;
		} else {
			memcpy(&bits, &d, 8);
		}
	} else if (isdigit((unsigned char)buf[0]) || buf[0] == '-') {
		bits = buf[0] == '-' ? (uint64_t)strtoll(buf, NULL, 0)
		                     : strtoull(buf, NULL, 0);
	} else {
		return; /* an address (generic(x), x): left zero */
	}
	memcpy(g->init + i * esize, &bits, esize); /* little-endian */
}

/*
 * Reads one declaration "[.visible] .global|.const [.attribute(.managed)]
 * [.align n] .type name[dims] [= init];" from s (just past the space
 * token) to its ';'. Returns false on OOM; a declaration it cannot size
 * is skipped.
 */
static bool global_read(const char *s, const char *end,
                        struct gs__global **list, int *n, int *cap)
{
	struct gs__global g;
	uint32_t esize = 0;
	bool is_float = false, unsized = false;
	uint64_t count = 1;
	const char *p = s, *init = NULL;

	memset(&g, 0, sizeof(g));
	while (p < end) {
		const char *t;

		p = gs__ptx_skip_ws(p);
		if (p >= end)
			break;
		if (*p == '=') {
			init = p + 1;
			break;
		}
		t = p;
		if (*p == '.') {
			p++;
			while (p < end && (ident_char(*p) || *p == '(' ||
			                   *p == ')') && *p != '.')
				p++;
			while (p < end && *p == '.' && t[1] == 'a' &&
			       strncmp(t, ".attribute", 10) == 0) {
				/* .attribute(.managed) */
				while (p < end && *p != ')')
					p++;
				if (p < end)
					p++;
			}
			if (strncmp(t, ".attribute", 10) == 0 &&
			    memmem(t, (size_t)(p - t), "managed", 7) != NULL)
				g.managed = true;
			else if ((size_t)(p - t) == 6 &&
			         strncmp(t, ".align", 6) == 0) {
				p = gs__ptx_skip_ws(p);
				while (p < end && isdigit((unsigned char)*p))
					p++;
			} else if ((size_t)(p - t) == 3 && t[1] == 'v' &&
			           (t[2] == '2' || t[2] == '4' || t[2] == '8')) {
				count *= (uint64_t)(t[2] - '0');
			} else {
				int sz = type_size(t, (size_t)(p - t));
				if (sz != 0) {
					esize = (uint32_t)sz;
					is_float = t[1] == 'f';
				}
			}
			continue;
		}
		if (ident_char(*p)) {
			size_t len;

			while (p < end && ident_char(*p))
				p++;
			len = (size_t)(p - t);
			free(g.name);
			g.name = gs__malloc(len + 1);
			if (g.name == NULL)
				goto out_oom;
			memcpy(g.name, t, len);
			g.name[len] = '\0';
			while (p < end && *p == '[') {
				char *e;
				unsigned long long d = strtoull(p + 1, &e, 10);

				if (*gs__ptx_skip_ws(e) == ']' && e == p + 1)
					unsized = true;
				else
					count *= d;
				p = strchr(p, ']');
				if (p == NULL || p >= end)
					goto out_skip;
				p++;
			}
			continue;
		}
		p++;
	}
	if (g.name == NULL || esize == 0)
		goto out_skip;
	if (unsized && init != NULL) {
		/* elements in the initializer */
		uint64_t elems = 0;
		bool in_tok = false;

		for (const char *q = init; q < end; q++) {
			bool tokc = !isspace((unsigned char)*q) && *q != ',' &&
			            *q != '{' && *q != '}';
			if (tokc && !in_tok)
				elems++;
			in_tok = tokc;
		}
		count *= elems;
	}
	if (count == 0 || count > GLOBAL_MAX / esize)
		goto out_skip;
	g.size = count * esize;
	if (init != NULL) {
		const char *q = init;
		uint64_t i = 0;

		g.init = gs__calloc(1, (size_t)g.size);
		if (g.init == NULL)
			goto out_oom;
		while (q < end) {
			const char *t;

			while (q < end && (isspace((unsigned char)*q) ||
			                   *q == ',' || *q == '{' || *q == '}'))
				q++;
			t = q;
			while (q < end && !isspace((unsigned char)*q) &&
			       *q != ',' && *q != '{' && *q != '}')
				q++;
			if (q > t)
				init_store(&g, esize, is_float, i++, t,
				           (size_t)(q - t));
		}
	}
	if (*n == *cap) {
		int ncap = *cap ? *cap * 2 : 8;
		struct gs__global *nl =
		    gs__realloc(*list, sizeof(*nl) * (size_t)ncap);

		if (nl == NULL)
			goto out_oom;
		*list = nl;
		*cap = ncap;
	}
	(*list)[(*n)++] = g;
	return true;

out_skip:
	free(g.name);
	return true;
out_oom:
	free(g.init);
	free(g.name);
	return false;
}

void gs__globals_free(struct gs__global *list, int n)
{
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < list[i].n_inst; j++)
			gs__mem_release(list[i].inst[j].dptr, &list[i]);
		free(list[i].inst);
		free(list[i].init);
		free(list[i].name);
	}
	free(list);
}

/*
 * Bytes of the .shared and .local variables declared in the body of
 * entry e (static shared memory and the local "depot"), into e; p is
 * past the entry's parameter list. false on OOM.
 */
static bool entry_static_sizes(const char *p, struct gs__entry *e)
{
	const char *body = p, *end;

	while (*body != '\0' && *body != '{' && *body != ';')
		body++;
	if (*body != '{')
		return true;
	end = skip_block(body);
	for (p = body + 1; p < end; p++) {
		struct gs__global *list = NULL;
		int n = 0, cap = 0;
		const char *semi;
		uint32_t *into;

		if (p[-1] != '\n' && !isspace((unsigned char)p[-1]) &&
		    p[-1] != '{')
			continue;
		if (strncmp(p, ".shared", 7) == 0 && isspace((unsigned char)p[7]))
			into = &e->shared_bytes;
		else if (strncmp(p, ".local", 6) == 0 &&
		         isspace((unsigned char)p[6]))
			into = &e->local_bytes;
		else
			continue;
		semi = memchr(p, ';', (size_t)(end - p));
		if (semi == NULL)
			break;
		if (!global_read(p, semi, &list, &n, &cap))
			return false;
		for (int i = 0; i < n; i++)
			if (*into + list[i].size <= UINT32_MAX)
				*into += (uint32_t)list[i].size;
		gs__globals_free(list, n);
		p = semi;
	}
	return true;
}

/*
 * Reads the module-scope .global and .const variables of a PTX text
 * (not .extern ones, which have no storage here). OUT: *out (owned by the
 * caller, gs__globals_free), *n.
 */
CUresult gs__globals_parse(const char *text, struct gs__global **out,
                           int *n)
{
	struct gs__global *list = NULL;
	int count = 0, cap = 0;
	const char *p = text;

	for (;;) {
		const char *s, *q;
		bool is_var = false, is_extern = false;

		p = gs__ptx_skip_ws(p);
		if (*p == '\0')
			break;
		if (*p == '{') {
			p = skip_block(p);
			continue;
		}
		if (*p == '}' || *p == ';') {
			p++;
			continue;
		}
		if (strncmp(p, ".version", 8) == 0 ||
		    strncmp(p, ".target", 7) == 0 ||
		    strncmp(p, ".address_size", 13) == 0 ||
		    strncmp(p, ".file", 5) == 0 || strncmp(p, ".loc", 4) == 0) {
			while (*p && *p != '\n')
				p++;
			continue;
		}
		/* one statement: up to ';' or a body '{' (an initializer's
		 * braces come after '=') */
		s = p;
		for (q = p; *q && *q != ';'; q++) {
			if (*q == '=') {
				while (*q && *q != ';')
					q++;
				break;
			}
			if (*q == '{')
				break;
			if (q[0] == '/' && (q[1] == '/' || q[1] == '*'))
				break;
		}
		for (const char *t = s; t < q;) {
			const char *w;

			t = gs__ptx_skip_ws(t);
			if (t >= q || *t == '=')
				break;
			w = t;
			while (t < q && !isspace((unsigned char)*t))
				t++;
			if ((t - w == 7 && strncmp(w, ".global", 7) == 0) ||
			    (t - w == 6 && strncmp(w, ".const", 6) == 0))
				is_var = true;
			else if ((t - w == 7 && strncmp(w, ".extern", 7) == 0) ||
			         (t - w == 6 && strncmp(w, ".entry", 6) == 0) ||
			         (t - w == 5 && strncmp(w, ".func", 5) == 0))
				is_extern = true;
		}
		if (is_var && !is_extern && *q == ';' &&
		    !global_read(s, q, &list, &count, &cap)) {
			gs__globals_free(list, count);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		if (*q == '{' && !is_var)
			p = skip_block(q);
		else if (q[0] == '/' && (q[1] == '/' || q[1] == '*'))
			p = gs__ptx_skip_ws(q);
		else
			p = *q ? q + 1 : q;
	}
	*out = list;
	*n = count;
	return CUDA_SUCCESS;
}
