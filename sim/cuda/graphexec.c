/*
 * graphexec.c - instantiated CUDA graphs in the sim driver: instantiating
 * a graph (its nodes copied in an order that runs each after its
 * dependencies; a cycle is refused), launching one on a stream (the
 * nodes run one after another: kernels through launch.c, copies and
 * memsets at once, host functions once the work before them is done,
 * event records and waits on the stream, memory alloc/free nodes through
 * graphmem.c), cuGraphExecUpdate and the
 * cuGraphExec*SetParams calls. Graphs themselves are graph.c's.
 */
#include "cuda_int.h"
#include "halloc.h"

#include <stdlib.h>
#include <string.h>

static void exec_free(struct gs__graph_exec *x)
{
	if (x->mem_graph != NULL)
		x->mem_graph->mem_exec = NULL;
	for (int i = 0; i < x->n; i++) {
		gs__gmem_exec_drop(&x->nodes[i]);
		gs__launch_free(&x->nodes[i].launch);
		free(x->nodes[i].argv);
		free(x->nodes[i].deps);
		free(x->nodes[i].dep_pos);
	}
	free(x->nodes);
	free(x);
}

/*
 * order[i] = index in g of the i-th node to run (each after all of its
 * dependencies). false when the graph has a cycle or on OOM (*oom set).
 */
static bool topo_order(const struct gs__graph *g, int *order, bool *oom)
{
	int n = g->n_nodes, done = 0;
	bool *placed = gs__calloc((size_t)(n ? n : 1), sizeof(*placed));

	*oom = placed == NULL;
	if (placed == NULL)
		return false;
	/* n is small (graphs of thousands of nodes at most): repeated
	 * passes keep this simple and stable (creation order kept) */
	while (done < n) {
		bool progress = false;

		for (int i = 0; i < n; i++) {
			bool ready = !placed[i];

			for (int j = 0; ready && j < g->nodes[i]->n_deps; j++) {
				int d =
				    gs__graph_index(g, g->nodes[i]->deps[j]);
				ready = d >= 0 && placed[d];
			}
			if (ready) {
				placed[i] = true;
				order[done++] = i;
				progress = true;
			}
		}
		if (!progress)
			break;
	}
	free(placed);
	return done == n;
}

/* Where graph index gi runs in `order` (n entries), or -1. */
static int position(const int *order, int n, int gi)
{
	for (int i = 0; i < n; i++)
		if (order[i] == gi)
			return i;
	return -1;
}

