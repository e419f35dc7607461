/*
 * kernels.cu - the six kernels of the workload kit, as include/gs/kernels.h
 * lists them (names, parameter order, launch shapes). Compiled once into
 * kernels.ptx by regen-ptx.sh; the build embeds that PTX so the programs run
 * unchanged on a real GPU (the driver JIT-compiles it) and on the simulated
 * GPU (which reads each .entry's name and .param list and charges time from
 * the cost model in kernels.h, without running the code).
 *
 * Every kernel is extern "C" so its .entry name is exactly the contract's.
 * The kernels are deliberately plain: what matters is that their cost on a
 * real GPU grows the way the sim's model says (flop for matmul, burn and
 * infer_layer; bytes for fill; wall time for spin).
 */

/* gs_spin: each block spins on the global nanosecond timer until `ns` have
 * passed since the block started. */
extern "C" __global__ void gs_spin(unsigned long long ns)
{
	unsigned long long start, now;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
	do {
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
	} while (now - start < ns);
}

/* gs_matmul: C = A x B for n x n row-major floats; block (16,16), grid
 * (ceil(n/16), ceil(n/16)). Tiled through shared memory, 16x16 tiles. */
#define GS_TILE 16
extern "C" __global__ void gs_matmul(const float *A, const float *B, float *C,
				     int n)
{
	__shared__ float ta[GS_TILE][GS_TILE];
	__shared__ float tb[GS_TILE][GS_TILE];
	int row = blockIdx.y * GS_TILE + threadIdx.y;
	int col = blockIdx.x * GS_TILE + threadIdx.x;
	float acc = 0.0f;

	for (int t = 0; t < n; t += GS_TILE) {
		int ac = t + threadIdx.x, br = t + threadIdx.y;
		ta[threadIdx.y][threadIdx.x] =
			(row < n && ac < n) ? A[(size_t)row * n + ac] : 0.0f;
		tb[threadIdx.y][threadIdx.x] =
			(br < n && col < n) ? B[(size_t)br * n + col] : 0.0f;
		__syncthreads();
		for (int k = 0; k < GS_TILE; k++)
			acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
		__syncthreads();
	}
	if (row < n && col < n)
		C[(size_t)row * n + col] = acc;
}

/* gs_burn: grid-stride over n floats; each element goes through `iters`
 * dependent FMAs. x -> 0.999x + 0.001 converges to 1, so values stay
 * finite however long it runs. */
extern "C" __global__ void gs_burn(float *buf, unsigned long long n,
				   unsigned int iters)
{
	unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;

	for (unsigned long long i =
		     (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
	     i < n; i += stride) {
		float x = buf[i];
		for (unsigned int k = 0; k < iters; k++)
			x = fmaf(x, 0.999f, 0.001f);
		buf[i] = x;
	}
}

/* gs_infer_layer: out[b][j] = relu(sum_k in[b][k] * w[k][j]); block 128,
 * grid (ceil(width/128), batch). One dense layer of a small MLP. */
extern "C" __global__ void gs_infer_layer(const float *in, const float *w,
					  float *out, int batch, int width)
{
	int b = blockIdx.y;
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	const float *x = in + (size_t)b * width;
	float acc = 0.0f;

	if (b >= batch || j >= width)
		return;
	for (int k = 0; k < width; k++)
		acc += x[k] * w[(size_t)k * width + j];
	out[(size_t)b * width + j] = acc > 0.0f ? acc : 0.0f;
}

/* gs_fill: buf[i] = value over n floats, grid-stride. */
extern "C" __global__ void gs_fill(float *buf, unsigned long long n,
				   float value)
{
	unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;

	for (unsigned long long i =
		     (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
	     i < n; i += stride)
		buf[i] = value;
}

/* gs_fault: one store through p. Given an address no allocation covers, the
 * GPU raises an illegal-address fault (CUDA_ERROR_ILLEGAL_ADDRESS). The
 * store is volatile so it cannot be dropped. */
extern "C" __global__ void gs_fault(int *p)
{
	*(volatile int *)p = 0x6773;
}
