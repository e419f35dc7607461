/*
 * live.c - the extender's live node state (see live.h): reading the nodes
 * file, polling each gpusliced through the client library (gs/client.h,
 * over TCP with the node's bearer token, one kept connection per node)
 * from one thread, and turning the answers into the extender's state
 * document.
 */
#include "live.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs/client.h"

#define LIVE_MAX_BODY (4u << 20)

/* ---- the nodes file ---- */

void gs_ext_live_cfg_fini(struct gs_ext_live_cfg *cfg)
{
	if (cfg == NULL)
		return;
	free(cfg->node);
	memset(cfg, 0, sizeof(*cfg));
}

static gs_err read_token(const char *cfg_path, size_t i, const char *path,
                         char *out, size_t len, struct gs_errbuf *eb)
{
	FILE *f = fopen(path, "r");
	size_t n, a = 0;
	bool more;
	int e;

	if (f == NULL) {
		e = errno;
		return gs_fail(eb, GS_ERR_IO, "%s: node %zu: token file %s: %s",
		               cfg_path, i, path, strerror(e));
	}
	n = fread(out, 1, len - 1, f);
	more = n == len - 1 && fgetc(f) != EOF;
	fclose(f);
	out[n] = '\0';
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r' ||
	                 out[n - 1] == ' ' || out[n - 1] == '\t'))
		out[--n] = '\0';
	while (out[a] == ' ' || out[a] == '\t')
		a++;
	memmove(out, out + a, n - a + 1);
	if (out[0] == '\0' || more)
		return gs_fail(eb, GS_ERR_INVALID,
		               "%s: node %zu: token file %s is empty or longer than %zu bytes",
		               cfg_path, i, path, len - 1);
	return GS_OK;
}

static gs_err int_field(const char *path, json_t *root, const char *key,
                        int dflt, int *out, struct gs_errbuf *eb)
{
	json_t *v = json_object_get(root, key);

	*out = dflt;
	if (v == NULL)
		return GS_OK;
	if (!json_is_integer(v) || json_integer_value(v) < 10 ||
	    json_integer_value(v) > 3600000)
		return gs_fail(eb, GS_ERR_INVALID,
		               "%s: \"%s\" must be an integer 10..3600000",
		               path, key);
	*out = (int)json_integer_value(v);
	return GS_OK;
}

gs_err gs_ext_live_cfg_load(const char *path, struct gs_ext_live_cfg *out,
                            struct gs_errbuf *eb)
{
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je), *nodes, *v;
	const char *known[] = {"poll_interval_ms", "timeout_ms", "nodes"};
	const char *key;
	size_t i;
	gs_err err = GS_OK;

	memset(out, 0, sizeof(*out));
	if (root == NULL)
		return gs_fail(eb, GS_ERR_PARSE, "%s: %s (line %d)", path,
		               je.text, je.line);
	json_object_foreach(root, key, v)
	{
		bool ok = false;

		for (size_t k = 0; k < 3; k++)
			ok = ok || strcmp(key, known[k]) == 0;
		if (!ok) {
			err = gs_fail(eb, GS_ERR_INVALID,
			              "%s: unknown key \"%s\"", path, key);
			goto out;
		}
	}
	err = int_field(path, root, "poll_interval_ms", 1000,
	                &out->poll_interval_ms, eb);
	if (!err)
		err = int_field(path, root, "timeout_ms", 2000,
		                &out->timeout_ms, eb);
	if (err)
		goto out;
	nodes = json_object_get(root, "nodes");
	if (!json_is_array(nodes) || json_array_size(nodes) == 0 ||
	    json_array_size(nodes) > GS_EXT_LIVE_MAX_NODES) {
		err = gs_fail(eb, GS_ERR_INVALID,
		              "%s: \"nodes\" must be an array of 1..%d nodes",
		              path, GS_EXT_LIVE_MAX_NODES);
		goto out;
	}
	out->node = calloc(json_array_size(nodes), sizeof(*out->node));
	if (out->node == NULL) {
		err = gs_fail(eb, GS_ERR_NOMEM, "out of memory");
		goto out;
	}
	json_array_foreach(nodes, i, v)
	{
		struct gs_ext_live_node *n = &out->node[i];
		const char *name =
		    json_string_value(json_object_get(v, "name"));
		const char *url = json_string_value(json_object_get(v, "url"));
		const char *tok =
		    json_string_value(json_object_get(v, "token_file"));

		if (name == NULL || url == NULL || tok == NULL || !name[0] ||
		    strlen(name) >= sizeof(n->name) ||
		    strlen(url) + 16 >= sizeof(n->url) ||
		    (strncmp(url, "http://", 7) != 0 &&
		     strncmp(url, "https://", 8) != 0)) {
			err =
			    gs_fail(eb, GS_ERR_INVALID,
			            "%s: node %zu needs \"name\", \"url\" (http:// or https://) and \"token_file\"",
			            path, i);
			goto out;
		}
		snprintf(n->name, sizeof(n->name), "%s", name);
		snprintf(n->url, sizeof(n->url), "%s", url);
		while (n->url[0] && n->url[strlen(n->url) - 1] == '/')
			n->url[strlen(n->url) - 1] = '\0';
		err = read_token(path, i, tok, n->token, sizeof(n->token), eb);
		if (err)
			goto out;
		out->n++;
	}
