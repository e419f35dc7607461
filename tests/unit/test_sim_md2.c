/*
 * test_sim_md2.c - the sim's MD2 (sim/cuda/md2.c) against the test suite of
 * RFC 1319 (appendix A.5), fed whole and in odd-sized pieces, and its
 * HMAC-MD2 against answers from an independent implementation (Python's
 * hmac module over a separate MD2), with a short and a long key.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "md2.h"

static const struct {
	const char *msg;
	const char *hex;
} rfc1319[] = {
    {"", "8350e5a3e24c153df2275c9f80692773"},
    {"a", "32ec01ec4a6dac72c0ab96fb34c0b5d1"},
    {"abc", "da853b0d3f88d99b30283a69e6ded6bb"},
    {"message digest", "ab4f496bfb2a530b219ff33031fe06b0"},
    {"abcdefghijklmnopqrstuvwxyz", "4e8ddff3650292ab5a4108c3aa47940b"},
    {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
     "da33def2a42df13975352846c30338cd"},
    {"1234567890123456789012345678901234567890"
     "1234567890123456789012345678901234567890",
     "d5976f79d83d3a0dc9806c3c66f3efd8"},
};

static void hex(const uint8_t d[GS__MD2_LEN], char out[33])
{
	for (int i = 0; i < GS__MD2_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void md2_matches_the_rfc_1319_test_suite(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rfc1319) / sizeof(rfc1319[0]); i++) {
		uint8_t d[GS__MD2_LEN];
		char h[33];

		gs__md2(rfc1319[i].msg, strlen(rfc1319[i].msg), d);
		hex(d, h);
		assert_string_equal(h, rfc1319[i].hex);
	}
}

static void md2_fed_in_pieces_equals_md2_in_one_go(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rfc1319) / sizeof(rfc1319[0]); i++) {
		const char *m = rfc1319[i].msg;
		size_t len = strlen(m), off = 0, step = 1;
		struct gs__md2 ctx;
		uint8_t d[GS__MD2_LEN];
		char h[33];

		gs__md2_init(&ctx);
		while (off < len) {
			size_t n = step < len - off ? step : len - off;

			gs__md2_update(&ctx, m + off, n);
			off += n;
			step = step * 2 + 1; /* 1, 3, 7, 15, 31: across blocks */
		}
		gs__md2_final(&ctx, d);
		hex(d, h);
		assert_string_equal(h, rfc1319[i].hex);
	}
}

static void hmac_md2_matches_an_independent_implementation(void **state)
{
	static const uint8_t key16[16] = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9,
	                                  0xa7, 0x52, 0xaa, 0x08, 0x41, 0x36,
	                                  0x0b, 0xf5, 0x5a, 0x9f};
	const char *fox = "The quick brown fox jumps over the lazy dog";
	char key40[41];
	uint8_t d[GS__MD2_LEN];
	char h[33];

	(void)state;
	gs__hmac_md2(key16, sizeof(key16), fox, strlen(fox), d);
	hex(d, h);
	assert_string_equal(h, "6ff0a92b1488b5790782668dc4f71b6a");

	/* a key longer than the block is hashed first */
	memset(key40, 'k', 40);
	key40[40] = '\0';
	gs__hmac_md2(key40, 40, "abc", 3, d);
	hex(d, h);
	assert_string_equal(h, "fe5ab1de2de78fbe1f13c0cc01f7e558");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(md2_matches_the_rfc_1319_test_suite),
	    cmocka_unit_test(md2_fed_in_pieces_equals_md2_in_one_go),
	    cmocka_unit_test(hmac_md2_matches_an_independent_implementation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
