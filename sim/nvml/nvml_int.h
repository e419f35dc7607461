/*
 * nvml_int.h - what the files of the simulated libnvidia-ml.so.1 share:
 * the library's one global (init count and the mapped node state), the
 * handle types behind NVML's opaque pointers, the bracket every entry
 * point runs in, and the legacy struct layouts of the unversioned symbols.
 *
 * Handles. Every handle points into a static table of this library, one
 * entry per GPU / MIG slot, so a handle is stable for the life of the
 * process and a pointer that is not one of ours is refused with
 * NVML_ERROR_INVALID_ARGUMENT instead of being dereferenced. A MIG slot's
 * handles (MIG device, GPU instance, compute instance) are reused when the
 * slot is, as real NVML's are: re-resolve after a layout change.
 *
 * The sim keeps one compute instance per GPU instance (state.h: struct
 * gs_sim_mig), so a MIG device is "GI slot i with its CI", its index for
 * nvmlDeviceGetMigDeviceHandleByIndex is i, and its execution engine is
 * engine 1 + i. The engine is live only while the CI exists.
 *
 * Every entry point runs as:
 *     r = gs__nvml_enter(&st);          init count checked, state locked
 *     ... gs__nvml_dev(st, handle, &d) ... read or change the state ...
 *     gs__nvml_leave(st);
 * gs__nvml_enter holds the library's life lock (read side) so that
 * nvmlShutdown cannot unmap the state under a running call.
 */
#ifndef GS_SIM_NVML_INT_H
#define GS_SIM_NVML_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "gs/catalog.h"
#include "gs/nvml.h"
#include "gs_sim/state.h"

#define GS__NVML_NO_ID 0xFFFFFFFFu

struct nvmlDevice_st {
	uint32_t gpu;
	int32_t mig; /* -1: the GPU itself; else GI slot (MIG device) */
};

struct nvmlGpuInstance_st {
	uint32_t gpu;
	uint32_t slot;
};

struct nvmlComputeInstance_st {
	uint32_t gpu;
	uint32_t slot;
};

/* A resolved handle (state locked): everything a call needs about it. */
struct gs__dev {
	struct gs_sim_state *st;
	uint32_t gpu;
	int mig; /* -1 or GI slot */
	struct gs_sim_gpu *g;
	struct gs_sim_mig *m;    /* NULL for a GPU handle */
	struct gs_sim_engine *e; /* engine 0 or 1 + slot */
	const struct gs_gpu_model *model;
};

/* Takes the life lock (read) and the state lock; NVML_ERROR_UNINITIALIZED
 * before nvmlInit. *st is NULL when init ran with NVML_INIT_FLAG_NO_GPUS
 * on a node without state; device lookups then fail. */
nvmlReturn_t gs__nvml_enter(struct gs_sim_state **st);
void gs__nvml_leave(struct gs_sim_state *st);

/* Resolve handles (state locked). A MIG device or CI handle is valid while
 * its slot holds a CI; a GI handle while the slot is in use. */
nvmlReturn_t gs__nvml_dev(struct gs_sim_state *st, nvmlDevice_t h,
                          struct gs__dev *out);
nvmlReturn_t gs__nvml_gi(struct gs_sim_state *st, nvmlGpuInstance_t h,
                         struct gs__dev *out);
nvmlReturn_t gs__nvml_ci(struct gs_sim_state *st, nvmlComputeInstance_t h,
                         struct gs__dev *out);

nvmlDevice_t gs__nvml_gpu_handle(uint32_t gpu);
nvmlDevice_t gs__nvml_mig_handle(uint32_t gpu, uint32_t slot);
nvmlGpuInstance_t gs__nvml_gi_handle(uint32_t gpu, uint32_t slot);
nvmlComputeInstance_t gs__nvml_ci_handle(uint32_t gpu, uint32_t slot);

/* The catalog model of GPU `gpu` (looked up once at init); may be NULL for
 * a model the catalog no longer knows (MIG calls then report NOT_SUPPORTED). */
const struct gs_gpu_model *gs__nvml_model(uint32_t gpu);

/* Copies `s` into an NVML string buffer: NVML_ERROR_INSUFFICIENT_SIZE when
 * it does not fit with its NUL, INVALID_ARGUMENT for a NULL buffer. */
nvmlReturn_t gs__nvml_str(char *buf, unsigned int length, const char *s);

/* Whether the MPS record of an engine names a live control daemon. */
bool gs__nvml_mps_live(const struct gs_sim_mps *mps);

/* "00000000:BB:00.0" for GPU index i (the sim's synthetic PCI address). */
unsigned int gs__nvml_pci_bus(uint32_t gpu);

/* ---- legacy layouts behind the unversioned symbols ---- */

typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType;
	unsigned long long eventData;
} gs__nvmlEventData_v1_t;

typedef struct {
	nvmlDevice_t device;
	nvmlGpuInstance_t gpuInstance;
	unsigned int id;
	unsigned int profileId;
} gs__nvmlComputeInstanceInfo_v1_t;

/* Prototypes of the unversioned legacy symbols this library also exports
 * (not in gs/nvml.h: new code must call the versioned names). */
nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount);
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index,
                                        nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId,
                                           nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                  unsigned int *infoCount,
                                                  nvmlProcessInfo_v1_t *infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                     unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device,
                                                   unsigned int *infoCount,
                                                   nvmlProcessInfo_v1_t *infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device,
                                                      unsigned int *infoCount,
                                                      nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(
    nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v1_t *infos);
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(
    nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, gs__nvmlEventData_v1_t *data,
                              unsigned int timeoutms);
nvmlReturn_t nvmlComputeInstanceGetInfo(nvmlComputeInstance_t ci,
                                        gs__nvmlComputeInstanceInfo_v1_t *info);

#endif
