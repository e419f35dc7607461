/*
 * test_sim_truth.c - the sim's libcuda.so.1, linked with -lcuda, answers
 * as the real driver does where it used to be silently wrong (issue
 * #29), checked through the driver API so it runs where nvcc is absent
 * (tests/integration/sim/progs/ check the same through the CUDA runtime):
 * an unretained primary context made current is what cuCtxGetCurrent
 * reports, kernel names of any length, fork/join capture with its edges,
 * invalidated and unjoined captures, stream-ordered allocation captured
 * as graph memory nodes, refused oversized, cooperative and cluster
 * launches, contents of large allocations, and advice read back.
 *
 * One process, one simulated node of two H100s made in a temporary
 * directory before cuInit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gs/catalog.h"
#include "gs_sim/state.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

static char dir[64];
static char ptx[4096];
static char long_name[400];
static CUmodule mod;
static CUfunction fn_long, fn_k;

static int group_setup(void **state)
{
	struct gs_sim_gpu_init g[2];
	struct gs_errbuf eb = {0};
	CUcontext c;
	int n;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/gs-test-simtruth-XXXXXX");
	if (mkdtemp(dir) == NULL ||
	    gs_sim_gpus_parse("2xH100-SXM5-80GB", g, 2, &n, &eb) != GS_OK ||
	    gs_sim_state_create(dir, g, n, true, &eb) != GS_OK)
		return -1;
	setenv("GPUSLICE_SIM_DIR", dir, 1);
	unsetenv("CUDA_VISIBLE_DEVICES");
	unsetenv("CUDA_MPS_PIPE_DIRECTORY");
	/* a 330-character kernel name, as template code mangles them */
	memcpy(long_name, "_ZN4gs_t", 8);
	for (int i = 8; i < 330; i++)
		long_name[i] = (char)('a' + i % 26);
	long_name[330] = '\0';
	snprintf(ptx, sizeof(ptx),
	         ".version 8.0\n.target sm_90\n.address_size 64\n"
	         ".visible .entry %s(\n\t.param .u64 p0\n)\n{\n\tret;\n}\n"
	         ".visible .entry k(\n\t.param .u64 k_p0\n)\n{\n\tret;\n}\n",
	         long_name);
	if (cuInit(0) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&c, 0) != CUDA_SUCCESS ||
	    cuCtxSetCurrent(c) != CUDA_SUCCESS ||
	    cuModuleLoadData(&mod, ptx) != CUDA_SUCCESS ||
	    cuModuleGetFunction(&fn_long, mod, long_name) != CUDA_SUCCESS ||
	    cuModuleGetFunction(&fn_k, mod, "k") != CUDA_SUCCESS)
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/%s", dir, GS_SIM_STATE_FILE);
	unlink(path);
	rmdir(dir);
	return 0;
}

static void launch(CUfunction f, CUstream s)
{
	CUdeviceptr p = 0;
	void *args[] = {&p};

	assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL),
	                 CUDA_SUCCESS);
}

static void unretained_primary_context_is_current_when_set(void **state)
{
	CUcontext c1, cur = NULL, back;
	CUdevice d = -1;

	(void)state;
	assert_int_equal(cuCtxGetCurrent(&back), CUDA_SUCCESS);
	/* the CUDA runtime's cudaSetDevice(1): the handle, made current
	 * before it is retained */
	assert_int_equal(cuDevicePrimaryCtxRetain(&c1, 1), CUDA_SUCCESS);
	assert_int_equal(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);
	assert_int_equal(cuCtxSetCurrent(c1), CUDA_SUCCESS);
	assert_int_equal(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
	assert_ptr_equal(cur, c1);
	assert_int_equal(cuDevicePrimaryCtxRetain(&c1, 1), CUDA_SUCCESS);
	assert_int_equal(cuCtxGetDevice(&d), CUDA_SUCCESS);
	assert_int_equal(d, 1);
	assert_int_equal(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);
	assert_int_equal(cuCtxSetCurrent(back), CUDA_SUCCESS);
}

static void kernel_names_of_any_length_load_and_launch(void **state)
{
	const char *name = NULL;

	(void)state;
	assert_int_equal(cuFuncGetName(&name, fn_long), CUDA_SUCCESS);
	assert_string_equal(name, long_name);
	launch(fn_long, NULL);
	assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS);
}

