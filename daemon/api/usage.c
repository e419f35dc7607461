/*
 * usage.c - /v1/usage: the ledger's rows in a window, grouped by team or
 * slice, with their cost by the config's prices.
 */
#include "api_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct usage_group {
	char key[GS_NAME_MAX];
	char team[GS_NAME_MAX];
	double gpu_s, gib_s, thr_s, alloc_s, sm_s, parked_s, cost;
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
	g->parked_s += f * r->parked_seconds;
	if (r->sm_seconds >= 0)
		g->sm_s += f * r->sm_seconds;
	else
		uc->sm_unknown++;
	g->cost += f * cost;
}

void gs__api_usage_get(struct gs_api *api, const struct gs_http_req *req,
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
	double t_parked = 0;
	double t_cost = 0;
	char buf[40];
	gs_err err;

	memset(&uc, 0, sizeof(uc));
	uc.cfg = gs_node_config(api->node);
	uc.since = now - 86400LL * 1000000000;
	uc.until = now;
	if (since && gs_api_parse_time(since, now, &uc.since) != GS_OK) {
		gs__api_fail(
		    resp, GS_ERR_PARSE,
		    "since: '%.40s' is not a duration (24h), Unix time or RFC 3339 time",
		    since);
		return;
	}
	if (until && gs_api_parse_time(until, now, &uc.until) != GS_OK) {
		gs__api_fail(resp, GS_ERR_PARSE, "until: '%.40s' is not a time",
		             until);
		return;
	}
	if (uc.until <= uc.since) {
		gs__api_fail(resp, GS_ERR_RANGE, "until must be after since");
		return;
	}
	if (by == NULL || strcmp(by, "team") == 0)
		uc.by_slice = false;
	else if (strcmp(by, "slice") == 0)
		uc.by_slice = true;
	else {
		gs__api_fail(resp, GS_ERR_INVALID,
		             "by must be team or slice, got '%.20s'", by);
		return;
	}
	if ((team && !gs_name_is_valid(team)) ||
	    (slice && !gs_name_is_valid(slice))) {
		gs__api_fail(resp, GS_ERR_INVALID, "bad team or slice name");
		return;
	}
	err = gs_store_usage(
	    gs_node_store(api->node), uc.since, uc.until, team, slice,
	    req->peer.admin ? -1 : (int64_t)req->peer.uid, usage_row, &uc, &eb);
	if (!err && uc.nomem)
		err = gs_fail(&eb, GS_ERR_NOMEM, "out of memory");
	if (err) {
		free(uc.g);
		gs__api_set_error(resp, err, &eb);
		return;
	}
	o = json_object();
	gs__api_iso_time(uc.since, buf, sizeof(buf));
	json_object_set_new(o, "since", gs__api_jstr(buf));
	gs__api_iso_time(uc.until, buf, sizeof(buf));
	json_object_set_new(o, "until", gs__api_jstr(buf));
	json_object_set_new(o, "by",
	                    gs__api_jstr(uc.by_slice ? "slice" : "team"));
	json_object_set_new(o, "currency", gs__api_jstr(uc.cfg->currency));
	/* What cost prices compute by: GPU seconds (plus memory by GiB
	 * seconds), not SM-seconds, which are reported beside it. */
	json_object_set_new(o, "cost_basis", gs__api_jstr("gpu_seconds"));
	a = json_array();
	for (int i = 0; i < uc.n; i++) {
		json_t *r = json_object();

		json_object_set_new(r, uc.by_slice ? "slice" : "team",
		                    gs__api_jstr(uc.g[i].key));
		if (uc.by_slice)
			json_object_set_new(r, "team",
			                    gs__api_jstr(uc.g[i].team));
		json_object_set_new(r, "gpu_seconds", json_real(uc.g[i].gpu_s));
		json_object_set_new(r, "sm_seconds", json_real(uc.g[i].sm_s));
		json_object_set_new(r, "gib_seconds", json_real(uc.g[i].gib_s));
		json_object_set_new(r, "throttled_seconds",
		                    json_real(uc.g[i].thr_s));
		json_object_set_new(r, "reserved_gpu_seconds",
		                    json_real(uc.g[i].alloc_s));
		json_object_set_new(r, "parked_seconds",
		                    json_real(uc.g[i].parked_s));
		json_object_set_new(r, "cost", json_real(uc.g[i].cost));
		json_array_append_new(a, r);
		t_gpu += uc.g[i].gpu_s;
		t_gib += uc.g[i].gib_s;
		t_thr += uc.g[i].thr_s;
		t_alloc += uc.g[i].alloc_s;
		t_parked += uc.g[i].parked_s;
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
	json_object_set_new(tot, "parked_seconds", json_real(t_parked));
	json_object_set_new(tot, "cost", json_real(t_cost));
	json_object_set_new(o, "total", tot);
	json_object_set_new(o, "unpriced_rows", json_integer(uc.unpriced));
	json_object_set_new(o, "sm_unknown_rows", json_integer(uc.sm_unknown));
	gs__api_set_json(resp, 200, o);
}
