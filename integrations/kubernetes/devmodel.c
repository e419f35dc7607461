/*
 * devmodel.c - the node's ResourceSlices (resource.k8s.io/v1) computed from
 * gpusliced's GET /v1/gpus answer (see devmodel.h for the names). Pure: no
 * I/O, no clock; everything comes in as arguments.
 *
 * What a GPU becomes:
 *   gpu-<i>      one shareable device: allowMultipleAllocations, capacity
 *                `memory` (bytes, request policy min = step = 1 MiB,
 *                default = all) and `compute` (percent, 1..100 step 1,
 *                default 100), so the scheduler fits fractional claims.
 *   gpu-<i>-mig-<profile>-<start>
 *                on a MIG-capable model: every (profile, placement) of the
 *                catalog, consuming the GPU's counter set gpu-<i>.
 * Counter set gpu-<i> (MIG-capable GPUs only):
 *   memory-slice-<k> = 1 for k in [0, memory_slices)   placement occupancy
 *   compute-slices   = the model's compute slices (7; 4 on an A30)
 *   memory           = the GPU's memory in bytes
 *   media-extensions = 1, on models with "+me" profiles (one at a time)
 * A MIG device consumes memory-slice-k for each k of its placement, its
 * compute slices and its memory; the whole GPU consumes every counter, so
 * the scheduler never hands out the whole GPU and a partition of it, nor
 * two overlapping partitions. Non-overlapping placements always fit.
 *
 * Slices: devices are cut into slices of at most GS_KDEV_MAX_DEVICES (the
 * API's cap for slices whose devices consume counters or carry taints),
 * counter sets into slices of at most 8 sets, devices first; every slice is
 * named <node>-<driver>-<k> in that order and carries the same pool
 * generation and resourceSliceCount.
 *
 * Oversubscribed memory: with gpusliced's swap.oversubscribe R > 1
 * (/v1/gpus "swap_oversubscribe"), gpu-<i>'s memory capacity is R x its
 * memory, with the attribute memoryOversubscribe = R (see gpu_device).
 *
 * Health: an unhealthy GPU's devices (whole and MIG) carry the taint
 * gpuslice.io/unhealthy=<reason> with effect NoSchedule.
 *
 * Layouts (struct gs_kdev_layout: what the API server keeps):
 *   consumable off   gpu-<i>-part-<k>, k < K, replace gpu-<i>: plain
 *                    devices of 1/K memory (MiB-floored) and 100/K compute;
 *                    with counters on a MIG-capable GPU each consumes 1/K
 *                    (in milli-units) of every memory-slice counter, so K
 *                    partitions fit together and none fits beside a MIG
 *                    placement or the whole GPU
 *   partitionable off  no MIG placements and no counter sets; a GPU in MIG
 *                    mode is published as its existing MIG instances,
 *                    plain devices (no whole GPU, no partitions beside)
 *   taints off       an unhealthy GPU's devices are left out
 *   counters_inline  (1.34) a MIG-capable GPU's devices and its counter
 *                    set share one slice (at most 64 devices, 32 counters)
 *   shared_no_counters  (1.34) a MIG-capable GPU publishes gpu-<i>
 *                    without counters when MIG is off, its placements when
 *                    MIG is on, never both
 */
#include "devmodel.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/catalog.h"

#define GS_KDEV_MAX_DEVICES 64
#define GS_KDEV_MAX_SETS    8
#define MIB                 (1024ll * 1024ll)

/* ---- names ---- */

void gs_kdev_format_name(const struct gs_kdev_name *n, char *buf, size_t len)
{
	char prof[32];
	size_t i;

	if (n->kind == GS_KDEV_GPU) {
		snprintf(buf, len, "gpu-%d", n->gpu_index);
		return;
	}
	if (n->kind == GS_KDEV_PART) {
		snprintf(buf, len, "gpu-%d-part-%d-of-%d", n->gpu_index,
		         n->start, n->parts);
		return;
	}
	/* "1g.10gb+me" -> "1g-10gb-me": the one '.' and any '+' become '-';
	 * parsing restores the first '-' as '.', the others as '+'. */
	for (i = 0; n->profile[i] && i + 1 < sizeof(prof); i++) {
		char c = (char)tolower((unsigned char)n->profile[i]);
		prof[i] = (c == '.' || c == '+') ? '-' : c;
	}
	prof[i] = '\0';
	snprintf(buf, len, "gpu-%d-mig-%s-%d", n->gpu_index, prof, n->start);
}

