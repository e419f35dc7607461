/*
 * test_trace.c - the trace replay core (gs/trace.h): the fragmentation
 * measure against the FGD simulator's reference vectors, the target
 * workload against our recomputation for the default list, the cluster
 * state rules, policy scores on hand-made nodes, and replay invariants.
 *
 * Reference data: tests/data/trace/ (copies of shared/traces/
 * fgd-reference/ and of the default trace lists).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/trace.h"
#include "trace_csv.h"
#include "trace_int.h"

#define DATA GS_TRACE_TEST_DATA

/* ---- helpers ---------------------------------------------------------- */

static char *slurp(const char *name, size_t *len)
{
	char path[1024];
	char *buf = NULL;
	struct gs_errbuf eb = {0};

	snprintf(path, sizeof(path), "%s/%s", DATA, name);
	assert_int_equal(gs_trace_csv_read_file(path, &buf, len, &eb), GS_OK);
	return buf;
}

static int model_id(struct gs_trace_models *m, const char *name)
{
	return gs_trace_models_intern(m, name, strlen(name));
}

/* Reads typical_pods_{A,B}.csv: cpu,gpu_milli,num_gpu,gpu_type,probability. */
static size_t read_classes(const char *name, struct gs_trace_models *models,
                           struct gs_trace_class *out, size_t cap)
{
	char path[1024], line[256];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", DATA, name);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f)); /* header */
	while (fgets(line, sizeof(line), f) && n < cap) {
		char type[64] = "";
		unsigned cpu, milli, num;
		double p;
		/* gpu_type may be empty: parse around it. */
		char *c1 = strchr(line, ','), *c2, *c3, *c4;
		assert_non_null(c1);
		c2 = strchr(c1 + 1, ',');
		c3 = strchr(c2 + 1, ',');
		c4 = strchr(c3 + 1, ',');
		assert_non_null(c4);
		cpu = (unsigned)strtoul(line, NULL, 10);
		milli = (unsigned)strtoul(c1 + 1, NULL, 10);
		num = (unsigned)strtoul(c2 + 1, NULL, 10);
		memcpy(type, c3 + 1, (size_t)(c4 - c3 - 1));
		p = strtod(c4 + 1, NULL);
		out[n] = (struct gs_trace_class){
		    .cpu_milli = cpu,
		    .gpu_milli = (uint16_t)milli,
		    .num_gpu = (uint8_t)num,
		    .spec = type[0] ? 1u << model_id(models, type) : 0,
		    .p = p,
		};
		n++;
	}
	fclose(f);
	return n;
}

/* ---- the fragmentation measure ---------------------------------------- */

static void frag_matches_all_seven_reference_cases(void **state)
{
	struct gs_trace_models models = {0};
	struct gs_trace_class a[64], b[64];
	struct gs_trace_workload wa, wb, wa1;
	struct gs_errbuf eb = {0};
	char path[1024], line[256];
	size_t na, nb, cases = 0;
	FILE *f;

	(void)state;
	na = read_classes("typical_pods_A.csv", &models, a, 64);
	nb = read_classes("typical_pods_B.csv", &models, b, 64);
	assert_int_equal(na, 35);
	assert_int_equal(nb, 31);
	assert_int_equal(gs_trace_workload_init_classes(&wa, a, na, &eb),
	                 GS_OK);
	assert_int_equal(gs_trace_workload_init_classes(&wb, b, nb, &eb),
	                 GS_OK);
	assert_int_equal(gs_trace_workload_init_classes(&wa1, a, 1, &eb),
	                 GS_OK);

	snprintf(path, sizeof(path), "%s/frag_cases.csv", DATA);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	while (fgets(line, sizeof(line), f)) {
		char set[8], gpus[128], type[32];
		unsigned cpu;
		double want, got;
		uint16_t g[GS_TRACE_MAX_DEVS];
		unsigned ng = 0;
		const struct gs_trace_workload *w;

		assert_int_equal(sscanf(line, "%7[^,],%u,%127[^,],%31[^,],%lf",
		                        set, &cpu, gpus, type, &want),
		                 5);
		for (char *t = strtok(gpus, ";"); t; t = strtok(NULL, ";"))
			g[ng++] = (uint16_t)atoi(t);
		w = strcmp(set, "A") == 0    ? &wa
		    : strcmp(set, "A1") == 0 ? &wa1
		                             : &wb;
		got = gs_trace_frag(w, cpu, g, ng,
		                    (unsigned)model_id(&models, type));
		if (fabs(got - want) > 0.01)
			fail_msg(
			    "case %zu (%s, cpu %u): frag %.4f, expected %.2f",
			    cases + 1, set, cpu, got, want);
		cases++;
	}
	fclose(f);
	assert_int_equal(cases, 7);
	gs_trace_workload_fini(&wa);
	gs_trace_workload_fini(&wb);
	gs_trace_workload_fini(&wa1);
}

