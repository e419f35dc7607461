/*
 * cudart_graphmem.cu - graph memory nodes from an ordinary CUDA-runtime
 * program, for tests/cudart/graph_memory_is_charged_when_graphs_run.sh:
 * each mode prints one JSON line of what it saw; "used" figures are the
 * slice's books as the program sees them (total - free of cudaMemGetInfo,
 * which under the shim is the cap less the slice's usage).
 *
 *   gs-cudart-graphmem oom MiB    capture: mark kernel -> alloc(MiB) ->
 *                                 fill kernel -> free; launch once
 *   gs-cudart-graphmem run MiB    the same graph launched twice (data
 *                                 checked each time), then trimmed and
 *                                 destroyed
 *   gs-cudart-graphmem outlive MiB
 *                                 capture alloc -> fill (no free): the
 *                                 allocation outlives the launch and is
 *                                 freed later with cudaFreeAsync; then
 *                                 the same with auto-free-on-launch,
 *                                 launched three times
 *   gs-cudart-graphmem cache MiB  the graph of `run` launched once and
 *                                 kept (its freed memory stays in the
 *                                 graph allocator's cache, on the books),
 *                                 then a cudaMalloc of MiB: it needs the
 *                                 cache's room
 *   gs-cudart-graphmem added MiB  nodes added by hand: one graph's alloc
 *                                 node (instantiated with params), freed
 *                                 by another graph's free node
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1ULL << 20)
#define N_CHECK 1024 /* floats the kernels write and the host reads */

