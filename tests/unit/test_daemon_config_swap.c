/*
 * test_daemon_config_swap.c - gpusliced's `swap` section (docs/config.md,
 * docs/swap.md): the defaults, every key read into the struct, and bad
 * values refused with FILE:LINE and the key, from a table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "config.h"

#define GIB (1024ULL * 1024 * 1024)

static gs_err load(struct gs_config *cfg, const char *text,
                   struct gs_errbuf *eb)
{
	gs_config_defaults(cfg, true, NULL, NULL);
	return gs_config_load_text(cfg, "test.yaml", text, strlen(text), eb);
}

static void swap_defaults_keep_oversubscription_off(void **state)
{
	struct gs_config cfg;

	(void)state;
	gs_config_defaults(&cfg, true, NULL, NULL);
	assert_true(cfg.swap_oversubscribe == 1.0);
	assert_int_equal(cfg.swap_idle_after_s, 30);
	assert_int_equal(cfg.swap_min_residency_s, 10);
	assert_int_equal(cfg.swap_host_memory, 0);
	assert_int_equal(cfg.swap_need_wait_s, 30);
}

static void swap_keys_are_read(void **state)
{
	struct gs_config cfg;
	struct gs_errbuf eb = {0};

	(void)state;
	assert_int_equal(
	    load(
	        &cfg,
	        "swap:\n  oversubscribe: 2.5\n  idle_after: 2m\n  min_residency: 45\n  host_memory: 64GiB\n  need_wait: 2s\n",
	        &eb),
	    GS_OK);
	assert_true(cfg.swap_oversubscribe == 2.5);
	assert_int_equal(cfg.swap_idle_after_s, 120);
	assert_int_equal(cfg.swap_min_residency_s, 45);
	assert_int_equal(cfg.swap_host_memory, 64 * GIB);
	assert_int_equal(cfg.swap_need_wait_s, 2);
}

static void bad_swap_values_are_refused_naming_the_key(void **state)
{
	static const struct {
		const char *text;
		gs_err err;
		const char *msg;
	} cases[] = {
	    {"swap:\n  oversubscribe: 0.5\n", GS_ERR_RANGE,
	     "test.yaml:2: swap.oversubscribe must be 1..100 (1 = off), got '0.5'"},
	    {"swap:\n  oversubscribe: NaN\n", GS_ERR_RANGE,
	     "test.yaml:2: swap.oversubscribe must be 1..100 (1 = off), got 'NaN'"},
	    {"swap:\n  oversubscribe: -1\n", GS_ERR_RANGE,
	     "test.yaml:2: swap.oversubscribe must be 1..100 (1 = off), got '-1'"},
	    {"swap:\n  oversubscribe: [2]\n", GS_ERR_PARSE,
	     "test.yaml:2: oversubscribe must be a single value"},
	    {"swap:\n  oversubscribe: 3\n", GS_ERR_INVALID,
	     "test.yaml: swap.oversubscribe 3 needs swap.host_memory (the host memory swapped contents may take)"},
	    {"swap:\n  idle_after: -1\n", GS_ERR_RANGE,
	     "test.yaml:2: swap.idle_after must be 0..604800 seconds, got '-1'"},
	    {"swap:\n  min_residency: 1w\n", GS_ERR_PARSE,
	     "test.yaml:2: swap.min_residency: '1w' is not a duration (e.g. 30s, 5m, 1h)"},
	    {"swap:\n  need_wait: 0\n", GS_ERR_RANGE,
	     "test.yaml:2: swap.need_wait must be 1..3600 seconds, got '0'"},
	    {"swap:\n  need_wait: 2h\n", GS_ERR_RANGE,
	     "test.yaml:2: swap.need_wait must be 1..3600 seconds, got '2h'"},
	    {"swap:\n  need_wait: soon\n", GS_ERR_PARSE,
	     "test.yaml:2: swap.need_wait: 'soon' is not a duration"},
	    {"swap:\n  host_memory: lots\n", GS_ERR_PARSE,
	     "test.yaml:2: host_memory:"},
	    {"swap:\n  ratio: 2\n", GS_ERR_INVALID,
	     "test.yaml:2: unknown key 'ratio' in swap"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gs_config cfg;
		struct gs_errbuf eb = {0};

		assert_int_equal(load(&cfg, cases[i].text, &eb), cases[i].err);
		if (strncmp(eb.msg, cases[i].msg, strlen(cases[i].msg)) != 0)
			fail_msg("'%s': got '%s', want '%s'", cases[i].text,
			         eb.msg, cases[i].msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(swap_defaults_keep_oversubscription_off),
	    cmocka_unit_test(swap_keys_are_read),
	    cmocka_unit_test(bad_swap_values_are_refused_naming_the_key),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
