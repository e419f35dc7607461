/*
 * scorer.c - gpuslice's placement cost on one node's GPUs (the
 * scorer of gs/frag.h): building it from the demand seen, and the cost
 * F_n(M_g) + S_n of a node state. score.c documents the
 * terms and turns cost changes into scores; core/place/search.c's `frag`
 * policy ranks a node's assignments by this cost. No libm here on purpose:
 * the placement engine links it without the math library.
 */
#include "gs/frag.h"

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
		free(s);
		return err;
	}
	return scorer_finish_strand(s, ablate, out, eb);
}

/* A zeroed scorer, *out cleared first; NULL when memory runs out. */
static struct gs_trace_scorer *scorer_alloc(struct gs_trace_scorer **out)
{
	*out = NULL;
	return calloc(1, sizeof(struct gs_trace_scorer));
}

gs_err gs_trace_scorer_new(const struct gs_trace_pod *pods, size_t n,
                           const struct gs_trace_workload *count_target,
                           unsigned ablate, struct gs_trace_scorer **out,
                           struct gs_errbuf *eb)
{
	struct gs_trace_scorer *s = scorer_alloc(out);
	struct gs_trace_workload dm;
	gs_err err;

	if (s == NULL)
		return gs_fail(eb, GS_ERR_NOMEM,
		               "gpuslice scorer: out of memory");
	s->model_aware = !(ablate & GS_TRACE_ABLATE_MODEL);
	if ((ablate & GS_TRACE_ABLATE_DEMAND) && count_target != NULL) {
		/* Ablation: FGD's M (by count), with nothing reweighed. */
		err = gs_trace_workload_init_classes(&s->m, count_target->cls,
		                                     count_target->n, eb);
		if (err != GS_OK) {
			free(s);
			return err;
		}
		return scorer_finish_strand(s, ablate, out, eb);
	}
	err = gs_trace_workload_init_demand(&dm, pods, n, GS_GSL_COVERAGE, eb);
	if (err != GS_OK) {
		free(s);
		return err;
	}
	return scorer_finish(s, &dm, ablate, out, eb);
}

gs_err gs_trace_scorer_new_weighted(const struct gs_trace_class *cls, size_t n,
                                    struct gs_trace_scorer **out,
                                    struct gs_errbuf *eb)
{
	struct gs_trace_scorer *s = scorer_alloc(out);
	struct gs_trace_workload dm;
	gs_err err;

	if (s == NULL)
		return gs_fail(eb, GS_ERR_NOMEM,
		               "gpuslice scorer: out of memory");
	s->model_aware = true;
	err = gs_trace_workload_init_weighted(&dm, cls, n, GS_GSL_COVERAGE, eb);
	if (err != GS_OK) {
		free(s);
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
