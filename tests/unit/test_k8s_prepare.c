/*
 * test_k8s_prepare.c - a ResourceClaim to a slice plan (prepare.h), from
 * fixtures, without a cluster or a daemon: capacity becomes the memory cap
 * and compute share, opaque configs (class then claim, other drivers'
 * ignored) become priority/weight/mode, a MIG device becomes a MIG slice,
 * and every bad claim (UID, node, driver, device, capacity, config) is
 * refused with a message naming the cause.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/podcgroup.h"
#include "prepare.h"

#define UID "0b7c3f9e-1111-4a2b-9c3d-000000000001"
#define GIB (1024ull * 1024 * 1024)

static const char *GPUS =
    "{\"source\": \"sim\", \"gpus\": ["
    " {\"index\": 0, \"uuid\": \"GPU-a\", \"model\": \"H100-SXM5-80GB\","
    "  \"memory_bytes\": 85899345920, \"mig\": {\"capable\": true,"
    "  \"enabled\": false, \"instances\": []}},"
    " {\"index\": 1, \"uuid\": \"GPU-b\", \"model\": \"H100-SXM5-80GB\","
    "  \"memory_bytes\": 85899345920, \"mig\": {\"capable\": true,"
    "  \"enabled\": false, \"instances\": []}}]}";

/* A claim: uid, pool, device, consumedCapacity JSON, config JSON list. */
static json_t *claim(const char *uid, const char *driver, const char *pool,
                     const char *device, const char *cc, const char *config)
{
	char buf[4096];
	json_t *j;
	json_error_t je;

	snprintf(
	    buf, sizeof(buf),
	    "{\"metadata\": {\"namespace\": \"ns\", \"name\": \"c\","
	    " \"uid\": \"%s\"},"
	    " \"status\": {\"allocation\": {\"devices\": {"
	    "  \"results\": [{\"request\": \"gpu\", \"driver\": \"%s\","
	    "   \"pool\": \"%s\", \"device\": \"%s\","
	    "   \"shareID\": \"5e1d\", \"consumedCapacity\": %s}],"
	    "  \"config\": %s},"
	    " \"nodeSelector\": {\"nodeSelectorTerms\": [{\"matchFields\": ["
	    "  {\"key\": \"metadata.name\", \"operator\": \"In\","
	    "   \"values\": [\"node-a\"]}]}]}}}}",
	    uid, driver, pool, device, cc, config);
	j = json_loads(buf, 0, &je);
	if (j == NULL)
		fail_msg("fixture: %s", je.text);
	return j;
}

static json_t *gpus(void)
{
	return json_loads(GPUS, 0, NULL);
}

#define CFG(src, drv, params)                                                  \
	"{\"source\": \"" src                                                  \
	"\", \"requests\": [], \"opaque\": {\"driver\": \"" drv                \
	"\", \"parameters\": {\"apiVersion\": \"gpuslice.io/v1alpha1\","       \
	" \"kind\": \"SliceConfig\"" params "}}}"

