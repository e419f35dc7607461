/*
 * swap.c - movable device memory for a slice that may swap (its limits
 * carry GS_SLICE_SWAP): cuMemAlloc and cuMemAllocPitch are served from
 * ranges this module reserves and backs with the driver's virtual memory
 * management, so that the whole process's memory can be copied to host
 * memory, released, and mapped back later at the same addresses.
 *
 * Owns the chunk table: a chunk is one reserved range of the driver's
 * granule (or a multiple) and, while resident, one physical handle mapped
 * into it. Allocations smaller than a granule are packed into shared
 * chunks (first fit over 512-byte units); larger ones get a chunk of
 * their own, rounded up to the granule. The table of allocations (base,
 * size, chunk) answers cuMemGetAddressRange and the range attributes of
 * cuPointerGetAttribute as the plain allocator would: the program's own
 * base and size, never the chunk's.
 *
 * The books (mem.c) keep charging what the program asked for; a chunk's
 * physical memory is taken with the real cuMemCreate, not the hooked one.
 *
 * Swap-out (gs__swap_out): raise the stop, wait for the calls already
 * past it to leave the driver (quiesce: every thread's count of its
 * launches and gated calls, struct gs__lin), synchronise every
 * context that owns a chunk, copy each resident chunk to its host copy,
 * unmap and release its handle; the reservations stay. Swap-in: create,
 * map at the same address, set access, copy back.
 *
 * Launches and the stop (the window a launch's test of the stop leaves
 * before its call reaches the driver; the same for gate.c's gated calls,
 * which mark their thread the same way): a launch marks its thread
 * (gs__lin.n++) before it tests the stop and unmarks it after the driver
 * returned; the swap-out raises the stop, then waits for every mark to
 * fall, then drains. A launch's mark is a plain store to its own thread's
 * memory, ordered only by a compiler barrier (a fence per launch would
 * cost more than the rest of the fast path); the swap-out supplies the
 * missing half with membarrier(2) between raising the stop and reading
 * the marks, which runs a full barrier on every thread of the process:
 *
 *   launch:    n = 1; barrier(); stopped? -> n = 0, wait (slow path)
 *              else call the driver; n = 0
 *   swap-out:  stopped = 1; membarrier(); wait until every n == 0; drain
 *
 * so either the launch sees the stop or the swap-out sees its mark.
 * Where the kernel has no membarrier (before Linux 4.14 for the private
 * command, 4.3 for the global one, or a seccomp filter that forbids it),
 * a swap-out is refused (CUDA_ERROR_NOT_SUPPORTED, said once in the log)
 * rather than run with the window open.
 *
 * Speed (docs/swap.md, "Figures"): a chunk's host copy is pinned host
 * memory of this process (cuMemHostAlloc, portable), made at the chunk's
 * swap-out and given back once the swap-in has copied it (host memory is
 * held only while swapped out, the figure the daemon keeps within
 * swap.host_memory); where the driver cannot pin it, anonymous memory instead (a GPU
 * then copies through a bounce buffer). Copies are asynchronous on one
 * stream per context, all chunks queued before one synchronisation; on
 * swap-in each chunk's physical memory is made and mapped just before
 * its copy is queued, so that on a GPU the making of the next overlaps
 * the copy of the one before. Each swap logs its phases at debug level.
 *
 * Pinned: a process that shares memory with another process or device
 * (cuIpcGetMemHandle, cuIpcOpenMemHandle, cuCtxEnablePeerAccess) or adds
 * graph memory nodes is never swapped; the first such call is recorded
 * as the reason and every swap-out is refused with it. The call itself
 * passes through (a driver refuses IPC export of memory mapped through
 * virtual memory management: such programs need swap=never).
 *
 * Requests come through the region (gs/region_swap.h): the daemon or
 * `gpuslice swap out|in SLICE` bumps the slice's request word; a helper
 * thread of each process holding movable memory (started with its first
 * such allocation) sleeps on it (woken by the request at once, else
 * every 10 ms), carries the request out and answers with the bytes
 * moved, which the record adds up per slice (the answer wakes the
 * asker).
 *
 * A process that attaches to a parked slice (GS_SLICE_IS_PARKED in its
 * limits; shim.c calls park_stop) starts with the stop raised and the
 * helper thread running, before it holds any movable memory; the thread
 * lowers the stop once the limits no longer say parked (or the slice is
 * gone), unless a swap-out took memory of it since (then the swap-in).
 */
#include "shim_int.h"
#include "inflight.h"

#include "gs/region_swap.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define UNIT 512u

struct chunk {
	CUdeviceptr base;
	uint64_t size;
	CUmemGenericAllocationHandle h; /* 0 while swapped out */
	CUdevice ord;
	CUcontext ctx;
	bool packed;      /* shared by small allocations */
	uint64_t *used;   /* packed: one bit per unit */
	uint32_t n_alloc; /* allocations in it */
	void *host;       /* its host copy (kept once made), or NULL */
	bool host_pinned; /* host is cuMemHostAlloc's, else mmap's */
	struct chunk *next;
};

