/*
 * test_sim_primary_ctx.c - what the CUDA runtime gets from the sim's
 * libcuda.so.1 beyond the public API (sim/cuda/export.c), and primary contexts
 * as the runtime uses them (sim/cuda/ctx.c): the six tables it needs are
 * offered and the optional one refused; a device's primary context handle
 * exists before it is retained, costs no device memory until then, and
 * stays the same handle across release and cuDevicePrimaryCtxReset;
 * context-local storage keeps values per context and runs destructors at
 * destroy, last release and reset; the integrity answer is the HMAC-MD2
 * the runtime computes for itself (checked here by rebuilding the record
 * from public calls).
 *
 * One node state of two H100s in a temporary directory; everything runs
 * in this process, in order.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "md2.h"
#include "gs_sim/state.h"

#define MIB      (1ULL << 20)
#define OVERHEAD (500 * MIB)

typedef void (*slot_fn)(void);

static char dir[64];
static struct gs_sim_map *map;

static const uint8_t U_RT[16] = {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4,
                                 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39,
                                 0x12, 0xfd, 0x9d, 0xf9};
static const uint8_t U_HOOKS[16] = {0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74,
                                    0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00,
                                    0x20, 0x0c, 0x0a, 0x66};
static const uint8_t U_TLS[16] = {0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6,
                                  0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7,
                                  0x8a, 0x3a, 0xec, 0xdc};
static const uint8_t U_CLS[16] = {0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21,
                                  0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3,
                                  0x55, 0xd8, 0x95, 0x93};
static const uint8_t U_CHECKS[16] = {0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2,
                                     0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5,
                                     0x00, 0x6d, 0xfa, 0x7e};
static const uint8_t U_INTEGRITY[16] = {0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6,
                                        0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12,
                                        0x3c, 0x66, 0xe1, 0xf2};
static const uint8_t U_OPTIONAL[16] = {0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46,
                                       0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46,
                                       0x9e, 0x7c, 0x0d, 0xd9};

static const uintptr_t *table(const uint8_t uuid[16])
{
	const void *t = NULL;
	CUuuid id;

	memcpy(id.bytes, uuid, 16);
	assert_int_equal(cuGetExportTable(&t, &id), CUDA_SUCCESS);
	assert_non_null(t);
	return t;
}

static slot_fn slot(const uintptr_t *t, int i)
{
	slot_fn f;

	memcpy(&f, &t[i], sizeof(f));
	assert_non_null(f);
	return f;
}

static uint64_t engine_used(int gpu)
{
	return gs_sim_state_get(map)->gpus[gpu].engine[0].mem_used;
}

/* ---- the tables ---------------------------------------------------------- */

static void runtime_tables_are_offered_and_the_optional_one_refused(void **s)
{
	const uintptr_t *hooks = table(U_HOOKS);
	const void *t = (const void *)1;
	void (*buf_fn)(void **, size_t *);
	void *buf = NULL;
	size_t n = 0;
	CUuuid id;

	(void)s;
	(void)table(U_RT);
	(void)table(U_TLS);
	(void)table(U_CLS);
	(void)table(U_CHECKS);
	(void)table(U_INTEGRITY);
	/* the runtime insists on these sizes (else cudaErrorInsufficient
	 * Driver) */
	assert_true(hooks[0] >= 56);
	buf_fn = (void (*)(void **, size_t *))slot(hooks, 2);
	buf_fn(&buf, &n);
	assert_non_null(buf);
	assert_true(n >= 523);
	buf_fn = (void (*)(void **, size_t *))slot(hooks, 6);
	buf = NULL;
	buf_fn(&buf, &n);
	assert_non_null(buf);
	assert_true(n >= 14);

	memcpy(id.bytes, U_OPTIONAL, 16);
	assert_int_equal(cuGetExportTable(&t, &id), CUDA_ERROR_NOT_SUPPORTED);
	assert_null(t);
	assert_int_equal(cuGetExportTable(NULL, &id), CUDA_ERROR_INVALID_VALUE);
}

