/*
 * test_swap_admission.c - declared oversubscription in admission
 * (gs_swap_oversub_capacity, gs/swap.h, and its use by gs_admit): promised
 * memory on a GPU reaches swap.oversubscribe x its memory, only swap:
 * allow slices make up the excess, the refusals say why, and with the
 * ratio at 1 nothing changes. Also the node settings' parsers and the
 * spec key swap=allow|never.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "adm_fixture.h"
#include "gs/swap.h"

#define GIB (1024ULL * 1024 * 1024)

struct fixture {
	struct gs_adm_snapshot sn;
	struct gs_adm_slice slices[16];
	struct gs_quota_tree *tree;
};

/* One plain 80 GiB H100, binpack, one team, the given ratio. */
static void node(struct fixture *f, double ratio)
{
	memset(f, 0, sizeof(*f));
	adm_fixture_h100(&f->sn, f->slices, 16, &f->tree, "GPU-swap",
	                 GS_MODE_TIMESLICE, ratio);
}

static void add(struct fixture *f, uint64_t mem, bool never)
{
	struct gs_adm_slice *s = &f->slices[f->sn.n_slices];

	memset(s, 0, sizeof(*s));
	s->id = f->sn.n_slices + 1;
	s->name = "s";
	s->owner_uid = 1000;
	s->priority = GS_PRIORITY_NORMAL;
	s->mode = GS_MODE_TIMESLICE;
	s->gpu = 0;
	s->gi_id = -1;
	s->mig_profile = "";
	s->memory_bytes = mem;
	s->compute_pct = 0;
	s->swap_never = never;
	f->sn.n_slices++;
}

/* Admits `mem` (swap: never when `never`); on refusal the message must
 * hold `msg`. */
static gs_err admit(struct fixture *f, uint64_t mem, bool never,
                    const char *msg)
{
	struct gs_adm_request r;
	struct gs_adm_decision d;
	struct gs_errbuf eb = {0};
	gs_err e;

	memset(&r, 0, sizeof(r));
	gs_spec_init(&r.spec);
	r.spec.mode = GS_MODE_TIMESLICE;
	r.spec.memory_bytes = mem;
	r.spec.swap = never ? GS_SWAP_NEVER : GS_SWAP_ALLOW;
	r.owner_uid = 1000; /* admin unless a per-user limit is tested */
	r.admin = f->sn.cfg.user_max_memory_percent == 100;
	e = gs_admit(&f->sn, &r, &d, &eb);
	if (e != GS_OK && msg && strstr(eb.msg, msg) == NULL)
		fail_msg("refusal '%s' does not say '%s'", eb.msg, msg);
	gs_adm_decision_fini(&d);
	return e;
}

static void
capacity_is_physical_memory_when_oversubscription_is_off(void **state)
{
	(void)state;
	struct gs_swap_gpu_load l = {0, 0, 0};

	assert_int_equal(
	    gs_swap_oversub_capacity(80 * GIB, 1.0, &l, GIB, false, NULL, 0),
	    80 * GIB);
	assert_int_equal(
	    gs_swap_oversub_capacity(80 * GIB, 0.5, &l, GIB, false, NULL, 0),
	    80 * GIB);
	assert_int_equal(
	    gs_swap_oversub_capacity(80 * GIB, NAN, &l, GIB, false, NULL, 0),
	    80 * GIB);
	assert_int_equal(
	    gs_swap_oversub_capacity(80 * GIB, 2.5, &l, GIB, false, NULL, 0),
	    200 * GIB);
}

static void
capacity_closes_when_unswappable_and_largest_exceed_physical(void **state)
{
	(void)state;
	struct gs_swap_gpu_load l = {100 * GIB, 60 * GIB, 20 * GIB};
	char why[200];

	/* 60 never + 20 largest = 80: a 20 GiB swappable request fits */
	assert_int_equal(gs_swap_oversub_capacity(80 * GIB, 2, &l, 20 * GIB,
	                                          false, why, sizeof(why)),
	                 160 * GIB);
	assert_string_equal(why, "");
	/* a 21 GiB one does not: it could never run beside the 60 */
	assert_int_equal(gs_swap_oversub_capacity(80 * GIB, 2, &l, 21 * GIB,
	                                          false, why, sizeof(why)),
	                 100 * GIB);
	assert_string_equal(
	    why,
	    "slices that cannot swap (61440 MiB) and the largest that can (21504 MiB) would be over the GPU's 81920 MiB; only swap: allow memory is oversubscribed");
	/* nor a never one of 1 GiB */
	assert_int_equal(
	    gs_swap_oversub_capacity(80 * GIB, 2, &l, GIB, true, NULL, 0),
	    100 * GIB);
}

