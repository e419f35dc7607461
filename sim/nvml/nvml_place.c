/*
 * nvml_place.c - MIG placement rules over the catalog (see nvml_place.h).
 *
 * A GI fits when its placement is one the catalog lists for the profile,
 * its memory-slice range overlaps no live GI, and the per-GPU limits still
 * allow it: the profile's own instance count (one "+me" per GPU), the
 * model's GI count and its compute slices. The catalog notes that on the
 * 8-slice GPUs memory overlap alone already implies the compute limit; the
 * compute check is kept so that a catalog entry marked "inferred" cannot
 * make the sim hand out more SMs than the GPU has.
 */
#include "nvml_place.h"

#include <stddef.h>

static bool ranges_overlap(int a, int alen, int b, int blen)
{
	return a < b + blen && b < a + alen;
}

bool gs__place_gi_valid(const struct gs_mig_profile *p, int start, int size)
{
	if (size != p->memory_slices)
		return false;
	for (int i = 0; i < p->n_placements; i++)
		if (p->placements[i].start == start &&
		    p->placements[i].size == size)
			return true;
	return false;
}

static nvmlReturn_t room_for(const struct gs_gpu_model *m,
                             const struct gs_mig_profile *p,
                             const struct gs__place_live *live, int n,
                             int start)
{
	int same = 0, slices = 0;

	if (n >= m->max_gpu_instances)
		return NVML_ERROR_INSUFFICIENT_RESOURCES;
	for (int i = 0; i < n; i++) {
		if (live[i].profile_id == p->profile_id)
			same++;
		slices += live[i].compute_slices;
		if (ranges_overlap(start, p->memory_slices, live[i].start,
		                   live[i].size))
			return NVML_ERROR_INSUFFICIENT_RESOURCES;
	}
	if (same >= p->max_instances)
		return NVML_ERROR_INSUFFICIENT_RESOURCES;
	if (slices + p->compute_slices > m->compute_slices)
		return NVML_ERROR_INSUFFICIENT_RESOURCES;
	return NVML_SUCCESS;
}

nvmlReturn_t gs__place_gi_check(const struct gs_gpu_model *m,
                                const struct gs_mig_profile *p,
                                const struct gs__place_live *live, int n,
                                int start)
{
	if (!gs__place_gi_valid(p, start, p->memory_slices))
		return NVML_ERROR_INVALID_ARGUMENT;
	return room_for(m, p, live, n, start);
}

int gs__place_gi_pick(const struct gs_gpu_model *m,
                      const struct gs_mig_profile *p,
                      const struct gs__place_live *live, int n)
{
	for (int i = 0; i < p->n_placements; i++)
		if (room_for(m, p, live, n, p->placements[i].start) ==
		    NVML_SUCCESS)
			return p->placements[i].start;
	return -1;
}

int gs__place_gi_remaining(const struct gs_gpu_model *m,
                           const struct gs_mig_profile *p,
                           const struct gs__place_live *live, int n)
{
	/* Same-size ranges: first fit by start packs as many as possible. */
	struct gs__place_live tmp[GS_CATALOG_MAX_PLACEMENTS * 2];
	int count = 0, start;

	if (n > (int)(sizeof(tmp) / sizeof(tmp[0])) - GS_CATALOG_MAX_PLACEMENTS)
		return 0;
	for (int i = 0; i < n; i++)
		tmp[i] = live[i];
	while ((start = gs__place_gi_pick(m, p, tmp, n + count)) >= 0) {
		tmp[n + count].profile_id = p->profile_id;
		tmp[n + count].start = start;
		tmp[n + count].size = p->memory_slices;
		tmp[n + count].compute_slices = p->compute_slices;
		count++;
		if (count >= GS_CATALOG_MAX_PLACEMENTS)
			break;
	}
	return count;
}

int gs__place_ci_slices(int gi_slices, int ci_profile)
{
	int s;

	switch (ci_profile) {
	case NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE:
		s = 1;
		break;
	case NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE:
		s = 2;
		break;
	case NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE:
		s = 3;
		break;
	case NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE:
		s = 4;
		break;
	case NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE:
		s = 7;
		break;
	default:
		/* 8_SLICE, 6_SLICE, 1_SLICE_REV1, 7_SLICE_NVL: not offered. */
		return 0;
	}
	if (s > gi_slices)
		return 0;
	/* A 3-slice CI only in 3g and 7g GIs, a 4-slice one in 4g and 7g. */
	if (s == 3 && gi_slices != 3 && gi_slices != 7)
		return 0;
	if (s == 4 && gi_slices != 4 && gi_slices != 7)
		return 0;
	if (s == 7 && gi_slices != 7)
		return 0;
	return s;
}

int gs__place_ci_max(int gi_slices, int ci_profile)
{
	int s = gs__place_ci_slices(gi_slices, ci_profile);

	return s == 0 ? 0 : gi_slices / s;
}

int gs__place_ci_placements(int gi_slices, int ci_profile,
                            nvmlComputeInstancePlacement_t *out, int cap)
{
	int s = gs__place_ci_slices(gi_slices, ci_profile), n = 0;

	if (s == 0)
		return 0;
	for (int start = 0; start + s <= gi_slices; start += s) {
		if (out != NULL && n < cap) {
			out[n].start = (unsigned int)start;
			out[n].size = (unsigned int)s;
		}
		n++;
	}
	return n;
}

nvmlReturn_t gs__place_ci_check(int gi_slices, int ci_profile,
                                const struct gs__place_live *live, int n,
                                int start)
{
	int s = gs__place_ci_slices(gi_slices, ci_profile);

	if (s == 0 || start < 0 || start % s != 0 || start + s > gi_slices)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < n; i++)
		if (ranges_overlap(start, s, live[i].start, live[i].size))
			return NVML_ERROR_INSUFFICIENT_RESOURCES;
	return NVML_SUCCESS;
}

int gs__place_ci_pick(int gi_slices, int ci_profile,
                      const struct gs__place_live *live, int n)
{
	int s = gs__place_ci_slices(gi_slices, ci_profile);

	if (s == 0)
		return -1;
	for (int start = 0; start + s <= gi_slices; start += s)
		if (gs__place_ci_check(gi_slices, ci_profile, live, n, start) ==
		    NVML_SUCCESS)
			return start;
	return -1;
}

int gs__place_ci_remaining(int gi_slices, int ci_profile,
                           const struct gs__place_live *live, int n)
{
	int s = gs__place_ci_slices(gi_slices, ci_profile), count = 0;

	if (s == 0)
		return 0;
	for (int start = 0; start + s <= gi_slices; start += s)
		if (gs__place_ci_check(gi_slices, ci_profile, live, n, start) ==
		    NVML_SUCCESS)
			count++;
	return count;
}
