/*
 * bench_sim.c - gs-bench-sim: the simulated driver's own cost, measured on
 * a private one-GPU node in a temporary directory:
 *   - per kernel launch (gs_spin with 0 ns, so the timeline never makes
 *     the launcher wait: this is the driver's bookkeeping alone),
 *   - per cuMemAlloc + cuMemFree pair (1 MiB),
 *   - per cuEventRecord + cuEventQuery pair.
 * Prints one human line per figure and one JSON line. These figures are
 * host CPU time of the stand-in, not GPU numbers.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gs_sim/state.h"

#define LAUNCHES 200000
#define ALLOCS   20000
#define EVENTS   100000

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry gs_spin(.param .u64 ns)\n{\n ret;\n}\n";

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int check(CUresult r, const char *what)
{
	const char *name = NULL;

	if (r == CUDA_SUCCESS)
		return 0;
	cuGetErrorName(r, &name);
	fprintf(stderr, "gs-bench-sim: %s failed: %s\n", what,
	        name ? name : "?");
	return 1;
}

int main(void)
{
	char dir[] = "/tmp/gs-bench-sim-XXXXXX";
	struct gs_sim_gpu_init gpu;
	struct gs_errbuf eb = {0};
	CUcontext ctx;
	CUmodule mod;
	CUfunction spin;
	CUevent ev;
	CUdeviceptr p;
	unsigned long long ns = 0;
	void *args[] = {&ns};
	double t0, launch_ns, alloc_ns, event_ns;
	int n = 0, rc = 1;
	char path[64];

	if (mkdtemp(dir) == NULL) {
		perror("gs-bench-sim: mkdtemp");
		return 1;
	}
	if (gs_sim_gpus_parse("1xH100-SXM5-80GB", &gpu, 1, &n, &eb) != GS_OK ||
	    gs_sim_state_create(dir, &gpu, 1, false, &eb) != GS_OK) {
		fprintf(stderr, "gs-bench-sim: %s\n",
		        gs_errbuf_msg(&eb, GS_ERR_IO));
		goto out_rm;
	}
	setenv("GPUSLICE_SIM_DIR", dir, 1);
	if (check(cuInit(0), "cuInit") ||
	    check(cuDevicePrimaryCtxRetain(&ctx, 0), "retain") ||
	    check(cuCtxSetCurrent(ctx), "set current") ||
	    check(cuModuleLoadData(&mod, ptx), "module") ||
	    check(cuModuleGetFunction(&spin, mod, "gs_spin"), "function") ||
	    check(cuEventCreate(&ev, 0), "event"))
		goto out_rm;

	t0 = now_s();
	for (int i = 0; i < LAUNCHES; i++)
		if (check(cuLaunchKernel(spin, 1, 1, 1, 32, 1, 1, 0, NULL, args,
		                         NULL),
		          "launch"))
			goto out_rm;
	if (check(cuCtxSynchronize(), "synchronize"))
		goto out_rm;
	launch_ns = (now_s() - t0) / LAUNCHES * 1e9;

	t0 = now_s();
	for (int i = 0; i < ALLOCS; i++)
		if (check(cuMemAlloc(&p, 1 << 20), "alloc") ||
		    check(cuMemFree(p), "free"))
			goto out_rm;
	alloc_ns = (now_s() - t0) / ALLOCS * 1e9;

	t0 = now_s();
	for (int i = 0; i < EVENTS; i++) {
		CUresult q;

		if (check(cuEventRecord(ev, NULL), "record"))
			goto out_rm;
		q = cuEventQuery(ev);
		if (q != CUDA_SUCCESS && q != CUDA_ERROR_NOT_READY &&
		    check(q, "query"))
			goto out_rm;
	}
	event_ns = (now_s() - t0) / EVENTS * 1e9;

	printf("sim launch:          %8.0f ns per cuLaunchKernel\n", launch_ns);
	printf(
	    "sim alloc+free:      %8.0f ns per cuMemAlloc+cuMemFree (1 MiB)\n",
	    alloc_ns);
	printf("sim event rec+query: %8.0f ns per cuEventRecord+cuEventQuery\n",
	       event_ns);
	printf("{\"bench\":\"sim_driver_overhead\",\"source\":\"sim\",\"launch_ns\":%.0f,\"alloc_free_ns\":%.0f,\"event_record_query_ns\":%.0f}\n",
	       launch_ns, alloc_ns, event_ns);
	rc = 0;
	(void)cuDevicePrimaryCtxRelease(0);
out_rm:
	snprintf(path, sizeof(path), "%s/%s", dir, GS_SIM_STATE_FILE);
	(void)unlink(path);
	(void)rmdir(dir);
	return rc;
}
