/*
 * test_daemon_config.c - gpusliced's YAML configuration: every key read
 * into the struct, and bad input (unknown keys, wrong types, bad values)
 * refused with FILE:LINE, from a table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "config.h"
#include "store.h"

static gs_err load(struct gs_config *cfg, const char *text,
                   struct gs_errbuf *eb)
{
	gs_config_defaults(cfg, true, NULL, NULL);
	return gs_config_load_text(cfg, "test.yaml", text, strlen(text), eb);
}

static void priority_limits_are_read_for_users_and_teams(void **state)
{
	struct gs_config cfg;
	struct gs_errbuf eb = {0};
	const char *wp, *ww;
	int p, w;

	(void)state;
	assert_int_equal(load(&cfg,
	                      "watchdog:\n  action: auto\n"
	                      "quota:\n  default_user:\n    max_priority: low\n"
	                      "    max_weight: 3\n"
	                      "teams:\n  ml:\n    max_priority: high\n"
	                      "    max_weight: 50\n",
	                      &eb),
	                 GS_OK);
	assert_int_equal(cfg.watchdog_action, GS_WATCHDOG_AUTO);
	gs_config_team_limits(&cfg, "other", &p, &w, &wp, &ww);
	assert_int_equal(p, GS_PRIORITY_LOW);
	assert_int_equal(w, 3);
	assert_string_equal(wp, "quota.default_user.max_priority");
	gs_config_team_limits(&cfg, "ml", &p, &w, &wp, &ww);
	assert_int_equal(p, GS_PRIORITY_HIGH);
	assert_int_equal(w, 50);
	assert_string_equal(ww, "teams.<team>.max_weight");
	assert_int_equal(load(&cfg,
	                      "quota:\n  default_user:\n    max_priority: urgent\n",
	                      &eb),
	                 GS_ERR_INVALID);
}

static void defaults_are_documented_values(void **state)
{
	struct gs_config cfg;

	(void)state;
	gs_config_defaults(&cfg, true, NULL, NULL);
	assert_string_equal(cfg.socket, "/run/gpuslice/api.sock");
	assert_int_equal(cfg.default_mode, GS_MODE_AUTO);
	assert_int_equal(cfg.placement, GS_PLACE_FRAG);
	assert_int_equal(cfg.demand_half_life_s, 86400);
	/* #25: kill where slices belong to more than one owner */
	assert_int_equal(cfg.watchdog_action, GS_WATCHDOG_AUTO);
	assert_int_equal(cfg.watchdog_interval_ms, 1000);
	assert_int_equal(cfg.user_max_priority, GS_PRIORITY_NORMAL);
	assert_int_equal(cfg.user_max_weight, 10);
	assert_int_equal(cfg.synchronous, GS_STORE_SYNC_NORMAL);
	assert_string_equal(cfg.default_team, "default");
	assert_int_equal(cfg.prices.n, 1);
	gs_config_defaults(&cfg, false, "/run/user/1000", "/home/u");
	assert_string_equal(cfg.socket, "/run/user/1000/gpuslice/api.sock");
	assert_string_equal(cfg.state_dir, "/home/u/.local/state/gpuslice");
}

