/*
 * policy_bestfit.c - BestFit: the node with the least left over after the
 * task, CPU and GPU weighted equally and scaled by the largest node:
 * trunc(100 (1 - [0.5 (CPU left) / 128000 + 0.5 (GPU left) / 8000])),
 * then min-max normalised over the feasible nodes to 0..100 in integer
 * arithmetic (which merges close scores into ties, as in the simulator).
 * Shares go to the best-fitting device.
 */
#include "trace_int.h"

static double bestfit_score(void *st, const struct gs__trace_run *run, size_t i,
                            const struct gs_trace_pod *pod, int *dev)
{
	const struct gs_trace_nstate *s = &run->cl.node[i];
	double cpu_left = (double)(s->cpu_free - (int64_t)pod->cpu_milli);
	double gpu_left =
	    (double)s->gpu_free_total - (double)pod->num_gpu * pod->gpu_milli;
	double v = 0.5 * cpu_left / GS__TRACE_MAX_CPU +
	           0.5 * gpu_left / GS__TRACE_MAX_GPU;

	(void)st;
	(void)dev;
	return (double)(int64_t)((1.0 - v) * 100.0);
}

const struct gs__trace_policy_ops gs__trace_policy_bestfit = {
    .flags = GS__TP_CACHE | GS__TP_NORMALISE,
    .devsel = GS__DEV_BESTFIT,
    .score = bestfit_score,
};
