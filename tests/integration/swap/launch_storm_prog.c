/*
 * launch_storm_prog.c - gs-swap-launch-storm: several threads launching
 * kernels without pause into the program's own movable memory, for the
 * test that a swap-out never lets a launch reach memory being moved
 * (launches_racing_swaps_never_touch_moving_memory.sh).
 *
 * At start it allocates a 4 MiB signature buffer and, per thread, a
 * buffer of SLOTS floats (zeroed) and a non-blocking stream, prints
 * {"ready": true} and starts THREADS threads (argv[1], default 4). Thread
 * t launches gs_fill(buf_t + j, 1, k + 1) for its k-th launch, j = k mod
 * SLOTS, through one launch entry point per thread in turn
 * (cuLaunchKernel, cuLaunchKernel_ptsz, cuLaunchKernelEx), and after each
 * round of SLOTS launches synchronises its stream and reads its buffer
 * back: every slot must hold the value of the last launch that wrote it.
 * A launch whose write landed in memory while it was being copied out is
 * lost (the swap-in brings back the copy); one that ran while the memory
 * was unmapped faults on the sim (CUDA_ERROR_ILLEGAL_ADDRESS, sticky).
 * Either shows as a wrong slot or a failed call.
 *
 * With argv[2] "copy", each thread writes its k-th value with a
 * cuMemcpyHtoD_v2 of its own (a call the shim's gate stops, shim/gate.c)
 * instead of a launch: a copy that wrote while its memory was being
 * copied out is lost the same way, one that reached an unmapped range
 * fails (CUDA_ERROR_INVALID_VALUE on the sim). Its "launches" count
 * those copies.
 *
 * On "stop" (stdin) the threads finish their round and stop; it prints
 * {"launches": N, "rounds": R, "bad": wrong slots and signature words,
 * "errors": failed calls, "first_error": the first one's CUresult}.
 * The program calls the driver through dlopen, as gs-swap-prog does.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu_prog.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry gs_fill(.param .u64 buf, .param .u64 n, "
    ".param .f32 v)\n{\n ret;\n}\n";

#define SIG_BYTES (4u << 20)
#define SLOTS 256u
#define MAX_THREADS 16

static CUcontext ctx;
static CUfunction fill;
static volatile int stop;
static int copies; /* argv[2] "copy": writes by copy, not by launch */

static __typeof__(&cuLaunchKernel) launch_k;
static __typeof__(&cuLaunchKernel_ptsz) launch_k_ptsz;
static __typeof__(&cuLaunchKernelEx) launch_ex;
static __typeof__(&cuStreamSynchronize) stream_sync;
static __typeof__(&cuMemcpyDtoH_v2) dtoh;
static __typeof__(&cuMemcpyHtoD_v2) htod;

struct worker {
	int id;
	pthread_t t;
	CUdeviceptr buf;
	CUstream st;
	uint64_t launches, rounds, bad, errors;
	int first_error;
};

static void failed(struct worker *w, CUresult r)
{
	if (w->errors++ == 0)
		w->first_error = (int)r;
}

static CUresult launch_one(struct worker *w, uint64_t k)
{
	CUdeviceptr p = w->buf + 4 * (k % SLOTS);
	uint64_t n = 1;
	float v = (float)(k + 1);
	void *args[] = {&p, &n, &v};

	if (copies)
		return htod(p, &v, sizeof(v));
	switch (w->id % 3) {
	case 0:
		return launch_k(fill, 1, 1, 1, 32, 1, 1, 0, w->st, args, NULL);
	case 1:
		return launch_k_ptsz(fill, 1, 1, 1, 32, 1, 1, 0, w->st, args,
		                     NULL);
	default: {
		CUlaunchConfig c;

		memset(&c, 0, sizeof(c));
		c.gridDimX = c.gridDimY = c.gridDimZ = 1;
		c.blockDimX = 32;
		c.blockDimY = c.blockDimZ = 1;
		c.hStream = w->st;
		return launch_ex(&c, fill, args, NULL);
	}
	}
}