static void every_section_is_read(void **state)
{
	static const char text[] =
	    "# a full configuration\n"
	    "node:\n"
	    "  default_mode: mps\n"
	    "  timeslice: long\n"
	    "  placement: spread\n"
	    "  demand_half_life_s: 3600\n"
	    "  gpus: sim\n"
	    "  sim_model: A100-40GB\n"
	    "  sim_count: 4\n"
	    "  mig_on_real_gpu: true\n"
	    "  default_team: lab\n"
	    "  max_slices: 100\n"
	    "api:\n"
	    "  socket: /tmp/x.sock\n"
	    "  tcp: 127.0.0.1:7070\n"
	    "  token_file: /etc/token\n"
	    "  admin_group: ops\n"
	    "  max_body_bytes: 4096\n"
	    "  max_connections: 64\n"
	    "  max_connections_per_user: 4\n"
	    "  idle_timeout_s: 30\n"
	    "quota:\n"
	    "  default_user:\n"
	    "    max_slices: 8\n"
	    "    max_memory_percent: 25\n"
	    "store:\n"
	    "  synchronous: full\n"
	    "  events_keep: 5000\n"
	    "watchdog:\n"
	    "  interval_ms: 250\n"
	    "  action: kill\n"
	    "  grace: 64MiB\n"
	    "  context_allowance: 1GiB\n"
	    "ledger:\n"
	    "  interval_ms: 2000\n"
	    "mps:\n"
	    "  control: /opt/mps-control\n"
	    "log:\n"
	    "  level: debug\n"
	    "prices:\n"
	    "  currency: EUR\n"
	    "  rules:\n"
	    "    - {model: '*', mode: '*', per_gpu_second: 0.001, "
	    "per_gib_second: 0.00001}\n"
	    "    - {model: H100, mode: 'mig*', per_gpu_second: 3.6/h}\n"
	    "teams:\n"
	    "  lab:\n"
	    "    guarantee: {memory: 80GiB, compute: 200, mig: 7}\n"
	    "    max: {memory: unlimited, compute: 300%}\n"
	    "    members: [alice, bob]\n"
	    "  lab-a:\n"
	    "    parent: lab\n"
	    "    guarantee: {memory: 10GiB}\n";
	struct gs_config cfg;
	struct gs_errbuf eb = {0};

	(void)state;
	assert_int_equal(load(&cfg, text, &eb), GS_OK);
	assert_int_equal(cfg.default_mode, GS_MODE_MPS);
	assert_true(cfg.timeslice_set);
	assert_int_equal(cfg.timeslice_level, 3);
	assert_int_equal(cfg.placement, GS_PLACE_SPREAD);
	assert_int_equal(cfg.demand_half_life_s, 3600);
	assert_int_equal(cfg.gpus, GS_GPUS_SIM);
	assert_string_equal(cfg.sim_model, "A100-SXM4-40GB");
	assert_int_equal(cfg.sim_count, 4);
	assert_true(cfg.mig_on_real_gpu);
	assert_string_equal(cfg.default_team, "lab");
	assert_int_equal(cfg.max_slices, 100);
	assert_string_equal(cfg.socket, "/tmp/x.sock");
	assert_string_equal(cfg.tcp, "127.0.0.1:7070");
	assert_string_equal(cfg.admin_group, "ops");
	assert_int_equal(cfg.max_body_bytes, 4096);
	assert_int_equal(cfg.max_connections, 64);
	assert_int_equal(cfg.max_connections_per_user, 4);
	assert_int_equal(cfg.idle_timeout_s, 30);
	assert_int_equal(cfg.user_max_slices, 8);
	assert_int_equal(cfg.user_max_memory_percent, 25);
	assert_int_equal(cfg.synchronous, GS_STORE_SYNC_FULL);
	assert_int_equal(cfg.events_keep, 5000);
	assert_int_equal(cfg.watchdog_interval_ms, 250);
	assert_int_equal(cfg.watchdog_action, GS_WATCHDOG_KILL);
	assert_int_equal(cfg.watchdog_grace_bytes, 64ull << 20);
	assert_int_equal(cfg.watchdog_context_bytes, 1ull << 30);
	assert_int_equal(cfg.ledger_interval_ms, 2000);
	assert_string_equal(cfg.mps_control, "/opt/mps-control");
	assert_int_equal(cfg.log_level, 0);
	assert_string_equal(cfg.currency, "EUR");
	assert_int_equal(cfg.prices.n, 2);
	assert_true(cfg.prices.rule[1].per_gpu_second > 0.00099 &&
	            cfg.prices.rule[1].per_gpu_second < 0.00101);
	assert_int_equal(cfg.n_teams, 2);
	assert_string_equal(cfg.teams[0].name, "lab");
	assert_int_equal(cfg.teams[0].guarantee.v[GS_QRES_MEMORY], 80ll << 30);
	assert_int_equal(cfg.teams[0].guarantee.v[GS_QRES_MIG], 7);
	assert_int_equal(cfg.teams[0].max.v[GS_QRES_MEMORY],
	                 GS_QUOTA_UNLIMITED);
	assert_int_equal(cfg.teams[0].max.v[GS_QRES_COMPUTE], 300);
	assert_int_equal(cfg.teams[0].max.v[GS_QRES_MIG], GS_QUOTA_UNLIMITED);
	assert_true(cfg.teams[0].from_config);
	assert_string_equal(cfg.teams[1].parent, "lab");
	assert_string_equal(gs_config_user_team(&cfg, "bob"), "lab");
	assert_null(gs_config_user_team(&cfg, "carol"));
}

