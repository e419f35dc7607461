/*
 * trace_family.c - the variant family (trace_family.h): its fixed
 * definition and the runner that replays each variant.
 *
 * Definition. Variant i draws its parameters from a generator seeded by
 * GS_TRACE_FAMILY_SEED and i, so the family is the same on every machine
 * and never changes with the policies:
 *
 *   law            i mod 4: capacity, uniform, inverse, scarce (balanced
 *                  in both parts)
 *   constrain_pct  5..40 (uniform integer)
 *   max_models     1..5 (a task accepts 1..this many models)
 *   scarce_pct     50..80 (scarce law: share given the scarce model)
 *   gang_pct       0, 0, 10, 20 or 30
 *   gangs          the list's mix, small (6:3:1) or large (1:3:6)
 *   seed           1000 + i (the variant's own draws)
 *
 * Arrival order is the replay's: every replay seed shuffles the list and
 * draws its inflation and node order anew. Variants 0..15 are the tuning
 * part (replay seeds 1001-1005), 16..39 the reporting part (42-51);
 * docs/placement.md lists both.
 *
 * The runner loads nothing: it copies the base benchmark's lists for each
 * variant, applies it, runs the base's policies and seeds on it
 * (trace_bench.c) and keeps only the figures.
 */
#include "trace_family.h"
#include "trace_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int levels[GS_TRACE_FAMILY_LEVELS] = {90, 100, 110, 120, 130};

int gs_trace_family_level(size_t k)
{
	return k < GS_TRACE_FAMILY_LEVELS ? levels[k] : -1;
}

void gs_trace_family_part_range(enum gs_trace_family_part part, unsigned *lo,
                                unsigned *hi)
{
	*lo = part == GS_TRACE_FAMILY_REPORTING ? GS_TRACE_FAMILY_TUNE : 0;
	*hi = part == GS_TRACE_FAMILY_TUNING ? GS_TRACE_FAMILY_TUNE - 1
	                                     : GS_TRACE_FAMILY_SIZE - 1;
}

void gs_trace_family_part_seeds(enum gs_trace_family_part part,
                                uint64_t *lo, uint64_t *hi)
{
	*lo = part == GS_TRACE_FAMILY_TUNING ? 1001 : 42;
	*hi = part == GS_TRACE_FAMILY_TUNING ? 1005 : 51;
}

void gs_trace_family_variant(unsigned i, struct gs_trace_variant_cfg *cfg)
{
	static const double gang_pct[5] = {0, 0, 10, 20, 30};
	struct gs__trace_rng r;

	gs__trace_rng_seed(&r, (uint64_t)GS_TRACE_FAMILY_SEED * 1000 + i);
	memset(cfg, 0, sizeof(*cfg));
	cfg->law = (enum gs_trace_law)(i % GS_TRACE_LAW__COUNT);
	cfg->constrain_pct = 5 + (double)gs__trace_rng_below(&r, 36);
	cfg->max_models = 1 + (unsigned)gs__trace_rng_below(&r, 5);
	cfg->scarce_pct = 50 + (double)gs__trace_rng_below(&r, 31);
	cfg->gang_pct = gang_pct[gs__trace_rng_below(&r, 5)];
	cfg->gangs = (enum gs_trace_gang_mix)gs__trace_rng_below(
	    &r, GS_TRACE_GANG__COUNT);
	cfg->seed = 1000 + i;
}

void gs_trace_family_name(unsigned i, const struct gs_trace_variant_cfg *cfg,
                          char *buf, size_t cap)
{
	static const char *const law[GS_TRACE_LAW__COUNT] = {
	    "cap", "uniform", "inverse", "scarce"};
	static const char mix[GS_TRACE_GANG__COUNT] = {'L', 'S', 'B'};

	snprintf(buf, cap, "v%u:%s/c%.0f/k%u/g%.0f%c", i,
	         law[(unsigned)cfg->law % GS_TRACE_LAW__COUNT],
	         cfg->constrain_pct, cfg->max_models, cfg->gang_pct,
	         mix[(unsigned)cfg->gangs % GS_TRACE_GANG__COUNT]);
}

/* Index of policy `p` in b->policies, or -1. */
static int policy_index(const struct gs_trace_bench *b, int p)
{
	for (size_t k = 0; k < b->n_policies; k++)
		if (b->policies[k] == p)
			return (int)k;
	return -1;
}

/* What share of the GPU tasks the variant constrained, and how many of
 * those accept the scarce model. */
static void constraint_shares(const struct gs_trace_bench *b,
                              struct gs_trace_family_row *row)
{
	size_t gpu = 0, con = 0, on = 0;

	for (size_t i = 0; i < b->n_pods; i++) {
		const struct gs_trace_pod *p = &b->pods[i];
		if (p->num_gpu == 0)
			continue;
		gpu++;
		if (p->spec == 0)
			continue;
		con++;
		if (row->scarce >= 0 && (p->spec >> row->scarce) & 1u)
			on++;
	}
	row->constrained = gpu ? 100.0 * (double)con / (double)gpu : 0;
	row->on_scarce =
	    row->scarce >= 0 && con ? 100.0 * (double)on / (double)con : NAN;
}

static void figures(const struct gs_trace_bench *b,
                    struct gs_trace_family_row *row)
{
	int pf = policy_index(b, GS_TRACE_POLICY_FGD);
	int pg = policy_index(b, GS_TRACE_POLICY_GPUSLICE);

