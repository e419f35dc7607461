/*
 * client.c - gpuslice's client library: HTTP/1.1 to gpusliced on libcurl,
 * over its Unix socket (CURLOPT_UNIX_SOCKET_PATH) or TCP with a bearer
 * token (see gs/client.h).
 *
 * One easy handle per connection: libcurl keeps its connection open
 * between requests, which is what the load generator's create+delete
 * throughput rests on. An answer is collected in the connection's buffer,
 * capped at max_response (Content-Length is checked before the body is
 * read); libcurl's errors are turned into the gs_err the callers and the
 * CLI's exit statuses expect.
 */
#include "gs/client.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_MAX_REQ 1000 /* longest request path */

const char *gs_client_default_socket(void)
{
	static char path[108];
	const char *env = getenv("GPUSLICE_SOCKET");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct stat st;

	if (env && env[0])
		return env;
	if (getuid() == 0 || stat("/run/gpuslice/api.sock", &st) == 0 ||
	    xdg == NULL || xdg[0] == '\0')
		return "/run/gpuslice/api.sock";
	snprintf(path, sizeof(path), "%.80s/gpuslice/api.sock", xdg);
	return path;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

/* libcurl's global state, once per process and never torn down: a host
 * process (slurmd) may hold other handles. */
static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Collects the answer into c->buf, up to c->max_response bytes. */
static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct gs_client_conn *c = arg;
	size_t add = size * n;

	if (c->len + add > c->max_response) {
		c->too_big = 1;
		return 0;
	}
	if (c->len + add + 1 > c->cap) {
		size_t cap = c->cap ? c->cap : 8192;
		char *nb;

		while (cap < c->len + add + 1)
			cap *= 2;
		nb = realloc(c->buf, cap);
		if (nb == NULL)
			return 0;
		c->buf = nb;
		c->cap = cap;
	}
	memcpy(c->buf + c->len, p, add);
	c->len += add;
	c->buf[c->len] = '\0';
	return add;
}

/* The handle and the headers every request carries; nothing sent yet. */
static gs_err conn_init(struct gs_client_conn *c, const char *sock,
                        const char *url, const char *token,
                        struct gs_errbuf *eb)
{
	struct curl_slist *h = NULL, *t;
	char auth[600];

	memset(c, 0, sizeof(*c));
	c->timeout_ms = GS_CLIENT_TIMEOUT_MS;
	c->max_response = GS_CLIENT_MAX_RESPONSE;
	if (sock != NULL) {
		if (strlen(sock) >= sizeof(c->path))
			return gs_fail(eb, GS_ERR_INVALID,
			               "socket path too long: %s", sock);
		snprintf(c->path, sizeof(c->path), "%s", sock);
		snprintf(c->where, sizeof(c->where), "%s", sock);
		snprintf(c->base, sizeof(c->base), "http://localhost");
	} else {
		size_t n = strlen(url);

		while (n > 0 && url[n - 1] == '/')
			n--;
		if (n >= sizeof(c->base))
			return gs_fail(eb, GS_ERR_INVALID, "URL too long: %s",
			               url);
		snprintf(c->base, sizeof(c->base), "%.*s", (int)n, url);
		snprintf(c->where, sizeof(c->where), "%s", c->base);
	}
	if (pthread_once(&curl_once, curl_init) != 0 ||
	    curl_init_rc != CURLE_OK)
		return gs_fail(eb, GS_ERR_INTERNAL, "libcurl init failed");
	t = curl_slist_append(h, "Content-Type: application/json");
	if (t != NULL)
		t = curl_slist_append(h = t, "Expect:");
	if (t != NULL && token != NULL) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		t = curl_slist_append(h = t, auth);
	}
	if (t == NULL) {
		curl_slist_free_all(h);
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	}
	c->headers = t;
	c->curl = curl_easy_init();
	if (c->curl == NULL) {
		gs_client_close(c);
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	}
	/* Over the Unix socket no proxy applies: "" also spares libcurl the
	 * look at the proxy variables on every request. */
	if (c->path[0] != '\0') {
		curl_easy_setopt(c->curl, CURLOPT_UNIX_SOCKET_PATH, c->path);
		curl_easy_setopt(c->curl, CURLOPT_PROXY, "");
	}
	curl_easy_setopt(c->curl, CURLOPT_HTTP_VERSION,
	                 (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->headers);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
	return GS_OK;
}

