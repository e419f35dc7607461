/*
 * study_nvml.c - NVML through dlopen for the seed study (study_nvml.h).
 *
 * Entry points come from the one NVML loader (include/gs/nvml_load.h);
 * the ones the study cannot do without are checked at open, the rest are
 * optional and a missing one reads as "not supported". Only the sim may
 * be changed (MIG instances): the check is the serial number, which the
 * sim's NVML writes as "SIM..." and a real board never does.
 */
#include "study_nvml.h"

#include <stdlib.h>
#include <string.h>

#include "gs/nvml.h"
#include "gs/nvml_load.h"

struct gs_study_nvml {
	struct gs_nvml *nv; /* the library and its entry points */
	bool sim;
	unsigned int count;
	char driver[80];
};

static const char *nv_str(const struct gs_study_nvml *n, nvmlReturn_t rc)
{
	return n->nv->nvmlErrorString != NULL ? n->nv->nvmlErrorString(rc)
	                                  : "NVML error";
}

gs_err gs_study_nvml_open(const char *library, struct gs_study_nvml **out,
                          struct gs_errbuf *eb)
{
	struct gs_study_nvml *n;
	nvmlReturn_t rc;
	gs_err err;

	*out = NULL;
	n = calloc(1, sizeof(*n));
	if (n == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	err = gs_nvml_load(library, &n->nv, eb);
	if (err != GS_OK)
		goto out_free;
	if (!n->nv->nvmlInit_v2 || !n->nv->nvmlShutdown || !n->nv->nvmlDeviceGetCount_v2 ||
	    !n->nv->nvmlDeviceGetHandleByIndex_v2 || !n->nv->nvmlDeviceGetName ||
	    !n->nv->nvmlDeviceGetUUID || !n->nv->nvmlDeviceGetMemoryInfo) {
		err = gs_fail(eb, GS_ERR_UNAVAILABLE,
		              "%s lacks NVML entry points the study needs",
		              library);
		goto out_close;
	}
	rc = n->nv->nvmlInit_v2();
	if (rc != NVML_SUCCESS) {
		err = gs_fail(eb, GS_ERR_UNAVAILABLE, "nvmlInit: %s",
		              nv_str(n, rc));
		goto out_close;
	}
	if (n->nv->nvmlSystemGetDriverVersion != NULL)
		(void)n->nv->nvmlSystemGetDriverVersion(n->driver,
		                                    sizeof(n->driver));
	rc = n->nv->nvmlDeviceGetCount_v2(&n->count);
	if (rc != NVML_SUCCESS || n->count == 0) {
		err =
		    gs_fail(eb, GS_ERR_UNAVAILABLE, "NVML sees no GPU (%s)",
		            rc == NVML_SUCCESS ? "count is 0" : nv_str(n, rc));
		goto out_shutdown;
	}
	n->sim = n->nv->nvmlDeviceGetSerial != NULL;
	for (unsigned int i = 0; i < n->count && n->sim; i++) {
		char serial[64] = "";
		nvmlDevice_t h;

		if (n->nv->nvmlDeviceGetHandleByIndex_v2(i, &h) != NVML_SUCCESS ||
		    n->nv->nvmlDeviceGetSerial(h, serial, sizeof(serial)) !=
		        NVML_SUCCESS ||
		    strncmp(serial, "SIM", 3) != 0)
			n->sim = false;
	}
	*out = n;
	return GS_OK;

out_shutdown:
	(void)n->nv->nvmlShutdown();
out_close:
	gs_nvml_unload(n->nv);
out_free:
	free(n);
	return err;
}

void gs_study_nvml_close(struct gs_study_nvml *n)
{
	if (n == NULL)
		return;
	(void)n->nv->nvmlShutdown();
	gs_nvml_unload(n->nv);
	free(n);
}

bool gs_study_nvml_is_sim(const struct gs_study_nvml *n)
{
	return n->sim;
}

const char *gs_study_nvml_driver(const struct gs_study_nvml *n)
{
	return n->driver;
}

unsigned int gs_study_nvml_count(const struct gs_study_nvml *n)
{
	return n->count;
}

static void read_migs(struct gs_study_nvml *n, nvmlDevice_t h,
                      struct gs_study_gpu *out)
{
	unsigned int cur = 0, pend = 0, max = 0;

