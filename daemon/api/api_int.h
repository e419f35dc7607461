/*
 * api_int.h - what the API's files share (daemon/api/): the JSON module
 * (json.c) that renders every reply, query arguments (query.c), and each
 * resource's handlers, which api.c's router calls.
 */
#ifndef GS_DAEMON_API_INT_H
#define GS_DAEMON_API_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "api.h"

/* ---- json.c ---- */

/*
 * A JSON string for text that may come from a client or the system: valid
 * UTF-8 as it is, anything else with its odd bytes replaced by '?', so a
 * reply never loses a field to bad input.
 */
json_t *gs__api_jstr(const char *s);
/* Serialises `obj` (consumed) as the reply with `status`. */
void gs__api_set_json(struct gs_http_resp *resp, int status, json_t *obj);
/* The error reply {"error","message"} for `err`, the message from `eb`. */
void gs__api_set_error(struct gs_http_resp *resp, gs_err err,
                       const struct gs_errbuf *eb);
/* A DELETE's answer: {"deleted": name}, or err's error object. */
void gs__api_set_deleted(struct gs_http_resp *resp, gs_err err,
                         const struct gs_errbuf *eb, const char *name);
/* The error reply for `err` with a message made from `fmt`. */
void gs__api_fail(struct gs_http_resp *resp, gs_err err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* 405, naming `method`. */
void gs__api_method_not_allowed(struct gs_http_resp *resp, const char *method);
/* Parses the body as a JSON object (NULL body = empty object); NULL: the
 * error reply is set. The caller owns the object. */
json_t *gs__api_body_object(const struct gs_http_req *req,
                            struct gs_http_resp *resp);
/* RFC 3339 UTC text for a CLOCK_REALTIME time in ns. */
void gs__api_iso_time(int64_t ns, char *buf, size_t len);
/* Sets key (human text, "8 GiB") and key_bytes (the number) in `o`. */
void gs__api_mem_field(json_t *o, const char *key, uint64_t bytes);
/* A slice's "swap" object: its mode, promised/resident/swapped bytes and
 * swap counts (api/swap.c). Returns a new reference. */
struct gs_slice;
json_t *gs__api_swap_json(const struct gs_slice *s);
/*
 * Slice `s` with its runtime contract `rt` (gs_node_slice_runtime) and,
 * when `with_usage`, its live usage `u` (NULL: not known, an empty
 * object). A new reference.
 */
json_t *gs__api_slice_json(const struct gs_slice *s,
                           const struct gs_node_runtime *rt, bool with_usage,
                           const struct gs_node_usage *u);
json_t *gs__api_qvec_json(const struct gs_qvec *v);
json_t *gs__api_team_json(const struct gs_team *t, const struct gs_qvec *use);

/* ---- query.c ---- */

/* Whether `s` is a decimal integer in lo..hi; OUT: *out. */
bool gs__api_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);

/* ---- the resources' handlers ---- */

void gs__api_slices_list(struct gs_api *api, const struct gs_http_req *req,
                         struct gs_http_resp *resp);
void gs__api_slices_create(struct gs_api *api, const struct gs_http_req *req,
                           struct gs_http_resp *resp);
/* /v1/slices/NAME[/ACTION] (action NULL: none). */
void gs__api_slice_one(struct gs_api *api, const struct gs_http_req *req,
                       struct gs_http_resp *resp, const char *name,
                       const char *action);
void gs__api_teams_list(struct gs_api *api, struct gs_http_resp *resp);
void gs__api_team_one(struct gs_api *api, const struct gs_http_req *req,
                      struct gs_http_resp *resp, const char *name);
void gs__api_gpus_get(struct gs_api *api, const struct gs_http_req *req,
                      struct gs_http_resp *resp);
/* A non-admin viewer sees only the aggregates (no classes). */
void gs__api_demand_get(struct gs_api *api, const struct gs_peer *viewer,
                        struct gs_http_resp *resp);
void gs__api_usage_get(struct gs_api *api, const struct gs_http_req *req,
                       struct gs_http_resp *resp);
void gs__api_events_get(struct gs_api *api, const struct gs_http_req *req,
                        struct gs_http_resp *resp);
void gs__api_plan_post(struct gs_api *api, const struct gs_http_req *req,
                       struct gs_http_resp *resp);

#endif
