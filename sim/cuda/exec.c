/*
 * exec.c - execution in the sim driver: streams, events, kernel launches
 * with their cost (include/gs/kernels.h for the gs_* kernels, the PTX
 * cost model of costmodel.h for any other), faults, graphs (stream
 * capture of kernel launches), and waiting on the shared timeline
 * (sched.c).
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
 *
 * Data: the sim applies a kernel's effect on memory when it is launched
 * (gs_fill always; gs_burn, gs_matmul, gs_infer_layer only when tiny, see
 * GS__COMPUTE_EFFECT_MAX), like copies; other kernels leave memory as
 * it was. A program can only see results after synchronizing, which is
 * when the real GPU would have produced them too.
 */
#include "cuda_int.h"

#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs/kernels.h"

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
static uint64_t stream_target(const struct gs__stream *s)
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

/* ---- cost model ---------------------------------------------------------- */

static uint64_t arg_u64(const struct gs__launch *l, int i)
{
	uint64_t v = 0;

	memcpy(&v, l->args + l->func->entry->param_off[i], 8);
	return v;
}

static uint32_t arg_u32(const struct gs__launch *l, int i)
{
	uint32_t v = 0;

	memcpy(&v, l->args + l->func->entry->param_off[i], 4);
	return v;
}

static float arg_f32(const struct gs__launch *l, int i)
{
	float v = 0;

	memcpy(&v, l->args + l->func->entry->param_off[i], 4);
	return v;
}

/* Whether the launch's entry has exactly these parameter sizes. */
static bool sig(const struct gs__launch *l, const char *name, int n,
                const uint32_t *sizes)
{
	const struct gs__entry *e = l->func->entry;

	if (strcmp(e->name, name) != 0 || e->n_params != n)
		return false;
	for (int i = 0; i < n; i++)
		if (e->param_size[i] != sizes[i])
			return false;
	return true;
}

enum kernel_kind {
	K_OTHER,
	K_SPIN,
	K_MATMUL,
	K_BURN,
	K_INFER,
	K_FILL,
	K_FAULT
};

static enum kernel_kind kind_of(const struct gs__launch *l)
{
	static const uint32_t s8[] = {8}, s884[] = {8, 8, 4},
	                      s8884[] = {8, 8, 8, 4},
	                      s88844[] = {8, 8, 8, 4, 4};

	if (sig(l, GS_KERNEL_SPIN, 1, s8))
		return K_SPIN;
	if (sig(l, GS_KERNEL_MATMUL, 4, s8884))
		return K_MATMUL;
	if (sig(l, GS_KERNEL_BURN, 3, s884))
		return K_BURN;
	if (sig(l, GS_KERNEL_INFER_LAYER, 5, s88844))
		return K_INFER;
	if (sig(l, GS_KERNEL_FILL, 3, s884))
		return K_FILL;
	if (sig(l, GS_KERNEL_FAULT, 1, s8))
		return K_FAULT;
	return K_OTHER;
}

/*
 * The duration (ns) and SM count of a launch given `avail` SMs, from the
 * cost model of include/gs/kernels.h.
 */
static void cost(const struct gs__launch *l, enum kernel_kind k, uint32_t avail,
                 uint64_t *dur, uint32_t *sms)
{
	uint64_t blocks = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
	uint64_t use = blocks < avail ? blocks : avail;
	double flop = 0, bytes = 0;

	if (use == 0)
		use = 1;
	*sms = (uint32_t)use;
	switch (k) {
	case K_SPIN: {
		uint64_t waves = (blocks + avail - 1) / (avail ? avail : 1);
		*dur = arg_u64(l, 0) * (waves ? waves : 1);
		return;
	}
	case K_MATMUL: {
		int32_t n = (int32_t)arg_u32(l, 3);
		double dn = n > 0 ? n : 0;
		flop = 2.0 * dn * dn * dn;
		break;
	}
	case K_BURN:
		flop = 2.0 * (double)arg_u64(l, 1) * (double)arg_u32(l, 2);
		break;
	case K_INFER: {
		int32_t b = (int32_t)arg_u32(l, 3), w = (int32_t)arg_u32(l, 4);
		flop = 2.0 * (b > 0 ? b : 0) * (double)(w > 0 ? w : 0) *
		       (w > 0 ? w : 0);
		break;
	}
	case K_FILL:
		bytes = 4.0 * (double)arg_u64(l, 1);
		break;
	case K_FAULT:
		*dur = GS_SIM_MIN_KERNEL_NS;
		return;
	case K_OTHER:
		*dur = GS_SIM_DEFAULT_KERNEL_NS;
		return;
	}
	double ns = flop / ((double)use * GS_SIM_FLOPS_PER_SM_NS) +
	            bytes / ((double)use * GS_SIM_BYTES_PER_SM_NS);
	*dur = ns > 1e18 ? (uint64_t)1e18 : (uint64_t)ns;
	if (*dur < GS_SIM_MIN_KERNEL_NS)
		*dur = GS_SIM_MIN_KERNEL_NS;
}

