/*
 * test_swap_need.c - the need protocol of the swap record
 * (gs/region_swap.h, region/swaprec.c): a process posts how much more GPU
 * memory it needs, the daemon lists the pending needs and answers them,
 * the process reads the answer; a newer need replaces an older one, an
 * answer to the older one is dropped, and the needs of a process whose
 * slice is gone are not listed. Works in a fresh region directory under
 * /tmp, with one handle playing both the process and the daemon.
 *
 * The wakes: each of the four waits (the daemon's bell, the process's
 * wait for its answer, a watcher's for a request, the asker's for the
 * shim's answer) is woken by its writer long before its deadline (10 s
 * here; each test asserts under 5 s, so a missing wake fails it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs/region.h"
#include "gs/region_swap.h"

#define MiB      (1ULL << 20)
#define LONG_NS  (10ULL * 1000 * 1000 * 1000)
#define WOKEN_NS (5ULL * 1000 * 1000 * 1000)

struct fx {
	char dir[64];
	struct gs_region *r;
	struct gs_slice_ref s;
	struct gs_proc_ref p;
	int dev;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct gs_slice_limits lim;

	if (f == NULL)
		return -1;
	(void)snprintf(f->dir, sizeof(f->dir), "/tmp/gs-test-swapneed-XXXXXX");
	if (mkdtemp(f->dir) == NULL ||
	    gs_region_open(f->dir, GS_REGION_RUNNER, &f->r, NULL) != GS_OK)
		return -1;
	gs_slice_limits_init(&lim, "nb");
	lim.mem_limit = 4096 * MiB;
	if (gs_region_slice_create(f->r, &lim, &f->s, NULL) != GS_OK ||
	    gs_region_proc_attach(f->r, &f->s, 0, &f->p, NULL) != GS_OK)
		return -1;
	f->dev = gs_region_device(
	    f->r, "GPU-11111111-2222-3333-4444-555555555555", 24576 * MiB);
	*state = f;
	return f->dev >= 0 ? 0 : -1;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	gs_region_close(f->r);
	(void)snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	(void)!system(cmd);
	free(f);
	return 0;
}

/* The need record of process `p` as the daemon lists it; false when the
 * process is not listed. */
static bool listed(struct gs_region *r, const struct gs_proc_ref *p,
                   struct gs_swap_need *out)
{
	struct gs_proc_ref it = {.slot = -1};

	while (gs_region_swap_need_next(r, &it, out))
		if (out->proc.slot == p->slot &&
		    out->proc.generation == p->generation)
			return true;
	return false;
}

static void a_need_is_pending_until_the_daemon_answers_it(void **state)
{
	struct fx *f = *state;
	struct gs_swap_need nd;
	uint32_t seq = 0;
	bool answered = true;
	gs_err result = GS_ERR_IO;

	assert_true(listed(f->r, &f->p, &nd));
	assert_int_equal(nd.seq, nd.ack); /* nothing asked yet */
	assert_int_equal(
	    gs_region_swap_need(f->r, &f->p, f->dev, 64 * MiB, 1000, &seq),
	    GS_OK);
	assert_true(listed(f->r, &f->p, &nd));
	assert_int_equal(nd.seq, seq);
	assert_true(nd.ack != seq);
	assert_int_equal(nd.bytes, 64 * MiB);
	assert_int_equal(nd.dev, f->dev);
	assert_int_equal(nd.active_ns, 1000); /* posting is activity */
	assert_int_equal(nd.slice.slot, f->s.slot);
	assert_int_equal(nd.slice.generation, f->s.generation);
	assert_int_equal(
	    gs_region_swap_need_result(f->r, &f->p, seq, &answered, &result),
	    GS_OK);
	assert_false(answered);
	assert_int_equal(
	    gs_region_swap_need_answer(f->r, &nd.proc, seq, GS_ERR_NO_FIT),
	    GS_OK);
	assert_int_equal(
	    gs_region_swap_need_result(f->r, &f->p, seq, &answered, &result),
	    GS_OK);
	assert_true(answered);
	assert_int_equal(result, GS_ERR_NO_FIT);
	assert_true(listed(f->r, &f->p, &nd));
	assert_int_equal(nd.seq, nd.ack);
}