static void
frag_is_zero_without_idle_gpu_and_all_idle_for_cpu_only(void **state)
{
	struct gs_trace_class cls[2] = {
	    {.cpu_milli = 1000, .p = 0.5}, /* CPU-only */
	    {.cpu_milli = 1000,
	     .gpu_milli = 500,
	     .num_gpu = 1,
	     .p = 0.5}, /* half GPU */
	};
	struct gs_trace_workload w;
	struct gs_errbuf eb = {0};
	uint16_t full[2] = {0, 0}, g[2] = {300, 1000};

	(void)state;
	assert_int_equal(gs_trace_workload_init_classes(&w, cls, 2, &eb),
	                 GS_OK);
	assert_true(gs_trace_frag(&w, 5000, full, 2, 0) == 0);
	/* CPU-only: all 1300 idle; half GPU fits: only the 300 device. */
	assert_true(fabs(gs_trace_frag(&w, 5000, g, 2, 0) -
	                 (0.5 * 1300 + 0.5 * 300)) < 1e-9);
	/* Not enough CPU for the half-GPU class: all idle for both. */
	assert_true(fabs(gs_trace_frag(&w, 500, g, 2, 0) - 1300) < 1e-9);
	gs_trace_workload_fini(&w);
}

static void target_workload_of_default_list_matches_reference(void **state)
{
	struct gs_trace_models models = {0};
	struct gs_trace_node *nodes;
	struct gs_trace_pod *pods;
	struct gs_trace_workload w;
	struct gs_errbuf eb = {0};
	size_t len, nn, np, k = 0;
	char *buf, line[256];
	char path[1024];
	FILE *f;

	(void)state;
	buf = slurp("openb_node_list_gpu_node.csv", &len);
	assert_int_equal(gs_trace_csv_parse_nodes(buf, len, "nodes", &models,
	                                          &nodes, &nn, &eb),
	                 GS_OK);
	free(buf);
	buf = slurp("openb_pod_list_default.csv", &len);
	assert_int_equal(
	    gs_trace_csv_parse_pods(buf, len, "pods", &models, &pods, &np, &eb),
	    GS_OK);
	free(buf);
	assert_int_equal(nn, 1213);
	assert_int_equal(np, 8152);

	assert_int_equal(gs_trace_workload_init(&w, pods, np, 95, &eb), GS_OK);
	assert_int_equal(w.n, 35);
	snprintf(path, sizeof(path), "%s/typical_pods_default.csv", DATA);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	while (fgets(line, sizeof(line), f)) {
		unsigned rank, cpu, milli, num, count;
		double p;
		/* workload,rank,cpu,milli,num,gpu_type(empty),count,probability
		 */
		assert_int_equal(sscanf(line, "default,%u,%u,%u,%u,,%u,%lf",
		                        &rank, &cpu, &milli, &num, &count, &p),
		                 6);
		assert_true(k < w.n);
		assert_int_equal(w.cls[k].cpu_milli, cpu);
		assert_int_equal(w.cls[k].gpu_milli, milli);
		assert_int_equal(w.cls[k].num_gpu, num);
		assert_int_equal(w.cls[k].count, count);
		assert_true(fabs(w.cls[k].p - p) < 1e-6);
		k++;
	}
	fclose(f);
	assert_int_equal(k, 35);
	gs_trace_workload_fini(&w);
	free(nodes);
	free(pods);
}

/* ---- models, tasks, cluster ------------------------------------------- */

