/*
 * mem.c - the memory cap: every allocation path, frees, contexts (their
 * overhead, and the memory that dies with them), and the slice's view of
 * memory (cuMemGetInfo, cuDeviceTotalMem).
 *
 * Every allocation follows one protocol against the slice's books in the
 * shared region:
 *
 *   reserve(size) --QUOTA--> CUDA_ERROR_OUT_OF_MEMORY (driver not called)
 *      | ok
 *   driver allocates --fails--> release(size), driver's error returned
 *      |   (a slice that may swap, out of GPU memory for movable memory
 *      |    or a context: first asks the daemon to swap others out and
 *      |    tries again, swapneed.c)
 *      | ok
 *   [size known only now (pitch, arrays, contexts): reserve the rest or
 *    release the excess; over the cap -> undo the allocation, OOM]
 *   record in ptrmap, commit (high-water marks)
 *
 * so concurrent processes of one slice can never together exceed the cap:
 * the books are charged before the driver sees the request. A free takes
 * the record first, calls the driver, then releases (or puts the record
 * back if the driver refused); a pointer without a record passes through.
 *
 * Sizes are charged rounded up to 512 bytes (cudaMalloc's alignment);
 * arrays by their driver-reported memory requirements when the driver
 * gives them, else from their descriptors. A context is charged what it
 * costs the process on the GPU: measured through NVML's per-process usage
 * around its creation (reserving first the last value measured on that
 * GPU, kept in the region, else GPUSLICE_CTX_OVERHEAD, else 512 MiB);
 * without NVML the reservation stands as the charge.
 */
#include "shim_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GS_ALLOC_ALIGN 512ULL
/*
 * What a context is assumed to cost before anything was measured on its
 * GPU: about a real driver's footprint (300-600 MiB). Reserving too much
 * for a moment is harmless (the excess is released once measured);
 * reserving too little would let processes that start together overshoot
 * the cap until their contexts are measured.
 */
#define GS_CTX_OVERHEAD_DEFAULT (512ULL << 20)

#define GS__MDECL(sym, base, ver, pt) GS_EXPORT __typeof__(sym) sym;
GS_CU_HOOKS(GS__MDECL)
#undef GS__MDECL

/* Per ordinal: our own count of primary context retains. */
static int primary_refs[GS_SHIM_MAX_ORDINALS];
static CUcontext primary_ctx[GS_SHIM_MAX_ORDINALS];

static uint64_t round_up(uint64_t n, uint64_t a)
{
	return (n + a - 1) / a * a;
}

/* ---- the protocol ----------------------------------------------------- */

