/*
 * cuda_int.h - private to the sim's CUDA driver (libcuda.so.1): the
 * process-wide driver state, the objects behind CUDA handles, and the
 * helpers the driver's modules share (gs__ prefix).
 *
 * Threading: one process-local mutex (gs__drv.mu) guards every object
 * here; each API entry takes it (gs__lock) and drops it only while it
 * sleeps waiting for the timeline. The node state's shared lock is taken
 * inside it, never the other way round.
 *
 * Handles: every CUcontext, CUstream, CUevent, ... is a pointer to one of
 * the structs below, registered in a handle table (handle.c) with its
 * type, so that a stale or made-up handle is answered with an error code
 * instead of being dereferenced.
 */
#ifndef GS_SIM_CUDA_INT_H
#define GS_SIM_CUDA_INT_H

#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gs_sim/state.h"

/* Driver version reported by cuDriverGetVersion and used by lookups. */
#define GS__DRIVER_VERSION 13000

/* Device memory each context holds for itself (the real driver's context
 * footprint: code, stacks, printf/heap buffers), charged at creation. */
#define GS__CTX_OVERHEAD (500ULL << 20)
/* Allocations are charged in multiples of this (cudaMalloc's alignment). */
#define GS__ALLOC_ALIGN 512ULL
/* Most bytes of one module __managed__ variable made before any context
 * (module globals are capped at this size by ptx.c too). */
#define GS__GLOBAL_MAX (256ULL << 20)
/* VMM granularity (cuMemGetAllocationGranularity). */
#define GS__VMM_GRANULARITY (2ULL << 20)
/* The sim writes gs_fill's values up to this many floats, and computes
 * gs_burn, gs_matmul and gs_infer_layer results on the host only up to
 * GS__COMPUTE_EFFECT_MAX multiply-adds: the launching thread pays for
 * it, and a workload's latency must stay the timeline's, not the host's. */
#define GS__DATA_EFFECT_MAX    (1ULL << 24)
#define GS__COMPUTE_EFFECT_MAX (1ULL << 16)
/* Most kernel parameter bytes a launch may carry (CUDA's limit is 32764). */
#define GS__MAX_PARAM_BYTES 32764
#define GS__MAX_PARAMS      256
#define GS__MAX_DEVICES     (GS_SIM_MAX_GPUS * GS_SIM_MAX_MIG)
#define GS__CTX_STACK       32

enum gs__htype {
	GS__H_NONE = 0,
	GS__H_CTX,
	GS__H_STREAM,
	GS__H_EVENT,
	GS__H_MODULE,
	GS__H_FUNC,
	GS__H_LIBRARY,
	GS__H_POOL,
	GS__H_GRAPH,
	GS__H_GRAPH_EXEC,
	GS__H_GRAPH_NODE,
	GS__H_ARRAY,
	GS__H_MIPMAP,
	GS__H_VMM,
};

/* One CUDA device as this process sees it (after CUDA_VISIBLE_DEVICES). */
struct gs__dev {
	uint32_t gpu;                   /* index in the state file */
	uint32_t engine;                /* 0 whole GPU, 1 + i MIG slot i */
	char uuid[GS_SIM_UUID_LEN];     /* "GPU-..." or "MIG-..." */
	char gpu_uuid[GS_SIM_UUID_LEN]; /* the physical GPU's */
	char name[GS_SIM_NAME_LEN + 64];
	uint32_t sm_count; /* what this process may use (MPS limit) */
	uint32_t engine_sms;
	uint64_t mem_total;
	uint32_t cc_major, cc_minor;
	bool mps_client;        /* MPS running there and our pipe dir matches */
	uint32_t mps_pct;       /* active thread % asked by our environment */
	bool mps_below;         /* client priority below normal (1) */
	uint64_t mps_mem_limit; /* CUDA_MPS_PINNED_DEVICE_MEM_LIMIT for it */
	/* our slot in the node state (shared by our contexts on it) */
	int slot; /* -1 when we hold none */
	uint64_t slot_gen;
	int n_ctx;
	uint64_t last_seq; /* ops pushed so far (== ring_tail we wrote) */
	/* primary context */
	struct gs__ctx *primary;
	unsigned int primary_flags;
	struct gs__pool *default_pool;
	struct gs__pool *cur_pool;
	/* the graph allocator's memory (graphmem.c): bytes of live graph
	 * allocations, bytes it holds from the device (charged), highs */
	uint64_t gmem_used, gmem_used_high, gmem_reserved, gmem_reserved_high;
};

