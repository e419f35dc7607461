/*
 * exec_fuzz.c - fuzzes the sim's PTX interpreter one instruction at a
 * time: for each instruction form below it writes a PTX kernel whose
 * threads load three random 64-bit operands, run that one instruction
 * and store the result, loads it with cuModuleLoadData, runs it over
 * random inputs (mixed with edge values: zeros of both signs, infinities,
 * NaNs, subnormals, INT_MIN, shift counts past the width) and compares
 * every result with a host reference written here. IEEE results must be
 * bit-exact (any NaN matches any NaN); .approx ones within PTX's stated
 * bound. Prints "ok FORM" per form, then "all ok" and the instruction
 * count; exits 1 on a mismatch (printing the operands).
 *
 * Usage: gs-exec-fuzz [SEED] [THREADS]
 */
#include <cuda.h>
#include <fenv.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum res { R32, R64, RF, RD, RP, RH };
enum dom { D_INT, D_F32, D_F64, D_SMALL, D_ANGLE, D_HALF };

struct form {
	const char *name;
	const char *ins; /* operands a*, b*, c*; destination d* */
	enum res res;
	enum dom dom;
	uint64_t (*ref)(uint64_t a, uint64_t b, uint64_t c);
	double tol; /* 0: bit-exact; else max |error| relative (or absolute
	               for D_ANGLE) */
};

static float F(uint64_t v)
{
	float f;
	uint32_t u = (uint32_t)v;
	memcpy(&f, &u, 4);
	return f;
}

static uint64_t BF(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static double D(uint64_t v)
{
	double d;
	memcpy(&d, &v, 8);
	return d;
}

static uint64_t BD(double d)
{
	uint64_t u;
	memcpy(&u, &d, 8);
	return u;
}

#define U32(x) ((uint32_t)(x))
#define S32(x) ((int32_t)(uint32_t)(x))

static uint64_t r_add_s32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return U32(a + b);
}
static uint64_t r_sub_s64(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return a - b;
}
static uint64_t r_mul_lo_s32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return U32(U32(a) * U32(b));
}
static uint64_t r_mul_hi_s32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return U32((uint64_t)((int64_t)S32(a) * S32(b)) >> 32);
}
static uint64_t r_mul_hi_u64(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return (uint64_t)((unsigned __int128)a * b >> 64);
}
static uint64_t r_mul_wide_s32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return (uint64_t)((int64_t)S32(a) * S32(b));
}
static uint64_t r_mad_lo_u32(uint64_t a, uint64_t b, uint64_t c)
{
	return U32(U32(a) * U32(b) + U32(c));
}
static uint64_t r_div_s32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	if (S32(b) == 0 || (S32(a) == INT32_MIN && S32(b) == -1))
		return 0; /* not compared: undefined in PTX */
	return U32(S32(a) / S32(b));
}
static uint64_t r_rem_u32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return U32(b) ? U32(U32(a) % U32(b)) : 0;
}
static uint64_t r_min_s32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return U32(S32(a) < S32(b) ? S32(a) : S32(b));
}
static uint64_t r_max_u64(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return a > b ? a : b;
}
static uint64_t r_abs_s32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return U32(S32(a) < 0 ? 0u - U32(a) : U32(a));
}
static uint64_t r_xor_b64(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return a ^ b;
}
static uint64_t r_not_b32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return U32(~a);
}
static uint64_t r_shl_b32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return U32(b) >= 32 ? 0 : U32(U32(a) << U32(b));
}
static uint64_t r_shr_s32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return U32(S32(a) >> (U32(b) >= 32 ? 31 : U32(b)));
}
static uint64_t r_shr_u64(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return U32(b) >= 64 ? 0 : a >> U32(b);
}
static uint64_t r_popc_b64(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return (uint64_t)__builtin_popcountll(a);
}
static uint64_t r_clz_b32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return U32(a) ? (uint64_t)__builtin_clz(U32(a)) : 32;
}
static uint64_t r_brev_b32(uint64_t a, uint64_t b, uint64_t c)
{
	uint32_t v = U32(a), r = 0;
	(void)b;
	(void)c;
	for (int i = 0; i < 32; i++)
		r |= ((v >> i) & 1u) << (31 - i);
	return r;
}
static uint64_t r_bfe_u32(uint64_t a, uint64_t b, uint64_t c)
{
	uint32_t pos = U32(b) & 0xff, len = U32(c) & 0xff;
	if (len == 0 || pos >= 32)
		return 0;
	uint64_t f = (uint64_t)U32(a) >> pos;
	return len >= 32 ? U32(f) : U32(f & ((1ull << len) - 1));
}
static uint64_t r_prmt(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t x = (uint64_t)U32(b) << 32 | U32(a);
	uint32_t r = 0;
	for (int i = 0; i < 4; i++) {
		uint32_t s = (U32(c) >> (4 * i)) & 0xf;
		uint32_t y = (uint32_t)(x >> (8 * (s & 7))) & 0xff;
		if (s & 8)
			y = y & 0x80 ? 0xff : 0;
		r |= y << (8 * i);
	}
	return r;
}
static uint64_t r_lop3(uint64_t a, uint64_t b, uint64_t c)
{
	return U32((U32(a) & U32(b)) ^ (~U32(a) & U32(c)));
}
static uint64_t r_shf_l(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t v = (uint64_t)U32(b) << 32 | U32(a);
	return U32((v << (U32(c) & 31)) >> 32);
}
static uint64_t r_setp_lt_s32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return S32(a) < S32(b);
}
static uint64_t r_setp_hs_u64(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return a >= b;
}
static uint64_t r_selp(uint64_t a, uint64_t b, uint64_t c)
{
	return U32(c) != 0 ? U32(a) : U32(b);
}
static uint64_t r_cvt_s64_s32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return (uint64_t)(int64_t)S32(a);
}
static uint64_t r_cvt_u8_u32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return U32(a) & 0xff;
}
static uint64_t r_cvt_sat_s8_s32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	int32_t v = S32(a);
	/* the s8 result is sign-extended to the 32-bit register */
	return U32((int8_t)(v < -128 ? -128 : v > 127 ? 127 : v));
}

