/*
 * gate.c - the stop at copies and memsets: while the process is swapped
 * out (swap.c), each of these waits for its memory to come back before
 * it reaches the driver; otherwise it passes straight through (one load
 * and a test). Owns nothing.
 */
#include "shim_int.h"

#define GS__GATED(sym, params, args)                                           \
	CUresult sym params                                                    \
	{                                                                      \
		if (!gs__ready())                                              \
			return gs__not_ready();                                \
		gs__swap_wait();                                               \
		return gs__real.sym args;                                      \
	}

GS__GATED(cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n))
GS__GATED(cuMemcpy_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n))
GS__GATED(cuMemcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream st), (dst, src, n, st))
GS__GATED(cuMemcpyAsync_ptsz, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream st), (dst, src, n, st))
GS__GATED(cuMemcpyHtoD_v2, (CUdeviceptr dst, const void *src, size_t n), (dst, src, n))
GS__GATED(cuMemcpyHtoD_v2_ptds, (CUdeviceptr dst, const void *src, size_t n), (dst, src, n))
GS__GATED(cuMemcpyDtoH_v2, (void *dst, CUdeviceptr src, size_t n), (dst, src, n))
GS__GATED(cuMemcpyDtoH_v2_ptds, (void *dst, CUdeviceptr src, size_t n), (dst, src, n))
GS__GATED(cuMemcpyDtoD_v2, (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n))
GS__GATED(cuMemcpyDtoD_v2_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n))
GS__GATED(cuMemcpyHtoDAsync_v2, (CUdeviceptr dst, const void *src, size_t n, CUstream st), (dst, src, n, st))
GS__GATED(cuMemcpyHtoDAsync_v2_ptsz, (CUdeviceptr dst, const void *src, size_t n, CUstream st), (dst, src, n, st))
GS__GATED(cuMemcpyDtoHAsync_v2, (void *dst, CUdeviceptr src, size_t n, CUstream st), (dst, src, n, st))
GS__GATED(cuMemcpyDtoHAsync_v2_ptsz, (void *dst, CUdeviceptr src, size_t n, CUstream st), (dst, src, n, st))
GS__GATED(cuMemcpyDtoDAsync_v2, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream st), (dst, src, n, st))
GS__GATED(cuMemcpyDtoDAsync_v2_ptsz, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream st), (dst, src, n, st))
GS__GATED(cuMemsetD8_v2, (CUdeviceptr dst, unsigned char v, size_t n), (dst, v, n))
GS__GATED(cuMemsetD8_v2_ptds, (CUdeviceptr dst, unsigned char v, size_t n), (dst, v, n))
GS__GATED(cuMemsetD32_v2, (CUdeviceptr dst, unsigned int v, size_t n), (dst, v, n))
GS__GATED(cuMemsetD32_v2_ptds, (CUdeviceptr dst, unsigned int v, size_t n), (dst, v, n))
GS__GATED(cuMemsetD8Async, (CUdeviceptr dst, unsigned char v, size_t n, CUstream st), (dst, v, n, st))
GS__GATED(cuMemsetD8Async_ptsz, (CUdeviceptr dst, unsigned char v, size_t n, CUstream st), (dst, v, n, st))
GS__GATED(cuMemsetD32Async, (CUdeviceptr dst, unsigned int v, size_t n, CUstream st), (dst, v, n, st))
GS__GATED(cuMemsetD32Async_ptsz, (CUdeviceptr dst, unsigned int v, size_t n, CUstream st), (dst, v, n, st))
