/*
 * nvml_dev.c - per-device queries of the simulated NVML: identity, PCI,
 * memory, compute mode, utilization and MIG device attributes.
 *
 * What the sim reports:
 *   - memory: total from the engine (whole GPU, or the MIG device's GPU
 *     instance); used = what live processes allocated plus their context
 *     overhead, as the CUDA stand-in accounts it; `reserved` is 0 (the sim
 *     reserves nothing), so v1 and v2 "used" agree. A MIG-enabled parent
 *     reports the sum over its MIG devices.
 *   - utilization: engine 0's busy time (time with any kernel running) over
 *     the last sample period. Snapshots of (time, busy) are kept in the
 *     state (gpu.util_t/util_busy) so every process sees one series; a
 *     new snapshot is taken at most every UTIL_PERIOD_NS, and the rate is
 *     measured against the older of the two, so the window is between one
 *     and two periods when someone polls regularly. Memory utilization is
 *     not modelled (0).
 */
#include "nvml_int.h"

#include <stdio.h>
#include <string.h>

#define UTIL_PERIOD_NS 166666666ULL /* 1/6 s, the real driver's sample rate */

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

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name,
                               unsigned int length)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);
	char buf[GS_SIM_NAME_LEN + 64];

	if (r != NVML_SUCCESS)
		return r;
	if (d.m != NULL) {
		const struct gs_mig_profile *p =
		    d.model != NULL ? gs_catalog_profile_by_id(
		                          d.model, (int)d.m->profile_id)
		                    : NULL;

		/* A CI smaller than its GI: "MIG 1c.3g.40gb". */
		if (p != NULL && (int)d.m->ci_size < p->compute_slices)
			(void)snprintf(buf, sizeof(buf), "%s MIG %uc.%s",
			               d.g->name, d.m->ci_size,
			               d.m->profile_name);
		else
			(void)snprintf(buf, sizeof(buf), "%s MIG %s", d.g->name,
			               d.m->profile_name);
	} else
		(void)snprintf(buf, sizeof(buf), "%s", d.g->name);
	r = gs__nvml_str(name, length, buf);
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid,
                               unsigned int length)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	r = gs__nvml_str(uuid, length, d.m != NULL ? d.m->uuid : d.g->uuid);
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (index == NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else if (d.m != NULL)
		r = NVML_ERROR_NOT_SUPPORTED; /* MIG devices have no index */
	else
		*index = d.gpu;
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device,
                                      unsigned int *minorNumber)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (minorNumber == NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else if (d.m != NULL)
		r = NVML_ERROR_NOT_SUPPORTED;
	else
		*minorNumber = d.gpu;
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);
	unsigned int bus;

	if (r != NVML_SUCCESS)
		return r;
	if (pci == NULL) {
		gs__nvml_leave(d.st);
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	bus = gs__nvml_pci_bus(d.gpu);
	memset(pci, 0, sizeof(*pci));
	pci->domain = 0;
	pci->bus = bus;
	pci->device = 0;
	pci->pciDeviceId = d.model != NULL && d.model->n_pci_device_ids > 0
	                       ? d.model->pci_device_ids[0]
	                       : 0x000010DEu;
	pci->pciSubSystemId = (pci->pciDeviceId & 0xFFFF0000u) | 0x10DEu;
	(void)snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy),
	               "0000:%02X:00.0", bus);
	(void)snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0",
	               bus);
	gs__nvml_leave(d.st);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char *serial,
                                 unsigned int length)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);
	char buf[NVML_DEVICE_SERIAL_BUFFER_SIZE];

	if (r != NVML_SUCCESS)
		return r;
	(void)snprintf(buf, sizeof(buf), "SIM%010u", d.gpu);
	r = gs__nvml_str(serial, length, buf);
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (type == NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else
		*type = NVML_BRAND_NVIDIA;
	gs__nvml_leave(d.st);
	return r;
}

