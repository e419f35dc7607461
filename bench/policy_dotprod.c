/*
 * policy_dotprod.c - DotProd, Tetris's alignment heuristic as the FGD
 * paper's simulator runs it: node vector (free CPU, total free GPU) and
 * task vector (CPU, total GPU), both scaled by the largest node; the node
 * with the smallest dot product wins. Score = trunc(100 (1 - dot / 2)).
 * Shares go to the best-fitting device.
 */
#include "trace_int.h"

static double dotprod_score(void *st, const struct gs__trace_run *run, size_t i,
                            const struct gs_trace_pod *pod, int *dev)
{
	const struct gs_trace_nstate *s = &run->cl.node[i];
	double dot =
	    ((double)s->cpu_free / GS__TRACE_MAX_CPU) *
	        ((double)pod->cpu_milli / GS__TRACE_MAX_CPU) +
	    ((double)s->gpu_free_total / GS__TRACE_MAX_GPU) *
	        ((double)pod->num_gpu * pod->gpu_milli / GS__TRACE_MAX_GPU);

	(void)st;
	(void)dev;
	return (double)(int64_t)(100.0 * (1.0 - dot / 2.0));
}

const struct gs__trace_policy_ops gs__trace_policy_dotprod = {
    .flags = GS__TP_CACHE,
    .devsel = GS__DEV_BESTFIT,
    .score = dotprod_score,
};
