/*
 * admission.c - the node's admission decision (see gs/admission.h): slot
 * and per-user limits, the mode, placement, team quotas, reclaim and the
 * MIG changes a placement needs, over a snapshot the caller owns.
 *
 * Placement asks core's placement (gs/placement.h) each time, on an
 * inventory built from the snapshot with some slices left out (`skip`:
 * the reclaim victims tried so far); a node holds at most a few hundred
 * slices, so a build costs microseconds. Everything that is decided here
 * used to be decided under the daemon's lock in the middle of acting;
 * the messages are the ones users and tests have always seen.
 *
 * Nothing here keeps state between calls. The only allocations are the
 * inventory, the quota lists and the victims the decision owns.
 */
#include "gs/admission.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gs/advisor.h"
#include "gs/frag.h"
#include "gs/swap.h"

/* The refusal for a request that only a busy GPU could take. */
#define BUSY_FMT "gpu %d is changing its MIG layout; try again"

/* Where one try puts the slice (the decision's placement part). */
struct place {
	int gpu;
	int gi_id; /* instance to use, or -1 */
	enum gs_slice_mode mode;
	const struct gs_mig_profile *profile; /* MIG modes */
	bool need_create;                     /* make an instance first */
	bool need_mig_off;                    /* turn the GPU's MIG off */
	int mig_start; /* exact placement asked for (spec mig-start), or -1 */
	uint64_t memory_bytes; /* what it will hold */
	int compute_pct;
	char why[GS_ADM_WHY_MAX]; /* how mode auto chose */
};

/* Inventory instance index -> (snapshot GPU, instance gi_id). */
struct inv_map {
	int n;
	int gpu[GS_ADM_GPUS_MAX * GS_ADM_MIG_MAX];
	int gi[GS_ADM_GPUS_MAX * GS_ADM_MIG_MAX];
	char swap_why[GS_ADM_WHY_MAX]; /* a GPU oversubscription closed */
};

/* ---- the snapshot ---- */

/* GPU index by index text or UUID (a GPU's or one of its instances'). */
/* The UUID of the snapshot's GPU i (k -1) or of its k-th MIG instance. */
static const char *adm_uuid(const void *ctx, int i, int k)
{
	const struct gs_adm_gpu *g = &((const struct gs_adm_snapshot *)ctx)->gpu[i];

	if (k < 0)
		return g->uuid ? g->uuid : "";
	if (k >= g->n_mig)
		return NULL;
	return g->mig[k].uuid ? g->mig[k].uuid : "";
}

static int gpu_find(const struct gs_adm_snapshot *sn, const char *sel)
{
	return gs_gpu_index_of(sel, sn->n_gpus, adm_uuid, sn);
}

static bool gpu_selected(const struct gs_adm_snapshot *sn,
                         const struct gs_gpu_selector *sel, int i)
{
	const struct gs_adm_gpu *g = &sn->gpu[i];

	switch (sel->kind) {
	case GS_GPU_ANY:
		return true;
	case GS_GPU_INDEX:
		return sel->index == i;
	case GS_GPU_UUID:
		return gpu_find(sn, sel->uuid) == i;
	case GS_GPU_MODEL:
		return strcasecmp(sel->model, g->model) == 0 ||
		       (g->cat && gs_catalog_find(sel->model) == g->cat);
	}
	return false;
}

/* The GPU that answers mode auto: the first the selector matches. */
static const struct gs_adm_gpu *
first_selected(const struct gs_adm_snapshot *sn,
               const struct gs_gpu_selector *sel)
{
	for (int i = 0; i < sn->n_gpus; i++)
		if (gpu_selected(sn, sel, i))
			return &sn->gpu[i];
	return NULL;
}

static bool skipped(const bool *skip, int i)
{
	return skip && skip[i];
}

/* The slice holding instance gi_id of GPU g, or NULL. */
static const struct gs_adm_slice *mig_holder(const struct gs_adm_snapshot *sn,
                                             int g, int gi_id, const bool *skip)
{
	for (int i = 0; i < sn->n_slices; i++) {
		const struct gs_adm_slice *s = &sn->slices[i];

		if (skipped(skip, i) || s->gpu != g || !gs_mode_is_mig(s->mode))
			continue;
		if (s->gi_id == gi_id)
			return s;
	}
	return NULL;
}

void gs_adm_slice_use(const struct gs_adm_gpu *gpu,
                      const struct gs_adm_slice *s, struct gs_qvec *v)
{
	memset(v, 0, sizeof(*v));
	if (s->mode == GS_MODE_MIG) {
		const struct gs_mig_profile *p =
		    gpu && gpu->cat && s->mig_profile
		        ? gs_catalog_profile(gpu->cat, s->mig_profile)
		        : NULL;

		v->v[GS_QRES_MIG] = p ? p->compute_slices : 1;
		v->v[GS_QRES_MEMORY] = p ? (int64_t)(p->memory_mib << 20)
		                         : (int64_t)s->memory_bytes;
		return;
	}
	v->v[GS_QRES_MEMORY] = (int64_t)s->memory_bytes;
	v->v[GS_QRES_COMPUTE] = s->compute_pct;
}

static void slice_use(const struct gs_adm_snapshot *sn,
                      const struct gs_adm_slice *s, struct gs_qvec *v)
{
	gs_adm_slice_use(
	    s->gpu >= 0 && s->gpu < sn->n_gpus ? &sn->gpu[s->gpu] : NULL, s, v);
}

