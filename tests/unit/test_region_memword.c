/*
 * test_region_memword.c - the memory books without a lock (region/memword.c):
 * threads in several processes racing allocations and frees of random
 * sizes against one cap (a watcher reading the region sees it never
 * passed, and the books end equal to what each process counted live),
 * processes killed mid-race given back exactly once, a process dead
 * inside an update recounted exactly, and allocations that go on while
 * another process holds the owner lock.
 *
 * Each test works in its own fresh directory under /tmp.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gs/region.h"
#include "region_int.h"
#include "region_fixture.h"

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)

#define PROCS   4  /* racing processes */
#define THREADS 4  /* threads in each */
#define HELD    12 /* allocations one thread holds at most */

/* Shared with the racers (an anonymous shared mapping). */
struct board {
	int stop;             /* the racers stop allocating */
	int ready;            /* racers attached */
	int failed;           /* a racer could not attach or run */
	uint64_t live[PROCS]; /* bytes each process counts as held */
	uint64_t granted;     /* reservations granted, all racers */
	uint64_t refused;     /* reservations refused over the cap */
	int done[PROCS];      /* threads of the process that stopped */
	/* The racers' count in one word (each process's alone, summed,
	 * would be a torn snapshot): at every instant no more than the
	 * books hold. Not checked while a racer is being killed (its part
	 * is taken out once it is dead). */
	uint64_t live_all;
	int killing;
};

static int setup(void **state)
{
	return region_fx_setup(state, "memword");
}

static int teardown(void **state)
{
	return region_fx_teardown(state);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	(void)nanosleep(&ts, NULL);
}

/* The slice's bytes on `dev` as the region holds them. */
static uint64_t slice_word(struct gs_region *r, int slot, int dev)
{
	struct gs_ro_file *ro = gs__region_owner_file(r, (uint32_t)geteuid());

	return gs__mem_bytes(&ro->slice[slot].dev[dev]);
}

/* ---- the racers --------------------------------------------------------- */

struct racer {
	struct gs_region *r;
	struct gs_proc_ref *p;
	struct board *b;
	int dev, k;
	unsigned seed;
};

/* Allocates and frees random sizes (512 B steps, up to 192 MiB) until
 * told to stop; what it holds then stays held. */
static void *race(void *arg)
{
	struct racer *a = arg;
	uint64_t held[HELD];
	int n = 0;

	while (!__atomic_load_n(&a->b->stop, __ATOMIC_ACQUIRE)) {
		bool take = n == 0 || (n < HELD && rand_r(&a->seed) % 2 == 0);

		if (take) {
			uint64_t sz =
			    ((uint64_t)rand_r(&a->seed) % (384 * 1024) + 1) *
			    512;

			if (gs_region_mem_reserve(a->r, a->p, a->dev, sz) !=
			    GS_OK) {
				__atomic_add_fetch(&a->b->refused, 1,
				                   __ATOMIC_RELAXED);
				continue;
			}
			/* Counted after the books took it, uncounted before
			 * they give it back: the count never exceeds them. */
			__atomic_add_fetch(&a->b->live[a->k], sz,
			                   __ATOMIC_RELAXED);
			__atomic_add_fetch(&a->b->live_all, sz,
			                   __ATOMIC_RELAXED);
			__atomic_add_fetch(&a->b->granted, 1, __ATOMIC_RELAXED);
			held[n++] = sz;
		} else {
			int i = (int)((unsigned)rand_r(&a->seed) % (unsigned)n);
			uint64_t sz = held[i];

			held[i] = held[--n];
			__atomic_sub_fetch(&a->b->live[a->k], sz,
			                   __ATOMIC_RELAXED);
			__atomic_sub_fetch(&a->b->live_all, sz,
			                   __ATOMIC_RELAXED);
			gs_region_mem_release(a->r, a->p, a->dev, sz);
		}
	}
	return NULL;
}

/* One racing process: THREADS racers, then it waits to be killed with
 * its allocations held. */
