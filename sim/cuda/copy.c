/*
 * copy.c - copies and memsets of the sim driver (cuMemcpy*, cuMemset*, and
 * the bodies their per-thread and legacy versions share): a synchronous
 * call waits for the work queued before it on the timeline (timeline.c);
 * the data moves at once (addr.c).
 *
 * Copies take no simulated GPU time; a synchronous copy waits for the work
 * queued before it (the legacy default stream orders after everything).
 */
#include "bus.h"
#include "cuda_int.h"
#include "mem_int.h"

#include <string.h>

void gs__dcopy(uint64_t dst, uint64_t src, uint64_t len)
{
	struct gs__alloc *d = gs__alloc_find(dst, len);
	struct gs__alloc *s = gs__alloc_find(src, len);

	if (d != NULL && !d->backed)
		return;
	if (s != NULL && !s->backed) {
		memset((void *)(uintptr_t)dst, 0, (size_t)len);
		return;
	}
	memmove((void *)(uintptr_t)dst, (void *)(uintptr_t)src, (size_t)len);
}

/* Device memory we may copy to/from: a live allocation range (or, for a
 * copy being captured, a graph allocation's address: it lives when the
 * graph runs). */
static bool is_dev_range(uint64_t p, uint64_t len, const struct gs__stream *s)
{
	struct gs__alloc *a = gs__alloc_find(p, len);

	return gs__alloc_usable(a) || (a != NULL && a->kind == GS__A_GRAPH &&
	                               s != NULL && s->capture != NULL);
}

/* A copy on a capturing stream: a memcpy node (a synchronous one cannot
 * be captured and ends the capture). Lock held. */
