/*
 * gpu_acct.h - NVML per-process accounting of the node's GPUs
 * (gpu_acct.c): turning it on and reading what it measured.
 */
#ifndef GS_DAEMON_GPU_ACCT_H
#define GS_DAEMON_GPU_ACCT_H

#include <stdbool.h>
#include <stdint.h>

#include "gpu.h"
#include "gs/err.h"

/* One process NVML accounting knows on a GPU, running or terminated. */
struct gs_gpu_acct {
	int32_t pid;
	uint64_t start_us; /* CPU time it started (NVML startTime) */
	bool running;
	/* GPU time its kernels ran: its life so far (running) or its
	 * context's active time (terminated) x NVML's gpuUtilization */
	uint64_t busy_ns;
	uint64_t max_mem; /* bytes; 0 when NVML does not know */
};

/*
 * Turns accounting on for GPU `i` when it is off (needs root).
 * GS_ERR_UNSUPPORTED: no NVML, no such call, MIG on or refused by the
 * driver; GS_ERR_PERM: not privileged.
 */
gs_err gs_gpus_accounting_on(struct gs_gpus *g, int i);

/*
 * Every process accounting knows on GPU `i` (at most `cap`). `now_us` is
 * the CPU time (CLOCK_REALTIME, us) a running process's life is counted
 * to. OUT: out[0..*n).
 */
gs_err gs_gpus_accounting(struct gs_gpus *g, int i, uint64_t now_us,
                          struct gs_gpu_acct *out, int cap, int *n);

#endif
