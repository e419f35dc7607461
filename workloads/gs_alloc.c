/*
 * gs-alloc - device-memory allocation patterns, one driver API at a time,
 * to check that a memory cap (the shim's, a MIG instance's, the GPU's own)
 * holds whichever way a program asks for memory:
 *
 *   plain    cuMemAlloc
 *   pitch    cuMemAllocPitch (rows of 64 KiB, 16-byte elements)
 *   managed  cuMemAllocManaged (global attach)
 *   async    cuMemAllocAsync on the device's default pool
 *   pool     cuMemPoolCreate + cuMemAllocFromPoolAsync
 *   vmm      cuMemCreate + cuMemAddressReserve + cuMemMap + cuMemSetAccess
 *            (the chunk rounded up to the allocation granularity)
 *   array    cuArray3DCreate of float4 elements sized to the chunk
 *
 * Grow mode (default): allocate chunk after chunk, keeping them all, until
 * the first error or until the next chunk would pass --limit, then print
 * the line and free everything (after --hold seconds, if given: the line
 * is printed and flushed first, so a test can read it and kill -9 the
 * process while it holds the memory).
 *
 * Stress mode (--stress T): T threads each allocate and free one chunk
 * over and over for --seconds, concurrently; totals are printed.
 *
 * Managed memory on a real GPU is not backed by device memory until it is
 * touched, so it never fails at capacity; to keep the program from eating
 * host memory, --api managed stops at the device's total memory unless
 * --limit says otherwise.
 *
 * Exit status: 0 when growth ended at the limit or with
 * CUDA_ERROR_OUT_OF_MEMORY (both are results); 1 for any other error.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"

/* Chunks kept at most in grow mode; growth stops there ("max_chunks"). */
#define GS_ALLOC_MAX_CHUNKS (1u << 20)
/* Pitch rows and array rows: 64 KiB, i.e. 4096 float4 elements. */
#define GS_ALLOC_ROW_BYTES 65536u
#define GS_ALLOC_ROW_ELEMS (GS_ALLOC_ROW_BYTES / 16u)

enum api {
	API_PLAIN,
	API_PITCH,
	API_MANAGED,
	API_ASYNC,
	API_POOL,
	API_VMM,
	API_ARRAY,
};

static const char *const api_names[] = {
    "plain", "pitch", "managed", "async", "pool", "vmm", "array", NULL,
};

static const char usage[] =
    "usage: gs-alloc --api API [--chunk SIZE] [--limit SIZE]\n"
    "                [--stress THREADS [--seconds S]] [--hold S] [--device N]\n"
    "\n"
    "Grows device memory chunk by chunk with one allocation API until the\n"
    "first error or the limit, and prints one JSON line: allocated_bytes,\n"
    "chunks, api, error (null when the limit was reached first), ...\n"
    "\n"
    "  --api API            plain|pitch|managed|async|pool|vmm|array\n"
    "  --chunk SIZE         bytes per allocation, e.g. 256MiB (default 256MiB)\n"
    "  --limit SIZE         stop before passing this total (managed: default\n"
    "                       the device's memory; others: no limit)\n"
    "  --stress THREADS     instead, THREADS threads allocate and free a\n"
    "                       chunk each, over and over, concurrently\n"
    "  --seconds S          how long --stress runs (default 2)\n"
    "  --hold S             print the line, then keep the memory S seconds\n"
    "                       before freeing it\n" GS_KIT_COMMON_USAGE;

struct chunk {
	CUdeviceptr ptr;
	size_t bytes;
	CUmemGenericAllocationHandle handle; /* vmm */
	CUarray array;                       /* array */
};

/* What every allocation needs; read-only once set up (shared by threads). */
struct allocator {
	struct gs_kit *k;
	enum api api;
	uint64_t chunk;
	CUmemoryPool pool;        /* pool */
	CUmemAllocationProp prop; /* vmm */
	size_t granularity;       /* vmm */
};