struct gs__stream {
	struct gs__ctx *ctx;
	unsigned int flags;
	int priority;
	uint64_t last; /* ops through this stream: done when
	                  ring_head >= last */
	unsigned long long id;
	/* stream capture (capture.c): the capture it takes part in, and
	 * the nodes its next captured operation will depend on */
	struct gs__capture *capture; /* non-NULL while capturing */
	struct gs__node **deps;      /* owned, n_deps of cap_deps */
	int n_deps, cap_deps;
};

/* One stream capture (capture.c): its graph and the streams in it. */
struct gs__capture {
	struct gs__graph *graph; /* owned until the capture ends when
	                            own_graph (cuStreamBeginCapture) */
	bool own_graph;
	struct gs__stream *origin;
	CUstreamCaptureMode mode;
	unsigned long long id;
	CUresult invalid; /* CUDA_SUCCESS while active, else why it ended */
	int n_streams, cap_streams;
	struct gs__stream **streams; /* owned list; the streams are not */
	struct gs__capture *next;    /* capture.c's list of live ones */
};

/* One context-local storage entry (export.c): the runtime keeps its
 * per-context state here; `dtor` runs when the context is destroyed or
 * reset (before its resources go). */
struct gs__cls {
	void *key;
	void *value;
	void (*dtor)(CUcontext ctx, void *key, void *value);
};

struct gs__ctx {
	int dev;
	bool primary;
	/* A primary context's handle exists from its first lookup to the end
	 * of the process; `destroyed` says it is not retained (no slot, no
	 * memory charged, no streams: calls in it fail). */
	bool destroyed;
	bool tearing; /* its context-local destructors are running */
	struct gs__cls *cls; /* owned, n_cls of cap_cls used */
	int n_cls, cap_cls;
	unsigned int flags;
	int refs;        /* primary: retain count */
	CUresult sticky; /* set by a fault of this context */
	uint64_t last;   /* ops of all its streams */
	unsigned long long id;
	size_t limits[8]; /* CUlimit values */
	CUfunc_cache cache_config;
	struct gs__stream legacy;     /* the NULL / CU_STREAM_LEGACY stream */
	struct gs__stream per_thread; /* CU_STREAM_PER_THREAD */
};

struct gs__event {
	struct gs__ctx *ctx;
	unsigned int flags;
	bool recorded;
	bool timed;   /* end time known */
	uint64_t seq; /* marker op number + 1 */
	uint64_t time_ns;
	/* last recorded in a stream capture: its id and the nodes a stream
	 * that waits on it depends on (owned) */
	unsigned long long cap_id;
	struct gs__node **cap_deps;
	int n_cap_deps;
};

/* One kernel entry of a PTX image. */
struct gs__entry {
	char *name; /* owned; any length (mangled template names run long) */
	int n_params;
	uint32_t param_off[GS__MAX_PARAMS];
	uint32_t param_size[GS__MAX_PARAMS];
	uint32_t args_size;
	int ptx_version; /* .target sm_XX's XX (else ISA major*10+minor) */
	struct gs__kcost *kcost; /* cost of an unknown kernel (costmodel.h),
	                            owned; NULL when it could not be read */
	uint32_t max_threads; /* from .maxntid / .reqntid; 1024 without */
	uint32_t shared_bytes, local_bytes; /* static .shared / .local */
};

struct gs__module;
/* A CUfunction or CUkernel: one entry of a module or library. */
struct gs__func {
	struct gs__module *mod;
	const struct gs__entry *entry;
	int max_dyn_smem;
	int carveout;
	CUfunc_cache cache_config;
	bool nonportable_cluster; /* NON_PORTABLE_CLUSTER_SIZE_ALLOWED */
	int cluster_sched;        /* CLUSTER_SCHEDULING_POLICY_PREFERENCE */
	int req_cluster[3];       /* REQUIRED_CLUSTER_WIDTH/HEIGHT/DEPTH */
};

/* How a launch asked to run beyond its grid and block (cuLaunchKernelEx
 * attributes, cuLaunchCooperativeKernel). */
struct gs__launch_opts {
	bool cooperative;
	unsigned int cluster[3]; /* 0: no cluster asked for */
};

/* Where one module global lives in one context. */
struct gs__ginst {
	struct gs__ctx *ctx;
	unsigned long long ctx_id;
	uint64_t dptr;
};

