/*
 * kube.c - the Kubernetes API server client behind kube.h: libcurl for
 * HTTP(S), jansson for bodies, core's YAML reader (gs/yamldoc.h) for
 * kubeconfig files.
 *
 * Credentials are read once, at create: from the kubeconfig's current
 * context (server, certificate-authority[-data], insecure-skip-tls-verify,
 * token, tokenFile, client-certificate[-data], client-key[-data]; paths
 * relative to the kubeconfig's folder), or in-cluster from
 * KUBERNETES_SERVICE_HOST/PORT and the service account folder. Only the
 * token file is re-read on each request, because kubelets rotate projected
 * tokens under a running pod.
 *
 * Requests: one curl easy handle per call (so calls from several threads
 * never share a handle), each bounded by timeout_ms in total. Connection
 * failures and 429/5xx answers are retried with exponential backoff
 * (100 ms doubling, at most 2 s) while the deadline allows; the last
 * answer or failure is what the caller gets. Answers are capped at
 * GS_KUBE_MAX_BODY bytes.
 *
 * Watches run on a curl multi handle polled in 100 ms steps, so `*stop`
 * is seen quickly even when the server sends nothing; every complete line
 * of the stream is one event.
 */
#include "kube.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gs/doc.h"
#include "gs/log.h"
#include "gs/yamldoc.h"

#define GS_KUBE_MAX_BODY (64u * 1024 * 1024)
#define GS_KUBE_MAX_LINE (16u * 1024 * 1024)
#define GS_KUBE_SA_DIR   "/var/run/secrets/kubernetes.io/serviceaccount"

struct gs_kube {
	char *server;     /* "https://host:port", no trailing '/' */
	char *token;      /* static token, or NULL */
	char *token_file; /* re-read per request, or NULL */
	char *ca_file;    /* or NULL */
	char *ca_pem;     /* certificate-authority-data, decoded; or NULL */
	size_t ca_pem_len;
	char *cert_file, *key_file;
	char *cert_pem, *key_pem;
	size_t cert_pem_len, key_pem_len;
	bool insecure;
	long timeout_ms;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

gs_err gs_kube_status_err(long status)
{
	if (status >= 200 && status < 300)
		return GS_OK;
	switch (status) {
	case 400:
	case 422:
		return GS_ERR_INVALID;
	case 401:
	case 403:
		return GS_ERR_PERM;
	case 404:
		return GS_ERR_NOT_FOUND;
	case 409:
		return GS_ERR_EXISTS;
	case 410:
		return GS_ERR_VERSION;
	case 504:
		return GS_ERR_TIMEOUT;
	default:
		break;
	}
	if (status == 0 || status == 429 || status >= 500)
		return GS_ERR_UNAVAILABLE;
	return GS_ERR_INVALID;
}

const char *gs_kube_server(const struct gs_kube *k)
{
	return k->server;
}

/* ---- files and kubeconfig ---- */

/* Reads a whole file (at most `max` bytes). OUT: *buf (malloc'd, NUL-
 * terminated), *len. */
static gs_err read_file(const char *path, size_t max, char **buf, size_t *len,
                        struct gs_errbuf *eb)
{
	FILE *f = fopen(path, "rb");
	size_t n = 0, cap = 4096;
	char *b;

