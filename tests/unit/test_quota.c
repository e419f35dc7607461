/*
 * test_quota.c - hierarchical quotas: tree validation, admission messages,
 * borrowing, and reclaim checked against a naive reference.
 *
 * The reference (ref_admit) is written straight from the rules in
 * quota.h, as slowly as possible: it recomputes every usage from the slice
 * list for every question it asks and sorts candidates by repeated
 * selection. Random trees and slice sets must give the same verdict and
 * the same victims, in the same order, from both.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/quota.h"

#define GIB (1024LL * 1024 * 1024)
#define UNL GS_QUOTA_UNLIMITED

static struct gs_qvec vec(int64_t mem, int64_t compute, int64_t mig)
{
	struct gs_qvec v = {{mem, compute, mig}};
	return v;
}

static struct gs_quota_tree *make_tree(const struct gs_quota_team_def *d, int n)
{
	struct gs_quota_tree *t = NULL;
	struct gs_errbuf eb = {0};

	assert_int_equal(gs_quota_tree_create(d, n, &t, &eb), GS_OK);
	assert_non_null(t);
	return t;
}

static void expect_tree_error(const struct gs_quota_team_def *d, int n,
                              gs_err want, const char *msg)
{
	struct gs_quota_tree *t = (void *)1;
	struct gs_errbuf eb = {0};

	assert_int_equal(gs_quota_tree_create(d, n, &t, &eb), want);
	assert_null(t);
	assert_string_equal(eb.msg, msg);
}

/* ---- tree validation ------------------------------------------------ */

static void tree_rejects_parent_cycle_naming_it(void **state)
{
	struct gs_quota_team_def d[] = {
	    {"org", NULL, vec(0, 0, 0), vec(UNL, UNL, UNL)},
	    {"a", "c", vec(0, 0, 0), vec(UNL, UNL, UNL)},
	    {"b", "a", vec(0, 0, 0), vec(UNL, UNL, UNL)},
	    {"c", "b", vec(0, 0, 0), vec(UNL, UNL, UNL)},
	};

	expect_tree_error(d, 4, GS_ERR_INVALID,
	                  "teams form a cycle: a -> c -> b -> a");
}

static void tree_rejects_team_that_is_its_own_parent(void **state)
{
	struct gs_quota_team_def d[] = {
	    {"ml", "ml", vec(0, 0, 0), vec(UNL, UNL, UNL)},
	};

	expect_tree_error(d, 1, GS_ERR_INVALID, "teams form a cycle: ml -> ml");
}

static void tree_rejects_undefined_parent(void **state)
{
	struct gs_quota_team_def d[] = {
	    {"ml", "research", vec(0, 0, 0), vec(UNL, UNL, UNL)},
	};

	expect_tree_error(d, 1, GS_ERR_NOT_FOUND,
	                  "team ml: parent 'research' is not defined");
}

static void tree_rejects_duplicate_and_empty_names(void **state)
{
	struct gs_quota_team_def d[] = {
	    {"ml", NULL, vec(0, 0, 0), vec(UNL, UNL, UNL)},
	    {"ml", NULL, vec(0, 0, 0), vec(UNL, UNL, UNL)},
	};
	struct gs_quota_team_def e[] = {
	    {"", NULL, vec(0, 0, 0), vec(UNL, UNL, UNL)},
	};

	expect_tree_error(d, 2, GS_ERR_EXISTS, "team 'ml' is defined twice");
	expect_tree_error(e, 1, GS_ERR_INVALID, "team 0 has an empty name");
}

static void tree_rejects_guarantee_above_max(void **state)
{
	struct gs_quota_team_def d[] = {
	    {"ml", NULL, vec(0, 150, 0), vec(UNL, 120, UNL)},
	};

	expect_tree_error(d, 1, GS_ERR_RANGE,
	                  "team ml: guaranteed 150% compute exceeds its max "
	                  "120%");
}

