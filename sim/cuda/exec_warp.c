/*
 * exec_warp.c - a warp's lanes for the interpreter (exec.h): choosing the
 * group of lanes that runs next (divergence and reconvergence), the warp
 * collectives (shfl, vote, match, redux), typed loads and stores of
 * memory the caller has translated, and atomic read-modify-writes.
 * Pure: no launch state, no device memory lookups (exec_run.c does).
 */
#include "exec.h"

#include <limits.h>
#include <string.h>

int gs__xw_tsize(int t)
{
	switch (t) {
	case XT_B8:
	case XT_U8:
	case XT_S8:
	case XT_PRED:
		return 1;
	case XT_B16:
	case XT_U16:
	case XT_S16:
	case XT_F16:
	case XT_BF16:
		return 2;
	case XT_B64:
	case XT_U64:
	case XT_S64:
	case XT_F64:
		return 8;
	default:
		return 4;
	}
}

uint64_t gs__xw_load(const uint8_t *p, int t)
{
	switch (t) {
	case XT_S8:
		return (uint64_t)(int64_t)(int8_t)p[0];
	case XT_B8:
	case XT_U8:
	case XT_PRED:
		return p[0];
	case XT_S16: {
		int16_t v;
		memcpy(&v, p, 2);
		return (uint64_t)(int64_t)v;
	}
	case XT_B16:
	case XT_U16:
	case XT_F16:
	case XT_BF16: {
		uint16_t v;
		memcpy(&v, p, 2);
		return v;
	}
	case XT_S32: {
		int32_t v;
		memcpy(&v, p, 4);
		return (uint64_t)(int64_t)v;
	}
	case XT_B64:
	case XT_U64:
	case XT_S64:
	case XT_F64: {
		uint64_t v;
		memcpy(&v, p, 8);
		return v;
	}
	default: {
		uint32_t v;
		memcpy(&v, p, 4);
		return v;
	}
	}
}

void gs__xw_store(uint8_t *p, int t, uint64_t v)
{
	memcpy(p, &v,
	       (size_t)gs__xw_tsize(t)); /* little-endian: the low bytes */
}

/* Whether lanes a and b are in the same calls (the same frames). */
static bool same_frames(const struct warp *w, int a, int b)
{
	if (w->depth[a] == 0 && w->depth[b] == 0)
		return true;
	return w->depth[a] == w->depth[b] &&
	       memcmp(w->stack[a], w->stack[b],
	              sizeof(w->stack[a][0]) * w->depth[a]) == 0;
}

/*
 * Orders two lanes by where they are in the program: the call sites of
 * their frames, outermost first, then their pc (a lane inside a call made
 * at site S comes after one at S and before one at S + 1). <0: a first.
 */
static int lane_order(const struct gs__xprog *p, const struct warp *w, int a,
                      int b)
{
	int da = w->depth[a], db = w->depth[b], n = da < db ? da : db;

	for (int i = 0; i < n; i++) {
		int sa = p->calls[w->stack[a][i]].site,
		    sb = p->calls[w->stack[b][i]].site;
		if (sa != sb)
			return sa < sb ? -1 : 1;
	}
	if (da == db)
		return w->lane_pc[a] < w->lane_pc[b]   ? -1
		       : w->lane_pc[a] > w->lane_pc[b] ? 1
		                                       : 0;
	if (da < db) /* a is at or around b's call site */
		return w->lane_pc[a] <= p->calls[w->stack[b][da]].site ? -1 : 1;
	return w->lane_pc[b] <= p->calls[w->stack[a][db]].site ? 1 : -1;
}

/* Picks the group of lanes furthest behind in the program (the lowest pc
 * when all are in the same calls) to run next. */