struct suballoc {
	CUdeviceptr p;
	uint64_t size; /* as asked */
	uint64_t units; /* packed: units taken */
	struct chunk *c;
};

/* The driver entry points this module calls that are not hooks. */
static struct {
	__typeof__(&cuMemAddressReserve) reserve;
	__typeof__(&cuMemAddressFree) addr_free;
	__typeof__(&cuMemMap) map;
	__typeof__(&cuMemUnmap) unmap;
	__typeof__(&cuMemSetAccess) access;
	__typeof__(&cuMemGetAllocationGranularity) gran;
	__typeof__(&cuMemcpyDtoH_v2) dtoh;
	__typeof__(&cuMemcpyHtoD_v2) htod;
	__typeof__(&cuMemGetAddressRange_v2) range;
	__typeof__(&cuPointerGetAttribute) attr;
	__typeof__(&cuCtxPushCurrent_v2) push;
	__typeof__(&cuCtxPopCurrent_v2) pop;
	__typeof__(&cuMemcpyDtoHAsync_v2) dtoh_async;
	__typeof__(&cuMemcpyHtoDAsync_v2) htod_async;
	__typeof__(&cuStreamCreate) stream_create;
	__typeof__(&cuStreamSynchronize) stream_sync;
	__typeof__(&cuMemHostAlloc) host_alloc;
	__typeof__(&cuMemFreeHost) host_free;
} drv;

/* The stream a context's swap copies go on (created at its first swap;
 * it goes with its context). */
struct cstream {
	CUcontext ctx;
	CUstream s;
	struct cstream *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool loaded;
static struct chunk *chunks;
static struct suballoc *subs;
static size_t n_subs, cap_subs;
static bool swapped; /* guarded by mu */
static pthread_cond_t back_cv = PTHREAD_COND_INITIALIZER;
static bool watch_started;
/* Stopped since it joined its slice while the slice was parked
 * (park_stop): the helper thread lifts the stop once the slice's
 * limits no longer say parked; guarded by mu. */
static bool park_stopped;
static struct cstream *cstreams; /* guarded by mu */
/* Why the process's memory cannot move (NONE = it can); guarded by mu. */
static enum gs_swap_pin pinned;

__thread struct gs__lin gs__lin_tls
    __attribute__((tls_model("initial-exec")));
static pthread_mutex_t lin_mu = PTHREAD_MUTEX_INITIALIZER;
static struct gs__lin *lins; /* every thread that launched: lin_mu */
static pthread_key_t lin_key;
static pthread_once_t lin_once = PTHREAD_ONCE_INIT;
static bool lin_key_ok;
/* How a swap-out fences every thread: membarrier's private expedited
 * command (registered), its global one, or none. Guarded by mu. */
static enum { FENCE_UNKNOWN, FENCE_PRIVATE, FENCE_GLOBAL, FENCE_NONE } fence;

static void load(void)
{
	void *h = gs__g.cuda;

	if (h == NULL)
		return;
#define L(f, s) drv.f = (__typeof__(drv.f))gs__rdlsym(h, s)
	L(reserve, "cuMemAddressReserve");
	L(addr_free, "cuMemAddressFree");
	L(map, "cuMemMap");
	L(unmap, "cuMemUnmap");
	L(access, "cuMemSetAccess");
	L(gran, "cuMemGetAllocationGranularity");
	L(dtoh, "cuMemcpyDtoH_v2");
	L(htod, "cuMemcpyHtoD_v2");
	L(range, "cuMemGetAddressRange_v2");
	L(attr, "cuPointerGetAttribute");
	L(push, "cuCtxPushCurrent_v2");
	L(pop, "cuCtxPopCurrent_v2");
	L(dtoh_async, "cuMemcpyDtoHAsync_v2");
	L(htod_async, "cuMemcpyHtoDAsync_v2");
	L(stream_create, "cuStreamCreate");
	L(stream_sync, "cuStreamSynchronize");
	L(host_alloc, "cuMemHostAlloc");
	L(host_free, "cuMemFreeHost");
#undef L
	loaded = drv.reserve && drv.addr_free && drv.map && drv.unmap &&
	         drv.access && drv.gran && drv.dtoh && drv.htod && drv.range &&
	         drv.attr && drv.push && drv.pop && drv.dtoh_async &&
	         drv.htod_async && drv.stream_create && drv.stream_sync &&
	         drv.host_alloc && drv.host_free;
	if (!loaded)
		gs_warn(GS_SHIM_TAG,
		        "slice=%s: the driver lacks virtual memory management; allocations are not movable (no swap)",
		        gs__g.cfg.slice);
}

bool gs__swap_backed(void)
{
	if (!gs__enforcing())
		return false;
	(void)gs__mem_limit(); /* refreshes gs__g.lim */
	if (!(__atomic_load_n(&gs__g.lim.flags, __ATOMIC_RELAXED) &
	      GS_SLICE_SWAP))
		return false;
	(void)pthread_once(&once, load);
	return loaded;
}

static void prop_of(CUmemAllocationProp *p, CUdevice ord)
{
	memset(p, 0, sizeof(*p));
	p->type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p->location.id = ord;
}

/* Creates physical memory for `c` and maps it (read/write). */
static CUresult back(struct chunk *c)
{
	CUmemAllocationProp p;
	CUmemAccessDesc a = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE,
	                                  .id = c->ord},
	                     .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	CUresult r;

