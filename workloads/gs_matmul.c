/*
 * gs-matmul - the seed study's "small GPU batch job": a fixed number of
 * n x n single-precision matrix multiplications (256 x 256 by default) in
 * one context, launched back to back and synchronised once at the end.
 * Its wall time is what time-slicing stretches: two copies on one GPU
 * should each take about twice as long as one alone.
 *
 * Prints {"wall_s","iterations","n","gflops","ms_per_iter",...}.
 */
#include <stdio.h>
#include <stdlib.h>

#include "kit.h"

static const char usage[] =
    "usage: gs-matmul [--iterations N] [--n N] [--device N]\n"
    "\n"
    "Runs N iterations of an n x n float matrix multiplication (kernel\n"
    "gs_matmul) in one context, synchronising once at the end, and prints\n"
    "one JSON line: wall_s, iterations, n, gflops, ms_per_iter.\n"
    "\n"
    "  --iterations N       multiplications to run (default 1000)\n"
    "  --n N                matrix order, 16..8192 (default 256)\n" GS_KIT_COMMON_USAGE;

/* Launch shape of gs_fill: grid-stride, so a few blocks per SM suffice. */
static unsigned fill_blocks(const struct gs_kit *k, uint64_t n)
{
	uint64_t want = (n + 255) / 256, cap = (uint64_t)k->sm_count * 8;

	return (unsigned)(want < cap ? (want ? want : 1) : cap);
}

static CUresult fill(struct gs_kit *k, CUdeviceptr p, uint64_t n, float v)
{
	unsigned long long cnt = n;
	void *args[] = {&p, &cnt, &v};

	return gs_kit_launch(k, GS_KIT_FILL, fill_blocks(k, n), 1, 256, 1, NULL,
	                     args);
}

int main(int argc, char **argv)
{
	struct gs_kit_common c = {0, false};
	long iterations = 1000, n = 256;
	struct gs_flag flags[] = {
	    {"iterations", GS_FLAG_INT, &iterations, 1, 100000000, NULL, false},
	    {"n", GS_FLAG_INT, &n, 16, 8192, NULL, false},
	    GS_KIT_COMMON_FLAGS(&c),
	};
	CUdeviceptr a = 0, b = 0, m = 0;
	struct gs_kit k;
	struct gs_jline j;
	double t0, wall;
	int status, nn;
	uint64_t elems;
	size_t bytes;
	long i;

	if (gs_kit_flags("gs-matmul", usage, argc, argv, flags,
	                 sizeof(flags) / sizeof(flags[0]), &status))
		return status;
	nn = (int)n;
	elems = (uint64_t)n * (uint64_t)n;
	bytes = (size_t)elems * sizeof(float);
	if (gs_kit_open(&k, "gs-matmul", &c) != 0)
		goto out;
	if (gs_kit_check(&k, gs_cu.cuMemAlloc(&a, bytes), "cuMemAlloc") ||
	    gs_kit_check(&k, gs_cu.cuMemAlloc(&b, bytes), "cuMemAlloc") ||
	    gs_kit_check(&k, gs_cu.cuMemAlloc(&m, bytes), "cuMemAlloc"))
		goto out;
	if (gs_kit_check(&k, fill(&k, a, elems, 1.0f), "cuLaunchKernel") ||
	    gs_kit_check(&k, fill(&k, b, elems, 0.5f), "cuLaunchKernel") ||
	    gs_kit_check(&k, gs_cu.cuCtxSynchronize(), "cuCtxSynchronize"))
		goto out;

	t0 = gs_kit_now();
	for (i = 0; i < iterations; i++) {
		void *args[] = {&a, &b, &m, &nn};
		unsigned g = (unsigned)((n + 15) / 16);

		if (gs_kit_check(&k,
		                 gs_kit_launch(&k, GS_KIT_MATMUL, g, g, 16, 16,
		                               NULL, args),
		                 "cuLaunchKernel"))
			goto out;
	}
	if (gs_kit_check(&k, gs_cu.cuCtxSynchronize(), "cuCtxSynchronize"))
		goto out;
	wall = gs_kit_now() - t0;

	gs_kit_result(&k, &j);
	gs_jline_num(&j, "wall_s", wall);
	gs_jline_int(&j, "iterations", iterations);
	gs_jline_int(&j, "n", n);
	gs_jline_num(&j, "gflops",
	             2.0 * (double)n * (double)n * (double)n *
	                 (double)iterations / wall / 1e9);
	gs_jline_num(&j, "ms_per_iter", wall * 1e3 / (double)iterations);
	gs_kit_put_error(&k, &j);
	status = gs_jline_print(&j, stdout) == 0 ? GS_KIT_EXIT_OK
	                                         : GS_KIT_EXIT_FAILURE;
	goto out_free;

out:
	status = gs_kit_fail_line(&k);
out_free:
	if (m)
		(void)gs_cu.cuMemFree(m);
	if (b)
		(void)gs_cu.cuMemFree(b);
	if (a)
		(void)gs_cu.cuMemFree(a);
	gs_kit_close(&k);
	return status;
}
