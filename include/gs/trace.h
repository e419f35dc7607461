/*
 * trace.h - cluster placement replay on a GPU-sharing trace.
 *
 * This is the engine behind `gpuslice bench trace`: it places a list of
 * tasks (pods) one at a time on a list of nodes and measures how much GPU
 * capacity is left unallocated and how much of it is fragmented, the way
 * the FGD paper (Weng et al., USENIX ATC '23) measured its policies on
 * Alibaba's cluster-trace-gpu-v2023. docs/placement.md describes the
 * procedure, the metrics and our own policy.
 *
 * Model of a node: CPU (millicores), host memory (MiB), a GPU model and up
 * to GS_TRACE_MAX_DEVS devices, each with a free amount in milli-GPU
 * (0..1000). A task asks for CPU, memory, and either nothing on the GPU, a
 * share of ONE device (gpu_milli < 1000, num_gpu == 1), or num_gpu fully
 * free devices (gpu_milli == 1000). It may restrict the GPU model.
 *
 * Everything declared here is pure (no I/O, no clock, no globals) and
 * reentrant: separate runs may go on in separate threads. Reading the CSV
 * files is bench/trace_csv.h's job.
 *
 * Where it lives: the model table, the task rule, the target workload and
 * fragmentation measure and gpuslice's scorer are product code in core/
 * (gs_core: gpusliced's `frag` placement and the Kubernetes scheduler
 * extender use them); the cluster state, the policies, the replay and the
 * task list variants are benchmark code in bench/ (gs_bench).
 */
#ifndef GS_TRACE_H
#define GS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gs/err.h"

#define GS_TRACE_MILLI          1000 /* one whole GPU in milli-GPU */
#define GS_TRACE_MAX_DEVS       16   /* devices per node */
#define GS_TRACE_MAX_MODELS     32 /* distinct GPU models (a spec is a bitmask) */
#define GS_TRACE_MODEL_NAME_MAX 32
#define GS_TRACE_MAX_LEVEL      130 /* highest arrival level reported, % */

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

/* ---- Nodes and tasks ------------------------------------------------- */

struct gs_trace_node {
	uint32_t cpu_milli;  /* capacity, millicores */
	uint64_t memory_mib; /* capacity */
	uint8_t gpus;        /* 0..GS_TRACE_MAX_DEVS */
	uint8_t model;       /* model id; meaningless when gpus == 0 */
};

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

/* ---- Cluster state (bench/trace_cluster.c) ---------------------------- */

struct gs_trace_nstate {
	int64_t cpu_free;
	int64_t mem_free;
	uint16_t gpu_free[GS_TRACE_MAX_DEVS];
	uint8_t gpus;
	uint8_t model;
	uint8_t full_free; /* devices with all 1000 free */
	uint16_t max_free; /* the largest device free amount */
	uint32_t gpu_free_total;
	uint8_t tags; /* kinds of GPU task placed here (GS_TRACE_TAG_*) */
	uint32_t gen; /* changes on every bind; never 0 */
};

/* Task kinds, as the Clustering policy tags nodes. */
enum gs_trace_tag {
	GS_TRACE_TAG_SHARE = 1u << 0,
	GS_TRACE_TAG_1GPU = 1u << 1,
	GS_TRACE_TAG_2GPU = 1u << 2,
	GS_TRACE_TAG_4GPU = 1u << 3,
	GS_TRACE_TAG_8GPU = 1u << 4,
	GS_TRACE_TAG_OTHER = 1u << 5,
};
/* The tag of a GPU task; 0 for a CPU-only task. */
unsigned gs_trace_pod_tag(const struct gs_trace_pod *pod);

struct gs_trace_cluster {
	size_t n;
	struct gs_trace_nstate *node;      /* owned */
	const struct gs_trace_node *nodes; /* borrowed: the capacities */
	int64_t gpu_capacity;              /* milli-GPU over all nodes */
	int64_t allocated;                 /* milli-GPU bound to tasks */
};

/* `nodes` must outlive the cluster. On failure nothing is left to free. */
gs_err gs_trace_cluster_init(struct gs_trace_cluster *c,
                             const struct gs_trace_node *nodes, size_t n,
                             struct gs_errbuf *eb);