/* Reserves; CUDA_SUCCESS, or the error the caller returns. */
static CUresult reserve(int dev, uint64_t bytes)
{
	gs_err err =
	    gs_region_mem_reserve(gs__g.region, &gs__g.proc, dev, bytes);

	/* Graph memory freed but cached by the driver is on the books:
	 * trimmed, it makes room (shim/graphmem.c). */
	if (err == GS_ERR_QUOTA && gs__gmem_trim_cached(dev))
		err = gs_region_mem_reserve(gs__g.region, &gs__g.proc, dev,
		                            bytes);
	if (err == GS_OK)
		return CUDA_SUCCESS;
	if (err == GS_ERR_NOT_FOUND) {
		/* Our entry or our slice is gone (deleted, reclaimed, or
		 * tampered with): fail closed, never "no cap". */
		static bool said;

		if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
			gs_warn(GS_SHIM_TAG,
			        "slice=%s pid=%d: this process's slice entry is gone; no more GPU memory (allocations answer CUDA_ERROR_OUT_OF_MEMORY)",
			        gs__g.cfg.slice, (int)getpid());
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (err == GS_ERR_QUOTA)
		gs_debug(GS_SHIM_TAG,
		         "slice=%s gpu=%d over the cap: %llu bytes refused",
		         gs__g.cfg.slice, dev, (unsigned long long)bytes);
	else
		gs_warn(GS_SHIM_TAG,
		        "slice=%s books unavailable (%s): allocation refused",
		        gs__g.cfg.slice, gs_strerror(err));
	return CUDA_ERROR_OUT_OF_MEMORY;
}

static void release(int dev, uint64_t bytes)
{
	if (bytes != 0)
		gs_region_mem_release(gs__g.region, &gs__g.proc, dev, bytes);
}

/* Records an allocation (its reservation stands); keeps the charge if it
 * cannot record it. */
static void commit(uint8_t kind, uint64_t key, uint64_t bytes, int dev,
                   CUcontext ctx)
{
	struct gs__alloc a = {
	    .key = key, .bytes = bytes, .ctx = ctx, .dev = dev, .kind = kind};

	if (!gs__ptrmap_put(&a))
		gs_warn(GS_SHIM_TAG,
		        "slice=%s allocation table full (or out of host memory): %llu bytes stay charged until exit",
		        gs__g.cfg.slice, (unsigned long long)bytes);
}

/* Adjusts a reservation to the real size; false when over the cap. */
static bool adjust(int dev, uint64_t reserved, uint64_t actual)
{
	if (actual > reserved)
		return reserve(dev, actual - reserved) == CUDA_SUCCESS;
	release(dev, reserved - actual);
	return true;
}

static CUcontext current_ctx(void)
{
	return gs__dev_current_ctx();
}

/*
 * The allocation protocol around one driver call, for sizes known up
 * front. `call` performs the real allocation and returns the key.
 */
#define GS__NOT_READY gs__not_ready()

static bool tracked(int *dev, CUdevice *ord)
{
	if (!gs__enforcing())
		return false;
	*dev = gs__dev_current(ord);
	return *dev >= 0;
}

/* ---- plain, pitch, managed -------------------------------------------- */

/* Tries a movable allocation after the daemon made room, this often. */
#define GS__NEED_TRIES 3

/*
 * A movable allocation of `bytes` on region device `dev`. When the GPU
 * has no memory for it (the slice's cap was checked before), asks the
 * daemon to make room by swapping other slices out (swapneed.c) and tries
 * again; out-of-memory when it cannot.
 */
static CUresult swap_alloc(int dev, CUdeviceptr *dptr, size_t bytes)
{
	CUresult r = gs__swap_alloc(dptr, bytes);

	gs__swap_active();
	for (int i = 0; r == CUDA_ERROR_OUT_OF_MEMORY && i < GS__NEED_TRIES &&
	                dev >= 0 && gs__swap_need(dev, bytes);
	     i++)
		r = gs__swap_alloc(dptr, bytes);
	if (r == CUDA_SUCCESS)
		gs__swap_movable();
	return r;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	int saved = errno, dev;
	uint64_t bytes = round_up(bytesize, GS_ALLOC_ALIGN);
	CUresult r;

	if (!gs__ready())
		return GS__NOT_READY;
	if (bytesize == 0 || !tracked(&dev, NULL))
		return gs__real.cuMemAlloc_v2(dptr, bytesize);
	r = reserve(dev, bytes);
	if (r == CUDA_SUCCESS) {
		r = gs__swap_backed() ? swap_alloc(dev, dptr, bytesize)
		                      : gs__real.cuMemAlloc_v2(dptr, bytesize);
		if (r == CUDA_SUCCESS)
			commit(GS__ALLOC_PTR, *dptr, bytes, dev, current_ctx());
		else
			release(dev, bytes);
	}
	errno = saved;
	return r;
}

/* A pitched allocation: movable memory for a slice that may swap (rows
 * of a multiple of 512 bytes, as the driver's texture pitch alignment),
 * else the driver's. */
static CUresult alloc_pitch(CUdeviceptr *dptr, size_t *pPitch, size_t width,
                            size_t height, unsigned int elem)
{
	size_t pitch = (size_t)round_up(width, GS_ALLOC_ALIGN);
	CUresult r;

	if (!gs__swap_backed() || width == 0 || height == 0 ||
	    (elem != 4 && elem != 8 && elem != 16))
		return gs__real.cuMemAllocPitch_v2(dptr, pPitch, width, height,
		                                   elem);
	r = swap_alloc(gs__dev_current(NULL), dptr, pitch * height);
	if (r == CUDA_SUCCESS)
		*pPitch = pitch;
	return r;
}

/* Frees a device pointer: movable memory here, else the driver's. */
static CUresult free_dev(CUdeviceptr p)
{
	CUresult r;

	if (gs__swap_free(p, &r))
		return r;
	return gs__real.cuMemFree_v2(p);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
                            size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes)
{
	int saved = errno, dev;
	uint64_t est = round_up(WidthInBytes, GS_ALLOC_ALIGN) * Height, act;
	CUresult r;

	if (!gs__ready())
		return GS__NOT_READY;
	if (est == 0 || !tracked(&dev, NULL))
		return gs__real.cuMemAllocPitch_v2(dptr, pPitch, WidthInBytes,
		                                   Height, ElementSizeBytes);
	r = reserve(dev, est);
	if (r != CUDA_SUCCESS)
		goto out;
	r = alloc_pitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
	if (r != CUDA_SUCCESS) {
		release(dev, est);
		goto out;
	}
	act = round_up((uint64_t)*pPitch * Height, GS_ALLOC_ALIGN);
	if (!adjust(dev, est, act)) {
		(void)free_dev(*dptr);
		release(dev, est);
		*dptr = 0;
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	commit(GS__ALLOC_PTR, *dptr, act, dev, current_ctx());
out:
	errno = saved;
	return r;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
                           unsigned int flags)
{
	int saved = errno, dev;
	uint64_t bytes = round_up(bytesize, GS_ALLOC_ALIGN);
	CUresult r;

	if (!gs__ready())
		return GS__NOT_READY;
	if (bytesize == 0 || !tracked(&dev, NULL))
		return gs__real.cuMemAllocManaged(dptr, bytesize, flags);
	r = reserve(dev, bytes);
	if (r == CUDA_SUCCESS) {
		r = gs__real.cuMemAllocManaged(dptr, bytesize, flags);
		if (r == CUDA_SUCCESS)
			commit(GS__ALLOC_PTR, *dptr, bytes, dev, current_ctx());
		else
			release(dev, bytes);
	}
	errno = saved;
	return r;
}

/* Takes the record of a device pointer (plain or stream-ordered). */
static bool take_ptr(CUdeviceptr p, struct gs__alloc *a)
{
	return gs__ptrmap_take(GS__ALLOC_PTR, p, a) ||
	       gs__ptrmap_take(GS__ALLOC_ASYNC, p, a);
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	int saved = errno;
	struct gs__alloc a;
	CUresult r;

	if (!gs__ready())
		return GS__NOT_READY;
	if (gs__g.region == NULL)
		return free_dev(dptr);
	if (!take_ptr(dptr, &a)) {
		r = free_dev(dptr);
		if (r == CUDA_SUCCESS)
			gs__gmem_freed(dptr); /* a graph allocation's end */
		errno = saved;
		return r;
	}
	r = free_dev(dptr);
	if (r == CUDA_SUCCESS)
		release(a.dev, a.bytes);
	else
		(void)gs__ptrmap_put(&a);
	errno = saved;
	return r;
}

/* ---- stream-ordered --------------------------------------------------- */

static CUresult alloc_async(__typeof__(&cuMemAllocAsync) fn, CUdeviceptr *dptr,
                            size_t bytesize, CUstream hStream)
{
	int saved = errno, dev;
	uint64_t bytes = round_up(bytesize, GS_ALLOC_ALIGN);
	CUresult r;

	/* in a capture: a graph's alloc node, charged when it runs */
	if (bytesize == 0 || !tracked(&dev, NULL) ||
	    gs__gmem_capturing(hStream, fn == gs__real.cuMemAllocAsync_ptsz))
		return fn(dptr, bytesize, hStream);
	r = reserve(dev, bytes);
	if (r == CUDA_SUCCESS) {
		r = fn(dptr, bytesize, hStream);
		if (r == CUDA_SUCCESS)
			commit(GS__ALLOC_ASYNC, *dptr, bytes, dev,
			       current_ctx());
		else
			release(dev, bytes);
	}
	errno = saved;
	return r;
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	if (!gs__ready())
		return GS__NOT_READY;
	return alloc_async(gs__real.cuMemAllocAsync, dptr, bytesize, hStream);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                              CUstream hStream)
{
	if (!gs__ready())
		return GS__NOT_READY;
	return alloc_async(gs__real.cuMemAllocAsync_ptsz, dptr, bytesize,
	                   hStream);
}

static CUresult alloc_pool(__typeof__(&cuMemAllocFromPoolAsync) fn,
                           CUdeviceptr *dptr, size_t bytesize,
                           CUmemoryPool pool, CUstream hStream)
{
	int saved = errno, dev;
	uint64_t bytes = round_up(bytesize, GS_ALLOC_ALIGN);
	CUresult r;

	if (bytesize == 0 || !tracked(&dev, NULL) ||
	    gs__gmem_capturing(hStream,
	                       fn == gs__real.cuMemAllocFromPoolAsync_ptsz))
		return fn(dptr, bytesize, pool, hStream);
	r = reserve(dev, bytes);
	if (r == CUDA_SUCCESS) {
		r = fn(dptr, bytesize, pool, hStream);
		if (r == CUDA_SUCCESS)
			commit(GS__ALLOC_ASYNC, *dptr, bytes, dev,
			       current_ctx());
		else
			release(dev, bytes);
	}
	errno = saved;
	return r;
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                 CUmemoryPool pool, CUstream hStream)
{
	if (!gs__ready())
		return GS__NOT_READY;
	return alloc_pool(gs__real.cuMemAllocFromPoolAsync, dptr, bytesize,
	                  pool, hStream);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                      CUmemoryPool pool, CUstream hStream)
{
	if (!gs__ready())
		return GS__NOT_READY;
	return alloc_pool(gs__real.cuMemAllocFromPoolAsync_ptsz, dptr, bytesize,
	                  pool, hStream);
}

static CUresult free_async(__typeof__(&cuMemFreeAsync) fn, CUdeviceptr dptr,
                           CUstream hStream)
{
	int saved = errno;
	struct gs__alloc a;
	CUresult r;

	if (gs__g.region == NULL)
		return fn(dptr, hStream);
	if (!take_ptr(dptr, &a)) {
		r = fn(dptr, hStream);
		if (r == CUDA_SUCCESS &&
		    !gs__gmem_capturing(hStream, fn == gs__real.cuMemFreeAsync_ptsz))
			gs__gmem_freed(dptr); /* a graph allocation's end */
		errno = saved;
		return r;
	}
	r = fn(dptr, hStream);
	if (r == CUDA_SUCCESS)
		release(a.dev, a.bytes);
	else
		(void)gs__ptrmap_put(&a);
	errno = saved;
	return r;
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	if (!gs__ready())
		return GS__NOT_READY;
	return free_async(gs__real.cuMemFreeAsync, dptr, hStream);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	if (!gs__ready())
		return GS__NOT_READY;
	return free_async(gs__real.cuMemFreeAsync_ptsz, dptr, hStream);
}

/* ---- virtual memory management ---------------------------------------- */

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags)
{
	int saved = errno, dev = -1;
	uint64_t bytes = size;
	bool on_dev;
	CUresult r;

	if (!gs__ready())
		return GS__NOT_READY;
	on_dev = prop != NULL &&
	         prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
	         gs__enforcing();
	if (size != 0 && on_dev)
		dev = gs__dev_slot(prop->location.id, NULL);
	if (dev < 0 && on_dev && gs__dev_refused(prop->location.id))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (dev < 0)
		return gs__real.cuMemCreate(handle, size, prop, flags);
	r = reserve(dev, bytes);
	if (r == CUDA_SUCCESS) {
		r = gs__real.cuMemCreate(handle, size, prop, flags);
		if (r == CUDA_SUCCESS)
			commit(GS__ALLOC_VMM, *handle, bytes, dev, NULL);
		else
			release(dev, bytes);
	}
	errno = saved;
	return r;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	int saved = errno;
	struct gs__alloc a;
	CUresult r;

	if (!gs__ready())
		return GS__NOT_READY;
	if (gs__g.region == NULL || !gs__ptrmap_take(GS__ALLOC_VMM, handle, &a))
		return gs__real.cuMemRelease(handle);
	r = gs__real.cuMemRelease(handle);
	if (r == CUDA_SUCCESS)
		release(a.dev, a.bytes);
	else
		(void)gs__ptrmap_put(&a);
	errno = saved;
	return r;
}

/* ---- arrays ----------------------------------------------------------- */

static uint64_t format_bytes(CUarray_format f)
{
	switch ((int)f) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		return 1;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		return 2;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		return 4;
	default:
		return 4; /* compressed and planar formats: at most this */
	}
}