static void tree_rejects_children_guaranteed_more_than_parent(void **state)
{
	struct gs_quota_team_def d[] = {
	    {"org", NULL, vec(40 * GIB, 100, 0), vec(UNL, UNL, UNL)},
	    {"ml", "org", vec(30 * GIB, 50, 0), vec(UNL, UNL, UNL)},
	    {"cv", "org", vec(20 * GIB, 50, 0), vec(UNL, UNL, UNL)},
	};

	expect_tree_error(d, 3, GS_ERR_RANGE,
	                  "team org: its children guarantee 50.0 GiB memory in "
	                  "total, more than its own 40.0 GiB");
}

static void tree_reports_structure(void **state)
{
	struct gs_quota_team_def d[] = {
	    {"ml", "org", vec(0, 10, 0), vec(UNL, UNL, UNL)},
	    {"org", NULL, vec(0, 100, 0), vec(UNL, UNL, UNL)},
	    {"nlp", "ml", vec(0, 5, 0), vec(UNL, UNL, UNL)},
	};
	struct gs_quota_tree *t = make_tree(d, 3);
	struct gs_errbuf eb = {0};

	assert_int_equal(gs_quota_tree_count(t), 3);
	assert_int_equal(gs_quota_tree_find(t, "nlp"), 2);
	assert_int_equal(gs_quota_tree_find(t, "nobody"), -1);
	assert_int_equal(gs_quota_tree_parent(t, 2), 0);
	assert_int_equal(gs_quota_tree_parent(t, 1), -1);
	assert_int_equal(gs_quota_tree_depth(t, 2), 2);
	assert_string_equal(gs_quota_tree_name(t, 1), "org");
	assert_int_equal(gs_quota_tree_check_capacity(
	                     t, &(struct gs_qvec){{0, 800, 0}}, &eb),
	                 GS_OK);
	assert_int_equal(
	    gs_quota_tree_check_capacity(t, &(struct gs_qvec){{0, 50, 0}}, &eb),
	    GS_ERR_RANGE);
	assert_string_equal(eb.msg, "top-level teams guarantee 100% compute "
	                            "in total, more than the cluster's 50%");
	gs_quota_tree_destroy(t);
	gs_quota_tree_destroy(NULL);
}

/* ---- admission messages (table) -------------------------------------- */

/*
 * org (guarantee 200%, max 300%)
 *   ml (guarantee 100%, max 120%, memory max 40 GiB)
 *   cv (guarantee 100%, max 200%)
 * top (guarantee 100%)
 * Capacity 400% compute, 320 GiB, 14 MIG slices.
 */
static const struct gs_quota_team_def msg_teams[] = {
    {"org", NULL, {{0, 200, 0}}, {{UNL, 300, UNL}}},
    {"ml", "org", {{0, 100, 0}}, {{40 * GIB, 120, 3}}},
    {"cv", "org", {{0, 100, 0}}, {{UNL, 200, UNL}}},
    {"top", NULL, {{0, 100, 7}}, {{UNL, UNL, UNL}}},
};

struct msg_case {
	const char *name;
	int n_slices;
	struct gs_quota_slice slices[4];
	struct gs_quota_request req;
	enum gs_quota_verdict verdict;
	const char *why;
};

