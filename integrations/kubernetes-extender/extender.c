/*
 * extender.c - the extender's verbs (see extender.h). Pod requests are
 * read from the containers' resource requests: "cpu" (cores or "NNNm"),
 * "gpuslice.io/gpu-milli" (a share of one GPU, 1..999) and
 * "nvidia.com/gpu" (whole GPUs), combined as the scheduler does
 * (k8s.io/component-helpers resource.PodRequests): the app containers and
 * sidecars (init containers with restartPolicy Always) add up, each plain
 * init container runs alone beside the sidecars started before it, and
 * the pod needs the larger of the two, plus spec.overhead. Claims the pod
 * gets GPUs through (spec.resourceClaims, DRA) count the same way when a
 * lookup is given (gs_ext_handle_dra): see dra_request below. A node's GPU
 * free share is the smaller of its free memory and free compute, in
 * milli-GPU, as in core's `frag` placement policy.
 *
 * The wire types are k8s.io/kube-scheduler/extender/v1's: ExtenderArgs
 * {Pod, Nodes (a v1.NodeList: "items"), NodeNames}; the filter answers an
 * ExtenderFilterResult {Nodes, NodeNames, FailedNodes,
 * FailedAndUnresolvableNodes, Error} in the mode it was asked in: node
 * names when the scheduler sent NodeNames (nodeCacheCapable: true), else
 * the passing Node objects as a NodeList (the scheduler reads only
 * Nodes.items then).
 */
#include "extender.h"

#include "gs/frag.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ext_node {
	char name[256];
	int64_t cpu_free;
	unsigned ngpu;
	uint16_t free[GS_TRACE_MAX_DEVS];
	unsigned model;
	double gpu_memory; /* bytes, its first GPU's: a claim's memory share */
	char unreachable[256]; /* "" when its state is known */
};

struct gs_ext_state {
	struct gs_trace_models models;
	size_t n;
	struct ext_node *node; /* owned */
	size_t nd;
	struct gs_trace_class *demand; /* owned; nd classes, weight in p */
};

void gs_ext_state_free(struct gs_ext_state *st)
{
	if (st == NULL)
		return;
	free(st->node);
	free(st->demand);
	free(st);
}

static gs_err bad(struct gs_errbuf *eb, const char *what, size_t i)
{
	return gs_fail(eb, GS_ERR_PARSE, "extender state: %s (entry %zu)", what,
	               i);
}

static gs_err parse_node(struct gs_ext_state *st, json_t *jn, size_t i,
                         struct gs_errbuf *eb)
{
	struct ext_node *n = &st->node[i];
	json_t *name = json_object_get(jn, "name");
	json_t *gpus = json_object_get(jn, "gpus");
	json_t *g;
	size_t k;
	int model = -1;

	if (!json_is_string(name) ||
	    strlen(json_string_value(name)) >= sizeof(n->name))
		return bad(eb, "node without a name", i);
	strcpy(n->name, json_string_value(name));
	if (json_is_string(json_object_get(jn, "unreachable"))) {
		/* A node the live source could not read: no GPU state. */
		snprintf(n->unreachable, sizeof(n->unreachable), "%s",
		         json_string_value(json_object_get(jn, "unreachable")));
		if (n->unreachable[0] == '\0')
			snprintf(n->unreachable, sizeof(n->unreachable),
			         "unreachable");
		return GS_OK;
	}
	n->cpu_free = json_integer_value(json_object_get(jn, "cpu_free_milli"));
	if (!json_is_integer(json_object_get(jn, "cpu_free_milli")))
		n->cpu_free = INT64_MAX / 4; /* not reported: never binds */
	if (!json_is_array(gpus) || json_array_size(gpus) > GS_TRACE_MAX_DEVS)
		return bad(eb, "node needs a \"gpus\" array of at most 16", i);
	json_array_foreach(gpus, k, g)
	{
		json_t *m = json_object_get(g, "model");
		double tot = (double)json_integer_value(
		    json_object_get(g, "memory_total_bytes"));
		double fr = (double)json_integer_value(
		    json_object_get(g, "memory_free_bytes"));
		json_t *jc = json_object_get(g, "compute_free_pct");
		double c = json_is_number(jc) ? json_number_value(jc) : 100;
		double mem = tot > 0 ? fr / tot : 0, share;

		if (!json_is_string(m) || tot <= 0 || fr < 0 || fr > tot ||
		    c < 0 || c > 100)
			return bad(eb,
			           "GPU needs model, memory_total_bytes > 0, 0 <= memory_free_bytes <= total, compute_free_pct 0..100",
			           i);
		model =
		    gs_trace_models_intern(&st->models, json_string_value(m),
		                           strlen(json_string_value(m)));
		if (model < 0)
			return bad(eb, "bad or too many GPU model names", i);
		share = mem < c / 100 ? mem : c / 100;
		if (n->ngpu == 0)
			n->gpu_memory = tot;
		n->free[n->ngpu++] = (uint16_t)floor(share * GS_TRACE_MILLI);
	}
	n->model = model < 0 ? 0 : (unsigned)model; /* one model per node */
	return GS_OK;
}