/* The entry points an API needs, so a driver without them gives a clean
 * CUDA_ERROR_NOT_FOUND instead of a call through NULL. */
static const char *missing_entry(enum api api)
{
	switch (api) {
	case API_PLAIN:
		return NULL;
	case API_PITCH:
		return gs_cu.cuMemAllocPitch ? NULL : "cuMemAllocPitch";
	case API_MANAGED:
		return gs_cu.cuMemAllocManaged ? NULL : "cuMemAllocManaged";
	case API_ASYNC:
		if (!gs_cu.cuMemAllocAsync)
			return "cuMemAllocAsync";
		return gs_cu.cuMemFreeAsync ? NULL : "cuMemFreeAsync";
	case API_POOL:
		if (!gs_cu.cuMemPoolCreate)
			return "cuMemPoolCreate";
		if (!gs_cu.cuMemPoolDestroy)
			return "cuMemPoolDestroy";
		if (!gs_cu.cuMemAllocFromPoolAsync)
			return "cuMemAllocFromPoolAsync";
		return gs_cu.cuMemFreeAsync ? NULL : "cuMemFreeAsync";
	case API_VMM:
		if (!gs_cu.cuMemGetAllocationGranularity)
			return "cuMemGetAllocationGranularity";
		if (!gs_cu.cuMemCreate || !gs_cu.cuMemRelease)
			return "cuMemCreate";
		if (!gs_cu.cuMemAddressReserve || !gs_cu.cuMemAddressFree)
			return "cuMemAddressReserve";
		if (!gs_cu.cuMemMap || !gs_cu.cuMemUnmap)
			return "cuMemMap";
		return gs_cu.cuMemSetAccess ? NULL : "cuMemSetAccess";
	case API_ARRAY:
		if (!gs_cu.cuArray3DCreate)
			return "cuArray3DCreate";
		return gs_cu.cuArrayDestroy ? NULL : "cuArrayDestroy";
	}
	return NULL;
}

/* Fills an array descriptor of float4 elements covering `bytes`. */
static void array_desc(uint64_t bytes, CUDA_ARRAY3D_DESCRIPTOR *d)
{
	uint64_t elems = (bytes + 15) / 16, rows;

	memset(d, 0, sizeof(*d));
	d->Format = CU_AD_FORMAT_FLOAT;
	d->NumChannels = 4;
	if (elems <= GS_ALLOC_ROW_ELEMS) {
		d->Width = (size_t)elems; /* 1D */
		return;
	}
	d->Width = GS_ALLOC_ROW_ELEMS;
	rows = (elems + GS_ALLOC_ROW_ELEMS - 1) / GS_ALLOC_ROW_ELEMS;
	if (rows <= 16384) {
		d->Height = (size_t)rows; /* 2D */
		return;
	}
	/* 3D, 4096 rows a layer, within every GPU's 16384^3 3D limit. */
	d->Height = 4096;
	d->Depth = (size_t)((rows + 4095) / 4096);
}

/* The bytes one chunk of `a` will take, as far as it is known beforehand
 * (pitch padding is only known after the call). */
static uint64_t planned_bytes(const struct allocator *a)
{
	CUDA_ARRAY3D_DESCRIPTOR d;
	uint64_t g;

	switch (a->api) {
	case API_VMM:
		g = a->granularity ? a->granularity : 1;
		return (a->chunk + g - 1) / g * g;
	case API_ARRAY:
		array_desc(a->chunk, &d);
		return (uint64_t)d.Width * (d.Height ? d.Height : 1) *
		       (d.Depth ? d.Depth : 1) * 16;
	case API_PITCH:
		if (a->chunk < GS_ALLOC_ROW_BYTES)
			return (a->chunk + 15) / 16 * 16;
		return (a->chunk + GS_ALLOC_ROW_BYTES - 1) /
		       GS_ALLOC_ROW_BYTES * GS_ALLOC_ROW_BYTES;
	default:
		return a->chunk;
	}
}

