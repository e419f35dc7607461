/*
 * mig.c - MIG instances for MIG slices: the NVML steps a create's
 * decision names (MIG on, instances destroyed and created, MIG off), a
 * slice taking its instance, and the instances a failed or unfinished
 * create leaves behind undone. Owns node->mig_lock and node->mig_busy.
 *
 * Lock rules for MIG changes:
 *   - node->gpus changes only under node->lock (a create's MIG steps
 *     work on a copy and write back only their GPU's entry), so its
 *     readers under the lock see a consistent inventory;
 *   - node->mig_lock serialises NVML MIG changes. Order: node->lock,
 *     then mig_lock. gs__mig_undo and gs__mig_drop_unheld take it with
 *     node->lock held (rare failure paths: they may wait out a change);
 *     a create's MIG steps hold it alone and release it before taking
 *     node->lock;
 *   - mig_busy[g], under node->lock, from phase A to the copy back:
 *     admission places nothing on g (gs_adm_gpu.busy), and gs__mig_undo /
 *     gs__mig_drop_unheld leave g's instances be (they stay idle), since
 *     the copy written back would not show their change.
 */
#include "mig.h"

#include <stdio.h>
#include <string.h>

#include "gs/catalog.h"
#include "gs/log.h"
#include "node_int.h"

/* Whether a MIG instance at gi_id of GPU g is held by a slice. */
bool gs__mig_in_use(struct gs_node *node, int g, int gi_id)
{
	for (int i = 0; i < node->n; i++) {
		const struct gs_slice *s = &node->v[i]->s;

		if (s->gpu_index != g || !gs_mode_is_mig(s->mode))
			continue;
		if (s->gi_id == gi_id)
			return true;
	}
	return false;
}

/* Fills the slice's MIG fields from instance gi_id of its GPU. */
static bool mig_take(struct gs_node *node, struct gs_slice *s, int gi_id)
{
	const struct gs_gpu *gp = &node->gpus->gpu[s->gpu_index];

	for (int m = 0; m < gp->n_mig; m++) {
		const struct gs_mig_profile *p;

		if (gp->mig[m].gi_id != gi_id)
			continue;
		p = gp->cat ? gs_catalog_profile_by_id(gp->cat,
		                                       gp->mig[m].profile_id)
		            : NULL;
		snprintf(s->mig_uuid, sizeof(s->mig_uuid), "%s",
		         gp->mig[m].uuid);
		snprintf(s->mig_profile, sizeof(s->mig_profile), "%s",
		         p ? p->name : gp->mig[m].profile);
		s->gi_id = gp->mig[m].gi_id;
		s->ci_id = gp->mig[m].ci_id;
		return true;
	}
	return false;
}

/* Whether decision `d` changes its GPU's MIG mode or layout. */
bool gs__mig_has_work(const struct gs_adm_decision *d)
{
	return d->mig_on || d->n_steps > 0 || d->mig_off;
}

/* The instance of profile `profile_id` at `start` on gp, or NULL. */
static const struct gs_mig_dev *mig_at(const struct gs_gpu *gp, int profile_id,
                                       int start)
{
	for (int m = 0; m < gp->n_mig; m++)
		if (gp->mig[m].profile_id == profile_id &&
		    gp->mig[m].start == start)
			return &gp->mig[m];
	return NULL;
}

static void made_add(struct gs__mig_made *made, const char *uuid)
{
	if (made == NULL || !uuid[0] || made->n >= GS_ADM_MAX_STEPS)
		return;
	for (int k = 0; k < made->n; k++)
		if (strcmp(made->uuid[k], uuid) == 0)
			return;
	snprintf(made->uuid[made->n++], sizeof(made->uuid[0]), "%s", uuid);
}

/*
 * The NVML part of decision `d` on GPU g of `gpus` (node->mig_lock held;
 * node->lock not needed when `gpus` is a private copy): MIG on, the
 * steps in order (destroys name idle instances, creates a profile at a
 * placement), MIG off. gpus->gpu[g] is refreshed as it goes. Each step
 * looks first whether its effect holds (MIG already on or off, the
 * instance to destroy gone, one of the profile at the placement there),
 * so running the steps again after a failure or a restart carries on
 * where they stopped. On failure the steps done stay done; *made names
 * the instances the create steps made (or found), for the caller to undo.
 */
gs_err gs__mig_steps(struct gs_gpus *gpus, int g,
                     const struct gs_adm_decision *d, struct gs__mig_made *made,
                     struct gs_errbuf *eb)
{
	struct gs_gpu *gp = &gpus->gpu[g];
	gs_err err;

