/*
 * exec_mod.c - a module's PTX as the interpreter reads it once (exec.h):
 * its functions (entries and .func, with their parameter lists and
 * bodies) and module-scope variables (.shared, .global, .const), kept in
 * struct gs__xmod with the programs linked from it; and freeing both.
 */
#include "exec.h"
#include "halloc.h"

#include <stdlib.h>
#include <string.h>

static void xmod_free(struct gs__xmod *m);

void gs__xprog_free(struct gs__xprog *p)
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
		gs__xprog_free(m->progs);
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

struct gs__xmod *gs__xmod_read(const char *text)
{
	struct gs__xmod *m = gs__calloc(1, sizeof(*m));
	int cap_f = 0, cap_v = 0;
	const char *p;

	if (m == NULL || (m->text = gs__x_dupn(text, strlen(text))) == NULL)
		goto fail;
	gs__x_blank_comments(m->text);
	p = m->text;
	for (;;) {
		const char *w, *stmt = gs__x_skip_ws(p);
		size_t n;
		bool is_entry = false, is_func = false;
		int space = -1;
		bool ext = false;

		if (*stmt == 0)
			break;
		if (*stmt == '{') { /* stray block */
			const char *c = gs__x_match(stmt);
			if (c == NULL)
				break;
			p = c + 1;
			continue;
		}
		/* directives that end at the line's end, not at a ';' */
		w = gs__x_word(stmt, &n);
		if (gs__x_is(w, n, ".version") || gs__x_is(w, n, ".target") ||
		    gs__x_is(w, n, ".address_size") ||
		    gs__x_is(w, n, ".file") || gs__x_is(w, n, ".loc")) {
			p = strchr(stmt, '\n');
			if (p == NULL)
				break;
			continue;
		}
		/* scan the leading directives of a top-level statement */
		p = stmt;
		for (;;) {
			w = gs__x_word(p, &n);
			if (n == 0)
				break;
			if (gs__x_is(w, n, ".entry"))
				is_entry = true;
			else if (gs__x_is(w, n, ".func"))
				is_func = true;
			else if (gs__x_is(w, n, ".shared"))
				space = XSP_SHARED;
			else if (gs__x_is(w, n, ".global") ||
			         gs__x_is(w, n, ".const"))
				space = XSP_GLOBAL;
			else if (gs__x_is(w, n, ".extern"))
				ext = true;
			if (is_entry || is_func || space >= 0 ||
			    !(gs__x_is(w, n, ".visible") ||
			      gs__x_is(w, n, ".extern") ||
			      gs__x_is(w, n, ".weak") ||
			      gs__x_is(w, n, ".common"))) {
				p = w + n;
				break;
			}
			p = w + n;
		}
		if (is_entry || is_func) {
			struct xfunc f = {0};
			const char *q = gs__x_skip_ws(p);

			f.entry = is_entry;
			if (*q == '(') { /* return parameters */
				f.ret = q + 1;
				f.ret_end = gs__x_match(q);
				if (f.ret_end == NULL)
					break;
				q = gs__x_skip_ws(f.ret_end + 1);
			}
			w = gs__x_word(q, &n);
			f.name = gs__x_dupn(w, n);
			if (f.name == NULL)
				goto fail;
			q = gs__x_skip_ws(w + n);
			if (*q == '(') {
				f.params = q + 1;
				f.params_end = gs__x_match(q);
				if (f.params_end == NULL) {
					free(f.name);
					break;
				}
				q = f.params_end + 1;
			}
			f.dirs = q;
			while (*q && *q != '{' && *q != ';')
				q++;
			f.dirs_end = q;
			if (*q == '{') {
				const char *c = gs__x_match(q);
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
				gs__x_decl_shape(p, eq ? eq : end, &name, &nn,
				                 &v.size, &v.align, &v.dynamic);
				if (name != NULL) {
					v.name = gs__x_dupn(name, nn);
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