static void context_check_says_usable(void **s)
{
	const uintptr_t *t = table(U_CHECKS);
	CUresult (*check)(CUcontext, uint32_t *) =
	    (CUresult(*)(CUcontext, uint32_t *))slot(t, 2);
	uint32_t v = 99;

	(void)s;
	assert_int_equal(check(NULL, &v), CUDA_SUCCESS);
	assert_int_equal(v, 0);
}

/* ---- primary contexts ---------------------------------------------------- */

static CUresult primary_handle(CUcontext *out, CUdevice dev)
{
	CUresult (*get)(CUcontext *, CUdevice) =
	    (CUresult(*)(CUcontext *, CUdevice))slot(table(U_RT), 2);

	return get(out, dev);
}

static void primary_handle_exists_before_retain_and_costs_nothing(void **s)
{
	CUcontext h = NULL, h2 = NULL, r = NULL;
	CUdeviceptr p;
	unsigned int flags;
	int active = 1;
	size_t free_b, total_b;

	(void)s;
	assert_int_equal(primary_handle(&h, 1), CUDA_SUCCESS);
	assert_non_null(h);
	assert_int_equal(primary_handle(&h2, 1), CUDA_SUCCESS);
	assert_ptr_equal(h, h2);
	assert_int_equal(primary_handle(&h2, 7), CUDA_ERROR_INVALID_DEVICE);
	assert_int_equal(cuDevicePrimaryCtxGetState(1, &flags, &active),
	                 CUDA_SUCCESS);
	assert_int_equal(active, 0);
	assert_int_equal(engine_used(1), 0);

	/* the runtime's order: make it current, then retain */
	assert_int_equal(cuCtxSetCurrent(h), CUDA_SUCCESS);
	assert_int_equal(cuMemAlloc(&p, MIB), CUDA_ERROR_CONTEXT_IS_DESTROYED);
	assert_int_equal(engine_used(1), 0);
	assert_int_equal(cuDevicePrimaryCtxRetain(&r, 1), CUDA_SUCCESS);
	assert_ptr_equal(r, h);
	assert_int_equal(engine_used(1), OVERHEAD);
	assert_int_equal(cuMemGetInfo(&free_b, &total_b), CUDA_SUCCESS);
	assert_int_equal(total_b - free_b, OVERHEAD);
	assert_int_equal(cuMemAlloc(&p, MIB), CUDA_SUCCESS);
	assert_int_equal(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);
	/* released: its memory and overhead are back, the handle stays */
	assert_int_equal(engine_used(1), 0);
	assert_int_equal(cuDevicePrimaryCtxRelease(1),
	                 CUDA_ERROR_INVALID_CONTEXT);
	assert_int_equal(primary_handle(&h2, 1), CUDA_SUCCESS);
	assert_ptr_equal(h2, h);
	assert_int_equal(cuCtxSetCurrent(NULL), CUDA_SUCCESS);
}

