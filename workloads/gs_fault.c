/*
 * gs-fault - a program that crashes its GPU context on purpose: it runs a
 * few ordinary kernels (and keeps spinning for --after-ms), then launches
 * gs_fault on an address no allocation covers, which raises an illegal-
 * address fault. The error is sticky: the context is unusable afterwards,
 * as on a real GPU, which is what the fault-isolation tests look at (does
 * the fault reach other workloads on the same GPU?).
 *
 * Exits 1 with {"error":"CUDA_ERROR_ILLEGAL_ADDRESS","call":...,
 * "kernels_before":N,"elapsed_ms":X,...}. If no fault is raised, it says so
 * ("error":"GS_NO_FAULT") and also exits 1: the program failed its purpose.
 */
#include <stdio.h>

#include "kit.h"

/* Low addresses are never mapped on the device (nor in the host's UVA
 * range), so a store there faults on every GPU and on the sim. */
#define GS_FAULT_ADDRESS 0x1000ULL

static const char usage[] =
    "usage: gs-fault [--after-ms N] [--device N]\n"
    "\n"
    "Runs a few normal kernels, keeps the GPU busy for N milliseconds,\n"
    "then stores through an unmapped device address (kernel gs_fault).\n"
    "Exits 1 with one JSON line carrying the error, normally\n"
    "CUDA_ERROR_ILLEGAL_ADDRESS.\n"
    "\n"
    "  --after-ms N         run normally this long first (default 0)\n" GS_KIT_COMMON_USAGE;

int main(int argc, char **argv)
{
	struct gs_kit_common c = {0, false};
	long after_ms = 0;
	struct gs_flag flags[] = {
	    {"after-ms", GS_FLAG_INT, &after_ms, 0, 86400000, NULL, false},
	    GS_KIT_COMMON_FLAGS(&c),
	};
	unsigned long long n = 1 << 16, spin_ns = 1000000ULL;
	CUdeviceptr buf = 0, bad = GS_FAULT_ADDRESS;
	struct gs_kit k;
	struct gs_jline j;
	long kernels = 0;
	double t0;
	float v = 2.0f;
	int status, i;

	if (gs_kit_flags("gs-fault", usage, argc, argv, flags,
	                 sizeof(flags) / sizeof(flags[0]), &status))
		return status;
	if (gs_kit_open(&k, "gs-fault", &c) != 0) {
		status = gs_kit_fail_line(&k);
		gs_kit_close(&k);
		return status;
	}
	t0 = gs_kit_now();
	if (gs_kit_check(&k, gs_cu.cuMemAlloc(&buf, n * sizeof(float)),
	                 "cuMemAlloc"))
		goto out;
	for (i = 0; i < 3; i++) {
		void *args[] = {&buf, &n, &v};

		if (gs_kit_check(&k,
		                 gs_kit_launch(&k, GS_KIT_FILL, 64, 1, 256, 1,
		                               NULL, args),
		                 "cuLaunchKernel"))
			goto out;
		kernels++;
	}
	if (gs_kit_check(&k, gs_cu.cuCtxSynchronize(), "cuCtxSynchronize"))
		goto out;
	/* Busy for --after-ms, one 1 ms spin at a time. */
	while ((gs_kit_now() - t0) * 1e3 < (double)after_ms) {
		void *args[] = {&spin_ns};

		if (gs_kit_check(
		        &k,
		        gs_kit_launch(&k, GS_KIT_SPIN, 1, 1, 32, 1, NULL, args),
		        "cuLaunchKernel") ||
		    gs_kit_check(&k, gs_cu.cuCtxSynchronize(),
		                 "cuCtxSynchronize"))
			goto out;
		kernels++;
	}
	{
		void *args[] = {&bad};

		/* The fault surfaces at the launch or, more usually, at the
		 * next synchronisation. */
		if (gs_kit_check(
		        &k,
		        gs_kit_launch(&k, GS_KIT_FAULT, 1, 1, 1, 1, NULL, args),
		        "cuLaunchKernel") ||
		    gs_kit_check(&k, gs_cu.cuCtxSynchronize(),
		                 "cuCtxSynchronize"))
			goto out;
	}

out:
	gs_kit_result(&k, &j);
	if (gs_kit_failed(&k))
		gs_kit_put_error(&k, &j);
	else
		gs_jline_str(&j, "error", "GS_NO_FAULT");
	gs_jline_int(&j, "kernels_before", kernels);
	gs_jline_num(&j, "elapsed_ms", (gs_kit_now() - t0) * 1e3);
	gs_jline_int(&j, "after_ms", after_ms);
	gs_jline_u64(&j, "address", bad);
	(void)gs_jline_print(&j, stdout);
	/* After an illegal address the context is gone; releasing it is all
	 * that is left, and buf goes with it. */
	gs_kit_close(&k);
	return GS_KIT_EXIT_FAILURE;
}
