/*
 * test_daemon_create.c - gpusliced's create (daemon/create.c decides,
 * daemon/actor.c carries the plan out) on a real node model: a scratch SQLite
 * store, library-less H100s (gs_gpus_fake), no region. A test hook
 * (gs_node_set_create_hook) runs between the phases, off the node lock,
 * where the slice is PENDING: saved, its share held, not yet usable.
 * Checks that the model answers while a create is between its phases,
 * that a pending slice holds its share against other creates, that a
 * delete while pending wins (the create answers GS_ERR_BUSY, 409), and
 * that a PENDING row a crash left in the store is carried on at the next
 * start (gs_node_recover resumes its plan: the slice becomes READY).
 *
 * A create that changes a GPU's MIG layout runs the NVML steps off the
 * node lock (gs_node_set_mig_hook parks it there): the model answers, the
 * GPU is busy for other creates meanwhile. The fake GPUs refuse every
 * MIG change, so such a create ends failed here (the sim's integration
 * tests carry real MIG steps through). The MIG decision a pending row
 * saves (gs_slice.mig_plan) reads back as it was, for the GPU's catalog.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../daemon/mig.h"
#include "daemon_fixture.h"

#define GIB (1024ULL * 1024 * 1024)

struct env {
	struct daemon_fixture f;
	/* the hook: what it does for the slice named `hold` */
	const char *hold;
	void (*during)(struct env *e, const char *slice);
	struct gs_slice seen;     /* "hold" as listed between the phases */
	struct gs_slice stored;   /* its store row between the phases */
	bool listed, was_stored;
	/* a hook that parks the create until `go` */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool parked, go;
};

static void hook(void *arg, const char *slice)
{
	struct env *e = arg;

	if (e->during && e->hold && strcmp(slice, e->hold) == 0)
		e->during(e, slice);
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	daemon_fixture_open(&e->f, "create");
	gs_node_set_create_hook(e->f.node, hook, e);
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	*state = e;
	return 0;
}

/* As setup, with MIG changes allowed on the (fake) GPUs. */
static int setup_mig(void **state)
{
	int rc = setup(state);
	struct env *e = *state;

	e->f.cfg.mig_on_real_gpu = true;
	return rc;
}

static int teardown(void **state)
{
	struct env *e = *state;

	daemon_fixture_close(&e->f);
	pthread_cond_destroy(&e->cv);
	pthread_mutex_destroy(&e->mu);
	free(e);
	return 0;
}

static gs_err create(struct env *e, const char *name, uint64_t mem,
                     struct gs_node_create_res *res, struct gs_errbuf *eb)
{
	struct gs_node_create_req req;

	memset(&req, 0, sizeof(req));
	gs_spec_init(&req.spec);
	snprintf(req.spec.name, sizeof(req.spec.name), "%s", name);
	req.spec.mode = GS_MODE_TIMESLICE;
	req.spec.memory_bytes = mem;
	req.spec.compute_pct = 10;
	req.owner_uid = -1;
	return gs_node_slice_create(e->f.node, &e->f.admin, &req, res, eb);
}

static void find_row(void *ctx, const struct gs_slice *s)
{
	struct env *e = ctx;

	if (strcmp(s->name, e->hold) == 0) {
		e->stored = *s;
		e->was_stored = true;
	}
}

static void count_row(void *ctx, const struct gs_slice *s)
{
	(void)s;
	(*(int *)ctx)++;
}

static void last_event(void *ctx, const struct gs_event *ev)
{
	*(struct gs_event *)ctx = *ev;
}

static int stored_slices(struct env *e)
{
	int n = 0;

	assert_int_equal(gs_store_load_slices(e->f.store, count_row, &n, NULL),
	                 GS_OK);
	return n;
}

/* ---- between the phases, from another thread ---- */

struct creator {
	struct env *e;
	const char *name;
	uint64_t mem;
	gs_err err;
	struct gs_node_create_res res;
	struct gs_errbuf eb;
};

static void *creator_main(void *arg)
{
	struct creator *c = arg;

	c->err = create(c->e, c->name, c->mem, &c->res, &c->eb);
	return NULL;
}

static void park(struct env *e, const char *slice)
{
	(void)slice;
	pthread_mutex_lock(&e->mu);
	e->parked = true;
	pthread_cond_broadcast(&e->cv);
	while (!e->go)
		pthread_cond_wait(&e->cv, &e->mu);
	pthread_mutex_unlock(&e->mu);
}

