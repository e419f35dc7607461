/*
 * api.c - routes of API v1 (see api.h and docs/api.md):
 *
 *   GET    /healthz                        200 {"status":"ok",...}
 *   GET    /metrics                        Prometheus text
 *   GET    /v1/slices[?team=T][&usage=1]   {"slices":[slice...]}
 *   POST   /v1/slices                      201 slice        (spec + team,
 * on_exit, owner) GET    /v1/slices/NAME                 slice, with live usage
 *   DELETE /v1/slices/NAME                 {"deleted":"NAME"}
 *   POST   /v1/slices/NAME/attach          slice            ({"pid":N}, default
 * the caller) GET    /v1/gpus {"source":...,"gpus":[...]} GET    /v1/teams
 * {"teams":[team...]} GET    /v1/teams/NAME                  team, with usage
 *   PUT    /v1/teams/NAME                  team ({"parent","guarantee","max"})
 *   DELETE /v1/teams/NAME                  {"deleted":"NAME"}
 *   GET    /v1/usage?since&until&by&team&slice   ledger report with costs
 *   POST   /v1/plan                        MIG plan
 * ({"gpu"|"model","current","demand","apply"}) GET
 * /v1/events?since&after&slice&limit    {"events":[...],"last_id":N}
 *   GET    /v1/demand                      the demand seen, by weight
 *
 * Nothing a client sends reaches the model unchecked: bodies are JSON
 * objects with known keys only, names follow gs_name_is_valid, numbers
 * are range-checked. Handlers build a jansson tree and serialise it once.
 */
#include "api.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs/catalog.h"
#include "gs/demand.h"
#include "gs/migplan.h"
#include "gs/region.h"
#include "gs/spec_json.h"
#include "node_int.h"

#define API_EVENTS_MAX 10000

/*
 * A JSON string for text that may come from a client or the system: valid
 * UTF-8 as it is, anything else with its odd bytes replaced by '?', so a
 * reply never loses a field to bad input.
 */
