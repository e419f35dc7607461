/*
 * policy_gpuslice.c - gpuslice's own placement scoring: FGD's gradient
 * step on a cost closer to what a filling cluster loses, and the trace
 * replay policy built on it.
 *
 * The scoring lives in a scorer (struct gs_trace_scorer, gs/trace.h) built
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
 *   renormalised. F_n is the FGD fragment measure (trace_frag.c), which
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
 * Every constant was chosen on the tuning split of docs/placement.md
 * ("Evaluation protocol") and reported on the other split.
 *
 * Score of a placement: trunc(100 sigmoid(-delta / 1000)) with delta the
 * change of the node's cost, FGD's integer score on purpose (the buckets
 * make near-best nodes tie, and ties go to the node order), minus the
 * device's left-over in millionths of a point (best fit inside a bucket;
 * never outranks a better bucket). A share tries each device that fits.
 */
#include "trace_int.h"

#include <math.h>
#include <stdlib.h>

#define GS_GSL_COVERAGE    99.0 /* % of GPU demand M_g covers */
#define GS_GSL_GANG_WEIGHT 0.75 /* a gang class's share of its demand */
#define GS_GSL_CPU_RESERVE 1.3  /* rho_m over the class's mean CPU/GPU */

struct gs_trace_scorer {
	struct gs_trace_workload m; /* M_g */
	size_t nh;
	double *hw;   /* per stranding class: weight */
	double *hr;   /* per stranding class: CPU milli per milli-GPU */
	uint32_t *hs; /* per stranding class: model spec, 0 = any */
	bool model_aware;
};

void gs_trace_scorer_free(struct gs_trace_scorer *s)
{
	if (s == NULL)
		return;
	free(s->hw);
	free(s->hr);
	free(s->hs);
	gs_trace_workload_fini(&s->m);
	free(s);
}

static double class_gpu(const struct gs_trace_class *c)
{
	return (double)c->num_gpu * c->gpu_milli;
}

static bool is_gang(const struct gs_trace_class *c)
{
	return c->num_gpu >= 2;
}

gs_err gs_trace_scorer_new(const struct gs_trace_pod *pods, size_t n,
                           const struct gs_trace_workload *count_target,
                           unsigned ablate, struct gs_trace_scorer **out,
                           struct gs_errbuf *eb)
{
	struct gs_trace_scorer *s = calloc(1, sizeof(*s));
	struct gs_trace_workload dm;
	double gw = (ablate & GS_TRACE_ABLATE_GANG) ? 1.0 : GS_GSL_GANG_WEIGHT;
	double reserve =
	    (ablate & GS_TRACE_ABLATE_RESERVE) ? 1.0 : GS_GSL_CPU_RESERVE;
	double tot = 0, demand = 0;
	gs_err err;

	*out = NULL;
	if (s == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "gpuslice scorer: out of memory");
	s->model_aware = !(ablate & GS_TRACE_ABLATE_MODEL);
	if ((ablate & GS_TRACE_ABLATE_DEMAND) && count_target != NULL) {
		/* Ablation: FGD's M (by count), with nothing reweighed. */
		err = gs_trace_workload_init_classes(
		    &s->m, count_target->cls, count_target->n, eb);
	} else {
		err = gs_trace_workload_init_demand(&dm, pods, n,
		                                    GS_GSL_COVERAGE, eb);
		if (err == GS_OK) {
			for (size_t g = 0; g < dm.n; g++) {
				if (is_gang(&dm.cls[g]))
					dm.cls[g].p *= gw;
				tot += dm.cls[g].p;
			}
			for (size_t g = 0; g < dm.n && tot > 0; g++)
				dm.cls[g].p /= tot;
			err = gs_trace_workload_init_classes(&s->m, dm.cls,
			                                     dm.n, eb);
			gs_trace_workload_fini(&dm);
		}
	}
	if (err != GS_OK) {
		free(s);
		return err;
	}
	s->hw = calloc(s->m.n ? s->m.n : 1, sizeof(*s->hw));
	s->hr = calloc(s->m.n ? s->m.n : 1, sizeof(*s->hr));
	s->hs = calloc(s->m.n ? s->m.n : 1, sizeof(*s->hs));
	if (s->hw == NULL || s->hr == NULL || s->hs == NULL) {
		gs_trace_scorer_free(s);
		return gs_fail(eb, GS_ERR_NOMEM, "gpuslice scorer: out of memory");
	}
	if (ablate & GS_TRACE_ABLATE_STRAND) {
		*out = s;
		return GS_OK;
	}
	/* Stranding classes: single-GPU and share classes that need CPU,
	 * weighed by their share of M_g among them. */
	for (size_t m = 0; m < s->m.n; m++) {
		const struct gs_trace_class *c = &s->m.cls[m];
		if (!is_gang(c) && c->cpu_milli > 0 && class_gpu(c) > 0)
			demand += c->p;
	}
	for (size_t m = 0; m < s->m.n && demand > 0; m++) {
		const struct gs_trace_class *c = &s->m.cls[m];
		if (is_gang(c) || c->cpu_milli == 0 || class_gpu(c) == 0)
			continue;
		s->hw[s->nh] = c->p / demand;
		s->hr[s->nh] = reserve * c->cpu_milli / class_gpu(c);
		s->hs[s->nh] = c->spec;
		s->nh++;
	}
	*out = s;
	return GS_OK;
}

