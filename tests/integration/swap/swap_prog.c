/*
 * swap_prog.c - gs-swap-prog: a program whose memory a swap test moves.
 * Allocates small and large buffers (cuMemAlloc, one cuMemAllocPitch),
 * fills each with a signature, stores a device pointer inside a device
 * buffer, and prints one JSON line "ready" with its addresses and what
 * cuMemGetAddressRange and cuPointerGetAttribute say of them. Then, for
 * each line read on stdin:
 *   check   runs a kernel that follows the stored pointer and reads the
 *           signature through it, reads every buffer back, and prints
 *           {"check": ..., "bad": N, "chased": V, "addresses_same": B}
 *   read    only reads every buffer back (copies, no launch) and prints
 *           {"read": true, "bad": N}
 *   free    frees everything and prints {"freed": true}
 *   ipc     asks for an IPC handle of the first buffer and prints
 *           {"ipc": CUresult}
 * With an argument N, it also allocates one buffer of N MiB (set with
 * cuMemsetD8, not checked): the swap benchmark's bulk; with a second
 * argument "sparse", only one 4 KiB page of every 64 MiB of it is written
 * (the rest never touched, as memory allocated and little used).
 * It exits at end of input. Used by the swap tests beside it.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu_prog.h"

/* chase(u64 holder, u64 out): out[0] = *(u32 *)(*(u64 *)holder) */
static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry chase(.param .u64 holder, .param .u64 out)\n{\n"
    " .reg .b64 %rd<5>;\n .reg .b32 %r<2>;\n"
    " ld.param.u64 %rd1, [holder];\n ld.param.u64 %rd2, [out];\n"
    " cvta.to.global.u64 %rd1, %rd1;\n cvta.to.global.u64 %rd2, %rd2;\n"
    " ld.global.u64 %rd3, [%rd1];\n cvta.to.global.u64 %rd3, %rd3;\n"
    " ld.global.u32 %r1, [%rd3];\n st.global.u32 [%rd2], %r1;\n"
    " ret;\n}\n";

#define NBUF 8
static const size_t sizes[NBUF] = {256,       1000,      4096, 100000,
                                   3u << 20, 8u << 20, 513, 64};

static uint32_t sig(int b, size_t i)
{
	return (uint32_t)(0x9e3779b9u * (unsigned)(b + 1)) ^ (uint32_t)i;
}

int main(int argc, char **argv)
{
	CUdeviceptr bulk = 0;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr buf[NBUF + 1], holder, out, base;
	size_t pitch, rsize, wsz[NBUF + 1];
	uint32_t *host;
	char line[64];
	int range_ok = 1;

	cu_prog_start("gs-swap-prog", ptx, &ctx, &mod);
	CK(F(CUresult(*)(CUfunction *, CUmodule, const char *),
	     "cuModuleGetFunction")(&fn, mod, "chase"));
	for (int b = 0; b < NBUF; b++) {
		CK(F(CUresult(*)(CUdeviceptr *, size_t), "cuMemAlloc_v2")(
		    &buf[b], sizes[b]));
		wsz[b] = sizes[b];
	}
	/* One pitched allocation: 300 bytes x 10 rows. */
	CK(F(CUresult(*)(CUdeviceptr *, size_t *, size_t, size_t, unsigned),
	     "cuMemAllocPitch_v2")(&buf[NBUF], &pitch, 300, 10, 4));
	wsz[NBUF] = pitch * 10;
	CK(F(CUresult(*)(CUdeviceptr *, size_t), "cuMemAlloc_v2")(&holder, 8));
	CK(F(CUresult(*)(CUdeviceptr *, size_t), "cuMemAlloc_v2")(&out, 4));
	host = malloc(8u << 20);
	for (int b = 0; b <= NBUF; b++) {
		size_t n = wsz[b] / 4;

		for (size_t i = 0; i < n; i++)
			host[i] = sig(b, i);
		CK(F(CUresult(*)(CUdeviceptr, const void *, size_t),
		     "cuMemcpyHtoD_v2")(buf[b], host, n * 4));
		CK(F(CUresult(*)(CUdeviceptr *, size_t *, CUdeviceptr),
		     "cuMemGetAddressRange_v2")(&base, &rsize, buf[b] + 3));
		if (base != buf[b] || (b < NBUF && rsize != sizes[b]))
			range_ok = 0;
		CK(F(CUresult(*)(void *, CUpointer_attribute, CUdeviceptr),
		     "cuPointerGetAttribute")(
		    &base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, buf[b] + 1));
		if (base != buf[b])
			range_ok = 0;
	}
	if (argc > 1 && atol(argv[1]) > 0) {
		size_t n = (size_t)atol(argv[1]) << 20;

		CK(F(CUresult(*)(CUdeviceptr *, size_t), "cuMemAlloc_v2")(&bulk,
		                                                          n));
		if (argc > 2 && strcmp(argv[2], "sparse") == 0) {
			for (size_t at = 0; at < n; at += (size_t)64 << 20)
				CK(F(CUresult(*)(CUdeviceptr, unsigned char,
				                 size_t),
				     "cuMemsetD8_v2")(bulk + at, 0x5a, 4096));
		} else {
			CK(F(CUresult(*)(CUdeviceptr, unsigned char, size_t),
			     "cuMemsetD8_v2")(bulk, 0x5a, n));
		}
	}
	/* The pointer stored in the device: buf[3]'s address, whose first
	 * word is sig(3, 0). */
	CK(F(CUresult(*)(CUdeviceptr, const void *, size_t), "cuMemcpyHtoD_v2")(
	    holder, &buf[3], 8));
	printf("{\"ready\": true, \"range_ok\": %s, \"expect_chased\": %u, "
	       "\"buffers\": [",
	       range_ok ? "true" : "false", sig(3, 0));
	for (int b = 0; b <= NBUF; b++)
		printf("%s%llu", b ? ", " : "", (unsigned long long)buf[b]);
	printf("]}\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) != NULL) {
		if (strncmp(line, "check", 5) == 0) {
			void *args[] = {&holder, &out};
			uint32_t chased = 0;
			long bad = 0;

			CK(F(CUresult(*)(CUfunction, unsigned, unsigned,
			                 unsigned, unsigned, unsigned, unsigned,
			                 unsigned, CUstream, void **, void **),
			     "cuLaunchKernel")(fn, 1, 1, 1, 1, 1, 1, 0, NULL,
			                       args, NULL));
			CK(F(CUresult(*)(void), "cuCtxSynchronize")());
			CK(F(CUresult(*)(void *, CUdeviceptr, size_t),
			     "cuMemcpyDtoH_v2")(&chased, out, 4));
			for (int b = 0; b <= NBUF; b++) {
				size_t n = wsz[b] / 4;

				CK(F(CUresult(*)(void *, CUdeviceptr, size_t),
				     "cuMemcpyDtoH_v2")(host, buf[b], n * 4));
				for (size_t i = 0; i < n; i++)
					bad += host[i] != sig(b, i);
			}
			printf("{\"check\": true, \"bad\": %ld, \"chased\": %u}\n",
			       bad, chased);
		} else if (strncmp(line, "read", 4) == 0) {
			long bad = 0;

			for (int b = 0; b <= NBUF; b++) {
				size_t n = wsz[b] / 4;

				CK(F(CUresult(*)(void *, CUdeviceptr, size_t),
				     "cuMemcpyDtoH_v2")(host, buf[b], n * 4));
				for (size_t i = 0; i < n; i++)
					bad += host[i] != sig(b, i);
			}
			printf("{\"read\": true, \"bad\": %ld}\n", bad);
		} else if (strncmp(line, "ipc", 3) == 0) {
			CUipcMemHandle h;

			printf("{\"ipc\": %d}\n",
			       (int)F(CUresult(*)(CUipcMemHandle *, CUdeviceptr),
			              "cuIpcGetMemHandle")(&h, buf[0]));
		} else if (strncmp(line, "free", 4) == 0) {
			for (int b = 0; b <= NBUF; b++)
				CK(F(CUresult(*)(CUdeviceptr), "cuMemFree_v2")(
				    buf[b]));
			CK(F(CUresult(*)(CUdeviceptr), "cuMemFree_v2")(holder));
			CK(F(CUresult(*)(CUdeviceptr), "cuMemFree_v2")(out));
			printf("{\"freed\": true}\n");
		}
		fflush(stdout);
	}
	free(host);
	return 0;
}
