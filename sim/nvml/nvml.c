/*
 * nvml.c - the simulated libnvidia-ml.so.1: library life (reference
 * counted init/shutdown), error strings, system queries, handle tables and
 * the lookups that turn an index, UUID or PCI bus id into a handle.
 *
 * Life cycle:
 *
 *     UNINITIALIZED --nvmlInit_v2 / nvmlInitWithFlags--> INITIALIZED (n=1)
 *     INITIALIZED   --nvmlInit_v2-->                      n+1
 *     INITIALIZED   --nvmlShutdown-->                     n-1; at 0 the state
 *                                                         is unmapped
 *     UNINITIALIZED --nvmlShutdown-->                     no-op, NVML_SUCCESS
 *                                                         (as the real one:
 *                                                         backward compat.)
 *
 * The node state directory is resolved once, at the first init, the way
 * every sim component does (state.h: gs_sim_dir_resolve). No state file
 * means "no driver": NVML_ERROR_DRIVER_NOT_LOADED, unless the caller passed
 * NVML_INIT_FLAG_NO_GPUS, which then initialises with zero devices.
 */
#include "nvml_int.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/err.h"
#include "gs/faultinj.h"
#include "gs/proc.h"

/* Versions this library reports (numeric, so version parsers still work). */
#define SIM_DRIVER_VERSION      "580.00.00"
#define SIM_NVML_VERSION        "13.580.00.00"
#define SIM_CUDA_DRIVER_VERSION 13000

static struct {
	pthread_rwlock_t life; /* read: a call in progress; write: init/fini */
	int refcount;
	struct gs_sim_map *map;
	struct gs_sim_state *st;
	const struct gs_gpu_model *model[GS_SIM_MAX_GPUS];
} lib = {.life = PTHREAD_RWLOCK_INITIALIZER};

static struct nvmlDevice_st gpu_handles[GS_SIM_MAX_GPUS];
static struct nvmlDevice_st mig_handles[GS_SIM_MAX_GPUS][GS_SIM_MAX_MIG];
static struct nvmlGpuInstance_st gi_handles[GS_SIM_MAX_GPUS][GS_SIM_MAX_MIG];
static struct nvmlComputeInstance_st ci_handles[GS_SIM_MAX_GPUS]
                                               [GS_SIM_MAX_MIG];

/* ---- error strings ---------------------------------------------------- */