static uint64_t dim(size_t x)
{
	return x ? (uint64_t)x : 1;
}

/* Bytes of a 3D descriptor's level `l` (0 = the array itself). */
static uint64_t desc3d_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned l)
{
	uint64_t w = dim(d->Width >> l),
	         h = d->Height ? dim(d->Height >> l) : 1;
	uint64_t z = d->Depth ? d->Depth : 1;

	if (!(d->Flags & CUDA_ARRAY3D_LAYERED) && d->Depth)
		z = dim(d->Depth >> l);
	return round_up(w * h * z * d->NumChannels * format_bytes(d->Format),
	                GS_ALLOC_ALIGN);
}

/* The driver's own figure for an array, or `est` when it gives none. */
static uint64_t array_actual(CUarray a, CUdevice ord, uint64_t est)
{
	CUDA_ARRAY_MEMORY_REQUIREMENTS m;

	if (gs__real.cuArrayGetMemoryRequirements == NULL ||
	    gs__real.cuArrayGetMemoryRequirements(&m, a, ord) != CUDA_SUCCESS ||
	    m.size == 0)
		return est;
	return round_up(m.size, GS_ALLOC_ALIGN);
}

static CUresult array_finish(uint8_t kind, uint64_t key, int dev, uint64_t est,
                             uint64_t act, CUresult (*undo)(uint64_t))
{
	if (!adjust(dev, est, act)) {
		(void)undo(key);
		release(dev, est);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	commit(kind, key, act, dev, current_ctx());
	return CUDA_SUCCESS;
}

static CUresult undo_array(uint64_t key)
{
	return gs__real.cuArrayDestroy((CUarray)(uintptr_t)key);
}

static CUresult undo_mipmap(uint64_t key)
{
	return gs__real.cuMipmappedArrayDestroy(
	    (CUmipmappedArray)(uintptr_t)key);
}

CUresult cuArrayCreate_v2(CUarray *pHandle,
                          const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
	int saved = errno, dev;
	CUdevice ord;
	uint64_t est;
	CUresult r;

	if (!gs__ready())
		return GS__NOT_READY;
	if (pAllocateArray == NULL || !tracked(&dev, &ord))
		return gs__real.cuArrayCreate_v2(pHandle, pAllocateArray);
	est =
	    round_up(dim(pAllocateArray->Width) * dim(pAllocateArray->Height) *
	                 pAllocateArray->NumChannels *
	                 format_bytes(pAllocateArray->Format),
	             GS_ALLOC_ALIGN);
	r = reserve(dev, est);
	if (r != CUDA_SUCCESS)
		goto out;
	r = gs__real.cuArrayCreate_v2(pHandle, pAllocateArray);
	if (r != CUDA_SUCCESS) {
		release(dev, est);
		goto out;
	}
	r = array_finish(GS__ALLOC_ARRAY, (uintptr_t)*pHandle, dev, est,
	                 array_actual(*pHandle, ord, est), undo_array);
out:
	errno = saved;
	return r;
}

CUresult cuArray3DCreate_v2(CUarray *pHandle,
                            const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
	int saved = errno, dev;
	CUdevice ord;
	uint64_t est;
	CUresult r;

	if (!gs__ready())
		return GS__NOT_READY;
	if (pAllocateArray == NULL || !tracked(&dev, &ord))
		return gs__real.cuArray3DCreate_v2(pHandle, pAllocateArray);
	est = desc3d_bytes(pAllocateArray, 0);
	r = reserve(dev, est);
	if (r != CUDA_SUCCESS)
		goto out;
	r = gs__real.cuArray3DCreate_v2(pHandle, pAllocateArray);
	if (r != CUDA_SUCCESS) {
		release(dev, est);
		goto out;
	}
	r = array_finish(GS__ALLOC_ARRAY, (uintptr_t)*pHandle, dev, est,
	                 array_actual(*pHandle, ord, est), undo_array);
out:
	errno = saved;
	return r;
}

CUresult cuArrayDestroy(CUarray hArray)
{
	int saved = errno;
	struct gs__alloc a;
	CUresult r;

	if (!gs__ready())
		return GS__NOT_READY;
	if (gs__g.region == NULL ||
	    !gs__ptrmap_take(GS__ALLOC_ARRAY, (uintptr_t)hArray, &a))
		return gs__real.cuArrayDestroy(hArray);
	r = gs__real.cuArrayDestroy(hArray);
	if (r == CUDA_SUCCESS)
		release(a.dev, a.bytes);
	else
		(void)gs__ptrmap_put(&a);
	errno = saved;
	return r;
}

CUresult
cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                       const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                       unsigned int numMipmapLevels)
{
	int saved = errno, dev;
	CUdevice ord;
	uint64_t est = 0, act;
	CUDA_ARRAY_MEMORY_REQUIREMENTS m;
	CUresult r;

	if (!gs__ready())
		return GS__NOT_READY;
	if (pMipmappedArrayDesc == NULL || !tracked(&dev, &ord))
		return gs__real.cuMipmappedArrayCreate(
		    pHandle, pMipmappedArrayDesc, numMipmapLevels);
	for (unsigned l = 0; l < numMipmapLevels && l < 64; l++)
		est += desc3d_bytes(pMipmappedArrayDesc, l);
	r = reserve(dev, est);
	if (r != CUDA_SUCCESS)
		goto out;
	r = gs__real.cuMipmappedArrayCreate(pHandle, pMipmappedArrayDesc,
	                                    numMipmapLevels);
	if (r != CUDA_SUCCESS) {
		release(dev, est);
		goto out;
	}
	act = est;
	if (gs__real.cuMipmappedArrayGetMemoryRequirements != NULL &&
	    gs__real.cuMipmappedArrayGetMemoryRequirements(&m, *pHandle, ord) ==
	        CUDA_SUCCESS &&
	    m.size != 0)
		act = round_up(m.size, GS_ALLOC_ALIGN);
	r = array_finish(GS__ALLOC_MIPMAP, (uintptr_t)*pHandle, dev, est, act,
	                 undo_mipmap);
out:
	errno = saved;
	return r;
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
	int saved = errno;
	struct gs__alloc a;
	CUresult r;

	if (!gs__ready())
		return GS__NOT_READY;
	if (gs__g.region == NULL ||
	    !gs__ptrmap_take(GS__ALLOC_MIPMAP, (uintptr_t)hMipmappedArray, &a))
		return gs__real.cuMipmappedArrayDestroy(hMipmappedArray);
	r = gs__real.cuMipmappedArrayDestroy(hMipmappedArray);
	if (r == CUDA_SUCCESS)
		release(a.dev, a.bytes);
	else
		(void)gs__ptrmap_put(&a);
	errno = saved;
	return r;
}