static const struct msg_case msg_cases[] = {
    {"team over its compute max",
     1,
     {{1, 1, 1, 1, {{0, 100, 0}}}},
     {1, 1, {{0, 40, 0}}},
     GS_QUOTA_REJECT,
     "team ml would use 140% compute, max 120%"},
    {"team over its memory max",
     1,
     {{1, 1, 1, 1, {{32 * GIB, 10, 0}}}},
     {1, 1, {{16 * GIB, 10, 0}}},
     GS_QUOTA_REJECT,
     "team ml would use 48.0 GiB memory, max 40.0 GiB"},
    {"team over its MIG max",
     1,
     {{1, 1, 1, 1, {{0, 0, 2}}}},
     {1, 1, {{0, 0, 3}}},
     GS_QUOTA_REJECT,
     "team ml would use 5 MIG slices, max 3"},
    {"ancestor over its max",
     2,
     {{1, 1, 1, 1, {{0, 100, 0}}}, {2, 2, 1, 1, {{0, 190, 0}}}},
     {1, 1, {{0, 20, 0}}},
     GS_QUOTA_REJECT,
     "team org (an ancestor of ml) would use 310% compute, max 300%"},
    {"within guarantee",
     0,
     {{0}},
     {1, 1, {{0, 60, 0}}},
     GS_QUOTA_ADMIT,
     "fits within team ml's guarantee"},
    {"borrows idle capacity",
     1,
     {{1, 1, 1, 1, {{0, 90, 0}}}},
     {1, 1, {{GIB, 20, 0}}},
     GS_QUOTA_ADMIT,
     "fits: team ml borrows 1.0 GiB memory, 10% compute"},
    {"cannot borrow without idle capacity",
     2,
     {{1, 2, 1, 1, {{0, 200, 0}}}, {2, 3, 1, 1, {{0, 150, 0}}}},
     {0, 1, {{0, 60, 0}}},
     GS_QUOTA_REJECT,
     "team org would use 260% compute, above its guarantee 200%, and "
     "only 50% is idle to borrow"},
    {"reclaims borrowed capacity",
     2,
     {{1, 2, 1, 1, {{0, 200, 0}}}, {2, 3, 1, 5, {{0, 200, 0}}}},
     {1, 1, {{0, 50, 0}}},
     GS_QUOTA_ADMIT_RECLAIM,
     "team ml takes back its guarantee: 1 borrowed slice to preempt"},
};

static void admission_messages_match_table(void **state)
{
	struct gs_quota_tree *t = make_tree(msg_teams, 4);
	struct gs_qvec cap = vec(320 * GIB, 400, 14);

	for (size_t i = 0; i < sizeof(msg_cases) / sizeof(msg_cases[0]); i++) {
		const struct msg_case *c = &msg_cases[i];
		struct gs_quota_decision d;
		struct gs_errbuf eb = {0};
		gs_err err;

		err = gs_quota_admit(t, &cap, c->slices, (size_t)c->n_slices,
		                     &c->req, &d, &eb);
		if (d.verdict != c->verdict || strcmp(d.why, c->why) != 0)
			fail_msg("%s: got verdict %d '%s'", c->name, d.verdict,
			         d.why);
		assert_int_equal(
		    err, c->verdict == GS_QUOTA_REJECT ? GS_ERR_QUOTA : GS_OK);
		if (err != GS_OK)
			assert_string_equal(eb.msg, c->why);
		gs_quota_decision_fini(&d);
	}
	gs_quota_tree_destroy(t);
}

static void admission_rejects_bad_request(void **state)
{
	struct gs_quota_tree *t = make_tree(msg_teams, 4);
	struct gs_qvec cap = vec(320 * GIB, 400, 14);
	struct gs_quota_request bad_team = {9, 1, {{0, 1, 0}}};
	struct gs_quota_request negative = {1, 1, {{0, -1, 0}}};
	struct gs_quota_slice bad_slice = {1, 7, 1, 1, {{0, 1, 0}}};
	struct gs_quota_request ok = {1, 1, {{0, 1, 0}}};
	struct gs_quota_decision d;
	struct gs_errbuf eb = {0};

	assert_int_equal(gs_quota_admit(t, &cap, NULL, 0, &bad_team, &d, &eb),
	                 GS_ERR_INVALID);
	gs_quota_decision_fini(&d);
	gs_errbuf_init(&eb);
	assert_int_equal(gs_quota_admit(t, &cap, NULL, 0, &negative, &d, &eb),
	                 GS_ERR_INVALID);
	assert_string_equal(eb.msg,
	                    "the request has a negative compute amount");
	gs_quota_decision_fini(&d);
	gs_errbuf_init(&eb);
	assert_int_equal(gs_quota_admit(t, &cap, &bad_slice, 1, &ok, &d, &eb),
	                 GS_ERR_INVALID);
	assert_string_equal(eb.msg,
	                    "slice 1 names team 7, which does not exist");
	gs_quota_decision_fini(&d);
	gs_quota_tree_destroy(t);
}

