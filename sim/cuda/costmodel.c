/*
 * costmodel.c - the duration of kernels the sim does not know, from a
 * static reading of their PTX (instructions, loops, counted-loop bounds).
 * The model and its limits are in costmodel.h. Pure: no driver state, so
 * tests link it alone. A gs__kcost is owned by whoever created it (the
 * module's entry, sim/cuda/ptx.c) and freed with gs__kcost_destroy.
 */
#include "costmodel.h"
#include "halloc.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "gs/kernels.h"

#define MAX_PARAMS  256
#define NAME_LEN    128
#define OP_LEN      32
#define ARG_LEN     64
#define MAX_ARGS    4
/* How far back a value is traced through its definitions. */
#define RESOLVE_DEPTH 8
/* Cycles one dependent instruction takes (FMA latency on sm_80/sm_90). */
#define LATENCY_CYCLES 4.0
/* Threads resident on one SM. */
#define THREADS_PER_SM 2048.0

struct ins {
	char op[OP_LEN];
	char guard[ARG_LEN]; /* "%p1", "!%p1", or "" */
	int nargs;
	char args[MAX_ARGS][ARG_LEN];
};

/* A value known up to a linear form: scale * base + off. */
enum vkind { V_UNKNOWN, V_IMM, V_PARAM, V_NTID, V_NCTAID, V_THREADS };
struct val {
	enum vkind kind;
	int param;
	bool is64, is_signed;
	double scale, off;
};

struct loop {
	int start, end; /* instruction indices, inclusive */
	int parent;     /* enclosing loop, -1 at top level */
	bool counted;
	int shift; /* counter shifted right (> 0) or left (< 0) by this many
	              bits a trip (halving loops); 0: stepped by add/sub */
	struct val init, bound, step;
	double own; /* issue slots directly inside (not in inner loops) */
};

struct gs__kcost {
	uint32_t n_ins;
	double base; /* issue slots outside every loop */
	int n_loops;
	struct loop loops[GS__KCOST_MAX_LOOPS];
};

/* Reading state while the model is built. */
struct reader {
	char (*pnames)[NAME_LEN];
	int n_params;
	struct ins *ins;
	int n_ins, cap_ins;
	struct {
		char name[NAME_LEN];
		int at;
	} *labels;
	int n_labels, cap_labels;
};

/* PTX white space and comments (costmodel.h). */
const char *gs__ptx_skip_ws(const char *p)
{
	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (p[0] == '/' && p[1] == '/') {
			while (*p && *p != '\n')
				p++;
		} else if (p[0] == '/' && p[1] == '*') {
			const char *e = strstr(p + 2, "*/");
			p = e ? e + 2 : p + strlen(p);
		} else {
			return p;
		}
	}
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.' ||
	       c == '%';
}

