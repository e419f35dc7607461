/*
 * sim_fatbin_kernels.cu - device code the sim's fatbinary tests load
 * (tests/unit/sim_fatbin.cmake compiles it with nvcc into fatbins of each
 * kind: zstd, LZ4 and uncompressed PTX, two PTX versions, SASS only).
 * One global of each kind with known initial values, a kernel using them,
 * a kernel with a counted loop whose bound is a parameter, and the
 * sim's own gs_fill and gs_spin, and a kernel with launch bounds, static
 * shared memory and local memory.
 */
__device__ float fb_dev[4] = {1.0f, 2.0f, 3.0f, 4.0f};
__constant__ int fb_const[2];
__managed__ int fb_managed = 7;

__global__ void fb_add(float *a, const float *b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		a[i] += b[i] + fb_dev[i & 3] + (float)fb_const[0];
}

__global__ void fb_loop(float *a, int n, int iters)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		float x = a[i];
		for (int j = 0; j < iters; j++)
			x = x * 0.9f + 1.0f;
		a[i] = x;
	}
}

/* One of the sim's own kernels (include/gs/kernels.h): loaded from a
 * fatbin it must still compute its result. */
extern "C" __global__ void gs_fill(float *buf, unsigned long long n,
                                   float value)
{
	unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;

	for (unsigned long long i =
	         (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
	     i < n; i += stride)
		buf[i] = value;
}

/* gs_spin(ns): the sim's own timed kernel; the tests queue it ahead of a
 * measured launch so that host delays do not show in the measurement. */
extern "C" __global__ void gs_spin(unsigned long long ns)
{
	unsigned long long start, now;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
	do {
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
	} while (now - start < ns);
}

/* At most 128 threads a block (.maxntid in the PTX), 512 bytes of static
 * shared memory and a local array indexed at run time (a .local depot). */
__global__ void __launch_bounds__(128) fb_bounded(float *a, int j)
{
	__shared__ float tile[128];
	float loc[16];

	for (int i = 0; i < 16; i++)
		loc[i] = a[i * 128 + threadIdx.x];
	tile[threadIdx.x] = loc[j & 15];
	__syncthreads();
	a[threadIdx.x] = tile[127 - threadIdx.x];
}
