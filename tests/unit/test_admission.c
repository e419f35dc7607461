/*
 * test_admission.c - the node's admission decision (core/admission.c):
 * behaviour from hand-built snapshots, then two brute-force references on
 * random small nodes.
 *
 * Placement reference: every GPU is tried; the feasible ones (room for
 * the memory and compute, no whole-GPU slice, one sharing mode per GPU)
 * are scored by placement.h's leftover (free memory plus free compute,
 * in millionths) and the best by the policy wins, ties to the lowest
 * index. gs_admit must agree on admission and on the GPU.
 *
 * Reclaim reference, two flat teams with memory guarantees: the other
 * team's slices in quota.h's preemption order (lowest priority, then the
 * newest); quota picks them while that team stays above its guarantee
 * until they free the request's memory; admission then takes the
 * shortest prefix of those picks after which some GPU has room. The
 * reference computes that prefix by hand and gs_admit must name the same
 * victims (or refuse exactly when no prefix works).
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

#include "gs/admission.h"

#define GIB (1024ULL * 1024 * 1024)

/* ---- building snapshots ---- */

struct fixture {
	struct gs_adm_snapshot sn;
	struct gs_adm_slice slices[64];
	char names[64][16];
	struct gs_quota_tree *tree;
};

static const struct gs_gpu_model *h100(void)
{
	const struct gs_gpu_model *m = gs_catalog_find("H100-SXM5-80GB");

	assert_non_null(m);
	return m;
}

static const struct gs_mig_profile *prof(const char *name)
{
	const struct gs_mig_profile *p = gs_catalog_profile(h100(), name);

	assert_non_null(p);
	return p;
}

/* Teams "a" and "b", top-level, with memory guarantees (0: none). */
static void teams(struct fixture *f, uint64_t ga, uint64_t gb)
{
	struct gs_quota_team_def d[2];
	struct gs_errbuf eb = {0};

	memset(d, 0, sizeof(d));
	d[0].name = "a";
	d[1].name = "b";
	for (int r = 0; r < GS_QRES__COUNT; r++)
		d[0].max.v[r] = d[1].max.v[r] = GS_QUOTA_UNLIMITED;
	d[0].guarantee.v[GS_QRES_MEMORY] = (int64_t)ga;
	d[1].guarantee.v[GS_QRES_MEMORY] = (int64_t)gb;
	gs_quota_tree_destroy(f->tree);
	f->tree = NULL;
	if (gs_quota_tree_create(d, 2, &f->tree, &eb) != GS_OK)
		fail_msg("teams: %s", eb.msg);
	f->sn.teams = f->tree;
}

/* A node of n plain H100s, binpack, generous limits, no MIG changes. */
static void node(struct fixture *f, int n)
{
	memset(f, 0, sizeof(*f));
	f->sn.n_gpus = n;
	for (int i = 0; i < n; i++) {
		struct gs_adm_gpu *g = &f->sn.gpu[i];

		g->uuid = "GPU-test";
		g->model = "H100-SXM5-80GB";
		g->cat = h100();
		g->memory_bytes = 80 * GIB;
		g->mig_capable = true;
	}
	f->sn.slices = f->slices;
	f->sn.now_ns = 1000;
	f->sn.cfg.placement = GS_PLACE_BINPACK;
	f->sn.cfg.default_mode = GS_MODE_TIMESLICE;
	f->sn.cfg.max_slices = 64;
	f->sn.cfg.user_max_slices = 64;
	f->sn.cfg.user_max_memory_percent = 100;
	f->sn.cfg.default_team = 0;
	teams(f, 0, 0);
}

static void fixture_fini(struct fixture *f)
{
	gs_quota_tree_destroy(f->tree);
	f->tree = NULL;
}

/* Adds a live slice; returns its index. */
static int add(struct fixture *f, int team, int gpu, enum gs_slice_mode mode,
               uint64_t mem, int compute, enum gs_priority prio)
{
	int i = f->sn.n_slices++;
	struct gs_adm_slice *s = &f->slices[i];

	assert_true(i < 64);
	snprintf(f->names[i], sizeof(f->names[i]), "s%d", i);
	memset(s, 0, sizeof(*s));
	s->id = i + 1;
	s->name = f->names[i];
	s->owner_uid = 1000;
	s->team = team;
	s->created_ns = 100 + i;
	s->priority = prio;
	s->mode = mode;
	s->gpu = gpu;
	s->gi_id = -1;
	s->mig_profile = "";
	s->memory_bytes = mem;
	s->compute_pct = compute;
	return i;
}

static void add_mig(struct fixture *f, int gpu, const char *p, int start,
                    int gi_id)
{
	struct gs_adm_gpu *g = &f->sn.gpu[gpu];
	struct gs_adm_mig *m = &g->mig[g->n_mig++];
	const struct gs_mig_profile *mp = prof(p);

	g->mig_on = true;
	m->profile = mp;
	m->profile_name = mp->name;
	m->gi_id = gi_id;
	m->start = start;
	m->size = mp->memory_slices;
	for (int k = 0; k < mp->n_placements; k++)
		if (mp->placements[k].start == start)
			m->size = mp->placements[k].size;
	m->memory_bytes = mp->memory_mib << 20;
}

