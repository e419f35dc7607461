/*
 * live.h - the extender's live node state: a thread polls each node's
 * gpusliced over its TCP listener (bearer token) for GET /v1/gpus (each
 * GPU's memory and compute, less what slices hold) and GET /v1/demand (the
 * slice shapes it was asked for), and builds the same state document
 * extender.h reads from a file. A node whose daemon cannot be read (no
 * answer, an error status, a body that does not parse) is in the
 * document with "unreachable": "why", so the extender filters it out
 * with that reason instead of taking it for an empty node.
 *
 * The nodes file (JSON):
 *   {"poll_interval_ms": 1000, "timeout_ms": 2000,
 *    "nodes": [{"name": "node-a", "url": "http://10.0.0.1:7070",
 *               "token_file": "/etc/gpuslice/node-a.token"}]}
 * "name" is the Kubernetes node name; "url" the daemon's api.tcp address;
 * the token is read once, at start (surrounding white space dropped).
 *
 * The document built from the answers (gs_ext_live_doc):
 *   nodes[]: name, and gpus[] with model, memory_total_bytes,
 *            memory_free_bytes (total less allocated, 0 for an unhealthy
 *            GPU) and compute_free_pct (100 less allocated)
 *   demand[]: every reachable node's classes, equal (gpu_milli, num_gpu)
 *            added up, as {"cpu_milli":0,"gpu_milli":G,"num_gpu":K,
 *            "weight":W}; MIG classes (gpu_milli null) left out
 */
#ifndef GS_K8S_EXTENDER_LIVE_H
#define GS_K8S_EXTENDER_LIVE_H

#include <stddef.h>

#include "gs/err.h"

#define GS_EXT_LIVE_MAX_NODES 1024

struct gs_ext_live_node {
	char name[256];
	char url[256];
	char token[512];
};

struct gs_ext_live_cfg {
	int poll_interval_ms; /* default 1000 */
	int timeout_ms;       /* per request; default 2000 */
	size_t n;
	struct gs_ext_live_node *node; /* owned: gs_ext_live_cfg_fini */
};

/* Reads a nodes file (and each node's token file). On failure eb names
 * the file and entry, and nothing is left to free. */
gs_err gs_ext_live_cfg_load(const char *path, struct gs_ext_live_cfg *out,
                            struct gs_errbuf *eb);
void gs_ext_live_cfg_fini(struct gs_ext_live_cfg *cfg);

/* One node as read: the bodies of its two answers, or why not. */
struct gs_ext_live_read {
	const char *name;
	const char *gpus;   /* GET /v1/gpus body; NULL when unreachable */
	const char *demand; /* GET /v1/demand body; NULL: no demand */
	const char *why;    /* unreachable: the reason */
};

/*
 * Builds the state document from `n` node reads (pure; the test calls
 * it). A gpus body that does not parse makes that node unreachable with
 * the reason. Returns a malloc'd JSON string (the caller frees it), NULL
 * when memory runs out.
 */
char *gs_ext_live_doc(const struct gs_ext_live_read *reads, size_t n);

struct gs_ext_live;

/*
 * Polls every node once (so a document exists when it returns), then
 * keeps polling every poll_interval_ms in a thread of its own. `cfg` is
 * copied. OUT: *out (gs_ext_live_stop ends it).
 */
gs_err gs_ext_live_start(const struct gs_ext_live_cfg *cfg,
                         struct gs_ext_live **out, struct gs_errbuf *eb);
/* A copy of the latest document (malloc'd; the caller frees it) and its
 * length; NULL when memory runs out. */
char *gs_ext_live_state(struct gs_ext_live *l, size_t *len);
/* Stops the thread and frees everything; NULL does nothing. */
void gs_ext_live_stop(struct gs_ext_live *l);

#endif
