/*
 * test_kube_devmodel.c - the DRA device model (integrations/kubernetes/
 * devmodel.c): device names, what each catalog GPU becomes, counters,
 * taints, slice cutting. Schema validation of the same output runs in
 * tests/integration/k8s_api/devmodel_schema.sh (gs-kdev-dump + validate.py).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "devmodel.h"
#include "gs/catalog.h"

/* A /v1/gpus answer with `n` GPUs of `model` (MIG capable as asked). */
static json_t *gpus_of(const char *model, int n, bool capable)
{
	const struct gs_gpu_model *m = gs_catalog_find(model);
	json_t *a = json_array();

	for (int i = 0; i < n; i++) {
		char uuid[64];
		snprintf(uuid, sizeof(uuid),
		         "GPU-0000000%d-aaaa-bbbb-cccc-%012d", i, i);
		json_array_append_new(
		    a,
		    json_pack(
		        "{s:i,s:s,s:s,s:s,s:I,s:{s:b,s:b,s:[]}}", "index", i,
		        "uuid", uuid, "name", m ? m->nvml_name : "NVIDIA L4",
		        "model", model, "memory_bytes",
		        (json_int_t)(m ? m->memory_mib : 23034) * 1048576,
		        "mig", "capable", capable, "enabled", 0, "instances"));
	}
	return json_pack("{s:s,s:s,s:o}", "source", "sim", "driver",
	                 "580.65.06", "gpus", a);
}

static json_t *build(json_t *gpus, json_t *health)
{
	json_t *out = NULL;
	struct gs_errbuf eb = {0};
	gs_err err = gs_kdev_build_slices(gpus, health, "node-a", "gpuslice.io",
	                                  3, &out, &eb);
	if (err)
		fail_msg("build: %s", gs_errbuf_msg(&eb, err));
	return out;
}

/* Every device of every slice, in order. OUT: array (borrowed items). */
static json_t *all_devices(json_t *slices)
{
	json_t *a = json_array(), *s, *d;
	size_t i, k;
	json_array_foreach(slices, i, s)
	{
		json_array_foreach(
		    json_object_get(json_object_get(s, "spec"), "devices"), k,
		    d) json_array_append(a, d);
	}
	return a;
}

static json_t *counter_set(json_t *slices, const char *name)
{
	json_t *s, *c;
	size_t i, k;
	json_array_foreach(slices, i, s)
	{
		json_array_foreach(json_object_get(json_object_get(s, "spec"),
		                                   "sharedCounters"),
		                   k, c)
		{
			if (strcmp(
			        json_string_value(json_object_get(c, "name")),
			        name) == 0)
				return json_object_get(c, "counters");
		}
	}
	return NULL;
}

static json_t *find_device(json_t *devs, const char *name)
{
	json_t *d;
	size_t i;
	json_array_foreach(devs, i, d)
	{
		if (strcmp(json_string_value(json_object_get(d, "name")),
		           name) == 0)
			return d;
	}
	return NULL;
}

static long long qty(json_t *counters, const char *key)
{
	const char *v = json_string_value(
	    json_object_get(json_object_get(counters, key), "value"));
	return v ? atoll(v) : -1;
}

static void device_names_round_trip(void **state)
{
	static const struct {
		enum gs_kdev_kind kind;
		int gpu;
		const char *profile;
		int start;
		const char *name;
	} t[] = {
	    {GS_KDEV_GPU, 0, "", 0, "gpu-0"},
	    {GS_KDEV_GPU, 15, "", 0, "gpu-15"},
	    {GS_KDEV_MIG, 0, "1g.10gb", 6, "gpu-0-mig-1g-10gb-6"},
	    {GS_KDEV_MIG, 3, "1g.10gb+me", 2, "gpu-3-mig-1g-10gb-me-2"},
	    {GS_KDEV_MIG, 1, "7g.80gb", 0, "gpu-1-mig-7g-80gb-0"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct gs_kdev_name n = {.kind = t[i].kind,
		                         .gpu_index = t[i].gpu,
		                         .start = t[i].start},
		                    back;
		char buf[64];
		snprintf(n.profile, sizeof(n.profile), "%s", t[i].profile);
		gs_kdev_format_name(&n, buf, sizeof(buf));
		assert_string_equal(buf, t[i].name);
		assert_int_equal(gs_kdev_parse_name(buf, &back, NULL), GS_OK);
		assert_int_equal(back.kind, t[i].kind);
		assert_int_equal(back.gpu_index, t[i].gpu);
		if (t[i].kind == GS_KDEV_MIG) {
			assert_string_equal(back.profile, t[i].profile);
			assert_int_equal(back.start, t[i].start);
		}
	}
}

static void device_name_parser_rejects_foreign_names(void **state)
{
	static const char *bad[] = {"",
	                            "gpu",
	                            "gpu-",
	                            "gpu-x",
	                            "gpu-01",
	                            "nic-0",
	                            "gpu-0-mig-",
	                            "gpu-0-mig-1g-",
	                            "gpu-0-mig-1g10gb-0",
	                            "gpu-0-mig-1g-10gb-x",
	                            "gpu-0-mig-1g_10gb-0",
	                            "gpu-1234567"};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gs_kdev_name n;
		struct gs_errbuf eb = {0};
		if (gs_kdev_parse_name(bad[i], &n, &eb) != GS_ERR_PARSE)
			fail_msg("accepted '%s'", bad[i]);
		assert_true(eb.set);
	}
}

