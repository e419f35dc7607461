/*
 * test_spec.c - slice specs and quantities, from tables: every row is an
 * input, the expected code and either the canonical result or the exact
 * error message.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "gs/region.h"
#include "gs/spec.h"
#include "gs/spec_json.h"

#define GIB (1024ull * 1024 * 1024)
#define MIB (1024ull * 1024)

static void memory_quantities_parse_as_documented(void **state)
{
	static const struct {
		const char *in;
		gs_err err;
		uint64_t bytes;
		const char *msg;
	} rows[] = {
	    {"512MiB", GS_OK, 512 * MIB, NULL},
	    {"8GiB", GS_OK, 8 * GIB, NULL},
	    {"8G", GS_OK, 8 * GIB, NULL},
	    {"8g", GS_OK, 8 * GIB, NULL},
	    {"8GB", GS_OK, 8 * GIB, NULL},
	    {"8Gi", GS_OK, 8 * GIB, NULL},
	    {"1.5GiB", GS_OK, 3 * GIB / 2, NULL},
	    {"0.5G", GS_OK, GIB / 2, NULL},
	    {"1048576", GS_OK, MIB, NULL},
	    {"1000B", GS_OK, 1000, NULL},
	    {"4K", GS_OK, 4096, NULL},
	    {"2TiB", GS_OK, 2048 * GIB, NULL},
	    {"8388607TiB", GS_OK, 8388607ull << 40, NULL},
	    {"8388608TiB", GS_ERR_RANGE, 0, "memory '8388608TiB' is too large"},
	    {"9223372036854775807", GS_OK, INT64_MAX, NULL},
	    {"9223372036854775808", GS_ERR_RANGE, 0,
	     "memory '9223372036854775808' is too large"},
	    {"18446744073709551616", GS_ERR_RANGE, 0,
	     "memory '18446744073709551616' is too large"},
	    {"99999999999999999999999", GS_ERR_RANGE, 0,
	     "memory '99999999999999999999999' is too large"},
	    {"0", GS_ERR_RANGE, 0, "memory must be greater than 0, got '0'"},
	    {"0GiB", GS_ERR_RANGE, 0,
	     "memory must be greater than 0, got '0GiB'"},
	    {"1.3MiB", GS_ERR_PARSE, 0,
	     "memory '1.3MiB' is not a whole number of bytes"},
	    {"1.5", GS_ERR_PARSE, 0,
	     "memory '1.5' is not a whole number of bytes"},
	    {"", GS_ERR_PARSE, 0, "memory is empty"},
	    {"GiB", GS_ERR_PARSE, 0,
	     "memory 'GiB' not understood (expected e.g. 512MiB, 8GiB, 8G, "
	     "1.5GiB or a number of bytes)"},
	    {"8XB", GS_ERR_PARSE, 0,
	     "memory '8XB' not understood (expected e.g. 512MiB, 8GiB, 8G, "
	     "1.5GiB or a number of bytes)"},
	    {"8 GiB", GS_ERR_PARSE, 0,
	     "memory '8 GiB' not understood (expected e.g. 512MiB, 8GiB, 8G, "
	     "1.5GiB or a number of bytes)"},
	    {"-1G", GS_ERR_PARSE, 0,
	     "memory '-1G' not understood (expected e.g. 512MiB, 8GiB, 8G, "
	     "1.5GiB or a number of bytes)"},
	    {"1.G", GS_ERR_PARSE, 0,
	     "memory '1.G' not understood (expected e.g. 512MiB, 8GiB, 8G, "
	     "1.5GiB or a number of bytes)"},
	    {"1.0000000001G", GS_ERR_PARSE, 0,
	     "memory '1.0000000001G' has more than 9 decimals"},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gs_errbuf eb = {0};
		uint64_t b = 42;
		gs_err err = gs_parse_memory(rows[i].in, &b, &eb);

		if (err != rows[i].err)
			fail_msg("'%s': got %s (%s)", rows[i].in,
			         gs_err_name(err), eb.msg);
		if (err == GS_OK)
			assert_int_equal(b, rows[i].bytes);
		else
			assert_string_equal(eb.msg, rows[i].msg);
	}
}

static void memory_formats_in_the_largest_exact_unit(void **state)
{
	static const struct {
		uint64_t in;
		const char *out;
	} rows[] = {
	    {8 * GIB, "8GiB"}, {512 * MIB, "512MiB"}, {3 * GIB / 2, "1536MiB"},
	    {1000, "1000"},    {4096, "4KiB"},        {2048 * GIB, "2TiB"},
	    {0, "0"},
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		(void)gs_format_memory(rows[i].in, buf, sizeof(buf));
		assert_string_equal(buf, rows[i].out);
	}
}

static void compute_accepts_1_to_100_with_or_without_percent(void **state)
{
	static const struct {
		const char *in;
		gs_err err;
		int pct;
		const char *msg;
	} rows[] = {
	    {"25", GS_OK, 25, NULL},
	    {"25%", GS_OK, 25, NULL},
	    {"1", GS_OK, 1, NULL},
	    {"100%", GS_OK, 100, NULL},
	    {"140", GS_ERR_RANGE, 0, "compute must be 1..100, got 140"},
	    {"0", GS_ERR_RANGE, 0, "compute must be 1..100, got 0"},
	    {"99999999999", GS_ERR_RANGE, 0,
	     "compute must be 1..100, got 99999999999"},
	    {"25.5", GS_ERR_PARSE, 0,
	     "compute '25.5' not understood (expected a whole percentage "
	     "such as 25 or 25%)"},
	    {"25%%", GS_ERR_PARSE, 0,
	     "compute '25%%' not understood (expected a whole percentage "
	     "such as 25 or 25%)"},
	    {"%", GS_ERR_PARSE, 0,
	     "compute '%' not understood (expected a whole percentage such "
	     "as 25 or 25%)"},
	    {"", GS_ERR_PARSE, 0, "compute is empty"},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gs_errbuf eb = {0};
		int pct = -1;
		gs_err err = gs_parse_compute(rows[i].in, &pct, &eb);

		if (err != rows[i].err)
			fail_msg("'%s': got %s", rows[i].in, gs_err_name(err));
		if (err == GS_OK)
			assert_int_equal(pct, rows[i].pct);
		else
			assert_string_equal(eb.msg, rows[i].msg);
	}
}

/* kvlist in -> canonical text out, or the error message. */
static const struct {
	const char *in;
	gs_err err;
	const char *out;
} kv_rows[] = {
    {"", GS_OK, "priority=normal weight=1 mode=auto isolation=none"},
    {"memory=8G compute=25%", GS_OK,
     "memory=8GiB compute=25 priority=normal weight=1 mode=auto "
     "isolation=none"},
    {"name=nb-1,memory=1.5GiB,priority=high,weight=3,mode=mps,gpu=0", GS_OK,
     "name=nb-1 memory=1536MiB priority=high weight=3 mode=mps "
     "isolation=none gpu=0"},
    {"mode=mig mig-profile=1G.10GB isolation=hard gpu=H100", GS_OK,
     "priority=normal weight=1 mode=mig mig-profile=1g.10gb "
     "isolation=hard gpu=H100-SXM5-80GB"},
    {"mig_profile=1c.3g.20gb mode=MIG+MPS", GS_OK,
     "priority=normal weight=1 mode=mig+mps mig-profile=1c.3g.20gb "
     "isolation=none"},
    {"mode=mig mig-profile=1g.10gb mig_start=6", GS_OK,
     "priority=normal weight=1 mode=mig mig-profile=1g.10gb mig-start=6 "
     "isolation=none"},
    {"mig-start=8", GS_ERR_RANGE, "mig-start must be 0..7, got 8"},
    {"compute=30 compute-mode=share", GS_OK,
     "compute=30 priority=normal weight=1 mode=auto compute-mode=share "
     "isolation=none"},
    {"compute_mode=strict", GS_OK,
     "priority=normal weight=1 mode=auto isolation=none"},
    {"compute-mode=greedy", GS_ERR_PARSE,
     "unknown compute-mode 'greedy' (expected strict|share)"},
    {"mig-start=x", GS_ERR_PARSE, "mig-start 'x' is not a whole number"},
    {"mig-profile=1g.5gb+me", GS_OK,
     "priority=normal weight=1 mode=auto mig-profile=1g.5gb+me "
     "isolation=none"},
    {"gpu=GPU-1234-abcd isolation=memory priority=low", GS_OK,
     "priority=low weight=1 mode=auto isolation=memory gpu=GPU-1234-abcd"},
    {"gpu=T4", GS_OK,
     "priority=normal weight=1 mode=auto isolation=none gpu=T4"},
    {"gpu=any", GS_OK, "priority=normal weight=1 mode=auto isolation=none"},
    {"isolation=exclusive mode=timeslice", GS_OK,
     "priority=normal weight=1 mode=timeslice isolation=exclusive"},
    {"mode=foo", GS_ERR_PARSE,
     "unknown mode 'foo' (expected auto|timeslice|mps|mig|mig+timeslice|"
     "mig+mps)"},
    {"compute=140", GS_ERR_RANGE, "compute must be 1..100, got 140"},
    {"priority=urgent", GS_ERR_PARSE,
     "unknown priority 'urgent' (expected high|normal|low)"},
    {"weight=0", GS_ERR_RANGE, "weight must be 1..1000, got 0"},
    {"weight=1001", GS_ERR_RANGE, "weight must be 1..1000, got 1001"},
    {"weight=x", GS_ERR_PARSE,
     "weight 'x' not understood (expected a whole number 1..1000)"},
    {"isolation=total", GS_ERR_PARSE,
     "unknown isolation 'total' (expected none|memory|hard|exclusive)"},
    {"colour=blue", GS_ERR_INVALID,
     "unknown key 'colour' (expected name|memory|compute|priority|weight|"
     "mode|mig-profile|mig-start|compute-mode|isolation|gpu|swap)"},
    {"memory", GS_ERR_PARSE, "expected key=value, got 'memory'"},
    {"=8G", GS_ERR_PARSE, "expected key=value, got '=8G'"},
    {"name=-x", GS_ERR_PARSE, "name '-x' must start with a letter or digit"},
    {"name=a/b", GS_ERR_PARSE,
     "name 'a/b' may hold only letters, digits, '.', '_' and '-'"},
    {"name=", GS_ERR_RANGE, "name must be 1..63 characters, got 0"},
    {"mig-profile=3g40gb", GS_ERR_PARSE,
     "mig-profile '3g40gb' not understood (expected e.g. 1g.10gb, "
     "3g.40gb, 1g.10gb+me)"},
    {"mig-profile=1g.10gb+", GS_ERR_PARSE,
     "mig-profile '1g.10gb+' not understood (expected e.g. 1g.10gb, "
     "3g.40gb, 1g.10gb+me)"},
    {"mig-profile=0g.10gb", GS_ERR_PARSE,
     "mig-profile '0g.10gb' not understood (expected e.g. 1g.10gb, "
     "3g.40gb, 1g.10gb+me)"},
    {"gpu=2048", GS_ERR_RANGE, "gpu index must be 0..1023, got 2048"},
    {"mode=timeslice mig-profile=1g.10gb", GS_ERR_INVALID,
     "mig-profile needs mode mig, mig+timeslice, mig+mps or auto, got "
     "mode timeslice"},
    {"mode=mps isolation=hard", GS_ERR_INVALID,
     "isolation hard needs a MIG instance of its own (mode mig or auto), "
     "got mode mps"},
    {"mode=mig+timeslice isolation=hard", GS_ERR_INVALID,
     "isolation hard needs a MIG instance of its own (mode mig or auto), "
     "got mode mig+timeslice"},
    {"mode=mps isolation=exclusive", GS_ERR_INVALID,
     "isolation exclusive takes a whole GPU (mode auto or timeslice), got "
     "mode mps"},
    {"mode=timeslice mig-start=2", GS_ERR_INVALID,
     "mig-start needs mig-profile and mode mig, mig+timeslice or mig+mps "
     "(got mode timeslice, no mig-profile)"},
    {"isolation=exclusive mig-profile=7g.80gb", GS_ERR_INVALID,
     "isolation exclusive takes a whole GPU; drop mig-profile 7g.80gb"},
};

