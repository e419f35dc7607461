/*
 * trace_bench.h - the trace benchmark behind `gpuslice bench trace`: it
 * loads a trace's node and task lists (bench/trace_csv.h, and a variant,
 * gs/trace.h), replays them with each policy and seed, spreading the runs
 * (policy x seed, independent and deterministic for their seed) over
 * threads, reports progress on stderr, and aggregates the runs per policy
 * and arrival level (mean and sd over seeds). trace_bench.c holds that;
 * trace_bench_report.c writes the figures: the text tables and JSON on
 * stdout, the CSV and the SVG chart (through svg_chart.h) to a file.
 * The CLI (cli/cmd_bench_trace.c) only parses the flags.
 */
#ifndef GS_TRACE_BENCH_H
#define GS_TRACE_BENCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gs/err.h"
#include "gs/trace.h"

#define GS_TRACE_BENCH_MAX_SEEDS 1000
#define GS_TRACE_BENCH_MAX_JOBS  64
#define GS_TRACE_BENCH_LEVEL_LO  90 /* lowest level the JSON reports */

/* One replay: a policy and a seed, and what it measured. */
struct gs_trace_bench_run {
	enum gs_trace_policy policy;
	uint64_t seed;
	struct gs_trace_result res;
	double seconds; /* CPU time of the run's thread: immune to other load */
	gs_err err;
	struct gs_errbuf eb;
	size_t done, total; /* progress of this run, in tasks */
};

/*
 * A benchmark: the lists, the policies and seeds to replay them with, and
 * after gs_trace_bench_run() every run's result. The caller zeroes it and
 * sets the options; gs_trace_bench_load() fills the lists;
 * gs_trace_bench_fini() frees what the benchmark owns (lists and runs).
 */
struct gs_trace_bench {
	struct gs_trace_node *nodes; /* owned */
	size_t n_nodes;
	struct gs_trace_pod *pods; /* owned */
	size_t n_pods;
	struct gs_trace_models models;
	int policies[GS_TRACE_POLICY__COUNT];
	size_t n_policies;
	uint64_t seeds[GS_TRACE_BENCH_MAX_SEEDS];
	size_t n_seeds;
	double tune;
	unsigned jobs_n;
	struct gs_trace_variant_cfg variant;
	unsigned ablate; /* GS_TRACE_ABLATE_* for the gpuslice policy */
	double eps; /* gpuslice's guard, milli-GPU of dF; < 0: the default */

	/* Results: policy p, seed s is job[p * n_seeds + s]. */
	struct gs_trace_bench_run *job; /* owned */
	size_t n_job;
	/* The runner's own (gs_trace_bench_run). */
	size_t next_job; /* under lock */
	size_t finished; /* under lock */
	pthread_mutex_t lock;
	bool tty;
	double t0, last_line;
};

/*
 * Reads the node and task lists (errors say FILE:LINE), applies the
 * variant when it asks for one, and checks that some node has a GPU
 * (GS_ERR_INVALID otherwise). On failure the lists read so far stay for
 * gs_trace_bench_fini().
 */
gs_err gs_trace_bench_load(struct gs_trace_bench *b, const char *nodes_path,
                           const char *pods_path, struct gs_errbuf *eb);
/*
 * Replays every (policy, seed) on b->jobs_n threads, with progress on
 * stderr. Fails with the first failed run's error, GS_ERR_NOMEM or
 * GS_ERR_INTERNAL (no lock).
 */
gs_err gs_trace_bench_run(struct gs_trace_bench *b, struct gs_errbuf *eb);
/* Frees the lists and the runs; the struct can then be zeroed again. */
void gs_trace_bench_fini(struct gs_trace_bench *b);

/* Mean and sd over the seeds of one policy at one arrival level. */
struct gs_trace_bench_stat {
	double mean, sd;
	size_t n;
};
/* Of the unallocated % (or the fragmentation %, `frag`) of policy index
 * p at `level`; n 0 and NaN figures where no seed has the level. */
struct gs_trace_bench_stat
gs_trace_bench_stat_of(const struct gs_trace_bench *b, size_t p, size_t level,
                       bool frag);
/* CPU seconds of one run of policy index p, mean over the seeds. */
double gs_trace_bench_seconds(const struct gs_trace_bench *b, size_t p);

/* trace_bench_report.c */

/* The summary line and both tables (unallocated, fragmentation). */
void gs_trace_bench_print_text(const struct gs_trace_bench *b);
/* The JSON contract ({"results":[...]}, levels 90..130) on stdout;
 * GS_ERR_NOMEM. */
gs_err gs_trace_bench_print_json(const struct gs_trace_bench *b,
                                 struct gs_errbuf *eb);
/* results.csv: every level 0..130 a policy reached. The caller checks
 * `f` for write errors. */
void gs_trace_bench_write_csv(const struct gs_trace_bench *b, FILE *f);
/* unallocated.svg: unallocated % against arrived % (70..130), one line
 * per policy (svg_chart.h's line chart). */
gs_err gs_trace_bench_write_svg(const struct gs_trace_bench *b, FILE *f,
                                struct gs_errbuf *eb);

#endif
