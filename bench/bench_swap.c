/*
 * bench_swap.c - gs-bench-swap: notebooks per GPU in a simulated notebook
 * day, under the swap policy (gs/swap.h) and a modelled bus. Pure CPU: the
 * policy decides, this program stands for the mechanism (which is not
 * built yet, docs/swap.md), so the figure is the policy's on a model, not
 * a measurement of swapping.
 *
 * The model: N notebooks of --gib GiB each on one GPU of --gpu-gib GiB.
 * Each alternates active and idle phases of exponential lengths, active a
 * fraction --active of the time in bursts of mean --burst-s seconds. While
 * active it calls the GPU every step (0.1 s) and needs all its memory on
 * the GPU; a swapped-out notebook that becomes active asks to come back
 * (gs_swap_plan_request) every step until served. Its wait is the time
 * from its first ask to being served, plus the copies the plan takes
 * (the victims' swap-outs and its swap-in, one after another) at --bw-gbps
 * GB/s. Every second the idle tick (gs_swap_plan_idle) swaps idle
 * notebooks out in the background. idle_after 30 s, minimum residency
 * --min-residency-s (default 10, the node's default), host memory for
 * all of them.
 *
 *   gs-bench-swap [--gib G] [--gpu-gib G] [--active F] [--burst-s S]
 *                 [--bw-gbps B] [--hours H] [--seeds N] [--max N]
 *                 [--p99-s S] [--min-residency-s S]
 *
 * Prints, per N, the swap-ins per notebook-hour and the wait at p50, p99
 * and max over all swap-ins (every seed), then the most notebooks for
 * which the p99 wait is within --p99-s (and for every smaller N), against
 * how many fit without swap.
 */
#include "gs/swap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB    (1024ULL * 1024 * 1024)
#define SEC    1000000000LL
#define STEP   (SEC / 10)
#define MAX_NB 128

struct opts {
	double gib, gpu_gib, active, burst_s, bw_gbps, hours, p99_s, min_res_s;
	int seeds, max;
};

struct nb {
	bool active;
	int64_t phase_end;
	int64_t asked; /* -1: not waiting */
};

struct waits {
	double *v;
	size_t n, cap;
};

static double expo(unsigned *seed, double mean)
{
	double u = (rand_r(seed) + 1.0) / ((double)RAND_MAX + 2.0);

	return -log(u) * mean;
}

static int push(struct waits *w, double x)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 1024;
		double *v = realloc(w->v, cap * sizeof(*v));

		if (v == NULL)
			return -1;
		w->v = v;
		w->cap = cap;
	}
	w->v[w->n++] = x;
	return 0;
}

static void apply(struct gs_swap_slice *s, const struct gs_swap_plan *p,
                  int64_t now)
{
	for (size_t m = 0; m < p->n_moves; m++) {
		struct gs_swap_slice *v = &s[p->moves[m].slice];

		if (p->moves[m].dir == GS_SWAP_OUT) {
			v->swapped_bytes += v->resident_bytes;
			v->resident_bytes = 0;
		} else {
			v->resident_bytes += v->swapped_bytes;
			v->swapped_bytes = 0;
			v->resident_since_ns = now;
		}
	}
}

/* One day (--hours) of n notebooks; appends every swap-in wait (s). */
static int run(const struct opts *o, int n, unsigned seed, struct waits *w,
               long *swap_ins)
{
	struct gs_swap_slice s[MAX_NB];
	struct nb nb[MAX_NB];
	uint64_t size = (uint64_t)(o->gib * (double)GIB), used = 0;
	double idle_mean = o->burst_s * (1 - o->active) / o->active;
	int64_t end = (int64_t)(o->hours * 3600) * SEC;
	struct gs_swap_config c = {
	    .gpu_memory_bytes = (uint64_t)(o->gpu_gib * (double)GIB),
	    .host_memory_bytes = (uint64_t)n * size,
	    .idle_after_ns = 30 * SEC,
	    .min_residency_ns = (int64_t)(o->min_res_s * SEC),
	};

	for (int i = 0; i < n; i++) {
		bool fits = used + size <= c.gpu_memory_bytes;

		memset(&s[i], 0, sizeof(s[i]));
		s[i].id = i + 1;
		s[i].promised_bytes = size;
		s[i].resident_bytes = fits ? size : 0;
		s[i].swapped_bytes = fits ? 0 : size;
		s[i].priority = GS_PRIORITY_NORMAL;
		s[i].last_active_ns = -3600 * SEC;
		s[i].swap_allowed = true;
		used += fits ? size : 0;
		nb[i].active = false;
		nb[i].phase_end = (int64_t)(expo(&seed, idle_mean) * SEC);
		nb[i].asked = -1;
	}
	for (int64_t t = 0; t < end; t += STEP) {
		for (int i = 0; i < n; i++) {
			while (t >= nb[i].phase_end) {
				nb[i].active = !nb[i].active;
				nb[i].phase_end +=
				    (int64_t)(expo(&seed, nb[i].active
				                              ? o->burst_s
				                              : idle_mean) *
				              SEC);
			}
			if (!nb[i].active)
				continue;
			if (s[i].swapped_bytes == 0)
				s[i].last_active_ns = t;
			else if (nb[i].asked < 0)
				nb[i].asked = t;
		}
		/* the longest waiting first, each once per step */
		for (;;) {
			int b = -1;
			struct gs_swap_plan p;
			double copy_s;

			for (int i = 0; i < n; i++)
				if (nb[i].asked >= 0 && s[i].swapped_bytes &&
				    (b < 0 || nb[i].asked < nb[b].asked))
					b = i;
			if (b < 0)
				break;
			if (gs_swap_plan_request(&c, s, (size_t)n, (size_t)b, 0,
			                         t, &p, NULL) != GS_OK) {
				nb[b].asked = -nb[b].asked - 2; /* skip now */
				continue;
			}
			apply(s, &p, t);
			copy_s =
			    (double)(p.freed_bytes + size) / (o->bw_gbps * 1e9);
			if (push(w, (double)(t - nb[b].asked) / SEC + copy_s))
				return -1;
			(*swap_ins)++;
			s[b].last_active_ns = t;
			nb[b].asked = -1;
		}
		for (int i = 0; i < n; i++)
			if (nb[i].asked < -1)
				nb[i].asked = -nb[i].asked - 2;
		if (t % SEC == 0) {
			struct gs_swap_plan p;

			if (gs_swap_plan_idle(&c, s, (size_t)n, t, &p, NULL) ==
			    GS_OK)
				apply(s, &p, t);
		}
	}
	return 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const struct waits *w, double p)
{
	size_t i;

	if (w->n == 0)
		return 0;
	i = (size_t)(p * (double)(w->n - 1) + 0.5);
	return w->v[i];
}