/* Reads a non-negative decimal of at most 6 digits; -1 if it is not one. */
static int small_uint(const char *s, size_t len)
{
	int v = 0;

	if (len == 0 || len > 6 || (len > 1 && s[0] == '0'))
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

gs_err gs_kdev_parse_name(const char *name, struct gs_kdev_name *out,
                          struct gs_errbuf *eb)
{
	const char *p, *mig, *last;
	size_t plen;
	int idx;

	memset(out, 0, sizeof(*out));
	if (name == NULL || strncmp(name, "gpu-", 4) != 0)
		return gs_fail(eb, GS_ERR_PARSE,
		               "device name '%s' is not gpuslice's (gpu-N...)",
		               name ? name : "(null)");
	p = name + 4;
	{
		const char *part = strstr(p, "-part-");
		if (part && !strstr(p, "-mig-")) {
			const char *of = strstr(part + 6, "-of-");
			idx = small_uint(p, (size_t)(part - p));
			out->start = of ? small_uint(part + 6,
			                             (size_t)(of - part - 6))
			                : -1;
			out->parts = of ? small_uint(of + 4, strlen(of + 4)) : -1;
			if (idx < 0 || out->start < 0 || out->parts < 1 ||
			    out->parts > 32 || out->start >= out->parts)
				return gs_fail(eb, GS_ERR_PARSE,
				               "device name '%s': expected gpu-N-part-K-of-P (K < P <= 32)",
				               name);
			out->kind = GS_KDEV_PART;
			out->gpu_index = idx;
			return GS_OK;
		}
	}
	mig = strstr(p, "-mig-");
	idx = small_uint(p, mig ? (size_t)(mig - p) : strlen(p));
	if (idx < 0)
		return gs_fail(eb, GS_ERR_PARSE,
		               "device name '%s': bad GPU index", name);
	out->gpu_index = idx;
	if (mig == NULL) {
		out->kind = GS_KDEV_GPU;
		return GS_OK;
	}
	out->kind = GS_KDEV_MIG;
	p = mig + 5;
	last = strrchr(p, '-');
	if (last == NULL || last == p)
		return gs_fail(
		    eb, GS_ERR_PARSE,
		    "device name '%s': expected mig-<profile>-<start>", name);
	out->start = small_uint(last + 1, strlen(last + 1));
	if (out->start < 0)
		return gs_fail(eb, GS_ERR_PARSE,
		               "device name '%s': bad placement start", name);
	plen = (size_t)(last - p);
	if (plen >= sizeof(out->profile))
		return gs_fail(eb, GS_ERR_PARSE,
		               "device name '%s': profile too long", name);
	bool dot = false;
	for (size_t i = 0; i < plen; i++) {
		char c = p[i];
		if (c == '-') {
			c = dot ? '+' : '.';
			dot = true;
		} else if (!isalnum((unsigned char)c)) {
			return gs_fail(eb, GS_ERR_PARSE,
			               "device name '%s': bad profile", name);
		}
		out->profile[i] = c;
	}
	out->profile[plen] = '\0';
	if (!dot)
		return gs_fail(eb, GS_ERR_PARSE,
		               "device name '%s': profile has no '-' (1g-10gb)",
		               name);
	return GS_OK;
}

/* ---- the /v1/gpus answer ---- */

static const char *str_of(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static const struct gs_gpu_model *model_of(const json_t *gpu)
{
	const struct gs_gpu_model *m = gs_catalog_find(str_of(gpu, "model"));
	return m ? m : gs_catalog_find(str_of(gpu, "name"));
}

static bool mig_capable(const json_t *gpu, const struct gs_gpu_model *m)
{
	json_t *mig = json_object_get(gpu, "mig");
	return m && m->n_profiles > 0 &&
	       json_is_true(json_object_get(mig, "capable"));
}

static gs_err gpu_index(const json_t *gpu, int *idx, struct gs_errbuf *eb)
{
	json_t *v = json_object_get(gpu, "index");
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > 999999)
		return gs_fail(
		    eb, GS_ERR_PARSE,
		    "gpusliced /v1/gpus: a GPU without a valid index");
	*idx = (int)json_integer_value(v);
	return GS_OK;
}

gs_err gs_kdev_lookup(const json_t *gpus, const struct gs_kdev_name *n,
                      const json_t **gpu, struct gs_errbuf *eb)
{
	json_t *arr = json_object_get(gpus, "gpus"), *g;
	size_t i;

	*gpu = NULL;
	json_array_foreach(arr, i, g)
	{
		int idx;
		if (gpu_index(g, &idx, NULL) != GS_OK || idx != n->gpu_index)
			continue;
		if (n->kind == GS_KDEV_MIG) {
			const struct gs_gpu_model *m = model_of(g);
			const struct gs_mig_profile *p =
			    m ? gs_catalog_profile(m, n->profile) : NULL;
			if (!mig_capable(g, m) || p == NULL ||
			    !gs_catalog_placement_valid(p, n->start))
				return gs_fail(
				    eb, GS_ERR_NOT_FOUND,
				    "GPU %d (%s) has no MIG placement %s@%d",
				    idx, str_of(g, "model"), n->profile,
				    n->start);
		}
		*gpu = g;
		return GS_OK;
	}
	return gs_fail(eb, GS_ERR_NOT_FOUND, "GPU %d is not on this node",
	               n->gpu_index);
}

/* ---- JSON building helpers (jansson's _new calls take ownership) ---- */

static json_t *quantity(int64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRId64, v);
	return json_string(buf);
}

