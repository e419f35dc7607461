/*
 * exec_alu.c - the interpreter's arithmetic (exec.h): integer, bit,
 * floating-point, compare/select, conversion and move instructions on the
 * lanes of a warp. IEEE results where PTX defines them exactly (add, mul,
 * fma, div.rn, sqrt.rn, rcp.rn, cvt with each rounding mode, through the
 * host's FPU and fesetround); the .approx functions use the host's libm,
 * which is within PTX's stated error bounds.
 */
#include "exec.h"

#include <fenv.h>
#include <math.h>
#include <string.h>

/* The f32 NaN a GPU's arithmetic and conversions produce. */
#define CANON_NAN32 0x7fffffffULL

static inline int width(int t)
{
	switch (t) {
	case XT_B8:
	case XT_U8:
	case XT_S8:
		return 8;
	case XT_B16:
	case XT_U16:
	case XT_S16:
	case XT_F16:
	case XT_BF16:
		return 16;
	case XT_B64:
	case XT_U64:
	case XT_S64:
	case XT_F64:
		return 64;
	case XT_PRED:
		return 1;
	default:
		return 32;
	}
}

/* ---- half precision (f16, bf16): exact values as doubles ---- */

static bool is_half(int t)
{
	return t == XT_F16 || t == XT_BF16 || t == XT_F16X2 || t == XT_BF16X2;
}

static double h2d(uint16_t h, bool bf)
{
	int mb = bf ? 7 : 10, eb = bf ? 8 : 5, bias = bf ? 127 : 15;
	int e = (h >> mb) & ((1 << eb) - 1);
	double m = h & ((1u << mb) - 1), v;

	if (e == (1 << eb) - 1)
		v = m != 0 ? NAN : INFINITY;
	else if (e == 0)
		v = ldexp(m, 1 - bias - mb);
	else
		v = ldexp(m + (double)(1u << mb), e - bias - mb);
	return (h & 0x8000) ? -v : v;
}

/* d (exact) rounded to f16 or bf16 as `rnd` says (default nearest). */
static uint16_t d2h(double d, bool bf, int rnd)
{
	int mb = bf ? 7 : 10, bias = bf ? 127 : 15, emax = bf ? 127 : 15;
	int emin = 1 - bias;
	uint16_t sign = signbit(d) ? 0x8000 : 0, inf = bf ? 0x7f80 : 0x7c00;
	uint16_t maxf = (uint16_t)(inf - 1);
	double a = fabs(d), q, r;
	int e;

	if (isnan(d))
		return 0x7fff; /* the canonical NaN */
	if (isinf(d))
		return sign | inf;
	if (a == 0)
		return sign;
	(void)frexp(a, &e);
	e -= 1; /* a in [2^e, 2^(e+1)) */
	if (e < emin)
		e = emin;
	q = ldexp(a, mb - e); /* in units of the result's last place */
	switch (rnd) {
	case XR_RZ:
		q = trunc(q);
		break;
	case XR_RM:
		q = sign ? ceil(q) : floor(q);
		break;
	case XR_RP:
		q = sign ? floor(q) : ceil(q);
		break;
	default: {
		double f = floor(q), h = q - f;
		q = h > 0.5 || (h == 0.5 && fmod(f, 2) != 0) ? f + 1 : f;
		break;
	}
	}
	r = ldexp(q, e - mb);
	if (r >= ldexp(1, emax + 1)) { /* overflow */
		bool to_inf = rnd == XR_RZ   ? false
		              : rnd == XR_RM ? sign != 0
		              : rnd == XR_RP ? sign == 0
		                             : true;
		return sign | (to_inf ? inf : maxf);
	}
	if (r < ldexp(1, emin)) /* subnormal (or zero) */
		return sign | (uint16_t)ldexp(r, mb - emin);
	(void)frexp(r, &e);
	e -= 1;
	uint16_t m = (uint16_t)(ldexp(r, mb - e) - (double)(1u << mb));
	return sign | (uint16_t)((unsigned)(e + bias) << mb) | m;
}

static double hmm(double a, double b, bool mx)
{
	if (isnan(a))
		return b;
	if (isnan(b))
		return a;
	if (a == b)
		return mx ? (signbit(a) ? b : a) : (signbit(a) ? a : b);
	return (a < b) != mx ? a : b;
}

