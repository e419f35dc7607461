/*
 * create.c - a slice's creation, decided: core decides (gs_admit,
 * gs/admission.h: limits, mode, placement, quotas, reclaim victims, MIG
 * steps) on a snapshot of the model (snapshot.c), and the decision is
 * recorded under ONE node-lock acquisition (slice_create): victims
 * parked where their memory can move (park.c, gs/park.h), else
 * preempted; the slice joins the model PENDING with its GPU and amounts
 * (and an idle MIG instance it takes as is), so the next snapshot counts
 * its share; one batch saves the victims' removal and the pending row; a
 * decision with MIG work (MIG on, steps, MIG off) marks its GPU busy
 * (node->mig_busy) and copies the inventory; the plan goes to the actor
 * (actor.c), which carries it out off the lock (MIG steps, MPS server,
 * region entry) and makes the slice READY or FAILED. The create waits
 * for its batch, then on its plan (with a deadline), and answers with the
 * outcome: 201 means ready and saved.
 *
 * Owns the create's test hooks, the MPS starter the reconciler
 * registers, and the demand seen (node->demand). MIG lock rules: mig.c.
 *
 * A PENDING slice belongs to its plan: housekeeping, the watchdog and the
 * ledger leave it alone, resync does not write its region entry, and
 * gs_node_recover resumes one found at start (a daemon that stopped
 * while it was being created).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actor.h"
#include "gs/log.h"
#include "gs/park.h"
#include "remove.h"
#include "mig.h"
#include "node_int.h"
#include "park.h"
#include "snapshot.h"
#include "trust.h"

static void peer_team(struct gs_node *node, const struct gs_peer *peer,
                      char *out, size_t len)
{
	const char *t =
	    peer->local ? gs_config_user_team(node->cfg, peer->user) : NULL;

	snprintf(out, len, "%s", t ? t : node->cfg->default_team);
}

static gs_err slice_create(struct gs_node *node, const struct gs_peer *peer,
                           const struct gs_node_create_req *req,
                           struct gs_node_create_res *res, bool *intent,
                           struct gs_errbuf *eb);

/*
 * Adds a request to the demand seen and queues its store rows (detached:
 * the create does not wait on them; a lost write costs history, not a
 * slice, and is logged by the batch). Lock held.
 */
static void record_demand(struct gs_node *node,
                          const struct gs_slice_spec *spec)
{
	struct gs_demand_shape shape, gone[GS_DEMAND_MAX_CLASSES], evicted;
	struct gs__wr *wr = gs__wr_new();
	int64_t now = gs_now_ns();
	bool did_evict;
	int i, n_gone;

	if (wr == NULL) {
		gs_error("node", "demand: out of memory; request not recorded");
		return;
	}
	gs_adm_demand_shape(spec, &shape);
	n_gone = gs_demand_prune(&node->demand, now, gone);
	for (int k = 0; k < n_gone; k++)
		gs__wr_demand_del(wr, &gone[k]);
	gs_demand_add(&node->demand, &shape, now, &i, &evicted, &did_evict);
	if (did_evict)
		gs__wr_demand_del(wr, &evicted);
	gs__wr_demand_put(wr, &node->demand.cls[i]);
	gs__node_submit_detached(node, wr);
}

void gs_node_set_create_hook(struct gs_node *node,
                             void (*fn)(void *arg, const char *slice),
                             void *arg)
{
	node->create_hook = fn;
	node->create_hook_arg = arg;
}

void gs_node_set_mig_hook(struct gs_node *node,
                          void (*fn)(void *arg, const char *slice), void *arg)
{
	node->mig_hook = fn;
	node->mig_hook_arg = arg;
}

void gs_node_set_mps_starter(struct gs_node *node,
                             gs_err (*fn)(void *arg, const struct gs_slice *s,
                                          struct gs_errbuf *eb),
                             void *arg)
{
	node->mps_starter = fn;
	node->mps_starter_arg = arg;
}

void gs_node_demand(struct gs_node *node, struct gs_demand *out)
{
	pthread_mutex_lock(&node->lock);
	*out = node->demand;
	pthread_mutex_unlock(&node->lock);
}

gs_err gs_node_slice_create(struct gs_node *node, const struct gs_peer *peer,
                            const struct gs_node_create_req *req,
                            struct gs_node_create_res *res,
                            struct gs_errbuf *eb)
{
	bool intent = true;
	gs_err err;

	gs_store_intent(node->store);
	err = slice_create(node, peer, req, res, &intent, eb);
	if (intent)
		gs_store_intent_drop(node->store);
	return err;
}

