/* test_workloads_flags.c - the workloads' strict flag parser and the size,
 * seconds and integer parsers behind it, from tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <string.h>

#include "flags.h"

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)

static void size_parser_accepts_documented_forms(void **state)
{
	static const struct {
		const char *in;
		uint64_t want;
	} ok[] = {
	    {"0", 0},
	    {"4096", 4096},
	    {"512MiB", 512 * MiB},
	    {"512M", 512 * MiB},
	    {"8GiB", 8 * GiB},
	    {"8G", 8 * GiB},
	    {"1KiB", 1024},
	    {"3K", 3072},
	    {"2TiB", 2ULL << 40},
	    {"1T", 1ULL << 40},
	    {"17B", 17},
	    {"18446744073709551615", UINT64_MAX},
	    {"16777215TiB", 16777215ULL << 40},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint64_t v = 1;

		assert_int_equal(gs_flags_parse_size(ok[i].in, &v), 0);
		assert_true(v == ok[i].want);
	}
}

static void size_parser_rejects_malformed_and_overflowing(void **state)
{
	static const char *const bad[] = {
	    "",
	    "MiB",
	    "-1",
	    "+5",
	    " 5",
	    "5 ",
	    "5 MiB",
	    "1.5GiB",
	    "0x10",
	    "8g",
	    "8gib",
	    "8Gi",
	    "8GB",
	    "8MB",
	    "1e9",
	    "5P",
	    "5PiB",
	    "abc",
	    "18446744073709551616",
	    "16777216TiB",
	    "17179869184GiB",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = 42;

		assert_int_equal(gs_flags_parse_size(bad[i], &v), -1);
		assert_true(v == 42); /* untouched on failure */
	}
	assert_int_equal(gs_flags_parse_size(NULL, NULL), -1);
}

static void seconds_parser_accepts_decimals_and_units(void **state)
{
	static const struct {
		const char *in;
		double want;
	} ok[] = {
	    {"5", 5.0},  {"0", 0.0},  {"0.25", 0.25},  {".5", 0.5},
	    {"2.", 2.0}, {"3s", 3.0}, {"250ms", 0.25}, {"1.5s", 1.5},
	};
	static const char *const bad[] = {
	    "",  "-1",    "+1",  "inf",  "nan", "1e3", "0x1",
	    ".", "1.2.3", "5 s", "5min", "s",   "ms",  " 1",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		double v = -1;

		assert_int_equal(gs_flags_parse_seconds(ok[i].in, &v), 0);
		assert_float_equal(v, ok[i].want, 1e-12);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		double v = -7;

		assert_int_equal(gs_flags_parse_seconds(bad[i], &v), -1);
		assert_float_equal(v, -7, 0);
	}
}

static void int_parser_checks_bounds_and_form(void **state)
{
	long long v = 0;

	(void)state;
	assert_int_equal(gs_flags_parse_int("12", 0, 100, &v), 0);
	assert_int_equal(v, 12);
	assert_int_equal(gs_flags_parse_int("-3", -5, 5, &v), 0);
	assert_int_equal(v, -3);
	assert_int_equal(gs_flags_parse_int("101", 0, 100, &v), -1);
	assert_int_equal(gs_flags_parse_int("-1", 0, 100, &v), -1);
	assert_int_equal(gs_flags_parse_int("1x", 0, 100, &v), -1);
	assert_int_equal(gs_flags_parse_int("", 0, 100, &v), -1);
	assert_int_equal(gs_flags_parse_int("-", 0, 100, &v), -1);
	assert_int_equal(
	    gs_flags_parse_int("99999999999999999999", 0, INT64_MAX, &v), -1);
	assert_int_equal(v, -3);
}

/* A table like a program's: every type once. */
struct fixture {
	bool verbose;
	long count;
	uint64_t size;
	double secs;
	int choice;
	struct gs_flag flags[5];
};

static const char *const colours[] = {"red", "green", "blue", NULL};

