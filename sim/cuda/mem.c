/*
 * mem.c - device memory calls of the sim driver: allocations (plain,
 * pitched, managed, stream-ordered - in a stream capture, graph memory
 * nodes (graphmem.c) - pools), host memory, pointer
 * attributes, atomics and linear-texture queries, and freeing what a
 * context leaves behind. The address table, charging and mappings they
 * stand on are addr.c's; virtual memory management is vmm.c's, arrays
 * array.c's, copies and memsets copy.c's.
 *
 * Addresses. A device allocation is an anonymous mapping in this process
 * and its device address is the mapping's address, so device pointers are
 * unique, never collide with host memory, and copies are plain memcpy.
 * Every allocation keeps its contents in sparse host memory (pages made
 * when touched; addr.c). The engine's memory count is what limits
 * allocation, not the host's memory.
 *
 * Accounting. Every allocation charges its size, rounded up to
 * GS__ALLOC_ALIGN, to its device's engine in the node state (all
 * processes together), and to the process's slot (which an MPS client's
 * pinned memory limit caps). Freed memory goes back at once; memory of a
 * process that dies goes back when it is reaped.
 *
 * Copies take no simulated GPU time; a synchronous copy waits for the work
 */
#include "cuda_int.h"
#include "halloc.h"
#include "mem_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- cuMemAlloc & co ------------------------------------------------- */

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	struct gs__ctx *ctx;
	CUresult r;

	if (dptr == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__ctx_get(&ctx);
	if (r == CUDA_SUCCESS)
		r = gs__dev_alloc(ctx, bytesize, GS__A_DEVICE, NULL, dptr);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
                                    size_t WidthInBytes, size_t Height,
                                    unsigned int ElementSizeBytes)
{
	struct gs__ctx *ctx;
	uint64_t pitch;
	CUresult r;

	if (dptr == NULL || pPitch == NULL || WidthInBytes == 0 ||
	    Height == 0 ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 &&
	     ElementSizeBytes != 16))
		return CUDA_ERROR_INVALID_VALUE;
	pitch = gs__round_up(WidthInBytes, 512);
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__ctx_get(&ctx);
	if (r == CUDA_SUCCESS)
		r = gs__dev_alloc(ctx, pitch * Height, GS__A_DEVICE, NULL,
		                  dptr);
	gs__unlock();
	if (r == CUDA_SUCCESS)
		*pPitch = (size_t)pitch;
	return r;
}

CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
                                   unsigned int flags)
{
	struct gs__ctx *ctx;
	CUresult r;

	if (dptr == NULL ||
	    (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__ctx_get(&ctx);
	if (r == CUDA_SUCCESS)
		r = gs__dev_alloc(ctx, bytesize, GS__A_MANAGED, NULL, dptr);
	gs__unlock();
	return r;
}

static CUresult free_dev(CUdeviceptr dptr)
{
	struct gs__alloc *a;
	struct gs__ctx *ctx;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__ctx_get(&ctx);
	if (r == CUDA_SUCCESS || r == CUDA_ERROR_INVALID_CONTEXT) {
		/* freeing works without a context being current too */
		r = CUDA_SUCCESS;
		if (dptr == 0)
			goto out;
		a = gs__alloc_exact(dptr);
		if (a != NULL && a->kind == GS__A_GRAPH)
			r = gs__gmem_free_call(a); /* a graph allocation */
		else if (a == NULL ||
		         (a->kind != GS__A_DEVICE && a->kind != GS__A_MANAGED))
			r = CUDA_ERROR_INVALID_VALUE;
		else
			gs__alloc_free(a);
	}
out:
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
	return free_dev(dptr);
}

CUresult CUDAAPI cuMemGetInfo_v2(size_t *free, size_t *total)
{
	struct gs__ctx *ctx;
	struct gs_sim_state *st;
	CUresult r;

	if (free == NULL || total == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__ctx_get(&ctx);
	if (r == CUDA_SUCCESS) {
		struct gs__dev *d = &gs__drv.dev[ctx->dev];

		st = gs__state_lock(NULL, &r);
		if (st != NULL) {
			const struct gs_sim_engine *e =
			    &st->gpus[d->gpu].engine[d->engine];
			(void)gs_sim_reap_maybe(st, gs_sim_now_ns(), false);
			*total = (size_t)e->mem_total;
			*free = (size_t)(e->mem_used < e->mem_total
			                     ? e->mem_total - e->mem_used
			                     : 0);
			gs__state_unlock();
		}
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize,
                                         CUdeviceptr dptr)
{
	struct gs__alloc *a;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	a = gs__alloc_find(dptr, 0);
	if (a == NULL || a->kind == GS__A_RESERVE) {
		r = CUDA_ERROR_NOT_FOUND;
	} else {
		if (pbase != NULL)
			*pbase = (CUdeviceptr)a->base;
		if (psize != NULL)
			*psize = (size_t)a->size;
	}
	gs__unlock();
	return r;
}

/* ---- host memory ----------------------------------------------------- */

static CUresult host_alloc(void **pp, size_t bytesize, unsigned int flags)
{
	struct gs__ctx *ctx;
	struct gs__alloc a = {0};
	long page = sysconf(_SC_PAGESIZE);
	void *p;
	CUresult r;

	if (pp == NULL || bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__ctx_get(&ctx);
	if (r != CUDA_SUCCESS)
		goto out;
	a.map_len = gs__round_up(bytesize, (uint64_t)page);
	p = gs__map_range(a.map_len, true);
	if (p == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	a.base = (uint64_t)(uintptr_t)p;
	a.size = bytesize;
	a.kind = GS__A_HOST;
	a.backed = true;
	a.dev = ctx->dev;
	a.ctx = ctx;
	a.host_flags = flags;
	if (!gs__alloc_insert(&a)) {
		gs__unmap_range(p, a.map_len, true);
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	*pp = p;
out:
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	return host_alloc(pp, bytesize, 0);
}

CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	if (Flags &
	    ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
	                CU_MEMHOSTALLOC_WRITECOMBINED))
		return CUDA_ERROR_INVALID_VALUE;
	return host_alloc(pp, bytesize, Flags);
}

CUresult CUDAAPI cuMemFreeHost(void *p)
{
	struct gs__alloc *a;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	a = gs__alloc_exact((uint64_t)(uintptr_t)p);
	if (a == NULL || a->kind != GS__A_HOST)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		gs__alloc_free(a);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p,
                                              unsigned int Flags)
{
	struct gs__alloc *a;
	CUresult r;

	if (pdptr == NULL || Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	a = gs__alloc_find((uint64_t)(uintptr_t)p, 0);
	if (a == NULL || (a->kind != GS__A_HOST && a->kind != GS__A_REGISTERED))
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*pdptr = (CUdeviceptr)(uintptr_t)p;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
	struct gs__alloc *a;
	CUresult r;

	if (pFlags == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	a = gs__alloc_find((uint64_t)(uintptr_t)p, 0);
	if (a == NULL || (a->kind != GS__A_HOST && a->kind != GS__A_REGISTERED))
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*pFlags = a->host_flags;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t bytesize,
                                      unsigned int Flags)
{
	struct gs__ctx *ctx;
	struct gs__alloc a = {0};
	CUresult r;

	if (p == NULL || bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__ctx_get(&ctx);
	if (r != CUDA_SUCCESS)
		goto out;
	if (gs__alloc_find((uint64_t)(uintptr_t)p, 0) != NULL ||
	    gs__alloc_find((uint64_t)(uintptr_t)p + bytesize - 1, 0) != NULL) {
		r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
		goto out;
	}
	a.base = (uint64_t)(uintptr_t)p;
	a.size = bytesize;
	a.kind = GS__A_REGISTERED;
	a.backed = true;
	a.dev = ctx->dev;
	a.ctx = ctx;
	a.host_flags = Flags;
	if (!gs__alloc_insert(&a))
		r = CUDA_ERROR_OUT_OF_MEMORY;
out:
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemHostUnregister(void *p)
{
	struct gs__alloc *a;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	a = gs__alloc_exact((uint64_t)(uintptr_t)p);
	if (a == NULL || a->kind != GS__A_REGISTERED)
		r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	else
		gs__alloc_remove(a);
	gs__unlock();
	return r;
}

/* ---- stream-ordered allocation and pools ------------------------------ */

/*
 * cuMemAllocAsync in a stream capture: a memory-allocation node, whose
 * address the caller gets now and whose memory exists while the graph
 * runs it (graphmem.c). The pool gives the node its device. Lock held.
 */
static CUresult capture_alloc(struct gs__stream *s, struct gs__ctx *ctx,
                              const struct gs__pool *pool, size_t bytesize,
                              CUdeviceptr *dptr)
{
	CUDA_MEM_ALLOC_NODE_PARAMS p = {0};
	struct gs__node *n = gs__node_new(GS__N_MEM_ALLOC);
	CUresult r;

	if (n == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.poolProps.location.id = pool->dev;
	p.bytesize = bytesize;
	r = gs__gmem_alloc_node_init(n, ctx, &p);
	if (r == CUDA_SUCCESS)
		r = gs__capture_node(s, n);
	if (r != CUDA_SUCCESS) {
		gs__graph_node_free(n);
		return r;
	}
	*dptr = (CUdeviceptr)n->gmem.dptr;
	return CUDA_SUCCESS;
}

/* cuMemFreeAsync in a stream capture: a memory-free node, for a graph
 * allocation only (as cuGraphAddMemFreeNode; anything else ends the
 * capture). Lock held. */
static CUresult capture_free(struct gs__stream *s, CUdeviceptr dptr)
{
	struct gs__node *n = gs__node_new(GS__N_MEM_FREE);
	CUresult r;

	if (n == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = gs__gmem_free_node_init(n, s->capture->graph, (uint64_t)dptr);
	if (r != CUDA_SUCCESS)
		gs__capture_invalidate(s, r);
	else
		r = gs__capture_node(s, n);
	if (r != CUDA_SUCCESS)
		gs__graph_node_free(n);
	return r;
}

CUresult gs__mem_alloc_async(CUdeviceptr *dptr, size_t bytesize,
                             CUmemoryPool pool, CUstream hStream, bool pt)
{
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	struct gs__pool *p;
	CUresult r;

	if (dptr == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__stream_get(hStream, pt, &ctx, &s);
	if (r != CUDA_SUCCESS)
		goto out;
	if (pool != NULL) {
		if (!gs__h_is(pool, GS__H_POOL)) {
			r = CUDA_ERROR_INVALID_VALUE;
			goto out;
		}
		p = (struct gs__pool *)pool;
		if (p->dev != ctx->dev) {
			r = CUDA_ERROR_INVALID_VALUE;
			goto out;
		}
	} else {
		p = gs__drv.dev[ctx->dev].cur_pool;
		if (p == NULL) {
			CUmemoryPool dp;

			gs__unlock();
			r = cuDeviceGetDefaultMemPool(&dp, ctx->dev);
			gs__lock();
			if (r != CUDA_SUCCESS)
				goto out;
			p = (struct gs__pool *)dp;
		}
	}
	if (s->capture != NULL)
		r = capture_alloc(s, ctx, p, bytesize, dptr);
	else
		r = gs__dev_alloc(ctx, bytesize, GS__A_DEVICE, p, dptr);
out:
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize,
                                 CUstream hStream)
{
	return gs__mem_alloc_async(dptr, bytesize, NULL, hStream, false);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                         CUmemoryPool pool, CUstream hStream)
{
	if (pool == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return gs__mem_alloc_async(dptr, bytesize, pool, hStream, false);
}

CUresult gs__mem_free_async(CUdeviceptr dptr, CUstream hStream, bool pt)
{
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__stream_get(hStream, pt, &ctx, &s);
	if (r == CUDA_SUCCESS && s->capture != NULL) {
		r = capture_free(s, dptr);
		gs__unlock();
		return r;
	}
	gs__unlock();
	if (r != CUDA_SUCCESS)
		return r;
	/* Freed at once: the memory is back before the stream reaches the
	 * free, which only makes the sim more generous than the GPU. */
	return free_dev(dptr);
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	return gs__mem_free_async(dptr, hStream, false);
}

CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool,
                                 const CUmemPoolProps *poolProps)
{
	struct gs__pool *p;
	CUresult r;

	if (pool == NULL || poolProps == NULL ||
	    poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (gs__dev_get(poolProps->location.id) == NULL) {
		gs__unlock();
		return CUDA_ERROR_INVALID_DEVICE;
	}
	p = gs__calloc(1, sizeof(*p));
	if (p == NULL || !gs__h_add(p, GS__H_POOL)) {
		free(p);
		gs__unlock();
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	p->dev = poolProps->location.id;
	p->max_size = poolProps->maxSize;
	p->reuse_follow = p->reuse_opportunistic = p->reuse_internal = 1;
	*pool = (CUmemoryPool)p;
	gs__unlock();
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
	struct gs__pool *p = (struct gs__pool *)pool;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(p, GS__H_POOL) || p->is_default) {
		gs__unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	for (int i = 0; i < gs__drv.n_allocs; i++)
		if (gs__drv.allocs[i].pool == p)
			gs__drv.allocs[i].pool = NULL;
	for (int i = 0; i < gs__drv.n_dev; i++)
		if (gs__drv.dev[i].cur_pool == p)
			gs__drv.dev[i].cur_pool = gs__drv.dev[i].default_pool;
	gs__h_del(p);
	free(p);
	gs__unlock();
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(pool, GS__H_POOL))
		r = CUDA_ERROR_INVALID_VALUE;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool,
                                       CUmemPool_attribute attr, void *value)
{
	struct gs__pool *p = (struct gs__pool *)pool;
	CUresult r;

	if (value == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(p, GS__H_POOL)) {
		gs__unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
		p->reuse_follow = *(int *)value;
		break;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
		p->reuse_opportunistic = *(int *)value;
		break;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		p->reuse_internal = *(int *)value;
		break;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		p->release_threshold = *(cuuint64_t *)value;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		if (*(cuuint64_t *)value != 0) {
			r = CUDA_ERROR_INVALID_VALUE;
			break;
		}
		if (attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH)
			p->used_high = p->used;
		else
			p->reserved_high = p->used;
		break;
	default:
		r = CUDA_ERROR_INVALID_VALUE;
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool,
                                       CUmemPool_attribute attr, void *value)
{
	struct gs__pool *p = (struct gs__pool *)pool;
	CUresult r;

	if (value == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(p, GS__H_POOL)) {
		gs__unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
		*(int *)value = p->reuse_follow;
		break;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
		*(int *)value = p->reuse_opportunistic;
		break;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		*(int *)value = p->reuse_internal;
		break;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		*(cuuint64_t *)value = p->release_threshold;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
	case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
		*(cuuint64_t *)value = p->used;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		*(cuuint64_t *)value = p->reserved_high;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		*(cuuint64_t *)value = p->used_high;
		break;
	default:
		r = CUDA_ERROR_INVALID_VALUE;
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool pool,
                                    const CUmemAccessDesc *map, size_t count)
{
	CUresult r;

	if (map == NULL && count > 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(pool, GS__H_POOL))
		r = CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; r == CUDA_SUCCESS && i < count; i++)
		if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
		    gs__dev_get(map[i].location.id) == NULL)
			r = CUDA_ERROR_INVALID_DEVICE;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemPoolGetAccess(CUmemAccess_flags *flags,
                                    CUmemoryPool memPool,
                                    CUmemLocation *location)
{
	CUresult r;

	if (flags == NULL || location == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(memPool, GS__H_POOL))
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*flags = location->id == ((struct gs__pool *)memPool)->dev
		             ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
		             : CU_MEM_ACCESS_FLAGS_PROT_NONE;
	gs__unlock();
	return r;
}


void gs__mem_ctx_gone(struct gs__ctx *ctx)
{
	gs__gmem_ctx_gone(ctx);
	for (int i = gs__drv.n_allocs - 1; i >= 0; i--) {
		if (i >= gs__drv.n_allocs)
			continue;
		struct gs__alloc *a = &gs__drv.allocs[i];

		if (a->ctx == ctx)
			gs__alloc_free(a);
	}
	gs__array_ctx_gone(ctx);
}

/* ---- pointer attributes ----------------------------------------------- */

static CUresult ptr_attr(void *data, CUpointer_attribute attr,
                         const struct gs__alloc *a, uint64_t ptr)
{
	bool host =
	    a != NULL && (a->kind == GS__A_HOST || a->kind == GS__A_REGISTERED);

	switch (attr) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = a ? (CUcontext)a->ctx : NULL;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = a == NULL ? 0
		                        : host    ? CU_MEMORYTYPE_HOST
		                                  : CU_MEMORYTYPE_DEVICE;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		*(CUdeviceptr *)data = a ? (CUdeviceptr)ptr : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		*(void **)data = a && (host || a->kind == GS__A_MANAGED)
		                     ? (void *)(uintptr_t)ptr
		                     : NULL;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
	case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
	case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
		*(int *)data = 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
	case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
		*(unsigned long long *)data = a ? a->base : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(int *)data = a && a->kind == GS__A_MANAGED;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = a ? a->dev : -2;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
		*(int *)data = a && a->kind == GS__A_DEVICE && a->pool == NULL;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
	case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
		*(CUdeviceptr *)data = a ? (CUdeviceptr)a->base : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
	case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
		*(size_t *)data = a ? (size_t)a->size : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(int *)data = a != NULL;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
		*(unsigned long long *)data = 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
		*(unsigned int *)data =
		    a ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE
		      : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		*(CUmemoryPool *)data = a ? (CUmemoryPool)a->pool : NULL;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult CUDAAPI cuPointerGetAttribute(void *data,
                                       CUpointer_attribute attribute,
                                       CUdeviceptr ptr)
{
	struct gs__alloc *a;
	CUresult r;

	if (data == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	a = gs__alloc_find(ptr, 0);
	if (a == NULL || a->kind == GS__A_RESERVE)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		r = ptr_attr(data, attribute, a, ptr);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes,
                                        CUpointer_attribute *attributes,
                                        void **data, CUdeviceptr ptr)
{
	struct gs__alloc *a;
	CUresult r;

	if (attributes == NULL || data == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	a = gs__alloc_find(ptr, 0);
	if (a != NULL && a->kind == GS__A_RESERVE)
		a = NULL;
	for (unsigned i = 0; i < numAttributes && r == CUDA_SUCCESS; i++)
		if (data[i] != NULL)
			r = ptr_attr(data[i], attributes[i], a, ptr);
	gs__unlock();
	return r;
}

/* ---- CUDA 13 queries of atomics and linear textures ---------------- */

/*
 * The sim's GPUs sit on PCIe-like links: no native atomics with the host
 * or between GPUs (as cuDeviceGetP2PAttribute says), so every capability
 * mask is 0. Argument checks follow the driver's documentation.
 */
static CUresult atomic_caps(unsigned int *caps, const CUatomicOperation *ops,
                            unsigned int count, CUdevice a, CUdevice b,
                            bool p2p)
{
	CUresult r;

	if (caps == NULL || ops == NULL || count == 0)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned int i = 0; i < count; i++)
		if ((unsigned)ops[i] >= (unsigned)CU_ATOMIC_OPERATION_MAX)
			return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (gs__dev_get(a) == NULL || (p2p && (gs__dev_get(b) == NULL || a == b)))
		r = CUDA_ERROR_INVALID_DEVICE;
	gs__unlock();
	if (r == CUDA_SUCCESS)
		memset(caps, 0, sizeof(*caps) * count);
	return r;
}

CUresult CUDAAPI cuDeviceGetHostAtomicCapabilities(
    unsigned int *capabilities, const CUatomicOperation *operations,
    unsigned int count, CUdevice dev)
{
	return atomic_caps(capabilities, operations, count, dev, dev, false);
}

CUresult CUDAAPI cuDeviceGetP2PAtomicCapabilities(
    unsigned int *capabilities, const CUatomicOperation *operations,
    unsigned int count, CUdevice srcDevice, CUdevice dstDevice)
{
	return atomic_caps(capabilities, operations, count, srcDevice,
	                   dstDevice, true);
}

/* Elements of a 1D linear texture: 2^27, whatever the format, as on
 * sm_70 and later GPUs for the common formats. */
#define TEX1D_LINEAR_MAX (1u << 27)

CUresult CUDAAPI cuDeviceGetTexture1DLinearMaxWidth(size_t *maxWidthInElements,
                                                    CUarray_format format,
                                                    unsigned numChannels,
                                                    CUdevice dev)
{
	CUresult r;

	if (maxWidthInElements == NULL ||
	    (numChannels != 1 && numChannels != 2 && numChannels != 4))
		return CUDA_ERROR_INVALID_VALUE;
	switch (format) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_HALF:
	case CU_AD_FORMAT_FLOAT:
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (gs__dev_get(dev) == NULL)
		r = CUDA_ERROR_INVALID_DEVICE;
	gs__unlock();
	if (r == CUDA_SUCCESS)
		*maxWidthInElements = TEX1D_LINEAR_MAX;
	return r;
}
