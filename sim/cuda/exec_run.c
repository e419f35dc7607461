/*
 * exec_run.c - runs a kernel launch for its results (exec.h): blocks one
 * after another (a block that spins waiting for others, as a cooperative
 * grid sync does, yields to the next after a slice), the warps of a block
 * each to their next barrier in turn, a warp's 32 lanes in lock step on
 * one instruction at a time. Divergent lanes keep their own program
 * counters and the warp runs the group at the lowest one, so paths
 * reconverge where they meet. Owns the state spaces of a launch: shared,
 * local and .func parameter memory, device memory through the sim's
 * allocations (addr.c), and the launch's errors.
 */
#include "exec.h"
#include "halloc.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Warp-instructions a block runs before other blocks get a turn, and a
 * warp before the other warps of its block do. */
#define SLICE (1u << 20)
#define TURN  (1u << 14)
/* Thread-instructions one launch may take (the sim's watchdog). */
#define MAX_THREAD_INSTR (1ULL << 38)

static uint64_t n_instr; /* thread-instructions, process-wide */
static uint64_t run_ns;  /* thread CPU time spent running them */

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* GPUSLICE_SIM_EXEC_STATS=1: the process prints what the interpreter
 * did when it exits (the bench reads it). */
__attribute__((destructor)) static void exec_stats(void)
{
	const char *v = getenv("GPUSLICE_SIM_EXEC_STATS");

	if (v == NULL || strcmp(v, "1") != 0 || n_instr == 0)
		return;
	fprintf(
	    stderr,
	    "libcuda (gpuslice sim): interpreted %llu thread-instructions in %.3f s of CPU: %.1f million/s\n",
	    (unsigned long long)n_instr, (double)run_ns / 1e9,
	    run_ns ? (double)n_instr * 1e3 / (double)run_ns : 0.0);
}

uint64_t gs__exec_count(void)
{
	return n_instr;
}

struct block {
	uint32_t id[3];
	int n_warps;
	struct warp *w;
	uint8_t *smem;
	uint8_t *local;  /* nthreads * local_size */
	uint8_t *fparam; /* nthreads * fparam_size */
	uint32_t red_count;
	bool red_and, red_or;
	bool started;
};

struct xl {
	const struct gs__xprog *p;
	const struct gs__launch *l;
	struct gs__ctx *ctx;
	uint64_t *fill; /* rows * 32: values of const/sym rows */
	uint32_t nthreads, smem_size;
	uint8_t *args;
	uint32_t args_size;
	uint32_t ws[16]; /* cooperative-groups grid workspace */
	struct {
		uint64_t lo, hi;
	} cache[4];
	int cache_next;
	CUresult err;
	char msg[300];
	const struct gs__xins *bad;
	uint64_t limit; /* n_instr past which the watchdog fires */
	uint64_t clock;
};

static void fail(struct xl *x, CUresult r, const struct gs__xins *in,
                 const char *why)
{
	if (x->err != CUDA_SUCCESS)
		return;
	x->err = r;
	x->bad = in;
	snprintf(x->msg, sizeof(x->msg), "%s", why);
}

/* ---- memory ------------------------------------------------------------ */

static uint8_t *global_slow(struct xl *x, uint64_t a, uint64_t n,
                            const struct gs__xins *in)
{
	struct gs__alloc *al;

	if (a >= (uint64_t)(uintptr_t)x->ws &&
	    a + n <= (uint64_t)(uintptr_t)x->ws + sizeof(x->ws))
		return (uint8_t *)(uintptr_t)a;
	al = gs__alloc_find(a, n);
	if (!gs__alloc_usable(al)) {
		fail(x, CUDA_ERROR_ILLEGAL_ADDRESS, in,
		     "address outside every allocation");
		return NULL;
	}
	if (!al->backed) {
		fail(x, CUDA_ERROR_ILLEGAL_ADDRESS, in,
		     "an allocation whose contents the sim does not keep");
		return NULL;
	}
	x->cache[x->cache_next].lo = al->base;
	x->cache[x->cache_next].hi = al->base + al->size;
	x->cache_next = (x->cache_next + 1) & 3;
	return (uint8_t *)(uintptr_t)a;
}

static inline uint8_t *gptr(struct xl *x, uint64_t a, uint64_t n,
                            const struct gs__xins *in)
{
	for (int i = 0; i < 4; i++)
		if (a >= x->cache[i].lo && a + n <= x->cache[i].hi)
			return (uint8_t *)(uintptr_t)a;
	return global_slow(x, a, n, in);
}