static CUresult alloc_vmm(const struct allocator *a, struct chunk *c)
{
	size_t size = (size_t)planned_bytes(a);
	CUmemAccessDesc access;
	CUresult r;

	r = gs_kit_check(a->k, gs_cu.cuMemCreate(&c->handle, size, &a->prop, 0),
	                 "cuMemCreate");
	if (r)
		return r;
	r = gs_kit_check(a->k,
	                 gs_cu.cuMemAddressReserve(&c->ptr, size, 0, 0, 0),
	                 "cuMemAddressReserve");
	if (r)
		goto out_release;
	r = gs_kit_check(a->k, gs_cu.cuMemMap(c->ptr, size, 0, c->handle, 0),
	                 "cuMemMap");
	if (r)
		goto out_free_va;
	memset(&access, 0, sizeof(access));
	access.location = a->prop.location;
	access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	r = gs_kit_check(a->k, gs_cu.cuMemSetAccess(c->ptr, size, &access, 1),
	                 "cuMemSetAccess");
	if (r)
		goto out_unmap;
	c->bytes = size;
	return CUDA_SUCCESS;

out_unmap:
	(void)gs_cu.cuMemUnmap(c->ptr, size);
out_free_va:
	(void)gs_cu.cuMemAddressFree(c->ptr, size);
	c->ptr = 0;
out_release:
	(void)gs_cu.cuMemRelease(c->handle);
	c->handle = 0;
	return r;
}

/*
 * Allocates one chunk with `a`'s API on `stream` (async and pool). On
 * failure the chunk is left empty and the first failure of the run is
 * recorded in the kit.
 */
static CUresult chunk_alloc(const struct allocator *a, CUstream stream,
                            struct chunk *c)
{
	struct gs_kit *k = a->k;
	CUDA_ARRAY3D_DESCRIPTOR d;
	size_t pitch = 0, w, h;
	CUresult r;

	memset(c, 0, sizeof(*c));
	switch (a->api) {
	case API_PLAIN:
		r = gs_kit_check(k, gs_cu.cuMemAlloc(&c->ptr, a->chunk),
		                 "cuMemAlloc");
		c->bytes = a->chunk;
		break;
	case API_PITCH:
		w = a->chunk < GS_ALLOC_ROW_BYTES
		        ? (size_t)(a->chunk + 15) / 16 * 16
		        : GS_ALLOC_ROW_BYTES;
		h = (size_t)((a->chunk + w - 1) / w);
		r = gs_kit_check(
		    k, gs_cu.cuMemAllocPitch(&c->ptr, &pitch, w, h, 16),
		    "cuMemAllocPitch");
		c->bytes = pitch * h;
		break;
	case API_MANAGED:
		r = gs_kit_check(k,
		                 gs_cu.cuMemAllocManaged(&c->ptr, a->chunk,
		                                         CU_MEM_ATTACH_GLOBAL),
		                 "cuMemAllocManaged");
		c->bytes = a->chunk;
		break;
	case API_ASYNC:
		r = gs_kit_check(
		    k, gs_cu.cuMemAllocAsync(&c->ptr, a->chunk, stream),
		    "cuMemAllocAsync");
		if (r == CUDA_SUCCESS)
			r = gs_kit_check(k, gs_cu.cuStreamSynchronize(stream),
			                 "cuStreamSynchronize");
		c->bytes = a->chunk;
		break;
	case API_POOL:
		r = gs_kit_check(k,
		                 gs_cu.cuMemAllocFromPoolAsync(
		                     &c->ptr, a->chunk, a->pool, stream),
		                 "cuMemAllocFromPoolAsync");
		if (r == CUDA_SUCCESS)
			r = gs_kit_check(k, gs_cu.cuStreamSynchronize(stream),
			                 "cuStreamSynchronize");
		c->bytes = a->chunk;
		break;
	case API_VMM:
		r = alloc_vmm(a, c);
		break;
	case API_ARRAY:
		array_desc(a->chunk, &d);
		r = gs_kit_check(k, gs_cu.cuArray3DCreate(&c->array, &d),
		                 "cuArray3DCreate");
		c->bytes = (size_t)planned_bytes(a);
		break;
	default:
		r = CUDA_ERROR_INVALID_VALUE;
	}
	if (r != CUDA_SUCCESS)
		memset(c, 0, sizeof(*c));
	return r;
}