static void node_capacity(const struct gs_adm_snapshot *sn, struct gs_qvec *cap)
{
	memset(cap, 0, sizeof(*cap));
	for (int i = 0; i < sn->n_gpus; i++) {
		const struct gs_adm_gpu *g = &sn->gpu[i];

		cap->v[GS_QRES_MEMORY] += (int64_t)g->memory_bytes;
		if (sn->cfg.oversubscribe > 1.0 && !g->mig_on)
			cap->v[GS_QRES_MEMORY] +=
				(int64_t)((double)g->memory_bytes *
				          (sn->cfg.oversubscribe - 1.0));
		cap->v[GS_QRES_COMPUTE] += 100;
		if (g->cat && g->mig_capable)
			cap->v[GS_QRES_MIG] += g->cat->compute_slices;
	}
}

/* ---- rules 1 and 2: slots and per-user limits ---- */

static gs_err user_limits(const struct gs_adm_snapshot *sn,
                          const struct gs_adm_request *req,
                          struct gs_errbuf *eb)
{
	struct gs_qvec cap, use;
	int64_t mem = (int64_t)req->spec.memory_bytes, limit;
	int n = 0;

	for (int i = 0; i < sn->n_slices; i++) {
		const struct gs_adm_slice *o = &sn->slices[i];

		if (o->owner_uid != req->owner_uid)
			continue;
		n++;
		slice_use(sn, o, &use);
		mem += use.v[GS_QRES_MEMORY];
	}
	if (n >= sn->cfg.user_max_slices)
		return gs_fail(eb, GS_ERR_QUOTA,
		               "uid %u holds %d slices, the most one user may (quota.default_user.max_slices)",
		               (unsigned)req->owner_uid, n);
	node_capacity(sn, &cap);
	limit = cap.v[GS_QRES_MEMORY] / 100 * sn->cfg.user_max_memory_percent;
	if (mem > limit)
		return gs_fail(eb, GS_ERR_QUOTA,
		               "uid %u would hold %lld MiB of GPU memory, over the %d%% of the node's %lld MiB one user may (quota.default_user.max_memory_percent)",
		               (unsigned)req->owner_uid, (long long)(mem >> 20),
		               sn->cfg.user_max_memory_percent,
		               (long long)(cap.v[GS_QRES_MEMORY] >> 20));
	return GS_OK;
}

/* ---- rule 4: placement ---- */

/* The smallest plain profile of `m` that holds the request. */
static const struct gs_mig_profile *
pick_profile(const struct gs_gpu_model *m, const struct gs_slice_spec *spec)
{
	const struct gs_mig_profile *best = NULL;

	if (m == NULL)
		return NULL;
	if (spec->mig_profile[0])
		return gs_catalog_profile(m, spec->mig_profile);
	for (int i = 0; i < m->n_profiles; i++) {
		const struct gs_mig_profile *p = &m->profiles[i];

		if (p->attributes && p->attributes[0])
			continue;
		if ((p->memory_mib << 20) < spec->memory_bytes)
			continue;
		if (p->compute_slices * 100 <
		    spec->compute_pct * m->compute_slices)
			continue;
		if (best == NULL || p->memory_slices < best->memory_slices ||
		    (p->memory_slices == best->memory_slices &&
		     p->compute_slices < best->compute_slices))
			best = p;
	}
	return best;
}

static void item_of(const struct gs_adm_slice *s, struct gs_place_item *it)
{
	memset(it, 0, sizeof(*it));
	it->mode = s->mode;
	if (s->mode == GS_MODE_MIG) {
		it->kind = GS_PLACE_MIG;
		snprintf(it->mig_profile, sizeof(it->mig_profile), "%s",
		         s->mig_profile ? s->mig_profile : "");
		return;
	}
	if (s->isolation == GS_ISOLATION_EXCLUSIVE &&
	    !gs_mode_is_mig(s->mode)) {
		it->kind = GS_PLACE_WHOLE;
		return;
	}
	it->kind = GS_PLACE_FRACTION;
	it->memory_bytes = s->memory_bytes;
	it->compute_pct = s->compute_pct;
	if (gs_mode_is_mig(s->mode))
		snprintf(it->mig_profile, sizeof(it->mig_profile), "%s",
		         s->mig_profile ? s->mig_profile : "");
}

/*
 * The inventory: GPUs, MIG instances and the slices but `skip`. A slice
 * that does not fit its own GPU (the GPU changed under it) is left out:
 * it holds nothing placement could give away anyway.
 */
/*
 * The memory placement may promise on GPU g to a fractional request
 * `spec` (NULL: none) under swap.oversubscribe, counting the slices on
 * it but `skip`; physical memory when off. OUT: map->swap_why when the
 * GPU is closed to the request by the physical rule.
 */
static uint64_t promise_capacity(const struct gs_adm_snapshot *sn, int g,
                                 const bool *skip,
                                 const struct gs_slice_spec *spec,
                                 struct inv_map *map)
{
	const struct gs_adm_gpu *gp = &sn->gpu[g];
	struct gs_swap_gpu_load load = {0, 0, 0};
	char why[GS_ADM_WHY_MAX - 16];
	uint64_t cap;

	if (!(sn->cfg.oversubscribe > 1.0) || gp->mig_on || spec == NULL ||
	    spec->isolation == GS_ISOLATION_EXCLUSIVE)
		return gp->memory_bytes;
	for (int i = 0; i < sn->n_slices; i++) {
		const struct gs_adm_slice *s = &sn->slices[i];

		if (skipped(skip, i) || s->gpu != g)
			continue;
		load.promised += s->memory_bytes;
		if (s->swap_never)
			load.never += s->memory_bytes;
		else if (s->memory_bytes > load.largest_swappable)
			load.largest_swappable = s->memory_bytes;
	}
	cap = gs_swap_oversub_capacity(gp->memory_bytes, sn->cfg.oversubscribe,
	                               &load, spec->memory_bytes,
	                               spec->swap == GS_SWAP_NEVER, why,
	                               sizeof(why));
	if (why[0] && map->swap_why[0] == '\0')
		snprintf(map->swap_why, sizeof(map->swap_why), "gpu %d: %s", g,
		         why);
	return cap;
}