/* Host pointer for `n` bytes at address a in space sp for thread t. */
static uint8_t *xptr(struct xl *x, struct block *b, int sp, uint64_t a,
                     uint64_t n, uint32_t t, const struct gs__xins *in)
{
	const struct gs__xprog *p = x->p;

	switch (sp) {
	case XSP_SHARED:
	case XSP_CLUSTER:
		if (a + n > x->smem_size || a + n < a) {
			fail(x, CUDA_ERROR_ILLEGAL_ADDRESS, in,
			     "shared memory address out of range");
			return NULL;
		}
		return b->smem + a;
	case XSP_LOCAL:
		if (a + n > p->local_size || a + n < a) {
			fail(x, CUDA_ERROR_ILLEGAL_ADDRESS, in,
			     "local memory address out of range");
			return NULL;
		}
		return b->local + (uint64_t)t * p->local_size + a;
	case XSP_PARAM: {
		uint64_t base = (uint64_t)(uintptr_t)x->args;
		if (a >= base && a + n <= base + x->args_size)
			return (uint8_t *)(uintptr_t)a;
		if (a + n <= p->fparam_size)
			return b->fparam + (uint64_t)t * p->fparam_size + a;
		fail(x, CUDA_ERROR_ILLEGAL_ADDRESS, in,
		     "parameter address out of range");
		return NULL;
	}
	case XSP_GENERIC: {
		uint64_t s = (uint64_t)(uintptr_t)b->smem;
		uint64_t lo = (uint64_t)(uintptr_t)b->local;
		uint64_t ab = (uint64_t)(uintptr_t)x->args;
		if (a >= s && a + n <= s + x->smem_size)
			return (uint8_t *)(uintptr_t)a;
		if (p->local_size && a >= lo &&
		    a + n <= lo + (uint64_t)x->nthreads * p->local_size)
			return (uint8_t *)(uintptr_t)a;
		if (a >= ab && a + n <= ab + x->args_size)
			return (uint8_t *)(uintptr_t)a;
		return gptr(x, a, n, in);
	}
	default:
		return gptr(x, a, n, in);
	}
}

/* ---- warps ------------------------------------------------------------- */

static uint32_t lane_t(int wi, int l)
{
	return (uint32_t)wi * 32 + (uint32_t)l;
}

static void do_mem(struct xl *x, struct block *b, int wi, struct warp *w,
                   const struct gs__xins *in, uint32_t em)
{
	uint64_t *R = w->R;
	int sz = gs__xw_tsize(in->t), nv = in->nv;

	LANES(em, {
		uint64_t a =
		    (in->a >= 0 ? R[in->a * 32 + l] : 0) + (uint64_t)in->imm;
		uint8_t *p = xptr(x, b, in->sp, a, (uint64_t)(sz * nv),
		                  lane_t(wi, l), in);
		if (p == NULL)
			return;
		if (in->op == XO_LD) {
			for (int i = 0; i < nv; i++)
				R[in->v[i] * 32 + l] =
				    gs__xw_load(p + i * sz, in->t);
		} else {
			for (int i = 0; i < nv; i++)
				gs__xw_store(p + i * sz, in->t,
				             R[in->v[i] * 32 + l]);
		}
	})
}

static void do_atom(struct xl *x, struct block *b, int wi, struct warp *w,
                    const struct gs__xins *in, uint32_t em)
{
	uint64_t *R = w->R;
	int sz = gs__xw_tsize(in->t);

	LANES(em, {
		uint64_t a =
		    (in->a >= 0 ? R[in->a * 32 + l] : 0) + (uint64_t)in->imm;
		uint8_t *p =
		    xptr(x, b, in->sp, a, (uint64_t)sz, lane_t(wi, l), in);
		if (p == NULL)
			return;
		if (a % (uint64_t)sz != 0) {
			fail(x, CUDA_ERROR_MISALIGNED_ADDRESS, in,
			     "misaligned atomic");
			return;
		}
		uint64_t old =
		    gs__xw_atomic_op(p, in, R[in->b * 32 + l],
		                     in->c >= 0 ? R[in->c * 32 + l] : 0);
		if (in->op == XO_ATOM)
			R[in->d * 32 + l] = old;
	})
}

static void do_cvta(struct xl *x, struct block *b, int wi, struct warp *w,
                    const struct gs__xins *in, uint32_t em)
{
	uint64_t *R = w->R;
	uint64_t s = (uint64_t)(uintptr_t)b->smem;
	uint64_t lo = (uint64_t)(uintptr_t)b->local;

	(void)x;
	LANES(em, {
		uint64_t a = R[in->a * 32 + l], v = a;
		uint64_t lb = lo + (uint64_t)lane_t(wi, l) * x->p->local_size;
		bool to = in->f & XF_TO;

		if (in->sp == XSP_SHARED || in->sp == XSP_CLUSTER)
			v = to ? a - s : a + s;
		else if (in->sp == XSP_LOCAL)
			v = to ? a - lb : a + lb;
		if (in->t == XT_U32 || in->t == XT_B32)
			v &= 0xffffffffULL;
		R[in->d * 32 + l] = v;
	})
}

static void do_call(struct xl *x, struct block *b, int wi, struct warp *w,
                    const struct gs__xins *in, uint32_t em)
{
	const struct gs__xcall *c = &x->p->calls[in->imm];
	uint32_t ps = x->p->fparam_size;

	LANES(em, {
		uint8_t *fp = b->fparam + (uint64_t)lane_t(wi, l) * ps;
		if (w->depth[l] >= GS__XCALL_DEPTH) {
			fail(x, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, in,
			     "call stack overflow");
			return;
		}
		for (int i = 0; i < c->n_args; i++)
			memmove(fp + c->dst[i], fp + c->src[i], c->size[i]);
		w->stack[l][w->depth[l]++] = (uint32_t)in->imm;
		w->lane_pc[l] = c->pc;
	})
}