/*
 * One demand entry: a task shape and either "count" (tasks, default 1) or
 * "weight" (a decayed count, as gpusliced's GET /v1/demand gives). An
 * entry with "gpu_milli": null (a MIG shape) is skipped.
 */
static gs_err parse_demand(struct gs_ext_state *st, json_t *v, size_t i,
                           struct gs_errbuf *eb)
{
	json_t *jc = json_object_get(v, "count");
	json_t *jw = json_object_get(v, "weight");
	json_t *jg = json_object_get(v, "gpu_milli");
	struct gs_trace_pod p;
	double w = 1;

	if (json_is_null(jg))
		return GS_OK;
	p = (struct gs_trace_pod){
	    .cpu_milli =
	        (uint32_t)json_integer_value(json_object_get(v, "cpu_milli")),
	    .gpu_milli = (uint16_t)json_integer_value(jg),
	    .num_gpu =
	        (uint8_t)json_integer_value(json_object_get(v, "num_gpu")),
	};
	if (json_is_number(jw))
		w = json_number_value(jw);
	else if (json_is_integer(jc))
		w = (double)json_integer_value(jc);
	if (!json_is_integer(jg) || json_integer_value(jg) < 0 ||
	    json_integer_value(jg) > GS_TRACE_MILLI ||
	    !gs_trace_pod_is_valid(&p) || !(w >= 0) || w > 1e12)
		return bad(
		    eb,
		    "invalid demand entry (cpu_milli, gpu_milli 0..1000, num_gpu, count or weight >= 0)",
		    i);
	st->demand[st->nd++] = (struct gs_trace_class){
	    .cpu_milli = p.cpu_milli,
	    .gpu_milli = p.gpu_milli,
	    .num_gpu = p.num_gpu,
	    .count = (uint32_t)(w + 0.5),
	    .p = w,
	};
	return GS_OK;
}

gs_err gs_ext_state_parse(const char *text, size_t len,
                          struct gs_ext_state **out, struct gs_errbuf *eb)
{
	json_error_t je;
	json_t *root = json_loadb(text, len, 0, &je);
	json_t *nodes, *demand, *v;
	struct gs_ext_state *st;
	size_t i;
	gs_err err = GS_OK;

	*out = NULL;
	if (root == NULL)
		return gs_fail(eb, GS_ERR_PARSE, "extender state: %s (line %d)",
		               je.text, je.line);
	nodes = json_object_get(root, "nodes");
	demand = json_object_get(root, "demand");
	st = calloc(1, sizeof(*st));
	if (st == NULL || !json_is_array(nodes)) {
		json_decref(root);
		free(st);
		return st == NULL
		           ? gs_fail(eb, GS_ERR_NOMEM, "out of memory")
		           : gs_fail(eb, GS_ERR_PARSE,
		                     "extender state: no \"nodes\" array");
	}
	st->n = json_array_size(nodes);
	st->node = calloc(st->n ? st->n : 1, sizeof(*st->node));
	if (st->node == NULL)
		err = gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	json_array_foreach(nodes, i, v)
	{
		if (err == GS_OK)
			err = parse_node(st, v, i, eb);
	}
	if (err == GS_OK && json_is_array(demand)) {
		st->demand =
		    calloc(json_array_size(demand) + 1, sizeof(*st->demand));
		if (st->demand == NULL)
			err = gs_fail(eb, GS_ERR_NOMEM, "out of memory");
		json_array_foreach(demand, i, v)
		{
			if (err != GS_OK)
				break;
			err = parse_demand(st, v, i, eb);
		}
	}
	json_decref(root);
	if (err != GS_OK) {
		gs_ext_state_free(st);
		return err;
	}
	*out = st;
	return GS_OK;
}