static void admission_without_ratio_refuses_past_physical_memory(void **state)
{
	(void)state;
	struct fixture f;

	node(&f, 1.0);
	add(&f, 40 * GIB, false);
	add(&f, 40 * GIB, false);
	assert_int_equal(admit(&f, 10 * GIB, false, "10.0 GiB free memory"),
	                 GS_ERR_NO_FIT);
	gs_quota_tree_destroy(f.tree);
}

static void
admission_promises_up_to_ratio_times_memory_and_no_more(void **state)
{
	(void)state;
	struct fixture f;

	node(&f, 2.0);
	for (int i = 0; i < 3; i++)
		add(&f, 40 * GIB, false);
	assert_int_equal(admit(&f, 40 * GIB, false, NULL), GS_OK);
	add(&f, 40 * GIB, false);
	assert_int_equal(admit(&f, 1 * GIB, false, "swap.oversubscribe 2.00"),
	                 GS_ERR_NO_FIT);
	/* a slice bigger than the GPU is never admitted, whatever the ratio */
	f.sn.n_slices = 0;
	assert_int_equal(admit(&f, 81 * GIB, false,
	                       "only swap: allow memory is oversubscribed"),
	                 GS_ERR_NO_FIT);
	gs_quota_tree_destroy(f.tree);
}

static void swap_never_slices_are_not_counted_as_oversubscribable(void **state)
{
	(void)state;
	struct fixture f;

	node(&f, 2.0);
	add(&f, 40 * GIB, true);
	add(&f, 30 * GIB, true);
	/* 70 that never leave + 20 never more = 90 > 80 */
	assert_int_equal(admit(&f, 20 * GIB, true,
	                       "gpu 0: slices that cannot swap (92160 MiB)"),
	                 GS_ERR_NO_FIT);
	/* a 10 GiB swappable one can still run beside them */
	assert_int_equal(admit(&f, 10 * GIB, false, NULL), GS_OK);
	/* a 20 GiB swappable one could not */
	assert_int_equal(admit(&f, 20 * GIB, false,
	                       "only swap: allow memory is oversubscribed"),
	                 GS_ERR_NO_FIT);
	gs_quota_tree_destroy(f.tree);
}

static void per_user_memory_limit_counts_promised_against_ratio(void **state)
{
	(void)state;
	struct fixture f;

	/* 50 % of the node: 40 GiB without swap, 80 GiB at ratio 2 (less
	 * the rounding of the percentage) */
	node(&f, 2.0);
	f.sn.cfg.user_max_memory_percent = 50;
	add(&f, 40 * GIB, false);
	assert_int_equal(admit(&f, 39 * GIB, false, NULL), GS_OK);
	add(&f, 39 * GIB, false);
	assert_int_equal(
	    admit(&f, 1 * GIB, false, "over the 50% of the node's 163840 MiB"),
	    GS_ERR_QUOTA);
	gs_quota_tree_destroy(f.tree);
}