static void usage_counts_children_against_parents(void **state)
{
	struct gs_quota_tree *t = make_tree(msg_teams, 4);
	struct gs_quota_slice s[] = {
	    {1, 1, 1, 1, {{GIB, 30, 1}}},
	    {2, 2, 1, 1, {{2 * GIB, 20, 0}}},
	    {3, 0, 1, 1, {{0, 5, 0}}},
	    {4, 3, 1, 1, {{0, 7, 2}}},
	};
	struct gs_qvec u[4];
	struct gs_errbuf eb = {0};

	assert_int_equal(gs_quota_usage(t, s, 4, u, &eb), GS_OK);
	assert_int_equal(u[0].v[GS_QRES_COMPUTE], 55);
	assert_int_equal(u[0].v[GS_QRES_MEMORY], 3 * GIB);
	assert_int_equal(u[0].v[GS_QRES_MIG], 1);
	assert_int_equal(u[1].v[GS_QRES_COMPUTE], 30);
	assert_int_equal(u[3].v[GS_QRES_MIG], 2);
	gs_quota_tree_destroy(t);
}

/* ---- reclaim --------------------------------------------------------- */

/*
 * prod (guarantee 200%) and dev (guarantee 200%), capacity 400%. dev
 * borrowed everything: prod asking for 150% must get back 150% from dev,
 * taking the lowest priority first, then the most recent.
 */
static void reclaim_takes_lowest_priority_then_most_recent(void **state)
{
	struct gs_quota_team_def d[] = {
	    {"prod", NULL, {{0, 200, 0}}, {{UNL, UNL, UNL}}},
	    {"dev", NULL, {{0, 200, 0}}, {{UNL, UNL, UNL}}},
	};
	struct gs_quota_slice s[] = {
	    {10, 1, 2, 100, {{0, 100, 0}}}, /* high, old */
	    {11, 1, 0, 101, {{0, 50, 0}}},  /* low, old */
	    {12, 1, 1, 102, {{0, 100, 0}}}, /* normal, older */
	    {13, 1, 0, 103, {{0, 50, 0}}},  /* low, recent */
	    {14, 1, 1, 104, {{0, 100, 0}}}, /* normal, recent */
	};
	struct gs_quota_tree *t = make_tree(d, 2);
	struct gs_qvec cap = vec(0, 400, 0);
	struct gs_quota_request req = {0, 1, {{0, 150, 0}}};
	struct gs_quota_decision dec;
	struct gs_errbuf eb = {0};

	assert_int_equal(gs_quota_admit(t, &cap, s, 5, &req, &dec, &eb), GS_OK);
	assert_int_equal(dec.verdict, GS_QUOTA_ADMIT_RECLAIM);
	assert_int_equal(dec.n_victims, 3);
	assert_int_equal(s[dec.victims[0]].id, 13);
	assert_int_equal(s[dec.victims[1]].id, 11);
	assert_int_equal(s[dec.victims[2]].id, 14);
	gs_quota_decision_fini(&dec);
	gs_quota_tree_destroy(t);
}

/*
 * A victim is taken only while its branch is still over its guarantee:
 * dev is 60% over; after two 40% slices it is within its guarantee, so
 * its third slice is passed over although it sorts before ops' slice.
 */