static void attr_str(json_t *attrs, const char *key, const char *v)
{
	char buf[65];
	/* A string attribute is at most 64 bytes. */
	snprintf(buf, sizeof(buf), "%s", v);
	json_object_set_new(attrs, key, json_pack("{s:s}", "string", buf));
}

static void attr_int(json_t *attrs, const char *key, int64_t v)
{
	json_object_set_new(attrs, key,
	                    json_pack("{s:I}", "int", (json_int_t)v));
}

static void attr_bool(json_t *attrs, const char *key, bool v)
{
	json_object_set_new(attrs, key, json_pack("{s:b}", "bool", v));
}

/*
 * A version attribute needs semver 2.0: "580.65.06" has a leading zero, so
 * each part is re-read as a number; "9.0" gets ".0". Falls back to a string
 * attribute when the text is not dotted numbers.
 */
static void attr_version(json_t *attrs, const char *key, const char *v)
{
	unsigned long part[3] = {0, 0, 0};
	int n = 0;
	const char *p = v;
	char buf[64];

	while (*p && n < 3) {
		char *end;
		if (!isdigit((unsigned char)*p))
			break;
		part[n++] = strtoul(p, &end, 10);
		p = end;
		if (*p == '.')
			p++;
		else
			break;
	}
	if (n == 0 || *p) {
		if (*v)
			attr_str(attrs, key, v);
		return;
	}
	snprintf(buf, sizeof(buf), "%lu.%lu.%lu", part[0], part[1], part[2]);
	json_object_set_new(attrs, key, json_pack("{s:s}", "version", buf));
}

static int64_t gpu_memory(const json_t *gpu, const struct gs_gpu_model *m)
{
	json_t *v = json_object_get(gpu, "memory_bytes");
	if (json_is_integer(v) && json_integer_value(v) > 0)
		return json_integer_value(v);
	return m ? (int64_t)m->memory_mib * MIB : 0;
}

/* Label-value safe text for a taint value (<= 63, [A-Za-z0-9._-]). */
static void taint_value(const char *reason, char *buf, size_t len)
{
	size_t o = 0;
	for (size_t i = 0; reason[i] && o + 1 < len && o < 63; i++) {
		char c = reason[i];
		buf[o++] = (isalnum((unsigned char)c) || c == '.' || c == '_' ||
		            c == '-')
		               ? c
		               : '-';
	}
	while (o > 0 && !isalnum((unsigned char)buf[o - 1]))
		o--;
	buf[o] = '\0';
	size_t s = 0;
	while (buf[s] && !isalnum((unsigned char)buf[s]))
		s++;
	memmove(buf, buf + s, strlen(buf + s) + 1);
}

