/*
 * test_swap.c - the swap policy (gs/swap.h): one test per rule, a random
 * check against a naive reference of the victim order, and models of
 * alternating demand (slices taking turns on a GPU that holds fewer of
 * them than they are) showing every request is served within a bounded
 * wait and the number of swaps stays bounded by the minimum residency.
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

#include "gs/swap.h"

#define GIB (1024ULL * 1024 * 1024)
#define SEC (1000000000LL)

static struct gs_swap_config cfg_of(uint64_t gpu, uint64_t host)
{
	struct gs_swap_config c = {
	    .gpu_memory_bytes = gpu,
	    .host_memory_bytes = host,
	    .idle_after_ns = 30 * SEC,
	    .min_residency_ns = 10 * SEC,
	};
	return c;
}

/* A resident, swappable, normal-priority slice active at `active`. */
static struct gs_swap_slice sl(int64_t id, uint64_t resident, int64_t active)
{
	struct gs_swap_slice s = {
	    .id = id,
	    .promised_bytes = resident,
	    .resident_bytes = resident,
	    .swapped_bytes = 0,
	    .priority = GS_PRIORITY_NORMAL,
	    .borrowing = false,
	    .last_active_ns = active,
	    .resident_since_ns = 0,
	    .swap_allowed = true,
	    .pinned = NULL,
	};
	return s;
}

static gs_err ask(const struct gs_swap_config *c, struct gs_swap_slice *s,
                  size_t n, size_t req, uint64_t need, int64_t now,
                  struct gs_swap_plan *p)
{
	struct gs_errbuf eb = {0};

	return gs_swap_plan_request(c, s, n, req, need, now, p, &eb);
}

/* ---- one test per rule ---------------------------------------------- */

static void request_with_room_swaps_nothing_out(void **state)
{
	(void)state;
	struct gs_swap_config c = cfg_of(24 * GIB, 64 * GIB);
	struct gs_swap_slice s[] = {sl(1, 8 * GIB, 0), sl(2, 4 * GIB, 0)};
	struct gs_swap_plan p;

	assert_int_equal(ask(&c, s, 2, 1, 8 * GIB, 100 * SEC, &p), GS_OK);
	assert_int_equal(p.n_moves, 0);
}

static void
idle_slice_is_swapped_out_before_active_lower_priority_one(void **state)
{
	(void)state;
	struct gs_swap_config c = cfg_of(24 * GIB, 64 * GIB);
	int64_t now = 100 * SEC;
	struct gs_swap_slice s[] = {sl(1, 8 * GIB, now - 1 * SEC),
	                            sl(2, 8 * GIB, now - 60 * SEC),
	                            sl(3, 8 * GIB, now)};
	struct gs_swap_plan p;

	s[0].priority = GS_PRIORITY_LOW;  /* active, low */
	s[1].priority = GS_PRIORITY_HIGH; /* idle, high */
	s[2].priority = GS_PRIORITY_HIGH; /* requester */
	assert_int_equal(ask(&c, s, 3, 2, 4 * GIB, now, &p), GS_OK);
	assert_int_equal(p.n_moves, 1);
	assert_int_equal(p.moves[0].slice, 1);
	assert_int_equal(p.moves[0].dir, GS_SWAP_OUT);
	assert_int_equal(p.moves[0].bytes, 8 * GIB);
}

static void lower_priority_is_swapped_out_before_higher(void **state)
{
	(void)state;
	struct gs_swap_config c = cfg_of(24 * GIB, 64 * GIB);
	int64_t now = 100 * SEC;
	struct gs_swap_slice s[] = {sl(1, 8 * GIB, 0), sl(2, 8 * GIB, 10 * SEC),
	                            sl(3, 8 * GIB, now)};
	struct gs_swap_plan p;

	s[0].priority = GS_PRIORITY_HIGH; /* idle longer, but high */
	s[1].priority = GS_PRIORITY_LOW;
	assert_int_equal(ask(&c, s, 3, 2, 4 * GIB, now, &p), GS_OK);
	assert_int_equal(p.n_moves, 1);
	assert_int_equal(p.moves[0].slice, 1);
}