/* float references (the host FPU's IEEE arithmetic) */
static uint64_t r_add_f32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return BF(F(a) + F(b));
}
static uint64_t r_mul_f32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return BF(F(a) * F(b));
}
static uint64_t r_fma_f32(uint64_t a, uint64_t b, uint64_t c)
{
	return BF(fmaf(F(a), F(b), F(c)));
}
static uint64_t r_div_f32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return BF(F(a) / F(b));
}
static uint64_t r_sqrt_f32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return BF(sqrtf(F(a)));
}
static uint64_t r_rcp_f32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return BF(1.0f / F(a));
}
static uint64_t r_sub_f64(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return BD(D(a) - D(b));
}
static uint64_t r_fma_f64(uint64_t a, uint64_t b, uint64_t c)
{
	return BD(fma(D(a), D(b), D(c)));
}
static uint64_t r_div_f64(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return BD(D(a) / D(b));
}
static uint64_t r_min_f32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	float x = F(a), y = F(b);
	if (isnan(x))
		return BF(y);
	if (isnan(y))
		return BF(x);
	if (x == y)
		return U32(a) | U32(b);
	return BF(x < y ? x : y);
}
static uint64_t r_abs_f32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return U32(a) & 0x7fffffffu;
}
static uint64_t r_neg_f64(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return a ^ (1ull << 63);
}
static uint64_t r_setp_ltu_f32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return isnan(F(a)) || isnan(F(b)) || F(a) < F(b);
}
static uint64_t r_setp_eq_f64(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return D(a) == D(b);
}