static void kvlists_parse_validate_and_print_canonically(void **state)
{
	for (size_t i = 0; i < sizeof(kv_rows) / sizeof(kv_rows[0]); i++) {
		struct gs_slice_spec s, again;
		struct gs_errbuf eb = {0};
		char out[GS_SPEC_FORMAT_MAX];
		gs_err err;

		gs_spec_init(&s);
		err = gs_spec_parse_kvlist(&s, kv_rows[i].in, &eb);
		if (err == GS_OK)
			err = gs_spec_validate(&s, &eb);
		if (err != kv_rows[i].err)
			fail_msg("'%s': got %s (%s)", kv_rows[i].in,
			         gs_err_name(err), eb.msg);
		if (err != GS_OK) {
			assert_string_equal(eb.msg, kv_rows[i].out);
			continue;
		}
		(void)gs_spec_format(&s, out, sizeof(out));
		assert_string_equal(out, kv_rows[i].out);
		/* Round trip: the canonical text parses to the same spec. */
		gs_spec_init(&again);
		assert_int_equal(gs_spec_parse_kvlist(&again, out, &eb), GS_OK);
		assert_true(gs_spec_equal(&s, &again));
	}
}

static void failed_set_leaves_the_spec_unchanged(void **state)
{
	struct gs_slice_spec s, before;
	struct gs_errbuf eb = {0};

	gs_spec_init(&s);
	assert_int_equal(gs_spec_set(&s, "memory", "8G", &eb), GS_OK);
	before = s;
	assert_int_equal(gs_spec_set(&s, "memory", "8X", &eb), GS_ERR_PARSE);
	assert_true(gs_spec_equal(&s, &before));
	assert_int_equal(gs_spec_set(&s, "gpu", "a b", NULL), GS_ERR_PARSE);
	assert_true(gs_spec_equal(&s, &before));
}

