/*
 * exec_parse.c - reads PTX text for the interpreter (exec.h): the module's
 * functions and module-scope variables once per module (struct gs__xmod,
 * cached in the module), then one linked program per launched entry: its
 * instructions and those of every .func it calls, decoded into struct
 * gs__xins with rows, labels, symbols and call sites resolved. Names of
 * any length. An instruction outside the interpreter's subset becomes
 * XO_BAD (the launch fails when a thread reaches it).
 */
#include "exec.h"
#include "halloc.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the module: functions and variables ------------------------------ */

struct xfunc {
	char *name;
	bool entry;
	const char *ret, *ret_end;       /* return parameter list, or NULL */
	const char *params, *params_end; /* parameter list */
	const char *body, *body_end;     /* between the braces, or NULL */
};

struct xvar {
	char *name;
	int space; /* XSP_SHARED, XSP_GLOBAL (.global and .const) */
	uint64_t size, align;
	bool dynamic; /* extern .shared x[] */
};

struct gs__xmod {
	char *text; /* comments blanked */
	struct xfunc *funcs;
	int n_funcs;
	struct xvar *vars;
	int n_vars;
	struct gs__xprog *progs;
};

static char *dupn(const char *s, size_t n)
{
	char *p = gs__malloc(n + 1);

	if (p != NULL) {
		memcpy(p, s, n);
		p[n] = 0;
	}
	return p;
}

static bool idc(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.' ||
	       c == '%';
}

static const char *skip_ws(const char *p)
{
	while (*p && isspace((unsigned char)*p))
		p++;
	return p;
}

/* The word at p (identifier chars); *n its length. */
static const char *word(const char *p, size_t *n)
{
	const char *s;

	p = skip_ws(p);
	s = p;
	while (idc(*p))
		p++;
	*n = (size_t)(p - s);
	return s;
}

static bool is(const char *w, size_t n, const char *lit)
{
	return strlen(lit) == n && memcmp(w, lit, n) == 0;
}

/* Matching close of the bracket at p (same kind), or NULL. */
static const char *match(const char *p)
{
	char o = *p, c = o == '(' ? ')' : o == '{' ? '}' : ']';
	int depth = 0;

	for (; *p; p++) {
		if (*p == o)
			depth++;
		else if (*p == c && --depth == 0)
			return p;
	}
	return NULL;
}

static int type_bytes(const char *w, size_t n)
{
	if (is(w, n, ".pred"))
		return 1;
	if (n >= 3 && w[0] == '.' && strchr("usbf", w[1]) != NULL &&
	    isdigit((unsigned char)w[2])) {
		int bits = atoi(w + 2);
		return bits >= 8 ? bits / 8 : 1;
	}
	return 0;
}

/* Reads "[.align A] .type name[N][M]" declarations' size and alignment.
 * p is after the state space; stops at end. OUT: name span. */
static void decl_shape(const char *p, const char *end, const char **name,
                       size_t *name_n, uint64_t *size, uint64_t *align,
                       bool *dyn)
{
	uint64_t elem = 0, count = 1;
	size_t n;

	*align = 0;
	*dyn = false;
	*name = NULL;
	*name_n = 0;
	while (p < end) {
		const char *w = word(p, &n);

		if (n == 0) {
			p = w + 1;
			continue;
		}
		p = w + n;
		if (is(w, n, ".align")) {
			*align = strtoull(p, (char **)&p, 0);
		} else if (w[0] == '.' && type_bytes(w, n) > 0) {
			elem = (uint64_t)type_bytes(w, n);
		} else if (w[0] == '.') {
			continue; /* .v4, .ptr, ... */
		} else {
			*name = w;
			*name_n = n;
			break;
		}
	}
	if (*name != NULL && strncmp(*name, "", 0) == 0)
		(void)0;
	/* vector variables: .v2/.v4 multiply */
	for (const char *q = *name ? *name : end; q < end && *q != '=' &&
	                                          *q != ';' && *q != ',';
	     q++) {
		if (*q == '[') {
			const char *c = strchr(q, ']');
			if (c == NULL || c > end)
				break;
			if (c == q + 1 || !isdigit((unsigned char)q[1]))
				*dyn = true;
			else
				count *= strtoull(q + 1, NULL, 0);
			q = c;
		}
	}
	*size = elem * count;
	if (*align == 0)
		*align = elem ? elem : 1;
}

static void blank_comments(char *t)
{
	for (char *p = t; *p; p++) {
		if (*p == '"') {
			for (p++; *p && *p != '"'; p++)
				;
			if (!*p)
				return;
		} else if (p[0] == '/' && p[1] == '/') {
			while (*p && *p != '\n')
				*p++ = ' ';
			if (!*p)
				return;
		} else if (p[0] == '/' && p[1] == '*') {
			while (*p && !(p[0] == '*' && p[1] == '/'))
				*p++ = ' ';
			if (!*p)
				return;
			p[0] = p[1] = ' ';
			p++;
		}
	}
}

static void xmod_free(struct gs__xmod *m);

static struct gs__xmod *xmod_read(const char *text)
{
	struct gs__xmod *m = gs__calloc(1, sizeof(*m));
	int cap_f = 0, cap_v = 0;
	const char *p;

	if (m == NULL || (m->text = dupn(text, strlen(text))) == NULL)
		goto fail;
	blank_comments(m->text);
	p = m->text;
	for (;;) {
		const char *w, *stmt = skip_ws(p);
		size_t n;
		bool is_entry = false, is_func = false;
		int space = -1;
		bool ext = false;

		if (*stmt == 0)
			break;
		if (*stmt == '{') { /* stray block */
			const char *c = match(stmt);
			if (c == NULL)
				break;
			p = c + 1;
			continue;
		}
		/* directives that end at the line's end, not at a ';' */
		w = word(stmt, &n);
		if (is(w, n, ".version") || is(w, n, ".target") ||
		    is(w, n, ".address_size") || is(w, n, ".file") ||
		    is(w, n, ".loc")) {
			p = strchr(stmt, '\n');
			if (p == NULL)
				break;
			continue;
		}
		/* scan the leading directives of a top-level statement */
		p = stmt;
		for (;;) {
			w = word(p, &n);
			if (n == 0)
				break;
			if (is(w, n, ".entry"))
				is_entry = true;
			else if (is(w, n, ".func"))
				is_func = true;
			else if (is(w, n, ".shared"))
				space = XSP_SHARED;
			else if (is(w, n, ".global") || is(w, n, ".const"))
				space = XSP_GLOBAL;
			else if (is(w, n, ".extern"))
				ext = true;
			if (is_entry || is_func || space >= 0 ||
			    !(is(w, n, ".visible") || is(w, n, ".extern") ||
			      is(w, n, ".weak") || is(w, n, ".common"))) {
				p = w + n;
				break;
			}
			p = w + n;
		}
		if (is_entry || is_func) {
			struct xfunc f = {0};
			const char *q = skip_ws(p);

			f.entry = is_entry;
			if (*q == '(') { /* return parameters */
				f.ret = q + 1;
				f.ret_end = match(q);
				if (f.ret_end == NULL)
					break;
				q = skip_ws(f.ret_end + 1);
			}
			w = word(q, &n);
			f.name = dupn(w, n);
			if (f.name == NULL)
				goto fail;
			q = skip_ws(w + n);
			if (*q == '(') {
				f.params = q + 1;
				f.params_end = match(q);
				if (f.params_end == NULL) {
					free(f.name);
					break;
				}
				q = f.params_end + 1;
			}
			while (*q && *q != '{' && *q != ';')
				q++;
			if (*q == '{') {
				const char *c = match(q);
				if (c == NULL) {
					free(f.name);
					break;
				}
				f.body = q + 1;
				f.body_end = c;
				p = c + 1;
			} else {
				p = *q ? q + 1 : q;
			}
			/* a definition replaces an earlier prototype */
			int at = -1;
			for (int i = 0; i < m->n_funcs; i++)
				if (strcmp(m->funcs[i].name, f.name) == 0)
					at = i;
			if (at >= 0) {
				if (f.body != NULL) {
					free(m->funcs[at].name);
					m->funcs[at] = f;
				} else {
					free(f.name);
				}
				continue;
			}
			if (m->n_funcs == cap_f) {
				int nc = cap_f ? cap_f * 2 : 16;
				struct xfunc *nf = gs__realloc(
				    m->funcs, sizeof(*nf) * (size_t)nc);
				if (nf == NULL) {
					free(f.name);
					goto fail;
				}
				m->funcs = nf;
				cap_f = nc;
			}
			m->funcs[m->n_funcs++] = f;
			continue;
		}
		{
			const char *end = strchr(p, ';');
			const char *eq;
			struct xvar v = {0};
			const char *name;
			size_t nn;

			if (end == NULL)
				break;
			if (space >= 0) {
				eq = memchr(p, '=', (size_t)(end - p));
				decl_shape(p, eq ? eq : end, &name, &nn,
				           &v.size, &v.align, &v.dynamic);
				if (name != NULL) {
					v.name = dupn(name, nn);
					v.space = space;
					v.dynamic = v.dynamic && ext;
					if (v.name == NULL)
						goto fail;
					if (m->n_vars == cap_v) {
						int nc = cap_v ? cap_v * 2 : 16;
						struct xvar *nv = gs__realloc(
						    m->vars,
						    sizeof(*nv) * (size_t)nc);
						if (nv == NULL) {
							free(v.name);
							goto fail;
						}
						m->vars = nv;
						cap_v = nc;
					}
					m->vars[m->n_vars++] = v;
				}
			}
			p = end + 1;
		}
	}
	return m;
fail:
	xmod_free(m);
	return NULL;
}

