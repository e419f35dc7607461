/*
 * cudart_probe.cu - an ordinary CUDA-runtime program (nvcc, <<<>>>, no
 * driver API) that the cudart tests run on the simulated GPU, built four
 * ways (static and shared cudart; nvcc's default target and -arch=sm_90)
 * by tests/cudart/cudart.cmake.
 *
 *   gs-cudart-* all            every check below; "ok NAME" per check,
 *                              "FAIL NAME: why" and exit 1 on the first
 *                              failure
 *   gs-cudart-* alloc API MiB  allocates MiB-sized chunks with one API
 *                              (malloc pitch managed async pool array3d)
 *                              until an error; prints one JSON line
 *   gs-cudart-* burn SECONDS   keeps the GPU busy with gs_spin launches
 *                              for SECONDS of wall time; prints JSON
 *   gs-cudart-* requests SECONDS
 *                              one 2 ms gs_spin request at a time for
 *                              SECONDS; prints p50/p99 latency as JSON
 *   gs-cudart-* meminfo        cudaMemGetInfo as JSON
 *
 * The checks of `all`: allocations of every kind, a module global
 * (cudaMemcpyTo/FromSymbol), a __managed__ variable, kernels through
 * <<<>>> and cudaLaunchKernelEx, streams, events, graphs, two GPUs from
 * two threads, cudaDeviceReset.
 *
 * The sim computes only its own kernels' results (gs_fill here), so data
 * checks go through gs_fill; other kernels (vec_add) are timed by its
 * cost model and must simply launch and complete.
 */
#include <cuda_runtime.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB (1ULL << 20)

extern "C" __global__ void gs_fill(float *buf, unsigned long long n,
                                   float value)
{
	unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;

	for (unsigned long long i =
	         (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
	     i < n; i += stride)
		buf[i] = value;
}

extern "C" __global__ void gs_spin(unsigned long long ns)
{
	unsigned long long start, now;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
	do {
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
	} while (now - start < ns);
}

__global__ void vec_add(float *c, const float *a, const float *b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}

/* A module global: the runtime reaches it through cuLibraryGetGlobal. */
__device__ float g_dev[4] = {1.0f, 2.0f, 3.0f, 4.0f};
/* A __managed__ variable: with one, the runtime loads the module and asks
 * for it with cuLibraryGetManaged before any context is current; the host
 * reads and writes it directly. */
__managed__ int g_managed = 7;

static const char *cur = "start";

#define CHECK(call)                                                            \
	do {                                                                   \
		cudaError_t e_ = (call);                                       \
		if (e_ != cudaSuccess) {                                       \
			printf("FAIL %s: %s = %d (%s)\n", cur, #call, (int)e_, \
			       cudaGetErrorName(e_));                          \
			exit(1);                                               \
		}                                                              \
	} while (0)

#define EXPECT(cond)                                                           \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("FAIL %s: %s\n", cur, #cond);                   \
			exit(1);                                               \
		}                                                              \
	} while (0)

static void begin(const char *name)
{
	cur = name;
}

static void done(void)
{
	printf("ok %s\n", cur);
	fflush(stdout);
}

/* Fills n floats at d with v through the sim-computed kernel and reads
 * them back. */
static void fill_and_check(float *d, size_t n, float v, cudaStream_t s)
{
	float *h = (float *)malloc(n * sizeof(float));

	EXPECT(h != NULL);
	gs_fill<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(d, n, v);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpyAsync(h, d, n * sizeof(float), cudaMemcpyDeviceToHost,
	                      s));
	CHECK(cudaStreamSynchronize(s));
	for (size_t i = 0; i < n; i++)
		EXPECT(h[i] == v);
	free(h);
}

