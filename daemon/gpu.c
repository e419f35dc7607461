/*
 * gpu.c - NVML through dlopen (see gpu.h).
 *
 * The entry points are resolved once into `struct gs_nvml`; a missing one
 * makes gs_gpus_open fail only when discovery needs it, so an older driver
 * still serves whatever it has. Every NVML call here is made with the node
 * lock held by the caller, so the library is never entered from two of our
 * threads at once (NVML is thread-safe, but the sim's state is cheaper to
 * reason about that way).
 */
#include "gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/log.h"
#include "gs/nvml.h"
#include "gs/nvml_load.h"
#include "gs/spec.h"

static const char *nv_err(struct gs_nvml *f, nvmlReturn_t rc)
{
	static _Thread_local char buf[32]; /* MIG steps run off the lock */

	if (f && f->nvmlErrorString)
		return f->nvmlErrorString(rc);
	snprintf(buf, sizeof(buf), "NVML error %d", (int)rc);
	return buf;
}

static gs_err nv_fail(struct gs_gpus *g, struct gs_errbuf *eb, nvmlReturn_t rc,
                      const char *what)
{
	gs_err code = rc == NVML_ERROR_NOT_SUPPORTED   ? GS_ERR_UNSUPPORTED
	              : rc == NVML_ERROR_NO_PERMISSION ? GS_ERR_PERM
	              : rc == NVML_ERROR_INSUFFICIENT_RESOURCES ? GS_ERR_NO_FIT
	              : rc == NVML_ERROR_NOT_FOUND ? GS_ERR_NOT_FOUND
	              : rc == NVML_ERROR_IN_USE    ? GS_ERR_BUSY
	                                           : GS_ERR_DRIVER;

	return gs_fail(eb, code, "%s: %s", what, nv_err(g->fn, rc));
}

/* Reads the MIG devices of GPU `gp`. */
static void read_mig(struct gs_gpus *g, struct gs_gpu *gp)
{
	struct gs_nvml *f = g->fn;
	unsigned int cur = 0, pend = 0, max = 0;

	gp->n_mig = 0;
	gp->mig_on = false;
	if (!f->nvmlDeviceGetMigMode ||
	    f->nvmlDeviceGetMigMode(gp->handle, &cur, &pend) != NVML_SUCCESS) {
		gp->mig_capable = false;
		return;
	}
	gp->mig_capable = true;
	gp->mig_on = cur == NVML_DEVICE_MIG_ENABLE;
	if (!gp->mig_on || !f->nvmlDeviceGetMaxMigDeviceCount ||
	    !f->nvmlDeviceGetMigDeviceHandleByIndex ||
	    f->nvmlDeviceGetMaxMigDeviceCount(gp->handle, &max) != NVML_SUCCESS)
		return;
	for (unsigned int k = 0; k < max && gp->n_mig < GS_GPU_MIG_MAX; k++) {
		nvmlDevice_t md;
		struct gs_mig_dev *m = &gp->mig[gp->n_mig];
		unsigned int gi = 0, ci = 0;
		nvmlDeviceAttributes_t attr;
		nvmlGpuInstance_t gih;
		nvmlGpuInstanceInfo_t info;
		const struct gs_mig_profile *p = NULL;

		if (f->nvmlDeviceGetMigDeviceHandleByIndex(gp->handle, k,
		                                           &md) != NVML_SUCCESS)
			continue;
		memset(m, 0, sizeof(*m));
		(void)f->nvmlDeviceGetUUID(md, m->uuid, sizeof(m->uuid));
		if (f->nvmlDeviceGetGpuInstanceId)
			(void)f->nvmlDeviceGetGpuInstanceId(md, &gi);
		if (f->nvmlDeviceGetComputeInstanceId)
			(void)f->nvmlDeviceGetComputeInstanceId(md, &ci);
		m->gi_id = (int)gi;
		m->ci_id = (int)ci;
		if (f->nvmlDeviceGetAttributes_v2 &&
		    f->nvmlDeviceGetAttributes_v2(md, &attr) == NVML_SUCCESS) {
			m->memory_bytes = attr.memorySizeMB << 20;
			m->sm_count = (int)attr.multiprocessorCount;
			m->compute_slices = (int)attr.gpuInstanceSliceCount;
		}
		m->profile_id = -1;
		if (f->nvmlDeviceGetGpuInstanceById &&
		    f->nvmlGpuInstanceGetInfo &&
		    f->nvmlDeviceGetGpuInstanceById(gp->handle, gi, &gih) ==
		        NVML_SUCCESS &&
		    f->nvmlGpuInstanceGetInfo(gih, &info) == NVML_SUCCESS) {
			m->profile_id = (int)info.profileId;
			m->start = (int)info.placement.start;
			m->size = (int)info.placement.size;
		}
		if (gp->cat && m->profile_id >= 0)
			p = gs_catalog_profile_by_id(gp->cat, m->profile_id);
		if (p) {
			snprintf(m->profile, sizeof(m->profile), "%s", p->name);
			if (m->compute_slices == 0)
				m->compute_slices = p->compute_slices;
		} else {
			snprintf(m->profile, sizeof(m->profile), "%dg",
			         m->compute_slices);
		}
		gp->n_mig++;
	}
}

