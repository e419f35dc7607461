/*
 * gs-infer - an inference-like server loop, after the seed study's light
 * and heavy inference loads: T client threads, each with its own stream,
 * send requests of a batch of B inputs through a K-layer MLP of width W.
 * A request is: copy the batch in (HtoD), K gs_infer_layer kernels, copy
 * the result out (DtoH), synchronise the stream. Every request's latency is
 * kept, and the percentiles are exact (pctl.h).
 *
 * Presets: --light is 1 thread, batch 1; --heavy is 5 threads, batch 5.
 * Explicit --threads/--batch override a preset whatever their order.
 * The run lasts --seconds (default 5) or until --requests have completed.
 * Each thread first sends one warm-up request that is not counted.
 * --warmup S sends requests for S seconds more before counting any (what
 * arrives next to work already on the GPU is then out of the figures);
 * the worst of them is reported as warmup_max_ms.
 *
 * Threads share the weights (K matrices W x W, read-only) and the primary
 * context; each owns its stream and activation buffers, and its samples
 * array, so the request loop takes no lock.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"
#include "pctl.h"

/* Samples kept per thread at most; a thread that fills up stops early. */
#define GS_INFER_MAX_SAMPLES (1u << 24)

static const char usage[] =
    "usage: gs-infer [--light|--heavy] [--threads N] [--batch B]\n"
    "                [--width W] [--layers K] [--seconds S|--requests N]\n"
    "                [--warmup S] [--device N]\n"
    "\n"
    "An inference-like server: N client threads, each sending requests of\n"
    "a batch of B inputs through K dense layers of width W (HtoD copy, K\n"
    "gs_infer_layer kernels, DtoH copy, stream sync) on its own stream.\n"
    "Prints one JSON line: throughput_rps, p50_ms, p90_ms, p99_ms,\n"
    "requests, threads, batch, ...\n"
    "\n"
    "  --light              1 thread, batch 1 (the study's light load)\n"
    "  --heavy              5 threads, batch 5 (the study's heavy load)\n"
    "  --threads N          client threads, 1..256 (default 1)\n"
    "  --batch B            inputs per request, 1..4096 (default 1)\n"
    "  --width W            layer width, 1..16384 (default 1024)\n"
    "  --layers K           layers per request, 1..1024 (default 16)\n"
    "  --seconds S          run time (default 5)\n"
    "  --requests N         stop after N requests in all instead\n"
    "  --warmup S           send requests for S seconds first without\n"
    "                       counting them (default 0); their worst\n"
    "                       latency is warmup_max_ms\n" GS_KIT_COMMON_USAGE;

struct infer {
	struct gs_kit *k;
	int batch, width, layers;
	CUdeviceptr weights; /* layers x width x width floats */
	double deadline;     /* gs_kit_now() at which to stop, or 0 */
	double counted_from; /* gs_kit_now() from which requests count */
	long max_requests;   /* 0 for no limit */
	atomic_long claimed; /* requests handed out (with max_requests) */
};

struct client {
	struct infer *in;
	pthread_t tid;
	CUstream stream;
	CUdeviceptr act[2]; /* ping-pong activations, batch x width */
	float *host_in, *host_out;
	double *samples;
	size_t n, cap;
	long warm_n;    /* requests sent during --warmup */
	double warm_max; /* their worst latency, ms */
	bool stopped_full;
};