static void racer_process(const char *dir, const struct gs_slice_ref *s,
                          int dev, struct board *b, int k)
{
	struct gs_region *r;
	struct gs_proc_ref p;
	struct racer a[THREADS];
	pthread_t t[THREADS];

	/* Never outlives a failed test. */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (gs_region_open(dir, GS_REGION_TENANT, &r, NULL) != GS_OK ||
	    gs_region_proc_attach(r, s, 0, &p, NULL) != GS_OK) {
		__atomic_add_fetch(&b->failed, 1, __ATOMIC_RELAXED);
		_exit(2);
	}
	__atomic_add_fetch(&b->ready, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < THREADS; i++) {
		a[i] = (struct racer){.r = r,
		                      .p = &p,
		                      .b = b,
		                      .dev = dev,
		                      .k = k,
		                      .seed = (unsigned)(getpid() * 31 + i)};
		if (pthread_create(&t[i], NULL, race, &a[i]) != 0) {
			__atomic_add_fetch(&b->failed, 1, __ATOMIC_RELAXED);
			_exit(2);
		}
	}
	for (int i = 0; i < THREADS; i++)
		(void)pthread_join(t[i], NULL);
	__atomic_store_n(&b->done[k], 1, __ATOMIC_RELEASE);
	for (;;)
		pause();
}

/* ---- the watcher -------------------------------------------------------- */

struct watch {
	struct gs_region *r;
	struct board *b;
	int slot, dev;
	uint64_t cap;
	int stop;
	uint64_t samples, over_books, over_count, max_books;
};

/* Reads the slice's bytes in the region, and the racers' own count of
 * what they hold, as fast as it can: neither may pass the cap. */
static void *watch(void *arg)
{
	struct watch *w = arg;

	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		uint64_t used = slice_word(w->r, w->slot, w->dev);
		uint64_t live =
		    __atomic_load_n(&w->b->live_all, __ATOMIC_RELAXED);

		if (__atomic_load_n(&w->b->killing, __ATOMIC_ACQUIRE))
			live = 0;
		w->samples++;
		if (used > w->max_books)
			w->max_books = used;
		if (used > w->cap)
			w->over_books++;
		if (live > w->cap)
			w->over_count++;
	}
	return NULL;
}

/*
 * PROCS processes of THREADS threads race for ~2.5 s against a 1 GiB
 * cap; two of them are killed mid-race (SIGKILL, at whatever point of an
 * update). The cap is never passed by the books (a watcher reads the
 * region) nor by the racers' own count; once the survivors stop, their
 * bytes on the books are exactly what they count live (the killed ones'
 * given back exactly once, by the racers' own reaping at the cap or by
 * the reap here: a second reap changes nothing), and exactly zero once
 * they are gone too.
 */
