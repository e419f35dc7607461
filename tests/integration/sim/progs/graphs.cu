/*
 * graphs.cu - CUDA graphs and stream capture as a runtime program uses
 * them, checked against what the real driver does: fork/join capture
 * (event record + cross-stream waits become edges: 4 kernels, 4 edges),
 * an unjoined fork ends in cudaErrorStreamCaptureUnjoined, calls that
 * cannot be captured invalidate the capture, async copies/memsets/host
 * functions are captured as nodes (they happen when the graph runs, not
 * before), stream-ordered allocations captured as graph memory nodes
 * (the memory exists while the graph runs; a kernel fills it, a copy
 * takes it out, each of two launches; allocations the graph leaves live,
 * auto-free on launch, the graph allocator's memory and trim), and the
 * graph API: kernel/memcpy/memset/host/event nodes,
 * node parameters read and changed, exec update, clone, dot print.
 * Prints "all ok".
 */
#include "check.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__global__ void k1(int *p) { if (p) p[0] = 1; }
__global__ void k2(int *p) { if (p) p[1] = 2; }
__global__ void k3(int *p) { if (p) p[2] = 3; }
__global__ void k4(int *p) { if (p) p[3] = 4; }

/* Which of k1..k4 a kernel node runs (0 if none). */
static int which(cudaGraphNode_t n)
{
	cudaKernelNodeParams p = {};
	const void *ks[] = {(void *)k1, (void *)k2, (void *)k3, (void *)k4};
	cudaFunction_t f;

	if (cudaGraphKernelNodeGetParams(n, &p) != cudaSuccess)
		return 0;
	for (int i = 0; i < 4; i++)
		if (cudaGetFuncBySymbol(&f, ks[i]) == cudaSuccess &&
		    (void *)f == p.func)
			return i + 1;
	for (int i = 0; i < 4; i++)
		if (p.func == ks[i])
			return i + 1;
	return 0;
}

static void check_fork_join(void)
{
	cudaStream_t s1, s2;
	cudaEvent_t fork, join;
	cudaGraph_t g;
	cudaGraphExec_t x;
	cudaGraphNode_t nodes[8], from[8], to[8];
	size_t n = 8, ne = 8;
	int *d, edges[5][5] = {{0}};

	CHECK(cudaMalloc(&d, 64));
	CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
	CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
	CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
	k1<<<1, 32, 0, s1>>>(d);
	CHECK(cudaEventRecord(fork, s1));
	CHECK(cudaStreamWaitEvent(s2, fork, 0));
	k2<<<1, 32, 0, s2>>>(d);
	k3<<<1, 32, 0, s1>>>(d);
	CHECK(cudaEventRecord(join, s2));
	CHECK(cudaStreamWaitEvent(s1, join, 0));
	k4<<<1, 32, 0, s1>>>(d);
	CHECK(cudaStreamEndCapture(s1, &g));
	CHECK(cudaGraphGetNodes(g, nodes, &n));
	EXPECT(n == 4);
	CHECK(cudaGraphGetEdges(g, from, to, NULL, &ne));
	EXPECT(ne == 4);
	for (size_t i = 0; i < ne && i < 8; i++)
		edges[which(from[i])][which(to[i])] = 1;
	EXPECT(edges[1][2] && edges[1][3] && edges[2][4] && edges[3][4]);
	printf("fork/join: %zu nodes, %zu edges\n", n, ne);
	CHECK(cudaGraphInstantiate(&x, g, 0));
	CHECK(cudaGraphLaunch(x, s1));
	CHECK(cudaStreamSynchronize(s1));
	CHECK(cudaGraphExecDestroy(x));
	CHECK(cudaGraphDestroy(g));

	/* forked and never joined back */
	CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
	k1<<<1, 32, 0, s1>>>(d);
	CHECK(cudaEventRecord(fork, s1));
	CHECK(cudaStreamWaitEvent(s2, fork, 0));
	k2<<<1, 32, 0, s2>>>(d);
	WANT(cudaStreamEndCapture(s1, &g), cudaErrorStreamCaptureUnjoined);
	(void)cudaGetLastError();
	CHECK(cudaStreamDestroy(s1));
	CHECK(cudaStreamDestroy(s2));
	CHECK(cudaFree(d));
}

