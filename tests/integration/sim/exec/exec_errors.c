/*
 * exec_errors.c - what the sim's PTX interpreter does with a kernel it
 * cannot run correctly: each case launches one hand-written kernel and
 * prints "ok CASE" when the driver answered as a GPU would:
 *   not_reached: an unsupported instruction on a path no thread takes
 *     does not stop the kernel (its results are right);
 *   unsupported: one a thread reaches fails the launch: the launch call
 *     succeeds, the next synchronize returns CUDA_ERROR_ILLEGAL_INSTRUCTION
 *     (sticky: a later call too) and stderr names the instruction;
 *   bad_address: a store outside every allocation gives
 *     CUDA_ERROR_ILLEGAL_ADDRESS;
 *   graph_memory_not_live: so does a store to a graph allocation whose
 *     alloc node has not run (a copy to it: CUDA_ERROR_INVALID_VALUE);
 *   trap: `trap` gives CUDA_ERROR_LAUNCH_FAILED;
 *   cluster_rank, cluster_dims: another block's shared memory in a
 *     cluster, or a kernel compiled for clusters of two blocks (the
 *     interpreter runs one block per cluster) fail with
 *     CUDA_ERROR_ILLEGAL_INSTRUCTION;
 *   recursion: a .func that calls itself (its registers are not kept per
 *     call) fails with CUDA_ERROR_ILLEGAL_INSTRUCTION.
 * Each failing case runs in a fresh primary context (reset after).
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *head =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k(.param .u64 out, .param .u32 flag)\n{\n"
    " .reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<4>;\n"
    " ld.param.u64 %rd1, [out]; ld.param.u32 %r1, [flag];\n"
    " mov.u32 %r2, %tid.x; mul.wide.u32 %rd2, %r2, 4;\n"
    " add.s64 %rd3, %rd1, %rd2;\n";

static int failures;

static void check(int ok, const char *name)
{
	printf("%s %s\n", ok ? "ok" : "FAIL", name);
	fflush(stdout);
	if (!ok)
		failures++;
}

/* Loads the kernel with `body`, runs it on 32 threads; returns what
 * cuCtxSynchronize said. */
static const char *prefix = "";

static CUresult run(const char *body, CUdeviceptr out, unsigned flag)
{
	char ptx[4096];
	CUmodule mod;
	CUfunction f;
	CUresult r;
	void *args[] = {&out, &flag};

	snprintf(ptx, sizeof(ptx), "%s%s%s ret;\n}\n", prefix, head, body);
	if ((r = cuModuleLoadData(&mod, ptx)) != CUDA_SUCCESS ||
	    (r = cuModuleGetFunction(&f, mod, "k")) != CUDA_SUCCESS ||
	    (r = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL)) !=
	        CUDA_SUCCESS)
		return r;
	return cuCtxSynchronize();
}

static CUdeviceptr fresh(CUdevice dev)
{
	CUcontext ctx;
	CUdeviceptr out = 0;

	if (cuDevicePrimaryCtxReset(dev) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
	    cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
	    cuMemAlloc(&out, 32 * 4) != CUDA_SUCCESS) {
		printf("FAIL setting up a context\n");
		exit(1);
	}
	return out;
}

