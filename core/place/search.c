/*
 * search.c - the search on one node: device state over a partial
 * assignment (deltas, never a copy), the fit checks, the score of an
 * assignment (binpack, spread, frag) and the scan (one slice) or
 * depth-first search (a gang) that finds the node's best assignment.
 */
#include "place_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void gpu_state(const struct search *s, int gi, struct dstate *st)
{
	const struct pgpu *g = &s->inv->gpu[gi];

	st->total = g->mem_total;
	st->used = g->mem_used;
	st->c_used = g->c_used;
	st->n_slices = g->n_slices;
	st->mode = g->mode;
	st->excl = g->whole;
	st->touched = false;
	for (int k = 0; k < s->n_d; k++) {
		const struct delta *d = &s->d[k];

		if (d->gpu != gi || d->inst >= 0)
			continue;
		st->touched = true;
		st->used += d->mem;
		st->c_used += d->c;
		st->n_slices++;
		st->mode = d->mode;
		st->excl |= d->excl;
	}
}

static void inst_state(const struct search *s, int ii, struct dstate *st)
{
	const struct pinst *in = &s->inv->inst[ii];

	st->total = in->mem_total;
	st->used = in->mem_used;
	st->c_used = in->c_used;
	st->n_slices = in->n_slices;
	st->mode = in->mode;
	st->excl = in->exclusive;
	st->touched = false;
	for (int k = 0; k < s->n_d; k++) {
		const struct delta *d = &s->d[k];

		if (d->inst != ii)
			continue;
		st->touched = true;
		st->used += d->mem;
		st->c_used += d->c;
		st->n_slices++;
		st->mode = d->mode;
		st->excl |= d->excl;
	}
}

static bool fraction_fits(const struct dstate *st, const struct pitem *it)
{
	return !st->excl && (st->n_slices == 0 || st->mode == it->mode) &&
	       st->total - st->used >= it->mem && 100 - st->c_used >= it->c;
}

bool gs__place_gpu_fits(const struct search *s, int gi, const struct pitem *it,
                        struct dstate *st)
{
	const struct pgpu *g = &s->inv->gpu[gi];

	if (g->mig || !gpu_selected(s->p, g) || !uuid_selected(s->p, g, NULL))
		return false;
	gpu_state(s, gi, st);
	if (it->kind == GS_PLACE_WHOLE)
		return !st->excl && st->n_slices == 0;
	return fraction_fits(st, it);
}

bool gs__place_inst_fits(const struct search *s, int ii, const struct pitem *it,
                         struct dstate *st)
{
	const struct pinst *in = &s->inv->inst[ii];
	const struct pgpu *g = &s->inv->gpu[in->gpu];

	if (!gpu_selected(s->p, g) || !uuid_selected(s->p, g, in))
		return false;
	if (it->n_keys > 0 && !key_match(it, in->key))
		return false;
	inst_state(s, ii, st);
	if (it->kind == GS_PLACE_MIG)
		return !st->excl && st->n_slices == 0;
	return fraction_fits(st, it);
}

static int64_t leftover(uint64_t total, uint64_t used, int c_used)
{
	return (int64_t)((total - used) * PPM / total) +
	       (int64_t)(100 - c_used) * (PPM / 100);
}

/*
 * Leftover of a MIG GPU (the unit of instances taken whole), from its
 * instances as the deltas leave them, each rounded as gpu_load() does.
 */
static int64_t parent_leftover(const struct search *s, int gi)
{
	const struct pgpu *g = &s->inv->gpu[gi];
	uint64_t mem = 0;
	int64_t bp = 0;

	for (int i = g->first_inst; i < g->first_inst + g->n_inst; i++) {
		const struct pinst *in = &s->inv->inst[i];
		struct dstate st;

		inst_state(s, i, &st);
		if (st.excl) {
			mem += in->mem_total;
			bp += in->bp_share;
		} else {
			mem += st.used;
			bp += st.c_used * in->bp_share / 100;
		}
	}
	return (int64_t)((g->mem_total - mem) * PPM / g->mem_total) +
	       (BP_WHOLE - bp) * (PPM / BP_WHOLE);
}

/*
 * Sum of leftovers over the scoring units the deltas touch: a non-MIG
 * GPU, a shared instance, or the parent of an instance taken whole.
 */
