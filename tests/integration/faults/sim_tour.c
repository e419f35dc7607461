/*
 * sim_tour.c - gs-sim-tour: a small CUDA driver API program for the parts
 * of the simulated driver the workload kit does not reach, for
 * sim_sweep.py to fail each sim fault site under: a created (not primary)
 * context; a module and a library read from a PTX file; a fatbinary
 * (that PTX stored in a container, as nvcc embeds it); streams, events,
 * a launch, a stream capture instantiated and launched as a graph, pinned
 * host memory, an array; and a context destroyed with a stream, an event,
 * a module, an array and device memory still in it, after which the
 * device must have all its memory back (else "LEAKED_MEMORY") and the
 * stale handles must be refused (else "STALE_HANDLE_ANSWERS").
 *
 * usage: gs-sim-tour KERNELS.PTX      (libcuda.so.1 from the loader path)
 *
 * Prints one JSON line like the workload kit's programs: "error" null,
 * or the CUDA error name and the failing call. Exit 0, or 1 on an error.
 * The driver is reached with dlopen + dlsym on the names cuda.h maps each
 * entry point to (cuMemAlloc -> cuMemAlloc_v2), so nothing links -lcuda.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STR_(x) #x
#define STR(x)  STR_(x)

#define CU_FNS(X)                                                              \
	X(cuInit)                                                              \
	X(cuGetErrorName)                                                      \
	X(cuDevicePrimaryCtxRetain)                                            \
	X(cuDevicePrimaryCtxRelease)                                           \
	X(cuCtxSetCurrent)                                                     \
	X(cuCtxCreate)                                                         \
	X(cuCtxDestroy)                                                        \
	X(cuMemGetInfo)                                                        \
	X(cuModuleLoad)                                                        \
	X(cuModuleLoadData)                                                    \
	X(cuModuleLoadFatBinary)                                               \
	X(cuModuleUnload)                                                      \
	X(cuModuleGetFunction)                                                 \
	X(cuLibraryLoadFromFile)                                               \
	X(cuLibraryUnload)                                                     \
	X(cuStreamCreate)                                                      \
	X(cuStreamDestroy)                                                     \
	X(cuStreamQuery)                                                       \
	X(cuStreamSynchronize)                                                 \
	X(cuStreamBeginCapture)                                                \
	X(cuStreamEndCapture)                                                  \
	X(cuEventCreate)                                                       \
	X(cuEventDestroy)                                                      \
	X(cuEventRecord)                                                       \
	X(cuEventQuery)                                                        \
	X(cuMemAlloc)                                                          \
	X(cuMemFree)                                                           \
	X(cuMemAllocHost)                                                      \
	X(cuMemFreeHost)                                                       \
	X(cuMemcpyDtoHAsync)                                                   \
	X(cuLaunchKernel)                                                      \
	X(cuGraphInstantiateWithFlags)                                         \
	X(cuGraphLaunch)                                                       \
	X(cuGraphExecDestroy)                                                  \
	X(cuGraphDestroy)                                                      \
	X(cuArrayCreate)                                                       \
	X(cuArrayDestroy)

static struct {
#define FIELD(name) __typeof__(name) *name;
	CU_FNS(FIELD)
#undef FIELD
} cu;

static void die(const char *error, const char *call)
{
	printf(
	    "{\"program\":\"gs-sim-tour\",\"error\":\"%s\",\"call\":\"%s\"}\n",
	    error, call);
	exit(1);
}

static void check(CUresult r, const char *call)
{
	const char *name = NULL;

	if (r == CUDA_SUCCESS)
		return;
	if (cu.cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL)
		name = "CUDA_ERROR_UNKNOWN";
	die(name, call);
}

/* Calls a driver function and reports its name when it fails. */
#define CALL(fn, ...) check(cu.fn(__VA_ARGS__), STR(fn))

static void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/*
 * A fatbinary container (sim/cuda/fatbin.h's layout, little-endian hosts)
 * holding the PTX file's text as one stored sm_90 PTX entry. The caller
 * frees it.
 */
static uint8_t *fatbin_of(const char *path)
{
	enum { CONTAINER = 16, ENTRY = 64 };
	FILE *f = fopen(path, "rb");
	uint8_t *b = NULL;
	long len;

	if (f == NULL)
		die("OS_ERROR", "fopen");
	if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) <= 0 ||
	    fseek(f, 0, SEEK_SET) != 0 ||
	    (b = calloc(1, CONTAINER + ENTRY + (size_t)len + 1)) == NULL ||
	    fread(b + CONTAINER + ENTRY, 1, (size_t)len, f) != (size_t)len)
		die("OS_ERROR", "fread");
	(void)fclose(f);
	put32(b, 0xba55ed50u);                    /* container magic */
	put16(b + 4, 1);                          /* version */
	put16(b + 6, CONTAINER);                  /* header size */
	put64(b + 8, ENTRY + (uint64_t)len);      /* entries' size */
	put16(b + CONTAINER, 1);                  /* kind: PTX */
	put32(b + CONTAINER + 4, ENTRY);          /* entry header size */
	put64(b + CONTAINER + 8, (uint64_t)len);  /* payload size */
	put32(b + CONTAINER + 28, 90);            /* sm_90 */
	put64(b + CONTAINER + 56, (uint64_t)len); /* uncompressed size */
	return b;
}

