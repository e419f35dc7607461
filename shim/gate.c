/*
 * gate.c - the stop at every GPU call that is not a launch or a
 * synchronisation (those are stopped in launch.c and sync.c): copies of
 * every shape, memsets, event record and query, stream query and waits,
 * host functions, stream memory operations and graph uploads. While the
 * process is swapped out (swap.c), each of these waits for its memory to
 * come back before it reaches the driver; otherwise it passes straight
 * through. Owns nothing.
 *
 * A gated call marks its thread as a launch does (struct gs__lin,
 * inflight.h: the thread's own count, no shared write) between its test
 * of the stop and its return, so that a swap-out, after raising the stop
 * and fencing every thread with membarrier(2), waits for the calls
 * already past the test to leave the driver before it drains and copies
 * (no copy lands in memory being moved). One mechanism covers launches
 * and gated calls (swap.c, "Launches and the stop"):
 *
 *   call:      n++; barrier(); stopped? -> n--, wait, retry
 *              else call the driver; n--
 *   swap-out:  stopped = 1; membarrier(); wait until every n == 0; drain
 *
 * A thread that cannot be put on swap.c's list of marks (no memory) has
 * its gated calls refused with CUDA_ERROR_OUT_OF_MEMORY, as its launches.
 */
#include "shim_int.h"
#include "inflight.h"

#define GS__GATED(sym, params, args)                                           \
	CUresult sym params                                                    \
	{                                                                      \
		CUresult r_;                                                   \
		if (!gs__ready())                                              \
			return gs__not_ready();                                \
		GS__MARKED(r_, gs__real.sym args);                             \
		return r_;                                                     \
	}

/* ---- 1D copies and memsets -------------------------------------------- */

GS__GATED(cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n))
GS__GATED(cuMemcpy_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n))
GS__GATED(cuMemcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream st), (dst, src, n, st))
GS__GATED(cuMemcpyAsync_ptsz, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream st), (dst, src, n, st))
GS__GATED(cuMemcpyHtoD_v2, (CUdeviceptr dst, const void *src, size_t n), (dst, src, n))
GS__GATED(cuMemcpyHtoD_v2_ptds, (CUdeviceptr dst, const void *src, size_t n), (dst, src, n))
GS__GATED(cuMemcpyDtoH_v2, (void *dst, CUdeviceptr src, size_t n), (dst, src, n))
GS__GATED(cuMemcpyDtoH_v2_ptds, (void *dst, CUdeviceptr src, size_t n), (dst, src, n))
GS__GATED(cuMemcpyDtoD_v2, (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n))
GS__GATED(cuMemcpyDtoD_v2_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n))
GS__GATED(cuMemcpyHtoDAsync_v2, (CUdeviceptr dst, const void *src, size_t n, CUstream st), (dst, src, n, st))
GS__GATED(cuMemcpyHtoDAsync_v2_ptsz, (CUdeviceptr dst, const void *src, size_t n, CUstream st), (dst, src, n, st))
GS__GATED(cuMemcpyDtoHAsync_v2, (void *dst, CUdeviceptr src, size_t n, CUstream st), (dst, src, n, st))
GS__GATED(cuMemcpyDtoHAsync_v2_ptsz, (void *dst, CUdeviceptr src, size_t n, CUstream st), (dst, src, n, st))
GS__GATED(cuMemcpyDtoDAsync_v2, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream st), (dst, src, n, st))
GS__GATED(cuMemcpyDtoDAsync_v2_ptsz, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream st), (dst, src, n, st))
GS__GATED(cuMemsetD8_v2, (CUdeviceptr dst, unsigned char v, size_t n), (dst, v, n))
GS__GATED(cuMemsetD8_v2_ptds, (CUdeviceptr dst, unsigned char v, size_t n), (dst, v, n))
GS__GATED(cuMemsetD32_v2, (CUdeviceptr dst, unsigned int v, size_t n), (dst, v, n))
GS__GATED(cuMemsetD32_v2_ptds, (CUdeviceptr dst, unsigned int v, size_t n), (dst, v, n))
GS__GATED(cuMemsetD8Async, (CUdeviceptr dst, unsigned char v, size_t n, CUstream st), (dst, v, n, st))
GS__GATED(cuMemsetD8Async_ptsz, (CUdeviceptr dst, unsigned char v, size_t n, CUstream st), (dst, v, n, st))
GS__GATED(cuMemsetD32Async, (CUdeviceptr dst, unsigned int v, size_t n, CUstream st), (dst, v, n, st))
GS__GATED(cuMemsetD32Async_ptsz, (CUdeviceptr dst, unsigned int v, size_t n, CUstream st), (dst, v, n, st))

