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
#include "live.h"

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

/*
 * The live source's document from gpusliced's answers: free memory and
 * compute from what slices hold, an unhealthy GPU as full, demand weights
 * merged over nodes (MIG shapes left out), and a node without an answer
 * (or with one that does not parse) filtered with the reason.
 */
static void live_doc_follows_the_daemons_answers(void **unused)
{
	static const char gpus_a[] =
	    "{\"source\":\"sim\",\"gpus\":["
	    "{\"index\":0,\"model\":\"H100-SXM5-80GB\","
	    "\"memory_bytes\":85899345920,\"health\":{\"healthy\":true},"
	    "\"allocated\":{\"memory_bytes\":75161927680,\"compute\":0,"
	    "\"slices\":1}},"
	    "{\"index\":1,\"model\":\"H100-SXM5-80GB\","
	    "\"memory_bytes\":85899345920,"
	    "\"health\":{\"healthy\":false,\"reason\":\"Xid 79\"},"
	    "\"allocated\":{\"memory_bytes\":0,\"compute\":0,"
	    "\"slices\":0}}]}";
	static const char gpus_b[] =
	    "{\"gpus\":[{\"model\":\"H100-SXM5-80GB\","
	    "\"memory_bytes\":85899345920,\"allocated\":{\"memory_bytes\":"
	    "21474836480,\"compute\":30,\"slices\":1}}]}";
	static const char demand[] =
	    "{\"classes\":[{\"kind\":\"fraction\",\"gpu_milli\":500,"
	    "\"num_gpu\":1,\"weight\":2.5},{\"kind\":\"mig\","
	    "\"gpu_milli\":null,\"num_gpu\":1,\"weight\":9}]}";
	const struct gs_ext_live_read reads[] = {
	    {.name = "node-a", .gpus = gpus_a, .demand = demand},
	    {.name = "node-b", .gpus = gpus_b, .demand = demand},
	    {.name = "node-c", .why = "GET http://x/v1/gpus: Couldn't connect"},
	    {.name = "node-d", .gpus = "<html>"},
	};
	const char *pod = "{\"Pod\":{\"spec\":{\"containers\":[{\"resources\":"
	                  "{\"requests\":{\"gpuslice.io/gpu-milli\":\"500\"},"
	                  "\"limits\":null}}]}},\"Nodes\":null,\"NodeNames\":"
	                  "[\"node-a\",\"node-b\",\"node-c\",\"node-d\"]}";
	char *doc = gs_ext_live_doc(reads, 4), *out;
	json_t *j, *d, *failed;
	struct gs_ext_state *st = NULL;
	struct gs_errbuf eb = {0};
	int status = 0;

	(void)unused;
	assert_non_null(doc);
	j = json_loads(doc, 0, NULL);
	assert_non_null(j);
	d = json_object_get(j, "demand");
	assert_int_equal(json_array_size(d), 1);
	assert_int_equal(json_integer_value(json_object_get(
	                     json_array_get(d, 0), "gpu_milli")),
	                 500);
	assert_true(json_real_value(json_object_get(json_array_get(d, 0),
	                                            "weight")) == 5.0);
	{
		json_t *b = json_array_get(json_object_get(j, "nodes"), 1);
		json_t *g = json_array_get(json_object_get(b, "gpus"), 0);

		assert_int_equal(
		    json_integer_value(json_object_get(g, "memory_free_bytes")),
		    85899345920 - 21474836480);
		assert_int_equal(
		    json_integer_value(json_object_get(g, "compute_free_pct")),
		    70);
	}
	json_decref(j);
	assert_int_equal(gs_ext_state_parse(doc, strlen(doc), &st, &eb), GS_OK);
	free(doc);
	out = gs_ext_handle(st, "filter", pod, strlen(pod), &status);
	assert_int_equal(status, 200);
	j = json_loads(out, 0, NULL);
	free(out);
	/* node-a: 10 GiB free on GPU 0, GPU 1 unhealthy; node-b: room */
	assert_int_equal(json_array_size(json_object_get(j, "NodeNames")), 1);
	assert_string_equal(json_string_value(json_array_get(
	                        json_object_get(j, "NodeNames"), 0)),
	                    "node-b");
	failed = json_object_get(j, "FailedNodes");
	assert_non_null(
	    strstr(json_string_value(json_object_get(failed, "node-a")),
	           "not enough"));
	assert_non_null(
	    strstr(json_string_value(json_object_get(failed, "node-c")),
	           "Couldn't connect"));
	assert_non_null(strstr(
	    json_string_value(json_object_get(failed, "node-d")), "/v1/gpus"));
	json_decref(j);
	gs_ext_state_free(st);
}