/* A backed float range we may compute into, or NULL. */
static float *floats(uint64_t p, uint64_t n)
{
	struct gs__alloc *a;

	if (n == 0 || n > (1ULL << 40))
		return NULL;
	a = gs__alloc_find(p, n * 4);
	if (a == NULL || !a->backed || a->kind == GS__A_RESERVE)
		return NULL;
	return (float *)(uintptr_t)p;
}

/* Applies a small kernel's effect on memory (see the file comment). */
static void data_effect(const struct gs__launch *l, enum kernel_kind k)
{
	switch (k) {
	case K_FILL: {
		uint64_t n = arg_u64(l, 1);
		float v = arg_f32(l, 2), *buf = floats(arg_u64(l, 0), n);

		if (buf != NULL && n <= GS__DATA_EFFECT_MAX)
			for (uint64_t i = 0; i < n; i++)
				buf[i] = v;
		break;
	}
	case K_BURN: {
		uint64_t n = arg_u64(l, 1);
		uint32_t it = arg_u32(l, 2);
		float *buf = floats(arg_u64(l, 0), n);

		if (buf != NULL && n * (uint64_t)it <= GS__COMPUTE_EFFECT_MAX)
			for (uint64_t i = 0; i < n; i++) {
				float x = buf[i];
				for (uint32_t j = 0; j < it; j++)
					x = fmaf(x, 0.999f, 0.001f);
				buf[i] = x;
			}
		break;
	}
	case K_MATMUL: {
		int32_t n = (int32_t)arg_u32(l, 3);
		uint64_t nn = n > 0 ? (uint64_t)n * (uint64_t)n : 0;
		float *A = floats(arg_u64(l, 0), nn),
		      *B = floats(arg_u64(l, 1), nn),
		      *C = floats(arg_u64(l, 2), nn);

		if (A && B && C && nn * (uint64_t)n <= GS__COMPUTE_EFFECT_MAX)
			for (int32_t i = 0; i < n; i++)
				for (int32_t j = 0; j < n; j++) {
					float acc = 0;
					for (int32_t q = 0; q < n; q++)
						acc = fmaf(
						    A[(size_t)i * (size_t)n +
						      (size_t)q],
						    B[(size_t)q * (size_t)n +
						      (size_t)j],
						    acc);
					C[(size_t)i * (size_t)n + (size_t)j] =
					    acc;
				}
		break;
	}
	case K_INFER: {
		int32_t b = (int32_t)arg_u32(l, 3), w = (int32_t)arg_u32(l, 4);
		uint64_t bw = b > 0 && w > 0 ? (uint64_t)b * (uint64_t)w : 0;
		float *in = floats(arg_u64(l, 0), bw),
		      *wt = floats(arg_u64(l, 1), (uint64_t)w * (uint64_t)w),
		      *out = floats(arg_u64(l, 2), bw);

		if (in && wt && out &&
		    bw * (uint64_t)w <= GS__COMPUTE_EFFECT_MAX)
			for (int32_t i = 0; i < b; i++)
				for (int32_t j = 0; j < w; j++) {
					float acc = 0;
					for (int32_t q = 0; q < w; q++)
						acc = fmaf(
						    in[(size_t)i * (size_t)w +
						       (size_t)q],
						    wt[(size_t)q * (size_t)w +
						       (size_t)j],
						    acc);
					out[(size_t)i * (size_t)w + (size_t)j] =
					    acc > 0 ? acc : 0;
				}
		break;
	}
	default:
		break;
	}
}

