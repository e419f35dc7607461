/*
 * bench_demand.c - gs-bench-demand: how many requests one node refuses
 * under each placement policy, and what the demand history (gs/demand.h)
 * buys `frag`. Pure CPU: gs_place on an in-memory inventory, as gpusliced
 * calls it (one node, single slices, the scorer rebuilt from the history
 * for every request).
 *
 * The node has 8 H100-SXM5-80GB GPUs (80 GiB each, no MIG). Requests
 * arrive one per tick from a seeded mix of slice shapes (memory only, as
 * most `gpuslice create --memory` calls are):
 *
 *   40% 40 GiB, 25% 20 GiB, 15% 10 GiB, 10% 60 GiB, 10% a whole GPU
 *
 * Each placed slice lives a uniform 1..2L-1 ticks (mean L, chosen so the
 * offered GPU demand is --load times the node's capacity). After a warm-up
 * of a tenth of the requests, the bench counts the requests refused (no
 * GPU could take them) and the GPU demand they carried, for
 *
 *   binpack       the fullest GPU that fits
 *   spread        the emptiest
 *   frag          gpuslice's scorer, the request standing for the demand
 *                 (what frag does without a history)
 *   frag+demand   the scorer built from every request seen so far (what
 *                 gpusliced does; no decay within a run)
 *
 *   gs-bench-demand [--requests N] [--load X] [--seeds N]
 *                   [--mix GIB:PCT,...] [--json]
 *
 * --mix replaces the mix: up to 8 shapes, memory in GiB (0: a whole GPU)
 * and share in % (adding up to 100), e.g. 30:50,50:50.
 *
 * Prints, per policy, the refused requests and refused GPU demand in % of
 * those offered (mean and standard deviation over the seeds).
 */
#include "gs/demand.h"
#include "gs/placement.h"
#include "gs/trace.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB   (1024ULL * 1024 * 1024)
#define NGPU  8
#define NPOL  4
#define SHAPE 8

static const char *const pol_name[NPOL] = {"binpack", "spread", "frag",
                                           "frag+demand"};

/* Shapes: memory in GiB (0 = a whole GPU), share of requests in %. */
static int n_shape = 5;
static int shape_gib[SHAPE] = {40, 20, 10, 60, 0};
static int shape_pct[SHAPE] = {40, 25, 15, 10, 10};

/* "GIB:PCT,..." (percentages adding up to 100); false when malformed. */
static bool parse_mix(const char *text)
{
	int n = 0, sum = 0;
	const char *p = text;

	while (*p && n < SHAPE) {
		char *end;
		long g = strtol(p, &end, 10), c;

		if (end == p || *end != ':' || g < 0 || g > 80)
			return false;
		p = end + 1;
		c = strtol(p, &end, 10);
		if (end == p || c < 1 || c > 100)
			return false;
		shape_gib[n] = (int)g;
		shape_pct[n] = (int)c;
		sum += (int)c;
		n++;
		p = end;
		if (*p == ',')
			p++;
		else if (*p != '\0')
			return false;
	}
	if (*p != '\0' || sum != 100)
		return false;
	n_shape = n;
	return true;
}

static uint64_t rng;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? (unsigned)(rng % n) : 0;
}

struct live {
	long end;
	struct gs_place_target t;
	struct gs_place_item it;
};

struct outcome {
	double refused_pct;
	double refused_gpu_pct;
};

static struct gs_place_item draw(double *gpu)
{
	struct gs_place_item it = {.kind = GS_PLACE_FRACTION,
	                           .mode = GS_MODE_TIMESLICE};
	unsigned r = rnd(100), acc = 0;

	for (int s = 0; s < n_shape; s++) {
		acc += (unsigned)shape_pct[s];
		if (r >= acc)
			continue;
		if (shape_gib[s] == 0) {
			it.kind = GS_PLACE_WHOLE;
			*gpu = 1;
		} else {
			it.memory_bytes = (uint64_t)shape_gib[s] * GIB;
			*gpu = shape_gib[s] / 80.0;
		}
		return it;
	}
	return it;
}

static int run(int pol, uint64_t seed, long n_req, double load,
               struct outcome *out)
{
	const struct gs_gpu_model *m = gs_catalog_find("H100-SXM5-80GB");
	struct gs_place_inv *inv = gs_place_inv_create();
	struct gs_place_gpu_desc gd = {.model = m, .memory_bytes = 80 * GIB};
	struct gs_errbuf eb = {0};
	struct gs_demand dem;
	struct live *lv;
	double mean_gpu = 0, offered = 0, refused_gpu = 0;
	long n_live = 0, counted = 0, refused = 0, life;
	int nd, g;

