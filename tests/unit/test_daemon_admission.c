/*
 * test_daemon_admission.c - gpusliced's create path (daemon/node.c) on a
 * real node model: a scratch SQLite store, library-less H100s
 * (gs_gpus_fake: every NVML change fails with GS_ERR_UNSUPPORTED), no
 * region. Checks that the daemon carries out what core's admission
 * decides (placement, reclaim victims, refusals with their codes and
 * counters) and that a decision whose action fails (a MIG change the
 * driver refuses) leaves nothing half-applied: no slice, the victims'
 * removal saved, the model's invariants intact (node_check runs after
 * every batch in this Debug build).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon_fixture.h"

#define GIB (1024ULL * 1024 * 1024)

struct env {
	struct daemon_fixture f;
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	daemon_fixture_open(&e->f, "adm");
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	daemon_fixture_close(&e->f);
	free(e);
	return 0;
}

static gs_err create(struct env *e, const char *name, const char *team,
                     enum gs_slice_mode mode, uint64_t mem, int compute,
                     enum gs_priority prio, struct gs_node_create_res *res,
                     struct gs_errbuf *eb)
{
	struct gs_node_create_req req;

	memset(&req, 0, sizeof(req));
	gs_spec_init(&req.spec);
	snprintf(req.spec.name, sizeof(req.spec.name), "%s", name);
	req.spec.mode = mode;
	req.spec.memory_bytes = mem;
	req.spec.compute_pct = compute;
	req.spec.priority = prio;
	snprintf(req.team, sizeof(req.team), "%s", team ? team : "");
	req.owner_uid = -1;
	return gs_node_slice_create(e->f.node, &e->f.admin, &req, res, eb);
}

static void team(struct env *e, const char *name, uint64_t guarantee)
{
	struct gs_team t;
	struct gs_errbuf eb = {0};

	memset(&t, 0, sizeof(t));
	snprintf(t.name, sizeof(t.name), "%s", name);
	for (int r = 0; r < GS_QRES__COUNT; r++)
		t.max.v[r] = GS_QUOTA_UNLIMITED;
	t.guarantee.v[GS_QRES_MEMORY] = (int64_t)guarantee;
	if (gs_node_team_put(e->f.node, &e->f.admin, &t, &eb) != GS_OK)
		fail_msg("team %s: %s", name, eb.msg);
}

static bool exists(struct env *e, const char *name)
{
	struct gs_slice s;

	return gs_node_slice_get(e->f.node, &e->f.admin, name, &s) == GS_OK;
}

static void create_puts_the_slice_where_admission_decides(void **state)
{
	struct env *e = *state;
	struct gs_node_create_res res;
	struct gs_errbuf eb = {0};
	struct gs_slice s;

	assert_int_equal(create(e, "big", NULL, GS_MODE_TIMESLICE, 40 * GIB, 50,
	                        GS_PRIORITY_NORMAL, &res, &eb),
	                 GS_OK);
	assert_int_equal(res.slice.gpu_index, 0);
	/* binpack: the loaded GPU */
	assert_int_equal(create(e, "small", NULL, GS_MODE_TIMESLICE, 8 * GIB,
	                        10, GS_PRIORITY_NORMAL, &res, &eb),
	                 GS_OK);
	assert_int_equal(res.slice.gpu_index, 0);
	assert_int_equal(res.slice.state, GS_SLICE_READY);
	assert_int_equal(gs_node_slice_get(e->f.node, &e->f.admin, "small", &s),
	                 GS_OK);
	assert_int_equal(s.spec.memory_bytes, 8 * GIB);
	assert_int_equal(s.mode, GS_MODE_TIMESLICE);
}

