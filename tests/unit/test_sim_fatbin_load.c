/*
 * test_sim_fatbin_load.c - nvcc-built fatbinaries loaded through the
 * sim's libcuda.so.1 the way the CUDA 13 runtime loads them
 * (cuLibraryLoadData with a fatbin wrapper, cuLibraryGetKernel,
 * cuLaunchKernel with the kernel handle), and through cuModule*: every
 * compression nvcc writes, module globals with their PTX initial values,
 * __managed__ in host-visible memory, a SASS-only binary refused as a
 * real driver refuses it, unknown kernels timed by the cost model and
 * leaving memory alone, the sim's own gs_fill still computing, and the
 * CUDA 13 entry points the runtime asks for; and two processes running
 * such a kernel time-sliced, each charged exactly its kernels' time.
 *
 * The fatbins come from sim_fatbin_kernels.cu (tests/unit/sim_fatbin.cmake);
 * without nvcc at build time the test exits 77 (skipped). One node state
 * in a temporary directory. The time-slicing group runs first, in forked
 * children (cuInit is once per process); then this process uses the
 * primary context of GPU 0 for the rest.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <cuda.h>

#include "gs_sim/state.h"

#define K_ADD  "_Z6fb_addPfPKfi"
#define K_LOOP "_Z7fb_loopPfii"
#define N      1024

/* The wrapper nvcc puts around a fatbinary (magic, version 1, pointer). */
struct wrapper {
	uint32_t magic, version;
	const void *data;
	const void *unused;
};

static char dir[64];
static CUcontext ctx;

static uint8_t *slurp(const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	uint8_t *buf;
	long n;

	snprintf(path, sizeof(path), "%s/%s", GS_FATBIN_DIR, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	buf = malloc((size_t)n);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	if (len != NULL)
		*len = (size_t)n;
	return buf;
}

/* cuLibraryLoadData as cudart 13 calls it. */
static CUresult load_wrapped(const void *fatbin, CUlibrary *lib)
{
	struct wrapper w = {0x466243b1u, 1, fatbin, NULL};
	CUlibraryOption opt = CU_LIBRARY_BINARY_IS_PRESERVED;
	void *val = (void *)(uintptr_t)1;

	return cuLibraryLoadData(lib, &w, NULL, NULL, 0, &opt, &val, 1);
}

/* Device time (ms, the sim's clock) of one launch of f on the null
 * stream. A 50 ms gs_spin (from the same library) runs first, so the
 * GPU is busy while the host records and launches: the measurement is
 * the kernel's own duration, not the host's speed. */
static float timed_launch(CUlibrary lib, CUfunction f, unsigned grid,
                          unsigned block, void **params)
{
	unsigned long long ns = 50000000ULL;
	void *spin_params[] = {&ns};
	CUkernel spin;
	CUevent a, b;
	float ms = -1;

	assert_int_equal(cuLibraryGetKernel(&spin, lib, "gs_spin"),
	                 CUDA_SUCCESS);
	assert_int_equal(cuEventCreate(&a, 0), CUDA_SUCCESS);
	assert_int_equal(cuEventCreate(&b, 0), CUDA_SUCCESS);
	assert_int_equal(cuLaunchKernel((CUfunction)spin, 1, 1, 1, 1, 1, 1, 0,
	                                NULL, spin_params, NULL),
	                 CUDA_SUCCESS);
	assert_int_equal(cuEventRecord(a, NULL), CUDA_SUCCESS);
	assert_int_equal(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, NULL,
	                                params, NULL),
	                 CUDA_SUCCESS);
	assert_int_equal(cuEventRecord(b, NULL), CUDA_SUCCESS);
	assert_int_equal(cuEventSynchronize(b), CUDA_SUCCESS);
	assert_int_equal(cuEventElapsedTime(&ms, a, b), CUDA_SUCCESS);
	cuEventDestroy(a);
	cuEventDestroy(b);
	return ms;
}

static void check_globals_of(CUlibrary lib)
{
	CUdeviceptr p;
	size_t size = 0;
	float dev[4];
	int cst[2] = {-1, -1};
	const int put[2] = {5, 6};

	/* __device__ float fb_dev[4] = {1, 2, 3, 4} */
	assert_int_equal(cuLibraryGetGlobal(&p, &size, lib, "fb_dev"),
	                 CUDA_SUCCESS);
	assert_int_equal(size, sizeof(dev));
	assert_int_equal(cuMemcpyDtoH(dev, p, sizeof(dev)), CUDA_SUCCESS);
	assert_true(dev[0] == 1.0f && dev[1] == 2.0f && dev[2] == 3.0f &&
	            dev[3] == 4.0f);
	/* __constant__ int fb_const[2]: zeros, writable like cudaMemcpyToSymbol */
	assert_int_equal(cuLibraryGetGlobal(&p, &size, lib, "fb_const"),
	                 CUDA_SUCCESS);
	assert_int_equal(size, sizeof(cst));
	assert_int_equal(cuMemcpyDtoH(cst, p, sizeof(cst)), CUDA_SUCCESS);
	assert_true(cst[0] == 0 && cst[1] == 0);
	assert_int_equal(cuMemcpyHtoD(p, put, sizeof(put)), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoH(cst, p, sizeof(cst)), CUDA_SUCCESS);
	assert_true(cst[0] == 5 && cst[1] == 6);
	/* __managed__ int fb_managed = 7, readable by the host directly */
	assert_int_equal(cuLibraryGetManaged(&p, &size, lib, "fb_managed"),
	                 CUDA_SUCCESS);
	assert_int_equal(size, sizeof(int));
	assert_int_equal(*(volatile int *)(uintptr_t)p, 7);
	/* a global that is not __managed__ is not found as one */
	assert_int_equal(cuLibraryGetManaged(&p, &size, lib, "fb_dev"),
	                 CUDA_ERROR_NOT_FOUND);
	assert_int_equal(cuLibraryGetGlobal(&p, &size, lib, "no_such"),
	                 CUDA_ERROR_NOT_FOUND);
}

