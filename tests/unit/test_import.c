/*
 * test_import.c - the device-plugin and DRA importers, from YAML text
 * through core's YAML reader (gs/yamldoc.h, libyaml) to the translation,
 * and the reader and the quantity parser on their own. Errors are tested
 * from tables: the text, the code, the exact message with its line.
 * GS_IMPORT_DATA is tests/data/import (passed by CMake).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/import.h"
#include "gs/yamldoc.h"

#define MIB (1024ULL * 1024)
#define GIB (1024ULL * MIB)

static struct gs_doc *parse(const char *text)
{
	struct gs_doc *doc = NULL;
	struct gs_errbuf eb = {0};

	if (gs_yamldoc_parse(text, strlen(text), "t.yaml", &doc, &eb) != GS_OK)
		fail_msg("YAML: %s", eb.msg);
	return doc;
}

/* ---- quantities and the reader ------------------------------------------ */

static void k8s_quantities_parse_like_kubernetes(void **state)
{
	static const struct {
		const char *text;
		uint64_t bytes;
	} ok[] = {
	    {"10Gi", 10 * GIB},     {"512Mi", 512 * MIB},
	    {"1G", 1000000000ULL},  {"1.5Gi", 3 * GIB / 2},
	    {"1e9", 1000000000ULL}, {"100", 100},
	    {"2Ti", 2048 * GIB},    {"1500m", 1},
	    {"0.5Ki", 512},         {"3P", 3000000000000000ULL},
	};
	static const char *const bad[] = {"",        "Gi",   "10GB", "ten",
	                                  "1.2.3Gi", "-1Gi", "1e99"};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint64_t b = 0;

		if (gs_parse_k8s_quantity(ok[i].text, &b, NULL) != GS_OK ||
		    b != ok[i].bytes)
			fail_msg("%s: got %llu", ok[i].text,
			         (unsigned long long)b);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t b;

		if (gs_parse_k8s_quantity(bad[i], &b, NULL) == GS_OK)
			fail_msg("'%s' should not parse", bad[i]);
	}
}

static void reader_splits_documents_and_keeps_lines(void **state)
{
	struct gs_doc *doc = parse("# c\n---\na: 1\nb:\n  - x\n  - 'y'\n---\n"
	                           "# only a comment\n---\nc: ~\n");

	assert_int_equal(gs_doc_count(doc), 2);
	assert_int_equal(gs_doc_root(doc, 0)->line, 3);
	assert_int_equal(gs_doc_get(gs_doc_root(doc, 0), "b")->n, 2);
	assert_true(gs_doc_get(gs_doc_root(doc, 0), "b")->kids[1]->quoted);
	assert_int_equal(gs_doc_get(gs_doc_root(doc, 0), "b")->kids[1]->line,
	                 6);
	assert_string_equal(gs_doc_get(gs_doc_root(doc, 1), "c")->value, "~");
	gs_doc_destroy(doc);
}