static int64_t score_deltas(const struct search *s)
{
	int64_t sum = 0;

	for (int k = 0; k < s->n_d; k++) {
		const struct delta *d = &s->d[k];
		bool seen = false;
		struct dstate st;

		for (int j = 0; j < k && !seen; j++) {
			const struct delta *e = &s->d[j];

			if (d->inst >= 0 && d->excl)
				seen =
				    e->gpu == d->gpu && e->inst >= 0 && e->excl;
			else if (d->inst >= 0)
				seen = e->inst == d->inst;
			else
				seen = e->gpu == d->gpu && e->inst < 0;
		}
		if (seen)
			continue;
		if (d->inst >= 0 && d->excl) {
			sum += parent_leftover(s, d->gpu);
		} else if (d->inst >= 0) {
			inst_state(s, d->inst, &st);
			sum += leftover(st.total, st.used, st.c_used);
		} else {
			gpu_state(s, d->gpu, &st);
			sum += leftover(st.total, st.used, st.c_used);
		}
	}
	return sum;
}

static bool better(const struct search *s, int64_t score)
{
	if (!s->found)
		return true;
	return s->p->policy != GS_PLACE_SPREAD ? score < s->best_score
	                                       : score > s->best_score;
}

static void push(struct search *s, int k, int gi, int ii)
{
	const struct pitem *it = &s->p->it[k];
	struct delta *d = &s->d[s->n_d++];

	d->gpu = gi;
	d->inst = ii;
	d->mem = it->mem;
	d->c = it->c;
	d->mode = it->mode;
	d->excl = it->kind != GS_PLACE_FRACTION;
	if (it->kind == GS_PLACE_WHOLE) {
		d->mem = s->inv->gpu[gi].mem_total;
		d->c = 100;
	}
	s->cur[k][0] = gi;
	s->cur[k][1] = ii;
}

/*
 * FRAG: the node's free GPU after the deltas into g (n devices). A GPU
 * taken whole has nothing free; otherwise its free share is the smaller
 * of its free memory and free compute, in milli-GPU.
 */
static void frag_state(const struct search *s, uint16_t *g, unsigned *n)
{
	const struct pnode *nd = &s->inv->node[s->node];

	*n = 0;
	for (int gi = nd->first_gpu;
	     gi < nd->first_gpu + nd->n_gpus && *n < GS_TRACE_MAX_DEVS; gi++) {
		struct dstate st;
		int64_t mem, c;

		gpu_state(s, gi, &st);
		if (st.excl || st.total == 0) {
			g[(*n)++] = 0;
			continue;
		}
		mem = (int64_t)((st.total -
		                 (st.used < st.total ? st.used : st.total)) *
		                GS_TRACE_MILLI / st.total);
		c = (int64_t)(100 - st.c_used) * GS_TRACE_MILLI / 100;
		if (c < 0)
			c = 0;
		g[(*n)++] = (uint16_t)(mem < c ? mem : c);
	}
}

/*
 * FRAG: the guard of gs/frag.h over the node's assignments, in the
 * search's order: the candidate of the move from the node's state before
 * the request (s->frag_before) to the state after the deltas, offered to
 * the pick that the replay and the extender use (gs_trace_scorer_pick).
 * Our rank ties (several assignments leave everything the demand needs
 * placeable) go to binpack's least leftover, below one rank unit.
 */
static bool frag_better(struct search *s)
{
	uint16_t g[GS_TRACE_MAX_DEVS];
	struct gs_trace_cand c;
	unsigned n;

	frag_state(s, g, &n);
	gs_trace_scorer_cand(s->p->scorer, &s->frag_before, INT64_MAX / 4, g,
	                     n, 0, 0, &c);
	c.own -= (double)score_deltas(s) * 1e-9;
	return gs_trace_scorer_pick_step(s->p->scorer, &s->frag_pick, &c);
}

static void leaf(struct search *s)
{
	if (s->p->scorer != NULL && !s->p->has_mig) {
		if (!frag_better(s))
			return;
	} else {
		int64_t score = score_deltas(s);
		if (!better(s, score))
			return;
		s->best_score = score;
	}
	s->found = true;
	memcpy(s->best, s->cur, sizeof(s->best));
}

/* Whether two untouched devices are interchangeable for the search. */
static bool same_gpu_state(const struct pgpu *a, const struct pgpu *b)
{
	return a->model == b->model && a->mem_total == b->mem_total &&
	       a->mem_used == b->mem_used && a->c_used == b->c_used &&
	       a->n_slices == b->n_slices && a->mode == b->mode &&
	       a->whole == b->whole &&
	       strcmp(a->model_name, b->model_name) == 0;
}