static CUresult instantiate(CUgraphExec *out, CUgraph hGraph,
                            unsigned long long flags)
{
	struct gs__graph *g = (struct gs__graph *)hGraph;
	struct gs__graph_exec *x = NULL;
	int *order = NULL;
	bool oom = false;
	CUresult r = CUDA_SUCCESS;

	if (out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(g, GS__H_GRAPH) ||
	    (g->n_mem_nodes > 0 && g->mem_exec != NULL)) {
		/* a graph with memory nodes: one exec at a time */
		gs__unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	order =
	    gs__calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof(*order));
	x = gs__calloc(1, sizeof(*x));
	if (x != NULL)
		x->nodes = gs__calloc((size_t)(g->n_nodes ? g->n_nodes : 1),
		                      sizeof(*x->nodes));
	if (order == NULL || x == NULL || x->nodes == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_free;
	}
	if (!topo_order(g, order, &oom)) {
		r = oom ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE;
		goto out_free;
	}
	x->flags = flags;
	for (int i = 0; i < g->n_nodes; i++) {
		struct gs__node *src = g->nodes[order[i]], *dst = &x->nodes[i];

		*dst = *src;
		dst->graph = NULL;
		dst->deps = NULL;
		dst->argv = NULL;
		dst->n_deps = dst->cap_deps = 0;
		dst->orig = src;
		dst->launch.args = NULL;
		dst->orig_n_deps = src->n_deps;
		dst->dep_pos = NULL;
		gs__gmem_exec_hold(dst);
		dst->dep_pos = gs__calloc(
		    (size_t)(src->n_deps ? src->n_deps : 1), sizeof(int));
		if (dst->dep_pos == NULL) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
			x->n = i + 1;
			goto out_free;
		}
		for (int j = 0; j < src->n_deps; j++)
			dst->dep_pos[j] =
			    position(order, g->n_nodes,
			             gs__graph_index(g, src->deps[j]));
		if (src->kind == GS__N_KERNEL) {
			dst->launch.args = gs__malloc(
			    src->launch.args_size ? src->launch.args_size : 1);
			if (dst->launch.args == NULL) {
				r = CUDA_ERROR_OUT_OF_MEMORY;
				x->n = i + 1;
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
	if (g->n_mem_nodes > 0) {
		x->mem_graph = g;
		g->mem_exec = x;
	}
	*out = (CUgraphExec)x;
	free(order);
	gs__unlock();
	return CUDA_SUCCESS;

out_free:
	if (x != NULL)
		exec_free(x);
	free(order);
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

	(void)pt;
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
		gs__h_del(x);
		exec_free(x);
	}
	gs__unlock();
	return r;
}

/* Runs one node of an instantiated graph on s. Lock held (dropped while
 * a host function runs). */
static CUresult run_node(struct gs__node *n, struct gs__stream *s,
                         struct gs__ctx *ctx)
{
	CUresult r = CUDA_SUCCESS;

	switch (n->kind) {
	case GS__N_KERNEL:
		if (!gs__h_is(n->launch.func, GS__H_FUNC))
			return CUDA_ERROR_INVALID_HANDLE;
		return gs__launch(&n->launch, s, ctx);
	case GS__N_MEMSET:
		return gs__memset(n->memset.dst, n->memset.pitch,
		                  n->memset.value, n->memset.elementSize,
		                  n->memset.width,
		                  n->memset.height ? n->memset.height : 1);
	case GS__N_MEMCPY:
		gs__dcopy(n->cpy_dst, n->cpy_src, n->cpy_len);
		return CUDA_SUCCESS;
	case GS__N_HOST:
		r = gs__wait(ctx, gs__stream_target(s));
		if (r != CUDA_SUCCESS)
			return r;
		gs__unlock();
		n->host.fn(n->host.userData);
		gs__lock();
		return CUDA_SUCCESS;
	case GS__N_EVENT_RECORD:
		if (!gs__h_is(n->event, GS__H_EVENT))
			return CUDA_ERROR_INVALID_HANDLE;
		return gs__event_mark((struct gs__event *)n->event, s, ctx);
	case GS__N_EVENT_WAIT: {
		struct gs__event *ev = (struct gs__event *)n->event;

		if (!gs__h_is(ev, GS__H_EVENT))
			return CUDA_ERROR_INVALID_HANDLE;
		if (ev->recorded && ev->seq > s->last && ev->ctx == ctx)
			s->last = ev->seq;
		return CUDA_SUCCESS;
	}
	case GS__N_MEM_ALLOC:
	case GS__N_MEM_FREE:
		return gs__gmem_run(n);
	case GS__N_EMPTY:
		break;
	}
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
	if (r == CUDA_SUCCESS && s->capture != NULL) {
		/* a child graph node in the real driver; not in the sim */
		gs__capture_invalidate(s,
		                       CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
		gs__not_supported_note("cuGraphLaunch in stream capture");
		r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	/* its allocations from the last launch must have been freed */
	if (!upload_only && r == CUDA_SUCCESS)
		r = gs__gmem_launch_check(
		    x->nodes, x->n,
		    (x->flags &
		     CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) != 0);
	for (int i = 0; !upload_only && r == CUDA_SUCCESS && i < x->n; i++) {
		if (!gs__h_is(x, GS__H_GRAPH_EXEC)) {
			r = CUDA_ERROR_INVALID_VALUE; /* destroyed meanwhile */
			break;
		}
		if (!x->nodes[i].disabled)
			r = run_node(&x->nodes[i], s, ctx);
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

/* ---- changing an instantiated graph -------------------------------------- */

/* The exec's copy of graph node h, or NULL. Lock held. */
static struct gs__node *exec_node(CUgraphExec hx, CUgraphNode h,
                                  enum gs__nkind k)
{
	struct gs__graph_exec *x = (struct gs__graph_exec *)hx;

	if (!gs__h_is(x, GS__H_GRAPH_EXEC))
		return NULL;
	for (int i = 0; i < x->n; i++)
		if (x->nodes[i].orig == (const struct gs__node *)h)
			return x->nodes[i].kind == k ? &x->nodes[i] : NULL;
	return NULL;
}

CUresult CUDAAPI
cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                               const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	struct gs__node *n;
	CUresult r;

	if (nodeParams == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = exec_node(hGraphExec, hNode, GS__N_KERNEL);
	r = n == NULL ? CUDA_ERROR_INVALID_VALUE
	              : gs__node_kernel_set(n, nodeParams);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphExecMemsetNodeSetParams(
    CUgraphExec hGraphExec, CUgraphNode hNode,
    const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx)
{
	struct gs__node *n;
	CUresult r;

	(void)ctx;
	if (memsetParams == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = exec_node(hGraphExec, hNode, GS__N_MEMSET);
	if (n == NULL)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		n->memset = *memsetParams;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec,
                                                CUgraphNode hNode,
                                                const CUDA_MEMCPY3D *copyParams,
                                                CUcontext ctx)
{
	struct gs__node *n;
	CUresult r;

	(void)ctx;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = exec_node(hGraphExec, hNode, GS__N_MEMCPY);
	r = n == NULL ? CUDA_ERROR_INVALID_VALUE
	              : gs__node_memcpy_set(n, copyParams);
	gs__unlock();
	return r;
}

CUresult CUDAAPI
cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                             const CUDA_HOST_NODE_PARAMS *nodeParams)
{
	struct gs__node *n;
	CUresult r;

	if (nodeParams == NULL || nodeParams->fn == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = exec_node(hGraphExec, hNode, GS__N_HOST);
	if (n == NULL)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		n->host = *nodeParams;
	gs__unlock();
	return r;
}

static CUresult exec_event_set(CUgraphExec hx, CUgraphNode h, CUevent ev,
                               enum gs__nkind k)
{
	struct gs__node *n;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = exec_node(hx, h, k);
	if (n == NULL || !gs__h_is(ev, GS__H_EVENT))
		r = CUDA_ERROR_INVALID_VALUE;
	else
		n->event = ev;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec,
                                                    CUgraphNode hNode,
                                                    CUevent event)
{
	return exec_event_set(hGraphExec, hNode, event, GS__N_EVENT_RECORD);
}

CUresult CUDAAPI cuGraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec,
                                                  CUgraphNode hNode,
                                                  CUevent event)
{
	return exec_event_set(hGraphExec, hNode, event, GS__N_EVENT_WAIT);
}

/* Kernel, memset and memcpy nodes may be turned off in an exec (the
 * real driver's rule); the others are CUDA_ERROR_INVALID_VALUE. */
static struct gs__node *exec_node_any(CUgraphExec hx, CUgraphNode h)
{
	struct gs__graph_exec *x = (struct gs__graph_exec *)hx;

	if (!gs__h_is(x, GS__H_GRAPH_EXEC))
		return NULL;
	for (int i = 0; i < x->n; i++)
		if (x->nodes[i].orig == (const struct gs__node *)h)
			return &x->nodes[i];
	return NULL;
}

CUresult CUDAAPI cuGraphNodeSetEnabled(CUgraphExec hGraphExec,
                                       CUgraphNode hNode,
                                       unsigned int isEnabled)
{
	struct gs__node *n;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = exec_node_any(hGraphExec, hNode);
	if (n == NULL || (n->kind != GS__N_KERNEL && n->kind != GS__N_MEMSET &&
	                  n->kind != GS__N_MEMCPY))
		r = CUDA_ERROR_INVALID_VALUE;
	else
		n->disabled = isEnabled == 0;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphNodeGetEnabled(CUgraphExec hGraphExec,
                                       CUgraphNode hNode,
                                       unsigned int *isEnabled)
{
	struct gs__node *n;
	CUresult r;

	if (isEnabled == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = exec_node_any(hGraphExec, hNode);
	if (n == NULL || (n->kind != GS__N_KERNEL && n->kind != GS__N_MEMSET &&
	                  n->kind != GS__N_MEMCPY))
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*isEnabled = !n->disabled;
	gs__unlock();
	return r;
}

/*
 * Whether graph g has the exec's shape: as many nodes, and the i-th node
 * of g in creation order (paired with the exec's node of the i-th node
 * of its own graph) of the same kind with the same dependencies. OUT:
 * *bad, the first node that differs; *why, the update result.
 */
static bool same_shape(const struct gs__graph_exec *x,
                       const struct gs__graph *g, int *order,
                       const struct gs__node **bad,
                       CUgraphExecUpdateResult *why)
{
	bool oom;

	*bad = NULL;
	*why = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
	if (g->n_nodes != x->n || !topo_order(g, order, &oom))
		return false;
	for (int i = 0; i < x->n; i++) {
		const struct gs__node *a = g->nodes[order[i]];
		const struct gs__node *e = &x->nodes[i];

		*bad = a;
		if (a->kind != e->kind) {
			*why = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
			return false;
		}
		if (a->kind == GS__N_MEM_ALLOC || a->kind == GS__N_MEM_FREE) {
			/* memory nodes cannot be updated */
			*why = CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
			return false;
		}
		if (a->n_deps != e->orig_n_deps)
			return false;
		for (int j = 0; j < a->n_deps; j++) {
			int p = position(order, g->n_nodes,
			                 gs__graph_index(g, a->deps[j]));
			bool found = false;

			for (int k = 0; k < e->orig_n_deps && !found; k++)
				found = e->dep_pos[k] == p;
			if (!found)
				return false;
		}
	}
	*bad = NULL;
	*why = CU_GRAPH_EXEC_UPDATE_SUCCESS;
	return true;
}

CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
                                   CUgraphExecUpdateResultInfo *resultInfo)
{
	struct gs__graph_exec *x = (struct gs__graph_exec *)hGraphExec;
	struct gs__graph *g = (struct gs__graph *)hGraph;
	const struct gs__node *bad = NULL;
	CUgraphExecUpdateResult why = CU_GRAPH_EXEC_UPDATE_ERROR;
	int *order;
	CUresult r;

	if (resultInfo == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(x, GS__H_GRAPH_EXEC) || !gs__h_is(g, GS__H_GRAPH)) {
		gs__unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	order =
	    gs__calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof(*order));
	if (order == NULL) {
		gs__unlock();
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (!same_shape(x, g, order, &bad, &why)) {
		r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
	} else {
		/* take every node's parameters (kernels may change
		 * function, grid and arguments, as on the real driver) */
		for (int i = 0; r == CUDA_SUCCESS && i < x->n; i++) {
			const struct gs__node *a = g->nodes[order[i]];
			struct gs__node *e = &x->nodes[i];
			uint8_t *args = NULL;

			if (a->kind == GS__N_KERNEL) {
				args = gs__malloc(a->launch.args_size
				                      ? a->launch.args_size
				                      : 1);
				if (args == NULL) {
					r = CUDA_ERROR_OUT_OF_MEMORY;
					break;
				}
				memcpy(args, a->launch.args,
				       a->launch.args_size);
				gs__launch_free(&e->launch);
				free(e->argv);
				e->argv = NULL;
				e->launch = a->launch;
				e->launch.args = args;
			}
			e->memset = a->memset;
			e->memcpy = a->memcpy;
			e->cpy_dst = a->cpy_dst;
			e->cpy_src = a->cpy_src;
			e->cpy_len = a->cpy_len;
			e->host = a->host;
			e->event = a->event;
			e->orig = a;
		}
	}
	free(order);
	resultInfo->result = why;
	resultInfo->errorNode = (CUgraphNode)bad;
	resultInfo->errorFromNode = NULL;
	gs__unlock();
	return r;
}
