/*
 * test_price.c - price rules: which rule wins, the text form, and costs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "gs/price.h"

static const char *const table_text =
    "# model           mode       per GPU-second  per GiB-second\n"
    "*                 *          0.001           0.00001\n"
    "H100*             *          7.2/h           0.072/h   # per hour\n"
    "H100*             mig*       0.0005          0.000005\n"
    "h100              mps        0.0007          0\n"
    "A100-SXM4-40GB    mig        0.06/m          0\n"
    "\n"
    "   # blank and comment-only lines are fine\n";

static struct gs_price_table load(void)
{
	struct gs_price_table t;
	struct gs_errbuf eb = {0};

	gs_price_table_init(&t);
	assert_int_equal(gs_price_table_parse(&t, table_text, &eb), GS_OK);
	assert_int_equal(t.n, 5);
	return t;
}

struct pick_case {
	const char *model;
	enum gs_slice_mode mode;
	double per_gpu_second;
	double per_gib_second;
};

static void most_specific_rule_prices_each_record(void **state)
{
	static const struct pick_case cases[] = {
	    /* exact model (an alias canonicalised) and exact mode */
	    {"H100-SXM5-80GB", GS_MODE_MPS, 0.0007, 0},
	    /* model glob + mode glob beats model glob + "*" */
	    {"H100-SXM5-80GB", GS_MODE_MIG_TIMESLICE, 0.0005, 0.000005},
	    {"H100-NVL-94GB", GS_MODE_MIG, 0.0005, 0.000005},
	    /* model glob + "*" */
	    {"H100-NVL-94GB", GS_MODE_TIMESLICE, 0.002, 0.00002},
	    /* exact model, exact mode, per minute */
	    {"A100-SXM4-40GB", GS_MODE_MIG, 0.001, 0},
	    /* the exact model's rule is for mig only: default applies */
	    {"A100-SXM4-40GB", GS_MODE_MPS, 0.001, 0.00001},
	    {"B200-180GB", GS_MODE_TIMESLICE, 0.001, 0.00001},
	};
	struct gs_price_table t = load();

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct gs_price_rule *r =
		    gs_price_lookup(&t, cases[i].model, cases[i].mode);

		assert_non_null(r);
		if (fabs(r->per_gpu_second - cases[i].per_gpu_second) > 1e-12 ||
		    fabs(r->per_gib_second - cases[i].per_gib_second) > 1e-12)
			fail_msg("%s %s: got rule %s %s", cases[i].model,
			         gs_mode_name(cases[i].mode), r->model,
			         r->mode);
	}
}

static void later_rule_wins_a_tie(void **state)
{
	struct gs_price_table t;
	struct gs_errbuf eb = {0};

	gs_price_table_init(&t);
	assert_int_equal(gs_price_table_add(&t, "A100*", "*", 1, 0, &eb),
	                 GS_OK);
	assert_int_equal(gs_price_table_add(&t, "*40GB", "*", 2, 0, &eb),
	                 GS_OK);
	/* both have 4 literal characters */
	assert_true(gs_price_lookup(&t, "A100-SXM4-40GB", GS_MODE_MPS)
	                ->per_gpu_second == 2);
	assert_null(gs_price_lookup(&t, "H100-SXM5-80GB", GS_MODE_MPS));
}

static void cost_is_gpu_time_plus_memory_time(void **state)
{
	struct gs_price_table t = load();
	struct gs_usage_record rec = {"H100-SXM5-80GB", GS_MODE_TIMESLICE, 3600,
	                              8 * 3600};
	const struct gs_price_rule *r;
	struct gs_errbuf eb = {0};
	double cost;

	/* 1 GPU-hour at 7.2/h + 8 GiB-hours at 0.072/h */
	assert_int_equal(gs_price_cost(&t, &rec, &cost, &r, &eb), GS_OK);
	assert_true(fabs(cost - (7.2 + 8 * 0.072)) < 1e-9);
	assert_string_equal(r->model, "H100*");
}

