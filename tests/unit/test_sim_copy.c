/*
 * test_sim_copy.c - the sim's copies keep its sparse memory sparse and give
 * exactly memmove's bytes (sim/cuda/copy.c, "sparse copies"): through the
 * sim's libcuda, copies between device memory (cuMemAlloc's anonymous
 * mappings, VMM memfds), pinned host memory and a program's own memory,
 * with destinations that already hold data, partly written pages and
 * unaligned ranges, each checked byte for byte against a reference built
 * in plain host memory; and that what reads as zero costs the host no
 * pages (RssAnon and RssShmem of /proc/self/status): a device-to-host copy
 * of memory never written dirties no destination page that already reads
 * zero, and a host-to-device copy of zeros leaves fresh device memory
 * without pages. The sim's device pointers are host addresses, so the
 * checks read device memory directly.
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
#include <sys/mman.h>
#include <unistd.h>

#include "gs_sim/state.h"

#define MIB  (1024ULL * 1024)
#define N    (16 * MIB)
#define PG   4096u
#define SLOP (1 * MIB) /* host pages a copy may make beyond its data */

static char dir[] = "/tmp/gs-test-simcopy-XXXXXX";
static CUcontext ctx;

/* kB of field `f` ("RssAnon:", "RssShmem:") in /proc/self/status */
static long status_kb(const char *f)
{
	char line[256];
	long v = -1;
	FILE *fp = fopen("/proc/self/status", "r");

	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp))
		if (strncmp(line, f, strlen(f)) == 0)
			v = atol(line + strlen(f));
	fclose(fp);
	return v;
}

static long rss_bytes(void)
{
	return (status_kb("RssAnon:") + status_kb("RssShmem:")) * 1024;
}

static uint8_t *fresh(size_t n) /* untouched private anonymous memory */
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	return p;
}

static uint8_t *dev(CUdeviceptr d)
{
	return (uint8_t *)(uintptr_t)d;
}

static CUdeviceptr dalloc(void)
{
	CUdeviceptr d;

	assert_int_equal(cuMemAlloc(&d, N), CUDA_SUCCESS);
	return d;
}

/* N bytes of VMM memory: a fresh handle mapped at a reserved range. */
static CUdeviceptr vmm_alloc(void)
{
	CUmemAllocationProp prop = {0};
	CUmemAccessDesc acc = {0};
	CUmemGenericAllocationHandle h;
	CUdeviceptr d;

	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	assert_int_equal(cuMemAddressReserve(&d, N, 0, 0, 0), CUDA_SUCCESS);
	assert_int_equal(cuMemCreate(&h, N, &prop, 0), CUDA_SUCCESS);
	assert_int_equal(cuMemMap(d, N, 0, h, 0), CUDA_SUCCESS);
	assert_int_equal(cuMemRelease(h), CUDA_SUCCESS);
	assert_int_equal(cuMemSetAccess(d, N, &acc, 1), CUDA_SUCCESS);
	return d;
}

static void vmm_free(CUdeviceptr d)
{
	assert_int_equal(cuMemUnmap(d, N), CUDA_SUCCESS);
	assert_int_equal(cuMemAddressFree(d, N), CUDA_SUCCESS);
}

/* Scattered writes: a byte at the start of a page, a run across a page
 * boundary, a word at an odd offset, every 1 MiB; n bytes at p. */
static void scatter(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t at = 0; at + 2 * PG < n; at += MIB) {
		p[at] = (uint8_t)(seed + 1);
		for (size_t i = 0; i < 300; i++)
			p[at + PG - 150 + i] = (uint8_t)(seed + i);
		p[at + PG + 777] = (uint8_t)(seed ^ 0x5a);
	}
}

static int setup(void **state)
{
	struct gs_sim_gpu_init g[1];
	struct gs_errbuf eb = {0};
	CUdevice d;
	int n;

	(void)state;
	if (mkdtemp(dir) == NULL ||
	    gs_sim_gpus_parse("1xH100-SXM5-80GB", g, 1, &n, &eb) != GS_OK ||
	    gs_sim_state_create(dir, g, n, true, &eb) != GS_OK)
		return -1;
	setenv("GPUSLICE_SIM_DIR", dir, 1);
	unsetenv("GPUSLICE_SIM_BUS_GBPS");
	unsetenv("CUDA_VISIBLE_DEVICES");
	unsetenv("CUDA_MPS_PIPE_DIRECTORY");
	if (cuInit(0) || cuDeviceGet(&d, 0) ||
	    cuDevicePrimaryCtxRetain(&ctx, d) || cuCtxSetCurrent(ctx))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/%s", dir, GS_SIM_STATE_FILE);
	unlink(path);
	rmdir(dir);
	return 0;
}