static nvmlDeviceArchitecture_t arch_of(const struct gs_gpu_model *m)
{
	static const struct {
		const char *name;
		nvmlDeviceArchitecture_t arch;
	} archs[] = {
	    {"Volta", NVML_DEVICE_ARCH_VOLTA},
	    {"Turing", NVML_DEVICE_ARCH_TURING},
	    {"Ampere", NVML_DEVICE_ARCH_AMPERE},
	    {"Ada", NVML_DEVICE_ARCH_ADA},
	    {"Hopper", NVML_DEVICE_ARCH_HOPPER},
	    {"Blackwell", NVML_DEVICE_ARCH_BLACKWELL},
	};

	if (m == NULL || m->architecture == NULL)
		return NVML_DEVICE_ARCH_UNKNOWN;
	for (size_t i = 0; i < sizeof(archs) / sizeof(archs[0]); i++)
		if (strncmp(m->architecture, archs[i].name,
		            strlen(archs[i].name)) == 0)
			return archs[i].arch;
	return NVML_DEVICE_ARCH_UNKNOWN;
}

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device,
                                       nvmlDeviceArchitecture_t *arch)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (arch == NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else
		*arch = arch_of(d.model);
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major,
                                                int *minor)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (major == NULL || minor == NULL) {
		r = NVML_ERROR_INVALID_ARGUMENT;
	} else {
		*major = (int)d.g->cc_major;
		*minor = (int)d.g->cc_minor;
	}
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t device,
                                      unsigned int *numCores)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (numCores == NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else
		r = NVML_ERROR_NOT_SUPPORTED; /* the sim models SMs, not cores
		                               */
	gs__nvml_leave(d.st);
	return r;
}

/* total and used bytes of a handle (see the file comment). */
static void mem_of(const struct gs__dev *d, uint64_t *total, uint64_t *used)
{
	if (d->m != NULL || !d->g->mig_mode) {
		*total = d->e->mem_total;
		*used = d->e->mem_used;
		return;
	}
	*total = d->g->memory_total;
	*used = 0;
	for (int s = 0; s < GS_SIM_MAX_MIG; s++)
		if (d->g->mig[s].in_use && d->g->engine[1 + s].live)
			*used += d->g->engine[1 + s].mem_used;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);
	uint64_t total, used;

	if (r != NVML_SUCCESS)
		return r;
	if (memory == NULL) {
		gs__nvml_leave(d.st);
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	mem_of(&d, &total, &used);
	memory->total = total;
	memory->used = used;
	memory->free = total > used ? total - used : 0;
	gs__nvml_leave(d.st);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
                                        nvmlMemory_v2_t *memory)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);
	uint64_t total, used;

	if (r != NVML_SUCCESS)
		return r;
	if (memory == NULL) {
		r = NVML_ERROR_INVALID_ARGUMENT;
	} else if (memory->version != nvmlMemory_v2) {
		r = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	} else {
		mem_of(&d, &total, &used);
		memory->total = total;
		memory->reserved = 0;
		memory->used = used;
		memory->free = total > used ? total - used : 0;
	}
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device,
                                          nvmlEnableState_t *mode)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (mode == NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else
		/* A simulated driver is always loaded: report "enabled". */
		*mode = NVML_FEATURE_ENABLED;
	gs__nvml_leave(d.st);
	return r;
}

/*
 * Compute mode lives on the GPU while MIG is off and on each MIG device
 * while it is on; the header requires a MIG device handle then.
 */
nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device,
                                      nvmlComputeMode_t *mode)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (mode == NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else if (d.m != NULL)
		*mode = (nvmlComputeMode_t)d.m->compute_mode;
	else
		*mode = (nvmlComputeMode_t)d.g->compute_mode;
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t device,
                                      nvmlComputeMode_t mode)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (mode != NVML_COMPUTEMODE_DEFAULT &&
	    mode != NVML_COMPUTEMODE_PROHIBITED &&
	    mode != NVML_COMPUTEMODE_EXCLUSIVE_PROCESS)
		r = NVML_ERROR_INVALID_ARGUMENT; /* EXCLUSIVE_THREAD: removed */
	else if (d.m != NULL)
		d.m->compute_mode = (uint32_t)mode;
	else if (d.g->mig_mode)
		r = NVML_ERROR_NOT_SUPPORTED; /* use the MIG device handles */
	else
		d.g->compute_mode = (uint32_t)mode;
	gs__nvml_leave(d.st);
	return r;
}

