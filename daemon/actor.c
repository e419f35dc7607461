/*
 * actor.c - the node's actor: what a create decided (create.c, under one
 * node-lock acquisition: the slice PENDING in the model and the store,
 * its decision in a plan) is carried out here, off the node lock, by one
 * worker thread per GPU, so one GPU's slow MIG change or MPS start never
 * holds up another's creates. A plan's steps:
 *
 *   MIG work (plan_mig) ---> phase A saved? ---> hook, MPS server, region
 *   (NVML steps on a copy,     (the create        entry (plan_finish) --->
 *    then the instance)         reports it)       READY or FAILED
 *
 * Each step runs in one retry-or-fail loop: a step that fails for a
 * passing reason (err_is_transient: NVML's "in use", an MPS control
 * daemon started but not up yet) is tried again after a back-off (50 ms
 * doubling to 2 s) while the plan's deadline allows (retry_ok,
 * retry_sleep); the MIG steps are idempotent
 * (gs__mig_steps), so trying again carries on where they stopped. A
 * step that fails for good, or past the deadline, ends in plan_fail,
 * once: the slice becomes FAILED and goes with a slice.failed event
 * saying why, and what was made for it goes too (its region entry, the
 * MIG instances its steps made: plan_undo_mig); a slice deleted
 * meanwhile stays deleted and what was made for it goes (plan_gone). An
 * actor stopping between tries leaves the plan (plan_abandon): its slice
 * stays PENDING for the next start. The create waits on its plan
 * with a deadline (gs__actor_await) and answers with the outcome; the
 * plan's last batch is committed before the answer (201 means ready, and
 * saved). A daemon that stopped with plans pending resumes them at start
 * (gs__actor_resume, from gs_node_recover).
 *
 * Owns node->actor: the queue of plans (in order, under node->lock), the
 * workers; condition variables (all with node->lock): each worker's for
 * work queued for it, each plan's for phase A reported and the plan
 * done (only its create waits there: no herd of creates woken for each
 * other's plans), and the actor's for stop (back-offs wait on it). A
 * plan is the create's and
 * the actor's until both let go (plan->creator says whether the create
 * still waits; the last to let go frees it).
 */
#include "actor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs/log.h"
#include "ledger.h"
#include "remove.h"
#include "mig.h"
#include "node_int.h"
#include "slots.h"

/* How long a create waits for its slice to be ready. */
#define ACTOR_DEADLINE_S 120
/* A plan stops trying again this long before its create's deadline, so
 * that the create answers with the failure rather than a timeout. */
#define ACTOR_SLACK_S 10
/* The back-off between tries of a step: doubling from the first. */
#define RETRY_FIRST_MS 50
#define RETRY_MAX_MS   2000

enum a_state { A_UNKNOWN, A_SAVED, A_LOST };

struct gs__plan {
	struct gs__plan *next;
	struct gs_slice s; /* as phase A saved it; MIG fields once claimed */
	struct gs_adm_decision dec;
	struct gs_gpus *priv;     /* MIG work: the inventory copy, else NULL */
	bool creator;             /* a create waits on it */
	int64_t deadline_ns;      /* no try starts after this */
	struct gs__mig_made made; /* the instances its MIG steps made */
	enum a_state a;           /* how phase A's batch committed */
	bool done;
	gs_err err;
	struct gs_errbuf eb;
	struct gs_slice result;
	/* the last batch (READY or FAILED), queued; its waiter is the
	 * create when it still waits, else the actor */
	struct gs__wr wr;
	bool has_wr, wr_ready;
	pthread_cond_t cv; /* phase A reported, plan done (with node->lock) */
};

struct worker {
	struct gs_node *node;
	int gpu;
	pthread_t t;
	pthread_cond_t cv; /* work queued for this worker, stop */
};

struct gs__actor {
	pthread_cond_t cv;
	bool stop;
	struct gs__plan *head, *tail;
	int n;
	struct worker w[GS_GPUS_MAX];
};

struct gs__plan *gs__plan_new(void)
{
	struct gs__plan *p = calloc(1, sizeof(*p));

	if (p != NULL) {
		gs__wr_init(&p->wr);
		pthread_cond_init(&p->cv, NULL);
	}
	return p;
}