static void
dtoh_of_unwritten_memory_dirties_no_zero_page_and_clears_data(void **state)
{
	CUdeviceptr d = dalloc(), v = vmm_alloc();
	uint8_t *pinned, *own = fresh(N), *dirty = fresh(N);
	long before;

	(void)state;
	assert_int_equal(cuMemHostAlloc((void **)&pinned, N, 0), CUDA_SUCCESS);
	/* a destination whose pages partly hold data: every third page */
	for (size_t at = 0; at < N; at += 3 * PG)
		memset(dirty + at + 5, 0xab, PG - 10);
	before = rss_bytes();
	assert_int_equal(cuMemcpyDtoH(pinned, d, N), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoH(own, d, N), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoH(own, v, N), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoH(pinned, v, N), CUDA_SUCCESS);
	assert_true(rss_bytes() - before < (long)SLOP);
	assert_int_equal(cuMemcpyDtoH(dirty, d, N), CUDA_SUCCESS);
	for (size_t i = 0; i < N; i++)
		if (pinned[i] || own[i] || dirty[i])
			fail_msg("byte %zu not zero", i);
	memset(dirty, 0x11, N);
	assert_int_equal(cuMemcpyDtoH(dirty + 3, v + 4093, N - 4096),
	                 CUDA_SUCCESS);
	for (size_t i = 0; i < N; i++)
		if (dirty[i] != (i >= 3 && i < N - 4093 ? 0 : 0x11))
			fail_msg("unaligned: byte %zu is %u", i, dirty[i]);
	assert_int_equal(cuMemFreeHost(pinned), CUDA_SUCCESS);
	assert_int_equal(cuMemFree(d), CUDA_SUCCESS);
	vmm_free(v);
	munmap(own, N);
	munmap(dirty, N);
}

static void htod_of_zeros_leaves_fresh_device_memory_without_pages(void **state)
{
	CUdeviceptr d = dalloc(), v = vmm_alloc();
	uint8_t *zeros = fresh(N), *pinned;
	long before;

	(void)state;
	assert_int_equal(cuMemHostAlloc((void **)&pinned, N, 0), CUDA_SUCCESS);
	memset(zeros, 0, N); /* written zeros: pages of the source's own */
	before = rss_bytes();
	assert_int_equal(cuMemcpyHtoD(d, zeros, N), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyHtoD(v, zeros, N), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyHtoD(d, pinned, N), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoD(v, d, N), CUDA_SUCCESS);
	assert_true(rss_bytes() - before < (long)SLOP);
	for (size_t i = 0; i < N; i++)
		if (dev(d)[i] || dev(v)[i])
			fail_msg("byte %zu not zero", i);
	assert_int_equal(cuMemFreeHost(pinned), CUDA_SUCCESS);
	assert_int_equal(cuMemFree(d), CUDA_SUCCESS);
	vmm_free(v);
	munmap(zeros, N);
}

/* Zeros copied over device data clear it, and give its whole pages back. */
static void zeros_onto_written_device_memory_clear_it(void **state)
{
	CUdeviceptr d = dalloc(), v = vmm_alloc();
	uint8_t *zeros = fresh(N);
	long full, after;

	(void)state;
	memset(dev(d), 0x77, N);
	memset(dev(v), 0x66, N);
	full = rss_bytes();
	assert_int_equal(cuMemcpyHtoD(d + 5, zeros, N - 10), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoD(v + 5, d + 5, N - 10), CUDA_SUCCESS);
	after = rss_bytes();
	for (size_t i = 0; i < N; i++) {
		uint8_t want = i < 5 || i >= N - 5 ? 0x77 : 0;

		if (dev(d)[i] != want || dev(v)[i] != (want ? 0x66 : 0))
			fail_msg("byte %zu: %u %u", i, dev(d)[i], dev(v)[i]);
	}
	assert_true(full - after > (long)(N + N / 2)); /* most pages back */
	assert_int_equal(cuMemFree(d), CUDA_SUCCESS);
	vmm_free(v);
	munmap(zeros, N);
}

/* Partly written pages and unaligned ranges, every pairing of device
 * memory kinds and host memory, onto destinations holding other data:
 * the bytes of a memmove. */
