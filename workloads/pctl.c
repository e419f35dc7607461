/*
 * pctl.c - nearest-rank percentiles (see pctl.h for the definition).
 */
#include "pctl.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void gs_pctl_sort(double *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_double);
}

double gs_pctl_of_sorted(const double *sorted, size_t n, double p)
{
	double rank;
	size_t idx;

	if (n == 0 || !(p >= 0.0 && p <= 100.0))
		return NAN;
	/* ceil(p/100 * n) computed as p * n / 100 so that p = 90, n = 10
	 * gives exactly 9 rather than 9.000000000000002 -> 10. */
	rank = ceil(p * (double)n / 100.0);
	idx = rank < 1.0 ? 0 : (size_t)rank - 1;
	if (idx >= n)
		idx = n - 1;
	return sorted[idx];
}

double gs_pctl_mean(const double *v, size_t n)
{
	double sum = 0.0;
	size_t i;

	if (n == 0)
		return NAN;
	for (i = 0; i < n; i++)
		sum += v[i];
	return sum / (double)n;
}