	prop_of(&p, c->ord);
	r = gs__real.cuMemCreate(&c->h, c->size, &p, 0);
	if (r != CUDA_SUCCESS) {
		c->h = 0;
		return r;
	}
	r = drv.map(c->base, c->size, 0, c->h, 0);
	if (r == CUDA_SUCCESS) {
		r = drv.access(c->base, c->size, &a, 1);
		if (r != CUDA_SUCCESS)
			(void)drv.unmap(c->base, c->size);
	}
	if (r != CUDA_SUCCESS) {
		(void)gs__real.cuMemRelease(c->h);
		c->h = 0;
	}
	return r;
}

static void unback(struct chunk *c)
{
	if (c->h == 0)
		return;
	(void)drv.unmap(c->base, c->size);
	(void)gs__real.cuMemRelease(c->h);
	c->h = 0;
}

static struct chunk *chunk_new(uint64_t size, CUdevice ord, CUcontext ctx,
                               bool packed, CUresult *r)
{
	struct chunk *c = calloc(1, sizeof(*c));

	*r = CUDA_ERROR_OUT_OF_MEMORY;
	if (c == NULL)
		return NULL;
	c->size = size;
	c->ord = ord;
	c->ctx = ctx;
	c->packed = packed;
	if (packed) {
		c->used = calloc((size / UNIT + 63) / 64, sizeof(uint64_t));
		if (c->used == NULL)
			goto fail;
	}
	*r = drv.reserve(&c->base, size, 0, 0, 0);
	if (*r != CUDA_SUCCESS)
		goto fail;
	*r = back(c);
	if (*r != CUDA_SUCCESS) {
		(void)drv.addr_free(c->base, c->size);
		goto fail;
	}
	c->next = chunks;
	chunks = c;
	return c;
fail:
	free(c->used);
	free(c);
	return NULL;
}

/* Anonymous memory for a chunk's contents where the driver would not pin
 * any: its pages made at once rather than one fault per page during the
 * copy. NULL when there is none. */