static void borrower_is_swapped_out_before_slice_within_guarantee(void **state)
{
	(void)state;
	struct gs_swap_config c = cfg_of(24 * GIB, 64 * GIB);
	int64_t now = 100 * SEC;
	struct gs_swap_slice s[] = {sl(1, 8 * GIB, 0), sl(2, 8 * GIB, 10 * SEC),
	                            sl(3, 8 * GIB, now)};
	struct gs_swap_plan p;

	s[1].borrowing = true; /* more recently active, but borrowing */
	assert_int_equal(ask(&c, s, 3, 2, 4 * GIB, now, &p), GS_OK);
	assert_int_equal(p.n_moves, 1);
	assert_int_equal(p.moves[0].slice, 1);
}

static void least_recently_active_is_swapped_out_first(void **state)
{
	(void)state;
	struct gs_swap_config c = cfg_of(24 * GIB, 64 * GIB);
	int64_t now = 100 * SEC;
	struct gs_swap_slice s[] = {sl(1, 8 * GIB, 20 * SEC),
	                            sl(2, 8 * GIB, 10 * SEC),
	                            sl(3, 8 * GIB, now)};
	struct gs_swap_plan p;

	assert_int_equal(ask(&c, s, 3, 2, 4 * GIB, now, &p), GS_OK);
	assert_int_equal(p.n_moves, 1);
	assert_int_equal(p.moves[0].slice, 1);
	/* needing more takes the next one too, in order */
	assert_int_equal(ask(&c, s, 3, 2, 12 * GIB, now, &p), GS_OK);
	assert_int_equal(p.n_moves, 2);
	assert_int_equal(p.moves[0].slice, 1);
	assert_int_equal(p.moves[1].slice, 0);
	assert_int_equal(p.freed_bytes, 16 * GIB);
}

static void active_slice_of_equal_priority_keeps_its_memory(void **state)
{
	(void)state;
	struct gs_swap_config c = cfg_of(24 * GIB, 64 * GIB);
	int64_t now = 100 * SEC;
	struct gs_swap_slice s[] = {sl(1, 16 * GIB, now - SEC),
	                            sl(2, 8 * GIB, now)};
	struct gs_swap_plan p;

	assert_int_equal(ask(&c, s, 2, 1, 4 * GIB, now, &p), GS_ERR_NO_FIT);
	assert_int_equal(p.n_moves, 0);
	assert_non_null(strstr(
	    p.why, "17179869184 by active slices of equal or higher priority"));
	/* a lower-priority active one gives way */
	s[0].priority = GS_PRIORITY_LOW;
	assert_int_equal(ask(&c, s, 2, 1, 4 * GIB, now, &p), GS_OK);
	assert_int_equal(p.n_moves, 1);
	assert_int_equal(p.moves[0].slice, 0);
}

static void
swapped_requester_takes_turns_with_active_equal_priority(void **state)
{
	(void)state;
	struct gs_swap_config c = cfg_of(16 * GIB, 64 * GIB);
	int64_t now = 100 * SEC;
	struct gs_swap_slice s[] = {sl(1, 9 * GIB, now - SEC), sl(2, 0, now)};
	struct gs_swap_plan p;

	s[1].swapped_bytes = 9 * GIB;
	assert_int_equal(ask(&c, s, 2, 1, 0, now, &p), GS_OK);
	assert_int_equal(p.n_moves, 2);
	assert_int_equal(p.moves[0].slice, 0);
	assert_int_equal(p.moves[0].dir, GS_SWAP_OUT);
	assert_int_equal(p.moves[1].slice, 1);
	assert_int_equal(p.moves[1].dir, GS_SWAP_IN);
	assert_int_equal(p.moves[1].bytes, 9 * GIB);
	/* but not with an active higher-priority one */
	s[0].priority = GS_PRIORITY_HIGH;
	assert_int_equal(ask(&c, s, 2, 1, 0, now, &p), GS_ERR_NO_FIT);
}

static void request_beyond_physical_memory_is_refused_not_swapped(void **state)
{
	(void)state;
	struct gs_swap_config c = cfg_of(24 * GIB, 64 * GIB);
	int64_t now = 100 * SEC;
	struct gs_swap_slice s[] = {sl(1, 8 * GIB, 0), sl(2, 10 * GIB, now)};
	struct gs_swap_plan p;

	/* 10 GiB held + 16 GiB asked > 24 GiB: swapping slice 1 out
	 * would not be enough */
	assert_int_equal(ask(&c, s, 2, 1, 16 * GIB, now, &p), GS_ERR_NO_FIT);
	assert_int_equal(p.n_moves, 0);
	assert_string_equal(
	    p.why, "slice 2 needs 27917287424 bytes on a GPU of 25769803776");
	/* exactly the GPU's memory is served */
	assert_int_equal(ask(&c, s, 2, 1, 14 * GIB, now, &p), GS_OK);
	assert_int_equal(p.n_moves, 1);
}

