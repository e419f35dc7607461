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
#include "exec_lk.h"
#include "halloc.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- functions --------------------------------------------------------- */

/* Lays out a parameter list "(.param .u64 a, .param .align 8 .b8 b[16])":
 * calls fn for each with its name, size and aligned offset from 0.
 * Returns the total size. */
static uint64_t params_each(const char *p, const char *end,
                            void (*fn)(void *arg, const char *name, size_t n,
                                       uint64_t off, uint64_t size),
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

		gs__x_decl_shape(p, c, &name, &nn, &size, &align, &dyn);
		if (name != NULL) {
			off = gs__x_align_up(off, align);
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
	(void)gs__xd_lsym_add(
	    c->k, name, n,
	    gs__xd_sym_add(c->k, name, n, c->kind, c->base + off));
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
	c.base = gs__x_align_up(k->p->fparam_size, 16);
	sz = params_each(f->params, f->params_end, count_param, &c);
	k->p->fparam_size = (uint32_t)(c.base + sz);
	fm->n = c.n;
	memcpy(fm->off, c.off, sizeof(c.off));
	memcpy(fm->size, c.size, sizeof(c.size));
	c.n = 0;
	c.base = gs__x_align_up(k->p->fparam_size, 16);
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

/*
 * A call to one of the CUDA runtime's device functions the interpreter
 * provides itself (vprintf, __assertfail): a call site whose src[] are
 * the caller's argument variables and ret_dst its return variable (pc
 * -1: no callee code).
 */
static bool decode_builtin(struct lk *k, struct stmt *s, struct gs__xins *in,
                           int o, int ret_sym, int op)
{
	struct gs__xcall c = {0};
	struct stmt tmp;

	in->op = (uint16_t)op;
	o++;
	if (o >= s->n_opds || s->opd[o][0] != '(')
		return false;
	gs__xd_split_opds(&tmp, s->opd[o] + 1, s->opd[o] + s->opd_n[o] - 1);
	if (tmp.n_opds > GS__XCALL_ARGS)
		return false;
	for (int i = 0; i < tmp.n_opds; i++) {
		int sym = gs__xd_find_sym(k, tmp.opd[i], tmp.opd_n[i]);
		if (sym < 0 || k->p->syms[sym].kind != XY_FPARAM)
			return false;
		c.src[i] = (uint32_t)k->p->syms[sym].off;
	}
	c.n_args = tmp.n_opds;
	if (ret_sym >= 0) {
		if (k->p->syms[ret_sym].kind != XY_FPARAM)
			return false;
		c.ret_dst = (uint32_t)k->p->syms[ret_sym].off;
		c.ret_size = 4;
	}
	c.pc = -1;
	c.site = k->p->n_code;
	if (!gs__x_grow((void **)&k->p->calls, &k->cap_calls, k->p->n_calls + 1,
	                sizeof(*k->p->calls)))
		return false;
	in->imm = k->p->n_calls;
	k->p->calls[k->p->n_calls++] = c;
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
		gs__xd_split_opds(&tmp, s->opd[0] + 1,
		                  s->opd[0] + s->opd_n[0] - 1);
		if (tmp.n_opds == 1)
			ret_sym = gs__xd_find_sym(k, tmp.opd[0], tmp.opd_n[0]);
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
	if (fi >= 0 && k->m->funcs[fi].body == NULL &&
	    (gs__x_is(name, nn, "vprintf") ||
	     gs__x_is(name, nn, "__assertfail")))
		return decode_builtin(k, s, in, o, ret_sym,
		                      name[0] == 'v' ? XO_PRINTF : XO_ASSERT);
	if (fi < 0 || k->m->funcs[fi].body == NULL)
		return false; /* indirect, or another extern function */
	o++;
	enqueue(k, fi);
	struct formals *fm = &fmls[fi];
	if (o < s->n_opds && s->opd[o][0] == '(') {
		struct stmt tmp;
		gs__xd_split_opds(&tmp, s->opd[o] + 1,
		                  s->opd[o] + s->opd_n[o] - 1);
		if (tmp.n_opds != fm->n || tmp.n_opds > GS__XCALL_ARGS)
			return false;
		for (int i = 0; i < tmp.n_opds; i++) {
			sym = gs__xd_find_sym(k, tmp.opd[i], tmp.opd_n[i]);
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
	if (!gs__x_grow((void **)&k->p->calls, &k->cap_calls, k->p->n_calls + 1,
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
		w = gs__x_word(p, &n);
		if (n == 0 || w[0] != '.' || w >= end)
			break;
		p = w + n;
	}
	gs__xd_split_opds(&tmp, p, end);
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
			gs__xd_new_row(k, XK_REG, 0);
		if (!gs__x_grow((void **)&k->regs, &k->cap_regs, k->n_regs + 1,
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

	gs__x_decl_shape(p, end, &name, &nn, &size, &align, &dyn);
	if (name == NULL)
		return;
	if (space == XSP_LOCAL) {
		pr->local_size =
		    (uint32_t)gs__x_align_up(pr->local_size, align);
		(void)gs__xd_lsym_add(
		    k, name, nn,
		    gs__xd_sym_add(k, name, nn, XY_LOCAL, pr->local_size));
		pr->local_size += (uint32_t)size;
	} else if (space == XSP_SHARED) {
		pr->shared_static =
		    (uint32_t)gs__x_align_up(pr->shared_static, align);
		(void)gs__xd_lsym_add(
		    k, name, nn,
		    gs__xd_sym_add(k, name, nn, XY_SHARED, pr->shared_static));
		pr->shared_static += (uint32_t)size;
	} else {
		pr->fparam_size =
		    (uint32_t)gs__x_align_up(pr->fparam_size, align);
		(void)gs__xd_lsym_add(
		    k, name, nn,
		    gs__xd_sym_add(k, name, nn, XY_FPARAM, pr->fparam_size));
		pr->fparam_size += (uint32_t)size;
	}
}

static bool emit(struct lk *k, const struct gs__xins *in)
{
	if (!gs__x_grow((void **)&k->p->code, &k->cap_code, k->p->n_code + 1,
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
	gs__xd_locals_clear();
	k->start[fi] = k->p->n_code;
	{
		struct pctx c = {.k = k};
		if (f->entry) {
			c.kind = XY_KPARAM;
			(void)params_each(f->params, f->params_end, param_sym,
			                  &c);
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
				(void)params_each(f->ret, f->ret_end, param_sym,
				                  &c);
		}
	}
	while (p < end) {
		const char *st = gs__x_skip_ws(p), *semi;
		size_t n;

		if (st >= end)
			break;
		if (*st == '{' || *st == '}') {
			p = st + 1;
			continue;
		}
		/* a label */
		const char *w = gs__x_word(st, &n);
		const char *after = gs__x_skip_ws(w + n);
		if (n > 0 && *after == ':' && after[1] != ':') {
			if (!gs__x_grow((void **)&k->labels, &k->cap_labels,
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
			if (gs__x_is(w, n, ".reg")) {
				if (!decl_regs(k, w + n, semi))
					return false;
			} else if (gs__x_is(w, n, ".local")) {
				decl_var(k, XSP_LOCAL, w + n, semi);
			} else if (gs__x_is(w, n, ".shared")) {
				decl_var(k, XSP_SHARED, w + n, semi);
			} else if (gs__x_is(w, n, ".param")) {
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
			while (ge < semi && gs__x_idc(*ge))
				ge++;
			in.g = gs__xd_find_reg(k, g, (size_t)(ge - g));
			if (neg)
				in.f |= XF_NEGG;
			q = ge;
		}
		struct stmt s;
		memset(&s, 0, sizeof(s));
		q = gs__x_skip_ws(q);
		const char *oe = q;
		while (oe < semi && (gs__x_idc(*oe) || *oe == ':'))
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
		gs__xd_split_opds(&s, oe, semi);
		bool ok;
		if (gs__x_is(s.op, s.op_n, "call"))
			ok = decode_call(k, &s, &in);
		else
			ok = gs__xd_decode(k, &s, &in);
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

/* The blocks per cluster an entry's .reqnctapercluster asks for (1). */
static uint64_t cluster_size(const struct xfunc *f)
{
	const char *p = f->dirs;
	uint64_t n = 1;

	if (p == NULL)
		return 1;
	while (p < f->dirs_end) {
		size_t wn;
		const char *w = gs__x_word(p, &wn);
		if (wn == 0) {
			p = w + 1;
			continue;
		}
		p = w + wn;
		if (!gs__x_is(w, wn, ".reqnctapercluster"))
			continue;
		for (int i = 0; i < 3 && p < f->dirs_end; i++) {
			char *e;
			unsigned long long v;
			while (p < f->dirs_end &&
			       (*p == ',' || isspace((unsigned char)*p)))
				p++;
			v = strtoull(p, &e, 10);
			if (e == p)
				break;
			n *= v ? v : 1;
			p = e;
		}
	}
	return n;
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
	k.p->entry = gs__x_dupn(name, strlen(name));
	if (k.p->entry == NULL)
		goto oom;
	if (ei < 0) {
		snprintf(k.p->err, sizeof(k.p->err),
		         "entry not found in the module's PTX");
		k.p->err_code = CUDA_ERROR_INVALID_PTX;
		goto out;
	}
	if (cluster_size(&m->funcs[ei]) > 1) {
		snprintf(
		    k.p->err, sizeof(k.p->err),
		    "the kernel is compiled for clusters of more than one block (.reqnctapercluster), outside the interpreter's subset");
		k.p->err_code = CUDA_ERROR_ILLEGAL_INSTRUCTION;
		goto out;
	}
	for (int i = 0; i < m->n_funcs; i++)
		k.start[i] = -2;
	k.sink = gs__xd_new_row(&k, XK_REG, 0);
	k.start[ei] = -1;
	k.queue[k.n_queue++] = ei;
	for (int qi = 0; qi < k.n_queue; qi++)
		if (!func_decode(&k, k.queue[qi]))
			goto oom;
	if (!gs__xcalls_mark_recursion(k.p, k.start, m->n_funcs))
		goto oom;
	for (int i = 0; i < k.p->n_calls; i++)
		if (k.p->calls[i].pc >= 0)
			k.p->calls[i].pc = k.start[k.p->calls[i].pc];
	/* dynamic shared memory starts after the static, 16-aligned */
	k.p->shared_static = (uint32_t)gs__x_align_up(k.p->shared_static, 16);
	for (int i = 0; i < k.p->n_syms; i++)
		if (k.p->syms[i].kind == XY_SHARED &&
		    k.p->syms[i].off == UINT64_MAX)
			k.p->syms[i].off = k.p->shared_static;
	k.p->local_size = (uint32_t)gs__x_align_up(k.p->local_size, 16);
	k.p->fparam_size = (uint32_t)gs__x_align_up(k.p->fparam_size, 16);
out:
	free(k.start);
	free(k.queue);
	free(k.regs);
	free(k.labels);
	free(k.fix);
	free(fmls);
	fmls = NULL;
	gs__xd_locals_free();
	return k.p;
oom:
	if (k.p != NULL)
		gs__xprog_free(k.p);
	k.p = NULL;
	goto out;
}

struct gs__xprog *gs__xprog_get(struct gs__xmod **cache, const char *text,
                                const char *name)
{
	struct gs__xprog *p;

	if (*cache == NULL && (*cache = gs__xmod_read(text)) == NULL)
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
