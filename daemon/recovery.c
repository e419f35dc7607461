/*
 * recovery.c - bringing the node back in line with what it finds: at
 * start (gs_node_recover: region slices the store does not hold, slices
 * whose GPU or MIG instance is gone, creates a stop cut short - resumed
 * by the actor, a MIG change cut short carried on from its saved plan,
 * or failed where their GPU is gone or their plan unknown - on_exit=
 * delete slices whose processes are gone), and once a second
 * (gs_node_housekeep: region files a tenant cut short or whose lock it
 * holds, dead tenants' process entries, region slots a failed write left
 * missing, on_exit=delete). Owns no state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actor.h"
#include "gs/log.h"
#include "gs/proc.h"
#include "remove.h"
#include "mig.h"
#include "node_int.h"
#include "slots.h"

/* Whether any process of the slice is still alive. Lock held. */
static bool slice_has_live_procs(struct gs_node *node, struct gs__nslice *ns)
{
	for (int i = 0; i < ns->s.n_pids; i++)
		if (gs_proc_uid(ns->s.pids[i]) >= 0)
			return true;
	/* Not knowing (the usage lock timed out: < 0) counts as live, so a
	 * tenant holding that lock cannot get a slice cleaned away. */
	if (node->region && ns->has_ref &&
	    gs_region_slice_nprocs(node->region, &ns->ref) != 0)
		return true;
	return false;
}

/*
 * Lock held: resumes PENDING slice `ns` on GPU g (the actor carries its
 * plan on), or answers false (it fails). A MIG slice whose instance is
 * there (taken in phase A, by uuid) moves to its current ids; one whose
 * MIG change was under way (its saved plan, gs_slice.mig_plan) has it
 * carried out again: the steps are idempotent, so the instance the
 * change made is found and taken, a step not done is done, and a plan
 * that fails now undoes what it made. A MIG slice with neither (a row
 * from before the plans were saved) fails.
 */
static bool pending_resume(struct gs_node *node, struct gs__nslice *ns, int g)
{
	const struct gs_gpu *gp = &node->gpus->gpu[g];
	struct gs_adm_decision dec;

	ns->s.gpu_index = g;
	if (!gs_mode_is_mig(ns->s.mode))
		return gs__actor_resume(node, ns, NULL);
	if (ns->s.mig_uuid[0]) {
		for (int k = 0; k < gp->n_mig; k++)
			if (strcmp(gp->mig[k].uuid, ns->s.mig_uuid) == 0) {
				ns->s.gi_id = gp->mig[k].gi_id;
				ns->s.ci_id = gp->mig[k].ci_id;
				return gs__actor_resume(node, ns, NULL);
			}
		return false;
	}
	if (!ns->s.mig_plan[0] || node->mig_busy[g] ||
	    !gs__mig_plan_parse(ns->s.mig_plan, gp, &dec))
		return false;
	ns->s.gi_id = ns->s.ci_id = -1;
	return gs__actor_resume(node, ns, &dec);
}

gs_err gs_node_recover(struct gs_node *node, int *kept, int *cleaned,
                       struct gs_errbuf *eb)
{
	struct gs__wr wr;
	int n_kept = 0, n_cleaned = 0;

	pthread_mutex_lock(&node->lock);
	gs__wr_init(&wr);
	if (node->region) {
		struct gs_slice_ref it = {.slot = -1};

		(void)gs_region_reap(node->region);
		/* Region slices the model does not hold: an unacknowledged
		 * create, or a delete whose region step never ran. */
		while (gs_region_slice_next(node->region, &it)) {
			struct gs_slice_limits lim;

			if (gs_region_slice_limits(node->region, &it, &lim) !=
			    GS_OK)
				continue;
			if (gs__node_find(node, lim.name) == NULL) {
				(void)gs_region_slice_delete(node->region, &it,
				                             NULL);
				gs_info("node",
				        "slice=%s dropped from the region: not in the store",
				        lim.name);
			}
		}
	}
	for (int i = 0; i < node->n;) {
		struct gs__nslice *ns = node->v[i];
		int g = gs_gpus_find(node->gpus, ns->s.gpu_uuid);

		/* Saved PENDING: gpusliced stopped while it was being
		 * created (its create was never answered). Its plan resumes
		 * where the GPU is still there (pending_resume); otherwise it
		 * never comes back as a ready slice (an instance it took
		 * goes, unless another slice holds it). */
		if (ns->s.state == GS_SLICE_PENDING) {
			struct gs_slice failed = ns->s;

			if (g >= 0 && pending_resume(node, ns, g)) {
				n_kept++;
				i++;
				continue;
			}
			gs__node_fail(node, ns, NULL, &wr,
			              "not created: gpusliced stopped while it was being created");
			if (g >= 0 && gs_mode_is_mig(failed.mode))
				gs__mig_drop_unheld(node, g, failed.mig_uuid);
			n_cleaned++;
			continue;
		}
		(void)gs__slot_put(node, ns, NULL);
		if (g < 0) {
			gs__node_remove(node, ns, &wr, "slice.cleaned",
			                "its GPU is gone");
			n_cleaned++;
			continue;
		}
		ns->s.gpu_index = g;
		if (gs_mode_is_mig(ns->s.mode)) {
			const struct gs_gpu *gp = &node->gpus->gpu[g];
			bool found = false;

			for (int k = 0; k < gp->n_mig; k++)
				if (strcmp(gp->mig[k].uuid, ns->s.mig_uuid) ==
				    0) {
					found = true;
					ns->s.gi_id = gp->mig[k].gi_id;
					ns->s.ci_id = gp->mig[k].ci_id;
				}
			if (!found) {
				gs__node_remove(node, ns, &wr, "slice.cleaned",
				                "its MIG instance is gone");
				n_cleaned++;
				continue;
			}
		}
		if (ns->s.on_exit == GS_ON_EXIT_DELETE && ns->s.had_procs &&
		    !slice_has_live_procs(node, ns)) {
			gs__node_remove(
			    node, ns, &wr, "slice.cleaned",
			    "its processes are gone (on_exit=delete)");
			n_cleaned++;
			continue;
		}
		if (ns->s.n_pids) {
			int k = 0;

			for (int j = 0; j < ns->s.n_pids; j++)
				if (gs_proc_uid(ns->s.pids[j]) >= 0)
					ns->s.pids[k++] = ns->s.pids[j];
			if (k != ns->s.n_pids) {
				ns->s.n_pids = k;
				gs__wr_slice_put(&wr, &ns->s);
			}
		}
		n_kept++;
		i++;
	}
	gs__node_submit(node, &wr);
	pthread_mutex_unlock(&node->lock);
	if (kept)
		*kept = n_kept;
	if (cleaned)
		*cleaned = n_cleaned;
	return gs__node_wait(node, &wr, eb);
}

