/*
 * trace_replay.c - one replay of a task list on a node list with one
 * policy, as the FGD paper's simulator runs it (docs/placement.md):
 *
 *   1. M, the target workload, from the original list (core/trace_frag.c).
 *   2. Order: the list shuffled with the seed, then inflated: clones drawn
 *      uniformly with replacement from the original list are appended
 *      while the GPU demand stays within tune x capacity (the check uses
 *      the per-GPU request, so a multi-GPU clone may overshoot a little);
 *      a list that already asks for more loses random tasks instead.
 *   3. Node order: a random permutation; ties between equal scores go to
 *      the node that comes first in it (the simulator's name order).
 *   4. Tasks arrive one at a time and never leave. Each goes to the best
 *      scored feasible node or fails and is dropped. A guarded policy
 *      (gpuslice) gives a candidate per feasible node instead and picks
 *      among them, in the node order, itself (its ops' cand and pick).
 *   5. After every arrival, success or not, a log line: unallocated GPU %
 *      and fragmentation % of capacity, binned by arrival level
 *      round(100 x arrived / capacity); a level's value is the mean of its
 *      lines, or of the lines at the level +- 1 when it has none.
 *
 * One random stream drives the shuffle, the inflation, the node order and
 * the Random policy, in that order, as in the simulator. Its generator is
 * not Go's, so runs match the paper's in distribution, not one by one.
 *
 * Scores are cached per (node, task shape) while neither the node nor the
 * policy's epoch changed; shapes are numbered most common first so the
 * cache (capped at GS__CACHE_BYTES) holds the ones that matter.
 */
#include "trace_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GS__CACHE_BYTES    (48u << 20)
#define GS__LEVELS         256 /* bins kept; levels above are clamped */
#define GS__PROGRESS_EVERY 512

struct cache_slot {
	uint32_t gen;
	uint32_t epoch;
	double score;
	int32_t dev;
	struct gs_trace_cand c; /* guarded policies: the node's candidate */
};

struct replay {
	struct gs__trace_run run;
	struct gs_trace_workload target;
	const struct gs__trace_policy_ops *ops;
	void *pst;
	size_t *seq; /* arrival order: indices into the original list */
	size_t n_seq;
	size_t *order;   /* nodes in tie-break order */
	uint32_t *shape; /* per original task: its shape id */
	bool no_cache;
	size_t n_cached;          /* shapes with a cache column */
	struct cache_slot *cache; /* [shape][node] */
	double *frag;             /* per node: F_n(M) now */
	double frag_total;
	double *score; /* per node: this task's raw score */
	size_t *cand;  /* feasible nodes of this task, in order */
	struct gs_trace_cand *cands; /* guarded policies: their candidates */
	int *cdev;                   /* guarded policies: their devices */
	double sum_u[GS__LEVELS], sum_f[GS__LEVELS];
	uint32_t cnt[GS__LEVELS];
};

void gs_trace_replay_cfg_default(struct gs_trace_replay_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->seed = 42;
	cfg->tune = 1.3;
	cfg->shuffle = true;
	cfg->coverage_pct = 95;
	cfg->eps = -1;
}

struct shape_row {
	uint32_t cpu, spec;
	uint16_t milli;
	uint8_t num;
	uint32_t count; /* tasks with this shape (on the group's first row) */
	size_t task;    /* a task index, or the group number */
};

static int row_cmp_tuple(const void *pa, const void *pb)
{
	const struct shape_row *a = pa, *b = pb;

	if (a->cpu != b->cpu)
		return a->cpu < b->cpu ? -1 : 1;
	if (a->milli != b->milli)
		return a->milli < b->milli ? -1 : 1;
	if (a->num != b->num)
		return a->num < b->num ? -1 : 1;
	if (a->spec != b->spec)
		return a->spec < b->spec ? -1 : 1;
	return 0;
}

