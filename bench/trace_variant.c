/*
 * trace_variant.c - derived task lists for checking a placement policy on
 * lists it was not tuned on (docs/placement.md, "Evaluation protocol" and
 * "A family of variants").
 *
 * Two transformations of a task list, both deterministic from a seed:
 *
 *   - model constraint: a share of the GPU tasks is restricted to one or
 *     a few GPU models (the upstream gpu_spec column). Models are drawn
 *     without replacement, among the models that have a node able to host
 *     the task at all (so every constrained task stays placeable on an
 *     empty cluster), by one of four laws: in proportion to the number of
 *     GPUs of that model in the node list (the trace's model mix),
 *     uniformly, in inverse proportion to it, or "scarce": one model
 *     holding 1-15 % of the GPUs, drawn from the seed, is given to
 *     scarce_pct % of the constrained tasks it can host, the other models
 *     by the mix. The laws but the first skip models with under 1 % of the
 *     GPUs.
 *   - gang weight: a share of the single-GPU and share tasks becomes a
 *     task of 2, 4 or 8 whole GPUs, the size drawn by the list's own mix
 *     of multi-GPU tasks (2/4/8 counted; equal weights if it has none) or
 *     a fixed small- or large-gang mix; its CPU and memory scale with the
 *     GPU count, capped at the largest node with that many GPUs.
 *
 * Pure: no I/O, no globals. The list is changed in place (the caller owns
 * it); nodes are only read.
 */
#include "trace_int.h"

#include <string.h>

