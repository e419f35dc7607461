/*
 * test_region.c - the shared region (region/): creating and opening
 * it in each role, slices and their generations, the memory books and
 * their cap under concurrent processes, reaping dead processes (killed,
 * zombie, pid reused), a lock holder that dies, the tenant's
 * read-only limits in a privileged region, and the private books of
 * uid 0's slices there (one file per slice: a pod reaches only its own).
 *
 * Each test works in its own fresh directory under /tmp.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "gs/region.h"
#include "region_int.h"
#include "region_fixture.h"

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)

static int setup(void **state)
{
	return region_fx_setup(state, "region");
}

static int teardown(void **state)
{
	return region_fx_teardown(state);
}

static void tenant_cannot_open_a_missing_region(void **state)
{
	struct region_fx *f = *state;
	struct gs_region *r = NULL;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_TENANT, &r, NULL),
	                 GS_ERR_NOT_FOUND);
	assert_null(r);
}

static void runner_creates_and_tenant_sees_the_same_slices(void **state)
{
	struct region_fx *f = *state;
	struct gs_region *t;
	struct gs_slice_ref a, b;
	struct gs_slice_limits lim;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	assert_false(gs_region_is_privileged(f->r));
	assert_true(gs_region_can_write_limits(f->r));
	a = region_fx_make_slice(f->r, "train", 4 * GiB);
	assert_int_equal(gs_region_open(f->dir, GS_REGION_TENANT, &t, NULL),
	                 GS_OK);
	assert_false(gs_region_can_write_limits(t));
	assert_int_equal(gs_region_slice_find(t, "train", &b), GS_OK);
	assert_int_equal(a.slot, b.slot);
	assert_true(a.generation == b.generation);
	assert_int_equal(gs_region_slice_limits(t, &b, &lim), GS_OK);
	assert_true(lim.mem_limit == 4 * GiB);
	assert_int_equal(lim.weight, 1);
	assert_int_equal(gs_region_slice_create(t, &lim, &b, NULL),
	                 GS_ERR_PERM);
	gs_region_close(t);
}

static void slice_names_are_unique_and_checked(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_limits lim;
	struct gs_slice_ref ref;
	struct gs_errbuf eb = {0};

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	(void)region_fx_make_slice(f->r, "a", 0);
	gs_slice_limits_init(&lim, "a");
	assert_int_equal(gs_region_slice_create(f->r, &lim, &ref, NULL),
	                 GS_ERR_EXISTS);
	gs_slice_limits_init(&lim, "bad name");
	assert_int_equal(gs_region_slice_create(f->r, &lim, &ref, &eb),
	                 GS_ERR_INVALID);
	assert_non_null(strstr(eb.msg, "slice name"));
	gs_slice_limits_init(&lim, "c");
	lim.compute_pct = 101;
	assert_int_equal(gs_region_slice_create(f->r, &lim, &ref, NULL),
	                 GS_ERR_RANGE);
	lim.compute_pct = 10;
	lim.weight = 0;
	assert_int_equal(gs_region_slice_create(f->r, &lim, &ref, NULL),
	                 GS_ERR_RANGE);
}

static void ensure_joins_an_existing_slice_or_creates_it(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_limits lim;
	struct gs_slice_ref a, b;
	bool created;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	gs_slice_limits_init(&lim, "shared");
	lim.mem_limit = GiB;
	assert_int_equal(gs_region_slice_ensure(f->r, &lim, &a, &created, NULL),
	                 GS_OK);
	assert_true(created);
	lim.mem_limit = 2 * GiB; /* a joiner's limits do not replace them */
	assert_int_equal(gs_region_slice_ensure(f->r, &lim, &b, &created, NULL),
	                 GS_OK);
	assert_false(created);
	assert_int_equal(a.slot, b.slot);
	assert_int_equal(gs_region_slice_limits(f->r, &b, &lim), GS_OK);
	assert_true(lim.mem_limit == GiB);
}

static void ephemeral_slice_lives_while_anyone_is_attached(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_limits lim;
	struct gs_slice_ref s1, s2;
	struct gs_proc_ref p1, p2;
	bool created, deleted;
	int st;
	pid_t pid;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	gs_slice_limits_init(&lim, "eph");
	lim.flags = GS_SLICE_EPHEMERAL;
	assert_int_equal(gs_region_slice_join(f->r, &lim, GS_PROC_RUNNER, &s1,
	                                      &p1, &created, NULL),
	                 GS_OK);
	assert_true(created);
	/* a second runner (another process) joins the same slice */
	pid = fork();
	if (pid == 0) {
		struct gs_region *r;

		if (gs_region_open(f->dir, GS_REGION_RUNNER, &r, NULL) ||
		    gs_region_slice_join(r, &lim, GS_PROC_RUNNER, &s2, &p2,
		                         &created, NULL) ||
		    created || s2.slot != s1.slot)
			_exit(2);
		pause();
		_exit(0);
	}
	while (gs_region_slice_nprocs(f->r, &s1) < 2)
		(void)usleep(1000);
	assert_int_equal(gs_region_slice_leave(f->r, &s1, &p1, &deleted),
	                 GS_OK);
	assert_false(deleted); /* the other runner still holds it */
	assert_int_equal(gs_region_slice_find(f->r, "eph", &s2), GS_OK);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	/* a later leave (after the reap) deletes it */
	assert_int_equal(gs_region_slice_join(f->r, &lim, GS_PROC_RUNNER, &s1,
	                                      &p1, &created, NULL),
	                 GS_OK);
	assert_false(created);
	assert_int_equal(gs_region_slice_leave(f->r, &s1, &p1, &deleted),
	                 GS_OK);
	assert_true(deleted);
	assert_int_equal(gs_region_slice_find(f->r, "eph", &s2),
	                 GS_ERR_NOT_FOUND);
}

