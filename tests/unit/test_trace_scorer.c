/*
 * test_trace_scorer.c - gpuslice's one-node placement scorer
 * (gs_trace_scorer_*, core/trace_scorer*.c) and the task-list variants
 * used to evaluate it (gs_trace_variant_apply, bench/trace_variant.c).
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

/* Two models: model 0 on 8-GPU nodes, model 1 on 2-GPU nodes. */
static const struct gs_trace_node nodes[] = {
    {.cpu_milli = 96000, .memory_mib = 393216, .gpus = 8, .model = 0},
    {.cpu_milli = 96000, .memory_mib = 393216, .gpus = 8, .model = 0},
    {.cpu_milli = 64000, .memory_mib = 262144, .gpus = 2, .model = 1},
    {.cpu_milli = 32000, .memory_mib = 131072, .gpus = 0, .model = 0},
};
#define NN (sizeof(nodes) / sizeof(nodes[0]))

static struct gs_trace_pod *make_list(size_t n)
{
	struct gs_trace_pod *p = calloc(n, sizeof(*p));

	assert_non_null(p);
	for (size_t i = 0; i < n; i++) {
		p[i].cpu_milli = 4000;
		p[i].memory_mib = 8192;
		if (i % 10 == 0)
			continue; /* CPU-only */
		p[i].num_gpu = 1;
		p[i].gpu_milli = i % 3 ? 500 : 1000;
		if (i % 50 == 1) {
			p[i].num_gpu = 8;
			p[i].gpu_milli = 1000;
		}
	}
	return p;
}

static void variant_is_deterministic_and_constrains_about_the_share(void **st)
{
	enum { N = 4000 };
	struct gs_trace_pod *a = make_list(N), *b = make_list(N),
	                    *c = make_list(N);
	struct gs_trace_variant_cfg cfg = {.seed = 7, .constrain_pct = 25};
	struct gs_errbuf eb = {0};
	size_t gpu = 0, constrained = 0;

	(void)st;
	assert_int_equal(gs_trace_variant_apply(a, N, nodes, NN, &cfg, &eb),
	                 GS_OK);
	assert_int_equal(gs_trace_variant_apply(b, N, nodes, NN, &cfg, &eb),
	                 GS_OK);
	assert_memory_equal(a, b, sizeof(*a) * N);
	cfg.seed = 8;
	assert_int_equal(gs_trace_variant_apply(c, N, nodes, NN, &cfg, &eb),
	                 GS_OK);
	assert_true(memcmp(a, c, sizeof(*a) * N) != 0);
	for (size_t i = 0; i < N; i++) {
		if (a[i].num_gpu == 0) {
			assert_int_equal(a[i].spec, 0);
			continue;
		}
		gpu++;
		if (a[i].spec == 0)
			continue;
		constrained++;
		/* Only models that exist; an 8-GPU task only model 0. */
		assert_int_equal(a[i].spec & ~3u, 0);
		if (a[i].num_gpu == 8)
			assert_int_equal(a[i].spec, 1u);
	}
	assert_true(constrained > gpu * 20 / 100);
	assert_true(constrained < gpu * 30 / 100);
	free(a);
	free(b);
	free(c);
}

static void variant_gangs_keep_the_task_placeable(void **st)
{
	enum { N = 2000 };
	struct gs_trace_pod *a = make_list(N);
	struct gs_trace_variant_cfg cfg = {.seed = 3, .gang_pct = 30};
	struct gs_errbuf eb = {0};
	size_t before = 0, after = 0;

	(void)st;
	for (size_t i = 0; i < N; i++)
		before += a[i].num_gpu >= 2;
	assert_int_equal(gs_trace_variant_apply(a, N, nodes, NN, &cfg, &eb),
	                 GS_OK);
	for (size_t i = 0; i < N; i++) {
		bool fits = false;
		assert_true(gs_trace_pod_is_valid(&a[i]));
		after += a[i].num_gpu >= 2;
		for (size_t k = 0; k < NN; k++)
			fits = fits || (nodes[k].gpus >= a[i].num_gpu &&
			                nodes[k].cpu_milli >= a[i].cpu_milli &&
			                nodes[k].memory_mib >= a[i].memory_mib);
		assert_true(fits);
	}
	assert_true(after > before + (N - before) / 5);
	cfg.gang_pct = 101;
	assert_int_equal(gs_trace_variant_apply(a, N, nodes, NN, &cfg, &eb),
	                 GS_ERR_INVALID);
	free(a);
}

