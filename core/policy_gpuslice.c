/*
 * policy_gpuslice.c - gpuslice's own trace placement policy: FGD's
 * gradient step on a cost closer to what a filling cluster loses.
 *
 * When a cluster fills up, what is lost is the GPU demand of the tasks
 * that no longer fit anywhere. FGD (policy_fgd.c) descends the expected
 * fragmentation seen by a random task of its target workload M, and has
 * two blind spots that this policy fixes:
 *
 *   1. M weighs task classes by count and keeps the classes that make up
 *      95 % of the tasks, so it ignores multi-GPU gangs (none makes the
 *      cut in the trace) and counts a 0.1-GPU task as much as a whole GPU.
 *      Our target M_g keeps the same classes but weighs each by the GPU it
 *      asks for (CPU-only classes weigh nothing: losing one loses no GPU),
 *      and adds the gang classes (2+ GPUs) that carry the list's GPU demand
 *      at half their demand share: a gang that cannot be placed leaves its
 *      GPUs to smaller tasks, so losing it costs less than its size.
 *   2. CPU enters FGD's measure only as a cliff (a class fits the node's
 *      free CPU or all idle GPU counts as fragment), so CPU-only work and
 *      CPU-hungry tasks eat the CPU the node's remaining GPUs will need,
 *      and CPU-light tasks land on CPU-rich nodes. We add a stranding
 *      term: if the node's free GPU G were filled with tasks of class m,
 *      which need rho_m CPU per milli-GPU, max(0, G - C / rho_m) of it
 *      would be left without CPU (C: free CPU). S_n averages that over the
 *      single-GPU and share classes of M_g by GPU demand. rho_m carries a
 *      15 % reserve over the class's mean (CPU requests within a class
 *      vary, and the next tasks are not the average ones); the value was
 *      chosen on held-out seeds over every list, see docs/placement.md.
 *
 * The cost of a node is F_n(M_g) + S_n, in milli-GPU. A feasible node
 * scores trunc(100 sigmoid(-delta / 1000)) with delta the change of its
 * cost if the task went there: FGD's integer score, on purpose. Ranking
 * nodes by the exact delta instead does much worse (7.4 % unallocated at
 * arrival 100 on the default list, against FGD's 4.7 %): the integer
 * buckets make every near-best node a tie, and ties go to the run's random
 * node order, which spreads similar tasks over similar nodes rather than
 * piling them where the estimate happens to point.
 *
 * A share tries each device that fits; among devices with the same score
 * the one with the least left over wins (best fit), and that left-over
 * also orders nodes inside a score bucket, by a fraction of a point that
 * never outranks a better score.
 *
 * The cost of a node's current state is cached per node by its `gen`; the
 * replay caches scores per (node, task shape).
 */
#include "trace_int.h"

#include <math.h>
#include <stdlib.h>

#define GSL_GANG_WEIGHT   0.5  /* share of a gang class's demand weight */
#define GSL_CPU_RESERVE   1.15 /* rho_m over the class's mean CPU per GPU */
#define GSL_GANG_COVERAGE 95.0

struct gsl {
	size_t n;
	uint32_t *gen; /* per node: the gen `base` was computed for */
	double *base;  /* per node: cost of the current state */
	struct gs_trace_workload m; /* M_g */
	size_t nh;
	double *hw; /* per stranding class: weight */
	double *hr; /* per stranding class: CPU milli per milli-GPU */
};

static void gsl_fini(void *st)
{
	struct gsl *f = st;

	if (f == NULL)
		return;
	free(f->gen);
	free(f->base);
	free(f->hw);
	free(f->hr);
	gs_trace_workload_fini(&f->m);
	free(f);
}

static double class_gpu(const struct gs_trace_class *c)
{
	return (double)c->num_gpu * c->gpu_milli;
}

static bool is_gang(const struct gs_trace_class *c)
{
	return c->num_gpu >= 2;
}

/*
 * M_g: the classes of M weighed by GPU demand, plus the gang classes of
 * the list's demand-covering target at GSL_GANG_WEIGHT of their share.
 */
static gs_err build_target(struct gsl *f, const struct gs__trace_run *run,
                           struct gs_errbuf *eb)
{
	const struct gs_trace_workload *w = run->target;
	struct gs_trace_workload dm;
	struct gs_trace_class *cls;
	double demand = 0, total = 0;
	size_t n = 0;
	gs_err err;

	err = gs_trace_workload_init_demand(&dm, run->pods, run->n_pods,
	                                    GSL_GANG_COVERAGE, eb);
	if (err != GS_OK)
		return err;
	cls = malloc(sizeof(*cls) * (w->n + dm.n + 1));
	if (cls == NULL) {
		gs_trace_workload_fini(&dm);
		return gs_fail(eb, GS_ERR_NOMEM,
		               "gpuslice policy: out of memory");
	}
	for (size_t m = 0; m < w->n; m++)
		demand += w->cls[m].p * class_gpu(&w->cls[m]);
	for (size_t m = 0; m < w->n; m++) {
		cls[n] = w->cls[m];
		/* Without GPU demand there is nothing to weigh by: keep M. */
		if (demand > 0)
			cls[n].p = w->cls[m].p * class_gpu(&w->cls[m]) / demand;
		total += cls[n++].p;
	}
	for (size_t g = 0; g < dm.n && demand > 0; g++) {
		bool have = false;
		if (!is_gang(&dm.cls[g]))
			continue;
		for (size_t m = 0; m < w->n && !have; m++)
			have = w->cls[m].cpu_milli == dm.cls[g].cpu_milli &&
			       w->cls[m].gpu_milli == dm.cls[g].gpu_milli &&
			       w->cls[m].num_gpu == dm.cls[g].num_gpu &&
			       w->cls[m].spec == dm.cls[g].spec;
		if (have)
			continue;
		cls[n] = dm.cls[g];
		cls[n].p = GSL_GANG_WEIGHT * dm.cls[g].p;
		total += cls[n++].p;
	}
	for (size_t m = 0; m < n && total > 0; m++)
		cls[m].p /= total;
	gs_trace_workload_fini(&dm);
	err = gs_trace_workload_init_classes(&f->m, cls, n, eb);
	free(cls);
	return err;
}

