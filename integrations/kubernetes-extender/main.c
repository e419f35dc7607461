/*
 * main.c - gs-k8s-extender: a kube-scheduler extender over HTTP
 * (libmicrohttpd). POST /filter and POST /prioritize take ExtenderArgs and
 * answer as extender.c computes. The node GPU state comes from one of:
 *   --state FILE  re-read on every request (any file in extender.h's
 *                 shape), so a stale or broken file shows up as an error
 *                 reply, never as a silently wrong answer;
 *   --nodes FILE  the live source (live.h): each node's gpusliced polled
 *                 over TCP; a node that does not answer is filtered out
 *                 with the reason.
 *
 * With --kubeconfig FILE (or --in-cluster, the service account) it reads
 * the pod's DRA claims and claim templates from the API server, so that a
 * pod that gets its GPU through a gpuslice.io claim counts like a
 * gpu-milli request (extender.h, gs_ext_handle_dra). The extender's
 * service account needs get on resourceclaims and resourceclaimtemplates.
 *
 * usage: gs-k8s-extender (--state FILE | --nodes FILE) [--port N]
 *                        [--kubeconfig FILE | --in-cluster]
 */
#include "extender.h"
#include "kube.h"
#include "live.h"

#include <microhttpd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_BODY (8u << 20)

struct conn {
	char *buf; /* owned; the request body */
	size_t len;
	bool too_big;
};

#define USAGE                                                                  \
	"usage: gs-k8s-extender (--state FILE | --nodes FILE) [--port N] [--kubeconfig FILE | --in-cluster]\n"

static const char *state_path;
static struct gs_ext_live *live; /* --nodes */
static struct gs_kube *kube;     /* --kubeconfig / --in-cluster */

/* A Kubernetes object name: [a-z0-9.-], 1..253 (never a path). */
static bool name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' ||
		      s[i] == '-'))
			return false;
	return true;
}

/* gs_ext_claim_fn over the API server; failures are logged here. */
static json_t *claim_lookup(void *ctx, const char *kind, const char *ns,
                            const char *name)
{
	char path[640];
	struct gs_errbuf eb;
	json_t *o = NULL;
	long status = 0;
	gs_err err;

	(void)ctx;
	if (!name_ok(ns) || !name_ok(name)) {
		fprintf(stderr, "gs-k8s-extender: bad claim name %s/%s\n",
		        ns ? ns : "", name ? name : "");
		return NULL;
	}
	snprintf(path, sizeof(path),
	         "/apis/resource.k8s.io/v1/namespaces/%s/%s/%s", ns,
	         strcmp(kind, "claim") == 0 ? "resourceclaims"
	                                    : "resourceclaimtemplates",
	         name);
	gs_errbuf_init(&eb);
	err = gs_kube_request(kube, "GET", path, NULL, NULL, &status, &o, &eb);
	if (err == GS_OK && status == 200 && json_is_object(o))
		return o;
	fprintf(stderr, "gs-k8s-extender: GET %s: %s (HTTP %ld)\n", path,
	        err != GS_OK ? eb.msg : "no object", status);
	json_decref(o);
	return NULL;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
		*len = fread(buf, 1, (size_t)n, f);
		buf[*len] = '\0';
	}
	fclose(f);
	return buf;
}

