/*
 * reconcile.h - makes the node's GPUs match the model, level-triggered
 * (each tick compares what should run with what runs; nothing depends on
 * having seen a change happen):
 *
 *   - one MPS control daemon per GPU (or MIG device) that holds MPS slices,
 *     started with `nvidia-cuda-mps-control -d` from PATH with its own pipe
 *     and log directories under <mps_dir>/gpu<i>[-gi<g>]/ - by the create
 *     of the first such slice (the node's MPS starter, so the slice is
 *     ready only once its server runs), and by a tick where one died -
 *     and stopped
 *     (`quit`) when its last MPS slice is gone. Clients get their pipe
 *     directory and per-client limits (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE,
 *     CUDA_MPS_PINNED_DEVICE_MEM_LIMIT) in the slice's "env";
 *   - the time-slice level of every GPU (`nvidia-smi compute-policy
 *     --set-timeslice`), once at start when the config sets one.
 *
 * MPS control daemons outlive gpusliced (like slices do): a restarted
 * daemon finds them by their pid files and keeps them.
 */
#ifndef GS_DAEMON_RECONCILE_H
#define GS_DAEMON_RECONCILE_H

#include <stdbool.h>

#include "node.h"

struct gs_reconciler;

gs_err gs_reconciler_create(struct gs_node *node, struct gs_reconciler **out,
                            struct gs_errbuf *eb);
/* Frees; leaves MPS daemons running. NULL does nothing. */
void gs_reconciler_destroy(struct gs_reconciler *r);

/* One pass (called about once a second). */
void gs_reconciler_tick(struct gs_reconciler *r);
/* Applies node.timeslice to every GPU (logs and goes on on failure). */
void gs_reconciler_timeslice(struct gs_reconciler *r);
/*
 * After an MPS fault on GPU `gpu` (MIG instance `gi`, -1 for the whole
 * GPU): quits and restarts its control daemon. Returns whether one ran.
 */
bool gs_reconciler_mps_restart(struct gs_reconciler *r, int gpu, int gi);
/* Adds "mps": {...} to a GPU's JSON object (api gpu_extra hook). */
void gs_reconciler_gpu_json(void *r, int gpu, void *json_obj);
/* MPS control daemons running now (metrics). */
int gs_reconciler_mps_running(struct gs_reconciler *r);

/*
 * Runs `argv[0]` from PATH with extra environment `env` ("K=V", NULL-
 * terminated, may be NULL), `input` on stdin (may be NULL), at most
 * `timeout_ms`; its stdout (at most len-1 bytes) into out (may be NULL).
 * Returns its exit status, or -1 when it could not run or timed out.
 */
int gs_run_cmd(char *const argv[], char *const env[], const char *input,
               char *out, size_t len, int timeout_ms);

#endif