/* The gs_err for a transfer that failed with `rc`. */
static gs_err curl_fail(struct gs_client_conn *c, CURLcode rc,
                        struct gs_errbuf *eb)
{
	long oe = 0;
	int e;

	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
		curl_easy_getinfo(c->curl, CURLINFO_OS_ERRNO, &oe);
		e = (int)oe;
		return gs_fail(
		    eb, GS_ERR_UNAVAILABLE,
		    "cannot reach gpusliced at %s: %s (is it running? see --socket / GPUSLICE_SOCKET)",
		    c->where, e != 0 ? strerror(e) : curl_easy_strerror(rc));
	case CURLE_OPERATION_TIMEDOUT:
		return gs_fail(eb, GS_ERR_TIMEOUT,
		               "gpusliced at %s did not answer", c->where);
	case CURLE_FILESIZE_EXCEEDED:
		return gs_fail(eb, GS_ERR_RANGE,
		               "response from gpusliced too large");
	case CURLE_WRITE_ERROR:
		if (c->too_big)
			return gs_fail(eb, GS_ERR_RANGE,
			               "response from gpusliced too large");
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	case CURLE_OUT_OF_MEMORY:
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	case CURLE_PARTIAL_FILE:
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
		return gs_fail(eb, GS_ERR_UNAVAILABLE,
		               "gpusliced at %s closed the connection",
		               c->where);
	case CURLE_SEND_ERROR:
		curl_easy_getinfo(c->curl, CURLINFO_OS_ERRNO, &oe);
		e = (int)oe;
		return gs_fail(eb, GS_ERR_UNAVAILABLE,
		               "lost gpusliced at %s: %s", c->where,
		               e != 0 ? strerror(e) : curl_easy_strerror(rc));
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return gs_fail(eb, GS_ERR_PARSE, "bad response from gpusliced");
	default:
		return gs_fail(eb, GS_ERR_UNAVAILABLE, "gpusliced at %s: %s",
		               c->where, curl_easy_strerror(rc));
	}
}

/*
 * Whether anybody listens: a connection made and dropped on a handle of
 * its own (a CONNECT_ONLY connection cannot carry requests afterwards).
 */
