/*
 * score.c - gpuslice's own placement scoring: FGD's gradient
 * step on a cost closer to what a filling cluster loses
 * (gs_trace_scorer_score). The trace replay policy built on it is
 * bench/policy_gpuslice.c; the Kubernetes scheduler extender scores nodes
 * with it too.
 *
 * The scoring lives in a scorer (struct gs_trace_scorer, gs/frag.h) built
 * from the task demand seen so far, and works on ONE node's GPUs: the
 * replay calls it per node, and so can a node daemon or a cluster
 * scheduler extender, so that the replay's figures describe what they do.
 *
 * Cost of a node state, in milli-GPU: F_n(M_g) + S_n.
 *
 *   M_g: the task classes (CPU, per-GPU milli, GPU count, model spec) that
 *   carry GS_GSL_COVERAGE % of the GPU demand, each weighed by its share
 *   of that demand; multi-GPU (gang) classes at GS_GSL_GANG_WEIGHT of it
 *   (a gang that cannot be placed leaves its GPUs to smaller tasks), then
 *   renormalised. F_n is the FGD fragment measure (workload.c), which
 *   already counts a class's fragment per model: a class that cannot run
 *   on the node's model sees all its idle GPU as lost to it.
 *
 *   S_n, stranding: if the node's free GPU G were filled with tasks of a
 *   single-GPU or share class m that needs rho_m CPU per milli-GPU,
 *   max(0, G - C / rho_m) of it would be left without CPU (C: free CPU).
 *   S_n sums that over those classes, weighed as in M_g, SKIPPING classes
 *   whose model spec excludes the node's model: a class that cannot run
 *   there strands nothing there. rho_m is GS_GSL_CPU_RESERVE times the
 *   class's CPU per GPU (requests vary; the next tasks are not the mean).
 *
 * The scorer itself (construction and cost) is in scorer.c.
 *
 * Every constant was chosen on the tuning split of docs/placement.md
 * ("Evaluation protocol") and reported on the other split.
 *
 * Score of a placement: trunc(100 sigmoid(-delta / 1000)) with delta the
 * change of the node's cost, FGD's integer score on purpose (the buckets
 * make near-best nodes tie, and ties go to the node order), minus the
 * device's left-over in millionths of a point (best fit inside a bucket;
 * never outranks a better bucket). A share tries each device that fits.
 */
#include "gs/frag.h"

#include <math.h>

static double points(double before, double after)
{
	return (double)(int64_t)(100.0 /
	                         (1.0 + exp((after - before) / 1000.0)));
}

double gs_trace_scorer_score(const struct gs_trace_scorer *s, double before,
                             int64_t cpu_free, const uint16_t *gpu_free,
                             unsigned ngpu, unsigned model,
                             const struct gs_trace_pod *pod, int *dev)
{
	int64_t cpu = cpu_free - (int64_t)pod->cpu_milli;
	uint16_t g[GS_TRACE_MAX_DEVS];
	unsigned k = 0;

	if (ngpu > GS_TRACE_MAX_DEVS)
		ngpu = GS_TRACE_MAX_DEVS;
	if (cpu < 0 ||
	    (pod->spec != 0 && (model >= 32 || !((pod->spec >> model) & 1u))))
		return -1;
	if (isnan(before))
		before =
		    gs_trace_scorer_cost(s, cpu_free, gpu_free, ngpu, model);
	for (unsigned d = 0; d < ngpu; d++)
		g[d] = gpu_free[d];
	if (pod->num_gpu == 1 && pod->gpu_milli < GS_TRACE_MILLI) {
		double best = -1;
		for (unsigned d = 0; d < ngpu; d++) {
			unsigned left;
			bool seen = false;
			double v;

			if (gpu_free[d] < pod->gpu_milli)
				continue;
			/* Equal amounts give equal scores; the first wins. */
			for (unsigned e = 0; e < d && !seen; e++)
				seen = gpu_free[e] == gpu_free[d];
			if (seen)
				continue;
			left = (unsigned)gpu_free[d] - pod->gpu_milli;
			g[d] -= pod->gpu_milli;
			v = points(before, gs_trace_scorer_cost(s, cpu, g, ngpu,
			                                        model)) -
			    (double)left / 1e6;
			g[d] += pod->gpu_milli;
			if (v > best) {
				best = v;
				if (dev != NULL)
					*dev = (int)d;
			}
		}
		return best;
	}
	for (unsigned d = 0; d < ngpu && k < pod->num_gpu; d++) {
		if (g[d] == GS_TRACE_MILLI) {
			g[d] = 0;
			k++;
		}
	}
	if (k < pod->num_gpu)
		return -1;
	return points(before, gs_trace_scorer_cost(s, cpu, g, ngpu, model));
}
