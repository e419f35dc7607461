/*
 * capture_counter.c - libgs-capture-counter.so, a driver in front of the
 * sim for the test that stream-ordered allocations ask the driver nothing
 * about capture before the process's first capture
 * (stream_ordered_allocations_ask_no_capture_state_before_a_capture.sh).
 * It depends on the sim's libcuda.so.1 (every other name resolves there),
 * answers cuStreamIsCapturing and cuStreamIsCapturing_ptsz by counting
 * the call and passing it to the sim, and exports the count
 * (gs_capture_counter_calls).
 */
#include <cuda.h>
#include <dlfcn.h>

#undef cuStreamIsCapturing

typedef CUresult (*is_capturing_fn)(CUstream, CUstreamCaptureStatus *);

CUresult CUDAAPI cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st);
CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream s,
                                          CUstreamCaptureStatus *st);
unsigned long gs_capture_counter_calls(void);

static unsigned long calls;

static CUresult pass(const char *name, CUstream s, CUstreamCaptureStatus *st)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	is_capturing_fn f = h != NULL ? (is_capturing_fn)dlsym(h, name) : NULL;

	__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
	return f != NULL ? f(s, st) : CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st)
{
	return pass("cuStreamIsCapturing", s, st);
}

CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream s,
                                          CUstreamCaptureStatus *st)
{
	return pass("cuStreamIsCapturing_ptsz", s, st);
}

unsigned long gs_capture_counter_calls(void)
{
	return __atomic_load_n(&calls, __ATOMIC_RELAXED);
}