void gs__xw_reselect(const struct gs__xprog *p, struct warp *w)
{
	int32_t lo = INT32_MAX, next = INT32_MAX;
	uint32_t g = 0;
	int first = -1, best = -1;
	bool mixed = false;

	for (uint32_t m = w->mask; m; m &= m - 1)
		w->lane_pc[__builtin_ctz(m)] = w->pc;
	for (uint32_t m = w->live; m; m &= m - 1) {
		int l = __builtin_ctz(m);
		if (first < 0)
			first = l;
		else if (!same_frames(w, first, l))
			mixed = true;
	}
	if (mixed) { /* lanes in different calls: order by frames */
		for (uint32_t m = w->live; m; m &= m - 1) {
			int l = __builtin_ctz(m);
			if (best < 0 || lane_order(p, w, l, best) < 0)
				best = l;
		}
		for (uint32_t m = w->live; m; m &= m - 1) {
			int l = __builtin_ctz(m);
			if (lane_order(p, w, l, best) == 0 &&
			    same_frames(w, l, best))
				g |= 1u << l;
		}
		w->pc = w->lane_pc[best];
		w->mask = g;
		w->next_min = INT32_MIN; /* choose again after each step */
		w->div = true;
		return;
	}
	for (uint32_t m = w->live; m; m &= m - 1) {
		int l = __builtin_ctz(m);
		if (w->lane_pc[l] < lo)
			lo = w->lane_pc[l];
	}
	for (uint32_t m = w->live; m; m &= m - 1) {
		int l = __builtin_ctz(m);
		if (w->lane_pc[l] == lo)
			g |= 1u << l;
		else if (w->lane_pc[l] < next)
			next = w->lane_pc[l];
	}
	w->pc = lo;
	w->mask = g;
	w->next_min = next;
	w->div = g != w->live;
}

/* Sends lanes `em` of the group to pc `to` and the rest to pc + 1. */
void gs__xw_split(const struct gs__xprog *p, struct warp *w, uint32_t em,
                  int32_t to)
{
	for (uint32_t m = w->mask; m; m &= m - 1) {
		int l = __builtin_ctz(m);
		w->lane_pc[l] = (em >> l) & 1 ? to : w->pc + 1;
	}
	w->mask = 0;
	gs__xw_reselect(p, w);
}

/* One atomic read-modify-write; returns the old value. */
uint64_t gs__xw_atomic_op(uint8_t *p, const struct gs__xins *in, uint64_t b,
                          uint64_t c)
{
	int t = in->t;
	uint64_t old = gs__xw_load(p, t), nv = old;
	bool sgn = t == XT_S32 || t == XT_S64;
	bool w64 = gs__xw_tsize(t) == 8;
	uint64_t mask = w64 ? ~0ULL : 0xffffffffULL;

	switch (in->m) {
	case XA_ADD:
		if (t == XT_F32)
			nv = gs__x_bf32(gs__x_f32(old) + gs__x_f32(b));
		else if (t == XT_F64)
			nv = gs__x_bf64(gs__x_f64(old) + gs__x_f64(b));
		else
			nv = (old + b) & mask;
		break;
	case XA_MIN:
	case XA_MAX: {
		bool less;
		if (t == XT_F32)
			less = gs__x_f32(b) < gs__x_f32(old);
		else if (t == XT_F64)
			less = gs__x_f64(b) < gs__x_f64(old);
		else if (sgn)
			less = w64 ? (int64_t)b < (int64_t)old
			           : (int32_t)b < (int32_t)old;
		else
			less = (b & mask) < (old & mask);
		if ((in->m == XA_MIN) == less)
			nv = b;
		break;
	}
	case XA_INC:
		nv = (old & mask) >= (b & mask) ? 0 : old + 1;
		break;
	case XA_DEC:
		nv = ((old & mask) == 0 || (old & mask) > (b & mask)) ? b
		                                                      : old - 1;
		break;
	case XA_AND:
		nv = old & b;
		break;
	case XA_OR:
		nv = old | b;
		break;
	case XA_XOR:
		nv = old ^ b;
		break;
	case XA_EXCH:
		nv = b;
		break;
	case XA_CAS:
		if ((old & mask) == (b & mask))
			nv = c;
		break;
	}
	gs__xw_store(p, t, nv);
	return old;
}