static void *work(void *arg)
{
	struct worker *w = arg;
	float got[SLOTS];
	uint64_t k = 0;
	CUresult r;

	if (F(CUresult(*)(CUcontext), "cuCtxSetCurrent")(ctx) != CUDA_SUCCESS)
		return NULL;
	while (!stop) {
		for (uint32_t j = 0; j < SLOTS; j++, k++) {
			r = launch_one(w, k);
			if (r != CUDA_SUCCESS)
				failed(w, r);
			else
				w->launches++;
		}
		r = stream_sync(w->st);
		if (r == CUDA_SUCCESS)
			r = dtoh(got, w->buf, sizeof(got));
		if (r != CUDA_SUCCESS) {
			failed(w, r);
			break; /* a sticky error: nothing more will run */
		}
		for (uint32_t j = 0; j < SLOTS; j++)
			w->bad += got[j] != (float)(k - SLOTS + j + 1);
		w->rounds++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static struct worker w[MAX_THREADS];
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	uint32_t *sig, *back;
	uint64_t launches = 0, rounds = 0, bad = 0, errors = 0;
	int first_error = 0;
	CUmodule mod;
	char line[64];

	if (threads < 1 || threads > MAX_THREADS)
		return 2;
	copies = argc > 2 && strcmp(argv[2], "copy") == 0;
	cu_prog_start("gs-swap-launch-storm", ptx, &ctx, &mod);
	launch_k = F(__typeof__(launch_k), "cuLaunchKernel");
	launch_k_ptsz = F(__typeof__(launch_k_ptsz), "cuLaunchKernel_ptsz");
	launch_ex = F(__typeof__(launch_ex), "cuLaunchKernelEx");
	stream_sync = F(__typeof__(stream_sync), "cuStreamSynchronize");
	dtoh = F(__typeof__(dtoh), "cuMemcpyDtoH_v2");
	htod = F(__typeof__(htod), "cuMemcpyHtoD_v2");
	CK(F(CUresult(*)(CUfunction *, CUmodule, const char *),
	     "cuModuleGetFunction")(&fill, mod, "gs_fill"));
	sig = malloc(SIG_BYTES);
	back = malloc(SIG_BYTES);
	if (sig == NULL || back == NULL)
		return 1;
	for (size_t i = 0; i < SIG_BYTES / 4; i++)
		sig[i] = 0x85ebca6bu ^ (uint32_t)(i * 2246822519u);
	{
		CUdeviceptr s;

		CK(F(CUresult(*)(CUdeviceptr *, size_t), "cuMemAlloc_v2")(
		    &s, SIG_BYTES));
		CK(F(CUresult(*)(CUdeviceptr, const void *, size_t),
		     "cuMemcpyHtoD_v2")(s, sig, SIG_BYTES));
		for (int t = 0; t < threads; t++) {
			w[t].id = t;
			CK(F(CUresult(*)(CUdeviceptr *, size_t),
			     "cuMemAlloc_v2")(&w[t].buf, SLOTS * 4));
			CK(F(CUresult(*)(CUdeviceptr, unsigned int, size_t),
			     "cuMemsetD32_v2")(w[t].buf, 0, SLOTS));
			CK(F(CUresult(*)(CUstream *, unsigned), "cuStreamCreate")(
			    &w[t].st, CU_STREAM_NON_BLOCKING));
		}
		printf("{\"ready\": true}\n");
		fflush(stdout);
		for (int t = 0; t < threads; t++)
			if (pthread_create(&w[t].t, NULL, work, &w[t]) != 0)
				return 1;
		while (fgets(line, sizeof(line), stdin) != NULL &&
		       strncmp(line, "stop", 4) != 0)
			;
		stop = 1;
		for (int t = 0; t < threads; t++) {
			(void)pthread_join(w[t].t, NULL);
			launches += w[t].launches;
			rounds += w[t].rounds;
			bad += w[t].bad;
			if (w[t].errors != 0 && errors == 0)
				first_error = w[t].first_error;
			errors += w[t].errors;
		}
		if (dtoh(back, s, SIG_BYTES) != CUDA_SUCCESS)
			errors++;
		else
			for (size_t i = 0; i < SIG_BYTES / 4; i++)
				bad += back[i] != sig[i];
	}
	printf("{\"launches\": %llu, \"rounds\": %llu, \"bad\": %llu, \"errors\": %llu, \"first_error\": %d}\n",
	       (unsigned long long)launches, (unsigned long long)rounds,
	       (unsigned long long)bad, (unsigned long long)errors,
	       first_error);
	fflush(stdout);
	return 0;
}
