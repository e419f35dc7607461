/*
 * prepare.c - a ResourceClaim to a slice plan (prepare.h).
 *
 * Order of the checks, each with its own message: the claim's UID, its
 * allocation, our driver's results, the node (pool and nodeSelector), the
 * device (name, then presence on the node), the consumed capacity against
 * the device, the opaque SliceConfigs (class first, then claim), and
 * finally the whole spec through gs_spec_validate.
 */
#include "prepare.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "devmodel.h"
#include "gs/catalog.h"
#include "gs/podcgroup.h"
#include "quantity.h"

gs_err gs_kprep_slice_name(const char *uid, char *buf, size_t len,
                           struct gs_errbuf *eb)
{
	size_t n = uid ? strlen(uid) : 0;

	if (n == 0 || n + strlen(GS_KPREP_SLICE_PREFIX) >= len ||
	    n + strlen(GS_KPREP_SLICE_PREFIX) >= GS_SPEC_NAME_MAX)
		return gs_fail(eb, GS_ERR_INVALID,
		               "claim UID '%s' is empty or too long",
		               uid ? uid : "");
	for (size_t i = 0; i < n; i++) {
		char c = uid[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-'))
			return gs_fail(eb, GS_ERR_INVALID,
			               "claim UID '%s' has a character outside [A-Za-z0-9-]",
			               uid);
	}
	snprintf(buf, len, "%s%s", GS_KPREP_SLICE_PREFIX, uid);
	return GS_OK;
}

static const char *jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

void gs_kprep_plan_fini(struct gs_kprep_plan *plan)
{
	if (plan == NULL)
		return;
	json_decref(plan->body);
	for (size_t i = 0; i < plan->n_results; i++) {
		free(plan->results[i].request);
		free(plan->results[i].pool);
		free(plan->results[i].device);
		free(plan->results[i].share_id);
	}
	free(plan->results);
	memset(plan, 0, sizeof(*plan));
}

/*
 * Whether the allocation's nodeSelector (if any) admits `node`: we accept
 * a selector with no terms, or one term whose metadata.name field (or the
 * kubernetes.io/hostname label) is In [.. node ..].
 */
static bool selector_admits(const json_t *sel, const char *node)
{
	const json_t *terms = json_object_get(sel, "nodeSelectorTerms");
	size_t i, j, k;
	const json_t *t, *req, *v;

	if (!json_is_array(terms) || json_array_size(terms) == 0)
		return true;
	json_array_foreach(terms, i, t)
	{
		bool ok = true, any = false;
		const char *lists[] = {"matchFields", "matchExpressions"};

		for (int l = 0; l < 2; l++) {
			json_array_foreach(json_object_get(t, lists[l]), j, req)
			{
				const char *key = jstr(req, "key");
				bool in = false;

				if (key == NULL ||
				    (strcmp(key, "metadata.name") != 0 &&
				     strcmp(key, "kubernetes.io/hostname") !=
				         0))
					continue;
				any = true;
				if (jstr(req, "operator") == NULL ||
				    strcmp(jstr(req, "operator"), "In") != 0) {
					ok = false;
					continue;
				}
				json_array_foreach(
				    json_object_get(req, "values"), k, v)
				{
					if (json_is_string(v) &&
					    strcmp(json_string_value(v),
					           node) == 0)
						in = true;
				}
				ok = ok && in;
			}
		}
		if (ok || !any)
			return true;
	}
	return false;
}

/* consumedCapacity[name] or [<driver>/name]; NULL when absent. */
static const char *capacity(const json_t *cc, const char *driver,
                            const char *name)
{
	char q[128];

	if (jstr(cc, name))
		return jstr(cc, name);
	snprintf(q, sizeof(q), "%s/%s", driver, name);
	return jstr(cc, q);
}

/* Whether an opaque config entry's requests cover `request` (a or a/b). */
static bool config_covers(const json_t *reqs, const char *request)
{
	size_t i, plen;
	const json_t *r;
	const char *slash = strchr(request, '/');

	if (!json_is_array(reqs) || json_array_size(reqs) == 0)
		return true;
	plen = slash ? (size_t)(slash - request) : strlen(request);
	json_array_foreach(reqs, i, r)
	{
		const char *s = json_string_value(r);

		if (s == NULL)
			continue;
		if (strcmp(s, request) == 0 ||
		    (strlen(s) == plen && strncmp(s, request, plen) == 0))
			return true;
	}
	return false;
}

/* Applies our opaque configs: FromClass ones, then FromClaim ones. */
static gs_err merge_configs(const json_t *configs, const char *driver,
                            const char *request, struct gs_kslicecfg *c,
                            struct gs_errbuf *eb)
{
	size_t i;
	const json_t *e;
	gs_err err;