static struct gs_place_inv *build_inv(const struct gs_adm_snapshot *sn,
                                      const bool *skip,
                                      const struct gs_slice_spec *spec,
                                      struct inv_map *map)
{
	struct gs_place_inv *inv = gs_place_inv_create();
	struct gs_errbuf eb = {0};
	int nd, idx;

	map->n = 0;
	map->swap_why[0] = '\0';
	if (inv == NULL || gs_place_inv_add_node(inv, "local", &nd, &eb))
		goto fail;
	for (int i = 0; i < sn->n_gpus; i++) {
		const struct gs_adm_gpu *g = &sn->gpu[i];
		struct gs_place_gpu_desc gd = {
		    .uuid = g->uuid,
		    .model = g->cat,
		    .model_name = g->model,
		    .memory_bytes = promise_capacity(sn, i, skip, spec, map),
		    .mig_enabled = g->mig_on && g->cat != NULL,
		};

		if (g->busy)
			gd.mig_enabled = false;
		if (gs_place_inv_add_gpu(inv, &gd, &idx, &eb))
			goto fail;
		if (g->busy) {
			/* Taken whole, so that nothing is placed there. */
			struct gs_place_target t = {
			    .node = nd, .gpu = i, .inst = -1};
			struct gs_place_item it = {.kind = GS_PLACE_WHOLE,
			                           .mode = GS_MODE_TIMESLICE};

			if (gs_place_occupy(inv, &t, &it, &eb))
				goto fail;
			continue;
		}
		for (int k = 0; gd.mig_enabled && k < g->n_mig; k++) {
			struct gs_place_mig_desc md = {
			    .uuid = g->mig[k].uuid,
			    .profile = g->mig[k].profile,
			    .start = g->mig[k].start,
			    .memory_bytes = g->mig[k].memory_bytes,
			};

			if (md.profile == NULL ||
			    gs_place_inv_add_mig(inv, &md, &idx, &eb))
				continue;
			map->gpu[idx] = i;
			map->gi[idx] = g->mig[k].gi_id;
			if (idx + 1 > map->n)
				map->n = idx + 1;
		}
	}
	for (int i = 0; i < sn->n_slices; i++) {
		const struct gs_adm_slice *s = &sn->slices[i];
		struct gs_place_target t = {
		    .node = nd, .gpu = s->gpu, .inst = -1};
		struct gs_place_item it;

		if (skipped(skip, i) || s->gpu < 0 || s->gpu >= sn->n_gpus ||
		    sn->gpu[s->gpu].busy)
			continue;
		for (int k = 0; s->gi_id >= 0 && k < map->n; k++)
			if (map->gpu[k] == s->gpu && map->gi[k] == s->gi_id)
				t.inst = k;
		item_of(s, &it);
		eb.set = false;
		(void)gs_place_occupy(inv, &t, &it, &eb);
	}
	return inv;
fail:
	gs_place_inv_destroy(inv);
	return NULL;
}

/* Plans a new `p` instance on GPU g; the GPU must hold no non-MIG slices
 * (but `skip`). OUT: *plan. */
static bool mig_fits(const struct gs_adm_snapshot *sn, int g,
                     const struct gs_mig_profile *p, const bool *skip,
                     struct gs_mig_plan *plan)
{
	const struct gs_adm_gpu *gp = &sn->gpu[g];
	struct gs_mig_instance cur[GS_MIGPLAN_MAX_INSTANCES];
	struct gs_mig_demand d = {.profile = p, .count = 1};
	int n = 0;

	if (gp->cat == NULL || !gp->mig_capable || gp->busy)
		return false;
	for (int i = 0; i < sn->n_slices; i++) {
		const struct gs_adm_slice *s = &sn->slices[i];

		if (skipped(skip, i) || s->gpu != g)
			continue;
		if (!gs_mode_is_mig(s->mode))
			return false;
	}
	for (int k = 0;
	     gp->mig_on && k < gp->n_mig && n < GS_MIGPLAN_MAX_INSTANCES; k++) {
		if (gp->mig[k].profile == NULL)
			continue;
		cur[n].profile = gp->mig[k].profile;
		cur[n].start = gp->mig[k].start;
		cur[n].in_use =
		    mig_holder(sn, g, gp->mig[k].gi_id, skip) != NULL;
		n++;
	}
	if (gs_migplan_solve(gp->cat, cur, n, &d, 1, plan, NULL) != GS_OK)
		return false;
	return plan->n_unmet == 0;
}

/*
 * Whether GPU g can give a `p` instance at exactly placement `start`
 * (spec mig-start): an idle instance already there is used (out->gi_id),
 * otherwise the placement must be free or held only by idle instances,
 * which are destroyed first (out->need_create). Instances in use are
 * never touched. On refusal eb names the placement and what occupies it.
 */
static gs_err place_at_start_on(const struct gs_adm_snapshot *sn, int g,
                                const struct gs_mig_profile *p, int start,
                                const bool *skip, struct place *out,
                                struct gs_errbuf *eb)
{
	const struct gs_adm_gpu *gp = &sn->gpu[g];
	int size = 0;

