/*
 * bench_placement.c - gs-bench-placement: placement speed on a simulated
 * cluster (pure CPU: gs_place over an in-memory inventory, no GPU or sim).
 *
 * The cluster has 1000 nodes of 8 GPUs by default: three quarters are
 * H100-SXM5-80GB nodes without MIG, one quarter A100-SXM4-40GB nodes in
 * MIG mode, each GPU cut in one of three layouts (the seed study's
 * 1g.5gb x2 + 2g.10gb + 3g.20gb, seven 1g.5gb, two 3g.20gb). 100000
 * requests arrive one per tick, a seeded mix of
 *
 *   52% fractional (timeslice or mps, 1-40 GiB, 5-100% compute)
 *   10% whole GPU
 *   15% MIG profile (1g.5gb, 2g.10gb, 3g.20gb)
 *    5% mig+timeslice / mig+mps inside an instance
 *   18% gangs: same-gpu (2-4 small fractions), same-parent (1g.5gb +
 *       3g.20gb, the DRA parentUUID claim), same-node (2-8 slices)
 *
 * and each placed request holds its devices for a random lifetime (0 to
 * 2x the mean, 16000 ticks), so the cluster fills up and then churns at a
 * steady state where some requests do not fit (their "why" is built too,
 * and timed). The time of each request covers gs_place and, when it fits,
 * gs_place_commit; the total also covers releasing expired slices. The
 * total is given as CPU time of the process (what one core spends, the
 * figure to hold against the target on a shared machine) and as wall
 * time; per-request percentiles are wall time.
 *
 *   gs-bench-placement [--nodes N] [--requests N] [--policy binpack|spread|frag]
 *                      [--seed N] [--json]
 *
 * Prints the total time, per-request p50/p99/max, and how many fit.
 */
#include "gs/placement.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GIB           (1024ULL * 1024 * 1024)
#define MEAN_LIFETIME 16000

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static unsigned rnd(unsigned n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return n ? (unsigned)(rng_state % n) : 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU time of this process: the one-core figure on a shared machine. */
static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct live {
	struct gs_place_request req;
	struct gs_place_result res;
};

/*
 * Live placements: records in a pool (with a free list), and a binary
 * min-heap of (expiry, record) so the heap moves 16 bytes, not records.
 */
struct entry {
	long expires;
	size_t rec;
};

struct heap {
	size_t n, cap;
	struct entry *v;
	struct live *pool;
	size_t *free_rec;
	size_t n_free, n_pool;
};

static void *grow_or_die(void *p, size_t n, size_t size)
{
	p = realloc(p, n * size);
	if (p == NULL) {
		fprintf(stderr, "gs-bench-placement: out of memory\n");
		exit(1);
	}
	return p;
}

/* A record to fill; push it with heap_push(). */
static size_t rec_take(struct heap *h)
{
	if (h->n_free > 0)
		return h->free_rec[--h->n_free];
	if (h->n_pool % 1024 == 0) {
		h->pool =
		    grow_or_die(h->pool, h->n_pool + 1024, sizeof(*h->pool));
		h->free_rec = grow_or_die(h->free_rec, h->n_pool + 1024,
		                          sizeof(*h->free_rec));
	}
	return h->n_pool++;
}

static void rec_give(struct heap *h, size_t rec)
{
	h->free_rec[h->n_free++] = rec;
}

static void heap_push(struct heap *h, long expires, size_t rec)
{
	size_t i;

	if (h->n == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 1024;
		h->v = grow_or_die(h->v, h->cap, sizeof(*h->v));
	}
	i = h->n++;
	while (i > 0 && h->v[(i - 1) / 2].expires > expires) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i].expires = expires;
	h->v[i].rec = rec;
}

static size_t heap_pop(struct heap *h)
{
	size_t rec = h->v[0].rec, i = 0;
	struct entry last = h->v[--h->n];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->v[c + 1].expires < h->v[c].expires)
			c++;
		if (h->v[c].expires >= last.expires)
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n > 0)
		h->v[i] = last;
	return rec;
}

static int die(const char *what, const struct gs_errbuf *eb)
{
	fprintf(stderr, "gs-bench-placement: %s: %s\n", what, eb->msg);
	exit(1);
}

static struct gs_place_inv *build_cluster(int nodes)
{
	static const char *const layouts[3][8] = {
	    {"1g.5gb@0", "1g.5gb@1", "2g.10gb@2", "3g.20gb@4"},
	    {"1g.5gb@0", "1g.5gb@1", "1g.5gb@2", "1g.5gb@3", "1g.5gb@4",
	     "1g.5gb@5", "1g.5gb@6"},
	    {"3g.20gb@0", "3g.20gb@4"},
	};
	const struct gs_gpu_model *h100 = gs_catalog_find("H100-SXM5-80GB");
	const struct gs_gpu_model *a100 = gs_catalog_find("A100-SXM4-40GB");
	struct gs_place_inv *inv = gs_place_inv_create();
	struct gs_errbuf eb = {0};

