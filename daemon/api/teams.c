/*
 * teams.c - /v1/teams: list, get (with usage), put (guarantee and max
 * quota vectors), delete.
 */
#include "api_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gs__api_teams_list(struct gs_api *api, struct gs_http_resp *resp)
{
	struct gs_team *v;
	json_t *o, *a;
	int n;

	if (gs_node_team_list(api->node, &v, &n) != GS_OK) {
		gs__api_fail(resp, GS_ERR_NOMEM, "out of memory");
		return;
	}
	a = json_array();
	for (int i = 0; i < n; i++) {
		struct gs_team t;
		struct gs_qvec use;

		if (gs_node_team_get(api->node, v[i].name, &t, &use) == GS_OK)
			json_array_append_new(a, gs__api_team_json(&t, &use));
	}
	free(v);
	o = json_object();
	json_object_set_new(o, "teams", a);
	gs__api_set_json(resp, 200, o);
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

	body = gs__api_body_object(req, resp);
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
		gs__api_set_error(resp, err, &eb);
		return;
	}
	if (gs_node_team_get(api->node, name, &t, &use) != GS_OK) {
		gs__api_fail(resp, GS_ERR_INTERNAL, "team vanished");
		return;
	}
	gs__api_set_json(resp, 200, gs__api_team_json(&t, &use));
}

void gs__api_team_one(struct gs_api *api, const struct gs_http_req *req,
                      struct gs_http_resp *resp, const char *name)
{
	struct gs_errbuf eb = {0};
	gs_err err;

	if (!gs_name_is_valid(name)) {
		gs__api_fail(resp, GS_ERR_INVALID, "bad team name '%.64s'",
		             name);
		return;
	}
	if (strcmp(req->method, "GET") == 0) {
		struct gs_team t;
		struct gs_qvec use;

		if (gs_node_team_get(api->node, name, &t, &use) != GS_OK) {
			gs__api_fail(resp, GS_ERR_NOT_FOUND, "no team '%s'",
			             name);
			return;
		}
		gs__api_set_json(resp, 200, gs__api_team_json(&t, &use));
	} else if (strcmp(req->method, "PUT") == 0) {
		team_put(api, req, resp, name);
	} else if (strcmp(req->method, "DELETE") == 0) {
		err = gs_node_team_delete(api->node, &req->peer, name, &eb);
		gs__api_set_deleted(resp, err, &eb, name);
	} else {
		gs__api_method_not_allowed(resp, req->method);
	}
}
