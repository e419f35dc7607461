/*
 * rslices.h - the ResourceSlice publisher: a thread that polls gpusliced
 * (GET /v1/gpus on its Unix socket) and keeps this node's ResourceSlices
 * (resource.k8s.io/v1, built by devmodel.h) on the API server equal in
 * meaning (slicecmp.h) to what the daemon reports, in the layout the
 * server accepts (kprobe.h): creates the missing ones, updates the
 * changed ones (bumping the pool generation), deletes stale ones of this
 * node and driver. Writes are held to a budget per pool. Survives the API server or the daemon going away: it
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
	int partitions;     /* K partitions per GPU where the server has no
	                       consumable capacity; 0: 4 */
	int write_budget;   /* writes per minute to the pool at most;
	                       0: 30, or 3 per slice when more */
	int resync_ms;      /* full re-list (and server probe) period;
	                       0: 30000 */
	const char *metrics_file; /* Prometheus text file rewritten after
	                             each round that changed a figure (the
	                             node exporter's textfile collector reads
	                             it); NULL: none */
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
	uint64_t deferred;  /* rounds that stopped at the write budget */
	uint64_t probes;    /* server probes that answered */
	int server_minor;   /* 1.<minor> of the API server; 0: unknown */
	char layout[64];    /* gs_kdev_layout_name of what is published */
};
void gs_krs_get_stats(struct gs_krs *r, struct gs_krs_stats *out);

#endif
