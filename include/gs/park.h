/*
 * park.h - parking a quota reclaim's victim instead of killing it: who
 * may be parked, and which parked slices resume when (docs/swap.md,
 * "Parking"). The pure policy; the daemon acts on it (create.c parks,
 * swapper.c swaps a parked slice out and resumes it).
 *
 * A team reclaiming its guarantee (gs/quota.h) preempts borrowed slices.
 * Where a victim's memory can move, it is parked: swapped out to host
 * memory, its processes stopped at their next GPU call (the shim's swap
 * gate), and its promised memory and compute taken out of the GPU's
 * admission and its team's quota while it is parked. A parked slice
 * keeps its slot, its GPU and its processes.
 *
 *   live --create (reclaim), gs_park_may_park--> PARKED
 *   PARKED --gs_park_plan_resume (room again)--> live (counted again,
 *            its memory swapped back in as the swap policy allows)
 *   PARKED --swap-out failed--> gone (the reclaim's kill path)
 *
 * Who may be parked (gs_park_may_park): swap is on on the node (the
 * daemon moves memory); the slice is a fraction of a GPU outside MIG
 * (the only memory the swap mechanism moves); swap: allow; not pinned
 * (memory the shim cannot move); its processes hold movable memory; and
 * host memory for swapped contents has room for what it holds on the
 * GPU. Anything else keeps today's kill, and the answer says why.
 *
 * Who resumes (gs_park_plan_resume): parked slices in order of priority
 * (higher first), then park time (earlier first), then id. Each is
 * admitted again as a request pinned to its own GPU, mode and amounts on
 * the node as it is (core's admission, gs/admission.h), with the ones
 * resumed before it counted: it resumes only when the GPU has room for
 * its promise and its team's quota admits it without reclaiming anyone.
 * So a parked slice never resumes into memory someone else was admitted
 * to. Its owner's per-user limits hold as at a create (root's slices are
 * not bound by them). One that cannot resume holds its GPU's queue: nobody parked behind
 * it on that GPU resumes before it (a smaller slice does not take the
 * room it waits for), while other GPUs go on.
 *
 * Pure: no I/O, clock, globals or locks; the input is only read.
 */
#ifndef GS_PARK_H
#define GS_PARK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gs/admission.h"
#include "gs/err.h"
#include "gs/spec.h"

#define GS_PARK_WHY_MAX 200

/* A reclaim victim, as parking needs it. Strings are lent. */
struct gs_park_victim {
	bool swap_on;            /* the node swaps (swap.oversubscribe > 1) */
	enum gs_slice_mode mode; /* as decided */
	enum gs_isolation isolation;
	enum gs_swap_mode swap;   /* its swap: allow | never */
	const char *pinned;       /* why its memory cannot move; NULL: it can */
	bool movable;             /* a process of it holds movable memory */
	uint64_t resident_bytes;  /* held on the GPU now */
	uint64_t host_free_bytes; /* swap.host_memory less all swapped now */
};

/*
 * Whether the victim may be parked instead of killed. OUT: why (when not
 * NULL and it may not): one line saying why, e.g. "its slice is swap:
 * never".
 */
bool gs_park_may_park(const struct gs_park_victim *v, char *why,
                      size_t why_len);

/* A parked slice waiting to resume. Pointers are lent. */
struct gs_park_waiting {
	const struct gs_adm_slice *slice; /* as admission counts it */
	const struct gs_slice_spec *spec; /* as asked (validated) */
	int64_t parked_ns;                /* when it was parked */
};

struct gs_park_resume {
	size_t waiting; /* index into the caller's waiting[] */
	bool borrowed;  /* above its team's guarantee once back */
};

/*
 * Which parked slices resume now, in order. `sn` is the node without
 * its parked slices (sn->n_parked is ignored: `n` is the count). OUT:
 * out[0..*n_out) (the caller gives room for n). Returns GS_OK (maybe
 * none resume), GS_ERR_INVALID for a bad argument, GS_ERR_NOMEM.
 */
gs_err gs_park_plan_resume(const struct gs_adm_snapshot *sn,
                           const struct gs_park_waiting *waiting, size_t n,
                           struct gs_park_resume *out, size_t *n_out,
                           struct gs_errbuf *eb);

/* Whether waiting slice `a` resumes before `b` (a strict total order). */
bool gs_park_before(const struct gs_park_waiting *a,
                    const struct gs_park_waiting *b);

#endif
