/*
 * client.h - the CLI's client for gpusliced's API: HTTP/1.1 + JSON over the
 * daemon's Unix socket, small on purpose (no libcurl).
 *
 * The socket is, in order: the global `gpuslice --socket S` option
 * (gs_client_socket_opt, set by main.c), $GPUSLICE_SOCKET, then
 * /run/gpuslice/api.sock for root (or when it exists), else
 * $XDG_RUNTIME_DIR/gpuslice/api.sock.
 *
 * Errors: a daemon that cannot be reached is GS_ERR_UNAVAILABLE (exit 6);
 * an API error comes back as the gs_err its "error" name says, with the
 * daemon's message in the errbuf, so `gs_cli_fail(cmd, err, &eb)` prints
 * it and returns the documented exit status.
 *
 * Ownership: every json_t returned through OUT parameters is the caller's
 * (json_decref); bodies passed in are borrowed.
 */
#ifndef GS_CLI_CLIENT_H
#define GS_CLI_CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "gs/err.h"

/* Set by main.c from `gpuslice --socket S <command>`; NULL when not given. */
extern const char *gs_client_socket_opt;

/* The socket path the client will use (see above). Lent, static. */
const char *gs_client_socket(void);

/* A connection that may carry several requests (keep-alive). */
struct gs_client_conn {
	int fd;
	char path[108];
	char *buf; /* read buffer (bytes past the last response) */
	size_t len, cap;
};

/* Connects to `socket_path` (NULL: gs_client_socket()). */
gs_err gs_client_connect(struct gs_client_conn *c, const char *socket_path,
                         struct gs_errbuf *eb);
void gs_client_close(struct gs_client_conn *c);

/*
 * One request on an open connection. `body` may be NULL. OUT: *status and
 * *resp (malloc'd, NUL-terminated; the caller frees), *resp_len.
 */
gs_err gs_client_roundtrip(struct gs_client_conn *c, const char *method,
                           const char *path, const char *body, size_t body_len,
                           int *status, char **resp, size_t *resp_len,
                           struct gs_errbuf *eb);

/*
 * A JSON call on a fresh connection: sends `body` (may be NULL), and for a
 * 2xx answer returns the parsed JSON in *out (may be NULL when the caller
 * does not want it). Non-2xx answers become the error they name.
 */
gs_err gs_client_call(const char *method, const char *path, json_t *body,
                      json_t **out, struct gs_errbuf *eb);
/* The same for a text answer (/metrics). OUT: *text (malloc'd). */
gs_err gs_client_get_text(const char *path, char **text, struct gs_errbuf *eb);

/* The gs_err an API error name stands for ("NO_FIT" -> GS_ERR_NO_FIT). */
gs_err gs_client_err_from_name(const char *name);
/* Appends `s` to `out` percent-encoded for a query value. */
void gs_client_urlencode(const char *s, char *out, size_t len);

/* ---- slices (for `gpuslice run --slice` and the commands here) ---- */

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
gs_err gs_client_slice_get(const char *name, json_t **slice,
                           struct gs_errbuf *eb);
/*
 * POST /v1/slices/NAME/attach: records process `pid` (0: the caller) as a
 * member of the slice, for the watchdog and on_exit=delete. Call it from
 * the process that will exec the workload (the daemon checks who asks
 * through SO_PEERCRED). OUT: *slice as above (may be NULL).
 */
gs_err gs_client_slice_attach(const char *name, int32_t pid, json_t **slice,
                              struct gs_errbuf *eb);
/* POST /v1/slices with a spec object (spec.h keys + team, on_exit). */
gs_err gs_client_slice_create(json_t *spec, json_t **slice,
                              struct gs_errbuf *eb);
/* DELETE /v1/slices/NAME. */
gs_err gs_client_slice_delete(const char *name, struct gs_errbuf *eb);

/* ---- small helpers for the commands' views ---- */

/* o[key] as a string, "" when absent or not a string. */
const char *gs_client_str(const json_t *o, const char *key);
/* o[key] as an integer (reals truncated), 0 when absent. */
long long gs_client_int(const json_t *o, const char *key);
/* o[key] as a number, 0 when absent. */
double gs_client_num(const json_t *o, const char *key);
/* "512MiB", "4.0GiB", "80GiB": short, for tables. */
void gs_client_fmt_bytes(unsigned long long bytes, char *buf, size_t len);
/* Prints `j` on stdout, indented, with a newline. */
void gs_client_print_json(const json_t *j);

#endif
