/*
 * alloc_hold.c - gs-sim-nvml-alloc LIBCUDA MIB [SECONDS]: a CUDA client
 * for the NVML tests. Loads the given libcuda.so.1 (the sim's), allocates
 * MIB MiB on device 0 through the primary context, prints "ready" and
 * holds the allocation for SECONDS (default 60) or until killed. Loaded
 * with dlopen so that the test builds whether or not the sim driver is
 * built yet.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef CUresult (*init_fn)(unsigned int);
typedef CUresult (*dev_get_fn)(CUdevice *, int);
typedef CUresult (*retain_fn)(CUcontext *, CUdevice);
typedef CUresult (*set_fn)(CUcontext);
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);

static void *sym(void *lib, const char *name)
{
	void *p = dlsym(lib, name);

	if (p == NULL) {
		fprintf(stderr, "alloc: no %s in the driver\n", name);
		exit(1);
	}
	return p;
}

int main(int argc, char **argv)
{
	CUdeviceptr ptr;
	CUcontext ctx;
	CUdevice dev;
	CUresult r;
	void *lib;

	if (argc != 3 && argc != 4) {
		fprintf(stderr,
		        "usage: gs-sim-nvml-alloc LIBCUDA MIB [SECONDS]\n");
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		fprintf(stderr, "alloc: %s\n", dlerror());
		return 1;
	}
	r = ((init_fn)sym(lib, "cuInit"))(0);
	if (r == CUDA_SUCCESS)
		r = ((dev_get_fn)sym(lib, "cuDeviceGet"))(&dev, 0);
	if (r == CUDA_SUCCESS)
		r = ((retain_fn)sym(lib, "cuDevicePrimaryCtxRetain"))(&ctx,
		                                                      dev);
	if (r == CUDA_SUCCESS)
		r = ((set_fn)sym(lib, "cuCtxSetCurrent"))(ctx);
	if (r == CUDA_SUCCESS)
		r = ((alloc_fn)sym(lib, "cuMemAlloc_v2"))(
		    &ptr, (size_t)strtoull(argv[2], NULL, 10) << 20);
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "alloc: CUDA error %d\n", (int)r);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	sleep(argc == 4 ? (unsigned int)atoi(argv[3]) : 60u);
	return 0;
}