static void a_newer_need_replaces_an_unanswered_one(void **state)
{
	struct fx *f = *state;
	uint32_t first, second;
	bool answered = true;
	gs_err result = GS_ERR_IO;

	assert_int_equal(
	    gs_region_swap_need(f->r, &f->p, f->dev, 64 * MiB, 1, &first),
	    GS_OK);
	assert_int_equal(
	    gs_region_swap_need(f->r, &f->p, f->dev, 0, 2, &second), GS_OK);
	assert_true(second != first);
	/* the daemon's answer to the first comes too late: dropped */
	assert_int_equal(gs_region_swap_need_answer(f->r, &f->p, first, GS_OK),
	                 GS_ERR_NOT_FOUND);
	assert_int_equal(
	    gs_region_swap_need_result(f->r, &f->p, second, &answered, &result),
	    GS_OK);
	assert_false(answered);
	assert_int_equal(gs_region_swap_need_answer(f->r, &f->p, second, GS_OK),
	                 GS_OK);
	assert_int_equal(
	    gs_region_swap_need_result(f->r, &f->p, second, &answered, &result),
	    GS_OK);
	assert_true(answered);
	assert_int_equal(result, GS_OK);
}

static void activity_stamps_are_listed(void **state)
{
	struct fx *f = *state;
	struct gs_swap_need nd;

	assert_int_equal(gs_region_swap_active(f->r, &f->p, 12345), GS_OK);
	assert_true(listed(f->r, &f->p, &nd));
	assert_int_equal(nd.active_ns, 12345);
	assert_int_equal(nd.seq, nd.ack); /* a stamp is no need */
}

static void a_poll_without_a_scan_lists_the_known_owner_files(void **state)
{
	struct fx *f = *state;
	struct gs_swap_need nd;
	struct gs_proc_ref it = {.slot = GS_REGION_NEED_NO_SCAN};
	uint32_t seq;
	bool found = false;

	assert_int_equal(
	    gs_region_swap_need(f->r, &f->p, f->dev, 2 * MiB, 7, &seq), GS_OK);
	while (gs_region_swap_need_next(f->r, &it, &nd))
		found = found || (nd.proc.slot == f->p.slot && nd.seq == seq);
	assert_true(found);
}

static void a_need_on_a_device_out_of_range_is_refused(void **state)
{
	struct fx *f = *state;
	uint32_t seq;

	assert_int_equal(gs_region_swap_need(f->r, &f->p, -1, 1, 1, &seq),
	                 GS_ERR_INVALID);
	assert_int_equal(
	    gs_region_swap_need(f->r, &f->p, GS_REGION_MAX_DEVICES, 1, 1, &seq),
	    GS_ERR_INVALID);
}

static void needs_of_a_deleted_slice_are_not_listed(void **state)
{
	struct fx *f = *state;
	struct gs_swap_need nd;
	uint32_t seq;

	assert_int_equal(
	    gs_region_swap_need(f->r, &f->p, f->dev, 64 * MiB, 1, &seq), GS_OK);
	assert_int_equal(gs_region_slice_delete(f->r, &f->s, NULL), GS_OK);
	/* the daemon serves no one for a slice that is gone */
	assert_false(listed(f->r, &f->p, &nd));
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	(void)nanosleep(&ts, NULL);
}

/* A second thread playing the other side: after `ms`, `fn` once. */
struct later {
	struct fx *f;
	uint32_t seq;
	long ms;
	void (*fn)(struct later *);
	pthread_t t;
};

static void *later_main(void *arg)
{
	struct later *l = arg;

	sleep_ms(l->ms);
	l->fn(l);
	return NULL;
}

static void later_start(struct later *l)
{
	assert_int_equal(pthread_create(&l->t, NULL, later_main, l), 0);
}

static void answer_it(struct later *l)
{
	assert_int_equal(
	    gs_region_swap_need_answer(l->f->r, &l->f->p, l->seq, GS_OK),
	    GS_OK);
}

static void an_answer_wakes_the_process_waiting_for_it(void **state)
{
	struct fx *f = *state;
	struct later l = {.f = f, .ms = 50, .fn = answer_it};
	bool answered = false;
	gs_err result = GS_ERR_IO;
	uint64_t t0;

	assert_int_equal(
	    gs_region_swap_need(f->r, &f->p, f->dev, 64 * MiB, 1000, &l.seq),
	    GS_OK);
	later_start(&l);
	t0 = mono_ns();
	assert_int_equal(gs_region_swap_need_wait(f->r, &f->p, l.seq, LONG_NS,
	                                          &answered, &result),
	                 GS_OK);
	assert_true(mono_ns() - t0 < WOKEN_NS);
	assert_true(answered);
	assert_int_equal(result, GS_OK);
	assert_int_equal(pthread_join(l.t, NULL), 0);
	/* answered already: no wait at all */
	t0 = mono_ns();
	assert_int_equal(gs_region_swap_need_wait(f->r, &f->p, l.seq, LONG_NS,
	                                          &answered, &result),
	                 GS_OK);
	assert_true(answered);
	assert_true(mono_ns() - t0 < WOKEN_NS);
}

