/*
 * launch_hooks.c - the driver's launch entry points (cuLaunchKernel,
 * cuLaunchKernelEx, cuLaunchCooperativeKernel and cuGraphLaunch, each
 * with its per-thread-stream variant): the fast path inline in each, the
 * slow path through the lease (launch_int.h) or launch.c's scheduler.
 * Nothing here holds state of its own.
 */
#include "launch_int.h"
#include "inflight.h"

#define GS__HDECL(sym, base, ver, pt) GS_EXPORT __typeof__(sym) sym;
GS_CU_HOOKS(GS__HDECL)
#undef GS__HDECL

/* ---- hooks ------------------------------------------------------------ */

/*
 * Each hook is its fast path only: mark the thread, test the gate, call
 * the driver, unmark. Everything else is in the *_slow function beside
 * it: slow_begin() (the stop, the lease, admission), the call made
 * marked, slow_end().
 */

enum slow_path {
	SLOW_LEASE,   /* one more of the thread's open lease */
	SLOW_SCHED,   /* admitted: t->b locked until gs__launch_end() */
	SLOW_UNSCHED, /* to the driver unscheduled */
	SLOW_REFUSED  /* not launched: t->refused */
};

static inline enum slow_path slow_begin(struct ticket *t, CUstream stream,
                                        bool pt, bool have_stream)
{
	t->b = NULL;
	t->refused = CUDA_SUCCESS;
	gs__swap_wait();
	if (GS_LIKELY(have_stream && lease_take(gs__my_batch, stream, pt)))
		return SLOW_LEASE;
	if (!gs__ready()) {
		t->refused = CUDA_ERROR_NOT_INITIALIZED;
		return SLOW_REFUSED;
	}
	if (have_stream && gs__launch_begin(t, stream, pt))
		return SLOW_SCHED;
	return t->refused != CUDA_SUCCESS ? SLOW_REFUSED : SLOW_UNSCHED;
}

static inline CUresult slow_end(struct ticket *t, enum slow_path p,
                                CUresult r)
{
	if (p == SLOW_LEASE)
		return lease_undo(gs__my_batch, r);
	if (p == SLOW_SCHED)
		return gs__launch_end(t, r);
	return r;
}

static __attribute__((noinline)) CUresult
cuLaunchKernel_slow(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                    unsigned int gridDimZ, unsigned int blockDimX,
                    unsigned int blockDimY, unsigned int blockDimZ,
                    unsigned int sharedMemBytes, CUstream hStream,
                    void **kernelParams, void **extra)
{
	struct ticket t;
	enum slow_path p = slow_begin(&t, hStream, false, true);
	CUresult r;

	if (p == SLOW_REFUSED)
		return t.refused;
	GS__MARKED(r, gs__real.cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ,
	                                      blockDimX, blockDimY, blockDimZ,
	                                      sharedMemBytes, hStream,
	                                      kernelParams, extra));
	return slow_end(&t, p, r);
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX,
                        unsigned int gridDimY, unsigned int gridDimZ,
                        unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes,
                        CUstream hStream, void **kernelParams, void **extra)
{
	if (GS_LIKELY(gs__lin_enter_fast()))
		return gs__lin_leave(gs__real.cuLaunchKernel(
		    f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
		    blockDimZ, sharedMemBytes, hStream, kernelParams, extra));
	return cuLaunchKernel_slow(f, gridDimX, gridDimY, gridDimZ, blockDimX,
	                           blockDimY, blockDimZ, sharedMemBytes,
	                           hStream, kernelParams, extra);
}