static void minimum_residency_makes_request_wait_until_it_ends(void **state)
{
	(void)state;
	struct gs_swap_config c = cfg_of(16 * GIB, 64 * GIB);
	int64_t now = 100 * SEC;
	struct gs_swap_slice s[] = {sl(1, 9 * GIB, 0), sl(2, 5 * GIB, now)};
	struct gs_swap_plan p;

	s[0].resident_since_ns = now - 3 * SEC; /* came in 3 s ago */
	assert_int_equal(ask(&c, s, 2, 1, 4 * GIB, now, &p), GS_ERR_BUSY);
	assert_int_equal(p.n_moves, 0);
	assert_int_equal(p.retry_at_ns, now + 7 * SEC);
	assert_string_equal(
	    p.why, "slice 2 waits for slice 1 to finish its minimum residency");
	assert_int_equal(ask(&c, s, 2, 1, 4 * GIB, now + 7 * SEC, &p), GS_OK);
	assert_int_equal(p.n_moves, 1);
}

static void swap_never_and_pinned_slices_are_never_victims(void **state)
{
	(void)state;
	struct gs_swap_config c = cfg_of(24 * GIB, 64 * GIB);
	int64_t now = 100 * SEC;
	struct gs_swap_slice s[] = {sl(1, 8 * GIB, 0), sl(2, 8 * GIB, 0),
	                            sl(3, 8 * GIB, now)};
	struct gs_swap_plan p;
	const char *why = NULL;

	s[0].swap_allowed = false;
	s[1].pinned = "IPC-exported allocation";
	assert_false(gs_swap_is_movable(&c, &s[0], now, &why));
	assert_string_equal(why, "swap: never");
	assert_false(gs_swap_is_movable(&c, &s[1], now, &why));
	assert_string_equal(why, "IPC-exported allocation");
	assert_int_equal(ask(&c, s, 3, 2, 4 * GIB, now, &p), GS_ERR_NO_FIT);
	assert_non_null(strstr(p.why, "17179869184 pinned or swap: never"));
	struct gs_swap_plan q;
	assert_int_equal(gs_swap_plan_idle(&c, s, 3, now, &q, NULL), GS_OK);
	assert_int_equal(q.n_moves, 0);
}

static void
host_memory_bound_passes_over_victim_that_would_not_fit(void **state)
{
	(void)state;
	/* 20 GiB of host memory, 12 already holding a swapped slice */
	struct gs_swap_config c = cfg_of(24 * GIB, 20 * GIB);
	int64_t now = 100 * SEC;
	struct gs_swap_slice s[] = {sl(1, 12 * GIB, 0), sl(2, 6 * GIB, 5 * SEC),
	                            sl(3, 6 * GIB, now), sl(4, 0, 0)};
	struct gs_swap_plan p;

	s[3].swapped_bytes = 12 * GIB;
	s[3].promised_bytes = 12 * GIB;
	/* slice 1 goes first by order but 12 + 12 > 20: slice 2 instead */
	assert_int_equal(ask(&c, s, 4, 2, 4 * GIB, now, &p), GS_OK);
	assert_int_equal(p.n_moves, 1);
	assert_int_equal(p.moves[0].slice, 1);
	/* needing more than slice 2 alone: refused, host memory said */
	assert_int_equal(ask(&c, s, 4, 2, 10 * GIB, now, &p), GS_ERR_NO_FIT);
	assert_non_null(
	    strstr(p.why, "12884901888 over the host memory for swap"));
}

static void idle_tick_swaps_nothing_on_gpu_not_oversubscribed(void **state)
{
	(void)state;
	struct gs_swap_config c = cfg_of(24 * GIB, 64 * GIB);
	struct gs_swap_slice s[] = {sl(1, 12 * GIB, 0), sl(2, 12 * GIB, 0)};
	struct gs_swap_plan p;

	assert_int_equal(gs_swap_plan_idle(&c, s, 2, 1000 * SEC, &p, NULL),
	                 GS_OK);
	assert_int_equal(p.n_moves, 0);
}

