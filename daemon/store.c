/*
 * store.c - SQLite persistence with group commit (see store.h).
 *
 * Two connections: `wdb` belongs to whichever thread leads the current
 * batch (only one at a time, guarded by `committing`), `rdb` serves reads
 * under `rlock`. WAL mode lets a reader see the last committed state while a
 * batch is being written.
 *
 * Schema versions live in PRAGMA user_version. Each entry of `migrations`
 * moves the file from version i to i+1 and runs in its own transaction, so
 * a crash during a migration leaves the file at the previous version.
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sqlite3.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "gs/faultinj.h"
#include "gs/log.h"

#define GS_STORE_ID_BLOCK          1024
#define GS_STORE_CHECKPOINT_FRAMES 4000

static const char *const migrations[] = {
    /* 0 -> 1: the first schema */
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE slices("
    " id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    " owner_uid INTEGER NOT NULL, team TEXT NOT NULL, spec TEXT NOT NULL,"
    " mode TEXT NOT NULL, gpu_index INTEGER NOT NULL,"
    " gpu_uuid TEXT NOT NULL, mig_profile TEXT NOT NULL,"
    " mig_uuid TEXT NOT NULL, gi_id INTEGER NOT NULL, ci_id INTEGER NOT NULL,"
    " region_slot INTEGER NOT NULL, region_gen INTEGER NOT NULL,"
    " state INTEGER NOT NULL, on_exit INTEGER NOT NULL,"
    " borrowed INTEGER NOT NULL, created_ns INTEGER NOT NULL,"
    " updated_ns INTEGER NOT NULL, reason TEXT NOT NULL);"
    "CREATE TABLE teams("
    " name TEXT PRIMARY KEY, parent TEXT NOT NULL,"
    " g_memory INTEGER NOT NULL, g_compute INTEGER NOT NULL,"
    " g_mig INTEGER NOT NULL, max_memory INTEGER NOT NULL,"
    " max_compute INTEGER NOT NULL, max_mig INTEGER NOT NULL,"
    " from_config INTEGER NOT NULL);"
    "CREATE TABLE usage("
    " id INTEGER PRIMARY KEY, slice_id INTEGER NOT NULL,"
    " slice TEXT NOT NULL, team TEXT NOT NULL, gpu_model TEXT NOT NULL,"
    " t0_ns INTEGER NOT NULL, t1_ns INTEGER NOT NULL,"
    " gpu_seconds REAL NOT NULL, gib_seconds REAL NOT NULL,"
    " throttled_seconds REAL NOT NULL);"
    "CREATE INDEX usage_t1 ON usage(t1_ns);"
    "CREATE TABLE events("
    " id INTEGER PRIMARY KEY, ts_ns INTEGER NOT NULL, type TEXT NOT NULL,"
    " slice TEXT NOT NULL, team TEXT NOT NULL, gpu INTEGER NOT NULL,"
    " message TEXT NOT NULL);",
    /* 1 -> 2: attached processes, reserved time in the ledger, and a
     * high-water mark so that slice ids are never reused */
    "ALTER TABLE slices ADD COLUMN had_procs INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE slices ADD COLUMN pids TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE usage ADD COLUMN alloc_seconds REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE usage ADD COLUMN owner_uid INTEGER NOT NULL DEFAULT -1;"
    "ALTER TABLE usage ADD COLUMN mode TEXT NOT NULL DEFAULT 'timeslice';"
    "ALTER TABLE events ADD COLUMN owner_uid INTEGER NOT NULL DEFAULT -1;"
    "CREATE INDEX events_slice ON events(slice, id);"
    "INSERT OR REPLACE INTO meta(key, value) VALUES('max_slice_id',"
    " (SELECT COALESCE(MAX(id), 0) FROM slices));",
    /* 2 -> 3: slice labels, a JSON object of strings */
    "ALTER TABLE slices ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';",
    /* 3 -> 4: the demand seen, one row per slice shape (gs/demand.h):
     * its weight at t_ns */
    "CREATE TABLE demand("
    " kind TEXT NOT NULL, memory_bytes INTEGER NOT NULL,"
    " compute_pct INTEGER NOT NULL, mig_profile TEXT NOT NULL,"
    " weight REAL NOT NULL, t_ns INTEGER NOT NULL,"
    " PRIMARY KEY(kind, memory_bytes, compute_pct, mig_profile));",
    /* 4 -> 5: SM-time per ledger row (gpu_seconds x the slice's SM share,
     * slice.h). Old rows are filled in: a turns or MIG row's share is 1;
     * an MPS row's is its compute share, which alloc_seconds holds (wall
     * time x share, or x 1 without one: MPS's default, all SMs). A row
     * it cannot be recovered from stays NULL (not known). */
    "ALTER TABLE usage ADD COLUMN sm_seconds REAL;"
    "UPDATE usage SET sm_seconds = CASE"
    " WHEN mode NOT IN ('mps', 'mig+mps') THEN gpu_seconds"
    " WHEN t1_ns > t0_ns AND alloc_seconds > 0 THEN gpu_seconds *"
    "  MIN(1.0, alloc_seconds * 1e9 / (t1_ns - t0_ns))"
    " ELSE NULL END;",
    /* 5 -> 6: a PENDING MIG slice's MIG decision (gs_slice.mig_plan), so
     * that a restarted daemon carries its MIG change on */
    "ALTER TABLE slices ADD COLUMN mig_plan TEXT NOT NULL DEFAULT '';",
    /* 6 -> 7: a slice's swap counts and times (gs_slice_swap), so that
     * they outlive a daemon restart and a region made again; rec_* are
     * the region record's own counts when they were stored */
    "ALTER TABLE slices ADD COLUMN swap_outs INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE slices ADD COLUMN swap_ins INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE slices ADD COLUMN swap_last_out_ns INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE slices ADD COLUMN swap_last_in_ns INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE slices ADD COLUMN swap_out_ns_total INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE slices ADD COLUMN swap_in_ns_total INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE slices ADD COLUMN swap_last_out_took_ns INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE slices ADD COLUMN swap_last_in_took_ns INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE slices ADD COLUMN swap_rec_outs INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE slices ADD COLUMN swap_rec_ins INTEGER NOT NULL DEFAULT 0;",
    /* 7 -> 8: when a slice was parked by a quota reclaim (state 5,
     * gs/park.h), so that a restarted daemon resumes parked slices in
     * the same order */
    "ALTER TABLE slices ADD COLUMN parked_ns INTEGER NOT NULL DEFAULT 0;",
    /* 8 -> 9: the time a ledger row's slice was parked (gs/park.h), billed
     * no memory-time; rows before it were never parked */
    "ALTER TABLE usage ADD COLUMN parked_seconds REAL NOT NULL DEFAULT 0;",
};

_Static_assert(sizeof(migrations) / sizeof(migrations[0]) ==
                   GS_STORE_SCHEMA_VERSION,
               "one migration per schema version");

