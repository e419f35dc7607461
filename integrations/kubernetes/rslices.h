/*
 * rslices.h - the ResourceSlice publisher: a thread that polls gpusliced
 * (GET /v1/gpus on its Unix socket) and keeps this node's ResourceSlices
 * (resource.k8s.io/v1, built by devmodel.h) on the API server exactly
 * equal to what the daemon reports: creates the missing ones, updates the
 * changed ones (bumping the pool generation), deletes stale ones of this
 * node and driver. Survives the API server or the daemon going away: it
 * retries with backoff and re-lists the server's slices before writing, so
 * nothing is lost or duplicated.
 *
 * Threads: gs_krs_kick may be called from any thread; create/destroy from
 * the owner's thread only.
 * Ownership: `kube` is borrowed and must outlive the publisher; strings in
 * the config are copied.
 */
#ifndef GS_KUBE_RSLICES_H
#define GS_KUBE_RSLICES_H

#include <stdbool.h>
#include <stdint.h>

#include "gs/err.h"
#include "kube.h"

struct gs_krs;

struct gs_krs_config {
	const char *node_name;   /* required: pool name and spec.nodeName */
	const char *driver_name; /* NULL: "gpuslice.io" */
	const char
	    *daemon_socket; /* gpusliced API socket; NULL: client default */
	int interval_ms;    /* GPU list poll period; 0: 1000. GPU
	                       health (gpusliced's events) is polled
	                       every 250 ms whatever this is, so a
	                       health change reaches the API server
	                       well within 1 s */
};

/*
 * Starts the publisher thread (it publishes at once, then whenever the
 * GPUs or their health change, and whenever kicked). OUT: *out. On error
 * nothing is left.
 */
gs_err gs_krs_create(struct gs_kube *kube, const struct gs_krs_config *cfg,
                     struct gs_krs **out, struct gs_errbuf *eb);
/* Any thread: re-list the API server's slices and publish now. */
void gs_krs_kick(struct gs_krs *r);
/* Stops the thread (within about 200 ms) and frees. NULL is a no-op. */
void gs_krs_destroy(struct gs_krs *r);

/* Counters for tests and logs (any thread). */
struct gs_krs_stats {
	uint64_t publishes; /* rounds that left the server exactly right */
	uint64_t writes;    /* POST/PUT/DELETE that succeeded */
	uint64_t failures;  /* rounds that failed (daemon or API server) */
	int64_t generation; /* pool generation last written */
};
void gs_krs_get_stats(struct gs_krs *r, struct gs_krs_stats *out);

#endif
