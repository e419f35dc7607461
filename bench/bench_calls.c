/*
 * bench_calls.c - gs-bench-calls: CPU time per driver call of one
 * configuration, for scripts/bench.sh's `calls` section, which runs it
 * once per configuration, each in its own process (straight on the
 * driver, or under `gpuslice run` with the shim preloaded, without a
 * limit and with --compute 100 and 50), in rotated order, and prints
 * what each configuration adds to the direct one.
 *
 * It shares no code with the shim: it loads libcuda.so.1 with dlopen and
 * takes its entry points with dlsym (under the preloaded shim, dlsym
 * answers with the shim's hooks, as for any program), retains the primary
 * context, loads a one-instruction kernel from PTX (gs_spin, which the
 * sim runs for its `ns` argument: 0 here, so the GPU's books stay empty
 * and a compute limit never throttles it) and times, with the thread's
 * CPU clock (time spent sleeping is not counted), rounds of
 *
 *   launch   PER cuLaunchKernel calls (the synchronisation after each
 *            round is outside the timed part)
 *   alloc    PER cuMemAlloc + cuMemFree pairs of 1 MiB
 *   record   PER cuEventRecord calls of one event on the null stream (a
 *            call the shim's swap gate stops while swapped out, shim/gate.c:
 *            what it adds to every copy, memset and event call)
 *
 * usage: gs-bench-calls launch|alloc|record [ROUNDS [PER]]
 * Prints one JSON line: {"mode":...,"per":...,"ns":[one per round]},
 * ns per call (per pair for alloc), in the order measured.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry gs_spin(.param .u64 ns)\n{\n ret;\n}\n";

static void *cu;

static void *sym(const char *n)
{
	void *p = dlsym(cu, n);

	if (p == NULL) {
		fprintf(stderr, "gs-bench-calls: no %s in libcuda.so.1\n", n);
		exit(1);
	}
	return p;
}

static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	CUresult (*init)(unsigned int);
	CUresult (*retain)(CUcontext *, CUdevice);
	CUresult (*setcur)(CUcontext);
	CUresult (*modload)(CUmodule *, const void *);
	CUresult (*getfn)(CUfunction *, CUmodule, const char *);
	CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned,
	                   unsigned, unsigned, unsigned, CUstream, void **,
	                   void **);
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUresult (*mfree)(CUdeviceptr);
	CUresult (*sync)(void);
	CUresult (*ev_create)(CUevent *, unsigned int);
	CUresult (*ev_record)(CUevent, CUstream);
	const char *mode = argc > 1 ? argv[1] : "";
	int rounds = argc > 2 ? atoi(argv[2]) : 41;
	int per = argc > 3 ? atoi(argv[3]) : 0;
	bool is_launch = strcmp(mode, "launch") == 0;
	bool is_record = strcmp(mode, "record") == 0;
	unsigned long long zero = 0;
	void *args[] = {&zero};
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr p;
	CUevent ev = NULL;

	if ((!is_launch && !is_record && strcmp(mode, "alloc") != 0) ||
	    rounds < 1 || rounds > 10000 || per < 0) {
		fprintf(stderr, "usage: gs-bench-calls launch|alloc|record [ROUNDS [PER]]\n");
		return 2;
	}
	if (per == 0)
		per = is_launch || is_record ? 4000 : 500;
	cu = dlopen("libcuda.so.1", RTLD_NOW);
	if (cu == NULL) {
		fprintf(stderr, "gs-bench-calls: %s\n", dlerror());
		return 1;
	}
	*(void **)&init = sym("cuInit");
	*(void **)&retain = sym("cuDevicePrimaryCtxRetain");
	*(void **)&setcur = sym("cuCtxSetCurrent");
	*(void **)&modload = sym("cuModuleLoadData");
	*(void **)&getfn = sym("cuModuleGetFunction");
	*(void **)&launch = sym("cuLaunchKernel");
	*(void **)&alloc = sym("cuMemAlloc_v2");
	*(void **)&mfree = sym("cuMemFree_v2");
	*(void **)&sync = sym("cuCtxSynchronize");
	*(void **)&ev_create = sym("cuEventCreate");
	*(void **)&ev_record = sym("cuEventRecord");
	if (init(0) != CUDA_SUCCESS || retain(&ctx, 0) != CUDA_SUCCESS ||
	    setcur(ctx) != CUDA_SUCCESS || modload(&mod, ptx) != CUDA_SUCCESS ||
	    getfn(&fn, mod, "gs_spin") != CUDA_SUCCESS ||
	    (is_record &&
	     ev_create(&ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)) {
		fprintf(stderr, "gs-bench-calls: driver set-up failed\n");
		return 1;
	}
	printf("{\"mode\":\"%s\",\"per\":%d,\"ns\":[", mode, per);
	for (int k = -3; k < rounds; k++) { /* three rounds to warm up */
		double t0 = cpu_ns(), t;

		for (int i = 0; i < per; i++) {
			CUresult r;

			if (is_launch) {
				r = launch(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args,
				           NULL);
			} else if (is_record) {
				r = ev_record(ev, NULL);
			} else {
				r = alloc(&p, 1 << 20);
				if (r == CUDA_SUCCESS)
					r = mfree(p);
			}
			if (r != CUDA_SUCCESS) {
				fprintf(stderr, "gs-bench-calls: %s failed: %d\n",
				        mode, (int)r);
				return 1;
			}
		}
		t = (cpu_ns() - t0) / per;
		if ((is_launch || is_record) && sync() != CUDA_SUCCESS) {
			fprintf(stderr, "gs-bench-calls: cuCtxSynchronize failed\n");
			return 1;
		}
		if (k >= 0)
			printf("%s%.2f", k ? "," : "", t);
	}
	printf("]}\n");
	return 0;
}
