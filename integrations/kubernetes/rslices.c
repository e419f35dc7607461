/*
 * rslices.c - the ResourceSlice publisher (rslices.h): one thread that
 * keeps this node's ResourceSlices equal to what gpusliced reports.
 *
 * Each round (every 250 ms, or interval_ms when shorter, or at once when
 * kicked; /v1/gpus itself is re-read every interval_ms):
 *
 *   poll gpusliced  GET /v1/gpus, GET /v1/events?after=<cursor>
 *        |          (Xid events -> per-GPU health; a GPU's own "health"
 *        |           object wins when the daemon reports one)
 *        v
 *   build           gs_kdev_build_slices() at the current generation
 *        |
 *        v
 *   relist?         after start, a kick, any failed write, or every
 *        |          resync_ms: probe the server (kprobe.h: version and the
 *        |          DRA fields it keeps -> the layout to build) and LIST
 *        |          this node's and driver's slices
 *        v
 *   diff + write    desired vs. the server's view, by meaning (slicecmp.h:
 *                   server-set timeAdded, canonical quantities and
 *                   defaults are no difference): POST missing, PUT
 *                   changed (with the server's resourceVersion), DELETE
 *                   stale. When anything must change and the server holds
 *                   slices of the pool at the current generation or newer,
 *                   the generation is bumped first, so new content always
 *                   carries a newer generation than anything seen.
 *
 * Write budget: a token bucket per pool (write_budget writes a minute,
 * refilled continuously). A round that would write with no token left
 * writes nothing, counts `deferred`, logs once and retries next round: a
 * server that keeps changing what we write costs a bounded stream of
 * writes, never a storm.
 *
 * Why nothing is lost or duplicated while the API server is away: names
 * are deterministic (<node>-<driver>-<k>), so a retried POST is at worst a
 * 409 (then the slice is re-listed and PUT); a failed round forgets the
 * server's view and re-lists before the next write; writes are retried
 * every round (backoff from interval_ms doubling to 5 s) until the server
 * holds exactly the desired set.
 *
 * When gpusliced cannot be reached the server's slices are left as they
 * are (the devices have not changed as far as anyone knows).
 *
 * A second thread watches this node's and driver's slices (list, then
 * watch from the list's resourceVersion with bookmarks; re-list on 410 or
 * any failure, with backoff). An event that is not the echo of one of our
 * own writes (someone deleted or changed a slice: the kubelet wipes a
 * node's slices when a plugin re-registers) kicks the publisher, so the
 * slices are restored at once rather than at the next resync.
 *
 * Threads: the publisher thread owns the fields marked "publisher thread
 * only"; `lock` guards kick/stop/stats/own_rv, shared with the watch
 * thread and callers of gs_krs_kick.
 */
#include "rslices.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "devmodel.h"
#include "gs/client.h"
#include "gs/log.h"
#include "kprobe.h"
#include "slicecmp.h"

#define GS_KRS_RESYNC_MS         30000
#define GS_KRS_HEALTH_MS         250
#define GS_KRS_MAX_BACKOFF_MS    5000
#define GS_KRS_DAEMON_MAX        (8u * 1024 * 1024)
#define GS_KRS_DAEMON_TIMEOUT_MS 5000
#define GS_KRS_DEFAULT_SOCKET    "/run/gpuslice/api.sock"
#define RS_PATH                  "/apis/resource.k8s.io/v1/resourceslices"
#define GS_KRS_OWN_RVS           64

struct gs_krs {
	struct gs_kube *kube; /* borrowed */
	char *node, *driver, *socket;
	int interval_ms, resync_ms, budget_cfg;
	char *metrics_file;
	pthread_t thread, wthread;
	bool wthread_started;
	volatile bool wstop; /* tells the watch to end */

	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop, kicked;
	struct gs_krs_stats stats;
	char own_rv[GS_KRS_OWN_RVS][32]; /* resourceVersions our writes made */
	int own_next;

	/* publisher thread only */
	json_t *gpus;      /* last /v1/gpus answer, or NULL */
	json_t *health;    /* uuid -> {"healthy", "reason"} from Xid events */
	int64_t ev_cursor; /* last event id read; -1: not started */
	long long daemon_start; /* gpusliced's start, Unix seconds */
	json_t *server; /* name -> slice object as the server has it; NULL:
	                   unknown (re-list) */
	int64_t generation;
	int64_t last_list_ms;
	int64_t gpus_ms;  /* when /v1/gpus was last read */
	json_t *owner;    /* ownerReferences naming the Node, or NULL */
	bool owner_tried; /* asked the API server for the Node once */
	struct gs_kdev_layout layout; /* what the server accepts */
	bool probed;                  /* layout learned at least once */
	double tokens;                /* write budget left */
	int64_t tokens_ms;            /* when tokens were last refilled */
	bool budget_logged;
	char metrics_said[512]; /* the figures last written to the file */
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- gpusliced ---- */

/*
 * GET `path` from gpusliced through the client library, on a connection
 * that waits GS_KRS_DAEMON_TIMEOUT_MS for an answer of at most
 * GS_KRS_DAEMON_MAX bytes. OUT: *out (the caller decrefs).
 */
static gs_err daemon_get(struct gs_krs *r, const char *path, json_t **out,
                         struct gs_errbuf *eb)
{
	struct gs_client_conn c;
	struct gs_errbuf ce = {0};
	char *resp = NULL;
	size_t len = 0;
	int st = 0;
	gs_err err;