/* A __device__ / __constant__ / __managed__ variable of a PTX image. */
struct gs__global {
	char *name; /* owned, any length */
	uint64_t size;
	uint8_t *init; /* size bytes of initial value, owned (NULL: zeros) */
	bool managed;
	int n_inst;
	struct gs__ginst *inst; /* one per context it was used in, owned */
};

/* A CUmodule (ctx != NULL) or a CUlibrary's image (ctx == NULL). */
struct gs__module {
	struct gs__ctx *ctx;
	bool library;
	int n_entries;
	struct gs__entry *entries;
	struct gs__func *funcs; /* one per entry */
	char *image;            /* our copy of the PTX text */
	int n_globals;
	struct gs__global *globals; /* owned; their memory is the sim's */
	struct gs__module *ctx_mod; /* a library's cuLibraryGetModule copy */
	struct gs__module *lib; /* that copy's library (its globals), or NULL */
	struct gs__xmod *exec;  /* the interpreter's reading (exec.h), owned */
};

struct gs__pool {
	int dev;
	bool is_default;
	uint64_t release_threshold;
	int reuse_follow, reuse_opportunistic, reuse_internal;
	uint64_t used, used_high, reserved_high;
	uint64_t max_size; /* CUmemPoolProps.maxSize; 0: the device's */
};

enum gs__akind {
	GS__A_DEVICE, /* cuMemAlloc & co, arrays are separate */
	GS__A_MANAGED,
	GS__A_HOST,       /* cuMemAllocHost / HostAlloc */
	GS__A_REGISTERED, /* cuMemHostRegister */
	GS__A_VMM_MAP,    /* a cuMemMap'ed range */
	GS__A_RESERVE,    /* a cuMemAddressReserve'd range (not accessible) */
	GS__A_GRAPH,      /* a graph allocation's address (graphmem.c):
	                     accessible only while `live` */
};

/* A live address range, sorted by base in gs__drv.allocs. */
struct gs__alloc {
	uint64_t base;
	uint64_t size;    /* as asked */
	uint64_t map_len; /* length of our mmap (0: not ours) */
	uint64_t charged; /* device bytes charged to the engine */
	enum gs__akind kind;
	bool backed; /* data is kept */
	int dev;
	struct gs__ctx *ctx;
	struct gs__pool *pool;
	struct gs__vmm *vmm; /* GS__A_VMM_MAP */
	unsigned int host_flags;
	const void *owner; /* a module global's (gs__mem_alloc), or NULL */
	uint64_t serial;   /* unique per allocation (advice.c's records) */
	/* GS__A_GRAPH (graphmem.c): between its allocation node's run and
	 * its free; the alloc node and exec copies holding the address */
	bool live;
	int graph_refs;
};

/* A CUmemGenericAllocationHandle. */
struct gs__vmm {
	int dev;
	uint64_t size;
	int fd; /* memfd holding the data */
	bool released;
	int maps;
	CUmemAllocationProp prop;
};

struct gs__array {
	int dev;
	struct gs__ctx *ctx;
	CUDA_ARRAY3D_DESCRIPTOR desc;
	uint64_t charged;
	unsigned int levels; /* mipmapped: number of levels */
};

/* A kernel launch with its parameters copied (graph nodes keep these). */
struct gs__launch {
	struct gs__func *func;
	unsigned int grid[3];
	unsigned int block[3];
	unsigned int smem;
	uint32_t args_size;
	uint8_t *args; /* args_size bytes, owned */
};

enum gs__nkind {
	GS__N_KERNEL,
	GS__N_EMPTY,
	GS__N_MEMSET,
	GS__N_MEMCPY,
	GS__N_HOST,
	GS__N_EVENT_RECORD,
	GS__N_EVENT_WAIT,
	GS__N_MEM_ALLOC,
	GS__N_MEM_FREE
};

/* A graph memory node's parameters (graphmem.c). */
struct gs__gmem_node {
	uint64_t dptr;   /* the allocation's address (alloc and free) */
	uint64_t serial; /* its address-table entry's serial */
	uint64_t size;
	int dev;
	CUmemPoolProps props;
	CUmemAccessDesc *access; /* owned by a graph's node (NULL in an
	                            exec copy), n_access of them */
	size_t n_access;
	bool freed_here;      /* alloc node: a free node in its own graph */
	bool freed_elsewhere; /* alloc node: a free node in another graph */
	bool held;            /* exec copy of an alloc node: holds the
	                         address (gs__gmem_exec_hold) */
};

