/*
 * devmodel.h - what this node offers Kubernetes, computed from gpusliced's
 * GET /v1/gpus answer: the devices of the node's ResourceSlices and how a
 * device name maps back to a GPU (and a MIG placement). Pure: no I/O, so
 * the publisher (rslices.c) and prepare (prepare.c) agree by construction
 * and both are unit-tested without a cluster.
 *
 * Device names (DNS labels, stable across restarts):
 *   gpu-<index>                              a whole GPU, shareable:
 *                                            consumable capacity `memory`
 *                                            (bytes) and `compute` (percent)
 *   gpu-<index>-mig-<profile>-<start>        a MIG instance (existing or
 *                                            not yet created) of <profile>
 *                                            with '.' written '-'
 *                                            (1g.10gb -> 1g-10gb) at memory
 *                                            slice <start>; consumes the
 *                                            GPU's shared counters
 * Pool name: the node name. Counter set per MIG-capable GPU: gpu-<index>.
 *
 * Ownership: every pointer in a struct gs_kdev_* is owned by it; free with
 * the matching _fini / _free.
 */
#ifndef GS_KUBE_DEVMODEL_H
#define GS_KUBE_DEVMODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "gs/err.h"

enum gs_kdev_kind { GS_KDEV_GPU, GS_KDEV_MIG };

/* A device name taken apart (no lookup). */
struct gs_kdev_name {
	enum gs_kdev_kind kind;
	int gpu_index;
	char profile[32]; /* MIG only: "1g.10gb" (dots restored) */
	int start;        /* MIG only: memory-slice placement start */
};

/* Parses a device name; GS_ERR_PARSE when it is not one of ours. */
gs_err gs_kdev_parse_name(const char *name, struct gs_kdev_name *out,
                          struct gs_errbuf *eb);
/* Writes the name of a device. */
void gs_kdev_format_name(const struct gs_kdev_name *n, char *buf, size_t len);

/*
 * The node's ResourceSlice objects (resource.k8s.io/v1), complete with
 * metadata.name/generateName-free stable names
 * "<node>-gpuslice.io-<k>", spec.driver, spec.nodeName, spec.pool
 * {name, generation, resourceSliceCount}: slices with the shareable
 * GPUs (and MIG devices, with perDeviceNodeSelection off and nodeName set),
 * counter sets in a slice of their own. (Devices are cut into slices of at
 * most 64, the API's cap when devices consume counters or carry taints,
 * counter sets into slices of at most 8: k counts device slices first.) `gpus` is gpusliced's /v1/gpus
 * answer; `health` may be NULL or an object uuid -> {"healthy": bool,
 * "reason": str} used for device taints. `generation` is the pool
 * generation to write. OUT: *slices, a JSON array (caller decrefs).
 */
gs_err gs_kdev_build_slices(const json_t *gpus, const json_t *health,
                            const char *node, const char *driver,
                            int64_t generation, json_t **slices,
                            struct gs_errbuf *eb);

/*
 * Looks a device name up in a /v1/gpus answer. OUT: *gpu (borrowed from
 * `gpus`: the GPU object). GS_ERR_NOT_FOUND when the GPU is absent, or the
 * MIG placement is not one the model allows.
 */
gs_err gs_kdev_lookup(const json_t *gpus, const struct gs_kdev_name *n,
                      const json_t **gpu, struct gs_errbuf *eb);

#endif
