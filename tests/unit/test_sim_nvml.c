/*
 * test_sim_nvml.c - the simulated libnvidia-ml.so.1 through its public
 * API, on a private node state (GPUSLICE_SIM_DIR in a temporary
 * directory). Processes are registered in the state directly, the way the
 * CUDA stand-in does it, so these tests do not need the driver; the
 * integration tests run the real thing.
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
#include <unistd.h>

#include "gs/catalog.h"
#include "gs/nvml.h"
#include "gs_sim/state.h"

/* Legacy unversioned symbols the library also exports (16-byte entries). */
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                  unsigned int *infoCount,
                                                  nvmlProcessInfo_v1_t *infos);
nvmlReturn_t nvmlInit(void);

static char dir[] = "/tmp/gs-test-nvml-XXXXXX";
static struct gs_sim_map *map;
static struct gs_sim_state *st;

static void make_state(const char *spec)
{
	struct gs_sim_gpu_init gpus[GS_SIM_MAX_GPUS];
	struct gs_errbuf eb = {0};
	int n = 0;

	gs_sim_state_close(map);
	map = NULL;
	assert_int_equal(
	    gs_sim_gpus_parse(spec, gpus, GS_SIM_MAX_GPUS, &n, &eb), GS_OK);
	assert_int_equal(gs_sim_state_create(dir, gpus, n, true, &eb), GS_OK);
	assert_int_equal(gs_sim_state_open(dir, &map, &eb), GS_OK);
	st = gs_sim_state_get(map);
}

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

/* Each test: a fresh node (H100 + A100) and NVML initialised on it. */
static int setup(void **state)
{
	(void)state;
	make_state("1xH100-SXM5-80GB,1xA100-SXM4-40GB");
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

static nvmlDevice_t gpu(unsigned int i)
{
	nvmlDevice_t d;

	assert_int_equal(nvmlDeviceGetHandleByIndex_v2(i, &d), NVML_SUCCESS);
	return d;
}

/* Registers a live pid on (gpu, engine) with `mib` MiB in use. */
static int add_proc(pid_t pid, uint32_t g, uint32_t engine, uint64_t mib,
                    uint32_t flags)
{
	int slot;

	assert_int_equal(gs_sim_lock(st), GS_OK);
	slot = gs_sim_proc_acquire(st, pid, gs_sim_pid_start_time(pid), g,
	                           engine, gs_sim_now_ns());
	assert_true(slot >= 0);
	st->procs[slot].mem_used = mib << 20;
	st->procs[slot].flags = flags;
	st->procs[slot].n_contexts = 1;
	st->gpus[g].engine[engine].mem_used += mib << 20;
	gs_sim_unlock(st);
	return slot;
}

static void drop_proc(int slot)
{
	assert_int_equal(gs_sim_lock(st), GS_OK);
	gs_sim_proc_release(st, slot, gs_sim_now_ns(), false);
	gs_sim_unlock(st);
}

static pid_t sleeper(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(60); /* gone even if the test fails before reaping it */
		pause();
		_exit(0);
	}
	/* Wait until /proc shows it, so its start time is readable. */
	while (gs_sim_pid_start_time(pid) == 0)
		usleep(1000);
	return pid;
}

static void reap(pid_t pid)
{
	(void)kill(pid, SIGKILL);
	(void)waitpid(pid, NULL, 0);
}

/* ---- layout, init ------------------------------------------------------ */

static void struct_layouts_match_the_nvml_header(void **state)
{
	(void)state;
	assert_int_equal(sizeof(nvmlPciInfo_t), 68);
	assert_int_equal(sizeof(nvmlMemory_v2_t), 40);
	assert_int_equal(nvmlMemory_v2, 0x02000028);
	assert_int_equal(sizeof(nvmlProcessInfo_t), 24);
	assert_int_equal(offsetof(nvmlProcessInfo_t, gpuInstanceId), 16);
	assert_int_equal(sizeof(nvmlProcessInfo_v1_t), 16);
	assert_int_equal(sizeof(nvmlProcessUtilizationSample_t), 32);
	assert_int_equal(offsetof(nvmlProcessUtilizationSample_t, smUtil), 16);
	assert_int_equal(sizeof(nvmlGpuInstanceProfileInfo_t), 48);
	assert_int_equal(nvmlGpuInstanceProfileInfo_v2, 0x02000098);
	assert_int_equal(nvmlGpuInstanceProfileInfo_v3, 0x03000098);
	assert_int_equal(
	    offsetof(nvmlGpuInstanceProfileInfo_v3_t, capabilities), 144);
	assert_int_equal(sizeof(nvmlGpuInstanceInfo_t), 24);
	assert_int_equal(nvmlComputeInstanceProfileInfo_v2, 0x02000088);
	assert_int_equal(nvmlComputeInstanceProfileInfo_v3, 0x0300008C);
	assert_int_equal(sizeof(nvmlComputeInstanceInfo_t), 32);
	assert_int_equal(sizeof(nvmlEventData_t), 32);
	assert_int_equal(offsetof(nvmlEventData_t, computeInstanceId), 28);
	assert_int_equal(nvmlProcessDetailList_v1, 0x01000018);
	assert_int_equal(nvmlProcessesUtilizationInfo_v1, 0x01000018);
}