static void reader_refuses_aliases_duplicates_and_bad_yaml(void **state)
{
	static const struct {
		const char *text;
		gs_err err;
		const char *msg;
	} cases[] = {
	    {"a: &x 1\nb: *x\n", GS_ERR_PARSE,
	     "t.yaml:2: YAML aliases (*name) are not supported"},
	    {"a: 1\nb: 2\na: 3\n", GS_ERR_PARSE,
	     "t.yaml:3: key 'a' appears twice"},
	    {"a: [1, 2\n", GS_ERR_PARSE,
	     "t.yaml:2: did not find expected ',' or ']' while parsing a "
	     "flow sequence"},
	    {"? [a]\n: 1\n", GS_ERR_PARSE,
	     "t.yaml:1: a mapping key must be a plain value"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gs_doc *doc = (void *)1;
		struct gs_errbuf eb = {0};
		gs_err err = gs_yamldoc_parse(
		    cases[i].text, strlen(cases[i].text), "t.yaml", &doc, &eb);

		if (err != cases[i].err || strcmp(eb.msg, cases[i].msg) != 0)
			fail_msg("case %zu: %s '%s'", i, gs_err_name(err),
			         eb.msg);
		assert_null(doc);
	}
}

static void reader_caps_nesting(void **state)
{
	char text[400];
	struct gs_doc *doc = NULL;
	struct gs_errbuf eb = {0};
	size_t n = 0;

	for (int i = 0; i < 70; i++)
		text[n++] = '[';
	text[n] = '\0';
	assert_int_equal(gs_yamldoc_parse(text, n, "t.yaml", &doc, &eb),
	                 GS_ERR_RANGE);
	assert_string_equal(eb.msg, "t.yaml:1: nesting is deeper than 64 "
	                            "levels");
}

/* ---- device plugin --------------------------------------------------------
 */

static gs_err dp(const char *text, const char *gpu, int gpus,
                 struct gs_dp_import *out, struct gs_errbuf *eb)
{
	struct gs_import_opts opts = {.gpu = gpu ? gs_catalog_find(gpu) : NULL,
	                              .gpus = gpus};
	struct gs_doc *doc = parse(text);
	gs_err err = gs_import_device_plugin(doc, &opts, out, eb);

	gs_doc_destroy(doc);
	return err;
}

static void mps_replicas_divide_threads_and_memory_like_the_plugin(void **s)
{
	struct gs_dp_import *im = malloc(sizeof(*im));
	struct gs_errbuf eb = {0};
	const struct gs_dp_resource *r;

	assert_int_equal(dp("version: v1\nflags:\n  mpsRoot: /run/mps\n"
	                    "sharing:\n  mps:\n    renameByDefault: true\n"
	                    "    resources:\n      - name: nvidia.com/gpu\n"
	                    "        replicas: 3\n",
	                    "H100", 8, im, &eb),
	                 GS_OK);
	assert_int_equal(im->n_configs, 1);
	assert_int_equal(im->config[0].strategy, GS_DP_MPS);
	assert_true(im->config[0].fail_requests_greater_than_one);
	r = &im->config[0].res[0];
	assert_string_equal(r->name, "nvidia.com/gpu.shared");
	assert_int_equal(r->replicas, 3);
	assert_int_equal(r->slice.mode, GS_MODE_MPS);
	assert_int_equal(r->slice.compute_pct, 33);
	/* H100-SXM5-80GB: the catalog's NVML total, floor(total / 3) MiB */
	assert_int_equal(r->slice.memory_bytes,
	                 gs_catalog_find("H100")->memory_mib / 3 * MIB);
	assert_int_equal(r->total, 24);
	assert_string_equal(r->slice.gpu.model, "H100-SXM5-80GB");
	free(im);
}

static void time_slicing_replicas_have_no_limits(void **state)
{
	struct gs_dp_import *im = malloc(sizeof(*im));
	struct gs_errbuf eb = {0};
	const struct gs_dp_config *c;

	assert_int_equal(
	    dp("version: v1\nflags:\n  migStrategy: mixed\n"
	       "sharing:\n  timeSlicing:\n    resources:\n"
	       "      - name: gpu\n        replicas: 4\n"
	       "      - name: mig-1g.10gb.me\n        replicas: 2\n",
	       NULL, 0, im, &eb),
	    GS_OK);
	c = &im->config[0];
	assert_int_equal(c->strategy, GS_DP_TIME_SLICING);
	assert_false(c->fail_requests_greater_than_one);
	assert_string_equal(c->res[0].name, "nvidia.com/gpu");
	assert_int_equal(c->res[0].slice.mode, GS_MODE_TIMESLICE);
	assert_int_equal(c->res[0].slice.memory_bytes, 0);
	assert_int_equal(c->res[0].slice.compute_pct, 0);
	assert_true(c->res[1].mig);
	assert_string_equal(c->res[1].slice.mig_profile, "1g.10gb+me");
	assert_int_equal(c->res[1].slice.mode, GS_MODE_MIG_TIMESLICE);
	free(im);
}

static void reference_example_reads_as_five_configs(void **state)
{
	char path[512], *text;
	struct gs_dp_import *im = malloc(sizeof(*im));
	struct gs_errbuf eb = {0};
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/device-plugin-example.yaml",
	         GS_IMPORT_DATA);
	f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	text = calloc(1, (size_t)n + 1);
	assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	assert_int_equal(dp(text, "H100", 0, im, &eb), GS_OK);
	assert_int_equal(im->n_configs, 5);
	assert_int_equal(im->config[0].strategy, GS_DP_NONE);
	assert_int_equal(im->config[1].strategy, GS_DP_TIME_SLICING);
	assert_int_equal(im->config[2].res[1].replicas, 3);
	assert_string_equal(im->config[2].res[1].name,
	                    "nvidia.com/mig-3g.40gb.shared");
	assert_int_equal(im->config[3].strategy, GS_DP_MPS);
	assert_int_equal(im->config[3].res[0].slice.compute_pct, 10);
	assert_int_equal(im->config[3].res[0].slice.memory_bytes, 8155 * MIB);
	/* the ignored fields of config 5 are noted, not refused */
	assert_true(im->config[4].notes.n >= 3);
	free(text);
	free(im);
}

