/*
 * hold.h - a job step's hold on its slice, on the node, from slurmstepd.
 *
 * Two ways, one interface:
 *
 *   daemon      gpusliced answers on its socket (plugstack daemon=auto or
 *               required): the slice is made through its API with the
 *               job's user as owner and the job's account as team, so the
 *               ledger bills the account; mode timeslice (Slurm already
 *               chose the GPU: the daemon must not move the job to MPS or
 *               MIG). The slurmstepd is attached to it, and it is made
 *               with on_exit=delete, so the daemon deletes it within its
 *               housekeeping second should every holder die.
 *   standalone  no daemon: the plugin is the owner of the shared region
 *               in run_dir (root made, limits 0644: tasks read their
 *               limits and cannot raise them) and keeps the slice there
 *               itself, the way `gpuslice run` does, with the slurmstepd
 *               attached as the slice's runner.
 *
 * Life of a hold (in one slurmstepd):
 *
 *   init --gs_slurm_hold_acquire--> held --gs_slurm_hold_release--> init
 *
 * acquire creates the job's slice "slurm-<job>", or joins it when another
 * step of the job made it with the same limits; a step with other limits
 * gets "slurm-<job>.<step>". A job slice that no live slurmstepd holds is
 * a leftover (a slurmstepd killed with -9) and is taken over. release
 * leaves the slice and deletes it when no other slurmstepd holds it, even
 * if stray processes of the step are still attached: a slice never
 * outlives the steps that made it. gs_slurm_sweep() deletes every slice
 * of a job, from the job's epilog, for whatever a crash left behind.
 *
 * Errors: GS_ERR_UNAVAILABLE when daemon=required and gpusliced does not
 * answer; otherwise what the region or the daemon said (NO_FIT, QUOTA,
 * PERM, ...), with the message in the errbuf. A failed acquire leaves
 * nothing behind.
 */
#ifndef GS_SLURM_HOLD_H
#define GS_SLURM_HOLD_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "gs/err.h"
#include "gs/region.h"
#include "jobspec.h"

#define GS_SLURM_ACCOUNT_MAX 64
#define GS_SLURM_VISIBLE_MAX 256

/* Who holds: the job step, as slurmstepd knows it. */
struct gs_slurm_who {
	uint32_t job_id;
	uint32_t step_id;
	uint32_t uid;
	char account[GS_SLURM_ACCOUNT_MAX]; /* "" when unknown */
	int gpu_index; /* first GPU Slurm gave the step; -1 unknown */
	int n_gpus;    /* GPUs Slurm gave the step; 0 none */
	/* --gpuslice-swap: enum gs_swap_mode, or -1 for the daemon's
	 * default. Goes into the slice's spec (daemon only: only gpusliced
	 * swaps). */
	int swap;
};

struct gs_slurm_hold {
	bool held;
	bool via_daemon;
	char name[GS_REGION_NAME_MAX];   /* the slice */
	char run_dir[GS_REGION_DIR_MAX]; /* its region, for GPUSLICE_RUN_DIR */
	/* CUDA_VISIBLE_DEVICES the daemon chose ("" = keep Slurm's). */
	char visible[GS_SLURM_VISIBLE_MAX];
	char socket[GS_SLURM_SOCKET_MAX];
	struct gs_region *region; /* standalone */
	struct gs_slice_ref slice;
	struct gs_proc_ref proc;
};

void gs_slurm_hold_init(struct gs_slurm_hold *h);

/*
 * Creates or joins the step's slice with limits `lim` (its name is
 * ignored). OUT: *h (held on success; release it with
 * gs_slurm_hold_release).
 */
gs_err gs_slurm_hold_acquire(struct gs_slurm_hold *h,
                             const struct gs_slurm_conf *c,
                             const struct gs_slurm_who *w,
                             const struct gs_slice_limits *lim,
                             struct gs_errbuf *eb);

/*
 * Tells the daemon that task `pid` belongs to the slice (for its
 * watchdog); nothing in standalone mode, where the shim attaches the task
 * itself.
 */
gs_err gs_slurm_hold_add_task(struct gs_slurm_hold *h, int32_t pid,
                              struct gs_errbuf *eb);

/*
 * Leaves the slice and deletes it when no other slurmstepd holds it.
 * Never fails (problems go to the errbuf); a hold not held does nothing.
 */
void gs_slurm_hold_release(struct gs_slurm_hold *h, struct gs_errbuf *eb);

/*
 * The spec the step's slice is created with through gpusliced's API:
 * name, mode timeslice, memory, compute, priority, gpu, swap (when the
 * step asked), team (with_team), owner, on_exit=delete. NULL on ENOMEM;
 * the caller owns the reference.
 */
json_t *gs_slurm_hold_spec_json(const char *name,
                                const struct gs_slice_limits *lim,
                                const struct gs_slurm_who *w, bool with_team);

/*
 * Deletes every slice of job `job` (the epilog's backstop), through the
 * daemon when it answers and in run_dir's region when it exists; creates
 * nothing. OUT: *deleted (may be NULL).
 */
gs_err gs_slurm_sweep(const struct gs_slurm_conf *c, uint32_t job, int *deleted,
                      struct gs_errbuf *eb);

#endif