static void *host_anon(uint64_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	/* Huge pages where the kernel allows them (fewer faults and page
	 * clears per chunk); the copy faults in whatever is not populated. */
#ifdef MADV_HUGEPAGE
	(void)madvise(p, size, MADV_HUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
	(void)madvise(p, size, MADV_POPULATE_WRITE);
#endif
	return p;
}

/* Gives chunk `c` its host copy unless it has one: pinned host memory,
 * else anonymous memory. False when there is no memory for it. The
 * chunk's context is current. */
static bool host_get(struct chunk *c)
{
	void *p = NULL;

	if (c->host != NULL)
		return true;
	if (drv.host_alloc(&p, c->size, CU_MEMHOSTALLOC_PORTABLE) ==
	        CUDA_SUCCESS &&
	    p != NULL) {
		c->host = p;
		c->host_pinned = true;
		return true;
	}
	c->host = host_anon(c->size);
	c->host_pinned = false;
	return c->host != NULL;
}

/* `ctx_alive`: the chunk's context still exists (pinned host memory is
 * freed with its context by the driver). */
static void host_put(struct chunk *c, bool ctx_alive)
{
	if (c->host != NULL && !c->host_pinned)
		(void)munmap(c->host, c->size);
	else if (c->host != NULL && ctx_alive &&
	         drv.push(c->ctx) == CUDA_SUCCESS) {
		CUcontext prev;

		(void)drv.host_free(c->host);
		(void)drv.pop(&prev);
	}
	c->host = NULL;
}

static void chunk_destroy(struct chunk *c, bool ctx_alive)
{
	struct chunk **pp;

	for (pp = &chunks; *pp != NULL; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	unback(c);
	(void)drv.addr_free(c->base, c->size);
	host_put(c, ctx_alive);
	free(c->used);
	free(c);
}

static bool bit(const struct chunk *c, uint64_t i)
{
	return (c->used[i / 64] >> (i % 64)) & 1u;
}

static void set_bits(struct chunk *c, uint64_t from, uint64_t n, bool on)
{
	for (uint64_t i = from; i < from + n; i++) {
		if (on)
			c->used[i / 64] |= 1ull << (i % 64);
		else
			c->used[i / 64] &= ~(1ull << (i % 64));
	}
}

/* First fit of n units in a packed chunk; the first unit or -1. */
static int64_t fit(const struct chunk *c, uint64_t n)
{
	uint64_t total = c->size / UNIT, run = 0;

	for (uint64_t i = 0; i < total; i++) {
		run = bit(c, i) ? 0 : run + 1;
		if (run == n)
			return (int64_t)(i + 1 - n);
	}
	return -1;
}

static bool subs_add(const struct suballoc *s)
{
	if (n_subs == cap_subs) {
		size_t n = cap_subs ? cap_subs * 2 : 64;
		struct suballoc *t = realloc(subs, n * sizeof(*t));

		if (t == NULL)
			return false;
		subs = t;
		cap_subs = n;
	}
	subs[n_subs++] = *s;
	return true;
}

/* The allocation holding `p` (any address inside it), or -1. mu held. */
static ssize_t subs_find(CUdeviceptr p)
{
	for (size_t i = 0; i < n_subs; i++)
		if (p >= subs[i].p && p < subs[i].p + (subs[i].size ? subs[i].size : 1))
			return (ssize_t)i;
	return -1;
}

/* The watcher's sleep when no request wakes it (it looks again then, in
 * case a wake was lost: a request written by a build without the wake). */
#define WATCH_NS (10ULL * 1000 * 1000)

static void *watch_main(void *arg);

/* ---- launches and gated calls in the driver (struct gs__lin) ---------- */

/* At thread exit: the thread's mark leaves the list with it. */
static void lin_exit(void *arg)
{
	struct gs__lin *l = arg;

	(void)pthread_mutex_lock(&lin_mu);
	for (struct gs__lin **pp = &lins; *pp != NULL; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	(void)pthread_mutex_unlock(&lin_mu);
	l->reg = false;
}

static void lin_key_init(void)
{
	lin_key_ok = pthread_key_create(&lin_key, lin_exit) == 0;
}

bool gs__lin_register(void)
{
	struct gs__lin *l = &gs__lin_tls;

	if (l->reg)
		return true;
	(void)pthread_once(&lin_once, lin_key_init);
	if (!lin_key_ok || pthread_setspecific(lin_key, l) != 0) {
		gs_warn(GS_SHIM_TAG,
		        "slice=%s pid=%d: no memory to track this thread's launches; its launches are refused (CUDA_ERROR_OUT_OF_MEMORY)",
		        gs__g.cfg.slice, (int)getpid());
		return false;
	}
	(void)pthread_mutex_lock(&lin_mu);
	l->next = lins;
	lins = l;
	__atomic_store_n(&l->reg, true, __ATOMIC_RELAXED);
	(void)pthread_mutex_unlock(&lin_mu);
	return true;
}

/* Whether some thread has a launch or a gated call in the driver. */
static bool lin_busy(void)
{
	bool busy = false;

	(void)pthread_mutex_lock(&lin_mu);
	for (struct gs__lin *l = lins; l != NULL && !busy; l = l->next)
		busy = __atomic_load_n(&l->n, __ATOMIC_ACQUIRE) != 0;
	(void)pthread_mutex_unlock(&lin_mu);
	return busy;
}

/* Chooses how fence_all() fences (once; registering for the private
 * command, which a process must do before it uses it). mu held. */
static void fence_choose(void)
{
	long q;

	if (fence != FENCE_UNKNOWN)
		return;
	q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0);
	if (q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	    syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
	            0) == 0)
		fence = FENCE_PRIVATE;
	else if (q > 0 && (q & MEMBARRIER_CMD_GLOBAL))
		fence = FENCE_GLOBAL;
	else
		fence = FENCE_NONE;
}

/* A full memory barrier on every running thread of the process (see the
 * file comment). False when the kernel offers none. mu held. */
static bool fence_all(void)
{
	static bool said;
	int err;

	fence_choose();
	if (fence == FENCE_PRIVATE &&
	    syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) == 0)
		return true;
	if (fence == FENCE_GLOBAL &&
	    syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0) == 0)
		return true;
	err = fence == FENCE_NONE ? ENOSYS : errno;
	if (!said) {
		said = true;
		gs_warn(GS_SHIM_TAG,
		        "slice=%s: membarrier unavailable (%s): swap-outs are refused, a launch could reach memory being moved",
		        gs__g.cfg.slice, strerror(err));
	}
	return false;
}

/* mu held. */
static void watch_start(void)
{
	pthread_t t;

	if (watch_started)
		return;
	watch_started = true;
	fence_choose(); /* its registration is not paid by the first swap */
	if (pthread_create(&t, NULL, watch_main, NULL) == 0)
		(void)pthread_detach(t);
	else
		gs_warn(GS_SHIM_TAG,
		        "slice=%s: no swap helper thread (%s): requests to swap go unanswered",
		        gs__g.cfg.slice, strerror(errno));
}