static struct gs_adm_request request(int team, enum gs_slice_mode mode,
                                     uint64_t mem, int compute)
{
	struct gs_adm_request r;

	memset(&r, 0, sizeof(r));
	gs_spec_init(&r.spec);
	r.spec.mode = mode;
	r.spec.memory_bytes = mem;
	r.spec.compute_pct = compute;
	r.team = team;
	r.owner_uid = 1000;
	r.admin = true;
	return r;
}

/*
 * Admits `r` on `f` and expects a refusal: `code`, a message holding
 * `msg`, and whether the request was counted against quotas and its
 * demand seen.
 */
static void assert_refused(struct fixture *f, const struct gs_adm_request *r,
                           gs_err code, const char *msg, bool counted,
                           bool demand_seen)
{
	struct gs_adm_decision d;
	struct gs_errbuf eb = {0};

	assert_int_equal(gs_admit(&f->sn, r, &d, &eb), code);
	if (strstr(eb.msg, msg) == NULL)
		fail_msg("refusal '%s' does not say '%s'", eb.msg, msg);
	assert_int_equal(d.counted, counted);
	assert_int_equal(d.demand_seen, demand_seen);
	gs_adm_decision_fini(&d);
}

/* ---- behaviour ---- */

static void admits_a_fraction_where_binpack_leaves_least(void **state)
{
	struct fixture f;
	struct gs_adm_request r;
	struct gs_adm_decision d;
	struct gs_errbuf eb = {0};

	(void)state;
	node(&f, 2);
	add(&f, 0, 1, GS_MODE_TIMESLICE, 40 * GIB, 50, GS_PRIORITY_NORMAL);
	r = request(0, GS_MODE_TIMESLICE, 10 * GIB, 20);
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_OK);
	assert_int_equal(d.gpu, 1);
	assert_int_equal(d.mode, GS_MODE_TIMESLICE);
	assert_int_equal(d.memory_bytes, 10 * GIB);
	assert_int_equal(d.n_victims, 0);
	assert_int_equal(d.n_steps, 0);
	assert_true(d.borrowed); /* team a has no guarantee */
	assert_true(d.demand_seen);
	gs_adm_decision_fini(&d);

	f.sn.cfg.placement = GS_PLACE_SPREAD;
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_OK);
	assert_int_equal(d.gpu, 0);
	gs_adm_decision_fini(&d);
	fixture_fini(&f);
}

static void refuses_with_the_placement_reason_when_no_gpu_has_room(void **state)
{
	struct fixture f;
	struct gs_adm_request r;

	(void)state;
	node(&f, 1);
	add(&f, 0, 0, GS_MODE_TIMESLICE, 70 * GIB, 50, GS_PRIORITY_NORMAL);
	r = request(0, GS_MODE_TIMESLICE, 20 * GIB, 20);
	assert_refused(&f, &r, GS_ERR_NO_FIT, "no GPU has", true, true);
	fixture_fini(&f);
}

static void refuses_at_the_slot_limit_before_anything_else(void **state)
{
	struct fixture f;
	struct gs_adm_request r;

	(void)state;
	node(&f, 1);
	f.sn.cfg.max_slices = 1;
	add(&f, 0, 0, GS_MODE_TIMESLICE, 1 * GIB, 10, GS_PRIORITY_NORMAL);
	r = request(0, GS_MODE_TIMESLICE, 1 * GIB, 10);
	assert_refused(&f, &r, GS_ERR_NO_FIT,
	               "the node holds its maximum of 1 slices", false, false);
	fixture_fini(&f);
}

static void
refuses_a_user_over_the_per_user_limits_but_not_an_admin(void **state)
{
	struct fixture f;
	struct gs_adm_request r;
	struct gs_adm_decision d;
	struct gs_errbuf eb = {0};

	(void)state;
	node(&f, 2);
	f.sn.cfg.user_max_memory_percent = 25; /* 40 GiB of 160 */
	add(&f, 0, 0, GS_MODE_TIMESLICE, 30 * GIB, 10, GS_PRIORITY_NORMAL);
	r = request(0, GS_MODE_TIMESLICE, 20 * GIB, 10);
	r.admin = false;
	assert_refused(&f, &r, GS_ERR_QUOTA,
	               "uid 1000 would hold 51200 MiB of GPU memory, over the "
	               "25% of the node's 163840 MiB one user may "
	               "(quota.default_user.max_memory_percent)",
	               true, false);

	f.sn.cfg.user_max_memory_percent = 100;
	f.sn.cfg.user_max_slices = 1;
	assert_refused(&f, &r, GS_ERR_QUOTA, "uid 1000 holds 1 slices", true,
	               false);

	r.admin = true;
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_OK);
	gs_adm_decision_fini(&d);
	fixture_fini(&f);
}