static void
idle_tick_swaps_out_idle_slices_until_active_ones_can_grow(void **state)
{
	(void)state;
	struct gs_swap_config c = cfg_of(24 * GIB, 64 * GIB);
	int64_t now = 1000 * SEC;
	/* promised 10 each, 40 on 24: two active ones may grow to 20 */
	struct gs_swap_slice s[] = {sl(1, 2 * GIB, now), sl(2, 2 * GIB, now),
	                            sl(3, 9 * GIB, 100 * SEC),
	                            sl(4, 9 * GIB, 200 * SEC)};
	struct gs_swap_plan p;

	for (int i = 0; i < 4; i++)
		s[i].promised_bytes = 10 * GIB;
	/* demand 20 + 18 = 38; one out leaves 29, both out 20 */
	assert_int_equal(gs_swap_plan_idle(&c, s, 4, now, &p, NULL), GS_OK);
	assert_int_equal(p.n_moves, 2);
	assert_int_equal(p.moves[0].slice, 2);
	assert_int_equal(p.moves[1].slice, 3);
	/* with only one active slice, one swap-out is enough */
	s[1].last_active_ns = 0;
	s[1].resident_bytes = 0;
	assert_int_equal(gs_swap_plan_idle(&c, s, 4, now, &p, NULL), GS_OK);
	assert_int_equal(p.n_moves, 1);
	assert_int_equal(p.moves[0].slice, 2);
}

static void policy_rejects_bad_arguments_with_a_message(void **state)
{
	(void)state;
	struct gs_swap_config c = cfg_of(0, 0);
	struct gs_swap_slice s[] = {sl(1, GIB, 0)};
	struct gs_swap_plan p;
	struct gs_errbuf eb = {0};

	assert_int_equal(gs_swap_plan_request(&c, s, 1, 0, 1, 0, &p, &eb),
	                 GS_ERR_INVALID);
	assert_string_equal(eb.msg, "swap policy: the GPU has no memory");
	c = cfg_of(GIB, 0);
	gs_errbuf_init(&eb);
	assert_int_equal(gs_swap_plan_request(&c, s, 1, 3, 1, 0, &p, &eb),
	                 GS_ERR_INVALID);
	assert_string_equal(eb.msg, "swap policy: requester 3 of 1 slices");
}

/* ---- the order against a naive reference ------------------------------- */

/* The rule-2 key, compared field by field as the header lists them. */
static int ref_cmp(const struct gs_swap_config *c,
                   const struct gs_swap_slice *a, const struct gs_swap_slice *b,
                   int64_t now)
{
	int ia = now - a->last_active_ns >= c->idle_after_ns;
	int ib = now - b->last_active_ns >= c->idle_after_ns;
	int64_t ka[5] = {!ia, a->priority, !a->borrowing, a->last_active_ns,
	                 a->id};
	int64_t kb[5] = {!ib, b->priority, !b->borrowing, b->last_active_ns,
	                 b->id};

	for (int i = 0; i < 5; i++)
		if (ka[i] != kb[i])
			return ka[i] < kb[i] ? -1 : 1;
	return 0;
}

