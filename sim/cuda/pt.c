/*
 * pt.c - the per-thread default stream variants (_ptsz, _ptds) of the
 * entry points the sim implements. This file is compiled with
 * CUDA_API_PER_THREAD_DEFAULT_STREAM defined, so cuda.h's macros turn each
 * name below into its per-thread symbol with cuda.h's own prototype
 * (cuMemcpyHtoD -> cuMemcpyHtoD_v2_ptds, cuLaunchKernel ->
 * cuLaunchKernel_ptsz). Each forwards to the shared body with pt = true:
 * the NULL stream then means the calling context's per-thread stream.
 */
#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "pt.c must be compiled with -DCUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif
#include "cuda_int.h"

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost,
                              size_t ByteCount)
{
	return gs__xfer(X_HTOD, dstDevice, (uint64_t)(uintptr_t)srcHost,
	                ByteCount, NULL, true, true);
}

CUresult CUDAAPI cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice,
                              size_t ByteCount)
{
	return gs__xfer(X_DTOH, (uint64_t)(uintptr_t)dstHost, srcDevice,
	                ByteCount, NULL, true, true);
}

CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                              size_t ByteCount)
{
	return gs__xfer(X_DTOD, dstDevice, srcDevice, ByteCount, NULL, true,
	                true);
}

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	return gs__xfer(X_ANY, dst, src, ByteCount, NULL, true, true);
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost,
                                   size_t ByteCount, CUstream hStream)
{
	return gs__xfer(X_HTOD, dstDevice, (uint64_t)(uintptr_t)srcHost,
	                ByteCount, hStream, false, true);
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice,
                                   size_t ByteCount, CUstream hStream)
{
	return gs__xfer(X_DTOH, (uint64_t)(uintptr_t)dstHost, srcDevice,
	                ByteCount, hStream, false, true);
}

CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                   size_t ByteCount, CUstream hStream)
{
	return gs__xfer(X_DTOD, dstDevice, srcDevice, ByteCount, hStream, false,
	                true);
}

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src,
                               size_t ByteCount, CUstream hStream)
{
	return gs__xfer(X_ANY, dst, src, ByteCount, hStream, false, true);
}

CUresult CUDAAPI cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
	return gs__memset_call(dstDevice, 0, uc, 1, N, 1, NULL, true, true);
}

CUresult CUDAAPI cuMemsetD16(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
	return gs__memset_call(dstDevice, 0, us, 2, N, 1, NULL, true, true);
}

CUresult CUDAAPI cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
	return gs__memset_call(dstDevice, 0, ui, 4, N, 1, NULL, true, true);
}

CUresult CUDAAPI cuMemsetD2D8(CUdeviceptr dstDevice, size_t dstPitch,
                              unsigned char uc, size_t Width, size_t Height)
{
	return gs__memset_call(dstDevice, dstPitch, uc, 1, Width, Height, NULL,
	                       true, true);
}

CUresult CUDAAPI cuMemsetD2D16(CUdeviceptr dstDevice, size_t dstPitch,
                               unsigned short us, size_t Width, size_t Height)
{
	return gs__memset_call(dstDevice, dstPitch, us, 2, Width, Height, NULL,
	                       true, true);
}

CUresult CUDAAPI cuMemsetD2D32(CUdeviceptr dstDevice, size_t dstPitch,
                               unsigned int ui, size_t Width, size_t Height)
{
	return gs__memset_call(dstDevice, dstPitch, ui, 4, Width, Height, NULL,
	                       true, true);
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc,
                                 size_t N, CUstream hStream)
{
	return gs__memset_call(dstDevice, 0, uc, 1, N, 1, hStream, false, true);
}

CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us,
                                  size_t N, CUstream hStream)
{
	return gs__memset_call(dstDevice, 0, us, 2, N, 1, hStream, false, true);
}

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui,
                                  size_t N, CUstream hStream)
{
	return gs__memset_call(dstDevice, 0, ui, 4, N, 1, hStream, false, true);
}

CUresult CUDAAPI cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch,
                                   unsigned char uc, size_t Width,
                                   size_t Height, CUstream hStream)
{
	return gs__memset_call(dstDevice, dstPitch, uc, 1, Width, Height,
	                       hStream, false, true);
}

CUresult CUDAAPI cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch,
                                    unsigned short us, size_t Width,
                                    size_t Height, CUstream hStream)
{
	return gs__memset_call(dstDevice, dstPitch, us, 2, Width, Height,
	                       hStream, false, true);
}

CUresult CUDAAPI cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch,
                                    unsigned int ui, size_t Width,
                                    size_t Height, CUstream hStream)
{
	return gs__memset_call(dstDevice, dstPitch, ui, 4, Width, Height,
	                       hStream, false, true);
}

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize,
                                 CUstream hStream)
{
	return gs__mem_alloc_async(dptr, bytesize, NULL, hStream, true);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                         CUmemoryPool pool, CUstream hStream)
{
	if (pool == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return gs__mem_alloc_async(dptr, bytesize, pool, hStream, true);
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	return gs__mem_free_async(dptr, hStream, true);
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX,
                                unsigned int gridDimY, unsigned int gridDimZ,
                                unsigned int blockDimX, unsigned int blockDimY,
                                unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream,
                                void **kernelParams, void **extra)
{
	return gs__launch_kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX,
	                         blockDimY, blockDimZ, sharedMemBytes, hStream,
	                         kernelParams, extra, true);
}

