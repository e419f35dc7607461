/*
 * score.c - gpuslice's own placement scoring: FGD's choice, moved only to
 * a candidate FGD's own measure finds as good within eps, the one a cost
 * closer to what a filling cluster loses ranks first (the guard:
 * gs_trace_scorer_cand, _pick_step, _pick, _node, _score).
 * The trace replay policy built on it is bench/policy_gpuslice.c;
 * gpusliced's `frag` placement (core/place/search.c) and the Kubernetes
 * scheduler extender choose with the same functions.
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
 * Every constant of the own cost was chosen on the tuning split of
 * docs/placement.md ("Evaluation protocol"); the guard's eps on the
 * tuning part of the variant family ("A family of variants").
 *
 * The guard. Candidates come in the caller's tie order (the replay's
 * random node order, the daemon's search order, the extender's node
 * list). FGD picks the first with the most points,
 * trunc(100 sigmoid(-dF / 1000)), dF the change of F_n(M) for FGD's own M.
 * We pick, among the candidates with those same points whose dF is within
 * eps of the dF of FGD's pick, the one with the highest own rank (our
 * cost's points, then best fit); on equal own ranks the first. FGD's pick
 * is always in that set, so with no other candidate in it we do what FGD
 * does. GS_TRACE_ABLATE_GUARD picks by the own rank alone (the policy
 * before the guard), for the ablation.
 *
 * Why within eps of dF and not "equal points": a point is 25-40 milli-GPU
 * of dF near dF = 0 but several hundred in the tails of the sigmoid, where
 * a task that fits badly everywhere (a model-constrained one on a scarce
 * model, say) finds every node tied at 0 or 1 point. FGD spreads those
 * by the random node order; a cost that systematically prefers one kind of
 * node among them lost up to 7 points of unallocated GPU on the family's
 * uniform-law variants.
 */
#include "scorer_int.h"

#include <math.h>

/*
 * e^x without libm: core/place/ (the placement engine, linked into
 * gpusliced without the math library) ranks with these points too. Range
 * reduction by ln 2 (in two parts), a Taylor series to degree 16 on
 * |r| <= 0.35 (error below 1e-17 relative), then exact scaling by powers
 * of two. Within an ulp or two of libm's exp, so the points agree with
 * FGD's (bench/policy_fgd.c) except where 100 sigmoid lands within that
 * of an integer.
 */
static double exp_nolibm(double x)
{
	static const double ln2_hi = 6.93147180369123816490e-01;
	static const double ln2_lo = 1.90821492927058770002e-10;
	double n, r, sum = 1, term = 1;

	if (x > 700)
		return INFINITY;
	if (x < -700)
		return 0;
	n = (double)(int64_t)(x / 0.6931471805599453 + (x < 0 ? -0.5 : 0.5));
	r = (x - n * ln2_hi) - n * ln2_lo;
	for (int k = 1; k <= 16; k++) {
		term *= r / k;
		sum += term;
	}
	for (; n > 0; n--)
		sum *= 2.0;
	for (; n < 0; n++)
		sum *= 0.5;
	return sum;
}

static double points(double before, double after)
{
	return (double)(int64_t)(100.0 / (1.0 + exp_nolibm((after - before) /
	                                                   1000.0)));
}

void gs_trace_scorer_cand(const struct gs_trace_scorer *s,
                          const struct gs_trace_cost *before, int64_t cpu_free,
                          const uint16_t *gpu_free, unsigned ngpu,
                          unsigned model, unsigned left,
                          struct gs_trace_cand *out)
{
	double f = gs_trace_frag(&s->fgd, cpu_free, gpu_free, ngpu, model);
	double fit = (s->ablate & GS_TRACE_ABLATE_FIT) ? 0 : (double)left;

	out->delta = f - before->fgd;
	out->fgd = points(before->fgd, f);
	out->own = points(before->own, gs_trace_scorer_cost(s, cpu_free,
	                                                    gpu_free, ngpu,
	                                                    model)) -
	           fit / 1e6;
}