gs_err gs_gpus_open(struct gs_gpus *g, const char *library,
                    struct gs_errbuf *eb)
{
	struct gs_nvml *f;
	unsigned int n = 0;
	nvmlReturn_t rc;
	gs_err err;

	memset(g, 0, sizeof(*g));
	err = gs_nvml_load(library, &f, eb);
	if (err != GS_OK)
		return err;
	snprintf(g->library, sizeof(g->library), "%s", library);
	g->lib = f->lib;
	g->fn = f;
	if (!f->nvmlInit_v2 || !f->nvmlDeviceGetCount_v2 ||
	    !f->nvmlDeviceGetHandleByIndex_v2 || !f->nvmlDeviceGetName ||
	    !f->nvmlDeviceGetUUID || !f->nvmlDeviceGetMemoryInfo) {
		err = gs_fail(eb, GS_ERR_UNAVAILABLE,
		              "%s lacks the NVML entry points gpusliced needs",
		              library);
		goto out_close;
	}
	rc = f->nvmlInit_v2();
	if (rc != NVML_SUCCESS) {
		err = gs_fail(eb, GS_ERR_UNAVAILABLE, "nvmlInit: %s",
		              nv_err(f, rc));
		goto out_close;
	}
	if (f->nvmlSystemGetDriverVersion)
		(void)f->nvmlSystemGetDriverVersion(g->driver,
		                                    sizeof(g->driver));
	rc = f->nvmlDeviceGetCount_v2(&n);
	if (rc != NVML_SUCCESS || n == 0) {
		err =
		    gs_fail(eb, GS_ERR_UNAVAILABLE, "no GPUs (%s)",
		            rc == NVML_SUCCESS ? "count is 0" : nv_err(f, rc));
		goto out_shutdown;
	}
	if (n > GS_GPUS_MAX)
		n = GS_GPUS_MAX;
	g->sim = true;
	for (unsigned int i = 0; i < n; i++) {
		struct gs_gpu *gp = &g->gpu[i];
		nvmlMemory_t mem;
		char serial[64] = "";
		nvmlDevice_t h;

		rc = f->nvmlDeviceGetHandleByIndex_v2(i, &h);
		if (rc != NVML_SUCCESS) {
			err = nv_fail(g, eb, rc, "device handle");
			goto out_shutdown;
		}
		gp->handle = h;
		gp->index = (int)i;
		(void)f->nvmlDeviceGetName(h, gp->name, sizeof(gp->name));
		(void)f->nvmlDeviceGetUUID(h, gp->uuid, sizeof(gp->uuid));
		if (f->nvmlDeviceGetMemoryInfo(h, &mem) == NVML_SUCCESS)
			gp->memory_bytes = mem.total;
		gp->cat = gs_catalog_find(gp->name);
		if (f->nvmlDeviceGetPciInfo_v3) {
			nvmlPciInfo_t pci;

			if (f->nvmlDeviceGetPciInfo_v3(h, &pci) ==
			    NVML_SUCCESS) {
				if (gp->cat == NULL)
					gp->cat = gs_catalog_find_pci(
					    pci.pciDeviceId);
				gp->has_pci = true;
				gp->pci_domain = pci.domain;
				gp->pci_bus = pci.bus;
				gp->pci_device = pci.device;
			}
		}
		snprintf(gp->model, sizeof(gp->model), "%.47s",
		         gp->cat ? gp->cat->name : gp->name);
		gp->sm_count = gp->cat ? gp->cat->sm_count : 0;
		if (!f->nvmlDeviceGetSerial ||
		    f->nvmlDeviceGetSerial(h, serial, sizeof(serial)) !=
		        NVML_SUCCESS ||
		    strncmp(serial, "SIM", 3) != 0)
			g->sim = false;
		read_mig(g, gp);
	}
	g->n = (int)n;
	if (f->nvmlEventSetCreate && f->nvmlDeviceRegisterEvents &&
	    f->nvmlEventSetWait_v2) {
		nvmlEventSet_t set;

		if (f->nvmlEventSetCreate(&set) == NVML_SUCCESS) {
			g->events = set;
			for (int i = 0; i < g->n; i++)
				(void)f->nvmlDeviceRegisterEvents(
				    g->gpu[i].handle,
				    nvmlEventTypeXidCriticalError, set);
		}
	}
	return GS_OK;

out_shutdown:
	f->nvmlShutdown();
out_close:
	gs_nvml_unload(f);
	memset(g, 0, sizeof(*g));
	return err;
}

