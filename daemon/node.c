/*
 * node.c - the node model (see node.h): slices, teams, quotas, MIG
 * instances for MIG slices, and the region kept in step with them.
 *
 * A create is decided by core (gs_admit, gs/admission.h: limits, mode,
 * placement, quotas, reclaim victims, MIG steps) on a snapshot of the
 * model built under the lock (adm_snapshot), and carried out in two
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
 *     takes its instance (mig_claim), or fails and goes (slice.failed).
 *   between, no lock (create_finish): wait for that commit; an MPS
 *     slice's control daemon is brought up (node->mps_starter: the
 *     reconciler's; one that cannot start fails the slice); write the
 *     slice's limits into the region (region_write: it may wait up to
 *     the region writers' lock deadline).
 *   phase B, node->lock held: find the slice again by id; READY and its
 *     slice.created event, or, the region write failed, FAILED and gone
 *     with a slice.failed event (create_fail); deleted meanwhile: the
 *     region entry and MIG instance made for it go, the create answers
 *     GS_ERR_BUSY.
 *
 * Lock rules for MIG changes:
 *   - node->gpus changes only under node->lock (a create's MIG steps
 *     work on a copy and write back only their GPU's entry), so its
 *     readers under the lock see a consistent inventory;
 *   - node->mig_lock serialises NVML MIG changes. Order: node->lock,
 *     then mig_lock. mig_undo and mig_drop_unheld take it with node->lock
 *     held (rare failure paths: they may wait out a change); a create's
 *     MIG steps hold it alone and release it before taking node->lock;
 *   - mig_busy[g], under node->lock, from phase A to the copy back:
 *     admission places nothing on g (gs_adm_gpu.busy), and mig_undo /
 *     mig_drop_unheld leave g's instances be (they stay idle), since
 *     the copy written back would not show their change.
 * A PENDING slice belongs to its create: housekeeping, the watchdog and
 * the ledger leave it alone, resync does not write its region entry, and
 * gs_node_recover fails one found at start (a crash between the phases).
 *
 * Invariants, all under node->lock:
 *   - v[0..n) holds every live or pending slice, ordered by id; names are
 *     unique;
 *   - every slice in v has been queued to the store (maybe not committed);
 *   - the region holds exactly the non-pending slices in v (when a region
 *     is open), with the limits their specs give, except for a failed
 *     region write that gs_node_recover / gs_node_housekeep repair; a
 *     pending slice's entry may exist (written, not yet recorded);
 *   - teams[i] is quota tree index i, and every slice's team is in it.
 */
#include "node_int.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs/admission.h"
#include "gs/catalog.h"
#include "gs/faultinj.h"
#include "gs/log.h"
#include "gs/proc.h"
#include "watchdog.h"

static void node_check(struct gs_node *node);

int64_t gs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- write batches ---- */

void gs__wr_init(struct gs__wr *wr)
{
	memset(wr, 0, sizeof(*wr));
}

void gs__wr_fini(struct gs__wr *wr)
{
	free(wr->items);
	wr->items = NULL;
	wr->n = wr->cap = 0;
}

struct gs__wr *gs__wr_new(void)
{
	struct gs__wr *wr = malloc(sizeof(*wr));

	if (wr)
		gs__wr_init(wr);
	return wr;
}

static struct gs__wr_item *wr_push(struct gs__wr *wr, enum gs__wr_kind kind)
{
	struct gs__wr_item *it;

	if (wr == NULL)
		return NULL;
	if (gs_fault_hit("alloc.write")) {
		wr->nomem = true;
		return NULL;
	}
	if (wr->n == wr->cap) {
		int cap = wr->cap ? wr->cap * 2 : 4;
		struct gs__wr_item *ni = realloc(wr->items, sizeof(*ni) * cap);

		if (ni == NULL) {
			wr->nomem = true;
			return NULL;
		}
		wr->items = ni;
		wr->cap = cap;
	}
	it = &wr->items[wr->n++];
	it->kind = kind;
	return it;
}

void gs__wr_slice_put(struct gs__wr *wr, const struct gs_slice *s)
{
	struct gs__wr_item *it = wr_push(wr, GS__WR_SLICE_PUT);

	if (it)
		it->u.slice = *s;
}

void gs__wr_slice_del(struct gs__wr *wr, int64_t id)
{
	struct gs__wr_item *it = wr_push(wr, GS__WR_SLICE_DEL);

	if (it)
		it->u.id = id;
}

void gs__wr_team_put(struct gs__wr *wr, const struct gs_team *t)
{
	struct gs__wr_item *it = wr_push(wr, GS__WR_TEAM_PUT);

	if (it)
		it->u.team = *t;
}

void gs__wr_team_del(struct gs__wr *wr, const char *name)
{
	struct gs__wr_item *it = wr_push(wr, GS__WR_TEAM_DEL);

	if (it) {
		memset(&it->u.team, 0, sizeof(it->u.team));
		snprintf(it->u.team.name, sizeof(it->u.team.name), "%s", name);
	}
}

void gs__wr_usage(struct gs__wr *wr, const struct gs_usage_row *r)
{
	struct gs__wr_item *it = wr_push(wr, GS__WR_USAGE);

	if (it)
		it->u.usage = *r;
}

void gs__wr_trim(struct gs__wr *wr, int keep)
{
	struct gs__wr_item *it = wr_push(wr, GS__WR_TRIM);

	if (it)
		it->u.keep = keep;
}

void gs__wr_demand_put(struct gs__wr *wr, const struct gs_demand_class *c)
{
	struct gs__wr_item *it = wr_push(wr, GS__WR_DEMAND_PUT);

	if (it)
		it->u.demand = *c;
}

void gs__wr_demand_del(struct gs__wr *wr, const struct gs_demand_shape *s)
{
	struct gs__wr_item *it = wr_push(wr, GS__WR_DEMAND_DEL);

	if (it) {
		memset(&it->u.demand, 0, sizeof(it->u.demand));
		it->u.demand.shape = *s;
	}
}

static void wr_vevent(struct gs__wr *wr, const char *type, const char *slice,
                      const char *team, int gpu, int64_t owner, const char *fmt,
                      va_list ap)
{
	struct gs__wr_item *it = wr_push(wr, GS__WR_EVENT);
	struct gs_event *e;

	if (it == NULL)
		return;
	e = &it->u.ev;
	memset(e, 0, sizeof(*e));
	e->ts_ns = gs_now_ns();
	snprintf(e->type, sizeof(e->type), "%s", type);
	snprintf(e->slice, sizeof(e->slice), "%s", slice ? slice : "");
	snprintf(e->team, sizeof(e->team), "%s", team ? team : "");
	e->gpu = gpu;
	e->owner_uid = owner;
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
}

void gs__wr_event(struct gs__wr *wr, const char *type, const struct gs_slice *s,
                  const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (s)
		wr_vevent(wr, type, s->name, s->team, s->gpu_index,
		          s->owner_uid, fmt, ap);
	else
		wr_vevent(wr, type, "", "", -1, -1, fmt, ap);
	va_end(ap);
}

static gs_err wr_apply(struct gs_store *st, struct gs_store_op *op)
{
	struct gs__wr *wr = op->arg;
	gs_err err = GS_OK;

	/* A batch missing an item (out of memory while it was built) is not
	 * written at all: the request that made it fails, whole. */
	if (wr->nomem) {
		gs_error("node", "a write batch is incomplete (out of memory): "
		                 "not written");
		return GS_ERR_NOMEM;
	}
	for (int i = 0; i < wr->n && !err; i++) {
		struct gs__wr_item *it = &wr->items[i];

		switch (it->kind) {
		case GS__WR_SLICE_PUT:
			err = gs_store_slice_put(st, &it->u.slice);
			break;
		case GS__WR_SLICE_DEL:
			err = gs_store_slice_delete(st, it->u.id);
			break;
		case GS__WR_EVENT:
			err = gs_store_event_add(st, &it->u.ev);
			break;
		case GS__WR_USAGE:
			err = gs_store_usage_add(st, &it->u.usage);
			break;
		case GS__WR_TEAM_PUT:
			err = gs_store_team_put(st, &it->u.team);
			break;
		case GS__WR_TEAM_DEL:
			err = gs_store_team_delete(st, it->u.team.name);
			break;
		case GS__WR_TRIM:
			err = gs_store_events_trim(st, it->u.keep);
			break;
		case GS__WR_DEMAND_PUT:
			err = gs_store_demand_put(st, &it->u.demand);
			break;
		case GS__WR_DEMAND_DEL:
			err = gs_store_demand_delete(st, &it->u.demand.shape);
			break;
		}
	}
	return err;
}

static void wr_after_detached(struct gs_store_op *op, gs_err result)
{
	struct gs__wr *wr = op->arg;

	if (result)
		gs_error("node", "background write lost err=%s items=%d",
		         gs_err_name(result), wr->n);
	gs__wr_fini(wr);
	free(wr);
}

void gs__wr_submit_detached(struct gs_node *node, struct gs__wr *wr)
{
	node_check(node);
	if (wr == NULL)
		return;
	if (wr->n == 0) {
		gs__wr_fini(wr);
		free(wr);
		return;
	}
	wr->op.apply = wr_apply;
	wr->op.after = wr_after_detached;
	wr->op.arg = wr;
	gs_store_submit_detached(node->store, &wr->op);
}

/* Queues a waited batch; lock held. */
static void wr_submit(struct gs_node *node, struct gs__wr *wr)
{
	node_check(node);
	wr->op.apply = wr_apply;
	wr->op.after = NULL;
	wr->op.arg = wr;
	gs_store_submit(node->store, &wr->op);
}

