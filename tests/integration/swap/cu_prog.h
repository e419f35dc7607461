/*
 * cu_prog.h - what the swap tests' driver programs (gs-swap-prog,
 * gs-swap-gate-prog, gs-swap-launch-storm) share: the driver reached
 * through dlopen, as an application that loads it itself does (cu, sym,
 * F); CK, which prints {"error": N, "at": "the call"} on stdout and exits
 * 1 when a call fails; and cu_prog_start, their common start: device 0's
 * primary context made current and the program's PTX module loaded.
 * Include once per program, after cuda.h.
 */
#ifndef GS_TEST_SWAP_CU_PROG_H
#define GS_TEST_SWAP_CU_PROG_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void *cu;
static const char *cu_prog_name; /* the messages' prefix */

/* The driver's entry point `n`; a missing one ends the program. */
static void *sym(const char *n)
{
	void *p = dlsym(cu, n);

	if (p == NULL) {
		fprintf(stderr, "%s: no %s\n", cu_prog_name, n);
		exit(1);
	}
	return p;
}

#define F(t, n) ((t)sym(n))
#define CK(call)                                                               \
	do {                                                                   \
		CUresult r_ = (call);                                          \
		if (r_ != CUDA_SUCCESS) {                                      \
			printf("{\"error\": %d, \"at\": \"%s\"}\n", (int)r_,   \
			       #call);                                         \
			fflush(stdout);                                        \
			exit(1);                                               \
		}                                                              \
	} while (0)

/*
 * Program `name` opens the driver, initialises it, makes device 0's
 * primary context current and loads `ptx`. Exits 1 when it cannot (the
 * driver's absence said on stderr, a failed call as CK says it).
 * OUT: *ctx, *mod.
 */
static void cu_prog_start(const char *name, const char *ptx, CUcontext *ctx,
                          CUmodule *mod)
{
	CUdevice dev;

	cu_prog_name = name;
	cu = dlopen("libcuda.so.1", RTLD_NOW);
	if (cu == NULL) {
		fprintf(stderr, "%s: %s\n", name, dlerror());
		exit(1);
	}
	CK(F(CUresult(*)(unsigned), "cuInit")(0));
	CK(F(CUresult(*)(CUdevice *, int), "cuDeviceGet")(&dev, 0));
	CK(F(CUresult(*)(CUcontext *, CUdevice), "cuDevicePrimaryCtxRetain")(
	    ctx, dev));
	CK(F(CUresult(*)(CUcontext), "cuCtxSetCurrent")(*ctx));
	CK(F(CUresult(*)(CUmodule *, const void *), "cuModuleLoadData")(mod,
	                                                                 ptx));
}

#endif
