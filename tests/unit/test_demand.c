/*
 * test_demand.c - the demand history (core/demand.c, gs/demand.h): decay,
 * the bound on classes, reloading stored classes, and the placement
 * scorer it builds (that `frag` placement then follows it), plus the
 * weighted scorer it rests on (gs_trace_scorer_new_weighted).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "gs/demand.h"
#include "gs/placement.h"
#include "gs/trace.h"

#define GIB  (1ull << 30)
#define HOUR (3600ll * 1000000000ll)

static struct gs_demand_shape frac(uint64_t mem, int compute)
{
	struct gs_demand_shape s;

	memset(&s, 0, sizeof(s));
	s.kind = GS_PLACE_FRACTION;
	s.memory_bytes = mem;
	s.compute_pct = compute;
	return s;
}

static void weights_halve_every_half_life(void **st)
{
	struct gs_demand d;
	struct gs_demand_shape s = frac(40 * GIB, 0);
	int i;

	(void)st;
	gs_demand_init(&d, HOUR);
	for (int k = 0; k < 8; k++)
		gs_demand_add(&d, &s, 0, &i, NULL, NULL);
	assert_int_equal(d.n, 1);
	assert_true(fabs(gs_demand_weight(&d, i, 0) - 8) < 1e-9);
	assert_true(fabs(gs_demand_weight(&d, i, HOUR) - 4) < 1e-9);
	assert_true(fabs(gs_demand_weight(&d, i, 3 * HOUR) - 1) < 1e-9);
	assert_true(fabs(gs_demand_weight(&d, i, HOUR / 2) - 8 / sqrt(2)) <
	            1e-9);
	/* a request later adds 1 to the decayed weight */
	gs_demand_add(&d, &s, 2 * HOUR, &i, NULL, NULL);
	assert_true(fabs(gs_demand_weight(&d, i, 2 * HOUR) - 3) < 1e-9);
	/* no decay with a half-life of 0 */
	gs_demand_init(&d, 0);
	gs_demand_add(&d, &s, 0, &i, NULL, NULL);
	assert_true(gs_demand_weight(&d, i, 1000 * HOUR) == 1);
}

static void old_classes_are_pruned_below_the_minimum_weight(void **st)
{
	struct gs_demand d;
	struct gs_demand_shape a = frac(1 * GIB, 0), b = frac(2 * GIB, 0);
	struct gs_demand_shape dropped[GS_DEMAND_MAX_CLASSES];

	(void)st;
	gs_demand_init(&d, HOUR);
	gs_demand_add(&d, &a, 0, NULL, NULL, NULL);
	gs_demand_add(&d, &b, 10 * HOUR, NULL, NULL, NULL);
	/* a: 2^-10 < 0.01 at 10 h; b: 1 */
	assert_int_equal(gs_demand_prune(&d, 10 * HOUR, dropped), 1);
	assert_true(gs_demand_shape_equal(&dropped[0], &a));
	assert_int_equal(d.n, 1);
	assert_true(gs_demand_shape_equal(&d.cls[0].shape, &b));
}

static void a_full_table_forgets_its_lightest_class(void **st)
{
	struct gs_demand d;
	struct gs_demand_shape ev, s;
	bool did;
	int i;

	(void)st;
	gs_demand_init(&d, HOUR);
	for (int k = 0; k < GS_DEMAND_MAX_CLASSES; k++) {
		s = frac((uint64_t)(k + 1) * GIB, 0);
		/* class k gets k + 1 requests, except class 5 gets 1 */
		for (int r = 0; r < (k == 5 ? 1 : k + 2); r++)
			gs_demand_add(&d, &s, 0, &i, &ev, &did);
		assert_false(did);
	}
	assert_int_equal(d.n, GS_DEMAND_MAX_CLASSES);
	s = frac(100 * GIB, 0);
	gs_demand_add(&d, &s, 0, &i, &ev, &did);
	assert_true(did);
	assert_int_equal(d.n, GS_DEMAND_MAX_CLASSES);
	assert_true(gs_demand_shape_equal(
	    &ev, &(struct gs_demand_shape){.kind = GS_PLACE_FRACTION,
	                                   .memory_bytes = 6 * GIB}));
	assert_true(gs_demand_shape_equal(&d.cls[i].shape, &s));
	assert_true(gs_demand_weight(&d, i, 0) == 1);
}

