/*
 * test_sim_nvml_place.c - the sim's MIG placement rules (sim/nvml/nvml_place.c)
 * on every catalog model, checked against a naive reference: a bit array
 * of memory slices and an exhaustive search for "how many more fit".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "nvml_place.h"

#define MAX_LIVE 8

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

/* The reference: slices as bits, limits counted one by one. */
static bool naive_fits(const struct gs_gpu_model *m,
                       const struct gs_mig_profile *p,
                       const struct gs__place_live *live, int n, int start)
{
	unsigned used = 0, want;
	int same = 0, slices = 0;

	for (int i = 0; i < n; i++) {
		for (int s = live[i].start; s < live[i].start + live[i].size;
		     s++)
			used |= 1u << s;
		same += live[i].profile_id == p->profile_id;
		slices += live[i].compute_slices;
	}
	want = ((1u << p->memory_slices) - 1u) << start;
	return (used & want) == 0 && n < m->max_gpu_instances &&
	       same < p->max_instances &&
	       slices + p->compute_slices <= m->compute_slices;
}

static bool naive_valid(const struct gs_mig_profile *p, int start)
{
	for (int i = 0; i < p->n_placements; i++)
		if (p->placements[i].start == start)
			return true;
	return false;
}

/* Most instances of `p` that can still be added, trying every subset of
 * the placements from index `from` on (exhaustive). */
static int naive_more(const struct gs_gpu_model *m,
                      const struct gs_mig_profile *p,
                      struct gs__place_live *live, int n, int from)
{
	int best = 0;

	for (int i = from; i < p->n_placements; i++) {
		int start = p->placements[i].start, got;

		if (!naive_fits(m, p, live, n, start))
			continue;
		live[n].profile_id = p->profile_id;
		live[n].start = start;
		live[n].size = p->memory_slices;
		live[n].compute_slices = p->compute_slices;
		got = 1 + naive_more(m, p, live, n + 1, i + 1);
		if (got > best)
			best = got;
	}
	return best;
}

/* A random valid layout built by adding random profiles where they fit. */
static int random_layout(const struct gs_gpu_model *m,
                         struct gs__place_live *live)
{
	int n = 0, tries = (int)(next_rand() % 12);

	for (int t = 0; t < tries && n < MAX_LIVE - 1; t++) {
		const struct gs_mig_profile *p =
		    &m->profiles[next_rand() % (uint32_t)m->n_profiles];
		int start =
		    p->placements[next_rand() % (uint32_t)p->n_placements]
		        .start;

		if (!naive_fits(m, p, live, n, start))
			continue;
		live[n].profile_id = p->profile_id;
		live[n].start = start;
		live[n].size = p->memory_slices;
		live[n].compute_slices = p->compute_slices;
		n++;
	}
	return n;
}

static void gi_rules_match_the_naive_reference_on_every_model(void **state)
{
	(void)state;
	for (int mi = 0; mi < gs_catalog_count(); mi++) {
		const struct gs_gpu_model *m = gs_catalog_get(mi);

		for (int round = 0; round < 200; round++) {
			struct gs__place_live live[MAX_LIVE + 8];
			int n = random_layout(m, live);

			for (int pi = 0; pi < m->n_profiles; pi++) {
				const struct gs_mig_profile *p =
				    &m->profiles[pi];
				struct gs__place_live tmp[MAX_LIVE + 8];

				for (int start = -1; start <= m->memory_slices;
				     start++) {
					nvmlReturn_t want =
					    !naive_valid(p, start)
					        ? NVML_ERROR_INVALID_ARGUMENT
					    : naive_fits(m, p, live, n, start)
					        ? NVML_SUCCESS
					        : NVML_ERROR_INSUFFICIENT_RESOURCES;

					assert_int_equal(
					    gs__place_gi_check(m, p, live, n,
					                       start),
					    want);
				}
				memcpy(tmp, live, sizeof(live));
				assert_int_equal(
				    gs__place_gi_remaining(m, p, live, n),
				    naive_more(m, p, tmp, n, 0));
			}
		}
	}
}

static const struct gs_gpu_model *model(const char *name)
{
	const struct gs_gpu_model *m = gs_catalog_find(name);

	assert_non_null(m);
	return m;
}

static void a100_rules_from_the_mig_guide(void **state)
{
	const struct gs_gpu_model *m = model("A100-SXM4-40GB");
	const struct gs_mig_profile *g1 = gs_catalog_profile_by_id(m, 19);
	const struct gs_mig_profile *g3 = gs_catalog_profile_by_id(m, 9);
	const struct gs_mig_profile *me = gs_catalog_profile_by_id(m, 20);
	struct gs__place_live live[2] = {{19, 6, 1, 1}, {20, 0, 1, 1}};

	(void)state;
	/* 1g never covers memory slice 7. */
	assert_int_equal(gs__place_gi_check(m, g1, NULL, 0, 7),
	                 NVML_ERROR_INVALID_ARGUMENT);
	/* A 1g at slice 6 blocks the 3g at 4 but not the one at 0. */
	assert_int_equal(gs__place_gi_check(m, g3, live, 1, 4),
	                 NVML_ERROR_INSUFFICIENT_RESOURCES);
	assert_int_equal(gs__place_gi_check(m, g3, live, 1, 0), NVML_SUCCESS);
	assert_int_equal(gs__place_gi_remaining(m, g3, live, 1), 1);
	/* One +me instance per GPU. */
	assert_int_equal(gs__place_gi_check(m, me, live + 1, 1, 3),
	                 NVML_ERROR_INSUFFICIENT_RESOURCES);
	/* Seven 1g on an empty GPU; the driver's pick is first fit. */
	assert_int_equal(gs__place_gi_remaining(m, g1, NULL, 0), 7);
	assert_int_equal(gs__place_gi_pick(m, g1, live, 1), 0);
}

static void ci_profiles_follow_the_gi_size(void **state)
{
	nvmlComputeInstancePlacement_t pl[8];
	struct gs__place_live one = {0, 0, 1, 1};

	(void)state;
	assert_int_equal(
	    gs__place_ci_slices(7, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE), 3);
	assert_int_equal(
	    gs__place_ci_slices(4, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE), 0);
	assert_int_equal(
	    gs__place_ci_slices(2, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE), 0);
	assert_int_equal(
	    gs__place_ci_slices(3, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1),
	    0);
	assert_int_equal(
	    gs__place_ci_max(7, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE), 3);
	assert_int_equal(
	    gs__place_ci_max(3, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE), 3);
	assert_int_equal(gs__place_ci_placements(
	                     7, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, pl, 8),
	                 2);
	assert_int_equal(pl[1].start, 3);
	assert_int_equal(pl[1].size, 3);
	assert_int_equal(
	    gs__place_ci_check(3, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, &one,
	                       1, 0),
	    NVML_ERROR_INSUFFICIENT_RESOURCES);
	assert_int_equal(
	    gs__place_ci_check(3, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, &one,
	                       1, 3),
	    NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(gs__place_ci_pick(
	                     3, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, &one, 1),
	                 1);
	assert_int_equal(gs__place_ci_remaining(
	                     3, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, &one, 1),
	                 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(gi_rules_match_the_naive_reference_on_every_model),
	    cmocka_unit_test(a100_rules_from_the_mig_guide),
	    cmocka_unit_test(ci_profiles_follow_the_gi_size),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
