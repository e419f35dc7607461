/* test_err.c - the error enum's tables and the first-message-wins buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "gs/err.h"

static void every_code_has_name_message_and_exit_status(void **state)
{
	(void)state;
	for (int e = 0; e < GS_ERR__COUNT; e++) {
		assert_non_null(gs_strerror((gs_err)e));
		assert_true(strlen(gs_err_name((gs_err)e)) > 0);
		if (e == GS_OK)
			assert_int_equal(gs_err_exit_code((gs_err)e), 0);
		else
			assert_true(gs_err_exit_code((gs_err)e) > 0);
	}
	assert_string_equal(gs_strerror((gs_err)9999), "unknown error");
	assert_string_equal(gs_err_name(GS_ERR_NO_FIT), "NO_FIT");
}

static void errbuf_keeps_first_message(void **state)
{
	struct gs_errbuf eb;

	(void)state;
	gs_errbuf_init(&eb);
	assert_string_equal(gs_errbuf_msg(&eb, GS_ERR_RANGE),
			    "value out of range");
	assert_int_equal(gs_fail(&eb, GS_ERR_RANGE, "compute must be 1..100, got %d", 140),
			 GS_ERR_RANGE);
	assert_int_equal(gs_fail(&eb, GS_ERR_INVALID, "outer"), GS_ERR_INVALID);
	assert_string_equal(gs_errbuf_msg(&eb, GS_ERR_INVALID),
			    "compute must be 1..100, got 140");
	assert_int_equal(gs_fail(NULL, GS_ERR_IO, "discarded"), GS_ERR_IO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_code_has_name_message_and_exit_status),
		cmocka_unit_test(errbuf_keeps_first_message),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