static size_t free_bytes(void)
{
	size_t fr = 0, total = 0;

	CALL(cuMemGetInfo, &fr, &total);
	return fr;
}

int main(int argc, char **argv)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	CUDA_ARRAY_DESCRIPTOR desc = {256, 256, CU_AD_FORMAT_FLOAT, 1};
	CUcontext pctx, ctx;
	CUmodule mod, mod2, fmod;
	CUlibrary lib;
	CUfunction fn, fn2;
	CUstream st, st2;
	CUevent ev0, ev1, ev2;
	CUgraph graph;
	CUgraphExec gexec;
	CUarray arr, arr2;
	CUdeviceptr dptr, dptr2;
	void *host, *params[3];
	unsigned long long n = 1024;
	float val = 1.5f;
	size_t free0;
	uint8_t *fat;

	if (argc != 2) {
		fprintf(stderr, "usage: gs-sim-tour KERNELS.PTX\n");
		return 2;
	}
	if (h == NULL)
		die("LIBCUDA_LOAD_FAILED", "dlopen");
#define LOOKUP(name)                                                           \
	if ((*(void **)&cu.name = dlsym(h, STR(name))) == NULL)                \
		die("LIBCUDA_LOAD_FAILED", STR(name));
	CU_FNS(LOOKUP)
#undef LOOKUP

	CALL(cuInit, 0);
	CALL(cuDevicePrimaryCtxRetain, &pctx, 0);
	CALL(cuCtxSetCurrent, pctx);
	free0 = free_bytes();

	CALL(cuCtxCreate, &ctx, NULL, 0, 0);
	CALL(cuModuleLoad, &mod, argv[1]);
	CALL(cuModuleGetFunction, &fn, mod, "gs_fill");
	CALL(cuLibraryLoadFromFile, &lib, argv[1], NULL, NULL, 0, NULL, NULL,
	     0);
	fat = fatbin_of(argv[1]);
	CALL(cuModuleLoadData, &fmod, fat);
	CALL(cuModuleUnload, fmod);
	CALL(cuModuleLoadFatBinary, &fmod, fat);
	CALL(cuModuleUnload, fmod);
	free(fat);
	CALL(cuStreamCreate, &st, CU_STREAM_NON_BLOCKING);
	CALL(cuEventCreate, &ev0, 0);
	CALL(cuEventCreate, &ev1, 0);
	CALL(cuMemAlloc, &dptr, 1 << 20);
	CALL(cuMemAllocHost, &host, 1 << 16);
	params[0] = &dptr;
	params[1] = &n;
	params[2] = &val;
	CALL(cuEventRecord, ev0, st);
	CALL(cuLaunchKernel, fn, 4, 1, 1, 256, 1, 1, 0, st, params, NULL);
	CALL(cuStreamBeginCapture, st, CU_STREAM_CAPTURE_MODE_GLOBAL);
	for (int i = 0; i < 3; i++)
		CALL(cuLaunchKernel, fn, 4, 1, 1, 256, 1, 1, 0, st, params,
		     NULL);
	CALL(cuStreamEndCapture, st, &graph);
	CALL(cuGraphInstantiateWithFlags, &gexec, graph, 0);
	CALL(cuGraphLaunch, gexec, st);
	CALL(cuEventRecord, ev1, st);
	CALL(cuMemcpyDtoHAsync, host, dptr, 4096, st);
	CALL(cuStreamSynchronize, st);
	CALL(cuArrayCreate, &arr, &desc);
	CALL(cuArrayDestroy, arr);
	CALL(cuGraphExecDestroy, gexec);
	CALL(cuGraphDestroy, graph);
	CALL(cuMemFreeHost, host);
	CALL(cuMemFree, dptr);
	CALL(cuEventDestroy, ev0);
	CALL(cuEventDestroy, ev1);
	CALL(cuStreamDestroy, st);
	CALL(cuLibraryUnload, lib);
	CALL(cuModuleUnload, mod);

	/* What the context still holds when it is destroyed goes with it. */
	CALL(cuModuleLoad, &mod2, argv[1]);
	CALL(cuStreamCreate, &st2, CU_STREAM_NON_BLOCKING);
	CALL(cuEventCreate, &ev2, 0);
	CALL(cuArrayCreate, &arr2, &desc);
	CALL(cuMemAlloc, &dptr2, 1 << 20);
	CALL(cuCtxDestroy, ctx);
	CALL(cuCtxSetCurrent, pctx);
	if (free_bytes() != free0)
		die("LEAKED_MEMORY", STR(cuCtxDestroy));
	if (cu.cuStreamQuery(st2) == CUDA_SUCCESS ||
	    cu.cuEventQuery(ev2) == CUDA_SUCCESS ||
	    cu.cuModuleGetFunction(&fn2, mod2, "gs_fill") == CUDA_SUCCESS)
		die("STALE_HANDLE_ANSWERS", STR(cuCtxDestroy));
	CALL(cuDevicePrimaryCtxRelease, 0);
	printf("{\"program\":\"gs-sim-tour\",\"error\":null}\n");
	return 0;
}