/* A NUL-terminated string at generic address a (at most max bytes). */
static const char *dstr(struct xl *x, struct block *b, uint64_t a, uint32_t t,
                        const struct gs__xins *in, size_t *len)
{
	const uint8_t *p = xptr(x, b, XSP_GENERIC, a, 1, t, in);
	size_t n = 0;

	if (p == NULL)
		return NULL;
	/* extend one byte at a time: the string may end its allocation */
	while (p[n] != 0) {
		if (xptr(x, b, XSP_GENERIC, a + n + 1, 1, t, in) == NULL)
			return NULL;
		n++;
	}
	*len = n;
	return (const char *)p;
}

/*
 * vprintf(fmt, args) as the CUDA runtime's device printf calls it: args
 * is a buffer of the values, each aligned to its size (8 for doubles,
 * pointers and long ones, 4 for the rest). Printed when the launch takes
 * effect. Returns the characters written, -1 on a bad format.
 */
static int dprintf_lane(struct xl *x, struct block *b, uint32_t t,
                        const struct gs__xins *in, uint64_t fmt, uint64_t args)
{
	size_t flen, off = 0;
	const char *f = dstr(x, b, fmt, t, in, &flen);
	int total = 0;

	if (f == NULL)
		return -1;
	for (size_t i = 0; i < flen; i++) {
		char spec[32], out[512];
		size_t sn = 0;
		int n, longs = 0;

		if (f[i] != '%' || i + 1 >= flen) {
			fputc(f[i], stdout);
			total++;
			continue;
		}
		if (f[i + 1] == '%') {
			fputc('%', stdout);
			total++;
			i++;
			continue;
		}
		spec[sn++] = '%';
		i++;
		while (i < flen && strchr("-+ #0123456789.", f[i]) && sn < 20)
			spec[sn++] = f[i++];
		while (i < flen && strchr("hlzjtL", f[i])) {
			if (f[i] == 'l' || f[i] == 'z' || f[i] == 'j' ||
			    f[i] == 't' || f[i] == 'L')
				longs++;
			i++;
		}
		if (i >= flen)
			return -1;
		char conv = f[i];
		if (strchr("diouxXc", conv)) {
			size_t sz = longs ? 8 : 4;
			off = (off + sz - 1) / sz * sz;
			const uint8_t *p =
			    xptr(x, b, XSP_GENERIC, args + off, sz, t, in);
			if (p == NULL)
				return -1;
			uint64_t v = 0;
			memcpy(&v, p, sz);
			off += sz;
			if (conv == 'c') {
				spec[sn++] = 'c';
				spec[sn] = 0;
				n = snprintf(out, sizeof(out), spec, (int)v);
			} else {
				spec[sn++] = 'l';
				spec[sn++] = 'l';
				spec[sn++] = conv;
				spec[sn] = 0;
				if ((conv == 'd' || conv == 'i') && !longs)
					v = (uint64_t)(int64_t)(int32_t)v;
				n = snprintf(out, sizeof(out), spec, v);
			}
		} else if (strchr("feEgGaAF", conv)) {
			off = (off + 7) / 8 * 8;
			const uint8_t *p =
			    xptr(x, b, XSP_GENERIC, args + off, 8, t, in);
			double v;
			if (p == NULL)
				return -1;
			memcpy(&v, p, 8);
			off += 8;
			spec[sn++] = conv;
			spec[sn] = 0;
			n = snprintf(out, sizeof(out), spec, v);
		} else if (conv == 's' || conv == 'p') {
			off = (off + 7) / 8 * 8;
			const uint8_t *p =
			    xptr(x, b, XSP_GENERIC, args + off, 8, t, in);
			uint64_t v;
			if (p == NULL)
				return -1;
			memcpy(&v, p, 8);
			off += 8;
			if (conv == 'p') {
				n = snprintf(out, sizeof(out), "0x%llx",
				             (unsigned long long)v);
			} else {
				size_t sl;
				const char *str =
				    v ? dstr(x, b, v, t, in, &sl) : "(null)";
				if (str == NULL)
					return -1;
				spec[sn++] = '.';
				spec[sn++] = '*';
				spec[sn++] = 's';
				spec[sn] = 0;
				n = snprintf(out, sizeof(out), spec,
				             (int)(v ? sl : 6), str);
			}
		} else {
			return -1;
		}
		if (n > 0) {
			fwrite(out, 1,
			       (size_t)n < sizeof(out) ? (size_t)n
			                               : sizeof(out) - 1,
			       stdout);
			total += n;
		}
	}
	return total;
}

/* vprintf and __assertfail for lanes em (their arguments are the call
 * site's .param variables). false: the launch failed. */
