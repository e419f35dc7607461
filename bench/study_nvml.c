/*
 * study_nvml.c - NVML through dlopen for the seed study (study_nvml.h).
 *
 * Entry points come from one X-macro list, resolved with dlsym; the ones
 * the study cannot do without are checked at open, the rest are optional
 * and a missing one reads as "not supported". Only the sim may be
 * changed (MIG instances): the check is the serial number, which the
 * sim's NVML writes as "SIM..." and a real board never does.
 */
#include "study_nvml.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "gs/nvml.h"

#define NVML_FNS(X)                                                            \
	X(nvmlInit_v2, (void))                                                 \
	X(nvmlShutdown, (void))                                                \
	X(nvmlSystemGetDriverVersion, (char *, unsigned int))                  \
	X(nvmlDeviceGetCount_v2, (unsigned int *))                             \
	X(nvmlDeviceGetHandleByIndex_v2, (unsigned int, nvmlDevice_t *))       \
	X(nvmlDeviceGetHandleByUUID, (const char *, nvmlDevice_t *))           \
	X(nvmlDeviceGetName, (nvmlDevice_t, char *, unsigned int))             \
	X(nvmlDeviceGetUUID, (nvmlDevice_t, char *, unsigned int))             \
	X(nvmlDeviceGetSerial, (nvmlDevice_t, char *, unsigned int))           \
	X(nvmlDeviceGetMemoryInfo, (nvmlDevice_t, nvmlMemory_t *))             \
	X(nvmlDeviceGetComputeMode, (nvmlDevice_t, nvmlComputeMode_t *))       \
	X(nvmlDeviceGetUtilizationRates, (nvmlDevice_t, nvmlUtilization_t *))  \
	X(nvmlDeviceGetComputeRunningProcesses_v3,                             \
	  (nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *))                 \
	X(nvmlDeviceGetMigMode,                                                \
	  (nvmlDevice_t, unsigned int *, unsigned int *))                      \
	X(nvmlDeviceSetMigMode, (nvmlDevice_t, unsigned int, nvmlReturn_t *))  \
	X(nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t, unsigned int *))      \
	X(nvmlDeviceGetMigDeviceHandleByIndex,                                 \
	  (nvmlDevice_t, unsigned int, nvmlDevice_t *))                        \
	X(nvmlDeviceGetAttributes_v2,                                          \
	  (nvmlDevice_t, nvmlDeviceAttributes_t *))                            \
	X(nvmlDeviceGetGpuInstanceProfileInfo,                                 \
	  (nvmlDevice_t, unsigned int, nvmlGpuInstanceProfileInfo_t *))        \
	X(nvmlDeviceCreateGpuInstance,                                         \
	  (nvmlDevice_t, unsigned int, nvmlGpuInstance_t *))                   \
	X(nvmlGpuInstanceGetComputeInstanceProfileInfo,                        \
	  (nvmlGpuInstance_t, unsigned int, unsigned int,                      \
	   nvmlComputeInstanceProfileInfo_t *))                                \
	X(nvmlGpuInstanceCreateComputeInstance,                                \
	  (nvmlGpuInstance_t, unsigned int, nvmlComputeInstance_t *))

struct gs_study_nvml {
	void *lib;
	bool sim;
	unsigned int count;
	char driver[80];
#define GS__FN_FIELD(name, args) nvmlReturn_t(*name) args;
	NVML_FNS(GS__FN_FIELD)
#undef GS__FN_FIELD
	const char *(*nvmlErrorString)(nvmlReturn_t);
};

