/*
 * addr.c - the sim driver's device address space, the bottom of its
 * memory: the sorted table of live address ranges (gs__drv.allocs) and
 * its lookup, charging device bytes to the engine and the process's slot,
 * the host mappings behind device ranges (with their reuse cache),
 * allocating and freeing one range, module globals' memory, and reading,
 * writing and setting device bytes. Everything above (mem.c, vmm.c,
 * array.c, copy.c, module.c, the launches) calls down into it; it calls
 * nothing of theirs.
 *
 * Addresses. A device allocation is an anonymous mapping in this process
 * and its device address is the mapping's address, so device pointers are
 * unique, never collide with host memory, and copies are plain memcpy.
 * Every allocation is readable/writable and sparse: an anonymous
 * MAP_NORESERVE mapping (a VMM handle: a memfd) whose pages the kernel
 * makes only when touched, so a 40 GiB allocation with a few pages
 * written costs a few pages of host memory; a memset to zero of whole
 * pages gives them back (MADV_DONTNEED, MADV_REMOVE for a memfd) rather
 * than writing zeros. Only where the host refuses such a mapping (strict
 * overcommit) is an allocation address space alone (PROT_NONE): copies
 * into it are dropped and reads give zeros, and the sim says so once on
 * stderr. The engine's memory count is what limits allocation, not the
 * host's memory.
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

uint64_t gs__round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* ---- the sorted allocation table ------------------------------------- */

int gs__alloc_lower_bound(uint64_t p)
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
	int i = gs__alloc_lower_bound(p) - 1;
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

struct gs__alloc *gs__alloc_exact(uint64_t base)
{
	int i = gs__alloc_lower_bound(base) - 1;

	if (i < 0 || gs__drv.allocs[i].base != base)
		return NULL;
	return &gs__drv.allocs[i];
}

bool gs__alloc_insert(const struct gs__alloc *a)
{
	int i;

	if (gs__drv.n_allocs == gs__drv.cap_allocs) {
		int ncap = gs__drv.cap_allocs ? gs__drv.cap_allocs * 2 : 64;
		struct gs__alloc *n =
		    gs__realloc(gs__drv.allocs, sizeof(*n) * (size_t)ncap);

		if (n == NULL)
			return false;
		gs__drv.allocs = n;
		gs__drv.cap_allocs = ncap;
	}
	i = gs__alloc_lower_bound(a->base);
	memmove(&gs__drv.allocs[i + 1], &gs__drv.allocs[i],
	        sizeof(*a) * (size_t)(gs__drv.n_allocs - i));
	gs__drv.allocs[i] = *a;
	gs__drv.allocs[i].serial = ++gs__drv.next_id;
	gs__drv.n_allocs++;
	return true;
}

void gs__alloc_remove(struct gs__alloc *a)
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
	/* Fault site: the engine refuses as if it were full. */
	if (gs_fault_hit("sim.dev_alloc")) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
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

