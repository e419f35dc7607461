/*
 * shim.c - the frame of libgpuslice.so: configuration, finding the real
 * CUDA driver and NVML (and their real entry points), attaching the
 * process to its slice, and what happens at fork and exit. The bottom of
 * the shim: the hook modules call it, it calls none of them (procaddr.c
 * holds the table of hooks and the dlsym()/cuGetProcAddress()
 * interception on top).
 *
 * Life of a process with the shim (LD_PRELOAD or /etc/ld.so.preload):
 *
 *   loaded --first hooked call--> gs__ready(): config, real driver,
 *     region, attach --> enforcing, or passing through when no slice was
 *     asked for, or refusing (GPUSLICE_SLICE names a slice this process
 *     cannot join: region missing, slice missing, table full): every
 *     hooked call, cuInit first, answers CUDA_ERROR_NOT_PERMITTED and the
 *     reason is logged - a workload never runs without the limits it was
 *     sent to run under
 *   fork --child handler--> detached; the child attaches as itself on
 *     its next hooked call
 *   exit --destructor--> detach: the process's memory share goes back
 *   kill -9 --> its share comes back when a reaper (any process over the
 *     cap, `gpuslice run`, the daemon) finds the pid gone
 *
 * A guest in someone else's process: no output on stdout/stderr (logs go
 * to GPUSLICE_LOG only), no exit/abort, no signal handlers, errno kept.
 * The real driver is found with dlopen(libcuda.so.1) (or
 * GPUSLICE_REAL_LIBCUDA) and each entry point with the real dlsym on that
 * handle, which searches that library and its dependencies, never this
 * preloaded object; a driver that turns out to be this object is refused.
 */
#include "shim_int.h"

#include "gs/faultinj.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const uint32_t gs__gate_slow = GS_GATE_ALWAYS;
const uint32_t gs__gate_open = 0;

struct gs__shim gs__g = {
    .fast_gate = &gs__gate_slow,
    .fast_mask = GS_GATE_ALWAYS,
    .single_dev = -1,
    .mu = PTHREAD_MUTEX_INITIALIZER,
};
struct gs__real gs__real;
struct gs__real_nvml gs__rnvml;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static bool init_done;
static bool init_ok; /* the real driver is usable */
__thread int gs__tls_in_init;
static pid_t attached_pid;
static pthread_mutex_t nvml_mu = PTHREAD_MUTEX_INITIALIZER;
/* The other modules' child-side fork handlers (gs__on_fork_child), run
 * after shim.c's own: registered by their constructors, so that shim.c
 * names none of them. */
#define GS__FORK_CHILD_MAX 4
static void (*fork_child[GS__FORK_CHILD_MAX])(void);
static int n_fork_child;
/* And their exit handlers (gs__on_exit), run before the detach. */
static void (*on_exit_fn[GS__FORK_CHILD_MAX])(void);
static int n_on_exit;
/* And the one that stops a process joining a parked slice
 * (gs__on_join_parked: swap.c's), run once gs__g.mu is released. */
static void (*join_parked_fn)(void);

uint64_t gs__now(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- configuration ---------------------------------------------------- */

static void copy_env(char *dst, size_t n, const char *name)
{
	const char *v = getenv(name);

	dst[0] = '\0';
	if (v != NULL && strlen(v) < n)
		(void)snprintf(dst, n, "%s", v);
}

static bool parse_bytes(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s)
		return false;
	switch (*end) {
	case 'K':
	case 'k':
		v <<= 10;
		end++;
		break;
	case 'M':
	case 'm':
		v <<= 20;
		end++;
		break;
	case 'G':
	case 'g':
		v <<= 30;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'i')
		end++;
	if (*end == 'B')
		end++;
	if (*end != '\0')
		return false;
	*out = v;
	return true;
}

