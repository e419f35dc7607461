// swap_cudart.cu - the CUDA runtime stand-in for swap_torch.py in
// gpu-check's swap check (swap_check.sh), used where `import torch`
// fails: buffers of several sizes (one of MIB MiB) allocated with
// cudaMalloc and filled by a kernel; prints {"ready": true, "checksums":
// [...], "bytes": N}, then for each line "check" on stdin recomputes the
// checksums with a kernel and prints {"checksums": [...]}. Run under
// `gpuslice run --swap`.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

__global__ void fill(unsigned *x, size_t n, unsigned seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		unsigned v = (unsigned)i * 2654435761u ^ seed;
		v ^= v >> 15;
		x[i] = v * 2246822519u;
	}
}

__global__ void weigh(const unsigned *x, size_t n, unsigned long long *out)
{
	unsigned long long s = 0;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		s += (unsigned long long)x[i] * (i % 65521 + 1);
	atomicAdd(out, s);
}

#define NBUF 5

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 1024;
	size_t n[NBUF] = {1, 1000, 4097, 70000, mib << 18};
	unsigned *buf[NBUF];
	unsigned long long *sum, host;
	size_t bytes = 0;
	char line[64];

	if (cudaMalloc(&sum, sizeof(*sum)) != cudaSuccess)
		return 1;
	for (int b = 0; b < NBUF; b++) {
		cudaError_t e = cudaMalloc(&buf[b], n[b] * 4);
		if (e != cudaSuccess) {
			printf("{\"error\": \"%s\"}\n", cudaGetErrorString(e));
			return 1;
		}
		fill<<<256, 256>>>(buf[b], n[b], 27u + b);
		bytes += n[b] * 4;
	}
	for (int pass = 0;; pass++) {
		if (pass == 0)
			printf("{\"ready\": true, \"bytes\": %zu, ", bytes);
		else
			printf("{");
		printf("\"checksums\": [");
		for (int b = 0; b < NBUF; b++) {
			cudaMemset(sum, 0, sizeof(*sum));
			weigh<<<256, 256>>>(buf[b], n[b], sum);
			if (cudaMemcpy(&host, sum, sizeof(host), cudaMemcpyDeviceToHost) != cudaSuccess)
				return 1;
			printf("%s%llu", b ? ", " : "", host);
		}
		printf("]}\n");
		fflush(stdout);
		do {
			if (fgets(line, sizeof(line), stdin) == NULL)
				return 0;
		} while (strncmp(line, "check", 5) != 0);
	}
}