enum stmt_id {
	ST_SLICE_PUT,
	ST_SLICE_DEL,
	ST_TEAM_PUT,
	ST_TEAM_DEL,
	ST_USAGE_ADD,
	ST_EVENT_ADD,
	ST_MAXID,
	ST_DEMAND_PUT,
	ST_DEMAND_DEL,
	ST_BEGIN,
	ST_COMMIT,
	ST__COUNT
};

static const char *const stmt_sql[ST__COUNT] = {
    [ST_SLICE_PUT] =
        "INSERT OR REPLACE INTO slices(id, name, owner_uid, team, spec,"
        " mode, gpu_index, gpu_uuid, mig_profile, mig_uuid, gi_id,"
        " ci_id, region_slot, region_gen, state, on_exit, borrowed,"
        " created_ns, updated_ns, reason, had_procs, pids, labels,"
        " mig_plan, swap_outs, swap_ins, swap_last_out_ns,"
        " swap_last_in_ns, swap_out_ns_total, swap_in_ns_total,"
        " swap_last_out_took_ns, swap_last_in_took_ns, swap_rec_outs,"
        " swap_rec_ins, parked_ns)"
        " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,"
        "?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26,?27,?28,?29,?30,"
        "?31,?32,?33,?34,?35)",
    [ST_SLICE_DEL] = "DELETE FROM slices WHERE id = ?1",
    [ST_TEAM_PUT] =
        "INSERT OR REPLACE INTO teams(name, parent, g_memory, g_compute,"
        " g_mig, max_memory, max_compute, max_mig, from_config)"
        " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)",
    [ST_TEAM_DEL] = "DELETE FROM teams WHERE name = ?1",
    [ST_USAGE_ADD] =
        "INSERT INTO usage(slice_id, slice, team, gpu_model, t0_ns,"
        " t1_ns, gpu_seconds, gib_seconds, throttled_seconds,"
        " alloc_seconds, owner_uid, mode, sm_seconds, parked_seconds)"
        " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)",
    [ST_EVENT_ADD] = "INSERT INTO events(ts_ns, type, slice, team, gpu,"
                     " message, owner_uid) VALUES(?1,?2,?3,?4,?5,?6,?7)",
    [ST_MAXID] = "UPDATE meta SET value = ?1 WHERE key = 'max_slice_id'"
                 " AND CAST(value AS INTEGER) < ?1",
    [ST_DEMAND_PUT] =
        "INSERT OR REPLACE INTO demand(kind, memory_bytes, compute_pct,"
        " mig_profile, weight, t_ns) VALUES(?1,?2,?3,?4,?5,?6)",
    [ST_DEMAND_DEL] = "DELETE FROM demand WHERE kind = ?1 AND"
                      " memory_bytes = ?2 AND compute_pct = ?3 AND"
                      " mig_profile = ?4",
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
};

struct gs_store {
	sqlite3 *wdb;
	sqlite3 *rdb;
	sqlite3_stmt *stmt[ST__COUNT];
	pthread_mutex_t qlock; /* queue, committing, counters */
	pthread_cond_t qcond;
	struct gs_store_op *head, *tail;
	bool committing;
	bool has_committer; /* a thread of its own commits (see below) */
	bool stop_committer;
	pthread_t committer;
	pthread_cond_t ccond; /* wakes the committer */
	int intents;          /* writers on their way to submit */
	int64_t id_reserved;  /* slice ids up to this are recorded as used */
	bool sync_full;
	uint64_t n_batches, n_ops;
	pthread_mutex_t rlock; /* rdb */
	sqlite3 *cdb;          /* checkpoints, off the commit path */
	pthread_mutex_t clock;
	uint64_t n_checkpoints;
	int wal_frames; /* frames in the WAL after the last commit */
	int version;
};

static gs_err sql_fail(struct gs_errbuf *eb, sqlite3 *db, const char *what)
{
	int rc = sqlite3_extended_errcode(db);
	gs_err code = GS_ERR_IO;

	if ((rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB)
		code = GS_ERR_CORRUPT;
	else if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
		code = GS_ERR_BUSY;
	return gs_fail(eb, code, "store: %s: %s", what, sqlite3_errmsg(db));
}

static gs_err exec(sqlite3 *db, const char *sql, struct gs_errbuf *eb)
{
	char *msg = NULL;
	gs_err err;

	if (gs_fault_hit("sqlite.exec"))
		return gs_fail(eb, GS_ERR_IO,
		               "disk I/O error (injected) running %.60s", sql);
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
		return GS_OK;
	err = sql_fail(eb, db, msg ? msg : sql);
	sqlite3_free(msg);
	return err;
}

static gs_err get_version(sqlite3 *db, int *out, struct gs_errbuf *eb)
{
	sqlite3_stmt *s;
	int rc;

	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) !=
	    SQLITE_OK)
		return sql_fail(eb, db, "read schema version");
	rc = sqlite3_step(s);
	*out = rc == SQLITE_ROW ? sqlite3_column_int(s, 0) : 0;
	sqlite3_finalize(s);
	if (rc != SQLITE_ROW)
		return sql_fail(eb, db, "read schema version");
	return GS_OK;
}

static gs_err migrate(struct gs_store *st, const char *path,
                      struct gs_errbuf *eb)
{
	char sql[64];
	int v;
	gs_err err;

	err = get_version(st->wdb, &v, eb);
	if (err)
		return err;
	if (v > GS_STORE_SCHEMA_VERSION)
		return gs_fail(eb, GS_ERR_VERSION,
		               "store: %s has schema version %d; this build knows up to %d",
		               path, v, GS_STORE_SCHEMA_VERSION);
	if (v == 0) {
		/* A non-empty file at version 0 is not ours. */
		sqlite3_stmt *s;
		int n = 0;

		if (sqlite3_prepare_v2(st->wdb,
		                       "SELECT count(*) FROM sqlite_master", -1,
		                       &s, NULL) != SQLITE_OK)
			return sql_fail(eb, st->wdb, "inspect");
		if (sqlite3_step(s) == SQLITE_ROW)
			n = sqlite3_column_int(s, 0);
		sqlite3_finalize(s);
		if (n != 0)
			return gs_fail(eb, GS_ERR_CORRUPT,
			               "store: %s holds tables but no gpuslice schema version",
			               path);
	}
	for (; v < GS_STORE_SCHEMA_VERSION; v++) {
		err = exec(st->wdb, "BEGIN IMMEDIATE", eb);
		if (err)
			return err;
		err = exec(st->wdb, migrations[v], eb);
		if (!err) {
			snprintf(sql, sizeof(sql), "PRAGMA user_version = %d",
			         v + 1);
			err = exec(st->wdb, sql, eb);
		}
		if (!err)
			err = exec(st->wdb, "COMMIT", eb);
		if (err) {
			(void)sqlite3_exec(st->wdb, "ROLLBACK", NULL, NULL,
			                   NULL);
			return err;
		}
		gs_info("store", "migrated path=%s schema=%d", path, v + 1);
	}
	st->version = v;
	return GS_OK;
}

