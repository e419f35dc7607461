/* test_sim_mps_cmd.c - the MPS control command parser, from tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "mps_cmd.h"

struct good {
	const char *line;
	enum gs__mps_op op;
	uint32_t pid, client_pid, uid;
	double pct;
	uint64_t mib;
	const char *dev;
};

static const struct good goods[] = {
    {"quit", GS_MPS_QUIT, 0, 0, 0, 0, 0, NULL},
    {"  quit -t 5 \n", GS_MPS_QUIT, 0, 0, 0, 0, 0, NULL},
    {"get_server_list", GS_MPS_GET_SERVER_LIST, 0, 0, 0, 0, 0, NULL},
    {"get_server_status 42", GS_MPS_GET_SERVER_STATUS, 42, 0, 0, 0, 0, NULL},
    {"start_server -uid 1000", GS_MPS_START_SERVER, 0, 0, 1000, 0, 0, NULL},
    {"get_client_list 7", GS_MPS_GET_CLIENT_LIST, 7, 0, 0, 0, 0, NULL},
    {"get_device_client_list", GS_MPS_GET_DEVICE_CLIENT_LIST, 0, 0, 0, 0, 0,
     NULL},
    {"ps -p 9", GS_MPS_PS, 9, 0, 0, 0, 0, NULL},
    {"set_default_active_thread_percentage 33.3", GS_MPS_SET_DEFAULT_ATP, 0, 0,
     0, 33.3, 0, NULL},
    {"get_default_active_thread_percentage", GS_MPS_GET_DEFAULT_ATP, 0, 0, 0, 0,
     0, NULL},
    {"set_active_thread_percentage 12 50", GS_MPS_SET_ATP, 12, 0, 0, 50, 0,
     NULL},
    {"get_active_thread_percentage 12", GS_MPS_GET_ATP, 12, 0, 0, 0, 0, NULL},
    {"set_default_device_pinned_mem_limit 0 10G", GS_MPS_SET_DEFAULT_MEM, 0, 0,
     0, 0, 10240, "0"},
    {"set_default_device_pinned_mem_limit MIG-abc 4096M",
     GS_MPS_SET_DEFAULT_MEM, 0, 0, 0, 0, 4096, "MIG-abc"},
    {"get_default_device_pinned_mem_limit GPU-1", GS_MPS_GET_DEFAULT_MEM, 0, 0,
     0, 0, 0, "GPU-1"},
    {"set_device_pinned_mem_limit 5 1 2G", GS_MPS_SET_MEM, 5, 0, 0, 0, 2048,
     "1"},
    {"get_device_pinned_mem_limit 5 1", GS_MPS_GET_MEM, 5, 0, 0, 0, 0, "1"},
    {"terminate_client 5 77", GS_MPS_TERMINATE_CLIENT, 5, 77, 0, 0, 0, NULL},
    {"set_default_client_priority 1", GS_MPS_SET_DEFAULT_PRIO, 0, 0, 0, 0, 0,
     NULL},
    {"get_default_client_priority", GS_MPS_GET_DEFAULT_PRIO, 0, 0, 0, 0, 0,
     NULL},
};

static const char *const bads[] = {
    "",
    "   ",
    "bogus",
    "quit now",
    "get_server_list 1",
    "get_server_status",
    "get_server_status -3",
    "get_server_status 12x",
    "start_server 1000",
    "start_server -uid",
    "set_default_active_thread_percentage 101",
    "set_default_active_thread_percentage -1",
    "set_default_active_thread_percentage abc",
    "set_active_thread_percentage 50",
    "set_default_device_pinned_mem_limit 0 10",
    "set_default_device_pinned_mem_limit 0 10T",
    "set_default_device_pinned_mem_limit 0 0M",
    "set_default_device_pinned_mem_limit 0",
    "set_device_pinned_mem_limit 5 1",
    "terminate_client 5",
    "set_default_client_priority 2",
    "get_server_status 99999999999",
    "ps -x 1",
};

static void parser_accepts_every_documented_command(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(goods) / sizeof(goods[0]); i++) {
		const struct good *g = &goods[i];
		struct gs__mps_cmd c;
		char err[128];

		if (gs__mps_cmd_parse(g->line, &c, err, sizeof(err)) != 0)
			fail_msg("rejected '%s': %s", g->line, err);
		assert_int_equal(c.op, g->op);
		assert_int_equal(c.pid, g->pid);
		assert_int_equal(c.client_pid, g->client_pid);
		assert_int_equal(c.uid, g->uid);
		assert_true(c.percentage == g->pct);
		assert_int_equal(c.limit_mib, g->mib);
		if (g->dev != NULL)
			assert_string_equal(c.dev, g->dev);
	}
}

static void parser_rejects_malformed_commands_with_a_reason(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		struct gs__mps_cmd c;
		char err[128] = "";

		if (gs__mps_cmd_parse(bads[i], &c, err, sizeof(err)) == 0)
			fail_msg("accepted '%s'", bads[i]);
		assert_true(strlen(err) > 0);
	}
}

static void usage_error_names_the_synopsis(void **state)
{
	struct gs__mps_cmd c;
	char err[128];

	(void)state;
	assert_int_equal(
	    gs__mps_cmd_parse("start_server", &c, err, sizeof(err)), -1);
	assert_string_equal(err, "usage: start_server -uid <UID>");
	assert_int_equal(gs__mps_cmd_parse("nope 1", &c, err, sizeof(err)), -1);
	assert_string_equal(err, "Unrecognized command: nope");
	assert_string_equal(gs__mps_cmd_name(GS_MPS_TERMINATE_CLIENT),
	                    "terminate_client");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(parser_accepts_every_documented_command),
	    cmocka_unit_test(parser_rejects_malformed_commands_with_a_reason),
	    cmocka_unit_test(usage_error_names_the_synopsis),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
