/*
 * test_frag_guard.c - the guard of gpuslice's placement scorer
 * (gs_trace_scorer_node/_pick/_pick_step, core/frag/score.c) and the
 * variant family it is judged on (bench/trace_variant.c,
 * bench/trace_family.c).
 *
 * The structural property (docs/placement.md, "Why it cannot lose
 * badly"): in a greedy replay on a small cluster, every placement the
 * policy makes has the points FGD gives its own best choice, and an FGD
 * change dF within 2 eps of that choice's. FGD here is a naive reference
 * written from the paper's rule (first node in the tie order, first
 * device, with the most integer points of -dF), not the scorer's code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gs/trace.h"
#include "trace_family.h"

/* ---- A small cluster and a task list --------------------------------- */

struct node {
	int64_t cpu;
	uint16_t g[GS_TRACE_MAX_DEVS];
	unsigned ngpu, model;
};

#define NODES 36

static void cluster(struct node *n)
{
	for (int i = 0; i < NODES; i++) {
		n[i].model = i < 24 ? 0 : i < 32 ? 1 : 2;
		n[i].ngpu = i < 24 ? 8 : i < 32 ? 4 : 2;
		n[i].cpu = i % 3 == 0 ? 32000 : 96000;
		for (unsigned d = 0; d < n[i].ngpu; d++)
			n[i].g[d] = GS_TRACE_MILLI;
	}
}

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Shares, whole GPUs, gangs and model-constrained tasks. */
static void task_list(struct gs_trace_pod *p, size_t n, uint64_t seed)
{
	static const uint16_t share[] = {100, 250, 300, 500, 700};
	uint64_t x = seed | 1;

	for (size_t i = 0; i < n; i++) {
		unsigned k = (unsigned)(rnd(&x) % 10);
		memset(&p[i], 0, sizeof(p[i]));
		p[i].cpu_milli = 2000 + 2000 * (uint32_t)(rnd(&x) % 6);
		p[i].memory_mib = 1;
		p[i].num_gpu = 1;
		if (k < 6) {
			p[i].gpu_milli = share[rnd(&x) % 5];
		} else {
			p[i].gpu_milli = GS_TRACE_MILLI;
			p[i].num_gpu = k < 8 ? 1 : k < 9 ? 2 : 4;
		}
		if (rnd(&x) % 4 == 0)
			p[i].spec = 1u << (rnd(&x) % 3);
		if (p[i].num_gpu == 4 && p[i].spec == 1u << 2)
			p[i].spec = 1u; /* model 2 nodes have 2 GPUs */
	}
}

/* ---- The reference FGD ------------------------------------------------ */

static double points(double before, double after)
{
	return (double)(int64_t)(100.0 /
	                         (1.0 + exp((after - before) / 1000.0)));
}

static bool fits_node(const struct node *n, const struct gs_trace_pod *p)
{
	unsigned full = 0;

	if (n->cpu < (int64_t)p->cpu_milli ||
	    (p->spec != 0 && !((p->spec >> n->model) & 1u)))
		return false;
	for (unsigned d = 0; d < n->ngpu; d++) {
		if (p->gpu_milli < GS_TRACE_MILLI && n->g[d] >= p->gpu_milli)
			return true;
		full += n->g[d] == GS_TRACE_MILLI;
	}
	return p->gpu_milli == GS_TRACE_MILLI && full >= p->num_gpu;
}

/* The state after placing `p` on `n` (device `dev` for a share). */
static void after(const struct node *n, const struct gs_trace_pod *p, int dev,
                  struct node *out)
{
	*out = *n;
	out->cpu -= p->cpu_milli;
	if (p->gpu_milli < GS_TRACE_MILLI) {
		out->g[dev] -= p->gpu_milli;
		return;
	}
	for (unsigned d = 0, k = 0; d < out->ngpu && k < p->num_gpu; d++) {
		if (out->g[d] == GS_TRACE_MILLI) {
			out->g[d] = 0;
			k++;
		}
	}
}

