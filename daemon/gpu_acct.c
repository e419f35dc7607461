/*
 * gpu_acct.c - NVML per-process accounting (gpu_acct.h): the ground truth
 * the ledger bills. NVML's accounting is the driver's own record of every
 * process that used the GPU since it was turned on, kept after the
 * process ended (a circular buffer), so a process that lived between two
 * samples, or that launched work and never synchronised, is still there.
 * It gives a share of a life (gpuUtilization, percent) and the life (the
 * start time, and once it ended, how long its context was active): the
 * product is the GPU time, to 1 % of the life.
 */
#include "gpu_acct.h"

#include <stdlib.h>

#include "gs/log.h"
#include "gs/nvml.h"
#include "gs/nvml_load.h"

gs_err gs_gpus_accounting_on(struct gs_gpus *g, int i)
{
	struct gs_nvml *f = g->fn;
	nvmlEnableState_t mode = NVML_FEATURE_DISABLED;
	nvmlReturn_t rc;

	if (g->fake || f == NULL || !f->nvmlDeviceGetAccountingMode ||
	    !f->nvmlDeviceSetAccountingMode || !f->nvmlDeviceGetAccountingPids ||
	    !f->nvmlDeviceGetAccountingStats)
		return GS_ERR_UNSUPPORTED;
	if (i < 0 || i >= g->n)
		return GS_ERR_NOT_FOUND;
	rc = f->nvmlDeviceGetAccountingMode(g->gpu[i].handle, &mode);
	if (rc != NVML_SUCCESS)
		return GS_ERR_UNSUPPORTED;
	if (mode == NVML_FEATURE_ENABLED)
		return GS_OK;
	rc = f->nvmlDeviceSetAccountingMode(g->gpu[i].handle,
	                                    NVML_FEATURE_ENABLED);
	if (rc == NVML_ERROR_NO_PERMISSION)
		return GS_ERR_PERM;
	return rc == NVML_SUCCESS ? GS_OK : GS_ERR_UNSUPPORTED;
}

gs_err gs_gpus_accounting(struct gs_gpus *g, int i, uint64_t now_us,
                          struct gs_gpu_acct *out, int cap, int *n)
{
	struct gs_nvml *f = g->fn;
	unsigned int count = 0, *pids;
	nvmlReturn_t rc;

	*n = 0;
	if (g->fake || f == NULL || !f->nvmlDeviceGetAccountingPids ||
	    !f->nvmlDeviceGetAccountingStats)
		return GS_ERR_UNSUPPORTED;
	if (i < 0 || i >= g->n)
		return GS_ERR_NOT_FOUND;
	rc = f->nvmlDeviceGetAccountingPids(g->gpu[i].handle, &count, NULL);
	if (rc == NVML_SUCCESS && count == 0)
		return GS_OK;
	if (rc != NVML_ERROR_INSUFFICIENT_SIZE)
		return rc == NVML_ERROR_NOT_SUPPORTED ? GS_ERR_UNSUPPORTED
		                                      : GS_ERR_DRIVER;
	/* Room for a few that start meanwhile. */
	count += 16;
	pids = malloc(sizeof(*pids) * count);
	if (pids == NULL)
		return GS_ERR_NOMEM;
	rc = f->nvmlDeviceGetAccountingPids(g->gpu[i].handle, &count, pids);
	if (rc != NVML_SUCCESS) {
		free(pids);
		return GS_ERR_DRIVER;
	}
	for (unsigned int k = 0; k < count && *n < cap; k++) {
		nvmlAccountingStats_t s;
		struct gs_gpu_acct *a = &out[*n];
		double life_ns;
		bool dup = false;

		/* A pid listed twice ran twice; its newest run is what
		 * NVML answers for it, once. */
		for (int j = 0; j < *n && !dup; j++)
			dup = out[j].pid == (int32_t)pids[k];
		if (dup)
			continue;
		rc = f->nvmlDeviceGetAccountingStats(g->gpu[i].handle, pids[k],
		                                     &s);
		if (rc != NVML_SUCCESS)
			continue; /* fell out of the buffer meanwhile */
		a->pid = (int32_t)pids[k];
		a->start_us = s.startTime;
		a->running = s.isRunning != 0;
		if (a->running)
			life_ns = now_us > s.startTime
			              ? (double)(now_us - s.startTime) * 1e3
			              : 0;
		else
			life_ns = (double)s.time * 1e6;
		/* The share is rounded to a whole percent: while the process
		 * runs, the least it can stand for is billed (the ledger never
		 * takes back what it billed, so a figure rounded up would stay
		 * billed); once it ended, the figure as given. */
		if (s.gpuUtilization > 100)
			a->busy_ns = 0;
		else if (!a->running)
			a->busy_ns = (uint64_t)(life_ns * s.gpuUtilization / 100.0);
		else
			a->busy_ns = s.gpuUtilization == 0
			                 ? 0
			                 : (uint64_t)(life_ns *
			                              (s.gpuUtilization - 0.5) /
			                              100.0);
		a->max_mem = s.maxMemoryUsage ==
		                     (unsigned long long)NVML_VALUE_NOT_AVAILABLE
		                 ? 0
		                 : s.maxMemoryUsage;
		(*n)++;
	}
	free(pids);
	return GS_OK;
}
