/*
 * graph.c - CUDA graphs in the sim driver: graphs of kernel, empty,
 * memset and memcpy nodes, instantiation, launching an instantiated
 * graph (its nodes run one after another through launch.c) and stream
 * capture, which records a stream's launches into a graph.
 */
#include "cuda_int.h"
#include "halloc.h"

#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- graphs -------------------------------------------------------------- */
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
	struct gs__graph *g = gs__calloc(1, sizeof(*g));

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
	r = gs__capture_add((struct gs__graph *)hGraph, n);
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
	n = gs__calloc(1, sizeof(*n));
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
	n = gs__calloc(1, sizeof(*n));
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
	n = gs__calloc(1, sizeof(*n));
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
	x = gs__calloc(1, sizeof(*x));
	if (x != NULL)
		x->nodes = gs__calloc((size_t)(g->n_nodes ? g->n_nodes : 1),
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
			dst->launch.args = gs__malloc(
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
	if ((r = gs__stream_peek(hStream, pt, &ctx, &s)) != CUDA_SUCCESS)
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
