/*
 * gs-burn - a GPU-intensive batch job in the spirit of gpu-burn: take a
 * large buffer with cuMemAlloc, fill it, then keep the GPU busy with
 * gs_burn kernels (dependent FMAs over every element) for a set time.
 *
 * At most GS_BURN_IN_FLIGHT kernels are queued at once (the stream is
 * synchronised after each group), so the run stops close to the requested
 * time and a slice's compute limit is felt within one group.
 *
 * Prints {"wall_s","kernels","gflops","memory_bytes","iters",...}. If the
 * allocation fails (a slice's memory cap, a full GPU) it prints the error,
 * e.g. CUDA_ERROR_OUT_OF_MEMORY, and exits 1.
 */
#include <stdio.h>

#include "kit.h"

#define GS_BURN_IN_FLIGHT 4

static const char usage[] =
    "usage: gs-burn [--seconds S] [--memory SIZE] [--iters K] [--device N]\n"
    "\n"
    "Allocates SIZE of device memory, fills it, and runs gs_burn kernels\n"
    "(K dependent FMAs per float) back to back for S seconds. Prints one\n"
    "JSON line: wall_s, kernels, gflops, memory_bytes, iters.\n"
    "\n"
    "  --seconds S          how long to burn (default 10)\n"
    "  --memory SIZE        buffer size, e.g. 512MiB, 8GiB, 8G (default 1GiB)\n"
    "  --iters K            FMAs per element per kernel (default 256)\n" GS_KIT_COMMON_USAGE;

int main(int argc, char **argv)
{
	struct gs_kit_common c = {0, false};
	double seconds = 10.0, t0, wall;
	uint64_t memory = 1ULL << 30;
	long iters = 256;
	struct gs_flag flags[] = {
	    {"seconds", GS_FLAG_SECONDS, &seconds, 0, 0, NULL, false},
	    {"memory", GS_FLAG_SIZE, &memory, 4096, INT64_MAX, NULL, false},
	    {"iters", GS_FLAG_INT, &iters, 1, 1000000, NULL, false},
	    GS_KIT_COMMON_FLAGS(&c),
	};
	unsigned long long n;
	unsigned int it;
	CUdeviceptr buf = 0;
	CUstream stream = NULL;
	struct gs_kit k;
	struct gs_jline j;
	uint64_t kernels = 0;
	unsigned blocks;
	int status;
	float one = 1.0f;

	if (gs_kit_flags("gs-burn", usage, argc, argv, flags,
	                 sizeof(flags) / sizeof(flags[0]), &status))
		return status;
	n = memory / sizeof(float);
	it = (unsigned int)iters;
	if (gs_kit_open(&k, "gs-burn", &c) != 0)
		goto out;
	/* Grid-stride kernels: enough blocks to cover every SM a few times. */
	blocks = (unsigned)k.sm_count * 4;
	if (gs_kit_check(&k,
	                 gs_cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
	                 "cuStreamCreate") ||
	    gs_kit_check(&k, gs_cu.cuMemAlloc(&buf, (size_t)memory),
	                 "cuMemAlloc"))
		goto out;
	{
		void *args[] = {&buf, &n, &one};

		if (gs_kit_check(&k,
		                 gs_kit_launch(&k, GS_KIT_FILL, blocks, 1, 256,
		                               1, stream, args),
		                 "cuLaunchKernel") ||
		    gs_kit_check(&k, gs_cu.cuStreamSynchronize(stream),
		                 "cuStreamSynchronize"))
			goto out;
	}

	t0 = gs_kit_now();
	do {
		int g;

		for (g = 0; g < GS_BURN_IN_FLIGHT; g++) {
			void *args[] = {&buf, &n, &it};

			if (gs_kit_check(&k,
			                 gs_kit_launch(&k, GS_KIT_BURN, blocks,
			                               1, 256, 1, stream, args),
			                 "cuLaunchKernel"))
				goto out;
			kernels++;
		}
		if (gs_kit_check(&k, gs_cu.cuStreamSynchronize(stream),
		                 "cuStreamSynchronize"))
			goto out;
		wall = gs_kit_now() - t0;
	} while (wall < seconds);

	gs_kit_result(&k, &j);
	gs_jline_num(&j, "wall_s", wall);
	gs_jline_u64(&j, "kernels", kernels);
	gs_jline_num(&j, "gflops",
	             2.0 * (double)n * (double)it * (double)kernels / wall /
	                 1e9);
	gs_jline_u64(&j, "memory_bytes", memory);
	gs_jline_int(&j, "iters", iters);
	gs_kit_put_error(&k, &j);
	status = gs_jline_print(&j, stdout) == 0 ? GS_KIT_EXIT_OK
	                                         : GS_KIT_EXIT_FAILURE;
	goto out_free;

out:
	status = gs_kit_fail_line(&k);
out_free:
	if (buf)
		(void)gs_cu.cuMemFree(buf);
	if (stream)
		(void)gs_cu.cuStreamDestroy(stream);
	gs_kit_close(&k);
	return status;
}