static void copy_trim(char *dst, size_t cap, const char *s, const char *e)
{
	size_t n;

	while (s < e && isspace((unsigned char)*s))
		s++;
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	n = (size_t)(e - s);
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* Parameter names in order, from "( .param .u64 a, .param .b8 b[8] )". */
static const char *read_params(struct reader *rd, const char *p)
{
	p = gs__ptx_skip_ws(p);
	if (*p != '(')
		return p;
	p++;
	for (;;) {
		const char *name = NULL, *name_end = NULL;

		p = gs__ptx_skip_ws(p);
		if (*p == ')' || *p == '\0')
			break;
		/* one parameter: tokens up to ',' or ')' */
		while (*p && *p != ',' && *p != ')') {
			p = gs__ptx_skip_ws(p);
			if (*p == '[') {
				while (*p && *p != ']')
					p++;
				if (*p)
					p++;
				continue;
			}
			if (*p == '.' || !ident_char(*p)) {
				while (*p && !isspace((unsigned char)*p) &&
				       *p != ',' && *p != ')' && *p != '[')
					p++;
				continue;
			}
			name = p;
			while (ident_char(*p))
				p++;
			name_end = p;
		}
		if (name != NULL && rd->n_params < MAX_PARAMS)
			copy_trim(rd->pnames[rd->n_params++], NAME_LEN, name,
			          name_end);
		if (*p == ',')
			p++;
	}
	return *p == ')' ? p + 1 : p;
}

static bool add_ins(struct reader *rd, const struct ins *in)
{
	if (rd->n_ins == rd->cap_ins) {
		int cap = rd->cap_ins ? rd->cap_ins * 2 : 64;
		struct ins *n = gs__realloc(rd->ins, sizeof(*n) * (size_t)cap);

		if (n == NULL)
			return false;
		rd->ins = n;
		rd->cap_ins = cap;
	}
	rd->ins[rd->n_ins++] = *in;
	return true;
}

static bool add_label(struct reader *rd, const char *s, const char *e)
{
	if (rd->n_labels == rd->cap_labels) {
		int cap = rd->cap_labels ? rd->cap_labels * 2 : 16;
		void *n =
		    gs__realloc(rd->labels, sizeof(*rd->labels) * (size_t)cap);

		if (n == NULL)
			return false;
		rd->labels = n;
		rd->cap_labels = cap;
	}
	copy_trim(rd->labels[rd->n_labels].name, NAME_LEN, s, e);
	rd->labels[rd->n_labels].at = rd->n_ins;
	rd->n_labels++;
	return true;
}

/* One statement "[@%p] op a, b, c" (without its ';'). */
static bool read_statement(struct reader *rd, const char *s, const char *e)
{
	struct ins in;
	const char *p = s, *a;

	memset(&in, 0, sizeof(in));
	while (p < e && isspace((unsigned char)*p))
		p++;
	if (p == e || *p == '.')
		return true; /* a directive (.reg, .pragma, ...) */
	if (*p == '@') {
		a = ++p;
		while (p < e && !isspace((unsigned char)*p))
			p++;
		copy_trim(in.guard, sizeof(in.guard), a, p);
	}
	while (p < e && isspace((unsigned char)*p))
		p++;
	a = p;
	while (p < e && !isspace((unsigned char)*p))
		p++;
	copy_trim(in.op, sizeof(in.op), a, p);
	if (in.op[0] == '\0')
		return true;
	while (p < e && in.nargs < MAX_ARGS) {
		int depth = 0;

		a = p;
		while (p < e && (depth > 0 || *p != ',')) {
			if (*p == '{' || *p == '[' || *p == '(')
				depth++;
			else if (*p == '}' || *p == ']' || *p == ')')
				depth--;
			p++;
		}
		copy_trim(in.args[in.nargs], ARG_LEN, a, p);
		if (in.args[in.nargs][0] != '\0')
			in.nargs++;
		if (p < e)
			p++;
	}
	return add_ins(rd, &in);
}

/* Reads the body "{ ... }" into instructions and labels, after the
 * performance directives that may precede it (.maxntid 256, 1, 1 ...).
 * A declaration without a body (";") has none. */
static bool read_body(struct reader *rd, const char *p)
{
	int depth = 0;

	p = gs__ptx_skip_ws(p);
	while (*p != '\0' && *p != '{' && *p != ';')
		p++;
	if (*p != '{')
		return true;
	for (;;) {
		const char *s;

		p = gs__ptx_skip_ws(p);
		if (*p == '\0')
			return true;
		if (*p == '{') {
			depth++;
			p++;
			continue;
		}
		if (*p == '}') {
			if (--depth == 0)
				return true;
			p++;
			continue;
		}
		/* a label "name:" */
		s = p;
		while (ident_char(*p))
			p++;
		if (p > s && *p == ':') {
			if (!add_label(rd, s, p))
				return false;
			p++;
			continue;
		}
		p = s;
		while (*p && *p != ';' && *p != '{' && *p != '}') {
			if (p[0] == '/' && (p[1] == '/' || p[1] == '*'))
				break;
			p++;
		}
		if (*p == '/') {
			/* comment inside a statement: drop to its end */
			p = gs__ptx_skip_ws(p);
			continue;
		}
		if (!read_statement(rd, s, p))
			return false;
		if (*p == ';')
			p++;
	}
}

/* ---- values ------------------------------------------------------------ */

static bool parse_imm(const char *s, double *v)
{
	char *end;

	if (s[0] == '0' && (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' ||
	                    s[1] == 'D'))
		return false; /* float bits: not a count */
	if (!(isdigit((unsigned char)s[0]) || s[0] == '-'))
		return false;
	*v = (double)strtoll(s, &end, 0);
	return *end == '\0' || *end == 'U' || *end == 'u';
}

static bool op_is(const char *op, const char *base)
{
	size_t n = strlen(base);

	return strncmp(op, base, n) == 0 && (op[n] == '.' || op[n] == '\0');
}

static struct val unknown(void)
{
	struct val v = {V_UNKNOWN, -1, false, false, 1, 0};

	return v;
}

static struct val resolve(const struct reader *rd, const char *reg, int before,
                          int depth);

/* The value of an operand (register, immediate or special register). */
static struct val operand(const struct reader *rd, const char *a, int before,
                          int depth)
{
	struct val v = unknown();
	double d;

	if (parse_imm(a, &d)) {
		v.kind = V_IMM;
		v.scale = 0;
		v.off = d;
		return v;
	}
	if (strcmp(a, "%ntid.x") == 0) {
		v.kind = V_NTID;
		return v;
	}
	if (strcmp(a, "%nctaid.x") == 0) {
		v.kind = V_NCTAID;
		return v;
	}
	if (a[0] == '%')
		return resolve(rd, a, before, depth + 1);
	return v;
}

/* The parameter index an ld.param address "[name]" / "[name+8]" names. */
static int param_of(const struct reader *rd, const char *addr)
{
	char name[NAME_LEN];
	const char *s = addr, *e;

	if (*s == '[')
		s++;
	e = s;
	while (*e && *e != ']' && *e != '+')
		e++;
	copy_trim(name, sizeof(name), s, e);
	for (int i = 0; i < rd->n_params; i++)
		if (strcmp(rd->pnames[i], name) == 0)
			return i;
	return -1;
}

static struct val combine_mul(struct val a, struct val b)
{
	if (a.kind == V_IMM && b.kind != V_UNKNOWN) {
		struct val t = a;
		a = b;
		b = t;
	}
	if (b.kind == V_IMM && a.kind != V_UNKNOWN) {
		a.scale *= b.off;
		a.off *= b.off;
		if (a.kind == V_IMM)
			a.scale = 0;
		return a;
	}
	if ((a.kind == V_NTID && b.kind == V_NCTAID) ||
	    (a.kind == V_NCTAID && b.kind == V_NTID)) {
		struct val v = unknown();

		v.kind = V_THREADS;
		v.scale = a.scale * b.scale;
		return v;
	}
	return unknown();
}

/* The value register `reg` holds at instruction `before`. */
static struct val resolve(const struct reader *rd, const char *reg, int before,
                          int depth)
{
	if (depth > RESOLVE_DEPTH)
		return unknown();
	for (int i = before - 1; i >= 0; i--) {
		const struct ins *in = &rd->ins[i];
		struct val a, b;
		double d;

		if (in->nargs < 2 || strcmp(in->args[0], reg) != 0 ||
		    op_is(in->op, "setp") || op_is(in->op, "st"))
			continue;
		if (op_is(in->op, "ld")) {
			struct val v = unknown();

			if (strncmp(in->op, "ld.param", 8) != 0)
				return v;
			v.param = param_of(rd, in->args[1]);
			if (v.param < 0)
				return v;
			v.kind = V_PARAM;
			v.is64 = strstr(in->op, "64") != NULL;
			v.is_signed = strstr(in->op, ".s") != NULL;
			return v;
		}
		if (op_is(in->op, "mov") || op_is(in->op, "cvt") ||
		    op_is(in->op, "cvta"))
			return operand(rd, in->args[1], i, depth);
		if (in->nargs < 3)
			return unknown();
		a = operand(rd, in->args[1], i, depth);
		b = operand(rd, in->args[2], i, depth);
		if (op_is(in->op, "add") || op_is(in->op, "sub")) {
			double sign = op_is(in->op, "sub") ? -1 : 1;

			if (b.kind == V_IMM && a.kind != V_UNKNOWN) {
				a.off += sign * b.off;
				return a;
			}
			if (a.kind == V_IMM && b.kind != V_UNKNOWN &&
			    sign > 0) {
				b.off += a.off;
				return b;
			}
			/* x = P - r, x = P + r: the parameter's size */
			return a.kind != V_UNKNOWN ? a : b;
		}
		if (op_is(in->op, "mul") || op_is(in->op, "mad"))
			return combine_mul(a, b);
		if (op_is(in->op, "shl") && b.kind == V_IMM) {
			b.off = ldexp(1.0, (int)b.off);
			return combine_mul(a, b);
		}
		if ((op_is(in->op, "shr") || op_is(in->op, "div")) &&
		    b.kind == V_IMM && a.kind != V_UNKNOWN) {
			d = op_is(in->op, "shr") ? ldexp(1.0, (int)b.off)
			                         : b.off;
			if (d == 0)
				return unknown();
			a.scale /= d;
			a.off /= d;
			return a;
		}
		if (op_is(in->op, "and") && b.kind == V_IMM)
			return b; /* x & mask <= mask */
		if ((op_is(in->op, "min")) &&
		    (a.kind == V_IMM || b.kind == V_IMM))
			return a.kind == V_IMM ? a : b;
		return unknown();
	}
	return unknown();
}

/* ---- loops --------------------------------------------------------------- */

/* Issue slots of one instruction: GS__KCOST_MEM_WEIGHT for the memory
 * ones (loads other than of kernel parameters, stores, atomics, texture
 * and surface accesses, async copies), 1 for the rest. */
static double weight(const struct ins *in)
{
	static const char *const mem[] = {"ld",   "ldu",  "st",   "atom",
	                                  "red",  "tex",  "tld4", "suld",
	                                  "sust", "sured", "cp"};

	if (strncmp(in->op, "ld.param", 8) == 0)
		return 1;
	for (size_t i = 0; i < sizeof(mem) / sizeof(mem[0]); i++)
		if (op_is(in->op, mem[i]))
			return GS__KCOST_MEM_WEIGHT;
	return 1;
}

static int label_at(const struct reader *rd, const char *name)
{
	for (int i = 0; i < rd->n_labels; i++)
		if (strcmp(rd->labels[i].name, name) == 0)
			return rd->labels[i].at;
	return -1;
}

/* Fills l->counted, init, bound, step for the loop ending in a branch. */
static void read_trip(const struct reader *rd, struct loop *l)
{
	const struct ins *br = &rd->ins[l->end];
	const char *pred = br->guard[0] == '!' ? br->guard + 1 : br->guard;
	const struct ins *cmp = NULL;
	int cmp_at = -1;

	l->counted = false;
	if (pred[0] == '\0')
		return;
	for (int i = l->end - 1; i >= l->start; i--)
		if (op_is(rd->ins[i].op, "setp") && rd->ins[i].nargs >= 3 &&
		    strcmp(rd->ins[i].args[0], pred) == 0) {
			cmp = &rd->ins[i];
			cmp_at = i;
			break;
		}
	if (cmp == NULL)
		return;
	for (int side = 1; side <= 2; side++) {
		const char *ctr = cmp->args[side];
		const char *other = cmp->args[side == 1 ? 2 : 1];

		for (int i = l->start; i <= l->end; i++) {
			const struct ins *in = &rd->ins[i];
			struct val step;

			bool shr = op_is(in->op, "shr"), shl = op_is(in->op, "shl");

			if (!(op_is(in->op, "add") || op_is(in->op, "sub") ||
			      shr || shl) ||
			    in->nargs < 3 || strcmp(in->args[0], ctr) != 0 ||
			    strcmp(in->args[1], ctr) != 0)
				continue;
			step = operand(rd, in->args[2], i, 0);
			if (step.kind == V_UNKNOWN)
				return;
			if (shr || shl) {
				/* x >>= k, x <<= k: k an immediate */
				if (step.kind != V_IMM || step.off < 1 ||
				    step.off > 63)
					return;
				l->shift = shr ? (int)step.off : -(int)step.off;
			}
			l->step = step;
			l->bound = operand(rd, other, cmp_at, 0);
			l->init = resolve(rd, ctr, l->start, 0);
			if (l->bound.kind == V_UNKNOWN)
				return;
			if (l->init.kind == V_UNKNOWN) {
				/* a thread index or such: counts from ~0 */
				l->init.kind = V_IMM;
				l->init.scale = 0;
				l->init.off = 0;
			}
			l->counted = true;
			return;
		}
	}
}

/* OUT: false on OOM. */
static bool find_loops(const struct reader *rd, struct gs__kcost *k)
{
	/* prefix[i]: issue slots of instructions 0 .. i-1 */
	double *prefix = gs__malloc(sizeof(double) * (size_t)(rd->n_ins + 1));

	if (prefix == NULL)
		return false;
	prefix[0] = 0;
	for (int i = 0; i < rd->n_ins; i++)
		prefix[i + 1] = prefix[i] + weight(&rd->ins[i]);
	for (int i = 0; i < rd->n_ins && k->n_loops < GS__KCOST_MAX_LOOPS;
	     i++) {
		const struct ins *in = &rd->ins[i];
		struct loop *l;
		int t;

		if (!op_is(in->op, "bra") || in->nargs < 1)
			continue;
		t = label_at(rd, in->args[0]);
		if (t < 0 || t > i)
			continue;
		l = &k->loops[k->n_loops++];
		memset(l, 0, sizeof(*l));
		l->start = t;
		l->end = i;
		read_trip(rd, l);
	}
	/* nesting: the smallest loop strictly around each one */
	for (int i = 0; i < k->n_loops; i++) {
		struct loop *l = &k->loops[i];
		int best = -1;

		l->parent = -1;
		for (int j = 0; j < k->n_loops; j++) {
			const struct loop *o = &k->loops[j];

			if (j == i || o->start > l->start || o->end < l->end)
				continue;
			if (o->start == l->start && o->end == l->end && j > i)
				continue;
			if (best < 0 || o->end - o->start <
			                    k->loops[best].end -
			                        k->loops[best].start)
				best = j;
		}
		l->parent = best;
	}
	k->base = prefix[rd->n_ins];
	for (int i = 0; i < k->n_loops; i++) {
		struct loop *l = &k->loops[i];
		double span = prefix[l->end + 1] - prefix[l->start];

		l->own += span;
		if (l->parent >= 0) {
			struct loop *p = &k->loops[l->parent];
			p->own = p->own >= span ? p->own - span : 0;
		} else {
			k->base = k->base >= span ? k->base - span : 0;
		}
	}
	free(prefix);
	return true;
}

CUresult gs__kcost_create(const char *text, struct gs__kcost **out)
{
	struct reader rd;
	struct gs__kcost *k;
	const char *p;
	CUresult r = CUDA_ERROR_OUT_OF_MEMORY;

	memset(&rd, 0, sizeof(rd));
	rd.pnames = gs__calloc(MAX_PARAMS, sizeof(*rd.pnames));
	k = gs__calloc(1, sizeof(*k));
	if (rd.pnames == NULL || k == NULL)
		goto out;
	p = read_params(&rd, text);
	if (!read_body(&rd, p))
		goto out;
	k->n_ins = (uint32_t)rd.n_ins;
	if (!find_loops(&rd, k))
		goto out;
	*out = k;
	k = NULL;
	r = CUDA_SUCCESS;
out:
	free(k);
	free(rd.pnames);
	free(rd.ins);
	free(rd.labels);
	return r;
}

void gs__kcost_destroy(struct gs__kcost *k)
{
	free(k);
}

uint32_t gs__kcost_static_insts(const struct gs__kcost *k)
{
	return k->n_ins;
}

int gs__kcost_loops(const struct gs__kcost *k, int *counted)
{
	int c = 0;

	for (int i = 0; i < k->n_loops; i++)
		c += k->loops[i].counted;
	if (counted != NULL)
		*counted = c;
	return k->n_loops;
}

/* ---- evaluation ------------------------------------------------------- */

struct env {
	const uint8_t *args;
	const uint32_t *param_off;
	int n_params;
	uint64_t threads;
	double ntid, nctaid; /* %ntid.x, %nctaid.x; NAN when not known */
};

static double eval(const struct val *v, const struct env *env)
{
	switch (v->kind) {
	case V_IMM:
		return v->off;
	case V_THREADS:
		return v->scale * (double)env->threads + v->off;
	case V_NTID:
		return v->scale * env->ntid + v->off;
	case V_NCTAID:
		return v->scale * env->nctaid + v->off;
	case V_PARAM: {
		double x;

		if (v->param < 0 || v->param >= env->n_params ||
		    env->args == NULL)
			return NAN;
		if (v->is64) {
			uint64_t u;
			memcpy(&u, env->args + env->param_off[v->param], 8);
			x = v->is_signed ? (double)(int64_t)u : (double)u;
		} else {
			uint32_t u;
			memcpy(&u, env->args + env->param_off[v->param], 4);
			x = v->is_signed ? (double)(int32_t)u : (double)u;
		}
		return v->scale * x + v->off;
	}
	default:
		return NAN;
	}
}

static double trips(const struct loop *l, const struct env *env)
{
	double b, i, s, t;

	if (!l->counted)
		return GS__KCOST_UNKNOWN_TRIPS;
	b = eval(&l->bound, env);
	i = eval(&l->init, env);
	s = fabs(eval(&l->step, env));
	if (!isfinite(b) || !isfinite(i) || !isfinite(s) || s == 0)
		return GS__KCOST_UNKNOWN_TRIPS;
	if (l->shift != 0) {
		/* i, i/2^k, ... down to the bound (0: down to 1), or up */
		double from = fabs(i), to = fabs(b);

		if (l->shift > 0)
			t = ceil(log2((from > 0.5 ? from : 0.5) /
			              (to > 0.5 ? to : 0.5)) /
			         l->shift);
		else
			t = ceil(log2((to > 1 ? to : 1) /
			              (from > 0.5 ? from : 0.5)) /
			         -l->shift);
	} else {
		t = ceil(fabs(b - i) / s);
	}
	return t < 1 ? 1 : t;
}

static double loop_insts(const struct gs__kcost *k, int idx,
                         const struct env *env, int depth)
{
	const struct loop *l = &k->loops[idx];
	double sum = l->own;

	if (depth > GS__KCOST_MAX_LOOPS)
		return sum;
	for (int j = 0; j < k->n_loops; j++)
		if (k->loops[j].parent == idx)
			sum += loop_insts(k, j, env, depth + 1);
	return sum * trips(l, env);
}

static double env_insts(const struct gs__kcost *k, const struct env *env)
{
	double sum = k->base;

	for (int i = 0; i < k->n_loops; i++)
		if (k->loops[i].parent < 0)
			sum += loop_insts(k, i, env, 0);
	return sum;
}

double gs__kcost_thread_insts(const struct gs__kcost *k, const uint8_t *args,
                              const uint32_t *param_off, int n_params,
                              uint64_t threads)
{
	struct env env = {args, param_off, n_params, threads ? threads : 1,
	                  NAN, NAN};

	return env_insts(k, &env);
}

double gs__kcost_launch_insts(const struct gs__kcost *k, const uint8_t *args,
                              const uint32_t *param_off, int n_params,
                              const unsigned int grid[3],
                              const unsigned int block[3])
{
	uint64_t threads = (uint64_t)grid[0] * grid[1] * grid[2] * block[0] *
	                   block[1] * block[2];
	struct env env = {args,         param_off,
	                  n_params,     threads ? threads : 1,
	                  (double)block[0], (double)grid[0]};

	return env_insts(k, &env);
}

uint64_t gs__kcost_ns(const struct gs__kcost *k, const uint8_t *args,
                      const uint32_t *param_off, int n_params,
                      const unsigned int grid[3], const unsigned int block[3],
                      uint32_t avail, uint32_t clock_khz, uint32_t *sms)
{
	double blocks = (double)grid[0] * grid[1] * grid[2];
	double tpb = (double)block[0] * block[1] * block[2];
	double threads = blocks * tpb, per_thread, use, ghz, thr_ns, lat_ns;
	double resident, waves, ns;

	if (avail == 0)
		avail = 1;
	if (clock_khz == 0)
		clock_khz = 1000000;
	use = blocks < avail ? blocks : avail;
	if (use < 1)
		use = 1;
	*sms = (uint32_t)use;
	per_thread = gs__kcost_launch_insts(k, args, param_off, n_params, grid,
	                                    block);
	ghz = clock_khz / 1e6;
	/* throughput: every lane of every SM used busy */
	thr_ns = threads * per_thread / (use * GS__KCOST_LANES * ghz);
	/* latency: each wave of resident blocks runs its threads' dependent
	 * chains one after another */
	resident = floor(THREADS_PER_SM / (tpb > 0 ? tpb : 1));
	if (resident < 1)
		resident = 1;
	if (resident > 32)
		resident = 32;
	waves = ceil(blocks / (use * resident));
	lat_ns = waves * per_thread * LATENCY_CYCLES / ghz;
	ns = thr_ns > lat_ns ? thr_ns : lat_ns;
	if (!isfinite(ns) || ns > 1e18)
		ns = 1e18;
	if (ns < (double)GS_SIM_MIN_KERNEL_NS)
		ns = (double)GS_SIM_MIN_KERNEL_NS;
	return (uint64_t)ns;
}
