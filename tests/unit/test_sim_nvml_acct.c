/*
 * test_sim_nvml_acct.c - the simulated NVML's per-process accounting
 * (sim/nvml/nvml_acct.c) through its public API, on a private node state:
 * off until root turns it on, running and terminated processes with the
 * driver's semantics, the buffer cleared and forgotten. Processes are
 * registered in the state directly, as the CUDA stand-in does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gs/catalog.h"
#include "gs/nvml.h"
#include "gs_sim/state.h"

static char dir[] = "/tmp/gs-test-nvml-acct-XXXXXX";
static struct gs_sim_map *map;
static struct gs_sim_state *st;

static int group_setup(void **state)
{
	(void)state;
	if (mkdtemp(dir) == NULL)
		return -1;
	setenv("GPUSLICE_SIM_DIR", dir, 1);
	return 0;
}

static int group_teardown(void **state)
{
	char cmd[128];

	(void)state;
	gs_sim_state_close(map);
	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static int setup(void **state)
{
	struct gs_sim_gpu_init gpus[GS_SIM_MAX_GPUS];
	struct gs_errbuf eb = {0};
	int n = 0;

	(void)state;
	gs_sim_state_close(map);
	map = NULL;
	if (gs_sim_gpus_parse("1xH100-SXM5-80GB", gpus, GS_SIM_MAX_GPUS, &n,
	                      &eb) != GS_OK ||
	    gs_sim_state_create(dir, gpus, n, true, &eb) != GS_OK ||
	    gs_sim_state_open(dir, &map, &eb) != GS_OK)
		return -1;
	st = gs_sim_state_get(map);
	return nvmlInit_v2() == NVML_SUCCESS ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	while (nvmlShutdown() == NVML_SUCCESS &&
	       nvmlDeviceGetCount_v2(&(unsigned int){0}) == NVML_SUCCESS)
		;
	return 0;
}

static nvmlDevice_t gpu0(void)
{
	nvmlDevice_t d;

	assert_int_equal(nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_SUCCESS);
	return d;
}

static pid_t sleeper(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(60);
		pause();
		_exit(0);
	}
	while (gs_sim_pid_start_time(pid) == 0)
		usleep(1000);
	return pid;
}

static void reap(pid_t pid)
{
	(void)kill(pid, SIGKILL);
	(void)waitpid(pid, NULL, 0);
}

/* A context of `pid` on GPU 0 that ran `busy_ms` of kernels. */
static int add_proc(pid_t pid, uint64_t busy_ms)
{
	int slot;

	assert_int_equal(gs_sim_lock(st), GS_OK);
	slot = gs_sim_proc_acquire(st, pid, gs_sim_pid_start_time(pid), 0, 0,
	                           gs_sim_now_ns());
	assert_true(slot >= 0);
	st->procs[slot].n_contexts = 1;
	st->procs[slot].busy_ns = busy_ms * 1000000ULL;
	gs_sim_unlock(st);
	return slot;
}

static void drop_proc(int slot)
{
	assert_int_equal(gs_sim_lock(st), GS_OK);
	gs_sim_proc_release(st, slot, gs_sim_now_ns(), false);
	gs_sim_unlock(st);
}

static void enable(void)
{
	if (geteuid() != 0)
		skip(); /* turning accounting on needs root, as on the driver */
	assert_int_equal(nvmlDeviceSetAccountingMode(gpu0(), NVML_FEATURE_ENABLED),
	                 NVML_SUCCESS);
}

static uint64_t realtime_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
}

