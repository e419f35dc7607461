/*
 * exec_basic.cu - self-checking CUDA runtime program for the sim's PTX
 * interpreter: vector add, SAXPY, a shared-memory + atomics reduction, a
 * warp-shuffle scan, a histogram with shared atomics and a tiled matmul.
 * Each check computes its answer on the host and compares; prints
 * "ok NAME" per check and "all ok" at the end, exits 1 on a mismatch.
 */
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda/barrier>
#include <cuda_pipeline.h>
#include <cuda_runtime.h>
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                  \
	do {                                                                   \
		cudaError_t e_ = (x);                                          \
		if (e_ != cudaSuccess) {                                       \
			printf("FAIL %s: %s\n", #x, cudaGetErrorString(e_));   \
			exit(1);                                               \
		}                                                              \
	} while (0)

static int failures;

static void check(bool ok, const char *name)
{
	printf("%s %s\n", ok ? "ok" : "FAIL", name);
	if (!ok)
		failures++;
}

__global__ void vec_add(float *c, const float *a, const float *b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}

__global__ void saxpy(int n, float a, const float *x, float *y)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += blockDim.x * gridDim.x)
		y[i] = a * x[i] + y[i];
}

__global__ void reduce_sum(const int *in, int n, unsigned long long *out)
{
	extern __shared__ int sdata[];
	unsigned t = threadIdx.x;
	unsigned i = blockIdx.x * blockDim.x * 2 + t;
	int v = 0;

	if (i < n)
		v = in[i];
	if (i + blockDim.x < n)
		v += in[i + blockDim.x];
	sdata[t] = v;
	__syncthreads();
	for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
		if (t < s)
			sdata[t] += sdata[t + s];
		__syncthreads();
	}
	if (t == 0)
		atomicAdd(out, (unsigned long long)sdata[0]);
}

/* Inclusive scan of each block with warp shuffles. */
__global__ void block_scan(const int *in, int *out, int n)
{
	__shared__ int warp_sums[32];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	int v = i < n ? in[i] : 0;

	for (int d = 1; d < 32; d <<= 1) {
		int o = __shfl_up_sync(0xffffffffu, v, d);
		if (lane >= d)
			v += o;
	}
	if (lane == 31)
		warp_sums[warp] = v;
	__syncthreads();
	if (warp == 0) {
		int w = lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : 0;
		for (int d = 1; d < 32; d <<= 1) {
			int o = __shfl_up_sync(0xffffffffu, w, d);
			if (lane >= d)
				w += o;
		}
		warp_sums[lane] = w;
	}
	__syncthreads();
	if (warp > 0)
		v += warp_sums[warp - 1];
	if (i < n)
		out[i] = v;
}

__global__ void histogram(const unsigned char *data, int n, unsigned *hist)
{
	__shared__ unsigned local[256];

	for (int b = threadIdx.x; b < 256; b += blockDim.x)
		local[b] = 0;
	__syncthreads();
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += blockDim.x * gridDim.x)
		atomicAdd(&local[data[i]], 1u);
	__syncthreads();
	for (int b = threadIdx.x; b < 256; b += blockDim.x)
		if (local[b])
			atomicAdd(&hist[b], local[b]);
}

#define TILE 16
__global__ void matmul(const float *A, const float *B, float *C, int n)
{
	__shared__ float ta[TILE][TILE], tb[TILE][TILE];
	int row = blockIdx.y * TILE + threadIdx.y;
	int col = blockIdx.x * TILE + threadIdx.x;
	float acc = 0.0f;

	for (int t = 0; t < n; t += TILE) {
		ta[threadIdx.y][threadIdx.x] =
		    row < n && t + threadIdx.x < n ? A[row * n + t + threadIdx.x] : 0;
		tb[threadIdx.y][threadIdx.x] =
		    col < n && t + threadIdx.y < n ? B[(t + threadIdx.y) * n + col] : 0;
		__syncthreads();
		for (int k = 0; k < TILE; k++)
			acc = fmaf(ta[threadIdx.y][k], tb[k][threadIdx.x], acc);
		__syncthreads();
	}
	if (row < n && col < n)
		C[row * n + col] = acc;
}

