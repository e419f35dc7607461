/*
 * policy_fgd.c - FGD, Fragmentation Gradient Descent (Weng et al., ATC
 * '23): place each task where it grows the expected fragmentation of the
 * node the least. For a feasible node n and the state n' after the
 * hypothetical placement, delta = F_n'(M) - F_n(M) and the score is
 * trunc(100 sigmoid(-delta / 1000)), the simulator's integer 0..100 score
 * (one point is about 40 milli-GPU near delta = 0, so close candidates
 * tie and the node order decides). A share tries every device that fits
 * and keeps the first with the best score; whole GPUs take the lowest
 * fully free devices. M is the target workload of the original list.
 *
 * F_n(M) of the current state is cached per node, keyed by its `gen`.
 */
#include "trace_int.h"

#include <math.h>
#include <stdlib.h>

struct fgd {
	size_t n;
	uint32_t *gen;
	double *base;
};

static gs_err fgd_init(void **st, struct gs__trace_run *run,
                       struct gs_errbuf *eb)
{
	struct fgd *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "fgd: out of memory");
	f->n = run->cl.n;
	f->gen = calloc(f->n ? f->n : 1, sizeof(*f->gen));
	f->base = calloc(f->n ? f->n : 1, sizeof(*f->base));
	if (f->gen == NULL || f->base == NULL) {
		free(f->gen);
		free(f->base);
		free(f);
		return gs_fail(eb, GS_ERR_NOMEM, "fgd: out of memory");
	}
	*st = f;
	return GS_OK;
}

static void fgd_fini(void *st)
{
	struct fgd *f = st;

	if (f == NULL)
		return;
	free(f->gen);
	free(f->base);
	free(f);
}

static double node_frag(struct fgd *f, const struct gs__trace_run *run,
                        size_t i)
{
	const struct gs_trace_nstate *s = &run->cl.node[i];

	if (f->gen[i] != s->gen) {
		f->base[i] = gs_trace_frag(run->target, s->cpu_free,
		                           s->gpu_free, s->gpus, s->model);
		f->gen[i] = s->gen;
	}
	return f->base[i];
}

static double fgd_points(double before, double after)
{
	return (double)(int64_t)(100.0 /
	                         (1.0 + exp((after - before) / 1000.0)));
}

static double fgd_score(void *st, const struct gs__trace_run *run, size_t i,
                        const struct gs_trace_pod *pod, int *dev)
{
	const struct gs_trace_nstate *s = &run->cl.node[i];
	double before = node_frag(st, run, i);
	int64_t cpu = s->cpu_free - (int64_t)pod->cpu_milli;
	uint16_t g[GS_TRACE_MAX_DEVS];

	for (unsigned d = 0; d < s->gpus; d++)
		g[d] = s->gpu_free[d];
	if (pod->num_gpu == 1 && pod->gpu_milli < GS_TRACE_MILLI) {
		double best = -1;
		for (unsigned d = 0; d < s->gpus; d++) {
			bool seen = false;
			if (s->gpu_free[d] < pod->gpu_milli)
				continue;
			/* An equal amount on an earlier device gave the same
			 * score, and the first best device wins. */
			for (unsigned e = 0; e < d && !seen; e++)
				seen = s->gpu_free[e] == s->gpu_free[d];
			if (seen)
				continue;
			g[d] -= pod->gpu_milli;
			double pts = fgd_points(
			    before, gs_trace_frag(run->target, cpu, g, s->gpus,
			                          s->model));
			g[d] += pod->gpu_milli;
			if (pts > best) {
				best = pts;
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
	return fgd_points(
	    before, gs_trace_frag(run->target, cpu, g, s->gpus, s->model));
}

const struct gs__trace_policy_ops gs__trace_policy_fgd = {
    .flags = GS__TP_CACHE,
    .devsel = GS__DEV_OWN,
    .init = fgd_init,
    .fini = fgd_fini,
    .score = fgd_score,
};
