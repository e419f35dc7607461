/*
 * memory.cu - device memory keeps its contents, however large, and costs
 * the host only the pages written: signatures written and read back
 * across 20 GiB of allocations made every way (cudaMalloc, Pitch,
 * Managed, MallocAsync, and a VMM handle mapped twice, whose two
 * mappings show the same bytes) while the process's resident memory
 * grows by a few MiB; a memset to zero of 4 GiB gives pages back. Then
 * what programs ask of memory besides: advice and range attributes
 * (recorded and reported back), prefetch, cudaStreamAttachMemAsync,
 * peer copies between two devices, and a pool's maxSize. Needs two
 * 80 GB devices. Prints "all ok".
 */
#include "check.h"

#include <cuda.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define STEP (256 * MIB)

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "VmRSS:", 6) == 0)
			v = strtol(line + 6, NULL, 10);
	if (f != NULL)
		fclose(f);
	return v;
}

static void signature(unsigned char *s, int which, size_t off)
{
	for (int i = 0; i < 64; i++)
		s[i] = (unsigned char)(which * 31 + (off / STEP) * 7 + i);
}

static void write_all(unsigned char *base, int which, size_t len)
{
	unsigned char s[64];

	for (size_t off = 0; off + 64 <= len; off += STEP) {
		signature(s, which, off);
		CHECK(cudaMemcpy(base + off, s, 64, cudaMemcpyHostToDevice));
	}
}

static int read_all(unsigned char *base, int which, size_t len)
{
	unsigned char s[64], got[64];
	int bad = 0;

	for (size_t off = 0; off + 64 <= len; off += STEP) {
		signature(s, which, off);
		CHECK(cudaMemcpy(got, base + off, 64, cudaMemcpyDeviceToHost));
		bad += memcmp(s, got, 64) != 0;
	}
	return bad;
}

#define DRV(x) EXPECT((x) == CUDA_SUCCESS)

static void check_contents(void)
{
	unsigned char *p[6];
	size_t pitch = 0, len = 4 * GIB;
	cudaStream_t s;
	CUmemGenericAllocationHandle h;
	CUmemAllocationProp prop = {};
	CUmemAccessDesc acc = {};
	CUdeviceptr va, vb;
	long r0, r1, r2;
	unsigned char z[64], zero[64] = {0};

	CHECK(cudaSetDevice(0));
	CHECK(cudaStreamCreate(&s));
	r0 = rss_kib();
	CHECK(cudaMalloc(&p[0], len));
	CHECK(cudaMallocPitch(&p[1], &pitch, 65536, 65536));
	EXPECT(pitch == 65536);
	CHECK(cudaMallocManaged(&p[2], len));
	CHECK(cudaMallocAsync(&p[3], len, s));
	CHECK(cudaStreamSynchronize(s));
	/* VMM: one 4 GiB handle, mapped at two addresses */
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	DRV(cuMemCreate(&h, len, &prop, 0));
	DRV(cuMemAddressReserve(&va, len, 0, 0, 0));
	DRV(cuMemAddressReserve(&vb, len, 0, 0, 0));
	DRV(cuMemMap(va, len, 0, h, 0));
	DRV(cuMemMap(vb, len, 0, h, 0));
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	DRV(cuMemSetAccess(va, len, &acc, 1));
	DRV(cuMemSetAccess(vb, len, &acc, 1));
	p[4] = (unsigned char *)va;
	p[5] = (unsigned char *)vb;
	for (int i = 0; i < 5; i++)
		write_all(p[i], i, len);
	for (int i = 0; i < 4; i++)
		EXPECT(read_all(p[i], i, len) == 0);
	/* what went in through one mapping comes out through the other */
	EXPECT(read_all(p[5], 4, len) == 0);
	r1 = rss_kib();
	printf("20 GiB of allocations with signatures: rss %ld -> %ld KiB\n",
	       r0, r1);
	EXPECT(r1 - r0 < 64 * 1024);

	/* a memset to zero of all 4 GiB: zeros read back, pages given back */
	CHECK(cudaMemset(p[0], 0, len));
	CHECK(cudaMemcpy(z, p[0] + 3 * STEP, 64, cudaMemcpyDeviceToHost));
	EXPECT(memcmp(z, zero, 64) == 0);
	CHECK(cudaMemset(p[4], 0, len));
	CHECK(cudaMemcpy(z, p[5] + 5 * STEP, 64, cudaMemcpyDeviceToHost));
	EXPECT(memcmp(z, zero, 64) == 0);
	r2 = rss_kib();
	printf("after zeroing 8 GiB: rss %ld KiB\n", r2);
	EXPECT(r2 - r0 < 64 * 1024);

	DRV(cuMemUnmap(va, len));
	DRV(cuMemUnmap(vb, len));
	DRV(cuMemRelease(h));
	DRV(cuMemAddressFree(va, len));
	DRV(cuMemAddressFree(vb, len));
	CHECK(cudaFreeAsync(p[3], s));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaFree(p[2]));
	CHECK(cudaFree(p[1]));
	CHECK(cudaFree(p[0]));
	CHECK(cudaStreamDestroy(s));
}