static void check_invalidation(void)
{
	cudaStream_t s;
	cudaGraph_t g = NULL;
	cudaStreamCaptureStatus st;
	int *d;

	CHECK(cudaMalloc(&d, 64));
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	/* waiting for a capturing stream */
	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	k1<<<1, 32, 0, s>>>(d);
	EXPECT(cudaStreamSynchronize(s) != cudaSuccess);
	CHECK(cudaStreamIsCapturing(s, &st));
	EXPECT(st == cudaStreamCaptureStatusInvalidated);
	WANT(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
	EXPECT(g == NULL);
	(void)cudaGetLastError();
	CHECK(cudaStreamDestroy(s));
	CHECK(cudaFree(d));
}

static int host_calls;
static void CUDART_CB on_host(void *arg)
{
	host_calls += *(int *)arg;
}

static void check_captured_copies(void)
{
	cudaStream_t s;
	cudaGraph_t g;
	cudaGraphExec_t x;
	unsigned char *d, h[256];
	size_t n = 0;
	int one = 1;

	memset(h, 0xee, sizeof(h));
	CHECK(cudaMalloc(&d, sizeof(h)));
	CHECK(cudaMemset(d, 0, sizeof(h)));
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CHECK(cudaMemsetAsync(d, 0x5a, sizeof(h), s));
	CHECK(cudaMemcpyAsync(h, d, sizeof(h), cudaMemcpyDeviceToHost, s));
	CHECK(cudaLaunchHostFunc(s, on_host, &one));
	CHECK(cudaStreamEndCapture(s, &g));
	CHECK(cudaGraphGetNodes(g, NULL, &n));
	EXPECT(n == 3);
	/* captured, not done */
	EXPECT(h[0] == 0xee && host_calls == 0);
	CHECK(cudaGraphInstantiate(&x, g, 0));
	CHECK(cudaGraphLaunch(x, s));
	CHECK(cudaGraphLaunch(x, s));
	CHECK(cudaStreamSynchronize(s));
	EXPECT(h[0] == 0x5a && h[255] == 0x5a && host_calls == 2);
	CHECK(cudaGraphExecDestroy(x));
	CHECK(cudaGraphDestroy(g));
	CHECK(cudaStreamDestroy(s));
	CHECK(cudaFree(d));
}

static void check_graph_api(void)
{
	cudaGraph_t g, g2, c;
	cudaGraphExec_t x;
	cudaGraphNode_t kn, cn, hn, en, found, extra;
	cudaKernelNodeParams kp = {}, got = {};
	cudaHostNodeParams hp = {};
	cudaGraphExecUpdateResultInfo info;
	cudaGraphNodeType t;
	cudaEvent_t ev;
	int *d, hbuf[4] = {0}, one = 1, *dp;
	void *args[1] = {&dp};
	char path[] = "/tmp/gs-simprog-dot-XXXXXX", line[256];
	FILE *f;
	bool arrow = false;
	int fd;

	CHECK(cudaMalloc(&d, 64));
	dp = d;
	CHECK(cudaEventCreate(&ev));
	CHECK(cudaGraphCreate(&g, 0));
	kp.func = (void *)k1;
	kp.gridDim = dim3(2);
	kp.blockDim = dim3(32);
	kp.kernelParams = args;
	CHECK(cudaGraphAddKernelNode(&kn, g, NULL, 0, &kp));
	CHECK(cudaGraphAddMemcpyNode1D(&cn, g, &kn, 1, hbuf, d, sizeof(hbuf),
	                               cudaMemcpyDeviceToHost));
	hp.fn = on_host;
	hp.userData = &one;
	CHECK(cudaGraphAddHostNode(&hn, g, &cn, 1, &hp));
	CHECK(cudaGraphAddEventRecordNode(&en, g, &hn, 1, ev));
	CHECK(cudaGraphNodeGetType(cn, &t));
	EXPECT(t == cudaGraphNodeTypeMemcpy);
	CHECK(cudaGraphNodeGetType(en, &t));
	EXPECT(t == cudaGraphNodeTypeEventRecord);
	CHECK(cudaGraphKernelNodeGetParams(kn, &got));
	EXPECT(got.gridDim.x == 2 && got.blockDim.x == 32);
	EXPECT(got.kernelParams != NULL &&
	       *(int **)got.kernelParams[0] == d);
	kp.gridDim = dim3(4);
	CHECK(cudaGraphKernelNodeSetParams(kn, &kp));
	CHECK(cudaGraphKernelNodeGetParams(kn, &got));
	EXPECT(got.gridDim.x == 4);

	CHECK(cudaGraphInstantiate(&x, g, 0));
	kp.gridDim = dim3(8);
	CHECK(cudaGraphExecKernelNodeSetParams(x, kn, &kp));
	/* an update from a graph of the same shape works ... */
	CHECK(cudaGraphClone(&c, g));
	CHECK(cudaGraphNodeFindInClone(&found, kn, c));
	CHECK(cudaGraphKernelNodeSetParams(found, &kp));
	CHECK(cudaGraphExecUpdate(x, c, &info));
	EXPECT(info.result == cudaGraphExecUpdateSuccess);
	/* ... one with another node does not */
	CHECK(cudaGraphClone(&g2, g));
	CHECK(cudaGraphAddEmptyNode(&extra, g2, NULL, 0));
	WANT(cudaGraphExecUpdate(x, g2, &info), cudaErrorGraphExecUpdateFailure);
	EXPECT(info.result == cudaGraphExecUpdateErrorTopologyChanged);
	(void)cudaGetLastError();
	host_calls = 0;
	CHECK(cudaGraphLaunch(x, 0));
	CHECK(cudaStreamSynchronize(0));
	EXPECT(host_calls == 1);
	CHECK(cudaEventSynchronize(ev));

	fd = mkstemp(path);
	EXPECT(fd >= 0);
	CHECK(cudaGraphDebugDotPrint(g, path, cudaGraphDebugDotFlagsVerbose));
	f = fopen(path, "r");
	EXPECT(f != NULL);
	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		arrow = arrow || strstr(line, "->") != NULL;
	EXPECT(arrow);
	if (f != NULL)
		fclose(f);
	unlink(path);
	CHECK(cudaGraphExecDestroy(x));
	CHECK(cudaGraphDestroy(g2));
	CHECK(cudaGraphDestroy(c));
	CHECK(cudaGraphDestroy(g));
	CHECK(cudaEventDestroy(ev));
	CHECK(cudaFree(d));
}

__global__ void fill(int *p, int n, int base)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] = base + 3 * i;
}

