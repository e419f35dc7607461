/*
 * region_launch.h - what the shim's launch and context paths read and
 * charge in the shared region: the per-GPU scheduler records and the
 * slices' configs the scheduler (gs/region_sched.h) decides over, the
 * limits' epoch, a process's books of launches, waits and throttling,
 * the arbiter's bell, and the learned cost of a context. Implemented in
 * region/launch.c (and the locks in region/lock.c); the layout behind it
 * stays private to region/ (region_int.h).
 *
 * The region lock. gs_region_lock() takes the usage lock of the calling
 * process's owner file and the shared one (an arbiter's client: its
 * owner file's only), each with a deadline, repairing after a holder
 * that died; functions marked "lock held" need it, the others take no
 * lock. Pointers returned point into the mapping and stay valid while the
 * region is open (a shared file replaced under a joiner stays mapped), so
 * the launch fast path may keep one and read it without the lock.
 *
 * Cost: each function is a few loads and stores, no system call (except
 * the bell's futex wake), so the launch path pays what it paid when it
 * read the layout itself.
 */
#ifndef GS_REGION_LAUNCH_H
#define GS_REGION_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>

#include "gs/err.h"
#include "gs/region.h"
#include "gs/region_sched.h"

/* A process entry in its owner file (opaque), lent while the lock is held. */
struct gs_ru_proc;

/*
 * Takes the region lock (see above). GS_ERR_TIMEOUT when it cannot be had
 * within the deadline (a wedged region must not wedge the caller).
 */
gs_err gs_region_lock(struct gs_region *r);
void gs_region_unlock(struct gs_region *r);

/* Whether the calling process is attached (its owner file is mapped): the
 * books below exist only then. */
bool gs_region_attached(struct gs_region *r);

/* Whether this handle is a process of a GS_RU_ARBITER region (the
 * daemon's) other than its creator: the shared file is read-only to it,
 * its slice's scheduler records are its own, and it rings the bell when
 * the arbiter should look. */
bool gs_region_arb_client(const struct gs_region *r);
/* Wakes the region's arbiter (no write needed). */
void gs_region_bell(struct gs_region *r);

/* The limits' epoch, bumped by every change of any slice (acquire load,
 * no lock). */
uint64_t gs_region_limits_epoch(struct gs_region *r);
/* The word behind gs_region_limits_epoch(), for a caller that keeps the
 * pointer and compares it without a call (the launch lease path); valid
 * while the region is open. */
const uint64_t *gs_region_limits_epoch_word(struct gs_region *r);

/* The limits of the slice of process `p` (seqlock read, no lock). OUT:
 * out, *slice. GS_ERR_NOT_FOUND when `p` or its slice is stale. */
gs_err gs_region_proc_limits(struct gs_region *r, const struct gs_proc_ref *p,
                             struct gs_slice_limits *out, int32_t *slice);

/*
 * Lock held: copies every slice's scheduler config (generation, limits)
 * into cfg[] (GS_REGION_MAX_SLICES entries) when the limits changed since
 * *epoch; returns true when it copied. OUT: cfg, *epoch.
 */
bool gs_region_sched_cfg(struct gs_region *r, struct gs_sched_cfg *cfg,
                         uint64_t *epoch);

/* The scheduler record of GPU slot `dev` in the shared file; its gate and
 * seq are read without the lock (gs/region_sched.h). */
struct gs_sched_dev *gs_region_sched_dev(struct gs_region *r, int dev);

/*
 * Lock held, attached: points v->dev, v->sl, v->bk and v->mine at GPU
 * `dev`'s records for the calling process's slice `s` (its owner's token
 * buckets; in a daemon's region, the slice's own record, which the
 * arbiter reads). The caller fills the rest of the view.
 */
void gs_region_sched_view(struct gs_region *r, int dev, int s,
                          struct gs_sched_view *v);

/* A process's entry while the lock is held (gs_region_proc_entry). */
struct gs_region_entry {
	struct gs_ru_proc *pr;
	int32_t slice;      /* the slice slot it is attached to */
	uint64_t slice_gen; /* that slice's generation at attach */
};

/* Lock held: the live entry of process `p` in the calling process's owner
 * file; false when `p` is stale or not attached here. OUT: e. */
bool gs_region_proc_entry(struct gs_region *r, const struct gs_proc_ref *p,
                          struct gs_region_entry *e);

/*
 * Lock held, the charges of the launch path to the books of entry `e` on
 * GPU slot `dev` (and, while its slice is still the generation it
 * attached to, to the slice's books):
 *
 *   waiting   one more of its launches waits for a turn
 *   admitted  a launch was admitted: if it waited, one wait fewer and
 *             `throttled_ns` more throttled; if `measured`, one more
 *             batch in flight
 *   settled   a batch of `n` launches that took `busy_ns` of GPU time
 *             finished (one in flight fewer when `booked`)
 */
void gs_region_books_waiting(struct gs_region *r,
                             const struct gs_region_entry *e, int dev);
void gs_region_books_admitted(struct gs_region *r,
                              const struct gs_region_entry *e, int dev,
                              bool waited, uint64_t throttled_ns,
                              bool measured);
void gs_region_books_settled(struct gs_region *r,
                             const struct gs_region_entry *e, int dev,
                             uint64_t n, uint64_t busy_ns, bool booked);

/* What one context costs on GPU slot `dev` as learned so far (bytes, 0:
 * not yet), and learning it: written only where the shared file is the
 * caller's to write (not a daemon's). No lock. */
uint64_t gs_region_ctx_overhead(struct gs_region *r, int dev);
void gs_region_ctx_overhead_learn(struct gs_region *r, int dev, uint64_t bytes);

#endif