/* ---- views ------------------------------------------------------------ */

CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
	int saved = errno, dev;
	uint64_t used, limit;
	CUresult r;

	if (!gs__ready())
		return GS__NOT_READY;
	r = gs__real.cuMemGetInfo_v2(free, total);
	if (r != CUDA_SUCCESS || !tracked(&dev, NULL))
		return r;
	if (gs_region_mem_view(gs__g.region, &gs__g.proc, dev, &used, &limit) ==
	        GS_OK &&
	    limit != 0) {
		uint64_t room = used < limit ? limit - used : 0;

		if (total != NULL)
			*total = limit;
		if (free != NULL && room < *free)
			*free = room;
	}
	errno = saved;
	return r;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	int saved = errno;
	uint64_t limit;
	CUresult r;

	if (!gs__ready())
		return GS__NOT_READY;
	r = gs__real.cuDeviceTotalMem_v2(bytes, dev);
	if (r != CUDA_SUCCESS || bytes == NULL || !gs__enforcing())
		return r;
	limit = gs__mem_limit();
	if (limit != 0 && limit < *bytes)
		*bytes = limit;
	errno = saved;
	return r;
}

/* ---- contexts --------------------------------------------------------- */

/*
 * This process's device memory on region device `dev` according to NVML
 * (what the driver holds for it: allocations and contexts). False when
 * NVML cannot say.
 */
