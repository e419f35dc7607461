/*
 * trace_family.h - the variant family of `gpuslice bench trace --family`:
 * a fixed, seeded set of task-list variants that spans how GPU-model
 * constraints and gangs fall in real lists (docs/placement.md, "A family
 * of variants"), split once into a tuning and a reporting part, and the
 * runner that replays every variant with FGD, gpuslice and the other
 * policies and reports, per variant and arrival level, gpuslice's margin
 * to FGD (mean and worst seed) and to the best baseline, and the family's
 * worst case. trace_family.c holds the definition and the runner,
 * trace_family_report.c the text and JSON.
 */
#ifndef GS_TRACE_FAMILY_H
#define GS_TRACE_FAMILY_H

#include "trace_bench.h"

#define GS_TRACE_FAMILY_SEED 2026 /* draws every variant's parameters */
#define GS_TRACE_FAMILY_SIZE 40   /* variants 0..39 */
#define GS_TRACE_FAMILY_TUNE 16   /* 0..15 tuning, 16..39 reporting */
#define GS_TRACE_FAMILY_LEVELS 5  /* arrival 90, 100, 110, 120, 130 */

enum gs_trace_family_part {
	GS_TRACE_FAMILY_TUNING,
	GS_TRACE_FAMILY_REPORTING,
	GS_TRACE_FAMILY_ALL,
};

/* Variant `i` (< GS_TRACE_FAMILY_SIZE) of the family, into *cfg. */
void gs_trace_family_variant(unsigned i, struct gs_trace_variant_cfg *cfg);
/* Its name, "v17:scarce/c23/k3/g10L" (law, constrained %, models, gang %
 * and mix L/S/B for the list's, small, big). */
void gs_trace_family_name(unsigned i, const struct gs_trace_variant_cfg *cfg,
                          char *buf, size_t cap);

/* One variant's figures at one arrival level (NaN where not reached). */
struct gs_trace_family_level {
	double fgd, gsl;     /* unallocated %, mean over seeds */
	double base;         /* the best baseline's mean (FGD included) */
	int base_policy;     /* which; -1 when only FGD and gpuslice ran */
	double delta;        /* gsl - fgd, mean over seeds */
	double delta_worst;  /* the largest gsl - fgd of one seed */
};

struct gs_trace_family_row {
	unsigned index;
	struct gs_trace_variant_cfg cfg;
	char name[64];
	int scarce;            /* the scarce model (SCARCE law), or -1 */
	double constrained;    /* % of GPU tasks with a model restriction */
	double on_scarce;      /* % of those that accept the scarce model */
	struct gs_trace_family_level lv[GS_TRACE_FAMILY_LEVELS];
};

/*
 * A family run. The caller zeroes it, sets `base` (a loaded benchmark
 * without variant: lists, policies, seeds, tune, jobs, ablate, eps) and
 * the range lo..hi of variants; gs_trace_family_run() fills `row` (owned;
 * gs_trace_family_fini frees it). FGD and gpuslice must be among the
 * policies.
 */
struct gs_trace_family {
	const struct gs_trace_bench *base;
	unsigned lo, hi;
	struct gs_trace_family_row *row;
	size_t n;
};

/* The arrival level of index k (0..GS_TRACE_FAMILY_LEVELS-1). */
int gs_trace_family_level(size_t k);
/* The default range and replay seeds of a part. */
void gs_trace_family_part_range(enum gs_trace_family_part part, unsigned *lo,
                                unsigned *hi);
void gs_trace_family_part_seeds(enum gs_trace_family_part part,
                                uint64_t *lo, uint64_t *hi);
/* Replays every variant lo..hi; fails with the first run's error. */
gs_err gs_trace_family_run(struct gs_trace_family *f, struct gs_errbuf *eb);
void gs_trace_family_fini(struct gs_trace_family *f);

/* trace_family_report.c: the table and the worst-case lines on stdout. */
void gs_trace_family_print_text(const struct gs_trace_family *f);
gs_err gs_trace_family_print_json(const struct gs_trace_family *f,
                                  struct gs_errbuf *eb);

#endif