static void models_intern_once_and_refuse_bad_names(void **state)
{
	struct gs_trace_models m = {0};
	char name[8];

	(void)state;
	assert_int_equal(gs_trace_models_intern(&m, "T4", 2), 0);
	assert_int_equal(gs_trace_models_intern(&m, "G2", 2), 1);
	assert_int_equal(gs_trace_models_intern(&m, "T4", 2), 0);
	assert_int_equal(gs_trace_models_find(&m, "G2", 2), 1);
	assert_int_equal(gs_trace_models_find(&m, "G", 1), -1);
	assert_int_equal(gs_trace_models_intern(&m, "", 0), -1);
	assert_int_equal(gs_trace_models_intern(
	                     &m, "0123456789012345678901234567890123", 34),
	                 -1);
	for (int i = 2; i < GS_TRACE_MAX_MODELS; i++) {
		snprintf(name, sizeof(name), "m%d", i);
		assert_int_equal(gs_trace_models_intern(&m, name, strlen(name)),
		                 i);
	}
	assert_int_equal(gs_trace_models_intern(&m, "one-more", 8), -1);
}

static void pod_validity_follows_the_request_kinds(void **state)
{
	static const struct {
		uint16_t milli;
		uint8_t num;
		bool valid;
	} cases[] = {
	    {0, 0, true},      {500, 1, true},   {1000, 1, true},
	    {1000, 8, true},   {500, 2, false},  {0, 1, false},
	    {300, 0, false},   {1001, 1, false}, {1000, 16, true},
	    {1000, 17, false},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gs_trace_pod p = {.cpu_milli = 1000,
		                         .gpu_milli = cases[i].milli,
		                         .num_gpu = cases[i].num};
		if (gs_trace_pod_is_valid(&p) != cases[i].valid)
			fail_msg("case %zu: milli %u num %u", i, cases[i].milli,
			         cases[i].num);
	}
}

static void cluster_fits_checks_cpu_memory_model_and_devices(void **state)
{
	const struct gs_trace_node nodes[2] = {
	    {.cpu_milli = 8000, .memory_mib = 1024, .gpus = 2, .model = 0},
	    {.cpu_milli = 64000, .memory_mib = 65536, .gpus = 0},
	};
	struct gs_trace_cluster c;
	struct gs_errbuf eb = {0};
	uint8_t devs[2] = {0, 1};
	static const struct {
		struct gs_trace_pod pod;
		bool fits0, fits1;
	} cases[] = {
	    {{.cpu_milli = 8000, .memory_mib = 1024}, true, true},
	    {{.cpu_milli = 8001}, false, true},
	    {{.cpu_milli = 1000, .memory_mib = 1025}, false, true},
	    {{.cpu_milli = 1000, .gpu_milli = 500, .num_gpu = 1}, true, false},
	    {{.cpu_milli = 1000, .gpu_milli = 1000, .num_gpu = 2}, true, false},
	    {{.cpu_milli = 1000, .gpu_milli = 1000, .num_gpu = 4},
	     false,
	     false},
	    {{.cpu_milli = 1000,
	      .gpu_milli = 500,
	      .num_gpu = 1,
	      .spec = 1u << 1},
	     false,
	     false},
	    {{.cpu_milli = 1000,
	      .gpu_milli = 500,
	      .num_gpu = 1,
	      .spec = 1u << 0},
	     true,
	     false},
	    /* A CPU-only task ignores a model restriction. */
	    {{.cpu_milli = 1000, .spec = 1u << 1}, true, true},
	};

	(void)state;
	assert_int_equal(gs_trace_cluster_init(&c, nodes, 2, &eb), GS_OK);
	assert_int_equal(c.gpu_capacity, 2000);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (gs_trace_cluster_fits(&c, 0, &cases[i].pod) !=
		        cases[i].fits0 ||
		    gs_trace_cluster_fits(&c, 1, &cases[i].pod) !=
		        cases[i].fits1)
			fail_msg("case %zu", i);
	}
	/* After a 0.6 share on device 1, a 0.5 share still fits (device 0)
	 * but two whole GPUs do not. */
	{
		struct gs_trace_pod share = {
		    .cpu_milli = 1000, .gpu_milli = 600, .num_gpu = 1};
		struct gs_trace_pod two = {
		    .cpu_milli = 1000, .gpu_milli = 1000, .num_gpu = 2};
		struct gs_trace_pod half = {
		    .cpu_milli = 1000, .gpu_milli = 500, .num_gpu = 1};
		uint32_t gen = c.node[0].gen;
		gs_trace_cluster_bind(&c, 0, &share, &devs[1]);
		assert_int_not_equal(c.node[0].gen, gen);
		assert_int_equal(c.node[0].gpu_free[1], 400);
		assert_int_equal(c.node[0].gpu_free_total, 1400);
		assert_int_equal(c.node[0].full_free, 1);
		assert_int_equal(c.node[0].max_free, 1000);
		assert_int_equal(c.node[0].cpu_free, 7000);
		assert_int_equal(c.node[0].tags, GS_TRACE_TAG_SHARE);
		assert_int_equal(c.allocated, 600);
		assert_true(gs_trace_cluster_fits(&c, 0, &half));
		assert_false(gs_trace_cluster_fits(&c, 0, &two));
		gs_trace_cluster_bind(&c, 0, &half, &devs[0]);
		assert_int_equal(c.node[0].max_free, 500);
		assert_false(gs_trace_cluster_fits(&c, 0, &share));
	}
	gs_trace_cluster_reset(&c);
	assert_int_equal(c.allocated, 0);
	assert_int_equal(c.node[0].gpu_free_total, 2000);
	gs_trace_cluster_fini(&c);
}