/* SQLite 3.31+: a database (or journal) path that is a link is refused. */
#ifndef SQLITE_OPEN_NOFOLLOW
#define SQLITE_OPEN_NOFOLLOW 0
#endif

static gs_err open_conn(const char *path, sqlite3 **db, int flags,
                        struct gs_errbuf *eb)
{
	if (sqlite3_open_v2(path, db,
	                    flags | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
	                    NULL) !=
	    SQLITE_OK) {
		gs_err err = *db ? sql_fail(eb, *db, path)
		                 : gs_fail(eb, GS_ERR_NOMEM, "store: open");
		sqlite3_close(*db);
		*db = NULL;
		return err;
	}
	(void)sqlite3_busy_timeout(*db, 5000);
	return GS_OK;
}

static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames);

/*
 * What is at `path` before SQLite sees it. No file is a fresh start. A
 * file of 0 bytes is not: SQLite would take it for an empty database and
 * the daemon would start with no slices while tenants still hold some
 * (a truncated or lost database), so it is refused - unless a WAL beside
 * it holds the data, as after a crash before the first checkpoint. A
 * file that cannot be opened for reading and writing is refused too, and
 * so is a symbolic link (never followed: the daemon writes as root).
 */
static gs_err check_file(const char *path, struct gs_errbuf *eb)
{
	char wal[4200];
	struct stat st, wst;
	int fd, e;

	if (lstat(path, &st) != 0) {
		e = errno;
		if (e == ENOENT)
			return GS_OK;
		return gs_fail(eb, GS_ERR_IO, "store: %s: %s", path,
		               strerror(e));
	}
	if (S_ISLNK(st.st_mode))
		return gs_fail(eb, GS_ERR_PERM,
		               "store: %s is a symbolic link; refusing to follow it (another user may have planted it)",
		               path);
	if (!S_ISREG(st.st_mode))
		return gs_fail(eb, GS_ERR_CORRUPT,
		               "store: %s is not a regular file", path);
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		e = errno;
		return gs_fail(eb, GS_ERR_IO, "store: cannot open %s: %s", path,
		               strerror(e));
	}
	close(fd);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	if (st.st_size == 0 && (stat(wal, &wst) != 0 || wst.st_size == 0))
		return gs_fail(
		    eb, GS_ERR_CORRUPT,
		    "store: %s is empty (0 bytes): refusing to start with no state; restore it, or remove it to start afresh",
		    path);
	return GS_OK;
}

/* Reads the schema once, so that a file that is not a database (or is
 * damaged there) is an error naming it. */
static gs_err probe(sqlite3 *db, const char *path, struct gs_errbuf *eb)
{
	sqlite3_stmt *s;
	int rc;

	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &s,
	                       NULL) != SQLITE_OK)
		return sql_fail(eb, db, path);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_ROW)
		return sql_fail(eb, db, path);
	return GS_OK;
}

gs_err gs_store_open(const char *path, enum gs_store_sync sync,
                     struct gs_store **out, struct gs_errbuf *eb)
{
	static const char *const sync_sql[] = {
	    "PRAGMA synchronous = FULL",
	    "PRAGMA synchronous = NORMAL",
	    "PRAGMA synchronous = OFF",
	};
	struct gs_store *st;
	bool fresh;
	gs_err err;

	st = calloc(1, sizeof(*st));
	if (st == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "store: out of memory");
	pthread_mutex_init(&st->qlock, NULL);
	pthread_cond_init(&st->qcond, NULL);
	pthread_cond_init(&st->ccond, NULL);
	pthread_mutex_init(&st->rlock, NULL);
	pthread_mutex_init(&st->clock, NULL);

	st->sync_full = sync == GS_STORE_SYNC_FULL;
	fresh = access(path, F_OK) != 0 && errno == ENOENT;
	err = check_file(path, eb);
	if (err)
		goto out_free;
	err = open_conn(path, &st->wdb,
	                SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, eb);
	if (err)
		goto out_free;
	/* SQLite falls back to read-only on a file it cannot write, and
	 * reads lazily: find out now, not at the first commit. */
	if (sqlite3_db_readonly(st->wdb, "main") == 1) {
		err =
		    gs_fail(eb, GS_ERR_IO, "store: %s cannot be written", path);
		goto out_close;
	}
	err = probe(st->wdb, path, eb);
	if (err)
		goto out_close;
	/* Small pages: a commit writes a few rows into a few pages, and in
	 * WAL mode every touched page is written whole. Only takes effect on
	 * a new file. */
	err = exec(st->wdb, "PRAGMA page_size = 1024", eb);
	if (!err)
		err = exec(st->wdb, "PRAGMA journal_mode = WAL", eb);
	if (!err)
		err = exec(st->wdb, sync_sql[sync], eb);
	if (!err)
		err = exec(st->wdb, "PRAGMA foreign_keys = ON", eb);
	if (!err)
		err = migrate(st, path, eb);
	if (err)
		goto out_close;
	for (int i = 0; i < ST__COUNT; i++) {
		if (sqlite3_prepare_v3(st->wdb, stmt_sql[i], -1,
		                       SQLITE_PREPARE_PERSISTENT, &st->stmt[i],
		                       NULL) != SQLITE_OK) {
			err = sql_fail(eb, st->wdb, stmt_sql[i]);
			goto out_close;
		}
	}
	/* The writer never checkpoints (that would put a copy of the WAL
	 * into the database, with fsyncs, inside some request's commit);
	 * gs_store_checkpoint does it from the tick thread. */
	err = exec(st->wdb, "PRAGMA wal_autocheckpoint = 0", eb);
	if (err)
		goto out_close;
	sqlite3_wal_hook(st->wdb, wal_hook, st);
	err = open_conn(path, &st->rdb, SQLITE_OPEN_READONLY, eb);
	if (err)
		goto out_close;
	err = open_conn(path, &st->cdb, SQLITE_OPEN_READWRITE, eb);
	if (!err)
		err = exec(st->cdb, sync_sql[sync], eb);
	if (err) {
		sqlite3_close(st->rdb);
		sqlite3_close(st->cdb);
		goto out_close;
	}
	*out = st;
	return GS_OK;

out_close:
	for (int i = 0; i < ST__COUNT; i++)
		sqlite3_finalize(st->stmt[i]);
	sqlite3_close(st->wdb);
	if (fresh) {
		/* A first start that failed leaves no file behind: an empty
		 * one would be refused by the next start (check_file). */
		char side[4200];

		(void)unlink(path);
		snprintf(side, sizeof(side), "%s-wal", path);
		(void)unlink(side);
		snprintf(side, sizeof(side), "%s-shm", path);
		(void)unlink(side);
	}
out_free:
	pthread_mutex_destroy(&st->qlock);
	pthread_cond_destroy(&st->qcond);
	pthread_mutex_destroy(&st->rlock);
	pthread_mutex_destroy(&st->clock);
	free(st);
	return err;
}

static void stop_committer(struct gs_store *st);