extern "C" __global__ void gs_fill(float *buf, unsigned long long n,
                                   float value)
{
	unsigned long long i =
	    (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		buf[i] = value;
}

#define CHECK(call)                                                            \
	do {                                                                   \
		cudaError_t e_ = (call);                                       \
		if (e_ != cudaSuccess) {                                       \
			printf("{\"fail\": \"%s = %s\"}\n", #call,             \
			       cudaGetErrorName(e_));                          \
			exit(1);                                               \
		}                                                              \
	} while (0)

static unsigned long long used(void)
{
	size_t fr = 0, tot = 0;

	CHECK(cudaMemGetInfo(&fr, &tot));
	return (unsigned long long)(tot - fr);
}

static unsigned long long total(void)
{
	size_t fr = 0, tot = 0;

	CHECK(cudaMemGetInfo(&fr, &tot));
	return (unsigned long long)tot;
}

/* Whether the first N_CHECK floats at d are all v. */
static bool holds(const float *d, float v, cudaStream_t s)
{
	static float h[N_CHECK];

	CHECK(cudaMemcpyAsync(h, d, sizeof(h), cudaMemcpyDeviceToHost, s));
	CHECK(cudaStreamSynchronize(s));
	for (int i = 0; i < N_CHECK; i++)
		if (h[i] != v)
			return false;
	return true;
}

/*
 * Captures on s: [mark := 1 (when mark)] -> alloc(bytes) -> fill 2.0 ->
 * [copy out to out] -> [free (when free_it)]. OUT: *p, the allocation.
 */
static cudaGraph_t capture(cudaStream_t s, size_t bytes, float *mark,
                           float *out, bool free_it, float **p)
{
	cudaGraph_t g;

	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	if (mark != NULL)
		gs_fill<<<N_CHECK / 256, 256, 0, s>>>(mark, N_CHECK, 1.0f);
	CHECK(cudaMallocAsync((void **)p, bytes, s));
	gs_fill<<<N_CHECK / 256, 256, 0, s>>>(*p, N_CHECK, 2.0f);
	if (out != NULL)
		CHECK(cudaMemcpyAsync(out, *p, N_CHECK * sizeof(float),
		                      cudaMemcpyDeviceToDevice, s));
	if (free_it)
		CHECK(cudaFreeAsync(*p, s));
	CHECK(cudaStreamEndCapture(s, &g));
	return g;
}

static int run_oom(size_t bytes)
{
	cudaStream_t s;
	cudaGraph_t g;
	cudaGraphExec_t x;
	float *mark, *p;
	cudaError_t e;
	unsigned long long before, captured, after;

	CHECK(cudaStreamCreate(&s));
	CHECK(cudaMalloc((void **)&mark, N_CHECK * sizeof(float)));
	CHECK(cudaMemset(mark, 0, N_CHECK * sizeof(float)));
	before = used();
	g = capture(s, bytes, mark, NULL, true, &p);
	CHECK(cudaGraphInstantiate(&x, g, 0));
	captured = used();
	e = cudaGraphLaunch(x, s);
	(void)cudaGetLastError();
	CHECK(cudaStreamSynchronize(s));
	after = used();
	printf("{\"launch\": \"%s\", \"ran_nothing\": %s, \"used_before\": "
	       "%llu, \"after_instantiate\": %llu, \"used_after\": %llu, "
	       "\"total\": %llu}\n",
	       cudaGetErrorName(e), holds(mark, 0.0f, s) ? "true" : "false",
	       before, captured, after, total());
	CHECK(cudaGraphExecDestroy(x));
	CHECK(cudaGraphDestroy(g));
	CHECK(cudaFree(mark));
	return 0;
}

static int run_twice(size_t bytes)
{
	cudaStream_t s;
	cudaGraph_t g;
	cudaGraphExec_t x;
	float *out, *p;
	unsigned long long base, cap, l1, l2, trimmed, destroyed;
	bool ok1, ok2;

	CHECK(cudaStreamCreate(&s));
	CHECK(cudaMalloc((void **)&out, N_CHECK * sizeof(float)));
	base = used();
	g = capture(s, bytes, NULL, out, true, &p);
	cap = used();
	CHECK(cudaGraphInstantiate(&x, g, 0));
	CHECK(cudaMemset(out, 0, N_CHECK * sizeof(float)));
	CHECK(cudaGraphLaunch(x, s));
	CHECK(cudaStreamSynchronize(s));
	l1 = used();
	ok1 = holds(out, 2.0f, s);
	CHECK(cudaMemset(out, 0, N_CHECK * sizeof(float)));
	CHECK(cudaGraphLaunch(x, s));
	CHECK(cudaStreamSynchronize(s));
	l2 = used();
	ok2 = holds(out, 2.0f, s);
	CHECK(cudaDeviceGraphMemTrim(0));
	trimmed = used();
	CHECK(cudaGraphExecDestroy(x));
	CHECK(cudaGraphDestroy(g));
	destroyed = used();
	CHECK(cudaFree(out));
	printf("{\"data_ok\": [%s, %s], \"base\": %llu, \"after_capture\": %llu, "
	       "\"after_launch\": [%llu, %llu], \"after_trim\": %llu, "
	       "\"after_destroy\": %llu}\n",
	       ok1 ? "true" : "false", ok2 ? "true" : "false", base, cap, l1,
	       l2, trimmed, destroyed);
	return 0;
}

static int run_cache(size_t bytes)
{
	cudaStream_t s;
	cudaGraph_t g;
	cudaGraphExec_t x;
	float *out, *p, *plain = NULL;
	unsigned long long base, cached, with_plain;
	cudaError_t e;

	CHECK(cudaStreamCreate(&s));
	CHECK(cudaMalloc((void **)&out, N_CHECK * sizeof(float)));
	base = used();
	g = capture(s, bytes, NULL, out, true, &p);
	CHECK(cudaGraphInstantiate(&x, g, 0));
	CHECK(cudaGraphLaunch(x, s));
	CHECK(cudaStreamSynchronize(s));
	cached = used();
	e = cudaMalloc((void **)&plain, bytes);
	(void)cudaGetLastError();
	with_plain = used();
	if (plain != NULL)
		CHECK(cudaFree(plain));
	CHECK(cudaGraphExecDestroy(x));
	CHECK(cudaGraphDestroy(g));
	CHECK(cudaFree(out));
	printf("{\"base\": %llu, \"cached\": %llu, \"malloc\": \"%s\", "
	       "\"with_malloc\": %llu}\n",
	       base, cached, cudaGetErrorName(e), with_plain);
	return 0;
}

static int run_outlive(size_t bytes)
{
	cudaStream_t s;
	cudaGraph_t g;
	cudaGraphExec_t x;
	float *p;
	unsigned long long base, live, live_after_destroy, freed, af[3], af_end;
	cudaError_t again;
	bool ok;

	CHECK(cudaStreamCreate(&s));
	base = used();
	g = capture(s, bytes, NULL, NULL, false, &p);
	CHECK(cudaGraphInstantiate(&x, g, 0));
	CHECK(cudaGraphLaunch(x, s));
	CHECK(cudaStreamSynchronize(s));
	live = used();
	ok = holds(p, 2.0f, s);
	/* relaunching while its allocation lives: the driver refuses */
	again = cudaGraphLaunch(x, s);
	(void)cudaGetLastError();
	CHECK(cudaGraphExecDestroy(x));
	CHECK(cudaGraphDestroy(g));
	live_after_destroy = used();
	CHECK(cudaFreeAsync(p, s));
	CHECK(cudaStreamSynchronize(s));
	freed = used();

	g = capture(s, bytes, NULL, NULL, false, &p);
	CHECK(cudaGraphInstantiateWithFlags(
	    &x, g, cudaGraphInstantiateFlagAutoFreeOnLaunch));
	for (int i = 0; i < 3; i++) {
		CHECK(cudaGraphLaunch(x, s));
		CHECK(cudaStreamSynchronize(s));
		af[i] = used();
	}
	CHECK(cudaFreeAsync(p, s));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaGraphExecDestroy(x));
	CHECK(cudaGraphDestroy(g));
	af_end = used();
	printf("{\"data_ok\": %s, \"base\": %llu, \"live\": %llu, "
	       "\"relaunch_live\": \"%s\", \"live_after_destroy\": %llu, "
	       "\"freed\": %llu, \"auto_free\": [%llu, %llu, %llu], "
	       "\"auto_free_end\": %llu}\n",
	       ok ? "true" : "false", base, live, cudaGetErrorName(again),
	       live_after_destroy, freed, af[0], af[1], af[2], af_end);
	return 0;
}