/* FGD's points and dF of placing p on node n, device dev. */
static void fgd_move(const struct gs_trace_workload *m, const struct node *n,
                     const struct gs_trace_pod *p, int dev, double *pts,
                     double *df)
{
	struct node a;
	double f0 = gs_trace_frag(m, n->cpu, n->g, n->ngpu, n->model), f1;

	after(n, p, dev, &a);
	f1 = gs_trace_frag(m, a.cpu, a.g, a.ngpu, a.model);
	*df = f1 - f0;
	*pts = points(f0, f1);
}

/*
 * Replays `n` tasks with the scorer's guarded choice and checks each
 * placement against the reference FGD. Returns how many placements broke
 * the property (the guard on: none) and counts in *moved those where the
 * policy left FGD's own choice.
 */
static size_t replay_check(const struct gs_trace_pod *pods, size_t n,
                           unsigned ablate, double eps, size_t *moved)
{
	struct node nd[NODES];
	struct gs_trace_workload m;
	struct gs_trace_scorer *s = NULL;
	struct gs_errbuf eb = {0};
	struct gs_trace_cand c[NODES];
	int cdev[NODES], cnode[NODES];
	size_t broken = 0;

	cluster(nd);
	*moved = 0;
	assert_int_equal(gs_trace_workload_init(&m, pods, n, 95, &eb), GS_OK);
	assert_int_equal(gs_trace_scorer_new(pods, n, NULL, ablate, &s, &eb),
	                 GS_OK);
	assert_int_equal(gs_trace_scorer_set_eps(s, eps, &eb), GS_OK);
	for (size_t t = 0; t < n; t++) {
		const struct gs_trace_pod *p = &pods[t];
		double best_pts = -1, best_df = 0, pts, df;
		int fgd_node = -1, fgd_dev = 0, k = 0, dev, nc = 0;
		size_t pick;

		/* Reference FGD: first node, first device, most points. */
		for (int i = 0; i < NODES; i++) {
			if (!fits_node(&nd[i], p))
				continue;
			for (unsigned d = 0; d < nd[i].ngpu; d++) {
				if (p->gpu_milli == GS_TRACE_MILLI && d > 0)
					break;
				if (p->gpu_milli < GS_TRACE_MILLI &&
				    nd[i].g[d] < p->gpu_milli)
					continue;
				fgd_move(&m, &nd[i], p, (int)d, &pts, &df);
				if (pts > best_pts) {
					best_pts = pts;
					best_df = df;
					fgd_node = i;
					fgd_dev = (int)d;
				}
			}
		}
		/* The scorer's guarded choice over the same order. */
		for (int i = 0; i < NODES; i++) {
			dev = 0;
			if (!fits_node(&nd[i], p) ||
			    !gs_trace_scorer_node(s, NULL, nd[i].cpu, nd[i].g,
			                          nd[i].ngpu, nd[i].model, p,
			                          &c[nc], &dev))
				continue;
			cdev[nc] = dev;
			cnode[nc++] = i;
		}
		assert_int_equal(nc > 0, fgd_node >= 0);
		if (nc == 0)
			continue;
		pick = gs_trace_scorer_pick(s, c, (size_t)nc);
		k = cnode[pick];
		dev = p->gpu_milli < GS_TRACE_MILLI ? cdev[pick] : 0;
		fgd_move(&m, &nd[k], p, dev, &pts, &df);
		if (pts != best_pts || fabs(df - best_df) > 2 * eps + 1e-9)
			broken++;
		if (k != fgd_node ||
		    (p->gpu_milli < GS_TRACE_MILLI && dev != fgd_dev))
			(*moved)++;
		{
			struct node a;
			after(&nd[k], p, dev, &a);
			nd[k] = a;
		}
	}
	gs_trace_scorer_free(s);
	gs_trace_workload_fini(&m);
	return broken;
}

static void guard_never_places_worse_than_fgd_beyond_eps(void **st)
{
	enum { N = 400 };
	struct gs_trace_pod pods[N];
	size_t moved, total_moved = 0;

	(void)st;
	for (uint64_t seed = 1; seed <= 4; seed++) {
		task_list(pods, N, seed);
		assert_int_equal(replay_check(pods, N, 0, 0, &moved), 0);
		total_moved += moved;
		assert_int_equal(replay_check(pods, N, 0, 25, &moved), 0);
		total_moved += moved;
	}
	/* Not vacuous: the policy did leave FGD's own choice. */
	assert_true(total_moved > 0);
}