void gs_store_close(struct gs_store *st)
{
	if (st == NULL)
		return;
	stop_committer(st);
	(void)gs_store_flush(st);
	(void)gs_store_checkpoint(st);
	for (int i = 0; i < ST__COUNT; i++)
		sqlite3_finalize(st->stmt[i]);
	sqlite3_close(st->cdb);
	sqlite3_close(st->rdb);
	sqlite3_close(st->wdb);
	pthread_mutex_destroy(&st->qlock);
	pthread_cond_destroy(&st->qcond);
	pthread_cond_destroy(&st->ccond);
	pthread_mutex_destroy(&st->rlock);
	pthread_mutex_destroy(&st->clock);
	free(st);
}

int gs_store_schema_version(struct gs_store *st)
{
	return st->version;
}

static void enqueue(struct gs_store *st, struct gs_store_op *op, bool detached)
{
	op->next = NULL;
	op->done = false;
	op->detached = detached;
	op->result = GS_OK;
	if (!detached)
		pthread_cond_init(&op->cond, NULL);
	pthread_mutex_lock(&st->qlock);
	if (st->tail)
		st->tail->next = op;
	else
		st->head = op;
	st->tail = op;
	if (st->has_committer && !detached)
		pthread_cond_signal(&st->ccond);
	pthread_mutex_unlock(&st->qlock);
}

void gs_store_intent(struct gs_store *st)
{
	pthread_mutex_lock(&st->qlock);
	st->intents++;
	pthread_mutex_unlock(&st->qlock);
}

void gs_store_intent_drop(struct gs_store *st)
{
	pthread_mutex_lock(&st->qlock);
	if (st->intents > 0)
		st->intents--;
	pthread_mutex_unlock(&st->qlock);
}

void gs_store_submit(struct gs_store *st, struct gs_store_op *op)
{
	enqueue(st, op, false);
}

void gs_store_submit_detached(struct gs_store *st, struct gs_store_op *op)
{
	enqueue(st, op, true);
}

static gs_err step_reset(struct gs_store *st, sqlite3_stmt *s);

/* After each commit: how long the WAL is (read by the checkpointer). */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	struct gs_store *st = arg;

	(void)db;
	(void)name;
	__atomic_store_n(&st->wal_frames, frames, __ATOMIC_RELAXED);
	return SQLITE_OK;
}

static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/*
 * Applies one op of a batch inside a savepoint of its own. On failure the
 * op's writes are rolled back to the savepoint (the transaction and the
 * other ops' writes stay) and its error returned.
 */
static gs_err op_apply_alone(struct gs_store *st, struct gs_store_op *op)
{
	gs_err err;

	if (sqlite3_exec(st->wdb, "SAVEPOINT op", NULL, NULL, NULL) !=
	    SQLITE_OK) {
		gs_error("store", "savepoint failed: %s",
		         sqlite3_errmsg(st->wdb));
		return GS_ERR_IO;
	}
	err = op->apply(st, op);
	if (err) {
		gs_error("store", "batch op failed and undone alone err=%s",
		         gs_err_name(err));
		(void)sqlite3_exec(st->wdb, "ROLLBACK TO op", NULL, NULL, NULL);
		/* Its slice-id reservation may be among what was undone. */
		st->id_reserved = 0;
	}
	if (sqlite3_exec(st->wdb, "RELEASE op", NULL, NULL, NULL) !=
	    SQLITE_OK && !err) {
		gs_error("store", "release failed: %s",
		         sqlite3_errmsg(st->wdb));
		err = GS_ERR_IO;
	}
	return err;
}

/*
 * Runs one batch: the whole queue as it is now. Called with qlock held;
 * drops it for the I/O and takes it back. Detached ops may be freed by
 * their `after`, so waited ops are collected (through `next`, which is no
 * longer needed) before `after` runs and marked done under the lock.
 */
static void lead(struct gs_store *st)
{
	struct gs_store_op *batch, *op, *next, *waited = NULL;
	struct gs_errbuf eb = {0};
	gs_err err;
	uint64_t n = 0;

	st->committing = true;
	/*
	 * Writers already on their way (they hold or wait for the model's
	 * lock) are worth a short wait: they then share this commit (its
	 * fsync, and the pages it writes: consecutive rows share leaf pages)
	 * instead of paying for the next one. Yielding lets them run on this
	 * CPU. Bounded: ~0.3 ms with fsync, ~0.1 ms without.
	 */
	if (st->intents > 0) {
		int64_t deadline = mono_us() + (st->sync_full ? 300 : 100);

		while (st->intents > 0 && mono_us() < deadline) {
			pthread_mutex_unlock(&st->qlock);
			sched_yield();
			pthread_mutex_lock(&st->qlock);
		}
	}
	batch = st->head;
	st->head = st->tail = NULL;
	pthread_mutex_unlock(&st->qlock);

	/*
	 * One transaction for the batch, one savepoint for each op in it: an
	 * op that fails (a row the database refuses) is undone alone and
	 * fails alone; the others' writes - another slice's usage, a
	 * delete answered meanwhile - are committed all the same.
	 */
	err = step_reset(st, st->stmt[ST_BEGIN]);
	for (op = batch; op; op = op->next) {
		gs_err oerr = err;

		if (!oerr)
			oerr = op_apply_alone(st, op);
		op->result = oerr;
	}
	if (!err)
		err = step_reset(st, st->stmt[ST_COMMIT]);
	if (err) {
		gs_error("store", "batch rolled back err=%s %s",
		         gs_err_name(err), gs_errbuf_msg(&eb, err));
		(void)sqlite3_exec(st->wdb, "ROLLBACK", NULL, NULL, NULL);
		st->id_reserved = 0;
	}
	for (op = batch; op; op = next) {
		bool detached = op->detached;

		next = op->next;
		if (err)
			op->result = err;
		n++;
		if (!detached) {
			op->next = waited;
			waited = op;
		}
		if (op->after)
			op->after(op, err);
	}

	pthread_mutex_lock(&st->qlock);
	/* Wake exactly who needs it: the ops of this batch, and the first
	 * waiter still queued, which leads the next batch. */
	for (op = waited; op; op = next) {
		next = op->next;
		op->done = true;
		pthread_cond_signal(&op->cond);
	}
	st->n_batches++;
	st->n_ops += n;
	st->committing = false;
	for (op = st->head; op && !st->has_committer; op = op->next)
		if (!op->detached) {
			pthread_cond_signal(&op->cond);
			break;
		}
	pthread_cond_broadcast(&st->qcond); /* flushers */
}

gs_err gs_store_wait(struct gs_store *st, struct gs_store_op *op)
{
	pthread_mutex_lock(&st->qlock);
	while (!op->done) {
		if (!st->has_committer && !st->committing && st->head)
			lead(st);
		else
			pthread_cond_wait(&op->cond, &st->qlock);
	}
	pthread_mutex_unlock(&st->qlock);
	pthread_cond_destroy(&op->cond);
	return op->result;
}

gs_err gs_store_flush(struct gs_store *st)
{
	pthread_mutex_lock(&st->qlock);
	while (st->committing)
		pthread_cond_wait(&st->qcond, &st->qlock);
	if (st->head)
		lead(st);
	pthread_mutex_unlock(&st->qlock);
	return GS_OK;
}

