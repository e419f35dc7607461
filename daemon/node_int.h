/*
 * node_int.h - the node model's insides, shared by the daemon modules that
 * work on it under its lock. Nothing outside daemon/ includes this.
 *
 * The files, in layers; each calls only into layers below it (checked
 * with nm on the objects: no two files call each other, directly or
 * around a loop):
 *
 *   api/, reconcile.c, watchdog.c, metrics.c    (main.c on top)
 *   swapper.c (under reconcile.c)
 *   create.c (decide)  recovery.c (start, housekeeping)  lifecycle.c
 *   actor.c (carry out the plans)  park.c (reclaim victims parked)
 *   remove.c (a slice's way out)
 *   ledger.c  snapshot.c  runtime.c
 *   node.c (the model, lookups, teams, invariants, commits)
 *   batch.c  slots.c  trust.c  mig.c
 *
 * Upward calls are callbacks set at start: node.c reaches the reload
 * (lifecycle.c) through node->resync, and the actor reaches the MPS
 * starter (reconcile.c) through node->mps_starter.
 */
#ifndef GS_DAEMON_NODE_INT_H
#define GS_DAEMON_NODE_INT_H

#include <pthread.h>

#include "gs/demand.h"
#include "gs/quota.h"
#include "gs/admission.h"
#include "gs/region.h"
#include "batch.h"
#include "node.h"

/*
 * A slice in the model, with what the daemon tracks about it at run time.
 * The ledger's cursors (ledger.c) and the watchdog's windows (watchdog.c)
 * are kept by those modules, by slice id.
 */
struct gs__nslice {
	struct gs_slice s;
	struct gs_slice_ref ref; /* its region slot */
	bool has_ref;
	/* live view, refreshed by the ledger/watchdog ticks */
	struct gs_node_usage live;
	bool procs_seen; /* some process was seen in it this run */
	uint64_t watchdog_actions;
	uint64_t faults;
};

#define GS__NODE_MAX_TEAMS 256

struct gs_node {
	pthread_mutex_t lock;
	const struct gs_config *cfg;
	struct gs_store *store;
	struct gs_gpus *gpus;
	struct gs_region *region;
	char region_dir[256];
	char mps_dir[256];
	int n, cap;
	struct gs__nslice **v; /* by id */
	int n_teams;
	struct gs_team teams[GS__NODE_MAX_TEAMS];
	struct gs_quota_tree *qtree; /* teams[i] is tree index i */
	int64_t next_id;
	struct gs_node_counters ctr;
	pthread_mutex_t resync_lock;
	/* GPU health as the watchdog saw it (gs_node_gpu_health): a GPU is
	 * unhealthy from its first non-application Xid until the daemon
	 * restarts. Under `lock`. */
	struct {
		bool unhealthy;
		char reason[96];
	} health[GS_GPUS_MAX];
	/* The slice shapes asked for (gs/demand.h), mirrored in the store's
	 * demand table; the `frag` policy's scorer. Under `lock`. */
	struct gs_demand demand;
	/* Whether the config's MPS control daemon binary exists (checked at
	 * start): mode auto picks MPS only where it does. */
	bool mps_found;
	/* gs_node_set_create_hook (tests): set before any create. */
	void (*create_hook)(void *arg, const char *slice);
	void *create_hook_arg;
	/* NVML MIG changes, one at a time (mig.c's lock rules): taken
	 * alone by a create's MIG steps, or with `lock` held, after it. */
	pthread_mutex_t mig_lock;
	/* GPU i's MIG layout is changing off the lock: admission places
	 * nothing there. Under `lock`. */
	bool mig_busy[GS_GPUS_MAX];
	/* gs_node_set_mig_hook (tests): set before any create. */
	void (*mig_hook)(void *arg, const char *slice);
	void *mig_hook_arg;
	/* gs_node_set_mps_starter: set before the API serves. */
	gs_err (*mps_starter)(void *arg, const struct gs_slice *s,
	                      struct gs_errbuf *eb);
	void *mps_starter_arg;
	/* The actor (actor.c): the plans creates recorded, its workers. */
	struct gs__actor *actor;
	/* The ledger's cursors, by slice id (ledger.c). Under `lock`. */
	struct gs__ledger *ledger;
	/* Reloads the model from the store after a failed commit
	 * (lifecycle.c's gs__node_resync, set by gs_node_create). */
	void (*resync)(struct gs_node *node);
};

/* The slice with `name` / `id`, or NULL. Lock held. */
struct gs__nslice *gs__node_find(struct gs_node *node, const char *name);
struct gs__nslice *gs__node_find_id(struct gs_node *node, int64_t id);
/* Index of team `name` in node->teams (and the quota tree), or -1. */
int gs__node_team_index(struct gs_node *node, const char *name);
/* Whether `peer` may see slice `s` (its owner or an administrator). */
bool gs__node_can_see(const struct gs_peer *peer, const struct gs_slice *s);

/*
 * Model storage (lock held): add a copy of `s` in id order (NULL: out of
 * memory), take `ns` out and free it, empty the model.
 */
struct gs__nslice *gs__node_add(struct gs_node *node, const struct gs_slice *s);
void gs__node_del(struct gs_node *node, struct gs__nslice *ns);
void gs__node_clear(struct gs_node *node);

/*
 * The teams: the config's, then the API's from the store that the config
 * does not name, then the default team when nobody defined it; the store
 * writes that reconcile it with the config go into `wr`.
 */
gs_err gs__node_merge_teams(struct gs_node *node, const struct gs_team *stored,
                            int n_stored, struct gs__wr *wr,
                            struct gs_errbuf *eb);

/* A GPU / slice of the model as core's admission sees it (lent
 * pointers into the model: valid while the lock is held). */
void gs__node_adm_gpu(const struct gs_gpu *g, struct gs_adm_gpu *out);
void gs__node_adm_slice(struct gs_node *node, const struct gs_slice *s,
                        struct gs_adm_slice *out);

/*
 * Commits. gs__node_submit queues a batch (lock held; the invariants are
 * checked first); gs__node_wait waits for it with the lock NOT held (a
 * failed commit counts, reloads the model, node->resync, and answers
 * GS_ERR_IO); gs__node_submit_detached hands a gs__wr_new() batch over
 * (lock held; NULL-safe, empty ok; freed after its commit).
 */
void gs__node_submit(struct gs_node *node, struct gs__wr *wr);
gs_err gs__node_wait(struct gs_node *node, struct gs__wr *wr,
                     struct gs_errbuf *eb);
void gs__node_submit_detached(struct gs_node *node, struct gs__wr *wr);
/* gs__node_submit for a batch announced with gs_store_intent: drops the
 * announcement (*intent true) once the batch is queued. */
void gs__node_submit_announced(struct gs_node *node, struct gs__wr *wr,
                               bool *intent);

/* Lock held: checks the model's invariants (node.c's top comment). */
void gs__node_check(struct gs_node *node);
/* Reports a broken invariant of the model (node.c) and aborts. */
void gs__node_violated(const char *what, const char *slice)
    __attribute__((noreturn));

#endif
