/*
 * place.c - gs_place(): the best-first search over the summary tree for
 * the first node that really fits (place_int.h, "Search"), the frag
 * policy's scorer, and the answer; when nothing fits, explain.c says why.
 */
#include "place_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- the answer -------------------------------------------------------- */

static void fill_result(const struct prep *p, const struct search *s, int node,
                        struct gs_place_result *out)
{
	out->n = p->n_orig;
	for (int k = 0; k < p->n_orig; k++) {
		int src = p->n == 1 ? 0 : k;

		out->target[k].node = node;
		out->target[k].gpu = s->best[src][0];
		out->target[k].inst = s->best[src][1];
	}
}

/*
 * The tree's version of node_may_fit(): bounds over a whole subtree,
 * using what prep_tree_checks() prepared.
 */
static bool tree_may_fit(const struct gs_place_inv *inv, const struct prep *p,
                         int t)
{
	const struct tnode *d = &inv->tree[t];

	if (p->n_whole > d->max_empty ||
	    (p->n_layered > 0 && d->max_layered == 0))
		return false;
	for (int k = 0; k < p->n_qcheck; k++)
		if (!(inv->tq[t].row[p->qcheck[k].m][p->qcheck[k].i] >>
		          p->qcheck[k].j &
		      1))
			return false;
	if (p->n_groups > 0) {
		const uint64_t *keys =
		    inv->tkeys + (size_t)t * (size_t)inv->kwords;

		for (int g = 0; g < p->n_groups; g++) {
			uint64_t any = 0;

			for (int w = 0; w < inv->kwords && w < 4; w++)
				any |= keys[w] & p->group_mask[g][w];
			if (any == 0)
				return false;
		}
	}
	for (int c = CLS_TS; c <= CLS_MPS; c++) {
		if (p->n_frac[c] == 0)
			continue;
		if (p->max_mib[c] > d->max_free_mib[CLS_EMPTY] &&
		    p->max_mib[c] > d->max_free_mib[c])
			return false;
		if (p->max_c[c] > d->max_free_c[CLS_EMPTY] &&
		    p->max_c[c] > d->max_free_c[c])
			return false;
		if (p->n > 1 &&
		    (p->sum_mib[c] > (uint64_t)d->max_sum_mib[c] +
		                         d->max_sum_mib[CLS_EMPTY] ||
		     p->sum_c[c] > d->max_sum_c[c] + d->max_sum_c[CLS_EMPTY]))
			return false;
	}
	return true;
}

struct tquery {
	const struct gs_place_inv *inv;
	const struct prep *p;
	int best; /* node, -1 until one fits */
	int64_t best_load;
	long *budget;
	bool gave_up;
	bool nomem;
	struct gs_place_result *out;
};

static void fill_result(const struct prep *p, const struct search *s, int node,
                        struct gs_place_result *out);

/* An entry of the best-first search: a subtree, its best load, its start. */
struct tentry {
	int64_t edge;
	int lo;
	int t;
};

/* Whether a comes out of the queue before b. */
static bool tentry_before(const struct tentry *a, const struct tentry *b,
                          bool binpack)
{
	if (a->edge != b->edge)
		return binpack ? a->edge > b->edge : a->edge < b->edge;
	return a->lo < b->lo;
}

/* A queue that starts on the stack and moves to the heap if it grows. */
#define TQ_STACK 256

struct tqueue {
	struct tentry *h;
	int n, cap;
	bool failed; /* out of host memory */
	struct tentry first[TQ_STACK];
};

static void tq_push(struct tqueue *q, struct tentry e, bool binpack)
{
	struct tentry *h;
	int i;

	if (q->n == q->cap) {
		h = malloc(2 * (size_t)q->cap * sizeof(*h));
		if (h == NULL) {
			q->failed = true;
			return;
		}
		memcpy(h, q->h, (size_t)q->n * sizeof(*h));
		if (q->h != q->first)
			free(q->h);
		q->h = h;
		q->cap *= 2;
	}
	h = q->h;
	i = q->n++;
	while (i > 0 && tentry_before(&e, &h[(i - 1) / 2], binpack)) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = e;
}

static struct tentry tq_pop(struct tqueue *q, bool binpack)
{
	struct tentry *h = q->h, top = h[0], last = h[--q->n];
	int *n = &q->n, i = 0;

	for (;;) {
		int c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && tentry_before(&h[c + 1], &h[c], binpack))
			c++;
		if (!tentry_before(&h[c], &last, binpack))
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n > 0)
		h[i] = last;
	return top;
}

/*
 * Best-first search over the tree: subtrees come out of a priority queue
 * best load first (binpack: highest, spread: lowest; equal loads: lowest
 * start index), so the first node that fits is the answer: every node
 * with a better load, or an equal load and a lower index, sits in a
 * subtree that came out earlier. Subtrees whose bounds rule every node
 * out are dropped.
 */
