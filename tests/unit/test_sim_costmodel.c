/*
 * test_sim_costmodel.c - the cost model of kernels the sim does not know
 * (sim/cuda/costmodel.c), read from real nvcc output: the workload kit's
 * kernels (workloads/kernels.ptx, compiled by nvcc 13) and small
 * hand-written PTX.
 *
 * Reference (a published measurement, not a figure we chose): the
 * shared-memory cache-blocking SGEMM (32x32 tiles in shared memory, one
 * output element per thread, "kernel 3") of Simon Boehm's "How to
 * Optimize a CUDA Matmul Kernel" runs 2980 GFLOP/s on 4096x4096 matrices
 * on an RTX A6000 (84 SMs, 1.80 GHz boost): 2 * 4096^3 / 2980e9 = 46.1 ms.
 * gs_matmul is the same algorithm with 16x16 tiles; the model's estimate
 * for it on the A6000's SMs and clock must be within a factor of
 * REF_FACTOR of that measurement (it estimates about 41 ms, 0.89x: the
 * shared-memory loads, weighed as load/store-unit slots, dominate).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "costmodel.h"
#include "gs/kernels.h"

#define REF_NS     46100000.0
#define REF_FACTOR 2.0
#define A6000_SMS  84
#define A6000_KHZ  1800000
#define H100_SMS   132
#define H100_KHZ   1980000

static char *kernels_ptx;

/* The text of one .entry of kernels.ptx from its parameter list on. */
static struct gs__kcost *kit_kernel(const char *name)
{
	char pat[64];
	const char *p;
	struct gs__kcost *k = NULL;

	snprintf(pat, sizeof(pat), ".entry %s(", name);
	p = strstr(kernels_ptx, pat);
	assert_non_null(p);
	assert_int_equal(gs__kcost_create(p + strlen(pat) - 1, &k),
	                 CUDA_SUCCESS);
	return k;
}

struct burn_args {
	uint64_t buf, n;
	uint32_t iters;
};
static const uint32_t burn_off[] = {0, 8, 16};

static uint64_t burn_ns(const struct gs__kcost *k, uint64_t n, uint32_t iters,
                        unsigned gx)
{
	uint8_t args[24] = {0};
	const unsigned grid[3] = {gx, 1, 1}, block[3] = {256, 1, 1};
	uint32_t sms;

	memcpy(args + 8, &n, 8);
	memcpy(args + 16, &iters, 4);
	return gs__kcost_ns(k, args, burn_off, 3, grid, block, H100_SMS,
	                    H100_KHZ, &sms);
}

static void test_loops_of_nvcc_kernels_are_found_and_counted(void **state)
{
	struct gs__kcost *burn = kit_kernel("gs_burn");
	struct gs__kcost *mm = kit_kernel("gs_matmul");
	int counted;

	(void)state;
	/* gs_burn: grid-stride loop, unrolled-by-4 FMA loop */
	assert_true(gs__kcost_loops(burn, &counted) >= 2);
	assert_true(counted >= 2);
	/* gs_matmul: the tile loop, its k loop fully unrolled */
	assert_true(gs__kcost_loops(mm, &counted) >= 1);
	assert_true(counted >= 1);
	assert_true(gs__kcost_static_insts(mm) > 50);
	gs__kcost_destroy(burn);
	gs__kcost_destroy(mm);
}

static void test_thread_insts_follow_the_loop_bound(void **state)
{
	struct gs__kcost *burn = kit_kernel("gs_burn");
	uint8_t args[24] = {0};
	uint64_t n = 1 << 20;
	double i100, i1000;
	uint32_t it;

	(void)state;
	memcpy(args + 8, &n, 8);
	it = 100;
	memcpy(args + 16, &it, 4);
	/* one element per thread: the grid-stride loop runs once */
	i100 = gs__kcost_thread_insts(burn, args, burn_off, 3, n);
	it = 1000;
	memcpy(args + 16, &it, 4);
	i1000 = gs__kcost_thread_insts(burn, args, burn_off, 3, n);
	/* each FMA iteration is ~1.75 instructions (7 per 4 unrolled) */
	assert_true(i100 > 150 && i100 < 400);
	assert_true(i1000 / i100 > 7.0 && i1000 / i100 < 11.0);
	/* half the threads: the grid-stride loop runs twice */
	assert_true(gs__kcost_thread_insts(burn, args, burn_off, 3, n / 2) >
	            1.8 * i1000);
	gs__kcost_destroy(burn);
}