void gs_gpus_close(struct gs_gpus *g)
{
	struct gs_nvml *f = g->fn;

	if (g->fake || f == NULL)
		return;
	if (g->events && f->nvmlEventSetFree)
		(void)f->nvmlEventSetFree(g->events);
	if (f->nvmlShutdown)
		(void)f->nvmlShutdown();
	gs_nvml_unload(f);
	memset(g, 0, sizeof(*g));
}

gs_err gs_gpus_fake(struct gs_gpus *g, const char *model, int count,
                    struct gs_errbuf *eb)
{
	const struct gs_gpu_model *m = gs_catalog_find(model);

	memset(g, 0, sizeof(*g));
	if (m == NULL)
		return gs_fail(eb, GS_ERR_UNKNOWN_MODEL, "unknown model %s",
		               model);
	if (count < 1 || count > GS_GPUS_MAX)
		return gs_fail(eb, GS_ERR_RANGE, "GPU count must be 1..%d",
		               GS_GPUS_MAX);
	g->fake = true;
	g->sim = true;
	snprintf(g->library, sizeof(g->library), "(none)");
	snprintf(g->driver, sizeof(g->driver), "fake");
	g->n = count;
	for (int i = 0; i < count; i++) {
		struct gs_gpu *gp = &g->gpu[i];

		gp->index = i;
		snprintf(gp->uuid, sizeof(gp->uuid),
		         "GPU-00000000-0000-0000-0000-%012d", i);
		snprintf(gp->name, sizeof(gp->name), "%s", m->nvml_name);
		snprintf(gp->model, sizeof(gp->model), "%s", m->name);
		gp->cat = m;
		gp->memory_bytes = m->memory_mib << 20;
		gp->sm_count = m->sm_count;
		gp->mig_capable = true;
	}
	return GS_OK;
}

gs_err gs_gpus_refresh(struct gs_gpus *g, struct gs_errbuf *eb)
{
	(void)eb;
	if (g->fake || g->fn == NULL)
		return GS_OK;
	for (int i = 0; i < g->n; i++)
		read_mig(g, &g->gpu[i]);
	return GS_OK;
}

gs_err gs_gpus_processes(struct gs_gpus *g, int i, struct gs_gpu_proc *procs,
                         int cap, int *n)
{
	struct gs_nvml *f = g->fn;
	nvmlProcessInfo_t info[256];
	unsigned int count = 256;
	nvmlReturn_t rc;

	*n = 0;
	if (g->fake || f == NULL || !f->nvmlDeviceGetComputeRunningProcesses_v3)
		return GS_ERR_UNSUPPORTED;
	if (i < 0 || i >= g->n)
		return GS_ERR_NOT_FOUND;
	rc = f->nvmlDeviceGetComputeRunningProcesses_v3(g->gpu[i].handle,
	                                                &count, info);
	if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE)
		return GS_ERR_DRIVER;
	if (count > 256)
		count = 256;
	for (unsigned int k = 0; k < count && *n < cap; k++) {
		procs[*n].pid = (int32_t)info[k].pid;
		procs[*n].mem_bytes = info[k].usedGpuMemory;
		procs[*n].gi_id = info[k].gpuInstanceId == 0xFFFFFFFFu
		                      ? -1
		                      : (int)info[k].gpuInstanceId;
		procs[*n].ci_id = info[k].computeInstanceId == 0xFFFFFFFFu
		                      ? -1
		                      : (int)info[k].computeInstanceId;
		(*n)++;
	}
	return GS_OK;
}