static uint64_t f2i(double v, int mode, bool sgn, int bits)
{
	v = mode == 0   ? nearbyint(v)
	    : mode == 1 ? trunc(v)
	    : mode == 2 ? floor(v)
	                : ceil(v);
	if (isnan(v))
		return 0;
	if (sgn) {
		double lo = -ldexp(1, bits - 1), hi = ldexp(1, bits - 1);
		int64_t r = v < lo    ? (int64_t)lo
		            : v >= hi ? (int64_t)(hi - 1)
		                      : (int64_t)v;
		if (v >= hi && bits == 64)
			r = INT64_MAX;
		return bits == 64 ? (uint64_t)r : U32(r);
	}
	if (v <= 0)
		return 0;
	if (v >= ldexp(1, bits))
		return bits == 64 ? UINT64_MAX : UINT32_MAX;
	return (uint64_t)v;
}
static uint64_t r_cvt_rni_s32_f32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return f2i(F(a), 0, true, 32);
}
static uint64_t r_cvt_rzi_u32_f32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return f2i(F(a), 1, false, 32);
}
static uint64_t r_cvt_rmi_s64_f64(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return f2i(D(a), 2, true, 64);
}
static uint64_t r_cvt_rpi_s32_f64(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return f2i(D(a), 3, true, 32);
}
static uint64_t i2f(int64_t v, int mode)
{
	int old = fegetround();
	fesetround(mode == 0   ? FE_TONEAREST
	           : mode == 1 ? FE_TOWARDZERO
	           : mode == 2 ? FE_DOWNWARD
	                       : FE_UPWARD);
	volatile int64_t x = v;
	/* volatile: the conversion must happen before the mode goes back */
	volatile float f = (float)x;
	fesetround(old);
	return BF(f);
}
static uint64_t r_cvt_rn_f32_s64(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return i2f((int64_t)a, 0);
}
static uint64_t r_cvt_rz_f32_s64(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return i2f((int64_t)a, 1);
}
static uint64_t r_cvt_rm_f32_s32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return i2f(S32(a), 2);
}
static uint64_t r_cvt_rp_f32_s64(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return i2f((int64_t)a, 3);
}
static uint64_t d2f(double v, int mode)
{
	int old = fegetround();
	fesetround(mode == 0   ? FE_TONEAREST
	           : mode == 1 ? FE_TOWARDZERO
	           : mode == 2 ? FE_DOWNWARD
	                       : FE_UPWARD);
	volatile double x = v;
	/* volatile: the conversion must happen before the mode goes back */
	volatile float f = (float)x;
	fesetround(old);
	return BF(f);
}
static uint64_t r_cvt_rn_f32_f64(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return d2f(D(a), 0);
}
static uint64_t r_cvt_rz_f32_f64(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return d2f(D(a), 1);
}
static uint64_t r_cvt_f64_f32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return BD((double)F(a));
}
static uint64_t r_cvt_rmi_f32_f32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return BF(floorf(F(a)));
}
static uint64_t r_add_rz_f32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	int old = fegetround();
	fesetround(FE_TOWARDZERO);
	volatile float x = F(a), y = F(b);
	volatile float r = x + y;
	fesetround(old);
	return BF(r);
}
/* half precision: GCC's _Float16 (correctly rounded conversions) and
 * bf16's round-to-nearest-even on the f32 bits */
static _Float16 H(uint64_t v)
{
	_Float16 h;
	uint16_t u = (uint16_t)v;
	memcpy(&h, &u, 2);
	return h;
}
static uint64_t BH(_Float16 h)
{
	uint16_t u;
	if (h != h)
		return 0x7fff; /* the GPU's canonical NaN */
	memcpy(&u, &h, 2);
	return u;
}
static uint64_t bf16_rn(float f)
{
	uint32_t u = U32(BF(f));
	if (isnan(f))
		return 0x7fff;
	u += 0x7fff + ((u >> 16) & 1);
	return u >> 16;
}
static uint64_t r_cvt_rn_f16_f32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return BH((_Float16)F(a));
}
static uint64_t r_cvt_f32_f16(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	float f = (float)H(a);
	return isnan(f) ? 0x7fffffff : BF(f);
}
static uint64_t r_cvt_rn_bf16_f32(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return bf16_rn(F(a));
}
static uint64_t r_add_f16(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return BH((_Float16)((double)H(a) + (double)H(b)));
}
static uint64_t r_mul_f16(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return BH((_Float16)((double)H(a) * (double)H(b)));
}
static uint64_t r_add_f16x2(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return r_add_f16(a, b, 0) | r_add_f16(a >> 16, b >> 16, 0) << 16;
}
static uint64_t r_mul_bf16(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	/* bf16 products are exact in f32 */
	float x = F((a & 0xffff) << 16), y = F((b & 0xffff) << 16);
	return bf16_rn(x * y);
}
static uint64_t r_setp_lt_f16(uint64_t a, uint64_t b, uint64_t c)
{
	(void)c;
	return H(a) < H(b);
}

