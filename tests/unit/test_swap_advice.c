/*
 * test_swap_advice.c - on an oversubscribed node (swap.oversubscribe > 1)
 * what admission's mode choice (the advisor, auto) says about memory:
 * a swap: allow fraction is admitted on promised memory past the GPU's
 * and told that only what is active is resident; a slice the advisor
 * sends to MIG gets a profile (the MIG planner's) that holds its whole
 * promise, told it stays resident; swap: never and whole GPUs the same;
 * nothing is added without oversubscription or when the mode was asked.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "adm_fixture.h"

#define GIB (1024ULL * 1024 * 1024)

struct node {
	struct gs_adm_snapshot sn;
	struct gs_adm_slice slices[8];
	struct gs_quota_tree *tree;
};

/* One 80 GiB H100 (MIG-capable, MIG off), mode auto, the given ratio. */
static void node_init(struct node *nd, double ratio)
{
	memset(nd, 0, sizeof(*nd));
	adm_fixture_h100(&nd->sn, nd->slices, 8, &nd->tree, "GPU-advice",
	                 GS_MODE_AUTO, ratio);
	nd->sn.gpu[0].mig_capable = true;
	nd->sn.cfg.may_change_mig = true;
}

static void node_fini(struct node *nd)
{
	gs_quota_tree_destroy(nd->tree);
}

/* A swap: allow time-sliced slice of `mem` already on the GPU. */
static void holding(struct node *nd, uint64_t mem)
{
	struct gs_adm_slice *s = &nd->slices[nd->sn.n_slices];

	memset(s, 0, sizeof(*s));
	s->id = nd->sn.n_slices + 1;
	s->name = "held";
	s->owner_uid = 1000;
	s->priority = GS_PRIORITY_NORMAL;
	s->mode = GS_MODE_TIMESLICE;
	s->gpu = 0;
	s->gi_id = -1;
	s->mig_profile = "";
	s->memory_bytes = mem;
	nd->sn.n_slices++;
}

/* Admits `mem` with isolation `iso`, swap `swap`, mode `mode`. OUT: d. */
static gs_err ask(struct node *nd, uint64_t mem, enum gs_isolation iso,
                  enum gs_swap_mode swap, enum gs_slice_mode mode,
                  struct gs_adm_decision *d)
{
	struct gs_adm_request r;
	struct gs_errbuf eb = {0};
	gs_err e;

	memset(&r, 0, sizeof(r));
	gs_spec_init(&r.spec);
	r.spec.mode = mode;
	r.spec.memory_bytes = mem;
	r.spec.isolation = iso;
	r.spec.swap = swap;
	r.owner_uid = 1000;
	r.admin = true;
	e = gs_admit(&nd->sn, &r, d, &eb);
	if (e != GS_OK)
		print_message("refused: %s\n", eb.msg);
	return e;
}

static void
a_swappable_fraction_is_promised_past_the_gpu_and_resident_only_while_active(
    void **state)
{
	struct node nd;
	struct gs_adm_decision d;

	(void)state;
	node_init(&nd, 2.0);
	holding(&nd, 40 * GIB);
	holding(&nd, 40 * GIB);
	/* 80 GiB promised already: 16 more only past the GPU's memory */
	assert_int_equal(ask(&nd, 16 * GIB, GS_ISOLATION_MEMORY, GS_SWAP_ALLOW,
	                     GS_MODE_AUTO, &d),
	                 GS_OK);
	assert_false(gs_mode_is_mig(d.mode));
	assert_int_equal(d.memory_bytes, 16 * GIB);
	assert_non_null(strstr(d.mode_why, "auto: "));
	assert_non_null(strstr(
	    d.mode_why,
	    "; 16 GiB promised (up to 2.00 x the GPU), resident only while active"));
	gs_adm_decision_fini(&d);
	node_fini(&nd);
}

static void
the_advisor_sending_a_slice_to_mig_says_its_promise_stays_resident(void **state)
{
	struct node nd;
	struct gs_adm_decision d;
	char want[96];

	(void)state;
	node_init(&nd, 2.0);
	assert_int_equal(ask(&nd, 10 * GIB, GS_ISOLATION_HARD, GS_SWAP_ALLOW,
	                     GS_MODE_AUTO, &d),
	                 GS_OK);
	assert_true(gs_mode_is_mig(d.mode));
	assert_non_null(d.profile);
	/* the planner's profile holds the whole promise, not a share of it */
	assert_true(d.memory_bytes >= 10 * GIB);
	snprintf(
	    want, sizeof(want),
	    "; MIG is not oversubscribed: all %llu MiB promised stays resident",
	    (unsigned long long)(d.memory_bytes >> 20));
	if (d.memory_bytes % GIB == 0)
		snprintf(
		    want, sizeof(want),
		    "; MIG is not oversubscribed: all %llu GiB promised stays resident",
		    (unsigned long long)(d.memory_bytes / GIB));
	assert_non_null(strstr(d.mode_why, want));
	gs_adm_decision_fini(&d);
	node_fini(&nd);
}

static void swap_never_and_whole_gpus_say_all_stays_resident(void **state)
{
	struct node nd;
	struct gs_adm_decision d;

	(void)state;
	node_init(&nd, 2.0);
	assert_int_equal(ask(&nd, 8 * GIB, GS_ISOLATION_MEMORY, GS_SWAP_NEVER,
	                     GS_MODE_AUTO, &d),
	                 GS_OK);
	assert_non_null(strstr(
	    d.mode_why, "; swap never: all 8 GiB promised stays resident"));
	gs_adm_decision_fini(&d);
	node_fini(&nd);

	node_init(&nd, 2.0);
	assert_int_equal(ask(&nd, 8 * GIB, GS_ISOLATION_EXCLUSIVE,
	                     GS_SWAP_ALLOW, GS_MODE_AUTO, &d),
	                 GS_OK);
	assert_non_null(strstr(
	    d.mode_why,
	    "; a whole GPU is not oversubscribed: all 80 GiB stays resident"));
	gs_adm_decision_fini(&d);
	node_fini(&nd);
}

static void
nothing_is_added_without_oversubscription_or_an_auto_choice(void **state)
{
	struct node nd;
	struct gs_adm_decision d;

	(void)state;
	node_init(&nd, 1.0);
	assert_int_equal(ask(&nd, 16 * GIB, GS_ISOLATION_MEMORY, GS_SWAP_ALLOW,
	                     GS_MODE_AUTO, &d),
	                 GS_OK);
	assert_non_null(strstr(d.mode_why, "auto: "));
	assert_null(strstr(d.mode_why, "promised"));
	assert_null(strstr(d.mode_why, "resident"));
	gs_adm_decision_fini(&d);
	node_fini(&nd);

	node_init(&nd, 2.0);
	assert_int_equal(ask(&nd, 16 * GIB, GS_ISOLATION_MEMORY, GS_SWAP_ALLOW,
	                     GS_MODE_TIMESLICE, &d),
	                 GS_OK);
	assert_string_equal(d.mode_why, "");
	gs_adm_decision_fini(&d);
	node_fini(&nd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        a_swappable_fraction_is_promised_past_the_gpu_and_resident_only_while_active),
	    cmocka_unit_test(
	        the_advisor_sending_a_slice_to_mig_says_its_promise_stays_resident),
	    cmocka_unit_test(swap_never_and_whole_gpus_say_all_stays_resident),
	    cmocka_unit_test(
	        nothing_is_added_without_oversubscription_or_an_auto_choice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