static const char *nv_str(const struct gs_study_nvml *n, nvmlReturn_t rc)
{
	return n->nvmlErrorString != NULL ? n->nvmlErrorString(rc)
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
	n->lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
	if (n->lib == NULL) {
		err = gs_fail(eb, GS_ERR_UNAVAILABLE, "cannot load %s: %s",
		              library, dlerror());
		goto out_free;
	}
#define GS__FN_LOAD(name, args) *(void **)&n->name = dlsym(n->lib, #name);
	NVML_FNS(GS__FN_LOAD)
#undef GS__FN_LOAD
	*(void **)&n->nvmlErrorString = dlsym(n->lib, "nvmlErrorString");
	if (!n->nvmlInit_v2 || !n->nvmlShutdown || !n->nvmlDeviceGetCount_v2 ||
	    !n->nvmlDeviceGetHandleByIndex_v2 || !n->nvmlDeviceGetName ||
	    !n->nvmlDeviceGetUUID || !n->nvmlDeviceGetMemoryInfo) {
		err = gs_fail(eb, GS_ERR_UNAVAILABLE,
		              "%s lacks NVML entry points the study needs",
		              library);
		goto out_close;
	}
	rc = n->nvmlInit_v2();
	if (rc != NVML_SUCCESS) {
		err = gs_fail(eb, GS_ERR_UNAVAILABLE, "nvmlInit: %s",
		              nv_str(n, rc));
		goto out_close;
	}
	if (n->nvmlSystemGetDriverVersion != NULL)
		(void)n->nvmlSystemGetDriverVersion(n->driver,
		                                    sizeof(n->driver));
	rc = n->nvmlDeviceGetCount_v2(&n->count);
	if (rc != NVML_SUCCESS || n->count == 0) {
		err =
		    gs_fail(eb, GS_ERR_UNAVAILABLE, "NVML sees no GPU (%s)",
		            rc == NVML_SUCCESS ? "count is 0" : nv_str(n, rc));
		goto out_shutdown;
	}
	n->sim = n->nvmlDeviceGetSerial != NULL;
	for (unsigned int i = 0; i < n->count && n->sim; i++) {
		char serial[64] = "";
		nvmlDevice_t h;

		if (n->nvmlDeviceGetHandleByIndex_v2(i, &h) != NVML_SUCCESS ||
		    n->nvmlDeviceGetSerial(h, serial, sizeof(serial)) !=
		        NVML_SUCCESS ||
		    strncmp(serial, "SIM", 3) != 0)
			n->sim = false;
	}
	*out = n;
	return GS_OK;

out_shutdown:
	(void)n->nvmlShutdown();
out_close:
	dlclose(n->lib);
out_free:
	free(n);
	return err;
}

