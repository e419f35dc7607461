/*
 * explain.c - why nothing fits: walks the inventory again applying the
 * filters one at a time (selector, device type, sharing mode, memory,
 * compute) and reports the first that leaves no candidate, with the best
 * candidate before it and, for MIG, a repartition hint (gs/migplan.h).
 */
#include "place_int.h"

#include "gs/migplan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- why nothing fits ------------------------------------------------- */

static void fmt_mem(uint64_t b, char *buf, size_t size)
{
	if (b >= GIB)
		snprintf(buf, size, "%.1f GiB", (double)b / (double)GIB);
	else if (b % MIB == 0)
		snprintf(buf, size, "%llu MiB", (unsigned long long)(b / MIB));
	else
		snprintf(buf, size, "%.1f MiB", (double)b / (double)MIB);
}

static gs_err no_fit(struct gs_errbuf *eb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static gs_err no_fit(struct gs_errbuf *eb, const char *fmt, ...)
{
	char msg[GS_ERRBUF_SIZE];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return gs_fail(eb, GS_ERR_NO_FIT, "%s", msg);
}

static gs_err no_gpu_selected(const struct gs_place_inv *inv,
                              const struct prep *p, const char *what,
                              struct gs_errbuf *eb)
{
	char sel[GS_SPEC_UUID_MAX + 16];

	if (p->sel == NULL)
		return no_fit(eb, "there is no %s here", what);
	gs_format_gpu_selector(p->sel, sel, sizeof(sel));
	return no_fit(eb, "no %s matches gpu=%s", what, sel);
}

static const char *other_mode(int mode)
{
	switch (mode) {
	case GS_MODE_TIMESLICE:
		return "mps";
	case GS_MODE_MPS:
		return "timeslice";
	case GS_MODE_MIG_TIMESLICE:
		return "mig+mps";
	default:
		return "mig+timeslice";
	}
}

/* What explain_fraction() learns while it walks the devices. */
struct fstats {
	int n_sel, n_dev, n_excl, n_other, n_ok;
	int best_mem_g, best_mem_i, best_c_g, best_c_i;
	uint64_t best_mem;
	int best_c;
};

/* The exact walk over the devices of one node. */
static void fraction_node(const struct gs_place_inv *inv, const struct prep *p,
                          const struct pitem *it, int node, bool count,
                          struct fstats *f)
{
	const struct pnode *nd = &inv->node[node];

	for (int gi = nd->first_gpu; gi < nd->first_gpu + nd->n_gpus; gi++) {
		const struct pgpu *g = &inv->gpu[gi];
		int first = it->layered ? g->first_inst : -1;
		int last = it->layered ? g->first_inst + g->n_inst : 0;

		if (!gpu_selected(p, g))
			continue;
		if (!it->layered) {
			if (!uuid_selected(p, g, NULL))
				continue;
			f->n_sel += count;
			if (g->mig)
				continue;
		}
		for (int ii = first; ii < last; ii++) {
			uint64_t total, used, free_mem;
			int c_used, n_slices, mode;
			bool excl;

			if (ii >= 0) {
				const struct pinst *in = &inv->inst[ii];

				if (!uuid_selected(p, g, in) ||
				    (it->n_keys > 0 && !key_match(it, in->key)))
					continue;
				f->n_sel += count;
				total = in->mem_total;
				used = in->mem_used;
				c_used = in->c_used;
				n_slices = in->n_slices;
				mode = in->mode;
				excl = in->exclusive;
			} else {
				total = g->mem_total;
				used = g->mem_used;
				c_used = g->c_used;
				n_slices = g->n_slices;
				mode = g->mode;
				excl = g->whole;
			}
			f->n_dev += count;
			if (excl) {
				f->n_excl += count;
				continue;
			}
			if (n_slices > 0 && mode != it->mode) {
				f->n_other += count;
				continue;
			}
			f->n_ok += count;
			free_mem = total - used;
			if (f->best_mem_g < 0 || free_mem > f->best_mem) {
				f->best_mem = free_mem;
				f->best_mem_g = gi;
				f->best_mem_i = ii;
			}
			if (free_mem >= it->mem &&
			    (f->best_c_g < 0 || 100 - c_used > f->best_c)) {
				f->best_c = 100 - c_used;
				f->best_c_g = gi;
				f->best_c_i = ii;
			}
		}
	}
}

/*
 * Walks every node; with no selector and a slice for whole GPUs, the
 * counts come from the node summaries and only nodes whose summary could
 * beat the best candidate so far are walked (the result is the same as
 * walking them all: a later device replaces the best only when strictly
 * better).
 */
static void fraction_stats(const struct gs_place_inv *inv, const struct prep *p,
                           const struct pitem *it, struct fstats *f)
{
	bool fast = p->sel == NULL && !it->layered;
	int cls = it->layered ? CLS_TS : cls_of(it->mode);

	memset(f, 0, sizeof(*f));
	f->best_mem_g = f->best_c_g = -1;
	f->best_mem_i = f->best_c_i = -1;
	f->best_c = -1;
	for (int n = 0; n < inv->n_nodes; n++) {
		const struct nsum *sm = &inv->sum[n];
		uint64_t max_mem;
		int max_c;

		if (!fast) {
			fraction_node(inv, p, it, n, true, f);
			continue;
		}
		f->n_sel += inv->node[n].n_gpus;
		f->n_dev += inv->node[n].n_plain;
		f->n_excl += inv->node[n].n_whole;
		f->n_other +=
		    inv->node[n].n_cls[cls == CLS_TS ? CLS_MPS : CLS_TS];
		f->n_ok +=
		    inv->node[n].n_cls[CLS_EMPTY] + inv->node[n].n_cls[cls];
		max_mem = (uint64_t)(sm->max_free_mib[CLS_EMPTY] >
		                             sm->max_free_mib[cls]
		                         ? sm->max_free_mib[CLS_EMPTY]
		                         : sm->max_free_mib[cls]) *
		          MIB;
		max_c = sm->max_free_c[CLS_EMPTY] > sm->max_free_c[cls]
		            ? sm->max_free_c[CLS_EMPTY]
		            : sm->max_free_c[cls];
		if (sm->n_empty == 0 && inv->node[n].n_cls[cls] == 0)
			continue;
		if (f->best_mem_g >= 0 && max_mem <= f->best_mem &&
		    (max_mem < it->mem || max_c <= f->best_c))
			continue;
		fraction_node(inv, p, it, n, false, f);
	}
}

/*
 * A fractional slice (or a same-gpu gang's sum) on GPUs, or a layered one
 * on instances: the filters in order, the first that leaves nothing is
 * the reason.
 */
static gs_err explain_fraction(const struct gs_place_inv *inv,
                               const struct prep *p, const struct pitem *it,
                               const char *subject, struct gs_errbuf *eb)
{
	const char *noun = it->layered ? "MIG instance" : "GPU";
	char a[48], b[48], dev[GS_PLACE_NAME_MAX + 64];
	struct fstats f;

	fraction_stats(inv, p, it, &f);
	if (it->layered && f.n_sel == 0 && it->profile[0] != '\0')
		return no_fit(eb, "no MIG instance of profile %s exists%s",
		              it->profile,
		              p->sel ? " on the selected GPUs" : "");
	if (f.n_sel == 0)
		return no_gpu_selected(inv, p, noun, eb);
	if (f.n_dev == 0)
		return no_fit(eb,
		              "every GPU%s is in MIG mode: a %s slice needs a GPU without MIG (or mode mig+%s)",
		              p->sel ? " selected" : "", gs_mode_name(it->mode),
		              gs_mode_name(it->mode));
	if (f.n_ok == 0)
		return no_fit(eb,
		              "no %s can take a %s slice: %d %s, %d running %s slices",
		              noun, gs_mode_name(it->mode), f.n_excl,
		              it->layered ? "held by MIG slices" : "held whole",
		              f.n_other, other_mode(it->mode));
	if (f.best_mem < it->mem) {
		fmt_mem(it->mem, a, sizeof(a));
		fmt_mem(f.best_mem, b, sizeof(b));
		gs__place_dev_name(inv, f.best_mem_g, f.best_mem_i, dev,
		                   sizeof(dev));
		return no_fit(eb,
		              "no %s has %s free memory%s (best: %s with %s)",
		              noun, a, subject, dev, b);
	}
	if (f.best_c < it->c) {
		gs__place_dev_name(inv, f.best_c_g, f.best_c_i, dev,
		                   sizeof(dev));
		if (it->mem == 0)
			return no_fit(eb,
			              "no %s has %d%% free compute%s (best: %s with %d%%)",
			              noun, it->c, subject, dev, f.best_c);
		fmt_mem(it->mem, a, sizeof(a));
		return no_fit(eb,
		              "no %s with %s free memory has %d%% free compute%s (best: %s with %d%%)",
		              noun, a, it->c, subject, dev, f.best_c);
	}
	return gs_fail(eb, GS_ERR_INTERNAL,
	               "no %s fits, yet every filter passes", noun);
}

static gs_err explain_whole(const struct gs_place_inv *inv,
                            const struct prep *p, struct gs_errbuf *eb)
{
	int n_sel = 0, n_plain = 0, least = -1;
	char dev[GS_PLACE_NAME_MAX + 64];

	for (int n = 0; n < inv->n_nodes; n++) {
		const struct pnode *nd = &inv->node[n];

		if (p->sel == NULL) {
			/* Only a node whose least used GPU beats the best
			 * so far can hold a better one. */
			n_sel += nd->n_gpus;
			n_plain += nd->n_plain;
			if (nd->min_slices < 0 ||
			    (least >= 0 &&
			     nd->min_slices >= inv->gpu[least].n_slices))
				continue;
		}
		for (int gi = nd->first_gpu; gi < nd->first_gpu + nd->n_gpus;
		     gi++) {
			const struct pgpu *g = &inv->gpu[gi];

			if (p->sel != NULL &&
			    (!gpu_selected(p, g) || !uuid_selected(p, g, NULL)))
				continue;
			n_sel += p->sel != NULL;
			if (g->mig)
				continue;
			n_plain += p->sel != NULL;
			if (least < 0 || g->n_slices < inv->gpu[least].n_slices)
				least = gi;
		}
	}
	if (n_sel == 0)
		return no_gpu_selected(inv, p, "GPU", eb);
	if (n_plain == 0)
		return no_fit(eb,
		              "every GPU%s is in MIG mode: a whole-GPU slice needs a GPU without MIG",
		              p->sel ? " selected" : "");
	gs__place_dev_name(inv, least, -1, dev, sizeof(dev));
	return no_fit(eb,
	              "no GPU is free for a whole-GPU slice (all %d are in use; least used: %s with %d slice%s)",
	              n_plain, dev, inv->gpu[least].n_slices,
	              inv->gpu[least].n_slices == 1 ? "" : "s");
}

/* "1g.5gb x2 + 3g.20gb" for the MIG slices a request asks for. */
static void fmt_groups(const struct prep *p, const int *count, char *buf,
                       size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int g = 0; g < p->n_groups && len < size; g++) {
		int n = count ? count[g] : p->group_count[g];
		int w;

		if (n <= 0)
			continue;
		w = snprintf(buf + len, size - len, "%s%s", len ? " + " : "",
		             p->group_name[g]);
		if (w > 0)
			len += (size_t)w;
		if (n > 1 && len < size) {
			w = snprintf(buf + len, size - len, " x%d", n);
			if (w > 0)
				len += (size_t)w;
		}
	}
}

