/*
 * test_sim_fatbin.c - the sim's fatbinary reader (sim/cuda/fatbin.c) on
 * fatbins nvcc made at build time from sim_fatbin_kernels.cu: entry
 * kinds, zstd / LZ4 / plain entries, the best PTX for a compute
 * capability, SASS-only images, the wrapper, damaged images.
 * Exits 77 (skipped) when the build had no nvcc.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fatbin.h"

/* Reads a whole file. OUT: its bytes (malloc'ed; caller frees), *len. */
static uint8_t *slurp(const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	uint8_t *buf;
	long n;

	snprintf(path, sizeof(path), "%s/%s", GS_FATBIN_DIR, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	buf = malloc((size_t)n);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* The entries of a fatbin file. OUT: up to 8 in e, their count. */
static int entries_of(const uint8_t *img, size_t len,
                      struct gs__fatbin_entry *e)
{
	int n = -1;

	assert_int_equal(gs__fatbin_entries(img, len, e, 8, &n), CUDA_SUCCESS);
	return n;
}

/* nvcc's default: sm_75 SASS and compute_75 PTX compressed with zstd. */
static void test_default_fatbin_holds_sass_and_zstd_ptx(void **state)
{
	size_t len;
	uint8_t *img = slurp("k_zstd.fatbin", &len);
	struct gs__fatbin_entry e[8];
	char *ptx = NULL;
	int sm = 0;

	(void)state;
	assert_true(gs__fatbin_is(img));
	assert_int_equal(entries_of(img, len, e), 2);
	assert_int_equal(e[0].kind, GS__FATBIN_KIND_ELF);
	assert_int_equal(e[0].sm, 75);
	assert_int_equal(e[1].kind, GS__FATBIN_KIND_PTX);
	assert_int_equal(e[1].sm, 75);
	assert_true(e[1].flags & GS__FATBIN_FLAG_ZSTD);
	assert_true(e[1].stored < e[1].size);
	assert_int_equal(gs__fatbin_ptx(img, len, 90, &ptx, &sm), CUDA_SUCCESS);
	assert_int_equal(sm, 75);
	assert_non_null(strstr(ptx, ".entry _Z6fb_addPfPKfi"));
	assert_non_null(strstr(ptx, ".entry _Z7fb_loopPfii"));
	assert_non_null(strstr(ptx, ".entry gs_fill"));
	assert_non_null(strstr(ptx, "fb_managed = 7"));
	free(ptx);
	free(img);
}

/* --compress-mode=speed: LZ4; =none: stored as is. Same PTX text. */
static void test_lz4_and_plain_entries_give_the_same_ptx(void **state)
{
	size_t lz, pl, zs;
	uint8_t *a = slurp("k_lz4.fatbin", &lz);
	uint8_t *b = slurp("k_none.fatbin", &pl);
	uint8_t *c = slurp("k_zstd.fatbin", &zs);
	struct gs__fatbin_entry e[8];
	char *pa = NULL, *pb = NULL, *pc = NULL;

	(void)state;
	assert_int_equal(entries_of(a, lz, e), 2);
	assert_true(e[1].flags & GS__FATBIN_FLAG_LZ4);
	assert_false(e[1].flags & GS__FATBIN_FLAG_ZSTD);
	assert_int_equal(entries_of(b, pl, e), 2);
	assert_false(e[1].flags & (GS__FATBIN_FLAG_LZ4 | GS__FATBIN_FLAG_ZSTD));
	assert_int_equal(gs__fatbin_ptx(a, lz, 90, &pa, NULL), CUDA_SUCCESS);
	assert_int_equal(gs__fatbin_ptx(b, pl, 90, &pb, NULL), CUDA_SUCCESS);
	assert_int_equal(gs__fatbin_ptx(c, zs, 90, &pc, NULL), CUDA_SUCCESS);
	assert_string_equal(pa, pb);
	assert_string_equal(pa, pc);
	free(pa);
	free(pb);
	free(pc);
	free(a);
	free(b);
	free(c);
}

/* compute_75 and compute_90 PTX: the best one not above the device. */
static void test_best_ptx_for_the_compute_capability_is_picked(void **state)
{
	size_t len;
	uint8_t *img = slurp("k_ptx2.fatbin", &len);
	char *ptx = NULL;
	int sm = 0;

	(void)state;
	assert_int_equal(gs__fatbin_ptx(img, len, 90, &ptx, &sm), CUDA_SUCCESS);
	assert_int_equal(sm, 90);
	assert_non_null(strstr(ptx, ".target sm_90"));
	free(ptx);
	assert_int_equal(gs__fatbin_ptx(img, len, 100, &ptx, &sm),
	                 CUDA_SUCCESS);
	assert_int_equal(sm, 90);
	free(ptx);
	assert_int_equal(gs__fatbin_ptx(img, len, 86, &ptx, &sm), CUDA_SUCCESS);
	assert_int_equal(sm, 75);
	assert_non_null(strstr(ptx, ".target sm_75"));
	free(ptx);
	/* a device older than every PTX entry */
	ptx = NULL;
	assert_int_equal(gs__fatbin_ptx(img, len, 70, &ptx, &sm),
	                 CUDA_ERROR_NO_BINARY_FOR_GPU);
	assert_null(ptx);
	free(img);
}

static void test_sass_only_fatbin_has_no_binary_for_gpu(void **state)
{
	size_t len;
	uint8_t *img = slurp("k_sass.fatbin", &len);
	struct gs__fatbin_entry e[8];
	char *ptx = NULL;

	(void)state;
	assert_int_equal(entries_of(img, len, e), 1);
	assert_int_equal(e[0].kind, GS__FATBIN_KIND_ELF);
	assert_int_equal(e[0].sm, 90);
	assert_int_equal(gs__fatbin_ptx(img, len, 90, &ptx, NULL),
	                 CUDA_ERROR_NO_BINARY_FOR_GPU);
	assert_null(ptx);
	free(img);
}

/* The wrapper nvcc registers points at the container. */
static void test_wrapper_leads_to_the_container(void **state)
{
	size_t len;
	uint8_t *img = slurp("k_lz4.fatbin", &len);
	struct {
		uint32_t magic, version;
		const void *data, *unused;
	} w = {GS__FATBIN_WRAPPER_MAGIC, 1, img, NULL};
	char *ptx = NULL;
	int n = 0;

	(void)state;
	assert_true(gs__fatbin_is(&w));
	assert_int_equal(gs__fatbin_ptx(&w, 0, 90, &ptx, NULL), CUDA_SUCCESS);
	free(ptx);
	/* another wrapper version or a NULL pointer is not an image */
	w.version = 3;
	assert_int_equal(gs__fatbin_entries(&w, 0, NULL, 0, &n),
	                 CUDA_ERROR_INVALID_IMAGE);
	w.version = 1;
	w.data = NULL;
	assert_int_equal(gs__fatbin_entries(&w, 0, NULL, 0, &n),
	                 CUDA_ERROR_INVALID_IMAGE);
	free(img);
}

/*
 * An -rdc program's wrapper (version 2): its linked image is SASS only,
 * its prelinked fatbins (one per translation unit) hold the PTX. The sim
 * takes the best PTX of each, one after another.
 */
static void test_linked_wrapper_takes_the_ptx_of_its_prelinked_fatbins(
    void **state)
{
	size_t len;
	uint8_t *sass = slurp("k_sass.fatbin", &len);
	uint8_t *zstd = slurp("k_zstd.fatbin", &len);
	uint8_t *ptx2 = slurp("k_ptx2.fatbin", &len);
	struct wrapper1 {
		uint32_t magic, version;
		const void *data, *unused;
	} w1 = {GS__FATBIN_WRAPPER_MAGIC, 1, ptx2, NULL};
	const void *prelinked[] = {zstd, &w1, NULL};
	struct {
		uint32_t magic, version;
		const void *data;
		const void *const *list;
	} w = {GS__FATBIN_WRAPPER_MAGIC, 2, sass, prelinked};
	char *ptx = NULL;
	const char *first, *second;
	int sm = 0;

	(void)state;
	assert_true(gs__fatbin_is(&w));
	assert_int_equal(gs__fatbin_ptx(&w, 0, 90, &ptx, &sm), CUDA_SUCCESS);
	/* both translation units' kernels, each from its best PTX */
	first = strstr(ptx, ".entry _Z6fb_addPfPKfi");
	assert_non_null(first);
	second = strstr(first + 1, ".entry _Z6fb_addPfPKfi");
	assert_non_null(second);
	/* the first unit's PTX (sm_75), then the second's best (sm_90) */
	assert_true(strstr(ptx, ".target sm_75") < first);
	assert_non_null(strstr(first, ".target sm_90"));
	assert_true(strstr(first, ".target sm_90") < second);
	free(ptx);
	/* no list, or an empty one: SASS only, as on a real driver */
	w.list = NULL;
	ptx = NULL;
	assert_int_equal(gs__fatbin_ptx(&w, 0, 90, &ptx, NULL),
	                 CUDA_ERROR_NO_BINARY_FOR_GPU);
	assert_null(ptx);
	prelinked[0] = NULL;
	w.list = prelinked;
	assert_int_equal(gs__fatbin_ptx(&w, 0, 90, &ptx, NULL),
	                 CUDA_ERROR_NO_BINARY_FOR_GPU);
	/* a prelinked image that is itself a link-version wrapper */
	prelinked[0] = &w;
	prelinked[1] = NULL;
	assert_int_equal(gs__fatbin_ptx(&w, 0, 90, &ptx, NULL),
	                 CUDA_ERROR_INVALID_IMAGE);
	free(sass);
	free(zstd);
	free(ptx2);
}

/* Broken images are refused, never read past their end. */
static void test_damaged_images_are_invalid(void **state)
{
	size_t len;
	uint8_t *img = slurp("k_zstd.fatbin", &len);
	uint8_t *cut;
	struct gs__fatbin_entry e[8];
	char *ptx = NULL;
	uint64_t big = 1ULL << 40;
	int n;

	(void)state;
	/* shorter than its header says */
	cut = malloc(len / 2);
	assert_non_null(cut);
	memcpy(cut, img, len / 2);
	assert_int_equal(gs__fatbin_entries(cut, len / 2, e, 8, &n),
	                 CUDA_ERROR_INVALID_IMAGE);
	free(cut);
	/* a container version the sim does not know */
	img[4] = 7;
	assert_int_equal(gs__fatbin_entries(img, len, e, 8, &n),
	                 CUDA_ERROR_INVALID_IMAGE);
	img[4] = 1;
	/* an entry size past the end */
	entries_of(img, len, e);
	memcpy(img + 16 + 8, &big, 8);
	assert_int_equal(gs__fatbin_entries(img, len, e, 8, &n),
	                 CUDA_ERROR_INVALID_IMAGE);
	free(img);
	/* a corrupt zstd frame */
	img = slurp("k_zstd.fatbin", &len);
	assert_int_equal(entries_of(img, len, e), 2);
	memset((uint8_t *)e[1].payload, 0xA5, 16);
	assert_int_equal(gs__fatbin_ptx(img, len, 90, &ptx, NULL),
	                 CUDA_ERROR_INVALID_IMAGE);
	assert_null(ptx);
	free(img);
	/* a corrupt LZ4 block */
	img = slurp("k_lz4.fatbin", &len);
	assert_int_equal(entries_of(img, len, e), 2);
	memset((uint8_t *)e[1].payload, 0xFF, 32);
	assert_int_equal(gs__fatbin_ptx(img, len, 90, &ptx, NULL),
	                 CUDA_ERROR_INVALID_IMAGE);
	free(img);
	/* not a fatbin at all, and never read past a short text's end
	 * (ASan watches the 2-byte buffer) */
	cut = malloc(2);
	assert_non_null(cut);
	memcpy(cut, "P", 2);
	assert_false(gs__fatbin_is(cut));
	assert_int_equal(gs__fatbin_entries(cut, 0, e, 8, &n),
	                 CUDA_ERROR_INVALID_IMAGE);
	free(cut);
	assert_false(gs__fatbin_is(".version 9.0\n"));
	assert_int_equal(gs__fatbin_entries(".version 9.0\n", 13, e, 8, &n),
	                 CUDA_ERROR_INVALID_IMAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_fatbin_holds_sass_and_zstd_ptx),
	    cmocka_unit_test(test_lz4_and_plain_entries_give_the_same_ptx),
	    cmocka_unit_test(test_best_ptx_for_the_compute_capability_is_picked),
	    cmocka_unit_test(test_sass_only_fatbin_has_no_binary_for_gpu),
	    cmocka_unit_test(test_wrapper_leads_to_the_container),
	    cmocka_unit_test(
	        test_linked_wrapper_takes_the_ptx_of_its_prelinked_fatbins),
	    cmocka_unit_test(test_damaged_images_are_invalid),
	};

	if (GS_FATBIN_DIR[0] == '\0') {
		fprintf(stderr, "no nvcc at build time: no test fatbins\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
