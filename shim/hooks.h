/*
 * hooks.h - the one list of entry points libgpuslice.so intercepts.
 *
 * Everything about a hook comes from this list: the exported wrapper's
 * prototype (declared with the real function's type from cuda.h, so a
 * wrapper that does not match fails to compile), the pointer to the real
 * function, the lookup table that dlsym() and cuGetProcAddress() consult,
 * and the linker version script (exports.map, generated from this file by
 * the preprocessor), so the library exports exactly these names.
 *
 * GS_CU_HOOKS: X(symbol, base, version, per_thread)
 *   symbol      the exported driver symbol (a variant: _v2, _ptsz, ...)
 *   base        the name cuGetProcAddress is asked for
 *   version     the lowest CUDA version for which cuGetProcAddress
 *               answers `base` with `symbol` (from the CUDA 13 headers)
 *   per_thread  1 for the variant returned with
 *               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
 *
 * The legacy 32-bit variants (cuMemAlloc, cuMemGetInfo, cuDeviceTotalMem
 * before 3.2) are not hooked: nothing built in this century asks for them.
 *
 * This file holds macros only: exports.map.c includes it without cuda.h.
 */
#ifndef GS_SHIM_HOOKS_H
#define GS_SHIM_HOOKS_H

#define GS_CU_HOOKS(X)                                                         \
	X(cuInit, cuInit, 2000, 0)                                             \
	X(cuGetProcAddress, cuGetProcAddress, 11030, 0)                        \
	X(cuGetProcAddress_v2, cuGetProcAddress, 12000, 0)                     \
	/* memory */                                                           \
	X(cuMemAlloc_v2, cuMemAlloc, 3020, 0)                                  \
	X(cuMemAllocPitch_v2, cuMemAllocPitch, 3020, 0)                        \
	X(cuMemAllocManaged, cuMemAllocManaged, 6000, 0)                       \
	X(cuMemFree_v2, cuMemFree, 3020, 0)                                    \
	X(cuMemAllocAsync, cuMemAllocAsync, 11020, 0)                          \
	X(cuMemAllocAsync_ptsz, cuMemAllocAsync, 11020, 1)                     \
	X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 11020, 0)          \
	X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 11020, 1)     \
	X(cuMemFreeAsync, cuMemFreeAsync, 11020, 0)                            \
	X(cuMemFreeAsync_ptsz, cuMemFreeAsync, 11020, 1)                       \
	X(cuMemCreate, cuMemCreate, 10020, 0)                                  \
	X(cuMemRelease, cuMemRelease, 10020, 0)                                \
	X(cuArrayCreate_v2, cuArrayCreate, 3020, 0)                            \
	X(cuArray3DCreate_v2, cuArray3DCreate, 3020, 0)                        \
	X(cuArrayDestroy, cuArrayDestroy, 2000, 0)                             \
	X(cuMipmappedArrayCreate, cuMipmappedArrayCreate, 5000, 0)             \
	X(cuMipmappedArrayDestroy, cuMipmappedArrayDestroy, 5000, 0)           \
	/* what the program sees of its allocations (swap.c) */                \
	X(cuMemGetAddressRange_v2, cuMemGetAddressRange, 3020, 0)              \
	X(cuPointerGetAttribute, cuPointerGetAttribute, 4000, 0)               \
	/* copies and memsets: stopped while the process is swapped out */     \
	X(cuMemcpy, cuMemcpy, 4000, 0)                                         \
	X(cuMemcpy_ptds, cuMemcpy, 7000, 1)                                    \
	X(cuMemcpyAsync, cuMemcpyAsync, 4000, 0)                               \
	X(cuMemcpyAsync_ptsz, cuMemcpyAsync, 7000, 1)                          \
	X(cuMemcpyHtoD_v2, cuMemcpyHtoD, 3020, 0)                              \
	X(cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD, 7000, 1)                         \
	X(cuMemcpyDtoH_v2, cuMemcpyDtoH, 3020, 0)                              \
	X(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH, 7000, 1)                         \
	X(cuMemcpyDtoD_v2, cuMemcpyDtoD, 3020, 0)                              \
	X(cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD, 7000, 1)                         \
	X(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync, 3020, 0)                    \
	X(cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync, 7000, 1)               \
	X(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync, 3020, 0)                    \
	X(cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync, 7000, 1)               \
	X(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync, 3020, 0)                    \
	X(cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync, 7000, 1)               \
	X(cuMemsetD8_v2, cuMemsetD8, 3020, 0)                                  \
	X(cuMemsetD8_v2_ptds, cuMemsetD8, 7000, 1)                             \
	X(cuMemsetD32_v2, cuMemsetD32, 3020, 0)                                \
	X(cuMemsetD32_v2_ptds, cuMemsetD32, 7000, 1)                           \
	X(cuMemsetD8Async, cuMemsetD8Async, 3020, 0)                           \
	X(cuMemsetD8Async_ptsz, cuMemsetD8Async, 7000, 1)                      \
	X(cuMemsetD32Async, cuMemsetD32Async, 3020, 0)                         \
	X(cuMemsetD32Async_ptsz, cuMemsetD32Async, 7000, 1)                    \
	/* the other calls that queue GPU work or touch device memory:         \
	 * stopped while the process is swapped out (gate.c) */                \
	X(cuMemcpy2D_v2, cuMemcpy2D, 3020, 0)                                  \
	X(cuMemcpy2D_v2_ptds, cuMemcpy2D, 7000, 1)                             \
	X(cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned, 3020, 0)                \
	X(cuMemcpy2DUnaligned_v2_ptds, cuMemcpy2DUnaligned, 7000, 1)           \
	X(cuMemcpy2DAsync_v2, cuMemcpy2DAsync, 3020, 0)                        \
	X(cuMemcpy2DAsync_v2_ptsz, cuMemcpy2DAsync, 7000, 1)                   \
	X(cuMemcpy3D_v2, cuMemcpy3D, 3020, 0)                                  \
	X(cuMemcpy3D_v2_ptds, cuMemcpy3D, 7000, 1)                             \
	X(cuMemcpy3DAsync_v2, cuMemcpy3DAsync, 3020, 0)                        \
	X(cuMemcpy3DAsync_v2_ptsz, cuMemcpy3DAsync, 7000, 1)                   \
	X(cuMemcpy3DPeer, cuMemcpy3DPeer, 4000, 0)                             \
	X(cuMemcpy3DPeer_ptds, cuMemcpy3DPeer, 7000, 1)                        \
	X(cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync, 4000, 0)                   \
	X(cuMemcpy3DPeerAsync_ptsz, cuMemcpy3DPeerAsync, 7000, 1)              \
	X(cuMemcpyPeer, cuMemcpyPeer, 4000, 0)                                 \
	X(cuMemcpyPeer_ptds, cuMemcpyPeer, 7000, 1)                            \
	X(cuMemcpyPeerAsync, cuMemcpyPeerAsync, 4000, 0)                       \
	X(cuMemcpyPeerAsync_ptsz, cuMemcpyPeerAsync, 7000, 1)                  \
	X(cuMemcpyAtoD_v2, cuMemcpyAtoD, 3020, 0)                              \
	X(cuMemcpyAtoD_v2_ptds, cuMemcpyAtoD, 7000, 1)                         \
	X(cuMemcpyDtoA_v2, cuMemcpyDtoA, 3020, 0)                              \
	X(cuMemcpyDtoA_v2_ptds, cuMemcpyDtoA, 7000, 1)                         \
	X(cuMemcpyHtoA_v2, cuMemcpyHtoA, 3020, 0)                              \
	X(cuMemcpyHtoA_v2_ptds, cuMemcpyHtoA, 7000, 1)                         \
	X(cuMemcpyAtoH_v2, cuMemcpyAtoH, 3020, 0)                              \
	X(cuMemcpyAtoH_v2_ptds, cuMemcpyAtoH, 7000, 1)                         \
	X(cuMemcpyAtoA_v2, cuMemcpyAtoA, 3020, 0)                              \
	X(cuMemcpyAtoA_v2_ptds, cuMemcpyAtoA, 7000, 1)                         \
	X(cuMemcpyHtoAAsync_v2, cuMemcpyHtoAAsync, 3020, 0)                    \
	X(cuMemcpyHtoAAsync_v2_ptsz, cuMemcpyHtoAAsync, 7000, 1)               \
	X(cuMemcpyAtoHAsync_v2, cuMemcpyAtoHAsync, 3020, 0)                    \
	X(cuMemcpyAtoHAsync_v2_ptsz, cuMemcpyAtoHAsync, 7000, 1)               \
	X(cuMemcpyBatchAsync, cuMemcpyBatchAsync, 12080, 0)                    \
	X(cuMemcpyBatchAsync_ptsz, cuMemcpyBatchAsync, 12080, 1)               \
	X(cuMemcpyBatchAsync_v2, cuMemcpyBatchAsync, 13000, 0)                 \
	X(cuMemcpyBatchAsync_v2_ptsz, cuMemcpyBatchAsync, 13000, 1)            \
	X(cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync, 12080, 0)                \
	X(cuMemcpy3DBatchAsync_ptsz, cuMemcpy3DBatchAsync, 12080, 1)           \
	X(cuMemcpy3DBatchAsync_v2, cuMemcpy3DBatchAsync, 13000, 0)             \
	X(cuMemcpy3DBatchAsync_v2_ptsz, cuMemcpy3DBatchAsync, 13000, 1)        \
	X(cuMemsetD16_v2, cuMemsetD16, 3020, 0)                                \
	X(cuMemsetD16_v2_ptds, cuMemsetD16, 7000, 1)                           \
	X(cuMemsetD2D8_v2, cuMemsetD2D8, 3020, 0)                              \
	X(cuMemsetD2D8_v2_ptds, cuMemsetD2D8, 7000, 1)                         \
	X(cuMemsetD2D16_v2, cuMemsetD2D16, 3020, 0)                            \
	X(cuMemsetD2D16_v2_ptds, cuMemsetD2D16, 7000, 1)                       \
	X(cuMemsetD2D32_v2, cuMemsetD2D32, 3020, 0)                            \
	X(cuMemsetD2D32_v2_ptds, cuMemsetD2D32, 7000, 1)                       \
	X(cuMemsetD16Async, cuMemsetD16Async, 3020, 0)                         \
	X(cuMemsetD16Async_ptsz, cuMemsetD16Async, 7000, 1)                    \
	X(cuMemsetD2D8Async, cuMemsetD2D8Async, 3020, 0)                       \
	X(cuMemsetD2D8Async_ptsz, cuMemsetD2D8Async, 7000, 1)                  \
	X(cuMemsetD2D16Async, cuMemsetD2D16Async, 3020, 0)                     \
	X(cuMemsetD2D16Async_ptsz, cuMemsetD2D16Async, 7000, 1)                \
	X(cuMemsetD2D32Async, cuMemsetD2D32Async, 3020, 0)                     \
	X(cuMemsetD2D32Async_ptsz, cuMemsetD2D32Async, 7000, 1)                \
	X(cuEventRecord, cuEventRecord, 2000, 0)                               \
	X(cuEventRecord_ptsz, cuEventRecord, 7000, 1)                          \
	X(cuEventRecordWithFlags, cuEventRecordWithFlags, 11010, 0)            \
	X(cuEventRecordWithFlags_ptsz, cuEventRecordWithFlags, 11010, 1)       \
	X(cuEventQuery, cuEventQuery, 2000, 0)                                 \
	X(cuCtxRecordEvent, cuCtxRecordEvent, 12050, 0)                        \
	X(cuCtxWaitEvent, cuCtxWaitEvent, 12050, 0)                            \
	X(cuStreamQuery, cuStreamQuery, 2000, 0)                               \
	X(cuStreamQuery_ptsz, cuStreamQuery, 7000, 1)                          \
	X(cuStreamWaitEvent, cuStreamWaitEvent, 3020, 0)                       \
	X(cuStreamWaitEvent_ptsz, cuStreamWaitEvent, 7000, 1)                  \
	X(cuLaunchHostFunc, cuLaunchHostFunc, 10000, 0)                        \
	X(cuLaunchHostFunc_ptsz, cuLaunchHostFunc, 10000, 1)                   \
	X(cuStreamAddCallback, cuStreamAddCallback, 5000, 0)                   \
	X(cuStreamAddCallback_ptsz, cuStreamAddCallback, 7000, 1)              \
	X(cuStreamWaitValue32_v2, cuStreamWaitValue32, 11070, 0)               \
	X(cuStreamWaitValue32_v2_ptsz, cuStreamWaitValue32, 11070, 1)          \
	X(cuStreamWaitValue64_v2, cuStreamWaitValue64, 11070, 0)               \
	X(cuStreamWaitValue64_v2_ptsz, cuStreamWaitValue64, 11070, 1)          \
	X(cuStreamWriteValue32_v2, cuStreamWriteValue32, 11070, 0)             \
	X(cuStreamWriteValue32_v2_ptsz, cuStreamWriteValue32, 11070, 1)        \
	X(cuStreamWriteValue64_v2, cuStreamWriteValue64, 11070, 0)             \
	X(cuStreamWriteValue64_v2_ptsz, cuStreamWriteValue64, 11070, 1)        \
	X(cuStreamBatchMemOp_v2, cuStreamBatchMemOp, 11070, 0)                 \
	X(cuStreamBatchMemOp_v2_ptsz, cuStreamBatchMemOp, 11070, 1)            \
	X(cuGraphUpload, cuGraphUpload, 11010, 0)                              \
	X(cuGraphUpload_ptsz, cuGraphUpload, 11010, 1)                         \
	/* what pins a slice that may swap: memory others map (swap.c) */     \
	X(cuIpcGetMemHandle, cuIpcGetMemHandle, 4010, 0)                       \
	X(cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle, 11000, 0)                 \
	X(cuCtxEnablePeerAccess, cuCtxEnablePeerAccess, 4000, 0)               \
	X(cuGraphAddMemAllocNode, cuGraphAddMemAllocNode, 11040, 0)            \
	/* the slice's view of memory */                                       \
	X(cuMemGetInfo_v2, cuMemGetInfo, 3020, 0)                              \
	X(cuDeviceTotalMem_v2, cuDeviceTotalMem, 3020, 0)                      \
	/* contexts: their overhead, and their end frees their memory */       \
	X(cuCtxCreate, cuCtxCreate, 2000, 0)                                   \
	X(cuCtxCreate_v2, cuCtxCreate, 3020, 0)                                \
	X(cuCtxCreate_v3, cuCtxCreate, 11040, 0)                               \
	X(cuCtxCreate_v4, cuCtxCreate, 12050, 0)                               \
	X(cuCtxDestroy, cuCtxDestroy, 2000, 0)                                 \
	X(cuCtxDestroy_v2, cuCtxDestroy, 4000, 0)                              \
	X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000, 0)         \
	X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, 7000, 0)       \
	X(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, 11000, 0)   \
	X(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset, 7000, 0)           \
	X(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset, 11000, 0)       \
	/* the current context: cached per thread for the launch path */       \
	X(cuCtxSetCurrent, cuCtxSetCurrent, 4000, 0)                           \
	X(cuCtxPushCurrent_v2, cuCtxPushCurrent, 4000, 0)                      \
	X(cuCtxPopCurrent_v2, cuCtxPopCurrent, 4000, 0)                        \
	/* launches: the compute limiter and the scheduler */                  \
	X(cuLaunchKernel, cuLaunchKernel, 4000, 0)                             \
	X(cuLaunchKernel_ptsz, cuLaunchKernel, 7000, 1)                        \
	X(cuLaunchKernelEx, cuLaunchKernelEx, 11060, 0)                        \
	X(cuLaunchKernelEx_ptsz, cuLaunchKernelEx, 11060, 1)                   \
	X(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel, 9000, 0)       \
	X(cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel, 9000, 1)  \
	X(cuGraphLaunch, cuGraphLaunch, 10000, 0)                              \
	X(cuGraphLaunch_ptsz, cuGraphLaunch, 10000, 1)                         \
	/* graph memory: what graph launches allocate (graphmem.c) */          \
	X(cuGraphInstantiate, cuGraphInstantiate, 10000, 0)                    \
	X(cuGraphInstantiate_v2, cuGraphInstantiate, 11000, 0)                 \
	X(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, 11040, 0)  \
	X(cuGraphInstantiateWithParams, cuGraphInstantiateWithParams, 12000,   \
	  0)                                                                   \
	X(cuGraphInstantiateWithParams_ptsz, cuGraphInstantiateWithParams,     \
	  12000, 1)                                                            \
	X(cuGraphExecDestroy, cuGraphExecDestroy, 10000, 0)                    \
	X(cuDeviceGraphMemTrim, cuDeviceGraphMemTrim, 11040, 0)                \
	/* stream capture begins: captured allocations are graph nodes */      \
	X(cuStreamBeginCapture, cuStreamBeginCapture, 10000, 0)                \
	X(cuStreamBeginCapture_ptsz, cuStreamBeginCapture, 10000, 1)           \
	X(cuStreamBeginCapture_v2, cuStreamBeginCapture, 10010, 0)             \
	X(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture, 10010, 1)        \
	X(cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph, 12030, 0)  \
	X(cuStreamBeginCaptureToGraph_ptsz, cuStreamBeginCaptureToGraph,       \
	  12030, 1)                                                            \
	/* synchronisation: completions are measured when the host waits */    \
	X(cuStreamSynchronize, cuStreamSynchronize, 2000, 0)                   \
	X(cuStreamSynchronize_ptsz, cuStreamSynchronize, 7000, 1)              \
	X(cuCtxSynchronize, cuCtxSynchronize, 2000, 0)                         \
	X(cuCtxSynchronize_v2, cuCtxSynchronize, 13000, 0)                     \
	X(cuEventSynchronize, cuEventSynchronize, 2000, 0)

/* X(symbol): NVML entry points (the slice's view of memory). */
#define GS_NVML_HOOKS(X)                                                       \
	X(nvmlDeviceGetMemoryInfo)                                             \
	X(nvmlDeviceGetMemoryInfo_v2)

#endif