void gs__plan_free(struct gs__plan *p)
{
	if (p == NULL)
		return;
	gs_adm_decision_fini(&p->dec);
	gs__wr_fini(&p->wr);
	pthread_cond_destroy(&p->cv);
	free(p->priv);
	free(p);
}

static int worker_of(const struct gs__actor *a, int gpu)
{
	return gpu >= 0 ? gpu % a->n : 0;
}

void gs__actor_queue(struct gs_node *node, struct gs__plan *p,
                     const struct gs_slice *s, struct gs_adm_decision *dec,
                     struct gs_gpus *priv)
{
	struct gs__actor *a = node->actor;

	p->s = *s;
	p->dec = *dec;
	memset(dec, 0, sizeof(*dec));
	p->priv = priv;
	p->creator = true;
	p->deadline_ns =
	    gs_now_ns() +
	    (int64_t)(ACTOR_DEADLINE_S - ACTOR_SLACK_S) * 1000000000;
	p->next = NULL;
	if (a->tail)
		a->tail->next = p;
	else
		a->head = p;
	a->tail = p;
	if (a->n > 0)
		pthread_cond_signal(&a->w[worker_of(a, p->s.gpu_index)].cv);
}

bool gs__actor_resume(struct gs_node *node, struct gs__nslice *ns,
                      const struct gs_adm_decision *mig)
{
	struct gs__plan *p = gs__plan_new();
	struct gs_gpus *priv = NULL;
	struct gs_adm_decision dec;
	int g = ns->s.gpu_index;

	if (p == NULL)
		return false;
	if (mig != NULL) {
		/* Its MIG change, carried out again: the steps are
		 * idempotent (those done are skipped, an instance they made
		 * is found and taken), on a copy as a create's are. */
		priv = malloc(sizeof(*priv));
		if (priv == NULL) {
			gs__plan_free(p);
			return false;
		}
		*priv = *node->gpus;
		node->mig_busy[g] = true;
		dec = *mig;
	} else {
		/* What is left of a create that was decided and saved: no
		 * MIG steps (an instance it holds stays as it is), its MPS
		 * server and region entry. */
		memset(&dec, 0, sizeof(dec));
		dec.gi_id = ns->s.gi_id;
	}
	dec.mode = ns->s.mode;
	dec.gpu = g;
	gs__actor_queue(node, p, &ns->s, &dec, priv);
	p->creator = false;
	p->a = A_SAVED;
	gs_info("node", "slice=%s pending since the last start: resumed%s",
	        ns->s.name, mig ? " with its MIG change" : "");
	return true;
}

/* Lock held: the next plan of worker `w`'s GPU, taken off the queue. */
static struct gs__plan *take(struct gs__actor *a, const struct worker *w)
{
	struct gs__plan **pp, *prev = NULL;

	for (pp = &a->head; *pp; prev = *pp, pp = &(*pp)->next) {
		struct gs__plan *p = *pp;

		if (worker_of(a, p->s.gpu_index) != w->gpu)
			continue;
		*pp = p->next;
		if (a->tail == p)
			a->tail = prev;
		p->next = NULL;
		return p;
	}
	return NULL;
}

/*
 * Lock held: the plan is carried out (err, and its last batch queued when
 * has_wr). The create that waits takes over; without one the actor waits
 * for the batch and frees the plan (lock released and taken again).
 */
static void plan_done(struct gs_node *node, struct gs__plan *p, gs_err err)
{
	p->done = true;
	p->err = err;
	pthread_cond_broadcast(&p->cv);
	if (p->creator)
		return;
	pthread_mutex_unlock(&node->lock);
	if (p->has_wr && gs__node_wait(node, &p->wr, NULL) != GS_OK &&
	    p->wr_ready)
		gs_warn("node", "slice=%s could not be saved as ready",
		        p->s.name);
	gs__plan_free(p);
	pthread_mutex_lock(&node->lock);
}

/*
 * Whether a step that failed with `err` may succeed when tried again: what
 * it waits for is busy, not wrong. GS_ERR_BUSY: NVML's "in use" on a MIG
 * change, an MPS control daemon started and not up yet (the starter).
 * Anything else fails the slice at once: a driver error, no permission,
 * no room, an I/O error, an MPS start within its back-off, and a timeout
 * (the region writers' lock held past its own deadline: the wait was the
 * retry; create_fails_closed.sh expects the 503 then).
 */