bool gs_trace_scorer_pick_step(const struct gs_trace_scorer *s,
                               struct gs_trace_pick *p,
                               const struct gs_trace_cand *c)
{
	if (!p->any) {
		p->any = true;
		p->first = *c;
		p->best = *c;
		return true;
	}
	if (s->ablate & GS_TRACE_ABLATE_GUARD) {
		if (c->own <= p->best.own)
			return false;
		p->best = *c;
		return true;
	}
	if (c->fgd > p->first.fgd) { /* a new FGD choice */
		p->first = *c;
		p->best = *c;
		return true;
	}
	if (c->fgd < p->first.fgd || c->delta - p->first.delta > s->eps ||
	    p->first.delta - c->delta > s->eps || c->own <= p->best.own)
		return false;
	p->best = *c;
	return true;
}

size_t gs_trace_scorer_pick(const struct gs_trace_scorer *s,
                            const struct gs_trace_cand *c, size_t n)
{
	struct gs_trace_pick p = {0};
	size_t best = 0;

	for (size_t i = 0; i < n; i++)
		if (gs_trace_scorer_pick_step(s, &p, &c[i]))
			best = i;
	return best;
}

bool gs_trace_scorer_node(const struct gs_trace_scorer *s,
                          const struct gs_trace_cost *before, int64_t cpu_free,
                          const uint16_t *gpu_free, unsigned ngpu,
                          unsigned model, const struct gs_trace_pod *pod,
                          struct gs_trace_cand *out, int *dev)
{
	int64_t cpu = cpu_free - (int64_t)pod->cpu_milli;
	uint16_t g[GS_TRACE_MAX_DEVS];
	struct gs_trace_cost now;
	unsigned k = 0;

	if (ngpu > GS_TRACE_MAX_DEVS)
		ngpu = GS_TRACE_MAX_DEVS;
	if (cpu < 0 ||
	    (pod->spec != 0 && (model >= 32 || !((pod->spec >> model) & 1u))))
		return false;
	if (before == NULL) {
		gs_trace_scorer_costs(s, cpu_free, gpu_free, ngpu, model, &now);
		before = &now;
	}
	for (unsigned d = 0; d < ngpu; d++)
		g[d] = gpu_free[d];
	if (pod->num_gpu == 1 && pod->gpu_milli < GS_TRACE_MILLI) {
		struct gs_trace_pick p = {0};
		for (unsigned d = 0; d < ngpu; d++) {
			struct gs_trace_cand c;
			bool seen = false;

			if (gpu_free[d] < pod->gpu_milli)
				continue;
			/* Equal amounts are equal candidates; the first wins. */
			for (unsigned e = 0; e < d && !seen; e++)
				seen = gpu_free[e] == gpu_free[d];
			if (seen)
				continue;
			g[d] -= pod->gpu_milli;
			gs_trace_scorer_cand(s, before, cpu, g, ngpu, model,
			                     g[d], &c);
			g[d] += pod->gpu_milli;
			if (gs_trace_scorer_pick_step(s, &p, &c) && dev != NULL)
				*dev = (int)d;
		}
		if (!p.any)
			return false;
		/* Nodes compare on FGD's device, with our rank of ours. */
		*out = p.first;
		out->own = p.best.own;
		return true;
	}
	for (unsigned d = 0; d < ngpu && k < pod->num_gpu; d++) {
		if (g[d] == GS_TRACE_MILLI) {
			g[d] = 0;
			k++;
		}
	}
	if (k < pod->num_gpu)
		return false;
	gs_trace_scorer_cand(s, before, cpu, g, ngpu, model, 0, out);
	return true;
}

double gs_trace_scorer_score(const struct gs_trace_scorer *s, double before,
                             int64_t cpu_free, const uint16_t *gpu_free,
                             unsigned ngpu, unsigned model,
                             const struct gs_trace_pod *pod, int *dev)
{
	struct gs_trace_cost c;
	struct gs_trace_cand out;

	if (ngpu > GS_TRACE_MAX_DEVS)
		ngpu = GS_TRACE_MAX_DEVS;
	c.fgd = gs_trace_frag(&s->fgd, cpu_free, gpu_free, ngpu, model);
	c.own = before != before /* NAN */
	            ? gs_trace_scorer_cost(s, cpu_free, gpu_free, ngpu, model)
	            : before;
	if (!gs_trace_scorer_node(s, &c, cpu_free, gpu_free, ngpu, model, pod,
	                          &out, dev))
		return -1;
	return out.fgd;
}
