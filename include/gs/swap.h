/*
 * swap.h - who is swapped out of a GPU's memory and back in, and when:
 * the pure policy behind oversubscribed GPU memory (docs/swap.md).
 *
 * The daemon builds a view of one GPU (its physical memory, the slices
 * on it with what each was promised, holds on the GPU and holds in host
 * memory, and when each was last active), asks one of the two questions
 * below, and carries the answer out through the shim (a swap-out copies
 * a slice's device memory to pinned host memory and releases it; a
 * swap-in maps it back at the same addresses). Deciding reads nothing
 * else and changes nothing, so it is tested without a GPU
 * (tests/unit/test_swap.c, with a model of alternating demand).
 *
 * A slice moves whole: a swap-out takes all it holds on the GPU, a
 * swap-in brings back all it holds in host memory.
 *
 * The rules:
 *
 *   1. Only a slice with swap allowed, not pinned (memory the shim cannot
 *      move, gs_swap_slice.pinned), holding something on the GPU and past
 *      its minimum residency (resident for cfg.min_residency_ns since it
 *      last came in) may be swapped out. Minimum residency is what stops
 *      thrashing: two slices taking turns on a GPU that holds one of them
 *      trade places at most once per minimum residency.
 *   2. Victims are chosen in this order: idle (no GPU call for
 *      cfg.idle_after_ns) before active; lower priority before higher;
 *      borrowers (above their team's guarantee) before those within it;
 *      least recently active first; then the lower id (a total order, so
 *      the answer does not depend on the order of the input).
 *   3. A requester takes memory only from idle slices and from active
 *      slices of strictly lower priority: an active slice of equal or
 *      higher priority keeps its memory, so a tenant cannot push its
 *      peers out by asking. One exception makes equal priorities take
 *      turns: a requester coming back in (it has swapped contents, so
 *      its process is stopped) may also swap out active slices of its
 *      own priority, once they are past their minimum residency.
 *   4. A request is met by swapping others out only when the GPU's
 *      physical memory can hold the requester's working set (what it
 *      holds on the GPU plus what it asks for); past that, it is refused
 *      (NO_FIT) and the program sees out-of-memory as without swap.
 *   5. Host memory for swapped contents (all slices' swapped bytes) never
 *      goes past cfg.host_memory_bytes: a victim whose contents would not
 *      fit is passed over.
 *   6. The idle tick swaps out idle slices only while the GPU is
 *      oversubscribed (the promised memory of its slices is more than its
 *      physical memory), so that the memory is free when an active slice
 *      asks for it; it never swaps anything in (a swapped slice comes
 *      back when its process next calls the GPU, as a request).
 *
 * Pure: no I/O, clock, globals or locks; the input is only read.
 */
#ifndef GS_SWAP_H
#define GS_SWAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gs/err.h"
#include "gs/spec.h"

/* Slices on one GPU the policy looks at in one question. */
#define GS_SWAP_SLICES_MAX 256
#define GS_SWAP_WHY_MAX    160

/* One slice on the GPU, as the policy needs it. Strings are lent. */
struct gs_swap_slice {
	int64_t id;
	uint64_t promised_bytes; /* its memory limit */
	uint64_t resident_bytes; /* held on the GPU now */
	uint64_t swapped_bytes;  /* held in host memory now */
	enum gs_priority priority;
	bool borrowing;            /* above its team's guarantee */
	int64_t last_active_ns;    /* its last GPU call, caller's clock */
	int64_t resident_since_ns; /* when it last came in (or started) */
	bool swap_allowed;         /* swap: allow */
	const char *pinned;        /* why it cannot move; NULL: it can */
};

struct gs_swap_config {
	uint64_t gpu_memory_bytes;  /* the GPU's physical memory */
	uint64_t host_memory_bytes; /* bound on all swapped contents */
	int64_t idle_after_ns;      /* no GPU call for this long: idle */
	int64_t min_residency_ns;   /* kept in at least this long */
};

enum gs_swap_dir { GS_SWAP_OUT, GS_SWAP_IN };

struct gs_swap_move {
	size_t slice; /* index into the caller's slices */
	enum gs_swap_dir dir;
	uint64_t bytes;
};

struct gs_swap_plan {
	/* the swap-outs, in the order chosen, then at most one swap-in (the
	 * requester's swapped contents coming back) */
	size_t n_moves;
	struct gs_swap_move moves[GS_SWAP_SLICES_MAX + 1];
	uint64_t freed_bytes; /* by the swap-outs */
	/* on BUSY: when enough victims will have left their minimum
	 * residency for the request (ask again then); 0 otherwise */
	int64_t retry_at_ns;
	char why[GS_SWAP_WHY_MAX]; /* one line; "" when nothing to say */
};

/*
 * Whether `s` counts as idle at `now_ns` (rule 2).
 */