static void fork_join_capture_keeps_every_node_and_edge(void **state)
{
	CUstream s1, s2;
	CUevent fork, join;
	CUgraph g;
	CUgraphExec x;
	CUgraphNode from[8], to[8], nodes[8];
	size_t n = 8, ne = 8;
	int into[8] = {0}, outof[8] = {0};

	(void)state;
	assert_int_equal(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING), 0);
	assert_int_equal(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING), 0);
	assert_int_equal(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING), 0);
	assert_int_equal(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING), 0);
	assert_int_equal(
	    cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL),
	    CUDA_SUCCESS);
	launch(fn_k, s1); /* A */
	assert_int_equal(cuEventRecord(fork, s1), CUDA_SUCCESS);
	assert_int_equal(cuStreamWaitEvent(s2, fork, 0), CUDA_SUCCESS);
	launch(fn_k, s2); /* B after A */
	launch(fn_k, s1); /* C after A */
	assert_int_equal(cuEventRecord(join, s2), CUDA_SUCCESS);
	assert_int_equal(cuStreamWaitEvent(s1, join, 0), CUDA_SUCCESS);
	launch(fn_k, s1); /* D after B, C */
	assert_int_equal(cuStreamEndCapture(s1, &g), CUDA_SUCCESS);
	assert_int_equal(cuGraphGetNodes(g, nodes, &n), CUDA_SUCCESS);
	assert_int_equal(n, 4);
	assert_int_equal(cuGraphGetEdges(g, from, to, NULL, &ne), CUDA_SUCCESS);
	assert_int_equal(ne, 4);
	for (size_t i = 0; i < ne; i++)
		for (size_t j = 0; j < n; j++) {
			outof[j] += from[i] == nodes[j];
			into[j] += to[i] == nodes[j];
		}
	/* A: two out; B, C: one in, one out; D: two in */
	assert_int_equal(outof[0], 2);
	assert_int_equal(into[0], 0);
	assert_int_equal(into[1] + into[2], 2);
	assert_int_equal(outof[1] + outof[2], 2);
	assert_int_equal(into[3], 2);
	{
		/* the CUDA 12.0-12.2 signature a program built then gets */
		CUresult(CUDAAPI * get_edges_v1)(CUgraph, CUgraphNode *,
		                                 CUgraphNode *, size_t *);
		CUdriverProcAddressQueryResult q;
		size_t ne1 = 8;

		assert_int_equal(cuGetProcAddress_v2("cuGraphGetEdges",
		                                     (void **)&get_edges_v1,
		                                     12000, 0, &q),
		                 CUDA_SUCCESS);
		assert_int_equal(get_edges_v1(g, from, to, &ne1), CUDA_SUCCESS);
		assert_int_equal(ne1, 4);
	}
	assert_int_equal(cuGraphInstantiateWithFlags(&x, g, 0), CUDA_SUCCESS);
	assert_int_equal(cuGraphLaunch(x, s1), CUDA_SUCCESS);
	assert_int_equal(cuStreamSynchronize(s1), CUDA_SUCCESS);
	assert_int_equal(cuGraphExecDestroy(x), CUDA_SUCCESS);
	assert_int_equal(cuGraphDestroy(g), CUDA_SUCCESS);

	/* forked, never joined */
	assert_int_equal(
	    cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL),
	    CUDA_SUCCESS);
	launch(fn_k, s1);
	assert_int_equal(cuEventRecord(fork, s1), CUDA_SUCCESS);
	assert_int_equal(cuStreamWaitEvent(s2, fork, 0), CUDA_SUCCESS);
	launch(fn_k, s2);
	assert_int_equal(cuStreamEndCapture(s1, &g),
	                 CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
	assert_int_equal(cuStreamDestroy(s1), CUDA_SUCCESS);
	assert_int_equal(cuStreamDestroy(s2), CUDA_SUCCESS);
	assert_int_equal(cuEventDestroy(fork), CUDA_SUCCESS);
	assert_int_equal(cuEventDestroy(join), CUDA_SUCCESS);
}

