/*
 * test_daemon_store.c - the daemon's SQLite store: schema migrations
 * (a version 4 ledger gaining SM-seconds among them),
 * round trips of slices, teams and demand classes, group commit under
 * concurrency, and refusing files that are not ours, too new, empty or not
 * databases, and slice rows that do not parse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"
#include "store_fixture.h"
#include "store_roundtrip.h"

static int setup(void **state)
{
	(void)state;
	return store_fixture_setup("store-test");
}

static int teardown(void **state)
{
	(void)state;
	return store_fixture_teardown();
}

struct put_arg {
	struct gs_slice s;
	bool del;
};

static gs_err apply_put(struct gs_store *st, struct gs_store_op *op)
{
	struct put_arg *a = op->arg;

	return a->del ? gs_store_slice_delete(st, a->s.id)
	              : gs_store_slice_put(st, &a->s);
}

static void make_slice(struct gs_slice *s, int64_t id, const char *name)
{
	memset(s, 0, sizeof(*s));
	s->id = id;
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->team, sizeof(s->team), "ml");
	gs_spec_init(&s->spec);
	snprintf(s->spec.name, sizeof(s->spec.name), "%s", name);
	s->spec.memory_bytes = 4ull << 30;
	s->spec.compute_pct = 25;
	s->spec.priority = GS_PRIORITY_HIGH;
	s->mode = GS_MODE_TIMESLICE;
	s->gi_id = s->ci_id = -1;
	s->region_slot = (int)id;
	s->n_pids = 2;
	s->pids[0] = 100;
	s->pids[1] = 200;
}

static void count_slice(void *ctx, const struct gs_slice *s)
{
	struct gs_slice *out = ctx;

	out[0].id++;
	out[1] = *s;
}

static void new_file_is_migrated_to_latest_and_reopens(void **state)
{
	struct gs_store *st;
	struct gs_errbuf eb = {0};
	struct put_arg a;
	struct gs_store_op op = {.apply = apply_put, .arg = &a};
	struct gs_slice got[2];
	int64_t maxid;

	(void)state;
	make_slice(&a.s, 7, "nb-1");
	store_put_slices(&a.s, 1);

	memset(got, 0, sizeof(got));
	st = store_reopen_load(count_slice, got, GS_OK, &eb);
	assert_int_equal(got[0].id, 1);
	assert_string_equal(got[1].name, "nb-1");
	assert_int_equal(got[1].spec.memory_bytes, 4ull << 30);
	assert_int_equal(got[1].spec.compute_pct, 25);
	assert_int_equal(got[1].spec.priority, GS_PRIORITY_HIGH);
	assert_int_equal(got[1].mode, GS_MODE_TIMESLICE);
	assert_int_equal(got[1].n_pids, 2);
	assert_int_equal(got[1].pids[1], 200);
	/* Ids are reserved in blocks: the mark covers 7 and more. */
	assert_int_equal(gs_store_max_slice_id(st, &maxid), GS_OK);
	assert_true(maxid >= 7);

	/* Deleting keeps the id high-water mark. */
	a.del = true;
	gs_store_submit(st, &op);
	assert_int_equal(gs_store_wait(st, &op), GS_OK);
	{
		int64_t after;

		assert_int_equal(gs_store_max_slice_id(st, &after), GS_OK);
		assert_int_equal(after, maxid);
	}
	gs_store_close(st);
}

/* A PENDING MIG slice's plan (gs_slice.mig_plan, schema 6) is saved and
 * read back with its row, so a restart can carry its MIG change on. */
static void pending_row_keeps_its_mig_plan(void **state)
{
	static const char plan[] = "v1 on=1 off=0 prof=19 gi=-1 take=0;c19@0;";
	struct gs_store *st;
	struct gs_errbuf eb = {0};
	struct gs_slice s, got[2];

	(void)state;
	make_slice(&s, 3, "mig-1");
	s.mode = GS_MODE_MIG;
	s.state = GS_SLICE_PENDING;
	snprintf(s.mig_plan, sizeof(s.mig_plan), "%s", plan);
	store_put_slices(&s, 1);

	memset(got, 0, sizeof(got));
	st = store_reopen_load(count_slice, got, GS_OK, &eb);
	assert_int_equal(got[0].id, 1);
	assert_int_equal(got[1].state, GS_SLICE_PENDING);
	assert_string_equal(got[1].mig_plan, plan);
	gs_store_close(st);
}

