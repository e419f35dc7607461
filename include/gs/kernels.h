/*
 * kernels.h - the contract between the workload kit's kernels
 * (workloads/kernels.cu, embedded as PTX) and the simulated GPU's cost
 * model (sim/). The same PTX runs on a real GPU (JIT) and on the sim; the
 * sim recognises these entry points by name and derives each launch's
 * duration and SM demand from its parameters and grid, as listed here.
 * Kernels the sim does not know are timed by its cost model of their
 * grid, block and PTX (sim/cuda/costmodel.h) and leave memory as it was;
 * GS_SIM_DEFAULT_KERNEL_NS is only the fallback when the PTX is unreadable.
 *
 * All kernels are extern "C" (unmangled). Parameters are listed in order;
 * pointers are 64-bit device pointers (CUdeviceptr).
 *
 *  gs_spin(u64 ns)
 *      Each block spins on %globaltimer until `ns` nanoseconds have passed.
 *      Sim: duration = ns x waves, waves = ceil(blocks / SMs available).
 *
 *  gs_matmul(ptr A, ptr B, ptr C, s32 n)
 *      C = A x B for n x n row-major floats, block (16,16), grid
 *      (ceil(n/16), ceil(n/16)). Sim: work = 2 n^3 flop.
 *
 *  gs_burn(ptr buf, u64 n, u32 iters)
 *      Grid-stride loop over n floats; each element does `iters` dependent
 *      FMAs. Sim: work = 2 n iters flop.
 *
 *  gs_infer_layer(ptr in, ptr w, ptr out, s32 batch, s32 width)
 *      out[b][j] = relu(sum_k in[b][k] * w[k][j]), block 128, grid
 *      (ceil(width/128), batch). Sim: work = 2 batch width^2 flop.
 *
 *  gs_fill(ptr buf, u64 n, f32 value)
 *      buf[i] = value. Sim: memory-bound, 4 n bytes.
 *
 *  gs_fault(ptr p)
 *      Stores to *p. Launched with an address that is not mapped, it
 *      raises an illegal-address fault on a real GPU; the sim raises the
 *      same fault when p lies outside every live allocation of the context.
 *
 * Sim work rates: GS_SIM_FLOPS_PER_SM_NS flop per SM per ns and
 * GS_SIM_BYTES_PER_SM_NS bytes per SM per ns; a kernel using k SMs takes
 * work / (k x rate) ns, at least GS_SIM_MIN_KERNEL_NS.
 */
#ifndef GS_KERNELS_H
#define GS_KERNELS_H

#define GS_SIM_DEFAULT_KERNEL_NS 5000ULL
#define GS_SIM_MIN_KERNEL_NS 2000ULL
/* ~2 TFLOP/s over 132 SMs: the order of a naive FP32 kernel on an H100. */
#define GS_SIM_FLOPS_PER_SM_NS 16.0
/* ~2.6 TB/s over 132 SMs. */
#define GS_SIM_BYTES_PER_SM_NS 20.0

#define GS_KERNEL_SPIN "gs_spin"
#define GS_KERNEL_MATMUL "gs_matmul"
#define GS_KERNEL_BURN "gs_burn"
#define GS_KERNEL_INFER_LAYER "gs_infer_layer"
#define GS_KERNEL_FILL "gs_fill"
#define GS_KERNEL_FAULT "gs_fault"

#endif
