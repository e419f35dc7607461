/*
 * nvml_load.h - the one NVML loader: dlopen of libnvidia-ml.so.1 (the
 * real one, or the sim's by its path) and every entry point gpuslice
 * calls resolved once into a table. Used by gpusliced (daemon/gpu.c) and
 * the seed study (bench/study_nvml.c); each decides which entry points it
 * cannot do without and when to call nvmlInit.
 *
 * An entry point the library lacks is NULL in the table, so an older
 * driver still serves whatever it has. Nothing here writes to
 * stdout/stderr.
 */
#ifndef GS_NVML_LOAD_H
#define GS_NVML_LOAD_H

#include "gs/err.h"
#include "gs/nvml.h"

/* The entry points: X(name, (argument types)), all returning
 * nvmlReturn_t. Add one here, never in a caller. */
#define GS_NVML_FNS(X)                                                         \
	X(nvmlInit_v2, (void))                                                 \
	X(nvmlShutdown, (void))                                                \
	X(nvmlSystemGetDriverVersion, (char *, unsigned int))                  \
	X(nvmlDeviceGetCount_v2, (unsigned int *))                             \
	X(nvmlDeviceGetHandleByIndex_v2, (unsigned int, nvmlDevice_t *))       \
	X(nvmlDeviceGetHandleByUUID, (const char *, nvmlDevice_t *))           \
	X(nvmlDeviceGetComputeMode, (nvmlDevice_t, nvmlComputeMode_t *))       \
	X(nvmlDeviceGetPersistenceMode, (nvmlDevice_t, nvmlEnableState_t *))   \
	X(nvmlDeviceGetGpuInstanceProfileInfo,                                 \
	  (nvmlDevice_t, unsigned int, nvmlGpuInstanceProfileInfo_t *))        \
	X(nvmlDeviceGetName, (nvmlDevice_t, char *, unsigned int))             \
	X(nvmlDeviceGetUUID, (nvmlDevice_t, char *, unsigned int))             \
	X(nvmlDeviceGetSerial, (nvmlDevice_t, char *, unsigned int))           \
	X(nvmlDeviceGetMemoryInfo, (nvmlDevice_t, nvmlMemory_t *))             \
	X(nvmlDeviceGetPciInfo_v3, (nvmlDevice_t, nvmlPciInfo_t *))            \
	X(nvmlDeviceGetUtilizationRates, (nvmlDevice_t, nvmlUtilization_t *))  \
	X(nvmlDeviceGetMigMode,                                                \
	  (nvmlDevice_t, unsigned int *, unsigned int *))                      \
	X(nvmlDeviceSetMigMode, (nvmlDevice_t, unsigned int, nvmlReturn_t *))  \
	X(nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t, unsigned int *))      \
	X(nvmlDeviceGetMigDeviceHandleByIndex,                                 \
	  (nvmlDevice_t, unsigned int, nvmlDevice_t *))                        \
	X(nvmlDeviceGetGpuInstanceId, (nvmlDevice_t, unsigned int *))          \
	X(nvmlDeviceGetComputeInstanceId, (nvmlDevice_t, unsigned int *))      \
	X(nvmlDeviceGetAttributes_v2,                                          \
	  (nvmlDevice_t, nvmlDeviceAttributes_t *))                            \
	X(nvmlDeviceGetGpuInstanceById,                                        \
	  (nvmlDevice_t, unsigned int, nvmlGpuInstance_t *))                   \
	X(nvmlGpuInstanceGetInfo,                                              \
	  (nvmlGpuInstance_t, nvmlGpuInstanceInfo_t *))                        \
	X(nvmlDeviceCreateGpuInstance,                                         \
	  (nvmlDevice_t, unsigned int, nvmlGpuInstance_t *))                   \
	X(nvmlDeviceCreateGpuInstanceWithPlacement,                            \
	  (nvmlDevice_t, unsigned int, const nvmlGpuInstancePlacement_t *,     \
	   nvmlGpuInstance_t *))                                               \
	X(nvmlGpuInstanceDestroy, (nvmlGpuInstance_t))                         \
	X(nvmlGpuInstanceGetComputeInstanceProfileInfo,                        \
	  (nvmlGpuInstance_t, unsigned int, unsigned int,                      \
	   nvmlComputeInstanceProfileInfo_t *))                                \
	X(nvmlGpuInstanceCreateComputeInstance,                                \
	  (nvmlGpuInstance_t, unsigned int, nvmlComputeInstance_t *))          \
	X(nvmlGpuInstanceGetComputeInstances,                                  \
	  (nvmlGpuInstance_t, unsigned int, nvmlComputeInstance_t *,           \
	   unsigned int *))                                                    \
	X(nvmlComputeInstanceDestroy, (nvmlComputeInstance_t))                 \
	X(nvmlDeviceGetComputeRunningProcesses_v3,                             \
	  (nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *))                 \
	X(nvmlDeviceGetProcessUtilization,                                     \
	  (nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned int *,     \
	   unsigned long long))                                                \
	X(nvmlDeviceGetAccountingMode, (nvmlDevice_t, nvmlEnableState_t *))    \
	X(nvmlDeviceSetAccountingMode, (nvmlDevice_t, nvmlEnableState_t))      \
	X(nvmlDeviceGetAccountingPids,                                         \
	  (nvmlDevice_t, unsigned int *, unsigned int *))                      \
	X(nvmlDeviceGetAccountingStats,                                        \
	  (nvmlDevice_t, unsigned int, nvmlAccountingStats_t *))               \
	X(nvmlEventSetCreate, (nvmlEventSet_t *))                              \
	X(nvmlDeviceRegisterEvents,                                            \
	  (nvmlDevice_t, unsigned long long, nvmlEventSet_t))                  \
	X(nvmlEventSetWait_v2,                                                 \
	  (nvmlEventSet_t, nvmlEventData_t *, unsigned int))                   \
	X(nvmlEventSetFree, (nvmlEventSet_t))

struct gs_nvml {
	void *lib; /* the dlopen handle */
#define GS__NVML_FN_PTR(name, args) nvmlReturn_t(*name) args;
	GS_NVML_FNS(GS__NVML_FN_PTR)
#undef GS__NVML_FN_PTR
	const char *(*nvmlErrorString)(nvmlReturn_t);
};

/*
 * Loads `library` (a path, or a name for the loader's search; RTLD_NOW |
 * RTLD_LOCAL) and resolves the entry points. Does not call nvmlInit.
 * GS_ERR_UNAVAILABLE ("cannot load <library>: <dlerror>") or
 * GS_ERR_NOMEM; then *out is NULL. OUT: *out, freed by gs_nvml_unload().
 */
gs_err gs_nvml_load(const char *library, struct gs_nvml **out,
                    struct gs_errbuf *eb);

/* Unloads (dlclose) and frees; no NVML call. NULL does nothing. */
void gs_nvml_unload(struct gs_nvml *n);

#endif
