/*
 * ctx_switch.c - gs-shim-ctxswitch --rounds R: launches in two contexts
 * of one thread, switching between them without synchronising: each
 * round makes A current (cuCtxSetCurrent) for 100 launches of a 2 us
 * gs_spin, B for 20 of a 1 ms one, then pushes A (cuCtxPushCurrent) for
 * 10 of 2 us and pops it, all on the NULL stream, then synchronises both
 * contexts. Under the shim each switch must end the thread's launch lease
 * (it caches the current context): a lease carried across would put B's
 * kernels in A's batch, timed by events of the wrong context. Loads the
 * driver with dlopen. Prints one JSON line:
 * {"pid":...,"launches":...,"wall_s":...,"error":null|"CUDA_ERROR_..."}.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char ptx[] =
	".version 8.0\n.target sm_90\n.address_size 64\n"
	".visible .entry gs_spin(.param .u64 ns)\n{\n ret;\n}\n";

static void *cu;

static void *sym(const char *n)
{
	void *p = dlsym(cu, n);

	if (p == NULL) {
		fprintf(stderr, "gs-shim-ctxswitch: no %s\n", n);
		exit(1);
	}
	return p;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned,
                              unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);

static CUresult burst(launch_fn launch, CUfunction fn, unsigned long long ns,
                      int k, long *n)
{
	void *args[] = {&ns};
	CUresult r = CUDA_SUCCESS;

	for (int i = 0; i < k && r == CUDA_SUCCESS; i++) {
		r = launch(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
		if (r == CUDA_SUCCESS)
			(*n)++;
	}
	return r;
}

int main(int argc, char **argv)
{
	int rounds = argc > 2 && strcmp(argv[1], "--rounds") == 0
	                 ? atoi(argv[2])
	                 : 10;
	CUresult (*setcur)(CUcontext), (*push)(CUcontext),
	    (*pop)(CUcontext *), (*sync)(void);
	CUresult r;
	CUdevice dev;
	CUcontext a, b, popped;
	CUmodule ma, mb;
	CUfunction fa, fb;
	launch_fn launch;
	double t0 = now();
	long n = 0;
	const char *name = NULL;

	cu = dlopen("libcuda.so.1", RTLD_NOW);
	if (cu == NULL) {
		fprintf(stderr, "gs-shim-ctxswitch: %s\n", dlerror());
		return 1;
	}
#define F(t, s) ((t)sym(s))
	*(void **)&setcur = sym("cuCtxSetCurrent");
	*(void **)&push = sym("cuCtxPushCurrent_v2");
	*(void **)&pop = sym("cuCtxPopCurrent_v2");
	*(void **)&sync = sym("cuCtxSynchronize");
	*(void **)&launch = sym("cuLaunchKernel");
	if ((r = F(CUresult(*)(unsigned), "cuInit")(0)) ||
	    (r = F(CUresult(*)(CUdevice *, int), "cuDeviceGet")(&dev, 0)) ||
	    (r = F(CUresult(*)(CUcontext *, unsigned, CUdevice),
	           "cuCtxCreate_v2")(&a, 0, dev)) ||
	    (r = F(CUresult(*)(CUmodule *, const void *), "cuModuleLoadData")(
	         &ma, ptx)) ||
	    (r = F(CUresult(*)(CUfunction *, CUmodule, const char *),
	           "cuModuleGetFunction")(&fa, ma, "gs_spin")) ||
	    (r = F(CUresult(*)(CUcontext *, unsigned, CUdevice),
	           "cuCtxCreate_v2")(&b, 0, dev)) ||
	    (r = F(CUresult(*)(CUmodule *, const void *), "cuModuleLoadData")(
	         &mb, ptx)) ||
	    (r = F(CUresult(*)(CUfunction *, CUmodule, const char *),
	           "cuModuleGetFunction")(&fb, mb, "gs_spin")))
		goto out;
	for (int k = 0; k < rounds; k++) {
		if ((r = setcur(a)) || (r = burst(launch, fa, 2000, 100, &n)) ||
		    (r = setcur(b)) ||
		    (r = burst(launch, fb, 1000000, 20, &n)) || (r = push(a)) ||
		    (r = burst(launch, fa, 2000, 10, &n)) || (r = pop(&popped)))
			goto out;
		if ((r = sync()) || (r = setcur(a)) || (r = sync()))
			goto out;
	}
out:
	if (r != CUDA_SUCCESS)
		(void)F(CUresult(*)(CUresult, const char **), "cuGetErrorName")(
		    r, &name);
	printf("{\"pid\":%d,\"launches\":%ld,\"wall_s\":%.3f,\"error\":%s%s%s}\n",
	       (int)getpid(), n, now() - t0, name ? "\"" : "",
	       name ? name : (r ? "\"unknown\"" : "null"), name ? "\"" : "");
	return r == CUDA_SUCCESS ? 0 : 1;
}
