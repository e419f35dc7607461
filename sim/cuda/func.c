/*
 * func.c - function and kernel handles of the sim driver (a CUkernel is
 * the same object as a CUfunction): lookup, attributes, names and
 * parameter info, the cost of a launch of a kernel the sim does not know
 * (from its PTX, costmodel.h), and occupancy.
 */
#include "cuda_int.h"

#include "costmodel.h"
#include "fatbin.h"
#include "gs/kernels.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- functions -------------------------------------------------------- */

CUresult gs__func_get(CUfunction f, struct gs__func **out)
{
	if (!gs__h_is(f, GS__H_FUNC))
		return CUDA_ERROR_INVALID_HANDLE;
	*out = (struct gs__func *)f;
	return CUDA_SUCCESS;
}

static CUresult func_attr(struct gs__func *f, CUfunction_attribute a, int *v)
{
	const struct gs__dev *d = gs__drv.n_dev ? &gs__drv.dev[0] : NULL;
	int cc = d ? (int)(d->cc_major * 10 + d->cc_minor) : 90;

	switch (a) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		*v = (int)f->entry->max_threads;
		break;
	case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
		*v = (int)f->entry->shared_bytes;
		break;
	case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
		*v = (int)f->entry->local_bytes;
		break;
	case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
	case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
	case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
		*v = 0;
		break;
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
		*v = f->req_cluster[a - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH];
		break;
	case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
		*v = f->nonportable_cluster;
		break;
	case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		*v = f->cluster_sched;
		break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS:
		*v = 32;
		break;
	case CU_FUNC_ATTRIBUTE_PTX_VERSION:
		*v = f->entry->ptx_version;
		break;
	case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
		*v = cc;
		break;
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		*v = f->max_dyn_smem;
		break;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		*v = f->carveout;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib,
                                    CUfunction hfunc)
{
	struct gs__func *f;
	CUresult r;

	if (pi == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(hfunc, &f);
	if (r == CUDA_SUCCESS)
		r = func_attr(f, attrib, pi);
	gs__unlock();
	return r;
}

static CUresult func_set_attr(struct gs__func *f, CUfunction_attribute a, int v)
{
	switch (a) {
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		if (v < 0 || v > 232448)
			return CUDA_ERROR_INVALID_VALUE;
		f->max_dyn_smem = v;
		return CUDA_SUCCESS;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		if (v < -1 || v > 100)
			return CUDA_ERROR_INVALID_VALUE;
		f->carveout = v;
		return CUDA_SUCCESS;
	case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
		if (v != 0 && v != 1)
			return CUDA_ERROR_INVALID_VALUE;
		f->nonportable_cluster = v != 0;
		return CUDA_SUCCESS;
	case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		if (v < 0 || v > (int)CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)
			return CUDA_ERROR_INVALID_VALUE;
		f->cluster_sched = v;
		return CUDA_SUCCESS;
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
		if (v < 0)
			return CUDA_ERROR_INVALID_VALUE;
		f->req_cluster[a - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH] = v;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc,
                                    CUfunction_attribute attrib, int value)
{
	struct gs__func *f;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(hfunc, &f);
	if (r == CUDA_SUCCESS)
		r = func_set_attr(f, attrib, value);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
	struct gs__func *f;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(hfunc, &f);
	if (r == CUDA_SUCCESS)
		f->cache_config = config;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction hfunc)
{
	struct gs__func *f;
	CUresult r;

	if (name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(hfunc, &f);
	if (r == CUDA_SUCCESS)
		*name = f->entry->name;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func, size_t paramIndex,
                                    size_t *paramOffset, size_t *paramSize)
{
	struct gs__func *f;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(func, &f);
	if (r == CUDA_SUCCESS && paramIndex >= (size_t)f->entry->n_params)
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS) {
		if (paramOffset != NULL)
			*paramOffset = f->entry->param_off[paramIndex];
		if (paramSize != NULL)
			*paramSize = f->entry->param_size[paramIndex];
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
	struct gs__func *f;
	CUresult r;

	if (hmod == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(hfunc, &f);
	if (r == CUDA_SUCCESS)
		*hmod = f->mod->library ? NULL : (CUmodule)f->mod;
	gs__unlock();
	return r;
}

/* CUDA_ERROR_INVALID_DEVICE unless dev is one of ours (the cuKernel*
 * calls that name a device; a kernel's attributes are the same on all). */
static CUresult kernel_dev_check(CUdevice dev)
{
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__dev_get(dev) != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuKernelGetAttribute(int *pi, CUfunction_attribute attrib,
                                      CUkernel kernel, CUdevice dev)
{
	CUresult r;

	if (pi == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = kernel_dev_check(dev)) != CUDA_SUCCESS)
		return r;
	return cuFuncGetAttribute(pi, attrib, (CUfunction)kernel);
}

CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int val,
                                      CUkernel kernel, CUdevice dev)
{
	CUresult r;

	if ((r = kernel_dev_check(dev)) != CUDA_SUCCESS)
		return r;
	return cuFuncSetAttribute((CUfunction)kernel, attrib, val);
}

CUresult CUDAAPI cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config,
                                        CUdevice dev)
{
	CUresult r;

	if ((r = kernel_dev_check(dev)) != CUDA_SUCCESS)
		return r;
	return cuFuncSetCacheConfig((CUfunction)kernel, config);
}

CUresult CUDAAPI cuKernelGetName(const char **name, CUkernel hfunc)
{
	return cuFuncGetName(name, (CUfunction)hfunc);
}

CUresult CUDAAPI cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex,
                                      size_t *paramOffset, size_t *paramSize)
{
	return cuFuncGetParamInfo((CUfunction)kernel, paramIndex, paramOffset,
	                          paramSize);
}

/* ---- cost of unknown kernels ------------------------------------------- */

void gs__kernel_cost(const struct gs__launch *l, const struct gs__dev *d,
                     uint64_t *dur, uint32_t *sms)
{
	const struct gs__entry *e = l->func->entry;

	if (e->kcost == NULL) {
		uint64_t blocks = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];

		*sms = (uint32_t)(blocks < d->sm_count ? blocks : d->sm_count);
		if (*sms == 0)
			*sms = 1;
		*dur = GS_SIM_DEFAULT_KERNEL_NS;
		return;
	}
	*dur = gs__kcost_ns(e->kcost, l->args, e->param_off, e->n_params,
	                    l->grid, l->block, d->sm_count,
	                    gs__dev_clock_khz(d), sms);
}

