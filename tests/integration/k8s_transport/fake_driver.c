/*
 * fake_driver.c - a stand-in for the DRA driver behind driver.h, linked
 * into gs-kplugin-fake (the kubelet plugin's test build) so the transport
 * (grpc.c, plugin.c) is tested alone, without an API server or gpusliced.
 *
 * What it does is decided by the claim's name, so a test chooses the
 * outcome per claim:
 *   fail-*    prepare and unprepare fail with a message naming the claim
 *   slow-*    the call takes 300 ms (concurrency tests)
 *   multi-*   two devices, serving requests "a" and "b"
 *   share-*   the device carries a share ID ("share-" + the claim UID)
 *   anything else: one device gpu-0 in pool <node>, CDI ID
 *             gpuslice.io/slice=<uid>
 * Every call is appended as one line to <state_dir>/calls.log
 * ("prepare NS/NAME UID", "unprepare NS/NAME UID", "republish"), which the
 * tests read to see that a call reached the driver.
 *
 * Health: two devices gpu-0 and gpu-1 (pool <node>), healthy, until the
 * file <state_dir>/unhealthy exists: then gpu-1 is unhealthy with the
 * file's first line as message. A thread polls the file every 50 ms and
 * calls the listener when the list changes.
 *
 * While <state_dir>/health_hold exists, a health snapshot blocks (as the
 * real driver's does while gpusliced is slow) and logs "health-hold".
 *
 * A node name of "fail-create" makes gs_kdra_create fail (startup errors).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"

struct gs_kdra {
	char *node;
	char *state_dir;
	pthread_mutex_t mu; /* guards the log, health fields, the listener */
	void (*listener)(void *arg);
	void *listener_arg;
	bool unhealthy;
	char message[256];
	int64_t updated;
	uint64_t version;
	pthread_t thread;
	bool started;
	atomic_bool stop;
};

static void log_call(struct gs_kdra *d, const char *what,
                     const struct gs_kdra_claim_ref *c)
{
	if (!d->state_dir)
		return;
	char path[4096];
	snprintf(path, sizeof(path), "%s/calls.log", d->state_dir);
	pthread_mutex_lock(&d->mu);
	FILE *f = fopen(path, "a");
	if (f) {
		if (c)
			fprintf(f, "%s %s/%s %s\n", what, c->ns, c->name,
			        c->uid);
		else
			fprintf(f, "%s\n", what);
		fclose(f);
	}
	pthread_mutex_unlock(&d->mu);
}

static bool has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		abort(); /* a test helper: out of memory ends the test */
	return p;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Polls <state_dir>/unhealthy and tells the listener about changes. */
static void *health_main(void *arg)
{
	struct gs_kdra *d = arg;
	char path[4096];
	snprintf(path, sizeof(path), "%s/unhealthy",
	         d->state_dir ? d->state_dir : "/nonexistent");
	while (!atomic_load(&d->stop)) {
		char msg[256] = "";
		FILE *f = fopen(path, "r");
		bool bad = f != NULL;
		if (f) {
			if (!fgets(msg, sizeof(msg), f))
				msg[0] = '\0';
			msg[strcspn(msg, "\n")] = '\0';
			fclose(f);
		}
		void (*fn)(void *) = NULL;
		void *fn_arg = NULL;
		pthread_mutex_lock(&d->mu);
		if (bad != d->unhealthy || strcmp(msg, d->message) != 0) {
			d->unhealthy = bad;
			snprintf(d->message, sizeof(d->message), "%s", msg);
			d->updated = (int64_t)time(NULL);
			d->version++;
			fn = d->listener;
			fn_arg = d->listener_arg;
		}
		pthread_mutex_unlock(&d->mu);
		if (fn)
			fn(fn_arg);
		sleep_ms(50);
	}
	return NULL;
}

gs_err gs_kdra_create(const struct gs_kdra_config *cfg, struct gs_kdra **out,
                      struct gs_errbuf *eb)
{
	if (!cfg->node_name || !*cfg->node_name)
		return gs_fail(eb, GS_ERR_INVALID, "fake driver: node name required");
	if (strcmp(cfg->node_name, "fail-create") == 0)
		return gs_fail(eb, GS_ERR_UNAVAILABLE,
		               "fake driver: asked to fail at creation");
	struct gs_kdra *d = calloc(1, sizeof(*d));
	if (!d)
		return gs_fail(eb, GS_ERR_NOMEM, "fake driver");
	d->node = xstrdup(cfg->node_name);
	d->state_dir = cfg->state_dir ? xstrdup(cfg->state_dir) : NULL;
	pthread_mutex_init(&d->mu, NULL);
	d->updated = (int64_t)time(NULL);
	d->version = 1;
	atomic_init(&d->stop, false);
	*out = d;
	return GS_OK;
}

gs_err gs_kdra_start(struct gs_kdra *d, struct gs_errbuf *eb)
{
	int rc = pthread_create(&d->thread, NULL, health_main, d);
	if (rc != 0)
		return gs_fail(eb, GS_ERR_INTERNAL, "fake driver thread: %s",
		               strerror(rc));
	d->started = true;
	return GS_OK;
}

void gs_kdra_republish(struct gs_kdra *d)
{
	log_call(d, "republish", NULL);
}

