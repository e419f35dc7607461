/*
 * test_daemon_swap_counts.c - a slice's swap counts and times outlive a
 * daemon restart: the store keeps them (schema 7, daemon/store.c), and
 * gs__slot_swap_merge (daemon/slots.c) adds a region record's counts to
 * them once, whether the record is the one they were noted from (a
 * restart that kept the region) or one made again (a new region).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "slots.h"
#include "store.h"
#include "store_fixture.h"
#include "store_roundtrip.h"

static int setup(void **state)
{
	(void)state;
	return store_fixture_setup("swapcount-test");
}

static int teardown(void **state)
{
	(void)state;
	return store_fixture_teardown();
}

static void store_keeps_swap_counts_and_times_across_a_reopen(void **state)
{
	struct gs_store *st;
	struct gs_errbuf eb = {0};
	struct gs_slice s, got;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.id = 3;
	snprintf(s.name, sizeof(s.name), "nb");
	snprintf(s.team, sizeof(s.team), "ml");
	gs_spec_init(&s.spec);
	snprintf(s.spec.name, sizeof(s.spec.name), "nb");
	s.spec.memory_bytes = 8ull << 30;
	s.mode = GS_MODE_TIMESLICE;
	s.gi_id = s.ci_id = -1;
	s.swap.swap_outs = 5;
	s.swap.swap_ins = 4;
	s.swap.last_out_ns = 1700000000123456789LL;
	s.swap.last_in_ns = 1700000001123456789LL;
	s.swap.out_ns_total = 9000000000ULL;
	s.swap.in_ns_total = 7000000000ULL;
	s.swap.last_out_took_ns = 1500000000LL;
	s.swap.last_in_took_ns = 1250000000LL;
	s.swap.rec_outs = 2;
	s.swap.rec_ins = 1;
	s.swap.swapped_bytes = 123; /* the record's, not stored */
	store_put_slices(&s, 1);

	memset(&got, 0, sizeof(got));
	st = store_reopen_load(store_keep_slice, &got, GS_OK, &eb);
	gs_store_close(st);
	assert_string_equal(got.name, "nb");
	assert_int_equal(got.swap.swap_outs, 5);
	assert_int_equal(got.swap.swap_ins, 4);
	assert_int_equal(got.swap.last_out_ns, 1700000000123456789LL);
	assert_int_equal(got.swap.last_in_ns, 1700000001123456789LL);
	assert_int_equal(got.swap.out_ns_total, 9000000000ULL);
	assert_int_equal(got.swap.in_ns_total, 7000000000ULL);
	assert_int_equal(got.swap.last_out_took_ns, 1500000000LL);
	assert_int_equal(got.swap.last_in_took_ns, 1250000000LL);
	assert_int_equal(got.swap.rec_outs, 2);
	assert_int_equal(got.swap.rec_ins, 1);
	assert_int_equal(got.swap.swapped_bytes, 0);
}

/* Stored: 5 out, 4 in, of which the record then held 2 and 1. */
static struct gs_slice_swap stored(void)
{
	struct gs_slice_swap sw;

	memset(&sw, 0, sizeof(sw));
	sw.swap_outs = 5;
	sw.swap_ins = 4;
	sw.last_out_ns = 1000;
	sw.last_in_ns = 2000;
	sw.rec_outs = 2;
	sw.rec_ins = 1;
	return sw;
}

static void the_same_record_adds_only_what_it_gained_since(void **state)
{
	struct gs_slice_swap sw = stored(), out;
	struct gs_swap_rec rec;

	(void)state;
	memset(&rec, 0, sizeof(rec));
	rec.swap_outs = 2;
	rec.swap_ins = 1;
	rec.last_out_ns = 1000;
	rec.last_in_ns = 2000;
	memset(&out, 0, sizeof(out));
	gs__slot_swap_merge(&sw, &rec, &out);
	assert_int_equal(out.swap_outs, 5);
	assert_int_equal(out.swap_ins, 4);
	/* a swap-out since */
	rec.swap_outs = 3;
	rec.last_out_ns = 3000;
	gs__slot_swap_merge(&sw, &rec, &out);
	assert_int_equal(out.swap_outs, 6);
	assert_int_equal(out.swap_ins, 4);
	assert_int_equal(out.last_out_ns, 3000);
	assert_int_equal(out.last_in_ns, 2000);
	assert_int_equal(out.rec_outs, 3);
}

static void a_record_made_again_is_counted_on_top(void **state)
{
	struct gs_slice_swap sw = stored(), out;
	struct gs_swap_rec rec;

	(void)state;
	memset(&rec, 0, sizeof(rec));
	memset(&out, 0, sizeof(out));
	/* a new region: nothing in the record yet; the stored figures stay */
	gs__slot_swap_merge(&sw, &rec, &out);
	assert_int_equal(out.swap_outs, 5);
	assert_int_equal(out.swap_ins, 4);
	assert_int_equal(out.last_out_ns, 1000);
	assert_int_equal(out.last_in_ns, 2000);
	assert_int_equal(out.rec_outs, 0);
	/* noted (as the swapper does), then the new record counts one out:
	 * it is the same record from then on */
	sw = out;
	rec.swap_outs = 1;
	rec.last_out_ns = 5000;
	gs__slot_swap_merge(&sw, &rec, &out);
	assert_int_equal(out.swap_outs, 6);
	assert_int_equal(out.swap_ins, 4);
	assert_int_equal(out.last_out_ns, 5000);
	assert_int_equal(out.last_in_ns, 2000);
}

static void a_new_record_not_yet_noted_is_added_whole(void **state)
{
	struct gs_slice_swap sw = stored(), out;
	struct gs_swap_rec rec;

	(void)state;
	memset(&rec, 0, sizeof(rec));
	memset(&out, 0, sizeof(out));
	/* fewer swap-ins than the stored record had: a record made again */
	rec.swap_outs = 1;
	rec.swap_ins = 0;
	gs__slot_swap_merge(&sw, &rec, &out);
	assert_int_equal(out.swap_outs, 6);
	assert_int_equal(out.swap_ins, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        store_keeps_swap_counts_and_times_across_a_reopen, setup,
	        teardown),
	    cmocka_unit_test(the_same_record_adds_only_what_it_gained_since),
	    cmocka_unit_test(a_record_made_again_is_counted_on_top),
	    cmocka_unit_test(a_new_record_not_yet_noted_is_added_whole),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