static void bestfit_device_is_the_tightest_that_fits(void **state)
{
	struct gs_trace_nstate s = {.gpus = 4,
	                            .gpu_free = {900, 300, 500, 300}};

	(void)state;
	assert_int_equal(gs__trace_dev_bestfit(&s, 300), 1);
	assert_int_equal(gs__trace_dev_bestfit(&s, 400), 2);
	assert_int_equal(gs__trace_dev_bestfit(&s, 600), 0);
	assert_int_equal(gs__trace_dev_bestfit(&s, 950), -1);
}

static void policy_names_round_trip(void **state)
{
	(void)state;
	for (int p = 0; p < GS_TRACE_POLICY__COUNT; p++) {
		assert_non_null(gs_trace_policy_name(p));
		assert_non_null(gs_trace_policy_display(p));
		assert_int_equal(gs_trace_policy_parse(gs_trace_policy_name(p)),
		                 p);
		assert_non_null(gs__trace_policy_ops(p));
	}
	assert_int_equal(gs_trace_policy_parse("FGD"), GS_TRACE_POLICY_FGD);
	assert_int_equal(gs_trace_policy_parse("tetris"), -1);
	assert_null(gs_trace_policy_name(GS_TRACE_POLICY__COUNT));
}

/* ---- policy scores on hand-made nodes ---------------------------------- */

/* A run over `nodes` whose target workload is `cls` and whose task list
 * holds one task of each class. */
struct mini {
	struct gs__trace_run run;
	struct gs_trace_workload w;
	struct gs_trace_pod pods[8];
	void *st;
	const struct gs__trace_policy_ops *ops;
};

static void mini_init(struct mini *m, const struct gs_trace_node *nodes,
                      size_t n, const struct gs_trace_class *cls, size_t nc,
                      enum gs_trace_policy p)
{
	struct gs_errbuf eb = {0};

	memset(m, 0, sizeof(*m));
	assert_int_equal(gs_trace_cluster_init(&m->run.cl, nodes, n, &eb),
	                 GS_OK);
	assert_int_equal(gs_trace_workload_init_classes(&m->w, cls, nc, &eb),
	                 GS_OK);
	m->run.target = &m->w;
	m->run.epoch = 1;
	assert_true(nc <= 8);
	for (size_t k = 0; k < nc; k++) {
		m->pods[k] = (struct gs_trace_pod){
		    .cpu_milli = cls[k].cpu_milli,
		    .gpu_milli = cls[k].gpu_milli,
		    .num_gpu = cls[k].num_gpu,
		    .spec = cls[k].spec,
		};
	}
	m->run.pods = m->pods;
	m->run.n_pods = nc;
	m->ops = gs__trace_policy_ops(p);
	if (m->ops->init)
		assert_int_equal(m->ops->init(&m->st, &m->run, &eb), GS_OK);
}

static void mini_fini(struct mini *m)
{
	if (m->ops->fini)
		m->ops->fini(m->st);
	gs_trace_cluster_fini(&m->run.cl);
	gs_trace_workload_fini(&m->w);
}