/* add/sub/mul/fma/neg/abs/min/max on f16, bf16 and their pairs. */
static uint64_t hop(const struct gs__xins *in, uint64_t a, uint64_t b,
                    uint64_t c)
{
	int t = in->t;
	bool bf = t == XT_BF16 || t == XT_BF16X2;
	int n = (t == XT_F16X2 || t == XT_BF16X2) ? 2 : 1;
	bool z = (in->f & XF_FTZ) && !bf;
	uint64_t out = 0;

	for (int i = 0; i < n; i++) {
		uint16_t ha = (uint16_t)(a >> (16 * i)),
		         hb = (uint16_t)(b >> (16 * i)),
		         hc = (uint16_t)(c >> (16 * i)), r;
		double x = h2d(ha, bf), y = h2d(hb, bf), w = h2d(hc, bf), v;

		if (z) { /* flush subnormal inputs */
			x = (ha & 0x7c00) == 0 ? copysign(0.0, x) : x;
			y = (hb & 0x7c00) == 0 ? copysign(0.0, y) : y;
			w = (hc & 0x7c00) == 0 ? copysign(0.0, w) : w;
		}
		switch (in->op) {
		case XO_NEG:
			r = ha ^ 0x8000;
			goto put;
		case XO_ABS:
			r = ha & 0x7fff;
			goto put;
		case XO_ADD:
			v = x + y;
			break;
		case XO_SUB:
			v = x - y;
			break;
		case XO_MUL:
			v = x * y;
			break;
		case XO_MIN:
			v = hmm(x, y, false);
			break;
		case XO_MAX:
			v = hmm(x, y, true);
			break;
		default:
			v = fma(x, y, w);
			break;
		}
		if (in->f & XF_SAT)
			v = isnan(v) ? 0.0 : v < 0 ? 0.0 : v > 1 ? 1.0 : v;
		r = d2h(v, bf, in->m);
		if (z && (r & 0x7c00) == 0)
			r &= 0x8000;
	put:
		out |= (uint64_t)r << (16 * i);
	}
	return out;
}

static inline bool is_signed(int t)
{
	return t == XT_S8 || t == XT_S16 || t == XT_S32 || t == XT_S64;
}

static inline uint64_t zx(uint64_t v, int w)
{
	return w >= 64 ? v : v & ((1ULL << w) - 1);
}

static inline int64_t sx(uint64_t v, int w)
{
	if (w >= 64)
		return (int64_t)v;
	uint64_t s = 1ULL << (w - 1);
	v = zx(v, w);
	return (int64_t)((v ^ s) - s);
}

static inline float ftz32(float f, bool on)
{
	if (on && fpclassify(f) == FP_SUBNORMAL)
		return copysignf(0.0f, f);
	return f;
}

/* Integer min/max with PTX's signedness. */
static uint64_t imin(uint64_t a, uint64_t b, int t, bool mx)
{
	int w = width(t);
	bool less = is_signed(t) ? sx(a, w) < sx(b, w) : zx(a, w) < zx(b, w);

	return (less != mx) ? a : b;
}

static float fminmax32(float a, float b, bool mx)
{
	if (isnan(a))
		return b;
	if (isnan(b))
		return a;
	if (a == b) { /* -0 is below +0 */
		uint32_t ua = (uint32_t)gs__x_bf32(a),
		         ub = (uint32_t)gs__x_bf32(b);
		return gs__x_f32(mx ? (ua & ub) : (ua | ub));
	}
	return (a < b) != mx ? a : b;
}

static double fminmax64(double a, double b, bool mx)
{
	if (isnan(a))
		return b;
	if (isnan(b))
		return a;
	if (a == b) {
		uint64_t ua = gs__x_bf64(a), ub = gs__x_bf64(b);
		return gs__x_f64(mx ? (ua & ub) : (ua | ub));
	}
	return (a < b) != mx ? a : b;
}

static bool fcmp(double a, double b, int c)
{
	bool un = isnan(a) || isnan(b);

	switch (c) {
	case XC_EQ:
		return !un && a == b;
	case XC_NE:
		return !un && a != b;
	case XC_LT:
		return !un && a < b;
	case XC_LE:
		return !un && a <= b;
	case XC_GT:
		return !un && a > b;
	case XC_GE:
		return !un && a >= b;
	case XC_EQU:
		return un || a == b;
	case XC_NEU:
		return un || a != b;
	case XC_LTU:
		return un || a < b;
	case XC_LEU:
		return un || a <= b;
	case XC_GTU:
		return un || a > b;
	case XC_GEU:
		return un || a >= b;
	case XC_NUM:
		return !un;
	case XC_NAN:
		return un;
	default:
		return false;
	}
}