	*out = NULL;
	err = gs_client_connect(&c, r->socket, &ce);
	if (err == GS_OK) {
		c.timeout_ms = GS_KRS_DAEMON_TIMEOUT_MS;
		c.max_response = GS_KRS_DAEMON_MAX;
		err = gs_client_roundtrip(&c, "GET", path, NULL, 0, &st, &resp,
		                          &len, &ce);
	}
	gs_client_close(&c);
	if (err != GS_OK) {
		free(resp);
		return gs_fail(eb, GS_ERR_UNAVAILABLE,
		               "gpusliced at %s: GET %s: %s", r->socket, path,
		               gs_errbuf_msg(&ce, err));
	}
	if (st != 200) {
		err = gs_fail(eb, GS_ERR_IO,
		              "gpusliced at %s: GET %s: HTTP %d: %.120s",
		              r->socket, path, st, resp);
		free(resp);
		return err;
	}
	*out = json_loadb(resp, len, 0, NULL);
	free(resp);
	if (*out == NULL)
		return gs_fail(eb, GS_ERR_PARSE,
		               "gpusliced: GET %s: answer is not JSON", path);
	return GS_OK;
}

/*
 * Xids that say the application failed, not the GPU (the same set NVIDIA's
 * device plugin skips by default): 13 graphics engine exception, 31 MMU
 * fault, 43 channel stopped, 45 preemptive cleanup, 68 video decoder
 * exception, 109 context switch timeout. Every other Xid marks the GPU
 * unhealthy until gpusliced restarts.
 */
static bool xid_is_app_error(unsigned long long xid)
{
	return xid == 13 || xid == 31 || xid == 43 || xid == 45 || xid == 68 ||
	       xid == 109;
}

static const char *gpu_uuid_by_index(const json_t *gpus, int idx)
{
	json_t *arr = json_object_get(gpus, "gpus"), *g;
	size_t i;

	json_array_foreach(arr, i, g)
	{
		if (json_integer_value(json_object_get(g, "index")) == idx)
			return json_string_value(json_object_get(g, "uuid"));
	}
	return NULL;
}

/* Reads new gpusliced events; true when the health map changed. */
static gs_err poll_events(struct gs_krs *r, bool *changed, struct gs_errbuf *eb)
{
	char path[128];
	json_t *ans, *ev;
	size_t i;
	gs_err err;

	*changed = false;
	/* Health counts from the daemon's start: a GPU that failed since
	 * then is still unhealthy; a restarted daemon starts clean (its
	 * start time moves), which is how an operator clears a taint. */
	json_t *h;
	err = daemon_get(r, "/healthz", &h, eb);
	if (err)
		return err;
	/* uptime_seconds is a real number. */
	long long start =
	    (long long)time(NULL) -
	    (long long)json_number_value(json_object_get(h, "uptime_seconds"));
	json_decref(h);
	if (r->ev_cursor >= 0 && llabs(start - r->daemon_start) > 2) {
		gs_info("rslices",
		        "node=%s gpusliced restarted: GPU health starts clean",
		        r->node);
		json_object_clear(r->health);
		r->ev_cursor = -1;
		*changed = true;
	}
	r->daemon_start = start;
	if (r->ev_cursor < 0) {
		snprintf(path, sizeof(path),
		         "/v1/events?since=%lld&limit=10000", start - 1);
	} else {
		snprintf(path, sizeof(path),
		         "/v1/events?after=%" PRId64 "&limit=10000",
		         r->ev_cursor);
	}
	err = daemon_get(r, path, &ans, eb);
	if (err)
		return err;
	json_array_foreach(json_object_get(ans, "events"), i, ev)
	{
		const char *type =
		    json_string_value(json_object_get(ev, "type"));
		const char *msg =
		    json_string_value(json_object_get(ev, "message"));
		int gpu = -1;
		unsigned long long xid = 0;
		char reason[32];
		const char *uuid;

		if (!type || strcmp(type, "gpu.xid") != 0 || !msg ||
		    sscanf(msg, "gpu %d xid %llu", &gpu, &xid) != 2)
			continue;
		if (xid_is_app_error(xid))
			continue;
		uuid = r->gpus ? gpu_uuid_by_index(r->gpus, gpu) : NULL;
		if (uuid == NULL)
			continue;
		snprintf(reason, sizeof(reason), "xid-%llu", xid);
		json_object_set_new(
		    r->health, uuid,
		    json_pack("{s:b,s:s}", "healthy", 0, "reason", reason));
		gs_warn("rslices", "gpu=%d uuid=%s Xid %llu: unhealthy", gpu,
		        uuid, xid);
		*changed = true;
	}
	json_t *last = json_object_get(ans, "last_id");
	if (json_is_integer(last))
		r->ev_cursor = json_integer_value(last);
	else if (r->ev_cursor < 0)
		r->ev_cursor = 0;
	json_decref(ans);
	return GS_OK;
}

/* The health object for the builder: Xid health, overridden by a GPU's
 * own "health" {"healthy","reason"} when gpusliced reports one. */
static json_t *merged_health(struct gs_krs *r)
{
	json_t *h = json_deep_copy(r->health), *g;
	size_t i;

	json_array_foreach(json_object_get(r->gpus, "gpus"), i, g)
	{
		json_t *own = json_object_get(g, "health");
		const char *uuid =
		    json_string_value(json_object_get(g, "uuid"));
		if (uuid && json_is_object(own) &&
		    json_is_boolean(json_object_get(own, "healthy")))
			json_object_set(h, uuid, own);
	}
	return h;
}

/* ---- API server ---- */

/*
 * Learns the server's layout. A server that answers but refuses both
 * probes gets the most conservative layout (partitions, no counters, no
 * taints): fields it may not know are never written.
 */
static gs_err probe(struct gs_krs *r, struct gs_errbuf *eb)
{
	struct gs_kprobe_result pr;
	struct gs_errbuf pe = {0};
	char before[64], after[64];
	gs_err err;

	gs_kdev_layout_name(&r->layout, before, sizeof(before));
	err = gs_kprobe_run(r->kube, r->node, r->driver, r->layout.partitions,
	                    &pr, &pe);
	if (err == GS_ERR_UNAVAILABLE || err == GS_ERR_TIMEOUT)
		return gs_fail(eb, err, "%s", gs_errbuf_msg(&pe, err));
	if (err) {
		int k = r->layout.partitions;
		gs_warn("rslices",
		        "node=%s cannot tell which DRA fields the API server keeps (%s): publishing partitions without counters or taints",
		        r->node, gs_errbuf_msg(&pe, err));
		memset(&pr.layout, 0, sizeof(pr.layout));
		pr.layout.partitions = k;
	}
	gs_kdev_layout_name(&pr.layout, after, sizeof(after));
	if (!r->probed || strcmp(before, after) != 0)
		gs_info("rslices",
		        "node=%s API server %s (1.%d): consumable capacity %s, partitionable devices %s (%s), device taints %s: layout %s",
		        r->node, pr.git_version[0] ? pr.git_version : "?",
		        pr.minor, pr.layout.consumable ? "on" : "off",
		        pr.layout.partitionable ? "on" : "off",
		        pr.layout.counters_inline ? "counters in the devices' slice"
		                                  : "counters in slices of their own",
		        pr.layout.taints ? "on" : "off", after);
	r->layout = pr.layout;
	r->probed = true;
	pthread_mutex_lock(&r->lock);
	if (err == GS_OK)
		r->stats.probes++;
	r->stats.server_minor = pr.minor;
	snprintf(r->stats.layout, sizeof(r->stats.layout), "%s", after);
	pthread_mutex_unlock(&r->lock);
	return GS_OK;
}

static gs_err relist(struct gs_krs *r, struct gs_errbuf *eb)
{
	char path[768];
	json_t *ans = NULL, *it;
	long st;
	size_t i;
	gs_err err;

	err = probe(r, eb);
	if (err)
		return err;

	snprintf(path, sizeof(path),
	         RS_PATH
	         "?fieldSelector=spec.nodeName%%3D%s%%2Cspec.driver%%3D%s",
	         r->node, r->driver);
	err = gs_kube_request(r->kube, "GET", path, NULL, NULL, &st, &ans, eb);
	if (err)
		return err;
	if (st != 200) {
		json_decref(ans);
		return gs_kube_status_err(st);
	}
	json_decref(r->server);
	r->server = json_object();
	json_array_foreach(json_object_get(ans, "items"), i, it)
	{
		json_t *spec = json_object_get(it, "spec");
		const char *name = json_string_value(
		    json_object_get(json_object_get(it, "metadata"), "name"));
		const char *node =
		    json_string_value(json_object_get(spec, "nodeName"));
		const char *drv =
		    json_string_value(json_object_get(spec, "driver"));
		/* The selector should have done this; a stand-in or an old
		 * server may not filter. */
		if (!name || !node || !drv || strcmp(node, r->node) ||
		    strcmp(drv, r->driver))
			continue;
		json_object_set(r->server, name, it);
	}
	json_decref(ans);
	r->last_list_ms = now_ms();
	return GS_OK;
}

static int64_t slice_generation(const json_t *s)
{
	return json_integer_value(json_object_get(
	    json_object_get(json_object_get(s, "spec"), "pool"), "generation"));
}

static const char *slice_name(const json_t *s)
{
	return json_string_value(
	    json_object_get(json_object_get(s, "metadata"), "name"));
}

/* Whether the stored slice `have` says what `want` says (slicecmp.h). */
static bool slice_same(struct gs_krs *r, const json_t *want,
                       const json_t *have)
{
	char where[256];

	if (have == NULL)
		return false;
	if (gs_kslice_same(json_object_get(want, "spec"),
	                   json_object_get(have, "spec"), where,
	                   sizeof(where)))
		return true;
	gs_debug("rslices", "node=%s slice=%s differs at spec.%s", r->node,
	         slice_name(want), where);
	return false;
}

/* Whether the server's view means `want` (same names, same specs). */
static bool server_matches(struct gs_krs *r, json_t *want)
{
	json_t *s;
	size_t i;

	if (json_object_size(r->server) != json_array_size(want))
		return false;
	json_array_foreach(want, i, s)
	{
		if (!slice_same(r, s, json_object_get(r->server, slice_name(s))))
			return false;
	}
	return true;
}

/* The pool's write budget a minute. */
static double budget_of(struct gs_krs *r, size_t nslices)
{
	double b = r->budget_cfg > 0 ? r->budget_cfg : 30.0;
	if (r->budget_cfg <= 0 && 3.0 * (double)nslices > b)
		b = 3.0 * (double)nslices;
	return b;
}

/*
 * Takes `n` write tokens, or none: false when fewer are left (the round
 * then writes nothing). Refills at budget/min, up to budget.
 */
static bool budget_take(struct gs_krs *r, size_t n, size_t nslices)
{
	double cap = budget_of(r, nslices);
	int64_t now = now_ms();

	if (r->tokens_ms == 0)
		r->tokens = cap;
	else
		r->tokens += (double)(now - r->tokens_ms) * cap / 60000.0;
	if (r->tokens > cap)
		r->tokens = cap;
	r->tokens_ms = now;
	if ((double)n > r->tokens) {
		pthread_mutex_lock(&r->lock);
		r->stats.deferred++;
		pthread_mutex_unlock(&r->lock);
		if (!r->budget_logged)
			gs_warn("rslices",
			        "node=%s write budget spent (%.0f writes a minute): %zu writes wait",
			        r->node, cap, n);
		r->budget_logged = true;
		return false;
	}
	r->budget_logged = false;
	r->tokens -= (double)n;
	return true;
}

/* One write; updates the server view from the answer. */
static gs_err write_slice(struct gs_krs *r, const char *method, json_t *s,
                          const char *name, struct gs_errbuf *eb)
{
	char path[512];
	json_t *ans = NULL;
	long st;
	gs_err err;

	if (strcmp(method, "POST") == 0)
		snprintf(path, sizeof(path), RS_PATH);
	else
		snprintf(path, sizeof(path), RS_PATH "/%s", name);
	err = gs_kube_request(r->kube, method, path, s, NULL, &st, &ans, eb);
	if (err)
		return err;
	if (strcmp(method, "DELETE") == 0 && (st == 404 || st < 300)) {
		json_object_del(r->server, name);
	} else if (st >= 200 && st < 300 && json_is_object(ans)) {
		json_object_set(r->server, name, ans);
	} else {
		json_decref(ans);
		return st < 300 ? gs_fail(eb, GS_ERR_PARSE,
		                          "API server: %s %s: answer is not an object",
		                          method, path)
		                : gs_kube_status_err(st);
	}
	pthread_mutex_lock(&r->lock);
	r->stats.writes++;
	{
		const char *rv = json_string_value(json_object_get(
		    json_object_get(ans, "metadata"), "resourceVersion"));
		if (rv) {
			snprintf(r->own_rv[r->own_next], sizeof(r->own_rv[0]),
			         "%s", rv);
			r->own_next = (r->own_next + 1) % GS_KRS_OWN_RVS;
		}
	}
	pthread_mutex_unlock(&r->lock);
	json_decref(ans);
	gs_debug("rslices", "%s slice=%s", method, name);
	return GS_OK;
}

/*
 * The Node object as the slices' owner, so they go with the node when it
 * is deleted. Best effort, asked once: without read access to nodes (or on
 * a stand-in without them) slices are written without an owner.
 */
static void find_owner(struct gs_krs *r)
{
	char path[320];
	json_t *node = NULL;
	long st = 0;
	struct gs_errbuf eb = {0};

	r->owner_tried = true;
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", r->node);
	if (gs_kube_request(r->kube, "GET", path, NULL, NULL, &st, &node,
	                    &eb) != GS_OK ||
	    st != 200) {
		gs_info("rslices", "node=%s slices get no owner reference: %s",
		        r->node, eb.set ? eb.msg : "no Node object");
		json_decref(node);
		return;
	}
	const char *uid = json_string_value(
	    json_object_get(json_object_get(node, "metadata"), "uid"));
	if (uid)
		r->owner = json_pack("[{s:s,s:s,s:s,s:s,s:b}]", "apiVersion",
		                     "v1", "kind", "Node", "name", r->node,
		                     "uid", uid, "controller", 1);
	json_decref(node);
}

static void set_owner(struct gs_krs *r, json_t *want)
{
	json_t *s;
	size_t i;

	if (r->owner == NULL)
		return;
	json_array_foreach(want, i, s) json_object_set(
	    json_object_get(s, "metadata"), "ownerReferences", r->owner);
}

static gs_err publish(struct gs_krs *r, struct gs_errbuf *eb)
{
	json_t *health, *want = NULL, *s;
	const char *key;
	json_t *val, *tmp;
	size_t i;
	gs_err err;

	if (r->server == NULL || now_ms() - r->last_list_ms >= r->resync_ms) {
		err = relist(r, eb);
		if (err)
			return err;
		/* Continue from the newest generation the server holds. */
		json_object_foreach(r->server, key, val)
		{
			if (slice_generation(val) > r->generation)
				r->generation = slice_generation(val);
		}
		if (r->generation < 1)
			r->generation = 1;
		if (!r->owner_tried)
			find_owner(r);
	}
	health = merged_health(r);
	err = gs_kdev_build_slices_for(r->gpus, health, r->node, r->driver,
	                               r->generation, &r->layout, &want, eb);
	if (err == GS_OK && !server_matches(r, want)) {
		bool at_gen = false;
		json_object_foreach(r->server, key, val)
		{
			if (slice_generation(val) >= r->generation)
				at_gen = true;
		}
		if (at_gen) {
			json_decref(want);
			want = NULL;
			r->generation++;
			err = gs_kdev_build_slices_for(
			    r->gpus, health, r->node, r->driver, r->generation,
			    &r->layout, &want, eb);
		}
	}
	json_decref(health);
	if (err)
		return err;
	set_owner(r, want);
	{
		/* Count the writes this round needs against the budget. */
		size_t n = 0;
		json_array_foreach(want, i, s)
		{
			if (!slice_same(r, s,
			                json_object_get(r->server, slice_name(s))))
				n++;
		}
		json_object_foreach(r->server, key, val)
		{
			bool wanted = false;
			json_array_foreach(want, i, s)
			{
				if (strcmp(slice_name(s), key) == 0)
					wanted = true;
			}
			n += !wanted;
		}
		if (n > 0 && !budget_take(r, n, json_array_size(want)))
			goto out;
	}
	json_array_foreach(want, i, s)
	{
		const char *name = slice_name(s);
		json_t *have = json_object_get(r->server, name);

		if (slice_same(r, s, have))
			continue;
		if (have) {
			json_t *rv =
			    json_object_get(json_object_get(have, "metadata"),
			                    "resourceVersion");
			if (rv)
				json_object_set(json_object_get(s, "metadata"),
				                "resourceVersion", rv);
		}
		err = write_slice(r, have ? "PUT" : "POST", s, name, eb);
		if (err)
			goto out;
	}
	json_object_foreach_safe(r->server, tmp, key, val)
	{
		bool wanted = false;
		json_array_foreach(want, i, s)
		{
			if (strcmp(slice_name(s), key) == 0)
				wanted = true;
		}
		if (!wanted) {
			char name[320];
			snprintf(name, sizeof(name), "%s", key);
			err = write_slice(r, "DELETE", NULL, name, eb);
			if (err)
				goto out;
		}
	}
	pthread_mutex_lock(&r->lock);
	r->stats.publishes++;
	r->stats.generation = r->generation;
	pthread_mutex_unlock(&r->lock);
out:
	json_decref(want);
	return err;
}

/*
 * Rewrites the metrics file when a figure changed (atomically: the
 * collector never reads half a file). A failure is logged once per
 * message and retried next round.
 */
static void write_metrics(struct gs_krs *r)
{
	struct gs_krs_stats st;
	char said[512], text[2048], fname[256], dir[4096];
	struct gs_errbuf eb = {0};
	const char *slash;

	if (r->metrics_file == NULL)
		return;
	gs_krs_get_stats(r, &st);
	snprintf(said, sizeof(said), "%llu %llu %llu %lld %d %s",
	         (unsigned long long)st.writes, (unsigned long long)st.failures,
	         (unsigned long long)st.deferred, (long long)st.generation,
	         st.server_minor, st.layout);
	if (strcmp(said, r->metrics_said) == 0)
		return;
	snprintf(
	    text, sizeof(text),
	    "# HELP gpuslice_k8s_slice_writes_total ResourceSlice writes (create, update, delete) that succeeded.\n"
	    "# TYPE gpuslice_k8s_slice_writes_total counter\n"
	    "gpuslice_k8s_slice_writes_total{node=\"%s\"} %llu\n"
	    "# HELP gpuslice_k8s_slice_write_deferred_total Publish rounds held back by the write budget.\n"
	    "# TYPE gpuslice_k8s_slice_write_deferred_total counter\n"
	    "gpuslice_k8s_slice_write_deferred_total{node=\"%s\"} %llu\n"
	    "# HELP gpuslice_k8s_publish_failures_total Publish rounds that failed.\n"
	    "# TYPE gpuslice_k8s_publish_failures_total counter\n"
	    "gpuslice_k8s_publish_failures_total{node=\"%s\"} %llu\n"
	    "# HELP gpuslice_k8s_pool_generation The pool generation last written.\n"
	    "# TYPE gpuslice_k8s_pool_generation gauge\n"
	    "gpuslice_k8s_pool_generation{node=\"%s\"} %lld\n"
	    "# HELP gpuslice_k8s_slice_layout_info The device layout published, from what the API server accepts.\n"
	    "# TYPE gpuslice_k8s_slice_layout_info gauge\n"
	    "gpuslice_k8s_slice_layout_info{node=\"%s\",server_minor=\"%d\",layout=\"%s\"} 1\n",
	    r->node, (unsigned long long)st.writes, r->node,
	    (unsigned long long)st.deferred, r->node,
	    (unsigned long long)st.failures, r->node,
	    (long long)st.generation, r->node, st.server_minor, st.layout);
	slash = strrchr(r->metrics_file, '/');
	if (slash == NULL) {
		snprintf(dir, sizeof(dir), ".");
		snprintf(fname, sizeof(fname), "%s", r->metrics_file);
	} else {
		snprintf(dir, sizeof(dir), "%.*s",
		         (int)(slash - r->metrics_file), r->metrics_file);
		snprintf(fname, sizeof(fname), "%s", slash + 1);
	}
	if (gs_kfile_write_atomic(dir[0] ? dir : "/", fname, text,
	                          strlen(text), &eb) != GS_OK) {
		if (r->metrics_said[0] != '!')
			gs_warn("rslices", "node=%s metrics file: %s", r->node,
			        eb.msg);
		snprintf(r->metrics_said, sizeof(r->metrics_said), "!");
		return;
	}
	snprintf(r->metrics_said, sizeof(r->metrics_said), "%s", said);
}

/* ---- the thread ---- */

/*
 * One round. /v1/gpus is read every interval_ms (or when kicked); the
 * events (GPU health) every round, at most GS_KRS_HEALTH_MS apart, so a
 * health change reaches the API server well within a second whatever
 * interval_ms is. Nothing is built or written when nothing changed.
 */
static gs_err round_once(struct gs_krs *r, bool kicked, bool *daemon_down,
                         struct gs_errbuf *eb)
{
	json_t *gpus;
	bool changed, fresh = false;
	gs_err err;