static void
capacity_becomes_cap_and_share_and_configs_apply_in_order(void **state)
{
	json_t *c = claim(
	    UID, "gpuslice.io", "node-a", "gpu-1",
	    "{\"memory\": \"8Gi\", \"compute\": \"25\"}",
	    "[" CFG("FromClaim", "gpuslice.io",
	            ", \"priority\": \"low\"") "," CFG("FromClass",
	                                               "gpuslice.io",
	                                               ", \"priority\": "
	                                               "\"high\", \"weight\": "
	                                               "4") ", {\"source\": "
	                                                    "\"FromClaim\", "
	                                                    "\"opaque\": "
	                                                    "{\"driver\":"
	                                                    " \"gpu.nvidia."
	                                                    "com\", "
	                                                    "\"parameters\": "
	                                                    "{\"x\": 1}}}]");
	json_t *g = gpus();
	struct gs_kprep_plan p;
	struct gs_errbuf eb = {0};
	json_t *b;

	(void)state;
	assert_int_equal(
	    gs_kprep_plan(c, g, UID, "node-a", "gpuslice.io", &p, &eb), GS_OK);
	assert_string_equal(p.slice_name, "k8s-" UID);
	assert_true(p.spec.memory_bytes == 8 * GIB);
	assert_int_equal(p.spec.compute_pct, 25);
	/* The class says high, the claim (applied later) says low. */
	assert_int_equal(p.spec.priority, GS_PRIORITY_LOW);
	assert_int_equal(p.spec.weight, 4);
	assert_int_equal(p.spec.mode, GS_MODE_TIMESLICE);
	assert_int_equal(p.gpu_index, 1);
	assert_false(p.mig);
	assert_int_equal(p.n_results, 1);
	assert_string_equal(p.results[0].share_id, "5e1d");
	assert_string_equal(p.results[0].device, "gpu-1");
	b = p.body;
	assert_string_equal(json_string_value(json_object_get(b, "name")),
	                    "k8s-" UID);
	assert_true((uint64_t)json_integer_value(
	                json_object_get(b, "memory")) == 8 * GIB);
	assert_int_equal(json_integer_value(json_object_get(b, "compute")), 25);
	assert_int_equal(json_integer_value(json_object_get(b, "gpu")), 1);
	assert_string_equal(json_string_value(json_object_get(b, "mode")),
	                    "timeslice");
	assert_string_equal(json_string_value(json_object_get(b, "priority")),
	                    "low");
	gs_kprep_plan_fini(&p);
	json_decref(c);
	json_decref(g);
}

static void mig_device_becomes_a_mig_slice_of_its_profile(void **state)
{
	json_t *c = claim(
	    UID, "gpuslice.io", "node-a", "gpu-0-mig-1g-10gb-3", "{}",
	    "[" CFG("FromClaim", "gpuslice.io", ", \"mode\": \"mps\"") "]");
	json_t *g = gpus();
	struct gs_kprep_plan p;
	struct gs_errbuf eb = {0};

	(void)state;
	assert_int_equal(
	    gs_kprep_plan(c, g, UID, "node-a", "gpuslice.io", &p, &eb), GS_OK);
	assert_true(p.mig);
	assert_string_equal(p.mig_profile, "1g.10gb");
	assert_int_equal(p.mig_start, 3);
	assert_int_equal(p.spec.mode, GS_MODE_MIG_MPS);
	assert_int_equal(p.spec.compute_pct, 100);
	assert_true(p.spec.memory_bytes > 9 * GIB &&
	            p.spec.memory_bytes < 11 * GIB);
	assert_string_equal(
	    json_string_value(json_object_get(p.body, "mig-profile")),
	    "1g.10gb");
	/* The scheduler's placement goes to gpusliced. */
	assert_int_equal(
	    json_integer_value(json_object_get(p.body, "mig_start")), 3);
	gs_kprep_plan_fini(&p);
	json_decref(c);
	json_decref(g);
}

static void whole_device_without_consumed_capacity_gets_all_of_it(void **state)
{
	json_t *c = claim(UID, "gpuslice.io", "node-a", "gpu-0", "{}", "[]");
	json_t *g = gpus();
	struct gs_kprep_plan p;
	struct gs_errbuf eb = {0};

	(void)state;
	assert_int_equal(
	    gs_kprep_plan(c, g, UID, "node-a", "gpuslice.io", &p, &eb), GS_OK);
	assert_true(p.spec.memory_bytes == 80 * GIB);
	assert_int_equal(p.spec.compute_pct, 100);
	gs_kprep_plan_fini(&p);
	json_decref(c);
	json_decref(g);
}

static void compute_mode_share_goes_to_the_slice(void **state)
{
	json_t *c = claim(UID, "gpuslice.io", "node-a", "gpu-0",
	                  "{\"compute\": \"25\"}",
	                  "[" CFG("FromClaim", "gpuslice.io",
	                          ", \"computeMode\": \"share\"") "]");
	json_t *g = gpus();
	struct gs_kprep_plan p;
	struct gs_errbuf eb = {0};

	(void)state;
	assert_int_equal(
	    gs_kprep_plan(c, g, UID, "node-a", "gpuslice.io", &p, &eb), GS_OK);
	assert_int_equal(p.spec.compute_mode, GS_COMPUTE_SHARE);
	assert_string_equal(
	    json_string_value(json_object_get(p.body, "compute_mode")),
	    "share");
	gs_kprep_plan_fini(&p);
	json_decref(c);
	json_decref(g);
}

