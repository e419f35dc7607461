/*
 * slots.h - a slice's entry in the shared region (slots.c).
 */
#ifndef GS_DAEMON_SLOTS_H
#define GS_DAEMON_SLOTS_H

#include <stdbool.h>

#include "gs/region.h"
#include "gs/region_swap.h"
#include "slice.h"

struct gs_node;
struct gs__nslice;
struct gs_errbuf;

/* The region limits slice `s`'s spec gives (zeros: none, never wrong). */
void gs__slot_limits(const struct gs_slice *s, struct gs_slice_limits *lim);
/* Whether the node oversubscribes memory (swap.oversubscribe > 1): then a
 * slice with swap=allow gets GS_SLICE_SWAP in its limits, and its shims
 * back its allocations with movable memory. Set once at start. */
void gs__slot_swap_enable(bool on);
/* Copies slice `ns`'s swap record from the region (what its shims moved,
 * their counts and times, why it is pinned) into out->swap. Node lock
 * held. */
void gs__slot_swap_fill(struct gs_node *node, const struct gs__nslice *ns,
                        struct gs_slice *out);
/*
 * Counts and times of slice swap figures `sw` (the model's, as stored)
 * merged with its region record `rec`: a record that has at least the
 * counts `sw` noted of it is the same record (its counts since then are
 * added), one with fewer was made again (a new region: all of its counts
 * are added). OUT: *out (counts, last times, rec_*).
 */
void gs__slot_swap_merge(const struct gs_slice_swap *sw,
                         const struct gs_swap_rec *rec,
                         struct gs_slice_swap *out);
/* Notes record `rec` in slice `ns`'s model figures (lock held). Whether
 * they changed: then the slice's row is to be stored. */
bool gs__slot_swap_note(struct gs__nslice *ns, const struct gs_swap_rec *rec);
/*
 * Makes `region` hold slice `s` with its limits; OUT: *ref, *has_ref
 * (whether *ref names its entry, set even when a later update failed).
 * Needs no node lock (see slots.c).
 */
gs_err gs__slot_write(struct gs_region *region, const struct gs_slice *s,
                      struct gs_slice_ref *ref, bool *has_ref,
                      struct gs_errbuf *out_eb);
/* Records in `ns` where gs__slot_write put it (lock held). */
void gs__slot_took(struct gs__nslice *ns, const struct gs_slice_ref *ref,
                   bool has_ref);
/* gs__slot_write for a slice of the model (lock held). */
gs_err gs__slot_put(struct gs_node *node, struct gs__nslice *ns,
                    struct gs_errbuf *out_eb);
/* Takes `ns`'s entry out of the region (lock held). */
void gs__slot_del(struct gs_node *node, struct gs__nslice *ns);
/* Whether a slice of the model holds region entry `ref`. Lock held. */
bool gs__slot_held(struct gs_node *node, const struct gs_slice_ref *ref);
/* Registers the inventory's GPUs and MIG instances in the region's GPU
 * table (the daemon's to write). Lock held. */
void gs__slot_register_devices(struct gs_node *node);

#endif
