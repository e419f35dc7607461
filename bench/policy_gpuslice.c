/*
 * policy_gpuslice.c - the trace replay policy `gpuslice`: scores each
 * node with gpuslice's own placement scorer (struct gs_trace_scorer,
 * gs/frag.h), built from the task demand of the replayed list. The costs
 * and the guarded rank it scores by are documented where they live, in
 * core (core/frag/scorer.c, core/frag/score.c), so that the replay's
 * figures describe what gpusliced's `frag` placement and the scheduler
 * extender do. Scores are cached per node until the node changes.
 */
#include "trace_int.h"

#include <stdlib.h>

/* ---- The replay policy ----------------------------------------------- */

struct gsl {
	size_t n;
	uint32_t *gen; /* per node: the gen `base` was computed for */
	struct gs_trace_cost *base; /* per node: costs of the current state */
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
	if (run->eps >= 0 &&
	    (err = gs_trace_scorer_set_eps(f->sc, run->eps, eb)) != GS_OK) {
		gsl_fini(f);
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

/* The node's costs now, cached by its gen. */
static const struct gs_trace_cost *gsl_before(struct gsl *f,
                                              const struct gs__trace_run *run,
                                              size_t i)
{
	const struct gs_trace_nstate *s = &run->cl.node[i];

	if (f->gen[i] != s->gen) {
		gs_trace_scorer_costs(f->sc, s->cpu_free, s->gpu_free, s->gpus,
		                      s->model, &f->base[i]);
		f->gen[i] = s->gen;
	}
	return &f->base[i];
}

static bool gsl_cand(void *st, const struct gs__trace_run *run, size_t i,
                     const struct gs_trace_pod *pod, struct gs_trace_cand *c,
                     int *dev)
{
	struct gsl *f = st;
	const struct gs_trace_nstate *s = &run->cl.node[i];

	return gs_trace_scorer_node(f->sc, gsl_before(f, run, i), s->cpu_free,
	                            s->gpu_free, s->gpus, s->model, pod, c,
	                            dev);
}

static size_t gsl_pick(void *st, const struct gs_trace_cand *c, size_t n)
{
	struct gsl *f = st;

	return gs_trace_scorer_pick(f->sc, c, n);
}

static double gsl_score(void *st, const struct gs__trace_run *run, size_t i,
                        const struct gs_trace_pod *pod, int *dev)
{
	struct gs_trace_cand c;

	return gsl_cand(st, run, i, pod, &c, dev) ? c.fgd : -1;
}

const struct gs__trace_policy_ops gs__trace_policy_gpuslice = {
    .flags = GS__TP_CACHE,
    .devsel = GS__DEV_OWN,
    .init = gsl_init,
    .fini = gsl_fini,
    .score = gsl_score,
    .cand = gsl_cand,
    .pick = gsl_pick,
};