static void without_the_guard_the_property_breaks(void **st)
{
	enum { N = 400 };
	struct gs_trace_pod pods[N];
	size_t moved, broken = 0;

	(void)st;
	for (uint64_t seed = 1; seed <= 4; seed++) {
		task_list(pods, N, seed);
		broken += replay_check(pods, N, GS_TRACE_ABLATE_GUARD, 0, &moved);
	}
	assert_true(broken > 0);
}

/* The streaming pick (the daemon's search) chooses as the array pick. */
static void pick_step_agrees_with_a_naive_pick(void **st)
{
	struct gs_trace_scorer *s = NULL;
	struct gs_trace_pod pod = {.cpu_milli = 1000, .memory_mib = 1,
	                           .num_gpu = 1, .gpu_milli = 500};
	struct gs_errbuf eb = {0};
	uint64_t x = 99;

	(void)st;
	assert_int_equal(gs_trace_scorer_new(&pod, 1, NULL, 0, &s, &eb), GS_OK);
	assert_int_equal(gs_trace_scorer_set_eps(s, 10, &eb), GS_OK);
	for (int round = 0; round < 500; round++) {
		struct gs_trace_cand c[12];
		size_t n = 1 + rnd(&x) % 12, first = 0, want;
		double hi = -1;

		for (size_t i = 0; i < n; i++) {
			c[i].fgd = (double)(40 + rnd(&x) % 3);
			c[i].delta = (double)(rnd(&x) % 40);
			c[i].own = (double)(rnd(&x) % 5);
		}
		for (size_t i = 0; i < n; i++)
			if (c[i].fgd > hi) {
				hi = c[i].fgd;
				first = i;
			}
		want = first;
		for (size_t i = 0; i < n; i++)
			if (c[i].fgd == hi &&
			    fabs(c[i].delta - c[first].delta) <= 10 &&
			    c[i].own > c[want].own)
				want = i;
		assert_int_equal(gs_trace_scorer_pick(s, c, n), want);
	}
	assert_int_equal(gs_trace_scorer_set_eps(s, -1, &eb), GS_ERR_INVALID);
	gs_trace_scorer_free(s);
}

/* A demand history with weights equal to task counts (the daemon's and
 * the extender's scorer) guards as the task list does: FGD's M by weight
 * is FGD's M by count. */
static void weighted_demand_guards_like_the_task_list(void **st)
{
	enum { N = 300 };
	struct gs_trace_pod pods[N];
	struct gs_trace_class cls[N];
	struct gs_trace_scorer *a = NULL, *b = NULL;
	struct gs_errbuf eb = {0};
	struct node nd[NODES];
	size_t nc = 0;
	uint64_t x = 7;

	(void)st;
	task_list(pods, N, 11);
	for (size_t i = 0; i < N; i++) {
		size_t k = 0;
		while (k < nc && !(cls[k].cpu_milli == pods[i].cpu_milli &&
		                   cls[k].gpu_milli == pods[i].gpu_milli &&
		                   cls[k].num_gpu == pods[i].num_gpu &&
		                   cls[k].spec == pods[i].spec))
			k++;
		if (k == nc)
			cls[nc++] = (struct gs_trace_class){
			    .cpu_milli = pods[i].cpu_milli,
			    .gpu_milli = pods[i].gpu_milli,
			    .num_gpu = pods[i].num_gpu,
			    .spec = pods[i].spec};
		cls[k].count++;
		cls[k].p += 1;
	}
	assert_int_equal(gs_trace_scorer_new(pods, N, NULL, 0, &a, &eb), GS_OK);
	assert_int_equal(gs_trace_scorer_new_weighted(cls, nc, &b, &eb), GS_OK);
	cluster(nd);
	for (int i = 0; i < NODES; i++) /* some used devices */
		for (unsigned d = 0; d < nd[i].ngpu; d++)
			nd[i].g[d] = (uint16_t)(rnd(&x) % 5 * 250);
	for (size_t t = 0; t < 60; t++) {
		const struct gs_trace_pod *p = &pods[t];
		for (int i = 0; i < NODES; i++) {
			struct gs_trace_cand ca, cb;
			int da = -1, db = -1;
			bool fa = gs_trace_scorer_node(a, NULL, nd[i].cpu, nd[i].g,
			                               nd[i].ngpu, nd[i].model, p,
			                               &ca, &da);
			bool fb = gs_trace_scorer_node(b, NULL, nd[i].cpu, nd[i].g,
			                               nd[i].ngpu, nd[i].model, p,
			                               &cb, &db);
			assert_int_equal(fa, fb);
			if (!fa)
				continue;
			assert_true(ca.fgd == cb.fgd && da == db);
			assert_true(fabs(ca.delta - cb.delta) < 1e-6);
			assert_true(fabs(ca.own - cb.own) < 1e-6);
		}
	}
	gs_trace_scorer_free(a);
	gs_trace_scorer_free(b);
}

