/*
 * client.h - gpuslice's client library (client/, static PIC gs_client):
 * gpusliced's API as HTTP/1.1 + JSON on libcurl, over the daemon's Unix
 * socket or over TCP with a bearer token. Every program that talks to
 * gpusliced uses it: the CLI, the Slurm plugin
 * (integrations/slurm/hold.c), the Kubernetes DRA driver
 * (integrations/kubernetes/driver.c, and its ResourceSlice publisher,
 * rslices.c), the kube-scheduler extender, which polls gpusliced on other
 * nodes over TCP (integrations/kubernetes-extender/live.c), and the test
 * load generator (tests/integration/daemon/loadgen.c).
 *
 * The calls block: each sends and waits for the whole answer (up to
 * GS_CLIENT_TIMEOUT_MS without a byte, then GS_ERR_TIMEOUT). No global
 * state of ours (libcurl's global init is done once, on first use, and
 * never undone): the socket is an argument of every call, and NULL means
 * the default, gs_client_default_socket(). Nothing is written to
 * stdout/stderr, so the library can live inside a host process (slurmd).
 *
 * Errors come back as a gs_err with the message in the caller's errbuf
 * (first message wins):
 *   GS_ERR_UNAVAILABLE  the daemon cannot be reached, or hung up (exit 6)
 *   GS_ERR_TIMEOUT      it did not answer in time
 *   GS_ERR_RANGE        a request path over 1 KiB, an answer over 64 MiB
 *                       (GS_CLIENT_MAX_RESPONSE)
 *   GS_ERR_PARSE        not HTTP, or not the JSON the call expects
 *   anything else       the API's own error: its "error" name mapped back
 *                       (gs_client_err_from_name), the daemon's "message"
 *                       in the errbuf, so the CLI's gs_cli_fail() prints it
 *                       and exits with the documented status.
 *
 * Ownership: bodies passed in are borrowed. Every json_t and char * handed
 * out through an OUT parameter is the caller's (json_decref / free); on
 * error it is set to NULL. Connections are the caller's storage
 * (init/fini style: gs_client_connect / gs_client_close).
 */
#ifndef GS_CLIENT_H
#define GS_CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "gs/err.h"

/*
 * The socket gpusliced listens on by default, in order: $GPUSLICE_SOCKET,
 * then /run/gpuslice/api.sock for root (or when it exists, or without
 * $XDG_RUNTIME_DIR), else $XDG_RUNTIME_DIR/gpuslice/api.sock. Lent: static
 * storage, valid until the next call.
 */
const char *gs_client_default_socket(void);

/* ---- one connection, several requests (keep-alive) ---- */

#define GS_CLIENT_TIMEOUT_MS   60000       /* longest wait for a byte */
#define GS_CLIENT_MAX_RESPONSE (64u << 20) /* largest answer body */

/*
 * gs_client_connect() sets timeout_ms and max_response to the defaults
 * above; a caller may lower them before its requests (the DRA driver's
 * ResourceSlice publisher waits 5 s, not 60). timeout_ms is kept to whole
 * seconds (rounded up), libcurl's low-speed limit. The rest is the
 * library's.
 */
struct gs_client_conn {
	int timeout_ms;
	size_t max_response;
	void *curl;      /* the libcurl easy handle: its connection is kept
	                    between requests */
	void *headers;   /* struct curl_slist: the headers every request
	                    carries */
	char path[108];  /* the Unix socket; "" over TCP */
	char where[300]; /* the socket or the URL, for messages */
	char base[256];  /* the URL requests' paths are appended to */
	char *buf;       /* the answer being read */
	size_t len, cap;
	int too_big;
};

/*
 * Connects to `sock` (NULL: the default): GS_ERR_UNAVAILABLE when nobody
 * listens there. The connection is kept for the requests that follow
 * (keep-alive) and made again when the daemon closed it. On error *c
 * holds nothing to free, and gs_client_close(c) is still safe.
 */
gs_err gs_client_connect(struct gs_client_conn *c, const char *sock,
                         struct gs_errbuf *eb);
/*
 * The same over TCP: `url` is "http://host:port" or "https://..." (a
 * trailing '/' is dropped), and every request carries
 * "Authorization: Bearer <token>" when `token` is not NULL.
 */
gs_err gs_client_connect_url(struct gs_client_conn *c, const char *url,
                             const char *token, struct gs_errbuf *eb);