static __attribute__((noinline)) CUresult
cuLaunchKernel_ptsz_slow(CUfunction f, unsigned int gridDimX,
                         unsigned int gridDimY, unsigned int gridDimZ,
                         unsigned int blockDimX, unsigned int blockDimY,
                         unsigned int blockDimZ, unsigned int sharedMemBytes,
                         CUstream hStream, void **kernelParams, void **extra)
{
	struct ticket t;
	enum slow_path p = slow_begin(&t, hStream, true, true);
	CUresult r;

	if (p == SLOW_REFUSED)
		return t.refused;
	GS__MARKED(r, gs__real.cuLaunchKernel_ptsz(
	                  f, gridDimX, gridDimY, gridDimZ, blockDimX,
	                  blockDimY, blockDimZ, sharedMemBytes, hStream,
	                  kernelParams, extra));
	return slow_end(&t, p, r);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
                             unsigned int gridDimY, unsigned int gridDimZ,
                             unsigned int blockDimX, unsigned int blockDimY,
                             unsigned int blockDimZ,
                             unsigned int sharedMemBytes, CUstream hStream,
                             void **kernelParams, void **extra)
{
	if (GS_LIKELY(gs__lin_enter_fast()))
		return gs__lin_leave(gs__real.cuLaunchKernel_ptsz(
		    f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
		    blockDimZ, sharedMemBytes, hStream, kernelParams, extra));
	return cuLaunchKernel_ptsz_slow(f, gridDimX, gridDimY, gridDimZ,
	                                blockDimX, blockDimY, blockDimZ,
	                                sharedMemBytes, hStream, kernelParams,
	                                extra);
}

static __attribute__((noinline)) CUresult
cuLaunchKernelEx_slow(const CUlaunchConfig *config, CUfunction f,
                      void **kernelParams, void **extra)
{
	struct ticket t;
	enum slow_path p = slow_begin(&t, config ? config->hStream : NULL,
	                              false, config != NULL);
	CUresult r;

	if (p == SLOW_REFUSED)
		return t.refused;
	GS__MARKED(r, gs__real.cuLaunchKernelEx(config, f, kernelParams,
	                                        extra));
	return slow_end(&t, p, r);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                          void **kernelParams, void **extra)
{
	if (GS_LIKELY(gs__lin_enter_fast()))
		return gs__lin_leave(
		    gs__real.cuLaunchKernelEx(config, f, kernelParams, extra));
	return cuLaunchKernelEx_slow(config, f, kernelParams, extra);
}

static __attribute__((noinline)) CUresult
cuLaunchKernelEx_ptsz_slow(const CUlaunchConfig *config, CUfunction f,
                           void **kernelParams, void **extra)
{
	struct ticket t;
	enum slow_path p = slow_begin(&t, config ? config->hStream : NULL,
	                              true, config != NULL);
	CUresult r;

	if (p == SLOW_REFUSED)
		return t.refused;
	GS__MARKED(r, gs__real.cuLaunchKernelEx_ptsz(config, f, kernelParams,
	                                             extra));
	return slow_end(&t, p, r);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                               void **kernelParams, void **extra)
{
	if (GS_LIKELY(gs__lin_enter_fast()))
		return gs__lin_leave(gs__real.cuLaunchKernelEx_ptsz(
		    config, f, kernelParams, extra));
	return cuLaunchKernelEx_ptsz_slow(config, f, kernelParams, extra);
}

static __attribute__((noinline)) CUresult cuLaunchCooperativeKernel_slow(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
    unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
    unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
    void **kernelParams)
{
	struct ticket t;
	enum slow_path p = slow_begin(&t, hStream, false, true);
	CUresult r;

	if (p == SLOW_REFUSED)
		return t.refused;
	GS__MARKED(r, gs__real.cuLaunchCooperativeKernel(
	                  f, gridDimX, gridDimY, gridDimZ, blockDimX,
	                  blockDimY, blockDimZ, sharedMemBytes, hStream,
	                  kernelParams));
	return slow_end(&t, p, r);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                   unsigned int gridDimY, unsigned int gridDimZ,
                                   unsigned int blockDimX,
                                   unsigned int blockDimY,
                                   unsigned int blockDimZ,
                                   unsigned int sharedMemBytes,
                                   CUstream hStream, void **kernelParams)
{
	if (GS_LIKELY(gs__lin_enter_fast()))
		return gs__lin_leave(gs__real.cuLaunchCooperativeKernel(
		    f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
		    blockDimZ, sharedMemBytes, hStream, kernelParams));
	return cuLaunchCooperativeKernel_slow(f, gridDimX, gridDimY, gridDimZ,
	                                      blockDimX, blockDimY, blockDimZ,
	                                      sharedMemBytes, hStream,
	                                      kernelParams);
}

