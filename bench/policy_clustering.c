/*
 * policy_clustering.c - Clustering (Gandiva-style affinity): keep tasks
 * of one kind (a share, 1, 2, 4 or 8 whole GPUs) together. Bands, best
 * first: the node holds only this kind (75-100); this kind among others
 * (50-75); no GPU task yet (25-50); only other kinds (0-25). Within a
 * band, fuller nodes score higher: + 25 (8000 - free milli) / 8000, in
 * integer arithmetic as the simulator does. CPU-only tasks score 0
 * everywhere, so the node order decides. Shares go to the best fit.
 */
#include "trace_int.h"

static double clustering_score(void *st, const struct gs__trace_run *run,
                               size_t i, const struct gs_trace_pod *pod,
                               int *dev)
{
	const struct gs_trace_nstate *s = &run->cl.node[i];
	unsigned tag = gs_trace_pod_tag(pod);
	int64_t used = (int64_t)GS__TRACE_MAX_GPU - s->gpu_free_total;
	int64_t fill = 25 * used / (int64_t)GS__TRACE_MAX_GPU;
	int kinds = __builtin_popcount(s->tags);

	(void)st;
	(void)dev;
	if (tag == 0)
		return 0;
	if (s->tags & tag)
		return (double)(fill + (kinds == 1 ? 75 : 50));
	return (double)(fill + (kinds == 0 ? 25 : 0));
}

const struct gs__trace_policy_ops gs__trace_policy_clustering = {
    .flags = GS__TP_CACHE,
    .devsel = GS__DEV_BESTFIT,
    .score = clustering_score,
};