/* Waits for a batch queued with wr_submit; lock NOT held. */
static gs_err wr_wait(struct gs_node *node, struct gs__wr *wr,
                      struct gs_errbuf *eb)
{
	gs_err err = gs_store_wait(node->store, &wr->op);

	gs__wr_fini(wr);
	if (err) {
		pthread_mutex_lock(&node->lock);
		node->ctr.commit_failures++;
		pthread_mutex_unlock(&node->lock);
		gs__node_resync(node);
		return gs_fail(eb, GS_ERR_IO,
		               "the change could not be saved (%s); nothing "
		               "was changed",
		               gs_strerror(err));
	}
	return GS_OK;
}

void gs_node_event(struct gs_node *node, const char *type, const char *slice,
                   const char *team, int gpu, const char *fmt, ...)
{
	struct gs__wr *wr = gs__wr_new();
	va_list ap;

	if (wr == NULL)
		return;
	va_start(ap, fmt);
	wr_vevent(wr, type, slice, team, gpu, -1, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&node->lock);
	gs__wr_submit_detached(node, wr);
	pthread_mutex_unlock(&node->lock);
}

/* ---- model storage ---- */

struct gs__nslice *gs__node_find(struct gs_node *node, const char *name)
{
	for (int i = 0; i < node->n; i++)
		if (strcmp(node->v[i]->s.name, name) == 0)
			return node->v[i];
	return NULL;
}

struct gs__nslice *gs__node_find_id(struct gs_node *node, int64_t id)
{
	int lo = 0, hi = node->n - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (node->v[mid]->s.id == id)
			return node->v[mid];
		if (node->v[mid]->s.id < id)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

static struct gs__nslice *model_add(struct gs_node *node,
                                    const struct gs_slice *s)
{
	struct gs__nslice *ns;
	int at;

	if (node->n == node->cap) {
		int cap = node->cap ? node->cap * 2 : 64;
		struct gs__nslice **nv = realloc(node->v, sizeof(*nv) * cap);

		if (nv == NULL)
			return NULL;
		node->v = nv;
		node->cap = cap;
	}
	ns = calloc(1, sizeof(*ns));
	if (ns == NULL)
		return NULL;
	ns->s = *s;
	ns->led_t_ns = gs_now_ns();
	ns->live.sm_share = gs_slice_sm_share(s);
	for (at = node->n; at > 0 && node->v[at - 1]->s.id > s->id; at--)
		node->v[at] = node->v[at - 1];
	node->v[at] = ns;
	node->n++;
	return ns;
}

static void model_del(struct gs_node *node, struct gs__nslice *ns)
{
	for (int i = 0; i < node->n; i++) {
		if (node->v[i] != ns)
			continue;
		memmove(&node->v[i], &node->v[i + 1],
		        sizeof(node->v[0]) * (size_t)(node->n - i - 1));
		node->n--;
		free(ns);
		return;
	}
}

static void model_clear(struct gs_node *node)
{
	for (int i = 0; i < node->n; i++)
		free(node->v[i]);
	node->n = 0;
}

static bool can_see(const struct gs_peer *peer, const struct gs_slice *s)
{
	return peer->admin || (peer->local && peer->uid == s->owner_uid);
}

/* ---- region ---- */

static void limits_of(const struct gs_slice *s, struct gs_slice_limits *lim)
{
	/* The spec was validated when the slice was made: the conversion
	 * cannot fail here; if it did, the slice gets no limits entry at
	 * all (region_put refuses an empty name), never wrong ones. */
	if (gs_spec_limits(&s->spec, lim, NULL) != GS_OK) {
		memset(lim, 0, sizeof(*lim));
		return;
	}
	(void)snprintf(lim->name, sizeof(lim->name), "%s", s->name);
	/* Only the owner's processes (and root's) may join it. */
	lim->owner_uid = s->owner_uid;
}

/*
 * Makes `region` hold slice `s` with its limits; OUT: *ref, *has_ref
 * (whether *ref names its entry, set even when a later update failed).
 * Needs no node lock: the only lock this waits on is the region's
 * writers' lock, which no tenant can open, and that wait has a deadline.
 * slice_create calls it off the node lock for a PENDING slice (nothing
 * else writes a pending slice's entry); on failure (logged, in *eb when
 * given) a shim cannot join the slice, so it never runs without limits.
 */
static gs_err region_write(struct gs_region *region, const struct gs_slice *s,
                           struct gs_slice_ref *ref, bool *has_ref,
                           struct gs_errbuf *out_eb)
{
	struct gs_slice_limits lim, cur;
	struct gs_errbuf eb = {0};
	bool created = false;
	gs_err err;

	*has_ref = false;
	limits_of(s, &lim);
	if (gs_fault_hit("region.write"))
		err = gs_fail(&eb, GS_ERR_IO, "region write failed (injected)");
	else
		err = gs_region_slice_ensure(region, &lim, ref, &created, &eb);
	if (err) {
		gs_error("node", "slice=%s region write failed: %s", s->name,
		         gs_errbuf_msg(&eb, err));
		if (out_eb)
			(void)gs_fail(out_eb, err, "%s",
			              gs_errbuf_msg(&eb, err));
		return err;
	}
	*has_ref = true;
	if (!created &&
	    (gs_region_slice_limits(region, ref, &cur) != GS_OK ||
	     memcmp(&cur, &lim, sizeof(lim)) != 0)) {
		err = gs_region_slice_update(region, ref, &lim, &eb);
		if (err) {
			gs_error("node", "slice=%s region update failed: %s",
			         s->name, gs_errbuf_msg(&eb, err));
			if (out_eb)
				(void)gs_fail(out_eb, err, "%s",
				              gs_errbuf_msg(&eb, err));
			return err;
		}
	}
	return GS_OK;
}

/* Records in `ns` where region_write put it (lock held). */
static void region_took(struct gs__nslice *ns, const struct gs_slice_ref *ref,
                        bool has_ref)
{
	ns->has_ref = has_ref;
	if (!has_ref) {
		ns->s.region_slot = -1; /* shown as pending until written */
		return;
	}
	ns->ref = *ref;
	ns->s.region_slot = ref->slot;
	ns->s.region_gen = (uint32_t)ref->generation;
}

/*
 * Makes the region hold `ns` with its limits (lock held; see
 * region_write). On failure the slice may have no region entry
 * (has_ref false): housekeeping retries.
 */
static gs_err region_put(struct gs_node *node, struct gs__nslice *ns,
                         struct gs_errbuf *out_eb)
{
	struct gs_slice_ref ref = ns->ref;
	bool has_ref;
	gs_err err;

	if (node->region == NULL)
		return GS_OK;
	err = region_write(node->region, &ns->s, &ref, &has_ref, out_eb);
	region_took(ns, &ref, has_ref);
	return err;
}

static void region_del(struct gs_node *node, struct gs__nslice *ns)
{
	struct gs_slice_ref ref;
	struct gs_errbuf eb = {0};

	if (node->region == NULL)
		return;
	if (!ns->has_ref &&
	    gs_region_slice_find(node->region, ns->s.name, &ref) == GS_OK) {
		ns->ref = ref;
		ns->has_ref = true;
	}
	if (ns->has_ref &&
	    gs_region_slice_delete(node->region, &ns->ref, &eb) != GS_OK &&
	    eb.set)
		gs_warn("node", "slice=%s region delete: %s", ns->s.name,
		        eb.msg);
	ns->has_ref = false;
}

/* ---- teams and quotas ---- */

static int team_index(struct gs_node *node, const char *name)
{
	for (int i = 0; i < node->n_teams; i++)
		if (strcmp(node->teams[i].name, name) == 0)
			return i;
	return -1;
}

/*
 * Lock held: checks the invariants at the top of this file and that every
 * MIG slice holds an instance of its GPU no other slice holds; aborts on
 * a violation, naming it. Runs after every mutation (each write batch)
 * in builds without NDEBUG (the ASan build) and wherever
 * GPUSLICE_CHECK_INVARIANTS is set (the fault-injection tests); a no-op
 * otherwise.
 */
static void node_check(struct gs_node *node)
{
	static int on = -1;

	if (on < 0) {
#ifdef NDEBUG
		on = getenv("GPUSLICE_CHECK_INVARIANTS") != NULL;
#else
		on = 1;
#endif
	}
	if (!on)
		return;
	for (int i = 0; i < node->n; i++) {
		const struct gs__nslice *ns = node->v[i];
		const struct gs_slice *a = &ns->s;

		if (i > 0 && node->v[i - 1]->s.id >= a->id)
			gs__node_violated("slices not ordered by id", a->name);
		for (int k = 0; k < i; k++) {
			const struct gs_slice *b = &node->v[k]->s;

			if (strcmp(a->name, b->name) == 0)
				gs__node_violated("two slices share a name",
				                  a->name);
			if (gs_mode_is_mig(a->mode) && gs_mode_is_mig(b->mode) &&
			    a->gpu_index == b->gpu_index && a->gi_id >= 0 &&
			    a->gi_id == b->gi_id)
				gs__node_violated("two slices hold one MIG "
				                  "instance",
				                  a->name);
		}
		if (team_index(node, a->team) < 0)
			gs__node_violated("a slice's team is not known",
			                  a->name);
		if (node->region != NULL && ns->has_ref) {
			struct gs_slice_limits want, have;

			limits_of(a, &want);
			if (gs_region_slice_limits(node->region, &ns->ref,
			                           &have) != GS_OK ||
			    memcmp(&want, &have, sizeof(want)) != 0)
				gs__node_violated("the region's limits are not "
				                  "the slice's",
				                  a->name);
		}
	}
}

void gs__node_violated(const char *what, const char *slice)
{
	gs_error("node", "invariant violated: %s (slice %s)", what, slice);
	abort();
}

/* Builds the quota tree for teams[0..n); OUT: *tree. */
static gs_err build_tree(const struct gs_team *teams, int n,
                         struct gs_quota_tree **tree, struct gs_errbuf *eb)
{
	struct gs_quota_team_def defs[GS__NODE_MAX_TEAMS];