/* A graph node; in a graph exec, a copy (deps then name exec nodes). */
struct gs__node {
	struct gs__graph *graph;
	enum gs__nkind kind;
	struct gs__launch launch; /* GS__N_KERNEL */
	void **argv;              /* kernel params as pointers into
	                             launch.args (get params), owned */
	CUDA_MEMSET_NODE_PARAMS memset;
	CUDA_MEMCPY3D memcpy;     /* GS__N_MEMCPY: as given */
	uint64_t cpy_dst, cpy_src, cpy_len; /* the 1D copy it makes */
	CUDA_HOST_NODE_PARAMS host;
	CUevent event; /* GS__N_EVENT_RECORD / _WAIT */
	struct gs__gmem_node gmem; /* GS__N_MEM_ALLOC / _FREE */
	struct gs__node **deps; /* the nodes it depends on (edges in),
	                           owned list, n_deps of cap_deps */
	int n_deps, cap_deps;
	const struct gs__node *orig; /* exec copy / clone: its source (an
	                                identity only, never read) */
	bool disabled;   /* exec copy: cuGraphNodeSetEnabled(.., 0) */
	int *dep_pos;    /* exec copy: its dependencies' positions in the
	                    exec, owned, orig_n_deps of them */
	int orig_n_deps;
};

struct gs__graph {
	int n_nodes, cap;
	struct gs__node **nodes; /* in the order added */
	int n_mem_nodes;         /* memory alloc/free nodes among them */
	struct gs__graph_exec *mem_exec; /* its one exec while it has
	                                    memory nodes (not owned) */
};

struct gs__graph_exec {
	int n;
	struct gs__node *nodes; /* copies, in an order that runs each node
	                           after its dependencies */
	unsigned long long flags;
	struct gs__graph *mem_graph; /* the graph with memory nodes it came
	                                from, while both live (not owned) */
};

struct gs__drv {
	pthread_mutex_t mu;
	bool initialized;
	bool forked; /* we are a fork()ed child: no CUDA */
	CUresult init_result;
	int32_t pid;
	uint64_t start_time;
	struct gs_sim_map *map;
	struct gs_sim_state *st;
	int n_dev;
	struct gs__dev dev[GS__MAX_DEVICES];
	/* allocations sorted by base */
	struct gs__alloc *allocs;
	int n_allocs, cap_allocs;
	unsigned long long next_id;
	char comm[32];
	char dir[GS_SIM_PATH_LEN + 32]; /* the node state's directory */
};

extern struct gs__drv gs__drv;

/* ---- common (drv.c) ---- */
/*
 * Appends the driver's kernel-log line for an Xid of this process on GPU
 * `gpu` to <dir>/kmsg, in the real driver's format ("NVRM: Xid
 * (PCI:0000:BB:00): N, pid=P, name=C, ..."): a real node's daemon reads
 * /dev/kmsg to learn whose work faulted, the sim's reads this file.
 */
void gs__kmsg_xid(uint32_t gpu, uint32_t xid);
void gs__lock(void);
void gs__unlock(void);
/* Takes gs__drv.mu and checks cuInit ran (CUDA_ERROR_NOT_INITIALIZED). On
 * success the lock is held; on failure it is not. */
CUresult gs__enter(void);
/* A device by ordinal, or NULL. */
struct gs__dev *gs__dev_get(CUdevice d);

/* ---- the thread's current contexts (current.c) ---- */
/* Current context of this thread (validated), or NULL. Lock held. */
struct gs__ctx *gs__ctx_current(void);
/* The context a call works on: current, with its sticky error. OUT: *ctx.
 * CUDA_ERROR_INVALID_CONTEXT when none. Lock held. */
CUresult gs__ctx_get(struct gs__ctx **ctx);
/* The sticky error a context has (its own fault, or its MPS server's). */
CUresult gs__ctx_error(struct gs__ctx *ctx);
/* The device's primary context handle, made (unretained, costing no
 * memory) on first use; it stays valid across release and reset. NULL
 * only when out of host memory or dev is invalid. Lock held. */
struct gs__ctx *gs__primary_get(int dev);
/* The top of this thread's context stack, even an unretained primary
 * context; NULL when none. Lock held. */
struct gs__ctx *gs__ctx_top(void);
/* Makes c current on this thread (pushes it). */
void gs__ctx_push(struct gs__ctx *c);
/* Clears a context being freed from this thread's stack, and drops the
 * holes that leaves on top. */