void gs_kdra_destroy(struct gs_kdra *d)
{
	if (!d)
		return;
	atomic_store(&d->stop, true);
	if (d->started)
		pthread_join(d->thread, NULL);
	pthread_mutex_destroy(&d->mu);
	free(d->node);
	free(d->state_dir);
	free(d);
}

static void device_init(struct gs_kdra_device *g, const char *pool,
                        const char *dev, const char *request,
                        const char *uid)
{
	memset(g, 0, sizeof(*g));
	g->pool_name = xstrdup(pool);
	g->device_name = xstrdup(dev);
	if (request) {
		g->request_names = calloc(1, sizeof(char *));
		if (!g->request_names)
			abort();
		g->request_names[0] = xstrdup(request);
		g->n_request_names = 1;
	}
	g->cdi_device_ids = calloc(1, sizeof(char *));
	if (!g->cdi_device_ids)
		abort();
	char id[512];
	snprintf(id, sizeof(id), "gpuslice.io/slice=%s-%s", uid, dev);
	g->cdi_device_ids[0] = xstrdup(id);
	g->n_cdi_device_ids = 1;
}

void gs_kdra_prepare(struct gs_kdra *d, const struct gs_kdra_claim_ref *claim,
                     struct gs_kdra_prepared *out)
{
	memset(out, 0, sizeof(*out));
	log_call(d, "prepare", claim);
	if (has_prefix(claim->name, "slow-"))
		sleep_ms(300);
	if (has_prefix(claim->name, "fail-")) {
		char msg[512];
		snprintf(msg, sizeof(msg),
		         "fake driver: claim %s/%s refused on purpose",
		         claim->ns, claim->name);
		out->error = xstrdup(msg);
		return;
	}
	bool multi = has_prefix(claim->name, "multi-");
	out->n_devices = multi ? 2 : 1;
	out->devices = calloc(out->n_devices, sizeof(*out->devices));
	if (!out->devices)
		abort();
	device_init(&out->devices[0], d->node, "gpu-0", multi ? "a" : NULL,
	            claim->uid);
	if (multi)
		device_init(&out->devices[1], d->node, "gpu-1", "b",
		            claim->uid);
	if (has_prefix(claim->name, "share-")) {
		char sid[512];
		snprintf(sid, sizeof(sid), "share-%s", claim->uid);
		out->devices[0].share_id = xstrdup(sid);
	}
}

void gs_kdra_prepared_fini(struct gs_kdra_prepared *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_devices; i++) {
		struct gs_kdra_device *g = &p->devices[i];
		for (size_t k = 0; k < g->n_request_names; k++)
			free(g->request_names[k]);
		free(g->request_names);
		for (size_t k = 0; k < g->n_cdi_device_ids; k++)
			free(g->cdi_device_ids[k]);
		free(g->cdi_device_ids);
		free(g->pool_name);
		free(g->device_name);
		free(g->share_id);
	}
	free(p->devices);
	free(p->error);
	memset(p, 0, sizeof(*p));
}

char *gs_kdra_unprepare(struct gs_kdra *d,
                        const struct gs_kdra_claim_ref *claim)
{
	log_call(d, "unprepare", claim);
	if (has_prefix(claim->name, "slow-"))
		sleep_ms(300);
	if (has_prefix(claim->name, "fail-")) {
		char msg[512];
		snprintf(msg, sizeof(msg),
		         "fake driver: unprepare of %s/%s refused on purpose",
		         claim->ns, claim->name);
		return xstrdup(msg);
	}
	return NULL;
}

gs_err gs_kdra_health_snapshot(struct gs_kdra *d, struct gs_kdra_health **list,
                               size_t *n, uint64_t *version,
                               struct gs_errbuf *eb)
{
	if (d->state_dir) {
		char hold[4096];
		snprintf(hold, sizeof(hold), "%s/health_hold", d->state_dir);
		if (access(hold, F_OK) == 0) {
			log_call(d, "health-hold", NULL);
			for (int i = 0; i < 1500 && access(hold, F_OK) == 0; i++)
				sleep_ms(20);
		}
	}
	struct gs_kdra_health *l = calloc(2, sizeof(*l));
	if (!l)
		return gs_fail(eb, GS_ERR_NOMEM, "fake health list");
	pthread_mutex_lock(&d->mu);
	for (int i = 0; i < 2; i++) {
		l[i].pool_name = xstrdup(d->node);
		l[i].device_name = xstrdup(i ? "gpu-1" : "gpu-0");
		l[i].status = GS_KDRA_HEALTH_HEALTHY;
		l[i].updated_unix = d->updated;
	}
	if (d->unhealthy) {
		l[1].status = GS_KDRA_HEALTH_UNHEALTHY;
		l[1].message = xstrdup(d->message);
	}
	*version = d->version;
	pthread_mutex_unlock(&d->mu);
	*list = l;
	*n = 2;
	return GS_OK;
}

void gs_kdra_health_free(struct gs_kdra_health *list, size_t n)
{
	for (size_t i = 0; list && i < n; i++) {
		free(list[i].pool_name);
		free(list[i].device_name);
		free(list[i].message);
	}
	free(list);
}

void gs_kdra_set_health_listener(struct gs_kdra *d, void (*fn)(void *arg),
                                 void *arg)
{
	pthread_mutex_lock(&d->mu);
	d->listener = fn;
	d->listener_arg = arg;
	pthread_mutex_unlock(&d->mu);
}