static void ratio_setting_refuses_nan_negative_below_one_and_words(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		gs_err err;
		const char *msg;
	} cases[] = {
	    {"1", GS_OK, ""},
	    {"2.5", GS_OK, ""},
	    {"0.99", GS_ERR_RANGE,
	     "swap.oversubscribe must be 1..100 (1 = off), got '0.99'"},
	    {"-2", GS_ERR_RANGE,
	     "swap.oversubscribe must be 1..100 (1 = off), got '-2'"},
	    {"nan", GS_ERR_RANGE,
	     "swap.oversubscribe must be 1..100 (1 = off), got 'nan'"},
	    {"inf", GS_ERR_RANGE,
	     "swap.oversubscribe must be 1..100 (1 = off), got 'inf'"},
	    {"101", GS_ERR_RANGE,
	     "swap.oversubscribe must be 1..100 (1 = off), got '101'"},
	    {"2x", GS_ERR_PARSE, "swap.oversubscribe: '2x' is not a number"},
	    {"", GS_ERR_PARSE, "swap.oversubscribe: '' is not a number"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gs_errbuf eb = {0};
		double r = 7;

		assert_int_equal(gs_swap_parse_ratio(cases[i].text, &r, &eb),
		                 cases[i].err);
		assert_string_equal(eb.msg, cases[i].msg);
		if (cases[i].err != GS_OK)
			assert_true(r == 7); /* unchanged */
	}
}

static void duration_setting_takes_seconds_minutes_hours(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		gs_err err;
		int64_t s;
	} cases[] = {
	    {"30", GS_OK, 30},         {"30s", GS_OK, 30},
	    {"5m", GS_OK, 300},        {"2h", GS_OK, 7200},
	    {"0", GS_OK, 0},           {"-5s", GS_ERR_RANGE, 0},
	    {"8d", GS_ERR_PARSE, 0},   {"soon", GS_ERR_PARSE, 0},
	    {"169h", GS_ERR_RANGE, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gs_errbuf eb = {0};
		int64_t v = -1;

		assert_int_equal(gs_swap_parse_seconds("swap.idle_after",
		                                       cases[i].text, &v, &eb),
		                 cases[i].err);
		if (cases[i].err == GS_OK)
			assert_int_equal(v, cases[i].s);
		else
			assert_non_null(strstr(eb.msg, "swap.idle_after"));
	}
}

static void spec_swap_key_parses_formats_and_round_trips(void **state)
{
	struct gs_slice_spec s, back;
	struct gs_errbuf eb = {0};
	char text[GS_SPEC_FORMAT_MAX];

	(void)state;
	gs_spec_init(&s);
	assert_int_equal(s.swap, GS_SWAP_ALLOW);
	assert_int_equal(
	    gs_spec_parse_kvlist(&s, "memory=8GiB swap=never", &eb), GS_OK);
	assert_int_equal(s.swap, GS_SWAP_NEVER);
	assert_int_equal(gs_spec_validate(&s, &eb), GS_OK);
	(void)gs_spec_format(&s, text, sizeof(text));
	assert_non_null(strstr(text, " swap=never"));
	gs_spec_init(&back);
	assert_int_equal(gs_spec_parse_kvlist(&back, text, &eb), GS_OK);
	assert_true(gs_spec_equal(&s, &back));
	/* allow is the default and is left out of the canonical text, so
	 * existing stored specs read back unchanged */
	assert_int_equal(gs_spec_set(&s, "swap", "allow", &eb), GS_OK);
	(void)gs_spec_format(&s, text, sizeof(text));
	assert_null(strstr(text, "swap"));
	assert_false(gs_spec_equal(&s, &back));
	assert_int_equal(gs_spec_set(&s, "swap", "sometimes", &eb),
	                 GS_ERR_PARSE);
	assert_string_equal(eb.msg,
	                    "unknown swap 'sometimes' (expected allow|never)");
	assert_string_equal(gs_swap_mode_name(GS_SWAP_NEVER), "never");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        capacity_is_physical_memory_when_oversubscription_is_off),
	    cmocka_unit_test(
	        capacity_closes_when_unswappable_and_largest_exceed_physical),
	    cmocka_unit_test(
	        admission_without_ratio_refuses_past_physical_memory),
	    cmocka_unit_test(
	        admission_promises_up_to_ratio_times_memory_and_no_more),
	    cmocka_unit_test(
	        swap_never_slices_are_not_counted_as_oversubscribable),
	    cmocka_unit_test(
	        per_user_memory_limit_counts_promised_against_ratio),
	    cmocka_unit_test(
	        ratio_setting_refuses_nan_negative_below_one_and_words),
	    cmocka_unit_test(duration_setting_takes_seconds_minutes_hours),
	    cmocka_unit_test(spec_swap_key_parses_formats_and_round_trips),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
