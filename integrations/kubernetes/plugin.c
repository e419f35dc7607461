/*
 * plugin.c - gpuslice-kubelet-plugin's kubelet-facing side (plugin.h):
 * registration, the DRA node service (v1, v1beta1), the health stream
 * (v1, v1alpha1), the worker pool that runs driver calls, and the sockets'
 * life cycle.
 *
 * Threads: the gRPC loop (grpc.c) runs every handler and everything that
 * touches the watcher list or the sockets. Driver calls (gs_kdra_prepare,
 * gs_kdra_unprepare) may block, so each claim of a request becomes one
 * task for the worker pool; the claims of one request run in parallel and
 * the worker that finishes the last one builds and sends the response.
 * The driver's health listener runs on the driver's thread and only posts
 * a callback to the loop; health snapshots (which may call gpusliced) are
 * taken on a worker too, one at a time, and delivered on the loop.
 *
 * Sockets:
 *   <registry_dir>/<driver>-reg.sock  Registration (GetInfo, Notify...),
 *       bound as .<driver>-reg.sock.tmp and renamed, so the kubelet's
 *       watcher (which ignores dot-files) only sees a socket that accepts.
 *       Re-created when it disappears (kubelet restart wipes; inotify on
 *       the directory plus a periodic check). Removed on SIGTERM/SIGINT:
 *       that is how the kubelet learns the plugin is gone.
 *   <plugin_dir>/dra.sock  DRAPlugin v1 + v1beta1, DRAResourceHealth v1 +
 *       v1alpha1; its path is PluginInfo.endpoint. Re-created the same way.
 * A starting instance replaces whatever sockets are there; an older
 * instance that finds a live socket of someone else's on its path steps
 * back rather than fight, takes the path again when it is free, and never
 * removes a socket file that is not its own.
 *
 * Shutdown order: signal -> unlink the registration socket (the kubelet
 * stops sending claims) -> keep serving until every claim request in
 * flight has been answered (at most DRAIN_MS) -> end the health streams
 * with UNAVAILABLE -> stop the loop -> join the workers -> free the server
 * -> free the driver.
 */
#include "plugin.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "dra_v1.pb-c.h"
#include "dra_v1beta1.pb-c.h"
#include "grpc.h"
#include "gs/log.h"
#include "health_v1.pb-c.h"
#include "health_v1alpha1.pb-c.h"
#include "pluginregistration.pb-c.h"

#define TAG "kplugin"
/* How long a stopping plugin waits for claim requests in flight: well
 * under the DaemonSet's terminationGracePeriodSeconds (30). */
#define DRAIN_MS 10000
#define DRAIN_TICK_MS 20

/* PluginInfo.supported_versions, preferred first: the kubelet takes the
 * first one it knows, so v1 before v1beta1. The DRAResourceHealth labels
 * are listed too, as the Go helper does; a kubelet only matches the
 * DRAPlugin labels for version choice and opens the health stream on the
 * same endpoint when its ResourceHealthStatus gate is on. */
static const char *const supported_versions[] = {
	"v1.DRAPlugin",
	"v1beta1.DRAPlugin",
	"v1.DRAResourceHealth",
	"v1alpha1.DRAResourceHealth",
};

/* ---- worker pool ---- */

struct task {
	void (*fn)(void *arg, size_t i);
	void *arg;
	size_t i;
	struct task *next;
};

struct pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct task *head, *tail;
	bool stop;
	pthread_t *threads;
	int n;
};

static void *pool_main(void *arg)
{
	struct pool *pl = arg;
	for (;;) {
		pthread_mutex_lock(&pl->mu);
		while (!pl->head && !pl->stop)
			pthread_cond_wait(&pl->cv, &pl->mu);
		struct task *t = pl->head;
		if (!t) { /* stopping and drained */
			pthread_mutex_unlock(&pl->mu);
			return NULL;
		}
		pl->head = t->next;
		if (!pl->head)
			pl->tail = NULL;
		pthread_mutex_unlock(&pl->mu);
		t->fn(t->arg, t->i);
		free(t);
	}
}

static gs_err pool_start(struct pool *pl, int n, struct gs_errbuf *eb)
{
	pthread_mutex_init(&pl->mu, NULL);
	pthread_cond_init(&pl->cv, NULL);
	pl->threads = calloc((size_t)n, sizeof(*pl->threads));
	if (!pl->threads)
		return gs_fail(eb, GS_ERR_NOMEM, "worker pool");
	for (int i = 0; i < n; i++) {
		int rc = pthread_create(&pl->threads[i], NULL, pool_main, pl);
		if (rc != 0)
			return gs_fail(eb, GS_ERR_INTERNAL,
			               "starting worker %d: %s", i, strerror(rc));
		pl->n++;
	}
	return GS_OK;
}

