/*
 * create.c - a slice's creation: decided by core over a snapshot
 * (snapshot.c), then carried out (victims preempted, MIG work, MPS
 * server, region entry) and recorded READY or FAILED. Owns the create's
 * test hooks, the MPS starter the reconciler registers, and the demand
 * seen (node->demand).
 *
 * A create is decided by core (gs_admit, gs/admission.h: limits, mode,
 * placement, quotas, reclaim victims, MIG steps) on a snapshot of the
 * model built under the lock (gs__node_snapshot), and carried out in two
 * phases:
 *
 *   phase A, node->lock held (slice_create): decide; victims preempted;
 *     the slice joins the model PENDING with its GPU and amounts (and
 *     an idle MIG instance it takes as is), so the next snapshot counts
 *     its share; one batch saves the victims' removal and the pending
 *     row. A decision with MIG work (MIG on, steps, MIG off) marks its
 *     GPU busy (node->mig_busy) and copies the inventory instead.
 *   MIG, no node->lock (create_mig): the NVML steps run on that private
 *     copy (it shares the NVML handles; gpu.c's calls touch only the
 *     gs_gpus given) under node->mig_lock; then, under node->lock, the
 *     GPU's refreshed entry is copied back, busy cleared, and the slice
 *     takes its instance (gs__mig_claim), or fails and goes (slice.failed).
 *   between, no lock (create_finish): wait for that commit; an MPS
 *     slice's control daemon is brought up (node->mps_starter: the
 *     reconciler's; one that cannot start fails the slice); write the
 *     slice's limits into the region (gs__slot_write: it may wait up to
 *     the region writers' lock deadline).
 *   phase B, node->lock held: find the slice again by id; READY and its
 *     slice.created event, or, the region write failed, FAILED and gone
 *     with a slice.failed event (gs__node_fail); deleted meanwhile: the
 *     region entry and MIG instance made for it go, the create answers
 *     GS_ERR_BUSY.
 *
 * MIG lock rules: mig.c.
 *
 * A PENDING slice belongs to its create: housekeeping, the watchdog and
 * the ledger leave it alone, resync does not write its region entry, and
 * gs_node_recover fails one found at start (a crash between the phases).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/log.h"
#include "ledger.h"
#include "lifecycle.h"
#include "mig.h"
#include "node_int.h"
#include "slots.h"
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
                             bool (*fn)(void *arg, const struct gs_slice *s,
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

/*
 * Phase B of a create; the lock is NOT held on entry. `s` is the slice as
 * phase A saved it (PENDING, its MIG instance taken). Writes its limits
 * to the region off the lock (gs__slot_write may wait on the region's
 * writers' lock), then, under the lock, finds the slice again by id and
 * makes it READY, saved with its slice.created event; or, when the
 * region write failed, FAILED and gone (gs__node_fail). A slice deleted
 * meanwhile stays deleted: the region entry and MIG instance made for it
 * go, and the create answers GS_ERR_BUSY. OUT: res->slice.
 */
static gs_err create_finish(struct gs_node *node, const struct gs_slice *s,
                            const struct gs_adm_decision *dec,
                            struct gs_node_create_res *res,
                            struct gs_errbuf *eb)
{
	struct gs_slice_ref ref = {.slot = -1};
	struct gs_errbuf reb = {0}, meb = {0};
	struct gs__nslice *ns;
	struct gs__wr wr;
	bool has_ref = false, intent = true, mps_down = false;
	gs_err rerr = GS_OK, err;

	if (node->create_hook)
		node->create_hook(node->create_hook_arg, s->name);
	/* An MPS slice is ready once its server is: a process started in
	 * it before then would run as a context of its own, not held by
	 * CUDA_MPS_ACTIVE_THREAD_PERCENTAGE. */
	if (node->mps_starter &&
	    (s->mode == GS_MODE_MPS || s->mode == GS_MODE_MIG_MPS) &&
	    !node->mps_starter(node->mps_starter_arg, s, &meb))
		mps_down = true;
	if (node->region && !mps_down)
		rerr = gs__slot_write(node->region, s, &ref, &has_ref, &reb);