static const struct {
	const char *in;
	gs_err err;
	const char *out; /* canonical kv text, or the message */
} json_rows[] = {
    {"{}", GS_OK, "priority=normal weight=1 mode=auto isolation=none"},
    {"{\"memory\":\"8GiB\",\"compute\":\"25%\",\"gpu\":1}", GS_OK,
     "memory=8GiB compute=25 priority=normal weight=1 mode=auto "
     "isolation=none gpu=1"},
    {"{\"memory\":1073741824,\"compute\":30,\"weight\":4,\"mode\":\"mps\"}",
     GS_OK,
     "memory=1GiB compute=30 priority=normal weight=4 mode=mps "
     "isolation=none"},
    {"{\"memory_bytes\":2147483648,\"name\":null}", GS_OK,
     "memory=2GiB priority=normal weight=1 mode=auto isolation=none"},
    {"{\"mig_profile\":\"2g.20gb\",\"mode\":\"mig\"}", GS_OK,
     "priority=normal weight=1 mode=mig mig-profile=2g.20gb isolation=none"},
    {"{\"compute\":140}", GS_ERR_RANGE, "compute must be 1..100, got 140"},
    {"{\"compute\":-3}", GS_ERR_RANGE, "compute must not be negative, got -3"},
    {"{\"mode\":3}", GS_ERR_PARSE,
     "key 'mode' has the wrong JSON type (expected a string)"},
    {"{\"memory\":true}", GS_ERR_PARSE,
     "key 'memory' has the wrong JSON type (expected a string or an "
     "integer)"},
    {"{\"size\":\"8G\"}", GS_ERR_INVALID,
     "unknown key 'size' (expected name|memory|compute|priority|weight|"
     "mode|mig-profile|mig-start|compute-mode|isolation|gpu|swap)"},
    {"{\"mig_profile\":\"1g.10gb\",\"mode\":\"mig\",\"mig_start\":3}", GS_OK,
     "priority=normal weight=1 mode=mig mig-profile=1g.10gb mig-start=3 "
     "isolation=none"},
    {"{\"memory\":\"1GiB\",\"memory_bytes\":5}", GS_ERR_INVALID,
     "memory and memory_bytes disagree"},
    {"[1]", GS_ERR_PARSE, "a slice spec must be a JSON object"},
};