static __attribute__((noinline)) CUresult cuLaunchCooperativeKernel_ptsz_slow(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
    unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
    unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
    void **kernelParams)
{
	struct ticket t;
	enum slow_path p = slow_begin(&t, hStream, true, true);
	CUresult r;

	if (p == SLOW_REFUSED)
		return t.refused;
	GS__MARKED(r, gs__real.cuLaunchCooperativeKernel_ptsz(
	                  f, gridDimX, gridDimY, gridDimZ, blockDimX,
	                  blockDimY, blockDimZ, sharedMemBytes, hStream,
	                  kernelParams));
	return slow_end(&t, p, r);
}

CUresult cuLaunchCooperativeKernel_ptsz(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
    unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
    unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
    void **kernelParams)
{
	if (GS_LIKELY(gs__lin_enter_fast()))
		return gs__lin_leave(gs__real.cuLaunchCooperativeKernel_ptsz(
		    f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
		    blockDimZ, sharedMemBytes, hStream, kernelParams));
	return cuLaunchCooperativeKernel_ptsz_slow(
	    f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
	    sharedMemBytes, hStream, kernelParams);
}

static __attribute__((noinline)) CUresult
cuGraphLaunch_slow(CUgraphExec hGraphExec, CUstream hStream)
{
	struct ticket t;
	enum slow_path p = slow_begin(&t, hStream, false, true);
	CUresult r;

	if (p == SLOW_REFUSED)
		return t.refused;
	GS__MARKED(r, gs__real.cuGraphLaunch(hGraphExec, hStream));
	return slow_end(&t, p, r);
}

/* A graph launch, fast or slow (graphmem.c's charged path calls it too). */
static CUresult graph_launch(CUgraphExec hGraphExec, CUstream hStream)
{
	if (GS_LIKELY(gs__lin_enter_fast()))
		return gs__lin_leave(
		    gs__real.cuGraphLaunch(hGraphExec, hStream));
	return cuGraphLaunch_slow(hGraphExec, hStream);
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	if (GS_UNLIKELY(__atomic_load_n(&gs__gmem_execs, __ATOMIC_ACQUIRE)))
		return gs__gmem_launch(graph_launch, hGraphExec, hStream);
	return graph_launch(hGraphExec, hStream);
}

static __attribute__((noinline)) CUresult
cuGraphLaunch_ptsz_slow(CUgraphExec hGraphExec, CUstream hStream)
{
	struct ticket t;
	enum slow_path p = slow_begin(&t, hStream, true, true);
	CUresult r;

	if (p == SLOW_REFUSED)
		return t.refused;
	GS__MARKED(r, gs__real.cuGraphLaunch_ptsz(hGraphExec, hStream));
	return slow_end(&t, p, r);
}

static CUresult graph_launch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	if (GS_LIKELY(gs__lin_enter_fast()))
		return gs__lin_leave(
		    gs__real.cuGraphLaunch_ptsz(hGraphExec, hStream));
	return cuGraphLaunch_ptsz_slow(hGraphExec, hStream);
}

CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	if (GS_UNLIKELY(__atomic_load_n(&gs__gmem_execs, __ATOMIC_ACQUIRE)))
		return gs__gmem_launch(graph_launch_ptsz, hGraphExec, hStream);
	return graph_launch_ptsz(hGraphExec, hStream);
}
