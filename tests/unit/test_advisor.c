/*
 * test_advisor.c - the decision tree: a table of answer sets that reaches
 * every leaf along every path, the missing-answer cases, and an exhaustive
 * check of every answer combination against a naive nested-if copy of the
 * seed article's tree.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "gs/advisor.h"

#define Y GS_ANS_YES
#define N GS_ANS_NO
#define U GS_ANS_UNSET

/* Answers in question order: Q1 mig-gpu workload memiso own-driver
 * sm-bound soft-compute-ok accept-fault-sharing. */
static const struct {
	enum gs_advisor_answer a[GS_ADVQ__COUNT];
	enum gs_advisor_mechanism leaf;
	int path_len;
} leaf_rows[] = {
    {{GS_ANS_SINGLE_TENANT, U, U, U, U, U, U, U}, GS_ADVM_NONE, 1},
    {{Y, Y, U, U, U, U, U, U}, GS_ADVM_MIG, 2},
    {{Y, N, U, U, U, U, U, U}, GS_ADVM_NONE, 2},
    {{N, U, GS_ANS_LATENCY, Y, U, U, Y, U}, GS_ADVM_FRACTIONS, 4},
    {{N, Y, GS_ANS_LATENCY, Y, U, U, N, U}, GS_ADVM_MIG, 5},
    {{N, N, GS_ANS_LATENCY, Y, U, U, N, U}, GS_ADVM_NONE, 5},
    {{N, U, GS_ANS_LATENCY, N, N, U, U, U}, GS_ADVM_TIMESLICE_PLUGIN, 4},
    {{N, U, GS_ANS_LATENCY, N, Y, N, U, U}, GS_ADVM_TIMESLICE_OPERATOR, 5},
    {{N, U, GS_ANS_LATENCY, N, Y, Y, U, Y}, GS_ADVM_MPS, 6},
    {{N, U, GS_ANS_LATENCY, N, Y, Y, U, N}, GS_ADVM_TIMESLICE_OPERATOR, 6},
    {{N, U, GS_ANS_BATCH, U, N, U, U, U}, GS_ADVM_TIMESLICE_PLUGIN, 3},
    {{N, U, GS_ANS_BATCH, U, Y, N, U, U}, GS_ADVM_TIMESLICE_OPERATOR, 4},
    {{N, U, GS_ANS_BATCH, U, Y, Y, U, Y}, GS_ADVM_MPS, 5},
    {{N, U, GS_ANS_BATCH, U, Y, Y, U, N}, GS_ADVM_TIMESLICE_OPERATOR, 5},
};

static void every_leaf_is_reached_with_only_the_answers_on_its_path(void **s)
{
	bool seen[GS_ADVM__COUNT] = {false};

	for (size_t i = 0; i < sizeof(leaf_rows) / sizeof(leaf_rows[0]); i++) {
		struct gs_advisor_answers a;
		struct gs_advice adv;
		struct gs_errbuf eb = {0};

		memcpy(a.a, leaf_rows[i].a, sizeof(a.a));
		assert_int_equal(gs_advisor_walk(&a, &adv, &eb), GS_OK);
		if (!adv.done || adv.mechanism != leaf_rows[i].leaf)
			fail_msg("row %zu: done=%d mech=%s", i, adv.done,
			         gs_advisor_mechanism_name(adv.mechanism));
		assert_int_equal(adv.n_path, leaf_rows[i].path_len);
		seen[adv.mechanism] = true;
		/* Each question on the path had an answer, and only those. */
		for (int k = 0; k < adv.n_path; k++)
			assert_int_equal(adv.path_answer[k], a.a[adv.path[k]]);
	}
	for (int m = 0; m < GS_ADVM__COUNT; m++)
		assert_true(seen[m]);
}