	if (d->mig_on && !gp->mig_on) {
		err = gs_gpus_set_mig(gpus, g, true, eb);
		if (err)
			return err;
		gs_info("node", "gpu=%d MIG mode on", g);
	}
	for (int k = 0; k < d->n_steps; k++) {
		const struct gs_adm_step *st = &d->steps[k];
		const char *pname = st->profile ? st->profile->name : "?";
		const struct gs_mig_dev *have;
		struct gs_errbuf ceb = {0};
		struct gs_mig_dev dev;

		if (st->op == GS_MIG_DESTROY) {
			bool there = false;

			for (int m = 0; m < gp->n_mig; m++)
				there |= gp->mig[m].gi_id == st->gi_id &&
				         gp->mig[m].start == st->start;
			if (!there)
				continue;
			err = gs_gpus_mig_destroy(gpus, g, st->gi_id, eb);
			if (err)
				return err;
			gs_info("node",
			        "gpu=%d MIG instance %s@%d destroyed (idle)", g,
			        pname, st->start);
			continue;
		}
		have = mig_at(gp, st->profile->profile_id, st->start);
		if (have != NULL) {
			made_add(made, have->uuid);
			continue;
		}
		err = gs_gpus_mig_create(gpus, g, st->profile->profile_id,
		                         st->start, &dev, &ceb);
		/* The placement may be held by a GPU instance without a
		 * compute instance: this create, cut short by a kill -9
		 * between its two NVML calls. Undone, then made again. */
		if (err && st->start >= 0 &&
		    gs_gpus_mig_drop_half(gpus, g, st->profile->profile_id,
		                          st->start)) {
			gs_info("node",
			        "gpu=%d MIG instance %s@%d without a compute instance (a create cut short) destroyed",
			        g, pname, st->start);
			gs_errbuf_init(&ceb);
			err =
			    gs_gpus_mig_create(gpus, g, st->profile->profile_id,
			                       st->start, &dev, &ceb);
		}
		if (err)
			return gs_fail(eb, err, "%s", gs_errbuf_msg(&ceb, err));
		have = mig_at(gp, st->profile->profile_id, st->start);
		made_add(made, have ? have->uuid : dev.uuid);
		gs_info("node", "gpu=%d MIG instance %s@%d created", g, pname,
		        st->start);
	}
	if (d->mig_off && gp->mig_on) {
		err = gs_gpus_set_mig(gpus, g, false, eb);
		if (err)
			return err;
		gs_info("node",
		        "gpu=%d MIG mode off (no slice used its instances)", g);
	}
	return GS_OK;
}

void gs__mig_plan_format(const struct gs_adm_decision *d, char *out, size_t len)
{
	size_t off;
	int n;

	n = snprintf(out, len, "v1 on=%d off=%d prof=%d gi=%d take=%d;",
	             d->mig_on ? 1 : 0, d->mig_off ? 1 : 0,
	             d->profile ? d->profile->profile_id : -1, d->gi_id,
	             d->take_start);
	off = n > 0 ? (size_t)n : 0;
	for (int k = 0; k < d->n_steps && off < len; k++) {
		const struct gs_adm_step *st = &d->steps[k];
		int pid = st->profile ? st->profile->profile_id : -1;

		if (st->op == GS_MIG_DESTROY)
			n = snprintf(out + off, len - off, "d%d:%d@%d;",
			             st->gi_id, pid, st->start);
		else
			n = snprintf(out + off, len - off, "c%d@%d;", pid,
			             st->start);
		off += n > 0 ? (size_t)n : 0;
	}
	/* Cut short: unreadable, so a restart fails the slice rather than
	 * carry out part of its plan. */
	if (off >= len)
		out[0] = '\0';
}

bool gs__mig_plan_parse(const char *text, const struct gs_gpu *gp,
                        struct gs_adm_decision *d)
{
	int on, off, prof, gi, take, used = 0;

	memset(d, 0, sizeof(*d));
	d->gi_id = -1;
	if (gp->cat == NULL ||
	    sscanf(text, "v1 on=%d off=%d prof=%d gi=%d take=%d;%n", &on, &off,
	           &prof, &gi, &take, &used) != 5 ||
	    used == 0)
		return false;
	d->mig_on = on != 0;
	d->mig_off = off != 0;
	d->gi_id = gi;
	d->take_start = take;
	d->profile = prof >= 0 ? gs_catalog_profile_by_id(gp->cat, prof)
	                       : NULL;
	if (prof >= 0 && d->profile == NULL)
		return false;
	text += used;
	while (*text) {
		struct gs_adm_step *st;
		int a, b, c;

		if (d->n_steps == GS_ADM_MAX_STEPS)
			return false;
		st = &d->steps[d->n_steps];
		used = 0;
		if (sscanf(text, "d%d:%d@%d;%n", &a, &b, &c, &used) == 3 &&
		    used > 0) {
			st->op = GS_MIG_DESTROY;
			st->gi_id = a;
		} else if (sscanf(text, "c%d@%d;%n", &b, &c, &used) == 2 &&
		           used > 0) {
			st->op = GS_MIG_CREATE;
			st->gi_id = -1;
		} else {
			return false;
		}
		st->start = c;
		st->profile =
		    b >= 0 ? gs_catalog_profile_by_id(gp->cat, b) : NULL;
		if (st->op == GS_MIG_CREATE && st->profile == NULL)
			return false;
		d->n_steps++;
		text += used;
	}
	return true;
}