bool gs_swap_is_idle(const struct gs_swap_config *cfg,
                     const struct gs_swap_slice *s, int64_t now_ns);

/*
 * Whether `s` may be swapped out at `now_ns` (rule 1), ignoring host
 * memory. OUT: *why when not NULL and it may not: a static string, or the
 * slice's own `pinned` (lent, valid as long as the slice).
 */
bool gs_swap_is_movable(const struct gs_swap_config *cfg,
                        const struct gs_swap_slice *s, int64_t now_ns,
                        const char **why);

/*
 * Slice `requester` needs `need_bytes` more on the GPU (an allocation;
 * 0 when it only comes back in). Its swapped contents, if any, are always
 * part of the need: a swapped-out process is stopped until they are back.
 * Plans the swap-outs that make room and, when the requester has swapped
 * contents, their swap-in. OUT: *plan (always written).
 *
 * Returns GS_OK (the plan may be empty: there was room), GS_ERR_NO_FIT
 * when the request cannot be met by swapping (rule 4, or the memory is
 * held by active slices of equal or higher priority, or pinned ones, or
 * host memory is full; plan->why says which), GS_ERR_BUSY when it could
 * be met once a victim leaves its minimum residency (plan->retry_at_ns),
 * GS_ERR_INVALID for a bad argument (message in eb).
 */
gs_err gs_swap_plan_request(const struct gs_swap_config *cfg,
                            const struct gs_swap_slice *slices, size_t n,
                            size_t requester, uint64_t need_bytes,
                            int64_t now_ns, struct gs_swap_plan *plan,
                            struct gs_errbuf *eb);

/*
 * The idle tick (rule 6): the idle slices to swap out now, in order.
 * OUT: *plan (always written; empty when the GPU is not oversubscribed).
 * Returns GS_OK or GS_ERR_INVALID.
 */
gs_err gs_swap_plan_idle(const struct gs_swap_config *cfg,
                         const struct gs_swap_slice *slices, size_t n,
                         int64_t now_ns, struct gs_swap_plan *plan,
                         struct gs_errbuf *eb);

/* ---- declared oversubscription (admission) ---------------------------- */

/* What the slices on one GPU (not in MIG mode) promise. */
struct gs_swap_gpu_load {
	uint64_t promised;          /* every slice's memory */
	uint64_t never;             /* of slices with swap: never */
	uint64_t largest_swappable; /* the largest swap: allow slice */
};

/*
 * The memory admission may promise on a GPU of `physical` bytes to a
 * request of `req_bytes` (swap: never when req_never), given what is
 * promised there already and swap.oversubscribe `ratio`:
 *
 *   - ratio <= 1 (off): `physical`, as without swap;
 *   - else ratio x physical, provided every slice can still run: the
 *     slices that cannot swap, together with the largest that can, fit
 *     the physical memory (so each swappable slice's working set can be
 *     brought in beside the ones that never leave);
 *   - else load->promised: no room for the request, and `why` (when not
 *     NULL) gets one line saying so.
 *
 * Only swappable slices' memory counts towards the excess over physical.
 */
uint64_t gs_swap_oversub_capacity(uint64_t physical, double ratio,
                                  const struct gs_swap_gpu_load *load,
                                  uint64_t req_bytes, bool req_never, char *why,
                                  size_t why_size);

/* ---- the node's settings ----------------------------------------------- */

#define GS_SWAP_RATIO_MAX   100
#define GS_SWAP_SECONDS_MAX (7 * 86400)

/* Defaults (docs/swap.md). */
#define GS_SWAP_IDLE_AFTER_S    30
#define GS_SWAP_MIN_RESIDENCY_S 10

/*
 * swap.oversubscribe: a number 1..GS_SWAP_RATIO_MAX (1 = off). OUT: *out,
 * unchanged on error: GS_ERR_PARSE (not a number), GS_ERR_RANGE (below 1,
 * NaN, infinite or too large), with one line in eb.
 */
gs_err gs_swap_parse_ratio(const char *text, double *out, struct gs_errbuf *eb);

/*
 * A duration for `key` (a whole number of seconds, or with s, m or h),
 * 0..GS_SWAP_SECONDS_MAX seconds. OUT: *out in seconds, unchanged on
 * error (GS_ERR_PARSE, GS_ERR_RANGE; the message names `key`).
 */
gs_err gs_swap_parse_seconds(const char *key, const char *text, int64_t *out,
                             struct gs_errbuf *eb);

/*
 * Whether victim `a` goes before victim `b` (rule 2), for callers that
 * show the order. A strict total order.
 */
bool gs_swap_before(const struct gs_swap_config *cfg,
                    const struct gs_swap_slice *a,
                    const struct gs_swap_slice *b, int64_t now_ns);

#endif
