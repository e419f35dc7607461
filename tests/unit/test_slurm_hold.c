/*
 * test_slurm_hold.c - a job step's hold on its slice in a standalone
 * region, without Slurm: who creates, who joins, who deletes, what the
 * epilog sweeps. Another slurmstepd is a forked child holding its own
 * hold (the region tells processes apart by pid and start time).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gs/spec.h"
#include "hold.h"

#define GIB (1024ull * 1024 * 1024)

struct fixture {
	char dir[64];
	struct gs_slurm_conf conf;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	(void)snprintf(f->dir, sizeof(f->dir), "/tmp/gs-hold-test.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	gs_slurm_conf_init(&f->conf);
	(void)snprintf(f->conf.run_dir, sizeof(f->conf.run_dir), "%s/run",
	               f->dir);
	(void)snprintf(f->conf.socket, sizeof(f->conf.socket),
	               "%s/no-daemon.sock", f->dir);
	f->conf.daemon = GS_SLURM_DAEMON_AUTO;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static struct gs_slurm_who who(uint32_t job, uint32_t step)
{
	struct gs_slurm_who w;

	memset(&w, 0, sizeof(w));
	w.job_id = job;
	w.step_id = step;
	w.uid = (uint32_t)getuid();
	w.gpu_index = 0;
	w.n_gpus = 1;
	return w;
}

static struct gs_slice_limits limits(uint64_t mem, uint32_t pct)
{
	struct gs_slice_limits l;

	gs_slice_limits_init(&l, NULL);
	l.mem_limit = mem;
	l.compute_pct = pct;
	l.flags = GS_SLICE_EPHEMERAL;
	return l;
}

/* The limits of slice `name` in the fixture's region; false if none. */
static bool find(struct fixture *f, const char *name,
                 struct gs_slice_limits *out)
{
	struct gs_region *r;
	struct gs_slice_ref s;
	bool found;

	if (gs_region_open(f->conf.run_dir, GS_REGION_TENANT, &r, NULL) !=
	    GS_OK)
		return false;
	found = gs_region_slice_find(r, name, &s) == GS_OK &&
	        gs_region_slice_limits(r, &s, out) == GS_OK;
	gs_region_close(r);
	return found;
}

/*
 * Another slurmstepd: a child that acquires a hold for (job, step) with
 * `lim`, tells the parent on `ready`, then waits for a byte on `go`
 * before releasing (release=true) or dying without a word.
 */
struct other {
	pid_t pid;
	int go;
};

