/*
 * api.h - the HTTP/JSON API, version 1 (docs/api.md is the contract; the
 * routes are listed at the top of api/api.c). The handler is
 * transport-free: it takes a parsed request and fills a response, so the
 * libFuzzer target drives it directly.
 *
 * Every error is a 4xx or 5xx with the body
 *   {"error": "<GS_ERR name>", "message": "<one line>"}
 * and the error name is what the CLI turns back into an exit status.
 */
#ifndef GS_DAEMON_API_H
#define GS_DAEMON_API_H

#include "http.h"
#include "node.h"

struct gs_api {
	struct gs_node *node;
	/* Optional extras the daemon wires in (NULL in tests). */
	/* The /metrics page as `viewer` may see it. */
	void (*metrics)(void *ctx, const struct gs_peer *viewer, char **body,
	                size_t *len);
	void *metrics_ctx;
	/* Extra fields for GET /v1/gpus: MPS state per GPU. */
	void (*gpu_extra)(void *ctx, int gpu, void *json_obj);
	void *gpu_extra_ctx;
};

/* Handles one request (gs_http_handler shape: ctx is a struct gs_api). */
void gs_api_handle(void *ctx, const struct gs_http_req *req,
                   struct gs_http_resp *resp);

/* HTTP status for an error code. */
int gs_api_status(gs_err err);

/*
 * Parses a time for ?since= / ?until=: a duration back from `now_ns`
 * ("24h", "30m", "7d", "90s"), Unix seconds, or RFC 3339 UTC
 * ("2024-05-01T00:00:00Z"). OUT: *out_ns.
 */
gs_err gs_api_parse_time(const char *text, int64_t now_ns, int64_t *out_ns);

#endif
