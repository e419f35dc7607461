/*
 * nvml_proc.c - running processes and per-process utilization of the
 * simulated NVML.
 *
 * Which processes a handle shows: a GPU handle with MIG off shows the
 * processes on the whole GPU; a MIG-enabled GPU handle shows every process
 * on any of its MIG devices (the sim treats every caller as privileged);
 * a MIG device handle shows that device's. Compute lists hold every
 * process with a context except MPS clients (the MPS server is one of
 * them); MPS clients are listed by the MPS variants, as with the real
 * driver since NVML 11. Graphics lists are always empty. Dead processes
 * are reaped from the state before listing, so a killed process vanishes
 * at once rather than when its slot happens to be reused.
 *
 * Per-process utilization has to remember what it saw last: each calling
 * process keeps, per state slot (keyed by the slot's generation, pid and
 * creation time), the busy time at its last sample. A new sample is cut
 * when at least SAMPLE_NS passed since the previous one, whether the
 * process ran or not: a process that holds a context but launched
 * nothing gets samples with smUtil 0, as the real driver reports idle
 * compute processes; in between, the previous sample is reported again.
 * Samples carry the CPU time
 * (CLOCK_REALTIME, microseconds) at which they were cut, so
 * lastSeenTimeStamp filters them as NVML documents. The first sample of a
 * process covers the time since it created its context. All of it runs
 * under the state lock, which also serialises the threads of this process.
 */
#include "nvml_int.h"

#include <string.h>
#include <time.h>

#define SAMPLE_NS 100000000ULL

enum list_kind { LIST_COMPUTE, LIST_GRAPHICS, LIST_MPS, LIST_ALL };

struct proc_row {
	uint32_t pid;
	uint64_t mem;
	uint32_t gi, ci;
};

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

static bool on_handle(const struct gs__dev *d, const struct gs_sim_proc *p)
{
	if (p->state != GS_SIM_PROC_LIVE || p->gpu != d->gpu)
		return false;
	if (d->m != NULL)
		return p->engine == (uint32_t)(1 + d->mig);
	if (!d->g->mig_mode)
		return p->engine == 0;
	return p->engine > 0;
}

static bool of_kind(const struct gs_sim_proc *p, enum list_kind kind)
{
	bool client = (p->flags & GS_SIM_PROC_MPS_CLIENT) != 0;

	switch (kind) {
	case LIST_COMPUTE:
		return !client;
	case LIST_MPS:
		return client;
	case LIST_ALL:
		return true;
	case LIST_GRAPHICS:
		break;
	}
	return false;
}

/* Fills rows[0..cap) and returns how many processes match. */
static unsigned int collect(const struct gs__dev *d, enum list_kind kind,
                            struct proc_row *rows, unsigned int cap)
{
	unsigned int n = 0;

	(void)gs_sim_reap(d->st, gs_sim_now_ns());
	for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
		const struct gs_sim_proc *p = &d->st->procs[i];

		if (!on_handle(d, p) || !of_kind(p, kind))
			continue;
		if (n < cap) {
			struct proc_row *row = &rows[n];

			row->pid = (uint32_t)p->pid;
			row->mem = p->mem_used;
			row->gi = row->ci = GS__NVML_NO_ID;
			if (p->engine > 0 && d->g->mig[p->engine - 1].in_use) {
				row->gi = d->g->mig[p->engine - 1].gi_id;
				row->ci = d->g->mig[p->engine - 1].ci_id;
			}
		}
		n++;
	}
	return n;
}

/*
 * The calling convention all process lists share: *count is the capacity
 * in and the number written (or needed) out; NVML_ERROR_INSUFFICIENT_SIZE
 * with the needed count when the buffer is too small (count 0 sizes).
 * `layout`: 1 for the 16-byte v1 entries, 2 for nvmlProcessInfo_t.
 */
