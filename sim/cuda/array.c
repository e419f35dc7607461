/*
 * array.c - CUDA arrays and mipmapped arrays of the sim driver: their
 * descriptors and the device bytes they charge (no data is kept), and
 * freeing those a context leaves behind (gs__array_ctx_gone).
 */
#include "cuda_int.h"
#include "halloc.h"
#include "mem_int.h"

#include <stdlib.h>
#include <string.h>

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
	a = gs__calloc(1, sizeof(*a));
	if (a == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	a->dev = ctx->dev;
	a->ctx = ctx;
	a->desc = *desc;
	a->levels = levels;
	a->charged = gs__round_up(bytes, GS__ALLOC_ALIGN);
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

void gs__array_ctx_gone(struct gs__ctx *ctx)
{
	gs__h_each(GS__H_ARRAY, array_gone, ctx);
	gs__h_each(GS__H_MIPMAP, array_gone, ctx);
}