static void
the_cap_holds_and_the_books_match_what_is_live_under_a_race(void **state)
{
	struct region_fx *f = *state;
	const uint64_t cap = 1 * GiB;
	struct gs_slice_ref s;
	struct gs_slice_usage u;
	struct watch w;
	struct board *b;
	pthread_t wt;
	pid_t kid[PROCS];
	uint64_t live = 0, until, t_start;
	int dev, reaped;

	t_start = mono_ns();
	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	s = region_fx_make_slice(f->r, "race", cap);
	dev = gs_region_device(f->r, "GPU-memword-race", 80 * GiB);
	assert_true(dev >= 0);
	b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE,
	         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(b != MAP_FAILED);
	memset(b, 0, sizeof(*b));
	for (int k = 0; k < PROCS; k++) {
		kid[k] = fork();
		assert_true(kid[k] >= 0);
		if (kid[k] == 0)
			racer_process(f->dir, &s, dev, b, k);
	}
	until = mono_ns() + 5000000000ull;
	while (__atomic_load_n(&b->ready, __ATOMIC_ACQUIRE) < PROCS &&
	       b->failed == 0 && mono_ns() < until)
		sleep_ms(1);
	assert_int_equal(b->failed, 0);
	assert_int_equal(b->ready, PROCS);
	w = (struct watch){
	    .r = f->r, .b = b, .slot = s.slot, .dev = dev, .cap = cap};
	assert_int_equal(pthread_create(&wt, NULL, watch, &w), 0);
	for (int k = 0; k < 2; k++) {
		sleep_ms(800);
		__atomic_store_n(&b->killing, 1, __ATOMIC_RELEASE);
		assert_int_equal(kill(kid[k], SIGKILL), 0);
		assert_int_equal(waitpid(kid[k], NULL, 0), kid[k]);
		__atomic_sub_fetch(&b->live_all, b->live[k], __ATOMIC_RELAXED);
		__atomic_store_n(&b->killing, 0, __ATOMIC_RELEASE);
	}
	sleep_ms(800);
	__atomic_store_n(&b->stop, 1, __ATOMIC_RELEASE);
	until = mono_ns() + 10000000000ull;
	for (int k = 2; k < PROCS; k++)
		while (!__atomic_load_n(&b->done[k], __ATOMIC_ACQUIRE) &&
		       mono_ns() < until)
			sleep_ms(1);
	__atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(wt, NULL), 0);
	for (int k = 2; k < PROCS; k++) {
		assert_int_equal(b->done[k], 1);
		live += b->live[k];
	}
	print_message(
	    "race: %llu granted, %llu refused, %llu watcher samples, books at most %llu MiB of %llu\n",
	    (unsigned long long)b->granted, (unsigned long long)b->refused,
	    (unsigned long long)w.samples,
	    (unsigned long long)(w.max_books / MiB),
	    (unsigned long long)(cap / MiB));
	assert_int_equal(w.over_books, 0);
	assert_int_equal(w.over_count, 0);
	assert_true(w.samples > 1000);
	assert_true(b->granted > 1000);
	assert_true(b->refused > 0); /* the cap was reached, and held */

	/* The racers reaped the killed ones when they found the cap
	 * reached, or this reap does. */
	reaped = gs_region_reap(f->r);
	assert_true(reaped >= 0 && reaped <= 2);
	assert_int_equal(slice_word(f->r, s.slot, dev), live);
	assert_int_equal(gs_region_reap(f->r), 0); /* exactly once */
	assert_int_equal(gs_region_slice_usage(f->r, &s, &u), GS_OK);
	assert_int_equal(u.mem_used, live);
	assert_int_equal(u.n_procs, PROCS - 2);
	assert_true(u.mem_peak <= cap);
	/* The byte-seconds, stepped by whichever racer saw the clock move
	 * first, integrate no more than the cap over the whole race. */
	assert_true(u.mem_byte_s > 0);
	assert_true(u.mem_byte_s <=
	            (double)cap * (double)(mono_ns() - t_start) / 1e9);

	for (int k = 2; k < PROCS; k++) {
		assert_int_equal(kill(kid[k], SIGKILL), 0);
		assert_int_equal(waitpid(kid[k], NULL, 0), kid[k]);
	}
	assert_int_equal(gs_region_reap(f->r), PROCS - 2);
	assert_int_equal(slice_word(f->r, s.slot, dev), 0);
	(void)munmap(b, sizeof(*b));
}

/* A child attaches to `s`, reserves `bytes` on `dev`, then does `what`
 * to its own books and dies; returns its pid once dead. */
enum dying { DIES_AFTER_SLICE_STEP, DIES_AFTER_OWN_STEP };

static pid_t dies_inside_an_update(struct region_fx *f, const struct gs_slice_ref *s,
                                   int dev, uint64_t bytes, uint64_t extra,
                                   enum dying how)
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		struct gs_region *r;
		struct gs_proc_ref p;
		struct gs_ro_file *ro;
		struct gs_ru_books *pb;

		if (gs_region_open(f->dir, GS_REGION_TENANT, &r, NULL) ||
		    gs_region_proc_attach(r, s, 0, &p, NULL) ||
		    gs_region_mem_reserve(r, &p, dev, bytes) ||
		    (ro = gs__region_own(r)) == NULL)
			_exit(2);
		pb = &ro->proc_dev[p.slot % GS_REGION_MAX_PROCS][dev];
		if (how == DIES_AFTER_SLICE_STEP) {
			/* A charge of `extra`: inside, the slice took it, the
			 * process's own word not yet. */
			__atomic_add_fetch(&pb->mem_used, GS_MEM_BUSY_ONE,
			                   __ATOMIC_SEQ_CST);
			__atomic_add_fetch(
			    &ro->slice[s->slot].dev[dev].mem_used, extra,
			    __ATOMIC_SEQ_CST);
		} else {
			/* A release of `extra`: inside, its own word gave it
			 * up, the slice not yet. */
			__atomic_add_fetch(&pb->mem_used,
			                   GS_MEM_BUSY_ONE - extra,
			                   __ATOMIC_SEQ_CST);
		}
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return pid;
}

