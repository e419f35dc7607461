/*
 * driver.h - the contract between the kubelet-facing side of
 * gpuslice-kubelet-plugin (plugin.c: gRPC transport, registration, the
 * DRA node service and health stream) and the DRA driver behind it
 * (driver.c, prepare.c, ...: the API server, gpusliced, CDI, checkpoint).
 *
 * The transport never looks inside a claim; the driver never sees gRPC.
 * A test build links the transport against a fake driver
 * (tests/integration/k8s_transport/fake_driver.c) to test the protocol alone.
 *
 * Threads: every function here is thread-safe. gs_kdra_prepare and
 * gs_kdra_unprepare may block (API server, gpusliced), each bounded by the
 * driver's own deadlines (well under the kubelet's ~45 s call timeout), so
 * the transport calls them from worker threads, never from its event loop.
 *
 * Ownership: strings in results are malloc'd and owned by the result;
 * release a result with its _fini. Claim references are borrowed.
 */
#ifndef GS_KUBE_DRIVER_H
#define GS_KUBE_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "gs/err.h"

#define GS_KDRA_DRIVER_NAME "gpuslice.io"

struct gs_kdra; /* the driver; opaque */

struct gs_kdra_config {
	const char *node_name;     /* required: this node (spec.nodeName) */
	const char *driver_name;   /* NULL: GS_KDRA_DRIVER_NAME */
	const char *state_dir;     /* checkpoint; NULL: /var/lib/kubelet/plugins/<driver> */
	const char *cdi_dir;       /* NULL: /var/run/cdi */
	const char *daemon_socket; /* gpusliced API socket; NULL: client default */
	const char *kubeconfig;    /* NULL: in-cluster service account */
	const char *api_server;    /* NULL: from kubeconfig / in-cluster env */
	const char *shim_path;     /* libgpuslice.so to preload; NULL: installed path */
	/* gpuslice-cdi-hook as the container runtime sees it (a host
	 * path), added to every CDI spec as a createContainer hook that
	 * refuses a container whose libc cannot load the shim; NULL: the
	 * one next to this program when it is there; "none": no hook. */
	const char *cdi_hook;
	int publish_interval_ms;   /* gpusliced poll period for ResourceSlices; 0: 1000 */
	int publish;               /* 0: do not publish ResourceSlices (tests) */
	int partitions;            /* partition devices per GPU where the API
	                              server has no consumable capacity
	                              (1..32); 0: 4 */
	const char *metrics_file;  /* the publisher's Prometheus text file;
	                              NULL: <state_dir>/metrics.prom */
	const char *driver_dirs;   /* ':' list of directories holding the
	                              NVIDIA driver's libraries and binaries
	                              for CDI specs; NULL: the ldconfig cache
	                              and the usual bin dirs (driverfiles.h) */
	const char *driver_root;   /* where the host's / is mounted when the
	                              plugin runs in a container; NULL: / */
};

/*
 * Creates the driver: validates the configuration, opens the API client
 * and loads the checkpoint. Does not start background work. OUT: *out.
 * On error nothing is left behind and eb says why.
 */
gs_err gs_kdra_create(const struct gs_kdra_config *cfg, struct gs_kdra **out,
                      struct gs_errbuf *eb);
/* Starts the ResourceSlice publisher thread (if cfg->publish). */
gs_err gs_kdra_start(struct gs_kdra *d, struct gs_errbuf *eb);
/* Asks the publisher to re-publish now (after the kubelet (re)registered
 * the plugin: the kubelet may have wiped this node's ResourceSlices). */
void gs_kdra_republish(struct gs_kdra *d);
/* Stops background work and frees everything. NULL is a no-op. */
void gs_kdra_destroy(struct gs_kdra *d);

/* A claim as the kubelet names it (NodePrepareResources' Claim). */
struct gs_kdra_claim_ref {
	const char *ns;
	const char *uid;
	const char *name;
};

/* One device the runtime must expose (DRA Device message). */
struct gs_kdra_device {
	char **request_names; /* empty: all requests of the claim */
	size_t n_request_names;
	char *pool_name;
	char *device_name;
	char **cdi_device_ids; /* "gpuslice.io/slice=<name>" */
	size_t n_cdi_device_ids;
	char *share_id; /* NULL: none (only sent on the v1 API) */
};

struct gs_kdra_prepared {
	struct gs_kdra_device *devices;
	size_t n_devices;
	char *error; /* NULL: prepared; else why not (devices then empty) */
};

/*
 * Prepares one claim: idempotent (a retried or repeated call returns the
 * same devices and creates nothing new). Never fails silently: a failure
 * is out->error with a message that names the field or the cause, and
 * leaves nothing half-created. OUT: *out (release with _fini).
 */
void gs_kdra_prepare(struct gs_kdra *d, const struct gs_kdra_claim_ref *claim,
                     struct gs_kdra_prepared *out);
void gs_kdra_prepared_fini(struct gs_kdra_prepared *p);

/*
 * Unprepares one claim: deletes its slice and CDI spec. Unpreparing a claim
 * that is not prepared succeeds. Returns NULL on success, else a malloc'd
 * message (the caller frees).
 */
char *gs_kdra_unprepare(struct gs_kdra *d,
                        const struct gs_kdra_claim_ref *claim);

/* ---- device health (DRAResourceHealth NodeWatchResources) ---- */

enum gs_kdra_health_status {
	GS_KDRA_HEALTH_UNKNOWN = 0,
	GS_KDRA_HEALTH_HEALTHY = 1,
	GS_KDRA_HEALTH_UNHEALTHY = 2,
};

struct gs_kdra_health {
	char *pool_name;
	char *device_name;
	enum gs_kdra_health_status status;
	int64_t updated_unix; /* when the driver determined it */
	char *message;        /* NULL or <= 1024 bytes */
};

/*
 * The complete current list, and a version that changes whenever the list
 * does. OUT: *list (array, release with gs_kdra_health_free), *n, *version.
 */
gs_err gs_kdra_health_snapshot(struct gs_kdra *d, struct gs_kdra_health **list,
                               size_t *n, uint64_t *version,
                               struct gs_errbuf *eb);
void gs_kdra_health_free(struct gs_kdra_health *list, size_t n);
/*
 * Registers `fn(arg)`, called from the driver's thread after the health
 * list changed (the transport then wakes its loop and sends a new list).
 * One listener; NULL clears it.
 */
void gs_kdra_set_health_listener(struct gs_kdra *d, void (*fn)(void *arg),
                                 void *arg);

#endif
