/*
 * bypass.c - gs-daemon-bypass: a tenant that allocates around the shim.
 * It loads the CUDA driver (the sim's libcuda.so.1, or the real one) into
 * a fresh link-map namespace with dlmopen(LM_ID_NEWLM), where no
 * LD_PRELOAD'ed libgpuslice.so can intercept it, and allocates there.
 * Only the daemon's watchdog (NVML's per-process memory) can see it.
 *
 *   gs-daemon-bypass LIBCUDA BYTES
 *       prints "pid N" and waits for a line on stdin, then creates a
 *       context on device 0, allocates BYTES, prints "allocated T" (T:
 *       CLOCK_REALTIME seconds when the allocation returned) and sleeps
 *       until killed.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef int (*init_fn)(unsigned int);
typedef int (*dev_fn)(int *, int);
typedef int (*ctx_fn)(void **, unsigned int, int);
typedef int (*alloc_fn)(unsigned long long *, size_t);

int main(int argc, char **argv)
{
	void *h;
	init_fn cu_init;
	dev_fn cu_dev;
	ctx_fn cu_ctx;
	alloc_fn cu_alloc;
	void *ctx = NULL;
	unsigned long long ptr = 0;
	int dev = 0, rc;
	char line[16];

	if (argc != 3) {
		fprintf(stderr, "usage: gs-daemon-bypass LIBCUDA BYTES\n");
		return 2;
	}
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	if (fgets(line, sizeof(line), stdin) == NULL)
		return 1;
	h = dlmopen(LM_ID_NEWLM, argv[1], RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		fprintf(stderr, "bypass: %s\n", dlerror());
		return 1;
	}
	cu_init = (init_fn)dlsym(h, "cuInit");
	cu_dev = (dev_fn)dlsym(h, "cuDeviceGet");
	cu_ctx = (ctx_fn)dlsym(h, "cuCtxCreate_v2");
	cu_alloc = (alloc_fn)dlsym(h, "cuMemAlloc_v2");
	if (!cu_init || !cu_dev || !cu_ctx || !cu_alloc) {
		fprintf(stderr, "bypass: driver entry points missing\n");
		return 1;
	}
	if ((rc = cu_init(0)) != 0 || (rc = cu_dev(&dev, 0)) != 0 ||
	    (rc = cu_ctx(&ctx, 0, dev)) != 0 ||
	    (rc = cu_alloc(&ptr, strtoull(argv[2], NULL, 10))) != 0) {
		fprintf(stderr, "bypass: CUDA error %d\n", rc);
		return 1;
	}
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		printf("allocated %lld.%09ld\n", (long long)ts.tv_sec,
		       ts.tv_nsec);
	}
	fflush(stdout);
	for (;;)
		pause();
}
