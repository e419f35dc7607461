/*
 * k8s_claim.c - slice specs as resource.k8s.io/v1 objects for the
 * gpuslice.io DRA driver (k8s_claim.h). Pure: builds jansson values, no
 * I/O. The shapes match what integrations/kubernetes/prepare.c and
 * sliceconfig.c accept; tests/integration/import checks the output
 * against the resource.k8s.io/v1 schema of tests/integration/k8s_api.
 */
#include "gs/k8s_claim.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

void gs_k8s_dns_label(const char *name, char *buf, size_t len)
{
	size_t n = 0;
	bool dash = false;

	if (len == 0)
		return;
	for (const char *p = name ? name : ""; *p != '\0' && n + 1 < len &&
	                                       n < 63;
	     p++) {
		unsigned char c = (unsigned char)*p;

		if (isalnum(c)) {
			if (dash && n > 0 && n + 2 < len && n < 62)
				buf[n++] = '-';
			dash = false;
			buf[n++] = (char)tolower(c);
		} else {
			dash = true; /* runs of other characters: one dash */
		}
	}
	buf[n] = '\0';
	if (n == 0)
		snprintf(buf, len, "gpu");
}

static bool is_mig(enum gs_slice_mode m)
{
	return m == GS_MODE_MIG || m == GS_MODE_MIG_TIMESLICE ||
	       m == GS_MODE_MIG_MPS;
}

/* Bytes as an exact quantity: Gi or Mi when it divides, else plain. */
static json_t *bytes_quantity(uint64_t b)
{
	char q[32];
	const uint64_t gi = 1ULL << 30, mi = 1ULL << 20;

	if (b % gi == 0)
		snprintf(q, sizeof(q), "%" PRIu64 "Gi", b / gi);
	else if (b % mi == 0)
		snprintf(q, sizeof(q), "%" PRIu64 "Mi", b / mi);
	else
		snprintf(q, sizeof(q), "%" PRIu64, b);
	return json_string(q);
}

json_t *gs_k8s_device_request(const char *request,
                              const struct gs_slice_spec *s, int count)
{
	json_t *ex, *req;

	if (is_mig(s->mode) && s->mig_profile[0] == '\0') {
		/* any MIG device: the class alone, still never a whole GPU */
		ex = json_pack("{s:s}", "deviceClassName", GS_K8S_CLASS_MIG);
	} else if (is_mig(s->mode)) {
		char cel[GS_SPEC_PROFILE_MAX + 64];

		snprintf(cel, sizeof(cel),
		         "device.attributes[\"" GS_K8S_DRIVER
		         "\"].profile == \"%s\"",
		         s->mig_profile);
		ex = json_pack("{s:s, s:[{s:{s:s}}]}", "deviceClassName",
		               GS_K8S_CLASS_MIG, "selectors", "cel",
		               "expression", cel);
	} else {
		json_t *caps = json_object();

		ex = json_pack("{s:s}", "deviceClassName", GS_K8S_CLASS_GPU);
		if (ex != NULL && caps != NULL) {
			if (s->memory_bytes > 0)
				json_object_set_new(
				    caps, "memory",
				    bytes_quantity(s->memory_bytes));
			if (s->compute_pct > 0) {
				char q[16];

				snprintf(q, sizeof(q), "%d", s->compute_pct);
				json_object_set_new(caps, "compute",
				                    json_string(q));
			}
		}
		if (ex != NULL && caps != NULL && json_object_size(caps) > 0)
			json_object_set_new(ex, "capacity",
			                    json_pack("{s:o}", "requests", caps));
		else
			json_decref(caps);
	}
	if (ex == NULL)
		return NULL;
	if (count > 1)
		json_object_set_new(ex, "count", json_integer(count));
	req = json_pack("{s:s, s:o}", "name", request, "exactly", ex);
	return req;
}

json_t *gs_k8s_slice_config(const struct gs_slice_spec *s)
{
	json_t *p = json_pack("{s:s, s:s}", "apiVersion",
	                      "gpuslice.io/v1alpha1", "kind", "SliceConfig");

	if (p == NULL)
		return NULL;
	if (s->priority != GS_PRIORITY_NORMAL)
		json_object_set_new(p, "priority",
		                    json_string(gs_priority_name(s->priority)));
	if (s->weight > 1)
		json_object_set_new(p, "weight", json_integer(s->weight));
	if (s->compute_mode == GS_COMPUTE_SHARE)
		json_object_set_new(p, "computeMode", json_string("share"));
	if (s->mode == GS_MODE_MPS || s->mode == GS_MODE_MIG_MPS)
		json_object_set_new(p, "mode", json_string("mps"));
	else if (s->mode == GS_MODE_TIMESLICE)
		json_object_set_new(p, "mode", json_string("timeslice"));
	/* A MIG instance is its own isolation; on a whole GPU the driver
	 * gives memory isolation (the cap), never more. */
	if (!is_mig(s->mode) && s->isolation == GS_ISOLATION_MEMORY)
		json_object_set_new(p, "isolation", json_string("memory"));
	return p;
}

static json_t *config_entry(const struct gs_slice_spec *s, const char *req)
{
	json_t *c = json_pack("{s:{s:s, s:o}}", "opaque", "driver",
	                      GS_K8S_DRIVER, "parameters",
	                      gs_k8s_slice_config(s));

	if (c != NULL && req != NULL)
		json_object_set_new(c, "requests", json_pack("[s]", req));
	return c;
}

json_t *gs_k8s_claim_template(const char *name, const char *ns,
                              const struct gs_slice_spec *s, int count)
{
	json_t *meta = json_pack("{s:s}", "name", name);
	json_t *t;

	if (meta != NULL && ns != NULL)
		json_object_set_new(meta, "namespace", json_string(ns));
	t = json_pack("{s:s, s:s, s:o, s:{s:{s:{s:[o], s:[o]}}}}",
	              "apiVersion", "resource.k8s.io/v1", "kind",
	              "ResourceClaimTemplate", "metadata", meta, "spec",
	              "spec", "devices", "requests",
	              gs_k8s_device_request("gpu", s, count), "config",
	              config_entry(s, "gpu"));
	return t;
}

json_t *gs_k8s_device_class(const char *name, const struct gs_slice_spec *s,
                            const char *extended)
{
	const char *type = is_mig(s->mode) ? "mig" : "gpu";
	char cel[256];
	json_t *c;

	if (is_mig(s->mode) && s->mig_profile[0] != '\0')
		snprintf(cel, sizeof(cel),
		         "device.driver == \"" GS_K8S_DRIVER "\" && device.attributes[\"" GS_K8S_DRIVER
		         "\"].type == \"mig\" && device.attributes[\"" GS_K8S_DRIVER
		         "\"].profile == \"%s\"",
		         s->mig_profile);
	else
		snprintf(cel, sizeof(cel),
		         "device.driver == \"" GS_K8S_DRIVER "\" && device.attributes[\"" GS_K8S_DRIVER
		         "\"].type == \"%s\"",
		         type);
	c = json_pack("{s:s, s:s, s:{s:s}, s:{s:[{s:{s:s}}], s:[o]}}",
	              "apiVersion", "resource.k8s.io/v1", "kind",
	              "DeviceClass", "metadata", "name", name, "spec",
	              "selectors", "cel", "expression", cel, "config",
	              config_entry(s, NULL));
	if (c != NULL && extended != NULL)
		json_object_set_new(json_object_get(c, "spec"),
		                    "extendedResourceName", json_string(extended));
	return c;
}

json_t *gs_k8s_list(json_t *items)
{
	return json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "List",
	                 "items", items ? items : json_array());
}