/* The one place the shim reads its environment. */
static void config_read(struct gs__config *c)
{
	const char *v;
	char *colon;

	memset(c, 0, sizeof(*c));
	if (gs_region_dir_resolve(NULL, c->run_dir, NULL) != GS_OK)
		c->run_dir[0] = '\0';
	copy_env(c->slice, sizeof(c->slice), "GPUSLICE_SLICE");
	copy_env(c->real_libcuda, sizeof(c->real_libcuda),
	         "GPUSLICE_REAL_LIBCUDA");
	copy_env(c->real_libnvml, sizeof(c->real_libnvml),
	         "GPUSLICE_REAL_LIBNVML");
	c->log_level = GS_LOG_INFO;
	copy_env(c->log_path, sizeof(c->log_path), "GPUSLICE_LOG");
	colon = strchr(c->log_path, ':');
	if (colon != NULL) {
		int lv;

		*colon = '\0';
		lv = gs_log_level_parse(c->log_path);
		if (lv >= 0) {
			c->log_level = lv;
			memmove(c->log_path, colon + 1, strlen(colon + 1) + 1);
		} else {
			*colon = ':';
		}
	}
	v = getenv("GPUSLICE_CTX_OVERHEAD");
	if (v != NULL && parse_bytes(v, &c->ctx_overhead))
		c->ctx_overhead_set = true;
}

/* ---- finding the real libraries --------------------------------------- */

void *(*gs__real_dlsym_fn)(void *, const char *);

void *(*gs__load_real_dlsym(void))(void *, const char *)
{
	void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");

	if (p == NULL)
		p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	__atomic_store_n(&gs__real_dlsym_fn, (void *(*)(void *, const char *))p,
	                 __ATOMIC_RELEASE);
	return (void *(*)(void *, const char *))p;
}

void *gs__rdlsym(void *h, const char *name)
{
	void *(*rd)(void *, const char *) =
	    __atomic_load_n(&gs__real_dlsym_fn, __ATOMIC_ACQUIRE);

	if (rd == NULL)
		rd = gs__load_real_dlsym();
	return rd ? rd(h, name) : NULL;
}

/* Whether `p` lies in this shared object. */
static bool is_ours(void *p)
{
	Dl_info a, b;

	if (p == NULL || dladdr(p, &a) == 0 ||
	    dladdr((void *)&is_ours, &b) == 0)
		return false;
	return a.dli_fbase == b.dli_fbase;
}

static void *open_real(const char *configured, const char *soname,
                       const char *probe)
{
	const char *why;
	void *h;

	/* "shim.dlopen" (tests): as if the library were not there. */
	if (gs_fault_hit("shim.dlopen"))
		h = NULL;
	else if (configured[0] != '\0')
		h = dlopen(configured, RTLD_NOW | RTLD_LOCAL);
	else
		h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		why = dlerror();
		gs_warn(GS_SHIM_TAG, "cannot load %s: %s",
		        configured[0] ? configured : soname,
		        why ? why : "fault injected");
		return NULL;
	}
	if (is_ours(gs__rdlsym(h, probe))) {
		gs_error(GS_SHIM_TAG,
		         "%s resolves to libgpuslice itself; set GPUSLICE_REAL_LIBCUDA/GPUSLICE_REAL_LIBNVML to the real library",
		         configured[0] ? configured : soname);
		(void)dlclose(h);
		return NULL;
	}
	return h;
}

/*
 * Stands in for an entry point the real driver lacks, so that a wrapper
 * never calls NULL: the caller gets the driver's "not found" answer. (It
 * is called through the entry point's own type; on the platform ABI the
 * extra arguments are ignored.)
 */
CUresult gs__missing_entry(void)
{
	return CUDA_ERROR_NOT_FOUND;
}

