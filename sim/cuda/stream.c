/*
 * stream.c - streams and events of the sim driver: create, destroy,
 * synchronize, query, wait on events and the stream attribute queries;
 * events record a marker op on the timeline (timeline.c) and read its end
 * time when it is done.
 *
 * Every op a process queues goes into its slot's ring in the node state;
 * the ops of one slot run one after another in launch order (all streams
 * of all its contexts on that device), which is one valid execution of
 * CUDA's stream semantics (work on different streams may run in any
 * order, including this one). A stream remembers the number of its last
 * op; it is done when the slot's ring_head has passed it.
 */
#include "cuda_int.h"
#include "halloc.h"

#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- streams ------------------------------------------------------------- */

CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream,
                                            unsigned int flags, int priority)
{
	struct gs__ctx *ctx;
	struct gs__stream *s;
	CUresult r;

	if (phStream == NULL || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__ctx_get(&ctx);
	if (r != CUDA_SUCCESS)
		goto out;
	s = gs__calloc(1, sizeof(*s));
	if (s == NULL || !gs__h_add(s, GS__H_STREAM)) {
		free(s);
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	s->ctx = ctx;
	s->flags = flags;
	/* priorities run from 0 (least) to -5 (greatest); clamped */
	s->priority = priority > 0 ? 0 : priority < -5 ? -5 : priority;
	s->id = ++gs__drv.next_id;
	s->last = ctx->last;
	*phStream = (CUstream)s;
out:
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	return cuStreamCreateWithPriority(phStream, Flags, 0);
}

CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(hStream, GS__H_STREAM)) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else {
		struct gs__stream *s = (struct gs__stream *)hStream;

		/* queued work still runs; only the handle goes */
		if (s->capture != NULL)
			r = gs__capture_stream_gone(s);
		gs__h_del(s);
		free(s);
	}
	gs__unlock();
	return r;
}