/*
 * Region files a tenant cut short (gs_region_truncated): the daemon lives
 * on (its pages there read as zeros), says so once per file, and builds
 * the shared file afresh (once per housekeeping tick at most).
 */
static void report_cut_files(struct gs_node *node)
{
	struct gs_region_cut cut[16];
	bool shared;
	int n = gs_region_truncated(node->region, &shared, cut, 16);

	if (shared) {
		gs_error("node", "region: the shared usage file was cut short (a tenant truncated it)");
		struct gs_errbuf eb = {0};
		gs_err err = gs_region_rebuild_usage(node->region, &eb);

		if (err != GS_OK)
			gs_error("node",
			         "region: the shared usage file cannot be rebuilt: %s (new processes cannot open the region until gpusliced restarts)",
			         gs_errbuf_msg(&eb, err));
		else
			gs_info("node",
			        "region: the shared usage file was rebuilt; new processes take turns again");
		gs_node_event(node, "region.truncated", "", "", -1,
		              "the shared usage file was cut short (a tenant truncated it); %s",
		              err == GS_OK
		                  ? "rebuilt: processes started from now on take turns again, running ones keep their caps but lose turns and priorities"
		                  : "it could not be rebuilt");
	}
	for (int i = 0; i < n; i++) {
		char name[48];

		if (cut[i].slot >= 0)
			snprintf(name, sizeof(name),
			         "the private books of slot %d",
			         (int)cut[i].slot);
		else
			snprintf(name, sizeof(name), "usage.%u",
			         (unsigned)cut[i].uid);
		gs_error("node",
		         "region: %s was cut short (by its owner, uid %u, or the pod it is mounted in); its slices' books read as zeros here",
		         name, (unsigned)cut[i].uid);
		gs_node_event(node, "region.truncated", "", "", -1,
		              "%s was cut short by its owner; the books of its slices are lost",
		              name);
	}
}

/*
 * The once-a-second pass: reap dead tenants from the region, repair region
 * slots that a failed write left missing, and delete on_exit=delete slices
 * whose processes are all gone. Returns the number deleted.
 */
int gs_node_housekeep(struct gs_node *node)
{
	struct gs__wr *wr = gs__wr_new();
	int n_cleaned = 0;

	if (node->region) {
		struct gs_errbuf eb = {0};
		bool rebuilt = false;

		report_cut_files(node);
		if (gs_region_repair_shared(node->region, &rebuilt, &eb) !=
		    GS_OK)
			gs_warn("node", "region: %s", eb.msg);
		if (rebuilt) {
			gs_error("node",
			         "region: the shared usage lock was out of reach for 3 s (a tenant holds it); the file was rebuilt");
			gs_node_event(
			    node, "region.repaired", "", "", -1,
			    "the shared usage lock was out of reach for 3 s (a tenant holds it); the file was rebuilt and running processes move to it");
		}
	}
	/* Off the node lock: reaping takes the tenants' usage mutex. It
	 * frees entries of dead processes and entries no process could have
	 * written for itself (gs_region_reap). */
	if (node->region) {
		int reaped = gs_region_reap(node->region);

		if (reaped > 0)
			gs_info("node",
			        "region: %d process entries reaped (gone, of another uid than recorded, copies, or past the per-user limit)",
			        reaped);
	}
	pthread_mutex_lock(&node->lock);
	/* MIG layouts changed behind our back (nvidia-smi) show here. */
	(void)gs_gpus_refresh(node->gpus, NULL);
	gs__slot_register_devices(node);
	for (int i = 0; i < node->n;) {
		struct gs__nslice *ns = node->v[i];
		bool live;

		/* Its plan (actor.c) finishes or fails it. */
		if (ns->s.state == GS_SLICE_PENDING) {
			i++;
			continue;
		}
		if (node->region && !ns->has_ref)
			(void)gs__slot_put(node, ns, NULL);
		live = slice_has_live_procs(node, ns);
		if (live && !ns->s.had_procs) {
			ns->s.had_procs = true;
			gs__wr_slice_put(wr, &ns->s);
		}
		if (live)
			ns->procs_seen = true;
		if (ns->s.on_exit == GS_ON_EXIT_DELETE && ns->s.had_procs &&
		    !live) {
			gs_info("node",
			        "slice=%s deleted: its processes are gone",
			        ns->s.name);
			gs__node_remove(
			    node, ns, wr, "slice.cleaned",
			    "its processes are gone (on_exit=delete)");
			node->ctr.deletes++;
			n_cleaned++;
			continue;
		}
		i++;
	}
	gs__node_submit_detached(node, wr);
	pthread_mutex_unlock(&node->lock);
	return n_cleaned;
}
