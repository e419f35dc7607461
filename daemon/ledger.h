/*
 * ledger.h - the usage ledger's cursors and rows (ledger.c).
 */
#ifndef GS_DAEMON_LEDGER_H
#define GS_DAEMON_LEDGER_H

#include <stdint.h>

#include "gs/err.h"

struct gs_node;
struct gs__nslice;
struct gs__wr;
struct gs__ledger;
struct gs_slice_usage;

/* An empty set of cursors (NULL: out of memory); destroy(NULL) is a no-op. */
struct gs__ledger *gs__ledger_create(void);
void gs__ledger_destroy(struct gs__ledger *led);

/*
 * Lock held: every slice of the model has a cursor (from `now`, counters
 * at zero, for one that had none) and no other slice has one. After a
 * load or a reload of the model; the cursors of slices that stay keep
 * their place (or the next row would count their whole usage again).
 */
void gs__ledger_sync(struct gs_node *node, int64_t now);
/*
 * Lock held: picks each slice's cursor up where the store's rows left it
 * (a daemon that starts again).
 */
void gs__ledger_resume(struct gs_node *node);
/* Lock held: slice `id` is charged from `t_ns` on (it became READY). */
void gs__ledger_start(struct gs_node *node, int64_t id, int64_t t_ns);
/* Lock held: slice `id` is gone; its cursor goes. */
void gs__ledger_forget(struct gs_node *node, int64_t id);
/*
 * Charges the busy time since the last call (busy_ns is the region's
 * counter) at the slice's SM share now, and refreshes ns->live's
 * sm_seconds and sm_share. A counter that went back (a new region) moves
 * the cursor without charging. Lock held.
 */
void gs__ledger_sm_advance(struct gs_node *node, struct gs__nslice *ns,
                           uint64_t busy_ns);
/* SM-seconds up to busy_ns without charging them (read-only view). */
double gs__ledger_sm_seconds(struct gs_node *node, const struct gs__nslice *ns,
                             uint64_t busy_ns);
/*
 * Lock held: NVML measured `busy_ns` of GPU time and `mem_byte_s` of
 * memory-time for slice `id`'s processes since the last charge (the
 * watchdog's tick). From the first charge on, the slice's rows bill
 * these, not its books.
 */
void gs__ledger_charge(struct gs_node *node, int64_t id, uint64_t busy_ns,
                       double mem_byte_s);
/*
 * Lock held: slice `ns`'s books from the region, checked (finite, in
 * range, not faster than the clock). GS_ERR_CORRUPT when they cannot be
 * true (reported once in `wr`, which may be NULL, and counted);
 * otherwise what gs_region_slice_usage returns. OUT: *u.
 */
gs_err gs__ledger_books(struct gs_node *node, struct gs__nslice *ns,
                        struct gs_slice_usage *u, struct gs__wr *wr);
/* Appends a ledger row for what `ns` used since its last sample. */
void gs__ledger_sample(struct gs_node *node, struct gs__nslice *ns,
                       struct gs__wr *wr, int64_t now);

#endif