static void stale_reference_fails_after_delete_and_reuse(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref old, neu;
	struct gs_slice_limits lim;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	old = region_fx_make_slice(f->r, "x", GiB);
	assert_int_equal(gs_region_slice_delete(f->r, &old, NULL), GS_OK);
	neu = region_fx_make_slice(f->r, "y", 2 * GiB);
	assert_int_equal(neu.slot, old.slot); /* the slot is reused... */
	assert_true(neu.generation > old.generation); /* ...not the ref */
	assert_int_equal(gs_region_slice_limits(f->r, &old, &lim),
	                 GS_ERR_NOT_FOUND);
	gs_slice_limits_init(&lim, "x");
	assert_int_equal(gs_region_slice_update(f->r, &old, &lim, NULL),
	                 GS_ERR_NOT_FOUND);
	assert_int_equal(gs_region_slice_delete(f->r, &old, NULL),
	                 GS_ERR_NOT_FOUND);
	assert_int_equal(gs_region_slice_limits(f->r, &neu, &lim), GS_OK);
	assert_string_equal(lim.name, "y");
}

static void update_changes_limits_and_bumps_the_epoch(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref ref;
	struct gs_slice_limits lim;
	uint64_t e0;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	ref = region_fx_make_slice(f->r, "u", GiB);
	e0 = gs__region_limits(f->r)->h.epoch;
	gs_slice_limits_init(&lim, "ignored");
	lim.mem_limit = 3 * GiB;
	lim.compute_pct = 40;
	lim.priority = GS_REGION_PRIO_HIGH;
	assert_int_equal(gs_region_slice_update(f->r, &ref, &lim, NULL), GS_OK);
	assert_true(gs__region_limits(f->r)->h.epoch > e0);
	assert_int_equal(gs_region_slice_limits(f->r, &ref, &lim), GS_OK);
	assert_string_equal(lim.name, "u");
	assert_true(lim.mem_limit == 3 * GiB);
	assert_int_equal(lim.compute_pct, 40);
	assert_int_equal(gs_region_slice_limits(f->r, &ref, &lim), GS_OK);
}

static void reserve_stops_exactly_at_the_cap(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref s;
	struct gs_proc_ref p;
	struct gs_slice_usage u;
	uint64_t used, limit;
	int dev;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	s = region_fx_make_slice(f->r, "cap", 4 * GiB);
	assert_int_equal(gs_region_proc_attach(f->r, &s, 0, &p, NULL), GS_OK);
	dev = gs_region_device(f->r, "GPU-11111111-2222-3333-4444-555555555555",
	                       80 * GiB);
	assert_true(dev >= 0);
	/* Found again by UUID; CUDA (which has no prefix) and NVML ("MIG-"
	 * for a MIG device) may spell the prefix differently. */
	assert_int_equal(
	    gs_region_device(f->r, "GPU-11111111-2222-3333-4444-555555555555",
	                     0),
	    dev);
	assert_int_equal(
	    gs_region_device(f->r, "MIG-11111111-2222-3333-4444-555555555555",
	                     0),
	    dev);
	assert_true(gs_region_device(f->r, "GPU-99", 0) != dev);
	for (int i = 0; i < 16; i++) {
		assert_int_equal(
		    gs_region_mem_reserve(f->r, &p, dev, 256 * MiB), GS_OK);
	}
	assert_int_equal(gs_region_mem_reserve(f->r, &p, dev, 1), GS_ERR_QUOTA);
	assert_int_equal(gs_region_mem_view(f->r, &p, dev, &used, &limit),
	                 GS_OK);
	assert_true(used == 4 * GiB && limit == 4 * GiB);
	gs_region_mem_release(f->r, &p, dev, 1 * GiB);
	assert_int_equal(gs_region_mem_reserve(f->r, &p, dev, 1 * GiB), GS_OK);
	assert_int_equal(gs_region_mem_reserve(f->r, &p, dev, 1), GS_ERR_QUOTA);
	gs_region_mem_release(f->r, &p, dev, 1 * GiB); /* a rollback */
	assert_int_equal(gs_region_slice_usage(f->r, &s, &u), GS_OK);
	assert_true(u.mem_used == 3 * GiB);
	assert_true(u.mem_peak == 4 * GiB);
	assert_int_equal(u.n_dev, 1);
	assert_string_equal(u.dev[0].uuid,
	                    "GPU-11111111-2222-3333-4444-555555555555");
	assert_int_equal(u.n_procs, 1);
	assert_int_equal(gs_region_proc_detach(f->r, &p), GS_OK);
	assert_int_equal(gs_region_slice_usage(f->r, &s, &u), GS_OK);
	assert_true(u.mem_used == 0);
	assert_int_equal(u.n_procs, 0);
}

static void byte_seconds_grow_with_time_held(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref s;
	struct gs_proc_ref p;
	struct gs_slice_usage u;
	int dev;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	s = region_fx_make_slice(f->r, "bs", 0);
	assert_int_equal(gs_region_proc_attach(f->r, &s, 0, &p, NULL), GS_OK);
	dev = gs_region_device(f->r, "GPU-a", 0);
	assert_int_equal(gs_region_mem_reserve(f->r, &p, dev, GiB), GS_OK);
	(void)usleep(200000);
	assert_int_equal(gs_region_slice_usage(f->r, &s, &u), GS_OK);
	/* 1 GiB for ~0.2 s */
	assert_true(u.mem_byte_s > 0.15 * (double)GiB);
	assert_true(u.mem_byte_s < 2.0 * (double)GiB);
}

