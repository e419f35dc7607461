/*
 * nvml.c - NVML's memory queries, answered with the slice's view: inside a
 * slice with a memory cap, nvmlDeviceGetMemoryInfo(_v2) reports total =
 * the cap, used = the slice's usage on that GPU (all its processes), free
 * = what is left of the cap (never more than the GPU really has free).
 * Devices are matched to the region by UUID, so the view is right however
 * CUDA_VISIBLE_DEVICES numbers them. Everything else in NVML passes
 * through: these two are the only NVML symbols the shim exports.
 */
#include "shim_int.h"

#include <errno.h>

#define GS__NDECL(sym) GS_EXPORT __typeof__(sym) sym;
GS_NVML_HOOKS(GS__NDECL)
#undef GS__NDECL

/* The slice's (used, cap) on NVML device `device`; false: no view. */
static bool slice_view(nvmlDevice_t device, uint64_t *used, uint64_t *limit)
{
	char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
	int dev;

	gs__init();
	if (!gs__enforcing() || gs__rnvml.nvmlDeviceGetUUID == NULL ||
	    gs__rnvml.nvmlDeviceGetUUID(device, uuid, sizeof(uuid)) !=
	        NVML_SUCCESS)
		return false;
	dev = gs__dev_from_uuid(uuid);
	if (dev < 0 || gs_region_mem_view(gs__g.region, &gs__g.proc, dev, used,
	                                  limit) != GS_OK)
		return false;
	return *limit != 0;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	int saved = errno;
	uint64_t used, limit;
	nvmlReturn_t r;

	if (!gs__nvml_ready() || gs__rnvml.nvmlDeviceGetMemoryInfo == NULL)
		return NVML_ERROR_UNINITIALIZED;
	r = gs__rnvml.nvmlDeviceGetMemoryInfo(device, memory);
	if (r == NVML_SUCCESS && memory != NULL &&
	    slice_view(device, &used, &limit)) {
		uint64_t room = used < limit ? limit - used : 0;

		memory->total = limit;
		memory->used = used;
		memory->free = room < memory->free ? room : memory->free;
	}
	errno = saved;
	return r;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
                                        nvmlMemory_v2_t *memory)
{
	int saved = errno;
	uint64_t used, limit;
	nvmlReturn_t r;

	if (!gs__nvml_ready() || gs__rnvml.nvmlDeviceGetMemoryInfo_v2 == NULL)
		return NVML_ERROR_UNINITIALIZED;
	r = gs__rnvml.nvmlDeviceGetMemoryInfo_v2(device, memory);
	if (r == NVML_SUCCESS && memory != NULL &&
	    slice_view(device, &used, &limit)) {
		uint64_t room = used < limit ? limit - used : 0;

		memory->total = limit;
		memory->reserved = 0;
		memory->used = used;
		memory->free = room < memory->free ? room : memory->free;
	}
	errno = saved;
	return r;
}