static void reclaim_stops_taking_from_team_back_within_guarantee(void **state)
{
	struct gs_quota_team_def d[] = {
	    {"prod", NULL, {{0, 140, 0}}, {{UNL, UNL, UNL}}},
	    {"dev", NULL, {{0, 60, 0}}, {{UNL, UNL, UNL}}},
	    {"ops", NULL, {{0, 0, 0}}, {{UNL, UNL, UNL}}},
	};
	struct gs_quota_slice s[] = {
	    {1, 1, 0, 10, {{0, 40, 0}}},
	    {2, 1, 0, 11, {{0, 40, 0}}},
	    {3, 1, 0, 12, {{0, 40, 0}}},
	    {4, 2, 1, 13, {{0, 80, 0}}},
	};
	struct gs_quota_tree *t = make_tree(d, 3);
	struct gs_qvec cap = vec(0, 200, 0);
	struct gs_quota_request req = {0, 1, {{0, 130, 0}}};
	struct gs_quota_decision dec;
	struct gs_errbuf eb = {0};

	/* dev uses 120 (60 over), ops 80 (80 over); short: 200+130-200=130 */
	assert_int_equal(gs_quota_admit(t, &cap, s, 4, &req, &dec, &eb), GS_OK);
	assert_int_equal(dec.verdict, GS_QUOTA_ADMIT_RECLAIM);
	assert_int_equal(dec.n_victims, 3);
	assert_int_equal(s[dec.victims[0]].id, 3);
	assert_int_equal(s[dec.victims[1]].id, 2);
	assert_int_equal(s[dec.victims[2]].id, 4);
	gs_quota_decision_fini(&dec);
	gs_quota_tree_destroy(t);
}

/*
 * org A holds ml (borrowing from its idle sibling nlp); org B is over its
 * guarantee. A team of org C reclaims from B, never from ml: A as a whole
 * is within its guarantee. nlp, ml's sibling, reclaims from ml.
 */
static void reclaim_respects_branch_guarantees(void **state)
{
	struct gs_quota_team_def d[] = {
	    {"A", NULL, {{0, 200, 0}}, {{UNL, UNL, UNL}}},
	    {"ml", "A", {{0, 100, 0}}, {{UNL, UNL, UNL}}},
	    {"nlp", "A", {{0, 100, 0}}, {{UNL, UNL, UNL}}},
	    {"B", NULL, {{0, 100, 0}}, {{UNL, UNL, UNL}}},
	    {"C", NULL, {{0, 100, 0}}, {{UNL, UNL, UNL}}},
	    {"web", "C", {{0, 100, 0}}, {{UNL, UNL, UNL}}},
	};
	struct gs_quota_slice s[] = {
	    {1, 1, 0, 50, {{0, 200, 0}}}, /* ml: 100 over, low prio, recent */
	    {2, 3, 1, 10, {{0, 200, 0}}}, /* B: 100 over */
	};
	struct gs_quota_tree *t = make_tree(d, 6);
	struct gs_qvec cap = vec(0, 400, 0);
	struct gs_quota_request web = {5, 1, {{0, 100, 0}}};
	struct gs_quota_request nlp = {2, 1, {{0, 100, 0}}};
	struct gs_quota_decision dec;
	struct gs_errbuf eb = {0};

	assert_int_equal(gs_quota_admit(t, &cap, s, 2, &web, &dec, &eb), GS_OK);
	assert_int_equal(dec.n_victims, 1);
	assert_int_equal(s[dec.victims[0]].id, 2);
	gs_quota_decision_fini(&dec);

	assert_int_equal(gs_quota_admit(t, &cap, s, 2, &nlp, &dec, &eb), GS_OK);
	assert_int_equal(dec.n_victims, 1);
	assert_int_equal(s[dec.victims[0]].id, 1);
	gs_quota_decision_fini(&dec);
	gs_quota_tree_destroy(t);
}

