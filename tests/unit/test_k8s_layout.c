/*
 * test_k8s_layout.c - what the publisher writes for each API server and
 * when it writes: the semantic comparison of stored and wanted slices
 * (slicecmp.c: server-set timeAdded, canonical quantities, defaults), the
 * device model's layouts (devmodel.c: partitions, 1.34's inline counter
 * sets, no MIG placements without partitionable devices but a MIG-mode
 * GPU's existing instances as plain devices, withdrawal without taints)
 * and a claim of several partitions becoming one slice (prepare.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "devmodel.h"
#include "driverfiles.h"
#include "prepare.h"
#include "slicecmp.h"

static json_t *parse(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	if (j == NULL)
		fail_msg("fixture: %s: %s", je.text, text);
	return j;
}

static bool same(const char *want, const char *have, char *where)
{
	json_t *w = parse(want), *h = parse(have);
	bool r = gs_kslice_same(w, h, where, 128);
	json_decref(w);
	json_decref(h);
	return r;
}

static void slicecmp_ignores_what_the_server_sets_and_canonical_forms(
    void **state)
{
	char where[128];
	(void)state;
	/* timeAdded set by the server. */
	assert_true(same(
	    "{\"devices\":[{\"name\":\"gpu-0\",\"taints\":[{\"key\":\"k\",\"effect\":\"NoSchedule\"}]}]}",
	    "{\"devices\":[{\"name\":\"gpu-0\",\"taints\":[{\"key\":\"k\",\"effect\":\"NoSchedule\",\"timeAdded\":\"2026-11-28T07:00:00Z\"}]}]}",
	    where));
	/* Canonical quantities. */
	assert_true(same("{\"v\":\"1048576\"}", "{\"v\":\"1Mi\"}", where));
	assert_true(same("{\"v\":\"1000\"}", "{\"v\":\"1k\"}", where));
	assert_true(same("{\"v\":\"0.5\"}", "{\"v\":\"500m\"}", where));
	/* Defaults the server writes or omits. */
	assert_true(same("{\"a\":1}", "{\"a\":1,\"b\":false,\"c\":[]}", where));
	assert_true(same("{\"a\":1,\"t\":[]}", "{\"a\":1}", where));
}

static void slicecmp_finds_real_differences_and_says_where(void **state)
{
	char where[128];
	(void)state;
	assert_false(same("{\"v\":\"1Mi\"}", "{\"v\":\"1M\"}", where));
	assert_string_equal(where, "v");
	assert_false(same("{\"d\":[{\"n\":\"a\",\"t\":[{\"key\":\"k\"}]}]}",
	                  "{\"d\":[{\"n\":\"a\"}]}", where));
	assert_string_equal(where, "d[0].t");
	assert_false(same("{\"a\":1}", "{\"a\":1,\"extra\":\"x\"}", where));
	assert_string_equal(where, "extra");
	assert_false(same("{\"d\":[1,2]}", "{\"d\":[1]}", where));
	assert_false(same("{\"s\":\"gpu\"}", "{\"s\":\"mig\"}", where));
}

static json_t *h100s(int n, bool mig_on)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++) {
		char uuid[48];
		snprintf(uuid, sizeof(uuid), "GPU-%d", i);
		json_array_append_new(
		    a, json_pack("{s:i,s:s,s:s,s:s,s:I,s:{s:b,s:b,s:[]}}",
		                 "index", i, "uuid", uuid, "name",
		                 "NVIDIA H100 80GB HBM3", "model",
		                 "H100-SXM5-80GB", "memory_bytes",
		                 (json_int_t)81559 * 1048576, "mig", "capable",
		                 1, "enabled", mig_on, "instances"));
	}
	return json_pack("{s:s,s:o}", "driver", "580.65.06", "gpus", a);
}

static json_t *build(const json_t *gpus, const json_t *health,
                     const struct gs_kdev_layout *l)
{
	json_t *out = NULL;
	struct gs_errbuf eb = {0};
	gs_err err = gs_kdev_build_slices_for(gpus, health, "node-a",
	                                      "gpuslice.io", 1, l, &out, &eb);
	if (err)
		fail_msg("build: %s", gs_errbuf_msg(&eb, err));
	return out;
}