static gs_err gsl_init(void **st, struct gs__trace_run *run,
                       struct gs_errbuf *eb)
{
	struct gsl *f = calloc(1, sizeof(*f));
	double demand = 0;
	gs_err err;

	if (f == NULL)
		return gs_fail(eb, GS_ERR_NOMEM,
		               "gpuslice policy: out of memory");
	err = build_target(f, run, eb);
	if (err != GS_OK) {
		free(f);
		return err;
	}
	f->n = run->cl.n;
	f->gen = calloc(f->n ? f->n : 1, sizeof(*f->gen));
	f->base = calloc(f->n ? f->n : 1, sizeof(*f->base));
	f->hw = calloc(f->m.n ? f->m.n : 1, sizeof(*f->hw));
	f->hr = calloc(f->m.n ? f->m.n : 1, sizeof(*f->hr));
	if (f->gen == NULL || f->base == NULL || f->hw == NULL ||
	    f->hr == NULL) {
		gsl_fini(f);
		return gs_fail(eb, GS_ERR_NOMEM,
		               "gpuslice policy: out of memory");
	}
	/* Stranding classes: the single-GPU and share classes of M_g that
	 * need CPU; in M_g, p already is a class's share of GPU demand. */
	for (size_t m = 0; m < f->m.n; m++) {
		const struct gs_trace_class *c = &f->m.cls[m];
		if (!is_gang(c) && c->cpu_milli > 0 && class_gpu(c) > 0)
			demand += c->p;
	}
	for (size_t m = 0; m < f->m.n && demand > 0; m++) {
		const struct gs_trace_class *c = &f->m.cls[m];
		if (is_gang(c) || c->cpu_milli == 0 || class_gpu(c) == 0)
			continue;
		f->hw[f->nh] = c->p / demand;
		f->hr[f->nh] = GSL_CPU_RESERVE * c->cpu_milli / class_gpu(c);
		f->nh++;
	}
	*st = f;
	return GS_OK;
}

/* S: free GPU (milli) that would be left without CPU. */
static double stranded(const struct gsl *f, double gpu_free, double cpu_free)
{
	double s = 0;

	for (size_t h = 0; h < f->nh; h++) {
		double v = gpu_free - cpu_free / f->hr[h];
		if (v > 0)
			s += f->hw[h] * v;
	}
	return s;
}

static double cost(const struct gsl *f, int64_t cpu_free,
                   const uint16_t *gpu_free, unsigned ngpu, unsigned model)
{
	double total = 0;

	for (unsigned d = 0; d < ngpu; d++)
		total += gpu_free[d];
	return gs_trace_frag(&f->m, cpu_free, gpu_free, ngpu, model) +
	       stranded(f, total, (double)cpu_free);
}

static double node_cost(struct gsl *f, const struct gs__trace_run *run,
                        size_t i)
{
	const struct gs_trace_nstate *s = &run->cl.node[i];

	if (f->gen[i] != s->gen) {
		f->base[i] =
		    cost(f, s->cpu_free, s->gpu_free, s->gpus, s->model);
		f->gen[i] = s->gen;
	}
	return f->base[i];
}

static double points(double before, double after)
{
	return (double)(int64_t)(100.0 /
	                         (1.0 + exp((after - before) / 1000.0)));
}

static double gsl_score(void *st, const struct gs__trace_run *run, size_t i,
                        const struct gs_trace_pod *pod, int *dev)
{
	struct gsl *f = st;
	const struct gs_trace_nstate *s = &run->cl.node[i];
	double before = node_cost(f, run, i);
	int64_t cpu = s->cpu_free - (int64_t)pod->cpu_milli;
	uint16_t g[GS_TRACE_MAX_DEVS];

	for (unsigned d = 0; d < s->gpus; d++)
		g[d] = s->gpu_free[d];
	if (pod->num_gpu == 1 && pod->gpu_milli < GS_TRACE_MILLI) {
		double best = -INFINITY;
		for (unsigned d = 0; d < s->gpus; d++) {
			unsigned left =
			    (unsigned)s->gpu_free[d] - pod->gpu_milli;
			bool seen = false;
			double v;

			if (s->gpu_free[d] < pod->gpu_milli)
				continue;
			/* Equal amounts give equal scores; the first wins. */
			for (unsigned e = 0; e < d && !seen; e++)
				seen = s->gpu_free[e] == s->gpu_free[d];
			if (seen)
				continue;
			g[d] -= pod->gpu_milli;
			v = points(before, cost(f, cpu, g, s->gpus, s->model)) -
			    (double)left / 1e6;
			g[d] += pod->gpu_milli;
			if (v > best) {
				best = v;
				*dev = (int)d;
			}
		}
		return best;
	}
	for (unsigned d = 0, k = 0; d < s->gpus && k < pod->num_gpu; d++) {
		if (g[d] == GS_TRACE_MILLI) {
			g[d] = 0;
			k++;
		}
	}
	return points(before, cost(f, cpu, g, s->gpus, s->model));
}

const struct gs__trace_policy_ops gs__trace_policy_gpuslice = {
    .flags = GS__TP_CACHE,
    .devsel = GS__DEV_OWN,
    .init = gsl_init,
    .fini = gsl_fini,
    .score = gsl_score,
};
