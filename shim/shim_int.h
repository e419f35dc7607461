/*
 * shim_int.h - what the modules of libgpuslice.so share: the process-wide
 * state (struct gs__shim, one instance, gs__g), the real driver's entry
 * points (struct gs__real, gs__real), configuration read once from the
 * environment, and the helpers each module offers the others (gs__
 * prefix, hidden).
 *
 * Modules:
 *   shim.c    configuration, finding the real driver and NVML, dlsym(),
 *             cuGetProcAddress(), attaching to the slice, fork and exit
 *   mem.c     every allocation path, the memory views, context overhead
 *   dev.c     CUDA ordinals as the region's GPU slots
 *   launch.c  launches, measurement with events, the compute scheduler
 *   sync.c    the current context's hooks, synchronising calls
 *   charge.c  what a batch of launches is charged (pure)
 *   nvml.c    NVML memory views
 *   ptrmap.c  the table of this process's tracked allocations
 *   swap.c    movable allocations of a slice that may swap; swap-out/in
 *   graphmem.c what graph memory nodes allocate when graphs run, and the
 *             graph allocator's cache, on the books
 * and, compiled in from region/ (also the static library gs_region), the
 * shared region, used only through gs/region.h and gs/region_launch.h,
 * and the scheduler's pure decisions (gs/region_sched.h).
 *
 * Threading: gs__g is written during init (under pthread_once) and by the
 * fork child handler; afterwards its fields are read-only except those
 * marked. Each module guards its own tables with its own mutex.
 */
#ifndef GS_SHIM_INT_H
#define GS_SHIM_INT_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

/* Per-thread variants the driver exports (CUDA 13 cudaTypedefs.h:
 * PFN_cuStreamBeginCapture_v10010_ptsz,
 * PFN_cuStreamBeginCaptureToGraph_v12030_ptsz)
 * that cuda.h does not declare. */
CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream hStream,
                                              CUstreamCaptureMode mode);
CUresult CUDAAPI cuStreamBeginCaptureToGraph_ptsz(
    CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
    const CUgraphEdgeData *dependencyData, size_t numDependencies,
    CUstreamCaptureMode mode);

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gs/log.h"
#include "gs/nvml.h"
#include "gs/region.h"
#include "gs/region_launch.h"
#include "hooks.h"

#define GS_EXPORT      __attribute__((visibility("default")))
#define GS_LIKELY(x)   __builtin_expect(!!(x), 1)
#define GS_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define GS_SHIM_TAG "shim"
/* CUDA device ordinals the shim keeps per-device state for. */
#define GS_SHIM_MAX_ORDINALS 64

/* Everything the shim reads from the environment, read once at init. */
struct gs__config {
	char run_dir[GS_REGION_DIR_MAX]; /* GPUSLICE_RUN_DIR (or default) */
	char slice[GS_REGION_NAME_MAX];  /* GPUSLICE_SLICE; "" = none */
	char log_path[256];              /* GPUSLICE_LOG=[level:]path */
	int log_level;
	char real_libcuda[256]; /* GPUSLICE_REAL_LIBCUDA */
	char real_libnvml[256]; /* GPUSLICE_REAL_LIBNVML */
	uint64_t ctx_overhead;  /* GPUSLICE_CTX_OVERHEAD bytes, if set */
	bool ctx_overhead_set;
};

/* The real entry points: every hook, plus what the shim calls itself. */
struct gs__real {
#define GS__REAL_FIELD(sym, base, ver, pt) __typeof__(&sym) sym;
	GS_CU_HOOKS(GS__REAL_FIELD)
#undef GS__REAL_FIELD
	__typeof__(&cuCtxGetCurrent) cuCtxGetCurrent;
	__typeof__(&cuCtxGetDevice) cuCtxGetDevice;
	__typeof__(&cuDeviceGetUuid) cuDeviceGetUuid;
	__typeof__(&cuDeviceGetUuid_v2) cuDeviceGetUuid_v2;
	__typeof__(&cuDevicePrimaryCtxGetState) cuDevicePrimaryCtxGetState;
	__typeof__(&cuStreamGetCtx) cuStreamGetCtx;
	__typeof__(&cuStreamIsCapturing) cuStreamIsCapturing;
	__typeof__(&cuStreamIsCapturing_ptsz) cuStreamIsCapturing_ptsz;
	__typeof__(&cuEventCreate) cuEventCreate;
	__typeof__(&cuEventDestroy_v2) cuEventDestroy_v2;
	__typeof__(&cuEventElapsedTime) cuEventElapsedTime;
	__typeof__(&cuEventElapsedTime_v2) cuEventElapsedTime_v2;
	__typeof__(&cuArrayGetMemoryRequirements) cuArrayGetMemoryRequirements;
	__typeof__(&cuMipmappedArrayGetMemoryRequirements)
	    cuMipmappedArrayGetMemoryRequirements;
};

