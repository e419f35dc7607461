/*
 * nvml_abi.c - compile-time proof that include/gs/nvml.h has the ABI its
 * comments state (x86-64 sizes and offsets copied from NVIDIA's nvml.h
 * 13.3.29, see shared/reference/nvml-subset.md). The simulated library
 * hands these structs to programs built against the real header; one byte
 * off and a caller's stack is corrupted, so the build fails instead.
 * This file holds no code.
 */
#include <assert.h>
#include <stddef.h>

#include "gs/nvml.h"
#include "nvml_int.h"

#define SIZE(t, n)  static_assert(sizeof(t) == (n), #t " size")
#define AT(t, f, n) static_assert(offsetof(t, f) == (n), #t "." #f " offset")

SIZE(nvmlPciInfo_t, 68);
AT(nvmlPciInfo_t, domain, 16);
AT(nvmlPciInfo_t, busId, 36);
SIZE(nvmlMemory_t, 24);
SIZE(nvmlMemory_v2_t, 40);
static_assert(nvmlMemory_v2 == 0x02000028, "nvmlMemory_v2");
SIZE(nvmlUtilization_t, 8);

SIZE(nvmlProcessInfo_v1_t, 16);
SIZE(nvmlProcessInfo_v2_t, 24);
SIZE(nvmlProcessInfo_t, 24);
AT(nvmlProcessInfo_t, pid, 0);
AT(nvmlProcessInfo_t, usedGpuMemory, 8);
AT(nvmlProcessInfo_t, gpuInstanceId, 16);
AT(nvmlProcessInfo_t, computeInstanceId, 20);
SIZE(nvmlProcessDetail_v1_t, 32);
SIZE(nvmlProcessDetailList_v1_t, 24);
static_assert(nvmlProcessDetailList_v1 == 0x01000018,
              "nvmlProcessDetailList_v1");

SIZE(nvmlProcessUtilizationSample_t, 32);
AT(nvmlProcessUtilizationSample_t, pid, 0);
AT(nvmlProcessUtilizationSample_t, timeStamp, 8);
AT(nvmlProcessUtilizationSample_t, smUtil, 16);
AT(nvmlProcessUtilizationSample_t, memUtil, 20);
AT(nvmlProcessUtilizationSample_t, encUtil, 24);
AT(nvmlProcessUtilizationSample_t, decUtil, 28);
SIZE(nvmlProcessUtilizationInfo_v1_t, 40);
AT(nvmlProcessUtilizationInfo_v1_t, timeStamp, 0);
AT(nvmlProcessUtilizationInfo_v1_t, pid, 8);
SIZE(nvmlProcessesUtilizationInfo_v1_t, 24);
static_assert(nvmlProcessesUtilizationInfo_v1 == 0x01000018,
              "nvmlProcessesUtilizationInfo_v1");

SIZE(nvmlDeviceAttributes_t, 40);
SIZE(nvmlGpuInstancePlacement_t, 8);
SIZE(nvmlGpuInstanceProfileInfo_t, 48);
AT(nvmlGpuInstanceProfileInfo_t, memorySizeMB, 40);
SIZE(nvmlGpuInstanceProfileInfo_v2_t, 152);
AT(nvmlGpuInstanceProfileInfo_v2_t, memorySizeMB, 48);
AT(nvmlGpuInstanceProfileInfo_v2_t, name, 56);
static_assert(nvmlGpuInstanceProfileInfo_v2 == 0x02000098,
              "nvmlGpuInstanceProfileInfo_v2");
SIZE(nvmlGpuInstanceProfileInfo_v3_t, 152);
AT(nvmlGpuInstanceProfileInfo_v3_t, memorySizeMB, 40);
AT(nvmlGpuInstanceProfileInfo_v3_t, name, 48);
AT(nvmlGpuInstanceProfileInfo_v3_t, capabilities, 144);
static_assert(nvmlGpuInstanceProfileInfo_v3 == 0x03000098,
              "nvmlGpuInstanceProfileInfo_v3");
SIZE(nvmlGpuInstanceInfo_t, 24);
AT(nvmlGpuInstanceInfo_t, device, 0);
AT(nvmlGpuInstanceInfo_t, id, 8);
AT(nvmlGpuInstanceInfo_t, profileId, 12);
AT(nvmlGpuInstanceInfo_t, placement, 16);

SIZE(nvmlComputeInstancePlacement_t, 8);
SIZE(nvmlComputeInstanceProfileInfo_t, 36);
SIZE(nvmlComputeInstanceProfileInfo_v2_t, 136);
AT(nvmlComputeInstanceProfileInfo_v2_t, name, 40);
static_assert(nvmlComputeInstanceProfileInfo_v2 == 0x02000088,
              "nvmlComputeInstanceProfileInfo_v2");
SIZE(nvmlComputeInstanceProfileInfo_v3_t, 140);
AT(nvmlComputeInstanceProfileInfo_v3_t, capabilities, 136);
static_assert(nvmlComputeInstanceProfileInfo_v3 == 0x0300008C,
              "nvmlComputeInstanceProfileInfo_v3");
SIZE(nvmlComputeInstanceInfo_t, 32);
AT(nvmlComputeInstanceInfo_t, device, 0);
AT(nvmlComputeInstanceInfo_t, gpuInstance, 8);
AT(nvmlComputeInstanceInfo_t, id, 16);
AT(nvmlComputeInstanceInfo_t, profileId, 20);
AT(nvmlComputeInstanceInfo_t, placement, 24);

SIZE(nvmlEventData_t, 32);
AT(nvmlEventData_t, device, 0);
AT(nvmlEventData_t, eventType, 8);
AT(nvmlEventData_t, eventData, 16);
AT(nvmlEventData_t, gpuInstanceId, 24);
AT(nvmlEventData_t, computeInstanceId, 28);

/* The legacy layouts behind the unversioned symbols (nvml_int.h). */
SIZE(gs__nvmlEventData_v1_t, 24);
SIZE(gs__nvmlComputeInstanceInfo_v1_t, 24);

/* ISO C forbids an empty translation unit. */
typedef int gs__nvml_abi_checked;
