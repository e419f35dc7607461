/*
 * trace_family_report.c - the figures of a variant family run
 * (trace_family.h): per variant, unallocated GPU % of FGD, gpuslice and
 * the best other policy at arrival 100, and gpuslice - FGD at 90..130
 * (mean over seeds, and the worst seed at 100); then the family's worst
 * case, one line per measure, which `make bench` and the tests read:
 *
 *   family worst case at 100: gpuslice - FGD <= +0.03 (v21:...), ...
 */
#include "trace_family.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>

#define L100 1 /* index of arrival 100 in the levels */

/* Which row has the largest delta (or worst-seed delta) at level k. */
static size_t worst_row(const struct gs_trace_family *f, size_t k, bool seed)
{
	size_t w = 0;

	for (size_t r = 1; r < f->n; r++) {
		double a = seed ? f->row[r].lv[k].delta_worst
		                : f->row[r].lv[k].delta;
		double b = seed ? f->row[w].lv[k].delta_worst
		                : f->row[w].lv[k].delta;
		if (!isnan(a) && (isnan(b) || a > b))
			w = r;
	}
	return w;
}

static const char *policy_display(int p)
{
	return p < 0 ? "-" : gs_trace_policy_display((enum gs_trace_policy)p);
}

void gs_trace_family_print_text(const struct gs_trace_family *f)
{
	const struct gs_trace_bench *b = f->base;
	size_t within = 0, below = 0, curve = 0;
	double mean = 0, worst_curve = -INFINITY;
	size_t wc_row = 0, wc_k = 0, w, ws;

	if (f->n == 0)
		return;
	printf("Variant family %u-%u of %d (docs/placement.md), %zu seed%s: unallocated GPU %%, mean over seeds; delta = gpuslice - FGD\n",
	       f->lo, f->hi, GS_TRACE_FAMILY_SIZE, b->n_seeds,
	       b->n_seeds == 1 ? "" : "s");
	printf("%-26s %5s %6s | %6s %8s %6s %-10s | %6s %6s %6s %6s %6s | %6s\n",
	       "variant", "con%", "scarc%", "FGD", "gpuslice", "best",
	       "(policy)", "d90", "d100", "d110", "d120", "d130", "worst");
	for (size_t r = 0; r < f->n; r++) {
		const struct gs_trace_family_row *row = &f->row[r];
		const struct gs_trace_family_level *m = &row->lv[L100];

		printf("%-26s %5.1f %6.1f | %6.2f %8.2f %6.2f %-10s |",
		       row->name, row->constrained, row->on_scarce, m->fgd,
		       m->gsl, m->base, policy_display(m->base_policy));
		for (size_t k = 0; k < GS_TRACE_FAMILY_LEVELS; k++) {
			double d = row->lv[k].delta;
			printf(" %+6.2f", d);
			if (!isnan(d) && d > worst_curve) {
				worst_curve = d;
				wc_row = r;
				wc_k = k;
			}
			curve += !isnan(d) && d <= 0.05;
		}
		printf(" | %+6.2f\n", m->delta_worst);
		mean += m->delta;
		within += m->delta <= 0.05;
		below += m->delta < 0;
	}
	mean /= (double)f->n;
	w = worst_row(f, L100, false);
	ws = worst_row(f, L100, true);
	printf("family worst case at 100: gpuslice - FGD <= %+.2f (%s; mean of %zu seeds), worst single seed %+.2f (%s); mean %+.2f; %zu/%zu variants within +0.05, %zu/%zu below FGD\n",
	       f->row[w].lv[L100].delta, f->row[w].name, b->n_seeds,
	       f->row[ws].lv[L100].delta_worst, f->row[ws].name, mean, within,
	       f->n, below, f->n);
	printf("family worst case at 90-130: gpuslice - FGD <= %+.2f (%s at %d); %zu/%zu (variant, level) pairs within +0.05\n",
	       worst_curve, f->row[wc_row].name,
	       gs_trace_family_level(wc_k), curve,
	       f->n * GS_TRACE_FAMILY_LEVELS);
}

gs_err gs_trace_family_print_json(const struct gs_trace_family *f,
                                  struct gs_errbuf *eb)
{
	json_t *root = json_object(), *arr = json_array();
	char *s;

	if (root == NULL || arr == NULL)
		goto nomem;
	for (size_t r = 0; r < f->n; r++) {
		const struct gs_trace_family_row *row = &f->row[r];
		json_t *v = json_pack(
		    "{s:i,s:s,s:i,s:f,s:i,s:f,s:i,s:f,s:f,s:i}", "index",
		    (int)row->index, "name", row->name, "law", (int)row->cfg.law,
		    "constrain_pct", row->cfg.constrain_pct, "max_models",
		    (int)row->cfg.max_models, "gang_pct", row->cfg.gang_pct,
		    "gangs", (int)row->cfg.gangs, "constrained_pct",
		    row->constrained, "on_scarce_pct",
		    isnan(row->on_scarce) ? -1.0 : row->on_scarce,
		    "scarce_model", row->scarce);
		json_t *lvs = json_array();

		if (v == NULL || lvs == NULL ||
		    json_array_append_new(arr, v) != 0 ||
		    json_object_set_new(v, "levels", lvs) != 0)
			goto nomem;
		for (size_t k = 0; k < GS_TRACE_FAMILY_LEVELS; k++) {
			const struct gs_trace_family_level *m = &row->lv[k];
			json_t *e = json_pack(
			    "{s:i,s:f,s:f,s:f,s:s,s:f,s:f}", "arrived_pct",
			    gs_trace_family_level(k), "fgd",
			    isnan(m->fgd) ? -1.0 : m->fgd, "gpuslice",
			    isnan(m->gsl) ? -1.0 : m->gsl, "best_baseline",
			    isnan(m->base) ? -1.0 : m->base, "best_policy",
			    m->base_policy < 0
			        ? "-"
			        : gs_trace_policy_name(
			              (enum gs_trace_policy)m->base_policy),
			    "delta_mean", isnan(m->delta) ? 0.0 : m->delta,
			    "delta_worst_seed",
			    isnan(m->delta_worst) ? 0.0 : m->delta_worst);
			if (e == NULL || json_array_append_new(lvs, e) != 0)
				goto nomem;
		}
	}
	if (json_object_set_new(root, "variants", arr) != 0) {
		arr = NULL;
		goto nomem;
	}
	s = json_dumps(root, JSON_INDENT(1));
	json_decref(root);
	if (s == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	puts(s);
	free(s);
	return GS_OK;
nomem:
	json_decref(arr);
	json_decref(root);
	return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
}
