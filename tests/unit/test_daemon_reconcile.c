/*
 * test_daemon_reconcile.c - the reconciler (daemon/reconcile.c) on a real
 * node model (fake H100s, scratch store) with a stand-in MPS control
 * program: a shell script (config mps.control) that, for `-d`, starts a
 * `sleep` as "the control daemon", writes its pid file and logs the
 * device it was given; for `quit` on stdin, stops it. Checks that ticks
 * are level-triggered: one control daemon per GPU that holds MPS slices,
 * none for time-sliced ones, stopped with the last MPS slice, a failed
 * start retried only after its back-off; that the create of an MPS slice
 * brings its control daemon up (the node's MPS starter) and fails closed
 * when it cannot; that the actor's retry-or-fail loop waits for a control
 * daemon still coming up (`-d` succeeded, its pid file late: a passing
 * failure, tried again) and fails a slice whose daemon cannot start once,
 * with one event and nothing left behind; and gs_run_cmd's contract.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../daemon/reconcile.h"
#include "daemon_fixture.h"

#define GIB (1024ULL * 1024 * 1024)

struct env {
	struct daemon_fixture f;
	char log[96];
	struct gs_reconciler *rec;
};

static const char script[] =
    "#!/bin/sh\n"
    "pidf=\"$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid\"\n"
    "if [ \"$1\" = -d ]; then\n"
    "  [ -e \"$0.fail\" ] && { echo fail >> \"$0.log\"; exit 1; }\n"
    "  echo \"start $CUDA_VISIBLE_DEVICES\" >> \"$0.log\"\n"
    "  sleep 60 </dev/null >/dev/null 2>&1 &\n"
    "  pid=$!\n"
    "  if [ -e \"$0.slow\" ]; then\n"
    "    (sleep 1.5; echo $pid > \"$pidf\") </dev/null >/dev/null 2>&1 &\n"
    "    exit 0\n"
    "  fi\n"
    "  echo $pid > \"$pidf\"\n"
    "  exit 0\n"
    "fi\n"
    "read cmd\n"
    "echo \"$cmd\" >> \"$0.log\"\n"
    "kill \"$(cat \"$pidf\")\" 2>/dev/null\n"
    "rm -f \"$pidf\"\n";

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	struct gs_errbuf eb = {0};
	char path[160];
	FILE *f;

	assert_non_null(e);
	daemon_fixture_prepare(&e->f, "rec");
	e->f.cfg.default_mode = GS_MODE_AUTO;
	snprintf(e->f.cfg.mps_control, sizeof(e->f.cfg.mps_control),
	         "%s/mps-control", e->f.dir);
	snprintf(e->log, sizeof(e->log), "%s/mps-control.log", e->f.dir);
	f = fopen(e->f.cfg.mps_control, "w");
	assert_non_null(f);
	assert_int_equal(fputs(script, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(e->f.cfg.mps_control, 0755), 0);
	snprintf(path, sizeof(path), "%s/mps", e->f.dir);
	e->f.node = daemon_fixture_node_in(&e->f, path);
	assert_int_equal(gs_reconciler_create(e->f.node, &e->rec, &eb), GS_OK);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	char cmd[160];

	/* Stops whatever control daemon is left: no slices, one tick. */
	{
		struct gs_slice *list = NULL;
		int n = 0;

		if (gs_node_slice_list(e->f.node, &e->f.admin, NULL, &list,
		                       &n) == GS_OK)
			for (int i = 0; i < n; i++)
				(void)gs_node_slice_delete(
				    e->f.node, &e->f.admin, list[i].name, NULL);
		free(list);
		gs_reconciler_tick(e->rec);
	}
	gs_reconciler_destroy(e->rec);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/mps' '%s'/mps-control*",
	         e->f.dir, e->f.dir);
	(void)system(cmd);
	daemon_fixture_close(&e->f);
	free(e);
	return 0;
}

static gs_err try_create(struct env *e, const char *name,
                         enum gs_slice_mode mode, int gpu, struct gs_errbuf *eb)
{
	struct gs_node_create_req req;
	struct gs_node_create_res res;

	memset(&req, 0, sizeof(req));
	gs_spec_init(&req.spec);
	snprintf(req.spec.name, sizeof(req.spec.name), "%s", name);
	req.spec.mode = mode;
	req.spec.memory_bytes = 4 * GIB;
	req.spec.compute_pct = 20;
	req.spec.gpu.kind = GS_GPU_INDEX;
	req.spec.gpu.index = gpu;
	req.owner_uid = -1;
	return gs_node_slice_create(e->f.node, &e->f.admin, &req, &res, eb);
}

static void create(struct env *e, const char *name, enum gs_slice_mode mode,
                   int gpu)
{
	struct gs_errbuf eb = {0};

	if (try_create(e, name, mode, gpu, &eb) != GS_OK)
		fail_msg("create %s: %s", name, eb.msg);
}

/* How many lines of the script's log start with `what`. */
static int logged(struct env *e, const char *what)
{
	char line[256];
	int n = 0;
	FILE *f = fopen(e->log, "r");

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += strncmp(line, what, strlen(what)) == 0;
	fclose(f);
	return n;
}