/* ---- 2D, 3D, peer and array copies ----------------------------------- */

GS__GATED(cuMemcpy2D_v2, (const CUDA_MEMCPY2D *p), (p))
GS__GATED(cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *p), (p))
GS__GATED(cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D *p), (p))
GS__GATED(cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D *p), (p))
GS__GATED(cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *p, CUstream st), (p, st))
GS__GATED(cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D *p, CUstream st), (p, st))
GS__GATED(cuMemcpy3D_v2, (const CUDA_MEMCPY3D *p), (p))
GS__GATED(cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D *p), (p))
GS__GATED(cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D *p, CUstream st), (p, st))
GS__GATED(cuMemcpy3DAsync_v2_ptsz, (const CUDA_MEMCPY3D *p, CUstream st), (p, st))
GS__GATED(cuMemcpy3DPeer, (const CUDA_MEMCPY3D_PEER *p), (p))
GS__GATED(cuMemcpy3DPeer_ptds, (const CUDA_MEMCPY3D_PEER *p), (p))
GS__GATED(cuMemcpy3DPeerAsync, (const CUDA_MEMCPY3D_PEER *p, CUstream st), (p, st))
GS__GATED(cuMemcpy3DPeerAsync_ptsz, (const CUDA_MEMCPY3D_PEER *p, CUstream st), (p, st))
GS__GATED(cuMemcpyPeer, (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n), (dst, dc, src, sc, n))
GS__GATED(cuMemcpyPeer_ptds, (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n), (dst, dc, src, sc, n))
GS__GATED(cuMemcpyPeerAsync, (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream st), (dst, dc, src, sc, n, st))
GS__GATED(cuMemcpyPeerAsync_ptsz, (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream st), (dst, dc, src, sc, n, st))
GS__GATED(cuMemcpyAtoD_v2, (CUdeviceptr dst, CUarray src, size_t off, size_t n), (dst, src, off, n))
GS__GATED(cuMemcpyAtoD_v2_ptds, (CUdeviceptr dst, CUarray src, size_t off, size_t n), (dst, src, off, n))
GS__GATED(cuMemcpyDtoA_v2, (CUarray dst, size_t off, CUdeviceptr src, size_t n), (dst, off, src, n))
GS__GATED(cuMemcpyDtoA_v2_ptds, (CUarray dst, size_t off, CUdeviceptr src, size_t n), (dst, off, src, n))
GS__GATED(cuMemcpyHtoA_v2, (CUarray dst, size_t off, const void *src, size_t n), (dst, off, src, n))
GS__GATED(cuMemcpyHtoA_v2_ptds, (CUarray dst, size_t off, const void *src, size_t n), (dst, off, src, n))
GS__GATED(cuMemcpyAtoH_v2, (void *dst, CUarray src, size_t off, size_t n), (dst, src, off, n))
GS__GATED(cuMemcpyAtoH_v2_ptds, (void *dst, CUarray src, size_t off, size_t n), (dst, src, off, n))
GS__GATED(cuMemcpyAtoA_v2, (CUarray dst, size_t doff, CUarray src, size_t soff, size_t n), (dst, doff, src, soff, n))
GS__GATED(cuMemcpyAtoA_v2_ptds, (CUarray dst, size_t doff, CUarray src, size_t soff, size_t n), (dst, doff, src, soff, n))
GS__GATED(cuMemcpyHtoAAsync_v2, (CUarray dst, size_t off, const void *src, size_t n, CUstream st), (dst, off, src, n, st))
GS__GATED(cuMemcpyHtoAAsync_v2_ptsz, (CUarray dst, size_t off, const void *src, size_t n, CUstream st), (dst, off, src, n, st))
GS__GATED(cuMemcpyAtoHAsync_v2, (void *dst, CUarray src, size_t off, size_t n, CUstream st), (dst, src, off, n, st))
GS__GATED(cuMemcpyAtoHAsync_v2_ptsz, (void *dst, CUarray src, size_t off, size_t n, CUstream st), (dst, src, off, n, st))