	*buf = NULL;
	if (f == NULL) {
		int e = errno;
		return gs_fail(eb, e == ENOENT ? GS_ERR_NOT_FOUND : GS_ERR_IO,
		               "cannot read %s: %s", path, strerror(e));
	}
	b = malloc(cap);
	while (b) {
		size_t r = fread(b + n, 1, cap - n - 1, f);
		n += r;
		if (r == 0)
			break;
		if (n > max) {
			free(b);
			fclose(f);
			return gs_fail(eb, GS_ERR_RANGE,
			               "%s is larger than %zu bytes", path,
			               max);
		}
		if (cap - n - 1 == 0) {
			char *nb = realloc(b, cap * 2);
			if (nb == NULL) {
				free(b);
				b = NULL;
				break;
			}
			b = nb;
			cap *= 2;
		}
	}
	if (b && ferror(f)) {
		free(b);
		fclose(f);
		return gs_fail(eb, GS_ERR_IO, "error reading %s", path);
	}
	fclose(f);
	if (b == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory reading %s",
		               path);
	b[n] = '\0';
	*buf = b;
	if (len)
		*len = n;
	return GS_OK;
}

/* Trims trailing whitespace (token files often end with a newline). */
static void rtrim(char *s)
{
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' ||
	                 s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
}

static int b64val(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/* Decodes base64 (whitespace ignored). OUT: *out (malloc'd), *len. */
static gs_err b64decode(const char *in, const char *what, char **out,
                        size_t *len, struct gs_errbuf *eb)
{
	size_t n = strlen(in), o = 0;
	unsigned acc = 0;
	int bits = 0;
	char *b = malloc(n / 4 * 3 + 4);

	if (b == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)in[i], v;
		if (c == '=')
			break;
		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		v = b64val(c);
		if (v < 0) {
			free(b);
			return gs_fail(eb, GS_ERR_PARSE,
			               "%s is not base64 (character '%c')",
			               what, c);
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			b[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	b[o] = '\0';
	*out = b;
	*len = o;
	return GS_OK;
}

static const char *scalar(const struct gs_doc_node *map, const char *key)
{
	const struct gs_doc_node *v = gs_doc_get(map, key);
	return v && v->kind == GS_DOC_SCALAR ? v->value : NULL;
}

/* The entry of a named list (clusters, users, contexts) called `name`:
 * its `field` map. */
static const struct gs_doc_node *named(const struct gs_doc_node *root,
                                       const char *list, const char *name,
                                       const char *field)
{
	const struct gs_doc_node *seq = gs_doc_get(root, list);

	if (seq == NULL || seq->kind != GS_DOC_SEQ)
		return NULL;
	for (int i = 0; i < seq->n; i++) {
		const char *n = scalar(seq->kids[i], "name");
		if (n && strcmp(n, name) == 0) {
			const struct gs_doc_node *f =
			    gs_doc_get(seq->kids[i], field);
			return f && f->kind == GS_DOC_MAP ? f : NULL;
		}
	}
	return NULL;
}

/* `p` made absolute against the kubeconfig's folder. OUT: malloc'd. */
static char *resolve(const char *kubeconfig, const char *p)
{
	const char *slash = strrchr(kubeconfig, '/');
	char *out;

	if (p[0] == '/' || slash == NULL)
		return strdup(p);
	size_t dl = (size_t)(slash - kubeconfig);
	out = malloc(dl + strlen(p) + 2);
	if (out)
		sprintf(out, "%.*s/%s", (int)dl, kubeconfig, p);
	return out;
}

static gs_err dup_opt(char **dst, const char *s, struct gs_errbuf *eb)
{
	if (s == NULL)
		return GS_OK;
	free(*dst);
	*dst = strdup(s);
	return *dst ? GS_OK : gs_fail(eb, GS_ERR_NOMEM, "out of memory");
}

static gs_err load_kubeconfig(struct gs_kube *k, const char *path,
                              struct gs_errbuf *eb)
{
	char *text = NULL;
	size_t len;
	struct gs_doc *doc = NULL;
	const struct gs_doc_node *root, *ctx, *cl, *user;
	const char *cur, *cname, *uname, *v;
	gs_err err;

	err = read_file(path, GS_YAMLDOC_MAX_BYTES, &text, &len, eb);
	if (err)
		return err;
	err = gs_yamldoc_parse(text, len, path, &doc, eb);
	free(text);
	if (err)
		return err;
	root = gs_doc_count(doc) > 0 ? gs_doc_root(doc, 0) : NULL;
	if (root == NULL || root->kind != GS_DOC_MAP) {
		err = gs_fail(eb, GS_ERR_PARSE, "%s: not a kubeconfig mapping",
		              path);
		goto out;
	}
	cur = scalar(root, "current-context");
	if (cur == NULL || !*cur) {
		err =
		    gs_fail(eb, GS_ERR_INVALID, "%s: no current-context", path);
		goto out;
	}
	ctx = named(root, "contexts", cur, "context");
	if (ctx == NULL) {
		err = gs_fail(eb, GS_ERR_INVALID,
		              "%s: current-context '%s' is not in contexts",
		              path, cur);
		goto out;
	}
	cname = scalar(ctx, "cluster");
	uname = scalar(ctx, "user");
	cl = cname ? named(root, "clusters", cname, "cluster") : NULL;
	if (cl == NULL) {
		err = gs_fail(eb, GS_ERR_INVALID,
		              "%s: context '%s' names cluster '%s', which is not in clusters",
		              path, cur, cname ? cname : "");
		goto out;
	}
	v = scalar(cl, "server");
	if (v == NULL || !*v) {
		err = gs_fail(eb, GS_ERR_INVALID,
		              "%s: cluster '%s' has no server", path, cname);
		goto out;
	}
	if ((err = dup_opt(&k->server, v, eb)))
		goto out;
	if ((v = scalar(cl, "certificate-authority-data"))) {
		if ((err = b64decode(v, "certificate-authority-data",
		                     &k->ca_pem, &k->ca_pem_len, eb)))
			goto out;
	} else if ((v = scalar(cl, "certificate-authority"))) {
		k->ca_file = resolve(path, v);
	}
	v = scalar(cl, "insecure-skip-tls-verify");
	k->insecure = v && strcmp(v, "true") == 0;
	user = uname ? named(root, "users", uname, "user") : NULL;
	if (uname && user == NULL) {
		err = gs_fail(eb, GS_ERR_INVALID,
		              "%s: context '%s' names user '%s', which is not in users",
		              path, cur, uname);
		goto out;
	}
	if (user) {
		if (gs_doc_get(user, "exec") ||
		    gs_doc_get(user, "auth-provider")) {
			err = gs_fail(
			    eb, GS_ERR_UNSUPPORTED,
			    "%s: user '%s' uses an exec or auth-provider plugin; give a token, tokenFile or client certificate",
			    path, uname);
			goto out;
		}
		if ((err = dup_opt(&k->token, scalar(user, "token"), eb)))
			goto out;
		if ((v = scalar(user, "tokenFile")))
			k->token_file = resolve(path, v);
		if ((v = scalar(user, "client-certificate-data")) &&
		    (err = b64decode(v, "client-certificate-data", &k->cert_pem,
		                     &k->cert_pem_len, eb)))
			goto out;
		if ((v = scalar(user, "client-key-data")) &&
		    (err = b64decode(v, "client-key-data", &k->key_pem,
		                     &k->key_pem_len, eb)))
			goto out;
		if ((v = scalar(user, "client-certificate")))
			k->cert_file = resolve(path, v);
		if ((v = scalar(user, "client-key")))
			k->key_file = resolve(path, v);
	}
	err = GS_OK;
out:
	gs_doc_destroy(doc);
	return err;
}

static gs_err load_in_cluster(struct gs_kube *k, const char *sa_dir,
                              bool need_server, struct gs_errbuf *eb)
{
	char path[4096];
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");

	if (need_server) {
		if (host == NULL || !*host)
			return gs_fail(
			    eb, GS_ERR_INVALID,
			    "not in a cluster (KUBERNETES_SERVICE_HOST is unset) and no kubeconfig given");
		char url[512];
		/* An IPv6 service address needs brackets in a URL. */
		snprintf(url, sizeof(url),
		         strchr(host, ':') ? "https://[%s]:%s"
		                           : "https://%s:%s",
		         host, port && *port ? port : "443");
		if (dup_opt(&k->server, url, eb))
			return GS_ERR_NOMEM;
	}
	snprintf(path, sizeof(path), "%s/token", sa_dir);
	/* With an explicit server the service account is optional (a test
	 * or a proxy that needs no token). */
	if (!need_server && access(path, R_OK) != 0)
		return GS_OK;
	if (access(path, R_OK) != 0)
		return gs_fail(eb, GS_ERR_NOT_FOUND,
		               "no service account token at %s: %s", path,
		               strerror(errno));
	k->token_file = strdup(path);
	snprintf(path, sizeof(path), "%s/ca.crt", sa_dir);
	if (access(path, R_OK) == 0)
		k->ca_file = strdup(path);
	return GS_OK;
}

void gs_kube_destroy(struct gs_kube *k)
{
	if (k == NULL)
		return;
	free(k->server);
	free(k->token);
	free(k->token_file);
	free(k->ca_file);
	free(k->ca_pem);
	free(k->cert_file);
	free(k->key_file);
	free(k->cert_pem);
	free(k->key_pem);
	free(k);
}

gs_err gs_kube_create(const struct gs_kube_config *cfg, struct gs_kube **out,
                      struct gs_errbuf *eb)
{
	struct gs_kube *k;
	gs_err err = GS_OK;

	*out = NULL;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK)
		return gs_fail(eb, GS_ERR_INTERNAL, "libcurl init failed: %s",
		               curl_easy_strerror(curl_init_rc));
	k = calloc(1, sizeof(*k));
	if (k == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	k->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 10000;
	if (cfg->kubeconfig)
		err = load_kubeconfig(k, cfg->kubeconfig, eb);
	else if (!(cfg->token_file && cfg->server))
		err = load_in_cluster(
		    k, cfg->sa_dir ? cfg->sa_dir : GS_KUBE_SA_DIR,
		    cfg->server == NULL, eb);
	if (err == GS_OK && cfg->server)
		err = dup_opt(&k->server, cfg->server, eb);
	if (err == GS_OK && cfg->token_file) {
		free(k->token);
		k->token = NULL;
		err = dup_opt(&k->token_file, cfg->token_file, eb);
	}
	if (err == GS_OK && cfg->ca_file) {
		free(k->ca_pem);
		k->ca_pem = NULL;
		err = dup_opt(&k->ca_file, cfg->ca_file, eb);
	}
	if (err == GS_OK) {
		size_t n = strlen(k->server);
		if (strncmp(k->server, "https://", 8) != 0 &&
		    strncmp(k->server, "http://", 7) != 0)
			err = gs_fail(eb, GS_ERR_INVALID,
			              "API server URL '%s' is not http(s)://",
			              k->server);
		while (n > 0 && k->server[n - 1] == '/')
			k->server[--n] = '\0';
	}
	if (err) {
		gs_kube_destroy(k);
		return err;
	}
	*out = k;
	return GS_OK;
}

/* ---- requests ---- */

struct body {
	char *buf;
	size_t len, cap;
	bool toobig;
};

static size_t body_write(char *p, size_t size, size_t n, void *arg)
{
	struct body *b = arg;
	size_t add = size * n;

	if (b->len + add + 1 > GS_KUBE_MAX_BODY) {
		b->toobig = true;
		return 0;
	}
	if (b->len + add + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 8192;
		while (cap < b->len + add + 1)
			cap *= 2;
		char *nb = realloc(b->buf, cap);
		if (nb == NULL)
			return 0;
		b->buf = nb;
		b->cap = cap;
	}
	memcpy(b->buf + b->len, p, add);
	b->len += add;
	b->buf[b->len] = '\0';
	return add;
}

/*
 * A configured easy handle for `url` with the credentials and headers.
 * OUT: *hdrs (the caller frees with curl_slist_free_all after the call).
 */
static gs_err easy_new(struct gs_kube *k, const char *method, const char *url,
                       const char *content_type, CURL **out,
                       struct curl_slist **hdrs, struct gs_errbuf *eb)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char *tok = NULL;
	gs_err err = GS_OK;

	*out = NULL;
	*hdrs = NULL;
	if (c == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "curl_easy_init failed");
	if (k->token_file) {
		err = read_file(k->token_file, 64 * 1024, &tok, NULL, eb);
		if (err) {
			curl_easy_cleanup(c);
			return err;
		}
		rtrim(tok);
	}
	const char *token = tok ? tok : k->token;
	if (token && *token) {
		size_t n = strlen(token) + 32;
		char *a = malloc(n);
		if (a) {
			snprintf(a, n, "Authorization: Bearer %s", token);
			h = curl_slist_append(h, a);
			free(a);
		}
	}
	free(tok);
	h = curl_slist_append(h, "Accept: application/json");
	if (content_type) {
		char ct[128];
		snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
		h = curl_slist_append(h, ct);
	}
	h = curl_slist_append(h, "User-Agent: gpuslice-kubelet-plugin");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	if (k->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, k->ca_file);
	if (k->ca_pem) {
		struct curl_blob blob = {k->ca_pem, k->ca_pem_len,
		                         CURL_BLOB_COPY};
		curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
	}
	if (k->cert_file)
		curl_easy_setopt(c, CURLOPT_SSLCERT, k->cert_file);
	if (k->key_file)
		curl_easy_setopt(c, CURLOPT_SSLKEY, k->key_file);
	if (k->cert_pem) {
		struct curl_blob blob = {k->cert_pem, k->cert_pem_len,
		                         CURL_BLOB_COPY};
		curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &blob);
		curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
	}
	if (k->key_pem) {
		struct curl_blob blob = {k->key_pem, k->key_pem_len,
		                         CURL_BLOB_COPY};
		curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &blob);
		curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
	}
	if (k->insecure) {
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (h == NULL) {
		curl_easy_cleanup(c);
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	}
	*out = c;
	*hdrs = h;
	return err;
}

/* Puts a Status answer's reason and message into eb. */
static void status_message(const char *method, const char *path, long st,
                           json_t *ans, struct gs_errbuf *eb)
{
	const char *reason = json_string_value(json_object_get(ans, "reason"));
	const char *msg = json_string_value(json_object_get(ans, "message"));

	gs_fail(eb, gs_kube_status_err(st),
	        "API server: %s %s: HTTP %ld%s%s%s%s", method, path, st,
	        reason ? " " : "", reason ? reason : "", msg ? ": " : "",
	        msg ? msg : "");
}

static bool transient(long st)
{
	return st == 429 || (st >= 500 && st != 501);
}

gs_err gs_kube_request(struct gs_kube *k, const char *method, const char *path,
                       json_t *body, const char *content_type, long *status,
                       json_t **out, struct gs_errbuf *eb)
{
	char *url, *payload = NULL;
	int64_t deadline = now_ms() + k->timeout_ms;
	long backoff = 100, st = 0;
	CURLcode last = CURLE_OK;
	char curl_err[CURL_ERROR_SIZE] = "";
	struct body b = {0};
	gs_err err;

	*status = 0;
	if (out)
		*out = NULL;
	url = malloc(strlen(k->server) + strlen(path) + 1);
	if (url == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	sprintf(url, "%s%s", k->server, path);
	if (body) {
		payload = json_dumps(body, JSON_COMPACT);
		if (payload == NULL) {
			free(url);
			return gs_fail(eb, GS_ERR_NOMEM, "cannot encode body");
		}
	}
	for (;;) {
		CURL *c;
		struct curl_slist *h;
		int64_t left = deadline - now_ms();

		if (left <= 0)
			break;
		err = easy_new(
		    k, method, url,
		    body ? (content_type ? content_type : "application/json")
		         : NULL,
		    &c, &h, eb);
		if (err) {
			free(url);
			free(payload);
			return err;
		}
		free(b.buf);
		memset(&b, 0, sizeof(b));
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_write);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)left);
		curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_err);
		if (payload) {
			curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload);
			curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE,
			                 (long)strlen(payload));
		}
		curl_err[0] = '\0';
		last = curl_easy_perform(c);
		st = 0;
		if (last == CURLE_OK)
			curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
		curl_easy_cleanup(c);
		curl_slist_free_all(h);
		if (last == CURLE_OK && !transient(st))
			break;
		if (last == CURLE_WRITE_ERROR && b.toobig)
			break;
		if (last == CURLE_OPERATION_TIMEDOUT)
			break;
		left = deadline - now_ms();
		if (left <= backoff)
			break;
		gs_debug("kube", "%s %s: %s; retrying in %ld ms", method, path,
		         last ? curl_easy_strerror(last) : "transient answer",
		         backoff);
		usleep((useconds_t)backoff * 1000);
		backoff = backoff * 2 > 2000 ? 2000 : backoff * 2;
	}
	free(url);
	free(payload);
	if (last != CURLE_OK || st == 0) {
		free(b.buf);
		if (b.toobig)
			return gs_fail(
			    eb, GS_ERR_RANGE,
			    "API server: %s %s: answer larger than %u bytes",
			    method, path, GS_KUBE_MAX_BODY);
		if (last == CURLE_OPERATION_TIMEDOUT || last == CURLE_OK)
			return gs_fail(eb, GS_ERR_TIMEOUT,
			               "API server %s: %s %s: no answer within %ld ms",
			               k->server, method, path, k->timeout_ms);
		return gs_fail(
		    eb, GS_ERR_UNAVAILABLE,
		    "API server %s unreachable: %s %s: %s", k->server, method,
		    path, curl_err[0] ? curl_err : curl_easy_strerror(last));
	}
	*status = st;
	json_t *ans = b.len ? json_loadb(b.buf, b.len, 0, NULL) : NULL;
	free(b.buf);
	if (st >= 400)
		status_message(method, path, st, ans, eb);
	if (out)
		*out = ans;
	else
		json_decref(ans);
	return GS_OK;
}

