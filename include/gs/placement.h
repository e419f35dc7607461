/*
 * placement.h - choosing devices for slices on a node or a cluster.
 *
 * An inventory (struct gs_place_inv, opaque) holds nodes, their GPUs, the
 * MIG instances of GPUs in MIG mode, and what existing slices already
 * occupy. A request asks for one slice or a gang of slices; gs_place()
 * answers with one device per slice, or GS_ERR_NO_FIT and one line that
 * names the resource, the amount and the best candidate:
 *
 *   no GPU has 8.0 GiB free memory (best: GPU 1 with 6.5 GiB)
 *
 * Devices. A GPU not in MIG mode takes whole-GPU slices (nobody else on
 * it) and fractional slices (memory + compute, mode timeslice or mps; one
 * GPU never mixes the two, because MPS puts the GPU in exclusive-process
 * mode). A GPU in MIG mode is used only through its instances: a MIG slice
 * takes one free instance of its profile whole; layered slices (mode
 * mig+timeslice / mig+mps) share one instance the way fractional slices
 * share a GPU, compute being a percentage of the instance.
 *
 * Slice kinds (struct gs_place_item):
 *   WHOLE     a GPU with no slice on it
 *   FRACTION  memory_bytes and compute_pct free on one device; mode
 *             timeslice/mps on a GPU, mig+timeslice/mig+mps in an instance
 *             (optionally of one profile); 0 means "no claim"
 *   MIG       a free instance of mig_profile; when none exists the answer
 *             says whether a re-partition of some GPU could make one (the
 *             MIG planner, migplan.h, decides; the result names the GPU)
 *
 * Gangs, all or nothing (no device is chosen unless every slice fits):
 *   SAME_GPU     every slice on one device (fractional slices of one mode;
 *                their amounts add up)
 *   SAME_PARENT  MIG slices on instances of one physical GPU: the DRA
 *                claim with `matchAttribute: parentUUID`
 *   SAME_NODE    any slices, all on one node
 * A single slice is a gang of one (the constraint does not matter).
 *
 * Policies and what "best" means. Each device has a leftover score: its
 * free memory fraction plus its free compute fraction after the placement,
 * in millionths (for a MIG instance taken whole, the parent GPU's, where
 * an instance's compute is its share of the GPU's compute slices). A node
 * has a load: used memory over total memory plus used compute over total
 * compute, over its GPUs, in millionths. binpack takes the most loaded
 * node that fits, spread the least loaded; equal loads go to the lowest
 * node index. Within that node binpack takes the assignment with the
 * least leftover summed over the devices it touches, spread the most;
 * ties go to the assignment whose (GPU, instance) indices, read in slice
 * order, are smallest. The search is exact. Gangs on one node use a
 * depth-first search that skips devices in a state identical to one
 * already tried and checks at each step that what is left still fits in
 * total; it is bounded by GS_PLACE_SEARCH_BUDGET steps per request, and
 * result.exhausted says when the bound cut it short (a fit is then not
 * necessarily the best one; a no-fit says the search gave up).
 *
 * Speed. Arrays are flat. Each node keeps a summary (free GPUs, largest
 * free memory and compute per sharing mode, free instances per MIG
 * profile) and a tournament tree over the nodes keeps, per subtree, the
 * largest of each bound, which MIG profiles have free instances, which
 * (memory, compute) room exists on one device on a 16 x 16 grid, and the
 * range of loads of the nodes that have each kind of room. The search
 * takes subtrees best load first from a priority queue and drops those
 * whose bounds rule the request out, so the first node that fits is the
 * answer. In gs-bench-placement's churned 1000-node cluster a request
 * takes 20-45 subtrees from the queue and solves 2-3 nodes on average.
 *
 * Pure: no I/O, clock or globals. The inventory is the caller's state;
 * gs_place() only reads it, gs_place_commit() and gs_place_release()
 * change it.
 */
#ifndef GS_PLACEMENT_H
#define GS_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gs/catalog.h"
#include "gs/err.h"
#include "gs/spec.h"

#define GS_PLACE_MAX_GANG      16
#define GS_PLACE_NAME_MAX      64
#define GS_PLACE_SEARCH_BUDGET 100000

