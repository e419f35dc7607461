/*
 * slices.c - /v1/slices: create (POST), list, get, delete, attach. A
 * slice is rendered with the runtime contract the node computes for it
 * (gs_node_slice_runtime) and, where asked, its live usage.
 */
#include "api_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/spec_json.h"

/* Slice `s` as a reply renders it: with its runtime contract, and its
 * live usage when `with_usage` (an empty "usage" when it is gone). */
static json_t *slice_out(struct gs_node *node, const struct gs_slice *s,
                         bool with_usage)
{
	struct gs_node_runtime rt;
	struct gs_node_usage u;
	bool known;

	gs_node_slice_runtime(node, s, &rt);
	known = with_usage && gs_node_slice_usage(node, s->id, &u) == GS_OK;
	return gs__api_slice_json(s, &rt, with_usage, known ? &u : NULL);
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

/*
 * Priority and weight are policy: a non-admin peer may ask for at most
 * what its team allows (teams.<team>.max_priority / max_weight), else
 * quota.default_user's (normal and 10 unless set). Administrators (and
 * so the Kubernetes and Slurm integrations, which map a priority class or
 * a QOS onto these) are not bound. GS_ERR_PERM (403) names the limit.
 */
static gs_err priority_allowed(struct gs_api *api, const struct gs_peer *peer,
                               const struct gs_slice_spec *spec,
                               struct gs_errbuf *eb)
{
	const struct gs_config *cfg = gs_node_config(api->node);
	const char *team = peer->local ? gs_config_user_team(cfg, peer->user)
	                               : NULL;
	const char *where_p, *where_w;
	int max_p, max_w;

	if (peer->admin)
		return GS_OK;
	if (team == NULL)
		team = cfg->default_team;
	gs_config_team_limits(cfg, team, &max_p, &max_w, &where_p, &where_w);
	if ((int)spec->priority > max_p)
		return gs_fail(eb, GS_ERR_PERM,
		               "priority '%s' is over the most team '%s' may ask for: '%s' (%s)",
		               gs_priority_name(spec->priority), team,
		               gs_priority_name((enum gs_priority)max_p), where_p);
	if (spec->weight > max_w)
		return gs_fail(eb, GS_ERR_PERM,
		               "weight %d is over the most team '%s' may ask for: %d (%s)",
		               spec->weight, team, max_w, where_w);
	return GS_OK;
}

void gs__api_slices_create(struct gs_api *api, const struct gs_http_req *req,
                           struct gs_http_resp *resp)
{
	struct gs_node_create_req cr;
	struct gs_node_create_res *res;
	struct gs_errbuf eb = {0};
	json_t *body, *o;
	gs_err err;

	body = gs__api_body_object(req, resp);
	if (body == NULL)
		return;
	memset(&cr, 0, sizeof(cr));
	gs_spec_init(&cr.spec);
	err = take_create_extras(body, &cr, &eb);
	if (!err)
		err = gs_spec_from_json(&cr.spec, body, &eb);
	json_decref(body);
	if (!err)
		err = priority_allowed(api, &req->peer, &cr.spec, &eb);
	if (err) {
		gs__api_set_error(resp, err, &eb);
		return;
	}
	res = malloc(sizeof(*res));
	if (res == NULL) {
		gs__api_fail(resp, GS_ERR_NOMEM, "out of memory");
		return;
	}
	err = gs_node_slice_create(api->node, &req->peer, &cr, res, &eb);
	if (err) {
		free(res);
		gs__api_set_error(resp, err, &eb);
		return;
	}
	o = slice_out(api->node, &res->slice, false);
	if (res->n_victims) {
		json_t *a = json_array(), *p = json_array();

		for (int i = 0; i < res->n_victims; i++) {
			json_array_append_new(a, gs__api_jstr(res->victims[i]));
			if (res->parked[i])
				json_array_append_new(
				    p, gs__api_jstr(res->victims[i]));
		}
		json_object_set_new(o, "preempted", a);
		/* of those, the ones parked rather than killed */
		json_object_set_new(o, "parked", p);
	}
	free(res);
	gs__api_set_json(resp, 201, o);
}

void gs__api_slices_list(struct gs_api *api, const struct gs_http_req *req,
                         struct gs_http_resp *resp)
{
	struct gs_slice *v;
	const char *team = gs_http_arg(req, "team");
	const char *usage = gs_http_arg(req, "usage");
	bool with_usage = usage && strcmp(usage, "0") != 0;
	json_t *o, *a;
	int n;

	if (team && !gs_name_is_valid(team)) {
		gs__api_fail(resp, GS_ERR_INVALID, "bad team '%s'", team);
		return;
	}
	if (gs_node_slice_list(api->node, &req->peer, team, &v, &n) != GS_OK) {
		gs__api_fail(resp, GS_ERR_NOMEM, "out of memory");
		return;
	}
	a = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(a,
		                      slice_out(api->node, &v[i], with_usage));
	free(v);
	o = json_object();
	json_object_set_new(o, "slices", a);
	gs__api_set_json(resp, 200, o);
}

void gs__api_slice_one(struct gs_api *api, const struct gs_http_req *req,
                       struct gs_http_resp *resp, const char *name,
                       const char *action)
{
	struct gs_errbuf eb = {0};
	struct gs_slice s;
	gs_err err;

	if (!gs_name_is_valid(name)) {
		gs__api_fail(resp, GS_ERR_NOT_FOUND, "no slice '%.64s'", name);
		return;
	}
	if (action) {
		json_t *body, *v;
		int32_t pid = req->peer.pid;

		if (strcmp(action, "attach") != 0) {
			gs__api_fail(resp, GS_ERR_NOT_FOUND,
			             "no route for '%s'", action);
			return;
		}
		if (strcmp(req->method, "POST") != 0) {
			gs__api_method_not_allowed(resp, req->method);
			return;
		}
		body = gs__api_body_object(req, resp);
		if (body == NULL)
			return;
		v = json_object_get(body, "pid");
		if (v && (!json_is_integer(v) || json_integer_value(v) <= 0 ||
		          json_integer_value(v) > 0x7fffffff)) {
			json_decref(body);
			gs__api_fail(resp, GS_ERR_INVALID,
			             "pid must be a process id");
			return;
		}
		if (v)
			pid = (int32_t)json_integer_value(v);
		if (json_object_size(body) > (v ? 1u : 0u)) {
			json_decref(body);
			gs__api_fail(resp, GS_ERR_INVALID,
			             "attach takes only \"pid\"");
			return;
		}
		json_decref(body);
		err = gs_node_slice_attach(api->node, &req->peer, name, pid, &s,
		                           &eb);
		if (err)
			gs__api_set_error(resp, err, &eb);
		else
			gs__api_set_json(resp, 200,
			                 slice_out(api->node, &s, true));
		return;
	}
	if (strcmp(req->method, "GET") == 0) {
		if (gs_node_slice_get(api->node, &req->peer, name, &s) !=
		    GS_OK) {
			gs__api_fail(resp, GS_ERR_NOT_FOUND, "no slice '%s'",
			             name);
			return;
		}
		gs__api_set_json(resp, 200, slice_out(api->node, &s, true));
	} else if (strcmp(req->method, "DELETE") == 0) {
		err = gs_node_slice_delete(api->node, &req->peer, name, &eb);
		gs__api_set_deleted(resp, err, &eb, name);
	} else {
		gs__api_method_not_allowed(resp, req->method);
	}
}