/* Frees a chunk; results are ignored, there is nothing to do about them. */
static void chunk_free(const struct allocator *a, CUstream stream,
                       struct chunk *c)
{
	switch (a->api) {
	case API_ASYNC:
	case API_POOL:
		(void)gs_cu.cuMemFreeAsync(c->ptr, stream);
		(void)gs_cu.cuStreamSynchronize(stream);
		break;
	case API_VMM:
		(void)gs_cu.cuMemUnmap(c->ptr, c->bytes);
		(void)gs_cu.cuMemAddressFree(c->ptr, c->bytes);
		(void)gs_cu.cuMemRelease(c->handle);
		break;
	case API_ARRAY:
		(void)gs_cu.cuArrayDestroy(c->array);
		break;
	default:
		(void)gs_cu.cuMemFree(c->ptr);
	}
	memset(c, 0, sizeof(*c));
}

static CUresult allocator_setup(struct allocator *a)
{
	struct gs_kit *k = a->k;
	CUmemPoolProps pp;
	const char *miss = missing_entry(a->api);

	if (miss)
		return gs_kit_check(k, CUDA_ERROR_NOT_FOUND, miss);
	memset(&a->prop, 0, sizeof(a->prop));
	a->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	a->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	a->prop.location.id = (int)k->dev;
	if (a->api == API_VMM) {
		CUresult r = gs_cu.cuMemGetAllocationGranularity(
		    &a->granularity, &a->prop,
		    CU_MEM_ALLOC_GRANULARITY_MINIMUM);

		if (gs_kit_check(k, r, "cuMemGetAllocationGranularity"))
			return r;
	}
	if (a->api == API_POOL) {
		memset(&pp, 0, sizeof(pp));
		pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
		pp.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
		pp.location = a->prop.location;
		return gs_kit_check(k, gs_cu.cuMemPoolCreate(&a->pool, &pp),
		                    "cuMemPoolCreate");
	}
	return CUDA_SUCCESS;
}

/* ---- stress mode ---- */

struct stress {
	const struct allocator *a;
	double deadline;
	atomic_ullong allocs, frees, errors, oom;
	atomic_bool other_error; /* an error other than OUT_OF_MEMORY */
};

static void *stress_main(void *arg)
{
	struct stress *s = arg;
	struct gs_kit *k = s->a->k;
	CUstream stream = NULL;
	struct chunk c;

	if (gs_kit_check(k, gs_kit_bind_thread(k), "cuCtxSetCurrent") ||
	    gs_kit_check(k,
	                 gs_cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
	                 "cuStreamCreate")) {
		atomic_store(&s->other_error, true);
		return NULL;
	}
	while (gs_kit_now() < s->deadline) {
		CUresult r = chunk_alloc(s->a, stream, &c);

		if (r == CUDA_SUCCESS) {
			atomic_fetch_add(&s->allocs, 1);
			chunk_free(s->a, stream, &c);
			atomic_fetch_add(&s->frees, 1);
			continue;
		}
		atomic_fetch_add(&s->errors, 1);
		if (r != CUDA_ERROR_OUT_OF_MEMORY) {
			atomic_store(&s->other_error, true);
			break;
		}
		atomic_fetch_add(&s->oom, 1);
		/* Full for now: let the other threads free before retrying. */
		gs_kit_sleep(0.001);
	}
	(void)gs_cu.cuStreamDestroy(stream);
	return NULL;
}