#define NVML_ERROR_STRINGS(X)                                                  \
	X(NVML_SUCCESS, "Success")                                             \
	X(NVML_ERROR_UNINITIALIZED, "Uninitialized")                           \
	X(NVML_ERROR_INVALID_ARGUMENT, "Invalid Argument")                     \
	X(NVML_ERROR_NOT_SUPPORTED, "Not Supported")                           \
	X(NVML_ERROR_NO_PERMISSION, "Insufficient Permissions")                \
	X(NVML_ERROR_ALREADY_INITIALIZED, "Already Initialized")               \
	X(NVML_ERROR_NOT_FOUND, "Not Found")                                   \
	X(NVML_ERROR_INSUFFICIENT_SIZE, "Insufficient Size")                   \
	X(NVML_ERROR_INSUFFICIENT_POWER, "Insufficient External Power")        \
	X(NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded")                   \
	X(NVML_ERROR_TIMEOUT, "Timeout")                                       \
	X(NVML_ERROR_IRQ_ISSUE, "Interrupt Request Issue")                     \
	X(NVML_ERROR_LIBRARY_NOT_FOUND, "NVML Shared Library Not Found")       \
	X(NVML_ERROR_FUNCTION_NOT_FOUND, "Function Not Found")                 \
	X(NVML_ERROR_CORRUPTED_INFOROM, "Corrupted infoROM")                   \
	X(NVML_ERROR_GPU_IS_LOST, "GPU is lost")                               \
	X(NVML_ERROR_RESET_REQUIRED, "GPU requires reset")                     \
	X(NVML_ERROR_OPERATING_SYSTEM, "GPU access blocked by the OS")         \
	X(NVML_ERROR_LIB_RM_VERSION_MISMATCH,                                  \
	  "Driver/library version mismatch")                                   \
	X(NVML_ERROR_IN_USE, "In use by another client")                       \
	X(NVML_ERROR_MEMORY, "Insufficient Memory")                            \
	X(NVML_ERROR_NO_DATA, "No data")                                       \
	X(NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, "vGPU ECC not supported")         \
	X(NVML_ERROR_INSUFFICIENT_RESOURCES, "Insufficient resources")         \
	X(NVML_ERROR_FREQ_NOT_SUPPORTED, "Frequency not supported")            \
	X(NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "Argument version mismatch")   \
	X(NVML_ERROR_DEPRECATED, "Deprecated")                                 \
	X(NVML_ERROR_NOT_READY, "Not ready")                                   \
	X(NVML_ERROR_GPU_NOT_FOUND, "GPU not found")                           \
	X(NVML_ERROR_INVALID_STATE, "Invalid state")                           \
	X(NVML_ERROR_RESET_TYPE_NOT_SUPPORTED, "Reset type not supported")     \
	X(NVML_ERROR_UNKNOWN, "Unknown Error")

const char *nvmlErrorString(nvmlReturn_t result)
{
	/* A switch, not a table: the codes are sparse (999). */
	switch (result) {
#define NVML_ERROR_CASE(code, text)                                            \
	case code:                                                             \
		return text;
		NVML_ERROR_STRINGS(NVML_ERROR_CASE)
#undef NVML_ERROR_CASE
	}
	return "Unknown Error";
}

/* ---- init / shutdown ---------------------------------------------------- */

static void handles_init(void)
{
	for (uint32_t g = 0; g < GS_SIM_MAX_GPUS; g++) {
		gpu_handles[g].gpu = g;
		gpu_handles[g].mig = -1;
		for (uint32_t s = 0; s < GS_SIM_MAX_MIG; s++) {
			mig_handles[g][s].gpu = g;
			mig_handles[g][s].mig = (int32_t)s;
			gi_handles[g][s].gpu = g;
			gi_handles[g][s].slot = s;
			ci_handles[g][s].gpu = g;
			ci_handles[g][s].slot = s;
		}
	}
}

static nvmlReturn_t map_state(unsigned int flags)
{
	struct gs_errbuf eb = {0};
	char dir[GS_SIM_PATH_LEN];
	gs_err err;

	if (gs_sim_dir_resolve(NULL, dir, sizeof(dir), &eb) != GS_OK)
		return NVML_ERROR_DRIVER_NOT_LOADED;
	/* Fault site: the state file (the device nodes) cannot be opened. */
	err = gs_fault_hit("sim.nvml_state_open")
	          ? GS_ERR_IO
	          : gs_sim_state_open(dir, &lib.map, &eb);
	if (err == GS_ERR_NOT_FOUND && (flags & NVML_INIT_FLAG_NO_GPUS)) {
		lib.map = NULL;
		lib.st = NULL;
		return NVML_SUCCESS;
	}
	switch (err) {
	case GS_OK:
		break;
	case GS_ERR_NOT_FOUND:
		return NVML_ERROR_DRIVER_NOT_LOADED;
	case GS_ERR_VERSION:
		return NVML_ERROR_LIB_RM_VERSION_MISMATCH;
	case GS_ERR_PERM:
		return NVML_ERROR_NO_PERMISSION;
	default:
		return NVML_ERROR_UNKNOWN;
	}
	lib.st = gs_sim_state_get(lib.map);
	for (uint32_t g = 0; g < GS_SIM_MAX_GPUS; g++)
		lib.model[g] = g < lib.st->n_gpus
		                   ? gs_catalog_find(lib.st->gpus[g].model)
		                   : NULL;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
	nvmlReturn_t r = NVML_SUCCESS;

	if (pthread_rwlock_wrlock(&lib.life) != 0)
		return NVML_ERROR_UNKNOWN;
	if (lib.refcount == 0) {
		handles_init();
		r = map_state(flags);
	}
	if (r == NVML_SUCCESS)
		lib.refcount++;
	(void)pthread_rwlock_unlock(&lib.life);
	return r;
}

nvmlReturn_t nvmlInit_v2(void)
{
	return nvmlInitWithFlags(0);
}

nvmlReturn_t nvmlInit(void)
{
	return nvmlInitWithFlags(0);
}

nvmlReturn_t nvmlShutdown(void)
{
	if (pthread_rwlock_wrlock(&lib.life) != 0)
		return NVML_ERROR_UNKNOWN;
	if (lib.refcount > 0 && --lib.refcount == 0) {
		gs_sim_state_close(lib.map);
		lib.map = NULL;
		lib.st = NULL;
	}
	(void)pthread_rwlock_unlock(&lib.life);
	return NVML_SUCCESS;
}

/* ---- the call bracket -----------------------------------------------------
 */

nvmlReturn_t gs__nvml_enter(struct gs_sim_state **st)
{
	if (pthread_rwlock_rdlock(&lib.life) != 0)
		return NVML_ERROR_UNKNOWN;
	if (lib.refcount == 0) {
		(void)pthread_rwlock_unlock(&lib.life);
		return NVML_ERROR_UNINITIALIZED;
	}
	*st = lib.st;
	if (lib.st != NULL) {
		gs_err err = gs_sim_lock(lib.st);

		if (err != GS_OK) {
			(void)pthread_rwlock_unlock(&lib.life);
			return err == GS_ERR_TIMEOUT ? NVML_ERROR_TIMEOUT
			                             : NVML_ERROR_UNKNOWN;
		}
	}
	return NVML_SUCCESS;
}

void gs__nvml_leave(struct gs_sim_state *st)
{
	if (st != NULL)
		gs_sim_unlock(st);
	(void)pthread_rwlock_unlock(&lib.life);
}

const struct gs_gpu_model *gs__nvml_model(uint32_t gpu)
{
	return gpu < GS_SIM_MAX_GPUS ? lib.model[gpu] : NULL;
}

/* ---- handles --------------------------------------------------------------
 */

nvmlDevice_t gs__nvml_gpu_handle(uint32_t gpu)
{
	return &gpu_handles[gpu];
}

nvmlDevice_t gs__nvml_mig_handle(uint32_t gpu, uint32_t slot)
{
	return &mig_handles[gpu][slot];
}

nvmlGpuInstance_t gs__nvml_gi_handle(uint32_t gpu, uint32_t slot)
{
	return &gi_handles[gpu][slot];
}

nvmlComputeInstance_t gs__nvml_ci_handle(uint32_t gpu, uint32_t slot)
{
	return &ci_handles[gpu][slot];
}

/*
 * Whether `p` points at an element of the table [base, base + n * size):
 * compared as integers, so a stray pointer is never dereferenced.
 */
static bool in_table(const void *p, const void *base, size_t n, size_t size)
{
	uintptr_t a = (uintptr_t)p, b = (uintptr_t)base;

	return a >= b && a < b + n * size && (a - b) % size == 0;
}

static void fill_dev(struct gs_sim_state *st, uint32_t gpu, int mig,
                     struct gs__dev *out)
{
	out->st = st;
	out->gpu = gpu;
	out->mig = mig;
	out->g = &st->gpus[gpu];
	out->m = mig >= 0 ? &out->g->mig[mig] : NULL;
	out->e = &out->g->engine[mig >= 0 ? 1 + mig : 0];
	out->model = gs__nvml_model(gpu);
}

nvmlReturn_t gs__nvml_dev(struct gs_sim_state *st, nvmlDevice_t h,
                          struct gs__dev *out)
{
	const struct nvmlDevice_st *d = h;

	if (st == NULL || h == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!in_table(d, gpu_handles, GS_SIM_MAX_GPUS, sizeof(*d)) &&
	    !in_table(d, mig_handles, GS_SIM_MAX_GPUS * GS_SIM_MAX_MIG,
	              sizeof(*d)))
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d->gpu >= st->n_gpus)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d->mig >= 0) {
		const struct gs_sim_mig *m = &st->gpus[d->gpu].mig[d->mig];

		/* A MIG device exists while its GI has a compute instance. */
		if (!st->gpus[d->gpu].mig_mode || !m->in_use || !m->ci_in_use)
			return NVML_ERROR_INVALID_ARGUMENT;
	}
	fill_dev(st, d->gpu, d->mig, out);
	return NVML_SUCCESS;
}