/* Loads one fatbin variant as cudart does and runs fb_add: the launch
 * succeeds and leaves memory as it was; the globals hold their PTX
 * values. */
static void load_and_run(const char *file)
{
	uint8_t *fb = slurp(file, NULL);
	CUlibrary lib;
	CUkernel k;
	CUfunction f;
	CUdeviceptr a, b;
	float host[N], back[N];
	int n = N;
	void *params[] = {&a, &b, &n};

	for (int i = 0; i < N; i++)
		host[i] = (float)i;
	assert_int_equal(load_wrapped(fb, &lib), CUDA_SUCCESS);
	assert_int_equal(cuLibraryGetKernel(&k, lib, K_ADD), CUDA_SUCCESS);
	assert_int_equal(cuKernelGetFunction(&f, k), CUDA_SUCCESS);
	assert_int_equal(cuLibraryGetKernel(&k, lib, "fb_add"),
	                 CUDA_ERROR_NOT_FOUND);
	assert_int_equal(cuLibraryGetKernel(&k, lib, K_ADD), CUDA_SUCCESS);
	assert_int_equal(cuMemAlloc(&a, sizeof(host)), CUDA_SUCCESS);
	assert_int_equal(cuMemAlloc(&b, sizeof(host)), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyHtoD(a, host, sizeof(host)), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyHtoD(b, host, sizeof(host)), CUDA_SUCCESS);
	/* the kernel handle itself is launched, as cudart does */
	assert_int_equal(cuLaunchKernel((CUfunction)k, N / 256, 1, 1, 256, 1,
	                                1, 0, NULL, params, NULL),
	                 CUDA_SUCCESS);
	assert_int_equal(cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, NULL,
	                                params, NULL),
	                 CUDA_SUCCESS);
	assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoH(back, a, sizeof(back)), CUDA_SUCCESS);
	assert_memory_equal(back, host, sizeof(host));
	check_globals_of(lib);
	assert_int_equal(cuMemFree(a), CUDA_SUCCESS);
	assert_int_equal(cuMemFree(b), CUDA_SUCCESS);
	assert_int_equal(cuLibraryUnload(lib), CUDA_SUCCESS);
	assert_int_equal(cuLibraryUnload(lib), CUDA_ERROR_INVALID_HANDLE);
	free(fb);
}

static void test_zstd_fatbin_loads_runs_and_has_its_globals(void **state)
{
	(void)state;
	load_and_run("k_zstd.fatbin");
}

static void test_lz4_fatbin_loads_runs_and_has_its_globals(void **state)
{
	(void)state;
	load_and_run("k_lz4.fatbin");
}

static void test_uncompressed_fatbin_loads_runs_and_has_its_globals(void **state)
{
	(void)state;
	load_and_run("k_none.fatbin");
}

static void test_fatbin_with_two_ptx_versions_loads_the_newer(void **state)
{
	uint8_t *fb = slurp("k_ptx2.fatbin", NULL);
	CUlibrary lib;
	CUkernel k;
	int v = 0;

	(void)state;
	load_and_run("k_ptx2.fatbin");
	/* compute_75 and compute_90: an H100 (sm_90) gets compute_90 */
	assert_int_equal(load_wrapped(fb, &lib), CUDA_SUCCESS);
	assert_int_equal(cuLibraryGetKernel(&k, lib, K_ADD), CUDA_SUCCESS);
	assert_int_equal(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_PTX_VERSION,
	                                      k, 0),
	                 CUDA_SUCCESS);
	assert_int_equal(v, 90);
	assert_int_equal(cuLibraryUnload(lib), CUDA_SUCCESS);
	free(fb);
}

static void test_sass_only_fatbin_has_no_binary_for_the_gpu(void **state)
{
	uint8_t *fb = slurp("k_sass.fatbin", NULL);
	struct wrapper w = {0x466243b1u, 1, fb, NULL};
	CUlibrary lib;
	CUmodule mod;

	(void)state;
	assert_int_equal(load_wrapped(fb, &lib), CUDA_ERROR_NO_BINARY_FOR_GPU);
	assert_int_equal(cuModuleLoadData(&mod, &w),
	                 CUDA_ERROR_NO_BINARY_FOR_GPU);
	assert_int_equal(cuModuleLoadFatBinary(&mod, fb),
	                 CUDA_ERROR_NO_BINARY_FOR_GPU);
	free(fb);
}

