/*
 * test_shim_need_wait.c - the node's need wait (gpusliced's
 * swap.need_wait): how long a process's allocation waits for the daemon
 * to answer its need of more memory. The region's creator writes it
 * (gs_region_set_need_wait) into its limits and every view of them; the
 * shim (shim/swapneed.c, compiled in here with the few shim functions it
 * calls stubbed) reads it at each need, so an unanswered need fails after
 * the configured time, not the default 30 s, and a parked slice's need
 * waits past it until the slice resumes, then the whole wait again.
 *
 * Works in a fresh region directory under /tmp, opened as its owner (a
 * privileged region, as the daemon's), one handle playing both the
 * daemon and the process. Nobody answers the needs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "gs/region_swap.h"
#include "region_fixture.h"
#include "region_int.h"
#include "shim_int.h"

#define MiB (1ULL << 20)
#define MS  (1000ULL * 1000)

/* ---- what swapneed.c needs of the rest of the shim ------------------- */

struct gs__shim gs__g;

bool gs__enforcing(void)
{
	return true;
}

uint64_t gs__now(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int gs__dev_current(CUdevice *ord)
{
	(void)ord;
	return 0;
}

/* ---- fixture ---------------------------------------------------------- */

struct fx {
	struct region_fx rf; /* first: region_fx_teardown frees it */
	struct gs_slice_ref s;
	int dev;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct region_fx *rf;

	if (f == NULL || region_fx_setup(state, "needwait") != 0)
		return -1;
	rf = *state;
	f->rf = *rf;
	free(rf);
	*state = f;
	if (gs_region_open(f->rf.dir, GS_REGION_OWNER, &f->rf.r, NULL) != GS_OK)
		return -1;
	f->s = region_fx_make_slice(f->rf.r, "nb", 4096 * MiB);
	f->dev = gs_region_device(
	    f->rf.r, "GPU-11111111-2222-3333-4444-555555555555", 24576 * MiB);
	memset(&gs__g, 0, sizeof(gs__g));
	gs__g.region = f->rf.r;
	(void)snprintf(gs__g.cfg.slice, sizeof(gs__g.cfg.slice), "nb");
	if (f->dev < 0 || gs_region_proc_attach(f->rf.r, &f->s, 0,
	                                        &gs__g.proc, NULL) != GS_OK)
		return -1;
	gs__g.attached = true;
	return 0;
}

static int teardown(void **state)
{
	memset(&gs__g, 0, sizeof(gs__g));
	return region_fx_teardown(state);
}

/* The need wait a view file of the region's limits carries. */
static uint32_t view_need_wait_ms(const char *dir, const char *name)
{
	char path[128];
	struct gs_rl_file *v;
	uint32_t ms;
	int fd;

	(void)snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	v = mmap(NULL, sizeof(*v), PROT_READ, MAP_SHARED, fd, 0);
	(void)close(fd);
	assert_true(v != MAP_FAILED);
	assert_true(v->h.flags & GS_RL_VIEW);
	ms = __atomic_load_n(&v->h.need_wait_ms, __ATOMIC_RELAXED);
	(void)munmap(v, sizeof(*v));
	return ms;
}

static void set_parked(struct fx *f, bool parked)
{
	struct gs_slice_limits lim;

	assert_int_equal(gs_region_slice_limits(f->rf.r, &f->s, &lim), GS_OK);
	if (parked)
		lim.flags |= GS_SLICE_IS_PARKED;
	else
		lim.flags &= ~GS_SLICE_IS_PARKED;
	assert_int_equal(gs_region_slice_update(f->rf.r, &f->s, &lim, NULL),
	                 GS_OK);
}

/* ---- the setting in the region ---------------------------------------- */

static void the_need_wait_is_30_s_until_the_creator_sets_it(void **state)
{
	struct fx *f = *state;

	assert_true(gs_region_need_wait_ns(f->rf.r) == 30000 * MS);
	assert_int_equal(gs_region_set_need_wait(f->rf.r, 1500, NULL), GS_OK);
	assert_true(gs_region_need_wait_ns(f->rf.r) == 1500 * MS);
}

static void the_need_wait_reaches_every_view_of_the_limits(void **state)
{
	struct fx *f = *state;
	struct gs_slice_limits lim;
	struct gs_slice_ref ref;

	/* a view made before the setting is republished with it */
	assert_int_equal(gs_region_set_need_wait(f->rf.r, 2500, NULL), GS_OK);
	assert_int_equal(view_need_wait_ms(f->rf.dir, GS_RL_VIEW_PUBLIC_FILE),
	                 2500);
	/* a view made after it starts with it */
	gs_slice_limits_init(&lim, "other");
	lim.owner_uid = 4242;
	assert_int_equal(gs_region_slice_create(f->rf.r, &lim, &ref, NULL),
	                 GS_OK);
	assert_int_equal(view_need_wait_ms(f->rf.dir, "limits.4242"), 2500);
	assert_int_equal(gs_region_set_need_wait(f->rf.r, 700, NULL), GS_OK);
	assert_int_equal(view_need_wait_ms(f->rf.dir, "limits.4242"), 700);
	assert_int_equal(view_need_wait_ms(f->rf.dir, GS_RL_VIEW_PUBLIC_FILE),
	                 700);
}

static void a_need_wait_out_of_range_or_from_a_reader_is_refused(void **state)
{
	struct fx *f = *state;
	struct gs_region *t;
	struct gs_errbuf eb = {0};

	assert_int_equal(gs_region_set_need_wait(f->rf.r, 0, &eb),
	                 GS_ERR_RANGE);
	assert_non_null(strstr(eb.msg, "need wait 0 ms is outside"));
	assert_int_equal(gs_region_set_need_wait(
	                     f->rf.r, GS_REGION_NEED_WAIT_MS_MAX + 1, NULL),
	                 GS_ERR_RANGE);
	assert_int_equal(gs_region_open(f->rf.dir, GS_REGION_TENANT, &t, NULL),
	                 GS_OK);
	assert_int_equal(gs_region_set_need_wait(t, 100, NULL), GS_ERR_PERM);
	gs_region_close(t);
	assert_true(gs_region_need_wait_ns(f->rf.r) == 30000 * MS);
}

/* ---- the shim's wait -------------------------------------------------- */

static void an_unanswered_need_fails_after_the_configured_wait(void **state)
{
	struct fx *f = *state;
	uint64_t t0, took;

	assert_int_equal(gs_region_set_need_wait(f->rf.r, 1000, NULL), GS_OK);
	t0 = gs__now();
	assert_false(gs__swap_need(f->dev, 64 * MiB));
	took = gs__now() - t0;
	/* at least the setting, and nowhere near the default 30 s (the
	 * bound leaves a loaded machine 4 s of slack) */
	if (took < 1000 * MS || took > 5000 * MS)
		fail_msg("an unanswered need took %llu ms with a 1000 ms wait",
		         (unsigned long long)(took / MS));
}

struct unpark {
	struct fx *f;
	uint64_t after_ns;
};

static void *unpark_later(void *arg)
{
	struct unpark *u = arg;
	struct timespec ts = {.tv_sec = (time_t)(u->after_ns / 1000000000ULL),
	                      .tv_nsec = (long)(u->after_ns % 1000000000ULL)};

	(void)nanosleep(&ts, NULL);
	set_parked(u->f, false);
	return NULL;
}

static void a_parked_slices_need_waits_until_it_resumes_then_the_whole_wait(void **state)
{
	struct fx *f = *state;
	struct unpark u = {.f = f, .after_ns = 1900 * MS};
	pthread_t th;
	uint64_t t0, took;

	assert_int_equal(gs_region_set_need_wait(f->rf.r, 1000, NULL), GS_OK);
	set_parked(f, true);
	t0 = gs__now();
	assert_int_equal(pthread_create(&th, NULL, unpark_later, &u), 0);
	/* parked: waits on past 1 s; resumed at 1.9 s: the whole 1 s wait
	 * again from then (not what is left of a second one, 0.1 s), and
	 * nobody answers. The shim looks at least every 128 ms. */
	assert_false(gs__swap_need(f->dev, 64 * MiB));
	took = gs__now() - t0;
	assert_int_equal(pthread_join(th, NULL), 0);
	if (took < 2700 * MS || took > 8000 * MS)
		fail_msg("a parked slice's need took %llu ms (resumed at 1900 ms, wait 1000 ms)",
		         (unsigned long long)(took / MS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        the_need_wait_is_30_s_until_the_creator_sets_it, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        the_need_wait_reaches_every_view_of_the_limits, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        a_need_wait_out_of_range_or_from_a_reader_is_refused, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        an_unanswered_need_fails_after_the_configured_wait, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        a_parked_slices_need_waits_until_it_resumes_then_the_whole_wait,
	        setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