static bool err_is_transient(gs_err err)
{
	return err == GS_ERR_BUSY;
}

/* Lock held: whether plan `p`'s step that failed with `err` is tried
 * again after a back-off of wait_ms (logged so). */
static bool retry_ok(struct gs_node *node, const struct gs__plan *p, gs_err err,
                     const struct gs_errbuf *eb, int wait_ms)
{
	if (!err_is_transient(err) || node->actor->stop ||
	    gs_now_ns() + (int64_t)wait_ms * 1000000 >= p->deadline_ns)
		return false;
	gs_info("node", "slice=%s %s; trying again in %d ms", p->s.name,
	        gs_errbuf_msg(eb, err), wait_ms);
	return true;
}

/*
 * Lock held (released while it waits): the back-off *wait_ms, doubled
 * for the next try. False: the actor is stopping (plan_abandon).
 */
static bool retry_sleep(struct gs_node *node, int *wait_ms)
{
	struct gs__actor *a = node->actor;
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += *wait_ms / 1000;
	until.tv_nsec += (long)(*wait_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	while (!a->stop && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&a->cv, &node->lock, &until);
	*wait_ms = *wait_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : *wait_ms * 2;
	return !a->stop;
}

/*
 * Lock held: the actor stops between two tries of plan `p`. Its slice
 * stays PENDING, in the store too: the next start resumes the plan (the
 * MIG steps, idempotent, find what they made). A create still waiting
 * answers that gpusliced is stopping.
 */
static void plan_abandon(struct gs_node *node, struct gs__plan *p)
{
	gs_info("node", "slice=%s left pending: gpusliced is stopping",
	        p->s.name);
	(void)gs_fail(&p->eb, GS_ERR_UNAVAILABLE,
	              "slice %s is not ready: gpusliced is stopping; it shows as pending until it is created or fails",
	              p->s.name);
	plan_done(node, p, GS_ERR_UNAVAILABLE);
}

/*
 * Lock held: undoes the MIG instances plan `p` made for slice `s` (out
 * of the model by now): those its create steps made or found made; for a
 * plan without MIG steps, the one gs__mig_undo names. An instance a
 * slice holds stays, as do the idle instances its destroy steps removed
 * (gone) and a MIG mode it turned on (the planner turns it off again).
 */
static void plan_undo_mig(struct gs_node *node, struct gs__plan *p,
                          const struct gs_slice *s)
{
	if (p->made.n == 0) {
		gs__mig_undo(node, s, &p->dec);
		return;
	}
	for (int k = 0; k < p->made.n; k++)
		gs__mig_drop_unheld(node, s->gpu_index, p->made.uuid[k]);
}

/*
 * Lock held: the one way a plan fails, once, its compensation in one
 * place. Slice `ns` (still PENDING) becomes FAILED and goes with a
 * slice.failed event saying `why` (out of the model and the store; its
 * region entry, gs__node_remove); the MIG instances the plan made go
 * too. The batch is the plan's last (announced with gs_store_intent when
 * *intent); the create that waits answers `err`, with p->eb.
 */
static void plan_fail(struct gs_node *node, struct gs__plan *p,
                      struct gs__nslice *ns, gs_err err, const char *why,
                      bool *intent)
{
	struct gs_slice failed = ns->s;

	gs__node_fail(node, ns, NULL, &p->wr, why);
	plan_undo_mig(node, p, &failed);
	gs__node_submit_announced(node, &p->wr, intent);
	p->has_wr = true;
	plan_done(node, p, err);
}

/*
 * Lock held: the slice is no longer in the model (deleted while pending,
 * or lost to a resync after phase A's batch failed). What was made for
 * it goes: region entry `ref` (unless a slice of that name holds it now)
 * and the MIG instance.
 */
static void plan_gone(struct gs_node *node, struct gs__plan *p,
                      const struct gs_slice_ref *ref, bool has_ref)
{
	struct gs__wr *dw = gs__wr_new();

	if (has_ref && !gs__slot_held(node, ref) &&
	    gs__node_find(node, p->s.name) == NULL)
		(void)gs_region_slice_delete(node->region, ref, NULL);
	plan_undo_mig(node, p, &p->s);
	/* A resync that ran before phase A's row was committed lost the
	 * slice from the model but not from the store. */
	gs__wr_slice_del(dw, p->s.id);
	gs__node_submit_detached(node, dw);
	gs_info("node", "slice=%s deleted while it was being created",
	        p->s.name);
	(void)gs_fail(&p->eb, GS_ERR_BUSY,
	              "slice %s was deleted while it was being created",
	              p->s.name);
}

/*
 * The MIG part of plan `p` (its decision has MIG work); lock NOT held.
 * Phase A marked GPU g busy and copied the inventory into p->priv: the
 * NVML steps run on it under node->mig_lock (readers go on meanwhile),
 * tried again while they fail for a passing reason; then, under
 * node->lock, gpu[g] is copied back, busy cleared and the slice takes
 * its instance. Returns with the lock held: true to go on, false when
 * the plan ended here (failed, left, or the slice is gone).
 */
static bool plan_mig(struct gs_node *node, struct gs__plan *p)
{
	int g = p->s.gpu_index, wait_ms = RETRY_FIRST_MS;
	struct gs_errbuf eb;
	struct gs__nslice *ns;
	bool stopping = false;
	gs_err err;

	for (int tries = 0;; tries++) {
		gs_errbuf_init(&eb);
		pthread_mutex_lock(&node->mig_lock);
		if (tries == 0 && node->mig_hook)
			node->mig_hook(node->mig_hook_arg, p->s.name);
		err = gs__mig_steps(p->priv, g, &p->dec, &p->made, &eb);
		pthread_mutex_unlock(&node->mig_lock);
		pthread_mutex_lock(&node->lock);
		if (err == GS_OK || gs__node_find_id(node, p->s.id) == NULL ||
		    !retry_ok(node, p, err, &eb, wait_ms))
			break;
		if (!retry_sleep(node, &wait_ms)) {
			stopping = true;
			break;
		}
		pthread_mutex_unlock(&node->lock);
	}

	node->gpus->gpu[g] = p->priv->gpu[g];
	node->mig_busy[g] = false;
	/* Its processes may start the moment the create answers: the new
	 * instance must be in the region's GPU table by then (a shim makes
	 * no context on a GPU its daemon does not know). */
	gs__slot_register_devices(node);
	ns = gs__node_find_id(node, p->s.id);
	if (ns == NULL) {
		plan_gone(node, p, NULL, false);
		plan_done(node, p, GS_ERR_BUSY);
		return false;
	}
	if (stopping) {
		plan_abandon(node, p);
		return false;
	}
	if (err == GS_OK) {
		err = gs__mig_claim(node, &ns->s, &p->dec, &eb);
		if (err == GS_OK)
			p->s = ns->s;
	}
	if (err) {
		char why[256];
		bool intent = false;

		snprintf(why, sizeof(why),
		         "not created: its MIG change failed: %s",
		         gs_errbuf_msg(&eb, err));
		p->eb = eb;
		plan_fail(node, p, ns, err, why, &intent);
		return false;
	}
	return true;
}

/* Lock held: waits until the create reports how phase A committed. */
static bool phase_a_saved(struct gs_node *node, struct gs__plan *p)
{
	while (p->a == A_UNKNOWN)
		pthread_cond_wait(&p->cv, &node->lock);
	return p->a == A_SAVED;
}

/*
 * Phase B of plan `p`; the lock is NOT held on entry, and is on return.
 * Brings up an MPS slice's server and writes the slice's limits to the
 * region off the lock (gs__slot_write may wait on the region's writers'
 * lock), then, under the lock, finds the slice again by id and makes it
 * READY, saved with its slice.created event. A step that fails for a
 * passing reason is tried again (both are idempotent); one that fails
 * for good makes the slice FAILED, and it goes.
 */
static void plan_finish(struct gs_node *node, struct gs__plan *p)
{
	const struct gs_slice *s = &p->s;
	const struct gs_adm_decision *dec = &p->dec;
	struct gs_slice_ref ref = {.slot = -1};
	struct gs_errbuf eb;
	struct gs__nslice *ns;
	bool has_ref = false, intent, mps_down;
	bool mps = node->mps_starter &&
	           (s->mode == GS_MODE_MPS || s->mode == GS_MODE_MIG_MPS);
	int wait_ms = RETRY_FIRST_MS;
	gs_err err;

	if (node->create_hook)
		node->create_hook(node->create_hook_arg, s->name);
	for (;;) {
		gs_errbuf_init(&eb);
		/* An MPS slice is ready once its server is: a process started
		 * in it before then would run as a context of its own, not
		 * held by CUDA_MPS_ACTIVE_THREAD_PERCENTAGE. */
		err = mps ? node->mps_starter(node->mps_starter_arg, s, &eb)
		          : GS_OK;
		mps_down = err != GS_OK;
		if (err == GS_OK && node->region) {
			struct gs_slice_ref r = ref;
			bool has = false;

			err = gs__slot_write(node->region, s, &r, &has, &eb);
			if (has) {
				ref = r;
				has_ref = true;
			}
		}
		gs_store_intent(node->store);
		intent = true;
		pthread_mutex_lock(&node->lock);
		ns = gs__node_find_id(node, s->id);
		if (ns == NULL) {
			gs_store_intent_drop(node->store);
			plan_gone(node, p, has_ref ? &ref : NULL, has_ref);
			plan_done(node, p, GS_ERR_BUSY);
			return;
		}
		if (err == GS_OK || !retry_ok(node, p, err, &eb, wait_ms))
			break;
		gs_store_intent_drop(node->store);
		if (!retry_sleep(node, &wait_ms)) {
			plan_abandon(node, p);
			return;
		}
		pthread_mutex_unlock(&node->lock);
	}
	gs__slot_took(ns, &ref, has_ref);
	if (err) {
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
			    "not created: its MPS control daemon could not start: %s",
			    gs_errbuf_msg(&eb, GS_ERR_UNAVAILABLE));
		else
			snprintf(why, sizeof(why),
			         "not created: its limits could not be written to the shared region: %s",
			         gs_errbuf_msg(&eb, err));
		(void)gs_fail(&p->eb, GS_ERR_UNAVAILABLE, "slice %s %s",
		              s->name, why);
		node->ctr.rejects++;
		plan_fail(node, p, ns, GS_ERR_UNAVAILABLE, why, &intent);
		return;
	}
	ns->s.state = GS_SLICE_READY;
	ns->s.updated_ns = gs_now_ns();
	ns->s.mig_plan[0] = '\0'; /* carried out */
	/* the ledger skipped it till now */
	gs__ledger_start(node, ns->s.id, ns->s.updated_ns);
	gs__wr_slice_put(&p->wr, &ns->s);
	gs__wr_event(
	    &p->wr, "slice.created", &ns->s,
	    "mode=%s memory=%llu compute=%d priority=%s%s%s%s%s",
	    gs_mode_name(s->mode), (unsigned long long)s->spec.memory_bytes,
	    s->spec.compute_pct, gs_priority_name(s->spec.priority),
	    s->borrowed ? " borrowed" : "", dec->mode_why[0] ? " (" : "",
	    dec->mode_why, dec->mode_why[0] ? ")" : "");
	node->ctr.creates++;
	p->result = ns->s;
	gs__node_submit_announced(node, &p->wr, &intent);
	p->has_wr = true;
	p->wr_ready = true;
	plan_done(node, p, GS_OK);
}