/* Children of one slice reserve and release; none may see it over cap. */
static void concurrent_processes_never_exceed_the_cap(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref s;
	struct gs_slice_usage u;
	int dev, *over, *granted;
	pid_t kids[8];

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	s = region_fx_make_slice(f->r, "race", 1 * GiB);
	dev = gs_region_device(f->r, "GPU-race", 0);
	over = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
	            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(over != MAP_FAILED);
	granted = over + 1;
	for (int k = 0; k < 8; k++) {
		kids[k] = fork();
		assert_true(kids[k] >= 0);
		if (kids[k] == 0) {
			struct gs_region *r;
			struct gs_proc_ref p;
			unsigned seed = (unsigned)getpid();

			if (gs_region_open(f->dir, GS_REGION_TENANT, &r,
			                   NULL) ||
			    gs_region_proc_attach(r, &s, 0, &p, NULL))
				_exit(2);
			for (int i = 0; i < 2000; i++) {
				uint64_t n = (rand_r(&seed) % 300 + 1) * MiB;
				uint64_t used, limit;

				if (gs_region_mem_reserve(r, &p, dev, n))
					continue;
				__atomic_add_fetch(granted, 1,
				                   __ATOMIC_RELAXED);
				if (gs_region_mem_view(r, &p, dev, &used,
				                       &limit) == GS_OK &&
				    used > limit)
					__atomic_add_fetch(over, 1,
					                   __ATOMIC_RELAXED);
				gs_region_mem_release(r, &p, dev, n);
			}
			(void)gs_region_proc_detach(r, &p);
			_exit(0);
		}
	}
	for (int k = 0; k < 8; k++) {
		int st;

		assert_int_equal(waitpid(kids[k], &st, 0), kids[k]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	assert_int_equal(*over, 0);
	assert_true(*granted > 1000);
	assert_int_equal(gs_region_slice_usage(f->r, &s, &u), GS_OK);
	assert_true(u.mem_used == 0);
	assert_true(u.mem_peak <= 1 * GiB);
	(void)munmap(over, 4096);
}

/* A child attaches, takes `bytes`, and waits to be killed. */
static pid_t holder(struct region_fx *f, const struct gs_slice_ref *s, int dev,
                    uint64_t bytes)
{
	int pfd[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct gs_region *r;
		struct gs_proc_ref p;

		if (gs_region_open(f->dir, GS_REGION_TENANT, &r, NULL) ||
		    gs_region_proc_attach(r, s, 0, &p, NULL) ||
		    gs_region_mem_reserve(r, &p, dev, bytes))
			_exit(2);
		(void)!write(pfd[1], "k", 1);
		for (;;)
			pause();
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &c, 1), 1);
	close(pfd[0]);
	return pid;
}

static void killed_process_share_returns_when_reaped(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref s;
	struct gs_proc_ref p;
	struct gs_slice_usage u;
	int dev, st;
	pid_t pid;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	s = region_fx_make_slice(f->r, "k9", 4 * GiB);
	dev = gs_region_device(f->r, "GPU-k9", 0);
	pid = holder(f, &s, dev, 2 * GiB);
	assert_int_equal(gs_region_proc_attach(f->r, &s, 0, &p, NULL), GS_OK);
	assert_int_equal(gs_region_mem_reserve(f->r, &p, dev, 3 * GiB),
	                 GS_ERR_QUOTA);
	assert_int_equal(gs_region_reap(f->r), 0); /* alive: untouched */
	assert_int_equal(kill(pid, SIGKILL), 0);
	/* Not yet waited for: a zombie counts as gone. */
	(void)usleep(50000);
	assert_int_equal(gs_region_mem_reserve(f->r, &p, dev, 3 * GiB), GS_OK);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(gs_region_slice_usage(f->r, &s, &u), GS_OK);
	assert_true(u.mem_used == 3 * GiB);
	assert_int_equal(u.n_procs, 1);
	assert_true(gs__region_own(f->r)->h.reaped_total == 1);
}

static void reused_pid_is_not_taken_for_the_old_process(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref s;
	struct gs_proc_ref p;
	struct gs_ru_proc *pr;
	struct gs_slice_usage u;
	int dev;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	s = region_fx_make_slice(f->r, "reuse", 4 * GiB);
	dev = gs_region_device(f->r, "GPU-reuse", 0);
	assert_int_equal(gs_region_proc_attach(f->r, &s, 0, &p, NULL), GS_OK);
	assert_int_equal(gs_region_mem_reserve(f->r, &p, dev, GiB), GS_OK);
	/* Pretend the slot was written by an earlier process with our pid. */
	pr = &gs__region_own(f->r)->proc[p.slot % GS_REGION_MAX_PROCS];
	pr->start_time -= 1;
	assert_int_equal(gs_region_reap(f->r), 1);
	assert_int_equal(gs_region_slice_usage(f->r, &s, &u), GS_OK);
	assert_true(u.mem_used == 0);
	/* The stale reference now fails instead of charging someone else. */
	assert_int_equal(gs_region_mem_reserve(f->r, &p, dev, 1),
	                 GS_ERR_NOT_FOUND);
}

static void lock_holder_death_is_repaired_not_hung(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref s;
	struct gs_proc_ref p;
	struct gs_slice_usage u;
	int dev, st;
	pid_t pid;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	s = region_fx_make_slice(f->r, "lock", 4 * GiB);
	dev = gs_region_device(f->r, "GPU-lock", 0);
	assert_int_equal(gs_region_proc_attach(f->r, &s, 0, &p, NULL), GS_OK);
	assert_int_equal(gs_region_mem_reserve(f->r, &p, dev, GiB), GS_OK);
	pid = fork();
	if (pid == 0) {
		struct gs_region *r;
		struct gs_ro_file *ro;

		if (gs_region_open(f->dir, GS_REGION_TENANT, &r, NULL) ||
		    (ro = gs__region_owner_file(r, (uint32_t)geteuid())) ==
		        NULL ||
		    pthread_mutex_lock(&ro->h.lock.m) != 0)
			_exit(2);
		/* Half an update, then death while holding the lock. */
		ro->slice[s.slot].dev[dev].mem_used += 7;
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(gs_region_slice_usage(f->r, &s, &u), GS_OK);
	assert_true(u.mem_used == GiB); /* recomputed from the proc table */
	assert_true(gs__region_own(f->r)->h.lock_recoveries == 1);
}

/* A writer killed between wseq_open and wseq_close leaves the limits'
 * sequence odd; the next creator (the restarted daemon) makes it even
 * again, so its readers - recovery first - do not spin on it. */
static void a_writer_killed_mid_write_does_not_hang_the_next_creator(
    void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref s, it = {.slot = -1};
	int n = 0;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_OWNER, &f->r, NULL),
	                 GS_OK);
	(void)region_fx_make_slice(f->r, "kept", GiB);
	gs__region_limits(f->r)->h.seq |= 1; /* killed inside */
	gs_region_close(f->r);
	assert_int_equal(gs_region_open(f->dir, GS_REGION_OWNER, &f->r, NULL),
	                 GS_OK);
	assert_int_equal(gs__region_limits(f->r)->h.seq & 1, 0);
	while (gs_region_slice_next(f->r, &it))
		n++;
	assert_int_equal(n, 1);
	assert_int_equal(gs_region_slice_find(f->r, "kept", &s), GS_OK);
}

