/*
 * nvml_mig.c - MIG on the simulated NVML: mode, GPU-instance profiles and
 * placements, GPU and compute instances, MIG device handles.
 *
 * What a MIG layout is in the node state (state.h, struct gs_sim_mig):
 * GI slot i of a GPU holds one GPU instance; the sim allows one compute
 * instance per GI (the common case: `nvidia-smi mig -cgi ... -C`, the
 * device plugin's and DRA driver's layouts), which may be smaller than
 * the GI. The CI is the MIG device: it gets a fresh "MIG-<uuid>" when
 * created, and its execution engine (1 + i) is initialised with the CI's
 * SMs and the GI's memory. The CUDA stand-in finds MIG devices by that
 * UUID and runs contexts on the engine; both vanish when the CI is
 * destroyed.
 *
 * Mode changes:
 *
 *   nvmlDeviceSetMigMode(m) --> pending = m
 *     Hopper and later (catalog: no reset needed) --> current = m at once
 *     Ampere --> activationStatus RESET_REQUIRED; current changes at the
 *                next GPU reset (`nvidia-smi -i N -r` on the sim)
 *     processes on the GPU --> activationStatus IN_USE, current unchanged
 *   Disabling while GPU instances exist is refused with IN_USE.
 *
 * GI ids: a GI spanning the whole GPU gets id 0, others the lowest free id
 * from 1 (the real driver derives ids from profile and placement; callers
 * must read them back, which is all this keeps true). CI ids start at 0.
 * Placement rules and error codes: nvml_place.h.
 */
#include "nvml_int.h"

#include "gs/faultinj.h"

/* Tests make the Nth call of a MIG function fail (GPUSLICE_FAULT,
 * gs/faultinj.h), as a driver can: an unknown error, nothing changed. */
#define GS__SIM_FAULT(name)                                                    \
	do {                                                                   \
		if (gs_fault_hit(name))                                        \
			return NVML_ERROR_UNKNOWN;                             \
	} while (0)

#include <stdio.h>
#include <string.h>

#include "nvml_place.h"

static nvmlReturn_t enter_dev(nvmlDevice_t h, struct gs__dev *d)
{
	struct gs_sim_state *st;
	nvmlReturn_t r = gs__nvml_enter(&st);

	if (r != NVML_SUCCESS)
		return r;
	r = gs__nvml_dev(st, h, d);
	if (r != NVML_SUCCESS)
		gs__nvml_leave(st);
	return r;
}

/* A GPU (not MIG device) handle of a MIG-capable model. */
static nvmlReturn_t enter_gpu(nvmlDevice_t h, struct gs__dev *d)
{
	nvmlReturn_t r = enter_dev(h, d);

	if (r != NVML_SUCCESS)
		return r;
	if (d->m != NULL) {
		gs__nvml_leave(d->st);
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	if (d->model == NULL || d->model->n_profiles == 0) {
		gs__nvml_leave(d->st);
		return NVML_ERROR_NOT_SUPPORTED;
	}
	return NVML_SUCCESS;
}

static nvmlReturn_t enter_gi(nvmlGpuInstance_t h, struct gs__dev *d)
{
	struct gs_sim_state *st;
	nvmlReturn_t r = gs__nvml_enter(&st);

	if (r != NVML_SUCCESS)
		return r;
	r = gs__nvml_gi(st, h, d);
	if (r == NVML_SUCCESS && d->model == NULL)
		r = NVML_ERROR_NOT_SUPPORTED;
	if (r != NVML_SUCCESS)
		gs__nvml_leave(st);
	return r;
}

static nvmlReturn_t enter_ci(nvmlComputeInstance_t h, struct gs__dev *d)
{
	struct gs_sim_state *st;
	nvmlReturn_t r = gs__nvml_enter(&st);

	if (r != NVML_SUCCESS)
		return r;
	r = gs__nvml_ci(st, h, d);
	if (r != NVML_SUCCESS)
		gs__nvml_leave(st);
	return r;
}

/* ---- catalog figures ---------------------------------------------------- */

static uint64_t profile_mem_mib(const struct gs_gpu_model *m,
                                const struct gs_mig_profile *p)
{
	if (p->memory_mib != 0)
		return p->memory_mib;
	return m->memory_slices > 0
	           ? m->memory_mib * (uint64_t)p->memory_slices /
	                 (uint64_t)m->memory_slices
	           : 0;
}

static uint32_t profile_sms(const struct gs_gpu_model *m,
                            const struct gs_mig_profile *p)
{
	if (p->sm_count > 0)
		return (uint32_t)p->sm_count;
	return m->compute_slices > 0
	           ? (uint32_t)(m->sm_count * p->compute_slices /
	                        m->compute_slices)
	           : 0;
}

static bool has_media(const struct gs_mig_profile *p)
{
	return p->attributes != NULL && strcmp(p->attributes, "me") == 0;
}

static const struct gs_mig_profile *by_index(const struct gs_gpu_model *m,
                                             unsigned int index)
{
	for (int i = 0; i < m->n_profiles; i++)
		if (m->profiles[i].nvml_profile_index == (int)index)
			return &m->profiles[i];
	return NULL;
}

static const struct gs_mig_profile *gi_profile(const struct gs__dev *d)
{
	return gs_catalog_profile_by_id(d->model, (int)d->m->profile_id);
}

/* Live GIs of a GPU as the placement rules see them; returns the count. */
static int live_gis(const struct gs__dev *d, struct gs__place_live *out)
{
	int n = 0;

	for (int s = 0; s < GS_SIM_MAX_MIG; s++) {
		const struct gs_sim_mig *m = &d->g->mig[s];
		const struct gs_mig_profile *p;

		if (!m->in_use)
			continue;
		p = gs_catalog_profile_by_id(d->model, (int)m->profile_id);
		out[n].profile_id = (int)m->profile_id;
		out[n].start = (int)m->start;
		out[n].size = (int)m->size;
		out[n].compute_slices = p != NULL ? p->compute_slices : 0;
		n++;
	}
	return n;
}

static bool gpu_has_procs(const struct gs__dev *d, int engine)
{
	(void)gs_sim_reap(d->st, gs_sim_now_ns());
	for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
		const struct gs_sim_proc *p = &d->st->procs[i];

		if (p->state == GS_SIM_PROC_LIVE && p->gpu == d->gpu &&
		    (engine < 0 || p->engine == (uint32_t)engine))
			return true;
	}
	return false;
}