static bool do_builtin(struct xl *x, struct block *b, int wi, struct warp *w,
                       const struct gs__xins *in, uint32_t em)
{
	const struct gs__xcall *c = &x->p->calls[in->imm];
	uint32_t ps = x->p->fparam_size;

	LANES(em, {
		uint32_t t = lane_t(wi, l);
		uint8_t *fp = b->fparam + (uint64_t)t * ps;
		uint64_t a0 = 0, a1 = 0;

		if (c->n_args > 0)
			memcpy(&a0, fp + c->src[0], 8);
		if (c->n_args > 1)
			memcpy(&a1, fp + c->src[1], 8);
		if (in->op == XO_PRINTF) {
			int32_t r = dprintf_lane(x, b, t, in, a0, a1);
			if (x->err != CUDA_SUCCESS)
				return false;
			if (c->ret_size)
				memcpy(fp + c->ret_dst, &r, 4);
			continue;
		}
		/* __assertfail(message, file, line, function, charsize) */
		uint64_t fn = 0;
		uint32_t line = 0;
		size_t n1, n2, n3;
		const char *msg = dstr(x, b, a0, t, in, &n1);
		const char *file = dstr(x, b, a1, t, in, &n2);
		if (c->n_args > 2)
			memcpy(&line, fp + c->src[2], 4);
		if (c->n_args > 3)
			memcpy(&fn, fp + c->src[3], 8);
		const char *func = fn ? dstr(x, b, fn, t, in, &n3) : "?";
		const struct gs__launch *ln = x->l;
		fflush(stdout);
		fprintf(
		    stderr,
		    "%.*s:%u: %.*s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%.*s` failed.\n",
		    file ? (int)n2 : 1, file ? file : "?", line,
		    func && fn ? (int)n3 : 1, func ? func : "?", b->id[0],
		    b->id[1], b->id[2], t % ln->block[0],
		    t / ln->block[0] % ln->block[1],
		    t / (ln->block[0] * ln->block[1]), msg ? (int)n1 : 1,
		    msg ? msg : "?");
		fail(x, CUDA_ERROR_ASSERT, in, "device-side assert");
		return false;
	})
	return x->err == CUDA_SUCCESS;
}

/*
 * mbarrier objects (8 bytes of shared memory), one thread at a time in
 * lane order: bits 0-30 the arrivals pending in this phase, 32-62 the
 * expected count, 63 the phase. An arrive returns the state before it
 * (its phase in bit 63); a wait is complete once the phase differs from
 * the state's (or the given parity's). Copies complete at once, so
 * transaction counts (expect_tx) add nothing to wait for.
 */
static bool do_mbar(struct xl *x, struct block *b, int wi, struct warp *w,
                    const struct gs__xins *in, uint32_t em)
{
	uint64_t *R = w->R;
	int sp = in->sp == XSP_GENERIC ? XSP_GENERIC : XSP_SHARED;

	LANES(em, {
		uint32_t t = lane_t(wi, l);
		uint64_t a =
		    (in->a >= 0 ? R[in->a * 32 + l] : 0) + (uint64_t)in->imm;
		uint64_t arg = in->b >= 0 ? R[in->b * 32 + l] : 1, v;
		uint8_t *p;

		if (in->m == 7) { /* pending_count d, state */
			R[in->d * 32 + l] = R[in->a * 32 + l] & 0x7fffffff;
			continue;
		}
		p = xptr(x, b, sp, a, 8, t, in);
		if (p == NULL)
			return false;
		memcpy(&v, p, 8);
		uint64_t pend = v & 0x7fffffff, expect = (v >> 32) & 0x7fffffff,
		         phase = v >> 63;
		switch (in->m) {
		case 1: /* init [a], count */
			pend = expect = arg & 0x7fffffff;
			phase = 0;
			break;
		case 2:
		case 3: /* arrive (count), arrive_drop */
			R[in->d * 32 + l] = v;
			if (in->m == 3 && expect > 0)
				expect--;
			pend = pend > arg ? pend - arg : 0;
			if (pend == 0) {
				phase ^= 1;
				pend = expect;
			}
			break;
		case 4: { /* test_wait / try_wait: done once the phase moved */
			uint64_t want = in->m2 ? arg & 1 : arg >> 63;
			R[in->d * 32 + l] = phase != want;
			continue;
		}
		case 5: /* inval */
			pend = expect = phase = 0;
			break;
		default: /* expect_tx */
			continue;
		}
		v = pend | expect << 32 | phase << 63;
		memcpy(p, &v, 8);
	})
	return true;
}

