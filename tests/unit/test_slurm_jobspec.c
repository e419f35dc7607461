/*
 * test_slurm_jobspec.c - the Slurm plugin's rules without Slurm, from
 * tables: plugstack arguments, the --gpu-* options (values and exact
 * messages), the gres environment, the limits a step gets, slice names.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "jobspec.h"

#define GIB (1024ull * 1024 * 1024)
#define MIB (1024ull * 1024)

static void options_parse_and_bad_values_name_the_option(void **state)
{
	static const struct {
		enum gs_slurm_opt opt;
		const char *text;
		gs_err err;
		uint64_t mem;
		int compute, prio;
		const char *msg;
	} rows[] = {
	    {GS_SLURM_OPT_MEM, "4G", GS_OK, 4 * GIB, 0, -1, NULL},
	    {GS_SLURM_OPT_MEM, "512MiB", GS_OK, 512 * MIB, 0, -1, NULL},
	    {GS_SLURM_OPT_MEM, "8GiB", GS_OK, 8 * GIB, 0, -1, NULL},
	    {GS_SLURM_OPT_MEM, "4x", GS_ERR_PARSE, 0, 0, -1,
	     "--gpu-mem: memory '4x' not understood (expected e.g. 512MiB, "
	     "8GiB, 8G, 1.5GiB or a number of bytes)"},
	    {GS_SLURM_OPT_MEM, "", GS_ERR_PARSE, 0, 0, -1,
	     "--gpu-mem: memory is empty"},
	    {GS_SLURM_OPT_MEM, NULL, GS_ERR_PARSE, 0, 0, -1,
	     "--gpu-mem: memory is empty"},
	    {GS_SLURM_OPT_MEM, "0", GS_ERR_RANGE, 0, 0, -1,
	     "--gpu-mem: memory must be greater than 0, got '0'"},
	    {GS_SLURM_OPT_COMPUTE, "30", GS_OK, 0, 30, -1, NULL},
	    {GS_SLURM_OPT_COMPUTE, "25%", GS_OK, 0, 25, -1, NULL},
	    {GS_SLURM_OPT_COMPUTE, "100", GS_OK, 0, 100, -1, NULL},
	    {GS_SLURM_OPT_COMPUTE, "140", GS_ERR_RANGE, 0, 0, -1,
	     "--gpu-compute: compute must be 1..100, got 140"},
	    {GS_SLURM_OPT_PRIORITY, "high", GS_OK, 0, 0, 2, NULL},
	    {GS_SLURM_OPT_PRIORITY, "low", GS_OK, 0, 0, 0, NULL},
	    {GS_SLURM_OPT_PRIORITY, "urgent", GS_ERR_PARSE, 0, 0, -1,
	     "--gpu-priority: unknown priority 'urgent' (expected "
	     "high|normal|low)"},
	    {(enum gs_slurm_opt)99, "1", GS_ERR_INVALID, 0, 0, -1,
	     "unknown option 99"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gs_slurm_request rq;
		struct gs_errbuf eb = {0};

		gs_slurm_request_init(&rq);
		assert_int_equal(
		    gs_slurm_request_set(&rq, rows[i].opt, rows[i].text, &eb),
		    rows[i].err);
		assert_int_equal(rq.mem, rows[i].mem);
		assert_int_equal(rq.compute, rows[i].compute);
		assert_int_equal(rq.priority, rows[i].prio);
		if (rows[i].msg)
			assert_string_equal(eb.msg, rows[i].msg);
		assert_int_equal(gs_slurm_request_is_set(&rq),
		                 rows[i].err == GS_OK);
	}
}

static void a_bad_value_leaves_the_earlier_one(void **state)
{
	struct gs_slurm_request rq;

	(void)state;
	gs_slurm_request_init(&rq);
	assert_int_equal(
	    gs_slurm_request_set(&rq, GS_SLURM_OPT_MEM, "8G", NULL), GS_OK);
	assert_int_equal(
	    gs_slurm_request_set(&rq, GS_SLURM_OPT_MEM, "8Q", NULL),
	    GS_ERR_PARSE);
	assert_int_equal(rq.mem, 8 * GIB);
}

static void plugstack_arguments_parse_and_unknown_ones_fail(void **state)
{
	struct gs_slurm_conf c;
	struct gs_errbuf eb = {0};
	char *good[] = {"run_dir=/tmp/r",
	                "socket=/tmp/r/api.sock",
	                "shim=/opt/gs/lib/libgpuslice.so",
	                "shards_per_gpu=8",
	                "daemon=required",
	                "compute_mode=share",
	                "gres_conf=/etc/slurm/gres.conf"};
	static const struct {
		const char *arg;
		gs_err err;
		const char *msg;
	} bad[] = {
	    {"colour=red", GS_ERR_INVALID,
	     "unknown plugstack argument 'colour'"},
	    {"run_dir", GS_ERR_INVALID,
	     "plugstack argument 'run_dir' is not key=value"},
	    {"run_dir=relative", GS_ERR_INVALID,
	     "plugstack argument run_dir must be an absolute path, got "
	     "'relative'"},
	    {"shards_per_gpu=0", GS_ERR_RANGE,
	     "plugstack argument shards_per_gpu must be 1..1000000, got '0'"},
	    {"shards_per_gpu=4x", GS_ERR_RANGE,
	     "plugstack argument shards_per_gpu must be 1..1000000, got '4x'"},
	    {"daemon=maybe", GS_ERR_PARSE,
	     "plugstack argument daemon must be auto, off or required, got "
	     "'maybe'"},
	    {"compute_mode=lax", GS_ERR_PARSE,
	     "plugstack argument compute_mode must be strict or share, got "
	     "'lax'"},
	};

	(void)state;
	gs_slurm_conf_init(&c);
	assert_string_equal(c.run_dir, "/run/gpuslice");
	assert_string_equal(c.socket, "/run/gpuslice/api.sock");
	assert_int_equal(c.daemon, GS_SLURM_DAEMON_AUTO);
	assert_int_equal(c.compute_mode, GS_REGION_COMPUTE_STRICT);
	assert_int_equal(gs_slurm_conf_parse(&c, 7, good, &eb), GS_OK);
	assert_string_equal(c.run_dir, "/tmp/r");
	assert_string_equal(c.socket, "/tmp/r/api.sock");
	assert_string_equal(c.shim, "/opt/gs/lib/libgpuslice.so");
	assert_string_equal(c.gres_conf, "/etc/slurm/gres.conf");
	assert_int_equal(c.shards_per_gpu, 8);
	assert_int_equal(c.daemon, GS_SLURM_DAEMON_REQUIRED);
	assert_int_equal(c.compute_mode, GS_REGION_COMPUTE_SHARE);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gs_errbuf e = {0};
		char *argv[1] = {(char *)bad[i].arg};

		gs_slurm_conf_init(&c);
		assert_int_equal(gs_slurm_conf_parse(&c, 1, argv, &e),
		                 bad[i].err);
		assert_string_equal(e.msg, bad[i].msg);
	}
}

static void gres_environment_reads_gpus_and_shards(void **state)
{
	struct gs_slurm_gres g;
	struct gs_errbuf eb = {0};

	(void)state;
	assert_int_equal(gs_slurm_gres_from_env(&g, NULL, NULL, NULL), GS_OK);
	assert_int_equal(g.n_gpus, 0);
	assert_int_equal(g.first_gpu, -1);
	assert_int_equal(g.shards_held, 0);
	assert_int_equal(gs_slurm_gres_from_env(&g, "1,3", "2", NULL), GS_OK);
	assert_int_equal(g.n_gpus, 2);
	assert_int_equal(g.first_gpu, 1);
	assert_int_equal(g.shards_held, 2);
	assert_int_equal(gs_slurm_gres_from_env(&g, "GPU-ab-cd", "", NULL),
	                 GS_OK);
	assert_int_equal(g.n_gpus, 1);
	assert_int_equal(g.first_gpu, -1);
	assert_int_equal(gs_slurm_gres_from_env(&g, "0", "three", &eb),
	                 GS_ERR_PARSE);
	assert_string_equal(eb.msg,
	                    "SLURM_SHARDS_ON_NODE='three' is not a count");
}

static void limits_follow_options_then_shards(void **state)
{
	static const struct {
		const char *what;
		uint64_t mem;
		int compute, prio;
		int n_gpus, held, per_gpu;
		gs_err err;
		bool wanted;
		uint32_t want_pct, want_prio;
	} rows[] = {
	    {"nothing asked, whole GPU", 0, 0, -1, 1, 0, 0, GS_OK, false, 0, 0},
	    {"nothing asked, no GPU", 0, 0, -1, 0, 0, 4, GS_OK, false, 0, 0},
	    {"memory only", 4 * GIB, 0, -1, 1, 0, 0, GS_OK, true, 0, 1},
	    {"priority only", 0, 0, 2, 1, 0, 0, GS_OK, true, 0, 2},
	    {"explicit compute", 0, 30, -1, 1, 0, 0, GS_OK, true, 30, 1},
	    {"one shard of four", 0, 0, -1, 1, 1, 4, GS_OK, true, 25, 1},
	    {"three shards of four", 0, 0, -1, 1, 3, 4, GS_OK, true, 75, 1},
	    {"all shards", 0, 0, -1, 1, 4, 4, GS_OK, true, 100, 1},
	    {"one of three rounds down", 0, 0, -1, 1, 1, 3, GS_OK, true, 33, 1},
	    {"one of 1000 is at least 1", 0, 0, -1, 1, 1, 1000, GS_OK, true, 1,
	     1},
	    {"shards over two GPUs", 0, 0, -1, 2, 4, 4, GS_OK, true, 50, 1},
	    {"compute beats shards", 0, 10, -1, 1, 2, 4, GS_OK, true, 10, 1},
	    {"explicit compute needs no per-GPU count", 0, 10, -1, 1, 2, 0,
	     GS_OK, true, 10, 1},
	    {"shards without a per-GPU count", 0, 0, -1, 1, 2, 0,
	     GS_ERR_INVALID, false, 0, 0},
	};
	struct gs_slurm_conf c;

	(void)state;
	gs_slurm_conf_init(&c);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gs_slurm_request rq = {rows[i].mem, rows[i].compute,
		                              rows[i].prio, -1};
		struct gs_slurm_gres g = {rows[i].n_gpus, 0, rows[i].held,
		                          rows[i].per_gpu};
		struct gs_slice_limits lim;
		bool wanted = true;

		memset(&lim, 0x5a, sizeof(lim));
		print_message("%s\n", rows[i].what);
		assert_int_equal(
		    gs_slurm_limits(&c, &rq, &g, &lim, &wanted, NULL),
		    rows[i].err);
		assert_int_equal(wanted, rows[i].wanted);
		if (!rows[i].wanted)
			continue;
		assert_int_equal(lim.mem_limit, rows[i].mem);
		assert_int_equal(lim.compute_pct, rows[i].want_pct);
		assert_int_equal(lim.priority, rows[i].want_prio);
		assert_int_equal(lim.mode, GS_REGION_COMPUTE_STRICT);
		assert_int_equal(lim.flags, GS_SLICE_EPHEMERAL);
		assert_int_equal(lim.weight, 1);
		assert_string_equal(lim.name, "");
	}
}

static void shards_without_a_count_say_what_to_configure(void **state)
{
	struct gs_slurm_conf c;
	struct gs_slurm_request rq;
	struct gs_slurm_gres g = {1, 0, 2, 0};
	struct gs_slice_limits lim;
	struct gs_errbuf eb = {0};
	bool wanted;

	(void)state;
	gs_slurm_conf_init(&c);
	gs_slurm_request_init(&rq);
	assert_int_equal(gs_slurm_limits(&c, &rq, &g, &lim, &wanted, &eb),
	                 GS_ERR_INVALID);
	assert_non_null(strstr(eb.msg, "shards_per_gpu=N"));
}

static void compute_mode_comes_from_the_plugstack(void **state)
{
	struct gs_slurm_conf c;
	struct gs_slurm_request rq = {0, 40, -1, -1};
	struct gs_slurm_gres g = {1, 0, 0, 0};
	struct gs_slice_limits lim;
	char *argv[] = {"compute_mode=share"};
	bool wanted;

	(void)state;
	gs_slurm_conf_init(&c);
	assert_int_equal(gs_slurm_conf_parse(&c, 1, argv, NULL), GS_OK);
	assert_int_equal(gs_slurm_limits(&c, &rq, &g, &lim, &wanted, NULL),
	                 GS_OK);
	assert_int_equal(lim.mode, GS_REGION_COMPUTE_SHARE);
}

static void limits_compare_what_is_enforced(void **state)
{
	struct gs_slice_limits a, b;

	(void)state;
	gs_slice_limits_init(&a, "slurm-1");
	gs_slice_limits_init(&b, "slurm-2");
	a.mem_limit = b.mem_limit = 4 * GIB;
	b.flags = GS_SLICE_EPHEMERAL;
	assert_true(gs_slurm_limits_same(&a, &b));
	b.compute_pct = 30;
	assert_false(gs_slurm_limits_same(&a, &b));
	b.compute_pct = 0;
	b.priority = GS_REGION_PRIO_HIGH;
	assert_false(gs_slurm_limits_same(&a, &b));
}

static void slice_names_carry_the_job_and_step(void **state)
{
	char buf[64], step[16];

	(void)state;
	assert_int_equal(gs_slurm_slice_name(42, NULL, buf, sizeof(buf)), 8);
	assert_string_equal(buf, "slurm-42");
	gs_slurm_slice_name(42, gs_slurm_step_name(3, step, sizeof(step)), buf,
	                    sizeof(buf));
	assert_string_equal(buf, "slurm-42.3");
	assert_string_equal(gs_slurm_step_name(0xfffffffbu, step, sizeof(step)),
	                    "batch");
	assert_string_equal(gs_slurm_step_name(0xfffffffcu, step, sizeof(step)),
	                    "extern");
	assert_string_equal(gs_slurm_step_name(0xfffffffau, step, sizeof(step)),
	                    "interactive");
	gs_slurm_slice_name(4294967294u, "batch", buf, sizeof(buf));
	assert_string_equal(buf, "slurm-4294967294.batch");
	assert_true(strlen(buf) < GS_REGION_NAME_MAX);
}

static void a_job_owns_its_slices_and_no_other(void **state)
{
	static const struct {
		const char *name;
		uint32_t job;
		bool mine;
	} rows[] = {
	    {"slurm-42", 42, true},
	    {"slurm-42.0", 42, true},
	    {"slurm-42.batch", 42, true},
	    {"slurm-421", 42, false},
	    {"slurm-4", 42, false},
	    {"slurm-42.", 42, false},
	    {"slurm-42x", 42, false},
	    {"run-42", 42, false},
	    {"", 42, false},
	    {"xslurm-42", 42, false},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		assert_int_equal(
		    gs_slurm_slice_is_of_job(rows[i].name, rows[i].job),
		    rows[i].mine);
}

static void accounts_that_cannot_be_teams_are_told_apart(void **state)
{
	(void)state;
	assert_true(gs_slurm_team_is_valid("physics"));
	assert_true(gs_slurm_team_is_valid("ml-team_2.a"));
	assert_false(gs_slurm_team_is_valid(""));
	assert_false(gs_slurm_team_is_valid(NULL));
	assert_false(gs_slurm_team_is_valid("-lead"));
	assert_false(gs_slurm_team_is_valid("a b"));
	assert_false(gs_slurm_team_is_valid("a/b"));
	assert_true(gs_slurm_team_is_valid(
	    "a12345678901234567890123456789012345678901234567890123456789012"));
	assert_false(gs_slurm_team_is_valid("a123456789012345678901234567890123"
	                                    "456789012345678901234567890123"));
}

static void qos_table_parses_and_bad_entries_name_the_argument(void **state)
{
	struct gs_slurm_conf c;
	struct gs_errbuf eb = {0};
	char *good[] = {"qos_priority=gold:high,scavenger:low",
	                "qos_priority=Gold:normal"};
	static const struct {
		const char *arg;
		gs_err err;
		const char *msg;
	} bad[] = {
	    {"qos_priority=", GS_ERR_PARSE,
	     "plugstack argument qos_priority is empty (expected "
	     "QOS:PRIO[,QOS:PRIO...])"},
	    {"qos_priority=gold", GS_ERR_PARSE,
	     "plugstack argument qos_priority: 'gold' is not QOS:PRIO"},
	    {"qos_priority=:high", GS_ERR_PARSE,
	     "plugstack argument qos_priority: ':high' is not QOS:PRIO"},
	    {"qos_priority=gold:urgent", GS_ERR_PARSE,
	     "plugstack argument qos_priority: QOS 'gold': unknown priority "
	     "'urgent' (expected high|normal|low)"},
	    {"qos_priority=go ld:high", GS_ERR_PARSE,
	     "plugstack argument qos_priority: 'go ld' is not a QOS name"},
	    {"qos_priority=gold:high,", GS_ERR_PARSE,
	     "plugstack argument qos_priority ends with ','"},
	};
	int ceiling = -1;

	(void)state;
	gs_slurm_conf_init(&c);
	assert_int_equal(c.n_qos, 0);
	assert_int_equal(gs_slurm_conf_parse(&c, 2, good, &eb), GS_OK);
	/* "Gold" is gold again (Slurm keeps QOS names in lower case): the
	 * later entry wins, and nothing is listed twice. */
	assert_int_equal(c.n_qos, 2);
	gs_slurm_qos_ceiling(&c, "gold", &ceiling);
	assert_int_equal(ceiling, GS_PRIORITY_NORMAL);
	gs_slurm_qos_ceiling(&c, "scavenger", &ceiling);
	assert_int_equal(ceiling, GS_PRIORITY_LOW);
	gs_slurm_qos_ceiling(&c, "unlisted", &ceiling);
	assert_int_equal(ceiling, GS_PRIORITY_NORMAL);
	gs_slurm_qos_ceiling(&c, NULL, &ceiling);
	assert_int_equal(ceiling, GS_PRIORITY_NORMAL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = {(char *)bad[i].arg};
		struct gs_errbuf e = {0};

		gs_slurm_conf_init(&c);
		print_message("%s\n", bad[i].arg);
		assert_int_equal(gs_slurm_conf_parse(&c, 1, argv, &e),
		                 bad[i].err);
		assert_string_equal(e.msg, bad[i].msg);
	}
}

