/*
 * test_park.c - the parking policy (gs/park.h): which reclaim victims are
 * parked instead of killed (and why not), and which parked slices resume
 * when: only into room nobody else was admitted to, within their team's
 * quota, in order of priority then park time, one GPU's queue held by its
 * head. Also that parked slices keep their slots in admission (rule 1).
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
#include "gs/catalog.h"
#include "gs/park.h"

#define GIB (1024ULL * 1024 * 1024)

/* ---- who may be parked ---------------------------------------------- */

static struct gs_park_victim parkable(void)
{
	struct gs_park_victim v;

	memset(&v, 0, sizeof(v));
	v.swap_on = true;
	v.mode = GS_MODE_TIMESLICE;
	v.isolation = GS_ISOLATION_NONE;
	v.swap = GS_SWAP_ALLOW;
	v.movable = true;
	v.resident_bytes = 4 * GIB;
	v.host_free_bytes = 8 * GIB;
	return v;
}

static void may_park_a_swappable_fraction_with_host_room(void **state)
{
	struct gs_park_victim v = parkable();
	char why[GS_PARK_WHY_MAX] = "x";

	(void)state;
	assert_true(gs_park_may_park(&v, why, sizeof(why)));
	assert_string_equal(why, "");
	v.host_free_bytes = v.resident_bytes; /* exactly the room */
	assert_true(gs_park_may_park(&v, NULL, 0));
}

static void expect_kill(const struct gs_park_victim *v, const char *words)
{
	char why[GS_PARK_WHY_MAX];

	assert_false(gs_park_may_park(v, why, sizeof(why)));
	if (strstr(why, words) == NULL)
		fail_msg("reason '%s' does not say '%s'", why, words);
}

static void may_not_park_what_cannot_move_and_says_why(void **state)
{
	struct gs_park_victim v;

	(void)state;
	v = parkable();
	v.swap = GS_SWAP_NEVER;
	expect_kill(&v, "swap: never");
	v = parkable();
	v.swap_on = false;
	expect_kill(&v, "swap is off");
	v = parkable();
	v.pinned = "exported memory over IPC";
	expect_kill(&v, "pinned: its process exported memory over IPC");
	v = parkable();
	v.movable = false;
	expect_kill(&v, "movable memory");
	v = parkable();
	v.host_free_bytes = v.resident_bytes - 1;
	expect_kill(&v, "swap.host_memory");
	v = parkable();
	v.mode = GS_MODE_MIG;
	expect_kill(&v, "MIG");
	v = parkable();
	v.isolation = GS_ISOLATION_EXCLUSIVE;
	expect_kill(&v, "whole GPU");
	/* an empty pin reason is no pin */
	v = parkable();
	v.pinned = "";
	assert_true(gs_park_may_park(&v, NULL, 0));
}

/* ---- who resumes ----------------------------------------------------- */

struct fixture {
	struct gs_adm_snapshot sn;
	struct gs_adm_slice live[16];
	struct gs_adm_slice parked[16];
	struct gs_slice_spec spec[16];
	struct gs_park_waiting w[16];
	size_t n_parked;
	struct gs_quota_tree *tree;
};

/* n_gpus plain 80 GiB H100s, binpack; teams "prod" (index 0) and
 * "research" (1, max `research_max` GiB of memory, 0: none). */
static void node(struct fixture *f, int n_gpus, uint64_t research_max)
{
	struct gs_quota_team_def d[2];
	struct gs_errbuf eb = {0};

	memset(f, 0, sizeof(*f));
	f->sn.n_gpus = n_gpus;
	for (int i = 0; i < n_gpus; i++) {
		f->sn.gpu[i].uuid = i ? "GPU-b" : "GPU-a";
		f->sn.gpu[i].model = "H100-SXM5-80GB";
		f->sn.gpu[i].cat = gs_catalog_find("H100-SXM5-80GB");
		assert_non_null(f->sn.gpu[i].cat);
		f->sn.gpu[i].memory_bytes = 80 * GIB;
	}
	f->sn.slices = f->live;
	f->sn.now_ns = 1000;
	f->sn.cfg.placement = GS_PLACE_BINPACK;
	f->sn.cfg.default_mode = GS_MODE_TIMESLICE;
	f->sn.cfg.max_slices = 16;
	f->sn.cfg.user_max_slices = 16;
	f->sn.cfg.user_max_memory_percent = 100;
	f->sn.cfg.oversubscribe = 1.0;
	memset(d, 0, sizeof(d));
	d[0].name = "prod";
	d[1].name = "research";
	for (int r = 0; r < GS_QRES__COUNT; r++) {
		d[0].max.v[r] = GS_QUOTA_UNLIMITED;
		d[1].max.v[r] = GS_QUOTA_UNLIMITED;
	}
	if (research_max)
		d[1].max.v[GS_QRES_MEMORY] = (int64_t)(research_max * GIB);
	assert_int_equal(gs_quota_tree_create(d, 2, &f->tree, &eb), GS_OK);
	f->sn.teams = f->tree;
}

