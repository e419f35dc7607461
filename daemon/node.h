/*
 * node.h - the node model: the slices, teams and quotas the daemon holds,
 * and every change to them. The API, the watchdog, the ledger and the
 * reconciler all go through here.
 *
 * One lock guards the model. A change is decided (a create by core's
 * admission, gs/admission.h, on a snapshot of the model) and applied to
 * the model and to the shared region under the lock, queued to the store
 * in the same critical section (so the store's order is the model's
 * order), and acknowledged only once its batch is committed
 * (gs_store_wait, outside the lock). If a commit fails the model is
 * reloaded from the store (gs__node_resync, lifecycle.c).
 * The region is written before the commit, so a tenant may see a slice one
 * commit before it is durable; a crash in between is undone at the next
 * start (gs_node_recover drops region slices the store does not hold).
 *
 * Who may do what: root, members of the admin group and TCP clients with
 * the token administer everything; other local users see, join and delete
 * only the slices they own (others' slices are invisible to them: 404).
 */
#ifndef GS_DAEMON_NODE_H
#define GS_DAEMON_NODE_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "gpu.h"
#include "gs/err.h"
#include "gs/spec.h"
#include "http.h"
#include "slice.h"
#include "store.h"

struct gs_node;
struct gs_region;

struct gs_node_opts {
	const struct gs_config *cfg;
	struct gs_store *store;
	struct gs_gpus *gpus;     /* borrowed; the node serialises NVML use */
	struct gs_region *region; /* may be NULL (tests without a region) */
	const char *region_dir;   /* what slices tell tenants; may be NULL */
	const char *mps_dir;      /* MPS pipe/log root; may be NULL */
};

/*
 * Loads teams and slices from the store, merges the config's teams, and
 * returns the model in *out. Does not touch the region or processes: call
 * gs_node_recover() for that. GS_ERR_INVALID when the teams do not form a
 * valid quota tree (the errbuf names the team).
 */
gs_err gs_node_create(const struct gs_node_opts *opts, struct gs_node **out,
                      struct gs_errbuf *eb);
void gs_node_destroy(struct gs_node *node);

/*
 * After a start (or a crash): drops slices whose GPU is gone, cleans up
 * on_exit=delete slices whose processes are gone, and makes the region hold
 * exactly the model's slices. OUT: *kept, *cleaned (may be NULL).
 */
gs_err gs_node_recover(struct gs_node *node, int *kept, int *cleaned,
                       struct gs_errbuf *eb);

/*
 * The once-a-second pass: reaps dead tenants from the region, repairs
 * missing region slots, deletes on_exit=delete slices whose processes are
 * gone. Returns how many slices it deleted.
 */
int gs_node_housekeep(struct gs_node *node);
/* Appends one ledger row per slice for the time since its last row. */
void gs_node_ledger_sample(struct gs_node *node);

struct gs_node_create_req {
	struct gs_slice_spec spec;
	char team[GS_NAME_MAX]; /* "" = the caller's team */
	int on_exit;            /* enum gs_slice_on_exit */
	int64_t owner_uid;      /* -1 = the caller */
	int n_labels;           /* checked by the API layer */
	struct gs_slice_label labels[GS_SLICE_MAX_LABELS];
};

#define GS_NODE_MAX_VICTIMS 16

struct gs_node_create_res {
	struct gs_slice slice;
	int n_victims; /* slices preempted to make room */
	char victims[GS_NODE_MAX_VICTIMS][GS_NAME_MAX];
	/* victims[i] was parked (gs/park.h), not killed */
	bool parked[GS_NODE_MAX_VICTIMS];
};

/*
 * Creates a slice: validates the spec, resolves mode auto (advisor), picks
 * a GPU (placement policy), admits it against the team's quota (possibly
 * preempting borrowed slices), then, in two phases: the slice is saved
 * PENDING (its share held), its limits are written to the region off the
 * node lock, and it is saved READY. Errors: GS_ERR_INVALID/PARSE/RANGE
 * (spec), GS_ERR_EXISTS (name taken), GS_ERR_PERM, GS_ERR_NOT_FOUND (team),
 * GS_ERR_QUOTA, GS_ERR_NO_FIT, GS_ERR_IO (commit failed),
 * GS_ERR_UNAVAILABLE (region write failed: the slice is gone, a
 * slice.failed event says why), GS_ERR_BUSY (deleted while pending).
 * OUT: *res.
 */