void gs__xw_shfl(struct warp *w, const struct gs__xins *in, uint32_t em)
{
	uint64_t *R = w->R, out[32];
	bool ok[32];

	LANES(em, {
		uint32_t bv = (uint32_t)R[in->b * 32 + l];
		uint32_t cv = (uint32_t)R[in->c * 32 + l];
		uint32_t seg = (cv >> 8) & 31, clamp = cv & 31;
		uint32_t minl = (uint32_t)l & seg;
		uint32_t maxl = minl | (clamp & ~seg);
		int32_t j;
		bool pv;

		switch (in->m) {
		case XS_UP:
			j = l - (int32_t)bv;
			pv = j >= (int32_t)maxl;
			break;
		case XS_DOWN:
			j = l + (int32_t)bv;
			pv = j <= (int32_t)maxl;
			break;
		case XS_BFLY:
			j = l ^ (int32_t)bv;
			pv = j <= (int32_t)maxl;
			break;
		default:
			j = (int32_t)(minl | (bv & ~seg & 31));
			pv = j <= (int32_t)maxl;
			break;
		}
		if (!pv || j < 0 || j > 31)
			j = l;
		out[l] = R[in->a * 32 + j] & 0xffffffffULL;
		ok[l] = pv;
	})
	LANES(em, {
		R[in->d * 32 + l] = out[l];
		if (in->d2 >= 0)
			R[in->d2 * 32 + l] = ok[l];
	})
}

void gs__xw_vote(struct warp *w, const struct gs__xins *in, uint32_t em)
{
	uint64_t *R = w->R;
	uint32_t yes = 0;
	uint64_t r;

	LANES(em, {
		bool v = (R[in->a * 32 + l] & 1) != 0;
		if (v != ((in->f & XF_NEGC) != 0))
			yes |= 1u << l;
	})
	switch (in->m) {
	case XV_ALL:
		r = yes == em;
		break;
	case XV_ANY:
		r = yes != 0;
		break;
	case XV_UNI:
		r = yes == em || yes == 0;
		break;
	default:
		r = yes;
		break;
	}
	LANES(em, { R[in->d * 32 + l] = r; })
}

void gs__xw_match(struct warp *w, const struct gs__xins *in, uint32_t em)
{
	uint64_t *R = w->R, out[32];
	bool all = true;
	int sz = gs__xw_tsize(in->t);
	uint64_t mask = sz == 8 ? ~0ULL : 0xffffffffULL;

	LANES(em, {
		uint32_t same = 0;
		uint64_t v = R[in->a * 32 + l] & mask;
		for (uint32_t m2 = em; m2; m2 &= m2 - 1) {
			int j = __builtin_ctz(m2);
			if ((R[in->a * 32 + j] & mask) == v)
				same |= 1u << j;
		}
		out[l] = same;
		if (same != em)
			all = false;
	})
	LANES(em, {
		if (in->m == 1) {
			R[in->d * 32 + l] = all ? em : 0;
			if (in->d2 >= 0)
				R[in->d2 * 32 + l] = all;
		} else {
			R[in->d * 32 + l] = out[l];
		}
	})
}

void gs__xw_redux(struct warp *w, const struct gs__xins *in, uint32_t em)
{
	uint64_t *R = w->R;
	bool sgn = in->t == XT_S32;
	uint32_t acc = 0;
	bool first = true;

	LANES(em, {
		uint32_t v = (uint32_t)R[in->a * 32 + l];
		if (first) {
			acc = v;
			first = false;
			continue;
		}
		switch (in->m) {
		case XA_ADD:
			acc += v;
			break;
		case XA_AND:
			acc &= v;
			break;
		case XA_OR:
			acc |= v;
			break;
		case XA_XOR:
			acc ^= v;
			break;
		case XA_MIN:
			if (sgn ? (int32_t)v < (int32_t)acc : v < acc)
				acc = v;
			break;
		default:
			if (sgn ? (int32_t)v > (int32_t)acc : v > acc)
				acc = v;
			break;
		}
	})
	LANES(em, { R[in->d * 32 + l] = acc; })
}