/*
 * Could re-partitioning one GPU make every MIG slice of the request? Asks
 * the MIG planner about up to HINT_PLANNER_CALLS GPUs that have enough
 * free memory slices, in index order. Writes a clause for the message.
 */
static void repartition_hint(const struct gs_place_inv *inv,
                             const struct prep *p, struct gs_place_result *out,
                             char *buf, size_t size)
{
	const char *what = p->n_orig > 1 ? "them" : "one";
	int calls = 0;
	bool capped = false;

	buf[0] = '\0';
	for (int gi = 0; gi < inv->n_gpus; gi++) {
		const struct pgpu *g = &inv->gpu[gi];
		struct gs_mig_instance cur[GS_MIGPLAN_MAX_INSTANCES];
		struct gs_mig_demand dem[GS_PLACE_MAX_GANG];
		struct gs_mig_plan plan;
		int n_cur = 0, need = 0, busy = 0;
		bool ok = true;
		char dev[GS_PLACE_NAME_MAX + 64];

		if (g->model == NULL || !gpu_selected(p, g) ||
		    !uuid_selected(p, g, NULL))
			continue;
		if (!g->mig && (g->n_slices > 0 || g->whole))
			continue;
		for (int k = 0; k < p->n_groups && ok; k++) {
			dem[k].profile =
			    gs_catalog_profile(g->model, p->group_name[k]);
			dem[k].count = p->group_count[k];
			ok = dem[k].profile != NULL;
			if (ok)
				need += dem[k].profile->memory_slices *
				        dem[k].count;
		}
		if (!ok)
			continue;
		for (int i = g->first_inst;
		     g->mig && i < g->first_inst + g->n_inst &&
		     n_cur < GS_MIGPLAN_MAX_INSTANCES;
		     i++) {
			const struct pinst *in = &inv->inst[i];

			cur[n_cur].profile = in->profile;
			cur[n_cur].start = in->start;
			cur[n_cur].in_use = in->exclusive || in->n_slices > 0;
			if (cur[n_cur].in_use)
				busy += in->profile->memory_slices;
			n_cur++;
		}
		if (g->model->memory_slices - busy < need)
			continue;
		if (calls++ >= HINT_PLANNER_CALLS) {
			capped = true;
			break;
		}
		if (gs_migplan_solve(g->model, cur, n_cur, dem, p->n_groups,
		                     &plan, NULL) != GS_OK ||
		    plan.n_unmet > 0)
			continue;
		out->repartition_gpu = gi;
		gs__place_dev_name(inv, gi, -1, dev, sizeof(dev));
		if (g->mig)
			snprintf(buf, size,
			         "; a re-partition of %s could make %s (gpuslice plan)",
			         dev, what);
		else
			snprintf(buf, size,
			         "; putting %s in MIG mode could make %s", dev,
			         what);
		return;
	}
	if (capped)
		snprintf(buf, size,
		         "; none of the first %d GPUs checked could make %s by re-partitioning",
		         HINT_PLANNER_CALLS, what);
	else
		snprintf(buf, size,
		         "; no GPU could make %s by re-partitioning either",
		         what);
}