/* An -rdc program: cudart hands over a version-2 wrapper whose linked
 * image is SASS only and whose prelinked fatbins carry the PTX. */
static void test_rdc_program_loads_from_its_prelinked_fatbins(void **state)
{
	uint8_t *sass = slurp("k_sass.fatbin", NULL);
	uint8_t *zstd = slurp("k_zstd.fatbin", NULL);
	const void *prelinked[] = {zstd, NULL};
	struct {
		uint32_t magic, version;
		const void *data;
		const void *const *list;
	} w = {0x466243b1u, 2, sass, prelinked};
	CUlibrary lib;
	CUkernel k;
	CUdeviceptr p;
	size_t size;
	float dev[4];

	(void)state;
	assert_int_equal(cuLibraryLoadData(&lib, &w, NULL, NULL, 0, NULL, NULL,
	                                   0),
	                 CUDA_SUCCESS);
	assert_int_equal(cuLibraryGetKernel(&k, lib, K_LOOP), CUDA_SUCCESS);
	assert_int_equal(cuLibraryGetGlobal(&p, &size, lib, "fb_dev"),
	                 CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoH(dev, p, sizeof(dev)), CUDA_SUCCESS);
	assert_true(dev[0] == 1.0f && dev[3] == 4.0f);
	assert_int_equal(cuLibraryUnload(lib), CUDA_SUCCESS);
	/* without its prelinked fatbins it is SASS only */
	w.list = NULL;
	assert_int_equal(cuLibraryLoadData(&lib, &w, NULL, NULL, 0, NULL, NULL,
	                                   0),
	                 CUDA_ERROR_NO_BINARY_FOR_GPU);
	free(sass);
	free(zstd);
}

static void test_library_from_file_and_its_module(void **state)
{
	char path[512];
	CUlibrary lib;
	CUmodule mod;
	CUfunction f;
	CUkernel k;
	CUdeviceptr p1, p2;
	size_t s1, s2;
	unsigned count = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s/k_lz4.fatbin", GS_FATBIN_DIR);
	assert_int_equal(cuLibraryLoadFromFile(&lib, path, NULL, NULL, 0, NULL,
	                                       NULL, 0),
	                 CUDA_SUCCESS);
	assert_int_equal(cuLibraryGetKernelCount(&count, lib), CUDA_SUCCESS);
	assert_int_equal(count, 5);
	{
		/* both listings give every entry once, and no more than
		 * asked for; a module handle is not a library */
		CUkernel ks[8] = {0};
		CUfunction fs[8] = {0};
		unsigned fcount = 0;

		assert_int_equal(cuLibraryEnumerateKernels(ks, 3, lib),
		                 CUDA_SUCCESS);
		assert_non_null(ks[2]);
		assert_null(ks[3]);
		assert_int_equal(cuLibraryEnumerateKernels(ks, 8, lib),
		                 CUDA_SUCCESS);
		assert_non_null(ks[4]);
		assert_null(ks[5]);
		assert_int_equal(cuLibraryGetModule(&mod, lib), CUDA_SUCCESS);
		assert_int_equal(cuModuleGetFunctionCount(&fcount, mod),
		                 CUDA_SUCCESS);
		assert_int_equal(fcount, 5);
		assert_int_equal(cuModuleEnumerateFunctions(fs, 8, mod),
		                 CUDA_SUCCESS);
		assert_non_null(fs[4]);
		assert_null(fs[5]);
		assert_int_equal(cuLibraryGetKernelCount(&fcount,
		                                         (CUlibrary)mod),
		                 CUDA_ERROR_INVALID_HANDLE);
		assert_int_equal(cuModuleEnumerateFunctions(NULL, 8, mod),
		                 CUDA_ERROR_INVALID_VALUE);
	}
	assert_int_equal(cuLibraryGetModule(&mod, lib), CUDA_SUCCESS);
	assert_int_equal(cuModuleGetFunction(&f, mod, K_LOOP), CUDA_SUCCESS);
	assert_int_equal(cuModuleGetGlobal(&p1, &s1, mod, "fb_dev"),
	                 CUDA_SUCCESS);
	assert_int_equal(s1, 16);
	assert_int_equal(cuLibraryGetKernel(&k, lib, K_LOOP), CUDA_SUCCESS);
	assert_int_equal(cuLibraryGetGlobal(&p2, &s2, lib, "fb_dev"),
	                 CUDA_SUCCESS);
	assert_int_equal(s2, 16);
	/* the library's module and the library share their globals */
	assert_true(p1 == p2);
	assert_int_equal(cuLibraryUnload(lib), CUDA_SUCCESS);
	/* the library's module went with it */
	assert_int_equal(cuModuleGetFunction(&f, mod, K_LOOP),
	                 CUDA_ERROR_INVALID_HANDLE);
	snprintf(path, sizeof(path), "%s/no-such.fatbin", GS_FATBIN_DIR);
	assert_int_equal(cuLibraryLoadFromFile(&lib, path, NULL, NULL, 0, NULL,
	                                       NULL, 0),
	                 CUDA_ERROR_FILE_NOT_FOUND);
}