static void prog_free(struct gs__xprog *p)
{
	if (p == NULL)
		return;
	for (int i = 0; i < p->n_syms; i++)
		free(p->syms[i].name);
	free(p->syms);
	free(p->rows);
	free(p->code);
	free(p->calls);
	free(p->entry);
	free(p);
}

static void xmod_free(struct gs__xmod *m)
{
	if (m == NULL)
		return;
	for (int i = 0; i < m->n_funcs; i++)
		free(m->funcs[i].name);
	for (int i = 0; i < m->n_vars; i++)
		free(m->vars[i].name);
	while (m->progs != NULL) {
		struct gs__xprog *n = m->progs->next;
		prog_free(m->progs);
		m->progs = n;
	}
	free(m->funcs);
	free(m->vars);
	free(m->text);
	free(m);
}

void gs__xmod_free(struct gs__xmod *m)
{
	xmod_free(m);
}

/* ---- linking one entry ------------------------------------------------- */

struct regdecl {
	const char *prefix; /* in the text */
	size_t n;
	int count; /* %r<count>, or -1: one register named prefix */
	int base;
};

struct label {
	const char *name;
	size_t n;
	int pc;
};

struct fixup {
	int pc;
	const char *name;
	size_t n;
};

/* A linker's state while it decodes one entry and its callees. */
struct lk {
	struct gs__xmod *m;
	struct gs__xprog *p;
	int cap_code, cap_rows, cap_syms, cap_calls;
	/* the function being decoded */
	int fi;
	struct regdecl *regs;
	int n_regs, cap_regs;
	struct label *labels;
	int n_labels, cap_labels;
	struct fixup *fix;
	int n_fix, cap_fix;
	/* functions linked: index into m->funcs -> start pc (-1 queued) */
	int *start;
	int *queue, n_queue;
	int sink; /* row for '_' */
	bool oom;
};

static bool grow(void **arr, int *cap, int need, size_t elem)
{
	if (need <= *cap)
		return true;
	int nc = *cap ? *cap * 2 : 64;
	while (nc < need)
		nc *= 2;
	void *n = gs__realloc(*arr, elem * (size_t)nc);
	if (n == NULL)
		return false;
	*arr = n;
	*cap = nc;
	return true;
}

static int new_row(struct lk *k, uint8_t kind, uint64_t val)
{
	struct gs__xprog *p = k->p;

	if (!grow((void **)&p->rows, &k->cap_rows, p->n_rows + 1,
	          sizeof(*p->rows))) {
		k->oom = true;
		return 0;
	}
	p->rows[p->n_rows].kind = kind;
	p->rows[p->n_rows].val = val;
	return p->n_rows++;
}

static int const_row(struct lk *k, uint64_t bits)
{
	/* reuse a recent equal constant */
	struct gs__xprog *p = k->p;

	for (int i = p->n_rows - 1, seen = 0; i >= 0 && seen < 32; i--)
		if (p->rows[i].kind == XK_CONST) {
			if (p->rows[i].val == bits)
				return i;
			seen++;
		}
	return new_row(k, XK_CONST, bits);
}

static int sym_add(struct lk *k, const char *name, size_t n, int kind,
                   uint64_t off)
{
	struct gs__xprog *p = k->p;

	for (int i = 0; i < p->n_syms; i++)
		if (strlen(p->syms[i].name) == n &&
		    memcmp(p->syms[i].name, name, n) == 0 &&
		    p->syms[i].kind == kind && p->syms[i].off == off)
			return i;
	if (!grow((void **)&p->syms, &k->cap_syms, p->n_syms + 1,
	          sizeof(*p->syms))) {
		k->oom = true;
		return -1;
	}
	p->syms[p->n_syms].name = dupn(name, n);
	if (p->syms[p->n_syms].name == NULL) {
		k->oom = true;
		return -1;
	}
	p->syms[p->n_syms].kind = kind;
	p->syms[p->n_syms].off = off;
	return p->n_syms++;
}

/* Function-local symbols: name -> symbol index (the latest wins). */
struct lsym {
	const char *name;
	size_t n;
	int sym;
};

static struct lsym *lsyms;
static int n_lsyms, cap_lsyms;

static bool lsym_add(struct lk *k, const char *name, size_t n, int sym)
{
	if (sym < 0)
		return false;
	if (!grow((void **)&lsyms, &cap_lsyms, n_lsyms + 1, sizeof(*lsyms))) {
		k->oom = true;
		return false;
	}
	lsyms[n_lsyms].name = name;
	lsyms[n_lsyms].n = n;
	lsyms[n_lsyms].sym = sym;
	n_lsyms++;
	return true;
}

static int sym_row(struct lk *k, int sym)
{
	struct gs__xprog *p = k->p;

	for (int i = 0; i < p->n_rows; i++)
		if (p->rows[i].kind == XK_SYM && p->rows[i].val == (uint64_t)sym)
			return i;
	return new_row(k, XK_SYM, (uint64_t)sym);
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return a > 1 ? (v + a - 1) / a * a : v;
}

/* Finds a name's symbol: function-local, module variable, function. */
static int find_sym(struct lk *k, const char *name, size_t n)
{
	for (int i = n_lsyms - 1; i >= 0; i--)
		if (lsyms[i].n == n && memcmp(lsyms[i].name, name, n) == 0)
			return lsyms[i].sym;
	for (int i = 0; i < k->m->n_vars; i++) {
		struct xvar *v = &k->m->vars[i];

		if (strlen(v->name) != n || memcmp(v->name, name, n) != 0)
			continue;
		if (v->space == XSP_GLOBAL)
			return sym_add(k, name, n, XY_GLOBAL, 0);
		/* module .shared: placed on first use */
		for (int s = 0; s < k->p->n_syms; s++)
			if (k->p->syms[s].kind == XY_SHARED &&
			    strcmp(k->p->syms[s].name, v->name) == 0)
				return s;
		if (v->dynamic)
			return sym_add(k, name, n, XY_SHARED, UINT64_MAX);
		k->p->shared_static =
		    (uint32_t)align_up(k->p->shared_static, v->align);
		int s = sym_add(k, name, n, XY_SHARED, k->p->shared_static);
		k->p->shared_static += (uint32_t)v->size;
		return s;
	}
	for (int i = 0; i < k->m->n_funcs; i++)
		if (strlen(k->m->funcs[i].name) == n &&
		    memcmp(k->m->funcs[i].name, name, n) == 0)
			return sym_add(k, name, n, XY_FUNC, (uint64_t)i);
	return -1;
}