static uint64_t r_dp4a_u32_s32(uint64_t a, uint64_t b, uint64_t c)
{
	int64_t acc = S32(c);
	for (int i = 0; i < 4; i++)
		acc +=
		    (int64_t)(uint8_t)(a >> (8 * i)) * (int8_t)(b >> (8 * i));
	return U32(acc);
}
static uint64_t r_dp2a_hi_s32_u32(uint64_t a, uint64_t b, uint64_t c)
{
	int64_t acc = S32(c);
	for (int i = 0; i < 2; i++)
		acc += (int64_t)(int16_t)(a >> (16 * i)) *
		       (uint8_t)(b >> (8 * (2 + i)));
	return U32(acc);
}

/* approximations: the exact value, compared within the bound */
static uint64_t r_ex2(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return BD(exp2((double)F(a)));
}
static uint64_t r_lg2(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return BD(log2((double)F(a)));
}
static uint64_t r_sin(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return BD(sin((double)F(a)));
}
static uint64_t r_cos(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return BD(cos((double)F(a)));
}
static uint64_t r_rsqrt(uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	return BD(1.0 / sqrt((double)F(a)));
}

static const struct form forms[] = {
    {"add.s32", "add.s32 d32, a32, b32;", R32, D_INT, r_add_s32, 0},
    {"sub.s64", "sub.s64 d64, a64, b64;", R64, D_INT, r_sub_s64, 0},
    {"mul.lo.s32", "mul.lo.s32 d32, a32, b32;", R32, D_INT, r_mul_lo_s32, 0},
    {"mul.hi.s32", "mul.hi.s32 d32, a32, b32;", R32, D_INT, r_mul_hi_s32, 0},
    {"mul.hi.u64", "mul.hi.u64 d64, a64, b64;", R64, D_INT, r_mul_hi_u64, 0},
    {"mul.wide.s32", "mul.wide.s32 d64, a32, b32;", R64, D_INT, r_mul_wide_s32,
     0},
    {"mad.lo.u32", "mad.lo.u32 d32, a32, b32, c32;", R32, D_INT, r_mad_lo_u32,
     0},
    {"div.s32", "div.s32 d32, a32, b32;", R32, D_INT, r_div_s32, -1},
    {"rem.u32", "rem.u32 d32, a32, b32;", R32, D_INT, r_rem_u32, -1},
    {"min.s32", "min.s32 d32, a32, b32;", R32, D_INT, r_min_s32, 0},
    {"max.u64", "max.u64 d64, a64, b64;", R64, D_INT, r_max_u64, 0},
    {"abs.s32", "abs.s32 d32, a32;", R32, D_INT, r_abs_s32, 0},
    {"xor.b64", "xor.b64 d64, a64, b64;", R64, D_INT, r_xor_b64, 0},
    {"not.b32", "not.b32 d32, a32;", R32, D_INT, r_not_b32, 0},
    {"shl.b32", "shl.b32 d32, a32, b32;", R32, D_SMALL, r_shl_b32, 0},
    {"shr.s32", "shr.s32 d32, a32, b32;", R32, D_SMALL, r_shr_s32, 0},
    {"shr.u64", "shr.u64 d64, a64, b32;", R64, D_SMALL, r_shr_u64, 0},
    {"popc.b64", "popc.b64 d32, a64;", R32, D_INT, r_popc_b64, 0},
    {"clz.b32", "clz.b32 d32, a32;", R32, D_INT, r_clz_b32, 0},
    {"brev.b32", "brev.b32 d32, a32;", R32, D_INT, r_brev_b32, 0},
    {"bfe.u32", "bfe.u32 d32, a32, b32, c32;", R32, D_SMALL, r_bfe_u32, 0},
    {"prmt.b32", "prmt.b32 d32, a32, b32, c32;", R32, D_INT, r_prmt, 0},
    {"lop3.b32", "lop3.b32 d32, a32, b32, c32, 0xCA;", R32, D_INT, r_lop3, 0},
    {"shf.l.wrap.b32", "shf.l.wrap.b32 d32, a32, b32, c32;", R32, D_SMALL,
     r_shf_l, 0},
    {"setp.lt.s32", "setp.lt.s32 pd, a32, b32;", RP, D_INT, r_setp_lt_s32, 0},
    {"setp.hs.u64", "setp.hs.u64 pd, a64, b64;", RP, D_INT, r_setp_hs_u64, 0},
    {"selp.b32", "selp.b32 d32, a32, b32, pc;", R32, D_INT, r_selp, 0},
    {"cvt.s64.s32", "cvt.s64.s32 d64, a32;", R64, D_INT, r_cvt_s64_s32, 0},
    {"cvt.u8.u32", "cvt.u8.u32 d32, a32;", R32, D_INT, r_cvt_u8_u32, 0},
    {"cvt.sat.s8.s32", "cvt.sat.s8.s32 d32, a32;", R32, D_INT, r_cvt_sat_s8_s32,
     0},
    {"add.f32", "add.f32 df, af, bf;", RF, D_F32, r_add_f32, 0},
    {"add.rz.f32", "add.rz.f32 df, af, bf;", RF, D_F32, r_add_rz_f32, 0},
    {"mul.rn.f32", "mul.rn.f32 df, af, bf;", RF, D_F32, r_mul_f32, 0},
    {"fma.rn.f32", "fma.rn.f32 df, af, bf, cf;", RF, D_F32, r_fma_f32, 0},
    {"div.rn.f32", "div.rn.f32 df, af, bf;", RF, D_F32, r_div_f32, 0},
    {"sqrt.rn.f32", "sqrt.rn.f32 df, af;", RF, D_F32, r_sqrt_f32, 0},
    {"rcp.rn.f32", "rcp.rn.f32 df, af;", RF, D_F32, r_rcp_f32, 0},
    {"min.f32", "min.f32 df, af, bf;", RF, D_F32, r_min_f32, 0},
    {"abs.f32", "abs.f32 df, af;", RF, D_F32, r_abs_f32, 0},
    {"sub.f64", "sub.f64 dd, ad, bd;", RD, D_F64, r_sub_f64, 0},
    {"fma.rn.f64", "fma.rn.f64 dd, ad, bd, cd;", RD, D_F64, r_fma_f64, 0},
    {"div.rn.f64", "div.rn.f64 dd, ad, bd;", RD, D_F64, r_div_f64, 0},
    {"neg.f64", "neg.f64 dd, ad;", RD, D_F64, r_neg_f64, 0},
    {"setp.ltu.f32", "setp.ltu.f32 pd, af, bf;", RP, D_F32, r_setp_ltu_f32, 0},
    {"setp.eq.f64", "setp.eq.f64 pd, ad, bd;", RP, D_F64, r_setp_eq_f64, 0},
    {"cvt.rni.s32.f32", "cvt.rni.s32.f32 d32, af;", R32, D_F32,
     r_cvt_rni_s32_f32, 0},
    {"cvt.rzi.u32.f32", "cvt.rzi.u32.f32 d32, af;", R32, D_F32,
     r_cvt_rzi_u32_f32, 0},
    {"cvt.rmi.s64.f64", "cvt.rmi.s64.f64 d64, ad;", R64, D_F64,
     r_cvt_rmi_s64_f64, 0},
    {"cvt.rpi.s32.f64", "cvt.rpi.s32.f64 d32, ad;", R32, D_F64,
     r_cvt_rpi_s32_f64, 0},
    {"cvt.rn.f32.s64", "cvt.rn.f32.s64 df, a64;", RF, D_INT, r_cvt_rn_f32_s64,
     0},
    {"cvt.rz.f32.s64", "cvt.rz.f32.s64 df, a64;", RF, D_INT, r_cvt_rz_f32_s64,
     0},
    {"cvt.rm.f32.s32", "cvt.rm.f32.s32 df, a32;", RF, D_INT, r_cvt_rm_f32_s32,
     0},
    {"cvt.rp.f32.s64", "cvt.rp.f32.s64 df, a64;", RF, D_INT, r_cvt_rp_f32_s64,
     0},
    {"cvt.rn.f32.f64", "cvt.rn.f32.f64 df, ad;", RF, D_F64, r_cvt_rn_f32_f64,
     0},
    {"cvt.rz.f32.f64", "cvt.rz.f32.f64 df, ad;", RF, D_F64, r_cvt_rz_f32_f64,
     0},
    {"cvt.f64.f32", "cvt.f64.f32 dd, af;", RD, D_F32, r_cvt_f64_f32, 0},
    {"cvt.rmi.f32.f32", "cvt.rmi.f32.f32 df, af;", RF, D_F32, r_cvt_rmi_f32_f32,
     0},
    {"dp4a.u32.s32", "dp4a.u32.s32 d32, a32, b32, c32;", R32, D_INT,
     r_dp4a_u32_s32, 0},
    {"dp2a.hi.s32.u32", "dp2a.hi.s32.u32 d32, a32, b32, c32;", R32, D_INT,
     r_dp2a_hi_s32_u32, 0},
    {"cvt.rn.f16.f32", "cvt.rn.f16.f32 dh, af;", RH, D_F32, r_cvt_rn_f16_f32,
     0},
    {"cvt.f32.f16", "cvt.f32.f16 df, ah;", RF, D_HALF, r_cvt_f32_f16, 0},
    {"cvt.rn.bf16.f32", "cvt.rn.bf16.f32 dh, af;", RH, D_F32, r_cvt_rn_bf16_f32,
     0},
    {"add.f16", "add.f16 dh, ah, bh;", RH, D_HALF, r_add_f16, 0},
    {"mul.rn.f16", "mul.rn.f16 dh, ah, bh;", RH, D_HALF, r_mul_f16, 0},
    {"add.f16x2", "add.f16x2 d32, a32, b32;", R32, D_HALF, r_add_f16x2, 0},
    {"mul.rn.bf16", "mul.rn.bf16 dh, ah, bh;", RH, D_HALF, r_mul_bf16, 0},
    {"setp.lt.f16", "setp.lt.f16 pd, ah, bh;", RP, D_HALF, r_setp_lt_f16, 0},
    /* PTX ISA 9.0 error bounds of the approximations */
    {"ex2.approx.f32", "ex2.approx.f32 df, af;", RF, D_SMALL, r_ex2, 0x1p-22},
    {"lg2.approx.f32", "lg2.approx.f32 df, af;", RF, D_SMALL, r_lg2, 0x1p-22},
    {"sin.approx.f32", "sin.approx.f32 df, af;", RF, D_ANGLE, r_sin, 0x1p-20},
    {"cos.approx.f32", "cos.approx.f32 df, af;", RF, D_ANGLE, r_cos, 0x1p-20},
    {"rsqrt.approx.f32", "rsqrt.approx.f32 df, af;", RF, D_SMALL, r_rsqrt,
     0x1p-22},
};