static json_t *jstr(const char *s)
{
	json_t *j;
	char *copy;

	if (s == NULL)
		s = "";
	j = json_string(s);
	if (j)
		return j;
	copy = strdup(s);
	if (copy == NULL)
		return json_string("");
	for (char *p = copy; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

const char *gs_http_arg(const struct gs_http_req *req, const char *key)
{
	for (int i = 0; i < req->n_args; i++)
		if (strcmp(req->args[i].key, key) == 0)
			return req->args[i].value;
	return NULL;
}

int gs_api_status(gs_err err)
{
	switch (err) {
	case GS_OK:
		return 200;
	case GS_ERR_INVALID:
	case GS_ERR_PARSE:
	case GS_ERR_RANGE:
	case GS_ERR_UNKNOWN_MODEL:
	case GS_ERR_UNKNOWN_PROFILE:
		return 400;
	case GS_ERR_PERM:
		return 403;
	case GS_ERR_NOT_FOUND:
		return 404;
	case GS_ERR_EXISTS:
	case GS_ERR_NO_FIT:
	case GS_ERR_QUOTA:
	case GS_ERR_BUSY:
		return 409;
	case GS_ERR_UNSUPPORTED:
		return 501;
	case GS_ERR_UNAVAILABLE:
		return 503;
	case GS_ERR_TIMEOUT:
		return 504;
	default:
		return 500;
	}
}

static void set_json(struct gs_http_resp *resp, int status, json_t *obj)
{
	char *s = json_dumps(obj, JSON_COMPACT);

	json_decref(obj);
	if (s == NULL) {
		resp->status = 500;
		resp->body = strdup("{\"error\":\"NOMEM\",\"message\":\"out of "
		                    "memory\"}\n");
		resp->len = resp->body ? strlen(resp->body) : 0;
		return;
	}
	resp->status = status;
	resp->len = strlen(s);
	/* jansson allocates with malloc by default: the transport frees it. */
	resp->body = s;
	resp->content_type = "application/json";
}

static void set_error(struct gs_http_resp *resp, gs_err err,
                      const struct gs_errbuf *eb)
{
	json_t *o = json_object();

	json_object_set_new(o, "error", jstr(gs_err_name(err)));
	json_object_set_new(o, "message", jstr(gs_errbuf_msg(eb, err)));
	set_json(resp, gs_api_status(err), o);
}

static void fail(struct gs_http_resp *resp, gs_err err, const char *fmt,
                 const char *arg)
{
	struct gs_errbuf eb = {0};

	gs_fail(&eb, err, fmt, arg);
	set_error(resp, err, &eb);
}

static void method_not_allowed(struct gs_http_resp *resp, const char *method)
{
	struct gs_errbuf eb = {0};

	gs_fail(&eb, GS_ERR_INVALID, "method %s not allowed here", method);
	set_error(resp, GS_ERR_INVALID, &eb);
	resp->status = 405;
}

/* Parses the body as a JSON object (NULL body = empty object). */
static json_t *body_object(const struct gs_http_req *req,
                           struct gs_http_resp *resp)
{
	json_error_t jerr;
	json_t *o;

	if (req->body == NULL || req->body_len == 0)
		return json_object();
	o = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
	if (o == NULL) {
		struct gs_errbuf eb = {0};

		gs_fail(&eb, GS_ERR_PARSE, "body is not JSON: %s (line %d)",
		        jerr.text, jerr.line);
		set_error(resp, GS_ERR_PARSE, &eb);
		return NULL;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		fail(resp, GS_ERR_PARSE, "body must be a JSON object%s", "");
		return NULL;
	}
	return o;
}

static void iso_time(int64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

gs_err gs_api_parse_time(const char *text, int64_t now_ns, int64_t *out_ns)
{
	char *end;
	double v;
	struct tm tm;
	const char *p;

	if (text == NULL || text[0] == '\0')
		return GS_ERR_PARSE;
	if (isdigit((unsigned char)text[0]) && strlen(text) >= 20 &&
	    text[4] == '-') {
		memset(&tm, 0, sizeof(tm));
		p = strptime(text, "%Y-%m-%dT%H:%M:%S", &tm);
		if (p == NULL || (*p != 'Z' && *p != '\0') ||
		    (*p == 'Z' && p[1] != '\0'))
			return GS_ERR_PARSE;
		{
			time_t t = timegm(&tm);

			/* 1970 .. 2255: what nanoseconds in an int64 hold. */
			if (t < 0 || t > 9000000000LL)
				return GS_ERR_RANGE;
			*out_ns = (int64_t)t * 1000000000;
		}
		return GS_OK;
	}
	v = strtod(text, &end);
	if (end == text || !(v >= 0))
		return GS_ERR_PARSE;
	if (v > 9e9)
		return GS_ERR_RANGE;
	if (*end == '\0') {
		*out_ns = (int64_t)(v * 1e9);
		return GS_OK;
	}
	if (end[1] != '\0')
		return GS_ERR_PARSE;
	switch (*end) {
	case 's':
		break;
	case 'm':
		v *= 60;
		break;
	case 'h':
		v *= 3600;
		break;
	case 'd':
		v *= 86400;
		break;
	case 'w':
		v *= 7 * 86400;
		break;
	default:
		return GS_ERR_PARSE;
	}
	if (v > 9e9)
		return GS_ERR_RANGE;
	*out_ns = now_ns - (int64_t)(v * 1e9);
	return GS_OK;
}

/* ---- slices ---- */

static void mem_field(json_t *o, const char *key, uint64_t bytes)
{
	char buf[32], k[48];

	gs_format_memory(bytes, buf, sizeof(buf));
	json_object_set_new(o, key, jstr(buf));
	snprintf(k, sizeof(k), "%s_bytes", key);
	json_object_set_new(o, k, json_integer((json_int_t)bytes));
}

static void mps_pipe_dir(struct gs_node *node, const struct gs_slice *s,
                         char *buf, size_t len)
{
	if (s->gi_id >= 0)
		snprintf(buf, len, "%s/gpu%d-gi%d/pipe", gs_node_mps_dir(node),
		         s->gpu_index, s->gi_id);
	else
		snprintf(buf, len, "%s/gpu%d/pipe", gs_node_mps_dir(node),
		         s->gpu_index);
}

static json_t *slice_json(struct gs_node *node, const struct gs_slice *s,
                          bool with_usage)
{
	json_t *o = json_object(), *g, *env, *pids;
	char buf[512];

	json_object_set_new(o, "id", json_integer(s->id));
	json_object_set_new(o, "name", jstr(s->name));
	json_object_set_new(o, "owner_uid", json_integer(s->owner_uid));
	json_object_set_new(o, "team", jstr(s->team));
	json_object_set_new(o, "mode", jstr(gs_mode_name(s->mode)));
	json_object_set_new(o, "mode_requested",
	                    jstr(gs_mode_name(s->spec.mode)));
	mem_field(o, "memory", s->spec.memory_bytes);
	json_object_set_new(o, "compute", json_integer(s->spec.compute_pct));
	json_object_set_new(o, "sm_share", json_real(gs_slice_sm_share(s)));
	json_object_set_new(o, "priority",
	                    jstr(gs_priority_name(s->spec.priority)));
	json_object_set_new(o, "weight", json_integer(s->spec.weight));
	json_object_set_new(o, "isolation",
	                    jstr(gs_isolation_name(s->spec.isolation)));
	/* Being created (its region entry is being written), or no longer
	 * in the shared region (a write failed; housekeeping retries): not
	 * ready - a shim sent to it refuses GPU work. */
	if (s->state == GS_SLICE_PENDING) {
		json_object_set_new(o, "state", jstr("pending"));
		json_object_set_new(o, "reason", jstr("being created"));
	} else if (s->region_slot < 0) {
		json_object_set_new(o, "state", jstr("pending"));
		json_object_set_new(
		    o, "reason",
		    jstr("its limits are not in the shared region yet"));
	} else {
		json_object_set_new(o, "state",
		                    jstr(gs_slice_state_name(s->state)));
		json_object_set_new(o, "reason", jstr(s->reason));
	}
	json_object_set_new(
	    o, "on_exit",
	    jstr(s->on_exit == GS_ON_EXIT_DELETE ? "delete" : "keep"));
	json_object_set_new(o, "borrowed", json_boolean(s->borrowed));
	iso_time(s->created_ns, buf, sizeof(buf));
	json_object_set_new(o, "created", jstr(buf));
	json_object_set_new(o, "created_ns", json_integer(s->created_ns));
	json_object_set_new(o, "spec", gs_spec_to_json(&s->spec));
	json_object_set_new(o, "labels",
	                    gs_slice_labels_to_json(s->labels, s->n_labels));

	g = json_object();
	json_object_set_new(g, "index", json_integer(s->gpu_index));
	json_object_set_new(g, "uuid", jstr(s->gpu_uuid));
	json_object_set_new(o, "gpu", g);
	if (s->mig_uuid[0]) {
		json_t *m = json_object();

		json_object_set_new(m, "profile", jstr(s->mig_profile));
		json_object_set_new(m, "uuid", jstr(s->mig_uuid));
		json_object_set_new(m, "gi", json_integer(s->gi_id));
		json_object_set_new(m, "ci", json_integer(s->ci_id));
		json_object_set_new(o, "mig", m);
	} else {
		json_object_set_new(o, "mig", json_null());
	}
	{
		json_t *r = json_object();

		json_object_set_new(r, "dir", jstr(gs_node_region_dir(node)));
		json_object_set_new(r, "slot", json_integer(s->region_slot));
		json_object_set_new(r, "generation",
		                    json_integer(s->region_gen));
		/* The file its books are in (the daemon's region is
		 * privileged: uid 0's slices keep private books), for the
		 * Kubernetes driver to mount into the slice's pods. */
		if (s->region_slot >= 0 && gs_node_region_dir(node)[0] &&
		    gs_region_books_path(gs_node_region_dir(node), true,
		                         s->owner_uid, s->region_slot, buf,
		                         sizeof(buf)) == GS_OK)
			json_object_set_new(r, "books", jstr(buf));
		json_object_set_new(o, "region", r);
	}
	pids = json_array();
	for (int i = 0; i < s->n_pids; i++)
		json_array_append_new(pids, json_integer(s->pids[i]));
	json_object_set_new(o, "pids", pids);

	/* What `gpuslice run --slice` puts in the command's environment. */
	env = json_object();
	json_object_set_new(env, "GPUSLICE_SLICE", jstr(s->name));
	if (gs_node_region_dir(node)[0])
		json_object_set_new(env, "GPUSLICE_RUN_DIR",
		                    jstr(gs_node_region_dir(node)));
	if (s->mode == GS_MODE_MPS || s->mode == GS_MODE_MIG_MPS) {
		mps_pipe_dir(node, s, buf, sizeof(buf));
		json_object_set_new(env, "CUDA_MPS_PIPE_DIRECTORY", jstr(buf));
		if (gs_slice_mps_atp(s) > 0) {
			snprintf(buf, sizeof(buf), "%d", gs_slice_mps_atp(s));
			json_object_set_new(env,
			                    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
			                    jstr(buf));
		}
		if (s->spec.memory_bytes > 0) {
			snprintf(buf, sizeof(buf), "0=%lluM",
			         (unsigned long long)((s->spec.memory_bytes +
			                               (1 << 20) - 1) >>
			                              20));
			json_object_set_new(
			    env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", jstr(buf));
		}
		/* Low priority: a below-normal client of the server. */
		if (s->spec.priority == GS_PRIORITY_LOW)
			json_object_set_new(env, "CUDA_MPS_CLIENT_PRIORITY",
			                    jstr("1"));
	}
	/* An MPS client sees the server's devices, and this names the
	 * slice's among them; a process started before the reconciler has
	 * the server up still lands on the slice's GPU, not device 0. */
	json_object_set_new(env, "CUDA_VISIBLE_DEVICES",
	                    jstr(s->mig_uuid[0] ? s->mig_uuid : s->gpu_uuid));
	json_object_set_new(o, "env", env);

	if (with_usage) {
		struct gs_node_usage u;
		json_t *uo = json_object();

		if (gs_node_slice_usage(node, s->id, &u) == GS_OK) {
			json_object_set_new(uo, "processes",
			                    json_integer(u.n_procs));
			mem_field(uo, "memory_used", u.mem_used);
			mem_field(uo, "memory_peak", u.mem_peak);
			json_object_set_new(uo, "gpu_seconds",
			                    json_real((double)u.busy_ns / 1e9));
			json_object_set_new(uo, "sm_seconds",
			                    json_real(u.sm_seconds));
			json_object_set_new(
			    uo, "throttled_seconds",
			    json_real((double)u.throttled_ns / 1e9));
			json_object_set_new(uo, "compute_achieved",
			                    json_real(u.compute_pct));
			json_object_set_new(
			    uo, "nvml_memory_bytes",
			    json_integer((json_int_t)u.nvml_mem));
			if (u.nvml_compute_pct >= 0)
				json_object_set_new(
				    uo, "nvml_compute_pct",
				    json_real(u.nvml_compute_pct));
		}
		json_object_set_new(o, "usage", uo);
	}
	return o;
}

/* Keys of POST /v1/slices that are not spec keys. */
static gs_err take_create_extras(json_t *body, struct gs_node_create_req *req,
                                 struct gs_errbuf *eb)
{
	json_t *v;

	req->team[0] = '\0';
	req->on_exit = GS_ON_EXIT_KEEP;
	req->owner_uid = -1;
	if ((v = json_object_get(body, "team"))) {
		if (!json_is_string(v) ||
		    !gs_name_is_valid(json_string_value(v)))
			return gs_fail(eb, GS_ERR_INVALID,
			               "team must be a valid name");
		snprintf(req->team, sizeof(req->team), "%s",
		         json_string_value(v));
		json_object_del(body, "team");
	}
	if ((v = json_object_get(body, "on_exit"))) {
		const char *s = json_is_string(v) ? json_string_value(v) : "";

		if (strcmp(s, "keep") == 0)
			req->on_exit = GS_ON_EXIT_KEEP;
		else if (strcmp(s, "delete") == 0)
			req->on_exit = GS_ON_EXIT_DELETE;
		else
			return gs_fail(eb, GS_ERR_INVALID,
			               "on_exit must be keep or delete");
		json_object_del(body, "on_exit");
	}
	if ((v = json_object_get(body, "owner"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > 0xfffffffeLL)
			return gs_fail(eb, GS_ERR_INVALID,
			               "owner must be a uid");
		req->owner_uid = json_integer_value(v);
		json_object_del(body, "owner");
	}
	if ((v = json_object_get(body, "labels"))) {
		gs_err err = gs_slice_labels_from_json(v, req->labels,
		                                       &req->n_labels, eb);

		if (err)
			return err;
		json_object_del(body, "labels");
	}
	return GS_OK;
}

static void slices_create(struct gs_api *api, const struct gs_http_req *req,
                          struct gs_http_resp *resp)
{
	struct gs_node_create_req cr;
	struct gs_node_create_res *res;
	struct gs_errbuf eb = {0};
	json_t *body, *o;
	gs_err err;

	body = body_object(req, resp);
	if (body == NULL)
		return;
	memset(&cr, 0, sizeof(cr));
	gs_spec_init(&cr.spec);
	err = take_create_extras(body, &cr, &eb);
	if (!err)
		err = gs_spec_from_json(&cr.spec, body, &eb);
	json_decref(body);
	if (err) {
		set_error(resp, err, &eb);
		return;
	}
	res = malloc(sizeof(*res));
	if (res == NULL) {
		fail(resp, GS_ERR_NOMEM, "out of memory%s", "");
		return;
	}
	err = gs_node_slice_create(api->node, &req->peer, &cr, res, &eb);
	if (err) {
		free(res);
		set_error(resp, err, &eb);
		return;
	}
	o = slice_json(api->node, &res->slice, false);
	if (res->n_victims) {
		json_t *a = json_array();

		for (int i = 0; i < res->n_victims; i++)
			json_array_append_new(a, jstr(res->victims[i]));
		json_object_set_new(o, "preempted", a);
	}
	free(res);
	set_json(resp, 201, o);
}

static void slices_list(struct gs_api *api, const struct gs_http_req *req,
                        struct gs_http_resp *resp)
{
	struct gs_slice *v;
	const char *team = gs_http_arg(req, "team");
	const char *usage = gs_http_arg(req, "usage");
	bool with_usage = usage && strcmp(usage, "0") != 0;
	json_t *o, *a;
	int n;

	if (team && !gs_name_is_valid(team)) {
		fail(resp, GS_ERR_INVALID, "bad team '%s'", team);
		return;
	}
	if (gs_node_slice_list(api->node, &req->peer, team, &v, &n) != GS_OK) {
		fail(resp, GS_ERR_NOMEM, "out of memory%s", "");
		return;
	}
	a = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(a,
		                      slice_json(api->node, &v[i], with_usage));
	free(v);
	o = json_object();
	json_object_set_new(o, "slices", a);
	set_json(resp, 200, o);
}

static void slice_one(struct gs_api *api, const struct gs_http_req *req,
                      struct gs_http_resp *resp, const char *name,
                      const char *action)
{
	struct gs_errbuf eb = {0};
	struct gs_slice s;
	gs_err err;

	if (!gs_name_is_valid(name)) {
		fail(resp, GS_ERR_NOT_FOUND, "no slice '%.64s'", name);
		return;
	}
	if (action) {
		json_t *body, *v;
		int32_t pid = req->peer.pid;

		if (strcmp(action, "attach") != 0) {
			fail(resp, GS_ERR_NOT_FOUND, "no route for '%s'",
			     action);
			return;
		}
		if (strcmp(req->method, "POST") != 0) {
			method_not_allowed(resp, req->method);
			return;
		}
		body = body_object(req, resp);
		if (body == NULL)
			return;
		v = json_object_get(body, "pid");
		if (v && (!json_is_integer(v) || json_integer_value(v) <= 0 ||
		          json_integer_value(v) > 0x7fffffff)) {
			json_decref(body);
			fail(resp, GS_ERR_INVALID, "pid must be a process id%s",
			     "");
			return;
		}
		if (v)
			pid = (int32_t)json_integer_value(v);
		if (json_object_size(body) > (v ? 1u : 0u)) {
			json_decref(body);
			fail(resp, GS_ERR_INVALID,
			     "attach takes only \"pid\"%s", "");
			return;
		}
		json_decref(body);
		err = gs_node_slice_attach(api->node, &req->peer, name, pid, &s,
		                           &eb);
		if (err)
			set_error(resp, err, &eb);
		else
			set_json(resp, 200, slice_json(api->node, &s, true));
		return;
	}
	if (strcmp(req->method, "GET") == 0) {
		if (gs_node_slice_get(api->node, &req->peer, name, &s) !=
		    GS_OK) {
			fail(resp, GS_ERR_NOT_FOUND, "no slice '%s'", name);
			return;
		}
		set_json(resp, 200, slice_json(api->node, &s, true));
	} else if (strcmp(req->method, "DELETE") == 0) {
		json_t *o;

		err = gs_node_slice_delete(api->node, &req->peer, name, &eb);
		if (err) {
			set_error(resp, err, &eb);
			return;
		}
		o = json_object();
		json_object_set_new(o, "deleted", jstr(name));
		set_json(resp, 200, o);
	} else {
		method_not_allowed(resp, req->method);
	}
}

/* ---- gpus ---- */

static void gpus_get(struct gs_api *api, const struct gs_http_req *req,
                     struct gs_http_resp *resp)
{
	struct gs_gpus *g = malloc(sizeof(*g));
	json_t *o, *a;

	(void)req;
	if (g == NULL) {
		fail(resp, GS_ERR_NOMEM, "out of memory%s", "");
		return;
	}
	gs_node_gpus(api->node, g);
	o = json_object();
	json_object_set_new(o, "source",
	                    jstr(g->fake  ? "fake"
	                         : g->sim ? "sim"
	                                  : "nvml"));
	json_object_set_new(o, "library", jstr(g->library));
	if (g->sim && g->sim_dir[0])
		json_object_set_new(o, "sim_dir", jstr(g->sim_dir));
	json_object_set_new(o, "driver", jstr(g->driver));
	a = json_array();
	for (int i = 0; i < g->n; i++) {
		const struct gs_gpu *gp = &g->gpu[i];
		json_t *x = json_object(), *mig = json_object(), *inst;
		uint64_t mem;
		uint32_t comp;
		int ns;

		json_object_set_new(x, "index", json_integer(gp->index));
		json_object_set_new(x, "uuid", jstr(gp->uuid));
		json_object_set_new(x, "name", jstr(gp->name));
		json_object_set_new(x, "model", jstr(gp->model));
		mem_field(x, "memory", gp->memory_bytes);
		json_object_set_new(x, "sm_count", json_integer(gp->sm_count));
		json_object_set_new(mig, "capable",
		                    json_boolean(gp->mig_capable));
		json_object_set_new(mig, "enabled", json_boolean(gp->mig_on));
		inst = json_array();
		for (int k = 0; k < gp->n_mig; k++) {
			const struct gs_mig_dev *m = &gp->mig[k];
			json_t *mi = json_object();

			json_object_set_new(mi, "uuid", jstr(m->uuid));
			json_object_set_new(mi, "profile", jstr(m->profile));
			json_object_set_new(mi, "gi", json_integer(m->gi_id));
			json_object_set_new(mi, "ci", json_integer(m->ci_id));
			json_object_set_new(mi, "start",
			                    json_integer(m->start));
			json_object_set_new(mi, "size", json_integer(m->size));
			mem_field(mi, "memory", m->memory_bytes);
			json_object_set_new(mi, "sm_count",
			                    json_integer(m->sm_count));
			json_array_append_new(inst, mi);
		}
		json_object_set_new(mig, "instances", inst);
		json_object_set_new(x, "mig", mig);
		{
			char why[96];
			bool ok = gs_node_gpu_health(api->node, i, why,
			                             sizeof(why));

			json_object_set_new(
			    x, "health",
			    ok ? json_pack("{s:b}", "healthy", 1)
			       : json_pack("{s:b, s:s}", "healthy", 0,
			                   "reason", why));
		}
		gs_node_gpu_alloc(api->node, i, &mem, &comp, &ns);
		{
			json_t *al = json_object();

			mem_field(al, "memory", mem);
			json_object_set_new(al, "compute", json_integer(comp));
			json_object_set_new(al, "slices", json_integer(ns));
			json_object_set_new(x, "allocated", al);
		}
		if (api->gpu_extra)
			api->gpu_extra(api->gpu_extra_ctx, i, x);
		json_array_append_new(a, x);
	}
	free(g);
	json_object_set_new(o, "gpus", a);
	set_json(resp, 200, o);
}

/* ---- demand ---- */

/*
 * The demand seen: its classes by weight now, each with the milli-GPU it
 * counts as in the `frag` scorer on this node's first GPU (null for MIG
 * classes, which do not enter it).
 */
static void demand_get(struct gs_api *api, struct gs_http_resp *resp)
{
	struct gs_demand *d = malloc(sizeof(*d));
	struct gs_gpus *g = malloc(sizeof(*g));
	int64_t now = gs_now_ns();
	uint64_t gpu_mem = 0;
	int order[GS_DEMAND_MAX_CLASSES];
	json_t *o, *a;

	if (d == NULL || g == NULL) {
		free(d);
		free(g);
		fail(resp, GS_ERR_NOMEM, "out of memory%s", "");
		return;
	}
	gs_node_demand(api->node, d);
	gs_node_gpus(api->node, g);
	if (g->n > 0)
		gpu_mem = g->gpu[0].memory_bytes;
	free(g);
	/* Heaviest first (insertion sort: at most 32). */
	for (int i = 0; i < d->n; i++) {
		int j = i;

		while (j > 0 && gs_demand_weight(d, order[j - 1], now) <
		                    gs_demand_weight(d, i, now)) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	a = json_array();
	for (int k = 0; k < d->n; k++) {
		const struct gs_demand_class *c = &d->cls[order[k]];
		struct gs_place_item it = {.kind = c->shape.kind,
		                           .memory_bytes = c->shape.memory_bytes,
		                           .compute_pct = c->shape.compute_pct};
		int milli = gs_place_item_milli(&it, gpu_mem);
		char when[40];
		json_t *x = json_object();

		json_object_set_new(x, "kind",
		                    jstr(gs_demand_kind_name(c->shape.kind)));
		if (c->shape.kind == GS_PLACE_FRACTION) {
			mem_field(x, "memory", c->shape.memory_bytes);
			json_object_set_new(x, "compute",
			                    json_integer(c->shape.compute_pct));
		}
		if (c->shape.kind == GS_PLACE_MIG)
			json_object_set_new(x, "mig_profile",
			                    jstr(c->shape.mig_profile));
		json_object_set_new(x, "gpu_milli",
		                    milli > 0 ? json_integer(milli)
		                              : json_null());
		json_object_set_new(x, "num_gpu", json_integer(1));
		json_object_set_new(
		    x, "weight",
		    json_real(gs_demand_weight(d, order[k], now)));
		iso_time(c->t_ns, when, sizeof(when));
		json_object_set_new(x, "last_seen", jstr(when));
		json_array_append_new(a, x);
	}
	o = json_object();
	json_object_set_new(
	    o, "placement",
	    jstr(gs_place_policy_name(gs_node_config(api->node)->placement)));
	json_object_set_new(
	    o, "half_life_seconds",
	    json_integer(gs_node_config(api->node)->demand_half_life_s));
	json_object_set_new(o, "gpu_memory_bytes",
	                    json_integer((json_int_t)gpu_mem));
	json_object_set_new(o, "total_weight",
	                    json_real(gs_demand_total(d, now)));
	json_object_set_new(o, "classes", a);
	free(d);
	set_json(resp, 200, o);
}

/* ---- teams ---- */

static json_t *qvec_json(const struct gs_qvec *v)
{
	json_t *o = json_object();

	if (v->v[GS_QRES_MEMORY] == GS_QUOTA_UNLIMITED) {
		json_object_set_new(o, "memory", json_null());
		json_object_set_new(o, "memory_bytes", json_null());
	} else {
		mem_field(o, "memory", (uint64_t)v->v[GS_QRES_MEMORY]);
	}
	json_object_set_new(o, "compute",
	                    v->v[GS_QRES_COMPUTE] == GS_QUOTA_UNLIMITED
	                        ? json_null()
	                        : json_integer(v->v[GS_QRES_COMPUTE]));
	json_object_set_new(o, "mig",
	                    v->v[GS_QRES_MIG] == GS_QUOTA_UNLIMITED
	                        ? json_null()
	                        : json_integer(v->v[GS_QRES_MIG]));
	return o;
}

static json_t *team_json(const struct gs_team *t, const struct gs_qvec *use)
{
	json_t *o = json_object();

	json_object_set_new(o, "name", jstr(t->name));
	json_object_set_new(o, "parent",
	                    t->parent[0] ? jstr(t->parent) : json_null());
	json_object_set_new(o, "guarantee", qvec_json(&t->guarantee));
	json_object_set_new(o, "max", qvec_json(&t->max));
	if (use)
		json_object_set_new(o, "usage", qvec_json(use));
	json_object_set_new(o, "from_config", json_boolean(t->from_config));
	return o;
}

static void teams_list(struct gs_api *api, struct gs_http_resp *resp)
{
	struct gs_team *v;
	json_t *o, *a;
	int n;

	if (gs_node_team_list(api->node, &v, &n) != GS_OK) {
		fail(resp, GS_ERR_NOMEM, "out of memory%s", "");
		return;
	}
	a = json_array();
	for (int i = 0; i < n; i++) {
		struct gs_team t;
		struct gs_qvec use;

		if (gs_node_team_get(api->node, v[i].name, &t, &use) == GS_OK)
			json_array_append_new(a, team_json(&t, &use));
	}
	free(v);
	o = json_object();
	json_object_set_new(o, "teams", a);
	set_json(resp, 200, o);
}

/* Reads {"memory","compute","mig"} into v; `dflt` for absent keys. */
static gs_err qvec_from_json(json_t *obj, const char *what, int64_t dflt,
                             struct gs_qvec *v, struct gs_errbuf *eb)
{
	const char *key;
	json_t *val;

	for (int r = 0; r < GS_QRES__COUNT; r++)
		v->v[r] = dflt;
	if (obj == NULL)
		return GS_OK;
	if (!json_is_object(obj))
		return gs_fail(eb, GS_ERR_PARSE, "%s must be an object", what);
	json_object_foreach(obj, key, val)
	{
		int r;

		if (strcmp(key, "memory") == 0)
			r = GS_QRES_MEMORY;
		else if (strcmp(key, "compute") == 0)
			r = GS_QRES_COMPUTE;
		else if (strcmp(key, "mig") == 0)
			r = GS_QRES_MIG;
		else
			return gs_fail(eb, GS_ERR_INVALID,
			               "unknown key '%.40s' in %s", key, what);
		if (json_is_null(val) ||
		    (json_is_string(val) &&
		     strcmp(json_string_value(val), "unlimited") == 0)) {
			v->v[r] = GS_QUOTA_UNLIMITED;
		} else if (json_is_integer(val)) {
			if (json_integer_value(val) < 0)
				return gs_fail(eb, GS_ERR_RANGE,
				               "%s.%s must not be negative",
				               what, key);
			v->v[r] = json_integer_value(val);
		} else if (json_is_string(val) && r == GS_QRES_MEMORY) {
			uint64_t b;
			gs_err err =
			    gs_parse_memory(json_string_value(val), &b, eb);

			if (err)
				return err;
			if (b > (uint64_t)INT64_MAX / 2)
				return gs_fail(eb, GS_ERR_RANGE,
				               "%s.memory is too large", what);
			v->v[r] = (int64_t)b;
		} else if (json_is_string(val) && r == GS_QRES_COMPUTE) {
			char buf[24];
			char *end;
			long x;

			snprintf(buf, sizeof(buf), "%s",
			         json_string_value(val));
			if (buf[0] && buf[strlen(buf) - 1] == '%')
				buf[strlen(buf) - 1] = '\0';
			x = strtol(buf, &end, 10);
			if (end == buf || *end || x < 0 || x > 100000000)
				return gs_fail(eb, GS_ERR_PARSE,
				               "%s.compute: bad value", what);
			v->v[r] = x;
		} else {
			return gs_fail(eb, GS_ERR_PARSE, "%s.%s: bad value",
			               what, key);
		}
	}
	return GS_OK;
}

static void team_put(struct gs_api *api, const struct gs_http_req *req,
                     struct gs_http_resp *resp, const char *name)
{
	struct gs_team t;
	struct gs_errbuf eb = {0};
	struct gs_qvec use;
	const char *key;
	json_t *body, *val;
	gs_err err = GS_OK;

	body = body_object(req, resp);
	if (body == NULL)
		return;
	memset(&t, 0, sizeof(t));
	snprintf(t.name, sizeof(t.name), "%.63s", name);
	json_object_foreach(body, key, val)
	{
		if (strcmp(key, "parent") && strcmp(key, "guarantee") &&
		    strcmp(key, "max") && strcmp(key, "name")) {
			err = gs_fail(&eb, GS_ERR_INVALID,
			              "unknown key '%.40s'", key);
			break;
		}
	}
	val = json_object_get(body, "name");
	if (!err && val &&
	    (!json_is_string(val) || strcmp(json_string_value(val), name)))
		err = gs_fail(&eb, GS_ERR_INVALID,
		              "name in the body differs from the path");
	val = json_object_get(body, "parent");
	if (!err && val && !json_is_null(val)) {
		if (!json_is_string(val) ||
		    (json_string_value(val)[0] &&
		     !gs_name_is_valid(json_string_value(val))))
			err = gs_fail(&eb, GS_ERR_INVALID,
			              "parent must be a team name");
		else
			snprintf(t.parent, sizeof(t.parent), "%s",
			         json_string_value(val));
	}
	if (!err)
		err = qvec_from_json(json_object_get(body, "guarantee"),
		                     "guarantee", 0, &t.guarantee, &eb);
	if (!err)
		err = qvec_from_json(json_object_get(body, "max"), "max",
		                     GS_QUOTA_UNLIMITED, &t.max, &eb);
	json_decref(body);
	if (!err)
		err = gs_node_team_put(api->node, &req->peer, &t, &eb);
	if (err) {
		set_error(resp, err, &eb);
		return;
	}
	if (gs_node_team_get(api->node, name, &t, &use) != GS_OK) {
		fail(resp, GS_ERR_INTERNAL, "team vanished%s", "");
		return;
	}
	set_json(resp, 200, team_json(&t, &use));
}

static void team_one(struct gs_api *api, const struct gs_http_req *req,
                     struct gs_http_resp *resp, const char *name)
{
	struct gs_errbuf eb = {0};
	gs_err err;

	if (!gs_name_is_valid(name)) {
		fail(resp, GS_ERR_INVALID, "bad team name '%.64s'", name);
		return;
	}
	if (strcmp(req->method, "GET") == 0) {
		struct gs_team t;
		struct gs_qvec use;

		if (gs_node_team_get(api->node, name, &t, &use) != GS_OK) {
			fail(resp, GS_ERR_NOT_FOUND, "no team '%s'", name);
			return;
		}
		set_json(resp, 200, team_json(&t, &use));
	} else if (strcmp(req->method, "PUT") == 0) {
		team_put(api, req, resp, name);
	} else if (strcmp(req->method, "DELETE") == 0) {
		json_t *o;

		err = gs_node_team_delete(api->node, &req->peer, name, &eb);
		if (err) {
			set_error(resp, err, &eb);
			return;
		}
		o = json_object();
		json_object_set_new(o, "deleted", jstr(name));
		set_json(resp, 200, o);
	} else {
		method_not_allowed(resp, req->method);
	}
}

/* ---- usage ---- */

struct usage_group {
	char key[GS_NAME_MAX];
	char team[GS_NAME_MAX];
	double gpu_s, gib_s, thr_s, alloc_s, sm_s, cost;
};

struct usage_ctx {
	const struct gs_config *cfg;
	int64_t since, until;
	bool by_slice;
	int n, cap;
	struct usage_group *g;
	bool nomem;
	int unpriced;   /* rows no price rule matched (cost 0) */
	int sm_unknown; /* rows whose SM-time is not known (not in sm_s) */
};

static void usage_row(void *ctx, const struct gs_usage_row *r)
{
	struct usage_ctx *uc = ctx;
	const char *key = uc->by_slice ? r->slice : r->team;
	struct gs_usage_record rec = {.model = r->gpu_model,
	                              .gpu_seconds = r->gpu_seconds,
	                              .gib_seconds = r->gib_seconds};
	struct usage_group *g = NULL;
	double cost = 0;
	int64_t t0 = r->t0_ns > uc->since ? r->t0_ns : uc->since;
	int64_t t1 = r->t1_ns < uc->until ? r->t1_ns : uc->until;
	double f = 1.0;

	/* Rows that straddle the window count in proportion. */
	if (r->t1_ns > r->t0_ns)
		f = (double)(t1 - t0) / (double)(r->t1_ns - r->t0_ns);
	if (f <= 0)
		return;
	if (gs_parse_mode(r->mode, &rec.mode, NULL) != GS_OK)
		rec.mode = GS_MODE_TIMESLICE;
	if (gs_price_cost(&uc->cfg->prices, &rec, &cost, NULL, NULL) != GS_OK)
		uc->unpriced++;
	for (int i = 0; i < uc->n; i++)
		if (strcmp(uc->g[i].key, key) == 0)
			g = &uc->g[i];
	if (g == NULL) {
		if (uc->n == uc->cap) {
			int cap = uc->cap ? uc->cap * 2 : 16;
			struct usage_group *ng =
			    realloc(uc->g, sizeof(*ng) * (size_t)cap);

			if (ng == NULL) {
				uc->nomem = true;
				return;
			}
			uc->g = ng;
			uc->cap = cap;
		}
		g = &uc->g[uc->n++];
		memset(g, 0, sizeof(*g));
		snprintf(g->key, sizeof(g->key), "%s", key);
		snprintf(g->team, sizeof(g->team), "%s", r->team);
	}
	g->gpu_s += f * r->gpu_seconds;
	g->gib_s += f * r->gib_seconds;
	g->thr_s += f * r->throttled_seconds;
	g->alloc_s += f * r->alloc_seconds;
	if (r->sm_seconds >= 0)
		g->sm_s += f * r->sm_seconds;
	else
		uc->sm_unknown++;
	g->cost += f * cost;
}

static void usage_get(struct gs_api *api, const struct gs_http_req *req,
                      struct gs_http_resp *resp)
{
	struct usage_ctx uc;
	struct gs_errbuf eb = {0};
	const char *since = gs_http_arg(req, "since");
	const char *until = gs_http_arg(req, "until");
	const char *by = gs_http_arg(req, "by");
	const char *team = gs_http_arg(req, "team");
	const char *slice = gs_http_arg(req, "slice");
	int64_t now = gs_now_ns();
	json_t *o, *a, *tot;
	double t_gpu = 0, t_gib = 0, t_thr = 0, t_alloc = 0, t_sm = 0;
	double t_cost = 0;
	char buf[40];
	gs_err err;

	memset(&uc, 0, sizeof(uc));
	uc.cfg = gs_node_config(api->node);
	uc.since = now - 86400LL * 1000000000;
	uc.until = now;
	if (since && gs_api_parse_time(since, now, &uc.since) != GS_OK) {
		fail(resp, GS_ERR_PARSE,
		     "since: '%.40s' is not a duration (24h), Unix time or "
		     "RFC 3339 time",
		     since);
		return;
	}
	if (until && gs_api_parse_time(until, now, &uc.until) != GS_OK) {
		fail(resp, GS_ERR_PARSE, "until: '%.40s' is not a time", until);
		return;
	}
	if (uc.until <= uc.since) {
		fail(resp, GS_ERR_RANGE, "until must be after since%s", "");
		return;
	}
	if (by == NULL || strcmp(by, "team") == 0)
		uc.by_slice = false;
	else if (strcmp(by, "slice") == 0)
		uc.by_slice = true;
	else {
		fail(resp, GS_ERR_INVALID,
		     "by must be team or slice, got '%.20s'", by);
		return;
	}
	if ((team && !gs_name_is_valid(team)) ||
	    (slice && !gs_name_is_valid(slice))) {
		fail(resp, GS_ERR_INVALID, "bad team or slice name%s", "");
		return;
	}
	err = gs_store_usage(
	    gs_node_store(api->node), uc.since, uc.until, team, slice,
	    req->peer.admin ? -1 : (int64_t)req->peer.uid, usage_row, &uc, &eb);
	if (!err && uc.nomem)
		err = gs_fail(&eb, GS_ERR_NOMEM, "out of memory");
	if (err) {
		free(uc.g);
		set_error(resp, err, &eb);
		return;
	}
	o = json_object();
	iso_time(uc.since, buf, sizeof(buf));
	json_object_set_new(o, "since", jstr(buf));
	iso_time(uc.until, buf, sizeof(buf));
	json_object_set_new(o, "until", jstr(buf));
	json_object_set_new(o, "by", jstr(uc.by_slice ? "slice" : "team"));
	json_object_set_new(o, "currency", jstr(uc.cfg->currency));
	/* What cost prices compute by: GPU seconds (plus memory by GiB
	 * seconds), not SM-seconds, which are reported beside it. */
	json_object_set_new(o, "cost_basis", jstr("gpu_seconds"));
	a = json_array();
	for (int i = 0; i < uc.n; i++) {
		json_t *r = json_object();

		json_object_set_new(r, uc.by_slice ? "slice" : "team",
		                    jstr(uc.g[i].key));
		if (uc.by_slice)
			json_object_set_new(r, "team", jstr(uc.g[i].team));
		json_object_set_new(r, "gpu_seconds", json_real(uc.g[i].gpu_s));
		json_object_set_new(r, "sm_seconds", json_real(uc.g[i].sm_s));
		json_object_set_new(r, "gib_seconds", json_real(uc.g[i].gib_s));
		json_object_set_new(r, "throttled_seconds",
		                    json_real(uc.g[i].thr_s));
		json_object_set_new(r, "reserved_gpu_seconds",
		                    json_real(uc.g[i].alloc_s));
		json_object_set_new(r, "cost", json_real(uc.g[i].cost));
		json_array_append_new(a, r);
		t_gpu += uc.g[i].gpu_s;
		t_gib += uc.g[i].gib_s;
		t_thr += uc.g[i].thr_s;
		t_alloc += uc.g[i].alloc_s;
		t_sm += uc.g[i].sm_s;
		t_cost += uc.g[i].cost;
	}
	free(uc.g);
	json_object_set_new(o, "rows", a);
	tot = json_object();
	json_object_set_new(tot, "gpu_seconds", json_real(t_gpu));
	json_object_set_new(tot, "sm_seconds", json_real(t_sm));
	json_object_set_new(tot, "gib_seconds", json_real(t_gib));
	json_object_set_new(tot, "throttled_seconds", json_real(t_thr));
	json_object_set_new(tot, "reserved_gpu_seconds", json_real(t_alloc));
	json_object_set_new(tot, "cost", json_real(t_cost));
	json_object_set_new(o, "total", tot);
	json_object_set_new(o, "unpriced_rows", json_integer(uc.unpriced));
	json_object_set_new(o, "sm_unknown_rows", json_integer(uc.sm_unknown));
	set_json(resp, 200, o);
}

/* ---- events ---- */

static void event_row(void *ctx, const struct gs_event *e)
{
	json_t *a = ctx, *o = json_object();
	char buf[40];

	json_object_set_new(o, "id", json_integer(e->id));
	iso_time(e->ts_ns, buf, sizeof(buf));
	json_object_set_new(o, "time", jstr(buf));
	json_object_set_new(o, "ts_ns", json_integer(e->ts_ns));
	json_object_set_new(o, "type", jstr(e->type));
	json_object_set_new(o, "slice", jstr(e->slice));
	json_object_set_new(o, "team", jstr(e->team));
	json_object_set_new(o, "gpu", json_integer(e->gpu));
	json_object_set_new(o, "message", jstr(e->message));
	json_array_append_new(a, o);
}

static bool parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	long long v;

	if (s == NULL || *s == '\0')
		return false;
	v = strtoll(s, &end, 10);
	if (*end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static void events_get(struct gs_api *api, const struct gs_http_req *req,
                       struct gs_http_resp *resp)
{
	const char *since = gs_http_arg(req, "since");
	const char *after = gs_http_arg(req, "after");
	const char *slice = gs_http_arg(req, "slice");
	const char *limit = gs_http_arg(req, "limit");
	int64_t since_ns = 0, after_id = 0, lim = 100;
	struct gs_errbuf eb = {0};
	json_t *o, *a;
	gs_err err;

	if (since &&
	    gs_api_parse_time(since, gs_now_ns(), &since_ns) != GS_OK) {
		fail(resp, GS_ERR_PARSE, "since: '%.40s' is not a time", since);
		return;
	}
	if (after && !parse_i64(after, 0, INT64_MAX, &after_id)) {
		fail(resp, GS_ERR_PARSE, "after: '%.40s' is not an event id",
		     after);
		return;
	}
	if (limit && !parse_i64(limit, 1, API_EVENTS_MAX, &lim)) {
		fail(resp, GS_ERR_RANGE, "limit must be 1..10000, got '%.20s'",
		     limit);
		return;
	}
	if (slice && !gs_name_is_valid(slice)) {
		fail(resp, GS_ERR_INVALID, "bad slice name '%.64s'", slice);
		return;
	}
	a = json_array();
	err =
	    gs_store_events(gs_node_store(api->node), after_id, since_ns, slice,
	                    req->peer.admin ? -1 : (int64_t)req->peer.uid,
	                    (int)lim, event_row, a, &eb);
	if (err) {
		json_decref(a);
		set_error(resp, err, &eb);
		return;
	}
	o = json_object();
	{
		size_t n = json_array_size(a);
		json_t *last = n ? json_array_get(a, n - 1) : NULL;

		json_object_set_new(
		    o, "last_id",
		    json_integer(
		        last ? json_integer_value(json_object_get(last, "id"))
		             : after_id));
	}
	json_object_set_new(o, "events", a);
	set_json(resp, 200, o);
}

/* ---- plan ---- */

static void plan_post(struct gs_api *api, const struct gs_http_req *req,
                      struct gs_http_resp *resp)
{
	struct gs_errbuf eb = {0};
	struct gs_mig_instance cur[GS_MIGPLAN_MAX_INSTANCES];
	struct gs_mig_demand dem[GS_CATALOG_MAX_PROFILES];
	struct gs_mig_plan *plan = NULL;
	const struct gs_gpu_model *m = NULL;
	struct gs_gpus *g = NULL;
	int n_cur = 0, n_dem = 0, gpu = -1;
	json_t *body, *v, *o, *a;
	const char *key;
	gs_err err = GS_OK;

	body = body_object(req, resp);
	if (body == NULL)
		return;
	json_object_foreach(body, key, v)
	{
		if (strcmp(key, "gpu") && strcmp(key, "model") &&
		    strcmp(key, "current") && strcmp(key, "demand")) {
			err = gs_fail(&eb, GS_ERR_INVALID,
			              "unknown key '%.40s'", key);
			goto out;
		}
	}
	g = malloc(sizeof(*g));
	plan = malloc(sizeof(*plan));
	if (g == NULL || plan == NULL) {
		err = gs_fail(&eb, GS_ERR_NOMEM, "out of memory");
		goto out;
	}
	gs_node_gpus(api->node, g);
	if ((v = json_object_get(body, "model"))) {
		if (!json_is_string(v) ||
		    (m = gs_catalog_find(json_string_value(v))) == NULL) {
			err = gs_fail(&eb, GS_ERR_UNKNOWN_MODEL,
			              "model: not a MIG-capable model in the "
			              "catalog");
			goto out;
		}
	}
	if ((v = json_object_get(body, "gpu"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) >= g->n) {
			err = gs_fail(&eb, GS_ERR_NOT_FOUND,
			              "gpu: no such GPU index");
			goto out;
		}
		gpu = (int)json_integer_value(v);
		if (m == NULL)
			m = g->gpu[gpu].cat;
	}
	if (m == NULL && g->n > 0 && json_object_get(body, "model") == NULL) {
		gpu = 0;
		m = g->gpu[0].cat;
	}
	if (m == NULL) {
		err = gs_fail(&eb, GS_ERR_UNSUPPORTED,
		              "the GPU is not a MIG-capable catalog model");
		goto out;
	}
	if ((v = json_object_get(body, "current"))) {
		if (!json_is_string(v)) {
			err = gs_fail(&eb, GS_ERR_PARSE,
			              "current must be a string like "
			              "\"3g.40gb@0,1g.10gb@6\"");
			goto out;
		}
		err = gs_migplan_parse_instances(m, json_string_value(v), true,
		                                 cur, GS_MIGPLAN_MAX_INSTANCES,
		                                 &n_cur, &eb);
		if (err)
			goto out;
	} else if (gpu >= 0) {
		const struct gs_gpu *gp = &g->gpu[gpu];

		for (int k = 0;
		     k < gp->n_mig && n_cur < GS_MIGPLAN_MAX_INSTANCES; k++) {
			const struct gs_mig_profile *p =
			    gs_catalog_profile_by_id(m, gp->mig[k].profile_id);

			if (p == NULL)
				continue;
			cur[n_cur].profile = p;
			cur[n_cur].start = gp->mig[k].start;
			cur[n_cur].in_use = true;
			n_cur++;
		}
	}
	v = json_object_get(body, "demand");
	if (v == NULL || !json_is_string(v)) {
		err = gs_fail(&eb, GS_ERR_PARSE,
		              "demand must be a string like "
		              "\"1g.10gb=4,2g.20gb=1\"");
		goto out;
	}
	err = gs_migplan_parse_demand(m, json_string_value(v), dem,
	                              GS_CATALOG_MAX_PROFILES, &n_dem, &eb);
	if (!err)
		err = gs_migplan_solve(m, cur, n_cur, dem, n_dem, plan, &eb);
	if (err)
		goto out;
	o = json_object();
	json_object_set_new(o, "model", jstr(m->name));
	json_object_set_new(o, "gpu",
	                    gpu >= 0 ? json_integer(gpu) : json_null());
	a = json_array();
	for (int i = 0; i < plan->n_layout; i++) {
		json_t *x = json_object();

		json_object_set_new(x, "profile",
		                    jstr(plan->layout[i].profile->name));
		json_object_set_new(x, "start",
		                    json_integer(plan->layout[i].start));
		json_object_set_new(x, "in_use",
		                    json_boolean(plan->layout[i].in_use));
		json_array_append_new(a, x);
	}
	json_object_set_new(o, "layout", a);
	a = json_array();
	for (int i = 0; i < plan->n_steps; i++) {
		json_t *x = json_object();

		json_object_set_new(x, "op",
		                    jstr(plan->steps[i].op == GS_MIG_CREATE
		                             ? "create"
		                             : "destroy"));
		json_object_set_new(x, "profile",
		                    jstr(plan->steps[i].profile->name));
		json_object_set_new(x, "start",
		                    json_integer(plan->steps[i].start));
		json_array_append_new(a, x);
	}
	json_object_set_new(o, "steps", a);
	a = json_array();
	for (int i = 0; i < plan->n_unmet; i++) {
		json_t *x = json_object();

		json_object_set_new(x, "profile",
		                    jstr(plan->unmet[i].profile->name));
		json_object_set_new(x, "count",
		                    json_integer(plan->unmet[i].count));
		json_array_append_new(a, x);
	}
	json_object_set_new(o, "unmet", a);
	json_object_set_new(o, "served_weight",
	                    json_integer(plan->served_weight));
	json_object_set_new(o, "demand_weight",
	                    json_integer(plan->demand_weight));
	set_json(resp, 200, o);
out:
	json_decref(body);
	free(g);
	free(plan);
	if (err)
		set_error(resp, err, &eb);
}

/* ---- health, metrics ---- */

static void healthz(struct gs_api *api, struct gs_http_resp *resp)
{
	json_t *o = json_object();
	struct gs_node_counters c;

	gs_node_counters(api->node, &c);
	json_object_set_new(o, "status", jstr("ok"));
	json_object_set_new(o, "api", jstr("v1"));
	json_object_set_new(
	    o, "schema",
	    json_integer(gs_store_schema_version(gs_node_store(api->node))));
	json_object_set_new(
	    o, "uptime_seconds",
	    json_real((double)(gs_now_ns() - c.started_ns) / 1e9));
	set_json(resp, 200, o);
}

static void metrics_get(struct gs_api *api, const struct gs_http_req *req,
                        struct gs_http_resp *resp)
{
	char *body = NULL;
	size_t len = 0;

	if (api->metrics)
		api->metrics(api->metrics_ctx, &req->peer, &body, &len);
	if (body == NULL) {
		body = strdup("");
		len = 0;
	}
	resp->status = 200;
	resp->body = body;
	resp->len = len;
	resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

/* ---- routing ---- */

/*
 * Splits "/v1/a/b/c" into at most 4 segments (copies, NUL-terminated).
 * Returns the count, or -1 for a path that is too deep, too long or holds
 * empty segments.
 */
static int split_path(const char *path, char seg[4][72])
{
	int n = 0;
	const char *p = path;

	if (*p != '/')
		return -1;
	while (*p == '/') {
		const char *q;
		size_t len;

		p++;
		if (*p == '\0')
			break;
		q = strchr(p, '/');
		len = q ? (size_t)(q - p) : strlen(p);
		if (len == 0 || len >= 72 || n == 4)
			return -1;
		memcpy(seg[n], p, len);
		seg[n][len] = '\0';
		n++;
		p += len;
	}
	return n;
}

void gs_api_handle(void *ctx, const struct gs_http_req *req,
                   struct gs_http_resp *resp)
{
	struct gs_api *api = ctx;
	char seg[4][72];
	int n = split_path(req->path ? req->path : "", seg);
	const char *m = req->method ? req->method : "";
	bool get = strcmp(m, "GET") == 0;

	resp->status = 0;
	resp->body = NULL;
	resp->content_type = "application/json";
	if (n < 0) {
		fail(resp, GS_ERR_NOT_FOUND, "no route for that path%s", "");
		return;
	}
	if (req->too_many_args) {
		fail(resp, GS_ERR_RANGE, "too many query arguments%s", "");
		return;
	}
	if (n == 1 && strcmp(seg[0], "healthz") == 0) {
		if (get)
			healthz(api, resp);
		else
			method_not_allowed(resp, m);
		return;
	}
	if (!req->peer.authed) {
		fail(resp, GS_ERR_PERM,
		     "authentication required (Authorization: Bearer)%s", "");
		resp->status = 401;
		return;
	}
	if (n == 1 && strcmp(seg[0], "metrics") == 0) {
		if (get)
			metrics_get(api, req, resp);
		else
			method_not_allowed(resp, m);
		return;
	}
	if (n < 2 || strcmp(seg[0], "v1") != 0) {
		fail(resp, GS_ERR_NOT_FOUND,
		     "no route for that path (the API lives under /v1)%s", "");
		return;
	}
	if (strcmp(seg[1], "slices") == 0) {
		if (n == 2) {
			if (get)
				slices_list(api, req, resp);
			else if (strcmp(m, "POST") == 0)
				slices_create(api, req, resp);
			else
				method_not_allowed(resp, m);
		} else {
			slice_one(api, req, resp, seg[2],
			          n == 4 ? seg[3] : NULL);
		}
		return;
	}
	if (strcmp(seg[1], "teams") == 0 && n <= 3) {
		if (n == 2) {
			if (get)
				teams_list(api, resp);
			else
				method_not_allowed(resp, m);
		} else {
			team_one(api, req, resp, seg[2]);
		}
		return;
	}
	if (n == 2 && strcmp(seg[1], "gpus") == 0) {
		if (get)
			gpus_get(api, req, resp);
		else
			method_not_allowed(resp, m);
		return;
	}
	if (n == 2 && strcmp(seg[1], "demand") == 0) {
		if (get)
			demand_get(api, resp);
		else
			method_not_allowed(resp, m);
		return;
	}
	if (n == 2 && strcmp(seg[1], "usage") == 0) {
		if (get)
			usage_get(api, req, resp);
		else
			method_not_allowed(resp, m);
		return;
	}
	if (n == 2 && strcmp(seg[1], "events") == 0) {
		if (get)
			events_get(api, req, resp);
		else
			method_not_allowed(resp, m);
		return;
	}
	if (n == 2 && strcmp(seg[1], "plan") == 0) {
		if (strcmp(m, "POST") == 0)
			plan_post(api, req, resp);
		else
			method_not_allowed(resp, m);
		return;
	}
	fail(resp, GS_ERR_NOT_FOUND, "no route for /v1/%.64s", seg[1]);
}
