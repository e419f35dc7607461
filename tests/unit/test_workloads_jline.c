/* test_workloads_jline.c - the workloads' one-line JSON output: valid JSON
 * (checked with jansson), escapes, non-finite numbers, overflow. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "jline.h"

static json_t *parse_line(const char *line)
{
	json_error_t err;
	json_t *o;

	assert_non_null(line);
	assert_null(strchr(line, '\n'));
	o = json_loads(line, 0, &err);
	if (!o)
		fail_msg("not JSON: %s (%s)", line, err.text);
	assert_true(json_is_object(o));
	return o;
}

static void line_holds_every_type_in_order(void **state)
{
	struct gs_jline j;
	const char *line;
	json_t *o;

	(void)state;
	gs_jline_init(&j);
	gs_jline_str(&j, "source", "NVIDIA H100 80GB HBM3 (simulated)");
	gs_jline_int(&j, "threads", -5);
	gs_jline_u64(&j, "bytes", 85520809984ULL);
	gs_jline_num(&j, "p50_ms", 4.151);
	gs_jline_bool(&j, "ok", true);
	gs_jline_bool(&j, "capped", false);
	gs_jline_null(&j, "error");
	gs_jline_str(&j, "call", NULL);
	line = gs_jline_end(&j);
	assert_string_equal(line,
	                    "{\"source\":\"NVIDIA H100 80GB HBM3 (simulated)\","
	                    "\"threads\":-5,\"bytes\":85520809984,"
	                    "\"p50_ms\":4.151,\"ok\":true,\"capped\":false,"
	                    "\"error\":null,\"call\":null}");
	o = parse_line(line);
	assert_int_equal(json_integer_value(json_object_get(o, "threads")), -5);
	assert_float_equal(json_real_value(json_object_get(o, "p50_ms")), 4.151,
	                   1e-12);
	json_decref(o);
	/* end is idempotent */
	assert_ptr_equal(gs_jline_end(&j), line);
	assert_int_equal(strlen(gs_jline_end(&j)), strlen(line));
}

static void empty_object_is_valid(void **state)
{
	struct gs_jline j;

	(void)state;
	gs_jline_init(&j);
	assert_string_equal(gs_jline_end(&j), "{}");
}

static void strings_are_escaped(void **state)
{
	struct gs_jline j;
	json_t *o;
	const char *nasty = "q\"b\\s\nn\tt\r\x01\x1f\x7f end";

	(void)state;
	gs_jline_init(&j);
	gs_jline_str(&j, "k\"ey", nasty);
	o = parse_line(gs_jline_end(&j));
	assert_string_equal(json_string_value(json_object_get(o, "k\"ey")),
	                    nasty);
	json_decref(o);
}

static void non_finite_numbers_become_null(void **state)
{
	struct gs_jline j;
	json_t *o;

	(void)state;
	gs_jline_init(&j);
	gs_jline_num(&j, "nan", NAN);
	gs_jline_num(&j, "inf", INFINITY);
	gs_jline_num(&j, "tiny", 1.5e-7);
	gs_jline_num(&j, "big", 1.25e20);
	o = parse_line(gs_jline_end(&j));
	assert_true(json_is_null(json_object_get(o, "nan")));
	assert_true(json_is_null(json_object_get(o, "inf")));
	assert_float_equal(json_number_value(json_object_get(o, "tiny")),
	                   1.5e-7, 1e-20);
	assert_float_equal(json_number_value(json_object_get(o, "big")),
	                   1.25e20, 1e6);
	json_decref(o);
}

static void overflowing_line_is_refused_not_truncated(void **state)
{
	struct gs_jline j;
	char big[1000];
	FILE *f;
	int i;

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	gs_jline_init(&j);
	for (i = 0; i < 5; i++)
		gs_jline_str(&j, "k", big);
	assert_true(j.overflow);
	assert_null(gs_jline_end(&j));
	f = tmpfile();
	assert_non_null(f);
	assert_int_equal(gs_jline_print(&j, f), -1);
	assert_int_equal(ftell(f), 0);
	fclose(f);
}

static void print_writes_one_newline_terminated_line(void **state)
{
	struct gs_jline j;
	char buf[128];
	FILE *f;

	(void)state;
	gs_jline_init(&j);
	gs_jline_int(&j, "n", 1);
	f = tmpfile();
	assert_non_null(f);
	assert_int_equal(gs_jline_print(&j, f), 0);
	rewind(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	assert_string_equal(buf, "{\"n\":1}\n");
	assert_null(fgets(buf, sizeof(buf), f));
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(line_holds_every_type_in_order),
	    cmocka_unit_test(empty_object_is_valid),
	    cmocka_unit_test(strings_are_escaped),
	    cmocka_unit_test(non_finite_numbers_become_null),
	    cmocka_unit_test(overflowing_line_is_refused_not_truncated),
	    cmocka_unit_test(print_writes_one_newline_terminated_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