/* ---- occupancy --------------------------------------------------------- */

static int occupancy(int block, size_t smem)
{
	int warps = (block + 31) / 32;
	int by_warps, by_regs, n = 32;

	if (block <= 0 || block > 1024)
		return 0;
	by_warps = 64 / warps;
	by_regs = 65536 / (32 * warps * 32);
	if (by_warps < n)
		n = by_warps;
	if (by_regs < n)
		n = by_regs;
	if (smem > 0) {
		int by_smem = (int)(233472 / (smem + 1024));
		if (by_smem < n)
			n = by_smem;
	}
	return n;
}

int gs__func_blocks_per_sm(const struct gs__func *f, int block, size_t smem)
{
	return occupancy(block, smem + f->entry->shared_bytes);
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(
    int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize)
{
	struct gs__func *f;
	CUresult r;

	if (numBlocks == NULL || blockSize <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(func, &f);
	if (r == CUDA_SUCCESS)
		*numBlocks = occupancy(blockSize, dynamicSMemSize +
		                                      f->entry->shared_bytes);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize,
    unsigned int flags)
{
	return cuOccupancyMaxActiveBlocksPerMultiprocessor(
	    numBlocks, func, blockSize, dynamicSMemSize);
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(
    int *minGridSize, int *blockSize, CUfunction func,
    CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
    int blockSizeLimit)
{
	struct gs__func *f;
	int best = 0, best_block = 32, sms, maxt = 1024;
	size_t stat = 0;
	CUresult r;

	if (minGridSize == NULL || blockSize == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(func, &f);
	sms = gs__drv.n_dev ? (int)gs__drv.dev[0].sm_count : 1;
	{
		struct gs__ctx *c = gs__ctx_current();
		if (c != NULL)
			sms = (int)gs__drv.dev[c->dev].sm_count;
	}
	if (r == CUDA_SUCCESS) {
		maxt = (int)f->entry->max_threads;
		stat = f->entry->shared_bytes;
	}
	gs__unlock();
	if (r != CUDA_SUCCESS)
		return r;
	if (blockSizeLimit <= 0 || blockSizeLimit > maxt)
		blockSizeLimit = maxt;
	if (blockSizeLimit < 32)
		best_block = blockSizeLimit;
	for (int b = 32; b <= blockSizeLimit; b += 32) {
		size_t smem = blockSizeToDynamicSMemSize
		                  ? blockSizeToDynamicSMemSize(b)
		                  : dynamicSMemSize;
		int warps = occupancy(b, smem + stat) * ((b + 31) / 32);

		if (warps >= best) {
			best = warps;
			best_block = b;
		}
	}
	*blockSize = best_block;
	*minGridSize = occupancy(best_block, (blockSizeToDynamicSMemSize
	                                          ? blockSizeToDynamicSMemSize(
	                                                best_block)
	                                          : dynamicSMemSize) +
	                                         stat) *
	               sms;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(
    int *minGridSize, int *blockSize, CUfunction func,
    CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
    int blockSizeLimit, unsigned int flags)
{
	return cuOccupancyMaxPotentialBlockSize(
	    minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
	    dynamicSMemSize, blockSizeLimit);
}

CUresult CUDAAPI cuOccupancyAvailableDynamicSMemPerBlock(
    size_t *dynamicSmemSize, CUfunction func, int numBlocks, int blockSize)
{
	struct gs__func *f;
	CUresult r;

	if (dynamicSmemSize == NULL || numBlocks <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(func, &f);
	gs__unlock();
	if (r == CUDA_SUCCESS)
		*dynamicSmemSize = 233472 / (size_t)numBlocks - 1024;
	return r;
}

/*
 * Clusters of the launch `config` describes that fit on the device at
 * once: blocks resident per SM (occupancy above) times the SMs, divided
 * by the cluster's size (its CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, 1
 * when not given). Clusters above 8 blocks (not portable) fit nowhere.
 */
CUresult CUDAAPI cuOccupancyMaxActiveClusters(int *numClusters,
                                              CUfunction func,
                                              const CUlaunchConfig *config)
{
	struct gs__func *f;
	struct gs__ctx *ctx;
	uint64_t cluster = 1, block, resident;
	CUresult r;

	if (numClusters == NULL || config == NULL ||
	    (config->numAttrs > 0 && config->attrs == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < config->numAttrs; i++)
		if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
			const CUlaunchAttributeValue *v = &config->attrs[i].value;

			cluster = (uint64_t)v->clusterDim.x * v->clusterDim.y *
			          v->clusterDim.z;
		}
	block = (uint64_t)config->blockDimX * config->blockDimY *
	        config->blockDimZ;
	if (cluster == 0 || block == 0 || block > 1024)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(func, &f);
	if (r == CUDA_SUCCESS)
		r = gs__ctx_get(&ctx);
	if (r == CUDA_SUCCESS) {
		resident = (uint64_t)occupancy((int)block,
		                               config->sharedMemBytes +
		                                   f->entry->shared_bytes) *
		           gs__drv.dev[ctx->dev].sm_count;
		*numClusters = cluster > 8 ? 0 : (int)(resident / cluster);
	}
	gs__unlock();
	return r;
}

/*
 * The largest cluster the launch `config` could use: 8 blocks (the
 * portable limit; the sim's kernels never opt into larger ones), fewer
 * when the grid's x extent is smaller than 8 and not a multiple of it.
 */
CUresult CUDAAPI cuOccupancyMaxPotentialClusterSize(int *clusterSize,
                                                    CUfunction func,
                                                    const CUlaunchConfig *config)
{
	struct gs__func *f;
	int size = 8;
	CUresult r;

	if (clusterSize == NULL || config == NULL || config->gridDimX == 0)
		return CUDA_ERROR_INVALID_VALUE;
	while (size > 1 && config->gridDimX % (unsigned)size != 0)
		size /= 2;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(func, &f);
	gs__unlock();
	if (r == CUDA_SUCCESS)
		*clusterSize = size;
	return r;
}

/* Bank size is fixed on the GPUs the sim models (sm_70 and later): the
 * setting is checked and accepted, and changes nothing, as there. */
CUresult CUDAAPI cuFuncSetSharedMemConfig(CUfunction hfunc,
                                          CUsharedconfig config)
{
	struct gs__func *f;
	CUresult r;

	if ((unsigned)config > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(hfunc, &f);
	gs__unlock();
	return r;
}