CUresult gs__stream_sync(CUstream hStream, bool pt)
{
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__stream_get(hStream, pt, &ctx, &s);
	if (r == CUDA_SUCCESS && s->capture != NULL) {
		/* a capturing stream cannot be waited for: the capture is
		 * lost, as with the real driver */
		gs__capture_invalidate(s,
		                       CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
		r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	if (r == CUDA_SUCCESS)
		r = gs__wait(ctx, gs__stream_target(s));
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
	return gs__stream_sync(hStream, false);
}

CUresult gs__stream_query(CUstream hStream, bool pt)
{
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	bool done = false;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__stream_get(hStream, pt, &ctx, &s);
	if (r == CUDA_SUCCESS && s->capture != NULL) {
		gs__capture_invalidate(s,
		                       CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
		r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	if (r == CUDA_SUCCESS)
		r = gs__done(ctx, gs__stream_target(s), &done);
	gs__unlock();
	if (r == CUDA_SUCCESS && !done)
		r = CUDA_ERROR_NOT_READY;
	return r;
}

CUresult CUDAAPI cuStreamQuery(CUstream hStream)
{
	return gs__stream_query(hStream, false);
}

CUresult gs__stream_wait_event(CUstream hStream, CUevent hEvent,
                               unsigned int Flags, bool pt)
{
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__stream_get(hStream, pt, &ctx, &s);
	if (r == CUDA_SUCCESS && !gs__h_is(hEvent, GS__H_EVENT))
		r = CUDA_ERROR_INVALID_HANDLE;
	/* in a capture (either side): an edge of the graph */
	if (r == CUDA_SUCCESS &&
	    (s->capture != NULL || ((struct gs__event *)hEvent)->cap_id)) {
		r = gs__capture_event_wait(s, (struct gs__event *)hEvent);
		gs__unlock();
		return r;
	}
	/* ops of a process run in launch order, so an event recorded
	 * earlier is always reached first: nothing to queue */
	if (r == CUDA_SUCCESS) {
		struct gs__event *ev = (struct gs__event *)hEvent;

		if (ev->recorded && ev->seq > s->last && ev->ctx == ctx)
			s->last = ev->seq;
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent,
                                   unsigned int Flags)
{
	return gs__stream_wait_event(hStream, hEvent, Flags, false);
}

/* Common body of the stream getters. */
CUresult gs__stream_peek(CUstream h, bool pt, struct gs__ctx **ctx,
                         struct gs__stream **s)
{
	CUresult r = gs__enter();

	if (r != CUDA_SUCCESS)
		return r;
	r = gs__stream_get(h, pt, ctx, s);
	if (r != CUDA_SUCCESS && r != CUDA_ERROR_INVALID_HANDLE &&
	    r != CUDA_ERROR_INVALID_CONTEXT)
		r = CUDA_SUCCESS; /* getters work on a faulted context */
	if (r != CUDA_SUCCESS)
		gs__unlock();
	return r;
}

CUresult gs__stream_get_priority(CUstream hStream, int *priority, bool pt)
{
	struct gs__ctx *ctx;
	struct gs__stream *s;
	CUresult r;

	if (priority == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__stream_peek(hStream, pt, &ctx, &s)) != CUDA_SUCCESS)
		return r;
	*priority = s->priority;
	gs__unlock();
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamGetPriority(CUstream hStream, int *priority)
{
	return gs__stream_get_priority(hStream, priority, false);
}

CUresult gs__stream_get_flags(CUstream hStream, unsigned int *flags, bool pt)
{
	struct gs__ctx *ctx;
	struct gs__stream *s;
	CUresult r;

	if (flags == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__stream_peek(hStream, pt, &ctx, &s)) != CUDA_SUCCESS)
		return r;
	*flags = s->flags;
	gs__unlock();
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
	return gs__stream_get_flags(hStream, flags, false);
}

CUresult gs__stream_get_ctx(CUstream hStream, CUcontext *pctx, bool pt)
{
	struct gs__ctx *ctx;
	struct gs__stream *s;
	CUresult r;

	if (pctx == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__stream_peek(hStream, pt, &ctx, &s)) != CUDA_SUCCESS)
		return r;
	*pctx = (CUcontext)ctx;
	gs__unlock();
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
	return gs__stream_get_ctx(hStream, pctx, false);
}

CUresult CUDAAPI cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx,
                                   CUgreenCtx *pGreenCtx)
{
	CUresult r = gs__stream_get_ctx(hStream, pCtx, false);

	if (r == CUDA_SUCCESS && pGreenCtx != NULL)
		*pGreenCtx = NULL;
	return r;
}

CUresult gs__stream_get_id(CUstream hStream, unsigned long long *id, bool pt)
{
	struct gs__ctx *ctx;
	struct gs__stream *s;
	CUresult r;

	if (id == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__stream_peek(hStream, pt, &ctx, &s)) != CUDA_SUCCESS)
		return r;
	*id = s->id;
	gs__unlock();
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamGetId(CUstream hStream, unsigned long long *streamId)
{
	return gs__stream_get_id(hStream, streamId, false);
}

CUresult gs__stream_get_device(CUstream hStream, CUdevice *device, bool pt)
{
	struct gs__ctx *ctx;
	struct gs__stream *s;
	CUresult r;

	if (device == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__stream_peek(hStream, pt, &ctx, &s)) != CUDA_SUCCESS)
		return r;
	*device = ctx->dev;
	gs__unlock();
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamGetDevice(CUstream hStream, CUdevice *device)
{
	return gs__stream_get_device(hStream, device, false);
}

/* ---- events -------------------------------------------------------------- */

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	struct gs__ctx *ctx;
	struct gs__event *ev;
	CUresult r;

	if (phEvent == NULL ||
	    (Flags &
	     ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
	                 CU_EVENT_INTERPROCESS)) ||
	    ((Flags & CU_EVENT_INTERPROCESS) &&
	     !(Flags & CU_EVENT_DISABLE_TIMING)))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__ctx_get(&ctx);
	if (r != CUDA_SUCCESS)
		goto out;
	ev = gs__calloc(1, sizeof(*ev));
	if (ev == NULL || !gs__h_add(ev, GS__H_EVENT)) {
		free(ev);
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	ev->ctx = ctx;
	ev->flags = Flags;
	*phEvent = (CUevent)ev;
out:
	gs__unlock();
	return r;
}

CUresult gs__event_record(CUevent hEvent, CUstream hStream, bool pt)
{
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	struct gs__event *ev = (struct gs__event *)hEvent;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(ev, GS__H_EVENT)) {
		gs__unlock();
		return CUDA_ERROR_INVALID_HANDLE;
	}
	r = gs__stream_get(hStream, pt, &ctx, &s);
	if (r == CUDA_SUCCESS && ev->ctx != ctx)
		r = CUDA_ERROR_INVALID_HANDLE;
	if (r == CUDA_SUCCESS && s->capture != NULL) {
		/* recorded into the capture: what waits on it depends on
		 * the stream's work so far */
		r = gs__capture_event_record(s, ev);
		gs__unlock();
		return r;
	}
	if (r == CUDA_SUCCESS) {
		gs__capture_event_gone(ev); /* recorded for real again */
		r = gs__event_mark(ev, s, ctx);
	}
	gs__unlock();
	return r;
}