/* "4", "1.5", "500m" -> millicores; -1 when malformed. */
static int64_t parse_cpu(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v < 0)
		return -1;
	if (*end == 'm' && end[1] == '\0')
		return (int64_t)v;
	if (*end != '\0')
		return -1;
	return (int64_t)(v * 1000);
}

static int64_t quantity(json_t *q)
{
	if (json_is_integer(q))
		return json_integer_value(q);
	if (json_is_string(q)) {
		char *end;
		long long v = strtoll(json_string_value(q), &end, 10);
		return (*end == '\0' && end != json_string_value(q)) ? v : -1;
	}
	return -1;
}

/* One container's (or the overhead's) requests. */
struct ctr_req {
	int64_t cpu, share, whole;
};

/* Reads a container's resources.requests (or a pod's overhead map). */
static bool ctr_request(json_t *req, struct ctr_req *r, const char **why)
{
	json_t *v;

	memset(r, 0, sizeof(*r));
	if (!json_is_object(req))
		return true; /* no requests, or null */
	if ((v = json_object_get(req, "cpu")) != NULL && !json_is_null(v)) {
		r->cpu = json_is_string(v)
		             ? parse_cpu(json_string_value(v))
		             : (json_is_number(v)
		                    ? (int64_t)(json_number_value(v) * 1000)
		                    : -1);
		if (r->cpu < 0) {
			*why = "bad cpu request";
			return false;
		}
	}
	if ((v = json_object_get(req, "gpuslice.io/gpu-milli")) &&
	    !json_is_null(v)) {
		r->share = quantity(v);
		if (r->share < 1 || r->share > 999) {
			*why = "gpuslice.io/gpu-milli must be 1..999";
			return false;
		}
	}
	if ((v = json_object_get(req, "nvidia.com/gpu")) && !json_is_null(v)) {
		r->whole = quantity(v);
		if (r->whole < 0 || r->whole > GS_TRACE_MAX_DEVS) {
			*why = "bad nvidia.com/gpu request";
			return false;
		}
	}
	return true;
}

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/*
 * The pod's request as the scheduler computes it (see the header
 * comment); false on bad input. A GPU share must sit in one container of
 * those that run together: two shares in the app containers are an error,
 * as one pod's share is one slice of one GPU.
 */
static bool pod_request(json_t *pod, struct gs_trace_pod *p, const char **why)
{
	json_t *spec = json_object_get(pod, "spec");
	json_t *ctrs = json_object_get(spec, "containers");
	json_t *inits = json_object_get(spec, "initContainers");
	json_t *c;
	size_t i;
	struct ctr_req app = {0}, side = {0}, top = {0}, r;

	memset(p, 0, sizeof(*p));
	if (!json_is_array(ctrs)) {
		*why = "Pod.spec.containers missing";
		return false;
	}
	/* init containers in order: sidecars add up from where they start */
	json_array_foreach(inits, i, c)
	{
		const char *rp =
		    json_string_value(json_object_get(c, "restartPolicy"));

		if (!ctr_request(
		        json_object_get(json_object_get(c, "resources"),
		                        "requests"),
		        &r, why))
			return false;
		if (rp != NULL && strcmp(rp, "Always") == 0) {
			if (r.share > 0 && side.share > 0) {
				*why = "gpuslice.io/gpu-milli in two sidecars";
				return false;
			}
			side.cpu += r.cpu;
			side.share += r.share;
			side.whole += r.whole;
			r = side; /* while it starts, the sidecars so far run */
		} else {
			r.cpu += side.cpu;
			r.whole += side.whole;
			if (r.share > 0 && side.share > 0) {
				*why =
				    "gpuslice.io/gpu-milli in an init container and a sidecar";
				return false;
			}
			r.share += side.share;
		}
		top.cpu = max64(top.cpu, r.cpu);
		top.share = max64(top.share, r.share);
		top.whole = max64(top.whole, r.whole);
	}
	app = side;
	json_array_foreach(ctrs, i, c)
	{
		if (!ctr_request(
		        json_object_get(json_object_get(c, "resources"),
		                        "requests"),
		        &r, why))
			return false;
		if (r.share > 0 && app.share > 0) {
			*why = "gpuslice.io/gpu-milli must be 1..999, "
			       "in one container";
			return false;
		}
		app.cpu += r.cpu;
		app.share += r.share;
		app.whole += r.whole;
	}
	if (!ctr_request(json_object_get(spec, "overhead"), &r, why))
		return false;
	app.cpu = max64(app.cpu, top.cpu) + r.cpu;
	app.share = max64(app.share, top.share);
	app.whole = max64(app.whole, top.whole);
	if (app.whole > GS_TRACE_MAX_DEVS) {
		*why = "bad nvidia.com/gpu request";
		return false;
	}
	if (app.share > 0 && app.whole > 0) {
		*why = "a pod asks for a GPU share or whole GPUs, not both";
		return false;
	}
	p->cpu_milli = (uint32_t)app.cpu;
	p->gpu_milli =
	    (uint16_t)(app.share > 0 ? app.share : (app.whole > 0 ? 1000 : 0));
	p->num_gpu = (uint8_t)(app.share > 0 ? 1 : app.whole);
	return true;
}