static nvmlReturn_t list_procs(nvmlDevice_t device, enum list_kind kind,
                               unsigned int *count, void *infos, int layout)
{
	struct proc_row rows[GS_SIM_MAX_PROCS];
	struct gs__dev d;
	nvmlReturn_t r;
	unsigned int n;

	if (count == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = enter_dev(device, &d);
	if (r != NVML_SUCCESS)
		return r;
	if (infos == NULL && *count > 0) {
		gs__nvml_leave(d.st);
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	n = collect(&d, kind, rows, GS_SIM_MAX_PROCS);
	gs__nvml_leave(d.st);
	if (n > *count) {
		*count = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (unsigned int i = 0; i < n; i++) {
		if (layout == 1) {
			nvmlProcessInfo_v1_t *o = (nvmlProcessInfo_v1_t *)infos;

			memset(&o[i], 0, sizeof(o[i]));
			o[i].pid = rows[i].pid;
			o[i].usedGpuMemory = rows[i].mem;
		} else {
			nvmlProcessInfo_t *o = (nvmlProcessInfo_t *)infos;

			memset(&o[i], 0, sizeof(o[i]));
			o[i].pid = rows[i].pid;
			o[i].usedGpuMemory = rows[i].mem;
			o[i].gpuInstanceId = rows[i].gi;
			o[i].computeInstanceId = rows[i].ci;
		}
	}
	*count = n;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                     unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos)
{
	return list_procs(device, LIST_COMPUTE, infoCount, infos, 2);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                     unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos)
{
	return list_procs(device, LIST_COMPUTE, infoCount, infos, 2);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                  unsigned int *infoCount,
                                                  nvmlProcessInfo_v1_t *infos)
{
	return list_procs(device, LIST_COMPUTE, infoCount, infos, 1);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device,
                                                      unsigned int *infoCount,
                                                      nvmlProcessInfo_t *infos)
{
	return list_procs(device, LIST_GRAPHICS, infoCount, infos, 2);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device,
                                                      unsigned int *infoCount,
                                                      nvmlProcessInfo_t *infos)
{
	return list_procs(device, LIST_GRAPHICS, infoCount, infos, 2);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device,
                                                   unsigned int *infoCount,
                                                   nvmlProcessInfo_v1_t *infos)
{
	return list_procs(device, LIST_GRAPHICS, infoCount, infos, 1);
}

nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(
    nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos)
{
	return list_procs(device, LIST_MPS, infoCount, infos, 2);
}

nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(
    nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos)
{
	return list_procs(device, LIST_MPS, infoCount, infos, 2);
}

nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(
    nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v1_t *infos)
{
	return list_procs(device, LIST_MPS, infoCount, infos, 1);
}

nvmlReturn_t
nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t device,
                                      nvmlProcessDetailList_t *plist)
{
	struct proc_row rows[GS_SIM_MAX_PROCS];
	struct gs__dev d;
	enum list_kind kind;
	nvmlReturn_t r;
	unsigned int n;

	if (plist == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = enter_dev(device, &d);
	if (r != NVML_SUCCESS)
		return r;
	if (plist->version != nvmlProcessDetailList_v1) {
		gs__nvml_leave(d.st);
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	}
	switch (plist->mode) {
	case NVML_PROCESS_MODE_COMPUTE:
		kind = LIST_COMPUTE;
		break;
	case NVML_PROCESS_MODE_GRAPHICS:
		kind = LIST_GRAPHICS;
		break;
	case NVML_PROCESS_MODE_MPS:
		kind = LIST_MPS;
		break;
	case NVML_PROCESS_MODE_ALL:
		kind = LIST_ALL;
		break;
	default:
		gs__nvml_leave(d.st);
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	if (plist->procArray == NULL && plist->numProcArrayEntries > 0) {
		gs__nvml_leave(d.st);
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	n = collect(&d, kind, rows, GS_SIM_MAX_PROCS);
	gs__nvml_leave(d.st);
	if (n > plist->numProcArrayEntries) {
		plist->numProcArrayEntries = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (unsigned int i = 0; i < n; i++) {
		nvmlProcessDetail_v1_t *o = &plist->procArray[i];

		memset(o, 0, sizeof(*o));
		o->pid = rows[i].pid;
		o->usedGpuMemory = rows[i].mem;
		o->gpuInstanceId = rows[i].gi;
		o->computeInstanceId = rows[i].ci;
	}
	plist->numProcArrayEntries = n;
	return NVML_SUCCESS;
}

/* ---- per-process utilization ------------------------------------------- */

struct util_track {
	uint64_t generation; /* of the slot; 0 = never seen */
	uint64_t created_ns; /* the slot's process, with generation: a node
	                        state made anew restarts generations */
	int32_t pid;
	uint64_t t_ns;       /* CLOCK_MONOTONIC of the baseline */
	uint64_t busy_ns;    /* slot busy time at the baseline */
	uint64_t sample_us;  /* CLOCK_REALTIME of the last sample; 0 = none */
	uint32_t sm_util;
};

static struct util_track track[GS_SIM_MAX_PROCS];

struct util_row {
	uint32_t pid;
	uint64_t ts_us;
	uint32_t sm;
};

static uint64_t realtime_us(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000ULL +
	       (uint64_t)ts.tv_nsec / 1000ULL;
}

/* State locked, MIG off: samples newer than last_seen into rows. */
static unsigned int util_samples(const struct gs__dev *d, uint64_t last_seen,
                                 struct util_row *rows)
{
	uint64_t now = gs_sim_now_ns(), now_us = realtime_us();
	unsigned int n = 0;

	(void)gs_sim_reap(d->st, now);
	gs_sim_engine_advance(d->st, d->gpu, 0, now);
	for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
		const struct gs_sim_proc *p = &d->st->procs[i];
		struct util_track *t = &track[i];
		bool fresh = false;

		if (!on_handle(d, p))
			continue;
		if (t->generation != p->generation || t->pid != p->pid ||
		    t->created_ns != p->created_ns) {
			memset(t, 0, sizeof(*t));
			t->generation = p->generation;
			t->pid = p->pid;
			t->created_ns = p->created_ns;
			t->t_ns = p->created_ns;
			fresh = true;
		}
		if ((fresh || now - t->t_ns >= SAMPLE_NS) && now > t->t_ns) {
			uint64_t ran = p->busy_ns > t->busy_ns
			                   ? p->busy_ns - t->busy_ns
			                   : 0;
			uint64_t pct = ran * 100 / (now - t->t_ns);

			t->sm_util = pct > 100 ? 100 : (uint32_t)pct;
			t->sample_us = now_us;
			t->t_ns = now;
			t->busy_ns = p->busy_ns;
		}
		if (t->sample_us == 0 || t->sample_us <= last_seen)
			continue;
		rows[n].pid = (uint32_t)p->pid;
		rows[n].ts_us = t->sample_us;
		rows[n].sm = t->sm_util;
		n++;
	}
	return n;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(
    nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization,
    unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp)
{
	struct util_row rows[GS_SIM_MAX_PROCS];
	struct gs__dev d;
	nvmlReturn_t r;
	unsigned int n;

	if (processSamplesCount == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = enter_dev(device, &d);
	if (r != NVML_SUCCESS)
		return r;
	if (d.m != NULL || d.g->mig_mode) {
		gs__nvml_leave(d.st);
		return NVML_ERROR_NOT_SUPPORTED;
	}
	n = util_samples(&d, lastSeenTimeStamp, rows);
	gs__nvml_leave(d.st);
	if (n == 0) {
		*processSamplesCount = 0;
		return NVML_ERROR_NOT_FOUND;
	}
	if (utilization == NULL || *processSamplesCount < n) {
		*processSamplesCount = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (unsigned int i = 0; i < n; i++) {
		memset(&utilization[i], 0, sizeof(utilization[i]));
		utilization[i].pid = rows[i].pid;
		utilization[i].timeStamp = rows[i].ts_us;
		utilization[i].smUtil = rows[i].sm;
	}
	*processSamplesCount = n;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(
    nvmlDevice_t device, nvmlProcessesUtilizationInfo_t *procesesUtilInfo)
{
	nvmlProcessesUtilizationInfo_t *info = procesesUtilInfo;
	struct util_row rows[GS_SIM_MAX_PROCS];
	struct gs__dev d;
	nvmlReturn_t r;
	unsigned int n;

	if (info == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = enter_dev(device, &d);
	if (r != NVML_SUCCESS)
		return r;
	if (info->version != nvmlProcessesUtilizationInfo_v1) {
		gs__nvml_leave(d.st);
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	}
	if (d.m != NULL || d.g->mig_mode) {
		gs__nvml_leave(d.st);
		return NVML_ERROR_NOT_SUPPORTED;
	}
	n = util_samples(&d, info->lastSeenTimeStamp, rows);
	gs__nvml_leave(d.st);
	if (n == 0) {
		info->processSamplesCount = 0;
		return NVML_ERROR_NOT_FOUND;
	}
	if (info->procUtilArray == NULL || info->processSamplesCount < n) {
		info->processSamplesCount = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (unsigned int i = 0; i < n; i++) {
		nvmlProcessUtilizationInfo_v1_t *o = &info->procUtilArray[i];

		memset(o, 0, sizeof(*o));
		o->timeStamp = rows[i].ts_us;
		o->pid = rows[i].pid;
		o->smUtil = rows[i].sm;
	}
	info->processSamplesCount = n;
	return NVML_SUCCESS;
}