	if (inv == NULL || h100 == NULL || a100 == NULL) {
		fprintf(stderr, "gs-bench-placement: catalog or memory\n");
		exit(1);
	}
	for (int n = 0; n < nodes; n++) {
		char name[32];
		bool mig = n % 4 == 3;
		int id;

		snprintf(name, sizeof(name), "n%04d", n);
		if (gs_place_inv_add_node(inv, name, &id, &eb) != GS_OK)
			die("add node", &eb);
		for (int g = 0; g < 8; g++) {
			struct gs_place_gpu_desc d = {
			    .model = mig ? a100 : h100, .mig_enabled = mig};

			if (gs_place_inv_add_gpu(inv, &d, &id, &eb) != GS_OK)
				die("add GPU", &eb);
			for (int i = 0; mig && i < 8 && layouts[g % 3][i];
			     i++) {
				struct gs_place_mig_desc md = {0};
				char prof[32];
				const char *at = strchr(layouts[g % 3][i], '@');

				snprintf(prof, sizeof(prof), "%.*s",
				         (int)(at - layouts[g % 3][i]),
				         layouts[g % 3][i]);
				md.profile = gs_catalog_profile(a100, prof);
				md.start = atoi(at + 1);
				if (gs_place_inv_add_mig(inv, &md, &id, &eb) !=
				    GS_OK)
					die("add MIG instance", &eb);
			}
		}
	}
	return inv;
}

static struct gs_place_item fraction(uint64_t max_gib, int max_pct)
{
	struct gs_place_item it = {.kind = GS_PLACE_FRACTION};

	it.mode = rnd(10) < 7 ? GS_MODE_TIMESLICE : GS_MODE_MPS;
	it.memory_bytes = (1 + rnd((unsigned)max_gib)) * GIB;
	it.compute_pct = 5 * (1 + (int)rnd((unsigned)max_pct / 5));
	return it;
}

static struct gs_place_item mig_item(const char *profile)
{
	struct gs_place_item it = {.kind = GS_PLACE_MIG, .mode = GS_MODE_MIG};

	snprintf(it.mig_profile, sizeof(it.mig_profile), "%s", profile);
	return it;
}

enum {
	K_FRACTION,
	K_WHOLE,
	K_MIG,
	K_LAYERED,
	K_GANG_GPU,
	K_GANG_PARENT,
	K_GANG_NODE,
	K__COUNT
};
static const char *const kind_names[K__COUNT] = {
    "fraction", "whole",       "mig",      "layered",
    "gang-gpu", "gang-parent", "gang-node"};

static int random_request(struct gs_place_request *req)
{
	static const char *const profs[] = {"1g.5gb", "1g.5gb", "1g.5gb",
	                                    "2g.10gb", "3g.20gb"};
	unsigned r = rnd(100);
	int kind;

	memset(req, 0, sizeof(*req));
	req->n = 1;
	if (r < 52) {
		kind = K_FRACTION;
		req->item[0] = fraction(40, 100);
	} else if (r < 62) {
		kind = K_WHOLE;
		req->item[0].kind = GS_PLACE_WHOLE;
	} else if (r < 77) {
		kind = K_MIG;
		req->item[0] = mig_item(profs[rnd(5)]);
	} else if (r < 82) {
		kind = K_LAYERED;
		req->item[0] = fraction(4, 50);
		req->item[0].mode =
		    rnd(2) ? GS_MODE_MIG_TIMESLICE : GS_MODE_MIG_MPS;
	} else if (r < 88) {
		kind = K_GANG_GPU;
		req->gang = GS_GANG_SAME_GPU;
		req->n = 2 + (int)rnd(3);
		req->item[0] = fraction(8, 25);
		for (int k = 1; k < req->n; k++) {
			req->item[k] = fraction(8, 25);
			req->item[k].mode = req->item[0].mode;
		}
	} else if (r < 94) {
		kind = K_GANG_PARENT;
		req->gang = GS_GANG_SAME_PARENT;
		req->n = 2;
		req->item[0] = mig_item("1g.5gb");
		req->item[1] = mig_item(rnd(2) ? "3g.20gb" : "1g.5gb");
	} else {
		kind = K_GANG_NODE;
		req->gang = GS_GANG_SAME_NODE;
		req->n = 2 + (int)rnd(7);
		for (int k = 0; k < req->n; k++) {
			if (rnd(2)) {
				req->item[k].kind = GS_PLACE_WHOLE;
			} else {
				req->item[k] = fraction(20, 50);
				req->item[k].mode = GS_MODE_TIMESLICE;
			}
		}
	}
	return kind;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: gs-bench-placement [--nodes N] [--requests N] [--policy binpack|spread|frag] [--seed N] [--json]\n");
}