static void refuses_a_team_over_its_max(void **state)
{
	struct fixture f;
	struct gs_quota_team_def def;
	struct gs_adm_request r;

	(void)state;
	node(&f, 1);
	memset(&def, 0, sizeof(def));
	def.name = "a";
	for (int q = 0; q < GS_QRES__COUNT; q++)
		def.max.v[q] = GS_QUOTA_UNLIMITED;
	def.max.v[GS_QRES_MEMORY] = (int64_t)(16 * GIB);
	gs_quota_tree_destroy(f.tree);
	assert_int_equal(gs_quota_tree_create(&def, 1, &f.tree, NULL), GS_OK);
	f.sn.teams = f.tree;
	add(&f, 0, 0, GS_MODE_TIMESLICE, 10 * GIB, 10, GS_PRIORITY_NORMAL);
	r = request(0, GS_MODE_TIMESLICE, 10 * GIB, 10);
	assert_refused(&f, &r, GS_ERR_QUOTA, "team a", true, true);
	fixture_fini(&f);
}

static void borrows_idle_capacity_above_the_guarantee(void **state)
{
	struct fixture f;
	struct gs_adm_request r;
	struct gs_adm_decision d;
	struct gs_errbuf eb = {0};

	(void)state;
	node(&f, 1);
	teams(&f, 10 * GIB, 40 * GIB);
	r = request(0, GS_MODE_TIMESLICE, 30 * GIB, 0);
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_OK);
	assert_true(d.borrowed);
	assert_int_equal(d.n_victims, 0);
	gs_adm_decision_fini(&d);
	fixture_fini(&f);
}

static void reclaim_preempts_the_lowest_priority_borrowed_slice(void **state)
{
	struct fixture f;
	struct gs_adm_request r;
	struct gs_adm_decision d;
	struct gs_errbuf eb = {0};
	int low;

	(void)state;
	node(&f, 1);
	teams(&f, 40 * GIB, 40 * GIB);
	add(&f, 1, 0, GS_MODE_TIMESLICE, 25 * GIB, 0, GS_PRIORITY_HIGH);
	low = add(&f, 1, 0, GS_MODE_TIMESLICE, 25 * GIB, 0, GS_PRIORITY_LOW);
	add(&f, 1, 0, GS_MODE_TIMESLICE, 25 * GIB, 0, GS_PRIORITY_NORMAL);
	r = request(0, GS_MODE_TIMESLICE, 30 * GIB, 0);
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_OK);
	assert_int_equal(d.n_victims, 1);
	assert_int_equal(d.victims[0], low);
	assert_int_equal(d.gpu, 0);
	assert_false(d.borrowed);
	gs_adm_decision_fini(&d);
	fixture_fini(&f);
}

static void reclaim_takes_the_newest_of_equal_priorities(void **state)
{
	struct fixture f;
	struct gs_adm_request r;
	struct gs_adm_decision d;
	struct gs_errbuf eb = {0};
	int newest;

	(void)state;
	node(&f, 1);
	teams(&f, 40 * GIB, 40 * GIB);
	add(&f, 1, 0, GS_MODE_TIMESLICE, 25 * GIB, 0, GS_PRIORITY_NORMAL);
	add(&f, 1, 0, GS_MODE_TIMESLICE, 25 * GIB, 0, GS_PRIORITY_NORMAL);
	newest =
	    add(&f, 1, 0, GS_MODE_TIMESLICE, 25 * GIB, 0, GS_PRIORITY_NORMAL);
	r = request(0, GS_MODE_TIMESLICE, 30 * GIB, 0);
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_OK);
	assert_int_equal(d.n_victims, 1);
	assert_int_equal(d.victims[0], newest);
	gs_adm_decision_fini(&d);
	fixture_fini(&f);
}

static void reclaim_refused_above_the_requesters_guarantee(void **state)
{
	struct fixture f;
	struct gs_adm_request r;
	struct gs_adm_decision d;
	struct gs_errbuf eb = {0};

	(void)state;
	node(&f, 1);
	teams(&f, 20 * GIB, 40 * GIB);
	add(&f, 1, 0, GS_MODE_TIMESLICE, 75 * GIB, 0, GS_PRIORITY_LOW);
	r = request(0, GS_MODE_TIMESLICE, 30 * GIB, 0);
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_ERR_NO_FIT);
	assert_int_equal(d.n_victims, 0);
	assert_true(d.counted);
	gs_adm_decision_fini(&d);
	fixture_fini(&f);
}

static void mig_slice_takes_an_idle_instance(void **state)
{
	struct fixture f;
	struct gs_adm_request r;
	struct gs_adm_decision d;
	struct gs_errbuf eb = {0};

	(void)state;
	node(&f, 1);
	add_mig(&f, 0, "1g.10gb", 0, 7);
	r = request(0, GS_MODE_MIG, 0, 0);
	snprintf(r.spec.mig_profile, sizeof(r.spec.mig_profile), "1g.10gb");
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_OK);
	assert_int_equal(d.gpu, 0);
	assert_int_equal(d.gi_id, 7);
	assert_ptr_equal(d.profile, prof("1g.10gb"));
	assert_int_equal(d.n_steps, 0);
	assert_false(d.mig_on);
	assert_int_equal(d.memory_bytes, prof("1g.10gb")->memory_mib << 20);
	gs_adm_decision_fini(&d);
	fixture_fini(&f);
}