struct demand_arg {
	struct gs_demand_class put[2];
	int n_put;
	struct gs_demand_shape del;
	bool has_del;
};

static gs_err apply_demand(struct gs_store *st, struct gs_store_op *op)
{
	struct demand_arg *a = op->arg;
	gs_err err = GS_OK;

	for (int i = 0; i < a->n_put && !err; i++)
		err = gs_store_demand_put(st, &a->put[i]);
	if (!err && a->has_del)
		err = gs_store_demand_delete(st, &a->del);
	return err;
}

static void add_class(void *ctx, const struct gs_demand_class *c)
{
	struct demand_arg *got = ctx;

	if (got->n_put < 2)
		got->put[got->n_put] = *c;
	got->n_put++;
}

/* The demand table: a class per shape, replaced in place, deleted by
 * shape, read back as written. */
static void demand_classes_round_trip_by_shape(void **state)
{
	struct gs_store *st;
	struct gs_errbuf eb = {0};
	struct demand_arg a, got;
	struct gs_store_op op = {.apply = apply_demand, .arg = &a};

	(void)state;
	memset(&a, 0, sizeof(a));
	a.put[0].shape.kind = GS_PLACE_FRACTION;
	a.put[0].shape.memory_bytes = 40ull << 30;
	a.put[0].weight = 3.5;
	a.put[0].t_ns = 1000;
	a.put[1].shape.kind = GS_PLACE_MIG;
	snprintf(a.put[1].shape.mig_profile,
	         sizeof(a.put[1].shape.mig_profile), "1g.10gb");
	a.put[1].weight = 1;
	a.put[1].t_ns = 2000;
	a.n_put = 2;
	assert_int_equal(gs_store_open(path, GS_STORE_SYNC_NORMAL, &st, &eb),
	                 GS_OK);
	gs_store_submit(st, &op);
	assert_int_equal(gs_store_wait(st, &op), GS_OK);
	/* the same shape again replaces its row */
	a.put[0].weight = 4.5;
	a.put[0].t_ns = 3000;
	a.n_put = 1;
	gs_store_submit(st, &op);
	assert_int_equal(gs_store_wait(st, &op), GS_OK);
	gs_store_close(st);

	assert_int_equal(gs_store_open(path, GS_STORE_SYNC_NORMAL, &st, &eb),
	                 GS_OK);
	memset(&got, 0, sizeof(got));
	assert_int_equal(gs_store_load_demand(st, add_class, &got, &eb), GS_OK);
	assert_int_equal(got.n_put, 2);
	/* oldest first: the MIG class (2000), then the fraction (3000) */
	assert_int_equal(got.put[0].shape.kind, GS_PLACE_MIG);
	assert_string_equal(got.put[0].shape.mig_profile, "1g.10gb");
	assert_int_equal(got.put[1].shape.kind, GS_PLACE_FRACTION);
	assert_true(got.put[1].shape.memory_bytes == 40ull << 30);
	assert_true(got.put[1].weight == 4.5);
	assert_int_equal(got.put[1].t_ns, 3000);
	/* deleting the MIG shape leaves the fraction */
	a.n_put = 0;
	a.has_del = true;
	a.del = got.put[0].shape;
	gs_store_submit(st, &op);
	assert_int_equal(gs_store_wait(st, &op), GS_OK);
	memset(&got, 0, sizeof(got));
	assert_int_equal(gs_store_load_demand(st, add_class, &got, &eb), GS_OK);
	assert_int_equal(got.n_put, 1);
	assert_int_equal(got.put[0].shape.kind, GS_PLACE_FRACTION);
	gs_store_close(st);
}