	out->mig_on = false;
	out->n_mig = 0;
	if (n->nv->nvmlDeviceGetMigMode == NULL ||
	    n->nv->nvmlDeviceGetMigMode(h, &cur, &pend) != NVML_SUCCESS ||
	    cur != NVML_DEVICE_MIG_ENABLE)
		return;
	out->mig_on = true;
	if (n->nv->nvmlDeviceGetMaxMigDeviceCount == NULL ||
	    n->nv->nvmlDeviceGetMigDeviceHandleByIndex == NULL ||
	    n->nv->nvmlDeviceGetMaxMigDeviceCount(h, &max) != NVML_SUCCESS)
		return;
	for (unsigned int i = 0; i < max && out->n_mig < GS_STUDY_MAX_MIG;
	     i++) {
		struct gs_study_mig *m = &out->mig[out->n_mig];
		nvmlDeviceAttributes_t at;
		nvmlMemory_t mem;
		nvmlDevice_t md;

		if (n->nv->nvmlDeviceGetMigDeviceHandleByIndex(h, i, &md) !=
		    NVML_SUCCESS)
			continue;
		memset(m, 0, sizeof(*m));
		if (n->nv->nvmlDeviceGetUUID(md, m->uuid, sizeof(m->uuid)) !=
		    NVML_SUCCESS)
			continue;
		if (n->nv->nvmlDeviceGetMemoryInfo(md, &mem) == NVML_SUCCESS)
			m->memory_bytes = mem.total;
		if (n->nv->nvmlDeviceGetAttributes_v2 != NULL &&
		    n->nv->nvmlDeviceGetAttributes_v2(md, &at) == NVML_SUCCESS)
			m->sm_count = at.multiprocessorCount;
		out->n_mig++;
	}
}

gs_err gs_study_nvml_gpu(struct gs_study_nvml *n, unsigned int index,
                         struct gs_study_gpu *out, struct gs_errbuf *eb)
{
	nvmlComputeMode_t cm;
	nvmlMemory_t mem;
	nvmlDevice_t h;
	nvmlReturn_t rc;

	memset(out, 0, sizeof(*out));
	if (index >= n->count)
		return gs_fail(eb, GS_ERR_NOT_FOUND, "no GPU %u (NVML sees %u)",
		               index, n->count);
	rc = n->nv->nvmlDeviceGetHandleByIndex_v2(index, &h);
	if (rc != NVML_SUCCESS)
		return gs_fail(eb, GS_ERR_DRIVER, "GPU %u: %s", index,
		               nv_str(n, rc));
	out->index = index;
	(void)n->nv->nvmlDeviceGetName(h, out->name, sizeof(out->name));
	rc = n->nv->nvmlDeviceGetUUID(h, out->uuid, sizeof(out->uuid));
	if (rc != NVML_SUCCESS)
		return gs_fail(eb, GS_ERR_DRIVER, "GPU %u UUID: %s", index,
		               nv_str(n, rc));
	if (n->nv->nvmlDeviceGetMemoryInfo(h, &mem) == NVML_SUCCESS)
		out->memory_bytes = mem.total;
	out->compute_mode = -1;
	if (n->nv->nvmlDeviceGetComputeMode != NULL &&
	    n->nv->nvmlDeviceGetComputeMode(h, &cm) == NVML_SUCCESS)
		out->compute_mode = (int)cm;
	read_migs(n, h, out);
	return GS_OK;
}

static gs_err handle(struct gs_study_nvml *n, const char *uuid, nvmlDevice_t *h)
{
	if (n->nv->nvmlDeviceGetHandleByUUID == NULL)
		return GS_ERR_UNSUPPORTED;
	return n->nv->nvmlDeviceGetHandleByUUID(uuid, h) == NVML_SUCCESS
	           ? GS_OK
	           : GS_ERR_NOT_FOUND;
}

gs_err gs_study_nvml_util(struct gs_study_nvml *n, const char *uuid,
                          unsigned int *pct)
{
	nvmlUtilization_t u;
	nvmlDevice_t h;
	gs_err err = handle(n, uuid, &h);

	if (err != GS_OK)
		return err;
	if (n->nv->nvmlDeviceGetUtilizationRates == NULL ||
	    n->nv->nvmlDeviceGetUtilizationRates(h, &u) != NVML_SUCCESS)
		return GS_ERR_UNSUPPORTED;
	*pct = u.gpu;
	return GS_OK;
}

/* Appends the processes of one device handle. */
static void procs_of(struct gs_study_nvml *n, nvmlDevice_t h,
                     struct gs_study_proc *procs, int cap, int *count)
{
	nvmlProcessInfo_t info[64];
	unsigned int k = 64;

	if (n->nv->nvmlDeviceGetComputeRunningProcesses_v3(h, &k, info) !=
	    NVML_SUCCESS)
		return;
	for (unsigned int i = 0; i < k && *count < cap; i++) {
		procs[*count].pid = (int32_t)info[i].pid;
		procs[*count].memory_bytes = info[i].usedGpuMemory;
		(*count)++;
	}
}

gs_err gs_study_nvml_procs(struct gs_study_nvml *n, const char *uuid,
                           struct gs_study_proc *procs, int cap, int *count)
{
	nvmlDevice_t h;
	unsigned int cur = 0, pend = 0, max = 0;
	gs_err err = handle(n, uuid, &h);