static bool icmp(uint64_t a, uint64_t b, int t, int c)
{
	int w = width(t);
	int64_t sa = sx(a, w), sb = sx(b, w);
	uint64_t ua = zx(a, w), ub = zx(b, w);
	bool s = is_signed(t);

	switch (c) {
	case XC_EQ:
		return ua == ub;
	case XC_NE:
		return ua != ub;
	case XC_LT:
		return s ? sa < sb : ua < ub;
	case XC_LE:
		return s ? sa <= sb : ua <= ub;
	case XC_GT:
		return s ? sa > sb : ua > ub;
	case XC_GE:
		return s ? sa >= sb : ua >= ub;
	case XC_LO:
		return ua < ub;
	case XC_LS:
		return ua <= ub;
	case XC_HI:
		return ua > ub;
	case XC_HS:
		return ua >= ub;
	default:
		return false;
	}
}

static bool compare(const struct gs__xins *in, uint64_t a, uint64_t b, int t)
{
	if (t == XT_F32) {
		bool z = in->f & XF_FTZ;
		return fcmp(ftz32(gs__x_f32(a), z), ftz32(gs__x_f32(b), z),
		            in->m);
	}
	if (t == XT_F64)
		return fcmp(gs__x_f64(a), gs__x_f64(b), in->m);
	if (t == XT_F16 || t == XT_BF16)
		return fcmp(h2d((uint16_t)a, t == XT_BF16),
		            h2d((uint16_t)b, t == XT_BF16), in->m);
	return icmp(a, b, t, in->m);
}

/* Integer result of rounding a float, saturated to type t (NaN: 0). */
static uint64_t f2i(double v, int rnd, int t)
{
	int w = width(t);

	switch (rnd) {
	case XR_RZI:
	case XR_RZ:
		v = trunc(v);
		break;
	case XR_RMI:
	case XR_RM:
		v = floor(v);
		break;
	case XR_RPI:
	case XR_RP:
		v = ceil(v);
		break;
	default:
		v = nearbyint(v);
		break; /* round half to even */
	}
	if (isnan(v))
		return 0;
	if (is_signed(t)) {
		double lo = -ldexp(1.0, w - 1), hi = ldexp(1.0, w - 1);
		if (v < lo)
			return zx((uint64_t)(1ULL << (w - 1)), w);
		if (v >= hi)
			return zx((1ULL << (w - 1)) - 1, w);
		return zx((uint64_t)(int64_t)v, w);
	}
	if (v <= 0)
		return 0;
	if (v >= ldexp(1.0, w))
		return zx(~0ULL, w);
	return (uint64_t)v;
}

static int fe_mode(int rnd)
{
	switch (rnd) {
	case XR_RZ:
		return FE_TOWARDZERO;
	case XR_RM:
		return FE_DOWNWARD;
	case XR_RP:
		return FE_UPWARD;
	default:
		return FE_TONEAREST;
	}
}