void gs_trace_cluster_fini(struct gs_trace_cluster *c);
/* Every node back to empty. */
void gs_trace_cluster_reset(struct gs_trace_cluster *c);
/* Whether `pod` fits on node `i` now: CPU, memory, model and devices. */
bool gs_trace_cluster_fits(const struct gs_trace_cluster *c, size_t i,
                           const struct gs_trace_pod *pod);
/*
 * Binds `pod` to node `i`, taking devs[0..num_gpu-1] (distinct devices
 * that fit; ignored for CPU-only tasks). The caller has checked that it
 * fits.
 */
void gs_trace_cluster_bind(struct gs_trace_cluster *c, size_t i,
                           const struct gs_trace_pod *pod, const uint8_t *devs);

/* ---- Policies (bench/trace_policy.c, bench/policy_*.c) ---------------- */

/* X(ID, cli name as a token, display name) */
#define GS_TRACE_POLICY_MAP(X)                                                 \
	X(RANDOM, random, "Random")                                            \
	X(DOTPROD, dotprod, "DotProd")                                         \
	X(CLUSTERING, clustering, "Clustering")                                \
	X(PACKING, packing, "Packing")                                         \
	X(BESTFIT, bestfit, "BestFit")                                         \
	X(FGD, fgd, "FGD")                                                     \
	X(GPUSLICE, gpuslice, "gpuslice")

/* clang-format off */
enum gs_trace_policy {
#define GS__TRACE_POLICY_ENUM(id, name, disp) GS_TRACE_POLICY_##id,
	GS_TRACE_POLICY_MAP(GS__TRACE_POLICY_ENUM)
#undef GS__TRACE_POLICY_ENUM
	GS_TRACE_POLICY__COUNT
};
/* clang-format on */

/* "fgd"; NULL for an unknown id. */
const char *gs_trace_policy_name(enum gs_trace_policy p);
/* "FGD", as the paper writes it; NULL for an unknown id. */
const char *gs_trace_policy_display(enum gs_trace_policy p);
/* The policy named `name` (cli name, case-insensitive), or -1. */
int gs_trace_policy_parse(const char *name);

/* ---- Replay (bench/trace_replay.c) ----------------------------------- */

/* Called now and then during a run with the tasks done and the total. */
typedef void (*gs_trace_progress_fn)(void *arg, size_t done, size_t total);

struct gs_trace_replay_cfg {
	uint64_t seed; /* drives shuffle, inflation, node order, Random */
	double tune;   /* inflate GPU demand to tune x capacity; <= 0: as is */
	bool shuffle;  /* shuffle the list first (the paper: yes) */
	double coverage_pct; /* target workload coverage; 0 means 95 */
	int stop_level;      /* stop once arrival passes this %; 0 = never */
	bool no_cache;       /* rescore every node every time (tests) */
	unsigned ablate;     /* GS_TRACE_ABLATE_*: switch off gpuslice terms */
	gs_trace_progress_fn progress;
	void *progress_arg;
};

/* Terms of the gpuslice policy that an ablation switches off
 * (docs/placement.md, "Ablation"); 0 runs the policy as designed. */
enum gs_trace_ablate {
	GS_TRACE_ABLATE_STRAND = 1u << 0,  /* no CPU stranding term */
	GS_TRACE_ABLATE_MODEL = 1u << 1,   /* stranding ignores models */
	GS_TRACE_ABLATE_GANG = 1u << 2,    /* gangs at full demand weight */
	GS_TRACE_ABLATE_DEMAND = 1u << 3,  /* FGD's target M, by count */
	GS_TRACE_ABLATE_RESERVE = 1u << 4, /* no CPU reserve (rho = mean) */
};

/* Sets the paper's settings: tune 1.3, shuffle, coverage 95, seed 42. */
void gs_trace_replay_cfg_default(struct gs_trace_replay_cfg *cfg);

/*
 * What one run measured. For every arrival level a = 0..GS_TRACE_MAX_LEVEL
 * (a = round(100 x arrived / capacity)): the mean over the log lines at
 * that level of the unallocated GPU % and of the fragmentation % of total
 * GPU, or NAN where the run has no line at a or a +- 1.
 */
