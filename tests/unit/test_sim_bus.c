/*
 * test_sim_bus.c - the sim's host<->device bus (sim/cuda/bus.h): the
 * bandwidth table, the setting's parser, the copy time, and, through the
 * sim's libcuda, that a copy (synchronous or asynchronous) takes the
 * modelled time when the bus is on and none when it is off, and that the
 * wait counts from the copy's call, so the sim's own memmove is inside
 * the modelled time rather than added to it, and that copies back to back
 * do not add each sleep's lateness (each in a forked child: the setting
 * is read once per process).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bus.h"
#include "gs_sim/state.h"

#define MIB (1024ULL * 1024)

static void model_table_gives_pcie_gen5_for_h100_and_gen4_for_a100(void **state)
{
	(void)state;
	assert_true(gs__bus_model_gbps("H100-NVL-94GB") == 50.0);
	assert_true(gs__bus_model_gbps("H100-SXM5-80GB") == 50.0);
	assert_true(gs__bus_model_gbps("H200-141GB") == 50.0);
	assert_true(gs__bus_model_gbps("B200-180GB") == 50.0);
	assert_true(gs__bus_model_gbps("A100-SXM4-40GB") == 25.0);
	assert_true(gs__bus_model_gbps("A10") == 25.0);
	assert_true(gs__bus_model_gbps("GH200-96GB") == 400.0);
	assert_true(gs__bus_model_gbps("GB200-186GB") == 400.0);
	assert_true(gs__bus_model_gbps("Unknown-GPU") == 25.0);
	assert_true(gs__bus_model_gbps(NULL) == 25.0);
}

static void setting_reads_off_model_and_a_rate(void **state)
{
	(void)state;
	double g = 7;

	assert_true(gs__bus_parse(NULL, &g) && g == 0);
	assert_true(gs__bus_parse("", &g) && g == 0);
	assert_true(gs__bus_parse("0", &g) && g == 0);
	assert_true(gs__bus_parse("off", &g) && g == 0);
	assert_true(gs__bus_parse("model", &g) && g == -1);
	assert_true(gs__bus_parse("12.5", &g) && g == 12.5);
	assert_false(gs__bus_parse("fast", &g));
	assert_true(g == 0);
	assert_false(gs__bus_parse("-3", &g));
	assert_false(gs__bus_parse("nan", &g));
}

static void copy_time_is_bytes_over_rate(void **state)
{
	(void)state;
	/* 9 GiB at 50 GB/s: 193 ms */
	assert_int_equal(gs__bus_copy_ns(50.0, 9 * 1024 * MIB), 193273528);
	assert_int_equal(gs__bus_copy_ns(0, 1 << 30), 0);
	assert_int_equal(gs__bus_copy_ns(-1, 1 << 30), 0);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* In a child: one synchronous 1 MiB copy each way with the bus set to
 * `setting`; exits 0 when both took [lo_ms, hi_ms). */
static void child_copies(const char *setting, int64_t lo_ms, int64_t hi_ms)
{
	CUcontext ctx;
	CUdeviceptr d;
	CUdevice dev;
	char *h = calloc(1, MIB);
	int64_t t0, t1, t2, t3;

	if (setting)
		setenv("GPUSLICE_SIM_BUS_GBPS", setting, 1);
	else
		unsetenv("GPUSLICE_SIM_BUS_GBPS");
	if (h == NULL || cuInit(0) || cuDeviceGet(&dev, 0) ||
	    cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
	    cuMemAlloc(&d, MIB))
		_exit(10);
	t0 = now_ns();
	if (cuMemcpyHtoD(d, h, MIB))
		_exit(11);
	t1 = now_ns();
	if (cuMemcpyDtoH(h, d, MIB))
		_exit(12);
	t2 = now_ns();
	if (cuMemcpyHtoDAsync(d, h, MIB, NULL) || cuCtxSynchronize())
		_exit(15);
	t3 = now_ns();
	fprintf(stderr, "bus %s: HtoD %.1f ms, DtoH %.1f ms, HtoDAsync + sync %.1f ms\n",
	        setting ? setting : "unset", (double)(t1 - t0) / 1e6,
	        (double)(t2 - t1) / 1e6, (double)(t3 - t2) / 1e6);
	if ((t3 - t2) / 1000000 < lo_ms || (t3 - t2) / 1000000 >= hi_ms)
		_exit(16);
	if ((t1 - t0) / 1000000 < lo_ms || (t1 - t0) / 1000000 >= hi_ms)
		_exit(13);
	if ((t2 - t1) / 1000000 < lo_ms || (t2 - t1) / 1000000 >= hi_ms)
		_exit(14);
	_exit(0);
}