static void json_specs_parse_like_kvlists(void **state)
{
	for (size_t i = 0; i < sizeof(json_rows) / sizeof(json_rows[0]); i++) {
		struct gs_slice_spec s, back;
		struct gs_errbuf eb = {0};
		char out[GS_SPEC_FORMAT_MAX];
		gs_err err;
		json_t *j;

		gs_spec_init(&s);
		err = gs_spec_from_json_text(&s, json_rows[i].in,
		                             strlen(json_rows[i].in), &eb);
		if (err != json_rows[i].err)
			fail_msg("'%s': got %s (%s)", json_rows[i].in,
			         gs_err_name(err), eb.msg);
		if (err != GS_OK) {
			assert_string_equal(eb.msg, json_rows[i].out);
			continue;
		}
		(void)gs_spec_format(&s, out, sizeof(out));
		assert_string_equal(out, json_rows[i].out);
		j = gs_spec_to_json(&s);
		assert_non_null(j);
		gs_spec_init(&back);
		assert_int_equal(gs_spec_from_json(&back, j, &eb), GS_OK);
		assert_true(gs_spec_equal(&s, &back));
		json_decref(j);
	}
}

static void malformed_json_is_a_parse_error(void **state)
{
	struct gs_slice_spec s;
	struct gs_errbuf eb = {0};
	const char *bad = "{\"memory\":";

	gs_spec_init(&s);
	assert_int_equal(gs_spec_from_json_text(&s, bad, strlen(bad), &eb),
	                 GS_ERR_PARSE);
	assert_non_null(strstr(eb.msg, "slice spec JSON:"));
}

