/*
 * node.c - the node model (see node.h): the slices, live and pending,
 * by id and by name; the teams and their quota tree; the model's
 * invariants, checked before every commit; commits (write batches queued
 * to the store, waited for off the lock); reading the model (get, list,
 * attach, teams, GPUs, counters).
 *
 * The rest of a slice's life lives beside it, each file on one thing
 * (node_int.h has the layers): batch.c (write batches), slots.c (region
 * entries), trust.c (process confirmation), mig.c (MIG instances) below;
 * above, ledger.c (usage rows), snapshot.c (what admission decides on),
 * runtime.c (a slice's runtime contract), remove.c (a slice's way out),
 * actor.c (carrying out the plans creates record), lifecycle.c (load,
 * reload), create.c (decide a create), recovery.c (start and
 * housekeeping).
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

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/catalog.h"
#include "gs/log.h"
#include "gs/proc.h"
#include "slots.h"

/* ---- commits ---- */

void gs__node_submit_detached(struct gs_node *node, struct gs__wr *wr)
{
	gs__node_check(node);
	gs__wr_queue_detached(node->store, wr);
}

/* Queues a waited batch; lock held. */
void gs__node_submit(struct gs_node *node, struct gs__wr *wr)
{
	gs__node_check(node);
	gs__wr_queue(node->store, wr);
}

/* Submits a batch that was announced with gs_store_intent (lock held). */
void gs__node_submit_announced(struct gs_node *node, struct gs__wr *wr,
                               bool *intent)
{
	gs__node_submit(node, wr);
	if (*intent) {
		gs_store_intent_drop(node->store);
		*intent = false;
	}
}

/* Waits for a batch queued with gs__node_submit; lock NOT held. */
gs_err gs__node_wait(struct gs_node *node, struct gs__wr *wr,
                     struct gs_errbuf *eb)
{
	gs_err err = gs_store_wait(node->store, &wr->op);

	gs__wr_fini(wr);
	if (err) {
		pthread_mutex_lock(&node->lock);
		node->ctr.commit_failures++;
		pthread_mutex_unlock(&node->lock);
		if (node->resync)
			node->resync(node);
		return gs_fail(eb, GS_ERR_IO,
		               "the change could not be saved (%s); nothing was changed",
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
	gs__wr_vevent(wr, type, slice, team, gpu, -1, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&node->lock);
	gs__node_submit_detached(node, wr);
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

struct gs__nslice *gs__node_add(struct gs_node *node, const struct gs_slice *s)
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
	ns->live.sm_share = gs_slice_sm_share(s);
	for (at = node->n; at > 0 && node->v[at - 1]->s.id > s->id; at--)
		node->v[at] = node->v[at - 1];
	node->v[at] = ns;
	node->n++;
	return ns;
}

void gs__node_del(struct gs_node *node, struct gs__nslice *ns)
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

void gs__node_clear(struct gs_node *node)
{
	for (int i = 0; i < node->n; i++)
		free(node->v[i]);
	node->n = 0;
}

bool gs__node_can_see(const struct gs_peer *peer, const struct gs_slice *s)
{
	return peer->admin || (peer->local && peer->uid == s->owner_uid);
}

/* ---- teams and invariants ---- */

int gs__node_team_index(struct gs_node *node, const char *name)
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
void gs__node_check(struct gs_node *node)
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
			if (gs_mode_is_mig(a->mode) &&
			    gs_mode_is_mig(b->mode) &&
			    a->gpu_index == b->gpu_index && a->gi_id >= 0 &&
			    a->gi_id == b->gi_id)
				gs__node_violated("two slices hold one MIG instance",
				                  a->name);
		}
		if (gs__node_team_index(node, a->team) < 0)
			gs__node_violated("a slice's team is not known",
			                  a->name);
		if (node->region != NULL && ns->has_ref) {
			struct gs_slice_limits want, have;

			gs__slot_limits(a, &want);
			if (gs_region_slice_limits(node->region, &ns->ref,
			                           &have) != GS_OK ||
			    memcmp(&want, &have, sizeof(want)) != 0)
				gs__node_violated("the region's limits are not the slice's",
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

/*
 * The teams: the config's, then the API's from the store that the config
 * does not name, then the default team when nobody defined it. Also
 * reconciles the store with the config (writes go into `wr`).
 */
gs_err gs__node_merge_teams(struct gs_node *node, const struct gs_team *stored,
                            int n_stored, struct gs__wr *wr,
                            struct gs_errbuf *eb)
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
		if (gs__node_team_index(node, stored[i].name) >= 0)
			continue;
		if (stored[i].from_config) {
			/* Removed from the config: forget it. */
			gs__wr_team_del(wr, stored[i].name);
			continue;
		}
		if (node->n_teams < GS__NODE_MAX_TEAMS)
			node->teams[node->n_teams++] = stored[i];
	}
	if (gs__node_team_index(node, cfg->default_team) < 0 &&
	    node->n_teams < GS__NODE_MAX_TEAMS)
		default_team(&node->teams[node->n_teams++], cfg->default_team);
	err = build_tree(node->teams, node->n_teams, &tree, eb);
	if (err)
		return err;
	gs_quota_tree_destroy(node->qtree);
	node->qtree = tree;
	return GS_OK;
}

void gs__node_adm_gpu(const struct gs_gpu *g, struct gs_adm_gpu *out)
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

void gs__node_adm_slice(struct gs_node *node, const struct gs_slice *s,
                        struct gs_adm_slice *out)
{
	memset(out, 0, sizeof(*out));
	out->id = s->id;
	out->name = s->name;
	out->owner_uid = s->owner_uid;
	out->team = gs__node_team_index(node, s->team);
	out->created_ns = s->created_ns;
	out->priority = s->spec.priority;
	out->mode = s->mode;
	out->gpu = s->gpu_index;
	out->gi_id = s->gi_id;
	out->mig_profile = s->mig_profile;
	out->memory_bytes = s->spec.memory_bytes;
	out->compute_pct = s->spec.compute_pct;
	out->isolation = s->spec.isolation;
	out->swap_never = s->spec.swap == GS_SWAP_NEVER;
}

/* What a slice holds, as quotas count it. */
static void slice_use(struct gs_node *node, const struct gs_slice *s,
                      struct gs_qvec *v)
{
	struct gs_adm_slice as;
	struct gs_adm_gpu g;
	bool known = s->gpu_index >= 0 && s->gpu_index < node->gpus->n;

