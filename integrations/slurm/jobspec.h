/*
 * jobspec.h - what a Slurm job step asks of gpuslice, and the slice it
 * gets: the plugin's plugstack.conf arguments, the --gpu-* options, the
 * gres facts of the step, the limits that follow from them and the
 * slice's name.
 *
 * Pure: no I/O, no environment, no Slurm. The SPANK glue
 * (spank_gpuslice.c) reads the environment and passes strings in, so
 * every rule here is checked by tests/unit/test_slurm_jobspec.c.
 *
 * The rules:
 *   - --gpu-mem, --gpu-compute, --gpu-priority set the slice's memory cap
 *     per GPU, compute limit and priority. They are checked where they
 *     are given (srun, sbatch, salloc), so a malformed value refuses the
 *     job at submission.
 *   - With gres/shard and no --gpu-compute, the shards are the compute
 *     share: held * 100 / (shards per GPU * GPUs the shards lie on),
 *     rounded down, at least 1.
 *   - A step that asks for nothing (no option, no shard) gets no slice:
 *     with gres/gpu the whole GPU is the job's, and its steps may slice it
 *     further with options of their own.
 *   - Priority is policy (issue #25): a job gets `normal` unless the
 *     administrator's qos_priority= table maps its QOS to another level.
 *     --gpu-priority may ask for that level or less; asking for more is
 *     refused, naming the QOS and its ceiling. No option raises a job to
 *     `high` on its own.
 *   - --gpuslice-swap=allow|never goes into the slice's spec (`swap`,
 *     docs/swap.md); only gpusliced swaps, so it matters with the daemon.
 *   - The job's slice is "slurm-<job>". A step whose limits differ from
 *     it (a step slicing the job's GPU) gets "slurm-<job>.<step>".
 */
#ifndef GS_SLURM_JOBSPEC_H
#define GS_SLURM_JOBSPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gs/err.h"
#include "gs/region.h"

#define GS_SLURM_PATH_MAX   1024
#define GS_SLURM_SOCKET_MAX 108 /* sun_path */

#define GS_SLURM_QOS_MAX    32 /* qos_priority= entries */
#define GS_SLURM_QOS_NAME   64

#define GS_SLURM_DEFAULT_RUN_DIR "/run/gpuslice"
#define GS_SLURM_DEFAULT_SOCKET  "/run/gpuslice/api.sock"

/* Whether slices are made through gpusliced (daemon= argument). */
enum gs_slurm_daemon {
	GS_SLURM_DAEMON_AUTO = 0, /* when its socket answers */
	GS_SLURM_DAEMON_OFF,      /* never: the region only */
	GS_SLURM_DAEMON_REQUIRED, /* always: a step fails without it */
};

/* One qos_priority= entry: jobs of QOS `name` get `priority`. */
struct gs_slurm_qos_prio {
	char name[GS_SLURM_QOS_NAME];
	int priority; /* enum gs_priority */
};

/* The plugstack.conf arguments (see docs/slurm.md). */
struct gs_slurm_conf {
	char run_dir[GS_REGION_DIR_MAX];   /* run_dir= */
	char socket[GS_SLURM_SOCKET_MAX];  /* socket= */
	char shim[GS_SLURM_PATH_MAX];      /* shim=; "" = next to the plugin */
	char gres_conf[GS_SLURM_PATH_MAX]; /* gres_conf=; "" = by slurm.conf */
	int shards_per_gpu;                /* shards_per_gpu=; 0 = gres.conf */
	enum gs_slurm_daemon daemon;       /* daemon= */
	uint32_t compute_mode; /* compute_mode=: enum gs_region_compute_mode */
	/* qos_priority=QOS:PRIO[,QOS:PRIO...] (repeatable; a later entry
	 * for the same QOS wins). Unlisted QOS: normal. */
	struct gs_slurm_qos_prio qos[GS_SLURM_QOS_MAX];
	int n_qos;
};

/* Sets the defaults: /run/gpuslice, its api.sock, daemon=auto, strict. */
void gs_slurm_conf_init(struct gs_slurm_conf *c);

/*
 * Reads "key=value" arguments over the current values. GS_ERR_INVALID
 * for an unknown key, GS_ERR_PARSE / GS_ERR_RANGE for a bad value; the
 * errbuf names the argument. On error the conf is partly updated.
 */
gs_err gs_slurm_conf_parse(struct gs_slurm_conf *c, int argc, char *const *argv,
                           struct gs_errbuf *eb);