static gs_err pool_push(struct pool *pl, void (*fn)(void *, size_t),
                        void *arg, size_t i)
{
	struct task *t = calloc(1, sizeof(*t));
	if (!t)
		return GS_ERR_NOMEM;
	t->fn = fn;
	t->arg = arg;
	t->i = i;
	pthread_mutex_lock(&pl->mu);
	if (pl->tail)
		pl->tail->next = t;
	else
		pl->head = t;
	pl->tail = t;
	pthread_cond_signal(&pl->cv);
	pthread_mutex_unlock(&pl->mu);
	return GS_OK;
}

/* Runs what is queued, then joins every worker. */
static void pool_stop(struct pool *pl)
{
	pthread_mutex_lock(&pl->mu);
	pl->stop = true;
	pthread_cond_broadcast(&pl->cv);
	pthread_mutex_unlock(&pl->mu);
	for (int i = 0; i < pl->n; i++)
		pthread_join(pl->threads[i], NULL);
	free(pl->threads);
	pl->threads = NULL;
	pl->n = 0;
	pthread_cond_destroy(&pl->cv);
	pthread_mutex_destroy(&pl->mu);
}

/* ---- the plugin ---- */

struct watcher;

struct plugin {
	const struct gs_kplugin_config *cfg;
	const char *driver_name;
	struct gs_kdra *d;
	struct gs_grpc_server *srv;
	struct pool pool;
	char registry_dir[PATH_MAX];
	char plugin_dir[PATH_MAX];
	char reg_path[PATH_MAX];
	char reg_tmp[PATH_MAX];
	char dra_path[PATH_MAX];
	int reg_id, dra_id; /* 0: not listening */
	ino_t reg_ino, dra_ino;
	int inotify_fd, inotify_wd;
	int sig_fd;
	bool registered;
	bool stopping; /* draining or stopped: posted callbacks do nothing */
	atomic_int inflight; /* claim requests not answered yet (batches) */
	int64_t drain_deadline; /* CLOCK_MONOTONIC ms */
	struct watcher *watchers;
	uint64_t health_version; /* of the last list delivered */
	atomic_bool health_busy; /* a snapshot in flight: health_request */
	bool health_again;
	atomic_bool health_posted;
};

/* A claim request being worked on: one slot per claim. */
struct batch {
	struct plugin *p;
	struct gs_grpc_call *call;
	bool unprepare;
	size_t n;
	atomic_size_t left;
	struct gs_kdra_claim_ref *claims; /* strings owned by the batch */
	struct gs_kdra_prepared *prepared;
	char **unprepare_errors;
	void (*reply)(struct batch *b);
};

static void batch_free(struct batch *b)
{
	if (!b)
		return;
	atomic_fetch_sub(&b->p->inflight, 1);
	for (size_t i = 0; i < b->n; i++) {
		free((char *)b->claims[i].ns);
		free((char *)b->claims[i].uid);
		free((char *)b->claims[i].name);
		gs_kdra_prepared_fini(&b->prepared[i]);
		free(b->unprepare_errors[i]);
	}
	free(b->claims);
	free(b->prepared);
	free(b->unprepare_errors);
	free(b);
}

static struct batch *batch_new(struct plugin *p, struct gs_grpc_call *call,
                               size_t n, bool unprepare,
                               void (*reply)(struct batch *))
{
	struct batch *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->p = p;
	atomic_fetch_add(&p->inflight, 1); /* batch_free takes it back */
	b->call = call;
	b->unprepare = unprepare;
	b->reply = reply;
	b->claims = calloc(n ? n : 1, sizeof(*b->claims));
	b->prepared = calloc(n ? n : 1, sizeof(*b->prepared));
	b->unprepare_errors = calloc(n ? n : 1, sizeof(*b->unprepare_errors));
	if (!b->claims || !b->prepared || !b->unprepare_errors) {
		batch_free(b);
		return NULL;
	}
	b->n = n; /* after the arrays: batch_free walks n entries */
	atomic_init(&b->left, n);
	return b;
}

