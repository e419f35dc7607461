/*
 * quantity.h - Kubernetes resource quantities ("8Gi", "500M", "25", "0.5",
 * "1e3", "100m"), parsed exactly: no floating point anywhere, so "8Gi" is
 * 8589934592 to the byte and "0.1" * 1000 is 100, not 99.99.
 *
 * Grammar (as the API server writes and accepts it):
 *   quantity  = [sign] digits [ "." [digits] ] [suffix]  |  [sign] "." digits
 * [suffix] suffix    = binarySI  Ki Mi Gi Ti Pi Ei | decimalSI n u m "" k M G T
 * P E | decimalExponent  (e|E) [sign] digits A parsed quantity is sign *
 * mantissa * 10^exp10 * 2^exp2 with a mantissa of at most 18 significant digits
 * (more is GS_ERR_RANGE, never rounded silently).
 *
 * Pure: no I/O, no allocation. Errors name the text and what is wrong.
 */
#ifndef GS_KUBE_QUANTITY_H
#define GS_KUBE_QUANTITY_H

#include <stdbool.h>
#include <stdint.h>

#include "gs/err.h"

struct gs_kquantity {
	bool negative;
	uint64_t mantissa; /* < 10^18 */
	int exp10;
	int exp2; /* 0, 10, 20, ... 60 */
};

/* Parses `text`. OUT: *q. GS_ERR_PARSE / GS_ERR_RANGE with a message. */
gs_err gs_kquantity_parse(const char *text, struct gs_kquantity *q,
                          struct gs_errbuf *eb);

/*
 * The value as an integer, rounded up (away from zero for positive
 * values, as Kubernetes' Value() does), after multiplying by `scale`
 * (1 for Value(), 1000 for MilliValue()). OUT: *out. GS_ERR_RANGE when it
 * does not fit in an int64.
 */
gs_err gs_kquantity_scaled(const struct gs_kquantity *q, int64_t scale,
                           int64_t *out, struct gs_errbuf *eb);

/* Whether q * scale is a whole number (no rounding needed). */
bool gs_kquantity_is_whole(const struct gs_kquantity *q, int64_t scale);

/*
 * Convenience: parse + exact non-negative integer (bytes, percent, counts).
 * `what` names the field in error messages ("consumedCapacity.memory").
 * GS_ERR_RANGE for negative or fractional values.
 */
gs_err gs_kquantity_parse_uint(const char *text, const char *what,
                               uint64_t *out, struct gs_errbuf *eb);

#endif