static void only_the_qos_table_gives_high_priority(void **state)
{
	static const struct {
		const char *what;
		const char *qos;
		int asked;
		gs_err err;
		uint32_t want_prio;
	} rows[] = {
	    {"no QOS, nothing asked: normal", NULL, -1, GS_OK, 1},
	    {"unlisted QOS, nothing asked: normal", "standard", -1, GS_OK, 1},
	    {"mapped to high, nothing asked: high", "gold", -1, GS_OK, 2},
	    {"mapped to high, case as Slurm may print it", "GOLD", -1, GS_OK,
	     2},
	    {"mapped to high, asks low: low", "gold", 0, GS_OK, 0},
	    {"mapped to low, nothing asked: low", "scavenger", -1, GS_OK, 0},
	    {"no QOS, asks high: refused", NULL, 2, GS_ERR_PERM, 0},
	    {"unlisted QOS, asks high: refused", "standard", 2, GS_ERR_PERM,
	     0},
	    {"mapped to low, asks normal: refused", "scavenger", 1,
	     GS_ERR_PERM, 0},
	    {"no QOS, asks low: low", NULL, 0, GS_OK, 0},
	};
	char *args[] = {"qos_priority=gold:high,scavenger:low"};
	struct gs_slurm_conf c;
	struct gs_slurm_gres g = {1, 0, 0, 0};

	(void)state;
	gs_slurm_conf_init(&c);
	assert_int_equal(gs_slurm_conf_parse(&c, 1, args, NULL), GS_OK);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gs_slurm_request rq;
		struct gs_slice_limits lim;
		struct gs_errbuf eb = {0};
		bool wanted = false;

		print_message("%s\n", rows[i].what);
		gs_slurm_request_init(&rq);
		rq.mem = GIB; /* a slice is wanted */
		rq.priority = rows[i].asked;
		assert_int_equal(gs_slurm_limits_qos(&c, &rq, &g, rows[i].qos,
		                                     &lim, &wanted, &eb),
		                 rows[i].err);
		if (rows[i].err != GS_OK) {
			assert_false(wanted);
			assert_non_null(strstr(eb.msg, "qos_priority="));
			continue;
		}
		assert_true(wanted);
		assert_int_equal(lim.priority, rows[i].want_prio);
	}
}