enum { W_BAR, W_DONE, W_SLICE, W_ERR };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Runs warp wi of b until a barrier, its end, an error or a slice. */
static int warp_run(struct xl *x, struct block *b, int wi, uint32_t *slice)
{
	struct warp *w = &b->w[wi];
	const struct gs__xins *code = x->p->code;
	uint64_t *R = w->R;
	uint64_t count = 0;
	int ret = W_SLICE;

	while (*slice > 0) {
		const struct gs__xins *in = &code[w->pc];
		uint32_t em = w->mask;

		(*slice)--;
		if (in->g >= 0) {
			uint32_t pm = 0;
			const uint64_t *g = &R[in->g * 32];
			LANES(em, {
				if (g[l] & 1)
					pm |= 1u << l;
			})
			em = (in->f & XF_NEGG) ? em & ~pm : pm;
		}
		count += (uint64_t)__builtin_popcount(w->mask);
		switch (in->op) {
		case XO_NOP:
			break;
		case XO_LD:
		case XO_ST:
			do_mem(x, b, wi, w, in, em);
			break;
		case XO_ATOM:
		case XO_RED:
			do_atom(x, b, wi, w, in, em);
			break;
		case XO_CVTA:
			do_cvta(x, b, wi, w, in, em);
			break;
		case XO_BRA:
			if (em == 0)
				break;
			if (em == w->mask) {
				w->pc = (int32_t)in->imm;
				/* still the furthest behind unless it jumped
				 * to or past another group */
				if (w->div && w->pc >= w->next_min)
					gs__xw_reselect(x->p, w);
				continue;
			}
			gs__xw_split(x->p, w, em, (int32_t)in->imm);
			continue;
		case XO_BAR:
		case XO_BARRED:
			if (em == 0)
				break; /* predicated off */
			if (in->op == XO_BARRED) {
				LANES(em, {
					bool v = (R[in->c * 32 + l] & 1) != 0;
					v = v != ((in->f & XF_NEGC) != 0);
					b->red_count += v;
					b->red_and = b->red_and && v;
					b->red_or = b->red_or || v;
				})
			}
			w->waiting = true;
			ret = W_BAR;
			goto out;
		case XO_RET:
		case XO_EXIT: {
			uint32_t ex = 0, back = 0;
			LANES(em, {
				if (in->op == XO_EXIT || w->depth[l] == 0) {
					ex |= 1u << l;
					continue;
				}
				uint32_t ci = w->stack[l][--w->depth[l]];
				const struct gs__xcall *c = &x->p->calls[ci];
				uint8_t *fp =
				    b->fparam +
				    (uint64_t)lane_t(wi, l) * x->p->fparam_size;
				if (c->ret_size)
					memmove(fp + c->ret_dst,
					        fp + c->ret_src, c->ret_size);
				back |= 1u << l;
			})
			if (em == 0)
				break;
			/* lanes that stay go on at pc + 1 */
			for (uint32_t m = w->mask & ~em; m; m &= m - 1)
				w->lane_pc[__builtin_ctz(m)] = w->pc + 1;
			for (uint32_t m = back; m; m &= m - 1) {
				int l = __builtin_ctz(m);
				uint32_t ci = w->stack[l][w->depth[l]];
				/* the call site's pc + 1 */
				w->lane_pc[l] = x->p->calls[ci].site + 1;
			}
			w->live &= ~ex;
			w->mask = 0;
			if (w->live == 0) {
				ret = W_DONE;
				goto out;
			}
			gs__xw_reselect(x->p, w);
			continue;
		}
		case XO_CALL:
			if (em == 0)
				break;
			for (uint32_t m = w->mask & ~em; m; m &= m - 1)
				w->lane_pc[__builtin_ctz(m)] = w->pc + 1;
			do_call(x, b, wi, w, in, em);
			if (x->err != CUDA_SUCCESS)
				goto err;
			w->mask = 0;
			gs__xw_reselect(x->p, w);
			continue;
		case XO_PRINTF:
		case XO_ASSERT:
			if (em != 0 && !do_builtin(x, b, wi, w, in, em))
				goto err;
			break;
		case XO_SHFL:
			gs__xw_shfl(w, in, em);
			break;
		case XO_VOTE:
			gs__xw_vote(w, in, em);
			break;
		case XO_MATCH:
			gs__xw_match(w, in, em);
			break;
		case XO_REDUX:
			gs__xw_redux(w, in, em);
			break;
		case XO_ELECT: {
			uint32_t first = em & (0u - em);
			LANES(em, {
				if (in->d >= 0)
					R[in->d * 32 + l] =
					    em ? (uint64_t)__builtin_ctz(em)
					       : 0;
				if (in->d2 >= 0)
					R[in->d2 * 32 + l] = (1u << l) == first;
			})
			break;
		}
		case XO_CPASYNC:
			LANES(em, {
				uint32_t t = lane_t(wi, l), n = in->nv;
				uint64_t d =
				    R[in->a * 32 + l] + (uint64_t)in->imm;
				uint64_t a =
				    R[in->b * 32 + l] + (uint64_t)in->v[0];
				uint32_t rd = in->c >= 0
				                  ? (uint32_t)R[in->c * 32 + l]
				                  : n;
				uint8_t *dp =
				    xptr(x, b, XSP_SHARED, d, n, t, in);
				const uint8_t *sp =
				    rd ? xptr(x, b, XSP_GLOBAL, a,
				              rd < n ? rd : n, t, in)
				       : NULL;
				if (dp == NULL || (rd && sp == NULL))
					goto err;
				memset(dp, 0, n);
				if (rd)
					memcpy(dp, sp, rd < n ? rd : n);
			})
			break;
		case XO_MAPA:
			LANES(em, {
				if ((uint32_t)R[in->b * 32 + l] != 0) {
					fail(
					    x, CUDA_ERROR_ILLEGAL_INSTRUCTION,
					    in,
					    "another block of a cluster: clusters of more than one block are outside the interpreter's subset");
					goto err;
				}
				R[in->d * 32 + l] = R[in->a * 32 + l];
			})
			break;
		case XO_MBAR: {
			bool pending = false;
			if (!do_mbar(x, b, wi, w, in, em))
				goto err;
			if (in->m == 4) /* a wait not yet complete */
				LANES(em, { pending |= !R[in->d * 32 + l]; })
			if (!pending)
				break;
			/* let the warps it waits for run first */
			w->pc++;
			if (w->div && w->pc >= w->next_min)
				gs__xw_reselect(x->p, w);
			goto out;
		}
		case XO_ISSPACEP: {
			uint64_t sb = (uint64_t)(uintptr_t)b->smem,
			         lb = (uint64_t)(uintptr_t)b->local;
			uint64_t le =
			    lb + (uint64_t)x->nthreads * x->p->local_size;
			LANES(em, {
				uint64_t a = R[in->a * 32 + l];
				bool sh = a >= sb && a < sb + x->smem_size;
				bool lo = a >= lb && a < le;
				bool v;
				switch (in->sp) {
				case XSP_SHARED:
				case XSP_CLUSTER:
					v = sh;
					break;
				case XSP_LOCAL:
					v = lo;
					break;
				case XSP_PARAM:
					v = a >= (uint64_t)(uintptr_t)x->args &&
					    a < (uint64_t)(uintptr_t)x->args +
					            x->args_size;
					break;
				default:
					v = !sh && !lo;
					break;
				}
				R[in->d * 32 + l] = v;
			})
			break;
		}
		case XO_ACTIVEMASK:
			LANES(em, { R[in->d * 32 + l] = w->mask; })
			break;
		case XO_CLOCK:
			LANES(em, { R[in->d * 32 + l] = x->clock + count; })
			break;
		case XO_GLOBALTIMER: {
			uint64_t t = now_ns();
			LANES(em, { R[in->d * 32 + l] = t; })
			break;
		}
		case XO_TRAP:
			if (em == 0)
				break;
			fail(x, CUDA_ERROR_LAUNCH_FAILED, in, "trap");
			goto err;
		case XO_BAD:
			if (em == 0)
				break;
			fail(x, CUDA_ERROR_ILLEGAL_INSTRUCTION, in,
			     "instruction outside the interpreter's subset");
			goto err;
		default:
			if (em != 0 && !gs__xalu(in, R, em)) {
				fail(
				    x, CUDA_ERROR_ILLEGAL_INSTRUCTION, in,
				    "instruction outside the interpreter's subset");
				goto err;
			}
			break;
		}
		if (x->err != CUDA_SUCCESS)
			goto err;
		w->pc++;
		if (w->div && w->pc >= w->next_min)
			gs__xw_reselect(x->p, w);
	}
out:
	n_instr += count;
	x->clock += count;
	return ret;
err:
	n_instr += count;
	return W_ERR;
}