/* ---- The variant family --------------------------------------------- */

/* Model 0: 320 GPUs, model 1: 40 (10 %), model 2: 20 (5 %), model 3: 1. */
static const struct gs_trace_node fam_nodes[] = {
    {.cpu_milli = 96000, .memory_mib = 1 << 20, .gpus = 8, .model = 0},
    {.cpu_milli = 96000, .memory_mib = 1 << 20, .gpus = 4, .model = 1},
    {.cpu_milli = 64000, .memory_mib = 1 << 20, .gpus = 2, .model = 2},
    {.cpu_milli = 32000, .memory_mib = 1 << 20, .gpus = 1, .model = 3},
};
static const unsigned fam_count[] = {40, 10, 10, 1};

static struct gs_trace_node *fam_cluster(size_t *nn)
{
	struct gs_trace_node *n = calloc(61, sizeof(*n));
	size_t k = 0;

	assert_non_null(n);
	for (int t = 0; t < 4; t++)
		for (unsigned i = 0; i < fam_count[t]; i++)
			n[k++] = fam_nodes[t];
	*nn = k;
	return n;
}

static void family_is_fixed_and_spans_the_laws(void **st)
{
	unsigned laws[GS_TRACE_LAW__COUNT] = {0}, lo, hi;
	bool kmax[6] = {false};
	double cmin = 100, cmax = 0;

	(void)st;
	for (unsigned i = 0; i < GS_TRACE_FAMILY_SIZE; i++) {
		struct gs_trace_variant_cfg a, b;
		gs_trace_family_variant(i, &a);
		gs_trace_family_variant(i, &b);
		assert_memory_equal(&a, &b, sizeof(a));
		assert_int_equal(a.law, i % GS_TRACE_LAW__COUNT);
		laws[a.law]++;
		assert_true(a.constrain_pct >= 5 && a.constrain_pct <= 40);
		assert_true(a.max_models >= 1 && a.max_models <= 5);
		assert_true(a.scarce_pct >= 50 && a.scarce_pct <= 80);
		kmax[a.max_models] = true;
		cmin = a.constrain_pct < cmin ? a.constrain_pct : cmin;
		cmax = a.constrain_pct > cmax ? a.constrain_pct : cmax;
	}
	for (int l = 0; l < GS_TRACE_LAW__COUNT; l++)
		assert_int_equal(laws[l], GS_TRACE_FAMILY_SIZE / 4);
	for (int k = 1; k <= 5; k++)
		assert_true(kmax[k]);
	assert_true(cmin <= 10 && cmax >= 35);
	gs_trace_family_part_range(GS_TRACE_FAMILY_TUNING, &lo, &hi);
	assert_int_equal(lo, 0);
	assert_int_equal(hi, GS_TRACE_FAMILY_TUNE - 1);
	gs_trace_family_part_range(GS_TRACE_FAMILY_REPORTING, &lo, &hi);
	assert_int_equal(lo, GS_TRACE_FAMILY_TUNE);
	assert_int_equal(hi, GS_TRACE_FAMILY_SIZE - 1);
}

