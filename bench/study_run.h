/*
 * study_run.h - runs one phase of a study cell: a few workload processes
 * started together (each after its own delay), each with its own
 * environment changes and time limit, their stdout and stderr captured.
 *
 * A job runs in a process group of its own, so a time limit kills the
 * job and anything it started (`gpuslice run` and its command). While the
 * phase runs, a sampler callback is called about every SAMPLE_MS with the
 * jobs' pids, so the caller can read GPU utilisation and per-process
 * memory at the same time.
 *
 * Ownership: a job's argv and env strings are copied into the job
 * (gs_study_job_arg/env); after the run, `out`, `err` and the parsed
 * `result`/`report` belong to the job and gs_study_job_fini() frees them.
 */
#ifndef GS_CLI_STUDY_RUN_H
#define GS_CLI_STUDY_RUN_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "gs/err.h"

#define GS_STUDY_MAX_ARGS    32
#define GS_STUDY_MAX_ENV     16
#define GS_STUDY_MAX_JOBS    8
#define GS_STUDY_CAPTURE_MAX (256 * 1024)
#define GS_STUDY_SAMPLE_MS   100

struct gs_study_job {
	/* input */
	char *argv[GS_STUDY_MAX_ARGS + 1];
	int argc;
	char *env[GS_STUDY_MAX_ENV]; /* "K=V" sets, "K" alone unsets */
	int n_env;
	double delay_s;
	double timeout_s;
	char name[32];     /* what the study calls it ("server A", "job 2") */
	const char *input; /* written to stdin (small), else /dev/null */
	bool detach;       /* a daemon launcher: its group outlives it */
	/* output */
	pid_t pid;
	bool started;
	bool exited;
	bool timed_out;
	int status;     /* exit status, or 128 + signal */
	double start_s; /* since the phase began */
	double end_s;
	char *out; /* stdout, NUL-terminated, at most CAPTURE_MAX */
	size_t out_len;
	char *err;
	size_t err_len;
	json_t *result; /* the last JSON object line of stdout, or NULL */
	json_t *report; /* the last `{"slice":...}` line of stderr, or NULL */
	uint64_t memory_peak; /* filled in by the caller's sampler */
};

/* Zeroes a job. */
void gs_study_job_init(struct gs_study_job *j, const char *name,
                       double timeout_s);
/* Frees what the job owns; the job can be initialised again. */
void gs_study_job_fini(struct gs_study_job *j);
/* Appends an argument (copied). GS_ERR_RANGE past GS_STUDY_MAX_ARGS. */
gs_err gs_study_job_arg(struct gs_study_job *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends an environment change "K=V" or "K" (unset). */
gs_err gs_study_job_env(struct gs_study_job *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Called every GS_STUDY_SAMPLE_MS while jobs run, and once more right
 * after the last one ends; `t` is seconds since the phase began.
 */
typedef void (*gs_study_sampler)(void *ctx, struct gs_study_job *jobs, int n,
                                 double t);

/*
 * Runs jobs[0..n) to their end (or time limit). Every job's environment
 * is the current process's with `base_env` ("K=V" / "K", may be NULL,
 * NULL-terminated) and then its own changes applied. OUT: *wall_s, the
 * time from the first start to the last exit. GS_ERR_IO when a process
 * cannot be started (jobs started before it still run to their end).
 */
gs_err gs_study_phase_run(struct gs_study_job *jobs, int n,
                          const char *const *base_env, gs_study_sampler sampler,
                          void *ctx, double *wall_s, struct gs_errbuf *eb);

/* Index of the job that started `pid` (itself or a descendant), or -1. */
int gs_study_job_of_pid(const struct gs_study_job *jobs, int n, pid_t pid);

/*
 * Async-signal-safe: from now on, running jobs are killed and later ones
 * are not started (a Ctrl-C of the study).
 */
void gs_study_run_interrupt(void);
bool gs_study_run_interrupted(void);

/* Whether the job ran to a zero exit status within its limit. */
bool gs_study_job_ok(const struct gs_study_job *j);

#endif