static CUresult request(struct client *cl)
{
	struct infer *in = cl->in;
	size_t bytes = (size_t)in->batch * (size_t)in->width * sizeof(float);
	unsigned gx = (unsigned)((in->width + 127) / 128);
	CUresult r;
	int l, cur = 0;

	r = gs_cu.cuMemcpyHtoDAsync(cl->act[0], cl->host_in, bytes, cl->stream);
	if (gs_kit_check(in->k, r, "cuMemcpyHtoDAsync"))
		return r;
	for (l = 0; l < in->layers; l++) {
		CUdeviceptr w =
		    in->weights + (CUdeviceptr)l * (CUdeviceptr)in->width *
		                      (CUdeviceptr)in->width * sizeof(float);
		void *args[] = {&cl->act[cur], &w, &cl->act[1 - cur],
		                &in->batch, &in->width};

		r = gs_kit_launch(in->k, GS_KIT_INFER_LAYER, gx,
		                  (unsigned)in->batch, 128, 1, cl->stream,
		                  args);
		if (gs_kit_check(in->k, r, "cuLaunchKernel"))
			return r;
		cur = 1 - cur;
	}
	r = gs_cu.cuMemcpyDtoHAsync(cl->host_out, cl->act[cur], bytes,
	                            cl->stream);
	if (gs_kit_check(in->k, r, "cuMemcpyDtoHAsync"))
		return r;
	r = gs_cu.cuStreamSynchronize(cl->stream);
	return gs_kit_check(in->k, r, "cuStreamSynchronize");
}

static bool claim(struct infer *in)
{
	if (in->max_requests == 0)
		return gs_kit_now() < in->deadline;
	return atomic_fetch_add(&in->claimed, 1) < in->max_requests;
}

static int keep(struct client *cl, double ms)
{
	if (cl->n == cl->cap) {
		size_t cap = cl->cap ? cl->cap * 2 : 4096;
		double *s;

		if (cap > GS_INFER_MAX_SAMPLES)
			cap = GS_INFER_MAX_SAMPLES;
		if (cap == cl->n)
			return -1;
		s = realloc(cl->samples, cap * sizeof(*s));
		if (!s)
			return -1;
		cl->samples = s;
		cl->cap = cap;
	}
	cl->samples[cl->n++] = ms;
	return 0;
}

static void *client_main(void *arg)
{
	struct client *cl = arg;
	struct infer *in = cl->in;

	if (gs_kit_check(in->k, gs_kit_bind_thread(in->k), "cuCtxSetCurrent"))
		return NULL;
	while (!gs_kit_failed(in->k)) {
		double t0 = gs_kit_now(), ms;
		bool warm = t0 < in->counted_from;

		if (!warm && !claim(in))
			break;
		if (request(cl) != CUDA_SUCCESS)
			break;
		ms = (gs_kit_now() - t0) * 1e3;
		if (warm) {
			cl->warm_n++;
			if (ms > cl->warm_max)
				cl->warm_max = ms;
			continue;
		}
		if (keep(cl, ms) != 0) {
			cl->stopped_full = true;
			break;
		}
	}
	return NULL;
}

static int client_setup(struct client *cl, struct infer *in)
{
	size_t elems = (size_t)in->batch * (size_t)in->width, i;
	struct gs_kit *k = in->k;

	cl->in = in;
	cl->host_in = malloc(elems * sizeof(float));
	cl->host_out = malloc(elems * sizeof(float));
	if (!cl->host_in || !cl->host_out) {
		gs_kit_fail_other(k, "HOST_OUT_OF_MEMORY", "malloc", "");
		return -1;
	}
	for (i = 0; i < elems; i++)
		cl->host_in[i] = (float)(i % 7) * 0.125f;
	if (gs_kit_check(
	        k, gs_cu.cuStreamCreate(&cl->stream, CU_STREAM_NON_BLOCKING),
	        "cuStreamCreate") ||
	    gs_kit_check(k,
	                 gs_cu.cuMemAlloc(&cl->act[0], elems * sizeof(float)),
	                 "cuMemAlloc") ||
	    gs_kit_check(k,
	                 gs_cu.cuMemAlloc(&cl->act[1], elems * sizeof(float)),
	                 "cuMemAlloc"))
		return -1;
	/* One warm-up request, not counted. */
	return request(cl) == CUDA_SUCCESS ? 0 : -1;
}

static void client_teardown(struct client *cl)
{
	if (cl->act[1])
		(void)gs_cu.cuMemFree(cl->act[1]);
	if (cl->act[0])
		(void)gs_cu.cuMemFree(cl->act[0]);
	if (cl->stream)
		(void)gs_cu.cuStreamDestroy(cl->stream);
	free(cl->host_in);
	free(cl->host_out);
	free(cl->samples);
}