static CUresult capture_copy(struct gs__stream *s, bool sync, uint64_t dst,
                             uint64_t src, uint64_t len)
{
	struct gs__node *n;
	CUresult r;

	if (sync) {
		gs__capture_invalidate(s,
		                       CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	n = gs__node_new(GS__N_MEMCPY);
	if (n == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	n->cpy_dst = dst;
	n->cpy_src = src;
	n->cpy_len = len;
	n->memcpy.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
	n->memcpy.srcDevice = (CUdeviceptr)src;
	n->memcpy.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
	n->memcpy.dstDevice = (CUdeviceptr)dst;
	n->memcpy.WidthInBytes = len;
	n->memcpy.Height = 1;
	n->memcpy.Depth = 1;
	r = gs__capture_node(s, n);
	if (r != CUDA_SUCCESS)
		gs__graph_node_free(n);
	return r;
}

/*
 * One copy or memset call. `sync`: returns after the work queued before it
 * is done (legacy: the whole context; per-thread: that stream). Async
 * calls apply their data at once (see the file comment) and queue nothing.
 */

CUresult gs__xfer(enum xfer_kind k, uint64_t dst, uint64_t src, uint64_t len,
                  CUstream hStream, bool sync, bool pt)
{
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__stream_get(sync ? NULL : hStream, pt, &ctx, &s);
	if (r != CUDA_SUCCESS)
		goto out;
	if (len == 0)
		goto out;
	if (dst == 0 || src == 0 ||
	    ((k == X_HTOD || k == X_DTOD) && !is_dev_range(dst, len, s)) ||
	    ((k == X_DTOH || k == X_DTOD) && !is_dev_range(src, len, s))) {
		r = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (s->capture != NULL) {
		r = capture_copy(s, sync, dst, src, len);
		goto out;
	}
	if (sync) {
		r = gs__wait(ctx, pt ? s->last : ctx->last);
		if (r != CUDA_SUCCESS)
			goto out;
		/* the wait dropped the lock: the ranges may be gone */
		if (((k == X_HTOD || k == X_DTOD) &&
		     !is_dev_range(dst, len, s)) ||
		    ((k == X_DTOH || k == X_DTOD) &&
		     !is_dev_range(src, len, s))) {
			r = CUDA_ERROR_INVALID_VALUE;
			goto out;
		}
	}
	gs__dcopy(dst, src, len);
out:
	gs__unlock();
	if (r == CUDA_SUCCESS && sync && len && (k == X_HTOD || k == X_DTOH))
		gs__bus_wait(gs__drv.st->gpus[gs__drv.dev[ctx->dev].gpu].model,
		             len); /* bus.h: off unless asked for */
	return r;
}

CUresult gs__memset_call(uint64_t p, uint64_t pitch, uint32_t value,
                         unsigned int esize, uint64_t width, uint64_t height,
                         CUstream hStream, bool sync, bool pt)
{
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__stream_get(sync ? NULL : hStream, pt, &ctx, &s);
	if (r == CUDA_SUCCESS && s->capture != NULL) {
		struct gs__node *n = sync ? NULL : gs__node_new(GS__N_MEMSET);

		if (sync) {
			gs__capture_invalidate(
			    s, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
			r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		} else if (n == NULL) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			n->memset.dst = (CUdeviceptr)p;
			n->memset.pitch = pitch ? pitch : width * esize;
			n->memset.value = value;
			n->memset.elementSize = esize;
			n->memset.width = width;
			n->memset.height = height;
			r = gs__capture_node(s, n);
			if (r != CUDA_SUCCESS)
				gs__graph_node_free(n);
		}
		gs__unlock();
		return r;
	}
	if (r == CUDA_SUCCESS && sync)
		r = gs__wait(ctx, pt ? s->last : ctx->last);
	if (r == CUDA_SUCCESS)
		r = gs__memset(p, pitch ? pitch : width * esize, value, esize,
		               width, height);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost,
                                 size_t ByteCount)
{
	return gs__xfer(X_HTOD, dstDevice, (uint64_t)(uintptr_t)srcHost,
	                ByteCount, NULL, true, false);
}

CUresult CUDAAPI cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice,
                                 size_t ByteCount)
{
	return gs__xfer(X_DTOH, (uint64_t)(uintptr_t)dstHost, srcDevice,
	                ByteCount, NULL, true, false);
}

CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                 size_t ByteCount)
{
	return gs__xfer(X_DTOD, dstDevice, srcDevice, ByteCount, NULL, true,
	                false);
}

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	return gs__xfer(X_ANY, dst, src, ByteCount, NULL, true, false);
}

CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice,
                                      const void *srcHost, size_t ByteCount,
                                      CUstream hStream)
{
	return gs__xfer(X_HTOD, dstDevice, (uint64_t)(uintptr_t)srcHost,
	                ByteCount, hStream, false, false);
}

CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice,
                                      size_t ByteCount, CUstream hStream)
{
	return gs__xfer(X_DTOH, (uint64_t)(uintptr_t)dstHost, srcDevice,
	                ByteCount, hStream, false, false);
}

CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice,
                                      CUdeviceptr srcDevice, size_t ByteCount,
                                      CUstream hStream)
{
	return gs__xfer(X_DTOD, dstDevice, srcDevice, ByteCount, hStream, false,
	                false);
}

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src,
                               size_t ByteCount, CUstream hStream)
{
	return gs__xfer(X_ANY, dst, src, ByteCount, hStream, false, false);
}

CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc,
                               size_t N)
{
	return gs__memset_call(dstDevice, 0, uc, 1, N, 1, NULL, true, false);
}

CUresult CUDAAPI cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us,
                                size_t N)
{
	return gs__memset_call(dstDevice, 0, us, 2, N, 1, NULL, true, false);
}

CUresult CUDAAPI cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui,
                                size_t N)
{
	return gs__memset_call(dstDevice, 0, ui, 4, N, 1, NULL, true, false);
}

CUresult CUDAAPI cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch,
                                 unsigned char uc, size_t Width, size_t Height)
{
	return gs__memset_call(dstDevice, dstPitch, uc, 1, Width, Height, NULL,
	                       true, false);
}

CUresult CUDAAPI cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch,
                                  unsigned short us, size_t Width,
                                  size_t Height)
{
	return gs__memset_call(dstDevice, dstPitch, us, 2, Width, Height, NULL,
	                       true, false);
}

