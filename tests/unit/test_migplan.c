/*
 * test_migplan.c - the MIG planner against exhaustive search.
 *
 * The reference enumerates every subset of (profile, placement) pairs that
 * do not overlap, scores each from scratch and keeps the best value and
 * the fewest changes: nothing shared with the planner but the catalog.
 * Every catalog model gets hundreds of random current layouts (some
 * instances in use) and random demands; the planner must match the
 * reference's optimum and its own plan must check out (valid layout, in-use
 * instances kept, steps that turn the current layout into the target).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>
#include <time.h>

#include "gs/migplan.h"

#define NP GS_CATALOG_MAX_PROFILES

struct pair {
	int prof, start, size;
	unsigned mask;
};

struct ref {
	const struct gs_gpu_model *m;
	struct pair cand[64];
	int ncand;
	const struct gs_mig_instance *cur;
	int ncur;
	int demand[NP];
	unsigned inuse_mask;
	int chosen[16], nchosen;
	int best_value, best_changes;
	long layouts;
};

static int pidx(const struct gs_gpu_model *m, const struct gs_mig_profile *p)
{
	return (int)(p - m->profiles);
}

/* Scores one complete layout (in-use instances + chosen pairs) naively. */
static void ref_score(struct ref *r)
{
	const struct gs_gpu_model *m = r->m;
	int count[NP] = {0}, freec[NP] = {0};
	int n = 0, compute = 0, value = 0, changes = 0;

	for (int i = 0; i < r->ncur; i++) {
		if (!r->cur[i].in_use)
			continue;
		count[pidx(m, r->cur[i].profile)]++;
		compute += r->cur[i].profile->compute_slices;
		n++;
	}
	for (int k = 0; k < r->nchosen; k++) {
		const struct pair *c = &r->cand[r->chosen[k]];
		bool existed = false;

		count[c->prof]++;
		freec[c->prof]++;
		compute += m->profiles[c->prof].compute_slices;
		n++;
		for (int i = 0; i < r->ncur; i++)
			if (!r->cur[i].in_use &&
			    pidx(m, r->cur[i].profile) == c->prof &&
			    r->cur[i].start == c->start)
				existed = true;
		changes += !existed;
	}
	for (int i = 0; i < r->ncur; i++) {
		bool kept = false;

		if (r->cur[i].in_use)
			continue;
		for (int k = 0; k < r->nchosen; k++) {
			const struct pair *c = &r->cand[r->chosen[k]];

			if (c->prof == pidx(m, r->cur[i].profile) &&
			    c->start == r->cur[i].start)
				kept = true;
		}
		changes += !kept;
	}
	if (n > m->max_gpu_instances || compute > m->compute_slices)
		return;
	for (int p = 0; p < m->n_profiles; p++) {
		if (count[p] > m->profiles[p].max_instances)
			return;
		value += (freec[p] < r->demand[p] ? freec[p] : r->demand[p]) *
		         m->profiles[p].memory_slices;
	}
	r->layouts++;
	if (value > r->best_value ||
	    (value == r->best_value && changes < r->best_changes)) {
		r->best_value = value;
		r->best_changes = changes;
	}
}

static void ref_enum(struct ref *r, int k, unsigned used)
{
	if (k == r->ncand) {
		ref_score(r);
		return;
	}
	ref_enum(r, k + 1, used);
	if (!(used & r->cand[k].mask)) {
		r->chosen[r->nchosen++] = k;
		ref_enum(r, k + 1, used | r->cand[k].mask);
		r->nchosen--;
	}
}

