/*
 * probe.c - gs-sim-nvml-probe: a test tool for the sim's NVML, MPS and
 * nvidia-smi stand-ins. It reads and pokes the node state the way the
 * other sim components would (the CUDA stand-in posting an Xid, a client
 * process registering), so that the shell tests can check what the
 * stand-ins wrote and set up what they must react to. The state directory
 * comes from GPUSLICE_SIM_DIR like everywhere else.
 *
 *   init SPEC                      create the state ("1xH100-SXM5-80GB")
 *   mps GPU ENGINE                 print the MPS record as key=value
 *   fault GPU ENGINE               mark that engine's MPS server FAULT
 *   timeslice GPU                  print the GPU's time-slice level
 *   compute-mode GPU               print the GPU's compute mode
 *   xid GPU XID [ENGINE]           post an Xid event
 *   proc GPU ENGINE PID MIB [mps]  register PID (alive) with MIB in use,
 *                                  as an MPS client with "mps"
 *   sticky PID                     print the sticky error of PID's slots
 *   nvml-procs GPU [mps]           list processes through NVML:
 *                                  "pid bytes gi ci" per line
 *   nvml-mig-uuid GPU SLOT         print the UUID of MIG device SLOT
 *   wait-xid GPU TIMEOUT_MS        wait through NVML; print "xid=N gi=G"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/nvml.h"
#include "gs_sim/state.h"

static struct gs_sim_map *map;

static struct gs_sim_state *open_locked(void)
{
	struct gs_errbuf eb = {0};
	char dir[GS_SIM_PATH_LEN];
	struct gs_sim_state *st;
	gs_err err = gs_sim_dir_resolve(NULL, dir, sizeof(dir), &eb);

	if (err == GS_OK)
		err = gs_sim_state_open(dir, &map, &eb);
	if (err != GS_OK) {
		fprintf(stderr, "probe: %s\n", gs_errbuf_msg(&eb, err));
		exit(1);
	}
	st = gs_sim_state_get(map);
	if (gs_sim_lock(st) != GS_OK) {
		fprintf(stderr, "probe: lock failed\n");
		exit(1);
	}
	return st;
}

static void close_locked(struct gs_sim_state *st)
{
	gs_sim_unlock(st);
	gs_sim_state_close(map);
}

static int cmd_init(const char *spec)
{
	struct gs_sim_gpu_init gpus[GS_SIM_MAX_GPUS];
	struct gs_errbuf eb = {0};
	char dir[GS_SIM_PATH_LEN];
	int n = 0;
	gs_err err = gs_sim_dir_resolve(NULL, dir, sizeof(dir), &eb);

	if (err == GS_OK)
		err = gs_sim_gpus_parse(spec, gpus, GS_SIM_MAX_GPUS, &n, &eb);
	if (err == GS_OK)
		err = gs_sim_state_create(dir, gpus, n, true, &eb);
	if (err != GS_OK) {
		fprintf(stderr, "probe: %s\n", gs_errbuf_msg(&eb, err));
		return 1;
	}
	return 0;
}

static int nvml_procs(unsigned int gpu, bool mps)
{
	nvmlProcessInfo_t infos[64];
	unsigned int n = 64;
	nvmlDevice_t dev;
	nvmlReturn_t r;

	if (nvmlInit_v2() != NVML_SUCCESS ||
	    nvmlDeviceGetHandleByIndex_v2(gpu, &dev) != NVML_SUCCESS)
		return 1;
	r = mps ? nvmlDeviceGetMPSComputeRunningProcesses_v3(dev, &n, infos)
	        : nvmlDeviceGetComputeRunningProcesses_v3(dev, &n, infos);
	if (r != NVML_SUCCESS) {
		fprintf(stderr, "probe: %s\n", nvmlErrorString(r));
		return 1;
	}
	for (unsigned int i = 0; i < n; i++)
		printf("%u %llu %d %d\n", infos[i].pid, infos[i].usedGpuMemory,
		       (int)infos[i].gpuInstanceId,
		       (int)infos[i].computeInstanceId);
	(void)nvmlShutdown();
	return 0;
}

static int wait_xid(unsigned int gpu, unsigned int timeout_ms)
{
	nvmlEventSet_t set;
	nvmlEventData_t ev;
	nvmlDevice_t dev;
	nvmlReturn_t r;

	if (nvmlInit_v2() != NVML_SUCCESS ||
	    nvmlDeviceGetHandleByIndex_v2(gpu, &dev) != NVML_SUCCESS ||
	    nvmlEventSetCreate(&set) != NVML_SUCCESS ||
	    nvmlDeviceRegisterEvents(dev, nvmlEventTypeXidCriticalError, set) !=
	        NVML_SUCCESS)
		return 1;
	printf("registered\n");
	fflush(stdout);
	r = nvmlEventSetWait_v2(set, &ev, timeout_ms);
	if (r == NVML_SUCCESS)
		printf("xid=%llu gi=%d\n", ev.eventData, (int)ev.gpuInstanceId);
	else
		printf("%s\n", nvmlErrorString(r));
	(void)nvmlEventSetFree(set);
	(void)nvmlShutdown();
	return r == NVML_SUCCESS ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct gs_sim_state *st;
	unsigned int gpu, engine;

	if (argc < 2)
		return 2;
	if (strcmp(argv[1], "init") == 0 && argc == 3)
		return cmd_init(argv[2]);
	if (strcmp(argv[1], "nvml-procs") == 0 && argc >= 3)
		return nvml_procs((unsigned int)atoi(argv[2]),
		                  argc > 3 && strcmp(argv[3], "mps") == 0);
	if (strcmp(argv[1], "wait-xid") == 0 && argc == 4)
		return wait_xid((unsigned int)atoi(argv[2]),
		                (unsigned int)atoi(argv[3]));
	if (argc < 3)
		return 2;
	gpu = (unsigned int)atoi(argv[2]);
	/* The third word is the engine, except for "xid GPU XID [ENGINE]". */
	if (strcmp(argv[1], "xid") == 0)
		engine = argc > 4 ? (unsigned int)atoi(argv[4]) : 0;
	else
		engine = argc > 3 ? (unsigned int)atoi(argv[3]) : 0;
	if (strcmp(argv[1], "sticky") == 0) {
		int pid = atoi(argv[2]);

		st = open_locked();
		for (int i = 0; i < GS_SIM_MAX_PROCS; i++)
			if (st->procs[i].state == GS_SIM_PROC_LIVE &&
			    st->procs[i].pid == pid)
				printf("%d\n", (int)st->procs[i].sticky_error);
		close_locked(st);
		return 0;
	}
	st = open_locked();
	if (gpu >= st->n_gpus || engine >= GS_SIM_ENGINES) {
		close_locked(st);
		fprintf(stderr, "probe: no such GPU/engine\n");
		return 1;
	}
	if (strcmp(argv[1], "mps") == 0 && argc == 4) {
		const struct gs_sim_mps *m = &st->gpus[gpu].engine[engine].mps;

		printf(
		    "state=%u live=%d control_pid=%d server_pid=%d "
		    "pipe_dir=%s ordinal=%u default_atp=%u atp=%u "
		    "default_mem=%llu mem=%llu\n",
		    m->state,
		    m->control_pid > 0 &&
		        gs_sim_pid_alive(m->control_pid, m->control_start_time),
		    (int)m->control_pid, (int)m->server_pid, m->pipe_dir,
		    m->device_ordinal, m->default_active_thread_pct,
		    m->active_thread_pct,
		    (unsigned long long)m->default_pinned_mem_limit,
		    (unsigned long long)m->pinned_mem_limit);
	} else if (strcmp(argv[1], "fault") == 0 && argc == 4) {
		st->gpus[gpu].engine[engine].mps.state = GS_SIM_MPS_FAULT;
		st->gpus[gpu].engine[engine].mps.fault_ns = gs_sim_now_ns();
	} else if (strcmp(argv[1], "timeslice") == 0) {
		printf("%u\n", st->gpus[gpu].timeslice_level);
	} else if (strcmp(argv[1], "compute-mode") == 0) {
		printf("%u\n", st->gpus[gpu].compute_mode);
	} else if (strcmp(argv[1], "xid") == 0 && argc >= 4) {
		gs_sim_xid_post(st, gpu, (uint32_t)atoi(argv[3]), engine, 0,
		                gs_sim_now_ns());
	} else if (strcmp(argv[1], "nvml-mig-uuid") == 0 && argc == 4) {
		printf("%s\n", st->gpus[gpu].mig[engine].uuid);
	} else if (strcmp(argv[1], "proc") == 0 && argc >= 6) {
		int32_t pid = atoi(argv[4]);
		uint64_t start = gs_sim_pid_start_time(pid);
		int slot = gs_sim_proc_acquire(st, pid, start, gpu, engine,
		                               gs_sim_now_ns());
		struct gs_sim_proc *p;

		if (start == 0 || slot < 0) {
			close_locked(st);
			fprintf(stderr, "probe: cannot register pid %d\n", pid);
			return 1;
		}
		p = &st->procs[slot];
		p->mem_used = (uint64_t)atoll(argv[5]) << 20;
		st->gpus[gpu].engine[engine].mem_used += p->mem_used;
		if (argc > 6 && strcmp(argv[6], "mps") == 0)
			p->flags |= GS_SIM_PROC_MPS_CLIENT;
		p->n_contexts = 1;
	} else {
		close_locked(st);
		return 2;
	}
	close_locked(st);
	return 0;
}