/*
 * Lock held, the MIG steps done: a MIG-mode slice `s` takes the instance
 * decision `d` names, or the first idle one of its profile (at
 * d->take_start when >= 0). OUT: s->mig_uuid, mig_profile, gi_id, ci_id.
 */
gs_err gs__mig_claim(struct gs_node *node, struct gs_slice *s,
                     const struct gs_adm_decision *d, struct gs_errbuf *eb)
{
	int g = s->gpu_index;
	const struct gs_gpu *gp = &node->gpus->gpu[g];

	if (!gs_mode_is_mig(d->mode))
		return GS_OK;
	if (d->gi_id >= 0) {
		if (!mig_take(node, s, d->gi_id))
			return gs_fail(eb, GS_ERR_INTERNAL,
			               "MIG instance %d of gpu %d vanished",
			               d->gi_id, g);
		return GS_OK;
	}
	for (int m = 0; m < gp->n_mig; m++) {
		if (gp->mig[m].profile_id != d->profile->profile_id ||
		    (d->take_start >= 0 && gp->mig[m].start != d->take_start) ||
		    gs__mig_in_use(node, g, gp->mig[m].gi_id))
			continue;
		if (mig_take(node, s, gp->mig[m].gi_id))
			return GS_OK;
	}
	if (d->take_start >= 0)
		return gs_fail(eb, GS_ERR_DRIVER,
		               "the %s@%d instance did not appear after creation",
		               d->profile->name, d->take_start);
	return gs_fail(eb, GS_ERR_DRIVER,
	               "the %s instance did not appear after creation",
	               d->profile->name);
}

/*
 * Lock held: undoes the MIG instance a failed creation made for slice `s`
 * (decision `d` asked for a new one; `s` is out of the model), so that a
 * refused request leaves no instance behind. An instance it only took
 * stays (it was there), as does one another slice holds by now.
 */
void gs__mig_undo(struct gs_node *node, const struct gs_slice *s,
                  const struct gs_adm_decision *d)
{
	struct gs_errbuf eb = {0};

	gs_err err;

	if (!gs_mode_is_mig(d->mode) || d->gi_id >= 0 || s->gi_id < 0 ||
	    gs__mig_in_use(node, s->gpu_index, s->gi_id))
		return;
	if (node->mig_busy[s->gpu_index]) {
		gs_info(
		    "node",
		    "gpu=%d MIG instance %d made for %s stays idle (the GPU's layout is changing)",
		    s->gpu_index, s->gi_id, s->name);
		return;
	}
	pthread_mutex_lock(&node->mig_lock);
	err = gs_gpus_mig_destroy(node->gpus, s->gpu_index, s->gi_id, &eb);
	pthread_mutex_unlock(&node->mig_lock);
	if (err != GS_OK)
		gs_warn("node",
		        "slice=%s gpu=%d MIG instance %d made for it not destroyed: %s (it stays idle, for the next slice)",
		        s->name, s->gpu_index, s->gi_id, eb.msg);
	else
		gs_info("node",
		        "gpu=%d MIG instance %d made for %s destroyed (the slice was not created)",
		        s->gpu_index, s->gi_id, s->name);
}

/*
 * Destroys MIG instance `uuid` of GPU g unless a slice of the model names
 * it (by uuid: gi ids of slices not yet recovered may be stale): the
 * instance a create that never finished made or took. Lock held.
 */
void gs__mig_drop_unheld(struct gs_node *node, int g, const char *uuid)
{
	const struct gs_gpu *gp = &node->gpus->gpu[g];
	struct gs_errbuf eb = {0};
	int gi = -1;
	gs_err err;

	for (int i = 0; i < node->n; i++)
		if (gs_mode_is_mig(node->v[i]->s.mode) &&
		    strcmp(node->v[i]->s.mig_uuid, uuid) == 0)
			return;
	for (int k = 0; k < gp->n_mig; k++)
		if (strcmp(gp->mig[k].uuid, uuid) == 0)
			gi = gp->mig[k].gi_id;
	if (gi < 0 || node->mig_busy[g])
		return;
	pthread_mutex_lock(&node->mig_lock);
	err = gs_gpus_mig_destroy(node->gpus, g, gi, &eb);
	pthread_mutex_unlock(&node->mig_lock);
	if (err != GS_OK)
		gs_warn("node",
		        "gpu=%d MIG instance %d of a slice that was never created not destroyed: %s (it stays idle)",
		        g, gi, eb.msg);
	else
		gs_info("node",
		        "gpu=%d MIG instance %d of a slice that was never created destroyed",
		        g, gi);
}