/* ---- watch ---- */

struct watch {
	CURL *c;
	long st;          /* the answer's status, once headers are in */
	struct body line; /* the partial line; an error answer's body */
	gs_kube_event_fn fn;
	void *arg;
	bool ended; /* the callback asked to stop */
	bool bad;   /* an undecodable line */
	char bad_msg[192];
};

static void watch_line(struct watch *w, const char *s, size_t n)
{
	json_error_t je;
	json_t *ev;

	while (n > 0 && (s[n - 1] == '\r' || s[n - 1] == ' '))
		n--;
	if (n == 0 || w->ended)
		return;
	ev = json_loadb(s, n, 0, &je);
	const char *type = json_string_value(json_object_get(ev, "type"));
	json_t *obj = json_object_get(ev, "object");
	if (ev == NULL || type == NULL || !json_is_object(obj)) {
		w->bad = true;
		snprintf(w->bad_msg, sizeof(w->bad_msg), "%s",
		         ev ? "event without type or object" : je.text);
		w->ended = true;
	} else if (!w->fn(w->arg, type, obj)) {
		w->ended = true;
	}
	json_decref(ev);
}

static size_t watch_write(char *p, size_t size, size_t n, void *arg)
{
	struct watch *w = arg;
	size_t add = size * n, i = 0;

	if (w->st == 0)
		curl_easy_getinfo(w->c, CURLINFO_RESPONSE_CODE, &w->st);
	if (w->st >= 300) {
		/* A Status object, not events: keep its first 64 KiB. */
		if (w->line.len + add < 65536 &&
		    body_write(p, 1, add, &w->line) != add)
			return 0;
		return add;
	}
	while (i < add && !w->ended) {
		char *nl = memchr(p + i, '\n', add - i);
		size_t seg = nl ? (size_t)(nl - (p + i)) : add - i;
		if (w->line.len + seg + 1 > GS_KUBE_MAX_LINE) {
			w->bad = true;
			snprintf(w->bad_msg, sizeof(w->bad_msg),
			         "event longer than %u bytes",
			         GS_KUBE_MAX_LINE);
			w->ended = true;
			break;
		}
		if (nl == NULL) {
			if (body_write(p + i, 1, seg, &w->line) != seg)
				return 0;
			break;
		}
		if (w->line.len) {
			if (body_write(p + i, 1, seg, &w->line) != seg)
				return 0;
			watch_line(w, w->line.buf, w->line.len);
			w->line.len = 0;
		} else {
			watch_line(w, p + i, seg);
		}
		i += seg + 1;
	}
	return w->ended ? 0 : add;
}