static bool same_inst_state(const struct pinst *a, const struct pinst *b)
{
	return a->gpu == b->gpu && a->key == b->key &&
	       a->mem_total == b->mem_total && a->mem_used == b->mem_used &&
	       a->c_used == b->c_used && a->n_slices == b->n_slices &&
	       a->mode == b->mode && a->exclusive == b->exclusive &&
	       a->bp_share == b->bp_share;
}

/*
 * Whether GPU g has a free instance for every MIG slice of a same-parent
 * gang (counted per profile name); checked before the search commits the
 * gang's first slice to one of g's instances.
 */
static bool gpu_hosts_gang(const struct search *s, int gi)
{
	const struct pgpu *g = &s->inv->gpu[gi];
	const struct prep *p = s->p;
	int have[GS_PLACE_MAX_GANG] = {0};

	for (int i = g->first_inst; i < g->first_inst + g->n_inst; i++) {
		const struct pinst *in = &s->inv->inst[i];

		if (in->exclusive || in->n_slices > 0)
			continue;
		for (int grp = 0; grp < p->n_groups; grp++) {
			const struct pitem *it = NULL;

			for (int k = 0; k < p->n && it == NULL; k++)
				if (p->it[k].group == grp)
					it = &p->it[k];
			if (it != NULL && key_match(it, in->key)) {
				have[grp]++;
				break;
			}
		}
	}
	for (int grp = 0; grp < p->n_groups; grp++)
		if (have[grp] < p->group_count[grp])
			return false;
	return true;
}

/*
 * Forward check for the search: can the slices from k on still fit on the
 * node's GPUs as the partial assignment leaves them? The same aggregate
 * bounds as node_may_fit(), on exact amounts.
 */
static bool rest_may_fit(const struct search *s, int node, int k)
{
	const struct pnode *nd = &s->inv->node[node];
	uint64_t need_mem[CLS__COUNT] = {0}, have_mem[CLS__COUNT] = {0};
	int need_c[CLS__COUNT] = {0}, have_c[CLS__COUNT] = {0};
	int need_whole = 0, n_empty = 0, n_frac = 0;
	uint64_t min_empty = UINT64_MAX, empty_mem;
	int empty_c;

	for (int j = k; j < s->p->n; j++) {
		const struct pitem *it = &s->p->it[j];

		if (it->kind == GS_PLACE_WHOLE) {
			need_whole++;
		} else if (it->kind == GS_PLACE_FRACTION && !it->layered) {
			need_mem[cls_of(it->mode)] += it->mem;
			need_c[cls_of(it->mode)] += it->c;
			n_frac++;
		}
	}
	if (need_whole == 0 && n_frac == 0)
		return true;
	for (int g = nd->first_gpu; g < nd->first_gpu + nd->n_gpus; g++) {
		struct dstate st;
		int c;

		if (s->inv->gpu[g].mig)
			continue;
		gpu_state(s, g, &st);
		if (st.excl)
			continue;
		c = st.n_slices == 0 ? CLS_EMPTY : cls_of(st.mode);
		if (c == CLS_EMPTY) {
			n_empty++;
			if (st.total < min_empty)
				min_empty = st.total;
		}
		have_mem[c] += st.total - st.used;
		have_c[c] += 100 - st.c_used;
	}
	if (need_whole > n_empty)
		return false;
	if (n_frac == 0)
		return true;
	empty_mem = have_mem[CLS_EMPTY] - (uint64_t)need_whole * min_empty;
	empty_c = have_c[CLS_EMPTY] - 100 * need_whole;
	for (int c = CLS_TS; c <= CLS_MPS; c++)
		if (need_mem[c] > have_mem[c] + empty_mem ||
		    need_c[c] > have_c[c] + empty_c)
			return false;
	return need_mem[CLS_TS] + need_mem[CLS_MPS] <=
	           have_mem[CLS_TS] + have_mem[CLS_MPS] + empty_mem &&
	       need_c[CLS_TS] + need_c[CLS_MPS] <=
	           have_c[CLS_TS] + have_c[CLS_MPS] + empty_c;
}

