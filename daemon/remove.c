/*
 * remove.c - a slice's way out of the model: removed (deleted, failed,
 * cleaned or preempted) from the model, the region and the ledger in one
 * step, with its last ledger row and an event in the same batch; a
 * pending slice failed; the API's delete. Owns no state.
 */
#include "remove.h"

#include <stdio.h>

#include "gs/log.h"
#include "ledger.h"
#include "mig.h"
#include "node_int.h"
#include "slots.h"

void gs__node_remove(struct gs_node *node, struct gs__nslice *ns,
                     struct gs__wr *wr, const char *type, const char *why)
{
	gs__ledger_sample(node, ns, wr, gs_now_ns());
	gs__wr_slice_del(wr, ns->s.id);
	gs__wr_event(wr, type, &ns->s, "%s", why);
	gs__slot_del(node, ns);
	gs__ledger_forget(node, ns->s.id);
	/* MIG instances stay, idle, for the next slice of that profile. */
	gs__node_del(node, ns);
}

void gs__node_fail(struct gs_node *node, struct gs__nslice *ns,
                   const struct gs_adm_decision *d, struct gs__wr *wr,
                   const char *why)
{
	struct gs_slice failed;

	ns->s.state = GS_SLICE_FAILED;
	failed = ns->s;
	gs_warn("node", "slice=%s failed: %s", failed.name, why);
	gs__node_remove(node, ns, wr, "slice.failed", why);
	if (d)
		gs__mig_undo(node, &failed, d);
}

gs_err gs_node_slice_delete(struct gs_node *node, const struct gs_peer *peer,
                            const char *name, struct gs_errbuf *eb)
{
	struct gs__nslice *ns;
	struct gs__wr wr;
	char why[128];
	bool intent = true;

	gs_store_intent(node->store);
	pthread_mutex_lock(&node->lock);
	ns = gs__node_find(node, name);
	if (ns == NULL || !gs__node_can_see(peer, &ns->s)) {
		pthread_mutex_unlock(&node->lock);
		gs_store_intent_drop(node->store);
		return gs_fail(eb, GS_ERR_NOT_FOUND, "no slice '%s'", name);
	}
	gs__wr_init(&wr);
	snprintf(why, sizeof(why), "deleted by %s", peer->user);
	gs__node_remove(node, ns, &wr, "slice.deleted", why);
	node->ctr.deletes++;
	gs__node_submit_announced(node, &wr, &intent);
	pthread_mutex_unlock(&node->lock);
	return gs__node_wait(node, &wr, eb);
}
