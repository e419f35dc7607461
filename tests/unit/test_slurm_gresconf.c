/*
 * test_slurm_gresconf.c - shards per GPU from gres.conf text, host lists
 * and File= expressions, from tables.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "gresconf.h"

static void shards_per_gpu_come_from_the_shard_lines(void **state)
{
	static const struct {
		const char *what;
		const char *text;
		const char *node;
		gs_err err;
		int per_gpu;
		const char *msg;
	} rows[] = {
	    {"one line per GPU",
	     "AutoDetect=off\n"
	     "Name=gpu File=/dev/nvidia[0-1]\n"
	     "Name=shard Count=4 File=/dev/nvidia0\n"
	     "Name=shard Count=4 File=/dev/nvidia1\n",
	     "n1", GS_OK, 4, NULL},
	    {"one line for a range",
	     "Name=shard Count=8 File=/dev/nvidia[0-1]\n", NULL, GS_OK, 4,
	     NULL},
	    {"a comma list of files",
	     "Name=shard Count=12 File=/dev/nvidia0,/dev/nvidia2,/dev/nvidia3",
	     NULL, GS_OK, 4, NULL},
	    {"keys in any case, comments, CRLF",
	     "# shards\r\nname=shard count=16 file=/dev/nvidia[0-3] # four "
	     "each\r\n",
	     NULL, GS_OK, 4, NULL},
	    {"a count with a suffix", "Name=shard Count=2K File=/dev/nvidia0\n",
	     NULL, GS_OK, 2048, NULL},
	    {"no shard line", "Name=gpu File=/dev/nvidia0\n", "n1", GS_OK, 0,
	     NULL},
	    {"empty", "", NULL, GS_OK, 0, NULL},
	    {"lines for other nodes are skipped",
	     "NodeName=big[01-04] Name=shard Count=8 File=/dev/nvidia0\n"
	     "NodeName=n[1-3] Name=shard Count=2 File=/dev/nvidia0\n",
	     "n2", GS_OK, 2, NULL},
	    {"NodeName lines without a node name",
	     "NodeName=n1 Name=shard Count=2 File=/dev/nvidia0\n", NULL, GS_OK,
	     0, NULL},
	    {"counts that differ",
	     "Name=shard Count=4 File=/dev/nvidia0\n"
	     "Name=shard Count=8 File=/dev/nvidia1\n",
	     NULL, GS_ERR_UNSUPPORTED, 0,
	     "gres.conf line 2: 8 shards per GPU where an earlier line has 4; "
	     "set shards_per_gpu"},
	    {"no File=", "Name=shard Count=8\n", NULL, GS_ERR_UNSUPPORTED, 0,
	     "gres.conf line 1: shards without File= are not tied to a GPU"},
	    {"uneven split", "Name=shard Count=5 File=/dev/nvidia[0-1]\n", NULL,
	     GS_ERR_UNSUPPORTED, 0,
	     "gres.conf line 1: Count=5 does not split evenly over 2 GPUs"},
	    {"no Count=", "Name=shard File=/dev/nvidia0\n", NULL, GS_ERR_PARSE,
	     0, "gres.conf line 1: a shard line needs Count=N"},
	    {"bad Count=", "Name=shard Count=four File=/dev/nvidia0\n", NULL,
	     GS_ERR_PARSE, 0, "gres.conf line 1: a shard line needs Count=N"},
	    {"bad File=", "Name=shard Count=4 File=/dev/nvidia[1-]\n", NULL,
	     GS_ERR_PARSE, 0,
	     "gres.conf line 1: File=/dev/nvidia[1-] not understood"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gs_errbuf eb = {0};
		int per = -1;

		print_message("%s\n", rows[i].what);
		assert_int_equal(gs_gresconf_shards_per_gpu(
		                     rows[i].text, rows[i].node, &per, &eb),
		                 rows[i].err);
		if (rows[i].err == GS_OK)
			assert_int_equal(per, rows[i].per_gpu);
		if (rows[i].msg)
			assert_string_equal(eb.msg, rows[i].msg);
	}
}

static void a_line_too_long_is_an_error_not_an_overflow(void **state)
{
	static char text[8192];
	struct gs_errbuf eb = {0};
	int per;

	(void)state;
	memset(text, 'x', sizeof(text) - 1);
	assert_int_equal(gs_gresconf_shards_per_gpu(text, NULL, &per, &eb),
	                 GS_ERR_PARSE);
	assert_string_equal(eb.msg, "gres.conf line 1 is too long");
}

static void host_lists_match_like_slurms(void **state)
{
	static const struct {
		const char *list, *name;
		bool in;
	} rows[] = {
	    {"n1", "n1", true},
	    {"n1", "n10", false},
	    {"n1,n2", "n2", true},
	    {"n[1-4]", "n3", true},
	    {"n[1-4]", "n5", false},
	    {"n[1-4,7]", "n7", true},
	    {"n[1-4,7]", "n6", false},
	    {"gpu[01-16]", "gpu07", true},
	    {"gpu[01-16]", "gpu7", false},
	    {"gpu[01-16]", "gpu16", true},
	    {"n[1-16]", "n07", false},
	    {"n[1-16]", "n12", true},
	    {"rack[1-2]-gpu", "rack2-gpu", true},
	    {"rack[1-2]-gpu", "rack3-gpu", false},
	    {"a,n[1-2],b", "b", true},
	    {"n[1-2", "n1", false},
	    {"n[]", "n", false},
	    {"n[2-1]", "n1", false},
	    {"", "n1", false},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("%s ~ %s\n", rows[i].list, rows[i].name);
		assert_int_equal(
		    gs_gresconf_hostlist_has(rows[i].list, rows[i].name),
		    rows[i].in);
	}
}

static void file_expressions_count_their_devices(void **state)
{
	static const struct {
		const char *expr;
		int n;
	} rows[] = {
	    {"/dev/nvidia0", 1},
	    {"/dev/nvidia[0-3]", 4},
	    {"/dev/nvidia[0-1,4-5]", 4},
	    {"/dev/nvidia0,/dev/nvidia2", 2},
	    {"/dev/nvidia[0-1],/dev/nvidia7", 3},
	    {"", -1},
	    {"/dev/nvidia[", -1},
	    {"/dev/nvidia[3-1]", -1},
	    {"/dev/nvidia[0-1][2]", -1},
	    {"/dev/nvidia0,", 1},
	    {",", -1},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("%s\n", rows[i].expr);
		assert_int_equal(gs_gresconf_file_count(rows[i].expr),
		                 rows[i].n);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(shards_per_gpu_come_from_the_shard_lines),
	    cmocka_unit_test(a_line_too_long_is_an_error_not_an_overflow),
	    cmocka_unit_test(host_lists_match_like_slurms),
	    cmocka_unit_test(file_expressions_count_their_devices),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
