/*
 * graph.c - CUDA graphs in the sim driver, as programs build them: graphs
 * of kernel, empty, memset, memcpy (1D), host, event record/wait and
 * memory alloc/free nodes (their allocations are graphmem.c's) with their
 * dependencies; reading and changing a node's
 * parameters, the edges, cloning, a Graphviz picture (cuGraphDebugDotPrint);
 * and the stream capture calls (begin, end, is-capturing, capture info).
 * The node and edge structure and the capture state are capture.c's;
 * instantiating and launching are graphexec.c's.
 */
#include "cuda_int.h"
#include "halloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- graphs -------------------------------------------------------------- */

CUresult CUDAAPI cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	struct gs__graph *g;
	CUresult r;

	if (phGraph == NULL || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	g = gs__graph_new();
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
		gs__graph_free((struct gs__graph *)hGraph);
	gs__unlock();
	return r;
}

/* Adds n to hGraph after deps; frees n on failure. Lock held. */
static CUresult add_node(CUgraphNode *out, CUgraph hGraph,
                         const CUgraphNode *deps, size_t ndeps,
                         struct gs__node *n)
{
	CUresult r;

	if (!gs__h_is(hGraph, GS__H_GRAPH) || (ndeps > 0 && deps == NULL) ||
	    ndeps > (size_t)1 << 20)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		r = gs__graph_add((struct gs__graph *)hGraph, n,
		                  (struct gs__node *const *)deps, (int)ndeps);
	if (r == CUDA_SUCCESS)
		*out = (CUgraphNode)n;
	else
		gs__graph_node_free(n);
	return r;
}

/* ---- kernel nodes --------------------------------------------------------- */

