/*
 * sparse_prog.c - gs-swap-sparse-prog: the sim's copies to and from VMM
 * memory (sim/cuda/copy.c, "sparse copies") move the same bytes as a
 * plain memmove, and a copy into fresh physical memory makes host pages
 * only for what is not zero. Run straight on the sim's libcuda (no shim)
 * by sparse_copies_are_exact_and_keep_holes.sh.
 *
 * A 16 MiB handle gets a sparse pattern: some pages written with data,
 * some written with zeros, some with one byte at the end, the rest never
 * touched. It is copied to pinned host memory full of garbage (as a
 * swap-out does), from there into a fresh handle (a swap-in), device to
 * device at an offset, and read back at unaligned offsets; every result is
 * compared with the pattern. Prints one JSON line; exits 1 on a mismatch.
 */
#include <cuda.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SZ (16u << 20)
#define PG 4096u

#define CK(call)                                                               \
	do {                                                                   \
		CUresult r_ = (call);                                          \
		if (r_ != CUDA_SUCCESS) {                                      \
			printf("{\"error\": %d, \"at\": \"%s\"}\n", (int)r_,   \
			       #call);                                         \
			return 1;                                              \
		}                                                              \
	} while (0)

static CUresult vmm(CUdevice dev, CUdeviceptr *p)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc a;
	CUmemGenericAllocationHandle h;
	CUresult r;

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	memset(&a, 0, sizeof(a));
	a.location = prop.location;
	a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	if ((r = cuMemCreate(&h, SZ, &prop, 0)) != CUDA_SUCCESS ||
	    (r = cuMemAddressReserve(p, SZ, 0, 0, 0)) != CUDA_SUCCESS ||
	    (r = cuMemMap(*p, SZ, 0, h, 0)) != CUDA_SUCCESS)
		return r;
	return cuMemSetAccess(*p, SZ, &a, 1);
}

/* Pages of [p, p + n) the host holds. */
static long resident(CUdeviceptr p, size_t n)
{
	unsigned char *v = malloc(n / PG);
	long k = 0;

	if (v == NULL || mincore((void *)(uintptr_t)p, n, v) != 0) {
		free(v);
		return -1;
	}
	for (size_t i = 0; i < n / PG; i++)
		k += v[i] & 1;
	free(v);
	return k;
}

static long diff(const uint8_t *a, const uint8_t *b, size_t n)
{
	long bad = 0;

	for (size_t i = 0; i < n; i++)
		bad += a[i] != b[i];
	return bad;
}

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr d1, d2, d3;
	uint8_t *want, *pinned, *m, *zeros;
	long bad_out, bad_in, bad_d2d, bad_unaligned, bad_zero_onto_data;
	long nonzero = 0, res;

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	CK(vmm(dev, &d1));
	CK(vmm(dev, &d2));
	CK(vmm(dev, &d3));
	want = calloc(1, SZ);
	m = malloc(SZ);
	zeros = calloc(1, SZ);
	if (want == NULL || m == NULL || zeros == NULL)
		return 1;
	for (size_t pg = 0; pg < SZ / PG; pg++) {
		uint8_t *w = want + pg * PG;

		if (pg % 7 == 0) { /* data */
			for (size_t i = 0; i < PG; i++)
				w[i] = (uint8_t)(pg * 31 + i * 7 + 1);
			CK(cuMemcpyHtoD(d1 + pg * PG, w, PG));
		} else if (pg % 11 == 0) { /* written, with zeros */
			CK(cuMemcpyHtoD(d1 + pg * PG, zeros, PG));
		} else if (pg % 13 == 0) { /* one byte at the end */
			w[PG - 1] = 0xa5;
			CK(cuMemcpyHtoD(d1 + pg * PG + PG - 1, w + PG - 1, 1));
		}
		nonzero += memcmp(w, zeros, PG) != 0;
	}

	/* device -> pinned host memory full of garbage (a swap-out) */
	CK(cuMemHostAlloc((void **)&pinned, SZ, CU_MEMHOSTALLOC_PORTABLE));
	memset(pinned, 0xee, SZ);
	CK(cuMemcpyDtoH(pinned, d1, SZ));
	bad_out = diff(pinned, want, SZ);

	/* pinned host -> fresh physical memory (a swap-in) */
	CK(cuMemcpyHtoD(d2, pinned, SZ));
	res = resident(d2, SZ);
	memset(m, 0xee, SZ);
	CK(cuMemcpyDtoH(m, d2, SZ));
	bad_in = diff(m, want, SZ);

	/* device -> device, at an offset into fresh memory */
	CK(cuMemcpyDtoD(d3 + 3 * PG, d1, SZ / 2));
	memset(m, 0xee, SZ);
	CK(cuMemcpyDtoH(m, d3 + 3 * PG, SZ / 2));
	bad_d2d = diff(m, want, SZ / 2);

	/* unaligned ends, into ordinary (malloc) memory */
	memset(m, 0xee, SZ);
	CK(cuMemcpyDtoH(m + 3, d1 + 5, SZ - 2 * PG));
	bad_unaligned = diff(m + 3, want + 5, SZ - 2 * PG);

	/* zeros copied onto data are written */
	CK(cuMemcpyHtoD(d2, zeros, SZ / 4));
	memset(m, 0xee, SZ);
	CK(cuMemcpyDtoH(m, d2, SZ));
	memset(want, 0, SZ / 4);
	bad_zero_onto_data = diff(m, want, SZ);

	printf("{\"bad_out\": %ld, \"bad_in\": %ld, \"bad_d2d\": %ld, \"bad_unaligned\": %ld, \"bad_zero_onto_data\": %ld, \"pages\": %u, \"nonzero_pages\": %ld, \"resident_after_in\": %ld}\n",
	       bad_out, bad_in, bad_d2d, bad_unaligned, bad_zero_onto_data,
	       SZ / PG, nonzero, res);
	return bad_out || bad_in || bad_d2d || bad_unaligned ||
	               bad_zero_onto_data
	           ? 1
	           : 0;
}