	for (int i = 0; i < n; i++) {
		defs[i].name = teams[i].name;
		defs[i].parent = teams[i].parent;
		defs[i].guarantee = teams[i].guarantee;
		defs[i].max = teams[i].max;
	}
	return gs_quota_tree_create(defs, n, tree, eb);
}

static void default_team(struct gs_team *t, const char *name)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	for (int r = 0; r < GS_QRES__COUNT; r++)
		t->max.v[r] = GS_QUOTA_UNLIMITED;
}

/* ---- admission: the snapshot core decides on, and acting on it ----
 *
 * gs_admit (gs/admission.h) decides; these build its snapshot from the
 * GPUs and the live slices (lent pointers into the model: valid while the
 * lock is held) and carry out what it decided.
 */

static void adm_gpu_of(const struct gs_gpu *g, struct gs_adm_gpu *out)
{
	memset(out, 0, sizeof(*out));
	out->uuid = g->uuid;
	out->model = g->model;
	out->cat = g->cat;
	out->memory_bytes = g->memory_bytes;
	out->mig_capable = g->mig_capable;
	out->mig_on = g->mig_on;
	for (int k = 0; k < g->n_mig && k < GS_ADM_MIG_MAX; k++) {
		struct gs_adm_mig *m = &out->mig[out->n_mig++];

		m->uuid = g->mig[k].uuid;
		m->profile_name = g->mig[k].profile;
		m->profile =
		    g->cat
		        ? gs_catalog_profile_by_id(g->cat, g->mig[k].profile_id)
		        : NULL;
		m->gi_id = g->mig[k].gi_id;
		m->start = g->mig[k].start;
		m->size = g->mig[k].size;
		m->memory_bytes = g->mig[k].memory_bytes;
	}
}

static void adm_slice_of(struct gs_node *node, const struct gs_slice *s,
                         struct gs_adm_slice *out)
{
	memset(out, 0, sizeof(*out));
	out->id = s->id;
	out->name = s->name;
	out->owner_uid = s->owner_uid;
	out->team = team_index(node, s->team);
	out->created_ns = s->created_ns;
	out->priority = s->spec.priority;
	out->mode = s->mode;
	out->gpu = s->gpu_index;
	out->gi_id = s->gi_id;
	out->mig_profile = s->mig_profile;
	out->memory_bytes = s->spec.memory_bytes;
	out->compute_pct = s->spec.compute_pct;
	out->isolation = s->spec.isolation;
}

/* What a slice holds, as quotas count it. */
static void slice_use(struct gs_node *node, const struct gs_slice *s,
                      struct gs_qvec *v)
{
	struct gs_adm_slice as;
	struct gs_adm_gpu g;
	bool known = s->gpu_index >= 0 && s->gpu_index < node->gpus->n;

	adm_slice_of(node, s, &as);
	if (known)
		adm_gpu_of(&node->gpus->gpu[s->gpu_index], &g);
	gs_adm_slice_use(known ? &g : NULL, &as, v);
}

/*
 * The snapshot of the node as it is (lock held). OUT: *sn, and *slices,
 * which the caller frees (sn->slices points into it). GS_ERR_NOMEM.
 */
static gs_err adm_snapshot(struct gs_node *node, struct gs_adm_snapshot *sn,
                           struct gs_adm_slice **slices)
{
	int max = node->cfg->max_slices;

	memset(sn, 0, sizeof(*sn));
	*slices = calloc((size_t)node->n + 1, sizeof(**slices));
	if (*slices == NULL)
		return GS_ERR_NOMEM;
	for (int i = 0; i < node->gpus->n && i < GS_ADM_GPUS_MAX; i++) {
		adm_gpu_of(&node->gpus->gpu[i], &sn->gpu[sn->n_gpus]);
		sn->gpu[sn->n_gpus++].busy = node->mig_busy[i];
	}
	for (int i = 0; i < node->n; i++)
		adm_slice_of(node, &node->v[i]->s, &(*slices)[i]);
	if (node->region && max > GS_REGION_MAX_SLICES)
		max = GS_REGION_MAX_SLICES;
	sn->n_slices = node->n;
	sn->slices = *slices;
	sn->teams = node->qtree;
	sn->demand = &node->demand;
	sn->now_ns = gs_now_ns();
	sn->cfg.placement = node->cfg->placement;
	sn->cfg.default_mode = node->cfg->default_mode;
	sn->cfg.max_slices = max;
	sn->cfg.may_change_mig = node->gpus->sim || node->cfg->mig_on_real_gpu;
	sn->cfg.mps = node->mps_found;
	sn->cfg.user_max_slices = node->cfg->user_max_slices;
	sn->cfg.user_max_memory_percent = node->cfg->user_max_memory_percent;
	sn->cfg.default_team = team_index(node, node->cfg->default_team);
	return GS_OK;
}

/* Whether a MIG instance at gi_id of GPU g is held by a slice. */
static bool mig_in_use(struct gs_node *node, int g, int gi_id)
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
static bool mig_has_work(const struct gs_adm_decision *d)
{
	return d->mig_on || d->n_steps > 0 || d->mig_off;
}

/*
 * The NVML part of decision `d` on GPU g of `gpus` (node->mig_lock held;
 * node->lock not needed when `gpus` is a private copy): MIG on, the
 * steps in order (destroys name idle instances, creates a profile at a
 * placement), MIG off. gpus->gpu[g] is refreshed as it goes. On failure
 * the steps done stay done (the instances made are idle: the next slice
 * of their profile takes them).
 */
static gs_err mig_steps(struct gs_gpus *gpus, int g,
                        const struct gs_adm_decision *d, struct gs_errbuf *eb)
{
	gs_err err;

	if (d->mig_on) {
		err = gs_gpus_set_mig(gpus, g, true, eb);
		if (err)
			return err;
		gs_info("node", "gpu=%d MIG mode on", g);
	}
	for (int k = 0; k < d->n_steps; k++) {
		const struct gs_adm_step *st = &d->steps[k];
		const char *pname = st->profile ? st->profile->name : "?";
		struct gs_mig_dev dev;

		if (st->op == GS_MIG_DESTROY) {
			err = gs_gpus_mig_destroy(gpus, g, st->gi_id, eb);
			if (err)
				return err;
			gs_info("node",
			        "gpu=%d MIG instance %s@%d destroyed (idle)", g,
			        pname, st->start);
			continue;
		}
		err = gs_gpus_mig_create(gpus, g, st->profile->profile_id,
		                         st->start, &dev, eb);
		if (err)
			return err;
		gs_info("node", "gpu=%d MIG instance %s@%d created", g, pname,
		        st->start);
	}
	if (d->mig_off) {
		err = gs_gpus_set_mig(gpus, g, false, eb);
		if (err)
			return err;
		gs_info("node",
		        "gpu=%d MIG mode off (no slice used its instances)", g);
	}
	return GS_OK;
}

/*
 * Lock held, the MIG steps done: a MIG-mode slice `s` takes the instance
 * decision `d` names, or the first idle one of its profile (at
 * d->take_start when >= 0). OUT: s->mig_uuid, mig_profile, gi_id, ci_id.
 */
static gs_err mig_claim(struct gs_node *node, struct gs_slice *s,
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
		    mig_in_use(node, g, gp->mig[m].gi_id))
			continue;
		if (mig_take(node, s, gp->mig[m].gi_id))
			return GS_OK;
	}
	if (d->take_start >= 0)
		return gs_fail(eb, GS_ERR_DRIVER,
		               "the %s@%d instance did not appear after "
		               "creation",
		               d->profile->name, d->take_start);
	return gs_fail(eb, GS_ERR_DRIVER,
	               "the %s instance did not appear after creation",
	               d->profile->name);
}

/* ---- life cycle ---- */

struct load_ctx {
	struct gs_node *node;
	gs_err err;
	int n_teams;
	struct gs_team *teams;
};

static void load_slice(void *ctx, const struct gs_slice *s)
{
	struct load_ctx *lc = ctx;

	if (model_add(lc->node, s) == NULL)
		lc->err = GS_ERR_NOMEM;
}

static void load_team(void *ctx, const struct gs_team *t)
{
	struct load_ctx *lc = ctx;

	if (lc->n_teams < GS__NODE_MAX_TEAMS)
		lc->teams[lc->n_teams++] = *t;
}

/*
 * The teams: the config's, then the API's from the store that the config
 * does not name, then the default team when nobody defined it. Also
 * reconciles the store with the config (writes go into `wr`).
 */
