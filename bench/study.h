/*
 * study.h - the seed study (seeds/003, NVIDIA's KubeCon "Which GPU
 * sharing strategy is right for you?") as one run: four workloads under
 * six strategies, each cell measured and written as one JSON object.
 *
 * Workloads (the seed's, on gpuslice's workload kit):
 *   inference-light  two gs-infer --light servers side by side
 *   inference-heavy  two gs-infer --heavy servers side by side
 *   small-batch      one gs-matmul alone, then four at once
 *   gpu-intensive    one gs-burn alone, then two at once; then a job that
 *                    takes memory until it fails next to a gs-burn that
 *                    starts after it (out of memory), then a gs-fault
 *                    next to a gs-burn (a fatal fault)
 *
 * Strategies: exclusive (each job a whole GPU of its own), time-slicing,
 * mps (no limits), mps-limits (active thread % and pinned memory, 1/n
 * each), mig (one instance per job, equal profiles), gpuslice (shim
 * slices: memory 1/n each; servers high and low priority; batch jobs a
 * 1/n compute share that may use idle time).
 *
 * Cell fields (every cell has every key; null where it does not apply):
 *   workload, strategy, source, status ("ok", "skipped", "failed",
 *   "interrupted"),
 *   reason, setup, jobs, latency_p50_ms, latency_p99_ms, throughput,
 *   throughput_unit, completion_s, completion_alone_s, gpu_util_pct,
 *   sm_util_pct, memory_per_job_bytes, neighbour_on_oom,
 *   neighbour_on_fault, servers, phases (raw per-job results).
 */
#ifndef GS_CLI_STUDY_H
#define GS_CLI_STUDY_H

#include <jansson.h>
#include <stdbool.h>

#include "gs/err.h"
#include "study_node.h"

#define GS_STUDY_WORKLOADS(X)                                                  \
	X(INFER_LIGHT, "inference-light", "Inference, light load")             \
	X(INFER_HEAVY, "inference-heavy", "Inference, heavy load")             \
	X(SMALL_BATCH, "small-batch", "Small GPU batch job")                   \
	X(GPU_INTENSIVE, "gpu-intensive", "GPU-intensive batch job")

#define GS_STUDY_STRATEGIES(X)                                                 \
	X(EXCLUSIVE, "exclusive", "Exclusive")                                 \
	X(TIMESLICE, "time-slicing", "Time-slicing")                           \
	X(MPS, "mps", "MPS w/o limits")                                        \
	X(MPS_LIMITS, "mps-limits", "MPS with limits")                         \
	X(MIG, "mig", "MIG")                                                   \
	X(GPUSLICE, "gpuslice", "gpuslice")

/* The X-macro hides the items from clang-format. */
/* clang-format off */
enum gs_study_workload {
#define GS__W(e, name, title) GS_STUDY_W_##e,
	GS_STUDY_WORKLOADS(GS__W)
#undef GS__W
	GS_STUDY_W__COUNT
};

enum gs_study_strategy {
#define GS__S(e, name, title) GS_STUDY_S_##e,
	GS_STUDY_STRATEGIES(GS__S)
#undef GS__S
	GS_STUDY_S__COUNT
};
/* clang-format on */

const char *gs_study_workload_name(int w);
const char *gs_study_workload_title(int w);
const char *gs_study_strategy_name(int s);
const char *gs_study_strategy_title(int s);

/*
 * Parses "a,b,c" of names into a bit mask (bit i = item i); "all" is
 * every item. GS_ERR_PARSE names the first unknown item in `eb`.
 */
gs_err gs_study_parse_workloads(const char *list, unsigned int *mask,
                                struct gs_errbuf *eb);
gs_err gs_study_parse_strategies(const char *list, unsigned int *mask,
                                 struct gs_errbuf *eb);

struct gs_study_opts {
	bool quick;
	unsigned int workloads;  /* bit mask */
	unsigned int strategies; /* bit mask */
	bool progress;           /* progress lines on stderr */
};

/*
 * Runs every selected cell on `node`. OUT: *cells, a JSON array the caller
 * owns (json_decref). A cell that cannot run here is "skipped" with its
 * reason; one whose jobs failed is "failed" with what they said. Returns
 * GS_ERR_INTERNAL only when the cells cannot be built at all; an
 * interrupted run returns the cells done so far and GS_ERR_BUSY.
 */
gs_err gs_study_run(struct gs_study_node *node,
                    const struct gs_study_opts *opts, json_t **cells,
                    struct gs_errbuf *eb);

/*
 * Writes DIR/study.json, DIR/study.md and the charts DIR/<chart>.svg (creating
 * DIR). `label` is the figures' source line.
 */
gs_err gs_study_write(const char *dir, json_t *cells, const char *label,
                      bool quick, struct gs_errbuf *eb);

/*
 * Appends the grid (workloads x strategies, the seed's "Which GPU
 * sharing strategy is right?" table with the measured figures) as
 * Markdown to `f`.
 */
void gs_study_grid_md(FILE *f, json_t *cells);

#endif