	if (gp->cat == NULL || !gp->mig_capable)
		return gs_fail(eb, GS_ERR_NO_FIT, "gpu %d (%s) has no MIG", g,
		               gp->model);
	if (gp->busy)
		return gs_fail(eb, GS_ERR_NO_FIT, BUSY_FMT, g);
	for (int k = 0; k < p->n_placements; k++)
		if (p->placements[k].start == start)
			size = p->placements[k].size;
	if (size == 0)
		return gs_fail(eb, GS_ERR_INVALID,
		               "mig-start %d is not a placement of %s on %s",
		               start, p->name, gp->model);
	for (int i = 0; i < sn->n_slices; i++) {
		const struct gs_adm_slice *s = &sn->slices[i];

		if (skipped(skip, i) || s->gpu != g || gs_mode_is_mig(s->mode))
			continue;
		return gs_fail(eb, GS_ERR_NO_FIT,
		               "placement %s@%d on gpu %d is taken: slice %s uses the whole GPU (mode %s)",
		               p->name, start, g, s->name,
		               gs_mode_name(s->mode));
	}
	if (!gp->mig_on && !sn->cfg.may_change_mig)
		return gs_fail(eb, GS_ERR_NO_FIT,
		               "gpu %d has MIG off and the daemon may not switch it on",
		               g);
	out->gpu = g;
	out->need_create = true;
	for (int k = 0; gp->mig_on && k < gp->n_mig; k++) {
		const struct gs_adm_mig *d = &gp->mig[k];
		const struct gs_adm_slice *who;

		if (d->start + d->size <= start || start + size <= d->start)
			continue;
		who = mig_holder(sn, g, d->gi_id, skip);
		if (d->profile == p && d->start == start && who == NULL) {
			out->gi_id = d->gi_id;
			out->need_create = false;
			return GS_OK;
		}
		if (who != NULL)
			return gs_fail(eb, GS_ERR_NO_FIT,
			               "placement %s@%d on gpu %d is taken: instance %s@%d is in use by slice %s",
			               p->name, start, g, d->profile_name,
			               d->start, who->name);
	}
	if (out->need_create && !sn->cfg.may_change_mig)
		return gs_fail(eb, GS_ERR_NO_FIT,
		               "placement %s@%d on gpu %d does not exist and the daemon may not change the MIG layout",
		               p->name, start, g);
	return GS_OK;
}

static gs_err place_at_start(const struct gs_adm_snapshot *sn,
                             const struct gs_slice_spec *spec, const bool *skip,
                             struct place *out, struct gs_errbuf *eb)
{
	gs_err err = GS_ERR_NO_FIT;
	bool any = false;

	for (int i = 0; i < sn->n_gpus; i++) {
		const struct gs_adm_gpu *gp = &sn->gpu[i];
		const struct gs_mig_profile *p;

		if (!gpu_selected(sn, &spec->gpu, i) || gp->cat == NULL)
			continue;
		p = gs_catalog_profile(gp->cat, spec->mig_profile);
		if (p == NULL)
			continue;
		any = true;
		out->profile = p;
		eb->set = false;
		err =
		    place_at_start_on(sn, i, p, spec->mig_start, skip, out, eb);
		if (err == GS_OK)
			break;
	}
	if (!any)
		return gs_fail(eb, GS_ERR_NO_FIT,
		               "no selected GPU knows MIG profile %s",
		               spec->mig_profile);
	if (err)
		return err;
	if (out->memory_bytes == 0 && out->mode == GS_MODE_MIG)
		out->memory_bytes = out->profile->memory_mib << 20;
	return GS_OK;
}

/* Rule 3: the mode, and how auto chose it. */
static gs_err resolve_mode(const struct gs_adm_snapshot *sn,
                           const struct gs_slice_spec *spec,
                           const struct gs_adm_gpu *first,
                           enum gs_slice_mode *mode, char *why, size_t len,
                           struct gs_errbuf *eb)
{
	struct gs_advice adv;
	gs_err err;

	*mode = spec->mode;
	why[0] = '\0';
	if (*mode == GS_MODE_AUTO) {
		*mode = sn->cfg.default_mode;
		if (*mode != GS_MODE_AUTO)
			(void)snprintf(why, len,
			               "auto: the daemon's default mode");
	}
	if (*mode != GS_MODE_AUTO)
		return GS_OK;
	err = gs_advisor_auto_mode(spec, first->mig_capable ? first->cat : NULL,
	                           sn->cfg.mps, mode, &adv, eb);
	if (err)
		return err;
	memcpy(why, "auto: ", 7);
	(void)gs_advisor_explain(&adv, why + 6, len - 6);
	return GS_OK;
}

/*
 * A non-MIG slice that fits nowhere: a GPU in MIG mode whose instances
 * nobody uses can go back to whole-GPU sharing.
 */
static bool place_mig_off(const struct gs_adm_snapshot *sn,
                          const struct gs_slice_spec *spec,
                          const struct gs_place_item *it, const bool *skip,
                          struct place *out)
{
	const struct gs_adm_gpu *first = first_selected(sn, &spec->gpu);

	for (int i = 0; i < sn->n_gpus; i++) {
		const struct gs_adm_gpu *g = &sn->gpu[i];
		bool used = false;

		if (!g->mig_on || g->busy)
			continue;
		if (spec->gpu.kind != GS_GPU_ANY && first != g)
			continue;
		for (int k = 0; k < sn->n_slices && !used; k++)
			used = !skipped(skip, k) && sn->slices[k].gpu == i;
		if (used || spec->memory_bytes > g->memory_bytes)
			continue;
		out->gpu = i;
		out->need_mig_off = true;
		if (it->kind == GS_PLACE_WHOLE) {
			out->memory_bytes = g->memory_bytes;
			out->compute_pct = 100;
		}
		return true;
	}
	return false;
}

static gs_err place_in_mode(const struct gs_adm_snapshot *sn,
                            const struct gs_slice_spec *spec,
                            const struct gs_demand *demand, const bool *skip,
                            enum gs_slice_mode mode, const char *why,
                            struct place *out, struct gs_errbuf *eb);

/*
 * Where a slice goes: its mode (rule 3), then its GPU. A slice that auto
 * sent to MPS but that no GPU can take as an MPS client now (e.g. every
 * GPU with room runs turns) takes turns instead: it accepted a shared
 * fault domain, and a context of its own is stricter. out->why says so.
 */