/* Demand given as weights scores as the same demand given as counts. */
static void demand_weights_score_like_counts(void **unused)
{
	const char *counts =
	    "{\"nodes\":[{\"name\":\"n\",\"gpus\":[{\"model\":\"A\","
	    "\"memory_total_bytes\":100,\"memory_free_bytes\":60,"
	    "\"compute_free_pct\":100},{\"model\":\"A\","
	    "\"memory_total_bytes\":100,\"memory_free_bytes\":100}]}],"
	    "\"demand\":[{\"cpu_milli\":0,\"gpu_milli\":500,\"num_gpu\":1,"
	    "\"count\":8},{\"cpu_milli\":0,\"gpu_milli\":1000,"
	    "\"num_gpu\":1,\"count\":4}]}";
	char weights[1024];
	const char *pod =
	    "{\"Pod\":{\"spec\":{\"containers\":[{\"resources\":"
	    "{\"requests\":{\"gpuslice.io/gpu-milli\":\"300\"}}}]}},"
	    "\"NodeNames\":[\"n\"]}";
	struct gs_ext_state *a = NULL, *b = NULL;
	struct gs_errbuf eb = {0};
	char *x, *y;
	int status;

	(void)unused;
	snprintf(weights, sizeof(weights), "%s", counts);
	/* "count":8 -> "weight":8.0, "count":4 -> "weight":4.0 */
	for (char *p; (p = strstr(weights, "\"count\":")) != NULL;) {
		char tail[1024];

		snprintf(tail, sizeof(tail), "%s", p + 8);
		snprintf(p, sizeof(weights) - (size_t)(p - weights),
		         "\"weight\":%s", tail);
	}
	assert_int_equal(gs_ext_state_parse(counts, strlen(counts), &a, &eb),
	                 GS_OK);
	assert_int_equal(gs_ext_state_parse(weights, strlen(weights), &b, &eb),
	                 GS_OK);
	x = gs_ext_handle(a, "prioritize", pod, strlen(pod), &status);
	y = gs_ext_handle(b, "prioritize", pod, strlen(pod), &status);
	assert_string_equal(x, y);
	free(x);
	free(y);
	gs_ext_state_free(a);
	gs_ext_state_free(b);
}

/*
 * nodeCacheCapable: false: the scheduler sends Nodes (a v1.NodeList,
 * "items") and reads back only Nodes.items, so the answer is the passing
 * Node objects as sent, NodeNames null (upstream's
 * k8s.io/kube-scheduler/extender/v1 ExtenderFilterResult).
 */
static void filter_without_node_cache_answers_a_node_list(void **unused)
{
	struct gs_ext_state *st = state();
	json_t *r = call(st, "filter", "filter_nodelist.json", 200);
	json_t *items = json_object_get(json_object_get(r, "Nodes"), "items");
	json_t *a = json_array_get(items, 0);

	(void)unused;
	assert_true(json_is_null(json_object_get(r, "NodeNames")));
	assert_int_equal(json_array_size(items), 2);
	assert_string_equal(json_string_value(json_object_get(
	                        json_object_get(a, "metadata"), "name")),
	                    "node-a");
	/* the object itself, not only its name */
	assert_string_equal(
	    json_string_value(json_object_get(
	        json_object_get(json_object_get(a, "metadata"), "labels"),
	        "zone")),
	    "a");
	assert_non_null(
	    json_object_get(json_object_get(r, "FailedNodes"), "node-c"));
	assert_true(
	    json_is_object(json_object_get(r, "FailedAndUnresolvableNodes")));
	json_decref(r);
	gs_ext_state_free(st);
}

/* The scheduler posts to urlPrefix + "/" + verb: a prefix with a path
 * ("http://x:8888/gpuslice/v1") must reach the verbs. */
static void url_prefix_path_reaches_the_verbs(void **unused)
{
	struct gs_ext_state *st = state();
	size_t len;
	char *body = slurp("filter_share.json", &len);
	int status = 0;
	char *out = gs_ext_handle(st, "gpuslice/v1/filter", body, len, &status);

	(void)unused;
	assert_int_equal(status, 200);
	free(out);
	out = gs_ext_handle(st, "gpuslice/prioritize", body, len, &status);
	assert_int_equal(status, 200);
	free(out);
	out = gs_ext_handle(st, "gpuslice/bind", body, len, &status);
	assert_int_equal(status, 404);
	free(out);
	free(body);
	gs_ext_state_free(st);
}

