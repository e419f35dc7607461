/*
 * kit.c - opening a device for a workload, launching the kit's kernels,
 * keeping the first failure, and printing the result or error line.
 *
 * The context is the device's primary context (cuDevicePrimaryCtxRetain),
 * the one the CUDA runtime uses, so the workloads look to the driver, the
 * shim and the sim like any runtime-based program.
 */
#include "kit.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gs/kernels.h"
#include "ptx.h"

static const char *const kernel_names[GS_KIT_NKERNELS] = {
    [GS_KIT_SPIN] = GS_KERNEL_SPIN,
    [GS_KIT_MATMUL] = GS_KERNEL_MATMUL,
    [GS_KIT_BURN] = GS_KERNEL_BURN,
    [GS_KIT_INFER_LAYER] = GS_KERNEL_INFER_LAYER,
    [GS_KIT_FILL] = GS_KERNEL_FILL,
    [GS_KIT_FAULT] = GS_KERNEL_FAULT,
};

bool gs_kit_flags(const char *prog, const char *usage, int argc, char **argv,
                  struct gs_flag *flags, size_t nflags, int *status)
{
	char why[256] = "";

	switch (gs_flags_parse(argc, argv, flags, nflags, why, sizeof(why))) {
	case GS_FLAGS_OK:
		return false;
	case GS_FLAGS_HELP:
		fputs(usage, stdout);
		fflush(stdout);
		*status = GS_KIT_EXIT_OK;
		return true;
	case GS_FLAGS_USAGE:
		break;
	}
	fprintf(stderr, "%s: %s (see --help)\n", prog, why);
	*status = GS_KIT_EXIT_USAGE;
	return true;
}

void gs_kit_fail_other(struct gs_kit *k, const char *name, const char *call,
                       const char *msg)
{
	pthread_mutex_lock(&k->lock);
	if (!k->failed) {
		k->failed = true;
		k->err = CUDA_ERROR_UNKNOWN;
		k->err_call = call;
		snprintf(k->err_name, sizeof(k->err_name), "%s", name);
		snprintf(k->err_msg, sizeof(k->err_msg), "%s", msg);
	}
	pthread_mutex_unlock(&k->lock);
}

CUresult gs_kit_check(struct gs_kit *k, CUresult r, const char *call)
{
	if (r == CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&k->lock);
	if (!k->failed) {
		char buf[32];

		k->failed = true;
		k->err = r;
		k->err_call = call;
		snprintf(k->err_name, sizeof(k->err_name), "%s",
		         gs_cu_error_name(r, buf, sizeof(buf)));
		snprintf(k->err_msg, sizeof(k->err_msg), "%s",
		         gs_cu_error_string(r));
	}
	pthread_mutex_unlock(&k->lock);
	return r;
}

bool gs_kit_failed(struct gs_kit *k)
{
	bool f;

	pthread_mutex_lock(&k->lock);
	f = k->failed;
	pthread_mutex_unlock(&k->lock);
	return f;
}

