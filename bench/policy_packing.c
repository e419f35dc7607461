/*
 * policy_packing.c - Packing: fill partly used GPUs first, then free GPUs
 * on partly used nodes, and only then idle nodes, smallest first.
 *
 *   only partly used devices needed: 100 - sum(free % of them) / 10, >= 50
 *   fully free devices on a used node: 50 - (how many), >= 33
 *   the node's GPUs are all idle: 33 - (GPUs on the node)
 *
 * The devices "needed" are taken least-free first. CPU-only tasks score 0
 * everywhere. Shares go to the best fit.
 */
#include "trace_int.h"

static double packing_score(void *st, const struct gs__trace_run *run, size_t i,
                            const struct gs_trace_pod *pod, int *dev)
{
	const struct gs_trace_nstate *s = &run->cl.node[i];
	unsigned order[GS_TRACE_MAX_DEVS];
	unsigned need = pod->num_gpu, full_used = 0;
	int64_t free_pct = 0;

	(void)st;
	(void)dev;
	if (pod->num_gpu == 0)
		return 0;
	if (s->full_free == s->gpus) {
		int64_t v = 33 - (int64_t)s->full_free;
		return (double)(v > s->full_free ? v : s->full_free);
	}
	/* Devices by free amount, ascending, stable. */
	for (unsigned d = 0; d < s->gpus; d++) {
		unsigned j = d;
		while (j > 0 && s->gpu_free[order[j - 1]] > s->gpu_free[d]) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = d;
	}
	for (unsigned k = 0; k < s->gpus && need > 0; k++) {
		uint16_t left = s->gpu_free[order[k]];
		if (left < pod->gpu_milli)
			continue;
		need--;
		free_pct += left * 100 / GS_TRACE_MILLI;
		if (left == GS_TRACE_MILLI)
			full_used++;
	}
	if (full_used > 0) {
		int64_t v = 50 - (int64_t)full_used;
		return (double)(v > 33 ? v : 33);
	}
	{
		int64_t v = 100 - free_pct / 10;
		return (double)(v > 50 ? v : 50);
	}
}

const struct gs__trace_policy_ops gs__trace_policy_packing = {
    .flags = GS__TP_CACHE,
    .devsel = GS__DEV_BESTFIT,
    .score = packing_score,
};