static void region_from_an_earlier_boot_is_recreated(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref s;
	struct gs_region *t;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	(void)region_fx_make_slice(f->r, "old", GiB);
	gs__region_limits(f->r)->h.boot_id ^= 1;
	assert_int_equal(gs_region_open(f->dir, GS_REGION_TENANT, &t, NULL),
	                 GS_ERR_NOT_FOUND);
	gs_region_close(f->r);
	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	assert_int_equal(gs_region_slice_find(f->r, "old", &s),
	                 GS_ERR_NOT_FOUND);
}

static void other_versions_are_refused(void **state)
{
	struct region_fx *f = *state;
	struct gs_region *t;
	struct gs_errbuf eb = {0};

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	gs__region_usage(f->r)->h.version = GS_REGION_VERSION + 1;
	assert_int_equal(gs_region_open(f->dir, GS_REGION_TENANT, &t, &eb),
	                 GS_ERR_VERSION);
	assert_non_null(strstr(eb.msg, "version"));
}

/* `gpuslice run` after an upgrade: a region an older run made is built
 * again (its slices gone, said through gs_region_replaced_version); a
 * daemon's region of another version is still refused to a runner. */
static void runner_replaces_a_runners_region_of_another_version(void **state)
{
	struct region_fx *f = *state;
	struct gs_region *r2 = NULL;
	struct gs_errbuf eb = {0};
	struct gs_slice_ref ref;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	(void)region_fx_make_slice(f->r, "before", GiB);
	assert_false(gs_region_replaced_version(f->r));
	gs__region_usage(f->r)->h.version = GS_REGION_VERSION - 1;
	gs_region_close(f->r);
	f->r = NULL;
	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &r2, &eb),
	                 GS_OK);
	assert_true(gs_region_replaced_version(r2));
	assert_int_equal(gs_region_slice_find(r2, "before", &ref),
	                 GS_ERR_NOT_FOUND);
	gs_region_close(r2);
	r2 = NULL;

	/* The daemon's (privileged) region of another version. */
	assert_int_equal(gs_region_open(f->dir, GS_REGION_OWNER, &f->r, NULL),
	                 GS_OK);
	gs__region_usage(f->r)->h.version = GS_REGION_VERSION - 1;
	gs_region_close(f->r);
	f->r = NULL;
	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &r2, &eb),
	                 GS_ERR_VERSION);
	assert_null(r2);
}

static void owner_replaces_files_of_another_version(void **state)
{
	struct region_fx *f = *state;
	struct gs_region *o = NULL, *t = NULL;
	struct gs_errbuf eb = {0};
	struct gs_slice_ref ref;

	/* A daemon's region, left by an older gpuslice (another layout). */
	assert_int_equal(gs_region_open(f->dir, GS_REGION_OWNER, &f->r, NULL),
	                 GS_OK);
	(void)region_fx_make_slice(f->r, "before", GiB);
	gs__region_usage(f->r)->h.version = GS_REGION_VERSION - 1;
	gs_region_close(f->r);
	f->r = NULL;
	/* The upgraded daemon starts: new files, nothing of the old. */
	assert_int_equal(gs_region_open(f->dir, GS_REGION_OWNER, &o, &eb),
	                 GS_OK);
	assert_true(gs_region_replaced_version(o));
	assert_int_equal(gs_region_open(f->dir, GS_REGION_TENANT, &t, &eb),
	                 GS_OK);
	assert_int_equal(gs_region_slice_find(t, "before", &ref),
	                 GS_ERR_NOT_FOUND);
	gs_region_close(t);
	f->r = o;
}