static int find_reg(struct lk *k, const char *name, size_t n)
{
	size_t pre = n;

	while (pre > 0 && isdigit((unsigned char)name[pre - 1]))
		pre--;
	for (int i = k->n_regs - 1; i >= 0; i--) {
		struct regdecl *r = &k->regs[i];

		if (r->count < 0) {
			if (r->n == n && memcmp(r->prefix, name, n) == 0)
				return r->base;
		} else if (pre < n && r->n == pre &&
		           memcmp(r->prefix, name, pre) == 0) {
			long num = strtol(name + pre, NULL, 10);
			if (num < r->count)
				return r->base + (int)num;
		}
	}
	return -1;
}

static const struct {
	const char *name;
	int sr;
} specials[] = {
    {"%tid.x", XSR_TID_X},
    {"%tid.y", XSR_TID_Y},
    {"%tid.z", XSR_TID_Z},
    {"%ntid.x", XSR_NTID_X},
    {"%ntid.y", XSR_NTID_Y},
    {"%ntid.z", XSR_NTID_Z},
    {"%ctaid.x", XSR_CTAID_X},
    {"%ctaid.y", XSR_CTAID_Y},
    {"%ctaid.z", XSR_CTAID_Z},
    {"%nctaid.x", XSR_NCTAID_X},
    {"%nctaid.y", XSR_NCTAID_Y},
    {"%nctaid.z", XSR_NCTAID_Z},
    {"%laneid", XSR_LANEID},
    {"%warpid", XSR_WARPID},
    {"%nwarpid", XSR_NWARPID},
    {"%smid", XSR_SMID},
    {"%nsmid", XSR_NSMID},
    {"%gridid", XSR_GRIDID},
    {"%lanemask_eq", XSR_LANEMASK_EQ},
    {"%lanemask_lt", XSR_LANEMASK_LT},
    {"%lanemask_le", XSR_LANEMASK_LE},
    {"%lanemask_gt", XSR_LANEMASK_GT},
    {"%lanemask_ge", XSR_LANEMASK_GE},
    {"%dynamic_smem_size", XSR_DYN_SMEM},
    {"%total_smem_size", XSR_TOTAL_SMEM},
    {"%cluster_ctarank", XSR_CLUSTER_CTARANK},
    {"%cluster_nctarank", XSR_CLUSTER_NCTARANK},
    {"%clusterid.x", XSR_CLUSTERID_X},
    {"%clusterid.y", XSR_CLUSTERID_Y},
    {"%clusterid.z", XSR_CLUSTERID_Z},
    {"%nclusterid.x", XSR_NCLUSTERID_X},
    {"%nclusterid.y", XSR_NCLUSTERID_Y},
    {"%nclusterid.z", XSR_NCLUSTERID_Z},
    {"%cluster_ctaid.x", XSR_CLUSTER_CTAID_X},
    {"%cluster_ctaid.y", XSR_CLUSTER_CTAID_Y},
    {"%cluster_ctaid.z", XSR_CLUSTER_CTAID_Z},
    {"%cluster_nctaid.x", XSR_CLUSTER_NCTAID_X},
    {"%cluster_nctaid.y", XSR_CLUSTER_NCTAID_Y},
    {"%cluster_nctaid.z", XSR_CLUSTER_NCTAID_Z},
    {"%is_explicit_cluster", XSR_IS_EXPLICIT_CLUSTER},
    {"%envreg0", XSR_ENVREG + 0},
};

/* Special-register rows, one per kind per program. */
static int special_row(struct lk *k, int sr)
{
	struct gs__xprog *p = k->p;

	for (int i = 0; i < p->n_rows; i++)
		if (p->rows[i].kind == XK_SPECIAL && p->rows[i].val == (uint64_t)sr)
			return i;
	return new_row(k, XK_SPECIAL, (uint64_t)sr);
}

static bool is_float(int t)
{
	return t == XT_F32 || t == XT_F64 || t == XT_F16 || t == XT_BF16;
}

/* An immediate's bits for type t, or false when s is not a number. */
static bool imm_bits(const char *s, size_t n, int t, uint64_t *out)
{
	char buf[80];
	char *end;

	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = 0;
	if ((buf[0] == '0') && (buf[1] == 'f' || buf[1] == 'F') && n == 10) {
		uint32_t b = (uint32_t)strtoul(buf + 2, &end, 16);
		if (t == XT_F64) {
			float f;
			double d;
			memcpy(&f, &b, 4);
			d = f;
			memcpy(out, &d, 8);
		} else {
			*out = b;
		}
		return *end == 0;
	}
	if ((buf[0] == '0') && (buf[1] == 'd' || buf[1] == 'D') && n == 18) {
		uint64_t b = strtoull(buf + 2, &end, 16);
		if (t == XT_F32) {
			double d;
			float f;
			uint32_t u;
			memcpy(&d, &b, 8);
			f = (float)d;
			memcpy(&u, &f, 4);
			*out = u;
		} else {
			*out = b;
		}
		return *end == 0;
	}
	if (!(isdigit((unsigned char)buf[0]) || buf[0] == '-' || buf[0] == '+'))
		return false;
	if (is_float(t) && (strchr(buf, '.') || strchr(buf, 'e'))) {
		double d = strtod(buf, &end);
		if (t == XT_F32) {
			float f = (float)d;
			uint32_t u;
			memcpy(&u, &f, 4);
			*out = u;
		} else {
			memcpy(out, &d, 8);
		}
		return *end == 0;
	}
	if (buf[0] == '-')
		*out = (uint64_t)strtoll(buf, &end, 0);
	else
		*out = strtoull(buf, &end, 0);
	if (*end == 'U' || *end == 'u')
		end++;
	if (*end != 0)
		return false;
	if (is_float(t)) { /* an integer literal where a float goes */
		double d = (double)(int64_t)*out;
		if (t == XT_F32) {
			float f = (float)d;
			uint32_t u;
			memcpy(&u, &f, 4);
			*out = u;
		} else {
			memcpy(out, &d, 8);
		}
	}
	return true;
}

/* A source operand's row: register, special, immediate or symbol.
 * -1 when unknown. *neg for "!%p". */
static int operand(struct lk *k, const char *s, size_t n, int t, bool *neg)
{
	int r;
	uint64_t bits;

	while (n > 0 && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	if (neg != NULL)
		*neg = false;
	if (n > 0 && s[0] == '!') {
		if (neg != NULL)
			*neg = true;
		s++;
		n--;
	}
	if (n == 1 && s[0] == '_')
		return k->sink;
	if (n > 0 && s[0] == '%') {
		r = find_reg(k, s, n);
		if (r >= 0)
			return r;
		for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]);
		     i++)
			if (is(s, n, specials[i].name))
				return special_row(k, specials[i].sr);
		if (n > 7 && memcmp(s, "%envreg", 7) == 0)
			return special_row(k, XSR_ENVREG + atoi(s + 7));
		if (n > 4 && (memcmp(s, "%pm", 3) == 0))
			return special_row(k, XSR_ZERO);
		return -1;
	}
	if (imm_bits(s, n, t, &bits))
		return const_row(k, bits);
	r = find_reg(k, s, n); /* registers need no % */
	if (r >= 0)
		return r;
	r = find_sym(k, s, n);
	if (r >= 0)
		return sym_row(k, r);
	return -1;
}

/* ---- decoding one instruction ----------------------------------------- */

static int type_of(const char *w, size_t n)
{
	static const struct {
		const char *s;
		int t;
	} tt[] = {
	    {"b8", XT_B8},     {"b16", XT_B16},   {"b32", XT_B32},
	    {"b64", XT_B64},   {"u8", XT_U8},     {"u16", XT_U16},
	    {"u32", XT_U32},   {"u64", XT_U64},   {"s8", XT_S8},
	    {"s16", XT_S16},   {"s32", XT_S32},   {"s64", XT_S64},
	    {"f16", XT_F16},   {"f32", XT_F32},   {"f64", XT_F64},
	    {"bf16", XT_BF16}, {"f16x2", XT_F16X2}, {"b128", XT_B128},
	    {"pred", XT_PRED},
	};
	for (size_t i = 0; i < sizeof(tt) / sizeof(tt[0]); i++)
		if (is(w, n, tt[i].s))
			return tt[i].t;
	return XT_NONE;
}