static void empty_file_keeps_defaults(void **state)
{
	struct gs_config cfg;
	struct gs_errbuf eb = {0};

	(void)state;
	assert_int_equal(load(&cfg, "", &eb), GS_OK);
	assert_int_equal(load(&cfg, "# nothing\n", &eb), GS_OK);
	assert_int_equal(cfg.watchdog_interval_ms, 1000);
}

static const struct {
	const char *text;
	gs_err err;
	const char *msg; /* substring of the error */
} bad[] = {
    {"nodes:\n  x: 1\n", GS_ERR_INVALID, "test.yaml:1: unknown key 'nodes'"},
    {"node:\n  default_mode: mps\n  colour: red\n", GS_ERR_INVALID,
     "test.yaml:3: unknown key 'colour' in node"},
    {"node:\n  default_mode: fast\n", GS_ERR_PARSE,
     "test.yaml:2: default_mode: unknown mode 'fast'"},
    {"node:\n  timeslice: 7\n", GS_ERR_INVALID,
     "timeslice must be default|short|medium|long|unset"},
    {"node:\n  placement: random\n", GS_ERR_PARSE, "test.yaml:2"},
    {"node:\n  sim_model: Voodoo2\n", GS_ERR_UNKNOWN_MODEL, "Voodoo2"},
    {"node:\n  sim_count: 0\n", GS_ERR_RANGE, "sim_count must be 1..16"},
    {"node:\n  mig_on_real_gpu: maybe\n", GS_ERR_PARSE, "true or false"},
    {"node: [1, 2]\n", GS_ERR_PARSE, "node must be a mapping"},
    {"node:\n  default_team: 'bad name'\n", GS_ERR_INVALID, "valid name"},
    {"api:\n  tcp: nowhere\n", GS_ERR_INVALID, "host:port"},
    {"api:\n  max_body_bytes: 12\n", GS_ERR_RANGE, "test.yaml:2"},
    {"api:\n  socket: [a]\n", GS_ERR_PARSE, "single value"},
    {"api:\n  max_connections_per_user: -1\n", GS_ERR_RANGE,
     "test.yaml:2: max_connections_per_user must be 0..4096"},
    {"api:\n  idle_timeout_s: 0\n", GS_ERR_RANGE,
     "test.yaml:2: idle_timeout_s must be 1..3600"},
    {"quota:\n  default_user:\n    max_slices: many\n", GS_ERR_PARSE,
     "test.yaml:3: max_slices: 'many' is not a whole number"},
    {"quota:\n  default_user:\n    max_memory_percent: 0\n", GS_ERR_RANGE,
     "max_memory_percent must be 1..100"},
    {"quota:\n  users: {}\n", GS_ERR_INVALID, "unknown key 'users'"},
    {"store:\n  synchronous: off\n", GS_ERR_INVALID, "full|normal"},
    {"watchdog:\n  action: shoot\n", GS_ERR_INVALID, "flag|kill"},
    {"watchdog:\n  grace: lots\n", GS_ERR_PARSE, "grace"},
    {"watchdog:\n  interval_ms: 1.5\n", GS_ERR_PARSE, "whole number"},
    {"log:\n  level: loud\n", GS_ERR_INVALID, "test.yaml:2"},
    {"prices:\n  rules:\n    - {model: '*', per_gpu_second: -1}\n",
     GS_ERR_RANGE, "test.yaml:3"},
    {"prices:\n  rules:\n    - {model: '*', cost: 1}\n", GS_ERR_INVALID,
     "unknown key 'cost'"},
    {"prices:\n  rules: {a: 1}\n", GS_ERR_PARSE, "list of rules"},
    {"teams:\n  a:\n    guarantee: {memory: 1GiB, gpus: 2}\n", GS_ERR_INVALID,
     "test.yaml:3: unknown key 'gpus'"},
    {"teams:\n  a:\n    guarantee: {memory: huge}\n", GS_ERR_PARSE, "memory"},
    {"teams:\n  a:\n    guarantee: {compute: -5}\n", GS_ERR_RANGE,
     "test.yaml:3"},
    {"teams:\n  'x y': {}\n", GS_ERR_INVALID, "valid team name"},
    {"teams:\n  a:\n    members: [u]\n  b:\n    members: [u]\n", GS_ERR_INVALID,
     "user 'u' is a member of both"},
    {"teams:\n  a:\n    members: u\n", GS_ERR_PARSE, "list of users"},
    {"node:\n  default_mode: mps\n   bad indent: 1\n", GS_ERR_PARSE,
     "test.yaml:"},
    {"- a\n- b\n", GS_ERR_PARSE, "the top level must be a mapping"},
};

