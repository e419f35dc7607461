/*
 * test_sim_procaddr.c - the sim driver's symbol table: cuGetProcAddress
 * answers each (base name, CUDA version, flags) with the variant the real
 * driver gives, every export can be looked up and every lookup is an
 * export, and every request the CUDA 13 runtime makes at start-up
 * (tests/data/cudart13-getprocaddress.txt) resolves. Also: calls before
 * cuInit fail with CUDA_ERROR_NOT_INITIALIZED, error names, and
 * cuGetExportTable. No node state is needed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#undef cuGetProcAddress

static void *lib;

static void *sym(const char *name)
{
	void *p = dlsym(lib, name);

	if (p == NULL)
		fail_msg("libcuda.so.1 does not export %s", name);
	return p;
}

static void *resolve(const char *base, int ver, cuuint64_t flags, CUresult want,
                     CUdriverProcAddressQueryResult want_status)
{
	CUdriverProcAddressQueryResult status = 99;
	void *fn = (void *)1;
	CUresult r = cuGetProcAddress_v2(base, &fn, ver, flags, &status);

	if (r != want || status != want_status)
		fail_msg("%s ver %d flags %llu: got %d/%d, want %d/%d", base,
		         ver, (unsigned long long)flags, r, status, want,
		         want_status);
	if (want != CUDA_SUCCESS)
		assert_null(fn);
	return fn;
}

static void expect(const char *base, int ver, cuuint64_t flags,
                   const char *symbol)
{
	void *fn = resolve(base, ver, flags, CUDA_SUCCESS,
	                   CU_GET_PROC_ADDRESS_SUCCESS);

	if (fn != sym(symbol))
		fail_msg("%s ver %d flags %llu is not %s", base, ver,
		         (unsigned long long)flags, symbol);
}

static void calls_before_cuInit_are_not_initialized(void **state)
{
	int n, v = 0;
	CUdevice d;
	CUcontext c;

	(void)state;
	assert_int_equal(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
	assert_int_equal(cuDeviceGet(&d, 0), CUDA_ERROR_NOT_INITIALIZED);
	assert_int_equal(cuCtxGetCurrent(&c), CUDA_ERROR_NOT_INITIALIZED);
	assert_int_equal(cuDevicePrimaryCtxRetain(&c, 0),
	                 CUDA_ERROR_NOT_INITIALIZED);
	/* these need no cuInit, as with the real driver */
	assert_int_equal(cuDriverGetVersion(&v), CUDA_SUCCESS);
	assert_int_equal(v, 13000);
}

static void error_names_and_strings_cover_the_enum(void **state)
{
	const char *s = NULL;

	(void)state;
	assert_int_equal(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s),
	                 CUDA_SUCCESS);
	assert_string_equal(s, "CUDA_ERROR_OUT_OF_MEMORY");
	assert_int_equal(cuGetErrorName(CUDA_ERROR_MPS_SERVER_NOT_READY, &s),
	                 CUDA_SUCCESS);
	assert_string_equal(s, "CUDA_ERROR_MPS_SERVER_NOT_READY");
	assert_int_equal(cuGetErrorString(CUDA_ERROR_ILLEGAL_ADDRESS, &s),
	                 CUDA_SUCCESS);
	assert_true(strlen(s) > 5);
	assert_int_equal(cuGetErrorName((CUresult)9999, &s),
	                 CUDA_ERROR_INVALID_VALUE);
	assert_null(s);
}

static void lookup_gives_the_variant_of_the_asked_version(void **state)
{
	(void)state;
	expect("cuMemAlloc", 2000, 0, "cuMemAlloc");
	expect("cuMemAlloc", 3020, 0, "cuMemAlloc_v2");
	expect("cuMemAlloc", 13000, 0, "cuMemAlloc_v2");
	expect("cuCtxCreate", 3020, 0, "cuCtxCreate_v2");
	expect("cuCtxCreate", 11040, 0, "cuCtxCreate_v3");
	expect("cuCtxCreate", 13000, 0, "cuCtxCreate_v4");
	expect("cuCtxSynchronize", 2000, 0, "cuCtxSynchronize");
	expect("cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2");
	expect("cuGraphInstantiate", 10000, 0, "cuGraphInstantiate");
	expect("cuGraphInstantiate", 11000, 0, "cuGraphInstantiate_v2");
	expect("cuGraphInstantiate", 12000, 0, "cuGraphInstantiateWithFlags");
	expect("cuStreamGetCaptureInfo", 11030, 0, "cuStreamGetCaptureInfo_v2");
	expect("cuGetProcAddress", 11030, 0, "cuGetProcAddress");
	expect("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2");
	expect("cuDevicePrimaryCtxRelease", 7000, 0,
	       "cuDevicePrimaryCtxRelease");
	expect("cuDevicePrimaryCtxRelease", 11000, 0,
	       "cuDevicePrimaryCtxRelease_v2");
	expect("cuLaunchKernel", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
	       "cuLaunchKernel");
}

static void per_thread_flag_gives_ptsz_and_ptds_variants(void **state)
{
	const cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

	(void)state;
	expect("cuLaunchKernel", 7000, pt, "cuLaunchKernel_ptsz");
	expect("cuMemcpyHtoD", 7000, pt, "cuMemcpyHtoD_v2_ptds");
	expect("cuMemcpyHtoDAsync", 7000, pt, "cuMemcpyHtoDAsync_v2_ptsz");
	expect("cuMemAllocAsync", 11020, pt, "cuMemAllocAsync_ptsz");
	expect("cuStreamBeginCapture", 10000, pt, "cuStreamBeginCapture_ptsz");
	expect("cuStreamBeginCapture", 10010, pt,
	       "cuStreamBeginCapture_v2_ptsz");
	/* no per-thread variant (yet, or at all): the legacy one */
	expect("cuLaunchKernel", 4000, pt, "cuLaunchKernel");
	expect("cuMemAlloc", 3020, pt, "cuMemAlloc_v2");
}