/* Counts devices whose name contains `part` over all slices. */
static int count_devices(const json_t *slices, const char *part)
{
	json_t *s, *d;
	size_t i, k;
	int n = 0;
	json_array_foreach(slices, i, s)
	{
		json_array_foreach(
		    json_object_get(json_object_get(s, "spec"), "devices"), k,
		    d)
		{
			if (strstr(json_string_value(json_object_get(d, "name")),
			           part))
				n++;
		}
	}
	return n;
}

static void without_consumable_capacity_a_gpu_is_k_partitions(void **state)
{
	struct gs_kdev_layout l;
	json_t *g = h100s(2, false), *s;
	(void)state;

	gs_kdev_layout_default(&l);
	l.consumable = false;
	l.partitionable = false;
	l.partitions = 4;
	s = build(g, NULL, &l);
	assert_int_equal(count_devices(s, "-part-"), 8);
	assert_int_equal(count_devices(s, "-mig-"), 0);
	json_t *d = json_array_get(
	    json_object_get(json_object_get(json_array_get(s, 0), "spec"),
	                    "devices"),
	    1);
	assert_string_equal(json_string_value(json_object_get(d, "name")),
	                    "gpu-0-part-1-of-4");
	assert_null(json_object_get(d, "allowMultipleAllocations"));
	/* 81559 MiB / 4, floored to a MiB; 25 % compute. */
	assert_string_equal(
	    json_string_value(json_object_get(
	        json_object_get(json_object_get(d, "capacity"), "memory"),
	        "value")),
	    "21379416064");
	assert_null(json_object_get(json_object_get(json_array_get(s, 0), "spec"),
	                            "sharedCounters"));
	json_decref(s);
	json_decref(g);
}

static void partitions_beside_mig_consume_a_share_of_every_memory_slice(
    void **state)
{
	struct gs_kdev_layout l;
	json_t *g = h100s(1, false), *s, *d = NULL, *x;
	size_t i;
	(void)state;

	gs_kdev_layout_default(&l);
	l.consumable = false;
	s = build(g, NULL, &l);
	json_array_foreach(
	    json_object_get(json_object_get(json_array_get(s, 0), "spec"),
	                    "devices"),
	    i, x)
	{
		if (strcmp(json_string_value(json_object_get(x, "name")),
		           "gpu-0-part-0-of-4") == 0)
			d = x;
	}
	assert_non_null(d);
	json_t *c = json_object_get(
	    json_array_get(json_object_get(d, "consumesCounters"), 0),
	    "counters");
	assert_int_equal(json_object_size(c), 8); /* H100: 8 memory slices */
	assert_string_equal(json_string_value(json_object_get(
	                        json_object_get(c, "memory-slice-7"), "value")),
	                    "250m");
	assert_true(count_devices(s, "-mig-") > 0);
	json_decref(s);
	json_decref(g);
}

static void on_134_counter_sets_sit_in_the_slice_of_their_devices(
    void **state)
{
	struct gs_kdev_layout l;
	json_t *g = h100s(2, true), *s, *x;
	size_t i;
	(void)state;

	gs_kdev_layout_default(&l);
	l.counters_inline = true;
	l.shared_no_counters = true;
	s = build(g, NULL, &l);
	assert_int_equal(json_array_size(s), 2);
	json_array_foreach(s, i, x)
	{
		json_t *spec = json_object_get(x, "spec");
		json_t *sets = json_object_get(spec, "sharedCounters");
		char set[32];
		assert_int_equal(json_array_size(sets), 1);
		snprintf(set, sizeof(set), "gpu-%zu", i);
		assert_string_equal(json_string_value(json_object_get(
		                        json_array_get(sets, 0), "name")),
		                    set);
		assert_true(json_array_size(json_object_get(spec, "devices")) <=
		            64);
	}
	/* MIG on: placements, never the shareable whole GPU beside them. */
	assert_int_equal(count_devices(s, "-mig-") > 0, 1);
	assert_int_equal(count_devices(s, "gpu-0") ==
	                     count_devices(s, "gpu-0-mig-"),
	                 1);
	json_decref(s);
	json_decref(g);
}

