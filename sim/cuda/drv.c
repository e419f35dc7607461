/*
 * drv.c - the sim driver's process state: cuInit (mapping the node state,
 * reading the environment once, enumerating devices), device queries,
 * error names, and the helpers that take the shared lock for the rest of
 * the driver.
 *
 * Devices. The process's devices are fixed at cuInit, as with the real
 * driver: every GPU with MIG off, and every MIG instance (with a compute
 * instance) of a GPU with MIG on, in GPU order, filtered and ordered by
 * CUDA_VISIBLE_DEVICES (indices into that list, GPU-<uuid> prefixes, or
 * MIG-<uuid>; parsing stops at the first token that names nothing).
 *
 * Environment read at cuInit: GPUSLICE_SIM_DIR (state directory),
 * CUDA_VISIBLE_DEVICES, CUDA_MPS_PIPE_DIRECTORY (default /tmp/nvidia-mps),
 * CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT.
 */
#include "cuda_int.h"
#include "halloc.h"

#include <cudaProfiler.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct gs__drv gs__drv = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
};

/* Configuration read once at cuInit. */
struct cfg {
	char visible[1024];
	bool visible_set;
	char mps_pipe[GS_SIM_PATH_LEN];
	uint32_t mps_pct; /* 0: not set */
	int mps_prio;     /* CUDA_MPS_CLIENT_PRIORITY, -1: not set */
	char mps_limit[1024];
};

void gs__kmsg_xid(uint32_t gpu, uint32_t xid)
{
	char path[sizeof(gs__drv.dir) + 8], line[256];
	int fd, n;

	if (gs__drv.dir[0] == '\0')
		return;
	(void)snprintf(path, sizeof(path), "%s/kmsg", gs__drv.dir);
	/* Bus numbers as nvmlDeviceGetPciInfo reports them. */
	n = snprintf(line, sizeof(line),
	             "NVRM: Xid (PCI:0000:%02x:00): %u, pid=%d, name=%.15s, Ch 00000008, simulated fault\n",
	             gs_sim_pci_bus(gpu), xid, (int)gs__drv.pid,
	             gs__drv.comm[0] ? gs__drv.comm : "<unknown>");
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0)
		return;
	(void)fchmod(fd, 0666); /* every tenant's faults are logged here */
	if (n > 0)
		(void)!write(fd, line, (size_t)n); /* one write: appended whole */
	(void)close(fd);
}

void gs__lock(void)
{
	(void)pthread_mutex_lock(&gs__drv.mu);
}

void gs__unlock(void)
{
	(void)pthread_mutex_unlock(&gs__drv.mu);
}

CUresult gs__enter(void)
{
	gs__lock();
	if (!gs__drv.initialized || gs__drv.forked) {
		gs__unlock();
		return CUDA_ERROR_NOT_INITIALIZED;
	}
	return CUDA_SUCCESS;
}

struct gs__dev *gs__dev_get(CUdevice d)
{
	if (d < 0 || d >= gs__drv.n_dev)
		return NULL;
	return &gs__drv.dev[d];
}

/* ---- shared state ---------------------------------------------------- */

struct gs_sim_state *gs__state_lock(struct gs__dev *d, CUresult *err)
{
	struct gs_sim_state *st = gs__drv.st;
	uint64_t now;

	if (gs_sim_lock(st) != GS_OK) {
		*err = CUDA_ERROR_UNKNOWN;
		return NULL;
	}
	now = gs_sim_now_ns();
	(void)gs_sim_reap_maybe(st, now, false);
	if (d != NULL)
		gs_sim_engine_advance(st, d->gpu, d->engine, now);
	*err = CUDA_SUCCESS;
	return st;
}

void gs__state_unlock(void)
{
	gs_sim_unlock(gs__drv.st);
}

struct gs_sim_proc *gs__slot(struct gs__dev *d)
{
	struct gs_sim_proc *p;

