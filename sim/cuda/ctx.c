/*
 * ctx.c - contexts, the top of the sim driver: primary contexts
 * (retain/release/reset), cuCtxCreate in all its versions, the binding
 * of a context to the process's slot in the node state, and tearing a
 * context down (its context-local storage, streams, events, modules and
 * memory, through export.c, stream.c, module.c and mem.c). The thread's
 * stack of current contexts and the lookups are current.c's.
 *
 * A process holds one slot per device it has contexts on; the first
 * context creates the slot (checking compute mode and MPS admission), each
 * context charges GS__CTX_OVERHEAD of device memory, and the last one to
 * go releases the slot (busy time is kept in the state's exited ring).
 *
 *   (none) --cuCtxCreate / cuDevicePrimaryCtxRetain--> live
 *   live --fault (gs_fault launch)--> sticky error, every call in it fails
 *   live/sticky --cuCtxDestroy / last PrimaryCtxRelease / Reset--> (none)
 *
 * A primary context's handle is made before it lives, as the CUDA runtime
 * expects (it asks for the handle through an export table, makes it
 * current, and only then retains it), and outlives every release and
 * reset: the struct is never freed, only torn down (streams, events,
 * memory, slot) and marked `destroyed`; the next retain brings it back
 * with a new id, so module globals are made afresh. An unretained primary
 * context holds no slot and charges no memory.
 *
 *   handle --gs__primary_get--> (unretained) --Retain--> live
 *   live --last Release / Reset--> (unretained)
 *
 * Destroying or resetting a context first runs its context-local storage
 * destructors (export.c), while it still works, with the lock dropped.
 */
#include "cuda_int.h"
#include "halloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- slot ------------------------------------------------------------ */

static uint32_t count_mps_clients(const struct gs_sim_state *st,
                                  const struct gs__dev *d)
{
	uint32_t n = 0;

	for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
		const struct gs_sim_proc *p = &st->procs[i];

		if (p->state == GS_SIM_PROC_LIVE && p->gpu == d->gpu &&
		    p->engine == d->engine &&
		    (p->flags & GS_SIM_PROC_MPS_CLIENT))
			n++;
	}
	return n;
}

static bool others_on_engine(const struct gs_sim_state *st,
                             const struct gs__dev *d)
{
	for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
		const struct gs_sim_proc *p = &st->procs[i];

		if (p->state == GS_SIM_PROC_LIVE && p->gpu == d->gpu &&
		    p->engine == d->engine && p->pid != gs__drv.pid &&
		    !(p->flags & GS_SIM_PROC_MPS_CLIENT))
			return true;
	}
	return false;
}

/* Shared lock held. Joins d's engine (first context) and charges one
 * context's overhead. */