static void test_module_api_loads_the_wrapper_and_its_globals(void **state)
{
	uint8_t *fb = slurp("k_zstd.fatbin", NULL);
	struct wrapper w = {0x466243b1u, 1, fb, NULL};
	CUmodule mod;
	CUfunction f;
	CUdeviceptr p;
	size_t size;
	float dev[4];

	(void)state;
	assert_int_equal(cuModuleLoadData(&mod, &w), CUDA_SUCCESS);
	assert_int_equal(cuModuleGetFunction(&f, mod, K_ADD), CUDA_SUCCESS);
	assert_int_equal(cuModuleGetGlobal(&p, &size, mod, "fb_dev"),
	                 CUDA_SUCCESS);
	assert_int_equal(size, sizeof(dev));
	assert_int_equal(cuMemcpyDtoH(dev, p, sizeof(dev)), CUDA_SUCCESS);
	assert_true(dev[3] == 4.0f);
	assert_int_equal(cuModuleGetGlobal(&p, &size, mod, "fb_managed"),
	                 CUDA_SUCCESS);
	assert_int_equal(*(volatile int *)(uintptr_t)p, 7);
	assert_int_equal(cuModuleUnload(mod), CUDA_SUCCESS);
	/* the container alone loads too */
	assert_int_equal(cuModuleLoadFatBinary(&mod, fb), CUDA_SUCCESS);
	assert_int_equal(cuModuleUnload(mod), CUDA_SUCCESS);
	free(fb);
}

static void test_kernel_attributes_come_from_the_ptx(void **state)
{
	uint8_t *fb = slurp("k_zstd.fatbin", NULL);
	CUlibrary lib;
	CUkernel k;
	const char *name = NULL;
	size_t off, size;
	int v = 0;

	(void)state;
	assert_int_equal(load_wrapped(fb, &lib), CUDA_SUCCESS);
	assert_int_equal(cuLibraryGetKernel(&k, lib, K_LOOP), CUDA_SUCCESS);
	assert_int_equal(cuKernelGetAttribute(
	                     &v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k, 0),
	                 CUDA_SUCCESS);
	assert_int_equal(v, 1024);
	/* the virtual architecture of nvcc's default PTX: compute_75 */
	assert_int_equal(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_PTX_VERSION,
	                                      k, 0),
	                 CUDA_SUCCESS);
	assert_int_equal(v, 75);
	assert_int_equal(cuKernelSetAttribute(
	                     CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
	                     65536, k, 0),
	                 CUDA_SUCCESS);
	assert_int_equal(cuKernelGetAttribute(
	                     &v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
	                     k, 0),
	                 CUDA_SUCCESS);
	assert_int_equal(v, 65536);
	assert_int_equal(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS,
	                                      k, 99),
	                 CUDA_ERROR_INVALID_DEVICE);
	assert_int_equal(cuKernelGetName(&name, k), CUDA_SUCCESS);
	assert_string_equal(name, K_LOOP);
	/* (float *a, int n, int iters): 8 + 4 + 4 bytes */
	assert_int_equal(cuKernelGetParamInfo(k, 2, &off, &size), CUDA_SUCCESS);
	assert_int_equal(off, 12);
	assert_int_equal(size, 4);
	assert_int_equal(cuLibraryUnload(lib), CUDA_SUCCESS);
	free(fb);
}

/* __launch_bounds__(128): the PTX's .maxntid limits blocks, as on a GPU;
 * static shared and local memory show in the attributes. */
static void test_launch_bounds_and_static_memory_of_a_kernel(void **state)
{
	uint8_t *fb = slurp("k_zstd.fatbin", NULL);
	CUlibrary lib;
	CUkernel k;
	CUdeviceptr a;
	int j = 3;
	void *params[] = {&a, &j};
	int v = 0, min_grid = 0, block = 0;

	(void)state;
	assert_int_equal(load_wrapped(fb, &lib), CUDA_SUCCESS);
	assert_int_equal(cuLibraryGetKernel(&k, lib, "_Z10fb_boundedPfi"),
	                 CUDA_SUCCESS);
	assert_int_equal(cuKernelGetAttribute(
	                     &v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k, 0),
	                 CUDA_SUCCESS);
	assert_int_equal(v, 128 * sizeof(float));
	assert_int_equal(cuKernelGetAttribute(
	                     &v, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, k, 0),
	                 CUDA_SUCCESS);
	assert_int_equal(v, 16 * sizeof(float));
	assert_int_equal(cuKernelGetAttribute(
	                     &v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k, 0),
	                 CUDA_SUCCESS);
	assert_int_equal(v, 128);
	assert_int_equal(cuMemAlloc(&a, 16 * 128 * sizeof(float)),
	                 CUDA_SUCCESS);
	assert_int_equal(cuLaunchKernel((CUfunction)k, 1, 1, 1, 128, 1, 1, 0,
	                                NULL, params, NULL),
	                 CUDA_SUCCESS);
	assert_int_equal(cuLaunchKernel((CUfunction)k, 1, 1, 1, 256, 1, 1, 0,
	                                NULL, params, NULL),
	                 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuOccupancyMaxPotentialBlockSize(
	                     &min_grid, &block, (CUfunction)k, NULL, 0, 0),
	                 CUDA_SUCCESS);
	assert_true(block > 0 && block <= 128);
	assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS);
	assert_int_equal(cuMemFree(a), CUDA_SUCCESS);
	assert_int_equal(cuLibraryUnload(lib), CUDA_SUCCESS);
	free(fb);
}

