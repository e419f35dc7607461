/*
 * bench_shim.c - gs-bench-shim: what libgpuslice.so adds to a program's
 * driver calls, measured in one process against whatever libcuda.so.1 the
 * loader finds (the sim, or a real driver):
 *
 *   - CPU time per cuLaunchKernel made directly to the driver and through
 *     the shim, in a slice without a compute limit (the fast path) and
 *     with one (100 %, so it never throttles: the slow path's cost alone);
 *   - CPU time per cuMemAlloc + cuMemFree pair (1 MiB), both ways;
 *   - resident memory the shim adds to the process.
 *
 * Both paths are called alternately in short rounds and each figure is
 * the fastest round (the one least disturbed by the rest of a loaded
 * machine; the median is printed too). The shim is loaded
 * with dlopen (not preloaded) and called through its exported entry
 * points; the direct calls go to the real driver's. Prints one human line
 * per figure and a JSON line.
 *
 * usage: gs-bench-shim PATH/TO/libgpuslice.so
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gs/region.h"

#define ROUNDS   31
#define LAUNCHES 4000
#define ALLOCS   500

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry gs_spin(.param .u64 ns)\n{\n ret;\n}\n";

struct drv {
	CUresult (*init)(unsigned int);
	CUresult (*retain)(CUcontext *, CUdevice);
	CUresult (*setcur)(CUcontext);
	CUresult (*modload)(CUmodule *, const void *);
	CUresult (*getfn)(CUfunction *, CUmodule, const char *);
	CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned,
	                   unsigned, unsigned, unsigned, CUstream, void **,
	                   void **);
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUresult (*mfree)(CUdeviceptr);
	CUresult (*sync)(void);
};

/* Entry points from `h`, or from `fallback` for those `h` lacks (the
 * shim exports only what it hooks). */
static int load(void *h, void *fallback, struct drv *d)
{
#define L(f, s)                                                                \
	do {                                                                   \
		*(void **)&d->f = dlsym(h, s);                                 \
		if (d->f == NULL)                                              \
			*(void **)&d->f = dlsym(fallback, s);                  \
		if (d->f == NULL) {                                            \
			fprintf(stderr, "gs-bench-shim: no %s\n", s);          \
			return -1;                                             \
		}                                                              \
	} while (0)
	L(init, "cuInit");
	L(retain, "cuDevicePrimaryCtxRetain");
	L(setcur, "cuCtxSetCurrent");
	L(modload, "cuModuleLoadData");
	L(getfn, "cuModuleGetFunction");
	L(launch, "cuLaunchKernel");
	L(alloc, "cuMemAlloc_v2");
	L(mfree, "cuMemFree_v2");
	L(sync, "cuCtxSynchronize");
#undef L
	return 0;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sorts v; OUT: *med. Returns the minimum. */
static double best(double *v, int n, double *med)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	*med = v[n / 2];
	return v[0];
}

/* ns per launch of `fn` through `d`, LAUNCHES of them. */
static double launches(const struct drv *d, CUfunction fn)
{
	unsigned long long zero = 0;
	void *args[] = {&zero};
	double t0 = now_ns();

	for (int i = 0; i < LAUNCHES; i++)
		if (d->launch(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL) !=
		    CUDA_SUCCESS)
			return -1;
	t0 = (now_ns() - t0) / LAUNCHES;
	(void)d->sync();
	return t0;
}

/* ns per 1 MiB alloc + free pair through `d`. */
static double allocs(const struct drv *d)
{
	double t0 = now_ns();
	CUdeviceptr p;

	for (int i = 0; i < ALLOCS; i++)
		if (d->alloc(&p, 1 << 20) != CUDA_SUCCESS ||
		    d->mfree(p) != CUDA_SUCCESS)
			return -1;
	return (now_ns() - t0) / ALLOCS;
}

struct fig {
	double direct, shim;         /* fastest round */
	double direct_med, shim_med; /* median round */
};

static void measure(const struct drv *r, const struct drv *s, CUfunction fn,
                    struct fig *launch, struct fig *alloc)
{
	double ld[ROUNDS], ls[ROUNDS], ad[ROUNDS], as[ROUNDS];

	for (int k = 0; k < ROUNDS; k++) {
		ld[k] = launches(r, fn);
		ls[k] = launches(s, fn);
		ad[k] = allocs(r);
		as[k] = allocs(s);
	}
	launch->direct = best(ld, ROUNDS, &launch->direct_med);
	launch->shim = best(ls, ROUNDS, &launch->shim_med);
	alloc->direct = best(ad, ROUNDS, &alloc->direct_med);
	alloc->shim = best(as, ROUNDS, &alloc->shim_med);
}