static void privileged_limits_are_read_only_for_tenants(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref s;
	char path[128], lpath[128];
	struct stat st;
	pid_t pid;
	int status;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_OWNER, &f->r, NULL),
	                 GS_OK);
	assert_true(gs_region_is_privileged(f->r));
	s = region_fx_make_slice(f->r, "daemon-made", GiB);
	{
		struct gs_slice_limits lim;
		struct gs_slice_ref ref;

		gs_slice_limits_init(&lim, "for-65534");
		lim.owner_uid = 65534;
		assert_int_equal(gs_region_slice_create(f->r, &lim, &ref, NULL),
		                 GS_OK);
		gs_slice_limits_init(&lim, "for-65533");
		lim.owner_uid = 65533;
		assert_int_equal(gs_region_slice_create(f->r, &lim, &ref, NULL),
		                 GS_OK);
	}
	(void)snprintf(lpath, sizeof(lpath), "%s/%s", f->dir,
	               GS_REGION_LIMITS_FILE);
	assert_int_equal(stat(lpath, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600); /* tenants read views */
	assert_int_equal(st.st_uid, geteuid());
	(void)snprintf(path, sizeof(path), "%s/limits.65533", f->dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_uid, geteuid());
	assert_true((st.st_mode & 0777) == 0640 || (st.st_mode & 0777) == 0644);
	(void)snprintf(path, sizeof(path), "%s/%s", f->dir,
	               GS_REGION_USAGE_FILE);
	assert_int_equal(stat(path, &st), 0);
	/* The shared file is the daemon's (its arbiter writes it). */
	assert_int_equal(st.st_mode & 0777, 0644);
	if (geteuid() != 0) {
		skip(); /* needs root to become another user */
		return;
	}
	assert_int_equal(chmod(f->dir, 0755), 0);
	pid = fork();
	if (pid == 0) {
		struct gs_region *r;
		struct gs_slice_limits lim;
		struct gs_slice_ref ref;
		struct gs_proc_ref p;
		bool created;

		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(10);
		/* A runner joins; it cannot create or change. */
		if (gs_region_open(f->dir, GS_REGION_RUNNER, &r, NULL))
			_exit(11);
		(void)snprintf(path, sizeof(path), "%s/%s", f->dir,
		               GS_REGION_USAGE_FILE);
		if (gs_region_can_write_limits(r))
			_exit(12);
		gs_slice_limits_init(&lim, "mine");
		if (gs_region_slice_ensure(r, &lim, &ref, &created, NULL) !=
		    GS_ERR_NOT_FOUND)
			_exit(13);
		if (gs_region_slice_update(r, &s, &lim, NULL) != GS_ERR_PERM)
			_exit(14);
		/* uid 0's slice keeps private books on the host only root
		 * reaches; its own slice it joins. */
		if (gs_region_proc_attach(r, &s, 0, &p, NULL) != GS_ERR_PERM)
			_exit(15);
		if (gs_region_slice_find(r, "for-65534", &ref) != GS_OK ||
		    gs_region_proc_attach(r, &ref, 0, &p, NULL) != GS_OK)
			_exit(21);
		if (open(lpath, O_RDONLY) >= 0 || errno != EACCES)
			_exit(16); /* the writer's limits: closed to us */
		if (open(path, O_RDWR) >= 0 || errno != EACCES ||
		    open(path, O_RDONLY) < 0)
			_exit(17); /* usage: read, never written, by tenants */
		/* Our view names our slices and uid 0's, not 65533's. */
		if (gs_region_slice_find(r, "for-65534", &ref) != GS_OK ||
		    gs_region_slice_find(r, "daemon-made", &ref) != GS_OK)
			_exit(18);
		if (gs_region_slice_find(r, "for-65533", &ref) !=
		    GS_ERR_NOT_FOUND)
			_exit(19);
		(void)snprintf(path, sizeof(path), "%s/limits.65533", f->dir);
		if (open(path, O_RDONLY) >= 0) {
			struct stat vs;

			/* Readable only where the filesystem has no ACLs. */
			if (stat(path, &vs) != 0 || (vs.st_mode & 0777) != 0644)
				_exit(20);
		}
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void processes_are_listed_with_their_books(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref s;
	struct gs_proc_ref p, it = {.slot = -1};
	struct gs_proc_info info;
	int dev, n = 0;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	s = region_fx_make_slice(f->r, "ls", 0);
	assert_int_equal(
	    gs_region_proc_attach(f->r, &s, GS_PROC_RUNNER, &p, NULL), GS_OK);
	dev = gs_region_device(f->r, "GPU-ls", 0);
	assert_int_equal(gs_region_mem_reserve(f->r, &p, dev, MiB), GS_OK);
	while (gs_region_proc_next(f->r, &it, &info)) {
		n++;
		assert_int_equal(info.pid, getpid());
		assert_int_equal(info.flags, GS_PROC_RUNNER);
		assert_int_equal(info.slice.slot, s.slot);
		assert_int_equal(info.n_dev, 1);
		assert_true(info.dev[0].mem_used == MiB);
	}
	assert_int_equal(n, 1);
	assert_int_equal(gs_region_slice_nprocs(f->r, &s), 1);
}

/* Milliseconds of CLOCK_MONOTONIC. */
static long long now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * A child that takes flock(LOCK_EX) on `path` (or, with `mutex`, the
 * mutexes of the owner file `path` and of the shared usage file of the
 * region in `dir`), reports through the pipe, then
 * sleeps until killed. Returns its pid once it holds the lock.
 */
static pid_t hold_lock(const char *path, const char *dir, bool mutex)
{
	int p[2];
	char c = 0;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (mutex) {
			struct gs_region *r;
			struct gs_ro_file *ro;
			int fd = open(path, O_RDWR);

			/* The slice's books' lock, then the shared one. */
			if (fd < 0 ||
			    (ro = mmap(NULL, sizeof(*ro),
			               PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			               0)) == MAP_FAILED ||
			    gs_region_open(dir, GS_REGION_TENANT, &r, NULL) !=
			        GS_OK ||
			    pthread_mutex_lock(&ro->h.lock.m) != 0 ||
			    gs_region_lock(r) != GS_OK)
				_exit(1);
		} else {
			int fd = open(path, O_RDONLY);

			if (fd < 0 || flock(fd, LOCK_EX) != 0)
				_exit(1);
		}
		(void)!write(p[1], "h", 1);
		for (;;)
			pause();
	}
	(void)close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	(void)close(p[0]);
	return pid;
}

static void tenant_flock_on_limits_blocks_no_writer_and_no_reader(void **state)
{
	struct region_fx *f = *state;
	struct gs_region *t;
	struct gs_slice_ref s;
	char path[128];
	long long t0;
	pid_t pid;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_OWNER, &f->r, NULL),
	                 GS_OK);
	(void)snprintf(path, sizeof(path), "%s/%s", f->dir,
	               GS_REGION_LIMITS_FILE);
	pid = hold_lock(path, NULL, false);
	t0 = now_ms();
	s = region_fx_make_slice(f->r, "a", GiB);
	assert_int_equal(gs_region_open(f->dir, GS_REGION_TENANT, &t, NULL),
	                 GS_OK);
	assert_int_equal(gs_region_slice_find(t, "a", &s), GS_OK);
	assert_int_equal(gs_region_slice_delete(f->r, &s, NULL), GS_OK);
	assert_true(now_ms() - t0 < 1000);
	gs_region_close(t);
	(void)kill(pid, SIGKILL);
	(void)waitpid(pid, NULL, 0);
}