/* Elements of h[0..n) that are not base + 3i. */
static int wrong(const int *h, int n, int base)
{
	int bad = 0;

	for (int i = 0; i < n; i++)
		bad += h[i] != base + 3 * i;
	return bad;
}

static unsigned long long graph_mem(int dev, cudaGraphMemAttributeType a)
{
	unsigned long long v = ~0ull;

	CHECK(cudaDeviceGetGraphMemAttribute(dev, a, &v));
	return v;
}

static void check_graph_memory(void)
{
	const int n = 1000;
	const size_t len = n * sizeof(int);
	cudaStream_t s;
	cudaGraph_t g, g2, g3;
	cudaGraphExec_t x, x2;
	cudaGraphNode_t nodes[8], an = NULL, fn = NULL, fn2;
	cudaGraphExecUpdateResultInfo ui = {};
	cudaGraphNodeType t;
	cudaMemAllocNodeParams ap = {};
	size_t nn = 8;
	int *d = NULL, *plain, *h, dev;
	void *fp = NULL;

	CHECK(cudaGetDevice(&dev));
	CHECK(cudaMallocHost(&h, len));
	CHECK(cudaMalloc(&plain, 64));
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

	/* alloc -> kernel writing into it -> copy out -> free */
	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CHECK(cudaMallocAsync(&d, len, s));
	fill<<<(n + 255) / 256, 256, 0, s>>>(d, n, 7);
	CHECK(cudaMemcpyAsync(h, d, len, cudaMemcpyDeviceToHost, s));
	CHECK(cudaFreeAsync(d, s));
	CHECK(cudaStreamEndCapture(s, &g));
	EXPECT(d != NULL);
	CHECK(cudaGraphGetNodes(g, nodes, &nn));
	EXPECT(nn == 4);
	for (size_t i = 0; i < nn && i < 8; i++) {
		CHECK(cudaGraphNodeGetType(nodes[i], &t));
		if (t == cudaGraphNodeTypeMemAlloc)
			an = nodes[i];
		if (t == cudaGraphNodeTypeMemFree)
			fn = nodes[i];
	}
	EXPECT(an != NULL && fn != NULL);
	if (an != NULL && fn != NULL) {
		CHECK(cudaGraphMemAllocNodeGetParams(an, &ap));
		EXPECT(ap.dptr == d && ap.bytesize == len &&
		       ap.poolProps.location.id == dev);
		CHECK(cudaGraphMemFreeNodeGetParams(fn, &fp));
		EXPECT(fp == d);
	}
	/* captured, not run: the memory does not exist yet */
	EXPECT(graph_mem(dev, cudaGraphMemAttrUsedMemCurrent) == 0);
	EXPECT(cudaMemset(d, 0, len) != cudaSuccess);
	(void)cudaGetLastError();
	CHECK(cudaGraphInstantiate(&x, g, 0));
	/* one exec at a time for a graph with memory nodes */
	EXPECT(cudaGraphInstantiate(&x2, g, 0) != cudaSuccess);
	(void)cudaGetLastError();
	for (int run = 0; run < 2; run++) {
		memset(h, 0, len);
		CHECK(cudaGraphLaunch(x, s));
		CHECK(cudaStreamSynchronize(s));
		EXPECT(wrong(h, n, 7) == 0);
		printf("graph memory: launch %d, h[999] = %d\n", run, h[n - 1]);
	}
	/* freed by the graph: gone, held by the graph allocator until trim */
	EXPECT(graph_mem(dev, cudaGraphMemAttrUsedMemCurrent) == 0);
	EXPECT(graph_mem(dev, cudaGraphMemAttrUsedMemHigh) >= len);
	EXPECT(graph_mem(dev, cudaGraphMemAttrReservedMemCurrent) >= len);
	CHECK(cudaDeviceGraphMemTrim(dev));
	EXPECT(graph_mem(dev, cudaGraphMemAttrReservedMemCurrent) == 0);
	/* freed in its own graph: not the program's to free */
	EXPECT(cudaFree(d) != cudaSuccess);
	(void)cudaGetLastError();
	CHECK(cudaGraphExecDestroy(x));
	CHECK(cudaGraphDestroy(g));

	/* an allocation the graph leaves live, freed outside it */
	d = NULL;
	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CHECK(cudaMallocAsync(&d, len, s));
	fill<<<(n + 255) / 256, 256, 0, s>>>(d, n, 100);
	CHECK(cudaStreamEndCapture(s, &g));
	CHECK(cudaGraphInstantiate(&x, g, 0));
	CHECK(cudaGraphLaunch(x, s));
	CHECK(cudaStreamSynchronize(s));
	EXPECT(graph_mem(dev, cudaGraphMemAttrUsedMemCurrent) >= len);
	memset(h, 0, len);
	CHECK(cudaMemcpy(h, d, len, cudaMemcpyDeviceToHost));
	EXPECT(wrong(h, n, 100) == 0);
	/* launched again while its allocation lives */
	WANT(cudaGraphLaunch(x, s), cudaErrorInvalidValue);
	(void)cudaGetLastError();
	CHECK(cudaFreeAsync(d, s));
	CHECK(cudaStreamSynchronize(s));
	EXPECT(graph_mem(dev, cudaGraphMemAttrUsedMemCurrent) == 0);
	CHECK(cudaGraphLaunch(x, s));
	CHECK(cudaStreamSynchronize(s));
	memset(h, 0, len);
	CHECK(cudaMemcpy(h, d, len, cudaMemcpyDeviceToHost));
	EXPECT(wrong(h, n, 100) == 0);
	CHECK(cudaFree(d));
	CHECK(cudaGraphExecDestroy(x));
	/* instantiated to free its allocations when launched again */
	CHECK(cudaGraphInstantiate(&x, g,
	                           cudaGraphInstantiateFlagAutoFreeOnLaunch));
	CHECK(cudaGraphLaunch(x, s));
	CHECK(cudaGraphLaunch(x, s));
	CHECK(cudaStreamSynchronize(s));
	memset(h, 0, len);
	CHECK(cudaMemcpy(h, d, len, cudaMemcpyDeviceToHost));
	EXPECT(wrong(h, n, 100) == 0);
	CHECK(cudaFree(d));
	CHECK(cudaGraphExecDestroy(x));
	CHECK(cudaGraphDestroy(g));

	/* memory nodes added by hand */
	CHECK(cudaGraphCreate(&g, 0));
	ap = cudaMemAllocNodeParams{};
	ap.poolProps.allocType = cudaMemAllocationTypePinned;
	ap.poolProps.location.type = cudaMemLocationTypeDevice;
	ap.poolProps.location.id = dev;
	ap.bytesize = 4096;
	CHECK(cudaGraphAddMemAllocNode(&an, g, NULL, 0, &ap));
	EXPECT(ap.dptr != NULL);
	CHECK(cudaGraphAddMemFreeNode(&fn, g, &an, 1, ap.dptr));
	/* freed twice in one graph; an address no alloc node returned */
	WANT(cudaGraphAddMemFreeNode(&fn2, g, &an, 1, ap.dptr),
	     cudaErrorInvalidValue);
	WANT(cudaGraphAddMemFreeNode(&fn2, g, NULL, 0, plain),
	     cudaErrorInvalidValue);
	/* freed in its own graph: another graph may not free it too */
	CHECK(cudaGraphCreate(&g2, 0));
	WANT(cudaGraphAddMemFreeNode(&fn2, g2, NULL, 0, ap.dptr),
	     cudaErrorInvalidValue);
	/* a graph with memory nodes keeps its nodes and edges, has no
	 * clone, and its exec cannot be updated */
	EXPECT(cudaGraphDestroyNode(fn) != cudaSuccess);
	EXPECT(cudaGraphRemoveDependencies(g, &an, &fn, NULL, 1) !=
	       cudaSuccess);
	EXPECT(cudaGraphClone(&g3, g) != cudaSuccess);
	(void)cudaGetLastError();
	CHECK(cudaGraphInstantiate(&x, g, 0));
	WANT(cudaGraphExecUpdate(x, g, &ui), cudaErrorGraphExecUpdateFailure);
	EXPECT(ui.result == cudaGraphExecUpdateErrorNotSupported);
	(void)cudaGetLastError();
	CHECK(cudaGraphLaunch(x, s));
	CHECK(cudaGraphLaunch(x, s));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaGraphExecDestroy(x));
	CHECK(cudaGraphDestroy(g));

	/* left live by its own graph, freed by another: then its own graph
	 * may no longer free it */
	CHECK(cudaGraphCreate(&g, 0));
	ap.dptr = NULL;
	CHECK(cudaGraphAddMemAllocNode(&an, g, NULL, 0, &ap));
	CHECK(cudaGraphAddMemFreeNode(&fn2, g2, NULL, 0, ap.dptr));
	WANT(cudaGraphAddMemFreeNode(&fn, g, &an, 1, ap.dptr),
	     cudaErrorInvalidValue);
	CHECK(cudaGraphInstantiate(&x, g, 0));
	CHECK(cudaGraphInstantiate(&x2, g2, 0));
	CHECK(cudaGraphLaunch(x, s));
	EXPECT(graph_mem(dev, cudaGraphMemAttrUsedMemCurrent) >= 4096);
	CHECK(cudaGraphLaunch(x2, s));
	CHECK(cudaStreamSynchronize(s));
	EXPECT(graph_mem(dev, cudaGraphMemAttrUsedMemCurrent) == 0);
	CHECK(cudaGraphExecDestroy(x));
	CHECK(cudaGraphExecDestroy(x2));
	CHECK(cudaGraphDestroy(g));
	CHECK(cudaGraphDestroy(g2));
	CHECK(cudaDeviceGraphMemTrim(dev));
	EXPECT(graph_mem(dev, cudaGraphMemAttrReservedMemCurrent) == 0);

	CHECK(cudaStreamDestroy(s));
	CHECK(cudaFree(plain));
	CHECK(cudaFreeHost(h));
}

int main(void)
{
	check_fork_join();
	check_invalidation();
	check_captured_copies();
	check_graph_api();
	check_graph_memory();
	return finish();
}
