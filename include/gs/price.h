/*
 * price.h - the chargeback price table and the cost of a usage record.
 *
 * A table is a list of rules. Each rule names a GPU model and a slice mode
 * (both may be glob patterns: "*", "H100*", "mig*") and two prices: per
 * GPU-second of measured GPU time and per GiB-second of reserved GPU
 * memory. A usage record is priced by the most specific rule that matches
 * it: the rule whose model pattern has the most literal (non-wildcard)
 * characters, then the one whose mode pattern has the most, then the one
 * added last. So "H100-SXM5-80GB mig" beats "H100* mig", which beats
 * "H100* *", which beats the default "* *".
 *
 * The table is a plain value (fixed-size arrays, no pointers), safe to
 * copy with `=`; nothing here allocates or keeps state. Prices are in the
 * caller's currency unit, as doubles; costs are not rounded here.
 *
 * Text form (gs_price_table_parse), one rule per line, '#' starts a
 * comment:
 *
 *     # model           mode       per GPU-second  per GiB-second
 *     *                 *          0.0008          0.00001
 *     H100*             *          3.20/h          0.012/h
 *     A100-SXM4-40GB    mig*       0.0004          0.000005
 *
 * A price may end in "/s" (the default), "/m" or "/h" (per minute, per
 * hour). A model without wildcards is canonicalised through the GPU
 * catalog when the catalog knows it ("h100" -> "H100-SXM5-80GB").
 */
#ifndef GS_PRICE_H
#define GS_PRICE_H

#include <stddef.h>

#include "gs/err.h"
#include "gs/spec.h"

#define GS_PRICE_MAX_RULES   64
#define GS_PRICE_PATTERN_MAX 64 /* NUL included */

struct gs_price_rule {
	char model[GS_PRICE_PATTERN_MAX];
	char mode[GS_PRICE_PATTERN_MAX];
	double per_gpu_second;
	double per_gib_second;
};

struct gs_price_table {
	int n;
	struct gs_price_rule rule[GS_PRICE_MAX_RULES];
};

/* An empty table (no default: unmatched records are an error). */
void gs_price_table_init(struct gs_price_table *t);

/*
 * Adds a rule (model and mode patterns, case-insensitive; NULL or "" mean
 * "*"). GS_ERR_RANGE for a negative or non-finite price or a full table,
 * GS_ERR_INVALID for a pattern that is too long or a mode pattern that
 * matches no mode name. On error the table is unchanged.
 */
gs_err gs_price_table_add(struct gs_price_table *t, const char *model,
                          const char *mode, double per_gpu_second,
                          double per_gib_second, struct gs_errbuf *eb);

/*
 * Adds the rules of `text` (the form above). Errors carry the line:
 * "line 3: price '-1' must be a number >= 0". On error the table keeps
 * the rules of the lines before the failing one.
 */
gs_err gs_price_table_parse(struct gs_price_table *t, const char *text,
                            struct gs_errbuf *eb);

/*
 * The rule that prices (model, mode), or NULL when none matches. `model`
 * is a model name as the catalog spells it.
 */
const struct gs_price_rule *gs_price_lookup(const struct gs_price_table *t,
                                            const char *model,
                                            enum gs_slice_mode mode);

/* What a slice used over some period. */
struct gs_usage_record {
	const char *model; /* GPU model (canonical name) */
	enum gs_slice_mode mode;
	double gpu_seconds; /* measured GPU time, whole-GPU seconds */
	double gib_seconds; /* reserved memory (GiB) x wall seconds */
};

/*
 * The cost of a record. OUT: *cost, and *rule (may be NULL) = the rule
 * used. GS_ERR_NOT_FOUND when no rule matches ("no price for
 * H100-SXM5-80GB in mode mps"), GS_ERR_RANGE for negative or non-finite
 * amounts; *cost is 0 then.
 */
gs_err gs_price_cost(const struct gs_price_table *t,
                     const struct gs_usage_record *rec, double *cost,
                     const struct gs_price_rule **rule, struct gs_errbuf *eb);

#endif