static void one_control_daemon_per_gpu_with_mps_slices(void **state)
{
	struct env *e = *state;
	struct gs_gpus g;

	create(e, "turns", GS_MODE_TIMESLICE, 1);
	gs_reconciler_tick(e->rec);
	assert_int_equal(gs_reconciler_mps_running(e->rec), 0);
	assert_int_equal(logged(e, "start"), 0);

	create(e, "m1", GS_MODE_MPS, 0);
	create(e, "m2", GS_MODE_MPS, 0);
	gs_reconciler_tick(e->rec);
	assert_int_equal(gs_reconciler_mps_running(e->rec), 1);
	assert_int_equal(logged(e, "start"), 1);
	/* it was given GPU 0, by UUID */
	gs_node_gpus(e->f.node, &g);
	{
		char want[128];

		snprintf(want, sizeof(want), "start %s", g.gpu[0].uuid);
		assert_int_equal(logged(e, want), 1);
	}
	/* level-triggered: another tick changes nothing */
	gs_reconciler_tick(e->rec);
	assert_int_equal(gs_reconciler_mps_running(e->rec), 1);
	assert_int_equal(logged(e, "start"), 1);
}

static void control_daemon_stops_with_the_last_mps_slice(void **state)
{
	struct env *e = *state;

	create(e, "m1", GS_MODE_MPS, 0);
	create(e, "m2", GS_MODE_MPS, 0);
	gs_reconciler_tick(e->rec);
	assert_int_equal(gs_reconciler_mps_running(e->rec), 1);

	assert_int_equal(
	    gs_node_slice_delete(e->f.node, &e->f.admin, "m1", NULL), GS_OK);
	gs_reconciler_tick(e->rec);
	assert_int_equal(gs_reconciler_mps_running(e->rec), 1);
	assert_int_equal(logged(e, "quit"), 0);

	assert_int_equal(
	    gs_node_slice_delete(e->f.node, &e->f.admin, "m2", NULL), GS_OK);
	gs_reconciler_tick(e->rec);
	assert_int_equal(gs_reconciler_mps_running(e->rec), 0);
	assert_int_equal(logged(e, "quit"), 1);
}

/* Creates (or removes) the marker that makes the control program fail. */
static void control_fails(struct env *e, bool fail)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/mps-control.fail", e->f.dir);
	if (!fail) {
		assert_int_equal(unlink(path), 0);
		return;
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
}

static void failed_start_is_retried_only_after_its_back_off(void **state)
{
	struct env *e = *state;
	char path[160], buf[32] = "";
	FILE *f;
	pid_t pid;

	create(e, "m", GS_MODE_MPS, 1);
	assert_int_equal(logged(e, "start"), 1);
	/* Its control daemon dies, and the program now fails to start one. */
	snprintf(path, sizeof(path),
	         "%s/mps/gpu1/pipe/nvidia-cuda-mps-control.pid", e->f.dir);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	pid = (pid_t)atoi(buf);
	assert_true(pid > 1);
	assert_int_equal(kill(pid, SIGKILL), 0);
	for (int i = 0; i < 200 && kill(pid, 0) == 0; i++)
		usleep(10000);
	control_fails(e, true);
	gs_reconciler_tick(e->rec);
	gs_reconciler_tick(e->rec);
	assert_int_equal(gs_reconciler_mps_running(e->rec), 0);
	assert_int_equal(logged(e, "fail"), 1);
	control_fails(e, false);
	/* Within 10 s of the failure: still not retried. */
	gs_reconciler_tick(e->rec);
	assert_int_equal(logged(e, "start"), 1);
}

static void mps_slice_is_not_created_without_its_control_daemon(void **state)
{
	struct env *e = *state;
	struct gs_errbuf eb = {0};
	struct gs_slice *list = NULL;
	int n = -1;

	control_fails(e, true);
	assert_int_equal(try_create(e, "m", GS_MODE_MPS, 1, &eb),
	                 GS_ERR_UNAVAILABLE);
	assert_non_null(strstr(eb.msg, "MPS control daemon could not start"));
	assert_int_equal(logged(e, "fail"), 1);
	/* A create within the back-off fails at once, without a try. */
	control_fails(e, false);
	gs_errbuf_init(&eb);
	assert_int_equal(try_create(e, "m", GS_MODE_MPS, 1, &eb),
	                 GS_ERR_UNAVAILABLE);
	if (strstr(eb.msg, "try again") == NULL)
		fail_msg("no \"try again\" in: %s", eb.msg);
	assert_int_equal(logged(e, "fail"), 1);
	assert_int_equal(logged(e, "start"), 0);
	assert_int_equal(
	    gs_node_slice_list(e->f.node, &e->f.admin, NULL, &list, &n), GS_OK);
	assert_int_equal(n, 0);
	free(list);
	/* Turns need none. */
	create(e, "t", GS_MODE_TIMESLICE, 1);
}

/* ---- the actor's retry-or-fail loop ---- */