/* ---- MIG mode -------------------------------------------------------------
 */

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device,
                                  unsigned int *currentMode,
                                  unsigned int *pendingMode)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_gpu(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (currentMode == NULL || pendingMode == NULL) {
		r = NVML_ERROR_INVALID_ARGUMENT;
	} else {
		*currentMode = d.g->mig_mode;
		*pendingMode = d.g->mig_pending;
	}
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                  nvmlReturn_t *activationStatus)
{
	GS__SIM_FAULT("nvmlDeviceSetMigMode");
	struct gs__dev d;
	nvmlReturn_t r = enter_gpu(device, &d);
	nvmlReturn_t act = NVML_SUCCESS;

	if (r != NVML_SUCCESS)
		return r;
	if (activationStatus == NULL || (mode != NVML_DEVICE_MIG_DISABLE &&
	                                 mode != NVML_DEVICE_MIG_ENABLE)) {
		gs__nvml_leave(d.st);
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	if (mode == NVML_DEVICE_MIG_DISABLE) {
		for (int s = 0; s < GS_SIM_MAX_MIG; s++) {
			if (d.g->mig[s].in_use) {
				gs__nvml_leave(d.st);
				*activationStatus = NVML_ERROR_IN_USE;
				return NVML_ERROR_IN_USE;
			}
		}
	}
	d.g->mig_pending = mode;
	if (d.g->mig_mode != mode) {
		if (gpu_has_procs(&d, -1))
			act = NVML_ERROR_IN_USE;
		else if (d.model->mig_mode_change_needs_reset)
			act = NVML_ERROR_RESET_REQUIRED;
		else
			d.g->mig_mode = mode;
	}
	gs__nvml_leave(d.st);
	*activationStatus = act;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device,
                                         unsigned int *isMigDevice)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (isMigDevice == NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else
		*isMigDevice = d.m != NULL;
	gs__nvml_leave(d.st);
	return r;
}

/* ---- GPU instance profiles ----------------------------------------------- */

/* Everything the three profile-info layouts carry, in one place. */
struct gi_info {
	unsigned int id, slices, instances, sms, ce, dec, enc, jpg, ofa;
	unsigned long long mem_mib;
	char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
};

static void gi_info_of(const struct gs_gpu_model *m,
                       const struct gs_mig_profile *p, struct gi_info *o)
{
	bool me = has_media(p);

	memset(o, 0, sizeof(*o));
	o->id = (unsigned int)p->profile_id;
	o->slices = (unsigned int)p->compute_slices;
	o->instances = (unsigned int)p->max_instances;
	o->sms = profile_sms(m, p);
	o->ce = (unsigned int)p->compute_slices;
	o->dec = me ? 1 : (unsigned int)p->compute_slices / 2;
	o->jpg = me ? 1 : 0;
	o->ofa = me || p->compute_slices == m->compute_slices ? 1 : 0;
	o->mem_mib = profile_mem_mib(m, p);
	(void)snprintf(o->name, sizeof(o->name), "MIG %s", p->name);
}

/* MIG must be on for profile queries, as on the real driver. */
static nvmlReturn_t find_profile(const struct gs__dev *d, unsigned int key,
                                 bool by_id, const struct gs_mig_profile **out)
{
	if (!by_id && key >= NVML_GPU_INSTANCE_PROFILE_COUNT)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!d->g->mig_mode)
		return NVML_ERROR_NOT_SUPPORTED;
	*out = by_id ? gs_catalog_profile_by_id(d->model, (int)key)
	             : by_index(d->model, key);
	return *out != NULL ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t
nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                    nvmlGpuInstanceProfileInfo_t *info)
{
	const struct gs_mig_profile *p;
	struct gi_info gi;
	struct gs__dev d;
	nvmlReturn_t r = enter_gpu(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (info == NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else
		r = find_profile(&d, profile, false, &p);
	if (r == NVML_SUCCESS) {
		gi_info_of(d.model, p, &gi);
		memset(info, 0, sizeof(*info));
		info->id = gi.id;
		info->isP2pSupported = 0;
		info->sliceCount = gi.slices;
		info->instanceCount = gi.instances;
		info->multiprocessorCount = gi.sms;
		info->copyEngineCount = gi.ce;
		info->decoderCount = gi.dec;
		info->encoderCount = gi.enc;
		info->jpegCount = gi.jpg;
		info->ofaCount = gi.ofa;
		info->memorySizeMB = gi.mem_mib;
	}
	gs__nvml_leave(d.st);
	return r;
}

/* Fills a v2 or v3 struct (the caller's version word decides). */
static nvmlReturn_t fill_info_v(const struct gs_gpu_model *m,
                                const struct gs_mig_profile *p,
                                nvmlGpuInstanceProfileInfo_v2_t *info)
{
	struct gi_info gi;
	unsigned int version = info->version;

	gi_info_of(m, p, &gi);
	if (version == nvmlGpuInstanceProfileInfo_v2) {
		memset(info, 0, sizeof(*info));
		info->version = version;
		info->id = gi.id;
		info->isP2pSupported = 0;
		info->sliceCount = gi.slices;
		info->instanceCount = gi.instances;
		info->multiprocessorCount = gi.sms;
		info->copyEngineCount = gi.ce;
		info->decoderCount = gi.dec;
		info->encoderCount = gi.enc;
		info->jpegCount = gi.jpg;
		info->ofaCount = gi.ofa;
		info->memorySizeMB = gi.mem_mib;
		memcpy(info->name, gi.name, sizeof(info->name));
		return NVML_SUCCESS;
	}
	if (version == nvmlGpuInstanceProfileInfo_v3) {
		nvmlGpuInstanceProfileInfo_v3_t *v3 =
		    (nvmlGpuInstanceProfileInfo_v3_t *)info;

		memset(v3, 0, sizeof(*v3));
		v3->version = version;
		v3->id = gi.id;
		v3->sliceCount = gi.slices;
		v3->instanceCount = gi.instances;
		v3->multiprocessorCount = gi.sms;
		v3->copyEngineCount = gi.ce;
		v3->decoderCount = gi.dec;
		v3->encoderCount = gi.enc;
		v3->jpegCount = gi.jpg;
		v3->ofaCount = gi.ofa;
		v3->memorySizeMB = gi.mem_mib;
		memcpy(v3->name, gi.name, sizeof(v3->name));
		v3->capabilities = 0; /* no P2P, no graphics on the sim */
		return NVML_SUCCESS;
	}
	return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
}

static nvmlReturn_t profile_info_v(nvmlDevice_t device, unsigned int key,
                                   bool by_id,
                                   nvmlGpuInstanceProfileInfo_v2_t *info)
{
	const struct gs_mig_profile *p;
	struct gs__dev d;
	nvmlReturn_t r = enter_gpu(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (info == NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else if (info->version != nvmlGpuInstanceProfileInfo_v2 &&
	         info->version != nvmlGpuInstanceProfileInfo_v3)
		r = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	else
		r = find_profile(&d, key, by_id, &p);
	if (r == NVML_SUCCESS)
		r = fill_info_v(d.model, p, info);
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t
nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                     nvmlGpuInstanceProfileInfo_v2_t *info)
{
	return profile_info_v(device, profile, false, info);
}

nvmlReturn_t
nvmlDeviceGetGpuInstanceProfileInfoByIdV(nvmlDevice_t device,
                                         unsigned int profileId,
                                         nvmlGpuInstanceProfileInfo_v2_t *info)
{
	return profile_info_v(device, profileId, true, info);
}

nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned int profileId,
    nvmlGpuInstancePlacement_t *placements, unsigned int *count)
{
	const struct gs_mig_profile *p;
	struct gs__dev d;
	nvmlReturn_t r = enter_gpu(device, &d);
	unsigned int n;

	if (r != NVML_SUCCESS)
		return r;
	/* Listed whether or not MIG is enabled. */
	p = gs_catalog_profile_by_id(d.model, (int)profileId);
	gs__nvml_leave(d.st);
	if (count == NULL || p == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	n = (unsigned int)p->n_placements;
	if (placements == NULL) {
		*count = n;
		return NVML_SUCCESS;
	}
	if (*count < n) {
		*count = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (unsigned int i = 0; i < n; i++) {
		placements[i].start = p->placements[i].start;
		placements[i].size = p->placements[i].size;
	}
	*count = n;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device,
                                                       unsigned int profileId,
                                                       unsigned int *count)
{
	struct gs__place_live live[GS_SIM_MAX_MIG];
	const struct gs_mig_profile *p;
	struct gs__dev d;
	nvmlReturn_t r = enter_gpu(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (count == NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else
		r = find_profile(&d, profileId, true, &p);
	if (r == NVML_SUCCESS)
		*count = (unsigned int)gs__place_gi_remaining(
		    d.model, p, live, live_gis(&d, live));
	gs__nvml_leave(d.st);
	return r;
}

/* ---- GPU instances ------------------------------------------------------ */

static uint32_t new_gi_id(const struct gs__dev *d,
                          const struct gs_mig_profile *p)
{
	uint32_t id;

	if (p->memory_slices == d->model->memory_slices)
		return 0;
	for (id = 1;; id++) {
		bool used = false;

		for (int s = 0; s < GS_SIM_MAX_MIG; s++)
			if (d->g->mig[s].in_use && d->g->mig[s].gi_id == id)
				used = true;
		if (!used)
			return id;
	}
}

/* start < 0: let the sim pick (first fit). */
static nvmlReturn_t create_gi(nvmlDevice_t device, unsigned int profileId,
                              int start, nvmlGpuInstance_t *gpuInstance)
{
	struct gs__place_live live[GS_SIM_MAX_MIG];
	const struct gs_mig_profile *p;
	struct gs_sim_mig *m;
	struct gs__dev d;
	nvmlReturn_t r = enter_gpu(device, &d);
	int n, slot = -1;

	if (r != NVML_SUCCESS)
		return r;
	if (gpuInstance == NULL) {
		r = NVML_ERROR_INVALID_ARGUMENT;
		goto out;
	}
	if (!d.g->mig_mode) {
		r = NVML_ERROR_NOT_SUPPORTED;
		goto out;
	}
	p = gs_catalog_profile_by_id(d.model, (int)profileId);
	if (p == NULL) {
		r = NVML_ERROR_INVALID_ARGUMENT;
		goto out;
	}
	n = live_gis(&d, live);
	if (start >= 0) {
		r = gs__place_gi_check(d.model, p, live, n, start);
		if (r != NVML_SUCCESS)
			goto out;
	} else {
		start = gs__place_gi_pick(d.model, p, live, n);
		if (start < 0) {
			r = NVML_ERROR_INSUFFICIENT_RESOURCES;
			goto out;
		}
	}
	for (int s = 0; s < GS_SIM_MAX_MIG && slot < 0; s++)
		if (!d.g->mig[s].in_use)
			slot = s;
	if (slot < 0) {
		r = NVML_ERROR_INSUFFICIENT_RESOURCES;
		goto out;
	}
	m = &d.g->mig[slot];
	memset(m, 0, sizeof(*m));
	m->gi_id = new_gi_id(&d, p);
	m->profile_id = (uint32_t)p->profile_id;
	m->start = (uint32_t)start;
	m->size = (uint32_t)p->memory_slices;
	(void)snprintf(m->profile_name, sizeof(m->profile_name), "%s", p->name);
	m->compute_mode = NVML_COMPUTEMODE_DEFAULT;
	m->in_use = 1;
	/* The engine comes alive with the compute instance. */
	memset(&d.g->engine[1 + slot], 0, sizeof(d.g->engine[1 + slot]));
	*gpuInstance = gs__nvml_gi_handle(d.gpu, (uint32_t)slot);
out:
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device,
                                         unsigned int profileId,
                                         nvmlGpuInstance_t *gpuInstance)
{
	GS__SIM_FAULT("nvmlDeviceCreateGpuInstance");
	return create_gi(device, profileId, -1, gpuInstance);
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t device, unsigned int profileId,
    const nvmlGpuInstancePlacement_t *placement, nvmlGpuInstance_t *gpuInstance)
{
	GS__SIM_FAULT("nvmlDeviceCreateGpuInstanceWithPlacement");
	struct gs_sim_state *st;
	const struct gs_gpu_model *model;
	const struct gs_mig_profile *p = NULL;
	struct gs__dev d;
	nvmlReturn_t r;

	if (placement == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	/* A size that is not the profile's is an invalid placement too. */
	r = gs__nvml_enter(&st);
	if (r != NVML_SUCCESS)
		return r;
	r = gs__nvml_dev(st, device, &d);
	model = r == NVML_SUCCESS ? d.model : NULL;
	if (model != NULL)
		p = gs_catalog_profile_by_id(model, (int)profileId);
	gs__nvml_leave(st);
	if (p != NULL && placement->size != (unsigned int)p->memory_slices)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (placement->start > 0xFFu)
		return NVML_ERROR_INVALID_ARGUMENT;
	return create_gi(device, profileId, (int)placement->start, gpuInstance);
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance)
{
	GS__SIM_FAULT("nvmlGpuInstanceDestroy");
	struct gs__dev d;
	nvmlReturn_t r = enter_gi(gpuInstance, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (d.m->ci_in_use || gpu_has_procs(&d, 1 + d.mig)) {
		r = NVML_ERROR_IN_USE;
	} else {
		memset(d.m, 0, sizeof(*d.m));
		memset(d.e, 0, sizeof(*d.e));
	}
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device,
                                       unsigned int profileId,
                                       nvmlGpuInstance_t *gpuInstances,
                                       unsigned int *count)
{
	const struct gs_mig_profile *p;
	struct gs__dev d;
	nvmlReturn_t r = enter_gpu(device, &d);
	unsigned int n = 0;

	if (r != NVML_SUCCESS)
		return r;
	if (gpuInstances == NULL || count == NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else
		r = find_profile(&d, profileId, true, &p);
	if (r == NVML_SUCCESS) {
		/* The caller sized the buffer by the profile's instanceCount,
		 * which bounds what can exist. */
		for (int s = 0; s < GS_SIM_MAX_MIG; s++)
			if (d.g->mig[s].in_use &&
			    d.g->mig[s].profile_id == profileId &&
			    n < (unsigned int)p->max_instances)
				gpuInstances[n++] =
				    gs__nvml_gi_handle(d.gpu, (uint32_t)s);
		*count = n;
	}
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                          nvmlGpuInstance_t *gpuInstance)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_gpu(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (gpuInstance == NULL) {
		r = NVML_ERROR_INVALID_ARGUMENT;
	} else if (!d.g->mig_mode) {
		r = NVML_ERROR_NOT_SUPPORTED;
	} else {
		r = NVML_ERROR_NOT_FOUND;
		for (int s = 0; s < GS_SIM_MAX_MIG; s++) {
			if (d.g->mig[s].in_use && d.g->mig[s].gi_id == id) {
				*gpuInstance =
				    gs__nvml_gi_handle(d.gpu, (uint32_t)s);
				r = NVML_SUCCESS;
				break;
			}
		}
	}
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance,
                                    nvmlGpuInstanceInfo_t *info)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_gi(gpuInstance, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (info == NULL) {
		r = NVML_ERROR_INVALID_ARGUMENT;
	} else {
		memset(info, 0, sizeof(*info));
		info->device = gs__nvml_gpu_handle(d.gpu);
		info->id = d.m->gi_id;
		info->profileId = d.m->profile_id;
		info->placement.start = d.m->start;
		info->placement.size = d.m->size;
	}
	gs__nvml_leave(d.st);
	return r;
}

/* ---- compute instance profiles ------------------------------------------- */

struct ci_info {
	unsigned int id, slices, instances, sms, ce, dec, enc, jpg, ofa;
	char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
};

static nvmlReturn_t ci_info_of(const struct gs__dev *d, unsigned int profile,
                               unsigned int engProfile, struct ci_info *o)
{
	const struct gs_mig_profile *p = gi_profile(d);
	struct gi_info gi;
	int s;

	if (profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT ||
	    engProfile >= NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (p == NULL)
		return NVML_ERROR_NOT_SUPPORTED;
	s = gs__place_ci_slices(p->compute_slices, (int)profile);
	if (s == 0)
		return NVML_ERROR_NOT_SUPPORTED;
	gi_info_of(d->model, p, &gi);
	memset(o, 0, sizeof(*o));
	o->id = profile;
	o->slices = (unsigned int)s;
	o->instances =
	    (unsigned int)gs__place_ci_max(p->compute_slices, (int)profile);
	o->sms = gi.sms * (unsigned int)s / (unsigned int)p->compute_slices;
	o->ce = gi.ce;
	o->dec = gi.dec;
	o->enc = gi.enc;
	o->jpg = gi.jpg;
	o->ofa = gi.ofa;
	if (s == p->compute_slices)
		(void)snprintf(o->name, sizeof(o->name), "MIG %s", p->name);
	else
		(void)snprintf(o->name, sizeof(o->name), "MIG %dc.%s", s,
		               p->name);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t gpuInstance, unsigned int profile,
    unsigned int engProfile, nvmlComputeInstanceProfileInfo_t *info)
{
	struct ci_info ci;
	struct gs__dev d;
	nvmlReturn_t r = enter_gi(gpuInstance, &d);

	if (r != NVML_SUCCESS)
		return r;
	r = info == NULL ? NVML_ERROR_INVALID_ARGUMENT
	                 : ci_info_of(&d, profile, engProfile, &ci);
	gs__nvml_leave(d.st);
	if (r != NVML_SUCCESS)
		return r;
	memset(info, 0, sizeof(*info));
	info->id = ci.id;
	info->sliceCount = ci.slices;
	info->instanceCount = ci.instances;
	info->multiprocessorCount = ci.sms;
	info->sharedCopyEngineCount = ci.ce;
	info->sharedDecoderCount = ci.dec;
	info->sharedEncoderCount = ci.enc;
	info->sharedJpegCount = ci.jpg;
	info->sharedOfaCount = ci.ofa;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(
    nvmlGpuInstance_t gpuInstance, unsigned int profile,
    unsigned int engProfile, nvmlComputeInstanceProfileInfo_v2_t *info)
{
	struct ci_info ci;
	struct gs__dev d;
	nvmlReturn_t r = enter_gi(gpuInstance, &d);
	unsigned int version;

	if (r != NVML_SUCCESS)
		return r;
	if (info == NULL) {
		gs__nvml_leave(d.st);
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	version = info->version;
	if (version != nvmlComputeInstanceProfileInfo_v2 &&
	    version != nvmlComputeInstanceProfileInfo_v3)
		r = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	else
		r = ci_info_of(&d, profile, engProfile, &ci);
	gs__nvml_leave(d.st);
	if (r != NVML_SUCCESS)
		return r;
	/* v3 is v2 plus a trailing capabilities word (0 on the sim). */
	if (version == nvmlComputeInstanceProfileInfo_v3)
		memset(info, 0, sizeof(nvmlComputeInstanceProfileInfo_v3_t));
	else
		memset(info, 0, sizeof(*info));
	info->version = version;
	info->id = ci.id;
	info->sliceCount = ci.slices;
	info->instanceCount = ci.instances;
	info->multiprocessorCount = ci.sms;
	info->sharedCopyEngineCount = ci.ce;
	info->sharedDecoderCount = ci.dec;
	info->sharedEncoderCount = ci.enc;
	info->sharedJpegCount = ci.jpg;
	info->sharedOfaCount = ci.ofa;
	memcpy(info->name, ci.name, sizeof(info->name));
	return NVML_SUCCESS;
}

/* The live CI of a GI as the placement rules see it; returns 0 or 1. */
static int live_ci(const struct gs_sim_mig *m, struct gs__place_live *out)
{
	if (!m->ci_in_use)
		return 0;
	out->profile_id = (int)m->ci_profile_id;
	out->start = (int)m->ci_start;
	out->size = (int)m->ci_size;
	out->compute_slices = (int)m->ci_size;
	return 1;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceRemainingCapacity(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId, unsigned int *count)
{
	const struct gs_mig_profile *p;
	struct gs__dev d;
	nvmlReturn_t r = enter_gi(gpuInstance, &d);

	if (r != NVML_SUCCESS)
		return r;
	p = gi_profile(&d);
	if (count == NULL || profileId >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else if (p == NULL ||
	         gs__place_ci_slices(p->compute_slices, (int)profileId) == 0)
		r = NVML_ERROR_NOT_SUPPORTED;
	else
		/* One compute instance per GPU instance on the sim. */
		*count = d.m->ci_in_use ? 0 : 1;
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstancePossiblePlacements(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    nvmlComputeInstancePlacement_t *placements, unsigned int *count)
{
	const struct gs_mig_profile *p;
	struct gs__dev d;
	nvmlReturn_t r = enter_gi(gpuInstance, &d);
	int gi_slices = 0, n = 0;

	if (r != NVML_SUCCESS)
		return r;
	p = gi_profile(&d);
	if (p != NULL)
		gi_slices = p->compute_slices;
	gs__nvml_leave(d.st);
	if (count == NULL || profileId >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (gi_slices == 0 ||
	    gs__place_ci_slices(gi_slices, (int)profileId) == 0)
		return NVML_ERROR_NOT_SUPPORTED;
	n = gs__place_ci_placements(gi_slices, (int)profileId, NULL, 0);
	if (placements == NULL) {
		*count = (unsigned int)n;
		return NVML_SUCCESS;
	}
	if (*count < (unsigned int)n) {
		*count = (unsigned int)n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	(void)gs__place_ci_placements(gi_slices, (int)profileId, placements, n);
	*count = (unsigned int)n;
	return NVML_SUCCESS;
}

/* ---- compute instances -------------------------------------------------- */

/* start < 0: let the sim pick; otherwise `size` must be the profile's. */
static nvmlReturn_t create_ci(nvmlGpuInstance_t gpuInstance,
                              unsigned int profileId, int start, int size,
                              nvmlComputeInstance_t *computeInstance)
{
	struct gs__place_live live[1];
	const struct gs_mig_profile *p;
	struct gs__dev d;
	nvmlReturn_t r = enter_gi(gpuInstance, &d);
	int n, s;

	if (r != NVML_SUCCESS)
		return r;
	p = gi_profile(&d);
	if (computeInstance == NULL ||
	    profileId >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT) {
		r = NVML_ERROR_INVALID_ARGUMENT;
		goto out;
	}
	s = p != NULL ? gs__place_ci_slices(p->compute_slices, (int)profileId)
	              : 0;
	if (s == 0) {
		r = NVML_ERROR_NOT_SUPPORTED;
		goto out;
	}
	n = live_ci(d.m, live);
	if (start >= 0 && size != s) {
		r = NVML_ERROR_INVALID_ARGUMENT;
		goto out;
	}
	if (start >= 0) {
		r = gs__place_ci_check(p->compute_slices, (int)profileId, live,
		                       n, start);
		if (r != NVML_SUCCESS)
			goto out;
	} else {
		start = gs__place_ci_pick(p->compute_slices, (int)profileId,
		                          live, n);
	}
	if (start < 0 || d.m->ci_in_use) {
		/* One compute instance per GPU instance on the sim. */
		r = NVML_ERROR_INSUFFICIENT_RESOURCES;
		goto out;
	}
	d.m->ci_id = 0;
	d.m->ci_profile_id = profileId;
	d.m->ci_start = (uint32_t)start;
	d.m->ci_size = (uint32_t)s;
	gs_sim_uuid_make("MIG", d.m->uuid);
	gs_sim_engine_init(d.e,
	                   profile_sms(d.model, p) * (uint32_t)s /
	                       (uint32_t)p->compute_slices,
	                   profile_mem_mib(d.model, p) << 20, gs_sim_now_ns());
	d.m->ci_in_use = 1;
	*computeInstance = gs__nvml_ci_handle(d.gpu, (uint32_t)d.mig);
out:
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t
nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance,
                                     unsigned int profileId,
                                     nvmlComputeInstance_t *computeInstance)
{
	GS__SIM_FAULT("nvmlGpuInstanceCreateComputeInstance");
	return create_ci(gpuInstance, profileId, -1, -1, computeInstance);
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstanceWithPlacement(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    const nvmlComputeInstancePlacement_t *placement,
    nvmlComputeInstance_t *computeInstance)
{
	GS__SIM_FAULT("nvmlGpuInstanceCreateComputeInstanceWithPlacement");
	if (placement == NULL || placement->start > 0xFFu ||
	    placement->size > 0xFFu)
		return NVML_ERROR_INVALID_ARGUMENT;
	return create_ci(gpuInstance, profileId, (int)placement->start,
	                 (int)placement->size, computeInstance);
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance)
{
	GS__SIM_FAULT("nvmlComputeInstanceDestroy");
	struct gs__dev d;
	nvmlReturn_t r = enter_ci(computeInstance, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (gpu_has_procs(&d, 1 + d.mig)) {
		r = NVML_ERROR_IN_USE;
	} else {
		d.m->ci_in_use = 0;
		d.m->ci_id = d.m->ci_profile_id = 0;
		d.m->ci_start = d.m->ci_size = 0;
		memset(d.m->uuid, 0, sizeof(d.m->uuid));
		memset(d.e, 0, sizeof(*d.e));
	}
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    nvmlComputeInstance_t *computeInstances, unsigned int *count)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_gi(gpuInstance, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (computeInstances == NULL || count == NULL ||
	    profileId >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT) {
		r = NVML_ERROR_INVALID_ARGUMENT;
	} else if (d.m->ci_in_use && d.m->ci_profile_id == profileId) {
		computeInstances[0] =
		    gs__nvml_ci_handle(d.gpu, (uint32_t)d.mig);
		*count = 1;
	} else {
		*count = 0;
	}
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t
nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gpuInstance,
                                      unsigned int id,
                                      nvmlComputeInstance_t *computeInstance)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_gi(gpuInstance, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (computeInstance == NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else if (!d.m->ci_in_use || d.m->ci_id != id)
		r = NVML_ERROR_NOT_FOUND;
	else
		*computeInstance = gs__nvml_ci_handle(d.gpu, (uint32_t)d.mig);
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t
nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance,
                              nvmlComputeInstanceInfo_t *info)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_ci(computeInstance, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (info == NULL) {
		r = NVML_ERROR_INVALID_ARGUMENT;
	} else {
		memset(info, 0, sizeof(*info));
		info->device = gs__nvml_gpu_handle(d.gpu);
		info->gpuInstance = gs__nvml_gi_handle(d.gpu, (uint32_t)d.mig);
		info->id = d.m->ci_id;
		info->profileId = d.m->ci_profile_id;
		info->placement.start = d.m->ci_start;
		info->placement.size = d.m->ci_size;
	}
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlComputeInstanceGetInfo(nvmlComputeInstance_t ci,
                                        gs__nvmlComputeInstanceInfo_v1_t *info)
{
	nvmlComputeInstanceInfo_t full;
	nvmlReturn_t r;

	if (info == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = nvmlComputeInstanceGetInfo_v2(ci, &full);
	if (r != NVML_SUCCESS)
		return r;
	info->device = full.device;
	info->gpuInstance = full.gpuInstance;
	info->id = full.id;
	info->profileId = full.profileId;
	return NVML_SUCCESS;
}

/* ---- MIG device handles -----------------------------------------------------
 */

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (id == NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else if (d.m == NULL)
		r = NVML_ERROR_NOT_SUPPORTED;
	else
		*id = d.m->gi_id;
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device,
                                            unsigned int *id)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (id == NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else if (d.m == NULL)
		r = NVML_ERROR_NOT_SUPPORTED;
	else
		*id = d.m->ci_id;
	gs__nvml_leave(d.st);
	return r;
}

static unsigned int max_mig_devices(const struct gs__dev *d)
{
	int n = d->model != NULL ? d->model->compute_slices : 0;

	return n > GS_SIM_MAX_MIG ? GS_SIM_MAX_MIG : (unsigned int)n;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device,
                                            unsigned int *count)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (count == NULL || d.m != NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else
		*count = d.g->mig_mode ? max_mig_devices(&d) : 0;
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                 unsigned int index,
                                                 nvmlDevice_t *migDevice)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (migDevice == NULL || d.m != NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else if (!d.g->mig_mode)
		r = NVML_ERROR_NOT_SUPPORTED;
	else if (index >= max_mig_devices(&d))
		r = NVML_ERROR_INVALID_ARGUMENT;
	else if (!d.g->mig[index].in_use || !d.g->mig[index].ci_in_use)
		r = NVML_ERROR_NOT_FOUND;
	else
		*migDevice = gs__nvml_mig_handle(d.gpu, index);
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t
nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                             nvmlDevice_t *device)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(migDevice, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (device == NULL || d.m == NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else
		*device = gs__nvml_gpu_handle(d.gpu);
	gs__nvml_leave(d.st);
	return r;
}