	gs_kslicecfg_init(c);
	if (configs != NULL && !json_is_array(configs))
		return gs_fail(
		    eb, GS_ERR_INVALID,
		    "status.allocation.devices.config is not a list");
	for (int pass = 0; pass < 2; pass++) {
		json_array_foreach(configs, i, e)
		{
			const json_t *op = json_object_get(e, "opaque");
			const char *src = jstr(e, "source");
			bool from_class = src && strcmp(src, "FromClass") == 0;
			char where[96];

			if (op == NULL || jstr(op, "driver") == NULL ||
			    strcmp(jstr(op, "driver"), driver) != 0)
				continue; /* another driver's: not ours to read
				           */
			if (from_class != (pass == 0))
				continue;
			if (!config_covers(json_object_get(e, "requests"),
			                   request))
				continue;
			snprintf(where, sizeof(where),
			         "%s config[%zu] (opaque.parameters)",
			         from_class ? "class" : "claim", i);
			err = gs_kslicecfg_apply(
			    c, json_object_get(op, "parameters"), where, eb);
			if (err != GS_OK)
				return err;
		}
	}
	return GS_OK;
}

static gs_err take_results(const json_t *results, const char *driver,
                           struct gs_kprep_plan *p, struct gs_errbuf *eb)
{
	size_t i, n = 0;
	const json_t *r;

	json_array_foreach(results, i, r)
	{
		if (jstr(r, "driver") && strcmp(jstr(r, "driver"), driver) == 0)
			n++;
	}
	if (n == 0)
		return gs_fail(eb, GS_ERR_INVALID,
		               "the claim allocates no device of driver %s",
		               driver);
	p->results = calloc(n, sizeof(*p->results));
	if (p->results == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	json_array_foreach(results, i, r)
	{
		struct gs_kprep_result *o;

		if (!jstr(r, "driver") ||
		    strcmp(jstr(r, "driver"), driver) != 0)
			continue;
		o = &p->results[p->n_results++];
		o->request = dup_or_null(jstr(r, "request"));
		o->pool = dup_or_null(jstr(r, "pool"));
		o->device = dup_or_null(jstr(r, "device"));
		o->share_id = dup_or_null(jstr(r, "shareID"));
		if (o->request == NULL || o->pool == NULL || o->device == NULL)
			return gs_fail(
			    eb, GS_ERR_INVALID,
			    "status.allocation.devices.results[%zu]: request, pool and device must be strings",
			    i);
	}
	return GS_OK;
}

/* memory / compute of a whole-GPU device from its consumed capacity. */
static gs_err gpu_capacity(const json_t *r, const json_t *gpu,
                           const char *driver, struct gs_slice_spec *s,
                           struct gs_errbuf *eb)
{
	const json_t *cc = json_object_get(r, "consumedCapacity");
	const char *mem = capacity(cc, driver, "memory");
	const char *comp = capacity(cc, driver, "compute");
	json_int_t total =
	    json_integer_value(json_object_get(gpu, "memory_bytes"));
	const char *dev = jstr(r, "device");
	uint64_t v;
	gs_err err;

