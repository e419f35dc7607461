/*
 * cudart_matmul.cu - gs-cudart-matmul: the seed study's small batch job
 * (workloads/gs_matmul.c) written as an ordinary CUDA-runtime program:
 * <<<>>> launches of gs_matmul, cudaMalloc, cudaDeviceSynchronize. Same
 * flags and the same JSON line as gs-matmul (wall_s, iterations, n,
 * gflops, ms_per_iter, error), so `gpuslice bench study` can run it in
 * gs-matmul's place (tests/cudart/study_small_batch_runs_as_a_cudart_
 * program.sh). The kernel keeps the kit's name so the sim times it by
 * its cost model (2 n^3 flop).
 *
 * Exit status: 0 done, 1 a CUDA error (reported in "error"), 2 bad flags.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TILE 16

extern "C" __global__ void gs_matmul(const float *A, const float *B, float *C,
                                     int n)
{
	__shared__ float ta[TILE][TILE];
	__shared__ float tb[TILE][TILE];
	int row = blockIdx.y * TILE + threadIdx.y;
	int col = blockIdx.x * TILE + threadIdx.x;
	float acc = 0.0f;

	for (int t = 0; t < n; t += TILE) {
		int ac = t + threadIdx.x, br = t + threadIdx.y;

		ta[threadIdx.y][threadIdx.x] =
		    (row < n && ac < n) ? A[(size_t)row * n + ac] : 0.0f;
		tb[threadIdx.y][threadIdx.x] =
		    (br < n && col < n) ? B[(size_t)br * n + col] : 0.0f;
		__syncthreads();
		for (int k = 0; k < TILE; k++)
			acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
		__syncthreads();
	}
	if (row < n && col < n)
		C[(size_t)row * n + col] = acc;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int usage(FILE *f)
{
	fputs("usage: gs-cudart-matmul [--iterations N] [--n N] [--device N]\n"
	      "\n"
	      "Runs N iterations of an n x n float matrix multiplication with\n"
	      "the CUDA runtime, synchronising once at the end, and prints one\n"
	      "JSON line: wall_s, iterations, n, gflops, ms_per_iter, error.\n",
	      f);
	return f == stdout ? 0 : 2;
}

/* A whole-string integer in [lo, hi], else -1. */
static long parse(const char *s, long lo, long hi)
{
	char *end;
	long v = strtol(s, &end, 10);

	return *s != '\0' && *end == '\0' && v >= lo && v <= hi ? v : -1;
}

static int fail(cudaError_t e, const char *what)
{
	printf("{\"wall_s\":null,\"error\":\"%s\",\"call\":\"%s\"}\n",
	       cudaGetErrorName(e), what);
	return 1;
}

int main(int argc, char **argv)
{
	long iterations = 1000, n = 256, device = 0;
	float *a, *b, *c;
	cudaError_t e;
	double t0, wall;

	for (int i = 1; i < argc; i++) {
		long *dst = NULL, lo = 0, hi = 0;

		if (strcmp(argv[i], "--help") == 0)
			return usage(stdout);
		if (strcmp(argv[i], "--iterations") == 0)
			dst = &iterations, lo = 1, hi = 100000000;
		else if (strcmp(argv[i], "--n") == 0)
			dst = &n, lo = 16, hi = 8192;
		else if (strcmp(argv[i], "--device") == 0)
			dst = &device, lo = 0, hi = 1023;
		if (dst == NULL || i + 1 >= argc ||
		    (*dst = parse(argv[i + 1], lo, hi)) < 0) {
			fprintf(stderr, "gs-cudart-matmul: bad argument %s\n",
			        argv[i]);
			return usage(stderr);
		}
		i++;
	}
	if ((e = cudaSetDevice((int)device)) != cudaSuccess)
		return fail(e, "cudaSetDevice");
	if ((e = cudaMalloc((void **)&a, n * n * sizeof(float))) != cudaSuccess ||
	    (e = cudaMalloc((void **)&b, n * n * sizeof(float))) != cudaSuccess ||
	    (e = cudaMalloc((void **)&c, n * n * sizeof(float))) != cudaSuccess)
		return fail(e, "cudaMalloc");
	if ((e = cudaMemset(a, 0, n * n * sizeof(float))) != cudaSuccess ||
	    (e = cudaMemset(b, 0, n * n * sizeof(float))) != cudaSuccess ||
	    (e = cudaDeviceSynchronize()) != cudaSuccess)
		return fail(e, "cudaMemset");
	t0 = now_s();
	for (long i = 0; i < iterations; i++) {
		dim3 g((unsigned)((n + TILE - 1) / TILE),
		       (unsigned)((n + TILE - 1) / TILE));

		gs_matmul<<<g, dim3(TILE, TILE)>>>(a, b, c, (int)n);
		if ((e = cudaGetLastError()) != cudaSuccess)
			return fail(e, "gs_matmul<<<>>>");
	}
	if ((e = cudaDeviceSynchronize()) != cudaSuccess)
		return fail(e, "cudaDeviceSynchronize");
	wall = now_s() - t0;
	printf("{\"wall_s\":%.6f,\"iterations\":%ld,\"n\":%ld,\"gflops\":%.3f,"
	       "\"ms_per_iter\":%.6f,\"runtime\":\"cudart\",\"error\":null}\n",
	       wall, iterations, n,
	       2.0 * (double)n * n * n * (double)iterations / wall / 1e9,
	       wall * 1e3 / (double)iterations);
	(void)cudaFree(a);
	(void)cudaFree(b);
	(void)cudaFree(c);
	return 0;
}