static void model_answers_and_holds_the_share_while_a_create_is_pending(
    void **state)
{
	struct env *e = *state;
	struct creator c = {.e = e, .name = "a", .mem = 70 * GIB};
	struct gs_node_create_res res;
	struct gs_errbuf eb = {0};
	struct gs_slice *v = NULL, got;
	pthread_t t;
	int n = 0, b_gpu;

	e->hold = "a";
	e->during = park;
	assert_int_equal(pthread_create(&t, NULL, creator_main, &c), 0);
	pthread_mutex_lock(&e->mu);
	while (!e->parked)
		pthread_cond_wait(&e->cv, &e->mu);
	pthread_mutex_unlock(&e->mu);

	/* The create is parked off the node lock: the model answers. */
	assert_int_equal(gs_node_slice_list(e->f.node, &e->f.admin, NULL, &v, &n),
	                 GS_OK);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].name, "a");
	assert_int_equal(v[0].state, GS_SLICE_PENDING);
	free(v);
	/* Saved as pending already. */
	e->was_stored = false;
	assert_int_equal(gs_store_load_slices(e->f.store, find_row, e, NULL),
	                 GS_OK);
	assert_true(e->was_stored);
	assert_int_equal(e->stored.state, GS_SLICE_PENDING);
	/* Its share is held: one more 70 GiB slice fits (the other GPU),
	 * a second does not. */
	assert_int_equal(create(e, "b", 70 * GIB, &res, &eb), GS_OK);
	b_gpu = res.slice.gpu_index;
	assert_int_equal(create(e, "c", 70 * GIB, &res, &eb), GS_ERR_NO_FIT);

	pthread_mutex_lock(&e->mu);
	e->go = true;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(c.err, GS_OK);
	assert_int_equal(c.res.slice.state, GS_SLICE_READY);
	assert_int_equal(gs_node_slice_get(e->f.node, &e->f.admin, "a", &got),
	                 GS_OK);
	assert_int_equal(got.state, GS_SLICE_READY);
	assert_int_not_equal(got.gpu_index, b_gpu);
	e->was_stored = false;
	assert_int_equal(gs_store_load_slices(e->f.store, find_row, e, NULL),
	                 GS_OK);
	assert_true(e->was_stored);
	assert_int_equal(e->stored.state, GS_SLICE_READY);
}

/* ---- delete while pending ---- */

static void delete_it(struct env *e, const char *slice)
{
	struct gs_errbuf eb = {0};

	/* In the creating thread itself: the lock is not held here. */
	assert_int_equal(gs_node_slice_delete(e->f.node, &e->f.admin, slice, &eb),
	                 GS_OK);
}

static void delete_while_pending_wins_and_the_create_answers_busy(
    void **state)
{
	struct env *e = *state;
	struct gs_node_create_res res;
	struct gs_node_counters ctr;
	struct gs_errbuf eb = {0};
	struct gs_event ev;

	e->hold = "a";
	e->during = delete_it;
	assert_int_equal(create(e, "a", 10 * GIB, &res, &eb), GS_ERR_BUSY);
	assert_non_null(strstr(eb.msg, "deleted while it was being created"));
	assert_int_equal(gs_node_slice_get(e->f.node, &e->f.admin, "a",
	                                   &res.slice),
	                 GS_ERR_NOT_FOUND);
	assert_int_equal(stored_slices(e), 0);
	memset(&ev, 0, sizeof(ev));
	assert_int_equal(gs_store_events(e->f.store, 0, 0, "a", -1, 100,
	                                 last_event, &ev, NULL),
	                 GS_OK);
	assert_string_equal(ev.type, "slice.deleted");
	gs_node_counters(e->f.node, &ctr);
	assert_int_equal(ctr.creates, 0);
	/* The name is free again, and the room. */
	e->during = NULL;
	eb.set = false;
	assert_int_equal(create(e, "a", 70 * GIB, &res, &eb), GS_OK);
	assert_int_equal(create(e, "b", 70 * GIB, &res, &eb), GS_OK);
}

/* ---- MIG steps off the lock ---- */

static gs_err create_mig_slice(struct env *e, const char *name,
                               struct gs_node_create_res *res,
                               struct gs_errbuf *eb)
{
	struct gs_node_create_req req;

	memset(&req, 0, sizeof(req));
	gs_spec_init(&req.spec);
	snprintf(req.spec.name, sizeof(req.spec.name), "%s", name);
	req.spec.mode = GS_MODE_MIG;
	snprintf(req.spec.mig_profile, sizeof(req.spec.mig_profile),
	         "1g.10gb");
	req.spec.gpu.kind = GS_GPU_INDEX;
	req.spec.gpu.index = 0;
	req.owner_uid = -1;
	return gs_node_slice_create(e->f.node, &e->f.admin, &req, res, eb);
}