static CUresult slot_join(struct gs_sim_state *st, struct gs__dev *d)
{
	struct gs_sim_engine *e = &st->gpus[d->gpu].engine[d->engine];
	uint32_t mode = st->gpus[d->gpu].compute_mode;
	uint64_t now = gs_sim_now_ns();
	struct gs_sim_proc *p = gs__slot(d);
	bool fresh = p == NULL;

	if (!e->live)
		return CUDA_ERROR_DEVICE_UNAVAILABLE;
	if (fresh) {
		int i;

		gs__dev_mps_refresh(d);
		if (d->mps_client) {
			if (e->mps.state == GS_SIM_MPS_FAULT)
				return CUDA_ERROR_MPS_SERVER_NOT_READY;
			if (count_mps_clients(st, d) >= 48)
				return CUDA_ERROR_MPS_MAX_CLIENTS_REACHED;
		} else if (mode == 2 /* PROHIBITED */ ||
		           (mode == 3 /* EXCLUSIVE_PROCESS */ &&
		            (others_on_engine(st, d) ||
		             count_mps_clients(st, d) > 0))) {
			return CUDA_ERROR_DEVICE_UNAVAILABLE;
		}
		i = gs_sim_proc_acquire(st, gs__drv.pid, gs__drv.start_time,
		                        d->gpu, d->engine, now);
		if (i < 0) {
			(void)gs_sim_reap(st, now);
			i = gs_sim_proc_acquire(st, gs__drv.pid,
			                        gs__drv.start_time, d->gpu,
			                        d->engine, now);
		}
		if (i < 0)
			return CUDA_ERROR_OUT_OF_MEMORY;
		p = &st->procs[i];
		d->slot = i;
		d->slot_gen = p->generation;
		d->last_seq = p->ring_tail;
		p->ring_head = p->ring_harvest = p->ring_tail;
		p->head_rem = 0;
		snprintf(p->comm, sizeof(p->comm), "%s", gs__drv.comm);
		p->sm_limit = d->sm_count;
		if (d->mps_client) {
			uint64_t lim = e->mps.pinned_mem_limit
			                   ? e->mps.pinned_mem_limit
			                   : e->mps.default_pinned_mem_limit;

			if (d->mps_mem_limit != 0 &&
			    (lim == 0 || d->mps_mem_limit < lim))
				lim = d->mps_mem_limit;
			p->flags |= GS_SIM_PROC_MPS_CLIENT;
			if (d->mps_below)
				p->flags |= GS_SIM_PROC_MPS_BELOW;
			p->mps_active_thread_pct = d->mps_pct;
			p->mps_pinned_mem_limit = lim;
		}
	}
	/* Fault site: no room for the context's own memory. */
	if (gs_fault_hit("sim.dev_alloc"))
		goto out_oom;
	if (p->mps_pinned_mem_limit != 0 &&
	    p->mem_used + GS__CTX_OVERHEAD > p->mps_pinned_mem_limit)
		goto out_oom;
	if (e->mem_used + GS__CTX_OVERHEAD > e->mem_total) {
		(void)gs_sim_reap(st, now);
		p = gs__slot(d);
		if (p == NULL)
			return CUDA_ERROR_DEVICE_UNAVAILABLE;
		if (e->mem_used + GS__CTX_OVERHEAD > e->mem_total)
			goto out_oom;
	}
	e->mem_used += GS__CTX_OVERHEAD;
	p->mem_used += GS__CTX_OVERHEAD;
	p->n_contexts++;
	d->n_ctx++;
	return CUDA_SUCCESS;

out_oom:
	if (fresh) {
		gs_sim_proc_release(st, d->slot, now, false);
		d->slot = -1;
	}
	return CUDA_ERROR_OUT_OF_MEMORY;
}

/* Shared lock held. Gives one context's overhead back; the last context
 * releases the slot. */
static void slot_leave(struct gs_sim_state *st, struct gs__dev *d)
{
	struct gs_sim_proc *p = gs__slot(d);
	struct gs_sim_engine *e = &st->gpus[d->gpu].engine[d->engine];

	if (d->n_ctx > 0)
		d->n_ctx--;
	if (p == NULL)
		return;
	p->mem_used = p->mem_used >= GS__CTX_OVERHEAD
	                  ? p->mem_used - GS__CTX_OVERHEAD
	                  : 0;
	e->mem_used = e->mem_used >= GS__CTX_OVERHEAD
	                  ? e->mem_used - GS__CTX_OVERHEAD
	                  : 0;
	if (p->n_contexts > 0)
		p->n_contexts--;
	if (d->n_ctx == 0) {
		gs_sim_proc_release(st, d->slot, gs_sim_now_ns(), false);
		d->slot = -1;
	}
}

/* ---- create / destroy ------------------------------------------------ */

/* What a context starts with; a primary context's handle, its storage
 * and its place on thread stacks are kept. */