static void
mig_slice_on_a_gpu_with_mig_off_plans_mig_on_and_a_create(void **state)
{
	struct fixture f;
	struct gs_adm_request r;
	struct gs_adm_decision d;
	struct gs_errbuf eb = {0};

	(void)state;
	node(&f, 1);
	r = request(0, GS_MODE_MIG, 0, 0);
	snprintf(r.spec.mig_profile, sizeof(r.spec.mig_profile), "2g.20gb");
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_ERR_NO_FIT);
	gs_adm_decision_fini(&d);

	f.sn.cfg.may_change_mig = true;
	eb.set = false;
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_OK);
	assert_true(d.mig_on);
	assert_int_equal(d.gi_id, -1);
	assert_int_equal(d.take_start, -1);
	assert_int_equal(d.n_steps, 1);
	assert_int_equal(d.steps[0].op, GS_MIG_CREATE);
	assert_ptr_equal(d.steps[0].profile, prof("2g.20gb"));
	gs_adm_decision_fini(&d);
	fixture_fini(&f);
}

/* A MIG slice pinned to a GPU is never made by changing another GPU's
 * layout; unpinned, the other GPU is fine. */
static void mig_create_keeps_to_the_gpu_selector(void **state)
{
	struct fixture f;
	struct gs_adm_request r;
	struct gs_adm_decision d;
	struct gs_errbuf eb = {0};

	(void)state;
	node(&f, 2);
	f.sn.cfg.may_change_mig = true;
	(void)add(&f, 0, 0, GS_MODE_TIMESLICE, 8 * GIB, 30, GS_PRIORITY_NORMAL);
	r = request(0, GS_MODE_MIG, 0, 0);
	snprintf(r.spec.mig_profile, sizeof(r.spec.mig_profile), "2g.20gb");
	r.spec.gpu.kind = GS_GPU_INDEX;
	r.spec.gpu.index = 0;
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_ERR_NO_FIT);
	gs_adm_decision_fini(&d);

	r.spec.gpu.kind = GS_GPU_ANY;
	eb.set = false;
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_OK);
	assert_int_equal(d.gpu, 1);
	gs_adm_decision_fini(&d);
	fixture_fini(&f);
}

static void mig_start_destroys_the_idle_instance_in_its_way(void **state)
{
	struct fixture f;
	struct gs_adm_request r;
	struct gs_adm_decision d;
	struct gs_errbuf eb = {0};
	int s;

	(void)state;
	node(&f, 1);
	f.sn.cfg.may_change_mig = true;
	add_mig(&f, 0, "2g.20gb", 0, 3);
	add_mig(&f, 0, "2g.20gb", 2, 4);
	s = add(&f, 0, 0, GS_MODE_MIG, 20 * GIB, 0, GS_PRIORITY_NORMAL);
	f.slices[s].gi_id = 4;
	f.slices[s].mig_profile = "2g.20gb";
	r = request(0, GS_MODE_MIG, 0, 0);
	snprintf(r.spec.mig_profile, sizeof(r.spec.mig_profile), "1g.10gb");
	r.spec.has_mig_start = true;
	r.spec.mig_start = 1;
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_OK);
	assert_false(d.mig_on);
	assert_int_equal(d.take_start, 1);
	assert_int_equal(d.n_steps, 2);
	assert_int_equal(d.steps[0].op, GS_MIG_DESTROY);
	assert_int_equal(d.steps[0].gi_id, 3);
	assert_int_equal(d.steps[1].op, GS_MIG_CREATE);
	assert_int_equal(d.steps[1].start, 1);
	gs_adm_decision_fini(&d);

	/* The instance in use at 2 is never touched. */
	r.spec.mig_start = 2;
	eb.set = false;
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_ERR_NO_FIT);
	assert_non_null(strstr(eb.msg, "is in use by slice s0"));
	gs_adm_decision_fini(&d);
	fixture_fini(&f);
}

static void non_mig_slice_switches_an_unused_mig_gpu_off(void **state)
{
	struct fixture f;
	struct gs_adm_request r;
	struct gs_adm_decision d;
	struct gs_errbuf eb = {0};

	(void)state;
	node(&f, 1);
	f.sn.cfg.may_change_mig = true;
	add_mig(&f, 0, "3g.40gb", 0, 1);
	add_mig(&f, 0, "1g.10gb", 6, 2);
	r = request(0, GS_MODE_TIMESLICE, 8 * GIB, 30);
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_OK);
	assert_true(d.mig_off);
	assert_int_equal(d.n_steps, 2);
	assert_int_equal(d.steps[0].op, GS_MIG_DESTROY);
	assert_int_equal(d.steps[1].op, GS_MIG_DESTROY);
	assert_int_equal(d.steps[0].gi_id + d.steps[1].gi_id, 3);
	gs_adm_decision_fini(&d);
	fixture_fini(&f);
}