/* ---- batched copies --------------------------------------------------- */

GS__GATED(cuMemcpyBatchAsync, (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, CUstream st), (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, st))
GS__GATED(cuMemcpyBatchAsync_ptsz, (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, CUstream st), (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, st))
GS__GATED(cuMemcpyBatchAsync_v2, (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream st), (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, st))
GS__GATED(cuMemcpyBatchAsync_v2_ptsz, (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream st), (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, st))
GS__GATED(cuMemcpy3DBatchAsync, (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx, unsigned long long flags, CUstream st), (numOps, opList, failIdx, flags, st))
GS__GATED(cuMemcpy3DBatchAsync_ptsz, (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx, unsigned long long flags, CUstream st), (numOps, opList, failIdx, flags, st))
GS__GATED(cuMemcpy3DBatchAsync_v2, (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, unsigned long long flags, CUstream st), (numOps, opList, flags, st))
GS__GATED(cuMemcpy3DBatchAsync_v2_ptsz, (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, unsigned long long flags, CUstream st), (numOps, opList, flags, st))

/* ---- 16-bit and 2D memsets --------------------------------------------- */

GS__GATED(cuMemsetD16_v2, (CUdeviceptr dst, unsigned short v, size_t n), (dst, v, n))
GS__GATED(cuMemsetD16_v2_ptds, (CUdeviceptr dst, unsigned short v, size_t n), (dst, v, n))
GS__GATED(cuMemsetD2D8_v2, (CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h), (dst, pitch, v, w, h))
GS__GATED(cuMemsetD2D8_v2_ptds, (CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h), (dst, pitch, v, w, h))
GS__GATED(cuMemsetD2D16_v2, (CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h), (dst, pitch, v, w, h))
GS__GATED(cuMemsetD2D16_v2_ptds, (CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h), (dst, pitch, v, w, h))
GS__GATED(cuMemsetD2D32_v2, (CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h), (dst, pitch, v, w, h))
GS__GATED(cuMemsetD2D32_v2_ptds, (CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h), (dst, pitch, v, w, h))
GS__GATED(cuMemsetD16Async, (CUdeviceptr dst, unsigned short v, size_t n, CUstream st), (dst, v, n, st))
GS__GATED(cuMemsetD16Async_ptsz, (CUdeviceptr dst, unsigned short v, size_t n, CUstream st), (dst, v, n, st))
GS__GATED(cuMemsetD2D8Async, (CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h, CUstream st), (dst, pitch, v, w, h, st))
GS__GATED(cuMemsetD2D8Async_ptsz, (CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h, CUstream st), (dst, pitch, v, w, h, st))
GS__GATED(cuMemsetD2D16Async, (CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h, CUstream st), (dst, pitch, v, w, h, st))
GS__GATED(cuMemsetD2D16Async_ptsz, (CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h, CUstream st), (dst, pitch, v, w, h, st))
GS__GATED(cuMemsetD2D32Async, (CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h, CUstream st), (dst, pitch, v, w, h, st))
GS__GATED(cuMemsetD2D32Async_ptsz, (CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h, CUstream st), (dst, pitch, v, w, h, st))

