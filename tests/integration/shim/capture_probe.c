/*
 * capture_probe.c - gs-capture-probe: counts the shim's questions to the
 * driver about stream capture (through libgs-capture-counter.so, argv[1],
 * the driver the shim was pointed at) around stream-ordered allocations:
 * 100 cuMemAllocAsync + cuMemFreeAsync pairs before any capture, one
 * allocation in a capture (relaxed mode, the graph discarded), then 100
 * pairs after it. Prints {"before": N, "in_capture": N, "after": N,
 * "captured_charged": 0|1}: the counts asked in each phase, and whether
 * the slice's view of memory shrank while the captured allocation (a
 * graph node, charged only when its graph runs) existed.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void *cu;

static void *sym(void *h, const char *n)
{
	void *p = dlsym(h, n);

	if (p == NULL) {
		fprintf(stderr, "gs-capture-probe: no %s\n", n);
		exit(1);
	}
	return p;
}

#define F(t, n) ((t)sym(cu, n))
#define CK(call)                                                               \
	do {                                                                   \
		CUresult r_ = (call);                                          \
		if (r_ != CUDA_SUCCESS) {                                      \
			printf("{\"error\": %d, \"at\": \"%s\"}\n", (int)r_,   \
			       #call);                                         \
			exit(1);                                               \
		}                                                              \
	} while (0)

int main(int argc, char **argv)
{
	unsigned long (*calls)(void);
	unsigned long n0, n1, n2;
	__typeof__(&cuMemAllocAsync) alloc_async;
	__typeof__(&cuMemFreeAsync) free_async;
	__typeof__(&cuStreamSynchronize) sync;
	__typeof__(&cuMemGetInfo_v2) info;
	CUcontext ctx;
	CUdevice dev;
	CUstream s;
	CUgraph g;
	CUdeviceptr p;
	size_t free0, free1, total;
	void *counter;

	if (argc < 2)
		return 2;
	cu = dlopen("libcuda.so.1", RTLD_NOW);
	if (cu == NULL) {
		fprintf(stderr, "gs-capture-probe: %s\n", dlerror());
		return 1;
	}
	alloc_async = F(__typeof__(alloc_async), "cuMemAllocAsync");
	free_async = F(__typeof__(free_async), "cuMemFreeAsync");
	sync = F(__typeof__(sync), "cuStreamSynchronize");
	info = F(__typeof__(info), "cuMemGetInfo_v2");
	CK(F(CUresult(*)(unsigned), "cuInit")(0));
	/* the shim loaded its driver at its first call */
	counter = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
	if (counter == NULL) {
		fprintf(stderr, "gs-capture-probe: %s is not the shim's driver\n",
		        argv[1]);
		return 1;
	}
	calls = (unsigned long (*)(void))sym(counter,
	                                     "gs_capture_counter_calls");
	CK(F(CUresult(*)(CUdevice *, int), "cuDeviceGet")(&dev, 0));
	CK(F(CUresult(*)(CUcontext *, CUdevice), "cuDevicePrimaryCtxRetain")(
	    &ctx, dev));
	CK(F(CUresult(*)(CUcontext), "cuCtxSetCurrent")(ctx));
	CK(F(CUresult(*)(CUstream *, unsigned), "cuStreamCreate")(
	    &s, CU_STREAM_NON_BLOCKING));
	n0 = calls();
	for (int i = 0; i < 100; i++) {
		CK(alloc_async(&p, 1 << 20, s));
		CK(free_async(p, s));
	}
	CK(sync(s));
	n1 = calls();
	CK(info(&free0, &total));
	CK(F(CUresult(*)(CUstream, CUstreamCaptureMode),
	     "cuStreamBeginCapture_v2")(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	CK(alloc_async(&p, 64 << 20, s));
	CK(info(&free1, &total));
	CK(free_async(p, s));
	CK(F(CUresult(*)(CUstream, CUgraph *), "cuStreamEndCapture")(s, &g));
	CK(F(CUresult(*)(CUgraph), "cuGraphDestroy")(g));
	n2 = calls();
	for (int i = 0; i < 100; i++) {
		CK(alloc_async(&p, 1 << 20, s));
		CK(free_async(p, s));
	}
	CK(sync(s));
	printf("{\"before\": %lu, \"in_capture\": %lu, \"after\": %lu, \"captured_charged\": %d}\n",
	       n1 - n0, n2 - n1, calls() - n2, free1 < free0);
	return 0;
}