static void check_advice(void)
{
	char *m, *d;
	int v = -9, by[4];
	cudaStream_t s;
	cudaMemLocation dev0 = {cudaMemLocationTypeDevice, 0};
	cudaMemLocation dev1 = {cudaMemLocationTypeDevice, 1};

	CHECK(cudaSetDevice(0));
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaMallocManaged(&m, 64 * MIB));
	CHECK(cudaMemAdvise(m, 16 * MIB, cudaMemAdviseSetReadMostly, dev0));
	CHECK(cudaMemRangeGetAttribute(&v, 4, cudaMemRangeAttributeReadMostly,
	                               m, 16 * MIB));
	EXPECT(v == 1);
	CHECK(cudaMemRangeGetAttribute(&v, 4, cudaMemRangeAttributeReadMostly,
	                               m, 32 * MIB));
	EXPECT(v == 0);
	CHECK(cudaMemAdvise(m, 64 * MIB, cudaMemAdviseSetPreferredLocation,
	                    dev1));
	CHECK(cudaMemRangeGetAttribute(
	    &v, 4, cudaMemRangeAttributePreferredLocation, m, 64 * MIB));
	EXPECT(v == 1);
	CHECK(cudaMemAdvise(m, 64 * MIB, cudaMemAdviseUnsetPreferredLocation,
	                    dev1));
	CHECK(cudaMemRangeGetAttribute(
	    &v, 4, cudaMemRangeAttributePreferredLocation, m, 64 * MIB));
	EXPECT(v == cudaInvalidDeviceId);
	CHECK(cudaMemAdvise(m, 64 * MIB, cudaMemAdviseSetAccessedBy, dev0));
	CHECK(cudaMemRangeGetAttribute(by, sizeof(by),
	                               cudaMemRangeAttributeAccessedBy, m,
	                               64 * MIB));
	EXPECT(by[0] == 0 && by[1] == cudaInvalidDeviceId);
	CHECK(cudaMemPrefetchAsync(m, 8 * MIB, dev1, 0, s));
	CHECK(cudaMemRangeGetAttribute(
	    &v, 4, cudaMemRangeAttributeLastPrefetchLocation, m, 8 * MIB));
	EXPECT(v == 1);
	CHECK(cudaStreamAttachMemAsync(s, m, 0, cudaMemAttachHost));
	WANT(cudaStreamAttachMemAsync(s, m, 0, 77), cudaErrorInvalidValue);
	CHECK(cudaMalloc(&d, MIB));
	WANT(cudaMemAdvise(d, MIB, cudaMemAdviseSetReadMostly, dev0),
	     cudaErrorInvalidValue);
	WANT(cudaStreamAttachMemAsync(s, d, 0, cudaMemAttachHost),
	     cudaErrorInvalidValue);
	(void)cudaGetLastError();
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaFree(d));
	CHECK(cudaFree(m));
	CHECK(cudaStreamDestroy(s));
}

static void check_peer_and_pool(void)
{
	unsigned char *a, *b, h[4096], got[4096];
	cudaMemPool_t pool;
	cudaMemPoolProps props = {};
	cudaStream_t s;
	void *p1, *p2;

	for (int i = 0; i < 4096; i++)
		h[i] = (unsigned char)(i * 13);
	CHECK(cudaSetDevice(0));
	CHECK(cudaMalloc(&a, sizeof(h)));
	CHECK(cudaMemcpy(a, h, sizeof(h), cudaMemcpyHostToDevice));
	CHECK(cudaSetDevice(1));
	CHECK(cudaMalloc(&b, sizeof(h)));
	CHECK(cudaMemcpyPeer(b, 1, a, 0, sizeof(h)));
	CHECK(cudaMemcpy(got, b, sizeof(got), cudaMemcpyDeviceToHost));
	EXPECT(memcmp(h, got, sizeof(h)) == 0);
	CHECK(cudaMemset(b, 0, sizeof(h)));
	CHECK(cudaMemcpyPeerAsync(b, 1, a, 0, sizeof(h), 0));
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaMemcpy(got, b, sizeof(got), cudaMemcpyDeviceToHost));
	EXPECT(memcmp(h, got, sizeof(h)) == 0);
	CHECK(cudaFree(b));
	CHECK(cudaSetDevice(0));
	CHECK(cudaFree(a));

	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;
	props.maxSize = 64 * MIB;
	CHECK(cudaMemPoolCreate(&pool, &props));
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaMallocFromPoolAsync(&p1, 48 * MIB, pool, s));
	WANT(cudaMallocFromPoolAsync(&p2, 48 * MIB, pool, s),
	     cudaErrorMemoryAllocation);
	(void)cudaGetLastError();
	CHECK(cudaFreeAsync(p1, s));
	CHECK(cudaMallocFromPoolAsync(&p2, 48 * MIB, pool, s));
	CHECK(cudaFreeAsync(p2, s));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaStreamDestroy(s));
	CHECK(cudaMemPoolDestroy(pool));
}

int main(void)
{
	check_contents();
	check_advice();
	check_peer_and_pool();
	return finish();
}