static json_t *filter_body(const struct gs_ext_state *st, const char *body)
{
	int status = 0;
	char *out = gs_ext_handle(st, "filter", body, strlen(body), &status);
	json_t *j;

	assert_int_equal(status, 200);
	j = json_loads(out, 0, NULL);
	free(out);
	assert_non_null(j);
	return j;
}

/*
 * Init containers as the scheduler counts them: a plain init container
 * runs alone (the pod needs the larger of it and the app containers'
 * sum), a sidecar (restartPolicy Always) adds to the app containers.
 * node-a has one whole GPU free and 32 cores.
 */
static void init_containers_count_as_the_scheduler_counts(void **unused)
{
	struct gs_ext_state *st = state();
	const char *init2 =
	    "{\"Pod\":{\"spec\":{\"initContainers\":[{\"name\":\"i\","
	    "\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"2\"}}}],"
	    "\"containers\":[{\"name\":\"m\",\"resources\":{\"requests\":"
	    "{\"nvidia.com/gpu\":\"1\"}}}]}},\"NodeNames\":[\"node-a\"]}";
	const char *init1 =
	    "{\"Pod\":{\"spec\":{\"initContainers\":[{\"name\":\"i\","
	    "\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"1\"}}}],"
	    "\"containers\":[{\"name\":\"m\",\"resources\":{\"requests\":"
	    "{\"nvidia.com/gpu\":\"1\"}}}]}},\"NodeNames\":[\"node-a\"]}";
	const char *sidecar =
	    "{\"Pod\":{\"spec\":{\"initContainers\":[{\"name\":\"s\","
	    "\"restartPolicy\":\"Always\",\"resources\":{\"requests\":"
	    "{\"cpu\":\"31\"}}}],\"containers\":[{\"name\":\"m\","
	    "\"resources\":{\"requests\":{\"cpu\":\"2\","
	    "\"gpuslice.io/gpu-milli\":\"100\"}}}]}},"
	    "\"NodeNames\":[\"node-a\"]}";
	const char *plain_init =
	    "{\"Pod\":{\"spec\":{\"initContainers\":[{\"name\":\"i\","
	    "\"resources\":{\"requests\":{\"cpu\":\"31\"}}}],"
	    "\"containers\":[{\"name\":\"m\",\"resources\":{\"requests\":"
	    "{\"cpu\":\"2\",\"gpuslice.io/gpu-milli\":\"100\"}}}]}},"
	    "\"NodeNames\":[\"node-a\"]}";
	json_t *r;

	(void)unused;
	r = filter_body(st, init2); /* max(2, 1) = 2 GPUs: no room */
	assert_int_equal(json_array_size(json_object_get(r, "NodeNames")), 0);
	json_decref(r);
	r = filter_body(st, init1); /* max(1, 1) = 1 GPU */
	assert_int_equal(json_array_size(json_object_get(r, "NodeNames")), 1);
	json_decref(r);
	r = filter_body(st, sidecar); /* 31 + 2 cores > 32 */
	assert_int_equal(json_array_size(json_object_get(r, "NodeNames")), 0);
	json_decref(r);
	r = filter_body(st, plain_init); /* max(31, 2) cores */
	assert_int_equal(json_array_size(json_object_get(r, "NodeNames")), 1);
	json_decref(r);
	gs_ext_state_free(st);
}

/*
 * The API server's claims and templates for dra_lookup, in namespace
 * "ml": "shared" (a ResourceClaim, v1 "exactly": 60 % compute and 8 GiB),
 * "big" (a ResourceClaimTemplate, v1beta1 fields: 10 % and 48 GiB), "other"
 * (another driver's class). "missing" cannot be read.
 */
static const char claims_fixture[] =
    "{\"claim/ml/shared\": {\"kind\": \"ResourceClaim\", \"spec\": {\"devices\": {\"requests\": [{\"name\": \"gpu\", \"exactly\": {\"deviceClassName\": \"gpu.gpuslice.io\", \"capacity\": {\"requests\": {\"compute\": \"60\", \"memory\": \"8Gi\"}}}}]}}},"
    " \"template/ml/big\": {\"kind\": \"ResourceClaimTemplate\", \"spec\": {\"spec\": {\"devices\": {\"requests\": [{\"name\": \"gpu\", \"deviceClassName\": \"gpu.gpuslice.io\", \"capacity\": {\"requests\": {\"compute\": \"10\", \"memory\": \"48Gi\"}}}]}}}},"
    " \"claim/ml/other\": {\"kind\": \"ResourceClaim\", \"spec\": {\"devices\": {\"requests\": [{\"name\": \"gpu\", \"exactly\": {\"deviceClassName\": \"gpu.nvidia.com\"}}]}}}}";

