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
	if (dependencies_out != NULL)
		*dependencies_out = NULL;
	if (numDependencies_out != NULL)
		*numDependencies_out = 0;
	return gs__is_capturing(hStream, captureStatus_out, id_out, graph_out,
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
