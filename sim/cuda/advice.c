/*
 * advice.c - unified-memory advice in the sim driver: cuMemAdvise,
 * cuMemPrefetchAsync and cuStreamAttachMemAsync are accepted on managed
 * memory, recorded, and reported back by cuMemRangeGetAttribute(s) as
 * the real driver reports them. The sim's managed memory is one host
 * mapping every device reaches, so the advice changes no placement and
 * a prefetch moves nothing; what a program can observe (the attributes,
 * the errors) is kept.
 *
 * The records are a list, oldest first, of (allocation serial, range,
 * attribute, location); an attribute's value at an address is what the
 * last record covering it says. A record of a freed allocation (its
 * serial no longer live) is ignored and dropped. Lock held where noted.
 */
#include "cuda_int.h"
#include "halloc.h"

#include <stdlib.h>
#include <string.h>

enum rec_kind { R_READ_MOSTLY, R_PREFERRED, R_ACCESSED_BY, R_PREFETCH };

struct rec {
	uint64_t serial;
	uint64_t lo, hi;
	enum rec_kind kind;
	bool set; /* SET (true) or UNSET */
	int loc;  /* device, CU_DEVICE_CPU for the host */
};

/* Most records kept (a program advising page by page in a loop would
 * otherwise grow this without bound): the oldest go first. */
#define REC_MAX 4096

static struct rec *recs;
static int n_recs, cap_recs;

static bool rec_live(const struct rec *r)
{
	struct gs__alloc *a = gs__alloc_find(r->lo, r->hi - r->lo);

	return a != NULL && a->serial == r->serial;
}

static CUresult rec_add(const struct rec *r)
{
	if (n_recs == REC_MAX) {
		memmove(recs, recs + 1, sizeof(*recs) * (size_t)(n_recs - 1));
		n_recs--;
	}
	if (n_recs == cap_recs) {
		int ncap = cap_recs ? cap_recs * 2 : 16;
		struct rec *nr = gs__realloc(recs, sizeof(*nr) * (size_t)ncap);

		if (nr == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		recs = nr;
		cap_recs = ncap;
	}
	recs[n_recs++] = *r;
	return CUDA_SUCCESS;
}

/* Drops the records of freed allocations. Lock held. */
static void recs_prune(void)
{
	int j = 0;

	for (int i = 0; i < n_recs; i++)
		if (rec_live(&recs[i]))
			recs[j++] = recs[i];
	n_recs = j;
}

/* The managed allocation holding [p, p + n). Lock held. */
static struct gs__alloc *managed_range(uint64_t p, uint64_t n)
{
	struct gs__alloc *a = n ? gs__alloc_find(p, n) : NULL;

	return a != NULL && a->kind == GS__A_MANAGED ? a : NULL;
}

/* A CUmemLocation as a device number (CU_DEVICE_CPU for the host), or
 * CU_DEVICE_INVALID when it names nothing. */
static int loc_dev(CUmemLocation l)
{
	if (l.type == CU_MEM_LOCATION_TYPE_HOST ||
	    l.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
	    l.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)
		return CU_DEVICE_CPU;
	if (l.type == CU_MEM_LOCATION_TYPE_DEVICE && gs__dev_get(l.id) != NULL)
		return l.id;
	return CU_DEVICE_INVALID;
}

CUresult CUDAAPI cuMemAdvise(CUdeviceptr devPtr, size_t count,
                             CUmem_advise advice, CUmemLocation location)
{
	struct gs__alloc *a;
	struct rec r = {0};
	CUresult res;

	if ((res = gs__enter()) != CUDA_SUCCESS)
		return res;
	a = managed_range(devPtr, count);
	r.loc = loc_dev(location);
	r.lo = devPtr;
	r.hi = devPtr + count;
	r.set = advice == CU_MEM_ADVISE_SET_READ_MOSTLY ||
	        advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION ||
	        advice == CU_MEM_ADVISE_SET_ACCESSED_BY;
	if (a == NULL || advice < CU_MEM_ADVISE_SET_READ_MOSTLY ||
	    advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY) {
		res = CUDA_ERROR_INVALID_VALUE;
	} else if ((advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION ||
	            advice == CU_MEM_ADVISE_SET_ACCESSED_BY) &&
	           r.loc == CU_DEVICE_INVALID) {
		res = CUDA_ERROR_INVALID_DEVICE;
	} else {
		r.serial = a->serial;
		r.kind = advice <= CU_MEM_ADVISE_UNSET_READ_MOSTLY
		             ? R_READ_MOSTLY
		         : advice <= CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION
		             ? R_PREFERRED
		             : R_ACCESSED_BY;
		res = rec_add(&r);
	}
	gs__unlock();
	return res;
}

CUresult gs__mem_prefetch(CUdeviceptr devPtr, size_t count,
                          CUmemLocation location, unsigned int flags,
                          CUstream hStream, bool pt)
{
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	struct gs__alloc *a;
	struct rec r = {0};
	CUresult res;

	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = gs__enter()) != CUDA_SUCCESS)
		return res;
	res = gs__stream_get(hStream, pt, &ctx, &s);
	a = managed_range(devPtr, count);
	r.loc = loc_dev(location);
	if (res == CUDA_SUCCESS && (a == NULL || r.loc == CU_DEVICE_INVALID))
		res = CUDA_ERROR_INVALID_VALUE;
	if (res == CUDA_SUCCESS && s->capture != NULL) {
		gs__capture_invalidate(s,
		                       CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
		gs__not_supported_note("cuMemPrefetchAsync in stream capture");
		res = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	if (res == CUDA_SUCCESS) {
		r.serial = a->serial;
		r.lo = devPtr;
		r.hi = devPtr + count;
		r.kind = R_PREFETCH;
		r.set = true;
		res = rec_add(&r);
	}
	gs__unlock();
	return res;
}

CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count,
                                    CUmemLocation location, unsigned int flags,
                                    CUstream hStream)
{
	return gs__mem_prefetch(devPtr, count, location, flags, hStream, false);
}