/*
 * A gs_fault store to `p` in ctx: faults unless p lies in a live
 * allocation the context can reach. The fault makes the context's error
 * sticky (CUDA_ERROR_ILLEGAL_ADDRESS) and posts Xid 31 for the GPU; an MPS
 * client's fault reaches every client of its server, which goes to FAULT.
 * Work the faulted contexts had queued is dropped.
 */
static void maybe_fault(struct gs__ctx *ctx, uint64_t p)
{
	struct gs__alloc *a = gs__alloc_find(p, 4);
	struct gs__dev *d = &gs__drv.dev[ctx->dev];
	struct gs_sim_state *st;
	struct gs_sim_proc *me;
	uint64_t now;
	CUresult r;

	if (a != NULL && a->kind != GS__A_RESERVE &&
	    (a->ctx == ctx || a->kind == GS__A_VMM_MAP ||
	     a->kind == GS__A_HOST || a->kind == GS__A_REGISTERED))
		return;
	ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
	st = gs__state_lock(d, &r);
	if (st == NULL)
		return;
	now = gs_sim_now_ns();
	gs_sim_xid_post(st, d->gpu, 31, d->engine, gs__drv.pid, now);
	gs__kmsg_xid(d->gpu, 31);
	me = gs__slot(d);
	if (me != NULL && (me->flags & GS_SIM_PROC_MPS_CLIENT)) {
		struct gs_sim_engine *e = &st->gpus[d->gpu].engine[d->engine];

		e->mps.state = GS_SIM_MPS_FAULT;
		e->mps.fault_ns = now;
		for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
			struct gs_sim_proc *q = &st->procs[i];

			if (q->state != GS_SIM_PROC_LIVE || q->gpu != d->gpu ||
			    q->engine != d->engine ||
			    !(q->flags & GS_SIM_PROC_MPS_CLIENT))
				continue;
			__atomic_store_n(&q->sticky_error,
			                 (int32_t)CUDA_ERROR_ILLEGAL_ADDRESS,
			                 __ATOMIC_RELAXED);
			q->ring_head = q->ring_tail;
			q->head_rem = 0;
		}
	} else if (me != NULL) {
		me->ring_head = me->ring_tail;
		me->head_rem = 0;
	}
	gs__state_unlock();
}

/* ---- launches ------------------------------------------------------------ */

void gs__launch_free(struct gs__launch *l)
{
	free(l->args);
	l->args = NULL;
}