CUresult CUDAAPI cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch,
                                  unsigned int ui, size_t Width, size_t Height)
{
	return gs__memset_call(dstDevice, dstPitch, ui, 4, Width, Height, NULL,
	                       true, false);
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc,
                                 size_t N, CUstream hStream)
{
	return gs__memset_call(dstDevice, 0, uc, 1, N, 1, hStream, false,
	                       false);
}

CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us,
                                  size_t N, CUstream hStream)
{
	return gs__memset_call(dstDevice, 0, us, 2, N, 1, hStream, false,
	                       false);
}

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui,
                                  size_t N, CUstream hStream)
{
	return gs__memset_call(dstDevice, 0, ui, 4, N, 1, hStream, false,
	                       false);
}

CUresult CUDAAPI cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch,
                                   unsigned char uc, size_t Width,
                                   size_t Height, CUstream hStream)
{
	return gs__memset_call(dstDevice, dstPitch, uc, 1, Width, Height,
	                       hStream, false, false);
}

CUresult CUDAAPI cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch,
                                    unsigned short us, size_t Width,
                                    size_t Height, CUstream hStream)
{
	return gs__memset_call(dstDevice, dstPitch, us, 2, Width, Height,
	                       hStream, false, false);
}

CUresult CUDAAPI cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch,
                                    unsigned int ui, size_t Width,
                                    size_t Height, CUstream hStream)
{
	return gs__memset_call(dstDevice, dstPitch, ui, 4, Width, Height,
	                       hStream, false, false);
}

/*
 * cuMemcpyPeer(Async): a copy between two contexts' memory. A simulated
 * GPU has no peer access, so the real driver would stage it through the
 * host; here both are host memory and the bytes move at once. The
 * synchronous form first waits for the work queued in both contexts (the
 * driver serializes it with them).
 */
CUresult gs__memcpy_peer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
                         CUcontext sctx, size_t len, CUstream hStream,
                         bool sync, bool pt)
{
	struct gs__ctx *dc = (struct gs__ctx *)dctx,
	               *sc = (struct gs__ctx *)sctx;
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s = NULL;
	struct gs__alloc *da, *sa;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(dc, GS__H_CTX) || !gs__h_is(sc, GS__H_CTX) ||
	    dc->destroyed || sc->destroyed) {
		r = CUDA_ERROR_INVALID_CONTEXT;
		goto out;
	}
	if (!sync &&
	    (r = gs__stream_get(hStream, pt, &ctx, &s)) != CUDA_SUCCESS)
		goto out;
	if (len == 0)
		goto out;
	da = gs__alloc_find(dst, len);
	sa = gs__alloc_find(src, len);
	if (!is_dev_range(dst, len, s) || !is_dev_range(src, len, s) ||
	    da->dev != dc->dev || sa->dev != sc->dev) {
		r = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (s != NULL && s->capture != NULL) {
		r = capture_copy(s, false, dst, src, len);
		goto out;
	}
	if (sync) {
		r = gs__wait(dc, dc->last);
		if (r == CUDA_SUCCESS)
			r = gs__wait(sc, sc->last);
		if (r != CUDA_SUCCESS)
			goto out;
		if (!is_dev_range(dst, len, s) || !is_dev_range(src, len, s)) {
			r = CUDA_ERROR_INVALID_VALUE; /* freed while we waited */
			goto out;
		}
	}
	gs__dcopy(dst, src, len);
out:
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext,
                              CUdeviceptr srcDevice, CUcontext srcContext,
                              size_t ByteCount)
{
	return gs__memcpy_peer(dstDevice, dstContext, srcDevice, srcContext,
	                       ByteCount, NULL, true, false);
}

CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
                                   CUdeviceptr srcDevice, CUcontext srcContext,
                                   size_t ByteCount, CUstream hStream)
{
	return gs__memcpy_peer(dstDevice, dstContext, srcDevice, srcContext,
	                       ByteCount, hStream, false, false);
}