static void every_leaf_has_text_and_a_mode(void **s)
{
	for (int m = 0; m < GS_ADVM__COUNT; m++) {
		assert_non_null(gs_advisor_mechanism_name(m));
		assert_non_null(gs_advisor_mechanism_title(m));
		assert_true(strlen(gs_advisor_tradeoff(m)) > 40);
		assert_non_null(gs_advisor_mode_note(m));
		assert_int_not_equal(gs_advisor_mode(m), GS_MODE_AUTO);
	}
	assert_int_equal(gs_advisor_mode(GS_ADVM_MIG), GS_MODE_MIG);
	assert_int_equal(gs_advisor_mode(GS_ADVM_MPS), GS_MODE_MPS);
	assert_true(gs_advisor_whole_gpu(GS_ADVM_NONE));
	assert_false(gs_advisor_whole_gpu(GS_ADVM_FRACTIONS));
	assert_null(gs_advisor_mechanism_name(GS_ADVM__COUNT));
}

static void walk_stops_at_the_first_missing_answer_on_the_path(void **s)
{
	static const struct {
		enum gs_advisor_answer a[GS_ADVQ__COUNT];
		enum gs_advisor_question need;
	} rows[] = {
	    {{U, Y, GS_ANS_BATCH, Y, Y, Y, Y, Y}, GS_ADVQ_HARD_ISOLATION},
	    {{Y, U, U, U, U, U, U, U}, GS_ADVQ_MIG_GPU},
	    {{N, U, U, U, U, U, U, U}, GS_ADVQ_WORKLOAD},
	    {{N, U, GS_ANS_LATENCY, U, U, U, U, U}, GS_ADVQ_MEMORY_ISOLATION},
	    {{N, U, GS_ANS_LATENCY, Y, U, U, U, U}, GS_ADVQ_SOFT_COMPUTE_OK},
	    {{N, U, GS_ANS_LATENCY, Y, U, U, N, U}, GS_ADVQ_MIG_GPU},
	    {{N, U, GS_ANS_BATCH, U, U, U, U, U}, GS_ADVQ_OWN_DRIVER},
	    {{N, U, GS_ANS_BATCH, U, Y, U, U, U}, GS_ADVQ_SM_BOUND},
	    {{N, U, GS_ANS_BATCH, U, Y, Y, U, U}, GS_ADVQ_ACCEPT_FAULT_SHARING},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gs_advisor_answers a;
		struct gs_advice adv;

		memcpy(a.a, rows[i].a, sizeof(a.a));
		assert_int_equal(gs_advisor_walk(&a, &adv, NULL), GS_OK);
		assert_false(adv.done);
		assert_int_equal(adv.need, rows[i].need);
	}
}

static void answers_that_do_not_fit_the_question_are_rejected(void **s)
{
	struct gs_advisor_answers a = {{GS_ANS_BATCH}};
	struct gs_advice adv;
	struct gs_errbuf eb = {0};
	enum gs_advisor_answer ans;

	assert_int_equal(gs_advisor_walk(&a, &adv, &eb), GS_ERR_INVALID);
	assert_string_equal(eb.msg,
	                    "--hard-isolation takes yes|no|single-tenant, "
	                    "got 'batch'");
	gs_errbuf_init(&eb);
	assert_int_equal(
	    gs_advisor_parse_answer(GS_ADVQ_WORKLOAD, "yes", &ans, &eb),
	    GS_ERR_INVALID);
	assert_string_equal(eb.msg,
	                    "--workload takes batch|latency, got 'yes'");
	assert_int_equal(gs_advisor_parse_answer(GS_ADVQ_HARD_ISOLATION,
	                                         "Single-Tenant", &ans, NULL),
	                 GS_OK);
	assert_int_equal(ans, GS_ANS_SINGLE_TENANT);
	assert_int_equal(gs_advisor_parse_answer(GS_ADVQ_SM_BOUND,
	                                         "single-tenant", &ans, NULL),
	                 GS_ERR_INVALID);
}

/* The seed article's tree, written out as plainly as possible. */
static int naive_tree(const enum gs_advisor_answer *a)
{
	enum { H, G, W, M, D, S, C, F };

	if (a[H] == GS_ANS_SINGLE_TENANT)
		return GS_ADVM_NONE;
	if (a[H] == Y)
		return a[G] == Y ? GS_ADVM_MIG : GS_ADVM_NONE;
	if (a[W] == GS_ANS_LATENCY && a[M] == Y) {
		if (a[C] == Y)
			return GS_ADVM_FRACTIONS;
		return a[G] == Y ? GS_ADVM_MIG : GS_ADVM_NONE;
	}
	if (a[D] == N)
		return GS_ADVM_TIMESLICE_PLUGIN;
	if (a[S] == N)
		return GS_ADVM_TIMESLICE_OPERATOR;
	return a[F] == Y ? GS_ADVM_MPS : GS_ADVM_TIMESLICE_OPERATOR;
}

