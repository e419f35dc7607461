/*
 * vmm.c - virtual memory management of the sim driver: allocation
 * handles backed by a memfd (cuMemCreate/Release), reserved address
 * ranges (cuMemAddressReserve/Free), mapping handles into them
 * (cuMemMap/Unmap), access and granularity queries. Mapped ranges are
 * rows of the address table (addr.c) like any allocation.
 */
#include "cuda_int.h"
#include "halloc.h"
#include "mem_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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
	v = gs__calloc(1, sizeof(*v));
	if (v == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	v->dev = prop->location.id;
	v->size = size;
	v->prop = *prop;
	v->fd = gs_fault_hit("sim.dev_map")
	            ? -1
	            : memfd_create("gpuslice-sim-vmm", MFD_CLOEXEC);
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
	raw = gs__map_range(len, false);
	if (raw == NULL) {
		gs__unlock();
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	p = (uint8_t *)(uintptr_t)gs__round_up((uint64_t)(uintptr_t)raw, align);
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
	if (!gs__alloc_insert(&a)) {
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
	for (int i = gs__alloc_lower_bound(p) - 1; i >= 0; i--) {
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
	a = gs__alloc_exact(ptr);
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
			gs__alloc_free(a);
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
	p = gs_fault_hit("sim.dev_map")
	        ? MAP_FAILED
	        : mmap((void *)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE,
	               MAP_SHARED | MAP_FIXED, v->fd, (off_t)offset);
	if (p == MAP_FAILED) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	a.base = ptr;
	a.size = size;
	a.kind = GS__A_VMM_MAP;
	a.backed = true; /* the memfd's pages, made as they are touched */
	a.dev = v->dev;
	a.vmm = v;
	if (!gs__alloc_insert(&a)) {
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
	a = gs__alloc_exact(ptr);
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
		gs__alloc_remove(a);
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
