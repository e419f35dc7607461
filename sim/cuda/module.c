/*
 * module.c - modules, libraries and functions of the sim driver: loading
 * PTX text, or the PTX inside a fatbinary (fatbin.c: the best PTX entry
 * for the device, decompressed), reading each `.entry name(...)` with its
 * `.param` list and its cost model (costmodel.c) and each module-scope
 * `.global` / `.const` variable with its size and initial value; function
 * and kernel handles and their attributes, module globals, occupancy. The
 * sim never compiles or runs the code.
 *
 * A CUlibrary is a module with no context; its CUkernel handles are the
 * same objects as CUfunction handles (launches take either), so
 * cuKernelGetFunction returns the kernel itself. A global gets its memory
 * (backed, charged like cuMemAlloc; managed memory for __managed__) in a
 * context when first needed there: at cuModuleLoad*, at cuLibraryLoad*
 * for the current context, and at cuLibraryGetGlobal/GetManaged for
 * another; it is freed with its module, or with its context.
 *
 * Cubin ELF images are refused with CUDA_ERROR_NOT_SUPPORTED (no machine
 * code to read); a fatbinary without PTX for the device is
 * CUDA_ERROR_NO_BINARY_FOR_GPU.
 */
#include "cuda_int.h"

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

static void entries_free(struct gs__entry *list, int n)
{
	for (int i = 0; i < n; i++)
		gs__kcost_destroy(list[i].kcost);
	free(list);
}

/*
 * Reads every .entry of a PTX text. OUT: *entries (malloc'ed, caller
 * frees), *n. CUDA_ERROR_INVALID_PTX when the text is not PTX or an entry
 * cannot be read.
 */
static CUresult ptx_parse(const char *text, struct gs__entry **entries, int *n)
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
		if (len == 0 || len >= sizeof(list[0].name))
			goto out_bad;
		if (count == cap) {
			int ncap = cap ? cap * 2 : 8;
			struct gs__entry *nl =
			    realloc(list, sizeof(*nl) * (size_t)ncap);
			if (nl == NULL) {
				entries_free(list, count);
				return CUDA_ERROR_OUT_OF_MEMORY;
			}
			list = nl;
			cap = ncap;
		}
		e = &list[count];
		memset(e, 0, sizeof(*e));
		memcpy(e->name, name, len);
		e->ptx_version = ptx_version;
		p = gs__ptx_skip_ws(p);
		if (gs__kcost_create(p, &e->kcost) != CUDA_SUCCESS) {
			entries_free(list, count);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		count++;
		if (*p == '(') {
			p = parse_params(p + 1, e);
			if (p == NULL)
				goto out_bad;
		}
		e->max_threads = entry_max_threads(p);
		if (!entry_static_sizes(p, e)) {
			entries_free(list, count);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	*entries = list;
	*n = count;
	return CUDA_SUCCESS;

out_bad:
	entries_free(list, count);
	return CUDA_ERROR_INVALID_PTX;
}

/* ---- module globals ------------------------------------------------------ */

/* Most bytes one module global may have (a larger one is refused). */
#define GLOBAL_MAX (256ULL << 20)

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
			if (len >= sizeof(g.name))
				return true;
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
					return true;
				p++;
			}
			continue;
		}
		p++;
	}
	if (g.name[0] == '\0' || esize == 0)
		return true;
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
		return true;
	g.size = count * esize;
	if (init != NULL) {
		const char *q = init;
		uint64_t i = 0;

		g.init = calloc(1, (size_t)g.size);
		if (g.init == NULL)
			return false;
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
		struct gs__global *nl = realloc(*list, sizeof(*nl) * (size_t)ncap);

		if (nl == NULL) {
			free(g.init);
			return false;
		}
		*list = nl;
		*cap = ncap;
	}
	(*list)[(*n)++] = g;
	return true;
}

static void globals_free(struct gs__global *list, int n)
{
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < list[i].n_inst; j++)
			gs__mem_release(list[i].inst[j].dptr, &list[i]);
		free(list[i].inst);
		free(list[i].init);
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
		globals_free(list, n);
		p = semi;
	}
	return true;
}

/*
 * Reads the module-scope .global and .const variables of a PTX text
 * (not .extern ones, which have no storage here). OUT: *out (owned by the
 * caller, globals_free), *n.
 */