static void check_allocations(void)
{
	float *d, *m;
	size_t pitch, f0, f1, total;
	cudaMemPool_t pool;
	cudaMemPoolProps props;
	cudaArray_t arr;
	cudaChannelFormatDesc fmt = cudaCreateChannelDesc<float>();

	begin("malloc_and_meminfo");
	CHECK(cudaMemGetInfo(&f0, &total));
	CHECK(cudaMalloc((void **)&d, 64 * MIB));
	CHECK(cudaMemGetInfo(&f1, &total));
	EXPECT(f0 - f1 == 64 * MIB);
	/* the first launch loads the module (its globals take memory too) */
	fill_and_check(d, 1024, 3.0f, 0);
	CHECK(cudaMemGetInfo(&f0, &total));
	CHECK(cudaFree(d));
	CHECK(cudaMemGetInfo(&f1, &total));
	EXPECT(f1 - f0 == 64 * MIB);
	done();

	begin("malloc_pitch");
	CHECK(cudaMallocPitch((void **)&d, &pitch, 1000, 64));
	EXPECT(pitch >= 1000);
	CHECK(cudaMemset2D(d, pitch, 0, 1000, 64));
	CHECK(cudaFree(d));
	done();

	begin("malloc_managed");
	CHECK(cudaMallocManaged((void **)&m, 1024 * sizeof(float)));
	gs_fill<<<4, 256>>>(m, 1024, 5.0f);
	CHECK(cudaDeviceSynchronize());
	EXPECT(m[0] == 5.0f && m[1023] == 5.0f);
	m[7] = 1.0f;
	CHECK(cudaFree(m));
	done();

	begin("malloc_async_and_pools");
	CHECK(cudaMallocAsync((void **)&d, 8 * MIB, 0));
	fill_and_check(d, 256, 7.0f, 0);
	CHECK(cudaFreeAsync(d, 0));
	memset(&props, 0, sizeof(props));
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;
	CHECK(cudaMemPoolCreate(&pool, &props));
	CHECK(cudaMallocFromPoolAsync((void **)&d, 4 * MIB, pool, 0));
	fill_and_check(d, 256, 9.0f, 0);
	CHECK(cudaFreeAsync(d, 0));
	CHECK(cudaStreamSynchronize(0));
	CHECK(cudaMemPoolDestroy(pool));
	done();

	begin("malloc_3d_array");
	CHECK(cudaMalloc3DArray(&arr, &fmt, make_cudaExtent(64, 64, 8), 0));
	CHECK(cudaFreeArray(arr));
	done();
}

static void check_module_globals(void)
{
	float h[4], put[4] = {9.0f, 8.0f, 7.0f, 6.0f};

	begin("module_globals");
	CHECK(cudaMemcpyFromSymbol(h, g_dev, sizeof(h)));
	EXPECT(h[0] == 1.0f && h[3] == 4.0f);
	CHECK(cudaMemcpyToSymbol(g_dev, put, sizeof(put)));
	CHECK(cudaMemcpyFromSymbol(h, g_dev, sizeof(h)));
	EXPECT(h[0] == 9.0f && h[3] == 6.0f);
	done();
}

static void check_managed_variable(void)
{
	int v = 0;

	begin("managed_variable");
	EXPECT(g_managed == 7);
	g_managed = 11;
	CHECK(cudaMemcpyFromSymbol(&v, g_managed, sizeof(v)));
	EXPECT(v == 11);
	v = 13;
	CHECK(cudaMemcpyToSymbol(g_managed, &v, sizeof(v)));
	CHECK(cudaDeviceSynchronize());
	EXPECT(g_managed == 13);
	done();
}

static void check_kernels_streams_events_graphs(void)
{
	const int n = 1 << 16;
	float *a, *b, *c;
	cudaStream_t s1, s2;
	cudaEvent_t e0, e1;
	float ms = -1.0f;
	cudaGraph_t g;
	cudaGraphExec_t ge;
	cudaLaunchConfig_t cfg;
	cudaLaunchAttribute attr[1];

	CHECK(cudaMalloc((void **)&a, n * sizeof(float)));
	CHECK(cudaMalloc((void **)&b, n * sizeof(float)));
	CHECK(cudaMalloc((void **)&c, n * sizeof(float)));

	begin("kernel_launch_chevrons");
	vec_add<<<(n + 255) / 256, 256>>>(c, a, b, n);
	CHECK(cudaGetLastError());
	CHECK(cudaDeviceSynchronize());
	fill_and_check(c, n, 2.5f, 0);
	done();

	begin("streams_and_events");
	CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
	CHECK(cudaStreamCreate(&s2));
	CHECK(cudaEventCreate(&e0));
	CHECK(cudaEventCreate(&e1));
	CHECK(cudaEventRecord(e0, s1));
	gs_spin<<<1, 32, 0, s1>>>(2000000ULL); /* 2 ms on the sim's clock */
	CHECK(cudaEventRecord(e1, s1));
	CHECK(cudaStreamWaitEvent(s2, e1, 0));
	fill_and_check(a, 1024, 4.0f, s2);
	CHECK(cudaEventSynchronize(e1));
	CHECK(cudaEventElapsedTime(&ms, e0, e1));
	EXPECT(ms >= 1.9f && ms < 100.0f);
	CHECK(cudaStreamDestroy(s2));
	done();

	begin("launch_kernel_ex");
	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDim = dim3(4);
	cfg.blockDim = dim3(256);
	cfg.stream = s1;
	attr[0].id = cudaLaunchAttributePriority;
	attr[0].val.priority = 0;
	cfg.attrs = attr;
	cfg.numAttrs = 1;
	CHECK(cudaLaunchKernelEx(&cfg, gs_fill, b, (unsigned long long)1024,
	                         6.0f));
	CHECK(cudaStreamSynchronize(s1));
	{
		float h[1024];

		CHECK(cudaMemcpy(h, b, sizeof(h), cudaMemcpyDeviceToHost));
		EXPECT(h[0] == 6.0f && h[1023] == 6.0f);
	}
	done();

	begin("graph_from_stream_capture");
	CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
	vec_add<<<(n + 255) / 256, 256, 0, s1>>>(c, a, b, n);
	gs_fill<<<4, 256, 0, s1>>>(c, 1024, 8.0f);
	CHECK(cudaStreamEndCapture(s1, &g));
	CHECK(cudaGraphInstantiate(&ge, g, 0));
	CHECK(cudaGraphLaunch(ge, s1));
	CHECK(cudaGraphLaunch(ge, s1));
	CHECK(cudaStreamSynchronize(s1));
	{
		float h[1024];

		CHECK(cudaMemcpy(h, c, sizeof(h), cudaMemcpyDeviceToHost));
		EXPECT(h[0] == 8.0f && h[1023] == 8.0f);
	}
	CHECK(cudaGraphExecDestroy(ge));
	CHECK(cudaGraphDestroy(g));
	done();

	CHECK(cudaEventDestroy(e0));
	CHECK(cudaEventDestroy(e1));
	CHECK(cudaStreamDestroy(s1));
	CHECK(cudaFree(a));
	CHECK(cudaFree(b));
	CHECK(cudaFree(c));
}