static void test_duration_is_monotone_in_loop_bound(void **state)
{
	struct gs__kcost *burn = kit_kernel("gs_burn");
	uint64_t prev = 0;

	(void)state;
	for (uint32_t it = 1; it <= 1u << 16; it *= 4) {
		uint64_t ns = burn_ns(burn, 1 << 22, it, 4096);

		assert_true(ns >= prev);
		prev = ns;
	}
	assert_true(prev > 1000 * GS_SIM_MIN_KERNEL_NS);
	gs__kcost_destroy(burn);
}

static void test_duration_is_monotone_in_grid_size(void **state)
{
	struct gs__kcost *mm = kit_kernel("gs_matmul");
	uint64_t prev = 0;
	uint8_t args[28] = {0};
	const uint32_t off[] = {0, 8, 16, 24};
	const unsigned block[3] = {16, 16, 1};
	int32_t n = 4096;
	uint32_t sms;

	(void)state;
	memcpy(args + 24, &n, 4);
	for (unsigned g = 1; g <= 4096; g *= 2) {
		const unsigned grid[3] = {g, 64, 1};
		uint64_t ns = gs__kcost_ns(mm, args, off, 4, grid, block,
		                           H100_SMS, H100_KHZ, &sms);

		assert_true(ns >= prev);
		assert_true(sms <= H100_SMS);
		prev = ns;
	}
	gs__kcost_destroy(mm);
}

static void test_duration_is_monotone_in_block_size(void **state)
{
	struct gs__kcost *k;
	/* a fixed 100-trip loop per thread, so work grows with threads */
	static const char body[] =
	    "(\n .param .u64 k_param_0\n)\n{\n"
	    "\tmov.u32 %r1, 0;\n"
	    "$L__BB0_1:\n"
	    "\tfma.rn.f32 %f1, %f1, %f1, %f1;\n"
	    "\tadd.s32 %r1, %r1, 1;\n"
	    "\tsetp.lt.s32 %p1, %r1, 100;\n"
	    "\t@%p1 bra $L__BB0_1;\n"
	    "\tret;\n}\n";
	const unsigned grid[3] = {8192, 1, 1};
	uint8_t args[8] = {0};
	const uint32_t off[] = {0};
	uint64_t prev = 0, first = 0;
	uint32_t sms;

	(void)state;
	assert_int_equal(gs__kcost_create(body, &k), CUDA_SUCCESS);
	for (unsigned b = 32; b <= 1024; b *= 2) {
		const unsigned block[3] = {b, 1, 1};
		uint64_t ns = gs__kcost_ns(k, args, off, 1, grid, block,
		                           H100_SMS, H100_KHZ, &sms);

		assert_true(ns >= prev);
		if (first == 0)
			first = ns;
		prev = ns;
	}
	/* 32x the threads on a GPU already full: far longer */
	assert_true(prev > 8 * first);
	gs__kcost_destroy(k);
}

static void test_matmul_estimate_is_near_the_measured_reference(void **state)
{
	struct gs__kcost *mm = kit_kernel("gs_matmul");
	uint8_t args[28] = {0};
	const uint32_t off[] = {0, 8, 16, 24};
	const unsigned grid[3] = {256, 256, 1}, block[3] = {16, 16, 1};
	int32_t n = 4096;
	uint32_t sms;
	double ns, ratio;

	(void)state;
	memcpy(args + 24, &n, 4);
	ns = (double)gs__kcost_ns(mm, args, off, 4, grid, block, A6000_SMS,
	                          A6000_KHZ, &sms);
	ratio = ns / REF_NS;
	printf("gs_matmul n=4096 on 84 SMs at 1.8 GHz: model %.1f ms, "
	       "reference %.1f ms (x%.2f)\n",
	       ns / 1e6, REF_NS / 1e6, ratio);
	assert_int_equal(sms, A6000_SMS);
	assert_true(ratio < REF_FACTOR && ratio > 1.0 / REF_FACTOR);
	gs__kcost_destroy(mm);
}