static int run_stress(struct allocator *a, long threads, double seconds,
                      size_t free_before)
{
	struct gs_kit *k = a->k;
	struct stress s;
	pthread_t *tids;
	size_t free_after = 0, total = 0;
	struct gs_jline j;
	double t0;
	long i, started;

	memset(&s, 0, sizeof(s));
	s.a = a;
	tids = calloc((size_t)threads, sizeof(*tids));
	if (!tids) {
		gs_kit_fail_other(k, "HOST_OUT_OF_MEMORY", "calloc", "");
		return gs_kit_fail_line(k);
	}
	t0 = gs_kit_now();
	s.deadline = t0 + seconds;
	for (started = 0; started < threads; started++) {
		if (pthread_create(&tids[started], NULL, stress_main, &s) !=
		    0) {
			gs_kit_fail_other(k, "OS_ERROR", "pthread_create",
			                  "cannot start a stress thread");
			atomic_store(&s.other_error, true);
			break;
		}
	}
	for (i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	(void)gs_kit_check(k, gs_cu.cuCtxSynchronize(), "cuCtxSynchronize");
	(void)gs_kit_check(k, gs_cu.cuMemGetInfo(&free_after, &total),
	                   "cuMemGetInfo");

	gs_kit_result(k, &j);
	gs_jline_str(&j, "api", api_names[a->api]);
	gs_jline_str(&j, "mode", "stress");
	gs_jline_u64(&j, "chunk_bytes", a->chunk);
	gs_jline_int(&j, "stress_threads", threads);
	gs_jline_num(&j, "wall_s", gs_kit_now() - t0);
	gs_jline_u64(&j, "allocs", atomic_load(&s.allocs));
	gs_jline_u64(&j, "frees", atomic_load(&s.frees));
	gs_jline_u64(&j, "errors", atomic_load(&s.errors));
	gs_jline_u64(&j, "oom_errors", atomic_load(&s.oom));
	gs_jline_u64(&j, "free_bytes_before", free_before);
	gs_jline_u64(&j, "free_bytes_after", free_after);
	gs_kit_put_error(k, &j);
	if (gs_jline_print(&j, stdout) != 0)
		return GS_KIT_EXIT_FAILURE;
	return atomic_load(&s.other_error) ? GS_KIT_EXIT_FAILURE
	                                   : GS_KIT_EXIT_OK;
}

/* ---- grow mode ---- */

static int run_grow(struct allocator *a, uint64_t limit, bool has_limit,
                    double hold, size_t free_before)
{
	struct gs_kit *k = a->k;
	struct chunk *chunks = NULL;
	size_t n = 0, cap = 0, i;
	uint64_t allocated = 0, planned = planned_bytes(a), step = planned;
	const char *stopped = "error";
	CUstream stream = NULL;
	struct gs_jline j;
	double t0 = gs_kit_now();
	int status;

	if ((a->api == API_ASYNC || a->api == API_POOL) &&
	    gs_kit_check(k,
	                 gs_cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
	                 "cuStreamCreate"))
		return gs_kit_fail_line(k);
	for (;;) {
		if (has_limit &&
		    (allocated > limit || step > limit - allocated)) {
			stopped = "limit";
			break;
		}
		if (n == GS_ALLOC_MAX_CHUNKS) {
			stopped = "max_chunks";
			break;
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct chunk *nc = realloc(chunks, ncap * sizeof(*nc));

			if (!nc) {
				gs_kit_fail_other(k, "HOST_OUT_OF_MEMORY",
				                  "realloc", "");
				break;
			}
			chunks = nc;
			cap = ncap;
		}
		if (chunk_alloc(a, stream, &chunks[n]) != CUDA_SUCCESS)
			break;
		allocated += chunks[n].bytes;
		/* Pitch padding shows only now; let the limit see it. */
		if (chunks[n].bytes > step)
			step = chunks[n].bytes;
		n++;
	}

	gs_kit_result(k, &j);
	gs_jline_str(&j, "api", api_names[a->api]);
	gs_jline_str(&j, "mode", "grow");
	gs_jline_u64(&j, "allocated_bytes", allocated);
	gs_jline_u64(&j, "chunks", n);
	gs_jline_u64(&j, "chunk_bytes", a->chunk);
	gs_jline_u64(&j, "planned_chunk_bytes", planned);
	if (has_limit)
		gs_jline_u64(&j, "limit_bytes", limit);
	else
		gs_jline_null(&j, "limit_bytes");
	gs_jline_str(&j, "stopped", stopped);
	gs_jline_u64(&j, "free_bytes_before", free_before);
	gs_jline_u64(&j, "total_bytes", k->total_mem);
	gs_jline_num(&j, "wall_s", gs_kit_now() - t0);
	gs_jline_num(&j, "hold_s", hold);
	gs_kit_put_error(k, &j);
	status = GS_KIT_EXIT_OK;
	if (gs_jline_print(&j, stdout) != 0)
		status = GS_KIT_EXIT_FAILURE;
	if (gs_kit_failed(k) && k->err != CUDA_ERROR_OUT_OF_MEMORY)
		status = GS_KIT_EXIT_FAILURE;

	gs_kit_sleep(hold);
	for (i = n; i > 0; i--)
		chunk_free(a, stream, &chunks[i - 1]);
	free(chunks);
	if (stream)
		(void)gs_cu.cuStreamDestroy(stream);
	return status;
}

int main(int argc, char **argv)
{
	struct gs_kit_common c = {0, false};
	int api = -1, status;
	uint64_t chunk = 256ULL << 20, limit = 0;
	long stress = 0;
	double seconds = 2.0, hold = 0.0;
	struct gs_flag flags[] = {
	    {"api", GS_FLAG_CHOICE, &api, 0, 0, api_names, false},
	    {"chunk", GS_FLAG_SIZE, &chunk, 1, INT64_MAX, NULL, false},
	    {"limit", GS_FLAG_SIZE, &limit, 0, INT64_MAX, NULL, false},
	    {"stress", GS_FLAG_INT, &stress, 1, 1024, NULL, false},
	    {"seconds", GS_FLAG_SECONDS, &seconds, 0, 0, NULL, false},
	    {"hold", GS_FLAG_SECONDS, &hold, 0, 0, NULL, false},
	    GS_KIT_COMMON_FLAGS(&c),
	};
	struct allocator a;
	struct gs_kit k;
	size_t free_before = 0, total = 0;
	bool has_limit;

	if (gs_kit_flags("gs-alloc", usage, argc, argv, flags,
	                 sizeof(flags) / sizeof(flags[0]), &status))
		return status;
	if (api < 0) {
		fprintf(stderr, "gs-alloc: --api is required (see --help)\n");
		return GS_KIT_EXIT_USAGE;
	}
	if (stress && flags[2].given) {
		fprintf(stderr, "gs-alloc: --limit applies to growth, not to --stress (see --help)\n");
		return GS_KIT_EXIT_USAGE;
	}
	has_limit = flags[2].given;

	memset(&a, 0, sizeof(a));
	a.api = (enum api)api;
	a.chunk = chunk;
	a.k = &k;
	if (gs_kit_open(&k, "gs-alloc", &c) != 0)
		goto out_fail;
	if (a.api == API_MANAGED && !has_limit) {
		limit = k.total_mem;
		has_limit = true;
	}
	if (gs_kit_check(&k, gs_cu.cuMemGetInfo(&free_before, &total),
	                 "cuMemGetInfo") ||
	    allocator_setup(&a) != CUDA_SUCCESS)
		goto out_fail;
	if (stress)
		status = run_stress(&a, stress, seconds, free_before);
	else
		status = run_grow(&a, limit, has_limit, hold, free_before);
	goto out;

out_fail:
	status = gs_kit_fail_line(&k);
out:
	if (a.pool)
		(void)gs_cu.cuMemPoolDestroy(a.pool);
	gs_kit_close(&k);
	return status;
}