static bool nvml_self_used(int dev, uint64_t *used)
{
	const char *uuid = gs_region_device_uuid(gs__g.region, dev);
	nvmlProcessInfo_t info[64];
	unsigned int n = 64;
	nvmlDevice_t h;
	unsigned int pid = (unsigned int)getpid();

	if (uuid == NULL || !gs__nvml_ready() ||
	    gs__rnvml.nvmlDeviceGetHandleByUUID == NULL ||
	    gs__rnvml.nvmlDeviceGetComputeRunningProcesses_v3 == NULL ||
	    gs__rnvml.nvmlDeviceGetHandleByUUID(uuid, &h) != NVML_SUCCESS ||
	    gs__rnvml.nvmlDeviceGetComputeRunningProcesses_v3(h, &n, info) !=
	        NVML_SUCCESS)
		return false;
	*used = 0;
	for (unsigned i = 0; i < n && i < 64; i++)
		if (info[i].pid == pid)
			*used = info[i].usedGpuMemory;
	return true;
}

static uint64_t ctx_estimate(int dev)
{
	uint64_t learned = gs_region_ctx_overhead(gs__g.region, dev);

	if (learned != 0)
		return learned;
	return gs__g.cfg.ctx_overhead_set ? gs__g.cfg.ctx_overhead
	                                  : GS_CTX_OVERHEAD_DEFAULT;
}

