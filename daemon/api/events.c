/*
 * events.c - /v1/events: the event log, after an id or since a time,
 * filtered to what the caller may see.
 */
#include "api_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API_EVENTS_MAX 10000

static void event_row(void *ctx, const struct gs_event *e)
{
	json_t *a = ctx, *o = json_object();
	char buf[40];

	json_object_set_new(o, "id", json_integer(e->id));
	gs__api_iso_time(e->ts_ns, buf, sizeof(buf));
	json_object_set_new(o, "time", gs__api_jstr(buf));
	json_object_set_new(o, "ts_ns", json_integer(e->ts_ns));
	json_object_set_new(o, "type", gs__api_jstr(e->type));
	json_object_set_new(o, "slice", gs__api_jstr(e->slice));
	json_object_set_new(o, "team", gs__api_jstr(e->team));
	json_object_set_new(o, "gpu", json_integer(e->gpu));
	json_object_set_new(o, "message", gs__api_jstr(e->message));
	json_array_append_new(a, o);
}

void gs__api_events_get(struct gs_api *api, const struct gs_http_req *req,
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
		gs__api_fail(resp, GS_ERR_PARSE, "since: '%.40s' is not a time",
		             since);
		return;
	}
	if (after && !gs__api_parse_i64(after, 0, INT64_MAX, &after_id)) {
		gs__api_fail(resp, GS_ERR_PARSE,
		             "after: '%.40s' is not an event id", after);
		return;
	}
	if (limit && !gs__api_parse_i64(limit, 1, API_EVENTS_MAX, &lim)) {
		gs__api_fail(resp, GS_ERR_RANGE,
		             "limit must be 1..10000, got '%.20s'", limit);
		return;
	}
	if (slice && !gs_name_is_valid(slice)) {
		gs__api_fail(resp, GS_ERR_INVALID, "bad slice name '%.64s'",
		             slice);
		return;
	}
	a = json_array();
	err =
	    gs_store_events(gs_node_store(api->node), after_id, since_ns, slice,
	                    req->peer.admin ? -1 : (int64_t)req->peer.uid,
	                    (int)lim, event_row, a, &eb);
	if (err) {
		json_decref(a);
		gs__api_set_error(resp, err, &eb);
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
	gs__api_set_json(resp, 200, o);
}
