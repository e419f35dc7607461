/*
 * exec_bench.c - the sim's PTX interpreter's speed (make bench, section
 * exec): runs hand-written kernels whose thread-instruction counts are
 * known exactly and prints thread-instructions per second of the
 * launching thread's CPU time (the interpreter runs in cuLaunchKernel on
 * one core). Kernels: an FMA loop (ALU and branches), a strided vector
 * add (global loads/stores), a shared-memory tree reduction with
 * bar.sync. Needs a simulated node (GPUSLICE_SIM_DIR).
 */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char *ptx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    /* per thread: 6 + 4 * iters + 4 */
    ".visible .entry fma_loop(.param .u64 out, .param .u32 iters)\n{\n"
    " .reg .pred %p<2>; .reg .b32 %r<4>; .reg .f32 %f<3>; .reg .b64 %rd<4>;\n"
    " ld.param.u64 %rd1, [out]; ld.param.u32 %r1, [iters];\n"
    " mov.u32 %r2, %tid.x; cvt.rn.f32.u32 %f1, %r2;\n"
    " mov.f32 %f2, 0f3F800000; mov.u32 %r3, 0;\n"
    "$L: fma.rn.f32 %f2, %f2, %f1, 0f3F000000; add.s32 %r3, %r3, 1;\n"
    " setp.lt.u32 %p1, %r3, %r1; @%p1 bra $L;\n"
    " mul.wide.u32 %rd2, %r2, 4; add.s64 %rd3, %rd1, %rd2;\n"
    " st.global.f32 [%rd3], %f2; ret;\n}\n"
    /* per thread: 10 + 8 * iterations of its grid-stride loop */
    ".visible .entry vadd(.param .u64 c, .param .u64 a, .param .u64 b,"
    " .param .u32 n)\n{\n"
    " .reg .pred %p<2>; .reg .b32 %r<8>; .reg .f32 %f<4>; .reg .b64 %rd<10>;\n"
    " ld.param.u64 %rd1, [c]; ld.param.u64 %rd2, [a]; ld.param.u64 %rd3, [b];\n"
    " ld.param.u32 %r1, [n]; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x;\n"
    " mov.u32 %r4, %tid.x; mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    " mov.u32 %r6, %nctaid.x; mul.lo.s32 %r7, %r6, %r3;\n"
    "$V: mul.wide.u32 %rd4, %r5, 4; add.s64 %rd5, %rd2, %rd4;\n"
    " add.s64 %rd6, %rd3, %rd4; ld.global.f32 %f1, [%rd5];\n"
    " ld.global.f32 %f2, [%rd6]; add.f32 %f3, %f1, %f2;\n"
    " add.s64 %rd7, %rd1, %rd4; st.global.f32 [%rd7], %f3;\n"
    " add.s32 %r5, %r5, %r7; setp.lt.u32 %p1, %r5, %r1; @%p1 bra $V;\n"
    " ret;\n}\n";

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define CK(x)                                                                  \
	do {                                                                   \
		CUresult r_ = (x);                                             \
		if (r_ != CUDA_SUCCESS) {                                      \
			const char *s_ = "?";                                  \
			cuGetErrorName(r_, &s_);                               \
			fprintf(stderr, "exec-bench: %s: %s\n", #x, s_);       \
			exit(1);                                               \
		}                                                              \
	} while (0)

static void report(const char *what, double instr, double s)
{
	printf("   %-44s %7.1f M thread-instr/s (%.0f M in %.2f s)\n", what,
	       instr / s / 1e6, instr / 1e6, s);
}

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fma, vadd;
	CUdeviceptr out, a, b, c;
	unsigned iters = 2000, blocks = 64, threads = 256;
	unsigned n = 1u << 22, vblocks = 128;
	double t;

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	CK(cuModuleLoadData(&mod, ptx));
	CK(cuModuleGetFunction(&fma, mod, "fma_loop"));
	CK(cuModuleGetFunction(&vadd, mod, "vadd"));
	CK(cuMemAlloc(&out, threads * 4));
	CK(cuMemAlloc(&a, (size_t)n * 4));
	CK(cuMemAlloc(&b, (size_t)n * 4));
	CK(cuMemAlloc(&c, (size_t)n * 4));
	CK(cuMemsetD32(a, 0x3f800000, n));
	CK(cuMemsetD32(b, 0x40000000, n));

	void *fargs[] = {&out, &iters};
	t = cpu_s();
	CK(cuLaunchKernel(fma, blocks, 1, 1, threads, 1, 1, 0, NULL, fargs,
	                  NULL));
	t = cpu_s() - t;
	CK(cuCtxSynchronize());
	report("fma loop (ALU, branch)",
	       (double)blocks * threads * (10.0 + 4.0 * iters), t);

	void *vargs[] = {&c, &a, &b, &n};
	unsigned stride = vblocks * threads;
	t = cpu_s();
	CK(cuLaunchKernel(vadd, vblocks, 1, 1, threads, 1, 1, 0, NULL, vargs,
	                  NULL));
	t = cpu_s() - t;
	CK(cuCtxSynchronize());
	float check;
	CK(cuMemcpyDtoH(&check, c + (size_t)(n - 1) * 4, 4));
	if (check != 3.0f) {
		fprintf(stderr, "exec-bench: vadd computed %g, want 3\n",
		        check);
		return 1;
	}
	report("grid-stride vector add (global memory)",
	       (double)stride * 10.0 + (double)n * 11.0, t);
	CK(cuModuleUnload(mod));
	return 0;
}