static void refused_create_changes_nothing_and_counts_a_reject(void **state)
{
	struct env *e = *state;
	struct gs_node_create_res res;
	struct gs_node_counters before, after;
	struct gs_errbuf eb = {0};
	struct gs_slice *list = NULL;
	int n = 0;

	assert_int_equal(create(e, "a", NULL, GS_MODE_TIMESLICE, 70 * GIB, 10,
	                        GS_PRIORITY_NORMAL, &res, &eb),
	                 GS_OK);
	assert_int_equal(create(e, "b", NULL, GS_MODE_TIMESLICE, 70 * GIB, 10,
	                        GS_PRIORITY_NORMAL, &res, &eb),
	                 GS_OK);
	gs_node_counters(e->f.node, &before);
	assert_int_equal(create(e, "c", NULL, GS_MODE_TIMESLICE, 20 * GIB, 10,
	                        GS_PRIORITY_NORMAL, &res, &eb),
	                 GS_ERR_NO_FIT);
	assert_non_null(strstr(eb.msg, "no GPU has"));
	gs_node_counters(e->f.node, &after);
	assert_int_equal(after.rejects, before.rejects + 1);
	assert_int_equal(after.creates, before.creates);
	assert_int_equal(
	    gs_node_slice_list(e->f.node, &e->f.admin, NULL, &list, &n), GS_OK);
	assert_int_equal(n, 2);
	free(list);

	eb.set = false;
	assert_int_equal(create(e, "a", NULL, GS_MODE_TIMESLICE, 1 * GIB, 1,
	                        GS_PRIORITY_NORMAL, &res, &eb),
	                 GS_ERR_EXISTS);
}

static void reclaim_removes_exactly_the_victims_admission_chose(void **state)
{
	struct env *e = *state;
	struct gs_node_create_res res;
	struct gs_errbuf eb = {0};

	team(e, "a", 70 * GIB);
	team(e, "b", 70 * GIB);
	/* b borrows most of both GPUs (79.6 GiB each). */
	assert_int_equal(create(e, "b0", "b", GS_MODE_TIMESLICE, 70 * GIB, 0,
	                        GS_PRIORITY_HIGH, &res, &eb),
	                 GS_OK);
	assert_int_equal(create(e, "b1", "b", GS_MODE_TIMESLICE, 40 * GIB, 0,
	                        GS_PRIORITY_LOW, &res, &eb),
	                 GS_OK);
	assert_int_equal(create(e, "b2", "b", GS_MODE_TIMESLICE, 30 * GIB, 0,
	                        GS_PRIORITY_NORMAL, &res, &eb),
	                 GS_OK);
	assert_int_equal(create(e, "a0", "a", GS_MODE_TIMESLICE, 30 * GIB, 0,
	                        GS_PRIORITY_NORMAL, &res, &eb),
	                 GS_OK);
	assert_int_equal(res.n_victims, 1);
	assert_string_equal(res.victims[0], "b1");
	assert_false(exists(e, "b1"));
	assert_true(exists(e, "b0"));
	assert_true(exists(e, "b2"));
	assert_int_equal(res.slice.gpu_index, 1);
}

static void last_event(void *ctx, const struct gs_event *e)
{
	*(struct gs_event *)ctx = *e;
}

static void failed_mig_change_leaves_no_slice_behind(void **state)
{
	struct env *e = *state;
	struct gs_node_create_res res;
	struct gs_node_create_req req;
	struct gs_node_counters before, after;
	struct gs_event ev;
	struct gs_errbuf eb = {0};

	e->f.cfg.mig_on_real_gpu = true; /* the fake node may try MIG */
	gs_node_counters(e->f.node, &before);
	memset(&req, 0, sizeof(req));
	gs_spec_init(&req.spec);
	snprintf(req.spec.name, sizeof(req.spec.name), "m");
	req.spec.mode = GS_MODE_MIG;
	snprintf(req.spec.mig_profile, sizeof(req.spec.mig_profile), "1g.10gb");
	req.owner_uid = -1;
	assert_int_equal(
	    gs_node_slice_create(e->f.node, &e->f.admin, &req, &res, &eb),
	    GS_ERR_UNSUPPORTED);
	assert_false(exists(e, "m"));
	memset(&ev, 0, sizeof(ev));
	assert_int_equal(gs_store_events(e->f.store, 0, 0, "m", -1, 100,
	                                 last_event, &ev, NULL),
	                 GS_OK);
	assert_string_equal(ev.type, "slice.failed");
	assert_non_null(strstr(ev.message, "MIG change failed"));
	gs_node_counters(e->f.node, &after);
	assert_int_equal(after.creates, before.creates);
	/* the node still takes what fits */
	e->f.cfg.mig_on_real_gpu = false;
	eb.set = false;
	assert_int_equal(create(e, "t", NULL, GS_MODE_TIMESLICE, 1 * GIB, 1,
	                        GS_PRIORITY_NORMAL, &res, &eb),
	                 GS_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        create_puts_the_slice_where_admission_decides, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        refused_create_changes_nothing_and_counts_a_reject, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        reclaim_removes_exactly_the_victims_admission_chose, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        failed_mig_change_leaves_no_slice_behind, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
