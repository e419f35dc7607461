/*
 * kube.h - a small Kubernetes API server client: HTTPS (libcurl) + JSON
 * (jansson). Credentials come from a kubeconfig file, or in-cluster from
 * the service account (token, CA, KUBERNETES_SERVICE_HOST/PORT); tests
 * point it at a stand-in on loopback with `server` = http://127.0.0.1:P.
 *
 * Every request has a deadline (cfg.timeout_ms); transient failures
 * (connection refused, 429, 5xx) are retried with backoff inside that
 * deadline. A watch is a long request whose events arrive through a
 * callback; it ends on a server close, an error or when the callback asks.
 *
 * Threads: one struct gs_kube may be used from several threads at once.
 * Ownership: json_t results are the caller's (json_decref); bodies and
 * strings passed in are borrowed.
 */
#ifndef GS_KUBE_KUBE_H
#define GS_KUBE_KUBE_H

#include <jansson.h>
#include <stdbool.h>

#include "gs/err.h"

struct gs_kube;

struct gs_kube_config {
	const char *kubeconfig; /* path; NULL: in-cluster */
	const char *server;     /* overrides the kubeconfig's / in-cluster URL */
	const char *token_file; /* NULL: kubeconfig / service account token */
	const char *ca_file;    /* NULL: kubeconfig / service account CA */
	long timeout_ms;        /* per request, retries included; 0: 10000 */
	/* Additions (kapi): */
	const char *sa_dir;     /* in-cluster service account directory
	                           (token, ca.crt, namespace); NULL:
	                           /var/run/secrets/kubernetes.io/serviceaccount */
};

gs_err gs_kube_create(const struct gs_kube_config *cfg, struct gs_kube **out,
                      struct gs_errbuf *eb);
void gs_kube_destroy(struct gs_kube *k);

/*
 * One request. `path` is absolute ("/apis/resource.k8s.io/v1/..."), with
 * its query. `body` may be NULL. `content_type` NULL means
 * application/json (use "application/merge-patch+json" for PATCH).
 * OUT: *status (HTTP status; 0 when no answer came), *out (the parsed
 * answer, NULL when the caller does not want it or it was not JSON).
 * Returns GS_OK whenever an HTTP answer came (check *status; a 4xx/5xx
 * answer's Status message goes into eb too); GS_ERR_UNAVAILABLE or
 * GS_ERR_TIMEOUT when none did within the deadline.
 */
gs_err gs_kube_request(struct gs_kube *k, const char *method, const char *path,
                       json_t *body, const char *content_type, long *status,
                       json_t **out, struct gs_errbuf *eb);

/*
 * A watch: GET path with watch=1 (the caller puts resourceVersion and
 * selectors in the query). `on_event(arg, type, object)` gets every
 * event ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"; object
 * borrowed); it returns false to end the watch. Returns when the server
 * ends the stream (GS_OK), on error, or when `*stop` becomes true (polled
 * at least every 200 ms).
 */
typedef bool (*gs_kube_event_fn)(void *arg, const char *type,
                                 json_t *object);
gs_err gs_kube_watch(struct gs_kube *k, const char *path,
                     gs_kube_event_fn on_event, void *arg,
                     const volatile bool *stop, struct gs_errbuf *eb);

/*
 * The gs_err an HTTP status stands for: 2xx GS_OK, 400/422 GS_ERR_INVALID,
 * 401/403 GS_ERR_PERM, 404 GS_ERR_NOT_FOUND, 409 GS_ERR_EXISTS (conflict
 * or already exists), 410 GS_ERR_VERSION (resourceVersion too old: re-list),
 * 429/5xx GS_ERR_UNAVAILABLE, 504 GS_ERR_TIMEOUT, 0 GS_ERR_UNAVAILABLE.
 */
gs_err gs_kube_status_err(long status);

/* The server URL in use (lent; valid until destroy). */
const char *gs_kube_server(const struct gs_kube *k);

#endif
