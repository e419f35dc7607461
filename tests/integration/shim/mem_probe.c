/*
 * mem_probe.c - gs-shim-probe: what a program sees of device 0's memory,
 * through every query the shim answers with the slice's view. It loads
 * the driver and NVML with dlopen + dlsym, as many frameworks do, so under
 * the shim it also checks that dlsym hands out the shim's hooks.
 *
 * Prints one JSON line: cu_free, cu_total (cuMemGetInfo_v2), cu_device_total
 * (cuDeviceTotalMem_v2), nvml_total/used/free (nvmlDeviceGetMemoryInfo),
 * nvml2_total/used/free (nvmlDeviceGetMemoryInfo_v2). Exit 1 on any error.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

#include "gs/nvml.h"

#define SYM(h, name) dlsym(h, name)

int main(void)
{
	void *cu = dlopen("libcuda.so.1", RTLD_NOW);
	void *ml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
	CUresult (*init)(unsigned int);
	CUresult (*get)(CUdevice *, int);
	CUresult (*retain)(CUcontext *, CUdevice);
	CUresult (*setcur)(CUcontext);
	CUresult (*info)(size_t *, size_t *);
	CUresult (*total)(size_t *, CUdevice);
	nvmlReturn_t (*ninit)(void);
	nvmlReturn_t (*nget)(unsigned int, nvmlDevice_t *);
	nvmlReturn_t (*nmem)(nvmlDevice_t, nvmlMemory_t *);
	nvmlReturn_t (*nmem2)(nvmlDevice_t, nvmlMemory_v2_t *);
	CUdevice dev;
	CUcontext ctx;
	size_t fr = 0, to = 0, dt = 0;
	nvmlDevice_t nd;
	nvmlMemory_t m = {0};
	nvmlMemory_v2_t m2 = {0};

	if (cu == NULL || ml == NULL) {
		fprintf(stderr, "gs-shim-probe: %s\n", dlerror());
		return 1;
	}
	init = (CUresult(*)(unsigned int))SYM(cu, "cuInit");
	get = (CUresult(*)(CUdevice *, int))SYM(cu, "cuDeviceGet");
	retain = (CUresult(*)(CUcontext *, CUdevice))SYM(
	    cu, "cuDevicePrimaryCtxRetain");
	setcur = (CUresult(*)(CUcontext))SYM(cu, "cuCtxSetCurrent");
	info = (CUresult(*)(size_t *, size_t *))SYM(cu, "cuMemGetInfo_v2");
	total = (CUresult(*)(size_t *, CUdevice))SYM(cu, "cuDeviceTotalMem_v2");
	ninit = (nvmlReturn_t(*)(void))SYM(ml, "nvmlInit_v2");
	nget = (nvmlReturn_t(*)(unsigned int, nvmlDevice_t *))SYM(
	    ml, "nvmlDeviceGetHandleByIndex_v2");
	nmem = (nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_t *))SYM(
	    ml, "nvmlDeviceGetMemoryInfo");
	nmem2 = (nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_v2_t *))SYM(
	    ml, "nvmlDeviceGetMemoryInfo_v2");
	if (!init || !get || !retain || !setcur || !info || !total || !ninit ||
	    !nget || !nmem || !nmem2) {
		fprintf(stderr, "gs-shim-probe: missing symbol\n");
		return 1;
	}
	m2.version = nvmlMemory_v2;
	if (init(0) || get(&dev, 0) || retain(&ctx, dev) || setcur(ctx) ||
	    info(&fr, &to) || total(&dt, dev)) {
		fprintf(stderr, "gs-shim-probe: CUDA call failed\n");
		return 1;
	}
	if (ninit() || nget(0, &nd) || nmem(nd, &m) || nmem2(nd, &m2)) {
		fprintf(stderr, "gs-shim-probe: NVML call failed\n");
		return 1;
	}
	printf(
	    "{\"cu_free\":%zu,\"cu_total\":%zu,\"cu_device_total\":%zu,"
	    "\"nvml_total\":%llu,\"nvml_used\":%llu,\"nvml_free\":%llu,"
	    "\"nvml2_total\":%llu,\"nvml2_used\":%llu,\"nvml2_free\":%llu}\n",
	    fr, to, dt, m.total, m.used, m.free, m2.total, m2.used, m2.free);
	return 0;
}