static const char *kernel_fmt =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry fz(.param .u64 pin, .param .u64 pout, .param .u32 pn)\n"
    "{\n"
    "\t.reg .pred %%p<3>;\n\t.reg .pred pc, pd;\n"
    "\t.reg .b32 %%r<8>;\n\t.reg .b64 %%rd<12>;\n"
    "\t.reg .b32 a32, b32, c32, d32;\n\t.reg .b64 a64, b64, c64, d64;\n"
    "\t.reg .f32 af, bf, cf, df;\n\t.reg .f64 ad, bd, cd, dd;\n"
    "\t.reg .b16 ah, bh, ch, dh;\n"
    "\tld.param.u64 %%rd1, [pin];\n\tld.param.u64 %%rd2, [pout];\n"
    "\tld.param.u32 %%r1, [pn];\n"
    "\tmov.u32 %%r2, %%ctaid.x;\n\tmov.u32 %%r3, %%ntid.x;\n"
    "\tmov.u32 %%r4, %%tid.x;\n\tmad.lo.s32 %%r5, %%r2, %%r3, %%r4;\n"
    "\tsetp.ge.u32 %%p1, %%r5, %%r1;\n\t@%%p1 bra $Ldone;\n"
    "\tmul.wide.u32 %%rd3, %%r5, 24;\n\tadd.s64 %%rd4, %%rd1, %%rd3;\n"
    "\tld.global.v2.u64 {a64, b64}, [%%rd4];\n"
    "\tld.global.u64 c64, [%%rd4+16];\n"
    "\tcvt.u32.u64 a32, a64;\n\tcvt.u32.u64 b32, b64;\n"
    "\tcvt.u32.u64 c32, c64;\n"
    "\tmov.b32 af, a32;\n\tmov.b32 bf, b32;\n\tmov.b32 cf, c32;\n"
    "\tmov.b64 ad, a64;\n\tmov.b64 bd, b64;\n\tmov.b64 cd, c64;\n"
    "\tsetp.ne.b32 pc, c32, 0;\n"
    "\tmov.b64 d64, 0;\n"
    "\tcvt.u16.u32 ah, a32;\n\tcvt.u16.u32 bh, b32;\n"
    "\tcvt.u16.u32 ch, c32;\n"
    "\t%s\n"
    "%s"
    "\tmul.wide.u32 %%rd5, %%r5, 8;\n\tadd.s64 %%rd6, %%rd2, %%rd5;\n"
    "\tst.global.u64 [%%rd6], %%rd7;\n"
    "$Ldone:\n\tret;\n}\n";