static struct other other_step(struct fixture *f, uint32_t job, uint32_t step,
                               struct gs_slice_limits lim, bool release)
{
	int ready[2], go[2];
	struct other o;
	char c = 0;

	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	o.pid = fork();
	assert_true(o.pid >= 0);
	if (o.pid == 0) {
		struct gs_slurm_hold h;
		struct gs_slurm_who w = who(job, step);

		close(ready[0]);
		close(go[1]);
		if (gs_slurm_hold_acquire(&h, &f->conf, &w, &lim, NULL) !=
		    GS_OK)
			_exit(2);
		if (write(ready[1], h.name, strlen(h.name) + 1) < 0)
			_exit(3);
		if (read(go[0], &c, 1) != 1)
			_exit(4);
		if (release)
			gs_slurm_hold_release(&h, NULL);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	{
		char name[64] = "";
		ssize_t n = read(ready[0], name, sizeof(name));

		assert_true(n > 0);
	}
	close(ready[0]);
	o.go = go[1];
	return o;
}

static void other_finish(struct other *o)
{
	int st = 0;

	assert_int_equal(write(o->go, "x", 1), 1);
	close(o->go);
	assert_int_equal(waitpid(o->pid, &st, 0), o->pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void
first_step_makes_the_job_slice_and_its_release_deletes_it(void **state)
{
	struct fixture *f = *state;
	struct gs_slurm_who w = who(7, 0);
	struct gs_slice_limits lim = limits(4 * GIB, 30), got;
	struct gs_slurm_hold h;
	struct gs_errbuf eb = {0};

	assert_int_equal(gs_slurm_hold_acquire(&h, &f->conf, &w, &lim, &eb),
	                 GS_OK);
	assert_true(h.held);
	assert_false(h.via_daemon);
	assert_string_equal(h.name, "slurm-7");
	assert_string_equal(h.run_dir, f->conf.run_dir);
	assert_true(find(f, "slurm-7", &got));
	assert_int_equal(got.mem_limit, 4 * GIB);
	assert_int_equal(got.compute_pct, 30);
	gs_slurm_hold_release(&h, &eb);
	assert_false(eb.set);
	assert_false(h.held);
	assert_false(find(f, "slurm-7", &got));
	gs_slurm_hold_release(&h, &eb); /* twice does nothing */
}

static void
steps_with_the_same_limits_share_it_until_the_last_leaves(void **state)
{
	struct fixture *f = *state;
	struct gs_slice_limits lim = limits(2 * GIB, 0), got;
	struct other batch = other_step(f, 8, 0xfffffffbu, lim, true);
	struct gs_slurm_who w = who(8, 0);
	struct gs_slurm_hold h;

	assert_int_equal(gs_slurm_hold_acquire(&h, &f->conf, &w, &lim, NULL),
	                 GS_OK);
	assert_string_equal(h.name, "slurm-8");
	gs_slurm_hold_release(&h, NULL);
	assert_true(find(f, "slurm-8", &got)); /* the batch step holds it */
	other_finish(&batch);
	assert_false(find(f, "slurm-8", &got));
}

static void a_step_with_other_limits_gets_a_slice_of_its_own(void **state)
{
	struct fixture *f = *state;
	struct other batch =
	    other_step(f, 9, 0xfffffffbu, limits(8 * GIB, 0), true);
	struct gs_slice_limits lim = limits(2 * GIB, 40), got;
	struct gs_slurm_who w = who(9, 3);
	struct gs_slurm_hold h;

	assert_int_equal(gs_slurm_hold_acquire(&h, &f->conf, &w, &lim, NULL),
	                 GS_OK);
	assert_string_equal(h.name, "slurm-9.3");
	assert_true(find(f, "slurm-9", &got));
	assert_int_equal(got.mem_limit, 8 * GIB);
	assert_true(find(f, "slurm-9.3", &got));
	assert_int_equal(got.compute_pct, 40);
	gs_slurm_hold_release(&h, NULL);
	assert_false(find(f, "slurm-9.3", &got));
	assert_true(find(f, "slurm-9", &got));
	other_finish(&batch);
	assert_false(find(f, "slurm-9", &got));
}

static void a_slice_left_by_a_dead_slurmstepd_is_taken_over(void **state)
{
	struct fixture *f = *state;
	struct other dead = other_step(f, 10, 0, limits(1 * GIB, 10), false);
	struct gs_slice_limits lim = limits(4 * GIB, 50), got;
	struct gs_slurm_who w = who(10, 1);
	struct gs_slurm_hold h;

	other_finish(&dead); /* exits without releasing: a kill -9 */
	assert_true(find(f, "slurm-10", &got));
	assert_int_equal(gs_slurm_hold_acquire(&h, &f->conf, &w, &lim, NULL),
	                 GS_OK);
	assert_string_equal(h.name, "slurm-10");
	assert_true(find(f, "slurm-10", &got));
	assert_int_equal(got.mem_limit, 4 * GIB);
	assert_int_equal(got.compute_pct, 50);
	gs_slurm_hold_release(&h, NULL);
	assert_false(find(f, "slurm-10", &got));
}

static void the_epilog_sweeps_the_job_and_no_other(void **state)
{
	struct fixture *f = *state;
	struct other a = other_step(f, 11, 0, limits(1 * GIB, 0), false);
	struct other b = other_step(f, 11, 1, limits(2 * GIB, 0), false);
	struct other c = other_step(f, 111, 0, limits(1 * GIB, 0), true);
	struct gs_slice_limits got;
	struct gs_errbuf eb = {0};
	int n = -1;

	other_finish(&a);
	other_finish(&b);
	assert_true(find(f, "slurm-11", &got));
	assert_true(find(f, "slurm-11.1", &got));
	assert_int_equal(gs_slurm_sweep(&f->conf, 11, &n, &eb), GS_OK);
	assert_int_equal(n, 2);
	assert_false(find(f, "slurm-11", &got));
	assert_false(find(f, "slurm-11.1", &got));
	assert_true(find(f, "slurm-111", &got));
	assert_int_equal(gs_slurm_sweep(&f->conf, 11, &n, &eb), GS_OK);
	assert_int_equal(n, 0);
	other_finish(&c);
}

static void sweeping_creates_no_region(void **state)
{
	struct fixture *f = *state;
	char path[GS_REGION_DIR_MAX + 16];
	int n = -1;

	assert_int_equal(gs_slurm_sweep(&f->conf, 5, &n, NULL), GS_OK);
	assert_int_equal(n, 0);
	(void)snprintf(path, sizeof(path), "%s/limits", f->conf.run_dir);
	assert_int_not_equal(access(path, F_OK), 0);
}

static void a_required_daemon_that_does_not_answer_is_an_error(void **state)
{
	struct fixture *f = *state;
	struct gs_slurm_who w = who(12, 0);
	struct gs_slice_limits lim = limits(GIB, 0), got;
	struct gs_slurm_hold h;
	struct gs_errbuf eb = {0};

	f->conf.daemon = GS_SLURM_DAEMON_REQUIRED;
	assert_int_equal(gs_slurm_hold_acquire(&h, &f->conf, &w, &lim, &eb),
	                 GS_ERR_UNAVAILABLE);
	assert_non_null(strstr(eb.msg, "gpusliced does not answer on"));
	assert_false(h.held);
	assert_false(find(f, "slurm-12", &got));
}

static void the_daemon_spec_carries_the_steps_swap_choice(void **state)
{
	struct gs_slurm_who w = who(13, 0);
	struct gs_slice_limits lim = limits(GIB, 30);
	json_t *spec;

	(void)state;
	w.swap = -1;
	spec = gs_slurm_hold_spec_json("slurm-13", &lim, &w, false);
	assert_non_null(spec);
	assert_null(json_object_get(spec, "swap"));
	json_decref(spec);
	w.swap = GS_SWAP_NEVER;
	spec = gs_slurm_hold_spec_json("slurm-13", &lim, &w, false);
	assert_non_null(spec);
	assert_string_equal(json_string_value(json_object_get(spec, "swap")),
	                    "never");
	assert_string_equal(json_string_value(json_object_get(spec, "name")),
	                    "slurm-13");
	json_decref(spec);
	w.swap = GS_SWAP_ALLOW;
	spec = gs_slurm_hold_spec_json("slurm-13", &lim, &w, false);
	assert_string_equal(json_string_value(json_object_get(spec, "swap")),
	                    "allow");
	json_decref(spec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	    T(first_step_makes_the_job_slice_and_its_release_deletes_it),
	    T(steps_with_the_same_limits_share_it_until_the_last_leaves),
	    T(a_step_with_other_limits_gets_a_slice_of_its_own),
	    T(a_slice_left_by_a_dead_slurmstepd_is_taken_over),
	    T(the_epilog_sweeps_the_job_and_no_other),
	    T(sweeping_creates_no_region),
	    T(a_required_daemon_that_does_not_answer_is_an_error),
	    T(the_daemon_spec_carries_the_steps_swap_choice),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