enum gs_place_policy {
	GS_PLACE_BINPACK = 0,
	GS_PLACE_SPREAD,
	/* Nodes as binpack; within the node, the assignment that leaves the
	 * least fragmentation of what the node could still host, by
	 * gpuslice's scorer (gs_trace_scorer_cost, gs/frag.h) with each GPU's
	 * free share = min(free memory, free compute) in milli-GPU; equal
	 * costs go to binpack's least leftover. Requests with MIG slices are
	 * placed as binpack. */
	GS_PLACE_FRAG,
};

struct gs_trace_scorer;

enum gs_place_gang {
	GS_GANG_SAME_NODE = 0,
	GS_GANG_SAME_GPU,
	GS_GANG_SAME_PARENT,
};

enum gs_place_kind {
	GS_PLACE_FRACTION = 0,
	GS_PLACE_WHOLE,
	GS_PLACE_MIG,
};

const char *gs_place_policy_name(enum gs_place_policy p);
gs_err gs_place_parse_policy(const char *text, enum gs_place_policy *p,
                             struct gs_errbuf *eb);
const char *gs_place_gang_name(enum gs_place_gang g);
gs_err gs_place_parse_gang(const char *text, enum gs_place_gang *g,
                           struct gs_errbuf *eb);

/* One slice: what it needs (a request) or what it holds (inventory). */
struct gs_place_item {
	enum gs_place_kind kind;
	enum gs_slice_mode mode; /* FRACTION: timeslice, mps, mig+... */
	uint64_t memory_bytes;   /* FRACTION */
	int compute_pct;         /* FRACTION: 0..100 */
	char mig_profile[GS_SPEC_PROFILE_MAX]; /* MIG; layered: "" = any */
};

/*
 * The share of one GPU with `gpu_memory_bytes` that a slice takes, in
 * milli-GPU as the FRAG policy's scorer counts it (the larger of its
 * compute share and its memory share, rounded down, 1..1000; a whole GPU
 * 1000), or -1 for a MIG slice, which is not a share of a free GPU. With
 * gpu_memory_bytes 0 only the compute share counts.
 */
int gs_place_item_milli(const struct gs_place_item *it,
                        uint64_t gpu_memory_bytes);

/* ---- inventory -------------------------------------------------------- */

struct gs_place_inv;

struct gs_place_gpu_desc {
	const char *uuid;                 /* copied; may be NULL */
	const struct gs_gpu_model *model; /* NULL: a model the catalog lacks */
	const char *model_name;           /* used when model is NULL */
	uint64_t memory_bytes;            /* 0: the model's */
	bool mig_enabled;
};

struct gs_place_mig_desc {
	const char *uuid;                     /* copied; may be NULL */
	const struct gs_mig_profile *profile; /* of the parent's model */
	int start;                            /* placement, memory slices */
	uint64_t memory_bytes;                /* 0: the profile's */
};

/* An empty inventory; free with gs_place_inv_destroy(). NULL on ENOMEM. */
struct gs_place_inv *gs_place_inv_create(void);
void gs_place_inv_destroy(struct gs_place_inv *inv);

/* Adds a node. OUT: *node, its index (0, 1, ...). */
gs_err gs_place_inv_add_node(struct gs_place_inv *inv, const char *name,
                             int *node, struct gs_errbuf *eb);
/*
 * Adds a GPU to the last node added (GPUs of a node are contiguous).
 * OUT: *gpu, its inventory-wide index. GS_ERR_INVALID without a node, a
 * model or memory size, GS_ERR_RANGE past 255 GPUs on one node.
 */
gs_err gs_place_inv_add_gpu(struct gs_place_inv *inv,
                            const struct gs_place_gpu_desc *desc, int *gpu,
                            struct gs_errbuf *eb);
/*
 * Adds a MIG instance to the last GPU added, which must be in MIG mode and
 * of a catalog model; placements must be valid and must not overlap.
 * OUT: *inst, its inventory-wide index.
 */
gs_err gs_place_inv_add_mig(struct gs_place_inv *inv,
                            const struct gs_place_mig_desc *desc, int *inst,
                            struct gs_errbuf *eb);

