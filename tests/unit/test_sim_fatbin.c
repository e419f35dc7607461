/*
 * test_sim_fatbin.c - the sim's fatbinary reader (sim/fatbin.c) on
 * fatbins nvcc made at build time from sim_fatbin_kernels.cu.
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

static void test_default_fatbin_gives_its_ptx(void **state)
{
	size_t len;
	uint8_t *img = slurp("k_zstd.fatbin", &len);
	char *ptx = NULL;
	int sm = 0;

	(void)state;
	assert_true(gs__fatbin_is(img));
	assert_int_equal(gs__fatbin_ptx(img, len, 90, &ptx, &sm), CUDA_SUCCESS);
	assert_non_null(strstr(ptx, ".entry _Z6fb_addPfPKfi"));
	free(ptx);
	free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_fatbin_gives_its_ptx),
	};

	if (GS_FATBIN_DIR[0] == '\0') {
		fprintf(stderr, "no nvcc at build time: no test fatbins\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