static void uncapturable_calls_invalidate_the_capture(void **state)
{
	CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
	CUstream s;
	CUgraph g = (CUgraph)1, g2;
	CUgraphExec x;
	CUdeviceptr p, m;
	CUstreamCaptureStatus st;

	(void)state;
	assert_int_equal(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), 0);
	assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
	                 CUDA_SUCCESS);
	assert_int_equal(cuMemAlloc(&p, MIB), CUDA_SUCCESS);
	launch(fn_k, s);
	/* only a graph allocation may be freed in a capture (the rule of
	 * cuGraphAddMemFreeNode) */
	assert_int_equal(cuMemFreeAsync(p, s), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuStreamIsCapturing(s, &st), CUDA_SUCCESS);
	assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
	assert_int_equal(cuStreamEndCapture(s, &g),
	                 CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	assert_null(g);
	assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
	                 CUDA_SUCCESS);
	assert_int_not_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
	assert_int_equal(cuStreamEndCapture(s, &g),
	                 CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	/* what the sim has no node for: a prefetch, a graph launched into
	 * the capture (a child-graph node on the real driver) */
	assert_int_equal(cuMemAllocManaged(&m, MIB, CU_MEM_ATTACH_GLOBAL),
	                 CUDA_SUCCESS);
	assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
	                 CUDA_SUCCESS);
	assert_int_not_equal(cuMemPrefetchAsync(m, MIB, loc, 0, s),
	                     CUDA_SUCCESS);
	assert_int_equal(cuStreamEndCapture(s, &g),
	                 CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	assert_int_equal(cuGraphCreate(&g, 0), CUDA_SUCCESS);
	assert_int_equal(cuGraphInstantiate(&x, g, 0), CUDA_SUCCESS);
	assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
	                 CUDA_SUCCESS);
	assert_int_not_equal(cuGraphLaunch(x, s), CUDA_SUCCESS);
	assert_int_equal(cuStreamEndCapture(s, &g2),
	                 CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	assert_int_equal(cuGraphExecDestroy(x), CUDA_SUCCESS);
	assert_int_equal(cuGraphDestroy(g), CUDA_SUCCESS);
	assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
	assert_int_equal(cuMemFree(m), CUDA_SUCCESS);
	assert_int_equal(cuMemFree(p), CUDA_SUCCESS);
}

static cuuint64_t graph_mem(CUgraphMem_attribute a)
{
	cuuint64_t v = ~0ULL;

	assert_int_equal(cuDeviceGetGraphMemAttribute(0, a, &v), CUDA_SUCCESS);
	return v;
}

