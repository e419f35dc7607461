/*
 * test_k8s_sliceconfig.c - the gpuslice.io/v1alpha1 SliceConfig decoded
 * strictly (sliceconfig.h): every field, later configs override earlier
 * ones, and each bad input is refused with a message naming the field and
 * leaves the value unchanged.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "sliceconfig.h"

#define HEAD                                                                   \
	"\"apiVersion\": \"gpuslice.io/v1alpha1\", \"kind\": \"SliceConfig\""

static void every_field_applies_and_later_configs_override(void **state)
{
	struct gs_kslicecfg c;
	struct gs_errbuf eb = {0};
	json_t *a =
	    json_loads("{" HEAD ", \"priority\": \"high\", \"weight\": 7,"
	               " \"computeMode\": \"share\", \"isolation\": \"memory\","
	               " \"mode\": \"mps\"}",
	               0, NULL);
	json_t *b = json_loads("{" HEAD ", \"priority\": \"low\"}", 0, NULL);

	(void)state;
	gs_kslicecfg_init(&c);
	assert_int_equal(c.priority, GS_PRIORITY_NORMAL);
	assert_int_equal(c.weight, 1);
	assert_int_equal(gs_kslicecfg_apply(&c, a, "class config[0]", &eb),
	                 GS_OK);
	assert_int_equal(c.priority, GS_PRIORITY_HIGH);
	assert_int_equal(c.weight, 7);
	assert_int_equal(c.compute_mode, GS_KCOMPUTE_SHARE);
	assert_int_equal(c.isolation, GS_ISOLATION_MEMORY);
	assert_true(c.mps);
	assert_int_equal(gs_kslicecfg_apply(&c, b, "claim config[1]", &eb),
	                 GS_OK);
	assert_int_equal(c.priority, GS_PRIORITY_LOW);
	assert_int_equal(c.weight, 7);
	assert_true(c.mps);
	json_decref(a);
	json_decref(b);
}

static void swap_field_sets_never_and_refuses_other_values(void **state)
{
	struct gs_kslicecfg c;
	struct gs_errbuf eb = {0};
	json_t *never = json_loads("{" HEAD ", \"swap\": \"never\"}", 0, NULL);
	json_t *allow = json_loads("{" HEAD ", \"swap\": \"allow\"}", 0, NULL);
	json_t *bad = json_loads("{" HEAD ", \"swap\": \"sometimes\"}", 0, NULL);

	(void)state;
	gs_kslicecfg_init(&c);
	assert_int_equal(c.swap, GS_SWAP_ALLOW);
	assert_int_equal(gs_kslicecfg_apply(&c, never, "class config[0]", &eb), GS_OK);
	assert_int_equal(c.swap, GS_SWAP_NEVER);
	assert_int_equal(gs_kslicecfg_apply(&c, bad, "claim config[1]", &eb), GS_ERR_INVALID);
	assert_string_equal(eb.msg, "claim config[1]: SliceConfig field 'swap' must be allow or never, got 'sometimes'");
	assert_int_equal(c.swap, GS_SWAP_NEVER);
	assert_int_equal(gs_kslicecfg_apply(&c, allow, "claim config[1]", NULL), GS_OK);
	assert_int_equal(c.swap, GS_SWAP_ALLOW);
	json_decref(never);
	json_decref(allow);
	json_decref(bad);
}

static void bad_configs_name_the_field_and_change_nothing(void **state)
{
	static const struct {
		const char *json;
		const char *msg;
	} rows[] = {
	    {"[]", "claim config[0]: parameters must be an object"},
	    {"{\"kind\": \"SliceConfig\"}",
	     "claim config[0]: SliceConfig field 'apiVersion' is missing"},
	    {"{\"apiVersion\": \"gpuslice.io/v2\", \"kind\": \"SliceConfig\"}",
	     "field 'apiVersion' must be gpuslice.io/v1alpha1"},
	    {"{\"apiVersion\": \"gpuslice.io/v1alpha1\", \"kind\": "
	     "\"GpuConfig\"}",
	     "field 'kind' must be SliceConfig"},
	    {"{" HEAD ", \"priority\": \"urgent\"}",
	     "SliceConfig field 'priority' must be high, normal or low, got "
	     "'urgent'"},
	    {"{" HEAD ", \"priority\": 3}",
	     "SliceConfig field 'priority' must be a string"},
	    {"{" HEAD ", \"weight\": 0}",
	     "SliceConfig field 'weight' must be an integer 1..1000"},
	    {"{" HEAD ", \"weight\": \"5\"}",
	     "SliceConfig field 'weight' must be an integer 1..1000"},
	    {"{" HEAD ", \"computeMode\": \"fast\"}",
	     "SliceConfig field 'computeMode' must be strict or share, got "
	     "'fast'"},
	    {"{" HEAD ", \"isolation\": \"total\"}",
	     "SliceConfig field 'isolation' must be none, memory, hard or "
	     "exclusive"},
	    {"{" HEAD ", \"mode\": \"mig\"}",
	     "SliceConfig field 'mode' must be timeslice or mps, got 'mig'"},
	    {"{" HEAD ", \"priority\": \"high\", \"memory\": \"8Gi\"}",
	     "SliceConfig has an unknown field 'memory'"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gs_kslicecfg c, before;
		struct gs_errbuf eb = {0};
		json_t *j = json_loads(rows[i].json, 0, NULL);

		assert_non_null(j);
		gs_kslicecfg_init(&c);
		c.weight = 3;
		before = c;
		assert_int_equal(
		    gs_kslicecfg_apply(&c, j, "claim config[0]", &eb),
		    GS_ERR_INVALID);
		if (strstr(eb.msg, rows[i].msg) == NULL)
			fail_msg("%s: message '%s' lacks '%s'", rows[i].json,
			         eb.msg, rows[i].msg);
		assert_memory_equal(&c, &before, sizeof(c));
		json_decref(j);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(every_field_applies_and_later_configs_override),
	    cmocka_unit_test(swap_field_sets_never_and_refuses_other_values),
	    cmocka_unit_test(bad_configs_name_the_field_and_change_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