static gs_err batch_set_claim(struct batch *b, size_t i, const char *ns,
                              const char *uid, const char *name)
{
	b->claims[i].ns = strdup(ns ? ns : "");
	b->claims[i].uid = strdup(uid ? uid : "");
	b->claims[i].name = strdup(name ? name : "");
	if (!b->claims[i].ns || !b->claims[i].uid || !b->claims[i].name)
		return GS_ERR_NOMEM;
	return GS_OK;
}

static char *dupmsg(const char *fmt, const char *a, const char *b2)
{
	char buf[512];
	snprintf(buf, sizeof(buf), fmt, a, b2);
	return strdup(buf);
}

/* One claim, on a worker thread. */
static void batch_task(void *arg, size_t i)
{
	struct batch *b = arg;
	const struct gs_kdra_claim_ref *c = &b->claims[i];
	if (!*c->uid || !*c->name || !*c->ns) {
		char *why = dupmsg("claim %s/%s: namespace, uid and name are required",
		                   c->ns, c->name);
		if (b->unprepare)
			b->unprepare_errors[i] = why;
		else
			b->prepared[i].error = why;
	} else if (b->unprepare) {
		b->unprepare_errors[i] = gs_kdra_unprepare(b->p->d, c);
		if (b->unprepare_errors[i])
			gs_warn(TAG, "unprepare claim=%s/%s uid=%s: %s", c->ns,
			        c->name, c->uid, b->unprepare_errors[i]);
		else
			gs_info(TAG, "unprepared claim=%s/%s uid=%s", c->ns,
			        c->name, c->uid);
	} else {
		gs_kdra_prepare(b->p->d, c, &b->prepared[i]);
		if (b->prepared[i].error)
			gs_warn(TAG, "prepare claim=%s/%s uid=%s: %s", c->ns,
			        c->name, c->uid, b->prepared[i].error);
		else
			gs_info(TAG, "prepared claim=%s/%s uid=%s devices=%zu",
			        c->ns, c->name, c->uid, b->prepared[i].n_devices);
	}
	if (atomic_fetch_sub(&b->left, 1) == 1) {
		b->reply(b);
		batch_free(b);
	}
}

static void batch_start(struct batch *b)
{
	if (b->n == 0) {
		b->reply(b);
		batch_free(b);
		return;
	}
	size_t n = b->n;
	for (size_t i = 0; i < n; i++) {
		if (pool_push(&b->p->pool, batch_task, b, i) == GS_OK)
			continue;
		/* Could not queue: answer this claim here so the batch still
		 * completes (the kubelet retries the claim). */
		char *why = strdup("out of memory queueing the claim");
		if (b->unprepare)
			b->unprepare_errors[i] = why;
		else
			b->prepared[i].error = why;
		if (atomic_fetch_sub(&b->left, 1) == 1) {
			b->reply(b);
			batch_free(b);
			return;
		}
	}
}

/* ---- health streams ---- */

typedef gs_err (*health_packer)(const struct gs_kdra_health *list, size_t n,
                                uint8_t **buf, size_t *len);

struct watcher {
	struct plugin *p;
	struct gs_grpc_call *call;
	health_packer pack;
	bool primed; /* has been sent a list */
	struct watcher *next;
};

/*
 * Health lists: the driver's snapshot may call gpusliced and block, so it
 * is taken on a worker and delivered on the loop, which owns the watcher
 * list. One snapshot is in flight at a time (p->health_busy); a request
 * meanwhile sets p->health_again and a fresh one follows the delivery, so
 * lists reach every stream in the order they were taken. A delivery goes
 * to every stream when the list changed, and to new streams always.
 */
struct hsnap {
	struct plugin *p;
	struct gs_kdra_health *list;
	size_t n;
	uint64_t version;
	bool ok;
};

static void health_request(struct plugin *p);