/* Sets a kernel node's launch from params (copying the arguments). */
CUresult gs__node_kernel_set(struct gs__node *n,
                             const CUDA_KERNEL_NODE_PARAMS *p)
{
	const unsigned int grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
	const unsigned int block[3] = {p->blockDimX, p->blockDimY,
	                               p->blockDimZ};
	CUfunction f = p->func ? p->func : (CUfunction)p->kern;
	struct gs__launch l;
	CUresult r;

	r = gs__launch_build(f, grid, block, p->sharedMemBytes, p->kernelParams,
	                     p->extra, &l);
	if (r != CUDA_SUCCESS)
		return r;
	gs__launch_free(&n->launch);
	free(n->argv);
	n->argv = NULL;
	n->launch = l;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                      const CUgraphNode *dependencies,
                                      size_t numDependencies,
                                      const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	struct gs__node *n;
	CUresult r;

	if (phGraphNode == NULL || nodeParams == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = gs__node_new(GS__N_KERNEL);
	if (n == NULL)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	else if ((r = gs__node_kernel_set(n, nodeParams)) != CUDA_SUCCESS)
		gs__graph_node_free(n);
	else
		r = add_node(phGraphNode, hGraph, dependencies, numDependencies,
		             n);
	gs__unlock();
	return r;
}

/* The node of handle h if it is one of kind k. Lock held. */
static struct gs__node *node_of(CUgraphNode h, enum gs__nkind k)
{
	struct gs__node *n = (struct gs__node *)h;

	return gs__h_is(n, GS__H_GRAPH_NODE) && n->kind == k ? n : NULL;
}

/* Fills p from a kernel node: kernelParams point into the node's own
 * copy of the arguments (valid while the node is unchanged). */
CUresult gs__node_kernel_get(struct gs__node *n, CUDA_KERNEL_NODE_PARAMS *p)
{
	const struct gs__entry *e = n->launch.func->entry;

	if (n->argv == NULL && e->n_params > 0) {
		n->argv = gs__calloc((size_t)e->n_params, sizeof(*n->argv));
		if (n->argv == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		for (int i = 0; i < e->n_params; i++)
			n->argv[i] = n->launch.args + e->param_off[i];
	}
	memset(p, 0, sizeof(*p));
	/* as given: the CUDA runtime finds its kernel by either handle
	 * (a CUkernel is its CUfunction here) */
	p->func = (CUfunction)n->launch.func;
	p->kern = (CUkernel)n->launch.func;
	p->ctx = NULL;
	p->gridDimX = n->launch.grid[0];
	p->gridDimY = n->launch.grid[1];
	p->gridDimZ = n->launch.grid[2];
	p->blockDimX = n->launch.block[0];
	p->blockDimY = n->launch.block[1];
	p->blockDimZ = n->launch.block[2];
	p->sharedMemBytes = n->launch.smem;
	p->kernelParams = n->argv;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphKernelNodeGetParams(CUgraphNode hNode,
                                            CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	struct gs__node *n;
	CUresult r;

	if (nodeParams == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = node_of(hNode, GS__N_KERNEL);
	r = n == NULL ? CUDA_ERROR_INVALID_VALUE
	              : gs__node_kernel_get(n, nodeParams);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphKernelNodeSetParams(
    CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	struct gs__node *n;
	CUresult r;

	if (nodeParams == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = node_of(hNode, GS__N_KERNEL);
	r = n == NULL ? CUDA_ERROR_INVALID_VALUE
	              : gs__node_kernel_set(n, nodeParams);
	gs__unlock();
	return r;
}

/* ---- other nodes ---------------------------------------------------------- */

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
	n = gs__node_new(GS__N_EMPTY);
	r = n == NULL ? CUDA_ERROR_OUT_OF_MEMORY
	              : add_node(phGraphNode, hGraph, dependencies,
	                         numDependencies, n);
	gs__unlock();
	return r;
}

static bool memset_ok(const CUDA_MEMSET_NODE_PARAMS *p)
{
	return p != NULL && (p->elementSize == 1 || p->elementSize == 2 ||
	                     p->elementSize == 4);
}

CUresult CUDAAPI
cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                     const CUgraphNode *dependencies, size_t numDependencies,
                     const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx)
{
	struct gs__node *n;
	CUresult r;

	(void)ctx;
	if (phGraphNode == NULL || !memset_ok(memsetParams))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = gs__node_new(GS__N_MEMSET);
	if (n == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		n->memset = *memsetParams;
		r = add_node(phGraphNode, hGraph, dependencies, numDependencies,
		             n);
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphMemsetNodeGetParams(CUgraphNode hNode,
                                            CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
	struct gs__node *n;
	CUresult r;

	if (nodeParams == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = node_of(hNode, GS__N_MEMSET);
	if (n == NULL)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*nodeParams = n->memset;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphMemsetNodeSetParams(
    CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
	struct gs__node *n;
	CUresult r;

	if (!memset_ok(nodeParams))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = node_of(hNode, GS__N_MEMSET);
	if (n == NULL)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		n->memset = *nodeParams;
	gs__unlock();
	return r;
}

/* One end of a copy: its address, for the memory types the sim has (all
 * of them are host addresses here). */
static uint64_t cpy_end(CUmemorytype t, const void *host, CUdeviceptr dev,
                        CUarray arr, size_t x)
{
	if (arr != NULL || t == CU_MEMORYTYPE_ARRAY)
		return 0;
	if (t == CU_MEMORYTYPE_HOST)
		return (uint64_t)(uintptr_t)host + x;
	if (t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_UNIFIED)
		return (uint64_t)dev + x;
	return 0;
}

/* Sets a memcpy node from p: a 1D copy (one row, one slice); arrays and
 * 2D/3D copies are refused as the sim's cuMemcpy2D/3D are. */
CUresult gs__node_memcpy_set(struct gs__node *n, const CUDA_MEMCPY3D *p)
{
	uint64_t src, dst;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((p->Height > 1 || p->Depth > 1 || p->srcY || p->srcZ || p->dstY ||
	     p->dstZ || p->srcLOD || p->dstLOD)) {
		gs__not_supported_note("cuGraphAddMemcpyNode (2D/3D copy)");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	src = cpy_end(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray,
	              p->srcXInBytes);
	dst = cpy_end(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray,
	              p->dstXInBytes);
	if (p->srcArray != NULL || p->dstArray != NULL) {
		gs__not_supported_note("cuGraphAddMemcpyNode (array)");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (src == 0 || dst == 0 || p->WidthInBytes == 0)
		return CUDA_ERROR_INVALID_VALUE;
	n->memcpy = *p;
	n->cpy_src = src;
	n->cpy_dst = dst;
	n->cpy_len = p->WidthInBytes;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                      const CUgraphNode *dependencies,
                                      size_t numDependencies,
                                      const CUDA_MEMCPY3D *copyParams,
                                      CUcontext ctx)
{
	struct gs__node *n;
	CUresult r;

	(void)ctx;
	if (phGraphNode == NULL || copyParams == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = gs__node_new(GS__N_MEMCPY);
	if (n == NULL)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	else if ((r = gs__node_memcpy_set(n, copyParams)) != CUDA_SUCCESS)
		gs__graph_node_free(n);
	else
		r = add_node(phGraphNode, hGraph, dependencies, numDependencies,
		             n);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphMemcpyNodeGetParams(CUgraphNode hNode,
                                            CUDA_MEMCPY3D *nodeParams)
{
	struct gs__node *n;
	CUresult r;

	if (nodeParams == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = node_of(hNode, GS__N_MEMCPY);
	if (n == NULL)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*nodeParams = n->memcpy;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphMemcpyNodeSetParams(CUgraphNode hNode,
                                            const CUDA_MEMCPY3D *nodeParams)
{
	struct gs__node *n;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = node_of(hNode, GS__N_MEMCPY);
	r = n == NULL ? CUDA_ERROR_INVALID_VALUE
	              : gs__node_memcpy_set(n, nodeParams);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                    const CUgraphNode *dependencies,
                                    size_t numDependencies,
                                    const CUDA_HOST_NODE_PARAMS *nodeParams)
{
	struct gs__node *n;
	CUresult r;

	if (phGraphNode == NULL || nodeParams == NULL || nodeParams->fn == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = gs__node_new(GS__N_HOST);
	if (n == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		n->host = *nodeParams;
		r = add_node(phGraphNode, hGraph, dependencies, numDependencies,
		             n);
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphHostNodeGetParams(CUgraphNode hNode,
                                          CUDA_HOST_NODE_PARAMS *nodeParams)
{
	struct gs__node *n;
	CUresult r;

	if (nodeParams == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = node_of(hNode, GS__N_HOST);
	if (n == NULL)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*nodeParams = n->host;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphHostNodeSetParams(
    CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS *nodeParams)
{
	struct gs__node *n;
	CUresult r;

	if (nodeParams == NULL || nodeParams->fn == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = node_of(hNode, GS__N_HOST);
	if (n == NULL)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		n->host = *nodeParams;
	gs__unlock();
	return r;
}

static CUresult add_event_node(CUgraphNode *phGraphNode, CUgraph hGraph,
                               const CUgraphNode *deps, size_t ndeps,
                               CUevent event, enum gs__nkind k)
{
	struct gs__node *n;
	CUresult r;

	if (phGraphNode == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(event, GS__H_EVENT)) {
		gs__unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	n = gs__node_new(k);
	if (n == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		n->event = event;
		r = add_node(phGraphNode, hGraph, deps, ndeps, n);
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphAddEventRecordNode(CUgraphNode *phGraphNode,
                                           CUgraph hGraph,
                                           const CUgraphNode *dependencies,
                                           size_t numDependencies,
                                           CUevent event)
{
	return add_event_node(phGraphNode, hGraph, dependencies,
	                      numDependencies, event, GS__N_EVENT_RECORD);
}

CUresult CUDAAPI cuGraphAddEventWaitNode(CUgraphNode *phGraphNode,
                                         CUgraph hGraph,
                                         const CUgraphNode *dependencies,
                                         size_t numDependencies, CUevent event)
{
	return add_event_node(phGraphNode, hGraph, dependencies,
	                      numDependencies, event, GS__N_EVENT_WAIT);
}

static CUresult event_node_get(CUgraphNode hNode, CUevent *out,
                               enum gs__nkind k)
{
	struct gs__node *n;
	CUresult r;

	if (out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = node_of(hNode, k);
	if (n == NULL)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*out = n->event;
	gs__unlock();
	return r;
}

static CUresult event_node_set(CUgraphNode hNode, CUevent ev, enum gs__nkind k)
{
	struct gs__node *n;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = node_of(hNode, k);
	if (n == NULL || !gs__h_is(ev, GS__H_EVENT))
		r = CUDA_ERROR_INVALID_VALUE;
	else
		n->event = ev;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphEventRecordNodeGetEvent(CUgraphNode hNode,
                                                CUevent *event_out)
{
	return event_node_get(hNode, event_out, GS__N_EVENT_RECORD);
}

CUresult CUDAAPI cuGraphEventRecordNodeSetEvent(CUgraphNode hNode,
                                                CUevent event)
{
	return event_node_set(hNode, event, GS__N_EVENT_RECORD);
}

CUresult CUDAAPI cuGraphEventWaitNodeGetEvent(CUgraphNode hNode,
                                              CUevent *event_out)
{
	return event_node_get(hNode, event_out, GS__N_EVENT_WAIT);
}

CUresult CUDAAPI cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event)
{
	return event_node_set(hNode, event, GS__N_EVENT_WAIT);
}

/* ---- memory nodes (graph allocations: graphmem.c) ------------------------ */

CUresult CUDAAPI cuGraphAddMemAllocNode(CUgraphNode *phGraphNode,
                                        CUgraph hGraph,
                                        const CUgraphNode *dependencies,
                                        size_t numDependencies,
                                        CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
	struct gs__ctx *ctx = NULL;
	struct gs__node *n;
	CUresult r;

	if (phGraphNode == NULL || nodeParams == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (gs__ctx_get(&ctx) != CUDA_SUCCESS)
		ctx = NULL;
	n = gs__node_new(GS__N_MEM_ALLOC);
	if (n == NULL)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	else if (!gs__h_is(hGraph, GS__H_GRAPH))
		r = CUDA_ERROR_INVALID_VALUE;
	else
		r = gs__gmem_alloc_node_init(n, ctx, nodeParams);
	if (r == CUDA_SUCCESS)
		r = add_node(phGraphNode, hGraph, dependencies, numDependencies,
		             n);
	else
		gs__graph_node_free(n);
	if (r == CUDA_SUCCESS)
		nodeParams->dptr = (CUdeviceptr)n->gmem.dptr;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphMemAllocNodeGetParams(
    CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
	struct gs__node *n;
	CUresult r;

	if (params_out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = node_of(hNode, GS__N_MEM_ALLOC);
	if (n == NULL) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		/* poolProps and accessDescs stay the node's */
		params_out->poolProps = n->gmem.props;
		params_out->accessDescs = n->gmem.access;
		params_out->accessDescCount = n->gmem.n_access;
		params_out->bytesize = (size_t)n->gmem.size;
		params_out->dptr = (CUdeviceptr)n->gmem.dptr;
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                       const CUgraphNode *dependencies,
                                       size_t numDependencies, CUdeviceptr dptr)
{
	struct gs__node *n;
	CUresult r;

	if (phGraphNode == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = gs__node_new(GS__N_MEM_FREE);
	if (n == NULL)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	else if (!gs__h_is(hGraph, GS__H_GRAPH))
		r = CUDA_ERROR_INVALID_VALUE;
	else
		r = gs__gmem_free_node_init(n, (struct gs__graph *)hGraph,
		                            (uint64_t)dptr);
	if (r == CUDA_SUCCESS)
		r = add_node(phGraphNode, hGraph, dependencies, numDependencies,
		             n);
	else
		gs__graph_node_free(n);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphMemFreeNodeGetParams(CUgraphNode hNode,
                                             CUdeviceptr *dptr_out)
{
	struct gs__node *n;
	CUresult r;

	if (dptr_out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	n = node_of(hNode, GS__N_MEM_FREE);
	if (n == NULL)
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*dptr_out = (CUdeviceptr)n->gmem.dptr;
	gs__unlock();
	return r;
}

/* ---- nodes and edges ------------------------------------------------------ */

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

CUresult CUDAAPI cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes,
                                     size_t *numRootNodes)
{
	struct gs__graph *g = (struct gs__graph *)hGraph;
	size_t n = 0;
	CUresult r;

	if (numRootNodes == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(g, GS__H_GRAPH)) {
		gs__unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	for (int i = 0; i < g->n_nodes; i++) {
		if (g->nodes[i]->n_deps != 0)
			continue;
		if (rootNodes != NULL && n < *numRootNodes)
			rootNodes[n] = (CUgraphNode)g->nodes[i];
		n++;
	}
	if (rootNodes != NULL && n > *numRootNodes)
		n = *numRootNodes;
	*numRootNodes = n;
	gs__unlock();
	return r;
}

/*
 * Lists edges into out (from/to pairs, at most *num; edge data zeroed),
 * and sets *num to the count (all of them when from is NULL). Lock held.
 */
static void edges_list(const struct gs__graph *g,
                       const struct gs__node *only_to,
                       const struct gs__node *only_from, CUgraphNode *from,
                       CUgraphNode *to, CUgraphEdgeData *data, size_t *num)
{
	size_t n = 0;

	for (int i = 0; i < g->n_nodes; i++) {
		struct gs__node *x = g->nodes[i];

		if (only_to != NULL && x != only_to)
			continue;
		for (int j = 0; j < x->n_deps; j++) {
			if (only_from != NULL && x->deps[j] != only_from)
				continue;
			if ((from != NULL || to != NULL) && n < *num) {
				if (from != NULL)
					from[n] = (CUgraphNode)x->deps[j];
				if (to != NULL)
					to[n] = (CUgraphNode)x;
				if (data != NULL)
					memset(&data[n], 0, sizeof(data[n]));
			}
			n++;
		}
	}
	if ((from != NULL || to != NULL) && n > *num)
		n = *num;
	*num = n;
}

CUresult CUDAAPI cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from,
                                 CUgraphNode *to, CUgraphEdgeData *edgeData,
                                 size_t *numEdges)
{
	CUresult r;

	if (numEdges == NULL || ((from == NULL) != (to == NULL)))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(hGraph, GS__H_GRAPH))
		r = CUDA_ERROR_INVALID_VALUE;
	else
		edges_list((const struct gs__graph *)hGraph, NULL, NULL, from,
		           to, edgeData, numEdges);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphNodeGetDependencies(CUgraphNode hNode,
                                            CUgraphNode *dependencies,
                                            CUgraphEdgeData *edgeData,
                                            size_t *numDependencies)
{
	struct gs__node *n = (struct gs__node *)hNode;
	CUresult r;

	if (numDependencies == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(n, GS__H_GRAPH_NODE))
		r = CUDA_ERROR_INVALID_VALUE;
	else
		edges_list(n->graph, n, NULL, dependencies, NULL, edgeData,
		           numDependencies);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphNodeGetDependentNodes(CUgraphNode hNode,
                                              CUgraphNode *dependentNodes,
                                              CUgraphEdgeData *edgeData,
                                              size_t *numDependentNodes)
{
	struct gs__node *n = (struct gs__node *)hNode;
	CUresult r;

	if (numDependentNodes == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(n, GS__H_GRAPH_NODE))
		r = CUDA_ERROR_INVALID_VALUE;
	else
		edges_list(n->graph, NULL, n, NULL, dependentNodes, edgeData,
		           numDependentNodes);
	gs__unlock();
	return r;
}

/* Checks an edge list of hGraph: both ends nodes of it, no self edge. */
static bool edges_ok(CUgraph hGraph, const CUgraphNode *from,
                     const CUgraphNode *to, size_t n)
{
	if (!gs__h_is(hGraph, GS__H_GRAPH) || (n > 0 && (!from || !to)))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!gs__h_is(from[i], GS__H_GRAPH_NODE) ||
		    !gs__h_is(to[i], GS__H_GRAPH_NODE) || from[i] == to[i] ||
		    ((struct gs__node *)from[i])->graph !=
		        (struct gs__graph *)hGraph ||
		    ((struct gs__node *)to[i])->graph !=
		        (struct gs__graph *)hGraph)
			return false;
	return true;
}

CUresult CUDAAPI cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from,
                                        const CUgraphNode *to,
                                        const CUgraphEdgeData *edgeData,
                                        size_t numDependencies)
{
	CUresult r;

	(void)edgeData;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!edges_ok(hGraph, from, to, numDependencies))
		r = CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; r == CUDA_SUCCESS && i < numDependencies; i++)
		r = gs__node_dep_add((struct gs__node *)to[i],
		                     (struct gs__node *)from[i]);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphRemoveDependencies(CUgraph hGraph,
                                           const CUgraphNode *from,
                                           const CUgraphNode *to,
                                           const CUgraphEdgeData *edgeData,
                                           size_t numDependencies)
{
	CUresult r;

	(void)edgeData;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!edges_ok(hGraph, from, to, numDependencies) ||
	    ((struct gs__graph *)hGraph)->n_mem_nodes > 0)
		r = CUDA_ERROR_INVALID_VALUE; /* memory nodes: edges stay */
	for (size_t i = 0; r == CUDA_SUCCESS && i < numDependencies; i++)
		if (!gs__node_dep_remove((struct gs__node *)to[i],
		                         (struct gs__node *)from[i]))
			r = CUDA_ERROR_INVALID_VALUE;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphDestroyNode(CUgraphNode hNode)
{
	struct gs__node *n = (struct gs__node *)hNode;
	struct gs__graph *g;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(n, GS__H_GRAPH_NODE)) {
		gs__unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	g = n->graph;
	if (g->n_mem_nodes > 0) {
		/* no node of a graph with memory nodes may go */
		gs__unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	for (int i = 0; i < g->n_nodes; i++) {
		(void)gs__node_dep_remove(g->nodes[i], n);
		if (g->nodes[i] == n) {
			memmove(&g->nodes[i], &g->nodes[i + 1],
			        sizeof(g->nodes[0]) *
			            (size_t)(g->n_nodes - i - 1));
			g->n_nodes--;
			i--;
		}
	}
	gs__graph_node_free(n);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
	static const CUgraphNodeType types[] = {
	    [GS__N_KERNEL] = CU_GRAPH_NODE_TYPE_KERNEL,
	    [GS__N_EMPTY] = CU_GRAPH_NODE_TYPE_EMPTY,
	    [GS__N_MEMSET] = CU_GRAPH_NODE_TYPE_MEMSET,
	    [GS__N_MEMCPY] = CU_GRAPH_NODE_TYPE_MEMCPY,
	    [GS__N_HOST] = CU_GRAPH_NODE_TYPE_HOST,
	    [GS__N_EVENT_RECORD] = CU_GRAPH_NODE_TYPE_EVENT_RECORD,
	    [GS__N_EVENT_WAIT] = CU_GRAPH_NODE_TYPE_WAIT_EVENT,
	    [GS__N_MEM_ALLOC] = CU_GRAPH_NODE_TYPE_MEM_ALLOC,
	    [GS__N_MEM_FREE] = CU_GRAPH_NODE_TYPE_MEM_FREE,
	};
	struct gs__node *n = (struct gs__node *)hNode;
	CUresult r;

	if (type == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(n, GS__H_GRAPH_NODE))
		r = CUDA_ERROR_INVALID_VALUE;
	else
		*type = types[n->kind];
	gs__unlock();
	return r;
}

/* ---- clone and picture ---------------------------------------------------- */

/* A copy of node src (not in a graph; deps not set). Lock held. */
struct gs__node *gs__node_copy(const struct gs__node *src)
{
	struct gs__node *n = gs__node_new(src->kind);

	if (n == NULL)
		return NULL;
	*n = *src;
	n->graph = NULL;
	n->argv = NULL;
	n->deps = NULL;
	n->n_deps = n->cap_deps = 0;
	n->orig = src;
	n->launch.args = NULL;
	n->gmem.access = NULL; /* memory nodes are never cloned */
	if (src->kind == GS__N_KERNEL) {
		n->launch.args = gs__malloc(
		    src->launch.args_size ? src->launch.args_size : 1);
		if (n->launch.args == NULL) {
			free(n);
			return NULL;
		}
		memcpy(n->launch.args, src->launch.args, src->launch.args_size);
	}
	return n;
}

/* Index of node x in g, or -1. */
int gs__graph_index(const struct gs__graph *g, const struct gs__node *x)
{
	for (int i = 0; i < g->n_nodes; i++)
		if (g->nodes[i] == x)
			return i;
	return -1;
}

CUresult CUDAAPI cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
	struct gs__graph *g = (struct gs__graph *)originalGraph, *c;
	CUresult r;

	if (phGraphClone == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(g, GS__H_GRAPH) || g->n_mem_nodes > 0) {
		/* a graph with memory nodes cannot be cloned */
		gs__unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	c = gs__graph_new();
	if (c == NULL)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	for (int i = 0; r == CUDA_SUCCESS && i < g->n_nodes; i++) {
		struct gs__node *n = gs__node_copy(g->nodes[i]);

		if (n == NULL) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		}
		r = gs__graph_add(c, n, NULL, 0);
		if (r != CUDA_SUCCESS) {
			gs__graph_node_free(n);
			break;
		}
		/* dependencies come before their dependents in g only when
		 * added so; map through indices after all are in */
	}
	for (int i = 0; r == CUDA_SUCCESS && i < g->n_nodes; i++)
		for (int j = 0; r == CUDA_SUCCESS && j < g->nodes[i]->n_deps;
		     j++)
			r = gs__node_dep_add(
			    c->nodes[i],
			    c->nodes[gs__graph_index(g, g->nodes[i]->deps[j])]);
	if (r == CUDA_SUCCESS)
		*phGraphClone = (CUgraph)c;
	else
		gs__graph_free(c);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuGraphNodeFindInClone(CUgraphNode *phNode,
                                        CUgraphNode hOriginalNode,
                                        CUgraph hClonedGraph)
{
	struct gs__graph *c = (struct gs__graph *)hClonedGraph;
	CUresult r;

	if (phNode == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = CUDA_ERROR_INVALID_VALUE;
	if (gs__h_is(c, GS__H_GRAPH) &&
	    gs__h_is(hOriginalNode, GS__H_GRAPH_NODE))
		for (int i = 0; i < c->n_nodes; i++)
			if (c->nodes[i]->orig ==
			    (const struct gs__node *)hOriginalNode) {
				*phNode = (CUgraphNode)c->nodes[i];
				r = CUDA_SUCCESS;
				break;
			}
	gs__unlock();
	return r;
}

static const char *kind_name(enum gs__nkind k)
{
	static const char *const names[] = {
	    [GS__N_KERNEL] = "KERNEL",
	    [GS__N_EMPTY] = "EMPTY",
	    [GS__N_MEMSET] = "MEMSET",
	    [GS__N_MEMCPY] = "MEMCPY",
	    [GS__N_HOST] = "HOST",
	    [GS__N_EVENT_RECORD] = "EVENT_RECORD",
	    [GS__N_EVENT_WAIT] = "WAIT_EVENT",
	    [GS__N_MEM_ALLOC] = "MEM_ALLOC",
	    [GS__N_MEM_FREE] = "MEM_FREE",
	};
	return names[k];
}

CUresult CUDAAPI cuGraphDebugDotPrint(CUgraph hGraph, const char *path,
                                      unsigned int flags)
{
	struct gs__graph *g = (struct gs__graph *)hGraph;
	FILE *f;
	CUresult r;

	(void)flags;
	if (path == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(g, GS__H_GRAPH)) {
		gs__unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	f = fopen(path, "w");
	if (f == NULL) {
		gs__unlock();
		return CUDA_ERROR_OPERATING_SYSTEM;
	}
	fprintf(f, "digraph dot {\n");
	for (int i = 0; i < g->n_nodes; i++) {
		const struct gs__node *n = g->nodes[i];

		fprintf(f, "\"n%d\" [label=\"%d %s%s%s\"];\n", i, i,
		        kind_name(n->kind), n->kind == GS__N_KERNEL ? " " : "",
		        n->kind == GS__N_KERNEL ? n->launch.func->entry->name
		                                : "");
	}
	for (int i = 0; i < g->n_nodes; i++)
		for (int j = 0; j < g->nodes[i]->n_deps; j++)
			fprintf(f, "\"n%d\" -> \"n%d\";\n",
			        gs__graph_index(g, g->nodes[i]->deps[j]), i);
	fprintf(f, "}\n");
	if (fclose(f) != 0)
		r = CUDA_ERROR_OPERATING_SYSTEM;
	gs__unlock();
	return r;
}

/* ---- stream capture ------------------------------------------------------ */

static CUresult begin_capture(CUstream hStream, CUstreamCaptureMode mode,
                              bool pt, CUgraph into, const CUgraphNode *deps,
                              size_t ndeps)
{
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	struct gs__graph *g;
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
	if (r == CUDA_SUCCESS && into != NULL &&
	    (!gs__h_is(into, GS__H_GRAPH) || (ndeps > 0 && deps == NULL)))
		r = CUDA_ERROR_INVALID_VALUE;
	if (r != CUDA_SUCCESS) {
		gs__unlock();
		return r;
	}
	g = into != NULL ? (struct gs__graph *)into : gs__graph_new();
	if (g == NULL)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	else
		r = gs__capture_begin(s, mode, g, into == NULL);
	if (r != CUDA_SUCCESS && into == NULL)
		gs__graph_free(g);
	for (size_t i = 0; r == CUDA_SUCCESS && i < ndeps; i++) {
		struct gs__node *d = (struct gs__node *)deps[i];

		if (!gs__h_is(d, GS__H_GRAPH_NODE) || d->graph != g) {
			struct gs__graph *none;

			(void)gs__capture_end(s, &none);
			r = CUDA_ERROR_INVALID_VALUE;
			break;
		}
		if (s->n_deps == s->cap_deps) {
			int ncap = s->cap_deps ? s->cap_deps * 2 : 4;
			struct gs__node **nl =
			    gs__realloc(s->deps, sizeof(*nl) * (size_t)ncap);

			if (nl == NULL) {
				struct gs__graph *none;

				(void)gs__capture_end(s, &none);
				r = CUDA_ERROR_OUT_OF_MEMORY;
				break;
			}
			s->deps = nl;
			s->cap_deps = ncap;
		}
		s->deps[s->n_deps++] = d;
	}
	gs__unlock();
	return r;
}

CUresult gs__begin_capture(CUstream hStream, CUstreamCaptureMode mode, bool pt)
{
	return begin_capture(hStream, mode, pt, NULL, NULL, 0);
}

CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream hStream,
                                         CUstreamCaptureMode mode)
{
	return gs__begin_capture(hStream, mode, false);
}

CUresult CUDAAPI cuStreamBeginCaptureToGraph(
    CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
    const CUgraphEdgeData *dependencyData, size_t numDependencies,
    CUstreamCaptureMode mode)
{
	(void)dependencyData;
	if (hGraph == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return begin_capture(hStream, mode, false, hGraph, dependencies,
	                     numDependencies);
}

CUresult gs__end_capture(CUstream hStream, CUgraph *phGraph, bool pt)
{
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	struct gs__graph *g = NULL;
	CUresult r;

	if (phGraph == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__stream_get(hStream, pt, &ctx, &s);
	if (r == CUDA_SUCCESS)
		r = gs__capture_end(s, &g);
	*phGraph = (CUgraph)g;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	return gs__end_capture(hStream, phGraph, false);
}

CUresult gs__capture_update_deps(CUstream hStream, CUgraphNode *deps, size_t n,
                                 unsigned int flags, bool pt)
{
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	CUresult r;

	if ((flags != CU_STREAM_ADD_CAPTURE_DEPENDENCIES &&
	     flags != CU_STREAM_SET_CAPTURE_DEPENDENCIES) ||
	    (n > 0 && deps == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__stream_get(hStream, pt, &ctx, &s);
	if (r == CUDA_SUCCESS && s->capture == NULL)
		r = CUDA_ERROR_ILLEGAL_STATE;
	if (r == CUDA_SUCCESS)
		r = gs__capture_deps_set(
		    s, (struct gs__node *const *)deps, n,
		    flags == CU_STREAM_ADD_CAPTURE_DEPENDENCIES);
	gs__unlock();
	return r;
}

CUresult CUDAAPI
cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode *dependencies,
                                  const CUgraphEdgeData *dependencyData,
                                  size_t numDependencies, unsigned int flags)
{
	(void)dependencyData;
	return gs__capture_update_deps(hStream, dependencies, numDependencies,
	                               flags, false);
}

/* OUT (each may be NULL): the capture status, id, graph and the nodes
 * the stream's next operation will depend on (valid until it changes). */
static CUresult capture_info(CUstream hStream, bool pt,
                             CUstreamCaptureStatus *st, cuuint64_t *id,
                             CUgraph *graph, const CUgraphNode **deps,
                             const CUgraphEdgeData **edges, size_t *ndeps)
{
	struct gs__ctx *ctx;
	struct gs__stream *s;
	struct gs__capture *c;
	CUresult r;

	if (st == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__stream_peek(hStream, pt, &ctx, &s)) != CUDA_SUCCESS)
		return r;
	c = s->capture;
	*st = c == NULL ? CU_STREAM_CAPTURE_STATUS_NONE
	      : c->invalid == CUDA_SUCCESS
	          ? CU_STREAM_CAPTURE_STATUS_ACTIVE
	          : CU_STREAM_CAPTURE_STATUS_INVALIDATED;
	if (id != NULL)
		*id = c ? c->id : 0;
	if (graph != NULL)
		*graph = c ? (CUgraph)c->graph : NULL;
	if (deps != NULL)
		*deps = c ? (const CUgraphNode *)s->deps : NULL;
	if (edges != NULL)
		*edges = NULL;
	if (ndeps != NULL)
		*ndeps = c ? (size_t)s->n_deps : 0;
	gs__unlock();
	return CUDA_SUCCESS;
}

CUresult gs__is_capturing(CUstream hStream, CUstreamCaptureStatus *st,
                          cuuint64_t *id, CUgraph *graph, bool pt)
{
	return capture_info(hStream, pt, st, id, graph, NULL, NULL, NULL);
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream,
                                     CUstreamCaptureStatus *captureStatus)
{
	return gs__is_capturing(hStream, captureStatus, NULL, NULL, false);
}

CUresult gs__capture_info(CUstream hStream, CUstreamCaptureStatus *st,
                          cuuint64_t *id, CUgraph *graph,
                          const CUgraphNode **deps,
                          const CUgraphEdgeData **edges, size_t *ndeps, bool pt)
{
	return capture_info(hStream, pt, st, id, graph, deps, edges, ndeps);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v3(
    CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
    cuuint64_t *id_out, CUgraph *graph_out,
    const CUgraphNode **dependencies_out, const CUgraphEdgeData **edgeData_out,
    size_t *numDependencies_out)
{
	return capture_info(hStream, false, captureStatus_out, id_out,
	                    graph_out, dependencies_out, edgeData_out,
	                    numDependencies_out);
}
