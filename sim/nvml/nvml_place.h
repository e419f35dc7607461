/*
 * nvml_place.h - the MIG geometry rules the simulated driver enforces:
 * which GPU-instance placements a profile allows, whether a new instance
 * fits next to the live ones, where the driver puts an instance when the
 * caller names no placement, and the same for compute instances inside a
 * GPU instance. Pure: the caller passes the model (from the catalog) and
 * the live instances; nothing here touches the node state or allocates.
 *
 * Verdicts are NVML return codes because that is what the callers hand on:
 *   NVML_SUCCESS                      fits
 *   NVML_ERROR_INVALID_ARGUMENT       the placement is not one the profile
 *                                     allows (wrong start or size)
 *   NVML_ERROR_INSUFFICIENT_RESOURCES valid, but it overlaps a live
 *                                     instance or a per-GPU limit is spent
 *                                     (instance count, compute slices)
 * Placements are in memory-slice units for GPU instances and compute-slice
 * units (inside the GI) for compute instances; two instances conflict iff
 * their [start, start + size) ranges overlap.
 */
#ifndef GS_SIM_NVML_PLACE_H
#define GS_SIM_NVML_PLACE_H

#include <stdbool.h>

#include "gs/catalog.h"
#include "gs/nvml.h"

/* One live instance as the rules see it (GI: memory slices; CI: compute). */
struct gs__place_live {
	int profile_id;
	int start;
	int size;
	int compute_slices;
};

/* Whether `start`/`size` is one of the profile's catalog placements. */
bool gs__place_gi_valid(const struct gs_mig_profile *p, int start, int size);

/* Verdict for a new GI of profile `p` at `start` next to `live[0..n)`. */
nvmlReturn_t gs__place_gi_check(const struct gs_gpu_model *m,
                                const struct gs_mig_profile *p,
                                const struct gs__place_live *live, int n,
                                int start);

/*
 * The placement the simulated driver picks when none is given: the first
 * of the profile's catalog placements (lowest start) that fits. Returns
 * its start, or -1 when none fits.
 */
int gs__place_gi_pick(const struct gs_gpu_model *m,
                      const struct gs_mig_profile *p,
                      const struct gs__place_live *live, int n);

/* How many more GIs of profile `p` fit now (greedy first-fit, as created). */
int gs__place_gi_remaining(const struct gs_gpu_model *m,
                           const struct gs_mig_profile *p,
                           const struct gs__place_live *live, int n);

/*
 * Compute instances. `ci_profile` is an NVML_COMPUTE_INSTANCE_PROFILE_*
 * value, which is also the CI profile ID. A GI of `gi_slices` compute
 * slices offers the CI sizes 1, 2, 3 (3g and 7g only), 4 (4g and 7g) and
 * its own size; placements of a size-s CI start at multiples of s.
 * Returns the CI's size in compute slices, or 0 when the GI does not
 * offer that profile.
 */
int gs__place_ci_slices(int gi_slices, int ci_profile);
/* Max CIs of that profile in an empty GI (0 when not offered). */
int gs__place_ci_max(int gi_slices, int ci_profile);
/* Possible CI placements; writes at most `cap`, returns how many exist. */
int gs__place_ci_placements(int gi_slices, int ci_profile,
                            nvmlComputeInstancePlacement_t *out, int cap);
nvmlReturn_t gs__place_ci_check(int gi_slices, int ci_profile,
                                const struct gs__place_live *live, int n,
                                int start);
int gs__place_ci_pick(int gi_slices, int ci_profile,
                      const struct gs__place_live *live, int n);
int gs__place_ci_remaining(int gi_slices, int ci_profile,
                           const struct gs__place_live *live, int n);

#endif
