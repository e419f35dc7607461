/*
 * launch_kinds.c - gs-shim-launcher --api ex|coop|graph|plain --seconds S
 * --ns N [--per-sync K] [--gap-us G] [--idle-s I]: keeps the GPU busy with N-nanosecond
 * gs_spin kernels launched through one launch API (cuLaunchKernelEx,
 * cuLaunchCooperativeKernel, cuGraphLaunch of a one-node graph, or
 * cuLaunchKernel), K launches (default 2) between stream synchronisations
 * (0: none at all, fire and forget: it exits with work still queued),
 * the host sleeping G microseconds (default 0) after each launch, for S
 * seconds, then idles I seconds (default 0) before it exits. Loads the driver with dlopen, so under the shim its
 * entry points come through the dlsym hook. Prints one JSON line:
 * {"api":...,"pid":...,"launches":...,"wall_s":...,"error":null|"CUDA_ERROR_..."}.
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
		fprintf(stderr, "gs-shim-launcher: no %s\n", n);
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

int main(int argc, char **argv)
{
	const char *api = "plain";
	double seconds = 5, t0 = now();
	unsigned long long ns = 1000000;
	int per_sync = 2;
	long gap_us = 0;
	double idle_s = 0;
	CUresult r = CUDA_SUCCESS;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUstream st;
	CUgraph g = NULL;
	CUgraphExec ge = NULL;
	void *args[] = {&ns};
	long n = 0;
	const char *name = NULL;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--api") == 0)
			api = argv[i + 1];
		else if (strcmp(argv[i], "--seconds") == 0)
			seconds = atof(argv[i + 1]);
		else if (strcmp(argv[i], "--ns") == 0)
			ns = strtoull(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--per-sync") == 0)
			per_sync = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--gap-us") == 0)
			gap_us = atol(argv[i + 1]);
		else if (strcmp(argv[i], "--idle-s") == 0)
			idle_s = atof(argv[i + 1]);
	}
	cu = dlopen("libcuda.so.1", RTLD_NOW);
	if (cu == NULL) {
		fprintf(stderr, "gs-shim-launcher: %s\n", dlerror());
		return 1;
	}
#define F(t, n) ((t)sym(n))
	if ((r = F(CUresult(*)(unsigned), "cuInit")(0)) ||
	    (r = F(CUresult(*)(CUdevice *, int), "cuDeviceGet")(&dev, 0)) ||
	    (r = F(CUresult(*)(CUcontext *, CUdevice),
		   "cuDevicePrimaryCtxRetain")(&ctx, dev)) ||
	    (r = F(CUresult(*)(CUcontext), "cuCtxSetCurrent")(ctx)) ||
	    (r = F(CUresult(*)(CUmodule *, const void *), "cuModuleLoadData")(
		     &mod, ptx)) ||
	    (r = F(CUresult(*)(CUfunction *, CUmodule, const char *),
		   "cuModuleGetFunction")(&fn, mod, "gs_spin")) ||
	    (r = F(CUresult(*)(CUstream *, unsigned), "cuStreamCreate")(
		     &st, CU_STREAM_NON_BLOCKING)))
		goto out;
	if (strcmp(api, "graph") == 0) {
		CUDA_KERNEL_NODE_PARAMS p;
		CUgraphNode node;

		memset(&p, 0, sizeof(p));
		p.func = fn;
		p.gridDimX = p.gridDimY = p.gridDimZ = 1;
		p.blockDimX = p.blockDimY = p.blockDimZ = 1;
		p.kernelParams = args;
		if ((r = F(CUresult(*)(CUgraph *, unsigned), "cuGraphCreate")(
			     &g, 0)) ||
		    (r = F(CUresult(*)(CUgraphNode *, CUgraph,
				       const CUgraphNode *, size_t,
				       const CUDA_KERNEL_NODE_PARAMS *),
			   "cuGraphAddKernelNode_v2")(&node, g, NULL, 0, &p)) ||
		    (r = F(CUresult(*)(CUgraphExec *, CUgraph,
				       unsigned long long),
			   "cuGraphInstantiateWithFlags")(&ge, g, 0)))
			goto out;
	}
	t0 = now();
	while (now() - t0 < seconds) {
		for (int k = 0; per_sync == 0 || k < per_sync; k++) {
			if (per_sync == 0 && now() - t0 >= seconds)
				break;
			if (strcmp(api, "ex") == 0) {
				CUlaunchConfig c;

				memset(&c, 0, sizeof(c));
				c.gridDimX = c.gridDimY = c.gridDimZ = 1;
				c.blockDimX = c.blockDimY = c.blockDimZ = 1;
				c.hStream = st;
				r = F(CUresult(*)(const CUlaunchConfig *, CUfunction,
						  void **, void **),
				      "cuLaunchKernelEx")(&c, fn, args, NULL);
			} else if (strcmp(api, "coop") == 0) {
				r = F(CUresult(*)(CUfunction, unsigned, unsigned,
						  unsigned, unsigned, unsigned,
						  unsigned, unsigned, CUstream,
						  void **),
				      "cuLaunchCooperativeKernel")(
					fn, 1, 1, 1, 1, 1, 1, 0, st, args);
			} else if (strcmp(api, "graph") == 0) {
				r = F(CUresult(*)(CUgraphExec, CUstream),
				      "cuGraphLaunch")(ge, st);
			} else {
				r = F(CUresult(*)(CUfunction, unsigned, unsigned,
						  unsigned, unsigned, unsigned,
						  unsigned, unsigned, CUstream,
						  void **, void **),
				      "cuLaunchKernel")(fn, 1, 1, 1, 1, 1, 1, 0,
							st, args, NULL);
			}
			if (r)
				goto out;
			n++;
			if (gap_us > 0) {
				struct timespec gap = {
				    .tv_sec = gap_us / 1000000,
				    .tv_nsec = (gap_us % 1000000) * 1000};

				nanosleep(&gap, NULL);
			}
		}
		if (per_sync > 0 &&
		    (r = F(CUresult(*)(CUstream), "cuStreamSynchronize")(st)))
			goto out;
	}
	if (idle_s > 0) {
		struct timespec idle = {
		    .tv_sec = (time_t)idle_s,
		    .tv_nsec = (long)((idle_s - (double)(time_t)idle_s) * 1e9)};

		nanosleep(&idle, NULL);
	}
out:
	if (r)
		F(CUresult(*)(CUresult, const char **), "cuGetErrorName")(r,
									  &name);
	printf("{\"api\":\"%s\",\"pid\":%d,\"launches\":%ld,\"wall_s\":%.3f,\"error\":%s%s%s}\n",
	       api, (int)getpid(), n, now() - t0, r ? "\"" : "", r ? (name ? name : "?") : "null",
	       r ? "\"" : "");
	return r ? 1 : 0;
}
