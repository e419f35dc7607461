/*
 * slice_limits.h - what a slice may use, as the shim enforces it: struct
 * gs_slice_limits, its priority and compute-mode values and its flags.
 * The region (gs/region.h) stores it in its limits file; the spec
 * (gs/spec.h, gs_spec_limits) is the one way to make it, so core reaches
 * this without the region. Types and constants only.
 */
#ifndef GS_SLICE_LIMITS_H
#define GS_SLICE_LIMITS_H

#include <stdint.h>

#include "gs/spec.h"

#define GS_REGION_NAME_MAX 64 /* slice name, NUL included */

/* struct gs_slice_limits.priority: a larger value is served first. The
 * one priority list is enum gs_priority (gs/spec.h); these are its names
 * here. */
enum gs_region_priority {
	GS_REGION_PRIO_LOW = GS_PRIORITY_LOW,
	GS_REGION_PRIO_NORMAL = GS_PRIORITY_NORMAL,
	GS_REGION_PRIO_HIGH = GS_PRIORITY_HIGH,
};

/*
 * struct gs_slice_limits.mode: what a compute limit means.
 *   STRICT  never above the limit, even on an idle GPU (the default:
 *           the speed a user measures alone is the speed they keep).
 *   SHARE   work-conserving: the limit is a guarantee; time that no other
 *           slice on the GPU wants may be used beyond it.
 */
enum gs_region_compute_mode {
	GS_REGION_COMPUTE_STRICT = GS_COMPUTE_STRICT,
	GS_REGION_COMPUTE_SHARE = GS_COMPUTE_SHARE,
};

/* struct gs_slice_limits.flags */
#define GS_SLICE_EPHEMERAL 0x1u /* made by `gpuslice run`, gone with it */
/* Measure the GPU time of every launch even without a compute limit (for
 * --report and chargeback); without it, an unlimited slice's launches go
 * straight to the driver and its busy time is not known. */
#define GS_SLICE_MEASURE 0x2u
/* The slice's processes are clients of an MPS server: their kernels run
 * alongside other MPS clients', so the scheduler gives them no turns
 * (priority still holds), and their compute is billed in SM-time. */
#define GS_SLICE_MPS 0x4u
/* The slice's books, token buckets and process entries are in a file of
 * its own, <dir>/books/usage.0.<slot> (root's directory, 0700), not in
 * the shared usage.0: uid 0's slices of a privileged region (those an
 * administrator made for others, e.g. Kubernetes pods). The region sets
 * and clears it itself (gs_region_books_private); callers' value is
 * ignored, and gs_region_slice_limits() leaves it out (it returns what
 * the creator set; gs_region_slice_private_books() says). In a container
 * the file is bind-mounted at <dir>/usage.0, so one pod holds its own
 * slice's books and no other's. */
#define GS_SLICE_PRIVATE_BOOKS 0x8u
/* The slice's memory may be swapped to host memory (spec swap=allow on a
 * node with swap.oversubscribe > 1, or `gpuslice run --swap`): the shim
 * backs its plain and pitched allocations with movable memory (the
 * driver's virtual memory management; docs/swap.md). */
#define GS_SLICE_SWAP 0x10u
/* The slice is parked (a quota reclaim's victim kept instead of killed,
 * gs/park.h): its memory is out or going out, and it resumes when there
 * is room. The daemon sets it while the slice is parked. Its processes
 * wait: a process that joins it starts stopped at its first GPU call,
 * and an allocation's wait for memory does not give up (docs/swap.md,
 * "Parking"). */
#define GS_SLICE_IS_PARKED 0x20u

/* What a slice may use. The same caps apply on every GPU it uses. */
struct gs_slice_limits {
	char name[GS_REGION_NAME_MAX];
	uint64_t mem_limit;   /* bytes per GPU; 0 = no cap */
	uint32_t compute_pct; /* % of each GPU's time, 1..100; 0 = no limit */
	uint32_t priority;    /* enum gs_region_priority */
	uint32_t weight;      /* 1..1000: share of turns among equals */
	uint32_t mode;        /* enum gs_region_compute_mode */
	uint32_t flags;       /* GS_SLICE_* */
	/* Who may attach processes: this uid (and root). 0 = anyone the
	 * slice's name is handed to (slices an administrator made for
	 * others, e.g. Kubernetes pods). Written only by the region's
	 * creator, in the limits file tenants cannot write. */
	uint32_t owner_uid;
};

#endif