CUresult gs__swap_alloc(CUdeviceptr *dptr, size_t bytes)
{
	CUdevice ord;
	CUcontext ctx = gs__dev_current_ctx();
	uint64_t gran = 0, units;
	struct suballoc s = {.size = bytes};
	CUmemAllocationProp p;
	struct chunk *c;
	CUresult r;

	if (gs__dev_current(&ord) < 0 || ctx == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	prop_of(&p, ord);
	{
		size_t g = 0;

		r = drv.gran(&g, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
		if (r != CUDA_SUCCESS)
			return r;
		gran = g;
	}
	units = (bytes + UNIT - 1) / UNIT;
	gs__swap_wait();
	(void)pthread_mutex_lock(&mu);
	watch_start();
	while (gs__g.swap_stopped)
		(void)pthread_cond_wait(&back_cv, &mu);
	if (bytes < gran) {
		int64_t at = -1;

		for (c = chunks; c != NULL; c = c->next)
			if (c->packed && c->ord == ord && c->ctx == ctx &&
			    (at = fit(c, units)) >= 0)
				break;
		if (c == NULL) {
			c = chunk_new(gran, ord, ctx, true, &r);
			if (c == NULL)
				goto out;
			at = 0;
		}
		set_bits(c, (uint64_t)at, units, true);
		s.p = c->base + (uint64_t)at * UNIT;
		s.units = units;
	} else {
		c = chunk_new((bytes + gran - 1) / gran * gran, ord, ctx, false,
		              &r);
		if (c == NULL)
			goto out;
		s.p = c->base;
	}
	s.c = c;
	if (!subs_add(&s)) {
		if (c->packed)
			set_bits(c, (s.p - c->base) / UNIT, units, false);
		if (c->n_alloc == 0)
			chunk_destroy(c, true);
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	c->n_alloc++;
	*dptr = s.p;
	r = CUDA_SUCCESS;
out:
	(void)pthread_mutex_unlock(&mu);
	return r;
}

bool gs__swap_free(CUdeviceptr p, CUresult *r)
{
	ssize_t i;
	struct suballoc s;

	if (!loaded)
		return false;
	(void)pthread_mutex_lock(&mu);
	i = subs_find(p);
	if (i < 0 || subs[i].p != p) {
		(void)pthread_mutex_unlock(&mu);
		return false;
	}
	s = subs[i];
	subs[i] = subs[--n_subs];
	if (s.c->packed)
		set_bits(s.c, (s.p - s.c->base) / UNIT, s.units, false);
	if (--s.c->n_alloc == 0)
		chunk_destroy(s.c, true);
	(void)pthread_mutex_unlock(&mu);
	*r = CUDA_SUCCESS;
	return true;
}

void gs__swap_ctx_gone(CUcontext ctx)
{
	struct chunk *c, *next;
	size_t k = 0;

	if (!loaded)
		return;
	(void)pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_subs; i++)
		if (subs[i].c->ctx != ctx)
			subs[k++] = subs[i];
	n_subs = k;
	for (c = chunks; c != NULL; c = next) {
		next = c->next;
		if (c->ctx == ctx)
			chunk_destroy(c, false);
	}
	for (struct cstream **pp = &cstreams; *pp != NULL;) {
		struct cstream *cs = *pp;

		if (cs->ctx == ctx) {
			*pp = cs->next;
			free(cs); /* its stream went with the context */
		} else {
			pp = &cs->next;
		}
	}
	(void)pthread_mutex_unlock(&mu);
}

/* ---- what the program sees of its allocations ------------------------- */

CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize,
                                 CUdeviceptr dptr)
{
	ssize_t i;

	if (!gs__ready())
		return gs__not_ready();
	if (loaded) {
		(void)pthread_mutex_lock(&mu);
		i = subs_find(dptr);
		if (i >= 0) {
			if (pbase != NULL)
				*pbase = subs[i].p;
			if (psize != NULL)
				*psize = subs[i].size;
		}
		(void)pthread_mutex_unlock(&mu);
		if (i >= 0)
			return CUDA_SUCCESS;
	}
	return gs__real.cuMemGetAddressRange_v2(pbase, psize, dptr);
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                               CUdeviceptr ptr)
{
	ssize_t i = -1;
	struct suballoc s;

	if (!gs__ready())
		return gs__not_ready();
	if (loaded && data != NULL &&
	    (attribute == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR ||
	     attribute == CU_POINTER_ATTRIBUTE_RANGE_SIZE)) {
		(void)pthread_mutex_lock(&mu);
		i = subs_find(ptr);
		if (i >= 0)
			s = subs[i];
		(void)pthread_mutex_unlock(&mu);
	}
	if (i < 0)
		return gs__real.cuPointerGetAttribute(data, attribute, ptr);
	if (attribute == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)
		*(CUdeviceptr *)data = s.p;
	else
		*(size_t *)data = s.size;
	return CUDA_SUCCESS;
}

/* ---- what pins the process -------------------------------------------- */

/* Records the first reason; every later swap-out is refused with it. */
static void pin(enum gs_swap_pin why)
{
	if (!gs__enforcing())
		return;
	(void)pthread_mutex_lock(&mu);
	if (pinned == GS_SWAP_PIN_NONE) {
		pinned = why;
		if (gs__g.lim.flags & GS_SLICE_SWAP)
			gs_info(GS_SHIM_TAG, "slice=%s pinned: the process %s",
			        gs__g.cfg.slice, gs_swap_pin_reason(why));
	}
	(void)pthread_mutex_unlock(&mu);
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
	CUresult r;

	if (!gs__ready())
		return gs__not_ready();
	r = gs__real.cuIpcGetMemHandle(pHandle, dptr);
	pin(GS_SWAP_PIN_IPC_EXPORT);
	return r;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle,
                               unsigned int Flags)
{
	CUresult r;

	if (!gs__ready())
		return gs__not_ready();
	r = gs__real.cuIpcOpenMemHandle_v2(pdptr, handle, Flags);
	pin(GS_SWAP_PIN_IPC_IMPORT);
	return r;
}

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
	CUresult r;

	if (!gs__ready())
		return gs__not_ready();
	r = gs__real.cuCtxEnablePeerAccess(peerContext, Flags);
	pin(GS_SWAP_PIN_PEER);
	return r;
}

CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                const CUgraphNode *dependencies,
                                size_t numDependencies,
                                CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
	CUresult r;

	if (!gs__ready())
		return gs__not_ready();
	r = gs__real.cuGraphAddMemAllocNode(phGraphNode, hGraph, dependencies,
	                                    numDependencies, nodeParams);
	pin(GS_SWAP_PIN_GRAPH_MEM);
	return r;
}

/* ---- the stop -------------------------------------------------------- */

void gs__swap_wait_slow(void)
{
	gs__swap_need_back();
	(void)pthread_mutex_lock(&mu);
	while (gs__g.swap_stopped)
		(void)pthread_cond_wait(&back_cv, &mu);
	(void)pthread_mutex_unlock(&mu);
}

/* mu held. gs__g.swap_stopped: from the start of a swap-out until the
 * swap-in is done. Raising it sends every launch to the slow path, where
 * gs__swap_wait() holds it. */
static void set_stopped(bool on)
{
	__atomic_store_n(&gs__g.swap_stopped, on, __ATOMIC_RELEASE);
	gs__fast_update();
	if (!on)
		(void)pthread_cond_broadcast(&back_cv);
}

/* ---- swap-out and swap-in --------------------------------------------- */

/* Synchronises every context that owns a chunk. mu held. */
static CUresult drain(void)
{
	CUresult r = CUDA_SUCCESS;

	for (struct chunk *c = chunks; c != NULL && r == CUDA_SUCCESS;
	     c = c->next) {
		CUcontext prev;
		bool seen = false;

		for (struct chunk *d = chunks; d != c; d = d->next)
			seen = seen || d->ctx == c->ctx;
		if (seen)
			continue;
		r = drv.push(c->ctx);
		if (r != CUDA_SUCCESS)
			break;
		r = gs__real.cuCtxSynchronize();
		(void)drv.pop(&prev);
	}
	return r;
}

/* Waits (up to 10 s) for the calls gated by gate.c and the launches
 * that passed the stop before it was raised to leave the driver. The stop
 * is up. CUDA_ERROR_NOT_SUPPORTED without membarrier. mu held. */
static CUresult quiesce(void)
{
	struct timespec ts = {0, 50 * 1000};

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!fence_all())
		return CUDA_ERROR_NOT_SUPPORTED;
	for (int i = 0; i < 200000; i++) {
		if (!lin_busy())
			return CUDA_SUCCESS;
		(void)nanosleep(&ts, NULL);
	}
	return CUDA_ERROR_NOT_READY;
}

/* The swap copy stream of the current context `ctx`, made at first use.
 * NULL when the driver would not make one. mu held. */
static CUstream cstream_of(CUcontext ctx)
{
	struct cstream *cs;

	for (cs = cstreams; cs != NULL; cs = cs->next)
		if (cs->ctx == ctx)
			return cs->s;
	cs = calloc(1, sizeof(*cs));
	if (cs == NULL)
		return NULL;
	if (drv.stream_create(&cs->s, CU_STREAM_NON_BLOCKING) !=
	    CUDA_SUCCESS) {
		free(cs);
		return NULL;
	}
	cs->ctx = ctx;
	cs->next = cstreams;
	cstreams = cs;
	return cs->s;
}

/* Queues the copy of chunk `c` between its device range and its host
 * copy on its context's swap stream (synchronously where there is no
 * stream). The chunk's context is current. */
static CUresult copy_queue(struct chunk *c, bool out)
{
	CUstream s = cstream_of(c->ctx);

	if (s == NULL)
		return out ? drv.dtoh(c->host, c->base, c->size)
		           : drv.htod(c->base, c->host, c->size);
	return out ? drv.dtoh_async(c->host, c->base, c->size, s)
	           : drv.htod_async(c->base, c->host, c->size, s);
}

/* Waits for every swap stream's queued copies. mu held. */
static CUresult copies_wait(void)
{
	CUresult r = CUDA_SUCCESS, q;

	for (struct cstream *cs = cstreams; cs != NULL; cs = cs->next) {
		CUcontext prev;

		q = drv.push(cs->ctx);
		if (q == CUDA_SUCCESS) {
			q = drv.stream_sync(cs->s);
			(void)drv.pop(&prev);
		}
		if (r == CUDA_SUCCESS)
			r = q;
	}
	return r;
}

/* Phases of the last swap, for the debug log (ns). */
struct phases {
	uint64_t quiesce, drain, host, copy, unmap, map;
};