void gs__ctx_unstack(const struct gs__ctx *ctx);
void gs__ctx_stack_trim(void);

/* ---- handles (handle.c) ---- */
bool gs__h_add(const void *p, enum gs__htype t);
bool gs__h_is(const void *p, enum gs__htype t);
void gs__h_del(const void *p);
/* Calls fn for every live handle of type t (safe to delete inside). */
void gs__h_each(enum gs__htype t, void (*fn)(void *p, void *arg), void *arg);

/* ---- shared state (drv.c) ---- */
/* Takes the shared lock and advances our engine to now. NULL on failure
 * (lock timed out), with *err set. */
struct gs_sim_state *gs__state_lock(struct gs__dev *d, CUresult *err);
void gs__state_unlock(void);
/* Shared lock held: our slot on d, or NULL when it was taken from us
 * (reset, reaped). */
struct gs_sim_proc *gs__slot(struct gs__dev *d);
/* Shared + local locks held: reads the end times of completed markers. */
void gs__harvest(struct gs__dev *d, struct gs_sim_proc *p);

/* ---- contexts: create and tear down (ctx.c) ---- */
CUresult gs__ctx_create(int dev, unsigned int flags, bool primary,
                        struct gs__ctx **out);
void gs__ctx_destroy(struct gs__ctx *ctx);

/* ---- export tables (export.c) ---- */
/* Runs and drops ctx's context-local storage destructors. Lock held on
 * entry and on return; dropped while each destructor runs (they call the
 * driver), so ctx must not be freed meanwhile (ctx->tearing is set). */
void gs__cls_flush(struct gs__ctx *ctx);
/* The identity the integrity answer covers for one device: the GPU's (v1)
 * UUID and PCI domain, bus and device (drv.c). Lock held. */
void gs__dev_identity(const struct gs__dev *d, CUuuid *uuid, int pci[3]);

/* ---- the timeline (timeline.c) ---- */
/* Resolves a CUstream for a call in `ctx` (NULL ctx: the stream's own).
 * per_thread: the NULL stream means the per-thread stream. */
CUresult gs__stream_get(CUstream s, bool per_thread, struct gs__ctx **ctx,
                        struct gs__stream **out);
/* Queues an op on d's slot; OUT: *seq (ring_tail after it). */
CUresult gs__push(struct gs__ctx *ctx, uint64_t work, uint32_t sms,
                  uint32_t flags, uint64_t tag, uint64_t *seq);
/* Waits until ring_head >= target on ctx's device. Local lock held
 * (dropped while sleeping). */
CUresult gs__wait(struct gs__ctx *ctx, uint64_t target);
/* Whether op count `target` is done (advancing the timeline). */
CUresult gs__done(struct gs__ctx *ctx, uint64_t target, bool *done);
/* The op count a stream is done at: the legacy stream waits for all of
 * its context's work. */
uint64_t gs__stream_target(const struct gs__stream *s);

/* ---- launches (launch.c), streams (stream.c), graphs (graph.c) ---- */
/* Runs or records one launch on a stream. */
CUresult gs__launch(struct gs__launch *l, struct gs__stream *s,
                    struct gs__ctx *ctx);
/* Builds a launch from cuLaunchKernel's arguments (copies the params). */
CUresult gs__launch_build(CUfunction f, const unsigned int grid[3],
                          const unsigned int block[3], unsigned int smem,
                          void **params, void **extra, struct gs__launch *out);
void gs__launch_free(struct gs__launch *l);
/* swapcheck.c: whether a gs_* kernel's buffer lies where a reservation
 * has nothing mapped (a GPU would fault); OUT: *at, its address. */
bool gs__launch_unmapped(const struct gs__launch *l, uint64_t *at);
/* swapcheck.c: GPUSLICE_SIM_LAUNCH_DELAY_NS's sleep, before a launch
 * takes the driver's lock (none when unset). */
void gs__launch_delay(void);
/* swapcheck.c: GPUSLICE_SIM_COPY_DELAY_NS's sleep, before a copy takes
 * the driver's lock (none when unset). */
void gs__copy_delay(void);
/* peer copies (copy.c), prefetch and attach (advice.c), their bodies */
CUresult gs__memcpy_peer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
                         CUcontext sctx, size_t len, CUstream hStream,
                         bool sync, bool pt);
CUresult gs__mem_prefetch(CUdeviceptr devPtr, size_t count,
                          CUmemLocation location, unsigned int flags,
                          CUstream hStream, bool pt);