/* Loop thread: sends the snapshot to the watchers it is for. */
static void health_deliver(void *arg)
{
	struct hsnap *hs = arg;
	struct plugin *p = hs->p;
	atomic_store(&p->health_busy, false);
	if (!hs->ok || p->stopping)
		goto out;
	bool changed = hs->version != p->health_version;
	p->health_version = hs->version;
	/* Each version's message is packed once per round. */
	health_packer packed_by[2] = {NULL, NULL};
	uint8_t *bufs[2] = {NULL, NULL};
	size_t lens[2] = {0, 0};
	int sent = 0;
	for (struct watcher *w = p->watchers; w; w = w->next) {
		if (w->primed && !changed)
			continue;
		int k = packed_by[0] == w->pack ? 0
		        : packed_by[1] == w->pack ? 1
		        : !packed_by[0]           ? 0
		                                  : 1;
		if (!packed_by[k]) {
			if (w->pack(hs->list, hs->n, &bufs[k], &lens[k]) !=
			    GS_OK) {
				gs_error(TAG, "health list of %zu devices: out of memory",
				         hs->n);
				continue;
			}
			packed_by[k] = w->pack;
		}
		gs_grpc_call_send(w->call, bufs[k], lens[k]);
		w->primed = true;
		sent++;
	}
	if (sent)
		gs_debug(TAG, "health list devices=%zu version=%llu sent to %d streams",
		         hs->n, (unsigned long long)hs->version, sent);
	free(bufs[0]);
	free(bufs[1]);
out:
	gs_kdra_health_free(hs->list, hs->n);
	free(hs);
	if (p->health_again && !p->stopping) {
		p->health_again = false;
		health_request(p);
	}
}

/* Worker thread: takes the snapshot and hands it to the loop. */
static void health_task(void *arg, size_t i)
{
	struct hsnap *hs = arg;
	struct gs_errbuf eb = {0};
	gs_err err = gs_kdra_health_snapshot(hs->p->d, &hs->list, &hs->n,
	                                     &hs->version, &eb);
	hs->ok = err == GS_OK;
	if (!hs->ok)
		gs_warn(TAG, "health snapshot: %s", gs_errbuf_msg(&eb, err));
	if (gs_grpc_server_post(hs->p->srv, health_deliver, hs) != GS_OK) {
		/* The loop never learns of it: clear busy here, or no
		 * snapshot would ever be taken again. */
		gs_error(TAG, "health list dropped: out of memory");
		struct plugin *p = hs->p;
		gs_kdra_health_free(hs->list, hs->n);
		free(hs);
		atomic_store(&p->health_busy, false);
	}
}

/* Loop thread: asks for a snapshot (or for one more after the current). */
static void health_request(struct plugin *p)
{
	if (atomic_load(&p->health_busy)) {
		p->health_again = true;
		return;
	}
	struct hsnap *hs = calloc(1, sizeof(*hs));
	if (hs)
		hs->p = p;
	atomic_store(&p->health_busy, true); /* before a worker can clear it */
	if (!hs || pool_push(&p->pool, health_task, hs, 0) != GS_OK) {
		free(hs);
		atomic_store(&p->health_busy, false);
		gs_error(TAG, "health list not sent: out of memory");
	}
}

static void watcher_remove(struct plugin *p, struct watcher *w)
{
	for (struct watcher **pp = &p->watchers; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			return;
		}
	}
}

static void watcher_cancelled(void *arg)
{
	struct watcher *w = arg;
	gs_info(TAG, "health stream closed by the client");
	watcher_remove(w->p, w);
	gs_grpc_call_finish(w->call, GS_GRPC_CANCELLED, NULL);
	free(w);
}

static void watcher_add(struct plugin *p, struct gs_grpc_call *call,
                        health_packer pack)
{
	struct watcher *w = calloc(1, sizeof(*w));
	if (!w) {
		gs_grpc_call_fail(call, GS_GRPC_RESOURCE_EXHAUSTED,
		                  "out of memory");
		return;
	}
	w->p = p;
	w->call = call;
	w->pack = pack;
	w->next = p->watchers;
	p->watchers = w;
	gs_grpc_call_on_cancel(call, watcher_cancelled, w);
	gs_info(TAG, "health stream opened path=%s", gs_grpc_call_path(call));
	health_request(p);
}

static void health_changed(void *arg)
{
	struct plugin *p = arg;
	atomic_store(&p->health_posted, false);
	if (!p->stopping)
		health_request(p);
}

/* Driver thread: only wakes the loop (one post in flight at most). */
static void health_listener(void *arg)
{
	struct plugin *p = arg;
	if (atomic_exchange(&p->health_posted, true))
		return;
	if (gs_grpc_server_post(p->srv, health_changed, p) != GS_OK) {
		atomic_store(&p->health_posted, false);
		gs_error(TAG, "health change not forwarded: out of memory");
	}
}

/* ---- the versioned handlers ---- */

