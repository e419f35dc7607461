/*
 * node_int.h - the node model's insides, shared by the daemon modules that
 * work on it under its lock (node.c, reconcile.c, watchdog.c, ledger.c,
 * metrics.c). Nothing outside daemon/ includes this.
 */
#ifndef GS_DAEMON_NODE_INT_H
#define GS_DAEMON_NODE_INT_H

#include <pthread.h>

#include "gs/demand.h"
#include "gs/quota.h"
#include "gs/region.h"
#include "node.h"

/* A slice in the model, with what the daemon tracks about it at run time. */
struct gs__nslice {
	struct gs_slice s;
	struct gs_slice_ref ref; /* its region slot */
	bool has_ref;
	/* ledger cursor: usage counters at the last sample */
	int64_t led_t_ns;
	uint64_t led_busy_ns;
	uint64_t led_throttled_ns;
	double led_mem_byte_s;
	/* SM-time (busy time x the SM share), accumulated per interval so
	 * that a share that changes is charged at the rate of each interval:
	 * sm_s covers the region's busy time up to sm_busy_ns */
	double sm_s;
	uint64_t sm_busy_ns;
	/* live view, refreshed by the ledger/watchdog ticks */
	struct gs_node_usage live;
	uint64_t rate_busy_ns; /* busy_ns at rate_t_ns (compute achieved) */
	int64_t rate_t_ns;
	int n_nvml_procs;
	int64_t over_since_ns; /* watchdog: first seen over its limit */
	/* watchdog: NVML SM share integrated over the current window (at
	 * least a second, so a token bucket's short burst is not "over") */
	double wd_sm_acc; /* percent x seconds */
	double wd_sm_t;   /* seconds */
	int wd_sm_streak; /* full windows over the share, in a row */
	bool wd_sm_over;  /* two windows running were over the share */
	bool procs_seen;       /* some process was seen in it this run */
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
	/* NVML MIG changes, one at a time (node.c's lock rules): taken
	 * alone by a create's MIG steps, or with `lock` held, after it. */
	pthread_mutex_t mig_lock;
	/* GPU i's MIG layout is changing off the lock: admission places
	 * nothing there. Under `lock`. */
	bool mig_busy[GS_GPUS_MAX];
	/* gs_node_set_mig_hook (tests): set before any create. */
	void (*mig_hook)(void *arg, const char *slice);
	void *mig_hook_arg;
	/* gs_node_set_mps_starter: set before the API serves. */
	bool (*mps_starter)(void *arg, const struct gs_slice *s,
	                    struct gs_errbuf *eb);
	void *mps_starter_arg;
};

/*
 * A list of store writes that commit together (one gs_store_op). Build it
 * under the node lock and submit it in the same critical section; then
 * either wait (gs__wr_wait, outside the lock) or hand it over detached.
 */
enum gs__wr_kind {
	GS__WR_SLICE_PUT,
	GS__WR_SLICE_DEL,
	GS__WR_EVENT,
	GS__WR_USAGE,
	GS__WR_TEAM_PUT,
	GS__WR_TEAM_DEL,
	GS__WR_TRIM,
	GS__WR_DEMAND_PUT,
	GS__WR_DEMAND_DEL,
};

struct gs__wr_item {
	enum gs__wr_kind kind;
	union {
		struct gs_slice slice;
		int64_t id;
		struct gs_event ev;
		struct gs_usage_row usage;
		struct gs_team team;
		int keep;
		struct gs_demand_class demand; /* DEL: only the shape */
	} u;
};

struct gs__wr {
	struct gs_store_op op;
	int n, cap;
	struct gs__wr_item *items;
	bool nomem; /* an append failed: the batch is incomplete */
};

/* Heap-allocated, for detached submission (freed after its commit). */
struct gs__wr *gs__wr_new(void);
void gs__wr_init(struct gs__wr *wr);
void gs__wr_fini(struct gs__wr *wr);
void gs__wr_slice_put(struct gs__wr *wr, const struct gs_slice *s);
void gs__wr_slice_del(struct gs__wr *wr, int64_t id);
void gs__wr_team_put(struct gs__wr *wr, const struct gs_team *t);
void gs__wr_team_del(struct gs__wr *wr, const char *name);
void gs__wr_usage(struct gs__wr *wr, const struct gs_usage_row *r);
void gs__wr_trim(struct gs__wr *wr, int keep);
void gs__wr_demand_put(struct gs__wr *wr, const struct gs_demand_class *c);
void gs__wr_demand_del(struct gs__wr *wr, const struct gs_demand_shape *s);
/* An event about slice `s` (NULL: about the node). */
void gs__wr_event(struct gs__wr *wr, const char *type, const struct gs_slice *s,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Submits a gs__wr_new() batch detached (lock held); NULL-safe, empty ok. */
void gs__wr_submit_detached(struct gs_node *node, struct gs__wr *wr);

/* The slice with `name` / `id`, or NULL. Lock held. */
struct gs__nslice *gs__node_find(struct gs_node *node, const char *name);
struct gs__nslice *gs__node_find_id(struct gs_node *node, int64_t id);
/*
 * Removes slice `ns` from the model and the region (and frees it),
 * appending the store delete, its last ledger row and an event of `type`
 * to `wr`. Lock held.
 */
void gs__node_remove(struct gs_node *node, struct gs__nslice *ns,
                     struct gs__wr *wr, const char *type, const char *why);
/*
 * Charges the busy time since the last call (busy_ns is the region's
 * counter) at the slice's SM share now, and refreshes ns->live's
 * sm_seconds and sm_share. A counter that went back (a new region) moves
 * the cursor without charging. Lock held.
 */
void gs__node_sm_advance(struct gs__nslice *ns, uint64_t busy_ns);
/* SM-seconds up to busy_ns without charging them (read-only view). */
double gs__node_sm_seconds(const struct gs__nslice *ns, uint64_t busy_ns);
/* Appends a ledger row for what `ns` used since its last sample. */
void gs__node_sample(struct gs_node *node, struct gs__nslice *ns,
                     struct gs__wr *wr, int64_t now);
/* Registers the inventory's GPUs and MIG instances in the region's GPU
 * table (the daemon's to write). Lock held. */
void gs__node_register_devices(struct gs_node *node);
/* Reloads the model from the store after a failed commit. */
void gs__node_resync(struct gs_node *node);

/* Reports a broken invariant of the model (node.c) and aborts. */
void gs__node_violated(const char *what, const char *slice)
    __attribute__((noreturn));

#endif