static void mode_auto_takes_the_default_mode_and_says_so(void **state)
{
	struct fixture f;
	struct gs_adm_request r;
	struct gs_adm_decision d;
	struct gs_errbuf eb = {0};

	(void)state;
	node(&f, 1);
	f.sn.cfg.default_mode = GS_MODE_MPS;
	r = request(0, GS_MODE_AUTO, 4 * GIB, 25);
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_OK);
	assert_int_equal(d.mode, GS_MODE_MPS);
	assert_string_equal(d.mode_why, "auto: the daemon's default mode");
	gs_adm_decision_fini(&d);

	f.sn.cfg.default_mode = GS_MODE_AUTO;
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_OK);
	assert_int_not_equal(d.mode, GS_MODE_AUTO);
	assert_memory_equal(d.mode_why, "auto: ", 6);
	gs_adm_decision_fini(&d);

	r = request(0, GS_MODE_TIMESLICE, 4 * GIB, 25);
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_OK);
	assert_string_equal(d.mode_why, "");
	gs_adm_decision_fini(&d);
	fixture_fini(&f);
}

/* isolation none under auto: an MPS client where a GPU can take one,
 * turns on a GPU that runs turns (it accepted a shared fault domain; its
 * own context is stricter) and on a node without MPS; a mode asked for
 * is never changed. */
static void auto_gives_mps_and_falls_back_to_turns_where_mps_cannot_go(
    void **state)
{
	struct fixture f;
	struct gs_adm_request r;
	struct gs_adm_decision d;
	struct gs_errbuf eb = {0};

	(void)state;
	node(&f, 1);
	f.sn.cfg.default_mode = GS_MODE_AUTO;
	f.sn.cfg.mps = true;
	r = request(0, GS_MODE_AUTO, 4 * GIB, 25);
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_OK);
	assert_int_equal(d.mode, GS_MODE_MPS);
	assert_non_null(strstr(d.mode_why, "accept-fault-sharing=yes -> mps"));
	gs_adm_decision_fini(&d);

	(void)add(&f, 0, 0, GS_MODE_TIMESLICE, 8 * GIB, 30, GS_PRIORITY_NORMAL);
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_OK);
	assert_int_equal(d.mode, GS_MODE_TIMESLICE);
	assert_int_equal(d.gpu, 0);
	assert_non_null(strstr(d.mode_why, "-> mps; no GPU takes an MPS "
	                                   "client now -> timeslice"));
	gs_adm_decision_fini(&d);

	r = request(0, GS_MODE_MPS, 4 * GIB, 25);
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_ERR_NO_FIT);
	gs_adm_decision_fini(&d);
	fixture_fini(&f);

	node(&f, 1);
	f.sn.cfg.default_mode = GS_MODE_AUTO;
	f.sn.cfg.mps = false;
	r = request(0, GS_MODE_AUTO, 4 * GIB, 25);
	eb.set = false;
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_OK);
	assert_int_equal(d.mode, GS_MODE_TIMESLICE);
	assert_non_null(strstr(d.mode_why, "no MPS control daemon here"));
	gs_adm_decision_fini(&d);
	fixture_fini(&f);
}

static void exclusive_isolation_takes_a_whole_empty_gpu(void **state)
{
	struct fixture f;
	struct gs_adm_request r;
	struct gs_adm_decision d;
	struct gs_errbuf eb = {0};

	(void)state;
	node(&f, 2);
	add(&f, 0, 0, GS_MODE_TIMESLICE, 1 * GIB, 1, GS_PRIORITY_NORMAL);
	r = request(0, GS_MODE_TIMESLICE, 0, 0);
	r.spec.isolation = GS_ISOLATION_EXCLUSIVE;
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_OK);
	assert_int_equal(d.gpu, 1);
	assert_int_equal(d.memory_bytes, 80 * GIB);
	assert_int_equal(d.compute_pct, 100);
	gs_adm_decision_fini(&d);
	fixture_fini(&f);
}

/* Each kind of placement, on a node whose GPU 0 is busy (another create
 * is changing its MIG layout): GPU 0 is never chosen; what only it could
 * take is refused as transient. */