	if (d->slot < 0)
		return NULL;
	p = &gs__drv.st->procs[d->slot];
	if (p->state != GS_SIM_PROC_LIVE || p->generation != d->slot_gen ||
	    p->pid != gs__drv.pid)
		return NULL;
	return p;
}

void gs__harvest(struct gs__dev *d, struct gs_sim_proc *p)
{
	(void)d;
	for (uint64_t s = p->ring_harvest; s < p->ring_head; s++) {
		const struct gs_sim_op *op = &p->ring[s % GS_SIM_RING];
		struct gs__event *ev;

		if (!(op->flags & GS_SIM_OP_MARKER))
			continue;
		ev = (struct gs__event *)(uintptr_t)op->tag;
		if (gs__h_is(ev, GS__H_EVENT) && ev->seq == s + 1) {
			ev->timed = true;
			ev->time_ns = op->end_ns;
		}
	}
	p->ring_harvest = p->ring_head;
}

/* ---- environment ----------------------------------------------------- */

static void strip_slashes(char *s)
{
	size_t n = strlen(s);

	while (n > 1 && s[n - 1] == '/')
		s[--n] = '\0';
}

static void cfg_read(struct cfg *c)
{
	const char *v;

	memset(c, 0, sizeof(*c));
	v = getenv("CUDA_VISIBLE_DEVICES");
	if (v != NULL) {
		c->visible_set = true;
		snprintf(c->visible, sizeof(c->visible), "%s", v);
	}
	v = getenv("CUDA_MPS_PIPE_DIRECTORY");
	snprintf(c->mps_pipe, sizeof(c->mps_pipe), "%s",
	         v != NULL && v[0] != '\0' ? v : "/tmp/nvidia-mps");
	strip_slashes(c->mps_pipe);
	v = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
	if (v != NULL && v[0] != '\0') {
		char *end;
		double pct = strtod(v, &end);

		if (end != v && pct > 0)
			c->mps_pct = pct >= 100 ? 100 : (uint32_t)(pct + 0.5);
		if (c->mps_pct == 0 && end != v && pct > 0)
			c->mps_pct = 1;
	}
	v = getenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
	if (v != NULL)
		snprintf(c->mps_limit, sizeof(c->mps_limit), "%s", v);
	/* 0 normal, 1 below normal; anything else is ignored, as by the
	 * real server (the control daemon's default applies). */
	v = getenv("CUDA_MPS_CLIENT_PRIORITY");
	c->mps_prio = v != NULL && (strcmp(v, "0") == 0 || strcmp(v, "1") == 0)
	                  ? v[0] - '0'
	                  : -1;
}

/* "10G", "4096M", "512MB", "1GiB", plain bytes. 0 on malformed input. */
static uint64_t parse_size(const char *s)
{
	char *end;
	unsigned long long n;
	uint64_t mul = 1;

	errno = 0;
	n = strtoull(s, &end, 10);
	if (end == s || errno != 0)
		return 0;
	switch (toupper((unsigned char)*end)) {
	case '\0':
		return n;
	case 'K':
		mul = 1ULL << 10;
		break;
	case 'M':
		mul = 1ULL << 20;
		break;
	case 'G':
		mul = 1ULL << 30;
		break;
	case 'T':
		mul = 1ULL << 40;
		break;
	default:
		return 0;
	}
	end++;
	if (*end == 'i')
		end++;
	if (toupper((unsigned char)*end) == 'B')
		end++;
	return *end == '\0' ? n * mul : 0;
}

/* CUDA_MPS_PINNED_DEVICE_MEM_LIMIT for device ordinal `ord`: "0=1G,1=512M"
 * or "<uuid>=<value>"; 0 when it names no limit for it. */