CUresult gs__attach_mem(CUstream hStream, CUdeviceptr dptr, size_t length,
                        unsigned int flags, bool pt);
/* graph.c's helpers for graphexec.c (lock held) */
CUresult gs__node_kernel_set(struct gs__node *n,
                             const CUDA_KERNEL_NODE_PARAMS *p);
CUresult gs__node_kernel_get(struct gs__node *n, CUDA_KERNEL_NODE_PARAMS *p);
CUresult gs__node_memcpy_set(struct gs__node *n, const CUDA_MEMCPY3D *p);
struct gs__node *gs__node_copy(const struct gs__node *src);
int gs__graph_index(const struct gs__graph *g, const struct gs__node *x);
CUresult gs__capture_info(CUstream hStream, CUstreamCaptureStatus *st,
                          cuuint64_t *id, CUgraph *graph,
                          const CUgraphNode **deps,
                          const CUgraphEdgeData **edges, size_t *ndeps, bool pt);
/* Says once on stderr that `what` (an entry point, or a case of one)
 * is refused because the sim cannot do it (stubs.c). */
void gs__not_supported_note(const char *what);
/* Copies device/host bytes now (copy.c; unbacked ranges read zeros). */
void gs__dcopy(uint64_t dst, uint64_t src, uint64_t len);
/* Records ev on s now (stream.c): a marker on the timeline. */
CUresult gs__event_mark(struct gs__event *ev, struct gs__stream *s,
                        struct gs__ctx *ctx);

/* ---- graph structure and stream capture (capture.c), lock held ---- */
struct gs__node *gs__node_new(enum gs__nkind kind);
void gs__graph_node_free(struct gs__node *n);
CUresult gs__node_dep_add(struct gs__node *n, struct gs__node *dep);
bool gs__node_dep_remove(struct gs__node *n, const struct gs__node *dep);
/* Adds n (not yet in a graph) to g after deps (nodes of g). On failure
 * n is not in g and the caller frees it. */
CUresult gs__graph_add(struct gs__graph *g, struct gs__node *n,
                       struct gs__node *const *deps, int ndeps);
struct gs__graph *gs__graph_new(void);
void gs__graph_free(struct gs__graph *g);
CUresult gs__capture_begin(struct gs__stream *s, CUstreamCaptureMode mode,
                           struct gs__graph *g, bool own_graph);
/* Ends s's capture. OUT: *out, the graph (caller owns it) on success. */
CUresult gs__capture_end(struct gs__stream *s, struct gs__graph **out);
/* Adds node n to s's capture after s's dependencies; on failure the
 * caller frees n (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED once it was). */
CUresult gs__capture_node(struct gs__stream *s, struct gs__node *n);
/* Ends s's capture as invalid: what follows fails, and so does its end. */
void gs__capture_invalidate(struct gs__stream *s, CUresult why);
CUresult gs__capture_event_record(struct gs__stream *s, struct gs__event *ev);
CUresult gs__capture_event_wait(struct gs__stream *s, struct gs__event *ev);
void gs__capture_event_gone(struct gs__event *ev);
/* cuStreamUpdateCaptureDependencies: s's dependencies become (add: also
 * include) deps, nodes of its capture's graph. */
CUresult gs__capture_deps_set(struct gs__stream *s, struct gs__node *const *deps,
                              size_t n, bool add);
CUresult gs__capture_update_deps(CUstream hStream, CUgraphNode *deps, size_t n,
                                 unsigned int flags, bool pt);
/* Graph memory (graphmem.c). Lock held. */
/* Makes n an alloc node for p (its address fixed now); ctx: the caller's
 * current context or NULL. */
CUresult gs__gmem_alloc_node_init(struct gs__node *n, struct gs__ctx *ctx,
                                  const CUDA_MEM_ALLOC_NODE_PARAMS *p);
/* Makes n a free node of graph g for dptr (an alloc node's address). */
CUresult gs__gmem_free_node_init(struct gs__node *n, const struct gs__graph *g,
                                 uint64_t dptr);
/* n (any kind) was added to its graph / is being freed. */
void gs__gmem_node_added(struct gs__node *n);
void gs__gmem_node_gone(struct gs__node *n);
/* An exec copy x of a node takes / lets go of its allocation's address. */
void gs__gmem_exec_hold(struct gs__node *x);
void gs__gmem_exec_drop(struct gs__node *x);
/* Before an exec's launch: CUDA_ERROR_INVALID_VALUE while one of its
 * allocations is live (auto_free: they are freed instead). */