static void stored_classes_reload_merged_and_decayed(void **st)
{
	struct gs_demand d;
	struct gs_demand_class c = {
	    .shape = frac(40 * GIB, 0), .weight = 4, .t_ns = 0};
	struct gs_errbuf eb = {0};

	(void)st;
	gs_demand_init(&d, HOUR);
	assert_int_equal(gs_demand_put(&d, &c, 0, &eb), GS_OK);
	c.weight = 1;
	c.t_ns = HOUR;
	assert_int_equal(gs_demand_put(&d, &c, HOUR, &eb), GS_OK);
	assert_int_equal(d.n, 1);
	assert_true(fabs(gs_demand_weight(&d, 0, HOUR) - 3) < 1e-9);
	c.weight = -1;
	assert_int_equal(gs_demand_put(&d, &c, HOUR, &eb), GS_ERR_INVALID);
	c.weight = NAN;
	assert_int_equal(gs_demand_put(&d, &c, HOUR, &eb), GS_ERR_INVALID);
}

/* Weights equal to task counts build the scorer the tasks build. */
static void weighted_scorer_matches_the_task_list_scorer(void **st)
{
	struct gs_trace_pod pods[12];
	struct gs_trace_class cls[2] = {
	    {.cpu_milli = 4000, .gpu_milli = 500, .num_gpu = 1, .p = 8},
	    {.cpu_milli = 8000, .gpu_milli = 1000, .num_gpu = 1, .p = 4},
	};
	struct gs_trace_scorer *a = NULL, *b = NULL;
	struct gs_errbuf eb = {0};
	uint16_t states[4][2] = {
	    {1000, 1000}, {500, 1000}, {300, 700}, {0, 250}};

	(void)st;
	for (int i = 0; i < 12; i++)
		pods[i] =
		    (struct gs_trace_pod){.cpu_milli = i < 8 ? 4000 : 8000,
		                          .gpu_milli = i < 8 ? 500 : 1000,
		                          .num_gpu = 1};
	assert_int_equal(gs_trace_scorer_new(pods, 12, NULL, 0, &a, &eb),
	                 GS_OK);
	assert_int_equal(gs_trace_scorer_new_weighted(cls, 2, &b, &eb), GS_OK);
	for (int k = 0; k < 4; k++)
		assert_true(
		    fabs(gs_trace_scorer_cost(a, 20000, states[k], 2, 0) -
		         gs_trace_scorer_cost(b, 20000, states[k], 2, 0)) <
		    1e-9);
	gs_trace_scorer_free(a);
	gs_trace_scorer_free(b);
	cls[0].p = -1;
	assert_int_equal(gs_trace_scorer_new_weighted(cls, 2, &b, &eb),
	                 GS_ERR_INVALID);
	assert_null(b);
}

/*
 * The scorer from a history of 40 GiB requests on 80 GiB GPUs steers a
 * small slice to where a later 40 GiB slice still fits; MIG-only or empty
 * history gives no scorer.
 */