struct ctx_charge {
	CUdevice ord;
	int dev;
	uint64_t est;
	uint64_t before;
	bool measured;
};

/* Before a context is created on `ord`: reserve its estimated cost. */
static CUresult ctx_begin(CUdevice ord, struct ctx_charge *c)
{
	CUresult r;

	c->ord = ord;
	c->dev = gs__enforcing() ? gs__dev_slot(ord, NULL) : -1;
	if (c->dev < 0)
		return gs__dev_refused(ord) ? CUDA_ERROR_DEVICE_UNAVAILABLE
		                            : CUDA_SUCCESS;
	/* A context takes GPU memory: a process that joined its slice
	 * while it is parked (or is being swapped out) makes none until
	 * its GPU calls may go on (swap.c's stop). */
	gs__swap_wait();
	c->est = ctx_estimate(c->dev);
	r = reserve(c->dev, c->est);
	if (r != CUDA_SUCCESS) {
		c->dev = -1;
		return r;
	}
	c->measured = nvml_self_used(c->dev, &c->before);
	return CUDA_SUCCESS;
}

/*
 * After the driver answered `r` for context `ctx`: settle the charge.
 * Returns what the caller returns: `r`, or CUDA_ERROR_OUT_OF_MEMORY when
 * the measured cost does not fit (the context is destroyed by `undo`).
 */
