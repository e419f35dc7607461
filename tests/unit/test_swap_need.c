/*
 * test_swap_need.c - the need protocol of the swap record
 * (gs/region_swap.h, region/swaprec.c): a process posts how much more GPU
 * memory it needs, the daemon lists the pending needs and answers them,
 * the process reads the answer; a newer need replaces an older one, an
 * answer to the older one is dropped, and the needs of a process whose
 * slice is gone are not listed. Works in a fresh region directory under
 * /tmp, with one handle playing both the process and the daemon.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/region.h"
#include "gs/region_swap.h"

#define MiB (1ULL << 20)

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
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