struct bad {
	const char *text;
	gs_err err;
	const char *msg;
};

static void device_plugin_errors_name_the_line_and_field(void **state)
{
	static const struct bad cases[] = {
	    {"version: v2\n", GS_ERR_INVALID,
	     "t.yaml:1: unsupported version 'v2' (the plugin reads v1)"},
	    {"version: v1\nsharin: {}\n", GS_ERR_PARSE,
	     "t.yaml:2: unknown field 'sharin' in the config (did you mean "
	     "sharing?)"},
	    {"version: v1\nplugin: {}\n", GS_ERR_PARSE,
	     "t.yaml:2: unknown field 'plugin' in the config (expected: "
	     "version, flags, resources, sharing, imex)"},
	    {"flags:\n  migStrategy: some\n", GS_ERR_INVALID,
	     "t.yaml:2: flags.migStrategy must be none|single|mixed, got "
	     "'some'"},
	    {"flags:\n  failOnInitError: \"true\"\n", GS_ERR_PARSE,
	     "t.yaml:2: flags.failOnInitError must be true or false, got "
	     "the string 'true' (remove the quotes)"},
	    {"flags:\n  plugin:\n    deviceListStrategy: [envvar, cdi]\n",
	     GS_ERR_INVALID,
	     "t.yaml:3: flags.plugin.deviceListStrategy[1] must be envvar|"
	     "volume-mounts|cdi-annotations|cdi-cri, got 'cdi'"},
	    {"sharing:\n  timeSlicing:\n    resources: []\n", GS_ERR_INVALID,
	     "t.yaml:3: sharing.timeSlicing.resources must not be empty"},
	    {"sharing:\n  timeSlicing:\n    resources:\n      - replicas: 2\n",
	     GS_ERR_INVALID,
	     "t.yaml:4: sharing.timeSlicing.resources[0].name is required"},
	    {"sharing:\n  timeSlicing:\n    resources:\n      - name: gpu\n"
	     "        replicas: two\n",
	     GS_ERR_PARSE,
	     "t.yaml:5: sharing.timeSlicing.resources[0].replicas must be "
	     "a whole number, got 'two'"},
	    {"sharing:\n  timeSlicing:\n    resources:\n      - name: gpu\n"
	     "        replicas: 1\n",
	     GS_ERR_RANGE,
	     "t.yaml:5: sharing.timeSlicing.resources[0].replicas must be "
	     "at least 2, got 1 (the plugin refuses fewer)"},
	    {"sharing:\n  timeSlicing:\n    resources:\n      - name: tpu\n"
	     "        replicas: 2\n",
	     GS_ERR_INVALID,
	     "t.yaml:4: sharing.timeSlicing.resources[0].name: unknown "
	     "resource 'nvidia.com/tpu' (expected nvidia.com/gpu or "
	     "nvidia.com/mig-<profile>)"},
	    {"sharing:\n  timeSlicing:\n    resources:\n      - name: gpu\n"
	     "        replicas: 2\n      - name: nvidia.com/gpu\n"
	     "        replicas: 3\n",
	     GS_ERR_INVALID,
	     "t.yaml:6: sharing.timeSlicing.resources[1]: nvidia.com/gpu "
	     "is listed twice"},
	    {"flags:\n  migStrategy: mixed\n  mpsRoot: /m\nsharing:\n  mps:\n"
	     "    resources:\n      - name: gpu\n        replicas: 2\n",
	     GS_ERR_INVALID,
	     "t.yaml:6: MPS sharing cannot be combined with migStrategy "
	     "mixed"},
	    {"flags:\n  mpsRoot: /m\nsharing:\n  mps:\n    resources:\n"
	     "      - name: mig-1g.10gb\n        replicas: 2\n",
	     GS_ERR_INVALID,
	     "t.yaml:6: sharing using MPS is not supported for MIG devices "
	     "(nvidia.com/mig-1g.10gb); gpuslice can do it with mode "
	     "mig+mps"},
	    {"flags:\n  mpsRoot: /m\nsharing:\n  mps:\n    resources:\n"
	     "      - name: gpu\n        replicas: 49\n",
	     GS_ERR_RANGE,
	     "t.yaml:6: nvidia.com/gpu: 49 MPS replicas per GPU, more "
	     "than the plugin allows (48; 16 before compute capability "
	     "7.5)"},
	    {"sharing:\n  timeSlicing:\n    resources:\n      - name: gpu\n"
	     "        replicas: 2\n        devices: -3\n",
	     GS_ERR_INVALID,
	     "t.yaml:6: sharing.timeSlicing.resources[0].devices must be "
	     "'all', a positive count or a list of devices, got '-3'"},
	    {"- a\n- b\n", GS_ERR_PARSE,
	     "t.yaml:1: the document must be a mapping, not a sequence"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gs_dp_import *im = malloc(sizeof(*im));
		struct gs_errbuf eb = {0};
		gs_err err = dp(cases[i].text, NULL, 0, im, &eb);

		free(im);
		if (err != cases[i].err || strcmp(eb.msg, cases[i].msg) != 0)
			fail_msg("case %zu: %s '%s'", i, gs_err_name(err),
			         eb.msg);
	}
}

static void device_plugin_checks_mig_profiles_against_the_gpu(void **state)
{
	struct gs_dp_import *im = malloc(sizeof(*im));
	struct gs_errbuf eb = {0};

	assert_int_equal(dp("flags:\n  migStrategy: mixed\nsharing:\n"
	                    "  timeSlicing:\n    resources:\n"
	                    "      - name: mig-1g.5gb\n        replicas: 2\n",
	                    "H100", 0, im, &eb),
	                 GS_ERR_INVALID);
	assert_string_equal(eb.msg, "t.yaml:6: H100-SXM5-80GB has no MIG "
	                            "profile 1g.5gb (resource "
	                            "nvidia.com/mig-1g.5gb)");
	free(im);
}

/* ---- DRA ------------------------------------------------------------------
 */

static gs_err dra(const char *text, struct gs_dra_import *out,
                  struct gs_errbuf *eb)
{
	struct gs_doc *doc = parse(text);
	gs_err err = gs_import_dra(doc, out, eb);

	gs_doc_destroy(doc);
	return err;
}

static void gpuconfig_mps_becomes_an_mps_slice(void **state)
{
	struct gs_dra_import *im = malloc(sizeof(*im));
	struct gs_errbuf eb = {0};
	const struct gs_dra_config *c;

	assert_int_equal(dra("apiVersion: resource.nvidia.com/v1beta1\n"
	                     "kind: GpuConfig\nsharing:\n  strategy: MPS\n"
	                     "  mpsConfig:\n"
	                     "    defaultActiveThreadPercentage: 30\n"
	                     "    defaultPinnedDeviceMemoryLimit: 1.5Gi\n"
	                     "    defaultPerDevicePinnedMemoryLimit:\n"
	                     "      \"1\": 512Mi\n",
	                     im, &eb),
	                 GS_OK);
	assert_string_equal(im->kind, "GpuConfig");
	c = &im->config[0];
	assert_int_equal(c->strategy, GS_DRA_MPS);
	assert_int_equal(c->thread_pct, 30);
	assert_int_equal(c->pinned_mib, 1536);
	assert_int_equal(c->n_limits, 1);
	assert_string_equal(c->limit[0].device, "1");
	assert_int_equal(c->limit[0].mib, 512);
	assert_int_equal(c->slice.mode, GS_MODE_MPS);
	assert_int_equal(c->slice.compute_pct, 30);
	assert_int_equal(c->slice.memory_bytes, 1536 * MIB);
	free(im);
}

static void time_slicing_intervals_map_to_levels(void **state)
{
	static const char *const names[] = {"Default", "Short", "Medium",
	                                    "Long"};

	for (int level = 0; level < 4; level++) {
		struct gs_dra_import *im = malloc(sizeof(*im));
		struct gs_errbuf eb = {0};
		char text[256];

		snprintf(text, sizeof(text),
		         "kind: GpuConfig\nsharing:\n  strategy: TimeSlicing\n"
		         "  timeSlicingConfig:\n    interval: %s\n",
		         names[level]);
		assert_int_equal(dra(text, im, &eb), GS_OK);
		assert_int_equal(im->config[0].interval, level);
		assert_int_equal(im->config[0].slice.mode, GS_MODE_TIMESLICE);
		assert_string_equal(gs_dra_interval_name(level), names[level]);
		free(im);
	}
}

static void config_without_sharing_is_the_drivers_default(void **state)
{
	struct gs_dra_import *im = malloc(sizeof(*im));
	struct gs_errbuf eb = {0};

	assert_int_equal(dra("kind: MigDeviceConfig\n", im, &eb), GS_OK);
	assert_false(im->config[0].sharing_given);
	assert_true(im->config[0].mig);
	assert_int_equal(im->config[0].strategy, GS_DRA_TIME_SLICING);
	assert_int_equal(im->config[0].slice.mode, GS_MODE_MIG_TIMESLICE);
	free(im);
}

static void claim_with_parent_uuid_is_a_same_parent_gang(void **state)
{
	struct gs_dra_import *im = malloc(sizeof(*im));
	struct gs_errbuf eb = {0};

	assert_int_equal(
	    dra("apiVersion: resource.k8s.io/v1beta1\nkind: ResourceClaim\n"
	        "metadata: {name: m}\nspec:\n  devices:\n    requests:\n"
	        "    - name: small\n      deviceClassName: mig.nvidia.com\n"
	        "      count: 2\n      selectors:\n      - cel:\n"
	        "          expression: \"device.attributes['gpu.nvidia.com']"
	        ".profile == '1g.5gb'\"\n"
	        "    - name: big\n      deviceClassName: mig.nvidia.com\n"
	        "      selectors:\n      - cel:\n          expression: >-\n"
	        "            device.attributes['gpu.nvidia.com'].profile ==\n"
	        "            \"3g.20gb\"\n"
	        "    constraints:\n    - matchAttribute: "
	        "gpu.nvidia.com/parentUUID\n"
	        "    config:\n    - requests: [big]\n      opaque:\n"
	        "        driver: gpu.nvidia.com\n        parameters:\n"
	        "          kind: MigDeviceConfig\n          sharing:\n"
	        "            strategy: MPS\n",
	        im, &eb),
	    GS_OK);
	assert_int_equal(im->n_requests, 2);
	assert_string_equal(im->request[0].profile, "1g.5gb");
	assert_int_equal(im->request[0].count, 2);
	assert_string_equal(im->request[1].profile, "3g.20gb");
	assert_true(im->same_parent);
	assert_true(im->has_place);
	assert_int_equal(im->place.gang, GS_GANG_SAME_PARENT);
	assert_int_equal(im->place.n, 3);
	assert_string_equal(im->place.item[2].mig_profile, "3g.20gb");
	assert_int_equal(im->n_configs, 1);
	assert_int_equal(im->config[0].slice.mode, GS_MODE_MIG_MPS);
	assert_string_equal(im->config[0].slice.mig_profile, "3g.20gb");
	free(im);
}

static void dra_errors_name_the_line_and_field(void **state)
{
	static const struct bad cases[] = {
	    {"kind: GpuConfig\nsharing:\n  strategy: Spatial\n", GS_ERR_INVALID,
	     "t.yaml:3: sharing.strategy must be TimeSlicing|MPS, got "
	     "'Spatial'"},
	    {"kind: GpuConfig\nsharing: {}\n", GS_ERR_INVALID,
	     "t.yaml:2: sharing.strategy is required (TimeSlicing or MPS)"},
	    {"kind: GpuConfig\nsharing:\n  strategy: TimeSlicing\n"
	     "  mpsConfig: {}\n",
	     GS_ERR_INVALID,
	     "t.yaml:4: sharing: mpsConfig goes with strategy MPS, not "
	     "TimeSlicing"},
	    {"kind: MigDeviceConfig\nsharing:\n  strategy: TimeSlicing\n"
	     "  timeSlicingConfig: {interval: Short}\n",
	     GS_ERR_PARSE,
	     "t.yaml:3: sharing: MigDeviceConfig has no timeSlicingConfig "
	     "(the time-slice interval cannot be set on a MIG device)"},
	    {"kind: GpuConfig\nsharing:\n  strategy: MPS\n  mpsConfig:\n"
	     "    defaultActiveThreadPercentage: 120\n",
	     GS_ERR_RANGE,
	     "t.yaml:5: sharing.mpsConfig.defaultActiveThreadPercentage "
	     "must be 0..100, got 120"},
	    {"kind: GpuConfig\nsharing:\n  strategy: MPS\n  mpsConfig:\n"
	     "    defaultPinnedDeviceMemoryLimit: 100Ki\n",
	     GS_ERR_RANGE,
	     "t.yaml:5: sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: "
	     "100Ki is below 1 MiB (the driver refuses it: \"value set too "
	     "low\")"},
	    {"kind: GpuConfig\nsharing:\n  strategy: MPS\n  mpsConfig:\n"
	     "    defaultPinnedDeviceMemoryLimit: 10GiB\n",
	     GS_ERR_PARSE,
	     "t.yaml:5: sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: "
	     "'10GiB' has an unknown suffix 'GiB' (Ki Mi Gi Ti Pi Ei, k M "
	     "G T P E)"},
	    {"kind: GpuConfig\nsharing:\n  strategy: MPS\n  mpsConfg: {}\n",
	     GS_ERR_PARSE,
	     "t.yaml:4: unknown field 'mpsConfg' in sharing (did you mean "
	     "mpsConfig?)"},
	    {"kind: GpuConfig\nsharing:\n  strategy: MPS\n  mpsConfig:\n"
	     "    defaultPerDevicePinnedMemoryLimit:\n      gpu0: 1Gi\n",
	     GS_ERR_INVALID,
	     "t.yaml:6: sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit: "
	     "invalid device 'gpu0' (a GPU-/MIG- UUID or an index into the "
	     "claim's devices)"},
	    {"kind: Pod\n", GS_ERR_NOT_FOUND,
	     "t.yaml: no GpuConfig, MigDeviceConfig, ResourceClaim or "
	     "ResourceClaimTemplate in the file"},
	    {"kind: ResourceClaim\nspec:\n  devices:\n    requests:\n"
	     "    - name: g\n      deviceClassName: gpu.nvidia.com\n"
	     "    config:\n    - requests: [h]\n      opaque:\n"
	     "        driver: gpu.nvidia.com\n        parameters:\n"
	     "          kind: GpuConfig\n",
	     GS_ERR_INVALID,
	     "t.yaml:8: spec.devices.config[0].requests[0]: the claim has "
	     "no request 'h'"},
	    {"kind: ResourceClaim\nspec:\n  devices:\n    requests:\n"
	     "    - name: g\n      deviceClassName: gpu.nvidia.com\n"
	     "    config:\n    - opaque:\n"
	     "        driver: gpu.nvidia.com\n        parameters:\n"
	     "          kind: MigDeviceConfig\n",
	     GS_ERR_INVALID,
	     "t.yaml:11: spec.devices.config[0].opaque.parameters: a "
	     "MigDeviceConfig applies to request g, whose devices are full "
	     "GPUs"},
	    {"kind: ResourceClaimTemplate\nspec:\n  devices: {}\n",
	     GS_ERR_PARSE,
	     "t.yaml:3: unknown field 'devices' in spec (expected: "
	     "metadata, spec)"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gs_dra_import *im = malloc(sizeof(*im));
		struct gs_errbuf eb = {0};
		gs_err err = dra(cases[i].text, im, &eb);

		free(im);
		if (err != cases[i].err || strcmp(eb.msg, cases[i].msg) != 0)
			fail_msg("case %zu: %s '%s'", i, gs_err_name(err),
			         eb.msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(k8s_quantities_parse_like_kubernetes),
	    cmocka_unit_test(reader_splits_documents_and_keeps_lines),
	    cmocka_unit_test(reader_refuses_aliases_duplicates_and_bad_yaml),
	    cmocka_unit_test(reader_caps_nesting),
	    cmocka_unit_test(
	        mps_replicas_divide_threads_and_memory_like_the_plugin),
	    cmocka_unit_test(time_slicing_replicas_have_no_limits),
	    cmocka_unit_test(reference_example_reads_as_five_configs),
	    cmocka_unit_test(device_plugin_errors_name_the_line_and_field),
	    cmocka_unit_test(device_plugin_checks_mig_profiles_against_the_gpu),
	    cmocka_unit_test(gpuconfig_mps_becomes_an_mps_slice),
	    cmocka_unit_test(time_slicing_intervals_map_to_levels),
	    cmocka_unit_test(config_without_sharing_is_the_drivers_default),
	    cmocka_unit_test(claim_with_parent_uuid_is_a_same_parent_gang),
	    cmocka_unit_test(dra_errors_name_the_line_and_field),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