static CUresult ctx_end(struct ctx_charge *c, CUresult r, CUcontext ctx,
                        CUresult (*undo)(CUcontext, CUdevice),
                        uint64_t *charged)
{
	uint64_t after, act;

	if (c->dev < 0)
		return r;
	if (r != CUDA_SUCCESS) {
		release(c->dev, c->est);
		return r;
	}
	act = c->est;
	if (c->measured && nvml_self_used(c->dev, &after) &&
	    after > c->before) {
		act = after - c->before;
		/* Learned for the others, where the shared file is ours to
		 * write (not a daemon's). */
		gs_region_ctx_overhead_learn(gs__g.region, c->dev, act);
	}
	if (!adjust(c->dev, c->est, act)) {
		(void)undo(ctx, c->ord);
		release(c->dev, c->est);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (charged != NULL)
		*charged = act;
	commit(GS__ALLOC_CTX, (uintptr_t)ctx, act, c->dev, ctx);
	return r;
}

/*
 * A context the GPU had no memory for (`r`), in a slice that may swap:
 * asks the daemon for its cost (swapneed.c); true when it made room and
 * the caller should try again.
 */
static bool ctx_room(const struct ctx_charge *c, CUresult r)
{
	return r == CUDA_ERROR_OUT_OF_MEMORY && c->dev >= 0 &&
	       gs__swap_backed() && gs__swap_need(c->dev, c->est);
}

static CUresult undo_ctx(CUcontext ctx, CUdevice ord)
{
	(void)ord;
	return gs__real.cuCtxDestroy_v2(ctx);
}

CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	struct ctx_charge c;
	CUresult r;

	if (!gs__ready())
		return GS__NOT_READY;
	r = ctx_begin(dev, &c);
	if (r != CUDA_SUCCESS)
		return r;
	gs__launch_ctx_leaving(NULL);
	r = gs__real.cuCtxCreate(pctx, flags, dev);
	for (int i = 0; i < GS__NEED_TRIES && ctx_room(&c, r); i++)
		r = gs__real.cuCtxCreate(pctx, flags, dev);
	r = ctx_end(&c, r, r == CUDA_SUCCESS ? *pctx : NULL, undo_ctx, NULL);
	gs__launch_ctx_current(r == CUDA_SUCCESS ? *pctx : NULL);
	return r;
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	struct ctx_charge c;
	CUresult r;

	if (!gs__ready())
		return GS__NOT_READY;
	r = ctx_begin(dev, &c);
	if (r != CUDA_SUCCESS)
		return r;
	gs__launch_ctx_leaving(NULL);
	r = gs__real.cuCtxCreate_v2(pctx, flags, dev);
	for (int i = 0; i < GS__NEED_TRIES && ctx_room(&c, r); i++)
		r = gs__real.cuCtxCreate_v2(pctx, flags, dev);
	r = ctx_end(&c, r, r == CUDA_SUCCESS ? *pctx : NULL, undo_ctx, NULL);
	gs__launch_ctx_current(r == CUDA_SUCCESS ? *pctx : NULL);
	return r;
}

CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
                        int numParams, unsigned int flags, CUdevice dev)
{
	struct ctx_charge c;
	CUresult r;

	if (!gs__ready())
		return GS__NOT_READY;
	r = ctx_begin(dev, &c);
	if (r != CUDA_SUCCESS)
		return r;
	gs__launch_ctx_leaving(NULL);
	r = gs__real.cuCtxCreate_v3(pctx, paramsArray, numParams, flags, dev);
	for (int i = 0; i < GS__NEED_TRIES && ctx_room(&c, r); i++)
		r = gs__real.cuCtxCreate_v3(pctx, paramsArray, numParams, flags, dev);
	r = ctx_end(&c, r, r == CUDA_SUCCESS ? *pctx : NULL, undo_ctx, NULL);
	gs__launch_ctx_current(r == CUDA_SUCCESS ? *pctx : NULL);
	return r;
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                        unsigned int flags, CUdevice dev)
{
	struct ctx_charge c;
	CUresult r;

	if (!gs__ready())
		return GS__NOT_READY;
	r = ctx_begin(dev, &c);
	if (r != CUDA_SUCCESS)
		return r;
	gs__launch_ctx_leaving(NULL);
	r = gs__real.cuCtxCreate_v4(pctx, ctxCreateParams, flags, dev);
	for (int i = 0; i < GS__NEED_TRIES && ctx_room(&c, r); i++)
		r = gs__real.cuCtxCreate_v4(pctx, ctxCreateParams, flags, dev);
	r = ctx_end(&c, r, r == CUDA_SUCCESS ? *pctx : NULL, undo_ctx, NULL);
	gs__launch_ctx_current(r == CUDA_SUCCESS ? *pctx : NULL);
	return r;
}

static void release_alloc(const struct gs__alloc *a, void *arg)
{
	(void)arg;
	release(a->dev, a->bytes);
}

void gs__mem_ctx_gone(CUcontext ctx)
{
	if (gs__g.region != NULL && ctx != NULL) {
		gs__ptrmap_drain_ctx(ctx, release_alloc, NULL);
		gs__swap_ctx_gone(ctx);
		gs__gmem_ctx_gone(ctx);
	}
}

static CUresult ctx_destroy(__typeof__(&cuCtxDestroy) fn, CUcontext ctx)
{
	int saved = errno;
	CUresult r;

	gs__launch_ctx_gone(ctx);
	r = fn(ctx);
	gs__dev_ctx_gone(); /* the current context may have been it */
	if (r == CUDA_SUCCESS)
		gs__mem_ctx_gone(ctx);
	errno = saved;
	return r;
}

CUresult cuCtxDestroy(CUcontext ctx)
{
	if (!gs__ready())
		return GS__NOT_READY;
	return ctx_destroy(gs__real.cuCtxDestroy, ctx);
}

CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	if (!gs__ready())
		return GS__NOT_READY;
	return ctx_destroy(gs__real.cuCtxDestroy_v2, ctx);
}