static int cmp_of(const char *w, size_t n)
{
	static const char *c[] = {"eq",  "ne",  "lt",  "le",  "gt",  "ge",
	                          "lo",  "ls",  "hi",  "hs",  "equ", "neu",
	                          "ltu", "leu", "gtu", "geu", "num", "nan"};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (is(w, n, c[i]))
			return (int)i + XC_EQ;
	return 0;
}

static int rnd_of(const char *w, size_t n)
{
	static const char *c[] = {"rn", "rz", "rm", "rp", "rni", "rzi",
	                          "rmi", "rpi", "rna"};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (is(w, n, c[i]))
			return (int)i + XR_RN;
	return 0;
}

static int atom_of(const char *w, size_t n)
{
	static const char *c[] = {"add", "min", "max", "inc", "dec",
	                          "and", "or",  "xor", "exch", "cas"};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (is(w, n, c[i]))
			return (int)i + XA_ADD;
	return 0;
}

static int space_of(const char *w, size_t n)
{
	if (is(w, n, "global"))
		return XSP_GLOBAL;
	if (is(w, n, "shared") || is(w, n, "shared::cta"))
		return XSP_SHARED;
	if (is(w, n, "shared::cluster"))
		return XSP_CLUSTER;
	if (is(w, n, "local"))
		return XSP_LOCAL;
	if (is(w, n, "param") || is(w, n, "param::func") ||
	    is(w, n, "param::entry"))
		return XSP_PARAM;
	if (is(w, n, "const"))
		return XSP_CONST;
	return -1;
}

#define MAXP 12
#define MAXO 8

struct stmt {
	const char *op;
	size_t op_n;
	const char *part[MAXP];
	size_t part_n[MAXP];
	int n_parts;
	const char *opd[MAXO];
	size_t opd_n[MAXO];
	int n_opds;
	int types[3];
	int n_types;
};

static bool has(const struct stmt *s, const char *lit)
{
	for (int i = 0; i < s->n_parts; i++)
		if (is(s->part[i], s->part_n[i], lit))
			return true;
	return false;
}

/* Splits "a, {b, c}, [d+4]" at top-level commas. */
static void split_opds(struct stmt *s, const char *p, const char *end)
{
	int depth = 0;
	const char *st = p;

	s->n_opds = 0;
	for (; p <= end; p++) {
		if (p < end && (*p == '{' || *p == '[' || *p == '('))
			depth++;
		else if (p < end && (*p == '}' || *p == ']' || *p == ')'))
			depth--;
		if (p == end || (*p == ',' && depth == 0)) {
			const char *a = st, *b = p;
			while (a < b && isspace((unsigned char)*a))
				a++;
			while (b > a && isspace((unsigned char)b[-1]))
				b--;
			if (b > a && s->n_opds < MAXO) {
				s->opd[s->n_opds] = a;
				s->opd_n[s->n_opds] = (size_t)(b - a);
				s->n_opds++;
			}
			st = p + 1;
		}
	}
}

