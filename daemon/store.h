/*
 * store.h - the daemon's durable state in SQLite: slices, teams and quotas,
 * the usage ledger and events, the demand seen (gs/demand.h), under a
 * versioned schema with migrations.
 *
 * Writes go through one queue and are committed in batches (group commit):
 * a thread submits an op while it holds the node model's lock, so the
 * queue's order is the order in which the model changed, and then waits
 * for it outside that lock. Whoever commits (the committer thread once
 * gs_store_start_committer ran, else the first waiter to find no commit
 * under way) takes everything queued, runs it in one transaction, commits
 * (one fsync with synchronous=FULL), runs each op's `after` callback in
 * queue order and wakes the ops' waiters. So N concurrent requests cost
 * one fsync, and an acknowledged op is on disk.
 *
 *   submit ──> queued ──(leader: BEGIN; apply...; COMMIT)──> after() ──> done
 *
 * When a batch fails (disk full, I/O error) it is rolled back as a whole and
 * every op in it completes with that error; the caller's model is then out
 * of step with the disk and must be reloaded (see node_resync).
 *
 * Reads (usage, events) use a second connection under its own lock; WAL
 * lets them run while a batch commits.
 */
#ifndef GS_DAEMON_STORE_H
#define GS_DAEMON_STORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gs/demand.h"
#include "gs/err.h"
#include "slice.h"

struct gs_store;

/* Latest schema version this build writes; older files are migrated. */
#define GS_STORE_SCHEMA_VERSION 9

enum gs_store_sync {
	GS_STORE_SYNC_FULL = 0,   /* fsync each commit: survives power loss */
	GS_STORE_SYNC_NORMAL = 1, /* survives a daemon crash, not power loss */
	GS_STORE_SYNC_OFF = 2,    /* tests and fuzzing only */
};

struct gs_store_op;
typedef gs_err (*gs_store_apply_fn)(struct gs_store *st,
                                    struct gs_store_op *op);
typedef void (*gs_store_after_fn)(struct gs_store_op *op, gs_err result);

/*
 * One queued write. The caller owns it and keeps it alive until it is done:
 * for a waited op until gs_store_wait() returns; a detached op is handed to
 * the store, whose `after` callback must free it.
 */
struct gs_store_op {
	gs_store_apply_fn apply; /* SQL inside the batch's transaction */
	gs_store_after_fn after; /* may be NULL; runs after COMMIT, in order */
	void *arg;
	/* private to the store */
	struct gs_store_op *next;
	pthread_cond_t cond; /* a waited op's own wake-up */
	gs_err result;
	bool done;
	bool detached;
};

/*
 * Opens (creating if needed) the database at `path`, migrates it to
 * GS_STORE_SCHEMA_VERSION, and returns it in *out. Fails with GS_ERR_VERSION
 * when the file's schema is newer than this build, GS_ERR_CORRUPT when it is
 * not a gpuslice database, is empty (0 bytes and no WAL: a lost database
 * is not a fresh start, only a missing one is) or not a database at all,
 * GS_ERR_IO when it cannot be opened for writing. The errbuf names the
 * file. On failure nothing is left open.
 */
gs_err gs_store_open(const char *path, enum gs_store_sync sync,
                     struct gs_store **out, struct gs_errbuf *eb);
/* Commits what is queued, then closes. NULL does nothing. */
void gs_store_close(struct gs_store *st);
/* The schema version of the open file (after migration). */
int gs_store_schema_version(struct gs_store *st);

/*
 * A writer announces itself before it takes the locks that lead to
 * gs_store_submit (intent), and drops the announcement once it submitted
 * or gave up. A batch leader about to fsync waits briefly for announced
 * writers, so that they share its fsync.
 */
void gs_store_intent(struct gs_store *st);
void gs_store_intent_drop(struct gs_store *st);

/*
 * From now on a thread of the store's own commits batches back to back
 * (waiters no longer lead). Throughput under concurrency, at one wake-up
 * more per op when idle. gs_store_close stops it.
 */
gs_err gs_store_start_committer(struct gs_store *st, struct gs_errbuf *eb);

/* Queues `op` (not waited on yet). Never blocks on I/O. */
void gs_store_submit(struct gs_store *st, struct gs_store_op *op);
/* Queues `op`; the store completes it later and calls op->after, which frees
 * it. */
