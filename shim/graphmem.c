/*
 * graphmem.c - graph memory under the cap: what CUDA graph memory nodes
 * (cuGraphAddMemAllocNode, and cuMemAllocAsync / cuMemAllocFromPoolAsync
 * captured from a stream) allocate when their graph runs, and the graph
 * allocator's cached memory on each device.
 *
 * When memory becomes real (CUDA 13 driver API documentation of
 * cuGraphAddMemAllocNode, cuGraphInstantiateWithFlags and
 * cuDeviceGraphMemTrim): an alloc node only fixes an address; the memory
 * is allocated when the graph runs, lives until a free node for it runs
 * (in its graph or another), cuMemFreeAsync / cuMemFree frees it, or the
 * exec is relaunched with CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH.
 * Destroying a graph or exec does not free it. Freed memory stays cached
 * by the device's graph allocator (CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT)
 * until cuDeviceGraphMemTrim or the end of the context. So nothing is
 * charged at capture or instantiation; a launch is charged before the
 * driver sees it.
 *
 * The books, per device slot, hold one figure for graph memory, `charge`,
 * kept at max(live + pending, reserved):
 *   live      the allocations of launched graphs not yet freed (the
 *             table of lives below, 512-byte rounded like mem.c's)
 *   pending   what launches in flight (between their reservation and
 *             the driver's answer) may allocate: every alloc node of the
 *             exec, freed in the graph or not (an upper bound on its peak)
 *   reserved  what the driver's graph allocator holds, cached included
 *
 *   launch: [auto-free: the exec's lives leave `live`]
 *           reserve charge up to live + pending + need --QUOTA--> trim,
 *           settle, retry once --QUOTA--> CUDA_ERROR_OUT_OF_MEMORY (the
 *           driver is not called)
 *     -> driver launches -> lives added (alloc nodes not freed in the
 *        graph) and taken (free nodes); on failure nothing changes
 *     -> settle: charge = max(live + pending, reserved)
 *   free outside a graph, exec destroyed, cuDeviceGraphMemTrim:
 *     trim the device's graph allocator, settle
 *
 * so the cache never lets the process past its cap, and once everything
 * is freed and the exec destroyed (or trimmed) the books are back at
 * zero. Execs are scanned at instantiation (their alloc and free nodes);
 * only execs with memory nodes are tracked, and while there are none
 * graph launches take no extra step (gs__gmem_execs).
 *
 * Not covered: memory nodes inside child graphs (the sim has none);
 * CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD and cuGraphUpload may back an
 * exec's allocations before its launch on a real driver, which is counted
 * at the next settle (as reserved memory).
 *
 * Whether a stream is capturing (a stream-ordered allocation in a capture
 * is an alloc node, charged when its graph runs) is asked of the driver
 * only once the process has begun a capture: the cuStreamBeginCapture*
 * hooks here raise a process flag first.
 *
 * Calls down into the region's books and the real driver only; launch.c
 * and mem.c call in. One mutex guards the tables; it is not held across
 * a driver launch. A forked child starts with empty tables.
 */
#include "shim_int.h"

#include "gs/faultinj.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GS_GMEM_ALIGN 512ULL

/* One memory node of an instantiated exec. */
struct gnode {
	CUdeviceptr dptr;
	uint64_t bytes; /* alloc nodes: charged size */
	int dev;        /* region device slot */
	bool freed_here; /* alloc node with a free node in the same graph */
};

struct gexec {
	CUgraphExec exec;
	CUcontext ctx;
	bool auto_free;
	int n_alloc, n_free;
	struct gnode *alloc;
	CUdeviceptr *free; /* addresses freed by the exec's free nodes */
};

/* A live graph allocation. */
struct glife {
	CUdeviceptr dptr;
	uint64_t bytes;
	int dev;
	CUcontext ctx;
	CUgraphExec exec; /* whose launch allocated it */
};

struct gdev {
	uint64_t charge, live, pending;
	CUdevice ord;
	bool known;
};

int gs__gmem_execs;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pid_t owner_pid; /* tables belong to this process (fork) */
static struct gexec *execs;
static int n_execs, cap_execs;
static struct glife *lives;
static int n_lives, cap_lives;
static struct gdev devs[GS_REGION_MAX_DEVICES];

/* What the shim calls of the driver beyond its hooks. */
static struct {
	__typeof__(&cuGraphGetNodes) get_nodes;
	__typeof__(&cuGraphNodeGetType) node_type;
	__typeof__(&cuGraphMemAllocNodeGetParams) alloc_params;
	__typeof__(&cuGraphMemFreeNodeGetParams) free_params;
	__typeof__(&cuDeviceGetGraphMemAttribute) get_attr;
} drv;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;