/* The taints for a GPU: an array, or NULL when it is healthy. */
static json_t *taints_for(const json_t *health, const char *uuid)
{
	json_t *h = health ? json_object_get(health, uuid) : NULL;
	char val[64];

	if (h == NULL || json_is_true(json_object_get(h, "healthy")))
		return NULL;
	taint_value(str_of(h, "reason"), val, sizeof(val));
	json_t *t = json_pack("{s:s,s:s}", "key", "gpuslice.io/unhealthy",
	                      "effect", "NoSchedule");
	if (val[0])
		json_object_set_new(t, "value", json_string(val));
	return json_pack("[o]", t);
}

static void common_attrs(json_t *attrs, const json_t *gpu,
                         const struct gs_gpu_model *m, int idx,
                         const char *driver_version)
{
	attr_int(attrs, "index", idx);
	attr_str(attrs, "uuid", str_of(gpu, "uuid"));
	attr_str(attrs, "model", m ? m->name : str_of(gpu, "model"));
	if (*str_of(gpu, "name"))
		attr_str(attrs, "productName", str_of(gpu, "name"));
	if (m) {
		char cc[16];
		attr_str(attrs, "architecture", m->architecture);
		snprintf(cc, sizeof(cc), "%d.%d", m->cc_major, m->cc_minor);
		attr_version(attrs, "cudaComputeCapability", cc);
	}
	if (driver_version && *driver_version)
		attr_version(attrs, "driverVersion", driver_version);
}

/* Whether a model has media-extension profiles ("+me"): at most one such
 * instance can exist, so they share a counter of 1. */
static bool has_me(const struct gs_gpu_model *m)
{
	for (int p = 0; p < m->n_profiles; p++)
		if (m->profiles[p].attributes &&
		    strcmp(m->profiles[p].attributes, "me") == 0)
			return true;
	return false;
}

/*
 * The shareable whole-GPU device. `oversub` > 1 (gpusliced's
 * swap.oversubscribe): its memory capacity is that many times the GPU's
 * (MiB-floored), so the scheduler places claims up to what gpusliced
 * admits with swap; one claim still asks for at most the GPU's memory
 * (validRange.max; prepare refuses more), one that asks for none gets
 * the GPU's memory, and the attribute memoryOversubscribe carries the
 * ratio (absent when off).
 */
static json_t *gpu_device(const json_t *gpu, const struct gs_gpu_model *m,
                          int idx, const char *drv, bool mig_ok,
                          bool counters, json_t *taints, double oversub)
{
	char name[64];
	struct gs_kdev_name n = {.kind = GS_KDEV_GPU, .gpu_index = idx};
	json_t *mig = json_object_get(gpu, "mig");
	int64_t mem = gpu_memory(gpu, m) / MIB * MIB, cap_mem = mem;
	json_t *attrs = json_object(), *cap;

	gs_kdev_format_name(&n, name, sizeof(name));
	common_attrs(attrs, gpu, m, idx, drv);
	attr_str(attrs, "type", "gpu");
	attr_bool(attrs, "migCapable", mig_ok);
	attr_bool(attrs, "migEnabled",
	          json_is_true(json_object_get(mig, "enabled")));
	if (oversub > 1.0) {
		char r[32];

		cap_mem = (int64_t)((double)gpu_memory(gpu, m) * oversub) /
		          MIB * MIB;
		snprintf(r, sizeof(r), "%g", oversub);
		attr_str(attrs, "memoryOversubscribe", r);
	}
	cap = json_pack(
	    "{s:{s:o,s:{s:o,s:{s:o,s:o,s:o}}},s:{s:o,s:{s:o,s:{s:o,s:o,s:o}}}}",
	    "memory", "value", quantity(cap_mem), "requestPolicy", "default",
	    quantity(mem), "validRange", "min", quantity(MIB), "max",
	    quantity(mem), "step", quantity(MIB), "compute", "value",
	    quantity(100), "requestPolicy", "default", quantity(100),
	    "validRange", "min", quantity(1), "max", quantity(100), "step",
	    quantity(1));
	json_t *d =
	    json_pack("{s:s,s:o,s:o,s:b}", "name", name, "attributes", attrs,
	              "capacity", cap, "allowMultipleAllocations", 1);
	if (counters) {
		/* The whole GPU takes every counter of its set. */
		json_t *c = json_object();
		char k[32];
		for (int s = 0; s < m->memory_slices; s++) {
			snprintf(k, sizeof(k), "memory-slice-%d", s);
			json_object_set_new(c, k,
			                    json_pack("{s:s}", "value", "1"));
		}
		json_object_set_new(
		    c, "compute-slices",
		    json_pack("{s:o}", "value", quantity(m->compute_slices)));
		json_object_set_new(
		    c, "memory",
		    json_pack("{s:o}", "value", quantity(gpu_memory(gpu, m))));
		if (has_me(m))
			json_object_set_new(c, "media-extensions",
			                    json_pack("{s:s}", "value", "1"));
		json_object_set_new(d, "consumesCounters",
		                    json_pack("[{s:s,s:o}]", "counterSet", name,
		                              "counters", c));
	}
	if (taints)
		json_object_set(d, "taints", taints);
	return d;
}