CUresult gs__launch_build(CUfunction f, const unsigned int grid[3],
                          const unsigned int block[3], unsigned int smem,
                          void **params, void **extra, struct gs__launch *out)
{
	struct gs__func *fn;
	const struct gs__entry *e;
	CUresult r;

	memset(out, 0, sizeof(*out));
	r = gs__func_get(f, &fn);
	if (r != CUDA_SUCCESS)
		return r;
	e = fn->entry;
	if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 ||
	    grid[0] > 2147483647u || grid[1] > 65535 || grid[2] > 65535 ||
	    block[0] == 0 || block[1] == 0 || block[2] == 0 ||
	    block[0] > 1024 || block[1] > 1024 || block[2] > 64 ||
	    (uint64_t)block[0] * block[1] * block[2] > e->max_threads ||
	    smem > (unsigned)fn->max_dyn_smem)
		return CUDA_ERROR_INVALID_VALUE;
	out->func = fn;
	memcpy(out->grid, grid, sizeof(out->grid));
	memcpy(out->block, block, sizeof(out->block));
	out->smem = smem;
	out->args_size = e->args_size;
	out->args = calloc(1, e->args_size ? e->args_size : 1);
	if (out->args == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (params != NULL) {
		for (int i = 0; i < e->n_params; i++) {
			if (params[i] == NULL) {
				gs__launch_free(out);
				return CUDA_ERROR_INVALID_VALUE;
			}
			memcpy(out->args + e->param_off[i], params[i],
			       e->param_size[i]);
		}
	} else if (extra != NULL) {
		const void *buf = NULL;
		size_t len = 0;

		for (int i = 0; i < 64 && extra[i] != CU_LAUNCH_PARAM_END;
		     i += 2) {
			if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
				buf = extra[i + 1];
			else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE &&
			         extra[i + 1] != NULL)
				len = *(size_t *)extra[i + 1];
			else {
				gs__launch_free(out);
				return CUDA_ERROR_INVALID_VALUE;
			}
		}
		if (buf == NULL || len < e->args_size) {
			gs__launch_free(out);
			return CUDA_ERROR_INVALID_VALUE;
		}
		memcpy(out->args, buf, e->args_size);
	} else if (e->n_params > 0) {
		gs__launch_free(out);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

static CUresult capture_add(struct gs__graph *g, struct gs__node *n);

CUresult gs__launch(struct gs__launch *l, struct gs__stream *s,
                    struct gs__ctx *ctx)
{
	struct gs__dev *d = &gs__drv.dev[ctx->dev];
	enum kernel_kind k;
	uint64_t dur, seq;
	uint32_t sms;
	CUresult r;

	if (s->capture != NULL) {
		struct gs__node *n = calloc(1, sizeof(*n));

		if (n == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		n->kind = GS__N_KERNEL;
		n->launch = *l;
		n->launch.args = malloc(l->args_size ? l->args_size : 1);
		if (n->launch.args == NULL) {
			free(n);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		memcpy(n->launch.args, l->args, l->args_size);
		r = capture_add(s->capture, n);
		if (r != CUDA_SUCCESS)
			gs__graph_node_free(n);
		return r;
	}
	k = kind_of(l);
	if (k == K_FAULT) {
		maybe_fault(ctx, arg_u64(l, 0));
		if (ctx->sticky != CUDA_SUCCESS)
			return CUDA_SUCCESS; /* reported by the next call */
	}
	if (k == K_OTHER)
		gs__kernel_cost(l, d, &dur, &sms); /* costmodel.h */
	else
		cost(l, k, d->sm_count, &dur, &sms);
	data_effect(l, k);
	r = gs__push(ctx, dur * sms, sms, GS_SIM_OP_KERNEL, 0, &seq);
	if (r != CUDA_SUCCESS)
		return r;
	s->last = seq;
	ctx->last = seq;
	return CUDA_SUCCESS;
}

CUresult gs__launch_kernel(CUfunction f, unsigned int gx, unsigned int gy,
                           unsigned int gz, unsigned int bx, unsigned int by,
                           unsigned int bz, unsigned int smem, CUstream hStream,
                           void **kernelParams, void **extra, bool pt)
{
	const unsigned int grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	struct gs__launch l;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__stream_get(hStream, pt, &ctx, &s);
	if (r == CUDA_SUCCESS)
		r = gs__launch_build(f, grid, block, smem, kernelParams, extra,
		                     &l);
	if (r == CUDA_SUCCESS) {
		r = gs__launch(&l, s, ctx);
		gs__launch_free(&l);
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX,
                                unsigned int gridDimY, unsigned int gridDimZ,
                                unsigned int blockDimX, unsigned int blockDimY,
                                unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream,
                                void **kernelParams, void **extra)
{
	return gs__launch_kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX,
	                         blockDimY, blockDimZ, sharedMemBytes, hStream,
	                         kernelParams, extra, false);
}

CUresult CUDAAPI cuLaunchCooperativeKernel(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
    unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
    unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
    void **kernelParams)
{
	return gs__launch_kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX,
	                         blockDimY, blockDimZ, sharedMemBytes, hStream,
	                         kernelParams, NULL, false);
}

CUresult gs__launch_kernel_ex(const CUlaunchConfig *config, CUfunction f,
                              void **kernelParams, void **extra, bool pt)
{
	if (config == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return gs__launch_kernel(
	    f, config->gridDimX, config->gridDimY, config->gridDimZ,
	    config->blockDimX, config->blockDimY, config->blockDimZ,
	    config->sharedMemBytes, config->hStream, kernelParams, extra, pt);
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                  void **kernelParams, void **extra)
{
	return gs__launch_kernel_ex(config, f, kernelParams, extra, false);
}

/* Runs fn once the stream's work is done (the calling thread waits). */
CUresult gs__host_func(CUstream hStream, CUhostFn fn, void *userData,
                       CUstreamCallback cb, bool pt)
{
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	CUresult r, status;

	if (fn == NULL && cb == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__stream_get(hStream, pt, &ctx, &s);
	if (r == CUDA_SUCCESS && s->capture != NULL)
		r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (r != CUDA_SUCCESS) {
		gs__unlock();
		return r;
	}
	status = gs__wait(ctx, stream_target(s));
	gs__unlock();
	if (fn != NULL) {
		if (status == CUDA_SUCCESS)
			fn(userData);
		return status;
	}
	cb(hStream, status, userData);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
	return gs__host_func(hStream, fn, userData, NULL, false);
}

CUresult CUDAAPI cuStreamAddCallback(CUstream hStream,
                                     CUstreamCallback callback, void *userData,
                                     unsigned int flags)
{
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return gs__host_func(hStream, NULL, userData, callback, false);
}

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
	s = calloc(1, sizeof(*s));
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
			r = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
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
	if (r == CUDA_SUCCESS && s->capture != NULL)
		r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (r == CUDA_SUCCESS)
		r = gs__wait(ctx, stream_target(s));
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
	if (r == CUDA_SUCCESS && s->capture != NULL)
		r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (r == CUDA_SUCCESS)
		r = gs__done(ctx, stream_target(s), &done);
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
static CUresult stream_peek(CUstream h, bool pt, struct gs__ctx **ctx,
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
	if ((r = stream_peek(hStream, pt, &ctx, &s)) != CUDA_SUCCESS)
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
	if ((r = stream_peek(hStream, pt, &ctx, &s)) != CUDA_SUCCESS)
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
	if ((r = stream_peek(hStream, pt, &ctx, &s)) != CUDA_SUCCESS)
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
	if ((r = stream_peek(hStream, pt, &ctx, &s)) != CUDA_SUCCESS)
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
	if ((r = stream_peek(hStream, pt, &ctx, &s)) != CUDA_SUCCESS)
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
	ev = calloc(1, sizeof(*ev));
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
	uint64_t seq;
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
		gs__unlock(); /* recorded into the graph: no timing */
		return CUDA_SUCCESS;
	}
	if (r == CUDA_SUCCESS)
		r = gs__push(ctx, 0, 0, GS_SIM_OP_MARKER,
		             (uint64_t)(uintptr_t)ev, &seq);
	if (r == CUDA_SUCCESS) {
		ev->recorded = true;
		ev->timed = false;
		ev->seq = seq;
		s->last = seq;
		ctx->last = seq;
	}
	gs__unlock();
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
		gs__h_del(hEvent);
		free(hEvent);
	}
	gs__unlock();
	return r;
}

/* ---- graphs -------------------------------------------------------------- */

void gs__graph_node_free(struct gs__node *n)
{
	if (n == NULL)
		return;
	gs__h_del(n);
	gs__launch_free(&n->launch);
	free(n);
}

static CUresult capture_add(struct gs__graph *g, struct gs__node *n)
{
	if (g->n_nodes == g->cap) {
		int ncap = g->cap ? g->cap * 2 : 16;
		struct gs__node **nn =
		    realloc(g->nodes, sizeof(*nn) * (size_t)ncap);

		if (nn == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		g->nodes = nn;
		g->cap = ncap;
	}
	if (!gs__h_add(n, GS__H_GRAPH_NODE))
		return CUDA_ERROR_OUT_OF_MEMORY;
	n->graph = g;
	g->nodes[g->n_nodes++] = n;
	return CUDA_SUCCESS;
}

static void graph_free(struct gs__graph *g)
{
	for (int i = 0; i < g->n_nodes; i++)
		gs__graph_node_free(g->nodes[i]);
	free(g->nodes);
	gs__h_del(g);
	free(g);
}

static struct gs__graph *graph_new(void)
{
	struct gs__graph *g = calloc(1, sizeof(*g));

	if (g != NULL && !gs__h_add(g, GS__H_GRAPH)) {
		free(g);
		g = NULL;
	}
	return g;
}

CUresult CUDAAPI cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	struct gs__graph *g;
	CUresult r;

	if (phGraph == NULL || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	g = graph_new();
	if (g == NULL)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	else
		*phGraph = (CUgraph)g;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph)
{
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(hGraph, GS__H_GRAPH))
		r = CUDA_ERROR_INVALID_VALUE;
	else
		graph_free((struct gs__graph *)hGraph);
	gs__unlock();
	return r;
}

static CUresult add_node(CUgraphNode *out, CUgraph hGraph,
                         const CUgraphNode *deps, size_t ndeps,
                         struct gs__node *n)
{
	CUresult r;

	if (!gs__h_is(hGraph, GS__H_GRAPH))
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < ndeps; i++)
		if (deps == NULL || !gs__h_is(deps[i], GS__H_GRAPH_NODE))
			return CUDA_ERROR_INVALID_VALUE;
	r = capture_add((struct gs__graph *)hGraph, n);
	if (r == CUDA_SUCCESS)
		*out = (CUgraphNode)n;
	return r;
}

CUresult CUDAAPI cuGraphAddKernelNode_v2(
    CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
    size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	struct gs__node *n;
	CUresult r;

	if (phGraphNode == NULL || nodeParams == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = calloc(1, sizeof(*n));
	if (n == NULL) {
		gs__unlock();
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	{
		const unsigned int grid[3] = {nodeParams->gridDimX,
		                              nodeParams->gridDimY,
		                              nodeParams->gridDimZ};
		const unsigned int block[3] = {nodeParams->blockDimX,
		                               nodeParams->blockDimY,
		                               nodeParams->blockDimZ};
		CUfunction f = nodeParams->func ? nodeParams->func
		                                : (CUfunction)nodeParams->kern;

		r = gs__launch_build(f, grid, block, nodeParams->sharedMemBytes,
		                     nodeParams->kernelParams,
		                     nodeParams->extra, &n->launch);
	}
	n->kind = GS__N_KERNEL;
	if (r == CUDA_SUCCESS)
		r = add_node(phGraphNode, hGraph, dependencies, numDependencies,
		             n);
	if (r != CUDA_SUCCESS) {
		gs__launch_free(&n->launch);
		free(n);
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                     const CUgraphNode *dependencies,
                                     size_t numDependencies)
{
	struct gs__node *n;
	CUresult r;

	if (phGraphNode == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = calloc(1, sizeof(*n));
	if (n == NULL)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	else {
		n->kind = GS__N_EMPTY;
		r = add_node(phGraphNode, hGraph, dependencies, numDependencies,
		             n);
		if (r != CUDA_SUCCESS)
			free(n);
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI
cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                     const CUgraphNode *dependencies, size_t numDependencies,
                     const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx)
{
	struct gs__node *n;
	CUresult r;

	if (phGraphNode == NULL || memsetParams == NULL ||
	    (memsetParams->elementSize != 1 && memsetParams->elementSize != 2 &&
	     memsetParams->elementSize != 4))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = calloc(1, sizeof(*n));
	if (n == NULL)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	else {
		n->kind = GS__N_MEMSET;
		n->memset = *memsetParams;
		r = add_node(phGraphNode, hGraph, dependencies, numDependencies,
		             n);
		if (r != CUDA_SUCCESS)
			free(n);
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes,
                                 size_t *numNodes)
{
	struct gs__graph *g = (struct gs__graph *)hGraph;
	CUresult r;

	if (numNodes == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(g, GS__H_GRAPH)) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else if (nodes == NULL) {
		*numNodes = (size_t)g->n_nodes;
	} else {
		size_t n = *numNodes < (size_t)g->n_nodes ? *numNodes
		                                          : (size_t)g->n_nodes;
		for (size_t i = 0; i < n; i++)
			nodes[i] = (CUgraphNode)g->nodes[i];
		for (size_t i = n; i < *numNodes; i++)
			nodes[i] = NULL;
		*numNodes = n;
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
	struct gs__node *n = (struct gs__node *)hNode;
	CUresult r;

	if (type == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(n, GS__H_GRAPH_NODE))
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*type = n->kind == GS__N_KERNEL   ? CU_GRAPH_NODE_TYPE_KERNEL
		        : n->kind == GS__N_MEMSET ? CU_GRAPH_NODE_TYPE_MEMSET
		        : n->kind == GS__N_MEMCPY ? CU_GRAPH_NODE_TYPE_MEMCPY
		                                  : CU_GRAPH_NODE_TYPE_EMPTY;
	gs__unlock();
	return r;
}

static CUresult instantiate(CUgraphExec *out, CUgraph hGraph,
                            unsigned long long flags)
{
	struct gs__graph *g = (struct gs__graph *)hGraph;
	struct gs__graph_exec *x;
	CUresult r;

	if (out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(g, GS__H_GRAPH)) {
		gs__unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	x = calloc(1, sizeof(*x));
	if (x != NULL)
		x->nodes = calloc((size_t)(g->n_nodes ? g->n_nodes : 1),
		                  sizeof(*x->nodes));
	if (x == NULL || x->nodes == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_free;
	}
	x->flags = flags;
	for (int i = 0; i < g->n_nodes; i++) {
		struct gs__node *src = g->nodes[i], *dst = &x->nodes[i];

		*dst = *src;
		dst->launch.args = NULL;
		if (src->kind == GS__N_KERNEL) {
			dst->launch.args = malloc(
			    src->launch.args_size ? src->launch.args_size : 1);
			if (dst->launch.args == NULL) {
				r = CUDA_ERROR_OUT_OF_MEMORY;
				x->n = i;
				goto out_free;
			}
			memcpy(dst->launch.args, src->launch.args,
			       src->launch.args_size);
		}
	}
	x->n = g->n_nodes;
	if (!gs__h_add(x, GS__H_GRAPH_EXEC)) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_free;
	}
	*out = (CUgraphExec)x;
	gs__unlock();
	return CUDA_SUCCESS;

out_free:
	if (x != NULL) {
		for (int i = 0; i < x->n; i++)
			gs__launch_free(&x->nodes[i].launch);
		free(x->nodes);
		free(x);
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec,
                                             CUgraph hGraph,
                                             unsigned long long flags)
{
	return instantiate(phGraphExec, hGraph, flags);
}

CUresult gs__graph_instantiate_legacy(CUgraphExec *phGraphExec, CUgraph hGraph,
                                      CUgraphNode *phErrorNode, char *logBuffer,
                                      size_t bufferSize)
{
	if (phErrorNode != NULL)
		*phErrorNode = NULL;
	if (logBuffer != NULL && bufferSize > 0)
		logBuffer[0] = '\0';
	return instantiate(phGraphExec, hGraph, 0);
}

CUresult gs__graph_instantiate_params(CUgraphExec *phGraphExec, CUgraph hGraph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS *params,
                                      bool pt)
{
	CUresult r;

	if (params == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	r = instantiate(phGraphExec, hGraph, params->flags);
	params->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS
	                                       : CUDA_GRAPH_INSTANTIATE_ERROR;
	params->hErrNode_out = NULL;
	return r;
}

CUresult CUDAAPI
cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                             CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	return gs__graph_instantiate_params(phGraphExec, hGraph,
	                                    instantiateParams, false);
}

CUresult CUDAAPI cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t *flags)
{
	CUresult r;

	if (flags == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(hGraphExec, GS__H_GRAPH_EXEC))
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*flags = ((struct gs__graph_exec *)hGraphExec)->flags;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	struct gs__graph_exec *x = (struct gs__graph_exec *)hGraphExec;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(x, GS__H_GRAPH_EXEC)) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		for (int i = 0; i < x->n; i++)
			gs__launch_free(&x->nodes[i].launch);
		free(x->nodes);
		gs__h_del(x);
		free(x);
	}
	gs__unlock();
	return r;
}

CUresult gs__graph_launch(CUgraphExec hGraphExec, CUstream hStream,
                          bool upload_only, bool pt)
{
	struct gs__graph_exec *x = (struct gs__graph_exec *)hGraphExec;
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(x, GS__H_GRAPH_EXEC)) {
		gs__unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	r = gs__stream_get(hStream, pt, &ctx, &s);
	if (r == CUDA_SUCCESS && s->capture != NULL)
		r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	for (int i = 0; !upload_only && r == CUDA_SUCCESS && i < x->n; i++) {
		struct gs__node *n = &x->nodes[i];

		if (!gs__h_is(x, GS__H_GRAPH_EXEC)) {
			r = CUDA_ERROR_INVALID_VALUE; /* destroyed meanwhile */
			break;
		}
		if (n->kind == GS__N_KERNEL) {
			if (!gs__h_is(n->launch.func, GS__H_FUNC))
				r = CUDA_ERROR_INVALID_HANDLE;
			else
				r = gs__launch(&n->launch, s, ctx);
		} else if (n->kind == GS__N_MEMSET) {
			r = gs__memset(n->memset.dst, n->memset.pitch,
			               n->memset.value, n->memset.elementSize,
			               n->memset.width,
			               n->memset.height ? n->memset.height : 1);
		}
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	return gs__graph_launch(hGraphExec, hStream, false, false);
}

CUresult CUDAAPI cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
	return gs__graph_launch(hGraphExec, hStream, true, false);
}

/* ---- stream capture ------------------------------------------------------ */

CUresult gs__begin_capture(CUstream hStream, CUstreamCaptureMode mode, bool pt)
{
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	CUresult r;

	if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__stream_get(hStream, pt, &ctx, &s);
	if (r == CUDA_SUCCESS && s == &ctx->legacy)
		r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (r == CUDA_SUCCESS && s->capture != NULL)
		r = CUDA_ERROR_ILLEGAL_STATE;
	if (r == CUDA_SUCCESS) {
		s->capture = graph_new();
		if (s->capture == NULL)
			r = CUDA_ERROR_OUT_OF_MEMORY;
		s->capture_mode = mode;
		s->capture_id = ++gs__drv.next_id;
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream hStream,
                                         CUstreamCaptureMode mode)
{
	return gs__begin_capture(hStream, mode, false);
}

CUresult gs__end_capture(CUstream hStream, CUgraph *phGraph, bool pt)
{
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	CUresult r;

	if (phGraph == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__stream_get(hStream, pt, &ctx, &s);
	if (r == CUDA_SUCCESS && s->capture == NULL)
		r = CUDA_ERROR_ILLEGAL_STATE;
	if (r == CUDA_SUCCESS) {
		*phGraph = (CUgraph)s->capture;
		s->capture = NULL;
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	return gs__end_capture(hStream, phGraph, false);
}

CUresult gs__is_capturing(CUstream hStream, CUstreamCaptureStatus *st,
                          cuuint64_t *id, CUgraph *graph, bool pt)
{
	struct gs__ctx *ctx;
	struct gs__stream *s;
	CUresult r;

	if (st == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = stream_peek(hStream, pt, &ctx, &s)) != CUDA_SUCCESS)
		return r;
	*st = s->capture ? CU_STREAM_CAPTURE_STATUS_ACTIVE
	                 : CU_STREAM_CAPTURE_STATUS_NONE;
	if (id != NULL)
		*id = s->capture ? s->capture_id : 0;
	if (graph != NULL)
		*graph = (CUgraph)s->capture;
	gs__unlock();
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream,
                                     CUstreamCaptureStatus *captureStatus)
{
	return gs__is_capturing(hStream, captureStatus, NULL, NULL, false);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v3(
    CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
    cuuint64_t *id_out, CUgraph *graph_out,
    const CUgraphNode **dependencies_out, const CUgraphEdgeData **edgeData_out,
    size_t *numDependencies_out)
{
	if (dependencies_out != NULL)
		*dependencies_out = NULL;
	if (edgeData_out != NULL)
		*edgeData_out = NULL;
	if (numDependencies_out != NULL)
		*numDependencies_out = 0;
	return gs__is_capturing(hStream, captureStatus_out, id_out, graph_out,
	                        false);
}
