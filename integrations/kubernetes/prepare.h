/*
 * prepare.h - the pure half of NodePrepareResources: from a ResourceClaim
 * (the API server's JSON), gpusliced's GET /v1/gpus answer and the node's
 * identity to the slice to create and the devices to report. No I/O, so
 * every rule (UID, node, driver, device, capacity, opaque config) is
 * unit-tested from fixtures; driver.c does the effects (gpusliced, CDI
 * file, checkpoint).
 *
 * A claim gets one slice, named from its UID (GS_KPREP_SLICE_PREFIX +
 * uid), so a retried or restarted prepare finds the slice it made before.
 * One gpuslice.io device per claim: a slice lives on one GPU.
 *
 * Ownership: a struct gs_kprep_plan owns its JSON and strings; release it
 * with gs_kprep_plan_fini.
 */
#ifndef GS_KUBE_PREPARE_H
#define GS_KUBE_PREPARE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "gs/err.h"
#include "gs/spec.h"
#include "sliceconfig.h"

#define GS_KPREP_SLICE_PREFIX "k8s-"

struct gs_kprep_result {
	char *request; /* the allocation result's request (may be a/b) */
	char *pool;
	char *device;
	char *share_id; /* NULL: none */
};

struct gs_kprep_plan {
	char slice_name[GS_SPEC_NAME_MAX];
	struct gs_slice_spec spec;  /* validated */
	struct gs_kslicecfg config; /* merged SliceConfig */
	json_t *body;               /* POST /v1/slices body (owned) */
	bool mig;
	int gpu_index;
	char mig_profile[GS_SPEC_PROFILE_MAX];
	int mig_start;
	struct gs_kprep_result *results; /* ours, in allocation order */
	size_t n_results;
};

/* Writes the slice name for a claim UID; GS_ERR_INVALID for a bad UID. */
gs_err gs_kprep_slice_name(const char *uid, char *buf, size_t len,
                           struct gs_errbuf *eb);

/*
 * Plans the claim. `uid` is what the kubelet asked for; `node` and
 * `driver` are this plugin's. OUT: *plan (fini it, also on error: it is
 * then empty). Errors name the field or cause: GS_ERR_INVALID (wrong UID,
 * not allocated, other node, bad config), GS_ERR_NOT_FOUND (unknown
 * device), GS_ERR_RANGE (capacity beyond the device), GS_ERR_UNSUPPORTED.
 */
gs_err gs_kprep_plan(const json_t *claim, const json_t *gpus, const char *uid,
                     const char *node, const char *driver,
                     struct gs_kprep_plan *plan, struct gs_errbuf *eb);
void gs_kprep_plan_fini(struct gs_kprep_plan *plan);

/*
 * The claim's consumers file (gs/podcgroup.h): the UIDs of the pods its
 * status.reservedFor names, each once, for the watchdog to place their
 * processes in the claim's slice whenever they joined it. OUT: *text (the
 * caller frees) and *len. GS_ERR_INVALID for a pod UID a file cannot hold,
 * GS_ERR_RANGE past GS_K8S_PODS_MAX pods (both named in the errbuf).
 */
gs_err gs_kprep_consumers(const json_t *claim, char **text, size_t *len,
                          struct gs_errbuf *eb);

#endif