static void fill(struct gs_adm_slice *s, int64_t id, int team, int gpu,
                 uint64_t gib, enum gs_priority prio)
{
	memset(s, 0, sizeof(*s));
	s->id = id;
	s->name = "s";
	s->owner_uid = 1000 + (uint32_t)id; /* per-user limits do not bind */
	s->team = team;
	s->created_ns = id;
	s->priority = prio;
	s->mode = GS_MODE_TIMESLICE;
	s->gpu = gpu;
	s->gi_id = -1;
	s->mig_profile = "";
	s->memory_bytes = gib * GIB;
}

static void live(struct fixture *f, int64_t id, int team, int gpu, uint64_t gib)
{
	fill(&f->live[f->sn.n_slices++], id, team, gpu, gib,
	     GS_PRIORITY_NORMAL);
}

static void park(struct fixture *f, int64_t id, int gpu, uint64_t gib,
                 enum gs_priority prio, int64_t parked_ns)
{
	size_t i = f->n_parked++;

	fill(&f->parked[i], id, 1, gpu, gib, prio);
	gs_spec_init(&f->spec[i]);
	f->spec[i].memory_bytes = gib * GIB;
	f->spec[i].priority = prio;
	f->w[i].slice = &f->parked[i];
	f->w[i].spec = &f->spec[i];
	f->w[i].parked_ns = parked_ns;
}

/* The ids that resume, in order, as "3,1" ("" for none). */
static void resumes(struct fixture *f, const char *want)
{
	struct gs_park_resume out[16];
	struct gs_errbuf eb = {0};
	char got[128] = "";
	size_t n = 99;

	assert_int_equal(
	    gs_park_plan_resume(&f->sn, f->w, f->n_parked, out, &n, &eb),
	    GS_OK);
	for (size_t k = 0; k < n; k++) {
		size_t len = strlen(got);

		(void)snprintf(got + len, sizeof(got) - len, "%s%lld",
		               k ? "," : "",
		               (long long)f->parked[out[k].waiting].id);
	}
	if (strcmp(got, want) != 0)
		fail_msg("resumed '%s', expected '%s'", got, want);
	gs_quota_tree_destroy(f->tree);
	f->tree = NULL;
}

static void a_parked_slice_resumes_once_its_gpu_has_room_again(void **state)
{
	struct fixture f;

	(void)state;
	node(&f, 1, 0);
	park(&f, 7, 0, 30, GS_PRIORITY_NORMAL, 100);
	live(&f, 8, 0, 0, 60); /* the reclaimer, in the parked one's room */
	resumes(&f, "");
	/* the reclaimer ended */
	node(&f, 1, 0);
	park(&f, 7, 0, 30, GS_PRIORITY_NORMAL, 100);
	live(&f, 9, 0, 0, 20);
	resumes(&f, "7");
}

static void
a_parked_slice_never_resumes_into_memory_admitted_to_another(void **state)
{
	struct fixture f;

	(void)state;
	/* 80 GiB: 51 admitted to others since; 30 do not fit, by 1 GiB */
	node(&f, 1, 0);
	park(&f, 1, 0, 30, GS_PRIORITY_NORMAL, 100);
	live(&f, 2, 0, 0, 40);
	live(&f, 3, 0, 0, 11);
	resumes(&f, "");
	/* two waiting, room for one: the second does not take the first's */
	node(&f, 1, 0);
	park(&f, 1, 0, 30, GS_PRIORITY_NORMAL, 100);
	park(&f, 2, 0, 30, GS_PRIORITY_NORMAL, 200);
	live(&f, 3, 0, 0, 40);
	resumes(&f, "1");
}

