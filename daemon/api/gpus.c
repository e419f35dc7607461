/*
 * gpus.c - /v1/gpus (the inventory, each GPU's health and what is
 * allocated on it) and /v1/demand (the slice shapes asked for, by
 * weight).
 */
#include "api_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/demand.h"

void gs__api_gpus_get(struct gs_api *api, const struct gs_http_req *req,
                      struct gs_http_resp *resp)
{
	struct gs_gpus *g = malloc(sizeof(*g));
	json_t *o, *a;

	(void)req;
	if (g == NULL) {
		gs__api_fail(resp, GS_ERR_NOMEM, "out of memory");
		return;
	}
	gs_node_gpus(api->node, g);
	o = json_object();
	json_object_set_new(o, "source",
	                    gs__api_jstr(g->fake  ? "fake"
	                                 : g->sim ? "sim"
	                                          : "nvml"));
	json_object_set_new(o, "library", gs__api_jstr(g->library));
	if (g->sim && g->sim_dir[0])
		json_object_set_new(o, "sim_dir", gs__api_jstr(g->sim_dir));
	json_object_set_new(o, "driver", gs__api_jstr(g->driver));
	/* Memory promised per GPU up to this x its memory (docs/swap.md);
	 * the DRA plugin publishes it as capacity. */
	json_object_set_new(
	    o, "swap_oversubscribe",
	    json_real(gs_node_config(api->node)->swap_oversubscribe));
	a = json_array();
	for (int i = 0; i < g->n; i++) {
		const struct gs_gpu *gp = &g->gpu[i];
		json_t *x = json_object(), *mig = json_object(), *inst;
		uint64_t mem;
		uint32_t comp;
		int ns;

		json_object_set_new(x, "index", json_integer(gp->index));
		json_object_set_new(x, "uuid", gs__api_jstr(gp->uuid));
		json_object_set_new(x, "name", gs__api_jstr(gp->name));
		json_object_set_new(x, "model", gs__api_jstr(gp->model));
		gs__api_mem_field(x, "memory", gp->memory_bytes);
		json_object_set_new(x, "sm_count", json_integer(gp->sm_count));
		json_object_set_new(mig, "capable",
		                    json_boolean(gp->mig_capable));
		json_object_set_new(mig, "enabled", json_boolean(gp->mig_on));
		inst = json_array();
		for (int k = 0; k < gp->n_mig; k++) {
			const struct gs_mig_dev *m = &gp->mig[k];
			json_t *mi = json_object();

			json_object_set_new(mi, "uuid", gs__api_jstr(m->uuid));
			json_object_set_new(mi, "profile",
			                    gs__api_jstr(m->profile));
			json_object_set_new(mi, "gi", json_integer(m->gi_id));
			json_object_set_new(mi, "ci", json_integer(m->ci_id));
			json_object_set_new(mi, "start",
			                    json_integer(m->start));
			json_object_set_new(mi, "size", json_integer(m->size));
			gs__api_mem_field(mi, "memory", m->memory_bytes);
			json_object_set_new(mi, "sm_count",
			                    json_integer(m->sm_count));
			json_array_append_new(inst, mi);
		}
		json_object_set_new(mig, "instances", inst);
		json_object_set_new(x, "mig", mig);
		{
			char why[96];
			bool ok =
			    gs_node_gpu_health(api->node, i, why, sizeof(why));

			json_object_set_new(
			    x, "health",
			    ok ? json_pack("{s:b}", "healthy", 1)
			       : json_pack("{s:b, s:s}", "healthy", 0, "reason",
			                   why));
		}
		gs_node_gpu_alloc(api->node, i, &mem, &comp, &ns);
		{
			json_t *al = json_object();

			gs__api_mem_field(al, "memory", mem);
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
	gs__api_set_json(resp, 200, o);
}

/*
 * The demand seen: its classes by weight now, each with the milli-GPU it
 * counts as in the `frag` scorer on this node's first GPU (null for MIG
 * classes, which do not enter it).
 */
void gs__api_demand_get(struct gs_api *api, const struct gs_peer *viewer,
                        struct gs_http_resp *resp)
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
		gs__api_fail(resp, GS_ERR_NOMEM, "out of memory");
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
		                           .memory_bytes =
		                               c->shape.memory_bytes,
		                           .compute_pct = c->shape.compute_pct};
		int milli = gs_place_item_milli(&it, gpu_mem);
		char when[40];
		json_t *x = json_object();

		json_object_set_new(
		    x, "kind",
		    gs__api_jstr(gs_demand_kind_name(c->shape.kind)));
		if (c->shape.kind == GS_PLACE_FRACTION) {
			gs__api_mem_field(x, "memory", c->shape.memory_bytes);
			json_object_set_new(x, "compute",
			                    json_integer(c->shape.compute_pct));
		}
		if (c->shape.kind == GS_PLACE_MIG)
			json_object_set_new(x, "mig_profile",
			                    gs__api_jstr(c->shape.mig_profile));
		json_object_set_new(x, "gpu_milli",
		                    milli > 0 ? json_integer(milli)
		                              : json_null());
		json_object_set_new(x, "num_gpu", json_integer(1));
		json_object_set_new(
		    x, "weight", json_real(gs_demand_weight(d, order[k], now)));
		gs__api_iso_time(c->t_ns, when, sizeof(when));
		json_object_set_new(x, "last_seen", gs__api_jstr(when));
		json_array_append_new(a, x);
	}
	o = json_object();
	json_object_set_new(o, "placement",
	                    gs__api_jstr(gs_place_policy_name(
	                        gs_node_config(api->node)->placement)));
	json_object_set_new(
	    o, "half_life_seconds",
	    json_integer(gs_node_config(api->node)->demand_half_life_s));
	json_object_set_new(o, "gpu_memory_bytes",
	                    json_integer((json_int_t)gpu_mem));
	json_object_set_new(o, "total_weight",
	                    json_real(gs_demand_total(d, now)));
	/* Each class is some tenant's slice shape and when it asked: only
	 * administrators see them; a tenant sees the aggregates. */
	json_object_set_new(o, "n_classes", json_integer(d->n));
	if (viewer->admin)
		json_object_set_new(o, "classes", a);
	else
		json_decref(a);
	free(d);
	gs__api_set_json(resp, 200, o);
}