/* The real NVML entry points (loaded on first use). */
struct gs__real_nvml {
	nvmlReturn_t (*nvmlInit_v2)(void);
	nvmlReturn_t (*nvmlDeviceGetUUID)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*nvmlDeviceGetHandleByUUID)(const char *, nvmlDevice_t *);
	nvmlReturn_t (*nvmlDeviceGetComputeRunningProcesses_v3)(
	    nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
#define GS__NVML_FIELD(sym) __typeof__(&sym) sym;
	GS_NVML_HOOKS(GS__NVML_FIELD)
#undef GS__NVML_FIELD
};

/* Per CUDA device ordinal: its region slot and what was learned of it. */
struct gs__ordinal {
	int slot;             /* region device slot; -1 unknown, -2 failed */
	bool foreign;         /* a daemon's region has no such GPU (yet) */
	uint64_t total;       /* physical memory */
	bool primary_charged; /* we charged the primary context's overhead */
	uint64_t primary_charge;
};

struct gs__shim {
	struct gs__config cfg;
	void *cuda; /* dlopen handle of the real driver */
	void *nvml; /* of real NVML, or NULL */
	bool nvml_tried;
	struct gs_region *region; /* NULL: no enforcement */
	struct gs_proc_ref proc;
	bool attached; /* proc is ours (false after fork) */
	int32_t slice; /* our slice slot */
	uint64_t slice_gen;
	struct gs_slice_limits lim; /* last read; refreshed on epoch change */
	uint64_t lim_epoch;
	bool slow; /* every launch takes the slow path
	              (scheduler or measurement) */
	/* launch fast path: launch without the scheduler while
	 * (*fast_gate & fast_mask) == 0 */
	const uint32_t *fast_gate;
	uint32_t fast_mask;
	int single_dev; /* the one device slot in use, or -1 */
	/* CUDA_ERROR_NOT_PERMITTED when a slice was asked for (GPUSLICE_SLICE)
	 * and this process could not join it: every GPU call is refused
	 * rather than run without limits. CUDA_SUCCESS otherwise. */
	CUresult refused;
	/* Stopped for a swap: written by swap.c (under its lock), read
	 * without one by the gate (gs__fast_update, gs__swap_wait). */
	bool swap_stopped;
	struct gs__ordinal ord[GS_SHIM_MAX_ORDINALS];
	pthread_mutex_t mu; /* guards ord[], single_dev, lim */
};

extern struct gs__shim gs__g;
/* Gate words for processes without a device gate: always slow, never. */
extern const uint32_t gs__gate_slow;
extern const uint32_t gs__gate_open;
extern struct gs__real gs__real;
extern struct gs__real_nvml gs__rnvml;

/* The exported wrappers, declared with the real types (a mismatch is a
 * compile error). */
#define GS__DECL(sym, base, ver, pt) GS_EXPORT __typeof__(sym) sym;
GS_CU_HOOKS(GS__DECL)
#undef GS__DECL
#define GS__NDECL(sym) GS_EXPORT __typeof__(sym) sym;
GS_NVML_HOOKS(GS__NDECL)
#undef GS__NDECL
GS_EXPORT void *dlsym(void *handle, const char *name);

/* ---- shim.c ---- */

/* Runs initialisation once (config, region, real driver). */
void gs__init(void);
/* gs__init(), then whether the real driver is usable and this process
 * may use it (not refused: see gs__g.refused). */
bool gs__ready(void);
/* What a hook returns when !gs__ready(): gs__g.refused when set, else
 * CUDA_ERROR_NOT_INITIALIZED. */
CUresult gs__not_ready(void);
/* Whether this process is attached to a slice (re-attaching after fork). */
bool gs__enforcing(void);
/* Loads real NVML once; true when usable. */
bool gs__nvml_ready(void);
/* gs__init(), then whether the real driver is loaded (refused or not). */
bool gs__driver_loaded(void);
/* The real dlsym (glibc's, found with dlvsym) on a library handle. */
void *gs__rdlsym(void *h, const char *name);
/* Finds glibc's dlsym and publishes it in gs__real_dlsym_fn. */
void *(*gs__load_real_dlsym(void))(void *, const char *);
extern void *(*gs__real_dlsym_fn)(void *, const char *);
/* Non-zero while this thread runs the shim's own initialisation: its
 * dlsym calls go straight to the real one. */
