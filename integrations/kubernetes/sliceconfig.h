/*
 * sliceconfig.h - the opaque configuration a ResourceClaim (or its
 * DeviceClass) carries for driver gpuslice.io: a versioned SliceConfig.
 *
 *   parameters:
 *     apiVersion: gpuslice.io/v1alpha1      required
 *     kind: SliceConfig                     required
 *     priority: high | normal | low         default normal
 *     weight: 1..1000                       default 1
 *     computeMode: strict | share           default strict
 *     isolation: none | memory | hard | exclusive   default none
 *     mode: timeslice | mps                 default timeslice (on a MIG
 *                                           device: inside the instance)
 *     swap: allow | never                   default allow (docs/swap.md)
 *
 * Decoding is strict: an unknown field, a wrong type or an out-of-range
 * value is an error whose message names the field. Several configs apply
 * in order (class first, then claim; later ones override the fields they
 * set), which is what gs_kslicecfg_apply does when called once per config.
 *
 * Pure: no I/O. The struct is a plain value.
 */
#ifndef GS_KUBE_SLICECONFIG_H
#define GS_KUBE_SLICECONFIG_H

#include <jansson.h>
#include <stdbool.h>

#include "gs/err.h"
#include "gs/spec.h"

#define GS_KSLICECFG_API_VERSION "gpuslice.io/v1alpha1"
#define GS_KSLICECFG_KIND        "SliceConfig"

enum gs_kcompute_mode { GS_KCOMPUTE_STRICT = 0, GS_KCOMPUTE_SHARE };

struct gs_kslicecfg {
	enum gs_priority priority;
	int weight;
	enum gs_kcompute_mode compute_mode;
	enum gs_isolation isolation;
	bool mps; /* mode: mps (else timeslice) */
	enum gs_swap_mode swap;
};

/* The defaults listed above. */
void gs_kslicecfg_init(struct gs_kslicecfg *c);

/*
 * Validates `params` (an opaque config's parameters object) and applies
 * the fields it sets onto *c. `where` names the config in messages
 * ("claim config[0]"). On error *c is unchanged.
 */
gs_err gs_kslicecfg_apply(struct gs_kslicecfg *c, const json_t *params,
                          const char *where, struct gs_errbuf *eb);

#endif
