/*
 * pctl.h - exact percentiles over a complete set of latency samples.
 *
 * gs-infer keeps every request's latency and reports percentiles computed
 * from all of them, not from a histogram or a sketch, so the figures can be
 * checked by hand against the raw samples. The definition is nearest rank:
 * the p-th percentile of n sorted samples is the smallest sample such that
 * at least p% of the samples are less than or equal to it, i.e. the value
 * at 1-based rank ceil(p/100 * n) (rank 1 for p = 0). It is always one of
 * the samples, never an interpolation.
 */
#ifndef GS_WORKLOADS_PCTL_H
#define GS_WORKLOADS_PCTL_H

#include <stddef.h>

/* Sorts v[0..n) ascending in place. NaNs are not allowed. */
void gs_pctl_sort(double *v, size_t n);

/*
 * The p-th percentile (0 <= p <= 100) of sorted[0..n) by nearest rank.
 * Returns NAN when n is 0 or p is outside [0, 100].
 */
double gs_pctl_of_sorted(const double *sorted, size_t n, double p);

/* The arithmetic mean of v[0..n), NAN when n is 0. */
double gs_pctl_mean(const double *v, size_t n);

#endif