static void test_immediate_bound_and_unknown_loops(void **state)
{
	/* for (j = 0; j < 100; j++): 4 instructions a trip */
	static const char counted[] =
	    "(\n .param .u64 k_param_0\n)\n{\n .reg .b32 %r<4>;\n"
	    "\tmov.u32 %r1, 0;\n"
	    "$L__BB0_1:\n"
	    "\tadd.f32 %f1, %f1, 0f3F800000;\n"
	    "\tadd.s32 %r1, %r1, 1;\n"
	    "\tsetp.lt.s32 %p1, %r1, 100;\n"
	    "\t@%p1 bra $L__BB0_1;\n"
	    "\tret;\n}\n";
	static const char directives[] =
	    "(\n .param .u64 k_param_0\n)\n.maxntid 256, 1, 1\n"
	    ".minnctapersm 2\n{\n .reg .b32 %r<4>;\n"
	    "\tmov.u32 %r1, 0;\n"
	    "$L__BB0_1:\n"
	    "\tadd.f32 %f1, %f1, 0f3F800000;\n"
	    "\tadd.s32 %r1, %r1, 1;\n"
	    "\tsetp.lt.s32 %p1, %r1, 100;\n"
	    "\t@%p1 bra $L__BB0_1;\n"
	    "\tret;\n}\n";
	/* a loop whose exit depends on loaded data */
	static const char unknown[] =
	    "(\n .param .u64 k_param_0\n)\n{\n"
	    "\tld.param.u64 %rd1, [k_param_0];\n"
	    "$L__BB0_1:\n"
	    "\tld.global.u32 %r1, [%rd1];\n"
	    "\tsetp.ne.s32 %p1, %r1, 0;\n"
	    "\t@%p1 bra $L__BB0_1;\n"
	    "\tret;\n}\n";
	struct gs__kcost *k;
	uint8_t args[8] = {0};
	const uint32_t off[] = {0};
	int c;
	double insts;

	(void)state;
	assert_int_equal(gs__kcost_create(counted, &k), CUDA_SUCCESS);
	assert_int_equal(gs__kcost_loops(k, &c), 1);
	assert_int_equal(c, 1);
	insts = gs__kcost_thread_insts(k, args, off, 1, 1);
	assert_true(fabs(insts - (2 + 4 * 100)) < 1e-9);
	gs__kcost_destroy(k);

	/* the same loop behind performance directives */
	assert_int_equal(gs__kcost_create(directives, &k), CUDA_SUCCESS);
	assert_int_equal(gs__kcost_loops(k, &c), 1);
	insts = gs__kcost_thread_insts(k, args, off, 1, 1);
	assert_true(fabs(insts - (2 + 4 * 100)) < 1e-9);
	gs__kcost_destroy(k);

	assert_int_equal(gs__kcost_create(unknown, &k), CUDA_SUCCESS);
	assert_int_equal(gs__kcost_loops(k, &c), 1);
	assert_int_equal(c, 0);
	insts = gs__kcost_thread_insts(k, args, off, 1, 1);
	/* ld.param + ret; per trip the load (a memory instruction), setp,
	 * bra */
	assert_true(fabs(insts - (2 + (GS__KCOST_MEM_WEIGHT + 2) *
	                                  GS__KCOST_UNKNOWN_TRIPS)) < 1e-9);
	gs__kcost_destroy(k);
}

/* for (i = threadIdx.x; i < n; i += blockDim.x): n / blockDim.x trips,
 * known at launch */
static void test_block_stride_loop_counts_with_the_block_size(void **state)
{
	static const char body[] =
	    "(\n .param .u32 k_param_0\n)\n{\n"
	    "\tld.param.u32 %r1, [k_param_0];\n"
	    "\tmov.u32 %r2, %tid.x;\n"
	    "\tmov.u32 %r3, %ntid.x;\n"
	    "$L__BB0_1:\n"
	    "\tadd.f32 %f1, %f1, 0f3F800000;\n"
	    "\tadd.s32 %r2, %r2, %r3;\n"
	    "\tsetp.lt.s32 %p1, %r2, %r1;\n"
	    "\t@%p1 bra $L__BB0_1;\n"
	    "\tret;\n}\n";
	struct gs__kcost *k;
	int32_t n = 25600;
	uint8_t args[4];
	const uint32_t off[] = {0};
	const unsigned grid[3] = {1, 1, 1};
	const unsigned b256[3] = {256, 1, 1}, b128[3] = {128, 1, 1};
	int c;

	(void)state;
	memcpy(args, &n, 4);
	assert_int_equal(gs__kcost_create(body, &k), CUDA_SUCCESS);
	assert_int_equal(gs__kcost_loops(k, &c), 1);
	assert_int_equal(c, 1);
	/* 4 outside the loop, 4 a trip */
	assert_true(fabs(gs__kcost_launch_insts(k, args, off, 1, grid, b256) -
	                 (4 + 4 * 100)) < 1e-9);
	assert_true(fabs(gs__kcost_launch_insts(k, args, off, 1, grid, b128) -
	                 (4 + 4 * 200)) < 1e-9);
	/* without the launch's block size the trips are unknown */
	assert_true(fabs(gs__kcost_thread_insts(k, args, off, 1, 256) -
	                 (4 + 4 * GS__KCOST_UNKNOWN_TRIPS)) < 1e-9);
	gs__kcost_destroy(k);
}