static void a_parked_slice_resumes_only_within_its_teams_quota(void **state)
{
	struct fixture f;

	(void)state;
	/* research may hold 40 GiB: 20 live + 30 parked is past it, though
	 * the GPU has the room */
	node(&f, 1, 40);
	park(&f, 1, 0, 30, GS_PRIORITY_NORMAL, 100);
	live(&f, 2, 1, 0, 20);
	resumes(&f, "");
	node(&f, 1, 40);
	park(&f, 1, 0, 30, GS_PRIORITY_NORMAL, 100);
	live(&f, 2, 1, 0, 10);
	resumes(&f, "1");
}

static void resumes_go_by_priority_then_park_time(void **state)
{
	struct fixture f;

	(void)state;
	node(&f, 1, 0);
	park(&f, 1, 0, 20, GS_PRIORITY_LOW, 100);
	park(&f, 2, 0, 20, GS_PRIORITY_NORMAL, 300);
	park(&f, 3, 0, 20, GS_PRIORITY_HIGH, 400);
	park(&f, 4, 0, 20, GS_PRIORITY_NORMAL, 200);
	resumes(&f, "3,4,2,1");
	/* room for two: the first two of that order */
	node(&f, 1, 0);
	park(&f, 1, 0, 20, GS_PRIORITY_LOW, 100);
	park(&f, 2, 0, 20, GS_PRIORITY_NORMAL, 300);
	park(&f, 3, 0, 20, GS_PRIORITY_HIGH, 400);
	park(&f, 4, 0, 20, GS_PRIORITY_NORMAL, 200);
	live(&f, 5, 0, 0, 40);
	resumes(&f, "3,4");
	/* equal priority and time: the lower id */
	node(&f, 1, 0);
	park(&f, 9, 0, 50, GS_PRIORITY_NORMAL, 100);
	park(&f, 8, 0, 50, GS_PRIORITY_NORMAL, 100);
	resumes(&f, "8");
}

static void a_waiting_slice_holds_its_gpus_queue_not_the_others(void **state)
{
	struct fixture f;

	(void)state;
	/* GPU 0 has 30 GiB free: the first in line (40) waits, and the
	 * smaller one behind it does not take its room; GPU 1 goes on */
	node(&f, 2, 0);
	park(&f, 1, 0, 40, GS_PRIORITY_HIGH, 100);
	park(&f, 2, 0, 10, GS_PRIORITY_NORMAL, 100);
	park(&f, 3, 1, 10, GS_PRIORITY_LOW, 100);
	live(&f, 4, 0, 0, 50);
	resumes(&f, "3");
}

static void parked_slices_keep_their_slots_in_admission(void **state)
{
	struct fixture f;
	struct gs_adm_request r;
	struct gs_adm_decision d;
	struct gs_errbuf eb = {0};

	(void)state;
	node(&f, 1, 0);
	f.sn.cfg.max_slices = 2;
	live(&f, 1, 0, 0, 10);
	f.sn.n_parked = 1;
	memset(&r, 0, sizeof(r));
	gs_spec_init(&r.spec);
	r.spec.memory_bytes = 10 * GIB;
	r.admin = true;
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_ERR_NO_FIT);
	gs_adm_decision_fini(&d);
	f.sn.n_parked = 0;
	eb.set = false;
	assert_int_equal(gs_admit(&f.sn, &r, &d, &eb), GS_OK);
	gs_adm_decision_fini(&d);
	/* a parked slice resuming takes its own slot back */
	park(&f, 2, 0, 10, GS_PRIORITY_NORMAL, 100);
	resumes(&f, "2");
}

/*
 * Against a naive reference: on one GPU with quotas that do not bind,
 * the slices that resume are the longest prefix of the order (priority
 * desc, park time asc, id asc) whose memory and compute fit what the
 * live slices leave. Random cases, a fixed seed.
 */