out:
	json_decref(root);
	if (err)
		gs_ext_live_cfg_fini(out);
	return err;
}

/* ---- the document ---- */

static json_t *node_unreachable(const char *name, const char *why)
{
	return json_pack("{s:s, s:[], s:s}", "name", name, "gpus",
	                 "unreachable", why);
}

/* One node from its GET /v1/gpus body; NULL and *why when it is not one. */
static json_t *node_from_gpus(const char *name, const char *body,
                              const char **why)
{
	json_t *root = json_loads(body, 0, NULL);
	json_t *gpus = json_object_get(root, "gpus"), *g, *out, *arr;
	size_t i;

	if (!json_is_array(gpus)) {
		json_decref(root);
		*why = "GET /v1/gpus: not a {\"gpus\": [...]} object";
		return NULL;
	}
	arr = json_array();
	json_array_foreach(gpus, i, g)
	{
		json_t *al = json_object_get(g, "allocated");
		json_int_t tot =
		    json_integer_value(json_object_get(g, "memory_bytes"));
		json_int_t used =
		    json_integer_value(json_object_get(al, "memory_bytes"));
		json_int_t comp =
		    json_integer_value(json_object_get(al, "compute"));
		json_t *h = json_object_get(g, "health");
		const char *model =
		    json_string_value(json_object_get(g, "model"));
		bool healthy = !json_is_false(json_object_get(h, "healthy"));
		json_int_t fr = tot - used;

		if (model == NULL || tot <= 0 || !json_is_object(al)) {
			json_decref(arr);
			json_decref(root);
			*why =
			    "GET /v1/gpus: a GPU without model, memory_bytes or allocated";
			return NULL;
		}
		if (fr < 0 || !healthy)
			fr = 0;
		if (comp < 0)
			comp = 0;
		if (comp > 100)
			comp = 100;
		json_array_append_new(
		    arr, json_pack("{s:s, s:I, s:I, s:I}", "model", model,
		                   "memory_total_bytes", tot,
		                   "memory_free_bytes", fr, "compute_free_pct",
		                   (json_int_t)(healthy ? 100 - comp : 0)));
	}
	out = json_pack("{s:s, s:o}", "name", name, "gpus", arr);
	json_decref(root);
	return out;
}