static const char *model_with_profile(const char *profile)
{
	for (int i = 0; i < gs_catalog_count(); i++)
		if (gs_catalog_profile(gs_catalog_get(i), profile) != NULL)
			return gs_catalog_get(i)->name;
	return "?";
}

/* MIG slices: one alone, or a same-parent gang. */
static gs_err explain_mig(const struct gs_place_inv *inv, const struct prep *p,
                          struct gs_place_result *out, struct gs_errbuf *eb)
{
	int n_models = 0, n_exist = 0, best = -1, best_missing = 0;
	int best_have[GS_PLACE_MAX_GANG] = {0};
	char want[160], hint[256], miss[160], dev[GS_PLACE_NAME_MAX + 64];

	for (int gi = 0; gi < inv->n_gpus; gi++) {
		const struct pgpu *g = &inv->gpu[gi];
		int have[GS_PLACE_MAX_GANG] = {0}, missing = 0;
		bool all = g->model != NULL;

		if (!gpu_selected(p, g))
			continue;
		for (int k = 0; k < p->n_groups && all; k++)
			all = gs_catalog_profile(g->model, p->group_name[k]) !=
			      NULL;
		if (!all)
			continue;
		n_models++;
		for (int i = g->first_inst; i < g->first_inst + g->n_inst;
		     i++) {
			const struct pinst *in = &inv->inst[i];

			if (!uuid_selected(p, g, in))
				continue;
			for (int k = 0; k < p->n; k++) {
				const struct pitem *it = &p->it[k];

				if (!key_match(it, in->key))
					continue;
				n_exist++;
				if (!in->exclusive && in->n_slices == 0)
					have[it->group]++;
				break;
			}
		}
		if (!g->mig)
			continue;
		for (int k = 0; k < p->n_groups; k++)
			if (have[k] < p->group_count[k])
				missing += p->group_count[k] - have[k];
		if (best < 0 || missing < best_missing) {
			best = gi;
			best_missing = missing;
			memcpy(best_have, have, sizeof(have));
		}
	}
	fmt_groups(p, NULL, want, sizeof(want));
	if (n_models == 0) {
		if (p->n_groups == 1)
			return no_fit(eb,
			              "no GPU%s has MIG profile %s (it is a profile of %s)",
			              p->sel ? " selected" : " here",
			              p->group_name[0],
			              model_with_profile(p->group_name[0]));
		return no_fit(eb, "no GPU%s supports all of %s",
		              p->sel ? " selected" : " here", want);
	}
	repartition_hint(inv, p, out, hint, sizeof(hint));
	if (p->n_orig == 1)
		return no_fit(eb, "no free %s MIG instance (%s)%s", want,
		              n_exist == 0 ? "none exists" : "all are in use",
		              hint);
	if (best < 0)
		return no_fit(eb, "no GPU in MIG mode has %s%s", want, hint);
	for (int k = 0; k < p->n_groups; k++)
		best_have[k] = p->group_count[k] - best_have[k];
	fmt_groups(p, best_have, miss, sizeof(miss));
	gs__place_dev_name(inv, best, -1, dev, sizeof(dev));
	return no_fit(eb,
	              "no GPU has free MIG instances for %s (best: %s, missing %s)%s",
	              want, dev, miss, hint);
}