/* Creates the marker that makes the control program's daemon late: its
 * pid file appears 1.5 s after `-d` returned (the starter waits 1 s). */
static void control_slow(struct env *e)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/mps-control.slow", e->f.dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
}

struct ev_count {
	int created, failed, other;
};

static void count_event(void *ctx, const struct gs_event *ev)
{
	struct ev_count *c = ctx;

	if (strcmp(ev->type, "slice.created") == 0)
		c->created++;
	else if (strcmp(ev->type, "slice.failed") == 0)
		c->failed++;
	else
		c->other++;
}

static struct ev_count events_of(struct env *e, const char *slice)
{
	struct ev_count c = {0};

	assert_int_equal(gs_store_events(e->f.store, 0, 0, slice, -1, 100,
	                                 count_event, &c, NULL),
	                 GS_OK);
	return c;
}

static void count_row(void *ctx, const struct gs_slice *s)
{
	(void)s;
	(*(int *)ctx)++;
}

static void mps_slice_waits_for_a_control_daemon_coming_up_then_is_ready(
    void **state)
{
	struct env *e = *state;
	struct gs_errbuf eb = {0};
	struct gs_slice got;
	struct ev_count ev;

	/* The first try finds the daemon started but not up (a passing
	 * failure): the actor tries again until its pid file is there. */
	control_slow(e);
	if (try_create(e, "m", GS_MODE_MPS, 1, &eb) != GS_OK)
		fail_msg("create m: %s", eb.msg);
	assert_int_equal(gs_node_slice_get(e->f.node, &e->f.admin, "m", &got),
	                 GS_OK);
	assert_int_equal(got.state, GS_SLICE_READY);
	assert_int_equal(gs_reconciler_mps_running(e->rec), 1);
	/* Started once, waited for, not started again. */
	assert_int_equal(logged(e, "start"), 1);
	assert_int_equal(logged(e, "fail"), 0);
	ev = events_of(e, "m");
	assert_int_equal(ev.created, 1);
	assert_int_equal(ev.failed, 0);
}

static void mps_slice_that_cannot_start_fails_once_and_leaves_nothing(
    void **state)
{
	struct env *e = *state;
	struct gs_node_counters ctr;
	struct gs_errbuf eb = {0};
	struct gs_slice got;
	struct ev_count ev;
	int rows = 0;

	/* `-d` fails: not a passing failure, so no second try. */
	control_fails(e, true);
	assert_int_equal(try_create(e, "m", GS_MODE_MPS, 1, &eb),
	                 GS_ERR_UNAVAILABLE);
	assert_non_null(strstr(eb.msg, "MPS control daemon could not start"));
	assert_int_equal(logged(e, "fail"), 1);
	ev = events_of(e, "m");
	assert_int_equal(ev.failed, 1);
	assert_int_equal(ev.created, 0);
	gs_node_counters(e->f.node, &ctr);
	assert_int_equal(ctr.creates, 0);
	assert_int_equal(ctr.rejects, 1);
	/* Nothing of it left: not in the model, the store, nor a control
	 * daemon wanted for it. */
	assert_int_equal(gs_node_slice_get(e->f.node, &e->f.admin, "m", &got),
	                 GS_ERR_NOT_FOUND);
	assert_int_equal(gs_store_load_slices(e->f.store, count_row, &rows,
	                                      NULL),
	                 GS_OK);
	assert_int_equal(rows, 0);
	control_fails(e, false);
	gs_reconciler_tick(e->rec);
	assert_int_equal(gs_reconciler_mps_running(e->rec), 0);
	assert_int_equal(logged(e, "start"), 0);
}

static void run_cmd_returns_status_and_output_and_times_out(void **state)
{
	char out[64];
	char *echo[] = {"sh", "-c", "printf \"$GS_X\"; exit 3", NULL};
	char *env[] = {"GS_X=hello", NULL};
	char *cat[] = {"cat", NULL};
	char *slow[] = {"sleep", "5", NULL};
	char *none[] = {"gs-no-such-program-here", NULL};

	(void)state;
	assert_int_equal(gs_run_cmd(echo, env, NULL, out, sizeof(out), 5000),
	                 3);
	assert_string_equal(out, "hello");
	assert_int_equal(
	    gs_run_cmd(cat, NULL, "quit\n", out, sizeof(out), 5000), 0);
	assert_string_equal(out, "quit\n");
	assert_int_equal(gs_run_cmd(slow, NULL, NULL, NULL, 0, 200), -1);
	assert_int_not_equal(gs_run_cmd(none, NULL, NULL, NULL, 0, 2000), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        one_control_daemon_per_gpu_with_mps_slices, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        control_daemon_stops_with_the_last_mps_slice, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        failed_start_is_retried_only_after_its_back_off, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        mps_slice_is_not_created_without_its_control_daemon, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        mps_slice_waits_for_a_control_daemon_coming_up_then_is_ready,
	        setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        mps_slice_that_cannot_start_fails_once_and_leaves_nothing,
	        setup, teardown),
	    cmocka_unit_test(run_cmd_returns_status_and_output_and_times_out),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