static int row_cmp_count(const void *pa, const void *pb)
{
	const struct shape_row *a = pa, *b = pb;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return a->task < b->task ? -1 : a->task > b->task;
}

/*
 * Numbers the shapes of the original list, most common first: tasks share
 * a shape exactly when everything a score may look at (CPU, GPU request,
 * spec) is equal. Memory is left out: it matters for feasibility only.
 */
static gs_err number_shapes(struct replay *r, const struct gs_trace_pod *pods,
                            size_t n, struct gs_errbuf *eb)
{
	struct shape_row *row = malloc(sizeof(*row) * n);
	struct shape_row *grp = malloc(sizeof(*grp) * n);
	uint32_t *rank = malloc(sizeof(*rank) * n);
	size_t ng = 0;

	r->shape = malloc(sizeof(*r->shape) * n);
	if (row == NULL || grp == NULL || rank == NULL || r->shape == NULL) {
		free(row);
		free(grp);
		free(rank);
		return gs_fail(eb, GS_ERR_NOMEM, "replay: out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		row[i] = (struct shape_row){pods[i].cpu_milli,
		                            pods[i].spec,
		                            pods[i].gpu_milli,
		                            pods[i].num_gpu,
		                            0,
		                            i};
	}
	qsort(row, n, sizeof(*row), row_cmp_tuple);
	for (size_t i = 0; i < n; i++) {
		if (ng == 0 || row_cmp_tuple(&grp[ng - 1], &row[i]) != 0) {
			grp[ng] = row[i];
			grp[ng].count = 0;
			grp[ng].task = ng;
			ng++;
		}
		grp[ng - 1].count++;
		r->shape[row[i].task] = (uint32_t)(ng - 1); /* group number */
	}
	qsort(grp, ng, sizeof(*grp), row_cmp_count);
	for (size_t g = 0; g < ng; g++)
		rank[grp[g].task] = (uint32_t)g;
	for (size_t i = 0; i < n; i++)
		r->shape[i] = rank[r->shape[i]];
	{
		size_t per =
		    sizeof(struct cache_slot) * (r->run.cl.n ? r->run.cl.n : 1);
		size_t cap = GS__CACHE_BYTES / per;
		r->n_cached = ng < cap ? ng : cap;
	}
	free(row);
	free(grp);
	free(rank);
	return GS_OK;
}

/*
 * Inflation draws clones until the GPU demand would pass the target. A
 * list with little GPU demand per task would need very many draws (none
 * at all can help a list without GPU demand), so the sequence is capped
 * at GS__MAX_INFLATE times the list plus a little; the result's
 * arrived_pct then shows that the target was not reached.
 */
#define GS__MAX_INFLATE 64

static gs_err build_sequence(struct replay *r, const struct gs_trace_pod *pods,
                             size_t n, const struct gs_trace_replay_cfg *cfg,
                             struct gs_errbuf *eb)
{
	struct gs__trace_rng *rng = &r->run.rng;
	int64_t total = 0;
	double target = cfg->tune * (double)r->run.cl.gpu_capacity;
	size_t cap = n, limit = n * GS__MAX_INFLATE + 1024;

