/*
 * graphmem.c - graph memory in the sim driver: the allocations that graph
 * memory nodes make (cuGraphAddMemAllocNode / cuGraphAddMemFreeNode, and
 * cuMemAllocAsync / cuMemFreeAsync captured from a stream), their
 * lifetimes as graphs run, and the graph allocator's memory on each
 * device (cuDeviceGraphMemTrim, cuDevice{Get,Set}GraphMemAttribute). The
 * node calls are graph.c's, capturing them mem.c's; graphexec.c runs the
 * nodes through here. Calls down into addr.c only. Lock held throughout.
 *
 * What it imitates (CUDA 13.0 driver API, "graph memory nodes"):
 * - An allocation's address is fixed when its alloc node is made and
 *   stays so across instantiations and launches: a sparse mapping kept in
 *   the address table as GS__A_GRAPH. It is not usable (a kernel touching
 *   it: CUDA_ERROR_ILLEGAL_ADDRESS; a copy: CUDA_ERROR_INVALID_VALUE)
 *   except while the allocation is live, and may be named by the nodes of
 *   a capture in progress.
 * - The allocation's life starts when its alloc node runs and ends when
 *   a free node for it runs, or cuMemFree / cuMemFreeAsync free it (not
 *   when it is freed in its own graph); its contents end with it (the
 *   pages are dropped: a later life reads zeros, never old data).
 * - An exec whose allocation is still live cannot be launched again
 *   (CUDA_ERROR_INVALID_VALUE) unless instantiated with
 *   CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH, which frees it first.
 * - Memory: the allocator takes device memory from the engine as
 *   allocations go live beyond what it holds, and keeps it when they end,
 *   for the next launch (USED vs RESERVED); cuDeviceGraphMemTrim gives the
 *   unused part back, and so does the end of the context.
 *
 * The address-table entry lives while its alloc node, or the exec copy
 * of that node, holds it (graph_refs), or while the allocation is live
 * (a graph destroyed with its allocation live leaves it to be freed).
 *
 *   (made) --alloc node runs--> live --free node / cuMemFree--> (made)
 *   (made, nothing holds it) --> entry removed, mapping unmapped
 */
#include "cuda_int.h"
#include "halloc.h"
#include "mem_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The address-table entry of a memory node's allocation, or NULL once it
 * is gone (freed with its context). */
static struct gs__alloc *entry_of(const struct gs__gmem_node *g)
{
	struct gs__alloc *a = gs__alloc_exact(g->dptr);

	if (a == NULL || a->kind != GS__A_GRAPH || a->serial != g->serial)
		return NULL;
	return a;
}

static uint64_t charge_of(const struct gs__alloc *a)
{
	return gs__round_up(a->size, GS__ALLOC_ALIGN);
}

/* ---- the graph allocator's memory ------------------------------------ */

/* An allocation of `bytes` goes live on dev: the allocator's held memory
 * grows to cover it (charged to the engine) when it must. */
static CUresult pool_take(int dev, uint64_t bytes)
{
	struct gs__dev *d = &gs__drv.dev[dev];
	uint64_t want = d->gmem_used + bytes;
	CUresult r;

	if (want > d->gmem_reserved) {
		r = gs__charge(dev, want - d->gmem_reserved);
		if (r != CUDA_SUCCESS)
			return r;
		d->gmem_reserved = want;
		if (want > d->gmem_reserved_high)
			d->gmem_reserved_high = want;
	}
	d->gmem_used = want;
	if (want > d->gmem_used_high)
		d->gmem_used_high = want;
	return CUDA_SUCCESS;
}

static void pool_give(int dev, uint64_t bytes)
{
	struct gs__dev *d = &gs__drv.dev[dev];

	d->gmem_used = d->gmem_used >= bytes ? d->gmem_used - bytes : 0;
}

/* What the allocator holds beyond its live allocations goes back. */
static void pool_trim(int dev)
{
	struct gs__dev *d = &gs__drv.dev[dev];

	if (d->gmem_reserved > d->gmem_used)
		gs__uncharge(dev, d->gmem_reserved - d->gmem_used);
	d->gmem_reserved = d->gmem_used;
}

/* ---- lifetimes ---------------------------------------------------------- */

/* Removes a's entry (and unmaps it) when nothing holds it any more. */
static void entry_maybe_drop(struct gs__alloc *a)
{
	if (a->graph_refs <= 0 && !a->live)
		gs__alloc_free(a);
}

/* The end of a live allocation's life: its memory goes back to the
 * allocator and its contents go (the pages are dropped). */
static void end_life(struct gs__alloc *a)
{
	a->live = false;
	pool_give(a->dev, charge_of(a));
	if (madvise((void *)(uintptr_t)a->base, (size_t)a->map_len,
	            MADV_DONTNEED) != 0)
		memset((void *)(uintptr_t)a->base, 0, (size_t)a->size);
	entry_maybe_drop(a);
}