	gs_store_intent(node->store);
	pthread_mutex_lock(&node->lock);
	ns = gs__node_find_id(node, s->id);
	if (ns == NULL) {
		/* Deleted while pending (or lost to a resync). The entry
		 * written goes unless a slice of that name now holds it (a
		 * new one of the same name may have taken it over). */
		struct gs__wr *dw = gs__wr_new();

		if (has_ref && !gs__slot_held(node, &ref) &&
		    gs__node_find(node, s->name) == NULL)
			(void)gs_region_slice_delete(node->region, &ref, NULL);
		gs__mig_undo(node, s, dec);
		/* A resync that ran before phase A's row was committed lost
		 * the slice from the model but not from the store. */
		gs__wr_slice_del(dw, s->id);
		gs__node_submit_detached(node, dw);
		pthread_mutex_unlock(&node->lock);
		gs_store_intent_drop(node->store);
		gs_info("node", "slice=%s deleted while it was being created",
		        s->name);
		return gs_fail(eb, GS_ERR_BUSY,
		               "slice %s was deleted while it was being "
		               "created",
		               s->name);
	}
	gs__wr_init(&wr);
	gs__slot_took(ns, &ref, has_ref);
	if (mps_down || rerr) {
		char why[256];

		/*
		 * Fail closed: a slice whose limits are not in the region (a
		 * shim could not enforce it), or an MPS slice without its
		 * server (nothing would hold it to its compute share), is not
		 * created. Nothing of it stays: not in the model, the store
		 * or the region; the event says why. Reclaim victims stay
		 * gone.
		 */
		if (mps_down)
			snprintf(
			    why, sizeof(why),
			    "not created: its MPS control daemon could not "
			    "start: %s",
			    gs_errbuf_msg(&meb, GS_ERR_UNAVAILABLE));
		else
			snprintf(why, sizeof(why),
			         "not created: its limits could not be written "
			         "to the shared region: %s",
			         gs_errbuf_msg(&reb, rerr));
		gs__node_fail(node, ns, dec, &wr, why);
		node->ctr.rejects++;
		gs__node_submit_announced(node, &wr, &intent);
		pthread_mutex_unlock(&node->lock);
		(void)gs__node_wait(node, &wr, NULL);
		return gs_fail(eb, GS_ERR_UNAVAILABLE, "slice %s %s", s->name,
		               why);
	}
	ns->s.state = GS_SLICE_READY;
	ns->s.updated_ns = gs_now_ns();
	/* the ledger skipped it till now */
	gs__ledger_start(node, ns->s.id, ns->s.updated_ns);
	gs__wr_slice_put(&wr, &ns->s);
	gs__wr_event(
	    &wr, "slice.created", &ns->s,
	    "mode=%s memory=%llu compute=%d priority=%s%s%s%s%s",
	    gs_mode_name(s->mode), (unsigned long long)s->spec.memory_bytes,
	    s->spec.compute_pct, gs_priority_name(s->spec.priority),
	    s->borrowed ? " borrowed" : "", dec->mode_why[0] ? " (" : "",
	    dec->mode_why, dec->mode_why[0] ? ")" : "");
	node->ctr.creates++;
	res->slice = ns->s;
	gs__node_submit_announced(node, &wr, &intent);
	pthread_mutex_unlock(&node->lock);
	err = gs__node_wait(node, &wr, eb);
	if (err) {
		/* Not saved: the model went back to the store's (resync),
		 * where the slice is still PENDING, and no one would finish
		 * it: it fails, and the instance made for it goes. */
		struct gs__wr *fw = gs__wr_new();

		pthread_mutex_lock(&node->lock);
		ns = gs__node_find_id(node, s->id);
		if (ns != NULL && ns->s.state == GS_SLICE_PENDING)
			gs__node_fail(node, ns, NULL, fw,
			              "not created: it could not be saved as "
			              "ready");
		if (gs__node_find_id(node, s->id) == NULL)
			gs__mig_undo(node, s, dec);
		gs__node_submit_detached(node, fw);
		pthread_mutex_unlock(&node->lock);
	}
	return err;
}

/*
 * The MIG part of a create whose decision `d` has MIG work; node->lock
 * NOT held. Phase A marked GPU g busy, added `s` PENDING without an
 * instance, copied the inventory into `priv` and submitted its batch
 * `wr`. Runs the NVML steps on `priv` under node->mig_lock (fast readers
 * go on meanwhile), then under node->lock copies gpu[g] back, clears
 * busy and lets the slice take its instance (OUT: s's MIG fields, as in
 * the model); waits for `wr`. On failure the slice becomes FAILED and
 * goes with a slice.failed event (the steps done stay done, idle); a
 * slice deleted meanwhile answers GS_ERR_BUSY.
 */