static void dfs(struct search *s, int node, int k)
{
	const struct pnode *nd = &s->inv->node[node];
	const struct pitem *it;
	int tried[64], n_tried = 0;
	struct dstate st;

	if (k > s->deepest)
		s->deepest = k;
	if (k == s->p->n) {
		leaf(s);
		return;
	}
	if (--*s->budget < 0) {
		s->exhausted = true;
		return;
	}
	if (!rest_may_fit(s, node, k))
		return;
	it = &s->p->it[k];
	if (it->kind == GS_PLACE_MIG || it->layered) {
		bool parent = s->p->gang == GS_GANG_SAME_PARENT && s->p->n > 1;
		int first = nd->first_inst, last = first + nd->n_inst;
		int host = -1; /* GPU last checked as a parent */
		bool host_ok = false;

		if (parent && k > 0) {
			/* later slices go on the first one's GPU */
			first = s->inv->gpu[s->cur[0][0]].first_inst;
			last = first + s->inv->gpu[s->cur[0][0]].n_inst;
		}
		for (int i = first; i < last; i++) {
			bool dup = false;

			if (parent && k == 0 && s->inv->inst[i].gpu != host) {
				host = s->inv->inst[i].gpu;
				host_ok = gpu_hosts_gang(s, host);
			}
			if (parent && k == 0 && !host_ok)
				continue;
			if (!gs__place_inst_fits(s, i, it, &st))
				continue;
			for (int t = 0; !st.touched && t < n_tried && !dup; t++)
				dup = same_inst_state(&s->inv->inst[tried[t]],
				                      &s->inv->inst[i]);
			if (dup)
				continue;
			if (!st.touched && n_tried < 64)
				tried[n_tried++] = i;
			push(s, k, s->inv->inst[i].gpu, i);
			dfs(s, node, k + 1);
			s->n_d--;
			if (s->exhausted)
				return;
		}
		return;
	}
	for (int g = nd->first_gpu; g < nd->first_gpu + nd->n_gpus; g++) {
		bool dup = false;

		if (!gs__place_gpu_fits(s, g, it, &st))
			continue;
		for (int t = 0; !st.touched && t < n_tried && !dup; t++)
			dup = same_gpu_state(&s->inv->gpu[tried[t]],
			                     &s->inv->gpu[g]);
		if (dup)
			continue;
		if (!st.touched && n_tried < 64)
			tried[n_tried++] = g;
		push(s, k, g, -1);
		dfs(s, node, k + 1);
		s->n_d--;
		if (s->exhausted)
			return;
	}
}

/* One slice: a scan of the node's devices. */
static void scan_one(struct search *s, int node)
{
	const struct pnode *nd = &s->inv->node[node];
	const struct pitem *it = &s->p->it[0];
	struct dstate st;

	if (it->kind == GS_PLACE_MIG || it->layered) {
		for (int i = nd->first_inst; i < nd->first_inst + nd->n_inst;
		     i++) {
			if (!gs__place_inst_fits(s, i, it, &st))
				continue;
			push(s, 0, s->inv->inst[i].gpu, i);
			leaf(s);
			s->n_d--;
		}
		return;
	}
	for (int g = nd->first_gpu; g < nd->first_gpu + nd->n_gpus; g++) {
		if (!gs__place_gpu_fits(s, g, it, &st))
			continue;
		push(s, 0, g, -1);
		leaf(s);
		s->n_d--;
	}
}

/* Only what the search reads before it writes (the struct is large). */
void gs__place_search_init(struct search *s, const struct gs_place_inv *inv,
                           const struct prep *p, long *budget)
{
	s->inv = inv;
	s->p = p;
	s->n_d = 0;
	s->found = false;
	s->best_score = 0;
	s->budget = budget;
	s->exhausted = false;
	s->deepest = 0;
}

void gs__place_solve_node(struct search *s, int node)
{
	s->n_d = 0;
	s->node = node;
	if (s->p->scorer != NULL && !s->p->has_mig) {
		uint16_t g[GS_TRACE_MAX_DEVS];
		unsigned n;

		frag_state(s, g, &n);
		gs_trace_scorer_costs(s->p->scorer, INT64_MAX / 4, g, n, 0,
		                      &s->frag_before);
		memset(&s->frag_pick, 0, sizeof(s->frag_pick));
	}
	if (s->p->n == 1)
		scan_one(s, node);
	else
		dfs(s, node, 0);
}
