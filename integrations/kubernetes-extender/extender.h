/*
 * extender.h - kube-scheduler extender logic for gpuslice (HTTP-free, so
 * tests call it directly): answers the `filter` and `prioritize` verbs for
 * an ExtenderArgs body by scoring each node with gpuslice's placement
 * scorer (gs_trace_scorer_*, the function the trace replay measures).
 *
 * Node GPU state comes from a JSON document in the shape gpusliced's
 * state export uses (docs/placement.md, "Scheduler extender"):
 *   {"nodes":[{"name":"n1","cpu_free_milli":32000,
 *              "gpus":[{"model":"A100","memory_total_bytes":N,
 *                       "memory_free_bytes":N,"compute_free_pct":P}]}],
 *    "demand":[{"cpu_milli":C,"gpu_milli":G,"num_gpu":K,"count":N}]}
 * "demand" (optional) is the task mix seen; without it the pod being
 * scheduled stands for the demand. An entry carries "count" (tasks) or
 * "weight" (a decayed count, as gpusliced's GET /v1/demand gives); one
 * with "gpu_milli": null (a MIG shape) is skipped. A node may carry
 * "unreachable": "why" instead of its GPUs (the live source, live.h, could
 * not read it): filter fails it with that reason, prioritize scores it 0;
 * it is never scored as an empty node.
 */
#ifndef GS_K8S_EXTENDER_H
#define GS_K8S_EXTENDER_H

#include <jansson.h>
#include <stddef.h>

#include "gs/err.h"

struct gs_ext_state;

/* Parses a state document; *out owned by the caller (gs_ext_state_free).
 * GS_ERR_PARSE with a message naming the bad field on bad input. */
gs_err gs_ext_state_parse(const char *text, size_t len,
                          struct gs_ext_state **out, struct gs_errbuf *eb);
void gs_ext_state_free(struct gs_ext_state *st);

/*
 * Answers verb "filter" (ExtenderFilterResult) or "prioritize"
 * (HostPriorityList, scores 0..10) for the ExtenderArgs in `body`.
 * Returns a malloc'd JSON string (the caller frees it) and sets *status to
 * the HTTP status: 200, or 400 with {"Error": "..."} for a bad body, 404
 * for an unknown verb. NULL only when memory runs out.
 */
char *gs_ext_handle(const struct gs_ext_state *st, const char *verb,
                    const char *body, size_t len, int *status);

/*
 * A pod's DRA claim or claim template: `kind` "claim" (a ResourceClaim)
 * or "template" (a ResourceClaimTemplate), in namespace `ns`. Returns the
 * object as the API server has it (a new reference, the caller's), or
 * NULL when it cannot be read.
 */
typedef json_t *(*gs_ext_claim_fn)(void *ctx, const char *kind,
                                   const char *ns, const char *name);

/*
 * gs_ext_handle, also counting the GPUs the pod gets through DRA claims of
 * gpuslice's device classes (its spec.resourceClaims, read through
 * `lookup`) as it counts gpu-milli requests: a claim's compute and memory
 * capacity requests are a share of one GPU (the larger of the two, memory
 * against the node's GPU), a partition 1/4 of one, a claim without
 * capacity requests whole GPUs; MIG claims are not counted. A claim that
 * cannot be read answers 503 with the reason (the scheduler retries).
 * `lookup` NULL: claims are not counted (gs_ext_handle).
 */
char *gs_ext_handle_dra(const struct gs_ext_state *st, gs_ext_claim_fn lookup,
                        void *ctx, const char *verb, const char *body,
                        size_t len, int *status);

#endif