static void drv_load(void)
{
	void *h = gs__g.cuda;

	drv.get_nodes = (__typeof__(drv.get_nodes))gs__rdlsym(h, "cuGraphGetNodes");
	drv.node_type = (__typeof__(drv.node_type))gs__rdlsym(h, "cuGraphNodeGetType");
	drv.alloc_params = (__typeof__(drv.alloc_params))gs__rdlsym(
	    h, "cuGraphMemAllocNodeGetParams");
	drv.free_params = (__typeof__(drv.free_params))gs__rdlsym(
	    h, "cuGraphMemFreeNodeGetParams");
	drv.get_attr = (__typeof__(drv.get_attr))gs__rdlsym(
	    h, "cuDeviceGetGraphMemAttribute");
}

static bool drv_ready(void)
{
	(void)pthread_once(&drv_once, drv_load);
	return drv.get_nodes != NULL && drv.node_type != NULL &&
	       drv.alloc_params != NULL && drv.free_params != NULL;
}

static uint64_t round_up(uint64_t n)
{
	return (n + GS_GMEM_ALIGN - 1) / GS_GMEM_ALIGN * GS_GMEM_ALIGN;
}

/* mu held. A forked child forgets its parent's tables (their memory and
 * books are the parent's). */
static void lock(void)
{
	(void)pthread_mutex_lock(&mu);
	if (owner_pid != getpid()) {
		for (int i = 0; i < n_execs; i++) {
			free(execs[i].alloc);
			free(execs[i].free);
		}
		n_execs = 0;
		n_lives = 0;
		memset(devs, 0, sizeof(devs));
		__atomic_store_n(&gs__gmem_execs, 0, __ATOMIC_RELAXED);
		owner_pid = getpid();
	}
}

static void unlock(void)
{
	(void)pthread_mutex_unlock(&mu);
}

/* ---- the books ---------------------------------------------------------- */

/* mu held. Raises dev's charge to `target`; false when over the cap. */
static bool charge_to(int dev, uint64_t target)
{
	struct gdev *d = &devs[dev];
	gs_err err;

	if (target <= d->charge)
		return true;
	err = gs_region_mem_reserve(gs__g.region, &gs__g.proc, dev,
	                            target - d->charge);
	if (err != GS_OK)
		return false;
	d->charge = target;
	return true;
}

/* mu held. What the driver's graph allocator holds on dev (0 when it
 * cannot say). */
static uint64_t reserved_of(int dev)
{
	cuuint64_t v = 0;

	if (drv.get_attr == NULL ||
	    drv.get_attr(devs[dev].ord, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT,
	                 &v) != CUDA_SUCCESS)
		return 0;
	return v;
}

/*
 * mu held. charge = max(live + pending, reserved). Memory the driver
 * holds beyond the cap (its granularity above our 512-byte rounding) is
 * charged as far as the cap allows and the rest is said once.
 */
static void settle(int dev)
{
	struct gdev *d = &devs[dev];
	uint64_t want = d->live + d->pending, res = reserved_of(dev);

	if (res > want)
		want = res;
	if (want < d->charge) {
		gs_region_mem_release(gs__g.region, &gs__g.proc, dev,
		                      d->charge - want);
		d->charge = want;
	} else if (!charge_to(dev, want)) {
		static bool said;

		if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
			gs_warn(GS_SHIM_TAG,
			        "slice=%s gpu=%d the graph allocator holds %llu bytes, more than the books allow (%llu charged)",
			        gs__g.cfg.slice, dev, (unsigned long long)want,
			        (unsigned long long)d->charge);
	}
}

/* mu held. Gives the device's unused graph memory back to the driver,
 * then settles. */
static void trim_settle(int dev)
{
	if (gs__real.cuDeviceGraphMemTrim != NULL)
		(void)gs__real.cuDeviceGraphMemTrim(devs[dev].ord);
	settle(dev);
}

/* ---- tables ------------------------------------------------------------- */

static struct gexec *exec_find(CUgraphExec x)
{
	for (int i = 0; i < n_execs; i++)
		if (execs[i].exec == x)
			return &execs[i];
	return NULL;
}

static int life_find(CUdeviceptr p)
{
	for (int i = 0; i < n_lives; i++)
		if (lives[i].dptr == p)
			return i;
	return -1;
}

