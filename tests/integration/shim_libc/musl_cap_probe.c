/*
 * musl_cap_probe.c - gs-musl-cap-probe: a program linked against musl
 * (built with musl-gcc, so its ELF interpreter is /lib/ld-musl-*) that
 * reaches the driver as frameworks do, dlopen("libcuda.so.1") + dlsym,
 * and allocates device memory in CHUNK-byte steps until the first error
 * or LIMIT bytes.
 *
 *   gs-musl-cap-probe CHUNK LIMIT
 *
 * Prints one JSON line: "libc" ("musl", from the build), "total" (what
 * cuMemGetInfo_v2 says the device holds: the cap under the shim),
 * "allocated" (bytes held when it stopped) and "error" (the CUresult that
 * stopped it, 0 when LIMIT came first). Exit 1 when the driver cannot be
 * reached.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	void *cu = dlopen("libcuda.so.1", RTLD_NOW);
	CUresult (*init)(unsigned int);
	CUresult (*get)(CUdevice *, int);
	CUresult (*retain)(CUcontext *, CUdevice);
	CUresult (*setcur)(CUcontext);
	CUresult (*info)(size_t *, size_t *);
	CUresult (*alloc)(CUdeviceptr *, size_t);
	unsigned long long chunk, limit, held = 0;
	size_t fr = 0, to = 0;
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr p;
	CUresult rc = CUDA_SUCCESS;

	if (argc != 3) {
		fprintf(stderr, "usage: gs-musl-cap-probe CHUNK LIMIT\n");
		return 2;
	}
	chunk = strtoull(argv[1], NULL, 10);
	limit = strtoull(argv[2], NULL, 10);
	if (cu == NULL) {
		fprintf(stderr, "gs-musl-cap-probe: %s\n", dlerror());
		return 1;
	}
	init = (CUresult(*)(unsigned int))dlsym(cu, "cuInit");
	get = (CUresult(*)(CUdevice *, int))dlsym(cu, "cuDeviceGet");
	retain = (CUresult(*)(CUcontext *, CUdevice))dlsym(
	    cu, "cuDevicePrimaryCtxRetain");
	setcur = (CUresult(*)(CUcontext))dlsym(cu, "cuCtxSetCurrent");
	info = (CUresult(*)(size_t *, size_t *))dlsym(cu, "cuMemGetInfo_v2");
	alloc = (CUresult(*)(CUdeviceptr *, size_t))dlsym(cu, "cuMemAlloc_v2");
	if (!init || !get || !retain || !setcur || !info || !alloc || chunk == 0) {
		fprintf(stderr, "gs-musl-cap-probe: missing symbol or bad chunk\n");
		return 1;
	}
	if (init(0) || get(&dev, 0) || retain(&ctx, dev) || setcur(ctx) ||
	    info(&fr, &to)) {
		fprintf(stderr, "gs-musl-cap-probe: CUDA call failed\n");
		return 1;
	}
	while (held + chunk <= limit) {
		rc = alloc(&p, (size_t)chunk);
		if (rc != CUDA_SUCCESS)
			break;
		held += chunk;
	}
	printf("{\"libc\":\"musl\",\"total\":%zu,\"allocated\":%llu,\"error\":%d}\n",
	       to, held, (int)rc);
	return 0;
}