static uint64_t cvt(const struct gs__xins *in, uint64_t a)
{
	int dt = in->t, st = in->t2, ws = width(st), wd = width(dt);
	bool sf = st == XT_F32 || st == XT_F64 || st == XT_F16 || st == XT_BF16;
	bool df = dt == XT_F32 || dt == XT_F64 || dt == XT_F16 || dt == XT_BF16;
	int hr = in->m >= XR_RN && in->m <= XR_RP ? in->m : XR_RN;
	bool z = in->f & XF_FTZ, sat = in->f & XF_SAT;

	if (!sf && !df) {
		uint64_t r = is_signed(st) ? (uint64_t)sx(a, ws) : zx(a, ws);
		if (sat) {
			bool ss = is_signed(st), ds = is_signed(dt);
			int64_t lo = ds ? -(int64_t)(1ULL << (wd - 1)) : 0;
			uint64_t hi =
			    ds ? (1ULL << (wd - 1)) - 1
			       : (wd >= 64 ? ~0ULL : (1ULL << wd) - 1);
			if (ss && sx(a, ws) < lo)
				r = (uint64_t)lo;
			else if (ss && sx(a, ws) > 0 &&
			         (uint64_t)sx(a, ws) > hi)
				r = hi;
			else if (!ss && zx(a, ws) > hi)
				r = hi;
		}
		return is_signed(dt) ? (uint64_t)sx(r, wd) : zx(r, wd);
	}
	double v;
	if (st == XT_F32)
		v = ftz32(gs__x_f32(a), z);
	else if (st == XT_F64)
		v = gs__x_f64(a);
	else if (st == XT_F16 || st == XT_BF16)
		v = h2d((uint16_t)a, st == XT_BF16);
	else
		v = 0; /* an integer: converted below, rounded as asked */
	if (!df)       /* float -> int */
		return f2i(v, in->m, dt);
	if (!sf && (dt == XT_F16 || dt == XT_BF16)) /* exact to 2^53 */
		return d2h(is_signed(st) ? (double)sx(a, ws)
		                         : (double)zx(a, ws),
		           dt == XT_BF16, hr);
	if (!sf) { /* int -> float, rounded as asked */
		int old = fegetround();
		uint64_t r;
		fesetround(fe_mode(in->m));
		/* volatile: converted before the mode is put back */
		if (dt == XT_F32) {
			volatile float f =
			    is_signed(st) ? (float)sx(a, ws) : (float)zx(a, ws);
			r = gs__x_bf32(f);
		} else {
			volatile double d = is_signed(st) ? (double)sx(a, ws)
			                                  : (double)zx(a, ws);
			r = gs__x_bf64(d);
		}
		fesetround(old);
		return r;
	}
	/* float -> float */
	switch (in->m) {
	case XR_RNI:
		v = nearbyint(v);
		break;
	case XR_RZI:
		v = trunc(v);
		break;
	case XR_RMI:
		v = floor(v);
		break;
	case XR_RPI:
		v = ceil(v);
		break;
	default:
		break;
	}
	if (sat)
		v = isnan(v) ? 0.0 : v < 0 ? 0.0 : v > 1 ? 1.0 : v;
	if (dt == XT_F64)
		return gs__x_bf64(v);
	if (dt == XT_F16 || dt == XT_BF16) {
		uint16_t h = d2h(v, dt == XT_BF16, hr);
		if (z && dt == XT_F16 && (h & 0x7c00) == 0)
			h &= 0x8000;
		return h;
	}
	int old = fegetround();
	uint64_t r;
	if (in->m >= XR_RN && in->m <= XR_RP)
		fesetround(fe_mode(in->m));
	if (dt == XT_F32) {
		volatile float f = (float)v;
		r = isnan(f) ? CANON_NAN32 : gs__x_bf32(ftz32(f, z));
	} else {
		r = 0;
	}
	fesetround(old);
	return r;
}

static uint64_t prmt(uint32_t a, uint32_t b, uint32_t c)
{
	uint64_t bytes = (uint64_t)b << 32 | a;
	uint32_t r = 0;

	for (int i = 0; i < 4; i++) {
		uint32_t sel = (c >> (4 * i)) & 0xf;
		uint32_t byte = (uint32_t)(bytes >> (8 * (sel & 7))) & 0xff;
		if (sel & 8)
			byte = (byte & 0x80) ? 0xff : 0;
		r |= byte << (8 * i);
	}
	return r;
}

static uint64_t lop3(uint64_t a, uint64_t b, uint64_t c, uint32_t lut)
{
	uint64_t r = 0;

	for (int i = 0; i < 8; i++)
		if ((lut >> i) & 1)
			r |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) &
			     ((i & 1) ? c : ~c);
	return r;
}

/* Float arithmetic on f32 (ftz honoured); false when not a float op. */
static uint64_t fop32(const struct gs__xins *in, uint64_t ua, uint64_t ub,
                      uint64_t uc)
{
	bool z = in->f & XF_FTZ;
	float a = ftz32(gs__x_f32(ua), z), b = ftz32(gs__x_f32(ub), z),
	      c = ftz32(gs__x_f32(uc), z), r;

	switch (in->op) {
	case XO_ADD:
		r = a + b;
		break;
	case XO_SUB:
		r = a - b;
		break;
	case XO_MUL:
		r = a * b;
		break;
	case XO_MAD:
	case XO_FMA:
		r = fmaf(a, b, c);
		break;
	case XO_DIV:
		r = a / b;
		break;
	case XO_ABS:
		return ua & 0x7fffffffu;
	case XO_NEG:
		return (ua ^ 0x80000000u) & 0xffffffffu;
	case XO_MIN:
		r = fminmax32(a, b, false);
		break;
	case XO_MAX:
		r = fminmax32(a, b, true);
		break;
	case XO_RCP:
		r = 1.0f / a;
		break;
	case XO_SQRT:
		r = sqrtf(a);
		break;
	case XO_RSQRT:
		r = 1.0f / sqrtf(a);
		break;
	case XO_EX2:
		r = exp2f(a);
		break;
	case XO_LG2:
		r = log2f(a);
		break;
	case XO_SIN:
		r = sinf(a);
		break;
	case XO_COS:
		r = cosf(a);
		break;
	case XO_TANH:
		r = tanhf(a);
		break;
	case XO_COPYSIGN:
		r = copysignf(b, a);
		break;
	default:
		r = 0;
		break;
	}
	if (in->f & XF_SAT)
		r = isnan(r) ? 0.0f : r < 0 ? 0.0f : r > 1 ? 1.0f : r;
	return isnan(r) ? CANON_NAN32 : gs__x_bf32(ftz32(r, z));
}