static int run_child(const char *setting, int64_t lo_ms, int64_t hi_ms)
{
	int st;
	pid_t p = fork();

	if (p == 0)
		child_copies(setting, lo_ms, hi_ms);
	assert_true(p > 0);
	assert_int_equal(waitpid(p, &st, 0), p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100;
}

static void
sync_copy_takes_the_modelled_time_only_when_the_bus_is_on(void **state)
{
	(void)state;
	char dir[] = "/tmp/gs-test-simbus-XXXXXX", path[128];
	struct gs_sim_gpu_init g[1];
	struct gs_errbuf eb = {0};
	int n;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(gs_sim_gpus_parse("1xH100-SXM5-80GB", g, 1, &n, &eb),
	                 GS_OK);
	assert_int_equal(gs_sim_state_create(dir, g, n, true, &eb), GS_OK);
	setenv("GPUSLICE_SIM_DIR", dir, 1);
	unsetenv("CUDA_VISIBLE_DEVICES");
	unsetenv("CUDA_MPS_PIPE_DIRECTORY");

	/* 1 MiB at 0.01 GB/s: 104.9 ms each way (generous upper bound for
	 * a loaded machine) */
	assert_int_equal(run_child("0.01", 104, 2000), 0);
	/* off: the copy of 1 MiB is far below that */
	assert_int_equal(run_child(NULL, 0, 50), 0);
	/* per model: 1 MiB at 50 GB/s is 21 us */
	assert_int_equal(run_child("model", 0, 50), 0);

	snprintf(path, sizeof(path), "%s/%s", dir, GS_SIM_STATE_FILE);
	unlink(path);
	rmdir(dir);
}

/* In a child at 1 GB/s: 20 MB is 20 ms from the call; a wait whose copy
 * was called 30 ms ago (its memmove took longer than the model) returns
 * at once. */
static void wait_counts_from_the_copys_call(void **state)
{
	(void)state;
	int st;
	pid_t p = fork();

	if (p == 0) {
		int64_t t0, t1, t2;

		setenv("GPUSLICE_SIM_BUS_GBPS", "1", 1);
		t0 = now_ns();
		gs__bus_wait("H100-SXM5-80GB", 20000000, gs__bus_now(), false);
		t1 = now_ns();
		gs__bus_wait("H100-SXM5-80GB", 20000000,
		             gs__bus_now() - 30000000, false);
		t2 = now_ns();
		fprintf(stderr, "bus 1 GB/s, 20 MB: %.1f ms from now, %.1f ms when called 30 ms ago\n",
		        (double)(t1 - t0) / 1e6, (double)(t2 - t1) / 1e6);
		_exit((t1 - t0) >= 19000000 && (t2 - t1) < 10000000 ? 0 : 1);
	}
	assert_true(p > 0);
	assert_int_equal(waitpid(p, &st, 0), p);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* In a child at 1 GB/s: 2000 queued copies of 20 KB back to back (20 us
 * each, 40 ms in all) take the sum of their modelled times, not that plus
 * each sleep's lateness (tens of microseconds each: as much again); and
 * synchronous copies keep each its whole modelled time. */
static void back_to_back_copies_take_the_sum_of_their_modelled_times(
    void **state)
{
	(void)state;
	int st;
	pid_t p = fork();

	if (p == 0) {
		int64_t t0, t1;

		setenv("GPUSLICE_SIM_BUS_GBPS", "1", 1);
		t0 = now_ns();
		for (int i = 0; i < 2000; i++)
			gs__bus_wait("H100-SXM5-80GB", 20000, gs__bus_now(),
			             true);
		t1 = now_ns();
		fprintf(stderr, "bus 1 GB/s, 2000 x 20 KB back to back: %.1f ms (model 40 ms)\n",
		        (double)(t1 - t0) / 1e6);
		if ((t1 - t0) < 40000000 || (t1 - t0) >= 60000000)
			_exit(1);
		/* synchronous, after the bus was idle (the queued copies'
		 * lateness dropped): 1 MB (1 ms) each, none shorter */
		usleep(2000);
		for (int i = 0; i < 50; i++) {
			int64_t a = now_ns();

			gs__bus_wait("H100-SXM5-80GB", 1000000, gs__bus_now(),
			             false);
			if (now_ns() - a < 1000000)
				_exit(2);
		}
		_exit(0);
	}
	assert_true(p > 0);
	assert_int_equal(waitpid(p, &st, 0), p);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        model_table_gives_pcie_gen5_for_h100_and_gen4_for_a100),
	    cmocka_unit_test(setting_reads_off_model_and_a_rate),
	    cmocka_unit_test(copy_time_is_bytes_over_rate),
	    cmocka_unit_test(wait_counts_from_the_copys_call),
	    cmocka_unit_test(
	        back_to_back_copies_take_the_sum_of_their_modelled_times),
	    cmocka_unit_test(
	        sync_copy_takes_the_modelled_time_only_when_the_bus_is_on),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