	for (size_t k = 0; k < GS_TRACE_FAMILY_LEVELS; k++) {
		struct gs_trace_family_level *lv = &row->lv[k];
		double sum = 0, worst = -INFINITY;
		size_t n = 0;

		lv->fgd = gs_trace_bench_stat_of(b, (size_t)pf,
		                                 (size_t)levels[k], false)
		              .mean;
		lv->gsl = gs_trace_bench_stat_of(b, (size_t)pg,
		                                 (size_t)levels[k], false)
		              .mean;
		lv->base = NAN;
		lv->base_policy = -1;
		for (size_t p = 0; p < b->n_policies; p++) {
			double m;
			if ((int)p == pg)
				continue;
			m = gs_trace_bench_stat_of(b, p, (size_t)levels[k],
			                           false)
			        .mean;
			if (!isnan(m) && (isnan(lv->base) || m < lv->base)) {
				lv->base = m;
				lv->base_policy = b->policies[p];
			}
		}
		for (size_t s = 0; s < b->n_seeds; s++) {
			double g = b->job[(size_t)pg * b->n_seeds + s]
			               .res.unalloc_pct[levels[k]];
			double f = b->job[(size_t)pf * b->n_seeds + s]
			               .res.unalloc_pct[levels[k]];
			if (isnan(g) || isnan(f))
				continue;
			sum += g - f;
			n++;
			if (g - f > worst)
				worst = g - f;
		}
		lv->delta = n ? sum / (double)n : NAN;
		lv->delta_worst = n ? worst : NAN;
	}
}

/* Copies `n` elements of `size` bytes; NULL when memory runs out. */
static void *dup_array(const void *src, size_t n, size_t size)
{
	void *p = malloc(n ? n * size : 1);

	if (p != NULL && n > 0)
		memcpy(p, src, n * size);
	return p;
}

static gs_err run_variant(const struct gs_trace_bench *base,
                          struct gs_trace_family_row *row,
                          struct gs_errbuf *eb)
{
	struct gs_trace_bench vb;
	gs_err err;

	memset(&vb, 0, sizeof(vb));
	memcpy(vb.policies, base->policies, sizeof(vb.policies));
	vb.n_policies = base->n_policies;
	memcpy(vb.seeds, base->seeds, sizeof(vb.seeds));
	vb.n_seeds = base->n_seeds;
	vb.tune = base->tune;
	vb.jobs_n = base->jobs_n;
	vb.ablate = base->ablate;
	vb.eps = base->eps;
	vb.models = base->models;
	vb.variant = row->cfg;
	vb.n_nodes = base->n_nodes;
	vb.n_pods = base->n_pods;
	vb.nodes = dup_array(base->nodes, base->n_nodes, sizeof(*vb.nodes));
	vb.pods = dup_array(base->pods, base->n_pods, sizeof(*vb.pods));
	if (vb.nodes == NULL || vb.pods == NULL) {
		gs_trace_bench_fini(&vb);
		return gs_fail(eb, GS_ERR_NOMEM, "variant family: out of memory");
	}
	err = gs_trace_variant_apply(vb.pods, vb.n_pods, vb.nodes, vb.n_nodes,
	                             &row->cfg, eb);
	if (err == GS_OK) {
		constraint_shares(&vb, row);
		err = gs_trace_bench_run(&vb, eb);
	}
	if (err == GS_OK)
		figures(&vb, row);
	gs_trace_bench_fini(&vb);
	return err;
}

gs_err gs_trace_family_run(struct gs_trace_family *f, struct gs_errbuf *eb)
{
	const struct gs_trace_bench *b = f->base;

	if (policy_index(b, GS_TRACE_POLICY_FGD) < 0 ||
	    policy_index(b, GS_TRACE_POLICY_GPUSLICE) < 0)
		return gs_fail(eb, GS_ERR_INVALID,
		               "variant family: the policies must include fgd and gpuslice");
	if (f->hi >= GS_TRACE_FAMILY_SIZE || f->lo > f->hi)
		return gs_fail(eb, GS_ERR_INVALID,
		               "variant family: variants %u-%u outside 0-%d",
		               f->lo, f->hi, GS_TRACE_FAMILY_SIZE - 1);
	f->row = calloc(f->hi - f->lo + 1, sizeof(*f->row));
	if (f->row == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "variant family: out of memory");
	f->n = 0;
	for (unsigned i = f->lo; i <= f->hi; i++) {
		struct gs_trace_family_row *row = &f->row[f->n];
		gs_err err;

		row->index = i;
		gs_trace_family_variant(i, &row->cfg);
		gs_trace_family_name(i, &row->cfg, row->name,
		                     sizeof(row->name));
		row->scarce = row->cfg.law == GS_TRACE_LAW_SCARCE
		                  ? gs_trace_variant_scarce_model(
		                        b->nodes, b->n_nodes, &row->cfg)
		                  : -1;
		fprintf(stderr, "gpuslice bench trace: family variant %s\n",
		        row->name);
		err = run_variant(b, row, eb);
		if (err != GS_OK)
			return err;
		f->n++;
	}
	return GS_OK;
}

void gs_trace_family_fini(struct gs_trace_family *f)
{
	free(f->row);
	f->row = NULL;
	f->n = 0;
}