static void busy_gpu_is_never_chosen(void **state)
{
	static const struct {
		enum gs_slice_mode mode;
		const char *profile; /* MIG: the profile */
		int start;           /* mig-start, -1: none */
		bool exclusive;
	} reqs[] = {
	    {GS_MODE_TIMESLICE, NULL, -1, false},
	    {GS_MODE_TIMESLICE, NULL, -1, true},
	    {GS_MODE_MIG, "1g.10gb", -1, false},
	    {GS_MODE_MIG, "3g.40gb", -1, false},
	    {GS_MODE_MIG, "1g.10gb", 6, false},
	};
	struct fixture f;
	struct gs_adm_request r;
	struct gs_adm_decision d;
	struct gs_errbuf eb = {0};

	(void)state;
	for (size_t k = 0; k < sizeof(reqs) / sizeof(reqs[0]); k++) {
		node(&f, 2);
		f.sn.cfg.may_change_mig = true;
		/* GPU 0 is the better place for every request: an idle
		 * instance of each profile, and binpack prefers it. */
		add_mig(&f, 0, "3g.40gb", 0, 1);
		add_mig(&f, 0, "1g.10gb", 6, 2);
		f.sn.gpu[0].busy = true;
		r = request(0, reqs[k].mode, reqs[k].profile ? 0 : 8 * GIB,
		            reqs[k].profile ? 0 : 30);
		if (reqs[k].profile)
			snprintf(r.spec.mig_profile, sizeof(r.spec.mig_profile),
			         "%s", reqs[k].profile);
		if (reqs[k].start >= 0) {
			r.spec.has_mig_start = true;
			r.spec.mig_start = reqs[k].start;
		}
		if (reqs[k].exclusive)
			r.spec.isolation = GS_ISOLATION_EXCLUSIVE;
		eb.set = false;
		if (gs_admit(&f.sn, &r, &d, &eb) != GS_OK)
			fail_msg("request %zu refused: %s", k, eb.msg);
		assert_int_equal(d.gpu, 1);
		gs_adm_decision_fini(&d);

		/* GPU 1 full: only the busy GPU could take it. */
		add(&f, 0, 1, GS_MODE_TIMESLICE, 80 * GIB, 100,
		    GS_PRIORITY_NORMAL);
		f.slices[f.sn.n_slices - 1].isolation = GS_ISOLATION_EXCLUSIVE;
		eb.set = false;
		assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_ERR_NO_FIT);
		assert_string_equal(
		    eb.msg, "gpu 0 is changing its MIG layout; try again");
		gs_adm_decision_fini(&d);

		/* No longer busy: GPU 0 takes it. */
		f.sn.gpu[0].busy = false;
		eb.set = false;
		if (gs_admit(&f.sn, &r, &d, &eb) != GS_OK)
			fail_msg("request %zu refused: %s", k, eb.msg);
		assert_int_equal(d.gpu, 0);
		gs_adm_decision_fini(&d);
		fixture_fini(&f);
	}
}

/* A request that fits nowhere, busy GPU or not, keeps its own reason. */
static void busy_gpu_does_not_hide_a_real_refusal(void **state)
{
	struct fixture f;
	struct gs_adm_request r;
	struct gs_adm_decision d;
	struct gs_errbuf eb = {0};

	(void)state;
	node(&f, 1);
	f.sn.gpu[0].busy = true;
	r = request(0, GS_MODE_TIMESLICE, 90 * GIB, 30);
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_ERR_NO_FIT);
	assert_null(strstr(eb.msg, "changing its MIG layout"));
	gs_adm_decision_fini(&d);
	fixture_fini(&f);
}

/* ---- brute-force references ---- */

static unsigned rng_state = 12345;

static unsigned rnd(unsigned n)
{
	rng_state = rng_state * 1103515245u + 12345u;
	return (rng_state >> 8) % n;
}

struct rgpu {
	uint64_t total, used;
	int c_used, n;
	bool whole;
	enum gs_slice_mode mode;
};

/* Usage of each GPU from the slices but the first `skip_n` of order[]. */
static void ref_gpus(const struct fixture *f, struct rgpu *g, const int *order,
                     int skip_n)
{
	for (int i = 0; i < f->sn.n_gpus; i++) {
		memset(&g[i], 0, sizeof(g[i]));
		g[i].total = f->sn.gpu[i].memory_bytes;
	}
	for (int i = 0; i < f->sn.n_slices; i++) {
		const struct gs_adm_slice *s = &f->slices[i];
		bool gone = false;

		for (int k = 0; k < skip_n; k++)
			gone |= order[k] == i;
		if (gone)
			continue;
		if (s->isolation == GS_ISOLATION_EXCLUSIVE) {
			g[s->gpu].whole = true;
		} else {
			g[s->gpu].used += s->memory_bytes;
			g[s->gpu].c_used += s->compute_pct;
			g[s->gpu].mode = s->mode;
		}
		g[s->gpu].n++;
	}
}

static bool ref_fits(const struct rgpu *g, const struct gs_slice_spec *sp)
{
	if (g->whole)
		return false;
	if (sp->isolation == GS_ISOLATION_EXCLUSIVE)
		return g->n == 0;
	if (g->n > 0 && g->mode != sp->mode)
		return false;
	return g->used + sp->memory_bytes <= g->total &&
	       g->c_used + sp->compute_pct <= 100;
}