gs_err gs_node_slice_create(struct gs_node *node, const struct gs_peer *peer,
                            const struct gs_node_create_req *req,
                            struct gs_node_create_res *res,
                            struct gs_errbuf *eb);
/* Deletes a slice the caller may see. GS_ERR_NOT_FOUND otherwise. */
gs_err gs_node_slice_delete(struct gs_node *node, const struct gs_peer *peer,
                            const char *name, struct gs_errbuf *eb);
/* A copy of one slice the caller may see. OUT: *out. */
gs_err gs_node_slice_get(struct gs_node *node, const struct gs_peer *peer,
                         const char *name, struct gs_slice *out);
/*
 * Copies of the slices the caller may see (optionally only `team`), by id.
 * OUT: *out (malloc'd array the caller frees), *n.
 */
gs_err gs_node_slice_list(struct gs_node *node, const struct gs_peer *peer,
                          const char *team, struct gs_slice **out, int *n);
/*
 * Records process `pid` as a member of the slice (the watchdog then
 * watches it, and on_exit=delete slices end with their last process).
 * A non-admin may attach only its own processes. OUT: *out (may be NULL).
 */
gs_err gs_node_slice_attach(struct gs_node *node, const struct gs_peer *peer,
                            const char *name, int32_t pid, struct gs_slice *out,
                            struct gs_errbuf *eb);

/* Live usage from the region (zeros when there is no region). */
struct gs_node_usage {
	uint32_t n_procs;
	uint64_t mem_used;
	uint64_t mem_peak;
	uint64_t busy_ns;
	uint64_t throttled_ns;
	double compute_pct; /* achieved over the last ledger interval */
	uint64_t nvml_mem;  /* what NVML sees for its processes */
	double nvml_compute_pct; /* NVML's SM share of its processes (last
	                            sample; -1 when NVML has none) */
	double sm_share;   /* gs_slice_sm_share: SMs its kernels may use */
	double sm_seconds; /* busy time x sm_share, charged per interval */
};
gs_err gs_node_slice_usage(struct gs_node *node, int64_t id,
                           struct gs_node_usage *out);

/*
 * A slice's runtime contract: where its processes find the shared region
 * and its books, and the environment `gpuslice run --slice` gives them
 * (the MPS pipe and client limits of an MPS slice, the device it sees).
 * The node computes it (gs_node_slice_runtime); the API only renders it.
 */
#define GS_NODE_ENV_MAX 8
struct gs_node_runtime {
	char region_dir[256]; /* "" without a region */
	char books[512];      /* the file its books are in, or "" */
	int n_env;
	struct {
		char key[40];
		char value[320];
	} env[GS_NODE_ENV_MAX]; /* in the order they are set */
};
void gs_node_slice_runtime(struct gs_node *node, const struct gs_slice *s,
                           struct gs_node_runtime *out);

/* ---- teams ---- */

/* Copies of all teams. OUT: *out (malloc'd), *n. */
gs_err gs_node_team_list(struct gs_node *node, struct gs_team **out, int *n);
/* One team and its current usage (own slices plus descendants'). */
gs_err gs_node_team_get(struct gs_node *node, const char *name,
                        struct gs_team *out, struct gs_qvec *usage);
/* Creates or replaces a team's quota (admin only; the tree is re-checked). */
gs_err gs_node_team_put(struct gs_node *node, const struct gs_peer *peer,
                        const struct gs_team *team, struct gs_errbuf *eb);
/* Deletes a team without slices, children or config entry (admin only). */
gs_err gs_node_team_delete(struct gs_node *node, const struct gs_peer *peer,
                           const char *name, struct gs_errbuf *eb);

/* ---- events ---- */

