/*
 * plan.c - /v1/plan: a MIG layout for a demand on one of the node's GPUs
 * or a catalog model (core's gs_migplan), without applying it.
 */
#include "api_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/catalog.h"
#include "gs/migplan.h"

void gs__api_plan_post(struct gs_api *api, const struct gs_http_req *req,
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

	body = gs__api_body_object(req, resp);
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
			              "model: not a MIG-capable model in the catalog");
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
			              "current must be a string like \"3g.40gb@0,1g.10gb@6\"");
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
		              "demand must be a string like \"1g.10gb=4,2g.20gb=1\"");
		goto out;
	}
	err = gs_migplan_parse_demand(m, json_string_value(v), dem,
	                              GS_CATALOG_MAX_PROFILES, &n_dem, &eb);
	if (!err)
		err = gs_migplan_solve(m, cur, n_cur, dem, n_dem, plan, &eb);
	if (err)
		goto out;
	o = json_object();
	json_object_set_new(o, "model", gs__api_jstr(m->name));
	json_object_set_new(o, "gpu",
	                    gpu >= 0 ? json_integer(gpu) : json_null());
	a = json_array();
	for (int i = 0; i < plan->n_layout; i++) {
		json_t *x = json_object();

		json_object_set_new(
		    x, "profile", gs__api_jstr(plan->layout[i].profile->name));
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

		json_object_set_new(
		    x, "op",
		    gs__api_jstr(plan->steps[i].op == GS_MIG_CREATE
		                     ? "create"
		                     : "destroy"));
		json_object_set_new(x, "profile",
		                    gs__api_jstr(plan->steps[i].profile->name));
		json_object_set_new(x, "start",
		                    json_integer(plan->steps[i].start));
		json_array_append_new(a, x);
	}
	json_object_set_new(o, "steps", a);
	a = json_array();
	for (int i = 0; i < plan->n_unmet; i++) {
		json_t *x = json_object();

		json_object_set_new(x, "profile",
		                    gs__api_jstr(plan->unmet[i].profile->name));
		json_object_set_new(x, "count",
		                    json_integer(plan->unmet[i].count));
		json_array_append_new(a, x);
	}
	json_object_set_new(o, "unmet", a);
	json_object_set_new(o, "served_weight",
	                    json_integer(plan->served_weight));
	json_object_set_new(o, "demand_weight",
	                    json_integer(plan->demand_weight));
	gs__api_set_json(resp, 200, o);
out:
	json_decref(body);
	free(g);
	free(plan);
	if (err)
		gs__api_set_error(resp, err, &eb);
}
