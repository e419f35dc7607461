/*
 * trace_int.h - what the trace replay (trace_replay.c) and the placement
 * policies (policy_*.c) share inside bench/. Not a public header.
 *
 * A policy is a table of callbacks. For every arriving task the replay
 * asks the policy to score each node the task fits on (higher wins; ties
 * go to the node that comes first in the run's random node order, as the
 * paper's simulator breaks them by node name), then picks the devices:
 * whole-GPU tasks always take the lowest-numbered fully free devices; a
 * share goes to the device the policy's rule names (best fit, random, or
 * the one its score chose).
 *
 * Scores depend only on the node's state and the task's shape unless a
 * policy says otherwise, so the replay caches them per (node, shape) and
 * recomputes only when the node changed (its `gen`) or the policy bumped
 * its epoch. That is what makes FGD-style scoring affordable online.
 */
#ifndef GS_TRACE_INT_H
#define GS_TRACE_INT_H

#include "gs/trace.h"

/* ---- Random numbers: xoshiro256** seeded through splitmix64 ---------- */

struct gs__trace_rng {
	uint64_t s[4];
};

static inline uint64_t gs__trace_splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline void gs__trace_rng_seed(struct gs__trace_rng *r, uint64_t seed)
{
	uint64_t x = seed;

	for (int i = 0; i < 4; i++)
		r->s[i] = gs__trace_splitmix(&x);
}

static inline uint64_t gs__trace_rotl(uint64_t v, int k)
{
	return (v << k) | (v >> (64 - k));
}

static inline uint64_t gs__trace_rng_next(struct gs__trace_rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = gs__trace_rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = gs__trace_rotl(s[3], 45);
	return out;
}

/* Uniform in [0, n) for n >= 1, without modulo bias (rejection). */
static inline uint64_t gs__trace_rng_below(struct gs__trace_rng *r, uint64_t n)
{
	uint64_t lim = -n % n; /* 2^64 mod n */
	uint64_t v;

	do
		v = gs__trace_rng_next(r);
	while (v < lim);
	return v % n;
}

/* ---- What a policy sees of a run ------------------------------------- */

struct gs__trace_run {
	struct gs_trace_cluster cl;
	const struct gs_trace_workload *target; /* M of the original list */
	const struct gs_trace_pod *pods;        /* the original list */
	size_t n_pods;
	struct gs__trace_rng rng;
	uint32_t epoch; /* a policy bumps it to drop every cached score */
	unsigned ablate; /* GS_TRACE_ABLATE_* from the replay's cfg */
	double eps;      /* gpuslice's guard, milli-GPU of dF; < 0: default */
};

enum gs__trace_policy_flags {
	GS__TP_CACHE = 1u << 0,       /* score is f(node state, task shape) */
	GS__TP_NORMALISE = 1u << 1,   /* min-max normalise scores to 0..100 */
	GS__TP_RANDOM_NODE = 1u << 2, /* pick a feasible node uniformly */
};

enum gs__trace_devsel {
	GS__DEV_BESTFIT, /* the fitting device with the least free */
	GS__DEV_RANDOM,  /* a fitting device drawn uniformly */
	GS__DEV_OWN,     /* the device the score returned */
};

struct gs__trace_policy_ops {
	unsigned flags;
	enum gs__trace_devsel devsel;
	/* Optional. Allocates the policy's state for a run into *st. */
	gs_err (*init)(void **st, struct gs__trace_run *run,
	               struct gs_errbuf *eb);
	/* Optional. Frees what init allocated; NULL-safe. */
	void (*fini)(void *st);
	/* Optional. Told about each task as it arrives, before scoring. */
	void (*arrive)(void *st, struct gs__trace_run *run,
	               const struct gs_trace_pod *pod);
	/*
	 * Scores feasible node `i` for `pod`; higher is better. For a share,
	 * sets *dev to the device it would use (GS__DEV_OWN policies);
	 * otherwise leaves it alone.
	 */
	double (*score)(void *st, const struct gs__trace_run *run, size_t i,
	                const struct gs_trace_pod *pod, int *dev);
	/*
	 * Guarded policies (gpuslice) set these two instead of relying on
	 * `score`: `cand` gives the candidate of feasible node `i` (false:
	 * it does not fit) and for a share its device; `pick` chooses among
	 * the feasible nodes' candidates, given in the tie order.
	 */
	bool (*cand)(void *st, const struct gs__trace_run *run, size_t i,
	             const struct gs_trace_pod *pod, struct gs_trace_cand *c,
	             int *dev);
	size_t (*pick)(void *st, const struct gs_trace_cand *c, size_t n);
};

const struct gs__trace_policy_ops *gs__trace_policy_ops(enum gs_trace_policy p);

/* The fitting device with the least free (ties: lowest index); -1: none. */
int gs__trace_dev_bestfit(const struct gs_trace_nstate *s, uint16_t milli);

/* Normalisers of the paper's simulator: its largest node. */
#define GS__TRACE_MAX_CPU 128000.0
#define GS__TRACE_MAX_GPU 8000.0

#endif