CUresult gs__event_mark(struct gs__event *ev, struct gs__stream *s,
                        struct gs__ctx *ctx)
{
	uint64_t seq;
	CUresult r = gs__push(ctx, 0, 0, GS_SIM_OP_MARKER,
	                      (uint64_t)(uintptr_t)ev, &seq);

	if (r == CUDA_SUCCESS) {
		ev->recorded = true;
		ev->timed = false;
		ev->seq = seq;
		s->last = seq;
		ctx->last = seq;
	}
	return r;
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
	return gs__event_record(hEvent, hStream, false);
}

CUresult CUDAAPI cuEventRecordWithFlags(CUevent hEvent, CUstream hStream,
                                        unsigned int flags)
{
	if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	return gs__event_record(hEvent, hStream, false);
}

CUresult CUDAAPI cuEventQuery(CUevent hEvent)
{
	struct gs__event *ev = (struct gs__event *)hEvent;
	bool done = true;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(ev, GS__H_EVENT))
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (ev->recorded)
		r = gs__done(ev->ctx, ev->seq, &done);
	gs__unlock();
	if (r == CUDA_SUCCESS && !done)
		r = CUDA_ERROR_NOT_READY;
	return r;
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
	struct gs__event *ev = (struct gs__event *)hEvent;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(ev, GS__H_EVENT))
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (ev->recorded)
		r = gs__wait(ev->ctx, ev->seq);
	gs__unlock();
	return r;
}

static CUresult elapsed(float *ms, CUevent hStart, CUevent hEnd)
{
	struct gs__event *a = (struct gs__event *)hStart,
	                 *b = (struct gs__event *)hEnd;
	bool da = false, db = false;
	CUresult r;

	if (ms == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(a, GS__H_EVENT) || !gs__h_is(b, GS__H_EVENT) ||
	    !a->recorded || !b->recorded ||
	    ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)) {
		gs__unlock();
		return CUDA_ERROR_INVALID_HANDLE;
	}
	r = gs__done(a->ctx, a->seq, &da);
	if (r == CUDA_SUCCESS)
		r = gs__done(b->ctx, b->seq, &db);
	if (r == CUDA_SUCCESS && (!da || !db || !a->timed || !b->timed))
		r = CUDA_ERROR_NOT_READY;
	if (r == CUDA_SUCCESS)
		*ms = (float)(((double)b->time_ns - (double)a->time_ns) / 1e6);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart,
                                       CUevent hEnd)
{
	return elapsed(pMilliseconds, hStart, hEnd);
}

CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent)
{
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(hEvent, GS__H_EVENT)) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else {
		gs__capture_event_gone((struct gs__event *)hEvent);
		gs__h_del(hEvent);
		free(hEvent);
	}
	gs__unlock();
	return r;
}