/* Closes and frees what the connection holds; safe twice. */
void gs_client_close(struct gs_client_conn *c);

/*
 * One request on an open connection. `body` may be NULL. OUT: *status and
 * *resp (malloc'd, NUL-terminated; the caller frees), *resp_len. After an
 * error the next request connects again.
 */
gs_err gs_client_roundtrip(struct gs_client_conn *c, const char *method,
                           const char *path, const char *body, size_t body_len,
                           int *status, char **resp, size_t *resp_len,
                           struct gs_errbuf *eb);

/* ---- one request on a fresh connection ---- */

/*
 * A JSON call: sends `body` (may be NULL) and, for a 2xx answer, returns
 * the parsed JSON in *out (`out` may be NULL when the caller does not want
 * it). A non-2xx answer becomes the error it names, with the daemon's
 * message.
 */
gs_err gs_client_call(const char *sock, const char *method, const char *path,
                      const json_t *body, json_t **out, struct gs_errbuf *eb);
/* The same for a text answer (/metrics). OUT: *text (malloc'd). */
gs_err gs_client_get_text(const char *sock, const char *path, char **text,
                          struct gs_errbuf *eb);
/*
 * The request without judging the answer, for callers that word API
 * errors their own way: only a failure to talk is an error. OUT: *status,
 * and *answer, the body as JSON or NULL when it is empty or not JSON.
 * gs_client_answer_err() and gs_client_answer_message() read an error
 * answer.
 */
gs_err gs_client_exchange(const char *sock, const char *method,
                          const char *path, const json_t *body, int *status,
                          json_t **answer, struct gs_errbuf *eb);

/*
 * The gs_err a non-2xx answer stands for: its "error" name, else from the
 * status (404 not found, 401/403 permission, 5xx internal, else invalid).
 */
gs_err gs_client_answer_err(int status, const json_t *answer);
/* Its "message", or NULL. Lent from `answer`. */
const char *gs_client_answer_message(const json_t *answer);
/* The gs_err an API error name stands for ("NO_FIT" -> GS_ERR_NO_FIT);
 * GS_ERR_INTERNAL for a name it does not know. */
gs_err gs_client_err_from_name(const char *name);
/* Appends `s` to the string in `out` (`len` bytes in all), percent-encoded
 * for a path segment or query value; stops short rather than overflow. */
void gs_client_urlencode(const char *s, char *out, size_t len);

/* ---- slices ---- */

/*
 * GET /v1/slices/NAME. OUT: *slice, the daemon's JSON for it:
 *   name, team, mode, memory_bytes, compute, priority, weight, state,
 *   gpu {index, uuid}, mig {profile, uuid, gi, ci} or null,
 *   region {dir, slot, generation},
 *   env {GPUSLICE_SLICE, GPUSLICE_RUN_DIR, CUDA_VISIBLE_DEVICES or the
 *        CUDA_MPS_* variables}: what a process joining the slice needs,
 *   usage {...}.
 * GS_ERR_NOT_FOUND when it does not exist or belongs to another user.
 */
gs_err gs_client_slice_get(const char *sock, const char *name, json_t **slice,
                           struct gs_errbuf *eb);
/*
 * POST /v1/slices/NAME/attach: records process `pid` (0: the caller) as a
 * member of the slice, for the watchdog and on_exit=delete. Call it from
 * the process that will exec the workload (the daemon checks who asks
 * through SO_PEERCRED). OUT: *slice as above (`slice` may be NULL).
 */
gs_err gs_client_slice_attach(const char *sock, const char *name, int32_t pid,
                              json_t **slice, struct gs_errbuf *eb);
/* POST /v1/slices with a spec object (spec.h keys + team, on_exit). */
gs_err gs_client_slice_create(const char *sock, const json_t *spec,
                              json_t **slice, struct gs_errbuf *eb);
/* DELETE /v1/slices/NAME. */
gs_err gs_client_slice_delete(const char *sock, const char *name,
                              struct gs_errbuf *eb);

/* ---- reading answers ---- */

/* o[key] as a string, "" when absent or not a string. Lent from `o`. */
const char *gs_client_str(const json_t *o, const char *key);
/* o[key] as an integer (reals truncated), 0 when absent. */
long long gs_client_int(const json_t *o, const char *key);
/* o[key] as a number, 0 when absent. */
double gs_client_num(const json_t *o, const char *key);

#endif