struct gpu_job {
	int dev;
	cudaError_t err;
	float got;
};

static void *gpu_thread(void *arg)
{
	struct gpu_job *j = (struct gpu_job *)arg;
	float *d, h = 0.0f;

	j->err = cudaSetDevice(j->dev);
	if (j->err == cudaSuccess)
		j->err = cudaMalloc((void **)&d, 16 * MIB);
	if (j->err != cudaSuccess)
		return NULL;
	for (int i = 0; i < 50 && j->err == cudaSuccess; i++) {
		gs_fill<<<1, 32>>>(d, 1, (float)(j->dev + 1));
		j->err = cudaMemcpy(&h, d, sizeof(h), cudaMemcpyDeviceToHost);
	}
	j->got = h;
	if (j->err == cudaSuccess)
		j->err = cudaFree(d);
	return NULL;
}

static void check_two_gpus_two_threads(void)
{
	struct gpu_job jobs[2] = {{0, cudaSuccess, 0}, {1, cudaSuccess, 0}};
	pthread_t t[2];
	int n = 0;

	begin("two_gpus_from_two_threads");
	CHECK(cudaGetDeviceCount(&n));
	if (n < 2) {
		printf("skip %s: %d device(s)\n", cur, n);
		return;
	}
	for (int i = 0; i < 2; i++)
		EXPECT(pthread_create(&t[i], NULL, gpu_thread, &jobs[i]) == 0);
	for (int i = 0; i < 2; i++)
		EXPECT(pthread_join(t[i], NULL) == 0);
	for (int i = 0; i < 2; i++) {
		CHECK(jobs[i].err);
		EXPECT(jobs[i].got == (float)(i + 1));
	}
	done();
}

static void check_device_reset(void)
{
	float *d;
	size_t f0, f1, total;

	begin("device_reset_and_reuse");
	CHECK(cudaSetDevice(0));
	CHECK(cudaMalloc((void **)&d, 32 * MIB));
	CHECK(cudaDeviceReset());
	CHECK(cudaMemGetInfo(&f0, &total));
	CHECK(cudaMalloc((void **)&d, 32 * MIB));
	CHECK(cudaMemGetInfo(&f1, &total));
	EXPECT(f0 - f1 == 32 * MIB);
	fill_and_check(d, 64, 1.5f, 0);
	CHECK(cudaFree(d));
	done();
}

static int run_all(void)
{
	cudaDeviceProp p;

	begin("device_properties");
	CHECK(cudaGetDeviceProperties(&p, 0));
	EXPECT(p.multiProcessorCount > 0 && p.totalGlobalMem > 0);
	printf("device 0: %s, cc %d.%d, %d SMs\n", p.name, p.major, p.minor,
	       p.multiProcessorCount);
	done();
	check_allocations();
	check_module_globals();
	check_managed_variable();
	check_kernels_streams_events_graphs();
	check_two_gpus_two_threads();
	check_device_reset();
	printf("all ok\n");
	return 0;
}