static CUresult fill_weights(struct infer *in)
{
	unsigned long long n = (unsigned long long)in->layers *
	                       (unsigned long long)in->width *
	                       (unsigned long long)in->width;
	/* Small weights keep activations bounded through the layers. */
	float v = 1.0f / (float)in->width;
	void *args[] = {&in->weights, &n, &v};
	uint64_t blocks = (n + 255) / 256, cap = (uint64_t)in->k->sm_count * 8;
	CUresult r;

	r = gs_kit_launch(in->k, GS_KIT_FILL,
	                  (unsigned)(blocks < cap ? blocks : cap), 1, 256, 1,
	                  NULL, args);
	if (gs_kit_check(in->k, r, "cuLaunchKernel"))
		return r;
	return gs_kit_check(in->k, gs_cu.cuCtxSynchronize(),
	                    "cuCtxSynchronize");
}

enum {
	F_LIGHT,
	F_HEAVY,
	F_THREADS,
	F_BATCH,
	F_WIDTH,
	F_LAYERS,
	F_SECONDS,
	F_REQUESTS,
	F_WARMUP,
	F_COMMON,
};

int main(int argc, char **argv)
{
	struct gs_kit_common c = {0, false};
	bool light = false, heavy = false;
	long threads = 1, batch = 1, width = 1024, layers = 16, requests = 0;
	double seconds = 5.0, warmup = 0.0, warm_max = 0.0;
	long warm_n = 0;
	struct gs_flag flags[] = {
	    [F_LIGHT] = {"light", GS_FLAG_BOOL, &light, 0, 0, NULL, false},
	    [F_HEAVY] = {"heavy", GS_FLAG_BOOL, &heavy, 0, 0, NULL, false},
	    [F_THREADS] = {"threads", GS_FLAG_INT, &threads, 1, 256, NULL,
	                   false},
	    [F_BATCH] = {"batch", GS_FLAG_INT, &batch, 1, 4096, NULL, false},
	    [F_WIDTH] = {"width", GS_FLAG_INT, &width, 1, 16384, NULL, false},
	    [F_LAYERS] = {"layers", GS_FLAG_INT, &layers, 1, 1024, NULL, false},
	    [F_SECONDS] = {"seconds", GS_FLAG_SECONDS, &seconds, 0, 0, NULL,
	                   false},
	    [F_REQUESTS] = {"requests", GS_FLAG_INT, &requests, 1, 1000000000,
	                    NULL, false},
	    [F_WARMUP] = {"warmup", GS_FLAG_SECONDS, &warmup, 0, 0, NULL,
	                  false},
	    [F_COMMON] = GS_KIT_COMMON_FLAGS(&c),
	};
	struct client *cls = NULL;
	struct infer in;
	struct gs_kit k;
	struct gs_jline j;
	double *all = NULL, t0, wall;
	size_t total = 0, off;
	long i, started = 0;
	bool full = false;
	int status;

	if (gs_kit_flags("gs-infer", usage, argc, argv, flags,
	                 sizeof(flags) / sizeof(flags[0]), &status))
		return status;
	if (light && heavy) {
		fprintf(stderr, "gs-infer: --light and --heavy exclude each other (see --help)\n");
		return GS_KIT_EXIT_USAGE;
	}
	if (flags[F_SECONDS].given && flags[F_REQUESTS].given) {
		fprintf(stderr, "gs-infer: give --seconds or --requests, not both (see --help)\n");
		return GS_KIT_EXIT_USAGE;
	}
	if (light || heavy) {
		if (!flags[F_THREADS].given)
			threads = light ? 1 : 5;
		if (!flags[F_BATCH].given)
			batch = light ? 1 : 5;
	}

	memset(&in, 0, sizeof(in));
	in.k = &k;
	in.batch = (int)batch;
	in.width = (int)width;
	in.layers = (int)layers;
	in.max_requests = requests;
	atomic_init(&in.claimed, 0);
	if (gs_kit_open(&k, "gs-infer", &c) != 0) {
		status = gs_kit_fail_line(&k);
		gs_kit_close(&k);
		return status;
	}
	cls = calloc((size_t)threads, sizeof(*cls));
	if (!cls) {
		gs_kit_fail_other(&k, "HOST_OUT_OF_MEMORY", "calloc", "");
		goto out;
	}
	if (gs_kit_check(&k,
	                 gs_cu.cuMemAlloc(&in.weights,
	                                  (size_t)layers * (size_t)width *
	                                      (size_t)width * sizeof(float)),
	                 "cuMemAlloc") ||
	    fill_weights(&in) != CUDA_SUCCESS)
		goto out;
	for (i = 0; i < threads; i++) {
		if (client_setup(&cls[i], &in) != 0)
			goto out;
	}

	in.counted_from = gs_kit_now() + warmup;
	in.deadline = in.counted_from + seconds;
	for (started = 0; started < threads; started++) {
		if (pthread_create(&cls[started].tid, NULL, client_main,
		                   &cls[started]) != 0) {
			gs_kit_fail_other(&k, "OS_ERROR", "pthread_create",
			                  "cannot start a client thread");
			/* Threads already running see the failure and stop. */
			break;
		}
	}
	for (i = 0; i < started; i++)
		pthread_join(cls[i].tid, NULL);
	t0 = in.counted_from;
	wall = gs_kit_now() - t0;
	if (gs_kit_failed(&k))
		goto out;

	for (i = 0; i < threads; i++) {
		total += cls[i].n;
		full = full || cls[i].stopped_full;
		warm_n += cls[i].warm_n;
		if (cls[i].warm_max > warm_max)
			warm_max = cls[i].warm_max;
	}
	all = malloc((total ? total : 1) * sizeof(*all));
	if (!all) {
		gs_kit_fail_other(&k, "HOST_OUT_OF_MEMORY", "malloc", "");
		goto out;
	}
	for (i = 0, off = 0; i < threads; i++) {
		if (cls[i].n == 0)
			continue; /* a client that finished no request has no buffer */
		memcpy(all + off, cls[i].samples, cls[i].n * sizeof(*all));
		off += cls[i].n;
	}
	gs_pctl_sort(all, total);

	gs_kit_result(&k, &j);
	gs_jline_num(&j, "throughput_rps", (double)total / wall);
	gs_jline_num(&j, "items_per_s", (double)total * (double)batch / wall);
	gs_jline_num(&j, "p50_ms", gs_pctl_of_sorted(all, total, 50));
	gs_jline_num(&j, "p90_ms", gs_pctl_of_sorted(all, total, 90));
	gs_jline_num(&j, "p99_ms", gs_pctl_of_sorted(all, total, 99));
	gs_jline_num(&j, "mean_ms", gs_pctl_mean(all, total));
	gs_jline_num(&j, "max_ms", gs_pctl_of_sorted(all, total, 100));
	gs_jline_u64(&j, "requests", total);
	gs_jline_int(&j, "threads", threads);
	gs_jline_int(&j, "batch", batch);
	gs_jline_int(&j, "width", width);
	gs_jline_int(&j, "layers", layers);
	gs_jline_num(&j, "wall_s", wall);
	gs_jline_num(&j, "warmup_s", warmup);
	gs_jline_int(&j, "warmup_requests", warm_n);
	gs_jline_num(&j, "warmup_max_ms", warm_max);
	gs_jline_bool(&j, "samples_capped", full);
	gs_kit_put_error(&k, &j);
	status = gs_jline_print(&j, stdout) == 0 ? GS_KIT_EXIT_OK
	                                         : GS_KIT_EXIT_FAILURE;
	goto out_free;

out:
	status = gs_kit_fail_line(&k);
out_free:
	free(all);
	for (i = 0; cls && i < threads; i++)
		client_teardown(&cls[i]);
	free(cls);
	if (in.weights)
		(void)gs_cu.cuMemFree(in.weights);
	gs_kit_close(&k);
	return status;
}
