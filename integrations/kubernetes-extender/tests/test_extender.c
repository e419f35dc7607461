/*
 * test_extender.c - the scheduler extender's verbs (extender.c) on
 * hand-written requests in the shape kube-scheduler sends (capitalised
 * ExtenderArgs keys, null fields), against the node state in state.json.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extender.h"

static char *slurp(const char *name, size_t *len)
{
	char path[1024];
	FILE *f;
	char *buf = malloc(1 << 16);

	snprintf(path, sizeof(path), "%s/%s", GS_EXT_TEST_DATA, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_non_null(buf);
	*len = fread(buf, 1, (1 << 16) - 1, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

static struct gs_ext_state *state(void)
{
	size_t len;
	char *t = slurp("state.json", &len);
	struct gs_ext_state *st = NULL;
	struct gs_errbuf eb = {0};

	assert_int_equal(gs_ext_state_parse(t, len, &st, &eb), GS_OK);
	free(t);
	return st;
}

static json_t *call(const struct gs_ext_state *st, const char *verb,
                    const char *file, int want)
{
	size_t len;
	char *body = slurp(file, &len);
	int status = 0;
	char *out = gs_ext_handle(st, verb, body, len, &status);
	json_t *j;

	assert_non_null(out);
	assert_int_equal(status, want);
	j = json_loads(out, 0, NULL);
	assert_non_null(j);
	free(out);
	free(body);
	return j;
}

static void filter_drops_nodes_without_room_or_state(void **unused)
{
	struct gs_ext_state *st = state();
	json_t *r = call(st, "filter", "filter_share.json", 200);
	json_t *ok = json_object_get(r, "NodeNames");
	json_t *failed = json_object_get(r, "FailedNodes");

	(void)unused;
	/* node-a and node-b have a device with half a GPU free; node-c has
	 * too little CPU; node-unknown reports nothing. */
	assert_int_equal(json_array_size(ok), 2);
	assert_string_equal(json_string_value(json_array_get(ok, 0)), "node-a");
	assert_string_equal(json_string_value(json_array_get(ok, 1)), "node-b");
	assert_non_null(json_object_get(failed, "node-c"));
	assert_non_null(json_object_get(failed, "node-unknown"));
	assert_true(json_is_null(json_object_get(r, "Nodes")));
	json_decref(r);
	gs_ext_state_free(st);
}

static void prioritize_prefers_the_node_that_keeps_whole_gpus(void **unused)
{
	struct gs_ext_state *st = state();
	json_t *r = call(st, "prioritize", "prioritize_whole.json", 200);
	json_t *a = json_array_get(r, 0), *b = json_array_get(r, 1);

	(void)unused;
	assert_int_equal(json_array_size(r), 2);
	assert_string_equal(json_string_value(json_object_get(a, "Host")),
	                    "node-a");
	/* node-b has no whole free GPU: it cannot host the task at all. */
	assert_true(json_integer_value(json_object_get(a, "Score")) > 0);
	assert_int_equal(json_integer_value(json_object_get(b, "Score")), 0);
	json_decref(r);
	gs_ext_state_free(st);
}

static void bad_bodies_and_verbs_get_error_replies(void **unused)
{
	struct gs_ext_state *st = state();
	int status = 0;
	char *out;
	struct gs_ext_state *bad = NULL;
	struct gs_errbuf eb = {0};
	const char *both = "{\"Pod\":{\"spec\":{\"containers\":[{\"resources\":"
	                   "{\"requests\":{\"gpuslice.io/gpu-milli\":\"500\","
	                   "\"nvidia.com/gpu\":\"1\"}}}]}},\"NodeNames\":[]}";

	(void)unused;
	out = gs_ext_handle(st, "filter", "not json", 8, &status);
	assert_int_equal(status, 400);
	assert_non_null(strstr(out, "Error"));
	free(out);
	out = gs_ext_handle(st, "filter", both, strlen(both), &status);
	assert_int_equal(status, 400);
	free(out);
	out = gs_ext_handle(st, "bind", "{}", 2, &status);
	assert_int_equal(status, 404);
	free(out);
	{
		/* Valid JSON, but a node without a name. */
		const char *t = "{\"nodes\":[{\"gpus\":[]}]}";
		assert_int_equal(gs_ext_state_parse(t, strlen(t), &bad, &eb),
		                 GS_ERR_PARSE);
		assert_non_null(strstr(eb.msg, "name"));
	}
	assert_null(bad);
	gs_ext_state_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(filter_drops_nodes_without_room_or_state),
	    cmocka_unit_test(prioritize_prefers_the_node_that_keeps_whole_gpus),
	    cmocka_unit_test(bad_bodies_and_verbs_get_error_replies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
