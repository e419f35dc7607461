/*
 * costmodel.h - how long a kernel the sim does not know takes
 * (sim/costmodel.c), private to the sim's driver.
 *
 * At load, each .entry's PTX body is read once into a gs__kcost: its
 * instructions, its loops (a label and the backward branch to it), and
 * for each loop a trip-count estimate when the loop is a simple counted
 * one: the counter is stepped by an immediate (or by the block's or the
 * grid's thread count: block- and grid-stride loops, or shifted by an
 * immediate: halving loops, log2 trips) and compared with
 * an immediate or a value derived from a kernel parameter (ld.param,
 * then add/sub/mul/shl/shr/and with immediates, cvt, mov). Loops it
 * cannot read count
 * GS__KCOST_UNKNOWN_TRIPS times.
 *
 * At launch, per-thread issue slots = sum over instructions of their
 * weight times the product of the trip counts of the loops around them,
 * evaluated with the launch's parameters. An instruction weighs 1, a
 * memory one (ld other than ld.param, st, atom, red, tex, ...)
 * GS__KCOST_MEM_WEIGHT: an SM's load/store units take 32 thread-accesses
 * a clock, a quarter of its 128 arithmetic lanes. The launch takes
 *   threads x per-thread slots / (SMs used x GS__KCOST_LANES x clock)
 * with SMs used = min(blocks, SMs available), at least
 * GS_SIM_MIN_KERNEL_NS. Memory is left as it was.
 *
 * Calibration: tests/unit/test_sim_costmodel.c states the reference.
 */
#ifndef GS_SIM_COSTMODEL_H
#define GS_SIM_COSTMODEL_H

#include <cuda.h>
#include <stdint.h>

/* Thread-instructions one SM issues per clock (4 schedulers x 32 lanes). */
#define GS__KCOST_LANES 128.0
/* Issue slots of one memory instruction (GS__KCOST_LANES / 32 lanes of
 * load/store throughput per SM). */
#define GS__KCOST_MEM_WEIGHT 4.0
/* Trip count assumed for a loop whose bound the model cannot read. */
#define GS__KCOST_UNKNOWN_TRIPS 8.0
/* Most loops one kernel's model keeps (more: the rest count once). */
#define GS__KCOST_MAX_LOOPS 64

struct gs__kcost;

/*
 * Reads one kernel: `text` starts at the entry's parameter list "(" (or
 * at its body "{" when it has none) and runs to the end of the body.
 * OUT: *out (the caller frees it with gs__kcost_destroy). Never fails on
 * PTX it does not understand (those parts count one instruction each);
 * CUDA_ERROR_OUT_OF_MEMORY only.
 */
CUresult gs__kcost_create(const char *text, struct gs__kcost **out);
void gs__kcost_destroy(struct gs__kcost *k);
/* Past PTX white space and line or block comments (also ptx.c). */
const char *gs__ptx_skip_ws(const char *p);

/* Instructions in the body (loops counted once). */
uint32_t gs__kcost_static_insts(const struct gs__kcost *k);
/* Loops found, and how many of them have a readable trip count. */
int gs__kcost_loops(const struct gs__kcost *k, int *counted);

/*
 * Issue slots one thread takes (instructions, memory ones weighing
 * GS__KCOST_MEM_WEIGHT) for a launch with these parameter
 * bytes (laid out at param_off[i], n_params of them) and `threads` in
 * the whole grid.
 */
double gs__kcost_thread_insts(const struct gs__kcost *k, const uint8_t *args,
                              const uint32_t *param_off, int n_params,
                              uint64_t threads);

/*
 * The same for a launch of this grid and block, which also gives loops
 * stepped or bounded by %ntid.x / %nctaid.x (block- and grid-stride
 * loops) their trip counts.
 */
double gs__kcost_launch_insts(const struct gs__kcost *k, const uint8_t *args,
                              const uint32_t *param_off, int n_params,
                              const unsigned int grid[3],
                              const unsigned int block[3]);

/*
 * The launch's duration in ns on `avail` SMs at `clock_khz`; OUT: *sms
 * (SMs it occupies).
 */
uint64_t gs__kcost_ns(const struct gs__kcost *k, const uint8_t *args,
                      const uint32_t *param_off, int n_params,
                      const unsigned int grid[3], const unsigned int block[3],
                      uint32_t avail, uint32_t clock_khz, uint32_t *sms);

#endif
