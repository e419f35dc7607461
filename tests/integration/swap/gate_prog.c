/*
 * gate_prog.c - gs-swap-gate-prog: a program that makes one GPU call of a
 * given kind on request, for the test that every kind of call is stopped
 * while the program's memory is swapped out
 * (every_gpu_call_waits_while_swapped_out.sh).
 *
 * At start it allocates a 4 MiB signature buffer (checked after every
 * call: a swap round trip must leave it as written), two 1 MiB work
 * buffers A and B, a non-blocking stream, an event (recorded once) and a
 * graph whose one node sets A to 0x77777777, then prints {"ready": true}.
 * For each line read on stdin naming a call, it makes that call, prints
 * {"op": NAME, "r": CUresult} as soon as the call returns, then checks
 * what the call should have done (and the signature buffer) and prints
 * {"op": NAME, "bad": N} (N wrong words). "drain" queues a fill of A and
 * a 1.5 s kernel (gs_spin: the sim times it by name) without waiting and
 * prints {"op": "drain", "r": 0}; "check_drain" then checks the fill.
 * The program calls the driver through dlopen, as gs-swap-prog does.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu_prog.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry gs_spin(.param .u64 ns)\n{\n ret;\n}\n"
    ".visible .entry gs_fill(.param .u64 buf, .param .u64 n, "
    ".param .f32 v)\n{\n ret;\n}\n";

#define SIG_BYTES (4u << 20)
#define WORK_BYTES (1u << 20)

static CUdeviceptr sigbuf, A, B;
static CUstream st;
static CUevent ev;
static CUgraphExec ge;
static CUcontext ctx;
static CUfunction spin, fill;
static uint32_t *host, *pat;
static volatile int host_fn_ran;

static uint32_t sig(size_t i)
{
	return 0x9e3779b9u ^ (uint32_t)(i * 2654435761u);
}

static long dtoh_cmp(CUdeviceptr d, const uint32_t *want, size_t bytes)
{
	long bad = 0;

	CK(F(CUresult(*)(void *, CUdeviceptr, size_t), "cuMemcpyDtoH_v2")(
	    host, d, bytes));
	for (size_t i = 0; i < bytes / 4; i++)
		bad += host[i] != want[i];
	return bad;
}

static uint32_t *sigwant; /* what sigbuf holds */

static long check_sig(void)
{
	return dtoh_cmp(sigbuf, sigwant, SIG_BYTES);
}

static long check_fill(CUdeviceptr d, uint32_t v, size_t bytes)
{
	long bad = 0;

	CK(F(CUresult(*)(void *, CUdeviceptr, size_t), "cuMemcpyDtoH_v2")(
	    host, d, bytes));
	for (size_t i = 0; i < bytes / 4; i++)
		bad += host[i] != v;
	return bad;
}

static void host_fn(void *arg)
{
	(void)arg;
	host_fn_ran = 1;
}

static void sync_stream(void)
{
	CK(F(CUresult(*)(CUstream), "cuStreamSynchronize")(st));
}

/* Makes the call named `op`. OUT: *fill_a: the word A should hold after
 * it (0: not checked); *b_is_sig: B should hold sigbuf's first MiB;
 * *a_is_pat: A should hold pat. */