CUresult gs__attach_mem(CUstream hStream, CUdeviceptr dptr, size_t length,
                        unsigned int flags, bool pt)
{
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	struct gs__alloc *a;
	CUresult r;

	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
	    flags != CU_MEM_ATTACH_SINGLE)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__stream_get(hStream, pt, &ctx, &s);
	a = gs__alloc_find(dptr, length ? length : 1);
	/* managed memory, the whole of it (length 0) or a part (devices
	 * with concurrent managed access, as every simulated GPU has) */
	if (r == CUDA_SUCCESS && (a == NULL || a->kind != GS__A_MANAGED ||
	                          (length == 0 && dptr != a->base)))
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS && flags == CU_MEM_ATTACH_SINGLE &&
	    s == &ctx->legacy)
		r = CUDA_ERROR_INVALID_VALUE;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr,
                                        size_t length, unsigned int flags)
{
	return gs__attach_mem(hStream, dptr, length, flags, false);
}

/* ---- reading the advice back -------------------------------------------- */

/* The value of one attribute kind at address x: *set and *loc from the
 * last live record covering x (accessed-by: whether device dev is in).
 * Lock held. */
static void value_at(uint64_t x, enum rec_kind k, int dev, bool *set, int *loc)
{
	*set = false;
	*loc = CU_DEVICE_INVALID;
	for (int i = 0; i < n_recs; i++) {
		const struct rec *r = &recs[i];

		if (r->kind != k || x < r->lo || x >= r->hi)
			continue;
		if (k == R_ACCESSED_BY && r->loc != dev)
			continue;
		*set = r->set;
		*loc = r->set ? r->loc : CU_DEVICE_INVALID;
	}
}

