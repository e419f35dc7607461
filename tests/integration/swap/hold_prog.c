/*
 * hold_prog.c - gs-swap-hold: a program that holds GPU memory with
 * signatures in every allocation, for the tests of the daemon acting on
 * the swap policy (daemon_*.sh beside it). Reads commands on stdin, one
 * JSON line answers each:
 *
 *   alloc MIB PIECE   allocates MIB MiB in allocations of PIECE MiB
 *                     (cuMemAlloc), writes a signature of 64 KiB at the
 *                     start and end of each (its first and last bytes)
 *                     and one of 4 KiB at three places inside it, at
 *                     offsets that are not page-aligned (each its index,
 *                     place and offset), and
 *                     prints {"alloc": MiB held, "n": allocations,
 *                     "err": CUresult of the first failure or 0,
 *                     "seconds": wall time, "longest": the longest
 *                     single cuMemAlloc, s (one that waited for memory
 *                     others held)}
 *   check             reads every signature back (copies: a swapped-out
 *                     process waits for its memory) and prints
 *                     {"check": n, "bad": wrong words, "seconds": t}
 *   free              frees everything: {"freed": n}
 *
 * It prints {"ready": true} once its context is made, and exits at the
 * end of its input. Signatures are sparse so that the sim's backing
 * (pages made as they are touched) stays small; swap copies move whole
 * allocations regardless.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SIG_BYTES  (64u << 10)
#define SIG_PLACES 5          /* start, end, three inside */
#define SIG_INNER  (4u << 10) /* the bytes of an inside place */
#define MAX_ALLOCS 4096

static void *cu;
static CUresult (*mem_alloc)(CUdeviceptr *, size_t);
static CUresult (*mem_free)(CUdeviceptr);
static CUresult (*htod)(CUdeviceptr, const void *, size_t);
static CUresult (*dtoh)(void *, CUdeviceptr, size_t);

static CUdeviceptr ptrs[MAX_ALLOCS];
static size_t sizes[MAX_ALLOCS];
static int n_ptrs;
static uint32_t host[SIG_BYTES / 4];

static void *sym(const char *n)
{
	void *p = dlsym(cu, n);

	if (p == NULL) {
		fprintf(stderr, "gs-swap-hold: no %s\n", n);
		exit(1);
	}
	return p;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint32_t sig(int a, int k, size_t i)
{
	return (0x9e3779b9u * (uint32_t)(a + 1)) ^ ((uint32_t)k << 28) ^
	       (uint32_t)i;
}

/* The bytes of signature place k. */
static size_t sig_len(int k)
{
	return k < 2 ? SIG_BYTES : SIG_INNER;
}

static void fill(int a, int k)
{
	for (size_t i = 0; i < sig_len(k) / 4; i++)
		host[i] = sig(a, k, i);
}

/* Signature place k of allocation a: 0 its start, 1 its end (the last
 * byte included), 2..4 inside, off page boundaries (a third in plus
 * 12345 bytes, the middle less 100, two thirds in plus 7). */
static CUdeviceptr place(int a, int k)
{
	size_t n = sizes[a];

	switch (k) {
	case 0:
		return ptrs[a];
	case 1:
		return ptrs[a] + n - SIG_BYTES;
	case 2:
		return ptrs[a] + n / 3 + 12345;
	case 3:
		return ptrs[a] + n / 2 - 100;
	default:
		return ptrs[a] + 2 * (n / 3) + 7;
	}
}

static void do_alloc(long mib, long piece)
{
	double t0 = now_s();
	CUresult err = CUDA_SUCCESS;
	long held = 0;
	double longest = 0;

	while (held + piece <= mib && n_ptrs < MAX_ALLOCS) {
		int a = n_ptrs;
		double t;

		sizes[a] = (size_t)piece << 20;
		t = now_s();
		err = mem_alloc(&ptrs[a], sizes[a]);
		t = now_s() - t;
		if (t > longest)
			longest = t;
		if (err != CUDA_SUCCESS)
			break;
		n_ptrs++;
		for (int k = 0; k < SIG_PLACES && err == CUDA_SUCCESS; k++) {
			fill(a, k);
			err = htod(place(a, k), host, sig_len(k));
		}
		if (err != CUDA_SUCCESS)
			break;
		held += piece;
	}
	printf("{\"alloc\": %ld, \"n\": %d, \"err\": %d, \"seconds\": %.3f, "
	       "\"longest\": %.4f}\n",
	       held, n_ptrs, (int)err, now_s() - t0, longest);
}

static void do_check(void)
{
	double t0 = now_s();
	long bad = 0;
	CUresult err = CUDA_SUCCESS;

	for (int a = 0; a < n_ptrs && err == CUDA_SUCCESS; a++)
		for (int k = 0; k < SIG_PLACES; k++) {
			err = dtoh(host, place(a, k), sig_len(k));
			if (err != CUDA_SUCCESS)
				break;
			for (size_t i = 0; i < sig_len(k) / 4; i++)
				bad += host[i] != sig(a, k, i);
		}
	printf(
	    "{\"check\": %d, \"bad\": %ld, \"err\": %d, \"seconds\": %.3f}\n",
	    n_ptrs, bad, (int)err, now_s() - t0);
}

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	char line[128];

	cu = dlopen("libcuda.so.1", RTLD_NOW);
	if (cu == NULL) {
		fprintf(stderr, "gs-swap-hold: %s\n", dlerror());
		return 1;
	}
	mem_alloc = (CUresult(*)(CUdeviceptr *, size_t))sym("cuMemAlloc_v2");
	mem_free = (CUresult(*)(CUdeviceptr))sym("cuMemFree_v2");
	htod = (CUresult(*)(CUdeviceptr, const void *, size_t))sym(
	    "cuMemcpyHtoD_v2");
	dtoh = (CUresult(*)(void *, CUdeviceptr, size_t))sym("cuMemcpyDtoH_v2");
	if (((CUresult(*)(unsigned))sym("cuInit"))(0) != CUDA_SUCCESS ||
	    ((CUresult(*)(CUdevice *, int))sym("cuDeviceGet"))(&dev, 0) !=
	        CUDA_SUCCESS ||
	    ((CUresult(*)(CUcontext *, CUdevice))sym(
	        "cuDevicePrimaryCtxRetain"))(&ctx, dev) != CUDA_SUCCESS ||
	    ((CUresult(*)(CUcontext))sym("cuCtxSetCurrent"))(ctx) !=
	        CUDA_SUCCESS) {
		printf("{\"error\": \"no context\"}\n");
		return 1;
	}
	printf("{\"ready\": true}\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) != NULL) {
		long a = 0, b = 0;

		if (sscanf(line, "alloc %ld %ld", &a, &b) == 2 && b > 0) {
			do_alloc(a, b);
		} else if (strncmp(line, "check", 5) == 0) {
			do_check();
		} else if (strncmp(line, "free", 4) == 0) {
			int n = n_ptrs;

			while (n_ptrs > 0)
				(void)mem_free(ptrs[--n_ptrs]);
			printf("{\"freed\": %d}\n", n);
		} else {
			printf("{\"error\": \"unknown command\"}\n");
		}
		fflush(stdout);
	}
	return 0;
}
