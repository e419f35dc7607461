/*
 * daemon_fixture.h - the node the daemon's create-path unit tests run on
 * (test_daemon_admission.c, test_daemon_create.c, test_daemon_reconcile.c):
 * a scratch SQLite store
 * in a fresh /tmp directory, two library-less H100s (gs_gpus_fake: every
 * NVML change fails with GS_ERR_UNSUPPORTED), no region, binpack
 * placement, turns by default, and an admin peer to act as. Header-only
 * (static inline functions): each test program includes it once.
 *
 * Ownership: the fixture owns its directory, store and node;
 * daemon_fixture_close frees them and removes the directory.
 */
#ifndef GS_TESTS_DAEMON_FIXTURE_H
#define GS_TESTS_DAEMON_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../daemon/config.h"
#include "../../daemon/gpu.h"
#include "../../daemon/node.h"
#include "../../daemon/store.h"
#include "gs/log.h"

struct daemon_fixture {
	char dir[64];
	struct gs_config cfg;
	struct gs_gpus gpus;
	struct gs_store *store;
	struct gs_node *node;
	struct gs_peer admin;
};

/* A node model over f's config, store and GPUs, its MPS directories under
 * mps_dir (NULL: the default); fails the test if it cannot be made. */
static inline struct gs_node *daemon_fixture_node_in(struct daemon_fixture *f,
                                                     const char *mps_dir)
{
	struct gs_node_opts no = {0};
	struct gs_errbuf eb = {0};
	struct gs_node *node = NULL;

	no.cfg = &f->cfg;
	no.store = f->store;
	no.gpus = &f->gpus;
	no.mps_dir = mps_dir;
	if (gs_node_create(&no, &node, &eb) != GS_OK)
		fail_msg("node: %s", eb.msg);
	return node;
}

static inline struct gs_node *daemon_fixture_node(struct daemon_fixture *f)
{
	return daemon_fixture_node_in(f, NULL);
}

/* Everything but the node: f->dir made, f->cfg (change it before the
 * node is made), the GPUs, the store, the admin peer. */
static inline void daemon_fixture_prepare(struct daemon_fixture *f,
                                          const char *tag)
{
	struct gs_errbuf eb = {0};
	char path[96];

	gs_log_silence();
	snprintf(f->dir, sizeof(f->dir), "/tmp/gs-test-%.16s-XXXXXX", tag);
	assert_non_null(mkdtemp(f->dir));
	snprintf(path, sizeof(path), "%s/state.db", f->dir);
	gs_config_defaults(&f->cfg, true, NULL, NULL);
	f->cfg.max_slices = 64;
	f->cfg.placement = GS_PLACE_BINPACK;
	f->cfg.default_mode = GS_MODE_TIMESLICE;
	assert_int_equal(gs_gpus_fake(&f->gpus, "H100-SXM5-80GB", 2, &eb),
	                 GS_OK);
	assert_int_equal(gs_store_open(path, GS_STORE_SYNC_OFF, &f->store, &eb),
	                 GS_OK);
	f->admin.local = f->admin.admin = f->admin.authed = true;
	snprintf(f->admin.user, sizeof(f->admin.user), "root");
}

/* Sets f up in /tmp/gs-test-<tag>-XXXXXX, its node in f->node. */
static inline void daemon_fixture_open(struct daemon_fixture *f,
                                       const char *tag)
{
	daemon_fixture_prepare(f, tag);
	f->node = daemon_fixture_node(f);
}

static inline void daemon_fixture_close(struct daemon_fixture *f)
{
	static const char *const files[] = {"state.db", "state.db-wal",
	                                    "state.db-shm"};
	char path[96];

	gs_node_destroy(f->node);
	gs_store_close(f->store);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", f->dir, files[i]);
		(void)unlink(path);
	}
	(void)rmdir(f->dir); /* fails, leaving it, if the test left more */
}

#endif
