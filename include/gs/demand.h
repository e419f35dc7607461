/*
 * demand.h - the demand a node has seen: a bounded, decayed history of
 * the slice shapes it was asked for, and the placement scorer built from
 * it (gs/frag.h), which the `frag` placement policy (gs/placement.h)
 * ranks a node's GPUs by.
 *
 * A shape is what one request asked for: a fraction of a GPU (memory and
 * compute), a whole GPU, or a MIG instance of a profile. Each distinct
 * shape is a class with a weight: every request adds 1, and weights halve
 * every `half_life_ns`, so yesterday's burst counts less than this hour's.
 * A class remembers its weight at the time it last changed (t_ns) and is
 * decayed on read, so classes can be stored and reloaded one by one.
 *
 * Bounds: at most GS_DEMAND_MAX_CLASSES classes. A new shape arriving at
 * a full table replaces the class that weighs least now (it is returned,
 * for the caller to forget in its storage); classes whose weight fell
 * below GS_DEMAND_MIN_WEIGHT are dropped by gs_demand_prune.
 *
 * The scorer: each class counts as gs_place_item_milli() of its shape on
 * the node's GPU (a fraction: the larger of its memory and compute share;
 * a whole GPU: 1000) with its weight now. MIG classes are kept and shown
 * but do not enter it: `frag` places MIG slices as binpack, and an
 * instance is not a share of a free GPU in the scorer's model.
 *
 * Pure: no clock (the caller passes the time), no I/O, no globals.
 */
#ifndef GS_DEMAND_H
#define GS_DEMAND_H

#include <stdbool.h>
#include <stdint.h>

#include "gs/err.h"
#include "gs/placement.h"

#define GS_DEMAND_MAX_CLASSES 32
#define GS_DEMAND_MIN_WEIGHT  0.01

struct gs_trace_scorer;

/* What one request asked for. Zero it before filling it: shapes compare
 * field by field. */
struct gs_demand_shape {
	enum gs_place_kind kind;
	uint64_t memory_bytes;                 /* FRACTION */
	int compute_pct;                       /* FRACTION; 0: no claim */
	char mig_profile[GS_SPEC_PROFILE_MAX]; /* MIG */
};

struct gs_demand_class {
	struct gs_demand_shape shape;
	double weight; /* at t_ns */
	int64_t t_ns;
};

/* Plain data: copy it freely. */
struct gs_demand {
	int64_t half_life_ns; /* <= 0: no decay */
	int n;
	struct gs_demand_class cls[GS_DEMAND_MAX_CLASSES];
};

/* An empty history. */
void gs_demand_init(struct gs_demand *d, int64_t half_life_ns);

/* The shape a placement item stands for (kind and its fields). */
void gs_demand_shape_of(const struct gs_place_item *it,
                        struct gs_demand_shape *out);
bool gs_demand_shape_equal(const struct gs_demand_shape *a,
                           const struct gs_demand_shape *b);
/* "fraction", "whole", "mig". */
const char *gs_demand_kind_name(enum gs_place_kind k);
/* The kind named `name`; GS_ERR_INVALID for another name. */
gs_err gs_demand_parse_kind(const char *name, enum gs_place_kind *out);

/* Class i's weight at now_ns (decayed; never grows with time). */
double gs_demand_weight(const struct gs_demand *d, int i, int64_t now_ns);
/* The sum of all weights at now_ns. */
double gs_demand_total(const struct gs_demand *d, int64_t now_ns);

/*
 * Records one request of `shape` at now_ns. OUT: *index, the class that
 * holds it now; when a full table made room, *evicted gets the shape it
 * forgot and *did_evict is true (both may be NULL). Never fails: a full
 * table always has a lightest class.
 */
void gs_demand_add(struct gs_demand *d, const struct gs_demand_shape *shape,
                   int64_t now_ns, int *index, struct gs_demand_shape *evicted,
                   bool *did_evict);

/*
 * Puts a class back as it was stored (its shape, weight at t_ns), merging
 * with an equal shape (weights added at the later time). A full table
 * drops the lighter of the new class and its lightest one.
 * GS_ERR_INVALID for a negative or non-finite weight.
 */
gs_err gs_demand_put(struct gs_demand *d, const struct gs_demand_class *c,
                     int64_t now_ns, struct gs_errbuf *eb);

/*
 * Drops classes lighter than GS_DEMAND_MIN_WEIGHT at now_ns; copies of
 * their shapes go to `dropped` (room for GS_DEMAND_MAX_CLASSES; may be
 * NULL). Returns how many it dropped.
 */
int gs_demand_prune(struct gs_demand *d, int64_t now_ns,
                    struct gs_demand_shape *dropped);

/*
 * The scorer for a node whose GPUs have `gpu_memory_bytes` each, from the
 * non-MIG classes and their weights at now_ns. OUT: *out, owned by the
 * caller (gs_trace_scorer_free); NULL, with GS_OK, when no class enters it
 * (the request then stands for the demand). GS_ERR_NOMEM.
 */
gs_err gs_demand_scorer(const struct gs_demand *d, int64_t now_ns,
                        uint64_t gpu_memory_bytes, struct gs_trace_scorer **out,
                        struct gs_errbuf *eb);

#endif