	*daemon_down = false;
	if (r->gpus == NULL || kicked ||
	    now_ms() - r->gpus_ms >= r->interval_ms) {
		err = daemon_get(r, "/v1/gpus", &gpus, eb);
		if (err == GS_OK &&
		    !json_is_array(json_object_get(gpus, "gpus"))) {
			json_decref(gpus);
			err = gs_fail(eb, GS_ERR_PARSE,
			              "gpusliced /v1/gpus: no \"gpus\" array");
		}
		if (err) {
			*daemon_down = true;
			return err;
		}
		fresh = r->gpus == NULL || !json_equal(r->gpus, gpus);
		json_decref(r->gpus);
		r->gpus = gpus;
		r->gpus_ms = now_ms();
	}
	err = poll_events(r, &changed, eb);
	if (err) {
		*daemon_down = true;
		return err;
	}
	if (!fresh && !changed && r->server &&
	    now_ms() - r->last_list_ms < r->resync_ms && !r->budget_logged)
		return GS_OK;
	return publish(r, eb);
}

static void *thread_main(void *arg)
{
	struct gs_krs *r = arg;
	int64_t backoff = 0;
	char last_err[GS_ERRBUF_SIZE] = "";

	for (;;) {
		struct gs_errbuf eb = {0};
		bool kicked, daemon_down;
		gs_err err;

		pthread_mutex_lock(&r->lock);
		kicked = r->kicked;
		r->kicked = false;
		bool stop = r->stop;
		pthread_mutex_unlock(&r->lock);
		if (stop)
			break;
		if (kicked) {
			json_decref(r->server);
			r->server = NULL;
		}
		err = round_once(r, kicked, &daemon_down, &eb);
		if (err) {
			if (!daemon_down) {
				/* The server's state is unknown now. */
				json_decref(r->server);
				r->server = NULL;
			}
			backoff = backoff ? backoff * 2 : r->interval_ms;
			if (backoff > GS_KRS_MAX_BACKOFF_MS)
				backoff = GS_KRS_MAX_BACKOFF_MS;
			if (strcmp(last_err, gs_errbuf_msg(&eb, err)) != 0)
				gs_warn("rslices", "node=%s publish failed: %s",
				        r->node, gs_errbuf_msg(&eb, err));
			snprintf(last_err, sizeof(last_err), "%s",
			         gs_errbuf_msg(&eb, err));
			pthread_mutex_lock(&r->lock);
			r->stats.failures++;
			pthread_mutex_unlock(&r->lock);
		} else {
			if (last_err[0])
				gs_info("rslices", "node=%s publishing again",
				        r->node);
			last_err[0] = '\0';
			backoff = 0;
		}
		write_metrics(r);
		int64_t wait = backoff ? backoff
		               : r->interval_ms < GS_KRS_HEALTH_MS
		                   ? r->interval_ms
		                   : GS_KRS_HEALTH_MS;
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += wait / 1000;
		until.tv_nsec += (wait % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_mutex_lock(&r->lock);
		while (!r->stop && !r->kicked) {
			if (pthread_cond_timedwait(&r->cond, &r->lock, &until))
				break;
		}
		pthread_mutex_unlock(&r->lock);
	}
	return NULL;
}

/* ---- the watch thread ---- */

struct wctx {
	struct gs_krs *r;
	char rv[32];
};

static bool is_own(struct gs_krs *r, const char *rv)
{
	bool own = false;
	pthread_mutex_lock(&r->lock);
	for (int i = 0; i < GS_KRS_OWN_RVS && !own; i++)
		own = strcmp(r->own_rv[i], rv) == 0;
	pthread_mutex_unlock(&r->lock);
	return own;
}

static bool on_watch_event(void *arg, const char *type, json_t *obj)
{
	struct wctx *w = arg;
	const char *rv = json_string_value(json_object_get(
	    json_object_get(obj, "metadata"), "resourceVersion"));

	if (strcmp(type, "ERROR") == 0) {
		w->rv[0] = '\0'; /* 410 Gone or another error: re-list */
		return false;
	}
	if (rv)
		snprintf(w->rv, sizeof(w->rv), "%s", rv);
	if (strcmp(type, "BOOKMARK") == 0)
		return true;
	if (strcmp(type, "DELETED") == 0 || !rv || !is_own(w->r, rv)) {
		/* Debug level: the echo of our own write may arrive before the
		 * write's answer recorded its resourceVersion (then the kick
		 * costs one list and no write). */
		gs_debug("rslices",
		         "node=%s slice=%s %s by someone else: re-publishing",
		         w->r->node,
		         json_string_value(json_object_get(
		             json_object_get(obj, "metadata"), "name")),
		         type);
		gs_krs_kick(w->r);
	}
	return true;
}

static void *watch_main(void *arg)
{
	struct gs_krs *r = arg;
	struct wctx w = {.r = r};
	int64_t backoff = 0;
	char sel[512], path[768];

	snprintf(sel, sizeof(sel),
	         "fieldSelector=spec.nodeName%%3D%s%%2Cspec.driver%%3D%s",
	         r->node, r->driver);
	while (!r->wstop) {
		struct gs_errbuf eb = {0};
		gs_err err = GS_OK;

		if (!w.rv[0]) {
			json_t *ans = NULL;
			long st = 0;
			snprintf(path, sizeof(path), RS_PATH "?%s", sel);
			err = gs_kube_request(r->kube, "GET", path, NULL, NULL,
			                      &st, &ans, &eb);
			if (err == GS_OK && st != 200)
				err = gs_kube_status_err(st);
			const char *rv = json_string_value(
			    json_object_get(json_object_get(ans, "metadata"),
			                    "resourceVersion"));
			if (err == GS_OK && rv)
				snprintf(w.rv, sizeof(w.rv), "%s", rv);
			else if (err == GS_OK)
				err = gs_fail(&eb, GS_ERR_PARSE,
				              "API server: list without a resourceVersion");
			json_decref(ans);
		}
		if (err == GS_OK) {
			snprintf(path, sizeof(path),
			         RS_PATH
			         "?watch=1&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion=%s&%s",
			         w.rv, sel);
			err = gs_kube_watch(r->kube, path, on_watch_event, &w,
			                    &r->wstop, &eb);
		}
		if (err == GS_OK) {
			backoff = 0;
			continue;
		}
		gs_debug("rslices", "node=%s watch: %s", r->node,
		         gs_errbuf_msg(&eb, err));
		w.rv[0] = '\0';
		backoff = backoff ? backoff * 2 : 200;
		if (backoff > GS_KRS_MAX_BACKOFF_MS)
			backoff = GS_KRS_MAX_BACKOFF_MS;
		for (int64_t t = 0; t < backoff && !r->wstop; t += 50)
			usleep(50000);
	}
	return NULL;
}

void gs_krs_destroy(struct gs_krs *r)
{
	if (r == NULL)
		return;
	r->wstop = true;
	if (r->wthread_started)
		pthread_join(r->wthread, NULL);
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
	json_decref(r->gpus);
	json_decref(r->health);
	json_decref(r->server);
	json_decref(r->owner);
	free(r->metrics_file);
	free(r->node);
	free(r->driver);
	free(r->socket);
	free(r);
}

gs_err gs_krs_create(struct gs_kube *kube, const struct gs_krs_config *cfg,
                     struct gs_krs **out, struct gs_errbuf *eb)
{
	struct gs_krs *r;
	const char *sock = cfg->daemon_socket;
	gs_err err = GS_ERR_NOMEM;
	int e;

	*out = NULL;
	if (kube == NULL || cfg->node_name == NULL || !*cfg->node_name)
		return gs_fail(eb, GS_ERR_INVALID,
		               "ResourceSlice publisher: needs an API client and a node name");
	if (cfg->interval_ms < 0)
		return gs_fail(eb, GS_ERR_RANGE,
		               "ResourceSlice publisher: interval %d ms < 0",
		               cfg->interval_ms);
	if (cfg->partitions < 0 || cfg->partitions > 32)
		return gs_fail(eb, GS_ERR_RANGE,
		               "ResourceSlice publisher: %d partitions per GPU is outside 1..32",
		               cfg->partitions);
	if (sock == NULL || !*sock)
		sock = getenv("GPUSLICE_SOCKET");
	if (sock == NULL || !*sock)
		sock = GS_KRS_DEFAULT_SOCKET;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	r->kube = kube;
	r->node = strdup(cfg->node_name);
	r->driver = strdup(cfg->driver_name ? cfg->driver_name : "gpuslice.io");
	r->socket = strdup(sock);
	r->health = json_object();
	r->interval_ms = cfg->interval_ms ? cfg->interval_ms : 1000;
	r->resync_ms = cfg->resync_ms > 0 ? cfg->resync_ms : GS_KRS_RESYNC_MS;
	r->budget_cfg = cfg->write_budget;
	gs_kdev_layout_default(&r->layout);
	r->layout.partitions = cfg->partitions ? cfg->partitions : 4;
	if (cfg->metrics_file && cfg->metrics_file[0])
		r->metrics_file = strdup(cfg->metrics_file);
	r->ev_cursor = -1;
	if (!r->node || !r->driver || !r->socket || !r->health ||
	    (cfg->metrics_file && cfg->metrics_file[0] && !r->metrics_file)) {
		gs_fail(eb, GS_ERR_NOMEM, "out of memory");
		goto out_free;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	e = pthread_create(&r->thread, NULL, thread_main, r);
	if (e) {
		pthread_mutex_destroy(&r->lock);
		pthread_cond_destroy(&r->cond);
		err = gs_fail(
		    eb, GS_ERR_INTERNAL,
		    "ResourceSlice publisher: cannot start a thread: %s",
		    strerror(e));
		goto out_free;
	}
	e = pthread_create(&r->wthread, NULL, watch_main, r);
	if (e) {
		gs_krs_destroy(r);
		return gs_fail(
		    eb, GS_ERR_INTERNAL,
		    "ResourceSlice publisher: cannot start the watch thread: %s",
		    strerror(e));
	}
	r->wthread_started = true;
	*out = r;
	return GS_OK;
out_free:
	json_decref(r->health);
	free(r->metrics_file);
	free(r->node);
	free(r->driver);
	free(r->socket);
	free(r);
	return err;
}

void gs_krs_kick(struct gs_krs *r)
{
	if (r == NULL)
		return;
	pthread_mutex_lock(&r->lock);
	r->kicked = true;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

void gs_krs_get_stats(struct gs_krs *r, struct gs_krs_stats *out)
{
	pthread_mutex_lock(&r->lock);
	*out = r->stats;
	pthread_mutex_unlock(&r->lock);
}