#define DRA_T(x) K8s__Io__Kubelet__Pkg__Apis__Dra__V1__##x
#define DRA_F(x) k8s__io__kubelet__pkg__apis__dra__v1__##x
#define DRA_V(x) x##_v1
#define DRA_SHARE 1
#define DRA_SHARE_CASE K8S__IO__KUBELET__PKG__APIS__DRA__V1__DEVICE___SHARE_ID_SHARE_ID
#define HL_T(x) V1__##x
#define HL_F(x) v1__##x
#define HL_V(x) x##_v1
#define HL_STATUS(x) V1__HEALTH_STATUS__##x
#include "plugin_versions.h"

#define DRA_T(x) K8s__Io__Kubelet__Pkg__Apis__Dra__V1beta1__##x
#define DRA_F(x) k8s__io__kubelet__pkg__apis__dra__v1beta1__##x
#define DRA_V(x) x##_v1beta1
#define DRA_SHARE 0
#define HL_T(x) V1alpha1__##x
#define HL_F(x) v1alpha1__##x
#define HL_V(x) x##_v1alpha1
#define HL_STATUS(x) V1ALPHA1__HEALTH_STATUS__##x
#include "plugin_versions.h"

/* ---- registration ---- */

static void get_info(struct gs_grpc_call *call, const uint8_t *req,
                     size_t len, void *arg)
{
	struct plugin *p = arg;
	Pluginregistration__InfoRequest *r =
		pluginregistration__info_request__unpack(NULL, len, req);
	if (!r) {
		gs_grpc_call_fail(call, GS_GRPC_INVALID_ARGUMENT,
		                  "undecodable InfoRequest");
		return;
	}
	pluginregistration__info_request__free_unpacked(r, NULL);
	Pluginregistration__PluginInfo info;
	pluginregistration__plugin_info__init(&info);
	info.type = (char *)"DRAPlugin";
	info.name = (char *)p->driver_name;
	info.endpoint = p->dra_path;
	info.n_supported_versions =
		sizeof(supported_versions) / sizeof(supported_versions[0]);
	info.supported_versions = (char **)supported_versions;
	size_t n = pluginregistration__plugin_info__get_packed_size(&info);
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf) {
		gs_grpc_call_fail(call, GS_GRPC_RESOURCE_EXHAUSTED,
		                  "out of memory");
		return;
	}
	pluginregistration__plugin_info__pack(&info, buf);
	gs_info(TAG, "GetInfo answered driver=%s endpoint=%s", p->driver_name,
	        p->dra_path);
	gs_grpc_call_reply(call, buf, n);
	free(buf);
}

static void notify_status(struct gs_grpc_call *call, const uint8_t *req,
                          size_t len, void *arg)
{
	struct plugin *p = arg;
	Pluginregistration__RegistrationStatus *r =
		pluginregistration__registration_status__unpack(NULL, len, req);
	if (!r) {
		gs_grpc_call_fail(call, GS_GRPC_INVALID_ARGUMENT,
		                  "undecodable RegistrationStatus");
		return;
	}
	if (r->plugin_registered) {
		gs_info(TAG, "registered with the kubelet driver=%s",
		        p->driver_name);
		p->registered = true;
		/* The kubelet may have wiped this node's ResourceSlices. */
		gs_kdra_republish(p->d);
	} else {
		gs_error(TAG, "kubelet refused the registration driver=%s: %s",
		         p->driver_name,
		         r->error && *r->error ? r->error : "(no reason given)");
		p->registered = false;
	}
	pluginregistration__registration_status__free_unpacked(r, NULL);
	Pluginregistration__RegistrationStatusResponse resp;
	pluginregistration__registration_status_response__init(&resp);
	uint8_t buf[8];
	size_t n = pluginregistration__registration_status_response__pack(&resp,
	                                                                  buf);
	gs_grpc_call_reply(call, buf, n);
}

/* ---- sockets ---- */

static gs_err mkdir_p(const char *dir, struct gs_errbuf *eb)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s", dir) >= (int)sizeof(tmp))
		return gs_fail(eb, GS_ERR_INVALID, "path too long: %s", dir);
	for (char *q = tmp + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = '\0';
		if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
			return gs_fail(eb, GS_ERR_IO, "mkdir %s: %s", tmp,
			               strerror(errno));
		*q = '/';
	}
	if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
		return gs_fail(eb, GS_ERR_IO, "mkdir %s: %s", tmp,
		               strerror(errno));
	return GS_OK;
}

static ino_t inode_of(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode))
		return 0;
	return st.st_ino;
}

