/*
 * json.c - the API's one JSON module: every reply body is rendered here
 * (slices with their runtime contract, teams, quota vectors, memory
 * fields, times) and every error reply ({"error","message"}); request
 * bodies are parsed here into JSON objects. Strings that may come from a
 * client or the system go through gs__api_jstr. Owns no state.
 */
#include "api_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs/spec_json.h"

/*
 * A JSON string for text that may come from a client or the system: valid
 * UTF-8 as it is, anything else with its odd bytes replaced by '?', so a
 * reply never loses a field to bad input.
 */
json_t *gs__api_jstr(const char *s)
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

void gs__api_set_json(struct gs_http_resp *resp, int status, json_t *obj)
{
	char *s = json_dumps(obj, JSON_COMPACT);

	json_decref(obj);
	if (s == NULL) {
		resp->status = 500;
		resp->body = strdup("{\"error\":\"NOMEM\",\"message\":\"out of memory\"}\n");
		resp->len = resp->body ? strlen(resp->body) : 0;
		return;
	}
	resp->status = status;
	resp->len = strlen(s);
	/* jansson allocates with malloc by default: the transport frees it. */
	resp->body = s;
	resp->content_type = "application/json";
}

void gs__api_set_error(struct gs_http_resp *resp, gs_err err,
                       const struct gs_errbuf *eb)
{
	json_t *o = json_object();

	json_object_set_new(o, "error", gs__api_jstr(gs_err_name(err)));
	json_object_set_new(o, "message", gs__api_jstr(gs_errbuf_msg(eb, err)));
	gs__api_set_json(resp, gs_api_status(err), o);
}

void gs__api_set_deleted(struct gs_http_resp *resp, gs_err err,
                         const struct gs_errbuf *eb, const char *name)
{
	json_t *o;

	if (err) {
		gs__api_set_error(resp, err, eb);
		return;
	}
	o = json_object();
	json_object_set_new(o, "deleted", gs__api_jstr(name));
	gs__api_set_json(resp, 200, o);
}