CUresult CUDAAPI cuLaunchCooperativeKernel(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
    unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
    unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
    void **kernelParams)
{
	const unsigned int grid[3] = {gridDimX, gridDimY, gridDimZ};
	const unsigned int block[3] = {blockDimX, blockDimY, blockDimZ};

	return gs__launch_cooperative(f, grid, block, sharedMemBytes, hStream,
	                              kernelParams, true);
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                  void **kernelParams, void **extra)
{
	return gs__launch_kernel_ex(config, f, kernelParams, extra, true);
}

CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
	return gs__host_func(hStream, fn, userData, NULL, true);
}

CUresult CUDAAPI cuStreamAddCallback(CUstream hStream,
                                     CUstreamCallback callback, void *userData,
                                     unsigned int flags)
{
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return gs__host_func(hStream, NULL, userData, callback, true);
}

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
	return gs__stream_sync(hStream, true);
}

CUresult CUDAAPI cuStreamQuery(CUstream hStream)
{
	return gs__stream_query(hStream, true);
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent,
                                   unsigned int Flags)
{
	return gs__stream_wait_event(hStream, hEvent, Flags, true);
}

CUresult CUDAAPI cuStreamGetPriority(CUstream hStream, int *priority)
{
	return gs__stream_get_priority(hStream, priority, true);
}

CUresult CUDAAPI cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
	return gs__stream_get_flags(hStream, flags, true);
}

CUresult CUDAAPI cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
	return gs__stream_get_ctx(hStream, pctx, true);
}

CUresult CUDAAPI cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx,
                                   CUgreenCtx *pGreenCtx)
{
	CUresult r = gs__stream_get_ctx(hStream, pCtx, true);

	if (r == CUDA_SUCCESS && pGreenCtx != NULL)
		*pGreenCtx = NULL;
	return r;
}

CUresult CUDAAPI cuStreamGetId(CUstream hStream, unsigned long long *streamId)
{
	return gs__stream_get_id(hStream, streamId, true);
}

CUresult CUDAAPI cuStreamGetDevice(CUstream hStream, CUdevice *device)
{
	return gs__stream_get_device(hStream, device, true);
}

CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream,
                                      CUstreamCaptureMode mode)
{
	return gs__begin_capture(hStream, mode, true);
}

CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	return gs__end_capture(hStream, phGraph, true);
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream,
                                     CUstreamCaptureStatus *captureStatus)
{
	return gs__is_capturing(hStream, captureStatus, NULL, NULL, true);
}

CUresult CUDAAPI cuStreamGetCaptureInfo(
    CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
    cuuint64_t *id_out, CUgraph *graph_out,
    const CUgraphNode **dependencies_out, const CUgraphEdgeData **edgeData_out,
    size_t *numDependencies_out)
{
	return gs__capture_info(hStream, captureStatus_out, id_out, graph_out,
	                        dependencies_out, edgeData_out,
	                        numDependencies_out, true);
}

CUresult CUDAAPI
cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode *dependencies,
                                  const CUgraphEdgeData *dependencyData,
                                  size_t numDependencies, unsigned int flags)
{
	(void)dependencyData;
	return gs__capture_update_deps(hStream, dependencies, numDependencies,
	                               flags, true);
}

CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext,
                              CUdeviceptr srcDevice, CUcontext srcContext,
                              size_t ByteCount)
{
	return gs__memcpy_peer(dstDevice, dstContext, srcDevice, srcContext,
	                       ByteCount, NULL, true, true);
}

CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
                                   CUdeviceptr srcDevice, CUcontext srcContext,
                                   size_t ByteCount, CUstream hStream)
{
	return gs__memcpy_peer(dstDevice, dstContext, srcDevice, srcContext,
	                       ByteCount, hStream, false, true);
}

CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count,
                                    CUmemLocation location, unsigned int flags,
                                    CUstream hStream)
{
	return gs__mem_prefetch(devPtr, count, location, flags, hStream, true);
}

CUresult CUDAAPI cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr,
                                        size_t length, unsigned int flags)
{
	return gs__attach_mem(hStream, dptr, length, flags, true);
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
	return gs__event_record(hEvent, hStream, true);
}

CUresult CUDAAPI cuEventRecordWithFlags(CUevent hEvent, CUstream hStream,
                                        unsigned int flags)
{
	if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	return gs__event_record(hEvent, hStream, true);
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	return gs__graph_launch(hGraphExec, hStream, false, true);
}

CUresult CUDAAPI cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
	return gs__graph_launch(hGraphExec, hStream, true, true);
}

CUresult CUDAAPI
cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                             CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	return gs__graph_instantiate_params(phGraphExec, hGraph,
	                                    instantiateParams, true);
}