int gs_kit_open(struct gs_kit *k, const char *prog,
                const struct gs_kit_common *c)
{
	char why[256];
	int i, sms = 0;
	size_t total = 0;

	memset(k, 0, sizeof(*k));
	pthread_mutex_init(&k->lock, NULL);
	k->prog = prog;
	k->how =
	    c->via_getprocaddress ? GS_CU_VIA_GETPROCADDRESS : GS_CU_VIA_DLSYM;
	if (gs_cu_load(k->how, why, sizeof(why)) != 0) {
		gs_kit_fail_other(k, "LIBCUDA_LOAD_FAILED",
		                  k->how == GS_CU_VIA_GETPROCADDRESS
		                      ? "cuGetProcAddress"
		                      : "dlopen",
		                  why);
		return -1;
	}
	if (gs_kit_check(k, gs_cu.cuInit(0), "cuInit") ||
	    gs_kit_check(k, gs_cu.cuDriverGetVersion(&k->driver_version),
	                 "cuDriverGetVersion") ||
	    gs_kit_check(k, gs_cu.cuDeviceGet(&k->dev, (int)c->device),
	                 "cuDeviceGet") ||
	    gs_kit_check(k,
	                 gs_cu.cuDeviceGetName(
	                     k->source, (int)sizeof(k->source) - 1, k->dev),
	                 "cuDeviceGetName") ||
	    gs_kit_check(k, gs_cu.cuDeviceTotalMem(&total, k->dev),
	                 "cuDeviceTotalMem") ||
	    gs_kit_check(
	        k,
	        gs_cu.cuDeviceGetAttribute(
	            &sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, k->dev),
	        "cuDeviceGetAttribute"))
		return -1;
	if (gs_cu_sim) {
		char name[sizeof(k->source)];

		(void)snprintf(name, sizeof(name), "%s", k->source);
		(void)snprintf(k->source, sizeof(k->source), "sim: %.240s", name);
	}
	k->total_mem = total;
	k->sm_count = sms > 0 ? sms : 1;
	if (gs_kit_check(k, gs_cu.cuDevicePrimaryCtxRetain(&k->ctx, k->dev),
	                 "cuDevicePrimaryCtxRetain")) {
		k->ctx = NULL;
		return -1;
	}
	if (gs_kit_check(k, gs_cu.cuCtxSetCurrent(k->ctx), "cuCtxSetCurrent") ||
	    gs_kit_check(k, gs_cu.cuModuleLoadData(&k->mod, gs_kernels_ptx),
	                 "cuModuleLoadData")) {
		k->mod = NULL;
		return -1;
	}
	for (i = 0; i < GS_KIT_NKERNELS; i++) {
		if (gs_kit_check(k,
		                 gs_cu.cuModuleGetFunction(&k->fn[i], k->mod,
		                                           kernel_names[i]),
		                 "cuModuleGetFunction"))
			return -1;
	}
	return 0;
}

void gs_kit_close(struct gs_kit *k)
{
	/* Teardown results are ignored on purpose: after a sticky error
	 * (an illegal address) every call fails, and the failure that
	 * matters has already been recorded. */
	if (k->mod)
		(void)gs_cu.cuModuleUnload(k->mod);
	k->mod = NULL;
	if (k->ctx)
		(void)gs_cu.cuDevicePrimaryCtxRelease(k->dev);
	k->ctx = NULL;
	pthread_mutex_destroy(&k->lock);
}

CUresult gs_kit_bind_thread(struct gs_kit *k)
{
	return gs_cu.cuCtxSetCurrent(k->ctx);
}

CUresult gs_kit_launch(struct gs_kit *k, enum gs_kit_kernel which, unsigned gx,
                       unsigned gy, unsigned bx, unsigned by, CUstream stream,
                       void **args)
{
	return gs_cu.cuLaunchKernel(k->fn[which], gx, gy, 1, bx, by, 1, 0,
	                            stream, args, NULL);
}

void gs_kit_result(struct gs_kit *k, struct gs_jline *j)
{
	gs_jline_init(j);
	gs_jline_str(j, "program", k->prog);
	gs_jline_str(j, "source", k->source[0] ? k->source : NULL);
	gs_jline_str(j, "resolve", gs_cu_resolve_name(k->how));
}

void gs_kit_put_error(struct gs_kit *k, struct gs_jline *j)
{
	pthread_mutex_lock(&k->lock);
	if (k->failed) {
		gs_jline_str(j, "error", k->err_name);
		gs_jline_str(j, "call", k->err_call);
		gs_jline_str(j, "message", k->err_msg);
	} else {
		gs_jline_null(j, "error");
	}
	pthread_mutex_unlock(&k->lock);
}

int gs_kit_fail_line(struct gs_kit *k)
{
	struct gs_jline j;

	gs_kit_result(k, &j);
	gs_kit_put_error(k, &j);
	(void)gs_jline_print(&j, stdout);
	return GS_KIT_EXIT_FAILURE;
}

double gs_kit_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void gs_kit_sleep(double s)
{
	struct timespec ts;

	if (!(s > 0))
		return;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L)
		ts.tv_nsec = 999999999L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}
