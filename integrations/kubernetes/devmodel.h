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
 *   gpu-<index>-part-<k>-of-<K>              partition k of K of a GPU (when
 *                                            the server has no consumable
 *                                            capacity): 1/K of its memory and
 *                                            compute, a claim takes `count`
 * Pool name: the node name. Counter set per MIG-capable GPU: gpu-<index>.
 *
 * What is published depends on what the API server accepts (struct
 * gs_kdev_layout, learned by kprobe.h); devmodel.c's header tells which
 * devices each layout holds.
 *
 * Ownership: every pointer in a struct gs_kdev_* is owned by it; free with
 * the matching _fini / _free.
 */
#ifndef GS_KUBE_DEVMODEL_H
#define GS_KUBE_DEVMODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gs/err.h"

enum gs_kdev_kind { GS_KDEV_GPU, GS_KDEV_MIG, GS_KDEV_PART };

/* A device name taken apart (no lookup). */
struct gs_kdev_name {
	enum gs_kdev_kind kind;
	int gpu_index;
	char profile[32]; /* MIG only: "1g.10gb" (dots restored) */
	int start;        /* MIG only: memory-slice placement start;
	                     partition: its number k */
	int parts;        /* partition only: K */
};

/*
 * Which devices and fields the node's slices use: what the API server
 * keeps and validates (kprobe.h learns it). The zero value is not a
 * layout; start from gs_kdev_layout_default.
 */
struct gs_kdev_layout {
	bool consumable;    /* DRAConsumableCapacity: shareable whole GPUs
	                       with memory/compute capacity; off: K
	                       partition devices per GPU */
	bool partitionable; /* DRAPartitionableDevices: MIG placements with
	                       shared counters; off: none */
	bool taints;        /* DRADeviceTaints: unhealthy devices tainted;
	                       off: withdrawn from the slices */
	bool counters_inline; /* 1.34: a device consumes only counter sets of
	                         its own slice (1.35+: counter sets in
	                         slices of their own) */
	bool shared_no_counters; /* 1.34's allocator cannot allocate a
	                            shareable device that consumes counters
	                            twice: on a MIG-capable GPU publish either
	                            the whole GPU (MIG off) or its placements
	                            (MIG on), never both */
	int partitions;     /* K, 1..32 (used when !consumable) */
};

/* What a 1.36 server with its default gates accepts: everything. */
void gs_kdev_layout_default(struct gs_kdev_layout *l);
/* A short name for logs and metrics: "shared+mig+taints",
 * "partitions4+mig-inline+withdraw", ... */
void gs_kdev_layout_name(const struct gs_kdev_layout *l, char *buf,
                         size_t len);


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
/* The same for a given layout (gs_kdev_build_slices uses the default). */
gs_err gs_kdev_build_slices_for(const json_t *gpus, const json_t *health,
                                const char *node, const char *driver,
                                int64_t generation,
                                const struct gs_kdev_layout *layout,
                                json_t **slices, struct gs_errbuf *eb);

/*
 * Looks a device name up in a /v1/gpus answer. OUT: *gpu (borrowed from
 * `gpus`: the GPU object). GS_ERR_NOT_FOUND when the GPU is absent, or the
 * MIG placement is not one the model allows.
 */
gs_err gs_kdev_lookup(const json_t *gpus, const struct gs_kdev_name *n,
                      const json_t **gpu, struct gs_errbuf *eb);

#endif