static void log_phases(const char *verb, const struct phases *ph,
                       uint64_t bytes)
{
	gs_debug(GS_SHIM_TAG, "slice=%s swap %s phases: quiesce %llu ns, drain %llu ns, host %llu ns, map %llu ns, copy %llu ns, unmap %llu ns, %llu bytes",
	         gs__g.cfg.slice, verb, (unsigned long long)ph->quiesce,
	         (unsigned long long)ph->drain, (unsigned long long)ph->host,
	         (unsigned long long)ph->map, (unsigned long long)ph->copy,
	         (unsigned long long)ph->unmap, (unsigned long long)bytes);
}

/* Queues every resident chunk's copy out (making host copies where
 * missing). mu held. */
static CUresult queue_out(struct phases *ph)
{
	CUresult r = CUDA_SUCCESS;

	for (struct chunk *c = chunks; c != NULL && r == CUDA_SUCCESS;
	     c = c->next) {
		CUcontext prev;
		uint64_t t0;

		if (c->h == 0)
			continue;
		r = drv.push(c->ctx);
		if (r != CUDA_SUCCESS)
			break;
		t0 = gs__now();
		if (!host_get(c))
			r = CUDA_ERROR_OUT_OF_MEMORY;
		ph->host += gs__now() - t0;
		if (r == CUDA_SUCCESS)
			r = copy_queue(c, true);
		(void)drv.pop(&prev);
	}
	return r;
}

/* OUT: *bytes moved. mu held. CUDA_ERROR_NOT_PERMITTED when pinned. */
static CUresult swap_out_locked(uint64_t *bytes)
{
	struct phases ph = {0};
	uint64_t t0 = gs__now(), t1;
	CUresult r, w;

	*bytes = 0;
	if (swapped)
		return CUDA_SUCCESS;
	if (pinned != GS_SWAP_PIN_NONE)
		return CUDA_ERROR_NOT_PERMITTED;
	set_stopped(true);
	r = quiesce();
	t1 = gs__now();
	ph.quiesce = t1 - t0;
	if (r == CUDA_SUCCESS)
		r = drain();
	ph.drain = gs__now() - t1;
	if (r != CUDA_SUCCESS) {
		set_stopped(park_stopped);
		return r;
	}
	t0 = gs__now();
	r = queue_out(&ph);
	/* Whatever was queued is waited for, even after a failure: no copy
	 * may still be reading a chunk that is released. */
	w = copies_wait();
	if (r == CUDA_SUCCESS)
		r = w;
	ph.copy = gs__now() - t0 - ph.host;
	if (r != CUDA_SUCCESS) {
		/* nothing was released: all stays in */
		set_stopped(park_stopped);
		return r;
	}
	t0 = gs__now();
	for (struct chunk *c = chunks; c != NULL; c = c->next) {
		if (c->h == 0)
			continue;
		unback(c);
		*bytes += c->size;
	}
	ph.unmap = gs__now() - t0;
	swapped = true;
	log_phases("out", &ph, *bytes);
	return CUDA_SUCCESS;
}

static CUresult swap_in_locked(uint64_t *bytes)
{
	struct phases ph = {0};
	CUresult r = CUDA_SUCCESS, w;
	uint64_t t0 = gs__now(), moved = 0, given_back = 0;

	*bytes = 0;
	if (!swapped)
		return CUDA_SUCCESS;
	for (struct chunk *c = chunks; c != NULL && r == CUDA_SUCCESS;
	     c = c->next) {
		CUcontext prev;
		uint64_t t1;

		if (c->h != 0)
			continue;
		r = drv.push(c->ctx);
		if (r != CUDA_SUCCESS)
			break;
		t1 = gs__now();
		r = back(c);
		ph.map += gs__now() - t1;
		if (r == CUDA_SUCCESS) {
			r = copy_queue(c, false);
			if (r == CUDA_SUCCESS)
				moved += c->size;
			else
				unback(c); /* stays out, its copy intact */
		}
		(void)drv.pop(&prev);
	}
	w = copies_wait();
	if (r == CUDA_SUCCESS)
		r = w;
	ph.copy = gs__now() - t0 - ph.map;
	*bytes = moved;
	if (r != CUDA_SUCCESS)
		return r; /* the rest stay out; a retry goes on */
	/* Host copies are held only while swapped out: what the daemon
	 * keeps within swap.host_memory is the swapped contents. */
	for (struct chunk *c = chunks; c != NULL; c = c->next)
		if (c->h != 0 && c->host != NULL) {
			given_back += c->size;
			host_put(c, true);
		}
	gs_debug(GS_SHIM_TAG, "slice=%s swap in: %llu bytes of host copies given back",
	         gs__g.cfg.slice, (unsigned long long)given_back);
	swapped = false;
	set_stopped(false);
	log_phases("in", &ph, moved);
	return r;
}

CUresult gs__swap_out(uint64_t *bytes)
{
	CUresult r;

	(void)pthread_mutex_lock(&mu);
	r = swap_out_locked(bytes);
	(void)pthread_mutex_unlock(&mu);
	return r;
}

