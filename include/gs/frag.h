/*
 * frag.h - gpuslice's fragmentation-aware placement cost on one node's
 * GPUs: the product's scorer, in core/frag/ (gs_core). gpusliced's `frag`
 * placement policy (gs/placement.h), its demand history (gs/demand.h),
 * admission and the Kubernetes scheduler extender use it; the trace replay
 * of `gpuslice bench trace` (gs/trace.h, bench/) measures it.
 *
 * What it holds: the GPU model-name table, a task's shape and the rule for
 * a well-formed one (core/frag/task.c), the target workload M and the FGD
 * fragmentation measure F_n(M) (Weng et al., USENIX ATC '23;
 * core/frag/workload.c), and the scorer built on them (core/frag/scorer.c,
 * core/frag/score.c). docs/placement.md describes the measure and the
 * scorer's terms. The names keep the gs_trace_ prefix they had when this
 * lived beside the replay, so callers did not change.
 *
 * Model of a node: CPU (millicores), a GPU model and up to
 * GS_TRACE_MAX_DEVS devices, each with a free amount in milli-GPU
 * (0..1000). A task asks for CPU, memory, and either nothing on the GPU, a
 * share of ONE device (gpu_milli < 1000, num_gpu == 1), or num_gpu fully
 * free devices (gpu_milli == 1000). It may restrict the GPU model.
 *
 * Everything declared here is pure (no I/O, no clock, no globals) and
 * reentrant.
 */
#ifndef GS_FRAG_H
#define GS_FRAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gs/err.h"

#define GS_TRACE_MILLI          1000 /* one whole GPU in milli-GPU */
#define GS_TRACE_MAX_DEVS       16   /* devices per node */
#define GS_TRACE_MAX_MODELS     32 /* distinct GPU models (a spec is a bitmask) */
#define GS_TRACE_MODEL_NAME_MAX 32

/* ---- GPU models ------------------------------------------------------ */

/* A small table of model names; a model's id is its index. Zero it to
 * start empty. */
struct gs_trace_models {
	unsigned count;
	char name[GS_TRACE_MAX_MODELS][GS_TRACE_MODEL_NAME_MAX];
};

/* The id of `name` (`len` bytes, not NUL-terminated), adding it when it is
 * new. Returns -1 when the name is empty or too long or the table is full. */
int gs_trace_models_intern(struct gs_trace_models *m, const char *name,
                           size_t len);
/* The id of `name`, or -1 when it is not in the table. */
int gs_trace_models_find(const struct gs_trace_models *m, const char *name,
                         size_t len);

/* ---- Tasks ----------------------------------------------------------- */

struct gs_trace_pod {
	uint32_t cpu_milli;
	uint64_t memory_mib;
	uint16_t
	    gpu_milli;   /* per GPU: 0 CPU-only, 1..999 a share, 1000 whole */
	uint8_t num_gpu; /* 0 CPU-only, 1 for a share, 1.. for whole GPUs */
	uint32_t spec;   /* allowed models as a bitmask of ids; 0 = any */
};

/* Whether a task is well formed: gpu_milli 0 exactly when num_gpu is 0, a
 * share only on one GPU, at most GS_TRACE_MAX_DEVS GPUs. */
bool gs_trace_pod_is_valid(const struct gs_trace_pod *pod);

/* ---- Target workload and the fragmentation measure -------------------- */

/* One task class of the target workload M. */
struct gs_trace_class {
	uint32_t cpu_milli;
	uint16_t gpu_milli;
	uint8_t num_gpu;
	uint32_t spec; /* 0 = any model */
	uint32_t count;
	double p; /* popularity */
};

/*
 * The target workload M: the task classes a node's idle GPU is measured
 * against. Built from a task list (the most popular classes covering a
 * share of the tasks, renormalised) or from classes given as they are.
 * Initialise with one of the two init functions; gs_trace_workload_fini()
 * frees what they allocated. A failed init leaves nothing to free.
 */
struct gs_trace_workload {
	size_t n;
	struct gs_trace_class *cls; /* n classes, most popular first */
	/* Lookup tables for gs_trace_frag(): the distinct per-GPU requests. */
	size_t nr;
	uint16_t *r;    /* nr distinct gpu_milli > 0, ascending */
	uint8_t *cls_r; /* per class: index into r (unused when gpu_milli 0) */
};

/*
 * Groups `pods` by (CPU, per-GPU milli, GPU count, model spec), sorts the
 * classes by count (ties: the larger tuple first) and takes classes until
 * they cover at least `coverage_pct` percent of all tasks (CPU-only tasks
 * included); probabilities are renormalised over the classes taken.
 */