static void ref_solve(struct ref *r, const struct gs_gpu_model *m,
                      const struct gs_mig_instance *cur, int ncur,
                      const struct gs_mig_demand *d, int nd)
{
	memset(r, 0, sizeof(*r));
	r->m = m;
	r->cur = cur;
	r->ncur = ncur;
	r->best_value = -1;
	for (int p = 0; p < m->n_profiles; p++)
		for (int k = 0; k < m->profiles[p].n_placements; k++) {
			struct pair *c = &r->cand[r->ncand++];

			c->prof = p;
			c->start = m->profiles[p].placements[k].start;
			c->size = m->profiles[p].placements[k].size;
			c->mask = ((1u << c->size) - 1u) << c->start;
		}
	for (int i = 0; i < nd; i++)
		r->demand[pidx(m, d[i].profile)] += d[i].count;
	for (int i = 0; i < ncur; i++)
		if (cur[i].in_use)
			r->inuse_mask |=
			    ((1u << cur[i].profile->memory_slices) - 1u)
			    << cur[i].start;
	ref_enum(r, 0, r->inuse_mask);
}

/* Checks the plan on its own terms and returns its (value, changes). */
static void check_plan(const struct gs_gpu_model *m,
                       const struct gs_mig_instance *cur, int ncur,
                       const struct gs_mig_demand *d, int nd,
                       const struct gs_mig_plan *plan)
{
	struct gs_mig_instance sim[16];
	int nsim = 0, demand[NP] = {0}, freec[NP] = {0}, value = 0;
	bool destroys_done = false;

	assert_int_equal(
	    gs_migplan_check_layout(m, plan->layout, plan->n_layout, NULL),
	    GS_OK);
	/* Apply the steps to the current layout: must give the target. */
	for (int i = 0; i < ncur; i++)
		sim[nsim++] = cur[i];
	for (int s = 0; s < plan->n_steps; s++) {
		const struct gs_mig_step *st = &plan->steps[s];

		if (st->op == GS_MIG_CREATE) {
			destroys_done = true;
			sim[nsim].profile = st->profile;
			sim[nsim].start = st->start;
			sim[nsim].in_use = false;
			nsim++;
			assert_int_equal(
			    gs_migplan_check_layout(m, sim, nsim, NULL), GS_OK);
		} else {
			int found = -1;

			assert_false(destroys_done);
			for (int i = 0; i < nsim; i++)
				if (sim[i].profile == st->profile &&
				    sim[i].start == st->start)
					found = i;
			assert_true(found >= 0);
			assert_false(sim[found].in_use);
			sim[found] = sim[--nsim];
		}
	}
	assert_int_equal(nsim, plan->n_layout);
	for (int i = 0; i < plan->n_layout; i++) {
		bool present = false;

		for (int k = 0; k < nsim; k++)
			if (sim[k].profile == plan->layout[i].profile &&
			    sim[k].start == plan->layout[i].start &&
			    sim[k].in_use == plan->layout[i].in_use)
				present = true;
		assert_true(present);
		if (!plan->layout[i].in_use)
			freec[pidx(m, plan->layout[i].profile)]++;
	}
	for (int i = 0; i < nd; i++)
		demand[pidx(m, d[i].profile)] += d[i].count;
	for (int p = 0; p < m->n_profiles; p++)
		value += (freec[p] < demand[p] ? freec[p] : demand[p]) *
		         m->profiles[p].memory_slices;
	assert_int_equal(value, plan->served_weight);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static unsigned rnd(unsigned n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (unsigned)(rng_state % n);
}

/* A random valid current layout: random placements tried in turn. */
static int random_layout(const struct gs_gpu_model *m,
                         struct gs_mig_instance *out)
{
	int n = 0, tries = (int)rnd(12);

	for (int t = 0; t < tries; t++) {
		const struct gs_mig_profile *p =
		    &m->profiles[rnd((unsigned)m->n_profiles)];

		out[n].profile = p;
		out[n].start =
		    p->placements[rnd((unsigned)p->n_placements)].start;
		out[n].in_use = rnd(3) == 0;
		if (gs_migplan_check_layout(m, out, n + 1, NULL) == GS_OK)
			n++;
	}
	return n;
}

static void planner_matches_exhaustive_search_on_every_model(void **state)
{
	long cases = 0;

	for (int mi = 0; mi < gs_catalog_count(); mi++) {
		const struct gs_gpu_model *m = gs_catalog_get(mi);

		for (int t = 0; t < 150; t++) {
			struct gs_mig_instance cur[16];
			struct gs_mig_demand d[NP];
			struct gs_mig_plan plan;
			struct ref r;
			struct gs_errbuf eb = {0};
			int ncur = random_layout(m, cur), nd = 0;
			int kinds = 1 + (int)rnd(4);

			for (int k = 0; k < kinds; k++) {
				const struct gs_mig_profile *p =
				    &m->profiles[rnd((unsigned)m->n_profiles)];
				int already = 0;

				for (int j = 0; j < nd; j++)
					if (d[j].profile == p)
						already += d[j].count;
				d[nd].profile = p;
				d[nd].count = (int)rnd(
				    (unsigned)(p->max_instances - already + 1));
				nd++;
			}
			if (gs_migplan_solve(m, cur, ncur, d, nd, &plan, &eb) !=
			    GS_OK)
				fail_msg("%s: %s", m->name, eb.msg);
			ref_solve(&r, m, cur, ncur, d, nd);
			if (plan.served_weight != r.best_value ||
			    plan.n_steps != r.best_changes)
				fail_msg(
				    "%s case %d: planner (%d, %d changes), "
				    "reference (%d, %d changes)",
				    m->name, t, plan.served_weight,
				    plan.n_steps, r.best_value, r.best_changes);
			check_plan(m, cur, ncur, d, nd, &plan);
			cases++;
		}
	}
	assert_true(cases >= 1000);
}

static void plan_keeps_in_use_instance_and_fits_most_demand(void **state)
{
	const struct gs_gpu_model *m = gs_catalog_find("H100-SXM5-80GB");
	struct gs_mig_instance cur[8];
	struct gs_mig_demand d[8];
	struct gs_mig_plan plan;
	int ncur = 0, nd = 0;

	assert_int_equal(gs_migplan_parse_instances(m, "3g.40gb@0", true, cur,
	                                            8, &ncur, NULL),
	                 GS_OK);
	assert_int_equal(
	    gs_migplan_parse_demand(m, "1g.10gb=4,2g.20gb=1", d, 8, &nd, NULL),
	    GS_OK);
	assert_int_equal(gs_migplan_solve(m, cur, ncur, d, nd, &plan, NULL),
	                 GS_OK);
	/* 4 slices free: 2g@4 + 1g@6 serves 3 with 2 creates, as does
	 * 1g@4,5,6 with 3 creates; fewer changes wins. */
	assert_int_equal(plan.served_weight, 3);
	assert_int_equal(plan.n_steps, 2);
	assert_int_equal(plan.n_layout, 3);
	assert_string_equal(plan.layout[0].profile->name, "3g.40gb");
	assert_true(plan.layout[0].in_use);
	assert_string_equal(plan.layout[1].profile->name, "2g.20gb");
	assert_int_equal(plan.layout[1].start, 4);
	assert_string_equal(plan.layout[2].profile->name, "1g.10gb");
	assert_int_equal(plan.layout[2].start, 6);
	assert_int_equal(plan.n_unmet, 1);
	assert_string_equal(plan.unmet[0].profile->name, "1g.10gb");
	assert_int_equal(plan.unmet[0].count, 3);
}

static void plan_destroys_idle_instances_before_creating(void **state)
{
	const struct gs_gpu_model *m = gs_catalog_find("A100-40GB");
	struct gs_mig_instance cur[8];
	struct gs_mig_demand d[8];
	struct gs_mig_plan plan;
	int ncur = 0, nd = 0;

	assert_int_equal(gs_migplan_parse_instances(m, "1g.5gb@0, 1g.5gb@1",
	                                            false, cur, 8, &ncur, NULL),
	                 GS_OK);
	assert_int_equal(
	    gs_migplan_parse_demand(m, "7g.40gb=1", d, 8, &nd, NULL), GS_OK);
	assert_int_equal(gs_migplan_solve(m, cur, ncur, d, nd, &plan, NULL),
	                 GS_OK);
	assert_int_equal(plan.n_steps, 3);
	assert_int_equal(plan.steps[0].op, GS_MIG_DESTROY);
	assert_int_equal(plan.steps[0].start, 0);
	assert_int_equal(plan.steps[1].op, GS_MIG_DESTROY);
	assert_int_equal(plan.steps[1].start, 1);
	assert_int_equal(plan.steps[2].op, GS_MIG_CREATE);
	assert_string_equal(plan.steps[2].profile->name, "7g.40gb");
	assert_int_equal(plan.n_unmet, 0);
}

static void idle_instances_that_serve_demand_are_kept(void **state)
{
	const struct gs_gpu_model *m = gs_catalog_find("H100");
	struct gs_mig_instance cur[8];
	struct gs_mig_demand d[8];
	struct gs_mig_plan plan;
	int ncur = 0, nd = 0;

	assert_int_equal(gs_migplan_parse_instances(m, "1g.10gb@6,2g.20gb@0",
	                                            false, cur, 8, &ncur, NULL),
	                 GS_OK);
	assert_int_equal(
	    gs_migplan_parse_demand(m, "1g.10gb=1", d, 8, &nd, NULL), GS_OK);
	assert_int_equal(gs_migplan_solve(m, cur, ncur, d, nd, &plan, NULL),
	                 GS_OK);
	assert_int_equal(plan.n_steps, 0);
	assert_int_equal(plan.n_layout, 2);
}

static void bad_input_gets_a_precise_error(void **state)
{
	static const struct {
		const char *model, *inuse, *existing, *demand;
		gs_err err;
		const char *msg;
	} rows[] = {
	    {"H100", "", "", "2g.99gb=1", GS_ERR_UNKNOWN_PROFILE,
	     "unknown MIG profile '2g.99gb' on H100-SXM5-80GB (it has "
	     "1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, "
	     "7g.80gb)"},
	    {"H100", "", "", "1g.10gb=8", GS_ERR_RANGE,
	     "demand 1g.10gb=8 can never fit: H100-SXM5-80GB holds at most "
	     "7 of it"},
	    {"H100", "", "", "1g.10gb=5,1g.10gb=3", GS_ERR_RANGE,
	     "demand 1g.10gb=8 can never fit: H100-SXM5-80GB holds at most "
	     "7 of it"},
	    {"H100", "", "", "1g.10gb=65", GS_ERR_RANGE,
	     "demand '1g.10gb=65': count must be 0..64"},
	    {"H100", "", "", "1g.10gb=-1", GS_ERR_PARSE,
	     "demand '1g.10gb=-1': count must be a whole number"},
	    {"H100", "", "", "1g.10gb", GS_ERR_PARSE,
	     "demand '1g.10gb' needs =COUNT (e.g. 1g.10gb=4)"},
	    {"H100", "", "", "1g.10gb=1,,", GS_ERR_PARSE,
	     "empty demand in '1g.10gb=1,,' (expected PROFILE=COUNT,...)"},
	    {"H100", "3g.40gb@2", "", "", GS_ERR_INVALID,
	     "3g.40gb cannot start at memory slice 2 on H100-SXM5-80GB"},
	    {"H100", "1g.10gb@7", "", "", GS_ERR_INVALID,
	     "1g.10gb cannot start at memory slice 7 on H100-SXM5-80GB"},
	    {"H100", "3g.40gb@0", "2g.20gb@2", "", GS_ERR_INVALID,
	     "2g.20gb@2 overlaps another instance"},
	    {"H100", "1g.10gb+me@0", "1g.10gb+me@1", "", GS_ERR_INVALID,
	     "2 instances of 1g.10gb+me, H100-SXM5-80GB holds at most 1"},
	    {"H100", "3g.40gb", "", "", GS_ERR_PARSE,
	     "instance '3g.40gb' needs @START (e.g. 3g.40gb@0)"},
	    {"H100", "3g.40gb@x", "", "", GS_ERR_PARSE,
	     "instance '3g.40gb@x': start must be a memory-slice number"},
	    {"A30", "1g.10gb@0", "", "", GS_ERR_UNKNOWN_PROFILE,
	     "unknown MIG profile '1g.10gb' on A30-24GB (it has 1g.6gb, "
	     "1g.6gb+me, 2g.12gb, 2g.12gb+me, 4g.24gb)"},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct gs_gpu_model *m = gs_catalog_find(rows[i].model);
		struct gs_mig_instance cur[8];
		struct gs_mig_demand d[8];
		struct gs_mig_plan plan;
		struct gs_errbuf eb = {0};
		int ncur = 0, nd = 0;
		gs_err err;

		err = gs_migplan_parse_instances(m, rows[i].inuse, true, cur, 8,
		                                 &ncur, &eb);
		if (err == GS_OK)
			err = gs_migplan_parse_instances(
			    m, rows[i].existing, false, cur, 8, &ncur, &eb);
		if (err == GS_OK)
			err = gs_migplan_parse_demand(m, rows[i].demand, d, 8,
			                              &nd, &eb);
		if (err == GS_OK)
			err = gs_migplan_solve(m, cur, ncur, d, nd, &plan, &eb);
		if (err != rows[i].err)
			fail_msg("row %zu: got %s (%s)", i, gs_err_name(err),
			         eb.msg);
		assert_string_equal(eb.msg, rows[i].msg);
	}
}

static void smallest_profile_holds_the_request(void **state)
{
	static const struct {
		const char *model;
		uint64_t mib;
		int pct;
		const char *want;
	} rows[] = {
	    {"H100", 0, 0, "1g.10gb"},
	    {"H100", 9984, 0, "1g.10gb"},
	    {"H100", 9985, 0, "1g.20gb"},
	    {"H100", 0, 15, "2g.20gb"},
	    {"H100", 20000, 20, "2g.20gb"},
	    {"H100", 30000, 10, "3g.40gb"},
	    {"H100", 20000, 0, "1g.20gb"},
	    {"H100", 40000, 50, "4g.40gb"},
	    {"H100", 40000, 40, "3g.40gb"},
	    {"H100", 81152, 0, "7g.80gb"},
	    {"H100", 81153, 0, NULL},
	    {"A30", 12 * 1024, 30, "2g.12gb"},
	    {"B200", 23 * 1024, 0, "1g.23gb"},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct gs_mig_profile *p = gs_migplan_smallest_profile(
		    gs_catalog_find(rows[i].model), rows[i].mib * 1024 * 1024,
		    rows[i].pct);

		if (rows[i].want == NULL)
			assert_null(p);
		else if (p == NULL || strcmp(p->name, rows[i].want) != 0)
			fail_msg("row %zu: got %s", i, p ? p->name : "NULL");
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The promise is < 100 us per call; on a loaded 2-core box (or under ASan)
 * only a generous bound is checked here; gs-bench-core prints the figure. */
static void planner_is_fast_on_every_model_at_full_demand(void **state)
{
	for (int mi = 0; mi < gs_catalog_count(); mi++) {
		const struct gs_gpu_model *m = gs_catalog_get(mi);
		struct gs_mig_demand d[NP];
		struct gs_mig_plan plan;
		double t0, per;
		int nd = 0;
		const int reps = 200;

		for (int p = 0; p < m->n_profiles; p++) {
			d[nd].profile = &m->profiles[p];
			d[nd].count = m->profiles[p].max_instances;
			nd++;
		}
		t0 = now_s();
		for (int r = 0; r < reps; r++)
			assert_int_equal(
			    gs_migplan_solve(m, NULL, 0, d, nd, &plan, NULL),
			    GS_OK);
		per = (now_s() - t0) / reps;
		if (per > 5e-3)
			fail_msg("%s: %.1f us per call", m->name, per * 1e6);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(planner_matches_exhaustive_search_on_every_model),
	    cmocka_unit_test(plan_keeps_in_use_instance_and_fits_most_demand),
	    cmocka_unit_test(plan_destroys_idle_instances_before_creating),
	    cmocka_unit_test(idle_instances_that_serve_demand_are_kept),
	    cmocka_unit_test(bad_input_gets_a_precise_error),
	    cmocka_unit_test(smallest_profile_holds_the_request),
	    cmocka_unit_test(planner_is_fast_on_every_model_at_full_demand),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