void gs_store_submit_detached(struct gs_store *st, struct gs_store_op *op);
/* Waits until `op` is committed (leading a batch if none is under way). */
gs_err gs_store_wait(struct gs_store *st, struct gs_store_op *op);
/* Commits whatever is queued now (for detached ops); returns when done. */
gs_err gs_store_flush(struct gs_store *st);
/*
 * Copies committed WAL frames into the database (PASSIVE: never blocks the
 * writer). The writer does not checkpoint by itself, so the daemon's tick
 * calls this often. Returns the frames left uncopied, or -1 on error.
 */
int gs_store_checkpoint(struct gs_store *st);
/* Counters for metrics: batches committed and ops in them. */
void gs_store_stats(struct gs_store *st, uint64_t *batches, uint64_t *ops);

/* ---- writes: call only from an op's apply (inside the batch) ---- */
gs_err gs_store_slice_put(struct gs_store *st, const struct gs_slice *s);
gs_err gs_store_slice_delete(struct gs_store *st, int64_t id);
gs_err gs_store_team_put(struct gs_store *st, const struct gs_team *t);
gs_err gs_store_team_delete(struct gs_store *st, const char *name);
gs_err gs_store_usage_add(struct gs_store *st, const struct gs_usage_row *r);
gs_err gs_store_event_add(struct gs_store *st, const struct gs_event *e);
/* The demand history's class for its shape, as it is now / forgotten. */
gs_err gs_store_demand_put(struct gs_store *st,
                           const struct gs_demand_class *c);
gs_err gs_store_demand_delete(struct gs_store *st,
                              const struct gs_demand_shape *shape);

/* ---- reads (own connection; safe from any thread) ---- */
typedef void (*gs_store_slice_cb)(void *ctx, const struct gs_slice *s);
typedef void (*gs_store_team_cb)(void *ctx, const struct gs_team *t);
typedef void (*gs_store_event_cb)(void *ctx, const struct gs_event *e);
typedef void (*gs_store_usage_cb)(void *ctx, const struct gs_usage_row *r);

/*
 * Calls cb for each slice, by id. A row that does not parse (spec, mode,
 * labels) stops the load with GS_ERR_CORRUPT naming its id and name: a
 * slice is never dropped silently.
 */
gs_err gs_store_load_slices(struct gs_store *st, gs_store_slice_cb cb,
                            void *ctx, struct gs_errbuf *eb);
gs_err gs_store_load_teams(struct gs_store *st, gs_store_team_cb cb, void *ctx,
                           struct gs_errbuf *eb);
/* The stored demand classes (a row of an unknown kind is logged and
 * skipped). */
typedef void (*gs_store_demand_cb)(void *ctx, const struct gs_demand_class *c);
gs_err gs_store_load_demand(struct gs_store *st, gs_store_demand_cb cb,
                            void *ctx, struct gs_errbuf *eb);
/* Largest slice id ever given (ids are never reused). */
gs_err gs_store_max_slice_id(struct gs_store *st, int64_t *out);
/*
 * Events with id > after_id and ts >= since_ns (and, when non-empty, for
 * `slice`; when owner >= 0, of that owner's slices), oldest first, at most
 * `limit`.
 */
gs_err gs_store_events(struct gs_store *st, int64_t after_id, int64_t since_ns,
                       const char *slice, int64_t owner, int limit,
                       gs_store_event_cb cb, void *ctx, struct gs_errbuf *eb);
/*
 * Ledger rows overlapping [since_ns, until_ns), optionally only one team,
 * slice (NULL or "" for all) or owner (-1 for all), oldest first.
 */
gs_err gs_store_usage(struct gs_store *st, int64_t since_ns, int64_t until_ns,
                      const char *team, const char *slice, int64_t owner,
                      gs_store_usage_cb cb, void *ctx, struct gs_errbuf *eb);

/* What the ledger already holds for one slice: the sums of its rows and
 * the end of its last one (t1_ns 0: no rows). */
struct gs_store_ledger_sum {
	double gpu_seconds, throttled_seconds, gib_seconds;
	int64_t t1_ns;
};
gs_err gs_store_ledger_sum(struct gs_store *st, int64_t slice_id,
                           struct gs_store_ledger_sum *out,
                           struct gs_errbuf *eb);
/* A meta value into buf ("" when absent). */
gs_err gs_store_meta_get(struct gs_store *st, const char *key, char *buf,
                         size_t len);
/* Write (inside an op's apply): deletes all but the newest `keep` events. */
gs_err gs_store_events_trim(struct gs_store *st, int keep);

#endif