gs_err gs_gpus_process_util(struct gs_gpus *g, int i, uint64_t *since_us,
                            struct gs_gpu_util *out, int cap, int *n)
{
	struct gs_nvml *f = g->fn;
	nvmlProcessUtilizationSample_t s[256];
	unsigned int count = 256;
	uint64_t newest = *since_us;
	nvmlReturn_t rc;

	*n = 0;
	if (g->fake || f == NULL || !f->nvmlDeviceGetProcessUtilization)
		return GS_ERR_UNSUPPORTED;
	if (i < 0 || i >= g->n)
		return GS_ERR_NOT_FOUND;
	rc = f->nvmlDeviceGetProcessUtilization(g->gpu[i].handle, s, &count,
	                                        *since_us);
	if (rc == NVML_ERROR_NOT_FOUND)
		return GS_OK; /* no samples since then */
	if (rc == NVML_ERROR_NOT_SUPPORTED)
		return GS_ERR_UNSUPPORTED;
	if (rc != NVML_SUCCESS)
		return GS_ERR_DRIVER;
	if (count > 256)
		count = 256;
	/* Several samples of one process: their mean. */
	for (unsigned int k = 0; k < count; k++) {
		int j;

		if (s[k].timeStamp <= *since_us)
			continue;
		if (s[k].timeStamp > newest)
			newest = s[k].timeStamp;
		for (j = 0; j < *n; j++)
			if (out[j].pid == (int32_t)s[k].pid)
				break;
		if (j == *n) {
			if (*n == cap)
				continue;
			out[j] = (struct gs_gpu_util){.pid = (int32_t)s[k].pid};
			(*n)++;
		}
		out[j].sm_pct = (out[j].sm_pct * out[j].samples + s[k].smUtil) /
		                (out[j].samples + 1);
		out[j].samples++;
	}
	*since_us = newest;
	return GS_OK;
}

gs_err gs_gpus_next_event(struct gs_gpus *g, int timeout_ms,
                          struct gs_gpu_event *ev)
{
	struct gs_nvml *f = g->fn;
	nvmlEventData_t d;
	nvmlReturn_t rc;

	if (g->fake || f == NULL || g->events == NULL)
		return GS_ERR_UNSUPPORTED;
	memset(&d, 0, sizeof(d));
	rc = f->nvmlEventSetWait_v2(g->events, &d, (unsigned int)timeout_ms);
	if (rc == NVML_ERROR_TIMEOUT)
		return GS_ERR_TIMEOUT;
	if (rc != NVML_SUCCESS)
		return GS_ERR_DRIVER;
	ev->gpu = -1;
	for (int i = 0; i < g->n; i++)
		if (g->gpu[i].handle == (void *)d.device)
			ev->gpu = i;
	if (ev->gpu < 0) {
		/* A MIG device handle: find its parent by GI id below. */
		for (int i = 0; i < g->n && ev->gpu < 0; i++)
			for (int k = 0; k < g->gpu[i].n_mig; k++)
				if ((unsigned int)g->gpu[i].mig[k].gi_id ==
				    d.gpuInstanceId)
					ev->gpu = i;
	}
	ev->xid = d.eventData;
	ev->gi_id = d.gpuInstanceId == 0xFFFFFFFFu ? -1 : (int)d.gpuInstanceId;
	ev->ci_id =
	    d.computeInstanceId == 0xFFFFFFFFu ? -1 : (int)d.computeInstanceId;
	return GS_OK;
}