static void swap_never_from_the_config_goes_to_the_slice(void **state)
{
	json_t *c = claim(UID, "gpuslice.io", "node-a", "gpu-0",
	                  "{\"compute\": \"25\"}",
	                  "[" CFG("FromClaim", "gpuslice.io",
	                          ", \"swap\": \"never\"") "]");
	json_t *g = gpus();
	struct gs_kprep_plan p;
	struct gs_errbuf eb = {0};

	(void)state;
	assert_int_equal(
	    gs_kprep_plan(c, g, UID, "node-a", "gpuslice.io", &p, &eb), GS_OK);
	assert_int_equal(p.spec.swap, GS_SWAP_NEVER);
	assert_string_equal(json_string_value(json_object_get(p.body, "swap")), "never");
	gs_kprep_plan_fini(&p);
	json_decref(c);
	json_decref(g);
}

static void bad_claims_are_refused_with_the_cause(void **state)
{
	static const struct {
		const char *uid, *driver, *pool, *device, *cc, *config, *node;
		gs_err err;
		const char *msg;
	} rows[] = {
	    {"other-uid", "gpuslice.io", "node-a", "gpu-0", "{}", "[]",
	     "node-a", GS_ERR_INVALID,
	     "has UID " UID ", the kubelet asked for other-uid"},
	    {UID, "gpu.nvidia.com", "node-a", "gpu-0", "{}", "[]", "node-a",
	     GS_ERR_INVALID, "allocates no device of driver gpuslice.io"},
	    {UID, "gpuslice.io", "node-b", "gpu-0", "{}", "[]", "node-a",
	     GS_ERR_INVALID, "is in pool node-b, not on this node node-a"},
	    {UID, "gpuslice.io", "node-b", "gpu-0", "{}", "[]", "node-b",
	     GS_ERR_INVALID, "nodeSelector does not select this node node-b"},
	    {UID, "gpuslice.io", "node-a", "gpu-7", "{}", "[]", "node-a",
	     GS_ERR_NOT_FOUND, "device gpu-7 is not on this node"},
	    {UID, "gpuslice.io", "node-a", "tpu-0", "{}", "[]", "node-a",
	     GS_ERR_NOT_FOUND, "unknown device tpu-0"},
	    {UID, "gpuslice.io", "node-a", "gpu-0-mig-1g-10gb-7", "{}", "[]",
	     "node-a", GS_ERR_NOT_FOUND, "has no MIG placement 1g.10gb@7"},
	    {UID, "gpuslice.io", "node-a", "gpu-0", "{\"memory\": \"100Gi\"}",
	     "[]", "node-a", GS_ERR_RANGE,
	     "consumedCapacity.memory 100Gi is more than device gpu-0 has"},
	    {UID, "gpuslice.io", "node-a", "gpu-0", "{\"compute\": \"101\"}",
	     "[]", "node-a", GS_ERR_RANGE,
	     "consumedCapacity.compute 101 is outside 1..100"},
	    {UID, "gpuslice.io", "node-a", "gpu-0", "{\"compute\": \"0.5\"}",
	     "[]", "node-a", GS_ERR_RANGE,
	     "consumedCapacity.compute: '0.5' is not a whole number"},
	    {UID, "gpuslice.io", "node-a", "gpu-0", "{\"memory\": \"8 GB\"}",
	     "[]", "node-a", GS_ERR_PARSE,
	     "consumedCapacity.memory: quantity '8 GB'"},
	    {UID, "gpuslice.io", "node-a", "gpu-0", "{}",
	     "[" CFG("FromClaim", "gpuslice.io", ", \"weight\": 0") "]",
	     "node-a", GS_ERR_INVALID,
	     "claim config[0] (opaque.parameters): SliceConfig field 'weight' "
	     "must be an integer 1..1000"},
	    {UID, "gpuslice.io", "node-a", "gpu-0", "{}",
	     "[" CFG("FromClaim", "gpuslice.io",
	             ", \"isolation\": \"hard\"") "]",
	     "node-a", GS_ERR_INVALID, "SliceConfig does not fit device gpu-0"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *c = claim(UID, rows[i].driver, rows[i].pool,
		                  rows[i].device, rows[i].cc, rows[i].config);
		json_t *g = gpus();
		struct gs_kprep_plan p;
		struct gs_errbuf eb = {0};
		gs_err err;

		err = gs_kprep_plan(c, g, rows[i].uid, rows[i].node,
		                    "gpuslice.io", &p, &eb);
		if (err != rows[i].err || strstr(eb.msg, rows[i].msg) == NULL)
			fail_msg("row %zu: %s (%s), want %s with '%s'", i,
			         gs_err_name(err), eb.msg,
			         gs_err_name(rows[i].err), rows[i].msg);
		assert_null(p.body);
		assert_null(p.results);
		json_decref(c);
		json_decref(g);
	}
}

static void unallocated_claim_and_bad_uid_are_refused(void **state)
{
	json_t *c = json_loads(
	    "{\"metadata\": {\"uid\": \"" UID "\"}, \"status\": {}}", 0, NULL);
	json_t *g = gpus();
	struct gs_kprep_plan p;
	struct gs_errbuf eb = {0};
	char name[64];

	(void)state;
	assert_int_equal(
	    gs_kprep_plan(c, g, UID, "node-a", "gpuslice.io", &p, &eb),
	    GS_ERR_INVALID);
	assert_non_null(strstr(eb.msg, "no status.allocation"));
	memset(&eb, 0, sizeof(eb));
	assert_int_equal(gs_kprep_slice_name("a/b", name, sizeof(name), &eb),
	                 GS_ERR_INVALID);
	assert_int_equal(gs_kprep_slice_name(UID, name, sizeof(name), &eb),
	                 GS_OK);
	assert_string_equal(name, "k8s-" UID);
	json_decref(c);
	json_decref(g);
}

/* reservedFor with `n` pods: pod-<i>, uid 00000000-0000-4000-8000-<i>. */
static void reserve_for(json_t *c, int n)
{
	json_t *rf = json_array();

	for (int i = 0; i < n; i++) {
		char name[16], uid[40];

		snprintf(name, sizeof(name), "pod-%d", i);
		snprintf(uid, sizeof(uid), "00000000-0000-4000-8000-%012d", i);
		json_array_append_new(rf, json_pack("{s:s, s:s, s:s}",
		                                    "resource", "pods", "name",
		                                    name, "uid", uid));
	}
	json_object_set_new(json_object_get(c, "status"), "reservedFor", rf);
}

static void the_slice_labels_carry_the_pods_uids_for_cgroup_matching(
    void **state)
{
	json_t *c = claim(UID, "gpuslice.io", "node-a", "gpu-1",
	                  "{\"memory\": \"8Gi\"}", "[]");
	json_t *g = gpus();
	struct gs_kprep_plan p;
	json_t *labels;

	(void)state;
	reserve_for(c, 2);
	assert_int_equal(
	    gs_kprep_plan(c, g, UID, "node-a", "gpuslice.io", &p, NULL), GS_OK);
	labels = json_object_get(p.body, "labels");
	assert_string_equal(
	    json_string_value(json_object_get(labels, "k8s_pod_uid")),
	    "00000000-0000-4000-8000-000000000000,"
	    "00000000-0000-4000-8000-000000000001");
	assert_string_equal(
	    json_string_value(json_object_get(labels, "k8s_pod")),
	    "pod-0,pod-1");
	assert_null(json_object_get(labels, "k8s_pod_uid_more"));
	gs_kprep_plan_fini(&p);

	/* Six 36-byte UIDs fit in a 253-byte value; the other two are
	 * counted, so the list is never taken for whole. */
	reserve_for(c, 8);
	assert_int_equal(
	    gs_kprep_plan(c, g, UID, "node-a", "gpuslice.io", &p, NULL), GS_OK);
	labels = json_object_get(p.body, "labels");
	assert_int_equal(
	    strlen(json_string_value(json_object_get(labels, "k8s_pod_uid"))),
	    6 * 36 + 5);
	assert_string_equal(
	    json_string_value(json_object_get(labels, "k8s_pod_uid_more")),
	    "2");
	gs_kprep_plan_fini(&p);
	json_decref(c);
	json_decref(g);
}

static void the_consumers_file_names_every_pod_of_the_claim(void **state)
{
	json_t *c = claim(UID, "gpuslice.io", "node-a", "gpu-1",
	                  "{\"memory\": \"8Gi\"}", "[]");
	json_t *rf;
	struct gs_errbuf eb = {0};
	char *text = NULL;
	size_t len = 0;
	int n = -1;

	(void)state;
	/* Nine pods: past the six a label holds, all in the file. */
	reserve_for(c, 9);
	rf = json_object_get(json_object_get(c, "status"), "reservedFor");
	/* Another resource than a pod, and a pod named twice (case aside):
	 * left out, and named once. */
	json_array_append_new(rf, json_pack("{s:s, s:s, s:s}", "resource",
	                                    "jobs", "name", "j", "uid", "j1"));
	json_array_append_new(
	    rf, json_pack("{s:s, s:s, s:s}", "resource", "pods", "name",
	                  "pod-0", "uid", "00000000-0000-4000-8000-000000000000"));
	assert_int_equal(gs_kprep_consumers(c, &text, &len, &eb), GS_OK);
	assert_int_equal(gs_podset_check(text, len, &n, &eb), GS_OK);
	assert_int_equal(n, 9);
	assert_true(
	    gs_podset_has(text, len, "00000000-0000-4000-8000-000000000008"));
	assert_false(gs_podset_has(text, len, "j1"));
	free(text);

	/* A UID a file cannot hold: refused, with the entry named. */
	json_array_append_new(rf, json_pack("{s:s, s:s, s:s}", "resource",
	                                    "pods", "name", "x", "uid",
	                                    "a\nb"));
	text = NULL;
	assert_int_equal(gs_kprep_consumers(c, &text, &len, &eb),
	                 GS_ERR_INVALID);
	assert_null(text);
	assert_non_null(strstr(eb.msg, "reservedFor[11].uid"));

	/* More pods than a file holds: refused, not cut short. */
	reserve_for(c, GS_K8S_PODS_MAX + 1);
	eb = (struct gs_errbuf){0};
	assert_int_equal(gs_kprep_consumers(c, &text, &len, &eb),
	                 GS_ERR_RANGE);
	assert_non_null(strstr(eb.msg, "more than 1024 pods"));

	/* No reservedFor: a file naming no pod. */
	json_object_del(json_object_get(c, "status"), "reservedFor");
	assert_int_equal(gs_kprep_consumers(c, &text, &len, &eb), GS_OK);
	assert_int_equal(gs_podset_check(text, len, &n, &eb), GS_OK);
	assert_int_equal(n, 0);
	free(text);
	json_decref(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        capacity_becomes_cap_and_share_and_configs_apply_in_order),
	    cmocka_unit_test(mig_device_becomes_a_mig_slice_of_its_profile),
	    cmocka_unit_test(
	        whole_device_without_consumed_capacity_gets_all_of_it),
	    cmocka_unit_test(compute_mode_share_goes_to_the_slice),
	    cmocka_unit_test(swap_never_from_the_config_goes_to_the_slice),
	    cmocka_unit_test(bad_claims_are_refused_with_the_cause),
	    cmocka_unit_test(unallocated_claim_and_bad_uid_are_refused),
	    cmocka_unit_test(
	        the_slice_labels_carry_the_pods_uids_for_cgroup_matching),
	    cmocka_unit_test(the_consumers_file_names_every_pod_of_the_claim),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