/* for (k = blockDim.x / 2; k > 0; k >>= 1), as nvcc writes a shared-
 * memory reduction: log2(blockDim.x) trips */
static void test_halving_loop_counts_log2_trips(void **state)
{
	static const char body[] =
	    "(\n .param .u64 k_param_0\n)\n{\n"
	    "\tmov.u32 %r7, %ntid.x;\n"
	    "\tshr.u32 %r13, %r7, 1;\n"
	    "\tsetp.eq.s32 %p1, %r13, 0;\n"
	    "\t@%p1 bra $L__BB0_4;\n"
	    "$L__BB0_1:\n"
	    "\tbar.sync 0;\n"
	    "\tshr.u32 %r13, %r13, 1;\n"
	    "\tsetp.ne.s32 %p3, %r13, 0;\n"
	    "\t@%p3 bra $L__BB0_1;\n"
	    "$L__BB0_4:\n"
	    "\tret;\n}\n";
	struct gs__kcost *k;
	uint8_t args[8] = {0};
	const uint32_t off[] = {0};
	const unsigned grid[3] = {1, 1, 1};
	const unsigned b256[3] = {256, 1, 1}, b1024[3] = {1024, 1, 1};
	int c;

	(void)state;
	assert_int_equal(gs__kcost_create(body, &k), CUDA_SUCCESS);
	assert_int_equal(gs__kcost_loops(k, &c), 1);
	assert_int_equal(c, 1);
	/* 5 outside the loop; 4 a trip: k = 128, 64, ..., 1 */
	assert_true(fabs(gs__kcost_launch_insts(k, args, off, 1, grid, b256) -
	                 (5 + 4 * 8)) < 1e-9);
	assert_true(fabs(gs__kcost_launch_insts(k, args, off, 1, grid, b1024) -
	                 (5 + 4 * 10)) < 1e-9);
	gs__kcost_destroy(k);
}

static void test_tiny_kernels_take_the_minimum(void **state)
{
	static const char body[] = "{\n\tret;\n}\n";
	struct gs__kcost *k;
	const unsigned grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
	uint32_t sms = 0;

	(void)state;
	assert_int_equal(gs__kcost_create(body, &k), CUDA_SUCCESS);
	assert_int_equal(gs__kcost_ns(k, NULL, NULL, 0, grid, block, H100_SMS,
	                              H100_KHZ, &sms),
	                 GS_SIM_MIN_KERNEL_NS);
	assert_int_equal(sms, 1);
	gs__kcost_destroy(k);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long len;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)len + 1);
	if (buf != NULL && fread(buf, 1, (size_t)len, f) != (size_t)len) {
		free(buf);
		buf = NULL;
	}
	if (buf != NULL)
		buf[len] = '\0';
	fclose(f);
	return buf;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_loops_of_nvcc_kernels_are_found_and_counted),
	    cmocka_unit_test(test_thread_insts_follow_the_loop_bound),
	    cmocka_unit_test(test_duration_is_monotone_in_loop_bound),
	    cmocka_unit_test(test_duration_is_monotone_in_grid_size),
	    cmocka_unit_test(test_duration_is_monotone_in_block_size),
	    cmocka_unit_test(test_matmul_estimate_is_near_the_measured_reference),
	    cmocka_unit_test(test_immediate_bound_and_unknown_loops),
	    cmocka_unit_test(test_block_stride_loop_counts_with_the_block_size),
	    cmocka_unit_test(test_halving_loop_counts_log2_trips),
	    cmocka_unit_test(test_tiny_kernels_take_the_minimum),
	};
	int rc;

	kernels_ptx = slurp(GS_KERNELS_PTX);
	if (kernels_ptx == NULL) {
		fprintf(stderr, "cannot read %s\n", GS_KERNELS_PTX);
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	free(kernels_ptx);
	return rc;
}