/* S: free GPU (milli) that would be left without CPU. */
static double stranded(const struct gs_trace_scorer *s, double gpu_free,
                       double cpu_free, unsigned model)
{
	double v, sum = 0;

	for (size_t h = 0; h < s->nh; h++) {
		if (s->model_aware && s->hs[h] != 0 &&
		    (model >= 32 || !((s->hs[h] >> model) & 1u)))
			continue;
		v = gpu_free - cpu_free / s->hr[h];
		if (v > 0)
			sum += s->hw[h] * v;
	}
	return sum;
}

double gs_trace_scorer_cost(const struct gs_trace_scorer *s, int64_t cpu_free,
                            const uint16_t *gpu_free, unsigned ngpu,
                            unsigned model)
{
	double total = 0;

	if (ngpu > GS_TRACE_MAX_DEVS)
		ngpu = GS_TRACE_MAX_DEVS;
	for (unsigned d = 0; d < ngpu; d++)
		total += gpu_free[d];
	return gs_trace_frag(&s->m, cpu_free, gpu_free, ngpu, model) +
	       stranded(s, total, (double)cpu_free, model);
}

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
	if (cpu < 0 || (pod->spec != 0 &&
	                (model >= 32 || !((pod->spec >> model) & 1u))))
		return -1;
	if (isnan(before))
		before = gs_trace_scorer_cost(s, cpu_free, gpu_free, ngpu,
		                              model);
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
			v = points(before,
			           gs_trace_scorer_cost(s, cpu, g, ngpu, model)) -
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

/* ---- The replay policy ----------------------------------------------- */

struct gsl {
	size_t n;
	uint32_t *gen; /* per node: the gen `base` was computed for */
	double *base;  /* per node: cost of the current state */
	struct gs_trace_scorer *sc; /* owned */
};

static void gsl_fini(void *st)
{
	struct gsl *f = st;

	if (f == NULL)
		return;
	free(f->gen);
	free(f->base);
	gs_trace_scorer_free(f->sc);
	free(f);
}

static gs_err gsl_init(void **st, struct gs__trace_run *run,
                       struct gs_errbuf *eb)
{
	struct gsl *f = calloc(1, sizeof(*f));
	gs_err err;

	if (f == NULL)
		return gs_fail(eb, GS_ERR_NOMEM,
		               "gpuslice policy: out of memory");
	err = gs_trace_scorer_new(run->pods, run->n_pods, run->target,
	                          run->ablate, &f->sc, eb);
	if (err != GS_OK) {
		free(f);
		return err;
	}
	f->n = run->cl.n;
	f->gen = calloc(f->n ? f->n : 1, sizeof(*f->gen));
	f->base = calloc(f->n ? f->n : 1, sizeof(*f->base));
	if (f->gen == NULL || f->base == NULL) {
		gsl_fini(f);
		return gs_fail(eb, GS_ERR_NOMEM,
		               "gpuslice policy: out of memory");
	}
	*st = f;
	return GS_OK;
}

static double gsl_score(void *st, const struct gs__trace_run *run, size_t i,
                        const struct gs_trace_pod *pod, int *dev)
{
	struct gsl *f = st;
	const struct gs_trace_nstate *s = &run->cl.node[i];

	if (f->gen[i] != s->gen) {
		f->base[i] = gs_trace_scorer_cost(f->sc, s->cpu_free,
		                                  s->gpu_free, s->gpus, s->model);
		f->gen[i] = s->gen;
	}
	return gs_trace_scorer_score(f->sc, f->base[i], s->cpu_free,
	                             s->gpu_free, s->gpus, s->model, pod, dev);
}

const struct gs__trace_policy_ops gs__trace_policy_gpuslice = {
    .flags = GS__TP_CACHE,
    .devsel = GS__DEV_OWN,
    .init = gsl_init,
    .fini = gsl_fini,
    .score = gsl_score,
};