/* mu held. Ends life i: its bytes leave `live` (the caller settles). */
static void life_end(int i)
{
	struct gdev *d = &devs[lives[i].dev];

	d->live = d->live >= lives[i].bytes ? d->live - lives[i].bytes : 0;
	lives[i] = lives[--n_lives];
}

/* mu held. False when out of host memory. */
static bool life_add(const struct glife *l)
{
	if (n_lives == cap_lives) {
		int cap = cap_lives ? cap_lives * 2 : 16;
		struct glife *v =
		    gs_fault_hit("shim.malloc")
		        ? NULL
		        : realloc(lives, sizeof(*v) * (size_t)cap);

		if (v == NULL)
			return false;
		lives = v;
		cap_lives = cap;
	}
	lives[n_lives++] = *l;
	devs[l->dev].live += l->bytes;
	return true;
}

/* ---- instantiation: the exec's memory nodes ------------------------------ */

static void gexec_fini(struct gexec *e)
{
	free(e->alloc);
	free(e->free);
}

/*
 * Reads graph g's memory nodes into e. CUDA_SUCCESS with e->n_alloc ==
 * e->n_free == 0 when it has none; an error when the driver cannot list
 * them (e is left empty).
 */
static CUresult scan_graph(CUgraph g, struct gexec *e)
{
	CUgraphNode *nodes = NULL;
	size_t n = 0;
	CUresult r;

	memset(e, 0, sizeof(*e));
	r = drv.get_nodes(g, NULL, &n);
	if (r != CUDA_SUCCESS || n == 0)
		return r;
	nodes = gs_fault_malloc("shim.malloc", sizeof(*nodes) * n);
	e->alloc = gs_fault_malloc("shim.malloc", sizeof(*e->alloc) * n);
	e->free = gs_fault_malloc("shim.malloc", sizeof(*e->free) * n);
	if (nodes == NULL || e->alloc == NULL || e->free == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_free;
	}
	r = drv.get_nodes(g, nodes, &n);
	for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
		CUgraphNodeType t;
		CUDA_MEM_ALLOC_NODE_PARAMS ap;
		CUdeviceptr fp;
		int dev;

		r = drv.node_type(nodes[i], &t);
		if (r != CUDA_SUCCESS)
			break;
		if (t == CU_GRAPH_NODE_TYPE_MEM_FREE) {
			r = drv.free_params(nodes[i], &fp);
			if (r == CUDA_SUCCESS)
				e->free[e->n_free++] = fp;
			continue;
		}
		if (t != CU_GRAPH_NODE_TYPE_MEM_ALLOC)
			continue;
		memset(&ap, 0, sizeof(ap));
		r = drv.alloc_params(nodes[i], &ap);
		if (r != CUDA_SUCCESS)
			break;
		dev = gs__dev_slot(ap.poolProps.location.id, NULL);
		if (dev < 0 || dev >= GS_REGION_MAX_DEVICES)
			continue; /* a GPU outside the slice's books */
		devs[dev].ord = ap.poolProps.location.id;
		devs[dev].known = true;
		e->alloc[e->n_alloc++] = (struct gnode){
		    .dptr = ap.dptr, .bytes = round_up(ap.bytesize), .dev = dev};
	}
	for (int i = 0; i < e->n_alloc; i++)
		for (int j = 0; j < e->n_free; j++)
			if (e->free[j] == e->alloc[i].dptr)
				e->alloc[i].freed_here = true;
out_free:
	free(nodes);
	if (r != CUDA_SUCCESS) {
		gexec_fini(e);
		memset(e, 0, sizeof(*e));
	}
	return r;
}

/* After the driver instantiated `x` from `g`: track it when it has
 * memory nodes. False when it has some and cannot be tracked. */
static bool exec_track(CUgraphExec x, CUgraph g, unsigned long long flags)
{
	struct gexec e;
	bool ok = true;

	if (!drv_ready())
		return false;
	lock();
	if (scan_graph(g, &e) != CUDA_SUCCESS) {
		ok = false;
		goto out;
	}
	if (e.n_alloc == 0 && e.n_free == 0)
		goto out;
	e.exec = x;
	e.ctx = gs__dev_current_ctx();
	e.auto_free = (flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) != 0;
	if (n_execs == cap_execs) {
		int cap = cap_execs ? cap_execs * 2 : 8;
		struct gexec *v =
		    gs_fault_hit("shim.malloc")
		        ? NULL
		        : realloc(execs, sizeof(*v) * (size_t)cap);

		if (v == NULL) {
			gexec_fini(&e);
			ok = false;
			goto out;
		}
		execs = v;
		cap_execs = cap;
	}
	execs[n_execs++] = e;
	__atomic_store_n(&gs__gmem_execs, n_execs, __ATOMIC_RELEASE);
out:
	unlock();
	return ok;
}