CUresult gs__gmem_alloc_node_init(struct gs__node *n, struct gs__ctx *ctx,
                                  const CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
	const CUmemPoolProps *pp = &p->poolProps;
	struct gs__alloc a = {0};
	long page = sysconf(_SC_PAGESIZE);
	CUmemAccessDesc *acc = NULL;
	struct gs__alloc *e;
	void *m;
	int dev = pp->location.id;

	if (p->bytesize == 0 ||
	    pp->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    pp->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    pp->handleTypes != CU_MEM_HANDLE_TYPE_NONE ||
	    (p->accessDescCount > 0 && p->accessDescs == NULL) ||
	    p->accessDescCount > (size_t)gs__drv.n_dev ||
	    gs__dev_get(dev) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < p->accessDescCount; i++)
		if (p->accessDescs[i].location.type !=
		        CU_MEM_LOCATION_TYPE_DEVICE ||
		    gs__dev_get(p->accessDescs[i].location.id) == NULL ||
		    (p->accessDescs[i].flags !=
		         CU_MEM_ACCESS_FLAGS_PROT_READWRITE &&
		     p->accessDescs[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
		     p->accessDescs[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE))
			return CUDA_ERROR_INVALID_VALUE;
	if (p->bytesize > (1ULL << 47))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (p->accessDescCount > 0) {
		acc = gs__malloc(sizeof(*acc) * p->accessDescCount);
		if (acc == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		memcpy(acc, p->accessDescs, sizeof(*acc) * p->accessDescCount);
	}
	a.map_len = gs__round_up(p->bytesize, (uint64_t)page);
	m = gs__map_range(a.map_len, true);
	if (m == NULL) {
		free(acc);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a.base = (uint64_t)(uintptr_t)m;
	a.size = p->bytesize;
	a.kind = GS__A_GRAPH;
	a.backed = true;
	a.dev = dev;
	a.ctx = ctx != NULL && ctx->dev == dev ? ctx : gs__drv.dev[dev].primary;
	a.owner = n;
	a.graph_refs = 1;
	if (!gs__alloc_insert(&a)) {
		gs__unmap_range(m, a.map_len, true);
		free(acc);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	e = gs__alloc_exact(a.base);
	memset(&n->gmem, 0, sizeof(n->gmem));
	n->gmem.dptr = a.base;
	n->gmem.serial = e->serial;
	n->gmem.size = a.size;
	n->gmem.dev = dev;
	n->gmem.props = *pp;
	n->gmem.access = acc;
	n->gmem.n_access = p->accessDescCount;
	return CUDA_SUCCESS;
}

CUresult gs__gmem_free_node_init(struct gs__node *n, const struct gs__graph *g,
                                 uint64_t dptr)
{
	struct gs__alloc *a = gs__alloc_exact(dptr);
	const struct gs__node *an;

	/* only an address an alloc node returned, once per graph */
	if (a == NULL || a->kind != GS__A_GRAPH)
		return CUDA_ERROR_INVALID_VALUE;
	for (int i = 0; i < g->n_nodes; i++)
		if (g->nodes[i]->kind == GS__N_MEM_FREE &&
		    g->nodes[i]->gmem.serial == a->serial)
			return CUDA_ERROR_INVALID_VALUE;
	/* freed in its own graph, or in another one: never both */
	an = a->owner;
	if (an != NULL && (an->gmem.freed_here ||
	                   (an->graph == g && an->gmem.freed_elsewhere)))
		return CUDA_ERROR_INVALID_VALUE;
	memset(&n->gmem, 0, sizeof(n->gmem));
	n->gmem.dptr = dptr;
	n->gmem.serial = a->serial;
	n->gmem.size = a->size;
	n->gmem.dev = a->dev;
	return CUDA_SUCCESS;
}

void gs__gmem_node_added(struct gs__node *n)
{
	struct gs__alloc *a;
	struct gs__node *an;

	if (n->kind != GS__N_MEM_ALLOC && n->kind != GS__N_MEM_FREE)
		return;
	n->graph->n_mem_nodes++;
	if (n->kind != GS__N_MEM_FREE || (a = entry_of(&n->gmem)) == NULL ||
	    a->owner == NULL)
		return;
	an = (struct gs__node *)(uintptr_t)a->owner;
	if (an->graph == n->graph)
		an->gmem.freed_here = true;
	else
		an->gmem.freed_elsewhere = true;
}

void gs__gmem_node_gone(struct gs__node *n)
{
	struct gs__alloc *a;

	if (n->kind != GS__N_MEM_ALLOC && n->kind != GS__N_MEM_FREE)
		return;
	a = entry_of(&n->gmem);
	if (n->kind == GS__N_MEM_FREE) {
		struct gs__node *an =
		    a != NULL && a->owner != NULL
		        ? (struct gs__node *)(uintptr_t)a->owner
		        : NULL;

		/* a free node of another graph gone: the owner may free it */
		if (an != NULL && n->graph != NULL && an->graph != n->graph)
			an->gmem.freed_elsewhere = false;
		return;
	}
	free(n->gmem.access);
	n->gmem.access = NULL;
	if (a == NULL)
		return;
	if (a->owner == n)
		a->owner = NULL;
	a->graph_refs--;
	entry_maybe_drop(a);
}

void gs__gmem_exec_hold(struct gs__node *x)
{
	struct gs__alloc *a;

	x->gmem.access = NULL; /* the graph's node owns it */
	if (x->kind != GS__N_MEM_ALLOC || (a = entry_of(&x->gmem)) == NULL)
		return;
	a->graph_refs++;
	x->gmem.held = true;
}

void gs__gmem_exec_drop(struct gs__node *x)
{
	struct gs__alloc *a;

	if (x->kind != GS__N_MEM_ALLOC || !x->gmem.held)
		return;
	x->gmem.held = false;
	a = entry_of(&x->gmem);
	if (a == NULL)
		return;
	a->graph_refs--;
	entry_maybe_drop(a);
}

CUresult gs__gmem_launch_check(struct gs__node *nodes, int n, bool auto_free)
{
	for (int i = 0; i < n; i++) {
		struct gs__alloc *a;

		if (nodes[i].kind != GS__N_MEM_ALLOC)
			continue;
		a = entry_of(&nodes[i].gmem);
		if (a == NULL || (a->live && !auto_free))
			return CUDA_ERROR_INVALID_VALUE;
	}
	for (int i = 0; i < n; i++) {
		struct gs__alloc *a;

		if (nodes[i].kind == GS__N_MEM_ALLOC &&
		    (a = entry_of(&nodes[i].gmem)) != NULL && a->live)
			end_life(a);
	}
	return CUDA_SUCCESS;
}

CUresult gs__gmem_run(const struct gs__node *n)
{
	struct gs__alloc *a = entry_of(&n->gmem);
	CUresult r;

	if (a == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (n->kind == GS__N_MEM_ALLOC) {
		if (a->live)
			return CUDA_ERROR_INVALID_VALUE;
		r = pool_take(a->dev, charge_of(a));
		if (r == CUDA_SUCCESS)
			a->live = true;
		return r;
	}
	if (!a->live)
		return CUDA_ERROR_INVALID_VALUE; /* freed already */
	end_life(a);
	return CUDA_SUCCESS;
}

CUresult gs__gmem_free_call(struct gs__alloc *a)
{
	const struct gs__node *an = a->owner;

	/* not live, or freed by its own graph: not the caller's to free */
	if (!a->live || (an != NULL && an->gmem.freed_here))
		return CUDA_ERROR_INVALID_VALUE;
	end_life(a);
	return CUDA_SUCCESS;
}

void gs__gmem_ctx_gone(struct gs__ctx *ctx)
{
	for (int i = 0; i < gs__drv.n_allocs; i++) {
		struct gs__alloc *a = &gs__drv.allocs[i];

		if (a->kind == GS__A_GRAPH && a->ctx == ctx && a->live) {
			a->live = false;
			pool_give(a->dev, charge_of(a));
		}
	}
	pool_trim(ctx->dev);
}

/* ---- device calls -------------------------------------------------------- */

CUresult CUDAAPI cuDeviceGraphMemTrim(CUdevice device)
{
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (gs__dev_get(device) == NULL)
		r = CUDA_ERROR_INVALID_DEVICE;
	else
		pool_trim(device);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuDeviceGetGraphMemAttribute(CUdevice device,
                                              CUgraphMem_attribute attr,
                                              void *value)
{
	cuuint64_t *out = value; /* every attribute is a cuuint64_t */
	struct gs__dev *d;
	CUresult r;

	if (value == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	d = gs__dev_get(device);
	if (d == NULL) {
		gs__unlock();
		return CUDA_ERROR_INVALID_DEVICE;
	}
	switch (attr) {
	case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
		*out = d->gmem_used;
		break;
	case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
		*out = d->gmem_used_high;
		break;
	case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
		*out = d->gmem_reserved;
		break;
	case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
		*out = d->gmem_reserved_high;
		break;
	default:
		r = CUDA_ERROR_INVALID_VALUE;
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuDeviceSetGraphMemAttribute(CUdevice device,
                                              CUgraphMem_attribute attr,
                                              void *value)
{
	struct gs__dev *d;
	CUresult r;

	if (value == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	d = gs__dev_get(device);
	if (d == NULL) {
		gs__unlock();
		return CUDA_ERROR_INVALID_DEVICE;
	}
	/* only the high watermarks, and only back to zero (to the current
	 * value, as a watermark starts again from there) */
	if ((attr != CU_GRAPH_MEM_ATTR_USED_MEM_HIGH &&
	     attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) ||
	    *(cuuint64_t *)value != 0)
		r = CUDA_ERROR_INVALID_VALUE;
	else if (attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)
		d->gmem_used_high = d->gmem_used;
	else
		d->gmem_reserved_high = d->gmem_reserved;
	gs__unlock();
	return r;
}
