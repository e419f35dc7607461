/*
 * exec_decode.c - decoding a PTX function's statements for the
 * interpreter (exec.h, exec_lk.h): register, immediate, symbol and
 * special-register operands as rows of the program being linked, and
 * each instruction of the subset into struct gs__xins. exec_parse.c
 * drives it function by function.
 */
#include "exec.h"
#include "exec_lk.h"
#include "halloc.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int gs__xd_new_row(struct lk *k, uint8_t kind, uint64_t val)
{
	struct gs__xprog *p = k->p;

	if (!gs__x_grow((void **)&p->rows, &k->cap_rows, p->n_rows + 1,
	                sizeof(*p->rows))) {
		k->oom = true;
		return 0;
	}
	p->rows[p->n_rows].kind = kind;
	p->rows[p->n_rows].val = val;
	return p->n_rows++;
}

int gs__xd_const_row(struct lk *k, uint64_t bits)
{
	/* reuse a recent equal constant */
	struct gs__xprog *p = k->p;

	for (int i = p->n_rows - 1, seen = 0; i >= 0 && seen < 32; i--)
		if (p->rows[i].kind == XK_CONST) {
			if (p->rows[i].val == bits)
				return i;
			seen++;
		}
	return gs__xd_new_row(k, XK_CONST, bits);
}

int gs__xd_sym_add(struct lk *k, const char *name, size_t n, int kind,
                   uint64_t off)
{
	struct gs__xprog *p = k->p;

	for (int i = 0; i < p->n_syms; i++)
		if (strlen(p->syms[i].name) == n &&
		    memcmp(p->syms[i].name, name, n) == 0 &&
		    p->syms[i].kind == kind && p->syms[i].off == off)
			return i;
	if (!gs__x_grow((void **)&p->syms, &k->cap_syms, p->n_syms + 1,
	                sizeof(*p->syms))) {
		k->oom = true;
		return -1;
	}
	p->syms[p->n_syms].name = gs__x_dupn(name, n);
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

void gs__xd_locals_clear(void)
{
	n_lsyms = 0;
}

void gs__xd_locals_free(void)
{
	free(lsyms);
	lsyms = NULL;
	n_lsyms = cap_lsyms = 0;
}

bool gs__xd_lsym_add(struct lk *k, const char *name, size_t n, int sym)
{
	if (sym < 0)
		return false;
	if (!gs__x_grow((void **)&lsyms, &cap_lsyms, n_lsyms + 1,
	                sizeof(*lsyms))) {
		k->oom = true;
		return false;
	}
	lsyms[n_lsyms].name = name;
	lsyms[n_lsyms].n = n;
	lsyms[n_lsyms].sym = sym;
	n_lsyms++;
	return true;
}

int gs__xd_sym_row(struct lk *k, int sym)
{
	struct gs__xprog *p = k->p;

	for (int i = 0; i < p->n_rows; i++)
		if (p->rows[i].kind == XK_SYM &&
		    p->rows[i].val == (uint64_t)sym)
			return i;
	return gs__xd_new_row(k, XK_SYM, (uint64_t)sym);
}

/* Finds a name's symbol: function-local, module variable, function. */
int gs__xd_find_sym(struct lk *k, const char *name, size_t n)
{
	for (int i = n_lsyms - 1; i >= 0; i--)
		if (lsyms[i].n == n && memcmp(lsyms[i].name, name, n) == 0)
			return lsyms[i].sym;
	for (int i = 0; i < k->m->n_vars; i++) {
		struct xvar *v = &k->m->vars[i];

		if (strlen(v->name) != n || memcmp(v->name, name, n) != 0)
			continue;
		if (v->space == XSP_GLOBAL)
			return gs__xd_sym_add(k, name, n, XY_GLOBAL, 0);
		/* module .shared: placed on first use */
		for (int s = 0; s < k->p->n_syms; s++)
			if (k->p->syms[s].kind == XY_SHARED &&
			    strcmp(k->p->syms[s].name, v->name) == 0)
				return s;
		if (v->dynamic)
			return gs__xd_sym_add(k, name, n, XY_SHARED,
			                      UINT64_MAX);
		k->p->shared_static =
		    (uint32_t)gs__x_align_up(k->p->shared_static, v->align);
		int s =
		    gs__xd_sym_add(k, name, n, XY_SHARED, k->p->shared_static);
		k->p->shared_static += (uint32_t)v->size;
		return s;
	}
	for (int i = 0; i < k->m->n_funcs; i++)
		if (strlen(k->m->funcs[i].name) == n &&
		    memcmp(k->m->funcs[i].name, name, n) == 0)
			return gs__xd_sym_add(k, name, n, XY_FUNC, (uint64_t)i);
	return -1;
}

int gs__xd_find_reg(struct lk *k, const char *name, size_t n)
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

/* Special-register rows, one per kind per program. */
static int special_row(struct lk *k, int sr)
{
	struct gs__xprog *p = k->p;

	for (int i = 0; i < p->n_rows; i++)
		if (p->rows[i].kind == XK_SPECIAL &&
		    p->rows[i].val == (uint64_t)sr)
			return i;
	return gs__xd_new_row(k, XK_SPECIAL, (uint64_t)sr);
}

/* A source operand's row: register, special, immediate or symbol.
 * -1 when unknown. *neg for "!%p". */
int gs__xd_operand(struct lk *k, const char *s, size_t n, int t, bool *neg)
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
		r = gs__xd_find_reg(k, s, n);
		if (r >= 0)
			return r;
		int sr = gs__x_special(s, n);
		if (sr >= 0)
			return special_row(k, sr);
		if (n > 7 && memcmp(s, "%envreg", 7) == 0)
			return special_row(k, XSR_ENVREG + atoi(s + 7));
		if (n > 4 && (memcmp(s, "%pm", 3) == 0))
			return special_row(k, XSR_ZERO);
		return -1;
	}
	if (gs__x_imm_bits(s, n, t, &bits))
		return gs__xd_const_row(k, bits);
	r = gs__xd_find_reg(k, s, n); /* registers need no % */
	if (r >= 0)
		return r;
	r = gs__xd_find_sym(k, s, n);
	if (r >= 0)
		return gs__xd_sym_row(k, r);
	return -1;
}