static const char *store_of(enum res r)
{
	switch (r) {
	case R32:
		return "\tcvt.u64.u32 %rd7, d32;\n";
	case R64:
		return "\tmov.b64 %rd7, d64;\n";
	case RF:
		return "\tmov.b32 %r6, df;\n\tcvt.u64.u32 %rd7, %r6;\n";
	case RD:
		return "\tmov.b64 %rd7, dd;\n";
	case RH:
		return "\tcvt.u32.u16 %r6, dh;\n\tcvt.u64.u32 %rd7, %r6;\n";
	default:
		return "\tselp.u64 %rd7, 1, 0, pd;\n";
	}
}

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t operand(enum dom d, int which)
{
	static const uint32_t f32s[] = {
	    0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x7f800000,
	    0xff800000, 0x7fc00000, 0x00000001, 0x807fffff, 0x7f7fffff,
	    0x3f000000, 0x4b800001, 0x4f000000, 0xcf000000, 0x3fc00000,
	    0x40200000, 0xbfc00000, 0x5f000000, 0x00800000, 0x4f800000};
	static const uint64_t f64s[] = {0,
	                                1ull << 63,
	                                0x3ff0000000000000ull,
	                                0x7ff0000000000000ull,
	                                0xfff0000000000000ull,
	                                0x7ff8000000000000ull,
	                                1,
	                                0x000fffffffffffffull,
	                                0x7fefffffffffffffull,
	                                0x3fe0000000000000ull,
	                                0x41e0000000000000ull,
	                                0xc1e0000000200000ull,
	                                0x43e0000000000000ull,
	                                0x3ff8000000000000ull,
	                                0x36a0000000000000ull};
	static const uint64_t ints[] = {0,
	                                1,
	                                0xffffffffull,
	                                0x80000000ull,
	                                0x7fffffffull,
	                                ~0ull,
	                                1ull << 63,
	                                0x7fffffffffffffffull,
	                                0xff,
	                                0x80,
	                                0x100000000ull};
	uint64_t r = next();

	(void)which;
	switch (d) {
	case D_F32:
		if (r % 3 == 0)
			return f32s[(r >> 8) % (sizeof(f32s) / 4)];
		if (r % 3 == 1) /* a float of modest size */
			return BF((float)((int64_t)(r >> 20) % 2000000) /
			          1024.0f);
		return r & 0xffffffffu;
	case D_F64:
		if (r % 3 == 0)
			return f64s[(r >> 8) % (sizeof(f64s) / 8)];
		if (r % 3 == 1)
			return BD((double)((int64_t)(r >> 12) % 4000000000ll) /
			          3.0);
		return r;
	case D_SMALL:
		if (which == 0) /* a modest float, or bits */
			return (r & 3) ? BF((float)((r >> 8) % 20000) / 313.0f -
			                    30.0f)
			               : (r >> 16);
		return (r >> 8) % 72; /* shift counts and field positions */
	case D_ANGLE:
		return BF((float)((int64_t)(r >> 8) % 31416) / 10000.0f);
	case D_HALF: { /* two halves: edge values or any bits */
		static const uint16_t hs[] = {0x0000, 0x8000, 0x3c00, 0xbc00,
		                              0x7c00, 0xfc00, 0x7e00, 0x0001,
		                              0x03ff, 0x7bff, 0x3555, 0x7f80,
		                              0xff80, 0x7fc0, 0x0080, 0x3f80};
		uint64_t lo =
		    (r & 7) == 0 ? hs[(r >> 8) % 16] : (r >> 16) & 0xffff;
		uint64_t hi =
		    (r & 0x70) == 0 ? hs[(r >> 12) % 16] : (r >> 32) & 0xffff;
		return lo | hi << 16;
	}
	default:
		if (r % 4 == 0)
			return ints[(r >> 8) % (sizeof(ints) / 8)];
		return r;
	}
}

