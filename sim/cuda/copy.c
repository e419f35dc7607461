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

static void dcopy(uint64_t dst, uint64_t src, uint64_t len)
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

/* Device memory we may copy to/from: a live allocation range. */
static bool is_dev_range(uint64_t p, uint64_t len)
{
	struct gs__alloc *a = gs__alloc_find(p, len);

	return a != NULL && a->kind != GS__A_RESERVE;
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
	    ((k == X_HTOD || k == X_DTOD) && !is_dev_range(dst, len)) ||
	    ((k == X_DTOH || k == X_DTOD) && !is_dev_range(src, len))) {
		r = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (sync) {
		r = gs__wait(ctx, pt ? s->last : ctx->last);
		if (r != CUDA_SUCCESS)
			goto out;
		/* the wait dropped the lock: the ranges may be gone */
		if (((k == X_HTOD || k == X_DTOD) && !is_dev_range(dst, len)) ||
		    ((k == X_DTOH || k == X_DTOD) && !is_dev_range(src, len))) {
			r = CUDA_ERROR_INVALID_VALUE;
			goto out;
		}
	}
	dcopy(dst, src, len);
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