/* Nodes added by hand: graph A allocates (no free), graph B frees it. */
static int run_added(size_t bytes)
{
	cudaStream_t s;
	cudaGraph_t a, b;
	cudaGraphExec_t xa, xb;
	cudaGraphNode_t na, nb;
	cudaMemAllocNodeParams p;
	cudaGraphInstantiateParams ip;
	unsigned long long base, added, live, freed, destroyed;

	CHECK(cudaStreamCreate(&s));
	base = used();
	memset(&p, 0, sizeof(p));
	p.poolProps.allocType = cudaMemAllocationTypePinned;
	p.poolProps.location.type = cudaMemLocationTypeDevice;
	p.poolProps.location.id = 0;
	p.bytesize = bytes;
	CHECK(cudaGraphCreate(&a, 0));
	CHECK(cudaGraphAddMemAllocNode(&na, a, NULL, 0, &p));
	CHECK(cudaGraphCreate(&b, 0));
	CHECK(cudaGraphAddMemFreeNode(&nb, b, NULL, 0, p.dptr));
	/* A through cudaGraphInstantiateWithParams (another driver entry) */
	memset(&ip, 0, sizeof(ip));
	CHECK(cudaGraphInstantiateWithParams(&xa, a, &ip));
	CHECK(cudaGraphInstantiate(&xb, b, 0));
	added = used();
	CHECK(cudaGraphLaunch(xa, s));
	CHECK(cudaStreamSynchronize(s));
	live = used();
	CHECK(cudaGraphLaunch(xb, s));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaDeviceGraphMemTrim(0));
	freed = used();
	CHECK(cudaGraphExecDestroy(xa));
	CHECK(cudaGraphExecDestroy(xb));
	CHECK(cudaGraphDestroy(a));
	CHECK(cudaGraphDestroy(b));
	destroyed = used();
	printf("{\"base\": %llu, \"after_instantiate\": %llu, \"live\": %llu, "
	       "\"freed_by_other_graph\": %llu, \"after_destroy\": %llu}\n",
	       base, added, live, freed, destroyed);
	return 0;
}

int main(int argc, char **argv)
{
	size_t bytes;

	if (argc != 3) {
		fprintf(stderr, "usage: %s oom|run|cache|outlive|added MiB\n", argv[0]);
		return 2;
	}
	bytes = (size_t)atol(argv[2]) * MIB;
	CHECK(cudaFree(0)); /* the context, charged before "base" */
	if (strcmp(argv[1], "oom") == 0)
		return run_oom(bytes);
	if (strcmp(argv[1], "run") == 0)
		return run_twice(bytes);
	if (strcmp(argv[1], "outlive") == 0)
		return run_outlive(bytes);
	if (strcmp(argv[1], "cache") == 0)
		return run_cache(bytes);
	if (strcmp(argv[1], "added") == 0)
		return run_added(bytes);
	fprintf(stderr, "usage: %s oom|run|cache|outlive|added MiB\n", argv[0]);
	return 2;
}
