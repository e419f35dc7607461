/*
 * api.c - routes of API v1 (see api.h and docs/api.md):
 *
 *   GET    /healthz                               200 {"status":"ok",...}
 *   GET    /metrics                               Prometheus text
 *   GET    /v1/slices[?team=T][&usage=1]          {"slices":[slice...]}
 *   POST   /v1/slices                             201 slice
 *            (spec + team, on_exit, owner, labels)
 *   GET    /v1/slices/NAME                        slice, with live usage
 *   DELETE /v1/slices/NAME                        {"deleted":"NAME"}
 *   POST   /v1/slices/NAME/attach                 slice
 *            ({"pid":N}, default the caller)
 *   GET    /v1/gpus                               {"source":...,"gpus":[...]}
 *   GET    /v1/teams                              {"teams":[team...]}
 *   GET    /v1/teams/NAME                         team, with usage
 *   PUT    /v1/teams/NAME                         team
 *            ({"parent","guarantee","max"})
 *   DELETE /v1/teams/NAME                         {"deleted":"NAME"}
 *   GET    /v1/usage?since&until&by&team&slice    ledger report with costs
 *   POST   /v1/plan                               MIG plan
 *            ({"gpu"|"model","current","demand"})
 *   GET    /v1/events?since&after&slice&limit     {"events":[...],"last_id":N}
 *   GET    /v1/demand                             the demand seen, by weight
 *
 * Resources, one file each: slices.c, teams.c, gpus.c (gpus and demand),
 * usage.c, events.c, plan.c; json.c renders every reply and error;
 * query.c reads query arguments.
 *
 * Nothing a client sends reaches the model unchecked: bodies are JSON
 * objects with known keys only, names follow gs_name_is_valid, numbers
 * are range-checked. Handlers build a jansson tree and serialise it once.
 */
#include "api_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void healthz(struct gs_api *api, struct gs_http_resp *resp)
{
	json_t *o = json_object();
	struct gs_node_counters c;

	gs_node_counters(api->node, &c);
	json_object_set_new(o, "status", gs__api_jstr("ok"));
	json_object_set_new(o, "api", gs__api_jstr("v1"));
	json_object_set_new(
	    o, "schema",
	    json_integer(gs_store_schema_version(gs_node_store(api->node))));
	json_object_set_new(
	    o, "uptime_seconds",
	    json_real((double)(gs_now_ns() - c.started_ns) / 1e9));
	gs__api_set_json(resp, 200, o);
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
		gs__api_fail(resp, GS_ERR_NOT_FOUND, "no route for that path");
		return;
	}
	if (req->too_many_args) {
		gs__api_fail(resp, GS_ERR_RANGE, "too many query arguments");
		return;
	}
	if (n == 1 && strcmp(seg[0], "healthz") == 0) {
		if (get)
			healthz(api, resp);
		else
			gs__api_method_not_allowed(resp, m);
		return;
	}
	if (!req->peer.authed) {
		gs__api_fail(resp, GS_ERR_PERM,
		             "authentication required (Authorization: Bearer)");
		resp->status = 401;
		return;
	}
	if (n == 1 && strcmp(seg[0], "metrics") == 0) {
		if (get)
			metrics_get(api, req, resp);
		else
			gs__api_method_not_allowed(resp, m);
		return;
	}
	if (n < 2 || strcmp(seg[0], "v1") != 0) {
		gs__api_fail(
		    resp, GS_ERR_NOT_FOUND,
		    "no route for that path (the API lives under /v1)");
		return;
	}
	if (strcmp(seg[1], "slices") == 0) {
		if (n == 2) {
			if (get)
				gs__api_slices_list(api, req, resp);
			else if (strcmp(m, "POST") == 0)
				gs__api_slices_create(api, req, resp);
			else
				gs__api_method_not_allowed(resp, m);
		} else {
			gs__api_slice_one(api, req, resp, seg[2],
			                  n == 4 ? seg[3] : NULL);
		}
		return;
	}
	if (strcmp(seg[1], "teams") == 0 && n <= 3) {
		if (n == 2) {
			if (get)
				gs__api_teams_list(api, resp);
			else
				gs__api_method_not_allowed(resp, m);
		} else {
			gs__api_team_one(api, req, resp, seg[2]);
		}
		return;
	}
	if (n == 2 && strcmp(seg[1], "gpus") == 0) {
		if (get)
			gs__api_gpus_get(api, req, resp);
		else
			gs__api_method_not_allowed(resp, m);
		return;
	}
	if (n == 2 && strcmp(seg[1], "demand") == 0) {
		if (get)
			gs__api_demand_get(api, &req->peer, resp);
		else
			gs__api_method_not_allowed(resp, m);
		return;
	}
	if (n == 2 && strcmp(seg[1], "usage") == 0) {
		if (get)
			gs__api_usage_get(api, req, resp);
		else
			gs__api_method_not_allowed(resp, m);
		return;
	}
	if (n == 2 && strcmp(seg[1], "events") == 0) {
		if (get)
			gs__api_events_get(api, req, resp);
		else
			gs__api_method_not_allowed(resp, m);
		return;
	}
	if (n == 2 && strcmp(seg[1], "plan") == 0) {
		if (strcmp(m, "POST") == 0)
			gs__api_plan_post(api, req, resp);
		else
			gs__api_method_not_allowed(resp, m);
		return;
	}
	gs__api_fail(resp, GS_ERR_NOT_FOUND, "no route for /v1/%.64s", seg[1]);
}