	if (mem == NULL) {
		s->memory_bytes = total > 0 ? (uint64_t)total : 0;
	} else {
		err = gs_kquantity_parse_uint(mem, "consumedCapacity.memory",
		                              &v, eb);
		if (err != GS_OK)
			return err;
		if (v == 0)
			return gs_fail(eb, GS_ERR_RANGE,
			               "consumedCapacity.memory is 0");
		if (total > 0 && v > (uint64_t)total)
			return gs_fail(eb, GS_ERR_RANGE,
			               "consumedCapacity.memory %s is more than device %s has (%lld bytes)",
			               mem, dev, (long long)total);
		s->memory_bytes = v;
	}
	if (comp == NULL) {
		s->compute_pct = 100;
	} else {
		err = gs_kquantity_parse_uint(comp, "consumedCapacity.compute",
		                              &v, eb);
		if (err != GS_OK)
			return err;
		if (v < 1 || v > 100)
			return gs_fail(eb, GS_ERR_RANGE,
			               "consumedCapacity.compute %s is outside 1..100 (percent of device %s)",
			               comp, dev);
		s->compute_pct = (int)v;
	}
	return GS_OK;
}

#define MIB (1024ll * 1024ll)

static int64_t gpu_total_memory(const json_t *gpu)
{
	return json_integer_value(json_object_get(gpu, "memory_bytes"));
}

/*
 * One slice per claim: one device, or several partitions of one GPU
 * (gpu-N-part-K-of-P, each at most once; a partitioned GPU's claim asks
 * for `count`), which become one slice of their summed share.
 */
static gs_err check_partitions(const struct gs_kprep_plan *p,
                               const char *driver, struct gs_errbuf *eb)
{
	struct gs_kdev_name first, n;

	if (p->n_results == 1)
		return GS_OK;
	if (gs_kdev_parse_name(p->results[0].device, &first, NULL) != GS_OK ||
	    first.kind != GS_KDEV_PART)
		return gs_fail(eb, GS_ERR_UNSUPPORTED,
		               "the claim allocates %zu %s devices; a claim gets one slice on one device (or partitions of one GPU)",
		               p->n_results, driver);
	for (size_t i = 1; i < p->n_results; i++) {
		if (gs_kdev_parse_name(p->results[i].device, &n, NULL) !=
		        GS_OK ||
		    n.kind != GS_KDEV_PART || n.gpu_index != first.gpu_index ||
		    n.parts != first.parts ||
		    strcmp(p->results[i].pool, p->results[0].pool) != 0)
			return gs_fail(eb, GS_ERR_UNSUPPORTED,
			               "the claim allocates %s and %s: partitions of one GPU only make one slice",
			               p->results[0].device,
			               p->results[i].device);
		for (size_t j = 0; j < i; j++)
			if (strcmp(p->results[i].device,
			           p->results[j].device) == 0)
				return gs_fail(eb, GS_ERR_INVALID,
				               "the claim allocates %s twice",
				               p->results[i].device);
	}
	return GS_OK;
}

/* The longest slice label value gpusliced takes (daemon/slice.h). */
#define LABEL_VALUE_MAX 253

/*
 * The slice's labels for per-claim metrics: k8s_namespace, k8s_claim,
 * k8s_claim_uid and, when status.reservedFor names pods, k8s_pod (their
 * names joined with commas, or the first where that is too long). Values
 * longer than gpusliced takes are left out.
 *
 * For attributing GPU processes to the claim by cgroup (gs/podcgroup.h:
 * a process's pod UID from /proc/PID/cgroup), k8s_pod_uid holds the UIDs
 * of the pods in reservedFor, joined with commas: up to 6 fit in a label
 * value; past that k8s_pod_uid_more says how many were left out, so a
 * reader knows the list is not whole. NULL on ENOMEM.
 */
static json_t *claim_labels(const json_t *claim)
{
	const json_t *meta = json_object_get(claim, "metadata");
	const json_t *rf = json_object_get(json_object_get(claim, "status"),
	                                   "reservedFor");
	static const char *const keys[][2] = {{"k8s_namespace", "namespace"},
	                                      {"k8s_claim", "name"},
	                                      {"k8s_claim_uid", "uid"}};
	char pods[LABEL_VALUE_MAX + 1] = "", first[LABEL_VALUE_MAX + 1] = "";
	char uids[LABEL_VALUE_MAX + 1] = "";
	int uids_left_out = 0;
	bool too_long = false;
	json_t *o = json_object();
	const json_t *r;
	size_t i;

	if (o == NULL)
		return NULL;
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *v = jstr(meta, keys[i][1]);

		if (v && strlen(v) <= LABEL_VALUE_MAX)
			json_object_set_new(o, keys[i][0], json_string(v));
	}
	json_array_foreach(rf, i, r)
	{
		const char *res = jstr(r, "resource");
		const char *name = jstr(r, "name");
		const char *uid = jstr(r, "uid");
		size_t used = strlen(pods);

		if (res != NULL && strcmp(res, "pods") == 0 && uid != NULL &&
		    uid[0] != '\0') {
			size_t u = strlen(uids);

			if (u + (u ? 1 : 0) + strlen(uid) > LABEL_VALUE_MAX) {
				uids_left_out++;
			} else {
				if (u)
					uids[u++] = ',';
				memcpy(uids + u, uid, strlen(uid) + 1);
			}
		}
		if (res == NULL || strcmp(res, "pods") != 0 || name == NULL ||
		    strlen(name) > LABEL_VALUE_MAX)
			continue;
		if (first[0] == '\0')
			snprintf(first, sizeof(first), "%s", name);
		if (used + (used ? 1 : 0) + strlen(name) > LABEL_VALUE_MAX) {
			too_long = true;
		} else {
			if (used)
				pods[used++] = ',';
			memcpy(pods + used, name, strlen(name) + 1);
		}
	}
	if (first[0])
		json_object_set_new(o, "k8s_pod",
		                    json_string(too_long ? first : pods));
	if (uids[0])
		json_object_set_new(o, "k8s_pod_uid", json_string(uids));
	if (uids_left_out > 0) {
		char n[16];

		(void)snprintf(n, sizeof(n), "%d", uids_left_out);
		json_object_set_new(o, "k8s_pod_uid_more", json_string(n));
	}
	return o;
}

static json_t *spec_body(const struct gs_kprep_plan *p)
{
	const struct gs_slice_spec *s = &p->spec;
	json_t *b = json_object();

	if (b == NULL)
		return NULL;
	json_object_set_new(b, "name", json_string(p->slice_name));
	if (s->memory_bytes)
		json_object_set_new(b, "memory",
		                    json_integer((json_int_t)s->memory_bytes));
	if (s->compute_pct)
		json_object_set_new(b, "compute", json_integer(s->compute_pct));
	json_object_set_new(b, "priority",
	                    json_string(gs_priority_name(s->priority)));
	json_object_set_new(b, "weight", json_integer(s->weight));
	json_object_set_new(b, "mode", json_string(gs_mode_name(s->mode)));
	if (s->mig_profile[0])
		json_object_set_new(b, "mig-profile",
		                    json_string(s->mig_profile));
	if (s->has_mig_start)
		json_object_set_new(b, "mig_start", json_integer(s->mig_start));
	json_object_set_new(b, "isolation",
	                    json_string(gs_isolation_name(s->isolation)));
	json_object_set_new(b, "compute_mode",
	                    json_string(s->compute_mode == GS_COMPUTE_SHARE
	                                    ? "share"
	                                    : "strict"));
	if (s->swap == GS_SWAP_NEVER)
		json_object_set_new(b, "swap", json_string("never"));
	json_object_set_new(b, "gpu", json_integer(p->gpu_index));
	json_object_set_new(b, "on_exit", json_string("keep"));
	return b;
}

gs_err gs_kprep_plan(const json_t *claim, const json_t *gpus, const char *uid,
                     const char *node, const char *driver,
                     struct gs_kprep_plan *p, struct gs_errbuf *eb)
{
	const json_t *meta = json_object_get(claim, "metadata");
	const json_t *alloc =
	    json_object_get(json_object_get(claim, "status"), "allocation");
	const json_t *devs = json_object_get(alloc, "devices");
	const json_t *gpu = NULL, *r0 = NULL;
	struct gs_kdev_name dn;
	struct gs_errbuf e = {0};
	size_t i;
	const json_t *r;
	gs_err err;