static void without_taints_an_unhealthy_gpu_is_withdrawn(void **state)
{
	struct gs_kdev_layout l;
	json_t *g = h100s(2, false), *s;
	json_t *h = parse("{\"GPU-1\": {\"healthy\": false, \"reason\": \"xid-79\"}}");
	(void)state;

	gs_kdev_layout_default(&l);
	l.taints = false;
	s = build(g, h, &l);
	assert_int_equal(count_devices(s, "gpu-1"), 0);
	assert_true(count_devices(s, "gpu-0") > 0);
	json_decref(s);
	l.taints = true;
	s = build(g, h, &l);
	assert_true(count_devices(s, "gpu-1") > 0);
	json_decref(s);
	json_decref(h);
	json_decref(g);
}

static void partition_names_round_trip_and_bad_ones_are_refused(void **state)
{
	struct gs_kdev_name n = {
	    .kind = GS_KDEV_PART, .gpu_index = 3, .start = 2, .parts = 4};
	struct gs_kdev_name back;
	char buf[64];
	const char *bad[] = {"gpu-0-part-4-of-4", "gpu-0-part-1", "gpu-0-part-x-of-4",
	                     "gpu-0-part-0-of-33", "gpu-0-part-0-of-0"};
	(void)state;

	gs_kdev_format_name(&n, buf, sizeof(buf));
	assert_string_equal(buf, "gpu-3-part-2-of-4");
	assert_int_equal(gs_kdev_parse_name(buf, &back, NULL), GS_OK);
	assert_int_equal(back.kind, GS_KDEV_PART);
	assert_int_equal(back.gpu_index, 3);
	assert_int_equal(back.start, 2);
	assert_int_equal(back.parts, 4);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(gs_kdev_parse_name(bad[i], &back, NULL),
		                 GS_ERR_PARSE);
}

static json_t *claim_of(const char *results)
{
	char buf[2048];
	snprintf(buf, sizeof(buf),
	         "{\"metadata\": {\"namespace\": \"ns\", \"name\": \"c\", \"uid\": \"u-1\"},"
	         " \"status\": {\"allocation\": {\"devices\": {\"results\": %s}}}}",
	         results);
	return parse(buf);
}

static void a_claim_of_partitions_is_one_slice_of_their_sum(void **state)
{
	json_t *g = h100s(2, false), *c;
	struct gs_kprep_plan p;
	struct gs_errbuf eb = {0};
	(void)state;

	c = claim_of(
	    "[{\"request\": \"gpu\", \"driver\": \"gpuslice.io\", \"pool\": \"node-a\", \"device\": \"gpu-1-part-0-of-4\"},"
	    " {\"request\": \"gpu\", \"driver\": \"gpuslice.io\", \"pool\": \"node-a\", \"device\": \"gpu-1-part-3-of-4\"}]");
	assert_int_equal(gs_kprep_plan(c, g, "u-1", "node-a", "gpuslice.io",
	                               &p, &eb),
	                 GS_OK);
	assert_int_equal(p.gpu_index, 1);
	assert_int_equal(p.spec.memory_bytes, 2ull * (81559 / 4) * 1048576);
	assert_int_equal(p.spec.compute_pct, 50);
	assert_int_equal(p.n_results, 2);
	gs_kprep_plan_fini(&p);
	json_decref(c);

	/* Partitions of two GPUs, or one twice, are not one slice. */
	c = claim_of(
	    "[{\"request\": \"gpu\", \"driver\": \"gpuslice.io\", \"pool\": \"node-a\", \"device\": \"gpu-1-part-0-of-4\"},"
	    " {\"request\": \"gpu\", \"driver\": \"gpuslice.io\", \"pool\": \"node-a\", \"device\": \"gpu-0-part-0-of-4\"}]");
	memset(&eb, 0, sizeof(eb));
	assert_int_equal(gs_kprep_plan(c, g, "u-1", "node-a", "gpuslice.io",
	                               &p, &eb),
	                 GS_ERR_UNSUPPORTED);
	assert_non_null(strstr(eb.msg, "partitions of one GPU"));
	gs_kprep_plan_fini(&p);
	json_decref(c);
	c = claim_of(
	    "[{\"request\": \"gpu\", \"driver\": \"gpuslice.io\", \"pool\": \"node-a\", \"device\": \"gpu-1-part-0-of-4\"},"
	    " {\"request\": \"gpu\", \"driver\": \"gpuslice.io\", \"pool\": \"node-a\", \"device\": \"gpu-1-part-0-of-4\"}]");
	memset(&eb, 0, sizeof(eb));
	assert_int_equal(gs_kprep_plan(c, g, "u-1", "node-a", "gpuslice.io",
	                               &p, &eb),
	                 GS_ERR_INVALID);
	gs_kprep_plan_fini(&p);
	json_decref(c);
	json_decref(g);
}