static gs_err place(const struct gs_adm_snapshot *sn,
                    const struct gs_slice_spec *spec,
                    const struct gs_demand *demand, const bool *skip,
                    struct place *out, struct gs_errbuf *eb)
{
	const struct gs_adm_gpu *first = first_selected(sn, &spec->gpu);
	enum gs_slice_mode mode;
	char why[GS_ADM_WHY_MAX];
	size_t n;
	gs_err err;

	if (first == NULL)
		return gs_fail(eb, GS_ERR_NO_FIT,
		               "no GPU matches the gpu selector");
	err = resolve_mode(sn, spec, first, &mode, why, sizeof(why), eb);
	if (err)
		return err;
	err = place_in_mode(sn, spec, demand, skip, mode, why, out, eb);
	/* Only a mode the advisor chose falls back; one asked for stands. */
	if (err != GS_ERR_NO_FIT || mode != GS_MODE_MPS ||
	    spec->mode != GS_MODE_AUTO || sn->cfg.default_mode != GS_MODE_AUTO)
		return err;
	eb->set = false;
	n = strlen(why);
	(void)snprintf(why + n, sizeof(why) - n,
	               "; no GPU takes an MPS client now -> %s",
	               gs_mode_name(GS_MODE_TIMESLICE));
	return place_in_mode(sn, spec, demand, skip, GS_MODE_TIMESLICE, why,
	                     out, eb);
}

/*
 * A fractional request refused under swap.oversubscribe: the placement's
 * message says free memory in promised terms, so add what the promise
 * is, or why a GPU was closed to the request (a slice that cannot swap).
 */
static void oversub_refusal(const struct gs_adm_snapshot *sn,
                            const struct inv_map *map, struct gs_errbuf *eb)
{
	char first[GS_ERRBUF_SIZE];

	if (eb == NULL)
		return;
	snprintf(first, sizeof(first), "%s", eb->set ? eb->msg : "no fit");
	eb->set = false;
	if (map->swap_why[0])
		(void)gs_fail(eb, GS_ERR_NO_FIT, "%s; %s", first, map->swap_why);
	else
		(void)gs_fail(eb, GS_ERR_NO_FIT, "%s (memory promised up to swap.oversubscribe %.2f x each GPU's memory)", first, sn->cfg.oversubscribe);
}

static gs_err place_in_mode(const struct gs_adm_snapshot *sn,
                            const struct gs_slice_spec *spec,
                            const struct gs_demand *demand, const bool *skip,
                            enum gs_slice_mode mode, const char *why,
                            struct place *out, struct gs_errbuf *eb)
{
	const struct gs_adm_gpu *first = first_selected(sn, &spec->gpu);
	struct gs_place_request req;
	struct gs_place_result res;
	struct gs_place_inv *inv;
	struct inv_map *map;
	struct gs_place_item *it = &req.item[0];
	struct gs_trace_scorer *sc = NULL;
	gs_err err;

	memset(out, 0, sizeof(*out));
	(void)snprintf(out->why, sizeof(out->why), "%s", why);
	out->gi_id = -1;
	out->mig_start = -1;
	out->mode = mode;
	out->memory_bytes = spec->memory_bytes;
	out->compute_pct = spec->compute_pct;
	if (spec->has_mig_start && gs_mode_is_mig(mode)) {
		out->mig_start = spec->mig_start;
		return place_at_start(sn, spec, skip, out, eb);
	}

	memset(&req, 0, sizeof(req));
	req.n = 1;
	req.gang = GS_GANG_SAME_NODE;
	req.policy = sn->cfg.placement;
	req.gpu = &spec->gpu;
	it->mode = mode;
	if (spec->isolation == GS_ISOLATION_EXCLUSIVE &&
	    !gs_mode_is_mig(mode)) {
		it->kind = GS_PLACE_WHOLE;
	} else if (mode == GS_MODE_MIG) {
		out->profile = pick_profile(first->cat, spec);
		if (out->profile == NULL)
			return gs_fail(eb, GS_ERR_NO_FIT,
			               "no MIG profile of %s holds %d%% compute and the memory asked for",
			               first->model, spec->compute_pct);
		it->kind = GS_PLACE_MIG;
		snprintf(it->mig_profile, sizeof(it->mig_profile), "%s",
		         out->profile->name);
	} else {
		it->kind = GS_PLACE_FRACTION;
		it->memory_bytes = spec->memory_bytes;
		it->compute_pct = spec->compute_pct;
		if (gs_mode_is_mig(mode)) {
			out->profile = pick_profile(first->cat, spec);
			if (spec->mig_profile[0])
				snprintf(it->mig_profile,
				         sizeof(it->mig_profile), "%s",
				         spec->mig_profile);
		}
	}
	if (req.policy == GS_PLACE_FRAG && demand) {
		/* The demand seen, on the model that answers (a node has one
		 * model in practice); none yet: the request stands for it. */
		err = gs_demand_scorer(demand, sn->now_ns, first->memory_bytes,
		                       &sc, eb);
		if (err)
			return err;
		req.scorer = sc;
	}
	map = malloc(sizeof(*map));
	if (map == NULL) {
		gs_trace_scorer_free(sc);
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	}
	inv = build_inv(sn, skip,
	                it->kind == GS_PLACE_FRACTION && !gs_mode_is_mig(mode)
	                    ? spec
	                    : NULL,
	                map);
	if (inv == NULL) {
		gs_trace_scorer_free(sc);
		free(map);
		return gs_fail(eb, GS_ERR_NOMEM, "placement inventory");
	}
	memset(&res, 0, sizeof(res));
	err = gs_place(inv, &req, &res, eb);
	gs_place_inv_destroy(inv);
	gs_trace_scorer_free(sc);
	if (err == GS_OK) {
		out->gpu = res.target[0].gpu; /* one node: local index */
		if (res.target[0].inst >= 0 && res.target[0].inst < map->n)
			out->gi_id = map->gi[res.target[0].inst];
		if (it->kind == GS_PLACE_WHOLE) {
			out->memory_bytes = sn->gpu[out->gpu].memory_bytes;
			out->compute_pct = 100;
		}
		if (mode == GS_MODE_MIG && out->memory_bytes == 0)
			out->memory_bytes = out->profile->memory_mib << 20;
		free(map);
		return GS_OK;
	}
	if (err == GS_ERR_NO_FIT && sn->cfg.oversubscribe > 1.0 &&
	    it->kind == GS_PLACE_FRACTION && !gs_mode_is_mig(mode))
		oversub_refusal(sn, map, eb);
	free(map);
	if (err == GS_ERR_NO_FIT && !gs_mode_is_mig(mode) &&
	    sn->cfg.may_change_mig && place_mig_off(sn, spec, it, skip, out)) {
		eb->set = false;
		return GS_OK;
	}
	if (err != GS_ERR_NO_FIT || !gs_mode_is_mig(mode) ||
	    out->profile == NULL || !sn->cfg.may_change_mig)
		return err;
	/* A MIG slice without a free instance: a GPU whose layout can
	 * change to make one. */
	{
		int cand = it->kind == GS_PLACE_MIG ? res.repartition_gpu : -1;
		struct gs_mig_plan plan;

		if (cand >= 0 &&
		    (cand >= sn->n_gpus || sn->gpu[cand].busy ||
		     !gpu_selected(sn, &spec->gpu, cand)))
			cand = -1;

		for (int i = 0; cand < 0 && i < sn->n_gpus; i++)
			if (gpu_selected(sn, &spec->gpu, i) &&
			    sn->gpu[i].cat == first->cat &&
			    mig_fits(sn, i, out->profile, skip, &plan))
				cand = i;
		if (cand < 0)
			return err;
		out->gpu = cand;
		out->need_create = true;
		if (out->memory_bytes == 0 && mode == GS_MODE_MIG)
			out->memory_bytes = out->profile->memory_mib << 20;
		eb->set = false;
		return GS_OK;
	}
}

