/*
 * swapper.h - the daemon acting on the swap policy (docs/swap.md,
 * gs/swap.h): on a node with swap.oversubscribe above 1, a thread of its
 * own swaps idle slices out (the idle tick, once a second) and serves the
 * needs the slices' processes post in the region (gs/region_swap.h): an
 * allocation the GPU has no memory for, or a stopped process wanting its
 * memory back. Each move goes through the slice's swap record and is
 * written as an event with its reason and the time it took.
 *
 * Owned by the reconciler (reconcile.c creates and destroys it).
 */
#ifndef GS_DAEMON_SWAPPER_H
#define GS_DAEMON_SWAPPER_H

#include "node.h"

struct gs_swapper;

/*
 * Starts the swapper of `node` when its config oversubscribes (else
 * *out is NULL and nothing runs). OUT: *out, freed by
 * gs_swapper_destroy. GS_ERR_NOMEM / GS_ERR_IO (no thread), in eb.
 */
gs_err gs_swapper_create(struct gs_node *node, struct gs_swapper **out,
                         struct gs_errbuf *eb);
/* Stops the thread (a move under way is waited for) and frees;
 * NULL does nothing. */
void gs_swapper_destroy(struct gs_swapper *sw);

#endif