static gs_err slice_create(struct gs_node *node, const struct gs_peer *peer,
                           const struct gs_node_create_req *req,
                           struct gs_node_create_res *res, bool *intent,
                           struct gs_errbuf *eb)
{
	struct gs_slice s;
	struct gs_adm_snapshot *sn;
	struct gs_adm_slice *snap_slices = NULL;
	struct gs_adm_request areq;
	struct gs_adm_decision dec;
	struct gs__wr wr;
	struct gs__nslice *ns;
	struct gs_gpus *priv = NULL;
	struct gs__plan *plan = NULL;
	bool mig_work;
	gs_err err;

	memset(res, 0, sizeof(*res));
	memset(&dec, 0, sizeof(dec));
	if (!peer->authed)
		return gs_fail(eb, GS_ERR_PERM, "not authenticated");
	err = gs_spec_validate(&req->spec, eb);
	if (err)
		return err;
	if (req->spec.name[0] && !gs_name_is_valid(req->spec.name))
		return gs_fail(eb, GS_ERR_INVALID, "bad slice name '%s'",
		               req->spec.name);
	if (req->owner_uid >= 0 && !peer->admin &&
	    (uint32_t)req->owner_uid != peer->uid)
		return gs_fail(eb, GS_ERR_PERM,
		               "only an administrator may create a slice for another user");
	sn = malloc(sizeof(*sn));
	plan = gs__plan_new();
	if (sn == NULL || plan == NULL) {
		free(sn);
		gs__plan_free(plan);
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	}

	memset(&s, 0, sizeof(s));
	s.spec = req->spec;
	s.owner_uid =
	    req->owner_uid >= 0 ? (uint32_t)req->owner_uid : peer->uid;
	s.on_exit = req->on_exit;
	s.n_labels = req->n_labels;
	memcpy(s.labels, req->labels, sizeof(s.labels));
	s.gi_id = s.ci_id = -1;
	s.region_slot = -1;
	s.state = GS_SLICE_READY;
	s.created_ns = s.updated_ns = gs_now_ns();

	pthread_mutex_lock(&node->lock);
	if (req->team[0]) {
		char mine[GS_NAME_MAX];

		peer_team(node, peer, mine, sizeof(mine));
		if (!peer->admin && strcmp(mine, req->team) != 0) {
			err = gs_fail(eb, GS_ERR_PERM,
			              "user %s is not a member of team '%s'",
			              peer->user, req->team);
			goto out_unlock;
		}
		snprintf(s.team, sizeof(s.team), "%s", req->team);
	} else {
		peer_team(node, peer, s.team, sizeof(s.team));
	}
	memset(&areq, 0, sizeof(areq));
	areq.team = gs__node_team_index(node, s.team);
	if (areq.team < 0) {
		err = gs_fail(eb, GS_ERR_NOT_FOUND, "no team '%s'", s.team);
		goto out_unlock;
	}
	if (s.spec.name[0] && gs__node_find(node, s.spec.name)) {
		const struct gs__nslice *o = gs__node_find(node, s.spec.name);

		/* Someone else's: say nothing of it (not even that it is). */
		if (!peer->admin && o->s.owner_uid != peer->uid)
			err = gs_fail(eb, GS_ERR_EXISTS,
			              "slice name '%s' is not available",
			              s.spec.name);
		else
			err = gs_fail(eb, GS_ERR_EXISTS,
			              "slice '%s' already exists", s.spec.name);
		goto out_unlock;
	}
	s.id = node->next_id;
	if (!s.spec.name[0])
		snprintf(s.spec.name, sizeof(s.spec.name), "slice-%lld",
		         (long long)s.id);
	snprintf(s.name, sizeof(s.name), "%s", s.spec.name);
	if (gs__node_find(node, s.name)) {
		err = gs_fail(eb, GS_ERR_EXISTS, "slice '%s' already exists",
		              s.name);
		goto out_unlock;
	}

	/* Decide (core, pure) on a snapshot of the model as it is. */
	if (gs__node_snapshot(node, sn, &snap_slices) != GS_OK) {
		err = gs_fail(eb, GS_ERR_NOMEM, "out of memory");
		goto out_unlock;
	}
	areq.spec = s.spec;
	areq.owner_uid = s.owner_uid;
	areq.admin = peer->admin;
	err = gs_admit(sn, &areq, &dec, eb);
	if (dec.demand_seen)
		record_demand(node, &s.spec);
	if (err) {
		if (dec.counted)
			node->ctr.rejects++;
		goto out_unlock;
	}
	s.mode = dec.mode;
	s.gpu_index = dec.gpu;
	snprintf(s.gpu_uuid, sizeof(s.gpu_uuid), "%s",
	         node->gpus->gpu[dec.gpu].uuid);
	s.spec.memory_bytes = dec.memory_bytes;
	s.spec.compute_pct = dec.compute_pct;
	s.borrowed = dec.borrowed;