static void writers_lock_is_private_and_waited_on_with_a_deadline(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_limits lim;
	struct gs_slice_ref ref;
	struct gs_errbuf eb = {0};
	struct stat st;
	char path[128];
	long long t0, dt;
	pid_t pid;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_OWNER, &f->r, NULL),
	                 GS_OK);
	(void)snprintf(path, sizeof(path), "%s/%s", f->dir,
	               GS_REGION_LOCK_FILE);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* Only the owner's uid can open it; one of those holding it costs
	 * a writer its deadline, then GS_ERR_TIMEOUT. */
	pid = hold_lock(path, NULL, false);
	gs_slice_limits_init(&lim, "late");
	t0 = now_ms();
	assert_int_equal(gs_region_slice_create(f->r, &lim, &ref, &eb),
	                 GS_ERR_TIMEOUT);
	dt = now_ms() - t0;
	assert_true(dt >= 2000 && dt < 10000);
	assert_non_null(strstr(eb.msg, GS_REGION_LOCK_FILE));
	(void)kill(pid, SIGKILL);
	(void)waitpid(pid, NULL, 0);
	assert_int_equal(gs_region_slice_create(f->r, &lim, &ref, NULL), GS_OK);
}

/*
 * The scheduler's view of the limits is read under the usage lock: a slot
 * caught mid-write (the sequence odd) must neither make it spin nor make
 * a live slice look deleted (its processes would fail closed); the old
 * view stays until the write is published.
 */
static void limits_caught_mid_write_keep_the_schedulers_view(void **state)
{
	struct region_fx *f = *state;
	struct gs_sched_cfg cfg[GS_REGION_MAX_SLICES];
	struct gs_slice_ref ref;
	struct gs_slice_limits lim;
	struct gs_rl_file *rl;
	uint64_t epoch = 0;
	struct timespec t0, t1;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	ref = region_fx_make_slice(f->r, "seen", GiB);
	gs_slice_limits_init(&lim, "seen");
	lim.mem_limit = GiB;
	lim.compute_pct = 30;
	assert_int_equal(gs_region_slice_update(f->r, &ref, &lim, NULL), GS_OK);
	assert_true(gs_region_sched_cfg(f->r, cfg, &epoch));
	assert_true(cfg[ref.slot].live);
	assert_int_equal(cfg[ref.slot].pct, 30);

	lim.compute_pct = 60;
	assert_int_equal(gs_region_slice_update(f->r, &ref, &lim, NULL), GS_OK);
	rl = gs__region_limits(f->r);
	rl->h.seq |= 1; /* a writer inside */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_false(gs_region_sched_cfg(f->r, cfg, &epoch));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(cfg[ref.slot].live);
	assert_int_equal(cfg[ref.slot].pct, 30);
	assert_true((t1.tv_sec - t0.tv_sec) * 1000000000L +
	                (t1.tv_nsec - t0.tv_nsec) <
	            500000000L);
	rl->h.seq++; /* published */
	assert_true(gs_region_sched_cfg(f->r, cfg, &epoch));
	assert_true(cfg[ref.slot].live);
	assert_int_equal(cfg[ref.slot].pct, 60);
}

struct joiner {
	struct gs_region *r;
	gs_err err;
};

static void *join_thread(void *arg)
{
	struct joiner *j = arg;
	struct gs_slice_limits lim;
	struct gs_slice_ref ref;
	struct gs_proc_ref proc;

	gs_slice_limits_init(&lim, "joined");
	lim.mem_limit = GiB;
	lim.flags |= GS_SLICE_EPHEMERAL;
	j->err = gs_region_slice_join(j->r, &lim, 0, &ref, &proc, NULL, NULL);
	return NULL;
}

/*
 * A run joining a slice waits for the usage lock (to attach) with the
 * limits published: readers that hold the usage lock while reading the
 * limits would otherwise spin on the odd sequence until their deadline,
 * and the joiner would time out behind them.
 */
static void join_waits_for_the_usage_lock_with_the_limits_published(
    void **state)
{
	struct region_fx *f = *state;
	struct joiner j = {0};
	pthread_t t;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	j.r = f->r;
	assert_int_equal(gs_region_lock(f->r), GS_OK);
	assert_int_equal(pthread_create(&t, NULL, join_thread, &j), 0);
	usleep(200000); /* the joiner is waiting for the usage lock */
	assert_int_equal(__atomic_load_n(&gs__region_limits(f->r)->h.seq,
	                                 __ATOMIC_ACQUIRE) &
	                     1,
	                 0);
	gs_region_unlock(f->r);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(j.err, GS_OK);
}

