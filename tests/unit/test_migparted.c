/*
 * test_migparted.c - mig-parted config files: a table of small YAML
 * documents, each with the expected result of parsing and of resolving
 * one config on one model (the layout, or the exact message).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/migparted.h"

#define HDR "version: v1\nmig-configs:\n"

static const struct {
	const char *yaml;
	const char *config, *model;
	gs_err err;
	const char *want; /* "profile@start ..." per entry joined by " | ",
	                     "off" for a disabled entry; or the message */
} rows[] = {
    {HDR "  balanced:\n    - devices: all\n      mig-enabled: true\n"
         "      mig-devices:\n        \"1g.10gb\": 2\n        \"2g.20gb\": 1\n"
         "        \"3g.40gb\": 1\n",
     "balanced", "H100", GS_OK, "1g.10gb@0 1g.10gb@1 2g.20gb@2 3g.40gb@4"},
    {HDR "  off:\n    - devices: all\n      mig-enabled: false\n", "off", "A30",
     GS_OK, "off"},
    {HDR "  empty:\n    - devices: all\n      mig-enabled: true\n"
         "      mig-devices: {}\n",
     "empty", "A100-40GB", GS_OK, ""},
    {HDR "  split:\n    - devices: all\n      mig-enabled: yes\n"
         "      mig-devices:\n        1c.3g.20gb: 3\n        3g.20gb: 1\n",
     "split", "A100-40GB", GS_OK, "3g.20gb@0 3g.20gb@4"},
    {HDR "  mixed:\n    - devices: [0, 1]\n      mig-enabled: false\n"
         "    - devices: [2]\n      mig-enabled: true\n"
         "      mig-devices: {\"4g.20gb\": 1, \"2g.10gb\": 1, \"1g.5gb\": 1}\n",
     "mixed", "A100-SXM4-40GB", GS_OK, "off | 4g.20gb@0 2g.10gb@4 1g.5gb@6"},
    {HDR "  per-model:\n"
         "    - device-filter: [\"0x20B010DE\", \"0x20B110DE\"]\n"
         "      devices: all\n      mig-enabled: true\n"
         "      mig-devices: {\"1g.5gb\": 7}\n"
         "    - device-filter: \"0x233010DE\"\n"
         "      devices: all\n      mig-enabled: true\n"
         "      mig-devices: {\"1g.10gb+me\": 1, \"1g.20gb\": 2}\n",
     "per-model", "H100", GS_OK, "1g.10gb+me@0 1g.20gb@2 1g.20gb@4"},
    {HDR "  sub:\n    - device-filter: \"0x233010DE:0x16C110DE\"\n"
         "      devices: all\n      mig-enabled: true\n"
         "      mig-devices: {\"7g.80gb\": 1}\n",
     "sub", "H100", GS_OK, "7g.80gb@0"},
    {"{\"version\": \"v1\", \"mig-configs\": {\"j\": [{\"devices\": \"all\", "
     "\"mig-enabled\": true, \"mig-devices\": {\"2g.12gb\": 2}}]}}",
     "j", "A30", GS_OK, "2g.12gb@0 2g.12gb@2"},
    /* Errors found against the model. */
    {HDR "  per-model:\n    - device-filter: \"0x20B010DE\"\n"
         "      devices: all\n      mig-enabled: false\n",
     "per-model", "H100", GS_ERR_NOT_FOUND,
     "config 'per-model' has no entry for H100-SXM5-80GB (every entry's "
     "device-filter leaves it out)"},
    {HDR "  c:\n    - devices: all\n      mig-enabled: true\n"
         "      mig-devices: {\"1g.5gb\": 1}\n",
     "c", "H100", GS_ERR_UNKNOWN_PROFILE,
     "config 'c' entry 1 (line 6): profile '1g.5gb' is not on "
     "H100-SXM5-80GB"},
    {HDR "  c:\n    - devices: all\n      mig-enabled: true\n"
         "      mig-devices: {\"1g.10gb\": 8}\n",
     "c", "H100", GS_ERR_NO_FIT,
     "config 'c' entry 1 (line 4): too many instances: 1g.10gb x8, "
     "H100-SXM5-80GB holds at most 7"},
    {HDR "  c:\n    - devices: all\n      mig-enabled: true\n"
         "      mig-devices: {\"1g.10gb\": 6, \"2g.20gb\": 2}\n",
     "c", "H100", GS_ERR_NO_FIT,
     "config 'c' entry 1 (line 4): too many instances: 8 in all, "
     "H100-SXM5-80GB holds at most 7"},
    {HDR "  c:\n    - devices: all\n      mig-enabled: true\n"
         "      mig-devices: {\"3g.40gb\": 2, \"4g.40gb\": 1}\n",
     "c", "H100", GS_ERR_NO_FIT,
     "config 'c' entry 1 (line 4): no valid placement for 3g.40gb x2 + "
     "4g.40gb x1 on H100-SXM5-80GB"},
    {HDR "  c:\n    - devices: all\n      mig-enabled: true\n"
         "      mig-devices: {\"4c.3g.40gb\": 1}\n",
     "c", "H100", GS_ERR_UNKNOWN_PROFILE,
     "config 'c' entry 1 (line 6): 4c.3g.40gb: the compute instance is "
     "larger than its GPU instance"},
    /* Errors found while parsing. */
    {"version: v2\nmig-configs: {}\n", NULL, NULL, GS_ERR_PARSE,
     "line 1: unknown version 'v2' (must be v1)"},
    {"mig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n", NULL,
     NULL, GS_ERR_PARSE, "missing 'version' (must be v1)"},
    {"version: v1\n", NULL, NULL, GS_ERR_PARSE, "missing 'mig-configs'"},
    {"version: v1\nmig-configs: {}\n", NULL, NULL, GS_ERR_PARSE,
     "line 2: mig-configs holds no config"},
    {"version: v1\nmig-config: {}\n", NULL, NULL, GS_ERR_PARSE,
     "line 2: unexpected field 'mig-config' at the top (expected "
     "version, mig-configs)"},
    {HDR "  a: []\n", NULL, NULL, GS_ERR_PARSE,
     "line 3: config 'a' has no entries"},
    {HDR "  a:\n    - devices: all\n      mig-enable: false\n", NULL, NULL,
     GS_ERR_PARSE,
     "line 5: unexpected field 'mig-enable' in a config entry (expected "
     "devices, mig-enabled, mig-devices, device-filter)"},
    {HDR "  a:\n    - mig-enabled: false\n", NULL, NULL, GS_ERR_PARSE,
     "line 4: config entry lacks 'devices'"},
    {HDR "  a:\n    - devices: all\n", NULL, NULL, GS_ERR_PARSE,
     "line 4: config entry lacks 'mig-enabled'"},
    {HDR "  a:\n    - devices: some\n      mig-enabled: false\n", NULL, NULL,
     GS_ERR_PARSE, "line 4: devices must be 'all' or a list of GPU indices"},
    {HDR "  a:\n    - devices: [0, \"1\"]\n      mig-enabled: false\n", NULL,
     NULL, GS_ERR_PARSE,
     "line 4: devices list items must be GPU indices 0..1023, got '1'"},
    {HDR "  a:\n    - devices: all\n      mig-enabled: maybe\n", NULL, NULL,
     GS_ERR_PARSE, "line 5: mig-enabled must be true or false"},
    {HDR "  a:\n    - devices: all\n      mig-enabled: true\n", NULL, NULL,
     GS_ERR_PARSE,
     "line 4: mig-enabled is true but mig-devices is missing (write {} for "
     "no instances)"},
    {HDR "  a:\n    - devices: all\n      mig-enabled: false\n"
         "      mig-devices: {\"1g.5gb\": 1}\n",
     NULL, NULL, GS_ERR_PARSE,
     "line 6: mig-enabled is false but mig-devices lists instances"},
    {HDR "  a:\n    - devices: all\n      mig-enabled: true\n"
         "      mig-devices: {\"1g.5gb\": 0}\n",
     NULL, NULL, GS_ERR_PARSE,
     "line 6: mig-devices needs at least one count above 0 (or write {})"},
    {HDR "  a:\n    - devices: all\n      mig-enabled: true\n"
         "      mig-devices: {\"1g.5gb\": -1}\n",
     NULL, NULL, GS_ERR_PARSE,
     "line 6: count for 1g.5gb must be a whole number >= 0, got '-1'"},
    {HDR "  a:\n    - devices: all\n      mig-enabled: true\n"
         "      mig-devices: {\"big\": 1}\n",
     NULL, NULL, GS_ERR_PARSE,
     "line 6: 'big' is not a MIG profile (expected e.g. 1g.10gb, "
     "1c.3g.20gb, 1g.5gb+me)"},
    {HDR "  a:\n    - device-filter: \"A100\"\n      devices: all\n"
         "      mig-enabled: false\n",
     NULL, NULL, GS_ERR_PARSE,
     "line 4: device-filter 'A100' is not a PCI id (expected 0xDDDDVVVV "
     "or 0xDDDDVVVV:0xSSSSssss)"},
    {HDR "  a:\n    - devices: all\n      mig-enabled: false\n"
         "  a:\n    - devices: all\n      mig-enabled: false\n",
     NULL, NULL, GS_ERR_PARSE, "line 6: key 'a' appears twice"},
    {"version: v1\nmig-configs: [\n", NULL, NULL, GS_ERR_PARSE, NULL},
    {"", NULL, NULL, GS_ERR_PARSE, "the file is empty"},
    {"- 1\n", NULL, NULL, GS_ERR_PARSE,
     "line 1: the file must be a mapping with version and mig-configs"},
};