/* Allocates chunk-sized blocks with `api` until one fails. */
static int run_alloc(const char *api, size_t chunk)
{
	size_t got = 0, f = 0, total = 0;
	cudaError_t e = cudaSuccess;
	cudaMemPool_t pool = NULL;
	cudaChannelFormatDesc fmt = cudaCreateChannelDesc<float>();

	e = cudaMemGetInfo(&f, &total);
	if (e == cudaSuccess && strcmp(api, "pool") == 0) {
		cudaMemPoolProps props;

		memset(&props, 0, sizeof(props));
		props.allocType = cudaMemAllocationTypePinned;
		props.location.type = cudaMemLocationTypeDevice;
		e = cudaMemPoolCreate(&pool, &props);
	}
	while (e == cudaSuccess && got < (1ULL << 40)) {
		void *p = NULL;
		size_t pitch;
		cudaArray_t arr;

		if (strcmp(api, "malloc") == 0)
			e = cudaMalloc(&p, chunk);
		else if (strcmp(api, "pitch") == 0)
			e = cudaMallocPitch(&p, &pitch, MIB, chunk / MIB);
		else if (strcmp(api, "managed") == 0)
			e = cudaMallocManaged(&p, chunk);
		else if (strcmp(api, "async") == 0) {
			e = cudaMallocAsync(&p, chunk, 0);
			if (e == cudaSuccess)
				e = cudaStreamSynchronize(0);
		} else if (strcmp(api, "pool") == 0) {
			e = cudaMallocFromPoolAsync(&p, chunk, pool, 0);
			if (e == cudaSuccess)
				e = cudaStreamSynchronize(0);
		} else if (strcmp(api, "array3d") == 0)
			e = cudaMalloc3DArray(
			    &arr, &fmt,
			    make_cudaExtent(1024, 256, chunk / MIB), 0);
		else {
			fprintf(stderr, "unknown api %s\n", api);
			return 2;
		}
		if (e == cudaSuccess)
			got += chunk;
	}
	printf("{\"api\":\"%s\",\"error\":\"%s\",\"allocated_bytes\":%zu,"
	       "\"total_bytes\":%zu,\"free_bytes\":%zu}\n",
	       api, cudaGetErrorName(e), got, total, f);
	return 0;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Saturates the GPU: 1 ms gs_spin launches, at most 8 in flight. */
static int run_burn(double seconds)
{
	cudaEvent_t ev[8];
	double t0 = now_s();
	long n = 0;

	for (int i = 0; i < 8; i++)
		CHECK(cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming));
	while (now_s() - t0 < seconds) {
		cudaEvent_t e = ev[n % 8];

		if (n >= 8)
			CHECK(cudaEventSynchronize(e));
		gs_spin<<<1024, 128>>>(1000000ULL);
		CHECK(cudaGetLastError());
		CHECK(cudaEventRecord(e, 0));
		n++;
	}
	CHECK(cudaDeviceSynchronize());
	printf("{\"kernels\":%ld,\"seconds\":%.3f}\n", n, now_s() - t0);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Latency-bound requests: one 2 ms kernel, wait, repeat. */
static int run_requests(double seconds)
{
	static double lat[100000];
	double t0 = now_s();
	int n = 0;

	while (now_s() - t0 < seconds && n < 100000) {
		double t = now_s();

		gs_spin<<<1, 32>>>(2000000ULL);
		CHECK(cudaGetLastError());
		CHECK(cudaDeviceSynchronize());
		lat[n++] = (now_s() - t) * 1e3;
	}
	EXPECT(n > 0);
	qsort(lat, (size_t)n, sizeof(lat[0]), cmp_double);
	printf("{\"requests\":%d,\"p50_ms\":%.3f,\"p99_ms\":%.3f}\n", n,
	       lat[n / 2], lat[(n * 99) / 100]);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";

	if (strcmp(mode, "all") == 0)
		return run_all();
	if (strcmp(mode, "alloc") == 0 && argc == 4)
		return run_alloc(argv[2], (size_t)atol(argv[3]) * MIB);
	if (strcmp(mode, "burn") == 0 && argc == 3)
		return run_burn(atof(argv[2]));
	if (strcmp(mode, "requests") == 0 && argc == 3)
		return run_requests(atof(argv[2]));
	if (strcmp(mode, "meminfo") == 0) {
		size_t f, t;

		begin("meminfo");
		CHECK(cudaMemGetInfo(&f, &t));
		printf("{\"free_bytes\":%zu,\"total_bytes\":%zu}\n", f, t);
		return 0;
	}
	fprintf(stderr,
	        "usage: %s [all | alloc API MIB | burn SECONDS | requests "
	        "SECONDS | meminfo]\n",
	        argv[0]);
	return 2;
}