static void too_old_a_version_is_not_sufficient(void **state)
{
	(void)state;
	resolve("cuMemAllocAsync", 11000, 0, CUDA_ERROR_NOT_FOUND,
	        CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	resolve("cuLibraryLoadData", 11080, 0, CUDA_ERROR_NOT_FOUND,
	        CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	resolve("cuMemAllocAsync", 11000,
	        CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
	        CUDA_ERROR_NOT_FOUND,
	        CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

static void unknown_names_and_bad_arguments_are_refused(void **state)
{
	void *fn = (void *)1;

	(void)state;
	resolve("cuNoSuchFunction", 13000, 0, CUDA_ERROR_NOT_FOUND,
	        CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	resolve("", 0, 0, CUDA_ERROR_NOT_FOUND,
	        CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	resolve("cuMemAlloc_v2", 13000, 0, CUDA_ERROR_NOT_FOUND,
	        CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	assert_int_equal(cuGetProcAddress_v2(NULL, &fn, 13000, 0, NULL),
	                 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGetProcAddress_v2("cuInit", NULL, 13000, 0, NULL),
	                 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGetProcAddress_v2("cuInit", &fn, 13000, 8, NULL),
	                 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGetProcAddress_v2("cuInit", &fn, 99000, 0, NULL),
	                 CUDA_ERROR_INVALID_VALUE);
	/* the CUDA 11.3 signature answers the same way */
	{
		CUresult (*v1)(const char *, void **, int, cuuint64_t) =
		    (CUresult(*)(const char *, void **, int, cuuint64_t))sym(
		        "cuGetProcAddress");

		assert_int_equal(v1("cuInit", &fn, 2000, 0), CUDA_SUCCESS);
		assert_ptr_equal(fn, sym("cuInit"));
		assert_int_equal(v1("cuNope", &fn, 2000, 0),
		                 CUDA_ERROR_NOT_FOUND);
	}
}

static void every_export_is_found_and_every_lookup_is_an_export(void **state)
{
	struct row {
		const char *base;
		int ver;
		const char *sym;
		int pt, own;
	};
	static const struct row rows[] = {
#define X(base, ver, sym, pt, own) {#base, ver, #sym, pt, own},
#include "cuda_syms.def"
#undef X
	};
	int n = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];

		expect(r->base, r->ver,
		       r->pt ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
		             : CU_GET_PROC_ADDRESS_LEGACY_STREAM,
		       r->sym);
		n += r->own;
	}
	assert_true(n > 600);
}

static void every_request_of_the_cuda13_runtime_resolves(void **state)
{
	FILE *f = fopen(GS_TEST_DATA_DIR "/cudart13-getprocaddress.txt", "r");
	char line[512];
	int n = 0;

	(void)state;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		char name[256];
		int ver, flags;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (strncmp(line, "ver=", 4) == 0) {
			/* the empty probe the runtime starts with */
			resolve("", 0, 0, CUDA_ERROR_NOT_FOUND,
			        CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
			continue;
		}
		assert_int_equal(
		    sscanf(line, "%255s ver=%d flags=%d", name, &ver, &flags),
		    3);
		void *fn = resolve(name, ver, (cuuint64_t)flags, CUDA_SUCCESS,
		                   CU_GET_PROC_ADDRESS_SUCCESS);
		Dl_info info;
		assert_non_null(fn);
		assert_true(dladdr(fn, &info) != 0);
		assert_non_null(strstr(info.dli_fname, "libcuda.so"));
		n++;
	}
	fclose(f);
	assert_true(n > 400);
}

static void unimplemented_entry_points_answer_not_supported(void **state)
{
	const void *table = (const void *)1;
	CUuuid id = {{0}};
	CUresult (*gl_init)(void) = NULL;
	CUresult (*tex_destroy)(CUtexObject) = NULL;

	(void)state;
	assert_int_equal(cuGetExportTable(&table, &id),
	                 CUDA_ERROR_NOT_SUPPORTED);
	assert_null(table);
	assert_int_equal(
	    cuGetProcAddress_v2("cuGLInit", (void **)&gl_init, 2000, 0, NULL),
	    CUDA_SUCCESS);
	assert_int_equal(gl_init(), CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(cuGetProcAddress_v2("cuTexObjectDestroy",
	                                     (void **)&tex_destroy, 5000, 0,
	                                     NULL),
	                 CUDA_SUCCESS);
	assert_int_equal(tex_destroy(42), CUDA_ERROR_NOT_SUPPORTED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(calls_before_cuInit_are_not_initialized),
	    cmocka_unit_test(error_names_and_strings_cover_the_enum),
	    cmocka_unit_test(lookup_gives_the_variant_of_the_asked_version),
	    cmocka_unit_test(per_thread_flag_gives_ptsz_and_ptds_variants),
	    cmocka_unit_test(too_old_a_version_is_not_sufficient),
	    cmocka_unit_test(unknown_names_and_bad_arguments_are_refused),
	    cmocka_unit_test(
	        every_export_is_found_and_every_lookup_is_an_export),
	    cmocka_unit_test(every_request_of_the_cuda13_runtime_resolves),
	    cmocka_unit_test(unimplemented_entry_points_answer_not_supported),
	};

	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (lib == NULL) {
		fprintf(stderr, "libcuda.so.1 is not loaded: %s\n", dlerror());
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