/*
 * What a pod gets through its DRA claims of gpuslice's device classes
 * ("gpuslice.io" or any "<name>.gpuslice.io"): shared-GPU requests by
 * their capacity (compute percent, memory bytes: the node's GPU memory
 * turns them into a share, so per node), partitions as 1/GS_EXT_PARTS of
 * a GPU each, whole-GPU requests (no capacity) as whole GPUs. MIG
 * requests are not counted (as MIG demand shapes are not): the scorer has
 * no MIG placements.
 */
#define GS_EXT_PARTS 4 /* the plugin's default partitions per GPU */

#define GS_EXT_MAX_SHARES 16

struct dra_req {
	struct {
		int64_t milli; /* compute, or partitions */
		double mem;    /* bytes */
	} share[GS_EXT_MAX_SHARES];
	int n_shares;
	int64_t whole; /* whole GPUs */
};

static bool add_share(struct dra_req *d, int64_t milli, double mem,
                      const char **why)
{
	if (d->n_shares == GS_EXT_MAX_SHARES) {
		*why = "too many gpuslice.io requests in the pod's claims";
		return false;
	}
	d->share[d->n_shares].milli = milli;
	d->share[d->n_shares++].mem = mem;
	return true;
}

static bool ours(const char *cls)
{
	size_t n = cls ? strlen(cls) : 0;

	return n > 0 && (strcmp(cls, "gpuslice.io") == 0 ||
	                 (n > 12 && strcmp(cls + n - 12, ".gpuslice.io") == 0));
}

/* "8Gi", "8G", "8589934592", "1.5Gi" -> bytes; -1 when malformed. */
static double bytes_of(const char *q)
{
	static const struct {
		const char *sfx;
		double mul;
	} units[] = {{"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0},
	             {"Ti", 1099511627776.0}, {"k", 1e3}, {"K", 1e3},
	             {"M", 1e6}, {"G", 1e9}, {"T", 1e12}};
	char *end;
	double v = q ? strtod(q, &end) : -1;

	if (q == NULL || end == q || v < 0)
		return -1;
	if (*end == '\0')
		return v;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(end, units[i].sfx) == 0)
			return v * units[i].mul;
	return -1;
}

/* One request of a claim's spec.devices (v1 "exactly", a prioritized
 * list's first choice, or v1beta1's fields on the request itself). */
static bool dra_one(json_t *r, struct dra_req *d, const char **why)
{
	json_t *x = json_object_get(r, "exactly");
	json_t *caps, *jc;
	const char *cls, *mode;
	int64_t count = 1;

	if (x == NULL && json_is_array(json_object_get(r, "firstAvailable")))
		x = json_array_get(json_object_get(r, "firstAvailable"), 0);
	if (x == NULL)
		x = r;
	cls = json_string_value(json_object_get(x, "deviceClassName"));
	if (!ours(cls) || strncmp(cls, "mig.", 4) == 0)
		return true;
	mode = json_string_value(json_object_get(x, "allocationMode"));
	if (mode != NULL && strcmp(mode, "All") == 0) {
		*why = "a gpuslice.io claim with allocationMode All cannot be counted";
		return false;
	}
	jc = json_object_get(x, "count");
	if (json_is_integer(jc))
		count = json_integer_value(jc);
	if (count < 1 || count > GS_TRACE_MAX_DEVS) {
		*why = "bad count in a gpuslice.io claim";
		return false;
	}
	if (strncmp(cls, "partition.", 10) == 0) {
		return add_share(d, count * GS_TRACE_MILLI / GS_EXT_PARTS, 0,
		                 why);
	}
	caps = json_object_get(json_object_get(x, "capacity"), "requests");
	if (json_object_size(caps) == 0) {
		d->whole += count;
		return true;
	}
	{
		json_t *m = json_object_get(caps, "memory");
		json_t *c = json_object_get(caps, "compute");
		double mem = m ? bytes_of(json_string_value(m)) : 0;
		double pct = c ? bytes_of(json_string_value(c)) : 0;

		if (mem < 0 || pct < 0 || pct > 100) {
			*why = "bad capacity request in a gpuslice.io claim";
			return false;
		}
		return add_share(d,
		                 count * (int64_t)ceil(pct * GS_TRACE_MILLI /
		                                       100),
		                 (double)count * mem, why);
	}
}