/* Whether one slice of the request fits anywhere on its own. */
static bool fits_alone(const struct gs_place_inv *inv, const struct prep *p1)
{
	long budget = GS_PLACE_SEARCH_BUDGET;
	struct search s;

	for (int n = 0; n < inv->n_nodes; n++) {
		if (!node_may_fit(inv, p1, n))
			continue;
		gs__place_search_init(&s, inv, p1, &budget);
		gs__place_solve_node(&s, n);
		if (s.found)
			return true;
	}
	return false;
}

static void single_of(const struct prep *p, int k, struct prep *p1)
{
	*p1 = *p;
	p1->n = p1->n_orig = 1;
	p1->gang = GS_GANG_SAME_NODE;
	p1->it[0] = p->it[k];
	p1->n_whole = p->it[k].kind == GS_PLACE_WHOLE;
	p1->n_groups = 0;
	if (p->it[k].kind == GS_PLACE_MIG) {
		p1->n_groups = 1;
		p1->group_count[0] = 1;
		p1->group_name[0] = p->it[k].profile;
		p1->it[0].group = 0;
	}
	gs__place_prep_bounds(p1);
}

static gs_err explain_one(const struct gs_place_inv *inv, const struct prep *p,
                          struct gs_place_result *out, struct gs_errbuf *eb)
{
	const struct pitem *it = &p->it[0];
	char subject[48] = "";