/* ---- blocks ------------------------------------------------------------ */

static void block_free(struct block *b)
{
	if (b == NULL)
		return;
	for (int i = 0; i < b->n_warps; i++)
		free(b->w[i].R);
	free(b->w);
	free(b->smem);
	free(b->local);
	free(b->fparam);
	free(b);
}

static struct block *block_new(struct xl *x)
{
	struct block *b = gs__calloc(1, sizeof(*b));
	const struct gs__xprog *p = x->p;

	if (b == NULL)
		return NULL;
	b->n_warps = (int)((x->nthreads + 31) / 32);
	b->w = gs__calloc((size_t)b->n_warps, sizeof(*b->w));
	b->smem = gs__calloc(1, x->smem_size ? x->smem_size : 1);
	b->local = gs__calloc(x->nthreads, p->local_size ? p->local_size : 1);
	b->fparam =
	    gs__calloc(x->nthreads, p->fparam_size ? p->fparam_size : 1);
	if (b->w == NULL || b->smem == NULL || b->local == NULL ||
	    b->fparam == NULL)
		goto fail;
	for (int i = 0; i < b->n_warps; i++) {
		b->w[i].R =
		    gs__malloc(sizeof(uint64_t) * 32 * (size_t)p->n_rows);
		if (b->w[i].R == NULL)
			goto fail;
		memcpy(b->w[i].R, x->fill,
		       sizeof(uint64_t) * 32 * (size_t)p->n_rows);
	}
	return b;
fail:
	block_free(b);
	return NULL;
}

static uint64_t special(struct xl *x, const struct block *b, int sr, uint32_t t,
                        int wi, int l)
{
	const struct gs__launch *ln = x->l;
	uint32_t tx = t % ln->block[0], ty = t / ln->block[0] % ln->block[1],
	         tz = t / (ln->block[0] * ln->block[1]);
	uint32_t bit = 1u << l;

	switch (sr) {
	case XSR_TID_X:
		return tx;
	case XSR_TID_Y:
		return ty;
	case XSR_TID_Z:
		return tz;
	case XSR_NTID_X:
		return ln->block[0];
	case XSR_NTID_Y:
		return ln->block[1];
	case XSR_NTID_Z:
		return ln->block[2];
	case XSR_CTAID_X:
	case XSR_CLUSTERID_X:
		return b->id[0];
	case XSR_CTAID_Y:
	case XSR_CLUSTERID_Y:
		return b->id[1];
	case XSR_CTAID_Z:
	case XSR_CLUSTERID_Z:
		return b->id[2];
	case XSR_NCTAID_X:
	case XSR_NCLUSTERID_X:
		return ln->grid[0];
	case XSR_NCTAID_Y:
	case XSR_NCLUSTERID_Y:
		return ln->grid[1];
	case XSR_NCTAID_Z:
	case XSR_NCLUSTERID_Z:
		return ln->grid[2];
	case XSR_LANEID:
		return (uint64_t)l;
	case XSR_WARPID:
		return (uint64_t)wi;
	case XSR_NWARPID:
		return 64;
	case XSR_SMID:
		return (b->id[0] + b->id[1] * ln->grid[0]) %
		       (gs__drv.dev[x->ctx->dev].sm_count
		            ? gs__drv.dev[x->ctx->dev].sm_count
		            : 1);
	case XSR_NSMID:
		return gs__drv.dev[x->ctx->dev].sm_count;
	case XSR_LANEMASK_EQ:
		return bit;
	case XSR_LANEMASK_LT:
		return bit - 1;
	case XSR_LANEMASK_LE:
		return bit | (bit - 1);
	case XSR_LANEMASK_GT:
		return ~(bit | (bit - 1)) & 0xffffffffu;
	case XSR_LANEMASK_GE:
		return ~(bit - 1) & 0xffffffffu;
	case XSR_DYN_SMEM:
		return ln->smem;
	case XSR_TOTAL_SMEM:
		return x->smem_size;
	case XSR_CLUSTER_NCTARANK:
	case XSR_CLUSTER_NCTAID_X:
	case XSR_CLUSTER_NCTAID_Y:
	case XSR_CLUSTER_NCTAID_Z:
		return 1;
	case XSR_ENVREG + 1:
		return (uint64_t)(uintptr_t)x->ws >> 32;
	case XSR_ENVREG + 2:
		return (uint64_t)(uintptr_t)x->ws & 0xffffffffu;
	default:
		return 0;
	}
}