static double uniform01(struct gs__trace_rng *r)
{
	return (double)(gs__trace_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Which models have a node with at least `ngpu` devices and enough CPU
 * and memory for `pod`; per model the GPU count it has in the list. */
static uint32_t models_for(const struct gs_trace_node *nodes, size_t nn,
                           const struct gs_trace_pod *pod, const double *weight)
{
	uint32_t ok = 0;

	for (size_t i = 0; i < nn; i++) {
		const struct gs_trace_node *n = &nodes[i];
		if (n->gpus >= pod->num_gpu && n->cpu_milli >= pod->cpu_milli &&
		    n->memory_mib >= pod->memory_mib &&
		    n->model < GS_TRACE_MAX_MODELS && weight[n->model] > 0)
			ok |= 1u << n->model;
	}
	return ok;
}

static uint32_t draw_spec(struct gs__trace_rng *r, uint32_t ok,
                          const double *weight, unsigned k)
{
	uint32_t spec = 0;

	for (unsigned j = 0; j < k; j++) {
		double total = 0, x;
		for (unsigned m = 0; m < GS_TRACE_MAX_MODELS; m++)
			if ((ok >> m) & 1u && !((spec >> m) & 1u))
				total += weight[m];
		if (total <= 0)
			break;
		x = uniform01(r) * total;
		for (unsigned m = 0; m < GS_TRACE_MAX_MODELS; m++) {
			if (!((ok >> m) & 1u) || (spec >> m) & 1u)
				continue;
			if (x < weight[m] || total - weight[m] <= 0) {
				spec |= 1u << m;
				break;
			}
			x -= weight[m];
			total -= weight[m];
		}
	}
	return spec;
}

/* GPUs per model in the node list, and their total. */
static double model_gpus(const struct gs_trace_node *nodes, size_t nn,
                         double *gpus)
{
	double total = 0;

	for (unsigned m = 0; m < GS_TRACE_MAX_MODELS; m++)
		gpus[m] = 0;
	for (size_t i = 0; i < nn; i++) {
		if (nodes[i].gpus > 0 && nodes[i].model < GS_TRACE_MAX_MODELS) {
			gpus[nodes[i].model] += nodes[i].gpus;
			total += nodes[i].gpus;
		}
	}
	return total;
}

int gs_trace_variant_scarce_model(const struct gs_trace_node *nodes, size_t nn,
                                  const struct gs_trace_variant_cfg *cfg)
{
	double gpus[GS_TRACE_MAX_MODELS];
	double total = model_gpus(nodes, nn, gpus);
	struct gs__trace_rng r;
	unsigned cand[GS_TRACE_MAX_MODELS], nc = 0;

	for (unsigned m = 0; m < GS_TRACE_MAX_MODELS; m++)
		if (gpus[m] >= 0.01 * total && gpus[m] <= 0.15 * total &&
		    gpus[m] > 0)
			cand[nc++] = m;
	if (nc == 0)
		return -1;
	gs__trace_rng_seed(&r, cfg->seed * 2 + 3);
	return (int)cand[gs__trace_rng_below(&r, nc)];
}

/* Draw weights of the models under `law` (capacity: the GPU counts). */
static void law_weights(enum gs_trace_law law, const double *gpus,
                        double total, double *w)
{
	for (unsigned m = 0; m < GS_TRACE_MAX_MODELS; m++) {
		bool big = gpus[m] > 0 && gpus[m] >= 0.01 * total;

		switch (law) {
		case GS_TRACE_LAW_UNIFORM:
			w[m] = big ? 1.0 : 0.0;
			break;
		case GS_TRACE_LAW_INVERSE:
			w[m] = big ? 1.0 / gpus[m] : 0.0;
			break;
		case GS_TRACE_LAW_SCARCE:
			w[m] = big ? gpus[m] : 0.0;
			break;
		default:
			w[m] = gpus[m];
			break;
		}
	}
}

gs_err gs_trace_variant_apply(struct gs_trace_pod *pods, size_t n,
                              const struct gs_trace_node *nodes, size_t nn,
                              const struct gs_trace_variant_cfg *cfg,
                              struct gs_errbuf *eb)
{
	struct gs__trace_rng r;
	double weight[GS_TRACE_MAX_MODELS] = {0};
	double gang[3] = {0}; /* 2, 4, 8 GPUs */
	static const uint8_t gang_n[3] = {2, 4, 8};
	uint32_t cap_cpu[3] = {0};
	uint64_t cap_mem[3] = {0};
	unsigned maxm = cfg->max_models ? cfg->max_models : 2;

	double draw[GS_TRACE_MAX_MODELS], gpus[GS_TRACE_MAX_MODELS];
	double scarce_pct = cfg->scarce_pct > 0 ? cfg->scarce_pct : 60;
	int scarce = -1;

	if (!(cfg->constrain_pct >= 0 && cfg->constrain_pct <= 100) ||
	    !(cfg->gang_pct >= 0 && cfg->gang_pct <= 100) ||
	    !(cfg->scarce_pct >= 0 && cfg->scarce_pct <= 100))
		return gs_fail(eb, GS_ERR_INVALID,
		               "task list variant: shares must be 0 to 100 %%");
	if (maxm > 8 || (unsigned)cfg->law >= GS_TRACE_LAW__COUNT ||
	    (unsigned)cfg->gangs >= GS_TRACE_GANG__COUNT)
		return gs_fail(eb, GS_ERR_INVALID,
		               "task list variant: at most 8 models per task, a known law and gang mix");
	law_weights(cfg->law, gpus, model_gpus(nodes, nn, gpus), draw);
	if (cfg->law == GS_TRACE_LAW_SCARCE)
		scarce = gs_trace_variant_scarce_model(nodes, nn, cfg);
	for (size_t i = 0; i < nn; i++) {
		if (nodes[i].gpus > 0 && nodes[i].model < GS_TRACE_MAX_MODELS)
			weight[nodes[i].model] += nodes[i].gpus;
		for (int g = 0; g < 3; g++) {
			if (nodes[i].gpus < gang_n[g])
				continue;
			if (nodes[i].cpu_milli > cap_cpu[g])
				cap_cpu[g] = nodes[i].cpu_milli;
			if (nodes[i].memory_mib > cap_mem[g])
				cap_mem[g] = nodes[i].memory_mib;
		}
	}
	for (size_t i = 0; i < n; i++)
		for (int g = 0; g < 3; g++)
			if (pods[i].num_gpu == gang_n[g] &&
			    pods[i].gpu_milli == GS_TRACE_MILLI)
				gang[g] += 1;
	if (gang[0] + gang[1] + gang[2] == 0)
		gang[0] = gang[1] = gang[2] = 1;
	if (cfg->gangs != GS_TRACE_GANG_LIST) {
		bool small = cfg->gangs == GS_TRACE_GANG_SMALL;
		gang[0] = small ? 6 : 1;
		gang[1] = 3;
		gang[2] = small ? 1 : 6;
	}
	for (int g = 0; g < 3; g++)
		if (cap_cpu[g] == 0)
			gang[g] = 0; /* no node can host it */

	/* Separate streams so that one share does not shift the other's draws.
	 */
	gs__trace_rng_seed(&r, cfg->seed * 2 + 1);
	for (size_t i = 0; i < n && cfg->gang_pct > 0; i++) {
		struct gs_trace_pod *p = &pods[i];
		double t = gang[0] + gang[1] + gang[2], x;
		int g = 0;

		if (p->num_gpu != 1 || t <= 0)
			continue;
		if (uniform01(&r) * 100.0 >= cfg->gang_pct)
			continue;
		x = uniform01(&r) * t;
		while (g < 2 && (x >= gang[g] || gang[g] == 0)) {
			x -= gang[g];
			g++;
		}
		p->num_gpu = gang_n[g];
		p->gpu_milli = GS_TRACE_MILLI;
		p->cpu_milli *= gang_n[g];
		if (p->cpu_milli > cap_cpu[g])
			p->cpu_milli = cap_cpu[g];
		p->memory_mib *= gang_n[g];
		if (p->memory_mib > cap_mem[g])
			p->memory_mib = cap_mem[g];
	}
	gs__trace_rng_seed(&r, cfg->seed * 2 + 2);
	for (size_t i = 0; i < n && cfg->constrain_pct > 0; i++) {
		struct gs_trace_pod *p = &pods[i];
		uint32_t ok;
		unsigned k;

		if (p->num_gpu == 0 || p->spec != 0)
			continue;
		if (uniform01(&r) * 100.0 >= cfg->constrain_pct)
			continue;
		k = 1 + (unsigned)gs__trace_rng_below(&r, maxm);
		ok = models_for(nodes, nn, p, weight);
		if (ok == 0)
			continue;
		if (scarce >= 0 && (ok >> scarce) & 1u &&
		    uniform01(&r) * 100.0 < scarce_pct)
			p->spec = (1u << scarce) |
			          draw_spec(&r, ok & ~(1u << scarce), draw, k - 1);
		else
			p->spec = draw_spec(&r, ok, draw, k);
	}
	return GS_OK;
}