extern __thread int gs__tls_in_init;
/* Stands in for an entry point the real driver lacks (a "not found"). */
CUresult gs__missing_entry(void);
/* Refreshes gs__g.lim and gs__g.slow when the limits changed. */
void gs__limits_refresh(void);
/* Refreshes gs__g.lim when the limits changed; returns the cap or 0. */
uint64_t gs__mem_limit(void);
/* CLOCK_MONOTONIC ns. */
uint64_t gs__now(void);
/* Recomputes gs__g.fast_gate / fast_mask after a change. */
void gs__fast_update(void);
/* Adds a child-side fork handler, run after shim.c's own in the order
 * added (at most four; called from the modules' constructors, before any
 * thread or fork). */
void gs__on_fork_child(void (*fn)(void));
/* Adds an exit handler, run by shim.c's destructor before it detaches an
 * attached process (at most four, added like gs__on_fork_child's). */
void gs__on_exit(void (*fn)(void));
/* Sets the handler run when the process attaches to a slice that is
 * parked (GS_SLICE_IS_PARKED): swap.c's, which closes the gate until the
 * slice resumes (called from its constructor). */
void gs__on_join_parked(void (*fn)(void));

/* ---- dev.c: devices ---- */

/*
 * The region device slot of CUDA ordinal `ord` (registering it), or -1.
 * OUT: *total (physical memory), may be NULL.
 */
int gs__dev_slot(CUdevice ord, uint64_t *total);
/*
 * True when this process of a slice must not use GPU `ord`: a daemon's
 * region has no such GPU (waits a moment for the daemon to register it).
 */
bool gs__dev_refused(CUdevice ord);
/* The region device slot of the current context's device, or -1; the
 * current context (NULL: none). Both cached per thread (see below). */
int gs__dev_current(CUdevice *ord);
CUcontext gs__dev_current_ctx(void);
/* The calling thread's current context changed; some context went away
 * (every thread's cache is dropped). */
void gs__dev_ctx_changed(void);
void gs__dev_ctx_gone(void);
/* The region slot of an NVML device handle, or -1. */
int gs__dev_from_uuid(const char *uuid);

/* ---- launch.c ---- */

/* Measures completed launches; `ctx` NULL = all contexts. */
void gs__launch_harvest(CUcontext ctx, bool wait_all);
/* Closes the calling thread's open batch of launches (before the host
 * waits: its end event is then among what the wait covers). */
void gs__launch_close_mine(void);
/* Before a synchronising call: closes the calling thread's measured
 * batch (an unmeasured one stays open while young) and settles what the
 * previous sync left (gs__launch_after_sync). */
void gs__launch_sync_begin(void);
/* Forgets in-flight launches and pooled events of a context going away
 * (and every thread's cached current context). */
void gs__launch_ctx_gone(CUcontext ctx);
/* The calling thread's current context is about to change to `next`
 * (NULL: unknown): its open batch is closed while its context, whose
 * stream its end event goes on, is still current. */
void gs__launch_ctx_leaving(CUcontext next);
/* The calling thread's current context changed to `ctx` (NULL: unknown,
 * asked of the driver at the next launch that needs it). */
void gs__launch_ctx_current(CUcontext ctx);
/* After a synchronising call returned `r`: measures what completed, or
 * leaves an MPS slice's short work to the next sync (launch.c's defer_ok). */
void gs__launch_after_sync(CUresult r);

/* ---- charge.c: what a batch of launches is charged ---- */

/* A closed batch: its launches and the host times around its records. */
struct gs__span_rec {
	uint32_t n;      /* launches in it */
	uint64_t est;    /* their estimated GPU time */
	bool probe;      /* one launch, its end recorded right after it */
	bool idle_start; /* a batch of one: our work had drained before it */
	bool known;      /* the estimate was learned when it opened */
	uint64_t lead;   /* host time of the start record's call */
	uint64_t issue;  /* from after the start record to before the end's */
	uint64_t window; /* from before the start record to after the end's */
	uint64_t delay;  /* a batch of one: from after the start record to
	                    its launch's call */
	uint64_t call;   /* a batch of one: its launch's call (delay +
	                    call <= issue) */
	bool shared;     /* another slice's work ran on the GPU in its span
	                    (a pipelined turn change) */
};

/* Whether launches of a slice with limits `l` are timed and charged
 * (else only counted). */
bool gs__launch_measured(const struct gs_slice_limits *l);

/* The quickest probe host times seen on one GPU (charge.c keeps them). */
struct gs__probe_min {
	uint64_t window; /* a probe's whole window */
	uint64_t calls;  /* its start record's call and its launch's call */
};

/* The GPU time to charge for batch `f` whose events are `span` apart;
 * *min: the quickest probe's host times on its GPU (updated). OUT:
 * *lesson, whether the result teaches the per-launch estimate. */
uint64_t gs__charge_of(const struct gs__span_rec *f, uint64_t span,
                       struct gs__probe_min *min, bool *lesson);