	for (int s = 0; s < n_shape; s++)
		mean_gpu += shape_pct[s] / 100.0 *
		            (shape_gib[s] ? shape_gib[s] / 80.0 : 1.0);
	life = lround(load * NGPU / mean_gpu);
	if (life < 1)
		life = 1;
	lv = calloc((size_t)n_req, sizeof(*lv));
	if (m == NULL || inv == NULL || lv == NULL ||
	    gs_place_inv_add_node(inv, "n", &nd, &eb) != GS_OK)
		return -1;
	for (int k = 0; k < NGPU; k++)
		if (gs_place_inv_add_gpu(inv, &gd, &g, &eb) != GS_OK)
			return -1;
	gs_demand_init(&dem, 0);
	rng = seed * 0x9e3779b97f4a7c15ull + 1;
	for (long t = 0; t < n_req; t++) {
		struct gs_place_request req = {.n = 1};
		struct gs_place_result res;
		struct gs_trace_scorer *sc = NULL;
		struct gs_demand_shape shape;
		double gpu = 0;
		gs_err err;

		/* Departures first. */
		for (long i = 0; i < n_live;) {
			if (lv[i].end > t) {
				i++;
				continue;
			}
			if (gs_place_release(inv, &lv[i].t, &lv[i].it, &eb))
				return -1;
			lv[i] = lv[--n_live];
		}
		req.item[0] = draw(&gpu);
		req.policy = pol == 0   ? GS_PLACE_BINPACK
		             : pol == 1 ? GS_PLACE_SPREAD
		                        : GS_PLACE_FRAG;
		if (pol == 3) {
			gs_demand_shape_of(&req.item[0], &shape);
			gs_demand_add(&dem, &shape, t, NULL, NULL, NULL);
			if (gs_demand_scorer(&dem, t, 80 * GIB, &sc, &eb))
				return -1;
			req.scorer = sc;
		}
		err = gs_place(inv, &req, &res, &eb);
		gs_trace_scorer_free(sc);
		if (t >= n_req / 10) {
			counted++;
			offered += gpu;
		}
		if (err == GS_ERR_NO_FIT) {
			if (t >= n_req / 10) {
				refused++;
				refused_gpu += gpu;
			}
			continue;
		}
		if (err != GS_OK ||
		    gs_place_commit(inv, &req, &res, &eb) != GS_OK)
			return -1;
		lv[n_live].end = t + 1 + rnd((unsigned)(2 * life - 1));
		lv[n_live].t = res.target[0];
		lv[n_live].it = req.item[0];
		n_live++;
	}
	out->refused_pct = 100.0 * (double)refused / (double)counted;
	out->refused_gpu_pct = 100.0 * refused_gpu / offered;
	free(lv);
	gs_place_inv_destroy(inv);
	return 0;
}

int main(int argc, char **argv)
{
	long n_req = 200000;
	double load = 1.2;
	int seeds = 10;
	int json = 0;
	struct outcome o[NPOL][64];

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--requests") == 0 && i + 1 < argc)
			n_req = atol(argv[++i]);
		else if (strcmp(argv[i], "--load") == 0 && i + 1 < argc)
			load = atof(argv[++i]);
		else if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc)
			seeds = atoi(argv[++i]);
		else if (strcmp(argv[i], "--json") == 0)
			json = 1;
		else if (strcmp(argv[i], "--mix") == 0 && i + 1 < argc &&
		         parse_mix(argv[i + 1]))
			i++;
		else {
			fprintf(stderr,
			        "usage: gs-bench-demand [--requests N] [--load X] [--seeds N] [--mix GIB:PCT,...] [--json]\n");
			return 2;
		}
	}
	if (n_req < 100 || n_req > 100000000 || !(load > 0) || load > 10 ||
	    seeds < 1 || seeds > 64) {
		fprintf(stderr, "gs-bench-demand: --requests 100.., --load 0..10, --seeds 1..64\n");
		return 2;
	}
	for (int p = 0; p < NPOL; p++)
		for (int s = 0; s < seeds; s++)
			if (run(p, (uint64_t)s + 1, n_req, load, &o[p][s])) {
				fprintf(stderr, "gs-bench-demand: %s failed\n",
				        pol_name[p]);
				return 1;
			}
	if (!json)
		printf("one node, 8 x 80 GiB; %ld requests, load %.2f, %d seeds\n"
		       "%-12s %18s %22s\n",
		       n_req, load, seeds, "policy", "refused requests %",
		       "refused GPU demand %");
	else
		printf("{\"requests\":%ld,\"load\":%.2f,\"seeds\":%d,\"policies\":[",
		       n_req, load, seeds);
	for (int p = 0; p < NPOL; p++) {
		double m1 = 0, m2 = 0, s1 = 0, s2 = 0;

		for (int s = 0; s < seeds; s++) {
			m1 += o[p][s].refused_pct / seeds;
			m2 += o[p][s].refused_gpu_pct / seeds;
		}
		for (int s = 0; s < seeds; s++) {
			s1 += pow(o[p][s].refused_pct - m1, 2);
			s2 += pow(o[p][s].refused_gpu_pct - m2, 2);
		}
		s1 = seeds > 1 ? sqrt(s1 / (seeds - 1)) : 0;
		s2 = seeds > 1 ? sqrt(s2 / (seeds - 1)) : 0;
		if (json)
			printf("%s{\"policy\":\"%s\",\"refused_pct\":%.3f,\"refused_pct_sd\":%.3f,\"refused_gpu_pct\":%.3f,\"refused_gpu_pct_sd\":%.3f}",
			       p ? "," : "", pol_name[p], m1, s1, m2, s2);
		else
			printf("%-12s %11.2f ± %4.2f %15.2f ± %4.2f\n",
			       pol_name[p], m1, s1, m2, s2);
	}
	if (json)
		printf("]}\n");
	return 0;
}