/*
 * The instantiation protocol: the driver instantiates, the exec is
 * tracked; an exec with memory nodes that cannot be tracked (out of host
 * memory, the driver cannot list its nodes) is destroyed and the call
 * answers CUDA_ERROR_OUT_OF_MEMORY rather than run uncounted.
 */
static CUresult instantiated(CUresult r, CUgraphExec *x, CUgraph g,
                             unsigned long long flags)
{
	if (r != CUDA_SUCCESS || !gs__enforcing() || exec_track(*x, g, flags))
		return r;
	gs_warn(GS_SHIM_TAG,
	        "slice=%s graph memory of an exec cannot be tracked: instantiation refused",
	        gs__g.cfg.slice);
	(void)gs__real.cuGraphExecDestroy(*x);
	return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                     unsigned long long flags)
{
	int saved = errno;
	CUresult r;

	if (!gs__ready())
		return gs__not_ready();
	r = gs__real.cuGraphInstantiateWithFlags(phGraphExec, hGraph, flags);
	r = instantiated(r, phGraphExec, hGraph, flags);
	errno = saved;
	return r;
}

/* The CUDA 10 and 11 signatures (no flags). */
CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                            CUgraphNode *phErrorNode, char *logBuffer,
                            size_t bufferSize)
{
	int saved = errno;
	CUresult r;

	if (!gs__ready())
		return gs__not_ready();
	r = gs__real.cuGraphInstantiate(phGraphExec, hGraph, phErrorNode,
	                                logBuffer, bufferSize);
	r = instantiated(r, phGraphExec, hGraph, 0);
	errno = saved;
	return r;
}

CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                               CUgraphNode *phErrorNode, char *logBuffer,
                               size_t bufferSize)
{
	int saved = errno;
	CUresult r;

	if (!gs__ready())
		return gs__not_ready();
	r = gs__real.cuGraphInstantiate_v2(phGraphExec, hGraph, phErrorNode,
	                                   logBuffer, bufferSize);
	r = instantiated(r, phGraphExec, hGraph, 0);
	errno = saved;
	return r;
}

static CUresult
instantiate_params(__typeof__(&cuGraphInstantiateWithParams) fn,
                   CUgraphExec *phGraphExec, CUgraph hGraph,
                   CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	int saved = errno;
	CUresult r;

	if (!gs__ready())
		return gs__not_ready();
	r = fn(phGraphExec, hGraph, p);
	if (p != NULL)
		r = instantiated(r, phGraphExec, hGraph, p->flags);
	errno = saved;
	return r;
}

CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	return instantiate_params(gs__real.cuGraphInstantiateWithParams,
	                          phGraphExec, hGraph, p);
}

CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec,
                                           CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	return instantiate_params(gs__real.cuGraphInstantiateWithParams_ptsz,
	                          phGraphExec, hGraph, p);
}

/* An exec goes away: its lives stay (freed later by the program), the
 * allocator's cache of its memory is trimmed. */
CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	int saved = errno;
	bool devs_of[GS_REGION_MAX_DEVICES] = {false};
	struct gexec *e;
	CUresult r;

	if (!gs__ready())
		return gs__not_ready();
	r = gs__real.cuGraphExecDestroy(hGraphExec);
	if (r != CUDA_SUCCESS ||
	    __atomic_load_n(&gs__gmem_execs, __ATOMIC_ACQUIRE) == 0)
		return r;
	lock();
	e = exec_find(hGraphExec);
	if (e != NULL) {
		for (int i = 0; i < e->n_alloc; i++)
			devs_of[e->alloc[i].dev] = true;
		/* its lives stay; a later exec at the same handle is not
		 * their owner */
		for (int i = 0; i < n_lives; i++)
			if (lives[i].exec == hGraphExec)
				lives[i].exec = NULL;
		gexec_fini(e);
		*e = execs[--n_execs];
		__atomic_store_n(&gs__gmem_execs, n_execs, __ATOMIC_RELEASE);
		for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
			if (devs_of[d])
				trim_settle(d);
	}
	unlock();
	errno = saved;
	return r;
}

/* ---- launches ------------------------------------------------------------ */