static enum MHD_Result send_json(struct MHD_Connection *c, int status,
                                 char *body)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (body == NULL)
		return MHD_NO;
	r = MHD_create_response_from_buffer(strlen(body), body,
	                                    MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
                              const char *url, const char *method,
                              const char *version, const char *data,
                              size_t *size, void **ctx)
{
	struct conn *k = *ctx;
	struct gs_ext_state *st = NULL;
	struct gs_errbuf eb;
	char *state, *out;
	size_t slen = 0;
	int status = 500;

	(void)cls;
	(void)version;
	if (k == NULL) {
		k = calloc(1, sizeof(*k));
		*ctx = k;
		return k ? MHD_YES : MHD_NO;
	}
	if (*size > 0) {
		if (k->len + *size > MAX_BODY) {
			k->too_big = true;
		} else {
			char *nb = realloc(k->buf, k->len + *size + 1);
			if (nb == NULL)
				return MHD_NO;
			k->buf = nb;
			memcpy(k->buf + k->len, data, *size);
			k->len += *size;
		}
		*size = 0;
		return MHD_YES;
	}
	if (strcmp(method, "POST") != 0)
		return send_json(c, 405, strdup("{\"Error\":\"POST only\"}"));
	if (k->too_big)
		return send_json(c, 413,
		                 strdup("{\"Error\":\"body too big\"}"));
	gs_errbuf_init(&eb);
	state = live ? gs_ext_live_state(live, &slen)
	             : read_file(state_path, &slen);
	if (state == NULL)
		return send_json(
		    c, 503,
		    strdup(live ? "{\"Error\":\"out of memory\"}"
		                : "{\"Error\":\"cannot read state file\"}"));
	if (gs_ext_state_parse(state, slen, &st, &eb) != GS_OK) {
		free(state);
		fprintf(stderr, "gs-k8s-extender: %s\n", eb.msg);
		return send_json(c, 503,
		                 strdup("{\"Error\":\"bad node state\"}"));
	}
	free(state);
	out = gs_ext_handle_dra(st, kube ? claim_lookup : NULL, NULL,
	                        url[0] == '/' ? url + 1 : url,
	                        k->buf ? k->buf : "", k->len, &status);
	gs_ext_state_free(st);
	return send_json(c, status, out);
}

static void done(void *cls, struct MHD_Connection *c, void **ctx,
                 enum MHD_RequestTerminationCode code)
{
	struct conn *k = *ctx;

	(void)cls;
	(void)c;
	(void)code;
	if (k != NULL) {
		free(k->buf);
		free(k);
	}
	*ctx = NULL;
}

int main(int argc, char **argv)
{
	unsigned port = 8888;
	const char *nodes_path = NULL;
	struct gs_kube_config kcfg = {0};
	bool use_kube = false;
	struct gs_ext_live_cfg lcfg;
	struct gs_errbuf eb;
	struct MHD_Daemon *d;
	sigset_t set;
	int sig;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--state") == 0 && i + 1 < argc)
			state_path = argv[++i];
		else if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc)
			nodes_path = argv[++i];
		else if (strcmp(argv[i], "--kubeconfig") == 0 && i + 1 < argc)
			kcfg.kubeconfig = argv[++i], use_kube = true;
		else if (strcmp(argv[i], "--in-cluster") == 0)
			use_kube = true;
		else if (strcmp(argv[i], "--port") == 0 && i + 1 < argc)
			port = (unsigned)strtoul(argv[++i], NULL, 10);
		else {
			fprintf(stderr, USAGE);
			return 2;
		}
	}
	if ((state_path == NULL) == (nodes_path == NULL) || port == 0 ||
	    port > 65535) {
		fprintf(stderr, USAGE);
		return 2;
	}
	if (use_kube) {
		gs_errbuf_init(&eb);
		kcfg.timeout_ms = 3000;
		if (gs_kube_create(&kcfg, &kube, &eb) != GS_OK) {
			fprintf(stderr, "gs-k8s-extender: %s\n", eb.msg);
			return 1;
		}
	}
	/* Signals are blocked before any thread starts, so that only
	 * sigwait below takes them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (nodes_path != NULL) {
		gs_errbuf_init(&eb);
		if (gs_ext_live_cfg_load(nodes_path, &lcfg, &eb) != GS_OK ||
		    gs_ext_live_start(&lcfg, &live, &eb) != GS_OK) {
			fprintf(stderr, "gs-k8s-extender: %s\n", eb.msg);
			gs_ext_live_cfg_fini(&lcfg);
			return 1;
		}
		gs_ext_live_cfg_fini(&lcfg);
	}
	d = MHD_start_daemon(
	    MHD_USE_INTERNAL_POLLING_THREAD, (uint16_t)port, NULL, NULL, handle,
	    NULL, MHD_OPTION_NOTIFY_COMPLETED, done, NULL, MHD_OPTION_END);
	if (d == NULL) {
		fprintf(stderr, "gs-k8s-extender: cannot listen on port %u\n",
		        port);
		gs_ext_live_stop(live);
		gs_kube_destroy(kube);
		return 1;
	}
	sigwait(&set, &sig);
	MHD_stop_daemon(d);
	gs_ext_live_stop(live);
	gs_kube_destroy(kube);
	return 0;
}