	for (size_t i = 0; i < n; i++)
		total += (int64_t)pods[i].num_gpu * pods[i].gpu_milli;
	if (cfg->tune > 0 && total > 0 && (double)total < target) {
		double want = (double)n * target / (double)total + 16;
		cap = want < (double)limit ? (size_t)want : limit;
	}
	r->seq = malloc(sizeof(*r->seq) * cap);
	if (r->seq == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "replay: out of memory");
	for (size_t i = 0; i < n; i++)
		r->seq[i] = i;
	r->n_seq = n;
	if (cfg->shuffle) {
		for (size_t i = n; i > 1; i--) {
			size_t j = (size_t)gs__trace_rng_below(rng, i);
			size_t t = r->seq[i - 1];
			r->seq[i - 1] = r->seq[j];
			r->seq[j] = t;
		}
	}
	if (cfg->tune <= 0 || total == 0)
		return GS_OK;
	if ((double)total < target) {
		while (r->n_seq < limit) {
			size_t k = (size_t)gs__trace_rng_below(rng, n);
			if ((double)(total + pods[k].gpu_milli) > target)
				break;
			if (r->n_seq == cap) {
				size_t ncap = cap * 2 < limit ? cap * 2 : limit;
				size_t *s = realloc(r->seq, sizeof(*s) * ncap);
				if (s == NULL)
					return gs_fail(eb, GS_ERR_NOMEM,
					               "replay: out of memory");
				r->seq = s;
				cap = ncap;
			}
			r->seq[r->n_seq++] = k;
			total += (int64_t)pods[k].num_gpu * pods[k].gpu_milli;
		}
	} else {
		/* Remove random tasks; order kept. Quadratic in the worst
		 * case, but lists asking for more than the target are rare
		 * and removal stops at the target. */
		while ((double)total > target && r->n_seq > 0) {
			size_t j = (size_t)gs__trace_rng_below(rng, r->n_seq);
			size_t k = r->seq[j];
			total -= (int64_t)pods[k].num_gpu * pods[k].gpu_milli;
			memmove(&r->seq[j], &r->seq[j + 1],
			        sizeof(*r->seq) * (r->n_seq - j - 1));
			r->n_seq--;
		}
	}
	return GS_OK;
}

static void replay_free(struct replay *r)
{
	if (r->ops && r->ops->fini)
		r->ops->fini(r->pst);
	gs_trace_cluster_fini(&r->run.cl);
	gs_trace_workload_fini(&r->target);
	free(r->seq);
	free(r->order);
	free(r->shape);
	free(r->cache);
	free(r->frag);
	free(r->score);
	free(r->cand);
	free(r->cands);
	free(r->cdev);
}

static double score_node(struct replay *r, size_t i, size_t task,
                         const struct gs_trace_pod *pod, int *dev)
{
	uint32_t sh = r->shape[task];
	const struct gs_trace_nstate *s = &r->run.cl.node[i];
	struct cache_slot *slot;

	if (!(r->ops->flags & GS__TP_CACHE) || sh >= r->n_cached || r->no_cache)
		return r->ops->score(r->pst, &r->run, i, pod, dev);
	slot = &r->cache[(size_t)sh * r->run.cl.n + i];
	if (slot->gen != s->gen || slot->epoch != r->run.epoch) {
		int d = -1;
		slot->score = r->ops->score(r->pst, &r->run, i, pod, &d);
		slot->dev = d;
		slot->gen = s->gen;
		slot->epoch = r->run.epoch;
	}
	*dev = slot->dev;
	return slot->score;
}

/* A guarded policy's candidate on node `i` (cached like scores); false
 * when the task does not fit there after all. */
static bool cand_node(struct replay *r, size_t i, size_t task,
                      const struct gs_trace_pod *pod, struct gs_trace_cand *c,
                      int *dev)
{
	uint32_t sh = r->shape[task];
	const struct gs_trace_nstate *s = &r->run.cl.node[i];
	struct cache_slot *slot;

	if (!(r->ops->flags & GS__TP_CACHE) || sh >= r->n_cached || r->no_cache)
		return r->ops->cand(r->pst, &r->run, i, pod, c, dev);
	slot = &r->cache[(size_t)sh * r->run.cl.n + i];
	if (slot->gen != s->gen || slot->epoch != r->run.epoch) {
		int d = -1;
		slot->score = r->ops->cand(r->pst, &r->run, i, pod, &slot->c,
		                           &d)
		                  ? 1
		                  : -1;
		slot->dev = d;
		slot->gen = s->gen;
		slot->epoch = r->run.epoch;
	}
	*c = slot->c;
	*dev = slot->dev;
	return slot->score > 0;
}

