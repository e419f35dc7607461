/*
 * legacy.c - the older versions of driver entry points that the real
 * driver still exports and that cuGetProcAddress hands out for old CUDA
 * versions (cuCtxDestroy beside cuCtxDestroy_v2, cuDeviceGetUuid beside
 * _v2, cuGraphInstantiate's CUDA 10/11 signatures, ...), plus the CUDA 13
 * versions cuda.h does not declare (cuCtxSynchronize_v2,
 * cuCtxGetDevice_v2).
 *
 * cuda.h renames the unversioned names to their newest version with
 * macros; this file undoes those macros so that the old symbols get their
 * own names, and declares the prototypes itself. Versions whose old
 * signature used 32-bit sizes or pointers are left to the stubs (they
 * answer CUDA_ERROR_NOT_SUPPORTED).
 */
#include "cuda_int.h"

#include <string.h>

#undef cuCtxCreate
#undef cuCtxDestroy
#undef cuCtxPopCurrent
#undef cuCtxPushCurrent
#undef cuStreamDestroy
#undef cuEventDestroy
#undef cuEventElapsedTime
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxSetFlags
#undef cuDeviceGetUuid
#undef cuGraphInstantiate
#undef cuStreamBeginCapture
#undef cuStreamGetCaptureInfo
#undef cuGraphGetEdges
#undef cuGraphNodeGetDependencies
#undef cuGraphNodeGetDependentNodes
#undef cuGraphAddDependencies
#undef cuGraphRemoveDependencies
#undef cuGraphAddKernelNode
#undef cuGraphKernelNodeGetParams
#undef cuGraphKernelNodeSetParams
#undef cuGraphExecKernelNodeSetParams
#undef cuGraphExecUpdate
#undef cuMemAdvise
#undef cuStreamUpdateCaptureDependencies
#undef cuMemPrefetchAsync

CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult CUDAAPI cuCtxDestroy(CUcontext ctx);
CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx);
CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx);
CUresult CUDAAPI cuStreamDestroy(CUstream hStream);
CUresult CUDAAPI cuEventDestroy(CUevent hEvent);
CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart,
                                    CUevent hEnd);
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev);
CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags);
CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx);
CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx);
CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                    CUgraphNode *phErrorNode, char *logBuffer,
                                    size_t bufferSize);
CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                       CUgraphNode *phErrorNode,
                                       char *logBuffer, size_t bufferSize);
CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream);
CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream hStream);
CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream,
                                        CUstreamCaptureStatus *captureStatus,
                                        cuuint64_t *id);
CUresult CUDAAPI cuStreamGetCaptureInfo_ptsz(
    CUstream hStream, CUstreamCaptureStatus *captureStatus, cuuint64_t *id);
CUresult CUDAAPI cuStreamGetCaptureInfo_v2(
    CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
    cuuint64_t *id_out, CUgraph *graph_out,
    const CUgraphNode **dependencies_out, size_t *numDependencies_out);
CUresult CUDAAPI cuStreamGetCaptureInfo_v2_ptsz(
    CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
    cuuint64_t *id_out, CUgraph *graph_out,
    const CUgraphNode **dependencies_out, size_t *numDependencies_out);

CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	return cuCtxCreate_v2(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
	return cuCtxDestroy_v2(ctx);
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
	return cuCtxPopCurrent_v2(pctx);
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
	return cuCtxPushCurrent_v2(ctx);
}

CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
	return cuStreamDestroy_v2(hStream);
}

CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
	return cuEventDestroy_v2(hEvent);
}

CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart,
                                    CUevent hEnd)
{
	return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
	return gs__primary_release(dev);
}

CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
	return gs__primary_reset(dev);
}

CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
	return gs__primary_set_flags(dev, flags);
}

CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	return gs__cuDeviceGetUuid_v1(uuid, dev);
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
	return gs__cuCtxGetDevice_v1(device);
}

CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	return gs__cuCtxGetDevice_v2(device, ctx);
}

CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx)
{
	return gs__ctx_sync(ctx);
}

CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                    CUgraphNode *phErrorNode, char *logBuffer,
                                    size_t bufferSize)
{
	return gs__graph_instantiate_legacy(phGraphExec, hGraph, phErrorNode,
	                                    logBuffer, bufferSize);
}

CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                       CUgraphNode *phErrorNode,
                                       char *logBuffer, size_t bufferSize)
{
	return gs__graph_instantiate_legacy(phGraphExec, hGraph, phErrorNode,
	                                    logBuffer, bufferSize);
}

CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream)
{
	return gs__begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, false);
}

CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream hStream)
{
	return gs__begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, true);
}

CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream,
                                        CUstreamCaptureStatus *captureStatus,
                                        cuuint64_t *id)
{
	return gs__is_capturing(hStream, captureStatus, id, NULL, false);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_ptsz(
    CUstream hStream, CUstreamCaptureStatus *captureStatus, cuuint64_t *id)
{
	return gs__is_capturing(hStream, captureStatus, id, NULL, true);
}

static CUresult capture_info_v2(CUstream hStream,
                                CUstreamCaptureStatus *captureStatus_out,
                                cuuint64_t *id_out, CUgraph *graph_out,
                                const CUgraphNode **dependencies_out,
                                size_t *numDependencies_out, bool pt)
{
	return gs__capture_info(hStream, captureStatus_out, id_out, graph_out,
	                        dependencies_out, NULL, numDependencies_out,
	                        pt);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v2(
    CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
    cuuint64_t *id_out, CUgraph *graph_out,
    const CUgraphNode **dependencies_out, size_t *numDependencies_out)
{
	return capture_info_v2(hStream, captureStatus_out, id_out, graph_out,
	                       dependencies_out, numDependencies_out, false);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v2_ptsz(
    CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
    cuuint64_t *id_out, CUgraph *graph_out,
    const CUgraphNode **dependencies_out, size_t *numDependencies_out)
{
	return capture_info_v2(hStream, captureStatus_out, id_out, graph_out,
	                       dependencies_out, numDependencies_out, true);
}

/* ---- graphs and memory advice before CUDA 12.3 / 12.2 ------------------ */
/* The CUDA 12.0-12.2 signatures (no edge data, kernel params without a
 * CUkernel, advice by device): the same work as the newest versions. */

CUresult CUDAAPI cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from,
                                 CUgraphNode *to, size_t *numEdges);
CUresult CUDAAPI cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from,
                                 CUgraphNode *to, size_t *numEdges)
{
	return cuGraphGetEdges_v2(hGraph, from, to, NULL, numEdges);
}

CUresult CUDAAPI cuGraphNodeGetDependencies(CUgraphNode hNode,
                                            CUgraphNode *dependencies,
                                            size_t *numDependencies);
CUresult CUDAAPI cuGraphNodeGetDependencies(CUgraphNode hNode,
                                            CUgraphNode *dependencies,
                                            size_t *numDependencies)
{
	return cuGraphNodeGetDependencies_v2(hNode, dependencies, NULL,
	                                     numDependencies);
}

CUresult CUDAAPI cuGraphNodeGetDependentNodes(CUgraphNode hNode,
                                              CUgraphNode *dependentNodes,
                                              size_t *numDependentNodes);
CUresult CUDAAPI cuGraphNodeGetDependentNodes(CUgraphNode hNode,
                                              CUgraphNode *dependentNodes,
                                              size_t *numDependentNodes)
{
	return cuGraphNodeGetDependentNodes_v2(hNode, dependentNodes, NULL,
	                                       numDependentNodes);
}

CUresult CUDAAPI cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from,
                                        const CUgraphNode *to,
                                        size_t numDependencies);
CUresult CUDAAPI cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from,
                                        const CUgraphNode *to,
                                        size_t numDependencies)
{
	return cuGraphAddDependencies_v2(hGraph, from, to, NULL,
	                                 numDependencies);
}

CUresult CUDAAPI cuGraphRemoveDependencies(CUgraph hGraph,
                                           const CUgraphNode *from,
                                           const CUgraphNode *to,
                                           size_t numDependencies);
CUresult CUDAAPI cuGraphRemoveDependencies(CUgraph hGraph,
                                           const CUgraphNode *from,
                                           const CUgraphNode *to,
                                           size_t numDependencies)
{
	return cuGraphRemoveDependencies_v2(hGraph, from, to, NULL,
	                                    numDependencies);
}

static void kparams_up(CUDA_KERNEL_NODE_PARAMS_v2 *out,
                       const CUDA_KERNEL_NODE_PARAMS_v1 *in)
{
	memset(out, 0, sizeof(*out));
	out->func = in->func;
	out->gridDimX = in->gridDimX;
	out->gridDimY = in->gridDimY;
	out->gridDimZ = in->gridDimZ;
	out->blockDimX = in->blockDimX;
	out->blockDimY = in->blockDimY;
	out->blockDimZ = in->blockDimZ;
	out->sharedMemBytes = in->sharedMemBytes;
	out->kernelParams = in->kernelParams;
	out->extra = in->extra;
}

CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                      const CUgraphNode *dependencies,
                                      size_t numDependencies,
                                      const CUDA_KERNEL_NODE_PARAMS_v1 *p);
CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                      const CUgraphNode *dependencies,
                                      size_t numDependencies,
                                      const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	CUDA_KERNEL_NODE_PARAMS_v2 v2;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	kparams_up(&v2, p);
	return cuGraphAddKernelNode_v2(phGraphNode, hGraph, dependencies,
	                               numDependencies, &v2);
}