/* An H100 gives one shareable device and every MIG placement, consuming
 * a counter set that adds up. */
static void h100_gives_whole_gpu_and_every_mig_placement(void **state)
{
	const struct gs_gpu_model *m = gs_catalog_find("H100-SXM5-80GB");
	json_t *g = gpus_of("H100-SXM5-80GB", 1, true);
	json_t *sl = build(g, NULL), *devs = all_devices(sl), *d;
	int placements = 0;
	size_t i;
	(void)state;

	assert_non_null(m);
	for (int p = 0; p < m->n_profiles; p++)
		placements += m->profiles[p].n_placements;
	assert_int_equal(json_array_size(devs), 1 + placements);
	d = find_device(devs, "gpu-0");
	assert_non_null(d);
	assert_true(
	    json_is_true(json_object_get(d, "allowMultipleAllocations")));
	json_t *cap = json_object_get(d, "capacity");
	json_t *mem = json_object_get(cap, "memory");
	assert_string_equal(json_string_value(json_object_get(mem, "value")),
	                    "85520809984");
	json_t *rng = json_object_get(json_object_get(mem, "requestPolicy"),
	                              "validRange");
	assert_non_null(rng);
	assert_string_equal(json_string_value(json_object_get(rng, "step")),
	                    "1048576");
	json_t *comp = json_object_get(cap, "compute");
	assert_string_equal(json_string_value(json_object_get(comp, "value")),
	                    "100");
	assert_non_null(
	    json_object_get(json_object_get(comp, "requestPolicy"), "default"));
	/* Attributes the issue lists. */
	json_t *at = json_object_get(d, "attributes");
	const char *keys[] = {"model",         "uuid",
	                      "architecture",  "cudaComputeCapability",
	                      "driverVersion", "migCapable"};
	for (size_t k = 0; k < 6; k++)
		if (!json_object_get(at, keys[k]))
			fail_msg("attribute %s missing", keys[k]);
	assert_string_equal(
	    json_string_value(json_object_get(
	        json_object_get(at, "driverVersion"), "version")),
	    "580.65.6");
	assert_string_equal(
	    json_string_value(json_object_get(
	        json_object_get(at, "cudaComputeCapability"), "version")),
	    "9.0.0");

	/* Every MIG device names a placement the catalog allows. */
	json_array_foreach(devs, i, d)
	{
		struct gs_kdev_name n;
		const json_t *gpu;
		const char *name =
		    json_string_value(json_object_get(d, "name"));
		assert_int_equal(gs_kdev_parse_name(name, &n, NULL), GS_OK);
		assert_int_equal(gs_kdev_lookup(g, &n, &gpu, NULL), GS_OK);
		if (n.kind == GS_KDEV_MIG) {
			const struct gs_mig_profile *p =
			    gs_catalog_profile(m, n.profile);
			assert_non_null(p);
			assert_true(gs_catalog_placement_valid(p, n.start));
		}
	}

	/* The counters: the whole GPU takes exactly the whole set; each
	 * device fits alone; two overlapping placements never fit together;
	 * a full layout of non-overlapping ones does. */
	json_t *set = counter_set(sl, "gpu-0");
	assert_non_null(set);
	json_t *whole = json_object_get(
	    json_array_get(
	        json_object_get(find_device(devs, "gpu-0"), "consumesCounters"),
	        0),
	    "counters");
	assert_true(json_equal(whole, set));
	const char *layouts[][8] = {
	    {"gpu-0-mig-7g-80gb-0"},
	    {"gpu-0-mig-4g-40gb-0", "gpu-0-mig-3g-40gb-4"},
	    {"gpu-0-mig-2g-20gb-0", "gpu-0-mig-2g-20gb-2",
	     "gpu-0-mig-2g-20gb-4", "gpu-0-mig-1g-10gb-6"},
	    {"gpu-0-mig-1g-10gb-me-0", "gpu-0-mig-1g-10gb-1",
	     "gpu-0-mig-1g-10gb-2", "gpu-0-mig-1g-10gb-3",
	     "gpu-0-mig-1g-10gb-4", "gpu-0-mig-1g-10gb-5",
	     "gpu-0-mig-1g-10gb-6"},
	};
	for (size_t l = 0; l < 4; l++) {
		const char *key;
		json_t *val;
		json_object_foreach(set, key, val)
		{
			long long used = 0;
			for (size_t k = 0; k < 8 && layouts[l][k]; k++) {
				json_t *dv = find_device(devs, layouts[l][k]);
				if (!dv)
					fail_msg("no device %s", layouts[l][k]);
				json_t *cc = json_object_get(
				    json_array_get(
				        json_object_get(dv, "consumesCounters"),
				        0),
				    "counters");
				if (json_object_get(cc, key))
					used += qty(cc, key);
			}
			if (used > qty(set, key))
				fail_msg(
				    "layout %zu uses %lld of %s (have %lld)", l,
				    used, key, qty(set, key));
		}
	}
	/* Overlap: 4g@0 and 1g@2 share memory-slice-2. */
	json_t *a = json_object_get(
	    json_array_get(
	        json_object_get(find_device(devs, "gpu-0-mig-4g-40gb-0"),
	                        "consumesCounters"),
	        0),
	    "counters");
	json_t *b = json_object_get(
	    json_array_get(
	        json_object_get(find_device(devs, "gpu-0-mig-1g-10gb-2"),
	                        "consumesCounters"),
	        0),
	    "counters");
	assert_int_equal(qty(a, "memory-slice-2") + qty(b, "memory-slice-2"),
	                 2);
	assert_int_equal(qty(set, "memory-slice-2"), 1);
	/* Two media-extension instances never fit. */
	assert_int_equal(qty(set, "media-extensions"), 1);
	json_decref(devs);
	json_decref(sl);
	json_decref(g);
}