static json_t *dra_lookup(void *ctx, const char *kind, const char *ns,
                          const char *name)
{
	char key[256];
	json_t *o;

	snprintf(key, sizeof(key), "%s/%s/%s", kind, ns, name);
	o = json_object_get((json_t *)ctx, key);
	return o ? json_incref(o) : NULL;
}

/* Filter for a pod with no container GPU request and `claims` (the
 * spec.resourceClaims entries); the passing node names, comma-joined. */
static void dra_filter(const struct gs_ext_state *st, json_t *db,
                       const char *claims, int want_status, char *ok_out,
                       size_t n)
{
	char body[2048];
	int status = 0;
	char *out;
	json_t *r, *v;
	size_t i, off = 0;

	snprintf(body, sizeof(body),
	         "{\"Pod\": {\"metadata\": {\"name\": \"p\", \"namespace\": \"ml\"}, \"spec\": {\"containers\": [{\"name\": \"main\", \"resources\": {\"requests\": {\"cpu\": \"1\"}}}], \"resourceClaims\": %s}}, \"Nodes\": null, \"NodeNames\": [\"node-a\", \"node-b\", \"node-c\"]}",
	         claims);
	out = db ? gs_ext_handle_dra(st, dra_lookup, db, "filter", body,
	                             strlen(body), &status)
	         : gs_ext_handle(st, "filter", body, strlen(body), &status);
	assert_non_null(out);
	assert_int_equal(status, want_status);
	r = json_loads(out, 0, NULL);
	free(out);
	assert_non_null(r);
	ok_out[0] = '\0';
	json_array_foreach(json_object_get(r, "NodeNames"), i, v)
	off += (size_t)snprintf(ok_out + off, n - off, "%s%s", off ? "," : "",
	                        json_string_value(v));
	json_decref(r);
}

/*
 * A pod that gets its GPU through a DRA claim of gpuslice's classes counts
 * against the nodes' free GPUs like a gpu-milli request: 60 % compute and
 * 8 GiB is a 600-milli share (node-b has 500 at most); 48 GiB at 10 % is
 * 600 milli of an 80 GiB A100 but three 16 GiB T4s (node-c has one).
 * Another driver's claim is not counted; an unreadable claim is an error
 * reply, not a blind placement; without a lookup claims count nothing.
 */
static void dra_claims_count_against_free_gpus(void **unused)
{
	struct gs_ext_state *st = state();
	json_t *db = json_loads(claims_fixture, 0, NULL);
	char ok[256];

	(void)unused;
	assert_non_null(db);
	dra_filter(st, db, "[{\"name\": \"gpu\", \"resourceClaimName\": \"shared\"}]",
	           200, ok, sizeof(ok));
	assert_string_equal(ok, "node-a,node-c");
	dra_filter(st, db, "[{\"name\": \"gpu\", \"resourceClaimTemplateName\": \"big\"}]",
	           200, ok, sizeof(ok));
	assert_string_equal(ok, "node-a");
	dra_filter(st, db, "[{\"name\": \"gpu\", \"resourceClaimName\": \"other\"}]",
	           200, ok, sizeof(ok));
	assert_string_equal(ok, "node-a,node-b,node-c");
	dra_filter(st, db, "[{\"name\": \"gpu\", \"resourceClaimName\": \"missing\"}]",
	           503, ok, sizeof(ok));
	dra_filter(st, NULL, "[{\"name\": \"gpu\", \"resourceClaimName\": \"shared\"}]",
	           200, ok, sizeof(ok));
	assert_string_equal(ok, "node-a,node-b,node-c");
	json_decref(db);
	gs_ext_state_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(filter_drops_nodes_without_room_or_state),
	    cmocka_unit_test(prioritize_prefers_the_node_that_keeps_whole_gpus),
	    cmocka_unit_test(bad_bodies_and_verbs_get_error_replies),
	    cmocka_unit_test(live_doc_follows_the_daemons_answers),
	    cmocka_unit_test(demand_weights_score_like_counts),
	    cmocka_unit_test(filter_without_node_cache_answers_a_node_list),
	    cmocka_unit_test(url_prefix_path_reaches_the_verbs),
	    cmocka_unit_test(init_containers_count_as_the_scheduler_counts),
	    cmocka_unit_test(dra_claims_count_against_free_gpus),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