gs_err gs_trace_workload_init(struct gs_trace_workload *w,
                              const struct gs_trace_pod *pods, size_t n,
                              double coverage_pct, struct gs_errbuf *eb);
/*
 * The same, but classes are weighed by the GPU they ask for (count x
 * num_gpu x gpu_milli) instead of by count: they are sorted by that,
 * taken until they cover `coverage_pct` percent of the list's GPU demand,
 * and p is each one's share of the demand taken. CPU-only classes weigh
 * nothing. A list without GPU demand falls back to counting tasks.
 */
gs_err gs_trace_workload_init_demand(struct gs_trace_workload *w,
                                     const struct gs_trace_pod *pods, size_t n,
                                     double coverage_pct, struct gs_errbuf *eb);
/*
 * The same as gs_trace_workload_init_demand, but from classes that carry
 * a weight each in `p` (a decayed count of requests, say; `count` is only
 * carried along): equal tuples are merged, classes of weight 0 dropped.
 * GS_ERR_INVALID for a class that is not a valid task shape, a negative
 * weight, or no class with a weight.
 */
gs_err gs_trace_workload_init_weighted(struct gs_trace_workload *w,
                                       const struct gs_trace_class *cls,
                                       size_t n, double coverage_pct,
                                       struct gs_errbuf *eb);
/*
 * The same as gs_trace_workload_init_weighted, but classes are weighed by
 * their weight alone (FGD's M by count when the weights are counts): what
 * gs_trace_workload_init gives for the tasks the weights count.
 */
gs_err gs_trace_workload_init_popular(struct gs_trace_workload *w,
                                      const struct gs_trace_class *cls,
                                      size_t n, double coverage_pct,
                                      struct gs_errbuf *eb);
/* Copies `n` classes and uses their `p` as given (no renormalisation). */
gs_err gs_trace_workload_init_classes(struct gs_trace_workload *w,
                                      const struct gs_trace_class *cls,
                                      size_t n, struct gs_errbuf *eb);
void gs_trace_workload_fini(struct gs_trace_workload *w);

/*
 * F_n(M): the expected amount of a node's idle GPU, in milli-GPU, that a
 * task drawn from M could not use. `gpu_free` holds `ngpu`
 * device free amounts; `model` is the node's model id.
 */
double gs_trace_frag(const struct gs_trace_workload *w, int64_t cpu_free,
                     const uint16_t *gpu_free, unsigned ngpu, unsigned model);

/* Terms of the gpuslice policy that an ablation switches off
 * (docs/placement.md, "Ablation"); 0 runs the policy as designed. */
enum gs_trace_ablate {
	GS_TRACE_ABLATE_STRAND = 1u << 0,  /* no CPU stranding term */
	GS_TRACE_ABLATE_MODEL = 1u << 1,   /* stranding ignores models */
	GS_TRACE_ABLATE_GANG = 1u << 2,    /* gangs at full demand weight */
	GS_TRACE_ABLATE_DEMAND = 1u << 3,  /* FGD's target M, by count */
	GS_TRACE_ABLATE_RESERVE = 1u << 4, /* no CPU reserve (rho = mean) */
	GS_TRACE_ABLATE_GUARD = 1u << 5,   /* own score alone, no FGD guard */
	GS_TRACE_ABLATE_FIT = 1u << 6,     /* no best fit inside a bucket */
};

/* ---- gpuslice's placement scoring on one node (core/frag/) --------------- */

/*
 * A scorer holds what gpuslice's scoring knows of the demand: FGD's
 * target workload M (task classes by count), the classes weighed by GPU
 * demand (M_g) and their CPU per GPU. It scores ONE node's GPUs, so the
 * replay, the node daemon and a scheduler extender share it.
 *
 * The guard (docs/placement.md, "Why it cannot lose badly"): every
 * candidate placement (a node, or a device of a node) carries FGD's
 * integer points and exact change dF of F_n(M), and our own rank. The
 * choice among candidates listed in the caller's tie order
 * (gs_trace_scorer_pick) starts from FGD's own choice, the first with the
 * most points, and moves only to a candidate with the same points whose
 * dF is within `eps` milli-GPU of that choice's, the one our rank puts
 * first. So the policy never places where FGD's own measure calls the
 * move more than eps worse than FGD's move (2 eps when a device is chosen
 * inside a node too); with eps 0 it only reorders moves FGD finds
 * exactly equal.
 */
struct gs_trace_scorer;

#define GS_TRACE_SCORER_EPS 0.0 /* default eps, milli-GPU of dF */

/*
 * Builds a scorer from the tasks seen (`pods`, n >= 1). `count_target`
 * (may be NULL) is FGD's count-weighted M when the caller has it (the
 * replay does); otherwise it is built from `pods` (95 % coverage). On
 * success *out is owned by the caller (gs_trace_scorer_free); on failure
 * *out is NULL.
 */