/* A guarded policy's choice: every feasible node's candidate in the tie
 * order, then the policy's pick among them. */
static long choose_guarded(struct replay *r, size_t task,
                           const struct gs_trace_pod *pod, int *dev)
{
	const struct gs_trace_cluster *cl = &r->run.cl;
	size_t nc = 0, k;

	for (size_t j = 0; j < cl->n; j++) {
		size_t i = r->order[j];
		int d = -1;

		if (!gs_trace_cluster_fits(cl, i, pod) ||
		    !cand_node(r, i, task, pod, &r->cands[nc], &d))
			continue;
		r->cand[nc] = i;
		r->cdev[nc++] = d;
	}
	if (nc == 0)
		return -1;
	k = r->ops->pick(r->pst, r->cands, nc);
	*dev = r->cdev[k];
	return (long)r->cand[k];
}

/* Picks the node for `pod`; -1 when it fits nowhere. *dev: the score's
 * device for a share (GS__DEV_OWN). */
static long choose_node(struct replay *r, size_t task,
                        const struct gs_trace_pod *pod, int *dev)
{
	const struct gs_trace_cluster *cl = &r->run.cl;
	size_t nc = 0;
	long best = -1;
	double best_score = 0;
	int best_dev = -1;

	if (r->ops->cand != NULL)
		return choose_guarded(r, task, pod, dev);
	if (r->ops->flags & GS__TP_RANDOM_NODE) {
		for (size_t k = 0; k < cl->n; k++) {
			size_t i = r->order[k];
			if (gs_trace_cluster_fits(cl, i, pod))
				r->cand[nc++] = i;
		}
		if (nc == 0)
			return -1;
		return (long)r->cand[gs__trace_rng_below(&r->run.rng, nc)];
	}
	for (size_t k = 0; k < cl->n; k++) {
		size_t i = r->order[k];
		int d = -1;
		double sc;

		if (!gs_trace_cluster_fits(cl, i, pod))
			continue;
		sc = score_node(r, i, task, pod, &d);
		if (r->ops->flags & GS__TP_NORMALISE) {
			r->cand[nc] = i;
			r->score[nc++] = sc;
			continue;
		}
		if (best < 0 || sc > best_score) {
			best = (long)i;
			best_score = sc;
			best_dev = d;
		}
	}
	if (r->ops->flags & GS__TP_NORMALISE) {
		int64_t lo = INT64_MAX, hi = INT64_MIN;
		int64_t top = -1;
		for (size_t k = 0; k < nc; k++) {
			int64_t v = (int64_t)r->score[k];
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
		}
		for (size_t k = 0; k < nc; k++) {
			int64_t v = (int64_t)r->score[k];
			int64_t norm =
			    hi == lo ? 0 : (v - lo) * 100 / (hi - lo);
			if (best < 0 || norm > top) {
				best = (long)r->cand[k];
				top = norm;
			}
		}
		/* Normalising policies choose devices by a fixed rule. */
		best_dev = -1;
	}
	*dev = best_dev;
	return best;
}

static void pick_devices(struct replay *r, size_t i,
                         const struct gs_trace_pod *pod, int own, uint8_t *devs)
{
	const struct gs_trace_nstate *s = &r->run.cl.node[i];

	if (pod->gpu_milli >= GS_TRACE_MILLI) {
		for (unsigned d = 0, k = 0; d < s->gpus && k < pod->num_gpu;
		     d++) {
			if (s->gpu_free[d] == GS_TRACE_MILLI)
				devs[k++] = (uint8_t)d;
		}
		return;
	}
	switch (r->ops->devsel) {
	case GS__DEV_OWN:
		if (own >= 0 && s->gpu_free[own] >= pod->gpu_milli) {
			devs[0] = (uint8_t)own;
			return;
		}
		break; /* not expected: fall back to best fit */
	case GS__DEV_RANDOM: {
		unsigned seen = 0;
		for (unsigned d = 0; d < s->gpus; d++) {
			if (s->gpu_free[d] >= pod->gpu_milli &&
			    gs__trace_rng_below(&r->run.rng, ++seen) == 0)
				devs[0] = (uint8_t)d;
		}
		return;
	}
	case GS__DEV_BESTFIT:
		break;
	}
	devs[0] = (uint8_t)gs__trace_dev_bestfit(s, pod->gpu_milli);
}