static bool load_cuda(void)
{
	void *h = open_real(gs__g.cfg.real_libcuda, "libcuda.so.1", "cuInit");

	if (h == NULL)
		return false;
	gs__g.cuda = h;
#define GS__REAL(sym, base, ver, pt)                                           \
	gs__real.sym = (__typeof__(gs__real.sym))gs__rdlsym(h, #sym);              \
	if (gs__real.sym == NULL)                                              \
		gs__real.sym = (__typeof__(gs__real.sym))(void *)&gs__missing_entry;
	GS_CU_HOOKS(GS__REAL)
#undef GS__REAL
#define GS__LOAD(f) gs__real.f = (__typeof__(gs__real.f))gs__rdlsym(h, #f)
	GS__LOAD(cuCtxGetCurrent);
	GS__LOAD(cuCtxGetDevice);
	GS__LOAD(cuDeviceGetUuid);
	GS__LOAD(cuDeviceGetUuid_v2);
	GS__LOAD(cuDevicePrimaryCtxGetState);
	GS__LOAD(cuStreamGetCtx);
	GS__LOAD(cuStreamIsCapturing);
	GS__LOAD(cuStreamIsCapturing_ptsz);
	GS__LOAD(cuEventCreate);
	GS__LOAD(cuEventDestroy_v2);
	GS__LOAD(cuEventElapsedTime);
	GS__LOAD(cuEventElapsedTime_v2);
	GS__LOAD(cuArrayGetMemoryRequirements);
	GS__LOAD(cuMipmappedArrayGetMemoryRequirements);
#undef GS__LOAD
	return true;
}

bool gs__nvml_ready(void)
{
	bool ok;

	(void)pthread_mutex_lock(&nvml_mu);
	if (!gs__g.nvml_tried) {
		void *h;

		gs__g.nvml_tried = true;
		gs__tls_in_init++;
		h = open_real(gs__g.cfg.real_libnvml, "libnvidia-ml.so.1",
		              "nvmlInit_v2");
		gs__tls_in_init--;
		if (h != NULL) {
			gs__rnvml.nvmlInit_v2 = gs__rdlsym(h, "nvmlInit_v2");
			gs__rnvml.nvmlDeviceGetUUID =
			    gs__rdlsym(h, "nvmlDeviceGetUUID");
			gs__rnvml.nvmlDeviceGetHandleByUUID =
			    gs__rdlsym(h, "nvmlDeviceGetHandleByUUID");
			gs__rnvml.nvmlDeviceGetComputeRunningProcesses_v3 =
			    gs__rdlsym(h,
			           "nvmlDeviceGetComputeRunningProcesses_v3");
#define GS__NREAL(sym)                                                         \
	gs__rnvml.sym = (__typeof__(gs__rnvml.sym))gs__rdlsym(h, #sym);
			GS_NVML_HOOKS(GS__NREAL)
#undef GS__NREAL
			if (gs__rnvml.nvmlInit_v2 != NULL &&
			    gs__rnvml.nvmlInit_v2() == NVML_SUCCESS)
				gs__g.nvml = h;
		}
	}
	ok = gs__g.nvml != NULL;
	(void)pthread_mutex_unlock(&nvml_mu);
	return ok;
}

/* ---- attaching -------------------------------------------------------- */

/* Reads the slice's limits when they changed (gs__g.mu held). */
static void limits_refresh_locked(void)
{
	uint64_t e;
	struct gs_slice_limits lim;
	int32_t slot;

	if (gs__g.region == NULL || !gs__g.attached)
		return;
	e = gs_region_limits_epoch(gs__g.region);
	if (e == gs__g.lim_epoch && gs__g.lim_epoch != 0)
		return;
	if (gs_region_proc_limits(gs__g.region, &gs__g.proc, &lim, &slot) ==
	    GS_OK) {
		struct gs_sched_cfg c = {.live = true,
		                         .pct = lim.compute_pct,
		                         .prio = lim.priority,
		                         .weight = lim.weight,
		                         .mode = lim.mode};

		gs__g.lim = lim;
		gs__g.slow = gs_sched_cfg_enforcing(&c) ||
		             (lim.flags & GS_SLICE_MEASURE) != 0;
	} else {
		/* The slice was deleted: keep the last limits we knew. */
		gs_debug(GS_SHIM_TAG, "slice=%s gone; keeping its last limits",
		         gs__g.cfg.slice);
	}
	gs__g.lim_epoch = e ? e : 1;
}

void gs__limits_refresh(void)
{
	(void)pthread_mutex_lock(&gs__g.mu);
	limits_refresh_locked();
	(void)pthread_mutex_unlock(&gs__g.mu);
}

uint64_t gs__mem_limit(void)
{
	uint64_t lim;

	(void)pthread_mutex_lock(&gs__g.mu);
	limits_refresh_locked();
	lim = gs__g.lim.mem_limit;
	(void)pthread_mutex_unlock(&gs__g.mu);
	return lim;
}

/* Attaches the calling process (gs__g.mu held). */
/* Fails closed: no GPU work without the slice this process was sent to. */
static void refuse(const char *what, const char *why)
{
	__atomic_store_n(&gs__g.refused, CUDA_ERROR_NOT_PERMITTED,
	                 __ATOMIC_RELEASE);
	gs_error(GS_SHIM_TAG,
	         "slice=%s pid=%d %s: %s; refusing GPU work (CUDA_ERROR_NOT_PERMITTED), never running without its limits",
	         gs__g.cfg.slice, (int)getpid(), what, why);
}

CUresult gs__not_ready(void)
{
	CUresult r = __atomic_load_n(&gs__g.refused, __ATOMIC_ACQUIRE);

	return r != CUDA_SUCCESS ? r : CUDA_ERROR_NOT_INITIALIZED;
}

static void attach_locked(void)
{
	struct gs_slice_ref ref;
	struct gs_errbuf eb = {0};
	gs_err err;

	if (gs__g.region == NULL)
		return;
	/* "shim.region_open" (tests): its slice's books cannot be mapped. */
	if (gs_fault_hit("shim.region_open"))
		err = gs_fail(&eb, GS_ERR_IO,
		              "cannot map its slice's books (fault injected)");
	else if ((err = gs_region_slice_find(gs__g.region, gs__g.cfg.slice,
	                                     &ref)) == GS_OK)
		err = gs_region_proc_attach(gs__g.region, &ref, 0, &gs__g.proc,
		                            &eb);
	else
		(void)gs_fail(&eb, err, "no slice of that name in the region %s",
		              gs_region_dir(gs__g.region));
	attached_pid = getpid(); /* tried by this process */
	if (err != GS_OK) {
		refuse("cannot attach", gs_errbuf_msg(&eb, err));
		return;
	}
	gs__g.attached = true;
	gs__g.slice = ref.slot;
	gs__g.slice_gen = ref.generation;
	gs__g.lim_epoch = 0;
	limits_refresh_locked();
	gs_info(GS_SHIM_TAG,
	        "slice=%s pid=%d attached: memory=%llu compute=%u%% priority=%u weight=%u",
	        gs__g.cfg.slice, (int)attached_pid,
	        (unsigned long long)gs__g.lim.mem_limit, gs__g.lim.compute_pct,
	        gs__g.lim.priority, gs__g.lim.weight);
}

/* Whether the process just attached to a slice that is parked (gs__g.mu
 * held): its GPU calls then wait until the slice resumes (swap.c's
 * gs__on_join_parked's handler, run once gs__g.mu is released). */
static bool joined_parked_locked(void)
{
	return gs__g.attached && (gs__g.lim.flags & GS_SLICE_IS_PARKED) != 0;
}

void gs__fast_update(void)
{
	const uint32_t *gate = &gs__gate_slow;
	uint32_t mask = GS_GATE_ALWAYS;
	int d = __atomic_load_n(&gs__g.single_dev, __ATOMIC_RELAXED);

	if (!gs__g.attached || gs__g.region == NULL) {
		gate = &gs__gate_open;
	} else if (__atomic_load_n(&gs__g.swap_stopped, __ATOMIC_ACQUIRE)) {
		/* every launch waits in its slow path (swap.c) */
	} else if (!gs__g.slow && d >= 0) {
		gate = &gs_region_sched_dev(gs__g.region, d)->gate;
		mask = GS_GATE_ENFORCED;
	}
	__atomic_store_n(&gs__g.fast_mask, mask, __ATOMIC_RELAXED);
	__atomic_store_n(&gs__g.fast_gate, gate, __ATOMIC_RELEASE);
}

bool gs__enforcing(void)
{
	bool on, parked = false;

	if (GS_LIKELY(gs__g.attached) || gs__g.region == NULL)
		return gs__g.attached;
	(void)pthread_mutex_lock(&gs__g.mu);
	if (!gs__g.attached && gs__g.region != NULL &&
	    attached_pid != getpid()) {
		attach_locked();
		parked = joined_parked_locked();
	}
	on = gs__g.attached;
	(void)pthread_mutex_unlock(&gs__g.mu);
	if (on)
		gs__fast_update();
	if (parked && join_parked_fn != NULL)
		join_parked_fn();
	return on;
}

void gs__on_exit(void (*fn)(void))
{
	if (n_on_exit < GS__FORK_CHILD_MAX)
		on_exit_fn[n_on_exit++] = fn;
}

void gs__on_join_parked(void (*fn)(void))
{
	join_parked_fn = fn;
}

void gs__on_fork_child(void (*fn)(void))
{
	if (n_fork_child < GS__FORK_CHILD_MAX)
		fork_child[n_fork_child++] = fn;
}

static void atfork_child(void)
{
	(void)pthread_mutex_init(&gs__g.mu, NULL);
	(void)pthread_mutex_init(&nvml_mu, NULL);
	/* The parent's slot is the parent's; ours comes on first use. */
	gs__g.attached = false;
	attached_pid = 0;
	gs__g.fast_gate = &gs__gate_slow;
	gs__g.fast_mask = GS_GATE_ALWAYS;
	gs__g.single_dev = -1;
	for (int i = 0; i < GS_SHIM_MAX_ORDINALS; i++) {
		gs__g.ord[i].primary_charged = false;
		gs__g.ord[i].primary_charge = 0;
	}
	for (int i = 0; i < n_fork_child; i++)
		fork_child[i]();
}

__attribute__((destructor)) static void shim_fini(void)
{
	int saved = errno;

	if (gs__g.attached && gs__g.region != NULL && attached_pid == getpid()) {
		for (int i = 0; i < n_on_exit; i++)
			on_exit_fn[i]();
		(void)gs_region_proc_detach(gs__g.region, &gs__g.proc);
	}
	errno = saved;
}

static void init(void)
{
	int saved = errno;
	struct gs_errbuf eb = {0};
	gs_err err;

	gs__tls_in_init++;
	gs_log_silence();
	config_read(&gs__g.cfg);
	if (gs__g.cfg.log_path[0] != '\0' &&
	    gs_log_open(gs__g.cfg.log_path) == 0)
		gs_log_set_level((enum gs_log_level)gs__g.cfg.log_level);
	for (int i = 0; i < GS_SHIM_MAX_ORDINALS; i++)
		gs__g.ord[i].slot = -1;
	init_ok = load_cuda();
	if (gs__g.cfg.slice[0] != '\0' && !init_ok) {
		/* Nothing could be enforced: refused, not run around. */
		refuse("cannot load the real driver",
		       gs__g.cfg.real_libcuda[0] ? gs__g.cfg.real_libcuda
		                                 : "libcuda.so.1");
	} else if (gs__g.cfg.slice[0] != '\0') {
		/* "shim.region_open" (tests): the region cannot be opened. */
		err = gs_fault_hit("shim.region_open")
		          ? gs_fail(&eb, GS_ERR_IO, "fault injected")
		          : gs_region_open(gs__g.cfg.run_dir, GS_REGION_TENANT,
		                           &gs__g.region, &eb);
		if (err != GS_OK) {
			char why[GS_REGION_DIR_MAX + 320];

			(void)snprintf(why, sizeof(why), "region %s: %s",
			               gs__g.cfg.run_dir,
			               gs_errbuf_msg(&eb, err));
			refuse("cannot open its region", why);
			gs__g.region = NULL;
		} else {
			bool parked;

			(void)pthread_mutex_lock(&gs__g.mu);
			attach_locked();
			parked = joined_parked_locked();
			(void)pthread_mutex_unlock(&gs__g.mu);
			if (parked && join_parked_fn != NULL)
				join_parked_fn();
		}
	}
	(void)pthread_atfork(NULL, NULL, atfork_child);
	if (init_ok)
		gs__fast_update();
	__atomic_store_n(&init_done, true, __ATOMIC_RELEASE);
	gs__tls_in_init--;
	errno = saved;
}

void gs__init(void)
{
	if (!__atomic_load_n(&init_done, __ATOMIC_ACQUIRE))
		(void)pthread_once(&init_once, init);
}

bool gs__ready(void)
{
	if (GS_LIKELY(__atomic_load_n(&init_ok, __ATOMIC_ACQUIRE)) &&
	    GS_LIKELY(__atomic_load_n(&gs__g.refused, __ATOMIC_RELAXED) ==
	              CUDA_SUCCESS))
		return true;
	gs__init();
	return init_ok &&
	       __atomic_load_n(&gs__g.refused, __ATOMIC_ACQUIRE) == CUDA_SUCCESS;
}

/* Whether the real driver is loaded (refused or not). */
bool gs__driver_loaded(void)
{
	gs__init();
	return __atomic_load_n(&init_ok, __ATOMIC_ACQUIRE);
}

CUresult cuInit(unsigned int flags)
{
	if (!gs__ready())
		return gs__not_ready();
	return gs__real.cuInit(flags);
}
