/*
 * policy_gpuslice.c - gpuslice's own trace placement policy: FGD's
 * gradient step on a cost that is closer to what a cluster loses.
 *
 * What is lost when a cluster fills up is the GPU demand of the tasks that
 * no longer fit. FGD (policy_fgd.c) descends the expected fragmentation of
 * a random task of the target workload M, which has two blind spots:
 *
 *   1. M weighs classes by task count, so a one-in-two-hundred 8-GPU task
 *      counts as little as a one-in-two-hundred 0.1-GPU task, though
 *      turning it away loses eighty times as much GPU. We weigh each class
 *      by the GPU it asks for (p x num_gpu x gpu_milli, renormalised; CPU-
 *      only classes weigh nothing, since losing them loses no GPU).
 *   2. CPU enters only as a cliff (a class either fits in the node's free
 *      CPU or all idle GPU is fragment), so FGD happily lets CPU-only work
 *      and CPU-hungry tasks eat the CPU that the node's remaining GPUs
 *      will need, until the cliff. We add a fluid stranding term: if the
 *      node's free GPU were filled with tasks shaped like class m, with
 *      rho_m = CPU per milli-GPU, max(0, G - C / rho_m) of it would be
 *      left without CPU. S_n is that, averaged over the GPU classes by
 *      GPU demand. It grows smoothly as CPU runs short.
 *
 * The cost of a node is F'_n + S_n (F' = F with the reweighted M), both in
 * milli-GPU. A feasible node scores trunc(100 sigmoid(-delta / 1000)),
 * delta being the change of its cost if the task went there: the same
 * integer score as FGD, on purpose. Ranking nodes by the exact delta does
 * much worse (7.4 % unallocated on the default list against 4.7 %): the
 * integer buckets make every near-best node a tie, and the replay breaks
 * ties by a random node order, which spreads similar tasks over similar
 * nodes instead of piling them onto the one the estimate happens to
 * favour. A share tries each device that fits; among devices with the same
 * score the one with the least left over wins (best fit), and that
 * left-over also orders nodes inside a score bucket (a fraction of a
 * point, so it never outranks a better score).
 *
 * The cost of a node's current state is cached per node by its `gen`;
 * scores are cached by the replay per (node, task shape).
 */
#include "trace_int.h"

#include <math.h>
#include <stdlib.h>

#define GSL_COVERAGE_PCT 95.0
int gsl_exp_mode = 1; double gsl_exp_cov = 95; double gsl_exp_beta = 1; int gsl_exp_clamp = 0; int gsl_exp_cpuonly = 0; double gsl_exp_tau = 0;

struct gsl {
	size_t n;
	uint32_t *gen;      /* per node: the gen `base` was computed for */
	double *base;       /* per node: cost of the current state */
	double bs[100000];
	double hr2[512];
	uint32_t gen2[100000];
	double base2[100000];
	struct gs_trace_workload m; /* M reweighted by GPU demand */
	size_t nh;
	double *hw;         /* per GPU class: weight (share of GPU demand) */
	double *hr;         /* per GPU class: CPU milli per milli-GPU */
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

static gs_err gsl_init(void **st, struct gs__trace_run *run,
		       struct gs_errbuf *eb)
{
	struct gsl *f = calloc(1, sizeof(*f));
	double demand = 0;
	gs_err err;