int main(int argc, char **argv)
{
	struct opts o = {16, 80, 0.10, 60, 50, 24, 2.0, 10, 3, 40};
	int best, without;

	for (int i = 1; i + 1 < argc; i += 2) {
		double v = atof(argv[i + 1]);

		if (!strcmp(argv[i], "--gib"))
			o.gib = v;
		else if (!strcmp(argv[i], "--gpu-gib"))
			o.gpu_gib = v;
		else if (!strcmp(argv[i], "--active"))
			o.active = v;
		else if (!strcmp(argv[i], "--burst-s"))
			o.burst_s = v;
		else if (!strcmp(argv[i], "--bw-gbps"))
			o.bw_gbps = v;
		else if (!strcmp(argv[i], "--hours"))
			o.hours = v;
		else if (!strcmp(argv[i], "--p99-s"))
			o.p99_s = v;
		else if (!strcmp(argv[i], "--min-residency-s"))
			o.min_res_s = v;
		else if (!strcmp(argv[i], "--seeds"))
			o.seeds = (int)v;
		else if (!strcmp(argv[i], "--max"))
			o.max = (int)v;
		else {
			fprintf(stderr, "gs-bench-swap: unknown option '%s'\n",
			        argv[i]);
			return 2;
		}
	}
	if (!(o.gib > 0 && o.gpu_gib >= o.gib && o.active > 0 && o.active < 1 &&
	      o.burst_s > 0 && o.bw_gbps > 0 && o.hours > 0 &&
	      o.min_res_s >= 0 && o.seeds > 0 && o.max > 0 &&
	      o.max <= MAX_NB)) {
		fprintf(stderr, "gs-bench-swap: bad option value\n");
		return 2;
	}
	without = (int)(o.gpu_gib / o.gib);
	best = without - 1;
	printf(
	    "policy model (no GPU, no mechanism): %.0f GiB notebooks on a %.0f GiB GPU, active %.0f%% in %.0f s bursts, bus %.0f GB/s, minimum residency %.0f s, %.0f h x %d seeds\n",
	    o.gib, o.gpu_gib, o.active * 100, o.burst_s, o.bw_gbps, o.min_res_s,
	    o.hours, o.seeds);
	printf("%4s %14s %8s %8s %8s\n", "N", "swap-ins/nb-h", "p50 s", "p99 s",
	       "max s");
	for (int n = without; n <= o.max; n++) {
		struct waits w = {NULL, 0, 0};
		long ins = 0;
		double p99;

		for (int k = 0; k < o.seeds; k++)
			if (run(&o, n, 27u + (unsigned)k, &w, &ins)) {
				fprintf(stderr,
				        "gs-bench-swap: out of memory\n");
				free(w.v);
				return 1;
			}
		qsort(w.v, w.n, sizeof(*w.v), cmp);
		p99 = pct(&w, 0.99);
		printf("%4d %14.2f %8.2f %8.2f %8.2f\n", n,
		       (double)ins / (n * o.hours * o.seeds), pct(&w, 0.5), p99,
		       w.n ? w.v[w.n - 1] : 0.0);
		free(w.v);
		if (p99 <= o.p99_s && best == n - 1)
			best = n; /* every N up to here met it */
		else if (p99 > 10 * o.p99_s)
			break;
	}
	printf(
	    "notebooks per GPU with p99 swap-in wait <= %.1f s: %d (without swap: %d)\n",
	    o.p99_s, best, without);
	return 0;
}