void *gs__map_range(uint64_t len, bool backed)
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
	if (gs_fault_hit("sim.dev_map"))
		return NULL;
	p = mmap(NULL, (size_t)len, backed ? PROT_READ | PROT_WRITE : PROT_NONE,
	         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* A backed mapping of len bytes, else (the host refused: strict
 * overcommit) an unbacked one, said once. OUT: *backed. Lock held. */
static void *map_sparse(uint64_t len, bool *backed)
{
	void *p;

	errno = 0;
	p = gs__map_range(len, true);
	*backed = p != NULL;
	/* only the host's refusal (not an injected fault, errno 0) */
	if (p == NULL && errno == ENOMEM && len > (64ULL << 20)) {
		p = gs__map_range(len, false);
		if (p != NULL)
			gs__not_supported_note("contents of an allocation the host would not map sparsely (vm.overcommit_memory=2?): address space only");
	}
	return p;
}

void gs__unmap_range(void *p, uint64_t len, bool backed)
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
CUresult gs__dev_alloc(struct gs__ctx *ctx, uint64_t size,
                       enum gs__akind kind, struct gs__pool *pool,
                       CUdeviceptr *dptr)
{
	struct gs__alloc a = {0};
	uint64_t charge = gs__round_up(size, GS__ALLOC_ALIGN);
	long page = sysconf(_SC_PAGESIZE);
	void *p;
	CUresult r;

	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (size > (1ULL << 47))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (pool != NULL && pool->max_size != 0 &&
	    pool->used + charge > pool->max_size)
		return CUDA_ERROR_OUT_OF_MEMORY; /* the pool's maxSize */
	r = gs__charge(ctx->dev, charge);
	if (r != CUDA_SUCCESS)
		return r;
	a.map_len = gs__round_up(size, (uint64_t)page);
	p = map_sparse(a.map_len, &a.backed);
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
	if (!gs__alloc_insert(&a)) {
		gs__unmap_range(p, a.map_len, a.backed);
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
void gs__alloc_free(struct gs__alloc *a)
{
	struct gs__alloc copy = *a;

	gs__alloc_remove(a);
	if (copy.map_len != 0)
		gs__unmap_range((void *)(uintptr_t)copy.base, copy.map_len,
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
	if (size > GS__GLOBAL_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a.backed = true;
	a.map_len = gs__round_up(size, (uint64_t)page);
	p = gs__map_range(a.map_len, true);
	if (p == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a.base = (uint64_t)(uintptr_t)p;
	a.size = size;
	a.kind = GS__A_MANAGED;
	a.dev = 0;
	if (!gs__alloc_insert(&a)) {
		gs__unmap_range(p, a.map_len, true);
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
	                : gs__dev_alloc(ctx, size,
	                                managed ? GS__A_MANAGED : GS__A_DEVICE,
	                                NULL, &p);
	if (r != CUDA_SUCCESS)
		return r;
	gs__alloc_exact((uint64_t)p)->owner = owner;
	*dptr = (uint64_t)p;
	return CUDA_SUCCESS;
}

void gs__mem_release(uint64_t dptr, const void *owner)
{
	struct gs__alloc *a = gs__alloc_exact(dptr);

	if (a != NULL && a->owner == owner)
		gs__alloc_free(a);
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

/*
 * Zeroes [p, p + len) of allocation a: the whole pages inside it are
 * given back to the kernel (they read as zeros again and cost nothing),
 * only the partial pages at the ends are written. Lock held.
 */
static CUresult zero_range(const struct gs__alloc *a, uint64_t p, uint64_t len)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t lo = gs__round_up(p, page), hi = (p + len) / page * page;

	if (len < (1ULL << 20) || hi <= lo) {
		memset((void *)(uintptr_t)p, 0, (size_t)len);
		return CUDA_SUCCESS;
	}
	memset((void *)(uintptr_t)p, 0, (size_t)(lo - p));
	memset((void *)(uintptr_t)hi, 0, (size_t)(p + len - hi));
	/* a memfd (VMM) mapping is shared: its pages must leave the file */
	if (madvise((void *)(uintptr_t)lo, (size_t)(hi - lo),
	            a->kind == GS__A_VMM_MAP ? MADV_REMOVE : MADV_DONTNEED) != 0)
		memset((void *)(uintptr_t)lo, 0, (size_t)(hi - lo));
	return CUDA_SUCCESS;
}

CUresult gs__memset(uint64_t p, uint64_t pitch, uint32_t value,
                    unsigned int esize, uint64_t width, uint64_t height)
{
	uint64_t span = (height - 1) * pitch + width * esize;
	struct gs__alloc *a;

	if (width == 0 || height == 0)
		return CUDA_SUCCESS;
	a = gs__alloc_find(p, span);
	if (!gs__alloc_usable(a) || p % esize != 0 ||
	    (height > 1 && pitch < width * esize))
		return CUDA_ERROR_INVALID_VALUE;
	if (!a->backed)
		return CUDA_SUCCESS;
	if (value == 0 && (height == 1 || pitch == width * esize) &&
	    (a->kind == GS__A_DEVICE || a->kind == GS__A_MANAGED ||
	     a->kind == GS__A_VMM_MAP || a->kind == GS__A_GRAPH))
		return zero_range(a, p, span);
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