static int64_t ref_left(const struct rgpu *g, const struct gs_slice_spec *sp)
{
	if (sp->isolation == GS_ISOLATION_EXCLUSIVE)
		return 0;
	return (int64_t)((g->total - g->used - sp->memory_bytes) * 1000000 /
	                 g->total) +
	       (int64_t)(100 - g->c_used - sp->compute_pct) * 10000;
}

/* The GPU the policy picks, or -1. */
static int ref_place(const struct fixture *f, const struct gs_slice_spec *sp,
                     const int *order, int skip_n)
{
	struct rgpu g[GS_ADM_GPUS_MAX];
	int best = -1;
	int64_t best_left = 0;

	ref_gpus(f, g, order, skip_n);
	for (int i = 0; i < f->sn.n_gpus; i++) {
		int64_t left;

		if (!ref_fits(&g[i], sp))
			continue;
		left = ref_left(&g[i], sp);
		if (best < 0 || (f->sn.cfg.placement == GS_PLACE_BINPACK
		                     ? left < best_left
		                     : left > best_left)) {
			best = i;
			best_left = left;
		}
	}
	return best;
}

/* Fills GPUs with random slices where they fit; all of team `team`
 * unless `teams2` (then at random). */
static void random_slices(struct fixture *f, int n, bool with_compute,
                          bool teams2)
{
	for (int k = 0; k < n; k++) {
		struct gs_slice_spec sp;
		struct rgpu g[GS_ADM_GPUS_MAX];
		int gpu = (int)rnd((unsigned)f->sn.n_gpus), i;

		gs_spec_init(&sp);
		sp.mode = rnd(2) ? GS_MODE_TIMESLICE : GS_MODE_MPS;
		sp.memory_bytes = (1 + rnd(40)) * GIB;
		sp.compute_pct = with_compute ? (int)(1 + rnd(60)) : 0;
		if (with_compute && rnd(12) == 0) {
			sp.isolation = GS_ISOLATION_EXCLUSIVE;
			sp.memory_bytes = 0;
			sp.compute_pct = 0;
		}
		ref_gpus(f, g, NULL, 0);
		if (!ref_fits(&g[gpu], &sp))
			continue;
		i = add(f, teams2 ? (int)rnd(2) : 0, gpu, sp.mode,
		        sp.memory_bytes, sp.compute_pct,
		        (enum gs_priority)rnd(3));
		f->slices[i].isolation = sp.isolation;
		if (sp.isolation == GS_ISOLATION_EXCLUSIVE) {
			f->slices[i].memory_bytes = f->sn.gpu[gpu].memory_bytes;
			f->slices[i].compute_pct = 100;
		}
		f->slices[i].created_ns = (int64_t)rnd(1000);
	}
}

static void placement_matches_a_brute_force_reference(void **state)
{
	(void)state;
	for (int round = 0; round < 3000; round++) {
		struct fixture f;
		struct gs_adm_request r;
		struct gs_adm_decision d;
		struct gs_errbuf eb = {0};
		int want;
		gs_err err;

		node(&f, 1 + (int)rnd(4));
		if (rnd(3) == 0)
			for (int i = 0; i < f.sn.n_gpus; i++)
				f.sn.gpu[i].memory_bytes = 40 * GIB;
		f.sn.cfg.placement =
		    rnd(2) ? GS_PLACE_BINPACK : GS_PLACE_SPREAD;
		random_slices(&f, (int)rnd(10), true, false);
		r = request(0, rnd(2) ? GS_MODE_TIMESLICE : GS_MODE_MPS,
		            (1 + rnd(50)) * GIB, (int)(1 + rnd(80)));
		if (rnd(10) == 0) {
			r.spec.isolation = GS_ISOLATION_EXCLUSIVE;
			r.spec.memory_bytes = 0;
			r.spec.compute_pct = 0;
		}
		want = ref_place(&f, &r.spec, NULL, 0);
		err = gs_admit(&f.sn, &r, &d, &eb);
		if (want < 0 && err != GS_ERR_NO_FIT)
			fail_msg("round %d: want no fit, got %d gpu %d", round,
			         err, d.gpu);
		if (want >= 0 && (err != GS_OK || d.gpu != want))
			fail_msg("round %d: want gpu %d, got %d gpu %d (%s)",
			         round, want, err, d.gpu, eb.msg);
		if (want >= 0)
			assert_int_equal(d.n_victims, 0);
		gs_adm_decision_fini(&d);
		fixture_fini(&f);
	}
}

static int cmp_preempt(const struct fixture *f, int a, int b)
{
	const struct gs_adm_slice *x = &f->slices[a], *y = &f->slices[b];

	if (x->priority != y->priority)
		return x->priority < y->priority ? -1 : 1;
	if (x->created_ns != y->created_ns)
		return x->created_ns > y->created_ns ? -1 : 1;
	return x->id > y->id ? -1 : 1;
}

