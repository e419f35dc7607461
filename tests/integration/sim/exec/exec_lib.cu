/*
 * exec_lib.cu - self-checking CUDA runtime program for the sim's PTX
 * interpreter, with the libraries ordinary programs use: Thrust
 * transform, reduce and sort, a CUB block reduce, a cooperative-groups
 * grid sync (cudaLaunchCooperativeKernel) and a call to a non-inlined
 * __device__ function. Prints "ok NAME" per check and "all ok", exits 1
 * on a mismatch.
 */
#include <cooperative_groups.h>
#include <cub/block/block_reduce.cuh>
#include <thrust/device_vector.h>
#include <thrust/host_vector.h>
#include <thrust/reduce.h>
#include <thrust/sort.h>
#include <thrust/transform.h>

#include <algorithm>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

namespace cg = cooperative_groups;

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

struct square {
	__host__ __device__ float operator()(float x) const { return x * x; }
};

__global__ void cub_sum(const int *in, int *out)
{
	typedef cub::BlockReduce<int, 128> reduce;
	__shared__ typename reduce::TempStorage tmp;
	int v = in[blockIdx.x * 128 + threadIdx.x];
	int s = reduce(tmp).Sum(v);

	if (threadIdx.x == 0)
		out[blockIdx.x] = s;
}

/* Each thread writes its rank, syncs the grid, then reads its
 * neighbour's (written by another block). */
__global__ void grid_neighbours(int *buf, int *out, int n)
{
	cg::grid_group g = cg::this_grid();
	int i = (int)g.thread_rank();

	if (i < n)
		buf[i] = i * 3;
	g.sync();
	if (i < n)
		out[i] = buf[(i + 1) % n] - buf[i];
}

__device__ __noinline__ int poly(int x, int y)
{
	return x * x + 3 * y - 7;
}

__device__ __noinline__ float blend(float a, float b, int k)
{
	return k & 1 ? a * 0.5f + b : a - b * 0.25f;
}

__global__ void calls(int *o, float *f, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		o[i] = poly(i, i & 7);
		f[i] = blend((float)i, 1.5f, i);
	}
}

int main(void)
{
	const int n = 4096;
	thrust::host_vector<float> h(n);
	for (int i = 0; i < n; i++)
		h[i] = (float)(i % 97) * 0.25f;
	thrust::device_vector<float> v = h, w(n);
	thrust::transform(v.begin(), v.end(), w.begin(), square());
	thrust::host_vector<float> hw = w;
	bool ok = true;
	for (int i = 0; i < n; i++)
		ok = ok && hw[i] == h[i] * h[i];
	check(ok, "thrust_transform");

	float s = thrust::reduce(w.begin(), w.end(), 0.0f);
	double want = 0;
	for (int i = 0; i < n; i++)
		want += (double)h[i] * h[i];
	/* the values are exact in float; only the order of the sum differs */
	check(fabs(s - want) <= want * 1e-6, "thrust_reduce");

	thrust::host_vector<int> hk(n);
	srand(3);
	for (int i = 0; i < n; i++)
		hk[i] = rand() % 100000 - 50000;
	thrust::device_vector<int> k = hk;
	thrust::sort(k.begin(), k.end());
	thrust::host_vector<int> sorted = k;
	std::sort(hk.begin(), hk.end());
	check(sorted == hk, "thrust_sort");

	{
		const int blocks = 16;
		int hin[blocks * 128], hout[blocks], *din, *dout;
		for (int i = 0; i < blocks * 128; i++)
			hin[i] = rand() % 1000 - 500;
		CK(cudaMalloc(&din, sizeof(hin)));
		CK(cudaMalloc(&dout, sizeof(hout)));
		CK(cudaMemcpy(din, hin, sizeof(hin), cudaMemcpyHostToDevice));
		cub_sum<<<blocks, 128>>>(din, dout);
		CK(cudaMemcpy(hout, dout, sizeof(hout), cudaMemcpyDeviceToHost));
		ok = true;
		for (int b = 0; b < blocks; b++) {
			int t = 0;
			for (int i = 0; i < 128; i++)
				t += hin[b * 128 + i];
			ok = ok && hout[b] == t;
		}
		check(ok, "cub_block_reduce");
		CK(cudaFree(din));
		CK(cudaFree(dout));
	}

	{
		const int m = 8 * 256;
		int *buf, *out, hout[m];
		int nn = m;
		CK(cudaMalloc(&buf, m * 4));
		CK(cudaMalloc(&out, m * 4));
		void *args[] = {&buf, &out, &nn};
		CK(cudaLaunchCooperativeKernel((void *)grid_neighbours, dim3(8),
		                               dim3(256), args, 0, 0));
		CK(cudaMemcpy(hout, out, sizeof(hout), cudaMemcpyDeviceToHost));
		ok = true;
		for (int i = 0; i < m; i++)
			ok = ok && hout[i] == ((i + 1) % m) * 3 - i * 3;
		check(ok, "grid_sync");
		CK(cudaFree(buf));
		CK(cudaFree(out));
	}

	{
		const int m = 1000;
		int *o, ho[m];
		float *f, hf[m];
		CK(cudaMalloc(&o, m * 4));
		CK(cudaMalloc(&f, m * 4));
		calls<<<(m + 127) / 128, 128>>>(o, f, m);
		CK(cudaMemcpy(ho, o, sizeof(ho), cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(hf, f, sizeof(hf), cudaMemcpyDeviceToHost));
		ok = true;
		for (int i = 0; i < m; i++) {
			float a = (float)i, b = 1.5f;
			float r = i & 1 ? a * 0.5f + b : a - b * 0.25f;
			ok = ok && ho[i] == i * i + 3 * (i & 7) - 7 && hf[i] == r;
		}
		check(ok, "device_function_call");
		CK(cudaFree(o));
		CK(cudaFree(f));
	}
	CK(cudaDeviceSynchronize());
	if (failures) {
		printf("%d checks failed\n", failures);
		return 1;
	}
	printf("all ok\n");
	return 0;
}
