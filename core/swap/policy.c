/*
 * policy.c - the swap policy (gs/swap.h): which slices on a GPU are
 * swapped out to make room for a request or at the idle tick, in which
 * order, and when a request must wait or be refused.
 *
 * Both questions work the same way: list the slices that may give up
 * their GPU memory, sort them by gs_swap_before(), and take the shortest
 * prefix that frees enough, passing over any whose contents would take
 * host memory past its bound. Slices are few (a GPU holds tens), so the
 * sort is an insertion sort over indices on the stack.
 *
 * Invariants of every plan: no slice appears twice; the swap-outs'
 * bytes plus what is already swapped never exceed cfg.host_memory_bytes;
 * the requester is never a victim; a swap-in is last.
 *
 * Pure: no I/O, clock, globals or allocation.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gs/swap.h"

bool gs_swap_is_idle(const struct gs_swap_config *cfg,
                     const struct gs_swap_slice *s, int64_t now_ns)
{
	return now_ns - s->last_active_ns >= cfg->idle_after_ns;
}

bool gs_swap_is_movable(const struct gs_swap_config *cfg,
                        const struct gs_swap_slice *s, int64_t now_ns,
                        const char **why)
{
	const char *no = NULL;

	if (!s->swap_allowed)
		no = "swap: never";
	else if (s->pinned)
		no = s->pinned;
	else if (s->resident_bytes == 0)
		no = "nothing on the GPU";
	else if (now_ns - s->resident_since_ns < cfg->min_residency_ns)
		no = "within its minimum residency";
	if (no && why)
		*why = no;
	return no == NULL;
}

bool gs_swap_before(const struct gs_swap_config *cfg,
                    const struct gs_swap_slice *a,
                    const struct gs_swap_slice *b, int64_t now_ns)
{
	bool ia = gs_swap_is_idle(cfg, a, now_ns);
	bool ib = gs_swap_is_idle(cfg, b, now_ns);

	if (ia != ib)
		return ia;
	if (a->priority != b->priority)
		return a->priority < b->priority;
	if (a->borrowing != b->borrowing)
		return a->borrowing;
	if (a->last_active_ns != b->last_active_ns)
		return a->last_active_ns < b->last_active_ns;
	return a->id < b->id;
}

static gs_err check_args(const struct gs_swap_config *cfg,
                         const struct gs_swap_slice *slices, size_t n,
                         struct gs_swap_plan *plan, struct gs_errbuf *eb)
{
	if (plan)
		memset(plan, 0, sizeof(*plan));
	if (!cfg || !plan || (n > 0 && !slices))
		return gs_fail(eb, GS_ERR_INVALID,
		               "swap policy: missing argument");
	if (n > GS_SWAP_SLICES_MAX)
		return gs_fail(eb, GS_ERR_INVALID,
		               "swap policy: %zu slices on one GPU, at most %d",
		               n, GS_SWAP_SLICES_MAX);
	if (cfg->gpu_memory_bytes == 0)
		return gs_fail(eb, GS_ERR_INVALID,
		               "swap policy: the GPU has no memory");
	if (cfg->idle_after_ns < 0 || cfg->min_residency_ns < 0)
		return gs_fail(
		    eb, GS_ERR_INVALID,
		    "swap policy: negative idle_after or minimum residency");
	return GS_OK;
}

/* Sorts idx[0..k) by gs_swap_before. */
static void sort_victims(const struct gs_swap_config *cfg,
                         const struct gs_swap_slice *slices, size_t *idx,
                         size_t k, int64_t now_ns)
{
	for (size_t i = 1; i < k; i++) {
		size_t v = idx[i], j = i;

		while (j > 0 && gs_swap_before(cfg, &slices[v],
		                               &slices[idx[j - 1]], now_ns)) {
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = v;
	}
}

static uint64_t sum_resident(const struct gs_swap_slice *slices, size_t n)
{
	uint64_t t = 0;

	for (size_t i = 0; i < n; i++)
		t += slices[i].resident_bytes;
	return t;
}

static uint64_t sum_swapped(const struct gs_swap_slice *slices, size_t n)
{
	uint64_t t = 0;

	for (size_t i = 0; i < n; i++)
		t += slices[i].swapped_bytes;
	return t;
}

static void add_move(struct gs_swap_plan *plan, size_t slice,
                     enum gs_swap_dir dir, uint64_t bytes)
{
	plan->moves[plan->n_moves].slice = slice;
	plan->moves[plan->n_moves].dir = dir;
	plan->moves[plan->n_moves].bytes = bytes;
	plan->n_moves++;
	if (dir == GS_SWAP_OUT)
		plan->freed_bytes += bytes;
}

/* Bytes blocked from a request, by reason, for the refusal's message. */
struct blocked {
	uint64_t protected_bytes; /* active, equal or higher priority */
	uint64_t unmovable_bytes; /* swap: never, or pinned */
	uint64_t host_bytes;      /* passed over: host memory full */
};

gs_err gs_swap_plan_request(const struct gs_swap_config *cfg,
                            const struct gs_swap_slice *slices, size_t n,
                            size_t requester, uint64_t need_bytes,
                            int64_t now_ns, struct gs_swap_plan *plan,
                            struct gs_errbuf *eb)
{
	size_t ready[GS_SWAP_SLICES_MAX], waiting[GS_SWAP_SLICES_MAX];
	size_t n_ready = 0, n_waiting = 0;
	struct blocked bl = {0, 0, 0};
	gs_err err = check_args(cfg, slices, n, plan, eb);

	if (err != GS_OK)
		return err;
	if (requester >= n)
		return gs_fail(eb, GS_ERR_INVALID,
		               "swap policy: requester %zu of %zu slices",
		               requester, n);

	const struct gs_swap_slice *r = &slices[requester];
	uint64_t need = r->swapped_bytes + need_bytes;
	uint64_t working = r->resident_bytes + need;
	uint64_t used = sum_resident(slices, n);
	uint64_t host_used = sum_swapped(slices, n);
	uint64_t gpu = cfg->gpu_memory_bytes;
	uint64_t free_b = used < gpu ? gpu - used : 0;

	if (working > gpu) {
		snprintf(plan->why, sizeof(plan->why),
		         "slice %" PRId64 " needs %" PRIu64
		         " bytes on a GPU of %" PRIu64,
		         r->id, working, gpu);
		return GS_ERR_NO_FIT;
	}
	if (need <= free_b)
		goto out_swap_in;

	uint64_t deficit = need - free_b;

	for (size_t i = 0; i < n; i++) {
		const struct gs_swap_slice *s = &slices[i];

		if (i == requester || s->resident_bytes == 0)
			continue;
		if (!s->swap_allowed || s->pinned) {
			bl.unmovable_bytes += s->resident_bytes;
			continue;
		}
		if (!gs_swap_is_idle(cfg, s, now_ns) &&
		    (s->priority > r->priority ||
		     (s->priority == r->priority && r->swapped_bytes == 0))) {
			bl.protected_bytes += s->resident_bytes;
			continue;
		}
		if (gs_swap_is_movable(cfg, s, now_ns, NULL))
			ready[n_ready++] = i;
		else
			waiting[n_waiting++] = i;
	}
	sort_victims(cfg, slices, ready, n_ready, now_ns);
	for (size_t k = 0; k < n_ready && plan->freed_bytes < deficit; k++) {
		const struct gs_swap_slice *s = &slices[ready[k]];

		if (host_used + plan->freed_bytes + s->resident_bytes >
		    cfg->host_memory_bytes) {
			bl.host_bytes += s->resident_bytes;
			continue;
		}
		add_move(plan, ready[k], GS_SWAP_OUT, s->resident_bytes);
	}
	if (plan->freed_bytes >= deficit)
		goto out_swap_in;

	/* Not enough now: would the slices within their minimum residency
	 * make it, taken in the order they leave it? */
	uint64_t later = plan->freed_bytes;

	for (size_t i = 1; i < n_waiting; i++) {
		size_t v = waiting[i], j = i;

		while (j > 0 && slices[v].resident_since_ns <
		                    slices[waiting[j - 1]].resident_since_ns) {
			waiting[j] = waiting[j - 1];
			j--;
		}
		waiting[j] = v;
	}
	for (size_t k = 0; k < n_waiting; k++) {
		const struct gs_swap_slice *s = &slices[waiting[k]];

		if (host_used + later + s->resident_bytes >
		    cfg->host_memory_bytes) {
			bl.host_bytes += s->resident_bytes;
			continue;
		}
		later += s->resident_bytes;
		if (later >= deficit) {
			plan->n_moves = 0;
			plan->freed_bytes = 0;
			plan->retry_at_ns =
			    s->resident_since_ns + cfg->min_residency_ns;
			snprintf(plan->why, sizeof(plan->why),
			         "slice %" PRId64 " waits for slice %" PRId64
			         " to finish its minimum residency",
			         r->id, s->id);
			return GS_ERR_BUSY;
		}
	}
	snprintf(
	    plan->why, sizeof(plan->why),
	    "slice %" PRId64 " needs %" PRIu64 " more bytes; held: %" PRIu64
	    " by active slices of equal or higher priority, %" PRIu64
	    " pinned or swap: never, %" PRIu64 " over the host memory for swap",
	    r->id, deficit, bl.protected_bytes, bl.unmovable_bytes,
	    bl.host_bytes);
	plan->n_moves = 0;
	plan->freed_bytes = 0;
	return GS_ERR_NO_FIT;

out_swap_in:
	if (r->swapped_bytes > 0)
		add_move(plan, requester, GS_SWAP_IN, r->swapped_bytes);
	return GS_OK;
}

gs_err gs_swap_plan_idle(const struct gs_swap_config *cfg,
                         const struct gs_swap_slice *slices, size_t n,
                         int64_t now_ns, struct gs_swap_plan *plan,
                         struct gs_errbuf *eb)
{
	size_t idx[GS_SWAP_SLICES_MAX];
	size_t k = 0;
	uint64_t promised = 0, demand = 0;
	gs_err err = check_args(cfg, slices, n, plan, eb);

	if (err != GS_OK)
		return err;
	/* What the GPU must be able to hold: everything resident, plus what
	 * each active slice may still grow into. */
	for (size_t i = 0; i < n; i++) {
		const struct gs_swap_slice *s = &slices[i];

		promised += s->promised_bytes;
		demand += s->resident_bytes;
		if (!gs_swap_is_idle(cfg, s, now_ns) &&
		    s->promised_bytes > s->resident_bytes)
			demand += s->promised_bytes - s->resident_bytes;
		if (gs_swap_is_idle(cfg, s, now_ns) &&
		    gs_swap_is_movable(cfg, s, now_ns, NULL))
			idx[k++] = i;
	}
	if (promised <= cfg->gpu_memory_bytes)
		return GS_OK;
	sort_victims(cfg, slices, idx, k, now_ns);

	uint64_t host_used = sum_swapped(slices, n);

	for (size_t j = 0; j < k; j++) {
		const struct gs_swap_slice *s = &slices[idx[j]];

		if (demand - plan->freed_bytes <= cfg->gpu_memory_bytes)
			break;
		if (host_used + plan->freed_bytes + s->resident_bytes >
		    cfg->host_memory_bytes)
			continue;
		add_move(plan, idx[j], GS_SWAP_OUT, s->resident_bytes);
	}
	return GS_OK;
}
