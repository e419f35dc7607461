/*
 * fake_newer_driver.c - libgs-fake-newer-cuda.so, a stand-in for a future
 * driver in the shim's getprocaddress guard test: it depends on the sim's
 * libcuda.so.1 (so every other name resolves there) and answers
 * cuGetProcAddress itself for two names:
 *   cuMemAlloc at CUDA 13.0 and above: gs_fake_cuMemAlloc_v3, a "new
 *     variant" with another signature (a flags argument), which the shim
 *     must pass through unwrapped;
 *   cuMemFree at any version: an internal entry point (not an export)
 *     that is the same variant as cuMemFree_v2, which the shim must still
 *     wrap.
 * Everything else is the sim's answer.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stddef.h>

#undef cuGetProcAddress

typedef CUresult (*gpa_v2_fn)(const char *, void **, int, cuuint64_t,
                              CUdriverProcAddressQueryResult *);

CUresult gs_fake_cuMemAlloc_v3(CUdeviceptr *dptr, size_t size,
                               unsigned long long flags);
CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn,
                                     int cudaVersion, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *st);
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn,
                                  int cudaVersion, cuuint64_t flags);

/* The new variant: never meant to be reached through the shim's
 * cuMemAlloc_v2 wrapper. */
CUresult gs_fake_cuMemAlloc_v3(CUdeviceptr *dptr, size_t size,
                               unsigned long long flags)
{
	(void)dptr;
	(void)size;
	return flags == 0x600d ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static void *sim(const char *name)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

	return h != NULL ? dlsym(h, name) : NULL;
}

static CUresult internal_mem_free(CUdeviceptr p)
{
	CUresult (*f)(CUdeviceptr) = (CUresult(*)(CUdeviceptr))sim("cuMemFree_v2");

	return f != NULL ? f(p) : CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn,
                                     int cudaVersion, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *st)
{
	gpa_v2_fn real = (gpa_v2_fn)sim("cuGetProcAddress_v2");
	const char *a = "cuMemAlloc", *f = "cuMemFree";
	int i;

	if (symbol != NULL && pfn != NULL) {
		for (i = 0; a[i] != '\0' && symbol[i] == a[i]; i++)
			;
		if (a[i] == '\0' && symbol[i] == '\0' && cudaVersion >= 13000) {
			*pfn = (void *)&gs_fake_cuMemAlloc_v3;
			if (st != NULL)
				*st = CU_GET_PROC_ADDRESS_SUCCESS;
			return CUDA_SUCCESS;
		}
		for (i = 0; f[i] != '\0' && symbol[i] == f[i]; i++)
			;
		if (f[i] == '\0' && symbol[i] == '\0' && cudaVersion >= 3020) {
			*pfn = (void *)&internal_mem_free;
			if (st != NULL)
				*st = CU_GET_PROC_ADDRESS_SUCCESS;
			return CUDA_SUCCESS;
		}
	}
	return real != NULL ? real(symbol, pfn, cudaVersion, flags, st)
	                    : CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn,
                                  int cudaVersion, cuuint64_t flags)
{
	return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
