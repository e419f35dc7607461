/*
 * watchdog_pod.h - the watchdog's Kubernetes rule: a GPU process is held
 * to the claims of the pod its cgroup names, whether or not the shim
 * loaded in it (issue #28, "a pod cannot slip out of its claim").
 *
 * The DRA plugin names the pods each claim is reserved for in the claim
 * slice's consumers file (gs/podcgroup.h), rewritten on every prepare of
 * the claim so that a pod joining a shared claim later is named too, and
 * in the slice's `k8s_pod_uid` label (comma-separated, at the first
 * prepare; see integrations/kubernetes/prepare.c and driver.c). The
 * kernel names a process's pod in
 * /proc/PID/cgroup (gs/podcgroup.h). Together they place a process that
 * never registered with any slice, and they overrule a registration that
 * names a slice of another pod.
 *
 * A pod is "known" when some slice lists its UID. A known pod's process on
 * a GPU where one of its claims' slices is, belongs to that slice (the one
 * it registered with, when that is one of them); on a GPU where none is,
 * it is outside its claims and is stopped. A process of a pod no slice
 * lists is left to the watchdog's other rules (a device plugin's pod is
 * none of ours).
 *
 * Called by watchdog.c with the node lock held; calls nothing of it.
 */
#ifndef GS_DAEMON_WATCHDOG_POD_H
#define GS_DAEMON_WATCHDOG_POD_H

#include <stdbool.h>
#include <stdint.h>

#include "batch.h"
#include "node_int.h"

/* gs__wdpod_place: a known pod's process on a GPU none of its claims is
 * on. */
#define GS__WDPOD_OUTSIDE (-2)

struct gs__wdpod;

/* NULL on ENOMEM. Free with gs__wdpod_destroy (NULL does nothing). */
struct gs__wdpod *gs__wdpod_create(void);
void gs__wdpod_destroy(struct gs__wdpod *p);

/*
 * Lock held: reads the claim slices' consumers files that changed since
 * the last call (each tick, before placing its processes). A file or
 * directory refused is warned about; its slice's pods are then those of
 * its label alone.
 */
void gs__wdpod_refresh(struct gs__wdpod *p, const struct gs_node *node);

/*
 * Lock held: the slice whose limits process `pid`, which NVML lists on
 * GPU `gpu`, is held to. `registered`: the slice the region, the API or
 * an ancestor places it in (-1: none). Returns a slice id, -1 (no slice:
 * not a known pod's process, or it is gone) or GS__WDPOD_OUTSIDE.
 */
int64_t gs__wdpod_place(struct gs__wdpod *p, const struct gs_node *node,
                        int gpu, int32_t pid, int64_t registered);

/*
 * Lock held: a process gs__wdpod_place called GS__WDPOD_OUTSIDE. With
 * `kill` it is SIGKILLed (whatever its uid: the kernel, not the process,
 * said whose it is), else flagged; either way reported once per process,
 * as an event (watchdog.kill / watchdog.outside_claim) and a log line.
 */
void gs__wdpod_outside(struct gs__wdpod *p, struct gs_node *node, int gpu,
                       int32_t pid, uint64_t start, uint64_t mem, bool kill,
                       struct gs__wr *wr);

#endif