struct bell_waiter {
	struct gs_region *r;
	uint64_t took;
	bool done; /* atomic */
};

static void *bell_main(void *arg)
{
	struct bell_waiter *b = arg;
	uint64_t t0 = mono_ns();

	gs_region_swap_bell_wait(b->r, LONG_NS);
	b->took = mono_ns() - t0;
	__atomic_store_n(&b->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void posting_a_need_rings_the_daemons_bell(void **state)
{
	struct fx *f = *state;
	struct bell_waiter b = {.r = f->r};
	pthread_t t;
	uint32_t seq;

	assert_int_equal(pthread_create(&t, NULL, bell_main, &b), 0);
	/* a need posted before the sleeper sleeps is the poll's to find:
	 * post until it wakes (it sleeps within milliseconds) */
	for (int i = 0; i < 40 && !__atomic_load_n(&b.done, __ATOMIC_ACQUIRE);
	     i++) {
		sleep_ms(100);
		assert_int_equal(
		    gs_region_swap_need(f->r, &f->p, f->dev, MiB, 1000, &seq),
		    GS_OK);
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(b.took < WOKEN_NS);
}

static void request_it(struct later *l)
{
	uint32_t seq;

	assert_int_equal(
	    gs_region_swap_request(l->f->r, &l->f->s, GS_SWAP_VERB_OUT, &seq),
	    GS_OK);
}

static void a_request_wakes_the_watcher_and_its_answer_the_asker(void **state)
{
	struct fx *f = *state;
	struct later l = {.f = f, .ms = 50, .fn = request_it};
	enum gs_swap_verb verb = GS_SWAP_VERB_NONE;
	uint32_t seen, seq;
	uint64_t t0;

	assert_int_equal(gs_region_swap_poll(f->r, &f->p, &verb, &seen), GS_OK);
	later_start(&l);
	t0 = mono_ns();
	assert_int_equal(
	    gs_region_swap_poll_wait(f->r, &f->p, seen, LONG_NS, &verb, &seq),
	    GS_OK);
	assert_true(mono_ns() - t0 < WOKEN_NS);
	assert_int_equal(seq, seen + 1);
	assert_int_equal(verb, GS_SWAP_VERB_OUT);
	assert_int_equal(pthread_join(l.t, NULL), 0);
}

static void answer_request(struct later *l)
{
	assert_int_equal(gs_region_swap_answer(l->f->r, &l->f->p, l->seq,
	                                       GS_SWAP_VERB_OUT, GS_OK,
	                                       64 * MiB, GS_SWAP_PIN_NONE, 1),
	                 GS_OK);
}

static void a_shims_answer_wakes_whoever_asked(void **state)
{
	struct fx *f = *state;
	struct later l = {.f = f, .ms = 50, .fn = answer_request};
	struct gs_swap_rec rec;
	uint64_t t0;

	assert_int_equal(
	    gs_region_swap_request(f->r, &f->s, GS_SWAP_VERB_OUT, &l.seq),
	    GS_OK);
	later_start(&l);
	t0 = mono_ns();
	assert_int_equal(
	    gs_region_swap_answer_wait(f->r, &f->s, l.seq, LONG_NS), GS_OK);
	assert_true(mono_ns() - t0 < WOKEN_NS);
	assert_int_equal(pthread_join(l.t, NULL), 0);
	assert_int_equal(gs_region_swap_read(f->r, &f->s, &rec), GS_OK);
	assert_int_equal(rec.ack_seq, l.seq);
	assert_int_equal(rec.swapped_bytes, 64 * MiB);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
	    T(a_need_is_pending_until_the_daemon_answers_it),
	    T(a_newer_need_replaces_an_unanswered_one),
	    T(activity_stamps_are_listed),
	    T(a_poll_without_a_scan_lists_the_known_owner_files),
	    T(a_need_on_a_device_out_of_range_is_refused),
	    T(needs_of_a_deleted_slice_are_not_listed),
	    T(an_answer_wakes_the_process_waiting_for_it),
	    T(posting_a_need_rings_the_daemons_bell),
	    T(a_request_wakes_the_watcher_and_its_answer_the_asker),
	    T(a_shims_answer_wakes_whoever_asked),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