	/* Act. Preempt the victims first: their room is what this slice
	 * takes. */
	gs__wr_init(&wr);
	if (dec.n_victims > 0) {
		struct gs__nslice **victims =
		    calloc(dec.n_victims, sizeof(*victims));

		if (victims == NULL) {
			err = gs_fail(eb, GS_ERR_NOMEM, "out of memory");
			gs__wr_fini(&wr);
			goto out_unlock;
		}
		for (size_t k = 0; k < dec.n_victims; k++)
			victims[k] = node->v[dec.victims[k]];
		for (size_t k = 0; k < dec.n_victims; k++) {
			char why[400], no_park[GS_PARK_WHY_MAX];

			bool parked;

			node->ctr.reclaims++;
			/* Parked where its memory can move (gs/park.h): it
			 * stays, counted nowhere, until there is room. */
			parked =
			    gs__park_victim(node, victims[k], s.team, s.name,
			                    &wr, no_park, sizeof(no_park));
			if (res->n_victims < GS_NODE_MAX_VICTIMS) {
				res->parked[res->n_victims] = parked;
				snprintf(res->victims[res->n_victims++],
				         GS_NAME_MAX, "%s", victims[k]->s.name);
			}
			if (parked)
				continue;
			snprintf(
			    why, sizeof(why),
			    "preempted: team %s reclaimed its guarantee for slice %s; not parked: %s",
			    s.team, s.name, no_park);
			gs_info("node", "slice=%s preempted for=%s team=%s",
			        victims[k]->s.name, s.name, s.team);
			gs__trust_signal(node, victims[k], SIGTERM);
			gs__node_remove(node, victims[k], &wr, "quota.reclaim",
			                why);
		}
		free(victims);
	}
	mig_work = gs__mig_has_work(&dec);
	if (mig_work) {
		/* The NVML steps run off the lock (create_mig), on a copy. */
		priv = malloc(sizeof(*priv));
		err = priv ? GS_OK : gs_fail(eb, GS_ERR_NOMEM, "out of memory");
		if (priv) {
			*priv = *node->gpus;
			node->mig_busy[s.gpu_index] = true;
			/* Saved with the pending row: a daemon that stops
			 * during the change carries it on at its start. */
			gs__mig_plan_format(&dec, s.mig_plan,
			                    sizeof(s.mig_plan));
		}
	} else {
		err = gs__mig_claim(node, &s, &dec, eb);
	}
	if (err) {
		/* Victims are gone already: save that much, and why the slice
		 * they made room for is not there. */
		gs__wr_event(&wr, "slice.failed", &s,
		             "not created: its MIG change failed: %s",
		             gs_errbuf_msg(eb, err));
		gs__node_submit_announced(node, &wr, intent);
		pthread_mutex_unlock(&node->lock);
		(void)gs__node_wait(node, &wr, NULL);
		goto out_free;
	}
	/* The end of phase A: the slice joins the model PENDING (the next
	 * snapshot counts its share, so nobody else is admitted into it)
	 * and is saved so in the batch that saves the victims' removal. */
	s.state = GS_SLICE_PENDING;
	ns = gs__node_add(node, &s);
	if (ns == NULL) {
		err = gs_fail(eb, GS_ERR_NOMEM, "out of memory");
		if (mig_work)
			node->mig_busy[s.gpu_index] = false;
		else
			gs__mig_undo(node, &s, &dec);
		gs__node_submit_announced(node, &wr, intent);
		pthread_mutex_unlock(&node->lock);
		(void)gs__node_wait(node, &wr, NULL);
		goto out_free;
	}
	node->next_id++;
	gs__wr_slice_put(&wr, &ns->s);
	gs__node_submit_announced(node, &wr, intent);
	/* The decision is recorded: the actor carries it out. */
	gs__actor_queue(node, plan, &s, &dec, priv);
	priv = NULL;
	pthread_mutex_unlock(&node->lock);
	err = gs__node_wait(node, &wr, eb);
	err = gs__actor_await(node, plan, err, res, eb);
	plan = NULL;
	goto out_free;

out_unlock:
	pthread_mutex_unlock(&node->lock);
out_free:
	gs__plan_free(plan);
	free(priv);
	gs_adm_decision_fini(&dec);
	free(snap_slices);
	free(sn);
	return err;
}