/* Adds a GET /v1/demand body's classes to `demand` (merged by shape). */
static void add_demand(json_t *demand, const char *body)
{
	json_t *root = json_loads(body, 0, NULL), *c, *d;
	size_t i, k;

	json_array_foreach(json_object_get(root, "classes"), i, c)
	{
		json_t *g = json_object_get(c, "gpu_milli");
		json_t *ng = json_object_get(c, "num_gpu");
		json_t *w = json_object_get(c, "weight");
		bool merged = false;

		if (!json_is_integer(g) || !json_is_number(w))
			continue; /* MIG shapes: not in the scorer */
		json_array_foreach(demand, k, d)
		{
			if (json_integer_value(json_object_get(
			        d, "gpu_milli")) == json_integer_value(g) &&
			    json_integer_value(json_object_get(d, "num_gpu")) ==
			        (json_is_integer(ng) ? json_integer_value(ng)
			                             : 1)) {
				json_object_set_new(
				    d, "weight",
				    json_real(json_number_value(json_object_get(
				                  d, "weight")) +
				              json_number_value(w)));
				merged = true;
				break;
			}
		}
		if (!merged)
			json_array_append_new(
			    demand,
			    json_pack("{s:i, s:O, s:I, s:f}", "cpu_milli", 0,
			              "gpu_milli", g, "num_gpu",
			              json_is_integer(ng)
			                  ? json_integer_value(ng)
			                  : (json_int_t)1,
			              "weight", json_number_value(w)));
	}
	json_decref(root);
}

char *gs_ext_live_doc(const struct gs_ext_live_read *reads, size_t n)
{
	json_t *nodes = json_array(), *demand = json_array(), *doc;
	char *s;

	for (size_t i = 0; i < n; i++) {
		const struct gs_ext_live_read *r = &reads[i];
		const char *why = r->why ? r->why : "no answer";
		json_t *jn = NULL;

		if (r->gpus != NULL)
			jn = node_from_gpus(r->name, r->gpus, &why);
		if (jn == NULL) {
			json_array_append_new(nodes,
			                      node_unreachable(r->name, why));
			continue;
		}
		json_array_append_new(nodes, jn);
		if (r->demand != NULL)
			add_demand(demand, r->demand);
	}
	doc = json_pack("{s:o, s:o}", "nodes", nodes, "demand", demand);
	s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	return s;
}

/* ---- polling ---- */

struct gs_ext_live {
	struct gs_ext_live_cfg cfg; /* own copy of the nodes */
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	char *doc; /* under lock */
	size_t doc_len;
	/* Per node, the poller thread's only: its connection, and whether
	 * it is open. */
	struct gs_client_conn *conn;
	bool *open;
};

/* GET url+path from node i with its token. The body on 200, else NULL and
 * `why` filled. A failed request drops the node's connection; the next
 * poll connects again. */
static char *get(struct gs_ext_live *l, size_t i, const char *path, char *why,
                 size_t why_len)
{
	const struct gs_ext_live_node *nd = &l->cfg.node[i];
	struct gs_client_conn *c = &l->conn[i];
	struct gs_errbuf eb = {0};
	char *resp = NULL;
	size_t len = 0;
	int code = 0;
	gs_err err = GS_OK;

	if (!l->open[i]) {
		err = gs_client_connect_url(c, nd->url, nd->token, &eb);
		l->open[i] = err == GS_OK;
		c->timeout_ms = l->cfg.timeout_ms;
		c->max_response = LIVE_MAX_BODY;
	}
	if (err == GS_OK)
		err = gs_client_roundtrip(c, "GET", path, NULL, 0, &code, &resp,
		                          &len, &eb);
	if (err != GS_OK) {
		snprintf(why, why_len, "GET %.200s%s: %s", nd->url, path,
		         gs_errbuf_msg(&eb, err));
		gs_client_close(c);
		l->open[i] = false;
		free(resp);
		return NULL;
	}
	if (code != 200 || len == 0) {
		snprintf(why, why_len, "GET %.200s%s: HTTP %d", nd->url, path,
		         code);
		free(resp);
		return NULL;
	}
	return resp;
}