static void walk_matches_a_naive_tree_for_every_answer_combination(void **s)
{
	static const enum gs_advisor_answer q1[] = {Y, N, GS_ANS_SINGLE_TENANT};
	static const enum gs_advisor_answer wl[] = {GS_ANS_BATCH,
	                                            GS_ANS_LATENCY};
	int combos = 0;

	for (int i = 0; i < 3 * 2 * 2 * 2 * 2 * 2 * 2 * 2; i++) {
		struct gs_advisor_answers a;
		struct gs_advice adv;
		int r = i;

		a.a[GS_ADVQ_HARD_ISOLATION] = q1[r % 3], r /= 3;
		a.a[GS_ADVQ_WORKLOAD] = wl[r % 2], r /= 2;
		for (int q = 0; q < GS_ADVQ__COUNT; q++) {
			if (q == GS_ADVQ_HARD_ISOLATION ||
			    q == GS_ADVQ_WORKLOAD)
				continue;
			a.a[q] = (r % 2) ? Y : N, r /= 2;
		}
		assert_int_equal(gs_advisor_walk(&a, &adv, NULL), GS_OK);
		assert_true(adv.done);
		assert_int_equal(adv.mechanism, naive_tree(a.a));
		combos++;
	}
	assert_int_equal(combos, 384);
}

static void auto_mode_follows_the_spec_isolation_and_the_gpu(void **s)
{
	static const struct {
		const char *kv;
		const char *gpu; /* NULL: not MIG-capable */
		enum gs_slice_mode mode;
		enum gs_advisor_mechanism mech;
	} rows[] = {
	    {"isolation=none", "H100", GS_MODE_MPS, GS_ADVM_MPS},
	    {"isolation=none", NULL, GS_MODE_MPS, GS_ADVM_MPS},
	    {"isolation=memory", "H100", GS_MODE_TIMESLICE, GS_ADVM_FRACTIONS},
	    {"isolation=hard", "H100", GS_MODE_MIG, GS_ADVM_MIG},
	    {"isolation=hard", NULL, GS_MODE_TIMESLICE, GS_ADVM_NONE},
	    {"isolation=exclusive", "A30", GS_MODE_TIMESLICE, GS_ADVM_NONE},
	    {"mig-profile=1g.10gb", "H100", GS_MODE_MIG, GS_ADVM_MIG},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gs_slice_spec spec;
		struct gs_advice adv;
		enum gs_slice_mode mode;
		const struct gs_gpu_model *m =
		    rows[i].gpu ? gs_catalog_find(rows[i].gpu) : NULL;

		gs_spec_init(&spec);
		assert_int_equal(gs_spec_parse_kvlist(&spec, rows[i].kv, NULL),
		                 GS_OK);
		assert_int_equal(
		    gs_advisor_auto_mode(&spec, m, true, &mode, &adv, NULL), GS_OK);
		assert_int_equal(mode, rows[i].mode);
		assert_true(adv.done);
		assert_int_equal(adv.mechanism, rows[i].mech);
	}
}

static void
auto_mode_keeps_an_explicit_mode_and_refuses_mig_without_mig(void **s)
{
	struct gs_slice_spec spec;
	struct gs_errbuf eb = {0};
	enum gs_slice_mode mode;

	gs_spec_init(&spec);
	assert_int_equal(gs_spec_parse_kvlist(&spec, "mode=mps", NULL), GS_OK);
	assert_int_equal(gs_advisor_auto_mode(&spec, NULL, true, &mode, NULL, NULL),
	                 GS_OK);
	assert_int_equal(mode, GS_MODE_MPS);
	gs_spec_init(&spec);
	assert_int_equal(
	    gs_spec_parse_kvlist(&spec, "mig-profile=1g.5gb", NULL), GS_OK);
	assert_int_equal(gs_advisor_auto_mode(&spec, NULL, true, &mode, NULL, &eb),
	                 GS_ERR_UNSUPPORTED);
	assert_string_equal(eb.msg,
	                    "mig-profile 1g.5gb needs a MIG-capable GPU");
}