static void
fgd_and_gpuslice_fill_a_partial_gpu_before_breaking_a_whole_one(void **state)
{
	const struct gs_trace_node nodes[2] = {
	    {.cpu_milli = 32000, .memory_mib = 1 << 16, .gpus = 2},
	    {.cpu_milli = 32000, .memory_mib = 1 << 16, .gpus = 2},
	};
	const struct gs_trace_class cls[2] = {
	    {.cpu_milli = 2000, .gpu_milli = 1000, .num_gpu = 1, .p = 0.5},
	    {.cpu_milli = 2000, .gpu_milli = 400, .num_gpu = 1, .p = 0.5},
	};
	const enum gs_trace_policy pols[2] = {GS_TRACE_POLICY_FGD,
	                                      GS_TRACE_POLICY_GPUSLICE};
	struct gs_trace_pod first = {
	    .cpu_milli = 2000, .gpu_milli = 600, .num_gpu = 1};
	struct gs_trace_pod share = {
	    .cpu_milli = 2000, .gpu_milli = 400, .num_gpu = 1};

	(void)state;
	for (size_t k = 0; k < 2; k++) {
		struct mini m;
		uint8_t dev = 1;
		int d0 = -1, d1 = -1;
		double s0, s1;

		mini_init(&m, nodes, 2, cls, 2, pols[k]);
		gs_trace_cluster_bind(&m.run.cl, 0, &first, &dev);
		s0 = m.ops->score(m.st, &m.run, 0, &share, &d0);
		s1 = m.ops->score(m.st, &m.run, 1, &share, &d1);
		/* Node 0: the 0.4 share closes device 1's 0.4 gap. */
		if (!(s0 > s1))
			fail_msg("%s: partial node %.3f, empty node %.3f",
			         gs_trace_policy_name(pols[k]), s0, s1);
		assert_int_equal(d0, 1);
		mini_fini(&m);
	}
}

static void gpuslice_keeps_cpu_only_work_off_cpu_tight_gpu_nodes(void **state)
{
	/* Node 0: 4 GPUs and just the CPU they need; node 1: same GPUs,
	 * plenty of CPU. A CPU-only task strands GPU on node 0 only. */
	const struct gs_trace_node nodes[2] = {
	    {.cpu_milli = 16000, .memory_mib = 1 << 16, .gpus = 4},
	    {.cpu_milli = 96000, .memory_mib = 1 << 16, .gpus = 4},
	};
	const struct gs_trace_class cls[2] = {
	    {.cpu_milli = 4000, .gpu_milli = 1000, .num_gpu = 1, .p = 0.8},
	    {.cpu_milli = 6000, .p = 0.2},
	};
	struct gs_trace_pod cpu_only = {.cpu_milli = 6000};
	struct gs_trace_cand c[2];
	struct mini m;
	int d = -1;

	(void)state;
	mini_init(&m, nodes, 2, cls, 2, GS_TRACE_POLICY_GPUSLICE);
	/* FGD sees no difference (the GPU class still fits on node 0); the
	 * guard lets the stranding cost choose, whichever node comes first. */
	assert_true(m.ops->cand(m.st, &m.run, 0, &cpu_only, &c[0], &d));
	assert_true(m.ops->cand(m.st, &m.run, 1, &cpu_only, &c[1], &d));
	assert_true(c[0].fgd == c[1].fgd && c[0].delta == c[1].delta);
	assert_int_equal(m.ops->pick(m.st, c, 2), 1);
	{
		struct gs_trace_cand swap[2] = {c[1], c[0]};
		assert_int_equal(m.ops->pick(m.st, swap, 2), 0);
	}
	mini_fini(&m);
}