/*
 * The pod's DRA claims (spec.resourceClaims: resourceClaimName, or
 * resourceClaimTemplateName whose claims are made from the template)
 * through `lookup`. A claim or template that cannot be read fails the
 * request (the scheduler retries) rather than placing the pod blind.
 */
static bool dra_request(json_t *pod, gs_ext_claim_fn lookup, void *ctx,
                        struct dra_req *d, const char **why)
{
	json_t *meta = json_object_get(pod, "metadata");
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	json_t *rc, *c;
	size_t i;

	memset(d, 0, sizeof(*d));
	rc = json_object_get(json_object_get(pod, "spec"), "resourceClaims");
	if (lookup == NULL || !json_is_array(rc))
		return true;
	json_array_foreach(rc, i, c)
	{
		const char *claim =
		    json_string_value(json_object_get(c, "resourceClaimName"));
		const char *tmpl = json_string_value(
		    json_object_get(c, "resourceClaimTemplateName"));
		json_t *o, *devs, *r;
		size_t k;
		bool ok = true;

		if (claim == NULL && tmpl == NULL)
			continue;
		o = lookup(ctx, claim ? "claim" : "template",
		           ns ? ns : "default", claim ? claim : tmpl);
		if (o == NULL) {
			*why = "gpuslice: a resource claim of the pod cannot be read";
			return false;
		}
		devs = json_object_get(json_object_get(o, "spec"), "devices");
		if (tmpl != NULL && claim == NULL)
			devs = json_object_get(
			    json_object_get(json_object_get(o, "spec"), "spec"),
			    "devices");
		json_array_foreach(json_object_get(devs, "requests"), k, r)
		{
			if (ok)
				ok = dra_one(r, d, why);
		}
		json_decref(o);
		if (!ok)
			return false;
	}
	return true;
}

/*
 * The pod's request on node `nd`: its containers' (base) plus its DRA
 * claims', the claims' memory taken as a share of the node's GPU. Shares
 * add up to one slice of one GPU, or to whole GPUs past one; a pod with a
 * share and whole GPUs is refused (as for container requests).
 */
static bool pod_on(const struct gs_trace_pod *base, const struct dra_req *d,
                   const struct ext_node *nd, struct gs_trace_pod *p,
                   const char **why)
{
	int64_t share = base->num_gpu == 1 && base->gpu_milli < GS_TRACE_MILLI
	                    ? base->gpu_milli
	                    : 0;
	int64_t whole = share > 0 ? 0 : base->num_gpu;

	*p = *base;
	if (d->n_shares == 0 && d->whole == 0)
		return true;
	/* Each share is the larger of its compute and its memory. */
	for (int i = 0; i < d->n_shares; i++) {
		int64_t m = 0;

		if (d->share[i].mem > 0 && nd != NULL && nd->gpu_memory > 0)
			m = (int64_t)ceil(d->share[i].mem * GS_TRACE_MILLI /
			                  nd->gpu_memory);
		share += m > d->share[i].milli ? m : d->share[i].milli;
	}
	whole += d->whole;
	if (d->n_shares > 0 && share == 0)
		share = 1; /* a claim with no capacity figure still takes some */
	if (share > 0 && whole > 0) {
		*why = "a pod asks for a GPU share and whole GPUs, not both";
		return false;
	}
	if (share >= GS_TRACE_MILLI) {
		whole = (share + GS_TRACE_MILLI - 1) / GS_TRACE_MILLI;
		share = 0;
	}
	if (whole > GS_TRACE_MAX_DEVS) {
		*why = "bad nvidia.com/gpu request";
		return false;
	}
	p->gpu_milli = (uint16_t)(share > 0 ? share : GS_TRACE_MILLI);
	p->num_gpu = (uint8_t)(share > 0 ? 1 : whole);
	return true;
}