static void tree_search(struct tquery *q)
{
	const struct gs_place_inv *inv = q->inv;
	bool binpack = q->p->policy != GS_PLACE_SPREAD;
	int m = q->p->edge;
	struct tentry e = {.t = 1, .lo = 0};
	struct tqueue tq;

	tq.h = tq.first;
	tq.n = 0;
	tq.cap = TQ_STACK;
	tq.failed = false;
	e.edge = binpack ? inv->tree[1].max_load[m] : inv->tree[1].min_load[m];
	if (inv->tree[1].any && inv->tree[1].max_load[m] != NO_LOAD_MAX &&
	    tree_may_fit(inv, q->p, 1))
		tq_push(&tq, e, binpack);
	while (tq.n > 0 && !tq.failed) {
		int t, width = inv->tsize;

		e = tq_pop(&tq, binpack);
		t = e.t;
		if (t >= inv->tsize) {
			int node = t - inv->tsize;
			struct search s;

			if (node >= inv->n_nodes ||
			    !node_may_fit(inv, q->p, node))
				continue;
			gs__place_search_init(&s, inv, q->p, q->budget);
			gs__place_solve_node(&s, node);
			q->gave_up |= s.exhausted;
			if (!s.found)
				continue;
			q->best = node;
			q->best_load = inv->sum[node].load;
			fill_result(q->p, &s, node, q->out);
			break;
		}
		for (int u = t; u > 1; u /= 2)
			width /= 2;
		for (int c = 0; c < 2; c++) {
			const struct tnode *d = &inv->tree[2 * t + c];
			struct tentry ch = {.t = 2 * t + c,
			                    .lo = e.lo + c * width / 2};

			if (!d->any || d->max_load[m] == NO_LOAD_MAX ||
			    !tree_may_fit(inv, q->p, ch.t))
				continue;
			ch.edge = binpack ? d->max_load[m] : d->min_load[m];
			tq_push(&tq, ch, binpack);
		}
	}
	q->nomem = tq.failed;
	if (tq.h != tq.first)
		free(tq.h);
}

static gs_err no_fit_gave_up(const struct prep *p, struct gs_errbuf *eb)
{
	return gs_fail(eb, GS_ERR_NO_FIT,
	               "no placement found for the %d slices within the search budget (%d steps); the gang may fit in a way the search did not reach",
	               p->n_orig, GS_PLACE_SEARCH_BUDGET);
}

int gs_place_item_milli(const struct gs_place_item *it,
                        uint64_t gpu_memory_bytes)
{
	int64_t milli = 0;

	switch (it->kind) {
	case GS_PLACE_WHOLE:
		return GS_TRACE_MILLI;
	case GS_PLACE_MIG:
		return -1;
	case GS_PLACE_FRACTION:
		break;
	}
	if (it->compute_pct > 0)
		milli = (int64_t)it->compute_pct * 10;
	if (gpu_memory_bytes > 0) {
		/* Rounded down, as score_frag rounds a GPU's free share:
		 * whatever fits in bytes fits in milli-GPU. */
		uint64_t m = it->memory_bytes > gpu_memory_bytes
		                 ? gpu_memory_bytes
		                 : it->memory_bytes;
		int64_t mem = (int64_t)(m * GS_TRACE_MILLI / gpu_memory_bytes);

		if (mem > milli)
			milli = mem;
	}
	if (milli < 1)
		milli = 1;
	if (milli > GS_TRACE_MILLI)
		milli = GS_TRACE_MILLI;
	return (int)milli;
}

/*
 * FRAG: the scorer of the request, or one built from the request's own
 * slices (*own, the caller frees it) when it names none, each counted by
 * gs_place_item_milli on the inventory's first GPU.
 */
static gs_err frag_scorer(const struct gs_place_inv *inv,
                          const struct gs_place_request *req, struct prep *p,
                          struct gs_trace_scorer **own, struct gs_errbuf *eb)
{
	struct gs_trace_pod pods[GS_PLACE_MAX_GANG];

	for (int k = 0; k < req->n; k++) {
		const struct gs_place_item *it = &req->item[k];
		int milli = gs_place_item_milli(
		    it, inv->n_gpus > 0 ? inv->gpu[0].mem_total : 0);

		if (it->kind == GS_PLACE_MIG)
			p->has_mig = true;
		pods[k] = (struct gs_trace_pod){
		    .gpu_milli = (uint16_t)(milli > 0 ? milli : GS_TRACE_MILLI),
		    .num_gpu = 1};
	}
	p->scorer = req->scorer;
	if (p->scorer != NULL || p->has_mig)
		return GS_OK;
	{
		gs_err err =
		    gs_trace_scorer_new(pods, (size_t)req->n, NULL, 0, own, eb);
		p->scorer = *own;
		return err;
	}
}

gs_err gs_place(const struct gs_place_inv *inv,
                const struct gs_place_request *req, struct gs_place_result *out,
                struct gs_errbuf *eb)
{
	struct gs_trace_scorer *own = NULL; /* FRAG's default scorer */
	struct prep p;
	int best_node = -1;
	long budget = GS_PLACE_SEARCH_BUDGET;
	bool gave_up = false;
	gs_err err;

	memset(out, 0, sizeof(*out));
	out->repartition_gpu = -1;
	err = gs__place_prepare(req, &p, eb);
	if (err != GS_OK)
		return err;
	if (p.policy == GS_PLACE_FRAG) {
		err = frag_scorer(inv, req, &p, &own, eb);
		if (err != GS_OK)
			return err;
	}
	{
		struct tquery q = {.inv = inv,
		                   .p = &p,
		                   .best = -1,
		                   .budget = &budget,
		                   .out = out};
		tree_search(&q);
		gs_trace_scorer_free(own);
		p.scorer = NULL; /* gs__place_explain() scores as binpack */
		if (q.nomem && q.best < 0)
			return gs_fail(eb, GS_ERR_NOMEM,
			               "no memory for the placement search");
		best_node = q.best;
		gave_up = q.gave_up;
	}
	if (best_node >= 0) {
		out->exhausted = gave_up;
		return GS_OK;
	}
	out->exhausted = gave_up;
	if (gave_up)
		return no_fit_gave_up(&p, eb);
	return gs__place_explain(inv, &p, out, eb);
}