static gs_err probe(struct gs_client_conn *c, struct gs_errbuf *eb)
{
	CURL *main = c->curl, *p = curl_easy_duphandle(main);
	CURLcode rc;
	gs_err err;

	if (p == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	curl_easy_setopt(p, CURLOPT_URL, c->base);
	curl_easy_setopt(p, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(p, CURLOPT_CONNECTTIMEOUT_MS, (long)c->timeout_ms);
	rc = curl_easy_perform(p);
	c->curl = p; /* for curl_fail's getinfo */
	err = rc == CURLE_OK ? GS_OK : curl_fail(c, rc, eb);
	c->curl = main;
	curl_easy_cleanup(p);
	return err;
}

gs_err gs_client_connect(struct gs_client_conn *c, const char *sock,
                         struct gs_errbuf *eb)
{
	gs_err err;

	err = conn_init(c, sock ? sock : gs_client_default_socket(), NULL, NULL,
	                eb);
	if (err == GS_OK)
		err = probe(c, eb);
	if (err != GS_OK)
		gs_client_close(c);
	return err;
}

gs_err gs_client_connect_url(struct gs_client_conn *c, const char *url,
                             const char *token, struct gs_errbuf *eb)
{
	gs_err err;

	err = conn_init(c, NULL, url, token, eb);
	if (err == GS_OK)
		err = probe(c, eb);
	if (err != GS_OK)
		gs_client_close(c);
	return err;
}

void gs_client_close(struct gs_client_conn *c)
{
	if (c->curl != NULL)
		curl_easy_cleanup(c->curl);
	c->curl = NULL;
	curl_slist_free_all(c->headers);
	c->headers = NULL;
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = 0;
}

gs_err gs_client_roundtrip(struct gs_client_conn *c, const char *method,
                           const char *path, const char *body, size_t body_len,
                           int *status, char **resp, size_t *resp_len,
                           struct gs_errbuf *eb)
{
	char url[sizeof(c->base) + PATH_MAX_REQ + 8];
	long code = 0, secs;
	CURLcode rc;
	CURL *h = c->curl;

	*resp = NULL;
	*resp_len = 0;
	if (h == NULL)
		return gs_fail(eb, GS_ERR_UNAVAILABLE,
		               "not connected to gpusliced at %s", c->where);
	if (strlen(path) + strlen(method) > PATH_MAX_REQ)
		return gs_fail(eb, GS_ERR_RANGE, "request path too long");
	snprintf(url, sizeof(url), "%s%s", c->base, path);
	c->len = 0;
	c->too_big = 0;
	secs = c->timeout_ms > 0 ? (c->timeout_ms + 999) / 1000 : 0;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, secs);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE,
	                 (curl_off_t)c->max_response);
	if (body == NULL && strcmp(method, "GET") == 0) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
	} else {
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
		                 (curl_off_t)(body ? body_len : 0));
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST,
		                 strcmp(method, "POST") == 0 ? NULL : method);
	}
	rc = curl_easy_perform(h);
	if (rc != CURLE_OK)
		return curl_fail(c, rc, eb);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	if (code < 100 || code > 999)
		return gs_fail(eb, GS_ERR_PARSE, "bad response from gpusliced");
	*resp = malloc(c->len + 1);
	if (*resp == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	if (c->len > 0)
		memcpy(*resp, c->buf, c->len);
	(*resp)[c->len] = '\0';
	*resp_len = c->len;
	*status = (int)code;
	c->len = 0;
	return GS_OK;
}

gs_err gs_client_err_from_name(const char *name)
{
	for (int e = 1; e < GS_ERR__COUNT; e++)
		if (strcmp(gs_err_name((gs_err)e), name) == 0)
			return (gs_err)e;
	return GS_ERR_INTERNAL;
}

void gs_client_urlencode(const char *s, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = strlen(out);

	for (; *s && o + 4 < len; s++) {
		unsigned char ch = (unsigned char)*s;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
		    ch == '.' || ch == '~') {
			out[o++] = (char)ch;
		} else {
			out[o++] = '%';
			out[o++] = hex[ch >> 4];
			out[o++] = hex[ch & 15];
		}
	}
	out[o] = '\0';
}

gs_err gs_client_answer_err(int status, const json_t *answer)
{
	const char *name = json_string_value(json_object_get(answer, "error"));

	return name                             ? gs_client_err_from_name(name)
	       : status == 404                  ? GS_ERR_NOT_FOUND
	       : status == 403 || status == 401 ? GS_ERR_PERM
	       : status >= 500                  ? GS_ERR_INTERNAL
	                                        : GS_ERR_INVALID;
}

const char *gs_client_answer_message(const json_t *answer)
{
	return json_string_value(json_object_get(answer, "message"));
}

/* Turns a non-2xx answer into its gs_err with the daemon's message. */
static gs_err answer_error(int status, const char *body, struct gs_errbuf *eb)
{
	json_t *o = json_loads(body, 0, NULL);
	const char *msg = gs_client_answer_message(o);
	gs_err err = gs_client_answer_err(status, o);

	gs_fail(eb, err, "%s", msg ? msg : "gpusliced refused the request");
	json_decref(o);
	return err;
}