static void scorer_from_large_demand_keeps_a_large_slice_placeable(void **st)
{
	struct gs_demand d;
	struct gs_demand_shape big = frac(40 * GIB, 0), mig;
	struct gs_trace_scorer *sc = NULL;
	struct gs_errbuf eb = {0};
	struct gs_place_inv *inv = gs_place_inv_create();
	const struct gs_gpu_model *m = gs_catalog_find("H100-SXM5-80GB");
	struct gs_place_gpu_desc gd = {.model = m, .memory_bytes = 80 * GIB};
	struct gs_place_item used = {.kind = GS_PLACE_FRACTION,
	                             .mode = GS_MODE_TIMESLICE};
	struct gs_place_target t = {.node = 0, .inst = -1};
	struct gs_place_request req = {.n = 1, .policy = GS_PLACE_FRAG};
	struct gs_place_result res;
	int nd, g;

	(void)st;
	assert_non_null(m);
	gs_demand_init(&d, HOUR);
	assert_int_equal(gs_demand_scorer(&d, 0, 80 * GIB, &sc, &eb), GS_OK);
	assert_null(sc);
	memset(&mig, 0, sizeof(mig));
	mig.kind = GS_PLACE_MIG;
	strcpy(mig.mig_profile, "1g.10gb");
	gs_demand_add(&d, &mig, 0, NULL, NULL, NULL);
	assert_int_equal(gs_demand_scorer(&d, 0, 80 * GIB, &sc, &eb), GS_OK);
	assert_null(sc);
	for (int k = 0; k < 8; k++)
		gs_demand_add(&d, &big, 0, NULL, NULL, NULL);
	assert_int_equal(gs_demand_scorer(&d, 0, 80 * GIB, &sc, &eb), GS_OK);
	assert_non_null(sc);

	/* GPU 0: 35 GiB used (45 free), GPU 1: 20 GiB used (60 free) */
	assert_int_equal(gs_place_inv_add_node(inv, "n", &nd, &eb), GS_OK);
	assert_int_equal(gs_place_inv_add_gpu(inv, &gd, &g, &eb), GS_OK);
	assert_int_equal(gs_place_inv_add_gpu(inv, &gd, &g, &eb), GS_OK);
	used.memory_bytes = 35 * GIB;
	t.gpu = 0;
	assert_int_equal(gs_place_occupy(inv, &t, &used, &eb), GS_OK);
	used.memory_bytes = 20 * GIB;
	t.gpu = 1;
	assert_int_equal(gs_place_occupy(inv, &t, &used, &eb), GS_OK);
	req.item[0] = (struct gs_place_item){.kind = GS_PLACE_FRACTION,
	                                     .mode = GS_MODE_TIMESLICE,
	                                     .memory_bytes = 10 * GIB};
	/* binpack: the fuller GPU 0, leaving 35 + 60 (one 40 GiB fits) */
	req.policy = GS_PLACE_BINPACK;
	assert_int_equal(gs_place(inv, &req, &res, &eb), GS_OK);
	assert_int_equal(res.target[0].gpu, 0);
	/* frag with the demand: GPU 1, leaving 45 + 50 (two fit) */
	req.policy = GS_PLACE_FRAG;
	req.scorer = sc;
	assert_int_equal(gs_place(inv, &req, &res, &eb), GS_OK);
	assert_int_equal(res.target[0].gpu, 1);
	gs_trace_scorer_free(sc);
	gs_place_inv_destroy(inv);
}

static void item_milli_is_the_larger_share(void **st)
{
	struct gs_place_item it = {.kind = GS_PLACE_FRACTION,
	                           .memory_bytes = 40 * GIB,
	                           .compute_pct = 25};

	(void)st;
	assert_int_equal(gs_place_item_milli(&it, 80 * GIB), 500);
	it.compute_pct = 75;
	assert_int_equal(gs_place_item_milli(&it, 80 * GIB), 750);
	it.memory_bytes = 0;
	it.compute_pct = 0;
	assert_int_equal(gs_place_item_milli(&it, 80 * GIB), 1);
	it.kind = GS_PLACE_WHOLE;
	assert_int_equal(gs_place_item_milli(&it, 80 * GIB), 1000);
	it.kind = GS_PLACE_MIG;
	assert_int_equal(gs_place_item_milli(&it, 80 * GIB), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(weights_halve_every_half_life),
	    cmocka_unit_test(old_classes_are_pruned_below_the_minimum_weight),
	    cmocka_unit_test(a_full_table_forgets_its_lightest_class),
	    cmocka_unit_test(stored_classes_reload_merged_and_decayed),
	    cmocka_unit_test(weighted_scorer_matches_the_task_list_scorer),
	    cmocka_unit_test(
	        scorer_from_large_demand_keeps_a_large_slice_placeable),
	    cmocka_unit_test(item_milli_is_the_larger_share),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
