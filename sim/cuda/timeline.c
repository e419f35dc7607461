/*
 * timeline.c - where the sim driver meets the shared timeline (sched.c):
 * resolving a CUstream (and the context it belongs to), queueing an op on
 * the process's slot, asking whether op number N is done, and waiting for
 * it. Streams, launches, copies and contexts call down into it.
 *
 * Every op a process queues goes into its slot's ring in the node state;
 * the ops of one slot run one after another in launch order (all streams
 * of all its contexts on that device), which is one valid execution of
 * CUDA's stream semantics (work on different streams may run in any
 * order, including this one). A stream remembers the number of its last
 * op; it is done when the slot's ring_head has passed it.
 *
 * Waiting: a waiter advances the timeline, and when its op is not done,
 * sleeps until the earliest time it could be (gs_sim_proc_eta) and looks
 * again, so oversleeping on a busy host delays the caller but never
 * changes what the timeline computes.
 */
#include "cuda_int.h"

#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Shortest and longest sleep of a waiter (ns). A waiter sleeps until
 * WAIT_SPIN_NS before the work's ETA and yields the CPU in a loop from
 * there: a sleeping thread wakes tens of microseconds late (timer slack,
 * the scheduler), which on the real GPU, where a synchronising thread
 * spins by default, would be idle time that does not exist. */
#define WAIT_MIN_NS 20000ULL
#define WAIT_MAX_NS 100000000ULL
#define WAIT_SPIN_NS 200000ULL

/* ---- streams: resolve -------------------------------------------------- */

CUresult gs__stream_get(CUstream s, bool per_thread, struct gs__ctx **ctx,
                        struct gs__stream **out)
{
	struct gs__ctx *c;
	CUresult r;

	if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
		r = gs__ctx_get(&c);
		if (c == NULL || r == CUDA_ERROR_INVALID_CONTEXT)
			return CUDA_ERROR_INVALID_CONTEXT;
		*ctx = c;
		if (s == CU_STREAM_PER_THREAD || (s == NULL && per_thread))
			*out = &c->per_thread;
		else
			*out = &c->legacy;
		return r;
	}
	if (!gs__h_is(s, GS__H_STREAM))
		return CUDA_ERROR_INVALID_HANDLE;
	*out = (struct gs__stream *)s;
	*ctx = (*out)->ctx;
	return gs__ctx_error(*ctx);
}

/* The op count a stream is done at: the legacy stream waits for all of
 * its context's work. */
uint64_t gs__stream_target(const struct gs__stream *s)
{
	return s == &s->ctx->legacy ? s->ctx->last : s->last;
}

/* ---- the timeline ------------------------------------------------------- */

CUresult gs__push(struct gs__ctx *ctx, uint64_t work, uint32_t sms,
                  uint32_t flags, uint64_t tag, uint64_t *seq)
{
	struct gs__dev *d = &gs__drv.dev[ctx->dev];
	struct gs_sim_state *st;
	struct gs_sim_proc *p;
	struct gs_sim_op *op;
	CUresult r;

	for (;;) {
		st = gs__state_lock(d, &r);
		if (st == NULL)
			return r;
		p = gs__slot(d);
		if (p == NULL) {
			gs__state_unlock();
			return ctx->sticky = CUDA_ERROR_DEVICE_UNAVAILABLE;
		}
		gs__harvest(d, p);
		if (p->ring_tail - p->ring_harvest < GS_SIM_RING)
			break;
		/* Queue full, as a GPU's push buffer gets: wait for one. */
		uint64_t target = p->ring_head + 1;
		gs__state_unlock();
		r = gs__wait(ctx, target);
		if (r != CUDA_SUCCESS)
			return r;
	}
	op = &p->ring[p->ring_tail % GS_SIM_RING];
	op->work = work;
	op->sms = sms;
	op->flags = flags;
	op->end_ns = 0;
	op->tag = tag;
	if (p->ring_head == p->ring_tail)
		p->head_rem = work;
	p->ring_tail++;
	*seq = p->ring_tail;
	d->last_seq = p->ring_tail;
	gs__state_unlock();
	return CUDA_SUCCESS;
}

CUresult gs__done(struct gs__ctx *ctx, uint64_t target, bool *done)
{
	struct gs__dev *d = &gs__drv.dev[ctx->dev];
	struct gs_sim_state *st;
	struct gs_sim_proc *p;
	CUresult r;

	st = gs__state_lock(d, &r);
	if (st == NULL)
		return r;
	p = gs__slot(d);
	if (p == NULL) {
		gs__state_unlock();
		return ctx->sticky = CUDA_ERROR_DEVICE_UNAVAILABLE;
	}
	gs__harvest(d, p);
	*done = p->ring_head >= target;
	gs__state_unlock();
	return gs__ctx_error(ctx);
}

CUresult gs__wait(struct gs__ctx *ctx, uint64_t target)
{
	struct gs__dev *d = &gs__drv.dev[ctx->dev];

	for (;;) {
		struct gs_sim_state *st;
		struct gs_sim_proc *p;
		struct timespec ts;
		uint64_t eta, now;
		CUresult r;

		st = gs__state_lock(d, &r);
		if (st == NULL)
			return r;
		p = gs__slot(d);
		if (p == NULL) {
			gs__state_unlock();
			return ctx->sticky = CUDA_ERROR_DEVICE_UNAVAILABLE;
		}
		gs__harvest(d, p);
		if (p->ring_head >= target) {
			gs__state_unlock();
			return gs__ctx_error(ctx);
		}
		eta = gs_sim_proc_eta(st, d->slot, target - 1);
		gs__state_unlock();
		r = gs__ctx_error(ctx);
		if (r != CUDA_SUCCESS)
			return r;

		now = gs_sim_now_ns();
		gs__unlock();
		if (eta > now && eta <= now + WAIT_SPIN_NS) {
			/* The last stretch: yield until the ETA, like the
			 * real driver's default (CU_CTX_SCHED_AUTO) spins. */
			while (gs_sim_now_ns() < eta)
				sched_yield();
		} else {
			if (eta <= now)
				eta = now + WAIT_MIN_NS;
			else
				eta -= WAIT_SPIN_NS;
			if (eta > now + WAIT_MAX_NS)
				eta = now + WAIT_MAX_NS;
			ts.tv_sec = (time_t)(eta / 1000000000ULL);
			ts.tv_nsec = (long)(eta % 1000000000ULL);
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME,
			                       &ts, NULL) != 0)
				;
		}
		gs__lock();
		if (!gs__h_is(ctx, GS__H_CTX))
			return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	}
}