/* Warp votes and math functions whose results PTX defines exactly. */
__global__ void votes_math(const float *x, unsigned *ballots, float *r, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float v = i < n ? x[i] : 0.0f;
	unsigned b = __ballot_sync(0xffffffffu, v > 0.5f);
	int any = __any_sync(0xffffffffu, v > 0.99f);
	int all = __all_sync(0xffffffffu, v >= 0.0f);

	if ((threadIdx.x & 31) == 0)
		ballots[i >> 5] = b ^ (any << 1) ^ (all << 2);
	if (i < n)
		r[i] = sqrtf(v) + (float)(int)(v * 100.0f) / 3.0f;
}

namespace cg = cooperative_groups;

struct params {
	int a;
	double b;
	float c[3];
};

__global__ void by_value(params p, double *o)
{
	float loc[16];

	for (int i = 0; i < 16; i++)
		loc[i] = p.c[i % 3] * i;
	o[threadIdx.x] = p.a + p.b + loc[threadIdx.x % 16];
}

__global__ void math_fns(const float *x, float *y, double *z, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		y[i] = expf(x[i]) + logf(x[i] + 1.0f) + powf(x[i], 1.5f) +
		       sinf(x[i] * 10.f);
		z[i] = exp((double)x[i]) + sin((double)x[i]);
	}
}

