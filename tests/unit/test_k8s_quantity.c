/*
 * test_k8s_quantity.c - Kubernetes quantities read exactly (quantity.h),
 * from a table: binary and decimal suffixes, fractions, exponents, milli
 * values, rounding up, and every malformed form with its error.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "quantity.h"

#define NO_MILLI INT64_MIN

static void quantities_read_exactly_with_rounding_up(void **state)
{
	static const struct {
		const char *text;
		int64_t value, milli;
		int whole;
	} rows[] = {
	    {"8Gi", 8589934592LL, 8589934592000LL, 1},
	    {"500M", 500000000LL, 500000000000LL, 1},
	    {"25", 25, 25000, 1},
	    {"0.5", 1, 500, 0},
	    {"100m", 1, 100, 0},
	    {"1500m", 2, 1500, 0},
	    {"0.1", 1, 100, 0},
	    {"1.5Gi", 1610612736LL, 1610612736000LL, 1},
	    {"1Ki", 1024, 1024000, 1},
	    {"1k", 1000, 1000000, 1},
	    {"1e3", 1000, 1000000, 1},
	    {"1E3", 1000, 1000000, 1},
	    {"12e-1", 2, 1200, 0},
	    {"0", 0, 0, 1},
	    {"0.0", 0, 0, 1},
	    {"+7", 7, 7000, 1},
	    {"-3", -3, -3000, 1},
	    {"5.", 5, 5000, 1},
	    {".5", 1, 500, 0},
	    {"1.000000000000000000000Gi", 1073741824LL, 1073741824000LL, 1},
	    {"80Gi", 85899345920LL, 85899345920000LL, 1},
	    {"7Ei", 8070450532247928832LL, NO_MILLI, 1},
	    {"1n", 1, 1, 0},
	    {"1u", 1, 1, 0},
	    {"2E", 2000000000000000000LL, NO_MILLI, 1},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gs_kquantity q;
		struct gs_errbuf eb = {0};
		int64_t v = 0;

		assert_int_equal(gs_kquantity_parse(rows[i].text, &q, &eb),
		                 GS_OK);
		assert_int_equal(gs_kquantity_scaled(&q, 1, &v, &eb), GS_OK);
		if (v != rows[i].value)
			fail_msg("%s: value %lld, want %lld", rows[i].text,
			         (long long)v, (long long)rows[i].value);
		if (rows[i].milli != NO_MILLI) {
			assert_int_equal(gs_kquantity_scaled(&q, 1000, &v, &eb),
			                 GS_OK);
			if (v != rows[i].milli)
				fail_msg("%s: milli %lld, want %lld",
				         rows[i].text, (long long)v,
				         (long long)rows[i].milli);
		} else {
			assert_int_equal(gs_kquantity_scaled(&q, 1000, &v, &eb),
			                 GS_ERR_RANGE);
		}
		if ((int)gs_kquantity_is_whole(&q, 1) != rows[i].whole)
			fail_msg("%s: is_whole wrong", rows[i].text);
	}
}

static void malformed_quantities_are_refused_with_the_reason(void **state)
{
	static const struct {
		const char *text;
		gs_err err;
		const char *msg;
	} rows[] = {
	    {"", GS_ERR_PARSE, "empty quantity"},
	    {"Gi", GS_ERR_PARSE, "quantity 'Gi' has no digits"},
	    {"8GB", GS_ERR_PARSE, "quantity '8GB' has an unknown suffix 'GB'"},
	    {"8 Gi", GS_ERR_PARSE, "unknown suffix ' Gi'"},
	    {"1.2.3", GS_ERR_PARSE, "unknown suffix '.3'"},
	    {"1e", GS_ERR_PARSE, "unknown suffix 'e'"},
	    {"1e99999", GS_ERR_PARSE, "unknown suffix"},
	    {"-", GS_ERR_PARSE, "no digits"},
	    {"1234567890123456789", GS_ERR_RANGE, "more than 18 significant"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gs_kquantity q;
		struct gs_errbuf eb = {0};

		assert_int_equal(gs_kquantity_parse(rows[i].text, &q, &eb),
		                 rows[i].err);
		if (strstr(eb.msg, rows[i].msg) == NULL)
			fail_msg("%s: message '%s' lacks '%s'", rows[i].text,
			         eb.msg, rows[i].msg);
	}
}

static void values_beyond_int64_are_range_errors(void **state)
{
	struct gs_kquantity q;
	struct gs_errbuf eb = {0};
	int64_t v;

	(void)state;
	assert_int_equal(gs_kquantity_parse("9Ei", &q, &eb), GS_OK);
	assert_int_equal(gs_kquantity_scaled(&q, 1, &v, &eb), GS_ERR_RANGE);
	assert_int_equal(gs_kquantity_parse("999999999999999999E", &q, &eb),
	                 GS_OK);
	assert_int_equal(gs_kquantity_scaled(&q, 1, &v, &eb), GS_ERR_RANGE);
	assert_int_equal(gs_kquantity_parse("1e-400", &q, &eb), GS_OK);
	assert_int_equal(gs_kquantity_scaled(&q, 1, &v, &eb), GS_OK);
	assert_int_equal(v, 1);
}

static void parse_uint_names_the_field_and_refuses_fractions(void **state)
{
	struct gs_errbuf eb = {0};
	uint64_t v = 0;

	(void)state;
	assert_int_equal(gs_kquantity_parse_uint("8Gi", "memory", &v, &eb),
	                 GS_OK);
	assert_true(v == 8589934592ULL);
	assert_int_equal(
	    gs_kquantity_parse_uint("0.5", "consumedCapacity.compute", &v, &eb),
	    GS_ERR_RANGE);
	assert_string_equal(
	    eb.msg, "consumedCapacity.compute: '0.5' is not a whole number");
	memset(&eb, 0, sizeof(eb));
	assert_int_equal(gs_kquantity_parse_uint("-1", "x", &v, &eb),
	                 GS_ERR_RANGE);
	assert_string_equal(eb.msg, "x: '-1' is negative");
	memset(&eb, 0, sizeof(eb));
	assert_int_equal(gs_kquantity_parse_uint("8q", "memory", &v, &eb),
	                 GS_ERR_PARSE);
	assert_non_null(strstr(eb.msg, "memory: quantity '8q'"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(quantities_read_exactly_with_rounding_up),
	    cmocka_unit_test(malformed_quantities_are_refused_with_the_reason),
	    cmocka_unit_test(values_beyond_int64_are_range_errors),
	    cmocka_unit_test(parse_uint_names_the_field_and_refuses_fractions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