/* ---- decoding one instruction ----------------------------------------- */

bool gs__xd_has(const struct stmt *s, const char *lit)
{
	for (int i = 0; i < s->n_parts; i++)
		if (gs__x_is(s->part[i], s->part_n[i], lit))
			return true;
	return false;
}

/* Splits "a, {b, c}, [d+4]" at top-level commas. */
void gs__xd_split_opds(struct stmt *s, const char *p, const char *end)
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

int gs__xd_dst_row(struct lk *k, const char *s, size_t n)
{
	while (n > 0 && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	if (n == 1 && s[0] == '_')
		return k->sink;
	return gs__xd_find_reg(k, s, n);
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
	if (gs__x_imm_bits(s, n, XT_U64, &bits)) {
		*off += (int64_t)bits;
		return true;
	}
	*base = gs__xd_operand(k, s, n, XT_U64, NULL);
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
	gs__xd_split_opds(&tmp, s + 1, s + n - 1);
	for (int i = 0; i < tmp.n_opds && i < 4; i++) {
		rows[i] =
		    dst ? gs__xd_dst_row(k, tmp.opd[i], tmp.opd_n[i])
		        : gs__xd_operand(k, tmp.opd[i], tmp.opd_n[i], t, NULL);
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

#define SRC(i, t) gs__xd_operand(k, s->opd[i], s->opd_n[i], (t), NULL)
#define DST(i)    gs__xd_dst_row(k, s->opd[i], s->opd_n[i])

static const struct {
	const char *name;
	int op;
} alu_ops[] = {
    {"add", XO_ADD},     {"sub", XO_SUB},
    {"mul", XO_MUL},     {"mad", XO_MAD},
    {"mul24", XO_MUL24}, {"mad24", XO_MAD24},
    {"div", XO_DIV},     {"rem", XO_REM},
    {"abs", XO_ABS},     {"neg", XO_NEG},
    {"min", XO_MIN},     {"max", XO_MAX},
    {"and", XO_AND},     {"or", XO_OR},
    {"xor", XO_XOR},     {"not", XO_NOT},
    {"cnot", XO_CNOT},   {"shl", XO_SHL},
    {"shr", XO_SHR},     {"popc", XO_POPC},
    {"clz", XO_CLZ},     {"brev", XO_BREV},
    {"bfe", XO_BFE},     {"bfi", XO_BFI},
    {"bfind", XO_BFIND}, {"prmt", XO_PRMT},
    {"lop3", XO_LOP3},   {"shf", XO_SHF},
    {"fma", XO_FMA},     {"rcp", XO_RCP},
    {"sqrt", XO_SQRT},   {"rsqrt", XO_RSQRT},
    {"ex2", XO_EX2},     {"lg2", XO_LG2},
    {"sin", XO_SIN},     {"cos", XO_COS},
    {"tanh", XO_TANH},   {"copysign", XO_COPYSIGN},
    {"testp", XO_TESTP}, {"selp", XO_SELP},
    {"slct", XO_SLCT},   {"addc", XO_ADDC},
    {"subc", XO_SUBC},   {"sad", XO_SAD},
    {"bmsk", XO_BMSK},   {"dp4a", XO_DP4A},
    {"dp2a", XO_DP2A},   {"madc", XO_MADC},
};

/* Decodes one statement into `in`. false: outside the subset (the
 * caller makes it XO_BAD). */
bool gs__xd_decode(struct lk *k, struct stmt *s, struct gs__xins *in)
{
	const char *op = s->op;
	size_t on = s->op_n;
	int t;

	/* types and common modifiers */
	for (int i = 0; i < s->n_parts; i++) {
		const char *w = s->part[i];
		size_t n = s->part_n[i];
		int v;

		if ((v = gs__x_type_of(w, n)) != XT_NONE && s->n_types < 3)
			s->types[s->n_types++] = v;
		else if ((v = gs__x_space_of(w, n)) >= 0)
			in->sp = (uint8_t)v;
		else if (gs__x_is(w, n, "ftz"))
			in->f |= XF_FTZ;
		else if (gs__x_is(w, n, "sat") || gs__x_is(w, n, "satfinite"))
			in->f |= XF_SAT;
		else if (gs__x_is(w, n, "approx"))
			in->f |= XF_APPROX;
		else if (gs__x_is(w, n, "hi"))
			in->f |= XF_HI;
		else if (gs__x_is(w, n, "wide"))
			in->f |= XF_WIDE;
		else if (gs__x_is(w, n, "v2"))
			in->nv = 2;
		else if (gs__x_is(w, n, "v4"))
			in->nv = 4;
		else if ((v = gs__x_rnd_of(w, n)) != 0)
			in->m = (uint8_t)v;
	}
	t = last_type(s);
	in->t = (uint8_t)t;
	if (s->n_types >= 2)
		in->t2 = (uint8_t)s->types[s->n_types - 1];

	for (size_t i = 0; i < sizeof(alu_ops) / sizeof(alu_ops[0]); i++) {
		if (!gs__x_is(op, on, alu_ops[i].name))
			continue;
		in->op = (uint16_t)alu_ops[i].op;
		if (t == XT_NONE)
			return false;
		if ((t == XT_F16 || t == XT_BF16 || t == XT_F16X2 ||
		     t == XT_BF16X2) &&
		    !(in->op == XO_ADD || in->op == XO_SUB ||
		      in->op == XO_MUL || in->op == XO_FMA ||
		      in->op == XO_MAD || in->op == XO_NEG ||
		      in->op == XO_ABS || in->op == XO_MIN || in->op == XO_MAX))
			return false; /* half-precision: the basic ops only */
		if (gs__xd_has(s, "cc"))
			in->m2 = 1;
		if (gs__xd_has(s, "clamp"))
			in->f |= XF_TO;
		if (in->op == XO_SHF && gs__xd_has(s, "r"))
			in->f |= XF_HI;
		if (in->op == XO_DP4A || in->op == XO_DP2A) {
			/* dp4a.atype.btype: m says which are signed (and
			 * dp2a's .hi); the accumulator is s32 if either is */
			if (s->n_types != 2 || s->n_opds != 4)
				return false;
			in->m = (uint8_t)((s->types[0] == XT_S32 ? 1 : 0) |
			                  (s->types[1] == XT_S32 ? 2 : 0) |
			                  (gs__xd_has(s, "hi") ? 4 : 0));
			in->t = in->m & 3 ? XT_S32 : XT_U32;
			in->f &= (uint8_t)~XF_HI;
			t = in->t;
		}
		if (in->op == XO_BFIND && gs__xd_has(s, "shiftamt"))
			in->m = 1;
		if (in->op == XO_PRMT && s->n_parts > 1)
			return false; /* the f4e/b4e/rc8/ecl/ecr/rc16 modes */
		if (in->op == XO_TESTP) {
			static const char *tp[] = {"finite", "infinite",
			                           "number", "notanumber",
			                           "normal", "subnormal"};
			for (int j = 0; j < 6; j++)
				if (gs__xd_has(s, tp[j]))
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
			                 in->op == XO_BFI ||
			                 in->op == XO_PRMT || in->op == XO_LOP3
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
			int r = gs__xd_find_reg(k, ccn, 4);
			if (r < 0) {
				if (!gs__x_grow((void **)&k->regs, &k->cap_regs,
				                k->n_regs + 1,
				                sizeof(*k->regs)))
					return false;
				r = gs__xd_new_row(k, XK_REG, 0);
				k->regs[k->n_regs++] =
				    (struct regdecl){ccn, 4, -1, r};
			}
			in->e = r;
		}
		return in->d >= 0 && in->a >= 0;
	}
	if (gs__x_is(op, on, "setp") || gs__x_is(op, on, "set")) {
		in->op = gs__x_is(op, on, "setp") ? XO_SETP : XO_SET;
		for (int i = 0; i < s->n_parts; i++) {
			int c = gs__x_cmp_of(s->part[i], s->part_n[i]);
			if (c) {
				in->m = (uint8_t)c;
				break;
			}
		}
		if (gs__xd_has(s, "and"))
			in->m2 = XB_AND;
		else if (gs__xd_has(s, "or"))
			in->m2 = XB_OR;
		else if (gs__xd_has(s, "xor"))
			in->m2 = XB_XOR;
		if (in->op == XO_SET) { /* set.cmp.dtype.stype */
			if (s->n_types < 2)
				return false;
			in->t = (uint8_t)s->types[1];
			in->t2 = (uint8_t)s->types[0];
		}
		if (in->t == XT_F16X2 || in->t == XT_BF16X2 || s->n_opds < 3 ||
		    in->m == 0)
			return false;
		const char *bar = memchr(s->opd[0], '|', s->opd_n[0]);
		if (bar != NULL) {
			in->d = gs__xd_dst_row(k, s->opd[0],
			                       (size_t)(bar - s->opd[0]));
			in->d2 = gs__xd_dst_row(
			    k, bar + 1,
			    s->opd_n[0] - (size_t)(bar + 1 - s->opd[0]));
		} else {
			in->d = DST(0);
		}
		in->a = SRC(1, in->t);
		in->b = SRC(2, in->t);
		if (s->n_opds > 3) {
			bool neg;
			in->c = gs__xd_operand(k, s->opd[3], s->opd_n[3],
			                       XT_PRED, &neg);
			if (neg)
				in->f |= XF_NEGC;
			if (in->c < 0)
				return false;
		}
		return in->d >= 0 && in->a >= 0 && in->b >= 0;
	}
	if (gs__x_is(op, on, "cvt")) {
		in->op = XO_CVT;
		if (s->n_types != 2)
			return false;
		in->t = (uint8_t)s->types[0];
		in->t2 = (uint8_t)s->types[1];
		in->d = DST(0);
		in->a = SRC(1, in->t2);
		if (in->t == XT_F16X2 || in->t == XT_BF16X2) {
			/* cvt.rn.f16x2.f32 d, a (upper half), b (lower) */
			if (s->n_opds != 3 || in->t2 != XT_F32)
				return false;
			in->b = SRC(2, in->t2);
			return in->d >= 0 && in->a >= 0 && in->b >= 0;
		}
		if (s->n_opds != 2 || in->t2 == XT_F16X2 || in->t2 == XT_BF16X2)
			return false;
		return in->d >= 0 && in->a >= 0;
	}
	if (gs__x_is(op, on, "mov")) {
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
		if (gs__x_is(s->opd[1], s->opd_n[1], "%clock") ||
		    gs__x_is(s->opd[1], s->opd_n[1], "%clock64")) {
			in->op = XO_CLOCK;
			return in->d >= 0;
		}
		if (gs__x_is(s->opd[1], s->opd_n[1], "%globaltimer") ||
		    gs__x_is(s->opd[1], s->opd_n[1], "%globaltimer_lo")) {
			in->op = XO_GLOBALTIMER;
			return in->d >= 0;
		}
		in->op = XO_MOV;
		in->a = SRC(1, t);
		return in->d >= 0 && in->a >= 0;
	}
	if (gs__x_is(op, on, "ld") || gs__x_is(op, on, "ldu") ||
	    gs__x_is(op, on, "st")) {
		int ai = 1, vi = 0;
		in->op = op[0] == 's' ? XO_ST : XO_LD;
		if (in->nv == 0)
			in->nv = 1;
		/* a third operand is a cache policy (L2::cache_hint) */
		if (s->n_opds < 2 || s->n_opds > 3 || t == XT_NONE ||
		    t == XT_B128)
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
	if (gs__x_is(op, on, "atom") || gs__x_is(op, on, "red")) {
		in->op = op[0] == 'a' ? XO_ATOM : XO_RED;
		for (int i = 0; i < s->n_parts; i++) {
			int a = gs__x_atom_of(s->part[i], s->part_n[i]);
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
	if (gs__x_is(op, on, "cvta")) {
		in->op = XO_CVTA;
		if (gs__xd_has(s, "to"))
			in->f |= XF_TO;
		if (s->n_opds != 2)
			return false;
		in->d = DST(0);
		in->a = SRC(1, XT_U64);
		return in->d >= 0 && in->a >= 0;
	}
	if (gs__x_is(op, on, "bra") || gs__x_is(op, on, "brx")) {
		if (op[2] == 'x' || s->n_opds != 1)
			return false;
		in->op = XO_BRA;
		if (!gs__x_grow((void **)&k->fix, &k->cap_fix, k->n_fix + 1,
		                sizeof(*k->fix)))
			return false;
		k->fix[k->n_fix++] =
		    (struct fixup){k->p->n_code, s->opd[0], s->opd_n[0]};
		return true;
	}
	if (gs__x_is(op, on, "bar") || gs__x_is(op, on, "barrier")) {
		if (gs__xd_has(s, "warp")) {
			in->op = XO_NOP;
			return true;
		}
		if (gs__xd_has(s, "cluster")) {
			/* one block per cluster: arrive is the block's
			 * barrier, wait has nothing left to wait for */
			in->op = gs__xd_has(s, "wait") ? XO_NOP : XO_BAR;
			return true;
		}
		if (gs__xd_has(s, "arrive") && !gs__xd_has(s, "red"))
			return false; /* producer/consumer named barriers */
		if (gs__xd_has(s, "red")) {
			in->op = XO_BARRED;
			in->m = gs__xd_has(s, "popc")  ? 1
			        : gs__xd_has(s, "and") ? 2
			                               : 3;
			if (s->n_opds < 3)
				return false;
			in->d = DST(0);
			bool neg;
			in->c = gs__xd_operand(k, s->opd[s->n_opds - 1],
			                       s->opd_n[s->n_opds - 1], XT_PRED,
			                       &neg);
			if (neg)
				in->f |= XF_NEGC;
			return in->d >= 0 && in->c >= 0;
		}
		in->op = XO_BAR;
		return true;
	}
	if (gs__x_is(op, on, "ret")) {
		in->op = XO_RET;
		return true;
	}
	if (gs__x_is(op, on, "exit")) {
		in->op = XO_EXIT;
		return true;
	}
	if (gs__x_is(op, on, "trap")) {
		in->op = XO_TRAP;
		return true;
	}
	if (gs__x_is(op, on, "membar") || gs__x_is(op, on, "fence") ||
	    gs__x_is(op, on, "prefetch") || gs__x_is(op, on, "prefetchu") ||
	    gs__x_is(op, on, "nanosleep") ||
	    gs__x_is(op, on, "griddepcontrol") || gs__x_is(op, on, "pmevent") ||
	    gs__x_is(op, on, "discard") || gs__x_is(op, on, "applypriority") ||
	    gs__x_is(op, on, "createpolicy")) {
		in->op = XO_NOP;
		if (gs__x_is(op, on, "createpolicy") && s->n_opds > 0) {
			in->op = XO_MOV;
			in->d = DST(0);
			in->a = gs__xd_const_row(k, 0);
			in->t = XT_B64;
			return in->d >= 0;
		}
		return true;
	}
	if (gs__x_is(op, on, "shfl")) {
		in->op = XO_SHFL;
		in->m = gs__xd_has(s, "up")     ? XS_UP
		        : gs__xd_has(s, "down") ? XS_DOWN
		        : gs__xd_has(s, "bfly") ? XS_BFLY
		        : gs__xd_has(s, "idx")  ? XS_IDX
		                                : 0;
		if (!gs__xd_has(s, "sync") || in->m == 0 || s->n_opds != 5)
			return false;
		const char *bar = memchr(s->opd[0], '|', s->opd_n[0]);
		if (bar != NULL) {
			in->d = gs__xd_dst_row(k, s->opd[0],
			                       (size_t)(bar - s->opd[0]));
			in->d2 = gs__xd_dst_row(
			    k, bar + 1,
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
	if (gs__x_is(op, on, "vote")) {
		in->op = XO_VOTE;
		in->m = gs__xd_has(s, "all")      ? XV_ALL
		        : gs__xd_has(s, "any")    ? XV_ANY
		        : gs__xd_has(s, "uni")    ? XV_UNI
		        : gs__xd_has(s, "ballot") ? XV_BALLOT
		                                  : 0;
		if (in->m == 0 || s->n_opds < 2)
			return false;
		bool neg;
		in->d = DST(0);
		in->a =
		    gs__xd_operand(k, s->opd[1], s->opd_n[1], XT_PRED, &neg);
		if (neg)
			in->f |= XF_NEGC;
		return in->d >= 0 && in->a >= 0;
	}
	if (gs__x_is(op, on, "activemask")) {
		in->op = XO_ACTIVEMASK;
		in->d = s->n_opds ? DST(0) : -1;
		return in->d >= 0;
	}
	if (gs__x_is(op, on, "match")) {
		in->op = XO_MATCH;
		in->m = gs__xd_has(s, "all") ? 1 : 0;
		if (s->n_opds < 3)
			return false;
		const char *bar = memchr(s->opd[0], '|', s->opd_n[0]);
		if (bar != NULL) {
			in->d = gs__xd_dst_row(k, s->opd[0],
			                       (size_t)(bar - s->opd[0]));
			in->d2 = gs__xd_dst_row(
			    k, bar + 1,
			    s->opd_n[0] - (size_t)(bar + 1 - s->opd[0]));
		} else {
			in->d = DST(0);
		}
		in->a = SRC(1, t);
		return in->d >= 0 && in->a >= 0;
	}
	if (gs__x_is(op, on, "redux")) {
		in->op = XO_REDUX;
		in->m = (uint8_t)(gs__xd_has(s, "add")   ? XA_ADD
		                  : gs__xd_has(s, "min") ? XA_MIN
		                  : gs__xd_has(s, "max") ? XA_MAX
		                  : gs__xd_has(s, "and") ? XA_AND
		                  : gs__xd_has(s, "or")  ? XA_OR
		                  : gs__xd_has(s, "xor") ? XA_XOR
		                                         : 0);
		if (in->m == 0 || s->n_opds < 2 || gs__x_is_float(t))
			return false;
		in->d = DST(0);
		in->a = SRC(1, t);
		return in->d >= 0 && in->a >= 0;
	}
	if (gs__x_is(op, on, "elect")) {
		/* the lowest active lane is elected (exec_run.c) */
		in->op = XO_ELECT;
		if (s->n_opds < 1)
			return false;
		const char *bar = memchr(s->opd[0], '|', s->opd_n[0]);
		in->d = gs__xd_dst_row(k, s->opd[0],
		                       bar ? (size_t)(bar - s->opd[0])
		                           : s->opd_n[0]);
		if (bar != NULL)
			in->d2 = gs__xd_dst_row(
			    k, bar + 1,
			    s->opd_n[0] - (size_t)(bar + 1 - s->opd[0]));
		return in->d >= 0 || in->d2 >= 0;
	}
	if (gs__x_is(op, on, "cp")) {
		/* cp.async.{ca,cg}.shared.global [d], [s], size[, src-size]:
		 * copied at once, so commit/wait have nothing to wait for */
		if (gs__xd_has(s, "commit_group") ||
		    gs__xd_has(s, "wait_group") || gs__xd_has(s, "wait_all")) {
			in->op = XO_NOP;
			return !gs__xd_has(s, "bulk");
		}
		if (!gs__xd_has(s, "async") || gs__xd_has(s, "bulk") ||
		    s->n_opds < 3 || s->n_opds > 4)
			return false;
		in->op = XO_CPASYNC;
		int db, sb;
		int64_t doff, soff;
		uint64_t size;
		if (!address(k, s->opd[0], s->opd_n[0], &db, &doff) ||
		    !address(k, s->opd[1], s->opd_n[1], &sb, &soff) ||
		    !gs__x_imm_bits(s->opd[2], s->opd_n[2], XT_U32, &size) ||
		    (size != 4 && size != 8 && size != 16))
			return false;
		in->a = db;
		in->imm = doff;
		in->b = sb;
		in->v[0] = (int32_t)soff;
		in->nv = (uint8_t)size;
		if (s->n_opds == 4) /* bytes to read; the rest are zeros */
			in->c = SRC(3, XT_U32);
		return in->a >= 0 && in->b >= 0 &&
		       (s->n_opds == 3 || in->c >= 0);
	}
	if (gs__x_is(op, on, "mbarrier")) {
		/* m: 1 init, 2 arrive, 3 arrive_drop, 4 test/try_wait,
		 * 5 inval, 6 expect_tx, 7 pending_count; m2: .parity */
		int o = 0, base;
		in->op = XO_MBAR;
		in->m =
		    gs__xd_has(s, "init")          ? 1
		    : gs__xd_has(s, "arrive_drop") ? 3
		    : gs__xd_has(s, "arrive")      ? 2
		    : (gs__xd_has(s, "test_wait") || gs__xd_has(s, "try_wait"))
		        ? 4
		    : gs__xd_has(s, "inval")         ? 5
		    : gs__xd_has(s, "expect_tx")     ? 6
		    : gs__xd_has(s, "pending_count") ? 7
		                                     : 0;
		in->m2 = gs__xd_has(s, "parity");
		if (in->m == 0 || s->n_opds < 1)
			return false;
		if (in->m == 7) {
			if (s->n_opds != 2)
				return false;
			in->d = DST(0);
			in->a = SRC(1, XT_B64);
			return in->d >= 0 && in->a >= 0;
		}
		if (in->m == 2 || in->m == 3 || in->m == 4) {
			in->d = DST(0);
			o = 1;
		}
		if (o >= s->n_opds ||
		    !address(k, s->opd[o], s->opd_n[o], &base, &in->imm))
			return false;
		in->a = base;
		o++;
		/* count, state or parity (an arrive's tx count adds nothing) */
		if (o < s->n_opds &&
		    !(in->m == 2 && gs__xd_has(s, "expect_tx")))
			in->b = SRC(o, XT_B64);
		if (in->m == 1 && in->b < 0)
			return false;
		if (in->m == 4 && in->b < 0)
			return false;
		return in->m == 2 || in->m == 3 || in->m == 4 ? in->d >= 0
		                                              : true;
	}
	if (gs__x_is(op, on, "isspacep")) {
		in->op = XO_ISSPACEP;
		if (s->n_opds != 2)
			return false;
		in->d = DST(0);
		in->a = SRC(1, XT_U64);
		return in->d >= 0 && in->a >= 0;
	}
	if (gs__x_is(op, on, "getctarank")) {
		/* one block per cluster: its rank is 0 */
		in->op = XO_MOV;
		in->t = XT_B32;
		if (s->n_opds != 2)
			return false;
		in->d = DST(0);
		in->a = gs__xd_const_row(k, 0);
		return in->d >= 0;
	}
	if (gs__x_is(op, on, "mapa")) {
		/* one block per cluster: rank 0 is this block's own memory,
		 * another rank fails the launch (exec_run.c) */
		in->op = XO_MAPA;
		if (s->n_opds != 3)
			return false;
		in->d = DST(0);
		in->a = SRC(1, XT_U64);
		in->b = SRC(2, XT_U32);
		return in->d >= 0 && in->a >= 0 && in->b >= 0;
	}
	return false;
}