static const struct ext_node *find(const struct gs_ext_state *st,
                                   const char *name)
{
	for (size_t i = 0; i < st->n; i++)
		if (strcmp(st->node[i].name, name) == 0)
			return &st->node[i];
	return NULL;
}

static char *reply(json_t *j, int *status, int code)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	*status = code;
	return s;
}

static char *error_reply(int *status, int code, const char *msg)
{
	return reply(json_pack("{s:s}", "Error", msg), status, code);
}

/*
 * The candidates: NodeNames (nodeCacheCapable: true), else Nodes.items
 * (a v1.NodeList). OUT: *objs, the Node objects by name in the second
 * mode (NULL in the first), to answer with. Returns the names.
 */
static json_t *candidates(json_t *args, json_t **objs)
{
	json_t *names = json_object_get(args, "NodeNames");
	json_t *out = json_array(), *it;
	size_t i;

	*objs = NULL;
	if (json_is_array(names)) {
		json_array_foreach(names, i, it)
		{
			if (json_is_string(it))
				json_array_append(out, it);
		}
		return out;
	}
	*objs = json_object();
	json_array_foreach(
	    json_object_get(json_object_get(args, "Nodes"), "items"), i, it)
	{
		json_t *n =
		    json_object_get(json_object_get(it, "metadata"), "name");
		if (json_is_string(n)) {
			json_array_append(out, n);
			json_object_set(*objs, json_string_value(n), it);
		}
	}
	return out;
}

/* Whether the demand has a class with weight: else the pod stands for it. */
static bool has_weight(const struct gs_ext_state *st)
{
	for (size_t i = 0; i < st->nd; i++)
		if (st->demand[i].p > 0)
			return true;
	return false;
}

char *gs_ext_handle(const struct gs_ext_state *st, const char *verb,
                    const char *body, size_t len, int *status)
{
	return gs_ext_handle_dra(st, NULL, NULL, verb, body, len, status);
}