static gs_err create_mig(struct gs_node *node, struct gs_slice *s,
                         const struct gs_adm_decision *d, struct gs_gpus *priv,
                         struct gs__wr *wr, struct gs_errbuf *eb)
{
	int g = s->gpu_index;
	struct gs__nslice *ns;
	struct gs__wr fw;
	bool failed = false;
	gs_err err, werr;

	pthread_mutex_lock(&node->mig_lock);
	if (node->mig_hook)
		node->mig_hook(node->mig_hook_arg, s->name);
	err = gs__mig_steps(priv, g, d, eb);
	pthread_mutex_unlock(&node->mig_lock);

	gs__wr_init(&fw);
	pthread_mutex_lock(&node->lock);
	node->gpus->gpu[g] = priv->gpu[g];
	node->mig_busy[g] = false;
	/* Its processes may start the moment the create answers: the new
	 * instance must be in the region's GPU table by then (a shim makes
	 * no context on a GPU its daemon does not know). */
	gs__slot_register_devices(node);
	ns = gs__node_find_id(node, s->id);
	if (ns != NULL && err == GS_OK) {
		err = gs__mig_claim(node, &ns->s, d, eb);
		if (err == GS_OK)
			*s = ns->s;
	}
	if (ns != NULL && err) {
		char why[256];

		snprintf(why, sizeof(why),
		         "not created: its MIG change failed: %s",
		         gs_errbuf_msg(eb, err));
		gs__node_fail(node, ns, NULL, &fw, why);
		gs__node_submit(node, &fw);
		failed = true;
	}
	pthread_mutex_unlock(&node->lock);
	werr = gs__node_wait(node, wr, err ? NULL : eb);
	if (failed)
		(void)gs__node_wait(node, &fw, NULL);
	if (err)
		return err;
	if (ns == NULL) {
		if (werr)
			return werr;
		gs_info("node", "slice=%s deleted while it was being created",
		        s->name);
		return gs_fail(eb, GS_ERR_BUSY,
		               "slice %s was deleted while it was being "
		               "created",
		               s->name);
	}
	if (werr) {
		/* Not saved: the model went back to the store's (resync);
		 * the instance made for it goes too. */
		pthread_mutex_lock(&node->lock);
		if (gs__node_find_id(node, s->id) == NULL)
			gs__mig_undo(node, s, d);
		pthread_mutex_unlock(&node->lock);
	}
	return werr;
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
		               "only an administrator may create a slice for "
		               "another user");
	sn = malloc(sizeof(*sn));
	if (sn == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");

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
		err = gs_fail(eb, GS_ERR_EXISTS, "slice '%s' already exists",
		              s.spec.name);
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
			char why[200];

			snprintf(why, sizeof(why),
			         "preempted: team %s reclaimed its guarantee "
			         "for slice %s",
			         s.team, s.name);
			if (res->n_victims < GS_NODE_MAX_VICTIMS)
				snprintf(res->victims[res->n_victims++],
				         GS_NAME_MAX, "%s", victims[k]->s.name);
			gs_info("node", "slice=%s preempted for=%s team=%s",
			        victims[k]->s.name, s.name, s.team);
			gs__trust_signal(node, victims[k], SIGTERM);
			gs__node_remove(node, victims[k], &wr, "quota.reclaim",
			                why);
			node->ctr.reclaims++;
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
	pthread_mutex_unlock(&node->lock);
	if (mig_work) {
		err = create_mig(node, &s, &dec, priv, &wr, eb);
		if (err)
			goto out_free;
		err = create_finish(node, &s, &dec, res, eb);
		goto out_free;
	}
	err = gs__node_wait(node, &wr, eb);
	if (err) {
		/* Not saved: the model went back to the store's (resync);
		 * the instance made for it goes too. */
		pthread_mutex_lock(&node->lock);
		if (gs__node_find_id(node, s.id) == NULL)
			gs__mig_undo(node, &s, &dec);
		pthread_mutex_unlock(&node->lock);
		goto out_free;
	}
	err = create_finish(node, &s, &dec, res, eb);
	goto out_free;

out_unlock:
	pthread_mutex_unlock(&node->lock);
out_free:
	free(priv);
	gs_adm_decision_fini(&dec);
	free(snap_slices);
	free(sn);
	return err;
}