CUresult gs__gmem_launch_check(struct gs__node *nodes, int n, bool auto_free);
/* Runs an alloc or free node of an exec. */
CUresult gs__gmem_run(const struct gs__node *n);
/* cuMemFree / cuMemFreeAsync of a graph allocation (a: its entry). */
CUresult gs__gmem_free_call(struct gs__alloc *a);
/* ctx is going: its graph allocations end, the allocator trims. */
void gs__gmem_ctx_gone(struct gs__ctx *ctx);
/* Whether a's bytes may be read and written now (not a reservation, not
 * a graph allocation outside its life). */
static inline bool gs__alloc_usable(const struct gs__alloc *a)
{
	return a != NULL && a->kind != GS__A_RESERVE &&
	       (a->kind != GS__A_GRAPH || a->live);
}
/* A stream in a capture is destroyed: CUDA_ERROR_STREAM_CAPTURE_UNJOINED. */
CUresult gs__capture_stream_gone(struct gs__stream *s);
/* Resolves a stream for a query (takes the lock; on success it is held).
 * OUT: *ctx, *s. */
CUresult gs__stream_peek(CUstream h, bool pt, struct gs__ctx **ctx,
                         struct gs__stream **s);

/* ---- device memory: the address space (addr.c) ---- */
/* Allocation containing [p, p + len), or NULL. Lock held. */
struct gs__alloc *gs__alloc_find(uint64_t p, uint64_t len);
/* Charges / gives back device bytes on dev (OOM, MPS limit). */
CUresult gs__charge(int dev, uint64_t bytes);
void gs__uncharge(int dev, uint64_t bytes);
/* Frees every allocation, array and VMM mapping a context owns (mem.c). */
void gs__mem_ctx_gone(struct gs__ctx *ctx);
/* Writes `len` bytes at device address p (skipped where unbacked). */
void gs__dwrite(uint64_t p, const void *src, uint64_t len);
void gs__dread(void *dst, uint64_t p, uint64_t len);
CUresult gs__memset(uint64_t p, uint64_t pitch, uint32_t value,
                    unsigned int esize, uint64_t width, uint64_t height);
/* Module globals' memory (for module.c): allocates a backed device (or
 * managed) range in ctx (NULL: a managed range no context owns, charged
 * to no GPU) tagged with `owner`; gs__mem_release frees it if it is
 * still there and still `owner`'s. Lock held. */
CUresult gs__mem_alloc(struct gs__ctx *ctx, uint64_t size, bool managed,
                       const void *owner, uint64_t *dptr);
void gs__mem_release(uint64_t dptr, const void *owner);

/* Copies and memsets (copy.c), stream-ordered allocation (mem.c). */
enum xfer_kind { X_HTOD, X_DTOH, X_DTOD, X_ANY };
CUresult gs__xfer(enum xfer_kind k, uint64_t dst, uint64_t src, uint64_t len,
                  CUstream hStream, bool sync, bool pt);
CUresult gs__memset_call(uint64_t p, uint64_t pitch, uint32_t value,
                         unsigned int esize, uint64_t width, uint64_t height,
                         CUstream hStream, bool sync, bool pt);
CUresult gs__mem_alloc_async(CUdeviceptr *dptr, size_t bytesize,
                             CUmemoryPool pool, CUstream hStream, bool pt);
CUresult gs__mem_free_async(CUdeviceptr dptr, CUstream hStream, bool pt);

/*
 * The bodies behind every default/_ptsz/_ptds pair and every legacy
 * version (launch.c, stream.c, graph.c, copy.c, mem.c, ctx.c, drv.c):
 * `pt` makes the NULL stream mean the per-thread default stream.
 */
/* Blocks of `block` threads and `smem` dynamic shared bytes that fit on
 * one SM at once (func.c). */
int gs__func_blocks_per_sm(const struct gs__func *f, int block, size_t smem);
/* cuLaunchKernel with options (cooperative, cluster); opts may be NULL. */
CUresult gs__launch_kernel_opts(CUfunction f, const unsigned int grid[3],
                                const unsigned int block[3], unsigned int smem,
                                CUstream hStream, void **kernelParams,
                                void **extra, bool pt,
                                const struct gs__launch_opts *opts);
CUresult gs__launch_cooperative(CUfunction f, const unsigned int grid[3],
                                const unsigned int block[3], unsigned int smem,
                                CUstream hStream, void **kernelParams, bool pt);