static void reclaim_matches_a_brute_force_reference(void **state)
{
	int admitted = 0, reclaimed = 0;

	(void)state;
	for (int round = 0; round < 3000; round++) {
		struct fixture f;
		struct gs_adm_request r;
		struct gs_adm_decision d;
		struct gs_errbuf eb = {0};
		uint64_t ga, gb, use_a = 0, use_b = 0, freed = 0;
		int order[64], n_order = 0, quota_k = -1, want_k = -1;
		int want_gpu = -1;
		gs_err err;

		node(&f, 1 + (int)rnd(3));
		ga = (uint64_t)rnd(60) * GIB;
		gb = (uint64_t)rnd(60) * GIB;
		teams(&f, ga, gb);
		f.sn.cfg.placement =
		    rnd(2) ? GS_PLACE_BINPACK : GS_PLACE_SPREAD;
		random_slices(&f, 3 + (int)rnd(10), false, true);
		r = request(0, GS_MODE_TIMESLICE, (1 + rnd(40)) * GIB, 0);
		for (int i = 0; i < f.sn.n_slices; i++) {
			if (f.slices[i].team == 0) {
				use_a += f.slices[i].memory_bytes;
				continue;
			}
			use_b += f.slices[i].memory_bytes;
			order[n_order++] = i;
		}
		/* quota.h's preemption order: insertion sort */
		for (int i = 1; i < n_order; i++)
			for (int j = i; j > 0 && cmp_preempt(&f, order[j],
			                                     order[j - 1]) < 0;
			     j--) {
				int t = order[j];

				order[j] = order[j - 1];
				order[j - 1] = t;
			}
		want_gpu = ref_place(&f, &r.spec, order, 0);
		if (want_gpu >= 0) {
			want_k = 0;
		} else if (use_a + r.spec.memory_bytes <= ga) {
			/* Quota picks while b is above its guarantee, until
			 * the request's memory is freed. */
			for (int k = 0; k < n_order; k++) {
				if (use_b - freed <= gb)
					break;
				freed += f.slices[order[k]].memory_bytes;
				if (freed >= r.spec.memory_bytes) {
					quota_k = k + 1;
					break;
				}
			}
			for (int k = 1; quota_k > 0 && k <= quota_k; k++) {
				want_gpu = ref_place(&f, &r.spec, order, k);
				if (want_gpu >= 0) {
					want_k = k;
					break;
				}
			}
		}
		err = gs_admit(&f.sn, &r, &d, &eb);
		if (want_k < 0) {
			if (err == GS_OK)
				fail_msg("round %d: want a refusal, got gpu %d "
				         "with %zu victims",
				         round, d.gpu, d.n_victims);
			assert_true(err == GS_ERR_NO_FIT ||
			            err == GS_ERR_QUOTA);
		} else {
			if (err != GS_OK)
				fail_msg("round %d: want %d victims, got %s",
				         round, want_k, eb.msg);
			assert_int_equal(d.n_victims, want_k);
			for (int k = 0; k < want_k; k++)
				assert_int_equal(d.victims[k], order[k]);
			assert_int_equal(d.gpu, want_gpu);
			admitted++;
			reclaimed += want_k > 0;
		}
		gs_adm_decision_fini(&d);
		fixture_fini(&f);
	}
	/* The random nodes exercise both outcomes. */
	assert_true(admitted > 100);
	assert_true(reclaimed > 50);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(admits_a_fraction_where_binpack_leaves_least),
	    cmocka_unit_test(
	        refuses_with_the_placement_reason_when_no_gpu_has_room),
	    cmocka_unit_test(refuses_at_the_slot_limit_before_anything_else),
	    cmocka_unit_test(
	        refuses_a_user_over_the_per_user_limits_but_not_an_admin),
	    cmocka_unit_test(refuses_a_team_over_its_max),
	    cmocka_unit_test(borrows_idle_capacity_above_the_guarantee),
	    cmocka_unit_test(
	        reclaim_preempts_the_lowest_priority_borrowed_slice),
	    cmocka_unit_test(reclaim_takes_the_newest_of_equal_priorities),
	    cmocka_unit_test(reclaim_refused_above_the_requesters_guarantee),
	    cmocka_unit_test(mig_slice_takes_an_idle_instance),
	    cmocka_unit_test(
	        mig_slice_on_a_gpu_with_mig_off_plans_mig_on_and_a_create),
	    cmocka_unit_test(mig_start_destroys_the_idle_instance_in_its_way),
	    cmocka_unit_test(non_mig_slice_switches_an_unused_mig_gpu_off),
	    cmocka_unit_test(mode_auto_takes_the_default_mode_and_says_so),
	    cmocka_unit_test(mig_create_keeps_to_the_gpu_selector),
	    cmocka_unit_test(
	        auto_gives_mps_and_falls_back_to_turns_where_mps_cannot_go),
	    cmocka_unit_test(exclusive_isolation_takes_a_whole_empty_gpu),
	    cmocka_unit_test(busy_gpu_is_never_chosen),
	    cmocka_unit_test(busy_gpu_does_not_hide_a_real_refusal),
	    cmocka_unit_test(placement_matches_a_brute_force_reference),
	    cmocka_unit_test(reclaim_matches_a_brute_force_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