gs_err gs_gpus_set_mig(struct gs_gpus *g, int i, bool on, struct gs_errbuf *eb)
{
	struct gs_nvml *f = g->fn;
	nvmlReturn_t act = NVML_SUCCESS, rc;

	if (g->fake || f == NULL || !f->nvmlDeviceSetMigMode)
		return gs_fail(eb, GS_ERR_UNSUPPORTED, "MIG mode: no driver");
	rc = f->nvmlDeviceSetMigMode(
	    g->gpu[i].handle,
	    on ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE, &act);
	if (rc != NVML_SUCCESS)
		return nv_fail(g, eb, rc, "set MIG mode");
	if (act != NVML_SUCCESS)
		return nv_fail(g, eb, act, "activate MIG mode (GPU reset?)");
	read_mig(g, &g->gpu[i]);
	return GS_OK;
}

gs_err gs_gpus_mig_create(struct gs_gpus *g, int i, int profile_id, int start,
                          struct gs_mig_dev *dev, struct gs_errbuf *eb)
{
	struct gs_nvml *f = g->fn;
	nvmlGpuInstance_t gi;
	nvmlComputeInstance_t ci;
	nvmlComputeInstanceProfileInfo_t cip;
	nvmlGpuInstanceInfo_t info;
	struct gs_gpu *gp;
	nvmlReturn_t rc;
	unsigned int ci_profile = 0;
	const struct gs_mig_profile *p;

	if (g->fake || f == NULL || !f->nvmlDeviceCreateGpuInstance ||
	    !f->nvmlGpuInstanceCreateComputeInstance)
		return gs_fail(eb, GS_ERR_UNSUPPORTED, "MIG: no driver");
	gp = &g->gpu[i];
	if (start >= 0 && f->nvmlDeviceCreateGpuInstanceWithPlacement) {
		nvmlGpuInstancePlacement_t pl;

		p = gp->cat ? gs_catalog_profile_by_id(gp->cat, profile_id)
		            : NULL;
		pl.start = (unsigned int)start;
		pl.size = p ? (unsigned int)p->memory_slices : 1;
		rc = f->nvmlDeviceCreateGpuInstanceWithPlacement(
		    gp->handle, (unsigned int)profile_id, &pl, &gi);
	} else {
		rc = f->nvmlDeviceCreateGpuInstance(
		    gp->handle, (unsigned int)profile_id, &gi);
	}
	if (rc != NVML_SUCCESS)
		return nv_fail(g, eb, rc, "create GPU instance");
	/* One compute instance over the whole GPU instance: the largest CI
	 * profile the GI accepts. */
	p = gp->cat ? gs_catalog_profile_by_id(gp->cat, profile_id) : NULL;
	if (p) {
		static const unsigned int by_slices[] = {
		    0,
		    NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
		    NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE,
		    NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE,
		    NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE,
		    NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE,
		    NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE,
		    NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE,
		    NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE};
		if (p->compute_slices > 0 && p->compute_slices <= 8)
			ci_profile = by_slices[p->compute_slices];
	}
	if (f->nvmlGpuInstanceGetComputeInstanceProfileInfo &&
	    f->nvmlGpuInstanceGetComputeInstanceProfileInfo(
	        gi, ci_profile, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED,
	        &cip) == NVML_SUCCESS)
		ci_profile = cip.id;
	rc = f->nvmlGpuInstanceCreateComputeInstance(gi, ci_profile, &ci);
	if (rc != NVML_SUCCESS) {
		(void)f->nvmlGpuInstanceDestroy(gi);
		return nv_fail(g, eb, rc, "create compute instance");
	}
	read_mig(g, gp);
	memset(dev, 0, sizeof(*dev));
	if (f->nvmlGpuInstanceGetInfo &&
	    f->nvmlGpuInstanceGetInfo(gi, &info) == NVML_SUCCESS) {
		for (int k = 0; k < gp->n_mig; k++)
			if (gp->mig[k].gi_id == (int)info.id)
				*dev = gp->mig[k];
	}
	return GS_OK;
}

gs_err gs_gpus_mig_destroy(struct gs_gpus *g, int i, int gi_id,
                           struct gs_errbuf *eb)
{
	struct gs_nvml *f = g->fn;
	nvmlGpuInstance_t gi;
	nvmlComputeInstance_t cis[8];
	unsigned int n = 8;
	nvmlReturn_t rc;

