/*
 * quantity.c - exact Kubernetes quantities (quantity.h).
 *
 * The digits are read into one integer mantissa; the decimal point and the
 * suffix only move exponents. Trailing zeros are kept out of the mantissa
 * (as a pending exponent) so "1.000000000000000000000Gi" still reads. The
 * conversion to an integer works in unsigned 128-bit arithmetic with a cap
 * far above INT64_MAX, so every overflow is detected rather than wrapped.
 */
#include "quantity.h"

#include <string.h>

#define MANTISSA_LIMIT 1000000000000000000ULL /* 10^18 */
#define EXP_LIMIT      400

__extension__ typedef unsigned __int128 u128;

static bool parse_suffix(const char *s, int *exp10, int *exp2)
{
	static const struct {
		const char *name;
		int exp10, exp2;
	} tab[] = {
	    {"", 0, 0},    {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30},
	    {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60}, {"n", -9, 0},
	    {"u", -6, 0},  {"m", -3, 0},  {"k", 3, 0},   {"M", 6, 0},
	    {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},
	};

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		if (strcmp(s, tab[i].name) == 0) {
			*exp10 = tab[i].exp10;
			*exp2 = tab[i].exp2;
			return true;
		}
	}
	/* decimalExponent: e|E [sign] digits */
	if (s[0] == 'e' || s[0] == 'E') {
		const char *p = s + 1;
		bool neg = false;
		int v = 0;

		if (*p == '+' || *p == '-')
			neg = *p++ == '-';
		if (*p == '\0')
			return false;
		for (; *p; p++) {
			if (*p < '0' || *p > '9')
				return false;
			v = v * 10 + (*p - '0');
			if (v > EXP_LIMIT)
				return false;
		}
		*exp10 = neg ? -v : v;
		*exp2 = 0;
		return true;
	}
	return false;
}

gs_err gs_kquantity_parse(const char *text, struct gs_kquantity *q,
                          struct gs_errbuf *eb)
{
	const char *p = text;
	uint64_t m = 0;
	int pending = 0, frac = 0, ndigits = 0, sexp10, sexp2;
	bool neg = false, in_frac = false;

	if (text == NULL || text[0] == '\0')
		return gs_fail(eb, GS_ERR_PARSE, "empty quantity");
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	for (; (*p >= '0' && *p <= '9') || (*p == '.' && !in_frac); p++) {
		if (*p == '.') {
			in_frac = true;
			continue;
		}
		ndigits++;
		if (in_frac)
			frac++;
		if (*p == '0') {
			pending++;
			continue;
		}
		for (int i = 0; i <= pending; i++) {
			if (m >= MANTISSA_LIMIT / 10)
				return gs_fail(eb, GS_ERR_RANGE,
				               "quantity '%s' has more than 18 significant digits",
				               text);
			m *= 10;
		}
		m += (uint64_t)(*p - '0');
		pending = 0;
	}
	if (ndigits == 0)
		return gs_fail(eb, GS_ERR_PARSE,
		               "quantity '%s' has no digits (want e.g. 8Gi, 500M, 25, 0.5)",
		               text);
	if (!parse_suffix(p, &sexp10, &sexp2))
		return gs_fail(eb, GS_ERR_PARSE,
		               "quantity '%s' has an unknown suffix '%s' (want Ki..Ei, n, u, m, k, M..E or an exponent)",
		               text, p);
	q->negative = neg && m != 0;
	q->mantissa = m;
	q->exp10 = pending - frac + sexp10;
	q->exp2 = sexp2;
	if (m == 0)
		q->exp10 = 0;
	return GS_OK;
}

/*
 * |q| * scale as num / den with den = 10^k. OUT: *num, *den. False when
 * the numerator would pass the cap (the value is then far beyond int64).
 */
static bool as_fraction(const struct gs_kquantity *q, int64_t scale, u128 *num,
                        u128 *den, bool *den_huge)
{
	const u128 cap = (u128)1 << 125;
	u128 n = (u128)q->mantissa;
	int e = q->exp10;

	*den_huge = false;
	if (scale < 0)
		return false;
	if (n != 0 && (u128)scale > cap / n)
		return false;
	n *= (u128)scale;
	for (int i = 0; i < q->exp2; i++) {
		if (n > cap / 2)
			return false;
		n *= 2;
	}
	/* Take common factors of ten out before building the denominator. */
	while (e < 0 && n != 0 && n % 10 == 0) {
		n /= 10;
		e++;
	}
	*den = 1;
	for (; e > 0 && n != 0; e--) {
		if (n > cap / 10)
			return false;
		n *= 10;
	}
	for (; e < 0; e++) {
		if (*den > cap / 10) {
			*den_huge = true; /* n < cap < den: 0 < value < 1 */
			break;
		}
		*den *= 10;
	}
	*num = n;
	return true;
}

gs_err gs_kquantity_scaled(const struct gs_kquantity *q, int64_t scale,
                           int64_t *out, struct gs_errbuf *eb)
{
	u128 num, den, v;
	bool huge;

	if (!as_fraction(q, scale, &num, &den, &huge))
		return gs_fail(eb, GS_ERR_RANGE, "quantity is too large");
	if (huge) {
		v = num != 0 && !q->negative ? 1 : 0;
	} else if (q->negative) {
		v = num / den; /* rounding up a negative value: toward zero */
	} else {
		v = num / den + (num % den != 0);
	}
	if (v > (u128)INT64_MAX)
		return gs_fail(eb, GS_ERR_RANGE, "quantity is too large");
	*out = q->negative ? -(int64_t)v : (int64_t)v;
	return GS_OK;
}

bool gs_kquantity_is_whole(const struct gs_kquantity *q, int64_t scale)
{
	u128 num, den;
	bool huge;

	if (!as_fraction(q, scale, &num, &den, &huge))
		return true; /* too large to have a fraction that matters */
	if (huge)
		return num == 0;
	return num % den == 0;
}

gs_err gs_kquantity_parse_uint(const char *text, const char *what,
                               uint64_t *out, struct gs_errbuf *eb)
{
	struct gs_kquantity q;
	struct gs_errbuf e = {0};
	int64_t v;
	gs_err err;

	err = gs_kquantity_parse(text, &q, &e);
	if (err != GS_OK)
		return gs_fail(eb, err, "%s: %s", what, e.msg);
	if (q.negative)
		return gs_fail(eb, GS_ERR_RANGE, "%s: '%s' is negative", what,
		               text);
	if (!gs_kquantity_is_whole(&q, 1))
		return gs_fail(eb, GS_ERR_RANGE,
		               "%s: '%s' is not a whole number", what, text);
	err = gs_kquantity_scaled(&q, 1, &v, &e);
	if (err != GS_OK)
		return gs_fail(eb, err, "%s: '%s': %s", what, text, e.msg);
	*out = (uint64_t)v;
	return GS_OK;
}