/*
 * A process that died between its two updates leaves the slice's bytes
 * off by that update; reaping it recounts the slice from its live
 * processes, exactly, whichever side of the update it died on.
 */
static void a_process_dead_inside_an_update_is_recounted_exactly(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref s;
	struct gs_proc_ref p;
	int dev;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	s = region_fx_make_slice(f->r, "recount", 4 * GiB);
	dev = gs_region_device(f->r, "GPU-memword-recount", 80 * GiB);
	assert_int_equal(gs_region_proc_attach(f->r, &s, 0, &p, NULL), GS_OK);
	assert_int_equal(gs_region_mem_reserve(f->r, &p, dev, 3 * MiB), GS_OK);

	(void)dies_inside_an_update(f, &s, dev, 100 * MiB, 7 * MiB,
	                            DIES_AFTER_SLICE_STEP);
	assert_int_equal(slice_word(f->r, s.slot, dev), 110 * MiB);
	assert_int_equal(gs_region_reap(f->r), 1);
	assert_int_equal(slice_word(f->r, s.slot, dev), 3 * MiB);

	(void)dies_inside_an_update(f, &s, dev, 50 * MiB, 20 * MiB,
	                            DIES_AFTER_OWN_STEP);
	assert_int_equal(slice_word(f->r, s.slot, dev), 53 * MiB);
	assert_int_equal(gs_region_reap(f->r), 1);
	assert_int_equal(slice_word(f->r, s.slot, dev), 3 * MiB);
	/* Nothing owed, nothing fenced: the lock-free path goes on. */
	assert_int_equal(gs__region_own(f->r)->slice[s.slot].mem_fence, 0);
	assert_int_equal(
	    gs_region_mem_reserve(f->r, &p, dev, 4 * GiB - 3 * MiB), GS_OK);
	assert_int_equal(gs_region_mem_reserve(f->r, &p, dev, 1), GS_ERR_QUOTA);
	gs_region_mem_release(f->r, &p, dev, 4 * GiB);
	assert_int_equal(slice_word(f->r, s.slot, dev), 0);
}

/*
 * Charging and releasing take no lock: while another process holds the
 * owner file's lock (stopped inside it), this one's reservations and
 * releases still go through at once, and the cap still holds.
 */
static void allocation_does_not_wait_for_the_owner_lock(void **state)
{
	struct region_fx *f = *state;
	struct gs_slice_ref s;
	struct gs_proc_ref p;
	int pfd[2], dev;
	uint64_t t0, used, limit;
	pid_t pid;
	char c;

	assert_int_equal(gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL),
	                 GS_OK);
	s = region_fx_make_slice(f->r, "nolock", GiB);
	dev = gs_region_device(f->r, "GPU-memword-nolock", 80 * GiB);
	assert_int_equal(gs_region_proc_attach(f->r, &s, 0, &p, NULL), GS_OK);
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct gs_region *r;
		struct gs_ro_file *ro;

		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (gs_region_open(f->dir, GS_REGION_TENANT, &r, NULL) ||
		    (ro = gs__region_owner_file(r, (uint32_t)geteuid())) ==
		        NULL ||
		    pthread_mutex_lock(&ro->h.lock.m) != 0)
			_exit(2);
		(void)!write(pfd[1], "l", 1);
		for (;;)
			pause();
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &c, 1), 1);
	close(pfd[0]);
	t0 = mono_ns();
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(gs_region_mem_reserve(f->r, &p, dev, MiB),
		                 GS_OK);
		gs_region_mem_release(f->r, &p, dev, MiB);
	}
	assert_int_equal(gs_region_mem_reserve(f->r, &p, dev, GiB), GS_OK);
	assert_int_equal(gs_region_mem_view(f->r, &p, dev, &used, &limit),
	                 GS_OK);
	assert_int_equal(used, GiB);
	assert_int_equal(limit, GiB);
	/* The lock would have made each call wait its 3 s deadline. */
	assert_true(mono_ns() - t0 < 1000000000ull);
	gs_region_mem_release(f->r, &p, dev, GiB);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        the_cap_holds_and_the_books_match_what_is_live_under_a_race,
	        setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        a_process_dead_inside_an_update_is_recounted_exactly, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        allocation_does_not_wait_for_the_owner_lock, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
