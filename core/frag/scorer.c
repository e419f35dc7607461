/*
 * scorer.c - gpuslice's placement cost on one node's GPUs (the
 * scorer of gs/frag.h): building it from the demand seen (FGD's M by
 * count, and M_g by GPU demand), and the costs of a node state: FGD's
 * F_n(M) and our own F_n(M_g) + S_n. score.c documents the terms and
 * the guard and turns cost changes into ranks; core/place/search.c's
 * `frag` policy ranks a node's assignments the same way. No libm here on
 * purpose: the placement engine links it without the math library.
 */
#include "scorer_int.h"

#include <stdlib.h>

void gs_trace_scorer_free(struct gs_trace_scorer *s)
{
	if (s == NULL)
		return;
	free(s->hw);
	free(s->hr);
	free(s->hs);
	gs_trace_workload_fini(&s->m);
	gs_trace_workload_fini(&s->fgd);
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

/* Finishes a scorer whose M_g is set: the stranding classes. On failure
 * `s` is freed. */
static gs_err scorer_finish_strand(struct gs_trace_scorer *s, unsigned ablate,
                                   struct gs_trace_scorer **out,
                                   struct gs_errbuf *eb)
{
	double reserve =
	    (ablate & GS_TRACE_ABLATE_RESERVE) ? 1.0 : GS_GSL_CPU_RESERVE;
	double demand = 0;

	s->hw = calloc(s->m.n ? s->m.n : 1, sizeof(*s->hw));
	s->hr = calloc(s->m.n ? s->m.n : 1, sizeof(*s->hr));
	s->hs = calloc(s->m.n ? s->m.n : 1, sizeof(*s->hs));
	if (s->hw == NULL || s->hr == NULL || s->hs == NULL) {
		gs_trace_scorer_free(s);
		return gs_fail(eb, GS_ERR_NOMEM,
		               "gpuslice scorer: out of memory");
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

/*
 * Finishes a scorer from its demand workload `dm` (taken over: freed
 * here): gangs reweighed into M_g, then the stranding classes. On
 * failure `s` is freed.
 */
static gs_err scorer_finish(struct gs_trace_scorer *s,
                            struct gs_trace_workload *dm, unsigned ablate,
                            struct gs_trace_scorer **out, struct gs_errbuf *eb)
{
	double gw = (ablate & GS_TRACE_ABLATE_GANG) ? 1.0 : GS_GSL_GANG_WEIGHT;
	double tot = 0;
	gs_err err;

	for (size_t g = 0; g < dm->n; g++) {
		if (is_gang(&dm->cls[g]))
			dm->cls[g].p *= gw;
		tot += dm->cls[g].p;
	}
	for (size_t g = 0; g < dm->n && tot > 0; g++)
		dm->cls[g].p /= tot;
	err = gs_trace_workload_init_classes(&s->m, dm->cls, dm->n, eb);
	gs_trace_workload_fini(dm);
	if (err != GS_OK) {
		gs_trace_scorer_free(s);
		return err;
	}
	return scorer_finish_strand(s, ablate, out, eb);
}

/* A zeroed scorer with the default eps, *out cleared first; NULL when
 * memory runs out. */
static struct gs_trace_scorer *scorer_alloc(struct gs_trace_scorer **out,
                                            unsigned ablate)
{
	struct gs_trace_scorer *s = calloc(1, sizeof(struct gs_trace_scorer));

	*out = NULL;
	if (s != NULL) {
		s->eps = GS_TRACE_SCORER_EPS;
		s->ablate = ablate;
		s->model_aware = !(ablate & GS_TRACE_ABLATE_MODEL);
	}
	return s;
}

gs_err gs_trace_scorer_set_eps(struct gs_trace_scorer *s, double eps,
                               struct gs_errbuf *eb)
{
	if (!(eps >= 0 && eps <= GS_TRACE_MILLI))
		return gs_fail(eb, GS_ERR_INVALID,
		               "gpuslice scorer: eps %g outside 0 to 1000 milli-GPU",
		               eps);
	s->eps = eps;
	return GS_OK;
}

gs_err gs_trace_scorer_new(const struct gs_trace_pod *pods, size_t n,
                           const struct gs_trace_workload *count_target,
                           unsigned ablate, struct gs_trace_scorer **out,
                           struct gs_errbuf *eb)
{
	struct gs_trace_scorer *s = scorer_alloc(out, ablate);
	struct gs_trace_workload dm;
	gs_err err;

	if (s == NULL)
		return gs_fail(eb, GS_ERR_NOMEM,
		               "gpuslice scorer: out of memory");
	if (count_target != NULL)
		err = gs_trace_workload_init_classes(
		    &s->fgd, count_target->cls, count_target->n, eb);
	else
		err = gs_trace_workload_init(&s->fgd, pods, n,
		                             GS_GSL_FGD_COVERAGE, eb);
	if (err != GS_OK) {
		gs_trace_scorer_free(s);
		return err;
	}
	if (ablate & GS_TRACE_ABLATE_DEMAND) {
		/* Ablation: FGD's M (by count), with nothing reweighed. */
		err = gs_trace_workload_init_classes(&s->m, s->fgd.cls,
		                                     s->fgd.n, eb);
		if (err != GS_OK) {
			gs_trace_scorer_free(s);
			return err;
		}
		return scorer_finish_strand(s, ablate, out, eb);
	}
	err = gs_trace_workload_init_demand(&dm, pods, n, GS_GSL_COVERAGE, eb);
	if (err != GS_OK) {
		gs_trace_scorer_free(s);
		return err;
	}
	return scorer_finish(s, &dm, ablate, out, eb);
}

gs_err gs_trace_scorer_new_weighted(const struct gs_trace_class *cls, size_t n,
                                    struct gs_trace_scorer **out,
                                    struct gs_errbuf *eb)
{
	struct gs_trace_scorer *s = scorer_alloc(out, 0);
	struct gs_trace_workload dm;
	gs_err err;

	if (s == NULL)
		return gs_fail(eb, GS_ERR_NOMEM,
		               "gpuslice scorer: out of memory");
	err = gs_trace_workload_init_popular(&s->fgd, cls, n,
	                                     GS_GSL_FGD_COVERAGE, eb);
	if (err != GS_OK) {
		gs_trace_scorer_free(s);
		return err;
	}
	err = gs_trace_workload_init_weighted(&dm, cls, n, GS_GSL_COVERAGE, eb);
	if (err != GS_OK) {
		gs_trace_scorer_free(s);
		return err;
	}
	return scorer_finish(s, &dm, 0, out, eb);
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

void gs_trace_scorer_costs(const struct gs_trace_scorer *s, int64_t cpu_free,
                           const uint16_t *gpu_free, unsigned ngpu,
                           unsigned model, struct gs_trace_cost *out)
{
	if (ngpu > GS_TRACE_MAX_DEVS)
		ngpu = GS_TRACE_MAX_DEVS;
	out->fgd = gs_trace_frag(&s->fgd, cpu_free, gpu_free, ngpu, model);
	out->own = gs_trace_scorer_cost(s, cpu_free, gpu_free, ngpu, model);
}