/* Starts block `id` in b: registers, lanes, program counters. */
static void block_start(struct xl *x, struct block *b, uint64_t lin)
{
	const struct gs__launch *ln = x->l;
	const struct gs__xprog *p = x->p;

	b->id[0] = (uint32_t)(lin % ln->grid[0]);
	b->id[1] = (uint32_t)(lin / ln->grid[0] % ln->grid[1]);
	b->id[2] = (uint32_t)(lin / ((uint64_t)ln->grid[0] * ln->grid[1]));
	b->red_count = 0;
	b->red_and = true;
	b->red_or = false;
	b->started = true;
	for (int wi = 0; wi < b->n_warps; wi++) {
		struct warp *w = &b->w[wi];
		uint32_t n = x->nthreads - (uint32_t)wi * 32;

		w->live = n >= 32 ? 0xffffffffu : (1u << n) - 1;
		w->mask = w->live;
		w->pc = 0;
		w->div = false;
		w->waiting = false;
		w->next_min = INT32_MAX;
		memset(w->depth, 0, sizeof(w->depth));
		for (int r = 0; r < p->n_rows; r++) {
			if (p->rows[r].kind != XK_SPECIAL)
				continue;
			for (int l = 0; l < 32; l++)
				w->R[r * 32 + l] =
				    special(x, b, (int)p->rows[r].val,
				            lane_t(wi, l), wi, l);
		}
	}
}

/* Runs b until it finishes (true), or spins through a slice (false). */
static bool block_run(struct xl *x, struct block *b)
{
	uint32_t slice = SLICE;

	for (;;) {
		bool all_waiting = true, all_done = true;

		/* each warp in turn, to a barrier, its end or TURN steps (so
		 * a warp spinning on another's flag lets that one run) */
		for (int wi = 0; wi < b->n_warps; wi++) {
			struct warp *w = &b->w[wi];
			uint32_t turn = TURN < slice ? TURN : slice, t0 = turn;

			if (w->live == 0 || w->waiting)
				continue;
			int r = warp_run(x, b, wi, &turn);
			slice -= t0 - turn;
			if (r == W_ERR)
				return true;
			if (slice == 0)
				return false;
		}
		for (int wi = 0; wi < b->n_warps; wi++) {
			struct warp *w = &b->w[wi];
			if (w->live == 0)
				continue;
			all_done = false;
			if (!w->waiting)
				all_waiting = false;
		}
		if (all_done)
			return true;
		if (!all_waiting)
			continue;
		/* every live warp is at a barrier: release them */
		for (int wi = 0; wi < b->n_warps; wi++) {
			struct warp *w = &b->w[wi];
			const struct gs__xins *in;

			if (w->live == 0 || !w->waiting)
				continue;
			in = &x->p->code[w->pc];
			if (in->op == XO_BARRED) {
				uint64_t v = in->m == 1   ? b->red_count
				             : in->m == 2 ? b->red_and
				                          : b->red_or;
				LANES(w->mask, { w->R[in->d * 32 + l] = v; })
			}
			w->waiting = false;
			w->pc++;
			if (w->div && w->pc >= w->next_min)
				gs__xw_reselect(x->p, w);
		}
		b->red_count = 0;
		b->red_and = true;
		b->red_or = false;
		if (n_instr > x->limit) {
			fail(x, CUDA_ERROR_LAUNCH_TIMEOUT, NULL,
			     "the kernel ran past the sim's watchdog");
			return true;
		}
	}
}