/* ---- the MIG steps a placement needs ---- */

static void step_push(struct gs_adm_decision *d, enum gs_mig_op op,
                      const struct gs_mig_profile *p, int start, int gi_id)
{
	struct gs_adm_step *st;

	if (d->n_steps >= GS_ADM_MAX_STEPS)
		return; /* cannot happen: a GPU has at most 8 instances */
	st = &d->steps[d->n_steps++];
	st->op = op;
	st->profile = p;
	st->start = start;
	st->gi_id = gi_id;
}

/* The instance of GPU g at `start` with profile p, or -1. */
static int gi_at(const struct gs_adm_gpu *gp, const struct gs_mig_profile *p,
                 int start)
{
	for (int m = 0; m < gp->n_mig; m++)
		if (gp->mig[m].start == start && gp->mig[m].profile == p)
			return gp->mig[m].gi_id;
	return -1;
}

static gs_err plan_mig(const struct gs_adm_snapshot *sn, const struct place *pl,
                       const bool *skip, struct gs_adm_decision *d,
                       struct gs_errbuf *eb)
{
	const struct gs_adm_gpu *gp = &sn->gpu[pl->gpu];
	const struct gs_mig_profile *p = pl->profile;
	struct gs_mig_plan plan;

	if (pl->need_mig_off) {
		for (int m = 0; m < gp->n_mig; m++)
			step_push(d, GS_MIG_DESTROY, gp->mig[m].profile,
			          gp->mig[m].start, gp->mig[m].gi_id);
		d->mig_off = true;
		return GS_OK;
	}
	if (!gs_mode_is_mig(pl->mode))
		return GS_OK;
	d->gi_id = pl->need_create ? -1 : pl->gi_id;
	if (!pl->need_create)
		return GS_OK;
	d->mig_on = !gp->mig_on;
	if (pl->mig_start >= 0) {
		/* Idle instances overlapping the placement go first. */
		int start = pl->mig_start, size = p->memory_slices;

		for (int k = 0; k < p->n_placements; k++)
			if (p->placements[k].start == start)
				size = p->placements[k].size;
		for (int m = 0; gp->mig_on && m < gp->n_mig; m++) {
			const struct gs_adm_mig *dv = &gp->mig[m];

			if (dv->start + dv->size <= start ||
			    start + size <= dv->start)
				continue;
			step_push(d, GS_MIG_DESTROY, dv->profile, dv->start,
			          dv->gi_id);
		}
		step_push(d, GS_MIG_CREATE, p, start, -1);
		d->take_start = start;
		return GS_OK;
	}
	if (!mig_fits(sn, pl->gpu, p, skip, &plan))
		return gs_fail(eb, GS_ERR_NO_FIT, "no room for a %s instance",
		               p->name);
	for (int k = 0; k < plan.n_steps; k++) {
		const struct gs_mig_step *st = &plan.steps[k];

		if (st->op == GS_MIG_DESTROY) {
			int gi = gi_at(gp, st->profile, st->start);

			if (gi >= 0)
				step_push(d, GS_MIG_DESTROY, st->profile,
				          st->start, gi);
		} else {
			step_push(d, GS_MIG_CREATE, st->profile, st->start, -1);
		}
	}
	return GS_OK;
}

/* ---- the decision ---- */

void gs_adm_demand_shape(const struct gs_slice_spec *spec,
                         struct gs_demand_shape *out)
{
	struct gs_place_item it;

	memset(&it, 0, sizeof(it));
	if (spec->mode == GS_MODE_MIG) {
		it.kind = GS_PLACE_MIG;
		snprintf(it.mig_profile, sizeof(it.mig_profile), "%s",
		         spec->mig_profile);
	} else if (spec->isolation == GS_ISOLATION_EXCLUSIVE &&
	           !gs_mode_is_mig(spec->mode)) {
		it.kind = GS_PLACE_WHOLE;
	} else {
		it.kind = GS_PLACE_FRACTION;
		it.memory_bytes = spec->memory_bytes;
		it.compute_pct = spec->compute_pct;
	}
	gs_demand_shape_of(&it, out);
}

