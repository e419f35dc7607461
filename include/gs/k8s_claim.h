/*
 * k8s_claim.h - gpuslice slice specs as Kubernetes DRA objects
 * (resource.k8s.io/v1) for the gpuslice.io driver: what `gpuslice import
 * ... --k8s` prints, so an NVIDIA device-plugin sharing config or a DRA
 * GpuConfig becomes claims the gpuslice kubelet plugin enforces.
 *
 * The objects follow docs/kubernetes.md: whole-GPU slices request the
 * device class gpu.gpuslice.io with consumable capacity `memory` (bytes)
 * and `compute` (percent), MIG slices request mig.gpuslice.io with a CEL
 * selector on the profile; priority, weight, isolation and the sharing
 * mode travel in the opaque gpuslice.io/v1alpha1 SliceConfig.
 *
 * Ownership: every function returns a new jansson reference (the caller
 * decrefs it), or NULL when out of memory.
 */
#ifndef GS_K8S_CLAIM_H
#define GS_K8S_CLAIM_H

#include <jansson.h>

#include "gs/spec.h"

#define GS_K8S_DRIVER "gpuslice.io"
#define GS_K8S_CLASS_GPU "gpu.gpuslice.io"
#define GS_K8S_CLASS_MIG "mig.gpuslice.io"

/*
 * Turns a resource or request name ("nvidia.com/gpu.shared", "MyGPU_1")
 * into a DNS label: lower case, [a-z0-9-], at most 63 characters, never
 * empty (falls back to "gpu"). buf must hold 64 bytes.
 */
void gs_k8s_dns_label(const char *name, char *buf, size_t len);

/*
 * One DeviceRequest (the `exactly` form) named `request` for `count`
 * devices of the slice: the class, the capacity requests (whole-GPU
 * modes) or the profile selector (MIG modes; a MIG mode without a
 * profile asks for any MIG device of mig.gpuslice.io, never a whole GPU).
 */
json_t *gs_k8s_device_request(const char *request,
                              const struct gs_slice_spec *s, int count);

/* The opaque SliceConfig of a slice (only what differs from defaults). */
json_t *gs_k8s_slice_config(const struct gs_slice_spec *s);

/*
 * A ResourceClaimTemplate `name` (in `ns` when not NULL) with one request
 * "gpu" for `count` devices of the slice and its SliceConfig; pods that
 * name the template each get their own slice.
 */
json_t *gs_k8s_claim_template(const char *name, const char *ns,
                              const struct gs_slice_spec *s, int count);

/*
 * A DeviceClass `name` selecting gpuslice devices of the slice's kind
 * that carries its SliceConfig and, when `extended` is not NULL, maps the
 * extended resource (KEP-5004) so unchanged pods asking for it get a
 * gpuslice device. The scheduler gives such pods the request policy's
 * default capacity (the whole GPU), not the slice's fraction: use the
 * claim template for fractions.
 */
json_t *gs_k8s_device_class(const char *name, const struct gs_slice_spec *s,
                            const char *extended);

/* A `v1 List` of the items (steals the references in items). */
json_t *gs_k8s_list(json_t *items);

#endif