static void watch_registry_dir(struct plugin *p)
{
	if (p->inotify_fd < 0)
		return;
	if (p->inotify_wd >= 0)
		(void)inotify_rm_watch(p->inotify_fd, p->inotify_wd);
	p->inotify_wd = inotify_add_watch(p->inotify_fd, p->registry_dir,
	                                  IN_DELETE | IN_MOVED_FROM |
	                                          IN_DELETE_SELF |
	                                          IN_MOVE_SELF);
	if (p->inotify_wd < 0)
		gs_warn(TAG, "inotify on %s: %s (the periodic check remains)",
		        p->registry_dir, strerror(errno));
}

static gs_err open_registration(struct plugin *p, struct gs_errbuf *eb)
{
	gs_err err = mkdir_p(p->registry_dir, eb);
	if (err != GS_OK)
		return err;
	err = gs_grpc_server_listen(p->srv, p->reg_path, p->reg_tmp,
	                            &p->reg_id, eb);
	if (err != GS_OK)
		return err;
	p->reg_ino = inode_of(p->reg_path);
	watch_registry_dir(p);
	gs_info(TAG, "registration socket path=%s", p->reg_path);
	return GS_OK;
}

static gs_err open_dra(struct plugin *p, struct gs_errbuf *eb)
{
	gs_err err = mkdir_p(p->plugin_dir, eb);
	if (err != GS_OK)
		return err;
	err = gs_grpc_server_listen(p->srv, p->dra_path, NULL, &p->dra_id,
	                            eb);
	if (err != GS_OK)
		return err;
	p->dra_ino = inode_of(p->dra_path);
	gs_info(TAG, "DRA socket path=%s", p->dra_path);
	return GS_OK;
}

/* Whether something accepts connections on the socket at `path`. */
static bool socket_is_live(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path))
		return false;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	int e = errno;
	close(fd);
	return rc == 0 || e == EAGAIN || e == EINPROGRESS;
}

/*
 * Keeps one of our sockets present. `what` names it in the log. A socket
 * of ours that vanished (kubelet restart, a wiped directory) or was
 * replaced by a dead one is re-created. One replaced by a live socket
 * belongs to a newer instance of the plugin (it replaced ours at its
 * start): this one steps back instead of fighting over the path, and takes
 * it again if that instance goes away.
 */
static void keep_socket(struct plugin *p, const char *what, const char *path,
                        int *id, ino_t ino,
                        gs_err (*open_fn)(struct plugin *, struct gs_errbuf *))
{
	struct gs_errbuf eb = {0};
	ino_t cur = inode_of(path);
	if (*id && cur == ino)
		return;
	bool other = cur != 0 && socket_is_live(path);
	if (*id) {
		if (other)
			gs_warn(TAG, "%s socket path=%s taken over by another instance: stepping back",
			        what, path);
		else
			gs_warn(TAG, "%s socket path=%s vanished (kubelet restart?): re-creating",
			        what, path);
		gs_grpc_server_unlisten(p->srv, *id, 0);
		*id = 0;
	}
	if (other)
		return;
	gs_err err = open_fn(p, &eb);
	if (err != GS_OK)
		gs_error(TAG, "%s socket: %s", what, gs_errbuf_msg(&eb, err));
}

/* The periodic and inotify-driven check. The DRA socket first: the kubelet
 * dials it right after it sees the registration socket. */
static void check_sockets(void *arg)
{
	struct plugin *p = arg;
	if (p->stopping)
		return;
	keep_socket(p, "DRA", p->dra_path, &p->dra_id, p->dra_ino, open_dra);
	if (!p->dra_id && p->reg_id) {
		/* No endpoint of ours: do not advertise one. */
		gs_grpc_server_unlisten(p->srv, p->reg_id, 0);
		p->reg_id = 0;
	}
	if (!p->dra_id)
		return;
	int had = p->reg_id;
	keep_socket(p, "registration", p->reg_path, &p->reg_id, p->reg_ino,
	            open_registration);
	if (!p->reg_id || p->reg_id != had)
		p->registered = false;
}

/* Stops listening on a socket; removes its file only while it is ours. */
static void close_socket(struct plugin *p, int *id, const char *path,
                         ino_t ino)
{
	if (!*id)
		return;
	gs_grpc_server_unlisten(p->srv, *id, inode_of(path) == ino);
	*id = 0;
}