static uint64_t mps_limit_for(const char *list, int ord, const char *uuid)
{
	char buf[1024];
	char *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	for (char *tok = strtok_r(buf, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		char *end;
		long n;

		while (isspace((unsigned char)*tok))
			tok++;
		if (eq == NULL)
			continue;
		*eq = '\0';
		n = strtol(tok, &end, 10);
		if ((end != tok && *end == '\0' && n == ord) ||
		    strcmp(tok, uuid) == 0)
			return parse_size(eq + 1);
	}
	return 0;
}

/* ---- devices --------------------------------------------------------- */

struct cand {
	uint32_t gpu, engine;
};

static int all_devices(const struct gs_sim_state *st, struct cand *out)
{
	int n = 0;

	for (uint32_t g = 0; g < st->n_gpus; g++) {
		const struct gs_sim_gpu *gpu = &st->gpus[g];

		if (!gpu->mig_mode) {
			out[n++] = (struct cand){g, 0};
			continue;
		}
		for (uint32_t i = 0; i < GS_SIM_MAX_MIG; i++)
			if (gpu->mig[i].in_use && gpu->mig[i].ci_in_use &&
			    gpu->engine[1 + i].live)
				out[n++] = (struct cand){g, 1 + i};
	}
	return n;
}

/* The sim's one exported non-CUDA name: programs that must label their
   figures (the workload kit, bench study) look it up with dlsym to tell the
   simulated node from a real driver. */
__attribute__((visibility("default"))) extern const char gpuslice_sim_node[];
const char gpuslice_sim_node[] = "gpuslice simulated GPU node";

static const char *cand_uuid(const struct gs_sim_state *st,
                             const struct cand *c)
{
	const struct gs_sim_gpu *g = &st->gpus[c->gpu];

	return c->engine == 0 ? g->uuid : g->mig[c->engine - 1].uuid;
}

/* Applies CUDA_VISIBLE_DEVICES to the candidate list. */
static int filter_visible(const struct gs_sim_state *st, const char *spec,
                          struct cand *all, int n_all, struct cand *out)
{
	char buf[1024];
	char *save = NULL;
	int n = 0;

	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *tok = strtok_r(buf, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		int before = n;

		while (isspace((unsigned char)*tok))
			tok++;
		for (char *e = tok + strlen(tok);
		     e > tok && isspace((unsigned char)e[-1]); e--)
			e[-1] = '\0';
		if (tok[0] == '\0')
			break;
		if (isdigit((unsigned char)tok[0])) {
			char *end;
			long i = strtol(tok, &end, 10);

			if (*end != '\0' || i < 0 || i >= n_all)
				break;
			out[n++] = all[i];
		} else if (strncmp(tok, "GPU-", 4) == 0 ||
		           strncmp(tok, "MIG-", 4) == 0) {
			size_t len = strlen(tok);

			for (int i = 0; i < n_all; i++) {
				const char *u = cand_uuid(st, &all[i]);
				const char *gu = st->gpus[all[i].gpu].uuid;

				/* a GPU uuid (prefix) selects the GPU or all
				 * of its MIG devices */
				if (strncmp(u, tok, len) == 0 ||
				    (tok[0] == 'G' && all[i].engine != 0 &&
				     strncmp(gu, tok, len) == 0))
					out[n++] = all[i];
			}
		}
		if (n == before)
			break;
		/* a device named twice ends the list, as an unknown one does */
		for (int i = before; i < n; i++)
			for (int j = 0; j < before; j++)
				if (out[i].gpu == out[j].gpu &&
				    out[i].engine == out[j].engine)
					return before;
	}
	return n;
}

static bool mps_live(const struct gs_sim_mps *m)
{
	return m->state != GS_SIM_MPS_OFF && m->control_pid > 0 &&
	       gs_sim_pid_alive(m->control_pid, m->control_start_time);
}

uint32_t gs__mps_server_pct(const struct gs_sim_mps *m)
{
	uint32_t pct = m->active_thread_pct ? m->active_thread_pct
	                                    : m->default_active_thread_pct;

	return pct == 0 || pct > 100 ? 100 : pct;
}

static struct cfg cfg;

static bool pipe_matches(const struct gs_sim_mps *m)
{
	char pipe[GS_SIM_PATH_LEN];

	snprintf(pipe, sizeof(pipe), "%s", m->pipe_dir);
	strip_slashes(pipe);
	return mps_live(m) && strcmp(pipe, cfg.mps_pipe) == 0;
}

static const struct gs_sim_mps *cand_mps(const struct gs_sim_state *st,
                                         const struct cand *c)
{
	return &st->gpus[c->gpu].engine[c->engine].mps;
}

/*
 * An MPS client sees the devices of the daemon it connects to, numbered
 * from 0 in the daemon's order (mps.device_ordinal), as with the real
 * MPS; its own CUDA_VISIBLE_DEVICES then indexes that list. A process
 * whose pipe directory names no live daemon sees every device.
 */
static int mps_devices(const struct gs_sim_state *st, struct cand *all,
                       int n_all)
{
	struct cand mine[GS__MAX_DEVICES];
	int n = 0;

	for (int i = 0; i < n_all; i++)
		if (pipe_matches(cand_mps(st, &all[i])))
			mine[n++] = all[i];
	if (n == 0)
		return n_all;
	for (int i = 1; i < n; i++) /* insertion sort by daemon ordinal */
		for (int j = i;
		     j > 0 && cand_mps(st, &mine[j - 1])->device_ordinal >
		                  cand_mps(st, &mine[j])->device_ordinal;
		     j--) {
			struct cand t = mine[j - 1];

			mine[j - 1] = mine[j];
			mine[j] = t;
		}
	memcpy(all, mine, sizeof(mine[0]) * (size_t)n);
	return n;
}

/* Fills d's MPS view from the engine (lock held). */
void gs__dev_mps_refresh(struct gs__dev *d)
{
	const struct gs_sim_engine *e =
	    &gs__drv.st->gpus[d->gpu].engine[d->engine];

	d->mps_client = pipe_matches(&e->mps);
	d->engine_sms = e->sm_count;
	d->sm_count = e->sm_count;
	d->mps_pct = 0;
	d->mps_below = false;
	if (d->mps_client) {
		uint32_t pct = gs__mps_server_pct(&e->mps);

		if (cfg.mps_pct != 0 && cfg.mps_pct < pct)
			pct = cfg.mps_pct;
		d->mps_pct = pct;
		d->mps_below = cfg.mps_prio >= 0
		                   ? cfg.mps_prio == 1
		                   : e->mps.default_client_priority == 1;
		d->sm_count = e->sm_count * pct / 100;
		if (d->sm_count == 0)
			d->sm_count = 1;
	}
}

static void dev_fill(struct gs__dev *d, const struct gs_sim_state *st,
                     const struct cand *c, int ord)
{
	const struct gs_sim_gpu *g = &st->gpus[c->gpu];
	const struct gs_sim_engine *e = &g->engine[c->engine];

	memset(d, 0, sizeof(*d));
	d->gpu = c->gpu;
	d->engine = c->engine;
	d->slot = -1;
	snprintf(d->uuid, sizeof(d->uuid), "%s", cand_uuid(st, c));
	snprintf(d->gpu_uuid, sizeof(d->gpu_uuid), "%s", g->uuid);
	if (c->engine == 0)
		snprintf(d->name, sizeof(d->name), "%s", g->name);
	else
		snprintf(d->name, sizeof(d->name), "%s MIG %s", g->name,
		         g->mig[c->engine - 1].profile_name);
	d->mem_total = e->mem_total;
	d->cc_major = g->cc_major;
	d->cc_minor = g->cc_minor;
	gs__dev_mps_refresh(d);
	if (d->mps_client)
		d->mps_mem_limit = mps_limit_for(cfg.mps_limit, ord, d->uuid);
}

static void atfork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	/* CUDA state does not survive fork(): the child starts over only
	 * if it never saw an initialized driver. */
	gs__drv.mu = fresh;
	if (gs__drv.initialized)
		gs__drv.forked = true;
}