/* Carries out plan `p`; lock NOT held on entry, held on return. */
static void plan_run(struct gs_node *node, struct gs__plan *p)
{
	if (p->priv != NULL && !plan_mig(node, p))
		return;
	if (p->priv == NULL)
		pthread_mutex_lock(&node->lock);
	if (!phase_a_saved(node, p)) {
		/* The create answered its commit's error; the model went
		 * back to the store's. */
		if (gs__node_find_id(node, p->s.id) == NULL)
			plan_undo_mig(node, p, &p->s);
		plan_done(node, p, GS_ERR_IO);
		return;
	}
	pthread_mutex_unlock(&node->lock);
	plan_finish(node, p);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct gs_node *node = w->node;
	struct gs__actor *a = node->actor;

	pthread_mutex_lock(&node->lock);
	while (!a->stop) {
		struct gs__plan *p = take(a, w);

		if (p == NULL) {
			pthread_cond_wait(&w->cv, &node->lock);
			continue;
		}
		pthread_mutex_unlock(&node->lock);
		plan_run(node, p);
	}
	pthread_mutex_unlock(&node->lock);
	return NULL;
}

gs_err gs__actor_start(struct gs_node *node, struct gs_errbuf *eb)
{
	struct gs__actor *a = calloc(1, sizeof(*a));
	int n = node->gpus && node->gpus->n > 0 ? node->gpus->n : 1;

	if (a == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	pthread_cond_init(&a->cv, NULL);
	node->actor = a;
	for (int i = 0; i < n && i < GS_GPUS_MAX; i++) {
		a->w[i].node = node;
		a->w[i].gpu = i;
		pthread_cond_init(&a->w[i].cv, NULL);
		if (pthread_create(&a->w[i].t, NULL, worker_main, &a->w[i]) !=
		    0) {
			gs__actor_stop(node);
			return gs_fail(eb, GS_ERR_NOMEM,
			               "cannot start the actor's threads");
		}
		a->n = i + 1;
	}
	return GS_OK;
}

void gs__actor_stop(struct gs_node *node)
{
	struct gs__actor *a = node->actor;

	if (a == NULL)
		return;
	pthread_mutex_lock(&node->lock);
	a->stop = true;
	pthread_cond_broadcast(&a->cv);
	for (int i = 0; i < a->n; i++)
		pthread_cond_broadcast(&a->w[i].cv);
	pthread_mutex_unlock(&node->lock);
	for (int i = 0; i < a->n; i++) {
		pthread_join(a->w[i].t, NULL);
		pthread_cond_destroy(&a->w[i].cv);
	}
	while (a->head) {
		struct gs__plan *p = a->head;

		a->head = p->next;
		gs__plan_free(p);
	}
	pthread_cond_destroy(&a->cv);
	free(a);
	node->actor = NULL;
}

/*
 * The create's wait for its last batch; lock NOT held. A READY row that
 * could not be saved: the model went back to the store's (resync), where
 * the slice is still PENDING and no one would finish it: it fails, and
 * the instance made for it goes.
 */
static gs_err await_saved(struct gs_node *node, struct gs__plan *p,
                          struct gs_errbuf *eb)
{
	gs_err err = gs__node_wait(node, &p->wr, p->wr_ready ? eb : NULL);
	struct gs__nslice *ns;
	struct gs__wr *fw;

	if (err == GS_OK || !p->wr_ready)
		return err;
	fw = gs__wr_new();
	pthread_mutex_lock(&node->lock);
	ns = gs__node_find_id(node, p->s.id);
	if (ns != NULL && ns->s.state == GS_SLICE_PENDING)
		gs__node_fail(node, ns, NULL, fw,
		              "not created: it could not be saved as ready");
	if (gs__node_find_id(node, p->s.id) == NULL)
		plan_undo_mig(node, p, &p->s);
	gs__node_submit_detached(node, fw);
	pthread_mutex_unlock(&node->lock);
	return err;
}

gs_err gs__actor_await(struct gs_node *node, struct gs__plan *p, gs_err a_err,
                       struct gs_node_create_res *res, struct gs_errbuf *eb)
{
	struct timespec until;
	gs_err err;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ACTOR_DEADLINE_S;
	pthread_mutex_lock(&node->lock);
	p->a = a_err ? A_LOST : A_SAVED;
	pthread_cond_broadcast(&p->cv);
	if (a_err && !p->done) {
		/* The create answers its commit's error; the actor undoes. */
		p->creator = false;
		pthread_mutex_unlock(&node->lock);
		return a_err;
	}
	while (!p->done && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&p->cv, &node->lock, &until);
	if (!p->done) {
		p->creator = false;
		pthread_mutex_unlock(&node->lock);
		return gs_fail(eb, GS_ERR_TIMEOUT,
		               "slice %s is not ready after %d s; it shows as pending until it is created or fails",
		               p->s.name, ACTOR_DEADLINE_S);
	}
	pthread_mutex_unlock(&node->lock);
	if (a_err) {
		/* Done before phase A's error was known (a failed MIG step,
		 * the slice lost to the resync): the commit's error wins. */
		if (p->has_wr)
			(void)gs__node_wait(node, &p->wr, NULL);
		gs__plan_free(p);
		return a_err;
	}
	err = p->err;
	if (err && p->eb.set)
		(void)gs_fail(eb, err, "%s", p->eb.msg);
	if (p->has_wr) {
		gs_err werr = await_saved(node, p, err ? NULL : eb);

		if (!err)
			err = werr;
	}
	if (!err)
		res->slice = p->result;
	gs__plan_free(p);
	return err;
}