static void victims_are_shortest_prefix_of_reference_order(void **state)
{
	(void)state;
	unsigned seed = 27;
	int served = 0;

	for (int round = 0; round < 2000; round++) {
		struct gs_swap_config c = cfg_of(80 * GIB, UINT64_MAX / 4);
		struct gs_swap_slice s[12];
		size_t n = 2 + (size_t)(rand_r(&seed) % 10), req;
		int64_t now = 1000 * SEC;
		uint64_t used = 0;

		for (size_t i = 0; i < n; i++) {
			uint64_t r = (uint64_t)(rand_r(&seed) % 9) * GIB;
			if (used + r > c.gpu_memory_bytes)
				r = 0;
			used += r;
			s[i] = sl((int64_t)i + 1, r,
			          now - (rand_r(&seed) % 60) * SEC);
			s[i].priority = (enum gs_priority)(rand_r(&seed) % 3);
			s[i].borrowing = rand_r(&seed) % 2;
			s[i].swap_allowed = rand_r(&seed) % 5 != 0;
			s[i].resident_since_ns =
			    now - (rand_r(&seed) % 20) * SEC;
		}
		req = (size_t)rand_r(&seed) % n;
		s[req].last_active_ns = now;
		uint64_t need = (uint64_t)(rand_r(&seed) % 40) * GIB;
		struct gs_swap_plan p;
		gs_err e = ask(&c, s, n, req, need, now, &p);

		/* the reference: eligible victims by selection sort */
		size_t el[12], k = 0;
		for (size_t i = 0; i < n; i++) {
			const struct gs_swap_slice *v = &s[i];
			bool idle = now - v->last_active_ns >= c.idle_after_ns;
			if (i == req || !v->resident_bytes || !v->swap_allowed)
				continue;
			if (!idle && v->priority >= s[req].priority)
				continue;
			if (now - v->resident_since_ns < c.min_residency_ns)
				continue;
			el[k++] = i;
		}
		for (size_t i = 0; i < k; i++)
			for (size_t j = i + 1; j < k; j++)
				if (ref_cmp(&c, &s[el[j]], &s[el[i]], now) <
				    0) {
					size_t t = el[i];
					el[i] = el[j];
					el[j] = t;
				}
		uint64_t free_b = c.gpu_memory_bytes - used, freed = 0;
		size_t take = 0;
		while (need > free_b + freed && take < k)
			freed += s[el[take++]].resident_bytes;
		if (s[req].resident_bytes + need > c.gpu_memory_bytes) {
			assert_int_equal(e, GS_ERR_NO_FIT);
			continue;
		}
		if (need > free_b + freed) {
			assert_true(e == GS_ERR_NO_FIT || e == GS_ERR_BUSY);
			assert_int_equal(p.n_moves, 0);
			continue;
		}
		assert_int_equal(e, GS_OK);
		assert_int_equal(p.n_moves, take);
		for (size_t i = 0; i < take; i++)
			assert_int_equal(p.moves[i].slice, el[i]);
		served++;
	}
	assert_true(served > 200);
}

/* ---- alternating demand -------------------------------------------------- */

struct model_result {
	int swaps;
	int64_t max_wait_ns;
	int served;
};

/*
 * `n` slices of `size` bytes each on a GPU of `gpu` bytes take turns:
 * every `turn` seconds the next one becomes active and calls the GPU
 * every second of its turn. A swapped-out active slice asks to come back
 * and waits (BUSY, or refused because others are active) until served;
 * the wait is measured from its first ask. Runs for `secs` seconds with
 * the given minimum residency, checking after every step that the GPU
 * and host memory are never overcommitted.
 */
static struct model_result run_model(size_t n, uint64_t size, uint64_t gpu,
                                     int turn, int secs, int64_t min_res)
{
	struct gs_swap_config c = cfg_of(gpu, (uint64_t)n * size);
	struct gs_swap_slice s[8];
	int64_t asked[8];
	struct model_result res = {0, 0, 0};
	uint64_t used = 0;

	c.min_residency_ns = min_res;
	for (size_t i = 0; i < n; i++) {
		bool fits = used + size <= gpu;
		s[i] = sl((int64_t)i + 1, fits ? size : 0, 0);
		s[i].swapped_bytes = fits ? 0 : size;
		s[i].promised_bytes = size;
		used += fits ? size : 0;
		asked[i] = -1;
	}
	for (int t = 0; t < secs; t++) {
		int64_t now = (int64_t)t * SEC;
		size_t a = (size_t)(t / turn) % n;

		if (s[a].swapped_bytes == 0)
			s[a].last_active_ns = now;
		else if (asked[a] < 0)
			asked[a] = now;
		/* blocked processes keep asking, the longest waiting first */
		for (;;) {
			size_t b = n;
			for (size_t i = 0; i < n; i++)
				if (asked[i] >= 0 &&
				    (b == n || asked[i] < asked[b]))
					b = i;
			if (b == n)
				break;
			a = b;
			struct gs_swap_plan p;
			gs_err e = ask(&c, s, n, a, 0, now, &p);

			assert_true(e == GS_OK || e == GS_ERR_BUSY ||
			            e == GS_ERR_NO_FIT);
			if (e == GS_OK) {
				for (size_t m = 0; m < p.n_moves; m++) {
					struct gs_swap_slice *v =
					    &s[p.moves[m].slice];
					if (p.moves[m].dir == GS_SWAP_OUT) {
						v->swapped_bytes +=
						    v->resident_bytes;
						v->resident_bytes = 0;
					} else {
						v->resident_bytes +=
						    v->swapped_bytes;
						v->swapped_bytes = 0;
						v->resident_since_ns = now;
					}
					res.swaps++;
				}
				s[a].last_active_ns = now;
				if (now - asked[a] > res.max_wait_ns)
					res.max_wait_ns = now - asked[a];
				asked[a] = -1;
				res.served++;
			} else {
				break;
			}
		}
		uint64_t r = 0, h = 0;
		for (size_t i = 0; i < n; i++) {
			r += s[i].resident_bytes;
			h += s[i].swapped_bytes;
		}
		assert_true(r <= c.gpu_memory_bytes);
		assert_true(h <= c.host_memory_bytes);
	}
	/* a request still open at the end counts as a wait so far: none is
	 * left unserved for longer than the served ones waited */
	for (size_t i = 0; i < n; i++)
		if (asked[i] >= 0 &&
		    (int64_t)(secs - 1) * SEC - asked[i] > res.max_wait_ns)
			res.max_wait_ns = (int64_t)(secs - 1) * SEC - asked[i];
	return res;
}