static CUresult init_locked(void)
{
	struct gs_errbuf eb = {0};
	char dir[GS_SIM_PATH_LEN + 32];
	struct cand all[GS__MAX_DEVICES], vis[GS__MAX_DEVICES];
	struct gs_sim_state *st;
	int n_all, n;
	gs_err err;

	cfg_read(&cfg);
	if (gs_sim_dir_resolve(NULL, dir, sizeof(dir), &eb) != GS_OK)
		return CUDA_ERROR_NO_DEVICE;
	(void)snprintf(gs__drv.dir, sizeof(gs__drv.dir), "%s", dir);
	/* Fault site: the state file (the device nodes) cannot be opened. */
	err = gs_fault_hit("sim.state_open")
	          ? GS_ERR_IO
	          : gs_sim_state_open(dir, &gs__drv.map, &eb);
	if (err == GS_ERR_VERSION)
		return CUDA_ERROR_SYSTEM_DRIVER_MISMATCH;
	if (err == GS_ERR_CORRUPT)
		return CUDA_ERROR_SYSTEM_NOT_READY;
	if (err != GS_OK)
		return CUDA_ERROR_NO_DEVICE;
	st = gs__drv.st = gs_sim_state_get(gs__drv.map);
	if (gs_sim_lock(st) != GS_OK)
		goto out_close;
	if (gs_sim_state_check(st, &eb) != GS_OK) {
		gs_sim_unlock(st);
		gs_sim_state_close(gs__drv.map);
		gs__drv.map = NULL;
		gs__drv.st = NULL;
		return CUDA_ERROR_SYSTEM_NOT_READY;
	}
	n_all = all_devices(st, all);
	n_all = mps_devices(st, all, n_all);
	if (cfg.visible_set)
		n = filter_visible(st, cfg.visible, all, n_all, vis);
	else {
		memcpy(vis, all, sizeof(all[0]) * (size_t)n_all);
		n = n_all;
	}
	for (int i = 0; i < n; i++)
		dev_fill(&gs__drv.dev[i], st, &vis[i], i);
	gs__drv.n_dev = n;
	gs_sim_unlock(st);
	if (n == 0)
		goto out_close;
	gs__drv.pid = (int32_t)getpid();
	gs__drv.start_time = gs_sim_pid_start_time(gs__drv.pid);
	{
		FILE *f = fopen("/proc/self/comm", "re");

		if (f != NULL) {
			if (fgets(gs__drv.comm, sizeof(gs__drv.comm), f) ==
			    NULL)
				gs__drv.comm[0] = '\0';
			gs__drv.comm[strcspn(gs__drv.comm, "\n")] = '\0';
			fclose(f);
		}
	}
	return CUDA_SUCCESS;

out_close:
	gs_sim_state_close(gs__drv.map);
	gs__drv.map = NULL;
	gs__drv.st = NULL;
	return CUDA_ERROR_NO_DEVICE;
}