static void test_unknown_kernel_time_follows_loop_bound_and_grid(void **state)
{
	uint8_t *fb = slurp("k_zstd.fatbin", NULL);
	const int big = 1 << 20;
	CUlibrary lib;
	CUkernel k;
	CUdeviceptr a;
	float *host = calloc((size_t)big, sizeof(float));
	float *back = malloc((size_t)big * sizeof(float));
	int n = 256, iters = 100;
	void *params[] = {&a, &n, &iters};
	float t_short, t_long, t_grid;

	(void)state;
	assert_non_null(host);
	assert_non_null(back);
	for (int i = 0; i < big; i++)
		host[i] = (float)(i % 97);
	assert_int_equal(load_wrapped(fb, &lib), CUDA_SUCCESS);
	assert_int_equal(cuLibraryGetKernel(&k, lib, K_LOOP), CUDA_SUCCESS);
	assert_int_equal(cuMemAlloc(&a, (size_t)big * sizeof(float)),
	                 CUDA_SUCCESS);
	assert_int_equal(cuMemcpyHtoD(a, host, (size_t)big * sizeof(float)),
	                 CUDA_SUCCESS);
	t_short = timed_launch(lib, (CUfunction)k, 1, 256, params);
	iters = 100000;
	t_long = timed_launch(lib, (CUfunction)k, 1, 256, params);
	n = big;
	t_grid = timed_launch(lib, (CUfunction)k, (unsigned)big / 256, 256,
	                      params);
	printf("fb_loop: 1 block x 100 iterations %.4f ms, x 100000 "
	       "iterations %.4f ms; %d blocks x 100000 iterations %.4f ms\n",
	       (double)t_short, (double)t_long, big / 256, (double)t_grid);
	/* 1000x the iterations: far longer (the model's ratio is ~1000) */
	assert_true(t_long > 50 * t_short);
	/* 4096 blocks on 132 SMs: at least several waves longer */
	assert_true(t_grid > 5 * t_long);
	/* the kernel's effect is not simulated: memory is as it was */
	assert_int_equal(cuMemcpyDtoH(back, a, (size_t)big * sizeof(float)),
	                 CUDA_SUCCESS);
	assert_memory_equal(back, host, (size_t)big * sizeof(float));
	assert_int_equal(cuMemFree(a), CUDA_SUCCESS);
	assert_int_equal(cuLibraryUnload(lib), CUDA_SUCCESS);
	free(back);
	free(host);
	free(fb);
}

static void test_gs_fill_from_a_fatbin_still_computes(void **state)
{
	uint8_t *fb = slurp("k_zstd.fatbin", NULL);
	CUlibrary lib;
	CUkernel k;
	CUdeviceptr buf;
	unsigned long long n = N;
	float v = 2.5f, back[N];
	void *params[] = {&buf, &n, &v};

	(void)state;
	assert_int_equal(load_wrapped(fb, &lib), CUDA_SUCCESS);
	assert_int_equal(cuLibraryGetKernel(&k, lib, "gs_fill"), CUDA_SUCCESS);
	assert_int_equal(cuMemAlloc(&buf, sizeof(back)), CUDA_SUCCESS);
	assert_int_equal(cuMemsetD32(buf, 0, N), CUDA_SUCCESS);
	assert_int_equal(cuLaunchKernel((CUfunction)k, 4, 1, 1, 256, 1, 1, 0,
	                                NULL, params, NULL),
	                 CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoH(back, buf, sizeof(back)), CUDA_SUCCESS);
	for (int i = 0; i < N; i++)
		assert_true(back[i] == 2.5f);
	assert_int_equal(cuMemFree(buf), CUDA_SUCCESS);
	assert_int_equal(cuLibraryUnload(lib), CUDA_SUCCESS);
	free(fb);
}

