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
 * to GS_TRACE_MAX_DEVS devices; tasks, models, the target workload, the
 * fragmentation measure and gpuslice's scorer are gs/frag.h's (included
 * here).
 *
 * Everything declared here is pure (no I/O, no clock, no globals) and
 * reentrant: separate runs may go on in separate threads. Reading the CSV
 * files is bench/trace_csv.h's job.
 *
 * Where it lives: everything declared here is benchmark code in bench/
 * (gs_bench): the cluster state, the policies, the replay and the task
 * list variants. What the product uses (gpusliced's `frag` placement, the
 * Kubernetes scheduler extender) is in gs/frag.h and core/frag/ (gs_core).
 */
#ifndef GS_TRACE_H
#define GS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gs/err.h"
#include "gs/frag.h"

#define GS_TRACE_MAX_LEVEL 130 /* highest arrival level reported, % */

/* ---- Nodes ----------------------------------------------------------- */

struct gs_trace_node {
	uint32_t cpu_milli;  /* capacity, millicores */
	uint64_t memory_mib; /* capacity */
	uint8_t gpus;        /* 0..GS_TRACE_MAX_DEVS */
	uint8_t model;       /* model id; meaningless when gpus == 0 */
};

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
	double eps; /* gpuslice's guard, milli-GPU of dF; < 0: the default */
	gs_trace_progress_fn progress;
	void *progress_arg;
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

/* ---- Task list variants (bench/trace_variant.c) ----------------------- */

/* How a constrained task's models are drawn (docs/placement.md, "A family
 * of variants"). */
enum gs_trace_law {
	GS_TRACE_LAW_CAPACITY, /* by the model's GPU count (the list's mix) */
	GS_TRACE_LAW_UNIFORM,  /* equally among models */
	GS_TRACE_LAW_INVERSE,  /* by 1 / the model's GPU count */
	GS_TRACE_LAW_SCARCE,   /* one scarce model first, the rest by count */
	GS_TRACE_LAW__COUNT
};

/* Sizes of the tasks a gang variant makes (2, 4 or 8 GPUs). */
enum gs_trace_gang_mix {
	GS_TRACE_GANG_LIST,  /* the list's own multi-GPU mix */
	GS_TRACE_GANG_SMALL, /* 2:4:8 as 6:3:1 */
	GS_TRACE_GANG_LARGE, /* 2:4:8 as 1:3:6 */
	GS_TRACE_GANG__COUNT
};

struct gs_trace_variant_cfg {
	uint64_t seed;        /* the variant's own seed, not the replay's */
	double constrain_pct; /* share of GPU tasks restricted to models, % */
	unsigned max_models;  /* a constrained task accepts 1..this; 0 = 2 */
	double gang_pct; /* share of 1-GPU/share tasks turned into 2/4/8 GPUs */
	enum gs_trace_law law;       /* 0: by capacity, as before the family */
	double scarce_pct;           /* SCARCE: % of constrained tasks given
	                                the scarce model when it can host them;
	                                0 = 60 */
	enum gs_trace_gang_mix gangs; /* 0: the list's mix */
};
/*
 * Rewrites `pods` in place into a variant of the list: first turns
 * gang_pct % of the one-GPU tasks into multi-GPU tasks (sizes by `gangs`),
 * then restricts constrain_pct % of the GPU tasks without a model
 * restriction to 1..max_models models drawn by `law` among the models
 * that can host the task. The laws other than CAPACITY leave out models
 * with under 1 % of the GPUs (a 2-GPU model would only turn every task it
 * is given into a refusal for every policy). Deterministic for a seed.
 * GS_ERR_INVALID for shares outside 0..100 or max_models above 8.
 */
gs_err gs_trace_variant_apply(struct gs_trace_pod *pods, size_t n,
                              const struct gs_trace_node *nodes, size_t nn,
                              const struct gs_trace_variant_cfg *cfg,
                              struct gs_errbuf *eb);
/*
 * The scarce model of a SCARCE variant: drawn from the variant's seed
 * among the models with at least 1 % and at most 15 % of the GPUs; -1
 * when no model qualifies (the variant then draws by capacity).
 */
int gs_trace_variant_scarce_model(const struct gs_trace_node *nodes, size_t nn,
                                  const struct gs_trace_variant_cfg *cfg);

#endif