static void primary_handle_survives_reset(void **s)
{
	CUcontext h = NULL, r = NULL;
	CUdeviceptr p;
	unsigned long long id1 = 0, id2 = 0;
	int active = 0;
	unsigned int flags;

	(void)s;
	assert_int_equal(primary_handle(&h, 0), CUDA_SUCCESS);
	assert_int_equal(cuDevicePrimaryCtxRetain(&r, 0), CUDA_SUCCESS);
	assert_int_equal(cuDevicePrimaryCtxRetain(&r, 0), CUDA_SUCCESS);
	assert_ptr_equal(r, h);
	assert_int_equal(cuCtxSetCurrent(h), CUDA_SUCCESS);
	assert_int_equal(cuCtxGetId(h, &id1), CUDA_SUCCESS);
	assert_int_equal(cuMemAlloc(&p, 64 * MIB), CUDA_SUCCESS);
	assert_int_equal(engine_used(0), OVERHEAD + 64 * MIB);

	/* reset ignores the retain count (two here) */
	assert_int_equal(cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
	assert_int_equal(engine_used(0), 0);
	assert_int_equal(cuDevicePrimaryCtxGetState(0, &flags, &active),
	                 CUDA_SUCCESS);
	assert_int_equal(active, 0);
	assert_int_equal(cuMemFree(p), CUDA_ERROR_CONTEXT_IS_DESTROYED);
	assert_int_equal(cuCtxGetId(h, &id2), CUDA_ERROR_CONTEXT_IS_DESTROYED);

	assert_int_equal(cuDevicePrimaryCtxRetain(&r, 0), CUDA_SUCCESS);
	assert_ptr_equal(r, h);
	assert_int_equal(cuCtxGetId(h, &id2), CUDA_SUCCESS);
	assert_true(id2 != id1); /* a new context behind the same handle */
	assert_int_equal(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(engine_used(0), OVERHEAD);
	assert_int_equal(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
	assert_int_equal(engine_used(0), 0);
	assert_int_equal(cuCtxSetCurrent(NULL), CUDA_SUCCESS);
}

/* ---- context-local storage ------------------------------------------------ */

struct dtor_log {
	int calls;
	CUcontext ctx;
	void *key, *value;
	CUresult alloc_in_dtor; /* the context still works in its destructor */
};

static struct dtor_log dlog;

static void dtor(CUcontext ctx, void *key, void *value)
{
	CUdeviceptr p;

	dlog.calls++;
	dlog.ctx = ctx;
	dlog.key = key;
	dlog.value = value;
	(void)cuCtxPushCurrent(ctx);
	dlog.alloc_in_dtor = cuMemAlloc(&p, MIB);
	if (dlog.alloc_in_dtor == CUDA_SUCCESS)
		(void)cuMemFree(p);
	(void)cuCtxPopCurrent(&ctx);
}

struct cls_api {
	CUresult (*put)(CUcontext, void *, void *,
	                void (*)(CUcontext, void *, void *));
	CUresult (*del)(CUcontext, void *);
	CUresult (*get)(void **, CUcontext, void *);
};

static struct cls_api cls_api(void)
{
	const uintptr_t *t = table(U_CLS);
	struct cls_api a;

	a.put = (CUresult(*)(CUcontext, void *, void *,
	                     void (*)(CUcontext, void *, void *)))slot(t, 0);
	a.del = (CUresult(*)(CUcontext, void *))slot(t, 1);
	a.get = (CUresult(*)(void **, CUcontext, void *))slot(t, 2);
	return a;
}

static void context_storage_keeps_values_per_context_and_key(void **s)
{
	struct cls_api a = cls_api();
	CUcontext c1, c2, cur;
	int k1, k2;
	void *v = NULL;

	(void)s;
	assert_int_equal(cuCtxCreate(&c1, NULL, 0, 0), CUDA_SUCCESS);
	assert_int_equal(cuCtxCreate(&c2, NULL, 0, 0), CUDA_SUCCESS);
	assert_int_equal(a.get(&v, c1, &k1), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(a.put(c1, &k1, (void *)0x11, NULL), CUDA_SUCCESS);
	assert_int_equal(a.put(c1, &k2, (void *)0x12, NULL), CUDA_SUCCESS);
	assert_int_equal(a.put(c2, &k1, (void *)0x21, NULL), CUDA_SUCCESS);
	assert_int_equal(a.get(&v, c1, &k1), CUDA_SUCCESS);
	assert_ptr_equal(v, (void *)0x11);
	assert_int_equal(a.get(&v, c2, &k1), CUDA_SUCCESS);
	assert_ptr_equal(v, (void *)0x21);
	/* NULL means the current context (c2, created last) */
	assert_int_equal(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
	assert_ptr_equal(cur, c2);
	assert_int_equal(a.get(&v, NULL, &k1), CUDA_SUCCESS);
	assert_ptr_equal(v, (void *)0x21);
	assert_int_equal(a.get(&v, NULL, &k2), CUDA_ERROR_INVALID_HANDLE);
	/* put replaces, delete forgets */
	assert_int_equal(a.put(c1, &k1, (void *)0x13, NULL), CUDA_SUCCESS);
	assert_int_equal(a.get(&v, c1, &k1), CUDA_SUCCESS);
	assert_ptr_equal(v, (void *)0x13);
	assert_int_equal(a.del(c1, &k1), CUDA_SUCCESS);
	assert_int_equal(a.get(&v, c1, &k1), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(a.del(c1, &k1), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(a.get(&v, (CUcontext)&k1, &k2),
	                 CUDA_ERROR_INVALID_CONTEXT);
	assert_int_equal(cuCtxDestroy(c2), CUDA_SUCCESS);
	assert_int_equal(cuCtxDestroy(c1), CUDA_SUCCESS);
}

static void context_storage_destructors_run_at_destroy_release_and_reset(
    void **s)
{
	struct cls_api a = cls_api();
	CUcontext c, h;
	int key, gone;
	void *v;

	(void)s;
	/* cuCtxDestroy */
	memset(&dlog, 0, sizeof(dlog));
	assert_int_equal(cuCtxCreate(&c, NULL, 0, 0), CUDA_SUCCESS);
	assert_int_equal(a.put(c, &key, (void *)0x31, dtor), CUDA_SUCCESS);
	assert_int_equal(a.put(c, &gone, (void *)0x32, dtor), CUDA_SUCCESS);
	assert_int_equal(a.del(c, &gone), CUDA_SUCCESS);
	assert_int_equal(cuCtxDestroy(c), CUDA_SUCCESS);
	assert_int_equal(dlog.calls, 1); /* the deleted key's did not run */
	assert_ptr_equal(dlog.ctx, c);
	assert_ptr_equal(dlog.key, &key);
	assert_ptr_equal(dlog.value, (void *)0x31);
	assert_int_equal(dlog.alloc_in_dtor, CUDA_SUCCESS);

	/* the last cuDevicePrimaryCtxRelease */
	memset(&dlog, 0, sizeof(dlog));
	assert_int_equal(cuDevicePrimaryCtxRetain(&h, 0), CUDA_SUCCESS);
	assert_int_equal(cuDevicePrimaryCtxRetain(&h, 0), CUDA_SUCCESS);
	assert_int_equal(a.put(h, &key, (void *)0x41, dtor), CUDA_SUCCESS);
	assert_int_equal(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
	assert_int_equal(dlog.calls, 0);
	assert_int_equal(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
	assert_int_equal(dlog.calls, 1);
	assert_ptr_equal(dlog.ctx, h);
	assert_ptr_equal(dlog.value, (void *)0x41);
	assert_int_equal(dlog.alloc_in_dtor, CUDA_SUCCESS);
	assert_int_equal(a.get(&v, h, &key), CUDA_ERROR_INVALID_HANDLE);

	/* cuDevicePrimaryCtxReset */
	memset(&dlog, 0, sizeof(dlog));
	assert_int_equal(cuDevicePrimaryCtxRetain(&h, 0), CUDA_SUCCESS);
	assert_int_equal(a.put(h, &key, (void *)0x51, dtor), CUDA_SUCCESS);
	assert_int_equal(cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
	assert_int_equal(dlog.calls, 1);
	assert_ptr_equal(dlog.value, (void *)0x51);
	assert_int_equal(engine_used(0), 0);
}

/* ---- integrity ------------------------------------------------------------ */

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4); /* x86-64: little-endian, as the record is */
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static void integrity_answer_is_the_runtimes_hmac_md2(void **s)
{
	static const uint8_t key[16] = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9,
	                                0xa7, 0x52, 0xaa, 0x08, 0x41, 0x36,
	                                0x0b, 0xf5, 0x5a, 0x9f};
	const uintptr_t *t = table(U_INTEGRITY);
	CUresult (*answer)(uint32_t, uint64_t, uint64_t *) =
	    (CUresult(*)(uint32_t, uint64_t, uint64_t *))slot(t, 1);
	uint8_t msg[48 + 28 * 2], digest[GS__MD2_LEN];
	uint64_t out[2], want[2];
	const uint64_t now = 1764000000ULL;
	int drv, n, len = 48;

	(void)s;
	assert_int_equal(answer(13000, now, out), CUDA_SUCCESS);
	assert_true(out[0] == 0x3341181C03CB675CULL &&
	            out[1] == 0x8ED383AA1F4CD1E8ULL);
	assert_int_equal(answer(13001, now, out), CUDA_SUCCESS);
	assert_true(out[0] == 0x1841181C03CB675CULL &&
	            out[1] == 0x8ED383AA1F4CD1E8ULL);

	assert_int_equal(cuDriverGetVersion(&drv), CUDA_SUCCESS);
	assert_int_equal(cuDeviceGetCount(&n), CUDA_SUCCESS);
	assert_int_equal(n, 2);
	put32(msg, (uint32_t)drv);
	put32(msg + 4, 13002);
	put32(msg + 8, (uint32_t)getpid());
	put32(msg + 12, (uint32_t)pthread_self());
	put64(msg + 16, (uint64_t)(uintptr_t)table(U_RT));
	put64(msg + 24, (uint64_t)(uintptr_t)t);
	put64(msg + 32, (uint64_t)t[1]);
	put64(msg + 40, now);
	for (int d = 0; d < n; d++, len += 28) {
		CUuuid u;
		int dom, bus, dev;

		assert_int_equal(cuDeviceGetUuid(&u, d), CUDA_SUCCESS);
		assert_int_equal(cuDeviceGetAttribute(
		                     &dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d),
		                 CUDA_SUCCESS);
		assert_int_equal(
		    cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d),
		    CUDA_SUCCESS);
		assert_int_equal(cuDeviceGetAttribute(
		                     &dev, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d),
		                 CUDA_SUCCESS);
		memcpy(msg + len, u.bytes, 16);
		put32(msg + len + 16, (uint32_t)dom);
		put32(msg + len + 20, (uint32_t)bus);
		put32(msg + len + 24, (uint32_t)dev);
	}
	gs__hmac_md2(key, sizeof(key), msg, (size_t)len, digest);
	memcpy(want, digest, 16);
	assert_int_equal(answer(13002, now, out), CUDA_SUCCESS);
	assert_true(out[0] == want[0] && out[1] == want[1]);
	/* another second, another answer */
	assert_int_equal(answer(13002, now + 1, out), CUDA_SUCCESS);
	assert_false(out[0] == want[0] && out[1] == want[1]);
}

static int group_setup(void **state)
{
	struct gs_sim_gpu_init g[2];
	struct gs_errbuf eb = {0};
	int n;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/gs-test-primary-XXXXXX");
	if (mkdtemp(dir) == NULL ||
	    gs_sim_gpus_parse("2xH100-SXM5-80GB", g, 2, &n, &eb) != GS_OK ||
	    gs_sim_state_create(dir, g, n, true, &eb) != GS_OK ||
	    gs_sim_state_open(dir, &map, &eb) != GS_OK) {
		fprintf(stderr, "cannot make a node state in %s: %s\n", dir,
		        eb.msg);
		return -1;
	}
	setenv("GPUSLICE_SIM_DIR", dir, 1);
	unsetenv("CUDA_VISIBLE_DEVICES");
	unsetenv("CUDA_MPS_PIPE_DIRECTORY");
	return cuInit(0) == CUDA_SUCCESS ? 0 : -1;
}

static int group_teardown(void **state)
{
	char path[128];

	(void)state;
	gs_sim_state_close(map);
	snprintf(path, sizeof(path), "%s/%s", dir, GS_SIM_STATE_FILE);
	(void)unlink(path);
	(void)rmdir(dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        runtime_tables_are_offered_and_the_optional_one_refused),
	    cmocka_unit_test(context_check_says_usable),
	    cmocka_unit_test(
	        primary_handle_exists_before_retain_and_costs_nothing),
	    cmocka_unit_test(primary_handle_survives_reset),
	    cmocka_unit_test(context_storage_keeps_values_per_context_and_key),
	    cmocka_unit_test(
	        context_storage_destructors_run_at_destroy_release_and_reset),
	    cmocka_unit_test(integrity_answer_is_the_runtimes_hmac_md2),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
