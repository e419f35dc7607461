/*
 * test_import_k8s.c - what the DRA importer records for `import --k8s`
 * (gs/import.h): the block (the first thing a gpuslice.io claim cannot
 * carry, "FILE:LINE: FIELD: why"), the clients counted from the file's
 * Pods and workloads, selectors rewritten onto gpuslice.io's domain, and
 * every importable document in turn (gs_import_dra_next). Tables: the
 * text, then what must come out. Also the YAML reader's line offset for
 * embedded text (gs_yamldoc_read_at).
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

static struct gs_doc *parse(const char *text)
{
	struct gs_doc *doc = NULL;
	struct gs_errbuf eb = {0};

	if (gs_yamldoc_parse(text, strlen(text), "t.yaml", &doc, &eb) != GS_OK)
		fail_msg("YAML: %s", eb.msg);
	return doc;
}

#define TMPL_HEAD                                                              \
	"kind: ResourceClaimTemplate\n"                                        \
	"metadata: {name: t, namespace: ns}\n"                                 \
	"spec:\n"                                                              \
	"  spec:\n"                                                            \
	"    devices:\n"                                                       \
	"      requests:\n"

#define MPS_CONFIG                                                             \
	"      config:\n"                                                      \
	"      - opaque:\n"                                                    \
	"          driver: gpu.nvidia.com\n"                                   \
	"          parameters:\n"                                              \
	"            kind: GpuConfig\n"                                        \
	"            sharing:\n"                                               \
	"              strategy: MPS\n"                                        \
	"              mpsConfig: {defaultActiveThreadPercentage: 30}\n"

/* A pod in namespace ns whose containers (N of them) use claim `t`. */
#define POD(kind, ref, n_ctr)                                                  \
	"---\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n"          \
	"  resourceClaims: [{name: c, " kind ": " ref "}]\n"                   \
	"  containers:\n" n_ctr

#define CTR "  - {name: a, resources: {claims: [{name: c}]}}\n"