char *gs_ext_handle_dra(const struct gs_ext_state *st, gs_ext_claim_fn lookup,
                        void *ctx, const char *verb, const char *body,
                        size_t len, int *status)
{
	json_error_t je;
	json_t *args, *names, *n;
	struct gs_trace_pod pod, base;
	struct dra_req dra;
	struct gs_trace_scorer *sc = NULL;
	struct gs_errbuf eb;
	const char *why = NULL;
	bool filter;
	json_t *out, *objs = NULL;
	size_t i;

	/* the path's last segment: a urlPrefix may carry a path */
	if (strrchr(verb, '/') != NULL)
		verb = strrchr(verb, '/') + 1;
	filter = strcmp(verb, "filter") == 0;
	if (!filter && strcmp(verb, "prioritize") != 0)
		return error_reply(status, 404, "unknown verb");
	args = json_loadb(body, len, 0, &je);
	if (!json_is_object(args)) {
		json_decref(args);
		return error_reply(status, 400,
		                   "body is not an ExtenderArgs JSON object");
	}
	if (!pod_request(json_object_get(args, "Pod"), &base, &why)) {
		json_decref(args);
		return error_reply(status, 400, why);
	}
	if (!dra_request(json_object_get(args, "Pod"), lookup, ctx, &dra,
	                 &why)) {
		json_decref(args);
		return error_reply(status, 503, why);
	}
	/* The demand stand-in: the pod as the first node would see it. */
	if (!pod_on(&base, &dra, st->n ? &st->node[0] : NULL, &pod, &why)) {
		json_decref(args);
		return error_reply(status, 400, why);
	}
	gs_errbuf_init(&eb);
	if (pod.num_gpu > 0 && has_weight(st) &&
	    gs_trace_scorer_new_weighted(st->demand, st->nd, &sc, &eb) !=
	        GS_OK) {
		json_decref(args);
		return error_reply(status, 500, eb.msg);
	}
	if (pod.num_gpu > 0 && sc == NULL &&
	    gs_trace_scorer_new(&pod, 1, NULL, 0, &sc, &eb) != GS_OK) {
		json_decref(args);
		return error_reply(status, 500, eb.msg);
	}
	names = candidates(args, &objs);
	if (filter) {
		json_t *ok = json_array(), *failed = json_object();
		json_array_foreach(names, i, n)
		{
			const struct ext_node *nd =
			    find(st, json_string_value(n));
			struct gs_trace_pod here = pod;

			if (nd != NULL && !nd->unreachable[0])
				(void)pod_on(&base, &dra, nd, &here, &why);
			if (pod.num_gpu == 0)
				json_array_append(ok, n);
			else if (nd == NULL)
				json_object_set_new(
				    failed, json_string_value(n),
				    json_string(
				        "gpuslice: node reports no GPU state"));
			else if (nd->unreachable[0]) {
				char reason[320];

				snprintf(
				    reason, sizeof(reason),
				    "gpuslice: node GPU state unavailable: %s",
				    nd->unreachable);
				json_object_set_new(failed,
				                    json_string_value(n),
				                    json_string(reason));
			} else if (gs_trace_scorer_score(
			               sc, NAN, nd->cpu_free, nd->free,
			               nd->ngpu, nd->model, &here, NULL) < 0)
				json_object_set_new(
				    failed, json_string_value(n),
				    json_string("gpuslice: not enough free GPU memory/compute or CPU"));
			else
				json_array_append(ok, n);
		}
		if (objs == NULL) {
			out = json_pack("{s:n,s:o,s:o,s:o,s:s}", "Nodes",
			                "NodeNames", ok, "FailedNodes", failed,
			                "FailedAndUnresolvableNodes",
			                json_object(), "Error", "");
		} else {
			json_t *items = json_array();

			json_array_foreach(ok, i, n)
			{
				json_array_append(
				    items, json_object_get(
				               objs, json_string_value(n)));
			}
			json_decref(ok);
			out = json_pack(
			    "{s:{s:s,s:s,s:{},s:o},s:n,s:o,s:o,s:s}", "Nodes",
			    "apiVersion", "v1", "kind", "NodeList", "metadata",
			    "items", items, "NodeNames", "FailedNodes", failed,
			    "FailedAndUnresolvableNodes", json_object(),
			    "Error", "");
		}
	} else {
		/* FGD's points / 10 per node (at most 9), and 10 for the node
		 * the scorer's guard picks among them in the order given
		 * (gs_trace_scorer_pick, what the replay and gpusliced use). */
		size_t nn = json_array_size(names), nc = 0, ncand;
		size_t pick = SIZE_MAX;
		struct gs_trace_cand *c = calloc(nn ? nn : 1, sizeof(*c));
		size_t *at = calloc(nn ? nn : 1, sizeof(*at));

		if (c == NULL || at == NULL) {
			free(c);
			free(at);
			json_decref(args);
			gs_trace_scorer_free(sc);
			return error_reply(status, 500, "out of memory");
		}
		json_array_foreach(names, i, n)
		{
			const struct ext_node *nd =
			    find(st, json_string_value(n));
			struct gs_trace_pod here = pod;

			if (nd != NULL && !nd->unreachable[0])
				(void)pod_on(&base, &dra, nd, &here, &why);
			if (pod.num_gpu > 0 && nd != NULL &&
			    !nd->unreachable[0] &&
			    gs_trace_scorer_node(sc, NULL, nd->cpu_free,
			                         nd->free, nd->ngpu, nd->model,
			                         &here, &c[nc], NULL))
				at[nc++] = i;
		}
		if (nc > 0)
			pick = at[gs_trace_scorer_pick(sc, c, nc)];
		ncand = nc;
		out = json_array();
		nc = 0;
		json_array_foreach(names, i, n)
		{
			double v = 0;
			if (nc < ncand && at[nc] == i)
				v = c[nc++].fgd;
			v = i == pick ? 10 : v > 90 ? 9 : floor(v / 10.0);
			json_array_append_new(
			    out, json_pack("{s:O,s:I}", "Host", n, "Score",
			                   (json_int_t)(v > 0 ? v : 0)));
		}
		free(c);
		free(at);
	}
	json_decref(names);
	json_decref(objs);
	json_decref(args);
	gs_trace_scorer_free(sc);
	return reply(out, status, 200);
}
