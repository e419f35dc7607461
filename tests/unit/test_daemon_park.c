/*
 * test_daemon_park.c - a parked slice (daemon/slice.h PARKED, gs/park.h)
 * stays parked across a daemon restart: the store keeps its state and
 * when it was parked (schema 8, daemon/store.c), and a schema 7 file is
 * migrated keeping its rows (nothing parked in them); a ledger row keeps
 * how long its slice was parked (schema 9).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
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
	return store_fixture_setup("park-test");
}

static int teardown(void **state)
{
	(void)state;
	return store_fixture_teardown();
}

static void put_parked(void)
{
	struct gs_slice s;

	memset(&s, 0, sizeof(s));
	s.id = 4;
	snprintf(s.name, sizeof(s.name), "r");
	snprintf(s.team, sizeof(s.team), "research");
	gs_spec_init(&s.spec);
	snprintf(s.spec.name, sizeof(s.spec.name), "r");
	s.spec.memory_bytes = 1ull << 30;
	s.mode = GS_MODE_TIMESLICE;
	s.gi_id = s.ci_id = -1;
	s.state = GS_SLICE_PARKED;
	s.parked_ns = 1700000000123456789LL;
	snprintf(s.reason, sizeof(s.reason),
	         "team prod reclaimed its guarantee for slice p");
	store_put_slices(&s, 1);
}

static struct gs_slice load_one(void)
{
	struct gs_store *st;
	struct gs_errbuf eb = {0};
	struct gs_slice got;

	memset(&got, 0, sizeof(got));
	st = store_reopen_load(store_keep_slice, &got, GS_OK, &eb);
	gs_store_close(st);
	return got;
}

static void store_keeps_a_parked_slice_parked_across_a_reopen(void **state)
{
	struct gs_slice got;

	(void)state;
	put_parked();
	got = load_one();
	assert_string_equal(got.name, "r");
	assert_int_equal(got.state, GS_SLICE_PARKED);
	assert_string_equal(gs_slice_state_name(got.state), "parked");
	assert_int_equal(got.parked_ns, 1700000000123456789LL);
	assert_string_equal(
	    got.reason,
	    "team prod reclaimed its guarantee for slice p");
}

static void schema_seven_file_is_migrated_keeping_its_rows(void **state)
{
	struct gs_slice got;
	sqlite3 *db;

	(void)state;
	put_parked();
	/* as a build of schema 7 left it: no parked_ns column (nor the
	 * usage rows' parked_seconds of schema 9) */
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
	    sqlite3_exec(db,
	                 "ALTER TABLE slices DROP COLUMN parked_ns;"
	                 "ALTER TABLE usage DROP COLUMN parked_seconds;"
	                 "UPDATE slices SET state = 0, reason = '';"
	                 "PRAGMA user_version = 7;",
	                 NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(db);
	got = load_one();
	assert_string_equal(got.name, "r");
	assert_int_equal(got.state, GS_SLICE_READY);
	assert_int_equal(got.parked_ns, 0);
}

static gs_err apply_usage(struct gs_store *st, struct gs_store_op *op)
{
	return gs_store_usage_add(st, op->arg);
}

static void keep_row(void *ctx, const struct gs_usage_row *r)
{
	*(struct gs_usage_row *)ctx = *r;
}

/* A ledger row of a parked slice keeps how long it was parked (schema
 * 9, parked_seconds) across a reopen. */
static void usage_row_keeps_its_parked_seconds(void **state)
{
	struct gs_store *st;
	struct gs_errbuf eb = {0};
	struct gs_usage_row r, got;
	struct gs_store_op op = {.apply = apply_usage, .arg = &r};

	(void)state;
	memset(&r, 0, sizeof(r));
	r.slice_id = 4;
	snprintf(r.slice, sizeof(r.slice), "r");
	snprintf(r.team, sizeof(r.team), "research");
	snprintf(r.mode, sizeof(r.mode), "timeslice");
	r.t0_ns = 1000000000;
	r.t1_ns = 11000000000;
	r.parked_seconds = 10.0;
	assert_int_equal(gs_store_open(path, GS_STORE_SYNC_NORMAL, &st, &eb),
	                 GS_OK);
	gs_store_submit(st, &op);
	assert_int_equal(gs_store_wait(st, &op), GS_OK);
	gs_store_close(st);
	assert_int_equal(gs_store_open(path, GS_STORE_SYNC_NORMAL, &st, &eb),
	                 GS_OK);
	memset(&got, 0, sizeof(got));
	assert_int_equal(gs_store_usage(st, 0, 20000000000, NULL, NULL, -1,
	                                keep_row, &got, &eb),
	                 GS_OK);
	gs_store_close(st);
	assert_string_equal(got.slice, "r");
	assert_float_equal(got.parked_seconds, 10.0, 1e-9);
	assert_float_equal(got.gib_seconds, 0.0, 1e-9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        store_keeps_a_parked_slice_parked_across_a_reopen, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        schema_seven_file_is_migrated_keeping_its_rows, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(usage_row_keeps_its_parked_seconds,
	                                    setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