gs_err gs_trace_scorer_new(const struct gs_trace_pod *pods, size_t n,
                           const struct gs_trace_workload *count_target,
                           unsigned ablate, struct gs_trace_scorer **out,
                           struct gs_errbuf *eb);
/*
 * The same from task classes weighed by their `p` (see
 * gs_trace_workload_init_weighted): what a node daemon's decayed demand
 * history (gs/demand.h) or a scheduler's demand list gives. Classes with
 * weights equal to task counts build the same scorer as the tasks.
 */
gs_err gs_trace_scorer_new_weighted(const struct gs_trace_class *cls, size_t n,
                                    struct gs_trace_scorer **out,
                                    struct gs_errbuf *eb);
void gs_trace_scorer_free(struct gs_trace_scorer *s);
/* Sets the guard's eps in milli-GPU of dF (default GS_TRACE_SCORER_EPS).
 * GS_ERR_INVALID unless 0 <= eps <= 1000 (the scorer is unchanged then). */
gs_err gs_trace_scorer_set_eps(struct gs_trace_scorer *s, double eps,
                               struct gs_errbuf *eb);
/* Cost of a node state in milli-GPU: fragmentation plus stranded GPU
 * (gpuslice's own cost, M_g and S_n). */
double gs_trace_scorer_cost(const struct gs_trace_scorer *s, int64_t cpu_free,
                            const uint16_t *gpu_free, unsigned ngpu,
                            unsigned model);

/* Both costs of one node state, in milli-GPU. */
struct gs_trace_cost {
	double fgd; /* F_n(M), FGD's measure */
	double own; /* gs_trace_scorer_cost */
};
void gs_trace_scorer_costs(const struct gs_trace_scorer *s, int64_t cpu_free,
                           const uint16_t *gpu_free, unsigned ngpu,
                           unsigned model, struct gs_trace_cost *out);

/* A candidate placement as the guard sees it. */
struct gs_trace_cand {
	double fgd;   /* FGD's integer points of the move, 0..100 */
	double delta; /* FGD's exact change of F_n(M), milli-GPU */
	double own;   /* our rank of the move, higher is better */
};
/*
 * The candidate of moving a node from `before` to the state (cpu_free,
 * gpu_free); `left` is what a share leaves free on its device (0
 * otherwise). own = our cost's integer points minus left / 10^6 (best
 * fit inside a bucket).
 */
void gs_trace_scorer_cand(const struct gs_trace_scorer *s,
                          const struct gs_trace_cost *before, int64_t cpu_free,
                          const uint16_t *gpu_free, unsigned ngpu,
                          unsigned model, unsigned left,
                          struct gs_trace_cand *out);

/* The guard's choice, one candidate at a time (a search that cannot keep
 * them all). Zero it to start. */
struct gs_trace_pick {
	bool any;
	struct gs_trace_cand first; /* FGD's choice so far */
	struct gs_trace_cand best;  /* the guard's choice so far */
};
/* Offers `c` (in the tie order); true when it becomes the choice. */
bool gs_trace_scorer_pick_step(const struct gs_trace_scorer *s,
                               struct gs_trace_pick *p,
                               const struct gs_trace_cand *c);
/* The index of the guard's choice among c[0..n-1] (n >= 1). */
size_t gs_trace_scorer_pick(const struct gs_trace_scorer *s,
                            const struct gs_trace_cand *c, size_t n);

/*
 * The candidate of placing `pod` on a node with `cpu_free`, `ngpu`
 * devices free `gpu_free` and model id `model`: false when it does not
 * fit (CPU, model, devices; memory is the caller's). `before` is the
 * node's current costs, or NULL to have them computed. For a share the
 * device is the guard's choice among the node's devices, *dev (may be
 * NULL) gets it, and *out carries FGD's points and dF of FGD's own device
 * with our rank of the chosen one (so nodes compare on FGD's terms).
 */
bool gs_trace_scorer_node(const struct gs_trace_scorer *s,
                          const struct gs_trace_cost *before, int64_t cpu_free,
                          const uint16_t *gpu_free, unsigned ngpu,
                          unsigned model, const struct gs_trace_pod *pod,
                          struct gs_trace_cand *out, int *dev);
/* FGD's points of the node's candidate (gs_trace_scorer_node), -1 when
 * the task does not fit. `before`: the node's own cost, or NAN. */
double gs_trace_scorer_score(const struct gs_trace_scorer *s, double before,
                             int64_t cpu_free, const uint16_t *gpu_free,
                             unsigned ngpu, unsigned model,
                             const struct gs_trace_pod *pod, int *dev);

#endif