static void driver_libraries_come_from_the_ldconfig_cache_like_nvidia_ctk(
    void **state)
{
	const char *text =
	    "1234 libs found in cache `/etc/ld.so.cache'\n"
	    "\tlibnvidia-ml.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1\n"
	    "\tlibnvidia-ml.so (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnvidia-ml.so\n"
	    "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
	    "\tlibcuda.so.1 (libc6) => /usr/lib/i386-linux-gnu/libcuda.so.1\n"
	    "\tlibnvidia-ptxjitcompiler.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.1\n"
	    "\tlibnvidia-glcore.so.580.65.06 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnvidia-glcore.so.580.65.06\n"
	    "\tlibc.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libc.so.6\n";
	struct gs_kdrv_files f = {0};
	(void)state;

	assert_int_equal(gs_kdrv_from_ldcache(text, &f, NULL), GS_OK);
	/* 64-bit compute libraries by soname; not the dev link, the
	 * 32-bit copy, graphics or libc. */
	assert_int_equal(f.n_libs, 3);
	assert_string_equal(f.libs[0],
	                    "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1");
	assert_string_equal(f.libs[1], "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
	assert_string_equal(
	    f.libs[2],
	    "/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.1");
	gs_kdrv_files_fini(&f);
}

/*
 * Partitionable devices off, GPU 0 in MIG mode with two GPU instances (one
 * with two compute instances): exactly those instances, as plain devices
 * (no counters), and nothing else of GPU 0; GPU 1 (MIG off) stays whole.
 * With consumable capacity off too, GPU 0 has no partitions either.
 */
static void without_partitionable_devices_existing_mig_instances_are_plain(
    void **state)
{
	struct gs_kdev_layout l;
	json_t *g = h100s(2, false), *s, *d, *x;
	json_t *g0 = json_array_get(json_object_get(g, "gpus"), 0);
	json_t *mig = json_object_get(g0, "mig");
	size_t i;
	int n = 0;
	(void)state;

	json_object_set_new(mig, "enabled", json_true());
	json_object_set_new(
	    mig, "instances",
	    json_pack("[{s:s,s:i,s:i,s:i},{s:s,s:i,s:i,s:i},{s:s,s:i,s:i,s:i}]",
	              "profile", "3g.40gb", "gi", 1, "ci", 0, "start", 4,
	              "profile", "1g.10gb", "gi", 2, "ci", 0, "start", 0,
	              "profile", "1g.10gb", "gi", 2, "ci", 1, "start", 0));
	for (int consumable = 1; consumable >= 0; consumable--) {
		gs_kdev_layout_default(&l);
		l.partitionable = false;
		l.consumable = consumable;
		s = build(g, NULL, &l);
		n = 0;
		json_array_foreach(s, i, x)
		{
			size_t k;
			assert_null(json_object_get(json_object_get(x, "spec"),
			                            "sharedCounters"));
			json_array_foreach(
			    json_object_get(json_object_get(x, "spec"), "devices"),
			    k, d)
			{
				const char *name = json_string_value(
				    json_object_get(d, "name"));
				assert_null(json_object_get(d, "consumesCounters"));
				if (strncmp(name, "gpu-0", 5) != 0)
					continue;
				n++;
				assert_true(strcmp(name, "gpu-0-mig-3g-40gb-4") == 0 ||
				            strcmp(name, "gpu-0-mig-1g-10gb-0") == 0);
			}
		}
		assert_int_equal(n, 2);
		assert_int_equal(count_devices(s, "gpu-1-mig-"), 0);
		assert_int_equal(count_devices(s, "gpu-1"),
		                 consumable ? 1 : l.partitions);
		json_decref(s);
	}
	json_decref(g);
}

/* Device `name`'s capacity `key` value and attribute `attr` (string or
 * NULL) in `slices`. */
static const char *cap_of(const json_t *slices, const char *name,
                          const char *key, const char **attr,
                          const char *attr_key)
{
	json_t *s, *d;
	size_t i, k;

	json_array_foreach(slices, i, s)
	{
		json_array_foreach(
		    json_object_get(json_object_get(s, "spec"), "devices"), k,
		    d)
		{
			if (strcmp(json_string_value(json_object_get(d, "name")),
			           name) != 0)
				continue;
			*attr = json_string_value(json_object_get(
			    json_object_get(json_object_get(d, "attributes"),
			                    attr_key),
			    "string"));
			return json_string_value(json_object_get(
			    json_object_get(json_object_get(d, "capacity"), key),
			    "value"));
		}
	}
	fail_msg("no device %s", name);
	return NULL;
}

/*
 * gpusliced's swap.oversubscribe 2: the shared GPU's memory capacity is
 * twice its memory (81559 MiB x 2), so the scheduler places claims on
 * what is promised; one claim still asks for at most the GPU's memory;
 * the ratio is an attribute. At 1 (or absent): the GPU's own memory, no
 * attribute.
 */
static void oversubscribed_memory_is_published_as_capacity(void **state)
{
	struct gs_kdev_layout l;
	json_t *g = h100s(1, false), *s, *d;
	const char *attr = NULL;
	(void)state;

	gs_kdev_layout_default(&l);
	s = build(g, NULL, &l);
	assert_string_equal(cap_of(s, "gpu-0", "memory", &attr,
	                           "memoryOversubscribe"),
	                    "85520809984");
	assert_null(attr);
	json_decref(s);
	json_object_set_new(g, "swap_oversubscribe", json_real(1.0));
	s = build(g, NULL, &l);
	assert_string_equal(cap_of(s, "gpu-0", "memory", &attr,
	                           "memoryOversubscribe"),
	                    "85520809984");
	assert_null(attr);
	json_decref(s);
	json_object_set_new(g, "swap_oversubscribe", json_real(2.0));
	s = build(g, NULL, &l);
	assert_string_equal(cap_of(s, "gpu-0", "memory", &attr,
	                           "memoryOversubscribe"),
	                    "171041619968");
	assert_string_equal(attr, "2");
	d = json_array_get(
	    json_object_get(json_object_get(json_array_get(s, 0), "spec"),
	                    "devices"),
	    0);
	assert_string_equal(
	    json_string_value(json_object_get(
	        json_object_get(json_object_get(json_object_get(
	                                            json_object_get(d, "capacity"),
	                                            "memory"),
	                                        "requestPolicy"),
	                        "validRange"),
	        "max")),
	    "85520809984");
	json_decref(s);
	json_decref(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        slicecmp_ignores_what_the_server_sets_and_canonical_forms),
	    cmocka_unit_test(slicecmp_finds_real_differences_and_says_where),
	    cmocka_unit_test(without_consumable_capacity_a_gpu_is_k_partitions),
	    cmocka_unit_test(
	        partitions_beside_mig_consume_a_share_of_every_memory_slice),
	    cmocka_unit_test(
	        on_134_counter_sets_sit_in_the_slice_of_their_devices),
	    cmocka_unit_test(without_taints_an_unhealthy_gpu_is_withdrawn),
	    cmocka_unit_test(
	        partition_names_round_trip_and_bad_ones_are_refused),
	    cmocka_unit_test(a_claim_of_partitions_is_one_slice_of_their_sum),
	    cmocka_unit_test(
	        driver_libraries_come_from_the_ldconfig_cache_like_nvidia_ctk),
	    cmocka_unit_test(
	        without_partitionable_devices_existing_mig_instances_are_plain),
	    cmocka_unit_test(oversubscribed_memory_is_published_as_capacity),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
