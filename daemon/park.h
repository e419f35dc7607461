/*
 * park.h - parking a quota reclaim's victim (park.c; the policy is core's
 * gs/park.h): the model's side. create.c parks a victim that may be
 * parked; the swapper swaps a parked slice out, resumes parked slices
 * when there is room again, and drops one whose swap-out failed.
 */
#ifndef GS_DAEMON_PARK_H
#define GS_DAEMON_PARK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gs_node;
struct gs__nslice;
struct gs__wr;

/*
 * Parks reclaim victim `ns` for slice `for_slice` of team `team` when the
 * policy allows (gs_park_may_park): PARKED, counted nowhere, saved in
 * `wr` with a quota.park event. Else changes nothing and says why in
 * why[len]. Lock held.
 */
bool gs__park_victim(struct gs_node *node, struct gs__nslice *ns,
                     const char *team, const char *for_slice, struct gs__wr *wr,
                     char *why, size_t len);

/*
 * The parked slices that may resume now (gs_park_plan_resume) become live
 * again, each with a quota.resume event, saved in one detached batch.
 * OUT: ids[0..*n) of those resumed (at most `max`). Lock held.
 */
void gs__park_resume(struct gs_node *node, int64_t *ids, int max, int *n);

/*
 * A parked slice whose swap-out failed (`err_text`) takes the reclaim's
 * kill path: its processes get SIGTERM and it goes, with a quota.reclaim
 * event saying why. Nothing when `id` is no longer parked. Takes the
 * lock.
 */
void gs__park_fail(struct gs_node *node, int64_t id, const char *err_text);

#endif