static void cost_without_matching_rule_is_not_found(void **state)
{
	struct gs_price_table t;
	struct gs_usage_record rec = {"A30-24GB", GS_MODE_MPS, 1, 1};
	struct gs_usage_record neg = {"A30-24GB", GS_MODE_MPS, -1, 1};
	struct gs_errbuf eb = {0};
	double cost = 5;

	gs_price_table_init(&t);
	assert_int_equal(gs_price_table_add(&t, "H100*", NULL, 1, 1, &eb),
	                 GS_OK);
	assert_int_equal(gs_price_cost(&t, &rec, &cost, NULL, &eb),
	                 GS_ERR_NOT_FOUND);
	assert_true(cost == 0);
	assert_string_equal(eb.msg, "no price for A30-24GB in mode mps (add a "
	                            "rule, or a '* *' default)");
	gs_errbuf_init(&eb);
	assert_int_equal(gs_price_cost(&t, &neg, &cost, NULL, &eb),
	                 GS_ERR_RANGE);
}

struct bad_case {
	const char *text;
	gs_err err;
	const char *msg;
};

static void bad_table_text_is_reported_with_its_line(void **state)
{
	static const struct bad_case cases[] = {
	    {"* * 1\n", GS_ERR_PARSE,
	     "line 1: expected 4 fields (model mode per-GPU-second "
	     "per-GiB-second), got fewer"},
	    {"# ok\n* * 1 2 3\n", GS_ERR_PARSE,
	     "line 2: expected 4 fields (model mode per-GPU-second "
	     "per-GiB-second), got more"},
	    {"\n\n* * -1 0\n", GS_ERR_RANGE,
	     "line 3: price '-1' must be a number >= 0"},
	    {"* * 1/d 0\n", GS_ERR_PARSE,
	     "line 1: price '1/d' must end in /s, /m or /h"},
	    {"* * abc/h 0\n", GS_ERR_RANGE,
	     "line 1: price 'abc/h' must be a number >= 0"},
	    {"* * 1 nan\n", GS_ERR_RANGE,
	     "line 1: price 'nan' must be a number >= 0"},
	    {"* vgpu 1 1\n", GS_ERR_INVALID,
	     "line 1: price mode 'vgpu' matches no mode (auto, timeslice, "
	     "mps, mig, mig+timeslice, mig+mps)"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gs_price_table t;
		struct gs_errbuf eb = {0};

		gs_price_table_init(&t);
		assert_int_equal(gs_price_table_parse(&t, cases[i].text, &eb),
		                 cases[i].err);
		assert_string_equal(eb.msg, cases[i].msg);
	}
}

static void table_refuses_more_rules_than_it_holds(void **state)
{
	struct gs_price_table t;
	struct gs_errbuf eb = {0};

	gs_price_table_init(&t);
	for (int i = 0; i < GS_PRICE_MAX_RULES; i++)
		assert_int_equal(gs_price_table_add(&t, "*", "*", 1, 1, &eb),
		                 GS_OK);
	assert_int_equal(gs_price_table_add(&t, "*", "*", 1, 1, &eb),
	                 GS_ERR_RANGE);
	assert_int_equal(t.n, GS_PRICE_MAX_RULES);
	gs_errbuf_init(&eb);
	assert_int_equal(gs_price_table_add(&t, "*", "*", 1, 1, &eb),
	                 GS_ERR_RANGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(most_specific_rule_prices_each_record),
	    cmocka_unit_test(later_rule_wins_a_tie),
	    cmocka_unit_test(cost_is_gpu_time_plus_memory_time),
	    cmocka_unit_test(cost_without_matching_rule_is_not_found),
	    cmocka_unit_test(bad_table_text_is_reported_with_its_line),
	    cmocka_unit_test(table_refuses_more_rules_than_it_holds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