/* ---- events and streams ----------------------------------------------- */

GS__GATED(cuEventRecord, (CUevent e, CUstream st), (e, st))
GS__GATED(cuEventRecord_ptsz, (CUevent e, CUstream st), (e, st))
GS__GATED(cuEventRecordWithFlags, (CUevent e, CUstream st, unsigned int flags), (e, st, flags))
GS__GATED(cuEventRecordWithFlags_ptsz, (CUevent e, CUstream st, unsigned int flags), (e, st, flags))
GS__GATED(cuEventQuery, (CUevent e), (e))
GS__GATED(cuCtxRecordEvent, (CUcontext c, CUevent e), (c, e))
GS__GATED(cuCtxWaitEvent, (CUcontext c, CUevent e), (c, e))
GS__GATED(cuStreamQuery, (CUstream st), (st))
GS__GATED(cuStreamQuery_ptsz, (CUstream st), (st))
GS__GATED(cuStreamWaitEvent, (CUstream st, CUevent e, unsigned int flags), (st, e, flags))
GS__GATED(cuStreamWaitEvent_ptsz, (CUstream st, CUevent e, unsigned int flags), (st, e, flags))
GS__GATED(cuLaunchHostFunc, (CUstream st, CUhostFn fn, void *data), (st, fn, data))
GS__GATED(cuLaunchHostFunc_ptsz, (CUstream st, CUhostFn fn, void *data), (st, fn, data))
GS__GATED(cuStreamAddCallback, (CUstream st, CUstreamCallback cb, void *data, unsigned int flags), (st, cb, data, flags))
GS__GATED(cuStreamAddCallback_ptsz, (CUstream st, CUstreamCallback cb, void *data, unsigned int flags), (st, cb, data, flags))

/* ---- stream memory operations and graph uploads ------------------------ */

GS__GATED(cuStreamWaitValue32_v2, (CUstream st, CUdeviceptr addr, cuuint32_t v, unsigned int flags), (st, addr, v, flags))
GS__GATED(cuStreamWaitValue32_v2_ptsz, (CUstream st, CUdeviceptr addr, cuuint32_t v, unsigned int flags), (st, addr, v, flags))
GS__GATED(cuStreamWriteValue32_v2, (CUstream st, CUdeviceptr addr, cuuint32_t v, unsigned int flags), (st, addr, v, flags))
GS__GATED(cuStreamWriteValue32_v2_ptsz, (CUstream st, CUdeviceptr addr, cuuint32_t v, unsigned int flags), (st, addr, v, flags))
GS__GATED(cuStreamWaitValue64_v2, (CUstream st, CUdeviceptr addr, cuuint64_t v, unsigned int flags), (st, addr, v, flags))
GS__GATED(cuStreamWaitValue64_v2_ptsz, (CUstream st, CUdeviceptr addr, cuuint64_t v, unsigned int flags), (st, addr, v, flags))
GS__GATED(cuStreamWriteValue64_v2, (CUstream st, CUdeviceptr addr, cuuint64_t v, unsigned int flags), (st, addr, v, flags))
GS__GATED(cuStreamWriteValue64_v2_ptsz, (CUstream st, CUdeviceptr addr, cuuint64_t v, unsigned int flags), (st, addr, v, flags))
GS__GATED(cuStreamBatchMemOp_v2, (CUstream st, unsigned int count, CUstreamBatchMemOpParams *ops, unsigned int flags), (st, count, ops, flags))
GS__GATED(cuStreamBatchMemOp_v2_ptsz, (CUstream st, unsigned int count, CUstreamBatchMemOpParams *ops, unsigned int flags), (st, count, ops, flags))
GS__GATED(cuGraphUpload, (CUgraphExec ge, CUstream st), (ge, st))
GS__GATED(cuGraphUpload_ptsz, (CUgraphExec ge, CUstream st), (ge, st))