nvmlReturn_t gs__nvml_gi(struct gs_sim_state *st, nvmlGpuInstance_t h,
                         struct gs__dev *out)
{
	const struct nvmlGpuInstance_st *gi = h;

	if (st == NULL || h == NULL ||
	    !in_table(gi, gi_handles, GS_SIM_MAX_GPUS * GS_SIM_MAX_MIG,
	              sizeof(*gi)))
		return NVML_ERROR_INVALID_ARGUMENT;
	if (gi->gpu >= st->n_gpus || !st->gpus[gi->gpu].mig[gi->slot].in_use)
		return NVML_ERROR_INVALID_ARGUMENT;
	fill_dev(st, gi->gpu, (int)gi->slot, out);
	return NVML_SUCCESS;
}

nvmlReturn_t gs__nvml_ci(struct gs_sim_state *st, nvmlComputeInstance_t h,
                         struct gs__dev *out)
{
	const struct nvmlComputeInstance_st *ci = h;
	const struct gs_sim_mig *m;

	if (st == NULL || h == NULL ||
	    !in_table(ci, ci_handles, GS_SIM_MAX_GPUS * GS_SIM_MAX_MIG,
	              sizeof(*ci)))
		return NVML_ERROR_INVALID_ARGUMENT;
	if (ci->gpu >= st->n_gpus)
		return NVML_ERROR_INVALID_ARGUMENT;
	m = &st->gpus[ci->gpu].mig[ci->slot];
	if (!m->in_use || !m->ci_in_use)
		return NVML_ERROR_INVALID_ARGUMENT;
	fill_dev(st, ci->gpu, (int)ci->slot, out);
	return NVML_SUCCESS;
}