/* gs_spec_limits is the one spec -> region limits conversion. */
static void spec_limits_carry_every_field_the_shim_enforces(void **state)
{
	struct gs_slice_spec sp;
	struct gs_slice_limits l;

	(void)state;
	gs_spec_init(&sp);
	assert_int_equal(gs_spec_parse_kvlist(&sp,
	                                      "name=nb memory=2GiB compute=30 "
	                                      "priority=high weight=7 "
	                                      "compute-mode=share",
	                                      NULL),
	                 GS_OK);
	assert_int_equal(gs_spec_limits(&sp, &l, NULL), GS_OK);
	assert_string_equal(l.name, "nb");
	assert_int_equal(l.mem_limit, 2ull << 30);
	assert_int_equal(l.compute_pct, 30);
	assert_int_equal(l.priority, GS_REGION_PRIO_HIGH);
	assert_int_equal(l.weight, 7);
	assert_int_equal(l.mode, GS_REGION_COMPUTE_SHARE);
	assert_int_equal(l.flags, 0);
	assert_int_equal(l.owner_uid, 0);

	/* Defaults: no caps, normal priority, weight 1, strict. */
	gs_spec_init(&sp);
	assert_int_equal(gs_spec_limits(&sp, &l, NULL), GS_OK);
	assert_int_equal(l.mem_limit, 0);
	assert_int_equal(l.compute_pct, 0);
	assert_int_equal(l.priority, GS_REGION_PRIO_NORMAL);
	assert_int_equal(l.weight, 1);
	assert_int_equal(l.mode, GS_REGION_COMPUTE_STRICT);
}