/* A slice that accepts a shared fault domain gets MPS where the node has
 * an MPS control daemon, and turns (time-slicing) where it has none; the
 * explanation says which and why. Other isolation needs never reach MPS,
 * so they do not depend on it. */
static void auto_mode_falls_back_to_turns_without_mps(void **s)
{
	struct gs_slice_spec spec;
	struct gs_advice adv;
	enum gs_slice_mode mode;
	char buf[200];

	(void)s;
	gs_spec_init(&spec);
	assert_int_equal(gs_advisor_auto_mode(&spec, gs_catalog_find("H100"),
	                                      true, &mode, &adv, NULL),
	                 GS_OK);
	assert_int_equal(mode, GS_MODE_MPS);
	assert_false(adv.mps_missing);
	(void)gs_advisor_explain(&adv, buf, sizeof(buf));
	assert_string_equal(buf, "hard-isolation=no, workload=batch, "
	                         "own-driver=yes, sm-bound=yes, "
	                         "accept-fault-sharing=yes -> mps");

	assert_int_equal(gs_advisor_auto_mode(&spec, gs_catalog_find("H100"),
	                                      false, &mode, &adv, NULL),
	                 GS_OK);
	assert_int_equal(mode, GS_MODE_TIMESLICE);
	assert_true(adv.mps_missing);
	(void)gs_advisor_explain(&adv, buf, sizeof(buf));
	assert_non_null(strstr(buf, "-> mps; no MPS control daemon here -> "
	                            "timeslice"));

	gs_spec_init(&spec);
	assert_int_equal(
	    gs_spec_parse_kvlist(&spec, "isolation=memory", NULL), GS_OK);
	assert_int_equal(
	    gs_advisor_auto_mode(&spec, NULL, false, &mode, &adv, NULL),
	    GS_OK);
	assert_int_equal(mode, GS_MODE_TIMESLICE);
	assert_false(adv.mps_missing);
}

/* The path as text: flag=answer per question in order, then the leaf; a
 * small buffer truncates and stays terminated; an unfinished walk names
 * no leaf. */
static void explain_names_the_answers_and_the_leaf(void **s)
{
	struct gs_slice_spec spec;
	struct gs_advice adv;
	enum gs_slice_mode mode;
	char buf[200], small[12];
	size_t n;

	(void)s;
	gs_spec_init(&spec);
	assert_int_equal(gs_spec_parse_kvlist(&spec, "isolation=hard", NULL),
	                 GS_OK);
	assert_int_equal(gs_advisor_auto_mode(&spec, gs_catalog_find("H100"),
	                                      true, &mode, &adv, NULL),
	                 GS_OK);
	n = gs_advisor_explain(&adv, buf, sizeof(buf));
	assert_string_equal(buf, "hard-isolation=yes, gpu=yes -> mig");
	assert_int_equal(n, strlen(buf));
	n = gs_advisor_explain(&adv, small, sizeof(small));
	assert_int_equal(n, sizeof(small) - 1);
	assert_string_equal(small, "hard-isolat");

	memset(&adv, 0, sizeof(adv));
	adv.n_path = 1;
	adv.path[0] = GS_ADVQ_HARD_ISOLATION;
	adv.path_answer[0] = GS_ANS_NO;
	(void)gs_advisor_explain(&adv, buf, sizeof(buf));
	assert_string_equal(buf, "hard-isolation=no");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        every_leaf_is_reached_with_only_the_answers_on_its_path),
	    cmocka_unit_test(auto_mode_falls_back_to_turns_without_mps),
	    cmocka_unit_test(every_leaf_has_text_and_a_mode),
	    cmocka_unit_test(
	        walk_stops_at_the_first_missing_answer_on_the_path),
	    cmocka_unit_test(answers_that_do_not_fit_the_question_are_rejected),
	    cmocka_unit_test(
	        walk_matches_a_naive_tree_for_every_answer_combination),
	    cmocka_unit_test(auto_mode_follows_the_spec_isolation_and_the_gpu),
	    cmocka_unit_test(explain_names_the_answers_and_the_leaf),
	    cmocka_unit_test(
	        auto_mode_keeps_an_explicit_mode_and_refuses_mig_without_mig),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