static uint64_t fop64(const struct gs__xins *in, uint64_t ua, uint64_t ub,
                      uint64_t uc)
{
	double a = gs__x_f64(ua), b = gs__x_f64(ub), c = gs__x_f64(uc), r;

	switch (in->op) {
	case XO_ADD:
		r = a + b;
		break;
	case XO_SUB:
		r = a - b;
		break;
	case XO_MUL:
		r = a * b;
		break;
	case XO_MAD:
	case XO_FMA:
		r = fma(a, b, c);
		break;
	case XO_DIV:
		r = a / b;
		break;
	case XO_ABS:
		return ua & 0x7fffffffffffffffULL;
	case XO_NEG:
		return ua ^ 0x8000000000000000ULL;
	case XO_MIN:
		r = fminmax64(a, b, false);
		break;
	case XO_MAX:
		r = fminmax64(a, b, true);
		break;
	case XO_RCP:
		r = 1.0 / a;
		break;
	case XO_SQRT:
		r = sqrt(a);
		break;
	case XO_RSQRT:
		r = 1.0 / sqrt(a);
		break;
	case XO_EX2:
		r = exp2(a);
		break;
	case XO_LG2:
		r = log2(a);
		break;
	case XO_SIN:
		r = sin(a);
		break;
	case XO_COS:
		r = cos(a);
		break;
	case XO_TANH:
		r = tanh(a);
		break;
	case XO_COPYSIGN:
		r = copysign(b, a);
		break;
	default:
		r = 0;
		break;
	}
	if (in->f & XF_SAT)
		r = isnan(r) ? 0.0 : r < 0 ? 0.0 : r > 1 ? 1.0 : r;
	return gs__x_bf64(r);
}

static bool testp(uint64_t v, int t, int what)
{
	double d = t == XT_F64 ? gs__x_f64(v) : gs__x_f32(v);
	int c = fpclassify(d);

	if (t == XT_F32)
		c = fpclassify(gs__x_f32(v));
	switch (what) {
	case 1:
		return isfinite(d);
	case 2:
		return isinf(d);
	case 3:
		return !isnan(d);
	case 4:
		return isnan(d);
	case 5:
		return c == FP_NORMAL;
	case 6:
		return c == FP_SUBNORMAL;
	default:
		return false;
	}
}