/*
 * The committer: batches back to back while writers keep coming, so the
 * disk never waits for a new leader to be scheduled; asleep otherwise.
 */
static void *committer_main(void *arg)
{
	struct gs_store *st = arg;

	pthread_mutex_lock(&st->qlock);
	for (;;) {
		while (!st->stop_committer &&
		       (st->head == NULL || st->committing))
			pthread_cond_wait(&st->ccond, &st->qlock);
		if (st->stop_committer)
			break;
		lead(st);
	}
	pthread_mutex_unlock(&st->qlock);
	return NULL;
}

gs_err gs_store_start_committer(struct gs_store *st, struct gs_errbuf *eb)
{
	pthread_mutex_lock(&st->qlock);
	if (st->has_committer) {
		pthread_mutex_unlock(&st->qlock);
		return GS_OK;
	}
	if (pthread_create(&st->committer, NULL, committer_main, st) != 0) {
		pthread_mutex_unlock(&st->qlock);
		return gs_fail(eb, GS_ERR_NOMEM, "store: no committer thread");
	}
	st->has_committer = true;
	pthread_mutex_unlock(&st->qlock);
	return GS_OK;
}

static void stop_committer(struct gs_store *st)
{
	pthread_mutex_lock(&st->qlock);
	if (!st->has_committer) {
		pthread_mutex_unlock(&st->qlock);
		return;
	}
	st->stop_committer = true;
	pthread_cond_signal(&st->ccond);
	pthread_mutex_unlock(&st->qlock);
	pthread_join(st->committer, NULL);
	pthread_mutex_lock(&st->qlock);
	st->has_committer = false;
	pthread_mutex_unlock(&st->qlock);
}

int gs_store_checkpoint(struct gs_store *st)
{
	int log = 0, done = 0, rc;

	/* A checkpoint fsyncs the database: not for a few frames. */
	if (__atomic_load_n(&st->wal_frames, __ATOMIC_RELAXED) <
	    GS_STORE_CHECKPOINT_FRAMES)
		return 0;
	pthread_mutex_lock(&st->clock);
	rc = sqlite3_wal_checkpoint_v2(st->cdb, NULL, SQLITE_CHECKPOINT_PASSIVE,
	                               &log, &done);
	if (rc == SQLITE_OK && log > 0)
		st->n_checkpoints++;
	pthread_mutex_unlock(&st->clock);
	if (rc != SQLITE_OK && rc != SQLITE_BUSY)
		gs_warn("store", "checkpoint failed: %s", sqlite3_errstr(rc));
	return rc == SQLITE_OK ? log - done : -1;
}

void gs_store_stats(struct gs_store *st, uint64_t *batches, uint64_t *ops)
{
	pthread_mutex_lock(&st->qlock);
	*batches = st->n_batches;
	*ops = st->n_ops;
	pthread_mutex_unlock(&st->qlock);
}

/* ---- writes ---- */

static gs_err step_reset(struct gs_store *st, sqlite3_stmt *s)
{
	bool injected = gs_fault_hit("sqlite.write");
	int rc = injected ? SQLITE_IOERR : sqlite3_step(s);

	(void)sqlite3_reset(s);
	(void)sqlite3_clear_bindings(s);
	if (rc == SQLITE_DONE || rc == SQLITE_ROW)
		return GS_OK;
	gs_error("store", "write failed: %s",
	         injected ? "disk I/O error (injected)"
	                  : sqlite3_errmsg(st->wdb));
	return (rc & 0xff) == SQLITE_FULL         ? GS_ERR_IO
	       : (rc & 0xff) == SQLITE_CONSTRAINT ? GS_ERR_EXISTS
	                                          : GS_ERR_IO;
}

static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
	(void)sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
}

static void pids_format(const struct gs_slice *s, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < s->n_pids && off + 12 < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%d",
		                        i ? "," : "", (int)s->pids[i]);
}

static void pids_parse(struct gs_slice *s, const char *txt)
{
	char *end;

	s->n_pids = 0;
	while (txt && *txt && s->n_pids < GS_SLICE_MAX_PIDS) {
		long v = strtol(txt, &end, 10);

		if (end == txt)
			break;
		if (v > 0 && v <= 0x7fffffff)
			s->pids[s->n_pids++] = (int32_t)v;
		txt = *end == ',' ? end + 1 : end;
	}
}

gs_err gs_store_slice_put(struct gs_store *st, const struct gs_slice *v)
{
	sqlite3_stmt *s = st->stmt[ST_SLICE_PUT];
	char pids[GS_SLICE_MAX_PIDS * 12];
	char spec[GS_SPEC_FORMAT_MAX];
	gs_err err;

	pids_format(v, pids, sizeof(pids));
	(void)gs_spec_format(&v->spec, spec, sizeof(spec));
	sqlite3_bind_int64(s, 1, v->id);
	bind_text(s, 2, v->name);
	sqlite3_bind_int64(s, 3, v->owner_uid);
	bind_text(s, 4, v->team);
	bind_text(s, 5, spec);
	bind_text(s, 6, gs_mode_name(v->mode));
	sqlite3_bind_int(s, 7, v->gpu_index);
	bind_text(s, 8, v->gpu_uuid);
	bind_text(s, 9, v->mig_profile);
	bind_text(s, 10, v->mig_uuid);
	sqlite3_bind_int(s, 11, v->gi_id);
	sqlite3_bind_int(s, 12, v->ci_id);
	sqlite3_bind_int(s, 13, v->region_slot);
	sqlite3_bind_int64(s, 14, v->region_gen);
	sqlite3_bind_int(s, 15, v->state);
	sqlite3_bind_int(s, 16, v->on_exit);
	sqlite3_bind_int(s, 17, v->borrowed);
	sqlite3_bind_int64(s, 18, v->created_ns);
	sqlite3_bind_int64(s, 19, v->updated_ns);
	bind_text(s, 20, v->reason);
	sqlite3_bind_int(s, 21, v->had_procs);
	bind_text(s, 22, pids);
	bind_text(s, 24, v->mig_plan);
	sqlite3_bind_int64(s, 25, (sqlite3_int64)v->swap.swap_outs);
	sqlite3_bind_int64(s, 26, (sqlite3_int64)v->swap.swap_ins);
	sqlite3_bind_int64(s, 27, v->swap.last_out_ns);
	sqlite3_bind_int64(s, 28, v->swap.last_in_ns);
	sqlite3_bind_int64(s, 29, (sqlite3_int64)v->swap.out_ns_total);
	sqlite3_bind_int64(s, 30, (sqlite3_int64)v->swap.in_ns_total);
	sqlite3_bind_int64(s, 31, v->swap.last_out_took_ns);
	sqlite3_bind_int64(s, 32, v->swap.last_in_took_ns);
	sqlite3_bind_int64(s, 33, (sqlite3_int64)v->swap.rec_outs);
	sqlite3_bind_int64(s, 34, (sqlite3_int64)v->swap.rec_ins);
	sqlite3_bind_int64(s, 35, v->parked_ns);
	{
		json_t *lj = gs_slice_labels_to_json(v->labels, v->n_labels);
		char *lt = lj ? json_dumps(lj, JSON_COMPACT | JSON_SORT_KEYS)
		              : NULL;

		json_decref(lj);
		if (lt == NULL) {
			sqlite3_reset(s);
			sqlite3_clear_bindings(s);
			gs_error("store", "slice=%s labels: out of memory",
			         v->name);
			return GS_ERR_NOMEM;
		}
		sqlite3_bind_text(s, 23, lt, -1, SQLITE_TRANSIENT);
		free(lt);
	}
	err = step_reset(st, s);
	if (err || v->id <= st->id_reserved)
		return err;
	/* Ids are recorded as used in blocks, so that most creates do not
	 * write the meta page; a restart skips the rest of a block. */
	s = st->stmt[ST_MAXID];
	sqlite3_bind_int64(s, 1, v->id + GS_STORE_ID_BLOCK);
	err = step_reset(st, s);
	if (!err)
		st->id_reserved = v->id + GS_STORE_ID_BLOCK;
	return err;
}

