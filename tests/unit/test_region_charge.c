/*
 * test_region_charge.c - a slice's charge ratio in the region
 * (gs_region_slice_set_charge, gs/region.h): published in its limits
 * record, read by the scheduler's config (gs_region_sched_cfg), bounded,
 * reset for a new slice in the slot, and what gs_sched_charge makes of a
 * batch's measured time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "gs/region.h"
#include "gs/region_launch.h"
#include "gs/region_sched.h"
#include "region_fixture.h"

static int setup(void **state)
{
	struct region_fx *f;

	if (region_fx_setup(state, "charge") != 0)
		return -1;
	f = *state;
	return gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL) == GS_OK
	           ? 0
	           : -1;
}

static int teardown(void **state)
{
	return region_fx_teardown(state);
}

static struct gs_slice_ref make(struct gs_region *r, const char *name)
{
	struct gs_slice_limits lim;
	struct gs_slice_ref ref;

	gs_slice_limits_init(&lim, name);
	lim.compute_pct = 40;
	assert_int_equal(gs_region_slice_create(r, &lim, &ref, NULL), GS_OK);
	return ref;
}

static uint32_t cfg_charge(struct gs_region *r, int slot)
{
	static struct gs_sched_cfg cfg[GS_REGION_MAX_SLICES];
	uint64_t epoch = 0;

	assert_true(gs_region_sched_cfg(r, cfg, &epoch));
	return cfg[slot].charge_q16;
}

static void a_published_ratio_reaches_the_schedulers_config(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref ref = make(f->r, "infer");
	struct gs_slice_limits lim;

	assert_int_equal(cfg_charge(f->r, ref.slot), GS_CHARGE_ONE);
	assert_int_equal(gs_region_slice_set_charge(f->r, &ref, 46811, NULL),
	                 GS_OK);
	assert_int_equal(cfg_charge(f->r, ref.slot), 46811);
	/* The slice's limits changing leave it be. */
	assert_int_equal(gs_region_slice_limits(f->r, &ref, &lim), GS_OK);
	lim.compute_pct = 50;
	assert_int_equal(gs_region_slice_update(f->r, &ref, &lim, NULL), GS_OK);
	assert_int_equal(cfg_charge(f->r, ref.slot), 46811);
}

static void a_ratio_outside_a_quarter_and_one_is_refused(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref ref = make(f->r, "infer");

	assert_int_equal(gs_region_slice_set_charge(f->r, &ref,
	                                            GS_CHARGE_MIN - 1, NULL),
	                 GS_ERR_INVALID);
	assert_int_equal(gs_region_slice_set_charge(f->r, &ref,
	                                            GS_CHARGE_ONE + 1, NULL),
	                 GS_ERR_INVALID);
	assert_int_equal(cfg_charge(f->r, ref.slot), GS_CHARGE_ONE);
}

static void a_new_slice_in_the_slot_starts_at_one(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref ref = make(f->r, "infer"), again;

	assert_int_equal(gs_region_slice_set_charge(f->r, &ref, GS_CHARGE_MIN,
	                                            NULL),
	                 GS_OK);
	assert_int_equal(gs_region_slice_delete(f->r, &ref, NULL), GS_OK);
	assert_int_equal(gs_region_slice_set_charge(f->r, &ref, GS_CHARGE_MIN,
	                                            NULL),
	                 GS_ERR_NOT_FOUND);
	again = make(f->r, "batch");
	assert_int_equal(again.slot, ref.slot);
	assert_int_equal(cfg_charge(f->r, again.slot), GS_CHARGE_ONE);
}

static void the_charge_is_the_measured_time_times_the_ratio(void **state)
{
	struct gs_sched_cfg cfg[2] = {{.charge_q16 = 0},
	                              {.charge_q16 = GS_CHARGE_ONE / 2}};
	struct gs_sched_view v = {.cfg = cfg, .n = 2};

	(void)state;
	assert_int_equal(gs_sched_charge(&v, 0, 1000000), 1000000);
	assert_int_equal(gs_sched_charge(&v, 1, 1000000), 500000);
	assert_int_equal(gs_sched_charge(&v, 2, 1000000), 1000000);
	assert_int_equal(gs_sched_charge(&v, -1, 1000000), 1000000);
	/* No overflow: a batch measured past 2^47 ns is charged whole. */
	assert_int_equal(gs_sched_charge(&v, 1, 1ULL << 50), 1ULL << 50);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        a_published_ratio_reaches_the_schedulers_config, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        a_ratio_outside_a_quarter_and_one_is_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        a_new_slice_in_the_slot_starts_at_one, setup, teardown),
	    cmocka_unit_test(the_charge_is_the_measured_time_times_the_ratio),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