CUresult gs__swap_in(uint64_t *bytes)
{
	CUresult r;

	(void)pthread_mutex_lock(&mu);
	r = swap_in_locked(bytes);
	(void)pthread_mutex_unlock(&mu);
	return r;
}

/* ---- requests through the region ------------------------------------- */

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static gs_err result_of(CUresult r)
{
	switch (r) {
	case CUDA_SUCCESS:
		return GS_OK;
	case CUDA_ERROR_NOT_PERMITTED:
		return GS_ERR_PERM;
	case CUDA_ERROR_OUT_OF_MEMORY:
		return GS_ERR_NOMEM;
	default:
		return GS_ERR_DRIVER;
	}
}

/* The watcher's sleep when no request wakes it (it looks again then, in
 * case a wake was lost: a request written by a build without the wake). */
#define WATCH_NS (10ULL * 1000 * 1000)

/* Lifts the stop of a process that joined its slice while it was parked
 * (park_stop), unless a swap-out has taken memory of it since:
 * then the swap-in lifts it. */
static void park_lift(void)
{
	(void)pthread_mutex_lock(&mu);
	if (park_stopped) {
		bool out = false;

		park_stopped = false;
		for (struct chunk *c = chunks; swapped && c != NULL;
		     c = c->next)
			out = out || c->h == 0;
		if (!out) {
			swapped = false; /* a swap-out that found nothing */
			set_stopped(false);
			gs_info(GS_SHIM_TAG,
			        "slice=%s pid=%d its slice resumed: its GPU calls go on",
			        gs__g.cfg.slice, (int)getpid());
		}
	}
	(void)pthread_mutex_unlock(&mu);
}

/* A process that joined its slice while the slice is parked (shim.c,
 * gs__on_join_parked): its GPU calls wait until the slice resumes. */
static void park_stop(void)
{
	(void)pthread_mutex_lock(&mu);
	if (!park_stopped && !gs__g.swap_stopped) {
		park_stopped = true;
		set_stopped(true);
		watch_start();
		gs_info(GS_SHIM_TAG,
		        "slice=%s pid=%d joined its slice while it is parked: its GPU calls wait until it resumes",
		        gs__g.cfg.slice, (int)getpid());
	}
	(void)pthread_mutex_unlock(&mu);
}

static void *watch_main(void *arg)
{
	enum gs_swap_verb verb;
	uint32_t seen = 0, seq;
	bool first = true;

	(void)arg;
	for (;;) {
		uint64_t bytes = 0, t0;
		enum gs_swap_pin pin;
		CUresult r;

		if ((first ? gs_region_swap_poll(gs__g.region, &gs__g.proc,
		                                 &verb, &seq)
		           : gs_region_swap_poll_wait(gs__g.region, &gs__g.proc,
		                                      seen, WATCH_NS, &verb,
		                                      &seq)) != GS_OK) {
			/* our entry or slice is gone: a process stopped only
			 * for its park goes on, to fail as deletion fails */
			park_lift();
			return NULL;
		}
		if (__atomic_load_n(&park_stopped, __ATOMIC_RELAXED) &&
		    !gs__slice_parked())
			park_lift();
		if (first) {
			seen = seq; /* what was asked before us is not ours */
			first = false;
		}
		if (seq == seen)
			continue;
		seen = seq;
		t0 = gs__now();
		r = verb == GS_SWAP_VERB_OUT ? gs__swap_out(&bytes)
		                             : gs__swap_in(&bytes);
		(void)pthread_mutex_lock(&mu);
		pin = pinned;
		(void)pthread_mutex_unlock(&mu);
		gs_debug(GS_SHIM_TAG, "slice=%s swap %s: CUresult %d, %llu bytes in %llu ns",
		         gs__g.cfg.slice, verb == GS_SWAP_VERB_OUT ? "out" : "in",
		         (int)r, (unsigned long long)bytes,
		         (unsigned long long)(gs__now() - t0));
		(void)gs_region_swap_answer(gs__g.region, &gs__g.proc, seq, verb,
		                            result_of(r), bytes, pin,
		                            realtime_ns());
	}
	return NULL;
}

static void atfork_child(void)
{
	(void)pthread_mutex_init(&mu, NULL);
	(void)pthread_cond_init(&back_cv, NULL);
	gs__g.swap_stopped = false;
	/* The parent's chunks are not the child's: its mappings and
	 * handles belong to the parent's contexts. */
	chunks = NULL;
	cstreams = NULL;
	free(subs);
	subs = NULL;
	n_subs = cap_subs = 0;
	swapped = false;
	park_stopped = false;
	watch_started = false;
	pinned = GS_SWAP_PIN_NONE;
	/* Of the parent's threads only this one is the child's; membarrier's
	 * registration is the parent's process's. */
	(void)pthread_mutex_init(&lin_mu, NULL);
	gs__lin_tls.n = 0;
	gs__lin_tls.next = NULL;
	lins = gs__lin_tls.reg ? &gs__lin_tls : NULL;
	fence = FENCE_UNKNOWN;
}

__attribute__((constructor)) static void swap_register(void)
{
	gs__on_fork_child(atfork_child);
	gs__on_join_parked(park_stop);
}