static void a_refused_priority_names_the_qos_and_its_ceiling(void **state)
{
	struct gs_slurm_conf c;
	struct gs_slurm_request rq;
	struct gs_slurm_gres g = {1, 0, 0, 0};
	struct gs_slice_limits lim;
	struct gs_errbuf eb = {0};
	bool wanted = false;

	(void)state;
	gs_slurm_conf_init(&c);
	gs_slurm_request_init(&rq);
	assert_int_equal(gs_slurm_request_set(&rq, GS_SLURM_OPT_PRIORITY,
	                                      "high", NULL),
	                 GS_OK);
	assert_int_equal(
	    gs_slurm_limits_qos(&c, &rq, &g, "normal", &lim, &wanted, &eb),
	    GS_ERR_PERM);
	assert_string_equal(
	    eb.msg, "--gpu-priority=high is above what QOS 'normal' allows "
	            "(normal; the administrator sets it with qos_priority= in "
	            "plugstack.conf)");
}

static void swap_option_parses_and_bad_values_name_it(void **state)
{
	struct gs_slurm_request rq;
	struct gs_errbuf eb = {0};

	(void)state;
	gs_slurm_request_init(&rq);
	assert_int_equal(rq.swap, -1);
	assert_false(gs_slurm_request_is_set(&rq));
	assert_int_equal(
	    gs_slurm_request_set(&rq, GS_SLURM_OPT_SWAP, "never", NULL),
	    GS_OK);
	assert_int_equal(rq.swap, GS_SWAP_NEVER);
	assert_true(gs_slurm_request_is_set(&rq));
	assert_int_equal(
	    gs_slurm_request_set(&rq, GS_SLURM_OPT_SWAP, "sometimes", &eb),
	    GS_ERR_PARSE);
	assert_int_equal(rq.swap, GS_SWAP_NEVER);
	assert_string_equal(eb.msg, "--gpuslice-swap: 'sometimes' not "
	                            "understood (expected allow|never)");
	assert_int_equal(
	    gs_slurm_request_set(&rq, GS_SLURM_OPT_SWAP, "allow", NULL),
	    GS_OK);
	assert_int_equal(rq.swap, GS_SWAP_ALLOW);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(options_parse_and_bad_values_name_the_option),
	    cmocka_unit_test(a_bad_value_leaves_the_earlier_one),
	    cmocka_unit_test(plugstack_arguments_parse_and_unknown_ones_fail),
	    cmocka_unit_test(gres_environment_reads_gpus_and_shards),
	    cmocka_unit_test(limits_follow_options_then_shards),
	    cmocka_unit_test(shards_without_a_count_say_what_to_configure),
	    cmocka_unit_test(compute_mode_comes_from_the_plugstack),
	    cmocka_unit_test(limits_compare_what_is_enforced),
	    cmocka_unit_test(slice_names_carry_the_job_and_step),
	    cmocka_unit_test(a_job_owns_its_slices_and_no_other),
	    cmocka_unit_test(accounts_that_cannot_be_teams_are_told_apart),
	    cmocka_unit_test(qos_table_parses_and_bad_entries_name_the_argument),
	    cmocka_unit_test(only_the_qos_table_gives_high_priority),
	    cmocka_unit_test(a_refused_priority_names_the_qos_and_its_ceiling),
	    cmocka_unit_test(swap_option_parses_and_bad_values_name_it),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