static int64_t profile_memory(const struct gs_mig_profile *p)
{
	return (int64_t)(p->memory_mib ? p->memory_mib
	                               : p->memory_mib_nominal) *
	       MIB;
}

/* A MIG placement's device; `counters`: it consumes the GPU's counter set
 * (a placement offered next to others), else a plain device (an instance
 * that exists, published where the server has no partitionable devices). */
static json_t *mig_device(const json_t *gpu, const struct gs_gpu_model *m,
                          const struct gs_mig_profile *p, int start, int idx,
                          const char *drv, json_t *taints, bool counters)
{
	struct gs_kdev_name n = {
	    .kind = GS_KDEV_MIG, .gpu_index = idx, .start = start};
	char name[64], set[32], k[32];
	json_t *attrs = json_object(), *c = json_object();
	int64_t mem = profile_memory(p);
	int pct = (p->compute_slices * 100 + m->compute_slices / 2) /
	          m->compute_slices;

	snprintf(n.profile, sizeof(n.profile), "%s", p->name);
	gs_kdev_format_name(&n, name, sizeof(name));
	snprintf(set, sizeof(set), "gpu-%d", idx);
	common_attrs(attrs, gpu, m, idx, drv);
	attr_str(attrs, "type", "mig");
	attr_str(attrs, "profile", p->name);
	attr_int(attrs, "memorySliceStart", start);
	attr_int(attrs, "memorySlices", p->memory_slices);
	attr_int(attrs, "computeSlices", p->compute_slices);
	if (p->sm_count > 0)
		attr_int(attrs, "multiprocessors", p->sm_count);
	for (int s = start; s < start + p->memory_slices; s++) {
		snprintf(k, sizeof(k), "memory-slice-%d", s);
		json_object_set_new(c, k, json_pack("{s:s}", "value", "1"));
	}
	json_object_set_new(
	    c, "compute-slices",
	    json_pack("{s:o}", "value", quantity(p->compute_slices)));
	json_object_set_new(c, "memory",
	                    json_pack("{s:o}", "value", quantity(mem)));
	if (p->attributes && strcmp(p->attributes, "me") == 0)
		json_object_set_new(c, "media-extensions",
		                    json_pack("{s:s}", "value", "1"));
	json_t *d =
	    json_pack("{s:s,s:o,s:{s:{s:o},s:{s:o}}}", "name", name,
	              "attributes", attrs, "capacity", "memory", "value",
	              quantity(mem), "compute", "value", quantity(pct));
	if (counters)
		json_object_set_new(
		    d, "consumesCounters",
		    json_pack("[{s:s,s:o}]", "counterSet", set, "counters", c));
	else
		json_decref(c);
	if (taints)
		json_object_set(d, "taints", taints);
	return d;
}