struct gs_trace_result {
	double unalloc_pct[GS_TRACE_MAX_LEVEL + 1];
	double frag_pct[GS_TRACE_MAX_LEVEL + 1];
	size_t tasks;         /* tasks that arrived */
	size_t failed;        /* tasks that fit nowhere and were dropped */
	double arrived_pct;   /* final arrived GPU demand, % of capacity */
	double unalloc_final; /* unallocated GPU % at the end */
};

/*
 * Replays `pods` on `nodes` with `policy` and fills `out`. The lists are
 * not modified. Fails with GS_ERR_INVALID for empty lists or a node list
 * without GPUs, GS_ERR_NOMEM when memory runs out.
 */
gs_err gs_trace_replay(const struct gs_trace_node *nodes, size_t n_nodes,
                       const struct gs_trace_pod *pods, size_t n_pods,
                       enum gs_trace_policy policy,
                       const struct gs_trace_replay_cfg *cfg,
                       struct gs_trace_result *out, struct gs_errbuf *eb);

/* ---- gpuslice's placement scoring on one node (core/trace_scorer*.c) -- */

/*
 * A scorer holds what gpuslice's scoring knows of the demand: the task
 * classes seen (M_g) and their CPU per GPU. It scores ONE node's GPUs, so
 * the replay, the node daemon and a scheduler extender share it.
 */
struct gs_trace_scorer;

/*
 * Builds a scorer from the tasks seen (`pods`, n >= 1). `count_target`
 * (may be NULL) is FGD's count-weighted M, used only by the
 * GS_TRACE_ABLATE_DEMAND ablation. On success *out is owned by the caller
 * (gs_trace_scorer_free); on failure *out is NULL.
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
gs_err gs_trace_scorer_new_weighted(const struct gs_trace_class *cls,
                                    size_t n, struct gs_trace_scorer **out,
                                    struct gs_errbuf *eb);
void gs_trace_scorer_free(struct gs_trace_scorer *s);
/* Cost of a node state in milli-GPU: fragmentation plus stranded GPU. */
double gs_trace_scorer_cost(const struct gs_trace_scorer *s, int64_t cpu_free,
                            const uint16_t *gpu_free, unsigned ngpu,
                            unsigned model);
/*
 * Score (higher is better, 0..100 less a best-fit fraction) of placing
 * `pod` on a node with `cpu_free`, `ngpu` devices free `gpu_free` and
 * model id `model`; -1 when it does not fit (CPU, model, devices; memory
 * is the caller's). `before` is the node's current cost, or NAN to have it
 * computed. For a share, *dev (may be NULL) gets the chosen device.
 */
double gs_trace_scorer_score(const struct gs_trace_scorer *s, double before,
                             int64_t cpu_free, const uint16_t *gpu_free,
                             unsigned ngpu, unsigned model,
                             const struct gs_trace_pod *pod, int *dev);

/* ---- Task list variants (bench/trace_variant.c) ----------------------- */

struct gs_trace_variant_cfg {
	uint64_t seed;        /* the variant's own seed, not the replay's */
	double constrain_pct; /* share of GPU tasks restricted to models, % */
	unsigned max_models;  /* a constrained task accepts 1..this; 0 = 2 */
	double gang_pct; /* share of 1-GPU/share tasks turned into 2/4/8 GPUs */
};

/*
 * Rewrites `pods` in place into a variant of the list: first turns
 * gang_pct % of the one-GPU tasks into multi-GPU tasks (sizes by the
 * list's multi-GPU mix), then restricts constrain_pct % of the GPU tasks
 * without a model restriction to 1..max_models models, drawn by the node
 * list's GPU count per model among models that can host the task.
 * Deterministic for a seed. GS_ERR_INVALID for shares outside 0..100.
 */
gs_err gs_trace_variant_apply(struct gs_trace_pod *pods, size_t n,
                              const struct gs_trace_node *nodes, size_t nn,
                              const struct gs_trace_variant_cfg *cfg,
                              struct gs_errbuf *eb);

#endif