	*count = 0;
	if (err != GS_OK)
		return err;
	if (n->nv->nvmlDeviceGetComputeRunningProcesses_v3 == NULL)
		return GS_ERR_UNSUPPORTED;
	procs_of(n, h, procs, cap, count);
	/* A MIG-enabled GPU: its MIG devices hold the processes. */
	if (*count == 0 && n->nv->nvmlDeviceGetMigMode != NULL &&
	    n->nv->nvmlDeviceGetMigMode(h, &cur, &pend) == NVML_SUCCESS &&
	    cur == NVML_DEVICE_MIG_ENABLE &&
	    n->nv->nvmlDeviceGetMaxMigDeviceCount != NULL &&
	    n->nv->nvmlDeviceGetMigDeviceHandleByIndex != NULL &&
	    n->nv->nvmlDeviceGetMaxMigDeviceCount(h, &max) == NVML_SUCCESS)
		for (unsigned int i = 0; i < max; i++) {
			nvmlDevice_t md;

			if (n->nv->nvmlDeviceGetMigDeviceHandleByIndex(h, i, &md) ==
			    NVML_SUCCESS)
				procs_of(n, md, procs, cap, count);
		}
	return GS_OK;
}

/* GI profiles from the largest to the smallest, with their CI profile. */
static const unsigned int gi_profiles[][2] = {
    {NVML_GPU_INSTANCE_PROFILE_7_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE},
    {NVML_GPU_INSTANCE_PROFILE_4_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE},
    {NVML_GPU_INSTANCE_PROFILE_3_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE},
};

gs_err gs_study_nvml_sim_mig(struct gs_study_nvml *n, unsigned int index,
                             int count, struct gs_study_gpu *gpu,
                             struct gs_errbuf *eb)
{
	nvmlGpuInstanceProfileInfo_t pi;
	unsigned int cur = 0, pend = 0, k;
	nvmlReturn_t rc, act;
	nvmlDevice_t h;

	if (!n->sim)
		return gs_fail(eb, GS_ERR_PERM,
		               "refusing to change MIG on a GPU that is not the simulator's");
	if (!n->nv->nvmlDeviceGetMigMode || !n->nv->nvmlDeviceSetMigMode ||
	    !n->nv->nvmlDeviceGetGpuInstanceProfileInfo ||
	    !n->nv->nvmlDeviceCreateGpuInstance ||
	    !n->nv->nvmlGpuInstanceGetComputeInstanceProfileInfo ||
	    !n->nv->nvmlGpuInstanceCreateComputeInstance)
		return gs_fail(eb, GS_ERR_UNSUPPORTED,
		               "the sim's NVML lacks the MIG calls");
	rc = n->nv->nvmlDeviceGetHandleByIndex_v2(index, &h);
	if (rc == NVML_SUCCESS)
		rc = n->nv->nvmlDeviceGetMigMode(h, &cur, &pend);
	if (rc == NVML_SUCCESS && cur != NVML_DEVICE_MIG_ENABLE)
		rc = n->nv->nvmlDeviceSetMigMode(h, NVML_DEVICE_MIG_ENABLE, &act);
	if (rc != NVML_SUCCESS)
		return gs_fail(eb, GS_ERR_DRIVER, "sim GPU %u: MIG mode: %s",
		               index, nv_str(n, rc));
	for (k = 0; k < sizeof(gi_profiles) / sizeof(gi_profiles[0]); k++)
		if (n->nv->nvmlDeviceGetGpuInstanceProfileInfo(
		        h, gi_profiles[k][0], &pi) == NVML_SUCCESS &&
		    pi.instanceCount >= (unsigned int)count)
			break;
	if (k == sizeof(gi_profiles) / sizeof(gi_profiles[0]))
		return gs_fail(eb, GS_ERR_NO_FIT,
		               "sim GPU %u cannot hold %d MIG instances", index,
		               count);
	for (int i = 0; i < count; i++) {
		nvmlComputeInstanceProfileInfo_t ci;
		nvmlGpuInstance_t gi;
		nvmlComputeInstance_t cinst;

		rc = n->nv->nvmlDeviceCreateGpuInstance(h, pi.id, &gi);
		if (rc == NVML_SUCCESS)
			rc = n->nv->nvmlGpuInstanceGetComputeInstanceProfileInfo(
			    gi, gi_profiles[k][1],
			    NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &ci);
		if (rc == NVML_SUCCESS)
			rc = n->nv->nvmlGpuInstanceCreateComputeInstance(gi, ci.id,
			                                             &cinst);
		if (rc != NVML_SUCCESS)
			return gs_fail(eb, GS_ERR_DRIVER,
			               "sim GPU %u: MIG instance %d: %s", index,
			               i + 1, nv_str(n, rc));
	}
	return gs_study_nvml_gpu(n, index, gpu, eb);
}