/* The schema as version 1 wrote it. */
#define V1_SCHEMA                                                              \
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT "                  \
	"NOT NULL);"                                                           \
	"CREATE TABLE slices(id INTEGER PRIMARY KEY, name TEXT "               \
	"NOT NULL UNIQUE, owner_uid INTEGER NOT NULL, team TEXT "              \
	"NOT NULL, spec TEXT NOT NULL, mode TEXT NOT NULL, "                   \
	"gpu_index INTEGER NOT NULL, gpu_uuid TEXT NOT NULL, "                 \
	"mig_profile TEXT NOT NULL, mig_uuid TEXT NOT NULL, "                  \
	"gi_id INTEGER NOT NULL, ci_id INTEGER NOT NULL, "                     \
	"region_slot INTEGER NOT NULL, region_gen INTEGER NOT "                \
	"NULL, state INTEGER NOT NULL, on_exit INTEGER NOT "                   \
	"NULL, borrowed INTEGER NOT NULL, created_ns INTEGER "                 \
	"NOT NULL, updated_ns INTEGER NOT NULL, reason TEXT NOT "              \
	"NULL);"                                                               \
	"CREATE TABLE teams(name TEXT PRIMARY KEY, parent TEXT "               \
	"NOT NULL, g_memory INTEGER NOT NULL, g_compute INTEGER "              \
	"NOT NULL, g_mig INTEGER NOT NULL, max_memory INTEGER "                \
	"NOT NULL, max_compute INTEGER NOT NULL, max_mig "                     \
	"INTEGER NOT NULL, from_config INTEGER NOT NULL);"                     \
	"CREATE TABLE usage(id INTEGER PRIMARY KEY, slice_id "                 \
	"INTEGER NOT NULL, slice TEXT NOT NULL, team TEXT NOT "                \
	"NULL, gpu_model TEXT NOT NULL, t0_ns INTEGER NOT NULL, "              \
	"t1_ns INTEGER NOT NULL, gpu_seconds REAL NOT NULL, "                  \
	"gib_seconds REAL NOT NULL, throttled_seconds REAL NOT "               \
	"NULL);"                                                               \
	"CREATE INDEX usage_t1 ON usage(t1_ns);"                               \
	"CREATE TABLE events(id INTEGER PRIMARY KEY, ts_ns "                   \
	"INTEGER NOT NULL, type TEXT NOT NULL, slice TEXT NOT "                \
	"NULL, team TEXT NOT NULL, gpu INTEGER NOT NULL, "                     \
	"message TEXT NOT NULL);"