static void bad_input_is_refused_with_file_and_line(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gs_config cfg;
		struct gs_errbuf eb = {0};
		gs_err err = load(&cfg, bad[i].text, &eb);

		if (err != bad[i].err || strstr(eb.msg, bad[i].msg) == NULL)
			fail_msg("case %zu (%s): got %s '%s', want %s '%s'", i,
			         bad[i].text, gs_err_name(err), eb.msg,
			         gs_err_name(bad[i].err), bad[i].msg);
	}
}

static void team_trees_are_checked_as_quotas(void **state)
{
	struct gs_config cfg;
	struct gs_errbuf eb = {0};

	(void)state;
	assert_int_equal(load(&cfg,
			      "teams:\n  a:\n    guarantee: {memory: 10GiB}\n"
			      "    max: {memory: 5GiB}\n",
			      &eb),
			 GS_OK);
	assert_int_equal(gs_config_check_teams(&cfg, &eb), GS_ERR_RANGE);
	assert_non_null(strstr(eb.msg, "team a"));
	gs_errbuf_init(&eb);
	assert_int_equal(load(&cfg,
			      "teams:\n  a: {parent: b}\n  b: {parent: a}\n",
			      &eb),
			 GS_OK);
	assert_int_equal(gs_config_check_teams(&cfg, &eb), GS_ERR_INVALID);
	assert_non_null(strstr(eb.msg, "cycle"));
	gs_errbuf_init(&eb);
	assert_int_equal(load(&cfg, "teams:\n  a: {parent: nobody}\n", &eb),
			 GS_OK);
	assert_int_equal(gs_config_check_teams(&cfg, &eb), GS_ERR_NOT_FOUND);
}

static void missing_file_is_not_found(void **state)
{
	struct gs_config cfg;
	struct gs_errbuf eb = {0};

	(void)state;
	gs_config_defaults(&cfg, true, NULL, NULL);
	assert_int_equal(
	    gs_config_load(&cfg, "/nonexistent/gpusliced.yaml", &eb),
	    GS_ERR_NOT_FOUND);
	assert_non_null(strstr(eb.msg, "/nonexistent/gpusliced.yaml"));
}

static void example_config_in_the_repo_loads(void **state)
{
	struct gs_config cfg;
	struct gs_errbuf eb = {0};
	gs_err err;

	(void)state;
	gs_config_defaults(&cfg, true, NULL, NULL);
	err = gs_config_load(
	    &cfg, GS_SOURCE_DIR "/daemon/gpusliced.example.yaml", &eb);
	if (err)
		fail_msg("example config: %s", eb.msg);
	assert_true(cfg.n_teams > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(defaults_are_documented_values),
	    cmocka_unit_test(priority_limits_are_read_for_users_and_teams),
	    cmocka_unit_test(every_section_is_read),
	    cmocka_unit_test(empty_file_keeps_defaults),
	    cmocka_unit_test(bad_input_is_refused_with_file_and_line),
	    cmocka_unit_test(team_trees_are_checked_as_quotas),
	    cmocka_unit_test(missing_file_is_not_found),
	    cmocka_unit_test(example_config_in_the_repo_loads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