static void test_cuda13_entry_points_answer(void **state)
{
	const CUatomicOperation ops[2] = {CU_ATOMIC_OPERATION_INTEGER_ADD,
	                                  CU_ATOMIC_OPERATION_FLOAT_ADD};
	const CUatomicOperation bad = CU_ATOMIC_OPERATION_MAX;
	unsigned caps[2] = {99, 99};
	uint8_t *fb = slurp("k_zstd.fatbin", NULL);
	CUlibrary lib;
	CUkernel k;
	CUlaunchAttribute attr;
	CUlaunchConfig cfg;
	size_t width = 0;
	int clusters = -1;

	(void)state;
	assert_int_equal(cuDeviceGetHostAtomicCapabilities(caps, ops, 2, 0),
	                 CUDA_SUCCESS);
	assert_true(caps[0] == 0 && caps[1] == 0);
	assert_int_equal(cuDeviceGetHostAtomicCapabilities(caps, &bad, 1, 0),
	                 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuDeviceGetHostAtomicCapabilities(caps, ops, 2, 7),
	                 CUDA_ERROR_INVALID_DEVICE);
	/* GPU 0 and GPU 1 of the node: no native atomics between them */
	caps[0] = 99;
	assert_int_equal(cuDeviceGetP2PAtomicCapabilities(caps, ops, 1, 0, 1),
	                 CUDA_SUCCESS);
	assert_int_equal(caps[0], 0);
	assert_int_equal(cuDeviceGetP2PAtomicCapabilities(caps, ops, 1, 0, 0),
	                 CUDA_ERROR_INVALID_DEVICE);
	assert_int_equal(cuDeviceGetTexture1DLinearMaxWidth(
	                     &width, CU_AD_FORMAT_FLOAT, 4, 0),
	                 CUDA_SUCCESS);
	assert_true(width >= (1u << 20));
	assert_int_equal(cuDeviceGetTexture1DLinearMaxWidth(
	                     &width, CU_AD_FORMAT_FLOAT, 3, 0),
	                 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(load_wrapped(fb, &lib), CUDA_SUCCESS);
	assert_int_equal(cuLibraryGetKernel(&k, lib, K_ADD), CUDA_SUCCESS);
	memset(&cfg, 0, sizeof(cfg));
	memset(&attr, 0, sizeof(attr));
	attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
	attr.value.clusterDim.x = 2;
	attr.value.clusterDim.y = 1;
	attr.value.clusterDim.z = 1;
	cfg.gridDimX = 132;
	cfg.gridDimY = cfg.gridDimZ = 1;
	cfg.blockDimX = 256;
	cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.attrs = &attr;
	cfg.numAttrs = 1;
	assert_int_equal(cuOccupancyMaxActiveClusters(&clusters, (CUfunction)k,
	                                              &cfg),
	                 CUDA_SUCCESS);
	assert_true(clusters >= 132 / 2);
	/* 132 blocks: clusters of 4 divide the grid, of 8 do not */
	assert_int_equal(cuOccupancyMaxPotentialClusterSize(
	                     &clusters, (CUfunction)k, &cfg),
	                 CUDA_SUCCESS);
	assert_int_equal(clusters, 4);
	assert_int_equal(cuLibraryUnload(lib), CUDA_SUCCESS);
	free(fb);
}

/* ---- two processes, one GPU: forked children ------------------------- */

#define LOOP_N     20     /* launches per child */
#define LOOP_ITERS 450000 /* fb_loop iterations: ~25 ms a launch */
#define LOOP_ELEMS (1 << 20)

/* What the children report (a shared mapping). */
struct shared {
	double ms[2];
	int32_t pid[2];
};

static struct shared *sh;

struct child {
	pid_t pid;
	int ready[2], go[2];
};

/* Child side: any failure exits non-zero with a message. */
#define REQUIRE(c)                                                             \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "child %d line %d: %s\n", getpid(),    \
			        __LINE__, #c);                                 \
			_exit(1);                                              \
		}                                                              \
	} while (0)

/*
 * One child: loads the default fatbin as cudart does, says it is ready,
 * waits for go, then launches fb_loop LOOP_N times over LOOP_ELEMS
 * threads and reports the sim-clock time they took.
 */
static void child_loop(struct child *c, int slot)
{
	struct wrapper w;
	uint8_t *fb;
	CUcontext cx;
	CUlibrary lib;
	CUkernel k;
	CUdeviceptr a;
	CUevent e0, e1;
	int n = LOOP_ELEMS, iters = LOOP_ITERS;
	void *params[] = {&a, &n, &iters};
	float ms = 0;
	char b = 'r';
	FILE *f;
	long len;
	char path[512];

	snprintf(path, sizeof(path), "%s/k_zstd.fatbin", GS_FATBIN_DIR);
	f = fopen(path, "rb");
	REQUIRE(f != NULL);
	REQUIRE(fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0);
	rewind(f);
	fb = malloc((size_t)len);
	REQUIRE(fb != NULL && fread(fb, 1, (size_t)len, f) == (size_t)len);
	fclose(f);
	w.magic = 0x466243b1u;
	w.version = 1;
	w.data = fb;
	w.unused = NULL;
	REQUIRE(cuInit(0) == CUDA_SUCCESS);
	REQUIRE(cuDevicePrimaryCtxRetain(&cx, 0) == CUDA_SUCCESS);
	REQUIRE(cuCtxSetCurrent(cx) == CUDA_SUCCESS);
	REQUIRE(cuLibraryLoadData(&lib, &w, NULL, NULL, 0, NULL, NULL, 0) ==
	        CUDA_SUCCESS);
	REQUIRE(cuLibraryGetKernel(&k, lib, K_LOOP) == CUDA_SUCCESS);
	REQUIRE(cuMemAlloc(&a, (size_t)LOOP_ELEMS * sizeof(float)) ==
	        CUDA_SUCCESS);
	REQUIRE(cuEventCreate(&e0, 0) == CUDA_SUCCESS);
	REQUIRE(cuEventCreate(&e1, 0) == CUDA_SUCCESS);
	REQUIRE(write(c->ready[1], &b, 1) == 1);
	REQUIRE(read(c->go[0], &b, 1) == 0);
	REQUIRE(cuEventRecord(e0, NULL) == CUDA_SUCCESS);
	for (int i = 0; i < LOOP_N; i++)
		REQUIRE(cuLaunchKernel((CUfunction)k, LOOP_ELEMS / 256, 1, 1,
		                       256, 1, 1, 0, NULL, params,
		                       NULL) == CUDA_SUCCESS);
	REQUIRE(cuEventRecord(e1, NULL) == CUDA_SUCCESS);
	REQUIRE(cuEventSynchronize(e1) == CUDA_SUCCESS);
	REQUIRE(cuEventElapsedTime(&ms, e0, e1) == CUDA_SUCCESS);
	sh->ms[slot] = ms;
	sh->pid[slot] = getpid();
	REQUIRE(cuMemFree(a) == CUDA_SUCCESS);
	REQUIRE(cuLibraryUnload(lib) == CUDA_SUCCESS);
	free(fb);
}

