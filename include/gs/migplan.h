/*
 * migplan.h - the MIG layout planner: from the instances a GPU has now and
 * the instances workloads are waiting for, the layout to move to and the
 * steps that get there.
 *
 * The target layout
 *   1. keeps every in-use instance exactly where it is;
 *   2. uses only the catalog's placements, no two overlapping, within the
 *      model's instance, compute-slice and per-profile limits;
 *   3. serves the most pending demand, weighted by the memory slices of
 *      each profile (an instance of 3g.40gb served counts 4, 1g.10gb 1):
 *      memory slices are what placements consume, so the weight is what an
 *      instance takes away from everybody else; idle existing instances of
 *      a demanded profile serve that demand without being recreated;
 *   4. among the layouts that serve the most, changes the fewest instances
 *      (destroyed + created).
 * Ties after 4 are broken deterministically (lower starts first).
 *
 * Steps list every destroy before any create (destroys free the slices
 * the creates need); each names a profile and a placement start.
 *
 * The search is exact: depth-first over memory-slice positions with
 * branch and bound (at most a few thousand layouts exist on an 8-slice
 * GPU); tests/unit/test_migplan.c checks it against exhaustive search for
 * every catalog model. Pure: no allocation, no I/O; all storage is the
 * caller's.
 */
#ifndef GS_MIGPLAN_H
#define GS_MIGPLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "gs/catalog.h"
#include "gs/err.h"

/* Memory slices bound the instances on a GPU (8 on every catalog model). */
#define GS_MIGPLAN_MAX_INSTANCES 8
#define GS_MIGPLAN_MAX_STEPS     (2 * GS_MIGPLAN_MAX_INSTANCES)
/* Most instances of one profile a demand may ask for. */
#define GS_MIGPLAN_MAX_DEMAND 64

struct gs_mig_instance {
	const struct gs_mig_profile *profile; /* into the catalog */
	int start;                            /* memory slice */
	bool in_use;
};

struct gs_mig_demand {
	const struct gs_mig_profile *profile;
	int count;
};

enum gs_mig_op { GS_MIG_DESTROY, GS_MIG_CREATE };

struct gs_mig_step {
	enum gs_mig_op op;
	const struct gs_mig_profile *profile;
	int start;
};

struct gs_mig_plan {
	int n_layout; /* sorted by start */
	struct gs_mig_instance layout[GS_MIGPLAN_MAX_INSTANCES];
	int n_steps; /* destroys (by start), then creates (by start) */
	struct gs_mig_step steps[GS_MIGPLAN_MAX_STEPS];
	int n_unmet; /* demand left over, in demand order */
	struct gs_mig_demand unmet[GS_CATALOG_MAX_PROFILES];
	int served_weight; /* demand served, in memory slices */
	int demand_weight; /* demand asked for, in memory slices */
	long nodes;        /* search positions visited (for benchmarks) */
};

/*
 * Plans for model `m`. `current` holds the GPU's instances (in-use or
 * idle); they must be valid placements of m's profiles and must not
 * overlap. `demand` may name a profile more than once (counts add up).
 * Errors: GS_ERR_INVALID for a current layout that is not valid on m,
 * GS_ERR_RANGE for a count outside 0..GS_MIGPLAN_MAX_DEMAND or above what
 * the model can ever hold of that profile, GS_ERR_UNKNOWN_PROFILE for a
 * profile not of this model. On error *out is unspecified.
 */
gs_err gs_migplan_solve(const struct gs_gpu_model *m,
                        const struct gs_mig_instance *current, int n_current,
                        const struct gs_mig_demand *demand, int n_demand,
                        struct gs_mig_plan *out, struct gs_errbuf *eb);

/*
 * Whether `layout` is valid on m (placements, overlap, limits); the
 * errbuf says what is wrong (GS_ERR_INVALID / GS_ERR_UNKNOWN_PROFILE).
 */
gs_err gs_migplan_check_layout(const struct gs_gpu_model *m,
                               const struct gs_mig_instance *layout, int n,
                               struct gs_errbuf *eb);

/*
 * The smallest plain (attribute-free) profile of m that holds a slice of
 * `memory_bytes` (0 = any) and `compute_pct` percent of the GPU's compute
 * slices (0 = any): fewest memory slices first, then fewest compute
 * slices. Profile memory is the catalog's NVML value, or the name's GB
 * when that is unknown. NULL when no profile is large enough.
 */
const struct gs_mig_profile *
gs_migplan_smallest_profile(const struct gs_gpu_model *m, uint64_t memory_bytes,
                            int compute_pct);

/*
 * Text forms used by the CLI and the daemon API:
 *   instances "3g.40gb@0,1g.10gb@6"    demand "1g.10gb=4,2g.20gb=1"
 * Appends to out[] (capacity `cap`), updating *n. GS_ERR_PARSE for text
 * that does not read, GS_ERR_UNKNOWN_PROFILE for a profile not of m,
 * GS_ERR_RANGE when more entries than cap.
 */
gs_err gs_migplan_parse_instances(const struct gs_gpu_model *m,
                                  const char *text, bool in_use,
                                  struct gs_mig_instance *out, int cap, int *n,
                                  struct gs_errbuf *eb);
gs_err gs_migplan_parse_demand(const struct gs_gpu_model *m, const char *text,
                               struct gs_mig_demand *out, int cap, int *n,
                               struct gs_errbuf *eb);

#endif