__global__ void warp_reduce(const int *in, int *out, double *dsum,
                            unsigned *mx, int *cnt)
{
	int v = in[blockIdx.x * blockDim.x + threadIdx.x], s = v;

	for (int o = 16; o > 0; o >>= 1)
		s += __shfl_xor_sync(0xffffffffu, s, o);
#if __CUDA_ARCH__ >= 800 /* redux.sync: sm_80 and later */
	unsigned r = __reduce_add_sync(0xffffffffu, (unsigned)v);
#else
	unsigned r = (unsigned)s;
#endif
	cg::thread_block_tile<8> t8 =
	    cg::tiled_partition<8>(cg::this_thread_block());
	int s8 = cg::reduce(t8, v, cg::plus<int>());
	int c = __syncthreads_count(v > 50);

	if ((threadIdx.x & 31) == 0)
		out[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = s - (int)r;
	if (t8.thread_rank() == 0)
		atomicAdd(dsum, (double)s8);
	atomicMax(mx, (unsigned)v);
	if (threadIdx.x == 0)
		atomicAdd(cnt, c);
}

__device__ __noinline__ int odd_step(int x)
{
	return x * 3 + 1;
}

/* Odd lanes call a function, then all lanes swap values with their
 * neighbour: the warp must be whole again for the shuffle. */
__global__ void divergent_call(int *o)
{
	__shared__ int seen[64];
	int v = threadIdx.x;

	if (threadIdx.x & 1)
		v = odd_step(v);
	int s = __shfl_xor_sync(0xffffffffu, v, 1);
	seen[threadIdx.x] = v;
	__syncthreads();
	o[threadIdx.x] = v + s + seen[63 - threadIdx.x];
}

/* Async copies into shared memory (cp.async on sm_80 and later), then
 * each thread reads its neighbour's element. */
__global__ void async_copy(const int4 *in, int4 *out)
{
	__shared__ int4 tile[128];

	__pipeline_memcpy_async(&tile[threadIdx.x], &in[threadIdx.x],
	                        sizeof(int4));
	__pipeline_commit();
	__pipeline_wait_prior(0);
	__syncthreads();
	out[threadIdx.x] = tile[(threadIdx.x + 1) % 128];
}

/* A block-scope cuda::barrier (mbarrier on sm_90) between two phases. */
__global__ void barrier_phases(int *out)
{
	__shared__ cuda::barrier<cuda::thread_scope_block> bar;
	__shared__ int buf[256];

	if (threadIdx.x == 0)
		init(&bar, blockDim.x);
	__syncthreads();
	buf[threadIdx.x] = threadIdx.x * 2;
	bar.arrive_and_wait();
	int v = buf[(threadIdx.x + 1) % blockDim.x];
	bar.arrive_and_wait();
	buf[threadIdx.x] = v + 1;
	bar.arrive_and_wait();
	out[threadIdx.x] = buf[(threadIdx.x + 2) % blockDim.x];
}

/* One warp spins on a flag another warp of the block sets. */
__global__ void flag_wait(int *out)
{
	__shared__ volatile int flag;
	__shared__ volatile int data;

	if (threadIdx.x == 0)
		flag = 0;
	__syncthreads();
	if (threadIdx.x == 32) {
		data = 42;
		__threadfence_block();
		flag = 1;
	}
	if (threadIdx.x == 0) {
		while (flag == 0)
			;
		out[0] = data;
	}
}

__global__ void add_index(int *a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		a[i] += i;
}

__global__ void must_be_three(int v)
{
	assert(v == 3);
}

/* printf from the device: the test script checks the lines. */
__global__ void say(float x)
{
	printf("printf block %d thread %d: %.2f %s\n", blockIdx.x, threadIdx.x,
	       x, "x");
}

int main(void)
{
	const int n = 10000;
	float *ha = (float *)malloc(n * 4), *hb = (float *)malloc(n * 4),
	      *hc = (float *)malloc(n * 4);
	float *da, *db, *dc;

	srand(7);
	for (int i = 0; i < n; i++) {
		ha[i] = (float)rand() / RAND_MAX;
		hb[i] = (float)rand() / RAND_MAX;
	}
	CK(cudaMalloc(&da, n * 4));
	CK(cudaMalloc(&db, n * 4));
	CK(cudaMalloc(&dc, n * 4));
	CK(cudaMemcpy(da, ha, n * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(db, hb, n * 4, cudaMemcpyHostToDevice));

	vec_add<<<(n + 255) / 256, 256>>>(dc, da, db, n);
	CK(cudaGetLastError());
	CK(cudaMemcpy(hc, dc, n * 4, cudaMemcpyDeviceToHost));
	{
		bool ok = true;
		for (int i = 0; i < n; i++)
			ok = ok && hc[i] == ha[i] + hb[i];
		check(ok, "vector_add");
	}

	saxpy<<<8, 128>>>(n, 2.5f, da, db);
	CK(cudaMemcpy(hc, db, n * 4, cudaMemcpyDeviceToHost));
	{
		bool ok = true;
		for (int i = 0; i < n; i++)
			ok = ok && hc[i] == fmaf(2.5f, ha[i], hb[i]);
		check(ok, "saxpy");
	}

	{
		int *hi = (int *)malloc(n * 4), *di;
		unsigned long long *dsum, sum = 0, want = 0;
		for (int i = 0; i < n; i++) {
			hi[i] = rand() % 1000 - 300;
			want += (unsigned long long)(long long)hi[i];
		}
		CK(cudaMalloc(&di, n * 4));
		CK(cudaMalloc(&dsum, 8));
		CK(cudaMemcpy(di, hi, n * 4, cudaMemcpyHostToDevice));
		CK(cudaMemset(dsum, 0, 8));
		reduce_sum<<<(n + 511) / 512, 256, 256 * 4>>>(di, n, dsum);
		CK(cudaMemcpy(&sum, dsum, 8, cudaMemcpyDeviceToHost));
		check(sum == want, "reduction_shared_atomics");

		int *dout, *hout = (int *)malloc(n * 4);
		CK(cudaMalloc(&dout, n * 4));
		block_scan<<<(n + 1023) / 1024, 1024>>>(di, dout, n);
		CK(cudaMemcpy(hout, dout, n * 4, cudaMemcpyDeviceToHost));
		bool ok = true;
		int acc = 0;
		for (int i = 0; i < n; i++) {
			if (i % 1024 == 0)
				acc = 0;
			acc += hi[i];
			ok = ok && hout[i] == acc;
		}
		check(ok, "scan_shuffles");
		CK(cudaFree(di));
		CK(cudaFree(dout));
		free(hi);
		free(hout);
	}

	{
		unsigned char *hd = (unsigned char *)malloc(n), *dd;
		unsigned hh[256], want[256], *dh;
		memset(want, 0, sizeof(want));
		for (int i = 0; i < n; i++) {
			hd[i] = (unsigned char)(rand() % 256);
			want[hd[i]]++;
		}
		CK(cudaMalloc(&dd, n));
		CK(cudaMalloc(&dh, sizeof(hh)));
		CK(cudaMemcpy(dd, hd, n, cudaMemcpyHostToDevice));
		CK(cudaMemset(dh, 0, sizeof(hh)));
		histogram<<<4, 128>>>(dd, n, dh);
		CK(cudaMemcpy(hh, dh, sizeof(hh), cudaMemcpyDeviceToHost));
		check(memcmp(hh, want, sizeof(hh)) == 0, "histogram");
		free(hd);
		CK(cudaFree(dd));
		CK(cudaFree(dh));
	}

	{
		const int m = 72;
		float *A = (float *)malloc(m * m * 4), *B = (float *)malloc(m * m * 4),
		      *C = (float *)malloc(m * m * 4), *dA, *dB, *dC;
		for (int i = 0; i < m * m; i++) {
			A[i] = (float)(rand() % 17) - 8;
			B[i] = (float)(rand() % 13) / 4 - 1;
		}
		CK(cudaMalloc(&dA, m * m * 4));
		CK(cudaMalloc(&dB, m * m * 4));
		CK(cudaMalloc(&dC, m * m * 4));
		CK(cudaMemcpy(dA, A, m * m * 4, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(dB, B, m * m * 4, cudaMemcpyHostToDevice));
		dim3 grid((m + TILE - 1) / TILE, (m + TILE - 1) / TILE);
		matmul<<<grid, dim3(TILE, TILE)>>>(dA, dB, dC, m);
		CK(cudaMemcpy(C, dC, m * m * 4, cudaMemcpyDeviceToHost));
		bool ok = true;
		for (int i = 0; i < m; i++)
			for (int j = 0; j < m; j++) {
				float acc = 0;
				for (int k = 0; k < m; k++)
					acc = fmaf(A[i * m + k], B[k * m + j], acc);
				ok = ok && C[i * m + j] == acc;
			}
		check(ok, "tiled_matmul");
		CK(cudaFree(dA));
		CK(cudaFree(dB));
		CK(cudaFree(dC));
	}

	{
		/* one ballot per warp of the grid, past n too */
		unsigned *dbal, hbal[(10000 + 127) / 128 * 4];
		int nw = (n + 127) / 128 * 4;
		CK(cudaMalloc(&dbal, nw * 4));
		votes_math<<<(n + 127) / 128, 128>>>(da, dbal, dc, n);
		CK(cudaMemcpy(hbal, dbal, nw * 4, cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(hc, dc, n * 4, cudaMemcpyDeviceToHost));
		bool ok = true;
		for (int w = 0; w < nw; w++) {
			unsigned b = 0;
			int any = 0, all = 1;
			for (int l = 0; l < 32; l++) {
				int i = w * 32 + l;
				float v = i < n ? ha[i] : 0.0f;
				b |= (unsigned)(v > 0.5f) << l;
				any |= v > 0.99f;
				all &= v >= 0.0f;
			}
			ok = ok && hbal[w] == (b ^ (any << 1) ^ (all << 2));
		}
		check(ok, "warp_votes");
		ok = true;
		for (int i = 0; i < n; i++)
			ok = ok && hc[i] == sqrtf(ha[i]) + (float)(int)(ha[i] * 100.0f) / 3.0f;
		check(ok, "sqrt_div_cvt");
		CK(cudaFree(dbal));
	}
	{
		params p = {3, 0.5, {1.f, 2.f, 3.f}};
		double *o, ho[64];
		CK(cudaMalloc(&o, sizeof(ho)));
		by_value<<<1, 64>>>(p, o);
		CK(cudaMemcpy(ho, o, sizeof(ho), cudaMemcpyDeviceToHost));
		bool ok = true;
		for (int i = 0; i < 64; i++) {
			int k = i % 16;
			ok = ok && ho[i] == 3 + 0.5 + (float)(p.c[k % 3] * k);
		}
		check(ok, "struct_param_local_array");
		CK(cudaFree(o));
	}
	{
		const int m = 1000;
		float hx[m], hy[m], *x, *y;
		double hz[m], *z, e32 = 0, e64 = 0;
		for (int i = 0; i < m; i++)
			hx[i] = i * 0.01f;
		CK(cudaMalloc(&x, m * 4));
		CK(cudaMalloc(&y, m * 4));
		CK(cudaMalloc(&z, m * 8));
		CK(cudaMemcpy(x, hx, m * 4, cudaMemcpyHostToDevice));
		math_fns<<<8, 128>>>(x, y, z, m);
		CK(cudaMemcpy(hy, y, m * 4, cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(hz, z, m * 8, cudaMemcpyDeviceToHost));
		for (int i = 0; i < m; i++) {
			double v = hx[i];
			double w = exp(v) + log(v + 1.0) + pow(v, 1.5) + sin(v * 10.0);
			double wd = exp(v) + sin(v);
			e32 = fmax(e32, fabs(hy[i] - w) / (fabs(w) + 1e-6));
			e64 = fmax(e64, fabs(hz[i] - wd) / fabs(wd));
		}
		/* libdevice's documented bounds: a few ulp of each term */
		check(e32 < 1e-6 && e64 < 1e-15, "math_library_functions");
		CK(cudaFree(x));
		CK(cudaFree(y));
		CK(cudaFree(z));
	}
	{
		int hin[256], hout[8], *in, *out, *cnt, hc, c = 0;
		double *ds, hds, sum = 0;
		unsigned *mx, hmx, mm = 0;
		for (int i = 0; i < 256; i++) {
			hin[i] = (i * 37) % 101;
			sum += hin[i];
			c += hin[i] > 50;
			mm = hin[i] > (int)mm ? (unsigned)hin[i] : mm;
		}
		CK(cudaMalloc(&in, sizeof(hin)));
		CK(cudaMalloc(&out, sizeof(hout)));
		CK(cudaMalloc(&ds, 8));
		CK(cudaMalloc(&mx, 4));
		CK(cudaMalloc(&cnt, 4));
		CK(cudaMemset(ds, 0, 8));
		CK(cudaMemset(mx, 0, 4));
		CK(cudaMemset(cnt, 0, 4));
		CK(cudaMemcpy(in, hin, sizeof(hin), cudaMemcpyHostToDevice));
		warp_reduce<<<2, 128>>>(in, out, ds, mx, cnt);
		CK(cudaMemcpy(hout, out, sizeof(hout), cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(&hds, ds, 8, cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(&hmx, mx, 4, cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(&hc, cnt, 4, cudaMemcpyDeviceToHost));
		bool ok = hds == sum && hmx == mm && hc == c;
		for (int w = 0; w < 8; w++)
			ok = ok && hout[w] == 0; /* shuffle sum == redux sum */
		check(ok, "warp_reductions_cg_tiles");
	}
	{
		int *o, ho[64];
		CK(cudaMalloc(&o, sizeof(ho)));
		divergent_call<<<1, 64>>>(o);
		CK(cudaMemcpy(ho, o, sizeof(ho), cudaMemcpyDeviceToHost));
		bool ok = true;
		for (int i = 0; i < 64; i++) {
			int v = i & 1 ? i * 3 + 1 : i, j = i ^ 1, r = 63 - i;
			int s = j & 1 ? j * 3 + 1 : j, t = r & 1 ? r * 3 + 1 : r;
			ok = ok && ho[i] == v + s + t;
		}
		check(ok, "divergent_call_reconverges");
		CK(cudaFree(o));
	}
	{
		int4 hin[128], hout[128], *din, *dout;
		for (int i = 0; i < 128; i++)
			hin[i] = make_int4(i, -i, i * 7, rand());
		CK(cudaMalloc(&din, sizeof(hin)));
		CK(cudaMalloc(&dout, sizeof(hout)));
		CK(cudaMemcpy(din, hin, sizeof(hin), cudaMemcpyHostToDevice));
		async_copy<<<1, 128>>>(din, dout);
		CK(cudaMemcpy(hout, dout, sizeof(hout), cudaMemcpyDeviceToHost));
		bool ok = true;
		for (int i = 0; i < 128; i++)
			ok = ok && memcmp(&hout[i], &hin[(i + 1) % 128], 16) == 0;
		check(ok, "async_copy_to_shared");
		CK(cudaFree(din));
		CK(cudaFree(dout));
	}
	{
		int *o, ho[256];
		CK(cudaMalloc(&o, sizeof(ho)));
		barrier_phases<<<1, 256>>>(o);
		CK(cudaMemcpy(ho, o, sizeof(ho), cudaMemcpyDeviceToHost));
		bool ok = true;
		for (int i = 0; i < 256; i++)
			ok = ok && ho[i] == ((i + 3) % 256) * 2 + 1;
		check(ok, "barrier_phases");
		flag_wait<<<1, 64>>>(o);
		CK(cudaMemcpy(ho, o, 4, cudaMemcpyDeviceToHost));
		check(ho[0] == 42, "warp_waits_for_another_warp");
		CK(cudaFree(o));
	}
	{
		/* kernels captured into a graph run each time it launches */
		const int m = 1000;
		int *a, h[m];
		cudaStream_t st;
		cudaGraph_t g;
		cudaGraphExec_t ge;
		CK(cudaMalloc(&a, m * 4));
		CK(cudaMemset(a, 0, m * 4));
		CK(cudaStreamCreate(&st));
		CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
		add_index<<<4, 256, 0, st>>>(a, m);
		add_index<<<4, 256, 0, st>>>(a, m);
		CK(cudaStreamEndCapture(st, &g));
		CK(cudaGraphInstantiate(&ge, g, 0));
		for (int r = 0; r < 3; r++)
			CK(cudaGraphLaunch(ge, st));
		CK(cudaStreamSynchronize(st));
		CK(cudaMemcpy(h, a, m * 4, cudaMemcpyDeviceToHost));
		bool ok = true;
		for (int i = 0; i < m; i++)
			ok = ok && h[i] == 6 * i;
		check(ok, "graph_replays_kernels");
		CK(cudaGraphExecDestroy(ge));
		CK(cudaGraphDestroy(g));
		CK(cudaStreamDestroy(st));
		CK(cudaFree(a));
	}
	say<<<2, 2>>>(2.5f);
	CK(cudaDeviceSynchronize());
	/* last: a failed device assert ends the context, as on a GPU */
	must_be_three<<<1, 32>>>(3);
	bool ok = cudaDeviceSynchronize() == cudaSuccess;
	must_be_three<<<1, 32>>>(4);
	ok = ok && cudaDeviceSynchronize() == cudaErrorAssert;
	check(ok, "device_assert");
	if (failures) {
		printf("%d checks failed\n", failures);
		return 1;
	}
	printf("all ok\n");
	return 0;
}