static void reclaim_rejects_when_borrowed_capacity_is_not_enough(void **state)
{
	/* Over-committed: guarantees 300% on a 200% cluster. */
	struct gs_quota_team_def d[] = {
	    {"prod", NULL, {{0, 150, 0}}, {{UNL, UNL, UNL}}},
	    {"dev", NULL, {{0, 150, 0}}, {{UNL, UNL, UNL}}},
	};
	struct gs_quota_slice s[] = {{1, 1, 0, 1, {{0, 150, 0}}},
	                             {2, 0, 0, 1, {{0, 30, 0}}}};
	struct gs_quota_tree *t = make_tree(d, 2);
	struct gs_qvec cap = vec(0, 200, 0);
	struct gs_quota_request req = {0, 1, {{0, 100, 0}}};
	struct gs_quota_decision dec;
	struct gs_errbuf eb = {0};

	assert_int_equal(gs_quota_admit(t, &cap, s, 2, &req, &dec, &eb),
	                 GS_ERR_QUOTA);
	assert_int_equal(dec.n_victims, 0);
	assert_string_equal(eb.msg,
	                    "team prod is within its guarantee, but idle and "
	                    "borrowed compute add up to only 20% of the 100% "
	                    "it asks for");
	gs_quota_decision_fini(&dec);
	gs_quota_tree_destroy(t);
}

/* ---- the naive reference --------------------------------------------- */

#define R_TEAMS  7
#define R_SLICES 14

struct ref {
	int n_teams;
	struct gs_quota_team_def d[R_TEAMS];
	char names[R_TEAMS][16];
	int parent[R_TEAMS];
	int n_slices;
	struct gs_quota_slice s[R_SLICES];
	bool gone[R_SLICES];
	struct gs_qvec cap;
};

static bool in_subtree(const struct ref *r, int team, int root)
{
	for (int j = team; j >= 0; j = r->parent[j])
		if (j == root)
			return true;
	return false;
}

static int64_t ref_usage(const struct ref *r, int team, int res)
{
	int64_t u = 0;

	for (int i = 0; i < r->n_slices; i++)
		if (!r->gone[i] && in_subtree(r, r->s[i].team, team))
			u += r->s[i].use.v[res];
	return u;
}

static int64_t ref_own_usage(const struct ref *r, int team, int res)
{
	int64_t u = 0;

	for (int i = 0; i < r->n_slices; i++)
		if (!r->gone[i] && r->s[i].team == team)
			u += r->s[i].use.v[res];
	return u;
}

static int64_t ref_total(const struct ref *r, int res)
{
	int64_t u = 0;

	for (int i = 0; i < r->n_slices; i++)
		if (!r->gone[i])
			u += r->s[i].use.v[res];
	return u;
}

static int64_t ref_own_guarantee(const struct ref *r, int team, int res)
{
	int64_t g = r->d[team].guarantee.v[res];

	for (int c = 0; c < r->n_teams; c++)
		if (r->parent[c] == team)
			g -= r->d[c].guarantee.v[res];
	return g;
}

static int64_t ref_short(const struct ref *r, const struct gs_quota_request *q,
                         int res)
{
	return ref_total(r, res) + q->use.v[res] - r->cap.v[res];
}

static bool ref_borrowed(const struct ref *r, const struct gs_quota_request *q,
                         int i)
{
	int x = r->s[i].team, l = -1;

	if (x == q->team)
		return false;
	/* lowest common ancestor: the deepest ancestor of x above q->team */
	for (int j = x; j >= 0; j = r->parent[j])
		if (in_subtree(r, q->team, j)) {
			l = j;
			break;
		}
	for (int res = 0; res < GS_QRES__COUNT; res++) {
		int64_t use, g;

		if (ref_short(r, q, res) <= 0 || r->s[i].use.v[res] <= 0)
			continue;
		if (l == x) {
			use = ref_own_usage(r, x, res);
			g = ref_own_guarantee(r, x, res);
		} else {
			int b = x;

			while (r->parent[b] != l)
				b = r->parent[b];
			use = ref_usage(r, b, res);
			g = r->d[b].guarantee.v[res];
		}
		if (use > g)
			return true;
	}
	return false;
}