static bool same(const struct form *f, uint64_t got, uint64_t want, uint64_t a)
{
	if (f->tol < 0) /* undefined results are not compared */
		return true;
	if (f->tol > 0) {
		double w = D(want), g = F(got);
		if (f->dom == D_SMALL && f->ref == r_lg2 && !(F(a) > 0))
			return true; /* outside the stated domain */
		if (f->ref == r_ex2 && (w > 1e30 || w < 1e-30))
			return true;
		if (f->ref == r_rsqrt && !(F(a) > 1e-30f && F(a) < 1e30f))
			return true;
		if (isnan(w))
			return isnan(g);
		if (f->dom == D_ANGLE || f->ref == r_lg2)
			return fabs(g - w) <= f->tol + fabs(w) * 0x1p-22;
		return fabs(g - w) <= fabs(w) * f->tol;
	}
	/* f32 NaNs are the GPU's canonical 0x7fffffff (want is made so) */
	if (f->res == RD && isnan(D(got)) && isnan(D(want)))
		return true;
	if (f->res == R32 || f->res == RF)
		return U32(got) == U32(want);
	return got == want;
}

#define CK(x)                                                                  \
	do {                                                                   \
		CUresult r_ = (x);                                             \
		if (r_ != CUDA_SUCCESS) {                                      \
			const char *s_ = "?";                                  \
			cuGetErrorName(r_, &s_);                               \
			printf("FAIL %s: %s (%s)\n", #x, s_, f->name);         \
			exit(1);                                               \
		}                                                              \
	} while (0)

int main(int argc, char **argv)
{
	unsigned n = argc > 2 ? (unsigned)atoi(argv[2]) : 4096;
	size_t nf = sizeof(forms) / sizeof(forms[0]);
	uint64_t *in = malloc(n * 24), *out = malloc(n * 8);
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr din, dout;
	const struct form *f = &forms[0];
	int bad = 0;
	char ptx[8192];

	if (argc > 1)
		rng ^= strtoull(argv[1], NULL, 0) * 0x9E3779B97F4A7C15ull;
	if (in == NULL || out == NULL)
		return 1;
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	CK(cuMemAlloc(&din, n * 24));
	CK(cuMemAlloc(&dout, n * 8));
	for (size_t i = 0; i < nf; i++) {
		CUmodule mod;
		CUfunction fn;
		void *args[] = {&din, &dout, &n};
		int wrong = 0;

		f = &forms[i];
		snprintf(ptx, sizeof(ptx), kernel_fmt, f->ins,
		         store_of(f->res));
		for (unsigned t = 0; t < n; t++)
			for (int k = 0; k < 3; k++)
				in[t * 3 + k] = operand(f->dom, k);
		CK(cuMemcpyHtoD(din, in, n * 24));
		CK(cuModuleLoadData(&mod, ptx));
		CK(cuModuleGetFunction(&fn, mod, "fz"));
		CK(cuLaunchKernel(fn, (n + 127) / 128, 1, 1, 128, 1, 1, 0, NULL,
		                  args, NULL));
		CK(cuMemcpyDtoH(out, dout, n * 8));
		for (unsigned t = 0; t < n; t++) {
			uint64_t a = in[t * 3], b = in[t * 3 + 1],
			         c = in[t * 3 + 2];
			uint64_t want = f->ref(a, b, c);
			/* arithmetic gives the canonical NaN; abs and
			 * neg only touch the sign bit */
			if (f->res == RF && f->tol == 0 && isnan(F(want)) &&
			    f->ref != r_abs_f32)
				want = 0x7fffffff;
			if (!same(f, out[t], want, a)) {
				if (wrong++ < 3)
					printf("FAIL %s: a=%#" PRIx64
					       " b=%#" PRIx64 " c=%#" PRIx64
					       ": got %#" PRIx64
					       ", want %#" PRIx64 "\n",
					       f->name, a, b, c, out[t], want);
			}
		}
		CK(cuModuleUnload(mod));
		if (wrong == 0)
			printf("ok %s\n", f->name);
		else
			bad++;
	}
	if (bad) {
		printf("%d of %zu forms failed\n", bad, nf);
		return 1;
	}
	printf("all ok: %zu forms x %u threads\n", nf, n);
	return 0;
}