/* One round over every node; the new document replaces the old one. */
static void poll_once(struct gs_ext_live *l)
{
	struct gs_ext_live_read *r = calloc(l->cfg.n, sizeof(*r));
	char(*why)[300] = calloc(l->cfg.n, sizeof(*why));
	char *doc = NULL;

	if (r == NULL || why == NULL) {
		fprintf(stderr, "gs-k8s-extender: out of memory polling the nodes; keeping the previous state\n");
		goto out;
	}
	for (size_t i = 0; i < l->cfg.n; i++) {
		const struct gs_ext_live_node *nd = &l->cfg.node[i];
		char dwhy[300];

		r[i].name = nd->name;
		r[i].why = why[i];
		r[i].gpus = get(l, i, "/v1/gpus", why[i], sizeof(why[i]));
		if (r[i].gpus != NULL) {
			r[i].demand =
			    get(l, i, "/v1/demand", dwhy, sizeof(dwhy));
			if (r[i].demand == NULL)
				fprintf(stderr,
				        "gs-k8s-extender: node %s: %s (its demand is left out)\n",
				        nd->name, dwhy);
		} else {
			fprintf(stderr, "gs-k8s-extender: node %s: %s\n",
			        nd->name, why[i]);
		}
	}
	doc = gs_ext_live_doc(r, l->cfg.n);
	if (doc == NULL)
		fprintf(stderr, "gs-k8s-extender: out of memory building the node state; keeping the previous one\n");
	for (size_t i = 0; i < l->cfg.n; i++) {
		free((char *)r[i].gpus);
		free((char *)r[i].demand);
	}
out:
	free(r);
	free(why);
	if (doc == NULL)
		return;
	pthread_mutex_lock(&l->lock);
	free(l->doc);
	l->doc = doc;
	l->doc_len = strlen(doc);
	pthread_mutex_unlock(&l->lock);
}

static void *poll_loop(void *arg)
{
	struct gs_ext_live *l = arg;
	struct timespec t;

	pthread_mutex_lock(&l->lock);
	while (!l->stop) {
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_sec += l->cfg.poll_interval_ms / 1000;
		t.tv_nsec += (long)(l->cfg.poll_interval_ms % 1000) * 1000000;
		if (t.tv_nsec >= 1000000000) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000;
		}
		while (!l->stop &&
		       pthread_cond_timedwait(&l->cond, &l->lock, &t) == 0)
			;
		if (l->stop)
			break;
		pthread_mutex_unlock(&l->lock);
		poll_once(l);
		pthread_mutex_lock(&l->lock);
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

gs_err gs_ext_live_start(const struct gs_ext_live_cfg *cfg,
                         struct gs_ext_live **out, struct gs_errbuf *eb)
{
	struct gs_ext_live *l = calloc(1, sizeof(*l));
	int e;

	*out = NULL;
	if (l == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	l->cfg = *cfg;
	l->cfg.node = calloc(cfg->n ? cfg->n : 1, sizeof(*l->cfg.node));
	l->conn = calloc(cfg->n ? cfg->n : 1, sizeof(*l->conn));
	l->open = calloc(cfg->n ? cfg->n : 1, sizeof(*l->open));
	if (l->cfg.node == NULL || l->conn == NULL || l->open == NULL) {
		free(l->open);
		free(l->conn);
		free(l->cfg.node);
		free(l);
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	}
	memcpy(l->cfg.node, cfg->node, cfg->n * sizeof(*cfg->node));
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	poll_once(l);
	if (l->doc == NULL) {
		gs_ext_live_stop(l);
		return gs_fail(eb, GS_ERR_NOMEM,
		               "out of memory building the node state");
	}
	e = pthread_create(&l->thread, NULL, poll_loop, l);
	if (e != 0) {
		gs_ext_live_stop(l);
		return gs_fail(eb, GS_ERR_IO, "cannot start the poller: %s",
		               strerror(e));
	}
	l->thread_started = true;
	*out = l;
	return GS_OK;
}

char *gs_ext_live_state(struct gs_ext_live *l, size_t *len)
{
	char *s;

	pthread_mutex_lock(&l->lock);
	s = l->doc ? strdup(l->doc) : NULL;
	*len = s ? l->doc_len : 0;
	pthread_mutex_unlock(&l->lock);
	return s;
}

void gs_ext_live_stop(struct gs_ext_live *l)
{
	if (l == NULL)
		return;
	if (l->thread_started) {
		pthread_mutex_lock(&l->lock);
		l->stop = true;
		pthread_cond_broadcast(&l->cond);
		pthread_mutex_unlock(&l->lock);
		pthread_join(l->thread, NULL);
	}
	for (size_t i = 0; i < l->cfg.n; i++)
		if (l->open[i])
			gs_client_close(&l->conn[i]);
	free(l->open);
	free(l->conn);
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->cond);
	free(l->doc);
	free(l->cfg.node);
	free(l);
}
