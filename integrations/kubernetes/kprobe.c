/*
 * kprobe.c - the API server's version and DRA features, by dry-run
 * (kprobe.h). The probe slice is named <node>-<driver>-probe in a pool of
 * its own, so even a server that ignored dryRun would not mix it with the
 * node's pool; it is never stored by a server that honours dryRun=All.
 */
#include "kprobe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/log.h"

#define RS_PATH "/apis/resource.k8s.io/v1/resourceslices"

static const char *str_or_empty(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static void read_version(struct gs_kube *kube, struct gs_kprobe_result *out)
{
	json_t *v = NULL;
	long st = 0;
	struct gs_errbuf eb = {0};

	if (gs_kube_request(kube, "GET", "/version", NULL, NULL, &st, &v,
	                    &eb) != GS_OK ||
	    st != 200) {
		json_decref(v);
		return;
	}
	/* minor may carry a '+' (managed clusters: "34+"). */
	out->major = atoi(str_or_empty(v, "major"));
	out->minor = atoi(str_or_empty(v, "minor"));
	snprintf(out->git_version, sizeof(out->git_version), "%s",
	         str_or_empty(v, "gitVersion"));
	json_decref(v);
}

static json_t *probe_slice(const char *node, const char *driver, bool inline_set)
{
	char name[320], pool[300];
	json_t *s;

	snprintf(name, sizeof(name), "%s-%s-probe", node, driver);
	snprintf(pool, sizeof(pool), "%s-probe", node);
	s = json_pack(
	    "{s:s,s:s,s:{s:s},s:{s:s,s:s,s:{s:s,s:i,s:i},s:[{s:s,s:b,s:{s:{s:s,s:{s:s,s:{s:s,s:s,s:s}}}},s:[{s:s,s:{s:{s:s}}}],s:[{s:s,s:s,s:s}]}]}}",
	    "apiVersion", "resource.k8s.io/v1", "kind", "ResourceSlice",
	    "metadata", "name", name, "spec", "driver", driver, "nodeName",
	    node, "pool", "name", pool, "generation", 1, "resourceSliceCount",
	    inline_set ? 1 : 2, "devices", "name", "probe", "allowMultipleAllocations",
	    1, "capacity", "memory", "value", "1Gi", "requestPolicy",
	    "default", "1Gi", "validRange", "min", "1Mi", "max", "1Gi",
	    "step", "1Mi", "consumesCounters", "counterSet", "probe",
	    "counters", "c", "value", "1", "taints", "key",
	    "gpuslice.io/probe", "value", "probe", "effect", "NoSchedule");
	if (s && inline_set)
		json_object_set_new(
		    json_object_get(s, "spec"), "sharedCounters",
		    json_pack("[{s:s,s:{s:{s:s}}}]", "name", "probe",
		              "counters", "c", "value", "1"));
	return s;
}

/* POST ?dryRun=All. Takes SLICE (freed here). OUT: *status, *ans. */
static gs_err dry_run(struct gs_kube *kube, json_t *slice, long *st,
                      json_t **ans, struct gs_errbuf *eb)
{
	gs_err err;

	if (slice == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	err = gs_kube_request(kube, "POST", RS_PATH "?dryRun=All", slice,
	                      NULL, st, ans, eb);
	json_decref(slice);
	return err;
}

static void read_kept(const json_t *ans, bool inline_set,
                      struct gs_kdev_layout *l)
{
	const json_t *spec = json_object_get(ans, "spec");
	const json_t *dev = json_array_get(json_object_get(spec, "devices"), 0);
	const json_t *mem =
	    json_object_get(json_object_get(dev, "capacity"), "memory");

	l->consumable =
	    json_is_true(json_object_get(dev, "allowMultipleAllocations")) &&
	    json_object_get(mem, "requestPolicy") != NULL;
	l->partitionable =
	    json_array_size(json_object_get(dev, "consumesCounters")) > 0 &&
	    (!inline_set ||
	     json_array_size(json_object_get(spec, "sharedCounters")) > 0);
	l->taints = json_array_size(json_object_get(dev, "taints")) > 0;
	l->counters_inline = inline_set && l->partitionable;
}

gs_err gs_kprobe_run(struct gs_kube *kube, const char *node,
                     const char *driver, int partitions,
                     struct gs_kprobe_result *out, struct gs_errbuf *eb)
{
	json_t *ans = NULL;
	long st = 0;
	struct gs_errbuf e1 = {0};
	bool inline_set = true;
	gs_err err;

	memset(out, 0, sizeof(*out)); /* on error: the version, if any */
	gs_kdev_layout_default(&out->layout);
	out->layout.partitions = partitions > 0 ? partitions : 4;
	read_version(kube, out);
	err = dry_run(kube, probe_slice(node, driver, true), &st, &ans, &e1);
	if (err)
		return gs_fail(eb, err, "probing the API server: %s",
		               gs_errbuf_msg(&e1, err));
	if (st == 422 || st == 400) {
		json_decref(ans);
		ans = NULL;
		inline_set = false;
		struct gs_errbuf e2 = {0};
		err = dry_run(kube, probe_slice(node, driver, false), &st, &ans,
		              &e2);
		if (err)
			return gs_fail(eb, err, "probing the API server: %s",
			               gs_errbuf_msg(&e2, err));
		if (st == 422 || st == 400) {
			json_decref(ans);
			return gs_fail(eb, GS_ERR_INVALID,
			               "the API server refused both probe ResourceSlices: %s; %s",
			               e1.msg, e2.msg);
		}
	}
	if (st < 200 || st >= 300) {
		json_decref(ans);
		return gs_fail(eb, gs_kube_status_err(st),
		               "probing the API server: dry-run create answered HTTP %ld",
		               st);
	}
	read_kept(ans, inline_set, &out->layout);
	json_decref(ans);
	/* 1.34's allocator cannot hand out a shareable device that
	 * consumes counters to a second claim (fixed in 1.35). */
	out->layout.shared_no_counters =
	    out->major == 1 && out->minor > 0 && out->minor <= 34;
	return GS_OK;
}