static void on_inotify(int fd, void *arg)
{
	struct plugin *p = arg;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	/* Which deletion it was does not matter: drain the events, then
	 * check after this epoll round (posted, so no listener is freed
	 * mid-round). A failed post is covered by the periodic check. */
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	(void)gs_grpc_server_post(p->srv, check_sockets, p);
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Ends every health stream with a status the kubelet can read. */
static void end_watchers(struct plugin *p)
{
	while (p->watchers) {
		struct watcher *w = p->watchers;
		p->watchers = w->next;
		gs_grpc_call_finish(w->call, GS_GRPC_UNAVAILABLE,
		                    "plugin stopping");
		free(w);
	}
}

/* Loop tick while stopping: stop once every claim request in flight has
 * been answered (their responses are queued before the batch is freed, and
 * the loop flushes after this tick), or at the deadline. */
static void drain_tick(void *arg)
{
	struct plugin *p = arg;
	int left = atomic_load(&p->inflight);
	if (left > 0 && mono_ms() < p->drain_deadline)
		return;
	if (left > 0)
		gs_warn(TAG, "stopping with %d claim requests unanswered after %d ms (the kubelet retries them)",
		        left, DRAIN_MS);
	end_watchers(p);
	gs_grpc_server_stop(p->srv);
}

/* Posted, so the listener is not freed in the middle of an epoll round. */
static void shutdown_now(void *arg)
{
	struct plugin *p = arg;
	if (p->stopping)
		return;
	close_socket(p, &p->reg_id, p->reg_path, p->reg_ino);
	p->stopping = true;
	p->drain_deadline = mono_ms() + DRAIN_MS;
	gs_grpc_server_set_tick(p->srv, DRAIN_TICK_MS, drain_tick, p);
	drain_tick(p);
}

static void on_signal(int fd, void *arg)
{
	struct plugin *p = arg;
	struct signalfd_siginfo si;
	bool got = false;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		gs_info(TAG, "signal %u: removing the registration socket and stopping",
		        si.ssi_signo);
		got = true;
	}
	if (got && gs_grpc_server_post(p->srv, shutdown_now, p) != GS_OK) {
		/* No memory for the post: stop now, unlink after the loop. */
		p->stopping = true;
		gs_grpc_server_stop(p->srv);
	}
}

static gs_err add_method(struct plugin *p, const char *path,
                         enum gs_grpc_kind kind, gs_grpc_handler fn,
                         struct gs_errbuf *eb)
{
	return gs_grpc_server_add_method(p->srv, path, kind, fn, p, eb);
}

static gs_err add_methods(struct plugin *p, struct gs_errbuf *eb)
{
#define DRA1 "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/"
#define DRAB "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/"
	const struct {
		const char *path;
		enum gs_grpc_kind kind;
		gs_grpc_handler fn;
	} m[] = {
		{"/pluginregistration.Registration/GetInfo", GS_GRPC_UNARY,
		 get_info},
		{"/pluginregistration.Registration/NotifyRegistrationStatus",
		 GS_GRPC_UNARY, notify_status},
		{DRA1 "NodePrepareResources", GS_GRPC_UNARY, prepare_handler_v1},
		{DRA1 "NodeUnprepareResources", GS_GRPC_UNARY,
		 unprepare_handler_v1},
		{DRAB "NodePrepareResources", GS_GRPC_UNARY,
		 prepare_handler_v1beta1},
		{DRAB "NodeUnprepareResources", GS_GRPC_UNARY,
		 unprepare_handler_v1beta1},
		{"/v1.DRAResourceHealth/NodeWatchResources",
		 GS_GRPC_SERVER_STREAM, watch_handler_v1},
		{"/v1alpha1.DRAResourceHealth/NodeWatchResources",
		 GS_GRPC_SERVER_STREAM, watch_handler_v1alpha1},
	};
#undef DRA1
#undef DRAB
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		gs_err err = add_method(p, m[i].path, m[i].kind, m[i].fn, eb);
		if (err != GS_OK)
			return err;
	}
	return GS_OK;
}