static void packing_and_clustering_bands_order_nodes(void **state)
{
	const struct gs_trace_node nodes[3] = {
	    {.cpu_milli = 32000, .memory_mib = 1 << 16, .gpus = 8},
	    {.cpu_milli = 32000, .memory_mib = 1 << 16, .gpus = 8},
	    {.cpu_milli = 32000, .memory_mib = 1 << 16, .gpus = 2},
	};
	const struct gs_trace_class cls[1] = {
	    {.cpu_milli = 1000, .gpu_milli = 500, .num_gpu = 1, .p = 1}};
	struct gs_trace_pod share = {
	    .cpu_milli = 1000, .gpu_milli = 300, .num_gpu = 1};
	struct gs_trace_pod whole = {
	    .cpu_milli = 1000, .gpu_milli = 1000, .num_gpu = 1};
	struct mini m;
	uint8_t dev = 0;
	int d = -1;

	(void)state;
	mini_init(&m, nodes, 3, cls, 1, GS_TRACE_POLICY_PACKING);
	gs_trace_cluster_bind(&m.run.cl, 0, &share, &dev);
	/* Packing: a share on the used GPU (100 - 70/10 = 93) beats an idle
	 * node (33 - 8 = 25, 33 - 2 = 31: the smaller idle node wins). */
	assert_true(m.ops->score(m.st, &m.run, 0, &share, &d) == 93);
	assert_true(m.ops->score(m.st, &m.run, 1, &share, &d) == 25);
	assert_true(m.ops->score(m.st, &m.run, 2, &share, &d) == 31);
	/* A whole GPU on the used node: 50 - 1. */
	assert_true(m.ops->score(m.st, &m.run, 0, &whole, &d) == 49);
	mini_fini(&m);

	mini_init(&m, nodes, 3, cls, 1, GS_TRACE_POLICY_CLUSTERING);
	gs_trace_cluster_bind(&m.run.cl, 0, &share, &dev);
	/* Same kind only: 75 + 25 * 300 / 8000 = 75; idle: 25; other kind on
	 * a share-only node: 0 + 0. */
	assert_true(m.ops->score(m.st, &m.run, 0, &share, &d) == 75);
	assert_true(m.ops->score(m.st, &m.run, 1, &share, &d) == 25);
	assert_true(m.ops->score(m.st, &m.run, 0, &whole, &d) == 0);
	mini_fini(&m);
}

/* ---- replay ------------------------------------------------------------ */

static const struct gs_trace_node small_nodes[4] = {
    {.cpu_milli = 32000, .memory_mib = 65536, .gpus = 4},
    {.cpu_milli = 32000, .memory_mib = 65536, .gpus = 4},
    {.cpu_milli = 16000, .memory_mib = 65536, .gpus = 2},
    {.cpu_milli = 64000, .memory_mib = 65536, .gpus = 1},
};

static const struct gs_trace_pod small_pods[6] = {
    {.cpu_milli = 4000, .memory_mib = 1024, .gpu_milli = 500, .num_gpu = 1},
    {.cpu_milli = 4000, .memory_mib = 1024, .gpu_milli = 1000, .num_gpu = 1},
    {.cpu_milli = 2000, .memory_mib = 1024, .gpu_milli = 250, .num_gpu = 1},
    {.cpu_milli = 8000, .memory_mib = 1024, .gpu_milli = 1000, .num_gpu = 2},
    {.cpu_milli = 6000, .memory_mib = 1024},
    {.cpu_milli = 3000, .memory_mib = 1024, .gpu_milli = 700, .num_gpu = 1},
};

static void replay_is_deterministic_for_a_seed(void **state)
{
	struct gs_trace_replay_cfg cfg;
	struct gs_trace_result *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	struct gs_errbuf eb = {0};

	(void)state;
	gs_trace_replay_cfg_default(&cfg);
	for (int p = 0; p < GS_TRACE_POLICY__COUNT; p++) {
		assert_int_equal(gs_trace_replay(small_nodes, 4, small_pods, 6,
		                                 p, &cfg, a, &eb),
		                 GS_OK);
		assert_int_equal(gs_trace_replay(small_nodes, 4, small_pods, 6,
		                                 p, &cfg, b, &eb),
		                 GS_OK);
		assert_memory_equal(a->unalloc_pct, b->unalloc_pct,
		                    sizeof(a->unalloc_pct));
		assert_int_equal(a->tasks, b->tasks);
		assert_int_equal(a->failed, b->failed);
		/* Allocation never exceeds capacity, and unallocated at a level
		 * is at least 100 - level minus the rounding. */
		for (int l = 0; l <= GS_TRACE_MAX_LEVEL; l++) {
			if (isnan(a->unalloc_pct[l]))
				continue;
			assert_true(a->unalloc_pct[l] >= -1e-9);
			assert_true(a->unalloc_pct[l] <= 100 + 1e-9);
		}
	}
	free(a);
	free(b);
}

/* A synthetic cluster of mixed nodes and a task list drawn from a fixed
 * generator: enough variety (shares, whole GPUs, gangs, CPU-only, a model
 * restriction) to exercise every scoring path. */
static size_t synth(struct gs_trace_node *nodes, size_t nn,
                    struct gs_trace_pod *pods, size_t np)
{
	static const uint16_t shares[] = {810, 470, 320, 650, 160, 230, 550};
	uint64_t x = 12345;