static bool ref_before(const struct gs_quota_slice *a,
                       const struct gs_quota_slice *b)
{
	if (a->priority != b->priority)
		return a->priority < b->priority;
	if (a->created != b->created)
		return a->created > b->created;
	return a->id > b->id;
}

static enum gs_quota_verdict ref_admit(struct ref *r,
                                       const struct gs_quota_request *q,
                                       int *victims, int *n_victims)
{
	bool used[R_SLICES] = {false};
	bool short_any = false;

	*n_victims = 0;
	memset(r->gone, 0, sizeof(r->gone));
	for (int j = q->team; j >= 0; j = r->parent[j])
		for (int res = 0; res < GS_QRES__COUNT; res++)
			if (q->use.v[res] > 0 &&
			    ref_usage(r, j, res) + q->use.v[res] >
			        r->d[j].max.v[res])
				return GS_QUOTA_REJECT;
	for (int res = 0; res < GS_QRES__COUNT; res++) {
		if (ref_short(r, q, res) <= 0)
			continue;
		short_any = true;
		if (ref_usage(r, q->team, res) + q->use.v[res] >
		    r->d[q->team].guarantee.v[res])
			return GS_QUOTA_REJECT;
	}
	if (!short_any)
		return GS_QUOTA_ADMIT;
	for (;;) {
		int best = -1;
		bool still = false;

		for (int res = 0; res < GS_QRES__COUNT; res++)
			if (ref_short(r, q, res) > 0)
				still = true;
		if (!still)
			return GS_QUOTA_ADMIT_RECLAIM;
		/* the next candidate in order that has not been looked at */
		for (int i = 0; i < r->n_slices; i++)
			if (!used[i] && r->s[i].team != q->team &&
			    (best < 0 || ref_before(&r->s[i], &r->s[best])))
				best = i;
		if (best < 0)
			return GS_QUOTA_REJECT;
		used[best] = true;
		if (ref_borrowed(r, q, best)) {
			r->gone[best] = true;
			victims[(*n_victims)++] = best;
		}
	}
}

static int64_t rnd(unsigned *seed, int64_t n)
{
	return n <= 0 ? 0 : (int64_t)(rand_r(seed) % (unsigned)n);
}

static void random_case(struct ref *r, unsigned *seed)
{
	memset(r, 0, sizeof(*r));
	r->n_teams = 1 + (int)rnd(seed, R_TEAMS);
	for (int i = 0; i < r->n_teams; i++) {
		int p = i == 0 ? -1 : (int)rnd(seed, i + 1) - 1;

		snprintf(r->names[i], sizeof(r->names[i]), "t%d", i);
		r->parent[i] = p;
		r->d[i].name = r->names[i];
		r->d[i].parent = p < 0 ? NULL : r->names[p];
		for (int res = 0; res < GS_QRES__COUNT; res++) {
			int64_t room =
			    p < 0 ? 300 : ref_own_guarantee(r, p, res);
			int64_t g = rnd(seed, room + 1);

			if (p < 0)
				g = rnd(seed, 150);
			r->d[i].guarantee.v[res] = g;
			r->d[i].max.v[res] =
			    rnd(seed, 4) == 0 ? UNL : g + rnd(seed, 200);
		}
	}
	for (int res = 0; res < GS_QRES__COUNT; res++) {
		int64_t sum = 0;

		for (int i = 0; i < r->n_teams; i++)
			if (r->parent[i] < 0)
				sum += r->d[i].guarantee.v[res];
		/* sometimes over-committed, to reach the "not enough" path */
		r->cap.v[res] =
		    rnd(seed, 5) == 0 ? sum / 2 : sum + rnd(seed, 100);
	}
	r->n_slices = (int)rnd(seed, R_SLICES + 1);
	for (int i = 0; i < r->n_slices; i++) {
		r->s[i].id = (uint64_t)i + 1;
		r->s[i].team = (int)rnd(seed, r->n_teams);
		r->s[i].priority = (int)rnd(seed, 3);
		r->s[i].created = rnd(seed, 6);
		for (int res = 0; res < GS_QRES__COUNT; res++)
			r->s[i].use.v[res] =
			    rnd(seed, 3) == 0 ? 0 : rnd(seed, 60);
	}
}