static json_t *counter_set(const json_t *gpu, const struct gs_gpu_model *m,
                           int idx)
{
	char name[32], k[32];
	json_t *c = json_object();

	snprintf(name, sizeof(name), "gpu-%d", idx);
	for (int s = 0; s < m->memory_slices; s++) {
		snprintf(k, sizeof(k), "memory-slice-%d", s);
		json_object_set_new(c, k, json_pack("{s:s}", "value", "1"));
	}
	json_object_set_new(
	    c, "compute-slices",
	    json_pack("{s:o}", "value", quantity(m->compute_slices)));
	json_object_set_new(
	    c, "memory",
	    json_pack("{s:o}", "value", quantity(gpu_memory(gpu, m))));
	if (has_me(m))
		json_object_set_new(c, "media-extensions",
		                    json_pack("{s:s}", "value", "1"));
	return json_pack("{s:s,s:o}", "name", name, "counters", c);
}

static json_t *slice_obj(const char *node, const char *driver, int k,
                         int64_t generation, json_t *body_key_value,
                         const char *body_key)
{
	char name[320];
	snprintf(name, sizeof(name), "%s-%s-%d", node, driver, k);
	json_t *spec = json_pack("{s:s,s:s,s:{s:s,s:I,s:I}}", "driver", driver,
	                         "nodeName", node, "pool", "name", node,
	                         "generation", (json_int_t)generation,
	                         "resourceSliceCount", (json_int_t)0);
	json_object_set_new(spec, body_key, body_key_value);
	return json_pack("{s:s,s:s,s:{s:s},s:o}", "apiVersion",
	                 "resource.k8s.io/v1", "kind", "ResourceSlice",
	                 "metadata", "name", name, "spec", spec);
}

static bool dns_label_ok(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!(islower((unsigned char)c) || isdigit((unsigned char)c) ||
		      c == '-' || c == '.'))
			return false;
	}
	return isalnum((unsigned char)s[0]) && isalnum((unsigned char)s[n - 1]);
}

/*
 * Partition k of K of a GPU: 1/K of its memory and compute, a plain
 * (not shareable) device. With `counters` it consumes 1/K of each
 * memory-slice counter of the GPU's set (milli-units), so partitions
 * exclude MIG placements and the whole GPU, and K of them fit.
 */
static json_t *part_device(const json_t *gpu, const struct gs_gpu_model *m,
                           int idx, int k, int K, const char *drv,
                           bool counters, json_t *taints)
{
	struct gs_kdev_name n = {
	    .kind = GS_KDEV_PART, .gpu_index = idx, .start = k, .parts = K};
	char name[64], set[32], key[32], milli[32];
	json_t *attrs = json_object();
	int64_t mem = gpu_memory(gpu, m) / MIB / K * MIB;

	gs_kdev_format_name(&n, name, sizeof(name));
	common_attrs(attrs, gpu, m, idx, drv);
	attr_str(attrs, "type", "partition");
	attr_int(attrs, "partition", k);
	attr_int(attrs, "partitions", K);
	json_t *d = json_pack("{s:s,s:o,s:{s:{s:o},s:{s:o}}}", "name", name,
	                      "attributes", attrs, "capacity", "memory",
	                      "value", quantity(mem), "compute", "value",
	                      quantity(100 / K));
	if (counters) {
		json_t *c = json_object();
		snprintf(milli, sizeof(milli), "%dm", 1000 / K);
		for (int s = 0; s < m->memory_slices; s++) {
			snprintf(key, sizeof(key), "memory-slice-%d", s);
			json_object_set_new(c, key,
			                    json_pack("{s:s}", "value", milli));
		}
		snprintf(set, sizeof(set), "gpu-%d", idx);
		json_object_set_new(d, "consumesCounters",
		                    json_pack("[{s:s,s:o}]", "counterSet", set,
		                              "counters", c));
	}
	if (taints)
		json_object_set(d, "taints", taints);
	return d;
}

void gs_kdev_layout_default(struct gs_kdev_layout *l)
{
	memset(l, 0, sizeof(*l));
	l->consumable = true;
	l->partitionable = true;
	l->taints = true;
	l->partitions = 4;
}

void gs_kdev_layout_name(const struct gs_kdev_layout *l, char *buf,
                         size_t len)
{
	char parts[32] = "shared";

	if (!l->consumable)
		snprintf(parts, sizeof(parts), "partitions%d", l->partitions);
	snprintf(buf, len, "%s+%s+%s", parts,
	         !l->partitionable        ? "nomig"
	         : l->shared_no_counters && l->consumable ? "mig-inline-exclusive"
	         : l->counters_inline    ? "mig-inline"
	                                 : "mig",
	         l->taints ? "taints" : "withdraw");
}

