/*
 * launch.c - kernel launches in the sim driver: building a launch from
 * cuLaunchKernel's arguments, its cost (include/gs/kernels.h for the gs_*
 * kernels, the PTX cost model of costmodel.h for any other, through
 * func.c), faults, queueing it on the timeline (timeline.c) or recording
 * it into the graph of a capturing stream, and host functions.
 *
 * Data: the sim applies a kernel's effect on memory when it is launched
 * (gs_fill always; gs_burn, gs_matmul, gs_infer_layer only when tiny, see
 * GS__COMPUTE_EFFECT_MAX), like copies; every other kernel runs in the
 * PTX interpreter (exec.h) at that point. A program can only see results
 * after synchronizing, which is when the real GPU would have produced
 * them too.
 */
#include "cuda_int.h"
#include "exec.h"
#include "halloc.h"

#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs/kernels.h"

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
	if (!gs__alloc_usable(a) || !a->backed)
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
	out->args = gs__calloc(1, e->args_size ? e->args_size : 1);
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

CUresult gs__launch(struct gs__launch *l, struct gs__stream *s,
                    struct gs__ctx *ctx)
{
	struct gs__dev *d = &gs__drv.dev[ctx->dev];
	enum kernel_kind k;
	uint64_t dur, seq, at;
	uint32_t sms;
	CUresult r;