CUresult gs__launch_kernel(CUfunction f, unsigned int gx, unsigned int gy,
                           unsigned int gz, unsigned int bx, unsigned int by,
                           unsigned int bz, unsigned int smem, CUstream hStream,
                           void **kernelParams, void **extra, bool pt);
CUresult gs__launch_kernel_ex(const CUlaunchConfig *config, CUfunction f,
                              void **kernelParams, void **extra, bool pt);
CUresult gs__host_func(CUstream hStream, CUhostFn fn, void *userData,
                       CUstreamCallback cb, bool pt);
CUresult gs__stream_sync(CUstream hStream, bool pt);
CUresult gs__stream_query(CUstream hStream, bool pt);
CUresult gs__stream_wait_event(CUstream hStream, CUevent hEvent,
                               unsigned int Flags, bool pt);
CUresult gs__stream_get_priority(CUstream hStream, int *priority, bool pt);
CUresult gs__stream_get_flags(CUstream hStream, unsigned int *flags, bool pt);
CUresult gs__stream_get_ctx(CUstream hStream, CUcontext *pctx, bool pt);
CUresult gs__stream_get_id(CUstream hStream, unsigned long long *id, bool pt);
CUresult gs__stream_get_device(CUstream hStream, CUdevice *device, bool pt);
CUresult gs__event_record(CUevent hEvent, CUstream hStream, bool pt);
CUresult gs__graph_launch(CUgraphExec hGraphExec, CUstream hStream,
                          bool upload_only, bool pt);
CUresult gs__graph_instantiate_params(CUgraphExec *phGraphExec, CUgraph hGraph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS *params,
                                      bool pt);
CUresult gs__graph_instantiate_legacy(CUgraphExec *phGraphExec, CUgraph hGraph,
                                      CUgraphNode *phErrorNode, char *logBuffer,
                                      size_t bufferSize);
CUresult gs__begin_capture(CUstream hStream, CUstreamCaptureMode mode, bool pt);
CUresult gs__end_capture(CUstream hStream, CUgraph *phGraph, bool pt);
CUresult gs__is_capturing(CUstream hStream, CUstreamCaptureStatus *st,
                          cuuint64_t *id, CUgraph *graph, bool pt);
CUresult gs__ctx_sync(CUcontext ctx);
CUresult gs__cuCtxGetDevice_v1(CUdevice *device);
CUresult gs__cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx);
CUresult gs__primary_release(CUdevice dev);
CUresult gs__primary_reset(CUdevice dev);
CUresult gs__primary_set_flags(CUdevice dev, unsigned int flags);
CUresult gs__cuDeviceGetUuid_v1(CUuuid *uuid, CUdevice dev);
void gs__dev_mps_refresh(struct gs__dev *d);
uint32_t gs__mps_server_pct(const struct gs_sim_mps *m);

/* Versions cuda.h 13.0 no longer declares (the real driver exports them). */
CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags,
                                CUdevice dev);
CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx,
                                CUexecAffinityParam *paramsArray, int numParams,
                                unsigned int flags, CUdevice dev);

/* ---- PTX text (ptx.c) ---- */
/* Reads every .entry of a PTX text. OUT: *entries (malloc'ed, caller
 * frees with gs__entries_free), *n. CUDA_ERROR_INVALID_PTX when the text
 * is not PTX or an entry cannot be read. */
CUresult gs__ptx_parse(const char *text, struct gs__entry **entries, int *n);
void gs__entries_free(struct gs__entry *list, int n);
/* Reads the module-scope .global and .const variables of a PTX text (not
 * .extern ones). OUT: *out (the caller's, gs__globals_free), *n. */
CUresult gs__globals_parse(const char *text, struct gs__global **out,
                           int *n);
void gs__globals_free(struct gs__global *list, int n);

/* ---- modules (module.c), functions (func.c) ---- */
CUresult gs__func_get(CUfunction f, struct gs__func **out);
void gs__module_ctx_gone(struct gs__ctx *ctx);
/* Duration (ns) and SMs of a launch of a kernel the sim does not know,
 * from its PTX (costmodel.h); GS_SIM_DEFAULT_KERNEL_NS when unreadable. */
void gs__kernel_cost(const struct gs__launch *l, const struct gs__dev *d,
                     uint64_t *dur, uint32_t *sms);
/* The SM clock (kHz) of a device (drv.c), for the cost model. */
uint32_t gs__dev_clock_khz(const struct gs__dev *d);

#endif