static json_t *slice_of(const char *node, const char *driver, int k,
                        int64_t generation, json_t *devs, json_t *sets)
{
	json_t *o = slice_obj(node, driver, k, generation, devs, "devices");
	if (sets)
		json_object_set_new(json_object_get(o, "spec"),
		                    "sharedCounters", sets);
	return o;
}

/*
 * Partitionable devices off, a GPU in MIG mode: its MIG instances that
 * exist (gpusliced's mig.instances), each a plain device named for its
 * placement, and nothing else of the GPU (its whole device or partitions
 * would share their hardware). Compute instances of one GPU instance are
 * one device. An instance of a profile the catalog does not know is left
 * out: it could not be prepared.
 */
static void existing_instances(const json_t *g, const struct gs_gpu_model *m,
                               int idx, const char *drv, json_t *taints,
                               json_t *devs)
{
	const json_t *inst =
	    json_object_get(json_object_get(g, "mig"), "instances"), *x;
	size_t i;

	json_array_foreach(inst, i, x)
	{
		const char *prof = str_of(x, "profile");
		const struct gs_mig_profile *p =
		    prof ? gs_catalog_profile(m, prof) : NULL;
		json_int_t start =
		    json_integer_value(json_object_get(x, "start"));
		bool dup = false;

		if (p == NULL || start < 0 || start > 64 ||
		    !gs_catalog_placement_valid(p, (int)start))
			continue;
		for (size_t j = 0; j < i && !dup; j++) {
			const json_t *y = json_array_get(inst, j);
			const char *py = str_of(y, "profile");

			dup = py && strcmp(py, prof) == 0 &&
			      json_integer_value(json_object_get(y, "start")) ==
			          start;
		}
		if (dup)
			continue;
		json_array_append_new(
		    devs, mig_device(g, m, p, (int)start, idx, drv, taints,
		                     false));
	}
}

/* One GPU's devices (appended to devs) and counter set (NULL: none). */
static void gpu_devices(const json_t *g, const struct gs_gpu_model *m,
                        int idx, const char *drv,
                        const struct gs_kdev_layout *l, json_t *taints,
                        double oversub, json_t *devs, json_t **set)
{
	bool mig_ok = mig_capable(g, m);
	bool mig_on = json_is_true(
	    json_object_get(json_object_get(g, "mig"), "enabled"));
	bool counters = mig_ok && l->partitionable;
	bool whole = true, placements = counters;

	*set = NULL;
	if (!l->partitionable && mig_ok && mig_on) {
		existing_instances(g, m, idx, drv, taints, devs);
		return;
	}
	if (counters && l->consumable && l->shared_no_counters) {
		whole = !mig_on;
		placements = mig_on;
	}
	if (l->consumable && whole) {
		json_array_append_new(
		    devs, gpu_device(g, m, idx, drv, mig_ok,
		                     counters && !l->shared_no_counters,
		                     taints, oversub));
	} else if (!l->consumable) {
		for (int k = 0; k < l->partitions; k++)
			json_array_append_new(
			    devs, part_device(g, m, idx, k, l->partitions,
			                      drv, counters, taints));
	}
	if (!counters)
		return;
	*set = counter_set(g, m, idx);
	if (!placements)
		return;
	for (int p = 0; p < m->n_profiles; p++) {
		const struct gs_mig_profile *pr = &m->profiles[p];
		for (int s = 0; s < pr->n_placements; s++)
			json_array_append_new(
			    devs, mig_device(g, m, pr, pr->placements[s].start,
			                     idx, drv, taints, true));
	}
}

gs_err gs_kdev_build_slices(const json_t *gpus, const json_t *health,
                            const char *node, const char *driver,
                            int64_t generation, json_t **slices,
                            struct gs_errbuf *eb)
{
	struct gs_kdev_layout l;

	gs_kdev_layout_default(&l);
	return gs_kdev_build_slices_for(gpus, health, node, driver, generation,
	                                &l, slices, eb);
}