int main(int argc, char **argv)
{
	int nodes = 1000, n_req = 100000, fit[K__COUNT] = {0},
	    asked[K__COUNT] = {0};
	double kind_s[K__COUNT] = {0}, nofit_s = 0;
	enum gs_place_policy policy = GS_PLACE_BINPACK;
	bool json = false, exhausted = false;
	struct heap live = {0};
	struct gs_place_inv *inv;
	double *lat, t0, c0, total, total_cpu, build_s;
	long released = 0;

	for (int i = 1; i < argc; i++) {
		struct gs_errbuf eb = {0};

		if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (i + 1 < argc && strcmp(argv[i], "--nodes") == 0) {
			nodes = atoi(argv[++i]);
		} else if (i + 1 < argc && strcmp(argv[i], "--requests") == 0) {
			n_req = atoi(argv[++i]);
		} else if (i + 1 < argc && strcmp(argv[i], "--seed") == 0) {
			rng_state = strtoull(argv[++i], NULL, 0) | 1;
		} else if (i + 1 < argc && strcmp(argv[i], "--policy") == 0) {
			if (gs_place_parse_policy(argv[++i], &policy, &eb) !=
			    GS_OK) {
				fprintf(stderr, "gs-bench-placement: %s\n",
				        eb.msg);
				return 2;
			}
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (nodes < 1 || n_req < 1) {
		usage(stderr);
		return 2;
	}
	lat = malloc((size_t)n_req * sizeof(*lat));
	if (lat == NULL)
		return 1;
	t0 = now_s();
	inv = build_cluster(nodes);
	build_s = now_s() - t0;

	t0 = now_s();
	c0 = cpu_s();
	for (long tick = 0; tick < n_req; tick++) {
		struct gs_errbuf eb = {0};
		struct live *l;
		size_t rec;
		double t1;
		int kind;
		gs_err err;

		while (live.n > 0 && live.v[0].expires <= tick) {
			rec = heap_pop(&live);
			l = &live.pool[rec];
			for (int k = 0; k < l->req.n; k++)
				if (gs_place_release(inv, &l->res.target[k],
				                     &l->req.item[k],
				                     &eb) != GS_OK)
					die("release", &eb);
			rec_give(&live, rec);
			released++;
		}
		rec = rec_take(&live);
		l = &live.pool[rec];
		kind = random_request(&l->req);
		l->req.policy = policy;
		asked[kind]++;
		t1 = now_s();
		err = gs_place(inv, &l->req, &l->res, &eb);
		if (err == GS_OK &&
		    gs_place_commit(inv, &l->req, &l->res, &eb) != GS_OK)
			die("commit", &eb);
		lat[tick] = now_s() - t1;
		kind_s[kind] += lat[tick];
		if (err != GS_OK)
			nofit_s += lat[tick];
		if (err == GS_OK) {
			fit[kind]++;
			exhausted |= l->res.exhausted;
			heap_push(&live, tick + 1 + rnd(2 * MEAN_LIFETIME),
			          rec);
		} else if (err == GS_ERR_NO_FIT) {
			rec_give(&live, rec);
		} else {
			die("place", &eb);
		}
	}
	total = now_s() - t0;
	total_cpu = cpu_s() - c0;
	qsort(lat, (size_t)n_req, sizeof(*lat), cmp_double);
	{
		double p50 = lat[n_req / 2] * 1e6;
		double p99 = lat[(size_t)((double)n_req * 0.99)] * 1e6;
		double max = lat[n_req - 1] * 1e6;
		int all_fit = 0;

		for (int k = 0; k < K__COUNT; k++)
			all_fit += fit[k];
		if (json) {
			printf("{\"bench\":\"placement\",\"policy\":\"%s\",\"nodes\":%d,\"gpus\":%d,\"requests\":%d,\"fit\":%d,\"total_s\":%.3f,\"cpu_s\":%.3f,\"p50_us\":%.2f,\"p99_us\":%.2f,\"max_us\":%.2f,\"build_s\":%.3f,\"exhausted\":%s",
			       gs_place_policy_name(policy), nodes,
			       gs_place_inv_gpu_count(inv), n_req, all_fit,
			       total, total_cpu, p50, p99, max, build_s,
			       exhausted ? "true" : "false");
			for (int k = 0; k < K__COUNT; k++)
				printf(",\"%s\":[%d,%d]", kind_names[k], fit[k],
				       asked[k]);
			printf("}\n");
		} else {
			printf("placement (%s): %d requests on %d nodes x 8 GPUs (%d GPUs, %d MIG instances)\n",
			       gs_place_policy_name(policy), n_req, nodes,
			       gs_place_inv_gpu_count(inv),
			       gs_place_inv_mig_count(inv));
			printf("  total %.3f s CPU (target < 2 s on one core), %.3f s wall\n",
			       total_cpu, total);
			printf(
			    "  per request (wall): p50 %.1f us, p99 %.1f us, max %.1f us\n",
			    p50, p99, max);
			printf("  fit %d of %d; released %ld; inventory built in %.3f s%s\n",
			       all_fit, n_req, released, build_s,
			       exhausted ? "; a gang search hit its budget"
			                 : "");
			printf("  by kind (fit/asked, wall time):");
			for (int k = 0; k < K__COUNT; k++)
				printf(" %s %d/%d %.2fs", kind_names[k], fit[k],
				       asked[k], kind_s[k]);
			printf(
			    "\n  time in requests that did not fit: %.2f s\n",
			    nofit_s);
		}
	}
	free(live.v);
	free(live.pool);
	free(live.free_rec);
	free(lat);
	gs_place_inv_destroy(inv);
	return 0;
}