static void stream_ordered_allocation_is_captured_as_memory_nodes(void **state)
{
	CUDA_MEM_ALLOC_NODE_PARAMS ap;
	CUgraphNode nodes[8];
	CUgraphNodeType t;
	CUgraphExec x;
	CUgraph g = NULL;
	CUstream s;
	CUdeviceptr p = 0, f = 0;
	uint32_t h[4];
	size_t n = 8;

	(void)state;
	assert_int_equal(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), 0);
	assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
	                 CUDA_SUCCESS);
	assert_int_equal(cuMemAllocAsync(&p, MIB, s), CUDA_SUCCESS);
	assert_true(p != 0);
	assert_int_equal(cuMemsetD32Async(p, 0x5a5a5a5a, 4, s), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoHAsync(h, p, sizeof(h), s), CUDA_SUCCESS);
	assert_int_equal(cuMemFreeAsync(p, s), CUDA_SUCCESS);
	assert_int_equal(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
	assert_int_equal(cuGraphGetNodes(g, nodes, &n), CUDA_SUCCESS);
	assert_int_equal(n, 4);
	assert_int_equal(cuGraphNodeGetType(nodes[0], &t), CUDA_SUCCESS);
	assert_int_equal(t, CU_GRAPH_NODE_TYPE_MEM_ALLOC);
	assert_int_equal(cuGraphNodeGetType(nodes[3], &t), CUDA_SUCCESS);
	assert_int_equal(t, CU_GRAPH_NODE_TYPE_MEM_FREE);
	assert_int_equal(cuGraphMemAllocNodeGetParams(nodes[0], &ap),
	                 CUDA_SUCCESS);
	assert_true(ap.dptr == p && ap.bytesize == MIB);
	assert_int_equal(cuGraphMemFreeNodeGetParams(nodes[3], &f),
	                 CUDA_SUCCESS);
	assert_true(f == p);
	/* the memory exists only while the graph runs */
	assert_int_equal(cuMemsetD32(p, 0, 1), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(graph_mem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0);
	assert_int_equal(cuGraphInstantiate(&x, g, 0), CUDA_SUCCESS);
	for (int run = 0; run < 2; run++) {
		memset(h, 0, sizeof(h));
		assert_int_equal(cuGraphLaunch(x, s), CUDA_SUCCESS);
		assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
		for (int i = 0; i < 4; i++)
			assert_int_equal(h[i], 0x5a5a5a5a);
	}
	assert_int_equal(graph_mem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0);
	assert_int_equal(graph_mem(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT),
	                 MIB);
	assert_int_equal(cuDeviceGraphMemTrim(0), CUDA_SUCCESS);
	assert_int_equal(graph_mem(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 0);
	assert_int_equal(cuGraphExecDestroy(x), CUDA_SUCCESS);
	assert_int_equal(cuGraphDestroy(g), CUDA_SUCCESS);
	/* the address went with its graph */
	assert_int_equal(cuMemsetD32(p, 0, 1), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
}

static void oversized_cooperative_and_cluster_launches_are_refused(void **state)
{
	CUdeviceptr p = 0;
	void *args[] = {&p};
	int per_sm = 0, sms = 0;
	CUlaunchAttribute at[2];
	CUlaunchConfig c = {0};

	(void)state;
	/* a block or grid over the device's limits: the answer cuLaunchKernel
	 * documents (and driver-API users get from real drivers) */
	assert_int_equal(
	    cuLaunchKernel(fn_k, 1, 1, 1, 2048, 1, 1, 0, NULL, args, NULL),
	    CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(
	    cuLaunchKernel(fn_k, 1, 65536, 1, 32, 1, 1, 0, NULL, args, NULL),
	    CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(
	    cuLaunchKernel(fn_k, 1, 1, 1, 32, 1, 65, 0, NULL, args, NULL),
	    CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(
	    cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn_k, 1024, 0),
	    CUDA_SUCCESS);
	assert_int_equal(cuDeviceGetAttribute(
	                     &sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0),
	                 CUDA_SUCCESS);
	assert_int_equal(
	    cuLaunchCooperativeKernel(fn_k, (unsigned)(per_sm * sms), 1, 1,
	                              1024, 1, 1, 0, NULL, args),
	    CUDA_SUCCESS);
	assert_int_equal(
	    cuLaunchCooperativeKernel(fn_k, (unsigned)(per_sm * sms + 1), 1, 1,
	                              1024, 1, 1, 0, NULL, args),
	    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
	c.gridDimX = 32;
	c.gridDimY = c.gridDimZ = 1;
	c.blockDimX = 64;
	c.blockDimY = c.blockDimZ = 1;
	at[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
	at[0].value.clusterDim.x = 16;
	at[0].value.clusterDim.y = at[0].value.clusterDim.z = 1;
	c.attrs = at;
	c.numAttrs = 1;
	assert_int_equal(cuLaunchKernelEx(&c, fn_k, args, NULL),
	                 CUDA_ERROR_INVALID_CLUSTER_SIZE);
	assert_int_equal(
	    cuFuncSetAttribute(
	        fn_k, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
	    CUDA_SUCCESS);
	assert_int_equal(cuLaunchKernelEx(&c, fn_k, args, NULL), CUDA_SUCCESS);
	c.gridDimX = 24;
	assert_int_equal(cuLaunchKernelEx(&c, fn_k, args, NULL),
	                 CUDA_ERROR_INVALID_CLUSTER_SIZE);
	at[1].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
	at[1].value.cooperative = 1;
	at[0].value.clusterDim.x = 8;
	c.numAttrs = 2;
	c.gridDimX = (unsigned)(per_sm * sms * 2);
	c.blockDimX = 1024;
	assert_int_equal(cuLaunchKernelEx(&c, fn_k, args, NULL),
	                 CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
	assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS);
}

static void
disabled_nodes_do_not_run_and_capture_dependencies_update(void **state)
{
	CUdeviceptr d;
	CUgraph g;
	CUgraphExec x;
	CUgraphNode ms, roots[4];
	CUDA_MEMSET_NODE_PARAMS mp = {0};
	CUstream s;
	uint32_t v = 0;
	unsigned int en = 9;
	size_t nr = 4;

	(void)state;
	assert_int_equal(cuMemAlloc(&d, 4096), CUDA_SUCCESS);
	assert_int_equal(cuMemsetD32(d, 0, 1024), CUDA_SUCCESS);
	assert_int_equal(cuGraphCreate(&g, 0), CUDA_SUCCESS);
	mp.dst = d;
	mp.value = 7;
	mp.elementSize = 4;
	mp.width = 1024;
	mp.height = 1;
	assert_int_equal(cuGraphAddMemsetNode(&ms, g, NULL, 0, &mp, NULL),
	                 CUDA_SUCCESS);
	assert_int_equal(cuGraphInstantiateWithFlags(&x, g, 0), CUDA_SUCCESS);
	assert_int_equal(cuGraphNodeSetEnabled(x, ms, 0), CUDA_SUCCESS);
	assert_int_equal(cuGraphNodeGetEnabled(x, ms, &en), CUDA_SUCCESS);
	assert_int_equal(en, 0);
	assert_int_equal(cuGraphLaunch(x, NULL), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoH(&v, d, 4), CUDA_SUCCESS);
	assert_int_equal(v, 0);
	assert_int_equal(cuGraphNodeSetEnabled(x, ms, 1), CUDA_SUCCESS);
	assert_int_equal(cuGraphLaunch(x, NULL), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoH(&v, d, 4), CUDA_SUCCESS);
	assert_int_equal(v, 7);
	assert_int_equal(cuGraphExecDestroy(x), CUDA_SUCCESS);
	assert_int_equal(cuGraphDestroy(g), CUDA_SUCCESS);

	/* a capture whose stream is told to depend on nothing: two roots */
	assert_int_equal(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), 0);
	assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
	                 CUDA_SUCCESS);
	launch(fn_k, s);
	assert_int_equal(
	    cuStreamUpdateCaptureDependencies(
	        s, NULL, NULL, 0, CU_STREAM_SET_CAPTURE_DEPENDENCIES),
	    CUDA_SUCCESS);
	launch(fn_k, s);
	assert_int_equal(cuStreamEndCapture(s, &g),
	                 CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
	assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
	                 CUDA_SUCCESS);
	launch(fn_k, s);
	{
		const CUgraphNode *deps;
		size_t nd = 0;
		CUstreamCaptureStatus st;
		CUgraphNode first;

		assert_int_equal(cuStreamGetCaptureInfo(s, &st, NULL, NULL,
		                                        &deps, NULL, &nd),
		                 CUDA_SUCCESS);
		assert_int_equal(nd, 1);
		first = deps[0];
		assert_int_equal(
		    cuStreamUpdateCaptureDependencies(
		        s, NULL, NULL, 0, CU_STREAM_SET_CAPTURE_DEPENDENCIES),
		    CUDA_SUCCESS);
		launch(fn_k, s);
		/* join the first back: both lead to the last node */
		assert_int_equal(
		    cuStreamUpdateCaptureDependencies(
		        s, &first, NULL, 1, CU_STREAM_ADD_CAPTURE_DEPENDENCIES),
		    CUDA_SUCCESS);
	}
	launch(fn_k, s);
	assert_int_equal(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
	assert_int_equal(cuGraphGetRootNodes(g, roots, &nr), CUDA_SUCCESS);
	assert_int_equal(nr, 2);
	assert_int_equal(cuGraphDestroy(g), CUDA_SUCCESS);
	assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
	assert_int_equal(cuMemFree(d), CUDA_SUCCESS);
}

/* A context torn down in the middle of a capture takes the capture with
 * it; captures in the other contexts go on. */
static void a_context_destroyed_mid_capture_ends_its_capture(void **state)
{
	CUcontext c, prev;
	CUstream s, s2;
	CUevent ev;
	CUgraph g;
	CUmodule m;
	CUfunction k;
	CUdeviceptr p = 0;
	void *args[] = {&p};

	(void)state;
	assert_int_equal(cuCtxGetCurrent(&prev), CUDA_SUCCESS);
	assert_int_equal(cuCtxCreate(&c, NULL, 0, 0), CUDA_SUCCESS);
	assert_int_equal(cuModuleLoadData(&m, ptx), CUDA_SUCCESS);
	assert_int_equal(cuModuleGetFunction(&k, m, "k"), CUDA_SUCCESS);
	assert_int_equal(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), 0);
	assert_int_equal(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING), 0);
	assert_int_equal(cuEventCreate(&ev, 0), CUDA_SUCCESS);
	assert_int_equal(
	    cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED),
	    CUDA_SUCCESS);
	assert_int_equal(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, s, args, NULL),
	                 CUDA_SUCCESS);
	assert_int_equal(cuEventRecord(ev, s), CUDA_SUCCESS);
	assert_int_equal(cuStreamWaitEvent(s2, ev, 0), CUDA_SUCCESS);
	assert_int_equal(cuCtxDestroy(c), CUDA_SUCCESS);
	assert_int_equal(cuCtxSetCurrent(prev), CUDA_SUCCESS);
	assert_int_equal(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), 0);
	assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
	                 CUDA_SUCCESS);
	launch(fn_k, s);
	assert_int_equal(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
	assert_int_equal(cuGraphDestroy(g), CUDA_SUCCESS);
	assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
}

static void large_allocations_keep_their_contents(void **state)
{
	CUdeviceptr p;
	uint64_t sig = 0x5eed5eed12345678ULL, got = 0;
	const uint64_t len = 6 * GIB;

	(void)state;
	assert_int_equal(cuMemAlloc(&p, len), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyHtoD(p + len - 8, &sig, 8), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoH(&got, p + len - 8, 8), CUDA_SUCCESS);
	assert_true(got == sig);
	assert_int_equal(cuMemsetD8(p, 0, len), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoH(&got, p + len - 8, 8), CUDA_SUCCESS);
	assert_true(got == 0);
	assert_int_equal(cuMemFree(p), CUDA_SUCCESS);
}

static void memory_advice_is_recorded_and_reported(void **state)
{
	CUdeviceptr m;
	CUmemLocation dev1 = {CU_MEM_LOCATION_TYPE_DEVICE, 1};
	int v = -9;

	(void)state;
	assert_int_equal(cuMemAllocManaged(&m, 8 * MIB, CU_MEM_ATTACH_GLOBAL),
	                 CUDA_SUCCESS);
	assert_int_equal(
	    cuMemAdvise(m, 4 * MIB, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, dev1),
	    CUDA_SUCCESS);
	assert_int_equal(
	    cuMemRangeGetAttribute(
	        &v, 4, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, 4 * MIB),
	    CUDA_SUCCESS);
	assert_int_equal(v, 1);
	/* half the range without it: no one location */
	assert_int_equal(
	    cuMemRangeGetAttribute(
	        &v, 4, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, 8 * MIB),
	    CUDA_SUCCESS);
	assert_int_equal(v, CU_DEVICE_INVALID);
	assert_int_equal(cuMemFree(m), CUDA_SUCCESS);
}

/* The whole GPU's figures with MIG off, and the MIG-capable models
 * NVIDIA's mig-parted ships configs for (found by their PCI ids too). */
static void catalog_has_whole_gpu_figures_and_blackwell_models(void **state)
{
	const struct gs_gpu_model *a = gs_catalog_find("A100-SXM4-40GB");
	const struct gs_gpu_model *b = gs_catalog_find("B300");
	const struct gs_gpu_model *gb = gs_catalog_find("GB300");
	const struct gs_gpu_model *r = gs_catalog_find("RTX-PRO-6000");

	(void)state;
	assert_non_null(a);
	assert_int_equal(a->sm_count, 108);
	assert_int_equal(a->memory_mib, 40536);
	assert_int_equal(gs_catalog_profile(a, "7g.40gb")->sm_count, 98);
	assert_int_equal(gs_catalog_find("A100-SXM4-80GB")->sm_count, 108);
	assert_non_null(b);
	assert_non_null(gb);
	assert_non_null(r);
	assert_ptr_equal(gs_catalog_find_pci(0x318210DEu), b);
	assert_ptr_equal(gs_catalog_find_pci(0x31C210DEu), gb);
	assert_ptr_equal(gs_catalog_find_pci(0x2BB510DEu), r);
	assert_non_null(gs_catalog_profile(b, "3g.135gb"));
	assert_non_null(gs_catalog_profile(gb, "7g.278gb"));
	assert_non_null(gs_catalog_profile(r, "2g.48gb+gfx"));
	assert_int_equal(r->sm_count, 188);
	assert_int_equal(r->compute_slices, 4);
	assert_true(b->sm_count_inferred); /* from B200's profiles: said so */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(unretained_primary_context_is_current_when_set),
	    cmocka_unit_test(kernel_names_of_any_length_load_and_launch),
	    cmocka_unit_test(fork_join_capture_keeps_every_node_and_edge),
	    cmocka_unit_test(uncapturable_calls_invalidate_the_capture),
	    cmocka_unit_test(
	        stream_ordered_allocation_is_captured_as_memory_nodes),
	    cmocka_unit_test(
	        oversized_cooperative_and_cluster_launches_are_refused),
	    cmocka_unit_test(
	        disabled_nodes_do_not_run_and_capture_dependencies_update),
	    cmocka_unit_test(a_context_destroyed_mid_capture_ends_its_capture),
	    cmocka_unit_test(large_allocations_keep_their_contents),
	    cmocka_unit_test(memory_advice_is_recorded_and_reported),
	    cmocka_unit_test(
	        catalog_has_whole_gpu_figures_and_blackwell_models),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