gs_err gs_store_slice_delete(struct gs_store *st, int64_t id)
{
	sqlite3_stmt *s = st->stmt[ST_SLICE_DEL];

	sqlite3_bind_int64(s, 1, id);
	return step_reset(st, s);
}

gs_err gs_store_team_put(struct gs_store *st, const struct gs_team *t)
{
	sqlite3_stmt *s = st->stmt[ST_TEAM_PUT];

	bind_text(s, 1, t->name);
	bind_text(s, 2, t->parent);
	for (int r = 0; r < GS_QRES__COUNT; r++) {
		sqlite3_bind_int64(s, 3 + r, t->guarantee.v[r]);
		sqlite3_bind_int64(s, 6 + r, t->max.v[r]);
	}
	sqlite3_bind_int(s, 9, t->from_config);
	return step_reset(st, s);
}

gs_err gs_store_team_delete(struct gs_store *st, const char *name)
{
	sqlite3_stmt *s = st->stmt[ST_TEAM_DEL];

	bind_text(s, 1, name);
	return step_reset(st, s);
}

static void bind_shape(sqlite3_stmt *s, const struct gs_demand_shape *sh)
{
	bind_text(s, 1, gs_demand_kind_name(sh->kind));
	sqlite3_bind_int64(s, 2, (sqlite3_int64)sh->memory_bytes);
	sqlite3_bind_int(s, 3, sh->compute_pct);
	bind_text(s, 4, sh->mig_profile);
}

gs_err gs_store_demand_put(struct gs_store *st,
                           const struct gs_demand_class *c)
{
	sqlite3_stmt *s = st->stmt[ST_DEMAND_PUT];

	bind_shape(s, &c->shape);
	sqlite3_bind_double(s, 5, c->weight);
	sqlite3_bind_int64(s, 6, c->t_ns);
	return step_reset(st, s);
}

gs_err gs_store_demand_delete(struct gs_store *st,
                              const struct gs_demand_shape *shape)
{
	sqlite3_stmt *s = st->stmt[ST_DEMAND_DEL];

	bind_shape(s, shape);
	return step_reset(st, s);
}

/* A figure a usage row may hold: finite and not negative. */
static bool usage_figure_ok(double v)
{
	return isfinite(v) && v >= 0;
}

gs_err gs_store_usage_add(struct gs_store *st, const struct gs_usage_row *r)
{
	sqlite3_stmt *s = st->stmt[ST_USAGE_ADD];

	/* NaN is bound as NULL, which the table refuses: say so here, for
	 * this row alone, before the statement fails. */
	if (!usage_figure_ok(r->gpu_seconds) ||
	    !usage_figure_ok(r->gib_seconds) ||
	    !usage_figure_ok(r->throttled_seconds) ||
	    !usage_figure_ok(r->alloc_seconds) ||
	    !usage_figure_ok(r->parked_seconds) ||
	    !(isfinite(r->sm_seconds) || r->sm_seconds < 0) ||
	    r->t1_ns < r->t0_ns) {
		gs_error("store", "slice id=%lld usage row refused: a figure is not finite or is negative",
		         (long long)r->slice_id);
		return GS_ERR_INVALID;
	}

	sqlite3_bind_int64(s, 1, r->slice_id);
	bind_text(s, 2, r->slice);
	bind_text(s, 3, r->team);
	bind_text(s, 4, r->gpu_model);
	sqlite3_bind_int64(s, 5, r->t0_ns);
	sqlite3_bind_int64(s, 6, r->t1_ns);
	sqlite3_bind_double(s, 7, r->gpu_seconds);
	sqlite3_bind_double(s, 8, r->gib_seconds);
	sqlite3_bind_double(s, 9, r->throttled_seconds);
	sqlite3_bind_double(s, 10, r->alloc_seconds);
	sqlite3_bind_int64(s, 11, r->owner_uid);
	bind_text(s, 12, r->mode[0] ? r->mode : "timeslice");
	if (r->sm_seconds >= 0)
		sqlite3_bind_double(s, 13, r->sm_seconds);
	else
		sqlite3_bind_null(s, 13);
	sqlite3_bind_double(s, 14, r->parked_seconds);
	return step_reset(st, s);
}

gs_err gs_store_event_add(struct gs_store *st, const struct gs_event *e)
{
	sqlite3_stmt *s = st->stmt[ST_EVENT_ADD];

	sqlite3_bind_int64(s, 1, e->ts_ns);
	bind_text(s, 2, e->type);
	bind_text(s, 3, e->slice);
	bind_text(s, 4, e->team);
	sqlite3_bind_int(s, 5, e->gpu);
	bind_text(s, 6, e->message);
	sqlite3_bind_int64(s, 7, e->owner_uid);
	return step_reset(st, s);
}

gs_err gs_store_events_trim(struct gs_store *st, int keep)
{
	char sql[160];
	struct gs_errbuf eb = {0};

	snprintf(sql, sizeof(sql),
	         "DELETE FROM events WHERE id <= (SELECT MAX(id) FROM events) "
	         "- %d",
	         keep);
	return exec(st->wdb, sql, &eb);
}

/* ---- reads ---- */

static void copy_col(char *dst, size_t len, sqlite3_stmt *s, int col)
{
	const unsigned char *t = sqlite3_column_text(s, col);

	snprintf(dst, len, "%s", t ? (const char *)t : "");
}

static gs_err read_begin(struct gs_store *st, const char *sql, sqlite3_stmt **s,
                         struct gs_errbuf *eb)
{
	pthread_mutex_lock(&st->rlock);
	if (sqlite3_prepare_v2(st->rdb, sql, -1, s, NULL) != SQLITE_OK) {
		gs_err err = sql_fail(eb, st->rdb, "prepare");

		pthread_mutex_unlock(&st->rlock);
		return err;
	}
	return GS_OK;
}