int main(void)
{
	CUdevice dev;
	CUdeviceptr out;
	unsigned host[32];
	CUresult r;

	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS)
		return 1;
	out = fresh(dev);
	/* flag 0: the branch skips the named-barrier arrive */
	r = run(" setp.ne.u32 %p1, %r1, 0; @!%p1 bra $Lskip;\n"
	        " bar.arrive 1, 64;\n"
	        "$Lskip: st.global.u32 [%rd3], %r2;\n",
	        out, 0);
	int ok = r == CUDA_SUCCESS &&
	         cuMemcpyDtoH(host, out, sizeof(host)) == CUDA_SUCCESS;
	for (unsigned i = 0; ok && i < 32; i++)
		ok = host[i] == i;
	check(ok, "not_reached");

	r = run(" bar.arrive 1, 64;\n st.global.u32 [%rd3], %r2;\n", out, 0);
	check(r == CUDA_ERROR_ILLEGAL_INSTRUCTION &&
	          cuMemAlloc(&out, 4) == CUDA_ERROR_ILLEGAL_INSTRUCTION,
	      "unsupported");

	out = fresh(dev);
	r = run(" mov.u64 %rd3, 8;\n st.global.u32 [%rd3], %r2;\n", out, 0);
	check(r == CUDA_ERROR_ILLEGAL_ADDRESS, "bad_address");

	/* a graph allocation before its alloc node ran: the address is
	 * there, the memory is not */
	out = fresh(dev);
	{
		CUDA_MEM_ALLOC_NODE_PARAMS ap;
		CUgraphNode an;
		CUgraph g;
		int made;

		memset(&ap, 0, sizeof(ap));
		ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
		ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		ap.poolProps.location.id = dev;
		ap.bytesize = sizeof(host);
		made =
		    cuGraphCreate(&g, 0) == CUDA_SUCCESS &&
		    cuGraphAddMemAllocNode(&an, g, NULL, 0, &ap) ==
		        CUDA_SUCCESS &&
		    cuMemcpyHtoD(ap.dptr, host, 4) == CUDA_ERROR_INVALID_VALUE;
		r = made ? run(" st.global.u32 [%rd3], %r2;\n", ap.dptr, 0)
		         : CUDA_ERROR_UNKNOWN;
		check(r == CUDA_ERROR_ILLEGAL_ADDRESS, "graph_memory_not_live");
		if (made)
			(void)cuGraphDestroy(g);
	}

	out = fresh(dev);
	r = run(" trap;\n", out, 0);
	check(r == CUDA_ERROR_LAUNCH_FAILED, "trap");

	/* the shared memory of another block of the cluster */
	out = fresh(dev);
	r = run(" .reg .b32 %c<3>; mov.u32 %c1, 0;\n"
	        " mapa.shared::cluster.u32 %c2, %c1, 1;\n",
	        out, 0);
	check(r == CUDA_ERROR_ILLEGAL_INSTRUCTION, "cluster_rank");

	/* a kernel compiled for clusters of two blocks */
	out = fresh(dev);
	{
		const char *plain = head;
		head = ".version 8.0\n.target sm_90\n.address_size 64\n"
		       ".visible .entry k(.param .u64 out, .param .u32 flag)\n"
		       ".reqnctapercluster 2, 1, 1\n{\n"
		       " .reg .b32 %r<4>; .reg .b64 %rd<4>;\n";
		r = run("", out, 0);
		head = plain;
	}
	check(r == CUDA_ERROR_ILLEGAL_INSTRUCTION, "cluster_dims");

	/* a .func calling itself: its registers are not a frame's */
	out = fresh(dev);
	prefix = ".version 8.0\n.target sm_90\n.address_size 64\n"
	         ".func (.param .b32 rv) f(.param .b32 n)\n{\n"
	         " .reg .pred %q; .reg .b32 %s<4>;\n"
	         " ld.param.b32 %s1, [n]; setp.eq.s32 %q, %s1, 0;\n"
	         " @%q bra $Lz;\n add.s32 %s2, %s1, -1;\n"
	         " { .param .b32 a; .param .b32 r; st.param.b32 [a], %s2;\n"
	         " call (r), f, (a); ld.param.b32 %s3, [r]; }\n"
	         " add.s32 %s1, %s1, %s3;\n"
	         "$Lz: st.param.b32 [rv], %s1; ret;\n}\n";
	head = ".visible .entry k(.param .u64 out, .param .u32 flag)\n{\n"
	       " .reg .b32 %r<4>; .reg .b64 %rd<4>;\n"
	       " ld.param.u64 %rd1, [out]; mov.u32 %r2, %tid.x;\n"
	       " { .param .b32 a; .param .b32 r; st.param.b32 [a], %r2;\n"
	       " call (r), f, (a); ld.param.b32 %r3, [r]; }\n"
	       " mul.wide.u32 %rd2, %r2, 4; add.s64 %rd3, %rd1, %rd2;\n"
	       " st.global.u32 [%rd3], %r3;\n";
	r = run("", out, 0);
	check(r == CUDA_ERROR_ILLEGAL_INSTRUCTION, "recursion");
	(void)cuDevicePrimaryCtxReset(dev);
	if (failures)
		return 1;
	printf("all ok\n");
	return 0;
}