CUresult CUDAAPI cuInit(unsigned int Flags)
{
	static bool atfork_done;
	CUresult r;

	if (Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	gs__lock();
	if (gs__drv.forked) {
		gs__unlock();
		return CUDA_ERROR_NOT_INITIALIZED;
	}
	if (!atfork_done) {
		(void)pthread_atfork(NULL, NULL, atfork_child);
		atfork_done = true;
	}
	if (gs__drv.initialized || gs__drv.init_result != CUDA_SUCCESS) {
		r = gs__drv.initialized ? CUDA_SUCCESS : gs__drv.init_result;
		gs__unlock();
		return r;
	}
	r = init_locked();
	if (r == CUDA_SUCCESS)
		gs__drv.initialized = true;
	else
		gs__drv.init_result = r;
	gs__unlock();
	return r;
}

/*
 * At exit the driver tears its contexts down, as the real one does: our
 * slots go back at once instead of waiting for a reap. Skipped when a
 * thread still holds the local lock (the reaper will do it).
 */
__attribute__((destructor)) static void drv_fini(void)
{
	struct gs_sim_state *st = gs__drv.st;

	if (!gs__drv.initialized || gs__drv.forked || st == NULL ||
	    (int32_t)getpid() != gs__drv.pid)
		return;
	if (pthread_mutex_trylock(&gs__drv.mu) != 0)
		return;
	if (gs_sim_lock(st) == GS_OK) {
		uint64_t now = gs_sim_now_ns();

		for (int i = 0; i < gs__drv.n_dev; i++) {
			struct gs__dev *d = &gs__drv.dev[i];

			if (gs__slot(d) == NULL)
				continue;
			gs_sim_engine_advance(st, d->gpu, d->engine, now);
			gs_sim_proc_release(st, d->slot, now, false);
			d->slot = -1;
		}
		gs_sim_unlock(st);
	}
	gs__unlock();
}

/* ---- version, errors -------------------------------------------------- */

CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
	if (driverVersion == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = GS__DRIVER_VERSION;
	return CUDA_SUCCESS;
}

struct err_entry {
	int code;
	const char *name;
	const char *msg;
};

static const struct err_entry errors[] = {
#define X(code, name, msg) {code, #name, msg},
#include "cuda_errors.def"
#undef X
};

static const struct err_entry *err_find(CUresult e)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (errors[i].code == (int)e)
			return &errors[i];
	return NULL;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
	const struct err_entry *e;

	if (pStr == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	e = err_find(error);
	*pStr = e ? e->name : NULL;
	return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
	const struct err_entry *e;

	if (pStr == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	e = err_find(error);
	*pStr = e ? e->msg : NULL;
	return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- devices ---------------------------------------------------------- */

CUresult CUDAAPI cuDeviceGetCount(int *count)
{
	CUresult r;

	if (count == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	*count = gs__drv.n_dev;
	gs__unlock();
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (device == NULL)
		r = CUDA_ERROR_INVALID_VALUE;
	else if (gs__dev_get(ordinal) == NULL)
		r = CUDA_ERROR_INVALID_DEVICE;
	else
		*device = ordinal;
	gs__unlock();
	return r;
}

/* Common prologue of device queries: lock + valid device. */
static CUresult dev_enter(CUdevice dev, struct gs__dev **d)
{
	CUresult r = gs__enter();

	if (r != CUDA_SUCCESS)
		return r;
	*d = gs__dev_get(dev);
	if (*d == NULL) {
		gs__unlock();
		return CUDA_ERROR_INVALID_DEVICE;
	}
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
	struct gs__dev *d;
	CUresult r;

	if (name == NULL || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = dev_enter(dev, &d)) != CUDA_SUCCESS)
		return r;
	snprintf(name, (size_t)len, "%s", d->name);
	gs__unlock();
	return CUDA_SUCCESS;
}

static void uuid_bytes(const char *s, CUuuid *out)
{
	int k = 0;

	memset(out, 0, sizeof(*out));
	s += 4; /* "GPU-" or "MIG-" */
	for (; *s && k < 32; s++) {
		int v;

		if (*s == '-')
			continue;
		if (!isxdigit((unsigned char)*s))
			break;
		v = isdigit((unsigned char)*s)
		        ? *s - '0'
		        : tolower((unsigned char)*s) - 'a' + 10;
		out->bytes[k / 2] =
		    (char)(out->bytes[k / 2] | (v << ((k % 2) ? 0 : 4)));
		k++;
	}
}

/* v1: the physical GPU's UUID even for a MIG device. */
CUresult CUDAAPI gs__cuDeviceGetUuid_v1(CUuuid *uuid, CUdevice dev)
{
	struct gs__dev *d;
	CUresult r;

	if (uuid == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = dev_enter(dev, &d)) != CUDA_SUCCESS)
		return r;
	uuid_bytes(d->gpu_uuid, uuid);
	gs__unlock();
	return CUDA_SUCCESS;
}

/* v2: the MIG instance's UUID for a MIG device. */
CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	struct gs__dev *d;
	CUresult r;

	if (uuid == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = dev_enter(dev, &d)) != CUDA_SUCCESS)
		return r;
	uuid_bytes(d->uuid, uuid);
	gs__unlock();
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	struct gs__dev *d;
	CUresult r;

	if (bytes == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = dev_enter(dev, &d)) != CUDA_SUCCESS)
		return r;
	*bytes = (size_t)d->mem_total;
	gs__unlock();
	return CUDA_SUCCESS;
}