static int dst_row(struct lk *k, const char *s, size_t n)
{
	while (n > 0 && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	if (n == 1 && s[0] == '_')
		return k->sink;
	return find_reg(k, s, n);
}

/* "[base+off]" -> base row (-1 none) and offset. */
static bool address(struct lk *k, const char *s, size_t n, int *base,
                    int64_t *off)
{
	const char *e, *plus = NULL;

	if (n < 2 || s[0] != '[' || s[n - 1] != ']')
		return false;
	s++;
	n -= 2;
	e = s + n;
	*off = 0;
	*base = -1;
	for (const char *q = s + 1; q < e; q++)
		if (*q == '+' || (*q == '-' && q[-1] != '+')) {
			plus = q;
			break;
		}
	if (plus != NULL) {
		char buf[40];
		size_t ln = (size_t)(e - plus);
		const char *num = plus + (*plus == '+');
		ln = (size_t)(e - num);
		if (ln >= sizeof(buf))
			return false;
		memcpy(buf, num, ln);
		buf[ln] = 0;
		*off = strtoll(buf, NULL, 0);
		n = (size_t)(plus - s);
	}
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	uint64_t bits;
	if (imm_bits(s, n, XT_U64, &bits)) {
		*off += (int64_t)bits;
		return true;
	}
	*base = operand(k, s, n, XT_U64, NULL);
	return *base >= 0;
}

/* "{a, b, c, d}" -> rows. */
static int vec_rows(struct lk *k, const char *s, size_t n, int t, bool dst,
                    int *rows)
{
	struct stmt tmp;
	int cnt = 0;

	if (n < 2 || s[0] != '{')
		return 0;
	split_opds(&tmp, s + 1, s + n - 1);
	for (int i = 0; i < tmp.n_opds && i < 4; i++) {
		rows[i] = dst ? dst_row(k, tmp.opd[i], tmp.opd_n[i])
		              : operand(k, tmp.opd[i], tmp.opd_n[i], t, NULL);
		if (rows[i] < 0)
			return 0;
		cnt++;
	}
	return cnt;
}

static int last_type(const struct stmt *s)
{
	return s->n_types ? s->types[s->n_types - 1] : XT_NONE;
}

#define SRC(i, t) operand(k, s->opd[i], s->opd_n[i], (t), NULL)
#define DST(i) dst_row(k, s->opd[i], s->opd_n[i])

static const struct {
	const char *name;
	int op;
} alu_ops[] = {
    {"add", XO_ADD},       {"sub", XO_SUB},     {"mul", XO_MUL},
    {"mad", XO_MAD},       {"mul24", XO_MUL24}, {"mad24", XO_MAD24},
    {"div", XO_DIV},       {"rem", XO_REM},     {"abs", XO_ABS},
    {"neg", XO_NEG},       {"min", XO_MIN},     {"max", XO_MAX},
    {"and", XO_AND},       {"or", XO_OR},       {"xor", XO_XOR},
    {"not", XO_NOT},       {"cnot", XO_CNOT},   {"shl", XO_SHL},
    {"shr", XO_SHR},       {"popc", XO_POPC},   {"clz", XO_CLZ},
    {"brev", XO_BREV},     {"bfe", XO_BFE},     {"bfi", XO_BFI},
    {"bfind", XO_BFIND},   {"prmt", XO_PRMT},   {"lop3", XO_LOP3},
    {"shf", XO_SHF},       {"fma", XO_FMA},     {"rcp", XO_RCP},
    {"sqrt", XO_SQRT},     {"rsqrt", XO_RSQRT}, {"ex2", XO_EX2},
    {"lg2", XO_LG2},       {"sin", XO_SIN},     {"cos", XO_COS},
    {"tanh", XO_TANH},     {"copysign", XO_COPYSIGN},
    {"testp", XO_TESTP},   {"selp", XO_SELP},   {"slct", XO_SLCT},
    {"addc", XO_ADDC},     {"subc", XO_SUBC},   {"sad", XO_SAD},
    {"bmsk", XO_BMSK},     {"madc", XO_MADC},
};

/* Decodes one statement into `in`. false: outside the subset (the
 * caller makes it XO_BAD). */
static bool decode(struct lk *k, struct stmt *s, struct gs__xins *in)
{
	const char *op = s->op;
	size_t on = s->op_n;
	int t;

	/* types and common modifiers */
	for (int i = 0; i < s->n_parts; i++) {
		const char *w = s->part[i];
		size_t n = s->part_n[i];
		int v;

		if ((v = type_of(w, n)) != XT_NONE && s->n_types < 3)
			s->types[s->n_types++] = v;
		else if ((v = space_of(w, n)) >= 0)
			in->sp = (uint8_t)v;
		else if (is(w, n, "ftz"))
			in->f |= XF_FTZ;
		else if (is(w, n, "sat") || is(w, n, "satfinite"))
			in->f |= XF_SAT;
		else if (is(w, n, "approx"))
			in->f |= XF_APPROX;
		else if (is(w, n, "hi"))
			in->f |= XF_HI;
		else if (is(w, n, "wide"))
			in->f |= XF_WIDE;
		else if (is(w, n, "v2"))
			in->nv = 2;
		else if (is(w, n, "v4"))
			in->nv = 4;
		else if ((v = rnd_of(w, n)) != 0)
			in->m = (uint8_t)v;
	}
	t = last_type(s);
	in->t = (uint8_t)t;
	if (s->n_types >= 2)
		in->t2 = (uint8_t)s->types[s->n_types - 1];

	for (size_t i = 0; i < sizeof(alu_ops) / sizeof(alu_ops[0]); i++) {
		if (!is(op, on, alu_ops[i].name))
			continue;
		in->op = (uint16_t)alu_ops[i].op;
		if (t == XT_F16 || t == XT_BF16 || t == XT_F16X2 || t == XT_NONE)
			return false;
		if (has(s, "cc"))
			in->m2 = 1;
		if (has(s, "clamp"))
			in->f |= XF_TO;
		if (in->op == XO_SHF && has(s, "r"))
			in->f |= XF_HI;
		if (in->op == XO_TESTP) {
			static const char *tp[] = {"finite", "infinite",
			                           "number", "notanumber",
			                           "normal", "subnormal"};
			for (int j = 0; j < 6; j++)
				if (has(s, tp[j]))
					in->m = (uint8_t)(j + 1);
		}
		if (in->op == XO_SLCT)
			in->t2 = (uint8_t)s->types[1];
		if (s->n_opds < 2)
			return false;
		in->d = DST(0);
		in->a = SRC(1, t);
		if (s->n_opds > 2) {
			int bt = (in->op == XO_SHL || in->op == XO_SHR ||
			          in->op == XO_BFE || in->op == XO_SHF)
			             ? XT_U32
			             : t;
			if (in->op == XO_MUL && (in->f & XF_WIDE))
				bt = t;
			in->b = SRC(2, bt);
			if (in->b < 0)
				return false;
		}
		if (s->n_opds > 3) {
			int ct = in->op == XO_SELP   ? XT_PRED
			         : in->op == XO_SLCT ? in->t2
			         : in->op == XO_BFE || in->op == XO_SHF ||
			                 in->op == XO_BFI || in->op == XO_PRMT ||
			                 in->op == XO_LOP3
			             ? XT_U32
			             : t;
			if ((in->op == XO_MAD || in->op == XO_MADC) &&
			    (in->f & XF_WIDE))
				ct = t == XT_S32 ? XT_S64 : XT_U64;
			if (in->op == XO_BFI)
				ct = t;
			in->c = SRC(3, ct);
			if (in->c < 0)
				return false;
		}
		if (s->n_opds > 4) {
			in->e = SRC(4, XT_U32);
			if (in->e < 0)
				return false;
		}
		if (in->op == XO_BFI) {
			/* bfi d, a(insert), b(base), c(pos), e(len) */
			if (s->n_opds < 5)
				return false;
		}
		if (in->m2 || in->op == XO_ADDC || in->op == XO_SUBC ||
		    in->op == XO_MADC) {
			/* the carry flag lives in its own row */
			static const char ccn[] = "%%cc";
			int r = find_reg(k, ccn, 4);
			if (r < 0) {
				if (!grow((void **)&k->regs, &k->cap_regs,
				          k->n_regs + 1, sizeof(*k->regs)))
					return false;
				r = new_row(k, XK_REG, 0);
				k->regs[k->n_regs++] =
				    (struct regdecl){ccn, 4, -1, r};
			}
			in->e = r;
		}
		return in->d >= 0 && in->a >= 0;
	}
	if (is(op, on, "setp") || is(op, on, "set")) {
		in->op = is(op, on, "setp") ? XO_SETP : XO_SET;
		for (int i = 0; i < s->n_parts; i++) {
			int c = cmp_of(s->part[i], s->part_n[i]);
			if (c) {
				in->m = (uint8_t)c;
				break;
			}
		}
		if (has(s, "and"))
			in->m2 = XB_AND;
		else if (has(s, "or"))
			in->m2 = XB_OR;
		else if (has(s, "xor"))
			in->m2 = XB_XOR;
		if (in->op == XO_SET) { /* set.cmp.dtype.stype */
			if (s->n_types < 2)
				return false;
			in->t = (uint8_t)s->types[1];
			in->t2 = (uint8_t)s->types[0];
		}
		if (in->t == XT_F16 || in->t == XT_BF16 || s->n_opds < 3 ||
		    in->m == 0)
			return false;
		const char *bar = memchr(s->opd[0], '|', s->opd_n[0]);
		if (bar != NULL) {
			in->d = dst_row(k, s->opd[0], (size_t)(bar - s->opd[0]));
			in->d2 = dst_row(k, bar + 1,
			                 s->opd_n[0] - (size_t)(bar + 1 - s->opd[0]));
		} else {
			in->d = DST(0);
		}
		in->a = SRC(1, in->t);
		in->b = SRC(2, in->t);
		if (s->n_opds > 3) {
			bool neg;
			in->c = operand(k, s->opd[3], s->opd_n[3], XT_PRED, &neg);
			if (neg)
				in->f |= XF_NEGC;
			if (in->c < 0)
				return false;
		}
		return in->d >= 0 && in->a >= 0 && in->b >= 0;
	}
	if (is(op, on, "cvt")) {
		in->op = XO_CVT;
		if (s->n_types != 2 || s->n_opds != 2)
			return false;
		in->t = (uint8_t)s->types[0];
		in->t2 = (uint8_t)s->types[1];
		in->d = DST(0);
		in->a = SRC(1, in->t2);
		if (in->t == XT_BF16 || in->t2 == XT_BF16 || in->t == XT_F16X2 ||
		    in->t2 == XT_F16X2)
			return false;
		return in->d >= 0 && in->a >= 0;
	}
	if (is(op, on, "mov")) {
		if (s->n_opds != 2)
			return false;
		if (s->opd[0][0] == '{') {
			in->op = XO_UNPACK;
			in->nv = (uint8_t)vec_rows(k, s->opd[0], s->opd_n[0], t,
			                           true, in->v);
			in->a = SRC(1, t);
			return in->nv >= 2 && in->a >= 0;
		}
		in->d = DST(0);
		if (s->opd[1][0] == '{') {
			in->op = XO_PACK;
			in->nv = (uint8_t)vec_rows(k, s->opd[1], s->opd_n[1], t,
			                           false, in->v);
			return in->nv >= 2 && in->d >= 0;
		}
		if (is(s->opd[1], s->opd_n[1], "%clock") ||
		    is(s->opd[1], s->opd_n[1], "%clock64")) {
			in->op = XO_CLOCK;
			return in->d >= 0;
		}
		if (is(s->opd[1], s->opd_n[1], "%globaltimer") ||
		    is(s->opd[1], s->opd_n[1], "%globaltimer_lo")) {
			in->op = XO_GLOBALTIMER;
			return in->d >= 0;
		}
		in->op = XO_MOV;
		in->a = SRC(1, t);
		return in->d >= 0 && in->a >= 0;
	}
	if (is(op, on, "ld") || is(op, on, "ldu") || is(op, on, "st")) {
		int ai = 1, vi = 0;
		in->op = op[0] == 's' ? XO_ST : XO_LD;
		if (in->nv == 0)
			in->nv = 1;
		if (s->n_opds != 2 || t == XT_NONE || t == XT_B128)
			return false;
		if (in->op == XO_ST) {
			ai = 0;
			vi = 1;
		}
		int base;
		if (!address(k, s->opd[ai], s->opd_n[ai], &base, &in->imm))
			return false;
		in->a = base;
		if (in->nv > 1) {
			int n = vec_rows(k, s->opd[vi], s->opd_n[vi], t,
			                 in->op == XO_LD, in->v);
			return n == in->nv;
		}
		in->v[0] = in->op == XO_LD ? DST(vi) : SRC(vi, t);
		return in->v[0] >= 0;
	}
	if (is(op, on, "atom") || is(op, on, "red")) {
		in->op = op[0] == 'a' ? XO_ATOM : XO_RED;
		for (int i = 0; i < s->n_parts; i++) {
			int a = atom_of(s->part[i], s->part_n[i]);
			if (a) {
				in->m = (uint8_t)a;
				break;
			}
		}
		if (in->m == 0 || t == XT_F16 || t == XT_BF16 ||
		    t == XT_F16X2 || t == XT_B128 || in->nv > 1)
			return false;
		int o = 0, base;
		if (in->op == XO_ATOM) {
			in->d = DST(0);
			o = 1;
		}
		if (o >= s->n_opds ||
		    !address(k, s->opd[o], s->opd_n[o], &base, &in->imm))
			return false;
		in->a = base;
		o++;
		if (o >= s->n_opds)
			return false;
		in->b = SRC(o, t);
		o++;
		if (in->m == XA_CAS) {
			if (o >= s->n_opds)
				return false;
			in->c = SRC(o, t);
			if (in->c < 0)
				return false;
		}
		return in->b >= 0 && (in->op == XO_RED || in->d >= 0);
	}
	if (is(op, on, "cvta")) {
		in->op = XO_CVTA;
		if (has(s, "to"))
			in->f |= XF_TO;
		if (s->n_opds != 2)
			return false;
		in->d = DST(0);
		in->a = SRC(1, XT_U64);
		return in->d >= 0 && in->a >= 0;
	}
	if (is(op, on, "bra") || is(op, on, "brx")) {
		if (op[2] == 'x' || s->n_opds != 1)
			return false;
		in->op = XO_BRA;
		if (!grow((void **)&k->fix, &k->cap_fix, k->n_fix + 1,
		          sizeof(*k->fix)))
			return false;
		k->fix[k->n_fix++] =
		    (struct fixup){k->p->n_code, s->opd[0], s->opd_n[0]};
		return true;
	}
	if (is(op, on, "bar") || is(op, on, "barrier")) {
		if (has(s, "warp")) {
			in->op = XO_NOP;
			return true;
		}
		if (has(s, "arrive") && !has(s, "red"))
			return false; /* producer/consumer named barriers */
		if (has(s, "red")) {
			in->op = XO_BARRED;
			in->m = has(s, "popc") ? 1 : has(s, "and") ? 2 : 3;
			if (s->n_opds < 3)
				return false;
			in->d = DST(0);
			bool neg;
			in->c = operand(k, s->opd[s->n_opds - 1],
			                s->opd_n[s->n_opds - 1], XT_PRED, &neg);
			if (neg)
				in->f |= XF_NEGC;
			return in->d >= 0 && in->c >= 0;
		}
		in->op = XO_BAR;
		return true;
	}
	if (is(op, on, "ret")) {
		in->op = XO_RET;
		return true;
	}
	if (is(op, on, "exit")) {
		in->op = XO_EXIT;
		return true;
	}
	if (is(op, on, "trap")) {
		in->op = XO_TRAP;
		return true;
	}
	if (is(op, on, "membar") || is(op, on, "fence") ||
	    is(op, on, "prefetch") || is(op, on, "prefetchu") ||
	    is(op, on, "nanosleep") || is(op, on, "griddepcontrol") ||
	    is(op, on, "pmevent") || is(op, on, "discard") ||
	    is(op, on, "applypriority") || is(op, on, "createpolicy")) {
		in->op = XO_NOP;
		if (is(op, on, "createpolicy") && s->n_opds > 0) {
			in->op = XO_MOV;
			in->d = DST(0);
			in->a = const_row(k, 0);
			in->t = XT_B64;
			return in->d >= 0;
		}
		return true;
	}
	if (is(op, on, "shfl")) {
		in->op = XO_SHFL;
		in->m = has(s, "up") ? XS_UP : has(s, "down") ? XS_DOWN
		      : has(s, "bfly") ? XS_BFLY : has(s, "idx") ? XS_IDX : 0;
		if (!has(s, "sync") || in->m == 0 || s->n_opds != 5)
			return false;
		const char *bar = memchr(s->opd[0], '|', s->opd_n[0]);
		if (bar != NULL) {
			in->d = dst_row(k, s->opd[0], (size_t)(bar - s->opd[0]));
			in->d2 = dst_row(k, bar + 1,
			                 s->opd_n[0] - (size_t)(bar + 1 - s->opd[0]));
		} else {
			in->d = DST(0);
		}
		in->a = SRC(1, XT_B32);
		in->b = SRC(2, XT_U32);
		in->c = SRC(3, XT_U32);
		in->e = SRC(4, XT_U32);
		return in->d >= 0 && in->a >= 0 && in->b >= 0 && in->c >= 0 &&
		       in->e >= 0;
	}
	if (is(op, on, "vote")) {
		in->op = XO_VOTE;
		in->m = has(s, "all") ? XV_ALL : has(s, "any") ? XV_ANY
		      : has(s, "uni") ? XV_UNI : has(s, "ballot") ? XV_BALLOT : 0;
		if (in->m == 0 || s->n_opds < 2)
			return false;
		bool neg;
		in->d = DST(0);
		in->a = operand(k, s->opd[1], s->opd_n[1], XT_PRED, &neg);
		if (neg)
			in->f |= XF_NEGC;
		return in->d >= 0 && in->a >= 0;
	}
	if (is(op, on, "activemask")) {
		in->op = XO_ACTIVEMASK;
		in->d = s->n_opds ? DST(0) : -1;
		return in->d >= 0;
	}
	if (is(op, on, "match")) {
		in->op = XO_MATCH;
		in->m = has(s, "all") ? 1 : 0;
		if (s->n_opds < 3)
			return false;
		const char *bar = memchr(s->opd[0], '|', s->opd_n[0]);
		if (bar != NULL) {
			in->d = dst_row(k, s->opd[0], (size_t)(bar - s->opd[0]));
			in->d2 = dst_row(k, bar + 1,
			                 s->opd_n[0] - (size_t)(bar + 1 - s->opd[0]));
		} else {
			in->d = DST(0);
		}
		in->a = SRC(1, t);
		return in->d >= 0 && in->a >= 0;
	}
	if (is(op, on, "redux")) {
		in->op = XO_REDUX;
		in->m = (uint8_t)(has(s, "add") ? XA_ADD : has(s, "min") ? XA_MIN
		                 : has(s, "max") ? XA_MAX : has(s, "and") ? XA_AND
		                 : has(s, "or") ? XA_OR : has(s, "xor") ? XA_XOR : 0);
		if (in->m == 0 || s->n_opds < 2 || is_float(t))
			return false;
		in->d = DST(0);
		in->a = SRC(1, t);
		return in->d >= 0 && in->a >= 0;
	}
	if (is(op, on, "mapa")) {
		/* one block per cluster: rank 0 is this block's own memory */
		in->op = XO_MOV;
		in->t = XT_B64;
		if (s->n_opds != 3)
			return false;
		in->d = DST(0);
		in->a = SRC(1, XT_U64);
		return in->d >= 0 && in->a >= 0;
	}
	return false;
}

/* ---- functions --------------------------------------------------------- */

/* Lays out a parameter list "(.param .u64 a, .param .align 8 .b8 b[16])":
 * calls fn for each with its name, size and aligned offset from 0.
 * Returns the total size. */
static uint64_t params_each(const char *p, const char *end,
                            void (*fn)(void *arg, const char *name,
                                       size_t n, uint64_t off,
                                       uint64_t size),
                            void *arg)
{
	uint64_t off = 0;

	if (p == NULL)
		return 0;
	while (p < end) {
		const char *c = p;
		int depth = 0;

		while (c < end && !(*c == ',' && depth == 0)) {
			if (*c == '[')
				depth++;
			else if (*c == ']')
				depth--;
			c++;
		}
		const char *name;
		size_t nn;
		uint64_t size, align;
		bool dyn;

		decl_shape(p, c, &name, &nn, &size, &align, &dyn);
		if (name != NULL) {
			off = align_up(off, align);
			fn(arg, name, nn, off, size);
			off += size;
		}
		p = c + 1;
	}
	return off;
}

struct pctx {
	struct lk *k;
	int kind;
	uint64_t base;
	/* formals of a callee, in order */
	uint32_t off[GS__XCALL_ARGS + 1], size[GS__XCALL_ARGS + 1];
	int n;
};

static void param_sym(void *arg, const char *name, size_t n, uint64_t off,
                      uint64_t size)
{
	struct pctx *c = arg;

	if (c->n <= GS__XCALL_ARGS) {
		c->off[c->n] = (uint32_t)(c->base + off);
		c->size[c->n] = (uint32_t)size;
	}
	c->n++;
	(void)lsym_add(c->k, name, n,
	               sym_add(c->k, name, n, c->kind, c->base + off));
}

/* Each function's formal parameters, once: fparam offsets. */
struct formals {
	uint32_t off[GS__XCALL_ARGS + 1], size[GS__XCALL_ARGS + 1];
	int n;
	uint32_t ret_off, ret_size;
	bool done;
};

static void count_param(void *arg, const char *name, size_t n, uint64_t off,
                        uint64_t size)
{
	struct pctx *c = arg;

	(void)name;
	(void)n;
	if (c->n <= GS__XCALL_ARGS) {
		c->off[c->n] = (uint32_t)(c->base + off);
		c->size[c->n] = (uint32_t)size;
	}
	c->n++;
}

static struct formals *fmls;

/* Places function fi's formals in the program's .func parameter area. */
static void formals_place(struct lk *k, int fi)
{
	struct xfunc *f = &k->m->funcs[fi];
	struct formals *fm = &fmls[fi];
	struct pctx c = {.k = k};
	uint64_t sz;

	if (fm->done)
		return;
	fm->done = true;
	c.base = align_up(k->p->fparam_size, 16);
	sz = params_each(f->params, f->params_end, count_param, &c);
	k->p->fparam_size = (uint32_t)(c.base + sz);
	fm->n = c.n;
	memcpy(fm->off, c.off, sizeof(c.off));
	memcpy(fm->size, c.size, sizeof(c.size));
	c.n = 0;
	c.base = align_up(k->p->fparam_size, 16);
	sz = params_each(f->ret, f->ret_end, count_param, &c);
	k->p->fparam_size = (uint32_t)(c.base + sz);
	fm->ret_off = c.n ? c.off[0] : 0;
	fm->ret_size = c.n ? c.size[0] : 0;
}

static bool enqueue(struct lk *k, int fi)
{
	if (k->start[fi] != -2)
		return true;
	k->start[fi] = -1;
	k->queue[k->n_queue++] = fi;
	formals_place(k, fi);
	return true;
}

/* "call.uni (retval0), name, (param0, param1);" */
static bool decode_call(struct lk *k, struct stmt *s, struct gs__xins *in)
{
	struct gs__xcall c = {0};
	int o = 0, fi = -1, sym;
	const char *name;
	size_t nn;

	in->op = XO_CALL;
	if (s->n_opds < 1)
		return false;
	int ret_sym = -1;
	if (s->opd[0][0] == '(') { /* return value */
		struct stmt tmp;
		split_opds(&tmp, s->opd[0] + 1, s->opd[0] + s->opd_n[0] - 1);
		if (tmp.n_opds == 1)
			ret_sym = find_sym(k, tmp.opd[0], tmp.opd_n[0]);
		else if (tmp.n_opds > 1)
			return false;
		o++;
	}
	if (o >= s->n_opds)
		return false;
	name = s->opd[o];
	nn = s->opd_n[o];
	for (int i = 0; i < k->m->n_funcs; i++)
		if (strlen(k->m->funcs[i].name) == nn &&
		    memcmp(k->m->funcs[i].name, name, nn) == 0)
			fi = i;
	if (fi < 0 || k->m->funcs[fi].body == NULL)
		return false; /* indirect, or an extern function (vprintf) */
	o++;
	enqueue(k, fi);
	struct formals *fm = &fmls[fi];
	if (o < s->n_opds && s->opd[o][0] == '(') {
		struct stmt tmp;
		split_opds(&tmp, s->opd[o] + 1, s->opd[o] + s->opd_n[o] - 1);
		if (tmp.n_opds != fm->n || tmp.n_opds > GS__XCALL_ARGS)
			return false;
		for (int i = 0; i < tmp.n_opds; i++) {
			sym = find_sym(k, tmp.opd[i], tmp.opd_n[i]);
			if (sym < 0 || k->p->syms[sym].kind != XY_FPARAM)
				return false;
			c.src[i] = (uint32_t)k->p->syms[sym].off;
			c.dst[i] = fm->off[i];
			c.size[i] = fm->size[i];
		}
		c.n_args = tmp.n_opds;
	}
	if (ret_sym >= 0 && fm->ret_size > 0) {
		if (k->p->syms[ret_sym].kind != XY_FPARAM)
			return false;
		c.ret_src = fm->ret_off;
		c.ret_dst = (uint32_t)k->p->syms[ret_sym].off;
		c.ret_size = fm->ret_size;
	}
	c.pc = fi; /* function index until linked */
	c.site = k->p->n_code;
	if (!grow((void **)&k->p->calls, &k->cap_calls, k->p->n_calls + 1,
	          sizeof(*k->p->calls)))
		return false;
	in->imm = k->p->n_calls;
	k->p->calls[k->p->n_calls++] = c;
	return true;
}

/* ".reg .b32 %r<6>;" ".reg .pred p, q;" */
static bool decl_regs(struct lk *k, const char *p, const char *end)
{
	struct stmt tmp;
	size_t n;
	const char *w;

	/* skip the directives */
	for (;;) {
		w = word(p, &n);
		if (n == 0 || w[0] != '.' || w >= end)
			break;
		p = w + n;
	}
	split_opds(&tmp, p, end);
	for (int i = 0; i < tmp.n_opds; i++) {
		const char *s = tmp.opd[i], *lt = memchr(s, '<', tmp.opd_n[i]);
		struct regdecl r;

		if (lt != NULL) {
			r.prefix = s;
			r.n = (size_t)(lt - s);
			r.count = atoi(lt + 1);
		} else {
			r.prefix = s;
			r.n = tmp.opd_n[i];
			r.count = -1;
		}
		int cnt = r.count < 0 ? 1 : r.count;
		r.base = k->p->n_rows;
		for (int j = 0; j < cnt; j++)
			new_row(k, XK_REG, 0);
		if (!grow((void **)&k->regs, &k->cap_regs, k->n_regs + 1,
		          sizeof(*k->regs)))
			return false;
		k->regs[k->n_regs++] = r;
	}
	return !k->oom;
}

/* ".local/.shared/.param [.align A] .type name[N];" inside a body */
static void decl_var(struct lk *k, int space, const char *p, const char *end)
{
	const char *name;
	size_t nn;
	uint64_t size, align;
	bool dyn;
	struct gs__xprog *pr = k->p;

	decl_shape(p, end, &name, &nn, &size, &align, &dyn);
	if (name == NULL)
		return;
	if (space == XSP_LOCAL) {
		pr->local_size = (uint32_t)align_up(pr->local_size, align);
		(void)lsym_add(k, name, nn,
		               sym_add(k, name, nn, XY_LOCAL, pr->local_size));
		pr->local_size += (uint32_t)size;
	} else if (space == XSP_SHARED) {
		pr->shared_static = (uint32_t)align_up(pr->shared_static, align);
		(void)lsym_add(k, name, nn,
		               sym_add(k, name, nn, XY_SHARED, pr->shared_static));
		pr->shared_static += (uint32_t)size;
	} else {
		pr->fparam_size = (uint32_t)align_up(pr->fparam_size, align);
		(void)lsym_add(k, name, nn,
		               sym_add(k, name, nn, XY_FPARAM, pr->fparam_size));
		pr->fparam_size += (uint32_t)size;
	}
}

static bool emit(struct lk *k, const struct gs__xins *in)
{
	if (!grow((void **)&k->p->code, &k->cap_code, k->p->n_code + 1,
	          sizeof(*k->p->code))) {
		k->oom = true;
		return false;
	}
	k->p->code[k->p->n_code++] = *in;
	return true;
}

static void ins_init(struct gs__xins *in, uint32_t src)
{
	memset(in, 0, sizeof(*in));
	in->g = in->d = in->d2 = in->a = in->b = in->c = in->e = -1;
	in->v[0] = in->v[1] = in->v[2] = in->v[3] = -1;
	in->nv = 1;
	in->src = src;
}

/* Decodes function fi's body, appending to the program. */
static bool func_decode(struct lk *k, int fi)
{
	struct xfunc *f = &k->m->funcs[fi];
	const char *p = f->body, *end = f->body_end;
	struct gs__xins in;

	k->fi = fi;
	k->n_regs = 0;
	k->n_labels = 0;
	k->n_fix = 0;
	n_lsyms = 0;
	k->start[fi] = k->p->n_code;
	{
		struct pctx c = {.k = k};
		if (f->entry) {
			c.kind = XY_KPARAM;
			(void)params_each(f->params, f->params_end, param_sym, &c);
		} else {
			struct formals *fm = &fmls[fi];
			/* the formals were placed when the call was seen */
			c.kind = XY_FPARAM;
			c.base = fm->n ? fm->off[0] : 0;
			if (fm->n > 0)
				(void)params_each(f->params, f->params_end,
				                  param_sym, &c);
			c.base = fm->ret_off;
			if (fm->ret_size > 0)
				(void)params_each(f->ret, f->ret_end,
				                  param_sym, &c);
		}
	}
	while (p < end) {
		const char *st = skip_ws(p), *semi;
		size_t n;

		if (st >= end)
			break;
		if (*st == '{' || *st == '}') {
			p = st + 1;
			continue;
		}
		/* a label */
		const char *w = word(st, &n);
		const char *after = skip_ws(w + n);
		if (n > 0 && *after == ':' && after[1] != ':') {
			if (!grow((void **)&k->labels, &k->cap_labels,
			          k->n_labels + 1, sizeof(*k->labels)))
				return false;
			k->labels[k->n_labels++] =
			    (struct label){w, n, k->p->n_code};
			p = after + 1;
			continue;
		}
		semi = memchr(st, ';', (size_t)(end - st));
		if (semi == NULL)
			semi = end;
		p = semi + 1;
		if (*st == '.') {
			if (is(w, n, ".reg")) {
				if (!decl_regs(k, w + n, semi))
					return false;
			} else if (is(w, n, ".local")) {
				decl_var(k, XSP_LOCAL, w + n, semi);
			} else if (is(w, n, ".shared")) {
				decl_var(k, XSP_SHARED, w + n, semi);
			} else if (is(w, n, ".param")) {
				decl_var(k, XSP_PARAM, w + n, semi);
			}
			continue;
		}
		ins_init(&in, (uint32_t)(st - k->m->text));
		/* guard */
		const char *q = st;
		if (*q == '@') {
			bool neg = q[1] == '!';
			const char *g = q + 1 + neg;
			const char *ge = g;
			while (ge < semi && idc(*ge))
				ge++;
			in.g = find_reg(k, g, (size_t)(ge - g));
			if (neg)
				in.f |= XF_NEGG;
			q = ge;
		}
		struct stmt s;
		memset(&s, 0, sizeof(s));
		q = skip_ws(q);
		const char *oe = q;
		while (oe < semi && (idc(*oe) || *oe == ':'))
			oe++;
		const char *dot = memchr(q, '.', (size_t)(oe - q));
		s.op = q;
		s.op_n = (size_t)((dot ? dot : oe) - q);
		if (dot != NULL) {
			const char *pp = dot + 1;
			while (pp < oe && s.n_parts < MAXP) {
				const char *pe = pp;
				while (pe < oe && !(*pe == '.'))
					pe++;
				s.part[s.n_parts] = pp;
				s.part_n[s.n_parts] = (size_t)(pe - pp);
				s.n_parts++;
				pp = pe + 1;
			}
		}
		split_opds(&s, oe, semi);
		bool ok;
		if (is(s.op, s.op_n, "call"))
			ok = decode_call(k, &s, &in);
		else
			ok = decode(k, &s, &in);
		if (k->oom)
			return false;
		if (!ok || (in.g < 0 && *st == '@')) {
			uint32_t src = in.src;
			int g = in.g;
			uint8_t neg = in.f & XF_NEGG;
			ins_init(&in, src);
			in.g = g;
			in.f = neg;
			in.op = XO_BAD;
		}
		if (!emit(k, &in))
			return false;
	}
	/* falling off the end returns */
	ins_init(&in, (uint32_t)(end - k->m->text));
	in.op = XO_RET;
	if (!emit(k, &in))
		return false;
	for (int i = 0; i < k->n_fix; i++) {
		struct fixup *x = &k->fix[i];
		int pc = -1;
		for (int j = 0; j < k->n_labels; j++)
			if (k->labels[j].n == x->n &&
			    memcmp(k->labels[j].name, x->name, x->n) == 0)
				pc = k->labels[j].pc;
		if (pc < 0)
			k->p->code[x->pc].op = XO_BAD;
		else
			k->p->code[x->pc].imm = pc;
	}
	return true;
}

static struct gs__xprog *link_entry(struct gs__xmod *m, const char *name)
{
	struct lk k;
	int ei = -1;

	memset(&k, 0, sizeof(k));
	for (int i = 0; i < m->n_funcs; i++)
		if (m->funcs[i].entry && m->funcs[i].body &&
		    strcmp(m->funcs[i].name, name) == 0)
			ei = i;
	k.m = m;
	k.p = gs__calloc(1, sizeof(*k.p));
	k.start = gs__malloc(sizeof(int) * (size_t)(m->n_funcs + 1));
	k.queue = gs__malloc(sizeof(int) * (size_t)(m->n_funcs + 1));
	fmls = gs__calloc((size_t)m->n_funcs + 1, sizeof(*fmls));
	if (k.p == NULL || k.start == NULL || k.queue == NULL || fmls == NULL)
		goto oom;
	k.p->entry = dupn(name, strlen(name));
	if (k.p->entry == NULL)
		goto oom;
	if (ei < 0) {
		snprintf(k.p->err, sizeof(k.p->err),
		         "entry not found in the module's PTX");
		goto out;
	}
	for (int i = 0; i < m->n_funcs; i++)
		k.start[i] = -2;
	k.sink = new_row(&k, XK_REG, 0);
	k.start[ei] = -1;
	k.queue[k.n_queue++] = ei;
	for (int qi = 0; qi < k.n_queue; qi++)
		if (!func_decode(&k, k.queue[qi]))
			goto oom;
	for (int i = 0; i < k.p->n_calls; i++)
		k.p->calls[i].pc = k.start[k.p->calls[i].pc];
	/* dynamic shared memory starts after the static, 16-aligned */
	k.p->shared_static = (uint32_t)align_up(k.p->shared_static, 16);
	for (int i = 0; i < k.p->n_syms; i++)
		if (k.p->syms[i].kind == XY_SHARED &&
		    k.p->syms[i].off == UINT64_MAX)
			k.p->syms[i].off = k.p->shared_static;
	k.p->local_size = (uint32_t)align_up(k.p->local_size, 16);
	k.p->fparam_size = (uint32_t)align_up(k.p->fparam_size, 16);
out:
	free(k.start);
	free(k.queue);
	free(k.regs);
	free(k.labels);
	free(k.fix);
	free(fmls);
	fmls = NULL;
	free(lsyms);
	lsyms = NULL;
	n_lsyms = cap_lsyms = 0;
	return k.p;
oom:
	if (k.p != NULL)
		prog_free(k.p);
	k.p = NULL;
	goto out;
}

struct gs__xprog *gs__xprog_get(struct gs__xmod **cache, const char *text,
                                const char *name)
{
	struct gs__xprog *p;

	if (*cache == NULL && (*cache = xmod_read(text)) == NULL)
		return NULL;
	for (p = (*cache)->progs; p != NULL; p = p->next)
		if (strcmp(p->entry, name) == 0)
			return p;
	p = link_entry(*cache, name);
	if (p != NULL) {
		p->next = (*cache)->progs;
		(*cache)->progs = p;
	}
	return p;
}

void gs__xins_text(const char *text, uint32_t src, char *buf, size_t len)
{
	size_t n = 0;
	const char *p = text + src;

	while (p[n] && p[n] != ';' && p[n] != '\n' && n + 1 < len)
		n++;
	memcpy(buf, p, n);
	buf[n] = 0;
}