static void scarce_law_puts_half_the_constrained_tasks_on_a_scarce_model(
    void **st)
{
	enum { N = 6000 };
	size_t nn;
	struct gs_trace_node *nodes = fam_cluster(&nn);
	struct gs_trace_pod *p = calloc(N, sizeof(*p));
	struct gs_errbuf eb = {0};

	(void)st;
	assert_non_null(p);
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct gs_trace_variant_cfg cfg = {.seed = seed,
		                                   .constrain_pct = 30,
		                                   .max_models = 3,
		                                   .law = GS_TRACE_LAW_SCARCE,
		                                   .scarce_pct = 55};
		int sm = gs_trace_variant_scarce_model(nodes, nn, &cfg);
		size_t con = 0, on = 0;

		/* Models 1 and 2 hold 10 % and 5 % of the GPUs; model 3 is
		 * under 1 % and model 0 above 15 %. */
		assert_true(sm == 1 || sm == 2);
		for (size_t i = 0; i < N; i++)
			p[i] = (struct gs_trace_pod){.cpu_milli = 4000,
			                             .memory_mib = 1,
			                             .num_gpu = 1,
			                             .gpu_milli = i % 2 ? 500
			                                                : 1000};
		assert_int_equal(gs_trace_variant_apply(p, N, nodes, nn, &cfg,
		                                        &eb),
		                 GS_OK);
		for (size_t i = 0; i < N; i++) {
			if (p[i].spec == 0)
				continue;
			con++;
			on += (p[i].spec >> sm) & 1u;
			assert_true(__builtin_popcount(p[i].spec) <= 3);
		}
		assert_true(con > N * 25 / 100 && con < N * 35 / 100);
		assert_true(on * 2 >= con);
	}
	free(p);
	free(nodes);
}

static void uniform_and_inverse_laws_skip_tiny_models(void **st)
{
	enum { N = 4000 };
	size_t nn;
	struct gs_trace_node *nodes = fam_cluster(&nn);
	struct gs_trace_pod *p = calloc(N, sizeof(*p));
	struct gs_errbuf eb = {0};

	(void)st;
	assert_non_null(p);
	for (int law = GS_TRACE_LAW_UNIFORM; law <= GS_TRACE_LAW_INVERSE;
	     law++) {
		struct gs_trace_variant_cfg cfg = {.seed = 5,
		                                   .constrain_pct = 40,
		                                   .max_models = 1,
		                                   .law = (enum gs_trace_law)law};
		size_t per[4] = {0};

		for (size_t i = 0; i < N; i++)
			p[i] = (struct gs_trace_pod){.cpu_milli = 4000,
			                             .memory_mib = 1,
			                             .num_gpu = 1,
			                             .gpu_milli = 500};
		assert_int_equal(gs_trace_variant_apply(p, N, nodes, nn, &cfg,
		                                        &eb),
		                 GS_OK);
		for (size_t i = 0; i < N; i++)
			for (int m = 0; m < 4; m++)
				per[m] += p[i].spec == 1u << m;
		assert_int_equal(per[3], 0);
		if (law == GS_TRACE_LAW_UNIFORM) /* about a third each */
			assert_true(per[2] > per[0] / 2);
		else /* by 1/GPUs: model 2 twice model 1, 16 x model 0 */
			assert_true(per[2] > per[1] && per[1] > 4 * per[0]);
	}
	free(p);
	free(nodes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(guard_never_places_worse_than_fgd_beyond_eps),
	    cmocka_unit_test(without_the_guard_the_property_breaks),
	    cmocka_unit_test(pick_step_agrees_with_a_naive_pick),
	    cmocka_unit_test(weighted_demand_guards_like_the_task_list),
	    cmocka_unit_test(family_is_fixed_and_spans_the_laws),
	    cmocka_unit_test(
	        scarce_law_puts_half_the_constrained_tasks_on_a_scarce_model),
	    cmocka_unit_test(uniform_and_inverse_laws_skip_tiny_models),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