static gs_err merge_teams(struct gs_node *node, const struct gs_team *stored,
                          int n_stored, struct gs__wr *wr, struct gs_errbuf *eb)
{
	const struct gs_config *cfg = node->cfg;
	struct gs_quota_tree *tree = NULL;
	gs_err err;

	node->n_teams = 0;
	for (int i = 0; i < cfg->n_teams; i++) {
		node->teams[node->n_teams++] = cfg->teams[i];
		gs__wr_team_put(wr, &cfg->teams[i]);
	}
	for (int i = 0; i < n_stored; i++) {
		if (team_index(node, stored[i].name) >= 0)
			continue;
		if (stored[i].from_config) {
			/* Removed from the config: forget it. */
			gs__wr_team_del(wr, stored[i].name);
			continue;
		}
		if (node->n_teams < GS__NODE_MAX_TEAMS)
			node->teams[node->n_teams++] = stored[i];
	}
	if (team_index(node, cfg->default_team) < 0 &&
	    node->n_teams < GS__NODE_MAX_TEAMS)
		default_team(&node->teams[node->n_teams++], cfg->default_team);
	err = build_tree(node->teams, node->n_teams, &tree, eb);
	if (err)
		return err;
	gs_quota_tree_destroy(node->qtree);
	node->qtree = tree;
	return GS_OK;
}

static void load_demand_class(void *ctx, const struct gs_demand_class *c)
{
	struct gs_node *node = ctx;
	struct gs_errbuf eb = {0};

	if (gs_demand_put(&node->demand, c, gs_now_ns(), &eb) != GS_OK)
		gs_warn("node", "demand row skipped: %s", eb.msg);
}

/*
 * The demand seen, from the store, decayed to now; classes that decayed
 * away (or did not fit the table) are deleted there.
 */
static gs_err load_demand(struct gs_node *node, struct gs_errbuf *eb)
{
	const struct gs_config *cfg = node->cfg;
	struct gs_demand_shape gone[GS_DEMAND_MAX_CLASSES];
	struct gs__wr wr;
	int n_gone;
	gs_err err;

	gs_demand_init(&node->demand,
	               (int64_t)cfg->demand_half_life_s * 1000000000ll);
	err = gs_store_load_demand(node->store, load_demand_class, node, eb);
	if (err)
		return err;
	n_gone = gs_demand_prune(&node->demand, gs_now_ns(), gone);
	if (n_gone == 0)
		goto out;
	gs__wr_init(&wr);
	for (int k = 0; k < n_gone; k++)
		gs__wr_demand_del(&wr, &gone[k]);
	wr_submit(node, &wr);
	err = gs_store_wait(node->store, &wr.op);
	gs__wr_fini(&wr);
	if (err)
		return gs_fail(eb, err, "cannot forget old demand");
out:
	gs_info("node", "demand classes=%d weight=%.1f half_life_s=%lld",
	        node->demand.n, gs_demand_total(&node->demand, gs_now_ns()),
	        (long long)cfg->demand_half_life_s);
	return GS_OK;
}

/*
 * A daemon that starts again picks the ledger up where it stopped: the
 * cursors of each slice it loads are what its rows already hold (the
 * region's books of a slice that outlived the daemon keep counting from
 * the slice's creation), and its next row starts where the last one ended
 * (the slice was held while the daemon was down). Without rows: from now
 * and from zero.
 */
static void ledger_resume(struct gs_node *node)
{
	for (int i = 0; i < node->n; i++) {
		struct gs__nslice *ns = node->v[i];
		struct gs_store_ledger_sum sum;
		struct gs_errbuf eb = {0};

		if (gs_store_ledger_sum(node->store, ns->s.id, &sum, &eb) !=
		    GS_OK) {
			gs_warn("node",
			        "slice=%s ledger not resumed (its next row may "
			        "count earlier usage again): %s",
			        ns->s.name, eb.msg);
			continue;
		}
		if (sum.t1_ns == 0)
			continue;
		ns->led_busy_ns = (uint64_t)(sum.gpu_seconds * 1e9);
		ns->led_throttled_ns = (uint64_t)(sum.throttled_seconds * 1e9);
		if (ns->s.spec.memory_bytes == 0)
			ns->led_mem_byte_s =
			    sum.gib_seconds * 1024.0 * 1024.0 * 1024.0;
		if (sum.t1_ns < ns->led_t_ns)
			ns->led_t_ns = sum.t1_ns;
	}
}

gs_err gs_node_create(const struct gs_node_opts *opts, struct gs_node **out,
                      struct gs_errbuf *eb)
{
	struct gs_node *node;
	struct load_ctx lc;
	struct gs_team *stored;
	struct gs__wr wr;
	int64_t maxid = 0;
	gs_err err;

	node = calloc(1, sizeof(*node));
	stored = calloc(GS__NODE_MAX_TEAMS, sizeof(*stored));
	if (node == NULL || stored == NULL) {
		free(node);
		free(stored);
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	}
	pthread_mutex_init(&node->lock, NULL);
	pthread_mutex_init(&node->resync_lock, NULL);
	pthread_mutex_init(&node->mig_lock, NULL);
	node->cfg = opts->cfg;
	node->store = opts->store;
	node->gpus = opts->gpus;
	node->region = opts->region;
	snprintf(node->region_dir, sizeof(node->region_dir), "%s",
	         opts->region_dir ? opts->region_dir : "");
	snprintf(node->mps_dir, sizeof(node->mps_dir), "%s",
	         opts->mps_dir ? opts->mps_dir : "");
	node->ctr.started_ns = gs_now_ns();
	gs__node_register_devices(node);
	node->mps_found = gs_find_program(node->cfg->mps_control, NULL, 0);
	if (!node->mps_found)
		gs_warn("node",
		        "MPS control daemon '%s' not found: mode auto gives "
		        "slices that accept a shared fault domain turns "
		        "(time-slicing) instead of MPS; mode mps slices "
		        "will not start",
		        node->cfg->mps_control);

	memset(&lc, 0, sizeof(lc));
	lc.node = node;
	lc.teams = stored;
	err = gs_store_load_teams(node->store, load_team, &lc, eb);
	if (err)
		goto out_free;
	gs__wr_init(&wr);
	err = merge_teams(node, stored, lc.n_teams, &wr, eb);
	if (!err) {
		wr_submit(node, &wr);
		err = gs_store_wait(node->store, &wr.op);
		if (err)
			gs_fail(eb, err, "cannot save teams");
	}
	gs__wr_fini(&wr);
	if (err)
		goto out_free;
	err = gs_store_load_slices(node->store, load_slice, &lc, eb);
	if (!err && lc.err)
		err = gs_fail(eb, lc.err, "out of memory loading slices");
	if (err)
		goto out_free;
	ledger_resume(node);
	err = load_demand(node, eb);
	if (err)
		goto out_free;
	(void)gs_store_max_slice_id(node->store, &maxid);
	node->next_id = maxid + 1;
	if (node->n && node->v[node->n - 1]->s.id >= node->next_id)
		node->next_id = node->v[node->n - 1]->s.id + 1;
	free(stored);
	*out = node;
	return GS_OK;

out_free:
	free(stored);
	gs_node_destroy(node);
	return err;
}

void gs_node_destroy(struct gs_node *node)
{
	if (node == NULL)
		return;
	model_clear(node);
	free(node->v);
	gs_quota_tree_destroy(node->qtree);
	pthread_mutex_destroy(&node->lock);
	pthread_mutex_destroy(&node->resync_lock);
	pthread_mutex_destroy(&node->mig_lock);
	free(node);
}

void gs__node_resync(struct gs_node *node)
{
	struct load_ctx lc;
	struct gs_errbuf eb = {0};
	bool whole = true;

	struct cursor {
		int64_t id, t;
		uint64_t busy, thr, sm_busy;
		double mem, sm;
	} *keep;
	int n_keep = 0;

	pthread_mutex_lock(&node->resync_lock);
	pthread_mutex_lock(&node->lock);
	/* The ledger's cursors outlive the reload (or the next row would
	 * count the slice's whole usage again). */
	keep = calloc((size_t)node->n + 1, sizeof(*keep));
	for (int i = 0; keep != NULL && i < node->n; i++) {
		const struct gs__nslice *o = node->v[i];

		keep[n_keep++] = (struct cursor){
		    o->s.id,          o->led_t_ns, o->led_busy_ns,
		    o->led_throttled_ns, o->sm_busy_ns, o->led_mem_byte_s,
		    o->sm_s};
	}
	model_clear(node);
	memset(&lc, 0, sizeof(lc));
	lc.node = node;
	if (gs_store_load_slices(node->store, load_slice, &lc, &eb) != GS_OK) {
		/* A partial model must not take slices out of the region
		 * (their tenants would lose their limits): only add. */
		gs_error("node",
		         "resync failed, region slices kept as they are: %s",
		         eb.msg);
		whole = false;
	}
	for (int i = 0; i < node->n; i++) {
		struct gs__nslice *ns = node->v[i];

		for (int k = 0; k < n_keep; k++) {
			if (keep[k].id != ns->s.id)
				continue;
			ns->led_t_ns = keep[k].t;
			ns->led_busy_ns = keep[k].busy;
			ns->led_throttled_ns = keep[k].thr;
			ns->led_mem_byte_s = keep[k].mem;
			ns->sm_busy_ns = keep[k].sm_busy;
			ns->sm_s = keep[k].sm;
			break;
		}
	}
	if (keep == NULL)
		ledger_resume(node); /* no memory to keep them: the store's */
	free(keep);
	if (node->region) {
		struct gs_slice_ref it = {.slot = -1};

		while (whole && gs_region_slice_next(node->region, &it)) {
			struct gs_slice_limits lim;

			if (gs_region_slice_limits(node->region, &it, &lim) ==
			        GS_OK &&
			    gs__node_find(node, lim.name) == NULL)
				(void)gs_region_slice_delete(node->region, &it,
				                             NULL);
		}
		/* A PENDING slice's entry is its create's to write. */
		for (int i = 0; i < node->n; i++)
			if (node->v[i]->s.state != GS_SLICE_PENDING)
				(void)region_put(node, node->v[i], NULL);
	}
	gs_warn("node", "model reloaded from the store slices=%d", node->n);
	pthread_mutex_unlock(&node->lock);
	pthread_mutex_unlock(&node->resync_lock);
}