static CUresult undo_primary(CUcontext ctx, CUdevice ord)
{
	(void)ctx;
	return gs__real.cuDevicePrimaryCtxRelease_v2(ord);
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	int saved = errno, active = 0;
	unsigned int fl;
	struct ctx_charge c = {.dev = -1};
	bool first;
	CUresult r;

	if (!gs__ready())
		return GS__NOT_READY;
	if (dev < 0 || dev >= GS_SHIM_MAX_ORDINALS)
		return gs__real.cuDevicePrimaryCtxRetain(pctx, dev);
	first = !gs__g.ord[dev].primary_charged &&
	        (gs__real.cuDevicePrimaryCtxGetState == NULL ||
	         gs__real.cuDevicePrimaryCtxGetState(dev, &fl, &active) !=
	             CUDA_SUCCESS ||
	         !active);
	if (first) {
		r = ctx_begin(dev, &c);
		if (r != CUDA_SUCCESS)
			goto out;
	}
	r = gs__real.cuDevicePrimaryCtxRetain(pctx, dev);
	for (int i = 0; first && i < GS__NEED_TRIES && ctx_room(&c, r); i++)
		r = gs__real.cuDevicePrimaryCtxRetain(pctx, dev);
	if (r == CUDA_SUCCESS) {
		__atomic_add_fetch(&primary_refs[dev], 1, __ATOMIC_RELAXED);
		primary_ctx[dev] = *pctx;
	}
	if (first) {
		r = ctx_end(&c, r, r == CUDA_SUCCESS ? *pctx : NULL,
		            undo_primary, &gs__g.ord[dev].primary_charge);
		if (r == CUDA_SUCCESS && c.dev >= 0)
			gs__g.ord[dev].primary_charged = true;
		else if (r == CUDA_ERROR_OUT_OF_MEMORY)
			__atomic_sub_fetch(&primary_refs[dev], 1,
			                   __ATOMIC_RELAXED);
	}
out:
	errno = saved;
	return r;
}

/* The primary context of `dev` is going away (last release, or reset). */
static void primary_gone(CUdevice dev)
{
	CUcontext ctx = primary_ctx[dev];

	gs__dev_ctx_gone();
	gs__mem_ctx_gone(ctx);
	gs__g.ord[dev].primary_charged = false;
	primary_ctx[dev] = NULL;
}

static CUresult primary_release(__typeof__(&cuDevicePrimaryCtxRelease) fn,
                                CUdevice dev)
{
	int saved = errno, active = 1;
	unsigned int fl;
	bool last;
	CUresult r;

	if (dev < 0 || dev >= GS_SHIM_MAX_ORDINALS)
		return fn(dev);
	last = __atomic_load_n(&primary_refs[dev], __ATOMIC_RELAXED) <= 1;
	if (last && primary_ctx[dev] != NULL)
		gs__launch_ctx_gone(primary_ctx[dev]);
	r = fn(dev);
	if (r == CUDA_SUCCESS) {
		if (primary_refs[dev] > 0)
			__atomic_sub_fetch(&primary_refs[dev], 1,
			                   __ATOMIC_RELAXED);
		if (gs__real.cuDevicePrimaryCtxGetState != NULL &&
		    gs__real.cuDevicePrimaryCtxGetState(dev, &fl, &active) ==
		        CUDA_SUCCESS &&
		    !active)
			primary_gone(dev);
	}
	errno = saved;
	return r;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	if (!gs__ready())
		return GS__NOT_READY;
	return primary_release(gs__real.cuDevicePrimaryCtxRelease, dev);
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	if (!gs__ready())
		return GS__NOT_READY;
	return primary_release(gs__real.cuDevicePrimaryCtxRelease_v2, dev);
}

static CUresult primary_reset(__typeof__(&cuDevicePrimaryCtxReset) fn,
                              CUdevice dev)
{
	int saved = errno;
	CUresult r;

	if (dev < 0 || dev >= GS_SHIM_MAX_ORDINALS)
		return fn(dev);
	if (primary_ctx[dev] != NULL)
		gs__launch_ctx_gone(primary_ctx[dev]);
	r = fn(dev);
	if (r == CUDA_SUCCESS) {
		primary_refs[dev] = 0;
		primary_gone(dev);
	}
	errno = saved;
	return r;
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
	if (!gs__ready())
		return GS__NOT_READY;
	return primary_reset(gs__real.cuDevicePrimaryCtxReset, dev);
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	if (!gs__ready())
		return GS__NOT_READY;
	return primary_reset(gs__real.cuDevicePrimaryCtxReset_v2, dev);
}

/* After fork, in the child (registered with shim.c at load). */
static void atfork_child(void)
{
	gs__ptrmap_reset();
	for (int i = 0; i < GS_SHIM_MAX_ORDINALS; i++) {
		primary_refs[i] = 0;
		primary_ctx[i] = NULL;
	}
}

__attribute__((constructor)) static void mem_register(void)
{
	gs__on_fork_child(atfork_child);
}