/* The options, as the SPANK option table numbers them. */
enum gs_slurm_opt {
	GS_SLURM_OPT_MEM = 1,
	GS_SLURM_OPT_COMPUTE,
	GS_SLURM_OPT_PRIORITY,
	GS_SLURM_OPT_SWAP, /* --gpuslice-swap=allow|never */
};

/* What the user asked for. */
struct gs_slurm_request {
	uint64_t mem; /* bytes per GPU; 0 = not asked */
	int compute;  /* 1..100; 0 = not asked */
	int priority; /* enum gs_region_priority; -1 = not asked */
	int swap;     /* enum gs_swap_mode; -1 = not asked */
};

void gs_slurm_request_init(struct gs_slurm_request *rq);

/*
 * Sets one option from its text. On error the request is unchanged and
 * the errbuf says which option and why ("--gpu-mem: memory 'x' not
 * understood ..."). GS_ERR_INVALID for an unknown `opt`.
 */
gs_err gs_slurm_request_set(struct gs_slurm_request *rq, enum gs_slurm_opt opt,
                            const char *text, struct gs_errbuf *eb);

/* Whether any option was given. */
bool gs_slurm_request_is_set(const struct gs_slurm_request *rq);

/* The gres facts of a step, as Slurm put them in its environment. */
struct gs_slurm_gres {
	int n_gpus;         /* entries of CUDA_VISIBLE_DEVICES; 0 = none */
	int first_gpu;      /* its first entry when a number, else -1 */
	int shards_held;    /* SLURM_SHARDS_ON_NODE; 0 = none */
	int shards_per_gpu; /* configured on the node; 0 = not known */
};

/*
 * Fills `g` from the two variables (NULL when unset). A malformed
 * SLURM_SHARDS_ON_NODE is GS_ERR_PARSE. shards_per_gpu is left 0.
 */
gs_err gs_slurm_gres_from_env(struct gs_slurm_gres *g,
                              const char *cuda_visible_devices,
                              const char *shards_on_node, struct gs_errbuf *eb);

/*
 * The limits of a step's slice. OUT: *lim (name left empty, flags
 * GS_SLICE_EPHEMERAL), *wanted: false when the step asks for nothing,
 * and then *lim is untouched. GS_ERR_INVALID when shards are held,
 * no --gpu-compute was given and the shards per GPU are not known.
 */
gs_err gs_slurm_limits(const struct gs_slurm_conf *c,
                       const struct gs_slurm_request *rq,
                       const struct gs_slurm_gres *g,
                       struct gs_slice_limits *lim, bool *wanted,
                       struct gs_errbuf *eb);

/*
 * The priority a job of QOS `qos` (NULL or "" when Slurm gave none) may
 * have: its qos_priority= entry, else normal. OUT: *ceiling.
 */
void gs_slurm_qos_ceiling(const struct gs_slurm_conf *c, const char *qos,
                          int *ceiling);

/*
 * gs_slurm_limits with the job's QOS applied: the slice's priority is
 * --gpu-priority when given and not above the QOS's ceiling, else the
 * ceiling. GS_ERR_PERM (the errbuf names the QOS and its ceiling) for a
 * --gpu-priority above it. The plugin calls this one; gs_slurm_limits
 * is the conversion without the policy (any priority passes).
 */
gs_err gs_slurm_limits_qos(const struct gs_slurm_conf *c,
                           const struct gs_slurm_request *rq,
                           const struct gs_slurm_gres *g, const char *qos,
                           struct gs_slice_limits *lim, bool *wanted,
                           struct gs_errbuf *eb);

/* Whether two slices enforce the same thing (names and flags aside). */
bool gs_slurm_limits_same(const struct gs_slice_limits *a,
                          const struct gs_slice_limits *b);

/*
 * Step ids as names: "batch", "extern", "interactive", or the number.
 * Returns `buf` (at least 16 bytes).
 */
const char *gs_slurm_step_name(uint32_t step, char *buf, size_t len);

/*
 * "slurm-<job>" (step NULL) or "slurm-<job>.<step>". Returns the length
 * written, or needed (snprintf rules).
 */
int gs_slurm_slice_name(uint32_t job, const char *step, char *buf, size_t len);

/* Whether slice `name` belongs to job `job` (its slice or a step's). */
bool gs_slurm_slice_is_of_job(const char *name, uint32_t job);

/*
 * Whether `account` can be a gpuslice team name as it is
 * ([A-Za-z0-9._-], 1..63 characters).
 */
bool gs_slurm_team_is_valid(const char *account);

#endif