static gs_err set_paths(struct plugin *p, const struct gs_kplugin_config *cfg,
                        struct gs_errbuf *eb)
{
	const char *reg = cfg->registry_dir ? cfg->registry_dir
	                                    : GS_KPLUGIN_REGISTRY_DIR;
	const char *dir = cfg->plugin_dir ? cfg->plugin_dir
	                                  : GS_KPLUGIN_PLUGIN_DIR;
	int a = snprintf(p->registry_dir, sizeof(p->registry_dir), "%s", reg);
	int b = snprintf(p->plugin_dir, sizeof(p->plugin_dir), "%s", dir);
	int c = snprintf(p->reg_path, sizeof(p->reg_path), "%s/%s-reg.sock",
	                 reg, p->driver_name);
	int d = snprintf(p->reg_tmp, sizeof(p->reg_tmp),
	                 "%s/.%s-reg.sock.tmp", reg, p->driver_name);
	int e = snprintf(p->dra_path, sizeof(p->dra_path), "%s/dra.sock", dir);
	if (a < 0 || b < 0 || c < 0 || d < 0 || e < 0 ||
	    (size_t)d >= sizeof(p->reg_tmp) || (size_t)e >= sizeof(p->dra_path))
		return gs_fail(eb, GS_ERR_INVALID, "socket paths too long");
	return GS_OK;
}

gs_err gs_kplugin_run(const struct gs_kplugin_config *cfg,
                      struct gs_errbuf *eb)
{
	if (!cfg->driver.node_name || !*cfg->driver.node_name)
		return gs_fail(eb, GS_ERR_INVALID,
		               "node name required (--node-name or $NODE_NAME)");
	struct plugin *p = calloc(1, sizeof(*p));
	if (!p)
		return gs_fail(eb, GS_ERR_NOMEM, "plugin");
	p->cfg = cfg;
	p->driver_name = cfg->driver.driver_name ? cfg->driver.driver_name
	                                         : GS_KDRA_DRIVER_NAME;
	p->inotify_fd = -1;
	p->inotify_wd = -1;
	p->sig_fd = -1;
	atomic_init(&p->health_posted, false);
	atomic_init(&p->health_busy, false);
	atomic_init(&p->inflight, 0);
	gs_err err = set_paths(p, cfg, eb);
	if (err != GS_OK)
		goto out_free;

	/* Signals are read from a signalfd on the loop: block them before
	 * any thread (workers, the driver's) is created. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	sigdelset(&set, SIGPIPE);

	struct gs_grpc_limits lim = {.max_connections = cfg->max_connections};
	err = gs_grpc_server_create(&lim, &p->srv, eb);
	if (err != GS_OK)
		goto out_free;
	err = add_methods(p, eb);
	if (err != GS_OK)
		goto out_server;
	err = gs_kdra_create(&cfg->driver, &p->d, eb);
	if (err != GS_OK)
		goto out_server;
	err = pool_start(&p->pool, cfg->workers > 0 ? cfg->workers : 16, eb);
	if (err != GS_OK)
		goto out_pool;

	p->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (p->sig_fd < 0) {
		err = gs_fail(eb, GS_ERR_IO, "signalfd: %s", strerror(errno));
		goto out_pool;
	}
	err = gs_grpc_server_watch_fd(p->srv, p->sig_fd, on_signal, p, eb);
	if (err != GS_OK)
		goto out_pool;
	p->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (p->inotify_fd < 0)
		gs_warn(TAG, "inotify: %s (the periodic check remains)",
		        strerror(errno));
	else if ((err = gs_grpc_server_watch_fd(p->srv, p->inotify_fd,
	                                        on_inotify, p, eb)) != GS_OK)
		goto out_pool;

	/* The DRA socket before the registration socket: the kubelet dials
	 * the endpoint as soon as it has registered the plugin. */
	err = open_dra(p, eb);
	if (err != GS_OK)
		goto out_pool;
	gs_kdra_set_health_listener(p->d, health_listener, p);
	err = gs_kdra_start(p->d, eb);
	if (err != GS_OK)
		goto out_listener;
	err = open_registration(p, eb);
	if (err != GS_OK)
		goto out_listener;
	gs_grpc_server_set_tick(p->srv, cfg->check_ms > 0 ? cfg->check_ms : 1000,
	                        check_sockets, p);

	err = gs_grpc_server_run(p->srv, eb);
	close_socket(p, &p->reg_id, p->reg_path, p->reg_ino);

out_listener:
	gs_kdra_set_health_listener(p->d, NULL, NULL);
out_pool:
	p->stopping = true;
	close_socket(p, &p->reg_id, p->reg_path, p->reg_ino);
	close_socket(p, &p->dra_id, p->dra_path, p->dra_ino);
	pool_stop(&p->pool);
	end_watchers(p);
	gs_kdra_destroy(p->d);
out_server:
	gs_grpc_server_destroy(p->srv);
	if (p->sig_fd >= 0)
		close(p->sig_fd);
	if (p->inotify_fd >= 0)
		close(p->inotify_fd);
out_free:
	free(p);
	return err;
}