	memset(p, 0, sizeof(*p));
	if (!json_is_object(claim))
		return gs_fail(eb, GS_ERR_PARSE,
		               "the claim is not a JSON object");
	err =
	    gs_kprep_slice_name(uid, p->slice_name, sizeof(p->slice_name), eb);
	if (err != GS_OK)
		return err;
	if (jstr(meta, "uid") == NULL || strcmp(jstr(meta, "uid"), uid) != 0)
		return gs_fail(
		    eb, GS_ERR_INVALID,
		    "claim %s/%s has UID %s, the kubelet asked for %s (deleted and recreated?)",
		    jstr(meta, "namespace") ? jstr(meta, "namespace") : "?",
		    jstr(meta, "name") ? jstr(meta, "name") : "?",
		    jstr(meta, "uid") ? jstr(meta, "uid") : "(none)", uid);
	if (!json_is_object(alloc))
		return gs_fail(
		    eb, GS_ERR_INVALID,
		    "claim has no status.allocation (not allocated yet)");
	if (!json_is_array(json_object_get(devs, "results")))
		return gs_fail(eb, GS_ERR_INVALID,
		               "status.allocation.devices.results is missing");
	err = take_results(json_object_get(devs, "results"), driver, p, eb);
	if (err != GS_OK)
		goto fail;
	err = check_partitions(p, driver, eb);
	if (err != GS_OK)
		goto fail;
	if (strcmp(p->results[0].pool, node) != 0) {
		err = gs_fail(
		    eb, GS_ERR_INVALID,
		    "the claim's device %s is in pool %s, not on this node %s",
		    p->results[0].device, p->results[0].pool, node);
		goto fail;
	}
	if (json_object_get(alloc, "nodeSelector") &&
	    !selector_admits(json_object_get(alloc, "nodeSelector"), node)) {
		err = gs_fail(eb, GS_ERR_INVALID,
		              "status.allocation.nodeSelector does not select this node %s",
		              node);
		goto fail;
	}
	json_array_foreach(json_object_get(devs, "results"), i, r)
	{
		if (jstr(r, "driver") && strcmp(jstr(r, "driver"), driver) == 0)
			r0 = r;
	}
	err = gs_kdev_parse_name(p->results[0].device, &dn, &e);
	if (err != GS_OK) {
		err = gs_fail(eb, GS_ERR_NOT_FOUND, "unknown device %s: %s",
		              p->results[0].device, e.msg);
		goto fail;
	}
	err = gs_kdev_lookup(gpus, &dn, &gpu, &e);
	if (err != GS_OK) {
		err = gs_fail(eb, GS_ERR_NOT_FOUND,
		              "device %s is not on this node: %s",
		              p->results[0].device, e.msg);
		goto fail;
	}
	err = merge_configs(json_object_get(devs, "config"), driver,
	                    p->results[0].request, &p->config, eb);
	if (err != GS_OK)
		goto fail;
	gs_spec_init(&p->spec);
	snprintf(p->spec.name, sizeof(p->spec.name), "%s", p->slice_name);
	p->spec.priority = p->config.priority;
	p->spec.weight = p->config.weight;
	p->spec.isolation = p->config.isolation;
	p->spec.swap = p->config.swap;
	p->spec.compute_mode = p->config.compute_mode == GS_KCOMPUTE_SHARE
	                           ? GS_COMPUTE_SHARE
	                           : GS_COMPUTE_STRICT;
	p->spec.gpu.kind = GS_GPU_INDEX;
	p->spec.gpu.index = dn.gpu_index;
	p->gpu_index = dn.gpu_index;
	if (dn.kind == GS_KDEV_MIG) {
		p->mig = true;
		p->mig_start = dn.start;
		snprintf(p->mig_profile, sizeof(p->mig_profile), "%s",
		         dn.profile);
		snprintf(p->spec.mig_profile, sizeof(p->spec.mig_profile), "%s",
		         dn.profile);
		/* The scheduler's placement: gpusliced creates exactly it
		 * (spec mig-start) or refuses. */
		p->spec.has_mig_start = true;
		p->spec.mig_start = dn.start;
		/*
		 * A DRA MIG device belongs to one claim, so the slice takes the
		 * whole instance (all its memory, 100 %): gpusliced then never
		 * layers another slice into it, as it may for mig+timeslice.
		 */
		{
			const char *model =
			    json_string_value(json_object_get(gpu, "model"));
			const struct gs_gpu_model *m =
			    gs_catalog_find(model ? model : "");
			const struct gs_mig_profile *prof =
			    m ? gs_catalog_profile(m, dn.profile) : NULL;

			if (prof == NULL || prof->memory_mib == 0) {
				err = gs_fail(eb, GS_ERR_NOT_FOUND,
				              "device %s: profile %s is not in the catalog for model %s",
				              p->results[0].device, dn.profile,
				              model ? model : "?");
				goto fail;
			}
			p->spec.memory_bytes = prof->memory_mib << 20;
			p->spec.compute_pct = 100;
		}
		p->spec.mode = p->config.mps ? GS_MODE_MIG_MPS : GS_MODE_MIG;
	} else if (dn.kind == GS_KDEV_PART) {
		/* The claim's partitions of one GPU, summed. */
		int64_t mem = gpu_total_memory(gpu) / MIB / dn.parts * MIB;
		p->spec.mode = p->config.mps ? GS_MODE_MPS : GS_MODE_TIMESLICE;
		p->spec.memory_bytes = (uint64_t)mem * p->n_results;
		p->spec.compute_pct = (int)(100 / dn.parts * (int)p->n_results);
		if (mem <= 0) {
			err = gs_fail(eb, GS_ERR_NOT_FOUND,
			              "device %s: gpusliced reports no memory for GPU %d",
			              p->results[0].device, dn.gpu_index);
			goto fail;
		}
	} else {
		p->spec.mode = p->config.mps ? GS_MODE_MPS : GS_MODE_TIMESLICE;
		err = gpu_capacity(r0, gpu, driver, &p->spec, eb);
		if (err != GS_OK)
			goto fail;
	}
	err = gs_spec_validate(&p->spec, &e);
	if (err != GS_OK) {
		err = gs_fail(eb, err, "SliceConfig does not fit device %s: %s",
		              p->results[0].device, e.msg);
		goto fail;
	}
	p->body = spec_body(p);
	if (p->body != NULL &&
	    json_object_set_new(p->body, "labels", claim_labels(claim)) != 0) {
		json_decref(p->body);
		p->body = NULL;
	}
	if (p->body == NULL) {
		err = gs_fail(eb, GS_ERR_NOMEM, "out of memory");
		goto fail;
	}
	return GS_OK;
fail:
	gs_kprep_plan_fini(p);
	return err;
}

gs_err gs_kprep_consumers(const json_t *claim, char **text, size_t *len,
                          struct gs_errbuf *eb)
{
	const json_t *rf = json_object_get(json_object_get(claim, "status"),
	                                   "reservedFor");
	size_t i, cap = strlen(GS_K8S_PODS_MAGIC) + 2, off;
	const json_t *r;
	char *buf;
	int n = 0;