static void accounting_is_off_until_root_turns_it_on(void **state)
{
	nvmlEnableState_t mode = NVML_FEATURE_ENABLED;
	nvmlAccountingStats_t s;
	unsigned int n = 0;
	pid_t child;
	int status;

	(void)state;
	assert_int_equal(nvmlDeviceGetAccountingMode(gpu0(), &mode), NVML_SUCCESS);
	assert_int_equal(mode, NVML_FEATURE_DISABLED);
	assert_int_equal(nvmlDeviceGetAccountingPids(gpu0(), &n, NULL),
	                 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(nvmlDeviceGetAccountingStats(gpu0(), 1, &s),
	                 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(nvmlDeviceSetAccountingMode(gpu0(), (nvmlEnableState_t)7),
	                 NVML_ERROR_INVALID_ARGUMENT);
	if (geteuid() != 0) {
		assert_int_equal(
		    nvmlDeviceSetAccountingMode(gpu0(), NVML_FEATURE_ENABLED),
		    NVML_ERROR_NO_PERMISSION);
		return;
	}
	/* Another user (the state is already mapped) is refused. */
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(setuid(65534) == 0 &&
		              nvmlDeviceSetAccountingMode(gpu0(), NVML_FEATURE_ENABLED) ==
		                  NVML_ERROR_NO_PERMISSION
		          ? 0
		          : 1);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	enable();
	assert_int_equal(nvmlDeviceGetAccountingMode(gpu0(), &mode), NVML_SUCCESS);
	assert_int_equal(mode, NVML_FEATURE_ENABLED);
	assert_int_equal(nvmlDeviceGetAccountingBufferSize(gpu0(), &n), NVML_SUCCESS);
	assert_true(n > 0);
}

static void a_running_process_has_no_time_yet_and_its_share_so_far(void **state)
{
	nvmlAccountingStats_t s;
	unsigned int pids[8], n = 8;
	pid_t pid = sleeper();
	int slot;

	(void)state;
	enable();
	slot = add_proc(pid, 0);
	assert_int_equal(nvmlDeviceGetAccountingPids(gpu0(), &n, pids), NVML_SUCCESS);
	assert_int_equal(n, 1);
	assert_int_equal(pids[0], (unsigned int)pid);
	assert_int_equal(nvmlDeviceGetAccountingStats(gpu0(), (unsigned)pid, &s),
	                 NVML_SUCCESS);
	assert_int_equal(s.isRunning, 1);
	assert_int_equal(s.time, 0);
	assert_true(s.gpuUtilization <= 100);
	/* startTime is the process's start, in CPU microseconds. */
	assert_true(s.startTime <= realtime_us() &&
	            s.startTime + 5000000ULL >= realtime_us());
	assert_int_equal(nvmlDeviceGetAccountingStats(gpu0(), 1, &s),
	                 NVML_ERROR_NOT_FOUND);
	drop_proc(slot);
	reap(pid);
}

static void a_terminated_process_keeps_its_gpu_time(void **state)
{
	nvmlAccountingStats_t s;
	unsigned int pids[8], n = 0;
	pid_t pid = sleeper();
	double busy_ms;
	int slot;

	(void)state;
	enable();
	slot = add_proc(pid, 0);
	usleep(400000);
	assert_int_equal(gs_sim_lock(st), GS_OK);
	st->procs[slot].busy_ns = 300000000ULL;
	gs_sim_unlock(st);
	drop_proc(slot);
	reap(pid);
	/* The size first, then the list. */
	assert_int_equal(nvmlDeviceGetAccountingPids(gpu0(), &n, NULL),
	                 NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(n, 1);
	n = 8;
	assert_int_equal(nvmlDeviceGetAccountingPids(gpu0(), &n, pids), NVML_SUCCESS);
	assert_int_equal(pids[0], (unsigned int)pid);
	assert_int_equal(nvmlDeviceGetAccountingStats(gpu0(), (unsigned)pid, &s),
	                 NVML_SUCCESS);
	assert_int_equal(s.isRunning, 0);
	assert_true(s.time >= 300);
	/* GPU time = share x time, to 1 % of the life. */
	busy_ms = s.gpuUtilization / 100.0 * (double)s.time;
	assert_true(busy_ms >= 300 - 0.01 * (double)s.time - 1 &&
	            busy_ms <= 300 + 0.01 * (double)s.time + 1);
	assert_true(s.maxMemoryUsage ==
	            (unsigned long long)NVML_VALUE_NOT_AVAILABLE);
}

static void clearing_forgets_terminated_processes_and_turning_off_all(void **state)
{
	unsigned int pids[8], n = 8;
	pid_t a = sleeper(), b = sleeper();
	int sa, sb;

	(void)state;
	enable();
	sa = add_proc(a, 10);
	sb = add_proc(b, 10);
	drop_proc(sa);
	reap(a);
	assert_int_equal(nvmlDeviceGetAccountingPids(gpu0(), &n, pids), NVML_SUCCESS);
	assert_int_equal(n, 2);
	assert_int_equal(nvmlDeviceClearAccountingPids(gpu0()), NVML_SUCCESS);
	n = 8;
	assert_int_equal(nvmlDeviceGetAccountingPids(gpu0(), &n, pids), NVML_SUCCESS);
	assert_int_equal(n, 1);
	assert_int_equal(pids[0], (unsigned int)b);
	drop_proc(sb);
	reap(b);
	assert_int_equal(nvmlDeviceSetAccountingMode(gpu0(), NVML_FEATURE_DISABLED),
	                 NVML_SUCCESS);
	enable();
	n = 8;
	assert_int_equal(nvmlDeviceGetAccountingPids(gpu0(), &n, pids), NVML_SUCCESS);
	assert_int_equal(n, 0);
}

static void a_process_from_before_accounting_is_not_counted(void **state)
{
	unsigned int pids[8], n = 8;
	pid_t pid = sleeper();
	int slot;

	(void)state;
	slot = add_proc(pid, 10);
	enable();
	assert_int_equal(nvmlDeviceGetAccountingPids(gpu0(), &n, pids), NVML_SUCCESS);
	assert_int_equal(n, 0);
	drop_proc(slot);
	reap(pid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(accounting_is_off_until_root_turns_it_on,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        a_running_process_has_no_time_yet_and_its_share_so_far, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(a_terminated_process_keeps_its_gpu_time,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        clearing_forgets_terminated_processes_and_turning_off_all, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        a_process_from_before_accounting_is_not_counted, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