static void *mig_creator_main(void *arg)
{
	struct creator *c = arg;

	c->err = create_mig_slice(c->e, c->name, &c->res, &c->eb);
	return NULL;
}

static void model_answers_while_a_create_changes_mig(void **state)
{
	struct env *e = *state;
	struct creator c = {.e = e, .name = "m"};
	struct gs_node_create_res res;
	struct gs_errbuf eb = {0};
	struct gs_slice *v = NULL, got;
	struct gs_event ev;
	pthread_t t;
	int n = 0;

	/* The hook is the MIG one, in the NVML section. */
	gs_node_set_create_hook(e->f.node, NULL, NULL);
	gs_node_set_mig_hook(e->f.node, hook, e);
	e->hold = "m";
	e->during = park;
	assert_int_equal(pthread_create(&t, NULL, mig_creator_main, &c), 0);
	pthread_mutex_lock(&e->mu);
	while (!e->parked)
		pthread_cond_wait(&e->cv, &e->mu);
	pthread_mutex_unlock(&e->mu);

	/* The MIG change is in flight, off the node lock: list and get
	 * answer, the slice pending without an instance yet. */
	assert_int_equal(gs_node_slice_list(e->f.node, &e->f.admin, NULL, &v, &n),
	                 GS_OK);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].name, "m");
	assert_int_equal(v[0].state, GS_SLICE_PENDING);
	free(v);
	assert_int_equal(gs_node_slice_get(e->f.node, &e->f.admin, "m", &got),
	                 GS_OK);
	assert_int_equal(got.state, GS_SLICE_PENDING);
	assert_int_equal(got.gpu_index, 0);
	assert_int_equal(got.gi_id, -1);
	/* GPU 0 is busy: what fits elsewhere goes there; what only it
	 * could take (GPU 1 now holds a whole-GPU-mode slice, so no MIG
	 * there) is refused, for now. */
	assert_int_equal(create(e, "t", 70 * GIB, &res, &eb), GS_OK);
	assert_int_equal(res.slice.gpu_index, 1);
	assert_int_equal(create_mig_slice(e, "m2", &res, &eb), GS_ERR_NO_FIT);
	assert_string_equal(eb.msg,
	                    "gpu 0 is changing its MIG layout; try again");

	pthread_mutex_lock(&e->mu);
	e->go = true;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
	assert_int_equal(pthread_join(t, NULL), 0);
	/* The fake refuses the change: the slice fails and is gone. */
	assert_int_equal(c.err, GS_ERR_UNSUPPORTED);
	assert_int_equal(gs_node_slice_get(e->f.node, &e->f.admin, "m", &got),
	                 GS_ERR_NOT_FOUND);
	assert_int_equal(stored_slices(e), 1);
	memset(&ev, 0, sizeof(ev));
	assert_int_equal(gs_store_events(e->f.store, 0, 0, "m", -1, 100,
	                                 last_event, &ev, NULL),
	                 GS_OK);
	assert_string_equal(ev.type, "slice.failed");
	assert_non_null(strstr(ev.message, "its MIG change failed"));
	/* GPU 0 is no longer busy. */
	e->during = NULL;
	eb.set = false;
	assert_int_equal(create(e, "u", 70 * GIB, &res, &eb), GS_OK);
	assert_int_equal(res.slice.gpu_index, 0);
}

/* ---- a crash between the phases ---- */

static void remember_row(struct env *e, const char *slice)
{
	(void)slice;
	e->was_stored = false;
	assert_int_equal(gs_store_load_slices(e->f.store, find_row, e, NULL),
	                 GS_OK);
}

static gs_err apply_put(struct gs_store *st, struct gs_store_op *op)
{
	return gs_store_slice_put(st, op->arg);
}