static void
alternating_demand_does_not_thrash_and_serves_every_request(void **state)
{
	(void)state;
	/* two 9 GiB slices on 16 GiB, turns of 2 s, minimum residency 10 s,
	 * for 10 minutes */
	struct model_result r =
	    run_model(2, 9 * GIB, 16 * GIB, 2, 600, 10 * SEC);

	fprintf(stderr,
	        "two slices: %d swaps, %d served, longest wait %lld s\n",
	        r.swaps, r.served, (long long)(r.max_wait_ns / SEC));
	/* each trade of places is two swaps, at most one trade per
	 * minimum residency */
	assert_true(r.swaps <= 2 * (600 / 10 + 1));
	assert_true(r.served >= 600 / 10 - 1);
	assert_true(r.max_wait_ns <= 10 * SEC);

	/* without the minimum residency they trade on every turn */
	struct model_result t = run_model(2, 9 * GIB, 16 * GIB, 2, 600, 0);
	assert_true(t.swaps >= 2 * (600 / 2) - 2);
	assert_true(t.swaps > 4 * r.swaps);
}

static void
three_slices_taking_turns_are_each_served_within_a_bound(void **state)
{
	(void)state;
	/* three 10 GiB slices on 24 GiB: two fit, turns of 3 s */
	struct model_result r =
	    run_model(3, 10 * GIB, 24 * GIB, 3, 900, 10 * SEC);

	struct model_result t = run_model(3, 10 * GIB, 24 * GIB, 3, 900, 0);

	fprintf(
	    stderr,
	    "three slices: %d swaps (%d without minimum residency), %d served, longest wait %lld s\n",
	    r.swaps, t.swaps, r.served, (long long)(r.max_wait_ns / SEC));
	assert_true(r.served > 0);
	/* a slice leaves at most once per minimum residency it spent in */
	assert_true(r.swaps <= 2 * 3 * (900 / 10 + 1));
	assert_true(t.swaps > r.swaps);
	/* a request waits at most one minimum residency plus a step */
	assert_true(r.max_wait_ns <= 11 * SEC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(request_with_room_swaps_nothing_out),
	    cmocka_unit_test(
	        idle_slice_is_swapped_out_before_active_lower_priority_one),
	    cmocka_unit_test(lower_priority_is_swapped_out_before_higher),
	    cmocka_unit_test(
	        borrower_is_swapped_out_before_slice_within_guarantee),
	    cmocka_unit_test(least_recently_active_is_swapped_out_first),
	    cmocka_unit_test(active_slice_of_equal_priority_keeps_its_memory),
	    cmocka_unit_test(
	        swapped_requester_takes_turns_with_active_equal_priority),
	    cmocka_unit_test(
	        request_beyond_physical_memory_is_refused_not_swapped),
	    cmocka_unit_test(
	        minimum_residency_makes_request_wait_until_it_ends),
	    cmocka_unit_test(swap_never_and_pinned_slices_are_never_victims),
	    cmocka_unit_test(
	        host_memory_bound_passes_over_victim_that_would_not_fit),
	    cmocka_unit_test(idle_tick_swaps_nothing_on_gpu_not_oversubscribed),
	    cmocka_unit_test(
	        idle_tick_swaps_out_idle_slices_until_active_ones_can_grow),
	    cmocka_unit_test(policy_rejects_bad_arguments_with_a_message),
	    cmocka_unit_test(victims_are_shortest_prefix_of_reference_order),
	    cmocka_unit_test(
	        alternating_demand_does_not_thrash_and_serves_every_request),
	    cmocka_unit_test(
	        three_slices_taking_turns_are_each_served_within_a_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