/* One request on a connection of its own (made by the request itself). */
static gs_err call_raw(const char *sock, const char *method, const char *path,
                       const json_t *body, char **resp, size_t *resp_len,
                       int *status, struct gs_errbuf *eb)
{
	struct gs_client_conn c;
	char *text = NULL;
	gs_err err;

	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		if (text == NULL)
			return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	}
	err = conn_init(&c, sock ? sock : gs_client_default_socket(), NULL,
	                NULL, eb);
	if (!err)
		err = gs_client_roundtrip(&c, method, path, text,
		                          text ? strlen(text) : 0, status, resp,
		                          resp_len, eb);
	gs_client_close(&c);
	free(text);
	return err;
}

gs_err gs_client_call(const char *sock, const char *method, const char *path,
                      const json_t *body, json_t **out, struct gs_errbuf *eb)
{
	char *resp = NULL;
	size_t len = 0;
	int status = 0;
	gs_err err;

	if (out)
		*out = NULL;
	err = call_raw(sock, method, path, body, &resp, &len, &status, eb);
	if (err) {
		free(resp);
		return err;
	}
	if (status < 200 || status > 299) {
		err = answer_error(status, resp, eb);
		free(resp);
		return err;
	}
	if (out) {
		json_error_t jerr;

		*out = json_loadb(resp, len, 0, &jerr);
		if (*out == NULL) {
			free(resp);
			return gs_fail(eb, GS_ERR_PARSE,
			               "gpusliced answered with bad JSON: %s",
			               jerr.text);
		}
	}
	free(resp);
	return GS_OK;
}

gs_err gs_client_get_text(const char *sock, const char *path, char **text,
                          struct gs_errbuf *eb)
{
	size_t len = 0;
	int status = 0;
	gs_err err;

	*text = NULL;
	err = call_raw(sock, "GET", path, NULL, text, &len, &status, eb);
	if (err)
		return err;
	if (status < 200 || status > 299) {
		err = answer_error(status, *text, eb);
		free(*text);
		*text = NULL;
	}
	return err;
}

gs_err gs_client_exchange(const char *sock, const char *method,
                          const char *path, const json_t *body, int *status,
                          json_t **answer, struct gs_errbuf *eb)
{
	char *resp = NULL;
	size_t len = 0;
	gs_err err;

	*status = 0;
	*answer = NULL;
	err = call_raw(sock, method, path, body, &resp, &len, status, eb);
	if (err == GS_OK)
		*answer = json_loadb(resp ? resp : "", len, 0, NULL);
	free(resp);
	return err;
}

gs_err gs_client_slice_get(const char *sock, const char *name, json_t **slice,
                           struct gs_errbuf *eb)
{
	char path[256] = "/v1/slices/";

	gs_client_urlencode(name, path, sizeof(path));
	return gs_client_call(sock, "GET", path, NULL, slice, eb);
}

gs_err gs_client_slice_attach(const char *sock, const char *name, int32_t pid,
                              json_t **slice, struct gs_errbuf *eb)
{
	char path[256] = "/v1/slices/";
	json_t *body = json_object();
	gs_err err;

	gs_client_urlencode(name, path, sizeof(path));
	strncat(path, "/attach", sizeof(path) - strlen(path) - 1);
	if (pid > 0)
		json_object_set_new(body, "pid", json_integer(pid));
	err = gs_client_call(sock, "POST", path, body, slice, eb);
	json_decref(body);
	return err;
}

gs_err gs_client_slice_create(const char *sock, const json_t *spec,
                              json_t **slice, struct gs_errbuf *eb)
{
	return gs_client_call(sock, "POST", "/v1/slices", spec, slice, eb);
}

gs_err gs_client_slice_delete(const char *sock, const char *name,
                              struct gs_errbuf *eb)
{
	char path[256] = "/v1/slices/";

	gs_client_urlencode(name, path, sizeof(path));
	return gs_client_call(sock, "DELETE", path, NULL, NULL, eb);
}

const char *gs_client_str(const json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v ? v : "";
}

long long gs_client_int(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (json_is_integer(v))
		return (long long)json_integer_value(v);
	if (json_is_real(v))
		return (long long)json_real_value(v);
	return 0;
}

double gs_client_num(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : 0.0;
}