/* Demand: CPU-hungry whole-GPU tasks that only run on model 1. */
static struct gs_trace_scorer *model1_scorer(unsigned ablate)
{
	struct gs_trace_pod p[10];
	struct gs_trace_scorer *s = NULL;
	struct gs_errbuf eb = {0};

	for (int i = 0; i < 10; i++)
		p[i] = (struct gs_trace_pod){.cpu_milli = 16000,
		                             .memory_mib = 1024,
		                             .num_gpu = 1,
		                             .gpu_milli = 1000,
		                             .spec = 1u << 1};
	assert_int_equal(gs_trace_scorer_new(p, 10, NULL, ablate, &s, &eb),
	                 GS_OK);
	assert_non_null(s);
	return s;
}

static void stranding_ignores_classes_the_model_cannot_run(void **st)
{
	struct gs_trace_scorer *aware = model1_scorer(0);
	struct gs_trace_scorer *blind = model1_scorer(GS_TRACE_ABLATE_MODEL);
	uint16_t g[2] = {1000, 1000};

	(void)st;
	/* Model 0: the class cannot run, all 2000 idle is fragment; no CPU
	 * left strands nothing more for a class that cannot run there. */
	assert_true(fabs(gs_trace_scorer_cost(aware, 0, g, 2, 0) - 2000.0) <
	            1e-9);
	assert_true(gs_trace_scorer_cost(blind, 0, g, 2, 0) > 2000.0 + 1);
	/* Model 1: the class can run; without CPU the GPUs are stranded. */
	assert_true(gs_trace_scorer_cost(aware, 0, g, 2, 1) > 2000.0 + 1);
	assert_true(fabs(gs_trace_scorer_cost(aware, 0, g, 2, 1) -
	                 gs_trace_scorer_cost(blind, 0, g, 2, 1)) < 1e-9);
	gs_trace_scorer_free(aware);
	gs_trace_scorer_free(blind);
}

static void
score_refuses_what_does_not_fit_and_prefers_the_tight_device(void **st)
{
	struct gs_trace_scorer *s = model1_scorer(0);
	uint16_t g[3] = {1000, 300, 600};
	struct gs_trace_pod share = {
	    .cpu_milli = 1000, .memory_mib = 1, .num_gpu = 1, .gpu_milli = 250};
	struct gs_trace_pod only1 = share;
	struct gs_trace_pod two = {.cpu_milli = 1000,
	                           .memory_mib = 1,
	                           .num_gpu = 2,
	                           .gpu_milli = 1000};
	int dev = -1;
	double v;

	(void)st;
	only1.spec = 1u << 1;
	assert_true(
	    gs_trace_scorer_score(s, NAN, 64000, g, 3, 0, &only1, &dev) < 0);
	assert_true(gs_trace_scorer_score(s, NAN, 500, g, 3, 1, &share, &dev) <
	            0);
	assert_true(gs_trace_scorer_score(s, NAN, 64000, g, 3, 1, &two, NULL) <
	            0);
	v = gs_trace_scorer_score(s, NAN, 64000, g, 3, 1, &share, &dev);
	assert_true(v >= 0 && v <= 100);
	/* Leaving the whole GPU intact keeps the demand's class placeable. */
	assert_int_not_equal(dev, 0);
	gs_trace_scorer_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        variant_is_deterministic_and_constrains_about_the_share),
	    cmocka_unit_test(variant_gangs_keep_the_task_placeable),
	    cmocka_unit_test(stranding_ignores_classes_the_model_cannot_run),
	    cmocka_unit_test(
	        score_refuses_what_does_not_fit_and_prefers_the_tight_device),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