/*
 * Sends `sig` to the processes of a slice: region entries the kernel
 * confirms (gs_watchdog_entry_genuine: a forged entry naming someone
 * else's process is skipped) and API-attached pids, each only while it
 * runs as the slice's owner (any uid when root owns the slice), through a
 * pidfd checked at the moment of the signal.
 */
static void signal_slice(struct gs_node *node, struct gs__nslice *ns, int sig)
{
	int64_t uid = ns->s.owner_uid != 0 ? (int64_t)ns->s.owner_uid : -1;

	if (node->region && ns->has_ref) {
		struct gs_proc_ref it = {.slot = -1};
		struct gs_proc_info pi;

		while (gs_region_proc_next(node->region, &it, &pi)) {
			if (pi.slice.slot != ns->ref.slot ||
			    pi.slice.generation != ns->ref.generation ||
			    !pi.local ||
			    !gs_watchdog_entry_genuine(&pi, &ns->s, NULL))
				continue;
			if (gs_proc_signal(pi.pid, pi.start_time, uid, sig) != 0)
				gs_info("node", "slice=%s pid=%d not signalled: %s",
				        ns->s.name, (int)pi.pid,
				        strerror(errno));
		}
	}
	for (int i = 0; i < ns->s.n_pids; i++)
		if (gs_proc_signal(ns->s.pids[i], 0, uid, sig) != 0)
			gs_info("node", "slice=%s pid=%d not signalled: %s",
			        ns->s.name, (int)ns->s.pids[i], strerror(errno));
}

double gs__node_sm_seconds(const struct gs__nslice *ns, uint64_t busy_ns)
{
	if (busy_ns < ns->sm_busy_ns)
		return ns->sm_s;
	return ns->sm_s + (double)(busy_ns - ns->sm_busy_ns) / 1e9 *
	                      gs_slice_sm_share(&ns->s);
}

void gs__node_sm_advance(struct gs__nslice *ns, uint64_t busy_ns)
{
	ns->sm_s = gs__node_sm_seconds(ns, busy_ns);
	ns->sm_busy_ns = busy_ns;
	ns->live.sm_share = gs_slice_sm_share(&ns->s);
	ns->live.sm_seconds = ns->sm_s;
}

void gs__node_sample(struct gs_node *node, struct gs__nslice *ns,
                     struct gs__wr *wr, int64_t now)
{
	struct gs_usage_row r;
	struct gs_slice_usage u;
	double dt = (double)(now - ns->led_t_ns) / 1e9;

	/* A slice being created holds nothing anyone could use yet. */
	if (dt <= 0 || ns->s.state == GS_SLICE_PENDING ||
	    ns->s.state == GS_SLICE_FAILED)
		return;
	memset(&r, 0, sizeof(r));
	if (node->region && ns->has_ref &&
	    gs_region_slice_usage(node->region, &ns->ref, &u) == GS_OK) {
		if (u.busy_ns >= ns->led_busy_ns)
			r.gpu_seconds =
			    (double)(u.busy_ns - ns->led_busy_ns) / 1e9;
		if (u.throttled_ns >= ns->led_throttled_ns)
			r.throttled_seconds =
			    (double)(u.throttled_ns - ns->led_throttled_ns) /
			    1e9;
		if (ns->s.spec.memory_bytes == 0 &&
		    u.mem_byte_s >= ns->led_mem_byte_s)
			r.gib_seconds = (u.mem_byte_s - ns->led_mem_byte_s) /
			                (1024.0 * 1024.0 * 1024.0);
		ns->led_busy_ns = u.busy_ns;
		ns->led_throttled_ns = u.throttled_ns;
		ns->led_mem_byte_s = u.mem_byte_s;
		ns->live.n_procs = u.n_procs;
		ns->live.mem_used = u.mem_used;
		ns->live.mem_peak = u.mem_peak;
		ns->live.busy_ns = u.busy_ns;
		ns->live.throttled_ns = u.throttled_ns;
		gs__node_sm_advance(ns, u.busy_ns);
	}
	/* SM-time at the share of this interval (sm_advance's rate). */
	r.sm_seconds = r.gpu_seconds * gs_slice_sm_share(&ns->s);
	/* Memory is charged as reserved: a cap held is a cap others lack. */
	if (ns->s.spec.memory_bytes)
		r.gib_seconds = (double)ns->s.spec.memory_bytes /
		                (1024.0 * 1024.0 * 1024.0) * dt;
	snprintf(r.mode, sizeof(r.mode), "%s", gs_mode_name(ns->s.mode));
	r.alloc_seconds =
	    dt * (ns->s.spec.compute_pct ? ns->s.spec.compute_pct : 100) /
	    100.0;
	r.slice_id = ns->s.id;
	r.owner_uid = ns->s.owner_uid;
	snprintf(r.slice, sizeof(r.slice), "%s", ns->s.name);
	snprintf(r.team, sizeof(r.team), "%s", ns->s.team);
	if (ns->s.gpu_index >= 0 && ns->s.gpu_index < node->gpus->n)
		snprintf(r.gpu_model, sizeof(r.gpu_model), "%s",
		         node->gpus->gpu[ns->s.gpu_index].model);
	r.t0_ns = ns->led_t_ns;
	r.t1_ns = now;
	ns->led_t_ns = now;
	gs__wr_usage(wr, &r);
}

void gs__node_remove(struct gs_node *node, struct gs__nslice *ns,
                     struct gs__wr *wr, const char *type, const char *why)
{
	gs__node_sample(node, ns, wr, gs_now_ns());
	gs__wr_slice_del(wr, ns->s.id);
	gs__wr_event(wr, type, &ns->s, "%s", why);
	region_del(node, ns);
	/* MIG instances stay, idle, for the next slice of that profile. */
	model_del(node, ns);
}

/* ---- slices ---- */

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

/* Submits a batch that was announced with gs_store_intent (lock held). */
static void wr_submit_announced(struct gs_node *node, struct gs__wr *wr,
                                bool *intent)
{
	wr_submit(node, wr);
	if (*intent) {
		gs_store_intent_drop(node->store);
		*intent = false;
	}
}

/*
 * Lock held: undoes the MIG instance a failed creation made for slice `s`
 * (decision `d` asked for a new one; `s` is out of the model), so that a
 * refused request leaves no instance behind. An instance it only took
 * stays (it was there), as does one another slice holds by now.
 */
static void mig_undo(struct gs_node *node, const struct gs_slice *s,
                     const struct gs_adm_decision *d)
{
	struct gs_errbuf eb = {0};

	gs_err err;

	if (!gs_mode_is_mig(d->mode) || d->gi_id >= 0 || s->gi_id < 0 ||
	    mig_in_use(node, s->gpu_index, s->gi_id))
		return;
	if (node->mig_busy[s->gpu_index]) {
		gs_info("node",
		        "gpu=%d MIG instance %d made for %s stays idle (the GPU's "
		        "layout is changing)",
		        s->gpu_index, s->gi_id, s->name);
		return;
	}
	pthread_mutex_lock(&node->mig_lock);
	err = gs_gpus_mig_destroy(node->gpus, s->gpu_index, s->gi_id, &eb);
	pthread_mutex_unlock(&node->mig_lock);
	if (err != GS_OK)
		gs_warn("node",
		        "slice=%s gpu=%d MIG instance %d made for it not "
		        "destroyed: %s (it stays idle, for the next slice)",
		        s->name, s->gpu_index, s->gi_id, eb.msg);
	else
		gs_info("node", "gpu=%d MIG instance %d made for %s destroyed "
		        "(the slice was not created)",
		        s->gpu_index, s->gi_id, s->name);
}

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
	gs__wr_submit_detached(node, wr);
}

void gs_node_set_create_hook(struct gs_node *node,
                             void (*fn)(void *arg, const char *slice),
                             void *arg)
{
	node->create_hook = fn;
	node->create_hook_arg = arg;
}

void gs_node_set_mig_hook(struct gs_node *node,
                          void (*fn)(void *arg, const char *slice),
                          void *arg)
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

/* Whether a slice of the model holds region entry `ref`. Lock held. */
static bool region_ref_held(struct gs_node *node,
                            const struct gs_slice_ref *ref)
{
	for (int i = 0; i < node->n; i++)
		if (node->v[i]->has_ref && node->v[i]->ref.slot == ref->slot &&
		    node->v[i]->ref.generation == ref->generation)
			return true;
	return false;
}

/*
 * A slice left PENDING by a create that cannot finish (lock held): it
 * becomes FAILED and goes, with a slice.failed event saying `why`, and the
 * MIG instance made for it goes too (decision `d`; NULL: it stays idle).
 */
static void create_fail(struct gs_node *node, struct gs__nslice *ns,
                        const struct gs_adm_decision *d, struct gs__wr *wr,
                        const char *why)
{
	struct gs_slice failed;

	ns->s.state = GS_SLICE_FAILED;
	failed = ns->s;
	gs_warn("node", "slice=%s failed: %s", failed.name, why);
	gs__node_remove(node, ns, wr, "slice.failed", why);
	if (d)
		mig_undo(node, &failed, d);
}