/* ---- mem.c ---- */

/* Releases the books of allocations that died with context `ctx`. */
void gs__mem_ctx_gone(CUcontext ctx);

/* ---- swap.c: movable memory ---- */

/* Whether this process's plain allocations are movable (its slice has
 * GS_SLICE_SWAP and the driver has virtual memory management). */
bool gs__swap_backed(void);
/* Allocates `bytes` of movable memory in the current context. */
CUresult gs__swap_alloc(CUdeviceptr *dptr, size_t bytes);
/* Forgets (unmaps and releases) the movable memory of context `ctx`,
 * which went away with it. */
void gs__swap_ctx_gone(CUcontext ctx);
/* Frees `p` when it is movable memory (OUT: *r); false when not ours. */
bool gs__swap_free(CUdeviceptr p, CUresult *r);
/* Moves every chunk of the process to host memory, or back. OUT: *bytes
 * moved. */
CUresult gs__swap_out(uint64_t *bytes);
CUresult gs__swap_in(uint64_t *bytes);
void gs__swap_wait_slow(void);
/* swapneed.c (memory on demand, gs/region_swap.h): asks the daemon for
 * `bytes` more on region device `dev` and waits, bounded; true when it
 * made room (try again). */
bool gs__swap_need(int dev, uint64_t bytes);
/* Whether this process's slice is parked now (GS_SLICE_IS_PARKED in its
 * limits, read afresh; false when it is gone). */
bool gs__slice_parked(void);
/* A stopped process asks for its memory back (not waited on). */
void gs__swap_need_back(void);
/* Stamps this process's activity for the daemon (rate-limited). */
void gs__swap_active(void);
/* Tells the daemon this process holds movable memory (once). */
void gs__swap_movable(void);
/* The stop: a GPU call waits here while the process's memory is out
 * (gs__g.swap_stopped: from the start of a swap-out to the end of the
 * swap-in). */
static inline void gs__swap_wait(void)
{
	if (GS_UNLIKELY(__atomic_load_n(&gs__g.swap_stopped, __ATOMIC_ACQUIRE)))
		gs__swap_wait_slow();
}

/* ---- graphmem.c: graph memory ---- */

/* The number of tracked execs with memory nodes: while 0, a graph launch
 * needs no gs__gmem_launch. */
extern int gs__gmem_execs;
/* Launches exec `x` with `fn` (launch.c's path) after charging what its
 * memory nodes allocate: CUDA_ERROR_OUT_OF_MEMORY, without calling fn,
 * when that would take the slice past its cap. */
CUresult gs__gmem_launch(CUresult (*fn)(CUgraphExec, CUstream), CUgraphExec x,
                         CUstream s);
/* Whether stream `s` is capturing (its allocations are graph nodes,
 * charged when the graph runs). No driver call until the process has
 * begun a capture. */
bool gs__gmem_capturing(CUstream s, bool ptsz);
/* The program freed `p` outside a graph: if it is a live graph
 * allocation, its charge ends. */
void gs__gmem_freed(CUdeviceptr p);
/* An allocation over the cap on region device `dev`: gives back what the
 * graph allocator caches unused there; true when the books went down (the
 * caller tries again). */
bool gs__gmem_trim_cached(int dev);
/* Context `ctx` went away with its graph memory. */
void gs__gmem_ctx_gone(CUcontext ctx);

/* ---- ptrmap.c: this process's allocations ---- */

enum gs__alloc_kind {
	GS__ALLOC_PTR = 1,    /* CUdeviceptr (plain, pitch, managed, async) */
	GS__ALLOC_ASYNC = 2,  /* stream-ordered: survives its context */
	GS__ALLOC_VMM = 3,    /* CUmemGenericAllocationHandle */
	GS__ALLOC_ARRAY = 4,  /* CUarray */
	GS__ALLOC_MIPMAP = 5, /* CUmipmappedArray */
	GS__ALLOC_CTX = 6,    /* a context's overhead */
};

struct gs__alloc {
	uint64_t key;
	uint64_t bytes;
	CUcontext ctx;
	int32_t dev;
	uint8_t kind;
};

/* Records an allocation. False when out of host memory (not recorded). */
bool gs__ptrmap_put(const struct gs__alloc *a);
/* Removes and returns an allocation. OUT: *out. */
bool gs__ptrmap_take(uint8_t kind, uint64_t key, struct gs__alloc *out);
/*
 * Removes every allocation of `ctx` of the kinds a context's end frees,
 * calling fn on each.
 */
void gs__ptrmap_drain_ctx(CUcontext ctx,
                          void (*fn)(const struct gs__alloc *a, void *arg),
                          void *arg);
/* Forgets everything (fork child). */
void gs__ptrmap_reset(void);

#endif