/* Every MIG-capable catalog model: 1 + placements devices per GPU, one
 * counter set each, every device's consumption within its set. */
static void every_catalog_model_gives_its_placements(void **state)
{
	(void)state;
	for (int i = 0; i < gs_catalog_count(); i++) {
		const struct gs_gpu_model *m = gs_catalog_get(i);
		json_t *g = gpus_of(m->name, 2, true);
		json_t *sl = build(g, NULL), *devs = all_devices(sl), *d;
		int placements = 0;
		size_t k;
		for (int p = 0; p < m->n_profiles; p++)
			placements += m->profiles[p].n_placements;
		if ((int)json_array_size(devs) != 2 * (1 + placements))
			fail_msg("%s: %zu devices, want %d", m->name,
			         json_array_size(devs), 2 * (1 + placements));
		json_array_foreach(devs, k, d)
		{
			json_t *cc = json_array_get(
			    json_object_get(d, "consumesCounters"), 0);
			json_t *set =
			    counter_set(sl, json_string_value(json_object_get(
			                        cc, "counterSet")));
			const char *key;
			json_t *val;
			assert_non_null(set);
			json_object_foreach(json_object_get(cc, "counters"),
			                    key, val)
			{
				if (qty(json_object_get(cc, "counters"), key) >
				    qty(set, key))
					fail_msg(
					    "%s %s: %s over the set", m->name,
					    json_string_value(
					        json_object_get(d, "name")),
					    key);
			}
		}
		json_decref(devs);
		json_decref(sl);
		json_decref(g);
	}
}

static void gpu_without_mig_gives_no_partitions(void **state)
{
	(void)state;
	const char *models[] = {"H100-SXM5-80GB", "L4-unknown-model"};
	for (size_t i = 0; i < 2; i++) {
		json_t *g = gpus_of(models[i], 1, i == 1);
		json_t *sl = build(g, NULL), *devs = all_devices(sl);
		assert_int_equal(json_array_size(devs), 1);
		assert_null(json_object_get(json_array_get(devs, 0),
		                            "consumesCounters"));
		assert_null(counter_set(sl, "gpu-0"));
		assert_int_equal(json_array_size(sl), 1);
		json_decref(devs);
		json_decref(sl);
		json_decref(g);
	}
}