void gs_adm_decision_fini(struct gs_adm_decision *d)
{
	free(d->victims);
	d->victims = NULL;
	d->n_victims = 0;
}

/* What the request would hold as placed (or as asked, perr set). */
static void request_use(const struct gs_adm_snapshot *sn,
                        const struct gs_adm_request *req,
                        const struct place *pl, gs_err perr,
                        struct gs_qvec *use)
{
	struct gs_adm_slice probe;

	memset(&probe, 0, sizeof(probe));
	probe.mig_profile = "";
	probe.mode = perr ? (gs_mode_is_mig(req->spec.mode) ? req->spec.mode
	                                                    : GS_MODE_TIMESLICE)
	                  : pl->mode;
	probe.gpu = perr ? -1 : pl->gpu;
	if (!perr && pl->profile && pl->mode == GS_MODE_MIG)
		probe.mig_profile = pl->profile->name;
	probe.memory_bytes = perr ? req->spec.memory_bytes : pl->memory_bytes;
	probe.compute_pct = perr ? req->spec.compute_pct : pl->compute_pct;
	slice_use(sn, &probe, use);
}

/*
 * Rules 4-7. Which error wins: a team over its max is QUOTA; a request
 * the node has no room for is NO_FIT, unless reclaiming borrowed slices
 * makes the room.
 */
static gs_err decide(const struct gs_adm_snapshot *sn,
                     const struct gs_adm_request *req,
                     const struct gs_demand *demand, struct place *pl,
                     bool *skip, struct gs_quota_decision *dec,
                     struct gs_adm_decision *out, struct gs_errbuf *eb)
{
	struct gs_errbuf peb = {0}, qeb = {0}, meb = {0};
	struct gs_quota_slice *qs;
	struct gs_quota_request qr;
	struct gs_qvec cap, huge;
	size_t n = (size_t)sn->n_slices;
	gs_err perr, qerr, err;

	perr = place(sn, &req->spec, demand, NULL, pl, &peb);
	if (perr && perr != GS_ERR_NO_FIT)
		return gs_fail(eb, perr, "%s", gs_errbuf_msg(&peb, perr));
	qs = calloc(n + 1, sizeof(*qs));
	if (qs == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct gs_adm_slice *o = &sn->slices[i];

		qs[i].id = (uint64_t)o->id;
		qs[i].team = o->team >= 0 ? o->team : sn->cfg.default_team;
		qs[i].priority = o->priority;
		qs[i].created = o->created_ns;
		slice_use(sn, o, &qs[i].use);
	}
	request_use(sn, req, pl, perr, &qr.use);
	qr.team = req->team;
	qr.priority = req->spec.priority;
	/* Max first: with unbounded capacity only a max can refuse. */
	for (int r = 0; r < GS_QRES__COUNT; r++)
		huge.v[r] = INT64_MAX / 4;
	out->counted = true;
	qerr = gs_quota_admit(sn->teams, &huge, qs, n, &qr, dec, &meb);
	gs_quota_decision_fini(dec);
	memset(dec, 0, sizeof(*dec));
	if (qerr) {
		err = gs_fail(eb, qerr, "%s", gs_errbuf_msg(&meb, qerr));
		goto out;
	}
	/*
	 * With room on some GPU, quotas decide on the node's idle capacity.
	 * Without (no GPU has room even if the node has in total), they
	 * decide as if nothing were idle: the requester may then reclaim
	 * borrowed slices, and no one else's.
	 */
	node_capacity(sn, &cap);
	if (perr) {
		memset(&cap, 0, sizeof(cap));
		for (size_t i = 0; i < n; i++)
			for (int r = 0; r < GS_QRES__COUNT; r++)
				cap.v[r] += qs[i].use.v[r];
	}
	qerr = gs_quota_admit(sn->teams, &cap, qs, n, &qr, dec, &qeb);
	if (qerr && perr) {
		err = gs_fail(eb, perr, "%s", gs_errbuf_msg(&peb, perr));
		goto out;
	}
	if (qerr) {
		err = gs_fail(eb, qerr, "%s", gs_errbuf_msg(&qeb, qerr));
		goto out;
	}
	err = perr;
	if (dec->verdict == GS_QUOTA_ADMIT_RECLAIM) {
		/* The shortest prefix of the preemption order that makes
		 * room on a GPU. */
		size_t k;

		for (k = 0; k < dec->n_victims; k++) {
			skip[dec->victims[k]] = true;
			peb.set = false;
			err = place(sn, &req->spec, demand, skip, pl, &peb);
			if (!err)
				break;
		}
		if (!err)
			dec->n_victims = k + 1;
	}
	if (err)
		err = gs_fail(eb, err, "%s", gs_errbuf_msg(&peb, err));
out:
	free(qs);
	return err;
}

/*
 * A NO_FIT while some GPU is busy: when the request would fit with the
 * busy GPUs free, the refusal says it is transient (BUSY_FMT) instead.
 * Returns `err` (eb rewritten or as it was), or GS_ERR_NOMEM.
 */
static gs_err busy_refusal(const struct gs_adm_snapshot *sn,
                           const struct gs_adm_request *req,
                           const struct gs_demand *demand, gs_err err,
                           struct gs_errbuf *eb)
{
	struct gs_adm_snapshot *free_sn;
	struct gs_quota_decision qd;
	struct gs_adm_decision d;
	struct gs_errbuf feb = {0};
	struct place pl;
	bool *skip;
	int busy = -1;
	gs_err ferr;

