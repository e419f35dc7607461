/*
 * kprobe.h - what the API server accepts for ResourceSlices: its version
 * (GET /version) and which DRA fields it keeps, learned by a server-side
 * dry-run create of a probe slice (nothing is stored) and reading back
 * what the server kept. Gates that drop fields when off
 * (DRAConsumableCapacity, DRAPartitionableDevices, DRADeviceTaints) show
 * as missing fields; 1.34's rule that a device consumes only counter sets
 * of its own slice (1.35+: counter sets in slices of their own, and a
 * slice never holds both) shows as which probe is accepted:
 *
 *   probe A  devices + sharedCounters in one slice (1.34's layout), a
 *            shareable device with capacity, a counter consumption and a
 *            taint
 *     2xx    counters_inline = whether the counters were kept
 *     422    probe B: the same device alone, consuming a set of another
 *            slice (1.35+'s layout); 2xx: counters in slices of their own
 *   both 422 or no answer: an error (the caller keeps what it had)
 *
 * Who calls: the ResourceSlice publisher (rslices.c) at start and on
 * every re-list. Needs create on resourceslices (the plugin has it).
 * Ownership: nothing is kept; `kube` is borrowed.
 */
#ifndef GS_KUBE_KPROBE_H
#define GS_KUBE_KPROBE_H

#include "devmodel.h"
#include "gs/err.h"
#include "kube.h"

struct gs_kprobe_result {
	int major, minor; /* 0: the server did not say (no /version) */
	char git_version[48];
	struct gs_kdev_layout layout; /* what to publish */
};

/*
 * Asks the server. `partitions` is K for the partition layout. OUT: *out.
 * GS_ERR_UNAVAILABLE / GS_ERR_TIMEOUT when the server did not answer;
 * GS_ERR_INVALID when it refused both probes (eb has its message).
 */
gs_err gs_kprobe_run(struct gs_kube *kube, const char *node,
                     const char *driver, int partitions,
                     struct gs_kprobe_result *out, struct gs_errbuf *eb);

#endif