/* What one launch takes and gives back per device. */
struct glaunch {
	uint64_t need[GS_REGION_MAX_DEVICES];
	uint64_t freed_old[GS_REGION_MAX_DEVICES]; /* lives auto-freed */
};

/* mu held. Reserves what launching e may allocate; false when over the
 * cap (nothing is left changed). */
static bool launch_reserve(struct gexec *e, struct glaunch *l)
{
	int d;

	memset(l, 0, sizeof(*l));
	/* its last allocations still live: the driver refuses the launch
	 * (CUDA_ERROR_INVALID_VALUE), nothing to reserve */
	if (!e->auto_free)
		for (int i = 0; i < n_lives; i++)
			if (lives[i].exec == e->exec)
				return true;
	for (int i = 0; i < e->n_alloc; i++)
		l->need[e->alloc[i].dev] += e->alloc[i].bytes;
	if (e->auto_free)
		for (int i = 0; i < n_lives; i++)
			if (lives[i].exec == e->exec)
				l->freed_old[lives[i].dev] += lives[i].bytes;
	for (d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		struct gdev *g = &devs[d];
		uint64_t target;

		if (l->need[d] == 0)
			continue;
		target = g->live - l->freed_old[d] + g->pending + l->need[d];
		if (!charge_to(d, target)) {
			/* the allocator's cache may hold what we need */
			trim_settle(d);
			if (!charge_to(d, target))
				break;
		}
	}
	if (d < GS_REGION_MAX_DEVICES) {
		gs_debug(GS_SHIM_TAG,
		         "slice=%s gpu=%d graph launch over the cap: %llu bytes of graph memory refused",
		         gs__g.cfg.slice, d, (unsigned long long)l->need[d]);
		for (int k = 0; k < d; k++)
			if (l->need[k] != 0)
				settle(k);
		return false;
	}
	for (d = 0; d < GS_REGION_MAX_DEVICES; d++)
		devs[d].pending += l->need[d];
	return true;
}

/* mu held. After the driver answered r for launching e. */
static void launch_settle(struct gexec *e, struct glaunch *l, CUresult r)
{
	bool dropped = false;

	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
		devs[d].pending -= l->need[d];
	if (r == CUDA_SUCCESS) {
		for (int i = 0; e->auto_free && i < n_lives;)
			if (lives[i].exec == e->exec)
				life_end(i);
			else
				i++;
		for (int i = 0; i < e->n_free; i++) {
			int k = life_find(e->free[i]);

			if (k >= 0)
				life_end(k);
		}
		for (int i = 0; i < e->n_alloc; i++) {
			const struct gnode *a = &e->alloc[i];
			struct glife lf = {.dptr = a->dptr,
			                   .bytes = a->bytes,
			                   .dev = a->dev,
			                   .ctx = e->ctx,
			                   .exec = e->exec};

			if (a->freed_here || life_find(a->dptr) >= 0)
				continue;
			/* unrecorded, its charge stays in `charge` until the
			 * allocator is trimmed empty */
			if (!life_add(&lf))
				dropped = true;
		}
	}
	if (dropped)
		gs_warn(GS_SHIM_TAG,
		        "slice=%s out of host memory: a graph allocation stays charged until its GPU's graph memory is trimmed",
		        gs__g.cfg.slice);
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
		if (l->need[d] != 0 || l->freed_old[d] != 0)
			settle(d);
}