/* Fills the rows every warp shares: constants and symbol addresses. */
static bool fill_rows(struct xl *x)
{
	const struct gs__xprog *p = x->p;
	struct gs__module *mod = x->l->func->mod;

	x->fill = gs__calloc((size_t)p->n_rows * 32, sizeof(uint64_t));
	if (x->fill == NULL) {
		fail(x, CUDA_ERROR_OUT_OF_MEMORY, NULL,
		     "no host memory for the registers");
		return false;
	}
	for (int r = 0; r < p->n_rows; r++) {
		uint64_t v = 0;

		if (p->rows[r].kind == XK_CONST) {
			v = p->rows[r].val;
		} else if (p->rows[r].kind == XK_SYM) {
			const struct gs__xsym *s = &p->syms[p->rows[r].val];

			switch (s->kind) {
			case XY_GLOBAL:
				if (gs__module_global_addr(mod, x->ctx, s->name,
				                           &v) !=
				    CUDA_SUCCESS) {
					snprintf(
					    x->msg, sizeof(x->msg),
					    "module variable %.200s has no memory",
					    s->name);
					x->err = CUDA_ERROR_NOT_FOUND;
					return false;
				}
				break;
			case XY_KPARAM:
				v = (uint64_t)(uintptr_t)x->args + s->off;
				break;
			case XY_FUNC:
				v = 0;
				break;
			default:
				v = s->off;
				break;
			}
		} else {
			continue;
		}
		for (int l = 0; l < 32; l++)
			x->fill[r * 32 + l] = v;
	}
	return true;
}

static const char *err_name(CUresult r)
{
	const char *s = "CUDA_ERROR_UNKNOWN";

	(void)cuGetErrorName(r, &s);
	return s;
}

static void report(struct xl *x)
{
	char ins[160] = "";
	const char *name = x->l->func->entry->name;

	if (x->bad != NULL)
		gs__xins_text(x->l->func->mod->image, x->bad->src, ins,
		              sizeof(ins));
	fprintf(stderr,
	        "libcuda (gpuslice sim): kernel %.200s failed (%s): %s%s%s%s\n",
	        name, err_name(x->err), x->msg, ins[0] ? ": '" : "", ins,
	        ins[0] ? "'" : "");
	if (x->ctx->sticky == CUDA_SUCCESS)
		x->ctx->sticky = x->err;
}

/* Runs the whole grid; blocks that spin yield to the next ones. */
static void grid_run(struct xl *x)
{
	const struct gs__launch *ln = x->l;
	uint64_t n = (uint64_t)ln->grid[0] * ln->grid[1] * ln->grid[2];
	struct block **pend = NULL, *cur = NULL;
	size_t n_pend = 0, cap_pend = 0;
	uint64_t next = 0;

	while (x->err == CUDA_SUCCESS && (next < n || n_pend > 0)) {
		if (next < n) {
			if (cur == NULL && (cur = block_new(x)) == NULL) {
				fail(x, CUDA_ERROR_OUT_OF_MEMORY, NULL,
				     "no host memory for a block");
				break;
			}
			block_start(x, cur, next++);
		} else {
			cur = pend[0];
			memmove(pend, pend + 1, sizeof(*pend) * --n_pend);
		}
		bool done = block_run(x, cur);
		if (n_instr > x->limit && !done) {
			fail(x, CUDA_ERROR_LAUNCH_TIMEOUT, NULL,
			     "the kernel ran past the sim's watchdog");
			block_free(cur);
			cur = NULL;
			break;
		}
		if (done)
			continue; /* cur is reused for the next block */
		if (n_pend == cap_pend) {
			size_t nc = cap_pend ? cap_pend * 2 : 16;
			struct block **np = gs__realloc(pend, sizeof(*np) * nc);
			if (np == NULL) {
				fail(x, CUDA_ERROR_OUT_OF_MEMORY, NULL,
				     "no host memory for a waiting block");
				block_free(cur);
				cur = NULL;
				break;
			}
			pend = np;
			cap_pend = nc;
		}
		pend[n_pend++] = cur;
		cur = NULL;
	}
	block_free(cur);
	for (size_t i = 0; i < n_pend; i++)
		block_free(pend[i]);
	free(pend);
}

/* GPUSLICE_SIM_EXEC=0: kernels are timed only, memory is left as it was
 * (for timing studies whose kernels would take the host hours). Read
 * once. */
static bool exec_on(void)
{
	static int on = -1;

	if (on < 0) {
		const char *v = getenv("GPUSLICE_SIM_EXEC");
		on = !(v != NULL && strcmp(v, "0") == 0);
	}
	return on != 0;
}

void gs__exec_launch(const struct gs__launch *l, struct gs__ctx *ctx)
{
	struct gs__module *mod = l->func->mod;
	struct xl *x;
	const struct gs__xprog *p;

	if (mod == NULL || mod->image == NULL || !exec_on())
		return;
	x = gs__calloc(1, sizeof(*x));
	if (x == NULL) {
		ctx->sticky = CUDA_ERROR_OUT_OF_MEMORY;
		return;
	}
	x->l = l;
	x->ctx = ctx;
	x->limit = n_instr + MAX_THREAD_INSTR;
	x->args = l->args;
	x->args_size = l->args_size;
	p = gs__xprog_get(&mod->exec, mod->image, l->func->entry->name);
	if (p == NULL) {
		fail(x, CUDA_ERROR_OUT_OF_MEMORY, NULL,
		     "no host memory to read the kernel");
		goto out;
	}
	x->p = p;
	if (p->err[0]) {
		fail(x, p->err_code, NULL, p->err);
		goto out;
	}
	x->nthreads = l->block[0] * l->block[1] * l->block[2];
	x->smem_size = p->shared_static + l->smem;
	if (!fill_rows(x))
		goto out;
	uint64_t t0 = cpu_ns();
	grid_run(x);
	run_ns += cpu_ns() - t0;
out:
	if (x->err != CUDA_SUCCESS)
		report(x);
	free(x->fill);
	free(x);
}