static void log_line(struct replay *r, int64_t arrived)
{
	double cap = (double)r->run.cl.gpu_capacity;
	double lv = rint(100.0 * (double)arrived / cap);
	size_t a = lv < 0 ? 0 : lv >= GS__LEVELS ? GS__LEVELS - 1 : (size_t)lv;

	r->sum_u[a] += 100.0 - 100.0 * (double)r->run.cl.allocated / cap;
	r->sum_f[a] += 100.0 * r->frag_total / cap;
	r->cnt[a]++;
}

static void summarise(struct replay *r, struct gs_trace_result *out)
{
	for (size_t a = 0; a <= GS_TRACE_MAX_LEVEL; a++) {
		double su = r->sum_u[a], sf = r->sum_f[a];
		uint32_t c = r->cnt[a];
		if (c == 0) {
			for (size_t b = a > 0 ? a - 1 : 0; b <= a + 1; b++) {
				su += r->sum_u[b];
				sf += r->sum_f[b];
				c += r->cnt[b];
			}
		}
		out->unalloc_pct[a] = c ? su / c : NAN;
		out->frag_pct[a] = c ? sf / c : NAN;
	}
}

gs_err gs_trace_replay(const struct gs_trace_node *nodes, size_t n_nodes,
                       const struct gs_trace_pod *pods, size_t n_pods,
                       enum gs_trace_policy policy,
                       const struct gs_trace_replay_cfg *cfg,
                       struct gs_trace_result *out, struct gs_errbuf *eb)
{
	struct replay *r;
	struct gs_trace_cluster *cl;
	int64_t arrived = 0;
	gs_err err;

	memset(out, 0, sizeof(*out));
	if (n_nodes == 0 || n_pods == 0)
		return gs_fail(eb, GS_ERR_INVALID, "replay: %s list is empty",
		               n_nodes == 0 ? "node" : "task");
	if (gs__trace_policy_ops(policy) == NULL)
		return gs_fail(eb, GS_ERR_INVALID, "replay: unknown policy %d",
		               (int)policy);
	for (size_t i = 0; i < n_pods; i++) {
		if (!gs_trace_pod_is_valid(&pods[i]))
			return gs_fail(
			    eb, GS_ERR_INVALID,
			    "replay: task %zu is malformed (num_gpu %u, gpu_milli %u)",
			    i, pods[i].num_gpu, pods[i].gpu_milli);
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "replay: out of memory");
	r->ops = gs__trace_policy_ops(policy);
	r->no_cache = cfg->no_cache;
	err = gs_trace_cluster_init(&r->run.cl, nodes, n_nodes, eb);
	if (err != GS_OK)
		goto out_free;
	cl = &r->run.cl;
	if (cl->gpu_capacity == 0) {
		err = gs_fail(eb, GS_ERR_INVALID,
		              "replay: the node list has no GPUs");
		goto out_free;
	}
	err = gs_trace_workload_init(
	    &r->target, pods, n_pods,
	    cfg->coverage_pct > 0 ? cfg->coverage_pct : 95, eb);
	if (err != GS_OK)
		goto out_free;
	r->run.target = &r->target;
	r->run.pods = pods;
	r->run.n_pods = n_pods;
	r->run.ablate = cfg->ablate;
	r->run.eps = cfg->eps;
	r->run.epoch = 1;
	gs__trace_rng_seed(&r->run.rng, cfg->seed);

