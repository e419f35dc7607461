/*
 * cu.h - the CUDA driver API as the workload kit reaches it: one table of
 * function pointers, filled at start-up from whichever libcuda.so.1 the
 * dynamic loader finds (the real driver, or the sim's build/sim/libcuda.so.1
 * when LD_LIBRARY_PATH puts it first).
 *
 * Why a table and not -lcuda: the programs must build on machines without
 * a driver, and must also be able to reach the driver the way CUDA 12+
 * runtimes do, through cuGetProcAddress_v2, because the shim has to catch
 * both paths. gs_cu_load() therefore resolves every entry either with
 * dlsym() on the versioned symbol (cuMemAlloc_v2) or, in the
 * GS_CU_VIA_GETPROCADDRESS mode, by handing the base name (cuMemAlloc) and
 * the CUDA version that introduced the header's variant (3020) to
 * cuGetProcAddress_v2, exactly as libcudart 13 does.
 *
 * Call entries as gs_cu.cuMemAlloc(&p, n): cuda.h's macros rename the
 * member the same way they rename the function, so the member always has
 * the type of the variant the header declares.
 *
 * Entries marked optional (0 below) may be NULL after a successful load,
 * when the driver lacks them; callers of those check first. The table is
 * written once by gs_cu_load() before any thread starts and only read
 * afterwards.
 */
#ifndef GS_WORKLOADS_CU_H
#define GS_WORKLOADS_CU_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

/* X(name, CUDA version of the header's variant, required) */
#define GS_CU_ENTRIES(X)                                                       \
	X(cuInit, 2000, 1)                                                     \
	X(cuDriverGetVersion, 2020, 1)                                         \
	X(cuGetErrorName, 6000, 1)                                             \
	X(cuGetErrorString, 6000, 1)                                           \
	X(cuDeviceGet, 2000, 1)                                                \
	X(cuDeviceGetCount, 2000, 1)                                           \
	X(cuDeviceGetName, 2000, 1)                                            \
	X(cuDeviceTotalMem, 3020, 1)                                           \
	X(cuDeviceGetAttribute, 2000, 1)                                       \
	X(cuDevicePrimaryCtxRetain, 7000, 1)                                   \
	X(cuDevicePrimaryCtxRelease, 11000, 1)                                 \
	X(cuCtxSetCurrent, 4000, 1)                                            \
	X(cuCtxSynchronize, 2000, 1)                                           \
	X(cuModuleLoadData, 2000, 1)                                           \
	X(cuModuleUnload, 2000, 1)                                             \
	X(cuModuleGetFunction, 2000, 1)                                        \
	X(cuLaunchKernel, 4000, 1)                                             \
	X(cuMemAlloc, 3020, 1)                                                 \
	X(cuMemFree, 3020, 1)                                                  \
	X(cuMemGetInfo, 3020, 1)                                               \
	X(cuMemcpyHtoD, 3020, 1)                                               \
	X(cuMemcpyDtoH, 3020, 1)                                               \
	X(cuMemcpyHtoDAsync, 3020, 1)                                          \
	X(cuMemcpyDtoHAsync, 3020, 1)                                          \
	X(cuStreamCreate, 2000, 1)                                             \
	X(cuStreamDestroy, 4000, 1)                                            \
	X(cuStreamSynchronize, 2000, 1)                                        \
	X(cuMemAllocPitch, 3020, 0)                                            \
	X(cuMemAllocManaged, 6000, 0)                                          \
	X(cuMemAllocAsync, 11020, 0)                                           \
	X(cuMemFreeAsync, 11020, 0)                                            \
	X(cuMemPoolCreate, 11020, 0)                                           \
	X(cuMemPoolDestroy, 11020, 0)                                          \
	X(cuMemAllocFromPoolAsync, 11020, 0)                                   \
	X(cuMemGetAllocationGranularity, 10020, 0)                             \
	X(cuMemCreate, 10020, 0)                                               \
	X(cuMemRelease, 10020, 0)                                              \
	X(cuMemAddressReserve, 10020, 0)                                       \
	X(cuMemAddressFree, 10020, 0)                                          \
	X(cuMemMap, 10020, 0)                                                  \
	X(cuMemUnmap, 10020, 0)                                                \
	X(cuMemSetAccess, 10020, 0)                                            \
	X(cuArray3DCreate, 3020, 0)                                            \
	X(cuArrayDestroy, 2000, 0)

struct gs_cu_table {
#define GS__CU_MEMBER(name, ver, req) __typeof__(name) *name;
	GS_CU_ENTRIES(GS__CU_MEMBER)
#undef GS__CU_MEMBER
};

/* The process's table; all NULL until gs_cu_load() succeeds. */
extern struct gs_cu_table gs_cu;

enum gs_cu_resolve {
	GS_CU_VIA_DLSYM = 0,
	GS_CU_VIA_GETPROCADDRESS = 1,
};

/*
 * Opens libcuda.so.1 and fills gs_cu. Returns 0, or -1 with a one-line
 * reason in `why` (OUT, `whylen` bytes): the library could not be opened,
 * or a required entry (or cuGetProcAddress_v2 itself) is missing. On
 * failure the table is left all NULL. Calling it again after a success
 * does nothing and returns 0.
 */
int gs_cu_load(enum gs_cu_resolve how, char *why, size_t whylen);
/* True after gs_cu_load() when the library is gpuslice's simulated node
   (it exports gpuslice_sim_node); results then say "sim: <device>". */
extern bool gs_cu_sim;

/* "dlsym" or "cuGetProcAddress": how the loaded table was resolved. */
const char *gs_cu_resolve_name(enum gs_cu_resolve how);

/*
 * The name of a CUresult ("CUDA_ERROR_OUT_OF_MEMORY") from the driver's
 * cuGetErrorName; for a code the driver does not know, "CUDA_ERROR_<n>"
 * written into `buf` (OUT, at least 32 bytes). Never NULL.
 */
const char *gs_cu_error_name(CUresult r, char *buf, size_t buflen);
/* The driver's description of a CUresult, or "" when it has none. */
const char *gs_cu_error_string(CUresult r);

#endif