/* Queues an event (not waited on; committed with the next batch or tick). */
void gs_node_event(struct gs_node *node, const char *type, const char *slice,
                   const char *team, int gpu, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* ---- for the API's views ---- */
const struct gs_config *gs_node_config(const struct gs_node *node);
struct gs_store *gs_node_store(struct gs_node *node);
const char *gs_node_region_dir(const struct gs_node *node);
const char *gs_node_mps_dir(const struct gs_node *node);
/* A copy of the GPU inventory taken under the lock. */
void gs_node_gpus(struct gs_node *node, struct gs_gpus *out);
/* Memory and compute allocated to slices on GPU i. */
/*
 * GPU i's health: false with the reason (reason_len bytes, NUL-ended)
 * once the watchdog saw an Xid that is not an application error on it;
 * true otherwise. An i outside the node reads as healthy.
 */
bool gs_node_gpu_health(struct gs_node *node, int i, char *reason,
                        size_t reason_len);
/* Marks GPU i unhealthy (the first reason stays). Returns true when it
 * was healthy until now. */
bool gs_node_gpu_set_unhealthy(struct gs_node *node, int i,
                               const char *reason);
/*
 * Whether an Xid says the GPU itself is at fault (double-bit ECC, fallen
 * off the bus, ...) rather than the application that ran on it: NVIDIA's
 * device plugin treats 13, 31, 43, 45, 68 and 109 as application errors
 * and every other Xid as the GPU's.
 */
bool gs_xid_is_gpu_fault(unsigned long long xid);
void gs_node_gpu_alloc(struct gs_node *node, int i, uint64_t *mem,
                       uint32_t *compute, int *n_slices);

/* A copy of the demand seen (gs/demand.h), taken under the lock. */
void gs_node_demand(struct gs_node *node, struct gs_demand *out);

/* Counters for metrics. */
struct gs_node_counters {
	uint64_t creates, deletes, rejects, reclaims;
	/* reclaim victims parked instead of killed, parked slices resumed
	 * (gs/park.h) */
	uint64_t parks, resumes;
	uint64_t watchdog_flags, watchdog_kills, faults;
	uint64_t commit_failures;
	/* the ledger: books found false (refused), books that disagree
	 * with NVML, GPU time NVML saw in no slice (ns) */
	uint64_t books_refused, ledger_divergences, unattributed_gpu_ns;
	int64_t started_ns;
};
void gs_node_counters(struct gs_node *node, struct gs_node_counters *out);

/*
 * Tests only: `fn` runs for every create between its two phases (in the
 * actor's thread, actor.c, once the pending row is saved), off the node
 * lock, with the pending slice's name (NULL fn: none). Set it before any
 * create runs.
 */
void gs_node_set_create_hook(struct gs_node *node,
                             void (*fn)(void *arg, const char *slice),
                             void *arg);

/*
 * Tests only: `fn` runs in every create that changes a GPU's MIG layout,
 * off the node lock with the MIG lock held, before the NVML steps, with
 * the pending slice's name (NULL fn: none). Set it before any create.
 */
void gs_node_set_mig_hook(struct gs_node *node,
                          void (*fn)(void *arg, const char *slice),
                          void *arg);

/*
 * `fn` brings up the MPS control daemon that MPS slice `s` (its GPU, MIG
 * instance and UUID) will be a client of, and returns GS_OK once it runs,
 * else why in eb: GS_ERR_BUSY while one it started is not up yet (the
 * actor tries again after a back-off), another code when it cannot run
 * (the create fails at once). Every create of an MPS slice calls it
 * between its two phases (in the actor's thread), off the node lock, so
 * the slice is ready only once a process started in it becomes an MPS
 * client; one that cannot start fails the create (slice.failed). NULL
 * fn: MPS slices are ready at once (the reconciler starts their daemon on
 * its next tick). The reconciler sets it (gs_reconciler_create); set it
 * before the API serves and before gs_node_recover resumes pending
 * creates.
 */
void gs_node_set_mps_starter(struct gs_node *node,
                             gs_err (*fn)(void *arg, const struct gs_slice *s,
                                          struct gs_errbuf *eb),
                             void *arg);

/* Nanoseconds of CLOCK_REALTIME. */
int64_t gs_now_ns(void);

#endif