	if (g->fake || f == NULL || !f->nvmlDeviceGetGpuInstanceById ||
	    !f->nvmlGpuInstanceDestroy)
		return gs_fail(eb, GS_ERR_UNSUPPORTED, "MIG: no driver");
	rc = f->nvmlDeviceGetGpuInstanceById(g->gpu[i].handle,
	                                     (unsigned int)gi_id, &gi);
	if (rc != NVML_SUCCESS)
		return nv_fail(g, eb, rc, "find GPU instance");
	if (f->nvmlGpuInstanceGetComputeInstances &&
	    f->nvmlComputeInstanceDestroy) {
		for (unsigned int prof = 0;
		     prof < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; prof++) {
			n = 8;
			if (f->nvmlGpuInstanceGetComputeInstances(
			        gi, prof, cis, &n) != NVML_SUCCESS)
				continue;
			for (unsigned int k = 0; k < n; k++)
				(void)f->nvmlComputeInstanceDestroy(cis[k]);
		}
	}
	rc = f->nvmlGpuInstanceDestroy(gi);
	if (rc != NVML_SUCCESS)
		return nv_fail(g, eb, rc, "destroy GPU instance");
	read_mig(g, &g->gpu[i]);
	return GS_OK;
}

/* The compute instances of GPU instance `gi` (all CI profiles). */
static unsigned int gi_cis(struct gs_nvml *f, nvmlGpuInstance_t gi)
{
	nvmlComputeInstance_t cis[8];
	unsigned int total = 0, n;

	for (unsigned int prof = 0; prof < NVML_COMPUTE_INSTANCE_PROFILE_COUNT;
	     prof++) {
		n = 8;
		if (f->nvmlGpuInstanceGetComputeInstances(gi, prof, cis, &n) ==
		    NVML_SUCCESS)
			total += n;
	}
	return total;
}

bool gs_gpus_mig_drop_half(struct gs_gpus *g, int i, int profile_id, int start)
{
	struct gs_nvml *f = g->fn;

	if (g->fake || f == NULL || !f->nvmlDeviceGetGpuInstanceById ||
	    !f->nvmlGpuInstanceGetInfo ||
	    !f->nvmlGpuInstanceGetComputeInstances ||
	    !f->nvmlGpuInstanceDestroy)
		return false;
	/* GPU instance ids are small (the driver's are below 16). */
	for (unsigned int id = 0; id < 32; id++) {
		nvmlGpuInstance_t gi;
		nvmlGpuInstanceInfo_t info;

		if (f->nvmlDeviceGetGpuInstanceById(g->gpu[i].handle, id,
		                                    &gi) != NVML_SUCCESS ||
		    f->nvmlGpuInstanceGetInfo(gi, &info) != NVML_SUCCESS ||
		    (int)info.profileId != profile_id ||
		    (int)info.placement.start != start || gi_cis(f, gi) != 0)
			continue;
		if (f->nvmlGpuInstanceDestroy(gi) != NVML_SUCCESS)
			return false;
		read_mig(g, &g->gpu[i]);
		return true;
	}
	return false;
}

int gs_gpus_utilization(struct gs_gpus *g, int i)
{
	struct gs_nvml *f = g->fn;
	nvmlUtilization_t u;

	if (g->fake || f == NULL || !f->nvmlDeviceGetUtilizationRates ||
	    i < 0 || i >= g->n)
		return -1;
	if (f->nvmlDeviceGetUtilizationRates(g->gpu[i].handle, &u) !=
	    NVML_SUCCESS)
		return -1;
	return (int)u.gpu;
}

uint64_t gs_gpus_memory_used(struct gs_gpus *g, int i)
{
	struct gs_nvml *f = g->fn;
	nvmlMemory_t m;

	if (g->fake || f == NULL || i < 0 || i >= g->n)
		return 0;
	if (f->nvmlDeviceGetMemoryInfo(g->gpu[i].handle, &m) != NVML_SUCCESS)
		return 0;
	return m.used;
}

/* The UUID of GPU i (k -1) or of its k-th MIG instance. */
static const char *inv_uuid(const void *ctx, int i, int k)
{
	const struct gs_gpu *u = &((const struct gs_gpus *)ctx)->gpu[i];

	if (k < 0)
		return u->uuid;
	return k < u->n_mig ? u->mig[k].uuid : NULL;
}

int gs_gpus_find(const struct gs_gpus *g, const char *sel)
{
	return gs_gpu_index_of(sel, g->n, inv_uuid, g);
}