/*
 * Phase B of a create; the lock is NOT held on entry. `s` is the slice as
 * phase A saved it (PENDING, its MIG instance taken). Writes its limits
 * to the region off the lock (region_write may wait on the region's
 * writers' lock), then, under the lock, finds the slice again by id and
 * makes it READY, saved with its slice.created event; or, when the
 * region write failed, FAILED and gone (create_fail). A slice deleted
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
		rerr = region_write(node->region, s, &ref, &has_ref, &reb);

	gs_store_intent(node->store);
	pthread_mutex_lock(&node->lock);
	ns = gs__node_find_id(node, s->id);
	if (ns == NULL) {
		/* Deleted while pending (or lost to a resync). The entry
		 * written goes unless a slice of that name now holds it (a
		 * new one of the same name may have taken it over). */
		struct gs__wr *dw = gs__wr_new();

		if (has_ref && !region_ref_held(node, &ref) &&
		    gs__node_find(node, s->name) == NULL)
			(void)gs_region_slice_delete(node->region, &ref, NULL);
		mig_undo(node, s, dec);
		/* A resync that ran before phase A's row was committed lost
		 * the slice from the model but not from the store. */
		gs__wr_slice_del(dw, s->id);
		gs__wr_submit_detached(node, dw);
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
	region_took(ns, &ref, has_ref);
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
			snprintf(why, sizeof(why),
			         "not created: its MPS control daemon could not "
			         "start: %s",
			         gs_errbuf_msg(&meb, GS_ERR_UNAVAILABLE));
		else
			snprintf(why, sizeof(why),
			         "not created: its limits could not be written "
			         "to the shared region: %s",
			         gs_errbuf_msg(&reb, rerr));
		create_fail(node, ns, dec, &wr, why);
		node->ctr.rejects++;
		wr_submit_announced(node, &wr, &intent);
		pthread_mutex_unlock(&node->lock);
		(void)wr_wait(node, &wr, NULL);
		return gs_fail(eb, GS_ERR_UNAVAILABLE, "slice %s %s", s->name,
		               why);
	}
	ns->s.state = GS_SLICE_READY;
	ns->s.updated_ns = gs_now_ns();
	ns->led_t_ns = ns->s.updated_ns; /* the ledger skipped it till now */
	gs__wr_slice_put(&wr, &ns->s);
	gs__wr_event(&wr, "slice.created", &ns->s,
	             "mode=%s memory=%llu compute=%d priority=%s%s%s%s%s",
	             gs_mode_name(s->mode),
	             (unsigned long long)s->spec.memory_bytes,
	             s->spec.compute_pct, gs_priority_name(s->spec.priority),
	             s->borrowed ? " borrowed" : "",
	             dec->mode_why[0] ? " (" : "", dec->mode_why,
	             dec->mode_why[0] ? ")" : "");
	node->ctr.creates++;
	res->slice = ns->s;
	wr_submit_announced(node, &wr, &intent);
	pthread_mutex_unlock(&node->lock);
	err = wr_wait(node, &wr, eb);
	if (err) {
		/* Not saved: the model went back to the store's (resync),
		 * where the slice is still PENDING, and no one would finish
		 * it: it fails, and the instance made for it goes. */
		struct gs__wr *fw = gs__wr_new();

		pthread_mutex_lock(&node->lock);
		ns = gs__node_find_id(node, s->id);
		if (ns != NULL && ns->s.state == GS_SLICE_PENDING)
			create_fail(node, ns, NULL, fw,
			            "not created: it could not be saved as "
			            "ready");
		if (gs__node_find_id(node, s->id) == NULL)
			mig_undo(node, s, dec);
		gs__wr_submit_detached(node, fw);
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
	err = mig_steps(priv, g, d, eb);
	pthread_mutex_unlock(&node->mig_lock);

	gs__wr_init(&fw);
	pthread_mutex_lock(&node->lock);
	node->gpus->gpu[g] = priv->gpu[g];
	node->mig_busy[g] = false;
	/* Its processes may start the moment the create answers: the new
	 * instance must be in the region's GPU table by then (a shim makes
	 * no context on a GPU its daemon does not know). */
	gs__node_register_devices(node);
	ns = gs__node_find_id(node, s->id);
	if (ns != NULL && err == GS_OK) {
		err = mig_claim(node, &ns->s, d, eb);
		if (err == GS_OK)
			*s = ns->s;
	}
	if (ns != NULL && err) {
		char why[256];

		snprintf(why, sizeof(why),
		         "not created: its MIG change failed: %s",
		         gs_errbuf_msg(eb, err));
		create_fail(node, ns, NULL, &fw, why);
		wr_submit(node, &fw);
		failed = true;
	}
	pthread_mutex_unlock(&node->lock);
	werr = wr_wait(node, wr, err ? NULL : eb);
	if (failed)
		(void)wr_wait(node, &fw, NULL);
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
			mig_undo(node, s, d);
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
	areq.team = team_index(node, s.team);
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
	if (adm_snapshot(node, sn, &snap_slices) != GS_OK) {
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
			signal_slice(node, victims[k], SIGTERM);
			gs__node_remove(node, victims[k], &wr, "quota.reclaim",
			                why);
			node->ctr.reclaims++;
		}
		free(victims);
	}
	mig_work = mig_has_work(&dec);
	if (mig_work) {
		/* The NVML steps run off the lock (create_mig), on a copy. */
		priv = malloc(sizeof(*priv));
		err = priv ? GS_OK
		           : gs_fail(eb, GS_ERR_NOMEM, "out of memory");
		if (priv) {
			*priv = *node->gpus;
			node->mig_busy[s.gpu_index] = true;
		}
	} else {
		err = mig_claim(node, &s, &dec, eb);
	}
	if (err) {
		/* Victims are gone already: save that much, and why the slice
		 * they made room for is not there. */
		gs__wr_event(&wr, "slice.failed", &s,
		             "not created: its MIG change failed: %s",
		             gs_errbuf_msg(eb, err));
		wr_submit_announced(node, &wr, intent);
		pthread_mutex_unlock(&node->lock);
		(void)wr_wait(node, &wr, NULL);
		goto out_free;
	}
	/* The end of phase A: the slice joins the model PENDING (the next
	 * snapshot counts its share, so nobody else is admitted into it)
	 * and is saved so in the batch that saves the victims' removal. */
	s.state = GS_SLICE_PENDING;
	ns = model_add(node, &s);
	if (ns == NULL) {
		err = gs_fail(eb, GS_ERR_NOMEM, "out of memory");
		if (mig_work)
			node->mig_busy[s.gpu_index] = false;
		else
			mig_undo(node, &s, &dec);
		wr_submit_announced(node, &wr, intent);
		pthread_mutex_unlock(&node->lock);
		(void)wr_wait(node, &wr, NULL);
		goto out_free;
	}
	node->next_id++;
	gs__wr_slice_put(&wr, &ns->s);
	wr_submit_announced(node, &wr, intent);
	pthread_mutex_unlock(&node->lock);
	if (mig_work) {
		err = create_mig(node, &s, &dec, priv, &wr, eb);
		if (err)
			goto out_free;
		err = create_finish(node, &s, &dec, res, eb);
		goto out_free;
	}
	err = wr_wait(node, &wr, eb);
	if (err) {
		/* Not saved: the model went back to the store's (resync);
		 * the instance made for it goes too. */
		pthread_mutex_lock(&node->lock);
		if (gs__node_find_id(node, s.id) == NULL)
			mig_undo(node, &s, &dec);
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
	if (ns == NULL || !can_see(peer, &ns->s)) {
		pthread_mutex_unlock(&node->lock);
		gs_store_intent_drop(node->store);
		return gs_fail(eb, GS_ERR_NOT_FOUND, "no slice '%s'", name);
	}
	gs__wr_init(&wr);
	snprintf(why, sizeof(why), "deleted by %s", peer->user);
	gs__node_remove(node, ns, &wr, "slice.deleted", why);
	node->ctr.deletes++;
	wr_submit_announced(node, &wr, &intent);
	pthread_mutex_unlock(&node->lock);
	return wr_wait(node, &wr, eb);
}

gs_err gs_node_slice_get(struct gs_node *node, const struct gs_peer *peer,
                         const char *name, struct gs_slice *out)
{
	struct gs__nslice *ns;
	gs_err err = GS_ERR_NOT_FOUND;

	pthread_mutex_lock(&node->lock);
	ns = gs__node_find(node, name);
	if (ns && can_see(peer, &ns->s)) {
		*out = ns->s;
		err = GS_OK;
	}
	pthread_mutex_unlock(&node->lock);
	return err;
}

gs_err gs_node_slice_list(struct gs_node *node, const struct gs_peer *peer,
                          const char *team, struct gs_slice **out, int *n)
{
	struct gs_slice *v;

	pthread_mutex_lock(&node->lock);
	v = malloc(sizeof(*v) * (size_t)(node->n + 1));
	if (v == NULL) {
		pthread_mutex_unlock(&node->lock);
		return GS_ERR_NOMEM;
	}
	*n = 0;
	for (int i = 0; i < node->n; i++) {
		const struct gs_slice *s = &node->v[i]->s;

		if (!can_see(peer, s) ||
		    (team && team[0] && strcmp(team, s->team) != 0))
			continue;
		v[(*n)++] = *s;
	}
	pthread_mutex_unlock(&node->lock);
	*out = v;
	return GS_OK;
}


gs_err gs_node_slice_attach(struct gs_node *node, const struct gs_peer *peer,
                            const char *name, int32_t pid, struct gs_slice *out,
                            struct gs_errbuf *eb)
{
	struct gs__nslice *ns;
	struct gs__wr wr;
	int64_t uid;
	bool known = false;