	if (s->capture != NULL) {
		struct gs__node *n = gs__node_new(GS__N_KERNEL);

		if (n == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		n->launch = *l;
		n->launch.args = gs__malloc(l->args_size ? l->args_size : 1);
		if (n->launch.args == NULL) {
			free(n);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		memcpy(n->launch.args, l->args, l->args_size);
		r = gs__capture_node(s, n);
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
	if ((k == K_FILL || k == K_BURN || k == K_MATMUL || k == K_INFER) &&
	    gs__launch_unmapped(l, &at)) { /* swapcheck.c */
		maybe_fault(ctx, at);
		return CUDA_SUCCESS; /* reported by the next call */
	}
	if (k == K_OTHER)
		gs__kernel_cost(l, d, &dur, &sms); /* costmodel.h */
	else
		cost(l, k, d->sm_count, &dur, &sms);
	data_effect(l, k);
	if (k == K_OTHER)
		gs__exec_launch(l, ctx); /* exec.h: runs it for its results */
	r = gs__push(ctx, dur * sms, sms, GS_SIM_OP_KERNEL, 0, &seq);
	if (r != CUDA_SUCCESS)
		return r;
	s->last = seq;
	ctx->last = seq;
	return CUDA_SUCCESS;
}

/*
 * What the GPU refuses beyond the grid and block limits: a cooperative
 * grid larger than can be resident at once (every block on some SM:
 * CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE), and clusters: only on compute
 * capability 9.0 and newer, the grid a multiple of the cluster, at most 8
 * blocks per cluster unless the function allows non-portable sizes (then
 * 16), else CUDA_ERROR_INVALID_CLUSTER_SIZE.
 */
static CUresult opts_check(const struct gs__launch *l, const struct gs__dev *d,
                           const struct gs__launch_opts *o)
{
	const unsigned int *c = o->cluster;
	uint64_t threads = (uint64_t)l->block[0] * l->block[1] * l->block[2];

	if (o->cooperative) {
		int per_sm =
		    gs__func_blocks_per_sm(l->func, (int)threads, l->smem);
		uint64_t blocks =
		    (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];

		if (blocks > (uint64_t)per_sm * d->sm_count)
			return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
	}
	if (c[0] == 0 && c[1] == 0 && c[2] == 0)
		return CUDA_SUCCESS;
	if (d->cc_major < 9)
		return CUDA_ERROR_INVALID_CLUSTER_SIZE;
	for (int i = 0; i < 3; i++)
		if (c[i] == 0 || l->grid[i] % c[i] != 0)
			return CUDA_ERROR_INVALID_CLUSTER_SIZE;
	if ((uint64_t)c[0] * c[1] * c[2] >
	    (l->func->nonportable_cluster ? 16u : 8u))
		return CUDA_ERROR_INVALID_CLUSTER_SIZE;
	return CUDA_SUCCESS;
}

CUresult gs__launch_kernel_opts(CUfunction f, const unsigned int grid[3],
                                const unsigned int block[3], unsigned int smem,
                                CUstream hStream, void **kernelParams,
                                void **extra, bool pt,
                                const struct gs__launch_opts *opts)
{
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	struct gs__launch l;
	CUresult r;

	gs__launch_delay(); /* swapcheck.c: none unless asked for */
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__stream_get(hStream, pt, &ctx, &s);
	if (r == CUDA_SUCCESS)
		r = gs__launch_build(f, grid, block, smem, kernelParams, extra,
		                     &l);
	if (r == CUDA_SUCCESS) {
		if (opts != NULL)
			r = opts_check(&l, &gs__drv.dev[ctx->dev], opts);
		if (r == CUDA_SUCCESS)
			r = gs__launch(&l, s, ctx);
		gs__launch_free(&l);
	}
	gs__unlock();
	return r;
}

CUresult gs__launch_kernel(CUfunction f, unsigned int gx, unsigned int gy,
                           unsigned int gz, unsigned int bx, unsigned int by,
                           unsigned int bz, unsigned int smem, CUstream hStream,
                           void **kernelParams, void **extra, bool pt)
{
	const unsigned int grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};

	return gs__launch_kernel_opts(f, grid, block, smem, hStream,
	                              kernelParams, extra, pt, NULL);
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

CUresult gs__launch_cooperative(CUfunction f, const unsigned int grid[3],
                                const unsigned int block[3], unsigned int smem,
                                CUstream hStream, void **kernelParams, bool pt)
{
	const struct gs__launch_opts o = {.cooperative = true};

	return gs__launch_kernel_opts(f, grid, block, smem, hStream,
	                              kernelParams, NULL, pt, &o);
}

CUresult CUDAAPI cuLaunchCooperativeKernel(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
    unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
    unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
    void **kernelParams)
{
	const unsigned int grid[3] = {gridDimX, gridDimY, gridDimZ};
	const unsigned int block[3] = {blockDimX, blockDimY, blockDimZ};

	return gs__launch_cooperative(f, grid, block, sharedMemBytes, hStream,
	                              kernelParams, false);
}

CUresult gs__launch_kernel_ex(const CUlaunchConfig *config, CUfunction f,
                              void **kernelParams, void **extra, bool pt)
{
	struct gs__launch_opts o = {0};
	unsigned int grid[3], block[3];

	if (config == NULL || (config->numAttrs > 0 && config->attrs == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned int i = 0; i < config->numAttrs; i++) {
		const CUlaunchAttribute *a = &config->attrs[i];

		if (a->id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
			o.cooperative = a->value.cooperative != 0;
		} else if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
			o.cluster[0] = a->value.clusterDim.x;
			o.cluster[1] = a->value.clusterDim.y;
			o.cluster[2] = a->value.clusterDim.z;
		}
	}
	grid[0] = config->gridDimX;
	grid[1] = config->gridDimY;
	grid[2] = config->gridDimZ;
	block[0] = config->blockDimX;
	block[1] = config->blockDimY;
	block[2] = config->blockDimZ;
	return gs__launch_kernel_opts(f, grid, block, config->sharedMemBytes,
	                              config->hStream, kernelParams, extra, pt,
	                              &o);
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
	if (r == CUDA_SUCCESS && s->capture != NULL) {
		/* a host function becomes a host node; a stream callback
		 * (it takes the stream's status) cannot be captured */
		struct gs__node *n =
		    fn != NULL ? gs__node_new(GS__N_HOST) : NULL;

		if (fn == NULL) {
			gs__capture_invalidate(
			    s, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
			r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		} else if (n == NULL) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			n->host.fn = fn;
			n->host.userData = userData;
			r = gs__capture_node(s, n);
			if (r != CUDA_SUCCESS)
				gs__graph_node_free(n);
		}
		gs__unlock();
		return r;
	}
	if (r != CUDA_SUCCESS) {
		gs__unlock();
		return r;
	}
	status = gs__wait(ctx, gs__stream_target(s));
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