	*text = NULL;
	*len = 0;
	json_array_foreach(rf, i, r)
	{
		const char *uid = jstr(r, "uid");

		cap += uid ? strlen(uid) + 1 : 0;
	}
	buf = malloc(cap);
	if (buf == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	off = (size_t)snprintf(buf, cap, "%s\n", GS_K8S_PODS_MAGIC);
	json_array_foreach(rf, i, r)
	{
		const char *res = jstr(r, "resource"), *uid = jstr(r, "uid");
		size_t k = 0, u;

		if (res == NULL || strcmp(res, "pods") != 0 || uid == NULL)
			continue;
		if (!gs_podset_uid_is_valid(uid)) {
			free(buf);
			return gs_fail(eb, GS_ERR_INVALID,
			               "status.reservedFor[%zu].uid '%.64s' is not a pod UID",
			               i, uid);
		}
		u = strlen(uid);
		/* Once each (a list of a few hundred at most). */
		while (k < off && !(k + u < off &&
		                    strncasecmp(buf + k, uid, u) == 0 &&
		                    buf[k + u] == '\n' &&
		                    (k == 0 || buf[k - 1] == '\n')))
			k += strcspn(buf + k, "\n") + 1;
		if (k < off)
			continue;
		if (++n > GS_K8S_PODS_MAX) {
			free(buf);
			return gs_fail(eb, GS_ERR_RANGE,
			               "status.reservedFor names more than %d pods; gpuslice places at most that many per claim",
			               GS_K8S_PODS_MAX);
		}
		memcpy(buf + off, uid, u);
		buf[off + u] = '\n';
		off += u + 1;
	}
	buf[off] = '\0';
	*text = buf;
	*len = off;
	return GS_OK;
}