	if (pid <= 0)
		return gs_fail(eb, GS_ERR_INVALID, "bad pid %d", (int)pid);
	uid = gs_proc_uid(pid);
	if (uid < 0)
		return gs_fail(eb, GS_ERR_NOT_FOUND, "no process %d", (int)pid);
	if (!peer->admin && (uint32_t)uid != peer->uid)
		return gs_fail(eb, GS_ERR_PERM,
		               "process %d belongs to another user", (int)pid);
	pthread_mutex_lock(&node->lock);
	ns = gs__node_find(node, name);
	if (ns == NULL || !can_see(peer, &ns->s)) {
		pthread_mutex_unlock(&node->lock);
		return gs_fail(eb, GS_ERR_NOT_FOUND, "no slice '%s'", name);
	}
	for (int i = 0; i < ns->s.n_pids; i++)
		if (ns->s.pids[i] == pid)
			known = true;
	if (!known) {
		/* Forget processes that are gone to make room. */
		int k = 0;

		for (int i = 0; i < ns->s.n_pids; i++)
			if (gs_proc_uid(ns->s.pids[i]) >= 0)
				ns->s.pids[k++] = ns->s.pids[i];
		ns->s.n_pids = k;
		if (ns->s.n_pids == GS_SLICE_MAX_PIDS) {
			pthread_mutex_unlock(&node->lock);
			return gs_fail(eb, GS_ERR_NO_FIT,
			               "slice '%s' has %d processes attached",
			               name, GS_SLICE_MAX_PIDS);
		}
		ns->s.pids[ns->s.n_pids++] = pid;
	}
	ns->s.had_procs = true;
	ns->procs_seen = true;
	ns->s.updated_ns = gs_now_ns();
	if (out)
		*out = ns->s;
	gs__wr_init(&wr);
	gs__wr_slice_put(&wr, &ns->s);
	if (!known)
		gs__wr_event(&wr, "slice.attached", &ns->s, "pid=%d", (int)pid);
	wr_submit(node, &wr);
	pthread_mutex_unlock(&node->lock);
	return wr_wait(node, &wr, eb);
}

gs_err gs_node_slice_usage(struct gs_node *node, int64_t id,
                           struct gs_node_usage *out)
{
	struct gs__nslice *ns;
	struct gs_slice_ref ref;
	struct gs_slice_usage u;
	bool has_ref = false;

	pthread_mutex_lock(&node->lock);
	ns = gs__node_find_id(node, id);
	if (ns == NULL) {
		pthread_mutex_unlock(&node->lock);
		return GS_ERR_NOT_FOUND;
	}
	*out = ns->live;
	has_ref = node->region && ns->has_ref;
	ref = ns->ref;
	pthread_mutex_unlock(&node->lock);
	/* Off the node lock: the usage file's mutex is shared with tenants
	 * (a stale ref reads GS_ERR_NOT_FOUND and keeps the last sample). */
	if (has_ref && gs_region_slice_usage(node->region, &ref, &u) == GS_OK) {
		out->n_procs = u.n_procs;
		out->mem_used = u.mem_used;
		out->mem_peak = u.mem_peak;
		out->busy_ns = u.busy_ns;
		out->throttled_ns = u.throttled_ns;
		/* Charged since the last tick at the share now; the slice
		 * may be gone meanwhile (then the last tick's figure stays). */
		pthread_mutex_lock(&node->lock);
		ns = gs__node_find_id(node, id);
		if (ns != NULL)
			out->sm_seconds = gs__node_sm_seconds(ns, u.busy_ns);
		pthread_mutex_unlock(&node->lock);
	}
	return GS_OK;
}

/* ---- recovery ---- */

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
 * Destroys MIG instance `uuid` of GPU g unless a slice of the model names
 * it (by uuid: gi ids of slices not yet recovered may be stale): the
 * instance a create that never finished made or took. Lock held.
 */
static void mig_drop_unheld(struct gs_node *node, int g, const char *uuid)
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
		        "gpu=%d MIG instance %d of a slice that was never "
		        "created not destroyed: %s (it stays idle)",
		        g, gi, eb.msg);
	else
		gs_info("node",
		        "gpu=%d MIG instance %d of a slice that was never "
		        "created destroyed",
		        g, gi);
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
				        "slice=%s dropped from the region: "
				        "not in the store",
				        lim.name);
			}
		}
	}
	for (int i = 0; i < node->n;) {
		struct gs__nslice *ns = node->v[i];
		int g = gs_gpus_find(node->gpus, ns->s.gpu_uuid);

		/* Saved PENDING: gpusliced stopped between a create's
		 * phases. The create was never answered; it never comes
		 * back as a ready slice (its MIG instance stays, idle). */
		if (ns->s.state == GS_SLICE_PENDING) {
			struct gs_slice failed = ns->s;

			create_fail(node, ns, NULL, &wr,
			            "not created: gpusliced stopped while it "
			            "was being created");
			if (g >= 0 && gs_mode_is_mig(failed.mode))
				mig_drop_unheld(node, g, failed.mig_uuid);
			n_cleaned++;
			continue;
		}
		(void)region_put(node, ns, NULL);
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
	wr_submit(node, &wr);
	pthread_mutex_unlock(&node->lock);
	if (kept)
		*kept = n_kept;
	if (cleaned)
		*cleaned = n_cleaned;
	return wr_wait(node, &wr, eb);
}

/*
 * The once-a-second pass: reap dead tenants from the region, repair region
 * slots that a failed write left missing, and delete on_exit=delete slices
 * whose processes are all gone. Returns the number deleted.
 */
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
		gs_error("node", "region: the shared usage file was cut short "
		                 "(a tenant truncated it)");
		struct gs_errbuf eb = {0};
		gs_err err = gs_region_rebuild_usage(node->region, &eb);

		if (err != GS_OK)
			gs_error("node", "region: the shared usage file cannot be "
			                 "rebuilt: %s (new processes cannot open "
			                 "the region until gpusliced restarts)",
			         gs_errbuf_msg(&eb, err));
		else
			gs_info("node", "region: the shared usage file was "
			                "rebuilt; new processes take turns again");
		gs_node_event(node, "region.truncated", "", "", -1,
		              "the shared usage file was cut short (a tenant "
		              "truncated it); %s",
		              err == GS_OK
		                  ? "rebuilt: processes started from now on "
		                    "take turns again, running ones keep their "
		                    "caps but lose turns and priorities"
		                  : "it could not be rebuilt");
	}
	for (int i = 0; i < n; i++) {
		char name[48];

		if (cut[i].slot >= 0)
			snprintf(name, sizeof(name), "the private books of slot %d",
			         (int)cut[i].slot);
		else
			snprintf(name, sizeof(name), "usage.%u",
			         (unsigned)cut[i].uid);
		gs_error("node",
		         "region: %s was cut short (by its owner, uid %u, or "
		         "the pod it is mounted in); its slices' books read as "
		         "zeros here",
		         name, (unsigned)cut[i].uid);
		gs_node_event(node, "region.truncated", "", "", -1,
		              "%s was cut short by its owner; the books of its "
		              "slices are lost",
		              name);
	}
}

/*
 * Node lock held: every GPU and MIG instance of the inventory has its
 * entry in the region's GPU table. In the daemon's region tenants cannot
 * write that table (the shared file is the daemon's), so the daemon fills
 * it: at start and on every housekeeping pass.
 */
void gs__node_register_devices(struct gs_node *node)
{
	const struct gs_gpus *g = node->gpus;

	if (node->region == NULL || g == NULL)
		return;
	for (int i = 0; i < g->n; i++) {
		const struct gs_gpu *u = &g->gpu[i];

		if (gs_region_device(node->region, u->uuid, u->memory_bytes) <
		    0)
			gs_warn("node", "gpu=%s: no room in the region's GPU "
			                "table",
			        u->uuid);
		for (int m = 0; m < u->n_mig; m++)
			(void)gs_region_device(node->region, u->mig[m].uuid,
			                       u->mig[m].memory_bytes);
	}
}

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
			gs_error("node", "region: the shared usage lock was out "
			                 "of reach for 3 s (a tenant holds it); "
			                 "the file was rebuilt");
			gs_node_event(node, "region.repaired", "", "", -1,
			              "the shared usage lock was out of reach "
			              "for 3 s (a tenant holds it); the file was "
			              "rebuilt and running processes move to it");
		}
	}
	/* Off the node lock: reaping takes the tenants' usage mutex. It
	 * frees entries of dead processes and entries no process could have
	 * written for itself (gs_region_reap). */
	if (node->region) {
		int reaped = gs_region_reap(node->region);

		if (reaped > 0)
			gs_info("node",
			        "region: %d process entries reaped (gone, of "
			        "another uid than recorded, copies, or past "
			        "the per-user limit)",
			        reaped);
	}
	pthread_mutex_lock(&node->lock);
	/* MIG layouts changed behind our back (nvidia-smi) show here. */
	(void)gs_gpus_refresh(node->gpus, NULL);
	gs__node_register_devices(node);
	for (int i = 0; i < node->n;) {
		struct gs__nslice *ns = node->v[i];
		bool live;

		/* Its create (phase B) finishes or fails it. */
		if (ns->s.state == GS_SLICE_PENDING) {
			i++;
			continue;
		}
		if (node->region && !ns->has_ref)
			(void)region_put(node, ns, NULL);
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
	gs__wr_submit_detached(node, wr);
	pthread_mutex_unlock(&node->lock);
	return n_cleaned;
}