static void ctx_fields_init(struct gs__ctx *c, int dev, unsigned int flags)
{
	c->dev = dev;
	c->flags = flags;
	c->sticky = CUDA_SUCCESS;
	c->last = 0;
	c->id = ++gs__drv.next_id;
	memset(c->limits, 0, sizeof(c->limits));
	c->limits[CU_LIMIT_STACK_SIZE] = 1024;
	c->limits[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20;
	c->limits[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20;
	c->limits[CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2;
	c->limits[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048;
	c->limits[CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 64;
	c->cache_config = CU_FUNC_CACHE_PREFER_NONE;
	memset(&c->legacy, 0, sizeof(c->legacy));
	memset(&c->per_thread, 0, sizeof(c->per_thread));
	c->legacy.ctx = c;
	c->legacy.id = ++gs__drv.next_id;
	c->per_thread.ctx = c;
	c->per_thread.id = ++gs__drv.next_id;
}

/* Retains an unretained primary context: joins the device's slot (its
 * overhead is charged now, not when the handle was made). */
static CUresult primary_activate(struct gs__ctx *c)
{
	struct gs__dev *d = &gs__drv.dev[c->dev];
	struct gs_sim_state *st;
	CUresult r;

	st = gs__state_lock(d, &r);
	if (st == NULL)
		return r;
	r = slot_join(st, d);
	gs__state_unlock();
	if (r != CUDA_SUCCESS)
		return r;
	ctx_fields_init(c, c->dev, d->primary_flags);
	c->destroyed = false;
	c->refs = 1;
	return CUDA_SUCCESS;
}

CUresult gs__ctx_create(int dev, unsigned int flags, bool primary,
                        struct gs__ctx **out)
{
	struct gs__dev *d = gs__dev_get(dev);
	struct gs_sim_state *st;
	struct gs__ctx *c;
	CUresult r;

	if (d == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	c = gs__calloc(1, sizeof(*c));
	if (c == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	st = gs__state_lock(d, &r);
	if (st == NULL)
		goto out_free;
	r = slot_join(st, d);
	gs__state_unlock();
	if (r != CUDA_SUCCESS)
		goto out_free;
	c->primary = primary;
	ctx_fields_init(c, dev, flags);
	if (!gs__h_add(c, GS__H_CTX)) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_leave;
	}
	*out = c;
	return CUDA_SUCCESS;

out_leave:
	st = gs__state_lock(NULL, &r);
	if (st != NULL) {
		slot_leave(st, d);
		gs__state_unlock();
	}
	r = CUDA_ERROR_OUT_OF_MEMORY;
out_free:
	free(c);
	return r;
}

static void destroy_stream(void *p, void *arg)
{
	struct gs__stream *s = p;

	if (s->ctx == arg) {
		if (s->capture != NULL)
			(void)gs__capture_stream_gone(s); /* ends it */
		gs__h_del(s);
		free(s);
	}
}

static void destroy_event(void *p, void *arg)
{
	struct gs__event *ev = p;

	if (ev->ctx == arg) {
		gs__capture_event_gone(ev);
		gs__h_del(ev);
		free(ev);
	}
}

/*
 * Lock held (dropped while context-local destructors run). A created
 * context is freed; a primary one is torn down to its unretained handle.
 */
void gs__ctx_destroy(struct gs__ctx *ctx)
{
	struct gs__dev *d = &gs__drv.dev[ctx->dev];
	struct gs_sim_state *st;
	CUresult r;

	gs__cls_flush(ctx);
	if (ctx->per_thread.capture != NULL)
		(void)gs__capture_stream_gone(&ctx->per_thread);
	gs__h_each(GS__H_STREAM, destroy_stream, ctx);
	gs__h_each(GS__H_EVENT, destroy_event, ctx);
	gs__module_ctx_gone(ctx);
	gs__mem_ctx_gone(ctx);
	st = gs__state_lock(d, &r);
	if (st != NULL) {
		slot_leave(st, d);
		gs__state_unlock();
	}
	if (ctx->primary) {
		ctx->destroyed = true;
		ctx->refs = 0;
		return;
	}
	gs__h_del(ctx);
	gs__ctx_unstack(ctx);
	free(ctx->cls);
	free(ctx);
}

static CUresult ctx_create_common(CUcontext *pctx, unsigned int flags,
                                  CUdevice dev)
{
	struct gs__ctx *c;
	CUresult r;

	if (pctx == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__ctx_create(dev, flags, false, &c);
	if (r == CUDA_SUCCESS) {
		gs__ctx_push(c);
		*pctx = (CUcontext)c;
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags,
                                CUdevice dev)
{
	return ctx_create_common(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx,
                                CUexecAffinityParam *paramsArray, int numParams,
                                unsigned int flags, CUdevice dev)
{
	/* Execution affinity needs MPS; the sim's MPS limits are per
	 * process, so a per-context SM count is refused. */
	if (numParams > 0 && paramsArray != NULL)
		return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
	return ctx_create_common(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx,
                                CUctxCreateParams *ctxCreateParams,
                                unsigned int flags, CUdevice dev)
{
	if (ctxCreateParams != NULL) {
		if (ctxCreateParams->numExecAffinityParams > 0 &&
		    ctxCreateParams->execAffinityParams != NULL)
			return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
		if (ctxCreateParams->cigParams != NULL)
			return CUDA_ERROR_NOT_SUPPORTED;
	}
	return ctx_create_common(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
	struct gs__ctx *c = (struct gs__ctx *)ctx;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(c, GS__H_CTX) || c->primary || c->tearing) {
		gs__unlock();
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	gs__ctx_destroy(c);
	/* drop the holes destroy left on this thread's stack */
	gs__ctx_stack_trim();
	gs__unlock();
	return CUDA_SUCCESS;
}

/* The context a ctx-taking call names: `ctx`, or the current one. */
static CUresult ctx_or_current(CUcontext ctx, struct gs__ctx **out)
{
	if (ctx == NULL) {
		struct gs__ctx *c = gs__ctx_current();

		if (c == NULL) {
			c = gs__ctx_top();
			return c != NULL && c->primary
			           ? CUDA_ERROR_CONTEXT_IS_DESTROYED
			           : CUDA_ERROR_INVALID_CONTEXT;
		}
		*out = c;
		return CUDA_SUCCESS;
	}
	if (!gs__h_is(ctx, GS__H_CTX))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (((struct gs__ctx *)ctx)->destroyed)
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	*out = (struct gs__ctx *)ctx;
	return CUDA_SUCCESS;
}

CUresult gs__cuCtxGetDevice_v1(CUdevice *device)
{
	struct gs__ctx *c;
	CUresult r;

	if (device == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = ctx_or_current(NULL, &c);
	if (r == CUDA_SUCCESS)
		*device = c->dev;
	gs__unlock();
	return r;
}

CUresult gs__cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	struct gs__ctx *c;
	CUresult r;

	if (device == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = ctx_or_current(ctx, &c);
	if (r == CUDA_SUCCESS)
		*device = c->dev;
	gs__unlock();
	return r;
}

CUresult gs__ctx_sync(CUcontext ctx)
{
	struct gs__ctx *c;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = ctx_or_current(ctx, &c);
	if (r == CUDA_SUCCESS)
		r = gs__ctx_error(c);
	if (r == CUDA_SUCCESS)
		r = gs__wait(c, c->last);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuCtxSynchronize(void)
{
	return gs__ctx_sync(NULL);
}

CUresult CUDAAPI cuCtxGetFlags(unsigned int *flags)
{
	struct gs__ctx *c;
	CUresult r;

	if (flags == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = ctx_or_current(NULL, &c);
	if (r == CUDA_SUCCESS)
		*flags = c->flags;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuCtxSetFlags(unsigned int flags)
{
	struct gs__ctx *c;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = ctx_or_current(NULL, &c);
	if (r == CUDA_SUCCESS)
		c->flags = flags;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
	struct gs__ctx *c;
	CUresult r;

	if (ctxId == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = ctx_or_current(ctx, &c);
	if (r == CUDA_SUCCESS)
		*ctxId = c->id;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
	struct gs__ctx *c;
	CUresult r;

	if (version == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = ctx_or_current(ctx, &c);
	if (r == CUDA_SUCCESS)
		*version = 3020;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
	struct gs__ctx *c;
	CUresult r;

	if (pvalue == NULL || (unsigned)limit >= 8)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = ctx_or_current(NULL, &c);
	if (r == CUDA_SUCCESS)
		*pvalue = c->limits[limit];
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value)
{
	struct gs__ctx *c;
	CUresult r;

	if ((unsigned)limit >= 8)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = ctx_or_current(NULL, &c);
	if (r == CUDA_SUCCESS)
		c->limits[limit] = value;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
	struct gs__ctx *c;
	CUresult r;

	if (pconfig == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = ctx_or_current(NULL, &c);
	if (r == CUDA_SUCCESS)
		*pconfig = c->cache_config;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuCtxSetCacheConfig(CUfunc_cache config)
{
	struct gs__ctx *c;
	CUresult r;

	if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = ctx_or_current(NULL, &c);
	if (r == CUDA_SUCCESS)
		c->cache_config = config;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *leastPriority,
                                             int *greatestPriority)
{
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (gs__ctx_current() == NULL)
		r = CUDA_ERROR_INVALID_CONTEXT;
	gs__unlock();
	if (r != CUDA_SUCCESS)
		return r;
	if (leastPriority != NULL)
		*leastPriority = 0;
	if (greatestPriority != NULL)
		*greatestPriority = -5;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxResetPersistingL2Cache(void)
{
	struct gs__ctx *c;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = ctx_or_current(NULL, &c);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peerContext,
                                       unsigned int Flags)
{
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__h_is(peerContext, GS__H_CTX)
	        ? CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
	        : CUDA_ERROR_INVALID_CONTEXT;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuCtxDisablePeerAccess(CUcontext peerContext)
{
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__h_is(peerContext, GS__H_CTX)
	        ? CUDA_ERROR_PEER_ACCESS_NOT_ENABLED
	        : CUDA_ERROR_INVALID_CONTEXT;
	gs__unlock();
	return r;
}

/* ---- primary contexts ------------------------------------------------ */

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	struct gs__dev *d;
	CUresult r;

	if (pctx == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	d = gs__dev_get(dev);
	if (d == NULL) {
		r = CUDA_ERROR_INVALID_DEVICE;
	} else if (gs__primary_get(dev) == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else if (d->primary->tearing) {
		/* another thread is resetting it right now */
		r = CUDA_ERROR_CONTEXT_IS_DESTROYED;
	} else if (d->primary->destroyed) {
		r = primary_activate(d->primary);
	} else {
		d->primary->refs++;
	}
	if (r == CUDA_SUCCESS)
		*pctx = (CUcontext)d->primary;
	gs__unlock();
	return r;
}

CUresult gs__primary_release(CUdevice dev)
{
	struct gs__dev *d;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	d = gs__dev_get(dev);
	if (d == NULL)
		r = CUDA_ERROR_INVALID_DEVICE;
	else if (d->primary == NULL || d->primary->destroyed ||
	         d->primary->tearing)
		r = CUDA_ERROR_INVALID_CONTEXT;
	else if (--d->primary->refs <= 0)
		gs__ctx_destroy(d->primary);
	gs__unlock();
	return r;
}

CUresult gs__primary_reset(CUdevice dev)
{
	struct gs__dev *d;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	d = gs__dev_get(dev);
	if (d == NULL)
		r = CUDA_ERROR_INVALID_DEVICE;
	else if (d->primary == NULL || d->primary->tearing)
		; /* nothing retained, or being reset already */
	else if (!d->primary->destroyed)
		gs__ctx_destroy(d->primary);
	else
		gs__cls_flush(d->primary);
	gs__unlock();
	return r;
}

CUresult gs__primary_set_flags(CUdevice dev, unsigned int flags)
{
	struct gs__dev *d;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	d = gs__dev_get(dev);
	if (d == NULL) {
		r = CUDA_ERROR_INVALID_DEVICE;
	} else {
		d->primary_flags = flags;
		if (d->primary != NULL)
			d->primary->flags = flags;
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	return gs__primary_release(dev);
}

CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	return gs__primary_reset(dev);
}

CUresult CUDAAPI cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
	return gs__primary_set_flags(dev, flags);
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags,
                                            int *active)
{
	struct gs__dev *d;
	CUresult r;

	if (flags == NULL || active == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	d = gs__dev_get(dev);
	if (d == NULL) {
		r = CUDA_ERROR_INVALID_DEVICE;
	} else {
		*flags = d->primary_flags;
		*active = d->primary != NULL && !d->primary->destroyed;
	}
	gs__unlock();
	return r;
}