	err = build_sequence(r, pods, n_pods, cfg, eb);
	if (err != GS_OK)
		goto out_free;
	r->order = malloc(sizeof(*r->order) * n_nodes);
	r->frag = malloc(sizeof(*r->frag) * n_nodes);
	r->score = malloc(sizeof(*r->score) * n_nodes);
	r->cand = malloc(sizeof(*r->cand) * n_nodes);
	r->cands = malloc(sizeof(*r->cands) * n_nodes);
	r->cdev = malloc(sizeof(*r->cdev) * n_nodes);
	if (r->order == NULL || r->frag == NULL || r->score == NULL ||
	    r->cand == NULL || r->cands == NULL || r->cdev == NULL) {
		err = gs_fail(eb, GS_ERR_NOMEM, "replay: out of memory");
		goto out_free;
	}
	/* The simulator names node i with prefix perm[i] and breaks ties by
	 * name: order[perm[i]] = i. */
	for (size_t i = 0; i < n_nodes; i++) {
		size_t j = (size_t)gs__trace_rng_below(&r->run.rng, i + 1);
		r->order[i] = r->order[j];
		r->order[j] = i;
	}
	err = number_shapes(r, pods, n_pods, eb);
	if (err != GS_OK)
		goto out_free;
	if (r->ops->flags & GS__TP_CACHE) {
		r->cache = calloc(r->n_cached * n_nodes + 1, sizeof(*r->cache));
		if (r->cache == NULL) {
			err = gs_fail(
			    eb, GS_ERR_NOMEM,
			    "replay: out of memory for the score cache");
			goto out_free;
		}
	}
	if (r->ops->init) {
		err = r->ops->init(&r->pst, &r->run, eb);
		if (err != GS_OK)
			goto out_free;
	}
	for (size_t i = 0; i < n_nodes; i++) {
		const struct gs_trace_nstate *s = &cl->node[i];
		r->frag[i] = gs_trace_frag(&r->target, s->cpu_free, s->gpu_free,
		                           s->gpus, s->model);
		r->frag_total += r->frag[i];
	}

	for (size_t t = 0; t < r->n_seq; t++) {
		size_t task = r->seq[t];
		const struct gs_trace_pod *pod = &pods[task];
		uint8_t devs[GS_TRACE_MAX_DEVS];
		int dev = -1;
		long i;

		arrived += (int64_t)pod->num_gpu * pod->gpu_milli;
		if (r->ops->arrive)
			r->ops->arrive(r->pst, &r->run, pod);
		i = choose_node(r, task, pod, &dev);
		if (i < 0) {
			out->failed++;

		} else {
			const struct gs_trace_nstate *s = &cl->node[i];
			pick_devices(r, (size_t)i, pod, dev, devs);
			gs_trace_cluster_bind(cl, (size_t)i, pod, devs);
			if (pod->num_gpu > 0 || s->gpu_free_total > 0) {
				double f = gs_trace_frag(
				    &r->target, s->cpu_free, s->gpu_free,
				    s->gpus, s->model);
				r->frag_total += f - r->frag[i];
				r->frag[i] = f;
			}
		}
		out->tasks++;
		log_line(r, arrived);
		if (cfg->progress && (t + 1) % GS__PROGRESS_EVERY == 0)
			cfg->progress(cfg->progress_arg, t + 1, r->n_seq);
		if (cfg->stop_level > 0 &&
		    100.0 * (double)arrived / (double)cl->gpu_capacity >
		        (double)cfg->stop_level + 0.5)
			break;
	}
	if (cfg->progress)
		cfg->progress(cfg->progress_arg, r->n_seq, r->n_seq);
	summarise(r, out);
	out->arrived_pct = 100.0 * (double)arrived / (double)cl->gpu_capacity;
	out->unalloc_final =
	    100.0 - 100.0 * (double)cl->allocated / (double)cl->gpu_capacity;
	err = GS_OK;
out_free:
	replay_free(r);
	free(r);
	return err;
}