/* Writes a ledger row for every slice (the ledger tick). */
void gs_node_ledger_sample(struct gs_node *node)
{
	struct gs__wr *wr = gs__wr_new();
	int64_t now = gs_now_ns();

	pthread_mutex_lock(&node->lock);
	for (int i = 0; i < node->n; i++)
		gs__node_sample(node, node->v[i], wr, now);
	if (node->cfg->events_keep > 0)
		gs__wr_trim(wr, node->cfg->events_keep);
	gs__wr_submit_detached(node, wr);
	pthread_mutex_unlock(&node->lock);
}

/* ---- teams ---- */

gs_err gs_node_team_list(struct gs_node *node, struct gs_team **out, int *n)
{
	struct gs_team *v;

	pthread_mutex_lock(&node->lock);
	v = malloc(sizeof(*v) * (size_t)(node->n_teams + 1));
	if (v == NULL) {
		pthread_mutex_unlock(&node->lock);
		return GS_ERR_NOMEM;
	}
	memcpy(v, node->teams, sizeof(*v) * (size_t)node->n_teams);
	*n = node->n_teams;
	pthread_mutex_unlock(&node->lock);
	*out = v;
	return GS_OK;
}

gs_err gs_node_team_get(struct gs_node *node, const char *name,
                        struct gs_team *out, struct gs_qvec *usage)
{
	struct gs_quota_slice *qs;
	struct gs_qvec *all;
	int t;
	gs_err err = GS_OK;

	pthread_mutex_lock(&node->lock);
	t = team_index(node, name);
	if (t < 0) {
		pthread_mutex_unlock(&node->lock);
		return GS_ERR_NOT_FOUND;
	}
	*out = node->teams[t];
	qs = calloc((size_t)node->n + 1, sizeof(*qs));
	all = calloc((size_t)node->n_teams, sizeof(*all));
	if (qs == NULL || all == NULL) {
		err = GS_ERR_NOMEM;
		goto out;
	}
	for (int i = 0; i < node->n; i++) {
		qs[i].id = (uint64_t)node->v[i]->s.id;
		qs[i].team = team_index(node, node->v[i]->s.team);
		if (qs[i].team < 0)
			qs[i].team = team_index(node, node->cfg->default_team);
		slice_use(node, &node->v[i]->s, &qs[i].use);
	}
	err = gs_quota_usage(node->qtree, qs, (size_t)node->n, all, NULL);
	if (!err)
		*usage = all[t];
out:
	pthread_mutex_unlock(&node->lock);
	free(qs);
	free(all);
	return err;
}

gs_err gs_node_team_put(struct gs_node *node, const struct gs_peer *peer,
                        const struct gs_team *team, struct gs_errbuf *eb)
{
	struct gs_team *teams;
	struct gs_quota_tree *tree = NULL;
	struct gs__wr wr;
	int n, t;
	gs_err err;

	if (!peer->admin)
		return gs_fail(eb, GS_ERR_PERM,
		               "only an administrator may set quotas");
	if (!gs_name_is_valid(team->name))
		return gs_fail(eb, GS_ERR_INVALID, "bad team name '%s'",
		               team->name);
	teams = malloc(sizeof(*teams) * GS__NODE_MAX_TEAMS);
	if (teams == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	pthread_mutex_lock(&node->lock);
	memcpy(teams, node->teams, sizeof(*teams) * (size_t)node->n_teams);
	n = node->n_teams;
	t = team_index(node, team->name);
	if (t < 0) {
		if (n == GS__NODE_MAX_TEAMS) {
			err = gs_fail(eb, GS_ERR_NO_FIT, "too many teams");
			goto out;
		}
		t = n++;
	} else if (teams[t].from_config) {
		err = gs_fail(
		    eb, GS_ERR_PERM,
		    "team '%s' is defined in %s; change it there", team->name,
		    node->cfg->path[0] ? node->cfg->path : "the config file");
		goto out;
	}
	teams[t] = *team;
	teams[t].from_config = false;
	err = build_tree(teams, n, &tree, eb);
	if (err)
		goto out;
	gs_quota_tree_destroy(node->qtree);
	node->qtree = tree;
	memcpy(node->teams, teams, sizeof(*teams) * (size_t)n);
	node->n_teams = n;
	gs__wr_init(&wr);
	gs__wr_team_put(&wr, &teams[t]);
	gs__wr_event(&wr, "quota.set", NULL, "team %s set by %s", team->name,
	             peer->user);
	wr_submit(node, &wr);
	pthread_mutex_unlock(&node->lock);
	free(teams);
	return wr_wait(node, &wr, eb);
out:
	pthread_mutex_unlock(&node->lock);
	free(teams);
	return err;
}

gs_err gs_node_team_delete(struct gs_node *node, const struct gs_peer *peer,
                           const char *name, struct gs_errbuf *eb)
{
	struct gs_team *teams;
	struct gs_quota_tree *tree = NULL;
	struct gs__wr wr;
	int n, t;
	gs_err err;

	if (!peer->admin)
		return gs_fail(eb, GS_ERR_PERM,
		               "only an administrator may delete teams");
	teams = malloc(sizeof(*teams) * GS__NODE_MAX_TEAMS);
	if (teams == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	pthread_mutex_lock(&node->lock);
	t = team_index(node, name);
	if (t < 0) {
		err = gs_fail(eb, GS_ERR_NOT_FOUND, "no team '%s'", name);
		goto out;
	}
	if (node->teams[t].from_config ||
	    strcmp(name, node->cfg->default_team) == 0) {
		err = gs_fail(eb, GS_ERR_PERM,
		              "team '%s' comes from the configuration", name);
		goto out;
	}
	for (int i = 0; i < node->n; i++)
		if (strcmp(node->v[i]->s.team, name) == 0) {
			err = gs_fail(eb, GS_ERR_BUSY,
			              "team '%s' still has slices", name);
			goto out;
		}
	for (int i = 0; i < node->n_teams; i++)
		if (strcmp(node->teams[i].parent, name) == 0) {
			err = gs_fail(eb, GS_ERR_BUSY,
			              "team '%s' still has sub-teams", name);
			goto out;
		}
	n = 0;
	for (int i = 0; i < node->n_teams; i++)
		if (i != t)
			teams[n++] = node->teams[i];
	err = build_tree(teams, n, &tree, eb);
	if (err)
		goto out;
	gs_quota_tree_destroy(node->qtree);
	node->qtree = tree;
	memcpy(node->teams, teams, sizeof(*teams) * (size_t)n);
	node->n_teams = n;
	gs__wr_init(&wr);
	gs__wr_team_del(&wr, name);
	gs__wr_event(&wr, "quota.deleted", NULL, "team %s deleted by %s", name,
	             peer->user);
	wr_submit(node, &wr);
	pthread_mutex_unlock(&node->lock);
	free(teams);
	return wr_wait(node, &wr, eb);
out:
	pthread_mutex_unlock(&node->lock);
	free(teams);
	return err;
}

/* ---- views ---- */

const struct gs_config *gs_node_config(const struct gs_node *node)
{
	return node->cfg;
}

struct gs_store *gs_node_store(struct gs_node *node)
{
	return node->store;
}

const char *gs_node_region_dir(const struct gs_node *node)
{
	return node->region_dir;
}

const char *gs_node_mps_dir(const struct gs_node *node)
{
	return node->mps_dir;
}

void gs_node_gpus(struct gs_node *node, struct gs_gpus *out)
{
	pthread_mutex_lock(&node->lock);
	*out = *node->gpus;
	pthread_mutex_unlock(&node->lock);
}

bool gs_xid_is_gpu_fault(unsigned long long xid)
{
	static const unsigned long long app[] = {13, 31, 43, 45, 68, 109};

	for (size_t k = 0; k < sizeof(app) / sizeof(app[0]); k++)
		if (xid == app[k])
			return false;
	return true;
}

bool gs_node_gpu_health(struct gs_node *node, int i, char *reason,
                        size_t reason_len)
{
	bool ok = true;

	if (reason_len > 0)
		reason[0] = '\0';
	if (i < 0 || i >= GS_GPUS_MAX)
		return true;
	pthread_mutex_lock(&node->lock);
	if (node->health[i].unhealthy) {
		ok = false;
		if (reason_len > 0)
			snprintf(reason, reason_len, "%s",
			         node->health[i].reason);
	}
	pthread_mutex_unlock(&node->lock);
	return ok;
}

bool gs_node_gpu_set_unhealthy(struct gs_node *node, int i,
                               const char *reason)
{
	bool was_ok = false;

	if (i < 0 || i >= GS_GPUS_MAX)
		return false;
	pthread_mutex_lock(&node->lock);
	if (!node->health[i].unhealthy) {
		was_ok = true;
		node->health[i].unhealthy = true;
		snprintf(node->health[i].reason,
		         sizeof(node->health[i].reason), "%s", reason);
	}
	pthread_mutex_unlock(&node->lock);
	return was_ok;
}

void gs_node_gpu_alloc(struct gs_node *node, int i, uint64_t *mem,
                       uint32_t *compute, int *n_slices)
{
	*mem = 0;
	*compute = 0;
	*n_slices = 0;
	pthread_mutex_lock(&node->lock);
	for (int k = 0; k < node->n; k++) {
		const struct gs_slice *s = &node->v[k]->s;

		if (s->gpu_index != i)
			continue;
		*mem += s->spec.memory_bytes;
		*compute += (uint32_t)s->spec.compute_pct;
		(*n_slices)++;
	}
	pthread_mutex_unlock(&node->lock);
}

void gs_node_counters(struct gs_node *node, struct gs_node_counters *out)
{
	pthread_mutex_lock(&node->lock);
	*out = node->ctr;
	pthread_mutex_unlock(&node->lock);
}