static void blocks_name_the_line_and_field(void **state)
{
	static const struct {
		const char *text;
		const char *block; /* "" : none */
	} cases[] = {
	    {TMPL_HEAD "      - {name: g, exactly: {deviceClassName: "
	               "gpu.nvidia.com}}\n",
	     ""},
	    {TMPL_HEAD "      - {name: g, exactly: {deviceClassName: "
	               "gpu.nvidia.com, count: 3}}\n",
	     "t.yaml:7: spec.spec.devices.requests[0].count: 3 devices"},
	    {TMPL_HEAD "      - {name: g, exactly: {deviceClassName: "
	               "gpu.nvidia.com, allocationMode: All}}\n",
	     "t.yaml:7: spec.spec.devices.requests[0].allocationMode: All"},
	    {TMPL_HEAD "      - {name: a, exactly: {deviceClassName: "
	               "gpu.nvidia.com}}\n"
	               "      - {name: b, exactly: {deviceClassName: "
	               "gpu.nvidia.com}}\n",
	     "t.yaml:8: spec.spec.devices.requests[1]: a gpuslice.io claim "
	     "allocates one device and this claim has 2 requests"},
	    {TMPL_HEAD "      - name: g\n"
	               "        exactly:\n"
	               "          deviceClassName: gpu.nvidia.com\n"
	               "          selectors:\n"
	               "          - cel: {expression: \"device.attributes["
	               "'gpu.nvidia.com'].uuid == 'GPU-1'\"}\n",
	     "t.yaml:11: spec.spec.devices.requests[0].exactly.selectors[0]"
	     ".cel.expression: selector not translated"},
	    {TMPL_HEAD "      - name: g\n"
	               "        firstAvailable:\n"
	               "        - {name: x, deviceClassName: gpu.nvidia.com}\n"
	               "        - {name: y, deviceClassName: mig.nvidia.com}\n",
	     "t.yaml:9: spec.spec.devices.requests[0].firstAvailable: 2 "
	     "alternatives"},
	    {TMPL_HEAD "      - {name: g, exactly: {deviceClassName: "
	               "gpu.nvidia.com}}\n"
	               "      constraints:\n"
	               "      - {distinctAttribute: gpu.nvidia.com/uuid}\n",
	     "t.yaml:9: spec.spec.devices.constraints[0].distinctAttribute"},
	    /* per-client MPS: one container is the claim, two are not */
	    {TMPL_HEAD "      - {name: g, exactly: {deviceClassName: "
	               "gpu.nvidia.com}}\n" MPS_CONFIG POD(
	                   "resourceClaimTemplateName", "t", CTR),
	     ""},
	    {TMPL_HEAD "      - {name: g, exactly: {deviceClassName: "
	               "gpu.nvidia.com}}\n" MPS_CONFIG POD(
	                   "resourceClaimTemplateName", "t", CTR CTR),
	     "t.yaml:12: spec.spec.devices.config[0].opaque.parameters"
	     ".sharing.mpsConfig: the driver's limits hold per MPS client and "
	     "2 containers use this claim"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gs_doc *doc = parse(cases[i].text);
		struct gs_dra_import *im = malloc(sizeof(*im));
		struct gs_errbuf eb = {0};

		assert_non_null(im);
		assert_int_equal(gs_import_dra(doc, im, &eb), GS_OK);
		if (cases[i].block[0] == '\0') {
			if (im->k8s.line != 0)
				fail_msg("case %zu: unexpected block %s", i,
				         im->k8s.msg);
		} else if (strncmp(im->k8s.msg, cases[i].block,
		                   strlen(cases[i].block)) != 0) {
			fail_msg("case %zu: block '%s', want '%s...'", i,
			         im->k8s.msg, cases[i].block);
		}
		free(im);
		gs_doc_destroy(doc);
	}
}

static void clients_are_counted_from_pods_and_workloads(void **state)
{
	static const struct {
		const char *text;
		int clients;
	} cases[] = {
	    /* a shared claim: every pod's containers, times replicas */
	    {"kind: ResourceClaim\nmetadata: {name: t, namespace: ns}\n"
	     "spec: {devices: {requests: [{name: g, exactly: "
	     "{deviceClassName: gpu.nvidia.com}}]}}\n" POD(
	         "resourceClaimName", "t", CTR) POD("resourceClaimName", "t",
	                                            CTR CTR),
	     3},
	    {"kind: ResourceClaim\nmetadata: {name: t, namespace: ns}\n"
	     "spec: {devices: {requests: [{name: g, exactly: "
	     "{deviceClassName: gpu.nvidia.com}}]}}\n"
	     "---\nkind: Deployment\nmetadata: {name: d, namespace: ns}\n"
	     "spec:\n  replicas: 4\n  template:\n    spec:\n"
	     "      resourceClaims: [{name: c, resourceClaimName: t}]\n"
	     "      initContainers:\n"
	     "      - {name: i, resources: {claims: [{name: c}]}}\n"
	     "      containers:\n"
	     "      - {name: a, resources: {claims: [{name: c}]}}\n"
	     "      - {name: b}\n",
	     8},
	    /* another namespace, or another claim: not clients */
	    {"kind: ResourceClaim\nmetadata: {name: t, namespace: ns}\n"
	     "spec: {devices: {requests: [{name: g, exactly: "
	     "{deviceClassName: gpu.nvidia.com}}]}}\n"
	     "---\nkind: Pod\nmetadata: {name: p, namespace: other}\nspec:\n"
	     "  resourceClaims: [{name: c, resourceClaimName: t}]\n"
	     "  containers: [{name: a, resources: {claims: [{name: c}]}}]\n"
	     "---\nkind: Pod\nmetadata: {name: q, namespace: ns}\nspec:\n"
	     "  resourceClaims: [{name: c, resourceClaimName: u}]\n"
	     "  containers: [{name: a, resources: {claims: [{name: c}]}}]\n",
	     0},
	    /* a template: the most in one pod (each pod its own claim) */
	    {TMPL_HEAD "      - {name: g, exactly: {deviceClassName: "
	               "gpu.nvidia.com}}\n" POD("resourceClaimTemplateName",
	                                        "t", CTR CTR)
	                   POD("resourceClaimTemplateName", "t", CTR),
	     2},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gs_doc *doc = parse(cases[i].text);
		struct gs_dra_import *im = malloc(sizeof(*im));
		struct gs_errbuf eb = {0};

		assert_non_null(im);
		assert_int_equal(gs_import_dra(doc, im, &eb), GS_OK);
		if (im->clients != cases[i].clients)
			fail_msg("case %zu: %d clients, want %d", i,
			         im->clients, cases[i].clients);
		free(im);
		gs_doc_destroy(doc);
	}
}

static void selectors_move_to_gpuslice_domain_or_block(void **state)
{
	static const struct {
		const char *expr;
		const char *want; /* NULL: not translated */
	} cases[] = {
	    {"device.attributes['gpu.nvidia.com'].productName == 'X'",
	     "device.attributes[\"gpuslice.io\"].productName == 'X'"},
	    {"device.attributes[\"gpu.nvidia.com\"].architecture == 'Hopper'",
	     "device.attributes[\"gpuslice.io\"].architecture == 'Hopper'"},
	    {"device.driver == 'gpu.nvidia.com'",
	     "device.driver == \"gpuslice.io\""},
	    {"device.attributes['gpu.nvidia.com'].driverVersion.compareTo("
	     "semver('550.0.0')) >= 0",
	     "device.attributes[\"gpuslice.io\"].driverVersion.compareTo("
	     "semver('550.0.0')) >= 0"},
	    {"device.attributes['gpu.nvidia.com'].uuid == 'GPU-1'", NULL},
	    {"device.attributes['gpu.nvidia.com'].typeName == 'x'", NULL},
	    {"device.capacity['gpu.nvidia.com'].memory.compareTo("
	     "quantity('40Gi')) >= 0",
	     NULL},
	    {"'gpu.nvidia.com' in device.attributes", NULL},
	    /* ends inside an attribute name (fuzz_import_dra found a read
	     * past the end here) */
	    {"device.attributes['gpu.nvidia.com'].prod", NULL},
	    {"device.attributes['gpu.nvidia.com'].", NULL},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[1024];
		struct gs_doc *doc;
		struct gs_dra_import *im = malloc(sizeof(*im));
		struct gs_errbuf eb = {0};

		assert_non_null(im);
		snprintf(text, sizeof(text),
		         TMPL_HEAD "      - name: g\n"
		                   "        exactly:\n"
		                   "          deviceClassName: gpu.nvidia.com\n"
		                   "          selectors:\n"
		                   "          - cel:\n"
		                   "              expression: |-\n"
		                   "                %s\n",
		         cases[i].expr);
		doc = parse(text);
		assert_int_equal(gs_import_dra(doc, im, &eb), GS_OK);
		if (cases[i].want == NULL) {
			if (im->k8s.line == 0 || im->request[0].n_cel != 0)
				fail_msg("case %zu: '%s' was translated", i,
				         cases[i].expr);
		} else {
			assert_int_equal(im->k8s.line, 0);
			assert_int_equal(im->request[0].n_cel, 1);
			assert_string_equal(im->request[0].cel[0],
			                    cases[i].want);
		}
		free(im);
		gs_doc_destroy(doc);
	}
}

static void next_walks_every_claim_with_its_metadata(void **state)
{
	struct gs_doc *doc = parse(
	    "kind: Namespace\nmetadata: {name: ns}\n"
	    "---\n" TMPL_HEAD "      - {name: g, exactly: {deviceClassName: "
	    "gpu.nvidia.com}}\n"
	    "---\nkind: ResourceClaim\nmetadata: {name: shared, namespace: "
	    "team}\n"
	    "spec: {devices: {requests: [{name: m, exactly: "
	    "{deviceClassName: mig.nvidia.com}}]}}\n");
	struct gs_dra_import *im = malloc(sizeof(*im));
	struct gs_errbuf eb = {0};
	int cursor = 0;

	(void)state;
	assert_non_null(im);
	assert_int_equal(gs_import_dra_next(doc, &cursor, im, &eb), GS_OK);
	assert_string_equal(im->kind, "ResourceClaimTemplate");
	assert_string_equal(im->name, "t");
	assert_string_equal(im->ns, "ns");
	assert_int_equal(gs_import_dra_next(doc, &cursor, im, &eb), GS_OK);
	assert_string_equal(im->kind, "ResourceClaim");
	assert_string_equal(im->name, "shared");
	assert_string_equal(im->ns, "team");
	assert_true(im->request[0].mig);
	assert_int_equal(gs_import_dra_next(doc, &cursor, im, &eb),
	                 GS_ERR_NOT_FOUND);
	free(im);
	gs_doc_destroy(doc);
}

/* Embedded text keeps its file's lines, in nodes and in messages. */
static void embedded_text_keeps_the_files_lines(void **state)
{
	const char *ok = "a: 1\nb:\n  c: 2\n", *bad = "a: 1\nb: [\n";
	struct gs_doc *doc = NULL;
	struct gs_errbuf eb = {0};

	(void)state;
	assert_int_equal(
	    gs_yamldoc_read_at(ok, strlen(ok), "cm.yaml", 40, 0, &doc, &eb),
	    GS_OK);
	assert_int_equal(gs_doc_get(gs_doc_root(doc, 0), "a")->line, 41);
	assert_int_equal(
	    gs_doc_get(gs_doc_get(gs_doc_root(doc, 0), "b"), "c")->line, 43);
	gs_doc_destroy(doc);
	assert_int_not_equal(
	    gs_yamldoc_read_at(bad, strlen(bad), "cm.yaml", 40, 0, &doc, &eb),
	    GS_OK);
	assert_non_null(strstr(eb.msg, "cm.yaml:4"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(blocks_name_the_line_and_field),
	    cmocka_unit_test(clients_are_counted_from_pods_and_workloads),
	    cmocka_unit_test(selectors_move_to_gpuslice_domain_or_block),
	    cmocka_unit_test(next_walks_every_claim_with_its_metadata),
	    cmocka_unit_test(embedded_text_keeps_the_files_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