static void spec_limits_keep_one_priority_order(void **state)
{
	static const char *const names[] = {"low", "normal", "high"};
	uint32_t prev = 0;

	(void)state;
	for (int i = 0; i < 3; i++) {
		struct gs_slice_spec sp;
		struct gs_slice_limits l;

		gs_spec_init(&sp);
		assert_int_equal(gs_spec_set(&sp, "priority", names[i], NULL),
		                 GS_OK);
		assert_int_equal(gs_spec_limits(&sp, &l, NULL), GS_OK);
		if (i > 0)
			assert_true(l.priority > prev);
		prev = l.priority;
	}
}

static void spec_limits_refuse_out_of_range_fields(void **state)
{
	struct gs_slice_spec sp;
	struct gs_slice_limits l;
	struct gs_errbuf eb = {0};

	(void)state;
	gs_spec_init(&sp);
	sp.compute_pct = 101;
	assert_int_equal(gs_spec_limits(&sp, &l, &eb), GS_ERR_RANGE);
	assert_non_null(strstr(eb.msg, "compute"));
	gs_spec_init(&sp);
	sp.weight = 0;
	assert_int_equal(gs_spec_limits(&sp, &l, NULL), GS_ERR_RANGE);
	gs_spec_init(&sp);
	sp.priority = GS_PRIORITY__COUNT;
	assert_int_equal(gs_spec_limits(&sp, &l, NULL), GS_ERR_RANGE);
}

/* Two GPUs; the second has two MIG instances, the first's UUID unknown. */
static const char *two_gpus(const void *ctx, int i, int k)
{
	static const char *const mig[] = {"MIG-b-0", "MIG-b-1"};

	(void)ctx;
	if (i == 0)
		return k < 0 ? "" : NULL;
	if (k < 0)
		return "GPU-b";
	return k < 2 ? mig[k] : NULL;
}

static void gpu_index_of_takes_an_index_or_a_gpu_or_instance_uuid(void **state)
{
	(void)state;
	assert_int_equal(gs_gpu_index_of("1", 2, two_gpus, NULL), 1);
	assert_int_equal(gs_gpu_index_of("0", 2, two_gpus, NULL), 0);
	assert_int_equal(gs_gpu_index_of("2", 2, two_gpus, NULL), -1);
	assert_int_equal(gs_gpu_index_of("-1", 2, two_gpus, NULL), -1);
	assert_int_equal(gs_gpu_index_of("GPU-b", 2, two_gpus, NULL), 1);
	assert_int_equal(gs_gpu_index_of("MIG-b-1", 2, two_gpus, NULL), 1);
	assert_int_equal(gs_gpu_index_of("MIG-b-2", 2, two_gpus, NULL), -1);
	assert_int_equal(gs_gpu_index_of("", 2, two_gpus, NULL), -1);
	assert_int_equal(gs_gpu_index_of(NULL, 2, two_gpus, NULL), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(memory_quantities_parse_as_documented),
	    cmocka_unit_test(memory_formats_in_the_largest_exact_unit),
	    cmocka_unit_test(compute_accepts_1_to_100_with_or_without_percent),
	    cmocka_unit_test(kvlists_parse_validate_and_print_canonically),
	    cmocka_unit_test(failed_set_leaves_the_spec_unchanged),
	    cmocka_unit_test(json_specs_parse_like_kvlists),
	    cmocka_unit_test(malformed_json_is_a_parse_error),
	    cmocka_unit_test(spec_limits_carry_every_field_the_shim_enforces),
	    cmocka_unit_test(spec_limits_keep_one_priority_order),
	    cmocka_unit_test(spec_limits_refuse_out_of_range_fields),
	    cmocka_unit_test(
	        gpu_index_of_takes_an_index_or_a_gpu_or_instance_uuid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
