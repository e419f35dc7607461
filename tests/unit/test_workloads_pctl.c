/* test_workloads_pctl.c - exact nearest-rank percentiles, checked against
 * hand-worked tables and against a naive reference (count the samples). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>

#include "pctl.h"

static void percentiles_of_one_to_ten_follow_nearest_rank(void **state)
{
	double v[] = {7, 3, 10, 1, 9, 2, 8, 5, 4, 6};
	static const struct {
		double p, want;
	} t[] = {
	    {0, 1},  {1, 1},  {10, 1},    {10.5, 2}, {50, 5},
	    {51, 6}, {90, 9}, {90.1, 10}, {99, 10},  {100, 10},
	};
	size_t i;

	(void)state;
	gs_pctl_sort(v, 10);
	for (i = 0; i < 10; i++)
		assert_float_equal(v[i], (double)(i + 1), 0);
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		assert_float_equal(gs_pctl_of_sorted(v, 10, t[i].p), t[i].want,
		                   0);
}

static void percentile_of_one_sample_is_that_sample(void **state)
{
	double v[] = {4.25};

	(void)state;
	assert_float_equal(gs_pctl_of_sorted(v, 1, 0), 4.25, 0);
	assert_float_equal(gs_pctl_of_sorted(v, 1, 50), 4.25, 0);
	assert_float_equal(gs_pctl_of_sorted(v, 1, 99), 4.25, 0);
	assert_float_equal(gs_pctl_mean(v, 1), 4.25, 0);
}

static void empty_or_out_of_range_gives_nan(void **state)
{
	double v[] = {1, 2};

	(void)state;
	assert_true(isnan(gs_pctl_of_sorted(v, 0, 50)));
	assert_true(isnan(gs_pctl_of_sorted(v, 2, -1)));
	assert_true(isnan(gs_pctl_of_sorted(v, 2, 100.5)));
	assert_true(isnan(gs_pctl_of_sorted(v, 2, NAN)));
	assert_true(isnan(gs_pctl_mean(v, 0)));
}

/* The definition, naively: the smallest sample x with
 * count(samples <= x) >= p/100 * n. */
static double reference(const double *v, size_t n, double p)
{
	double best = INFINITY;
	size_t i, j;

	for (i = 0; i < n; i++) {
		size_t le = 0;

		for (j = 0; j < n; j++)
			le += v[j] <= v[i];
		if ((double)le * 100.0 >= p * (double)n && v[i] < best)
			best = v[i];
	}
	return best;
}

static void percentiles_match_naive_reference_on_random_samples(void **state)
{
	static const double ps[] = {0.5, 1, 25, 50, 75, 90, 95, 99, 99.9, 100};
	unsigned seed = 12345;
	int round;

	(void)state;
	for (round = 0; round < 50; round++) {
		size_t n = 1 + (size_t)(rand_r(&seed) % 300), i, k;
		double *v = malloc(n * sizeof(*v));

		assert_non_null(v);
		for (i = 0; i < n; i++) /* few distinct values: many ties */
			v[i] = (double)(rand_r(&seed) % 37) * 0.5;
		gs_pctl_sort(v, n);
		for (i = 1; i < n; i++)
			assert_true(v[i - 1] <= v[i]);
		for (k = 0; k < sizeof(ps) / sizeof(ps[0]); k++)
			assert_float_equal(gs_pctl_of_sorted(v, n, ps[k]),
			                   reference(v, n, ps[k]), 0);
		free(v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(percentiles_of_one_to_ten_follow_nearest_rank),
	    cmocka_unit_test(percentile_of_one_sample_is_that_sample),
	    cmocka_unit_test(empty_or_out_of_range_gives_nan),
	    cmocka_unit_test(
	        percentiles_match_naive_reference_on_random_samples),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