CUresult CUDAAPI cuGraphKernelNodeGetParams(CUgraphNode hNode,
                                            CUDA_KERNEL_NODE_PARAMS_v1 *p);
CUresult CUDAAPI cuGraphKernelNodeGetParams(CUgraphNode hNode,
                                            CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	CUDA_KERNEL_NODE_PARAMS_v2 v2;
	CUresult r;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	r = cuGraphKernelNodeGetParams_v2(hNode, &v2);
	if (r != CUDA_SUCCESS)
		return r;
	p->func = v2.func;
	p->gridDimX = v2.gridDimX;
	p->gridDimY = v2.gridDimY;
	p->gridDimZ = v2.gridDimZ;
	p->blockDimX = v2.blockDimX;
	p->blockDimY = v2.blockDimY;
	p->blockDimZ = v2.blockDimZ;
	p->sharedMemBytes = v2.sharedMemBytes;
	p->kernelParams = v2.kernelParams;
	p->extra = v2.extra;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphKernelNodeSetParams(
    CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *p);
CUresult CUDAAPI cuGraphKernelNodeSetParams(CUgraphNode hNode,
                                            const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	CUDA_KERNEL_NODE_PARAMS_v2 v2;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	kparams_up(&v2, p);
	return cuGraphKernelNodeSetParams_v2(hNode, &v2);
}

CUresult CUDAAPI
cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                               const CUDA_KERNEL_NODE_PARAMS_v1 *p);
CUresult CUDAAPI
cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                               const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	CUDA_KERNEL_NODE_PARAMS_v2 v2;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	kparams_up(&v2, p);
	return cuGraphExecKernelNodeSetParams_v2(hGraphExec, hNode, &v2);
}

CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
                                   CUgraphNode *hErrorNode_out,
                                   CUgraphExecUpdateResult *updateResult_out);
CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
                                   CUgraphNode *hErrorNode_out,
                                   CUgraphExecUpdateResult *updateResult_out)
{
	CUgraphExecUpdateResultInfo info = {0};
	CUresult r;

	if (hErrorNode_out == NULL || updateResult_out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	r = cuGraphExecUpdate_v2(hGraphExec, hGraph, &info);
	*hErrorNode_out = info.errorNode;
	*updateResult_out = info.result;
	return r;
}

/* A device number as a CUmemLocation (CU_DEVICE_CPU: the host). */
static CUmemLocation dev_location(CUdevice dev)
{
	CUmemLocation l;

	l.type = dev == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST
	                              : CU_MEM_LOCATION_TYPE_DEVICE;
	l.id = dev == CU_DEVICE_CPU ? 0 : dev;
	return l;
}

CUresult CUDAAPI cuMemAdvise(CUdeviceptr devPtr, size_t count,
                             CUmem_advise advice, CUdevice device);
CUresult CUDAAPI cuMemAdvise(CUdeviceptr devPtr, size_t count,
                             CUmem_advise advice, CUdevice device)
{
	return cuMemAdvise_v2(devPtr, count, advice, dev_location(device));
}

CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count,
                                    CUdevice dstDevice, CUstream hStream);
CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count,
                                    CUdevice dstDevice, CUstream hStream)
{
	return gs__mem_prefetch(devPtr, count, dev_location(dstDevice), 0,
	                        hStream, false);
}

CUresult CUDAAPI cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count,
                                         CUdevice dstDevice, CUstream hStream);
CUresult CUDAAPI cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count,
                                         CUdevice dstDevice, CUstream hStream)
{
	return gs__mem_prefetch(devPtr, count, dev_location(dstDevice), 0,
	                        hStream, true);
}

CUresult CUDAAPI cuStreamUpdateCaptureDependencies(CUstream hStream,
                                                   CUgraphNode *dependencies,
                                                   size_t numDependencies,
                                                   unsigned int flags);
CUresult CUDAAPI cuStreamUpdateCaptureDependencies(CUstream hStream,
                                                   CUgraphNode *dependencies,
                                                   size_t numDependencies,
                                                   unsigned int flags)
{
	return gs__capture_update_deps(hStream, dependencies, numDependencies,
	                               flags, false);
}

CUresult CUDAAPI cuStreamUpdateCaptureDependencies_ptsz(
    CUstream hStream, CUgraphNode *dependencies, size_t numDependencies,
    unsigned int flags);
CUresult CUDAAPI cuStreamUpdateCaptureDependencies_ptsz(
    CUstream hStream, CUgraphNode *dependencies, size_t numDependencies,
    unsigned int flags)
{
	return gs__capture_update_deps(hStream, dependencies, numDependencies,
	                               flags, true);
}