int gs_place_inv_node_count(const struct gs_place_inv *inv);
int gs_place_inv_gpu_count(const struct gs_place_inv *inv);
int gs_place_inv_mig_count(const struct gs_place_inv *inv);
const char *gs_place_inv_node_name(const struct gs_place_inv *inv, int node);
/* GPU i: its node, its index within the node, its UUID (lent). */
int gs_place_inv_gpu_node(const struct gs_place_inv *inv, int gpu);
int gs_place_inv_gpu_index(const struct gs_place_inv *inv, int gpu);
const char *gs_place_inv_gpu_uuid(const struct gs_place_inv *inv, int gpu);
/* Instance i: its parent GPU (inventory-wide index) and UUID (lent). */
int gs_place_inv_mig_gpu(const struct gs_place_inv *inv, int inst);
const char *gs_place_inv_mig_uuid(const struct gs_place_inv *inv, int inst);

/* Free amounts of a GPU (not in MIG mode) or an instance (inst >= 0). */
struct gs_place_free {
	uint64_t memory_bytes;
	int compute_pct;
	int n_slices;
	bool exclusive;          /* held whole (GPU) or by a MIG slice */
	enum gs_slice_mode mode; /* of its fractional slices, if any */
};
gs_err gs_place_inv_free(const struct gs_place_inv *inv, int gpu, int inst,
                         struct gs_place_free *out, struct gs_errbuf *eb);

/* ---- requests and results ------------------------------------------- */

struct gs_place_request {
	int n; /* 1..GS_PLACE_MAX_GANG */
	struct gs_place_item item[GS_PLACE_MAX_GANG];
	enum gs_place_gang gang;
	enum gs_place_policy policy;
	/* Which GPUs may be used; NULL or kind GS_GPU_ANY for all. An index
	 * selects that GPU index on every node. */
	const struct gs_gpu_selector *gpu;
	/* GS_PLACE_FRAG: the demand seen (borrowed; gs_trace_scorer_new from
	 * the slices the node was asked for). NULL: the request's own slices
	 * stand for the demand. */
	const struct gs_trace_scorer *scorer;
};

/* Where one slice goes: a GPU, and an instance of it (or -1). */
struct gs_place_target {
	int node;
	int gpu;  /* inventory-wide GPU index */
	int inst; /* inventory-wide instance index, or -1 */
};

struct gs_place_result {
	int n;
	struct gs_place_target target[GS_PLACE_MAX_GANG];
	bool exhausted; /* the search budget ran out (see above) */
	/* On GS_ERR_NO_FIT for MIG slices: a GPU whose re-partition could
	 * make what is missing (migplan.h), else -1. */
	int repartition_gpu;
};

/*
 * Chooses devices for every slice of `req`. OUT: *out. Returns GS_OK,
 * GS_ERR_NO_FIT (eb says why, on the best candidate), GS_ERR_INVALID for
 * a request that cannot be met by any inventory (bad mode for its kind,
 * amounts out of range, whole or MIG slices in a SAME_GPU gang, non-MIG
 * slices in a SAME_PARENT gang) or GS_ERR_UNKNOWN_PROFILE.
 */
gs_err gs_place(const struct gs_place_inv *inv,
                const struct gs_place_request *req, struct gs_place_result *out,
                struct gs_errbuf *eb);

/*
 * Records that `item` now occupies `target` (an existing slice while the
 * inventory is built, or a placement being applied). GS_ERR_NO_FIT if it
 * does not fit there (the inventory is then unchanged).
 */
gs_err gs_place_occupy(struct gs_place_inv *inv,
                       const struct gs_place_target *target,
                       const struct gs_place_item *item, struct gs_errbuf *eb);
/* Applies a whole result of gs_place() (all slices or none). */
gs_err gs_place_commit(struct gs_place_inv *inv,
                       const struct gs_place_request *req,
                       const struct gs_place_result *res, struct gs_errbuf *eb);
/*
 * Undoes gs_place_occupy() for a slice that ended. GS_ERR_INVALID when
 * the device does not hold such a slice (the inventory is then unchanged).
 */
gs_err gs_place_release(struct gs_place_inv *inv,
                        const struct gs_place_target *target,
                        const struct gs_place_item *item, struct gs_errbuf *eb);

#endif
