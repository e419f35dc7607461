/*
 * client.c - gpuslice's client library: HTTP/1.1 over gpusliced's Unix
 * socket (see gs/client.h).
 *
 * Just enough HTTP: requests carry Content-Length; responses are read up
 * to the end of the headers, then Content-Length bytes (gpusliced always
 * sends it). A response larger than the connection's max_response is an
 * error, not an allocation without end.
 */
#include "gs/client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

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

gs_err gs_client_connect(struct gs_client_conn *c, const char *sock,
                         struct gs_errbuf *eb)
{
	struct sockaddr_un sa;
	const char *p = sock ? sock : gs_client_default_socket();
	int e;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->timeout_ms = GS_CLIENT_TIMEOUT_MS;
	c->max_response = GS_CLIENT_MAX_RESPONSE;
	if (strlen(p) >= sizeof(sa.sun_path))
		return gs_fail(eb, GS_ERR_INVALID, "socket path too long: %s",
		               p);
	snprintf(c->path, sizeof(c->path), "%s", p);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, p, strlen(p) + 1);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		e = errno;
		return gs_fail(eb, GS_ERR_IO, "socket: %s", strerror(e));
	}
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		e = errno;
		close(c->fd);
		c->fd = -1;
		return gs_fail(eb, GS_ERR_UNAVAILABLE,
		               "cannot reach gpusliced at %s: %s (is it "
		               "running? see --socket / GPUSLICE_SOCKET)",
		               p, strerror(e));
	}
	return GS_OK;
}

void gs_client_close(struct gs_client_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = 0;
}

static gs_err send_all(struct gs_client_conn *c, const char *p, size_t n,
                       struct gs_errbuf *eb)
{
	while (n) {
		ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);

		if (k < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			return gs_fail(eb, GS_ERR_UNAVAILABLE,
			               "lost gpusliced at %s: %s", c->path,
			               strerror(e));
		}
		p += k;
		n -= (size_t)k;
	}
	return GS_OK;
}

/* Reads more into c->buf; GS_ERR_UNAVAILABLE on EOF or error. */
static gs_err fill(struct gs_client_conn *c, struct gs_errbuf *eb)
{
	struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
	ssize_t k;
	int rc;

	if (c->cap - c->len < 4096) {
		size_t cap = c->cap ? c->cap * 2 : 8192;
		char *nb;

		if (cap > c->max_response + 65536)
			return gs_fail(eb, GS_ERR_RANGE,
			               "response from gpusliced too large");
		nb = realloc(c->buf, cap);
		if (nb == NULL)
			return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
		c->buf = nb;
		c->cap = cap;
	}
	do
		rc = poll(&pfd, 1, c->timeout_ms);
	while (rc < 0 && errno == EINTR);
	if (rc == 0)
		return gs_fail(eb, GS_ERR_TIMEOUT,
		               "gpusliced at %s did not answer", c->path);
	do
		k = recv(c->fd, c->buf + c->len, c->cap - c->len - 1, 0);
	while (k < 0 && errno == EINTR);
	if (k <= 0)
		return gs_fail(eb, GS_ERR_UNAVAILABLE,
		               "gpusliced at %s closed the connection",
		               c->path);
	c->len += (size_t)k;
	c->buf[c->len] = '\0';
	return GS_OK;
}

gs_err gs_client_roundtrip(struct gs_client_conn *c, const char *method,
                           const char *path, const char *body, size_t body_len,
                           int *status, char **resp, size_t *resp_len,
                           struct gs_errbuf *eb)
{
	char head[1024];
	char *end, *cl;
	size_t hlen, clen = 0;
	int n;
	gs_err err;

	*resp = NULL;
	*resp_len = 0;
	n = snprintf(head, sizeof(head),
	             "%s %s HTTP/1.1\r\nHost: localhost\r\n"
	             "Content-Type: application/json\r\n"
	             "Content-Length: %zu\r\n\r\n",
	             method, path, body ? body_len : 0);
	if (n < 0 || (size_t)n >= sizeof(head))
		return gs_fail(eb, GS_ERR_RANGE, "request path too long");
	err = send_all(c, head, (size_t)n, eb);
	if (!err && body && body_len)
		err = send_all(c, body, body_len, eb);
	if (err)
		return err;
	while ((end = c->buf ? strstr(c->buf, "\r\n\r\n") : NULL) == NULL) {
		err = fill(c, eb);
		if (err)
			return err;
	}
	hlen = (size_t)(end - c->buf) + 4;
	if (sscanf(c->buf, "HTTP/1.%*d %d", status) != 1)
		return gs_fail(eb, GS_ERR_PARSE, "bad response from gpusliced");
	*end = '\0';
	for (cl = c->buf; (cl = strchr(cl, '\n')) != NULL;) {
		cl++;
		if (strncasecmp(cl, "Content-Length:", 15) == 0) {
			clen = strtoull(cl + 15, NULL, 10);
			break;
		}
	}
	if (clen > c->max_response)
		return gs_fail(eb, GS_ERR_RANGE,
		               "response from gpusliced too large");
	while (c->len < hlen + clen) {
		err = fill(c, eb);
		if (err)
			return err;
	}
	*resp = malloc(clen + 1);
	if (*resp == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	memcpy(*resp, c->buf + hlen, clen);
	(*resp)[clen] = '\0';
	*resp_len = clen;
	memmove(c->buf, c->buf + hlen + clen, c->len - hlen - clen);
	c->len -= hlen + clen;
	c->buf[c->len] = '\0';
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
	err = gs_client_connect(&c, sock, eb);
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