	for (int i = 0; i < sn->n_gpus && busy < 0; i++)
		if (sn->gpu[i].busy)
			busy = i;
	if (busy < 0)
		return err;
	free_sn = malloc(sizeof(*free_sn));
	skip = calloc((size_t)sn->n_slices + 1, sizeof(*skip));
	if (free_sn == NULL || skip == NULL) {
		free(free_sn);
		free(skip);
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	}
	*free_sn = *sn;
	for (int i = 0; i < free_sn->n_gpus; i++)
		free_sn->gpu[i].busy = false;
	memset(&d, 0, sizeof(d));
	memset(&qd, 0, sizeof(qd));
	ferr = decide(free_sn, req, demand, &pl, skip, &qd, &d, &feb);
	gs_quota_decision_fini(&qd);
	free(skip);
	free(free_sn);
	if (ferr != GS_OK)
		return err;
	if (pl.gpu >= 0 && pl.gpu < sn->n_gpus && sn->gpu[pl.gpu].busy)
		busy = pl.gpu;
	if (eb)
		eb->set = false;
	return gs_fail(eb, GS_ERR_NO_FIT, BUSY_FMT, busy);
}

/*
 * On an oversubscribed node, what the advisor's choice (auto) means for
 * memory, appended to its explanation `why`: a fraction of a swap: allow
 * slice is promised memory of which only what is active must be resident
 * (the GPU's memory bounds that, not the promise); a MIG instance (the
 * MIG planner's profile holds the whole promise), a whole GPU or a swap:
 * never slice keeps all of its promise resident. Nothing when auto did not choose or
 * the node does not oversubscribe.
 */
static void resident_note(const struct gs_adm_snapshot *sn,
                          const struct gs_slice_spec *spec,
                          const struct place *pl, char *why, size_t len)
{
	size_t n = strlen(why);
	unsigned long long mib = pl->memory_bytes >> 20;
	char amt[32];

	if (why[0] == '\0' || !(sn->cfg.oversubscribe > 1.0) || n >= len)
		return;
	if (mib % 1024 == 0)
		(void)snprintf(amt, sizeof(amt), "%llu GiB", mib / 1024);
	else
		(void)snprintf(amt, sizeof(amt), "%llu MiB", mib);
	if (gs_mode_is_mig(pl->mode))
		(void)snprintf(
		    why + n, len - n,
		    "; MIG is not oversubscribed: all %s promised stays resident",
		    amt);
	else if (spec->isolation == GS_ISOLATION_EXCLUSIVE)
		(void)snprintf(
		    why + n, len - n,
		    "; a whole GPU is not oversubscribed: all %s stays resident",
		    amt);
	else if (spec->swap == GS_SWAP_NEVER)
		(void)snprintf(why + n, len - n,
		               "; swap never: all %s promised stays resident",
		               amt);
	else
		(void)snprintf(
		    why + n, len - n,
		    "; %s promised (up to %.2f x the GPU), resident only while active",
		    amt, sn->cfg.oversubscribe);
}

gs_err gs_admit(const struct gs_adm_snapshot *sn,
                const struct gs_adm_request *req, struct gs_adm_decision *out,
                struct gs_errbuf *eb)
{
	struct gs_quota_decision dec;
	struct gs_demand demand;
	struct gs_demand_shape shape, gone[GS_DEMAND_MAX_CLASSES], evicted;
	struct place pl;
	bool *skip = NULL, did_evict;
	int idx;
	gs_err err;

	memset(out, 0, sizeof(*out));
	memset(&dec, 0, sizeof(dec));
	out->gpu = -1;
	out->gi_id = -1;
	out->take_start = -1;
	/* Rule 1: slots. */
	if (sn->n_slices + sn->n_parked >= sn->cfg.max_slices)
		return gs_fail(eb, GS_ERR_NO_FIT,
		               "the node holds its maximum of %d slices",
		               sn->cfg.max_slices);
	/* Rule 2: per user. */
	if (!req->admin) {
		err = user_limits(sn, req, eb);
		if (err) {
			out->counted = true;
			return err;
		}
	}
	out->demand_seen = true;
	/* The demand `frag` weighs counts this request, as the node will. */
	if (sn->demand) {
		demand = *sn->demand;
		(void)gs_demand_prune(&demand, sn->now_ns, gone);
		gs_adm_demand_shape(&req->spec, &shape);
		gs_demand_add(&demand, &shape, sn->now_ns, &idx, &evicted,
		              &did_evict);
	}
	skip = calloc((size_t)sn->n_slices + 1, sizeof(*skip));
	if (skip == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	err = decide(sn, req, sn->demand ? &demand : NULL, &pl, skip, &dec, out,
	             eb);
	if (err == GS_ERR_NO_FIT)
		err =
		    busy_refusal(sn, req, sn->demand ? &demand : NULL, err, eb);
	if (err)
		goto out;
	/* A MIG plan that fails is the node's trouble, not a rejection. */
	out->counted = false;
	err = plan_mig(sn, &pl, skip, out, eb);
	if (err)
		goto out;
	out->mode = pl.mode;
	memcpy(out->mode_why, pl.why, sizeof(out->mode_why));
	resident_note(sn, &req->spec, &pl, out->mode_why,
	              sizeof(out->mode_why));
	out->gpu = pl.gpu;
	out->memory_bytes = pl.memory_bytes;
	out->compute_pct = pl.compute_pct;
	out->profile = gs_mode_is_mig(pl.mode) ? pl.profile : NULL;
	for (int r = 0; r < GS_QRES__COUNT; r++)
		if (dec.borrowed.v[r] > 0)
			out->borrowed = true;
	if (dec.verdict == GS_QUOTA_ADMIT_RECLAIM) {
		out->victims = dec.victims;
		out->n_victims = dec.n_victims;
		dec.victims = NULL;
		dec.n_victims = 0;
	}
out:
	gs_quota_decision_fini(&dec);
	free(skip);
	return err;
}
