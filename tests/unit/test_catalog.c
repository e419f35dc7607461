/*
 * test_catalog.c - the generated catalog against its source JSON.
 *
 * The JSON is read independently here (jansson) and every model, profile
 * and placement is compared field by field with the compiled table, so a
 * generator bug cannot hide behind its own output. GS_CATALOG_JSON is the
 * path of data/mig-profiles.json, passed by CMake.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <string.h>

#include "gs/catalog.h"

static json_t *load_json(void)
{
	json_error_t jerr;
	json_t *root = json_load_file(GS_CATALOG_JSON, 0, &jerr);

	assert_non_null(root);
	return root;
}

static const struct gs_gpu_model *model_for(const char *json_model)
{
	char buf[128];
	size_t n = strcspn(json_model, " ");

	assert_true(n < sizeof(buf));
	memcpy(buf, json_model, n);
	buf[n] = '\0';
	return gs_catalog_find(buf);
}

static void catalog_matches_json_for_every_model(void **state)
{
	json_t *root = load_json();
	json_t *gpus = json_object_get(root, "gpus");
	size_t gi;
	json_t *g;
	int seen = 0;

	json_array_foreach(gpus, gi, g)
	{
		json_t *profiles = json_object_get(g, "profiles");
		const struct gs_gpu_model *m;
		size_t pi;
		json_t *p;

		if (json_array_size(profiles) == 0)
			continue;
		seen++;
		m = model_for(json_string_value(json_object_get(g, "model")));
		assert_non_null(m);
		assert_int_equal(m->compute_slices,
		                 json_integer_value(json_object_get(
		                     g, "compute_slices_total")));
		assert_int_equal(m->memory_slices,
		                 json_integer_value(json_object_get(
		                     g, "memory_slices_total")));
		assert_int_equal(m->max_gpu_instances,
		                 json_integer_value(
		                     json_object_get(g, "max_gpu_instances")));
		assert_int_equal(m->n_profiles, json_array_size(profiles));
		if (json_object_get(g, "total_memory_mib_observed")) {
			assert_int_equal(m->memory_mib,
			                 json_integer_value(json_object_get(
			                     g, "total_memory_mib_observed")));
			assert_false(m->memory_inferred);
		} else {
			assert_true(m->memory_inferred);
		}
		assert_true(m->memory_mib > 0);
		assert_true(m->sm_count > 0);
		json_array_foreach(profiles, pi, p)
		{
			const char *pname =
			    json_string_value(json_object_get(p, "name"));
			const struct gs_mig_profile *cp =
			    gs_catalog_profile(m, pname);
			json_t *pls = json_object_get(p, "placements");
			json_t *mem = json_object_get(p, "memory_mib");
			size_t k;
			json_t *pl;

			assert_non_null(cp);
			assert_string_equal(cp->name, pname);
			assert_ptr_equal(
			    gs_catalog_profile_by_id(m, cp->profile_id), cp);
			assert_int_equal(cp->nvml_profile_index,
			                 json_integer_value(json_object_get(
			                     p, "nvml_profile_value")));
			assert_int_equal(cp->profile_id,
			                 json_integer_value(
			                     json_object_get(p, "profile_id")));
			assert_int_equal(cp->compute_slices,
			                 json_integer_value(json_object_get(
			                     p, "compute_slices")));
			assert_int_equal(cp->memory_slices,
			                 json_integer_value(json_object_get(
			                     p, "memory_slices")));
			assert_int_equal(cp->max_instances,
			                 json_integer_value(json_object_get(
			                     p, "max_instances")));
			assert_int_equal(
			    cp->memory_mib,
			    json_is_integer(mem) ? json_integer_value(mem) : 0);
			assert_int_equal(cp->n_placements,
			                 json_array_size(pls));
			json_array_foreach(pls, k, pl)
			{
				int st = (int)json_integer_value(
				    json_object_get(pl, "start"));
				assert_int_equal(cp->placements[k].start, st);
				assert_int_equal(
				    cp->placements[k].size,
				    json_integer_value(
				        json_object_get(pl, "size")));
				assert_true(gs_catalog_placement_valid(cp, st));
			}
			if (strncmp(json_string_value(json_object_get(
			                p, "placements_confidence")),
			            "inferred", 8) == 0) {
				assert_true(cp->placements_inferred);
				assert_true(cp->inferred);
				assert_true(m->inferred);
			}
		}
	}
	assert_int_equal(seen, gs_catalog_count());
	json_decref(root);
}

static void placement_valid_rejects_starts_not_in_the_table(void **state)
{
	const struct gs_gpu_model *m = gs_catalog_find("H100-SXM5-80GB");
	const struct gs_mig_profile *p = gs_catalog_profile(m, "1g.10gb");

	assert_false(gs_catalog_placement_valid(p, 7));
	assert_false(gs_catalog_placement_valid(p, -1));
	p = gs_catalog_profile(m, "3g.40gb");
	assert_true(gs_catalog_placement_valid(p, 4));
	assert_false(gs_catalog_placement_valid(p, 2));
	assert_false(gs_catalog_placement_valid(NULL, 0));
}

static void find_accepts_aliases_and_nvml_names(void **state)
{
	static const struct {
		const char *alias, *canonical;
	} cases[] = {
	    {"H100", "H100-SXM5-80GB"},
	    {"H100-80GB", "H100-SXM5-80GB"},
	    {"NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"},
	    {"h100-sxm5-80gb", "H100-SXM5-80GB"},
	    {"h100 sxm5 80gb", "H100-SXM5-80GB"},
	    {"H100-PCIe-80GB", "H100-SXM5-80GB"},
	    {"H800-80GB", "H100-SXM5-80GB"},
	    {"A100-40GB", "A100-SXM4-40GB"},
	    {"A100", "A100-SXM4-40GB"},
	    {"NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"},
	    {"A100-PCIE-40GB", "A100-SXM4-40GB"},
	    {"A800-40GB", "A100-SXM4-40GB"},
	    {"A100-80GB", "A100-SXM4-80GB"},
	    {"A100-PCIE-80GB", "A100-SXM4-80GB"},
	    {"A800-80GB", "A100-SXM4-80GB"},
	    {"A30", "A30-24GB"},
	    {"NVIDIA A30", "A30-24GB"},
	    {"H100-NVL", "H100-NVL-94GB"},
	    {"NVIDIA H100 NVL", "H100-NVL-94GB"},
	    {"H800 NVL", "H100-NVL-94GB"},
	    {"H200", "H200-141GB"},
	    {"NVIDIA H200", "H200-141GB"},
	    {"H200 NVL", "H200-141GB"},
	    {"GH200", "GH200-96GB"},
	    {"H100-96GB", "GH200-96GB"},
	    {"PG506-96GB", "GH200-96GB"},
	    {"H20", "GH200-96GB"},
	    {"GH200-144GB-HBM3e", "GH200-144GB"},
	    {"B200", "B200-180GB"},
	    {"NVIDIA B200", "B200-180GB"},
	    {"GB200", "GB200-186GB"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct gs_gpu_model *m = gs_catalog_find(cases[i].alias);

		if (m == NULL)
			fail_msg("alias '%s' not found", cases[i].alias);
		assert_string_equal(m->name, cases[i].canonical);
	}
	for (int i = 0; i < gs_catalog_count(); i++) {
		const struct gs_gpu_model *m = gs_catalog_get(i);

		assert_ptr_equal(gs_catalog_find(m->name), m);
		assert_ptr_equal(gs_catalog_find(m->nvml_name), m);
		for (int a = 0; a < m->n_aliases; a++)
			assert_ptr_equal(gs_catalog_find(m->aliases[a]), m);
		for (int k = 0; k < m->n_pci_device_ids; k++)
			assert_ptr_equal(
			    gs_catalog_find_pci(m->pci_device_ids[k]), m);
	}
}

static void find_returns_null_for_unknown_names(void **state)
{
	assert_null(gs_catalog_find("V100"));
	assert_null(gs_catalog_find(""));
	assert_null(gs_catalog_find(NULL));
	assert_null(gs_catalog_find("H100-SXM5-80GBX"));
	assert_null(gs_catalog_find("H10"));
	assert_null(gs_catalog_get(-1));
	assert_null(gs_catalog_get(gs_catalog_count()));
	assert_null(gs_catalog_profile(gs_catalog_find("A30"), "1g.10gb"));
	assert_null(gs_catalog_profile_by_id(gs_catalog_find("A30"), 99));
	assert_null(gs_catalog_find_pci(0x12345678u));
}

static void inferred_whole_gpu_values_are_flagged_and_explained(void **state)
{
	const struct gs_gpu_model *b = gs_catalog_find("GB200");
	const struct gs_gpu_model *h = gs_catalog_find("H100");

	/* B200's whole-GPU SM count is sourced now (148); GB200's is not */
	assert_int_equal(gs_catalog_find("B200")->sm_count, 148);
	assert_false(gs_catalog_find("B200")->sm_count_inferred);
	assert_true(b->sm_count_inferred);
	assert_true(b->memory_inferred);
	assert_non_null(strstr(b->inferred_note, "sm_count"));
	assert_false(h->sm_count_inferred);
	assert_false(h->memory_inferred);
	assert_int_equal(h->sm_count, 132);
	assert_int_equal(h->memory_mib, 81559);
	assert_int_equal(h->cc_major, 9);
	assert_true(gs_catalog_find("GB200")->cc_inferred);
	assert_int_equal(gs_catalog_find("A30")->memory_slices, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(catalog_matches_json_for_every_model),
	    cmocka_unit_test(placement_valid_rejects_starts_not_in_the_table),
	    cmocka_unit_test(find_accepts_aliases_and_nvml_names),
	    cmocka_unit_test(find_returns_null_for_unknown_names),
	    cmocka_unit_test(
	        inferred_whole_gpu_values_are_flagged_and_explained),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