/* Integer (and bit) arithmetic. *cc: the carry flag in and out. */
static uint64_t iop(const struct gs__xins *in, uint64_t a, uint64_t b,
                    uint64_t c, uint64_t e, uint64_t *cc)
{
	int t = in->t, w = width(t);
	bool s = is_signed(t);
	uint64_t r = 0;

	switch (in->op) {
	case XO_ADD:
	case XO_SUB:
	case XO_ADDC:
	case XO_SUBC: {
		bool sub = in->op == XO_SUB || in->op == XO_SUBC;
		uint64_t cin =
		    (in->op == XO_ADDC || in->op == XO_SUBC) ? (*cc & 1) : 0;
		if (in->f & XF_SAT && s && w == 32) {
			int64_t v =
			    sub ? sx(a, 32) - sx(b, 32) : sx(a, 32) + sx(b, 32);
			v = v > INT32_MAX   ? INT32_MAX
			    : v < INT32_MIN ? INT32_MIN
			                    : v;
			return zx((uint64_t)v, 32);
		}
		if (!sub) {
			unsigned __int128 v =
			    (unsigned __int128)zx(a, w) + zx(b, w) + cin;
			r = zx((uint64_t)v, w);
			*cc = w >= 64 ? (uint64_t)(v >> 64) & 1
			              : (uint64_t)(v >> w) & 1;
		} else {
			unsigned __int128 v =
			    (unsigned __int128)zx(a, w) - zx(b, w) - cin;
			r = zx((uint64_t)v, w);
			*cc = zx(a, w) < (unsigned __int128)zx(b, w) + cin;
		}
		return r;
	}
	case XO_MUL:
	case XO_MAD:
	case XO_MADC: {
		uint64_t add = (in->op == XO_MUL) ? 0 : c;
		if (in->f & XF_WIDE) {
			uint64_t p = s ? (uint64_t)(sx(a, w) * sx(b, w))
			               : zx(a, w) * zx(b, w);
			int w2 = w * 2;
			unsigned __int128 v =
			    (unsigned __int128)zx(p, w2) + zx(add, w2) +
			    (in->op == XO_MADC ? (*cc & 1) : 0);
			if (in->m2 || in->op == XO_MADC)
				*cc = (uint64_t)(v >> w2) & 1;
			return zx((uint64_t)v, w2);
		}
		uint64_t p;
		if (in->f & XF_HI) {
			if (w == 64) {
				if (s)
					p = (uint64_t)((__int128)(int64_t)a *
					                   (__int128)(int64_t)
					                       b >>
					               64);
				else
					p = (uint64_t)((unsigned __int128)a *
					                   b >>
					               64);
			} else {
				p = s ? (uint64_t)(sx(a, w) * sx(b, w)) >> w
				      : (zx(a, w) * zx(b, w)) >> w;
			}
		} else {
			p = a * b;
		}
		unsigned __int128 v = (unsigned __int128)zx(p, w) + zx(add, w) +
		                      (in->op == XO_MADC ? (*cc & 1) : 0);
		if (in->m2 || in->op == XO_MADC)
			*cc = (uint64_t)(v >> w) & 1;
		if (in->f & XF_SAT && s && w == 32 && in->op == XO_MAD) {
			int64_t sv = (int64_t)sx(p, 32) + sx(add, 32);
			sv = sv > INT32_MAX   ? INT32_MAX
			     : sv < INT32_MIN ? INT32_MIN
			                      : sv;
			return zx((uint64_t)sv, 32);
		}
		return zx((uint64_t)v, w);
	}
	case XO_MUL24:
	case XO_MAD24: {
		int64_t pa = s ? sx(a, 24) : (int64_t)zx(a, 24);
		int64_t pb = s ? sx(b, 24) : (int64_t)zx(b, 24);
		uint64_t p = (uint64_t)(pa * pb);
		p = (in->f & XF_HI) ? p >> 16 : p;
		return zx(p + (in->op == XO_MAD24 ? c : 0), 32);
	}
	case XO_DIV:
	case XO_REM:
		if (zx(b, w) == 0)
			return in->op == XO_DIV ? zx(~0ULL, w) : a;
		if (s) {
			int64_t x = sx(a, w), y = sx(b, w);
			if (y == -1)
				return zx(in->op == XO_DIV
				              ? (uint64_t)(-(uint64_t)x)
				              : 0,
				          w);
			return zx((uint64_t)(in->op == XO_DIV ? x / y : x % y),
			          w);
		}
		return in->op == XO_DIV ? zx(a, w) / zx(b, w)
		                        : zx(a, w) % zx(b, w);
	case XO_ABS: {
		int64_t x = sx(a, w);
		return zx((uint64_t)(x < 0 ? -x : x), w);
	}
	case XO_NEG:
		return zx(-a, w);
	case XO_MIN:
		return zx(imin(a, b, t, false), w);
	case XO_MAX:
		return zx(imin(a, b, t, true), w);
	case XO_AND:
		return zx(a & b, w);
	case XO_OR:
		return zx(a | b, w);
	case XO_XOR:
		return zx(a ^ b, w);
	case XO_NOT:
		return zx(~a, w);
	case XO_CNOT:
		return zx(a, w) == 0;
	case XO_SHL:
		b = zx(b, 32);
		return b >= (uint64_t)w ? 0 : zx(a << b, w);
	case XO_SHR:
		b = zx(b, 32);
		if (s) {
			uint64_t n = b >= (uint64_t)w ? (uint64_t)w - 1 : b;
			return zx((uint64_t)(sx(a, w) >> n), w);
		}
		return b >= (uint64_t)w ? 0 : zx(a, w) >> b;
	case XO_POPC:
		return (uint64_t)__builtin_popcountll(zx(a, w));
	case XO_CLZ:
		a = zx(a, w);
		return a == 0 ? (uint64_t)w
		              : (uint64_t)(__builtin_clzll(a) - (64 - w));
	case XO_BREV: {
		uint64_t v = zx(a, w);
		r = 0;
		for (int i = 0; i < w; i++)
			r |= ((v >> i) & 1) << (w - 1 - i);
		return r;
	}
	case XO_BFIND: {
		uint64_t v = s && sx(a, w) < 0 ? zx(~a, w) : zx(a, w);
		if (v == 0)
			return 0xffffffffu;
		uint64_t pos = (uint64_t)(63 - __builtin_clzll(v));
		/* .shiftamt: the left shift that brings it to the top */
		return in->m == 1 ? (uint64_t)w - 1 - pos : pos;
	}
	case XO_BFE: {
		uint32_t pos = (uint32_t)b & 0xff, len = (uint32_t)c & 0xff;
		uint64_t v = zx(a, w);
		if (len == 0)
			return 0;
		if (pos >= (uint32_t)w)
			return s && sx(a, w) < 0 ? zx(~0ULL, w) : 0;
		uint64_t f = v >> pos;
		if (len < 64)
			f &= (1ULL << len) - 1;
		uint32_t top = pos + len - 1 < (uint32_t)w - 1
		                   ? pos + len - 1
		                   : (uint32_t)w - 1;
		if (s && ((v >> top) & 1))
			f |= len < 64 ? ~0ULL << (top - pos + 1) : 0;
		return zx(f, w);
	}
	case XO_BFI: {
		/* bfi d, a (insert), b (base), c (pos), e (len) */
		uint32_t pos = (uint32_t)c & 0xff, len = (uint32_t)e & 0xff;
		uint64_t base = zx(b, w);
		if (len == 0 || pos >= (uint32_t)w)
			return base;
		if (pos + len > (uint32_t)w)
			len = (uint32_t)w - pos;
		uint64_t m = (len >= 64 ? ~0ULL : (1ULL << len) - 1) << pos;
		return zx((base & ~m) | ((a << pos) & m), w);
	}
	case XO_PRMT:
		return prmt((uint32_t)a, (uint32_t)b, (uint32_t)c);
	case XO_LOP3:
		return zx(lop3(a, b, c, (uint32_t)e), w);
	case XO_SHF: {
		uint32_t n = (uint32_t)c;
		uint64_t v = (uint64_t)(uint32_t)b << 32 | (uint32_t)a;
		n = (in->f & XF_TO) ? (n > 32 ? 32 : n) : n & 31;
		if (in->f & XF_HI)
			return (uint32_t)(v >> n);
		return (uint32_t)((v << n) >> 32);
	}
	case XO_BMSK: {
		uint32_t pos = (uint32_t)a, len = (uint32_t)b;
		if (in->f & XF_TO) {
			pos = pos > 32 ? 32 : pos;
			len = len > 32 ? 32 : len;
		} else {
			pos &= 31;
			len &= 31;
		}
		uint64_t m = len >= 32 ? 0xffffffffULL : (1ULL << len) - 1;
		return zx(m << pos, 32);
	}
	case XO_DP4A:
	case XO_DP2A: {
		/* d = c + the products of a's and b's parts */
		bool as = in->m & 1, bs = in->m & 2;
		int64_t acc = s ? sx(c, 32) : (int64_t)zx(c, 32);
		int na = in->op == XO_DP4A ? 4 : 2,
		    aw = in->op == XO_DP4A ? 8 : 16;
		int b0 = in->op == XO_DP2A && (in->m & 4) ? 2 : 0;
		for (int i = 0; i < na; i++) {
			uint64_t pa = a >> (aw * i), pb = b >> (8 * (b0 + i));
			int64_t x = as ? sx(pa, aw) : (int64_t)zx(pa, aw);
			int64_t y = bs ? sx(pb, 8) : (int64_t)zx(pb, 8);
			acc += x * y;
		}
		return zx((uint64_t)acc, 32);
	}
	case XO_SAD: {
		uint64_t d =
		    s ? (uint64_t)(sx(a, w) > sx(b, w) ? sx(a, w) - sx(b, w)
		                                       : sx(b, w) - sx(a, w))
		      : (zx(a, w) > zx(b, w) ? zx(a, w) - zx(b, w)
		                             : zx(b, w) - zx(a, w));
		return zx(c + d, w);
	}
	default:
		return 0;
	}
}