/*
 * The attribute over [p, p + n): the same everywhere or not. Values only
 * change at record boundaries, so those (and p) are the points to look
 * at. OUT: *all_set (set on the whole range), *loc (one location on the
 * whole range, else CU_DEVICE_INVALID). Lock held.
 */
static void range_value(uint64_t p, uint64_t n, enum rec_kind k, int dev,
                        bool *all_set, int *loc)
{
	bool set;
	int l;

	value_at(p, k, dev, all_set, loc);
	for (int i = 0; i < n_recs; i++) {
		uint64_t pts[2] = {recs[i].lo, recs[i].hi};

		for (int j = 0; j < 2; j++) {
			if (pts[j] <= p || pts[j] >= p + n)
				continue;
			value_at(pts[j], k, dev, &set, &l);
			*all_set = *all_set && set;
			if (l != *loc)
				*loc = CU_DEVICE_INVALID;
		}
	}
}

static CUresult one_attr(void *data, size_t size, CUmem_range_attribute attr,
                         uint64_t p, uint64_t n)
{
	bool set;
	int loc;

	switch (attr) {
	case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY:
		if (size < 4)
			return CUDA_ERROR_INVALID_VALUE;
		range_value(p, n, R_READ_MOSTLY, 0, &set, &loc);
		*(int32_t *)data = set;
		return CUDA_SUCCESS;
	case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
	case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
		if (size < 4)
			return CUDA_ERROR_INVALID_VALUE;
		range_value(p, n,
		            attr == CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION
		                ? R_PREFERRED
		                : R_PREFETCH,
		            0, &set, &loc);
		*(int32_t *)data = loc;
		return CUDA_SUCCESS;
	case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE:
	case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID:
	case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE:
	case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID:
		if (size < 4)
			return CUDA_ERROR_INVALID_VALUE;
		range_value(p, n,
		            attr <= CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID
		                ? R_PREFERRED
		                : R_PREFETCH,
		            0, &set, &loc);
		if (attr == CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE ||
		    attr == CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE)
			*(int32_t *)data = loc == CU_DEVICE_INVALID
			                       ? CU_MEM_LOCATION_TYPE_INVALID
			                   : loc == CU_DEVICE_CPU
			                       ? CU_MEM_LOCATION_TYPE_HOST
			                       : CU_MEM_LOCATION_TYPE_DEVICE;
		else
			*(int32_t *)data = loc < 0 ? 0 : loc;
		return CUDA_SUCCESS;
	case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY: {
		int32_t *out = data;
		size_t cap = size / 4, k = 0;

		if (size == 0 || size % 4 != 0)
			return CUDA_ERROR_INVALID_VALUE;
		for (int d = CU_DEVICE_CPU; d < gs__drv.n_dev; d++) {
			range_value(p, n, R_ACCESSED_BY, d, &set, &loc);
			if (set && k < cap)
				out[k++] = d;
		}
		while (k < cap)
			out[k++] = CU_DEVICE_INVALID;
		return CUDA_SUCCESS;
	}
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult CUDAAPI cuMemRangeGetAttributes(void **data, size_t *dataSizes,
                                         CUmem_range_attribute *attributes,
                                         size_t numAttributes,
                                         CUdeviceptr devPtr, size_t count)
{
	CUresult r;

	if (data == NULL || dataSizes == NULL || attributes == NULL ||
	    numAttributes == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (managed_range(devPtr, count) == NULL)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		recs_prune();
	for (size_t i = 0; r == CUDA_SUCCESS && i < numAttributes; i++)
		r = data[i] == NULL ? CUDA_ERROR_INVALID_VALUE
		                    : one_attr(data[i], dataSizes[i],
		                               attributes[i], devPtr, count);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemRangeGetAttribute(void *data, size_t dataSize,
                                        CUmem_range_attribute attribute,
                                        CUdeviceptr devPtr, size_t count)
{
	return cuMemRangeGetAttributes(&data, &dataSize, &attribute, 1, devPtr,
	                               count);
}