static void pending_row_after_a_crash_is_resumed_at_recovery(void **state)
{
	struct env *e = *state;
	struct gs_node_create_res res;
	struct gs_store_op op = {.apply = apply_put};
	struct gs_errbuf eb = {0};
	struct gs_event ev;
	struct gs_slice got;
	int kept = -1, cleaned = -1;

	/* The store as a kill -9 between the phases leaves it: the row
	 * phase A saved (taken between the phases), put back over the
	 * READY one phase B wrote. */
	e->hold = "a";
	e->during = remember_row;
	assert_int_equal(create(e, "keep", 1 * GIB, &res, &eb), GS_OK);
	assert_int_equal(create(e, "a", 10 * GIB, &res, &eb), GS_OK);
	assert_true(e->was_stored);
	assert_int_equal(e->stored.state, GS_SLICE_PENDING);
	e->during = NULL;
	gs_node_destroy(e->f.node);
	op.arg = &e->stored;
	gs_store_submit(e->f.store, &op);
	assert_int_equal(gs_store_wait(e->f.store, &op), GS_OK);

	/* gpusliced starts again: the plan resumes, no create waits. */
	e->f.node = daemon_fixture_node(&e->f);
	gs_node_set_create_hook(e->f.node, hook, e);
	assert_int_equal(gs_node_recover(e->f.node, &kept, &cleaned, &eb), GS_OK);
	assert_int_equal(kept, 2);
	assert_int_equal(cleaned, 0);
	for (int i = 0; i < 500; i++) {
		assert_int_equal(gs_node_slice_get(e->f.node, &e->f.admin, "a",
		                                   &got),
		                 GS_OK);
		if (got.state != GS_SLICE_PENDING)
			break;
		usleep(10000);
	}
	assert_int_equal(got.state, GS_SLICE_READY);
	assert_int_equal(got.gpu_index, e->stored.gpu_index);
	/* Saved so (its READY row follows the resume's event). */
	for (int i = 0; i < 500; i++) {
		e->was_stored = false;
		assert_int_equal(
		    gs_store_load_slices(e->f.store, find_row, e, NULL), GS_OK);
		if (e->was_stored && e->stored.state == GS_SLICE_READY)
			break;
		usleep(10000);
	}
	assert_int_equal(e->stored.state, GS_SLICE_READY);
	assert_int_equal(stored_slices(e), 2);
	memset(&ev, 0, sizeof(ev));
	assert_int_equal(gs_store_events(e->f.store, 0, 0, "a", -1, 100,
	                                 last_event, &ev, NULL),
	                 GS_OK);
	assert_string_equal(ev.type, "slice.created");
	/* Creates go on as before. */
	assert_int_equal(create(e, "b", 70 * GIB, &res, &eb), GS_OK);
	assert_int_equal(res.slice.state, GS_SLICE_READY);
}

/* ---- the MIG decision saved with a pending row ---- */

static void mig_plan_reads_back_as_it_was_saved(void **state)
{
	struct env *e = *state;
	const struct gs_gpu *gp = &e->f.gpus.gpu[0];
	struct gs_adm_decision d, got;
	char text[GS_SLICE_MIG_PLAN_MAX];

	assert_non_null(gp->cat);
	assert_true(gp->cat->n_profiles >= 2);
	memset(&d, 0, sizeof(d));
	d.mig_on = true;
	d.profile = &gp->cat->profiles[0];
	d.gi_id = -1;
	d.take_start = 4;
	d.n_steps = 2;
	d.steps[0].op = GS_MIG_DESTROY;
	d.steps[0].profile = &gp->cat->profiles[1];
	d.steps[0].gi_id = 7;
	d.steps[0].start = 4;
	d.steps[1].op = GS_MIG_CREATE;
	d.steps[1].profile = &gp->cat->profiles[0];
	d.steps[1].gi_id = -1;
	d.steps[1].start = 4;
	gs__mig_plan_format(&d, text, sizeof(text));
	assert_true(text[0] != '\0');
	assert_true(gs__mig_plan_parse(text, gp, &got));
	assert_true(got.mig_on);
	assert_false(got.mig_off);
	assert_int_equal(got.gi_id, -1);
	assert_int_equal(got.take_start, 4);
	assert_int_equal(got.profile->profile_id, d.profile->profile_id);
	assert_int_equal(got.n_steps, 2);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(got.steps[k].op, d.steps[k].op);
		assert_int_equal(got.steps[k].start, d.steps[k].start);
		assert_int_equal(got.steps[k].profile->profile_id,
		                 d.steps[k].profile->profile_id);
	}
	assert_int_equal(got.steps[0].gi_id, 7);
	/* What does not parse, or names a profile the GPU does not know,
	 * is refused: the restart fails such a slice. */
	assert_false(gs__mig_plan_parse("", gp, &got));
	assert_false(gs__mig_plan_parse("v1 on=1 off=0 prof=9999 gi=-1 take=0;",
	                                gp, &got));
	assert_false(gs__mig_plan_parse("v1 on=1 off=0 prof=-1 gi=-1 take=0;x",
	                                gp, &got));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        model_answers_and_holds_the_share_while_a_create_is_pending,
	        setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        delete_while_pending_wins_and_the_create_answers_busy, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        pending_row_after_a_crash_is_resumed_at_recovery, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        model_answers_while_a_create_changes_mig, setup_mig,
	        teardown),
	    cmocka_unit_test_setup_teardown(mig_plan_reads_back_as_it_was_saved,
	                                    setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
