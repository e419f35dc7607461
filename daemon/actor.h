/*
 * actor.h - the node's actor (actor.c): the threads that carry out the
 * plans creates record, one GPU at a time.
 */
#ifndef GS_DAEMON_ACTOR_H
#define GS_DAEMON_ACTOR_H

#include <stdbool.h>

#include "gs/admission.h"
#include "node.h"

struct gs__plan;
struct gs__nslice;

/* Starts one worker per GPU of the node (at least one). */
gs_err gs__actor_start(struct gs_node *node, struct gs_errbuf *eb);
/* Stops and joins the workers; plans not carried out are dropped (their
 * slices stay PENDING in the store: the next start resumes them). */
void gs__actor_stop(struct gs_node *node);

/* A plan to fill (NULL: out of memory); allocate it before the lock. */
struct gs__plan *gs__plan_new(void);
/* Frees a plan that was never queued. NULL does nothing. */
void gs__plan_free(struct gs__plan *p);

/*
 * Lock held: queues plan `p` for PENDING slice `s` (as phase A saved it),
 * decided by `dec` (moved into the plan: the caller's is zeroed) with its
 * private inventory copy `priv` for MIG work (moved; may be NULL), for the
 * create that waits on it (gs__actor_await).
 */
void gs__actor_queue(struct gs_node *node, struct gs__plan *p,
                     const struct gs_slice *s, struct gs_adm_decision *dec,
                     struct gs_gpus *priv);
/*
 * The create's side, lock NOT held: `a_err` is how its phase A batch
 * committed (an error: the create gives up, the plan is undone). Waits
 * until the plan is carried out (or a deadline), then for its last
 * batch. OUT: res->slice. Frees `p` or leaves it to the actor.
 */
gs_err gs__actor_await(struct gs_node *node, struct gs__plan *p, gs_err a_err,
                       struct gs_node_create_res *res, struct gs_errbuf *eb);
/*
 * Lock held, at start (gs_node_recover): queues the plan of slice `ns`,
 * left PENDING by a daemon that stopped, to be carried out with no create
 * waiting: its MIG change `mig` (its saved decision, gs__mig_plan_parse;
 * NULL: none left to make), then its MPS server and region entry. False:
 * out of memory.
 */
bool gs__actor_resume(struct gs_node *node, struct gs__nslice *ns,
                      const struct gs_adm_decision *mig);

#endif