	gs__node_adm_slice(node, s, &as);
	if (known)
		gs__node_adm_gpu(&node->gpus->gpu[s->gpu_index], &g);
	gs_adm_slice_use(known ? &g : NULL, &as, v);
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
	size_t nq = 0;
	int t;
	gs_err err = GS_OK;

	pthread_mutex_lock(&node->lock);
	t = gs__node_team_index(node, name);
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
		/* a parked slice counts toward no quota (gs/park.h) */
		if (node->v[i]->s.state == GS_SLICE_PARKED)
			continue;
		qs[nq].id = (uint64_t)node->v[i]->s.id;
		qs[nq].team = gs__node_team_index(node, node->v[i]->s.team);
		if (qs[nq].team < 0)
			qs[nq].team =
			    gs__node_team_index(node, node->cfg->default_team);
		slice_use(node, &node->v[i]->s, &qs[nq].use);
		nq++;
	}
	err = gs_quota_usage(node->qtree, qs, nq, all, NULL);
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
	t = gs__node_team_index(node, team->name);
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
	gs__node_submit(node, &wr);
	pthread_mutex_unlock(&node->lock);
	free(teams);
	return gs__node_wait(node, &wr, eb);
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
	t = gs__node_team_index(node, name);
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
	gs__node_submit(node, &wr);
	pthread_mutex_unlock(&node->lock);
	free(teams);
	return gs__node_wait(node, &wr, eb);
out:
	pthread_mutex_unlock(&node->lock);
	free(teams);
	return err;
}

/* ---- slices ---- */

gs_err gs_node_slice_get(struct gs_node *node, const struct gs_peer *peer,
                         const char *name, struct gs_slice *out)
{
	struct gs__nslice *ns;
	gs_err err = GS_ERR_NOT_FOUND;

	pthread_mutex_lock(&node->lock);
	ns = gs__node_find(node, name);
	if (ns && gs__node_can_see(peer, &ns->s)) {
		*out = ns->s;
		gs__slot_swap_fill(node, ns, out);
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

		if (!gs__node_can_see(peer, s) ||
		    (team && team[0] && strcmp(team, s->team) != 0))
			continue;
		v[*n] = *s;
		gs__slot_swap_fill(node, node->v[i], &v[(*n)++]);
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
	if (ns == NULL || !gs__node_can_see(peer, &ns->s)) {
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
	gs__node_submit(node, &wr);
	pthread_mutex_unlock(&node->lock);
	return gs__node_wait(node, &wr, eb);
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

bool gs_node_gpu_set_unhealthy(struct gs_node *node, int i, const char *reason)
{
	bool was_ok = false;

	if (i < 0 || i >= GS_GPUS_MAX)
		return false;
	pthread_mutex_lock(&node->lock);
	if (!node->health[i].unhealthy) {
		was_ok = true;
		node->health[i].unhealthy = true;
		snprintf(node->health[i].reason, sizeof(node->health[i].reason),
		         "%s", reason);
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