static void bounded_handle_gives_up_on_a_held_usage_mutex(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref s;
	struct gs_slice_usage u;
	char path[256];
	long long t0;
	pid_t pid;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_OWNER, &f->r, NULL),
	                 GS_OK);
	s = region_fx_make_slice(f->r, "a", GiB);
	gs_region_set_lock_wait(f->r, 100);
	assert_int_equal(gs_region_books_path(f->dir, true, (uint32_t)geteuid(),
	                                      s.slot, path, sizeof(path)),
	                 GS_OK);
	pid = hold_lock(path, f->dir, true);
	(void)kill(pid, SIGSTOP);
	t0 = now_ms();
	assert_int_equal(gs_region_slice_usage(f->r, &s, &u), GS_ERR_TIMEOUT);
	assert_true(now_ms() - t0 < 2000);
	/* Within the next second: no wait at all, many times over. */
	t0 = now_ms();
	for (int i = 0; i < 50; i++)
		assert_int_equal(gs_region_slice_usage(f->r, &s, &u),
		                 GS_ERR_TIMEOUT);
	assert_true(now_ms() - t0 < 1000);
	(void)kill(pid, SIGKILL);
	(void)waitpid(pid, NULL, 0);
	/* The holder died: the next locker repairs and goes on at once. */
	assert_int_equal(gs_region_slice_usage(f->r, &s, &u), GS_OK);
}

/* The path of the private books of slot `slot` in `dir`. */
static void books_path(const char *dir, int slot, char *out, size_t n)
{
	assert_int_equal(gs_region_books_path(dir, true, 0, slot, out, n),
	                 GS_OK);
}

/* An OWNER (the daemon) region with two slices of uid 0 (made for
 * others, as the Kubernetes driver's are). */
static void two_uid0_slices(struct region_fx *f, struct gs_slice_ref *a,
                            struct gs_slice_ref *b)
{
	struct gs_slice_limits lim;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_OWNER, &f->r, NULL),
	                 GS_OK);
	gs_slice_limits_init(&lim, "pod-a");
	lim.owner_uid = 0;
	lim.mem_limit = GiB;
	assert_int_equal(gs_region_slice_create(f->r, &lim, a, NULL), GS_OK);
	gs_slice_limits_init(&lim, "pod-b");
	lim.owner_uid = 0;
	lim.mem_limit = GiB;
	assert_int_equal(gs_region_slice_create(f->r, &lim, b, NULL), GS_OK);
}