static void copies_give_memmoves_bytes_on_partly_written_unaligned_ranges(
    void **state)
{
	static const size_t offs[][3] = {
	    /* src offset, dst offset, length */
	    {0, 0, N},
	    {3, 4093, N - 8192},
	    {PG - 150, 1, 3 * MIB + 17},
	    {777, 777, N - 777},
	    {1, 0, 64 * 1024 + 1},
	};
	CUdeviceptr d = dalloc(), v = vmm_alloc(), d2 = dalloc();
	uint8_t *h = fresh(N), *ref = malloc(N), *pinned;

	(void)state;
	assert_non_null(ref);
	assert_int_equal(cuMemHostAlloc((void **)&pinned, N, 0), CUDA_SUCCESS);
	for (size_t c = 0; c < sizeof(offs) / sizeof(offs[0]); c++) {
		size_t so = offs[c][0], dof = offs[c][1], n = offs[c][2];
		/* sources: the device kinds and the host kinds, written
		 * sparsely; destinations hold data on every other page */
		struct {
			uint8_t *src, *dst;
		} pairs[] = {
		    {dev(d), h},     {dev(v), h},      {dev(d), pinned},
		    {dev(v), pinned}, {h, dev(d2)},    {pinned, dev(v)},
		    {dev(d), dev(v)}, {dev(v), dev(d2)},
		};

		for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]); k++) {
			uint8_t *s = pairs[k].src, *t = pairs[k].dst;

			memset(s, 0, N);
			scatter(s, N, (uint8_t)(c * 16 + k));
			for (size_t at = 0; at < N; at += 2 * PG)
				memset(t + at, 0xc3, PG);
			memcpy(ref, t, N);
			memmove(ref + dof, s + so, n);
			assert_int_equal(cuMemcpy((CUdeviceptr)(uintptr_t)t +
			                              dof,
			                          (CUdeviceptr)(uintptr_t)s + so,
			                          n),
			                 CUDA_SUCCESS);
			if (memcmp(ref, t, N) != 0)
				fail_msg("case %zu pair %zu differs", c, k);
		}
	}
	assert_int_equal(cuMemFreeHost(pinned), CUDA_SUCCESS);
	assert_int_equal(cuMemFree(d), CUDA_SUCCESS);
	assert_int_equal(cuMemFree(d2), CUDA_SUCCESS);
	vmm_free(v);
	munmap(h, N);
	free(ref);
}

/* The sim reads /proc/self/pagemap through a descriptor it keeps; a
 * program that closes it and opens a file of zeros that gets its number
 * must not make device data read as never written. */
static void copies_stay_exact_when_the_program_reuses_the_sims_descriptor(
    void **state)
{
	char tmpl[] = "/tmp/gs-test-simcopy-zeros-XXXXXX", link[64], to[256];
	CUdeviceptr d = dalloc();
	uint8_t *h = fresh(N);
	int pm = -1, z;
	ssize_t n;

	(void)state;
	memset(dev(d), 0x3c, N);
	assert_int_equal(cuMemcpyDtoH(h, d, N), CUDA_SUCCESS); /* opens it */
	for (int fd = 3; fd < 1024 && pm < 0; fd++) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, to, sizeof(to) - 1);
		if (n > 0) {
			to[n] = '\0';
			if (strstr(to, "/pagemap") != NULL)
				pm = fd;
		}
	}
	assert_true(pm >= 0);
	z = mkstemp(tmpl);
	assert_true(z >= 0);
	/* zeros wherever the sim would read (a pagemap entry for every page
	 * of the 47-bit address space: 256 GiB, a sparse file) */
	assert_int_equal(ftruncate(z, (off_t)1 << 39), 0);
	assert_int_equal(dup2(z, pm), pm); /* closes the sim's, takes its number */
	close(z);
	z = pm;
	memset(h, 0, N);
	assert_int_equal(cuMemcpyDtoH(h, d, N), CUDA_SUCCESS);
	for (size_t i = 0; i < N; i++)
		if (h[i] != 0x3c)
			fail_msg("byte %zu is %u", i, h[i]);
	close(z);
	unlink(tmpl);
	assert_int_equal(cuMemFree(d), CUDA_SUCCESS);
	munmap(h, N);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        dtoh_of_unwritten_memory_dirties_no_zero_page_and_clears_data),
	    cmocka_unit_test(
	        htod_of_zeros_leaves_fresh_device_memory_without_pages),
	    cmocka_unit_test(zeros_onto_written_device_memory_clear_it),
	    cmocka_unit_test(
	        copies_give_memmoves_bytes_on_partly_written_unaligned_ranges),
	    cmocka_unit_test(
	        copies_stay_exact_when_the_program_reuses_the_sims_descriptor),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
