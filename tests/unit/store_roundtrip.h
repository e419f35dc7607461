/*
 * store_roundtrip.h - a slice row's trip through the daemon's store for
 * its unit tests: store_put_slices writes slices into the store at the
 * fixture's path (store_fixture.h) and closes it, as a daemon that then
 * stops; store_reopen_load opens it again and loads the slices, as the
 * next daemon's start (store_keep_slice takes a store of one slice).
 * Both check the file is at the latest schema.
 * Include after store_fixture.h and store.h.
 */
#ifndef GS_TEST_STORE_ROUNDTRIP_H
#define GS_TEST_STORE_ROUNDTRIP_H

static inline gs_err store_roundtrip_put(struct gs_store *st, struct gs_store_op *op)
{
	return gs_store_slice_put(st, op->arg);
}

/* Opens the store at `path`, puts the `n` slices of `s`, one op each
 * (submitted and waited for), and closes it. */
static inline void store_put_slices(const struct gs_slice *s, int n)
{
	struct gs_store *st;
	struct gs_errbuf eb = {0};

	assert_int_equal(gs_store_open(path, GS_STORE_SYNC_NORMAL, &st, &eb),
	                 GS_OK);
	assert_int_equal(gs_store_schema_version(st), GS_STORE_SCHEMA_VERSION);
	for (int i = 0; i < n; i++) {
		struct gs_slice put = s[i];
		struct gs_store_op op = {.apply = store_roundtrip_put,
		                         .arg = &put};

		gs_store_submit(st, &op);
		assert_int_equal(gs_store_wait(st, &op), GS_OK);
	}
	gs_store_close(st);
}

/* A store_reopen_load callback for a store of one slice: copies it to
 * `ctx` (a struct gs_slice). */
static inline void store_keep_slice(void *ctx, const struct gs_slice *s)
{
	*(struct gs_slice *)ctx = *s;
}

/*
 * Opens the store at `path` again and loads its slices, each handed to
 * `fn(ctx, s)`; the load must return `want` (its message in *eb). The
 * store stays open for more checks: the caller closes it.
 */
static inline struct gs_store *
store_reopen_load(gs_store_slice_cb fn, void *ctx,
                  gs_err want, struct gs_errbuf *eb)
{
	struct gs_store *st;

	assert_int_equal(gs_store_open(path, GS_STORE_SYNC_NORMAL, &st, eb),
	                 GS_OK);
	assert_int_equal(gs_store_schema_version(st), GS_STORE_SCHEMA_VERSION);
	assert_int_equal(gs_store_load_slices(st, fn, ctx, eb), want);
	return st;
}

#endif