static void layout_text(const struct gs_migparted_resolved *r, int n, char *buf,
                        size_t size)
{
	size_t k = 0;

	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (i)
			k += (size_t)snprintf(buf + k, size - k, " | ");
		if (!r[i].mig_enabled) {
			k += (size_t)snprintf(buf + k, size - k, "off");
			continue;
		}
		for (int j = 0; j < r[i].plan.n_layout; j++)
			k += (size_t)snprintf(buf + k, size - k, "%s%s@%d",
			                      j ? " " : "",
			                      r[i].plan.layout[j].profile->name,
			                      r[i].plan.layout[j].start);
	}
}

static void configs_parse_and_resolve_as_tabled(void **state)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gs_migparted *cfg = NULL;
		struct gs_errbuf eb = {0};
		struct gs_migparted_resolved *res;
		char got[256];
		int n = 0;
		gs_err err;

		err = gs_migparted_parse(rows[i].yaml, strlen(rows[i].yaml),
		                         &cfg, &eb);
		if (err == GS_OK && rows[i].config) {
			res = calloc(GS_MIGPARTED_MAX_RESOLVED, sizeof(*res));
			assert_non_null(res);
			err = gs_migparted_resolve(
			    gs_migparted_find(cfg, rows[i].config),
			    gs_catalog_find(rows[i].model), res, &n, &eb);
			if (err == GS_OK) {
				layout_text(res, n, got, sizeof(got));
				if (strcmp(got, rows[i].want) != 0)
					fail_msg("row %zu: got '%s'", i, got);
			}
			free(res);
		}
		gs_migparted_destroy(cfg);
		if (err != rows[i].err)
			fail_msg("row %zu: got %s (%s)", i, gs_err_name(err),
			         eb.msg);
		if (err != GS_OK && rows[i].want)
			assert_string_equal(eb.msg, rows[i].want);
	}
}

static void oversized_input_is_refused(void **state)
{
	size_t len = GS_MIGPARTED_MAX_BYTES + 1;
	char *big = malloc(len);
	struct gs_migparted *cfg;
	struct gs_errbuf eb = {0};

	assert_non_null(big);
	memset(big, ' ', len);
	assert_int_equal(gs_migparted_parse(big, len, &cfg, &eb), GS_ERR_RANGE);
	assert_null(cfg);
	free(big);
	gs_migparted_destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(configs_parse_and_resolve_as_tabled),
	    cmocka_unit_test(oversized_input_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