void gs_study_nvml_close(struct gs_study_nvml *n)
{
	if (n == NULL)
		return;
	(void)n->nvmlShutdown();
	dlclose(n->lib);
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
	if (n->nvmlDeviceGetMigMode == NULL ||
	    n->nvmlDeviceGetMigMode(h, &cur, &pend) != NVML_SUCCESS ||
	    cur != NVML_DEVICE_MIG_ENABLE)
		return;
	out->mig_on = true;
	if (n->nvmlDeviceGetMaxMigDeviceCount == NULL ||
	    n->nvmlDeviceGetMigDeviceHandleByIndex == NULL ||
	    n->nvmlDeviceGetMaxMigDeviceCount(h, &max) != NVML_SUCCESS)
		return;
	for (unsigned int i = 0; i < max && out->n_mig < GS_STUDY_MAX_MIG;
	     i++) {
		struct gs_study_mig *m = &out->mig[out->n_mig];
		nvmlDeviceAttributes_t at;
		nvmlMemory_t mem;
		nvmlDevice_t md;

		if (n->nvmlDeviceGetMigDeviceHandleByIndex(h, i, &md) !=
		    NVML_SUCCESS)
			continue;
		memset(m, 0, sizeof(*m));
		if (n->nvmlDeviceGetUUID(md, m->uuid, sizeof(m->uuid)) !=
		    NVML_SUCCESS)
			continue;
		if (n->nvmlDeviceGetMemoryInfo(md, &mem) == NVML_SUCCESS)
			m->memory_bytes = mem.total;
		if (n->nvmlDeviceGetAttributes_v2 != NULL &&
		    n->nvmlDeviceGetAttributes_v2(md, &at) == NVML_SUCCESS)
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
	rc = n->nvmlDeviceGetHandleByIndex_v2(index, &h);
	if (rc != NVML_SUCCESS)
		return gs_fail(eb, GS_ERR_DRIVER, "GPU %u: %s", index,
		               nv_str(n, rc));
	out->index = index;
	(void)n->nvmlDeviceGetName(h, out->name, sizeof(out->name));
	rc = n->nvmlDeviceGetUUID(h, out->uuid, sizeof(out->uuid));
	if (rc != NVML_SUCCESS)
		return gs_fail(eb, GS_ERR_DRIVER, "GPU %u UUID: %s", index,
		               nv_str(n, rc));
	if (n->nvmlDeviceGetMemoryInfo(h, &mem) == NVML_SUCCESS)
		out->memory_bytes = mem.total;
	out->compute_mode = -1;
	if (n->nvmlDeviceGetComputeMode != NULL &&
	    n->nvmlDeviceGetComputeMode(h, &cm) == NVML_SUCCESS)
		out->compute_mode = (int)cm;
	read_migs(n, h, out);
	return GS_OK;
}

static gs_err handle(struct gs_study_nvml *n, const char *uuid, nvmlDevice_t *h)
{
	if (n->nvmlDeviceGetHandleByUUID == NULL)
		return GS_ERR_UNSUPPORTED;
	return n->nvmlDeviceGetHandleByUUID(uuid, h) == NVML_SUCCESS
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
	if (n->nvmlDeviceGetUtilizationRates == NULL ||
	    n->nvmlDeviceGetUtilizationRates(h, &u) != NVML_SUCCESS)
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

	if (n->nvmlDeviceGetComputeRunningProcesses_v3(h, &k, info) !=
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
	if (n->nvmlDeviceGetComputeRunningProcesses_v3 == NULL)
		return GS_ERR_UNSUPPORTED;
	procs_of(n, h, procs, cap, count);
	/* A MIG-enabled GPU: its MIG devices hold the processes. */
	if (*count == 0 && n->nvmlDeviceGetMigMode != NULL &&
	    n->nvmlDeviceGetMigMode(h, &cur, &pend) == NVML_SUCCESS &&
	    cur == NVML_DEVICE_MIG_ENABLE &&
	    n->nvmlDeviceGetMaxMigDeviceCount != NULL &&
	    n->nvmlDeviceGetMigDeviceHandleByIndex != NULL &&
	    n->nvmlDeviceGetMaxMigDeviceCount(h, &max) == NVML_SUCCESS)
		for (unsigned int i = 0; i < max; i++) {
			nvmlDevice_t md;

			if (n->nvmlDeviceGetMigDeviceHandleByIndex(h, i, &md) ==
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
		               "refusing to change MIG on a GPU that is not "
		               "the simulator's");
	if (!n->nvmlDeviceGetMigMode || !n->nvmlDeviceSetMigMode ||
	    !n->nvmlDeviceGetGpuInstanceProfileInfo ||
	    !n->nvmlDeviceCreateGpuInstance ||
	    !n->nvmlGpuInstanceGetComputeInstanceProfileInfo ||
	    !n->nvmlGpuInstanceCreateComputeInstance)
		return gs_fail(eb, GS_ERR_UNSUPPORTED,
		               "the sim's NVML lacks the MIG calls");
	rc = n->nvmlDeviceGetHandleByIndex_v2(index, &h);
	if (rc == NVML_SUCCESS)
		rc = n->nvmlDeviceGetMigMode(h, &cur, &pend);
	if (rc == NVML_SUCCESS && cur != NVML_DEVICE_MIG_ENABLE)
		rc = n->nvmlDeviceSetMigMode(h, NVML_DEVICE_MIG_ENABLE, &act);
	if (rc != NVML_SUCCESS)
		return gs_fail(eb, GS_ERR_DRIVER, "sim GPU %u: MIG mode: %s",
		               index, nv_str(n, rc));
	for (k = 0; k < sizeof(gi_profiles) / sizeof(gi_profiles[0]); k++)
		if (n->nvmlDeviceGetGpuInstanceProfileInfo(
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

		rc = n->nvmlDeviceCreateGpuInstance(h, pi.id, &gi);
		if (rc == NVML_SUCCESS)
			rc = n->nvmlGpuInstanceGetComputeInstanceProfileInfo(
			    gi, gi_profiles[k][1],
			    NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &ci);
		if (rc == NVML_SUCCESS)
			rc = n->nvmlGpuInstanceCreateComputeInstance(gi, ci.id,
			                                             &cinst);
		if (rc != NVML_SUCCESS)
			return gs_fail(eb, GS_ERR_DRIVER,
			               "sim GPU %u: MIG instance %d: %s", index,
			               i + 1, nv_str(n, rc));
	}
	return gs_study_nvml_gpu(n, index, gpu, eb);
}