static gs_err read_end(struct gs_store *st, sqlite3_stmt *s, int rc,
                       struct gs_errbuf *eb)
{
	gs_err err = GS_OK;

	if (rc != SQLITE_DONE)
		err = sql_fail(eb, st->rdb, "read");
	sqlite3_finalize(s);
	pthread_mutex_unlock(&st->rlock);
	return err;
}

/*
 * A slice row that does not parse. Loading stops there: skipping it would
 * start the daemon without a slice a tenant holds (its limits gone from
 * the region, its memory free for another), so the operator decides.
 */
static gs_err unreadable(struct gs_errbuf *eb, const struct gs_slice *v,
                         const char *what, struct gs_errbuf *peb)
{
	return gs_fail(eb, GS_ERR_CORRUPT,
	               "store: slice row id=%lld name='%s' is unreadable (%s: %s); not starting without it: repair or delete that row in state.db",
	               (long long)v->id, v->name, what,
	               gs_errbuf_msg(peb, GS_ERR_CORRUPT));
}

gs_err gs_store_load_slices(struct gs_store *st, gs_store_slice_cb cb,
                            void *ctx, struct gs_errbuf *eb)
{
	sqlite3_stmt *s;
	int rc;
	gs_err err, bad = GS_OK;

	err = read_begin(
	    st,
	    "SELECT id, name, owner_uid, team, spec, mode, gpu_index,"
	    " gpu_uuid, mig_profile, mig_uuid, gi_id, ci_id, region_slot,"
	    " region_gen, state, on_exit, borrowed, created_ns, updated_ns,"
	    " reason, had_procs, pids, labels, mig_plan, swap_outs, swap_ins,"
	    " swap_last_out_ns, swap_last_in_ns, swap_out_ns_total,"
	    " swap_in_ns_total, swap_last_out_took_ns, swap_last_in_took_ns,"
	    " swap_rec_outs, swap_rec_ins, parked_ns FROM slices ORDER BY id",
	    &s, eb);
	if (err)
		return err;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct gs_slice v;
		struct gs_errbuf peb = {0};
		const char *txt;

		memset(&v, 0, sizeof(v));
		v.id = sqlite3_column_int64(s, 0);
		copy_col(v.name, sizeof(v.name), s, 1);
		v.owner_uid = (uint32_t)sqlite3_column_int64(s, 2);
		copy_col(v.team, sizeof(v.team), s, 3);
		gs_spec_init(&v.spec);
		txt = (const char *)sqlite3_column_text(s, 4);
		if (gs_spec_parse_kvlist(&v.spec, txt ? txt : "", &peb) ||
		    gs_parse_mode((const char *)sqlite3_column_text(s, 5),
		                  &v.mode, &peb)) {
			bad = unreadable(eb, &v, "spec or mode", &peb);
			break;
		}
		v.gpu_index = sqlite3_column_int(s, 6);
		copy_col(v.gpu_uuid, sizeof(v.gpu_uuid), s, 7);
		copy_col(v.mig_profile, sizeof(v.mig_profile), s, 8);
		copy_col(v.mig_uuid, sizeof(v.mig_uuid), s, 9);
		v.gi_id = sqlite3_column_int(s, 10);
		v.ci_id = sqlite3_column_int(s, 11);
		v.region_slot = sqlite3_column_int(s, 12);
		v.region_gen = (uint32_t)sqlite3_column_int64(s, 13);
		v.state = sqlite3_column_int(s, 14);
		v.on_exit = sqlite3_column_int(s, 15);
		v.borrowed = sqlite3_column_int(s, 16) != 0;
		v.created_ns = sqlite3_column_int64(s, 17);
		v.updated_ns = sqlite3_column_int64(s, 18);
		copy_col(v.reason, sizeof(v.reason), s, 19);
		v.had_procs = sqlite3_column_int(s, 20) != 0;
		pids_parse(&v, (const char *)sqlite3_column_text(s, 21));
		copy_col(v.mig_plan, sizeof(v.mig_plan), s, 23);
		v.swap.swap_outs = (uint64_t)sqlite3_column_int64(s, 24);
		v.swap.swap_ins = (uint64_t)sqlite3_column_int64(s, 25);
		v.swap.last_out_ns = sqlite3_column_int64(s, 26);
		v.swap.last_in_ns = sqlite3_column_int64(s, 27);
		v.swap.out_ns_total = (uint64_t)sqlite3_column_int64(s, 28);
		v.swap.in_ns_total = (uint64_t)sqlite3_column_int64(s, 29);
		v.swap.last_out_took_ns = sqlite3_column_int64(s, 30);
		v.swap.last_in_took_ns = sqlite3_column_int64(s, 31);
		v.swap.rec_outs = (uint64_t)sqlite3_column_int64(s, 32);
		v.swap.rec_ins = (uint64_t)sqlite3_column_int64(s, 33);
		v.parked_ns = sqlite3_column_int64(s, 34);
		{
			const char *lt =
			    (const char *)sqlite3_column_text(s, 22);
			json_t *lj = json_loads(lt ? lt : "{}", 0, NULL);

			if (lj == NULL)
				(void)gs_fail(&peb, GS_ERR_CORRUPT,
				              "not JSON: '%.60s'", lt);
			if (lj == NULL ||
			    gs_slice_labels_from_json(lj, v.labels, &v.n_labels,
			                              &peb) != GS_OK) {
				json_decref(lj);
				bad = unreadable(eb, &v, "labels", &peb);
				break;
			}
			json_decref(lj);
		}
		cb(ctx, &v);
	}
	if (bad) {
		sqlite3_finalize(s);
		pthread_mutex_unlock(&st->rlock);
		return bad;
	}
	return read_end(st, s, rc, eb);
}

gs_err gs_store_load_teams(struct gs_store *st, gs_store_team_cb cb, void *ctx,
                           struct gs_errbuf *eb)
{
	sqlite3_stmt *s;
	int rc;
	gs_err err;

	err = read_begin(st,
	                 "SELECT name, parent, g_memory, g_compute, g_mig,"
	                 " max_memory, max_compute, max_mig, from_config"
	                 " FROM teams ORDER BY name",
	                 &s, eb);
	if (err)
		return err;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct gs_team t;

		memset(&t, 0, sizeof(t));
		copy_col(t.name, sizeof(t.name), s, 0);
		copy_col(t.parent, sizeof(t.parent), s, 1);
		for (int r = 0; r < GS_QRES__COUNT; r++) {
			t.guarantee.v[r] = sqlite3_column_int64(s, 2 + r);
			t.max.v[r] = sqlite3_column_int64(s, 5 + r);
		}
		t.from_config = sqlite3_column_int(s, 8) != 0;
		cb(ctx, &t);
	}
	return read_end(st, s, rc, eb);
}