static void plan_resume_matches_a_naive_prefix_on_one_gpu(void **state)
{
	unsigned seed = 12345;

	(void)state;
	for (int round = 0; round < 300; round++) {
		struct fixture f;
		struct gs_park_resume out[16];
		struct gs_errbuf eb = {0};
		size_t n = 0, order[16], want = 0;
		uint64_t mem = 0;
		int comp = 0, n_live, n_park;

		node(&f, 1, 0);
		n_live = (int)(rand_r(&seed) % 3);
		for (int i = 0; i < n_live; i++) {
			live(&f, 100 + i, 0, 0, 1 + rand_r(&seed) % 30);
			f.live[i].compute_pct = (int)(rand_r(&seed) % 40);
			mem += f.live[i].memory_bytes;
			comp += f.live[i].compute_pct;
		}
		n_park = 1 + (int)(rand_r(&seed) % 6);
		for (int i = 0; i < n_park; i++) {
			park(&f, 1 + i, 0, 1 + rand_r(&seed) % 40,
			     (enum gs_priority)(rand_r(&seed) % 3),
			     (int64_t)(rand_r(&seed) % 4));
			f.parked[i].compute_pct = (int)(rand_r(&seed) % 50);
			f.spec[i].compute_pct = f.parked[i].compute_pct;
		}
		/* the naive order and prefix */
		for (int i = 0; i < n_park; i++)
			order[i] = (size_t)i;
		for (int i = 0; i < n_park; i++)
			for (int j = i + 1; j < n_park; j++)
				if (gs_park_before(&f.w[order[j]],
				                   &f.w[order[i]])) {
					size_t t = order[i];

					order[i] = order[j];
					order[j] = t;
				}
		for (int i = 0; i < n_park; i++) {
			const struct gs_adm_slice *p = &f.parked[order[i]];

			if (mem + p->memory_bytes > 80 * GIB ||
			    comp + p->compute_pct > 100)
				break;
			mem += p->memory_bytes;
			comp += p->compute_pct;
			want++;
		}
		assert_int_equal(gs_park_plan_resume(&f.sn, f.w, (size_t)n_park,
		                                     out, &n, &eb),
		                 GS_OK);
		if (n != want)
			fail_msg(
			    "round %d: %zu resumed, the reference says %zu",
			    round, n, want);
		for (size_t k = 0; k < n; k++)
			assert_int_equal(out[k].waiting, order[k]);
		gs_quota_tree_destroy(f.tree);
	}
}

static void a_parked_slice_resumes_only_within_its_owners_limits(void **state)
{
	struct fixture f;

	(void)state;
	/* uid 1000 may hold one slice, and holds one live */
	node(&f, 1, 0);
	f.sn.cfg.user_max_slices = 1;
	live(&f, 2, 0, 0, 10);
	f.live[0].owner_uid = 1000;
	park(&f, 1, 0, 10, GS_PRIORITY_NORMAL, 100);
	f.parked[0].owner_uid = 1000;
	resumes(&f, "");
	/* root's slice is not bound */
	node(&f, 1, 0);
	f.sn.cfg.user_max_slices = 1;
	live(&f, 2, 0, 0, 10);
	f.live[0].owner_uid = 0;
	park(&f, 1, 0, 10, GS_PRIORITY_NORMAL, 100);
	f.parked[0].owner_uid = 0;
	resumes(&f, "1");
}

static void plan_resume_refuses_incomplete_input(void **state)
{
	struct fixture f;
	struct gs_park_resume out[2];
	struct gs_errbuf eb = {0};
	size_t n;

	(void)state;
	node(&f, 1, 0);
	park(&f, 1, 0, 10, GS_PRIORITY_NORMAL, 100);
	f.w[0].spec = NULL;
	assert_int_equal(gs_park_plan_resume(&f.sn, f.w, 1, out, &n, &eb),
	                 GS_ERR_INVALID);
	assert_int_equal(n, 0);
	assert_int_equal(gs_park_plan_resume(&f.sn, f.w, 0, out, &n, &eb),
	                 GS_OK);
	gs_quota_tree_destroy(f.tree);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(may_park_a_swappable_fraction_with_host_room),
	    cmocka_unit_test(may_not_park_what_cannot_move_and_says_why),
	    cmocka_unit_test(
	        a_parked_slice_resumes_once_its_gpu_has_room_again),
	    cmocka_unit_test(
	        a_parked_slice_never_resumes_into_memory_admitted_to_another),
	    cmocka_unit_test(
	        a_parked_slice_resumes_only_within_its_teams_quota),
	    cmocka_unit_test(resumes_go_by_priority_then_park_time),
	    cmocka_unit_test(
	        a_waiting_slice_holds_its_gpus_queue_not_the_others),
	    cmocka_unit_test(parked_slices_keep_their_slots_in_admission),
	    cmocka_unit_test(
	        a_parked_slice_resumes_only_within_its_owners_limits),
	    cmocka_unit_test(plan_resume_matches_a_naive_prefix_on_one_gpu),
	    cmocka_unit_test(plan_resume_refuses_incomplete_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