static void
calls_before_init_are_uninitialized_and_init_is_counted(void **state)
{
	unsigned int n = 0;

	(void)state;
	/* setup() did one init: a second one must need a second shutdown. */
	assert_int_equal(nvmlInit(), NVML_SUCCESS);
	assert_int_equal(nvmlShutdown(), NVML_SUCCESS);
	assert_int_equal(nvmlDeviceGetCount_v2(&n), NVML_SUCCESS);
	assert_int_equal(n, 2);
	assert_int_equal(nvmlShutdown(), NVML_SUCCESS);
	assert_int_equal(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
	assert_int_equal(nvmlEventSetCreate(&(nvmlEventSet_t){0}),
	                 NVML_ERROR_UNINITIALIZED);
	/* Shutting down more often than initialising is not an error. */
	assert_int_equal(nvmlShutdown(), NVML_SUCCESS);
	assert_string_equal(nvmlErrorString(NVML_ERROR_IN_USE),
	                    "In use by another client");
	assert_int_equal(nvmlInit_v2(), NVML_SUCCESS);
}

static void init_without_a_node_state_reports_no_driver(void **state)
{
	char saved[sizeof(dir)];

	(void)state;
	assert_int_equal(nvmlShutdown(), NVML_SUCCESS);
	memcpy(saved, dir, sizeof(dir));
	setenv("GPUSLICE_SIM_DIR", "/nonexistent/gpuslice-sim", 1);
	assert_int_equal(nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
	assert_int_equal(nvmlInitWithFlags(NVML_INIT_FLAG_NO_GPUS),
	                 NVML_SUCCESS);
	assert_int_equal(nvmlDeviceGetCount_v2(&(unsigned int){9}),
	                 NVML_SUCCESS);
	assert_int_equal(nvmlShutdown(), NVML_SUCCESS);
	setenv("GPUSLICE_SIM_DIR", saved, 1);
	assert_int_equal(nvmlInit_v2(), NVML_SUCCESS);
}

/* ---- inventory ------------------------------------------------------------
 */

static void devices_are_found_by_index_uuid_and_pci_bus_id(void **state)
{
	char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE], name[96], tiny[4];
	nvmlDevice_t d, by;
	nvmlPciInfo_t pci;
	unsigned int idx;
	int junk[4] = {0};

	(void)state;
	d = gpu(1);
	assert_int_equal(nvmlDeviceGetName(d, name, sizeof(name)),
	                 NVML_SUCCESS);
	assert_string_equal(name, st->gpus[1].name);
	assert_int_equal(nvmlDeviceGetName(d, tiny, sizeof(tiny)),
	                 NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(nvmlDeviceGetUUID(d, uuid, sizeof(uuid)),
	                 NVML_SUCCESS);
	assert_int_equal(strncmp(uuid, "GPU-", 4), 0);
	assert_int_equal(nvmlDeviceGetHandleByUUID(uuid, &by), NVML_SUCCESS);
	assert_ptr_equal(by, d);
	assert_int_equal(nvmlDeviceGetPciInfo_v3(d, &pci), NVML_SUCCESS);
	assert_int_equal(pci.pciDeviceId & 0xFFFF, 0x10DE);
	assert_int_equal(nvmlDeviceGetHandleByPciBusId_v2(pci.busId, &by),
	                 NVML_SUCCESS);
	assert_ptr_equal(by, d);
	assert_int_equal(nvmlDeviceGetHandleByPciBusId_v2(pci.busIdLegacy, &by),
	                 NVML_SUCCESS);
	assert_int_equal(nvmlDeviceGetIndex(by, &idx), NVML_SUCCESS);
	assert_int_equal(idx, 1);
	assert_int_equal(nvmlDeviceGetHandleByIndex_v2(2, &by),
	                 NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(nvmlDeviceGetHandleByUUID("GPU-nope", &by),
	                 NVML_ERROR_NOT_FOUND);
	/* A pointer that is not a handle is refused, never dereferenced. */
	assert_int_equal(
	    nvmlDeviceGetName((nvmlDevice_t)junk, name, sizeof(name)),
	    NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(nvmlDeviceGetName(NULL, name, sizeof(name)),
	                 NVML_ERROR_INVALID_ARGUMENT);
}

static void memory_info_v2_rejects_a_wrong_struct_version(void **state)
{
	nvmlMemory_v2_t m2;
	nvmlMemory_t m1;
	int slot;

	(void)state;
	slot = add_proc(getpid(), 0, 0, 1024, 0);
	memset(&m2, 0, sizeof(m2));
	m2.version = NVML_STRUCT_VERSION(Memory, 2) + 1;
	assert_int_equal(nvmlDeviceGetMemoryInfo_v2(gpu(0), &m2),
	                 NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
	m2.version = 0x01000028;
	assert_int_equal(nvmlDeviceGetMemoryInfo_v2(gpu(0), &m2),
	                 NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
	m2.version = nvmlMemory_v2;
	assert_int_equal(nvmlDeviceGetMemoryInfo_v2(gpu(0), &m2), NVML_SUCCESS);
	assert_int_equal(nvmlDeviceGetMemoryInfo(gpu(0), &m1), NVML_SUCCESS);
	assert_int_equal(m2.total, st->gpus[0].memory_total);
	assert_int_equal(m2.used, 1024ULL << 20);
	assert_int_equal(m1.used, m2.used + m2.reserved);
	assert_int_equal(m1.free, m1.total - m1.used);
	drop_proc(slot);
}

static void compute_mode_round_trips(void **state)
{
	nvmlComputeMode_t m;

	(void)state;
	assert_int_equal(nvmlDeviceSetComputeMode(
	                     gpu(0), NVML_COMPUTEMODE_EXCLUSIVE_PROCESS),
	                 NVML_SUCCESS);
	assert_int_equal(nvmlDeviceGetComputeMode(gpu(0), &m), NVML_SUCCESS);
	assert_int_equal(m, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS);
	assert_int_equal(st->gpus[0].compute_mode,
	                 NVML_COMPUTEMODE_EXCLUSIVE_PROCESS);
	assert_int_equal(
	    nvmlDeviceSetComputeMode(gpu(0), NVML_COMPUTEMODE_EXCLUSIVE_THREAD),
	    NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(
	    nvmlDeviceSetComputeMode(gpu(0), NVML_COMPUTEMODE_DEFAULT),
	    NVML_SUCCESS);
}

/* ---- processes ------------------------------------------------------------
 */

static void process_list_reports_memory_and_the_size_it_needs(void **state)
{
	nvmlProcessInfo_t infos[4];
	nvmlProcessInfo_v1_t old[4];
	pid_t child = sleeper(), client = sleeper();
	int a, b, c;
	unsigned int n;

	(void)state;
	a = add_proc(getpid(), 0, 0, 1024, 0);
	b = add_proc(child, 0, 0, 2048, 0);
	c = add_proc(client, 0, 0, 512, GS_SIM_PROC_MPS_CLIENT);

	n = 0;
	assert_int_equal(
	    nvmlDeviceGetComputeRunningProcesses_v3(gpu(0), &n, NULL),
	    NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(n, 2);
	n = 1;
	assert_int_equal(
	    nvmlDeviceGetComputeRunningProcesses_v3(gpu(0), &n, infos),
	    NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(n, 2);
	n = 4;
	assert_int_equal(
	    nvmlDeviceGetComputeRunningProcesses_v3(gpu(0), &n, infos),
	    NVML_SUCCESS);
	assert_int_equal(n, 2);
	for (unsigned int i = 0; i < n; i++) {
		assert_int_equal(infos[i].gpuInstanceId, 0xFFFFFFFFu);
		if (infos[i].pid == (unsigned int)getpid())
			assert_int_equal(infos[i].usedGpuMemory, 1024ULL << 20);
		else
			assert_int_equal(infos[i].usedGpuMemory, 2048ULL << 20);
	}
	/* The legacy symbol writes 16-byte entries. */
	n = 4;
	assert_int_equal(nvmlDeviceGetComputeRunningProcesses(gpu(0), &n, old),
	                 NVML_SUCCESS);
	assert_int_equal(n, 2);
	assert_true(old[1].usedGpuMemory == (1024ULL << 20) ||
	            old[1].usedGpuMemory == (2048ULL << 20));
	/* MPS clients are listed apart. */
	n = 4;
	assert_int_equal(
	    nvmlDeviceGetMPSComputeRunningProcesses_v3(gpu(0), &n, infos),
	    NVML_SUCCESS);
	assert_int_equal(n, 1);
	assert_int_equal(infos[0].pid, (unsigned int)client);
	/* A killed process disappears from the list at once. */
	reap(child);
	n = 4;
	assert_int_equal(
	    nvmlDeviceGetComputeRunningProcesses_v3(gpu(0), &n, infos),
	    NVML_SUCCESS);
	assert_int_equal(n, 1);
	assert_int_equal(infos[0].pid, (unsigned int)getpid());
	/* Nothing on the other GPU: success with zero. */
	n = 0;
	assert_int_equal(
	    nvmlDeviceGetComputeRunningProcesses_v3(gpu(1), &n, NULL),
	    NVML_SUCCESS);
	assert_int_equal(n, 0);
	reap(client);
	drop_proc(a);
	(void)b;
	(void)c;
}

static void process_utilization_honours_last_seen_timestamp(void **state)
{
	nvmlProcessUtilizationSample_t s[4];
	unsigned int n;
	int slot;

	(void)state;
	slot = add_proc(getpid(), 0, 0, 64, 0);
	assert_int_equal(gs_sim_lock(st), GS_OK);
	/* Half of the last second busy. */
	st->procs[slot].created_ns = gs_sim_now_ns() - 1000000000ULL;
	st->procs[slot].busy_ns = 500000000ULL;
	gs_sim_unlock(st);

	n = 0;
	assert_int_equal(nvmlDeviceGetProcessUtilization(gpu(0), NULL, &n, 0),
	                 NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(n, 1);
	n = 4;
	assert_int_equal(nvmlDeviceGetProcessUtilization(gpu(0), s, &n, 0),
	                 NVML_SUCCESS);
	assert_int_equal(n, 1);
	assert_int_equal(s[0].pid, (unsigned int)getpid());
	assert_in_range(s[0].smUtil, 40, 55);
	assert_true(s[0].timeStamp > 0);
	/* Nothing newer than what we saw. */
	n = 4;
	assert_int_equal(
	    nvmlDeviceGetProcessUtilization(gpu(0), s, &n, s[0].timeStamp),
	    NVML_ERROR_NOT_FOUND);
	/* The versioned variant: same samples, checked version. */
	{
		nvmlProcessUtilizationInfo_v1_t arr[4];
		nvmlProcessesUtilizationInfo_t info = {0};

		info.version = nvmlProcessesUtilizationInfo_v1 + 1;
		assert_int_equal(
		    nvmlDeviceGetProcessesUtilizationInfo(gpu(0), &info),
		    NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
		info.version = nvmlProcessesUtilizationInfo_v1;
		info.processSamplesCount = 4;
		info.procUtilArray = arr;
		assert_int_equal(
		    nvmlDeviceGetProcessesUtilizationInfo(gpu(0), &info),
		    NVML_SUCCESS);
		assert_int_equal(info.processSamplesCount, 1);
		assert_int_equal(arr[0].pid, (unsigned int)getpid());
	}
	drop_proc(slot);
}

/* NVML reports every process with a context, an idle one with smUtil 0,
 * and cuts a fresh sample (a newer timestamp) once a sample period passed
 * even when the process did not run. */
static void idle_processes_get_samples_with_zero_sm_utilization(void **state)
{
	nvmlProcessUtilizationSample_t s[4];
	pid_t idle = sleeper();
	unsigned int n;
	int busy, quiet;
	uint64_t now;
	unsigned long long first_ts = 0;

	(void)state;
	busy = add_proc(getpid(), 0, 0, 64, 0);
	quiet = add_proc(idle, 0, 0, 64, GS_SIM_PROC_MPS_CLIENT);
	assert_int_equal(gs_sim_lock(st), GS_OK);
	now = gs_sim_now_ns();
	st->procs[busy].created_ns = now - 1000000000ULL;
	st->procs[busy].busy_ns = 250000000ULL; /* a quarter of a second */
	st->procs[quiet].created_ns = now - 1000000000ULL;
	gs_sim_unlock(st);

	n = 4;
	assert_int_equal(nvmlDeviceGetProcessUtilization(gpu(0), s, &n, 0),
	                 NVML_SUCCESS);
	assert_int_equal(n, 2);
	for (unsigned int i = 0; i < n; i++) {
		assert_true(s[i].timeStamp > 0);
		if (s[i].pid == (unsigned int)idle) {
			assert_int_equal(s[i].smUtil, 0);
			first_ts = s[i].timeStamp;
		} else {
			assert_int_equal(s[i].pid, (unsigned int)getpid());
			assert_in_range(s[i].smUtil, 20, 30);
		}
	}
	assert_true(first_ts > 0);
	/* After a sample period, both get a new sample; the idle one is
	 * still 0, the busy one (which did not run either) now 0 too. */
	usleep(120000);
	n = 4;
	assert_int_equal(
	    nvmlDeviceGetProcessUtilization(gpu(0), s, &n, first_ts),
	    NVML_SUCCESS);
	assert_int_equal(n, 2);
	for (unsigned int i = 0; i < n; i++) {
		assert_true(s[i].timeStamp > first_ts);
		assert_int_equal(s[i].smUtil, 0);
	}
	drop_proc(quiet);
	drop_proc(busy);
	reap(idle);
}

static void utilization_rates_follow_busy_time(void **state)
{
	nvmlUtilization_t u;
	int slot;

	(void)state;
	slot = add_proc(getpid(), 0, 0, 64, 0);
	assert_int_equal(gs_sim_lock(st), GS_OK);
	st->procs[slot].created_ns = gs_sim_now_ns() - 1000000000ULL;
	st->gpus[0].engine[0].busy_ns += 250000000ULL;
	gs_sim_unlock(st);
	assert_int_equal(nvmlDeviceGetUtilizationRates(gpu(0), &u),
	                 NVML_SUCCESS);
	assert_in_range(u.gpu, 20, 30);
	drop_proc(slot);
}

/* ---- MIG ------------------------------------------------------------------
 */

static void enable_mig(unsigned int i)
{
	nvmlReturn_t act;
	unsigned int cur, pend;

	assert_int_equal(
	    nvmlDeviceSetMigMode(gpu(i), NVML_DEVICE_MIG_ENABLE, &act),
	    NVML_SUCCESS);
	if (act == NVML_ERROR_RESET_REQUIRED) {
		/* What `nvidia-smi -i N -r` does on the sim. */
		assert_int_equal(gs_sim_lock(st), GS_OK);
		st->gpus[i].mig_mode = st->gpus[i].mig_pending;
		gs_sim_unlock(st);
	} else {
		assert_int_equal(act, NVML_SUCCESS);
	}
	assert_int_equal(nvmlDeviceGetMigMode(gpu(i), &cur, &pend),
	                 NVML_SUCCESS);
	assert_int_equal(cur, NVML_DEVICE_MIG_ENABLE);
}

static void mig_mode_is_immediate_on_hopper_and_pending_on_ampere(void **state)
{
	unsigned int cur, pend, count;
	nvmlReturn_t act;
	int slot;

	(void)state;
	assert_int_equal(nvmlDeviceSetMigMode(gpu(0), 1, &act), NVML_SUCCESS);
	assert_int_equal(act, NVML_SUCCESS);
	assert_int_equal(nvmlDeviceGetMigMode(gpu(0), &cur, &pend),
	                 NVML_SUCCESS);
	assert_int_equal(cur, 1);
	assert_int_equal(nvmlDeviceGetMaxMigDeviceCount(gpu(0), &count),
	                 NVML_SUCCESS);
	assert_int_equal(count, 7);

	assert_int_equal(nvmlDeviceSetMigMode(gpu(1), 1, &act), NVML_SUCCESS);
	assert_int_equal(act, NVML_ERROR_RESET_REQUIRED);
	assert_int_equal(nvmlDeviceGetMigMode(gpu(1), &cur, &pend),
	                 NVML_SUCCESS);
	assert_int_equal(cur, 0);
	assert_int_equal(pend, 1);
	assert_int_equal(nvmlDeviceSetMigMode(gpu(1), 0, &act), NVML_SUCCESS);

	/* Busy GPU: accepted, not activated. */
	slot = add_proc(getpid(), 0, 0, 64, 0);
	assert_int_equal(nvmlDeviceSetMigMode(gpu(0), 0, &act), NVML_SUCCESS);
	assert_int_equal(act, NVML_ERROR_IN_USE);
	drop_proc(slot);
	assert_int_equal(nvmlDeviceSetMigMode(gpu(0), 0, &act), NVML_SUCCESS);
	assert_int_equal(act, NVML_SUCCESS);
}

static nvmlGpuInstance_t gi_at(nvmlDevice_t d, unsigned int profile_id,
                               unsigned int start, unsigned int size,
                               nvmlReturn_t want)
{
	nvmlGpuInstancePlacement_t pl = {start, size};
	nvmlGpuInstance_t gi = NULL;

	assert_int_equal(
	    nvmlDeviceCreateGpuInstanceWithPlacement(d, profile_id, &pl, &gi),
	    want);
	return gi;
}

static void invalid_mig_placement_is_refused_with_invalid_argument(void **state)
{
	unsigned int left;

	(void)state;
	enable_mig(0);
	/* H100 1g.10gb (ID 19): never at memory slice 7. */
	(void)gi_at(gpu(0), 19, 7, 1, NVML_ERROR_INVALID_ARGUMENT);
	/* 3g (ID 9) starts at 0 or 4 only; size must be the profile's. */
	(void)gi_at(gpu(0), 9, 2, 4, NVML_ERROR_INVALID_ARGUMENT);
	(void)gi_at(gpu(0), 9, 0, 2, NVML_ERROR_INVALID_ARGUMENT);
	/* Unknown profile ID. */
	(void)gi_at(gpu(0), 33, 0, 1, NVML_ERROR_INVALID_ARGUMENT);
	/* Nothing was created. */
	assert_int_equal(
	    nvmlDeviceGetGpuInstanceRemainingCapacity(gpu(0), 0, &left),
	    NVML_SUCCESS);
	assert_int_equal(left, 1);
}

static void
overlapping_mig_placement_is_refused_with_insufficient_resources(void **state)
{
	nvmlGpuInstance_t a, b;
	unsigned int left;

	(void)state;
	enable_mig(0);
	a = gi_at(gpu(0), 19, 6, 1, NVML_SUCCESS);
	(void)gi_at(gpu(0), 19, 6, 1, NVML_ERROR_INSUFFICIENT_RESOURCES);
	(void)gi_at(gpu(0), 9, 4, 4, NVML_ERROR_INSUFFICIENT_RESOURCES);
	(void)gi_at(gpu(0), 0, 0, 8, NVML_ERROR_INSUFFICIENT_RESOURCES);
	b = gi_at(gpu(0), 9, 0, 4, NVML_SUCCESS);
	assert_int_equal(
	    nvmlDeviceGetGpuInstanceRemainingCapacity(gpu(0), 9, &left),
	    NVML_SUCCESS);
	assert_int_equal(left, 0);
	assert_int_equal(
	    nvmlDeviceGetGpuInstanceRemainingCapacity(gpu(0), 19, &left),
	    NVML_SUCCESS);
	assert_int_equal(left, 2);
	assert_int_equal(nvmlGpuInstanceDestroy(a), NVML_SUCCESS);
	assert_int_equal(nvmlGpuInstanceDestroy(b), NVML_SUCCESS);
	/* Handles of destroyed instances are refused. */
	assert_int_equal(nvmlGpuInstanceDestroy(b),
	                 NVML_ERROR_INVALID_ARGUMENT);
}

/* Full-size CI of a GI; returns the CI. */
static nvmlComputeInstance_t full_ci(nvmlGpuInstance_t gi, unsigned int slices)
{
	nvmlComputeInstanceProfileInfo_v2_t ci_info;
	nvmlComputeInstance_t ci = NULL;

	for (unsigned int c = 0; c < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; c++) {
		memset(&ci_info, 0, sizeof(ci_info));
		ci_info.version = nvmlComputeInstanceProfileInfo_v2;
		if (nvmlGpuInstanceGetComputeInstanceProfileInfoV(
		        gi, c, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED,
		        &ci_info) != NVML_SUCCESS ||
		    ci_info.sliceCount != slices)
			continue;
		assert_int_equal(ci_info.id, c);
		assert_int_equal(
		    nvmlGpuInstanceCreateComputeInstance(gi, ci_info.id, &ci),
		    NVML_SUCCESS);
		return ci;
	}
	fail_msg("no %u-slice CI profile", slices);
	return NULL;
}

/* Creates, inspects and destroys one GI (+ CI) of a profile at `pl`. */
static void round_trip(nvmlDevice_t d, unsigned int g,
                       const nvmlGpuInstanceProfileInfo_v2_t *info,
                       const nvmlGpuInstancePlacement_t *pl)
{
	nvmlGpuInstanceInfo_t gi_info;
	nvmlComputeInstanceInfo_t ci_info;
	nvmlGpuInstance_t gi = NULL, list[8];
	nvmlComputeInstance_t ci;
	nvmlDevice_t mig = NULL, parent;
	nvmlMemory_t mem;
	char uuid[96], name[160];
	unsigned int n, id, is_mig, max = 0, before = 0, after = 0;

	assert_int_equal(
	    nvmlDeviceGetGpuInstanceRemainingCapacity(d, info->id, &before),
	    NVML_SUCCESS);
	assert_true(before >= 1);
	if (pl != NULL)
		assert_int_equal(nvmlDeviceCreateGpuInstanceWithPlacement(
		                     d, info->id, pl, &gi),
		                 NVML_SUCCESS);
	else
		assert_int_equal(nvmlDeviceCreateGpuInstance(d, info->id, &gi),
		                 NVML_SUCCESS);
	assert_int_equal(nvmlGpuInstanceGetInfo(gi, &gi_info), NVML_SUCCESS);
	assert_ptr_equal(gi_info.device, d);
	assert_int_equal(gi_info.profileId, info->id);
	if (pl != NULL)
		assert_int_equal(gi_info.placement.start, pl->start);
	assert_int_equal(
	    nvmlDeviceGetGpuInstanceRemainingCapacity(d, info->id, &after),
	    NVML_SUCCESS);
	assert_true(after < before);
	n = 8;
	assert_int_equal(nvmlDeviceGetGpuInstances(d, info->id, list, &n),
	                 NVML_SUCCESS);
	assert_int_equal(n, 1);
	assert_ptr_equal(list[0], gi);

	ci = full_ci(gi, info->sliceCount);
	assert_int_equal(nvmlComputeInstanceGetInfo_v2(ci, &ci_info),
	                 NVML_SUCCESS);
	assert_ptr_equal(ci_info.gpuInstance, gi);
	assert_int_equal(ci_info.id, 0);
	/* The MIG device: found by index, by UUID, and it knows its parent. */
	assert_int_equal(nvmlDeviceGetMaxMigDeviceCount(d, &max), NVML_SUCCESS);
	for (unsigned int i = 0; i < max && mig == NULL; i++)
		if (nvmlDeviceGetMigDeviceHandleByIndex(d, i, &mig) !=
		    NVML_SUCCESS)
			mig = NULL;
	assert_non_null(mig);
	assert_int_equal(nvmlDeviceIsMigDeviceHandle(mig, &is_mig),
	                 NVML_SUCCESS);
	assert_int_equal(is_mig, 1);
	assert_int_equal(nvmlDeviceGetUUID(mig, uuid, sizeof(uuid)),
	                 NVML_SUCCESS);
	assert_int_equal(strncmp(uuid, "MIG-", 4), 0);
	assert_int_equal(nvmlDeviceGetHandleByUUID(uuid, &parent),
	                 NVML_SUCCESS);
	assert_ptr_equal(parent, mig);
	assert_int_equal(
	    nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig, &parent),
	    NVML_SUCCESS);
	assert_ptr_equal(parent, d);
	assert_int_equal(nvmlDeviceGetGpuInstanceId(mig, &id), NVML_SUCCESS);
	assert_int_equal(id, gi_info.id);
	assert_int_equal(nvmlDeviceGetComputeInstanceId(mig, &id),
	                 NVML_SUCCESS);
	assert_int_equal(id, 0);
	assert_int_equal(nvmlDeviceGetMemoryInfo(mig, &mem), NVML_SUCCESS);
	assert_int_equal(mem.total >> 20, info->memorySizeMB);
	assert_int_equal(nvmlDeviceGetName(mig, name, sizeof(name)),
	                 NVML_SUCCESS);
	assert_non_null(strstr(name, info->name));
	/* The CUDA stand-in's view: a live engine with the MIG device's
	 * UUID, SMs and memory. */
	for (int slot = 0; slot < GS_SIM_MAX_MIG; slot++) {
		const struct gs_sim_engine *e = &st->gpus[g].engine[1 + slot];

		if (!st->gpus[g].mig[slot].in_use)
			continue;
		assert_string_equal(st->gpus[g].mig[slot].uuid, uuid);
		assert_int_equal(e->live, 1);
		assert_int_equal(e->sm_count, info->multiprocessorCount);
		assert_int_equal(e->mem_total >> 20, info->memorySizeMB);
	}

	assert_int_equal(nvmlGpuInstanceDestroy(gi), NVML_ERROR_IN_USE);
	assert_int_equal(nvmlComputeInstanceDestroy(ci), NVML_SUCCESS);
	assert_int_equal(nvmlDeviceGetUUID(mig, uuid, sizeof(uuid)),
	                 NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(nvmlGpuInstanceDestroy(gi), NVML_SUCCESS);
}

static void
every_catalog_profile_survives_a_create_destroy_round_trip(void **state)
{
	(void)state;
	for (int mi = 0; mi < gs_catalog_count(); mi++) {
		const struct gs_gpu_model *m = gs_catalog_get(mi);
		int seen = 0;
		nvmlDevice_t d;

		if (m->n_profiles == 0)
			continue;
		while (nvmlShutdown() == NVML_SUCCESS &&
		       nvmlDeviceGetCount_v2(&(unsigned int){0}) ==
		           NVML_SUCCESS)
			;
		make_state(m->name);
		assert_int_equal(nvmlInit_v2(), NVML_SUCCESS);
		enable_mig(0);
		d = gpu(0);
		for (unsigned int p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT;
		     p++) {
			nvmlGpuInstanceProfileInfo_v2_t info = {0};
			nvmlGpuInstancePlacement_t pl[8];
			unsigned int n = 0;

			info.version = nvmlGpuInstanceProfileInfo_v2;
			if (nvmlDeviceGetGpuInstanceProfileInfoV(d, p, &info) !=
			    NVML_SUCCESS)
				continue;
			seen++;
			assert_non_null(
			    gs_catalog_profile_by_id(m, (int)info.id));
			assert_int_equal(
			    nvmlDeviceGetGpuInstancePossiblePlacements_v2(
			        d, info.id, NULL, &n),
			    NVML_SUCCESS);
			assert_true(n >= 1 && n <= 8);
			assert_int_equal(
			    nvmlDeviceGetGpuInstancePossiblePlacements_v2(
			        d, info.id, pl, &n),
			    NVML_SUCCESS);
			for (unsigned int k = 0; k < n; k++)
				round_trip(d, 0, &info, &pl[k]);
			round_trip(d, 0, &info, NULL);
		}
		if (seen != m->n_profiles)
			fail_msg("%s: %d of %d profiles visible", m->name, seen,
			         m->n_profiles);
	}
}

static void
profile_info_comes_in_v2_and_v3_and_refuses_other_versions(void **state)
{
	nvmlGpuInstanceProfileInfo_v3_t v3;
	nvmlGpuInstanceProfileInfo_v2_t v2;
	nvmlGpuInstanceProfileInfo_t v1;

	(void)state;
	/* MIG off: profiles are "not supported". */
	memset(&v2, 0, sizeof(v2));
	v2.version = nvmlGpuInstanceProfileInfo_v2;
	assert_int_equal(nvmlDeviceGetGpuInstanceProfileInfoV(
	                     gpu(0), NVML_GPU_INSTANCE_PROFILE_1_SLICE, &v2),
	                 NVML_ERROR_NOT_SUPPORTED);
	enable_mig(0);
	assert_int_equal(nvmlDeviceGetGpuInstanceProfileInfoV(
	                     gpu(0), NVML_GPU_INSTANCE_PROFILE_3_SLICE, &v2),
	                 NVML_SUCCESS);
	assert_int_equal(v2.id, 9);
	assert_int_equal(v2.sliceCount, 3);
	assert_string_equal(v2.name, "MIG 3g.40gb");
	memset(&v3, 0, sizeof(v3));
	v3.version = nvmlGpuInstanceProfileInfo_v3;
	assert_int_equal(nvmlDeviceGetGpuInstanceProfileInfoV(
	                     gpu(0), NVML_GPU_INSTANCE_PROFILE_3_SLICE,
	                     (nvmlGpuInstanceProfileInfo_v2_t *)&v3),
	                 NVML_SUCCESS);
	assert_int_equal(v3.id, 9);
	assert_int_equal(v3.sliceCount, 3);
	assert_int_equal(v3.memorySizeMB, v2.memorySizeMB);
	assert_string_equal(v3.name, "MIG 3g.40gb");
	v2.version = 0x04000098;
	assert_int_equal(nvmlDeviceGetGpuInstanceProfileInfoV(
	                     gpu(0), NVML_GPU_INSTANCE_PROFILE_3_SLICE, &v2),
	                 NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
	assert_int_equal(nvmlDeviceGetGpuInstanceProfileInfo(
	                     gpu(0), NVML_GPU_INSTANCE_PROFILE_7_SLICE, &v1),
	                 NVML_SUCCESS);
	assert_int_equal(v1.id, 0);
	assert_int_equal(v1.instanceCount, 1);
	/* Index past the enum; absent profile (8_SLICE). */
	assert_int_equal(nvmlDeviceGetGpuInstanceProfileInfo(gpu(0), 0x40, &v1),
	                 NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(nvmlDeviceGetGpuInstanceProfileInfo(
	                     gpu(0), NVML_GPU_INSTANCE_PROFILE_8_SLICE, &v1),
	                 NVML_ERROR_NOT_SUPPORTED);
}

static void instances_with_running_processes_cannot_be_destroyed(void **state)
{
	nvmlProcessInfo_t infos[2];
	nvmlGpuInstanceInfo_t gi_info;
	nvmlGpuInstance_t gi;
	nvmlComputeInstance_t ci;
	nvmlDevice_t mig;
	unsigned int n = 2;
	int slot;

	(void)state;
	enable_mig(0);
	gi = gi_at(gpu(0), 14, 2, 2, NVML_SUCCESS); /* 2g.20gb */
	ci = full_ci(gi, 2);
	(void)nvmlGpuInstanceGetInfo(gi, &gi_info);
	slot = add_proc(getpid(), 0, 1, 300, 0); /* GI slot 0 = engine 1 */
	assert_int_equal(nvmlDeviceGetMigDeviceHandleByIndex(gpu(0), 0, &mig),
	                 NVML_SUCCESS);
	assert_int_equal(
	    nvmlDeviceGetComputeRunningProcesses_v3(mig, &n, infos),
	    NVML_SUCCESS);
	assert_int_equal(n, 1);
	assert_int_equal(infos[0].gpuInstanceId, gi_info.id);
	assert_int_equal(infos[0].computeInstanceId, 0);
	assert_int_equal(infos[0].usedGpuMemory, 300ULL << 20);
	/* The parent lists it too (the sim's callers are privileged). */
	n = 2;
	assert_int_equal(
	    nvmlDeviceGetComputeRunningProcesses_v3(gpu(0), &n, infos),
	    NVML_SUCCESS);
	assert_int_equal(n, 1);
	assert_int_equal(nvmlComputeInstanceDestroy(ci), NVML_ERROR_IN_USE);
	assert_int_equal(nvmlGpuInstanceDestroy(gi), NVML_ERROR_IN_USE);
	/* Utilization queries are not supported with MIG on. */
	assert_int_equal(
	    nvmlDeviceGetUtilizationRates(gpu(0), &(nvmlUtilization_t){0}),
	    NVML_ERROR_NOT_SUPPORTED);
	drop_proc(slot);
	assert_int_equal(nvmlComputeInstanceDestroy(ci), NVML_SUCCESS);
	assert_int_equal(nvmlGpuInstanceDestroy(gi), NVML_SUCCESS);
}

/* ---- events ----------------------------------------------------------------
 */

static void xid_events_are_delivered_after_registration_only(void **state)
{
	nvmlEventSet_t set;
	nvmlEventData_t ev;
	unsigned long long types = 0;
	nvmlGpuInstance_t gi;

	(void)state;
	assert_int_equal(gs_sim_lock(st), GS_OK);
	gs_sim_xid_post(st, 0, 79, 0, 0, gs_sim_now_ns());
	gs_sim_unlock(st);

	assert_int_equal(nvmlEventSetCreate(&set), NVML_SUCCESS);
	assert_int_equal(nvmlDeviceGetSupportedEventTypes(gpu(0), &types),
	                 NVML_SUCCESS);
	assert_true(types & nvmlEventTypeXidCriticalError);
	assert_int_equal(
	    nvmlDeviceRegisterEvents(gpu(0), nvmlEventTypePState, set),
	    NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(nvmlDeviceRegisterEvents(
	                     gpu(0), nvmlEventTypeXidCriticalError, set),
	                 NVML_SUCCESS);
	/* The Xid from before registration is not reported. */
	assert_int_equal(nvmlEventSetWait_v2(set, &ev, 30), NVML_ERROR_TIMEOUT);

	assert_int_equal(gs_sim_lock(st), GS_OK);
	gs_sim_xid_post(st, 0, 31, 0, getpid(), gs_sim_now_ns());
	gs_sim_unlock(st);
	assert_int_equal(nvmlEventSetWait_v2(set, &ev, 1000), NVML_SUCCESS);
	assert_ptr_equal(ev.device, gpu(0));
	assert_int_equal(ev.eventType, nvmlEventTypeXidCriticalError);
	assert_int_equal(ev.eventData, 31);
	assert_int_equal(ev.gpuInstanceId, 0xFFFFFFFFu);
	assert_int_equal(nvmlEventSetWait_v2(set, &ev, 0), NVML_ERROR_TIMEOUT);

	/* On a MIG instance the event names the GI. */
	enable_mig(0);
	gi = gi_at(gpu(0), 9, 4, 4, NVML_SUCCESS);
	(void)full_ci(gi, 3);
	assert_int_equal(gs_sim_lock(st), GS_OK);
	gs_sim_xid_post(st, 0, 43, 1, getpid(), gs_sim_now_ns());
	gs_sim_unlock(st);
	assert_int_equal(nvmlEventSetWait_v2(set, &ev, 1000), NVML_SUCCESS);
	assert_int_equal(ev.eventData, 43);
	assert_int_equal(ev.gpuInstanceId, st->gpus[0].mig[0].gi_id);
	assert_int_equal(ev.computeInstanceId, 0);
	assert_int_equal(nvmlEventSetFree(set), NVML_SUCCESS);
	assert_int_equal(nvmlEventSetFree(set), NVML_ERROR_INVALID_ARGUMENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	    T(struct_layouts_match_the_nvml_header),
	    T(calls_before_init_are_uninitialized_and_init_is_counted),
	    T(init_without_a_node_state_reports_no_driver),
	    T(devices_are_found_by_index_uuid_and_pci_bus_id),
	    T(memory_info_v2_rejects_a_wrong_struct_version),
	    T(compute_mode_round_trips),
	    T(process_list_reports_memory_and_the_size_it_needs),
	    T(process_utilization_honours_last_seen_timestamp),
	    T(utilization_rates_follow_busy_time),
	    T(idle_processes_get_samples_with_zero_sm_utilization),
	    T(mig_mode_is_immediate_on_hopper_and_pending_on_ampere),
	    T(invalid_mig_placement_is_refused_with_invalid_argument),
	    T(overlapping_mig_placement_is_refused_with_insufficient_resources),
	    T(every_catalog_profile_survives_a_create_destroy_round_trip),
	    T(profile_info_comes_in_v2_and_v3_and_refuses_other_versions),
	    T(instances_with_running_processes_cannot_be_destroyed),
	    T(xid_events_are_delivered_after_registration_only),
#undef T
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