static void uid0_slices_of_a_privileged_region_keep_books_of_their_own(
    void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref a, b;
	struct gs_slice_limits lim;
	struct gs_slice_usage u;
	struct gs_proc_ref p;
	char path[256];
	struct stat st;
	int dev;

	two_uid0_slices(f, &a, &b);
	assert_true(gs_region_slice_private_books(f->r, &a));
	/* What the creator set, as it set it (the daemon compares). */
	assert_int_equal(gs_region_slice_limits(f->r, &a, &lim), GS_OK);
	assert_int_equal(lim.flags & GS_SLICE_PRIVATE_BOOKS, 0);
	(void)snprintf(path, sizeof(path), "%s/%s", f->dir,
	               GS_REGION_BOOKS_DIR);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	books_path(f->dir, a.slot, path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0666);
	books_path(f->dir, b.slot, path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	/* No shared file for uid 0: nothing every pod could write. */
	(void)snprintf(path, sizeof(path), "%s/%s.0", f->dir,
	               GS_REGION_USAGE_FILE);
	assert_int_equal(stat(path, &st), -1);

	assert_int_equal(gs_region_proc_attach(f->r, &a, 0, &p, NULL), GS_OK);
	dev = gs_region_device(f->r, "GPU-priv", 0);
	assert_int_equal(gs_region_mem_reserve(f->r, &p, dev, 512 * MiB),
	                 GS_OK);
	assert_int_equal(gs_region_mem_reserve(f->r, &p, dev, 600 * MiB),
	                 GS_ERR_QUOTA);
	assert_int_equal(gs_region_slice_usage(f->r, &a, &u), GS_OK);
	assert_true(u.mem_used == 512 * MiB && u.n_procs == 1);
	assert_int_equal(gs_region_slice_usage(f->r, &b, &u), GS_OK);
	assert_true(u.mem_used == 0 && u.n_procs == 0);
	assert_int_equal(gs_region_slice_nprocs(f->r, &a), 1);

	/* A slice of another owner stays in that owner's shared file. */
	gs_slice_limits_init(&lim, "user");
	lim.owner_uid = 65534;
	assert_int_equal(gs_region_slice_create(f->r, &lim, &b, NULL), GS_OK);
	assert_false(gs_region_slice_private_books(f->r, &b));
}

/* A directory standing for a pod's run directory: the files a CDI spec
 * mounts (hard links stand in for the bind mounts), its slice's private
 * books at usage.0. */
static void pod_dir(const struct region_fx *f, const char *pod, int slot,
                    char *out, size_t n)
{
	static const char *const names[] = {"limits", "limits.public",
	                                    "usage"};
	char from[256], to[320];

	(void)snprintf(out, n, "%s/%s", f->dir, pod);
	assert_int_equal(mkdir(out, 0755), 0);
	for (int i = 0; i < 3; i++) {
		(void)snprintf(from, sizeof(from), "%s/%s", f->dir, names[i]);
		(void)snprintf(to, sizeof(to), "%s/%s", out, names[i]);
		assert_int_equal(link(from, to), 0);
	}
	books_path(f->dir, slot, from, sizeof(from));
	(void)snprintf(to, sizeof(to), "%s/usage.0", out);
	assert_int_equal(link(from, to), 0);
}

static void a_pod_joins_its_own_slice_and_no_other_pods(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref a, b, ref;
	struct gs_slice_usage u;
	struct gs_proc_ref p;
	struct gs_region *t;
	struct gs_errbuf eb = {0};
	char ctr[128];
	int dev;

	two_uid0_slices(f, &a, &b);
	pod_dir(f, "pod-a", a.slot, ctr, sizeof(ctr));
	assert_int_equal(gs_region_open(ctr, GS_REGION_TENANT, &t, NULL),
	                 GS_OK);
	/* Another pod's slice, named: refused, nothing charged to it. */
	assert_int_equal(gs_region_slice_find(t, "pod-b", &ref), GS_OK);
	assert_int_equal(gs_region_proc_attach(t, &ref, 0, &p, &eb),
	                 GS_ERR_PERM);
	assert_non_null(strstr(eb.msg, "another pod"));
	/* Its own: joined, and the books are the ones the daemon reads. */
	assert_int_equal(gs_region_slice_find(t, "pod-a", &ref), GS_OK);
	assert_int_equal(gs_region_proc_attach(t, &ref, 0, &p, NULL), GS_OK);
	/* The GPU table is the daemon's: a pod finds the GPUs it listed and
	 * adds none. */
	dev = gs_region_device(f->r, "GPU-pod", 0);
	assert_true(dev >= 0);
	assert_int_equal(gs_region_device(t, "GPU-pod", 0), dev);
	assert_int_equal(gs_region_device(t, "GPU-unknown", 0),
	                 -(int)GS_ERR_NOT_FOUND);
	assert_int_equal(gs_region_mem_reserve(t, &p, dev, 256 * MiB), GS_OK);
	assert_int_equal(gs_region_slice_usage(f->r, &a, &u), GS_OK);
	assert_true(u.mem_used == 256 * MiB);
	assert_int_equal(gs_region_slice_usage(f->r, &b, &u), GS_OK);
	assert_true(u.mem_used == 0);
	gs_region_close(t);
}

static void a_reused_slot_gets_books_of_its_own(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref a, b, c;
	struct gs_slice_limits lim;
	struct gs_slice_usage u;
	struct gs_proc_ref p, it = {.slot = -1};
	struct gs_proc_info info;
	struct stat st1, st2;
	char path[256];
	int dev;

	two_uid0_slices(f, &a, &b);
	assert_int_equal(gs_region_proc_attach(f->r, &a, 0, &p, NULL), GS_OK);
	dev = gs_region_device(f->r, "GPU-reuse", 0);
	assert_int_equal(gs_region_mem_reserve(f->r, &p, dev, 256 * MiB),
	                 GS_OK);
	books_path(f->dir, a.slot, path, sizeof(path));
	assert_int_equal(stat(path, &st1), 0);
	assert_int_equal(gs_region_slice_delete(f->r, &a, NULL), GS_OK);
	assert_int_equal(stat(path, &st2), -1); /* its books went with it */

	gs_slice_limits_init(&lim, "pod-c");
	lim.owner_uid = 0;
	assert_int_equal(gs_region_slice_create(f->r, &lim, &c, NULL), GS_OK);
	assert_int_equal(c.slot, a.slot);
	assert_int_equal(stat(path, &st2), 0);
	assert_true(st1.st_ino != st2.st_ino); /* a new file, not the old */
	assert_int_equal(gs_region_slice_usage(f->r, &c, &u), GS_OK);
	assert_true(u.mem_used == 0 && u.n_procs == 0);
	/* The old slice's process reference names nothing in the new one. */
	assert_int_equal(gs_region_mem_reserve(f->r, &p, dev, MiB),
	                 GS_ERR_NOT_FOUND);
	while (gs_region_proc_next(f->r, &it, &info))
		assert_true(info.slice.slot != c.slot);
	assert_int_equal(gs_region_slice_nprocs(f->r, &c), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	    T(tenant_cannot_open_a_missing_region),
	    T(runner_creates_and_tenant_sees_the_same_slices),
	    T(slice_names_are_unique_and_checked),
	    T(ensure_joins_an_existing_slice_or_creates_it),
	    T(ephemeral_slice_lives_while_anyone_is_attached),
	    T(stale_reference_fails_after_delete_and_reuse),
	    T(update_changes_limits_and_bumps_the_epoch),
	    T(reserve_stops_exactly_at_the_cap),
	    T(byte_seconds_grow_with_time_held),
	    T(concurrent_processes_never_exceed_the_cap),
	    T(killed_process_share_returns_when_reaped),
	    T(reused_pid_is_not_taken_for_the_old_process),
	    T(lock_holder_death_is_repaired_not_hung),
	    T(a_writer_killed_mid_write_does_not_hang_the_next_creator),
	    T(region_from_an_earlier_boot_is_recreated),
	    T(other_versions_are_refused),
	    T(owner_replaces_files_of_another_version),
	    T(runner_replaces_a_runners_region_of_another_version),
	    T(privileged_limits_are_read_only_for_tenants),
	    T(processes_are_listed_with_their_books),
	    T(tenant_flock_on_limits_blocks_no_writer_and_no_reader),
	    T(writers_lock_is_private_and_waited_on_with_a_deadline),
	    T(bounded_handle_gives_up_on_a_held_usage_mutex),
	    T(limits_caught_mid_write_keep_the_schedulers_view),
	    T(join_waits_for_the_usage_lock_with_the_limits_published),
	    T(uid0_slices_of_a_privileged_region_keep_books_of_their_own),
	    T(a_pod_joins_its_own_slice_and_no_other_pods),
	    T(a_reused_slot_gets_books_of_its_own),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