static void line(const char *what, const struct fig *f)
{
	printf("  %-34s direct %7.1f ns  shim %7.1f ns  added %+7.1f ns (x%.2f)  [medians %.0f / %.0f]\n",
	       what, f->direct, f->shim, f->shim - f->direct,
	       f->direct > 0 ? f->shim / f->direct : 0, f->direct_med,
	       f->shim_med);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/gs-bench-shim-XXXXXX";
	struct gs_region *reg = NULL;
	struct gs_slice_limits lim;
	struct gs_slice_ref ref;
	struct gs_errbuf eb = {0};
	struct drv r, s;
	struct fig l0, a0, l1, a1;
	void *rh, *sh;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	long rss0, rss1;
	int rc = 1;
	char cmd[128];

	if (argc != 2) {
		fprintf(stderr,
		        "usage: gs-bench-shim PATH/TO/libgpuslice.so\n");
		return 2;
	}
	if (mkdtemp(dir) == NULL) {
		perror("gs-bench-shim: mkdtemp");
		return 1;
	}
	/* A slice of our own, without limits, before the shim starts. */
	gs_slice_limits_init(&lim, "bench");
	if (gs_region_open(dir, GS_REGION_RUNNER, &reg, &eb) != GS_OK ||
	    gs_region_slice_create(reg, &lim, &ref, &eb) != GS_OK) {
		fprintf(stderr, "gs-bench-shim: %s\n",
		        gs_errbuf_msg(&eb, GS_ERR_IO));
		goto out;
	}
	setenv("GPUSLICE_RUN_DIR", dir, 1);
	setenv("GPUSLICE_SLICE", "bench", 1);

	rh = dlopen("libcuda.so.1", RTLD_NOW);
	if (rh == NULL || load(rh, rh, &r) != 0) {
		fprintf(stderr, "gs-bench-shim: libcuda.so.1: %s\n", dlerror());
		goto out;
	}
	if (r.init(0) != CUDA_SUCCESS || r.retain(&ctx, 0) != CUDA_SUCCESS ||
	    r.setcur(ctx) != CUDA_SUCCESS ||
	    r.modload(&mod, ptx) != CUDA_SUCCESS ||
	    r.getfn(&fn, mod, "gs_spin") != CUDA_SUCCESS) {
		fprintf(stderr, "gs-bench-shim: driver set-up failed\n");
		goto out;
	}
	(void)launches(&r, fn); /* warm the driver before the RSS baseline */
	(void)allocs(&r);
	rss0 = rss_kib();
	sh = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (sh == NULL || load(sh, rh, &s) != 0) {
		fprintf(stderr, "gs-bench-shim: %s: %s\n", argv[1], dlerror());
		goto out;
	}
	(void)launches(&s, fn); /* attaches, learns the device */
	(void)allocs(&s);
	rss1 = rss_kib();

	measure(&r, &s, fn, &l0, &a0);
	/* A compute limit that never throttles: the slow path's own cost. */
	lim.compute_pct = 100;
	if (gs_region_slice_update(reg, &ref, &lim, &eb) != GS_OK) {
		fprintf(stderr, "gs-bench-shim: %s\n",
		        gs_errbuf_msg(&eb, GS_ERR_IO));
		goto out;
	}
	(void)launches(&s, fn);
	measure(&r, &s, fn, &l1, &a1);

	printf("  CPU time per call, fastest of %d rounds [medians direct / shim]\n",
	       ROUNDS);
	line("cuLaunchKernel, no compute limit", &l0);
	line("cuLaunchKernel, compute limit set", &l1);
	line("cuMemAlloc+cuMemFree, no limit", &a0);
	line("cuMemAlloc+cuMemFree, limit set", &a1);
	printf("  resident memory added by the shim: %ld KiB\n", rss1 - rss0);
	printf("{\"bench\":\"shim\",\"launch_direct_ns\":%.1f,\"launch_shim_ns\":%.1f,\"launch_added_ns\":%.1f,\"launch_limited_direct_ns\":%.1f,\"launch_limited_shim_ns\":%.1f,\"launch_limited_added_ns\":%.1f,\"alloc_free_direct_ns\":%.1f,\"alloc_free_shim_ns\":%.1f,\"alloc_free_added_ns\":%.1f,\"alloc_free_limited_added_ns\":%.1f,\"rss_added_kib\":%ld}\n",
	       l0.direct, l0.shim, l0.shim - l0.direct, l1.direct, l1.shim,
	       l1.shim - l1.direct, a0.direct, a0.shim, a0.shim - a0.direct,
	       a1.shim - a1.direct, rss1 - rss0);
	rc = 0;
out:
	gs_region_close(reg);
	(void)snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
	return rc;
}