gs_err gs_kdev_build_slices_for(const json_t *gpus, const json_t *health,
                                const char *node, const char *driver,
                                int64_t generation,
                                const struct gs_kdev_layout *l,
                                json_t **slices, struct gs_errbuf *eb)
{
	json_t *arr = json_object_get(gpus, "gpus"), *g;
	json_t *devs, *sets, *out = NULL;
	const char *drv = str_of(gpus, "driver");
	double oversub; /* swap.oversubscribe; 0 (absent) or 1: off */
	size_t i;
	int k = 0;
	gs_err err = GS_OK;

	*slices = NULL;
	if (!json_is_array(arr))
		return gs_fail(eb, GS_ERR_PARSE,
		               "gpusliced /v1/gpus: no \"gpus\" array");
	/* The longest slice name must stay a DNS subdomain (<= 253). */
	if (!node || !dns_label_ok(node, 253 - 24) || !driver ||
	    !dns_label_ok(driver, 63))
		return gs_fail(eb, GS_ERR_INVALID,
		               "node name '%s' or driver '%s' is not a DNS subdomain short enough for slice names",
		               node ? node : "", driver ? driver : "");
	if (generation < 1)
		return gs_fail(eb, GS_ERR_RANGE,
		               "pool generation %" PRId64 " must be >= 1",
		               generation);
	if (l->partitions < 1 || l->partitions > 32)
		return gs_fail(eb, GS_ERR_RANGE,
		               "partitions per GPU %d is outside 1..32",
		               l->partitions);
	devs = json_array();
	sets = json_array();
	out = json_array();
	oversub = json_number_value(json_object_get(gpus, "swap_oversubscribe"));
	json_array_foreach(arr, i, g)
	{
		int idx;
		const struct gs_gpu_model *m = model_of(g);
		json_t *taints, *set, *own;

		err = gpu_index(g, &idx, eb);
		if (err)
			goto out;
		if (!*str_of(g, "uuid")) {
			err = gs_fail(eb, GS_ERR_PARSE,
			              "gpusliced /v1/gpus: GPU %d has no uuid",
			              idx);
			goto out;
		}
		taints = taints_for(health, str_of(g, "uuid"));
		if (taints && !l->taints) {
			/* The server drops taints: withdraw the devices. */
			json_decref(taints);
			continue;
		}
		own = l->counters_inline ? json_array() : devs;
		gpu_devices(g, m, idx, drv, l, taints, oversub, own, &set);
		json_decref(taints);
		if (l->counters_inline && set) {
			/* 1.34: the set in the slice of its devices. */
			json_array_append_new(
			    out, slice_of(node, driver, k++, generation, own,
			                  json_pack("[o]", set)));
		} else if (l->counters_inline) {
			json_array_extend(devs, own);
			json_decref(own);
		} else if (set) {
			json_array_append_new(sets, set);
		}
	}

	/* Cut into slices: devices first, then counter sets. */
	size_t nd = json_array_size(devs), ns = json_array_size(sets);
	for (size_t a = 0; a < nd || (nd == 0 && a == 0 && ns == 0 && k == 0);
	     a += GS_KDEV_MAX_DEVICES) {
		json_t *chunk = json_array();
		for (size_t b = a; b < nd && b < a + GS_KDEV_MAX_DEVICES; b++)
			json_array_append(chunk, json_array_get(devs, b));
		json_array_append_new(
		    out,
		    slice_obj(node, driver, k++, generation, chunk, "devices"));
	}
	for (size_t a = 0; a < ns; a += GS_KDEV_MAX_SETS) {
		json_t *chunk = json_array();
		for (size_t b = a; b < ns && b < a + GS_KDEV_MAX_SETS; b++)
			json_array_append(chunk, json_array_get(sets, b));
		json_array_append_new(out,
		                      slice_obj(node, driver, k++, generation,
		                                chunk, "sharedCounters"));
	}
	json_array_foreach(out, i, g)
	{
		json_t *pool =
		    json_object_get(json_object_get(g, "spec"), "pool");
		json_object_set_new(pool, "resourceSliceCount",
		                    json_integer((json_int_t)k));
	}
	*slices = out;
	out = NULL;
out:
	json_decref(out);
	json_decref(devs);
	json_decref(sets);
	return err;
}