static void version_one_file_is_migrated_keeping_its_rows(void **state)
{
	sqlite3 *db;
	struct gs_store *st;
	struct gs_errbuf eb = {0};
	struct gs_slice got[2];
	int64_t maxid;

	(void)state;
	/* A file as version 1 wrote it. */
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
	    sqlite3_exec(
	        db,
	        V1_SCHEMA
	        "INSERT INTO slices VALUES(42,'old',0,'t','name=old "
	        "memory=1GiB compute=10 priority=low weight=1 mode=mps "
	        "isolation=none','mps',0,'GPU-x','','',-1,-1,3,1,0,0,0,"
	        "1,1,'');"
	        "PRAGMA user_version = 1;",
	        NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(db);

	assert_int_equal(gs_store_open(path, GS_STORE_SYNC_NORMAL, &st, &eb),
	                 GS_OK);
	assert_int_equal(gs_store_schema_version(st), GS_STORE_SCHEMA_VERSION);
	memset(got, 0, sizeof(got));
	assert_int_equal(gs_store_load_slices(st, count_slice, got, &eb),
	                 GS_OK);
	assert_int_equal(got[0].id, 1);
	assert_string_equal(got[1].name, "old");
	assert_int_equal(got[1].mode, GS_MODE_MPS);
	assert_int_equal(got[1].spec.memory_bytes, 1ull << 30);
	assert_int_equal(got[1].n_pids, 0);
	assert_int_equal(gs_store_max_slice_id(st, &maxid), GS_OK);
	assert_int_equal(maxid, 42);
	gs_store_close(st);
}

struct usage_got {
	int n;
	struct gs_usage_row r[8];
};

static void collect_usage(void *ctx, const struct gs_usage_row *r)
{
	struct usage_got *g = ctx;

	if (g->n < 8)
		g->r[g->n] = *r;
	g->n++;
}

static const struct gs_usage_row *usage_of(const struct usage_got *g,
                                           const char *slice)
{
	for (int i = 0; i < g->n && i < 8; i++)
		if (strcmp(g->r[i].slice, slice) == 0)
			return &g->r[i];
	fail_msg("no ledger row for %s", slice);
	return NULL;
}

static gs_err apply_usage(struct gs_store *st, struct gs_store_op *op)
{
	return gs_store_usage_add(st, op->arg);
}

/*
 * A version 4 ledger gains sm_seconds: turns and MIG rows at share 1, MPS
 * rows at the compute share their alloc_seconds hold; a row that does not
 * say stays unknown. New rows keep what they are given.
 */
static void version_four_ledger_is_migrated_with_sm_seconds(void **state)
{
	sqlite3 *db;
	struct gs_store *st;
	struct gs_errbuf eb = {0};
	struct usage_got got;
	struct gs_usage_row nr;
	struct gs_store_op op = {.apply = apply_usage, .arg = &nr};
	const struct gs_usage_row *r;

	(void)state;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
	    sqlite3_exec(
	        db,
	        V1_SCHEMA
	        /* 1 -> 2, 2 -> 3, 3 -> 4 as the store ran them */
	        "ALTER TABLE slices ADD COLUMN had_procs INTEGER NOT NULL "
	        "DEFAULT 0;"
	        "ALTER TABLE slices ADD COLUMN pids TEXT NOT NULL DEFAULT '';"
	        "ALTER TABLE usage ADD COLUMN alloc_seconds REAL NOT NULL "
	        "DEFAULT 0;"
	        "ALTER TABLE usage ADD COLUMN owner_uid INTEGER NOT NULL "
	        "DEFAULT -1;"
	        "ALTER TABLE usage ADD COLUMN mode TEXT NOT NULL DEFAULT "
	        "'timeslice';"
	        "ALTER TABLE events ADD COLUMN owner_uid INTEGER NOT NULL "
	        "DEFAULT -1;"
	        "CREATE INDEX events_slice ON events(slice, id);"
	        "INSERT INTO meta(key, value) VALUES('max_slice_id', '0');"
	        "ALTER TABLE slices ADD COLUMN labels TEXT NOT NULL DEFAULT "
	        "'{}';"
	        "CREATE TABLE demand(kind TEXT NOT NULL, memory_bytes "
	        "INTEGER NOT NULL, compute_pct INTEGER NOT NULL, "
	        "mig_profile TEXT NOT NULL, weight REAL NOT NULL, t_ns "
	        "INTEGER NOT NULL, PRIMARY KEY(kind, memory_bytes, "
	        "compute_pct, mig_profile));"
	        /* 10 s rows: turns, MPS at 30 %, MPS without a share,
	         * MIG, and an MPS row that cannot tell its share */
	        "INSERT INTO usage(slice_id, slice, team, gpu_model, t0_ns,"
	        " t1_ns, gpu_seconds, gib_seconds, throttled_seconds,"
	        " alloc_seconds, owner_uid, mode) VALUES"
	        "(1,'turns','t','m',0,10000000000,4.0,0,0,2.5,0,'timeslice'),"
	        "(2,'mps30','t','m',0,10000000000,4.0,0,0,3.0,0,'mps'),"
	        "(3,'mps','t','m',0,10000000000,4.0,0,0,10.0,0,'mig+mps'),"
	        "(4,'mig','t','m',0,10000000000,4.0,0,0,4.2,0,'mig'),"
	        "(5,'lost','t','m',5,5,4.0,0,0,0,0,'mps');"
	        "PRAGMA user_version = 4;",
	        NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(db);

	assert_int_equal(gs_store_open(path, GS_STORE_SYNC_NORMAL, &st, &eb),
	                 GS_OK);
	assert_int_equal(gs_store_schema_version(st), GS_STORE_SCHEMA_VERSION);
	memset(&nr, 0, sizeof(nr));
	nr.slice_id = 6;
	snprintf(nr.slice, sizeof(nr.slice), "new");
	snprintf(nr.mode, sizeof(nr.mode), "mps");
	nr.t0_ns = 0;
	nr.t1_ns = 10000000000;
	nr.gpu_seconds = 2.0;
	nr.sm_seconds = 0.5;
	gs_store_submit(st, &op);
	assert_int_equal(gs_store_wait(st, &op), GS_OK);

	memset(&got, 0, sizeof(got));
	assert_int_equal(gs_store_usage(st, 0, 20000000000, NULL, NULL, -1,
	                                collect_usage, &got, &eb),
	                 GS_OK);
	assert_int_equal(got.n, 6);
	r = usage_of(&got, "turns");
	assert_float_equal(r->sm_seconds, 4.0, 1e-9);
	r = usage_of(&got, "mps30");
	assert_float_equal(r->sm_seconds, 4.0 * 0.3, 1e-9);
	assert_float_equal(r->gpu_seconds, 4.0, 1e-9);
	r = usage_of(&got, "mps");
	assert_float_equal(r->sm_seconds, 4.0, 1e-9);
	r = usage_of(&got, "mig");
	assert_float_equal(r->sm_seconds, 4.0, 1e-9);
	r = usage_of(&got, "lost");
	assert_true(r->sm_seconds < 0);
	r = usage_of(&got, "new");
	assert_float_equal(r->sm_seconds, 0.5, 1e-9);
	gs_store_close(st);
}

static void newer_schema_is_refused_with_version_error(void **state)
{
	sqlite3 *db;
	struct gs_store *st = NULL;
	struct gs_errbuf eb = {0};

	(void)state;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
	    sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(gs_store_open(path, GS_STORE_SYNC_NORMAL, &st, &eb),
	                 GS_ERR_VERSION);
	assert_null(st);
	assert_non_null(strstr(eb.msg, "99"));
}

static void foreign_database_is_refused_as_corrupt(void **state)
{
	sqlite3 *db;
	struct gs_store *st = NULL;
	struct gs_errbuf eb = {0};

	(void)state;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
	    sqlite3_exec(db, "CREATE TABLE x(y)", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(gs_store_open(path, GS_STORE_SYNC_NORMAL, &st, &eb),
	                 GS_ERR_CORRUPT);
}

static void empty_file_is_refused_not_started_empty(void **state)
{
	struct gs_store *st = NULL;
	struct gs_errbuf eb = {0};
	FILE *f;

	(void)state;
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(gs_store_open(path, GS_STORE_SYNC_NORMAL, &st, &eb),
	                 GS_ERR_CORRUPT);
	assert_null(st);
	assert_non_null(strstr(eb.msg, "empty (0 bytes)"));
	assert_non_null(strstr(eb.msg, path));
}

static void file_that_is_not_a_database_is_refused_naming_it(void **state)
{
	struct gs_store *st = NULL;
	struct gs_errbuf eb = {0};
	FILE *f;

	(void)state;
	f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < 512; i++)
		fputs("this is no database, only text pretending. ", f);
	fclose(f);
	assert_int_equal(gs_store_open(path, GS_STORE_SYNC_NORMAL, &st, &eb),
	                 GS_ERR_CORRUPT);
	assert_null(st);
	assert_non_null(strstr(eb.msg, path));
}

static void unreadable_slice_row_stops_the_load_naming_it(void **state)
{
	struct gs_store *st;
	struct gs_errbuf eb = {0};
	struct gs_slice put[2], got[2];
	sqlite3 *db;

	(void)state;
	make_slice(&put[0], 1, "good");
	make_slice(&put[1], 2, "bad");
	store_put_slices(put, 2);

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
	    sqlite3_exec(db,
	                 "UPDATE slices SET spec = 'no pairs here' "
	                 "WHERE name = 'bad'",
	                 NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(db);

	memset(got, 0, sizeof(got));
	st = store_reopen_load(count_slice, got, GS_ERR_CORRUPT, &eb);
	assert_non_null(strstr(eb.msg, "id=2 name='bad'"));
	/* The store still reads afterwards (its read lock was released). */
	memset(&eb, 0, sizeof(eb));
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db,
	                              "DELETE FROM slices WHERE name = 'bad'",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	sqlite3_close(db);
	memset(got, 0, sizeof(got));
	assert_int_equal(gs_store_load_slices(st, count_slice, got, &eb),
	                 GS_OK);
	assert_int_equal(got[0].id, 1);
	assert_string_equal(got[1].name, "good");
	gs_store_close(st);
}

#define THREADS    6
#define PER_THREAD 300

struct worker {
	struct gs_store *st;
	int t;
	int failures;
};

static void *worker_main(void *p)
{
	struct worker *w = p;

	for (int i = 0; i < PER_THREAD; i++) {
		struct put_arg a;
		struct gs_store_op op = {.apply = apply_put, .arg = &a};
		char name[32];

		snprintf(name, sizeof(name), "w%d-%d", w->t, i);
		make_slice(&a.s, (int64_t)w->t * 100000 + i + 1, name);
		a.del = false;
		gs_store_submit(w->st, &op);
		if (gs_store_wait(w->st, &op) != GS_OK)
			w->failures++;
	}
	return NULL;
}

static void concurrent_writers_share_commits(void **state)
{
	struct gs_store *st;
	struct gs_errbuf eb = {0};
	struct worker w[THREADS];
	pthread_t th[THREADS];
	struct gs_slice got[2];
	uint64_t batches, ops;

	(void)state;
	assert_int_equal(gs_store_open(path, GS_STORE_SYNC_FULL, &st, &eb),
	                 GS_OK);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){.st = st, .t = i};
		assert_int_equal(
		    pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].failures, 0);
	}
	gs_store_stats(st, &batches, &ops);
	assert_int_equal(ops, THREADS * PER_THREAD);
	assert_true(batches <= ops);
	memset(got, 0, sizeof(got));
	assert_int_equal(gs_store_load_slices(st, count_slice, got, &eb),
	                 GS_OK);
	assert_int_equal(got[0].id, THREADS * PER_THREAD);
	gs_store_close(st);
}

