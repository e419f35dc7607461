/*
 * sync.c - the hooks around the host's view of the GPU's progress: the
 * calls that change the calling thread's current context (which the
 * launch path caches per thread instead of asking the driver on every
 * launch: cuCtxSetCurrent, cuCtxPushCurrent, cuCtxPopCurrent; the calls
 * that create or destroy contexts are mem.c's), and the synchronising
 * calls, which close the thread's open batch of launches first (so what
 * they wait for includes its end event) and measure what finished after
 * (launch.c does both).
 *
 * Calls launch.c (gs__launch_*) and the real driver; nothing calls it
 * but the application.
 */
#include "shim_int.h"

#define GS__SDECL(sym, base, ver, pt) GS_EXPORT __typeof__(sym) sym;
GS_CU_HOOKS(GS__SDECL)
#undef GS__SDECL

/* ---- the current context --------------------------------------------- */

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	CUresult r;

	if (!gs__ready())
		return gs__not_ready();
	gs__launch_ctx_leaving(ctx);
	r = gs__real.cuCtxSetCurrent(ctx);
	gs__launch_ctx_current(r == CUDA_SUCCESS ? ctx : NULL);
	return r;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
	CUresult r;

	if (!gs__ready())
		return gs__not_ready();
	gs__launch_ctx_leaving(ctx);
	r = gs__real.cuCtxPushCurrent_v2(ctx);
	gs__launch_ctx_current(r == CUDA_SUCCESS ? ctx : NULL);
	return r;
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
	CUresult r;

	if (!gs__ready())
		return gs__not_ready();
	gs__launch_ctx_leaving(NULL);
	r = gs__real.cuCtxPopCurrent_v2(pctx);
	gs__launch_ctx_current(NULL); /* the one below: asked when needed */
	return r;
}

/* ---- synchronisation: the host waited, so measure what finished ------- */

CUresult cuStreamSynchronize(CUstream hStream)
{
	CUresult r;

	if (!gs__ready())
		return CUDA_ERROR_NOT_INITIALIZED;
	gs__swap_wait();
	gs__launch_sync_begin();
	r = gs__real.cuStreamSynchronize(hStream);
	gs__launch_after_sync(r);
	return r;
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
	CUresult r;

	if (!gs__ready())
		return CUDA_ERROR_NOT_INITIALIZED;
	gs__swap_wait();
	gs__launch_sync_begin();
	r = gs__real.cuStreamSynchronize_ptsz(hStream);
	gs__launch_after_sync(r);
	return r;
}

CUresult cuCtxSynchronize(void)
{
	CUresult r;

	if (!gs__ready())
		return CUDA_ERROR_NOT_INITIALIZED;
	gs__swap_wait();
	gs__launch_sync_begin();
	r = gs__real.cuCtxSynchronize();
	gs__launch_after_sync(r);
	return r;
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	CUresult r;

	if (!gs__ready())
		return CUDA_ERROR_NOT_INITIALIZED;
	gs__swap_wait();
	gs__launch_sync_begin();
	r = gs__real.cuCtxSynchronize_v2(ctx);
	gs__launch_after_sync(r);
	return r;
}

CUresult cuEventSynchronize(CUevent hEvent)
{
	CUresult r;

	if (!gs__ready())
		return CUDA_ERROR_NOT_INITIALIZED;
	gs__swap_wait();
	gs__launch_sync_begin();
	r = gs__real.cuEventSynchronize(hEvent);
	gs__launch_after_sync(r);
	return r;
}