	for (size_t i = 0; i < nn; i++) {
		static const struct gs_trace_node kinds[4] = {
		    {.cpu_milli = 96000,
		     .memory_mib = 393216,
		     .gpus = 8,
		     .model = 0},
		    {.cpu_milli = 104000,
		     .memory_mib = 524288,
		     .gpus = 2,
		     .model = 1},
		    {.cpu_milli = 8000,
		     .memory_mib = 61440,
		     .gpus = 1,
		     .model = 2},
		    {.cpu_milli = 64000,
		     .memory_mib = 262144,
		     .gpus = 4,
		     .model = 2},
		};
		nodes[i] = kinds[i % 4];
	}
	for (size_t i = 0; i < np; i++) {
		unsigned k;
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		k = (unsigned)(x >> 33) % 20;
		pods[i] = (struct gs_trace_pod){
		    .cpu_milli = 1000 + (unsigned)(x >> 40) % 16000,
		    .memory_mib = 4096};
		if (k < 8) {
			pods[i].num_gpu = 1;
			pods[i].gpu_milli = shares[k % 7];
		} else if (k < 15) {
			pods[i].num_gpu = 1;
			pods[i].gpu_milli = 1000;
		} else if (k < 17) {
			pods[i].num_gpu = k == 15 ? 2 : 8;
			pods[i].gpu_milli = 1000;
			pods[i].cpu_milli *= 4;
		}
		if (k == 7)
			pods[i].spec = 1u << 2;
	}
	return np;
}

static void score_cache_changes_nothing(void **state)
{
	struct gs_trace_node nodes[48];
	struct gs_trace_pod pods[400];
	struct gs_trace_replay_cfg cfg;
	struct gs_trace_result *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	struct gs_errbuf eb = {0};

	(void)state;
	synth(nodes, 48, pods, 400);
	gs_trace_replay_cfg_default(&cfg);
	for (int p = 0; p < GS_TRACE_POLICY__COUNT; p++) {
		cfg.no_cache = false;
		assert_int_equal(
		    gs_trace_replay(nodes, 48, pods, 400, p, &cfg, a, &eb),
		    GS_OK);
		cfg.no_cache = true;
		assert_int_equal(
		    gs_trace_replay(nodes, 48, pods, 400, p, &cfg, b, &eb),
		    GS_OK);
		assert_true(a->failed > 0); /* the cluster does fill up */
		assert_int_equal(a->failed, b->failed);
		assert_memory_equal(a->unalloc_pct, b->unalloc_pct,
		                    sizeof(a->unalloc_pct));
		assert_memory_equal(a->frag_pct, b->frag_pct,
		                    sizeof(a->frag_pct));
	}
	free(a);
	free(b);
}

static void replay_inflates_demand_to_the_tune_target(void **state)
{
	struct gs_trace_replay_cfg cfg;
	struct gs_trace_result *r = malloc(sizeof(*r));
	struct gs_errbuf eb = {0};

	(void)state;
	gs_trace_replay_cfg_default(&cfg);
	assert_int_equal(gs_trace_replay(small_nodes, 4, small_pods, 6,
	                                 GS_TRACE_POLICY_FGD, &cfg, r, &eb),
	                 GS_OK);
	/* 11 GPUs of capacity; stops before 130 % by the per-GPU check, so
	 * within one task's (2 GPUs = 18 %) overshoot of it. */
	assert_true(r->arrived_pct > 130 - 10 && r->arrived_pct <= 130 + 19);
	assert_true(r->tasks > 6);
	cfg.tune = 0;
	assert_int_equal(gs_trace_replay(small_nodes, 4, small_pods, 6,
	                                 GS_TRACE_POLICY_FGD, &cfg, r, &eb),
	                 GS_OK);
	assert_int_equal(r->tasks, 6);
	assert_true(fabs(r->arrived_pct - 100.0 * 4450 / 11000) < 1e-9);
	/* A list asking for more than the target loses tasks. */
	cfg.tune = 0.2;
	assert_int_equal(gs_trace_replay(small_nodes, 4, small_pods, 6,
	                                 GS_TRACE_POLICY_FGD, &cfg, r, &eb),
	                 GS_OK);
	assert_true(r->tasks < 6);
	assert_true(r->arrived_pct <= 20 + 1e-9);
	free(r);
}