/* Per-architecture figures for the attributes that differ. */
struct arch {
	int cc_major, cc_minor;
	int clock_khz, mem_clock_khz, bus_width;
	int l2_bytes;
	int smem_per_sm, smem_optin;
	int threads_per_sm, blocks_per_sm;
	int async_engines;
};

static const struct arch arches[] = {
    {7, 0, 1530000, 877000, 4096, 6 << 20, 98304, 98304, 2048, 32, 6},
    {7, 5, 1590000, 5001000, 256, 4 << 20, 65536, 65536, 1024, 16, 3},
    {8, 0, 1410000, 1593000, 5120, 40 << 20, 167936, 166912, 2048, 32, 3},
    {8, 6, 1740000, 7251000, 384, 6 << 20, 102400, 101376, 1536, 16, 2},
    {8, 9, 2520000, 9001000, 384, 96 << 20, 102400, 101376, 1536, 24, 2},
    {9, 0, 1980000, 2619000, 5120, 50 << 20, 233472, 232448, 2048, 32, 3},
    {10, 0, 1965000, 3996000, 8192, 126 << 20, 233472, 232448, 2048, 32, 4},
    {12, 0, 2617000, 14001000, 512, 128 << 20, 102400, 101376, 1536, 24, 2},
};

static const struct arch *arch_for(const struct gs__dev *d)
{
	const struct arch *best = &arches[0];

	for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++) {
		const struct arch *a = &arches[i];

		if (a->cc_major < (int)d->cc_major ||
		    (a->cc_major == (int)d->cc_major &&
		     a->cc_minor <= (int)d->cc_minor))
			best = a;
	}
	return best;
}