gs_err gs_store_load_demand(struct gs_store *st, gs_store_demand_cb cb,
                            void *ctx, struct gs_errbuf *eb)
{
	sqlite3_stmt *s;
	int rc;
	gs_err err;

	err = read_begin(st,
	                 "SELECT kind, memory_bytes, compute_pct, mig_profile,"
	                 " weight, t_ns FROM demand ORDER BY t_ns",
	                 &s, eb);
	if (err)
		return err;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct gs_demand_class c;
		const unsigned char *kind = sqlite3_column_text(s, 0);

		memset(&c, 0, sizeof(c));
		if (kind == NULL ||
		    gs_demand_parse_kind((const char *)kind, &c.shape.kind)) {
			gs_warn("store", "demand row of unknown kind '%s' skipped", kind ? (const char *)kind : "");
			continue;
		}
		c.shape.memory_bytes = (uint64_t)sqlite3_column_int64(s, 1);
		c.shape.compute_pct = sqlite3_column_int(s, 2);
		copy_col(c.shape.mig_profile, sizeof(c.shape.mig_profile), s,
		         3);
		c.weight = sqlite3_column_double(s, 4);
		c.t_ns = sqlite3_column_int64(s, 5);
		cb(ctx, &c);
	}
	return read_end(st, s, rc, eb);
}

gs_err gs_store_max_slice_id(struct gs_store *st, int64_t *out)
{
	char buf[32];
	gs_err err = gs_store_meta_get(st, "max_slice_id", buf, sizeof(buf));

	*out = err ? 0 : strtoll(buf, NULL, 10);
	return err;
}

gs_err gs_store_meta_get(struct gs_store *st, const char *key, char *buf,
                         size_t len)
{
	sqlite3_stmt *s;
	struct gs_errbuf eb = {0};
	int rc;
	gs_err err;

	buf[0] = '\0';
	err = read_begin(st, "SELECT value FROM meta WHERE key = ?1", &s, &eb);
	if (err)
		return err;
	bind_text(s, 1, key);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		copy_col(buf, len, s, 0);
		rc = SQLITE_DONE;
	}
	return read_end(st, s, rc, &eb);
}

gs_err gs_store_events(struct gs_store *st, int64_t after_id, int64_t since_ns,
                       const char *slice, int64_t owner, int limit,
                       gs_store_event_cb cb, void *ctx, struct gs_errbuf *eb)
{
	sqlite3_stmt *s;
	int rc;
	gs_err err;

	err = read_begin(st,
	                 "SELECT id, ts_ns, type, slice, team, gpu, message,"
	                 " owner_uid FROM events WHERE id > ?1 AND ts_ns >= ?2"
	                 " AND (?3 = '' OR slice = ?3)"
	                 " AND (?5 < 0 OR owner_uid = ?5)"
	                 " ORDER BY id LIMIT ?4",
	                 &s, eb);
	if (err)
		return err;
	sqlite3_bind_int64(s, 1, after_id);
	sqlite3_bind_int64(s, 2, since_ns);
	bind_text(s, 3, slice ? slice : "");
	sqlite3_bind_int(s, 4, limit);
	sqlite3_bind_int64(s, 5, owner);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct gs_event e;

		memset(&e, 0, sizeof(e));
		e.id = sqlite3_column_int64(s, 0);
		e.ts_ns = sqlite3_column_int64(s, 1);
		copy_col(e.type, sizeof(e.type), s, 2);
		copy_col(e.slice, sizeof(e.slice), s, 3);
		copy_col(e.team, sizeof(e.team), s, 4);
		e.gpu = sqlite3_column_int(s, 5);
		copy_col(e.message, sizeof(e.message), s, 6);
		e.owner_uid = sqlite3_column_int64(s, 7);
		cb(ctx, &e);
	}
	return read_end(st, s, rc, eb);
}

gs_err gs_store_ledger_sum(struct gs_store *st, int64_t slice_id,
                           struct gs_store_ledger_sum *out,
                           struct gs_errbuf *eb)
{
	sqlite3_stmt *s;
	int rc;
	gs_err err;

	memset(out, 0, sizeof(*out));
	err = read_begin(st,
	                 "SELECT TOTAL(gpu_seconds), TOTAL(throttled_seconds),"
	                 " TOTAL(gib_seconds), COALESCE(MAX(t1_ns), 0)"
	                 " FROM usage WHERE slice_id = ?1",
	                 &s, eb);
	if (err)
		return err;
	sqlite3_bind_int64(s, 1, slice_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		out->gpu_seconds = sqlite3_column_double(s, 0);
		out->throttled_seconds = sqlite3_column_double(s, 1);
		out->gib_seconds = sqlite3_column_double(s, 2);
		out->t1_ns = sqlite3_column_int64(s, 3);
		rc = sqlite3_step(s);
	}
	return read_end(st, s, rc, eb);
}

gs_err gs_store_usage(struct gs_store *st, int64_t since_ns, int64_t until_ns,
                      const char *team, const char *slice, int64_t owner,
                      gs_store_usage_cb cb, void *ctx, struct gs_errbuf *eb)
{
	sqlite3_stmt *s;
	int rc;
	gs_err err;

	err = read_begin(st,
	                 "SELECT slice_id, slice, team, gpu_model, t0_ns,"
	                 " t1_ns, gpu_seconds, gib_seconds, throttled_seconds,"
	                 " alloc_seconds, owner_uid, mode, sm_seconds,"
	                 " parked_seconds FROM usage"
	                 " WHERE t1_ns > ?1 AND t0_ns < ?2"
	                 " AND (?3 = '' OR team = ?3)"
	                 " AND (?4 = '' OR slice = ?4)"
	                 " AND (?5 < 0 OR owner_uid = ?5) ORDER BY t0_ns, id",
	                 &s, eb);
	if (err)
		return err;
	sqlite3_bind_int64(s, 1, since_ns);
	sqlite3_bind_int64(s, 2, until_ns);
	bind_text(s, 3, team ? team : "");
	bind_text(s, 4, slice ? slice : "");
	sqlite3_bind_int64(s, 5, owner);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct gs_usage_row r;

		memset(&r, 0, sizeof(r));
		r.slice_id = sqlite3_column_int64(s, 0);
		copy_col(r.slice, sizeof(r.slice), s, 1);
		copy_col(r.team, sizeof(r.team), s, 2);
		copy_col(r.gpu_model, sizeof(r.gpu_model), s, 3);
		r.t0_ns = sqlite3_column_int64(s, 4);
		r.t1_ns = sqlite3_column_int64(s, 5);
		r.gpu_seconds = sqlite3_column_double(s, 6);
		r.gib_seconds = sqlite3_column_double(s, 7);
		r.throttled_seconds = sqlite3_column_double(s, 8);
		r.alloc_seconds = sqlite3_column_double(s, 9);
		r.owner_uid = sqlite3_column_int64(s, 10);
		copy_col(r.mode, sizeof(r.mode), s, 11);
		r.sm_seconds = sqlite3_column_type(s, 12) == SQLITE_NULL
		                   ? -1
		                   : sqlite3_column_double(s, 12);
		r.parked_seconds = sqlite3_column_double(s, 13);
		cb(ctx, &r);
	}
	return read_end(st, s, rc, eb);
}