static void committer_thread_commits_for_concurrent_writers(void **state)
{
	struct gs_store *st;
	struct gs_errbuf eb = {0};
	struct worker w[THREADS];
	pthread_t th[THREADS];
	struct gs_slice got[2];
	uint64_t batches, ops;

	(void)state;
	assert_int_equal(gs_store_open(path, GS_STORE_SYNC_NORMAL, &st, &eb),
	                 GS_OK);
	assert_int_equal(gs_store_start_committer(st, &eb), GS_OK);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){.st = st, .t = i};
		assert_int_equal(
		    pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].failures, 0);
	}
	gs_store_stats(st, &batches, &ops);
	assert_int_equal(ops, THREADS * PER_THREAD);
	memset(got, 0, sizeof(got));
	assert_int_equal(gs_store_load_slices(st, count_slice, got, &eb),
	                 GS_OK);
	assert_int_equal(got[0].id, THREADS * PER_THREAD);
	gs_store_close(st);
}

struct det {
	struct gs_store_op op;
	struct gs_event e;
	int *counter;
};

static gs_err apply_event(struct gs_store *st, struct gs_store_op *op)
{
	struct det *d = op->arg;

	return gs_store_event_add(st, &d->e);
}

static void after_event(struct gs_store_op *op, gs_err result)
{
	struct det *d = op->arg;

	if (result == GS_OK)
		(*d->counter)++;
	free(d);
}