static void replay_terminates_without_gpu_demand(void **state)
{
	const struct gs_trace_pod cpu_only[2] = {{.cpu_milli = 1000},
	                                         {.cpu_milli = 2000}};
	const struct gs_trace_pod tiny[2] = {
	    {.cpu_milli = 1000},
	    {.cpu_milli = 1000, .gpu_milli = 1, .num_gpu = 1}};
	struct gs_trace_replay_cfg cfg;
	struct gs_trace_result *r = malloc(sizeof(*r));
	struct gs_errbuf eb = {0};

	(void)state;
	gs_trace_replay_cfg_default(&cfg);
	assert_int_equal(gs_trace_replay(small_nodes, 4, cpu_only, 2,
	                                 GS_TRACE_POLICY_GPUSLICE, &cfg, r,
	                                 &eb),
	                 GS_OK);
	assert_int_equal(r->tasks, 2);
	assert_true(r->arrived_pct == 0);
	/* 1 milli of demand against 14.3 GPUs of target: capped, not hung. */
	assert_int_equal(gs_trace_replay(small_nodes, 4, tiny, 2,
	                                 GS_TRACE_POLICY_GPUSLICE, &cfg, r,
	                                 &eb),
	                 GS_OK);
	assert_true(r->tasks <= 2 * 64 + 1024);
	free(r);
}

static void replay_refuses_empty_lists_and_clusters_without_gpus(void **state)
{
	const struct gs_trace_node cpu_nodes[1] = {
	    {.cpu_milli = 1000, .memory_mib = 10}};
	const struct gs_trace_pod bad[1] = {
	    {.cpu_milli = 1, .gpu_milli = 500, .num_gpu = 2}};
	struct gs_trace_replay_cfg cfg;
	struct gs_trace_result *r = malloc(sizeof(*r));
	struct gs_errbuf eb = {0};

	(void)state;
	gs_trace_replay_cfg_default(&cfg);
	assert_int_equal(gs_trace_replay(small_nodes, 0, small_pods, 6,
	                                 GS_TRACE_POLICY_FGD, &cfg, r, &eb),
	                 GS_ERR_INVALID);
	assert_int_equal(gs_trace_replay(small_nodes, 4, small_pods, 0,
	                                 GS_TRACE_POLICY_FGD, &cfg, r, &eb),
	                 GS_ERR_INVALID);
	gs_errbuf_init(&eb);
	assert_int_equal(gs_trace_replay(cpu_nodes, 1, small_pods, 6,
	                                 GS_TRACE_POLICY_FGD, &cfg, r, &eb),
	                 GS_ERR_INVALID);
	assert_non_null(strstr(eb.msg, "no GPUs"));
	assert_int_equal(gs_trace_replay(small_nodes, 4, bad, 1,
	                                 GS_TRACE_POLICY_FGD, &cfg, r, &eb),
	                 GS_ERR_INVALID);
	assert_int_equal(gs_trace_replay(small_nodes, 4, small_pods, 6,
	                                 GS_TRACE_POLICY__COUNT, &cfg, r, &eb),
	                 GS_ERR_INVALID);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(frag_matches_all_seven_reference_cases),
	    cmocka_unit_test(
	        frag_is_zero_without_idle_gpu_and_all_idle_for_cpu_only),
	    cmocka_unit_test(target_workload_of_default_list_matches_reference),
	    cmocka_unit_test(models_intern_once_and_refuse_bad_names),
	    cmocka_unit_test(pod_validity_follows_the_request_kinds),
	    cmocka_unit_test(cluster_fits_checks_cpu_memory_model_and_devices),
	    cmocka_unit_test(bestfit_device_is_the_tightest_that_fits),
	    cmocka_unit_test(policy_names_round_trip),
	    cmocka_unit_test(
	        fgd_and_gpuslice_fill_a_partial_gpu_before_breaking_a_whole_one),
	    cmocka_unit_test(
	        gpuslice_keeps_cpu_only_work_off_cpu_tight_gpu_nodes),
	    cmocka_unit_test(packing_and_clustering_bands_order_nodes),
	    cmocka_unit_test(replay_is_deterministic_for_a_seed),
	    cmocka_unit_test(score_cache_changes_nothing),
	    cmocka_unit_test(replay_inflates_demand_to_the_tune_target),
	    cmocka_unit_test(replay_terminates_without_gpu_demand),
	    cmocka_unit_test(
	        replay_refuses_empty_lists_and_clusters_without_gpus),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