void gs__api_fail(struct gs_http_resp *resp, gs_err err, const char *fmt, ...)
{
	struct gs_errbuf eb = {0};
	char msg[sizeof(eb.msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gs_fail(&eb, err, "%s", msg);
	gs__api_set_error(resp, err, &eb);
}

void gs__api_method_not_allowed(struct gs_http_resp *resp, const char *method)
{
	struct gs_errbuf eb = {0};

	gs_fail(&eb, GS_ERR_INVALID, "method %s not allowed here", method);
	gs__api_set_error(resp, GS_ERR_INVALID, &eb);
	resp->status = 405;
}

/* Parses the body as a JSON object (NULL body = empty object). */
json_t *gs__api_body_object(const struct gs_http_req *req,
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
		gs__api_set_error(resp, GS_ERR_PARSE, &eb);
		return NULL;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		gs__api_fail(resp, GS_ERR_PARSE, "body must be a JSON object");
		return NULL;
	}
	return o;
}

void gs__api_iso_time(int64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void gs__api_mem_field(json_t *o, const char *key, uint64_t bytes)
{
	char buf[32], k[48];

	gs_format_memory(bytes, buf, sizeof(buf));
	json_object_set_new(o, key, gs__api_jstr(buf));
	snprintf(k, sizeof(k), "%s_bytes", key);
	json_object_set_new(o, k, json_integer((json_int_t)bytes));
}

json_t *gs__api_slice_json(const struct gs_slice *s,
                           const struct gs_node_runtime *rt, bool with_usage,
                           const struct gs_node_usage *u)
{
	json_t *o = json_object(), *g, *r, *env, *pids;
	char buf[64];

	json_object_set_new(o, "id", json_integer(s->id));
	json_object_set_new(o, "name", gs__api_jstr(s->name));
	json_object_set_new(o, "owner_uid", json_integer(s->owner_uid));
	json_object_set_new(o, "team", gs__api_jstr(s->team));
	json_object_set_new(o, "mode", gs__api_jstr(gs_mode_name(s->mode)));
	json_object_set_new(o, "mode_requested",
	                    gs__api_jstr(gs_mode_name(s->spec.mode)));
	gs__api_mem_field(o, "memory", s->spec.memory_bytes);
	json_object_set_new(o, "compute", json_integer(s->spec.compute_pct));
	json_object_set_new(o, "sm_share", json_real(gs_slice_sm_share(s)));
	json_object_set_new(o, "priority",
	                    gs__api_jstr(gs_priority_name(s->spec.priority)));
	json_object_set_new(o, "weight", json_integer(s->spec.weight));
	json_object_set_new(o, "isolation",
	                    gs__api_jstr(gs_isolation_name(s->spec.isolation)));
	/* Being created (its region entry is being written), or no longer
	 * in the shared region (a write failed; housekeeping retries): not
	 * ready - a shim sent to it refuses GPU work. */
	if (s->state == GS_SLICE_PENDING) {
		json_object_set_new(o, "state", gs__api_jstr("pending"));
		json_object_set_new(o, "reason", gs__api_jstr("being created"));
	} else if (s->region_slot < 0) {
		json_object_set_new(o, "state", gs__api_jstr("pending"));
		json_object_set_new(
		    o, "reason",
		    gs__api_jstr(
		        "its limits are not in the shared region yet"));
	} else {
		json_object_set_new(
		    o, "state", gs__api_jstr(gs_slice_state_name(s->state)));
		json_object_set_new(o, "reason", gs__api_jstr(s->reason));
	}
	json_object_set_new(
	    o, "on_exit",
	    gs__api_jstr(s->on_exit == GS_ON_EXIT_DELETE ? "delete" : "keep"));
	json_object_set_new(o, "borrowed", json_boolean(s->borrowed));
	/* parked by a quota reclaim (gs/park.h): since when */
	if (s->state == GS_SLICE_PARKED) {
		gs__api_iso_time(s->parked_ns, buf, sizeof(buf));
		json_object_set_new(o, "parked_since", gs__api_jstr(buf));
	}
	gs__api_iso_time(s->created_ns, buf, sizeof(buf));
	json_object_set_new(o, "created", gs__api_jstr(buf));
	json_object_set_new(o, "created_ns", json_integer(s->created_ns));
	json_object_set_new(o, "spec", gs_spec_to_json(&s->spec));
	json_object_set_new(o, "swap", gs__api_swap_json(s));
	json_object_set_new(o, "labels",
	                    gs_slice_labels_to_json(s->labels, s->n_labels));

	g = json_object();
	json_object_set_new(g, "index", json_integer(s->gpu_index));
	json_object_set_new(g, "uuid", gs__api_jstr(s->gpu_uuid));
	json_object_set_new(o, "gpu", g);
	if (s->mig_uuid[0]) {
		json_t *m = json_object();

		json_object_set_new(m, "profile", gs__api_jstr(s->mig_profile));
		json_object_set_new(m, "uuid", gs__api_jstr(s->mig_uuid));
		json_object_set_new(m, "gi", json_integer(s->gi_id));
		json_object_set_new(m, "ci", json_integer(s->ci_id));
		json_object_set_new(o, "mig", m);
	} else {
		json_object_set_new(o, "mig", json_null());
	}
	r = json_object();
	json_object_set_new(r, "dir", gs__api_jstr(rt->region_dir));
	json_object_set_new(r, "slot", json_integer(s->region_slot));
	json_object_set_new(r, "generation", json_integer(s->region_gen));
	if (rt->books[0])
		json_object_set_new(r, "books", gs__api_jstr(rt->books));
	json_object_set_new(o, "region", r);
	pids = json_array();
	for (int i = 0; i < s->n_pids; i++)
		json_array_append_new(pids, json_integer(s->pids[i]));
	json_object_set_new(o, "pids", pids);

	env = json_object();
	for (int i = 0; i < rt->n_env; i++)
		json_object_set_new(env, rt->env[i].key,
		                    gs__api_jstr(rt->env[i].value));
	json_object_set_new(o, "env", env);

	if (with_usage) {
		json_t *uo = json_object();

		if (u != NULL) {
			json_object_set_new(uo, "processes",
			                    json_integer(u->n_procs));
			gs__api_mem_field(uo, "memory_used", u->mem_used);
			gs__api_mem_field(uo, "memory_peak", u->mem_peak);
			json_object_set_new(
			    uo, "gpu_seconds",
			    json_real((double)u->busy_ns / 1e9));
			json_object_set_new(uo, "sm_seconds",
			                    json_real(u->sm_seconds));
			json_object_set_new(
			    uo, "throttled_seconds",
			    json_real((double)u->throttled_ns / 1e9));
			json_object_set_new(uo, "compute_achieved",
			                    json_real(u->compute_pct));
			json_object_set_new(
			    uo, "nvml_memory_bytes",
			    json_integer((json_int_t)u->nvml_mem));
			if (u->nvml_compute_pct >= 0)
				json_object_set_new(
				    uo, "nvml_compute_pct",
				    json_real(u->nvml_compute_pct));
		}
		json_object_set_new(o, "usage", uo);
	}
	return o;
}

json_t *gs__api_qvec_json(const struct gs_qvec *v)
{
	json_t *o = json_object();

	if (v->v[GS_QRES_MEMORY] == GS_QUOTA_UNLIMITED) {
		json_object_set_new(o, "memory", json_null());
		json_object_set_new(o, "memory_bytes", json_null());
	} else {
		gs__api_mem_field(o, "memory", (uint64_t)v->v[GS_QRES_MEMORY]);
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

json_t *gs__api_team_json(const struct gs_team *t, const struct gs_qvec *use)
{
	json_t *o = json_object();

	json_object_set_new(o, "name", gs__api_jstr(t->name));
	json_object_set_new(
	    o, "parent", t->parent[0] ? gs__api_jstr(t->parent) : json_null());
	json_object_set_new(o, "guarantee", gs__api_qvec_json(&t->guarantee));
	json_object_set_new(o, "max", gs__api_qvec_json(&t->max));
	if (use)
		json_object_set_new(o, "usage", gs__api_qvec_json(use));
	json_object_set_new(o, "from_config", json_boolean(t->from_config));
	return o;
}