bool gs__xalu(const struct gs__xins *in, uint64_t *R, uint32_t em)
{
	int t = in->t;
	bool fl = t == XT_F32 || t == XT_F64;
	int old = 0;
	bool rounding = false;

	if (in->op < XO_ADD || in->op > XO_MADC)
		return false;
	if (fl && in->m >= XR_RZ && in->m <= XR_RP &&
	    (in->op == XO_ADD || in->op == XO_SUB || in->op == XO_MUL ||
	     in->op == XO_FMA || in->op == XO_MAD || in->op == XO_DIV ||
	     in->op == XO_RCP || in->op == XO_SQRT)) {
		old = fegetround();
		fesetround(fe_mode(in->m));
		rounding = true;
	}
	for (uint32_t m_ = em; m_; m_ &= m_ - 1) {
		int l = __builtin_ctz(m_);
		uint64_t a = in->a >= 0 ? R[in->a * 32 + l] : 0;
		uint64_t b = in->b >= 0 ? R[in->b * 32 + l] : 0;
		uint64_t c = in->c >= 0 ? R[in->c * 32 + l] : 0;
		uint64_t e = in->e >= 0 ? R[in->e * 32 + l] : 0;
		uint64_t r;

		switch (in->op) {
		case XO_MOV:
			r = t == XT_PRED ? (a & 1) : zx(a, width(t));
			break;
		case XO_SETP:
		case XO_SET: {
			bool v =
			    compare(in, a, b, in->op == XO_SET ? in->t2 : t);
			bool nv = !v;
			if (in->m2 != XB_NONE) {
				bool p =
				    ((c & 1) != 0) != ((in->f & XF_NEGC) != 0);
				switch (in->m2) {
				case XB_AND:
					v = v && p;
					nv = nv && p;
					break;
				case XB_OR:
					v = v || p;
					nv = nv || p;
					break;
				default:
					v = v != p;
					nv = nv != p;
					break;
				}
			}
			if (in->op == XO_SETP) {
				r = v;
				if (in->d2 >= 0)
					R[in->d2 * 32 + l] = nv;
			} else if (t == XT_F32) {
				r = v ? gs__x_bf32(1.0f) : 0;
			} else {
				r = v ? zx(~0ULL, width(t)) : 0;
			}
			break;
		}
		case XO_SELP:
			r = (c & 1) ? a : b;
			break;
		case XO_SLCT:
			r = (in->t2 == XT_F32 ? !(gs__x_f32(c) < 0.0f)
			                      : sx(c, 32) >= 0)
			        ? a
			        : b;
			break;
		case XO_CVT:
			if (t == XT_F16X2 || t == XT_BF16X2) {
				int hr = in->m >= XR_RN && in->m <= XR_RP
				             ? in->m
				             : XR_RN;
				bool bf = t == XT_BF16X2;
				r = (uint64_t)d2h(gs__x_f32(a), bf, hr) << 16 |
				    d2h(gs__x_f32(b), bf, hr);
			} else {
				r = cvt(in, a);
			}
			break;
		case XO_TESTP:
			r = testp(a, t, in->m);
			break;
		case XO_PACK: {
			int pw = width(t) / in->nv;
			r = 0;
			for (int i = 0; i < in->nv; i++)
				r |= zx(R[in->v[i] * 32 + l], pw) << (pw * i);
			break;
		}
		case XO_UNPACK: {
			int pw = width(t) / in->nv;
			for (int i = 0; i < in->nv; i++)
				R[in->v[i] * 32 + l] = zx(a >> (pw * i), pw);
			continue;
		}
		default:
			if (is_half(t))
				r = hop(in, a, b, c);
			else if (t == XT_F32)
				r = fop32(in, a, b, c);
			else if (t == XT_F64)
				r = fop64(in, a, b, c);
			else if (t == XT_PRED)
				r = iop(in, a, b, c, e, &e) & 1;
			else {
				r = iop(in, a, b, c, e, &e);
				if (in->e >= 0 &&
				    (in->m2 || in->op == XO_ADDC ||
				     in->op == XO_SUBC || in->op == XO_MADC))
					R[in->e * 32 + l] = e;
			}
			break;
		}
		R[in->d * 32 + l] = r;
	}
	if (rounding)
		fesetround(old);
	return true;
}