static void fixture_init(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	f->count = 7;
	f->size = 99;
	f->secs = 5.0;
	f->choice = -1;
	f->flags[0] = (struct gs_flag){"verbose", GS_FLAG_BOOL, &f->verbose, 0,
	                               0,         NULL,         false};
	f->flags[1] = (struct gs_flag){"count", GS_FLAG_INT, &f->count, 1,
	                               10,      NULL,        false};
	f->flags[2] = (struct gs_flag){"size",    GS_FLAG_SIZE, &f->size, 1,
	                               INT64_MAX, NULL,         false};
	f->flags[3] = (struct gs_flag){
	    "seconds", GS_FLAG_SECONDS, &f->secs, 0, 0, NULL, false};
	f->flags[4] = (struct gs_flag){"colour", GS_FLAG_CHOICE, &f->choice, 0,
	                               0,        colours,        false};
}

static enum gs_flags_result parse(struct fixture *f, char *why, int argc, ...)
{
	char *argv[16];
	va_list ap;
	int i;

	assert_true(argc < 16);
	argv[0] = "prog";
	va_start(ap, argc);
	for (i = 1; i <= argc; i++)
		argv[i] = va_arg(ap, char *);
	va_end(ap);
	return gs_flags_parse(argc + 1, argv, f->flags, 5, why, 256);
}

static void flags_parse_both_value_spellings_and_keep_defaults(void **state)
{
	struct fixture f;
	char why[256] = "";

	(void)state;
	fixture_init(&f);
	assert_int_equal(
	    parse(&f, why, 5, "--count", "3", "--size=8G", "--colour", "blue"),
	    GS_FLAGS_OK);
	assert_int_equal(f.count, 3);
	assert_true(f.size == 8 * GiB);
	assert_int_equal(f.choice, 2);
	assert_false(f.verbose);
	assert_float_equal(f.secs, 5.0, 0); /* default kept */
	assert_true(f.flags[1].given);
	assert_true(f.flags[2].given);
	assert_false(f.flags[0].given);
	assert_false(f.flags[3].given);

	fixture_init(&f);
	assert_int_equal(parse(&f, why, 2, "--verbose", "--seconds=0.5"),
	                 GS_FLAGS_OK);
	assert_true(f.verbose);
	assert_float_equal(f.secs, 0.5, 0);
}

static void flags_reject_unknown_missing_and_bad_values(void **state)
{
	static const struct {
		int argc;
		const char *a, *b;
		const char *why;
	} cases[] = {
	    {1, "--bogus", NULL, "unknown flag --bogus"},
	    {1, "--bogus=1", NULL, "unknown flag --bogus"},
	    {1, "--coun", NULL, "unknown flag --coun"},
	    {1, "-c", NULL, "unexpected argument '-c'"},
	    {1, "stray", NULL, "unexpected argument 'stray'"},
	    {1, "--", NULL, "unexpected argument '--'"},
	    {1, "--count", NULL, "--count needs a value"},
	    {2, "--count", "11", "--count needs an integer from 1 to 10"},
	    {2, "--count", "x", "--count needs an integer"},
	    {1, "--size=1.5G", NULL, "--size needs a size"},
	    {2, "--size", "0", "--size needs a size"},
	    {2, "--seconds", "-1", "--seconds needs seconds"},
	    {2, "--colour", "pink", "--colour: unknown value 'pink'"},
	    {1, "--verbose=1", NULL, "--verbose takes no value"},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fixture f;
		char why[256] = "";

		fixture_init(&f);
		assert_int_equal(
		    parse(&f, why, cases[i].argc, cases[i].a, cases[i].b),
		    GS_FLAGS_USAGE);
		if (strncmp(why, cases[i].why, strlen(cases[i].why)) != 0)
			fail_msg("case %zu: got '%s', want prefix '%s'", i, why,
			         cases[i].why);
	}
}

static void help_wins_over_errors(void **state)
{
	struct fixture f;
	char why[256] = "";

	(void)state;
	fixture_init(&f);
	assert_int_equal(parse(&f, why, 3, "--bogus", "--help", "--count"),
	                 GS_FLAGS_HELP);
	assert_int_equal(f.count, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(size_parser_accepts_documented_forms),
	    cmocka_unit_test(size_parser_rejects_malformed_and_overflowing),
	    cmocka_unit_test(seconds_parser_accepts_decimals_and_units),
	    cmocka_unit_test(int_parser_checks_bounds_and_form),
	    cmocka_unit_test(
	        flags_parse_both_value_spellings_and_keep_defaults),
	    cmocka_unit_test(flags_reject_unknown_missing_and_bad_values),
	    cmocka_unit_test(help_wins_over_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