nvmlReturn_t gs__nvml_str(char *buf, unsigned int length, const char *s)
{
	size_t n = strlen(s);

	if (buf == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (n + 1 > length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, s, n + 1);
	return NVML_SUCCESS;
}

bool gs__nvml_mps_live(const struct gs_sim_mps *mps)
{
	return mps->state != GS_SIM_MPS_OFF && mps->control_pid > 0 &&
	       gs_sim_pid_alive(mps->control_pid, mps->control_start_time);
}

unsigned int gs__nvml_pci_bus(uint32_t gpu)
{
	return gs_sim_pci_bus(gpu);
}

/* ---- system ----------------------------------------------------------------
 */

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	struct gs_sim_state *st;
	nvmlReturn_t r = gs__nvml_enter(&st);

	if (r != NVML_SUCCESS)
		return r;
	r = gs__nvml_str(version, length, SIM_DRIVER_VERSION);
	gs__nvml_leave(st);
	return r;
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
	/* A constant: needs no init. */
	return gs__nvml_str(version, length, SIM_NVML_VERSION);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
	if (cudaDriverVersion == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*cudaDriverVersion = SIM_CUDA_DRIVER_VERSION;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name,
                                      unsigned int length)
{
	struct gs_sim_state *st;
	nvmlReturn_t r = gs__nvml_enter(&st);
	char comm[64] = "";

	if (r != NVML_SUCCESS)
		return r;
	if (name == NULL || length == 0) {
		gs__nvml_leave(st);
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	if (pid > INT32_MAX || !gs_proc_comm((int32_t)pid, comm, sizeof(comm)))
		comm[0] = '\0';
	if (comm[0] == '\0' && st != NULL) {
		for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
			const struct gs_sim_proc *p = &st->procs[i];

			if (p->state == GS_SIM_PROC_LIVE &&
			    (unsigned int)p->pid == pid) {
				(void)snprintf(comm, sizeof(comm), "%.*s",
				               (int)sizeof(p->comm), p->comm);
				break;
			}
		}
	}
	if (comm[0] == '\0') {
		r = NVML_ERROR_NOT_FOUND;
	} else {
		/* The real call truncates rather than failing. */
		(void)snprintf(name, length, "%s", comm);
	}
	gs__nvml_leave(st);
	return r;
}

/* ---- device enumeration
 * ------------------------------------------------------ */

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
	struct gs_sim_state *st;
	nvmlReturn_t r = gs__nvml_enter(&st);

	if (r != NVML_SUCCESS)
		return r;
	if (deviceCount == NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else
		*deviceCount = st != NULL ? st->n_gpus : 0;
	gs__nvml_leave(st);
	return r;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
	return nvmlDeviceGetCount_v2(deviceCount);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                           nvmlDevice_t *device)
{
	struct gs_sim_state *st;
	nvmlReturn_t r = gs__nvml_enter(&st);

	if (r != NVML_SUCCESS)
		return r;
	if (device == NULL || st == NULL || index >= st->n_gpus)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else
		*device = gs__nvml_gpu_handle(index);
	gs__nvml_leave(st);
	return r;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index,
                                        nvmlDevice_t *device)
{
	return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
	struct gs_sim_state *st;
	nvmlReturn_t r = gs__nvml_enter(&st);

	if (r != NVML_SUCCESS)
		return r;
	if (uuid == NULL || device == NULL) {
		gs__nvml_leave(st);
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	r = NVML_ERROR_NOT_FOUND;
	for (uint32_t g = 0; st != NULL && g < st->n_gpus; g++) {
		const struct gs_sim_gpu *gpu = &st->gpus[g];

		if (strcmp(gpu->uuid, uuid) == 0) {
			*device = gs__nvml_gpu_handle(g);
			r = NVML_SUCCESS;
			break;
		}
		for (uint32_t s = 0; gpu->mig_mode && s < GS_SIM_MAX_MIG; s++) {
			const struct gs_sim_mig *m = &gpu->mig[s];

			if (m->in_use && m->ci_in_use &&
			    strcmp(m->uuid, uuid) == 0) {
				*device = gs__nvml_mig_handle(g, s);
				r = NVML_SUCCESS;
				break;
			}
		}
		if (r == NVML_SUCCESS)
			break;
	}
	gs__nvml_leave(st);
	return r;
}

/*
 * Parses "DDDDDDDD:BB:DD.F" or "DDDD:BB:DD.F" (hex, any case) into domain,
 * bus and device; -1 when malformed.
 */
static int parse_bus_id(const char *s, unsigned int *domain, unsigned int *bus,
                        unsigned int *dev)
{
	unsigned int fn;
	int n = 0;

	if (sscanf(s, "%x:%x:%x.%x%n", domain, bus, dev, &fn, &n) != 4 ||
	    s[n] != '\0')
		return -1;
	return 0;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId,
                                              nvmlDevice_t *device)
{
	struct gs_sim_state *st;
	nvmlReturn_t r = gs__nvml_enter(&st);
	unsigned int domain, bus, dev;

	if (r != NVML_SUCCESS)
		return r;
	if (pciBusId == NULL || device == NULL ||
	    parse_bus_id(pciBusId, &domain, &bus, &dev) != 0) {
		gs__nvml_leave(st);
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	r = NVML_ERROR_NOT_FOUND;
	for (uint32_t g = 0; st != NULL && g < st->n_gpus; g++) {
		if (domain == 0 && dev == 0 && bus == gs__nvml_pci_bus(g)) {
			*device = gs__nvml_gpu_handle(g);
			r = NVML_SUCCESS;
			break;
		}
	}
	gs__nvml_leave(st);
	return r;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId,
                                           nvmlDevice_t *device)
{
	return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}