	if (p->n_orig > 1)
		snprintf(subject, sizeof(subject),
		         " for the %d slices together", p->n_orig);
	switch (it->kind) {
	case GS_PLACE_WHOLE:
		return explain_whole(inv, p, eb);
	case GS_PLACE_MIG:
		return explain_mig(inv, p, out, eb);
	default:
		return explain_fraction(inv, p, it, subject, eb);
	}
}

/*
 * A same-node gang whose slices each fit alone: the first of the totals
 * (free GPUs, free instances per profile, memory, compute) that no node
 * has, with the node that comes closest; when every total is met
 * somewhere, the slices just do not pack (each must fit on one device).
 */
static gs_err explain_gang(const struct gs_place_inv *inv, const struct prep *p,
                           struct gs_place_result *out, struct gs_errbuf *eb)
{
	uint64_t need_mem = 0;
	int need_c = 0, n_frac = 0;
	int best_whole = -1, best_mem = -1, best_c = -1, roomy = -1;
	uint64_t best_mem_v = 0;
	int best_whole_v = -1, best_c_v = -1;
	char a[48], b[48], node[GS_PLACE_NAME_MAX + 16], besides[64] = "";

	for (int k = 0; k < p->n; k++) {
		struct prep p1;
		struct gs_errbuf one = {0};
		gs_err err;

		single_of(p, k, &p1);
		if (fits_alone(inv, &p1))
			continue;
		err = explain_one(inv, &p1, out, &one);
		return gs_fail(eb, err, "slice %d of %d: %s", k + 1, p->n,
		               gs_errbuf_msg(&one, err));
	}
	for (int k = 0; k < p->n; k++)
		if (p->it[k].kind == GS_PLACE_FRACTION && !p->it[k].layered) {
			need_mem += p->it[k].mem;
			need_c += p->it[k].c;
			n_frac++;
		}
	for (int n = 0; n < inv->n_nodes; n++) {
		const struct nsum *sm = &inv->sum[n];
		uint64_t mem;
		int c, spare = sm->n_empty - p->n_whole;

		if (sm->n_empty > best_whole_v) {
			best_whole_v = sm->n_empty;
			best_whole = n;
		}
		if (spare < 0)
			continue;
		mem = ((uint64_t)sm->sum_free_mib[CLS_TS] +
		       sm->sum_free_mib[CLS_MPS] + sm->sum_free_mib[CLS_EMPTY] -
		       (uint64_t)p->n_whole * sm->min_empty_mib) *
		      MIB;
		c = sm->sum_free_c[CLS_TS] + sm->sum_free_c[CLS_MPS] +
		    sm->sum_free_c[CLS_EMPTY] - 100 * p->n_whole;
		if (best_mem < 0 || mem > best_mem_v) {
			best_mem_v = mem;
			best_mem = n;
		}
		if (mem >= need_mem && (best_c < 0 || c > best_c_v)) {
			best_c_v = c;
			best_c = n;
		}
		if (mem >= need_mem && c >= need_c && roomy < 0 &&
		    node_may_fit(inv, p, n))
			roomy = n;
	}
	if (p->n_whole > 0)
		snprintf(besides, sizeof(besides),
		         ", besides the GPUs for the whole-GPU slices");
	if (best_mem < 0) {
		snprintf(node, sizeof(node), "node %s",
		         inv->node[best_whole].name);
		return no_fit(eb,
		              "no node has %d free GPUs for the whole-GPU slices (best: %s with %d)",
		              p->n_whole, node, best_whole_v);
	}
	if (n_frac > 0 && best_mem_v < need_mem) {
		fmt_mem(need_mem, a, sizeof(a));
		fmt_mem(best_mem_v, b, sizeof(b));
		snprintf(node, sizeof(node), "node %s",
		         inv->node[best_mem].name);
		return no_fit(eb,
		              "no node has %s free memory for the %d fractional slices together (best: %s with %s%s)",
		              a, n_frac, node, b, besides);
	}
	if (n_frac > 0 && best_c_v < need_c) {
		snprintf(node, sizeof(node), "node %s", inv->node[best_c].name);
		return no_fit(eb,
		              "no node has %d%% free compute for the %d fractional slices together (best: %s with %d%%%s)",
		              need_c, n_frac, node, best_c_v, besides);
	}
	if (roomy < 0)
		return no_fit(eb,
		              "no node has free MIG instances and room for all %d slices together",
		              p->n);
	snprintf(node, sizeof(node), "node %s", inv->node[roomy].name);
	return no_fit(eb,
	              "the %d slices do not pack onto any node, although %s has enough free GPUs, memory and compute in total (each slice must fit on one device)",
	              p->n, node);
}

gs_err gs__place_explain(const struct gs_place_inv *inv, const struct prep *p,
                         struct gs_place_result *out, struct gs_errbuf *eb)
{
	if (inv->n_gpus == 0)
		return no_fit(eb, "there are no GPUs in the inventory");
	if (p->n == 1)
		return explain_one(inv, p, out, eb);
	if (p->gang == GS_GANG_SAME_PARENT)
		return explain_mig(inv, p, out, eb);
	return explain_gang(inv, p, out, eb);
}
