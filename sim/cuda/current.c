/*
 * current.c - the bottom of the sim driver's contexts: each thread's
 * stack of current contexts (cuCtxPush/Pop/Set/GetCurrent), the lookups
 * every call starts with (gs__ctx_current, gs__ctx_get and the sticky
 * error of a context), and the handle of a device's primary context,
 * made unretained on first lookup. Creating, retaining and tearing
 * contexts down is ctx.c's, which stands on this file.
 */
#include "cuda_int.h"
#include "halloc.h"

#include <stdlib.h>
#include <string.h>

static __thread struct gs__ctx *tls_stack[GS__CTX_STACK];
static __thread int tls_depth;

struct gs__ctx *gs__ctx_current(void)
{
	struct gs__ctx *c;

	if (tls_depth == 0)
		return NULL;
	c = tls_stack[tls_depth - 1];
	if (c == NULL || !gs__h_is(c, GS__H_CTX) || c->destroyed)
		return NULL;
	return c;
}

CUresult gs__ctx_error(struct gs__ctx *ctx)
{
	struct gs__dev *d = &gs__drv.dev[ctx->dev];

	if (ctx->sticky != CUDA_SUCCESS)
		return ctx->sticky;
	if (d->slot >= 0) {
		const struct gs_sim_proc *p = &gs__drv.st->procs[d->slot];
		int32_t e = __atomic_load_n(&p->sticky_error, __ATOMIC_RELAXED);
		uint64_t gen =
		    __atomic_load_n(&p->generation, __ATOMIC_RELAXED);

		if (gen != d->slot_gen)
			/* `gpuslice sim reset` or a reap took our slot */
			ctx->sticky = CUDA_ERROR_DEVICE_UNAVAILABLE;
		else if (e != 0)
			ctx->sticky = (CUresult)e;
	}
	return ctx->sticky;
}

struct gs__ctx *gs__ctx_top(void)
{
	struct gs__ctx *c;

	if (tls_depth == 0)
		return NULL;
	c = tls_stack[tls_depth - 1];
	return c != NULL && gs__h_is(c, GS__H_CTX) ? c : NULL;
}

CUresult gs__ctx_get(struct gs__ctx **ctx)
{
	struct gs__ctx *c = gs__ctx_current();

	if (c == NULL) {
		c = gs__ctx_top();
		/* An unretained primary context is current (as after
		 * cudaDeviceReset), the thread's one was destroyed, or none. */
		return c != NULL && c->primary ? CUDA_ERROR_CONTEXT_IS_DESTROYED
		                               : CUDA_ERROR_INVALID_CONTEXT;
	}
	*ctx = c;
	return gs__ctx_error(c);
}

struct gs__ctx *gs__primary_get(int dev)
{
	struct gs__dev *d = gs__dev_get(dev);
	struct gs__ctx *c;

	if (d == NULL)
		return NULL;
	if (d->primary != NULL)
		return d->primary;
	c = gs__calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->dev = dev;
	c->primary = true;
	c->destroyed = true;
	c->flags = d->primary_flags;
	c->legacy.ctx = c;
	c->per_thread.ctx = c;
	if (!gs__h_add(c, GS__H_CTX)) {
		free(c);
		return NULL;
	}
	/* Owned by the device for the rest of the process. */
	d->primary = c;
	return c;
}

/* Makes c current on this thread (the oldest entry goes when full). */
void gs__ctx_push(struct gs__ctx *c)
{
	if (tls_depth < GS__CTX_STACK) {
		tls_stack[tls_depth++] = c;
	} else {
		memmove(tls_stack, tls_stack + 1,
		        sizeof(tls_stack[0]) * (GS__CTX_STACK - 1));
		tls_stack[GS__CTX_STACK - 1] = c;
	}
}

/* Clears ctx from this thread's stack (it is being freed); the holes
 * stay until gs__ctx_stack_trim. */
void gs__ctx_unstack(const struct gs__ctx *ctx)
{
	for (int i = 0; i < tls_depth; i++)
		if (tls_stack[i] == ctx)
			tls_stack[i] = NULL;
}

/* Drops the holes gs__ctx_unstack left on top of this thread's stack. */
void gs__ctx_stack_trim(void)
{
	while (tls_depth > 0 && tls_stack[tls_depth - 1] == NULL)
		tls_depth--;
}

CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx)
{
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(ctx, GS__H_CTX))
		r = CUDA_ERROR_INVALID_CONTEXT;
	else
		gs__ctx_push((struct gs__ctx *)ctx);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx)
{
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (tls_depth == 0) {
		r = CUDA_ERROR_INVALID_CONTEXT;
	} else {
		struct gs__ctx *c = tls_stack[--tls_depth];

		if (pctx != NULL)
			*pctx = gs__h_is(c, GS__H_CTX) ? (CUcontext)c : NULL;
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (ctx == NULL) {
		if (tls_depth > 0)
			tls_depth--;
	} else if (!gs__h_is(ctx, GS__H_CTX)) {
		r = CUDA_ERROR_INVALID_CONTEXT;
	} else if (tls_depth == 0) {
		gs__ctx_push((struct gs__ctx *)ctx);
	} else {
		tls_stack[tls_depth - 1] = (struct gs__ctx *)ctx;
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
	CUresult r;

	if (pctx == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	/* The handle on top of the stack even when it is a primary context
	 * not retained yet (or any more), as the real driver answers: the
	 * CUDA runtime makes device d's primary context current before it
	 * retains it and reads it back here to learn its device. */
	*pctx = (CUcontext)gs__ctx_top();
	gs__unlock();
	return CUDA_SUCCESS;
}