uint32_t gs__dev_clock_khz(const struct gs__dev *d)
{
	return (uint32_t)arch_for(d)->clock_khz;
}

static int attr_value(const struct gs__dev *d, CUdevice_attribute a, bool *ok)
{
	const struct arch *ar = arch_for(d);
	const struct gs_sim_gpu *g = &gs__drv.st->gpus[d->gpu];

	*ok = true;
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
		return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
		return 64;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
		return 2147483647;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
		return 65535;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
		return 49152;
	case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
		return 65536;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
		return 32;
	case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
		return 2147483647;
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
		return 65536;
	case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
		return ar->clock_khz;
	case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
		return 512;
	case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT:
		return 32;
	case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP:
	case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
	case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
	case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
	case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
	case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED:
		return 1;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
		return (int)d->sm_count;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
		return (int)g->compute_mode;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
		return 0x18 + (int)d->gpu * 0x12;
	case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
		return ar->mem_clock_khz;
	case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
		return ar->bus_width;
	case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
		return ar->l2_bytes;
	case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE:
		return ar->l2_bytes / 4 * 3;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
		return ar->threads_per_sm;
	case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
		return ar->async_engines;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
		return (int)d->cc_major;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
		return (int)d->cc_minor;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
		return ar->smem_per_sm;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
		return ar->smem_optin;
	case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK:
		return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
		return ar->blocks_per_sm;
	case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE:
		return 134213632;
	case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH:
		return d->cc_major >= 9;
	case CU_DEVICE_ATTRIBUTE_MPS_ENABLED:
		return d->mps_client;
	case CU_DEVICE_ATTRIBUTE_NUMA_CONFIG:
	case CU_DEVICE_ATTRIBUTE_NUMA_ID:
		return 0;
	case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID:
		return -1;
	default:
		/* a valid attribute the sim has no figure for reads as 0 */
		*ok = a > 0 && a < CU_DEVICE_ATTRIBUTE_MAX;
		return 0;
	}
}

