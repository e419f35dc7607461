/*
 * remove.h - a slice's way out of the model (remove.c).
 */
#ifndef GS_DAEMON_REMOVE_H
#define GS_DAEMON_REMOVE_H

#include "gs/admission.h"

struct gs_node;
struct gs__nslice;
struct gs__wr;

/*
 * Removes slice `ns` from the model and the region (and frees it),
 * appending the store delete, its last ledger row and an event of `type`
 * to `wr`. Lock held.
 */
void gs__node_remove(struct gs_node *node, struct gs__nslice *ns,
                     struct gs__wr *wr, const char *type, const char *why);
/*
 * A slice left PENDING by a create that cannot finish (lock held): it
 * becomes FAILED and goes, with a slice.failed event saying `why`, and the
 * MIG instance made for it goes too (decision `d`; NULL: it stays idle).
 */
void gs__node_fail(struct gs_node *node, struct gs__nslice *ns,
                   const struct gs_adm_decision *d, struct gs__wr *wr,
                   const char *why);

#endif
