/*
 * cudart_check.cu - a program on the CUDA runtime, for `make gpu-check`.
 *
 * Built with nvcc and the static runtime, which reaches the driver the way
 * every CUDA 12+ application does: it loads libcuda.so.1 and resolves each
 * entry point through cuGetProcAddress. Run under `gpuslice run --memory
 * CAP`, it shows whether the shim's cap holds on that path:
 *
 *   cudaMemGetInfo reports the cap as the total;
 *   a quarter of the cap allocates, and a kernel writes into it;
 *   the whole cap on top of that fails with cudaErrorMemoryAllocation.
 *
 * It also records, without judging, what an oversized launch (a block of
 * 2048 threads) answers through the runtime and through the driver's
 * cuLaunchKernel on the kernel's CUfunction: the simulated GPU answers
 * CUDA_ERROR_INVALID_VALUE to both, and whether a real GPU gives the
 * runtime cudaErrorInvalidConfiguration there is still to be seen
 * (sim/README.md, "Refused launches"; issue #29).
 *
 * Usage: cudart_check [--cap BYTES]   (without --cap: no cap expected,
 * only the allocation and the kernel are checked). Prints one JSON line;
 * exits 0 when every step behaved as expected, 1 otherwise.
 *
 * The kernel is gs_fill with the parameters of include/gs/kernels.h, so
 * the gpuslice sim, which knows it by name, runs it too.
 */
#include <cuda.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" __global__ void gs_fill(float *buf, unsigned long long n,
				   float value)
{
	unsigned long long i =
		blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;

	for (; i < n; i += (unsigned long long)gridDim.x * blockDim.x)
		buf[i] = value;
}

#define N_CHECK (1u << 20)

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned,
			      unsigned, unsigned, unsigned, unsigned,
			      CUstream, void **, void **);

/* What a block of 2048 threads answers: through the runtime (`rt`, an
 * error name) and through the driver's cuLaunchKernel (`drv`, a number). */
static void oversized_launch(float *buf, const char **rt, int *drv)
{
	cudaDriverEntryPointQueryResult q;
	cudaFunction_t f = NULL;
	void *fn = NULL;
	unsigned long long n = 1;
	float v = 0.0f;
	void *args[] = {&buf, &n, &v};

	gs_fill<<<1, 2048>>>(buf, 1, 0.0f);
	*rt = cudaGetErrorName(cudaGetLastError());
	*drv = -1;
	if (cudaGetFuncBySymbol(&f, (const void *)gs_fill) != cudaSuccess ||
	    cudaGetDriverEntryPointByVersion("cuLaunchKernel", &fn, 12000,
					     cudaEnableDefault,
					     &q) != cudaSuccess ||
	    fn == NULL) {
		(void)cudaGetLastError();
		return;
	}
	*drv = (int)((launch_fn)fn)((CUfunction)f, 1, 1, 1, 2048, 1, 1, 0,
				    NULL, args, NULL);
}

int main(int argc, char **argv)
{
	unsigned long long cap = 0;
	size_t free_b = 0, total_b = 0;
	int rt = 0, drv = 0, ok = 1, kernel_ok = 0;
	const char *within = "not run", *past = "not run", *big_rt = "not run";
	int big_drv = -1;
	void *a = NULL, *b = NULL;
	float *host = NULL;
	cudaError_t e;

	if (argc == 3 && strcmp(argv[1], "--cap") == 0) {
		cap = strtoull(argv[2], NULL, 10);
	} else if (argc != 1) {
		fprintf(stderr, "usage: cudart_check [--cap BYTES]\n");
		return 2;
	}
	(void)cudaRuntimeGetVersion(&rt);
	(void)cudaDriverGetVersion(&drv);
	e = cudaMemGetInfo(&free_b, &total_b);
	if (e != cudaSuccess) {
		printf("{\"program\":\"cudart_check\",\"error\":\"%s\",\"call\":\"cudaMemGetInfo\"}\n",
		       cudaGetErrorName(e));
		return 1;
	}
	if (cap != 0 && total_b != cap)
		ok = 0;

	e = cudaMalloc(&a, cap != 0 ? cap / 4 : (64u << 20));
	within = cudaGetErrorName(e);
	if (e != cudaSuccess) {
		ok = 0;
	} else {
		host = (float *)malloc(N_CHECK * sizeof(float));
		gs_fill<<<256, 256>>>((float *)a, N_CHECK, 3.5f);
		e = cudaDeviceSynchronize();
		if (e == cudaSuccess && host != NULL)
			e = cudaMemcpy(host, a, N_CHECK * sizeof(float),
				       cudaMemcpyDeviceToHost);
		kernel_ok = e == cudaSuccess && host != NULL &&
			    host[0] == 3.5f && host[N_CHECK - 1] == 3.5f;
		ok = ok && kernel_ok;
		oversized_launch((float *)a, &big_rt, &big_drv);
	}
	if (cap != 0) {
		e = cudaMalloc(&b, cap);
		past = cudaGetErrorName(e);
		if (e != cudaErrorMemoryAllocation)
			ok = 0;
		if (e == cudaSuccess)
			(void)cudaFree(b);
		(void)cudaGetLastError(); /* clear the expected error */
	}
	printf("{\"program\":\"cudart_check\",\"runtime_version\":%d,\"driver_version\":%d,"
	       "\"cap_bytes\":%llu,\"mem_get_info_total\":%zu,\"mem_get_info_free\":%zu,"
	       "\"malloc_within_cap\":\"%s\",\"kernel_ok\":%s,\"malloc_past_cap\":\"%s\","
	       "\"oversized_launch_runtime\":\"%s\",\"oversized_launch_driver\":%d,\"ok\":%s}\n",
	       rt, drv, cap, total_b, free_b, within,
	       kernel_ok ? "true" : "false", past, big_rt, big_drv,
	       ok ? "true" : "false");
	if (a != NULL)
		(void)cudaFree(a);
	free(host);
	return ok ? 0 : 1;
}