void gs__dev_identity(const struct gs__dev *d, CUuuid *uuid, int pci[3])
{
	bool ok;

	uuid_bytes(d->gpu_uuid, uuid);
	pci[0] = attr_value(d, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, &ok);
	pci[1] = attr_value(d, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, &ok);
	pci[2] = attr_value(d, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, &ok);
}

CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib,
                                      CUdevice dev)
{
	struct gs__dev *d;
	CUresult r;
	bool ok;
	int v;

	if (pi == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = dev_enter(dev, &d)) != CUDA_SUCCESS)
		return r;
	v = attr_value(d, attrib, &ok);
	gs__unlock();
	if (!ok)
		return CUDA_ERROR_INVALID_VALUE;
	*pi = v;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
	struct gs__dev *d;
	CUresult r;

	if (pciBusId == NULL || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = dev_enter(dev, &d)) != CUDA_SUCCESS)
		return r;
	snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", 0x18 + d->gpu * 0x12);
	gs__unlock();
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
	unsigned int dom, bus, slot, fn;
	CUresult r;

	if (dev == NULL || pciBusId == NULL ||
	    sscanf(pciBusId, "%x:%x:%x.%x", &dom, &bus, &slot, &fn) != 4)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = CUDA_ERROR_INVALID_DEVICE;
	for (int i = 0; i < gs__drv.n_dev; i++)
		if (dom == 0 && slot == 0 &&
		    bus == 0x18 + gs__drv.dev[i].gpu * 0x12) {
			*dev = i;
			r = CUDA_SUCCESS;
			break;
		}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev,
                                       CUdevice peerDev)
{
	struct gs__dev *d;
	CUresult r;

	if (canAccessPeer == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = dev_enter(dev, &d)) != CUDA_SUCCESS)
		return r;
	r = gs__dev_get(peerDev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
	gs__unlock();
	if (r == CUDA_SUCCESS)
		*canAccessPeer = 0; /* the sim has no peer links */
	return r;
}

CUresult CUDAAPI cuDeviceGetP2PAttribute(int *value,
                                         CUdevice_P2PAttribute attrib,
                                         CUdevice srcDevice, CUdevice dstDevice)
{
	struct gs__dev *d;
	CUresult r;

	if (value == NULL || srcDevice == dstDevice)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = dev_enter(srcDevice, &d)) != CUDA_SUCCESS)
		return r;
	r = gs__dev_get(dstDevice) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
	gs__unlock();
	if (r == CUDA_SUCCESS)
		*value = 0;
	return r;
}

CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
	struct gs__dev *d;
	CUresult r;

	if (pool_out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = dev_enter(dev, &d)) != CUDA_SUCCESS)
		return r;
	if (d->default_pool == NULL) {
		struct gs__pool *p = gs__calloc(1, sizeof(*p));

		if (p == NULL || !gs__h_add(p, GS__H_POOL)) {
			free(p);
			gs__unlock();
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		p->dev = dev;
		p->is_default = true;
		p->reuse_follow = p->reuse_opportunistic = p->reuse_internal =
		    1;
		d->default_pool = p;
		if (d->cur_pool == NULL)
			d->cur_pool = p;
	}
	*pool_out = (CUmemoryPool)d->default_pool;
	gs__unlock();
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	struct gs__dev *d;
	CUresult r;

	if (pool == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = dev_enter(dev, &d)) != CUDA_SUCCESS)
		return r;
	bool have = d->cur_pool != NULL;
	if (have)
		*pool = (CUmemoryPool)d->cur_pool;
	gs__unlock();
	return have ? CUDA_SUCCESS : cuDeviceGetDefaultMemPool(pool, dev);
}

CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	struct gs__dev *d;
	CUresult r;

	if ((r = dev_enter(dev, &d)) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(pool, GS__H_POOL) ||
	    ((struct gs__pool *)pool)->dev != dev)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		d->cur_pool = (struct gs__pool *)pool;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
	if (mode == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*mode = CU_MODULE_LAZY_LOADING;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuProfilerStart(void)
{
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuProfilerStop(void)
{
	return CUDA_SUCCESS;
}