CUresult gs__gmem_launch(CUresult (*fn)(CUgraphExec, CUstream),
                         CUgraphExec hGraphExec, CUstream hStream)
{
	int saved = errno;
	struct glaunch l;
	struct gexec *e;
	CUresult r;

	lock();
	e = exec_find(hGraphExec);
	if (e == NULL) {
		unlock();
		return fn(hGraphExec, hStream);
	}
	if (!launch_reserve(e, &l)) {
		unlock();
		errno = saved;
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	unlock();
	r = fn(hGraphExec, hStream);
	lock();
	/* the exec cannot be destroyed while its launch is in the call */
	e = exec_find(hGraphExec);
	if (e != NULL) {
		launch_settle(e, &l, r);
	} else {
		for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
			if (l.need[d] != 0) {
				devs[d].pending -= l.need[d];
				settle(d);
			}
	}
	unlock();
	errno = saved;
	return r;
}

/* ---- stream capture ------------------------------------------------------ */

/*
 * Set by the first stream capture the process begins (any of the hooks
 * below), before the driver sees it, and never cleared: until then no
 * stream can be capturing, so gs__gmem_capturing answers without asking
 * the driver, and a stream-ordered allocation or a launch outside any
 * capture pays no extra driver call.
 */
static bool capture_seen;

#define GS__BEGIN_CAPTURE(sym, params, args)                                   \
	CUresult sym params                                                    \
	{                                                                      \
		if (!gs__ready())                                              \
			return gs__not_ready();                                \
		__atomic_store_n(&capture_seen, true, __ATOMIC_SEQ_CST);       \
		return gs__real.sym args;                                      \
	}

GS__BEGIN_CAPTURE(cuStreamBeginCapture, (CUstream st), (st))
GS__BEGIN_CAPTURE(cuStreamBeginCapture_ptsz, (CUstream st), (st))
GS__BEGIN_CAPTURE(cuStreamBeginCapture_v2, (CUstream st, CUstreamCaptureMode mode), (st, mode))
GS__BEGIN_CAPTURE(cuStreamBeginCapture_v2_ptsz, (CUstream st, CUstreamCaptureMode mode), (st, mode))
GS__BEGIN_CAPTURE(cuStreamBeginCaptureToGraph, (CUstream st, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges, size_t n, CUstreamCaptureMode mode), (st, g, deps, edges, n, mode))
GS__BEGIN_CAPTURE(cuStreamBeginCaptureToGraph_ptsz, (CUstream st, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges, size_t n, CUstreamCaptureMode mode), (st, g, deps, edges, n, mode))

bool gs__gmem_capturing(CUstream s, bool ptsz)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	__typeof__(&cuStreamIsCapturing) fn =
	    ptsz ? gs__real.cuStreamIsCapturing_ptsz
	         : gs__real.cuStreamIsCapturing;

	if (GS_LIKELY(!__atomic_load_n(&capture_seen, __ATOMIC_ACQUIRE)))
		return false;
	/* the legacy stream is never captured, and asking about it while
	 * another stream captures is itself an error */
	if (!ptsz && (s == NULL || s == CU_STREAM_LEGACY))
		return false;
	if (fn == NULL || fn(s, &st) != CUDA_SUCCESS)
		return false;
	return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* ---- frees outside a graph, trims, contexts ------------------------------ */

void gs__gmem_freed(CUdeviceptr p)
{
	int i, dev;

	if (__atomic_load_n(&gs__gmem_execs, __ATOMIC_ACQUIRE) == 0 &&
	    __atomic_load_n(&n_lives, __ATOMIC_RELAXED) == 0)
		return;
	lock();
	i = life_find(p);
	if (i >= 0) {
		dev = lives[i].dev;
		life_end(i);
		trim_settle(dev);
	}
	unlock();
}

bool gs__gmem_trim_cached(int dev)
{
	uint64_t before;
	bool freed = false;

	if (dev < 0 || dev >= GS_REGION_MAX_DEVICES ||
	    __atomic_load_n(&devs[dev].charge, __ATOMIC_RELAXED) == 0)
		return false;
	lock();
	before = devs[dev].charge;
	if (before > devs[dev].live + devs[dev].pending) {
		trim_settle(dev);
		freed = devs[dev].charge < before;
	}
	unlock();
	return freed;
}

void gs__gmem_ctx_gone(CUcontext ctx)
{
	bool devs_of[GS_REGION_MAX_DEVICES] = {false};

	lock();
	for (int i = 0; i < n_lives;)
		if (lives[i].ctx == ctx) {
			devs_of[lives[i].dev] = true;
			life_end(i);
		} else {
			i++;
		}
	for (int i = 0; i < n_execs;)
		if (execs[i].ctx == ctx) {
			for (int k = 0; k < execs[i].n_alloc; k++)
				devs_of[execs[i].alloc[k].dev] = true;
			gexec_fini(&execs[i]);
			execs[i] = execs[--n_execs];
		} else {
			i++;
		}
	__atomic_store_n(&gs__gmem_execs, n_execs, __ATOMIC_RELEASE);
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
		if (devs_of[d])
			settle(d);
	unlock();
}

CUresult cuDeviceGraphMemTrim(CUdevice device)
{
	int saved = errno;
	CUresult r;

	if (!gs__ready())
		return gs__not_ready();
	r = gs__real.cuDeviceGraphMemTrim(device);
	if (r != CUDA_SUCCESS || !gs__enforcing())
		return r;
	lock();
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
		if (devs[d].known && devs[d].ord == device)
			settle(d);
	unlock();
	errno = saved;
	return r;
}