static CUresult globals_parse(const char *text, struct gs__global **out,
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
			globals_free(list, count);
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

/*
 * Where global g lives in ctx, allocating and initializing it there if it
 * does not yet. OUT: *dptr. Lock held.
 */
static CUresult global_in(struct gs__global *g, struct gs__ctx *ctx,
                          uint64_t *dptr)
{
	struct gs__ginst *in;
	CUresult r;

	for (int i = 0; i < g->n_inst; i++) {
		struct gs__alloc *a;

		in = &g->inst[i];
		/* A managed variable placed before any context existed keeps
		 * that one address in every context (the runtime caches it). */
		if (in->ctx == NULL && g->managed) {
			*dptr = in->dptr;
			return CUDA_SUCCESS;
		}
		if (ctx == NULL || in->ctx != ctx || ctx->id != in->ctx_id)
			continue;
		a = gs__alloc_find(in->dptr, g->size);
		if (a != NULL && a->base == in->dptr && a->owner == g) {
			*dptr = in->dptr;
			return CUDA_SUCCESS;
		}
		/* freed with its context (reset): make it again */
		g->inst[i] = g->inst[--g->n_inst];
		break;
	}
	in = realloc(g->inst, sizeof(*in) * (size_t)(g->n_inst + 1));
	if (in == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	g->inst = in;
	in = &g->inst[g->n_inst];
	r = gs__mem_alloc(ctx, g->size, g->managed, g, &in->dptr);
	if (r != CUDA_SUCCESS)
		return r;
	if (g->init != NULL)
		gs__dwrite(in->dptr, g->init, g->size);
	else
		(void)gs__memset(in->dptr, g->size, 0, 1, g->size, 1);
	in->ctx = ctx;
	in->ctx_id = ctx != NULL ? ctx->id : 0;
	g->n_inst++;
	*dptr = in->dptr;
	return CUDA_SUCCESS;
}

static struct gs__global *find_global(struct gs__module *m, const char *name)
{
	for (int i = 0; i < m->n_globals; i++)
		if (strcmp(m->globals[i].name, name) == 0)
			return &m->globals[i];
	return NULL;
}

/* Gives every global of m its memory in ctx. */
static CUresult globals_place(struct gs__module *m, struct gs__ctx *ctx)
{
	uint64_t dptr;

	for (int i = 0; i < m->n_globals; i++) {
		CUresult r = global_in(&m->globals[i], ctx, &dptr);
		if (r != CUDA_SUCCESS)
			return r;
	}
	return CUDA_SUCCESS;
}

/* ---- modules ---------------------------------------------------------- */

/* Compute capability (e.g. 90) of the device an image is loaded for. */
static int image_sm(struct gs__ctx *ctx)
{
	const struct gs__dev *d = NULL;

	if (ctx == NULL)
		ctx = gs__ctx_current();
	if (ctx != NULL)
		d = &gs__drv.dev[ctx->dev];
	else if (gs__drv.n_dev > 0)
		d = &gs__drv.dev[0];
	return d ? (int)(d->cc_major * 10 + d->cc_minor) : 90;
}

static void module_free(struct gs__module *m);

/*
 * Loads a PTX text or fatbinary (`len` bytes when known, else 0) for ctx
 * (a module) or for no context (a library: globals are placed in the
 * current context if there is one). Lock held.
 */
static CUresult module_load(const void *image, size_t len,
                            struct gs__ctx *ctx, bool library,
                            struct gs__module **out)
{
	const unsigned char *b = image;
	struct gs__module *m;
	CUresult r;

	if (image == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F')
		return CUDA_ERROR_NOT_SUPPORTED; /* a cubin: machine code */
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (gs__fatbin_is(image)) {
		r = gs__fatbin_ptx(image, len, image_sm(ctx), &m->image, NULL);
		if (r != CUDA_SUCCESS) {
			free(m);
			return r;
		}
	} else {
		m->image = strdup(image);
		if (m->image == NULL) {
			free(m);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	r = ptx_parse(m->image, &m->entries, &m->n_entries);
	if (r != CUDA_SUCCESS)
		goto out_free;
	r = globals_parse(m->image, &m->globals, &m->n_globals);
	if (r != CUDA_SUCCESS)
		goto out_free;
	m->funcs = calloc((size_t)(m->n_entries ? m->n_entries : 1),
	                  sizeof(*m->funcs));
	if (m->funcs == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_free;
	}
	m->ctx = ctx;
	m->library = library;
	for (int i = 0; i < m->n_entries; i++) {
		m->funcs[i].mod = m;
		m->funcs[i].entry = &m->entries[i];
		m->funcs[i].max_dyn_smem = 49152;
		m->funcs[i].carveout = -1;
	}
	for (int i = 0; i < m->n_entries && r == CUDA_SUCCESS; i++)
		if (!gs__h_add(&m->funcs[i], GS__H_FUNC))
			r = CUDA_ERROR_OUT_OF_MEMORY;
	if (r == CUDA_SUCCESS &&
	    !gs__h_add(m, library ? GS__H_LIBRARY : GS__H_MODULE))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (r != CUDA_SUCCESS) {
		for (int i = 0; i < m->n_entries; i++)
			gs__h_del(&m->funcs[i]);
		goto out_free;
	}
	{
		struct gs__ctx *place = library ? gs__ctx_current() : ctx;

		if (place != NULL && gs__ctx_error(place) == CUDA_SUCCESS)
			r = globals_place(m, place);
	}
	if (r != CUDA_SUCCESS) {
		module_free(m);
		return r;
	}
	*out = m;
	return CUDA_SUCCESS;

out_free:
	globals_free(m->globals, m->n_globals);
	free(m->funcs);
	entries_free(m->entries, m->n_entries);
	free(m->image);
	free(m);
	return r;
}

static void forget_ctx_mod(void *p, void *arg)
{
	struct gs__module *lib = p;

	if (lib->ctx_mod == arg)
		lib->ctx_mod = NULL;
}

static void module_free(struct gs__module *m)
{
	if (m->library && m->ctx_mod != NULL)
		module_free(m->ctx_mod);
	else if (!m->library)
		gs__h_each(GS__H_LIBRARY, forget_ctx_mod, m);
	for (int i = 0; i < m->n_entries; i++)
		gs__h_del(&m->funcs[i]);
	gs__h_del(m);
	globals_free(m->globals, m->n_globals);
	free(m->funcs);
	entries_free(m->entries, m->n_entries);
	free(m->image);
	free(m);
}

static void module_gone(void *p, void *arg)
{
	struct gs__module *m = p;

	if (m->ctx == arg)
		module_free(m);
}

void gs__module_ctx_gone(struct gs__ctx *ctx)
{
	gs__h_each(GS__H_MODULE, module_gone, ctx);
}

/* cuModuleLoadData & co: `len` bytes of image when known, else 0. */
static CUresult module_load_call(CUmodule *module, const void *image,
                                 size_t len)
{
	struct gs__ctx *ctx;
	struct gs__module *m;
	CUresult r;

	if (module == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__ctx_get(&ctx);
	if (r == CUDA_SUCCESS)
		r = module_load(image, len, ctx, false, &m);
	if (r == CUDA_SUCCESS)
		*module = (CUmodule)m;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
	return module_load_call(module, image, 0);
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image,
                                    unsigned int numOptions,
                                    CUjit_option *options, void **optionValues)
{
	if (numOptions > 0 && (options == NULL || optionValues == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	return module_load_call(module, image, 0);
}

CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	if (fatCubin != NULL && !gs__fatbin_is(fatCubin))
		return CUDA_ERROR_INVALID_IMAGE;
	return module_load_call(module, fatCubin, 0);
}

/* Reads a whole file (NUL-terminated). OUT: *len. NULL when it cannot. */
static char *read_file(const char *path, size_t *len_out)
{
	FILE *f = fopen(path, "rbe");
	char *buf = NULL;
	long len;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
	    len < (64L << 20) && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)len + 1);
		if (buf != NULL &&
		    fread(buf, 1, (size_t)len, f) != (size_t)len) {
			free(buf);
			buf = NULL;
		} else if (buf != NULL) {
			buf[len] = '\0';
			*len_out = (size_t)len;
		}
	}
	fclose(f);
	return buf;
}

CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname)
{
	char *text;
	size_t len = 0;
	CUresult r;

	if (module == NULL || fname == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	text = read_file(fname, &len);
	if (text == NULL)
		return CUDA_ERROR_FILE_NOT_FOUND;
	r = module_load_call(module, text, len);
	free(text);
	return r;
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(hmod, GS__H_MODULE))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		module_free((struct gs__module *)hmod);
	gs__unlock();
	return r;
}

static struct gs__func *find_func(struct gs__module *m, const char *name)
{
	for (int i = 0; i < m->n_entries; i++)
		if (strcmp(m->entries[i].name, name) == 0)
			return &m->funcs[i];
	return NULL;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod,
                                     const char *name)
{
	struct gs__func *f;
	CUresult r;

	if (hfunc == NULL || name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(hmod, GS__H_MODULE))
		r = CUDA_ERROR_INVALID_HANDLE;
	else if ((f = find_func((struct gs__module *)hmod, name)) == NULL)
		r = CUDA_ERROR_NOT_FOUND;
	else
		*hfunc = (CUfunction)f;
	gs__unlock();
	return r;
}

/*
 * The entry count of a module or library handle (`kind` says which), and
 * its functions (CUfunction and CUkernel are both &funcs[i] here): the
 * bodies of cuModuleGetFunctionCount/EnumerateFunctions and
 * cuLibraryGetKernelCount/EnumerateKernels.
 */
static CUresult entry_count(const void *h, enum gs__htype kind,
                            unsigned int *count)
{
	CUresult r;

	if (count == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(h, kind))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		*count = (unsigned)((const struct gs__module *)h)->n_entries;
	gs__unlock();
	return r;
}

static CUresult entry_list(void *h, enum gs__htype kind, void *out,
                           unsigned int n)
{
	struct gs__module *m = h;
	CUresult r;

	if (out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(m, kind))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		for (int i = 0; i < m->n_entries && (unsigned)i < n; i++)
			if (kind == GS__H_MODULE)
				((CUfunction *)out)[i] =
				    (CUfunction)&m->funcs[i];
			else
				((CUkernel *)out)[i] = (CUkernel)&m->funcs[i];
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuModuleGetFunctionCount(unsigned int *count, CUmodule mod)
{
	return entry_count(mod, GS__H_MODULE, count);
}

CUresult CUDAAPI cuModuleEnumerateFunctions(CUfunction *functions,
                                            unsigned int numFunctions,
                                            CUmodule mod)
{
	return entry_list(mod, GS__H_MODULE, functions, numFunctions);
}

/*
 * A global's address in the current context (module: its own context).
 * Either out pointer may be NULL. Lock held.
 */
static CUresult global_get(struct gs__module *m, const char *name,
                           bool want_managed, CUdeviceptr *dptr,
                           size_t *bytes)
{
	/* a library's module shares the library's globals */
	struct gs__global *g = find_global(m->lib ? m->lib : m, name);
	struct gs__ctx *ctx;
	uint64_t p;
	CUresult r;

	if (g == NULL || (want_managed && !g->managed))
		return CUDA_ERROR_NOT_FOUND;
	if (m->ctx != NULL) {
		ctx = m->ctx;
		r = gs__ctx_error(ctx);
	} else {
		r = gs__ctx_get(&ctx);
		/* A library's __managed__ variable needs no context: the
		 * runtime asks for it before it makes one. */
		if (r == CUDA_ERROR_INVALID_CONTEXT && want_managed) {
			ctx = NULL;
			r = CUDA_SUCCESS;
		}
	}
	if (r != CUDA_SUCCESS)
		return r;
	r = global_in(g, ctx, &p);
	if (r != CUDA_SUCCESS)
		return r;
	if (dptr != NULL)
		*dptr = (CUdeviceptr)p;
	if (bytes != NULL)
		*bytes = (size_t)g->size;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes,
                                      CUmodule hmod, const char *name)
{
	CUresult r;

	if (name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(hmod, GS__H_MODULE))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		r = global_get((struct gs__module *)hmod, name, false, dptr,
		               bytes);
	gs__unlock();
	return r;
}

/* ---- libraries -------------------------------------------------------- */

static CUresult library_load(CUlibrary *library, const void *code, size_t len,
                             CUjit_option *jitOptions, void **jitOptionsValues,
                             unsigned int numJitOptions,
                             CUlibraryOption *libraryOptions,
                             void **libraryOptionValues,
                             unsigned int numLibraryOptions)
{
	struct gs__module *m;
	CUresult r;

	if (library == NULL || code == NULL ||
	    (numJitOptions > 0 &&
	     (jitOptions == NULL || jitOptionsValues == NULL)) ||
	    (numLibraryOptions > 0 &&
	     (libraryOptions == NULL || libraryOptionValues == NULL)))
		return CUDA_ERROR_INVALID_VALUE;
	/* CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE and
	 * CU_LIBRARY_BINARY_IS_PRESERVED change nothing here: the sim keeps
	 * its own copy of the PTX */
	for (unsigned i = 0; i < numLibraryOptions; i++)
		if ((unsigned)libraryOptions[i] >= CU_LIBRARY_NUM_OPTIONS)
			return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = module_load(code, len, NULL, true, &m);
	if (r == CUDA_SUCCESS)
		*library = (CUlibrary)m;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code,
                                   CUjit_option *jitOptions,
                                   void **jitOptionsValues,
                                   unsigned int numJitOptions,
                                   CUlibraryOption *libraryOptions,
                                   void **libraryOptionValues,
                                   unsigned int numLibraryOptions)
{
	return library_load(library, code, 0, jitOptions, jitOptionsValues,
	                    numJitOptions, libraryOptions, libraryOptionValues,
	                    numLibraryOptions);
}

CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                       CUjit_option *jitOptions,
                                       void **jitOptionsValues,
                                       unsigned int numJitOptions,
                                       CUlibraryOption *libraryOptions,
                                       void **libraryOptionValues,
                                       unsigned int numLibraryOptions)
{
	char *text;
	size_t len = 0;
	CUresult r;

	if (fileName == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	text = read_file(fileName, &len);
	if (text == NULL)
		return CUDA_ERROR_FILE_NOT_FOUND;
	r = library_load(library, text, len, jitOptions, jitOptionsValues,
	                 numJitOptions, libraryOptions, libraryOptionValues,
	                 numLibraryOptions);
	free(text);
	return r;
}

CUresult CUDAAPI cuLibraryUnload(CUlibrary library)
{
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(library, GS__H_LIBRARY))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		module_free((struct gs__module *)library);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library,
                                    const char *name)
{
	struct gs__func *f;
	CUresult r;

	if (pKernel == NULL || name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(library, GS__H_LIBRARY))
		r = CUDA_ERROR_INVALID_HANDLE;
	else if ((f = find_func((struct gs__module *)library, name)) == NULL)
		r = CUDA_ERROR_NOT_FOUND;
	else
		*pKernel = (CUkernel)f;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
	return entry_count(lib, GS__H_LIBRARY, count);
}

CUresult CUDAAPI cuLibraryEnumerateKernels(CUkernel *kernels,
                                           unsigned int numKernels,
                                           CUlibrary lib)
{
	return entry_list(lib, GS__H_LIBRARY, kernels, numKernels);
}

CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes,
                                    CUlibrary library, const char *name)
{
	CUresult r;

	if (name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(library, GS__H_LIBRARY))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		r = global_get((struct gs__module *)library, name, false, dptr,
		               bytes);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes,
                                     CUlibrary library, const char *name)
{
	CUresult r;

	if (name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(library, GS__H_LIBRARY))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		r = global_get((struct gs__module *)library, name, true, dptr,
		               bytes);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuLibraryGetUnifiedFunction(void **fptr, CUlibrary library,
                                             const char *symbol)
{
	CUresult r;

	if (fptr == NULL || symbol == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	/* PTX images carry no unified (host-callable) functions */
	r = gs__h_is(library, GS__H_LIBRARY) ? CUDA_ERROR_NOT_FOUND
	                                     : CUDA_ERROR_INVALID_HANDLE;
	gs__unlock();
	return r;
}

/*
 * The library's module in the current context: a second load of its PTX
 * for that context, made once and unloaded with the library (or with the
 * context, in which case the next call makes a new one). Its globals are
 * the library's (cuModuleGetGlobal and cuLibraryGetGlobal agree).
 */
CUresult CUDAAPI cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
	struct gs__module *lib = (struct gs__module *)library, *m;
	struct gs__ctx *ctx;
	CUresult r;

	if (pMod == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(lib, GS__H_LIBRARY)) {
		r = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	r = gs__ctx_get(&ctx);
	if (r != CUDA_SUCCESS)
		goto out;
	if (lib->ctx_mod != NULL && lib->ctx_mod->ctx == ctx) {
		*pMod = (CUmodule)lib->ctx_mod;
		goto out;
	}
	r = module_load(lib->image, 0, ctx, false, &m);
	if (r != CUDA_SUCCESS)
		goto out;
	/* its globals are the library's in this context, not copies */
	globals_free(m->globals, m->n_globals);
	m->globals = NULL;
	m->n_globals = 0;
	m->lib = lib;
	if (lib->ctx_mod != NULL)
		module_free(lib->ctx_mod);
	lib->ctx_mod = m;
	*pMod = (CUmodule)m;
out:
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	struct gs__ctx *ctx;
	CUresult r;

	if (pFunc == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__ctx_get(&ctx);
	if (r == CUDA_SUCCESS && !gs__h_is(kernel, GS__H_FUNC))
		r = CUDA_ERROR_INVALID_HANDLE;
	if (r == CUDA_SUCCESS)
		*pFunc = (CUfunction)kernel;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel)
{
	struct gs__func *f;
	CUresult r;

	if (pLib == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get((CUfunction)kernel, &f);
	if (r == CUDA_SUCCESS && !f->mod->library)
		r = CUDA_ERROR_INVALID_HANDLE;
	if (r == CUDA_SUCCESS)
		*pLib = (CUlibrary)f->mod;
	gs__unlock();
	return r;
}

/* ---- functions -------------------------------------------------------- */

CUresult gs__func_get(CUfunction f, struct gs__func **out)
{
	if (!gs__h_is(f, GS__H_FUNC))
		return CUDA_ERROR_INVALID_HANDLE;
	*out = (struct gs__func *)f;
	return CUDA_SUCCESS;
}

static CUresult func_attr(struct gs__func *f, CUfunction_attribute a, int *v)
{
	const struct gs__dev *d = gs__drv.n_dev ? &gs__drv.dev[0] : NULL;
	int cc = d ? (int)(d->cc_major * 10 + d->cc_minor) : 90;

	switch (a) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		*v = (int)f->entry->max_threads;
		break;
	case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
		*v = (int)f->entry->shared_bytes;
		break;
	case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
		*v = (int)f->entry->local_bytes;
		break;
	case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
	case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
	case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
	case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
	case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		*v = 0;
		break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS:
		*v = 32;
		break;
	case CU_FUNC_ATTRIBUTE_PTX_VERSION:
		*v = f->entry->ptx_version;
		break;
	case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
		*v = cc;
		break;
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		*v = f->max_dyn_smem;
		break;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		*v = f->carveout;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib,
                                    CUfunction hfunc)
{
	struct gs__func *f;
	CUresult r;

	if (pi == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(hfunc, &f);
	if (r == CUDA_SUCCESS)
		r = func_attr(f, attrib, pi);
	gs__unlock();
	return r;
}

static CUresult func_set_attr(struct gs__func *f, CUfunction_attribute a, int v)
{
	switch (a) {
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		if (v < 0 || v > 232448)
			return CUDA_ERROR_INVALID_VALUE;
		f->max_dyn_smem = v;
		return CUDA_SUCCESS;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		if (v < -1 || v > 100)
			return CUDA_ERROR_INVALID_VALUE;
		f->carveout = v;
		return CUDA_SUCCESS;
	case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
	case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc,
                                    CUfunction_attribute attrib, int value)
{
	struct gs__func *f;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(hfunc, &f);
	if (r == CUDA_SUCCESS)
		r = func_set_attr(f, attrib, value);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
	struct gs__func *f;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(hfunc, &f);
	if (r == CUDA_SUCCESS)
		f->cache_config = config;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction hfunc)
{
	struct gs__func *f;
	CUresult r;

	if (name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(hfunc, &f);
	if (r == CUDA_SUCCESS)
		*name = f->entry->name;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func, size_t paramIndex,
                                    size_t *paramOffset, size_t *paramSize)
{
	struct gs__func *f;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(func, &f);
	if (r == CUDA_SUCCESS && paramIndex >= (size_t)f->entry->n_params)
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS) {
		if (paramOffset != NULL)
			*paramOffset = f->entry->param_off[paramIndex];
		if (paramSize != NULL)
			*paramSize = f->entry->param_size[paramIndex];
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
	struct gs__func *f;
	CUresult r;

	if (hmod == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(hfunc, &f);
	if (r == CUDA_SUCCESS)
		*hmod = f->mod->library ? NULL : (CUmodule)f->mod;
	gs__unlock();
	return r;
}

/* CUDA_ERROR_INVALID_DEVICE unless dev is one of ours (the cuKernel*
 * calls that name a device; a kernel's attributes are the same on all). */
static CUresult kernel_dev_check(CUdevice dev)
{
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__dev_get(dev) != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuKernelGetAttribute(int *pi, CUfunction_attribute attrib,
                                      CUkernel kernel, CUdevice dev)
{
	CUresult r;

	if (pi == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = kernel_dev_check(dev)) != CUDA_SUCCESS)
		return r;
	return cuFuncGetAttribute(pi, attrib, (CUfunction)kernel);
}

CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int val,
                                      CUkernel kernel, CUdevice dev)
{
	CUresult r;

	if ((r = kernel_dev_check(dev)) != CUDA_SUCCESS)
		return r;
	return cuFuncSetAttribute((CUfunction)kernel, attrib, val);
}

CUresult CUDAAPI cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config,
                                        CUdevice dev)
{
	CUresult r;

	if ((r = kernel_dev_check(dev)) != CUDA_SUCCESS)
		return r;
	return cuFuncSetCacheConfig((CUfunction)kernel, config);
}

CUresult CUDAAPI cuKernelGetName(const char **name, CUkernel hfunc)
{
	return cuFuncGetName(name, (CUfunction)hfunc);
}

CUresult CUDAAPI cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex,
                                      size_t *paramOffset, size_t *paramSize)
{
	return cuFuncGetParamInfo((CUfunction)kernel, paramIndex, paramOffset,
	                          paramSize);
}

/* ---- cost of unknown kernels ------------------------------------------- */

void gs__kernel_cost(const struct gs__launch *l, const struct gs__dev *d,
                     uint64_t *dur, uint32_t *sms)
{
	const struct gs__entry *e = l->func->entry;

	if (e->kcost == NULL) {
		uint64_t blocks = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];

		*sms = (uint32_t)(blocks < d->sm_count ? blocks : d->sm_count);
		if (*sms == 0)
			*sms = 1;
		*dur = GS_SIM_DEFAULT_KERNEL_NS;
		return;
	}
	*dur = gs__kcost_ns(e->kcost, l->args, e->param_off, e->n_params,
	                    l->grid, l->block, d->sm_count,
	                    gs__dev_clock_khz(d), sms);
}

/* ---- occupancy --------------------------------------------------------- */

static int occupancy(int block, size_t smem)
{
	int warps = (block + 31) / 32;
	int by_warps, by_regs, n = 32;

	if (block <= 0 || block > 1024)
		return 0;
	by_warps = 64 / warps;
	by_regs = 65536 / (32 * warps * 32);
	if (by_warps < n)
		n = by_warps;
	if (by_regs < n)
		n = by_regs;
	if (smem > 0) {
		int by_smem = (int)(233472 / (smem + 1024));
		if (by_smem < n)
			n = by_smem;
	}
	return n;
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(
    int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize)
{
	struct gs__func *f;
	CUresult r;

	if (numBlocks == NULL || blockSize <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(func, &f);
	if (r == CUDA_SUCCESS)
		*numBlocks = occupancy(blockSize, dynamicSMemSize +
		                                      f->entry->shared_bytes);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize,
    unsigned int flags)
{
	return cuOccupancyMaxActiveBlocksPerMultiprocessor(
	    numBlocks, func, blockSize, dynamicSMemSize);
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(
    int *minGridSize, int *blockSize, CUfunction func,
    CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
    int blockSizeLimit)
{
	struct gs__func *f;
	int best = 0, best_block = 32, sms, maxt = 1024;
	size_t stat = 0;
	CUresult r;

	if (minGridSize == NULL || blockSize == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(func, &f);
	sms = gs__drv.n_dev ? (int)gs__drv.dev[0].sm_count : 1;
	{
		struct gs__ctx *c = gs__ctx_current();
		if (c != NULL)
			sms = (int)gs__drv.dev[c->dev].sm_count;
	}
	if (r == CUDA_SUCCESS) {
		maxt = (int)f->entry->max_threads;
		stat = f->entry->shared_bytes;
	}
	gs__unlock();
	if (r != CUDA_SUCCESS)
		return r;
	if (blockSizeLimit <= 0 || blockSizeLimit > maxt)
		blockSizeLimit = maxt;
	if (blockSizeLimit < 32)
		best_block = blockSizeLimit;
	for (int b = 32; b <= blockSizeLimit; b += 32) {
		size_t smem = blockSizeToDynamicSMemSize
		                  ? blockSizeToDynamicSMemSize(b)
		                  : dynamicSMemSize;
		int warps = occupancy(b, smem + stat) * ((b + 31) / 32);

		if (warps >= best) {
			best = warps;
			best_block = b;
		}
	}
	*blockSize = best_block;
	*minGridSize = occupancy(best_block, (blockSizeToDynamicSMemSize
	                                          ? blockSizeToDynamicSMemSize(
	                                                best_block)
	                                          : dynamicSMemSize) +
	                                         stat) *
	               sms;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(
    int *minGridSize, int *blockSize, CUfunction func,
    CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
    int blockSizeLimit, unsigned int flags)
{
	return cuOccupancyMaxPotentialBlockSize(
	    minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
	    dynamicSMemSize, blockSizeLimit);
}

CUresult CUDAAPI cuOccupancyAvailableDynamicSMemPerBlock(
    size_t *dynamicSmemSize, CUfunction func, int numBlocks, int blockSize)
{
	struct gs__func *f;
	CUresult r;

	if (dynamicSmemSize == NULL || numBlocks <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(func, &f);
	gs__unlock();
	if (r == CUDA_SUCCESS)
		*dynamicSmemSize = 233472 / (size_t)numBlocks - 1024;
	return r;
}

/*
 * Clusters of the launch `config` describes that fit on the device at
 * once: blocks resident per SM (occupancy above) times the SMs, divided
 * by the cluster's size (its CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, 1
 * when not given). Clusters above 8 blocks (not portable) fit nowhere.
 */
CUresult CUDAAPI cuOccupancyMaxActiveClusters(int *numClusters,
                                              CUfunction func,
                                              const CUlaunchConfig *config)
{
	struct gs__func *f;
	struct gs__ctx *ctx;
	uint64_t cluster = 1, block, resident;
	CUresult r;

	if (numClusters == NULL || config == NULL ||
	    (config->numAttrs > 0 && config->attrs == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < config->numAttrs; i++)
		if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
			const CUlaunchAttributeValue *v = &config->attrs[i].value;

			cluster = (uint64_t)v->clusterDim.x * v->clusterDim.y *
			          v->clusterDim.z;
		}
	block = (uint64_t)config->blockDimX * config->blockDimY *
	        config->blockDimZ;
	if (cluster == 0 || block == 0 || block > 1024)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(func, &f);
	if (r == CUDA_SUCCESS)
		r = gs__ctx_get(&ctx);
	if (r == CUDA_SUCCESS) {
		resident = (uint64_t)occupancy((int)block,
		                               config->sharedMemBytes +
		                                   f->entry->shared_bytes) *
		           gs__drv.dev[ctx->dev].sm_count;
		*numClusters = cluster > 8 ? 0 : (int)(resident / cluster);
	}
	gs__unlock();
	return r;
}

/*
 * The largest cluster the launch `config` could use: 8 blocks (the
 * portable limit; the sim's kernels never opt into larger ones), fewer
 * when the grid's x extent is smaller than 8 and not a multiple of it.
 */
CUresult CUDAAPI cuOccupancyMaxPotentialClusterSize(int *clusterSize,
                                                    CUfunction func,
                                                    const CUlaunchConfig *config)
{
	struct gs__func *f;
	int size = 8;
	CUresult r;

	if (clusterSize == NULL || config == NULL || config->gridDimX == 0)
		return CUDA_ERROR_INVALID_VALUE;
	while (size > 1 && config->gridDimX % (unsigned)size != 0)
		size /= 2;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(func, &f);
	gs__unlock();
	if (r == CUDA_SUCCESS)
		*clusterSize = size;
	return r;
}

/* Bank size is fixed on the GPUs the sim models (sm_70 and later): the
 * setting is checked and accepted, and changes nothing, as there. */
CUresult CUDAAPI cuFuncSetSharedMemConfig(CUfunction hfunc,
                                          CUsharedconfig config)
{
	struct gs__func *f;
	CUresult r;

	if ((unsigned)config > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(hfunc, &f);
	gs__unlock();
	return r;
}
