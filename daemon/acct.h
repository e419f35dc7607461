/*
 * acct.h - the ground truth of the ledger (acct.c): each process NVML
 * accounting knows, what of its GPU time was charged, and to which slice.
 */
#ifndef GS_DAEMON_ACCT_H
#define GS_DAEMON_ACCT_H

#include <stdbool.h>
#include <stdint.h>

#include "gpu.h"

struct gs_node;
struct gs__wr;
struct gs__acct;

/* Empty (NULL: out of memory); destroy(NULL) is a no-op. */
struct gs__acct *gs__acct_create(void);
void gs__acct_destroy(struct gs__acct *a);

/*
 * Which slice (id) a process is in, or -1: `running` says whether the
 * kernel can still be asked (a process that ended can only be placed by
 * what was seen of it while it ran).
 */
typedef int64_t (*gs__acct_place_fn)(void *ctx, int32_t pid, bool running);

/*
 * Lock held: a process of `uid` that ended before it was ever seen alive
 * used GPU time in no slice (counted as the watchdog counts the processes
 * in no slice it meets, toward `watchdog.repeat_offender`).
 */
typedef void (*gs__acct_offend_fn)(void *ctx, int64_t uid, struct gs__wr *wr);

/*
 * Lock held: reads NVML accounting on every GPU (turning it on where it
 * is off) and charges each process's GPU time since the last poll to its
 * slice (gs__ledger_charge), placed by `place` when it is first seen;
 * time in no slice is counted (unattributed_gpu_ns) and reported once per
 * process in `wr`, its owner (when known) passed to `offend` if it was
 * never seen alive. OUT: on[g] for each GPU, whether accounting works
 * there (its slices' rows bill NVML).
 */
void gs__acct_poll(struct gs__acct *a, struct gs_node *node,
                   gs__acct_place_fn place, gs__acct_offend_fn offend,
                   void *ctx, struct gs__wr *wr, bool on[GS_GPUS_MAX]);

#endif