static void admission_matches_naive_reference_on_random_cases(void **state)
{
	unsigned seed = 12345;
	int counts[3] = {0, 0, 0};

	for (int iter = 0; iter < 20000; iter++) {
		struct ref r;
		struct gs_quota_tree *t = NULL;
		struct gs_quota_request q;
		struct gs_quota_decision dec;
		struct gs_errbuf eb = {0};
		int victims[R_SLICES], nv;
		enum gs_quota_verdict want;
		gs_err err;

		random_case(&r, &seed);
		assert_int_equal(gs_quota_tree_create(r.d, r.n_teams, &t, &eb),
		                 GS_OK);
		q.team = (int)rnd(&seed, r.n_teams);
		q.priority = 1;
		for (int res = 0; res < GS_QRES__COUNT; res++)
			q.use.v[res] = rnd(&seed, 3) == 0 ? 0 : rnd(&seed, 80);
		want = ref_admit(&r, &q, victims, &nv);
		err = gs_quota_admit(t, &r.cap, r.s, (size_t)r.n_slices, &q,
		                     &dec, &eb);
		if (dec.verdict != want)
			fail_msg("case %d: verdict %d, reference %d (%s)", iter,
			         dec.verdict, want, dec.why);
		assert_int_equal(err, want == GS_QUOTA_REJECT ? GS_ERR_QUOTA
		                                              : GS_OK);
		counts[want]++;
		if (want == GS_QUOTA_ADMIT_RECLAIM) {
			assert_int_equal(dec.n_victims, (size_t)nv);
			for (int k = 0; k < nv; k++)
				assert_int_equal(dec.victims[k],
				                 (size_t)victims[k]);
			/* and they free enough */
			for (int res = 0; res < GS_QRES__COUNT; res++)
				assert_true(ref_short(&r, &q, res) <= 0);
		}
		gs_quota_decision_fini(&dec);
		gs_quota_tree_destroy(t);
	}
	/* every path was exercised */
	assert_true(counts[GS_QUOTA_ADMIT] > 100);
	assert_true(counts[GS_QUOTA_ADMIT_RECLAIM] > 100);
	assert_true(counts[GS_QUOTA_REJECT] > 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(tree_rejects_parent_cycle_naming_it),
	    cmocka_unit_test(tree_rejects_team_that_is_its_own_parent),
	    cmocka_unit_test(tree_rejects_undefined_parent),
	    cmocka_unit_test(tree_rejects_duplicate_and_empty_names),
	    cmocka_unit_test(tree_rejects_guarantee_above_max),
	    cmocka_unit_test(tree_rejects_children_guaranteed_more_than_parent),
	    cmocka_unit_test(tree_reports_structure),
	    cmocka_unit_test(admission_messages_match_table),
	    cmocka_unit_test(admission_rejects_bad_request),
	    cmocka_unit_test(usage_counts_children_against_parents),
	    cmocka_unit_test(reclaim_takes_lowest_priority_then_most_recent),
	    cmocka_unit_test(
	        reclaim_stops_taking_from_team_back_within_guarantee),
	    cmocka_unit_test(reclaim_respects_branch_guarantees),
	    cmocka_unit_test(
	        reclaim_rejects_when_borrowed_capacity_is_not_enough),
	    cmocka_unit_test(admission_matches_naive_reference_on_random_cases),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