static CUresult call(const char *op, uint32_t *fill_a, int *b_is_sig,
                     int *a_is_pat)
{
	*fill_a = 0;
	*b_is_sig = *a_is_pat = 0;
	if (strcmp(op, "memcpy_peer") == 0) {
		*b_is_sig = 1;
		return F(CUresult(*)(CUdeviceptr, CUcontext, CUdeviceptr,
		                     CUcontext, size_t),
		         "cuMemcpyPeer")(B, ctx, sigbuf, ctx, WORK_BYTES);
	}
	if (strcmp(op, "memcpy_peer_async") == 0) {
		*b_is_sig = 1;
		return F(CUresult(*)(CUdeviceptr, CUcontext, CUdeviceptr,
		                     CUcontext, size_t, CUstream),
		         "cuMemcpyPeerAsync")(B, ctx, sigbuf, ctx, WORK_BYTES,
		                              st);
	}
	if (strcmp(op, "memcpy_dtod_async") == 0) {
		*b_is_sig = 1;
		return F(CUresult(*)(CUdeviceptr, CUdeviceptr, size_t, CUstream),
		         "cuMemcpyDtoDAsync_v2")(B, sigbuf, WORK_BYTES, st);
	}
	if (strcmp(op, "memcpy_htod_async") == 0) {
		*a_is_pat = 1;
		return F(CUresult(*)(CUdeviceptr, const void *, size_t,
		                     CUstream),
		         "cuMemcpyHtoDAsync_v2")(A, pat, WORK_BYTES, st);
	}
	if (strcmp(op, "memcpy_2d") == 0) {
		CUDA_MEMCPY2D p;

		memset(&p, 0, sizeof(p));
		p.srcMemoryType = CU_MEMORYTYPE_HOST;
		p.srcHost = pat;
		p.srcPitch = 4096;
		p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
		p.dstDevice = A;
		p.dstPitch = 4096;
		p.WidthInBytes = 4096;
		p.Height = WORK_BYTES / 4096;
		return F(CUresult(*)(const CUDA_MEMCPY2D *), "cuMemcpy2D_v2")(
		    &p);
	}
	if (strcmp(op, "memset_d16") == 0) {
		*fill_a = 0xbeefbeefu;
		return F(CUresult(*)(CUdeviceptr, unsigned short, size_t),
		         "cuMemsetD16_v2")(A, 0xbeef, WORK_BYTES / 2);
	}
	if (strcmp(op, "memset_d2d32_async") == 0) {
		*fill_a = 0x01020304u;
		return F(CUresult(*)(CUdeviceptr, size_t, unsigned int, size_t,
		                     size_t, CUstream),
		         "cuMemsetD2D32Async")(A, 4096, 0x01020304u, 1024,
		                               WORK_BYTES / 4096, st);
	}
	if (strcmp(op, "event_record") == 0)
		return F(CUresult(*)(CUevent, CUstream), "cuEventRecord")(ev,
		                                                          st);
	if (strcmp(op, "event_record_with_flags") == 0)
		return F(CUresult(*)(CUevent, CUstream, unsigned),
		         "cuEventRecordWithFlags")(ev, st, 0);
	if (strcmp(op, "event_query") == 0)
		return F(CUresult(*)(CUevent), "cuEventQuery")(ev);
	if (strcmp(op, "event_synchronize") == 0)
		return F(CUresult(*)(CUevent), "cuEventSynchronize")(ev);
	if (strcmp(op, "stream_query") == 0)
		return F(CUresult(*)(CUstream), "cuStreamQuery")(st);
	if (strcmp(op, "stream_wait_event") == 0)
		return F(CUresult(*)(CUstream, CUevent, unsigned),
		         "cuStreamWaitEvent")(st, ev, 0);
	if (strcmp(op, "stream_synchronize") == 0)
		return F(CUresult(*)(CUstream), "cuStreamSynchronize")(st);
	if (strcmp(op, "ctx_synchronize") == 0)
		return F(CUresult(*)(void), "cuCtxSynchronize")();
	if (strcmp(op, "launch_host_func") == 0) {
		host_fn_ran = 0;
		return F(CUresult(*)(CUstream, CUhostFn, void *),
		         "cuLaunchHostFunc")(st, host_fn, NULL);
	}
	if (strcmp(op, "graph_launch") == 0) {
		*fill_a = 0x77777777u;
		return F(CUresult(*)(CUgraphExec, CUstream), "cuGraphLaunch")(
		    ge, st);
	}
	if (strcmp(op, "stream_write_value") == 0)
		return F(CUresult(*)(CUstream, CUdeviceptr, cuuint32_t,
		                     unsigned),
		         "cuStreamWriteValue32_v2")(st, A, 5, 0);
	if (strcmp(op, "drain") == 0) {
		uint64_t n = WORK_BYTES / 4, ns = 1500000000ull;
		float v = 3.0f;
		void *fa[] = {&A, &n, &v}, *sa[] = {&ns};
		__typeof__(&cuLaunchKernel) launch =
		    F(__typeof__(&cuLaunchKernel), "cuLaunchKernel");
		CUresult r = launch(fill, 1, 1, 1, 128, 1, 1, 0, st, fa, NULL);

		if (r == CUDA_SUCCESS)
			r = launch(spin, 1, 1, 1, 1, 1, 1, 0, st, sa, NULL);
		return r;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

int main(void)
{
	CUmodule mod;
	CUgraph g;
	CUgraphNode node;
	CUDA_MEMSET_NODE_PARAMS mp;
	char line[64];

	cu_prog_start("gs-swap-gate-prog", ptx, &ctx, &mod);
	CK(F(CUresult(*)(CUfunction *, CUmodule, const char *),
	     "cuModuleGetFunction")(&spin, mod, "gs_spin"));
	CK(F(CUresult(*)(CUfunction *, CUmodule, const char *),
	     "cuModuleGetFunction")(&fill, mod, "gs_fill"));
	CK(F(CUresult(*)(CUdeviceptr *, size_t), "cuMemAlloc_v2")(&sigbuf,
	                                                          SIG_BYTES));
	CK(F(CUresult(*)(CUdeviceptr *, size_t), "cuMemAlloc_v2")(&A,
	                                                          WORK_BYTES));
	CK(F(CUresult(*)(CUdeviceptr *, size_t), "cuMemAlloc_v2")(&B,
	                                                          WORK_BYTES));
	host = malloc(SIG_BYTES);
	sigwant = malloc(SIG_BYTES);
	pat = malloc(WORK_BYTES);
	if (host == NULL || sigwant == NULL || pat == NULL)
		return 1;
	for (size_t i = 0; i < SIG_BYTES / 4; i++)
		sigwant[i] = sig(i);
	for (size_t i = 0; i < WORK_BYTES / 4; i++)
		pat[i] = (uint32_t)i * 7u + 1u;
	CK(F(CUresult(*)(CUdeviceptr, const void *, size_t), "cuMemcpyHtoD_v2")(
	    sigbuf, sigwant, SIG_BYTES));
	CK(F(CUresult(*)(CUstream *, unsigned), "cuStreamCreate")(
	    &st, CU_STREAM_NON_BLOCKING));
	CK(F(CUresult(*)(CUevent *, unsigned), "cuEventCreate")(&ev, 0));
	CK(F(CUresult(*)(CUgraph *, unsigned), "cuGraphCreate")(&g, 0));
	memset(&mp, 0, sizeof(mp));
	mp.dst = A;
	mp.pitch = 0;
	mp.value = 0x77777777u;
	mp.elementSize = 4;
	mp.width = WORK_BYTES / 4;
	mp.height = 1;
	CK(F(CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
	                 const CUDA_MEMSET_NODE_PARAMS *, CUcontext),
	     "cuGraphAddMemsetNode")(&node, g, NULL, 0, &mp, ctx));
	CK(F(CUresult(*)(CUgraphExec *, CUgraph, unsigned long long),
	     "cuGraphInstantiateWithFlags")(&ge, g, 0));
	CK(F(CUresult(*)(CUevent, CUstream), "cuEventRecord")(ev, st));
	sync_stream();
	printf("{\"ready\": true}\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) != NULL) {
		uint32_t fill_a;
		int b_is_sig, a_is_pat;
		long bad;
		CUresult r;

		line[strcspn(line, "\r\n")] = '\0';
		if (strcmp(line, "check_drain") == 0) {
			sync_stream();
			bad = check_fill(A, 0x40400000u, WORK_BYTES) +
			      check_sig();
			printf("{\"op\": \"check_drain\", \"bad\": %ld}\n", bad);
			fflush(stdout);
			continue;
		}
		r = call(line, &fill_a, &b_is_sig, &a_is_pat);
		printf("{\"op\": \"%s\", \"r\": %d}\n", line, (int)r);
		fflush(stdout);
		if (strcmp(line, "drain") == 0)
			continue;
		sync_stream();
		bad = check_sig();
		if (fill_a != 0 && r == CUDA_SUCCESS)
			bad += check_fill(A, fill_a, WORK_BYTES);
		if (b_is_sig && r == CUDA_SUCCESS)
			bad += dtoh_cmp(B, sigwant, WORK_BYTES);
		if (a_is_pat && r == CUDA_SUCCESS)
			bad += dtoh_cmp(A, pat, WORK_BYTES);
		if (strcmp(line, "launch_host_func") == 0 && !host_fn_ran)
			bad++;
		printf("{\"op\": \"%s\", \"bad\": %ld}\n", line, bad);
		fflush(stdout);
	}
	return 0;
}