	if (f == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "gpuslice policy: out of memory");
	if (gsl_exp_mode == 3) {
		const struct gs_trace_workload *w = run->target;
		struct gs_trace_workload dm;
		struct gs_trace_class cls[512];
		size_t n = 0;
		double tot = 0, tot2 = 0;
		gs_trace_workload_init_demand(&dm, run->pods, run->n_pods, 95, eb);
		for (size_t m = 0; m < w->n; m++) { cls[n++] = w->cls[m]; tot += w->cls[m].p * w->cls[m].num_gpu * w->cls[m].gpu_milli; }
		for (size_t m = 0; m < n; m++) cls[m].p = cls[m].p * cls[m].num_gpu * cls[m].gpu_milli / tot;
		for (size_t m = 0; m < dm.n; m++) if (dm.cls[m].num_gpu >= 2) { cls[n] = dm.cls[m]; cls[n].p *= gsl_exp_cov; tot2 += cls[n].p; n++; }
		for (size_t m = 0; m < n; m++) cls[m].p /= (1 + tot2);
		gs_trace_workload_fini(&dm);
		err = gs_trace_workload_init_classes(&f->m, cls, n, eb);
	} else if (gsl_exp_mode == 0) {
		const struct gs_trace_workload *w = run->target;
		struct gs_trace_class cls[512];
		double tot = 0;
		for (size_t m = 0; m < w->n; m++) { cls[m] = w->cls[m]; tot += w->cls[m].p * w->cls[m].num_gpu * w->cls[m].gpu_milli; }
		for (size_t m = 0; m < w->n; m++) cls[m].p = w->cls[m].p * w->cls[m].num_gpu * w->cls[m].gpu_milli / tot;
		err = gs_trace_workload_init_classes(&f->m, cls, w->n, eb);
	} else
		err = gs_trace_workload_init_demand(&f->m, run->pods, run->n_pods,
					    gsl_exp_cov, eb);
	if (err != GS_OK) {
		free(f);
		return err;
	}
	f->n = run->cl.n;
	f->gen = calloc(f->n ? f->n : 1, sizeof(*f->gen));
	f->base = calloc(f->n ? f->n : 1, sizeof(*f->base));
	f->hw = calloc(512, sizeof(*f->hw));
	f->hr = calloc(512, sizeof(*f->hr));
	if (f->gen == NULL || f->base == NULL || f->hw == NULL || f->hr == NULL) {
		gsl_fini(f);
		return gs_fail(eb, GS_ERR_NOMEM, "gpuslice policy: out of memory");
	}
	{
		const struct gs_trace_workload *hm = gsl_exp_mode >= 2 ? run->target : &f->m;
		for (size_t m = 0; m < hm->n; m++)
			demand += hm->cls[m].p * hm->cls[m].num_gpu * hm->cls[m].gpu_milli;
		for (size_t m = 0; m < hm->n; m++) {
			const struct gs_trace_class *c = &hm->cls[m];
			double dm = (double)c->num_gpu * c->gpu_milli;

			if (demand > 0 && dm > 0 && c->cpu_milli > 0) {
				f->hw[f->nh] = c->p * dm / demand;
				f->hr[f->nh] = c->cpu_milli / dm * (gsl_exp_clamp >= 2 ? gsl_exp_clamp / 100.0 : 1);
				f->hr2[f->nh] = c->cpu_milli / dm * (gsl_exp_cpuonly >= 2 ? gsl_exp_cpuonly / 100.0 : (gsl_exp_clamp >= 2 ? gsl_exp_clamp / 100.0 : 1));
				f->nh++;
			}
		}
	}
	*st = f;
	return GS_OK;
}

/* S: GPU (milli) that would be left without CPU, averaged over classes. */
static _Thread_local int use2;
static double stranded(const struct gsl *f, double gpu_free, double cpu_free)
{
	double s = 0;

	for (size_t h = 0; h < f->nh; h++) {
		double v = gpu_free - cpu_free / (use2 ? f->hr2[h] : f->hr[h]);
		if (gsl_exp_tau > 0)
			s += f->hw[h] * (v > 20 * gsl_exp_tau ? v : gsl_exp_tau * log1p(exp(v / gsl_exp_tau)));
		else if (v > 0)
			s += f->hw[h] * v;
	}
	return s;
}

static _Thread_local double cost_s;
static double cost(const struct gsl *f, int64_t cpu_free,
		   const uint16_t *gpu_free, unsigned ngpu, unsigned model)
{
	double total = 0;

	for (unsigned d = 0; d < ngpu; d++)
		total += gpu_free[d];
	cost_s = gsl_exp_beta * stranded(f, total, (double)cpu_free);
	return gs_trace_frag(&f->m, cpu_free, gpu_free, ngpu, model) + cost_s;
}

static double node_cost(struct gsl *f, const struct gs__trace_run *run,
			size_t i)
{
	const struct gs_trace_nstate *s = &run->cl.node[i];
	if (use2) {
		if (f->gen2[i] != s->gen) {
			f->base2[i] = cost(f, s->cpu_free, s->gpu_free, s->gpus, s->model);
			f->gen2[i] = s->gen;
		}
		return f->base2[i];
	}

	if (f->gen[i] != s->gen) {
		f->base[i] = cost(f, s->cpu_free, s->gpu_free, s->gpus, s->model);
		f->bs[i] = cost_s;
		f->gen[i] = s->gen;
	}
	return f->base[i];
}

static double points_raw(double before, double after);
static _Thread_local const struct gsl *cur_f; static _Thread_local size_t cur_i;
static double points(double before, double after)
{
	if (gsl_exp_clamp == 1) {
		double ds = cost_s - cur_f->bs[cur_i];
		if (ds < 0) after -= ds; /* drop the reward */
	}
	return points_raw(before, after);
}
static double points_raw(double before, double after)
{
	return (double)(int64_t)(100.0 / (1.0 + exp((after - before) / 1000.0)));
}

static double gsl_score(void *st, const struct gs__trace_run *run, size_t i,
			const struct gs_trace_pod *pod, int *dev)
{
	struct gsl *f = st;
	const struct gs_trace_nstate *s = &run->cl.node[i];
	use2 = pod->num_gpu == 0;
	double before = node_cost(f, run, i);
	cur_f = f; cur_i = i;
	int64_t cpu = s->cpu_free - (int64_t)pod->cpu_milli;
	uint16_t g[GS_TRACE_MAX_DEVS];

	for (unsigned d = 0; d < s->gpus; d++)
		g[d] = s->gpu_free[d];
	if (pod->num_gpu == 1 && pod->gpu_milli < GS_TRACE_MILLI) {
		double best = -INFINITY;
		for (unsigned d = 0; d < s->gpus; d++) {
			unsigned left = (unsigned)s->gpu_free[d] - pod->gpu_milli;
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