static void unhealthy_gpu_devices_carry_a_taint(void **state)
{
	json_t *g = gpus_of("A100-SXM4-40GB", 2, true);
	const char *bad = json_string_value(json_object_get(
	    json_array_get(json_object_get(g, "gpus"), 1), "uuid"));
	json_t *h = json_pack("{s:{s:b,s:s}}", bad, "healthy", 0, "reason",
	                      "Xid 79: fell off the bus");
	json_t *sl = build(g, h), *devs = all_devices(sl), *d;
	size_t i;
	int tainted = 0;
	(void)state;
	json_array_foreach(devs, i, d)
	{
		struct gs_kdev_name n;
		json_t *t = json_object_get(d, "taints");
		assert_int_equal(
		    gs_kdev_parse_name(
		        json_string_value(json_object_get(d, "name")), &n,
		        NULL),
		    GS_OK);
		if (n.gpu_index == 1) {
			assert_int_equal(json_array_size(t), 1);
			json_t *t0 = json_array_get(t, 0);
			assert_string_equal(
			    json_string_value(json_object_get(t0, "key")),
			    "gpuslice.io/unhealthy");
			assert_string_equal(
			    json_string_value(json_object_get(t0, "effect")),
			    "NoSchedule");
			assert_string_equal(
			    json_string_value(json_object_get(t0, "value")),
			    "Xid-79--fell-off-the-bus");
			tainted++;
		} else {
			assert_null(t);
		}
	}
	assert_true(tainted > 1);
	json_decref(devs);
	json_decref(sl);
	json_decref(h);
	json_decref(g);
}

/* 8 H100s: 208 devices cut into slices of <= 64, counter sets in their own
 * slice, every slice with the pool's count and generation. */
static void eight_gpus_are_cut_into_slices_within_api_limits(void **state)
{
	json_t *g = gpus_of("H100-SXM5-80GB", 8, true);
	json_t *sl = build(g, NULL), *s;
	size_t i, nd = 0;
	(void)state;
	json_array_foreach(sl, i, s)
	{
		json_t *spec = json_object_get(s, "spec");
		json_t *devs = json_object_get(spec, "devices");
		json_t *sets = json_object_get(spec, "sharedCounters");
		char want[64];
		snprintf(want, sizeof(want), "node-a-gpuslice.io-%zu", i);
		assert_string_equal(
		    json_string_value(json_object_get(
		        json_object_get(s, "metadata"), "name")),
		    want);
		assert_false(devs && sets);
		assert_true(json_array_size(devs) <= 64);
		assert_true(json_array_size(sets) <= 8);
		nd += json_array_size(devs);
		json_t *pool = json_object_get(spec, "pool");
		assert_int_equal(
		    json_integer_value(json_object_get(pool, "generation")), 3);
		assert_int_equal(json_integer_value(json_object_get(
		                     pool, "resourceSliceCount")),
		                 (long long)json_array_size(sl));
		assert_string_equal(
		    json_string_value(json_object_get(spec, "nodeName")),
		    "node-a");
	}
	assert_int_equal(nd, 8 * 26);
	assert_int_equal(json_array_size(sl), 5); /* 4 device + 1 counter */
	json_decref(sl);
	json_decref(g);
}

static void bad_input_is_refused_with_a_reason(void **state)
{
	struct gs_errbuf eb = {0};
	json_t *out = NULL, *g = gpus_of("H100-SXM5-80GB", 1, true);
	json_t *nog = json_pack("{s:s}", "source", "sim");
	(void)state;
	assert_int_equal(
	    gs_kdev_build_slices(nog, NULL, "n", "gpuslice.io", 1, &out, &eb),
	    GS_ERR_PARSE);
	assert_null(out);
	gs_errbuf_init(&eb);
	assert_int_equal(gs_kdev_build_slices(g, NULL, "Bad_Node",
	                                      "gpuslice.io", 1, &out, &eb),
	                 GS_ERR_INVALID);
	assert_non_null(strstr(eb.msg, "Bad_Node"));
	gs_errbuf_init(&eb);
	json_object_del(json_array_get(json_object_get(g, "gpus"), 0), "uuid");
	assert_int_equal(
	    gs_kdev_build_slices(g, NULL, "n", "gpuslice.io", 1, &out, &eb),
	    GS_ERR_PARSE);
	struct gs_kdev_name n = {.kind = GS_KDEV_MIG,
	                         .gpu_index = 0,
	                         .profile = "1g.10gb",
	                         .start = 7};
	const json_t *gp;
	assert_int_equal(gs_kdev_lookup(g, &n, &gp, NULL), GS_ERR_NOT_FOUND);
	n.gpu_index = 4;
	n.start = 0;
	assert_int_equal(gs_kdev_lookup(g, &n, &gp, NULL), GS_ERR_NOT_FOUND);
	json_decref(nog);
	json_decref(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(device_names_round_trip),
	    cmocka_unit_test(device_name_parser_rejects_foreign_names),
	    cmocka_unit_test(h100_gives_whole_gpu_and_every_mig_placement),
	    cmocka_unit_test(every_catalog_model_gives_its_placements),
	    cmocka_unit_test(gpu_without_mig_gives_no_partitions),
	    cmocka_unit_test(unhealthy_gpu_devices_carry_a_taint),
	    cmocka_unit_test(eight_gpus_are_cut_into_slices_within_api_limits),
	    cmocka_unit_test(bad_input_is_refused_with_a_reason),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
