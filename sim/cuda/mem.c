/*
 * mem.c - device memory of the sim: allocations (plain, pitched, managed,
 * stream-ordered, pools), host memory, virtual memory management, arrays,
 * copies and memsets, pointer attributes.
 *
 * Addresses. A device allocation is an anonymous mapping in this process
 * and its device address is the mapping's address, so device pointers are
 * unique, never collide with host memory, and copies are plain memcpy.
 * Allocations up to GS__BACKED_MAX are readable/writable (the kernel only
 * hands out pages that are touched); larger ones are address space only
 * (PROT_NONE, no memory): copies into them are dropped and reads from them
 * give zeros. The engine's memory count is what limits allocation, not
 * the host's memory.
 *
 * Accounting. Every allocation charges its size, rounded up to
 * GS__ALLOC_ALIGN, to its device's engine in the node state (all
 * processes together), and to the process's slot (which an MPS client's
 * pinned memory limit caps). Freed memory goes back at once; memory of a
 * process that dies goes back when it is reaped.
 *
 * Copies take no simulated GPU time; a synchronous copy waits for the work
 * queued before it (the legacy default stream orders after everything).
 */
#include "cuda_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* ---- the sorted allocation table ------------------------------------- */

static int lower_bound(uint64_t p)
{
	int lo = 0, hi = gs__drv.n_allocs;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (gs__drv.allocs[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo; /* first index with base > p */
}

struct gs__alloc *gs__alloc_find(uint64_t p, uint64_t len)
{
	int i = lower_bound(p) - 1;
	struct gs__alloc *a;

	if (i < 0)
		return NULL;
	a = &gs__drv.allocs[i];
	if (p < a->base || p - a->base >= (a->size ? a->size : 1))
		return NULL;
	if (len > a->size - (p - a->base))
		return NULL;
	return a;
}

static struct gs__alloc *alloc_exact(uint64_t base)
{
	int i = lower_bound(base) - 1;

	if (i < 0 || gs__drv.allocs[i].base != base)
		return NULL;
	return &gs__drv.allocs[i];
}

static bool alloc_insert(const struct gs__alloc *a)
{
	int i;

	if (gs__drv.n_allocs == gs__drv.cap_allocs) {
		int ncap = gs__drv.cap_allocs ? gs__drv.cap_allocs * 2 : 64;
		struct gs__alloc *n =
		    realloc(gs__drv.allocs, sizeof(*n) * (size_t)ncap);

		if (n == NULL)
			return false;
		gs__drv.allocs = n;
		gs__drv.cap_allocs = ncap;
	}
	i = lower_bound(a->base);
	memmove(&gs__drv.allocs[i + 1], &gs__drv.allocs[i],
	        sizeof(*a) * (size_t)(gs__drv.n_allocs - i));
	gs__drv.allocs[i] = *a;
	gs__drv.n_allocs++;
	return true;
}

static void alloc_remove(struct gs__alloc *a)
{
	int i = (int)(a - gs__drv.allocs);

	memmove(&gs__drv.allocs[i], &gs__drv.allocs[i + 1],
	        sizeof(*a) * (size_t)(gs__drv.n_allocs - i - 1));
	gs__drv.n_allocs--;
}

/* ---- charging the engine --------------------------------------------- */

CUresult gs__charge(int dev, uint64_t bytes)
{
	struct gs__dev *d = &gs__drv.dev[dev];
	struct gs_sim_state *st;
	struct gs_sim_proc *p;
	struct gs_sim_engine *e;
	CUresult r;

	st = gs__state_lock(d, &r);
	if (st == NULL)
		return r;
	e = &st->gpus[d->gpu].engine[d->engine];
	p = gs__slot(d);
	if (p == NULL) {
		r = CUDA_ERROR_DEVICE_UNAVAILABLE;
		goto out;
	}
	if (p->mps_pinned_mem_limit != 0 &&
	    p->mem_used + bytes > p->mps_pinned_mem_limit) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	if (e->mem_used + bytes > e->mem_total) {
		/* A dead process's memory comes back before we say no. */
		(void)gs_sim_reap(st, gs_sim_now_ns());
		p = gs__slot(d);
		if (p == NULL || e->mem_used + bytes > e->mem_total) {
			r = p ? CUDA_ERROR_OUT_OF_MEMORY
			      : CUDA_ERROR_DEVICE_UNAVAILABLE;
			goto out;
		}
	}
	e->mem_used += bytes;
	p->mem_used += bytes;
out:
	gs__state_unlock();
	return r;
}

void gs__uncharge(int dev, uint64_t bytes)
{
	struct gs__dev *d = &gs__drv.dev[dev];
	struct gs_sim_state *st;
	struct gs_sim_proc *p;
	struct gs_sim_engine *e;
	CUresult r;

	if (bytes == 0)
		return;
	st = gs__state_lock(NULL, &r);
	if (st == NULL)
		return;
	p = gs__slot(d);
	if (p != NULL) {
		e = &st->gpus[d->gpu].engine[d->engine];
		p->mem_used = p->mem_used >= bytes ? p->mem_used - bytes : 0;
		e->mem_used = e->mem_used >= bytes ? e->mem_used - bytes : 0;
	}
	gs__state_unlock();
}

/* ---- mappings -------------------------------------------------------- */

/*
 * Freed backed mappings are kept for reuse by an allocation of the same
 * length (at most MAP_CACHE_N of them, MAP_CACHE_BYTES together, none
 * longer than MAP_CACHE_ONE): mmap + munmap cost the host several
 * microseconds, and a driver's allocator keeps freed memory too. A reused
 * mapping keeps its old contents, as cudaMalloc'ed memory may. Lock held.
 */
#define MAP_CACHE_N     32
#define MAP_CACHE_ONE   (64ULL << 20)
#define MAP_CACHE_BYTES (256ULL << 20)

static struct {
	void *p;
	uint64_t len;
} map_cache[MAP_CACHE_N];
static int map_cached;
static uint64_t map_cached_bytes;

static void *map_range(uint64_t len, bool backed)
{
	void *p;

	if (backed)
		for (int i = 0; i < map_cached; i++)
			if (map_cache[i].len == len) {
				p = map_cache[i].p;
				map_cache[i] = map_cache[--map_cached];
				map_cached_bytes -= len;
				return p;
			}
	p = mmap(NULL, (size_t)len, backed ? PROT_READ | PROT_WRITE : PROT_NONE,
	         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void unmap_range(void *p, uint64_t len, bool backed)
{
	if (backed && len <= MAP_CACHE_ONE && map_cached < MAP_CACHE_N &&
	    map_cached_bytes + len <= MAP_CACHE_BYTES) {
		map_cache[map_cached].p = p;
		map_cache[map_cached].len = len;
		map_cached++;
		map_cached_bytes += len;
		return;
	}
	(void)munmap(p, (size_t)len);
}

/*
 * Allocates `size` bytes of kind `kind` for ctx's device: charges, maps,
 * records. OUT: *dptr. Lock held.
 */
static CUresult dev_alloc(struct gs__ctx *ctx, uint64_t size,
                          enum gs__akind kind, struct gs__pool *pool,
                          CUdeviceptr *dptr)
{
	struct gs__alloc a = {0};
	uint64_t charge = round_up(size, GS__ALLOC_ALIGN);
	long page = sysconf(_SC_PAGESIZE);
	void *p;
	CUresult r;

	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (size > (1ULL << 47))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = gs__charge(ctx->dev, charge);
	if (r != CUDA_SUCCESS)
		return r;
	a.backed = kind == GS__A_MANAGED || size <= GS__BACKED_MAX;
	a.map_len = round_up(size, (uint64_t)page);
	p = map_range(a.map_len, a.backed);
	if (p == NULL) {
		gs__uncharge(ctx->dev, charge);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a.base = (uint64_t)(uintptr_t)p;
	a.size = size;
	a.charged = charge;
	a.kind = kind;
	a.dev = ctx->dev;
	a.ctx = ctx;
	a.pool = pool;
	if (!alloc_insert(&a)) {
		unmap_range(p, a.map_len, a.backed);
		gs__uncharge(ctx->dev, charge);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (pool != NULL) {
		pool->used += charge;
		if (pool->used > pool->used_high)
			pool->used_high = pool->used;
		if (pool->used > pool->reserved_high)
			pool->reserved_high = pool->used;
	}
	*dptr = (CUdeviceptr)a.base;
	return CUDA_SUCCESS;
}

/* Frees one entry (any kind that we mapped). Lock held. */
static void alloc_free(struct gs__alloc *a)
{
	struct gs__alloc copy = *a;

	alloc_remove(a);
	if (copy.map_len != 0)
		unmap_range((void *)(uintptr_t)copy.base, copy.map_len,
		            copy.backed && copy.kind != GS__A_RESERVE);
	if (copy.charged != 0)
		gs__uncharge(copy.dev, copy.charged);
	if (copy.pool != NULL && gs__h_is(copy.pool, GS__H_POOL))
		copy.pool->used = copy.pool->used >= copy.charged
		                      ? copy.pool->used - copy.charged
		                      : 0;
}

/* ---- module globals (module.c) --------------------------------------- */

/*
 * A managed range no context owns: a library's __managed__ variable asked
 * for before any context exists (the CUDA runtime does this at start-up).
 * Like the real driver's managed memory it lives in host memory and is
 * charged to no GPU; it goes with its library. Lock held.
 */
static CUresult managed_unowned(uint64_t size, CUdeviceptr *dptr)
{
	struct gs__alloc a = {0};
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (size > GS__BACKED_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a.backed = true;
	a.map_len = round_up(size, (uint64_t)page);
	p = map_range(a.map_len, true);
	if (p == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a.base = (uint64_t)(uintptr_t)p;
	a.size = size;
	a.kind = GS__A_MANAGED;
	a.dev = 0;
	if (!alloc_insert(&a)) {
		unmap_range(p, a.map_len, true);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*dptr = (CUdeviceptr)a.base;
	return CUDA_SUCCESS;
}

CUresult gs__mem_alloc(struct gs__ctx *ctx, uint64_t size, bool managed,
                       const void *owner, uint64_t *dptr)
{
	CUdeviceptr p;
	CUresult r;

	if (ctx == NULL && !managed)
		return CUDA_ERROR_INVALID_CONTEXT;
	r = ctx == NULL ? managed_unowned(size, &p)
	                : dev_alloc(ctx, size,
	                            managed ? GS__A_MANAGED : GS__A_DEVICE,
	                            NULL, &p);
	if (r != CUDA_SUCCESS)
		return r;
	alloc_exact((uint64_t)p)->owner = owner;
	*dptr = (uint64_t)p;
	return CUDA_SUCCESS;
}

void gs__mem_release(uint64_t dptr, const void *owner)
{
	struct gs__alloc *a = alloc_exact(dptr);

	if (a != NULL && a->owner == owner)
		alloc_free(a);
}

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
		r = dev_alloc(ctx, bytesize, GS__A_DEVICE, NULL, dptr);
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
	pitch = round_up(WidthInBytes, 512);
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__ctx_get(&ctx);
	if (r == CUDA_SUCCESS)
		r = dev_alloc(ctx, pitch * Height, GS__A_DEVICE, NULL, dptr);
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
		r = dev_alloc(ctx, bytesize, GS__A_MANAGED, NULL, dptr);
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
		a = alloc_exact(dptr);
		if (a == NULL ||
		    (a->kind != GS__A_DEVICE && a->kind != GS__A_MANAGED))
			r = CUDA_ERROR_INVALID_VALUE;
		else
			alloc_free(a);
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
	a.map_len = round_up(bytesize, (uint64_t)page);
	p = map_range(a.map_len, true);
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
	if (!alloc_insert(&a)) {
		unmap_range(p, a.map_len, true);
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
	a = alloc_exact((uint64_t)(uintptr_t)p);
	if (a == NULL || a->kind != GS__A_HOST)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		alloc_free(a);
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
	if (!alloc_insert(&a))
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
	a = alloc_exact((uint64_t)(uintptr_t)p);
	if (a == NULL || a->kind != GS__A_REGISTERED)
		r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	else
		alloc_remove(a);
	gs__unlock();
	return r;
}

/* ---- stream-ordered allocation and pools ------------------------------ */

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
	if (s->capture != NULL) {
		r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		goto out;
	}
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
	r = dev_alloc(ctx, bytesize, GS__A_DEVICE, p, dptr);
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
	p = calloc(1, sizeof(*p));
	if (p == NULL || !gs__h_add(p, GS__H_POOL)) {
		free(p);
		gs__unlock();
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	p->dev = poolProps->location.id;
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

/* ---- virtual memory management ---------------------------------------- */

static CUresult check_prop(const CUmemAllocationProp *prop)
{
	if (prop == NULL || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (gs__dev_get(prop->location.id) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAllocationGranularity(
    size_t *granularity, const CUmemAllocationProp *prop,
    CUmemAllocationGranularity_flags option)
{
	CUresult r;

	if (granularity == NULL ||
	    (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
	     option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = check_prop(prop);
	if (r == CUDA_SUCCESS)
		*granularity = GS__VMM_GRANULARITY;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                             const CUmemAllocationProp *prop,
                             unsigned long long flags)
{
	struct gs__vmm *v;
	struct gs__ctx *ctx;
	CUresult r;

	if (handle == NULL || size == 0 || size % GS__VMM_GRANULARITY != 0 ||
	    flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = check_prop(prop);
	if (r == CUDA_SUCCESS)
		r = gs__ctx_get(&ctx);
	if (r != CUDA_SUCCESS)
		goto out;
	if (gs__drv.dev[prop->location.id].n_ctx == 0) {
		/* the memory is charged to a slot we only have with a
		 * context on that device */
		r = CUDA_ERROR_INVALID_CONTEXT;
		goto out;
	}
	v = calloc(1, sizeof(*v));
	if (v == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	v->dev = prop->location.id;
	v->size = size;
	v->prop = *prop;
	v->fd = memfd_create("gpuslice-sim-vmm", MFD_CLOEXEC);
	if (v->fd < 0 || ftruncate(v->fd, (off_t)size) != 0) {
		if (v->fd >= 0)
			(void)close(v->fd);
		free(v);
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	r = gs__charge(v->dev, size);
	if (r != CUDA_SUCCESS || !gs__h_add(v, GS__H_VMM)) {
		if (r == CUDA_SUCCESS) {
			gs__uncharge(v->dev, size);
			r = CUDA_ERROR_OUT_OF_MEMORY;
		}
		(void)close(v->fd);
		free(v);
		goto out;
	}
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)v;
out:
	gs__unlock();
	return r;
}

static void vmm_maybe_free(struct gs__vmm *v)
{
	if (!v->released || v->maps > 0)
		return;
	gs__uncharge(v->dev, v->size);
	(void)close(v->fd);
	gs__h_del(v);
	free(v);
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct gs__vmm *v = (struct gs__vmm *)(uintptr_t)handle;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(v, GS__H_VMM) || v->released) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		v->released = true;
		vmm_maybe_free(v);
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size,
                                     size_t alignment, CUdeviceptr addr,
                                     unsigned long long flags)
{
	struct gs__alloc a = {0};
	uint64_t align = alignment ? alignment : GS__VMM_GRANULARITY;
	uint8_t *raw, *p;
	uint64_t len;
	CUresult r;

	if (ptr == NULL || size == 0 || size % GS__VMM_GRANULARITY != 0 ||
	    (align & (align - 1)) != 0 || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	(void)addr; /* a hint; the sim always picks the address */
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	len = size + align;
	raw = map_range(len, false);
	if (raw == NULL) {
		gs__unlock();
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	p = (uint8_t *)(uintptr_t)round_up((uint64_t)(uintptr_t)raw, align);
	/* trim the slack so the reservation is exactly [p, p + size) */
	if (p > raw)
		(void)munmap(raw, (size_t)(p - raw));
	if (raw + len > p + size)
		(void)munmap(p + size, (size_t)(raw + len - (p + size)));
	a.base = (uint64_t)(uintptr_t)p;
	a.size = size;
	a.map_len = size;
	a.kind = GS__A_RESERVE;
	a.dev = -1;
	if (!alloc_insert(&a)) {
		(void)munmap(p, size);
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		*ptr = (CUdeviceptr)a.base;
	}
	gs__unlock();
	return r;
}

/* The reservation holding [p, p + len), skipping mappings inside it. */
static struct gs__alloc *reservation_of(uint64_t p, uint64_t len)
{
	for (int i = lower_bound(p) - 1; i >= 0; i--) {
		struct gs__alloc *a = &gs__drv.allocs[i];

		if (a->kind != GS__A_RESERVE)
			continue;
		if (p >= a->base && p + len <= a->base + a->size)
			return a;
		if (a->base + a->size <= p)
			return NULL;
	}
	return NULL;
}

CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	struct gs__alloc *a;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	a = alloc_exact(ptr);
	while (a != NULL && a->kind != GS__A_RESERVE)
		a = a > gs__drv.allocs && (a - 1)->base == ptr ? a - 1 : NULL;
	if (a == NULL || a->size != size) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		for (int i = 0; i < gs__drv.n_allocs; i++) {
			struct gs__alloc *m = &gs__drv.allocs[i];

			if (m->kind == GS__A_VMM_MAP && m->base >= ptr &&
			    m->base < ptr + size) {
				r = CUDA_ERROR_INVALID_VALUE; /* still mapped */
				break;
			}
		}
		if (r == CUDA_SUCCESS)
			alloc_free(a);
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                          CUmemGenericAllocationHandle handle,
                          unsigned long long flags)
{
	struct gs__vmm *v = (struct gs__vmm *)(uintptr_t)handle;
	struct gs__alloc a = {0};
	void *p;
	CUresult r;

	if (size == 0 || flags != 0 || size % GS__VMM_GRANULARITY != 0 ||
	    offset % GS__VMM_GRANULARITY != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(v, GS__H_VMM) || v->released) {
		r = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	if (offset + size > v->size || reservation_of(ptr, size) == NULL) {
		r = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	for (int i = 0; i < gs__drv.n_allocs; i++) {
		struct gs__alloc *m = &gs__drv.allocs[i];

		if (m->kind == GS__A_VMM_MAP && m->base < ptr + size &&
		    ptr < m->base + m->size) {
			r = CUDA_ERROR_INVALID_VALUE; /* overlaps a mapping */
			goto out;
		}
	}
	p = mmap((void *)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE,
	         MAP_SHARED | MAP_FIXED, v->fd, (off_t)offset);
	if (p == MAP_FAILED) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	a.base = ptr;
	a.size = size;
	a.kind = GS__A_VMM_MAP;
	a.backed = v->size <= GS__BACKED_MAX;
	a.dev = v->dev;
	a.vmm = v;
	if (!alloc_insert(&a)) {
		(void)mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
		           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED |
		               MAP_NORESERVE,
		           -1, 0);
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	v->maps++;
out:
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	struct gs__alloc *a;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	a = alloc_exact(ptr);
	if (a != NULL && a->kind != GS__A_VMM_MAP &&
	    a + 1 < gs__drv.allocs + gs__drv.n_allocs && (a + 1)->base == ptr)
		a = a + 1;
	if (a == NULL || a->kind != GS__A_VMM_MAP || a->size != size) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		struct gs__vmm *v = a->vmm;

		(void)mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
		           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED |
		               MAP_NORESERVE,
		           -1, 0);
		alloc_remove(a);
		if (gs__h_is(v, GS__H_VMM)) {
			v->maps--;
			vmm_maybe_free(v);
		}
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size,
                                const CUmemAccessDesc *desc, size_t count)
{
	CUresult r;

	if (desc == NULL || count == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (reservation_of(ptr, size) == NULL)
		r = CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; r == CUDA_SUCCESS && i < count; i++)
		if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
		    gs__dev_get(desc[i].location.id) == NULL)
			r = CUDA_ERROR_INVALID_DEVICE;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemGetAccess(unsigned long long *flags,
                                const CUmemLocation *location, CUdeviceptr ptr)
{
	struct gs__alloc *a;
	CUresult r;

	if (flags == NULL || location == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	a = gs__alloc_find(ptr, 0);
	if (a == NULL || a->kind != GS__A_VMM_MAP)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*flags = location->id == a->dev
		             ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
		             : CU_MEM_ACCESS_FLAGS_PROT_NONE;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(
    CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle)
{
	struct gs__vmm *v = (struct gs__vmm *)(uintptr_t)handle;
	CUresult r;

	if (prop == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(v, GS__H_VMM))
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*prop = v->prop;
	gs__unlock();
	return r;
}

/* ---- arrays ----------------------------------------------------------- */

static int format_bytes(CUarray_format f)
{
	switch (f) {
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
		return 0;
	}
}

static uint64_t level_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned lvl,
                            int esize)
{
	uint64_t w = d->Width >> lvl, h = d->Height >> lvl,
	         z = (d->Flags & CUDA_ARRAY3D_LAYERED) ? d->Depth
	                                               : d->Depth >> lvl;

	if (w == 0)
		w = 1;
	if (d->Height != 0 && h == 0)
		h = 1;
	if (d->Depth != 0 && z == 0)
		z = 1;
	return w * (h ? h : 1) * (z ? z : 1) * d->NumChannels * (uint64_t)esize;
}

static CUresult array_create(const CUDA_ARRAY3D_DESCRIPTOR *desc,
                             unsigned int levels, enum gs__htype type,
                             void **out)
{
	struct gs__array *a;
	struct gs__ctx *ctx;
	int esize;
	uint64_t bytes = 0;
	CUresult r;

	if (out == NULL || desc == NULL || desc->Width == 0 ||
	    (desc->NumChannels != 1 && desc->NumChannels != 2 &&
	     desc->NumChannels != 4) ||
	    levels == 0)
		return CUDA_ERROR_INVALID_VALUE;
	esize = format_bytes(desc->Format);
	if (esize == 0)
		return CUDA_ERROR_NOT_SUPPORTED;
	for (unsigned l = 0; l < levels; l++)
		bytes += level_bytes(desc, l, esize);
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__ctx_get(&ctx);
	if (r != CUDA_SUCCESS)
		goto out;
	a = calloc(1, sizeof(*a));
	if (a == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	a->dev = ctx->dev;
	a->ctx = ctx;
	a->desc = *desc;
	a->levels = levels;
	a->charged = round_up(bytes, GS__ALLOC_ALIGN);
	r = gs__charge(a->dev, a->charged);
	if (r == CUDA_SUCCESS && !gs__h_add(a, type)) {
		gs__uncharge(a->dev, a->charged);
		r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (r != CUDA_SUCCESS)
		free(a);
	else
		*out = a;
out:
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuArrayCreate_v2(CUarray *pHandle,
                                  const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
	CUDA_ARRAY3D_DESCRIPTOR d = {0};

	if (pAllocateArray == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	d.Width = pAllocateArray->Width;
	d.Height = pAllocateArray->Height;
	d.Format = pAllocateArray->Format;
	d.NumChannels = pAllocateArray->NumChannels;
	return array_create(&d, 1, GS__H_ARRAY, (void **)pHandle);
}

CUresult CUDAAPI cuArray3DCreate_v2(
    CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
	return array_create(pAllocateArray, 1, GS__H_ARRAY, (void **)pHandle);
}

CUresult CUDAAPI
cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                       const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                       unsigned int numMipmapLevels)
{
	return array_create(pMipmappedArrayDesc, numMipmapLevels, GS__H_MIPMAP,
	                    (void **)pHandle);
}

static CUresult array_destroy(void *h, enum gs__htype type)
{
	struct gs__array *a = h;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(a, type)) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else {
		gs__uncharge(a->dev, a->charged);
		gs__h_del(a);
		free(a);
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuArrayDestroy(CUarray hArray)
{
	return array_destroy(hArray, GS__H_ARRAY);
}

CUresult CUDAAPI cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
	return array_destroy(hMipmappedArray, GS__H_MIPMAP);
}

CUresult CUDAAPI cuArray3DGetDescriptor_v2(
    CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
	CUresult r;

	if (pArrayDescriptor == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(hArray, GS__H_ARRAY))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		*pArrayDescriptor = ((struct gs__array *)hArray)->desc;
	gs__unlock();
	return r;
}

CUresult CUDAAPI
cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
	CUDA_ARRAY3D_DESCRIPTOR d;
	CUresult r =
	    cuArray3DGetDescriptor_v2(pArrayDescriptor ? &d : NULL, hArray);

	if (r != CUDA_SUCCESS)
		return r;
	if (d.Depth != 0)
		return CUDA_ERROR_INVALID_VALUE;
	pArrayDescriptor->Width = d.Width;
	pArrayDescriptor->Height = d.Height;
	pArrayDescriptor->Format = d.Format;
	pArrayDescriptor->NumChannels = d.NumChannels;
	return CUDA_SUCCESS;
}

/* ---- teardown --------------------------------------------------------- */

static void array_gone(void *h, void *arg)
{
	struct gs__array *a = h;

	if (a->ctx == arg) {
		gs__uncharge(a->dev, a->charged);
		gs__h_del(a);
		free(a);
	}
}

void gs__mem_ctx_gone(struct gs__ctx *ctx)
{
	for (int i = gs__drv.n_allocs - 1; i >= 0; i--) {
		if (i >= gs__drv.n_allocs)
			continue;
		struct gs__alloc *a = &gs__drv.allocs[i];

		if (a->ctx == ctx)
			alloc_free(a);
	}
	gs__h_each(GS__H_ARRAY, array_gone, ctx);
	gs__h_each(GS__H_MIPMAP, array_gone, ctx);
}

/* ---- data ------------------------------------------------------------- */

void gs__dwrite(uint64_t p, const void *src, uint64_t len)
{
	struct gs__alloc *a = gs__alloc_find(p, len);

	if (a != NULL && (!a->backed || a->kind == GS__A_RESERVE))
		return;
	memmove((void *)(uintptr_t)p, src, (size_t)len);
}

void gs__dread(void *dst, uint64_t p, uint64_t len)
{
	struct gs__alloc *a = gs__alloc_find(p, len);

	if (a != NULL && (!a->backed || a->kind == GS__A_RESERVE)) {
		memset(dst, 0, (size_t)len);
		return;
	}
	memmove(dst, (void *)(uintptr_t)p, (size_t)len);
}

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

CUresult gs__memset(uint64_t p, uint64_t pitch, uint32_t value,
                    unsigned int esize, uint64_t width, uint64_t height)
{
	uint64_t span = (height - 1) * pitch + width * esize;
	struct gs__alloc *a;

	if (width == 0 || height == 0)
		return CUDA_SUCCESS;
	a = gs__alloc_find(p, span);
	if (a == NULL || a->kind == GS__A_RESERVE || p % esize != 0 ||
	    (height > 1 && pitch < width * esize))
		return CUDA_ERROR_INVALID_VALUE;
	if (!a->backed)
		return CUDA_SUCCESS;
	for (uint64_t row = 0; row < height; row++) {
		uint8_t *q = (uint8_t *)(uintptr_t)(p + row * pitch);

		if (esize == 1) {
			memset(q, (int)(value & 0xff), (size_t)width);
		} else if (esize == 2) {
			uint16_t v = (uint16_t)value;
			for (uint64_t i = 0; i < width; i++)
				memcpy(q + i * 2, &v, 2);
		} else {
			for (uint64_t i = 0; i < width; i++)
				memcpy(q + i * 4, &value, 4);
		}
	}
	return CUDA_SUCCESS;
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