static void start(struct child *c, int slot)
{
	assert_int_equal(pipe(c->ready), 0);
	assert_int_equal(pipe(c->go), 0);
	fflush(NULL);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		/* keep only our own pipe ends (another child's go must
		 * close when the parent closes it) */
		for (int fd = 3; fd < 256; fd++)
			if (fd != c->ready[1] && fd != c->go[0])
				close(fd);
		alarm(120); /* never outlive a failed test */
		child_loop(c, slot);
		exit(0); /* not _exit: the driver's exit-time teardown runs */
	}
	close(c->ready[1]);
	close(c->go[0]);
}

static void wait_ready(struct child *c)
{
	char b;

	assert_int_equal(read(c->ready[0], &b, 1), 1);
}

static void go(struct child *c)
{
	close(c->go[1]);
	c->go[1] = -1;
}

/* Reaps the child; its exit status (0 = all its checks passed). */
static int finish(struct child *c)
{
	int status;

	if (c->go[1] >= 0)
		go(c);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	close(c->ready[0]);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The busy time (ms) the node state recorded for a finished process. */
static double exited_busy_ms(int32_t pid)
{
	struct gs_errbuf eb = {0};
	struct gs_sim_map *map;
	const struct gs_sim_state *st;
	uint64_t busy = 0;

	assert_int_equal(gs_sim_state_open(dir, &map, &eb), GS_OK);
	st = gs_sim_state_get(map);
	for (uint64_t i = 0; i < st->exited_seq && i < GS_SIM_EXITED_RING; i++)
		if (st->exited[i].pid == pid)
			busy = st->exited[i].busy_ns;
	gs_sim_state_close(map);
	return (double)busy / 1e6;
}

static void test_foreign_kernels_are_time_sliced_and_accounted(void **state)
{
	struct child a, b;
	double alone, busy_alone, busy[2];

	(void)state;
	start(&a, 0);
	wait_ready(&a);
	assert_int_equal(finish(&a), 0);
	alone = sh->ms[0];
	busy_alone = exited_busy_ms(sh->pid[0]);
	start(&a, 0);
	start(&b, 1);
	wait_ready(&a);
	wait_ready(&b);
	go(&a);
	go(&b);
	assert_int_equal(finish(&a), 0);
	assert_int_equal(finish(&b), 0);
	for (int i = 0; i < 2; i++)
		busy[i] = exited_busy_ms(sh->pid[i]);
	printf("fb_loop x %d: alone %.1f ms (busy %.1f ms); time-sliced "
	       "%.1f ms and %.1f ms (busy %.1f and %.1f ms)\n",
	       LOOP_N, alone, busy_alone, sh->ms[0], sh->ms[1], busy[0],
	       busy[1]);
	/* the cost model gives each launch tens of ms, like a real kernel */
	assert_true(alone > LOOP_N * 5.0);
	/* alone, the process is busy the whole time it measured */
	assert_true(busy_alone > 0.95 * alone && busy_alone < 1.05 * alone);
	for (int i = 0; i < 2; i++) {
		/* side by side each takes about twice as long (starts may be
		 * up to ~100 ms apart on a loaded host) ... */
		assert_true(sh->ms[i] > 1.5 * alone && sh->ms[i] < 2.3 * alone);
		/* ... and is charged only its own kernels' time */
		assert_true(busy[i] > 0.95 * alone && busy[i] < 1.05 * alone);
	}
}

/* ---- this process ------------------------------------------------------ */

/* A fresh node state of two H100s in `dir`, for every test here. */
static int make_state(void)
{
	struct gs_sim_gpu_init g[2];
	struct gs_errbuf eb = {0};
	int n;

	snprintf(dir, sizeof(dir), "/tmp/gs-test-fatbin-XXXXXX");
	if (mkdtemp(dir) == NULL ||
	    gs_sim_gpus_parse("2xH100-SXM5-80GB", g, 2, &n, &eb) != GS_OK ||
	    gs_sim_state_create(dir, g, n, true, &eb) != GS_OK) {
		fprintf(stderr, "cannot make a node state in %s: %s\n", dir,
		        eb.msg);
		return -1;
	}
	setenv("GPUSLICE_SIM_DIR", dir, 1);
	unsetenv("CUDA_VISIBLE_DEVICES");
	unsetenv("CUDA_MPS_PIPE_DIRECTORY");
	return 0;
}

/* A library outlives the primary context's reset: its globals come back
 * with their initial values in the new context, its kernels still run.
 * (Leaves a new primary context current for the tests after it.) */
static void test_library_survives_a_primary_context_reset(void **state)
{
	uint8_t *fb = slurp("k_zstd.fatbin", NULL);
	CUlibrary lib;
	CUkernel k;
	CUdeviceptr p, buf;
	size_t size;
	float v[4], put[4] = {9, 9, 9, 9};
	int managed;
	unsigned long long n = 4;
	float value = 1.0f;
	void *params[] = {&buf, &n, &value};

	(void)state;
	assert_int_equal(load_wrapped(fb, &lib), CUDA_SUCCESS);
	assert_int_equal(cuLibraryGetGlobal(&p, &size, lib, "fb_dev"),
	                 CUDA_SUCCESS);
	assert_int_equal(cuMemcpyHtoD(p, put, sizeof(put)), CUDA_SUCCESS);
	assert_int_equal(cuLibraryGetManaged(&p, &size, lib, "fb_managed"),
	                 CUDA_SUCCESS);
	*(volatile int *)(uintptr_t)p = 42;
	assert_int_equal(cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
	assert_int_equal(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
	assert_int_equal(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	assert_int_equal(cuLibraryGetGlobal(&p, &size, lib, "fb_dev"),
	                 CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoH(v, p, sizeof(v)), CUDA_SUCCESS);
	assert_true(v[0] == 1.0f && v[3] == 4.0f);
	assert_int_equal(cuLibraryGetManaged(&p, &size, lib, "fb_managed"),
	                 CUDA_SUCCESS);
	managed = *(volatile int *)(uintptr_t)p;
	assert_int_equal(managed, 7);
	assert_int_equal(cuLibraryGetKernel(&k, lib, "gs_fill"), CUDA_SUCCESS);
	assert_int_equal(cuMemAlloc(&buf, sizeof(v)), CUDA_SUCCESS);
	assert_int_equal(cuLaunchKernel((CUfunction)k, 1, 1, 1, 32, 1, 1, 0,
	                                NULL, params, NULL),
	                 CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoH(v, buf, sizeof(v)), CUDA_SUCCESS);
	assert_true(v[0] == 1.0f && v[3] == 1.0f);
	assert_int_equal(cuMemFree(buf), CUDA_SUCCESS);
	assert_int_equal(cuLibraryUnload(lib), CUDA_SUCCESS);
	free(fb);
}

static int group_setup(void **state)
{
	CUdevice dev;

	(void)state;
	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
	    cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
		fprintf(stderr, "the sim's driver did not start\n");
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	cuDevicePrimaryCtxRelease(0);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_zstd_fatbin_loads_runs_and_has_its_globals),
	    cmocka_unit_test(test_lz4_fatbin_loads_runs_and_has_its_globals),
	    cmocka_unit_test(
	        test_uncompressed_fatbin_loads_runs_and_has_its_globals),
	    cmocka_unit_test(test_fatbin_with_two_ptx_versions_loads_the_newer),
	    cmocka_unit_test(test_sass_only_fatbin_has_no_binary_for_the_gpu),
	    cmocka_unit_test(test_rdc_program_loads_from_its_prelinked_fatbins),
	    cmocka_unit_test(test_library_from_file_and_its_module),
	    cmocka_unit_test(test_module_api_loads_the_wrapper_and_its_globals),
	    cmocka_unit_test(test_kernel_attributes_come_from_the_ptx),
	    cmocka_unit_test(test_launch_bounds_and_static_memory_of_a_kernel),
	    cmocka_unit_test(test_unknown_kernel_time_follows_loop_bound_and_grid),
	    cmocka_unit_test(test_gs_fill_from_a_fatbin_still_computes),
	    cmocka_unit_test(test_cuda13_entry_points_answer),
	    cmocka_unit_test(test_library_survives_a_primary_context_reset),
	};

	const struct CMUnitTest sharing[] = {
	    cmocka_unit_test(test_foreign_kernels_are_time_sliced_and_accounted),
	};
	char path[128];
	int rc;

	if (GS_FATBIN_DIR[0] == '\0') {
		fprintf(stderr, "no nvcc at build time: no test fatbins\n");
		return 77;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
	          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || make_state() != 0)
		return 1;
	/* first: the parent must not have called cuInit before forking */
	rc = cmocka_run_group_tests_name("fatbin_time_slicing", sharing, NULL,
	                                 NULL);
	rc |= cmocka_run_group_tests_name("fatbin_load", tests, group_setup,
	                                  group_teardown);
	snprintf(path, sizeof(path), "%s/%s", dir, GS_SIM_STATE_FILE);
	unlink(path);
	rmdir(dir);
	munmap(sh, sizeof(*sh));
	return rc;
}