static void collect_event(void *ctx, const struct gs_event *e)
{
	int *n = ctx;

	(void)e;
	(*n)++;
}

static void detached_events_commit_on_flush_and_filter_by_slice(void **state)
{
	struct gs_store *st;
	struct gs_errbuf eb = {0};
	int done = 0, seen = 0;

	(void)state;
	assert_int_equal(gs_store_open(path, GS_STORE_SYNC_NORMAL, &st, &eb),
	                 GS_OK);
	for (int i = 0; i < 10; i++) {
		struct det *d = calloc(1, sizeof(*d));

		assert_non_null(d);
		d->op.apply = apply_event;
		d->op.after = after_event;
		d->op.arg = d;
		d->counter = &done;
		d->e.ts_ns = 1000 + i;
		snprintf(d->e.type, sizeof(d->e.type), "slice.created");
		snprintf(d->e.slice, sizeof(d->e.slice), "%s",
		         i % 2 ? "odd" : "even");
		gs_store_submit_detached(st, &d->op);
	}
	assert_int_equal(gs_store_flush(st), GS_OK);
	assert_int_equal(done, 10);
	assert_int_equal(gs_store_events(st, 0, 0, "odd", -1, 100,
	                                 collect_event, &seen, &eb),
	                 GS_OK);
	assert_int_equal(seen, 5);
	seen = 0;
	assert_int_equal(gs_store_events(st, 0, 1005, NULL, -1, 100,
	                                 collect_event, &seen, &eb),
	                 GS_OK);
	assert_int_equal(seen, 5);
	gs_store_close(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        new_file_is_migrated_to_latest_and_reopens, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        version_one_file_is_migrated_keeping_its_rows, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        version_four_ledger_is_migrated_with_sm_seconds, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        newer_schema_is_refused_with_version_error, setup, teardown),
	    cmocka_unit_test_setup_teardown(pending_row_keeps_its_mig_plan,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(demand_classes_round_trip_by_shape,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        foreign_database_is_refused_as_corrupt, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        empty_file_is_refused_not_started_empty, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        file_that_is_not_a_database_is_refused_naming_it, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        unreadable_slice_row_stops_the_load_naming_it, setup, teardown),
	    cmocka_unit_test_setup_teardown(concurrent_writers_share_commits,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        committer_thread_commits_for_concurrent_writers, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        detached_events_commit_on_flush_and_filter_by_slice, setup,
	        teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