gs_err gs_kube_watch(struct gs_kube *k, const char *path,
                     gs_kube_event_fn on_event, void *arg,
                     const volatile bool *stop, struct gs_errbuf *eb)
{
	struct watch w = {.fn = on_event, .arg = arg};
	json_t *ans;
	struct curl_slist *h;
	CURL *c;
	CURLM *m;
	char *url;
	char curl_err[CURL_ERROR_SIZE] = "";
	CURLcode res = CURLE_OK;
	long st = 0;
	bool done = false, stopped = false;
	gs_err err;

	url = malloc(strlen(k->server) + strlen(path) + 1);
	if (url == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	sprintf(url, "%s%s", k->server, path);
	err = easy_new(k, "GET", url, NULL, &c, &h, eb);
	free(url);
	if (err)
		return err;
	m = curl_multi_init();
	if (m == NULL) {
		curl_easy_cleanup(c);
		curl_slist_free_all(h);
		return gs_fail(eb, GS_ERR_NOMEM, "curl_multi_init failed");
	}
	w.c = c;
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, watch_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &w);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, k->timeout_ms);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_err);
	/* A server that vanished without closing: keepalive probes end the
	 * watch within about a minute instead of never. */
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 30L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 10L);
	curl_multi_add_handle(m, c);
	while (!done) {
		int running = 0, q;
		CURLMsg *msg;

		if (stop && *stop) {
			stopped = true;
			break;
		}
		if (curl_multi_perform(m, &running) != CURLM_OK)
			break;
		while ((msg = curl_multi_info_read(m, &q))) {
			if (msg->msg == CURLMSG_DONE) {
				res = msg->data.result;
				done = true;
			}
		}
		if (!done && running)
			curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
	curl_multi_remove_handle(m, c);
	curl_easy_cleanup(c);
	curl_multi_cleanup(m);
	curl_slist_free_all(h);
	if (st >= 300 && !stopped) {
		ans = w.line.len ? json_loadb(w.line.buf, w.line.len, 0, NULL)
		                 : NULL;
		free(w.line.buf);
		status_message("watch", path, st, ans, eb);
		json_decref(ans);
		return gs_kube_status_err(st);
	}
	free(w.line.buf);
	if (stopped)
		return GS_OK;
	if (w.bad)
		return gs_fail(eb, GS_ERR_PARSE, "API server: watch %s: %s",
		               path, w.bad_msg);
	if (w.ended)
		return GS_OK;
	if (res != CURLE_OK && st == 0)
		return gs_fail(
		    eb, GS_ERR_UNAVAILABLE,
		    "API server %s unreachable: watch %s: %s", k->server, path,
		    curl_err[0] ? curl_err : curl_easy_strerror(res));
	if (res != CURLE_OK)
		return gs_fail(
		    eb, GS_ERR_UNAVAILABLE, "API server: watch %s broke: %s",
		    path, curl_err[0] ? curl_err : curl_easy_strerror(res));
	return GS_OK;
}