/* Engine 0's busy fraction in percent (see the file comment). */
static unsigned int gpu_util(struct gs_sim_state *st, uint32_t gpu)
{
	struct gs_sim_gpu *g = &st->gpus[gpu];
	uint64_t now = gs_sim_now_ns(), busy;
	uint64_t t0, b0, pct;

	gs_sim_engine_advance(st, gpu, 0, now);
	busy = g->engine[0].busy_ns;
	/* A reset zeroes busy_ns: forget snapshots from before it. */
	if (busy < g->util_busy[1] || busy < g->util_busy[0] ||
	    now < g->util_t[1]) {
		memset(g->util_t, 0, sizeof(g->util_t));
		memset(g->util_busy, 0, sizeof(g->util_busy));
	}
	if (g->util_t[1] == 0) {
		/* First sample on this node: measure from the oldest live
		 * process on the GPU (nothing ran before it in this epoch). */
		uint64_t since = now;

		for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
			const struct gs_sim_proc *p = &st->procs[i];

			if (p->state == GS_SIM_PROC_LIVE && p->gpu == gpu &&
			    p->engine == 0 && p->created_ns < since)
				since = p->created_ns;
		}
		g->util_t[1] = since;
		g->util_busy[1] = 0;
		if (since == now) {
			g->util_busy[1] = busy;
			return 0;
		}
	}
	if (now - g->util_t[1] >= UTIL_PERIOD_NS) {
		g->util_t[0] = g->util_t[1];
		g->util_busy[0] = g->util_busy[1];
		g->util_t[1] = now;
		g->util_busy[1] = busy;
	}
	if (g->util_t[0] != 0) {
		t0 = g->util_t[0];
		b0 = g->util_busy[0];
	} else {
		t0 = g->util_t[1];
		b0 = g->util_busy[1];
	}
	if (now <= t0 || busy < b0)
		return 0;
	pct = (busy - b0) * 100 / (now - t0);
	return pct > 100 ? 100 : (unsigned int)pct;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                           nvmlUtilization_t *utilization)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);

	if (r != NVML_SUCCESS)
		return r;
	if (utilization == NULL) {
		r = NVML_ERROR_INVALID_ARGUMENT;
	} else if (d.m != NULL || d.g->mig_mode) {
		r = NVML_ERROR_NOT_SUPPORTED; /* as on MIG-enabled GPUs */
	} else {
		utilization->gpu = gpu_util(d.st, d.gpu);
		utilization->memory = 0;
	}
	gs__nvml_leave(d.st);
	return r;
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device,
                                        nvmlDeviceAttributes_t *attributes)
{
	struct gs__dev d;
	nvmlReturn_t r = enter_dev(device, &d);
	const struct gs_mig_profile *p;

	if (r != NVML_SUCCESS)
		return r;
	if (attributes == NULL) {
		gs__nvml_leave(d.st);
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	if (d.m == NULL || d.model == NULL) {
		gs__nvml_leave(d.st);
		return NVML_ERROR_NOT_SUPPORTED; /* MIG device handles only */
	}
	p = gs_catalog_profile_by_id(d.model, (int)d.m->profile_id);
	memset(attributes, 0, sizeof(*attributes));
	attributes->multiprocessorCount = d.e->sm_count;
	attributes->sharedCopyEngineCount =
	    p != NULL ? (unsigned int)p->compute_slices : 1;
	attributes->gpuInstanceSliceCount =
	    p != NULL ? (unsigned int)p->compute_slices : 0;
	attributes->computeInstanceSliceCount = d.m->ci_size;
	attributes->memorySizeMB = d.e->mem_total >> 20;
	gs__nvml_leave(d.st);
	return NVML_SUCCESS;
}
